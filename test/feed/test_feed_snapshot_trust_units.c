/* The End of Snapshot checks on their own, no network (issue 23 item 1, docs/snapshot.md
 * "Trust"), with a toy protocol whose messages say which order they add, touch or end, with
 * how many shares, in which book, and a table of what "the snapshot" holds:
 *   - uf_snap_bracket places each order's live messages by the shares the snapshot holds and
 *     brackets N: a partial change of an order added before the run, between the claim and
 *     the truth, leaves its book in doubt; an order added in the run is placed by its shares
 *     (no prefix leaves them: refused); one the snapshot lacks that the run saw added and
 *     deleted is settled by the rest; a claim outside the bracket is refused; a hole before N
 *     forgets what came before it, N inside a hole places nothing;
 *   - uf_snap_buf_confirmed: what one line alone showed beyond a hole, or a run of one
 *     packet, vouches for nothing; both lines, or a packet continued, do. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/uf_endian.h"
#include "decode/uf_decode.h"
#include "feed/snapshot.h"

/* A toy message: op (enum uf_proto_ref_op), ref (BE64), shares (BE32), book (BE32). */
#define TU_MSG_LEN 17
#define TU_REFS    64

static uint32_t g_held[TU_REFS]; /* shares the snapshot holds of each ref, 0: none */

static int tu_order_refs(const uint8_t *msg, size_t len, struct uf_proto_ref out[2],
                         uint32_t *instrument)
{
	if (len != TU_MSG_LEN || msg[0] == 0)
		return 0;
	out[0].op = msg[0];
	out[0].ref = uf_be64(msg + 1);
	out[0].shares = uf_be32(msg + 9);
	*instrument = uf_be32(msg + 13);
	return 1;
}

static uint32_t tu_order_held(const struct uf_pub_step *s, uint64_t ref)
{
	(void)s;
	return ref < TU_REFS ? g_held[ref] : 0;
}

static const struct uf_proto tu_proto = {
    .name = "toy",
    .framing = &uf_mold_framing,
    .order_refs = tu_order_refs,
    .order_held = tu_order_held,
};

struct tu_msg {
	uint8_t op;
	uint64_t ref;
	uint32_t shares, book;
};

#define ADD(r, sh, b)                                                                              \
	{                                                                                          \
		UF_PROTO_REF_ADD, r, sh, b                                                         \
	}
#define TOUCH(r, sh, b)                                                                            \
	{                                                                                          \
		UF_PROTO_REF_TOUCH, r, sh, b                                                       \
	}
#define DEL(r, b)                                                                                  \
	{                                                                                          \
		UF_PROTO_REF_REMOVE, r, 0, b                                                       \
	}
#define NONE                                                                                       \
	{                                                                                          \
		0, 0, 0, 0                                                                         \
	}

/* Keeps messages m[0..n) as one packet from `seq` on line `src`. */
static void tu_pkt(struct uf_snap_buf *b, uint64_t seq, const struct tu_msg *m, unsigned n,
                   unsigned src)
{
	uint8_t buf[2048];
	struct uf_mold_builder mb;
	struct uf_frame f;
	char sess[UF_MOLD_SESSION_LEN];
	memset(sess, ' ', sizeof(sess));
	memcpy(sess, "TU", 2);
	uf_mold_builder_init(&mb, buf, sizeof(buf), sess, seq);
	for (unsigned i = 0; i < n; i++) {
		uint8_t x[TU_MSG_LEN];
		x[0] = m[i].op;
		uf_put_be64(x + 1, m[i].ref);
		uf_put_be32(x + 9, m[i].shares);
		uf_put_be32(x + 13, m[i].book);
		assert_int_equal(uf_mold_builder_add(&mb, x, sizeof(x)), 0);
	}
	assert_int_equal(uf_mold_open(&f, buf, mb.len), UF_MOLD_DATA);
	assert_true(uf_snap_buf_add(b, &f, 1, src) >= 0);
}

struct tu {
	struct uf_snapshot s;
	char what[256];
};

static void tu_init(struct tu *t)
{
	memset(t, 0, sizeof(*t));
	memset(g_held, 0, sizeof(g_held));
	t->s.proto = &tu_proto;
	t->s.name = "tu";
	t->s.nlines = 2;
	assert_int_equal(uf_snap_buf_init(&t->s.buf, 64, 2048), 0);
}

