/* The consumer-side book builder (ring/ufbook.h): record effects, the stamp rule of the
 * handover, gaps and resets, the image's truncation flag, a lap re-sync, and a generated day
 * published through a live ring whose rebuilt books must print exactly as `uf-decode books`. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "decode/uf_decode.h"
#include "publish/uf_publish.h"
#include "ring/uf_ring.h"
#include "ring/ufbook.h"
#include "ring/ufconsumer.h"
#define RING_TEST_MAKE_RING
#include "test/ring/ring_test_util.h"
#include "test/common/uf_test_run.h"

static struct uf_record lvl(uint32_t id, uint8_t side, int64_t px, uint64_t sh, uint32_t o)
{
	struct uf_record r;

	memset(&r, 0, sizeof(r));
	r.kind = UF_REC_LEVEL;
	r.instrument = id;
	r.side = side;
	r.price = px;
	r.shares = sh;
	r.orders = o;
	r.flags = UF_RECF_LAST;
	return r;
}

static uf_book_builder_t *mk_builder(uint32_t max)
{
	uf_book_builder_t *b = NULL;

	assert_int_equal(uf_book_builder_create(max, &b), 0);
	return b;
}

static void expect_side(uf_book_builder_t *b, uint32_t id, int side, const int64_t *px,
                        const uint64_t *sh, int n)
{
	struct uf_level lv[16];
	int got = uf_book_builder_levels(b, id, side, lv, 16);

	assert_int_equal(got, n);
	assert_int_equal(uf_book_builder_depth(b, id, side), (size_t)n);
	for (int i = 0; i < n; i++) {
		assert_int_equal(lv[i].price, px[i]);
		assert_int_equal(lv[i].shares, sh[i]);
	}
}

static void test_levels_apply_in_price_order_and_zero_removes(void **state)
{
	uf_book_builder_t *b = mk_builder(8);
	struct uf_record r;
	struct uf_level bid, ask;
	uint64_t seq = 0;

	(void)state;
	/* out of order on purpose: the book sorts them */
	r = lvl(2, UF_SIDE_BID, 100, 1, 1), uf_book_builder_apply(b, &r, seq++);
	r = lvl(2, UF_SIDE_BID, 300, 3, 1), uf_book_builder_apply(b, &r, seq++);
	r = lvl(2, UF_SIDE_BID, 200, 2, 1), uf_book_builder_apply(b, &r, seq++);
	r = lvl(2, UF_SIDE_ASK, 500, 5, 1), uf_book_builder_apply(b, &r, seq++);
	r = lvl(2, UF_SIDE_ASK, 400, 4, 1), uf_book_builder_apply(b, &r, seq++);
	expect_side(b, 2, UF_SIDE_BID, (int64_t[]){300, 200, 100}, (uint64_t[]){3, 2, 1}, 3);
	expect_side(b, 2, UF_SIDE_ASK, (int64_t[]){400, 500}, (uint64_t[]){4, 5}, 2);
	/* new totals replace, zero removes */
	r = lvl(2, UF_SIDE_BID, 200, 9, 3), uf_book_builder_apply(b, &r, seq++);
	r = lvl(2, UF_SIDE_BID, 300, 0, 0), uf_book_builder_apply(b, &r, seq++);
	r = lvl(2, UF_SIDE_ASK, 450, 0, 0), uf_book_builder_apply(b, &r, seq++); /* absent: no-op */
	expect_side(b, 2, UF_SIDE_BID, (int64_t[]){200, 100}, (uint64_t[]){9, 1}, 2);
	expect_side(b, 2, UF_SIDE_ASK, (int64_t[]){400, 500}, (uint64_t[]){4, 5}, 2);
	assert_int_equal(uf_book_builder_top(b, 2, &bid, &ask), 3);
	assert_int_equal(bid.price, 200);
	assert_int_equal(bid.orders, 3);
	assert_int_equal(ask.price, 400);
	assert_int_equal(uf_book_builder_top(b, 3, &bid, &ask), 0);
	assert_int_equal(uf_book_builder_top(b, 8, &bid, &ask), -ERANGE);
	assert_int_equal(uf_book_builder_levels(b, 2, 'X', &bid, 1), -EINVAL);
	/* a record for an id the builder does not cover is ignored, not a crash */
	r = lvl(99, UF_SIDE_BID, 1, 1, 1);
	assert_int_equal(uf_book_builder_apply(b, &r, seq++), 0);
	uf_book_builder_destroy(b);
}

static void test_a_side_grows_past_its_first_allocation(void **state)
{
	uf_book_builder_t *b = mk_builder(4);
	struct uf_level lv[1000];
	struct uf_record r;

	(void)state;
	for (int i = 0; i < 1000; i++) { /* every insert at the far end: worst case */
		r = lvl(1, UF_SIDE_ASK, 1000 + (i * 7919) % 1000, (uint64_t)i + 1, 1);
		uf_book_builder_apply(b, &r, (uint64_t)i);
	}
	assert_int_equal(uf_book_builder_levels(b, 1, UF_SIDE_ASK, lv, 1000), 1000);
	for (int i = 1; i < 1000; i++)
		assert_true(lv[i - 1].price < lv[i].price);
	uf_book_builder_destroy(b);
}

