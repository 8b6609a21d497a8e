/* publish/: the effect of every ITCH message type on the books, the directory and the
 * records; integrity errors; gap, snapshot and read access. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>

#include "common/uf_endian.h"
#include "common/uf_time.h"
#include "pub_test_util.h"

struct fx {
	struct uf_publisher *p;
	struct uf_record r[16];
	uint64_t seq;
};

static struct uf_publisher *mk_pub(uint64_t max_orders, uint32_t max_inst, uint32_t max_levels,
                                   uint32_t flags)
{
	struct uf_publish_params pp;
	uf_publish_params_default(&pp);
	pp.max_orders = max_orders;
	pp.max_instruments = max_inst;
	pp.max_levels = max_levels;
	pp.flags = flags;
	struct uf_publisher *p = NULL;
	assert_int_equal(uf_publish_create(&pp, &p), 0);
	assert_non_null(p);
	return p;
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	f->p = mk_pub(1000, 64, 1000, 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	uf_publish_destroy(f->p);
	free(f);
	return 0;
}

/* Applies one message; returns its record count and checks the LAST flag. */
static int ap(struct fx *f, struct uf_itch_msg m)
{
	int n = uf_publish_apply(f->p, &m, ++f->seq, 0, f->r, UF_ARRAY_SIZE(f->r));
	assert_true(n >= 0 && n <= UF_REC_MAX_PER_MSG);
	for (int i = 0; i < n; i++) {
		assert_int_equal(!!(f->r[i].flags & UF_RECF_LAST), i == n - 1);
		assert_int_equal(f->r[i].feed_seq, f->seq);
		assert_int_equal(f->r[i].exch_ts, m.timestamp);
	}
	return n;
}

static void expect_top(struct fx *f, uint32_t inst, uint8_t side, int n, const int64_t *px,
                       const uint64_t *sh, const uint32_t *ord)
{
	struct uf_level l[32];
	int got = uf_publish_top(f->p, inst, side, l, 32);
	assert_int_equal(got, n);
	assert_int_equal(uf_publish_depth(f->p, inst, side), (size_t)n);
	for (int i = 0; i < n; i++) {
		assert_int_equal(l[i].price, px[i]);
		assert_int_equal(l[i].shares, sh[i]);
		assert_int_equal(l[i].orders, ord[i]);
	}
}

static uint64_t err(struct fx *f, enum uf_pub_err k)
{
	struct uf_publish_stats st;
	uf_publish_stats(f->p, &st);
	return st.errors[k];
}

/* Record i of the last message is the doubt about book `inst`: UF_REC_STALE, reason,
 * error kind, flagged stale, and the message's last record. */
static void expect_stale_rec(struct fx *f, int i, uint32_t inst, uint32_t reason, uint32_t kind)
{
	assert_int_equal(f->r[i].kind, UF_REC_STALE);
	assert_int_equal(f->r[i].instrument, inst);
	assert_int_equal(f->r[i].aux, reason);
	assert_int_equal(f->r[i].shares, kind);
	assert_int_equal(f->r[i].flags, UF_RECF_STALE | UF_RECF_LAST);
	assert_true(uf_publish_instrument(f->p, inst)->stale);
}

static void test_add_creates_level_with_mbo_and_level_records(void **state)
{
	struct fx *f = *state;
	assert_int_equal(ap(f, mk_add(5, 100, 'B', 300, 1284600, "GOOGL")), 2);
	assert_int_equal(f->r[0].kind, UF_REC_ORDER_ADD);
	assert_int_equal(f->r[0].side, UF_SIDE_BID);
	assert_int_equal(f->r[0].instrument, 5);
	assert_int_equal(f->r[0].price, 1284600);
	assert_int_equal(f->r[0].shares, 300);
	assert_int_equal(f->r[0].ref, 100);
	assert_int_equal(f->r[0].aux, 0);
	assert_int_equal(f->r[1].kind, UF_REC_LEVEL);
	assert_int_equal(f->r[1].shares, 300);
	assert_int_equal(f->r[1].orders, 1);
	assert_true(f->r[1].flags & UF_RECF_BBO);
	assert_int_equal(f->r[1].pub_delta_ns, 0);
	expect_top(f, 5, UF_SIDE_BID, 1, (int64_t[]){1284600}, (uint64_t[]){300}, (uint32_t[]){1});
	expect_top(f, 5, UF_SIDE_ASK, 0, NULL, NULL, NULL);
	/* The symbol of an instrument with no R is taken from the add. */
	assert_int_equal(uf_publish_lookup(f->p, "GOOGL"), 5);
}

static void test_adds_aggregate_and_sort_best_first(void **state)
{
	struct fx *f = *state;
	ap(f, mk_add(1, 1, 'B', 100, 1000, NULL));
	ap(f, mk_add(1, 2, 'B', 200, 1000, NULL)); /* same level: 300 shares, 2 orders */
	assert_true(f->r[1].flags & UF_RECF_BBO);  /* best level's size changed */
	ap(f, mk_add(1, 3, 'B', 50, 900, NULL));   /* worse bid: no BBO */
	assert_false(f->r[1].flags & UF_RECF_BBO);
	ap(f, mk_add(1, 4, 'B', 70, 1100, NULL)); /* better bid: BBO */
	assert_true(f->r[1].flags & UF_RECF_BBO);
	ap(f, mk_add(1, 5, 'S', 10, 1300, NULL));
	ap(f, mk_add(1, 6, 'S', 20, 1200, NULL));
	ap(f, mk_add(1, 7, 'S', 30, 1250, NULL));
	assert_false(f->r[1].flags & UF_RECF_BBO);
	expect_top(f, 1, UF_SIDE_BID, 3, (int64_t[]){1100, 1000, 900}, (uint64_t[]){70, 300, 50},
	           (uint32_t[]){1, 2, 1});
	expect_top(f, 1, UF_SIDE_ASK, 3, (int64_t[]){1200, 1250, 1300}, (uint64_t[]){20, 30, 10},
	           (uint32_t[]){1, 1, 1});
	/* A partial read gets the best ones. */
	struct uf_level l[2];
	assert_int_equal(uf_publish_top(f->p, 1, UF_SIDE_ASK, l, 2), 2);
	assert_int_equal(l[1].price, 1250);
	assert_int_equal(uf_publish_top(f->p, 1, 'Z', l, 2), -EINVAL);
}

