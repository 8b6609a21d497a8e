/* uf-bench idle: what a busy-waiting thread finds left of its caches when work comes.
 *
 * Issue 14: the live daemon's books stage cost 3-4x `uf-bench book`'s figure, and `uf-bench
 * book --gap-us` showed the same code slowing after an idle wait. This isolates the machine's
 * part: a pointer chase over a working set of S KiB (one dependent load per cache line, in a
 * random order the hardware prefetchers cannot follow), timed right after a busy wait of G us
 * that touches nothing (`spin`: a pause loop, as the feed's idle poll) or that keeps reading
 * the set (`touch`). On a core of its own the set stays where it was whatever the wait; when
 * the time per load after `spin` grows with the wait while `touch` keeps it flat, something
 * else ran on the core's caches meanwhile (an SMT sibling or the host), which no code of ours
 * can prevent. Only the chase is timed; median and p90 over --reps waits. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "common/uf_time.h"
#include "bench_input.h"
#include "common/uf_compiler.h"

#define IDLE_LINE       64u
#define IDLE_CHASE      256u /* dependent loads timed per sample */
#define IDLE_MAX_LIST   8
#define IDLE_MAX_KIB    (1u << 20) /* 1 GiB */
#define IDLE_MAX_GAP_US 100000u

struct idle_opts {
	uint32_t kib[IDLE_MAX_LIST];
	int nkib;
	uint32_t gap_us[IDLE_MAX_LIST];
	int ngap;
	uint32_t reps;
	int cpu; /* -1: not pinned */
	int json;
};

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: uf-bench idle [--sizes KIB,...] [--gaps US,...] [--reps N] [--cpu C] "
	        "[--json]\n"
	        "  --sizes KIB,...  working sets, KiB (default 16,256,2048,16384)\n"
	        "  --gaps US,...    busy waits before each timed chase, us (default 0,20,400)\n"
	        "  --reps N         timed chases per size and wait (default 1000)\n"
	        "  --cpu C          pin to CPU C (default: not pinned)\n"
	        "Times %u dependent loads over the set after each wait: `spin` waits touching "
	        "nothing,\n`touch` keeps reading the set while it waits.\n",
	        IDLE_CHASE);
}

/* "a,b,c" into v[0..IDLE_MAX_LIST), each in [lo, hi]: the count, or -1 after a message
 * naming `opt` (an empty item, a trailing comma included, is refused like any bad number). */
static int idle_parse_list(const char *opt, const char *s, uint32_t *v, uint64_t lo, uint64_t hi)
{
	int n = 0;
	for (const char *p = s;;) {
		const char *comma = strchr(p, ',');
		size_t len = comma ? (size_t)(comma - p) : strlen(p);
		char item[24];
		uint64_t x;
		if (n == IDLE_MAX_LIST || len >= sizeof(item)) {
			fprintf(stderr, "uf-bench idle: %s takes at most %d numbers, got %s\n", opt,
			        IDLE_MAX_LIST, s);
			return -1;
		}
		memcpy(item, p, len);
		item[len] = '\0';
		if (uf_bench_parse_u64("idle", opt, item, lo, hi, &x))
			return -1;
		v[n++] = (uint32_t)x;
		if (!comma)
			return n;
		p = comma + 1;
	}
}

static int idle_parse(int argc, char **argv, struct idle_opts *o)
{
	static const uint32_t kib[] = {16, 256, 2048, 16384}, gap[] = {0, 20, 400};
	static const struct option lo[] = {{"sizes", required_argument, 0, 's'},
	                                   {"gaps", required_argument, 0, 'g'},
	                                   {"reps", required_argument, 0, 'r'},
	                                   {"cpu", required_argument, 0, 'c'},
	                                   {"json", no_argument, 0, 'j'},
	                                   {"help", no_argument, 0, 'h'},
	                                   {0, 0, 0, 0}};
	uint64_t v;
	int opt;
	memset(o, 0, sizeof(*o));
	memcpy(o->kib, kib, sizeof(kib));
	o->nkib = 4;
	memcpy(o->gap_us, gap, sizeof(gap));
	o->ngap = 3;
	o->reps = 1000;
	o->cpu = -1;
	optind = 1;
	while ((opt = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (opt) {
		case 's':
			if ((o->nkib =
			         idle_parse_list("--sizes", optarg, o->kib, 1, IDLE_MAX_KIB)) < 0)
				return 2;
			break;
		case 'g':
			if ((o->ngap = idle_parse_list("--gaps", optarg, o->gap_us, 0,
			                               IDLE_MAX_GAP_US)) < 0)
				return 2;
			break;
		case 'r':
			if (uf_bench_parse_u64("idle", "--reps", optarg, 1, 1000000, &v))
				return 2;
			o->reps = (uint32_t)v;
			break;
		case 'c':
			if (uf_bench_parse_u64("idle", "--cpu", optarg, 0, CPU_SETSIZE - 1, &v))
				return 2;
			o->cpu = (int)v;
			break;
		case 'j':
			o->json = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "uf-bench idle: unexpected argument %s\n", argv[optind]);
		usage(stderr);
		return 2;
	}
	return -1;
}

/* A random cyclic order over the set's lines: line i holds the offset of the next. */
static void idle_build_chase(uint8_t *buf, size_t lines)
{
	size_t *perm = malloc(lines * sizeof(*perm));
	uint64_t x = 0x9E3779B97F4A7C15ull;
	for (size_t i = 0; i < lines; i++)
		perm[i] = i;
	for (size_t i = lines - 1; i > 0; i--) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		size_t j = (size_t)(x % (i + 1)), t = perm[i];
		perm[i] = perm[j];
		perm[j] = t;
	}
	for (size_t i = 0; i < lines; i++) {
		size_t next = perm[(i + 1) % lines] * IDLE_LINE;
		memcpy(buf + perm[i] * IDLE_LINE, &next, sizeof(next));
	}
	free(perm);
}

