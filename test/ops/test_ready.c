/* /ready decision (daemon/ready.c): each condition of not-ready forced on one feed
 * at a time, silence that only counts in session, and the reasons in the body. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "daemon/ready.h"

#define S 1000000000ull

static const struct uf_ready_policy pol = {.silent_ns = 5 * S};
static char why[1024];

/* Two healthy feeds at t = 100 s: both lines heard 0.5 s ago, in session. */
static void healthy(struct uf_ready_feed f[2])
{
	static const char *names[2] = {"nasdaq", "bx"};
	for (int i = 0; i < 2; i++) {
		memset(&f[i], 0, sizeof(f[i]));
		f[i].name = names[i];
		f[i].running = 1;
		f[i].messages = 1000;
		f[i].session_open = 1;
		f[i].nlines = 2;
		f[i].lines[0] = (struct uf_ready_line){"A", 100 * S - S / 2};
		f[i].lines[1] = (struct uf_ready_line){"B", 100 * S - S / 2};
	}
}

static void test_ready_when_data_flows_and_books_are_good(void **state)
{
	struct uf_ready_feed f[2];

	healthy(f);
	assert_int_equal(uf_ready_decide(f, 2, 100 * S, &pol, why, sizeof(why)), 1);
	assert_string_equal(why, "ready: 2 feeds");
	assert_int_equal(uf_ready_decide(f, 1, 100 * S, &pol, why, sizeof(why)), 1);
	assert_string_equal(why, "ready: 1 feed");
}

static void test_not_ready_before_any_data(void **state)
{
	struct uf_ready_feed f[2];

	healthy(f);
	f[1].messages = 0;
	f[1].session_open = 0;
	assert_int_equal(uf_ready_decide(f, 2, 100 * S, &pol, why, sizeof(why)), 0);
	assert_string_equal(why, "not ready: feed bx: no data yet");
	assert_int_equal(uf_ready_decide(f, 0, 100 * S, &pol, why, sizeof(why)), 0);
	assert_string_equal(why, "not ready: no feeds");
}

static void test_silent_line_counts_only_in_session(void **state)
{
	struct uf_ready_feed f[2];

	healthy(f);
	f[0].lines[1].last_packet_ns = 100 * S - 7200000000ull; /* B silent 7.2 s */
	assert_int_equal(uf_ready_decide(f, 2, 100 * S, &pol, why, sizeof(why)), 0);
	assert_string_equal(why, "not ready: feed nasdaq: line B silent for 7.2 s");
	/* Exactly at the threshold is still fine; past it is not. */
	f[0].lines[1].last_packet_ns = 95 * S;
	assert_int_equal(uf_ready_decide(f, 2, 100 * S, &pol, why, sizeof(why)), 1);
	assert_int_equal(uf_ready_decide(f, 2, 100 * S + 1, &pol, why, sizeof(why)), 0);
	/* After the end of session the lines go quiet: expected. */
	f[0].lines[1].last_packet_ns = 100 * S - 7200000000ull;
	f[0].session_open = 0;
	assert_int_equal(uf_ready_decide(f, 2, 100 * S, &pol, why, sizeof(why)), 1);
	/* A line that never received anything in an open session. */
	f[0].session_open = 1;
	f[0].lines[1].last_packet_ns = 0;
	assert_int_equal(uf_ready_decide(f, 2, 100 * S, &pol, why, sizeof(why)), 0);
	assert_string_equal(why, "not ready: feed nasdaq: line B: nothing received this session");
}

static void test_stale_books_and_recovery_are_not_ready(void **state)
{
	struct uf_ready_feed f[2];

	healthy(f);
	f[1].books_stale = 3;
	assert_int_equal(uf_ready_decide(f, 2, 100 * S, &pol, why, sizeof(why)), 0);
	assert_string_equal(why, "not ready: feed bx: 3 books stale");
	f[1].books_stale = 0;
	f[0].recovery_in_progress = 1;
	assert_int_equal(uf_ready_decide(f, 2, 100 * S, &pol, why, sizeof(why)), 0);
	assert_string_equal(why, "not ready: feed nasdaq: recovery in progress");
}

static void test_every_reason_is_listed_and_the_body_is_bounded(void **state)
{
	struct uf_ready_feed f[2];
	char small[24];

	healthy(f);
	f[0].running = 0;
	f[0].books_stale = 9; /* not reported: the feed does not run */
	f[1].books_stale = 1;
	f[1].recovery_in_progress = 1;
	f[1].lines[0].last_packet_ns = 90 * S;
	assert_int_equal(uf_ready_decide(f, 2, 100 * S, &pol, why, sizeof(why)), 0);
	assert_string_equal(why, "not ready: feed nasdaq: not running; feed bx: line A silent for "
	                         "10.0 s; feed bx: 1 books stale; feed bx: recovery in progress");
	assert_int_equal(uf_ready_decide(f, 2, 100 * S, &pol, small, sizeof(small)), 0);
	assert_int_equal(strlen(small), sizeof(small) - 1);
	assert_memory_equal(small, "not ready: feed nasdaq:", sizeof(small) - 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_ready_when_data_flows_and_books_are_good),
	    cmocka_unit_test(test_not_ready_before_any_data),
	    cmocka_unit_test(test_silent_line_counts_only_in_session),
	    cmocka_unit_test(test_stale_books_and_recovery_are_not_ready),
	    cmocka_unit_test(test_every_reason_is_listed_and_the_body_is_bounded),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