static void test_add_with_mpid_carries_attribution(void **state)
{
	struct fx *f = *state;
	struct uf_itch_msg m = mk_add(2, 9, 'S', 100, 5000, NULL);
	m.type = 'F';
	memcpy(m.u.add.attribution, "NSDQ", 4);
	assert_int_equal(ap(f, m), 2);
	uint32_t want;
	memcpy(&want, "NSDQ", 4);
	assert_int_equal(f->r[0].aux, want);
	expect_top(f, 2, UF_SIDE_ASK, 1, (int64_t[]){5000}, (uint64_t[]){100}, (uint32_t[]){1});
}

static void test_exec_reduces_then_removes_order_and_prints_trade(void **state)
{
	struct fx *f = *state;
	ap(f, mk_add(3, 10, 'S', 500, 2000, "AAPL"));
	ap(f, mk_add(3, 11, 'S', 100, 2000, "AAPL"));
	assert_int_equal(ap(f, mk_exec(3, 10, 200, 77)), 3);
	assert_int_equal(f->r[0].kind, UF_REC_ORDER_MODIFY);
	assert_int_equal(f->r[0].shares, 300);
	assert_int_equal(f->r[0].aux, 200);
	assert_int_equal(f->r[1].kind, UF_REC_LEVEL);
	assert_int_equal(f->r[1].shares, 400);
	assert_int_equal(f->r[1].orders, 2);
	assert_true(f->r[1].flags & UF_RECF_BBO);
	assert_int_equal(f->r[2].kind, UF_REC_TRADE);
	assert_int_equal(f->r[2].price, 2000); /* E trades at the order's price */
	assert_int_equal(f->r[2].shares, 200);
	assert_int_equal(f->r[2].ref, 77);
	assert_int_equal(f->r[2].side, UF_SIDE_ASK);
	assert_int_equal(f->r[2].aux, UF_TRADE_EXEC);
	assert_int_equal(ap(f, mk_exec(3, 10, 300, 78)), 3);
	assert_int_equal(f->r[0].kind, UF_REC_ORDER_DELETE);
	assert_int_equal(f->r[0].shares, 300);
	assert_int_equal(f->r[0].aux, 300);
	expect_top(f, 3, UF_SIDE_ASK, 1, (int64_t[]){2000}, (uint64_t[]){100}, (uint32_t[]){1});
	assert_int_equal(ap(f, mk_exec(3, 11, 100, 79)), 3);
	assert_int_equal(f->r[1].kind, UF_REC_LEVEL); /* level gone: zero totals, BBO */
	assert_int_equal(f->r[1].shares, 0);
	assert_int_equal(f->r[1].orders, 0);
	assert_true(f->r[1].flags & UF_RECF_BBO);
	expect_top(f, 3, UF_SIDE_ASK, 0, NULL, NULL, NULL);
	const struct uf_pub_instrument *in = uf_publish_instrument(f->p, 3);
	assert_int_equal(in->last_trade_price, 2000);
	assert_int_equal(in->last_trade_shares, 100);
	assert_int_equal(in->last_trade_match, 79);
	assert_int_equal(in->volume, 600);
	/* The executed order is gone: executing it again is an integrity error, and the book
	 * is in doubt from here on (one STALE record, the book flagged). */
	assert_int_equal(ap(f, mk_exec(3, 11, 1, 80)), 1);
	expect_stale_rec(f, 0, 3, UF_STALE_INTEGRITY, UF_PUB_ERR_UNKNOWN_REF);
	assert_int_equal(err(f, UF_PUB_ERR_UNKNOWN_REF), 1);
}

static void test_exec_with_price_prints_at_its_own_price(void **state)
{
	struct fx *f = *state;
	ap(f, mk_add(4, 20, 'B', 400, 3000, NULL));
	assert_int_equal(ap(f, mk_execp(4, 20, 100, 5, 'Y', 2990)), 3);
	assert_int_equal(f->r[2].price, 2990);
	assert_int_equal(f->r[2].aux, UF_TRADE_EXEC_PRICE);
	assert_int_equal(uf_publish_instrument(f->p, 4)->last_trade_price, 2990);
	/* Non-printable: book still reduced, trade flagged, not volume / last trade. */
	assert_int_equal(ap(f, mk_execp(4, 20, 100, 6, 'N', 2980)), 3);
	assert_int_equal(f->r[2].aux, UF_TRADE_EXEC_PRICE | UF_TRADE_NONPRINTABLE);
	assert_int_equal(uf_publish_instrument(f->p, 4)->last_trade_price, 2990);
	assert_int_equal(uf_publish_instrument(f->p, 4)->volume, 100);
	expect_top(f, 4, UF_SIDE_BID, 1, (int64_t[]){3000}, (uint64_t[]){200}, (uint32_t[]){1});
	/* C on an unknown order still reports the print (side unknown); the book is in doubt. */
	assert_int_equal(ap(f, mk_execp(4, 999, 10, 7, 'Y', 2970)), 2);
	assert_int_equal(f->r[0].kind, UF_REC_TRADE);
	assert_int_equal(f->r[0].side, UF_SIDE_NONE);
	expect_stale_rec(f, 1, 4, UF_STALE_INTEGRITY, UF_PUB_ERR_UNKNOWN_REF);
	assert_int_equal(uf_publish_instrument(f->p, 4)->last_trade_price, 2970); /* it prints */
	assert_int_equal(err(f, UF_PUB_ERR_UNKNOWN_REF), 1);
}

