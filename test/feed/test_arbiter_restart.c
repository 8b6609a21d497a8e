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

#include "common/uf_time.h"
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
	rs_seg(r, 1, 2, 0, 600, 0, 2); /* A alone while B is live: held */
	assert_int_equal(r->sessions, 0);
	assert_int_equal(r->st.lines[0].wrong_session, 0);
	assert_int_equal(r->n, 5);
	rs_seg(r, 1, 2, 0, 600, 1, 2); /* B shows it too: a new stream, A's held copy first */
	assert_int_equal(r->sessions, 1);
	assert_int_equal(r->n, 7);
	assert_int_equal(r->st.lines[0].wins, 2); /* 1 (old) and the held new 1-2 */
	rs_seg(r, 1, 2, 0, 600, 0, 2);            /* A's next copy of it: a duplicate now */
	assert_int_equal(r->sessions, 1);
	assert_int_equal(r->n, 7);
	/* B falls silent (line_silent: 5 s): A alone is believed for the next restart */
	rs_seg(r, 3, 1, 20, 601, 0, 10);
	rs_seg(r, 1, 1, 0, 900, 0, 20);
	assert_int_equal(r->sessions, 2);
	assert_int_equal(r->delivered[r->n - 1], 1);
	rs_free(r);
}

/* The other line lost every start it sent: the line that has one goes on with it, held, and
 * even after jump_confirm data packets waits for the other line, live (it may still carry
 * the old stream's tail); that line shows the new stream by its next packet, sent after the
 * start. Then the stream starts, the held packets first, and the other line's copies are
 * duplicates. */
static void test_restart_waits_for_the_line_that_lost_every_start(void **st)
{
	(void)st;
	struct rs *r = rs_new(2);
	rs_seg(r, 1, 5, 0, 1, 0, 1);
	rs_seg(r, 1, 5, 0, 1, 1, 1);
	rs_seg(r, 1, 2, 0, 600, 0, 2); /* A: the new stream's 1-2, B lost its copy */
	rs_seg(r, 3, 2, 20, 601, 0, 2);
	rs_seg(r, 5, 2, 40, 602, 0, 2);
	rs_seg(r, 7, 2, 60, 603, 0, 2);   /* the 4th (jump_confirm) */
	assert_int_equal(r->sessions, 0); /* B is live: waited for */
	assert_int_equal(r->n, 5);
	rs_seg(r, 3, 4, 20, 601, 1, 2); /* B's next, sent after A's start: a new stream */
	assert_int_equal(r->sessions, 1);
	assert_int_equal(r->st.lines[0].wrong_session, 0);
	assert_int_equal(r->n, 13);    /* A's held 1-8; B's 3-6 duplicates */
	rs_seg(r, 1, 2, 0, 600, 1, 2); /* B's start: the current stream's own now */
	assert_int_equal(r->sessions, 1);
	assert_int_equal(r->n, 13);
	assert_int_equal(r->st.lines[1].wrong_session, 0);
	for (size_t i = 5; i < 13; i++)
		assert_int_equal(r->delivered[i], i - 4);
	assert_int_equal(r->gaps, 0);
	rs_free(r);
}

/* A stream starts with heartbeats at sequence 1 (the real DEEP capture sends 16-23 of them,
 * a second apart) before its first data segment, also at sequence 1. A line that lost that
 * data segment goes on past it; the other line's copy, handled after (its socket's batch
 * came second), was sent after the heartbeat that started the stream but before what the
 * first line already delivered: it is the current stream's, it fills the hole. Taken for a
 * newer stream, it was held back and its line's next jump_confirm packets started the
 * stream a second time: the hole given up, a RESET, and the stream delivered again. */
static void test_restart_late_copy_of_the_first_data_is_not_a_newer_stream(void **st)
{
	(void)st;
	struct rs *r = rs_new(2);
	rs_seg(r, 1, 5, 0, 1, 0, 1);
	rs_seg(r, 1, 5, 0, 1, 1, 1);
	rs_seg(r, 1, 0, 0, 600, 0, 2); /* the publisher restarted: heartbeats at 1 */
	rs_seg(r, 1, 0, 0, 600, 1, 2);
	assert_int_equal(r->sessions, 1);
	rs_seg(r, 1, 0, 0, 601, 0, 2);
	rs_seg(r, 1, 0, 0, 601, 1, 2);
	/* the first data (1-3, sent at 602): A lost it; A's 4-5 come first */
	rs_seg(r, 4, 2, 30, 603, 0, 2);
	assert_int_equal(r->n, 5);     /* 4-5 wait for 1-3 */
	rs_seg(r, 1, 3, 0, 602, 1, 2); /* B's copy: the hole's content */
	rs_seg(r, 4, 2, 30, 603, 1, 2);
	for (int64_t seq = 6; seq < 14; seq += 2) { /* both lines go on */
		rs_seg(r, seq, 2, seq * 10, 604, 0, 2);
		rs_seg(r, seq, 2, seq * 10, 604, 1, 2);
	}
	assert_int_equal(r->sessions, 1);
	assert_int_equal(r->gaps, 0);
	assert_int_equal(r->n, 5 + 13);
	for (size_t i = 5; i < r->n; i++)
		assert_int_equal(r->delivered[i], i - 4);
	assert_int_equal(r->st.sessions, 2);
	assert_int_equal(r->st.lines[1].wrong_session, 0);
	rs_free(r);
}

