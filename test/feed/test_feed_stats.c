/* The stats pieces the stage timing and the gauges rest on: the tick clock measures what
 * CLOCK_MONOTONIC measures (TSC calibration or the CLOCK_REALTIME fallback), wall time from
 * an anchor tracks CLOCK_REALTIME, stage names cover the enum, and the session seqlock gives
 * readers whole strings while a writer thread changes it as fast as it can. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "common/uf_tick.h"
#include "common/uf_time.h"
#include "feed/uf_feed_stats.h"

/* One comparison over a 30 ms sleep; 1 when the tick clock agrees within 2 % and wall time
 * from the anchor within 0.2 ms. A preemption between two paired reads can spoil one try on
 * a loaded machine: the caller gives it three. */
static int clock_agrees(struct uf_tick_clock *c)
{
	struct timespec w = {.tv_sec = 0, .tv_nsec = 30000000};
	uint64_t m0 = uf_now_mono_ns(), k0 = uf_tick_now(c);
	nanosleep(&w, NULL);
	uint64_t m1 = uf_now_mono_ns(), k1 = uf_tick_now(c);
	double want = (double)(m1 - m0), got = (double)uf_tick_ns(c, k1 - k0);
	print_message("tsc %d: %.0f ns by the tick clock, %.0f ns by CLOCK_MONOTONIC\n", c->tsc,
	              got, want);
	if (!(got > want * 0.98 && got < want * 1.02))
		return 0;
	uf_tick_anchor(c);
	nanosleep(&w, NULL);
	uint64_t r0 = uf_now_realtime_ns();
	uint64_t est = uf_tick_realtime(c, uf_tick_now(c));
	uint64_t r1 = uf_now_realtime_ns();
	return est + 200000 > r0 && est < r1 + 200000;
}

static void check_clock(struct uf_tick_clock *c)
{
	int ok = 0;
	for (int i = 0; i < 3 && !ok; i++)
		ok = clock_agrees(c);
	assert_true(ok);
}

static void test_tick_clock_measures_like_the_system_clocks(void **state)
{
	(void)state;
	struct uf_tick_clock c, fallback;
	uf_tick_init(&c, 20000000);
	check_clock(&c);
	memset(&fallback, 0, sizeof(fallback));
	fallback.mult = 1ull << 32; /* hosts without a usable TSC: ticks are ns */
	check_clock(&fallback);
}

static void test_stage_names_cover_the_enum(void **state)
{
	(void)state;
	for (unsigned s = 0; s < UF_STAGE_COUNT; s++)
		assert_non_null(uf_stage_name(s));
	assert_string_equal(uf_stage_name(UF_STAGE_RECEIVE), "receive");
	assert_string_equal(uf_stage_name(UF_STAGE_IMAGE), "image");
	assert_null(uf_stage_name(UF_STAGE_COUNT));
}

static struct uf_feed_stats shared;
static volatile int stop_writer;

static void *session_writer(void *arg)
{
	(void)arg;
	for (unsigned long i = 0; !stop_writer; i++)
		uf_feed_stats_set_session(&shared, (i & 1) ? "AAAAAAAAAA" : "BBBBBBBBBB", 10);
	return NULL;
}

static void test_session_reads_are_never_torn(void **state)
{
	(void)state;
	static struct uf_feed_stats copy;
	pthread_t t;
	int seen_a = 0, seen_b = 0;
	uf_feed_stats_set_session(&shared, "AAAAAAAAAA", 10);
	stop_writer = 0;
	assert_int_equal(pthread_create(&t, NULL, session_writer, NULL), 0);
	for (int i = 0; i < 20000; i++) {
		uf_feed_stats_read(&shared, &copy);
		if (strcmp(copy.session, "AAAAAAAAAA") == 0)
			seen_a = 1;
		else if (strcmp(copy.session, "BBBBBBBBBB") == 0)
			seen_b = 1;
		else if (copy.session[0] != '\0') /* "" only if the writer seemed stuck */
			fail_msg("torn session read: \"%s\"", copy.session);
	}
	stop_writer = 1;
	pthread_join(t, NULL);
	print_message("saw A %d, B %d\n", seen_a, seen_b);
	assert_true(seen_a || seen_b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_tick_clock_measures_like_the_system_clocks),
	    cmocka_unit_test(test_stage_names_cover_the_enum),
	    cmocka_unit_test(test_session_reads_are_never_torn),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
