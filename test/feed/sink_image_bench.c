/* sink_image_bench: the book image's cost per message, deterministically. Not a test: run by
 * hand under callgrind (docs/performance.md, "Issue 26 item 2, h-image").
 *
 * Applies a day (any input uf_reader takes: a uf-gen day, the deep simulated day in the shared
 * data) through a publisher into the engine's sink with the feed's deferred image: publish
 * steps of `step` messages (a datagram), one image flush every `batch` steps (a receive
 * batch), then the flush. Nothing here depends on timing, so `valgrind --tool=callgrind`
 * counts the same instructions for the same day every run: uf_sink_image_flush's inclusive
 * count over the messages printed is the image copy per message, uf_sink_records' the ring
 * stores and the records' image updates. Prints one JSON line (messages, steps, flushes, the
 * deepest side seen at a flush, wall seconds).
 *
 *   sink_image_bench DAY [--depth N (10)] [--step M (42)] [--batch B (2)] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/uf_time.h"
#include "decode/uf_decode.h"
#include "decode/uf_reader.h"
#include "feed/sink.h"
#include "publish/uf_publish.h"
#include "ring/uf_ring.h"

#define MAX_STEP 64 /* messages per publish step at most */
#define RECS_PER 4  /* records one ITCH message makes at most (a replace: 2 levels) */

int main(int argc, char **argv)
{
	unsigned depth = 10, step = 42, batch = 2;
	const char *day = NULL;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--depth") && i + 1 < argc)
			depth = (unsigned)atoi(argv[++i]);
		else if (!strcmp(argv[i], "--step") && i + 1 < argc)
			step = (unsigned)atoi(argv[++i]);
		else if (!strcmp(argv[i], "--batch") && i + 1 < argc)
			batch = (unsigned)atoi(argv[++i]);
		else if (argv[i][0] != '-' && !day)
			day = argv[i];
		else
			day = NULL, i = argc;
	}
	if (!day || depth < 1 || depth > UF_SINK_MAX_DEPTH || step < 1 || step > MAX_STEP ||
	    batch < 1) {
		fprintf(stderr,
		        "usage: sink_image_bench DAY [--depth N (1..%d)] [--step M (1..%d)] "
		        "[--batch B]\n",
		        UF_SINK_MAX_DEPTH, MAX_STEP);
		return 2;
	}

	static struct uf_decode_counters dc;
	struct uf_reader rd;
	if (uf_reader_open(&rd, day, &dc) < 0) {
		fprintf(stderr, "%s: %s\n", day, rd.err);
		return 1;
	}
	struct uf_publish_params pp;
	struct uf_publisher *pub;
	uf_publish_params_default(&pp);
	pp.max_instruments = 65536;
	pp.max_orders = 1 << 21;
	pp.numa_node = -1;
	if (uf_publish_create(&pp, &pub) < 0) {
		fprintf(stderr, "uf_publish_create failed\n");
		uf_reader_close(&rd);
		return 1;
	}
	struct uf_feed_config cfg;
	static struct uf_sink sink;
	char err[256];
	memset(&cfg, 0, sizeof(cfg));
	snprintf(cfg.name, sizeof(cfg.name), "imgbench");
	snprintf(cfg.ring.name, sizeof(cfg.ring.name), "ufimgbench_%d", (int)getpid());
	cfg.ring.capacity = 1 << 16;
	cfg.book.depth = depth;
	cfg.book.max_instruments = 65536;
	cfg.numa_node = -1;
	if (uf_sink_open(&sink, &cfg, pub, err, sizeof(err)) < 0) {
		fprintf(stderr, "uf_sink_open: %s\n", err);
		uf_publish_destroy(pub);
		uf_reader_close(&rd);
		return 1;
	}
	uf_sink_defer_image(&sink, 1);

	static struct uf_record recs[MAX_STEP * RECS_PER];
	struct uf_reader_msg rm;
	struct uf_itch_msg m;
	uint64_t msgs = 0, steps = 0, flushes = 0, seq = 1, rx = 1;
	size_t nrec = 0, deepest = 0;
	unsigned in_step = 0, in_batch = 0;
	int rc = 0;
	double t0 = (double)uf_now_mono_ns();
	for (;;) {
		int more = uf_reader_next(&rd, &rm);
		if (more && rm.proto == 0 && uf_decode_msg_counted(rm.msg, rm.len, &m, &dc) == 0) {
			int k = uf_publish_apply(pub, &m, seq++, rx, recs + nrec,
			                         UF_ARRAY_SIZE(recs) - nrec);
			if (k < 0) {
				fprintf(stderr, "uf_publish_apply: %d at message %llu\n", k,
				        (unsigned long long)msgs);
				rc = 1;
				break;
			}
			nrec += (size_t)k;
			msgs++;
			in_step++;
		}
		if ((in_step == step || !more) && nrec) {
			if (uf_sink_records(&sink, recs, nrec, rx) < 0)
				rc = 1;
			nrec = 0;
			steps++;
			rx += 1000;
			in_batch++;
		}
		if (in_step == step)
			in_step = 0;
		if (in_batch == batch || (!more && in_batch)) {
			if (uf_sink_image_flush(&sink) < 0)
				rc = 1;
			flushes++;
			in_batch = 0;
		}
		if (!more)
			break;
	}
	double wall = ((double)uf_now_mono_ns() - t0) / 1e9;
	for (uint32_t id = 0; id < pp.max_instruments; id++) {
		size_t b = uf_publish_depth(pub, id, UF_SIDE_BID),
		       a = uf_publish_depth(pub, id, UF_SIDE_ASK);
		deepest = b > deepest ? b : deepest;
		deepest = a > deepest ? a : deepest;
	}
	printf("{\"day\":\"%s\",\"depth\":%u,\"step\":%u,\"batch\":%u,\"messages\":%llu,"
	       "\"steps\":%llu,\"flushes\":%llu,\"deepest_side_at_end\":%zu,\"wall_s\":%.3f}\n",
	       day, depth, step, batch, (unsigned long long)msgs, (unsigned long long)steps,
	       (unsigned long long)flushes, deepest, wall);
	uf_sink_close(&sink);
	uf_ring_unlink(cfg.ring.name, NULL);
	uf_publish_destroy(pub);
	uf_reader_close(&rd);
	return rc;
}
