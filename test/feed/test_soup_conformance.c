/* The GLIMPSE snapshot state of uf-replay (tools/uf-replay/snap_state.c) on third-party
 * files in ../shared/data/itch50: at many points of each file, the snapshot of the messages
 * so far, loaded into empty books, gives the books and directory of those messages. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>

#include "decode/uf_decode.h"
#include "snap_state.h"
#include "soup_test_util.h"

/* Returns the most levels compared at one point (so a caller can insist on real books). */
static size_t ts_check_file(const char *name, uint64_t min_messages)
{
	const char *d = getenv("UF_SHARED_DATA");
	char path[512];
	struct uf_reader rd;
	struct uf_reader_msg *msgs;
	uint64_t n = 0, cap = 1 << 16;

	if (!d)
		fail_msg("UF_SHARED_DATA is not set: run through ctest (conformance label)");
	snprintf(path, sizeof(path), "%s/itch50/%s", d, name);
	assert_int_equal(uf_reader_open(&rd, path, NULL), 0);
	msgs = malloc(cap * sizeof(*msgs));
	while (n < cap && uf_reader_next(&rd, &msgs[n]) == 1)
		n++;
	assert_true(n >= min_messages);
	struct rp_snap_state *st;
	assert_int_equal(rp_snap_state_create(&st), 0);
	struct uf_publisher *want = ts_pub_new();
	uint64_t step = n / 16 + 1, checked = 0;
	size_t most = 0;
	for (uint64_t seq = 1; seq <= n + 1; seq++) {
		/* Here st and want hold messages 1 .. seq - 1. */
		if (seq % step == 1 || seq == n + 1) {
			struct uf_publisher *snap = ts_pub_new();
			assert_true(rp_snap_state_emit(st, ts_emit_to_pub, snap) >= 0);
			size_t lv = ts_pub_compare(snap, want);
			most = lv > most ? lv : most;
			uf_publish_destroy(snap);
			checked++;
		}
		if (seq <= n) {
			(void)rp_snap_state_apply(st, msgs[seq - 1].msg, msgs[seq - 1].len);
			ts_pub_apply(want, msgs[seq - 1].msg, msgs[seq - 1].len);
		}
	}
	assert_true(checked >= 16);
	uf_publish_destroy(want);
	rp_snap_state_destroy(st);
	free(msgs);
	uf_reader_close(&rd);
	return most;
}

/* Real Nasdaq: system event and ~990 stock directory messages (the directory part). */
static void test_snapshot_state_nasdaq_head(void **s)
{
	(void)s;
	(void)ts_check_file("nasdaq-head-1000.itch", 1000); /* no orders in it */
}

/* A simulated day with adds (A, F), executions, cancels, deletes and replaces. */
static void test_snapshot_state_ritch_simulated_day(void **s)
{
	(void)s;
	assert_true(ts_check_file("ritch-simulated-zero-len.itch", 12012) > 10);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_snapshot_state_nasdaq_head),
	    cmocka_unit_test(test_snapshot_state_ritch_simulated_day),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