static void test_cancel_partial_full_and_over_cancel(void **state)
{
	struct fx *f = *state;
	ap(f, mk_add(6, 30, 'B', 1000, 4000, NULL));
	ap(f, mk_add(6, 31, 'B', 500, 4000, NULL));
	assert_int_equal(ap(f, mk_cancel(6, 30, 400)), 2);
	assert_int_equal(f->r[0].kind, UF_REC_ORDER_MODIFY);
	assert_int_equal(f->r[0].shares, 600);
	assert_int_equal(f->r[0].aux, 400);
	expect_top(f, 6, UF_SIDE_BID, 1, (int64_t[]){4000}, (uint64_t[]){1100}, (uint32_t[]){2});
	/* Cancelling more than is left: counted, and the order leaves with what it had; the
	 * book is in doubt. */
	assert_int_equal(ap(f, mk_cancel(6, 30, 700)), 3);
	expect_stale_rec(f, 2, 6, UF_STALE_INTEGRITY, UF_PUB_ERR_OVER_CANCEL);
	assert_int_equal(f->r[0].kind, UF_REC_ORDER_DELETE);
	assert_int_equal(f->r[0].shares, 600);
	assert_int_equal(err(f, UF_PUB_ERR_OVER_CANCEL), 1);
	expect_top(f, 6, UF_SIDE_BID, 1, (int64_t[]){4000}, (uint64_t[]){500}, (uint32_t[]){1});
	/* Over-execution likewise (the book is stale already: no second STALE record). */
	assert_int_equal(ap(f, mk_exec(6, 31, 501, 9)), 3);
	assert_true(f->r[2].flags & UF_RECF_STALE);
	assert_int_equal(f->r[2].shares, 501); /* the trade reports what the exchange said */
	assert_int_equal(err(f, UF_PUB_ERR_OVER_EXEC), 1);
	expect_top(f, 6, UF_SIDE_BID, 0, NULL, NULL, NULL);
}

static void test_delete_removes_order_and_level(void **state)
{
	struct fx *f = *state;
	ap(f, mk_add(7, 40, 'S', 100, 100, NULL));
	ap(f, mk_add(7, 41, 'S', 200, 101, NULL));
	assert_int_equal(ap(f, mk_del(7, 41)), 2);
	assert_int_equal(f->r[0].kind, UF_REC_ORDER_DELETE);
	assert_int_equal(f->r[0].shares, 200);
	assert_int_equal(f->r[1].shares, 0);
	assert_false(f->r[1].flags & UF_RECF_BBO); /* 101 was not the best ask */
	assert_int_equal(ap(f, mk_del(7, 40)), 2);
	assert_true(f->r[1].flags & UF_RECF_BBO);
	expect_top(f, 7, UF_SIDE_ASK, 0, NULL, NULL, NULL);
	struct uf_publish_stats st;
	uf_publish_stats(f->p, &st);
	assert_int_equal(st.live_orders, 0);
	assert_int_equal(st.live_levels, 0);
	assert_int_equal(st.peak_orders, 2);
	assert_int_equal(ap(f, mk_del(7, 40)), 1);
	expect_stale_rec(f, 0, 7, UF_STALE_INTEGRITY, UF_PUB_ERR_UNKNOWN_REF);
	assert_int_equal(err(f, UF_PUB_ERR_UNKNOWN_REF), 1);
}

static void test_replace_moves_order_to_new_price_and_back_of_queue(void **state)
{
	struct fx *f = *state;
	ap(f, mk_add(8, 50, 'B', 100, 500, NULL));
	ap(f, mk_add(8, 51, 'B', 100, 500, NULL));
	assert_int_equal(ap(f, mk_replace(8, 50, 60, 300, 510)), 4);
	assert_int_equal(f->r[0].kind, UF_REC_ORDER_DELETE);
	assert_int_equal(f->r[0].ref, 50);
	assert_true(f->r[0].flags & UF_RECF_REPLACE);
	assert_int_equal(f->r[1].kind, UF_REC_LEVEL);
	assert_int_equal(f->r[1].price, 500);
	assert_int_equal(f->r[1].shares, 100);
	assert_int_equal(f->r[2].kind, UF_REC_ORDER_ADD);
	assert_int_equal(f->r[2].ref, 60);
	assert_int_equal(f->r[2].side, UF_SIDE_BID); /* side kept */
	assert_int_equal(f->r[2].price, 510);
	assert_int_equal(f->r[2].shares, 300);
	assert_true(f->r[2].flags & UF_RECF_REPLACE);
	assert_int_equal(f->r[3].kind, UF_REC_LEVEL);
	assert_true(f->r[3].flags & UF_RECF_BBO);
	expect_top(f, 8, UF_SIDE_BID, 2, (int64_t[]){510, 500}, (uint64_t[]){300, 100},
	           (uint32_t[]){1, 1});
	/* Replace at the same price: delete then add, so it goes behind order 51. */
	assert_int_equal(ap(f, mk_replace(8, 60, 61, 50, 500)), 4);
	assert_int_equal(f->r[1].shares, 0); /* 510 level gone */
	assert_int_equal(f->r[3].shares, 150);
	assert_int_equal(f->r[3].orders, 2);
	/* The old reference is dead, the new one lives. */
	assert_int_equal(ap(f, mk_del(8, 60)), 1);
	expect_stale_rec(f, 0, 8, UF_STALE_INTEGRITY, UF_PUB_ERR_UNKNOWN_REF);
	assert_int_equal(ap(f, mk_del(8, 61)), 2);
	assert_int_equal(err(f, UF_PUB_ERR_UNKNOWN_REF), 1);
	/* Replace onto a live reference: the old order goes, the add is refused and counted. */
	ap(f, mk_add(8, 70, 'S', 10, 900, NULL));
	assert_int_equal(ap(f, mk_replace(8, 70, 51, 10, 901)), 2);
	assert_int_equal(err(f, UF_PUB_ERR_DUP_REF), 1);
	expect_top(f, 8, UF_SIDE_ASK, 0, NULL, NULL, NULL);
	expect_top(f, 8, UF_SIDE_BID, 1, (int64_t[]){500}, (uint64_t[]){100}, (uint32_t[]){1});
}

