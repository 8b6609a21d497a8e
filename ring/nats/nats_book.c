/* Full-depth level books for the NATS fan-out (see nats_book.h). */
#include "ring/nats/nats_book.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int uf_nats_books_init(struct uf_nats_books *bk, uint32_t max, uint64_t generation)
{
	memset(bk, 0, sizeof(*bk));
	bk->v = calloc(max ? max : 1, sizeof(*bk->v));
	bk->dirty_ids = calloc(max ? max : 1, sizeof(*bk->dirty_ids));
	if (!bk->v || !bk->dirty_ids) {
		free(bk->v);
		free(bk->dirty_ids);
		return -ENOMEM;
	}
	bk->max = max;
	bk->generation = generation;
	return 0;
}

static void ibook_free(struct uf_nats_ibook *ib)
{
	if (!ib)
		return;
	free(ib->bid);
	free(ib->ask);
	free(ib);
}

void uf_nats_books_free(struct uf_nats_books *bk)
{
	if (!bk->v)
		return;
	for (uint32_t i = 0; i < bk->max; i++)
		ibook_free(bk->v[i]);
	free(bk->v);
	free(bk->dirty_ids);
	memset(bk, 0, sizeof(*bk));
}

void uf_nats_books_clear(struct uf_nats_books *bk)
{
	for (uint32_t i = 0; i < bk->max; i++) {
		ibook_free(bk->v[i]);
		bk->v[i] = NULL;
	}
	bk->ndirty = 0;
}

static struct uf_nats_ibook *ibook_get(struct uf_nats_books *bk, uint32_t id)
{
	struct uf_nats_ibook *ib;

	if (id >= bk->max)
		return NULL;
	ib = bk->v[id];
	if (!ib) {
		ib = calloc(1, sizeof(*ib));
		if (!ib)
			return NULL;
		ib->b.instrument = id;
		bk->v[id] = ib;
	}
	return ib;
}

static void mark_dirty(struct uf_nats_books *bk, struct uf_nats_ibook *ib)
{
	ib->present = 1;
	if (!ib->dirty) {
		ib->dirty = 1;
		bk->dirty_ids[bk->ndirty++] = ib->b.instrument;
	}
}

static int reserve(struct uf_level **v, uint32_t *cap, uint32_t need)
{
	uint32_t c = *cap ? *cap : 16;
	void *p;

	if (need <= *cap)
		return 0;
	while (c < need)
		c *= 2;
	p = realloc(*v, (size_t)c * sizeof(**v));
	if (!p)
		return -ENOMEM;
	*v = p;
	*cap = c;
	return 0;
}

/* Sets one level's totals; bids are kept highest first, asks lowest first. */
static int set_level(struct uf_level **v, uint32_t *n, uint32_t *cap, int bid, int64_t price,
                     uint64_t shares, uint32_t orders)
{
	uint32_t lo = 0, hi = *n;

	while (lo < hi) { /* first index whose price is not better than `price` */
		uint32_t mid = (lo + hi) / 2;
		int better = bid ? (*v)[mid].price > price : (*v)[mid].price < price;
		if (better)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < *n && (*v)[lo].price == price) {
		if (shares == 0 && orders == 0) {
			memmove(&(*v)[lo], &(*v)[lo + 1], (size_t)(*n - lo - 1) * sizeof(**v));
			(*n)--;
			return 0;
		}
		(*v)[lo].shares = shares;
		(*v)[lo].orders = orders;
		return 0;
	}
	if (shares == 0 && orders == 0)
		return 0;
	if (reserve(v, cap, *n + 1) < 0)
		return -ENOMEM;
	memmove(&(*v)[lo + 1], &(*v)[lo], (size_t)(*n - lo) * sizeof(**v));
	(*v)[lo].price = price;
	(*v)[lo].shares = shares;
	(*v)[lo].orders = orders;
	(*v)[lo].reserved = 0;
	(*n)++;
	return 0;
}

static void set_status(struct uf_nats_ibook *ib, const struct uf_record *r)
{
	for (uint32_t i = 0; i < UF_NATS_STATUS; i++) {
		struct uf_nats_status *st = &ib->b.status[i];
		if (st->code != r->aux && st->code != 0)
			continue;
		st->code = r->aux;
		st->price = r->price;
		st->shares = r->shares;
		st->exch_ts = r->exch_ts;
		return;
	}
	/* more distinct codes than slots: dropped, as the producer's image does (-ENOSPC) */
}

