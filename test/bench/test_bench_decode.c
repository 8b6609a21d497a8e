/* uf-bench decode: a tiny generated day, --json parses with the rows and ratios it promises,
 * every figure positive and consistent; bad usage exits 2. Never asserts on speed. */
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "tb_util.h"

static json_t *run_json(const char *const argv[])
{
	struct tb_run r;
	json_error_t e;
	json_t *j;

	tb_run_tool("uf-bench", argv, 50, &r);
	assert_int_equal(r.status, 0);
	j = json_loads(r.out, 0, &e);
	if (!j)
		fail_msg("stdout is not JSON (%s): %.300s", e.text, r.out);
	tb_run_free(&r);
	return j;
}

static void test_decode_json_has_baseline_and_prefetch_rows_per_layout(void **state)
{
	const char *argv[] = {"uf-bench", "decode", "--messages", "20000",
	                      "--reps",   "1",      "--json",     NULL};
	json_t *j = run_json(argv), *ls;
	size_t i;
	json_t *l;

	(void)state;
	assert_string_equal(json_string_value(json_object_get(j, "bench")), "decode");
	assert_int_equal(json_integer_value(json_object_get(j, "messages")), 20000);
	assert_true(json_integer_value(json_object_get(j, "packets")) > 0);
	assert_true(json_is_true(json_object_get(j, "ok")));
	ls = json_object_get(j, "layouts");
	assert_int_equal(json_array_size(ls), 2);
	assert_string_equal(json_string_value(json_object_get(json_array_get(ls, 0), "layout")),
	                    "sequential");
	assert_string_equal(json_string_value(json_object_get(json_array_get(ls, 1), "layout")),
	                    "scattered");
	json_array_foreach(ls, i, l)
	{
		json_t *rows = json_object_get(l, "rows"), *row;
		size_t k;
		assert_int_equal(json_array_size(rows), 3);
		assert_non_null(
		    strstr(json_string_value(json_object_get(json_array_get(rows, 0), "pass")),
		           "baseline"));
		json_array_foreach(rows, k, row)
		{
			double ns = json_real_value(json_object_get(row, "ns_per_msg"));
			double mps = json_real_value(json_object_get(row, "msgs_per_s"));
			assert_true(json_integer_value(json_object_get(row, "best_ns")) > 0);
			assert_true(ns > 0 && mps > 0);
			/* the two views of one measurement agree: rate x time per message = 1 s */
			assert_true(ns * mps > 0.999e9 && ns * mps < 1.001e9);
		}
		assert_true(json_real_value(json_object_get(l, "decode_off_vs_baseline")) > 0);
		assert_true(json_real_value(json_object_get(l, "decode_on_vs_baseline")) > 0);
		assert_true(json_real_value(json_object_get(l, "prefetch_on_vs_off")) > 0);
	}
	json_decref(j);
}

static void test_decode_table_names_the_baseline(void **state)
{
	const char *argv[] = {"uf-bench", "decode", "--messages", "5000", "--reps", "1", NULL};
	struct tb_run r;

	(void)state;
	tb_run_tool("uf-bench", argv, 50, &r);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "read every byte (baseline)"));
	assert_non_null(strstr(r.out, "decode prefetch off"));
	assert_non_null(strstr(r.out, "scattered"));
	tb_run_free(&r);
}

static void test_decode_bad_usage_exits_2(void **state)
{
	const char *bad_num[] = {"uf-bench", "decode", "--reps", "zero", NULL};
	const char *missing[] = {"uf-bench", "decode", "/nonexistent/day.itch", NULL};
	const char *unknown[] = {"uf-bench", "decode", "--frobnicate", NULL};
	struct tb_run r;

	(void)state;
	tb_run_tool("uf-bench", bad_num, 20, &r);
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err, "--reps"));
	tb_run_free(&r);
	tb_run_tool("uf-bench", missing, 20, &r);
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err, "/nonexistent/day.itch"));
	tb_run_free(&r);
	tb_run_tool("uf-bench", unknown, 20, &r);
	assert_int_equal(r.status, 2);
	tb_run_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_decode_json_has_baseline_and_prefetch_rows_per_layout),
	    cmocka_unit_test(test_decode_table_names_the_baseline),
	    cmocka_unit_test(test_decode_bad_usage_exits_2),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
