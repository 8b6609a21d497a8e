/* The consumer table's memory and its hand-over (producer side, internal to ring/).
 *
 * The table is a memfd sealed F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL: the one memory every
 * consumer writes, which nobody (a consumer holding a read-write fd included) can ever resize,
 * so no mapping of it can SIGBUS. A memfd has no path: a small thread, blocked in poll(),
 * answers every connection to uf.NAME/sock with a struct uf_ring_hello and the fd
 * (SCM_RIGHTS), and notes the peer's pid as the kernel gives it (SO_PEERCRED): the producer's
 * own record of who may hold a slot, since the slots' pid fields are consumer-written claims.
 * See docs/ring.md, "Trust boundary". */
#ifndef UF_RING_CTABLE_H
#define UF_RING_CTABLE_H

#include <stddef.h>
#include <stdint.h>

#include "ring/uf_ring_layout.h"

struct uf_ring_server;

/* Makes the sealed memfd of `size` bytes (allocated, zeroed, bound to `node` when >= 0) and
 * maps it read-write at *map; *fdp gets the fd. Returns 0 or -errno with a reason in err. */
int uf_ring_table_make(const char *name, uint64_t size, int node, void **map, int *fdp, char *err,
                       size_t errlen);

/* Binds the socket at `path` (mode `mode`, group `gid` unless < 0), starts the thread that
 * hands `ct_fd` and `hello` to every consumer. Takes ct_fd over on success (closed by stop).
 * Returns 0 or -errno with a reason in err. */
int uf_ring_server_start(struct uf_ring_server **out, const char *name, const char *path,
                         uint32_t mode, int64_t gid, int ct_fd, const struct uf_ring_hello *hello,
                         char *err, size_t errlen);

/* Stops the thread (when this process started it: a forked child only frees its copy),
 * closes the socket and the table fd. The socket's name stays (the caller owns names). */
void uf_ring_server_stop(struct uf_ring_server *s);

/* 1 when process `pid` with /proc start time `start` (0: unknown) was handed the table. */
int uf_ring_server_handed(struct uf_ring_server *s, uint32_t pid, uint64_t start);

/* Connections closed unanswered because their user had too many handouts unread (ctable.c:
 * UF_RING_UNREAD_PER_UID), and handouts the kernel refused. Any thread. */
void uf_ring_server_counts(struct uf_ring_server *s, uint64_t *refused, uint64_t *send_errors);

#endif /* UF_RING_CTABLE_H */
