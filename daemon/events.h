/* Operational events in the log: gaps, recoveries, sessions, silent lines, consumers.
 *
 * The feed threads never log (no I/O on the hot path): they only move counters and gauges
 * (feed/uf_feed_stats.h). The daemon's main loop takes a status snapshot once a tick and
 * hands it here; uf_events_tick diffs it against the previous one and writes one line per
 * change, each kind through its own token bucket (daemon/log.h uf_log_limited), so a feed
 * that gaps a thousand times a second costs the log a few lines a minute, and the next line
 * that passes says how many were suppressed.
 *
 * Kinds and priorities: unrecovered gaps (warning), recoveries (info), session start and end
 * (info), a line silent during the session (warning) and back (info), consumers attached,
 * detached (info), lapped (warning), reaped (info). Main loop thread only. */
#ifndef UF_EVENTS_H
#define UF_EVENTS_H

#include <stdint.h>

#include "daemon/log.h"
#include "daemon/status_render.h"

enum uf_event_kind {
	UF_EV_GAP = 0,  /* gaps given up */
	UF_EV_RECOVERY, /* gaps filled (by the other line or re-request) */
	UF_EV_SESSION,  /* session started / ended */
	UF_EV_SILENT,   /* line silent / back */
	UF_EV_CONSUMER, /* consumer attached / detached / lapped / reaped */
	UF_EV_COUNT,
};

#define UF_EVENTS_BURST   5  /* lines of one kind at once */
#define UF_EVENTS_PER_MIN 10 /* then this many a minute */

/* What the previous tick saw of one feed. */
struct uf_events_feed {
	uint64_t gaps_unrecovered, messages_unrecovered, gaps, gaps_filled_by_line;
	uint64_t recovered_messages, sessions, end_of_session;
	int silent[UF_CFG_MAX_LINES]; /* line reported silent */
	int nconsumers;
	struct {
		uint32_t slot;
		int32_t pid;
		uint64_t laps, lost;
		char tag[16];
	} consumers[UF_STATUS_MAX_CONSUMERS];
};

struct uf_events {
	struct uf_log_limit limit[UF_EV_COUNT]; /* one bucket per kind */
	struct uf_events_feed feeds[UF_CFG_MAX_FEEDS];
};

/* Zeroes `ev` and sets the buckets (UF_EVENTS_BURST, UF_EVENTS_PER_MIN). */
void uf_events_init(struct uf_events *ev);

/* Diffs `snap` against the previous tick and logs the changes; `now_ns` is CLOCK_MONOTONIC
 * (the buckets' clock). The first call diffs against zero: everything counted since the
 * start (sessions, gaps, consumers that attached) is news. */
void uf_events_tick(struct uf_events *ev, const struct uf_status_snapshot *snap, uint64_t now_ns);

/* `n` consumer slots of feed `feed` were freed because their processes had exited. */
void uf_events_reaped(struct uf_events *ev, const char *feed, int n, uint64_t now_ns);

#endif /* UF_EVENTS_H */
