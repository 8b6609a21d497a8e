/* The symbol filter (feed/filter.h) on a publisher's records, without sockets or a ring: what
 * it keeps (every record about every instrument, every record of a wanted book, doubts
 * included; nothing of the others) and the count of books in doubt that consumers can see
 * (uf_filter_stale_books: the wanted ones, not every named book the publisher counts). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/uf_compiler.h"
#include "common/uf_symbol.h"
#include "decode/uf_decode.h"
#include "feed/filter.h"
#include "publish/uf_publish.h"

#define RX_NS 1700000000123456789ull

struct fx {
	struct uf_publisher *pub;  /* 16 instruments */
	struct uf_filter fl;       /* under test */
	uint64_t seq;              /* next feed sequence */
	struct uf_record recs[16]; /* one step's records, then what the filter kept */
};

static void fx_setup(struct fx *x, const char (*syms)[9], uint32_t n)
{
	memset(x, 0, sizeof(*x));
	struct uf_publish_params pp;
	uf_publish_params_default(&pp);
	pp.max_instruments = 16;
	pp.max_orders = 1024;
	pp.numa_node = -1;
	assert_int_equal(uf_publish_create(&pp, &x->pub), 0);
	assert_int_equal(uf_filter_init(&x->fl, 16, syms, n), 0);
	x->seq = 1;
}

static void fx_teardown(struct fx *x)
{
	uf_filter_fini(&x->fl);
	uf_publish_destroy(x->pub);
}

/* Applies one message and filters its records: returns how many the filter kept. */
static size_t apply(struct fx *x, const struct uf_itch_msg *m)
{
	int k = uf_publish_apply(x->pub, m, x->seq++, RX_NS, x->recs, UF_ARRAY_SIZE(x->recs));
	assert_true(k >= 0);
	return uf_filter_records(&x->fl, x->recs, (size_t)k);
}

static struct uf_itch_msg dir(uint16_t loc, const char *sym)
{
	struct uf_itch_msg m;
	memset(&m, 0, sizeof(m));
	m.type = 'R';
	m.locate = loc;
	m.len = (uint16_t)uf_itch_msg_len('R');
	uf_symbol_pad(m.u.dir.stock, sym);
	m.u.dir.market_category = 'Q';
	m.u.dir.round_lot_size = 100;
	return m;
}

/* A doubt from a message that did not decode (the feed's path): filtered, kept count. */
static size_t doubt(struct fx *x, uint32_t inst)
{
	int k = uf_publish_doubt(x->pub, inst, UF_STALE_DECODE, x->seq++, RX_NS, x->recs,
	                         UF_ARRAY_SIZE(x->recs));
	assert_true(k >= 0);
	return uf_filter_records(&x->fl, x->recs, (size_t)k);
}

/* What consumers can see in doubt, as the feed's stats sync asks for it. */
static uint64_t stale_seen(struct fx *x, uint64_t *pub_stale)
{
	struct uf_publish_stats ps;
	uf_publish_stats(x->pub, &ps);
	*pub_stale = ps.stale_books;
	return uf_filter_stale_books(&x->fl, x->pub, ps.stale_books);
}

static void test_filter_keeps_every_doubt_a_consumer_can_see(void **state)
{
	(void)state;
	struct fx x;
	const char syms[2][9] = {"AAA", "CCC"};
	fx_setup(&x, syms, 2);
	/* Book 4: a doubt before its directory entry (no list can want it yet): dropped. */
	assert_int_equal(doubt(&x, 4), 0);
	const struct uf_itch_msg d1 = dir(1, "AAA"), d2 = dir(2, "BBB"), d3 = dir(3, "CCC");
	assert_int_equal(apply(&x, &d1), 1);
	assert_int_equal(x.recs[0].kind, UF_REC_INSTRUMENT);
	assert_int_equal(apply(&x, &d2), 0);
	assert_int_equal(apply(&x, &d3), 1);
	/* Per-book doubts: a wanted book's passes, the other's does not. */
	assert_int_equal(doubt(&x, 2), 0);
	assert_int_equal(doubt(&x, 1), 1);
	assert_int_equal(x.recs[0].kind, UF_REC_STALE);
	assert_int_equal(x.recs[0].instrument, 1);
	/* The doubt of every book passes (it was dropped: its id is past max_inst). */
	assert_int_equal(doubt(&x, UF_INSTRUMENT_ALL), 1);
	assert_int_equal(x.recs[0].kind, UF_REC_STALE);
	assert_int_equal(x.recs[0].instrument, UF_INSTRUMENT_ALL);
	/* A later per-book doubt has nothing new to say: every book is stale already. */
	assert_int_equal(doubt(&x, 3), 0);
	/* A book named after the doubt of all: its directory record carries the doubt. */
	const struct uf_itch_msg d4 = dir(4, "AAA2"), d5 = dir(5, "CCC");
	assert_int_equal(apply(&x, &d4), 0);
	assert_int_equal(apply(&x, &d5), 1);
	assert_true(x.recs[0].flags & UF_RECF_STALE);
	/* GAP and RESET concern every instrument: both pass. */
	int k = uf_publish_gap(x.pub, x.seq, 3, x.recs, UF_ARRAY_SIZE(x.recs));
	assert_int_equal(k, 1);
	assert_int_equal(uf_filter_records(&x.fl, x.recs, 1), 1);
	k = uf_publish_new_session(x.pub, "SESSION002", x.recs, UF_ARRAY_SIZE(x.recs));
	assert_int_equal(k, 1);
	assert_int_equal(uf_filter_records(&x.fl, x.recs, 1), 1);
	assert_int_equal(x.recs[0].kind, UF_REC_RESET);
	/* After the reset a per-book doubt is news again: the wanted one passes. */
	assert_int_equal(doubt(&x, 3), 1);
	assert_int_equal(x.recs[0].instrument, 3);
	assert_int_equal(doubt(&x, 2), 0);
	/* The rule itself, record by record. */
	struct uf_record r = {.kind = UF_REC_STATUS, .instrument = 0};
	assert_true(uf_filter_keeps(&x.fl, &r)); /* market-wide */
	r.instrument = 2;
	assert_false(uf_filter_keeps(&x.fl, &r));
	r.instrument = 3;
	assert_true(uf_filter_keeps(&x.fl, &r));
	r.instrument = 1000; /* past the books: never wanted */
	assert_false(uf_filter_keeps(&x.fl, &r));
	r.kind = UF_REC_STALE;
	r.instrument = UF_INSTRUMENT_ALL;
	assert_true(uf_filter_keeps(&x.fl, &r));
	fx_teardown(&x);
}

