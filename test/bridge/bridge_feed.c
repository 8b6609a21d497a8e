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

#include "bridge_feed_util.h"

static uint64_t now_ns(clockid_t clk)
{
	struct timespec ts;
	clock_gettime(clk, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {BF_COMMON_OPTIONS,
	                                   {"rate", required_argument, 0, 'R'},
	                                   {"drop-every", required_argument, 0, 'd'},
	                                   {"capacity", required_argument, 0, 'c'},
	                                   {0, 0, 0, 0}};
	struct bf_args a = {.depth = 10};
	uint64_t rate = 0, drop_every = 0, capacity = 1u << 20;
	struct uf_publisher *p = NULL;
	struct uf_sink sink;
	struct uf_reader rd;
	struct uf_reader_msg rm;
	struct uf_itch_msg m;
	struct uf_decode_counters dc;
	struct uf_record recs[UF_REC_MAX_PER_MSG];
	uint64_t messages = 0, records = 0, gaps = 0, t0;
	int opt;

	while ((opt = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (opt) {
		case 'R':
			rate = strtoull(optarg, NULL, 10);
			break;
		case 'd':
			drop_every = strtoull(optarg, NULL, 10);
			break;
		case 'c':
			capacity = strtoull(optarg, NULL, 10);
			break;
		default:
			if (bf_common_opt(opt, optarg, &a) < 0)
				return 2;
		}
	}
	if (!a.in || !a.ring)
		return 2;
	if (bf_open("uf-bridge-feed", a.ring, NULL, capacity, a.depth, 1000000, &p, &sink) < 0)
		return 1;
	memset(&dc, 0, sizeof(dc));
	if (uf_reader_open(&rd, a.in, NULL) < 0) {
		fprintf(stderr, "uf-bridge-feed: %s\n", rd.err);
		return 1;
	}
	bf_wait_start(a.start_file);
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
	if (a.linger_ms)
		usleep((useconds_t)(a.linger_ms * 1000));
	printf("{\"messages\":%" PRIu64 ",\"records\":%" PRIu64 ",\"gaps\":%" PRIu64
	       ",\"tail\":%" PRIu64 "}\n",
	       messages, records, gaps, uf_ring_tail(sink.ring));
	fflush(stdout);
	bf_close(p, &sink);
	return 0;
}
