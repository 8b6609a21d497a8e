/* The watchdog's heartbeat on a real feed (uf_feed_run, epoll back end, no traffic at all):
 * an idle feed must keep beating, or the daemon would withhold WATCHDOG=1 every quiet night
 * and systemd would restart a healthy process; a feed whose loop has ended must not. */
#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "feed/uf_feed.h"
#include "test/common/uf_test_dir.h"
#include "test/common/uf_test_feed_thread.h"
#include "daemon/watchdog.h"

/* One line on a loopback multicast group and port unique to this process; nothing is ever
 * sent to it. */
static void idle_config(struct uf_feed_config *cfg)
{
	int pid = (int)getpid();

	memset(cfg, 0, sizeof(*cfg));
	snprintf(cfg->name, sizeof(cfg->name), "wd%d", pid);
	snprintf(cfg->protocol, sizeof(cfg->protocol), "itch50-moldudp64");
	cfg->backend = UF_BACKEND_EPOLL; /* the back end that sleeps: the hardest case */
	cfg->cpu = -1;
	cfg->sqpoll_cpu = -1;
	cfg->numa_node = -1;
	cfg->nlines = 1;
	snprintf(cfg->lines[0].name, sizeof(cfg->lines[0].name), "A");
	char g[32];
	snprintf(g, sizeof(g), "239.79.%d.%d", (pid >> 8) & 0xff, pid & 0xff);
	inet_pton(AF_INET, g, &cfg->lines[0].group);
	cfg->lines[0].port = (uint16_t)(20000 + pid % 12000);
	inet_pton(AF_INET, "127.0.0.1", &cfg->lines[0].interface);
	snprintf(cfg->ring.name, sizeof(cfg->ring.name), "wd%d", pid);
	cfg->ring.capacity = 1024;
	cfg->ring.mode = 0600;
	cfg->book.depth = 1;
	cfg->book.max_orders = 1024;
	cfg->book.max_instruments = 16;
	cfg->buffers.count = 64;
	cfg->buffers.size = 2048;
}

/* Waits until the beats differ from `from`: bounded at 10 s (the loop wakes every 50 ms). */
static uint64_t wait_moved(const struct uf_test_feed_thread *r, const struct uf_feed_stats *st,
                           uint64_t from)
{
	struct timespec ms = {0, 1000000};

	for (int i = 0; i < 10000; i++) {
		if (r->done)
			fail_msg("uf_feed_run returned %d: %s", r->rc, uf_feed_error(r->feed));
		uint64_t v = uf_watchdog_beats(st);
		if (v != from)
			return v;
		nanosleep(&ms, NULL);
	}
	fail_msg("an idle feed's heartbeat did not move in 10 s (stuck at %llu)",
	         (unsigned long long)from);
	return from;
}

static void test_watchdog_idle_feed_keeps_beating_and_a_stopped_one_does_not(void **state)
{
	struct uf_feed_config cfg;
	struct uf_test_feed_thread r;
	struct uf_feed *feed;
	char err[256];

	idle_config(&cfg);
	if (uf_feed_create(&cfg, &feed, err, sizeof(err)) < 0)
		fail_msg("uf_feed_create: %s", err);
	const struct uf_feed_stats *st = uf_feed_stats(feed);
	uf_test_feed_thread_start(&r, feed);

	/* Three consecutive watchdog checks on a feed that receives nothing: each sees progress. */
	uint64_t prev = uf_watchdog_beats(st);
	for (int check = 0; check < 3; check++) {
		uint64_t cur = wait_moved(&r, st, prev);
		assert_int_equal(uf_watchdog_decide(&prev, &cur, NULL, 1, NULL), 1);
		prev = cur;
	}
	assert_int_equal(uf_load_relaxed_u64((uint64_t *)&st->packets), 0); /* truly idle */

	assert_int_equal(uf_test_feed_thread_stop(&r), 0);
	/* The loop has ended: its beats no longer move, so the ping would be withheld. */
	prev = uf_watchdog_beats(st);
	uint64_t cur = uf_watchdog_beats(st);
	assert_int_equal(uf_watchdog_decide(&prev, &cur, NULL, 1, NULL), 0);

	uf_feed_destroy(feed);
}

/* The rings go to a folder of this process, removed even when an assertion failed. */
static char dir[64];

static int ring_dir_setup(void **state)
{
	snprintf(dir, sizeof(dir), "/tmp/uf-wd-%d", (int)getpid());
	if (mkdir(dir, 0700) != 0)
		return -1;
	return setenv("UF_RING_DIR", dir, 1);
}

static int ring_dir_teardown(void **state)
{
	unsetenv("UF_RING_DIR");
	return uf_test_rm_tree(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_watchdog_idle_feed_keeps_beating_and_a_stopped_one_does_not),
	};
	return cmocka_run_group_tests(tests, ring_dir_setup, ring_dir_teardown);
}
