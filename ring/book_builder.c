/* libufconsumer book builder (ring/ufbook.h): full-depth books rebuilt from the record
 * stream, started from the book image. Every rule for applying a record lives in the book
 * model (ring/book_model.h), which the NATS remote consumer and uf-bridge share; this file
 * adds the handover from the image and the public API. Uses only the public consumer API. */
#include "ring/ufbook.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ring/book_model.h"
#include "ring/ring_util.h"
#include "ring/uf_ring_layout.h"

#define SYNC_TRIES  100 /* handovers tried before -EBUSY (each lapped or kept busy) */
#define DEFAULT_MAX 65536

UF_STATIC_ASSERT(UF_BOOKF_TRUNCATED_BID == UF_IMAGE_F_TRUNC_BID, "snapshot flag = image flag");
UF_STATIC_ASSERT(UF_BOOKF_TRUNCATED_ASK == UF_IMAGE_F_TRUNC_ASK, "snapshot flag = image flag");

struct uf_book_builder {
	struct uf_book_model m; /* the books and every rule that changes them */
	uint64_t syncs;         /* image handovers done */
	uint64_t laps;          /* -EOVERFLOW seen by uf_book_builder_next */
	uint64_t truncated;     /* books loaded truncated at the last sync */
};

static int side_index(int side)
{
	return side == UF_SIDE_BID ? 0 : side == UF_SIDE_ASK ? 1 : -1;
}

UF_RING_VISIBLE int uf_book_builder_create(uint32_t max_instruments, uf_book_builder_t **out)
{
	struct uf_book_builder *b;

	if (!out)
		return -EINVAL;
	if (max_instruments == 0)
		max_instruments = DEFAULT_MAX;
	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	if (uf_book_model_init(&b->m, max_instruments) < 0) {
		free(b);
		return -ENOMEM;
	}
	*out = b;
	return 0;
}

UF_RING_VISIBLE void uf_book_builder_destroy(uf_book_builder_t *b)
{
	if (!b)
		return;
	uf_book_model_free(&b->m);
	free(b);
}

UF_RING_VISIBLE void uf_book_builder_clear(uf_book_builder_t *b)
{
	uf_book_model_clear(&b->m);
}

UF_RING_VISIBLE int uf_book_builder_track_orders(uf_book_builder_t *b, uint64_t max_orders)
{
	return uf_book_model_track_orders(&b->m, max_orders);
}

UF_RING_VISIBLE int uf_book_builder_order(const uf_book_builder_t *b, uint64_t ref,
                                          struct uf_book_order *out)
{
	return uf_book_model_order(&b->m, ref, out);
}

UF_RING_VISIBLE int uf_book_builder_for_each_order(const uf_book_builder_t *b,
                                                   int (*fn)(const struct uf_book_order *, void *),
                                                   void *arg)
{
	return uf_book_model_for_each_order(&b->m, fn, arg);
}

UF_RING_VISIBLE int uf_book_builder_load(uf_book_builder_t *b, const struct uf_book_snapshot *snap)
{
	int rc = uf_book_model_load(&b->m, snap);

	if (rc == 0 && (snap->flags & UF_BOOKF_TRUNCATED))
		b->truncated++;
	return rc;
}

UF_RING_VISIBLE int uf_book_builder_apply(uf_book_builder_t *b, const struct uf_record *rec,
                                          uint64_t seq)
{
	return uf_book_model_apply(&b->m, rec, seq);
}

static int sync_load(const struct uf_book_snapshot *snap, void *arg)
{
	return uf_book_builder_load(arg, snap);
}

UF_RING_VISIBLE int uf_book_builder_sync(uf_book_builder_t *b, uf_consumer_t *c)
{
	for (int tries = 0; tries < SYNC_TRIES; tries++) {
		/* read before the entries: every record below it is in whatever entry we copy,
		 * and an instrument missing from the image has no record below it */
		uint64_t from = uf_consumer_image_seq(c);
		uint64_t resets = b->m.stats.resets;
		int rc;

		uf_book_model_clear(&b->m);
		b->m.stats.resets = resets; /* a handover is not a reset the stream asked for */
		b->truncated = 0;
		b->m.floor = from;
		for (uint32_t i = 0; i < b->m.max; i++)
			if (b->m.v[i])
				b->m.v[i]->stamp = from;
		rc = uf_consumer_snapshot_all(c, sync_load, b);
		if (rc == -EBUSY)
			continue;
		if (rc < 0)
			return rc;
		rc = uf_consumer_seek(c, from);
		if (rc == -ERANGE)
			continue; /* the producer overwrote `from` while we copied: again */
		if (rc < 0)
			return rc;
		b->syncs++;
		return 0;
	}
	return -EBUSY;
}

