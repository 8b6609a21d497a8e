/* Issue 26: the sink copies into the book image only the sides and levels a step changed
 * (feed/sink.c uf_sink_copy_side, ring/image.c uf_ring_image_side_begin/end). After every
 * step the image under test must hold exactly what a full copy of the publisher's books
 * makes (uf_ring_image_set_book on a reference ring, depth + 1 levels a side): levels,
 * counts, truncation flags, and the cleared levels past the count. Driven by directed steps
 * (a level inserted at the top, deleted in the middle, a side untouched, truncation at the
 * image depth and back, several changes in one step, a doubt, a new session) and by a
 * seeded random day over three books, per step and with the feed's deferred image. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/uf_compiler.h"
#include "common/uf_symbol.h"
#include "decode/uf_decode.h"
#include "feed/sink.h"
#include "publish/uf_publish.h"
#include "ring/uf_ring.h"

#include "sink_fixture.h"

#define DEPTH 5
#define NINST 16

struct fx {
	char name[UF_CFG_NAME_MAX];     /* ring under test */
	char ref_name[UF_CFG_NAME_MAX]; /* reference ring: full copies */
	struct uf_feed_config cfg;
	struct uf_publisher *pub;
	struct uf_sink sink; /* under test */
	struct uf_ring *ref; /* the full-copy reference */
	uint64_t seq;        /* next feed sequence */
	unsigned steps;      /* steps compared */
	struct uf_record recs[256];
};

static void fx_setup(struct fx *x)
{
	static const struct sink_fx_params sp = {.tag = "lv",
	                                         .feed = "lvfeed",
	                                         .ring_capacity = 1 << 16,
	                                         .depth = DEPTH,
	                                         .ring_instruments = NINST,
	                                         .pub_instruments = NINST,
	                                         .max_orders = 4096};
	static int n;
	char err[256];
	memset(x, 0, sizeof(*x));
	sink_fx_open(&sp, x->name, sizeof(x->name), &x->cfg, &x->pub, &x->sink);
	snprintf(x->ref_name, sizeof(x->ref_name), "t%d_lvref_%d", (int)getpid(), n++);
	uf_test_rings_remember(x->ref_name);
	struct uf_ring_options opt;
	uf_ring_options_init(&opt);
	opt.capacity = 1024;
	opt.depth = DEPTH;
	opt.max_instruments = NINST;
	opt.numa_node = UF_RING_NUMA_AUTO;
	if (uf_ring_create(x->ref_name, &opt, &x->ref, err, sizeof(err)) < 0)
		fail_msg("uf_ring_create: %s", err);
	x->seq = 1;
}

static void fx_teardown(struct fx *x)
{
	uf_sink_close(&x->sink);
	uf_ring_close(x->ref);
	uf_publish_destroy(x->pub);
	uf_ring_unlink(x->name, NULL);
	uf_ring_unlink(x->ref_name, NULL);
}

/* The full copy of every book into the reference, then the comparison of what a reader of
 * the books sees: counts, truncation, and all 2 x DEPTH level slots (zero past the count). */
