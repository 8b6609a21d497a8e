/* Operational events: snapshot diffs -> rate-limited log lines. See events.h. */
#include "daemon/events.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

void uf_events_init(struct uf_events *ev)
{
	memset(ev, 0, sizeof(*ev));
	for (int k = 0; k < UF_EV_COUNT; k++) {
		ev->limit[k].burst = UF_EVENTS_BURST;
		ev->limit[k].per_min = UF_EVENTS_PER_MIN;
	}
}

static const char *trimmed_session(const struct uf_status_feed *f, char *buf, size_t len)
{
	size_t n;
	snprintf(buf, len, "%.15s", f->stats.session);
	n = strlen(buf);
	while (n && buf[n - 1] == ' ')
		buf[--n] = '\0';
	return buf;
}

static void feed_counters(struct uf_events *ev, const struct uf_status_feed *f,
                          struct uf_events_feed *p, uint64_t now)
{
	const struct uf_feed_stats *st = &f->stats;
	char sess[24];

	if (st->sessions > p->sessions)
		uf_log_limited(&ev->limit[UF_EV_SESSION], now, UF_LOG_INFO,
		               "feed %s: session %s started (%" PRIu64 " session%s so far)",
		               f->name, trimmed_session(f, sess, sizeof(sess)), st->sessions,
		               st->sessions == 1 ? "" : "s");
	if (st->end_of_session > p->end_of_session)
		uf_log_limited(&ev->limit[UF_EV_SESSION], now, UF_LOG_INFO,
		               "feed %s: end of session %s reached", f->name,
		               trimmed_session(f, sess, sizeof(sess)));
	if (st->gaps_unrecovered > p->gaps_unrecovered)
		uf_log_limited(&ev->limit[UF_EV_GAP], now, UF_LOG_WARN,
		               "feed %s: %" PRIu64 " gap%s given up, %" PRIu64
		               " messages lost (gap markers published, %" PRIu64 " books stale)",
		               f->name, st->gaps_unrecovered - p->gaps_unrecovered,
		               st->gaps_unrecovered - p->gaps_unrecovered == 1 ? "" : "s",
		               st->messages_unrecovered - p->messages_unrecovered, st->books_stale);
	uint64_t filled = st->gaps_filled_by_line - p->gaps_filled_by_line;
	uint64_t rec = st->recovered_messages - p->recovered_messages;
	if (filled || rec)
		uf_log_limited(&ev->limit[UF_EV_RECOVERY], now, UF_LOG_INFO,
		               "feed %s: recovered: %" PRIu64
		               " gap%s filled by the other line, %" PRIu64
		               " messages by re-request (%" PRIu64 " gaps detected in all)",
		               f->name, filled, filled == 1 ? "" : "s", rec, st->gaps);
	p->gaps_unrecovered = st->gaps_unrecovered;
	p->messages_unrecovered = st->messages_unrecovered;
	p->gaps = st->gaps;
	p->gaps_filled_by_line = st->gaps_filled_by_line;
	p->recovered_messages = st->recovered_messages;
	p->sessions = st->sessions;
	p->end_of_session = st->end_of_session;
}

static void feed_lines(struct uf_events *ev, const struct uf_status_snapshot *snap,
                       const struct uf_status_feed *f, struct uf_events_feed *p, uint64_t now)
{
	int nl = f->stats.nlines > UF_CFG_MAX_LINES ? UF_CFG_MAX_LINES : (int)f->stats.nlines;
	for (int l = 0; l < nl; l++) {
		uint64_t age;
		int s = uf_status_line_silent(f, l, snap->now_ns, snap->ready_silence_ns, &age);
		if (s && !p->silent[l]) {
			if (age == UINT64_MAX)
				uf_log_limited(&ev->limit[UF_EV_SILENT], now, UF_LOG_WARN,
				               "feed %s: line %s silent: no packet this session",
				               f->name, f->stats.line_names[l]);
			else
				uf_log_limited(&ev->limit[UF_EV_SILENT], now, UF_LOG_WARN,
				               "feed %s: line %s silent for %.1f s", f->name,
				               f->stats.line_names[l], (double)age / 1e9);
		} else if (!s && p->silent[l] && age <= snap->ready_silence_ns) {
			/* A packet arrived (not merely the session ending). */
			uf_log_limited(&ev->limit[UF_EV_SILENT], now, UF_LOG_INFO,
			               "feed %s: line %s back", f->name, f->stats.line_names[l]);
		}
		p->silent[l] = s;
	}
}

