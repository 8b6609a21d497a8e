/* uf-bench book: a tiny generated day, --json has decode alone beside decode+book with
 * prefetch off and on, the books' own cost, the feed's sink row, and a clean book (a
 * generated day has no integrity errors; the sink's image equals the books). Never asserts
 * on speed. */
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "tb_util.h"

static void test_book_json_has_decode_baseline_and_clean_books(void **state)
{
	const char *argv[] = {"uf-bench", "book", "--messages", "20000",
	                      "--reps",   "2",    "--json",     NULL};
	struct tb_run r;
	json_error_t e;
	json_t *j, *rows, *row;
	size_t k;

	(void)state;
	tb_run_tool("uf-bench", argv, 50, &r);
	assert_int_equal(r.status, 0);
	j = json_loads(r.out, 0, &e);
	if (!j)
		fail_msg("stdout is not JSON (%s): %.300s", e.text, r.out);
	assert_string_equal(json_string_value(json_object_get(j, "bench")), "book");
	assert_int_equal(json_integer_value(json_object_get(j, "messages")), 20000);
	assert_true(json_is_true(json_object_get(j, "ok")));
	assert_int_equal(json_integer_value(json_object_get(j, "integrity_errors")), 0);
	assert_true(json_real_value(json_object_get(j, "records_per_msg")) > 0);
	assert_true(json_integer_value(json_object_get(j, "peak_orders")) > 0);
	assert_true(json_integer_value(json_object_get(j, "peak_levels")) > 0);
	assert_true(json_real_value(json_object_get(j, "decode_book_vs_decode")) > 0);
	assert_true(json_real_value(json_object_get(j, "prefetch_on_vs_off")) > 0);
	rows = json_object_get(j, "rows");
	assert_int_equal(json_array_size(rows), 6);
	/* the live path's rows, datagram by datagram: the same books (ok above) */
	assert_non_null(strstr(json_string_value(json_object_get(json_array_get(rows, 3), "pass")),
	                       "per datagram"));
	assert_non_null(strstr(json_string_value(json_object_get(json_array_get(rows, 4), "pass")),
	                       "datagram pf"));
	assert_true(json_real_value(json_object_get(j, "dgram_prefetch_vs_lookahead")) > 0);
	/* and the feed's sink behind it: a ring and an image, which "ok" says held the books
	 * (read back through the consumer library after the last pass) */
	assert_non_null(strstr(json_string_value(json_object_get(json_array_get(rows, 5), "pass")),
	                       "+ring +image"));
	assert_true(json_is_real(json_object_get(j, "sink_ns_per_msg")));
	assert_true(json_real_value(json_object_get(j, "sink_vs_book")) > 0);
	const char *mem = json_string_value(json_object_get(j, "book_memory"));
	assert_non_null(mem);
	assert_true(strcmp(mem, "hugetlb") == 0 || strcmp(mem, "thp") == 0 ||
	            strcmp(mem, "4k") == 0);
	assert_true(json_integer_value(json_object_get(j, "book_huge_bytes")) <=
	            json_integer_value(json_object_get(j, "book_table_bytes")));
	assert_non_null(strstr(json_string_value(json_object_get(json_array_get(rows, 0), "pass")),
	                       "decode alone"));
	assert_non_null(strstr(json_string_value(json_object_get(json_array_get(rows, 1), "pass")),
	                       "prefetch off"));
	json_array_foreach(rows, k, row)
	{
		assert_true(json_integer_value(json_object_get(row, "best_ns")) > 0);
		assert_true(json_real_value(json_object_get(row, "ns_per_msg")) > 0);
	}
	json_decref(j);
	tb_run_free(&r);
}

static void test_book_refuses_a_file_it_cannot_read(void **state)
{
	const char *argv[] = {"uf-bench", "book", "/nonexistent/day.itch", NULL};
	struct tb_run r;

	(void)state;
	tb_run_tool("uf-bench", argv, 20, &r);
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err, "/nonexistent/day.itch"));
	tb_run_free(&r);
}

/* --gap-us and --max-orders: reported in the JSON, the same books built (a smaller table, an
 * idle wait before each packet change the cost, never the records), bad values and the
 * decode command refuse them with exit 2. */
static void test_book_gap_and_table_size_change_nothing_but_the_cost(void **state)
{
	const char *plain[] = {"uf-bench", "book",    "--messages", "20000",  "--reps",
	                       "1",        "--batch", "1",          "--json", NULL};
	const char *gap[] = {"uf-bench", "book",         "--messages", "20000",  "--reps",
	                     "1",        "--batch",      "1",          "--json", "--gap-us",
	                     "5",        "--max-orders", "100000",     NULL};
	const char *bad_gap[] = {"uf-bench", "book", "--gap-us", "-1", NULL};
	const char *bad_mo[] = {"uf-bench", "book", "--max-orders", "5", NULL};
	const char *dec[] = {"uf-bench", "decode", "--gap-us", "5", NULL};
	struct tb_run r;
	json_error_t e;
	json_t *a, *b;

	(void)state;
	tb_run_tool("uf-bench", plain, 50, &r);
	assert_int_equal(r.status, 0);
	a = json_loads(r.out, 0, &e);
	assert_non_null(a);
	tb_run_free(&r);
	tb_run_tool("uf-bench", gap, 50, &r);
	assert_int_equal(r.status, 0);
	b = json_loads(r.out, 0, &e);
	if (!b)
		fail_msg("stdout is not JSON (%s): %.300s", e.text, r.out);
	tb_run_free(&r);
	assert_int_equal(json_integer_value(json_object_get(a, "gap_us")), 0);
	assert_int_equal(json_integer_value(json_object_get(a, "max_orders")), 4000000);
	assert_int_equal(json_integer_value(json_object_get(b, "gap_us")), 5);
	assert_int_equal(json_integer_value(json_object_get(b, "max_orders")), 100000);
	assert_true(json_is_true(json_object_get(b, "ok")));
	/* the same books: records, peaks, no integrity error */
	assert_true(json_real_value(json_object_get(a, "records_per_msg")) ==
	            json_real_value(json_object_get(b, "records_per_msg")));
	assert_int_equal(json_integer_value(json_object_get(a, "peak_orders")),
	                 json_integer_value(json_object_get(b, "peak_orders")));
	assert_int_equal(json_integer_value(json_object_get(b, "integrity_errors")), 0);
	json_decref(a);
	json_decref(b);
	tb_run_tool("uf-bench", bad_gap, 20, &r);
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err, "--gap-us"));
	tb_run_free(&r);
	tb_run_tool("uf-bench", bad_mo, 20, &r);
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err, "--max-orders"));
	tb_run_free(&r);
	tb_run_tool("uf-bench", dec, 20, &r);
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err, "option of uf-bench book"));
	tb_run_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_book_json_has_decode_baseline_and_clean_books),
	    cmocka_unit_test(test_book_refuses_a_file_it_cannot_read),
	    cmocka_unit_test(test_book_gap_and_table_size_change_nothing_but_the_cost),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
