/* Applying ITCH messages to the books and writing their records; setup and the read side. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "common/uf_compiler.h"
#include "common/uf_time.h"
#include "publish/pub_mem.h"
#include "publish/publisher.h"

#define UF_PUB_DEFAULT_MAX_ORDERS      4000000ull
#define UF_PUB_DEFAULT_MAX_INSTRUMENTS 16384u
#define UF_PUB_DEFAULT_MAX_LEVELS      (1u << 20)
#define UF_PUB_DEFAULT_PREFETCH        16u

static const uint8_t uf_pub_side_char[2] = {UF_SIDE_BID, UF_SIDE_ASK};

void uf_publish_params_default(struct uf_publish_params *pp)
{
	memset(pp, 0, sizeof(*pp));
	pp->max_orders = UF_PUB_DEFAULT_MAX_ORDERS;
	pp->max_instruments = UF_PUB_DEFAULT_MAX_INSTRUMENTS;
	pp->max_levels = UF_PUB_DEFAULT_MAX_LEVELS;
	pp->prefetch = UF_PUB_DEFAULT_PREFETCH;
	pp->numa_node = -1;
	pp->page_kinds = UF_PUB_PAGES_HUGETLB | UF_PUB_PAGES_THP;
}

uint64_t uf_publish_memory(const struct uf_publish_params *pp)
{
	if (pp->max_instruments == 0 || pp->max_instruments > UF_PUB_MAX_INSTRUMENTS ||
	    pp->max_levels == 0 || pp->max_levels >= (1u << 30))
		return 0;
	uint64_t orders = uf_orders_bytes(pp->max_orders);
	if (orders == 0)
		return 0;
	uint64_t nsym = 16;
	while (nsym < 2ull * pp->max_instruments)
		nsym <<= 1;
	return orders + uf_levels_bytes(pp->max_levels, pp->max_instruments) +
	       (uint64_t)pp->max_instruments *
	           (sizeof(struct uf_book) + sizeof(struct uf_pub_instrument)) +
	       nsym * sizeof(uint32_t);
}

UF_COLD int uf_publish_create(const struct uf_publish_params *pp, struct uf_publisher **out)
{
	int rc;
	*out = NULL;
	if (pp->max_instruments == 0 || pp->max_instruments > UF_PUB_MAX_INSTRUMENTS)
		return -EINVAL;
	struct uf_publisher *p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->max_instruments = pp->max_instruments;
	p->prefetch = pp->prefetch;
	p->flags = pp->flags;
	p->numa_node = pp->numa_node;
	p->next_id = 1; /* uf_venue_symbol: id 0 stays the market's */

	rc = uf_orders_init(&p->orders, pp->max_orders, pp->numa_node, pp->page_kinds);
	if (rc)
		goto out_free;
	rc = uf_levels_init(&p->lv, pp->max_levels, pp->max_instruments, pp->numa_node,
	                    pp->page_kinds);
	if (rc)
		goto out_orders;
	rc = -ENOMEM;
	p->books_bytes = (size_t)pp->max_instruments * sizeof(struct uf_book);
	p->books = uf_pub_mem_alloc(p->books_bytes, pp->numa_node);
	if (!p->books)
		goto out_levels;
	p->inst_bytes = (size_t)pp->max_instruments * sizeof(struct uf_pub_instrument);
	p->inst = uf_pub_mem_alloc(p->inst_bytes, pp->numa_node);
	if (!p->inst)
		goto out_books;
	uint32_t nsym = 16;
	while (nsym < 2 * pp->max_instruments)
		nsym <<= 1;
	p->sym_mask = nsym - 1;
	p->sym_bytes = (size_t)nsym * sizeof(uint32_t);
	p->sym_slots = uf_pub_mem_alloc(p->sym_bytes, pp->numa_node);
	if (!p->sym_slots)
		goto out_inst;
	*out = p;
	return 0;

out_inst:
	uf_pub_mem_free(p->inst, p->inst_bytes);
out_books:
	uf_pub_mem_free(p->books, p->books_bytes);
out_levels:
	uf_levels_fini(&p->lv);
out_orders:
	uf_orders_fini(&p->orders);
out_free:
	free(p);
	return rc;
}

void uf_publish_destroy(struct uf_publisher *p)
{
	if (!p)
		return;
	uf_pub_mem_free(p->sym_slots, p->sym_bytes);
	uf_pub_mem_free(p->inst, p->inst_bytes);
	uf_pub_mem_free(p->books, p->books_bytes);
	uf_levels_fini(&p->lv);
	uf_orders_fini(&p->orders);
	free(p);
}

