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

int uf_arb_init(struct uf_arb *a, const struct uf_feed_config *cfg, int fd, uint32_t slot_size,
                struct uf_feed_stats *st, const struct uf_arb_cb *cb)
{
	memset(a, 0, sizeof(*a));
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
	a->cap = cfg->recovery.queue_packets ? cfg->recovery.queue_packets : 65536;
	a->slot_size = slot_size;
	a->heap = calloc(a->cap, sizeof(*a->heap));
	a->freel = calloc(a->cap, sizeof(*a->freel));
	a->slots = calloc(a->cap, sizeof(*a->slots));
	a->mem_len = (size_t)a->cap * slot_size;
	/* Reserved, not touched: pages fault in only when a gap actually queues packets. */
	void *m = mmap(NULL, a->mem_len, PROT_READ | PROT_WRITE,
	               MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (!a->heap || !a->freel || !a->slots || m == MAP_FAILED) {
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

/* ---- delivery ---- */

static void uf_arb_deliver(struct uf_arb *a, const struct uf_mold_packet *pkt, uint64_t rx_ns,
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
			struct uf_mold_packet pkt;
			/* Validated before it was queued: opening again only re-reads lengths. */
			if (uf_mold_open(&pkt, sl->data, sl->len) == UF_MOLD_DATA)
				uf_arb_deliver(a, &pkt, sl->rx_ns, sl->src);
		}
		a->freel[a->nfree++] = s;
	}
}

/* End of the hole that starts at `expected`: the first queued packet, or what was
 * announced (heartbeat, end of session, a packet that overflowed the queue). */
static uint64_t uf_arb_hole_end(const struct uf_arb *a)
{
	return a->nheap ? uf_arb_key(a, 0) : a->high;
}

/* Re-evaluates the gap state after `expected` or `high` moved. */
static void uf_arb_update_gap(struct uf_arb *a)
{
	if (a->expected >= a->high) {
		if (a->gap_open && a->gap_reqs == 0)
			uf_stat_add(&a->st->gaps_filled_by_line, 1);
		a->gap_open = 0;
		a->req_out = 0;
		a->gap_pkts = 0;
		if (a->eos_seen && !a->eos_done && a->expected >= a->eos_seq) {
			a->eos_done = 1;
			uf_stat_add(&a->st->end_of_session, 1);
		}
		return;
	}
	if (a->req_out && a->expected >= a->req_end)
		a->req_out = 0; /* answered in full: the next hole (if any) gets its own request */
	if (!a->gap_open) {
		a->gap_open = 1;
		a->gap_since_ns = uf_now_mono_ns();
		a->gap_pkts = 0;
		memset(a->gap_line_pkts, 0, sizeof(a->gap_line_pkts));
		a->gap_reqs = 0;
		a->rate_limited = 0;
		uf_stat_add(&a->st->gaps, 1);
		uf_stat_add(&a->st->gap_messages, uf_arb_hole_end(a) - a->expected);
	}
}

/* Declares [expected, end) lost: gap marker, counters; the stream goes on at `end`. */
static void uf_arb_lose_until(struct uf_arb *a, uint64_t end)
{
	uint64_t first = a->expected;
	uf_stat_add(&a->st->gaps_unrecovered, 1);
	uf_stat_add(&a->st->messages_unrecovered, end - first);
	a->cb.gap(a->cb.ctx, first, end - first);
	a->expected = end;
	a->req_out = 0;
	a->req_tries = 0;
	a->gap_open = 0; /* a further hole is a new gap */
}

/* Gives up the hole at `expected`: gap marker, counters, go on with what is queued. */
static void uf_arb_give_up(struct uf_arb *a)
{
	uint64_t end = uf_arb_hole_end(a);
	if (end <= a->expected)
		return;
	uf_arb_lose_until(a, end);
	uf_arb_drain(a);
	uf_arb_update_gap(a);
}

static void uf_arb_enqueue(struct uf_arb *a, const struct uf_mold_packet *pkt, uint64_t rx_ns,
                           unsigned src)
{
	if (UF_UNLIKELY(pkt->len > a->slot_size))
		return; /* cannot happen: slots are as large as receive buffers */
	while (a->nfree == 0) {
		/* Full: the oldest hole will not be filled in time. Give it up and deliver what
		 * follows it, which frees slots. */
		uf_stat_add(&a->st->queue_overflows, 1);
		if (pkt->seq > a->expected && pkt->seq < uf_arb_hole_end(a)) {
			/* The packet in hand lies inside that hole: only what precedes it is lost.
			 * It continues the stream now (the caller drains and re-evaluates). */
			uf_arb_lose_until(a, pkt->seq);
			uf_arb_deliver(a, pkt, rx_ns, src);
			return;
		}
		uf_arb_give_up(a);
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
	memcpy(a->session, name, UF_MOLD_SESSION_LEN);
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
	a->req_out = 0;
	a->req_tries = 0;
	a->eos_seen = a->eos_done = 0;
	uf_stat_add(&a->st->sessions, 1);
}

/* A line packet of another session than the current one: the first session, a candidate
 * for the next one, or the previous one. Returns 1 when the packet belongs to the (new)
 * current session. Cold: the current session's packets never come here. */
static int uf_arb_other_session(struct uf_arb *a, const struct uf_mold_packet *pkt, uint64_t rx_ns,
                                unsigned src)
{
	if (!a->have_session) {
		uf_arb_session_start(a, pkt->session); /* nothing to protect yet */
		return 1;
	}
	if (a->have_prev && !memcmp(pkt->session, a->prev_session, UF_MOLD_SESSION_LEN))
		goto out_drop;
	if (memcmp(pkt->session, a->cand_session, UF_MOLD_SESSION_LEN) != 0) {
		memcpy(a->cand_session, pkt->session, UF_MOLD_SESSION_LEN);
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
	memcpy(a->prev_session, a->session, UF_MOLD_SESSION_LEN);
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
static int uf_arb_answer_ok(const struct uf_arb *a, const struct uf_mold_packet *pkt)
{
	if (pkt->kind != UF_MOLD_DATA || !a->have_session ||
	    memcmp(pkt->session, a->session, UF_MOLD_SESSION_LEN) != 0)
		return 0;
	uint64_t end = pkt->seq + pkt->count; /* no wrap: the caller checked */
	for (int i = 0; i < UF_ARB_REQ_HISTORY; i++)
		if (a->reqs[i].end && pkt->seq >= a->reqs[i].first && end <= a->reqs[i].end)
			return 1;
	return 0;
}

/* A packet of the current session that passed every check: arbitration proper. */
static void uf_arb_accept(struct uf_arb *a, const struct uf_mold_packet *pkt, uint64_t rx_ns,
                          unsigned src)
{
	uint64_t end = uf_mold_next_seq(pkt);
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
	if (UF_UNLIKELY(a->gap_open)) {
		a->gap_pkts++;
		/* Only packets beyond the hole show that a line went on without it; a lagging
		 * line's older packets say nothing. */
		if (src < UF_CFG_MAX_LINES && pkt->seq > a->expected)
			a->gap_line_pkts[src]++;
	}
	if (UF_UNLIKELY(a->any_eos))
		uf_arb_eos_contradict(a, end);
	if (end > a->high)
		a->high = end;

	if (UF_UNLIKELY(pkt->kind != UF_MOLD_DATA)) {
		if (pkt->kind == UF_MOLD_HEARTBEAT) {
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

static void uf_arb_quar_hold(struct uf_arb *a, unsigned l, const struct uf_mold_packet *pkt,
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
	q->next = uf_mold_next_seq(pkt);
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
		struct uf_mold_packet pkt;
		/* Validated before it was held: opening again only re-reads lengths. */
		if (uf_mold_open(&pkt, q->data[i], q->len[i]) > 0)
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
static void uf_arb_quarantine(struct uf_arb *a, const struct uf_mold_packet *pkt, uint64_t rx_ns,
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

void uf_arb_packet(struct uf_arb *a, const struct uf_mold_packet *pkt, uint64_t rx_ns, unsigned src)
{
	if (UF_UNLIKELY(pkt->kind == UF_MOLD_DATA && pkt->seq > UINT64_MAX - pkt->count)) {
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
	if (UF_LIKELY(a->have_session && !memcmp(pkt->session, a->session, UF_MOLD_SESSION_LEN))) {
		if (UF_LIKELY(pkt->kind != UF_MOLD_END_OF_SESSION))
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

/* Sends one re-request for the start of the hole. Returns 0 or -errno. */
static int uf_arb_request(struct uf_arb *a, uint64_t now_ns)
{
	uint64_t end = uf_arb_hole_end(a);
	if (end > a->expected + a->max_count)
		end = a->expected + a->max_count;
	uint8_t req[UF_MOLD_REREQUEST_LEN];
	uf_mold_rerequest_build(req, a->session, a->expected, (uint16_t)(end - a->expected));
	a->req_out = 1;
	a->req_first = a->expected;
	a->req_end = end;
	a->req_sent_ns = now_ns;
	a->last_req_ns = now_ns;
	a->req_tries++;
	a->gap_reqs++;
	a->reqs[a->nreqs++ % UF_ARB_REQ_HISTORY].first = a->expected;
	a->reqs[(a->nreqs - 1) % UF_ARB_REQ_HISTORY].end = end;
	a->rate_limited = 0;
	ssize_t r = sendto(a->fd, req, sizeof(req), MSG_DONTWAIT, (struct sockaddr *)&a->server,
	                   sizeof(a->server));
	if (r != (ssize_t)sizeof(req))
		return -errno; /* counts as a try: a dead server ends in a give-up, not a loop */
	uf_stat_add(&a->st->rerequests, 1);
	return 0;
}

/* 1 when every line has delivered wait_packets packets since the gap opened. */
static int uf_arb_lines_moved_on(const struct uf_arb *a)
{
	for (int l = 0; l < a->nlines; l++)
		if (a->gap_line_pkts[l] < a->wait_packets)
			return 0;
	return 1;
}

void uf_arb_tick(struct uf_arb *a, uint64_t now_ns, int drained)
{
	if (!a->gap_open)
		return;
	if (a->tries_at != a->expected) {
		a->tries_at = a->expected; /* progress: the new hole start gets fresh retries */
		a->req_tries = 0;
	}
	if (a->req_out) {
		if (now_ns - a->req_sent_ns < a->timeout_ns)
			return;
		uf_stat_add(&a->st->rerequest_timeouts, 1);
		a->req_out = 0;
	}
	/* Before the first request of a gap, give the other line (or a reordered packet) a
	 * bounded chance: time or packets, whichever comes first. */
	uint64_t waited = now_ns - a->gap_since_ns;
	if (a->gap_reqs == 0 && !uf_arb_lines_moved_on(a) &&
	    !(waited >= a->wait_ns && (drained || waited >= UF_ARB_WAIT_CAP(a->wait_ns))))
		return;
	if (!a->recovery || a->req_tries > a->retries) {
		uf_arb_give_up(a);
		return;
	}
	if (a->last_req_ns && now_ns - a->last_req_ns < a->min_interval_ns) {
		if (!a->rate_limited) {
			a->rate_limited = 1;
			uf_stat_add(&a->st->rerequest_rate_limited, 1);
		}
		return;
	}
	(void)uf_arb_request(a, now_ns);
}

void uf_arb_resync(struct uf_arb *a, const char *session, uint64_t next_seq)
{
	if (session && (!a->have_session || memcmp(a->session, session, UF_MOLD_SESSION_LEN))) {
		if (a->have_session) {
			memcpy(a->prev_session, a->session, UF_MOLD_SESSION_LEN);
			a->have_prev = 1;
			uf_arb_queue_clear(a); /* another day's packets */
		}
		uf_arb_session_start(a, session);
	}
	if (next_seq < 1)
		next_seq = 1;
	a->expected = next_seq;
	if (a->high < next_seq)
		a->high = next_seq;
	a->gap_open = 0; /* whatever hole was open is now judged afresh */
	a->req_out = 0;
	a->req_tries = 0;
	a->rate_limited = 0;
	uf_arb_drain(a); /* below: dropped; straddling: from next_seq; then in order */
	uf_arb_update_gap(a);
}
