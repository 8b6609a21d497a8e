/* uf-decode books FILE [--depth N]: apply a whole file to the order books (publish/; IEX-TP
 * captures through their protocol entry: books_iex.c) and
 * print the final books, one JSON line per instrument whose book is not empty, sorted by
 * symbol bytewise:
 *   {"symbol":"AAPL","bid":[[price,shares,orders],...],"ask":[[price,shares,orders],...]}
 * prices as integers in the feed's units (4 decimals), bids highest first, asks lowest
 * first, every level unless --depth N; --until-seq N stops after sequence N and
 * --until-time HH:MM:SS.fff after the last message stamped (ITCH exchange time) at or before
 * it: the books as they were then (of a capture too: it reads in sequence order). Integrity errors
 * (unknown references ...) are summed up on stderr and make the exit status 1, like decode errors.
 *
 * Also the decode+book rows of `uf-decode bench` (uf_decode_bench_books). Owned by publish/. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "books_apply.h"
#include "books_iex.h"
#include "cmd.h"
#include "common/uf_parse.h"
#include "common/uf_time.h"
#include "publish/uf_publish.h"

static int books_num(const char *opt, const char *s, unsigned long long min, unsigned long long max,
                     unsigned long long *v)
{
	uint64_t x;
	int rc = uf_parse_u64(s, min, max, &x);
	*v = x;
	if (rc < 0) {
		fprintf(stderr, "uf-decode books: %s wants a number in [%llu, %llu], got %s\n", opt,
		        min, max, s);
		return -1;
	}
	return 0;
}

/* Where `books` stops: the books as they were after a sequence or at an exchange time. */
struct books_run {
	struct uf_books_apply *x; /* the books */
	uint64_t until_seq;       /* last sequence applied, 0 = the whole file */
	uint64_t until_ts;        /* last ITCH timestamp applied (ns after midnight), 0 = all */
	int have_until_ts;        /* --until-time given */
	uint64_t applied;         /* messages applied */
	uint64_t last_seq;        /* the last one's sequence */
};

/* uf_input_for_each's message callback; `ctx` is a struct books_run. Stops before the first
 * message past --until-seq / --until-time (a capture yields sequence order: uf_reader). */
static int books_on_msg(void *ctx, uint64_t seq, const struct uf_itch_msg *m)
{
	struct books_run *r = ctx;
	if ((r->until_seq && seq > r->until_seq) ||
	    (r->have_until_ts && m->timestamp > r->until_ts))
		return 1;
	uf_books_apply_add(r->x, seq, m);
	r->applied++;
	r->last_seq = seq;
	return 0;
}

/* HH:MM:SS[.fraction] -> ns after midnight. 0 or -1. */
static int books_parse_time(const char *s, uint64_t *ns)
{
	unsigned h, m, sec;
	int used = 0;
	if (sscanf(s, "%2u:%2u:%2u%n", &h, &m, &sec, &used) != 3 || h > 23 || m > 59 || sec > 60)
		return -1;
	uint64_t frac = 0, scale = 1000000000ull;
	const char *p = s + used;
	if (*p == '.') {
		for (p++; *p >= '0' && *p <= '9' && scale > 1; p++) {
			scale /= 10;
			frac += (uint64_t)(*p - '0') * scale;
		}
		if (p == s + used + 1)
			return -1;
	}
	if (*p)
		return -1;
	*ns = ((uint64_t)h * 3600 + m * 60 + sec) * 1000000000ull + frac;
	return 0;
}

/* JSON string body for a trimmed symbol (bytes outside printable ASCII escaped). */
static void books_put_symbol(FILE *f, const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20 || c >= 0x7f)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
}

static void books_put_side(FILE *f, const struct uf_publisher *p, uint32_t id, uint8_t side,
                           size_t depth, struct uf_level *buf, size_t cap)
{
	size_t n = uf_publish_depth(p, id, side);
	if (depth && n > depth)
		n = depth;
	if (n > cap)
		n = cap;
	int got = uf_publish_top(p, id, side, buf, n);
	fputc('[', f);
	for (int i = 0; i < got; i++)
		fprintf(f, "%s[%lld,%llu,%u]", i ? "," : "", (long long)buf[i].price,
		        (unsigned long long)buf[i].shares, buf[i].orders);
	fputc(']', f);
}