UF_COLD void uf_publish_reset(struct uf_publisher *p)
{
	uf_orders_clear(&p->orders);
	uf_levels_clear(&p->lv);
	for (uint32_t i = 0; i < p->max_instruments; i++) {
		uint32_t named = p->books[i].named;
		memset(&p->books[i], 0, sizeof(p->books[i]));
		p->books[i].named = named;
		struct uf_pub_instrument *in = &p->inst[i];
		in->stale = 0;
		/* a new day: volume and last trade start over (UF_REC_RESET says so) */
		in->last_trade_price = in->last_trade_shares = in->last_trade_ts = 0;
		in->last_trade_match = in->volume = 0;
	}
	p->all_stale = 0;
	p->doubt = 0;
	p->ev_open = 0;
	uf_store_relaxed_u64(&p->st.stale_books, 0);
	uf_store_relaxed_u64(&p->st.live_orders, 0);
	uf_store_relaxed_u64(&p->st.live_levels, 0);
}

unsigned uf_publish_book_memory(const struct uf_publisher *p, uint64_t *huge_bytes, uint64_t *bytes)
{
	const struct uf_pub_mem *m[3] = {&p->orders.mem, &p->lv.nodes_mem, &p->lv.arena_mem};
	unsigned kind = UF_PUB_PAGE_HUGETLB;
	uint64_t huge = 0, all = 0;
	int big = 0;
	for (int i = 0; i < 3; i++) {
		/* A table under one huge page is on 4k by design (pub_mem.c) and costs a few
		 * TLB entries: it does not make the books "4k". */
		if (m[i]->bytes >= UF_PUB_HUGE_PAGE) {
			kind = m[i]->kind < kind ? m[i]->kind : kind;
			big = 1;
		}
		huge += m[i]->huge_bytes;
		all += m[i]->bytes;
	}
	if (!big)
		kind = UF_PUB_PAGE_4K;
	if (huge_bytes)
		*huge_bytes = huge;
	if (bytes)
		*bytes = all;
	return kind;
}

const char *uf_publish_page_kind_name(unsigned kind)
{
	static const char *const names[] = {
	    [UF_PUB_PAGE_4K] = "4k", [UF_PUB_PAGE_THP] = "thp", [UF_PUB_PAGE_HUGETLB] = "hugetlb"};
	return kind < sizeof(names) / sizeof(names[0]) ? names[kind] : "?";
}

void uf_publish_set_prefetch(struct uf_publisher *p, uint32_t distance)
{
	p->prefetch = distance;
}

/* ---- the hot path ---------------------------------------------------------------------- */

/* Writes the LEVEL record for node `lvl` of `b` after a change; removes the level first when
 * it has no orders left. Returns records written (1). */
static inline __attribute__((always_inline)) int
uf_pub_level_out(struct uf_publisher *p, struct uf_book *b, uint32_t lvl, int best,
                 const struct uf_pub_ctx *c, struct uf_record *r)
{
	struct uf_level_node *nd = &p->lv.nodes[lvl];
	unsigned sidx = nd->book & 1;
	uint32_t inst = nd->book >> 1;
	uint16_t fl = uf_pub_stale(b) | (best ? UF_RECF_BBO : 0);
	if (nd->orders == 0) {
		uint32_t price = nd->price;
		if (uf_levels_remove(&p->lv, &b->side[sidx], lvl))
			fl |= UF_RECF_BBO;
		uf_pub_rec(r, c, UF_REC_LEVEL, uf_pub_side_char[sidx], fl, inst, price, 0, 0, 0);
	} else {
		uf_pub_rec(r, c, UF_REC_LEVEL, uf_pub_side_char[sidx], fl, inst, nd->price,
		           nd->shares, nd->orders, 0);
	}
	return 1;
}