static void test_records_below_the_snapshot_stamp_are_not_applied_twice(void **state)
{
	uf_book_builder_t *b = mk_builder(8);
	struct uf_book_snapshot *s = calloc(1, sizeof(*s));
	struct uf_book_builder_stats st;
	struct uf_record r;

	(void)state;
	s->instrument = 5;
	s->stamp = 10; /* the image reflects every record < 10 of instrument 5 */
	s->nbid = 1;
	s->bid[0] = (struct uf_level){.price = 700, .shares = 70, .orders = 7};
	snprintf(s->symbol, sizeof(s->symbol), "XYZ");
	assert_int_equal(uf_book_builder_load(b, s), 0);
	assert_string_equal(uf_book_builder_symbol(b, 5), "XYZ");
	r = lvl(5, UF_SIDE_BID, 700, 0, 0); /* record 9: already in the image */
	assert_int_equal(uf_book_builder_apply(b, &r, 9), 0);
	expect_side(b, 5, UF_SIDE_BID, (int64_t[]){700}, (uint64_t[]){70}, 1);
	r = lvl(5, UF_SIDE_BID, 700, 71, 8); /* record 10: the first the image lacks */
	assert_int_equal(uf_book_builder_apply(b, &r, 10), 1);
	expect_side(b, 5, UF_SIDE_BID, (int64_t[]){700}, (uint64_t[]){71}, 1);
	/* another instrument has its own stamp (0 here) */
	r = lvl(6, UF_SIDE_ASK, 1, 1, 1);
	assert_int_equal(uf_book_builder_apply(b, &r, 3), 1);
	uf_book_builder_get_stats(b, &st);
	assert_int_equal(st.skipped, 1);
	assert_int_equal(st.applied, 2);
	free(s);
	uf_book_builder_destroy(b);
}

static void test_gap_flags_every_book_stale_and_clear_empties_them(void **state)
{
	uf_book_builder_t *b = mk_builder(8);
	struct uf_book_builder_stats st;
	struct uf_record r;

	(void)state;
	r = lvl(1, UF_SIDE_BID, 10, 1, 1), uf_book_builder_apply(b, &r, 0);
	r = lvl(2, UF_SIDE_BID, 20, 1, 1), uf_book_builder_apply(b, &r, 1);
	memset(&r, 0, sizeof(r));
	r.kind = UF_REC_GAP;
	r.feed_seq = 100;
	r.shares = 5;
	assert_int_equal(uf_book_builder_apply(b, &r, 2), 1);
	assert_true(uf_book_builder_flags(b, 1) & UF_BOOKF_STALE);
	assert_true(uf_book_builder_flags(b, 2) & UF_BOOKF_STALE);
	assert_true(uf_book_builder_flags(b, 7) & UF_BOOKF_STALE);
	/* the producer keeps saying STALE until its books are rebuilt */
	r = lvl(1, UF_SIDE_BID, 11, 1, 1);
	r.flags |= UF_RECF_STALE;
	uf_book_builder_apply(b, &r, 3);
	assert_true(uf_book_builder_flags(b, 1) & UF_BOOKF_STALE);
	r.flags &= (uint16_t)~UF_RECF_STALE; /* ... and stops once they are */
	uf_book_builder_apply(b, &r, 4);
	assert_false(uf_book_builder_flags(b, 1) & UF_BOOKF_STALE);
	assert_true(uf_book_builder_flags(b, 2) & UF_BOOKF_STALE);
	uf_book_builder_clear(b); /* reset: a new session's books start empty */
	assert_int_equal(uf_book_builder_depth(b, 1, UF_SIDE_BID), 0);
	assert_int_equal(uf_book_builder_depth(b, 2, UF_SIDE_BID), 0);
	assert_int_equal(uf_book_builder_flags(b, 2), 0);
	uf_book_builder_get_stats(b, &st);
	assert_int_equal(st.gaps, 1);
	assert_int_equal(st.resets, 1);
	uf_book_builder_destroy(b);
}

/* The stream's own reset and doubts: a STALE record flags its book (or every book), a RESET
 * record empties every book and clears every doubt, keeping the symbols. */
