/* libufconsumer book builder (ring/ufbook.h): price-level books rebuilt from the record
 * stream, started from the book image. Uses only the public consumer API (ufconsumer.h). */
#include "ring/ufbook.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ring/ring_util.h"
#include "ring/uf_ring_layout.h"

#define SYNC_TRIES  100 /* handovers tried before -EBUSY (each lapped or kept busy) */
#define SIDE_MIN    16  /* levels a side gets when it first grows */
#define DEFAULT_MAX 65536

UF_STATIC_ASSERT(UF_BOOKF_TRUNCATED_BID == UF_IMAGE_F_TRUNC_BID, "snapshot flag = image flag");
UF_STATIC_ASSERT(UF_BOOKF_TRUNCATED_ASK == UF_IMAGE_F_TRUNC_ASK, "snapshot flag = image flag");

/* One side, sorted by key ascending (key = price for bids, -price for asks), so the best
 * level is always the last: inside changes move few entries. */
struct bb_side {
	struct uf_level *lv; /* levels, best last */
	uint32_t n;          /* valid levels */
	uint32_t cap;        /* allocated levels */
};

struct bb_book {
	uint64_t stamp;         /* records of this instrument below it are already applied */
	uint32_t flags;         /* UF_BOOKF_* */
	uint32_t reserved;      /* zero */
	struct bb_side side[2]; /* 0 bids, 1 asks */
	char symbol[9];         /* trimmed, NUL-terminated */
};

/* Live order table: open addressing, linear probing, backward-shift deletion (no
 * tombstones), sized once at 4/3 of the orders it must hold. */
struct bb_order_slot {
	struct uf_book_order o; /* the order; o.side == 0 marks a free slot */
};

struct uf_book_builder {
	struct bb_book *books;              /* per instrument id */
	uint32_t max;                       /* entries in books */
	struct uf_book_builder_stats stats; /* counters */
	struct bb_order_slot *orders;       /* order table, NULL when not tracking */
	uint64_t omask;                     /* table slots - 1 */
	uint64_t omax;                      /* orders it may hold */
};

static int side_index(int side)
{
	return side == UF_SIDE_BID ? 0 : side == UF_SIDE_ASK ? 1 : -1;
}

static int64_t key_of(int sidx, int64_t price)
{
	return sidx == 0 ? price : -price;
}

