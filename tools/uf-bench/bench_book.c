/* uf-bench book: what building the order books costs on top of decoding, in one run.
 *
 * Baseline: decode alone (uf_decode_batch_inline, the feed thread's path, prefetch on) over
 * the packets of a day. Then decode + books (publish/: uf_publish_apply_batch, records into
 * a buffer as the feed writes them into its ring) from empty books, once with every prefetch
 * off and once with the defaults (decode --prefetch packets ahead, book look-ahead of
 * publish's default). Each row is the best of --reps passes, rows interleaved; books are
 * reset outside the clock. book ns/msg = (decode+book) - decode: the books' own cost.
 * Every pass must build the same books (same records, no integrity errors on a generated
 * day); the command fails when they differ.
 *
 * Two more rows apply datagram by datagram through the ITCH protocol entry, as the live feed
 * does (publish/proto_itch50.c: each datagram decoded whole, then applied with the book
 * look-ahead): once as is, once with the whole datagram's order slots and books prefetched
 * in a first pass before the apply pass (what the feed does while it keeps up). The line
 * "book memory" says which pages the order and level tables got (publish/pub_mem.c).
 *
 * The last row is the datagram row with the feed's sink behind it (feed/sink.h): each step's
 * records go into a real ring and the changed books into its image, flushed after every
 * datagram as the live feed flushes after a receive batch of one. Its distance from the row
 * before is what the feed thread does beyond books for the same messages in a tight loop
 * (issue 26 item 2: the live figure against `book` splits into this and what being live adds:
 * the receive, arbitration, and caches that went cold waiting). */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "common/uf_time.h"
#include "bench_input.h"
#include "iex_rows.h"
#include "decode/uf_batch.h"
#include "feed/sink.h"
#include "feed/uf_feed_config.h"
#include "publish/uf_proto.h"
#include "publish/uf_publish.h"
#include "publish/uf_step.h"
#include "ring/uf_ring.h"
#include "ring/ufconsumer.h"
#include "tools/uf-decode/books_apply.h"

/* --gap-us: the feed thread of a live daemon spins idle between datagrams (~400 us per line
 * at 100 k msg/s) and the caches it works from do not survive the wait intact on a shared
 * host (issue 14: the books stage cost 3-4x uf-bench book's figure). With a gap, every batch
 * (decode alone too, uf_input_decode_pass) starts after uf_input_idle_wait(gap_ns) and only
 * the work is timed: the cost of building books from what an idle wait left in the caches. */

/* One decode+book pass from empty books; returns ns (with a gap: of the work only). */
static uint64_t pass_book(struct uf_books_apply *x, const struct uf_input_packets *in, size_t batch,
                          unsigned decode_pf, uint32_t book_pf, uint64_t gap_ns, uint64_t *errors)
{
	struct uf_decode_counters c;
	uint64_t t0, work = 0;

	memset(&c, 0, sizeof(c));
	uf_publish_reset(x->p); /* cold: outside the clock */
	uf_publish_set_prefetch(x->p, book_pf);
	x->n = 0;
	x->records = 0;
	t0 = uf_now_mono_ns();
	for (size_t i = 0; i < in->npkts; i += batch) {
		size_t k = in->npkts - i < batch ? in->npkts - i : batch;
		uint64_t tb = 0;
		if (gap_ns) {
			uf_input_idle_wait(gap_ns);
			tb = uf_now_mono_ns();
		}
		uf_decode_batch_inline(in->seq + i, k, decode_pf, &c, NULL,
		                       uf_books_apply_on_decoded, x);
		uf_books_apply_flush(
		    x); /* a receive batch is applied before the next one is reaped */
		if (gap_ns)
			work += uf_now_mono_ns() - tb;
	}
	t0 = uf_now_mono_ns() - t0;
	*errors = uf_decode_counters_errors(&c);
	return gap_ns ? work : t0;
}

