/* uf-bench decode: ITCH 5.0 over MoldUDP64 decode throughput beside its baseline, in one run,
 * and the real IEX DEEP capture's decode beside it when present (iex_rows.h).
 *
 * Baseline: a pass that only reads every byte of the same packets (8 at a time) in the same
 * order: what touching the data costs before any decoding. Decode rows run the feed thread's
 * code path (uf_decode_batch_inline, batches of --batch packets) with prefetch off and on.
 * Two layouts of the same stream (from tools/uf-decode/input.c, as `uf-decode bench`):
 *   sequential  packets in consecutive 2048-byte slots (the hardware prefetcher's best case);
 *   scattered   the same packets in shuffled slots (receive buffers recycled out of order).
 * Each row is the best of --reps passes, rows interleaved so drift on a shared machine hits
 * them alike. The claim is the ratio decode / baseline, not the absolute rate. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "bench_input.h"
#include "decode/uf_batch.h"
#include "e2e.h"
#include "iex_rows.h"

int uf_bench_input_opts_parse(const char *cmd, int argc, char **argv, void (*usage)(FILE *),
                              struct uf_bench_input_opts *o)
{
	static const struct option lo[] = {{"messages", required_argument, 0, 'm'},
	                                   {"reps", required_argument, 0, 'r'},
	                                   {"prefetch", required_argument, 0, 'p'},
	                                   {"batch", required_argument, 0, 'b'},
	                                   {"json", no_argument, 0, 'j'},
	                                   {"gap-us", required_argument, 0, 'g'},
	                                   {"max-orders", required_argument, 0, 'o'},
	                                   {"help", no_argument, 0, 'h'},
	                                   {0, 0, 0, 0}};
	int opt;

	o->file = NULL;
	o->gen = 1000000;
	o->reps = 5;
	o->pf = UF_DECODE_PREFETCH_DEFAULT;
	o->batch = 64;
	o->json = 0;
	o->gap_us = 0;
	o->max_orders = 0;
	optind = 1;
	while ((opt = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (opt) {
		case 'm':
			if (uf_bench_parse_u64(cmd, "--messages", optarg, 1000, 500000000, &o->gen))
				return 2;
			break;
		case 'r':
			if (uf_bench_parse_u64(cmd, "--reps", optarg, 1, 100, &o->reps))
				return 2;
			break;
		case 'p':
			if (uf_bench_parse_u64(cmd, "--prefetch", optarg, 1, 256, &o->pf))
				return 2;
			break;
		case 'b':
			if (uf_bench_parse_u64(cmd, "--batch", optarg, 1, 1 << 20, &o->batch))
				return 2;
			break;
		case 'j':
			o->json = 1;
			break;
		case 'g':
			if (strcmp(cmd, "book") != 0) {
				fprintf(stderr,
				        "uf-bench %s: --gap-us is an option of uf-bench book\n",
				        cmd);
				return 2;
			}
			if (uf_bench_parse_u64(cmd, "--gap-us", optarg, 0, 1000000, &o->gap_us))
				return 2;
			break;
		case 'o':
			if (strcmp(cmd, "book") != 0) {
				fprintf(stderr,
				        "uf-bench %s: --max-orders is an option of uf-bench book\n",
				        cmd);
				return 2;
			}
			if (uf_bench_parse_u64(cmd, "--max-orders", optarg, 1024, 1ull << 32,
			                       &o->max_orders))
				return 2;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (argc - optind > 1) {
		fprintf(stderr, "uf-bench %s: one FILE at most\n", cmd);
		return 2;
	}
	o->file = optind < argc ? argv[optind] : NULL;
	return -1;
}

int uf_bench_input_load(const char *cmd, const char *file, uint64_t gen_msgs,
                        struct uf_input_packets *in, char *desc, size_t desclen)
{
	char tmp[] = "/tmp/uf-bench-day-XXXXXX", bin[2048], msgs[32];
	int rc, fd = -1;

	if (!file) {
		char *argv[] = {bin,         "--out", tmp,      "--messages", msgs,
		                "--symbols", "1000",  "--seed", "1",          NULL};
		ssize_t n = readlink("/proc/self/exe", bin, sizeof(bin) - 16);
		pid_t pid;
		int st;
		if (n <= 0) {
			fprintf(stderr, "uf-bench %s: cannot find my own binary\n", cmd);
			return UF_EXIT_USAGE;
		}
		bin[n] = '\0';
		snprintf(strrchr(bin, '/') ? strrchr(bin, '/') : bin, 16, "/uf-gen");
		fd = mkstemp(tmp);
		if (fd < 0) {
			fprintf(stderr, "uf-bench %s: mkstemp: %s\n", cmd, strerror(errno));
			return UF_EXIT_USAGE;
		}
		close(fd);
		snprintf(msgs, sizeof(msgs), "%" PRIu64, gen_msgs);
		pid = uf_bench_spawn(argv, "/dev/null", NULL, -1);
		st = pid > 0 ? uf_bench_wait_child(pid, 120000) : -1;
		if (st < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			fprintf(stderr, "uf-bench %s: %s failed\n", cmd, bin);
			unlink(tmp);
			return UF_EXIT_USAGE;
		}
		file = tmp;
		snprintf(desc, desclen,
		         "generated day (uf-gen --messages %" PRIu64 " --symbols 1000 --seed 1)",
		         gen_msgs);
	} else {
		snprintf(desc, desclen, "%s", file);
	}
	rc = uf_input_load_packets(file, 1472, in);
	if (fd >= 0)
		unlink(tmp);
	if (rc != UF_EXIT_OK)
		return rc;
	if (in->nmsgs == 0) {
		fprintf(stderr, "uf-bench %s: %s: no messages\n", cmd, desc);
		uf_input_free_packets(in);
		return UF_EXIT_USAGE;
	}
	return UF_EXIT_OK;
}

enum { ROW_BASE, ROW_OFF, ROW_ON, NROWS };

struct drow {
	char what[40];    /* label */
	uint64_t best_ns; /* best pass */
};

