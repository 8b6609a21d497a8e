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
 * "book memory" says which pages the order and level tables got (publish/pub_mem.c). */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "common/uf_time.h"
#include "bench_input.h"
#include "iex_rows.h"
#include "decode/uf_batch.h"
#include "publish/uf_proto.h"
#include "publish/uf_publish.h"
#include "publish/uf_step.h"
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
};

static void dg_split(void *o)
{
	struct dg_step *x = o;
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
	uf_publish_reset(p);
	uf_publish_set_prefetch(p, book_pf);
	memset(x->state, 0, x->e->state_size);
	x->records = x->errs = 0;
	x->step.nrec = 0;
	x->step.step_cap = DG_STEP;
	x->step.rec_cap = dgram_pf ? DG_STEP + 1 : DG_STEP;
	uint64_t t0 = uf_now_mono_ns();
	for (size_t i = 0; i < in->npkts; i++) {
		struct uf_frame f;
		if (x->e->framing->open(&f, in->seq[i].data, in->seq[i].len) != UF_FRAME_DATA)
			continue;
		x->e->apply(&x->step, x->state, &f, 0, 0);
	}
	dg_split(x);
	return uf_now_mono_ns() - t0;
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

enum { R_DECODE, R_BOOK_OFF, R_BOOK_ON, R_DGRAM, R_DGRAM_PF, NR };

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
		for (int k = R_DGRAM; k <= R_DGRAM_PF; k++) {
			t = pass_dgram(dg, x->p, &in, k == R_DGRAM_PF, pp.prefetch);
			best[k] = t < best[k] ? t : best[k];
			/* the same books as the chunked passes, record for record */
			if (dg->records != recs || dg->errs)
				bad = 1;
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
			uf_bench_iex_print(&iex, stdout);
			uf_bench_print_machine(acc);
		}
	}
	if (bad)
		fprintf(stderr, "uf-bench book: passes disagreed or did not decode cleanly\n");
	uf_publish_destroy(x->p);
	free(dg->state);
	free(dg);
	free(x);
	uf_input_free_packets(&in);
	return bad ? 1 : 0;
}
