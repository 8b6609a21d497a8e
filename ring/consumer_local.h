/* The local back end of libufconsumer: a ring in shared memory on this host, mapped read-only
 * (layout in ring/uf_ring_layout.h). Internal to ring/: consumer.c dispatches to it through
 * uf_consumer_local_ops (ring/consumer_backend.h).
 *
 * The read is here, inline, so that the public uf_consumer_read/next reach it directly (a
 * compare of the ops pointer, then a direct jump or call the compiler may inline) instead of
 * through the table: uf_consumer_next returns one record per call, and an indirect call per
 * record is what the back-end split must not add to the local ring's hot path. Everything
 * cold (attach, waits, laps, snapshots) is in consumer_local.c. */
#ifndef UF_CONSUMER_LOCAL_H
#define UF_CONSUMER_LOCAL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/uf_atomic.h"
#include "common/uf_compiler.h"
#include "common/uf_time.h"
#include "ring/consumer_backend.h"
#include "ring/ring_util.h"
#include "ring/uf_ring_layout.h"

#define UF_CONSUMER_IDLE_SEEN_EVERY 4096u /* polls between last-seen stamps */

struct uf_journal_reader;

struct uf_consumer_local {
	/* what the read path touches, together from a line-aligned start (80 bytes) */
	struct uf_consumer handle;     /* ops = &uf_consumer_local_ops; first member */
	const struct uf_ring_hdr *hdr; /* data file, read-only */
	const struct uf_record *slots; /* ring slots */
	struct uf_ring_cslot *slot;    /* our registration */
	uint64_t pos;                  /* next sequence to read */
	uint64_t mask;                 /* capacity - 1 */
	uint64_t capacity;             /* records */
	uint64_t first_seq;            /* the generation's first sequence (hdr->first_seq): the
	                                * slots never held anything before it; a position before
	                                * it is the journal's (a restarted producer continues
	                                * the day's sequence) */
	uint64_t received;             /* records returned */
	uint32_t idle;                 /* consecutive empty polls */
	uint32_t reads;                /* successful reads, for the last-seen stamp */
	/* cold: attach, waits, laps, snapshots, and the rest of the state */
	const struct uf_image_hdr *image; /* book image */
	struct uf_ring_ctable *ct;        /* consumer table, read-write (or a private stand-in
	                                   * when reading a closed ring unregistered) */
	uint32_t nslots;                  /* our copy of the table's slot count */
	uint32_t depth;                   /* our copies of the image geometry, checked at */
	uint32_t max_instruments;         /* attach: the mapping is never re-read for them */
	uid_t owner;                      /* uid owning the ring directory */
	int registered;                   /* 1 when ct is the producer's table */
	uint64_t generation;              /* of the mapped ring */
	uint64_t lost;                    /* records lost to laps */
	uint64_t laps;                    /* laps */
	int stale;                        /* 1 once a restart was seen */
	size_t data_size;                 /* bytes mapped at hdr */
	size_t ct_size;                   /* bytes mapped at ct */
	dev_t dev;                        /* identity of the mapped data file ... */
	ino_t ino;                        /* ... to notice a replacement */
	struct uf_consumer_lap lap;       /* last lap */
	struct uf_consumer_options opt;   /* as given at attach */
	char tag[16];                     /* copy of opt.tag */
	char dir[128];                    /* copy of the shm directory */
	char name[UF_RING_NAME_MAX];      /* ring name */
	char dir_path[256];               /* <dir>/uf.<name> */
	char data_path[300];              /* <dir>/uf.<name>/data */
	/* the journal (ring/journal_reader.h): open for UF_CONSUMER_START_JOURNAL or after a
	 * seek before the ring's oldest record; a position the ring no longer holds is then
	 * read from it (uf_consumer_local_behind) instead of being lost to a lap */
	struct uf_journal_reader *journal; /* NULL: none open */
	uint64_t jwait_seq;                /* position the journal did not hold yet ... */
	uint64_t jwait_since_ns;           /* ... since then (monotonic): the writer's grace */
};

_Static_assert(offsetof(struct uf_consumer_local, handle) == 0,
               "a uf_consumer_t * is cast to the local state: the handle comes first");

/* Nothing to read at l->pos: closed, restarted or just empty. Cold. */
int uf_consumer_local_empty(struct uf_consumer_local *l);

/* The reader was lapped at `from`: moves to the oldest safe record, records the lap.
 * Returns -EOVERFLOW. Cold. */
int uf_consumer_local_lapped(struct uf_consumer_local *l, uint64_t from);

/* The ring no longer holds l->pos: reads it from the journal when one is open (the records,
 * or -EOVERFLOW for a hole in it, or -EAGAIN while its writer has not written it yet),
 * else uf_consumer_local_lapped. Cold: a consumer behind the ring. */
int uf_consumer_local_behind(struct uf_consumer_local *l, struct uf_record *recs, size_t max,
                             uint64_t *first_seq);

/* uf_consumer_read on the local ring (the contract is in ufconsumer.h). No allocation, no
 * syscall: copies slots, then re-reads the claim to know none was rewritten meanwhile. */
static inline int uf_consumer_local_read(struct uf_consumer *c, struct uf_record *recs, size_t max,
                                         uint64_t *first_seq)
{
	struct uf_consumer_local *l = (struct uf_consumer_local *)c;
	uint64_t p = l->pos;
	uint64_t tail = uf_load_acquire_u64(&l->hdr->tail); /* slot contents after the tail */
	uint64_t n, claim;

	if (UF_UNLIKELY(p >= tail))
		return uf_consumer_local_empty(l);
	if (UF_UNLIKELY(tail - p > l->capacity || p < l->first_seq)) /* not in the ring */
		return uf_consumer_local_behind(l, recs, max, first_seq);
	n = tail - p;
	if (n > max)
		n = max;
	{
		/* locals: the stores to recs could alias *l for the compiler */
		const struct uf_record *slots = l->slots;
		uint64_t mask = l->mask;
		for (uint64_t i = 0; i < n; i++)
			recs[i] = slots[(p + i) & mask];
	}
	uf_fence_acquire(); /* the copies complete before claim is re-read */
	claim = uf_load_relaxed_u64(&l->hdr->claim);
	if (UF_UNLIKELY(claim - p > l->capacity)) /* the oldest copied slot may be rewritten */
		return uf_consumer_local_behind(l, recs, max, first_seq);
	if (first_seq)
		*first_seq = p;
	l->pos = p + n;
	l->received += n;
	l->idle = 0;
	if (UF_UNLIKELY((++l->reads % UF_CONSUMER_IDLE_SEEN_EVERY) == 0)) /* busy is alive too */
		uf_store_relaxed_u64(&l->slot->last_seen_ns, uf_now_realtime_coarse_ns());
	/* our own line: the producer reads it only when reporting lag */
	uf_store_relaxed_u64(&l->slot->position, l->pos);
	uf_store_relaxed_u64(&l->slot->received, l->received);
	return (int)n;
}

#endif /* UF_CONSUMER_LOCAL_H */