/* The datagram rows' publish step: records go to a buffer handed on (counted) when full. */
#define DG_STEP 256 /* records per step: the live feed's step while it keeps up */

struct dg_step {
	struct uf_pub_step step;       /* what the protocol entry applies into */
	struct uf_record rec[DG_STEP]; /* the step's records */
	uint64_t records;              /* records handed on */
	uint64_t acc;                  /* folds records: keeps them live */
	uint64_t errs;                 /* messages that did not decode */
	void *state;                   /* the entry's per-feed state */
	const struct uf_proto *e;      /* "itch50-moldudp64" */
	struct uf_sink *sink;          /* the sink row: steps go to the ring and image */
	uint64_t sink_errs;            /* steps or flushes the sink refused (must stay 0) */
};

static void dg_split(void *o)
{
	struct dg_step *x = o;
	if (x->sink && x->step.nrec && uf_sink_records(x->sink, x->rec, x->step.nrec, 0) < 0)
		x->sink_errs++;
	if (x->step.nrec) {
		x->records += x->step.nrec;
		x->acc += x->rec[x->step.nrec - 1].shares ^ x->rec[x->step.nrec - 1].feed_seq;
	}
	x->step.nrec = 0;
}

static void dg_decoded(void *o)
{
	(void)o;
}

static void dg_err(void *o, enum uf_step_err k)
{
	(void)k;
	((struct dg_step *)o)->errs++;
}

/* One pass datagram by datagram from empty books; `dgram_pf` turns the whole-datagram
 * prefetch on (the entry does it when a step is smaller than the ring's batch: rec_cap is
 * set above DG_STEP for it, the step itself stays DG_STEP either way). Returns ns. */
static uint64_t pass_dgram(struct dg_step *x, struct uf_publisher *p,
                           const struct uf_input_packets *in, int dgram_pf, uint32_t book_pf)
{
	if (!x->sink) /* with the sink, the new session below empties the books */
		uf_publish_reset(p);
	uf_publish_set_prefetch(p, book_pf);
	memset(x->state, 0, x->e->state_size);
	x->records = x->errs = 0;
	x->step.nrec = 0;
	x->step.step_cap = DG_STEP;
	x->step.rec_cap = dgram_pf ? DG_STEP + 1 : DG_STEP;
	x->sink_errs = 0;
	if (x->sink) {
		/* books and image empty together, as a new session leaves them (untimed) */
		struct uf_record reset[1];
		int k = uf_publish_new_session(p, "BENCH     ", reset, 1);
		if (k < 0 || uf_sink_new_session(x->sink, reset, (size_t)k) < 0 ||
		    uf_sink_image_flush(x->sink) < 0)
			x->sink_errs++;
	}
	uint64_t t0 = uf_now_mono_ns();
	for (size_t i = 0; i < in->npkts; i++) {
		struct uf_frame f;
		if (x->e->framing->open(&f, in->seq[i].data, in->seq[i].len) != UF_FRAME_DATA)
			continue;
		x->e->apply(&x->step, x->state, &f, 0, 0);
		if (x->sink) {
			/* the feed publishes each datagram's last step and copies the image after
			 * the receive batch: here a batch of one */
			dg_split(x);
			if (uf_sink_image_flush(x->sink) < 0)
				x->sink_errs++;
		}
	}
	dg_split(x);
	uint64_t t = uf_now_mono_ns() - t0;
	if (x->sink && uf_sink_image_flush(x->sink) < 0)
		x->sink_errs++;
	return t;
}

/* One side of the image as a consumer copied it against the publisher's book: the top `depth`
 * levels, and the truncated flag exactly when the book is deeper. */