/* Adds order `ref` to instrument `inst`. Returns records written; 0 when refused. */
static inline __attribute__((always_inline)) int
uf_pub_add(struct uf_publisher *p, uint32_t inst, uint8_t side, uint64_t ref, uint32_t shares,
           uint32_t price, uint32_t attribution, uint16_t rflag, const struct uf_pub_ctx *c,
           struct uf_record *r)
{
	/* The side is random from message to message: compute the index, branch only on the
	 * (never taken) bad case. */
	unsigned sidx = side == 'S';
	if (UF_UNLIKELY(!sidx && side != 'B')) {
		uf_pub_doubt(p, UF_PUB_ERR_BAD_SIDE, inst);
		return 0;
	}
	int dup = 0;
	struct uf_order *o = uf_orders_insert(&p->orders, ref, &dup);
	if (UF_UNLIKELY(!o)) {
		uf_pub_doubt(p, dup ? UF_PUB_ERR_DUP_REF : UF_PUB_ERR_ORDERS_FULL, inst);
		return 0;
	}
	struct uf_book *b = &p->books[inst];
	int best;
	uint32_t lvl = uf_levels_get(&p->lv, b, inst, sidx, price, &best);
	if (UF_UNLIKELY(lvl == 0)) {
		p->orders.count--; /* the slot was never made live (level still 0) */
		uf_pub_doubt(p, UF_PUB_ERR_LEVELS_FULL, inst);
		return 0;
	}
	o->shares = shares;
	o->level = lvl;
	struct uf_level_node *nd = &p->lv.nodes[lvl];
	nd->shares += shares;
	nd->orders++;
	int k = 0;
	uint16_t st = uf_pub_stale(b);
	if (!(p->flags & UF_PUB_F_NO_MBO))
		uf_pub_rec(&r[k++], c, UF_REC_ORDER_ADD, side, st | rflag, inst, price, shares,
		           attribution, ref);
	uf_pub_rec(&r[k++], c, UF_REC_LEVEL, side, st | (best ? UF_RECF_BBO : 0), inst, price,
	           nd->shares, nd->orders, 0);
	return k;
}

/* Takes up to `want` shares off order `o` (all of them when `all`); asking for more than
 * the order has is counted as `over` and takes what there is. Writes ORDER_MODIFY/DELETE
 * and LEVEL; reports the order's instrument, side index and price through the out
 * pointers. Returns records written. */
static inline __attribute__((always_inline)) int
uf_pub_reduce(struct uf_publisher *p, struct uf_order *o, uint32_t want, int all,
              enum uf_pub_err over, uint32_t locate, uint16_t rflag, const struct uf_pub_ctx *c,
              struct uf_record *r, uint32_t *inst_out, unsigned *sidx_out, uint32_t *price_out)
{
	uint32_t lvl = o->level;
	uint64_t ref = o->ref;
	struct uf_level_node *nd = &p->lv.nodes[lvl];
	uint32_t inst = nd->book >> 1;
	unsigned sidx = nd->book & 1;
	uint32_t price = nd->price;
	uint32_t before = o->shares;
	uint32_t removed = before;
	if (UF_UNLIKELY(inst != locate))
		uf_pub_error(p, UF_PUB_ERR_LOCATE_MISMATCH);
	if (!all) {
		if (UF_UNLIKELY(want > before))
			uf_pub_doubt(p, over, inst);
		else
			removed = want;
	}
	uint32_t left = before - removed;
	nd->shares -= removed;
	struct uf_book *b = &p->books[inst];
	uint16_t st = uf_pub_stale(b);
	int k = 0;
	if (left == 0) {
		nd->orders--;
		uf_orders_remove(&p->orders, o);
		if (!(p->flags & UF_PUB_F_NO_MBO))
			uf_pub_rec(&r[k++], c, UF_REC_ORDER_DELETE, uf_pub_side_char[sidx],
			           st | rflag, inst, price, before, removed, ref);
	} else {
		o->shares = left;
		if (!(p->flags & UF_PUB_F_NO_MBO))
			uf_pub_rec(&r[k++], c, UF_REC_ORDER_MODIFY, uf_pub_side_char[sidx], st,
			           inst, price, left, removed, ref);
	}
	/* BBO only when the best level really changed (a 0-share execution changes nothing). */
	int best = (removed || left == 0) && uf_levels_is_best(&p->lv, &b->side[sidx], lvl);
	k += uf_pub_level_out(p, b, lvl, best, c, &r[k]);
	*inst_out = inst;
	*sidx_out = sidx;
	*price_out = price;
	return k;
}

static inline uint16_t uf_pub_inst_stale(const struct uf_publisher *p, uint32_t inst)
{
	return inst < p->max_instruments ? uf_pub_stale(&p->books[inst]) : 0;
}

/* One message; records are written without UF_RECF_LAST. */
static inline __attribute__((always_inline)) int uf_pub_apply_one(struct uf_publisher *p,
                                                                  const struct uf_itch_msg *m,
                                                                  const struct uf_pub_ctx *c,
                                                                  struct uf_record *r)
{
	uint32_t loc = m->locate;
	uint32_t inst;
	unsigned sidx;
	uint32_t price;
	struct uf_order *o;
	int k;

