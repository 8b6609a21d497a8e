/* The tools' command-line number parser (common/uf_parse.h): the whole argument is the
 * number, bounds are inclusive, and what strtoull/strtod would quietly take ("5x", "-1"
 * wrapped, "", NaN, an overflow, an empty list item) is refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "common/uf_parse.h"

static void test_parse_u64_whole_argument_in_bounds(void **state)
{
	uint64_t v;

	(void)state;
	assert_int_equal(uf_parse_u64("42", 1, 100, &v), 0);
	assert_int_equal(v, 42);
	assert_int_equal(uf_parse_u64("1", 1, 100, &v), 0); /* bounds are inclusive */
	assert_int_equal(uf_parse_u64("100", 1, 100, &v), 0);
	assert_int_equal(uf_parse_u64("0", 1, 100, &v), -1);         /* below */
	assert_int_equal(uf_parse_u64("101", 1, 100, &v), -1);       /* above */
	assert_int_equal(uf_parse_u64("5x", 0, 100, &v), -1);        /* trailing junk */
	assert_int_equal(uf_parse_u64("", 0, 100, &v), -1);          /* nothing */
	assert_int_equal(uf_parse_u64("-1", 0, UINT64_MAX, &v), -1); /* strtoull wraps it */
	assert_int_equal(uf_parse_u64("18446744073709551615", 0, UINT64_MAX, &v), 0);
	assert_true(v == UINT64_MAX);
	assert_int_equal(uf_parse_u64("18446744073709551616", 0, UINT64_MAX, &v), -1);
}

static void test_parse_i64_takes_negatives_in_bounds(void **state)
{
	int64_t v;

	(void)state;
	assert_int_equal(uf_parse_i64("-1", -1, 10, &v), 0);
	assert_int_equal(v, -1);
	assert_int_equal(uf_parse_i64("-2", -1, 10, &v), -1);
	assert_int_equal(uf_parse_i64("11", -1, 10, &v), -1);
	assert_int_equal(uf_parse_i64("3 ", -1, 10, &v), -1);
	assert_int_equal(uf_parse_i64("", -1, 10, &v), -1);
	assert_int_equal(uf_parse_i64("9223372036854775808", INT64_MIN, INT64_MAX, &v), -1);
}

static void test_parse_double_refuses_nan_junk_and_overflow(void **state)
{
	double v;

	(void)state;
	assert_int_equal(uf_parse_double("0.5", 0, 1, &v), 0);
	assert_true(v == 0.5);
	assert_int_equal(uf_parse_double("1e3", 0, 1000, &v), 0);
	assert_true(v == 1000);
	assert_int_equal(uf_parse_double("1.5", 0, 1, &v), -1);
	assert_int_equal(uf_parse_double("-0.1", 0, 1, &v), -1);
	assert_int_equal(uf_parse_double("nan", 0, HUGE_VAL, &v), -1); /* never in range */
	assert_int_equal(uf_parse_double("inf", 0, HUGE_VAL, &v), 0);  /* no upper bound */
	assert_int_equal(uf_parse_double("inf", 0, 1e9, &v), -1);
	assert_int_equal(uf_parse_double("2s", 0, 10, &v), -1);
	assert_int_equal(uf_parse_double("", 0, 10, &v), -1);
	assert_int_equal(uf_parse_double("1e999", 0, HUGE_VAL, &v), -1); /* ERANGE */
}

static void test_parse_u64_list_items_and_cap(void **state)
{
	uint64_t v[3] = {0, 0, 0};

	(void)state;
	assert_int_equal(uf_parse_u64_list("7", ',', 1, 100, v, 3), 1);
	assert_int_equal(v[0], 7);
	assert_int_equal(uf_parse_u64_list("1,20,3", ',', 1, 100, v, 3), 3);
	assert_int_equal(v[0], 1);
	assert_int_equal(v[1], 20);
	assert_int_equal(v[2], 3);
	assert_int_equal(uf_parse_u64_list("1,2,3,4", ',', 1, 100, v, 3), -1); /* over cap */
	assert_int_equal(uf_parse_u64_list("1,,3", ',', 1, 100, v, 3), -1);    /* empty item */
	assert_int_equal(uf_parse_u64_list("1,", ',', 1, 100, v, 3), -1);
	assert_int_equal(uf_parse_u64_list("", ',', 1, 100, v, 3), -1);
	assert_int_equal(uf_parse_u64_list("1,0", ',', 1, 100, v, 3), -1); /* out of range */
	assert_int_equal(uf_parse_u64_list("1,x", ',', 1, 100, v, 3), -1);
	assert_int_equal(uf_parse_u64_list("1,-2", ',', 1, UINT64_MAX, v, 3), -1);
	assert_int_equal(uf_parse_u64_list("1,000000000000000000000000002", ',', 1, 100, v, 3),
	                 -1); /* an item longer than any number */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_parse_u64_whole_argument_in_bounds),
	    cmocka_unit_test(test_parse_i64_takes_negatives_in_bounds),
	    cmocka_unit_test(test_parse_double_refuses_nan_junk_and_overflow),
	    cmocka_unit_test(test_parse_u64_list_items_and_cap),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
