/* Watchdog decision (daemon/watchdog.c): the pure rule, and a feed-like thread
 * counting its passes as uf_feed_run does, made to hang so the ping must stop. (The real
 * feed loop's beats: test_watchdog_feed.) */
#include <pthread.h>
#include <semaphore.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <cmocka.h>

#include "daemon/watchdog.h"

static void test_watchdog_pings_when_every_feed_moved(void **state)
{
	uint64_t prev[3] = {10, 0, 7}, cur[3] = {11, 900, 8};
	unsigned stuck = 99;

	assert_int_equal(uf_watchdog_decide(prev, cur, NULL, 3, &stuck), 1);
	assert_int_equal(stuck, 99);
}

static void test_watchdog_withholds_ping_for_a_stuck_feed(void **state)
{
	uint64_t prev[3] = {10, 5, 7}, cur[3] = {11, 5, 7};
	unsigned stuck = 99;

	assert_int_equal(uf_watchdog_decide(prev, cur, NULL, 3, &stuck), 0);
	assert_int_equal(stuck, 1); /* the first one that did not move */
	assert_int_equal(uf_watchdog_decide(prev, cur, NULL, 3, NULL), 0);
}

static void test_watchdog_counter_wrap_is_progress(void **state)
{
	uint64_t prev[1] = {UINT64_MAX}, cur[1] = {0};

	assert_int_equal(uf_watchdog_decide(prev, cur, NULL, 1, NULL), 1);
}

static void test_watchdog_ignores_feeds_not_live(void **state)
{
	uint64_t prev[2] = {4, 9}, cur[2] = {4, 10};
	uint8_t live[2] = {0, 1};
	unsigned stuck = 99;

	assert_int_equal(uf_watchdog_decide(prev, cur, live, 2, &stuck), 1);
	live[0] = 1;
	assert_int_equal(uf_watchdog_decide(prev, cur, live, 2, &stuck), 0);
	assert_int_equal(stuck, 0);
	assert_int_equal(uf_watchdog_decide(prev, cur, NULL, 0, NULL), 1);
}

struct feedlike {
	struct uf_feed_stats st; /* the counters a feed thread keeps */
	sem_t hang;              /* posted by the test: stop looping and block */
	sem_t hung;              /* posted by the thread once it has stopped looping */
	sem_t resume;            /* posted by the test to let the thread finish */
};

/* A feed thread's loop: one busy poll or one batch per pass, as uf_feed_run counts them,
 * until told to hang. */
static void *feedlike_run(void *arg)
{
	struct feedlike *f = arg;

	for (uint64_t pass = 0; sem_trywait(&f->hang) != 0; pass++)
		uf_stat_add(pass % 3 ? &f->st.busy_polls : &f->st.batches, 1);
	sem_post(&f->hung);
	sem_wait(&f->resume); /* the "stuck" thread: blocked, no pass any more */
	return NULL;
}

/* Reads the beats until they differ from `from` (bounded: 10 s of 1 ms naps). */
static uint64_t wait_moved(const struct uf_feed_stats *st, uint64_t from)
{
	struct timespec ms = {0, 1000000};

	for (int i = 0; i < 10000; i++) {
		uint64_t v = uf_watchdog_beats(st);
		if (v != from)
			return v;
		nanosleep(&ms, NULL);
	}
	fail_msg("heartbeat never moved from %llu", (unsigned long long)from);
	return from;
}

static void test_watchdog_stops_pinging_when_a_feed_thread_hangs(void **state)
{
	static struct feedlike f;
	pthread_t t;
	uint64_t prev, cur;

	sem_init(&f.hang, 0, 0);
	sem_init(&f.hung, 0, 0);
	sem_init(&f.resume, 0, 0);
	assert_int_equal(pthread_create(&t, NULL, feedlike_run, &f), 0);

	prev = uf_watchdog_beats(&f.st);
	cur = wait_moved(&f.st, prev);
	assert_int_equal(uf_watchdog_decide(&prev, &cur, NULL, 1, NULL), 1);

	sem_post(&f.hang);
	sem_wait(&f.hung); /* the thread has made its last pass */
	prev = uf_watchdog_beats(&f.st);
	cur = uf_watchdog_beats(&f.st);
	unsigned stuck = 99;
	assert_int_equal(uf_watchdog_decide(&prev, &cur, NULL, 1, &stuck), 0);
	assert_int_equal(stuck, 0);

	sem_post(&f.resume);
	pthread_join(t, NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_watchdog_pings_when_every_feed_moved),
	    cmocka_unit_test(test_watchdog_withholds_ping_for_a_stuck_feed),
	    cmocka_unit_test(test_watchdog_counter_wrap_is_progress),
	    cmocka_unit_test(test_watchdog_ignores_feeds_not_live),
	    cmocka_unit_test(test_watchdog_stops_pinging_when_a_feed_thread_hangs),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