static void test_trades_leave_the_book_alone(void **state)
{
	struct fx *f = *state;
	ap(f, mk_add(9, 80, 'B', 100, 700, NULL));
	struct uf_itch_msg m = mk_hdr('P', 9, 6000);
	m.u.trade.order_ref = 0;
	m.u.trade.side = 'B';
	m.u.trade.shares = 250;
	m.u.trade.price = 705;
	m.u.trade.match = 1234;
	assert_int_equal(ap(f, m), 1);
	assert_int_equal(f->r[0].kind, UF_REC_TRADE);
	assert_int_equal(f->r[0].aux, UF_TRADE_NON_CROSS);
	assert_int_equal(f->r[0].side, 'B');
	assert_int_equal(f->r[0].shares, 250);
	assert_int_equal(f->r[0].price, 705);
	assert_int_equal(f->r[0].ref, 1234);
	m = mk_hdr('Q', 9, 7000);
	m.u.cross.shares = 5000000000ull; /* 64-bit cross shares */
	m.u.cross.price = 710;
	m.u.cross.match = 1235;
	m.u.cross.cross_type = 'O';
	assert_int_equal(ap(f, m), 1);
	assert_int_equal(f->r[0].aux, UF_TRADE_CROSS | 'O' << 8);
	assert_int_equal(f->r[0].shares, 5000000000ull);
	const struct uf_pub_instrument *in = uf_publish_instrument(f->p, 9);
	assert_int_equal(in->last_trade_price, 710);
	assert_int_equal(in->volume, 5000000250ull);
	m = mk_hdr('B', 9, 8000);
	m.u.broken.match = 1234;
	assert_int_equal(ap(f, m), 1);
	assert_int_equal(f->r[0].aux, UF_TRADE_BROKEN);
	assert_int_equal(f->r[0].ref, 1234);
	expect_top(f, 9, UF_SIDE_BID, 1, (int64_t[]){700}, (uint64_t[]){100}, (uint32_t[]){1});
	struct uf_publish_stats st;
	uf_publish_stats(f->p, &st);
	assert_int_equal(st.errors_total, 0);
}

static void test_directory_names_instruments_both_ways(void **state)
{
	struct fx *f = *state;
	struct uf_itch_msg m = mk_hdr('R', 12, 100);
	mk_sym(m.u.dir.stock, "MSFT");
	m.u.dir.market_category = 'Q';
	m.u.dir.financial_status = 'N';
	m.u.dir.round_lot_size = 100;
	m.u.dir.issue_classification = 'C';
	m.u.dir.luld_tier = '1';
	assert_int_equal(ap(f, m), 1);
	assert_int_equal(f->r[0].kind, UF_REC_INSTRUMENT);
	assert_int_equal(f->r[0].instrument, 12);
	assert_int_equal(f->r[0].shares, 100);
	assert_int_equal(f->r[0].aux, 'Q');
	assert_memory_equal(&f->r[0].ref, "MSFT    ", 8);
	assert_int_equal(uf_publish_lookup(f->p, "MSFT"), 12);
	assert_int_equal(uf_publish_lookup(f->p, "MSF"), -ENOENT);
	assert_int_equal(uf_publish_lookup(f->p, "TOOLONGSYM"), -ENOENT);
	char buf[9];
	assert_int_equal(uf_publish_symbol(f->p, 12, buf), 4);
	assert_string_equal(buf, "MSFT");
	assert_int_equal(uf_publish_symbol(f->p, 13, buf), -ENOENT);
	assert_int_equal(uf_publish_symbol(f->p, 100000, buf), -ENOENT);
	const struct uf_pub_instrument *in = uf_publish_instrument(f->p, 12);
	assert_int_equal(in->round_lot, 100);
	assert_int_equal(in->market_category, 'Q');
	assert_int_equal(in->luld_tier, '1');
	assert_int_equal(in->has_directory, 1);
	assert_null(uf_publish_instrument(f->p, 64));
	/* A later R renames: the old symbol no longer resolves. */
	mk_sym(m.u.dir.stock, "MSFT.WI");
	ap(f, m);
	assert_int_equal(uf_publish_lookup(f->p, "MSFT"), -ENOENT);
	assert_int_equal(uf_publish_lookup(f->p, "MSFT.WI"), 12);
	/* An add's symbol never overrides the directory's. */
	ap(f, mk_add(12, 1, 'B', 1, 1, "OTHER"));
	assert_int_equal(uf_publish_lookup(f->p, "OTHER"), -ENOENT);
}

