/* The walk behind uf_consumer_snapshot_all(), for the local image (consumer_local.c) and the
 * remote one (nats/consumer_nats.c): one heap snapshot (too large for a caller's stack), every
 * id below `max` read by `get` (-ENOENT: no book there, skipped), each book handed to `fn`
 * until it returns non-zero. Internal to ring/. */
#ifndef UF_RING_BOOK_EACH_H
#define UF_RING_BOOK_EACH_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "ring/ufconsumer.h"

/* Returns 0, fn's first non-zero result, -ENOMEM, or get's first error other than -ENOENT. */
static inline int uf_book_each(uint32_t max,
                               int (*get)(void *src, uint32_t id, struct uf_book_snapshot *s),
                               void *src, int (*fn)(const struct uf_book_snapshot *, void *),
                               void *arg)
{
	struct uf_book_snapshot *s = malloc(sizeof(*s));
	int rc = 0;

	if (!s)
		return -ENOMEM;
	for (uint32_t id = 0; id < max; id++) {
		rc = get(src, id, s);
		if (rc == -ENOENT) {
			rc = 0;
			continue;
		}
		if (rc < 0)
			break;
		rc = fn(s, arg);
		if (rc != 0)
			break;
	}
	free(s);
	return rc;
}

#endif /* UF_RING_BOOK_EACH_H */
