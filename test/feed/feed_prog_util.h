/* Helpers for the measurement programs feed_bench and feed_lag (not tests): long options into
 * variables, the in-process feed they both run on loopback multicast against uf-replay, the
 * wait for the day's end, and the clean-up. Each returns the program's exit code where it can
 * fail (2: bad arguments, 1: set-up failed), so that both programs keep theirs. */
#ifndef FEED_PROG_UTIL_H
#define FEED_PROG_UTIL_H

#include <getopt.h>

#include "feed/uf_feed.h"
#include "ring/uf_ring.h"
#include "feed_test_util.h"

enum fp_opt_type { FP_OPT_STR, FP_OPT_DOUBLE, FP_OPT_INT, FP_OPT_UINT, FP_OPT_FLAG };

/* One long option --name: `to` is a const char *, double, int, unsigned or (flag) int. */
struct fp_opt {
	const char *name;
	enum fp_opt_type type;
	void *to;
};

/* The conversion for variable `var` by its type: const char *, double, int or unsigned. */
#define FP_TYPE_OF(var)                                                                            \
	_Generic((var), const char *: FP_OPT_STR, double: FP_OPT_DOUBLE, int: FP_OPT_INT,          \
	         unsigned: FP_OPT_UINT)
/* An option --name read into `var`, and a flag --name that sets the int `var` to 1. */
#define FP_OPT(name, var)  ((struct fp_opt){(name), FP_TYPE_OF(var), &(var)})
#define FP_FLAG(name, var) ((struct fp_opt){(name), FP_OPT_FLAG, &(var)})

#define FP_MAX_OPTS 32

/* Parses long options only (getopt_long reports unknown ones and missing values): first the
 * three both programs take with the same meaning, --backend, --rate (messages/s) and
 * --messages (the day's size), then the program's own `own`. Strings are kept as given,
 * numbers read with atof / atoi, flags set to 1. Returns 0, or 2 on a bad option. */
static inline int fp_parse_options(int argc, char **argv, const char **backend, double *rate,
                                   unsigned *messages, const struct fp_opt *own, int nown)
{
	struct fp_opt opt[FP_MAX_OPTS];
	struct option lo[FP_MAX_OPTS + 1];
	int n = 3, c;

	if (nown > FP_MAX_OPTS - n)
		return 2;
	opt[0] = (struct fp_opt){"backend", FP_OPT_STR, backend};
	opt[1] = (struct fp_opt){"rate", FP_OPT_DOUBLE, rate};
	opt[2] = (struct fp_opt){"messages", FP_OPT_UINT, messages};
	for (int i = 0; i < nown; i++)
		opt[n++] = own[i];
	for (int i = 0; i < n; i++)
		lo[i] = (struct option){
		    opt[i].name, opt[i].type == FP_OPT_FLAG ? no_argument : required_argument, NULL,
		    256 + i}; /* above every character getopt returns */
	lo[n] = (struct option){0, 0, 0, 0};
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		if (c < 256 || c >= 256 + n)
			return 2;
		const struct fp_opt *o = &opt[c - 256];
		switch (o->type) {
		case FP_OPT_STR:
			*(const char **)o->to = optarg;
			break;
		case FP_OPT_DOUBLE:
			*(double *)o->to = atof(optarg);
			break;
		case FP_OPT_INT:
			*(int *)o->to = atoi(optarg);
			break;
		case FP_OPT_UINT:
			*(unsigned *)o->to = (unsigned)atoi(optarg);
			break;
		case FP_OPT_FLAG:
			*(int *)o->to = 1;
			break;
		}
	}
	return 0;
}

/* The configuration both programs start from: feed `name` on back end `backend`, no CPU or
 * NUMA placement, a 4 Mi-record ring, 10-level books for up to 2 Mi orders and 1024
 * instruments, 4096 buffers of 2 KiB. Lines, recovery and the ring's name are the caller's.
 * Returns 0, or 2 when the back end is unknown. */
static inline int fp_config_init(struct uf_feed_config *cfg, const char *name, const char *backend)
{
	memset(cfg, 0, sizeof(*cfg));
	snprintf(cfg->name, sizeof(cfg->name), "%s", name);
	if (uf_backend_parse(backend, &cfg->backend) < 0) {
		fprintf(stderr, "unknown back end %s\n", backend);
		return 2;
	}
	cfg->cpu = -1;
	cfg->sqpoll_cpu = -1;
	cfg->numa_node = -1;
	cfg->ring.capacity = 1 << 22;
	cfg->book.depth = 10;
	cfg->book.max_orders = 1 << 21;
	cfg->book.max_instruments = 1024;
	cfg->buffers.count = 4096;
	cfg->buffers.size = 2048;
	return 0;
}

