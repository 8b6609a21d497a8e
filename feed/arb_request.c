/* The arbiter's re-request scheduling: holes waiting for the other line, requests in flight,
 * retries and deadlines, accepted answers, the timers (arbiter.h; arb_internal.h lists the
 * arbiter's files). */
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

/* 1 when a packet from the re-request socket answers a request: data of the current
 * session inside a range asked for recently. */
int uf_arb_answer_ok(const struct uf_arb *a, const struct uf_frame *pkt)
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

/* An accepted answer `pkt` that fills part of a hole tells how late the server answers: the
 * time since the first request covering it was sent. Learned as a decaying maximum (a slower
 * answer counts at once, a faster one an eighth of the difference), used by uf_arb_retry_ns:
 * a server 200 ms late was asked for every range 4 more times at a 50 ms timeout, and the
 * repeats held the request slots the next holes needed. Cold (answers only). */
void uf_arb_answer_learn(struct uf_arb *a, const struct uf_frame *pkt)
{
	uint64_t end = pkt->seq + pkt->count; /* no wrap: the caller checked */
	if (!uf_arb_holes_hit(a, pkt->seq, end))
		return; /* a repeat: its delay says nothing of the server's */
	uint64_t sent = UINT64_MAX;
	for (int i = 0; i < UF_ARB_REQ_HISTORY; i++)
		if (a->reqs[i].end && pkt->seq >= a->reqs[i].first && end <= a->reqs[i].end &&
		    a->reqs[i].sent_ns < sent)
			sent = a->reqs[i].sent_ns;
	uint64_t now = a->now();
	if (sent == UINT64_MAX || now < sent)
		return;
	a->answer_ns = now;
	uint64_t d = now - sent;
	if (d >= a->srv_delay_ns)
		a->srv_delay_ns = d;
	else
		a->srv_delay_ns -= (a->srv_delay_ns - d) / 8;
}

/* How long a requested range is not asked for again: the timeout, or longer when the server
 * was seen to answer later than that (its delay + 1/4), never longer than the tries' share of
 * a hole's life (a forged late answer cannot stop retries altogether). The request still
 * gives its max_in_flight slot back at the timeout. */
static uint64_t uf_arb_retry_ns(const struct uf_arb *a)
{
	uint64_t w = a->srv_delay_ns + a->srv_delay_ns / 4;
	if (w > a->deadline_ns)
		w = a->deadline_ns;
	return w > a->timeout_ns ? w : a->timeout_ns;
}

/* Records a requested range: answers inside it are accepted (uf_arb_answer_ok). */
static void uf_arb_req_remember(struct uf_arb *a, uint64_t first, uint64_t end, uint64_t now_ns)
{
	uint32_t i = a->nreqs++ % UF_ARB_REQ_HISTORY;
	a->reqs[i].first = first;
	a->reqs[i].end = end;
	a->reqs[i].sent_ns = now_ns;
}

/* Room for one more pending request: when the table is full, the oldest one without a slot
 * goes (its range may be asked for again a little early). */
static void uf_arb_pending_room(struct uf_arb *a)
{
	if (a->ninflight < UF_ARB_PENDING_MAX)
		return;
	uint32_t old = UINT32_MAX;
	for (uint32_t k = 0; k < a->ninflight; k++)
		if (!a->inflight[k].slot &&
		    (old == UINT32_MAX || a->inflight[k].sent_ns < a->inflight[old].sent_ns))
			old = k;
	if (old != UINT32_MAX) /* always: slots <= UF_ARB_MAX_IN_FLIGHT < the table */
		a->inflight[old] = a->inflight[--a->ninflight];
}

/* Sends one re-request for [first, end) and puts it in flight. A send failure counts as a
 * try: a dead server ends in a give-up, not a loop. */
static void uf_arb_request(struct uf_arb *a, uint64_t first, uint64_t end, uint64_t now_ns)
{
	uint8_t req[UF_FRAME_REQUEST_MAX];
	size_t len = a->framing->request_build(req, a->session, first, (uint32_t)(end - first));
	uf_arb_pending_room(a);
	a->inflight[a->ninflight++] = (struct uf_arb_req){first, end, now_ns, 1};
	a->nslots++;
	a->req_credit_ns -= a->min_interval_ns; /* uf_arb_rate_ok said it is there */
	a->rate_limited = 0;
	uf_arb_req_remember(a, first, end, now_ns);
	uf_stat_add(&a->st->rerequested_messages, end - first);
	ssize_t r =
	    sendto(a->fd, req, len, MSG_DONTWAIT, (struct sockaddr *)&a->server, sizeof(a->server));
	if (r == (ssize_t)len)
		uf_stat_add(&a->st->rerequests, 1);
}

/* The rate limit, as credit of time: it grows with time, one request per min_interval_ns, up
 * to max_in_flight requests (the burst the slots allow), starting at one; each request spends
 * one interval. So a tick sends as many requests as the time since the last ones pays for,
 * however far apart ticks come (spacing them one per tick sent fewer than max_requests_per_s
 * whenever ticks were rarer than that), and never more than max_requests_per_s over time.
 * Returns 1 when a request may go at `now_ns`. */
