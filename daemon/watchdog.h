/* Watchdog pings that mean "every feed thread is making progress", not merely "the main
 * thread is alive".
 *
 * The heartbeat of a feed thread is a count it already keeps: every pass of uf_feed_run's
 * loop adds one to exactly one of busy_polls (the poll found nothing) or batches (it found
 * packets), with every back end, and the loop comes back at least every 50 ms even without
 * traffic (epoll waits with a timeout; the others poll). Their sum therefore moves while the
 * thread runs, costs the hot path nothing new, and stops when the thread is stuck in a loop,
 * a lock or the kernel. (A change to the run loop must keep that one-count-per-pass
 * property: test_watchdog_feed checks it on a real, idle feed.)
 *
 * The daemon's main loop, every half watchdog period (uf_sd_watchdog_interval_us() / 2),
 * reads every feed's beats and asks uf_watchdog_decide whether to send WATCHDOG=1. When a
 * feed stops moving, the pings stop and systemd restarts the service after WatchdogSec
 * (WatchdogSignal=SIGABRT leaves a core of the stuck thread). */
#ifndef UF_WATCHDOG_H
#define UF_WATCHDOG_H

#include <stdint.h>

#include "common/uf_atomic.h"
#include "feed/uf_feed_stats.h"

/* Main thread: feed `st`'s heartbeat, read from the live counters (the feed thread writes
 * them; each load is single-copy atomic). */
static inline uint64_t uf_watchdog_beats(const struct uf_feed_stats *st)
{
	/* Relaxed: the count orders nothing; the reader only asks whether it moved. */
	return uf_load_relaxed_u64(&st->busy_polls) + uf_load_relaxed_u64(&st->batches);
}

/* The decision, pure: `prev[i]` is feed i's count at the previous check, `cur[i]` now.
 * `live[i]` is nonzero for a feed whose thread is supposed to run (a feed that stopped on
 * its own is the daemon's business to report, not a hang); `live` may be NULL (all live).
 * Returns 1 (ping) when every live feed's count changed, 0 (withhold the ping) otherwise,
 * and then sets *stuck to the first feed that did not move (when stuck is not NULL). With no
 * live feed there is nothing to vouch for beyond the main loop itself: returns 1. */
int uf_watchdog_decide(const uint64_t *prev, const uint64_t *cur, const uint8_t *live, unsigned n,
                       unsigned *stuck);

#endif /* UF_WATCHDOG_H */
