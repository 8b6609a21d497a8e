/* Snapshot-then-stream: the live buffer and the merge state machine. See snapshot.h. It sees
 * the engine only through what uf_feed_snapshot_init links: the publish step (its records
 * and the flush, gap and reset hooks), the protocol, the arbiter and the feed's counters. */
#include "feed/snapshot.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "common/uf_time.h"
#include "feed/feed_log.h"

/* ---- the live buffer: one copy per sequence ---- */

int uf_snap_buf_init(struct uf_snap_buf *b, uint32_t cap, uint32_t slot_size)
{
	memset(b, 0, sizeof(*b));
	b->cap = cap;
	b->slot_size = slot_size;
	b->pkts = calloc(cap, sizeof(*b->pkts));
	b->order = calloc(cap, sizeof(*b->order));
	b->mem_len = (size_t)cap * slot_size;
	/* Reserved, not touched: pages fault in only while a snapshot actually buffers. */
	void *m = mmap(NULL, b->mem_len, PROT_READ | PROT_WRITE,
	               MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (!b->pkts || !b->order || m == MAP_FAILED) {
		if (m != MAP_FAILED)
			munmap(m, b->mem_len);
		uf_snap_buf_fini(b);
		return -ENOMEM;
	}
	b->mem = m;
	for (uint32_t i = 0; i < cap; i++)
		b->pkts[i].data = b->mem + (size_t)i * slot_size;
	return 0;
}

void uf_snap_buf_fini(struct uf_snap_buf *b)
{
	free(b->pkts);
	free(b->order);
	if (b->mem)
		munmap(b->mem, b->mem_len);
	b->pkts = NULL;
	b->order = NULL;
	b->mem = NULL;
}

void uf_snap_buf_clear(struct uf_snap_buf *b)
{
	b->n = 0;
	b->hi = 0;
	b->nholes = 0;
	b->holes_lost = 0;
	b->have_session = 0;
	b->hi_line[0] = b->hi_line[1] = 0;
	b->have_eos[0] = b->have_eos[1] = 0;
}

int uf_snap_buf_add_eos(struct uf_snap_buf *b, const struct uf_frame *pkt, uint64_t rx_ns,
                        unsigned src)
{
	if (pkt->kind != UF_FRAME_END || src >= 2 || pkt->len > UF_SNAP_EOS_MAX)
		return 0;
	memcpy(b->eos[src], pkt->buf, pkt->len);
	b->eos_len[src] = (uint32_t)pkt->len;
	b->eos_rx[src] = rx_ns;
	b->have_eos[src] = 1;
	return 1;
}

static void uf_snap_hole_add(struct uf_snap_buf *b, uint64_t first, uint64_t end)
{
	if (first >= end)
		return;
	if (b->nholes == UF_SNAP_HOLES) {
		b->holes_lost =
		    1; /* from now on anything below hi is kept: more copies, none lost */
		return;
	}
	b->holes[b->nholes].first = first;
	b->holes[b->nholes].end = end;
	b->nholes++;
}

/* Removes [seq, end) from the tracked holes (splitting one when it lies inside). */
static void uf_snap_holes_fill(struct uf_snap_buf *b, uint64_t seq, uint64_t end)
{
	for (uint32_t i = b->nholes; i-- > 0;) {
		uint64_t hf = b->holes[i].first, he = b->holes[i].end;
		if (end <= hf || seq >= he)
			continue;
		if (seq <= hf && end >= he) {
			b->holes[i] = b->holes[--b->nholes];
		} else if (seq <= hf) {
			b->holes[i].first = end;
		} else if (end >= he) {
			b->holes[i].end = seq;
		} else {
			b->holes[i].end = seq;
			uf_snap_hole_add(b, end, he);
		}
	}
}

/* 1 when [seq, end) holds a sequence no kept packet has. */
static int uf_snap_buf_needs(const struct uf_snap_buf *b, uint64_t seq, uint64_t end)
{
	if (b->n == 0 || end > b->hi || seq < b->lo || b->holes_lost)
		return 1;
	for (uint32_t i = 0; i < b->nholes; i++)
		if (seq < b->holes[i].end && end > b->holes[i].first)
			return 1;
	return 0;
}

int uf_snap_buf_add(struct uf_snap_buf *b, const struct uf_frame *pkt, uint64_t rx_ns, unsigned src)
{
	if (pkt->kind != UF_FRAME_DATA || pkt->count == 0)
		return 0;
	if (b->have_session && memcmp(b->session, pkt->session, UF_FRAME_SESSION_LEN) != 0)
		return 0;
	uint64_t seq = pkt->seq, end = pkt->seq + pkt->count;
	if (src < 2 && end > b->hi_line[src])
		b->hi_line[src] = end;
	if (!uf_snap_buf_needs(b, seq, end))
		return 0;
	if (b->n == b->cap)
		return -ENOSPC;
	if (pkt->len > b->slot_size)
		return -EMSGSIZE;
	struct uf_snap_pkt *p = &b->pkts[b->n++];
	p->seq = seq;
	p->end = end;
	p->rx_ns = rx_ns;
	p->len = (uint32_t)pkt->len;
	p->src = (uint16_t)src;
	memcpy(p->data, pkt->buf, pkt->len);
	if (b->n == 1) {
		b->lo = seq;
		b->hi = end;
		memcpy(b->session, pkt->session, UF_FRAME_SESSION_LEN);
		b->have_session = 1;
		return 1;
	}
	uf_snap_holes_fill(b, seq, end);
	if (seq < b->lo) { /* older than anything kept: what lies between is a hole too */
		uf_snap_hole_add(b, end, b->lo);
		b->lo = seq;
	}
	if (seq > b->hi)
		uf_snap_hole_add(b, b->hi, seq);
	if (end > b->hi)
		b->hi = end;
	return 1;
}

uint64_t uf_snap_buf_confirmed(const struct uf_snap_buf *b, int nlines)
{
	uint64_t run = b->hi, last = 0;
	if (b->n == 0)
		return 0;
	if (b->holes_lost)
		run = b->lo; /* the holes are not all known: continuation proves nothing */
	for (uint32_t i = 0; i < b->nholes; i++)
		if (b->holes[i].first < run)
			run = b->holes[i].first;
	/* the start of the run's last packet: what is below it is continued (a run of one
	 * packet continues nothing) */
	for (uint32_t i = 0; i < b->n; i++)
		if (b->pkts[i].seq < run && b->pkts[i].seq > b->lo && b->pkts[i].seq > last)
			last = b->pkts[i].seq;
	uint64_t both = b->hi_line[0] < b->hi_line[1] ? b->hi_line[0] : b->hi_line[1];
	if (nlines >= 2 && both > last)
		last = both;
	return last;
}

static int uf_snap_cmp(const void *x, const void *y, void *ctx)
{
	const struct uf_snap_buf *b = ctx;
	uint32_t i = *(const uint32_t *)x, j = *(const uint32_t *)y;
	uint64_t si = b->pkts[i].seq, sj = b->pkts[j].seq;
	if (si != sj)
		return si < sj ? -1 : 1;
	return i < j ? -1 : i > j;
}

void uf_snap_buf_sort(struct uf_snap_buf *b)
{
	for (uint32_t i = 0; i < b->n; i++)
		b->order[i] = i;
	qsort_r(b->order, b->n, sizeof(*b->order), uf_snap_cmp, b);
}

/* ---- the merge state machine (feed thread) ---- */

static const char *const uf_snap_why_names[UF_SNAP_WHY_COUNT] = {
    "none", "timeout", "server_done", "buffer_full", "lead",
    "lag",  "session", "hold",        "client",      "orders"};

const char *uf_snap_why_name(unsigned why)
{
	return why < UF_SNAP_WHY_COUNT ? uf_snap_why_names[why] : "?";
}

/* The sequence after the highest message the lines have shown: the arbiter's (its quarantine
 * holds jumps no other line confirmed) or what this attempt's buffer holds as confirmed (the
 * other line showed it too, or later packets continue it: uf_snap_buf_confirmed), so that a
 * lone forged packet cannot vouch for an End of Snapshot. 0 when none yet. */
static uint64_t uf_snap_shown(const struct uf_snapshot *s)
{
	uint64_t v = 0;
	if (s->arb->have_session)
		v = s->arb->high > s->arb->expected ? s->arb->high : s->arb->expected;
	uint64_t c = uf_snap_buf_confirmed(&s->buf, s->nlines);
	if (c > v)
		v = c;
	return v;
}

/* The session the lines carry now (this attempt's buffer first: the lines may have moved to
 * a new session while the snapshot loads), NULL when no line has shown one. */
static const char *uf_snap_live_session(const struct uf_snapshot *s)
{
	if (s->buf.have_session)
		return s->buf.session;
	return s->arb->have_session ? s->arb->session : NULL;
}

/* A callback does not accept what the server said: counted by kind, logged with the claim,
 * the connection dropped; the step fails the attempt (books stale, retry after back-off). */
static void uf_snap_refuse(struct uf_snapshot *s, enum uf_snap_why why, uint8_t packet,
                           uint64_t claim, uint64_t shown, const char *what)
{
	uint64_t *c = why == UF_SNAP_WHY_LEAD     ? &s->st->snapshot_refused_lead
	              : why == UF_SNAP_WHY_LAG    ? &s->st->snapshot_refused_lag
	              : why == UF_SNAP_WHY_ORDERS ? &s->st->snapshot_refused_orders
	                                          : &s->st->snapshot_refused_session;
	uf_stat_add(c, 1);
	uf_store_relaxed_u64(&s->st->snapshot_last_claim, claim);
	uf_store_relaxed_u64(&s->st->snapshot_last_shown, shown);
	uf_feed_log_warn("feed %s: snapshot refused (%s): %s", s->name, uf_snap_why_name(why),
	                 what);
	s->refuse = why;
	uf_soup_client_refuse(s->cl, -EPROTO, packet, uf_now_mono_ns());
}

/* Login Accepted: the server's session must be the live one (when a line has shown one). */
static int uf_snap_check_login(struct uf_snapshot *s, const struct uf_soup_client_event *ev)
{
	const char *live = uf_snap_live_session(s);
	char what[128];
	if (live && memcmp(live, ev->session, UF_FRAME_SESSION_LEN) != 0) {
		snprintf(what, sizeof(what),
		         "Login Accepted for session '%.10s', the lines carry '%.10s'", ev->session,
		         live);
		uf_snap_refuse(s, UF_SNAP_WHY_SESSION, 'A', 0, 0, what);
		return -1;
	}
	memcpy(s->login_session, ev->session, UF_FRAME_SESSION_LEN);
	s->shown_login = uf_snap_shown(s);
	return 0;
}

/* End of Snapshot N is a claim: "the books are those of messages 1 .. N-1". The lines say
 * how far the day has gone, and the claim is judged against them twice:
 *   - when 'G' arrives (uf_snap_check_end): the snapshot must be of the session the lines
 *     carry, and N must not lag what they had shown at login by more than max_lead (it
 *     would apply twice what the snapshot holds);
 *   - before the merge (uf_snap_confirm): the merge waits, up to max_hold_ms (live data is
 *     held meanwhile, /ready says so), for the lines to show N (they may be behind only
 *     because the feed was busy applying the snapshot); then N must not lead what they
 *     showed by more than max_lead (it would skip messages never seen, never re-requested),
 *     and the live messages buffered meanwhile must agree with the snapshot's orders
 *     (uf_snap_check_orders): a lie the lines overtook is caught there.
 * What an End of Snapshot off by a message or two could still skip or repeat where no
 * contradiction shows (a partial execution or cancel) is bracketed by uf_snap_bracket: the
 * books of the messages it cannot place are flagged stale at the merge. */
static int uf_snap_check_end(struct uf_snapshot *s, uint64_t n)
{
	const char *live = uf_snap_live_session(s);
	char what[192];
	if (live && memcmp(live, s->login_session, UF_FRAME_SESSION_LEN) != 0) {
		snprintf(what, sizeof(what), "snapshot of session '%.10s', the lines carry '%.10s'",
		         s->login_session, live);
		uf_snap_refuse(s, UF_SNAP_WHY_SESSION, 'G', n, uf_snap_shown(s), what);
		return -1;
	}
	if (n == 0 || (s->shown_login > n && s->shown_login - n > s->max_lead)) {
		snprintf(
		    what, sizeof(what),
		    "End of Snapshot %llu is older than the lines at login (next %llu) by more "
		    "than max_lead %llu",
		    (unsigned long long)n, (unsigned long long)s->shown_login,
		    (unsigned long long)s->max_lead);
		uf_snap_refuse(s, UF_SNAP_WHY_LAG, 'G', n, s->shown_login, what);
		return -1;
	}
	return 0;
}

/* See uf_snap_check_end. Returns 1 confirmed (merge), 0 not yet (the lines have not shown N,
 * max_hold_ms since 'G' has not passed, the buffer has room), -1 refused (s->refuse set, counted,
 * logged). */
static int uf_snap_confirm(struct uf_snapshot *s, uint64_t now)
{
	uint64_t n = s->end_seq, shown = uf_snap_shown(s);
	char what[192];
	/* Wait (bounded) for the lines to show N: then every claim the orders check can judge
	 * is judged. Nothing to wait for before the day's first packet (N within max_lead). */
	int quiet = shown == 0 && n <= s->max_lead;
	uint64_t waited = now > s->ended_ns ? now - s->ended_ns : 0; /* 'G' came in this poll */
	if (n > shown && !quiet && waited < s->max_hold_ns && !s->overflow)
		return 0; /* (a full buffer cannot wait: judged now) */
	if (n > shown && n - shown > s->max_lead) {
		snprintf(what, sizeof(what),
		         "End of Snapshot %llu leads the lines (next %llu) by more than max_lead "
		         "%llu after %llu ms",
		         (unsigned long long)n, (unsigned long long)shown,
		         (unsigned long long)s->max_lead, (unsigned long long)(waited / 1000000u));
		uf_snap_refuse(s, UF_SNAP_WHY_LEAD, 'G', n, shown, what);
		return -1;
	}
	if (uf_snap_check_orders(s, n, what, sizeof(what)) < 0 ||
	    uf_snap_bracket(s, n, what, sizeof(what)) < 0) {
		uf_snap_refuse(s, UF_SNAP_WHY_ORDERS, 'G', n, shown, what);
		return -1;
	}
	return 1;
}

/* THE ONE PLACE where consumers are told that the books restart from nothing (a snapshot
 * follows): one UF_REC_RESET record (reason UF_RESET_SNAPSHOT) and the emptied image, in the
 * same publish step, exactly as a new session does it (pipeline.c, uf_feed_publish_reset). */
static void uf_snap_emit_reset(struct uf_snapshot *s)
{
	char session[UF_FRAME_SESSION_LEN];
	memcpy(session, s->arb->session, sizeof(session));
	s->step->reset(s->step->owner, UF_RESET_SNAPSHOT, session, 0);
}

/* One snapshot message, applied by the protocol entry into the publish step (its records
 * go out with the next flush of the step, like the live ones). */
static void uf_snap_on_message(void *ctx, uint64_t seq, const uint8_t *msg, size_t len)
{
	struct uf_snapshot *s = ctx;
	(void)seq;
	uf_stat_add(&s->st->snapshot_bytes, len);
	int rc = s->proto->snapshot_msg(s->step, msg, len);
	if (rc < 0) {
		s->step->msg_error(s->step->owner, (enum uf_step_err)(-rc - 1));
		return;
	}
	uf_stat_add(&s->st->snapshot_messages, 1);
	s->msgs++;
}

static void uf_snap_on_event(void *ctx, const struct uf_soup_client_event *ev)
{
	struct uf_snapshot *s = ctx;
	switch (ev->kind) {
	case UF_SOUP_EV_LOGIN_ACCEPTED:
		if (uf_snap_check_login(s, ev) < 0)
			break; /* refused before the books were touched */
		/* Every login is a fresh snapshot: what a broken connection delivered goes. */
		uf_snap_emit_reset(s);
		s->touched = 1;
		s->msgs = 0;
		break;
	case UF_SOUP_EV_END_OF_SNAPSHOT:
		if (uf_snap_check_end(s, ev->seq) < 0)
			break;
		s->ended = 1;
		s->end_seq = ev->seq;
		s->ended_ns = uf_now_mono_ns();
		break;
	case UF_SOUP_EV_DISCONNECTED: {
		/* Why, for the log and /status: which refusal, which packet (issue 23 item 3). */
		char pk[48] = "";
		uf_stat_add(&s->st->snapshot_connections_lost, 1);
		uf_store_relaxed_u64(&s->st->snapshot_last_disconnect,
		                     UF_SNAP_DISC(ev->err, ev->refusal, ev->packet));
		if (ev->packet >= 0x20 && ev->packet < 0x7f)
			snprintf(pk, sizeof(pk), ", at a '%c' packet", ev->packet);
		uf_feed_log_warn("feed %s: snapshot server: connection lost (%s%s%s%s)%s", s->name,
		                 strerror(-ev->err), ev->refusal ? ", refused: " : "",
		                 ev->refusal ? uf_soup_err_name(ev->refusal - 1u) : "", pk,
		                 s->refuse ? "" : "; retrying after the back-off");
		break;
	}
	default: /* rejected, end of session, logged out: the client says DONE */
		break;
	}
}

static void uf_snap_client_close(struct uf_snapshot *s)
{
	uf_soup_client_destroy(s->cl);
	s->cl = NULL;
}

/* Hands the buffered packets to the arbiter in sequence order. */
static void uf_snap_replay(struct uf_snapshot *s)
{
	struct uf_snap_buf *b = &s->buf;
	uf_snap_buf_sort(b);
	for (uint32_t i = 0; i < b->n; i++) {
		const struct uf_snap_pkt *p = &b->pkts[b->order[i]];
		struct uf_frame mp;
		/* Validated before it was kept: opening again only re-reads lengths. */
		if (s->proto->framing->open(&mp, p->data, p->len) == UF_FRAME_DATA)
			uf_arb_packet(s->arb, &mp, p->rx_ns, p->src);
	}
	for (unsigned l = 0; l < 2; l++) {
		struct uf_frame mp;
		if (b->have_eos[l] && s->proto->framing->open(&mp, b->eos[l], b->eos_len[l]) > 0)
			uf_arb_packet(s->arb, &mp, b->eos_rx[l], l);
	}
	uf_snap_buf_clear(b);
}

/* After an attempt that was a re-load of uncertain books ends, or a load flags some: one
 * more re-load while the bound allows, else the flagged books stay stale until the next
 * RESET (said once per run of re-loads). `flagged`: the books are flagged now. */
static void uf_snap_plan_reload(struct uf_snapshot *s, int flagged)
{
	s->reloading = 0;
	if (!flagged) {
		s->reloads = 0;
		s->reload = 0;
		return;
	}
	if (s->reloads < s->reload_max) {
		s->reload = 1;
		uf_feed_log_info("feed %s: loading a snapshot again in %u ms to rebuild the books "
		                 "flagged uncertain (re-load %u of %u)",
		                 s->name, UF_SNAP_RETRY_MIN_MS, s->reloads + 1, s->reload_max);
		return;
	}
	s->reload = 0;
	if (s->reload_max)
		uf_feed_log_warn("feed %s: %u re-loads did not place End of Snapshot exactly: the "
		                 "flagged books stay stale until the next RESET (new session or "
		                 "snapshot)",
		                 s->name, s->reloads);
	s->reloads = 0; /* a later load (a gap, a new day) gets its own re-loads */
}

static void uf_snap_start(struct uf_snapshot *s, uint64_t now, const char *why)
{
	struct uf_soup_client_cb cb = {uf_snap_on_message, uf_snap_on_event, s};
	int rc = uf_soup_client_create(&s->p, &cb, &s->cl);
	if (rc < 0) {
		uf_stat_add(&s->st->snapshot_failures, 1);
		uf_store_relaxed_u64(&s->st->snapshot_last_failure, UF_SNAP_WHY_CLIENT);
		s->retry_ns = now + (uint64_t)s->retry_ms * 1000000u;
		if (s->reloading) /* as an attempt that failed before touching the books */
			uf_snap_plan_reload(s, 1);
		return;
	}
	uf_feed_log_info("feed %s: loading a snapshot (%s)", s->name, why);
	uf_soup_client_start(s->cl, now);
	s->state = UF_SNAP_LOADING;
	s->started_ns = now;
	s->deadline_ns = now + s->timeout_ns;
	s->touched = s->ended = s->overflow = 0;
	s->refuse = UF_SNAP_WHY_NONE;
	s->shown_login = 0;
	s->msgs = 0;
	uf_snap_buf_clear(&s->buf);
	uf_store_relaxed_u64(&s->st->snapshot_in_progress, 1);
}

static void uf_snap_fail(struct uf_snapshot *s, uint64_t now, enum uf_snap_why why)
{
	uf_snap_client_close(s);
	s->step->flush(s->step->owner);
	uf_stat_add(&s->st->snapshot_failures, 1);
	uf_store_relaxed_u64(&s->st->snapshot_last_failure, why);
	uf_store_relaxed_u64(&s->st->snapshot_in_progress, 0);
	uf_feed_log_warn("feed %s: snapshot failed (%s); next attempt in %u ms", s->name,
	                 uf_snap_why_name(why), s->retry_ms);
	if (s->touched) {
		/* A partial or refused snapshot is in the books: empty them again. What the
		 * arbiter had delivered before is gone with them: say so (GAP, every book
		 * stale). */
		uf_snap_emit_reset(s);
		if (s->arb->have_session && s->arb->expected > 1)
			s->step->gap(s->step->owner, 1, s->arb->expected - 1);
		s->want = 1; /* the books are known wrong: try again after the back-off */
	} else if (s->reloading) {
		/* A re-load that never touched the books: they are still the last load's, its
		 * uncertain ones flagged; another re-load after the back-off, while allowed. */
		uf_snap_plan_reload(s, 1);
	}
	/* The stream goes on without a snapshot: recovery (or give-up) as if none existed. */
	s->state = UF_SNAP_IDLE;
	uf_snap_replay(s);
	s->retry_ns = now + (uint64_t)s->retry_ms * 1000000u;
	s->retry_ms =
	    s->retry_ms * 2 > UF_SNAP_RETRY_MAX_MS ? UF_SNAP_RETRY_MAX_MS : s->retry_ms * 2;
	s->unrecovered_seen = s->st->gaps_unrecovered; /* gaps of a failed attempt: retry_ns */
}

/* The books of the messages the orders could not place on either side of End of Snapshot
 * (uf_snap_bracket) are flagged stale, after the snapshot's records and before the live
 * stream: one UF_REC_STALE each (UF_STALE_SNAPSHOT). They stay stale until the books are
 * rebuilt (the next RESET: a new session, or a later snapshot: uf_snap_merge asks for one,
 * at most snapshot.reload_uncertain times in a row). Returns 1 when it flagged any. */
static int uf_snap_flag_uncertain(struct uf_snapshot *s)
{
	struct uf_pub_step *st = s->step;
	uint32_t n = s->unc_all ? 1 : s->nunc;
	if (n == 0)
		return 0;
	for (uint32_t i = 0; i < n; i++) {
		if (st->nrec + 1 > st->rec_cap)
			st->flush(st->owner);
		int k = uf_publish_doubt(st->pub, s->unc_all ? UF_INSTRUMENT_ALL : s->unc[i],
		                         UF_STALE_SNAPSHOT, s->unc_lo, 0, st->recs + st->nrec,
		                         st->rec_cap - st->nrec);
		if (k > 0)
			st->nrec += (size_t)k;
	}
	st->flush(st->owner);
	uf_stat_add(&s->st->snapshot_uncertain_books, n);
	uf_feed_log_warn("feed %s: End of Snapshot %llu confirmed only within [%llu, %llu] by the "
	                 "live orders: the books of the messages between flagged stale (%u%s)",
	                 s->name, (unsigned long long)s->end_seq, (unsigned long long)s->unc_lo,
	                 (unsigned long long)s->unc_hi, n, s->unc_all ? ": every book" : "");
	s->nunc = 0;
	s->unc_all = 0;
	return 1;
}

static void uf_snap_merge(struct uf_snapshot *s, uint64_t now)
{
	uf_snap_client_close(s);
	s->step->flush(s->step->owner);
	int flagged = uf_snap_flag_uncertain(s);
	uint64_t d = now - s->started_ns;
	uf_stat_add(&s->st->snapshots_loaded, 1);
	uf_stat_add(&s->st->snapshot_duration_ns, d);
	uf_store_relaxed_u64(&s->st->snapshot_last_duration_ns, d);
	uf_store_relaxed_u64(&s->st->snapshot_in_progress, 0);
	uf_feed_log_info("feed %s: snapshot loaded: %llu messages in %llu ms, stream continues at "
	                 "sequence %llu (%u live packets buffered)",
	                 s->name, (unsigned long long)s->msgs, (unsigned long long)(d / 1000000u),
	                 (unsigned long long)s->end_seq, s->buf.n);
	s->want = 0;
	uf_snap_plan_reload(s, flagged);
	s->retry_ms = UF_SNAP_RETRY_MIN_MS;
	s->retry_ns = now + UF_SNAP_RETRY_MIN_MS * 1000000ull; /* at most one a second */
	if (!s->buf.have_session && !s->arb->have_session) {
		s->state = UF_SNAP_WAIT_LIVE; /* no line has named the session yet */
		return;
	}
	s->state = UF_SNAP_IDLE;
	uf_arb_resync(s->arb, s->buf.have_session ? s->buf.session : NULL, s->end_seq);
	uf_snap_replay(s);
	s->unrecovered_seen = s->st->gaps_unrecovered;
}

/* snapshot_pending: 1 while an attempt runs (or waits for the first live packet) or one is
 * due because the books are known wrong (want) or flagged uncertain with a re-load left
 * (reload). What a reader polls to know the books are settled. Derived from state, want and
 * reload, which change only inside the three entry points that end with this
 * (uf_feed_snapshot_packet, _step, _run_start): no transition can leave it stale. */
static void uf_snap_note_pending(struct uf_snapshot *s)
{
	int p = s->state != UF_SNAP_IDLE || s->want || s->reload;
	uf_store_relaxed_u64(&s->st->snapshot_pending, (uint64_t)p);
}

/* uf_feed_snapshot_packet without the gauge. */
static int uf_snap_packet(struct uf_snapshot *s, const struct uf_frame *pkt, uint64_t rx_ns,
                          unsigned src)
{
	if (s->state == UF_SNAP_WAIT_LIVE) {
		if (src >= (unsigned)s->nlines)
			return 1; /* an answer to a request made before the snapshot: void */
		/* The first live packet confirms (or not) what the snapshot claimed. */
		uint64_t shown = pkt->seq + (pkt->kind == UF_FRAME_DATA ? pkt->count : 0);
		enum uf_snap_why why = UF_SNAP_WHY_NONE;
		if (memcmp(pkt->session, s->login_session, UF_FRAME_SESSION_LEN) != 0) {
			why = UF_SNAP_WHY_SESSION;
			uf_stat_add(&s->st->snapshot_refused_session, 1);
		} else if (s->end_seq > shown && s->end_seq - shown > s->max_lead) {
			why = UF_SNAP_WHY_LEAD;
			uf_stat_add(&s->st->snapshot_refused_lead, 1);
		}
		if (why) {
			uf_store_relaxed_u64(&s->st->snapshot_last_claim, s->end_seq);
			uf_store_relaxed_u64(&s->st->snapshot_last_shown, shown);
			uf_feed_log_warn("feed %s: snapshot refused (%s) by the first live packet "
			                 "(session '%.10s', next %llu; snapshot '%.10s', %llu)",
			                 s->name, uf_snap_why_name(why), pkt->session,
			                 (unsigned long long)shown, s->login_session,
			                 (unsigned long long)s->end_seq);
			uf_snap_fail(s, uf_now_mono_ns(), why); /* state IDLE: on to the arbiter */
			return 0;
		}
		s->state = UF_SNAP_IDLE;
		uf_arb_resync(s->arb, pkt->session, s->end_seq);
		return 0;
	}
	if (src >= (unsigned)s->nlines)
		return 1; /* answers for the old books: the snapshot replaces them */
	if (pkt->kind == UF_FRAME_END) {
		uf_snap_buf_add_eos(&s->buf, pkt, rx_ns, src);
		return 1; /* heartbeats: the lines send more after the merge */
	}
	int rc = uf_snap_buf_add(&s->buf, pkt, rx_ns, src);
	if (rc == 1)
		uf_stat_add(&s->st->snapshot_buffered_packets, 1);
	else if (rc == -ENOSPC)
		s->overflow = 1; /* the step gives the attempt up */
	return 1;
}

int uf_feed_snapshot_packet(struct uf_snapshot *s, const struct uf_frame *pkt, uint64_t rx_ns,
                            unsigned src)
{
	int rc = uf_snap_packet(s, pkt, rx_ns, src);
	uf_snap_note_pending(s);
	return rc;
}

/* uf_feed_snapshot_step without the gauge. */
static void uf_snap_step(struct uf_snapshot *s)
{
	uint64_t now = uf_now_mono_ns();
	if (s->state == UF_SNAP_LOADING) {
		enum uf_soup_client_state st = uf_soup_client_poll(s->cl, now);
		if (s->refuse)
			uf_snap_fail(s, now, s->refuse);
		else if (s->ended) { /* the client is done: the lines must confirm the claim */
			int c = uf_snap_confirm(s, now);
			if (c > 0)
				uf_snap_merge(s, now);
			else if (c < 0)
				uf_snap_fail(s, now, s->refuse);
		} else if (s->overflow)
			uf_snap_fail(s, now, UF_SNAP_WHY_BUFFER_FULL);
		else if (st == UF_SOUP_CL_DONE)
			uf_snap_fail(s, now, UF_SNAP_WHY_DONE);
		else if (now >= s->deadline_ns)
			uf_snap_fail(s, now, UF_SNAP_WHY_TIMEOUT);
		else if (st != UF_SOUP_CL_ACTIVE && now - s->started_ns >= s->max_hold_ns) {
			/* No working login after max_hold_ms (the server refuses, closes, does not
			 * answer): the live data held goes on now, not after timeout_ms. */
			uf_stat_add(&s->st->snapshot_hold_expired, 1);
			uf_snap_fail(s, now, UF_SNAP_WHY_HOLD);
		}
		return;
	}
	if (s->state != UF_SNAP_IDLE || now < s->retry_ns)
		return;
	if (s->want) {
		uf_snap_start(s, now, "retry");
		return;
	}
	if (s->reload) {
		s->reload = 0;
		s->reloading = 1;
		s->reloads++;
		uf_stat_add(&s->st->snapshot_reloads, 1);
		uf_snap_start(s, now, "re-load: books flagged uncertain");
		return;
	}
	if (s->st->gaps_unrecovered != s->unrecovered_seen) {
		s->unrecovered_seen = s->st->gaps_unrecovered;
		uf_snap_start(s, now, "books stale after an unrecovered gap");
		return;
	}
	if (uf_arb_gap_open(s->arb)) {
		uint64_t behind = s->arb->high - s->arb->expected;
		if (s->max_gap_messages && behind > s->max_gap_messages)
			uf_snap_start(s, now, "gap too large to re-request");
		else if (s->max_gap_age_ns && uf_arb_oldest_hole_ns(s->arb) &&
		         now - uf_arb_oldest_hole_ns(s->arb) > s->max_gap_age_ns)
			uf_snap_start(s, now, "gap too old to re-request");
	}
}

void uf_feed_snapshot_step(struct uf_snapshot *s)
{
	uf_snap_step(s);
	uf_snap_note_pending(s);
}

void uf_feed_snapshot_run_start(struct uf_snapshot *s)
{
	if (s->enabled && s->on_start)
		uf_snap_start(s, uf_now_mono_ns(), "start");
	uf_snap_note_pending(s);
}

int uf_feed_snapshot_init(struct uf_snapshot *s, const struct uf_feed_config *cfg,
                          const struct uf_proto *proto, struct uf_pub_step *step,
                          struct uf_arb *arb, struct uf_feed_stats *st)
{
	memset(s, 0, sizeof(*s));
	s->proto = proto;
	s->step = step;
	s->arb = arb;
	s->st = st;
	s->name = cfg->name;
	s->nlines = cfg->nlines;
	s->on_start = cfg->snapshot.on_start;
	if (!cfg->snapshot.enabled)
		return 0;
	if (!proto->snapshot_msg)
		return -ENOTSUP; /* the venue's protocol has no snapshot service */
	uf_soup_client_params_default(&s->p);
	s->p.server = cfg->snapshot.server;
	snprintf(s->p.username, sizeof(s->p.username), "%s", cfg->snapshot.username);
	snprintf(s->p.password, sizeof(s->p.password), "%s", cfg->snapshot.password);
	snprintf(s->p.session, sizeof(s->p.session), "%s", cfg->snapshot.session);
	s->p.seq = 1;
	s->p.glimpse = 1;
	s->p.resume = 0;
	uint32_t t = cfg->snapshot.timeout_ms; /* resolved: uf_feed_create */
	if (s->p.connect_timeout_ms > t)
		s->p.connect_timeout_ms = t;
	if (s->p.login_timeout_ms > t)
		s->p.login_timeout_ms = t;
	s->p.backoff_max_ms = 1000; /* the attempt's own deadline bounds the retries */
	s->timeout_ns = (uint64_t)t * 1000000u;
	s->max_gap_messages = cfg->snapshot.max_gap_messages;
	s->max_gap_age_ns = (uint64_t)cfg->snapshot.max_gap_age_ms * 1000000u;
	s->max_lead = cfg->snapshot.max_lead;
	s->max_hold_ns = (uint64_t)cfg->snapshot.max_hold_ms * 1000000u;
	s->reload_max = cfg->snapshot.reload_uncertain;
	s->retry_ms = UF_SNAP_RETRY_MIN_MS;
	int rc = uf_snap_buf_init(&s->buf, cfg->snapshot.buffer_packets, cfg->buffers.size);
	if (rc < 0)
		return rc;
	s->enabled = 1;
	return 0;
}

void uf_feed_snapshot_fini(struct uf_snapshot *s)
{
	uf_snap_client_close(s);
	uf_snap_buf_fini(&s->buf);
	free(s->unc);
	s->unc = NULL;
}
