/* The one record -> book model (see book_model.h for every rule). */
#include "ring/book_model.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define SIDE_MIN 16 /* levels a side gets when it first grows */

static int side_index(int side)
{
	return side == UF_SIDE_BID ? 0 : side == UF_SIDE_ASK ? 1 : -1;
}

/* Bids sort by price, asks by -price: the best level is the last of either. */
static int64_t key_of(int sidx, int64_t price)
{
	return sidx == 0 ? price : -price;
}

/* Index of the first level whose key is >= price's key (binary search). */
static uint32_t side_find(const struct uf_bm_side *s, int sidx, int64_t price)
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

static int side_reserve(struct uf_bm_side *s, uint32_t need)
{
	uint32_t cap = s->cap ? s->cap : SIDE_MIN;
	struct uf_level *lv;

	if (need <= s->cap)
		return 0;
	while (cap < need) {
		if (cap > UINT32_MAX / 2)
			return -ENOMEM;
		cap *= 2;
	}
	lv = realloc(s->lv, (size_t)cap * sizeof(*lv));
	if (!lv)
		return -ENOMEM;
	s->lv = lv;
	s->cap = cap;
	return 0;
}

/* Sets the totals of one level; shares == 0 && orders == 0 removes it. */
static int side_set(struct uf_bm_side *s, int sidx, int64_t price, uint64_t shares, uint32_t orders)
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
		if (side_reserve(s, s->n + 1) < 0)
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

int uf_book_model_set_side(struct uf_bm_book *bk, int sidx, const void *src, uint32_t n)
{
	struct uf_bm_side *s = &bk->side[sidx];
	const unsigned char *p = src;

	if (side_reserve(s, n) < 0)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++) /* best first in, best last here; bytes: unaligned */
		memcpy(&s->lv[n - 1 - i], p + (size_t)i * sizeof(struct uf_level),
		       sizeof(struct uf_level));
	s->n = n;
	return 0;
}

/* ---- books ---- */

int uf_book_model_init(struct uf_book_model *m, uint32_t max)
{
	memset(m, 0, sizeof(*m));
	if (max == 0)
		return -EINVAL;
	m->v = calloc(max, sizeof(*m->v));
	if (!m->v)
		return -ENOMEM;
	m->max = max;
	return 0;
}

static void book_free(struct uf_bm_book *bk)
{
	if (!bk)
		return;
	free(bk->side[0].lv);
	free(bk->side[1].lv);
	free(bk);
}

void uf_book_model_wipe(struct uf_book_model *m)
{
	for (uint32_t i = 0; i < m->max; i++) {
		book_free(m->v[i]);
		m->v[i] = NULL;
	}
	m->all_stale = 0;
	m->floor = 0;
	m->next = 0;
	if (m->orders)
		memset(m->orders, 0, (m->omask + 1) * sizeof(*m->orders));
	m->stats.orders_live = 0;
}

void uf_book_model_free(struct uf_book_model *m)
{
	if (m->v)
		uf_book_model_wipe(m);
	free(m->v);
	free(m->orders);
	memset(m, 0, sizeof(*m));
}

struct uf_bm_book *uf_book_model_book(struct uf_book_model *m, uint32_t id)
{
	struct uf_bm_book *bk;

	if (id >= m->max)
		return NULL;
	bk = m->v[id];
	if (bk)
		return bk;
	bk = calloc(1, sizeof(*bk));
	if (!bk)
		return NULL;
	bk->id = id;
	bk->stamp = m->floor;
	bk->flags = m->all_stale ? UF_BOOKF_STALE : 0; /* a doubt of every book holds it too */
	m->v[id] = bk;
	return bk;
}

/* A new session: the book is void; its directory entry and statuses stay (image reset). */
static void book_void(struct uf_bm_book *bk)
{
	bk->side[0].n = 0;
	bk->side[1].n = 0;
	bk->flags = 0;
	bk->last_price = 0;
	bk->last_shares = 0;
	bk->last_exch_ts = 0;
	bk->last_rx_ts = 0;
	bk->volume = 0;
	bk->trades = 0;
}