struct books_entry {
	char sym[9]; /* trimmed, NUL-terminated ("" when the id never got a symbol) */
	uint32_t id; /* instrument id */
};

static int books_cmp(const void *a, const void *b)
{
	const struct books_entry *x = a, *y = b;
	int c = strcmp(x->sym, y->sym); /* strcmp compares as unsigned char: bytewise */
	if (c)
		return c;
	return x->id < y->id ? -1 : x->id > y->id;
}

/* Prints every non-empty book and every named one in doubt, sorted by symbol. Returns books
 * printed or -ENOMEM. */
static long books_print(FILE *f, const struct uf_publisher *p, size_t depth)
{
	uint32_t max = uf_publish_max_instruments(p);
	struct books_entry *e = malloc((size_t)max * sizeof(*e));
	size_t cap = 1u << 20;
	struct uf_level *buf = malloc(cap * sizeof(*buf));
	if (!e || !buf) {
		free(e);
		free(buf);
		return -ENOMEM;
	}
	size_t n = 0;
	for (uint32_t id = 0; id < max; id++) {
		/* non-empty books, and empty ones in doubt that have a symbol (a gap puts every id
		 * in doubt; the named ones are those a reader knows), as uf-tail --books */
		int named = uf_publish_symbol(p, id, e[n].sym) >= 0;
		if (!uf_publish_depth(p, id, UF_SIDE_BID) &&
		    !uf_publish_depth(p, id, UF_SIDE_ASK) &&
		    !(named && uf_publish_instrument(p, id)->stale))
			continue;
		if (!named)
			e[n].sym[0] = '\0';
		e[n].id = id;
		n++;
	}
	qsort(e, n, sizeof(*e), books_cmp);
	for (size_t i = 0; i < n; i++) {
		fputs("{\"symbol\":\"", f);
		books_put_symbol(f, e[i].sym);
		fputs("\",\"bid\":", f);
		books_put_side(f, p, e[i].id, UF_SIDE_BID, depth, buf, cap);
		fputs(",\"ask\":", f);
		books_put_side(f, p, e[i].id, UF_SIDE_ASK, depth, buf, cap);
		/* the book may be wrong (an integrity error, an unrecovered gap): said as uf-tail
		 * --books says it from a live feed's image, whose rules are these */
		const struct uf_pub_instrument *in = uf_publish_instrument(p, e[i].id);
		if (in && in->stale)
			fputs(",\"stale\":true", f);
		fputs("}\n", f);
	}
	free(buf);
	free(e);
	return (long)n;
}