/* A line that lost every start it carried shows the newer stream by a packet sent after
 * the other line's start (send times): the stream starts then, the held packets first. */
static void test_restart_line_without_start_joins_by_send_time(void **st)
{
	(void)st;
	struct rs *r = rs_new(2);
	rs_seg(r, 1, 5, 0, 1, 0, 1);
	rs_seg(r, 1, 5, 0, 1, 1, 1);
	rs_seg(r, 1, 2, 0, 600, 0, 2); /* A: the new stream's 1-2, held */
	assert_int_equal(r->sessions, 0);
	rs_seg(r, 3, 2, 20, 601, 1, 2); /* B lost 1-2; its 3-4 were sent after A's start */
	assert_int_equal(r->sessions, 1);
	assert_int_equal(r->n, 9); /* 1-5, then the new 1-2 and 3-4 */
	for (size_t i = 5; i < 9; i++)
		assert_int_equal(r->delivered[i], i - 4);
	assert_int_equal(r->gaps, 0);
	assert_int_equal(r->st.lines[0].wrong_session + r->st.lines[1].wrong_session, 0);
	rs_free(r);
}

/* A line that goes on with a newer stream while the other is still behind the old one with
 * a hole open waits for it (holding what it sends): the lagging line fills the hole, then
 * shows the start. Without the wait the hole was given up though a line had it. */
static void test_restart_waits_for_a_lagging_line_to_fill_the_old_stream(void **st)
{
	(void)st;
	struct rs *r = rs_new(2);
	rs_seg(r, 1, 5, 0, 1, 0, 1);
	rs_seg(r, 1, 5, 0, 1, 1, 1);
	rs_seg(r, 8, 2, 80, 3, 0, 1);            /* A lost 6-7: a hole */
	for (int64_t seq = 1; seq < 9; seq += 2) /* A: the new stream's 1-8, four data packets */
		rs_seg(r, seq, 2, (seq - 1) * 10, 600 + seq, 0, 1);
	assert_int_equal(r->sessions, 0); /* B is live, behind, and may have 6-7 */
	assert_int_equal(r->n, 5);
	rs_seg(r, 6, 2, 60, 2, 1, 1); /* B, behind: its 6-7, 8-9 */
	assert_int_equal(r->n, 9);
	rs_seg(r, 8, 2, 80, 3, 1, 1);
	rs_seg(r, 1, 2, 0, 601, 1, 1); /* B's start: the new stream, A's held 1-8 first */
	assert_int_equal(r->sessions, 1);
	assert_int_equal(r->n_at_session, 9);
	assert_int_equal(r->n, 17);
	for (size_t i = 9; i < 17; i++)
		assert_int_equal(r->delivered[i], i - 8);
	assert_int_equal(r->gaps, 0);
	rs_free(r);
}

/* ... but not beyond wait_ms (here 1 s) after its start, by receive times: then the old
 * stream's hole is given up (a gap), and the new stream starts with what was held. */
static void test_restart_wait_for_a_lagging_line_is_bounded(void **st)
{
	(void)st;
	struct rs *r = rs_new(2);
	rs_seg(r, 1, 5, 0, 1, 0, 1);
	rs_seg(r, 1, 5, 0, 1, 1, 1);
	rs_seg(r, 8, 2, 80, 3, 0, 1); /* 6-7 missing on A, B behind */
	for (int64_t seq = 1; seq < 9; seq += 2)
		rs_seg(r, seq, 2, (seq - 1) * 10, 600 + seq, 0, 1);
	assert_int_equal(r->sessions, 0);
	rs_seg(r, 9, 2, 80, 610, 0, 3); /* 2 s after the start: it waited long enough */
	assert_int_equal(r->sessions, 1);
	assert_int_equal(r->gaps, 1);
	assert_int_equal(r->gap_first, 6);
	assert_int_equal(r->gap_count, 2);
	assert_int_equal(r->n, 5 + 2 + 10); /* old 1-5, 8-9; new 1-10 */
	rs_free(r);
}

/* Both lines lost every start of a newer stream (its heartbeats and first data): its first
 * packets repeat sequences the old stream delivered, but were sent after the old stream's
 * newest packet, which no copy of the old stream is. They start the new stream, with a hole
 * before them (a GAP): before, they were dropped as duplicates, and the new stream's
 * messages past the old stream's end were delivered as the old stream's, unflagged. */
