/* uf-bridge: republish a local uringfeed ring on NATS JetStream for remote consumers.
 *
 *   uf-bridge --ring NAME --nats nats://h1:4222,nats://h2:4222 [options]
 *   uf-bridge --config /etc/uringfeed/uf-bridge.json
 *   uf-bridge --check-config FILE      validate the file, exit 0 or 2
 *
 * Runs until SIGINT/SIGTERM (exit 0), or until the producer closes the ring with
 * --exit-on-close. Exit 1 on errors, 2 on bad usage. See docs/fanout.md. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/uf_parse.h"
#include "ring/nats/uf_nats_wire.h"
#include "tools/uf-bridge/bridge.h"

static volatile sig_atomic_t g_stop;

static void on_signal(int sig)
{
	g_stop = 1;
}

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "usage: uf-bridge --ring NAME --nats URLS [options]   (or --config FILE)\n"
	    "  --nats URLS          comma-separated nats://host:port (any cluster members)\n"
	    "  --replicas N         stream and bucket replicas (default 1; 3 in a cluster)\n"
	    "  --memory             memory storage instead of file storage\n"
	    "  --max-age S          stream retention in seconds (default 86400)\n"
	    "  --max-bytes N        stream retention in bytes (default unlimited)\n"
	    "  --batch N            most records per message (default 256, max %d; above 1024\n"
	    "                       remote consumers must be this version or newer)\n"
	    "  --window N           stream messages in flight, acknowledged in order (default\n"
	    "                       32, max 1024; 1 = wait for each)\n"
	    "  --eager N            once caught up with the ring, send a partial message only\n"
	    "                       while fewer than N are in flight (default 0: always)\n"
	    "  --kv-interval MS     book entries written at most this often (default 100)\n"
	    "  --ack-wait MS        acknowledgement timeout before a retry (default 2000)\n"
	    "  --ack-timeouts N     leave a server after N timeouts in a row (default 2)\n"
	    "  --stats MS           JSON status line on stderr every MS (default: at exit)\n"
	    "  --status-file PATH   keep the JSON status in PATH (rewritten every 200 ms)\n"
	    "  --exit-on-close      exit once the producer closes the ring\n"
	    "  --compact            DATA records in the compact form (wire version 2; remote\n"
	    "                       consumers must be this version or newer)\n"
	    "  --per-symbol         also store each instrument's records on uf.RING.rec.SYMBOL\n"
	    "  --dir DIR            shm directory (default $UF_RING_DIR or /dev/shm)\n"
	    "  --creds FILE         NATS user credentials (JWT + seed)\n"
	    "  --tls-ca FILE        TLS: verify the servers against these CAs\n"
	    "  --tls-cert F --tls-key F  TLS client certificate (mutual TLS)\n"
	    "  --key-file FILE      shared key: sign every message (HMAC-SHA256); default\n"
	    "                       $UF_NATS_KEY_FILE, else $UF_NATS_KEY, else unsigned\n",
	    UF_NATS_MAX_RECORDS);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {{"ring", required_argument, 0, 'r'},
	                                   {"nats", required_argument, 0, 'n'},
	                                   {"config", required_argument, 0, 'c'},
	                                   {"replicas", required_argument, 0, 'R'},
	                                   {"memory", no_argument, 0, 'm'},
	                                   {"max-age", required_argument, 0, 'a'},
	                                   {"max-bytes", required_argument, 0, 'B'},
	                                   {"batch", required_argument, 0, 'b'},
	                                   {"kv-interval", required_argument, 0, 'k'},
	                                   {"window", required_argument, 0, 'W'},
	                                   {"eager", required_argument, 0, 'e'},
	                                   {"ack-wait", required_argument, 0, 'w'},
	                                   {"ack-timeouts", required_argument, 0, 'T'},
	                                   {"stats", required_argument, 0, 's'},
	                                   {"status-file", required_argument, 0, 'S'},
	                                   {"exit-on-close", no_argument, 0, 'x'},
	                                   {"dir", required_argument, 0, 'D'},
	                                   {"per-symbol", no_argument, 0, 'P'},
	                                   {"compact", no_argument, 0, 'Z'},
	                                   {"creds", required_argument, 0, 'C'},
	                                   {"tls-ca", required_argument, 0, 'A'},
	                                   {"tls-cert", required_argument, 0, 'E'},
	                                   {"tls-key", required_argument, 0, 'K'},
	                                   {"key-file", required_argument, 0, 'y'},
	                                   {"help", no_argument, 0, 'h'},
	                                   {0, 0, 0, 0}};
	struct uf_bridge_config cfg;
	struct sigaction sa;
	char err[512];
	int64_t v;
	int opt;

	uf_bridge_config_init(&cfg);
	if (argc == 3 && strcmp(argv[1], "--check-config") == 0) {
		if (uf_bridge_config_load(&cfg, argv[2], err, sizeof(err)) < 0) {
			fprintf(stderr, "uf-bridge: %s\n", err);
			return 2;
		}
		if (!cfg.ring[0] || !cfg.urls[0]) {
			fprintf(stderr, "uf-bridge: %s: \"ring\" and \"nats\" are required\n",
			        argv[2]);
			return 2;
		}
		printf("uf-bridge: %s: ok (ring %s, nats %s, replicas %d)\n", argv[2], cfg.ring,
		       cfg.urls, cfg.replicas);
		return 0;
	}
	/* the config file first, so options on the command line override it */
	for (int i = 1; i + 1 < argc; i++) {
		if (strcmp(argv[i], "--config") == 0 &&
		    uf_bridge_config_load(&cfg, argv[i + 1], err, sizeof(err)) < 0) {
			fprintf(stderr, "uf-bridge: %s\n", err);
			return 2;
		}
	}
	while ((opt = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (opt) {
		case 'r':
			snprintf(cfg.ring, sizeof(cfg.ring), "%s", optarg);
			break;
		case 'n':
			snprintf(cfg.urls, sizeof(cfg.urls), "%s", optarg);
			break;
		case 'c':
			break; /* read above */
		case 'R':
			if (uf_parse_i64(optarg, 1, 5, &v) < 0)
				goto bad_value;
			cfg.replicas = (int)v;
			break;
		case 'm':
			cfg.memory = 1;
			break;
		case 'a':
			if (uf_parse_i64(optarg, 0, INT64_MAX / 1000000000, &cfg.max_age_s) < 0)
				goto bad_value;
			break;
		case 'B':
			if (uf_parse_i64(optarg, -1, INT64_MAX, &cfg.max_bytes) < 0)
				goto bad_value;
			break;
		case 'b':
			if (uf_parse_i64(optarg, 1, UF_NATS_MAX_RECORDS, &v) < 0)
				goto bad_value;
			cfg.batch = (uint32_t)v;
			break;
		case 'W':
			if (uf_parse_i64(optarg, 1, 1024, &v) < 0)
				goto bad_value;
			cfg.window = (uint32_t)v;
			break;
		case 'e':
			if (uf_parse_i64(optarg, 0, 1024, &v) < 0)
				goto bad_value;
			cfg.eager = (uint32_t)v;
			break;
		case 'k':
			if (uf_parse_i64(optarg, 1, 3600000, &v) < 0)
				goto bad_value;
			cfg.kv_interval_ms = (uint32_t)v;
			break;
		case 'w':
			if (uf_parse_i64(optarg, 10, 600000, &v) < 0)
				goto bad_value;
			cfg.ack_wait_ms = (uint32_t)v;
			break;
		case 'T':
			if (uf_parse_i64(optarg, 1, 1000, &v) < 0)
				goto bad_value;
			cfg.ack_timeouts = (uint32_t)v;
			break;
		case 's':
			if (uf_parse_i64(optarg, 0, 3600000, &v) < 0)
				goto bad_value;
			cfg.stats_interval_ms = (uint32_t)v;
			break;
		case 'S':
			snprintf(cfg.status_file, sizeof(cfg.status_file), "%s", optarg);
			break;
		case 'Z':
			cfg.compact = 1;
			break;
		case 'x':
			cfg.exit_on_close = 1;
			break;
		case 'D':
			snprintf(cfg.dir, sizeof(cfg.dir), "%s", optarg);
			break;
		case 'P':
			cfg.per_symbol = 1;
			break;
		case 'C':
			snprintf(cfg.creds, sizeof(cfg.creds), "%s", optarg);
			break;
		case 'A':
			snprintf(cfg.tls_ca, sizeof(cfg.tls_ca), "%s", optarg);
			break;
		case 'E':
			snprintf(cfg.tls_cert, sizeof(cfg.tls_cert), "%s", optarg);
			break;
		case 'K':
			snprintf(cfg.tls_key, sizeof(cfg.tls_key), "%s", optarg);
			break;
		case 'y':
			snprintf(cfg.key_file, sizeof(cfg.key_file), "%s", optarg);
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (!cfg.ring[0] || !cfg.urls[0] || optind != argc) {
		usage(stderr);
		return 2;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	return uf_bridge_run(&cfg, &g_stop) == 0 ? 0 : 1;

bad_value:
	fprintf(stderr, "uf-bridge: bad value for option: %s\n", optarg);
	return 2;
}
