/* `uf-bench fanout` runs end to end (its own nats-server, uf-bridge, a local and a remote
 * consumer) and prints one row per consumer in which every record arrived. The figures
 * themselves are not checked: they measure the machine. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test/common/uf_test_run.h"

/* The row of `label`: records received and lost. */
static void row(const char *out, const char *label, uint64_t *records, uint64_t *lost)
{
	const char *p = strstr(out, label);
	double rate;

	assert_non_null(p);
	assert_int_equal(
	    sscanf(p + strlen(label), " %" SCNu64 " %lf %" SCNu64, records, &rate, lost), 3);
}

/* Runs `argv` (uf-bench fanout ...) within 120 s: it must succeed and the local ring
 * consumer must have every one of the `records` with none lost. `r` keeps the output (the
 * caller checks the NATS row and frees it). */
static void fanout_run(const char *argv[], uint64_t records, struct uf_test_run *r)
{
	const char *d = getenv("UF_BIN_DIR");
	char path[512];
	uint64_t recs, lost;

	snprintf(path, sizeof(path), "%s/uf-bench", d ? d : UF_BIN_DIR);
	uf_test_run_path(path, argv, 120000, r);
	if (r->status != 0)
		fprintf(stderr, "%s\n%s\n", r->out, r->err);
	assert_int_equal(r->status, 0);
	row(r->out, "local ring", &recs, &lost);
	assert_int_equal(recs, records);
	assert_int_equal(lost, 0);
}

static void test_bench_fanout_delivers_every_record_to_both_consumers(void **state)
{
	struct uf_test_run r;
	uint64_t recs, lost;
	const char *argv[] = {"uf-bench", "fanout",    "--seconds", "1", "--rate",
	                      "2000",     "--records", "20000",     NULL};

	fanout_run(argv, 20000, &r);
	row(r.out, "NATS (uf-bridge)", &recs, &lost);
	assert_int_equal(recs, 20000);
	assert_int_equal(lost, 0);
	assert_non_null(strstr(r.out, "p50 us"));
	uf_test_run_free(&r);
}

/* The busy-day settings: messages of up to 4096 records (above the former 1024 bound, so
 * the remote consumer must take them), --eager holding partial messages while 2 are in
 * flight, compact records. Every record reaches both consumers exactly once (a duplicate
 * would count above --records), and the CPU per record of each process is printed. */
static void test_bench_fanout_big_eager_compact_messages_deliver_every_record_once(void **state)
{
	struct uf_test_run r;
	uint64_t recs, lost;
	const char *argv[] = {"uf-bench", "fanout",  "--seconds", "0",       "--records",
	                      "300000",   "--batch", "4096",      "--eager", "2",
	                      "--window", "8",       "--compact", NULL};

	(void)state;
	fanout_run(argv, 300000, &r);
	row(r.out, "NATS (uf-bridge)", &recs, &lost);
	assert_int_equal(recs + lost, 300000); /* each once; a lap of the application's own
	                                        * buffer on a starved machine is reported */
	assert_non_null(strstr(r.out, "eager 2, compact records"));
	assert_non_null(strstr(r.out, "CPU ns/record, throughput phase: producer "));
	assert_non_null(strstr(r.out, " uf-bridge "));
	uf_test_run_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_bench_fanout_delivers_every_record_to_both_consumers),
	    cmocka_unit_test(
	        test_bench_fanout_big_eager_compact_messages_deliver_every_record_once),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