static void test_reset_and_stale_records_are_applied(void **state)
{
	uf_book_builder_t *b = mk_builder(8);
	struct uf_book_builder_stats st;
	struct uf_record r;

	(void)state;
	memset(&r, 0, sizeof(r));
	r.kind = UF_REC_INSTRUMENT;
	r.instrument = 1;
	memcpy(&r.ref, "AAPL    ", 8);
	assert_int_equal(uf_book_builder_apply(b, &r, 0), 1);
	r = lvl(1, UF_SIDE_BID, 10, 1, 1), uf_book_builder_apply(b, &r, 1);
	r = lvl(2, UF_SIDE_ASK, 20, 1, 1), uf_book_builder_apply(b, &r, 2);
	memset(&r, 0, sizeof(r));
	r.kind = UF_REC_STALE;
	r.instrument = 2;
	r.aux = UF_STALE_INTEGRITY;
	r.flags = UF_RECF_STALE | UF_RECF_LAST;
	assert_int_equal(uf_book_builder_apply(b, &r, 3), 1);
	assert_true(uf_book_builder_flags(b, 2) & UF_BOOKF_STALE);
	assert_false(uf_book_builder_flags(b, 1) & UF_BOOKF_STALE);
	r.instrument = UF_INSTRUMENT_ALL;
	r.aux = UF_STALE_DECODE;
	assert_int_equal(uf_book_builder_apply(b, &r, 4), 1);
	assert_true(uf_book_builder_flags(b, 1) & UF_BOOKF_STALE);
	assert_true(uf_book_builder_flags(b, 7) & UF_BOOKF_STALE);
	memset(&r, 0, sizeof(r));
	r.kind = UF_REC_RESET;
	r.shares = UF_RESET_NEW_SESSION;
	r.feed_seq = 1;
	r.flags = UF_RECF_LAST;
	assert_int_equal(uf_book_builder_apply(b, &r, 5), 1);
	assert_int_equal(uf_book_builder_depth(b, 1, UF_SIDE_BID), 0);
	assert_int_equal(uf_book_builder_depth(b, 2, UF_SIDE_ASK), 0);
	assert_int_equal(uf_book_builder_flags(b, 1), 0);
	assert_int_equal(uf_book_builder_flags(b, 2), 0);
	assert_string_equal(uf_book_builder_symbol(b, 1), "AAPL");
	uf_book_builder_get_stats(b, &st);
	assert_int_equal(st.resets, 1);
	assert_int_equal(st.ignored, 0);
	uf_book_builder_destroy(b);
}

static void test_snapshot_bracket_replaces_the_book_and_its_truncation(void **state)
{
	uf_book_builder_t *b = mk_builder(8);
	struct uf_book_snapshot *s = calloc(1, sizeof(*s));
	struct uf_record r;

	(void)state;
	s->instrument = 3;
	s->flags = UF_BOOKF_TRUNCATED_BID;
	s->nbid = 2;
	s->bid[0] = (struct uf_level){.price = 90, .shares = 1, .orders = 1};
	s->bid[1] = (struct uf_level){.price = 80, .shares = 1, .orders = 1};
	assert_int_equal(uf_book_builder_load(b, s), 0);
	assert_int_equal(uf_book_builder_flags(b, 3), UF_BOOKF_TRUNCATED_BID);
	memset(&r, 0, sizeof(r));
	r.kind = UF_REC_SNAPSHOT_BEGIN;
	r.instrument = 3;
	r.shares = 1;
	uf_book_builder_apply(b, &r, 0);
	r = lvl(3, UF_SIDE_BID, 85, 2, 1);
	r.flags = UF_RECF_SNAPSHOT;
	uf_book_builder_apply(b, &r, 1);
	memset(&r, 0, sizeof(r));
	r.kind = UF_REC_SNAPSHOT_END;
	r.instrument = 3;
	r.flags = UF_RECF_LAST;
	uf_book_builder_apply(b, &r, 2);
	expect_side(b, 3, UF_SIDE_BID, (int64_t[]){85}, (uint64_t[]){2}, 1);
	assert_int_equal(uf_book_builder_flags(b, 3), 0); /* the whole book came in the bracket */
	free(s);
	uf_book_builder_destroy(b);
}

static struct uf_record ord(uint8_t kind, uint64_t ref, uint8_t side, int64_t px, uint64_t sh)
{
	struct uf_record r;

	memset(&r, 0, sizeof(r));
	r.kind = kind;
	r.instrument = 1;
	r.ref = ref;
	r.side = side;
	r.price = px;
	r.shares = sh;
	return r;
}