	switch (m->type) {
	case 'A':
	case 'F': {
		if (UF_UNLIKELY(loc >= p->max_instruments)) {
			uf_pub_error(p, UF_PUB_ERR_BAD_INSTRUMENT);
			return 0;
		}
		uint32_t attr = 0;
		if (m->type == 'F')
			memcpy(&attr, m->u.add.attribution, 4);
		k = uf_pub_add(p, loc, m->u.add.side, m->u.add.order_ref, m->u.add.shares,
		               m->u.add.price, attr, 0, c, r);
		if (UF_UNLIKELY(k && !p->books[loc].named))
			uf_pub_dir_name(p, loc, m->u.add.stock);
		return k;
	}
	case 'E':
	case 'C': {
		o = uf_orders_find(&p->orders, m->u.exec.order_ref);
		if (UF_UNLIKELY(!o)) {
			uf_pub_doubt(p, UF_PUB_ERR_UNKNOWN_REF, loc);
			if (m->type == 'C' && loc < p->max_instruments) {
				/* The print still happened at a known price; the resting side is
				 * unknown. */
				uint32_t aux =
				    UF_TRADE_EXEC_PRICE |
				    (m->u.exec.printable == 'N' ? UF_TRADE_NONPRINTABLE : 0);
				uf_pub_rec(r, c, UF_REC_TRADE, UF_SIDE_NONE,
				           uf_pub_inst_stale(p, loc), loc, m->u.exec.price,
				           m->u.exec.shares, aux, m->u.exec.match);
				uf_pub_trade(p, r);
				return 1;
			}
			return 0;
		}
		k = uf_pub_reduce(p, o, m->u.exec.shares, 0, UF_PUB_ERR_OVER_EXEC, loc, 0, c, r,
		                  &inst, &sidx, &price);
		uint32_t aux;
		uint32_t tprice;
		if (m->type == 'E') {
			aux = UF_TRADE_EXEC;
			tprice = price;
		} else {
			aux = UF_TRADE_EXEC_PRICE;
			tprice = m->u.exec.price;
			if (m->u.exec.printable == 'N')
				aux |= UF_TRADE_NONPRINTABLE;
		}
		uf_pub_rec(&r[k], c, UF_REC_TRADE, uf_pub_side_char[sidx],
		           uf_pub_stale(&p->books[inst]), inst, tprice, m->u.exec.shares, aux,
		           m->u.exec.match);
		uf_pub_trade(p, &r[k++]);
		return k;
	}
	case 'X':
		o = uf_orders_find(&p->orders, m->u.cancel.order_ref);
		if (UF_UNLIKELY(!o)) {
			uf_pub_doubt(p, UF_PUB_ERR_UNKNOWN_REF, loc);
			return 0;
		}
		return uf_pub_reduce(p, o, m->u.cancel.shares, 0, UF_PUB_ERR_OVER_CANCEL, loc, 0, c,
		                     r, &inst, &sidx, &price);
	case 'D':
		o = uf_orders_find(&p->orders, m->u.del.order_ref);
		if (UF_UNLIKELY(!o)) {
			uf_pub_doubt(p, UF_PUB_ERR_UNKNOWN_REF, loc);
			return 0;
		}
		return uf_pub_reduce(p, o, 0, 1, UF_PUB_ERR_OVER_CANCEL, loc, 0, c, r, &inst, &sidx,
		                     &price);
	case 'U': {
		o = uf_orders_find(&p->orders, m->u.replace.orig_ref);
		if (UF_UNLIKELY(!o)) {
			uf_pub_doubt(p, UF_PUB_ERR_UNKNOWN_REF, loc);
			return 0;
		}
		/* The new order keeps side and instrument, takes new shares and price, and goes
		 * to the back of its level's queue: delete then add. */
		k = uf_pub_reduce(p, o, 0, 1, UF_PUB_ERR_OVER_CANCEL, loc, UF_RECF_REPLACE, c, r,
		                  &inst, &sidx, &price);
		k += uf_pub_add(p, inst, uf_pub_side_char[sidx], m->u.replace.new_ref,
		                m->u.replace.shares, m->u.replace.price, 0, UF_RECF_REPLACE, c,
		                &r[k]);
		return k;
	}
	case 'P':
		if (UF_UNLIKELY(loc >= p->max_instruments)) {
			uf_pub_error(p, UF_PUB_ERR_BAD_INSTRUMENT);
			return 0;
		}
		uf_pub_rec(r, c, UF_REC_TRADE,
		           (m->u.trade.side == 'B' || m->u.trade.side == 'S') ? m->u.trade.side : 0,
		           uf_pub_stale(&p->books[loc]), loc, m->u.trade.price, m->u.trade.shares,
		           UF_TRADE_NON_CROSS, m->u.trade.match);
		uf_pub_trade(p, r);
		if (UF_UNLIKELY(!p->books[loc].named))
			uf_pub_dir_name(p, loc, m->u.trade.stock);
		return 1;
	case 'Q':
		if (UF_UNLIKELY(loc >= p->max_instruments)) {
			uf_pub_error(p, UF_PUB_ERR_BAD_INSTRUMENT);
			return 0;
		}
		uf_pub_rec(r, c, UF_REC_TRADE, UF_SIDE_NONE, uf_pub_stale(&p->books[loc]), loc,
		           m->u.cross.price, m->u.cross.shares,
		           UF_TRADE_CROSS | (uint32_t)m->u.cross.cross_type << 8, m->u.cross.match);
		uf_pub_trade(p, r); /* a cross of 0 shares did not happen: no print */
		return 1;
	case 'B':
		uf_pub_rec(r, c, UF_REC_TRADE, UF_SIDE_NONE, uf_pub_inst_stale(p, loc), loc, 0, 0,
		           UF_TRADE_BROKEN, m->u.broken.match);
		return 1;
	default:
		return uf_pub_status_apply(p, m, c, r);
	}
}