static void test_status_messages_update_state_and_records(void **state)
{
	struct fx *f = *state;
	struct uf_itch_msg m = mk_hdr('S', 0, 1);
	m.u.sys.event = 'O';
	assert_int_equal(ap(f, m), 1);
	assert_int_equal(f->r[0].aux, UF_STATUS_SYSTEM);
	assert_int_equal(f->r[0].shares, 'O');
	assert_int_equal(uf_publish_market(f->p)->system_event, 'O');

	m = mk_hdr('H', 3, 2);
	mk_sym(m.u.trading_action.stock, "X");
	m.u.trading_action.trading_state = 'H';
	memcpy(m.u.trading_action.reason, "LUDP", 4);
	assert_int_equal(ap(f, m), 1);
	assert_int_equal(f->r[0].aux, UF_STATUS_TRADING);
	assert_int_equal(f->r[0].shares, 'H');
	assert_memory_equal(&f->r[0].ref, "LUDP", 4);
	const struct uf_pub_instrument *in = uf_publish_instrument(f->p, 3);
	assert_int_equal(in->trading_state, 'H');
	assert_memory_equal(in->halt_reason, "LUDP", 4);

	m = mk_hdr('Y', 3, 3);
	m.u.reg_sho.action = '1';
	ap(f, m);
	assert_int_equal(f->r[0].aux, UF_STATUS_REG_SHO);
	assert_int_equal(in->reg_sho, '1');

	m = mk_hdr('h', 3, 4);
	m.u.op_halt.market_code = 'Q';
	m.u.op_halt.action = 'H';
	ap(f, m);
	assert_int_equal(f->r[0].aux, UF_STATUS_OP_HALT);
	assert_int_equal(f->r[0].ref, 'Q');
	assert_int_equal(in->op_halt, 'H');

	m = mk_hdr('J', 3, 5);
	m.u.luld.reference_price = 1000;
	m.u.luld.upper_price = 1100;
	m.u.luld.lower_price = 900;
	m.u.luld.extension = 2;
	ap(f, m);
	assert_int_equal(f->r[0].aux, UF_STATUS_LULD);
	assert_int_equal(f->r[0].price, 1000);
	assert_int_equal(f->r[0].shares, 1100);
	assert_int_equal(f->r[0].ref, 900 | 2ull << 32);
	assert_int_equal(in->luld_upper, 1100);

	m = mk_hdr('K', 3, 6);
	m.u.ipo.release_time = 36000;
	m.u.ipo.qualifier = 'A';
	m.u.ipo.price = 200000;
	ap(f, m);
	assert_int_equal(f->r[0].aux, UF_STATUS_IPO);
	assert_int_equal(f->r[0].price, 200000);
	assert_int_equal(in->ipo_release_time, 36000);

	m = mk_hdr('N', 3, 7);
	m.u.rpi.interest_flag = 'B';
	ap(f, m);
	assert_int_equal(f->r[0].aux, UF_STATUS_RPI);
	assert_int_equal(in->rpi, 'B');

	m = mk_hdr('I', 3, 8);
	m.u.noii.paired_shares = 1000;
	m.u.noii.imbalance_shares = 300;
	m.u.noii.direction = 'S';
	m.u.noii.far_price = 10;
	m.u.noii.near_price = 11;
	m.u.noii.current_ref_price = 12;
	m.u.noii.cross_type = 'C';
	m.u.noii.price_variation = 'L';
	assert_int_equal(ap(f, m), 2);
	assert_int_equal(f->r[0].aux, UF_STATUS_NOII);
	assert_int_equal(f->r[0].side, 'S');
	assert_int_equal(f->r[0].price, 12);
	assert_int_equal(f->r[0].shares, 300);
	assert_int_equal(f->r[0].ref, 1000);
	assert_int_equal(f->r[1].aux, UF_STATUS_NOII_PRICES);
	assert_int_equal(f->r[1].price, 11);
	assert_int_equal(f->r[1].shares, 10);
	assert_int_equal(f->r[1].ref, 'S' | 'C' << 8 | 'L' << 16);
	assert_int_equal(in->noii_imbalance, 300);

	m = mk_hdr('O', 3, 9);
	m.u.dlcr.open_eligibility = 'Y';
	m.u.dlcr.min_price = 1;
	m.u.dlcr.max_price = 2;
	m.u.dlcr.near_exec_price = 3;
	m.u.dlcr.near_exec_time = 4;
	m.u.dlcr.lower_collar = 5;
	m.u.dlcr.upper_collar = 6;
	assert_int_equal(ap(f, m), 2);
	assert_int_equal(f->r[0].aux, UF_STATUS_DLCR);
	assert_int_equal(f->r[0].price, 3);
	assert_int_equal(f->r[0].shares, 4);
	assert_int_equal(f->r[1].aux, UF_STATUS_DLCR_COLLARS);
	assert_int_equal(f->r[1].ref, 1 | 2ull << 32);
	assert_int_equal(in->dlcr_open_eligible, 'Y');
	assert_int_equal(in->dlcr_near_time, 4);
	assert_int_equal(in->dlcr_upper_collar, 6);
	assert_int_equal(in->dlcr_max_price, 2);

	m = mk_hdr('L', 3, 10);
	memcpy(m.u.mp_position.mpid, "GSCO", 4);
	m.u.mp_position.primary_mm = 'Y';
	m.u.mp_position.mm_mode = 'N';
	m.u.mp_position.participant_state = 'A';
	ap(f, m);
	assert_int_equal(f->r[0].aux, UF_STATUS_MP_POSITION);
	assert_int_equal(f->r[0].shares, 'Y' | 'N' << 8 | 'A' << 16);

	m = mk_hdr('V', 0, 11);
	m.u.mwcb_decline.level1 = 100000000000ull;
	m.u.mwcb_decline.level2 = 2;
	m.u.mwcb_decline.level3 = 3;
	ap(f, m);
	assert_int_equal(f->r[0].aux, UF_STATUS_MWCB_LEVELS);
	assert_int_equal(f->r[0].price, 100000000000ll);
	assert_int_equal(uf_publish_market(f->p)->mwcb_level[2], 3);
	m = mk_hdr('W', 0, 12);
	m.u.mwcb_status.breached_level = '1';
	ap(f, m);
	assert_int_equal(f->r[0].aux, UF_STATUS_MWCB_BREACH);
	assert_int_equal(uf_publish_market(f->p)->mwcb_breached, '1');
	struct uf_publish_stats st;
	uf_publish_stats(f->p, &st);
	assert_int_equal(st.errors_total, 0);
}

static void test_integrity_errors_are_counted_and_change_nothing(void **state)
{
	struct fx *f = *state;
	ap(f, mk_add(1, 1, 'B', 100, 1000, NULL));
	assert_int_equal(ap(f, mk_add(1, 1, 'S', 5, 5, NULL)), 1); /* duplicate ref */
	expect_stale_rec(f, 0, 1, UF_STALE_INTEGRITY, UF_PUB_ERR_DUP_REF);
	assert_true(uf_publish_instrument(f->p, 1)->stale);
	/* book 1 is stale now: its later errors add no STALE record */
	assert_int_equal(ap(f, mk_add(1, 2, 'X', 5, 5, NULL)), 0);  /* bad side */
	assert_int_equal(ap(f, mk_add(64, 3, 'B', 5, 5, NULL)), 0); /* locate out of range */
	assert_int_equal(ap(f, mk_exec(1, 99, 5, 1)), 0);
	assert_int_equal(ap(f, mk_cancel(1, 99, 5)), 0);
	assert_int_equal(ap(f, mk_replace(1, 99, 100, 5, 5)), 0);
	struct uf_itch_msg m = mk_hdr('Z', 1, 0);
	assert_int_equal(ap(f, m), 0);
	m = mk_hdr('H', 500, 0);
	assert_int_equal(ap(f, m), 0);
	/* Locate disagreeing with the order's: counted, applied to the order's book. */
	assert_int_equal(ap(f, mk_cancel(2, 1, 40)), 2);
	assert_int_equal(f->r[0].instrument, 1);
	assert_int_equal(err(f, UF_PUB_ERR_DUP_REF), 1);
	assert_int_equal(err(f, UF_PUB_ERR_BAD_SIDE), 1);
	assert_int_equal(err(f, UF_PUB_ERR_BAD_INSTRUMENT), 2);
	assert_int_equal(err(f, UF_PUB_ERR_UNKNOWN_REF), 3);
	assert_int_equal(err(f, UF_PUB_ERR_UNKNOWN_TYPE), 1);
	assert_int_equal(err(f, UF_PUB_ERR_LOCATE_MISMATCH), 1);
	struct uf_publish_stats st;
	uf_publish_stats(f->p, &st);
	assert_int_equal(st.errors_total, 9);
	assert_int_equal(st.live_orders, 1);
	expect_top(f, 1, UF_SIDE_BID, 1, (int64_t[]){1000}, (uint64_t[]){60}, (uint32_t[]){1});
	expect_top(f, 1, UF_SIDE_ASK, 0, NULL, NULL, NULL);
	for (unsigned k = 0; k < UF_PUB_NERR; k++)
		assert_non_null(uf_publish_err_name(k));
	assert_null(uf_publish_err_name(UF_PUB_NERR));
}

