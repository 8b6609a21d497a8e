/* The arbiter's bounded queue of out-of-order packets and its table of missing ranges
 * (arbiter.h; arb_internal.h lists the arbiter's files). */
#include "feed/arbiter.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/socket.h>

#include "common/uf_compiler.h"
#include "common/uf_time.h"
#include "feed/arb_internal.h"

/* ---- the queue: binary min-heap on slots[].seq ---- */

void uf_arb_heap_push(struct uf_arb *a, uint32_t slot)
{
	uint32_t i = a->nheap++;
	a->heap[i] = slot;
	while (i > 0) {
		uint32_t parent = (i - 1) / 2;
		if (uf_arb_key(a, parent) <= uf_arb_key(a, i))
			break;
		uint32_t t = a->heap[parent];
		a->heap[parent] = a->heap[i];
		a->heap[i] = t;
		i = parent;
	}
}

uint32_t uf_arb_heap_pop(struct uf_arb *a)
{
	uint32_t top = a->heap[0];
	a->heap[0] = a->heap[--a->nheap];
	uint32_t i = 0;
	for (;;) {
		uint32_t l = 2 * i + 1, r = l + 1, m = i;
		if (l < a->nheap && uf_arb_key(a, l) < uf_arb_key(a, m))
			m = l;
		if (r < a->nheap && uf_arb_key(a, r) < uf_arb_key(a, m))
			m = r;
		if (m == i)
			break;
		uint32_t t = a->heap[m];
		a->heap[m] = a->heap[i];
		a->heap[i] = t;
		i = m;
	}
	return top;
}

void uf_arb_queue_clear(struct uf_arb *a)
{
	while (a->nheap)
		a->freel[a->nfree++] = uf_arb_heap_pop(a);
}

/* ---- the hole table: sorted, disjoint missing ranges in holes[h0 .. h0 + nholes) ---- */

/* Index of the first hole that ends after `seq` (nholes when none). */
static uint32_t uf_arb_hole_find(const struct uf_arb *a, uint64_t seq)
{
	uint32_t lo = 0, hi = a->nholes;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (a->holes[a->h0 + mid].end <= seq)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* 1 when some hole intersects [first, end). */
int uf_arb_holes_hit(const struct uf_arb *a, uint64_t first, uint64_t end)
{
	uint32_t i = uf_arb_hole_find(a, first);
	return i < a->nholes && a->holes[a->h0 + i].first < end;
}

/* Makes room for one more entry at the end of the table (moves it to the front). */
void uf_arb_hole_room(struct uf_arb *a)
{
	if (a->h0 + a->nholes < a->hole_cap || a->h0 == 0)
		return;
	memmove(a->holes, a->holes + a->h0, (size_t)a->nholes * sizeof(*a->holes));
	a->h0 = 0;
}

void uf_arb_hole_remove(struct uf_arb *a, uint32_t i)
{
	if (i == 0) {
		a->h0++;
	} else if (i + 1 < a->nholes) {
		struct uf_arb_hole *h = uf_arb_hole_at(a, i);
		memmove(h, h + 1, (size_t)(a->nholes - i - 1) * sizeof(*h));
	}
	if (--a->nholes == 0)
		a->h0 = 0;
}

/* Answers filled part of hole `h`: the server is answering it, so it is not given up while
 * they come. Its deadline moves to a full cycle of tries ((retries + 1) x timeout) from now,
 * never past UF_ARB_HARD_CAP from its opening (a server trickling answers cannot hold the
 * stream for ever); its tries start over. */
static void uf_arb_hole_progress(struct uf_arb *a, struct uf_arb_hole *h)
{
	uint64_t cap = h->opened_ns + UF_ARB_HARD_CAP(uf_arb_life(a));
	uint64_t d = a->now() + a->deadline_ns;
	if (d > cap)
		d = cap;
	if (d > h->deadline_ns) {
		h->deadline_ns = d;
		uf_stat_add(&a->st->holes_extended, 1);
	}
	h->tries = 0;
}

/* Removes [first, end) from the holes: it was received (from source `src`). A hole filled
 * completely before any request was filled by a line (or reordering). */
void uf_arb_holes_fill(struct uf_arb *a, uint64_t first, uint64_t end, unsigned src)
{
	uint32_t i = uf_arb_hole_find(a, first);
	while (i < a->nholes) {
		struct uf_arb_hole *h = uf_arb_hole_at(a, i);
		if (h->first >= end)
			return;
		if (first <= h->first && end >= h->end) { /* all of it */
			if (!h->asked && src != UF_ARB_SRC_RECOVERY)
				uf_stat_add(&a->st->gaps_filled_by_line, 1); /* never requested */
			uf_arb_hole_remove(a, i);
			continue;
		}
		/* Part of it. From the server: progress. A lagging line's copy proves nothing
		 * about the rest: the deadline stays. */
		if (src == UF_ARB_SRC_RECOVERY)
			uf_arb_hole_progress(a, h);
		if (first <= h->first) { /* its start: fresh retries */
			h->first = end;
			h->tries = 0;
			return;
		}
		if (end >= h->end) { /* its tail */
			h->end = first;
			i++;
			continue;
		}
		/* its middle: split in two, both keep the opening time (and deadline) */
		if (a->nholes >= a->hole_cap) {
			h->end = first; /* no room (cannot happen: holes <= queued + 1) */
			return;
		}
		uf_arb_hole_room(a);
		h = uf_arb_hole_at(a, i);
		memmove(h + 1, h, (size_t)(a->nholes - i) * sizeof(*h));
		a->nholes++;
		h->end = first;
		(h + 1)->first = end;
		(h + 1)->tries = 0;
		return;
	}
}
