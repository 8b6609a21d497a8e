/* The NATS fan-out's books (see nats_book.h): key-value entries, the dirty set and stamps
 * around the one book model. */
#include "ring/nats/nats_book.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static void mark(struct uf_nats_books *bk, uint32_t id)
{
	if (!bk->is_dirty[id]) {
		bk->is_dirty[id] = 1;
		bk->dirty_ids[bk->ndirty++] = id;
	}
}

/* The model changed book `id` with record `seq`: its entry now reflects every record <= seq. */
static void on_changed(void *arg, uint32_t id, uint64_t seq)
{
	struct uf_nats_books *bk = arg;

	if (bk->stamp[id] < seq + 1)
		bk->stamp[id] = seq + 1;
	mark(bk, id);
}

int uf_nats_books_init(struct uf_nats_books *bk, uint32_t max, uint64_t generation)
{
	uint32_t n = max ? max : 1;

	memset(bk, 0, sizeof(*bk));
	if (uf_book_model_init(&bk->m, n) < 0)
		return -ENOMEM;
	bk->dirty_ids = calloc(n, sizeof(*bk->dirty_ids));
	bk->is_dirty = calloc(n, 1);
	bk->stamp = calloc(n, sizeof(*bk->stamp));
	if (!bk->dirty_ids || !bk->is_dirty || !bk->stamp) {
		uf_nats_books_free(bk);
		return -ENOMEM;
	}
	bk->max = max;
	bk->generation = generation;
	return 0;
}

void uf_nats_books_free(struct uf_nats_books *bk)
{
	uf_book_model_free(&bk->m);
	free(bk->dirty_ids);
	free(bk->is_dirty);
	free(bk->stamp);
	memset(bk, 0, sizeof(*bk));
}

void uf_nats_books_clear(struct uf_nats_books *bk)
{
	uf_book_model_wipe(&bk->m);
	memset(bk->is_dirty, 0, bk->m.max);
	memset(bk->stamp, 0, (size_t)bk->m.max * sizeof(*bk->stamp));
	bk->ndirty = 0;
}

int uf_nats_books_apply(struct uf_nats_books *bk, const struct uf_record *r, uint64_t seq)
{
	if (!bk->max)
		return 0;
	/* set here, not at init: the owner may move the struct (the remote consumer swaps in
	 * a freshly loaded set by value) */
	bk->m.changed = on_changed;
	bk->m.changed_arg = bk;
	return uf_book_model_apply(&bk->m, r, seq);
}

int uf_nats_books_seed(struct uf_nats_books *bk, const struct uf_book_snapshot *s)
{
	int rc;

	if (s->instrument >= bk->max)
		return -ERANGE;
	rc = uf_book_model_load(&bk->m, s);
	if (rc < 0)
		return rc;
	if (s->symbol[0] == '\0') { /* the image's directory is the truth, even when empty */
		struct uf_bm_book *b = uf_book_model_book(&bk->m, s->instrument);
		b->symbol = 0;
		b->name[0] = '\0';
	}
	bk->stamp[s->instrument] = s->stamp;
	mark(bk, s->instrument);
	return 0;
}

int uf_nats_books_encode(struct uf_nats_books *bk, uint32_t id, uint64_t stamp, void **buf,
                         size_t *cap)
{
	const struct uf_bm_book *b = id < bk->max ? uf_book_model_peek(&bk->m, id) : NULL;
	struct uf_nats_book *h;
	struct uf_level *lv;
	size_t need;

	if (!b)
		return -ENOENT;
	need = sizeof(*h) + ((size_t)b->side[0].n + b->side[1].n) * sizeof(struct uf_level);
	if (need > *cap) {
		void *p = realloc(*buf, need);
		if (!p)
			return -ENOMEM;
		*buf = p;
		*cap = need;
	}
	h = *buf;
	memset(h, 0, sizeof(*h));
	h->magic = UF_NATS_BOOK_MAGIC;
	h->version = UF_NATS_BOOK_VERSION;
	h->instrument = id;
	h->generation = bk->generation;
	h->stamp = stamp > bk->stamp[id] ? stamp : bk->stamp[id];
	h->flags = b->flags;
	h->round_lot = b->round_lot;
	h->symbol = b->symbol;
	h->category = b->category;
	h->nbid = b->side[0].n;
	h->nask = b->side[1].n;
	h->last_price = b->last_price;
	h->last_shares = b->last_shares;
	h->last_exch_ts = b->last_exch_ts;
	h->last_rx_ts = b->last_rx_ts;
	h->volume = b->volume;
	h->trades = b->trades;
	h->update_rx_ts = b->update_rx_ts;
	for (uint32_t i = 0; i < UF_STATUS_MAX; i++) { /* slot for slot: both by code */
		if (!b->status[i].code)
			continue;
		h->status[i].code = b->status[i].code;
		h->status[i].price = b->status[i].price;
		h->status[i].shares = b->status[i].shares;
		h->status[i].exch_ts = b->status[i].exch_ts;
		h->nstatus++;
	}
	lv = (struct uf_level *)(h + 1); /* best first: bids, then asks */
	for (int sx = 0; sx < 2; sx++)
		for (uint32_t i = b->side[sx].n; i-- > 0;)
			*lv++ = b->side[sx].lv[i];
	return (int)need;
}