static void test_full_order_table_refuses_adds_until_orders_leave(void **state)
{
	(void)state;
	struct fx f = {.p = mk_pub(4, 8, 100, 0)};
	for (uint64_t i = 1; i <= 4; i++)
		assert_int_equal(ap(&f, mk_add(1, i, 'B', 10, (uint32_t)(100 + i), NULL)), 2);
	assert_int_equal(ap(&f, mk_add(1, 5, 'B', 10, 200, NULL)), 1); /* only the doubt */
	expect_stale_rec(&f, 0, 1, UF_STALE_TABLE_FULL, UF_PUB_ERR_ORDERS_FULL);
	assert_int_equal(ap(&f, mk_add(1, 4, 'B', 10, 200, NULL)), 0); /* still a duplicate */
	assert_int_equal(err(&f, UF_PUB_ERR_ORDERS_FULL), 1);
	assert_int_equal(err(&f, UF_PUB_ERR_DUP_REF), 1);
	/* A replace frees before it adds, so it works on a full table. */
	assert_int_equal(ap(&f, mk_replace(1, 4, 40, 10, 300)), 4);
	ap(&f, mk_del(1, 1));
	assert_int_equal(ap(&f, mk_add(1, 5, 'B', 10, 200, NULL)), 2);
	assert_int_equal(uf_publish_depth(f.p, 1, UF_SIDE_BID), 4);
	uf_publish_destroy(f.p);
}

static void test_full_level_pool_refuses_new_levels_only(void **state)
{
	(void)state;
	struct fx f = {.p = mk_pub(100, 8, 3, 0)};
	for (uint32_t i = 0; i < 3; i++)
		assert_int_equal(ap(&f, mk_add(1, i + 1, 'S', 10, 100 + i, NULL)), 2);
	assert_int_equal(ap(&f, mk_add(1, 10, 'S', 10, 999, NULL)), 1); /* 4th level */
	expect_stale_rec(&f, 0, 1, UF_STALE_TABLE_FULL, UF_PUB_ERR_LEVELS_FULL);
	assert_int_equal(err(&f, UF_PUB_ERR_LEVELS_FULL), 1);
	assert_int_equal(ap(&f, mk_add(1, 11, 'S', 10, 101, NULL)), 2); /* existing level */
	struct uf_publish_stats st;
	uf_publish_stats(f.p, &st);
	assert_int_equal(st.live_orders, 4); /* the refused add left no trace */
	ap(&f, mk_del(1, 1));
	assert_int_equal(ap(&f, mk_add(1, 10, 'S', 10, 999, NULL)), 2);
	expect_top(&f, 1, UF_SIDE_ASK, 3, (int64_t[]){101, 102, 999}, (uint64_t[]){20, 10, 10},
	           (uint32_t[]){2, 1, 1});
	uf_publish_destroy(f.p);
}

static void test_gap_flags_every_book_stale_until_reset(void **state)
{
	struct fx *f = *state;
	ap(f, mk_add(1, 1, 'B', 100, 1000, "ONE"));
	assert_false(f->r[0].flags & UF_RECF_STALE);
	struct uf_record g[2];
	assert_int_equal(uf_publish_gap(f->p, 500, 20, g, 0), -ENOBUFS);
	assert_int_equal(uf_publish_gap(f->p, 500, 20, g, 2), 1);
	assert_int_equal(g[0].kind, UF_REC_GAP);
	assert_int_equal(g[0].feed_seq, 500);
	assert_int_equal(g[0].shares, 20);
	assert_true(g[0].flags & UF_RECF_LAST);
	assert_int_equal(uf_publish_instrument(f->p, 7)->stale, 1);
	assert_int_equal(ap(f, mk_add(7, 2, 'S', 100, 1000, NULL)), 2);
	assert_true(f->r[0].flags & UF_RECF_STALE);
	assert_true(f->r[1].flags & UF_RECF_STALE);
	struct uf_publish_stats st;
	uf_publish_stats(f->p, &st);
	assert_int_equal(st.gaps, 1);
	assert_int_equal(st.gap_messages, 20);
	uf_publish_reset(f->p);
	assert_int_equal(uf_publish_instrument(f->p, 7)->stale, 0);
	assert_int_equal(uf_publish_depth(f->p, 1, UF_SIDE_BID), 0);
	assert_int_equal(uf_publish_lookup(f->p, "ONE"), 1);          /* the directory survives */
	assert_int_equal(ap(f, mk_add(1, 1, 'B', 5, 1000, NULL)), 2); /* ref 1 is free again */
	assert_false(f->r[0].flags & UF_RECF_STALE);
}