static void tu_fini(struct tu *t)
{
	uf_snap_buf_fini(&t->s.buf);
	free(t->s.unc);
}

/* uf_snap_bracket for claim n: its return; prints what it refused. */
static int tu_bracket(struct tu *t, uint64_t n)
{
	t->what[0] = 0;
	int rc = uf_snap_bracket(&t->s, n, t->what, sizeof(t->what));
	if (rc < 0)
		fprintf(stderr, "claim %llu refused: %s\n", (unsigned long long)n, t->what);
	return rc;
}

/* Message 11 partly executes an order added before the run (book 7): nothing places it, so
 * N may be 11 or 12 and book 7 is in doubt whichever the claim says; 10 and 13 are
 * refused (the add at 10 is held, the one at 12 is not). */
static void test_partial_change_of_an_older_order_is_in_doubt(void **state)
{
	(void)state;
	struct tu t;
	tu_init(&t);
	g_held[1] = 100;
	g_held[9] = 50;
	const struct tu_msg m[] = {ADD(1, 100, 1), TOUCH(9, 10, 7), ADD(2, 100, 2), NONE};
	tu_pkt(&t.s.buf, 10, m, 4, 0);
	for (uint64_t n = 11; n <= 12; n++) {
		assert_int_equal(tu_bracket(&t, n), 0);
		assert_int_equal(t.s.unc_lo, 11);
		assert_int_equal(t.s.unc_hi, 12);
		assert_int_equal(t.s.nunc, 1);
		assert_int_equal(t.s.unc[0], 7);
	}
	assert_int_equal(tu_bracket(&t, 10), -1);
	assert_int_equal(tu_bracket(&t, 13), -1);
	tu_fini(&t);
}

/* An order added in the run: its shares after each change fall strictly, so the snapshot's
 * 70 (100 - 30) places the add and the first execution before N and the second from N on:
 * exact, nothing in doubt. Shares no prefix leaves (55) are refused whatever the claim. */
static void test_shares_place_an_order_added_in_the_run(void **state)
{
	(void)state;
	struct tu t;
	tu_init(&t);
	g_held[1] = 70;
	const struct tu_msg m[] = {ADD(1, 100, 1), TOUCH(1, 30, 1), TOUCH(1, 20, 1), ADD(2, 10, 2)};
	tu_pkt(&t.s.buf, 10, m, 4, 0);
	assert_int_equal(tu_bracket(&t, 12), 0);
	assert_int_equal(t.s.unc_lo, 12);
	assert_int_equal(t.s.unc_hi, 12);
	assert_int_equal(t.s.nunc, 0);
	assert_int_equal(tu_bracket(&t, 11), -1);
	assert_int_equal(tu_bracket(&t, 13), -1);
	g_held[1] = 55;
	assert_int_equal(tu_bracket(&t, 12), -1);
	assert_non_null(strstr(t.what, "holds 55 shares of order 1"));
	tu_fini(&t);
}

/* An order added before the run that the snapshot lacks ended before N: all the run shows
 * of it is before N. One it holds (15 shares): a change is before N when the changes after
 * it take more than 15 (10 + 10), the last one is in doubt. */
static void test_older_orders_held_or_not(void **state)
{
	(void)state;
	struct tu t;
	tu_init(&t);
	const struct tu_msg m[] = {TOUCH(9, 5, 3), ADD(2, 10, 2)};
	tu_pkt(&t.s.buf, 10, m, 2, 0);
	assert_int_equal(tu_bracket(&t, 11), 0);
	assert_int_equal(t.s.nunc, 0);
	assert_int_equal(tu_bracket(&t, 10), -1);
	tu_fini(&t);

	tu_init(&t);
	g_held[1] = 10;
	g_held[9] = 15;
	const struct tu_msg m2[] = {ADD(1, 10, 1), TOUCH(9, 10, 4), TOUCH(9, 10, 5), ADD(2, 10, 2)};
	tu_pkt(&t.s.buf, 9, m2, 4, 0);
	assert_int_equal(tu_bracket(&t, 11), 0);
	assert_int_equal(t.s.unc_lo, 11);
	assert_int_equal(t.s.unc_hi, 12);
	assert_int_equal(t.s.nunc, 1);
	assert_int_equal(t.s.unc[0], 5);
	tu_fini(&t);
}

