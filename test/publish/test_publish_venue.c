/* publish/uf_venue.h: price-level and level-1 books, instrument ids per symbol, the venue's
 * event flag as UF_RECF_LAST, and every refusal put in doubt (a STALE record), checked record
 * by record and against the publisher's own books (uf_publish_top). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "common/uf_symbol.h"
#include "publish/uf_publish.h"
#include "publish/uf_venue.h"

struct vt {
	struct uf_publisher *p;
	uint64_t seq;            /* feed_seq of the next message */
	struct uf_record out[8]; /* the last message's records */
	int n;                   /* how many */
};

static void vt_init(struct vt *t, uint32_t max_instruments)
{
	struct uf_publish_params pp;
	uf_publish_params_default(&pp);
	pp.max_orders = 1024;
	pp.max_levels = 1024;
	pp.max_instruments = max_instruments;
	memset(t, 0, sizeof(*t));
	assert_int_equal(uf_publish_create(&pp, &t->p), 0);
	t->seq = 1;
}

static void vt_begin(struct vt *t, struct uf_venue_msg *m, const char *sym, int announce)
{
	memset(m, 0, sizeof(*m));
	m->seq = t->seq++;
	m->exch_ts = 1000 + m->seq;
	assert_int_equal(uf_venue_begin(t->p, m, 8), 0);
	t->n = 0;
	if (sym) {
		char pad[8];
		uf_symbol_pad(pad, sym);
		t->n += uf_venue_symbol(t->p, m, pad, announce, t->out);
	}
}

static void vt_end(struct vt *t, struct uf_venue_msg *m, enum uf_venue_event ev)
{
	t->n = uf_venue_end(t->p, m, ev, t->out, t->n);
	assert_true(t->n <= UF_REC_MAX_PER_MSG);
	for (int i = 0; i < t->n; i++)
		assert_int_equal(t->out[i].feed_seq, m->seq);
}

/* One DEEP-like price level update. */
static void vt_level(struct vt *t, const char *sym, uint8_t side, int64_t price, uint64_t shares,
                     enum uf_venue_event ev)
{
	struct uf_venue_msg m;
	vt_begin(t, &m, sym, 1);
	t->n += uf_venue_level(t->p, &m, side, price, shares, &t->out[t->n]);
	vt_end(t, &m, ev);
}

static void vt_quote(struct vt *t, const char *sym, int64_t bp, uint64_t bs, int64_t ap,
                     uint64_t as)
{
	struct uf_venue_msg m;
	vt_begin(t, &m, sym, 1);
	t->n += uf_venue_quote(t->p, &m, bp, bs, ap, as, &t->out[t->n]);
	vt_end(t, &m, UF_VENUE_EV_ONE);
}

static void check_level(const struct uf_record *r, uint32_t inst, uint8_t side, int64_t price,
                        uint64_t shares, uint16_t flags)
{
	assert_int_equal(r->kind, UF_REC_LEVEL);
	assert_int_equal(r->instrument, inst);
	assert_int_equal(r->side, side);
	assert_int_equal(r->price, price);
	assert_int_equal(r->shares, shares);
	assert_int_equal(r->orders, 0);
	assert_int_equal(r->flags, flags);
}