static void test_snapshot_lists_whole_book_best_first(void **state)
{
	struct fx *f = *state;
	ap(f, mk_add(2, 1, 'B', 10, 100, NULL));
	ap(f, mk_add(2, 2, 'B', 20, 101, NULL));
	ap(f, mk_add(2, 3, 'S', 30, 105, NULL));
	struct uf_record r[8];
	assert_int_equal(uf_publish_snapshot(f->p, 2, r, 4), -ENOBUFS);
	assert_int_equal(uf_publish_snapshot(f->p, 99, r, 8), -ENOENT);
	assert_int_equal(uf_publish_snapshot(f->p, 2, r, 8), 5);
	assert_int_equal(r[0].kind, UF_REC_SNAPSHOT_BEGIN);
	assert_int_equal(r[0].shares, 3);
	assert_int_equal(r[0].feed_seq, f->seq);
	assert_int_equal(r[1].price, 101);
	assert_int_equal(r[1].side, 'B');
	assert_int_equal(r[2].price, 100);
	assert_int_equal(r[3].price, 105);
	assert_int_equal(r[3].side, 'S');
	assert_int_equal(r[3].shares, 30);
	for (int i = 0; i < 5; i++)
		assert_true(r[i].flags & UF_RECF_SNAPSHOT);
	assert_int_equal(r[4].kind, UF_REC_SNAPSHOT_END);
	assert_true(r[4].flags & UF_RECF_LAST);
	assert_false(r[3].flags & UF_RECF_LAST);
}

static void test_apply_refuses_small_output_without_applying(void **state)
{
	struct fx *f = *state;
	struct uf_itch_msg m = mk_add(1, 1, 'B', 100, 1000, NULL);
	assert_int_equal(uf_publish_apply(f->p, &m, 1, 0, f->r, UF_REC_MAX_PER_MSG - 1), -ENOBUFS);
	assert_int_equal(uf_publish_depth(f->p, 1, UF_SIDE_BID), 0);
	size_t applied = 99;
	assert_int_equal(uf_publish_apply_batch(f->p, &m, 1, 1, 0, f->r, 3, &applied), 0);
	assert_int_equal(applied, 0);
	assert_int_equal(uf_publish_depth(f->p, 1, UF_SIDE_BID), 0);
}

static void test_order_ref_zero_and_huge_refs_are_keys(void **state)
{
	struct fx *f = *state;
	assert_int_equal(ap(f, mk_add(1, 0, 'B', 100, 1000, NULL)), 2);
	assert_int_equal(ap(f, mk_add(1, UINT64_MAX, 'B', 50, 1000, NULL)), 2);
	assert_int_equal(ap(f, mk_exec(1, 0, 100, 1)), 3);
	expect_top(f, 1, UF_SIDE_BID, 1, (int64_t[]){1000}, (uint64_t[]){50}, (uint32_t[]){1});
	assert_int_equal(ap(f, mk_del(1, UINT64_MAX)), 2);
	assert_int_equal(uf_publish_depth(f->p, 1, UF_SIDE_BID), 0);
}

static void test_wire_bytes_decode_then_apply(void **state)
{
	struct fx *f = *state;
	uint8_t a[36] = {'A'};
	uf_put_be16(a + 1, 3);
	uf_put_be16(a + 3, 0);
	uf_put_be48(a + 5, 34200000000000ull);
	uf_put_be64(a + 11, 123456789);
	a[19] = 'S';
	uf_put_be32(a + 20, 250);
	memcpy(a + 24, "ZVZZT   ", 8);
	uf_put_be32(a + 32, 1000100);
	struct uf_itch_msg m;
	assert_int_equal(uf_itch_decode(a, sizeof(a), &m), 0);
	assert_int_equal(ap(f, m), 2);
	assert_int_equal(f->r[1].exch_ts, 34200000000000ull);
	uint8_t e[31] = {'E'};
	uf_put_be16(e + 1, 3);
	uf_put_be48(e + 5, 34200000000001ull);
	uf_put_be64(e + 11, 123456789);
	uf_put_be32(e + 19, 50);
	uf_put_be64(e + 23, 42);
	assert_int_equal(uf_itch_decode(e, sizeof(e), &m), 0);
	assert_int_equal(ap(f, m), 3);
	expect_top(f, 3, UF_SIDE_ASK, 1, (int64_t[]){1000100}, (uint64_t[]){200}, (uint32_t[]){1});
	assert_int_equal(uf_publish_lookup(f->p, "ZVZZT"), 3);
}

static void test_no_mbo_flag_writes_levels_and_trades_only(void **state)
{
	(void)state;
	struct fx f = {.p = mk_pub(100, 8, 100, UF_PUB_F_NO_MBO)};
	assert_int_equal(ap(&f, mk_add(1, 1, 'B', 100, 1000, NULL)), 1);
	assert_int_equal(f.r[0].kind, UF_REC_LEVEL);
	assert_int_equal(ap(&f, mk_exec(1, 1, 10, 1)), 2);
	assert_int_equal(f.r[0].kind, UF_REC_LEVEL);
	assert_int_equal(f.r[1].kind, UF_REC_TRADE);
	assert_int_equal(ap(&f, mk_replace(1, 1, 2, 10, 1001)), 2);
	uf_publish_destroy(f.p);
}

static void test_publisher_leaves_the_publish_delta_to_the_ring(void **state)
{
	struct fx *f = *state;
	struct uf_itch_msg m = mk_add(1, 1, 'B', 100, 1000, NULL);
	uint64_t rx = uf_now_realtime_ns() - 5000;
	assert_int_equal(uf_publish_apply(f->p, &m, 1, rx, f->r, 4), 2);
	/* the receive time travels with the records; the publish time is not known yet: the
	 * records are readable only after every book update of their step (uf_rec_stamp) */
	assert_int_equal(f->r[0].rx_ts, rx);
	assert_int_equal(f->r[1].rx_ts, rx);
	assert_int_equal(f->r[0].pub_delta_ns, 0);
	assert_int_equal(f->r[1].pub_delta_ns, 0);
}

static void test_record_stamp_is_now_less_the_receive_time(void **state)
{
	(void)state;
	const uint64_t now = 1700000000000000000ull;
	struct uf_record r[5];
	memset(r, 0, sizeof(r));
	r[0].rx_ts = now - 5000;           /* 5 us ago */
	r[1].rx_ts = 0;                    /* no receive time (a snapshot, a file) */
	r[2].rx_ts = now + 10000000000ull; /* "after" now: a clock step, never a wrap */
	r[3].rx_ts = now - 5000000000ull;  /* 5 s ago: saturates */
	r[4].rx_ts = now;                  /* the same instant */
	for (int i = 0; i < 5; i++)
		r[i].pub_delta_ns = 77; /* every one is overwritten */
	uf_rec_stamp(r, 5, now);
	assert_int_equal(r[0].pub_delta_ns, 5000);
	assert_int_equal(r[1].pub_delta_ns, 0);
	assert_int_equal(r[2].pub_delta_ns, 0);
	assert_int_equal(r[3].pub_delta_ns, UINT32_MAX);
	assert_int_equal(r[4].pub_delta_ns, 0);
	uf_rec_stamp(r, 0, now); /* nothing to stamp: nothing touched */
	assert_int_equal(r[0].pub_delta_ns, 5000);
}

