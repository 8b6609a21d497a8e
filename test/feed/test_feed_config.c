/* The engine's defaults in one place (feed/feed_config.c): what uf_feed_config_defaults() writes,
 * what uf_feed_config_resolve() fills and keeps, and that an embedder's config built from the
 * defaults reaches the arbiter with the documented values (issue 22: an embedder that left
 * recovery.retries and wait_ms at 0 got 0, not the 5 and 2 ms the header documents). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "decode/uf_mold.h"
#include "feed/arbiter.h"
#include "feed/uf_feed.h"
#include "feed/uf_feed_config.h"

static void noop_deliver(void *ctx, const struct uf_frame *p, uint32_t skip, uint64_t rx,
                         unsigned src)
{
}
static void noop_gap(void *ctx, uint64_t first, uint64_t count)
{
}
static void noop_session(void *ctx, const char s[UF_FRAME_SESSION_LEN])
{
}

static void test_defaults_write_every_documented_value(void **state)
{
	struct uf_feed_config c;
	memset(&c, 0x5a, sizeof(c)); /* whatever was there is overwritten */
	uf_feed_config_defaults(&c);
	assert_string_equal(c.protocol, "itch50-moldudp64");
	assert_string_equal(uf_backend_name(c.backend), "io_uring");
	assert_int_equal(c.cpu, -1);
	assert_int_equal(c.sqpoll_cpu, -1);
	assert_int_equal(c.numa_node, -1);
	assert_int_equal(c.sqpoll_idle_ms, 1000);
	assert_int_equal(c.nlines, 0);
	assert_int_equal(c.recovery.enabled, 0);
	assert_int_equal(c.recovery.max_count, 1000);
	assert_int_equal(c.recovery.timeout_ms, 50);
	assert_int_equal(c.recovery.retries, 5);
	assert_int_equal(c.recovery.wait_ms, 2);
	assert_int_equal(c.recovery.wait_packets, 64);
	assert_int_equal(c.recovery.queue_packets, 65536);
	assert_int_equal(c.recovery.max_requests_per_s, 1000);
	assert_int_equal(c.recovery.max_in_flight, 8);
	assert_int_equal(c.snapshot.enabled, 0);
	assert_int_equal(c.snapshot.on_start, 1);
	assert_int_equal(c.snapshot.max_gap_messages, 50000);
	assert_int_equal(c.snapshot.max_gap_age_ms, 1000);
	assert_int_equal(c.snapshot.timeout_ms, 10000);
	assert_int_equal(c.snapshot.buffer_packets, 65536);
	assert_int_equal(c.snapshot.reload_uncertain, 3);
	assert_int_equal(c.arbitration.max_jump, UF_ARB_MAX_JUMP);
	assert_int_equal(c.arbitration.jump_confirm, UF_ARB_JUMP_CONFIRM);
	assert_int_equal(c.arbitration.session_confirm, UF_ARB_SESSION_CONFIRM);
	assert_int_equal(c.arbitration.line_silent_ms, UF_ARB_LINE_SILENT_NS / 1000000);
	assert_int_equal(c.ring.capacity, 1048576);
	assert_int_equal(c.ring.mode, 0600);
	assert_int_equal(c.ring.has_gid, 0);
	assert_int_equal(c.book.depth, 10);
	assert_int_equal(c.book.max_orders, 4000000);
	assert_int_equal(c.book.max_instruments, 16384);
	assert_int_equal(c.buffers.count, 4096);
	assert_int_equal(c.buffers.size, 2048);
	assert_int_equal(c.nsymbols, 0);
	assert_null(c.symbols);
	assert_int_equal(c.no_stage_timing, 0);
	assert_int_equal(c.stage_timing_every, UF_FEED_STAGE_EVERY_DEFAULT);
	assert_int_equal(c.busy_clock, UF_FEED_DEFAULT_BUSY_CLOCK); /* off: no clock read */
	assert_int_equal(c.busy_clock, 0);
	/* the idle spin's pause: the back end running decides (pipeline.c) */
	assert_int_equal(c.idle_pause, UF_FEED_DEFAULT_IDLE_PAUSE);
	assert_int_equal(c.idle_pause, UF_FEED_IDLE_PAUSE_AUTO);
}

/* 0 where 0 is a value of its own stays 0; 0 where it stands for "the default" becomes it; a
 * value that was set is never touched. */