static int uf_arb_rate_ok(struct uf_arb *a, uint64_t now_ns)
{
	uint64_t cap = (uint64_t)a->max_in_flight * a->min_interval_ns;
	if (!a->credit_at_ns)
		a->req_credit_ns = a->min_interval_ns; /* the first request goes at once */
	else if (now_ns > a->credit_at_ns)
		a->req_credit_ns += now_ns - a->credit_at_ns;
	if (a->req_credit_ns > cap)
		a->req_credit_ns = cap;
	if (now_ns > a->credit_at_ns)
		a->credit_at_ns = now_ns;
	return a->req_credit_ns >= a->min_interval_ns;
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

/* 1 when a pending request covers part of hole `h`. */
static int uf_arb_requested(const struct uf_arb *a, const struct uf_arb_hole *h)
{
	for (uint32_t k = 0; k < a->ninflight; k++)
		if (a->inflight[k].first < h->end && a->inflight[k].end > h->first)
			return 1;
	return 0;
}

/* Pending requests: answered ones (no hole left in their range) leave; at timeout_ns an
 * unanswered one gives its slot back (rerequest_timeouts); after uf_arb_retry_ns it leaves,
 * and its range may be asked for again. */
static void uf_arb_reap(struct uf_arb *a, uint64_t now_ns)
{
	uint64_t retry = uf_arb_retry_ns(a);
	for (uint32_t k = 0; k < a->ninflight;) {
		struct uf_arb_req *r = &a->inflight[k];
		int open = uf_arb_holes_hit(a, r->first, r->end);
		uint64_t age = now_ns - r->sent_ns;
		if (open && r->slot && age >= a->timeout_ns) {
			r->slot = 0;
			a->nslots--;
			uf_stat_add(&a->st->rerequest_timeouts, 1);
		}
		if (open && age < retry) {
			k++;
			continue;
		}
		if (r->slot)
			a->nslots--;
		*r = a->inflight[--a->ninflight];
	}
}

/* Hole `h` reached its deadline while the server is answering (an answer filled a hole less
 * than a hole's life ago) and a request for its start is pending: its answer is due, so its
 * deadline moves to when that request will have waited uf_arb_retry_ns, never past the hard
 * cap. Returns 1 when it was pushed back (holes_extended). */
static int uf_arb_answer_due(struct uf_arb *a, struct uf_arb_hole *h, uint64_t now_ns)
{
	if (!a->answer_ns || now_ns - a->answer_ns >= uf_arb_life(a))
		return 0; /* nothing is arriving */
	uint64_t retry = uf_arb_retry_ns(a), due = 0;
	for (uint32_t k = 0; k < a->ninflight; k++) {
		const struct uf_arb_req *r = &a->inflight[k];
		if (r->first <= h->first && h->first < r->end && r->sent_ns + retry > due)
			due = r->sent_ns + retry;
	}
	uint64_t cap = h->opened_ns + UF_ARB_HARD_CAP(uf_arb_life(a));
	if (due > cap)
		due = cap;
	if (due <= now_ns)
		return 0;
	h->deadline_ns = due;
	uf_stat_add(&a->st->holes_extended, 1);
	return 1;
}

/* 1 when the hole at `expected` is over: its deadline passed (its life from its opening,
 * pushed back while answers fill it or are due), or (no server) its wait ended, or its last try
 * timed out. */
static int uf_arb_head_dead(struct uf_arb *a, uint64_t now_ns, int drained)
{
	struct uf_arb_hole *h = &a->holes[a->h0];
	if (now_ns >= h->deadline_ns && !uf_arb_answer_due(a, h, now_ns)) {
		uf_stat_add(&a->st->holes_expired, 1);
		return 1;
	}
	if (!a->recovery)
		return uf_arb_wait_done(a, h, now_ns, drained);
	return h->tries > a->retries && !uf_arb_requested(a, h);
}

/* First sequence of hole `h` that no pending request covers (h->end when none). */
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

/* Sends what the holes need, oldest first: within max_in_flight and the rate limit. Each
 * request asks for missing messages only: the part of one hole that no request in flight
 * covers, at most max_count messages (a larger hole gets consecutive chunks, all in flight
 * together). Holes are never joined into one request: what lies between them was received
 * (queued), and asking for it again made the server send it again (18 x the missing
 * messages at 20 % loss per line). A pending range is not asked for again before
 * uf_arb_retry_ns (the timeout, longer for a server seen answering later). A request that starts at
 * its hole's first sequence is one more try of it. */
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
		if (a->nslots >= a->max_in_flight) {
			if (!a->inflight_full) {
				a->inflight_full = 1;
				uf_stat_add(&a->st->rerequests_in_flight_full, 1);
			}
			return;
		}
		if (!uf_arb_rate_ok(a, now_ns)) {
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
		/* stop where a pending request starts */
		for (uint32_t k = 0; k < a->ninflight; k++)
			if (a->inflight[k].first > first && a->inflight[k].first < end)
				end = a->inflight[k].first;
		if (first == h->first)
			h->tries++;
		h->asked = 1;
		uf_arb_request(a, first, end, now_ns);
		if (end < h->end)
			i--; /* the rest of a large hole comes next */
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