/* Index of the first level whose key is >= key (binary search). */
static uint32_t side_find(const struct bb_side *s, int sidx, int64_t price)
{
	int64_t key = key_of(sidx, price);
	uint32_t lo = 0, hi = s->n;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (key_of(sidx, s->lv[mid].price) < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int side_grow(struct bb_side *s)
{
	uint32_t cap = s->cap ? s->cap * 2 : SIDE_MIN;
	struct uf_level *lv;

	if (cap < s->cap)
		return -ENOMEM;
	lv = realloc(s->lv, (size_t)cap * sizeof(*lv));
	if (!lv)
		return -ENOMEM;
	s->lv = lv;
	s->cap = cap;
	return 0;
}

/* Sets the totals of one level; shares == 0 && orders == 0 removes it. */
static int side_set(struct bb_side *s, int sidx, int64_t price, uint64_t shares, uint32_t orders)
{
	uint32_t i = side_find(s, sidx, price);
	int found = i < s->n && s->lv[i].price == price;

	if (shares == 0 && orders == 0) {
		if (found) {
			memmove(&s->lv[i], &s->lv[i + 1], (size_t)(s->n - i - 1) * sizeof(*s->lv));
			s->n--;
		}
		return 0;
	}
	if (!found) {
		if (s->n == s->cap && side_grow(s) < 0)
			return -ENOMEM;
		memmove(&s->lv[i + 1], &s->lv[i], (size_t)(s->n - i) * sizeof(*s->lv));
		s->n++;
		s->lv[i].price = price;
		s->lv[i].reserved = 0;
	}
	s->lv[i].shares = shares;
	s->lv[i].orders = orders;
	return 0;
}

static void book_empty(struct bb_book *bk)
{
	bk->side[0].n = 0;
	bk->side[1].n = 0;
}

/* ---- record kinds: one handler each; a new kind (e.g. a reset record) is one more line in
 * kind_apply[] ---- */

typedef int (*bb_kind_fn)(struct uf_book_builder *b, struct bb_book *bk, const struct uf_record *r);

/* Marks a book's doubt as the producer states it on each record. */
static void follow_stale(struct bb_book *bk, const struct uf_record *r)
{
	if (r->flags & UF_RECF_STALE)
		bk->flags |= UF_BOOKF_STALE;
	else
		bk->flags &= ~(uint32_t)UF_BOOKF_STALE;
}

static int on_level(struct uf_book_builder *b, struct bb_book *bk, const struct uf_record *r)
{
	int sidx = side_index(r->side);

	(void)b;
	if (sidx < 0)
		return 0;
	follow_stale(bk, r);
	if (side_set(&bk->side[sidx], sidx, r->price, r->shares, r->orders) < 0) {
		bk->flags |= UF_BOOKF_STALE; /* a level is missing: say so rather than lie */
		return -ENOMEM;
	}
	return 1;
}

static int on_snapshot_begin(struct uf_book_builder *b, struct bb_book *bk,
                             const struct uf_record *r)
{
	(void)b;
	book_empty(bk); /* the bracket's LEVEL records are the whole book */
	bk->flags &= ~(uint32_t)UF_BOOKF_TRUNCATED;
	follow_stale(bk, r);
	return 1;
}

static int on_instrument(struct uf_book_builder *b, struct bb_book *bk, const struct uf_record *r)
{
	int n = 8;

	(void)b;
	memcpy(bk->symbol, &r->ref, 8);
	bk->symbol[8] = '\0';
	while (n > 0 && (bk->symbol[n - 1] == ' ' || bk->symbol[n - 1] == '\0'))
		bk->symbol[--n] = '\0';
	return 1;
}

static int on_gap(struct uf_book_builder *b, struct bb_book *bk, const struct uf_record *r)
{
	(void)bk;
	(void)r;
	for (uint32_t i = 0; i < b->max; i++)
		b->books[i].flags |= UF_BOOKF_STALE;
	b->stats.gaps++;
	return 1;
}

/* UF_REC_RESET (a new session): every book is void; symbols stay (the directory does). */
static int on_reset(struct uf_book_builder *b, struct bb_book *bk, const struct uf_record *r)
{
	(void)bk;
	(void)r;
	uf_book_builder_clear(b);
	return 1;
}

/* UF_REC_STALE: one book (bk), or every book (UF_INSTRUMENT_ALL, bk NULL), may be wrong. */
static int on_stale(struct uf_book_builder *b, struct bb_book *bk, const struct uf_record *r)
{
	(void)r;
	if (bk) {
		bk->flags |= UF_BOOKF_STALE;
		return 1;
	}
	for (uint32_t i = 0; i < b->max; i++)
		b->books[i].flags |= UF_BOOKF_STALE;
	return 1;
}

static uint64_t order_home(const struct uf_book_builder *b, uint64_t ref)
{
	return (ref * 0x9e3779b97f4a7c15ull >> 17) & b->omask; /* Fibonacci hash */
}

/* Slot of `ref`, or the free slot where it would go. */
static uint64_t order_find(const struct uf_book_builder *b, uint64_t ref)
{
	uint64_t i = order_home(b, ref);

	while (b->orders[i].o.side && b->orders[i].o.ref != ref)
		i = (i + 1) & b->omask;
	return i;
}

static void order_remove(struct uf_book_builder *b, uint64_t i)
{
	uint64_t j = i;

	b->orders[i].o.side = 0;
	for (;;) { /* pull back every later entry of the run that may sit in the hole */
		uint64_t h;
		j = (j + 1) & b->omask;
		if (!b->orders[j].o.side)
			break;
		h = order_home(b, b->orders[j].o.ref);
		/* entry j may move to i when its home is not in (i, j] (cyclically) */
		if ((j > i && (h <= i || h > j)) || (j < i && h <= i && h > j)) {
			b->orders[i] = b->orders[j];
			b->orders[j].o.side = 0;
			i = j;
		}
	}
	b->stats.orders_live--;
}

static int on_order(struct uf_book_builder *b, struct bb_book *bk, const struct uf_record *r)
{
	uint64_t i;

	(void)bk;
	if (!b->orders || side_index(r->side) < 0) {
		b->stats.ignored++;
		return 0;
	}
	i = order_find(b, r->ref);
	if (r->kind == UF_REC_ORDER_ADD) {
		if (!b->orders[i].o.side) {
			if (b->stats.orders_live >= b->omax) {
				b->stats.orders_full++;
				return 0;
			}
			b->stats.orders_live++;
		}
		b->orders[i].o = (struct uf_book_order){.ref = r->ref,
		                                        .price = r->price,
		                                        .shares = r->shares,
		                                        .instrument = r->instrument,
		                                        .side = r->side};
		return 1;
	}
	if (!b->orders[i].o.side) {
		b->stats
		    .orders_unknown++; /* it rested before we started: the image has no orders */
		return 0;
	}
	if (r->kind == UF_REC_ORDER_MODIFY) {
		b->orders[i].o.shares = r->shares;
		b->orders[i].o.price = r->price;
	} else {
		order_remove(b, i);
	}
	return 1;
}

static void orders_clear(struct uf_book_builder *b)
{
	if (b->orders)
		memset(b->orders, 0, (b->omask + 1) * sizeof(*b->orders));
	b->stats.orders_live = 0;
}

/* Records not about one instrument's book (applied whatever `instrument` is, no stamp). */
static int rec_is_global(const struct uf_record *r)
{
	return r->kind == UF_REC_GAP || r->kind == UF_REC_RESET ||
	       (r->kind == UF_REC_STALE && r->instrument == UF_INSTRUMENT_ALL);
}

static const bb_kind_fn kind_apply[] = {
    [UF_REC_LEVEL] = on_level,
    [UF_REC_SNAPSHOT_BEGIN] = on_snapshot_begin,
    [UF_REC_GAP] = on_gap,
    [UF_REC_INSTRUMENT] = on_instrument,
    [UF_REC_ORDER_ADD] = on_order,
    [UF_REC_ORDER_MODIFY] = on_order,
    [UF_REC_ORDER_DELETE] = on_order,
    [UF_REC_RESET] = on_reset,
    [UF_REC_STALE] = on_stale,
    /* TRADE, STATUS, SNAPSHOT_END: nothing for a book */
};

/* ---- public API ---- */

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
	b->books = calloc(max_instruments, sizeof(*b->books));
	if (!b->books) {
		free(b);
		return -ENOMEM;
	}
	b->max = max_instruments;
	*out = b;
	return 0;
}

UF_RING_VISIBLE void uf_book_builder_destroy(uf_book_builder_t *b)
{
	if (!b)
		return;
	for (uint32_t i = 0; i < b->max; i++) {
		free(b->books[i].side[0].lv);
		free(b->books[i].side[1].lv);
	}
	free(b->books);
	free(b->orders);
	free(b);
}

UF_RING_VISIBLE void uf_book_builder_clear(uf_book_builder_t *b)
{
	for (uint32_t i = 0; i < b->max; i++) {
		book_empty(&b->books[i]);
		b->books[i].flags = 0;
		b->books[i].stamp = 0;
	}
	orders_clear(b);
	b->stats.resets++;
}

UF_RING_VISIBLE int uf_book_builder_track_orders(uf_book_builder_t *b, uint64_t max_orders)
{
	uint64_t slots = 16;

	if (max_orders == 0 || max_orders > (1ull << 40) || b->orders)
		return -EINVAL;
	while (slots < max_orders + max_orders / 3 + 1)
		slots <<= 1;
	b->orders = calloc(slots, sizeof(*b->orders));
	if (!b->orders)
		return -ENOMEM;
	b->omask = slots - 1;
	b->omax = max_orders;
	return 0;
}

UF_RING_VISIBLE int uf_book_builder_order(const uf_book_builder_t *b, uint64_t ref,
                                          struct uf_book_order *out)
{
	uint64_t i;

	if (!b->orders)
		return -ENOTSUP;
	i = order_find(b, ref);
	if (!b->orders[i].o.side)
		return -ENOENT;
	*out = b->orders[i].o;
	return 0;
}

UF_RING_VISIBLE int uf_book_builder_for_each_order(const uf_book_builder_t *b,
                                                   int (*fn)(const struct uf_book_order *, void *),
                                                   void *arg)
{
	if (!b->orders)
		return -ENOTSUP;
	for (uint64_t i = 0; i <= b->omask; i++) {
		int rc;
		if (!b->orders[i].o.side)
			continue;
		rc = fn(&b->orders[i].o, arg);
		if (rc)
			return rc;
	}
	return 0;
}

UF_RING_VISIBLE int uf_book_builder_load(uf_book_builder_t *b, const struct uf_book_snapshot *snap)
{
	struct bb_book *bk;

	if (snap->instrument >= b->max)
		return -ERANGE;
	bk = &b->books[snap->instrument];
	book_empty(bk);
	/* the snapshot is best first, the book best last: set from the worst level inwards */
	for (uint32_t i = snap->nbid; i-- > 0;)
		if (side_set(&bk->side[0], 0, snap->bid[i].price, snap->bid[i].shares,
		             snap->bid[i].orders) < 0)
			return -ENOMEM;
	for (uint32_t i = snap->nask; i-- > 0;)
		if (side_set(&bk->side[1], 1, snap->ask[i].price, snap->ask[i].shares,
		             snap->ask[i].orders) < 0)
			return -ENOMEM;
	bk->flags = snap->flags & (UF_BOOKF_STALE | UF_BOOKF_TRUNCATED);
	if (bk->flags & UF_BOOKF_TRUNCATED)
		b->stats.truncated++;
	bk->stamp = snap->stamp;
	if (snap->symbol[0])
		memcpy(bk->symbol, snap->symbol, sizeof(bk->symbol));
	return 0;
}

UF_RING_VISIBLE int uf_book_builder_apply(uf_book_builder_t *b, const struct uf_record *rec,
                                          uint64_t seq)
{
	bb_kind_fn fn =
	    rec->kind < sizeof(kind_apply) / sizeof(kind_apply[0]) ? kind_apply[rec->kind] : NULL;
	struct bb_book *bk = NULL;
	int rc;

	if (!fn) {
		b->stats.ignored++;
		return 0;
	}
	if (!rec_is_global(rec)) {
		if (rec->instrument >= b->max) {
			b->stats.ignored++;
			return 0;
		}
		bk = &b->books[rec->instrument];
		if (seq < bk->stamp) {
			b->stats.skipped++; /* the image this book came from has it already */
			return 0;
		}
	}
	rc = fn(b, bk, rec);
	if (rc > 0)
		b->stats.applied++;
	return rc;
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
		uint64_t resets = b->stats.resets;
		int rc;

		uf_book_builder_clear(b);
		b->stats.resets = resets; /* a handover is not a reset the stream asked for */
		b->stats.truncated = 0;
		for (uint32_t i = 0; i < b->max; i++)
			b->books[i].stamp = from;
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
		b->stats.syncs++;
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
		b->stats.laps++;
		rc = uf_book_builder_sync(b, c); /* records were lost: start again from the image */
		return rc < 0 ? rc : -EOVERFLOW;
	}
	return rc;
}