static void check(struct fx *x, const char *what)
{
	struct uf_level b[DEPTH + 1], a[DEPTH + 1];
	for (uint32_t id = 0; id < NINST; id++) {
		int nb = uf_publish_top(x->pub, id, UF_SIDE_BID, b, DEPTH + 1);
		int na = uf_publish_top(x->pub, id, UF_SIDE_ASK, a, DEPTH + 1);
		assert_int_equal(
		    uf_ring_image_set_book(x->ref, id, b, (uint32_t)nb, a, (uint32_t)na, 1, 0), 0);
		struct uf_image_entry *e = uf_image_entry_at(x->sink.ring->image, id);
		struct uf_image_entry *f = uf_image_entry_at(x->ref->image, id);
		const uint32_t trunc = UF_IMAGE_F_TRUNC_BID | UF_IMAGE_F_TRUNC_ASK;
		if (e->lock & 1)
			fail_msg("%s (step %u): book %u left locked", what, x->steps, id);
		if (e->nbid != f->nbid || e->nask != f->nask ||
		    (e->flags & trunc) != (f->flags & trunc))
			fail_msg("%s (step %u): book %u counts %u/%u flags %x, full copy %u/%u %x",
			         what, x->steps, id, e->nbid, e->nask, e->flags & trunc, f->nbid,
			         f->nask, f->flags & trunc);
		const struct uf_level *el = uf_image_levels(e), *fl = uf_image_levels(f);
		for (uint32_t i = 0; i < 2 * DEPTH; i++)
			if (memcmp(&el[i], &fl[i], sizeof(el[i])) != 0)
				fail_msg(
				    "%s (step %u): book %u %s level %u is %lld x %llu (%u), full "
				    "copy %lld x %llu (%u)",
				    what, x->steps, id, i < DEPTH ? "bid" : "ask", i % DEPTH,
				    (long long)el[i].price, (unsigned long long)el[i].shares,
				    el[i].orders, (long long)fl[i].price,
				    (unsigned long long)fl[i].shares, fl[i].orders);
	}
	x->steps++;
}

/* Applies the messages as one publish step through the sink. */
static void step(struct fx *x, const struct uf_itch_msg *m, size_t nm)
{
	size_t k;
	assert_int_equal(sink_fx_step(x->pub, &x->sink, &x->seq, m, nm, RX_NS, x->recs,
	                              UF_ARRAY_SIZE(x->recs), &k),
	                 0);
}