static void notify(struct uf_book_model *m, const struct uf_bm_book *bk, uint64_t seq)
{
	if (m->changed)
		m->changed(m->changed_arg, bk->id, seq);
}

static void orders_clear(struct uf_book_model *m)
{
	if (m->orders)
		memset(m->orders, 0, (m->omask + 1) * sizeof(*m->orders));
	m->stats.orders_live = 0;
}

void uf_book_model_clear(struct uf_book_model *m)
{
	for (uint32_t i = 0; i < m->max; i++) {
		if (m->v[i]) {
			book_void(m->v[i]);
			m->v[i]->stamp = 0;
		}
	}
	m->all_stale = 0;
	m->floor = 0;
	orders_clear(m);
	m->stats.resets++;
}

/* ---- the live order table: open addressing, linear probing, backward-shift deletion (no
 * tombstones), sized once at 4/3 of the orders it must hold ---- */

static uint64_t order_home(const struct uf_book_model *m, uint64_t ref)
{
	return (ref * 0x9e3779b97f4a7c15ull >> 17) & m->omask; /* Fibonacci hash */
}

/* Slot of `ref`, or the free slot where it would go. */
static uint64_t order_find(const struct uf_book_model *m, uint64_t ref)
{
	uint64_t i = order_home(m, ref);

	while (m->orders[i].o.side && m->orders[i].o.ref != ref)
		i = (i + 1) & m->omask;
	return i;
}

static void order_remove(struct uf_book_model *m, uint64_t i)
{
	uint64_t j = i;

	m->orders[i].o.side = 0;
	for (;;) { /* pull back every later entry of the run that may sit in the hole */
		uint64_t h;
		j = (j + 1) & m->omask;
		if (!m->orders[j].o.side)
			break;
		h = order_home(m, m->orders[j].o.ref);
		/* entry j may move to i when its home is not in (i, j] (cyclically) */
		if ((j > i && (h <= i || h > j)) || (j < i && h <= i && h > j)) {
			m->orders[i] = m->orders[j];
			m->orders[j].o.side = 0;
			i = j;
		}
	}
	m->stats.orders_live--;
}

int uf_book_model_track_orders(struct uf_book_model *m, uint64_t max_orders)
{
	uint64_t slots = 16;

	if (max_orders == 0 || max_orders > (1ull << 40) || m->orders)
		return -EINVAL;
	while (slots < max_orders + max_orders / 3 + 1)
		slots <<= 1;
	m->orders = calloc(slots, sizeof(*m->orders));
	if (!m->orders)
		return -ENOMEM;
	m->omask = slots - 1;
	m->omax = max_orders;
	return 0;
}

int uf_book_model_order(const struct uf_book_model *m, uint64_t ref, struct uf_book_order *out)
{
	uint64_t i;

	if (!m->orders)
		return -ENOTSUP;
	i = order_find(m, ref);
	if (!m->orders[i].o.side)
		return -ENOENT;
	*out = m->orders[i].o;
	return 0;
}

int uf_book_model_for_each_order(const struct uf_book_model *m,
                                 int (*fn)(const struct uf_book_order *o, void *arg), void *arg)
{
	if (!m->orders)
		return -ENOTSUP;
	for (uint64_t i = 0; i <= m->omask; i++) {
		int rc;
		if (!m->orders[i].o.side)
			continue;
		rc = fn(&m->orders[i].o, arg);
		if (rc)
			return rc;
	}
	return 0;
}

/* ORDER_*: no level changes (the message's LEVEL record carries the totals); the order table
 * follows them when it is on. */
