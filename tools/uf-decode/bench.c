/* uf-decode bench FILE: decode throughput with prefetch on and off beside a baseline that
 * only reads every byte of the same packets, all in one run.
 *
 * The file is re-packed into MoldUDP64 datagrams of at most 1472 bytes (a 1500-byte MTU),
 * one per 2048-byte slot, as an io_uring provided-buffer ring would hold them. Two layouts:
 *   sequential  slots in stream order (the hardware prefetcher's best case);
 *   scattered   the same stream with its slots shuffled over the arena (buffers recycled out
 *               of order: every packet is a fresh cache miss unless software prefetched).
 * Each row is the best of --reps timed passes over the whole input, in batches of --batch
 * packets through uf_decode_batch_inline() (the feed thread's code path). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "common/uf_parse.h"

struct row {
	const char *layout; /* sequential / scattered */
	char what[48];      /* row label */
	uint64_t best_ns;   /* best pass */
};

static void print_row(const struct row *r, const struct uf_input_packets *in)
{
	double s = (double)r->best_ns / 1e9;
	printf("%-11s %-26s %12.0f %9.2f %8.2f\n", r->layout, r->what, (double)in->nmsgs / s,
	       (double)r->best_ns / (double)in->nmsgs, (double)in->pkt_bytes / s / 1e9);
}

static int parse_num(const char *opt, const char *s, unsigned long long max, unsigned long long *v)
{
	uint64_t x;
	int rc = uf_parse_u64(s, 0, max, &x);
	*v = x;
	if (rc < 0) {
		fprintf(stderr, "uf-decode bench: %s wants a number <= %llu, got %s\n", opt, max,
		        s);
		return -1;
	}
	return 0;
}

int uf_decode_cmd_bench(int argc, char **argv)
{
	struct uf_bench_opts o = {.reps = 3, .prefetch = UF_DECODE_PREFETCH_DEFAULT, .batch = 64};
	const char *file = NULL;
	unsigned long long v;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--reps") && i + 1 < argc) {
			if (parse_num("--reps", argv[++i], 100, &v) || v == 0)
				return UF_EXIT_USAGE;
			o.reps = (int)v;
		} else if (!strcmp(argv[i], "--prefetch") && i + 1 < argc) {
			if (parse_num("--prefetch", argv[++i], 256, &v) || v == 0)
				return UF_EXIT_USAGE;
			o.prefetch = (unsigned)v;
		} else if (!strcmp(argv[i], "--batch") && i + 1 < argc) {
			if (parse_num("--batch", argv[++i], 1 << 20, &v) || v == 0)
				return UF_EXIT_USAGE;
			o.batch = (size_t)v;
		} else if (argv[i][0] == '-' && argv[i][1]) {
			fprintf(stderr, "uf-decode bench: unknown option %s\n", argv[i]);
			return UF_EXIT_USAGE;
		} else if (!file) {
			file = argv[i];
		} else {
			fprintf(stderr, "uf-decode bench: one FILE only\n");
			return UF_EXIT_USAGE;
		}
	}
	if (!file) {
		fprintf(stderr,
		        "usage: uf-decode bench FILE [--reps N] [--prefetch D] [--batch B]\n");
		return UF_EXIT_USAGE;
	}
	struct uf_input_packets in;
	int rc = uf_input_load_packets(file, 1472, &in);
	if (rc != UF_EXIT_OK)
		return rc;
	if (in.nmsgs == 0) {
		fprintf(stderr, "uf-decode bench: %s: no messages\n", file);
		uf_input_free_packets(&in);
		return UF_EXIT_USAGE;
	}
	printf("input: %s: %llu messages in %zu MoldUDP64 packets (<= 1472 B, 2048-B slots), "
	       "%.3f GB of datagrams\n",
	       file, (unsigned long long)in.nmsgs, in.npkts, (double)in.pkt_bytes / 1e9);
	printf("best of %d passes, batches of %zu packets; prefetch distance in packets\n", o.reps,
	       o.batch);
	printf("%-11s %-26s %12s %9s %8s\n", "layout", "pass", "msgs/s", "ns/msg", "GB/s");

	uint64_t acc = 0;
	int bad = 0;
	unsigned sweep[] = {1, 2, 4, 8, 16};
	for (int layout = 0; layout < 2; layout++) {
		const struct uf_decode_pkt *pk = layout ? in.scat : in.seq;
		struct row base = {.layout = layout ? "scattered" : "sequential",
		                   .best_ns = UINT64_MAX};
		struct row off = base, on = base;
		snprintf(base.what, sizeof(base.what), "read every byte (baseline)");
		snprintf(off.what, sizeof(off.what), "decode prefetch off");
		snprintf(on.what, sizeof(on.what), "decode prefetch %u", o.prefetch);
		for (int r = 0; r < o.reps; r++) {
			/* Interleave the rows so drift on a shared machine hits them alike. */
			uint64_t t = uf_input_read_pass(pk, in.npkts, &acc);
			base.best_ns = t < base.best_ns ? t : base.best_ns;
			for (int pf = 0; pf < 2; pf++) {
				uint64_t seen, errs;
				t = uf_input_decode_pass(pk, in.npkts, o.batch, pf ? o.prefetch : 0,
				                         0, &seen, &acc, &errs);
				struct row *rw = pf ? &on : &off;
				rw->best_ns = t < rw->best_ns ? t : rw->best_ns;
				if (seen != in.nmsgs || errs)
					bad = 1;
			}
		}
		print_row(&base, &in);
		print_row(&off, &in);
		print_row(&on, &in);
		printf("%-11s decode/baseline: prefetch off %.2fx, prefetch %u %.2fx; prefetch "
		       "on/off %.2fx\n",
		       base.layout, (double)off.best_ns / (double)base.best_ns, o.prefetch,
		       (double)on.best_ns / (double)base.best_ns,
		       (double)on.best_ns / (double)off.best_ns);
		if (layout == 1) { /* the distance sweep, where prefetch can matter */
			for (size_t d = 0; d < sizeof(sweep) / sizeof(sweep[0]); d++) {
				if (sweep[d] == o.prefetch)
					continue;
				struct row sw = base;
				sw.best_ns = UINT64_MAX;
				snprintf(sw.what, sizeof(sw.what), "decode prefetch %u", sweep[d]);
				for (int r = 0; r < o.reps; r++) {
					uint64_t seen, errs;
					uint64_t t = uf_input_decode_pass(
					    pk, in.npkts, o.batch, sweep[d], 0, &seen, &acc, &errs);
					sw.best_ns = t < sw.best_ns ? t : sw.best_ns;
				}
				print_row(&sw, &in);
			}
		}
	}
	/* ---- publish/ plugs in here: decode+book rows over the same packets ---- */
#ifdef UF_DECODE_HAVE_BOOKS
	rc = uf_decode_bench_books(&in, &o, stdout);
#endif
	printf("(checksum %llx; shared 2-vCPU machine: figures are noisy)\n",
	       (unsigned long long)(acc & 0xffff));
	if (bad) {
		fprintf(stderr,
		        "uf-decode bench: a decode pass did not see every message cleanly\n");
		rc = UF_EXIT_INPUT_ERR;
	}
	if (uf_decode_counters_errors(&in.load))
		rc = UF_EXIT_INPUT_ERR;
	uf_input_free_packets(&in);
	return rc;
}
