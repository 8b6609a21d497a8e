/* The feed's latency histogram as a Prometheus histogram in seconds.
 *
 * The feed records nanoseconds in a log-linear histogram (feed/uf_feed_stats.h: 8 buckets
 * per power of two). Prometheus wants cumulative buckets with `le` upper bounds that stay
 * the same for the life of the series. Choosing those bounds at powers of two of
 * nanoseconds makes each one fall exactly on a boundary of the feed's buckets, so the
 * cumulative counts are exact (no interpolation between buckets), and 21 bounds from
 * 2^10 ns (1.024 us) to 2^30 ns (1.07 s) keep the series count small.
 *
 * One edge case of integer nanoseconds: a sample of exactly 2^k ns lies in the feed bucket
 * that starts at 2^k, so it is counted under the next bound, not under le = 2^k ns. */
#ifndef UF_PROM_HIST_H
#define UF_PROM_HIST_H

#include <stddef.h>
#include <stdint.h>

#include "feed/uf_feed_stats.h"

#define UF_PROM_HIST_MIN_EXP 10 /* first bound: 2^10 ns = 1.024 us */
#define UF_PROM_HIST_MAX_EXP 30 /* last finite bound: 2^30 ns = 1.074 s */
#define UF_PROM_HIST_NLE     (UF_PROM_HIST_MAX_EXP - UF_PROM_HIST_MIN_EXP + 1)

struct uf_prom_hist {
	uint64_t le_ns[UF_PROM_HIST_NLE]; /* finite upper bounds, ns (rendered in seconds) */
	uint64_t cum[UF_PROM_HIST_NLE];   /* samples counted under each bound (cumulative) */
	uint64_t count;                   /* every sample: the +Inf bucket and _count */
	uint64_t sum_ns;                  /* sum of samples, ns (rendered in seconds) */
};

/* Converts a COPY of a feed histogram. `count` is the sum of the copied buckets, not
 * h->count: the feed thread may have moved between the two reads, and Prometheus requires
 * +Inf == _count and non-decreasing buckets, which this guarantees. Samples with a negative
 * latency (clock steps) are in no bucket and stay out. */
void uf_prom_hist_from_lat(const struct uf_lat_hist *h, struct uf_prom_hist *out);

/* Appends the series of one histogram: NAME_bucket{LABELS,le="..."} for each bound and
 * "+Inf", NAME_sum{LABELS} (seconds) and NAME_count{LABELS}. `labels` is the inside of the
 * braces, already escaped (e.g. feed="nasdaq"), or "" for none. No HELP/TYPE lines: the
 * caller writes the family header once for all its series. Returns the length written
 * (NUL-terminated) or -ENOSPC when `len` is too small. Pure: no allocation. */
int uf_prom_hist_render(const struct uf_prom_hist *ph, const char *name, const char *labels,
                        char *buf, size_t len);

#endif /* UF_PROM_HIST_H */
