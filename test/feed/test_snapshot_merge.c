/* The pieces of the snapshot merge on synthetic MoldUDP64 packets, no network:
 *   - uf_snap_buf (feed/snapshot.h): one copy per sequence, holes filled by the other line,
 *     a lagging line's older packets, the bound, other sessions, order of the replay;
 *   - uf_arb_resync (feed/arbiter.h): packets wholly before the snapshot's sequence dropped,
 *     a straddling one delivered from that sequence, later ones in order, with or without a
 *     session known before. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "decode/uf_decode.h"
#include "feed/arbiter.h"
#include "feed/snapshot.h"

struct pk {
	uint8_t buf[2048];
	struct uf_frame p;
};

/* A data packet of `count` 12-byte messages from `seq` (count 0xFFFF: end of session). */
static struct uf_frame *mk(struct pk *k, const char *sess, uint64_t seq, unsigned count)
{
	struct uf_mold_builder b;
	char s[UF_MOLD_SESSION_LEN];
	memset(s, ' ', sizeof(s));
	memcpy(s, sess, strlen(sess));
	uint8_t msg[12] = {'S'};
	if (count == 0xFFFF) {
		uf_mold_build_end_of_session(k->buf, s, seq);
		assert_int_equal(uf_mold_open(&k->p, k->buf, UF_MOLD_HDR_LEN),
		                 UF_MOLD_END_OF_SESSION);
		return &k->p;
	}
	uf_mold_builder_init(&b, k->buf, sizeof(k->buf), s, seq);
	for (unsigned i = 0; i < count; i++)
		assert_int_equal(uf_mold_builder_add(&b, msg, sizeof(msg)), 0);
	assert_int_equal(uf_mold_open(&k->p, k->buf, b.len), UF_MOLD_DATA);
	return &k->p;
}

static void test_buf_keeps_one_copy_per_sequence(void **state)
{
	struct uf_snap_buf b;
	struct pk k;
	assert_int_equal(uf_snap_buf_init(&b, 64, 2048), 0);
	for (uint64_t s = 100; s < 210; s += 10)
		assert_int_equal(uf_snap_buf_add(&b, mk(&k, "S1", s, 10), 1, 0), 1); /* line A */
	for (uint64_t s = 100; s < 210; s += 10)
		assert_int_equal(uf_snap_buf_add(&b, mk(&k, "S1", s, 10), 2, 1), 0); /* B: dups */
	assert_int_equal(b.n, 11);
	/* A loses 210..219; B's copy fills the hole, B's copy of 220 is not needed */
	assert_int_equal(uf_snap_buf_add(&b, mk(&k, "S1", 220, 10), 3, 0), 1);
	assert_int_equal(b.nholes, 1);
	assert_int_equal(uf_snap_buf_add(&b, mk(&k, "S1", 210, 10), 4, 1), 1);
	assert_int_equal(b.nholes, 0);
	assert_int_equal(uf_snap_buf_add(&b, mk(&k, "S1", 220, 10), 5, 1), 0);
	/* a packet overlapping the top is kept (its new part matters); one partly inside a hole
	 * too, and the hole shrinks to what is still missing */
	assert_int_equal(uf_snap_buf_add(&b, mk(&k, "S1", 225, 10), 6, 1), 1);
	assert_int_equal(uf_snap_buf_add(&b, mk(&k, "S1", 260, 5), 6, 0), 1);
	assert_int_equal(b.nholes, 1);
	assert_int_equal(uf_snap_buf_add(&b, mk(&k, "S1", 235, 15), 7, 1), 1);
	assert_int_equal(b.holes[0].first, 250);
	assert_int_equal(uf_snap_buf_add(&b, mk(&k, "S1", 242, 3), 7, 0), 0);
	/* a lagging line's packet older than anything kept: kept */
	assert_int_equal(uf_snap_buf_add(&b, mk(&k, "S1", 90, 10), 8, 1), 1);
	assert_int_equal(uf_snap_buf_add(&b, mk(&k, "S1", 95, 5), 8, 0), 0);
	/* another session's packets are not this stream's; heartbeats and ends carry nothing */
	assert_int_equal(uf_snap_buf_add(&b, mk(&k, "S2", 300, 10), 9, 0), 0);
	assert_int_equal(uf_snap_buf_add(&b, mk(&k, "S1", 300, 0xFFFF), 9, 0), 0);
	assert_int_equal(uf_snap_buf_add_eos(&b, mk(&k, "S1", 300, 0xFFFF), 9, 0), 1);
	/* replay order: by sequence, ties in arrival order */
	uf_snap_buf_sort(&b);
	for (uint32_t i = 1; i < b.n; i++) {
		const struct uf_snap_pkt *x = &b.pkts[b.order[i - 1]], *y = &b.pkts[b.order[i]];
		assert_true(x->seq < y->seq || (x->seq == y->seq && b.order[i - 1] < b.order[i]));
	}
	assert_int_equal(b.pkts[b.order[0]].seq, 90);
	uf_snap_buf_clear(&b);
	assert_int_equal(b.n, 0);
	assert_int_equal(b.have_eos[0], 0);
	uf_snap_buf_fini(&b);
}