static void test_sink_copies_only_changed_levels_as_a_full_copy_would(void **state)
{
	(void)state;
	struct fx x;
	const struct uf_level *bid;
	fx_setup(&x);

	const struct uf_itch_msg m1[] = {
	    dir(3, "MSFT"),           add(3, 1, 'B', 100, 1000), add(3, 2, 'B', 200, 990),
	    add(3, 3, 'B', 300, 980), add(3, 4, 'S', 100, 1010), add(3, 5, 'S', 100, 1020),
	    dir(4, "AAPL"),           add(4, 50, 'S', 10, 500)};
	step(&x, m1, UF_ARRAY_SIZE(m1));
	check(&x, "first books");

	/* A level inserted at the top: every level moves down one. */
	const struct uf_itch_msg m2[] = {add(3, 6, 'B', 50, 1005)};
	step(&x, m2, 1);
	check(&x, "insert at top");
	bid = uf_image_levels(uf_image_entry_at(x.sink.ring->image, 3));
	assert_int_equal(bid[0].price, 1005);
	assert_int_equal(bid[3].price, 980);

	/* A level deleted in the middle: the ones below move up, the last slot clears. */
	const struct uf_itch_msg m3[] = {del(3, 2)};
	step(&x, m3, 1);
	check(&x, "delete in the middle");
	assert_int_equal(uf_image_entry_at(x.sink.ring->image, 3)->nbid, 3);
	assert_int_equal(bid[2].price, 980);
	assert_int_equal(bid[3].price, 0);

	/* The asks change, the bids are untouched (and other books are untouched). */
	const struct uf_itch_msg m4[] = {add(3, 7, 'S', 70, 1015), cancel(3, 4, 30)};
	step(&x, m4, UF_ARRAY_SIZE(m4));
	check(&x, "bids untouched");

	/* Deeper than the image: four levels below the last one, cut at DEPTH and flagged. */
	const struct uf_itch_msg m5[] = {add(3, 8, 'B', 10, 970), add(3, 9, 'B', 10, 960),
	                                 add(3, 10, 'B', 10, 950), add(3, 11, 'B', 10, 940)};
	step(&x, m5, UF_ARRAY_SIZE(m5));
	check(&x, "truncated at depth");
	assert_true(uf_image_entry_at(x.sink.ring->image, 3)->flags & UF_IMAGE_F_TRUNC_BID);

	/* A change below the image only (level 7): nothing a reader sees moves. */
	const struct uf_itch_msg m6[] = {cancel(3, 11, 5)};
	step(&x, m6, 1);
	check(&x, "below the image");

	/* The top goes while truncated: level 6 comes up into the image. */
	const struct uf_itch_msg m7[] = {del(3, 6)};
	step(&x, m7, 1);
	check(&x, "top deleted while truncated");
	assert_int_equal(bid[DEPTH - 1].price, 950);

	/* Back to exactly DEPTH levels: the flag clears, the levels stay. */
	const struct uf_itch_msg m8[] = {del(3, 11)};
	step(&x, m8, 1);
	check(&x, "back to depth");
	assert_false(uf_image_entry_at(x.sink.ring->image, 3)->flags & UF_IMAGE_F_TRUNC_BID);

	/* Several changes of one side in one step, the best one not first; a replace moves an
	 * order from one level to another; both sides and two books. */
	const struct uf_itch_msg m9[] = {
	    exec_(3, 9, 4),          add(3, 12, 'B', 5, 975), replace(3, 3, 13, 60, 1001),
	    add(4, 51, 'B', 5, 490), exec_(3, 4, 70),         add(3, 14, 'S', 1, 1012)};
	step(&x, m9, UF_ARRAY_SIZE(m9));
	check(&x, "several changes in a step");

	/* A gap: every book in doubt, then changes to a doubted book. */
	int g = uf_publish_gap(x.pub, x.seq, 3, x.recs, UF_ARRAY_SIZE(x.recs));
	assert_true(g > 0);
	x.seq += 3;
	assert_int_equal(uf_sink_gap(&x.sink, x.recs, (size_t)g), 0);
	check(&x, "gap");
	const struct uf_itch_msg m10[] = {add(3, 15, 'B', 9, 1003), del(3, 8)};
	step(&x, m10, UF_ARRAY_SIZE(m10));
	check(&x, "changes while stale");
	assert_true(uf_image_entry_at(x.sink.ring->image, 3)->flags & UF_RECF_STALE);

	/* A new session: the image empties with the books, and fills again from the top. */
	int k = uf_publish_new_session(x.pub, "SESSION002", x.recs, UF_ARRAY_SIZE(x.recs));
	assert_true(k > 0);
	x.seq = 1;
	assert_int_equal(uf_sink_new_session(&x.sink, x.recs, (size_t)k), 0);
	check(&x, "reset");
	assert_int_equal(uf_image_entry_at(x.sink.ring->image, 3)->nbid, 0);
	const struct uf_itch_msg m11[] = {dir(3, "MSFT"), add(3, 1, 'B', 1, 800),
	                                  add(3, 2, 'B', 1, 810), add(3, 3, 'S', 1, 820)};
	step(&x, m11, UF_ARRAY_SIZE(m11));
	check(&x, "after reset");
	assert_int_equal(bid[0].price, 810);
	fx_teardown(&x);
}

/* A seeded random day over three books: adds around a moving mid, deletes, partial cancels
 * and executions, replaces; one to four messages a step; half of the time the image deferred
 * over several steps (the feed's receive batch) and compared at the flush. */
static uint64_t rng_next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

struct live {
	uint64_t ref;
	uint16_t loc;
	uint32_t shares;
	uint8_t side;
};

