/* What the two test feeders (uf-bridge-feed: an ITCH day, uf-bridge-feed-iex: an IEX-TP
 * capture) share: a publisher and the engine's own sink on the named ring, the wait for the
 * start file the tests create once their consumers are attached, and the end (linger, then
 * the image complete and the ring closed). */
#ifndef BRIDGE_FEED_UTIL_H
#define BRIDGE_FEED_UTIL_H

#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "feed/sink.h"
#include "feed/uf_feed_config.h"
#include "publish/uf_publish.h"

/* The options both feeders take, for their getopt_long tables. */
#define BF_COMMON_OPTIONS                                                                          \
	{"in", required_argument, 0, 'i'}, {"ring", required_argument, 0, 'r'},                    \
	    {"depth", required_argument, 0, 'D'}, {"start-file", required_argument, 0, 's'},       \
	{                                                                                          \
		"linger", required_argument, 0, 'l'                                                \
	}

/* What the common options say. */
struct bf_args {
	const char *in;         /* --in: the day or capture */
	const char *ring;       /* --ring: the ring's name */
	const char *start_file; /* --start-file: play once it exists (NULL: at once) */
	uint64_t depth;         /* --depth: image levels per side (10) */
	uint64_t linger_ms;     /* --linger: the ring stays open this long after the play (0) */
};

/* Takes getopt_long's `opt` (with `arg`) into `a` when it is one of BF_COMMON_OPTIONS: 0, or
 * -1 for any other option. */
static inline int bf_common_opt(int opt, const char *arg, struct bf_args *a)
{
	switch (opt) {
	case 'i':
		a->in = arg;
		return 0;
	case 'r':
		a->ring = arg;
		return 0;
	case 'D':
		a->depth = strtoull(arg, NULL, 10);
		return 0;
	case 's':
		a->start_file = arg;
		return 0;
	case 'l':
		a->linger_ms = strtoull(arg, NULL, 10);
		return 0;
	default:
		return -1;
	}
}

/* Makes the publisher (max_orders orders) and opens the sink on a new ring `ring` of
 * `capacity` records and image depth `depth`, for the protocol entry `protocol` (NULL: the
 * config's default, ITCH 5.0). 0, or -1 with a line on stderr prefixed by `prog`. */
static inline int bf_open(const char *prog, const char *ring, const char *protocol,
                          uint64_t capacity, uint64_t depth, uint64_t max_orders,
                          struct uf_publisher **p, struct uf_sink *sink)
{
	struct uf_publish_params pp;
	struct uf_feed_config cfg;
	char err[256];

	uf_publish_params_default(&pp);
	pp.max_orders = max_orders;
	pp.numa_node = -1;
	if (uf_publish_create(&pp, p) < 0) {
		fprintf(stderr, "%s: publisher: out of memory\n", prog);
		return -1;
	}
	uf_feed_config_defaults(&cfg);
	snprintf(cfg.name, sizeof(cfg.name), "%s", ring);
	snprintf(cfg.ring.name, sizeof(cfg.ring.name), "%s", ring);
	if (protocol)
		snprintf(cfg.protocol, sizeof(cfg.protocol), "%s", protocol);
	cfg.ring.capacity = capacity;
	cfg.book.depth = (uint32_t)depth;
	cfg.book.max_orders = pp.max_orders;
	if (uf_sink_open(sink, &cfg, *p, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s: %s\n", prog, err);
		uf_publish_destroy(*p);
		*p = NULL;
		return -1;
	}
	return 0;
}

/* Waits until `start_file` exists (NULL: plays at once): the test attaches its consumers
 * to the new ring first. Unbounded: the test kills a feeder it no longer waits for. */
static inline void bf_wait_start(const char *start_file)
{
	while (start_file && access(start_file, F_OK) != 0)
		usleep(2000);
}

/* The end of a play, once its summary line is printed: the image complete, then the ring
 * closed (consumers see the close only after the last books), then the publisher freed. */
static inline void bf_close(struct uf_publisher *p, struct uf_sink *sink)
{
	uf_sink_close(sink);
	uf_publish_destroy(p);
}

#endif /* BRIDGE_FEED_UTIL_H */