static void test_buf_is_bounded_and_never_loses_when_holes_run_out(void **state)
{
	struct uf_snap_buf b;
	struct pk k;
	assert_int_equal(uf_snap_buf_init(&b, UF_SNAP_HOLES + 8, 2048), 0);
	/* every other packet: more holes than tracked */
	for (unsigned i = 0; i < UF_SNAP_HOLES + 4; i++)
		assert_int_equal(uf_snap_buf_add(&b, mk(&k, "S1", 1 + 20 * (uint64_t)i, 10), 1, 0),
		                 1);
	assert_int_equal(b.holes_lost, 1);
	/* untracked holes: anything below the top is kept (more copies, none lost) */
	assert_int_equal(uf_snap_buf_add(&b, mk(&k, "S1", 11, 10), 1, 1), 1);
	while (b.n < b.cap)
		assert_int_equal(uf_snap_buf_add(&b, mk(&k, "S1", 5000 + b.n, 1), 1, 0), 1);
	assert_int_equal(uf_snap_buf_add(&b, mk(&k, "S1", 9000, 1), 1, 0), -ENOSPC);
	uf_snap_buf_fini(&b);
}

struct rec {
	uint64_t seq[256];
	unsigned n;
	unsigned gaps;
};

static void on_deliver(void *ctx, const struct uf_frame *pkt, uint32_t skip, uint64_t rx,
                       unsigned src)
{
	struct rec *r = ctx;
	for (uint32_t i = skip; i < pkt->count && r->n < 256; i++)
		r->seq[r->n++] = pkt->seq + i;
}

static void on_gap(void *ctx, uint64_t first, uint64_t count)
{
	((struct rec *)ctx)->gaps++;
}

static void arb_new(struct uf_arb *a, struct uf_feed_config *cfg, struct uf_feed_stats *st,
                    struct rec *r)
{
	memset(cfg, 0, sizeof(*cfg));
	memset(st, 0, sizeof(*st));
	memset(r, 0, sizeof(*r));
	cfg->nlines = 2;
	cfg->recovery.queue_packets = 64;
	struct uf_arb_cb cb = {on_deliver, on_gap, NULL, r};
	assert_int_equal(uf_arb_init(a, cfg, &uf_mold_framing, -1, 2048, st, &cb), 0);
}

/* Mid-day: the stream is at 11, packets beyond a hole are queued; the snapshot says 25. */
static void test_resync_drops_before_applies_straddling_and_after(void **state)
{
	struct uf_arb a;
	struct uf_feed_config cfg;
	struct uf_feed_stats st;
	struct rec r;
	struct pk k;
	arb_new(&a, &cfg, &st, &r);
	uf_arb_packet(&a, mk(&k, "S1", 1, 10), 1, 0);
	assert_int_equal(r.n, 10);
	uf_arb_packet(&a, mk(&k, "S1", 14, 6), 2, 0);  /* 14..19: wholly before 25 */
	uf_arb_packet(&a, mk(&k, "S1", 20, 10), 3, 0); /* 20..29: straddles 25 */
	uf_arb_packet(&a, mk(&k, "S1", 30, 5), 4, 1);  /* 30..34: after */
	assert_true(uf_arb_gap_open(&a));
	assert_int_equal(r.n, 10);
	r.n = 0;
	uf_arb_resync(&a, NULL, 25);
	assert_false(uf_arb_gap_open(&a));
	assert_int_equal(r.n, 10); /* 25..34, each once */
	for (unsigned i = 0; i < r.n; i++)
		assert_int_equal(r.seq[i], 25 + i);
	/* copies of what the snapshot or the queue delivered change nothing */
	uf_arb_packet(&a, mk(&k, "S1", 20, 10), 5, 1);
	uf_arb_packet(&a, mk(&k, "S1", 33, 4), 5, 1); /* 33..36: only 35, 36 are new */
	assert_int_equal(r.n, 12);
	assert_int_equal(r.seq[11], 36);
	assert_int_equal(r.gaps, 0);
	uf_arb_fini(&a);
}

/* Start: no session known yet; the snapshot says 500 and names the lines' session. */
static void test_resync_at_start_begins_the_session_at_the_snapshot(void **state)
{
	struct uf_arb a;
	struct uf_feed_config cfg;
	struct uf_feed_stats st;
	struct rec r;
	struct pk k;
	arb_new(&a, &cfg, &st, &r);
	char sess[UF_MOLD_SESSION_LEN];
	memset(sess, ' ', sizeof(sess));
	memcpy(sess, "S1", 2);
	uf_arb_resync(&a, sess, 500);
	assert_int_equal(st.sessions, 1);
	uf_arb_packet(&a, mk(&k, "S1", 490, 10), 1, 0); /* before: dropped */
	uf_arb_packet(&a, mk(&k, "S1", 497, 6), 1, 0);  /* 497..502: from 500 */
	uf_arb_packet(&a, mk(&k, "S1", 503, 2), 1, 1);
	assert_int_equal(r.n, 5);
	for (unsigned i = 0; i < r.n; i++)
		assert_int_equal(r.seq[i], 500 + i);
	assert_false(uf_arb_gap_open(&a));
	assert_int_equal(st.gaps, 0);
	/* a snapshot older than what was delivered moves the stream back: the difference is
	 * a hole like any other (recovered or given up) */
	uf_arb_resync(&a, NULL, 502);
	assert_true(uf_arb_gap_open(&a)); /* 502..504 are missing from the new books */
	unsigned before = r.n;
	uf_arb_packet(&a, mk(&k, "S1", 502, 3), 1, 0); /* 502..504 again */
	assert_int_equal(r.n, before + 3);
	assert_int_equal(r.seq[r.n - 1], 504);
	assert_false(uf_arb_gap_open(&a));
	uf_arb_fini(&a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_buf_keeps_one_copy_per_sequence),
	    cmocka_unit_test(test_buf_is_bounded_and_never_loses_when_holes_run_out),
	    cmocka_unit_test(test_resync_drops_before_applies_straddling_and_after),
	    cmocka_unit_test(test_resync_at_start_begins_the_session_at_the_snapshot),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