static void test_orders_are_tracked_only_when_asked_and_survive_collisions(void **state)
{
	uf_book_builder_t *b = mk_builder(8);
	struct uf_book_builder_stats st;
	struct uf_book_order o;
	struct uf_record r;
	uint64_t seq = 0;

	(void)state;
	r = ord(UF_REC_ORDER_ADD, 7, UF_SIDE_BID, 100, 10);
	assert_int_equal(uf_book_builder_apply(b, &r, seq++), 0); /* tracking off: ignored */
	assert_int_equal(uf_book_builder_order(b, 7, &o), -ENOTSUP);
	assert_int_equal(uf_book_builder_track_orders(b, 1000), 0);
	assert_int_equal(uf_book_builder_track_orders(b, 1000), -EINVAL);
	assert_int_equal(uf_book_builder_apply(b, &r, seq++), 1);
	r = ord(UF_REC_ORDER_MODIFY, 7, UF_SIDE_BID, 100, 4);
	assert_int_equal(uf_book_builder_apply(b, &r, seq++), 1);
	assert_int_equal(uf_book_builder_order(b, 7, &o), 0);
	assert_int_equal(o.shares, 4);
	assert_int_equal(o.side, UF_SIDE_BID);
	r = ord(UF_REC_ORDER_DELETE, 99, UF_SIDE_ASK, 1, 1); /* rested before we started */
	assert_int_equal(uf_book_builder_apply(b, &r, seq++), 0);
	/* 1000 orders (the table is 2048 slots: runs and wrap-around), then delete every
	 * other one: the rest must all still be found (backward-shift deletion) */
	for (uint64_t i = 1; i < 1000; i++) {
		r = ord(UF_REC_ORDER_ADD, 7 + i * 2048, UF_SIDE_ASK, (int64_t)i, i);
		assert_int_equal(uf_book_builder_apply(b, &r, seq++), 1);
	}
	r = ord(UF_REC_ORDER_ADD, 1u << 30, UF_SIDE_ASK, 1, 1); /* the 1001st: full */
	assert_int_equal(uf_book_builder_apply(b, &r, seq++), 0);
	for (uint64_t i = 0; i < 1000; i += 2) {
		r = ord(UF_REC_ORDER_DELETE, 7 + i * 2048, UF_SIDE_ASK, 0, 0);
		assert_int_equal(uf_book_builder_apply(b, &r, seq++), 1);
	}
	for (uint64_t i = 0; i < 1000; i++)
		assert_int_equal(uf_book_builder_order(b, 7 + i * 2048, &o), i % 2 ? 0 : -ENOENT);
	uf_book_builder_get_stats(b, &st);
	assert_int_equal(st.orders_live, 500);
	assert_int_equal(st.orders_unknown, 1);
	assert_int_equal(st.orders_full, 1);
	uf_book_builder_clear(b);
	assert_int_equal(uf_book_builder_order(b, 7 + 2048, &o), -ENOENT);
	uf_book_builder_destroy(b);
}

static uf_consumer_t *attach_latest(const char *name)
{
	struct uf_consumer_options o;
	uf_consumer_t *c = NULL;
	char err[256] = "";

	uf_consumer_options_init(&o);
	o.tag = "sdk-test";
	if (uf_consumer_attach(name, &o, &c, err, sizeof(err)) != 0)
		fprintf(stderr, "attach %s: %s\n", name, err);
	assert_non_null(c);
	return c;
}

static void test_image_flags_a_side_cut_at_its_depth_and_sync_reports_it(void **state)
{
	char name[64];
	struct uf_level lv[5];
	struct uf_book_snapshot *s = calloc(1, sizeof(*s));
	struct uf_book_builder_stats st;
	uf_book_builder_t *b = mk_builder(64);
	struct uf_ring *r;
	uf_consumer_t *c;

	(void)state;
	test_ring_name(name, sizeof(name), "trunc");
	r = make_ring_with(name, 1024, 0600, 4);
	for (int i = 0; i < 5; i++)
		lv[i] = (struct uf_level){.price = 100 - i, .shares = 1, .orders = 1};
	/* 5 bids into a 4-deep image: cut, and flagged */
	assert_int_equal(uf_ring_image_set_book(r, 7, lv, 5, lv, 1, uf_ring_tail(r), 0), 0);
	assert_int_equal(uf_ring_image_set_book(r, 8, lv, 4, lv, 4, uf_ring_tail(r), 0), 0);
	uf_ring_image_commit(r);
	c = attach_latest(name);
	assert_int_equal(uf_consumer_snapshot(c, 7, s), 0);
	assert_int_equal(s->nbid, 4);
	assert_int_equal(s->flags & UF_BOOKF_TRUNCATED, UF_BOOKF_TRUNCATED_BID);
	assert_int_equal(uf_consumer_snapshot(c, 8, s), 0);
	assert_int_equal(s->flags & UF_BOOKF_TRUNCATED, 0); /* exactly depth: the whole book */
	assert_int_equal(uf_book_builder_sync(b, c), 0);
	uf_book_builder_get_stats(b, &st);
	assert_int_equal(st.truncated, 1);
	assert_int_equal(uf_book_builder_flags(b, 7), UF_BOOKF_TRUNCATED_BID);
	assert_int_equal(uf_book_builder_depth(b, 7, UF_SIDE_BID), 4);
	/* the book shrinks to the depth: the flag goes */
	assert_int_equal(uf_ring_image_set_levels(r, 7, UF_SIDE_BID, lv, 3, uf_ring_tail(r), 0), 0);
	assert_int_equal(uf_consumer_snapshot(c, 7, s), 0);
	assert_int_equal(s->flags & UF_BOOKF_TRUNCATED, 0);
	uf_consumer_detach(c);
	uf_ring_close(r);
	uf_book_builder_destroy(b);
	free(s);
}

/* Publishes one level change and updates the image as the feed does. */
static void pub_level(struct uf_ring *r, uf_book_builder_t *truth, struct uf_record rec)
{
	struct uf_level b[65], a[65];
	uint64_t seq;
	int nb, na;

	assert_int_equal(uf_ring_publish(r, &rec, 1), 0);
	seq = uf_ring_tail(r);
	uf_book_builder_apply(truth, &rec, seq - 1);
	nb = uf_book_builder_levels(truth, rec.instrument, UF_SIDE_BID, b, 65);
	na = uf_book_builder_levels(truth, rec.instrument, UF_SIDE_ASK, a, 65);
	uf_ring_image_set_book(r, rec.instrument, b, (uint32_t)nb, a, (uint32_t)na, seq, 0);
}