static void test_venue_level_book_sets_and_removes_levels_with_bbo_exactly(void **st)
{
	(void)st;
	struct vt t;
	vt_init(&t, 16);
	vt_level(&t, "ZIEXT", 'B', 100000, 100, UF_VENUE_EV_CLOSE);
	assert_int_equal(t.n, 2); /* first sight: INSTRUMENT before the book's first record */
	assert_int_equal(t.out[0].kind, UF_REC_INSTRUMENT);
	assert_int_equal(t.out[0].instrument, 1);
	assert_memory_equal(&t.out[0].ref, "ZIEXT   ", 8);
	check_level(&t.out[1], 1, 'B', 100000, 100, UF_RECF_BBO | UF_RECF_LAST);
	vt_level(&t, "ZIEXT", 'B', 99900, 50, UF_VENUE_EV_CLOSE); /* below the best */
	assert_int_equal(t.n, 1);
	check_level(&t.out[0], 1, 'B', 99900, 50, UF_RECF_LAST);
	vt_level(&t, "ZIEXT", 'S', 100100, 70, UF_VENUE_EV_CLOSE);
	check_level(&t.out[0], 1, 'S', 100100, 70, UF_RECF_BBO | UF_RECF_LAST);
	vt_level(&t, "ZIEXT", 'B', 100000, 300, UF_VENUE_EV_CLOSE); /* the best's size */
	check_level(&t.out[0], 1, 'B', 100000, 300, UF_RECF_BBO | UF_RECF_LAST);
	vt_level(&t, "ZIEXT", 'B', 100000, 300, UF_VENUE_EV_CLOSE); /* sent again: no change */
	check_level(&t.out[0], 1, 'B', 100000, 300, UF_RECF_LAST);
	vt_level(&t, "ZIEXT", 'B', 100000, 0, UF_VENUE_EV_CLOSE); /* best gone */
	check_level(&t.out[0], 1, 'B', 100000, 0, UF_RECF_BBO | UF_RECF_LAST);
	struct uf_level lv[4];
	assert_int_equal(uf_publish_top(t.p, 1, UF_SIDE_BID, lv, 4), 1);
	assert_int_equal(lv[0].price, 99900);
	assert_int_equal(lv[0].shares, 50);
	assert_int_equal(lv[0].orders, 0);
	assert_int_equal(uf_publish_depth(t.p, 1, UF_SIDE_ASK), 1);
	struct uf_publish_stats s;
	uf_publish_stats(t.p, &s);
	assert_int_equal(s.live_levels, 2);
	assert_int_equal(s.messages, 6);
	assert_int_equal(s.errors_total, 0);
	uf_publish_destroy(t.p);
}

/* Removing a level the book never had, a price the table cannot hold, a side that is not
 * B/S: refused, counted by kind, the book put in doubt once (STALE, then STALE on every later
 * record of the book), never silently. */
static void test_venue_level_refusals_are_counted_and_flag_the_book(void **st)
{
	(void)st;
	struct vt t;
	vt_init(&t, 16);
	vt_level(&t, "AAA", 'B', 100000, 100, UF_VENUE_EV_CLOSE);
	vt_level(&t, "BBB", 'B', 500000, 10, UF_VENUE_EV_CLOSE);
	vt_level(&t, "AAA", 'S', 120000, 0, UF_VENUE_EV_CLOSE); /* never there */
	assert_int_equal(t.n, 1);
	assert_int_equal(t.out[0].kind, UF_REC_STALE);
	assert_int_equal(t.out[0].instrument, 1);
	assert_int_equal(t.out[0].aux, UF_STALE_INTEGRITY);
	assert_int_equal(t.out[0].shares, UF_PUB_ERR_UNKNOWN_LEVEL);
	assert_int_equal(t.out[0].flags, UF_RECF_STALE | UF_RECF_LAST);
	vt_level(&t, "AAA", 'B', 100000, 0, UF_VENUE_EV_CLOSE); /* later records: STALE */
	check_level(&t.out[0], 1, 'B', 100000, 0, UF_RECF_STALE | UF_RECF_BBO | UF_RECF_LAST);
	vt_level(&t, "BBB", 'B', (int64_t)UINT32_MAX + 1, 5, UF_VENUE_EV_CLOSE);
	assert_int_equal(t.n, 1);
	assert_int_equal(t.out[0].kind, UF_REC_STALE);
	assert_int_equal(t.out[0].instrument, 2);
	assert_int_equal(t.out[0].shares, UF_PUB_ERR_BAD_PRICE);
	vt_level(&t, "BBB", 'B', -1, 5, UF_VENUE_EV_CLOSE); /* already stale: counted only */
	assert_int_equal(t.n, 0);
	vt_level(&t, "BBB", 'X', 100, 5, UF_VENUE_EV_CLOSE);
	assert_int_equal(t.n, 0);
	struct uf_publish_stats s;
	uf_publish_stats(t.p, &s);
	assert_int_equal(s.errors[UF_PUB_ERR_UNKNOWN_LEVEL], 1);
	assert_int_equal(s.errors[UF_PUB_ERR_BAD_PRICE], 2);
	assert_int_equal(s.errors[UF_PUB_ERR_BAD_SIDE], 1);
	assert_int_equal(s.stale_books, 2);
	assert_string_equal(uf_publish_err_name(UF_PUB_ERR_UNKNOWN_LEVEL), "unknown_level");
	assert_int_equal(uf_publish_instrument(t.p, 1)->stale, 1);
	/* a new session voids the books and the doubts, and keeps the ids */
	struct uf_record r;
	assert_int_equal(uf_publish_new_session(t.p, "0000000001", &r, 1), 1);
	vt_level(&t, "BBB", 'B', 500000, 10, UF_VENUE_EV_CLOSE);
	assert_int_equal(t.n, 1); /* no INSTRUMENT again: the id is known */
	check_level(&t.out[0], 2, 'B', 500000, 10, UF_RECF_BBO | UF_RECF_LAST);
	uf_publish_destroy(t.p);
}

