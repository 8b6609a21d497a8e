/* A fake JetStream stream and bucket behind the remote consumer's stream checks
 * (ring/nats/nats_stream.h hooks), for test_nats_stream and fuzz_nats_stream: what each hook
 * answers is set by the test, every call is counted. */
#ifndef NATS_STREAM_FAKE_H
#define NATS_STREAM_FAKE_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nats_msg_header.h"
#include "ring/nats/nats_stream.h"

#define FAKE_SLOTS 8192u /* records the fake consumer buffers (messages up to 4096) */

struct fake_world {
	uint64_t first_sseq;             /* the stream's first sequence (retention moves it) */
	struct uf_nats_commit cm;        /* the bucket's commit entry */
	int load_rc;                     /* what load answers (0 or -errno) */
	uint32_t max;                    /* instruments of the books load hands out */
	int loads, drops, closes;        /* hook calls */
	const struct uf_nats_stream *st; /* the state the hooks belong to */
	int progresses;                  /* progress() calls */
	uint64_t progress_tail[32];      /* the tail at each of the first 32 */
};

static inline int fake_stream_dropped(void *arg, uint64_t sseq)
{
	struct fake_world *w = arg;
	w->drops++;
	return w->first_sseq > sseq;
}

static inline int fake_load(void *arg, struct uf_nats_books *bk, struct uf_nats_commit *cm,
                            uint64_t min_from)
{
	struct fake_world *w = arg;
	(void)min_from;
	w->loads++;
	if (w->load_rc < 0)
		return w->load_rc;
	*cm = w->cm;
	if (bk && uf_nats_books_init(bk, w->max, w->cm.generation) < 0)
		return -ENOMEM;
	return 0;
}

static inline int fake_close_confirmed(void *arg, uint64_t generation, uint64_t seq)
{
	struct fake_world *w = arg;
	w->closes++;
	if (w->cm.generation != generation || w->cm.position > seq)
		return -1;
	return (w->cm.flags & UF_NATS_COMMIT_CLOSED) && w->cm.position == seq;
}

static inline void fake_progress(void *arg)
{
	struct fake_world *w = arg;

	if (w->progresses < 32)
		w->progress_tail[w->progresses] = w->st->tail;
	w->progresses++;
}

/* A stream state at commit `w->cm` (generation, position, js_from set by the caller) with
 * empty books of w->max instruments; hooks into `w`. */
static inline int fake_begin(struct uf_nats_stream *s, struct uf_nats_stream_hooks *hk,
                             struct fake_world *w)
{
	memset(s, 0, sizeof(*s));
	s->ring = "fake";
	s->buf = calloc(FAKE_SLOTS, sizeof(*s->buf));
	s->seqs = calloc(FAKE_SLOTS, sizeof(*s->seqs));
	if (!s->buf || !s->seqs || uf_nats_books_init(&s->books, w->max, w->cm.generation) < 0)
		return -ENOMEM;
	memset(s->seqs, 0xff, FAKE_SLOTS * sizeof(*s->seqs));
	s->mask = FAKE_SLOTS - 1;
	s->cm = w->cm;
	uf_nats_stream_begin(s);
	hk->stream_dropped = fake_stream_dropped;
	hk->load = fake_load;
	hk->close_confirmed = fake_close_confirmed;
	hk->progress = fake_progress;
	hk->arg = w;
	w->st = s;
	return 0;
}

static inline void fake_end(struct uf_nats_stream *s)
{
	uf_nats_books_free(&s->books);
	free(s->buf);
	free(s->seqs);
}

/* Builds a message as the bridge would (header, `count` records from `recs` or LEVELs of
 * instrument 1) into buf and its id into id; returns its length. */
static inline size_t fake_msg(unsigned char *buf, char id[UF_NATS_MSG_ID_MAX], uint64_t gen,
                              uint8_t kind, uint64_t first, uint64_t aux, uint32_t count)
{
	struct uf_nats_msg h = nats_msg_header(gen, kind, first, aux, count);

	memcpy(buf, &h, sizeof(h));
	for (uint32_t i = 0; i < count; i++) {
		struct uf_record r;
		memset(&r, 0, sizeof(r));
		r.kind = UF_REC_LEVEL;
		r.side = UF_SIDE_BID;
		r.instrument = 1;
		r.price = 100 + (int64_t)((first + i) % 7);
		r.shares = first + i + 1;
		r.orders = 1;
		memcpy(buf + sizeof(h) + (size_t)i * sizeof(r), &r, sizeof(r));
	}
	snprintf(id, UF_NATS_MSG_ID_MAX, "%llu:%u:%llu:%u", (unsigned long long)gen, (unsigned)kind,
	         (unsigned long long)first, (unsigned)count);
	return sizeof(h) + (size_t)count * sizeof(struct uf_record);
}

#endif /* NATS_STREAM_FAKE_H */
