/* uf-bench idle: the JSON has one row per set and wait (two, spin and touch, when there is a
 * wait), every figure positive and p90 >= median; bad values exit 2 naming the option. Never
 * asserts on speed. */
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "tb_util.h"

static void test_idle_json_has_a_row_per_set_wait_and_mode(void **state)
{
	const char *argv[] = {"uf-bench", "idle", "--sizes", "16,64", "--gaps", "0,10",
	                      "--reps",   "20",   "--cpu",   "0",     "--json", NULL};
	struct tb_run r;
	json_error_t e;
	json_t *j, *rows, *row;
	size_t k;
	int spin = 0, touch = 0;

	(void)state;
	tb_run_tool("uf-bench", argv, 30, &r);
	assert_int_equal(r.status, 0);
	j = json_loads(r.out, 0, &e);
	if (!j)
		fail_msg("stdout is not JSON (%s): %.300s", e.text, r.out);
	assert_string_equal(json_string_value(json_object_get(j, "bench")), "idle");
	assert_int_equal(json_integer_value(json_object_get(j, "cpu")), 0);
	assert_int_equal(json_integer_value(json_object_get(j, "reps")), 20);
	rows = json_object_get(j, "rows");
	assert_int_equal(json_array_size(rows), 6); /* 2 sets x (no wait: spin; 10 us: both) */
	json_array_foreach(rows, k, row)
	{
		const char *mode = json_string_value(json_object_get(row, "mode"));
		json_int_t wait = json_integer_value(json_object_get(row, "wait_us"));
		double med = json_real_value(json_object_get(row, "median_ns_per_load"));
		double p90 = json_real_value(json_object_get(row, "p90_ns_per_load"));
		assert_non_null(mode);
		if (!strcmp(mode, "touch")) {
			touch++;
			assert_int_equal(wait, 10);
		} else {
			assert_string_equal(mode, "spin");
			spin++;
		}
		assert_true(med > 0);
		assert_true(p90 >= med);
	}
	assert_int_equal(spin, 4);
	assert_int_equal(touch, 2);
	json_decref(j);
	tb_run_free(&r);
}

static void test_idle_refuses_bad_values(void **state)
{
	static const char *const cases[][3] = {
	    {"--sizes", "0", "--sizes"},     {"--sizes", "16,", "--sizes"},
	    {"--gaps", "x", "--gaps"},       {"--gaps", "1,2,3,4,5,6,7,8,9", "--gaps"},
	    {"--reps", "0", "--reps"},       {"--cpu", "100000", "--cpu"},
	    {"--cpu", "1023", "cannot pin"}, {"--bogus", "1", "--bogus"},
	};
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *argv[] = {"uf-bench", "idle", cases[i][0], cases[i][1], NULL};
		struct tb_run r;
		tb_run_tool("uf-bench", argv, 20, &r);
		if (r.status != 2 || !strstr(r.err, cases[i][2]))
			fail_msg("%s %s: status %d, stderr %.200s", cases[i][0], cases[i][1],
			         r.status, r.err);
		tb_run_free(&r);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_idle_json_has_a_row_per_set_wait_and_mode),
	    cmocka_unit_test(test_idle_refuses_bad_values),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
