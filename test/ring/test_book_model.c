/* The one record -> book model (ring/book_model.h): one case per rule, each forcing the
 * record kind it names and checking the book as the producer's image would hold it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ring/book_model.h"
#include "test/common/uf_test_status.h"

static struct uf_record rec(uint8_t kind, uint32_t id)
{
	struct uf_record r;

	memset(&r, 0, sizeof(r));
	r.kind = kind;
	r.instrument = id;
	r.flags = UF_RECF_LAST;
	return r;
}

static struct uf_record lvl(uint32_t id, uint8_t side, int64_t px, uint64_t sh, uint32_t ord)
{
	struct uf_record r = rec(UF_REC_LEVEL, id);

	r.side = side;
	r.price = px;
	r.shares = sh;
	r.orders = ord;
	return r;
}

static struct uf_record trade(uint32_t id, int64_t px, uint64_t sh, uint32_t aux)
{
	struct uf_record r = rec(UF_REC_TRADE, id);

	r.price = px;
	r.shares = sh;
	r.aux = aux;
	r.exch_ts = 77;
	r.rx_ts = 88;
	return r;
}

struct fixture {
	struct uf_book_model m;
	struct uf_book_snapshot s; /* scratch */
	uint64_t seq;              /* next record's sequence */
	uint32_t changed[64];      /* ids the changed hook reported, in order */
	uint32_t nchanged;         /* entries in changed[] */
};

static void on_changed(void *arg, uint32_t id, uint64_t seq)
{
	struct fixture *f = arg;

	(void)seq;
	if (f->nchanged < 64)
		f->changed[f->nchanged++] = id;
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	assert_int_equal(uf_book_model_init(&f->m, 16), 0);
	f->m.changed = on_changed;
	f->m.changed_arg = f;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	uf_book_model_free(&f->m);
	free(f);
	return 0;
}

static int put(struct fixture *f, struct uf_record r)
{
	return uf_book_model_apply(&f->m, &r, f->seq++);
}

static const struct uf_book_snapshot *snap(struct fixture *f, uint32_t id)
{
	assert_int_equal(uf_book_model_snapshot(&f->m, id, 64, f->seq, &f->s), 0);
	return &f->s;
}

static void test_level_sets_totals_best_first_and_both_zero_removes(void **state)
{
	struct fixture *f = *state;
	const struct uf_book_snapshot *s;

	put(f, lvl(1, UF_SIDE_BID, 100, 10, 1));
	put(f, lvl(1, UF_SIDE_BID, 102, 20, 2));
	put(f, lvl(1, UF_SIDE_ASK, 105, 5, 1));
	put(f, lvl(1, UF_SIDE_ASK, 103, 7, 1));
	put(f, lvl(1, UF_SIDE_BID, 100, 11, 3));                     /* new totals */
	assert_int_equal(put(f, lvl(1, UF_SIDE_BID, 102, 0, 0)), 1); /* gone */
	assert_int_equal(put(f, lvl(1, 'X', 1, 1, 1)), 0);           /* no side: no book change */
	s = snap(f, 1);
	assert_int_equal(s->nbid, 1);
	assert_int_equal(s->bid[0].price, 100);
	assert_int_equal(s->bid[0].shares, 11);
	assert_int_equal(s->bid[0].orders, 3);
	assert_int_equal(s->nask, 2);
	assert_int_equal(s->ask[0].price, 103);
	assert_int_equal(s->ask[1].price, 105);
	assert_int_equal(uf_book_model_snapshot(&f->m, 2, 64, 0, &f->s), -ENOENT);
}

