/* uf-bridge-feed (test helper, not installed): plays an ITCH day into a ring the way the feed
 * thread does: the publisher's records of each message go through the engine's own sink
 * (feed/sink.h: the ring and the book image's one policy, no copy of it here), so the bridge
 * tests need neither multicast nor the daemon, and what they compare against is exactly the
 * producer's image.
 *
 *   uf-bridge-feed --in DAY --ring NAME [--rate MSGS_PER_S] [--drop-every N]
 *                  [--capacity N] [--depth N] [--linger MS] [--start-file PATH]
 *
 * --drop-every N loses every Nth message as an unrecovered gap (a GAP record and stale
 * books, as the feed reports one). --start-file: waits until PATH exists before playing (the
 * test attaches its consumers first). Closes the ring at the end (after --linger ms). Prints
 * {"messages":M,"records":R,"gaps":G,"tail":T} on stdout. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "decode/uf_batch.h"
#include "decode/uf_decode.h"
#include "decode/uf_reader.h"
#include "feed/sink.h"
#include "feed/uf_feed_config.h"
#include "publish/uf_publish.h"
#include "ring/uf_ring.h"

static uint64_t now_ns(clockid_t clk)
{
	struct timespec ts;
	clock_gettime(clk, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {{"in", required_argument, 0, 'i'},
	                                   {"ring", required_argument, 0, 'r'},
	                                   {"rate", required_argument, 0, 'R'},
	                                   {"drop-every", required_argument, 0, 'd'},
	                                   {"capacity", required_argument, 0, 'c'},
	                                   {"linger", required_argument, 0, 'l'},
	                                   {"start-file", required_argument, 0, 's'},
	                                   {"depth", required_argument, 0, 'D'},
	                                   {0, 0, 0, 0}};
	const char *in = NULL, *ring = NULL, *start_file = NULL;
	uint64_t rate = 0, drop_every = 0, capacity = 1u << 20, linger_ms = 0, depth = 10;
	struct uf_publish_params pp;
	struct uf_publisher *p = NULL;
	struct uf_feed_config cfg;
	struct uf_sink sink;
	struct uf_reader rd;
	struct uf_reader_msg rm;
	struct uf_itch_msg m;
	struct uf_decode_counters dc;
	struct uf_record recs[UF_REC_MAX_PER_MSG];
	uint64_t messages = 0, records = 0, gaps = 0, t0;
	char err[256];
	int opt;

	while ((opt = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (opt) {
		case 'i':
			in = optarg;
			break;
		case 'r':
			ring = optarg;
			break;
		case 'R':
			rate = strtoull(optarg, NULL, 10);
			break;
		case 'd':
			drop_every = strtoull(optarg, NULL, 10);
			break;
		case 'c':
			capacity = strtoull(optarg, NULL, 10);
			break;
		case 'l':
			linger_ms = strtoull(optarg, NULL, 10);
			break;
		case 's':
			start_file = optarg;
			break;
		case 'D':
			depth = strtoull(optarg, NULL, 10);
			break;
		default:
			return 2;
		}
	}
	if (!in || !ring)
		return 2;
	uf_publish_params_default(&pp);
	pp.max_orders = 1000000;
	pp.numa_node = -1;
	if (uf_publish_create(&pp, &p) < 0) {
		fprintf(stderr, "uf-bridge-feed: publisher: out of memory\n");
		return 1;
	}
	uf_feed_config_defaults(&cfg);
	snprintf(cfg.name, sizeof(cfg.name), "%s", ring);
	snprintf(cfg.ring.name, sizeof(cfg.ring.name), "%s", ring);
	cfg.ring.capacity = capacity;
	cfg.book.depth = (uint32_t)depth;
	cfg.book.max_orders = pp.max_orders;
	if (uf_sink_open(&sink, &cfg, p, err, sizeof(err)) < 0) {
		fprintf(stderr, "uf-bridge-feed: %s\n", err);
		return 1;
	}
	memset(&dc, 0, sizeof(dc));
	if (uf_reader_open(&rd, in, NULL) < 0) {
		fprintf(stderr, "uf-bridge-feed: %s\n", rd.err);
		return 1;
	}
	while (start_file && access(start_file, F_OK) != 0)
		usleep(2000);
	t0 = now_ns(CLOCK_MONOTONIC);
	while (uf_reader_next(&rd, &rm) > 0) {
		int n;
		if (uf_decode_msg_counted(rm.msg, rm.len, &m, &dc) != 0)
			continue;
		messages++;
		if (drop_every && messages % drop_every == 0) {
			n = uf_publish_gap(p, rm.seq, 1, recs, UF_REC_MAX_PER_MSG);
			gaps++;
			(void)uf_sink_gap(&sink, recs, (size_t)n);
		} else {
			n = uf_publish_apply(p, &m, rm.seq, now_ns(CLOCK_REALTIME), recs,
			                     UF_REC_MAX_PER_MSG);
			if (n <= 0)
				continue;
			(void)uf_sink_records(&sink, recs, (size_t)n, recs[0].rx_ts);
		}
		records += (uint64_t)n;
		if (rate) { /* pace: message k leaves at t0 + k / rate */
			uint64_t due = t0 + messages * 1000000000ull / rate;
			while (now_ns(CLOCK_MONOTONIC) < due)
				usleep(200);
		}
	}
	uf_reader_close(&rd);
	if (linger_ms)
		usleep((useconds_t)(linger_ms * 1000));
	printf("{\"messages\":%" PRIu64 ",\"records\":%" PRIu64 ",\"gaps\":%" PRIu64
	       ",\"tail\":%" PRIu64 "}\n",
	       messages, records, gaps, uf_ring_tail(sink.ring));
	fflush(stdout);
	uf_sink_close(&sink); /* the image complete, then the ring closed */
	uf_publish_destroy(p);
	return 0;
}
