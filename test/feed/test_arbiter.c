/* The A/B arbiter on synthetic MoldUDP64 packets: no network except a local UDP socket
 * standing in for the re-request server. */
#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/uf_time.h"
#include "decode/uf_decode.h"
#include "feed/arbiter.h"
#include "feed/mcast.h"

#define MAXD 4096

struct rec {
	uint64_t delivered[MAXD]; /* sequences delivered, in order */
	unsigned src[MAXD];       /* their sources */
	size_t n;
	uint64_t gap_first[16], gap_count[16];
	size_t ngaps;
	int sessions;
};

static void on_deliver(void *ctx, const struct uf_mold_packet *pkt, uint32_t skip, uint64_t rx,
                       unsigned src)
{
	struct rec *r = ctx;
	for (uint32_t i = skip; i < pkt->count && r->n < MAXD; i++) {
		r->src[r->n] = src;
		r->delivered[r->n++] = pkt->seq + i;
	}
}

static void on_gap(void *ctx, uint64_t first, uint64_t count)
{
	struct rec *r = ctx;
	r->gap_first[r->ngaps] = first;
	r->gap_count[r->ngaps++] = count;
}

static void on_session(void *ctx, const char s[UF_MOLD_SESSION_LEN])
{
	((struct rec *)ctx)->sessions++;
}

struct env {
	struct uf_arb a;
	struct uf_feed_stats st;
	struct rec r;
	struct uf_feed_config cfg;
	int srv; /* stands in for the request server */
	int cli; /* the arbiter's re-request socket */
	uint8_t buf[2048];
	struct uf_mold_packet pkt;
};

static struct env *env_new(int recovery, uint32_t queue)
{
	struct env *e = calloc(1, sizeof(*e));
	char err[128];
	struct in_addr lo;
	inet_pton(AF_INET, "127.0.0.1", &lo);
	e->srv = uf_mcast_open_unicast(lo, 0, 0, err, sizeof(err));
	e->cli = uf_mcast_open_unicast(lo, 0, 0, err, sizeof(err));
	assert_true(e->srv >= 0 && e->cli >= 0);
	socklen_t sl = sizeof(e->cfg.recovery.server);
	getsockname(e->srv, (struct sockaddr *)&e->cfg.recovery.server, &sl);
	e->cfg.nlines = 2;
	e->cfg.recovery.enabled = recovery;
	e->cfg.recovery.max_count = 100;
	e->cfg.recovery.timeout_ms = 10;
	e->cfg.recovery.retries = 2;
	e->cfg.recovery.wait_ms = 2;
	e->cfg.recovery.wait_packets = 4;
	e->cfg.recovery.queue_packets = queue;
	e->cfg.recovery.max_requests_per_s = 1000;
	struct uf_arb_cb cb = {on_deliver, on_gap, on_session, &e->r};
	assert_int_equal(uf_arb_init(&e->a, &e->cfg, recovery ? e->cli : -1, 2048, &e->st, &cb), 0);
	return e;
}

static void env_free(struct env *e)
{
	uf_arb_fini(&e->a);
	close(e->srv);
	close(e->cli);
	free(e);
}

/* Feeds a data packet of `count` messages from `seq` (session `sess`) from `src`. */
static void pkt_sess(struct env *e, const char *sess, uint64_t seq, unsigned count, unsigned src)
{
	struct uf_mold_builder b;
	char s[UF_MOLD_SESSION_LEN];
	memset(s, ' ', sizeof(s));
	memcpy(s, sess, strlen(sess));
	uint8_t msg[12] = {'S'}; /* any bytes: the arbiter never decodes */
	uf_mold_builder_init(&b, e->buf, sizeof(e->buf), s, seq);
	for (unsigned i = 0; i < count; i++)
		assert_int_equal(uf_mold_builder_add(&b, msg, sizeof(msg)), 0);
	assert_int_equal(uf_mold_open(&e->pkt, e->buf, b.len),
	                 count ? UF_MOLD_DATA : UF_MOLD_HEARTBEAT);
	uf_arb_packet(&e->a, &e->pkt, 1, src);
}

