/* A/B arbitration: setup, delivery, arbitration proper and resync. See arbiter.h for the
 * contract; arb_internal.h lists the arbiter's other files (holes, sessions, requests). */
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

int uf_arb_init(struct uf_arb *a, const struct uf_feed_config *given,
                const struct uf_framing *framing, int fd, uint32_t slot_size,
                struct uf_feed_stats *st, const struct uf_arb_cb *cb)
{
	/* Zero where 0 means "the default": the engine's one table (uf_feed_config_resolve). */
	struct uf_feed_config resolved = *given;
	const struct uf_feed_config *cfg = &resolved;
	uf_feed_config_resolve(&resolved);
	memset(a, 0, sizeof(*a));
	if (!framing || !framing->open)
		return -EINVAL;
	a->framing = framing;
	a->has_restart = framing->restart != NULL;
	a->has_sent = a->has_restart && framing->sent != NULL;
	a->cb = *cb;
	a->st = st;
	a->nlines = cfg->nlines;
	a->fd = fd;
	a->recovery = cfg->recovery.enabled && fd >= 0;
	a->server = cfg->recovery.server;
	a->max_count = cfg->recovery.max_count;
	if (a->max_count > 0xFFFE)
		a->max_count = 0xFFFE; /* 0xFFFF means end of session on the wire */
	a->timeout_ns = (uint64_t)cfg->recovery.timeout_ms * 1000000u;
	a->retries = cfg->recovery.retries;
	a->wait_ns = (uint64_t)cfg->recovery.wait_ms * 1000000u;
	a->wait_packets = cfg->recovery.wait_packets; /* 0: the packets never hold a request */
	a->min_interval_ns = 1000000000ull / cfg->recovery.max_requests_per_s;
	a->max_in_flight = cfg->recovery.max_in_flight;
	if (a->max_in_flight > UF_ARB_MAX_IN_FLIGHT)
		a->max_in_flight = UF_ARB_MAX_IN_FLIGHT;
	if (!a->framing->request_build)
		a->recovery = 0; /* the venue has no re-request service */
	if (a->max_count > a->framing->max_count)
		a->max_count = a->framing->max_count; /* what one request of the venue can ask */
	/* The tries' share of a hole's life: 1 + retries tries. A hole lives wait + this from
	 * its opening (uf_arb_life), not from its first request, so holes that wait for a
	 * request slot (max_in_flight, the rate limit) still end in time: the lag's bound holds
	 * whatever the number of holes. */
	a->deadline_ns = (uint64_t)(a->retries + 1) * a->timeout_ns;
	a->now = uf_now_mono_ns;
	a->cap = cfg->recovery.queue_packets;
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
	/* Quarantine copies and restart holds: also reserved only; a line fills them only while
	 * a jump or a newer stream waits. */
	size_t qlen = (size_t)UF_CFG_MAX_LINES * UF_ARB_CONFIRM_MAX * slot_size;
	size_t hold =
	    (size_t)UF_ARB_RESTART_HOLD * (slot_size + sizeof(uint32_t) + sizeof(uint64_t));
	a->qmem_len = qlen + (size_t)UF_CFG_MAX_LINES * hold;
	m = mmap(NULL, a->qmem_len, PROT_READ | PROT_WRITE,
	         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (m == MAP_FAILED) {
		uf_arb_fini(a);
		return -ENOMEM;
	}
	a->qmem = m;
	for (int l = 0; l < UF_CFG_MAX_LINES; l++) {
		for (int k = 0; k < UF_ARB_CONFIRM_MAX; k++)
			a->q[l].data[k] =
			    a->qmem + ((size_t)l * UF_ARB_CONFIRM_MAX + (size_t)k) * slot_size;
		uint8_t *h = a->qmem + qlen + (size_t)l * hold; /* rx_ns 8-aligned: pages, then 8 */
		a->rs[l].rx_ns = (uint64_t *)(void *)h;
		a->rs[l].len = (uint32_t *)(void *)(h + UF_ARB_RESTART_HOLD * sizeof(uint64_t));
		a->rs[l].mem = h + UF_ARB_RESTART_HOLD * (sizeof(uint64_t) + sizeof(uint32_t));
	}
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
		a->ninflight = a->nslots = 0;
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
	h->deadline_ns = h->opened_ns + uf_arb_life(a);
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
void uf_arb_give_up(struct uf_arb *a)
{
	uint64_t end = uf_arb_hole_end(a);
	if (end <= a->expected)
		return;
	uf_arb_lose_until(a, end);
	uf_arb_drain(a);
	uf_arb_update_gap(a);
}

/* The current stream ends (another session or a new stream replaces it): each hole is given
 * up in turn and what was queued behind it delivered, so the stream loses only what no line
 * sent (not the packets received past its first hole), then [expected, last) if still
 * missing (`last` >= high: an end of session every line announced). */
void uf_arb_end_stream(struct uf_arb *a, uint64_t last)
{
	while (a->expected < a->high) {
		uint64_t before = a->expected;
		uf_arb_give_up(a);
		if (a->expected == before)
			break;
	}
	if (a->expected < last)
		uf_arb_lose_until(a, last);
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

/* A packet of the current session that passed every check: arbitration proper. */
void uf_arb_accept(struct uf_arb *a, const struct uf_frame *pkt, uint64_t rx_ns, unsigned src)
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
			a->stream_newest = a->pkt_sent;
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
			uf_stat_add(&a->st->queue_duplicates, 1);
			return;
		}
		uf_arb_holes_fill(a, from, to, src);
	}
	if (UF_UNLIKELY(pkt->seq > a->high))
		uf_arb_hole_open(a, pkt->seq);
	if (end > a->high) {
		a->high = end;
		/* Sequences are sent in order: what lies below it was sent no later (the send
		 * time of the packet at hand, framings with `sent`; uf_arb_restart) */
		a->stream_newest = a->pkt_sent;
	}
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

void uf_arb_packet(struct uf_arb *a, const struct uf_frame *pkt, uint64_t rx_ns, unsigned src)
{
	if (UF_UNLIKELY(pkt->kind == UF_FRAME_DATA && pkt->seq > UINT64_MAX - pkt->count)) {
		uf_stat_add(&a->st->bad_sequence, 1); /* no stream reaches 2^64: a forgery */
		return;
	}
	if (UF_UNLIKELY(a->has_sent))
		uf_arb_sent_note(a, pkt); /* pkt_sent: every rule below reads it */
	if (UF_UNLIKELY(src >= UF_CFG_MAX_LINES)) {
		/* The re-request socket: only answers to what was asked. */
		if (!uf_arb_answer_ok(a, pkt)) {
			uf_stat_add(&a->st->rerequest_answers_rejected, 1);
			return;
		}
		uf_arb_answer_learn(a, pkt);
		uf_arb_accept(a, pkt, rx_ns, UF_ARB_SRC_RECOVERY);
		return;
	}
	if (UF_LIKELY(a->have_session && !memcmp(pkt->session, a->session, UF_FRAME_SESSION_LEN))) {
		if (UF_UNLIKELY(a->has_restart) && uf_arb_stream_rules(a, pkt, rx_ns, src))
			return; /* an older stream's tail, or a newer stream's packet */
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
	if (UF_UNLIKELY(pkt->kind != UF_FRAME_DATA && pkt->seq > a->high) &&
	    !uf_arb_hb_believed(a, pkt, rx_ns, src))
		return;
	uf_arb_accept(a, pkt, rx_ns, src);
	if (UF_UNLIKELY(a->hb_claim[src]))
		uf_arb_hb_settle(a, src);
	if (UF_UNLIKELY(a->nquar))
		uf_arb_quar_recheck(a, src);
}

void uf_arb_resync(struct uf_arb *a, const char *session, uint64_t next_seq)
{
	if (session && (!a->have_session || memcmp(a->session, session, UF_FRAME_SESSION_LEN))) {
		if (a->have_session) {
			memcpy(a->prev_session, a->session, UF_FRAME_SESSION_LEN);
			a->have_prev = 1;
			uf_arb_queue_clear(a); /* another day's packets */
		}
		uf_arb_session_start(a, session, 0);
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
		h->asked = 0;
		h->opened_ns = now;
		h->deadline_ns = now + uf_arb_life(a);
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
			h->deadline_ns = now + uf_arb_life(a);
		}
		uf_stat_add(&a->st->gaps, 1);
		uf_stat_add(&a->st->gap_messages, end - next_seq);
	}
	a->expected = next_seq;
	if (a->high < next_seq)
		a->high = next_seq;
	a->gap_open = 0; /* whatever hole was open is now judged afresh */
	a->ninflight = a->nslots = 0;
	a->rate_limited = 0;
	uf_arb_drain(a); /* below: dropped; straddling: from next_seq; then in order */
	uf_arb_update_gap(a);
}