static int on_order(struct uf_book_model *m, const struct uf_record *r)
{
	uint64_t i;

	if (!m->orders || side_index(r->side) < 0) {
		m->stats.ignored++;
		return 0;
	}
	i = order_find(m, r->ref);
	if (r->kind == UF_REC_ORDER_ADD) {
		if (!m->orders[i].o.side) {
			if (m->stats.orders_live >= m->omax) {
				m->stats.orders_full++;
				return 0;
			}
			m->stats.orders_live++;
		}
		m->orders[i].o = (struct uf_book_order){.ref = r->ref,
		                                        .price = r->price,
		                                        .shares = r->shares,
		                                        .instrument = r->instrument,
		                                        .side = r->side};
		return 1;
	}
	if (!m->orders[i].o.side) {
		m->stats.orders_unknown++; /* it rested before we started: an image has no orders */
		return 0;
	}
	if (r->kind == UF_REC_ORDER_MODIFY) {
		m->orders[i].o.shares = r->shares;
		m->orders[i].o.price = r->price;
	} else {
		order_remove(m, i);
	}
	return 1;
}

/* ---- record kinds that touch one book ---- */

/* The book's doubt as the producer states it on the record. */
static void follow_stale(struct uf_bm_book *bk, const struct uf_record *r)
{
	if (r->flags & UF_RECF_STALE)
		bk->flags |= UF_BOOKF_STALE;
	else
		bk->flags &= ~(uint32_t)UF_BOOKF_STALE;
}

static int on_level(struct uf_bm_book *bk, const struct uf_record *r)
{
	int sidx = side_index(r->side);

	follow_stale(bk, r);
	bk->update_rx_ts = r->rx_ts;
	if (side_set(&bk->side[sidx], sidx, r->price, r->shares, r->orders) < 0) {
		bk->flags |= UF_BOOKF_STALE; /* a level is missing: say so rather than lie */
		return -ENOMEM;
	}
	return 1;
}

static void on_trade(struct uf_bm_book *bk, const struct uf_record *r)
{
	bk->last_price = r->price;
	bk->last_shares = r->shares;
	bk->last_exch_ts = r->exch_ts;
	bk->last_rx_ts = r->rx_ts;
	bk->volume += r->shares;
	bk->trades++;
	bk->update_rx_ts = r->rx_ts;
}

/* Latest value per code, in the code's own slot (changes_book let only known codes in). */
static void on_status(struct uf_bm_book *bk, const struct uf_record *r)
{
	bk->status[uf_status_slot(r->aux)] = (struct uf_book_status){
	    .code = r->aux, .price = r->price, .shares = r->shares, .exch_ts = r->exch_ts};
}

static void set_symbol(struct uf_bm_book *bk, uint64_t symbol)
{
	int n = 8;

	bk->symbol = symbol;
	memcpy(bk->name, &symbol, 8);
	bk->name[8] = '\0';
	while (n > 0 && (bk->name[n - 1] == ' ' || bk->name[n - 1] == '\0'))
		bk->name[--n] = '\0';
}

static void on_instrument(struct uf_bm_book *bk, const struct uf_record *r)
{
	set_symbol(bk, r->ref);
	bk->round_lot = (uint32_t)r->shares;
	bk->category = r->aux;
	/* Named in doubt: the STALE record may not have reached this consumer (a symbol filter
	 * that did not want the book then). The image flags its entry the same way. */
	if (r->flags & UF_RECF_STALE)
		bk->flags |= UF_BOOKF_STALE;
}

static void on_snapshot_begin(struct uf_bm_book *bk, const struct uf_record *r)
{
	bk->side[0].n = 0; /* the bracket's LEVEL records are the whole book */
	bk->side[1].n = 0;
	bk->flags &= ~(uint32_t)UF_BOOKF_TRUNCATED;
	follow_stale(bk, r);
}