static void pkt(struct env *e, uint64_t seq, unsigned count, unsigned src)
{
	pkt_sess(e, "S1", seq, count, src);
}

static void ctl(struct env *e, uint64_t seq, int eos, unsigned src)
{
	char s[UF_MOLD_SESSION_LEN];
	memset(s, ' ', sizeof(s));
	memcpy(s, "S1", 2);
	if (eos)
		uf_mold_build_end_of_session(e->buf, s, seq);
	else
		uf_mold_build_heartbeat(e->buf, s, seq);
	assert_true(uf_mold_open(&e->pkt, e->buf, UF_MOLD_HDR_LEN) > 0);
	uf_arb_packet(&e->a, &e->pkt, 1, src);
}

static void assert_in_order(const struct rec *r, uint64_t first, uint64_t n)
{
	assert_int_equal(r->n, n);
	for (uint64_t i = 0; i < n; i++)
		assert_int_equal(r->delivered[i], first + i);
}

/* Reads one re-request from the fake server; returns 0 when none arrived. */
static int read_request(struct env *e, uint64_t *seq, uint16_t *count)
{
	uint8_t in[64];
	ssize_t n = recv(e->srv, in, sizeof(in), MSG_DONTWAIT);
	if (n < 0)
		return 0;
	struct uf_mold_packet req;
	memset(&req, 0, sizeof(req));
	assert_int_equal(uf_mold_rerequest_parse(&req, in, (size_t)n), 0);
	*seq = req.seq;
	*count = req.count;
	return 1;
}

static void test_arb_first_copy_wins_and_duplicates_are_dropped(void **s)
{
	struct env *e = env_new(1, 64);
	pkt(e, 1, 3, 0);
	pkt(e, 1, 3, 1);
	pkt(e, 4, 2, 1);
	pkt(e, 4, 2, 0);
	assert_in_order(&e->r, 1, 5);
	assert_int_equal(e->st.lines[0].wins, 1);
	assert_int_equal(e->st.lines[1].wins, 1);
	assert_int_equal(e->st.lines[0].duplicates, 1);
	assert_int_equal(e->st.lines[1].duplicates, 1);
	assert_int_equal(e->st.gaps, 0);
	assert_int_equal(e->st.sessions, 1);
	env_free(e);
}

static void test_arb_partial_overlap_delivers_only_new_messages(void **s)
{
	struct env *e = env_new(1, 64);
	pkt(e, 1, 4, 0);
	pkt(e, 3, 4, 1); /* 3,4 seen; 5,6 new */
	assert_in_order(&e->r, 1, 6);
	assert_int_equal(e->r.src[4], 1);
	env_free(e);
}

static void test_arb_gap_on_one_line_is_filled_by_the_other(void **s)
{
	struct env *e = env_new(1, 64);
	pkt(e, 1, 2, 0);
	pkt(e, 5, 2, 0); /* A lost 3..4 */
	assert_true(uf_arb_gap_open(&e->a));
	pkt(e, 1, 2, 1);
	pkt(e, 3, 2, 1); /* B fills it */
	pkt(e, 5, 2, 1);
	assert_false(uf_arb_gap_open(&e->a));
	assert_in_order(&e->r, 1, 6);
	assert_int_equal(e->st.gaps, 1);
	assert_int_equal(e->st.gaps_filled_by_line, 1);
	assert_int_equal(e->st.rerequests, 0);
	assert_int_equal(e->st.lines[0].gaps, 1);
	assert_int_equal(e->st.lines[0].gap_messages, 2);
	assert_int_equal(e->st.lines[1].gaps, 0);
	env_free(e);
}