static void test_trade_moves_volume_and_last_trade_only_when_it_prints(void **state)
{
	struct fixture *f = *state;
	const struct uf_book_snapshot *s;

	assert_int_equal(put(f, trade(2, 500, 10, UF_TRADE_EXEC)), 1);
	assert_int_equal(put(f, trade(2, 510, 30, UF_TRADE_EXEC_PRICE | UF_TRADE_NONPRINTABLE)), 0);
	assert_int_equal(put(f, trade(2, 0, 0, UF_TRADE_BROKEN)), 0);
	assert_int_equal(put(f, trade(2, 520, 0, UF_TRADE_CROSS | ('O' << 8))), 0); /* no cross */
	assert_int_equal(put(f, trade(2, 505, 4, UF_TRADE_CROSS | ('C' << 8))), 1);
	s = snap(f, 2);
	assert_int_equal(s->volume, 14);
	assert_int_equal(s->trades, 2);
	assert_int_equal(s->last_price, 505);
	assert_int_equal(s->last_shares, 4);
	assert_int_equal(s->last_exch_ts, 77);
	assert_int_equal(s->last_rx_ts, 88);
	/* a trade that does not print makes no book */
	put(f, trade(3, 1, 5, UF_TRADE_EXEC | UF_TRADE_NONPRINTABLE));
	assert_int_equal(uf_book_model_snapshot(&f->m, 3, 64, 0, &f->s), -ENOENT);
}

/* Every defined code twice, highest first: each keeps its latest value in its own slot (the
 * model kept 8 codes, first come, before ring layout 2), listed in code order; 0 and codes
 * beyond the enum change nothing and are counted as ignored. */
static void test_status_keeps_the_latest_value_of_every_code(void **state)
{
	struct fixture *f = *state;
	struct uf_record r = rec(UF_REC_STATUS, 4);
	struct uf_book_snapshot copy;
	const struct uf_book_snapshot *s;
	uint64_t ignored;

	for (uint32_t round = 0; round < 2; round++)
		for (uint32_t code = UF_STATUS_MAX; code >= 1; code--) {
			uf_test_status_value(&r, round, code);
			assert_int_equal(put(f, r), 1);
		}
	ignored = f->m.stats.ignored;
	r.aux = 0; /* no code */
	assert_int_equal(put(f, r), 0);
	r.aux = UF_STATUS_MAX + 1; /* a code this build does not know */
	assert_int_equal(put(f, r), 0);
	r.aux = UINT32_MAX;
	assert_int_equal(put(f, r), 0);
	r.instrument = 7; /* nor does it make a book */
	assert_int_equal(put(f, r), 0);
	assert_int_equal(f->m.stats.ignored, ignored + 4);
	assert_int_equal(uf_book_model_snapshot(&f->m, 7, 64, 0, &f->s), -ENOENT);
	s = snap(f, 4);
	assert_int_equal(s->nstatus, UF_STATUS_MAX);
	for (uint32_t k = 0; k < s->nstatus; k++) {
		assert_int_equal(s->status[k].code, k + 1);
		assert_int_equal(s->status[k].price, 1000 + k + 1);
		assert_int_equal(s->status[k].shares, 10u * (k + 1) + 1);
		assert_int_equal(s->status[k].exch_ts, 100 + k + 1);
	}
	/* a book loaded from a snapshot (the image's, a key-value entry's) has them all too */
	copy = *s;
	copy.instrument = 6;
	assert_int_equal(uf_book_model_load(&f->m, &copy), 0);
	s = snap(f, 6);
	assert_int_equal(s->nstatus, UF_STATUS_MAX);
	assert_memory_equal(s->status, copy.status, UF_STATUS_MAX * sizeof(s->status[0]));
}

static void test_instrument_names_the_book(void **state)
{
	struct fixture *f = *state;
	struct uf_record r = rec(UF_REC_INSTRUMENT, 5);
	uint32_t id = 0;

	memcpy(&r.ref, "MSFT    ", 8);
	r.shares = 100;
	r.aux = 'Q';
	assert_int_equal(put(f, r), 1);
	assert_string_equal(snap(f, 5)->symbol, "MSFT");
	assert_int_equal(f->s.round_lot, 100);
	assert_int_equal(f->s.category, 'Q');
	assert_int_equal(uf_book_model_lookup(&f->m, r.ref, &id), 0);
	assert_int_equal(id, 5);
}

