/* A venue's events given as values (publish/uf_venue.h): price-level and level-1 books,
 * instrument ids per symbol, trades, statuses and directory entries, written as the same
 * records and kept in the same books as the ITCH path (publish.c, directory.c). */
#include <errno.h>
#include <string.h>

#include "common/uf_compiler.h"
#include "publish/publisher.h"
#include "publish/uf_venue.h"

static const uint8_t uf_venue_side_char[2] = {UF_SIDE_BID, UF_SIDE_ASK};

static inline struct uf_pub_ctx uf_venue_ctx(const struct uf_venue_msg *m)
{
	struct uf_pub_ctx c = {m->seq, m->rx_ts, m->exch_ts};
	return c;
}

int uf_venue_begin(struct uf_publisher *p, struct uf_venue_msg *m, size_t cap)
{
	(void)p;
	if (UF_UNLIKELY(cap < UF_REC_MAX_PER_MSG))
		return -ENOBUFS;
	m->inst = UF_INSTRUMENT_ALL;
	return 0;
}

int uf_venue_symbol(struct uf_publisher *p, struct uf_venue_msg *m, const char sym[8], int announce,
                    struct uf_record *out)
{
	int id = uf_pub_sym_find(p, sym);
	if (UF_LIKELY(id >= 0)) {
		m->inst = (uint32_t)id;
		return 0;
	}
	if (UF_UNLIKELY(p->next_id >= p->max_instruments)) {
		/* a book no id can name: some consumer's book is missing, which one it cannot
		 * tell */
		m->inst = UF_INSTRUMENT_ALL;
		uf_pub_doubt(p, UF_PUB_ERR_IDS_FULL, UF_INSTRUMENT_ALL);
		return 0;
	}
	uint32_t inst = p->next_id++;
	uf_pub_dir_name(p, inst, sym);
	m->inst = inst;
	if (!announce)
		return 0;
	struct uf_pub_ctx c = uf_venue_ctx(m);
	uint64_t key;
	memcpy(&key, sym, 8);
	uf_pub_rec(out, &c, UF_REC_INSTRUMENT, UF_SIDE_NONE, uf_pub_stale(&p->books[inst]), inst, 0,
	           0, 0, key);
	return 1;
}

/* The node of level `price` on side `sidx` of `b`, or 0 when the side has none. */
static inline uint32_t uf_venue_find(const struct uf_levels *lv, const struct uf_book *b,
                                     unsigned sidx, uint32_t price)
{
	const struct uf_book_side *s = &b->side[sidx];
	const uint64_t *a = uf_lv_entries(lv, s);
	uint32_t key = uf_lv_key(sidx, price);
	uint32_t pos = uf_lv_lower_bound(a, s->n, key);
	if (pos < s->n && (uint32_t)(a[pos] >> 32) == key)
		return (uint32_t)a[pos];
	return 0;
}

/* 1 when a venue price fits the level table (0 .. UINT32_MAX, 4 implied decimals): a level
 * outside it is refused and its book put in doubt. */
static inline int uf_venue_price_ok(int64_t price)
{
	return price >= 0 && price <= (int64_t)UINT32_MAX;
}

/* Sets level `price` of side `sidx` to `shares` (> 0), creating it. Writes its LEVEL record,
 * BBO when it is the side's best and it is new or its size changed; with `always` 0 an
 * unchanged level writes nothing. Returns the records written (0 or 1). */
static int uf_venue_set(struct uf_publisher *p, const struct uf_pub_ctx *c, uint32_t inst,
                        unsigned sidx, uint32_t price, uint64_t shares, int always,
                        struct uf_record *out)
{
	struct uf_book *b = &p->books[inst];
	int best;
	uint32_t lvl = uf_levels_get(&p->lv, b, inst, sidx, price, &best);
	if (UF_UNLIKELY(lvl == 0)) {
		uf_pub_doubt(p, UF_PUB_ERR_LEVELS_FULL, inst);
		return 0;
	}
	struct uf_level_node *nd = &p->lv.nodes[lvl];
	int changed = nd->shares != shares; /* a new node has 0 shares */
	if (!changed && !always)
		return 0;
	nd->shares = shares;
	nd->orders = 0; /* the venue does not say */
	uf_pub_rec(out, c, UF_REC_LEVEL, uf_venue_side_char[sidx],
	           uf_pub_stale(b) | (best && changed ? UF_RECF_BBO : 0), inst, price, shares, 0,
	           0);
	return 1;
}