static void test_arb_gap_on_both_lines_is_rerequested_and_applied_in_order(void **s)
{
	struct env *e = env_new(1, 64);
	pkt(e, 1, 2, 0);
	pkt(e, 6, 2, 0);
	pkt(e, 6, 2, 1);
	pkt(e, 8, 1, 1);
	uint64_t now = uf_now_mono_ns();
	uf_arb_tick(&e->a, now, 1); /* neither wait_ms nor wait_packets reached yet */
	assert_int_equal(e->st.rerequests, 0);
	uf_arb_tick(&e->a, now + 3000000ull, 1);
	uint64_t seq = 0;
	uint16_t cnt = 0;
	assert_true(read_request(e, &seq, &cnt));
	assert_int_equal(seq, 3);
	assert_int_equal(cnt, 3);
	assert_int_equal(e->st.rerequests, 1);
	assert_in_order(&e->r, 1, 2);
	pkt(e, 3, 3, UF_ARB_SRC_RECOVERY);
	assert_in_order(&e->r, 1, 8);
	assert_int_equal(e->r.src[2], UF_ARB_SRC_RECOVERY);
	assert_int_equal(e->st.recovered_messages, 3);
	assert_false(uf_arb_gap_open(&e->a));
	assert_int_equal(e->st.gaps_unrecovered, 0);
	env_free(e);
}

static void test_arb_waits_until_every_line_moved_past_the_hole(void **s)
{
	struct env *e = env_new(1, 64);
	pkt(e, 1, 1, 0);
	pkt(e, 3, 1, 0);
	for (uint64_t q = 4; q < 4 + 8; q++)
		pkt(e, q, 1, 0); /* line A runs on; B has not been read yet */
	uf_arb_tick(&e->a, uf_now_mono_ns() + 20000000ull, 0); /* past wait_ms, not drained */
	assert_int_equal(e->st.rerequests, 0);
	for (int i = 0; i < 8; i++)
		pkt(e, 1, 1, 1); /* B lagging behind: old packets do not count */
	uf_arb_tick(&e->a, uf_now_mono_ns(), 0);
	assert_int_equal(e->st.rerequests, 0);
	struct env *e2 = env_new(1, 64); /* and a line that never drains nor moves on: */
	pkt(e2, 1, 1, 0);
	pkt(e2, 3, 1, 0);
	uf_arb_tick(&e2->a, uf_now_mono_ns() + UF_ARB_WAIT_CAP(2000000ull) + 1000000ull, 0);
	assert_int_equal(e2->st.rerequests, 1); /* the cap ends the wait */
	env_free(e2);
	for (uint64_t q = 3; q < 3 + 4; q++)
		pkt(e, q, 1, 1); /* B moved 4 packets (wait_packets) past the hole too */
	uf_arb_tick(&e->a, uf_now_mono_ns(), 0);
	assert_int_equal(e->st.rerequests, 1);
	env_free(e);
}

static void test_arb_request_is_capped_at_max_count(void **s)
{
	struct env *e = env_new(1, 64);
	pkt(e, 1, 1, 0);
	pkt(e, 500, 1, 0);
	uf_arb_tick(&e->a, uf_now_mono_ns() + 10000000ull, 1); /* past wait_ms */
	uint64_t seq;
	uint16_t cnt;
	assert_true(read_request(e, &seq, &cnt));
	assert_int_equal(seq, 2);
	assert_int_equal(cnt, 100);
	env_free(e);
}

static void test_arb_retries_then_gives_up_with_a_gap_marker(void **s)
{
	struct env *e = env_new(1, 64);
	pkt(e, 1, 2, 0);
	pkt(e, 10, 2, 0);
	uint64_t t = uf_now_mono_ns() + 5000000ull;
	/* first request, then retries after each 10 ms timeout: 1 + retries(2) requests */
	for (int i = 0; i < 10 && uf_arb_gap_open(&e->a); i++, t += 11000000ull)
		uf_arb_tick(&e->a, t, 1);
	assert_false(uf_arb_gap_open(&e->a));
	assert_int_equal(e->st.rerequests, 3);
	assert_int_equal(e->st.rerequest_timeouts, 3);
	assert_int_equal(e->r.ngaps, 1);
	assert_int_equal(e->r.gap_first[0], 3);
	assert_int_equal(e->r.gap_count[0], 7);
	assert_int_equal(e->st.gaps_unrecovered, 1);
	assert_int_equal(e->st.messages_unrecovered, 7);
	assert_int_equal(e->r.n, 4); /* 1,2 then 10,11 after the give-up */
	assert_int_equal(e->r.delivered[2], 10);
	pkt(e, 12, 1, 1); /* and it carries on */
	assert_int_equal(e->r.n, 5);
	env_free(e);
}

