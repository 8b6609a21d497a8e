/* Stage timing of the feed thread's per-packet path (enum uf_stage, feed/uf_feed_stats.h):
 * one packet in `sample_every` is timed, stage by stage, on the tick clock (common/uf_tick.h).
 *
 * A timed packet is published in several steps (the pipeline's publish step splits it), so
 * the books, ring and image stages are summed over its steps (uf_stage_acc) and recorded once
 * (uf_stage_flush_range); receive, arbitration and decode are single samples (uf_stage_sample).
 * A tick going backwards (a TSC read on another CPU after a migration) is a clock artefact,
 * not a duration: counted as negative, kept out of the buckets.
 *
 * Feed thread only; no system call but the clock reads of a timed packet. */
#ifndef UF_STAGE_TIMER_H
#define UF_STAGE_TIMER_H

#include <stdint.h>

#include "common/uf_compiler.h"
#include "common/uf_tick.h"
#include "feed/uf_feed_stats.h"

struct uf_stage_timer {
	struct uf_lat_hist *stages;   /* the feed's per-stage histograms (stats.stages) */
	struct uf_tick_clock clock;   /* the tick clock (TSC when usable), anchored per sample */
	int timing;                   /* stage timing on (not cfg.no_stage_timing) */
	int timed;                    /* the packet in flight is a timed sample */
	uint32_t sample_every;        /* time one packet in this many */
	uint32_t sample_left;         /* packets until the next timed one */
	uint64_t t_mark;              /* tick at the end of the last stage of the packet in
	                               * flight, 0 = none */
	int arb_pending;              /* the packet in flight has not reached delivery yet */
	uint64_t acc[UF_STAGE_COUNT]; /* ticks per summed stage of the packet in flight */
	unsigned acc_seen;            /* the stages that got time */
	unsigned acc_neg;             /* those that saw a tick go backwards */
	uint64_t t_seg;               /* tick the current books segment started */
};

/* One stage sample between two ticks (a timed packet). */
static inline void uf_stage_sample(struct uf_stage_timer *t, enum uf_stage st, uint64_t from,
                                   uint64_t to)
{
	if (UF_UNLIKELY(to < from)) {
		uf_stat_add(&t->stages[st].negative, 1);
		return;
	}
	uf_lat_record(&t->stages[st], (int64_t)uf_tick_ns(&t->clock, to - from));
}

/* Adds the ticks from..to to stage st's sum for the packet in flight. */
static inline void uf_stage_acc(struct uf_stage_timer *t, enum uf_stage st, uint64_t from,
                                uint64_t to)
{
	t->acc_seen |= 1u << st;
	if (UF_UNLIKELY(to < from))
		t->acc_neg |= 1u << st;
	else
		t->acc[st] += to - from;
}

/* One sample per summed stage in [lo, hi] seen since the last call for them. */
void uf_stage_flush_range(struct uf_stage_timer *t, unsigned lo, unsigned hi);

/* Wall time of tick `tk` from the sample's anchor. An anchor older than a millisecond (idle
 * loops with a gap open, a filter change) is renewed first: one CLOCK_REALTIME read. */
static inline uint64_t uf_stage_realtime(struct uf_stage_timer *t, uint64_t tk)
{
	if (UF_UNLIKELY(uf_tick_ns(&t->clock, tk - t->clock.anchor_ticks) > 1000000)) {
		uf_tick_anchor(&t->clock);
		return t->clock.anchor_rt;
	}
	return uf_tick_realtime(&t->clock, tk);
}

#endif /* UF_STAGE_TIMER_H */