/* Removes level node `lvl` of side `sidx`. Writes its LEVEL record (shares 0), BBO when it
 * was the side's best. Returns 1. */
static int uf_venue_remove(struct uf_publisher *p, const struct uf_pub_ctx *c, uint32_t inst,
                           unsigned sidx, uint32_t lvl, struct uf_record *out)
{
	struct uf_book *b = &p->books[inst];
	uint32_t price = p->lv.nodes[lvl].price;
	int was_best = uf_levels_remove(&p->lv, &b->side[sidx], lvl);
	uf_pub_rec(out, c, UF_REC_LEVEL, uf_venue_side_char[sidx],
	           uf_pub_stale(b) | (was_best ? UF_RECF_BBO : 0), inst, price, 0, 0, 0);
	return 1;
}

UF_HOT int uf_venue_level(struct uf_publisher *p, const struct uf_venue_msg *m, uint8_t side,
                          int64_t price, uint64_t shares, struct uf_record *out)
{
	uint32_t inst = m->inst;
	if (UF_UNLIKELY(inst >= p->max_instruments))
		return 0; /* no id: counted and doubted by uf_venue_symbol */
	unsigned sidx = side == UF_SIDE_ASK;
	if (UF_UNLIKELY(!sidx && side != UF_SIDE_BID)) {
		uf_pub_doubt(p, UF_PUB_ERR_BAD_SIDE, inst);
		return 0;
	}
	if (UF_UNLIKELY(!uf_venue_price_ok(price))) {
		uf_pub_doubt(p, UF_PUB_ERR_BAD_PRICE, inst);
		return 0;
	}
	struct uf_pub_ctx c = uf_venue_ctx(m);
	if (shares == 0) {
		uint32_t lvl = uf_venue_find(&p->lv, &p->books[inst], sidx, (uint32_t)price);
		if (UF_UNLIKELY(lvl == 0)) {
			/* the book never had it: it missed the update that made it */
			uf_pub_doubt(p, UF_PUB_ERR_UNKNOWN_LEVEL, inst);
			return 0;
		}
		return uf_venue_remove(p, &c, inst, sidx, lvl, out);
	}
	return uf_venue_set(p, &c, inst, sidx, (uint32_t)price, shares, 1, out);
}

/* One side of a level-1 quote: the side's one level becomes (price, size), none for size 0.
 * Returns the records written (0 to 2). */
static int uf_venue_top(struct uf_publisher *p, const struct uf_pub_ctx *c, uint32_t inst,
                        unsigned sidx, int64_t price, uint64_t size, struct uf_record *out)
{
	if (UF_UNLIKELY(size != 0 && !uf_venue_price_ok(price))) {
		uf_pub_doubt(p, UF_PUB_ERR_BAD_PRICE, inst);
		return 0;
	}
	struct uf_book *b = &p->books[inst];
	struct uf_book_side *s = &b->side[sidx];
	int k = 0;
	if (s->n != 0) {
		uint32_t best = (uint32_t)uf_lv_entries(&p->lv, s)[s->n - 1];
		if (size != 0 && p->lv.nodes[best].price == (uint32_t)price)
			return uf_venue_set(p, c, inst, sidx, (uint32_t)price, size, 0, out);
		k += uf_venue_remove(p, c, inst, sidx, best, out);
	}
	if (size != 0)
		k += uf_venue_set(p, c, inst, sidx, (uint32_t)price, size, 1, &out[k]);
	return k;
}

UF_HOT int uf_venue_quote(struct uf_publisher *p, const struct uf_venue_msg *m, int64_t bid_px,
                          uint64_t bid_sz, int64_t ask_px, uint64_t ask_sz, struct uf_record *out)
{
	uint32_t inst = m->inst;
	if (UF_UNLIKELY(inst >= p->max_instruments))
		return 0;
	struct uf_pub_ctx c = uf_venue_ctx(m);
	int k = uf_venue_top(p, &c, inst, 0, bid_px, bid_sz, out);
	k += uf_venue_top(p, &c, inst, 1, ask_px, ask_sz, &out[k]);
	return k;
}

/* A status record's effect on the instrument view and the market state, as its ITCH message
 * has (directory.c): the views a monitor reads agree whatever the venue. */
