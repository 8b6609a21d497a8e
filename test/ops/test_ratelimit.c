/* Rate-limited log lines (common/uf_ratelimit.h), driven by a made-up clock: the burst, the
 * count of suppressed lines handed to the next allowed one, a new window after the interval,
 * and a clock that starts at 0. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "common/uf_ratelimit.h"

#define MS 1000000ull

static void test_ratelimit_allows_burst_then_counts_the_rest(void **state)
{
	struct uf_ratelimit rl = uf_ratelimit_init(1000 * MS, 3);
	uint64_t sup = 99;

	for (int i = 0; i < 3; i++) {
		assert_int_equal(uf_ratelimit_allow(&rl, 5000 * MS + (uint64_t)i * MS, &sup), 1);
		assert_int_equal(sup, 0);
	}
	sup = 99;
	for (int i = 0; i < 41; i++)
		assert_int_equal(uf_ratelimit_allow(&rl, 5100 * MS + (uint64_t)i, &sup), 0);
	assert_int_equal(sup, 99); /* untouched when not allowed */
	/* Still inside the window (999 ms after its start): held back. */
	assert_int_equal(uf_ratelimit_allow(&rl, 5999 * MS, &sup), 0);
	/* The window ends: the next line goes out and carries the 42 held back. */
	assert_int_equal(uf_ratelimit_allow(&rl, 6000 * MS, &sup), 1);
	assert_int_equal(sup, 42);
	assert_int_equal(uf_ratelimit_allow(&rl, 6001 * MS, &sup), 1);
	assert_int_equal(sup, 0);
}

static void test_ratelimit_clock_starting_at_zero(void **state)
{
	struct uf_ratelimit rl = uf_ratelimit_init(10, 1);
	uint64_t sup = 99;

	assert_int_equal(uf_ratelimit_allow(&rl, 0, &sup), 1);
	assert_int_equal(uf_ratelimit_allow(&rl, 5, &sup), 0);
	assert_int_equal(uf_ratelimit_allow(&rl, 10, &sup), 0); /* window began at 1: 9 later */
	assert_int_equal(uf_ratelimit_allow(&rl, 11, &sup), 1);
	assert_int_equal(sup, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_ratelimit_allows_burst_then_counts_the_rest),
	    cmocka_unit_test(test_ratelimit_clock_starting_at_zero),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