/* 1 when record `r` changes its instrument's book (the book is made when absent). */
static int changes_book(const struct uf_record *r)
{
	switch (r->kind) {
	case UF_REC_LEVEL:
		return side_index(r->side) >= 0;
	case UF_REC_TRADE:
		return uf_rec_trade_prints(r);
	case UF_REC_STATUS: /* 0 and codes this build does not know: as the image refuses them */
		return uf_status_code_known(r->aux);
	case UF_REC_INSTRUMENT:
	case UF_REC_SNAPSHOT_BEGIN:
	case UF_REC_STALE:
		return 1;
	default:
		return 0; /* SNAPSHOT_END, kinds this model does not know */
	}
}

static int apply_one(struct uf_book_model *m, const struct uf_record *r, uint64_t seq)
{
	const struct uf_bm_book *cur = uf_book_model_peek(m, r->instrument);
	struct uf_bm_book *bk;
	int rc = 1;

	if (r->instrument >= m->max) {
		m->stats.ignored++;
		return 0;
	}
	if (cur && seq < cur->stamp) {
		m->stats.skipped++; /* the entry this book came from has it already */
		return 0;
	}
	if (r->kind >= UF_REC_ORDER_ADD && r->kind <= UF_REC_ORDER_DELETE)
		return on_order(m, r);
	if (!changes_book(r)) {
		m->stats.ignored++;
		return 0;
	}
	bk = uf_book_model_book(m, r->instrument);
	if (!bk)
		return -ENOMEM;
	switch (r->kind) {
	case UF_REC_LEVEL:
		rc = on_level(bk, r);
		break;
	case UF_REC_TRADE:
		on_trade(bk, r);
		break;
	case UF_REC_STATUS:
		on_status(bk, r);
		break;
	case UF_REC_INSTRUMENT:
		on_instrument(bk, r);
		break;
	case UF_REC_SNAPSHOT_BEGIN:
		on_snapshot_begin(bk, r);
		break;
	case UF_REC_STALE:
		bk->flags |= UF_BOOKF_STALE;
		break;
	}
	notify(m, bk, seq);
	return rc;
}

/* ---- record kinds that touch every book (each book still skips what its stamp holds) ---- */

static int apply_all(struct uf_book_model *m, const struct uf_record *r, uint64_t seq)
{
	for (uint32_t i = 0; i < m->max; i++) {
		struct uf_bm_book *bk = m->v[i];
		if (!bk || seq < bk->stamp)
			continue;
		if (r->kind == UF_REC_RESET)
			book_void(bk);
		else
			bk->flags |= UF_BOOKF_STALE;
		notify(m, bk, seq);
	}
	if (r->kind == UF_REC_RESET) {
		m->all_stale = 0;
		orders_clear(m);
		m->stats.resets++;
	} else {
		m->all_stale = 1;
		m->stats.gaps += r->kind == UF_REC_GAP;
	}
	return 1;
}

int uf_book_model_apply(struct uf_book_model *m, const struct uf_record *r, uint64_t seq)
{
	int rc;

	if (seq + 1 > m->next)
		m->next = seq + 1;
	if (seq < m->floor) {
		m->stats.skipped++;
		return 0;
	}
	if (r->kind == UF_REC_GAP || r->kind == UF_REC_RESET ||
	    (r->kind == UF_REC_STALE && r->instrument == UF_INSTRUMENT_ALL))
		rc = apply_all(m, r, seq);
	else
		rc = apply_one(m, r, seq);
	if (rc > 0)
		m->stats.applied++;
	return rc;
}

/* ---- image snapshots in and out ---- */

