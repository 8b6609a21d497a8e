/* The feed's busy clock (config "busy_clock", issue 26 item 2): with it on, a feed that
 * receives a generated day over loopback multicast counts the time of its working loop turns
 * in stats.busy_ns: more than nothing, and never more than the wall time the feed thread ran;
 * with it off, the same traffic leaves busy_ns at 0. Two back ends: io_uring without SQPOLL
 * (item 2's, a busy-polling loop) and epoll (its poll sleeps in epoll_wait: the sleep is not
 * work, so busy_ns stays far below the run's wall time on a day sent slowly).
 * No timed assertion: the bounds hold on any host, however loaded. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <cmocka.h>

#include "common/uf_atomic.h"
#include "feed/uf_feed.h"
#include "ring/uf_ring.h"
#include "feed_test_util.h"
#include "test/common/uf_test_feed_thread.h"

#define BC_MESSAGES  20000
#define BC_RATE      "20000" /* ~1 s of replay in ~500 datagrams a line: mostly waiting */
#define BC_DONE_MS   30000   /* a run that has not seen its whole day by then fails */
#define BC_OCTET     99      /* groups 239.99.<backend>.<2 sc + line> */
#define BC_PORT_BASE 29100   /* each run its own group pair (sc), as the other feed tests */

static char g_day[256];

struct bc_run {
	struct uf_feed_config cfg;
	struct uf_feed *feed;
	struct uf_test_feed_thread thr;
	struct uf_feed_stats st; /* at the end */
	uint64_t wall_ns;        /* thread start to join: the feed thread's whole run */
};

/* Runs a feed on `be` (busy clock `on`) while uf-replay sends the day to it, until every
 * message is accounted for and the end of session was seen; stops it and keeps its stats. */
static void bc_run_day(struct bc_run *r, enum uf_backend be, int sc, int on)
{
	char err[256], a[64], b[64], ga[INET_ADDRSTRLEN], gb[INET_ADDRSTRLEN];
	ft_config_lines(&r->cfg, "bc", be, sc, BC_OCTET, BC_PORT_BASE, 5);
	r->cfg.busy_clock = on;
	r->cfg.recovery.wait_ms = 20; /* no server: a hole on both lines is given up */
	r->cfg.recovery.wait_packets = 64;
	if (uf_feed_create(&r->cfg, &r->feed, err, sizeof(err)) < 0)
		fail_msg("uf_feed_create: %s", err);
	uint64_t t0 = uf_now_mono_ns();
	uf_test_feed_thread_start(&r->thr, r->feed);

	inet_ntop(AF_INET, &r->cfg.lines[0].group, ga, sizeof(ga));
	inet_ntop(AF_INET, &r->cfg.lines[1].group, gb, sizeof(gb));
	snprintf(a, sizeof(a), "%s:%u", ga, r->cfg.lines[0].port);
	snprintf(b, sizeof(b), "%s:%u", gb, r->cfg.lines[1].port);
	char *argv[] = {"uf-replay", "--in",   g_day,   "--a",    a,    "--b",
	                b,           "--rate", BC_RATE, "--seed", "42", "--interface",
	                "127.0.0.1", NULL};
	/* The feed's sockets are open since uf_feed_create: nothing sent is lost to a late
	 * start. */
	assert_int_equal(ft_run(argv, NULL, BC_DONE_MS), 0);

	const struct uf_feed_stats *s = uf_feed_stats(r->feed);
	uint64_t end = uf_now_mono_ns() + (uint64_t)BC_DONE_MS * 1000000u;
	while (
	    !(uf_load_relaxed_u64(&s->end_of_session) >= 1 &&
	      uf_load_relaxed_u64(&s->messages) + uf_load_relaxed_u64(&s->messages_unrecovered) >=
	          BC_MESSAGES) &&
	    uf_now_mono_ns() < end) {
		struct timespec ts = {0, 2000000};
		nanosleep(&ts, NULL);
	}
	int rc = uf_test_feed_thread_stop(&r->thr);
	r->wall_ns = uf_now_mono_ns() - t0;
	assert_int_equal(rc, 0);
	uf_feed_stats_read(s, &r->st);
	uf_feed_destroy(r->feed);
	uf_ring_unlink(r->cfg.ring.name, NULL);
	print_message("[%s busy_clock %d] messages %llu unrecovered %llu batches %llu busy_ns "
	              "%llu wall_ns %llu\n",
	              uf_backend_name(be), on, (unsigned long long)r->st.messages,
	              (unsigned long long)r->st.messages_unrecovered,
	              (unsigned long long)r->st.batches, (unsigned long long)r->st.busy_ns,
	              (unsigned long long)r->wall_ns);
	assert_int_equal(r->st.end_of_session, 1);
	assert_int_equal(r->st.messages + r->st.messages_unrecovered, BC_MESSAGES);
	assert_true(r->st.batches > 0);
}

static void bc_check(enum uf_backend be, int sc)
{
	static struct bc_run on, off; /* big (the stats' histograms): not on the stack */
	bc_run_day(&on, be, sc, 1);
	/* with the clock on: the working turns took time, and no more than the run itself */
	assert_true(on.st.busy_ns > 0);
	assert_true(on.st.busy_ns <= on.wall_ns);
	/* epoll sleeps in epoll_wait until each datagram comes: those sleeps (nearly the whole
	 * second of replay) are not work. Counted from the top of the turn they would make
	 * busy_ns most of the run; the work itself is some microseconds a datagram. */
	if (be == UF_BACKEND_EPOLL)
		assert_true(on.st.busy_ns < on.wall_ns / 2);
	/* off: the same traffic, nothing counted */
	bc_run_day(&off, be, sc + 1, 0);
	assert_int_equal(off.st.busy_ns, 0);
	assert_int_equal(off.st.messages + off.st.messages_unrecovered,
	                 on.st.messages + on.st.messages_unrecovered);
}

static void test_busy_clock_io_uring_counts_working_turns_only_when_on(void **state)
{
	(void)state;
	bc_check(UF_BACKEND_IO_URING_NOSQPOLL, 0);
}

static void test_busy_clock_epoll_counts_working_turns_only_when_on(void **state)
{
	(void)state;
	bc_check(UF_BACKEND_EPOLL, 2);
}

static int bc_setup(void **state)
{
	(void)state;
	if (!ft_use_ring_dir() || !ft_tmpdir())
		return -1;
	return ft_gen_day(g_day, sizeof(g_day), BC_MESSAGES, 24, 7);
}

static int bc_teardown(void **state)
{
	(void)state;
	ft_rm_dir(ft_use_ring_dir());
	uf_test_rm_tree(ft_tmpdir());
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_busy_clock_io_uring_counts_working_turns_only_when_on),
	    cmocka_unit_test(test_busy_clock_epoll_counts_working_turns_only_when_on),
	};
	return cmocka_run_group_tests(tests, bc_setup, bc_teardown);
}