static void test_create_refuses_impossible_sizes(void **state)
{
	(void)state;
	struct uf_publish_params pp;
	struct uf_publisher *p = (void *)1;
	uf_publish_params_default(&pp);
	pp.max_instruments = 0;
	assert_int_equal(uf_publish_create(&pp, &p), -EINVAL);
	assert_null(p);
	uf_publish_params_default(&pp);
	pp.max_instruments = 65537;
	assert_int_equal(uf_publish_create(&pp, &p), -EINVAL);
	uf_publish_params_default(&pp);
	pp.max_orders = 0;
	assert_int_equal(uf_publish_create(&pp, &p), -EINVAL);
	uf_publish_params_default(&pp);
	pp.max_levels = 0;
	assert_int_equal(uf_publish_create(&pp, &p), -EINVAL);
	uf_publish_destroy(NULL);
}

struct stats_reader {
	struct uf_publisher *p;
	int stop;       /* set by the applying thread when done */
	uint64_t reads; /* snapshots taken (atomic: the applier waits on it) */
	int went_back;  /* a counter decreased between two reads */
};

static void *stats_reader_main(void *arg)
{
	struct stats_reader *sr = arg;
	uint64_t last_msgs = 0, last_recs = 0;
	/* Bounded: stops when told, or after 50M reads whatever happens. */
	while (!__atomic_load_n(&sr->stop, __ATOMIC_ACQUIRE) &&
	       __atomic_load_n(&sr->reads, __ATOMIC_RELAXED) < 50000000) {
		struct uf_publish_stats st;
		uf_publish_stats(sr->p, &st);
		if (st.messages < last_msgs || st.records < last_recs)
			sr->went_back = 1;
		last_msgs = st.messages;
		last_recs = st.records;
		__atomic_fetch_add(&sr->reads, 1, __ATOMIC_RELEASE);
	}
	return NULL;
}

/* Waits (yielding, at most 10 s) until the reader has taken more than
 * `after` snapshots; 1 when it has. */
static int wait_for_reads(struct stats_reader *sr, uint64_t after)
{
	const uint64_t give_up = uf_now_mono_ns() + 10000000000ull;
	while (__atomic_load_n(&sr->reads, __ATOMIC_ACQUIRE) <= after) {
		if (uf_now_mono_ns() > give_up)
			return 0;
		sched_yield();
	}
	return 1;
}

static void test_stats_are_readable_from_another_thread_while_applying(void **state)
{
	struct fx *f = *state;
	struct stats_reader sr = {.p = f->p};
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, stats_reader_main, &sr), 0);
	/* The reader may not be scheduled at all while 200k messages apply
	 * (a loaded 2-CPU machine), so the test forces the overlap it is
	 * about: the applier waits for a first read before it starts and,
	 * half way, for a read made after that point. Bounded: 10 s each. */
	int started = wait_for_reads(&sr, 0), mid_read = 0;
	for (uint64_t i = 0; started && i < 200000; i++) {
		struct uf_itch_msg m =
		    (i & 1) ? mk_del(1, i - 1) : mk_add(1, i, 'B', 100, 1000, NULL);
		uf_publish_apply(f->p, &m, i + 1, 0, f->r, UF_ARRAY_SIZE(f->r));
		if (i == 100000)
			mid_read =
			    wait_for_reads(&sr, __atomic_load_n(&sr.reads, __ATOMIC_ACQUIRE));
	}
	/* The reader stops and is joined before any assertion can leave. */
	__atomic_store_n(&sr.stop, 1, __ATOMIC_RELEASE);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_true(started);
	assert_true(mid_read);
	assert_true(sr.reads > 1);
	assert_false(sr.went_back);
	struct uf_publish_stats st;
	uf_publish_stats(f->p, &st);
	assert_int_equal(st.messages, 200000);
	assert_int_equal(st.records, 400000);
	assert_int_equal(st.live_orders, 0);
	assert_int_equal(st.peak_orders, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	    T(test_add_creates_level_with_mbo_and_level_records),
	    T(test_adds_aggregate_and_sort_best_first),
	    T(test_add_with_mpid_carries_attribution),
	    T(test_exec_reduces_then_removes_order_and_prints_trade),
	    T(test_exec_with_price_prints_at_its_own_price),
	    T(test_cancel_partial_full_and_over_cancel),
	    T(test_delete_removes_order_and_level),
	    T(test_replace_moves_order_to_new_price_and_back_of_queue),
	    T(test_trades_leave_the_book_alone),
	    T(test_directory_names_instruments_both_ways),
	    T(test_status_messages_update_state_and_records),
	    T(test_integrity_errors_are_counted_and_change_nothing),
	    cmocka_unit_test(test_full_order_table_refuses_adds_until_orders_leave),
	    cmocka_unit_test(test_full_level_pool_refuses_new_levels_only),
	    T(test_gap_flags_every_book_stale_until_reset),
	    T(test_snapshot_lists_whole_book_best_first),
	    T(test_apply_refuses_small_output_without_applying),
	    T(test_order_ref_zero_and_huge_refs_are_keys),
	    T(test_wire_bytes_decode_then_apply),
	    cmocka_unit_test(test_no_mbo_flag_writes_levels_and_trades_only),
	    T(test_publisher_leaves_the_publish_delta_to_the_ring),
	    cmocka_unit_test(test_record_stamp_is_now_less_the_receive_time),
	    cmocka_unit_test(test_create_refuses_impossible_sizes),
	    T(test_stats_are_readable_from_another_thread_while_applying),
#undef T
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
