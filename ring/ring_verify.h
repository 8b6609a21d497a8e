/* What a consumer checks before it trusts a ring (internal to ring/, used by libufconsumer).
 * Memory and files another process made are input: a ring is mapped and indexed only after
 * its owner, its header and its image header passed these checks, and the consumer table is
 * taken only from a socket whose peer is the ring's owner. See docs/ring.md. */
#ifndef UF_RING_VERIFY_H
#define UF_RING_VERIFY_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ring/uf_ring_layout.h"

/* 1 when `uid` may own a ring this process reads: root, this process's euid, `extra` (when
 * not 0) or $UF_RING_OWNER (a uid or a user name). */
int uf_ring_verify_owner(uid_t uid, uint32_t extra);

/* NULL when every field of the data header `h` is sane for a file of `size` bytes named
 * `name` (capacity, offsets, sizes: overflow-safe), else what is wrong. */
const char *uf_ring_verify_header(const struct uf_ring_hdr *h, uint64_t size, const char *name);

/* NULL when the image header `ih` is sane with `room` bytes from it to the end of the file. */
const char *uf_ring_verify_image(const struct uf_image_hdr *ih, uint64_t room);

/* Connects to <dir>/uf.<name>/sock, checks that the peer runs as `owner`, receives `hello`
 * and the table's fd (returned; extra fds are closed). -ECONNREFUSED / -ENOENT when nobody
 * listens, -EPERM for another peer, -EPROTO for a bad answer (reason in err). */
int uf_ring_table_fetch(const char *dir, const char *name, uid_t owner, struct uf_ring_hello *hello,
                        char *err, size_t errlen);

#endif /* UF_RING_VERIFY_H */