int uf_nats_books_decode(struct uf_nats_books *bk, const void *buf, size_t len, uint64_t min_from)
{
	struct uf_nats_book h;
	struct uf_bm_book *b;
	const char *lv;

	/* The prefix every book version shares first: an entry another generation left in the
	 * bucket is ignored whatever its version (the bridge does not delete old keys), while
	 * one of this generation in another version is a bridge of another release. */
	if (len < UF_NATS_BOOK_PREFIX)
		return -EPROTO;
	memcpy(&h, buf, UF_NATS_BOOK_PREFIX);
	if (h.magic != UF_NATS_BOOK_MAGIC)
		return -EPROTO;
	if (h.generation != bk->generation)
		return -ESTALE;
	if (h.version != UF_NATS_BOOK_VERSION || len < sizeof(h))
		return -EPROTO;
	memcpy(&h, buf, sizeof(h));
	if (len != sizeof(h) + ((size_t)h.nbid + h.nask) * sizeof(struct uf_level))
		return -EPROTO;
	if (h.instrument >= bk->max)
		return -ERANGE;
	b = uf_book_model_book(&bk->m, h.instrument);
	if (!b)
		return -ENOMEM;
	lv = (const char *)buf + sizeof(h);
	if (uf_book_model_set_side(b, 0, lv, h.nbid) < 0 ||
	    uf_book_model_set_side(b, 1, lv + (size_t)h.nbid * sizeof(struct uf_level), h.nask) < 0)
		return -ENOMEM;
	b->flags = h.flags;
	b->round_lot = h.round_lot;
	b->category = h.category;
	b->symbol = h.symbol;
	memcpy(b->name, &h.symbol, 8);
	b->name[8] = '\0';
	for (int n = 8; n > 0 && (b->name[n - 1] == ' ' || b->name[n - 1] == '\0');)
		b->name[--n] = '\0';
	b->last_price = h.last_price;
	b->last_shares = h.last_shares;
	b->last_exch_ts = h.last_exch_ts;
	b->last_rx_ts = h.last_rx_ts;
	b->volume = h.volume;
	b->trades = h.trades;
	b->update_rx_ts = h.update_rx_ts;
	/* a slot that holds its own code (known to this build) is used; the entry's count is
	 * not trusted */
	memset(b->status, 0, sizeof(b->status));
	for (uint32_t i = 0; i < UF_NATS_STATUS && i < UF_STATUS_MAX; i++)
		if (uf_status_slot(h.status[i].code) == i)
			b->status[i] = (struct uf_book_status){.code = h.status[i].code,
			                                       .price = h.status[i].price,
			                                       .shares = h.status[i].shares,
			                                       .exch_ts = h.status[i].exch_ts};
	b->stamp = h.stamp > min_from ? h.stamp : min_from;
	bk->stamp[h.instrument] = h.stamp;
	return 0;
}

int uf_nats_books_snapshot(const struct uf_nats_books *bk, uint32_t id, uint32_t depth,
                           uint64_t stamp, struct uf_book_snapshot *s)
{
	if (id >= bk->max)
		return -ERANGE;
	return uf_book_model_snapshot(&bk->m, id, depth, stamp, s);
}

int uf_nats_books_present(const struct uf_nats_books *bk, uint32_t id)
{
	return id < bk->max && uf_book_model_peek(&bk->m, id) != NULL;
}

uint64_t uf_nats_books_apply_from(const struct uf_nats_books *bk, uint32_t id)
{
	const struct uf_bm_book *b = id < bk->max ? uf_book_model_peek(&bk->m, id) : NULL;

	return b ? b->stamp : UINT64_MAX;
}

int uf_nats_books_lookup(const struct uf_nats_books *bk, const char *symbol, uint32_t *id)
{
	char want[8];
	uint64_t packed;

	if (!symbol || !symbol[0] || strlen(symbol) > 8 || !bk->stamp)
		return -ENOENT;
	memset(want, ' ', 8);
	memcpy(want, symbol, strlen(symbol));
	memcpy(&packed, want, 8);
	return uf_book_model_lookup(&bk->m, packed, id);
}

uint32_t uf_nats_books_take_dirty(struct uf_nats_books *bk, const uint32_t **ids)
{
	uint32_t n = bk->ndirty;

	for (uint32_t i = 0; i < n; i++)
		bk->is_dirty[bk->dirty_ids[i]] = 0;
	bk->ndirty = 0;
	*ids = bk->dirty_ids;
	return n;
}

void uf_nats_books_mark_dirty(struct uf_nats_books *bk, uint32_t id)
{
	if (uf_nats_books_present(bk, id))
		mark(bk, id);
}

int uf_nats_keys_init(struct uf_nats_keys *k, uint32_t max, uint64_t want)
{
	memset(k, 0, sizeof(*k));
	k->seen = calloc((size_t)max + 1, 1);
	if (!k->seen)
		return -ENOMEM;
	k->max = max;
	k->want = want;
	return 0;
}

void uf_nats_keys_free(struct uf_nats_keys *k)
{
	free(k->seen);
	memset(k, 0, sizeof(*k));
}

/* The slot of `key` in seen[]: its id, max for "commit", -1 for any other key. */
static int64_t key_slot(const struct uf_nats_keys *k, const char *key)
{
	uint64_t id = 0;

	if (strcmp(key, "commit") == 0)
		return k->max;
	if (key[0] != 'i' || key[1] == '\0' || (key[1] == '0' && key[2] != '\0'))
		return -1;
	for (const char *p = key + 1; *p; p++) {
		if (*p < '0' || *p > '9')
			return -1;
		id = id * 10 + (uint64_t)(*p - '0');
		if (id >= k->max)
			return -1;
	}
	return (int64_t)id;
}

void uf_nats_keys_saw(struct uf_nats_keys *k, const char *key)
{
	int64_t slot = key_slot(k, key);

	if (slot >= 0) {
		if (k->seen[slot])
			return;
		k->seen[slot] = 1;
	}
	k->distinct++;
}

int uf_nats_keys_complete(const struct uf_nats_keys *k)
{
	return k->distinct >= k->want;
}