static void test_resolve_fills_only_the_zero_means_default_fields(void **state)
{
	struct uf_feed_config z, d;
	memset(&z, 0, sizeof(z));
	uf_feed_config_resolve(&z);
	uf_feed_config_defaults(&d);
	assert_int_equal(z.recovery.retries, 0);
	assert_int_equal(z.recovery.wait_ms, 0);
	assert_int_equal(z.recovery.wait_packets, 0);
	assert_int_equal(z.snapshot.on_start, 0);
	assert_int_equal(z.snapshot.max_gap_messages, 0);
	assert_int_equal(z.snapshot.max_gap_age_ms, 0);
	assert_int_equal(z.cpu, 0); /* an int field: 0 is CPU 0, not "unpinned" */
	assert_int_equal(z.recovery.max_count, d.recovery.max_count);
	assert_int_equal(z.recovery.timeout_ms, d.recovery.timeout_ms);
	assert_int_equal(z.recovery.queue_packets, d.recovery.queue_packets);
	assert_int_equal(z.recovery.max_requests_per_s, d.recovery.max_requests_per_s);
	assert_int_equal(z.recovery.max_in_flight, d.recovery.max_in_flight);
	assert_int_equal(z.snapshot.timeout_ms, d.snapshot.timeout_ms);
	assert_int_equal(z.snapshot.buffer_packets, d.snapshot.buffer_packets);
	assert_int_equal(z.ring.capacity, d.ring.capacity);
	assert_int_equal(z.ring.mode, d.ring.mode);
	assert_int_equal(z.book.depth, d.book.depth);
	assert_int_equal(z.book.max_orders, d.book.max_orders);
	assert_int_equal(z.book.max_instruments, d.book.max_instruments);
	assert_int_equal(z.buffers.count, d.buffers.count);
	assert_int_equal(z.buffers.size, d.buffers.size);
	assert_int_equal(z.sqpoll_idle_ms, d.sqpoll_idle_ms);
	assert_int_equal(z.stage_timing_every, d.stage_timing_every);
	assert_int_equal(z.arbitration.max_jump, d.arbitration.max_jump);
	assert_int_equal(z.arbitration.line_silent_ms, d.arbitration.line_silent_ms);

	struct uf_feed_config s = d;
	s.recovery.max_count = 7;
	s.book.depth = 3;
	s.buffers.size = 4096;
	s.arbitration.jump_confirm = 2;
	struct uf_feed_config before = s;
	uf_feed_config_resolve(&s);
	assert_memory_equal(&s, &before, sizeof(s));
}

static void arb_from(const struct uf_feed_config *c, struct uf_arb *a)
{
	struct uf_feed_stats st;
	memset(&st, 0, sizeof(st));
	struct uf_arb_cb cb = {noop_deliver, noop_gap, noop_session, NULL};
	assert_int_equal(uf_arb_init(a, c, &uf_mold_framing, -1, 2048, &st, &cb), 0);
}

/* The embedder's path: defaults, then only what it cares about. The arbiter then runs with the
 * documented 5 retries, 2 ms and 64 packets of wait (it ran with 0 and 0 before). */
static void test_embedder_config_from_defaults_reaches_the_arbiter(void **state)
{
	struct uf_feed_config c;
	uf_feed_config_defaults(&c);
	c.nlines = 2;
	c.recovery.enabled = 1;
	struct uf_arb a;
	arb_from(&c, &a);
	assert_int_equal(a.retries, 5);
	assert_int_equal(a.wait_ns, 2000000);
	assert_int_equal(a.wait_packets, 64);
	assert_int_equal(a.max_count, 1000);
	assert_int_equal(a.timeout_ns, 50000000);
	assert_int_equal(a.min_interval_ns, 1000000);
	assert_int_equal(a.max_in_flight, 8);
	assert_int_equal(a.cap, 65536);
	assert_int_equal(a.deadline_ns, 6 * 50000000ull);
	uf_arb_fini(&a);

	/* A config zeroed by hand: the zero-means-default sizes still hold, and 0 retries,
	 * no wait and no packet wait are what it says (wait_packets 0 became 64 before). */
	memset(&c, 0, sizeof(c));
	c.nlines = 2;
	arb_from(&c, &a);
	assert_int_equal(a.retries, 0);
	assert_int_equal(a.wait_ns, 0);
	assert_int_equal(a.wait_packets, 0);
	assert_int_equal(a.max_count, 1000);
	assert_int_equal(a.cap, 65536);
	uf_arb_fini(&a);
}

/* The memory estimate the daemon checks a host against is the one of the sizes the engine
 * will use: the same for a zeroed config and for the defaults. */
static void test_estimates_use_the_resolved_sizes(void **state)
{
	struct uf_feed_config z, d;
	memset(&z, 0, sizeof(z));
	uf_feed_config_defaults(&d);
	assert_true(uf_feed_memory_estimate(&d) > 0);
	assert_int_equal(uf_feed_memory_estimate(&z), uf_feed_memory_estimate(&d));
	assert_int_equal(uf_feed_ring_estimate(&z), uf_feed_ring_estimate(&d));
	d.ring.capacity *= 2;
	assert_true(uf_feed_ring_estimate(&d) > uf_feed_ring_estimate(&z));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_defaults_write_every_documented_value),
	    cmocka_unit_test(test_resolve_fills_only_the_zero_means_default_fields),
	    cmocka_unit_test(test_embedder_config_from_defaults_reaches_the_arbiter),
	    cmocka_unit_test(test_estimates_use_the_resolved_sizes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