/* books_stale (/ready) counts the wanted books in doubt, not every named book: it follows
 * per-book doubts, a doubt of all, books named later, a reset and a list change. */
static void test_filter_counts_the_wanted_books_in_doubt(void **state)
{
	(void)state;
	struct fx x;
	uint64_t pub;
	const char syms[2][9] = {"AAA", "CCC"};
	fx_setup(&x, syms, 2);
	const struct uf_itch_msg d[] = {dir(1, "AAA"), dir(2, "BBB"), dir(3, "CCC"), dir(4, "DDD")};
	for (size_t i = 0; i < UF_ARRAY_SIZE(d); i++)
		apply(&x, &d[i]);
	assert_int_equal(stale_seen(&x, &pub), 0);
	doubt(&x, 2);
	assert_int_equal(stale_seen(&x, &pub), 0);
	assert_int_equal(pub, 1); /* the publisher's count has BBB */
	doubt(&x, 1);
	assert_int_equal(stale_seen(&x, &pub), 1);
	assert_int_equal(pub, 2);
	doubt(&x, UF_INSTRUMENT_ALL);
	assert_int_equal(stale_seen(&x, &pub), 2); /* AAA, CCC */
	assert_int_equal(pub, 4);
	const struct uf_itch_msg d5 = dir(5, "CCC");
	apply(&x, &d5);                            /* wanted, named in doubt */
	assert_int_equal(stale_seen(&x, &pub), 3); /* the publisher's count did not move */
	assert_int_equal(pub, 4);
	int k = uf_publish_new_session(x.pub, "SESSION002", x.recs, UF_ARRAY_SIZE(x.recs));
	uf_filter_records(&x.fl, x.recs, (size_t)k);
	assert_int_equal(stale_seen(&x, &pub), 0);
	doubt(&x, 3);
	assert_int_equal(stale_seen(&x, &pub), 1);
	/* Between two syncs (one receive batch): a reset, then a doubt of BBB. The publisher's
	 * count is 1 again, but another book: counted afresh (BBB is not wanted). */
	k = uf_publish_new_session(x.pub, "SESSION003", x.recs, UF_ARRAY_SIZE(x.recs));
	uf_filter_records(&x.fl, x.recs, (size_t)k);
	doubt(&x, 2);
	assert_int_equal(stale_seen(&x, &pub), 0);
	assert_int_equal(pub, 1);
	/* A new list that wants BBB (the feed thread rewrites wanted[], then switches). */
	const char syms2[1][9] = {"BBB"};
	assert_int_equal(uf_filter_set(&x.fl, syms2, 1), 0);
	uint32_t slot = uf_filter_pending(&x.fl) - 1;
	for (uint32_t id = 1; id < 16; id++) {
		char sym[9], pad[8];
		if (uf_publish_symbol(x.pub, id, sym) < 0)
			continue;
		uf_symbol_pad(pad, sym);
		x.fl.wanted[id] = (uint8_t)uf_filter_slot_wants(&x.fl, slot, pad);
	}
	uf_filter_switch(&x.fl, slot);
	assert_int_equal(stale_seen(&x, &pub), 1);
	/* No list: the publisher's count as it is. */
	assert_int_equal(uf_filter_set(&x.fl, NULL, 0), 0);
	uf_filter_switch(&x.fl, uf_filter_pending(&x.fl) - 1);
	doubt(&x, 4);
	assert_int_equal(stale_seen(&x, &pub), 2);
	assert_int_equal(pub, 2);
	fx_teardown(&x);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_filter_keeps_every_doubt_a_consumer_can_see),
	    cmocka_unit_test(test_filter_counts_the_wanted_books_in_doubt),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
