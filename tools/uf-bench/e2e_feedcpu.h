/* uf-bench e2e, issue 26: the live feed thread's CPU per message next to the tight loop's
 * cost on the same day. `uf-bench book` (decode + books, prefetch on, from empty books) runs
 * on the replayed day before and after the back ends, on the feed thread's CPU, and each back
 * end's feed CPU step (struct beres cpu: a steady replay at --rate into a daemon with its busy
 * clock on) says what its feed thread spent per message (struct feedcpu): exactly (busy_ns)
 * and as the estimate (thread time less empty polls), so one run prints "feed busy ns/msg at
 * R msg/s: X ns; uf-bench book on the same day: Y ns/msg; X/Y". Book's sink row (the same
 * work as the feed's, ring and image included, in a tight loop) splits X/Y into what the sink
 * adds to the books and what being live adds to the sink. */
#ifndef UF_BENCH_E2E_FEEDCPU_H
#define UF_BENCH_E2E_FEEDCPU_H

#include <jansson.h>

#include "e2e_model.h"

/* One `uf-bench book DAY --json` run. */
struct e2e_bookref {
	int ok;            /* ran and said ok */
	char note[160];    /* why not */
	uint64_t messages; /* messages of the day it decoded */
	double decode_ns;  /* decode alone, ns/msg (best of its passes) */
	double ns_per_msg; /* decode + books, prefetch on: the tight loop, ns/msg */
	double sink_ns;    /* datagram by datagram with the feed's sink (ring + image): the
	                    * feed's own work in a tight loop, ns/msg; 0 when the row is absent */
	double load;       /* 1-minute load average it saw */
};

/* Runs uf-bench book (o->bindir) on `day_path` with the daemon's order table size, pinned to
 * the feed's CPU, its JSON in o->tmp. Fills *ref (ok = 0 and a note when it could not). */
void e2e_bookref_run(const struct e2e_opts *o, const char *day_path, struct e2e_bookref *ref);

/* The report lines: per back end that measured it, the feed CPU step's busy ns per message
 * (exact) and its estimate (spin included and not) against ref[0] (before the back ends) and
 * ref[1] (after), the aim (within 1.5x) for io_uring without SQPOLL on the exact figure, and
 * the steady latency step's estimate (no busy clock). --no-busy-clock: the steady step's
 * estimate alone, with the aim. */
void e2e_feedcpu_print(const struct beres *rs, int n, const struct e2e_opts *o,
                       const struct e2e_bookref ref[2]);

/* The same as a JSON object (the root's "feed_cpu_vs_book"). */
json_t *e2e_feedcpu_json(const struct beres *rs, int n, const struct e2e_opts *o,
                         const struct e2e_bookref ref[2]);

#endif /* UF_BENCH_E2E_FEEDCPU_H */