/* Ids per symbol: from 1 in order of first sight, found again by symbol, bounded; the symbol
 * that finds every id taken is counted and puts every book in doubt (one STALE of all). */
static void test_venue_symbols_get_stable_ids_and_overflow_is_flagged(void **st)
{
	(void)st;
	struct vt t;
	vt_init(&t, 3); /* ids 1 and 2 */
	vt_level(&t, "AAA", 'B', 100, 1, UF_VENUE_EV_ONE);
	vt_level(&t, "BBB", 'B', 100, 1, UF_VENUE_EV_ONE);
	vt_level(&t, "AAA", 'B', 200, 1, UF_VENUE_EV_ONE);
	assert_int_equal(t.out[0].instrument, 1);
	assert_int_equal(uf_publish_lookup(t.p, "AAA"), 1);
	assert_int_equal(uf_publish_lookup(t.p, "BBB"), 2);
	char name[9];
	assert_int_equal(uf_publish_symbol(t.p, 2, name), 3);
	assert_string_equal(name, "BBB");
	vt_level(&t, "CCC", 'B', 100, 1, UF_VENUE_EV_ONE);
	assert_int_equal(t.n, 1);
	assert_int_equal(t.out[0].kind, UF_REC_STALE);
	assert_int_equal(t.out[0].instrument, UF_INSTRUMENT_ALL);
	assert_int_equal(t.out[0].aux, UF_STALE_TABLE_FULL);
	assert_int_equal(t.out[0].shares, UF_PUB_ERR_IDS_FULL);
	vt_level(&t, "DDD", 'B', 100, 1, UF_VENUE_EV_ONE); /* every book already in doubt */
	assert_int_equal(t.n, 0);
	vt_level(&t, "AAA", 'B', 300, 1, UF_VENUE_EV_ONE);
	check_level(&t.out[0], 1, 'B', 300, 1, UF_RECF_STALE | UF_RECF_BBO | UF_RECF_LAST);
	struct uf_publish_stats s;
	uf_publish_stats(t.p, &s);
	assert_int_equal(s.errors[UF_PUB_ERR_IDS_FULL], 2);
	assert_int_equal(uf_publish_lookup(t.p, "CCC"), -ENOENT);
	uf_publish_destroy(t.p);
}

/* UF_RECF_LAST means "the venue's event is complete": the updates of an event in progress
 * carry none, whatever else comes inside it (a trade), the one that completes it does; a gap
 * ends an event. */