static void assert_same_books(uf_book_builder_t *x, uf_book_builder_t *y, uint32_t max)
{
	struct uf_level a[256], b[256];

	for (uint32_t id = 0; id < max; id++) {
		for (int s = 0; s < 2; s++) {
			int side = s ? UF_SIDE_ASK : UF_SIDE_BID;
			int na = uf_book_builder_levels(x, id, side, a, 256);
			int nb = uf_book_builder_levels(y, id, side, b, 256);
			assert_int_equal(na, nb);
			assert_memory_equal(a, b, (size_t)na * sizeof(*a));
		}
	}
}

static void test_a_lapped_builder_resyncs_from_the_image(void **state)
{
	char name[64];
	uf_book_builder_t *truth = mk_builder(64), *b = mk_builder(64);
	struct uf_book_builder_stats st;
	struct uf_record rec;
	struct uf_ring *r;
	uf_consumer_t *c;
	int rc, overflows = 0, n = 0;

	(void)state;
	test_ring_name(name, sizeof(name), "lap");
	r = make_ring_with(name, 16, 0600, 64);
	c = attach_latest(name);
	assert_int_equal(uf_book_builder_sync(b, c), 0);
	/* 200 changes into a 16-record ring the consumer does not read meanwhile: lapped */
	for (int i = 0; i < 200; i++)
		pub_level(r, truth,
		          lvl((uint32_t)(i % 5), i % 2 ? UF_SIDE_ASK : UF_SIDE_BID,
		              1000 + (i * 37) % 11, i % 3 ? (uint64_t)i : 0, (uint32_t)(i % 3)));
	uf_ring_image_commit(r);
	while ((rc = uf_book_builder_next(b, c, &rec, NULL)) != -EAGAIN) {
		if (rc == -EOVERFLOW)
			overflows++;
		else
			assert_int_equal(rc, 0);
		assert_true(++n < 1000);
	}
	assert_true(overflows >= 1);
	uf_book_builder_get_stats(b, &st);
	assert_int_equal(st.laps, (uint64_t)overflows);
	assert_int_equal(st.syncs, 1 + (uint64_t)overflows);
	assert_same_books(b, truth, 64);
	/* and it keeps following the live stream */
	pub_level(r, truth, lvl(1, UF_SIDE_BID, 5000, 7, 7));
	assert_int_equal(uf_book_builder_next(b, c, &rec, NULL), 0);
	assert_same_books(b, truth, 64);
	uf_consumer_detach(c);
	uf_ring_close(r);
	uf_book_builder_destroy(b);
	uf_book_builder_destroy(truth);
}

/* ---- a generated day through a live ring ---- */

struct sym_id {
	const char *sym; /* builder's symbol */
	uint32_t id;     /* instrument */
};

static int cmp_sym_id(const void *a, const void *b)
{
	const struct sym_id *x = a, *y = b;
	int c = strcmp(x->sym, y->sym);

	return c ? c : x->id < y->id ? -1 : x->id > y->id;
}

static void put_side(FILE *f, uf_book_builder_t *b, uint32_t id, int side)
{
	size_t n = uf_book_builder_depth(b, id, side);
	struct uf_level *lv = malloc((n + 1) * sizeof(*lv));
	int got = uf_book_builder_levels(b, id, side, lv, n);

	fputc('[', f);
	for (int i = 0; i < got; i++)
		fprintf(f, "%s[%lld,%llu,%u]", i ? "," : "", (long long)lv[i].price,
		        (unsigned long long)lv[i].shares, lv[i].orders);
	fputc(']', f);
	free(lv);
}

/* The builder's books in `uf-decode books` format; truncated books go to `trunc_ids`. */
static void render_books(FILE *f, uf_book_builder_t *b, FILE *trunc_ids)
{
	uint32_t max = uf_book_builder_max_instruments(b);
	struct sym_id *v = malloc(max * sizeof(*v));
	size_t n = 0;

	for (uint32_t id = 0; id < max; id++) {
		if (!uf_book_builder_depth(b, id, UF_SIDE_BID) &&
		    !uf_book_builder_depth(b, id, UF_SIDE_ASK))
			continue;
		v[n].sym = uf_book_builder_symbol(b, id);
		v[n++].id = id;
	}
	qsort(v, n, sizeof(*v), cmp_sym_id);
	for (size_t i = 0; i < n; i++) {
		fprintf(f, "{\"symbol\":\"%s\",\"bid\":", v[i].sym); /* uf-gen: alphanumerics */
		put_side(f, b, v[i].id, UF_SIDE_BID);
		fputs(",\"ask\":", f);
		put_side(f, b, v[i].id, UF_SIDE_ASK);
		fputs("}\n", f);
		if (uf_book_builder_flags(b, v[i].id) & UF_BOOKF_TRUNCATED)
			fprintf(trunc_ids, "%s\n", v[i].sym);
	}
	free(v);
}