static double mps(const struct uf_input_packets *in, uint64_t ns)
{
	return (double)in->nmsgs / ((double)ns / 1e9);
}

static double nspm(const struct uf_input_packets *in, uint64_t ns)
{
	return (double)ns / (double)in->nmsgs;
}

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: uf-bench decode [FILE] [--messages N] [--reps N] [--prefetch D] "
	        "[--batch B] [--json]\n"
	        "  FILE          daily-format ITCH or pcap of MoldUDP64; default: a generated "
	        "day\n"
	        "  --messages N  size of the generated day (default 1000000)\n"
	        "  --reps N      passes per row, best kept (default 5)\n"
	        "  --prefetch D  decode prefetch distance in packets (default %u)\n"
	        "  --batch B     packets per batch (default 64: one CQE batch)\n",
	        UF_DECODE_PREFETCH_DEFAULT);
}

int uf_bench_decode(int argc, char **argv)
{
	static const char *layout[] = {"sequential", "scattered"};
	uint64_t acc = 0;
	struct uf_bench_input_opts o;
	struct drow rows[2][NROWS];
	struct uf_input_packets in;
	char desc[512];
	int bad = 0, rc;

	rc = uf_bench_input_opts_parse("decode", argc, argv, usage, &o);
	if (rc >= 0)
		return rc;
	rc = uf_bench_input_load("decode", o.file, o.gen, &in, desc, sizeof(desc));
	if (rc)
		return rc;
	for (int l = 0; l < 2; l++) {
		const struct uf_decode_pkt *pk = l ? in.scat : in.seq;
		snprintf(rows[l][ROW_BASE].what, sizeof(rows[l][0].what),
		         "read every byte (baseline)");
		snprintf(rows[l][ROW_OFF].what, sizeof(rows[l][0].what), "decode prefetch off");
		snprintf(rows[l][ROW_ON].what, sizeof(rows[l][0].what), "decode prefetch %" PRIu64,
		         o.pf);
		for (int k = 0; k < NROWS; k++)
			rows[l][k].best_ns = UINT64_MAX;
		for (uint64_t r = 0; r < o.reps; r++) {
			uint64_t t = uf_input_read_pass(pk, in.npkts, &acc), seen, errs;
			if (t < rows[l][ROW_BASE].best_ns)
				rows[l][ROW_BASE].best_ns = t;
			for (int k = ROW_OFF; k <= ROW_ON; k++) {
				t = uf_input_decode_pass(pk, in.npkts, (size_t)o.batch,
				                         k == ROW_ON ? (unsigned)o.pf : 0, 0, &seen,
				                         &acc, &errs);
				if (t < rows[l][k].best_ns)
					rows[l][k].best_ns = t;
				if (seen != in.nmsgs || errs)
					bad = 1;
			}
		}
	}
	struct uf_bench_iex iex; /* DEEP beside ITCH, same run */
	uf_bench_iex_run(0, o.reps, &iex);
	bad |= iex.bad;
	if (o.json) {
		json_t *root =
		    json_pack("{s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:f}", "bench", "decode",
		              "input", desc, "messages", (json_int_t)in.nmsgs, "packets",
		              (json_int_t)in.npkts, "packet_bytes", (json_int_t)in.pkt_bytes,
		              "reps", (json_int_t)o.reps, "prefetch", (json_int_t)o.pf, "batch",
		              (json_int_t)o.batch, "loadavg", uf_bench_loadavg());
		json_t *ls = json_array();
		for (int l = 0; l < 2; l++) {
			json_t *jr = json_array();
			for (int k = 0; k < NROWS; k++)
				json_array_append_new(
				    jr, json_pack("{s:s, s:I, s:f, s:f}", "pass", rows[l][k].what,
				                  "best_ns", (json_int_t)rows[l][k].best_ns,
				                  "msgs_per_s", mps(&in, rows[l][k].best_ns),
				                  "ns_per_msg", nspm(&in, rows[l][k].best_ns)));
			json_array_append_new(ls, json_pack("{s:s, s:o, s:f, s:f, s:f}", "layout",
			                                    layout[l], "rows", jr,
			                                    "decode_off_vs_baseline",
			                                    (double)rows[l][ROW_OFF].best_ns /
			                                        (double)rows[l][ROW_BASE].best_ns,
			                                    "decode_on_vs_baseline",
			                                    (double)rows[l][ROW_ON].best_ns /
			                                        (double)rows[l][ROW_BASE].best_ns,
			                                    "prefetch_on_vs_off",
			                                    (double)rows[l][ROW_ON].best_ns /
			                                        (double)rows[l][ROW_OFF].best_ns));
		}
		json_object_set_new(root, "layouts", ls);
		if (iex.have)
			json_object_set_new(
			    root, "iex_deep",
			    json_pack("{s:s, s:I, s:I, s:I, s:f}", "input", iex.path, "messages",
			              (json_int_t)iex.messages, "segments",
			              (json_int_t)iex.segments, "decode_best_ns",
			              (json_int_t)iex.decode_ns, "decode_ns_per_msg",
			              (double)iex.decode_ns / (double)iex.messages));
		json_object_set_new(root, "ok", json_boolean(!bad));
		json_dumpf(root, stdout, JSON_COMPACT);
		putchar('\n');
		json_decref(root);
	} else {
		printf("uf-bench decode: %s: %" PRIu64
		       " messages in %zu MoldUDP64 packets (<= 1472 B "
		       "in 2048-B slots), best of %" PRIu64 " passes, batches of %" PRIu64 "\n",
		       desc, in.nmsgs, in.npkts, o.reps, o.batch);
		printf("%-11s %-28s %12s %8s %7s %9s\n", "layout", "pass", "msgs/s", "ns/msg",
		       "GB/s", "x baseline");
		for (int l = 0; l < 2; l++)
			for (int k = 0; k < NROWS; k++)
				printf("%-11s %-28s %12.0f %8.2f %7.2f %9.2f\n", layout[l],
				       rows[l][k].what, mps(&in, rows[l][k].best_ns),
				       nspm(&in, rows[l][k].best_ns),
				       (double)in.pkt_bytes / ((double)rows[l][k].best_ns),
				       (double)rows[l][k].best_ns /
				           (double)rows[l][ROW_BASE].best_ns);
		printf("prefetch %" PRIu64
		       " / off: sequential %.2fx, scattered %.2fx time (below 1: "
		       "prefetch saves)\n",
		       o.pf, (double)rows[0][ROW_ON].best_ns / (double)rows[0][ROW_OFF].best_ns,
		       (double)rows[1][ROW_ON].best_ns / (double)rows[1][ROW_OFF].best_ns);
		uf_bench_iex_print(&iex, stdout);
		uf_bench_print_machine(acc);
	}
	if (bad)
		fprintf(stderr,
		        "uf-bench decode: a decode pass did not see every message cleanly\n");
	if (uf_decode_counters_errors(&in.load))
		fprintf(stderr, "uf-bench decode: %s had framing errors\n", desc);
	rc = bad || uf_decode_counters_errors(&in.load) ? 1 : 0;
	uf_input_free_packets(&in);
	return rc;
}