/* Puts book `inst` (UF_INSTRUMENT_ALL: every book) in doubt and writes its UF_REC_STALE
 * record (without UF_RECF_LAST) when that changes anything. Returns records written (0/1). */
static UF_COLD void uf_pub_all_stale(struct uf_publisher *p);

static int uf_pub_stale_out(struct uf_publisher *p, uint32_t inst, uint32_t reason, uint32_t kind,
                            const struct uf_pub_ctx *c, struct uf_record *r)
{
	if (inst == UF_INSTRUMENT_ALL) {
		if (p->all_stale)
			return 0;
		uf_pub_all_stale(p);
	} else {
		if (inst >= p->max_instruments || p->books[inst].stale)
			return 0;
		p->books[inst].stale = 1;
		p->inst[inst].stale = 1;
		uf_store_relaxed_u64(&p->st.stale_books, p->st.stale_books + 1);
	}
	uf_pub_rec(r, c, UF_REC_STALE, UF_SIDE_NONE, UF_RECF_STALE, inst, 0, kind, reason, 0);
	return 1;
}

/* The doubt a message's errors raised (uf_pub_doubt), as its last record. Cold. */
UF_COLD __attribute__((noinline)) int
uf_pub_doubt_out(struct uf_publisher *p, const struct uf_pub_ctx *c, struct uf_record *r)
{
	uint32_t reason = p->doubt_kind == UF_PUB_ERR_ORDERS_FULL ||
	                          p->doubt_kind == UF_PUB_ERR_LEVELS_FULL ||
	                          p->doubt_kind == UF_PUB_ERR_IDS_FULL
	                      ? UF_STALE_TABLE_FULL
	                      : UF_STALE_INTEGRITY;
	p->doubt = 0;
	return uf_pub_stale_out(p, p->doubt_inst, reason, p->doubt_kind, c, r);
}

/* Finishes one message: LAST flag, counters. */
static inline void uf_pub_done(struct uf_publisher *p, const struct uf_itch_msg *m, uint64_t seq,
                               struct uf_record *r, int k)
{
	if (k > 0)
		r[k - 1].flags |= UF_RECF_LAST;
	p->last_seq = seq;
	p->last_ts = m->timestamp;
}

UF_HOT int uf_publish_apply(struct uf_publisher *p, const struct uf_itch_msg *m, uint64_t feed_seq,
                            uint64_t rx_ts, struct uf_record *out, size_t cap)
{
	if (UF_UNLIKELY(cap < UF_REC_MAX_PER_MSG))
		return -ENOBUFS;
	struct uf_pub_ctx c = {feed_seq, rx_ts, m->timestamp};
	int k = uf_pub_apply_one(p, m, &c, out);
	if (UF_UNLIKELY(p->doubt))
		k += uf_pub_doubt_out(p, &c, &out[k]);
	uf_pub_done(p, m, feed_seq, out, k);
	uf_pub_account(p, 1, (uint64_t)k);
	return k;
}

/* The look-ahead helpers must be inlined before GCC's pure-const analysis runs: GCC 12
 * models __builtin_prefetch as side-effect free, finds an out-of-line helper that only reads
 * and prefetches "pure", and deletes every call to it (seen: no prefetch instruction left in
 * the object). always_inline puts the prefetches into the (impure) batch loop first. */
#define UF_PUB_INLINE static inline __attribute__((always_inline))

/* Message types that touch an order (A F E C X D U), as bits over 'A'..'Z'. Their order
 * reference is the first field of each of their union members, so one load reads it. */
#define UF_PUB_ORDER_TYPES                                                                         \
	((1u << ('A' - 'A')) | (1u << ('F' - 'A')) | (1u << ('E' - 'A')) | (1u << ('C' - 'A')) |   \
	 (1u << ('X' - 'A')) | (1u << ('D' - 'A')) | (1u << ('U' - 'A')))
