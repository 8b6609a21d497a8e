/* The HTTP endpoints' connection guard: keeps room for a new client when the table is full by
 * evicting the connection that has been open the longest (issue 23 item 15: 300 slow clients
 * from 30 loopback addresses held every slot of the main and the probe port, and /health timed
 * out on both; the per-address caps do not help when one local user has many addresses).
 *
 * A prober connects, sends one short request and is answered within the same poll turn, so
 * the oldest connection is the one that is idle or slow: a trickling client, or a keep-alive
 * connection nobody uses (which reconnects for free). Pure bookkeeping, no I/O: status.c calls
 * it from libmicrohttpd's one polling thread (no lock) and shuts down the fd it names. */
#ifndef UF_CONN_GUARD_H
#define UF_CONN_GUARD_H

#include <stdint.h>

#define UF_CONN_GUARD_MAX 256 /* connections tracked at most (the main port's limit) */

struct uf_conn_guard {
	uint32_t limit;                     /* connections kept before the oldest is evicted */
	uint32_t n;                         /* tracked now */
	int fd[UF_CONN_GUARD_MAX];          /* their sockets */
	uint64_t opened[UF_CONN_GUARD_MAX]; /* when each was accepted (any monotonic clock) */
	uint64_t evicted;                   /* connections evicted so far */
};

/* Empties the guard; `limit` (1..UF_CONN_GUARD_MAX, clamped) connections are kept. */
void uf_conn_guard_init(struct uf_conn_guard *g, uint32_t limit);

/* A connection is about to be accepted: returns the fd of the connection to evict first (the
 * oldest, counted in `evicted`; it stays tracked until uf_conn_guard_closed) when `limit` are
 * tracked already, else -1. */
int uf_conn_guard_admit(struct uf_conn_guard *g);

/* Connection `fd` was accepted at `now`. -ENOSPC when UF_CONN_GUARD_MAX are tracked. */
int uf_conn_guard_opened(struct uf_conn_guard *g, int fd, uint64_t now);

/* Connection `fd` closed (whoever closed it). */
void uf_conn_guard_closed(struct uf_conn_guard *g, int fd);

#endif /* UF_CONN_GUARD_H */