int uf_nats_books_apply(struct uf_nats_books *bk, const struct uf_record *r, uint64_t seq)
{
	struct uf_nats_ibook *ib;

	if (r->kind == UF_REC_GAP) { /* every present book may be wrong from here on */
		for (uint32_t i = 0; i < bk->max; i++) {
			ib = bk->v[i];
			if (ib && ib->present && seq >= ib->apply_from) {
				ib->b.flags |= UF_RECF_STALE;
				ib->b.stamp = seq + 1;
				mark_dirty(bk, ib);
			}
		}
		return 1;
	}
	if (r->instrument >= bk->max)
		return 0;
	ib = bk->v[r->instrument];
	if (ib && seq < ib->apply_from)
		return 0;
	switch (r->kind) {
	case UF_REC_LEVEL:
	case UF_REC_TRADE:
	case UF_REC_INSTRUMENT:
	case UF_REC_SNAPSHOT_BEGIN:
		break;
	case UF_REC_STATUS:
		if (r->aux)
			break;
		return 0;
	default:
		return 0; /* market-by-order records change no level the image shows */
	}
	ib = ibook_get(bk, r->instrument);
	if (!ib)
		return -ENOMEM;
	switch (r->kind) {
	case UF_REC_LEVEL:
		if (r->side != UF_SIDE_BID && r->side != UF_SIDE_ASK)
			return 0;
		if (set_level(r->side == UF_SIDE_BID ? &ib->bid : &ib->ask,
		              r->side == UF_SIDE_BID ? &ib->b.nbid : &ib->b.nask,
		              r->side == UF_SIDE_BID ? &ib->bcap : &ib->acap,
		              r->side == UF_SIDE_BID, r->price, r->shares, r->orders) < 0)
			return -ENOMEM;
		ib->b.update_rx_ts = r->rx_ts;
		break;
	case UF_REC_SNAPSHOT_BEGIN:
		ib->b.nbid = 0;
		ib->b.nask = 0;
		break;
	case UF_REC_TRADE:
		ib->b.last_price = r->price;
		ib->b.last_shares = r->shares;
		ib->b.last_exch_ts = r->exch_ts;
		ib->b.last_rx_ts = r->rx_ts;
		ib->b.volume += r->shares;
		ib->b.trades++;
		ib->b.update_rx_ts = r->rx_ts;
		break;
	case UF_REC_STATUS:
		set_status(ib, r);
		break;
	case UF_REC_INSTRUMENT:
		ib->b.symbol = r->ref;
		ib->b.round_lot = (uint32_t)r->shares;
		ib->b.category = r->aux;
		break;
	}
	ib->b.stamp = seq + 1;
	mark_dirty(bk, ib);
	return 1;
}

static int copy_levels(struct uf_level **v, uint32_t *n, uint32_t *cap, const void *src,
                       uint32_t cnt)
{
	if (reserve(v, cap, cnt ? cnt : 1) < 0)
		return -ENOMEM;
	if (cnt) /* src may be unaligned (a message buffer): bytes only */
		memcpy(*v, src, (size_t)cnt * sizeof(struct uf_level));
	*n = cnt;
	return 0;
}

int uf_nats_books_seed(struct uf_nats_books *bk, const struct uf_book_snapshot *s)
{
	struct uf_nats_ibook *ib = ibook_get(bk, s->instrument);
	uint64_t sym = 0;
	char b[8];

	if (!ib)
		return s->instrument >= bk->max ? -ERANGE : -ENOMEM;
	memset(b, ' ', sizeof(b));
	memcpy(b, s->symbol, strnlen(s->symbol, 8));
	memcpy(&sym, b, 8);
	if (s->symbol[0] == '\0')
		sym = 0;
	ib->b.symbol = sym;
	ib->b.flags = s->flags;
	ib->b.round_lot = s->round_lot;
	ib->b.category = s->category;
	ib->b.last_price = s->last_price;
	ib->b.last_shares = s->last_shares;
	ib->b.last_exch_ts = s->last_exch_ts;
	ib->b.last_rx_ts = s->last_rx_ts;
	ib->b.volume = s->volume;
	ib->b.trades = s->trades;
	ib->b.update_rx_ts = s->update_rx_ts;
	memset(ib->b.status, 0, sizeof(ib->b.status));
	for (uint32_t i = 0; i < s->nstatus && i < UF_NATS_STATUS; i++) {
		ib->b.status[i].code = s->status[i].code;
		ib->b.status[i].price = s->status[i].price;
		ib->b.status[i].shares = s->status[i].shares;
		ib->b.status[i].exch_ts = s->status[i].exch_ts;
	}
	ib->b.stamp = s->stamp;
	ib->apply_from = s->stamp;
	if (copy_levels(&ib->bid, &ib->b.nbid, &ib->bcap, s->bid, s->nbid) < 0 ||
	    copy_levels(&ib->ask, &ib->b.nask, &ib->acap, s->ask, s->nask) < 0)
		return -ENOMEM;
	mark_dirty(bk, ib);
	return 0;
}