/* This process's own ring directory (nothing left in /dev/shm if it dies), and a day of
 * `messages` over `symbols` generated with seed 11 into `day`. Returns 0, or 1. */
static inline int fp_ring_dir_and_day(char *day, size_t len, unsigned messages, unsigned symbols)
{
	if (!ft_use_ring_dir())
		return 1;
	if (ft_gen_day(day, len, messages, symbols, 11) < 0) {
		fprintf(stderr, "uf-gen failed\n");
		return 1;
	}
	return 0;
}

/* Lines A and B (the first `nlines` of them used) on 127.0.0.1, groups 239.o2.o3.1 and .2,
 * ports port_base and port_base + 1; a and b (64 bytes) get "group:port" for uf-replay. */
static inline void fp_config_lines(struct uf_feed_config *cfg, int nlines, int o2, int o3,
                                   int port_base, char *a, char *b)
{
	cfg->nlines = nlines;
	for (int l = 0; l < 2; l++) {
		snprintf(cfg->lines[l].name, sizeof(cfg->lines[l].name), "%c", 'A' + l);
		char g[32];
		snprintf(g, sizeof(g), "239.%d.%d.%d", o2, o3, l + 1);
		inet_pton(AF_INET, g, &cfg->lines[l].group);
		cfg->lines[l].port = (uint16_t)uf_test_port_fixed(port_base + l);
		inet_pton(AF_INET, "127.0.0.1", &cfg->lines[l].interface);
		snprintf(l ? b : a, 64, "%s:%d", g, port_base + l);
	}
}

/* Recovery from the re-request server on 127.0.0.1:port: up to 1000 messages a request,
 * 50 ms timeout, 5 retries, 64 packets' wait; the wait, the queue and the request rate are
 * the caller's. */
static inline void fp_config_recovery(struct uf_feed_config *cfg, int port, uint32_t wait_ms,
                                      uint32_t queue_packets, uint32_t max_requests_per_s)
{
	cfg->recovery.enabled = 1;
	cfg->recovery.server.sin_family = AF_INET;
	cfg->recovery.server.sin_port = htons((uint16_t)uf_test_port_fixed(port));
	inet_pton(AF_INET, "127.0.0.1", &cfg->recovery.server.sin_addr);
	cfg->recovery.max_count = 1000;
	cfg->recovery.timeout_ms = 50;
	cfg->recovery.retries = 5;
	cfg->recovery.wait_ms = wait_ms;
	cfg->recovery.wait_packets = 64;
	cfg->recovery.queue_packets = queue_packets;
	cfg->recovery.max_requests_per_s = max_requests_per_s;
}

/* Creates the feed. Returns 0, or 1 (the reason printed). */
static inline int fp_feed_create(const struct uf_feed_config *cfg, struct uf_feed **feed)
{
	char err[256];
	if (uf_feed_create(cfg, feed, err, sizeof(err)) < 0) {
		fprintf(stderr, "uf_feed_create: %s\n", err);
		return 1;
	}
	return 0;
}

/* Waits (1 ms steps) until the feed has seen the end of session and published or given up
 * on `messages` messages, or until `limit` (monotonic ns). Returns 1 when the day ended. */
static inline int fp_wait_day(const struct uf_feed_stats *st, unsigned messages, uint64_t limit)
{
	int done = 0;
	while (uf_now_mono_ns() < limit &&
	       !(done = uf_load_relaxed_u64(&st->end_of_session) &&
	                uf_load_relaxed_u64(&st->messages) +
	                        uf_load_relaxed_u64(&st->messages_unrecovered) >=
	                    messages)) {
		struct timespec ts = {0, 1000000};
		nanosleep(&ts, NULL);
	}
	return done;
}

/* Stops the replayer `rp` (SIGTERM, then SIGKILL after 10 s). */
static inline void fp_stop_replay(pid_t rp)
{
	kill(rp, SIGTERM);
	ft_wait(rp, 10000);
}

/* Destroys the feed and removes its ring, this process's ring directory and the day. */
static inline void fp_cleanup(struct uf_feed *feed, const char *ring, const char *day)
{
	uf_feed_destroy(feed);
	uf_ring_unlink(ring, NULL);
	ft_rm_dir(ft_use_ring_dir());
	unlink(day);
}

#endif /* FEED_PROG_UTIL_H */