static void uf_venue_status_view(struct uf_publisher *p, uint32_t inst, uint32_t code,
                                 uint64_t shares, uint64_t ref)
{
	if (code == UF_STATUS_SYSTEM) {
		p->market.system_event = (uint8_t)shares;
		return;
	}
	if (inst >= p->max_instruments)
		return;
	struct uf_pub_instrument *in = &p->inst[inst];
	switch (code) {
	case UF_STATUS_TRADING: {
		uint32_t reason = (uint32_t)ref;
		in->trading_state = (uint8_t)shares;
		memcpy(in->halt_reason, &reason, 4);
		break;
	}
	case UF_STATUS_REG_SHO:
		in->reg_sho = (uint8_t)shares;
		break;
	case UF_STATUS_OP_HALT:
		in->op_halt = (uint8_t)shares;
		break;
	case UF_STATUS_RPI:
		in->rpi = (uint8_t)shares;
		break;
	default:
		break;
	}
}

int uf_venue_record(struct uf_publisher *p, const struct uf_venue_msg *m, int market, uint8_t kind,
                    uint8_t side, int64_t price, uint64_t shares, uint32_t aux, uint64_t ref,
                    struct uf_record *out)
{
	uint32_t inst = market ? 0 : m->inst;
	if (!market && inst >= p->max_instruments)
		return 0;
	struct uf_pub_ctx c = uf_venue_ctx(m);
	uint16_t fl = market ? 0 : uf_pub_stale(&p->books[inst]);
	uf_pub_rec(out, &c, kind, side, fl, inst, price, shares, aux, ref);
	if (kind == UF_REC_TRADE)
		uf_pub_trade(p, out);
	else if (kind == UF_REC_STATUS)
		uf_venue_status_view(p, inst, aux, shares, ref);
	return 1;
}

int uf_venue_directory(struct uf_publisher *p, const struct uf_venue_msg *m, uint32_t round_lot,
                       uint8_t luld_tier, uint8_t market_category, uint8_t financial_status,
                       struct uf_record *out)
{
	uint32_t inst = m->inst;
	if (inst >= p->max_instruments)
		return 0;
	struct uf_pub_instrument *in = &p->inst[inst];
	in->round_lot = round_lot;
	in->luld_tier = luld_tier;
	in->market_category = market_category;
	in->financial_status = financial_status;
	in->has_directory = 1;
	struct uf_pub_ctx c = uf_venue_ctx(m);
	uint64_t key;
	memcpy(&key, in->symbol, 8);
	uf_pub_rec(out, &c, UF_REC_INSTRUMENT, UF_SIDE_NONE, uf_pub_stale(&p->books[inst]), inst,
	           financial_status, round_lot, market_category, key);
	return 1;
}

UF_HOT int uf_venue_end(struct uf_publisher *p, const struct uf_venue_msg *m,
                        enum uf_venue_event ev, struct uf_record *out, int k)
{
	if (UF_UNLIKELY(p->doubt)) {
		struct uf_pub_ctx c = uf_venue_ctx(m);
		k += uf_pub_doubt_out(p, &c, &out[k]);
	}
	int last;
	if (ev == UF_VENUE_EV_OPEN) {
		p->ev_open = 1;
		last = 0;
	} else if (ev == UF_VENUE_EV_CLOSE) {
		p->ev_open = 0;
		last = 1;
	} else {
		last = !p->ev_open;
	}
	if (last && k > 0)
		out[k - 1].flags |= UF_RECF_LAST;
	p->last_seq = m->seq;
	p->last_ts = m->exch_ts;
	uf_pub_account(p, 1, (uint64_t)k);
	return k;
}

UF_COLD int uf_venue_day(struct uf_publisher *p, uint64_t seq, uint64_t rx_ts, uint64_t exch_ts,
                         const char mic[8], uint32_t date, struct uf_record *out, size_t cap)
{
	struct uf_venue_msg m = {.seq = seq, .rx_ts = rx_ts, .exch_ts = exch_ts};
	uint64_t key;
	memcpy(&key, mic, 8);
	if (uf_venue_begin(p, &m, cap) != 0 ||
	    uf_venue_record(p, &m, 1, UF_REC_STATUS, 0, (int64_t)key, date, UF_STATUS_VENUE, key,
	                    out) != 1)
		return 0;
	out->flags |= UF_RECF_LAST;
	uf_pub_account(p, 0, 1); /* a record, no message of its own */
	return 1;
}