_Static_assert(offsetof(struct uf_itch_msg, u.add.order_ref) ==
                       offsetof(struct uf_itch_msg, u.del.order_ref) &&
                   offsetof(struct uf_itch_msg, u.exec.order_ref) ==
                       offsetof(struct uf_itch_msg, u.del.order_ref) &&
                   offsetof(struct uf_itch_msg, u.cancel.order_ref) ==
                       offsetof(struct uf_itch_msg, u.del.order_ref) &&
                   offsetof(struct uf_itch_msg, u.replace.orig_ref) ==
                       offsetof(struct uf_itch_msg, u.del.order_ref),
               "every order message keeps its reference at one offset");

static inline int uf_pub_is_order_msg(uint8_t type)
{
	unsigned t = (unsigned)type - 'A';
	return t < 26 && ((UF_PUB_ORDER_TYPES >> t) & 1);
}

/* Look-ahead, stage 1 (far): the order-table home slot and the book of a coming order
 * message. Both addresses come from the message alone; the few branches are on "is it an
 * order message", which nearly every message is, so they predict well. */
UF_PUB_INLINE void uf_pub_prefetch_far(const struct uf_publisher *p, const struct uf_itch_msg *m)
{
	if (!uf_pub_is_order_msg(m->type))
		return;
	uint64_t h = uf_orders_home(&p->orders, m->u.del.order_ref);
	UF_PREFETCHW(&p->orders.slots[h]);
	/* The slot after it: a delete's backward shift reads it, and for the last slot of a
	 * line (one home in four) that is the next line. For the other three it is the same
	 * line again, which costs nothing: no branch on the slot's place in its line. */
	UF_PREFETCHW(&p->orders.slots[(h + 1) & p->orders.mask]);
	if (UF_UNLIKELY(m->type == 'U'))
		UF_PREFETCHW(uf_orders_home_slot(&p->orders, m->u.replace.new_ref));
	if (m->locate < p->max_instruments)
		UF_PREFETCHW(&p->books[m->locate]);
}

/* Stage 2 (near): what the stage-1 lines point to, reading only those lines, without
 * branching on the message type (a type switch here mispredicts about every other message):
 * the level node of the order in the home slot when it is the one named (E C X D U; for an
 * add the slot is empty or another order's), and the best end of the book side an add would
 * join (for other types a side of the same book, usually needed when a level empties). */
UF_PUB_INLINE void uf_pub_prefetch_near(const struct uf_publisher *p, const struct uf_itch_msg *m)
{
	if (!uf_pub_is_order_msg(m->type) || m->locate >= p->max_instruments)
		return;
	uint64_t ref = m->u.del.order_ref;
	const struct uf_order *s = uf_orders_home_slot(&p->orders, ref);
	const struct uf_book_side *bs = &p->books[m->locate].side[m->u.add.side == 'S'];
	/* A mask instead of ?: GCC made the select a branch, mispredicted on every add. */
	uint32_t hit = 0u - (uint32_t)(s->ref == ref);
	UF_PREFETCHW(&p->lv.nodes[s->level & hit]);
	UF_PREFETCHW(&p->lv.arena[bs->base + (bs->n ? bs->n - 1 : 0)]);
}

UF_HOT void uf_publish_prefetch(const struct uf_publisher *p, const struct uf_itch_msg *msgs,
                                size_t n)
{
	if (!p->prefetch)
		return;
	for (size_t i = 0; i < n; i++)
		uf_pub_prefetch_far(p, &msgs[i]);
}

UF_HOT int uf_publish_apply_batch(struct uf_publisher *p, const struct uf_itch_msg *msgs, size_t n,
                                  uint64_t first_seq, uint64_t rx_ts, struct uf_record *out,
                                  size_t cap, size_t *applied)
{
	struct uf_pub_ctx c = {0, rx_ts, 0};
	/* Two stages: addresses from the message `far` ahead, then what those lines point to
	 * `far / 2` ahead, when they have had half the distance to arrive. */
	size_t far = p->prefetch, near = far / 2;
	size_t i, k = 0;
	if (far) {
		/* Prime the pipeline: the first messages get what the loop would have issued. */
		for (i = 0; i < far && i < n; i++)
			uf_pub_prefetch_far(p, &msgs[i]);
	}
	for (i = 0; i < n; i++) {
		if (UF_UNLIKELY(cap - k < UF_REC_MAX_PER_MSG))
			break;
		if (far) {
			if (i + far < n)
				uf_pub_prefetch_far(p, &msgs[i + far]);
			if (near && i + near < n)
				uf_pub_prefetch_near(p, &msgs[i + near]);
		}
		const struct uf_itch_msg *m = &msgs[i];
		c.seq = first_seq + i;
		c.exch_ts = m->timestamp;
		int r = uf_pub_apply_one(p, m, &c, &out[k]);
		if (UF_UNLIKELY(p->doubt))
			r += uf_pub_doubt_out(p, &c, &out[k + (size_t)r]);
		uf_pub_done(p, m, c.seq, &out[k], r);
		k += (size_t)r;
	}
	*applied = i;
	uf_pub_account(p, i, k);
	return (int)k;
}

