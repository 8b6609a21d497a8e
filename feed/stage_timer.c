/* Stage timing: the summed stages' samples (feed/stage_timer.h). */
#include "feed/stage_timer.h"

void uf_stage_flush_range(struct uf_stage_timer *t, unsigned lo, unsigned hi)
{
	for (unsigned st = lo; st <= hi; st++) {
		if (!(t->acc_seen & (1u << st)))
			continue;
		if (t->acc_neg & (1u << st))
			uf_stat_add(&t->stages[st].negative, 1);
		else
			uf_lat_record(&t->stages[st], (int64_t)uf_tick_ns(&t->clock, t->acc[st]));
		t->acc[st] = 0;
		t->acc_seen &= ~(1u << st);
		t->acc_neg &= ~(1u << st);
	}
}
