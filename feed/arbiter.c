/* A/B arbitration, gap detection and recovery. See arbiter.h for the contract. */
#include "feed/arbiter.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/socket.h>

#include "common/uf_compiler.h"
#include "common/uf_time.h"

int uf_arb_init(struct uf_arb *a, const struct uf_feed_config *cfg,
                const struct uf_framing *framing, int fd, uint32_t slot_size,
                struct uf_feed_stats *st, const struct uf_arb_cb *cb)
{
	memset(a, 0, sizeof(*a));
	if (!framing || !framing->open)
		return -EINVAL;
	a->framing = framing;
	a->cb = *cb;
	a->st = st;
	a->nlines = cfg->nlines;
	a->fd = fd;
	a->recovery = cfg->recovery.enabled && fd >= 0;
	a->server = cfg->recovery.server;
	a->max_count = cfg->recovery.max_count ? cfg->recovery.max_count : 1000;
	if (a->max_count > 0xFFFE)
		a->max_count = 0xFFFE; /* 0xFFFF means end of session on the wire */
	a->timeout_ns =
	    (uint64_t)(cfg->recovery.timeout_ms ? cfg->recovery.timeout_ms : 50) * 1000000u;
	a->retries = cfg->recovery.retries;
	a->wait_ns = (uint64_t)cfg->recovery.wait_ms * 1000000u;
	a->wait_packets = cfg->recovery.wait_packets ? cfg->recovery.wait_packets : 64;
	uint32_t rate = cfg->recovery.max_requests_per_s ? cfg->recovery.max_requests_per_s : 1000;
	a->min_interval_ns = 1000000000ull / rate;
	a->max_in_flight =
	    cfg->recovery.max_in_flight ? cfg->recovery.max_in_flight : UF_ARB_IN_FLIGHT;
	if (a->max_in_flight > UF_ARB_MAX_IN_FLIGHT)
		a->max_in_flight = UF_ARB_MAX_IN_FLIGHT;
	if (!a->framing->request_build)
		a->recovery = 0; /* the venue has no re-request service */
	if (a->max_count > a->framing->max_count)
		a->max_count = a->framing->max_count; /* what one request of the venue can ask */
	/* A hole's life once requested: 1 + retries tries. */
	a->deadline_ns = (uint64_t)(a->retries + 1) * a->timeout_ns;
	a->now = uf_now_mono_ns;
	a->cap = cfg->recovery.queue_packets ? cfg->recovery.queue_packets : 65536;
	a->slot_size = slot_size;
	a->heap = calloc(a->cap, sizeof(*a->heap));
	a->freel = calloc(a->cap, sizeof(*a->freel));
	a->slots = calloc(a->cap, sizeof(*a->slots));
	/* Each hole but the last is followed by a queued packet: queue + 1 holes at most. */
	a->hole_cap = a->cap + 2;
	a->holes = calloc(a->hole_cap, sizeof(*a->holes));
	a->mem_len = (size_t)a->cap * slot_size;
	/* Reserved, not touched: pages fault in only when a gap actually queues packets. */
	void *m = mmap(NULL, a->mem_len, PROT_READ | PROT_WRITE,
	               MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (!a->heap || !a->freel || !a->slots || !a->holes || m == MAP_FAILED) {
		if (m != MAP_FAILED)
			munmap(m, a->mem_len);
		uf_arb_fini(a);
		return -ENOMEM;
	}
	a->mem = m;
	/* Quarantine copies: also reserved only; a line fills them only while a jump waits. */
	a->qmem_len = (size_t)UF_CFG_MAX_LINES * UF_ARB_CONFIRM_MAX * slot_size;
	m = mmap(NULL, a->qmem_len, PROT_READ | PROT_WRITE,
	         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (m == MAP_FAILED) {
		uf_arb_fini(a);
		return -ENOMEM;
	}
	a->qmem = m;
	for (int l = 0; l < UF_CFG_MAX_LINES; l++)
		for (int k = 0; k < UF_ARB_CONFIRM_MAX; k++)
			a->q[l].data[k] =
			    a->qmem + ((size_t)l * UF_ARB_CONFIRM_MAX + (size_t)k) * slot_size;
	uf_arb_params_default(&a->p);
	for (uint32_t i = 0; i < a->cap; i++) {
		a->slots[i].data = a->mem + (size_t)i * slot_size;
		a->freel[i] = a->cap - 1 - i;
	}
	a->nfree = a->cap;
	return 0;
}

void uf_arb_fini(struct uf_arb *a)
{
	free(a->heap);
	free(a->freel);
	free(a->slots);
	free(a->holes);
	a->holes = NULL;
	if (a->mem)
		munmap(a->mem, a->mem_len);
	if (a->qmem)
		munmap(a->qmem, a->qmem_len);
	a->heap = a->freel = NULL;
	a->slots = NULL;
	a->mem = a->qmem = NULL;
}

void uf_arb_params_default(struct uf_arb_params *p)
{
	p->max_jump = UF_ARB_MAX_JUMP;
	p->jump_confirm = UF_ARB_JUMP_CONFIRM;
	p->session_confirm = UF_ARB_SESSION_CONFIRM;
	p->line_silent_ns = UF_ARB_LINE_SILENT_NS;
}

int uf_arb_set_params(struct uf_arb *a, const struct uf_arb_params *p)
{
	if (p->max_jump < 1 || p->jump_confirm < 1 || p->jump_confirm > UF_ARB_CONFIRM_MAX ||
	    p->session_confirm < 1 || p->line_silent_ns == 0)
		return -EINVAL;
	a->p = *p;
	return 0;
}

int uf_arb_set_line_source(struct uf_arb *a, unsigned line, struct in_addr source)
{
	if (line >= (unsigned)a->nlines)
		return -EINVAL;
	a->line_source[line] = source.s_addr;
	return 0;
}

/* ---- the queue: binary min-heap on slots[].seq ---- */

static inline uint64_t uf_arb_key(const struct uf_arb *a, uint32_t i)
{
	return a->slots[a->heap[i]].seq;
}

static void uf_arb_heap_push(struct uf_arb *a, uint32_t slot)
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

static uint32_t uf_arb_heap_pop(struct uf_arb *a)
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

static void uf_arb_queue_clear(struct uf_arb *a)
{
	while (a->nheap)
		a->freel[a->nfree++] = uf_arb_heap_pop(a);
}

/* ---- the hole table: sorted, disjoint missing ranges in holes[h0 .. h0 + nholes) ---- */

static inline struct uf_arb_hole *uf_arb_hole_at(struct uf_arb *a, uint32_t i)
{
	return &a->holes[a->h0 + i];
}

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
static int uf_arb_holes_hit(const struct uf_arb *a, uint64_t first, uint64_t end)
{
	uint32_t i = uf_arb_hole_find(a, first);
	return i < a->nholes && a->holes[a->h0 + i].first < end;
}

/* Makes room for one more entry at the end of the table (moves it to the front). */
static void uf_arb_hole_room(struct uf_arb *a)
{
	if (a->h0 + a->nholes < a->hole_cap || a->h0 == 0)
		return;
	memmove(a->holes, a->holes + a->h0, (size_t)a->nholes * sizeof(*a->holes));
	a->h0 = 0;
}

static void uf_arb_hole_remove(struct uf_arb *a, uint32_t i)
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

/* Removes [first, end) from the holes: it was received (from source `src`). A hole filled
 * completely before any request was filled by a line (or reordering). */
static void uf_arb_holes_fill(struct uf_arb *a, uint64_t first, uint64_t end, unsigned src)
{
	uint32_t i = uf_arb_hole_find(a, first);
	while (i < a->nholes) {
		struct uf_arb_hole *h = uf_arb_hole_at(a, i);
		if (h->first >= end)
			return;
		if (first <= h->first && end >= h->end) { /* all of it */
			if (!h->tries && !h->deadline_ns && src != UF_ARB_SRC_RECOVERY)
				uf_stat_add(&a->st->gaps_filled_by_line, 1); /* never requested */
			uf_arb_hole_remove(a, i);
			continue;
		}
		if (first <= h->first) { /* its start: progress, fresh retries */
			h->first = end;
			h->tries = 0;
			/* The server answers (a large hole, chunk by chunk): a fresh deadline. A
			 * lagging line's copy proves nothing about the rest: the deadline stays. */
			if (src == UF_ARB_SRC_RECOVERY)
				h->deadline_ns = 0;
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

/* ---- delivery ---- */

static void uf_arb_deliver(struct uf_arb *a, const struct uf_frame *pkt, uint64_t rx_ns,
                           unsigned src)
{
	uint64_t end = pkt->seq + pkt->count;
	uint32_t skip = (uint32_t)(a->expected - pkt->seq);
	uint64_t n = end - a->expected;
	a->expected = end;
	if (src == UF_ARB_SRC_RECOVERY)
		uf_stat_add(&a->st->recovered_messages, n);
	else
		uf_stat_add(&a->st->lines[src].wins, 1);
	a->cb.deliver(a->cb.ctx, pkt, skip, rx_ns, src);
}

/* Delivers queued packets that now continue the stream; drops queued duplicates. */
static void uf_arb_drain(struct uf_arb *a)
{
	while (a->nheap && uf_arb_key(a, 0) <= a->expected) {
		uint32_t s = uf_arb_heap_pop(a);
		struct uf_arb_slot *sl = &a->slots[s];
		if (sl->end > a->expected) {
			struct uf_frame pkt;
			/* Validated before it was queued: opening again only re-reads lengths. */
			if (a->framing->open(&pkt, sl->data, sl->len) == UF_FRAME_DATA)
				uf_arb_deliver(a, &pkt, sl->rx_ns, sl->src);
		}
		a->freel[a->nfree++] = s;
	}
}

/* End of the hole that starts at `expected` (with no hole in the table, which the table's
 * size rules out: up to the first queued packet). */
static uint64_t uf_arb_hole_end(const struct uf_arb *a)
{
	if (a->nholes)
		return a->holes[a->h0].end;
	return a->nheap ? uf_arb_key(a, 0) : a->high;
}

/* Re-evaluates the gap state after `expected` or `high` moved. */
static void uf_arb_update_gap(struct uf_arb *a)
{
	if (a->expected >= a->high) {
		a->gap_open = 0;
		a->ninflight = 0;
		if (a->eos_seen && !a->eos_done && a->expected >= a->eos_seq) {
			a->eos_done = 1;
			uf_stat_add(&a->st->end_of_session, 1);
		}
		return;
	}
	a->gap_open = 1;
}

/* [high, end) was announced and not received: a new hole at the end of the table (merged
 * with the last one when they touch: a run of heartbeats announces one hole, not many). */
static void uf_arb_hole_open(struct uf_arb *a, uint64_t end)
{
	uint64_t first = a->high;
	uf_stat_add(&a->st->gaps, 1);
	uf_stat_add(&a->st->gap_messages, end - first);
	if (a->nholes) {
		struct uf_arb_hole *last = uf_arb_hole_at(a, a->nholes - 1);
		if (last->end == first) {
			last->end = end;
			return;
		}
	}
	if (UF_UNLIKELY(a->nholes >= a->hole_cap))
		return; /* cannot happen (holes <= queued + 1); the caller keeps the invariant
		         * by giving up the oldest hole when the queue is full */
	uf_arb_hole_room(a);
	struct uf_arb_hole *h = uf_arb_hole_at(a, a->nholes++);
	memset(h, 0, sizeof(*h));
	h->first = first;
	h->end = end;
	h->opened_ns = a->now();
}

/* Declares [expected, end) lost: gap marker, counters; the stream goes on at `end`. The
 * holes it covers go. */
static void uf_arb_lose_until(struct uf_arb *a, uint64_t end)
{
	uint64_t first = a->expected;
	uf_stat_add(&a->st->gaps_unrecovered, 1);
	uf_stat_add(&a->st->messages_unrecovered, end - first);
	a->cb.gap(a->cb.ctx, first, end - first);
	a->expected = end;
	while (a->nholes && a->holes[a->h0].end <= end)
		uf_arb_hole_remove(a, 0);
	if (a->nholes && a->holes[a->h0].first < end)
		a->holes[a->h0].first = end;
}

/* Gives up the hole at `expected`: gap marker, counters, then everything complete behind it
 * is delivered at once. */
static void uf_arb_give_up(struct uf_arb *a)
{
	uint64_t end = uf_arb_hole_end(a);
	if (end <= a->expected)
		return;
	uf_arb_lose_until(a, end);
	uf_arb_drain(a);
	uf_arb_update_gap(a);
}

static void uf_arb_enqueue(struct uf_arb *a, const struct uf_frame *pkt, uint64_t rx_ns,
                           unsigned src)
{
	if (UF_UNLIKELY(pkt->len > a->slot_size))
		return; /* cannot happen: slots are as large as receive buffers */
	while (a->nfree == 0) {
		/* Full: the oldest hole will not be filled in time. Give it up and deliver what
		 * follows it, which frees slots. */
		uf_stat_add(&a->st->queue_overflows, 1);
		if (pkt->seq > a->expected && pkt->seq <= uf_arb_hole_end(a)) {
			/* The packet in hand follows that hole: only what precedes it is lost.
			 * It continues the stream now (the caller drains and re-evaluates). */
			uf_arb_lose_until(a, pkt->seq);
			uf_arb_deliver(a, pkt, rx_ns, src);
			return;
		}
		uf_arb_give_up(a);
		if (pkt->seq <= a->expected) { /* what preceded it is delivered or lost now */
			if (pkt->seq + pkt->count > a->expected)
				uf_arb_deliver(a, pkt, rx_ns, src);
			return;
		}
	}
	uint32_t s = a->freel[--a->nfree];
	struct uf_arb_slot *sl = &a->slots[s];
	sl->seq = pkt->seq;
	sl->end = pkt->seq + pkt->count;
	sl->rx_ns = rx_ns;
	sl->len = (uint32_t)pkt->len;
	sl->src = (uint16_t)src;
	memcpy(sl->data, pkt->buf, pkt->len);
	uf_arb_heap_push(a, s);
	uf_stat_add(&a->st->queued_packets, 1);
}

/* ---- what a line may be believed (see "What the arbiter trusts" in arbiter.h) ---- */

/* 1 when line `l` showed the current session recently enough to have a say: its
 * corroboration is required, its silence is not taken as agreement. */
static int uf_arb_live(const struct uf_arb *a, int l, uint64_t rx_ns)
{
	if (!a->line_seen[l])
		return 0;
	return rx_ns <= a->line_rx[l] || rx_ns - a->line_rx[l] < a->p.line_silent_ns;
}

/* The end of session is corroborated when every live line announced it at one sequence and
 * nothing beyond it was shown. Sets eos_seen / eos_seq; the caller re-evaluates the gap. */
static void uf_arb_eos_update(struct uf_arb *a, uint64_t rx_ns)
{
	uint64_t seq = 0;
	if (a->eos_seen || !a->any_eos)
		return;
	for (int l = 0; l < a->nlines; l++) {
		if (!uf_arb_live(a, l, rx_ns))
			continue;
		if (!a->line_eos[l] || (seq && a->line_eos[l] != seq))
			return;
		seq = a->line_eos[l];
	}
	if (!seq || a->high > seq)
		return;
	a->eos_seen = 1;
	a->eos_seq = seq;
}

/* A packet announcing `end` (the sequence after it) voids every end of session before it:
 * the session did not end there. */
static void uf_arb_eos_contradict(struct uf_arb *a, uint64_t end)
{
	int left = 0;
	for (int l = 0; l < UF_CFG_MAX_LINES; l++) {
		if (a->line_eos[l] && end > a->line_eos[l]) {
			a->line_eos[l] = 0;
			uf_stat_add(&a->cnt.end_of_session_contradicted, 1);
		}
		left |= a->line_eos[l] != 0;
	}
	a->any_eos = left;
	if (a->eos_seen && end > a->eos_seq)
		a->eos_seen = 0;
}

/* The quarantines are per session: a session change drops them. */
static void uf_arb_quar_drop(struct uf_arb *a, unsigned l)
{
	if (!a->q[l].n)
		return;
	uf_stat_add(&a->cnt.quarantine_dropped, a->q[l].n);
	a->q[l].n = 0;
	a->nquar--;
}

/* Starts session `name` at sequence 1 (a late joiner recovers the start). */
static void uf_arb_session_start(struct uf_arb *a, const char *name)
{
	memcpy(a->session, name, UF_FRAME_SESSION_LEN);
	a->have_session = 1;
	a->expected = 1;
	a->high = 1;
	memset(a->line_next, 0, sizeof(a->line_next));
	memset(a->line_eos, 0, sizeof(a->line_eos));
	memset(a->line_seen, 0, sizeof(a->line_seen));
	memset(a->cand_row, 0, sizeof(a->cand_row));
	memset(a->reqs, 0, sizeof(a->reqs));
	for (unsigned l = 0; l < UF_CFG_MAX_LINES; l++)
		uf_arb_quar_drop(a, l);
	a->any_eos = 0;
	a->gap_open = 0;
	a->nholes = a->h0 = 0;
	a->ninflight = 0;
	a->eos_seen = a->eos_done = 0;
	uf_stat_add(&a->st->sessions, 1);
}

/* A line packet of another session than the current one: the first session, a candidate
 * for the next one, or the previous one. Returns 1 when the packet belongs to the (new)
 * current session. Cold: the current session's packets never come here. */
static int uf_arb_other_session(struct uf_arb *a, const struct uf_frame *pkt, uint64_t rx_ns,
                                unsigned src)
{
	if (!a->have_session) {
		uf_arb_session_start(a, pkt->session); /* nothing to protect yet */
		return 1;
	}
	if (a->have_prev && !memcmp(pkt->session, a->prev_session, UF_FRAME_SESSION_LEN))
		goto out_drop;
	if (memcmp(pkt->session, a->cand_session, UF_FRAME_SESSION_LEN) != 0) {
		memcpy(a->cand_session, pkt->session, UF_FRAME_SESSION_LEN);
		memset(a->cand_row, 0, sizeof(a->cand_row));
	}
	if (a->cand_row[src] < UINT32_MAX)
		a->cand_row[src]++;
	uf_arb_eos_update(a, rx_ns); /* a line may have fallen silent since */
	/* Ended (or never showed anything past 1): one packet on every live line will do.
	 * Running: session_confirm in a row on every live line. */
	uint32_t need =
	    (a->eos_seen || (a->expected == 1 && a->high == 1)) ? 1 : a->p.session_confirm;
	if (a->cand_row[src] < need)
		goto out_drop;
	for (int l = 0; l < a->nlines; l++)
		if ((unsigned)l != src && uf_arb_live(a, l, rx_ns) && a->cand_row[l] < need)
			goto out_drop;
	/* The old session is over: whatever it still missed is lost. */
	if (a->expected < a->high) { /* a late joiner still at 1 loses what it held too */
		uint64_t first = a->expected, n = a->high - a->expected;
		uf_stat_add(&a->st->gaps_unrecovered, 1);
		uf_stat_add(&a->st->messages_unrecovered, n);
		a->cb.gap(a->cb.ctx, first, n);
	}
	uf_arb_queue_clear(a);
	memcpy(a->prev_session, a->session, UF_FRAME_SESSION_LEN);
	a->have_prev = 1;
	if (a->cb.new_session)
		a->cb.new_session(a->cb.ctx, pkt->session);
	uf_arb_session_start(a, pkt->session);
	return 1;

out_drop:
	uf_stat_add(&a->st->lines[src].wrong_session, 1);
	return 0;
}

/* 1 when a packet from the re-request socket answers a request: data of the current
 * session inside a range asked for recently. */
static int uf_arb_answer_ok(const struct uf_arb *a, const struct uf_frame *pkt)
{
	if (pkt->kind != UF_FRAME_DATA || !a->have_session ||
	    memcmp(pkt->session, a->session, UF_FRAME_SESSION_LEN) != 0)
		return 0;
	uint64_t end = pkt->seq + pkt->count; /* no wrap: the caller checked */
	for (int i = 0; i < UF_ARB_REQ_HISTORY; i++)
		if (a->reqs[i].end && pkt->seq >= a->reqs[i].first && end <= a->reqs[i].end)
			return 1;
	return 0;
}

/* A packet of the current session that passed every check: arbitration proper. */
static void uf_arb_accept(struct uf_arb *a, const struct uf_frame *pkt, uint64_t rx_ns,
                          unsigned src)
{
	uint64_t end = uf_frame_next_seq(pkt);
	if (src < UF_CFG_MAX_LINES) {
		/* Per-line view: what this line alone lost, whatever the other line did. */
		struct uf_feed_line_stats *ls = &a->st->lines[src];
		uint64_t ln = a->line_next[src];
		if (UF_UNLIKELY(ln && pkt->seq > ln)) {
			uf_stat_add(&ls->gaps, 1);
			uf_stat_add(&ls->gap_messages, pkt->seq - ln);
		}
		if (end > ln)
			a->line_next[src] = end;
	}
	if (UF_UNLIKELY(a->nholes) && src < UF_CFG_MAX_LINES) {
		/* Only packets beyond a hole show that a line went on without it; a lagging
		 * line's older packets say nothing. Holes still waiting for their first request
		 * are the newest: walk back from the last one. */
		for (uint32_t i = a->nholes; i-- > 0;) {
			struct uf_arb_hole *h = uf_arb_hole_at(a, i);
			if (h->tries)
				break;
			if (pkt->seq >= h->end && h->line_pkts[src] < UINT32_MAX)
				h->line_pkts[src]++;
		}
	}
	if (UF_UNLIKELY(a->any_eos))
		uf_arb_eos_contradict(a, end);

	if (UF_UNLIKELY(pkt->kind != UF_FRAME_DATA)) {
		if (end > a->high) {
			uf_arb_hole_open(a, end); /* announced, not received */
			a->high = end;
		}
		if (pkt->kind == UF_FRAME_HEARTBEAT) {
			uf_stat_add(&a->st->heartbeats, 1);
			if (src < UF_CFG_MAX_LINES)
				uf_stat_add(&a->st->lines[src].heartbeats, 1);
		} else if (src < UF_CFG_MAX_LINES) {
			a->line_eos[src] = pkt->seq;
			a->any_eos = 1;
			uf_arb_eos_update(a, rx_ns);
		}
		uf_arb_update_gap(a);
		return;
	}
	if (end <= a->expected) {
		if (src < UF_CFG_MAX_LINES)
			uf_stat_add(&a->st->lines[src].duplicates, 1);
		return;
	}
	if (UF_UNLIKELY(a->expected < a->high)) {
		/* Inside the gap: only what is missing counts. A copy of queued messages (the other
		 * line's, a second answer) is dropped before it takes a queue slot. */
		uint64_t from = pkt->seq > a->expected ? pkt->seq : a->expected;
		uint64_t to = end < a->high ? end : a->high;
		if (end <= a->high && !uf_arb_holes_hit(a, from, to)) {
			if (src < UF_CFG_MAX_LINES)
				uf_stat_add(&a->st->lines[src].duplicates, 1);
			uf_stat_add(&a->cnt.queue_duplicates, 1);
			return;
		}
		uf_arb_holes_fill(a, from, to, src);
	}
	if (UF_UNLIKELY(pkt->seq > a->high))
		uf_arb_hole_open(a, pkt->seq);
	if (end > a->high)
		a->high = end;
	if (UF_LIKELY(pkt->seq <= a->expected)) {
		uf_arb_deliver(a, pkt, rx_ns, src);
		if (UF_LIKELY(!a->nheap && !a->gap_open))
			return; /* the common case: in order, nothing pending */
	} else {
		uf_arb_enqueue(a, pkt, rx_ns, src);
	}
	uf_arb_drain(a);
	uf_arb_update_gap(a);
}

/* ---- quarantine of jumps nothing corroborates yet ---- */

/* Sequence `a->high` + max_jump: how far a line may announce without corroboration. */
static inline uint64_t uf_arb_limit(const struct uf_arb *a)
{
	return a->high > UINT64_MAX - a->p.max_jump ? UINT64_MAX : a->high + a->p.max_jump;
}

static void uf_arb_quar_hold(struct uf_arb *a, unsigned l, const struct uf_frame *pkt,
                             uint64_t rx_ns)
{
	struct uf_arb_quar *q = &a->q[l];
	if (UF_UNLIKELY(pkt->len > a->slot_size || q->n >= UF_ARB_CONFIRM_MAX))
		return; /* cannot happen: slots are receive-buffer sized, n < jump_confirm */
	if (!q->n) {
		q->first = pkt->seq;
		a->nquar++;
	}
	memcpy(q->data[q->n], pkt->buf, pkt->len);
	q->len[q->n] = (uint32_t)pkt->len;
	q->rx_ns[q->n] = rx_ns;
	q->n++;
	q->next = uf_frame_next_seq(pkt);
	uf_stat_add(&a->cnt.quarantined, 1);
}

/* Line `l`'s held jump is corroborated: hand its packets to arbitration, in arrival order. */
static void uf_arb_quar_release(struct uf_arb *a, unsigned l)
{
	struct uf_arb_quar *q = &a->q[l];
	uint32_t n = q->n;
	q->n = 0;
	a->nquar--;
	uf_stat_add(&a->cnt.quarantine_confirmed, 1);
	for (uint32_t i = 0; i < n; i++) {
		struct uf_frame pkt;
		/* Validated before it was held: opening again only re-reads lengths. */
		if (a->framing->open(&pkt, q->data[i], q->len[i]) > 0)
			uf_arb_accept(a, &pkt, q->rx_ns[i], l);
	}
}

/* 1 when `seq` lies within max_jump of what line `l` holds: the other line shows it too. */
static int uf_arb_quar_near(const struct uf_arb *a, unsigned l, uint64_t seq)
{
	const struct uf_arb_quar *q = &a->q[l];
	uint64_t lo = q->first > a->p.max_jump ? q->first - a->p.max_jump : 0;
	uint64_t hi = q->next > UINT64_MAX - a->p.max_jump ? UINT64_MAX : q->next + a->p.max_jump;
	return seq >= lo && seq <= hi;
}

/* A packet of line `src` beyond uf_arb_limit(): hold it, or release what it corroborates. */
static void uf_arb_quarantine(struct uf_arb *a, const struct uf_frame *pkt, uint64_t rx_ns,
                              unsigned src)
{
	struct uf_arb_quar *q = &a->q[src];
	if (q->n && pkt->seq == q->next) { /* its own line continues it */
		uf_arb_quar_hold(a, src, pkt, rx_ns);
		if (q->n >= a->p.jump_confirm)
			uf_arb_quar_release(a, src);
		return;
	}
	for (int l = 0; l < a->nlines; l++) {
		if ((unsigned)l == src || !a->q[l].n || !uf_arb_quar_near(a, (unsigned)l, pkt->seq))
			continue;
		/* Another line shows the same jump: both are believed. */
		uf_arb_quar_drop(a, src);
		uf_arb_quar_release(a, (unsigned)l);
		if (pkt->seq <= uf_arb_limit(a))
			uf_arb_accept(a, pkt, rx_ns, src);
		else
			uf_arb_quar_hold(a, src, pkt,
			                 rx_ns); /* further still: needs its own proof */
		return;
	}
	uf_arb_quar_drop(a, src); /* did not continue what its line held */
	uf_arb_quar_hold(a, src, pkt, rx_ns);
	if (q->n >= a->p.jump_confirm)
		uf_arb_quar_release(a, src);
}

/* After a packet of line `src` within the limit: quarantines the stream caught up with are
 * released; `src`'s own, if still held, was not continued in a row and is dropped. */
static void uf_arb_quar_recheck(struct uf_arb *a, unsigned src)
{
	for (int l = 0; l < a->nlines && a->nquar; l++)
		if (a->q[l].n && a->q[l].first <= uf_arb_limit(a))
			uf_arb_quar_release(a, (unsigned)l);
	if (src < UF_CFG_MAX_LINES)
		uf_arb_quar_drop(a, src);
}

void uf_arb_packet(struct uf_arb *a, const struct uf_frame *pkt, uint64_t rx_ns, unsigned src)
{
	if (UF_UNLIKELY(pkt->kind == UF_FRAME_DATA && pkt->seq > UINT64_MAX - pkt->count)) {
		uf_stat_add(&a->cnt.bad_sequence, 1); /* no stream reaches 2^64: a forgery */
		return;
	}
	if (UF_UNLIKELY(src >= UF_CFG_MAX_LINES)) {
		/* The re-request socket: only answers to what was asked. */
		if (!uf_arb_answer_ok(a, pkt)) {
			uf_stat_add(&a->cnt.rerequest_answers_rejected, 1);
			return;
		}
		uf_arb_accept(a, pkt, rx_ns, UF_ARB_SRC_RECOVERY);
		return;
	}
	if (UF_LIKELY(a->have_session && !memcmp(pkt->session, a->session, UF_FRAME_SESSION_LEN))) {
		if (UF_LIKELY(pkt->kind != UF_FRAME_END))
			a->cand_row[src] = 0; /* the current session goes on on this line */
	} else if (!uf_arb_other_session(a, pkt, rx_ns, src)) {
		return;
	}
	a->line_seen[src] = 1;
	a->line_rx[src] = rx_ns;
	if (UF_UNLIKELY(pkt->seq > uf_arb_limit(a))) {
		uf_arb_quarantine(a, pkt, rx_ns, src);
		return;
	}
	uf_arb_accept(a, pkt, rx_ns, src);
	if (UF_UNLIKELY(a->nquar))
		uf_arb_quar_recheck(a, src);
}

/* Records a requested range: answers inside it are accepted (uf_arb_answer_ok). */
static void uf_arb_req_remember(struct uf_arb *a, uint64_t first, uint64_t end)
{
	uint32_t i = a->nreqs++ % UF_ARB_REQ_HISTORY;
	a->reqs[i].first = first;
	a->reqs[i].end = end;
}

/* Sends one re-request for [first, end) and puts it in flight. A send failure counts as a
 * try: a dead server ends in a give-up, not a loop. */
static void uf_arb_request(struct uf_arb *a, uint64_t first, uint64_t end, uint64_t now_ns)
{
	uint8_t req[UF_FRAME_REQUEST_MAX];
	size_t len = a->framing->request_build(req, a->session, first, (uint32_t)(end - first));
	a->inflight[a->ninflight++] = (struct uf_arb_req){first, end, now_ns};
	a->last_req_ns = now_ns;
	a->rate_limited = 0;
	uf_arb_req_remember(a, first, end);
	ssize_t r =
	    sendto(a->fd, req, len, MSG_DONTWAIT, (struct sockaddr *)&a->server, sizeof(a->server));
	if (r == (ssize_t)len)
		uf_stat_add(&a->st->rerequests, 1);
}

/* 1 when hole `h` may be requested: its first request waits for the other line (time or
 * packets, whichever comes first); a retry does not. */
static int uf_arb_wait_done(const struct uf_arb *a, const struct uf_arb_hole *h, uint64_t now_ns,
                            int drained)
{
	if (h->tries)
		return 1;
	int moved = 1;
	for (int l = 0; l < a->nlines; l++)
		if (h->line_pkts[l] < a->wait_packets)
			moved = 0;
	if (moved)
		return 1;
	uint64_t waited = now_ns > h->opened_ns ? now_ns - h->opened_ns : 0;
	return waited >= a->wait_ns && (drained || waited >= UF_ARB_WAIT_CAP(a->wait_ns));
}

/* 1 when a request in flight covers part of hole `h`. */
static int uf_arb_requested(const struct uf_arb *a, const struct uf_arb_hole *h)
{
	for (uint32_t k = 0; k < a->ninflight; k++)
		if (a->inflight[k].first < h->end && a->inflight[k].end > h->first)
			return 1;
	return 0;
}

/* Requests in flight: answered (no hole left in their range) or timed out leave. */
static void uf_arb_reap(struct uf_arb *a, uint64_t now_ns)
{
	for (uint32_t k = 0; k < a->ninflight;) {
		struct uf_arb_req *r = &a->inflight[k];
		int open = uf_arb_holes_hit(a, r->first, r->end);
		if (open && now_ns - r->sent_ns < a->timeout_ns) {
			k++;
			continue;
		}
		if (open)
			uf_stat_add(&a->st->rerequest_timeouts, 1);
		*r = a->inflight[--a->ninflight];
	}
}

/* 1 when the hole at `expected` is over: its deadline passed ((retries + 1) x timeout after
 * its first request), or (no server) its wait ended, or its last try timed out. */
static int uf_arb_head_dead(struct uf_arb *a, uint64_t now_ns, int drained)
{
	const struct uf_arb_hole *h = &a->holes[a->h0];
	if (h->deadline_ns && now_ns >= h->deadline_ns) {
		uf_stat_add(&a->cnt.holes_expired, 1);
		return 1;
	}
	if (!a->recovery)
		return uf_arb_wait_done(a, h, now_ns, drained);
	return h->tries > a->retries && !uf_arb_requested(a, h);
}

/* First sequence of hole `h` that no request in flight covers (h->end when none). */
static uint64_t uf_arb_unrequested(const struct uf_arb *a, const struct uf_arb_hole *h)
{
	uint64_t from = h->first;
	for (int moved = 1; moved && from < h->end;) {
		moved = 0;
		for (uint32_t k = 0; k < a->ninflight; k++)
			if (a->inflight[k].first <= from && from < a->inflight[k].end) {
				from = a->inflight[k].end;
				moved = 1;
			}
	}
	return from;
}

/* Hole `h` gets a request that starts at its first sequence: one more try, and its deadline
 * runs from the first one. */
static void uf_arb_try(struct uf_arb *a, struct uf_arb_hole *h, uint64_t now_ns)
{
	if (!h->deadline_ns)
		h->deadline_ns = now_ns + a->deadline_ns;
	h->tries++;
}

/* Sends what the holes need, oldest first: within max_in_flight and the rate limit. A hole
 * larger than max_count gets several requests at once (consecutive chunks); one request
 * covers a hole and the neighbours that start within max_count messages of it (the rate
 * limit, not the server, is what many small holes run into). */
static void uf_arb_send_requests(struct uf_arb *a, uint64_t now_ns, int drained)
{
	for (uint32_t i = 0; i < a->nholes; i++) {
		struct uf_arb_hole *h = uf_arb_hole_at(a, i);
		if (h->tries > a->retries)
			continue;
		uint64_t first = uf_arb_unrequested(a, h);
		if (first >= h->end)
			continue; /* all of it is asked for */
		if (!uf_arb_wait_done(a, h, now_ns, drained))
			return; /* newer holes are waiting too */
		if (a->ninflight >= a->max_in_flight) {
			if (!a->inflight_full) {
				a->inflight_full = 1;
				uf_stat_add(&a->cnt.rerequests_in_flight_full, 1);
			}
			return;
		}
		if (a->last_req_ns && now_ns - a->last_req_ns < a->min_interval_ns) {
			if (!a->rate_limited) {
				a->rate_limited = 1;
				uf_stat_add(&a->st->rerequest_rate_limited, 1);
			}
			return;
		}
		a->inflight_full = 0;
		uint64_t end = h->end;
		if (end - first > a->max_count)
			end = first + a->max_count;
		if (first == h->first)
			uf_arb_try(a, h, now_ns);
		int whole = end == h->end; /* the request reaches its end: neighbours may join */
		uint32_t j = i + 1;
		for (; whole && j < a->nholes; j++) {
			struct uf_arb_hole *n = uf_arb_hole_at(a, j);
			if (n->first - first >= a->max_count || n->tries > a->retries ||
			    uf_arb_requested(a, n) || !uf_arb_wait_done(a, n, now_ns, drained))
				break;
			uf_arb_try(a, n, now_ns);
			if (n->end - first > a->max_count) {
				end =
				    first + a->max_count; /* its start fits: the rest comes next */
				break;
			}
			end = n->end;
		}
		uf_arb_request(a, first, end, now_ns);
		i = whole ? j - 1 : i - 1; /* the rest of a large hole comes next */
	}
}

void uf_arb_tick(struct uf_arb *a, uint64_t now_ns, int drained)
{
	if (!a->gap_open)
		return;
	uf_arb_reap(a, now_ns);
	/* Holes die oldest first (deadlines grow with the sequence): each one given up
	 * delivers at once everything complete behind it. */
	while (a->gap_open && a->nholes && uf_arb_head_dead(a, now_ns, drained))
		uf_arb_give_up(a);
	if (UF_UNLIKELY(a->gap_open && !a->nholes))
		uf_arb_give_up(a); /* a hole the full table could not track: never stall on it */
	if (a->gap_open && a->recovery)
		uf_arb_send_requests(a, now_ns, drained);
}

void uf_arb_resync(struct uf_arb *a, const char *session, uint64_t next_seq)
{
	if (session && (!a->have_session || memcmp(a->session, session, UF_FRAME_SESSION_LEN))) {
		if (a->have_session) {
			memcpy(a->prev_session, a->session, UF_FRAME_SESSION_LEN);
			a->have_prev = 1;
			uf_arb_queue_clear(a); /* another day's packets */
		}
		uf_arb_session_start(a, session);
	}
	if (next_seq < 1)
		next_seq = 1;
	uint64_t now = a->now();
	/* Holes wholly below next_seq are covered by the snapshot; a straddling one now starts at
	 * next_seq; every remaining hole is judged afresh (no request out, no retries spent). */
	while (a->nholes && uf_arb_hole_at(a, 0)->end <= next_seq)
		uf_arb_hole_remove(a, 0);
	for (uint32_t i = 0; i < a->nholes; i++) {
		struct uf_arb_hole *h = uf_arb_hole_at(a, i);
		if (h->first < next_seq)
			h->first = next_seq;
		h->tries = 0;
		h->deadline_ns = 0;
		h->opened_ns = now;
		memset(h->line_pkts, 0, sizeof(h->line_pkts));
	}
	/* A snapshot older than what was delivered: the books were replaced, so
	 * [next_seq, expected) must come again, as a hole at the front of the table. */
	if (next_seq < a->expected && a->nholes < a->hole_cap) {
		uint64_t end = a->expected;
		if (a->nholes && uf_arb_hole_at(a, 0)->first <= end) {
			uf_arb_hole_at(a, 0)->first =
			    next_seq; /* touches the first hole: one hole */
		} else {
			if (a->h0 > 0) {
				a->h0--;
			} else {
				memmove(a->holes + 1, a->holes,
				        (size_t)a->nholes * sizeof(*a->holes));
			}
			a->nholes++;
			struct uf_arb_hole *h = uf_arb_hole_at(a, 0);
			memset(h, 0, sizeof(*h));
			h->first = next_seq;
			h->end = end;
			h->opened_ns = now;
		}
		uf_stat_add(&a->st->gaps, 1);
		uf_stat_add(&a->st->gap_messages, end - next_seq);
	}
	a->expected = next_seq;
	if (a->high < next_seq)
		a->high = next_seq;
	a->gap_open = 0; /* whatever hole was open is now judged afresh */
	a->ninflight = 0;
	a->rate_limited = 0;
	uf_arb_drain(a); /* below: dropped; straddling: from next_seq; then in order */
	uf_arb_update_gap(a);
}