static void test_arb_without_recovery_gives_up_after_the_wait(void **s)
{
	struct env *e = env_new(0, 64);
	pkt(e, 1, 1, 0);
	pkt(e, 3, 1, 0);
	uf_arb_tick(&e->a, uf_now_mono_ns(), 1); /* still waiting for the other line */
	assert_true(uf_arb_gap_open(&e->a));
	uf_arb_tick(&e->a, uf_now_mono_ns() + 3000000ull, 1);
	assert_false(uf_arb_gap_open(&e->a));
	assert_int_equal(e->r.ngaps, 1);
	assert_int_equal(e->r.gap_first[0], 2);
	assert_int_equal(e->r.gap_count[0], 1);
	assert_int_equal(e->st.rerequests, 0);
	assert_int_equal(e->r.n, 2); /* 1, then 3 once 2 was given up */
	assert_int_equal(e->r.delivered[1], 3);
	env_free(e);
}

static void test_arb_queue_overflow_gives_up_the_oldest_hole(void **s)
{
	struct env *e = env_new(1, 4);
	pkt(e, 1, 1, 0);
	for (uint64_t q = 3; q < 3 + 5; q++)
		pkt(e, q, 1, 0); /* 5 packets behind a hole, queue holds 4 */
	assert_int_equal(e->st.queue_overflows, 1);
	assert_int_equal(e->r.ngaps, 1);
	assert_int_equal(e->r.gap_first[0], 2);
	assert_int_equal(e->r.gap_count[0], 1);
	assert_int_equal(e->r.n, 6); /* 1, then 3..7 */
	assert_int_equal(e->r.delivered[5], 7);
	env_free(e);
}

/* A full queue gives up the oldest hole, but a packet in hand that lies inside that hole
 * is not part of the loss: only what precedes it is given up, and it is delivered. */
static void test_arb_queue_overflow_keeps_a_packet_inside_the_hole(void **s)
{
	struct env *e = env_new(0, 2);
	pkt(e, 1, 1, 0);
	pkt(e, 10, 1, 0);
	pkt(e, 20, 1, 0); /* queue (2 slots) now full */
	pkt(e, 5, 1, 1);  /* the other line brings 5: inside the hole 2..9 */
	assert_int_equal(e->st.queue_overflows, 1);
	assert_int_equal(e->r.ngaps, 1);
	assert_int_equal(e->r.gap_first[0], 2);
	assert_int_equal(e->r.gap_count[0], 3); /* 2..4 only: 5 was at hand */
	assert_int_equal(e->r.n, 2);
	assert_int_equal(e->r.delivered[1], 5);
	assert_int_equal(e->r.src[1], 1);
	assert_int_equal(e->st.messages_unrecovered, 3);
	assert_true(uf_arb_gap_open(&e->a)); /* 6..9 is still a hole, waiting for its turn */
	pkt(e, 6, 4, 1); /* ... and the line fills it: 10 and 20 follow from the queue */
	assert_int_equal(e->r.n, 7);
	assert_int_equal(e->r.delivered[6], 10);
	env_free(e);
}

static void test_arb_heartbeat_reveals_a_lost_tail(void **s)
{
	struct env *e = env_new(1, 64);
	pkt(e, 1, 2, 0);
	ctl(e, 3, 0, 0);
	assert_false(uf_arb_gap_open(&e->a));
	ctl(e, 5, 0, 1); /* 3 and 4 were sent and lost everywhere */
	assert_true(uf_arb_gap_open(&e->a));
	assert_int_equal(e->st.gap_messages, 2);
	assert_int_equal(e->st.heartbeats, 2);
	env_free(e);
}

static void test_arb_end_of_session_counts_once_after_everything(void **s)
{
	struct env *e = env_new(1, 64);
	pkt(e, 1, 2, 0);
	ctl(e, 4, 1, 0); /* message 3 missing */
	assert_int_equal(e->st.end_of_session, 0);
	ctl(e, 4, 1, 1);
	pkt(e, 3, 1, 1);
	assert_int_equal(e->st.end_of_session, 1);
	ctl(e, 4, 1, 0);
	assert_int_equal(e->st.end_of_session, 1);
	assert_in_order(&e->r, 1, 3);
	env_free(e);
}

