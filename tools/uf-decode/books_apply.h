/* Decoded messages applied to the order books (publish/) a chunk at a time, as the feed
 * thread applies one receive batch: shared by `uf-decode books`, the decode+book rows of
 * `uf-decode bench` and `uf-bench book`, so they all build books the same way. Header-only
 * so the decode callback stays inlinable into each caller's timed loop. */
#ifndef UF_DECODE_BOOKS_APPLY_H
#define UF_DECODE_BOOKS_APPLY_H

#include <stddef.h>
#include <stdint.h>

#include "decode/uf_decode.h"
#include "publish/uf_publish.h"

#define UF_BOOKS_CHUNK 256 /* messages handed to uf_publish_apply_batch at once */

struct uf_books_apply {
	struct uf_publisher *p;                                    /* the books */
	struct uf_itch_msg msgs[UF_BOOKS_CHUNK];                   /* decoded, not yet applied */
	uint64_t seqs[UF_BOOKS_CHUNK];                             /* their sequence numbers */
	size_t n;                                                  /* messages in msgs */
	struct uf_record rec[UF_BOOKS_CHUNK * UF_REC_MAX_PER_MSG]; /* records of one chunk */
	uint64_t records;                                          /* records written */
	uint64_t acc; /* folds records: keeps them live */
};

/* Applies the pending chunk. Runs of consecutive sequence numbers go through the batch call
 * (with its prefetch); a jump (pcap gaps) starts a new run. */
static inline void uf_books_apply_flush(struct uf_books_apply *x)
{
	size_t i = 0;

	while (i < x->n) {
		size_t run = 1, done = 0;
		while (i + run < x->n && x->seqs[i + run] == x->seqs[i] + run)
			run++;
		while (done < run) {
			size_t applied = 0;
			int k = uf_publish_apply_batch(
			    x->p, &x->msgs[i + done], run - done, x->seqs[i] + done, 0, x->rec,
			    sizeof(x->rec) / sizeof(x->rec[0]), &applied);
			if (k > 0) {
				x->records += (uint64_t)k;
				x->acc += x->rec[k - 1].shares ^ x->rec[k - 1].feed_seq;
			}
			done += applied;
		}
		i += run;
	}
	x->n = 0;
}

/* Queues one decoded message; a full chunk is applied at once. */
static inline void uf_books_apply_add(struct uf_books_apply *x, uint64_t seq,
                                      const struct uf_itch_msg *m)
{
	x->msgs[x->n] = *m;
	x->seqs[x->n] = seq;
	if (++x->n == UF_BOOKS_CHUNK)
		uf_books_apply_flush(x);
}

/* uf_decode_batch_inline's message callback; `ctx` is a struct uf_books_apply. */
static inline void uf_books_apply_on_decoded(void *ctx, uint64_t seq, const struct uf_itch_msg *m)
{
	uf_books_apply_add(ctx, seq, m);
}

#endif /* UF_DECODE_BOOKS_APPLY_H */
