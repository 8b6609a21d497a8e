/* Feed latency histogram to Prometheus buckets: see prom_hist.h. */
#include "daemon/prom_hist.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

void uf_prom_hist_from_lat(const struct uf_lat_hist *h, struct uf_prom_hist *out)
{
	uint64_t run = 0;
	unsigned i = 0;

	for (unsigned k = 0; k < UF_PROM_HIST_NLE; k++) {
		uint64_t le = 1ull << (UF_PROM_HIST_MIN_EXP + k);
		/* Every feed bucket whose (exclusive) upper edge is <= le holds only samples < le.
		 */
		while (i < UF_LAT_NBUCKETS && uf_lat_bucket_low(i + 1) <= le)
			run += h->buckets[i++];
		out->le_ns[k] = le;
		out->cum[k] = run;
	}
	while (i < UF_LAT_NBUCKETS)
		run += h->buckets[i++];
	out->count = run;
	out->sum_ns = h->sum_ns;
}

struct out {
	char *p;
	size_t len, off;
	int full;
};

static void put(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct out *o, const char *fmt, ...)
{
	va_list ap;

	if (o->full)
		return;
	va_start(ap, fmt);
	int n = vsnprintf(o->p + o->off, o->len - o->off, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= o->len - o->off) {
		o->full = 1;
		return;
	}
	o->off += (size_t)n;
}

int uf_prom_hist_render(const struct uf_prom_hist *ph, const char *name, const char *labels,
                        char *buf, size_t len)
{
	struct out o = {buf, len, 0, len == 0};
	const char *sep = labels[0] ? "," : "";

	for (unsigned k = 0; k < UF_PROM_HIST_NLE; k++)
		/* %.10g of a power of two of ns in seconds is exact and short: 1.024e-06. */
		put(&o, "%s_bucket{%s%sle=\"%.10g\"} %llu\n", name, labels, sep,
		    (double)ph->le_ns[k] / 1e9, (unsigned long long)ph->cum[k]);
	put(&o, "%s_bucket{%s%sle=\"+Inf\"} %llu\n", name, labels, sep,
	    (unsigned long long)ph->count);
	put(&o, labels[0] ? "%s_sum{%s} %.9f\n" : "%s_sum%s %.9f\n", name, labels,
	    (double)ph->sum_ns / 1e9);
	put(&o, labels[0] ? "%s_count{%s} %llu\n" : "%s_count%s %llu\n", name, labels,
	    (unsigned long long)ph->count);
	if (o.full)
		return -ENOSPC;
	return (int)o.off;
}