struct order_list {
	struct uf_book_order *v; /* collected */
	size_t n, cap;           /* used, allocated */
};

static int collect_order(const struct uf_book_order *o, void *arg)
{
	struct order_list *l = arg;

	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 1024;
		l->v = realloc(l->v, l->cap * sizeof(*l->v));
		if (!l->v)
			return -ENOMEM;
	}
	l->v[l->n++] = *o;
	return 0;
}

static int cmp_order(const void *a, const void *b)
{
	const struct uf_book_order *x = a, *y = b;

	if (x->instrument != y->instrument)
		return x->instrument < y->instrument ? -1 : 1;
	if (x->side != y->side)
		return x->side < y->side ? -1 : 1;
	return x->price < y->price ? -1 : x->price > y->price;
}

/* The tracked orders, summed per level, are exactly the level books. Returns the number of
 * orders, or -1 (printing the first difference). */
static long orders_match_levels(uf_book_builder_t *b)
{
	struct order_list l = {0};
	size_t levels = 0, groups = 0;

	if (uf_book_builder_for_each_order(b, collect_order, &l) != 0)
		return -1;
	qsort(l.v, l.n, sizeof(*l.v), cmp_order);
	for (size_t i = 0; i < l.n;) {
		uint64_t shares = 0;
		uint32_t count = 0;
		size_t j = i, at;
		size_t n = uf_book_builder_depth(b, l.v[i].instrument, l.v[i].side);
		struct uf_level *lv = malloc((n + 1) * sizeof(*lv));
		int got = uf_book_builder_levels(b, l.v[i].instrument, l.v[i].side, lv, n);

		for (; j < l.n && cmp_order(&l.v[i], &l.v[j]) == 0; j++) {
			shares += l.v[j].shares;
			count++;
		}
		for (at = 0; at < (size_t)got && lv[at].price != l.v[i].price; at++)
			;
		if (at == (size_t)got || lv[at].shares != shares || lv[at].orders != count) {
			fprintf(stderr,
			        "orders of %u %c %lld: %llu shares in %u orders, level %s\n",
			        l.v[i].instrument, l.v[i].side, (long long)l.v[i].price,
			        (unsigned long long)shares, count,
			        at == (size_t)got ? "missing" : "differs");
			free(lv);
			free(l.v);
			return -1;
		}
		free(lv);
		groups++;
		i = j;
	}
	for (uint32_t id = 0; id < uf_book_builder_max_instruments(b); id++)
		levels += uf_book_builder_depth(b, id, UF_SIDE_BID) +
		          uf_book_builder_depth(b, id, UF_SIDE_ASK);
	free(l.v);
	if (groups != levels) {
		fprintf(stderr, "%zu levels hold orders, the books have %zu\n", groups, levels);
		return -1;
	}
	return (long)l.n;
}

/* Consumer process: attach, hand over, follow until the ring closes, print the books. The
 * one that joins before the first record also tracks every order. */
static void consumer_child(const char *name, int go_fd, int ack_fd, const char *out_path,
                           int orders)
{
	char tpath[600];
	uf_book_builder_t *b;
	uf_consumer_t *c;
	struct uf_consumer_options o;
	struct uf_book_builder_stats st;
	char err[256];
	uint64_t end = uf_now_mono_ns() + 50000000000ull;
	FILE *f, *t;
	int rc;

	CHILD_CHECK(test_pipe_get(go_fd, 50000));
	uf_consumer_options_init(&o);
	o.tag = "sdk-day";
	CHILD_CHECK(uf_consumer_attach(name, &o, &c, err, sizeof(err)) == 0);
	CHILD_CHECK(uf_book_builder_create(65536, &b) == 0);
	CHILD_CHECK(uf_book_builder_sync(b, c) == 0);
	if (orders)
		CHILD_CHECK(uf_book_builder_track_orders(b, 1u << 18) == 0);
	test_pipe_put(ack_fd);
	while ((rc = uf_book_builder_next(b, c, NULL, NULL)) != -EPIPE) {
		CHILD_CHECK(rc == 0 || rc == -EAGAIN || rc == -EOVERFLOW);
		if (rc == -EAGAIN)
			uf_consumer_wait(c, 100000000);
		CHILD_CHECK(uf_now_mono_ns() < end);
	}
	snprintf(tpath, sizeof(tpath), "%s.trunc", out_path);
	f = fopen(out_path, "w");
	t = fopen(tpath, "w");
	CHILD_CHECK(f && t);
	render_books(f, b, t);
	uf_book_builder_get_stats(b, &st);
	if (orders) {
		long n = orders_match_levels(b);
		CHILD_CHECK(n > 1000 && st.orders_unknown == 0 && st.orders_full == 0);
		CHILD_CHECK((uint64_t)n == st.orders_live);
		fprintf(t, "# orders %ld, every level equals the sum of its orders\n", n);
	}
	fprintf(t, "# laps %llu syncs %llu truncated_at_sync %llu\n", (unsigned long long)st.laps,
	        (unsigned long long)st.syncs, (unsigned long long)st.truncated);
	fclose(f);
	fclose(t);
	uf_consumer_detach(c);
	uf_book_builder_destroy(b);
	_exit(0);
}

