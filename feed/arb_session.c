/* The arbiter's sessions, end of session and quarantine: what a line may be believed
 * ("What the arbiter trusts", arbiter.h; arb_internal.h lists the arbiter's files). */
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
void uf_arb_eos_update(struct uf_arb *a, uint64_t rx_ns)
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
void uf_arb_eos_contradict(struct uf_arb *a, uint64_t end)
{
	int left = 0;
	for (int l = 0; l < UF_CFG_MAX_LINES; l++) {
		if (a->line_eos[l] && end > a->line_eos[l]) {
			a->line_eos[l] = 0;
			uf_stat_add(&a->st->end_of_session_contradicted, 1);
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
	uf_stat_add(&a->st->quarantine_dropped, a->q[l].n);
	a->q[l].n = 0;
	a->nquar--;
}

/* Starts session `name` at sequence 1 (a late joiner recovers the start). `keep_lines`: the
 * lines' liveness stays (a stream restart within one session: a line live a moment ago still
 * is); otherwise every line must show itself again. */
void uf_arb_session_start(struct uf_arb *a, const char *name, int keep_lines)
{
	memcpy(a->session, name, UF_FRAME_SESSION_LEN);
	a->have_session = 1;
	a->expected = 1;
	a->high = 1;
	memset(a->line_next, 0, sizeof(a->line_next));
	memset(a->line_eos, 0, sizeof(a->line_eos));
	if (!keep_lines)
		memset(a->line_seen, 0, sizeof(a->line_seen));
	memset(a->cand_row, 0, sizeof(a->cand_row));
	memset(a->restart_row, 0, sizeof(a->restart_row));
	a->restart_any = 0;
	a->stream_sent = 0;
	a->stream_newest = 0;
	memset(a->hb_claim, 0, sizeof(a->hb_claim));
	memset(a->hb_row, 0, sizeof(a->hb_row));
	memset(a->reqs, 0, sizeof(a->reqs));
	for (unsigned l = 0; l < UF_CFG_MAX_LINES; l++)
		uf_arb_quar_drop(a, l);
	a->any_eos = 0;
	a->gap_open = 0;
	a->nholes = a->h0 = 0;
	a->ninflight = a->nslots = 0;
	a->eos_seen = a->eos_done = 0;
	uf_stat_add(&a->st->sessions, 1);
}

/* A session starts with packet `pkt`: when its framing says the packet starts the stream
 * (restart), its send time is the stream's start, so a copy of it is not taken for a newer
 * stream (uf_arb_restart). */
static void uf_arb_stream_mark(struct uf_arb *a, const struct uf_frame *pkt)
{
	uint64_t sent = 0;
	if (a->framing->restart && pkt->seq == 1 && a->framing->restart(pkt, &sent))
		a->stream_sent = sent;
}

/* A line packet of another session than the current one: the first session, a candidate
 * for the next one, or the previous one. Returns 1 when the packet belongs to the (new)
 * current session. Cold: the current session's packets never come here. */
int uf_arb_other_session(struct uf_arb *a, const struct uf_frame *pkt, uint64_t rx_ns, unsigned src)
{
	if (!a->have_session) {
		uf_arb_session_start(a, pkt->session, 0); /* nothing to protect yet */
		uf_arb_stream_mark(a, pkt);
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
	/* The old session is over: whatever it still missed is lost, up to its end when every
	 * live line announced one (a held end of session beyond `high`: flagged, not silent). */
	uint64_t last = a->high;
	if (a->eos_seen && a->eos_seq > last)
		last = a->eos_seq;
	uf_arb_end_stream(a, last); /* what it received is delivered, what it missed lost */
	uf_arb_queue_clear(a);
	memcpy(a->prev_session, a->session, UF_FRAME_SESSION_LEN);
	a->have_prev = 1;
	if (a->cb.new_session)
		a->cb.new_session(a->cb.ctx, pkt->session);
	uf_arb_session_start(a, pkt->session, 0);
	uf_arb_stream_mark(a, pkt);
	return 1;

out_drop:
	uf_stat_add(&a->st->lines[src].wrong_session, 1);
	return 0;
}

/* 1 while line `src`, which showed a newer stream and went on with it, may still wait for
 * the live lines that show it not yet: the lines run apart (a batch of one socket's
 * datagrams is handled before the other's, or the paths differ), and their copies of the
 * current stream may still fill its holes, or carry its tail past what this line showed (a
 * tail this line lost opens no hole: ending the stream then would lose it without a flag).
 * Ending the stream drops them. While the hold has room, and at most wait_ns after the
 * start (receive times). A line that lost every start shows the newer stream by send time
 * (uf_arb_restart), so it is not waited for. */
static int uf_arb_restart_may_wait(const struct uf_arb *a, unsigned src, uint64_t rx_ns)
{
	return a->rs[src].n < UF_ARB_RESTART_HOLD &&
	       !(rx_ns > a->restart_rx[src] && rx_ns - a->restart_rx[src] >= a->wait_ns);
}

/* Keeps a copy of a newer stream's data packet of line `src` until that stream starts
 * (uf_arb_restart_replay). Returns 0 when it cannot (not data, or the hold is full). */
static int uf_arb_restart_hold(struct uf_arb *a, const struct uf_frame *pkt, uint64_t rx_ns,
                               unsigned src)
{
	struct uf_arb_hold *h = &a->rs[src];
	if (pkt->kind != UF_FRAME_DATA || pkt->len > a->slot_size || h->n >= UF_ARB_RESTART_HOLD)
		return 0;
	memcpy(h->mem + (size_t)h->n * a->slot_size, pkt->buf, pkt->len);
	h->len[h->n] = (uint32_t)pkt->len;
	h->rx_ns[h->n] = rx_ns;
	h->n++;
	return 1;
}

/* The new stream started: the packets the lines in `lines` (a bit each) held of it are
 * handled now, like any packet of the stream, before the one that started it. */
static void uf_arb_restart_replay(struct uf_arb *a, unsigned lines)
{
	uint64_t sent = a->pkt_sent; /* the packet at hand's, which the caller goes on with */
	a->replaying = 1;            /* they are this stream's: no restart rule, no nesting */
	for (int l = 0; l < a->nlines; l++) {
		struct uf_arb_hold *h = &a->rs[l];
		uint32_t n = (lines >> l) & 1 ? h->n : 0;
		h->n = 0;
		for (uint32_t k = 0; k < n; k++) {
			struct uf_frame f;
			const uint8_t *b = h->mem + (size_t)k * a->slot_size;
			if (a->framing->open(&f, b, h->len[k]) == UF_FRAME_DATA)
				uf_arb_packet(a, &f, h->rx_ns[k], (unsigned)l);
		}
	}
	a->replaying = 0;
	a->pkt_sent = sent;
}

/* Line `src` shows a newer stream than the current one: a start sent at `sent`, or a
 * packet sent after another line's start at `sent` (it lost every start it carried). */
static void uf_arb_restart_mark(struct uf_arb *a, unsigned src, uint64_t sent, uint64_t rx_ns)
{
	a->restart_row[src] = 1;
	a->restart_sent[src] = sent;
	a->restart_cnt[src] = 0;
	a->restart_last[src] = sent;
	a->restart_next[src] = 0;
	a->restart_rx[src] = rx_ns;
	a->restart_any = 1;
	a->rs[src].n = 0;
}

/* The send time of the earliest newer start a line showed (0: none): the new stream's
 * start, before which everything is the old stream's. */
static uint64_t uf_arb_restart_first(const struct uf_arb *a)
{
	uint64_t first = 0;
	for (int l = 0; l < a->nlines; l++)
		if (a->restart_row[l] && (!first || a->restart_sent[l] < first))
			first = a->restart_sent[l];
	return first;
}

/* The newer stream the lines show replaces the current one: what the old stream received is
 * delivered, what it still missed lost, a RESET; then the packets the lines held of the new
 * stream. */
static void uf_arb_restart_start(struct uf_arb *a, const char *session)
{
	uint64_t sent = uf_arb_restart_first(a);
	unsigned held = 0;
	for (int l = 0; l < a->nlines; l++)
		if (a->restart_row[l])
			held |= 1u << l;
	uf_arb_end_stream(a, a->high);
	uf_arb_queue_clear(a);
	if (a->cb.new_session)
		a->cb.new_session(a->cb.ctx, session);
	/* The same session goes on: a line live a moment ago still is (a newer stream right
	 * after this one must wait for it too). */
	uf_arb_session_start(a, session, 1);
	a->stream_sent = sent;
	uf_arb_restart_replay(a, held);
}

/* A packet of the current session while a line shows a newer stream (restart_any), or at
 * sequence 1 whose framing says it starts the stream over (`restart`, decode/uf_frame.h).
 * Returns 0 when it is handled like any packet of the (possibly new) current stream, -1
 * when it belongs to a newer stream not corroborated yet (held, or dropped and counted as
 * wrong_session). Cold: sequence 1, and every packet while a newer stream waits. */
int uf_arb_restart(struct uf_arb *a, const struct uf_frame *pkt, uint64_t rx_ns, unsigned src)
{
	uint64_t sent = 0;
	if (a->replaying)
		return 0;
	if (pkt->seq == 1 && a->framing->restart(pkt, &sent)) {
		if (a->high <= 1 || sent <= a->stream_sent || sent <= a->stream_newest) {
			/* The current stream's own start (nothing past it yet), or a late copy
			 * of it. A stream starts with heartbeats at 1 and then its first data,
			 * also at 1: a line that lost that data goes on past it, and the other
			 * line's copy, handled after, was sent after the stream's start but
			 * before what took the stream further. A newer stream's start is sent
			 * after every packet of the current one. */
			if (a->high <= 1 && sent > a->stream_sent)
				a->stream_sent = sent;
			return 0;
		}
		if (!a->restart_row[src]) {
			uf_arb_restart_mark(a, src, sent, rx_ns);
		} else if (a->restart_cnt[src] && sent > a->restart_last[src]) {
			/* A start after data of the stream its line holds: a newer one still (a
			 * short stream went by while the other line lagged). The one held starts
			 * now, then this packet is judged against it. */
			goto out_newer;
		} /* else a later heartbeat at 1 of the stream it holds */
	} else if (a->restart_row[src]) {
		/* Its line goes on with the newer stream: by send time when the framing gives
		 * one (a line that lost a packet goes on too), else each packet where the one
		 * before ended. Otherwise an old packet of the line (reordered): the old
		 * stream's. */
		if (a->pkt_sent ? a->pkt_sent < a->restart_sent[src]
		                : pkt->seq != a->restart_next[src])
			return 0;
		if (pkt->kind == UF_FRAME_DATA && a->restart_cnt[src] &&
		    a->pkt_sent > a->restart_last[src] && pkt->seq < a->restart_next[src])
			goto out_newer; /* sent later, sequence back: a newer stream (its start
			                   lost) */
	} else {
		/* A line that shows no start: a packet it sent after another line's start is
		 * the newer stream's (the line lost every start it carried). With no line showing
		 * one (both lost every start), a packet that repeats delivered sequences but was
		 * sent after the newest one of the stream is the first sign: its send time stands
		 * for the start. The new stream then begins with a hole (a GAP), never with its
		 * messages taken for the old stream's. */
		uint64_t first = uf_arb_restart_first(a);
		if (!first && uf_arb_sent_too_late(a, pkt))
			first = a->pkt_sent;
		if (!a->pkt_sent || !first || a->pkt_sent < first)
			return 0;
		uf_arb_restart_mark(a, src, first, rx_ns);
	}
	if (pkt->seq >= a->restart_next[src])
		a->restart_next[src] = uf_frame_next_seq(pkt);
	a->restart_cnt[src] += pkt->kind == UF_FRAME_DATA;
	if (a->pkt_sent > a->restart_last[src])
		a->restart_last[src] = a->pkt_sent; /* a copy or a reordered one is no newer */
	/* Every live line shows it, or its line went on with it for jump_confirm data packets
	 * (as a jump is corroborated: the other line may have lost every start, and has no
	 * send times to show it went on) and need not wait for a lagging line. */
	int every = 1;
	for (int l = 0; l < a->nlines; l++)
		if (!a->restart_row[l] && uf_arb_live(a, l, rx_ns))
			every = 0;
	if (!every &&
	    (a->restart_cnt[src] < a->p.jump_confirm || uf_arb_restart_may_wait(a, src, rx_ns)))
		goto out_hold;
	uf_arb_restart_start(a, pkt->session);
	return 0;

out_newer:
	/* Once: after the start no line holds anything (restart_any is 0). */
	uf_arb_restart_start(a, pkt->session);
	return uf_arb_restart(a, pkt, rx_ns, src);

out_hold:
	if (!uf_arb_restart_hold(a, pkt, rx_ns, src))
		uf_stat_add(&a->st->lines[src].wrong_session, 1);
	return -1;
}

int uf_arb_stream_rules(struct uf_arb *a, const struct uf_frame *pkt, uint64_t rx_ns, unsigned src)
{
	if (a->stream_sent && uf_arb_older_stream(a, src))
		return 1; /* the tail of a stream the current one replaced */
	if ((pkt->seq == 1 || a->restart_any || (a->has_sent && uf_arb_sent_too_late(a, pkt))) &&
	    uf_arb_restart(a, pkt, rx_ns, src) < 0)
		return 1; /* a new stream not corroborated yet */
	return 0;
}

/* The packet at hand's send time into pkt_sent (0 when its framing does not say): read once
 * per packet, for the old stream's tail (uf_arb_older_stream) and the newest packet that took
 * the stream further (stream_newest, uf_arb_restart). */
void uf_arb_sent_note(struct uf_arb *a, const struct uf_frame *pkt)
{
	uint64_t sent;
	a->pkt_sent = a->framing->sent(pkt, &sent) ? sent : 0;
}

/* 1 when a packet of the current session was sent before the current stream's start
 * (`sent`, decode/uf_frame.h): the old stream's tail from a line that showed the restart
 * later than the one that started the new stream (a batch of one socket's datagrams is
 * handled before the other's). Its sequences are the old stream's, which the new one
 * reuses: taken as the new stream's, it would open a hole nothing fills, or fill one with
 * the wrong messages. Dropped, counted as wrong_session of its line. */
int uf_arb_older_stream(struct uf_arb *a, unsigned src)
{
	if (!a->pkt_sent || a->pkt_sent >= a->stream_sent) /* 0: no send times */
		return 0;
	uf_stat_add(&a->st->lines[src].wrong_session, 1);
	return 1;
}

/* ---- quarantine of jumps nothing corroborates yet ---- */

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
	uf_stat_add(&a->st->quarantined, 1);
}

/* Line `l`'s held jump is corroborated: hand its packets to arbitration, in arrival order. */
static void uf_arb_quar_release(struct uf_arb *a, unsigned l)
{
	struct uf_arb_quar *q = &a->q[l];
	uint32_t n = q->n;
	q->n = 0;
	a->nquar--;
	uf_stat_add(&a->st->quarantine_confirmed, 1);
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
void uf_arb_quarantine(struct uf_arb *a, const struct uf_frame *pkt, uint64_t rx_ns, unsigned src)
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
void uf_arb_quar_recheck(struct uf_arb *a, unsigned src)
{
	for (int l = 0; l < a->nlines && a->nquar; l++)
		if (a->q[l].n && a->q[l].first <= uf_arb_limit(a))
			uf_arb_quar_release(a, (unsigned)l);
	if (src < UF_CFG_MAX_LINES)
		uf_arb_quar_drop(a, src);
}

/* ---- heartbeats and ends of session announcing what nothing else showed (issue 23
 * items 6 and 7) ---- */

/* Line `src`'s held claim is dropped (its line did not continue it): an end of session it
 * came with is void too. */
static void uf_arb_claim_drop(struct uf_arb *a, unsigned src)
{
	uint64_t c = a->hb_claim[src];
	uf_stat_add(&a->st->heartbeats_dropped, 1);
	if (a->line_eos[src] == c) {
		a->line_eos[src] = 0;
		int left = 0;
		for (int l = 0; l < UF_CFG_MAX_LINES; l++)
			left |= a->line_eos[l] != 0;
		a->any_eos = left;
	}
}

/* A heartbeat or end of session of line `src` (current session, within max_jump) announcing
 * a sequence beyond `high`: messages no packet showed. Believed like data beyond max_jump is:
 * when another live line announced at least as far (believed up to where both did), or when
 * `src` announced it jump_confirm times in a row (heartbeats and ends of session alike);
 * until then it opens no hole, so a forged one in a quiet period cannot make the arbiter
 * ask for, then give up, the messages the exchange sends next. A held end of session still
 * counts as its line's announcement of the end (rule 2: the end needs every live line at one
 * sequence anyway); it goes when its claim is dropped.
 * Returns 1 when `pkt` is believed now (the caller accepts it); 0 when held or handled. */
int uf_arb_hb_believed(struct uf_arb *a, const struct uf_frame *pkt, uint64_t rx_ns, unsigned src)
{
	uint64_t seq = pkt->seq;
	if (a->hb_claim[src] == seq) {
		if (a->hb_row[src] < UINT32_MAX)
			a->hb_row[src]++;
	} else {
		if (a->hb_claim[src] > a->high)
			uf_arb_claim_drop(a, src); /* not continued in a row */
		a->hb_claim[src] = seq;
		a->hb_row[src] = 1;
	}
	if (a->hb_row[src] >= a->p.jump_confirm) {
		a->hb_claim[src] = 0;
		uf_stat_add(&a->st->heartbeats_confirmed, 1);
		return 1;
	}
	/* The furthest sequence this line and another live line both announced. */
	uint64_t both = 0;
	for (int l = 0; l < a->nlines; l++) {
		uint64_t c = a->hb_claim[l];
		if ((unsigned)l == src || c <= a->high || !uf_arb_live(a, l, rx_ns))
			continue;
		if (c > seq)
			c = seq;
		if (c > both)
			both = c;
	}
	if (both == seq) {
		a->hb_claim[src] = 0;
		uf_stat_add(&a->st->heartbeats_confirmed, 1);
		return 1;
	}
	if (pkt->kind == UF_FRAME_END) {
		uf_stat_add(&a->st->end_of_session_held, 1);
		a->line_eos[src] = seq;
		a->any_eos = 1;
		uf_arb_eos_update(a, rx_ns);
	} else {
		uf_stat_add(&a->st->heartbeats_held, 1);
	}
	if (!both) {
		if (pkt->kind == UF_FRAME_HEARTBEAT)
			uf_stat_add(&a->st->lines[src].heartbeats, 1); /* received all the same */
		return 0;
	}
	/* Corroborated up to `both` only: that much is believed (as a heartbeat announcing it,
	 * counted there); the rest stays held. */
	struct uf_frame part = *pkt;
	part.seq = both;
	part.kind = UF_FRAME_HEARTBEAT;
	uf_stat_add(&a->st->heartbeats_confirmed, 1);
	uf_arb_accept(a, &part, rx_ns, src);
	return 0;
}

/* After a packet of line `src` was accepted: a claim the stream reached is settled; one still
 * beyond `high` was not continued by its line (which went on below it) and is dropped. */
void uf_arb_hb_settle(struct uf_arb *a, unsigned src)
{
	if (a->hb_claim[src] > a->high)
		uf_arb_claim_drop(a, src);
	a->hb_claim[src] = 0;
	a->hb_row[src] = 0;
}
