/* uf-bench e2e: the bounded search for the highest rate with no loss, as pure decisions. The
 * orchestration runs each step it asks for (st[n] at `rate`) and hands it back; the search
 * says what to offer next and when it is over. Doubling from the first rate until a step
 * loses (or uf-replay cannot go faster, or the cap), then bisecting between the best
 * loss-free rate and the lowest lossy one; `steps` replays at most. */
#ifndef UF_BENCH_E2E_SEARCH_H
#define UF_BENCH_E2E_SEARCH_H

#include "e2e_model.h"

/* Starts a search at `first` msg/s, never above `cap`, with at most `steps` (and MAX_SEARCH)
 * steps. Forgets any earlier search in `sr`. */
void e2e_search_start(struct search *sr, double first, double cap, int steps);

/* Takes sr->st[sr->n], the step just run at sr->rate, into account: counts it, updates
 * max_rate / max_idx / first_loss_rate / sender_limited, sets the next sr->rate, and sets
 * sr->done when the search is over. */
void e2e_search_record(struct search *sr);

#endif /* UF_BENCH_E2E_SEARCH_H */
