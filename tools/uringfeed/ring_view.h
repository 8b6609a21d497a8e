/* Read-only view of a ring for the status endpoint: the producer's header (sequence,
 * generation, state) and the consumer table (pid, position, lag per consumer), mapped
 * PROT_READ from the ring's shm files (ring/uf_ring_layout.h). The daemon uses it when the
 * feed engine does not hand out its struct uf_ring; it never writes and never registers as
 * a consumer, so nobody can tell it is looking. */
#ifndef UF_RING_VIEW_H
#define UF_RING_VIEW_H

#include <stddef.h>

#include "feed/status.h"

struct uf_ring_view {
	const void *hdr;   /* mapping of the data file's header lines, NULL when not open */
	size_t hdr_len;    /* bytes mapped there */
	const void *ct;    /* mapping of the consumer table */
	size_t ct_len;     /* bytes mapped there */
};

/* Maps ring `name` in `dir` (NULL: $UF_RING_DIR or /dev/shm). 0 or -errno. */
int uf_ring_view_open(struct uf_ring_view *v, const char *name, const char *dir);

/* Fills sequence, generation, closed and consumers of `out` (name/capacity untouched). */
void uf_ring_view_read(const struct uf_ring_view *v, struct uf_status_ring *out);

void uf_ring_view_close(struct uf_ring_view *v);

#endif /* UF_RING_VIEW_H */
