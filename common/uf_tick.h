/* A cheap clock for timing short stretches of the hot path (per-stage histograms).
 *
 * On x86 with an invariant TSC that the kernel itself trusts (clocksource "tsc"), a tick is
 * one RDTSC (~10 ns here, against ~23 ns for a vDSO clock_gettime), converted to ns by a
 * factor calibrated once against CLOCK_MONOTONIC_RAW. RDTSC is not serialising: a reading may
 * move a few ns with out-of-order execution, which is well below what stage histograms
 * resolve. Anywhere else a tick is simply CLOCK_REALTIME in ns (factor 1).
 *
 * Wall time from ticks: uf_tick_anchor() pairs one CLOCK_REALTIME reading with one tick;
 * uf_tick_realtime() extrapolates from that pair, valid for a short while (the caller
 * re-anchors every batch, so NTP slewing, <= 500 ppm, costs < 1 ns per us since the anchor). */
#ifndef UF_TICK_H
#define UF_TICK_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/uf_time.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <x86intrin.h>
#endif

struct uf_tick_clock {
	int tsc;               /* 1: ticks are TSC cycles; 0: CLOCK_REALTIME ns */
	uint64_t mult;         /* ns per tick, fixed point << 32 */
	uint64_t anchor_ticks; /* tick of the last anchor */
	uint64_t anchor_rt;    /* CLOCK_REALTIME ns of the last anchor */
};

static inline uint64_t uf_tick_now(const struct uf_tick_clock *c)
{
#if defined(__x86_64__)
	if (c->tsc)
		return __rdtsc();
#endif
	(void)c;
	return uf_now_realtime_ns();
}

/* Ticks -> ns (a difference of two uf_tick_now readings). */
static inline uint64_t uf_tick_ns(const struct uf_tick_clock *c, uint64_t dticks)
{
	return (uint64_t)(((unsigned __int128)dticks * c->mult) >> 32);
}

/* Pairs a CLOCK_REALTIME reading with a tick (one of each; one read without a TSC). */
static inline void uf_tick_anchor(struct uf_tick_clock *c)
{
	c->anchor_rt = uf_now_realtime_ns();
	c->anchor_ticks = c->tsc ? uf_tick_now(c) : c->anchor_rt;
}

/* CLOCK_REALTIME ns at tick `t` (t at or after the anchor). */
static inline uint64_t uf_tick_realtime(const struct uf_tick_clock *c, uint64_t t)
{
	return c->anchor_rt + uf_tick_ns(c, t - c->anchor_ticks);
}

/* Chooses the TSC when it is invariant and the kernel's clocksource, and calibrates it over
 * ~`window_ns` (sleeps: cold path, once per feed run). Without it ticks are ns. */
static inline void uf_tick_init(struct uf_tick_clock *c, uint64_t window_ns)
{
	memset(c, 0, sizeof(*c));
	c->mult = 1ull << 32;
#if defined(__x86_64__)
	unsigned a, b, cx, d;
	char src[32] = "";
	FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "re");
	if (f) {
		if (!fgets(src, sizeof(src), f))
			src[0] = '\0';
		fclose(f);
	}
	if (!__get_cpuid(0x80000007, &a, &b, &cx, &d) || !(d & (1u << 8)) ||
	    strncmp(src, "tsc", 3) != 0)
		return;
	struct timespec t0, t1, w = {.tv_sec = 0, .tv_nsec = (long)window_ns};
	clock_gettime(CLOCK_MONOTONIC_RAW, &t0);
	uint64_t k0 = __rdtsc();
	nanosleep(&w, NULL);
	clock_gettime(CLOCK_MONOTONIC_RAW, &t1);
	uint64_t k1 = __rdtsc();
	uint64_t ns = (uint64_t)(t1.tv_sec - t0.tv_sec) * 1000000000ull + (uint64_t)t1.tv_nsec -
	              (uint64_t)t0.tv_nsec;
	if (k1 <= k0 || ns == 0)
		return;
	c->mult = (uint64_t)(((unsigned __int128)ns << 32) / (k1 - k0));
	c->tsc = 1;
#else
	(void)window_ns;
#endif
}

#endif /* UF_TICK_H */