static void test_venue_last_marks_the_completed_event(void **st)
{
	(void)st;
	struct vt t;
	vt_init(&t, 16);
	vt_level(&t, "AAA", 'S', 100100, 100, UF_VENUE_EV_OPEN);
	assert_int_equal(t.n, 2);
	assert_false(t.out[0].flags & UF_RECF_LAST);
	assert_false(t.out[1].flags & UF_RECF_LAST);
	struct uf_venue_msg m;
	vt_begin(&t, &m, "AAA", 1);
	t.n += uf_venue_record(t.p, &m, 0, UF_REC_TRADE, 0, 100100, 40, 6, 77, &t.out[t.n]);
	vt_end(&t, &m, UF_VENUE_EV_ONE);
	assert_int_equal(t.n, 1);
	assert_int_equal(t.out[0].kind, UF_REC_TRADE);
	assert_false(t.out[0].flags & UF_RECF_LAST);
	vt_level(&t, "AAA", 'S', 100100, 60, UF_VENUE_EV_CLOSE);
	assert_true(t.out[0].flags & UF_RECF_LAST);
	vt_level(&t, "AAA", 'S', 100200, 60, UF_VENUE_EV_OPEN);
	assert_false(t.out[0].flags & UF_RECF_LAST);
	struct uf_record g;
	assert_int_equal(uf_publish_gap(t.p, 9, 2, &g, 1), 1);
	vt_begin(&t, &m, NULL, 0);
	t.n += uf_venue_record(t.p, &m, 1, UF_REC_STATUS, 0, 0, 'C', UF_STATUS_SYSTEM, 0, t.out);
	vt_end(&t, &m, UF_VENUE_EV_ONE);
	assert_int_equal(t.out[0].instrument, 0);
	assert_true(t.out[0].flags & UF_RECF_LAST); /* the gap closed the event */
	assert_int_equal(uf_publish_market(t.p)->system_event, 'C');
	const struct uf_pub_instrument *in = uf_publish_instrument(t.p, 1);
	assert_int_equal(in->volume, 40);
	assert_int_equal(in->last_trade_price, 100100);
	assert_int_equal(in->last_trade_match, 77);
	uf_publish_destroy(t.p);
}

/* Level-1 quotes: a side's old best disappears when its price moves, a size change keeps the
 * level, size 0 empties the side, an unchanged side writes nothing. */
static void test_venue_quote_keeps_one_level_per_side(void **st)
{
	(void)st;
	struct vt t;
	vt_init(&t, 16);
	vt_quote(&t, "QQQ", 100000, 100, 100100, 200);
	assert_int_equal(t.n, 3);
	assert_int_equal(t.out[0].kind, UF_REC_INSTRUMENT);
	check_level(&t.out[1], 1, 'B', 100000, 100, UF_RECF_BBO);
	check_level(&t.out[2], 1, 'S', 100100, 200, UF_RECF_BBO | UF_RECF_LAST);
	vt_quote(&t, "QQQ", 100000, 100, 100100, 200); /* nothing changed */
	assert_int_equal(t.n, 0);
	vt_quote(&t, "QQQ", 100000, 150, 100200, 200); /* bid size; ask moves */
	assert_int_equal(t.n, 3);
	check_level(&t.out[0], 1, 'B', 100000, 150, UF_RECF_BBO);
	check_level(&t.out[1], 1, 'S', 100100, 0, UF_RECF_BBO);
	check_level(&t.out[2], 1, 'S', 100200, 200, UF_RECF_BBO | UF_RECF_LAST);
	vt_quote(&t, "QQQ", 99900, 10, 0, 0); /* bid moves down, ask side empties */
	assert_int_equal(t.n, 3);
	check_level(&t.out[0], 1, 'B', 100000, 0, UF_RECF_BBO);
	check_level(&t.out[1], 1, 'B', 99900, 10, UF_RECF_BBO);
	check_level(&t.out[2], 1, 'S', 100200, 0, UF_RECF_BBO | UF_RECF_LAST);
	struct uf_level lv[4];
	assert_int_equal(uf_publish_top(t.p, 1, UF_SIDE_BID, lv, 4), 1);
	assert_int_equal(lv[0].price, 99900);
	assert_int_equal(lv[0].shares, 10);
	assert_int_equal(uf_publish_depth(t.p, 1, UF_SIDE_ASK), 0);
	vt_quote(&t, "QQQ", 99900, 10, -5, 10); /* a price the table cannot hold */
	assert_int_equal(t.n, 1);
	assert_int_equal(t.out[0].kind, UF_REC_STALE);
	assert_int_equal(t.out[0].shares, UF_PUB_ERR_BAD_PRICE);
	uf_publish_destroy(t.p);
}

/* A directory entry names the instrument once (no announcement before it) and fills the
 * instrument view; statuses update the view as their ITCH messages do. */
