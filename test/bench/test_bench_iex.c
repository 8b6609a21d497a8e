/* uf-bench decode and book with the real IEX DEEP capture ($UF_SHARED_DATA, conformance
 * label): both report DEEP beside ITCH in the same run (--json "iex_deep"), with every one of
 * the capture's 391,999 messages decoded (the count `uf-decode stats` gives, test_iex_tools)
 * and the passes clean. Never asserts on speed. */
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tb_util.h"

static int setup(void **s)
{
	(void)s;
	const char *d = getenv("UF_SHARED_DATA");
	if (!d || !*d) {
		fprintf(stderr, "UF_SHARED_DATA is not set: the IEX DEEP capture is unavailable\n");
		return -1;
	}
	return 0;
}

/* Two passes: every pass must build the same records (a second pass over a publisher whose
 * directory survived the first announced no symbol, and the run said "passes disagreed"). */
static json_t *run(const char *cmd)
{
	const char *argv[] = {"uf-bench", cmd, "--messages", "20000",
	                      "--reps",   "2", "--json",     NULL};
	struct tb_run r;
	json_error_t e;
	tb_run_tool("uf-bench", argv, 100, &r);
	if (r.status != 0)
		fail_msg("uf-bench %s exited %d: %.500s", cmd, r.status, r.err);
	json_t *j = json_loads(r.out, 0, &e);
	if (!j)
		fail_msg("stdout is not JSON (%s): %.300s", e.text, r.out);
	tb_run_free(&r);
	assert_true(json_is_true(json_object_get(j, "ok")));
	assert_int_equal(json_integer_value(json_object_get(j, "messages")), 20000); /* ITCH */
	return j;
}

static void test_decode_reports_deep_beside_itch(void **s)
{
	(void)s;
	json_t *j = run("decode");
	json_t *x = json_object_get(j, "iex_deep");
	assert_non_null(x);
	assert_int_equal(json_integer_value(json_object_get(x, "messages")), 391999);
	assert_true(json_integer_value(json_object_get(x, "segments")) > 0);
	assert_true(json_real_value(json_object_get(x, "decode_ns_per_msg")) > 0);
	json_decref(j);
}

static void test_book_reports_deep_beside_itch(void **s)
{
	(void)s;
	json_t *j = run("book");
	json_t *x = json_object_get(j, "iex_deep");
	assert_non_null(x);
	assert_int_equal(json_integer_value(json_object_get(x, "messages")), 391999);
	assert_true(json_real_value(json_object_get(x, "decode_ns_per_msg")) > 0);
	assert_true(json_real_value(json_object_get(x, "decode_book_ns_per_msg")) > 0);
	json_decref(j);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_decode_reports_deep_beside_itch),
	    cmocka_unit_test(test_book_reports_deep_beside_itch),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