int uf_book_model_load(struct uf_book_model *m, const struct uf_book_snapshot *s)
{
	struct uf_bm_book *bk;
	uint32_t nbid = s->nbid < UF_BOOK_MAX_DEPTH ? s->nbid : UF_BOOK_MAX_DEPTH;
	uint32_t nask = s->nask < UF_BOOK_MAX_DEPTH ? s->nask : UF_BOOK_MAX_DEPTH;

	if (s->instrument >= m->max)
		return -ERANGE;
	bk = uf_book_model_book(m, s->instrument);
	if (!bk)
		return -ENOMEM;
	if (uf_book_model_set_side(bk, 0, s->bid, nbid) < 0 ||
	    uf_book_model_set_side(bk, 1, s->ask, nask) < 0)
		return -ENOMEM;
	bk->flags = s->flags & (UF_BOOKF_STALE | UF_BOOKF_TRUNCATED);
	bk->stamp = s->stamp;
	if (s->symbol[0]) {
		char b[8];
		uint64_t sym;
		memset(b, ' ', sizeof(b));
		memcpy(b, s->symbol, strnlen(s->symbol, 8));
		memcpy(&sym, b, 8);
		set_symbol(bk, sym);
	}
	bk->round_lot = s->round_lot;
	bk->category = s->category;
	bk->last_price = s->last_price;
	bk->last_shares = s->last_shares;
	bk->last_exch_ts = s->last_exch_ts;
	bk->last_rx_ts = s->last_rx_ts;
	bk->volume = s->volume;
	bk->trades = s->trades;
	bk->update_rx_ts = s->update_rx_ts;
	memset(bk->status, 0, sizeof(bk->status));
	for (uint32_t k = 0; k < s->nstatus && k < UF_BOOK_MAX_STATUS; k++)
		if (uf_status_code_known(s->status[k].code))
			bk->status[uf_status_slot(s->status[k].code)] = s->status[k];
	return 0;
}

/* A snapshot's statuses: the used slots, ascending code (the image's order). */
static void copy_statuses(const struct uf_bm_book *bk, struct uf_book_snapshot *s)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < UF_STATUS_MAX; i++)
		if (bk->status[i].code)
			s->status[n++] = bk->status[i];
	s->nstatus = n;
}

/* Copies up to `depth` best levels of one side best first; returns how many. */
static uint32_t copy_best(const struct uf_bm_side *s, struct uf_level *out, uint32_t depth)
{
	uint32_t k = 0;

	for (uint32_t i = s->n; i-- > 0 && k < depth;)
		out[k++] = s->lv[i];
	return k;
}

int uf_book_model_snapshot(const struct uf_book_model *m, uint32_t id, uint32_t depth,
                           uint64_t stamp, struct uf_book_snapshot *s)
{
	const struct uf_bm_book *bk;

	if (id >= m->max)
		return -ERANGE;
	bk = m->v[id];
	if (!bk)
		return -ENOENT;
	if (depth > UF_BOOK_MAX_DEPTH)
		depth = UF_BOOK_MAX_DEPTH;
	memset(s, 0, offsetof(struct uf_book_snapshot, bid));
	s->instrument = id;
	s->flags = bk->flags;
	if (bk->side[0].n > depth) /* the image cuts a deeper side and says so */
		s->flags |= UF_BOOKF_TRUNCATED_BID;
	if (bk->side[1].n > depth)
		s->flags |= UF_BOOKF_TRUNCATED_ASK;
	s->stamp = stamp;
	memcpy(s->symbol, bk->name, sizeof(s->symbol));
	s->round_lot = bk->round_lot;
	s->category = bk->category;
	s->nbid = copy_best(&bk->side[0], s->bid, depth);
	s->nask = copy_best(&bk->side[1], s->ask, depth);
	s->last_price = bk->last_price;
	s->last_shares = bk->last_shares;
	s->last_exch_ts = bk->last_exch_ts;
	s->last_rx_ts = bk->last_rx_ts;
	s->volume = bk->volume;
	s->trades = bk->trades;
	s->update_rx_ts = bk->update_rx_ts;
	copy_statuses(bk, s);
	return 0;
}

int uf_book_model_lookup(const struct uf_book_model *m, uint64_t symbol, uint32_t *id)
{
	for (uint32_t i = 0; i < m->max; i++) {
		if (m->v[i] && m->v[i]->symbol == symbol) {
			*id = i;
			return 0;
		}
	}
	return -ENOENT;
}