static void test_venue_directory_and_statuses_fill_the_instrument_view(void **st)
{
	(void)st;
	struct vt t;
	vt_init(&t, 16);
	struct uf_venue_msg m;
	vt_begin(&t, &m, "ZIEXT", 0);
	assert_int_equal(t.n, 0);
	t.n += uf_venue_directory(t.p, &m, 100, 1, 0, 0, t.out);
	vt_end(&t, &m, UF_VENUE_EV_ONE);
	assert_int_equal(t.n, 1);
	assert_int_equal(t.out[0].kind, UF_REC_INSTRUMENT);
	assert_int_equal(t.out[0].instrument, 1);
	assert_int_equal(t.out[0].shares, 100);
	assert_int_equal(t.out[0].flags, UF_RECF_LAST);
	assert_memory_equal(&t.out[0].ref, "ZIEXT   ", 8);
	vt_begin(&t, &m, "ZIEXT", 1);
	t.n += uf_venue_record(t.p, &m, 0, UF_REC_STATUS, 0, 0, 'H', UF_STATUS_TRADING, 0x31303254,
	                       t.out);
	vt_end(&t, &m, UF_VENUE_EV_ONE);
	assert_int_equal(t.n, 1);
	assert_int_equal(t.out[0].instrument, 1);
	const struct uf_pub_instrument *in = uf_publish_instrument(t.p, 1);
	assert_int_equal(in->round_lot, 100);
	assert_int_equal(in->luld_tier, 1);
	assert_int_equal(in->has_directory, 1);
	assert_int_equal(in->trading_state, 'H');
	assert_memory_equal(in->halt_reason, "T201", 4);
	uf_publish_destroy(t.p);
}

/* ---- random updates against a model ---- */

#define RM_PX 32 /* price points per side: 1000 .. 1031 */

struct rm_book {
	uint64_t lv[2][RM_PX]; /* shares by side and price point, 0 = none */
};

