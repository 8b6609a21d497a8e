/* ONE rule for every test that compares books after a GLIMPSE snapshot (test_feed_snapshot*,
 * test_feed_capture, test_daemon_journal): wait until the feed is settled (no load running, none
 * due: snapshot_pending 0), then no book may be stale unless the feed's re-loads of uncertain
 * books (snapshot.reload_uncertain) ran out. An honest load whose End of Snapshot the live
 * orders place only within a range flags books (docs/snapshot.md "Trust"); the feed then loads
 * again, and the next End almost always lands where nothing is uncertain. Only after the last
 * re-load may books stay flagged, and at most as many as the loads flagged. Self-contained:
 * an in-process feed is read from its counters, a daemon from its /status. */
#ifndef FT_SNAP_SETTLED_H
#define FT_SNAP_SETTLED_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/uf_atomic.h"
#include "common/uf_time.h"
#include "feed/uf_feed_stats.h"

/* What a settled feed said about its snapshots (from struct uf_feed_stats or /status). */
struct ft_snap_settle {
	uint64_t reloads;         /* snapshot_reloads */
	uint64_t uncertain_books; /* snapshot_uncertain_books */
	uint64_t reload_max;      /* the feed's snapshot.reload_uncertain */
};

/* Stale books a settled feed may show: 0, unless the re-loads ran out (reloads reached the
 * bound, or re-loads were off) and loads flagged books; then at most those. */
static inline uint64_t ft_snap_stale_allowed(const struct ft_snap_settle *s)
{
	if (s->reloads < s->reload_max)
		return 0; /* a re-load left: the last load ended certain, nothing flagged */
	return s->uncertain_books;
}

/* Checks `stale` books against the rule; prints why when it fails. 1 ok, 0 not. */
static inline int ft_snap_stale_ok(const struct ft_snap_settle *s, long long stale)
{
	uint64_t allowed = ft_snap_stale_allowed(s);
	if (stale)
		fprintf(stderr,
		        "%lld books stale after the snapshot settled: %llu re-loads of %llu, %llu "
		        "books flagged uncertain, %llu allowed\n",
		        stale, (unsigned long long)s->reloads, (unsigned long long)s->reload_max,
		        (unsigned long long)s->uncertain_books, (unsigned long long)allowed);
	return stale >= 0 && (uint64_t)stale <= allowed;
}

/* An in-process feed: waits (bounded by `ms`) until it loaded or gave up at least one
 * snapshot and none is running or due (snapshot_pending 0). Returns 0, or -1 on time out. */
static inline int ft_snap_wait_settled(const struct uf_feed_stats *st, int ms)
{
	uint64_t end = uf_now_mono_ns() + (uint64_t)ms * 1000000u;
	while (uf_load_relaxed_u64(&st->snapshots_loaded) +
	               uf_load_relaxed_u64(&st->snapshot_failures) ==
	           0 ||
	       uf_load_relaxed_u64(&st->snapshot_pending)) {
		if (uf_now_mono_ns() > end) {
			fprintf(stderr,
			        "waited %d ms for the snapshot to settle: %llu loaded, %llu "
			        "re-loads, pending %llu\n",
			        ms, (unsigned long long)uf_load_relaxed_u64(&st->snapshots_loaded),
			        (unsigned long long)uf_load_relaxed_u64(&st->snapshot_reloads),
			        (unsigned long long)uf_load_relaxed_u64(&st->snapshot_pending));
			return -1;
		}
		struct timespec ts = {0, 2000000};
		nanosleep(&ts, NULL);
	}
	return 0;
}

/* The rule's numbers from an in-process feed's counters. */
static inline struct ft_snap_settle ft_snap_settle_of(const struct uf_feed_stats *st,
                                                      uint32_t reload_max)
{
	struct ft_snap_settle s = {uf_load_relaxed_u64(&st->snapshot_reloads),
	                           uf_load_relaxed_u64(&st->snapshot_uncertain_books), reload_max};
	return s;
}

/* A feed counter of the first feed in a daemon's /status body ("name": value), or -1. */
static inline long long ft_snap_status_u64(const char *status, const char *name)
{
	char key[64];
	snprintf(key, sizeof(key), "\"%s\"", name);
	const char *p = status ? strstr(status, key) : NULL;
	if (!p)
		return -1;
	p += strlen(key);
	while (*p == ' ' || *p == ':')
		p++;
	return *p >= '0' && *p <= '9' ? strtoll(p, NULL, 10) : -1;
}

/* A daemon: polls `get` (its /status body, NULL when it could not be read) until the first
 * feed loaded or gave up a snapshot and none is running or due (bounded by `ms`); the rule's
 * numbers into *out (the daemon's snapshot.reload_uncertain: `reload_max`). 0, or -1 on time
 * out. */
static inline int ft_snap_wait_settled_status(const char *(*get)(void *ctx), void *ctx,
                                              uint32_t reload_max, int ms,
                                              struct ft_snap_settle *out)
{
	uint64_t end = uf_now_mono_ns() + (uint64_t)ms * 1000000u;
	for (;;) {
		const char *st = get(ctx);
		long long done = ft_snap_status_u64(st, "snapshots_loaded") +
		                 ft_snap_status_u64(st, "snapshot_failures");
		long long pending = ft_snap_status_u64(st, "snapshot_pending");
		if (done > 0 && pending == 0) {
			out->reloads = (uint64_t)ft_snap_status_u64(st, "snapshot_reloads");
			out->uncertain_books =
			    (uint64_t)ft_snap_status_u64(st, "snapshot_uncertain_books");
			out->reload_max = reload_max;
			return 0;
		}
		if (uf_now_mono_ns() > end) {
			fprintf(stderr,
			        "waited %d ms for the daemon's snapshot to settle: done %lld, "
			        "pending %lld\n",
			        ms, done, pending);
			return -1;
		}
		struct timespec ts = {0, 20000000};
		nanosleep(&ts, NULL);
	}
}

#endif /* FT_SNAP_SETTLED_H */
