/* The arbiter's rule for a stream that starts over inside its session (decode/uf_frame.h
 * `restart`, feed/arbiter.h "What the arbiter trusts"), on IEX-TP segments through the
 * "iex-deep" entry's framing, packet by packet (no network, no clock waits):
 *   - a segment at sequence 1, stream offset 0, sent after the current stream's start is a
 *     new stream once every live line shows one: new_session, then delivery from 1;
 *   - what the old stream still missed is given up as a gap first;
 *   - a copy of the current stream's own start (sent no later) is a duplicate;
 *   - one line alone is not believed while the other is live, and is once it is silent. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "feed/arbiter.h"
#include "publish/uf_proto.h"
#include "test/common/uf_test_iex.h"

#define RS_SEC 1000000000ull

struct rs {
	struct uf_arb a;
	struct uf_feed_stats st;
	struct uf_feed_config cfg;
	uint64_t delivered[256]; /* sequences delivered, in order */
	size_t n;
	uint64_t gap_first, gap_count; /* the last gap */
	int gaps;
	int sessions;        /* new_session calls */
	size_t n_at_session; /* deliveries before the last new_session */
};

static void rs_deliver(void *ctx, const struct uf_frame *pkt, uint32_t skip, uint64_t rx,
                       unsigned src)
{
	(void)rx;
	(void)src;
	struct rs *r = ctx;
	for (uint32_t i = skip; i < pkt->count && r->n < 256; i++)
		r->delivered[r->n++] = pkt->seq + i;
}

static void rs_gap(void *ctx, uint64_t first, uint64_t count)
{
	struct rs *r = ctx;
	r->gap_first = first;
	r->gap_count = count;
	r->gaps++;
}

static void rs_session(void *ctx, const char s[UF_FRAME_SESSION_LEN])
{
	struct rs *r = ctx;
	assert_memory_equal(s, "42        ", UF_FRAME_SESSION_LEN); /* the same session */
	r->sessions++;
	r->n_at_session = r->n;
}

static struct rs *rs_new(int nlines)
{
	struct rs *r = calloc(1, sizeof(*r));
	assert_non_null(r);
	r->cfg.nlines = nlines;
	r->cfg.recovery.max_count = 100;
	r->cfg.recovery.timeout_ms = 1000;
	r->cfg.recovery.retries = 1;
	r->cfg.recovery.wait_ms = 1000;
	r->cfg.recovery.wait_packets = 1000;
	r->cfg.recovery.queue_packets = 64;
	r->cfg.recovery.max_requests_per_s = 1000;
	struct uf_arb_cb cb = {rs_deliver, rs_gap, rs_session, r};
	const struct uf_framing *fr = uf_proto_find("iex-deep")->framing;
	assert_non_null(fr->restart);
	assert_int_equal(uf_arb_init(&r->a, &r->cfg, fr, -1, 2048, &r->st, &cb), 0);
	return r;
}

static void rs_free(struct rs *r)
{
	uf_arb_fini(&r->a);
	free(r);
}

/* A DEEP segment of `count` system events from `seq` at stream offset `off`, sent at `sent`
 * (s after TI_TS), from line `src`, received at `rx` (s). */
static void rs_seg(struct rs *r, int64_t seq, unsigned count, int64_t off, int64_t sent,
                   unsigned src, uint64_t rx)
{
	struct ti_seg s;
	uint8_t m[16];
	ti_seg_begin(&s, UF_IEXTP_PROTO_DEEP, 42, off, seq, TI_TS + sent * (int64_t)RS_SEC);
	for (unsigned i = 0; i < count; i++)
		ti_seg_add(&s, m, ti_system(m, 'O', TI_TS));
	struct uf_frame f;
	assert_int_equal(r->a.framing->open(&f, s.b, ti_seg_len(&s)),
	                 count ? UF_FRAME_DATA : UF_FRAME_HEARTBEAT);
	uf_arb_packet(&r->a, &f, rx * RS_SEC, src);
}

static void test_restart_on_one_line_starts_a_new_stream(void **st)
{
	(void)st;
	struct rs *r = rs_new(1);
	rs_seg(r, 1, 0, 0, 0, 0, 1);  /* the stream's start, as heartbeat */
	rs_seg(r, 1, 5, 0, 1, 0, 1);  /* 1-5 */
	rs_seg(r, 6, 5, 50, 2, 0, 1); /* 6-10 */
	rs_seg(r, 1, 5, 0, 1, 0, 1);  /* the same start again (sent at 1): a duplicate */
	assert_int_equal(r->sessions, 0);
	assert_int_equal(r->n, 10);
	rs_seg(r, 1, 0, 0, 600, 0, 2); /* the publisher restarted: a newer start */
	assert_int_equal(r->sessions, 1);
	assert_int_equal(r->n_at_session, 10);
	rs_seg(r, 1, 3, 0, 601, 0, 2); /* the new stream's 1-3 */
	rs_seg(r, 4, 2, 30, 602, 0, 2);
	assert_int_equal(r->n, 15);
	for (size_t i = 10; i < 15; i++)
		assert_int_equal(r->delivered[i], i - 9);
	assert_int_equal(r->gaps, 0);
	assert_int_equal(r->st.sessions, 2);
	rs_free(r);
}