UF_RING_VISIBLE int uf_book_builder_next(uf_book_builder_t *b, uf_consumer_t *c,
                                         struct uf_record *rec, uint64_t *seq)
{
	struct uf_record r;
	uint64_t s;
	int rc = uf_consumer_next(c, &r, &s);

	if (rc == 0) {
		rc = uf_book_builder_apply(b, &r, s);
		if (rec)
			*rec = r;
		if (seq)
			*seq = s;
		return rc < 0 ? rc : 0;
	}
	if (rc == -EOVERFLOW) {
		b->laps++;
		rc = uf_book_builder_sync(b, c); /* records were lost: start again from the image */
		return rc < 0 ? rc : -EOVERFLOW;
	}
	return rc;
}

UF_RING_VISIBLE int uf_book_builder_top(const uf_book_builder_t *b, uint32_t instrument,
                                        struct uf_level *bid, struct uf_level *ask)
{
	const struct uf_bm_book *bk;
	int got = 0;

	if (instrument >= b->m.max)
		return -ERANGE;
	bk = uf_book_model_peek(&b->m, instrument);
	if (!bk)
		return 0;
	if (bk->side[0].n) {
		if (bid)
			*bid = bk->side[0].lv[bk->side[0].n - 1];
		got |= 1;
	}
	if (bk->side[1].n) {
		if (ask)
			*ask = bk->side[1].lv[bk->side[1].n - 1];
		got |= 2;
	}
	return got;
}

UF_RING_VISIBLE int uf_book_builder_levels(const uf_book_builder_t *b, uint32_t instrument,
                                           int side, struct uf_level *out, size_t n)
{
	int sidx = side_index(side);
	const struct uf_bm_book *bk;
	const struct uf_bm_side *s;
	size_t k = 0;

	if (sidx < 0)
		return -EINVAL;
	if (instrument >= b->m.max)
		return -ERANGE;
	bk = uf_book_model_peek(&b->m, instrument);
	if (!bk)
		return 0;
	s = &bk->side[sidx];
	for (uint32_t i = s->n; i-- > 0 && k < n;)
		out[k++] = s->lv[i];
	return (int)k;
}

UF_RING_VISIBLE size_t uf_book_builder_depth(const uf_book_builder_t *b, uint32_t instrument,
                                             int side)
{
	int sidx = side_index(side);
	const struct uf_bm_book *bk = uf_book_model_peek(&b->m, instrument);

	if (sidx < 0 || !bk)
		return 0;
	return bk->side[sidx].n;
}

UF_RING_VISIBLE uint32_t uf_book_builder_flags(const uf_book_builder_t *b, uint32_t instrument)
{
	const struct uf_bm_book *bk = uf_book_model_peek(&b->m, instrument);

	if (bk)
		return bk->flags;
	/* no book yet: a doubt of every book covers it as well */
	return instrument < b->m.max && b->m.all_stale ? UF_BOOKF_STALE : 0;
}

UF_RING_VISIBLE const char *uf_book_builder_symbol(const uf_book_builder_t *b, uint32_t instrument)
{
	const struct uf_bm_book *bk = uf_book_model_peek(&b->m, instrument);

	return bk ? bk->name : "";
}

UF_RING_VISIBLE int uf_book_builder_snapshot(const uf_book_builder_t *b, uint32_t instrument,
                                             struct uf_book_snapshot *snap)
{
	return uf_book_model_snapshot(&b->m, instrument, UF_BOOK_MAX_DEPTH, b->m.next, snap);
}

UF_RING_VISIBLE uint32_t uf_book_builder_max_instruments(const uf_book_builder_t *b)
{
	return b->m.max;
}

UF_RING_VISIBLE void uf_book_builder_get_stats(const uf_book_builder_t *b,
                                               struct uf_book_builder_stats *st)
{
	memset(st, 0, sizeof(*st));
	st->applied = b->m.stats.applied;
	st->skipped = b->m.stats.skipped;
	st->ignored = b->m.stats.ignored;
	st->syncs = b->syncs;
	st->laps = b->laps;
	st->gaps = b->m.stats.gaps;
	st->resets = b->m.stats.resets;
	st->truncated = b->truncated;
	st->orders_live = b->m.stats.orders_live;
	st->orders_unknown = b->m.stats.orders_unknown;
	st->orders_full = b->m.stats.orders_full;
}