/* What the touch loops and the chase read, stored so the compiler keeps them. */
static volatile uint64_t idle_sink;

static int idle_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* One row: median and p90 ns per dependent load after each wait. */
static void idle_row(uint8_t *buf, size_t lines, uint32_t gap_us, int touch, uint32_t reps,
                     double *samples, double *med, double *p90)
{
	size_t pos = 0;
	for (uint32_t r = 0; r < reps; r++) {
		uint64_t t0 = uf_now_mono_ns(), until = t0 + (uint64_t)gap_us * 1000u;
		while (gap_us && uf_now_mono_ns() < until) {
			if (touch) {
				uint64_t s = 0;
				for (size_t i = 0; i < lines; i++)
					s += buf[i * IDLE_LINE];
				idle_sink += s;
			} else {
				uf_cpu_relax();
			}
		}
		uint64_t a = uf_now_mono_ns();
		for (unsigned k = 0; k < IDLE_CHASE; k++)
			memcpy(&pos, buf + pos, sizeof(pos));
		samples[r] = (double)(uf_now_mono_ns() - a) / IDLE_CHASE;
	}
	idle_sink += pos; /* the chase's result is used: not optimised away */
	qsort(samples, reps, sizeof(*samples), idle_cmp);
	*med = samples[reps / 2];
	*p90 = samples[(size_t)reps * 9 / 10];
}

int uf_bench_idle(int argc, char **argv)
{
	struct idle_opts o;
	int rc = idle_parse(argc, argv, &o);
	if (rc >= 0)
		return rc;
	if (o.cpu >= 0 && (rc = uf_bench_pin(o.cpu)) < 0) {
		fprintf(stderr, "uf-bench idle: cannot pin to CPU %d: %s\n", o.cpu, strerror(-rc));
		return 2;
	}
	double *samples = malloc(o.reps * sizeof(double));
	json_t *rows = json_array();
	if (!samples || !rows) {
		fprintf(stderr, "uf-bench idle: out of memory\n");
		free(samples);
		json_decref(rows);
		return 1;
	}
	if (!o.json)
		printf(
		    "ns per dependent load (%u per sample, median / p90 of %u) after a busy wait "
		    "that touches nothing (spin) or keeps reading the set (touch)\n"
		    "%10s %8s %20s %20s\n",
		    IDLE_CHASE, o.reps, "set_KiB", "wait_us", "spin med/p90", "touch med/p90");
	for (int s = 0; s < o.nkib; s++) {
		size_t bytes = (size_t)o.kib[s] * 1024u, lines = bytes / IDLE_LINE;
		uint8_t *buf = aligned_alloc(4096, (bytes + 4095) & ~(size_t)4095);
		if (!buf) {
			fprintf(stderr, "uf-bench idle: cannot allocate %zu bytes\n", bytes);
			free(samples);
			json_decref(rows);
			return 1;
		}
		idle_build_chase(buf, lines);
		for (int g = 0; g < o.ngap; g++) {
			double m[2] = {0, 0}, p[2] = {0, 0};
			int modes = o.gap_us[g] ? 2 : 1; /* no wait: nothing to touch during it */
			for (int t = 0; t < modes; t++)
				idle_row(buf, lines, o.gap_us[g], t, o.reps, samples, &m[t], &p[t]);
			if (!o.json) {
				char tb[32] = "-";
				if (modes == 2)
					snprintf(tb, sizeof(tb), "%.2f / %.2f", m[1], p[1]);
				printf("%10u %8u %9.2f / %-8.2f %20s\n", o.kib[s], o.gap_us[g],
				       m[0], p[0], tb);
			}
			for (int t = 0; t < modes; t++)
				json_array_append_new(
				    rows,
				    json_pack("{s:I, s:I, s:s, s:f, s:f}", "set_kib",
				              (json_int_t)o.kib[s], "wait_us",
				              (json_int_t)o.gap_us[g], "mode", t ? "touch" : "spin",
				              "median_ns_per_load", m[t], "p90_ns_per_load", p[t]));
		}
		free(buf);
	}
	free(samples);
	if (o.json) {
		json_t *j = json_pack("{s:s, s:i, s:I, s:I, s:o}", "bench", "idle", "cpu", o.cpu,
		                      "reps", (json_int_t)o.reps, "loads_per_sample",
		                      (json_int_t)IDLE_CHASE, "rows", rows);
		char *txt = json_dumps(j, JSON_INDENT(2));
		if (txt)
			puts(txt);
		free(txt);
		json_decref(j);
	} else {
		json_decref(rows);
	}
	return 0;
}