static void test_restart_gives_up_what_the_old_stream_missed(void **st)
{
	(void)st;
	struct rs *r = rs_new(1);
	rs_seg(r, 1, 5, 0, 1, 0, 1);
	rs_seg(r, 8, 2, 80, 3, 0, 1); /* 6-7 missing: a hole, 8-9 queued */
	assert_int_equal(r->n, 5);
	rs_seg(r, 1, 2, 0, 700, 0, 2);
	assert_int_equal(r->gaps, 1); /* given up, before the new stream */
	assert_int_equal(r->gap_first, 6);
	assert_int_equal(r->gap_count, 2); /* 6-7: what no line sent */
	assert_int_equal(r->sessions, 1);
	assert_int_equal(r->n, 9); /* the queued 8-9 of the old stream, then the new 1-2 */
	assert_int_equal(r->delivered[5], 8);
	assert_int_equal(r->delivered[6], 9);
	assert_int_equal(r->delivered[7], 1);
	assert_int_equal(r->delivered[8], 2);
	rs_free(r);
}

static void test_restart_needs_every_live_line(void **st)
{
	(void)st;
	struct rs *r = rs_new(2);
	rs_seg(r, 1, 5, 0, 1, 0, 1);
	rs_seg(r, 1, 5, 0, 1, 1, 1); /* B's copy of the start: a duplicate */
	assert_int_equal(r->sessions, 0);
	assert_int_equal(r->st.lines[1].wrong_session, 0);
	rs_seg(r, 1, 2, 0, 600, 0, 2); /* A alone while B is live: held back */
	assert_int_equal(r->sessions, 0);
	assert_int_equal(r->st.lines[0].wrong_session, 1);
	assert_int_equal(r->n, 5);
	rs_seg(r, 1, 2, 0, 600, 1, 2); /* B shows it too: a new stream */
	assert_int_equal(r->sessions, 1);
	assert_int_equal(r->n, 7);
	rs_seg(r, 1, 2, 0, 600, 0, 2); /* A's next copy of it: a duplicate now */
	assert_int_equal(r->sessions, 1);
	assert_int_equal(r->n, 7);
	/* B falls silent (line_silent: 5 s): A alone is believed for the next restart */
	rs_seg(r, 3, 1, 20, 601, 0, 10);
	rs_seg(r, 1, 1, 0, 900, 0, 20);
	assert_int_equal(r->sessions, 2);
	assert_int_equal(r->delivered[r->n - 1], 1);
	rs_free(r);
}

/* The other line lost every start it sent: the line that has one corroborates it by going on
 * with it (jump_confirm data packets in a row, held back meanwhile); the held messages are a
 * hole the other line's copies fill. */
static void test_restart_confirmed_by_its_line_going_on(void **st)
{
	(void)st;
	struct rs *r = rs_new(2);
	rs_seg(r, 1, 5, 0, 1, 0, 1);
	rs_seg(r, 1, 5, 0, 1, 1, 1);
	rs_seg(r, 1, 2, 0, 600, 0, 2); /* A: the new stream's 1-2, B lost its copy */
	rs_seg(r, 3, 2, 20, 601, 0, 2);
	rs_seg(r, 5, 2, 40, 602, 0, 2);
	assert_int_equal(r->sessions, 0); /* 3 data packets in a row: not yet */
	assert_int_equal(r->n, 5);
	rs_seg(r, 7, 2, 60, 603, 0, 2); /* the 4th (jump_confirm): a new stream */
	assert_int_equal(r->sessions, 1);
	assert_int_equal(r->st.lines[0].wrong_session, 3);
	assert_int_equal(r->n, 5);      /* 7-8 wait for 1-6 */
	rs_seg(r, 3, 4, 20, 601, 1, 2); /* B's copies fill the hole */
	assert_int_equal(r->n, 5);
	rs_seg(r, 1, 2, 0, 600, 1, 2); /* B's start: the current stream's own now */
	assert_int_equal(r->sessions, 1);
	assert_int_equal(r->n, 13);
	for (size_t i = 5; i < 13; i++)
		assert_int_equal(r->delivered[i], i - 4);
	assert_int_equal(r->gaps, 0);
	rs_free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_restart_on_one_line_starts_a_new_stream),
	    cmocka_unit_test(test_restart_gives_up_what_the_old_stream_missed),
	    cmocka_unit_test(test_restart_needs_every_live_line),
	    cmocka_unit_test(test_restart_confirmed_by_its_line_going_on),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