static int side_matches(struct uf_publisher *p, uint32_t id, uint8_t side,
                        const struct uf_level *img, uint32_t n, int cut, uint32_t depth)
{
	struct uf_level lv[UF_BOOK_MAX_DEPTH + 1];
	int k = uf_publish_top(p, id, side, lv, depth + 1);
	if (k < 0)
		return 0;
	uint32_t want = (uint32_t)k > depth ? depth : (uint32_t)k;
	if (n != want || cut != ((uint32_t)k > depth))
		return 0;
	for (uint32_t i = 0; i < n; i++)
		if (img[i].price != lv[i].price || img[i].shares != lv[i].shares ||
		    img[i].orders != lv[i].orders)
			return 0;
	return 1;
}

/* After the sink row: every instrument's image entry, read through the consumer library as a
 * late joiner would, holds what the publisher's books hold (an entry never set: an empty
 * book). The row's figure counts only when its image is right. Returns the instruments that
 * differ (0), or -errno when the ring cannot be read. */
static long sink_image_mismatches(struct uf_publisher *p, const char *ring)
{
	struct uf_consumer_options co;
	uf_consumer_t *c;
	char err[256];
	uf_consumer_options_init(&co);
	int rc = uf_consumer_attach(ring, &co, &c, err, sizeof(err));
	if (rc < 0) {
		fprintf(stderr, "uf-bench book: cannot read the sink's ring %s: %s\n", ring, err);
		return rc;
	}
	struct uf_consumer_info info;
	uf_consumer_get_info(c, &info);
	struct uf_book_snapshot *snap = malloc(sizeof(*snap));
	long bad = 0;
	for (uint32_t id = 0; snap && id < info.max_instruments; id++) {
		rc = uf_consumer_snapshot(c, id, snap);
		if (rc == -ENOENT) {
			bad += uf_publish_depth(p, id, UF_SIDE_BID) +
			           uf_publish_depth(p, id, UF_SIDE_ASK) >
			       0;
			continue;
		}
		if (rc < 0 ||
		    !side_matches(p, id, UF_SIDE_BID, snap->bid, snap->nbid,
		                  !!(snap->flags & UF_BOOKF_TRUNCATED_BID), info.depth) ||
		    !side_matches(p, id, UF_SIDE_ASK, snap->ask, snap->nask,
		                  !!(snap->flags & UF_BOOKF_TRUNCATED_ASK), info.depth))
			bad++;
	}
	if (!snap)
		bad = -ENOMEM;
	free(snap);
	uf_consumer_detach(c);
	return bad;
}

/* The feed's sink over a ring of its own (the daemon's capacity, depth and image size for
 * every instrument the publisher takes), in deferred-image mode as the feed thread runs it.
 * Returns 0 or -errno with the reason in err. */
static int sink_open(struct uf_sink *s, struct uf_publisher *p, const char *ring, char *err,
                     size_t errlen)
{
	struct uf_feed_config cfg;
	uf_feed_config_defaults(&cfg);
	snprintf(cfg.name, sizeof(cfg.name), "%.*s", (int)sizeof(cfg.name) - 1, ring);
	snprintf(cfg.ring.name, sizeof(cfg.ring.name), "%.*s", (int)sizeof(cfg.ring.name) - 1,
	         ring);
	cfg.ring.capacity = 1u << 20; /* uf-bench e2e's daemon */
	cfg.book.max_instruments = uf_publish_max_instruments(p);
	uf_feed_config_resolve(&cfg);
	int rc = uf_sink_open(s, &cfg, p, err, errlen);
	if (rc < 0)
		return rc;
	uf_sink_defer_wake(s, 1); /* nobody reads: no wake is owed anyway */
	uf_sink_defer_image(s, 1);
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: uf-bench book [FILE] [--messages N] [--reps N] [--prefetch D] "
	        "[--batch B] [--gap-us U] [--max-orders N] [--json]\n"
	        "  FILE          daily-format ITCH or pcap of MoldUDP64; default: a generated "
	        "day\n"
	        "  --messages N  size of the generated day (default 1000000)\n"
	        "  --reps N      passes per row, best kept (default 5)\n"
	        "  --prefetch D  decode prefetch distance in packets (default %u)\n"
	        "  --batch B     packets per batch (default 64)\n"
	        "  --gap-us U    busy-wait U us before each batch, untimed (default 0): the\n"
	        "                caches a live feed finds after waiting for a datagram\n"
	        "  --max-orders N  size the order table for N live orders (default: the\n"
	        "                daemon's book.max_orders default, 4000000)\n",
	        UF_DECODE_PREFETCH_DEFAULT);
}

