/* uringfeed: the feed handler daemon.
 *
 *   uringfeed --config FILE [--log-level LEVEL]
 *   uringfeed --check-config FILE [--no-host-checks]
 *   uringfeed --version | --help
 *
 * Threads: the main thread loads the configuration, creates the feeds, starts the status
 * endpoint (one libmicrohttpd thread) and one thread per feed (the feed pins itself to its
 * CPU inside uf_feed_run), then only waits for signals. Control threads (main, HTTP) are
 * moved off the CPUs the feeds busy-poll.
 *
 * Signals are blocked in every thread and taken synchronously by the main thread with
 * sigtimedwait(), so no handler ever runs on a feed thread:
 *   SIGTERM, SIGINT  stop: the feeds leave their loop within one batch, the threads are
 *                    joined, the rings are marked closed (consumers drain and see "closed"),
 *                    exit status 0.
 *   SIGHUP           re-reads the configuration file and applies the symbol filters; any
 *                    other change is logged as needing a restart. A bad file is logged and
 *                    ignored (the running filters stay).
 *
 * Exit status: 0 clean stop, 1 runtime failure (a feed could not start or failed), 2 bad
 * usage or a bad configuration (always before any socket is opened). */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/log.h"
#include "daemon/uf_config.h"
#include "daemon/daemon.h"

#ifndef UF_VERSION
#define UF_VERSION "0.0.0"
#endif

#define EXIT_CONFIG 2

static void usage(FILE *out)
{
	fprintf(
	    out,
	    "usage: uringfeed --config FILE [--log-level error|warn|info|debug]\n"
	    "       uringfeed --check-config FILE [--no-host-checks]\n"
	    "       uringfeed --version | --help\n"
	    "\n"
	    "Runs the feeds described by a JSON configuration file (see configs/README.md).\n"
	    "  --config FILE        run; SIGTERM/SIGINT stop cleanly, SIGHUP re-reads symbol "
	    "filters\n"
	    "  --check-config FILE  validate FILE, print a summary, exit 0 (valid) or 2 (invalid)\n"
	    "  --no-host-checks     with --check-config: skip the checks against this machine\n"
	    "                       (CPUs and NUMA nodes exist), e.g. on a build host\n"
	    "  --log-level LEVEL    override log.level of the file\n"
	    "  --version            print the version\n"
	    "Exit status: 0 stopped cleanly, 1 runtime failure, 2 bad usage or configuration.\n");
}

static int check_config(const char *path, unsigned flags)
{
	struct uf_config cfg;
	char err[512], line[1024], host[INET_ADDRSTRLEN];

	if (uf_config_load_ex(path, flags, &cfg, err, sizeof(err)) != 0) {
		fprintf(stderr, "uringfeed: %s\n", err);
		return EXIT_CONFIG;
	}
	inet_ntop(AF_INET, &cfg.status_listen.sin_addr, host, sizeof(host));
	printf("%s: valid%s: %d feed%s, status %s %s:%u, log level %s\n", path,
	       flags & UF_CFG_NO_HOST_CHECKS ? " (CPU/NUMA not checked against this host)" : "",
	       cfg.nfeeds, cfg.nfeeds == 1 ? "" : "s", cfg.status_enabled ? "on" : "off", host,
	       ntohs(cfg.status_listen.sin_port), uf_log_level_name(cfg.log_level));
	for (int i = 0; i < cfg.nfeeds; i++) {
		uf_daemon_describe_feed(&cfg.feeds[i], line, sizeof(line));
		printf("  %s\n", line);
	}
	uf_config_free(&cfg);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"config", required_argument, NULL, 'c'},
	    {"check-config", required_argument, NULL, 'k'},
	    {"no-host-checks", no_argument, NULL, 'n'},
	    {"log-level", required_argument, NULL, 'l'},
	    {"version", no_argument, NULL, 'V'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	const char *config = NULL, *check = NULL, *level = NULL;
	unsigned flags = 0;
	int opt, log_level = -1;

	opterr = 0;
	while ((opt = getopt_long(argc, argv, "c:k:l:Vh", opts, NULL)) != -1) {
		switch (opt) {
		case 'c':
			config = optarg;
			break;
		case 'k':
			check = optarg;
			break;
		case 'n':
			flags |= UF_CFG_NO_HOST_CHECKS;
			break;
		case 'l':
			level = optarg;
			break;
		case 'V':
			printf("uringfeed %s\n", UF_VERSION);
			return 0;
		case 'h':
			usage(stdout);
			return 0;
		default:
			if (optopt)
				fprintf(stderr,
				        "uringfeed: option -%c needs an argument or is unknown\n",
				        optopt);
			else
				fprintf(stderr, "uringfeed: unknown option %s\n", argv[optind - 1]);
			usage(stderr);
			return EXIT_CONFIG;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "uringfeed: unexpected argument \"%s\"\n", argv[optind]);
		usage(stderr);
		return EXIT_CONFIG;
	}
	if (level && (log_level = uf_log_level_parse(level)) < 0) {
		fprintf(stderr,
		        "uringfeed: --log-level \"%s\" is not one of error, warn, info, debug\n",
		        level);
		return EXIT_CONFIG;
	}
	if (!!config + !!check != 1) {
		fprintf(stderr,
		        "uringfeed: give exactly one of --config FILE or --check-config FILE\n");
		usage(stderr);
		return EXIT_CONFIG;
	}
	if (check)
		return check_config(check, flags);
	if (flags) {
		fprintf(stderr, "uringfeed: --no-host-checks only goes with --check-config\n");
		return EXIT_CONFIG;
	}
	return uf_daemon_run(config, log_level, UF_VERSION);
}