/* ---- cold paths and reads --------------------------------------------------------------- */

/* Every book in doubt (a gap, or a doubt no single book can hold): stale_books then counts
 * the named books, the ones a consumer knows. Cold: O(instruments). */
static UF_COLD void uf_pub_all_stale(struct uf_publisher *p)
{
	uint64_t named = 0;
	for (uint32_t i = 0; i < p->max_instruments; i++) {
		p->books[i].stale = 1;
		p->inst[i].stale = 1;
		named += p->books[i].named != 0;
	}
	p->all_stale = 1;
	uf_store_relaxed_u64(&p->st.stale_books, named);
}

UF_COLD int uf_publish_gap(struct uf_publisher *p, uint64_t first_seq, uint64_t count,
                           struct uf_record *out, size_t cap)
{
	if (cap < 1)
		return -ENOBUFS;
	uf_pub_all_stale(p);
	p->ev_open = 0; /* the GAP record carries UF_RECF_LAST: no event spans it */
	struct uf_pub_ctx c = {first_seq, 0, p->last_ts};
	uf_pub_rec(out, &c, UF_REC_GAP, UF_SIDE_NONE, UF_RECF_LAST | UF_RECF_STALE, 0, 0, count, 0,
	           0);
	uf_pub_count(&p->st.gaps, 1);
	uf_pub_count(&p->st.gap_messages, count);
	uf_pub_count(&p->st.records, 1);
	return 1;
}

UF_COLD int uf_publish_new_session(struct uf_publisher *p, const char session[10],
                                   struct uf_record *out, size_t cap)
{
	return uf_publish_void_books(p, UF_RESET_NEW_SESSION, session, 1, out, cap);
}

UF_COLD int uf_publish_void_books(struct uf_publisher *p, uint32_t reason, const char session[10],
                                  uint64_t feed_seq, struct uf_record *out, size_t cap)
{
	if (cap < 1)
		return -ENOBUFS;
	uf_publish_reset(p);
	struct uf_pub_ctx c = {feed_seq, 0, 0};
	uint64_t ref;
	uint16_t tail;
	memcpy(&ref, session, 8);
	memcpy(&tail, session + 8, 2);
	uf_pub_rec(out, &c, UF_REC_RESET, UF_SIDE_NONE, UF_RECF_LAST, 0, 0, reason, tail, ref);
	p->last_seq = 0;
	p->last_ts = 0;
	uf_pub_count(&p->st.records, 1);
	return 1;
}

UF_COLD int uf_publish_doubt(struct uf_publisher *p, uint32_t instrument, uint32_t reason,
                             uint64_t feed_seq, uint64_t rx_ts, struct uf_record *out, size_t cap)
{
	if (cap < 1)
		return -ENOBUFS;
	if (instrument != UF_INSTRUMENT_ALL && instrument >= p->max_instruments)
		return 0; /* a locate beyond the books: no book of ours missed anything */
	struct uf_pub_ctx c = {feed_seq, rx_ts, p->last_ts};
	int k = uf_pub_stale_out(p, instrument, reason, 0, &c, out);
	if (k)
		out[0].flags |= UF_RECF_LAST;
	uf_pub_count(&p->st.records, (uint64_t)k);
	return k;
}