static void test_restart_every_start_lost_on_both_lines(void **st)
{
	(void)st;
	struct rs *r = rs_new(2);
	rs_seg(r, 1, 5, 0, 1, 0, 1);
	rs_seg(r, 1, 5, 0, 1, 1, 1);
	rs_seg(r, 6, 5, 50, 2, 0, 1);
	rs_seg(r, 6, 5, 50, 2, 1, 1);
	assert_int_equal(r->n, 10);
	rs_seg(r, 4, 2, 30, 603, 0, 2); /* the new stream's 4-5 on A: held */
	assert_int_equal(r->sessions, 0);
	rs_seg(r, 4, 2, 30, 603, 1, 2); /* and on B: every line shows it */
	assert_int_equal(r->sessions, 1);
	assert_int_equal(r->n_at_session, 10);
	rs_seg(r, 6, 6, 50, 604, 0, 2); /* 6-11: past the old stream's end */
	rs_seg(r, 6, 6, 50, 604, 1, 2);
	assert_int_equal(r->n, 10); /* all wait for 1-3 */
	uf_arb_tick(&r->a, uf_now_mono_ns() + 60 * RS_SEC, 1);
	assert_int_equal(r->gaps, 1);
	assert_int_equal(r->gap_first, 1);
	assert_int_equal(r->gap_count, 3);
	assert_int_equal(r->n, 18);
	for (size_t i = 10; i < 18; i++)
		assert_int_equal(r->delivered[i], i - 6);
	rs_free(r);
}

/* Both lines lost every start of a newer stream, and its first packet one line shows lies
 * in a hole of the old stream (below its high): sent after the old stream's newest packet,
 * it cannot fill that hole. The hole is given up as the old stream's gap, the new stream
 * starts with it. */
static void test_restart_newer_packet_never_fills_an_old_hole(void **st)
{
	(void)st;
	struct rs *r = rs_new(2);
	rs_seg(r, 1, 5, 0, 1, 0, 1);
	rs_seg(r, 1, 5, 0, 1, 1, 1);
	rs_seg(r, 8, 3, 80, 3, 0, 1); /* 6-7 lost on both lines: a hole */
	rs_seg(r, 8, 3, 80, 3, 1, 1);
	assert_int_equal(r->n, 5);
	rs_seg(r, 6, 2, 60, 606, 1, 2); /* the new stream's 6-7 on B: held, not the hole's */
	assert_int_equal(r->n, 5);
	assert_int_equal(r->sessions, 0);
	rs_seg(r, 6, 2, 60, 606, 0, 2); /* and on A: every line shows the new stream */
	assert_int_equal(r->sessions, 1);
	assert_int_equal(r->n_at_session, 8); /* 1-5, then 8-10 past the old gap */
	assert_int_equal(r->delivered[5], 8);
	assert_int_equal(r->gaps, 1);
	assert_int_equal(r->gap_first, 6);
	assert_int_equal(r->gap_count, 2);
	rs_free(r);
}

/* A line holding a newer stream shows a packet sent later still whose sequence goes back:
 * a third stream, whose start it lost. The held stream starts then (its packets delivered),
 * and the packet is judged against it: not its own (sent after its newest, below its high),
 * so held for the third. */
static void test_restart_held_line_sequence_back_is_a_newer_stream(void **st)
{
	(void)st;
	struct rs *r = rs_new(2);
	rs_seg(r, 1, 5, 0, 1, 0, 1);
	rs_seg(r, 1, 5, 0, 1, 1, 1);
	rs_seg(r, 1, 2, 0, 600, 0, 2); /* A: the second stream's 1-2 and 3-4, held: B is live */
	rs_seg(r, 3, 2, 20, 601, 0, 2);
	assert_int_equal(r->sessions, 0);
	rs_seg(r, 3, 2, 20, 601, 0, 2); /* a copy of 3-4 (the network repeated it): no newer */
	rs_seg(r, 1, 2, 0, 600, 0, 2);  /* nor a copy of the start */
	assert_int_equal(r->sessions, 0);
	rs_seg(r, 3, 2, 20, 700, 0, 2); /* A: 3-4 again, sent later: a third stream */
	assert_int_equal(r->sessions, 1);
	assert_int_equal(r->n, 9); /* the second stream's 1-4 */
	for (size_t i = 5; i < 9; i++)
		assert_int_equal(r->delivered[i], i - 4);
	rs_free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_restart_on_one_line_starts_a_new_stream),
	    cmocka_unit_test(test_restart_gives_up_what_the_old_stream_missed),
	    cmocka_unit_test(test_restart_needs_every_live_line),
	    cmocka_unit_test(test_restart_waits_for_the_line_that_lost_every_start),
	    cmocka_unit_test(test_restart_late_copy_of_the_first_data_is_not_a_newer_stream),
	    cmocka_unit_test(test_restart_line_without_start_joins_by_send_time),
	    cmocka_unit_test(test_restart_waits_for_a_lagging_line_to_fill_the_old_stream),
	    cmocka_unit_test(test_restart_wait_for_a_lagging_line_is_bounded),
	    cmocka_unit_test(test_restart_every_start_lost_on_both_lines),
	    cmocka_unit_test(test_restart_newer_packet_never_fills_an_old_hole),
	    cmocka_unit_test(test_restart_held_line_sequence_back_is_a_newer_stream),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