enum { R_DECODE, R_BOOK_OFF, R_BOOK_ON, R_DGRAM, R_DGRAM_PF, R_SINK, NR };

int uf_bench_book(int argc, char **argv)
{
	uint64_t acc = 0;
	uint64_t best[NR], recs = 0, integ = 0, peak_orders = 0, peak_levels = 0;
	char what[NR][48], desc[512];
	struct uf_bench_input_opts o;
	struct uf_publish_params pp;
	struct uf_input_packets in;
	struct uf_books_apply *x;
	int bad = 0, rc;

	rc = uf_bench_input_opts_parse("book", argc, argv, usage, &o);
	if (rc >= 0)
		return rc;
	rc = uf_bench_input_load("book", o.file, o.gen, &in, desc, sizeof(desc));
	if (rc)
		return rc;
	uf_publish_params_default(&pp);
	pp.max_instruments = UF_PUB_MAX_INSTRUMENTS; /* any locate a file may carry */
	if (o.max_orders)
		pp.max_orders = o.max_orders; /* the table's size: its footprint in the caches */
	x = calloc(1, sizeof(*x));
	if (!x || (rc = uf_publish_create(&pp, &x->p)) != 0) {
		fprintf(stderr, "uf-bench book: cannot size the books: %s\n",
		        strerror(x ? -rc : ENOMEM));
		free(x);
		uf_input_free_packets(&in);
		return 2;
	}
	snprintf(what[R_DECODE], sizeof(what[0]), "decode alone (baseline)");
	snprintf(what[R_BOOK_OFF], sizeof(what[0]), "decode+book, prefetch off");
	snprintf(what[R_BOOK_ON], sizeof(what[0]), "decode+book, prefetch %" PRIu64 "/%u", o.pf,
	         pp.prefetch);
	snprintf(what[R_DGRAM], sizeof(what[0]), "per datagram, look-ahead %u", pp.prefetch);
	snprintf(what[R_DGRAM_PF], sizeof(what[0]), "per datagram, +datagram pf");
	snprintf(what[R_SINK], sizeof(what[0]), "%s", UF_BENCH_BOOK_SINK_ROW);
	struct dg_step *dg = calloc(1, sizeof(*dg));
	dg->e = uf_proto_find("itch50-moldudp64");
	dg->state = dg->e ? calloc(1, dg->e->state_size) : NULL;
	if (!dg->state) {
		fprintf(stderr, "uf-bench book: no itch50-moldudp64 entry\n");
		return 2;
	}
	dg->step.pub = x->p;
	dg->step.recs = dg->rec;
	dg->step.split = dg_split;
	dg->step.decoded = dg_decoded;
	dg->step.msg_error = dg_err;
	dg->step.owner = dg;
	struct uf_sink sink;
	char ring[64], err[256];
	snprintf(ring, sizeof(ring), "ufbench-book%d", (int)getpid());
	if (sink_open(&sink, x->p, ring, err, sizeof(err)) < 0) {
		fprintf(stderr, "uf-bench book: cannot open the sink's ring %s: %s\n", ring, err);
		uf_ring_unlink(ring, NULL);
		return 2;
	}
	uint64_t huge_bytes = 0, book_bytes = 0;
	unsigned book_kind = uf_publish_book_memory(x->p, &huge_bytes, &book_bytes);
	for (int k = 0; k < NR; k++)
		best[k] = UINT64_MAX;
	for (uint64_t r = 0; r < o.reps; r++) {
		uint64_t seen, errs, t;
		t = uf_input_decode_pass(in.seq, in.npkts, (size_t)o.batch, (unsigned)o.pf,
		                         o.gap_us * 1000, &seen, &acc, &errs);
		best[R_DECODE] = t < best[R_DECODE] ? t : best[R_DECODE];
		if (seen != in.nmsgs || errs)
			bad = 1;
		for (int k = R_BOOK_OFF; k <= R_BOOK_ON; k++) {
			struct uf_publish_stats st;
			int on = k == R_BOOK_ON;
			t = pass_book(x, &in, (size_t)o.batch, on ? (unsigned)o.pf : 0,
			              on ? pp.prefetch : 0, o.gap_us * 1000, &errs);
			best[k] = t < best[k] ? t : best[k];
			uf_publish_stats(x->p, &st);
			if (r == 0 && k == R_BOOK_OFF) {
				recs = x->records;
				integ = st.errors_total;
				peak_orders = st.peak_orders;
				peak_levels = st.peak_levels;
			} else if (x->records != recs || st.errors_total != integ) {
				bad = 1; /* every pass must build the same books */
			}
			if (errs)
				bad = 1;
		}
		for (int k = R_DGRAM; k <= R_SINK; k++) {
			dg->sink = k == R_SINK ? &sink : NULL;
			t = pass_dgram(dg, x->p, &in, k != R_DGRAM, pp.prefetch);
			best[k] = t < best[k] ? t : best[k];
			/* the same books as the chunked passes, record for record */
			if (dg->records != recs || dg->errs || dg->sink_errs)
				bad = 1;
		}
		if (r + 1 == o.reps) {
			long m = sink_image_mismatches(x->p, ring);
			if (m) {
				fprintf(
				    stderr,
				    "uf-bench book: the sink row's image differs from the books "
				    "(%ld)\n",
				    m);
				bad = 1;
			}
		}
	}
	acc += dg->acc;
	acc += x->acc;
	struct uf_bench_iex iex; /* DEEP beside ITCH, same run */
	uf_bench_iex_run(1, o.reps, &iex);
	bad |= iex.bad;
	{
		double dec = (double)best[R_DECODE] / (double)in.nmsgs;
		double off = (double)best[R_BOOK_OFF] / (double)in.nmsgs;
		double on = (double)best[R_BOOK_ON] / (double)in.nmsgs;
		double dg0 = (double)best[R_DGRAM] / (double)in.nmsgs;
		double dg1 = (double)best[R_DGRAM_PF] / (double)in.nmsgs;
		double snk = (double)best[R_SINK] / (double)in.nmsgs;
		if (o.json) {
			json_t *rows = json_array();
			for (int k = 0; k < NR; k++)
				json_array_append_new(
				    rows,
				    json_pack("{s:s, s:I, s:f, s:f}", "pass", what[k], "best_ns",
				              (json_int_t)best[k], "msgs_per_s",
				              (double)in.nmsgs / ((double)best[k] / 1e9),
				              "ns_per_msg", (double)best[k] / (double)in.nmsgs));
			json_t *root = json_pack(
			    "{s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:o, s:f, s:f, s:f, "
			    "s:f, "
			    "s:f, "
			    "s:I, s:I, "
			    "s:I, s:f, s:b}",
			    "bench", "book", "input", desc, "messages", (json_int_t)in.nmsgs,
			    "reps", (json_int_t)o.reps, "decode_prefetch", (json_int_t)o.pf,
			    "book_prefetch", (json_int_t)pp.prefetch, "batch", (json_int_t)o.batch,
			    "gap_us", (json_int_t)o.gap_us, "max_orders", (json_int_t)pp.max_orders,
			    "rows", rows, "book_ns_per_msg_prefetch_off", off - dec,
			    "book_ns_per_msg_prefetch_on", on - dec, "decode_book_vs_decode",
			    on / dec, "prefetch_on_vs_off", on / off, "records_per_msg",
			    (double)recs / (double)in.nmsgs, "integrity_errors", (json_int_t)integ,
			    "peak_orders", (json_int_t)peak_orders, "peak_levels",
			    (json_int_t)peak_levels, "loadavg", uf_bench_loadavg(), "ok", !bad);
			json_object_set_new(root, "dgram_prefetch_vs_lookahead",
			                    json_real(dg1 / dg0));
			json_object_set_new(root, "sink_ns_per_msg", json_real(snk - dg1));
			json_object_set_new(root, "sink_vs_book", json_real(snk / on));
			json_object_set_new(root, "book_memory",
			                    json_string(uf_publish_page_kind_name(book_kind)));
			json_object_set_new(root, "book_huge_bytes",
			                    json_integer((json_int_t)huge_bytes));
			json_object_set_new(root, "book_table_bytes",
			                    json_integer((json_int_t)book_bytes));
			if (iex.have)
				json_object_set_new(
				    root, "iex_deep",
				    json_pack("{s:s, s:I, s:I, s:f, s:f}", "input", iex.path,
				              "messages", (json_int_t)iex.messages,
				              "decode_best_ns", (json_int_t)iex.decode_ns,
				              "decode_ns_per_msg",
				              (double)iex.decode_ns / (double)iex.messages,
				              "decode_book_ns_per_msg",
				              (double)iex.book_ns / (double)iex.messages));
			json_dumpf(root, stdout, JSON_COMPACT);
			putchar('\n');
			json_decref(root);
		} else {
			printf("uf-bench book: %s: %" PRIu64 " messages, best of %" PRIu64
			       " passes, batches of %" PRIu64 " packets, sequential layout\n",
			       desc, in.nmsgs, o.reps, o.batch);
			if (o.gap_us)
				printf("every batch after %" PRIu64
				       " us of idle busy-waiting (--gap-us); "
				       "only the work is timed\n",
				       o.gap_us);
			printf("order table sized for %" PRIu64 " live orders\n", pp.max_orders);
			printf("book memory: %s (%" PRIu64 " of %" PRIu64
			       " MiB of order and level tables on huge pages)\n",
			       uf_publish_page_kind_name(book_kind), huge_bytes >> 20,
			       book_bytes >> 20);
			printf("%-30s %12s %8s %10s\n", "pass", "msgs/s", "ns/msg", "x decode");
			for (int k = 0; k < NR; k++)
				printf("%-30s %12.0f %8.2f %10.2f\n", what[k],
				       (double)in.nmsgs / ((double)best[k] / 1e9),
				       (double)best[k] / (double)in.nmsgs,
				       (double)best[k] / (double)best[R_DECODE]);
			printf("book's own cost: %.2f ns/msg prefetch off, %.2f ns/msg prefetch on "
			       "(on/off %.2fx); %.2f records/msg, peak %" PRIu64 " orders, %" PRIu64
			       " levels, %" PRIu64 " integrity errors\n",
			       off - dec, on - dec, on / off, (double)recs / (double)in.nmsgs,
			       peak_orders, peak_levels, integ);
			printf("datagram prefetch: per datagram %.2f -> %.2f ns/msg (%.2fx)\n", dg0,
			       dg1, dg1 / dg0);
			printf(
			    "the feed's sink (ring + image, flushed every datagram): %.2f ns/msg "
			    "beyond the datagram row; that row is %.2fx decode+book\n",
			    snk - dg1, snk / on);
			uf_bench_iex_print(&iex, stdout);
			uf_bench_print_machine(acc);
		}
	}
	if (bad)
		fprintf(stderr, "uf-bench book: passes disagreed or did not decode cleanly\n");
	uf_sink_close(&sink);
	uf_ring_unlink(ring, NULL);
	uf_publish_destroy(x->p);
	free(dg->state);
	free(dg);
	free(x);
	uf_input_free_packets(&in);
	return bad ? 1 : 0;
}
