/* uf-bench e2e --sizes (issue 26 item 3): one back end, one small rate, about 1.5 s of replay.
 * Exit 0; the JSON has one row per size class in order, each with the raw receiver's, the
 * back end's own receive method's (bare) and the feed's exact per-message figures; the 1-message
 * class really is one message a datagram, the <= 200-byte class several, the full class more; every
 * message the feed delivered is one pub_delta_ns sample read back from the ring (a generated day:
 * every message makes a LAST record with a receive time); the ratios are the figures' own. Bad
 * --sizes exits 2. Never asserts on speed. */
#include <jansson.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tb_util.h"

static json_int_t geti(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);
	assert_true(json_is_integer(v));
	return json_integer_value(v);
}

static double getf(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);
	assert_true(json_is_number(v));
	return json_number_value(v);
}

static void check_pct(json_t *p)
{
	assert_non_null(p);
	assert_true(geti(p, "samples") > 0);
	assert_true(geti(p, "p50") <= geti(p, "p99"));
	assert_true(geti(p, "p99") <= geti(p, "p999"));
	assert_true(geti(p, "p999") <= geti(p, "max"));
	assert_true(geti(p, "max") > 0);
}

static void test_sizes_rows(void **state)
{
	char dir[64];
	const char *argv[] = {"uf-bench",     "e2e", "--json",    "--sizes", "20000",
	                      "--duration",   "1",   "--results", dir,       "--no-plot",
	                      "--sender-cpu", "0",   NULL};
	static const char *const names[] = {"1 msg", "<=200 B", "full"};
	double per_dgram[3];
	struct tb_run r;
	json_error_t err;
	json_t *root, *be, *rows;

	(void)state;
	tb_mkdtemp(dir, sizeof(dir));
	tb_run_tool("uf-bench", argv, 110, &r);
	if (r.status != 0)
		fail_msg("uf-bench e2e --sizes exited %d: %s", r.status, r.err);
	root = json_loads(r.out, 0, &err);
	if (!root)
		fail_msg("not JSON: %s", err.text);
	assert_string_equal(json_string_value(json_object_get(root, "bench")), "e2e-sizes");
	assert_int_equal(json_array_size(json_object_get(root, "backends")), 1);
	be = json_array_get(json_object_get(root, "backends"), 0);
	assert_string_equal(json_string_value(json_object_get(be, "backend")), "io_uring_nosqpoll");
	assert_string_equal(json_string_value(json_object_get(be, "raw_method")), "recvmsg-busy");
	/* the back end's own receive method, bare, is the third replay of every row */
	assert_string_equal(json_string_value(json_object_get(be, "own_method")), "io_uring");
	assert_true(json_is_true(json_object_get(be, "ok")));
	rows = json_object_get(be, "rows");
	assert_int_equal(json_array_size(rows), 3);
	for (size_t i = 0; i < 3; i++) {
		json_t *w = json_array_get(rows, i), *raw = json_object_get(w, "raw");
		json_t *pub = json_object_get(w, "publish_ns"), *feed = json_object_get(w, "feed");
		json_int_t sent = geti(raw, "messages");
		assert_string_equal(json_string_value(json_object_get(w, "size")), names[i]);
		assert_true(json_is_true(json_object_get(w, "ran")));
		assert_true(getf(w, "rate") == 20000);
		check_pct(json_object_get(raw, "latency_ns"));
		check_pct(pub);
		/* the raw receiver saw the step's datagrams; its figures are per message */
		assert_true(geti(raw, "received") > 0 && geti(raw, "received") <= sent);
		assert_true(geti(raw, "datagrams") > 0);
		per_dgram[i] = getf(w, "messages_per_datagram");
		assert_true(fabs(per_dgram[i] - (double)geti(raw, "received") /
		                                    (double)geti(raw, "datagrams")) < 1e-9);
		/* the feed replayed the same prefix; what it delivered is what was read back */
		assert_int_equal(geti(feed, "messages"), sent);
		assert_int_equal(geti(w, "no_rx_ts"), 0);
		if (!json_is_true(json_object_get(feed, "loss")))
			assert_int_equal(geti(pub, "samples"), geti(feed, "delivered"));
		else
			assert_true(geti(pub, "samples") <= geti(feed, "delivered"));
		/* the ratios are the figures' own */
		assert_true(fabs(getf(w, "publish_p50_vs_raw") -
		                 (double)geti(pub, "p50") /
		                     (double)geti(json_object_get(raw, "latency_ns"), "p50")) <
		            1e-9);
		assert_true(getf(w, "aim_p50_vs_raw") == (i < 2 ? 1.3 : 2.0));
		/* the own method's step: same replay, its own exact figures, ratios its own */
		{
			json_t *own = json_object_get(w, "own");
			json_t *ol = json_object_get(own, "latency_ns");
			assert_non_null(own);
			check_pct(ol);
			assert_true(geti(own, "received") > 0 && geti(own, "received") <= sent);
			assert_true(geti(own, "p10_ns") <= geti(ol, "p50"));
			assert_true(fabs(getf(w, "own_p50_vs_raw") -
			                 (double)geti(ol, "p50") /
			                     (double)geti(json_object_get(raw, "latency_ns"),
			                                  "p50")) < 1e-9);
			assert_true(fabs(getf(w, "publish_p50_vs_own") -
			                 (double)geti(pub, "p50") / (double)geti(ol, "p50")) <
			            1e-9);
		}
		/* p10 <= p50 on both sides */
		{
			json_t *t = json_object_get(w, "p10_ns");
			assert_true(geti(t, "raw") <=
			            geti(json_object_get(raw, "latency_ns"), "p50"));
			assert_true(geti(t, "publish") <= geti(pub, "p50"));
		}
		/* the verdict follows the figures: none when the raw receiver itself waited */
		{
			const char *v = json_string_value(json_object_get(w, "aim_met"));
			double x = getf(w, "publish_p50_vs_raw");
			assert_non_null(v);
			if (geti(json_object_get(raw, "latency_ns"), "p50") > 20000)
				assert_string_equal(v, "busy");
			else
				assert_string_equal(
				    v, x > 0 && x <= getf(w, "aim_p50_vs_raw") ? "yes" : "no");
		}
	}
	/* one message a datagram, then a few (<= 200 bytes: 180 / 13 at most), then more */
	assert_true(per_dgram[0] == 1.0);
	assert_true(per_dgram[1] > 1.5 && per_dgram[1] <= 180.0 / 13.0);
	assert_true(per_dgram[2] > per_dgram[1] * 2);
	json_decref(root);
	tb_run_free(&r);
	tb_rmtree(dir);
}

static void test_sizes_bad_usage(void **state)
{
	const char *zero[] = {"uf-bench", "e2e", "--sizes", "0", NULL};
	const char *many[] = {"uf-bench", "e2e", "--sizes", "1e4,2e4,3e4,4e4,5e4", NULL};
	struct tb_run r;

	(void)state;
	tb_run_tool("uf-bench", zero, 20, &r);
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err, "--sizes: bad value \"0\""));
	tb_run_free(&r);
	tb_run_tool("uf-bench", many, 20, &r);
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err, "--sizes"));
	tb_run_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_sizes_bad_usage),
	    cmocka_unit_test(test_sizes_rows),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
