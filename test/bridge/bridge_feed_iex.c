/* uf-bridge-feed-iex (test helper, not installed): plays an IEX-TP capture (DEEP or TOPS,
 * classic pcap, gzip'd or not) into a ring the way the feed thread does: each data segment
 * through the venue's protocol entry ("iex-deep" / "iex-tops", publish/proto_iex.c) into a
 * publish step whose records go through the engine's own sink (feed/sink.h: ring and book
 * image), and a stream that starts over inside its session voiding the books with a RESET,
 * as the arbiter does (docs/feed.md). No multicast, no daemon: the IEX ring of the consumer
 * tests (NATS fan-out, Python).
 *
 *   uf-bridge-feed-iex --in CAPTURE --ring NAME [--until-seq N] [--depth N] [--start-file P]
 *                      [--linger MS]
 *
 * --until-seq N stops after the first message numbered N (as `uf-decode books --until-seq`).
 * Closes the ring at the end. Prints {"segments":S,"records":R,"restarts":X,"tail":T}. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "decode/uf_decode.h"
#include "decode/uf_reader.h"
#include "feed/sink.h"
#include "feed/uf_feed_config.h"
#include "publish/uf_proto.h"
#include "publish/uf_publish.h"
#include "ring/uf_ring.h"

#include "bridge_feed_util.h"

struct bfi {
	struct uf_pub_step step;
	struct uf_record rec[256];
	struct uf_sink sink;
	uint64_t rx;      /* the segment's receive time (the capture's) */
	uint64_t records; /* handed to the sink */
	int err;          /* first sink error */
};

static void bfi_split(void *owner)
{
	struct bfi *x = owner;
	if (x->step.nrec) {
		int rc = uf_sink_records(&x->sink, x->rec, x->step.nrec, x->rx);
		if (rc < 0 && !x->err)
			x->err = rc;
		x->records += x->step.nrec;
	}
	x->step.nrec = 0;
}

static void bfi_decoded(void *owner)
{
	(void)owner;
}

static void bfi_msg_error(void *owner, enum uf_step_err kind)
{
	(void)owner;
	(void)kind;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
	    BF_COMMON_OPTIONS, {"until-seq", required_argument, 0, 'u'}, {0, 0, 0, 0}};
	struct bf_args a = {.depth = 10};
	uint64_t until = 0;
	int opt;
	while ((opt = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (opt) {
		case 'u':
			until = strtoull(optarg, NULL, 10);
			break;
		default:
			if (bf_common_opt(opt, optarg, &a) < 0)
				return 2;
		}
	}
	if (!a.in || !a.ring)
		return 2;
	struct uf_reader rd;
	if (uf_reader_open(&rd, a.in, NULL) != 0) {
		fprintf(stderr, "uf-bridge-feed-iex: %s\n", rd.err);
		return 1;
	}
	const uint8_t *pl;
	size_t len;
	uint64_t ts;
	struct uf_iextp_hdr h;
	if (uf_reader_next_payload(&rd, &pl, &len, &ts) != 1 ||
	    uf_iextp_parse_header(&h, pl, len) != 0 ||
	    (h.protocol_id != UF_IEXTP_PROTO_DEEP && h.protocol_id != UF_IEXTP_PROTO_TOPS)) {
		fprintf(stderr, "uf-bridge-feed-iex: %s: not an IEX-TP capture\n", a.in);
		return 1;
	}
	const struct uf_proto *e =
	    uf_proto_find(h.protocol_id == UF_IEXTP_PROTO_DEEP ? "iex-deep" : "iex-tops");
	struct uf_publisher *p;
	struct bfi *x = calloc(1, sizeof(*x));
	void *state = calloc(1, e->state_size ? e->state_size : 1);
	if (!x || !state) {
		fprintf(stderr, "uf-bridge-feed-iex: out of memory\n");
		return 1;
	}
	/* level books: no orders */
	if (bf_open("uf-bridge-feed-iex", a.ring, e->name, 1u << 20, a.depth, 16, &p, &x->sink) < 0)
		return 1;
	x->step.pub = p;
	x->step.recs = x->rec;
	x->step.rec_cap = x->step.step_cap = sizeof(x->rec) / sizeof(x->rec[0]);
	if (x->step.rec_cap > uf_sink_max_batch(&x->sink))
		x->step.rec_cap = x->step.step_cap = uf_sink_max_batch(&x->sink);
	x->step.split = bfi_split;
	x->step.decoded = bfi_decoded;
	x->step.msg_error = bfi_msg_error;
	x->step.owner = x;
	bf_wait_start(a.start_file);
	uint64_t segments = 0, restarts = 0;
	int started = 0;
	do {
		struct uf_frame f;
		if (e->framing->open(&f, pl, len) != UF_FRAME_DATA)
			continue; /* heartbeats, a truncated last segment */
		x->rx = ts;
		uint64_t sent;
		if (started && f.seq == 1 && e->framing->restart &&
		    e->framing->restart(&f, &sent)) {
			/* the arbiter's rule for a stream that starts over: every book void */
			struct uf_record r;
			bfi_split(x);
			if (uf_publish_new_session(p, f.session, &r, 1) == 1 &&
			    uf_sink_new_session(&x->sink, &r, 1) == 0)
				x->records++;
			restarts++;
		}
		started = 1;
		int last = 0;
		if (until && f.seq <= until && f.seq + f.count > until) {
			f.count = (uint32_t)(until - f.seq + 1);
			last = 1;
		}
		e->apply(&x->step, state, &f, 0, ts);
		bfi_split(x);
		(void)uf_sink_image_flush(&x->sink); /* after each "receive batch", as the feed */
		segments++;
		if (last)
			break;
	} while (uf_reader_next_payload(&rd, &pl, &len, &ts) == 1);
	uf_reader_close(&rd);
	if (a.linger_ms)
		usleep((useconds_t)(a.linger_ms * 1000));
	printf("{\"segments\":%" PRIu64 ",\"records\":%" PRIu64 ",\"restarts\":%" PRIu64
	       ",\"tail\":%" PRIu64 "}\n",
	       segments, x->records, restarts, uf_ring_tail(x->sink.ring));
	fflush(stdout);
	int rc = x->err;
	bf_close(p, &x->sink);
	free(state);
	free(x);
	if (rc < 0) {
		fprintf(stderr, "uf-bridge-feed-iex: sink: %s\n", strerror(-rc));
		return 1;
	}
	return 0;
}