int uf_nats_books_encode(struct uf_nats_books *bk, uint32_t id, uint64_t stamp, void **buf,
                         size_t *cap)
{
	struct uf_nats_ibook *ib = id < bk->max ? bk->v[id] : NULL;
	struct uf_nats_book *h;
	size_t need;

	if (!ib || !ib->present)
		return -ENOENT;
	need = sizeof(*h) + ((size_t)ib->b.nbid + ib->b.nask) * sizeof(struct uf_level);
	if (need > *cap) {
		void *p = realloc(*buf, need);
		if (!p)
			return -ENOMEM;
		*buf = p;
		*cap = need;
	}
	h = *buf;
	*h = ib->b;
	h->magic = UF_NATS_BOOK_MAGIC;
	h->version = UF_NATS_VERSION;
	h->instrument = id;
	h->generation = bk->generation;
	h->stamp = stamp > ib->b.stamp ? stamp : ib->b.stamp;
	h->nstatus = 0;
	for (uint32_t i = 0; i < UF_NATS_STATUS; i++)
		h->nstatus += h->status[i].code != 0;
	if (ib->b.nbid) /* an empty side may have no array at all */
		memcpy(h + 1, ib->bid, (size_t)ib->b.nbid * sizeof(struct uf_level));
	if (ib->b.nask)
		memcpy((struct uf_level *)(h + 1) + ib->b.nbid, ib->ask,
		       (size_t)ib->b.nask * sizeof(struct uf_level));
	return (int)need;
}

int uf_nats_books_decode(struct uf_nats_books *bk, const void *buf, size_t len, uint64_t min_from)
{
	struct uf_nats_book h;
	struct uf_nats_ibook *ib;
	const char *lv;

	if (len < sizeof(h))
		return -EPROTO;
	memcpy(&h, buf, sizeof(h));
	if (h.magic != UF_NATS_BOOK_MAGIC || h.version != UF_NATS_VERSION ||
	    len != sizeof(h) + ((size_t)h.nbid + h.nask) * sizeof(struct uf_level))
		return -EPROTO;
	if (h.generation != bk->generation)
		return -ESTALE;
	if (h.instrument >= bk->max)
		return -ERANGE;
	ib = ibook_get(bk, h.instrument);
	if (!ib)
		return -ENOMEM;
	lv = (const char *)buf + sizeof(h);
	ib->b = h;
	if (copy_levels(&ib->bid, &ib->b.nbid, &ib->bcap, lv, h.nbid) < 0 ||
	    copy_levels(&ib->ask, &ib->b.nask, &ib->acap,
	                lv + (size_t)h.nbid * sizeof(struct uf_level), h.nask) < 0)
		return -ENOMEM;
	ib->apply_from = h.stamp > min_from ? h.stamp : min_from;
	ib->present = 1;
	return 0;
}

int uf_nats_books_snapshot(const struct uf_nats_books *bk, uint32_t id, uint32_t depth,
                           uint64_t stamp, struct uf_book_snapshot *s)
{
	const struct uf_nats_ibook *ib;
	uint32_t ns = 0;
	int n = 8;

	if (id >= bk->max)
		return -ERANGE;
	ib = bk->v[id];
	if (!ib || !ib->present)
		return -ENOENT;
	if (depth > UF_BOOK_MAX_DEPTH)
		depth = UF_BOOK_MAX_DEPTH;
	memset(s, 0, offsetof(struct uf_book_snapshot, bid));
	s->instrument = id;
	s->flags = ib->b.flags;
	s->stamp = stamp;
	memcpy(s->symbol, &ib->b.symbol, 8);
	s->symbol[8] = '\0';
	while (n > 0 && (s->symbol[n - 1] == ' ' || s->symbol[n - 1] == '\0'))
		s->symbol[--n] = '\0';
	s->round_lot = ib->b.round_lot;
	s->category = ib->b.category;
	s->nbid = ib->b.nbid < depth ? ib->b.nbid : depth;
	s->nask = ib->b.nask < depth ? ib->b.nask : depth;
	if (s->nbid)
		memcpy(s->bid, ib->bid, (size_t)s->nbid * sizeof(struct uf_level));
	if (s->nask)
		memcpy(s->ask, ib->ask, (size_t)s->nask * sizeof(struct uf_level));
	s->last_price = ib->b.last_price;
	s->last_shares = ib->b.last_shares;
	s->last_exch_ts = ib->b.last_exch_ts;
	s->last_rx_ts = ib->b.last_rx_ts;
	s->volume = ib->b.volume;
	s->trades = ib->b.trades;
	s->update_rx_ts = ib->b.update_rx_ts;
	for (uint32_t i = 0; i < UF_NATS_STATUS && ns < UF_BOOK_MAX_STATUS; i++) {
		if (ib->b.status[i].code == 0)
			continue;
		s->status[ns].code = ib->b.status[i].code;
		s->status[ns].price = ib->b.status[i].price;
		s->status[ns].shares = ib->b.status[i].shares;
		s->status[ns].exch_ts = ib->b.status[i].exch_ts;
		ns++;
	}
	s->nstatus = ns;
	return 0;
}

uint32_t uf_nats_books_take_dirty(struct uf_nats_books *bk, const uint32_t **ids)
{
	uint32_t n = bk->ndirty;

	for (uint32_t i = 0; i < n; i++)
		if (bk->v[bk->dirty_ids[i]])
			bk->v[bk->dirty_ids[i]]->dirty = 0;
	bk->ndirty = 0;
	*ids = bk->dirty_ids;
	return n;
}

void uf_nats_books_mark_dirty(struct uf_nats_books *bk, uint32_t id)
{
	if (id < bk->max && bk->v[id])
		mark_dirty(bk, bk->v[id]);
}
