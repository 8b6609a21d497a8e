/* uf-bench ring runs every transport side by side and reports sane figures (short run). */
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <cmocka.h>

static void test_bench_ring_reports_every_transport(void **state)
{
	const char *env = getenv("UF_BIN_DIR");
	char cmd[1024], *out = calloc(1, 1 << 16);
	size_t n = 0;
	json_error_t jerr;
	json_t *root, *cases;
	FILE *p;
	int st, ring = 0, zmq = 0, uds = 0;

	assert_non_null(out);
	snprintf(cmd, sizeof(cmd),
	         "timeout -s KILL 50 %s/uf-bench ring --json --duration 0.3 --consumers 1,2 "
	         "--rate 20000 2>/dev/null",
	         env && env[0] ? env : UF_BIN_DIR);
	p = popen(cmd, "r");
	assert_non_null(p);
	while ((n += fread(out + n, 1, (1 << 16) - 1 - n, p)) < (1 << 16) - 1 && !feof(p))
		;
	st = pclose(p);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	root = json_loads(out, 0, &jerr);
	if (!root)
		fprintf(stderr, "not JSON (%s): %s\n", jerr.text, out);
	assert_non_null(root);
	cases = json_object_get(root, "cases");
	assert_true(json_is_array(cases));
	assert_int_equal(json_array_size(cases), 8); /* 4 transports x 2 consumer counts */
	for (size_t i = 0; i < json_array_size(cases); i++) {
		json_t *c = json_array_get(cases, i), *lat = json_object_get(c, "latency_ns");
		json_t *tp = json_object_get(c, "throughput");
		const char *t = json_string_value(json_object_get(c, "transport"));
		assert_true(json_is_true(json_object_get(c, "ok")));
		assert_non_null(t);
		ring += strcmp(t, "ring") == 0;
		zmq += strcmp(t, "zeromq-ipc") == 0;
		uds += strcmp(t, "unix-dgram") == 0;
		/* every case measured something: samples, ordered percentiles, a rate */
		assert_true(json_integer_value(json_object_get(lat, "samples")) > 100);
		assert_true(json_integer_value(json_object_get(lat, "p50")) <=
		            json_integer_value(json_object_get(lat, "p99")));
		assert_true(json_integer_value(json_object_get(lat, "p99")) <=
		            json_integer_value(json_object_get(lat, "max")));
		assert_true(json_real_value(json_object_get(tp, "send_mps")) > 0);
		assert_true(json_real_value(json_object_get(tp, "recv_min_mps")) > 0);
	}
	assert_int_equal(ring, 4); /* busy-poll and futex */
	assert_int_equal(zmq, 2);
	assert_int_equal(uds, 2);
	json_decref(root);
	free(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_bench_ring_reports_every_transport),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
