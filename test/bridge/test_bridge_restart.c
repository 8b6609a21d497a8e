/* uf-bridge fan-out across restarts: the bridge killed and restarted publishes no record twice
 * and none out of order, and a producer restart (a new ring generation) is followed by the
 * bridge and by a remote consumer. Split from test_bridge.c; the fixture is bridge_case.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <nats/nats.h>

#include "bridge_case.h"

static struct bt_case *g_restart_case; /* for restart_bridge() */

static void restart_bridge(void *arg)
{
	struct bt_case *k = g_restart_case;

	kill(k->bridge, SIGKILL); /* in the middle of whatever it was publishing */
	bt_wait(k->bridge, 5000);
	case_bridge(k, k->ns.urls, "1", 1);
}

/* The bridge is SIGKILLed mid-stream and started again: the new one replays what the ring
 * holds; the remote consumer must still see every record exactly once, in order. */
static void test_bridge_killed_and_restarted_no_duplicate_no_reorder(void **state)
{
	struct bt_case k;
	const char *day = bt_gen_day(30000, 30, 23);
	struct drain d = {0};
	char *feed, *ref;
	uf_consumer_t *c;

	case_begin(&k, "rst", 1);
	g_restart_case = &k;
	ref = decode_books(day);
	case_start(&k, day, "10000", "0", k.ns.urls, "1");
	c = remote_attach(k.ns.urls, k.ring);
	case_go(&k);
	drain(c, &d, 20000, restart_bridge, NULL);
	feed = case_finish(&k);
	assert_int_equal(d.received, bt_json_num(feed, "records"));
	expect_remote_books(c, ref);
	uf_consumer_detach(c);
	free(feed);
	free(ref);
	case_end(&k);
}

/* The producer closes the ring and a new one (a new generation) starts with another day: the
 * bridge follows it; the remote consumer gets -EPIPE, then -ESTALE, re-attaches and ends with
 * the second day's books. */
static void test_producer_restart_is_followed_by_bridge_and_remote_consumer(void **state)
{
	struct bt_case k;
	char day1[300], day2[300], start2[300], out2[300];
	struct uf_consumer_info i1, i2;
	struct drain d = {0};
	char *ref;
	uf_consumer_t *c;
	uint64_t end;
	pid_t feed2;
	int rc;

	snprintf(day1, sizeof(day1), "%s", bt_gen_day(20000, 30, 29)); /* static: copied */
	snprintf(day2, sizeof(day2), "%s", bt_gen_day(25000, 30, 31));
	case_begin(&k, "gen", 1);
	ref = decode_books(day2);
	k.feed = case_feed(&k, day1, "0", "0", "1048576", "10", k.start, k.feed_out);
	case_bridge(&k, k.ns.urls, "1", 0);
	c = remote_attach(k.ns.urls, k.ring);
	uf_consumer_get_info(c, &i1);
	case_go(&k);
	drain(c, &d, 0, NULL, NULL);
	assert_int_equal(bt_wait(k.feed, 60000), 0);
	snprintf(start2, sizeof(start2), "%s.2", k.start);
	snprintf(out2, sizeof(out2), "%s.2", k.feed_out);
	feed2 = case_feed(&k, day2, "0", "0", "1048576", "10", start2, out2);
	for (end = bt_now_ms() + 30000;
	     (rc = uf_consumer_next(c, &(struct uf_record){0}, NULL)) != -ESTALE;) {
		assert_true(rc == -EPIPE || rc == -EAGAIN);
		assert_true(bt_now_ms() < end);
		uf_consumer_wait(c, 100000000);
	}
	assert_int_equal(uf_consumer_reattach(c, NULL, 0), 0);
	uf_consumer_get_info(c, &i2);
	assert_true(i2.generation != i1.generation);
	FILE *f = fopen(start2, "w");
	assert_non_null(f);
	fclose(f);
	memset(&d, 0, sizeof(d));
	d.next = i2.position;
	drain(c, &d, 0, NULL, NULL);
	assert_int_equal(bt_wait(feed2, 60000), 0);
	{
		char *f1 = uf_test_slurp(k.feed_out), *f2 = uf_test_slurp(out2);
		assert_true(bt_json_num(f1, "records") != bt_json_num(f2, "records"));
		assert_int_equal(d.next, bt_json_num(f2, "tail"));
		free(f1);
		free(f2);
	}
	expect_local_and_remote_books(&k, c, ref);
	kill(k.bridge, SIGTERM);
	assert_int_equal(bt_wait(k.bridge, 10000), 0);
	uf_consumer_detach(c);
	free(ref);
	case_end(&k);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_teardown(test_bridge_killed_and_restarted_no_duplicate_no_reorder,
	                              case_teardown),
	    cmocka_unit_test_teardown(
	        test_producer_restart_is_followed_by_bridge_and_remote_consumer, case_teardown),
	};
	return BT_RUN_GROUP("bridge-restart", tests);
}
