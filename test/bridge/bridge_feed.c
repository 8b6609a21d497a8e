/* uf-bridge-feed (test helper, not installed): plays an ITCH day into a ring through the
 * producer API the way the feed thread does (records published per message, the book image
 * updated in one bracket per message and committed), so the bridge tests need neither
 * multicast nor the daemon.
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
#include "publish/uf_publish.h"
#include "ring/uf_ring.h"

static uint64_t now_ns(clockid_t clk)
{
	struct timespec ts;
	clock_gettime(clk, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void image_update(struct uf_ring *r, struct uf_publisher *p, const struct uf_record *recs,
                         int n, uint64_t seq, struct uf_level *bids, struct uf_level *asks,
                         uint32_t depth)
{
	(void)uf_ring_image_batch_begin(r);
	for (int i = 0; i < n; i++) {
		const struct uf_record *rec = &recs[i];
		switch (rec->kind) {
		case UF_REC_TRADE:
			(void)uf_ring_image_add_trade(r, rec->instrument, rec->price, rec->shares,
			                              rec->exch_ts, rec->rx_ts, seq);
			break;
		case UF_REC_STATUS:
			if (rec->aux)
				(void)uf_ring_image_set_status(r, rec->instrument, rec->aux,
				                               rec->price, rec->shares,
				                               rec->exch_ts, seq);
			break;
		case UF_REC_INSTRUMENT:
			(void)uf_ring_image_set_symbol(r, rec->instrument, rec->ref,
			                               (uint32_t)rec->shares, rec->aux, seq);
			break;
		case UF_REC_LEVEL: {
			int nb = uf_publish_top(p, rec->instrument, UF_SIDE_BID, bids, depth);
			int na = uf_publish_top(p, rec->instrument, UF_SIDE_ASK, asks, depth);
			(void)uf_ring_image_set_book(r, rec->instrument, bids, nb < 0 ? 0 : nb,
			                             asks, na < 0 ? 0 : na, seq, rec->rx_ts);
			break;
		}
		default:
			break;
		}
	}
	uf_ring_image_batch_end(r, seq);
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
	struct uf_ring_options ro;
	struct uf_ring *r = NULL;
	struct uf_reader rd;
	struct uf_reader_msg rm;
	struct uf_itch_msg m;
	struct uf_decode_counters dc;
	struct uf_record recs[UF_REC_MAX_PER_MSG];
	struct uf_level bids[UF_RING_MAX_DEPTH], asks[UF_RING_MAX_DEPTH];
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
	uf_ring_options_init(&ro);
	ro.capacity = capacity;
	ro.numa_node = UF_RING_NUMA_NONE;
	ro.hugepages = 0;
	ro.depth = (uint32_t)depth;
	if (uf_ring_create(ring, &ro, &r, err, sizeof(err)) < 0) {
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
			(void)uf_ring_publish(r, recs, (size_t)n);
			(void)uf_ring_image_batch_begin(r);
			(void)uf_ring_image_set_stale(r, UINT32_MAX, 1, uf_ring_tail(r));
			uf_ring_image_batch_end(r, uf_ring_tail(r));
		} else {
			n = uf_publish_apply(p, &m, rm.seq, now_ns(CLOCK_REALTIME), recs,
			                     UF_REC_MAX_PER_MSG);
			if (n <= 0)
				continue;
			(void)uf_ring_publish(r, recs, (size_t)n);
			image_update(r, p, recs, n, uf_ring_tail(r), bids, asks, ro.depth);
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
	       messages, records, gaps, uf_ring_tail(r));
	fflush(stdout);
	uf_ring_close(r);
	uf_publish_destroy(p);
	return 0;
}