/* Order 3, added at 11 and deleted at 13, is not in the snapshot: N <= 11 or N > 13. The
 * add at 12 the snapshot lacks says N <= 12, so N <= 11; the held add at 10 says N > 10:
 * exactly 11, book 3 not in doubt. */
static void test_an_order_added_and_deleted_is_settled_by_the_others(void **state)
{
	(void)state;
	struct tu t;
	tu_init(&t);
	g_held[1] = 10;
	const struct tu_msg m[] = {ADD(1, 10, 1), ADD(3, 10, 3), ADD(4, 10, 4), DEL(3, 3)};
	tu_pkt(&t.s.buf, 10, m, 4, 0);
	assert_int_equal(tu_bracket(&t, 11), 0);
	assert_int_equal(t.s.unc_lo, 11);
	assert_int_equal(t.s.unc_hi, 11);
	assert_int_equal(t.s.nunc, 0);
	assert_int_equal(tu_bracket(&t, 12), -1);
	tu_fini(&t);
}

/* A hole before N: what came before it is forgotten (the held add at 10 would refuse 20);
 * N inside a hole: nothing is placed, nothing refused. */
static void test_holes(void **state)
{
	(void)state;
	struct tu t;
	tu_init(&t);
	g_held[9] = 50;
	const struct tu_msg a[] = {ADD(1, 10, 1), NONE};
	const struct tu_msg b[] = {TOUCH(9, 5, 7), ADD(2, 10, 2)};
	tu_pkt(&t.s.buf, 10, a, 2, 0);
	tu_pkt(&t.s.buf, 20, b, 2, 0);
	assert_int_equal(tu_bracket(&t, 20), 0); /* order 1 ends in the hole, as far as we know */
	assert_int_equal(t.s.unc_lo, 20);
	assert_int_equal(t.s.unc_hi, 21);
	assert_int_equal(t.s.nunc, 1);
	assert_int_equal(t.s.unc[0], 7);
	assert_int_equal(tu_bracket(&t, 15), 0);
	assert_int_equal(t.s.nunc, 0);
	tu_fini(&t);
}

/* What the buffer holds as confirmed. */
static void test_confirmed_needs_both_lines_or_continuation(void **state)
{
	(void)state;
	struct tu t;
	tu_init(&t);
	struct uf_snap_buf *b = &t.s.buf;
	const struct tu_msg m[10] = {NONE};
	tu_pkt(b, 5000, m, 1, 0); /* a lone forged packet first, on A */
	assert_int_equal(uf_snap_buf_confirmed(b, 2), 0);
	assert_int_equal(uf_snap_buf_confirmed(b, 1), 0);
	tu_pkt(b, 100, m, 10, 0);
	tu_pkt(b, 110, m, 10, 0);
	/* A alone: 100..119 continues up to 110; 5000 lies beyond a hole */
	assert_int_equal(uf_snap_buf_confirmed(b, 2), 110);
	assert_int_equal(uf_snap_buf_confirmed(b, 1), 110);
	tu_pkt(b, 100, m, 10, 1); /* B: copies (not kept), but shown */
	tu_pkt(b, 110, m, 10, 1);
	assert_int_equal(uf_snap_buf_confirmed(b, 2), 120);
	assert_int_equal(uf_snap_buf_confirmed(b, 1), 110);
	tu_pkt(b, 120, m, 10, 0); /* A continues: 110..119 confirmed on one line too */
	assert_int_equal(uf_snap_buf_confirmed(b, 1), 120);
	tu_fini(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_partial_change_of_an_older_order_is_in_doubt),
	    cmocka_unit_test(test_shares_place_an_order_added_in_the_run),
	    cmocka_unit_test(test_older_orders_held_or_not),
	    cmocka_unit_test(test_an_order_added_and_deleted_is_settled_by_the_others),
	    cmocka_unit_test(test_holes),
	    cmocka_unit_test(test_confirmed_needs_both_lines_or_continuation),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