static void test_sink_levels_random_day_matches_full_copy(void **state)
{
	(void)state;
	struct fx x;
	struct live lv[512];
	size_t nlive = 0;
	uint64_t s = 0x9e3779b97f4a7c15ull, next_ref = 1;
	fx_setup(&x);
	const struct uf_itch_msg d[] = {dir(1, "A"), dir(2, "B"), dir(5, "C")};
	const uint16_t locs[] = {1, 2, 5};
	step(&x, d, 3);
	check(&x, "directory");
	for (int st = 0; st < 4000; st++) {
		int defer = (st / 250) % 2;
		if (st % 250 == 0)
			uf_sink_defer_image(&x.sink, defer);
		struct uf_itch_msg m[4];
		size_t nm = 1 + rng_next(&s) % 4;
		for (size_t i = 0; i < nm; i++) {
			uint64_t r = rng_next(&s);
			unsigned op = (unsigned)(r % 10); /* 0-2 add, 3-5 delete, 6 cancel, 7
			                                   * execute, 8-9 replace */
			if (nlive < 8 || op < 3 || nlive >= UF_ARRAY_SIZE(lv) - 8) {
				if (nlive >= UF_ARRAY_SIZE(lv) - 8) {
					/* full: delete instead */
					size_t j = (r >> 8) % nlive;
					m[i] = del(lv[j].loc, lv[j].ref);
					lv[j] = lv[--nlive];
					continue;
				}
				uint16_t loc = locs[(r >> 8) % 3];
				uint8_t side = (r >> 12) & 1 ? 'B' : 'S';
				/* bids 900..1000, asks 1010..1110 in steps of 10: twelve levels a
				 * side, deeper than the image */
				uint32_t off = (uint32_t)((r >> 16) % 12) * 10;
				uint32_t price = side == 'B' ? 1000 - off : 1010 + off;
				uint32_t sh = 1 + (uint32_t)((r >> 24) % 500);
				m[i] = add(loc, next_ref, side, sh, price);
				lv[nlive++] = (struct live){next_ref++, loc, sh, side};
			} else {
				size_t j = (r >> 8) % nlive;
				if (op < 6) {
					m[i] = del(lv[j].loc, lv[j].ref);
					lv[j] = lv[--nlive];
				} else if (op < 7 && lv[j].shares > 1) {
					uint32_t c = 1 + (uint32_t)((r >> 20) % (lv[j].shares - 1));
					m[i] = cancel(lv[j].loc, lv[j].ref, c);
					lv[j].shares -= c;
				} else if (op < 8 && lv[j].shares > 1) {
					uint32_t c = 1 + (uint32_t)((r >> 20) % (lv[j].shares - 1));
					m[i] = exec_(lv[j].loc, lv[j].ref, c);
					lv[j].shares -= c;
				} else {
					/* replace: the order moves to another price of its side */
					uint32_t off = (uint32_t)((r >> 20) % 12) * 10;
					uint32_t sh = 1 + (uint32_t)((r >> 44) % 50);
					m[i] = replace(lv[j].loc, lv[j].ref, next_ref, sh,
					               lv[j].side == 'B' ? 1000 - off : 1010 + off);
					lv[j].ref = next_ref++;
					lv[j].shares = sh;
				}
			}
		}
		step(&x, m, nm);
		if (!defer)
			check(&x, "random step");
		else if (rng_next(&s) % 4 == 0) {
			assert_int_equal(uf_sink_image_flush(&x.sink), 0);
			check(&x, "random steps, deferred image flushed");
		}
	}
	uf_sink_defer_image(&x.sink, 0);
	check(&x, "random day end");
	assert_true(x.steps > 2500);
	fx_teardown(&x);
}

/* What a full copy of every dirty book (uf_sink_copy_book at the flush) does to the entries'
 * stamps and receive times: a book a LEVEL record named since the last flush is stamped with
 * the ring's tail and carries the receive time of its latest step; every other entry keeps
 * both. Every message of the deep day below names its book in a LEVEL record. */
struct stamps {
	uint64_t stamp[NINST];
	uint64_t rx[NINST];
	uint64_t want_rx[NINST]; /* latest step's receive time of a named book, else 0 */
};

static void stamps_take(struct fx *x, struct stamps *t)
{
	for (uint32_t id = 0; id < NINST; id++) {
		struct uf_image_entry *e = uf_image_entry_at(x->sink.ring->image, id);
		t->stamp[id] = e->stamp;
		t->rx[id] = e->update_rx_ts;
		t->want_rx[id] = 0;
	}
}