/* A directory record of a book in doubt (its STALE record went to nobody: a symbol filter did
 * not want the book yet) flags it, as the image does; one without the bit clears nothing. */
static void test_instrument_named_in_doubt_is_stale(void **state)
{
	struct fixture *f = *state;
	struct uf_record r = rec(UF_REC_INSTRUMENT, 6);

	memcpy(&r.ref, "FFF     ", 8);
	r.flags |= UF_RECF_STALE;
	assert_int_equal(put(f, r), 1);
	assert_true(snap(f, 6)->flags & UF_BOOKF_STALE);
	r.flags = UF_RECF_LAST;
	put(f, r);
	assert_true(snap(f, 6)->flags & UF_BOOKF_STALE);
	r.instrument = 7;
	put(f, r);
	assert_false(snap(f, 7)->flags & UF_BOOKF_STALE);
}

static void test_gap_makes_every_book_stale_and_books_made_later_too(void **state)
{
	struct fixture *f = *state;

	put(f, lvl(1, UF_SIDE_BID, 10, 1, 1));
	put(f, lvl(2, UF_SIDE_ASK, 20, 1, 1));
	f->nchanged = 0;
	assert_int_equal(put(f, rec(UF_REC_GAP, 0)), 1);
	assert_int_equal(f->nchanged, 2); /* both books changed (their entries must be rewritten) */
	assert_true(snap(f, 1)->flags & UF_BOOKF_STALE);
	assert_true(snap(f, 2)->flags & UF_BOOKF_STALE);
	assert_int_equal(uf_book_model_snapshot(&f->m, 0, 64, 0, &f->s), -ENOENT); /* no book 0 */
	put(f, trade(9, 5, 5, UF_TRADE_EXEC)); /* a book first seen after the gap */
	assert_true(snap(f, 9)->flags & UF_BOOKF_STALE);
	assert_int_equal(f->m.stats.gaps, 1);
}

static void test_stale_flags_one_book_or_every_book(void **state)
{
	struct fixture *f = *state;
	struct uf_record st = rec(UF_REC_STALE, 2);

	put(f, lvl(1, UF_SIDE_BID, 10, 1, 1));
	put(f, lvl(2, UF_SIDE_BID, 10, 1, 1));
	st.flags |= UF_RECF_STALE;
	st.aux = UF_STALE_INTEGRITY;
	assert_int_equal(put(f, st), 1);
	assert_true(snap(f, 2)->flags & UF_BOOKF_STALE);
	assert_false(snap(f, 1)->flags & UF_BOOKF_STALE);
	st.instrument = 7; /* a book never seen: made, and stale */
	put(f, st);
	assert_true(snap(f, 7)->flags & UF_BOOKF_STALE);
	st.instrument = UF_INSTRUMENT_ALL;
	assert_int_equal(put(f, st), 1);
	assert_true(snap(f, 1)->flags & UF_BOOKF_STALE);
	assert_int_equal(f->m.stats.gaps, 0);
}

