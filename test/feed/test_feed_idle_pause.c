/* The feed loop's idle pause (config "idle_pause"): what the loop does after an empty poll,
 * as it reports it (stats.idle_pause, /status, uringfeed_idle_pause) once it runs. AUTO (the
 * default) follows the back end actually running: no pause on io_uring with SQPOLL, a pause on
 * io_uring without it and on recvmmsg; ON and OFF hold whatever the back end. Each case runs a
 * real feed on loopback until its loop has polled, then stops it: no traffic is needed, and
 * nothing is timed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/uf_atomic.h"
#include "feed/uf_feed.h"
#include "ring/uf_ring.h"
#include "feed_test_util.h"
#include "test/common/uf_test_feed_thread.h"

#define IP_OCTET     96
#define IP_PORT_BASE 29600
#define IP_WAIT_MS   20000 /* a loop that has not polled by then fails the case */

/* Runs a feed on `be` with idle_pause `mode` until its loop made an empty poll; returns what
 * it reported, and in `ran` the back end it actually ran on. */
static uint64_t ip_case(enum uf_backend be, int sc, int mode, char *ran, size_t ranlen)
{
	static struct uf_feed_config cfg; /* big: not on the stack */
	struct uf_test_feed_thread t;
	struct uf_feed *feed;
	char err[256];

	ft_config_lines(&cfg, "ip", be, sc, IP_OCTET, IP_PORT_BASE, 5);
	cfg.idle_pause = mode;
	if (uf_feed_create(&cfg, &feed, err, sizeof(err)) < 0)
		fail_msg("uf_feed_create: %s", err);
	uf_test_feed_thread_start(&t, feed);
	const struct uf_feed_stats *s = uf_feed_stats(feed);
	uint64_t end = uf_now_mono_ns() + (uint64_t)IP_WAIT_MS * 1000000u;
	while (uf_load_relaxed_u64(&s->busy_polls) == 0 && uf_now_mono_ns() < end) {
		struct timespec ts = {0, 1000000};
		nanosleep(&ts, NULL);
	}
	uint64_t polls = uf_load_relaxed_u64(&s->busy_polls);
	uint64_t pause = uf_load_relaxed_u64(&s->idle_pause);
	int rc = uf_test_feed_thread_stop(&t);
	snprintf(ran, ranlen, "%s", uf_feed_backend_name(feed));
	uf_feed_destroy(feed);
	uf_ring_unlink(cfg.ring.name, NULL);
	assert_int_equal(rc, 0);
	assert_true(polls > 0); /* the loop ran: the gauge is its own */
	print_message("[%s, idle_pause %d] ran on %s, reported %llu\n", uf_backend_name(be), mode,
	              ran, (unsigned long long)pause);
	return pause;
}

static void test_auto_spins_with_sqpoll_and_pauses_without(void **state)
{
	char ran[32];
	(void)state;
	/* io_uring: SQPOLL on this kernel; a kernel that refused it runs without, and pauses */
	uint64_t p = ip_case(UF_BACKEND_IO_URING, 0, UF_FEED_IDLE_PAUSE_AUTO, ran, sizeof(ran));
	assert_int_equal(p, strcmp(ran, "io_uring") == 0 ? 0 : 1);
	assert_int_equal(
	    ip_case(UF_BACKEND_IO_URING_NOSQPOLL, 1, UF_FEED_IDLE_PAUSE_AUTO, ran, sizeof(ran)), 1);
	assert_int_equal(ip_case(UF_BACKEND_RECVMMSG, 2, UF_FEED_IDLE_PAUSE_AUTO, ran, sizeof(ran)),
	                 1);
}

static void test_on_and_off_hold_whatever_the_back_end(void **state)
{
	char ran[32];
	(void)state;
	assert_int_equal(ip_case(UF_BACKEND_IO_URING, 3, UF_FEED_IDLE_PAUSE_ON, ran, sizeof(ran)),
	                 1);
	assert_int_equal(
	    ip_case(UF_BACKEND_IO_URING_NOSQPOLL, 4, UF_FEED_IDLE_PAUSE_OFF, ran, sizeof(ran)), 0);
	assert_int_equal(ip_case(UF_BACKEND_RECVMMSG, 5, UF_FEED_IDLE_PAUSE_OFF, ran, sizeof(ran)),
	                 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_auto_spins_with_sqpoll_and_pauses_without),
	    cmocka_unit_test(test_on_and_off_hold_whatever_the_back_end),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