static void stamps_note(struct stamps *t, const struct uf_record *recs, size_t n, uint64_t rx)
{
	for (size_t i = 0; i < n; i++)
		if (recs[i].kind == UF_REC_LEVEL && recs[i].instrument < NINST)
			t->want_rx[recs[i].instrument] = rx;
}

static void stamps_check(struct fx *x, const struct stamps *t, const char *what)
{
	uint64_t tail = uf_ring_tail(x->sink.ring);
	for (uint32_t id = 0; id < NINST; id++) {
		struct uf_image_entry *e = uf_image_entry_at(x->sink.ring->image, id);
		uint64_t ws = t->want_rx[id] ? tail : t->stamp[id];
		uint64_t wr = t->want_rx[id] ? t->want_rx[id] : t->rx[id];
		if (e->stamp != ws || e->update_rx_ts != wr)
			fail_msg("%s (step %u): book %u stamp %llu rx %llu, full copy %llu rx %llu",
			         what, x->steps, id, (unsigned long long)e->stamp,
			         (unsigned long long)e->update_rx_ts, (unsigned long long)ws,
			         (unsigned long long)wr);
	}
}

/* Issue 26 (h-image): the cuts of the in-place side copy against full copies, on books much
 * deeper than the image (40 prices a side, image depth 5: most changes land below it and copy
 * nothing), sides crossing the depth boundary and emptied (the day alternates filling and
 * draining phases), levels added and removed within one step (a fleeting order at a price
 * the side did not have) and within one deferred flush. The image is compared after every
 * flush, entry by entry: levels, counts, truncation flags, stamps and receive times. */