/* Every level of `got` appears in `want` with the same totals, in the same order. */
static int is_subsequence_line(const char *got, const char *want)
{
	const char *g = strstr(got, "\"bid\":"), *w = strstr(want, "\"bid\":");

	for (int side = 0; side < 2; side++) {
		const char *ge = strstr(g, side ? "]}" : "],\"ask\":");
		const char *we = strstr(w, side ? "]}" : "],\"ask\":");
		const char *wp = w;
		for (const char *gp = strchr(g, '['); gp && gp < ge;) {
			const char *lv = strchr(gp + 1, '[');
			const char *lve;
			char item[64];
			if (!lv || lv >= ge)
				break;
			lve = strchr(lv, ']');
			snprintf(item, sizeof(item), "%.*s", (int)(lve - lv + 1), lv);
			wp = strstr(wp, item);
			if (!wp || wp >= we)
				return 0;
			gp = lve;
		}
		g = strstr(g, "\"ask\":");
		w = strstr(w, "\"ask\":");
	}
	return 1;
}

static const char *line_of(const char *text, const char *sym, char *buf, size_t len)
{
	char key[64];
	const char *p, *e;

	snprintf(key, sizeof(key), "{\"symbol\":\"%s\",", sym);
	p = strstr(text, key);
	if (!p)
		return NULL;
	e = strchr(p, '\n');
	snprintf(buf, len, "%.*s", (int)(e - p), p);
	return buf;
}

