/* Watchdog pings that mean "every feed thread is making progress", not merely "the main
 * thread is alive".
 *
 * Each feed thread owns one struct uf_heartbeat and bumps it once per pass of its run loop
 * (every back end returns to the loop at least every 50 ms, even with no traffic: epoll waits
 * with a timeout, the others poll). The daemon's main loop, every half watchdog period
 * (uf_sd_watchdog_interval_us() / 2), reads every heartbeat and asks uf_watchdog_decide
 * whether to send WATCHDOG=1. A feed thread stuck in a loop, a lock or the kernel stops
 * moving its counter, the pings stop, and systemd restarts the service after WatchdogSec
 * (WatchdogSignal=SIGABRT leaves a core of the stuck thread). */
#ifndef UF_WATCHDOG_H
#define UF_WATCHDOG_H

#include <stdint.h>

#include "common/uf_atomic.h"

/* Written by one feed thread, read by the main thread. On its own cache line: the feed bumps
 * it on every loop pass, and sharing a line with anything the main thread writes would make
 * each bump a cache miss on the hot path. */
struct uf_heartbeat {
	_Alignas(64) uint64_t beats; /* loop passes so far; only its change matters (wraps) */
	uint8_t pad[56];             /* keeps the next heartbeat off this line */
};
_Static_assert(sizeof(struct uf_heartbeat) == 64, "one cache line per heartbeat");

/* Feed thread, once per loop pass: no syscall, no locked instruction (single writer). */
static inline void uf_heartbeat_beat(struct uf_heartbeat *hb)
{
	/* Relaxed: the count orders nothing; the reader only asks whether it moved. */
	uf_store_relaxed_u64(&hb->beats, hb->beats + 1);
}

/* Main thread: the current count. */
static inline uint64_t uf_heartbeat_read(const struct uf_heartbeat *hb)
{
	return uf_load_relaxed_u64(&hb->beats); /* relaxed: see uf_heartbeat_beat */
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