static void test_sink_levels_deep_books_match_full_copy(void **state)
{
	(void)state;
	struct fx x;
	struct live lv[512];
	size_t nlive = 0;
	uint64_t s = 0x2545f4914f6cdd1dull, next_ref = 1, rx = RX_NS;
	unsigned skips = 0, crossings = 0, empties = 0;
	struct stamps t;
	fx_setup(&x);
	const struct uf_itch_msg d[] = {dir(1, "A"), dir(2, "B"), dir(5, "C")};
	const uint16_t locs[] = {1, 2, 5};
	step(&x, d, 3);
	check(&x, "directory");
	uf_sink_defer_image(&x.sink, 1);
	stamps_take(&x, &t);
	unsigned since_flush = 0, flush_every = 1;
	for (int st = 0; st < 6000; st++) {
		/* 600-step phases: fill towards ~300 orders, then drain to none */
		int fill = (st / 600) % 2 == 0;
		struct uf_itch_msg m[8];
		size_t nm = 0, want = 1 + rng_next(&s) % 4;
		while (nm < want) {
			uint64_t r = rng_next(&s);
			unsigned op = (unsigned)(r % 10);
			int adding = nlive == 0 || (fill ? op < 7 : op < 2);
			if (nlive >= UF_ARRAY_SIZE(lv) - 8)
				adding = 0;
			if (adding) {
				uint16_t loc = locs[(r >> 8) % 3];
				uint8_t side = (r >> 12) & 1 ? 'B' : 'S';
				uint32_t off = (uint32_t)((r >> 16) % 40) * 10;
				uint32_t price = side == 'B' ? 1000 - off : 1010 + off;
				uint32_t sh = 1 + (uint32_t)((r >> 24) % 500);
				m[nm++] = add(loc, next_ref, side, sh, price);
				lv[nlive++] = (struct live){next_ref++, loc, sh, side};
				continue;
			}
			size_t j = (r >> 8) % nlive;
			if (op < 7 || lv[j].shares < 2) {
				m[nm++] = del(lv[j].loc, lv[j].ref);
				lv[j] = lv[--nlive];
			} else if (op < 8) {
				uint32_t c = 1 + (uint32_t)((r >> 20) % (lv[j].shares - 1));
				m[nm++] = exec_(lv[j].loc, lv[j].ref, c);
				lv[j].shares -= c;
			} else {
				uint32_t off = (uint32_t)((r >> 20) % 40) * 10;
				uint32_t sh = 1 + (uint32_t)((r >> 44) % 50);
				m[nm++] = replace(lv[j].loc, lv[j].ref, next_ref, sh,
				                  lv[j].side == 'B' ? 1000 - off : 1010 + off);
				lv[j].ref = next_ref++;
				lv[j].shares = sh;
			}
		}
		if (rng_next(&s) % 6 == 0) {
			/* a fleeting order: added and gone in the same step, at a price between
			 * the slots (no other order rests there) */
			uint64_t r = rng_next(&s);
			uint16_t loc = locs[r % 3];
			uint8_t side = (r >> 4) & 1 ? 'B' : 'S';
			uint32_t off = (uint32_t)((r >> 8) % 40) * 10 + 5;
			m[nm++] =
			    add(loc, next_ref, side, 7, side == 'B' ? 1000 - off : 1010 + off);
			m[nm++] = del(loc, next_ref++);
		}
		rx += 1 + rng_next(&s) % 1000;
		size_t k;
		assert_int_equal(sink_fx_step(x.pub, &x.sink, &x.seq, m, nm, rx, x.recs,
		                              UF_ARRAY_SIZE(x.recs), &k),
		                 0);
		stamps_note(&t, x.recs, k, rx);
		if (++since_flush < flush_every)
			continue;
		/* what the flush will meet: a deep side changed only below the image, a side
		 * crossing the depth boundary, an emptied side (so the day is known to cover
		 * them) */
		for (uint32_t i = 0; i < 3; i++) {
			struct uf_image_entry *e = uf_image_entry_at(x.sink.ring->image, locs[i]);
			for (int sd = 0; sd < 2; sd++) {
				uint32_t bit = sd ? UF_IMAGE_F_TRUNC_ASK : UF_IMAGE_F_TRUNC_BID;
				size_t nb = uf_publish_depth(x.pub, locs[i],
				                             sd ? UF_SIDE_ASK : UF_SIDE_BID);
				uint32_t ni = sd ? e->nask : e->nbid;
				if (!!(e->flags & bit) != (nb > DEPTH))
					crossings++;
				if (ni && !nb)
					empties++;
			}
		}
		struct uf_image_entry before[NINST];
		struct uf_level blv[NINST][2 * DEPTH];
		for (uint32_t id = 0; id < NINST; id++) {
			struct uf_image_entry *e = uf_image_entry_at(x.sink.ring->image, id);
			before[id] = *e;
			memcpy(blv[id], uf_image_levels(e), sizeof(blv[id]));
		}
		assert_int_equal(uf_sink_image_flush(&x.sink), 0);
		for (uint32_t id = 0; id < NINST; id++) {
			struct uf_image_entry *e = uf_image_entry_at(x.sink.ring->image, id);
			if (t.want_rx[id] && (before[id].flags & UF_IMAGE_F_TRUNC_BID) &&
			    (e->flags & UF_IMAGE_F_TRUNC_BID) &&
			    memcmp(blv[id], uf_image_levels(e), sizeof(blv[id])) == 0)
				skips++;
		}
		check(&x, "deep books, flushed");
		stamps_check(&x, &t, "deep books, flushed");
		stamps_take(&x, &t);
		since_flush = 0;
		flush_every = 1 + (unsigned)(rng_next(&s) % 6);
	}
	uf_sink_defer_image(&x.sink, 0);
	check(&x, "deep day end");
	print_message("deep day: %u flushes compared, %u with a cut bid side unchanged, %u sides "
	              "crossing the depth, %u emptied\n",
	              x.steps, skips, crossings, empties);
	/* the day reached every case it is there for */
	assert_true(x.steps > 1000);
	assert_true(skips > 100);
	assert_true(crossings > 20);
	assert_true(empties > 3);
	fx_teardown(&x);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_sink_copies_only_changed_levels_as_a_full_copy_would),
	    cmocka_unit_test(test_sink_levels_random_day_matches_full_copy),
	    cmocka_unit_test(test_sink_levels_deep_books_match_full_copy),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