static void test_reset_voids_books_volume_and_doubts_keeps_directory_and_statuses(void **state)
{
	struct fixture *f = *state;
	struct uf_record r = rec(UF_REC_INSTRUMENT, 1);
	const struct uf_book_snapshot *s;

	memcpy(&r.ref, "AAPL    ", 8);
	put(f, r);
	r = rec(UF_REC_STATUS, 1);
	r.aux = UF_STATUS_TRADING;
	r.shares = 'H';
	put(f, r);
	put(f, lvl(1, UF_SIDE_BID, 10, 1, 1));
	put(f, trade(1, 10, 3, UF_TRADE_EXEC));
	put(f, rec(UF_REC_GAP, 0));
	r = rec(UF_REC_RESET, 0);
	r.shares = UF_RESET_NEW_SESSION;
	assert_int_equal(put(f, r), 1);
	s = snap(f, 1);
	assert_int_equal(s->nbid, 0);
	assert_int_equal(s->flags, 0);
	assert_int_equal(s->volume, 0);
	assert_int_equal(s->trades, 0);
	assert_int_equal(s->last_price, 0);
	assert_string_equal(s->symbol, "AAPL");
	assert_int_equal(s->nstatus, 1);
	assert_int_equal(s->status[0].shares, 'H');
	put(f, trade(8, 1, 1, UF_TRADE_EXEC)); /* after the reset: no doubt carried over */
	assert_int_equal(snap(f, 8)->flags, 0);
}

static void test_snapshot_bracket_rebuilds_the_book_and_clears_truncation(void **state)
{
	struct fixture *f = *state;
	struct uf_book_snapshot *in = calloc(1, sizeof(*in));
	struct uf_record r;

	assert_non_null(in);
	in->instrument = 3;
	in->flags = UF_BOOKF_TRUNCATED_BID;
	in->nbid = 2;
	in->bid[0] = (struct uf_level){.price = 90, .shares = 1, .orders = 1};
	in->bid[1] = (struct uf_level){.price = 80, .shares = 1, .orders = 1};
	assert_int_equal(uf_book_model_load(&f->m, in), 0);
	assert_int_equal(snap(f, 3)->flags, UF_BOOKF_TRUNCATED_BID);
	r = rec(UF_REC_SNAPSHOT_BEGIN, 3);
	r.flags = UF_RECF_SNAPSHOT;
	r.shares = 1;
	put(f, r);
	r = lvl(3, UF_SIDE_BID, 85, 2, 1);
	r.flags = UF_RECF_SNAPSHOT;
	put(f, r);
	r = rec(UF_REC_SNAPSHOT_END, 3);
	r.flags = UF_RECF_SNAPSHOT | UF_RECF_LAST;
	put(f, r);
	snap(f, 3);
	assert_int_equal(f->s.flags, 0);
	assert_int_equal(f->s.nbid, 1);
	assert_int_equal(f->s.bid[0].price, 85);
	free(in);
}

static void test_stale_bit_of_a_level_record_states_the_books_doubt(void **state)
{
	struct fixture *f = *state;
	struct uf_record r = lvl(1, UF_SIDE_BID, 10, 1, 1);

	r.flags |= UF_RECF_STALE;
	put(f, r);
	assert_true(snap(f, 1)->flags & UF_BOOKF_STALE);
	r.flags &= (uint16_t)~UF_RECF_STALE;
	put(f, r);
	assert_false(snap(f, 1)->flags & UF_BOOKF_STALE);
}

static void test_records_below_a_books_stamp_are_skipped_global_ones_too(void **state)
{
	struct fixture *f = *state;
	struct uf_book_snapshot *in = calloc(1, sizeof(*in));
	struct uf_record r = lvl(1, UF_SIDE_BID, 10, 0, 0);

	assert_non_null(in);
	in->instrument = 1;
	in->stamp = 100; /* the entry holds every record < 100 */
	in->nbid = 1;
	in->bid[0] = (struct uf_level){.price = 10, .shares = 5, .orders = 1};
	in->volume = 40;
	assert_int_equal(uf_book_model_load(&f->m, in), 0);
	assert_int_equal(uf_book_model_apply(&f->m, &r, 99), 0);
	r = rec(UF_REC_RESET, 0);
	uf_book_model_apply(&f->m, &r, 98); /* in the entry already: not voided again */
	r = rec(UF_REC_GAP, 0);
	uf_book_model_apply(&f->m, &r, 97);
	snap(f, 1);
	assert_int_equal(f->s.nbid, 1);
	assert_int_equal(f->s.volume, 40);
	assert_int_equal(f->s.flags, 0);
	assert_int_equal(f->m.stats.skipped, 1);
	r = lvl(1, UF_SIDE_BID, 10, 0, 0);
	assert_int_equal(uf_book_model_apply(&f->m, &r, 100), 1);
	assert_int_equal(snap(f, 1)->nbid, 0);
	f->m.floor = 200; /* a handover's start: nothing below it applies */
	r = lvl(2, UF_SIDE_BID, 10, 1, 1);
	assert_int_equal(uf_book_model_apply(&f->m, &r, 150), 0);
	free(in);
}