int uf_decode_cmd_books(int argc, char **argv)
{
	const char *file = NULL;
	unsigned long long v, depth = 0;
	struct books_run run = {0};
	struct uf_publish_params pp;
	uf_publish_params_default(&pp);
	pp.max_instruments = UF_PUB_MAX_INSTRUMENTS; /* any locate a file may carry */
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--depth") && i + 1 < argc) {
			if (books_num("--depth", argv[++i], 1, 1u << 20, &depth))
				return UF_EXIT_USAGE;
		} else if (!strcmp(argv[i], "--max-orders") && i + 1 < argc) {
			if (books_num("--max-orders", argv[++i], 1, 1ull << 34, &v))
				return UF_EXIT_USAGE;
			pp.max_orders = v;
		} else if (!strcmp(argv[i], "--max-levels") && i + 1 < argc) {
			if (books_num("--max-levels", argv[++i], 1, (1u << 30) - 1, &v))
				return UF_EXIT_USAGE;
			pp.max_levels = (uint32_t)v;
		} else if (!strcmp(argv[i], "--until-seq") && i + 1 < argc) {
			if (books_num("--until-seq", argv[++i], 1, UINT64_MAX - 1, &v))
				return UF_EXIT_USAGE;
			run.until_seq = v;
		} else if (!strcmp(argv[i], "--until-time") && i + 1 < argc) {
			if (books_parse_time(argv[++i], &run.until_ts) < 0) {
				fprintf(stderr,
				        "uf-decode books: --until-time wants HH:MM:SS[.fraction] "
				        "(exchange time), got %s\n",
				        argv[i]);
				return UF_EXIT_USAGE;
			}
			run.have_until_ts = 1;
		} else if (argv[i][0] == '-' && argv[i][1]) {
			fprintf(stderr, "uf-decode books: unknown option %s\n", argv[i]);
			return UF_EXIT_USAGE;
		} else if (!file) {
			file = argv[i];
		} else {
			fprintf(stderr, "uf-decode books: one FILE only\n");
			return UF_EXIT_USAGE;
		}
	}
	if (!file) {
		fprintf(stderr, "usage: uf-decode books FILE [--depth N] [--max-orders N] "
		                "[--max-levels N] [--until-seq N] [--until-time HH:MM:SS.fff]\n");
		return UF_EXIT_USAGE;
	}
	struct uf_books_apply *x = calloc(1, sizeof(*x));
	if (!x) {
		fprintf(stderr, "uf-decode books: out of memory\n");
		return UF_EXIT_USAGE;
	}
	int rc = uf_publish_create(&pp, &x->p);
	if (rc) {
		fprintf(stderr,
		        "uf-decode books: cannot size the books (max orders %llu, levels %u): "
		        "%s\n",
		        (unsigned long long)pp.max_orders, pp.max_levels, strerror(-rc));
		free(x);
		return UF_EXIT_USAGE;
	}
	struct uf_decode_counters c;
	memset(&c, 0, sizeof(c));
	const char *paths[1] = {file};
	run.x = x;
	struct uf_books_iex_result iex;
	int is_iex = uf_decode_books_iex(file, x->p, &c, run.until_seq, &iex);
	if (is_iex < 0) {
		fprintf(stderr, "uf-decode books: out of memory\n");
		rc = UF_EXIT_USAGE;
	} else if (is_iex && run.have_until_ts) {
		fprintf(stderr,
		        "uf-decode books: --until-time is for ITCH input (exchange time after "
		        "midnight); %s is IEX-TP: use --until-seq\n",
		        file);
		rc = UF_EXIT_USAGE;
	} else if (is_iex) {
		fprintf(stderr,
		        "uf-decode books: %s: %s, %llu segments, %llu stream restarts (books "
		        "voided, as live)\n",
		        file, iex.proto, (unsigned long long)iex.segments,
		        (unsigned long long)iex.restarts);
		rc = UF_EXIT_OK; /* messages that did not decode: the error summary below */
	} else {
		rc = uf_input_for_each(paths, 1, &c, books_on_msg, NULL, &run);
	}
	if (rc == UF_EXIT_OK && !is_iex && (run.until_seq || run.have_until_ts))
		fprintf(stderr, "uf-decode books: %llu messages applied, up to sequence %llu\n",
		        (unsigned long long)run.applied, (unsigned long long)run.last_seq);
	if (rc == UF_EXIT_OK) {
		uf_books_apply_flush(x);
		if (books_print(stdout, x->p, (size_t)depth) < 0) {
			fprintf(stderr, "uf-decode books: out of memory\n");
			rc = UF_EXIT_USAGE;
		}
	}
	if (rc == UF_EXIT_OK) {
		struct uf_publish_stats st;
		uf_publish_stats(x->p, &st);
		uint64_t derr = uf_decode_counters_errors(&c) + (is_iex > 0 ? iex.msg_errors : 0);
		if (st.errors_total || derr) {
			fprintf(stderr,
			        "uf-decode books: %s: %llu decode errors, %llu book integrity "
			        "errors",
			        file, (unsigned long long)derr,
			        (unsigned long long)st.errors_total);
			for (unsigned k = 0; k < UF_PUB_NERR; k++)
				if (st.errors[k])
					fprintf(stderr, " %s=%llu", uf_publish_err_name(k),
					        (unsigned long long)st.errors[k]);
			fputc('\n', stderr);
			rc = UF_EXIT_INPUT_ERR;
		}
	}
	uf_publish_destroy(x->p);
	free(x);
	return rc;
}