static void test_generated_day_through_a_live_ring_matches_uf_decode_books(void **state)
{
	const char *bin = getenv("UF_BIN_DIR") ? getenv("UF_BIN_DIR") : UF_BIN_DIR;
	char gen[512], dec[512], day[256], out[2][256], name[64];
	int go[2][2], ack[2][2];
	pid_t kid[2];
	struct uf_test_run run;
	struct uf_reader rd;
	struct uf_decode_counters dc;
	struct uf_reader_msg rm;
	struct uf_itch_msg m;
	struct uf_record rec[UF_REC_MAX_PER_MSG];
	struct uf_publish_params pp;
	struct uf_publisher *p;
	struct uf_ring_options o;
	struct uf_ring *r = NULL;
	struct uf_level *bids = malloc(65 * sizeof(*bids)), *asks = malloc(65 * sizeof(*asks));
	char err[256];
	uint64_t nmsg = 0;
	const uint32_t depth = 8; /* shallow on purpose: the mid-day joiner meets cut books */

	(void)state;
	snprintf(gen, sizeof(gen), "%s/uf-gen", bin);
	snprintf(dec, sizeof(dec), "%s/uf-decode", bin);
	snprintf(day, sizeof(day), "/tmp/uf-sdk-day-%d.itch", (int)getpid());
	{
		const char *argv[] = {"uf-gen",    "--out", day,      "--messages", "120000",
		                      "--symbols", "150",   "--seed", "15",         NULL};
		uf_test_run_path(gen, argv, 30000, &run);
		assert_int_equal(run.status, 0);
		free(run.out), free(run.err);
	}
	test_ring_name(name, sizeof(name), "day");
	uf_ring_options_init(&o);
	o.capacity = 1u << 19; /* the whole day: no lap, the comparison is exact */
	o.depth = depth;
	o.max_instruments = 65536;
	o.max_consumers = 8;
	o.numa_node = UF_RING_NUMA_NONE;
	o.hugepages = 0;
	assert_int_equal(uf_ring_create(name, &o, &r, err, sizeof(err)), 0);
	/* consumer 0 joins before the first record, consumer 1 half way through the day */
	for (int k = 0; k < 2; k++) {
		snprintf(out[k], sizeof(out[k]), "/tmp/uf-sdk-books-%d-%d.json", (int)getpid(), k);
		assert_int_equal(pipe(go[k]), 0);
		assert_int_equal(pipe(ack[k]), 0);
		kid[k] = uf_test_fork();
		assert_true(kid[k] >= 0);
		if (kid[k] == 0)
			consumer_child(name, go[k][0], ack[k][1], out[k], k == 0);
	}
	test_pipe_put(go[0][1]);
	assert_true(test_pipe_get(ack[0][0], 20000));

	uf_publish_params_default(&pp);
	pp.max_orders = 1000000;
	pp.max_instruments = 65536;
	pp.numa_node = -1;
	assert_int_equal(uf_publish_create(&pp, &p), 0);
	memset(&dc, 0, sizeof(dc));
	assert_int_equal(uf_reader_open(&rd, day, &dc), 0);
	while (uf_reader_next(&rd, &rm) == 1) {
		int k;
		uint64_t seq;
		if (uf_itch_decode(rm.msg, rm.len, &m) != 0)
			continue;
		k = uf_publish_apply(p, &m, rm.seq, 0, rec, UF_REC_MAX_PER_MSG);
		assert_true(k >= 0);
		if (++nmsg == 60000) { /* half way: the late joiner copies the image now */
			test_pipe_put(go[1][1]);
			assert_true(test_pipe_get(ack[1][0], 20000));
		}
		if (k == 0)
			continue;
		assert_int_equal(uf_ring_publish(r, rec, (size_t)k), 0);
		seq = uf_ring_tail(r);
		uf_ring_image_batch_begin(r);
		for (int i = 0; i < k; i++) {
			uint32_t id = rec[i].instrument;
			if (rec[i].kind == UF_REC_INSTRUMENT) {
				uf_ring_image_set_symbol(r, id, rec[i].ref, (uint32_t)rec[i].shares,
				                         rec[i].aux, seq);
			} else if (rec[i].kind == UF_REC_LEVEL) {
				/* depth + 1 levels: a deeper side is flagged truncated */
				int nb = uf_publish_top(p, id, UF_SIDE_BID, bids, depth + 1);
				int na = uf_publish_top(p, id, UF_SIDE_ASK, asks, depth + 1);
				uf_ring_image_set_book(r, id, bids, (uint32_t)nb, asks,
				                       (uint32_t)na, seq, 0);
			}
		}
		uf_ring_image_batch_end(r, seq);
	}
	uf_reader_close(&rd);
	uf_ring_close(r);
	for (int k = 0; k < 2; k++)
		assert_true(test_child_ok(test_wait_child(kid[k], 60000)));

	{
		const char *argv[] = {"uf-decode", "books", day, NULL};
		uf_test_run_path(dec, argv, 30000, &run);
		assert_int_equal(run.status, 0);
	}
	/* the joiner from the start: exactly uf-decode's text, and orders that add up */
	{
		char tpath[600], *got = uf_test_slurp(out[0]), *trunc;
		snprintf(tpath, sizeof(tpath), "%s.trunc", out[0]);
		trunc = uf_test_slurp(tpath);
		print_message("start joiner: %s", strstr(trunc, "# orders"));
		free(trunc);
		assert_true(strlen(run.out) > 1000);
		assert_string_equal(got, run.out);
		free(got);
	}
	/* the mid-day joiner: every uncut book exact, every cut one a faithful part */
	{
		char tpath[600], *got = uf_test_slurp(out[1]), *trunc;
		char *save = NULL, *line, gl[1 << 15], wl[1 << 15];
		int ntrunc = 0, nexact = 0;
		snprintf(tpath, sizeof(tpath), "%s.trunc", out[1]);
		trunc = uf_test_slurp(tpath);
		print_message("mid-day joiner: %s", strstr(trunc, "# laps"));
		for (line = strtok_r(got, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
			char sym[16], key[32];
			const char *want;
			sscanf(line, "{\"symbol\":\"%15[^\"]\"", sym);
			want = line_of(run.out, sym, wl, sizeof(wl));
			snprintf(key, sizeof(key), "\n%s\n", sym);
			if (strstr(trunc, key) || strncmp(trunc, key + 1, strlen(key + 1)) == 0) {
				assert_non_null(want);
				assert_true(is_subsequence_line(line, want));
				ntrunc++;
			} else {
				snprintf(gl, sizeof(gl), "%s", line);
				assert_non_null(want);
				assert_string_equal(gl, want);
				nexact++;
			}
		}
		print_message("mid-day joiner: %d books exact, %d cut at the image depth\n", nexact,
		              ntrunc);
		assert_true(nexact > 0);
		assert_true(ntrunc > 0); /* the condition under test did happen */
		free(got);
		free(trunc);
		unlink(tpath);
	}
	for (int k = 0; k < 2; k++) {
		char tpath[600];
		snprintf(tpath, sizeof(tpath), "%s.trunc", out[k]);
		unlink(tpath);
		unlink(out[k]);
	}
	free(run.out), free(run.err);
	unlink(day);
	uf_ring_unlink(name, NULL);
	uf_publish_destroy(p);
	free(bids);
	free(asks);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_levels_apply_in_price_order_and_zero_removes),
	    cmocka_unit_test(test_a_side_grows_past_its_first_allocation),
	    cmocka_unit_test(test_records_below_the_snapshot_stamp_are_not_applied_twice),
	    cmocka_unit_test(test_gap_flags_every_book_stale_and_clear_empties_them),
	    cmocka_unit_test(test_reset_and_stale_records_are_applied),
	    cmocka_unit_test(test_snapshot_bracket_replaces_the_book_and_its_truncation),
	    cmocka_unit_test(test_orders_are_tracked_only_when_asked_and_survive_collisions),
	    cmocka_unit_test(test_image_flags_a_side_cut_at_its_depth_and_sync_reports_it),
	    cmocka_unit_test(test_a_lapped_builder_resyncs_from_the_image),
	    cmocka_unit_test(test_generated_day_through_a_live_ring_matches_uf_decode_books),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