static void test_snapshot_cuts_a_deeper_side_and_flags_it_truncated(void **state)
{
	struct fixture *f = *state;

	for (int i = 0; i < 70; i++)
		put(f, lvl(6, UF_SIDE_ASK, 1000 + i, 1, 1));
	put(f, lvl(6, UF_SIDE_BID, 900, 1, 1));
	assert_int_equal(uf_book_model_snapshot(&f->m, 6, 10, 0, &f->s), 0);
	assert_int_equal(f->s.nask, 10);
	assert_int_equal(f->s.ask[9].price, 1009);
	assert_int_equal(f->s.flags, UF_BOOKF_TRUNCATED_ASK);
	assert_int_equal(uf_book_model_snapshot(&f->m, 6, 100, 0, &f->s), 0);
	assert_int_equal(f->s.nask, UF_BOOK_MAX_DEPTH);
	assert_int_equal(f->s.flags, UF_BOOKF_TRUNCATED_ASK);
	for (int i = 64; i < 70; i++)
		put(f, lvl(6, UF_SIDE_ASK, 1000 + i, 0, 0));
	assert_int_equal(uf_book_model_snapshot(&f->m, 6, 70, 0, &f->s), 0);
	assert_int_equal(f->s.flags, 0); /* the whole book fits */
}

static void test_orders_are_tracked_only_when_asked_and_reset_forgets_them(void **state)
{
	struct fixture *f = *state;
	struct uf_record r = rec(UF_REC_ORDER_ADD, 1);
	struct uf_book_order o;

	r.ref = 42;
	r.side = UF_SIDE_BID;
	r.price = 10;
	r.shares = 7;
	assert_int_equal(put(f, r), 0);
	assert_int_equal(uf_book_model_track_orders(&f->m, 8), 0);
	assert_int_equal(put(f, r), 1);
	assert_int_equal(uf_book_model_snapshot(&f->m, 1, 64, 0, &f->s), -ENOENT); /* no level */
	r.kind = UF_REC_ORDER_MODIFY;
	r.shares = 3;
	put(f, r);
	assert_int_equal(uf_book_model_order(&f->m, 42, &o), 0);
	assert_int_equal(o.shares, 3);
	put(f, rec(UF_REC_RESET, 0));
	assert_int_equal(uf_book_model_order(&f->m, 42, &o), -ENOENT);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
	    T(test_level_sets_totals_best_first_and_both_zero_removes),
	    T(test_trade_moves_volume_and_last_trade_only_when_it_prints),
	    T(test_status_keeps_the_latest_value_of_every_code),
	    T(test_instrument_names_the_book),
	    T(test_instrument_named_in_doubt_is_stale),
	    T(test_gap_makes_every_book_stale_and_books_made_later_too),
	    T(test_stale_flags_one_book_or_every_book),
	    T(test_reset_voids_books_volume_and_doubts_keeps_directory_and_statuses),
	    T(test_snapshot_bracket_rebuilds_the_book_and_clears_truncation),
	    T(test_stale_bit_of_a_level_record_states_the_books_doubt),
	    T(test_records_below_a_books_stamp_are_skipped_global_ones_too),
	    T(test_snapshot_cuts_a_deeper_side_and_flags_it_truncated),
	    T(test_orders_are_tracked_only_when_asked_and_reset_forgets_them),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