static uint64_t rm_rng(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/* Best level of a side as (price point + 1) << 32 | shares (0: empty side). */
static uint64_t rm_best(const struct rm_book *b, int side)
{
	for (int k = 0; k < RM_PX; k++) {
		int i = side ? k : RM_PX - 1 - k; /* bids: highest first; asks: lowest */
		if (b->lv[side][i])
			return (uint64_t)(i + 1) << 32 | b->lv[side][i];
	}
	return 0;
}

/* Level updates (7 symbols) and quotes (3 symbols) in random order, with deletes of unknown
 * levels, bad prices and 3 symbols beyond the id table: the publisher's books equal a model,
 * the books rebuilt from the records equal them too, UF_RECF_BBO is set exactly when the
 * side's best changed, and every refusal is counted as the model expects. */
static void test_venue_random_updates_match_a_model_and_bbo_is_exact(void **st)
{
	(void)st;
	static struct rm_book model[16], rebuilt[16]; /* by symbol; rebuilt: by id */
	memset(model, 0, sizeof(model));
	memset(rebuilt, 0, sizeof(rebuilt));
	struct vt t;
	vt_init(&t, 11); /* ids 1..10: symbols 10..12 find the table full */
	uint64_t x = 0x9E3779B97F4A7C15ull, unknown = 0, bad = 0, full = 0;
	char sym[13][8];
	for (int i = 0; i < 13; i++)
		snprintf(sym[i], sizeof(sym[i]), "%c%d", i >= 10 ? 'X' : i >= 7 ? 'Q' : 'L', i);
	for (int si = 0; si < 10; si++) { /* a directory first: ids 1..10 go to these */
		struct uf_venue_msg m;
		vt_begin(&t, &m, sym[si], 0);
		t.n += uf_venue_directory(t.p, &m, 100, 0, 0, 0, t.out);
		vt_end(&t, &m, UF_VENUE_EV_ONE);
		assert_int_equal(t.out[0].instrument, (uint32_t)si + 1);
	}
	for (int n = 0; n < 20000; n++) {
		int si = (int)(rm_rng(&x) % 13);
		struct rm_book *mb = &model[si];
		int known = uf_publish_lookup(t.p, sym[si]) >= 0;
		if (si >= 10) {
			full += !known;
		}
		if (si < 7 || si >= 10) { /* a price level update */
			int side = (int)(rm_rng(&x) % 2);
			int pi = (int)(rm_rng(&x) % RM_PX);
			uint64_t sh = rm_rng(&x) % 3 == 0 ? 0 : 1 + rm_rng(&x) % 500;
			int64_t price = 1000 + pi;
			if (rm_rng(&x) % 97 == 0) {
				price = -5; /* refused */
				bad += si < 10;
			} else if (si < 10) {
				unknown += sh == 0 && mb->lv[side][pi] == 0;
				mb->lv[side][pi] = sh;
			}
			vt_level(&t, sym[si], side ? 'S' : 'B', price, sh, UF_VENUE_EV_ONE);
		} else { /* a quote: one level a side */
			int64_t px[2];
			uint64_t sz[2];
			for (int side = 0; side < 2; side++) {
				px[side] = 1000 + (int64_t)(rm_rng(&x) % RM_PX);
				sz[side] = rm_rng(&x) % 4 == 0 ? 0 : 1 + rm_rng(&x) % 500;
				memset(mb->lv[side], 0, sizeof(mb->lv[side]));
				if (sz[side])
					mb->lv[side][px[side] - 1000] = sz[side];
			}
			vt_quote(&t, sym[si], px[0], sz[0], px[1], sz[1]);
		}
		for (int k = 0; k < t.n; k++) {
			const struct uf_record *r = &t.out[k];
			if (r->kind != UF_REC_LEVEL)
				continue;
			assert_true(r->instrument >= 1 && r->instrument <= 10);
			struct rm_book *rb = &rebuilt[r->instrument];
			int side = r->side == 'S';
			uint64_t before = rm_best(rb, side);
			rb->lv[side][r->price - 1000] = r->shares;
			uint64_t after = rm_best(rb, side);
			assert_int_equal(!!(r->flags & UF_RECF_BBO), before != after);
		}
		if (t.n > 0) /* every message here is an event of its own */
			assert_true(t.out[t.n - 1].flags & UF_RECF_LAST);
	}
	for (int si = 0; si < 10; si++) {
		int id = uf_publish_lookup(t.p, sym[si]);
		assert_true(id >= 1);
		for (int side = 0; side < 2; side++) {
			struct uf_level lv[RM_PX];
			int n = uf_publish_top(t.p, (uint32_t)id, side ? UF_SIDE_ASK : UF_SIDE_BID,
			                       lv, RM_PX);
			int k = 0;
			for (int j = 0; j < RM_PX; j++) {
				int i = side ? j : RM_PX - 1 - j;
				assert_int_equal(rebuilt[id].lv[side][i], model[si].lv[side][i]);
				if (!model[si].lv[side][i])
					continue;
				assert_true(k < n);
				assert_int_equal(lv[k].price, 1000 + i);
				assert_int_equal(lv[k].shares, model[si].lv[side][i]);
				k++;
			}
			assert_int_equal(k, n);
		}
	}
	struct uf_publish_stats ps;
	uf_publish_stats(t.p, &ps);
	assert_int_equal(ps.errors[UF_PUB_ERR_UNKNOWN_LEVEL], unknown);
	assert_int_equal(ps.errors[UF_PUB_ERR_BAD_PRICE], bad);
	assert_int_equal(ps.errors[UF_PUB_ERR_IDS_FULL], full);
	assert_true(unknown > 100 && bad > 10 && full > 1000);
	uf_publish_destroy(t.p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_venue_level_book_sets_and_removes_levels_with_bbo_exactly),
	    cmocka_unit_test(test_venue_level_refusals_are_counted_and_flag_the_book),
	    cmocka_unit_test(test_venue_symbols_get_stable_ids_and_overflow_is_flagged),
	    cmocka_unit_test(test_venue_last_marks_the_completed_event),
	    cmocka_unit_test(test_venue_quote_keeps_one_level_per_side),
	    cmocka_unit_test(test_venue_directory_and_statuses_fill_the_instrument_view),
	    cmocka_unit_test(test_venue_random_updates_match_a_model_and_bbo_is_exact),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
