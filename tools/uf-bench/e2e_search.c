/* uf-bench e2e: the rate search's decisions (see e2e_search.h). */
#include "e2e_search.h"

#include <string.h>

void e2e_search_start(struct search *sr, double first, double cap, int steps)
{
	memset(sr, 0, sizeof(*sr));
	sr->max_idx = -1;
	sr->rate = first;
	sr->cap = cap;
	sr->steps = steps < MAX_SEARCH ? steps : MAX_SEARCH;
	sr->done = sr->steps <= 0;
}

void e2e_search_record(struct search *sr)
{
	const struct step *s = &sr->st[sr->n++];
	double rate = sr->rate, lo = sr->max_rate, hi = sr->first_loss_rate;

	if (!s->loss) {
		if (s->achieved > lo) {
			lo = sr->max_rate = s->achieved;
			sr->max_idx = sr->n - 1;
		}
		if (s->achieved < 0.9 * rate) { /* the sender is the limit */
			sr->sender_limited = 1;
			sr->done = 1;
			return;
		}
		if (hi == 0 && rate >= sr->cap) {
			sr->done = 1;
			return;
		}
		rate = hi == 0 ? rate * 2 : (rate + hi) / 2;
		if (rate > sr->cap)
			rate = sr->cap;
	} else {
		if (hi == 0 || rate < hi)
			hi = sr->first_loss_rate = rate;
		rate = lo > 0 ? (lo + hi) / 2 : hi / 4;
	}
	sr->rate = rate;
	if ((hi > 0 && lo > 0 && hi - lo < 0.05 * hi) || rate < 1000 || sr->n >= sr->steps)
		sr->done = 1;
}