static void test_arb_stray_packet_of_another_session_changes_nothing(void **s)
{
	struct env *e = env_new(1, 64);
	pkt(e, 1, 3, 0);
	pkt_sess(e, "STRAY", 900, 2, 1);
	ctl(e, 4, 0, 1);
	pkt(e, 4, 2, 0);
	assert_int_equal(e->r.sessions, 0);
	assert_int_equal(e->st.sessions, 1);
	assert_int_equal(e->st.lines[1].wrong_session, 1);
	assert_false(uf_arb_gap_open(&e->a));
	assert_in_order(&e->r, 1, 5);
	env_free(e);
}

static void test_arb_new_session_without_end_switches_after_confirmation(void **s)
{
	struct env *e = env_new(1, 64);
	pkt(e, 1, 3, 0);
	for (uint64_t q = 1; q < UF_ARB_SESSION_CONFIRM; q++)
		pkt_sess(e, "S2", q, 1, 0);
	assert_int_equal(e->st.sessions, 1); /* not yet */
	pkt_sess(e, "S2", UF_ARB_SESSION_CONFIRM, 1, 0);
	assert_int_equal(e->st.sessions, 2);
	assert_int_equal(e->r.sessions, 1);
	/* its first packets were dropped while confirming: a gap from 1, to be recovered */
	assert_true(uf_arb_gap_open(&e->a));
	assert_int_equal(e->r.n, 3);
	env_free(e);
}

static void test_arb_new_session_restarts_at_one_and_drops_the_old(void **s)
{
	struct env *e = env_new(1, 64);
	pkt(e, 1, 3, 0);
	ctl(e, 4, 1, 0); /* S1 ended: S2 takes over at once */
	pkt_sess(e, "S2", 1, 2, 0);
	assert_int_equal(e->r.sessions, 1);
	assert_int_equal(e->st.sessions, 2);
	pkt(e, 4, 1, 1); /* late packet of S1 on B */
	assert_int_equal(e->st.lines[1].wrong_session, 1);
	assert_int_equal(e->r.n, 5);
	assert_int_equal(e->r.delivered[3], 1);
	assert_int_equal(e->r.delivered[4], 2);
	env_free(e);
}

static void test_arb_late_join_recovers_from_the_first_sequence(void **s)
{
	struct env *e = env_new(1, 64);
	pkt(e, 50, 1, 0);
	assert_true(uf_arb_gap_open(&e->a));
	assert_int_equal(e->st.gap_messages, 49);
	assert_int_equal(e->r.n, 0);
	env_free(e);
}

/* A late joiner has delivered nothing yet (it is recovering from 1), but its session is
 * running: a stray packet of another session must not replace it (which would also drop
 * every later packet of the real session as "previous session" for the rest of the day). */
static void test_arb_stray_packet_during_late_join_changes_nothing(void **s)
{
	struct env *e = env_new(1, 64);
	pkt(e, 50, 1, 0);
	pkt_sess(e, "STRAY", 900, 2, 1);
	assert_int_equal(e->r.sessions, 0);
	assert_int_equal(e->st.sessions, 1);
	assert_int_equal(e->st.lines[1].wrong_session, 1);
	pkt(e, 1, 49, 1); /* the start arrives (a recovery answer would do the same) */
	assert_int_equal(e->st.lines[1].wrong_session, 1);
	assert_false(uf_arb_gap_open(&e->a));
	assert_in_order(&e->r, 1, 50);
	env_free(e);
}

/* A late joiner still recovering from 1 when its session is replaced has lost everything
 * it held: that is reported like any other abandoned tail, not silently dropped. */