int uf_publish_snapshot(struct uf_publisher *p, uint32_t instrument, struct uf_record *out,
                        size_t cap)
{
	if (instrument >= p->max_instruments)
		return -ENOENT;
	const struct uf_book *b = &p->books[instrument];
	size_t nlev = (size_t)b->side[0].n + b->side[1].n;
	if (cap < nlev + 2)
		return -ENOBUFS;
	struct uf_pub_ctx c = {p->last_seq, 0, p->last_ts};
	uint16_t fl = UF_RECF_SNAPSHOT | uf_pub_stale(b);
	size_t k = 0;
	uf_pub_rec(&out[k++], &c, UF_REC_SNAPSHOT_BEGIN, UF_SIDE_NONE, fl, instrument, 0, nlev, 0,
	           0);
	for (unsigned sidx = 0; sidx < 2; sidx++) {
		const struct uf_book_side *s = &b->side[sidx];
		const uint64_t *a = uf_lv_entries(&p->lv, s);
		for (uint32_t i = s->n; i-- > 0;) {
			const struct uf_level_node *nd = &p->lv.nodes[(uint32_t)a[i]];
			uf_pub_rec(&out[k++], &c, UF_REC_LEVEL, uf_pub_side_char[sidx],
			           fl | (i == s->n - 1 ? UF_RECF_BBO : 0), instrument, nd->price,
			           nd->shares, nd->orders, 0);
		}
	}
	uf_pub_rec(&out[k++], &c, UF_REC_SNAPSHOT_END, UF_SIDE_NONE, fl | UF_RECF_LAST, instrument,
	           0, nlev, 0, 0);
	uf_pub_count(&p->st.records, k);
	return (int)k;
}

static int uf_pub_sidx(uint8_t side)
{
	return side == UF_SIDE_BID ? 0 : side == UF_SIDE_ASK ? 1 : -1;
}

int uf_publish_top(const struct uf_publisher *p, uint32_t instrument, uint8_t side,
                   struct uf_level *levels, size_t n)
{
	return uf_publish_levels(p, instrument, side, 0, levels, n, NULL);
}

int uf_publish_levels(const struct uf_publisher *p, uint32_t instrument, uint8_t side, size_t from,
                      struct uf_level *levels, size_t n, size_t *total)
{
	int sidx = uf_pub_sidx(side);
	uint32_t have = 0;
	if (UF_LIKELY(sidx >= 0 && instrument < p->max_instruments))
		have = p->books[instrument].side[sidx].n;
	if (total)
		*total = have;
	if (UF_UNLIKELY(sidx < 0))
		return -EINVAL;
	if (from >= have)
		return 0;
	size_t m = have - from < n ? have - from : n;
	/* best last in the side's array: level `from` is entry have - 1 - from, the next ones
	 * below it */
	const uint64_t *a =
	    uf_lv_entries(&p->lv, &p->books[instrument].side[sidx]) + (have - 1 - from);
	const struct uf_level_node *nodes = p->lv.nodes;
	for (size_t k = 0; k < m; k++) {
		const struct uf_level_node *nd = &nodes[(uint32_t) * (a - k)];
		levels[k].price = nd->price;
		levels[k].shares = nd->shares;
		levels[k].orders = nd->orders;
		levels[k].reserved = 0;
	}
	return (int)m;
}

size_t uf_publish_depth(const struct uf_publisher *p, uint32_t instrument, uint8_t side)
{
	int sidx = uf_pub_sidx(side);
	if (sidx < 0 || instrument >= p->max_instruments)
		return 0;
	return p->books[instrument].side[sidx].n;
}

uint32_t uf_publish_max_instruments(const struct uf_publisher *p)
{
	return p->max_instruments;
}

void uf_publish_stats(const struct uf_publisher *p, struct uf_publish_stats *out)
{
	const uint64_t *src = (const uint64_t *)&p->st;
	uint64_t *dst = (uint64_t *)out;
	for (size_t i = 0; i < sizeof(*out) / sizeof(uint64_t); i++)
		dst[i] = uf_load_relaxed_u64(&src[i]);
}

const char *uf_publish_err_name(unsigned kind)
{
	static const char *const names[UF_PUB_NERR] = {
	    [UF_PUB_ERR_UNKNOWN_REF] = "unknown_ref",
	    [UF_PUB_ERR_OVER_EXEC] = "over_execution",
	    [UF_PUB_ERR_OVER_CANCEL] = "over_cancel",
	    [UF_PUB_ERR_DUP_REF] = "duplicate_ref",
	    [UF_PUB_ERR_ORDERS_FULL] = "order_table_full",
	    [UF_PUB_ERR_LEVELS_FULL] = "level_table_full",
	    [UF_PUB_ERR_BAD_INSTRUMENT] = "bad_instrument",
	    [UF_PUB_ERR_BAD_SIDE] = "bad_side",
	    [UF_PUB_ERR_LOCATE_MISMATCH] = "locate_mismatch",
	    [UF_PUB_ERR_UNKNOWN_TYPE] = "unknown_type",
	    [UF_PUB_ERR_BAD_PRICE] = "bad_price",
	    [UF_PUB_ERR_UNKNOWN_LEVEL] = "unknown_level",
	    [UF_PUB_ERR_IDS_FULL] = "instrument_ids_full",
	};
	return kind < UF_PUB_NERR ? names[kind] : NULL;
}