/* ---- bench rows ------------------------------------------------------------------------ */

/* Dependent-load latency over `bytes` of memory (a random cyclic walk over its cache lines,
 * each step waiting for the previous): what one cache miss into that working set costs.
 * Returns ns per step, or -1. */
static double books_miss_ns(size_t bytes)
{
	size_t lines = bytes / 64;
	uint64_t *a = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (a == MAP_FAILED)
		return -1;
	(void)madvise(a, bytes, MADV_HUGEPAGE); /* as the order table: TLB reach alike */
	/* Sattolo's shuffle: one cycle through every line. */
	uint32_t *perm = malloc(lines * sizeof(*perm));
	if (!perm) {
		munmap(a, bytes);
		return -1;
	}
	for (size_t i = 0; i < lines; i++)
		perm[i] = (uint32_t)i;
	uint64_t s = 88172645463325252ull;
	for (size_t i = lines - 1; i > 0; i--) {
		s ^= s << 13;
		s ^= s >> 7;
		s ^= s << 17;
		size_t j = s % i;
		uint32_t t = perm[i];
		perm[i] = perm[j];
		perm[j] = t;
	}
	for (size_t i = 0; i < lines; i++)
		a[(size_t)perm[i] * 8] = (uint64_t)perm[(i + 1) % lines] * 8;
	free(perm);
	/* Both walks stop at 4 M steps or 250 ms, whichever comes first: a step is ~100 ns on a
	 * server but ~5 us under AddressSanitizer (its shadow check is a second miss, in a VM),
	 * where 4 M steps and a whole warm-up cycle took 32 s of a test's 60 s. */
	const size_t max_steps = 4000000, chunk = 1u << 16;
	const uint64_t budget_ns = 250000000ull;
	size_t steps = 0, idx = 0;
	uint64_t t0 = uf_now_mono_ns(), t;
	for (size_t i = 0; i < lines; i++) { /* warm the TLB and caches as far as they reach */
		idx = a[idx];
		if ((i & (chunk - 1)) == 0 && uf_now_mono_ns() - t0 > budget_ns)
			break;
	}
	t0 = uf_now_mono_ns();
	do {
		for (size_t i = 0; i < chunk; i++)
			idx = a[idx];
		steps += chunk;
		t = uf_now_mono_ns() - t0;
	} while (steps < max_steps && t < budget_ns);
	munmap(a, bytes);
	if (idx == 1) /* never: keeps the chase */
		fputc(' ', stderr);
	return (double)t / (double)steps;
}

/* One timed decode+book pass from empty books; returns wall ns, *cpu = thread CPU ns. */
static uint64_t books_pass(struct uf_books_apply *x, const struct uf_decode_pkt *pk, size_t n,
                           size_t batch, unsigned decode_pf, uint32_t book_pf,
                           struct uf_decode_counters *c, uint64_t *cpu)
{
	uf_publish_reset(x->p); /* cold, outside the clock */
	uf_publish_set_prefetch(x->p, book_pf);
	x->n = 0;
	uint64_t c0 = uf_now_thread_cpu_ns();
	uint64_t t0 = uf_now_mono_ns();
	for (size_t i = 0; i < n; i += batch) {
		size_t k = n - i < batch ? n - i : batch;
		uf_decode_batch_inline(pk + i, k, decode_pf, c, NULL, uf_books_apply_on_decoded, x);
		uf_books_apply_flush(
		    x); /* a receive batch is applied before the next one is reaped */
	}
	uint64_t t = uf_now_mono_ns() - t0;
	*cpu = uf_now_thread_cpu_ns() - c0;
	return t;
}