static void feed_consumers(struct uf_events *ev, const struct uf_status_feed *f,
                           struct uf_events_feed *p, uint64_t now)
{
	const struct uf_status_ring *r = &f->ring;
	int n = !r->present                               ? 0
	        : r->nconsumers < UF_STATUS_MAX_CONSUMERS ? r->nconsumers
	                                                  : UF_STATUS_MAX_CONSUMERS;
	/* Gone: in the previous table, not in this one (same slot and pid). */
	for (int j = 0; j < p->nconsumers; j++) {
		int found = 0;
		for (int i = 0; i < n && !found; i++)
			found = r->consumers[i].slot == p->consumers[j].slot &&
			        r->consumers[i].pid == p->consumers[j].pid;
		if (!found)
			uf_log_limited(&ev->limit[UF_EV_CONSUMER], now, UF_LOG_INFO,
			               "ring %s: consumer %s (pid %d, slot %u) detached", r->name,
			               p->consumers[j].tag, (int)p->consumers[j].pid,
			               p->consumers[j].slot);
	}
	for (int i = 0; i < n; i++) {
		const struct uf_status_consumer *c = &r->consumers[i];
		int j = 0;
		while (j < p->nconsumers &&
		       !(p->consumers[j].slot == c->slot && p->consumers[j].pid == c->pid))
			j++;
		if (j == p->nconsumers) {
			uf_log_limited(&ev->limit[UF_EV_CONSUMER], now, UF_LOG_INFO,
			               "ring %s: consumer %s (pid %d, slot %u) attached", r->name,
			               c->tag, (int)c->pid, c->slot);
		} else if (c->laps > p->consumers[j].laps) {
			uf_log_limited(&ev->limit[UF_EV_CONSUMER], now, UF_LOG_WARN,
			               "ring %s: consumer %s (pid %d, slot %u) lapped %" PRIu64
			               " time%s, %" PRIu64 " records lost",
			               r->name, c->tag, (int)c->pid, c->slot,
			               c->laps - p->consumers[j].laps,
			               c->laps - p->consumers[j].laps == 1 ? "" : "s",
			               c->lost - p->consumers[j].lost);
		}
	}
	p->nconsumers = n;
	for (int i = 0; i < n; i++) {
		p->consumers[i].slot = r->consumers[i].slot;
		p->consumers[i].pid = r->consumers[i].pid;
		p->consumers[i].laps = r->consumers[i].laps;
		p->consumers[i].lost = r->consumers[i].lost;
		memcpy(p->consumers[i].tag, r->consumers[i].tag, sizeof(p->consumers[i].tag));
		p->consumers[i].tag[sizeof(p->consumers[i].tag) - 1] = '\0';
	}
}

void uf_events_tick(struct uf_events *ev, const struct uf_status_snapshot *snap, uint64_t now_ns)
{
	int nf = snap->nfeeds < UF_CFG_MAX_FEEDS ? snap->nfeeds : UF_CFG_MAX_FEEDS;
	for (int i = 0; i < nf; i++) {
		const struct uf_status_feed *f = &snap->feeds[i];
		struct uf_events_feed *p = &ev->feeds[i];
		feed_counters(ev, f, p, now_ns);
		feed_lines(ev, snap, f, p, now_ns);
		/* The daemon created the ring: every consumer in it attached since the start. */
		feed_consumers(ev, f, p, now_ns);
	}
}

void uf_events_reaped(struct uf_events *ev, const char *feed, int n, uint64_t now_ns)
{
	uf_log_limited(&ev->limit[UF_EV_CONSUMER], now_ns, UF_LOG_INFO,
	               "feed %s: freed %d consumer slot%s of exited processes", feed, n,
	               n == 1 ? "" : "s");
}