static void test_arb_session_replaced_during_late_join_reports_the_loss(void **s)
{
	struct env *e = env_new(1, 64);
	pkt(e, 50, 1, 0);
	for (uint64_t q = 1; q <= UF_ARB_SESSION_CONFIRM; q++)
		pkt_sess(e, "S2", q, 1, 0);
	assert_int_equal(e->r.sessions, 1);
	assert_int_equal(e->r.ngaps, 1);
	assert_int_equal(e->r.gap_first[0], 1);
	assert_int_equal(e->r.gap_count[0], 50); /* 1..49 missing, 50 queued and dropped */
	assert_int_equal(e->st.messages_unrecovered, 50);
	assert_int_equal(e->st.gaps_unrecovered, 1);
	env_free(e);
}

static void test_arb_rate_limit_spaces_requests(void **s)
{
	struct env *e = env_new(1, 64);
	e->a.min_interval_ns = 1000000000ull; /* 1 request per second */
	pkt(e, 1, 1, 0);
	pkt(e, 3, 1, 0);
	uint64_t t = uf_now_mono_ns() + 5000000ull;
	uf_arb_tick(&e->a, t, 1);
	assert_int_equal(e->st.rerequests, 1);
	pkt(e, 2, 1, UF_ARB_SRC_RECOVERY);
	pkt(e, 5, 1, 0); /* a second hole right away */
	uf_arb_tick(&e->a, t + 3000000ull, 1);
	assert_int_equal(e->st.rerequests, 1);
	assert_int_equal(e->st.rerequest_rate_limited, 1);
	uf_arb_tick(&e->a, t + 1001000000ull, 1);
	assert_int_equal(e->st.rerequests, 2);
	env_free(e);
}

static void test_lat_hist_quantiles_bound_the_true_value(void **s)
{
	static struct uf_lat_hist h;
	for (int v = 1; v <= 1000; v++)
		uf_lat_record(&h, v * 1000);
	uint64_t p50 = uf_lat_quantile(&h, 0.5), p99 = uf_lat_quantile(&h, 0.99);
	assert_true(p50 >= 500000 && p50 <= 500000 * 1.125);
	assert_true(p99 >= 990000 && p99 <= 1000000);
	assert_int_equal(h.max_ns, 1000000);
	for (unsigned i = 1; i < UF_LAT_NBUCKETS; i++)
		assert_int_equal(uf_lat_bucket(uf_lat_bucket_low(i)), i);
	uf_lat_record(&h, -5);
	assert_int_equal(h.negative, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_arb_first_copy_wins_and_duplicates_are_dropped),
	    cmocka_unit_test(test_arb_partial_overlap_delivers_only_new_messages),
	    cmocka_unit_test(test_arb_gap_on_one_line_is_filled_by_the_other),
	    cmocka_unit_test(test_arb_gap_on_both_lines_is_rerequested_and_applied_in_order),
	    cmocka_unit_test(test_arb_waits_until_every_line_moved_past_the_hole),
	    cmocka_unit_test(test_arb_request_is_capped_at_max_count),
	    cmocka_unit_test(test_arb_retries_then_gives_up_with_a_gap_marker),
	    cmocka_unit_test(test_arb_without_recovery_gives_up_after_the_wait),
	    cmocka_unit_test(test_arb_queue_overflow_gives_up_the_oldest_hole),
	    cmocka_unit_test(test_arb_queue_overflow_keeps_a_packet_inside_the_hole),
	    cmocka_unit_test(test_arb_heartbeat_reveals_a_lost_tail),
	    cmocka_unit_test(test_arb_end_of_session_counts_once_after_everything),
	    cmocka_unit_test(test_arb_new_session_restarts_at_one_and_drops_the_old),
	    cmocka_unit_test(test_arb_stray_packet_of_another_session_changes_nothing),
	    cmocka_unit_test(test_arb_new_session_without_end_switches_after_confirmation),
	    cmocka_unit_test(test_arb_late_join_recovers_from_the_first_sequence),
	    cmocka_unit_test(test_arb_stray_packet_during_late_join_changes_nothing),
	    cmocka_unit_test(test_arb_session_replaced_during_late_join_reports_the_loss),
	    cmocka_unit_test(test_arb_rate_limit_spaces_requests),
	    cmocka_unit_test(test_lat_hist_quantiles_bound_the_true_value),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