int uf_decode_bench_books(const struct uf_input_packets *in, const struct uf_bench_opts *o,
                          FILE *out)
{
	struct uf_publish_params pp;
	uf_publish_params_default(&pp);
	pp.max_instruments = UF_PUB_MAX_INSTRUMENTS;
	struct uf_books_apply *x = calloc(1, sizeof(*x));
	if (!x)
		return UF_EXIT_USAGE;
	int rc = uf_publish_create(&pp, &x->p);
	if (rc) {
		fprintf(stderr, "uf-decode bench: cannot size the books: %s\n", strerror(-rc));
		free(x);
		return UF_EXIT_USAGE;
	}
	static const uint32_t dists[] = {0, 4, 8, 16, 32};
	const uint32_t def = pp.prefetch;
	uint64_t best[UF_ARRAY_SIZE(dists)], best_cpu[UF_ARRAY_SIZE(dists)];
	uint64_t recs = 0, errs = 0, peak_orders = 0, peak_levels = 0;
	int bad = 0;
	for (size_t d = 0; d < UF_ARRAY_SIZE(dists); d++)
		best[d] = best_cpu[d] = UINT64_MAX;
	for (int r = 0; r < o->reps; r++) {
		/* Interleaved, so drift on a shared machine hits every distance alike. */
		for (size_t d = 0; d < UF_ARRAY_SIZE(dists); d++) {
			struct uf_decode_counters c;
			memset(&c, 0, sizeof(c));
			x->records = 0;
			uint64_t cpu;
			uint64_t t = books_pass(x, in->seq, in->npkts, o->batch,
			                        dists[d] ? o->prefetch : 0, dists[d], &c, &cpu);
			best[d] = t < best[d] ? t : best[d];
			best_cpu[d] = cpu < best_cpu[d] ? cpu : best_cpu[d];
			struct uf_publish_stats st;
			uf_publish_stats(x->p, &st);
			if (r == 0 && d == 0) {
				recs = x->records;
				errs = st.errors_total;
				peak_orders = st.peak_orders;
				peak_levels = st.peak_levels;
			} else if (x->records != recs || st.errors_total != errs) {
				bad = 1; /* every pass must build the same books */
			}
		}
	}
	for (size_t d = 0; d < UF_ARRAY_SIZE(dists); d++) {
		double s = (double)best[d] / 1e9;
		char what[48];
		if (dists[d] == 0)
			snprintf(what, sizeof(what), "decode+book prefetch off");
		else
			snprintf(what, sizeof(what), "decode+book prefetch %u%s", dists[d],
			         dists[d] == def ? " *" : "");
		fprintf(out, "%-11s %-26s %12.0f %9.2f %8.2f\n", "sequential", what,
		        (double)in->nmsgs / s, (double)best[d] / (double)in->nmsgs,
		        (double)in->pkt_bytes / s / 1e9);
	}
	size_t di = 0;
	for (size_t d = 0; d < UF_ARRAY_SIZE(dists); d++)
		if (dists[d] == def)
			di = d;
	fprintf(out,
	        "decode+book: book prefetch distance in messages (* = default %u; decode "
	        "prefetch %u packets when on); prefetch %u/off %.2fx; %.2f records/msg, peak "
	        "%llu live orders, %llu levels, %llu integrity errors\n",
	        def, o->prefetch, def, (double)best[di] / (double)best[0],
	        (double)recs / (double)in->nmsgs, (unsigned long long)peak_orders,
	        (unsigned long long)peak_levels, (unsigned long long)errs);
	fprintf(out, "decode+book thread CPU time (not counting time off the CPU on a shared "
	             "machine), ns/msg:");
	for (size_t d = 0; d < UF_ARRAY_SIZE(dists); d++)
		fprintf(out, "%s %u: %.2f", d ? "," : "", dists[d],
		        (double)best_cpu[d] / (double)in->nmsgs);
	fprintf(out, " (distance 0 = off)\n");
	double l2 = books_miss_ns(1u << 20), big = books_miss_ns((size_t)128 << 20);
	fprintf(out,
	        "memory: dependent load %.1f ns in a 1 MiB working set, %.1f ns in 128 MiB "
	        "(the default order table's size): the price of one miss the book could not "
	        "hide\n",
	        l2, big);
	uf_publish_destroy(x->p);
	free(x);
	if (bad) {
		fprintf(stderr, "uf-decode bench: decode+book passes disagreed\n");
		return UF_EXIT_INPUT_ERR;
	}
	return UF_EXIT_OK;
}