UF_RING_VISIBLE int uf_book_builder_top(const uf_book_builder_t *b, uint32_t instrument,
                                        struct uf_level *bid, struct uf_level *ask)
{
	const struct bb_book *bk;
	int got = 0;

	if (instrument >= b->max)
		return -ERANGE;
	bk = &b->books[instrument];
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
	const struct bb_side *s;
	size_t k = 0;

	if (sidx < 0)
		return -EINVAL;
	if (instrument >= b->max)
		return -ERANGE;
	s = &b->books[instrument].side[sidx];
	for (uint32_t i = s->n; i-- > 0 && k < n;)
		out[k++] = s->lv[i];
	return (int)k;
}

UF_RING_VISIBLE size_t uf_book_builder_depth(const uf_book_builder_t *b, uint32_t instrument,
                                             int side)
{
	int sidx = side_index(side);

	if (sidx < 0 || instrument >= b->max)
		return 0;
	return b->books[instrument].side[sidx].n;
}

UF_RING_VISIBLE uint32_t uf_book_builder_flags(const uf_book_builder_t *b, uint32_t instrument)
{
	return instrument < b->max ? b->books[instrument].flags : 0;
}

UF_RING_VISIBLE const char *uf_book_builder_symbol(const uf_book_builder_t *b, uint32_t instrument)
{
	return instrument < b->max ? b->books[instrument].symbol : "";
}

UF_RING_VISIBLE uint32_t uf_book_builder_max_instruments(const uf_book_builder_t *b)
{
	return b->max;
}

UF_RING_VISIBLE void uf_book_builder_get_stats(const uf_book_builder_t *b,
                                               struct uf_book_builder_stats *st)
{
	*st = b->stats;
}
