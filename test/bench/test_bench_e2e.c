/* uf-bench e2e: all four back ends with tiny bounded parameters (about 1 s of replay each):
 * exit 0, --json parses and carries every back end with latency percentiles in order,
 * counters and the rate search; loss is explained exactly when it is reported; the results
 * folder holds e2e.json and real PNGs. Bad usage exits 2 with a reason. Never asserts on
 * speed or on the absence of loss (a 2-CPU machine may lose packets: that is a result). */
#include <jansson.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "feed/uf_feed.h"
#include "tb_util.h"

static void check_step(json_t *s, int sampled)
{
	json_t *c = json_object_get(s, "counters");
	const char *why = json_string_value(json_object_get(s, "loss_why"));
	int loss = json_is_true(json_object_get(s, "loss"));
	json_int_t sent = json_integer_value(json_object_get(s, "messages"));
	json_int_t got = json_integer_value(json_object_get(s, "delivered"));

	assert_non_null(c);
	assert_non_null(why);
	assert_true(sent > 0);
	assert_true(got >= 0 && got <= sent);
	assert_true(json_real_value(json_object_get(s, "achieved_rate")) > 0);
	assert_true(json_real_value(json_object_get(s, "offered_rate")) > 0);
	assert_true(json_integer_value(json_object_get(s, "cpu_ns")) >= 0);
	/* loss is reported with its reason, and no loss means every message arrived */
	assert_int_equal(loss, why[0] != '\0');
	if (!loss) {
		assert_int_equal(got, sent);
		/* a generated day: every message makes a record the consumer reads (the drain
		 * waits for the consumer, 3 s at most: a starved one may still be behind) */
		assert_true(json_integer_value(json_object_get(c, "consumer_messages")) > 0);
		assert_true(json_integer_value(json_object_get(c, "consumer_messages")) <= sent);
		assert_int_equal(json_integer_value(json_object_get(c, "gaps")), 0);
		assert_int_equal(json_integer_value(json_object_get(c, "consumer_lap_lost")), 0);
		assert_int_equal(json_integer_value(json_object_get(c, "consumer_seq_skipped")), 0);
		assert_int_equal(json_integer_value(json_object_get(c, "consumer_seq_backwards")),
		                 0);
	}
	if (sampled) {
		json_t *l = json_object_get(s, "latency_ns");
		json_int_t p50 = json_integer_value(json_object_get(l, "p50"));
		json_int_t p99 = json_integer_value(json_object_get(l, "p99"));
		json_int_t p999 = json_integer_value(json_object_get(l, "p999"));
		json_int_t max = json_integer_value(json_object_get(l, "max"));
		assert_true(json_integer_value(json_object_get(l, "samples")) > 0);
		assert_true(p50 <= p99 && p99 <= p999 && p999 <= max);
		assert_true(max > 0);
	}
}

/* Issue 14: the raw-receive baseline beside every latency step, the daemon's own
 * wire-to-publish histogram apart from wire to consumer, their ratios, burst drain times. */
/* Issue 14: a latency step carries the daemon's per-stage histograms of that step alone
 * (/metrics differenced): every stage timed some packets, means and quantiles are ordered. */
static void check_stages(json_t *step)
{
	static const char *const names[] = {"receive", "arbitration", "decode",
	                                    "books",   "ring",        "image"};
	json_t *sg = json_object_get(step, "stages");
	json_t *pub = json_object_get(sg, "wire_to_publish_ns");
	json_int_t books_n;
	assert_non_null(sg);
	/* the step's own samples: at most one per message of the step (warm-up excluded) */
	assert_true(json_integer_value(json_object_get(pub, "samples")) > 0);
	assert_true(json_integer_value(json_object_get(pub, "samples")) <=
	            json_integer_value(json_object_get(step, "delivered")));
	books_n = json_integer_value(
	    json_object_get(json_object_get(json_object_get(sg, "stages_ns"), "books"), "samples"));
	assert_true(books_n > 0);
	for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++) {
		json_t *h = json_object_get(json_object_get(sg, "stages_ns"), names[k]);
		if (!h)
			fail_msg("stages_ns has no %s", names[k]);
		assert_true(json_integer_value(json_object_get(h, "samples")) > 0);
		assert_true(json_integer_value(json_object_get(h, "p50")) <=
		            json_integer_value(json_object_get(h, "p99")));
	}
}

static void check_vs_raw(json_t *b, const char *name)
{
	static const char *steps[] = {"steady", "burst"};
	static const char *methods[] = {"io_uring+SQPOLL", "io_uring", "recvmmsg-busy", "epoll"};
	json_t *raw = json_object_get(b, "raw"), *vs = json_object_get(b, "vs_raw");

	for (int k = 0; k < 2; k++) {
		json_t *w = json_object_get(raw, steps[k]), *st = json_object_get(b, steps[k]);
		json_t *pub = json_object_get(st, "wire_to_publish_ns");
		json_t *q = json_object_get(vs, steps[k]);
		json_t *lat = json_object_get(w, "latency_ns");
		if (!json_is_true(json_object_get(w, "ran")))
			fail_msg("%s: raw %s did not run: %s", name, steps[k],
			         json_string_value(json_object_get(w, "note")));
		/* each back end is compared with its own receive method */
		for (int m = 0; m < 4; m++)
			if (!strcmp(name, (const char *[]){"io_uring", "io_uring_nosqpoll",
			                                   "recvmmsg", "epoll"}[m]))
				assert_string_equal(json_string_value(json_object_get(w, "method")),
				                    methods[m]);
		assert_true(json_integer_value(json_object_get(w, "received")) > 0);
		assert_true(json_integer_value(json_object_get(w, "datagrams")) > 0);
		assert_true(json_integer_value(json_object_get(lat, "samples")) > 0);
		assert_true(json_integer_value(json_object_get(lat, "p50")) > 0);
		assert_true(json_integer_value(json_object_get(lat, "p50")) <=
		            json_integer_value(json_object_get(lat, "p99")));
		/* wire to publish: the daemon's histogram, the step's samples in it */
		assert_true(json_integer_value(json_object_get(pub, "samples")) > 0);
		assert_true(json_integer_value(json_object_get(pub, "p50")) > 0);
		assert_true(json_integer_value(json_object_get(pub, "p50")) <=
		            json_integer_value(json_object_get(pub, "max")));
		assert_true(json_real_value(json_object_get(q, "publish_p50")) > 0);
		assert_true(json_real_value(json_object_get(q, "consumer_p50")) > 0);
		if (k == 1) { /* bursts: drain times of complete bursts, both sides */
			json_t *dc = json_object_get(st, "drain_ns");
			json_t *dr = json_object_get(w, "drain_ns");
			assert_true(json_integer_value(json_object_get(dc, "bursts")) > 0);
			assert_true(json_integer_value(json_object_get(dc, "p50")) > 0);
			assert_true(json_integer_value(json_object_get(dr, "bursts")) > 0);
			assert_true(json_integer_value(json_object_get(dr, "p50")) > 0);
			assert_true(json_real_value(json_object_get(q, "drain_p50")) > 0);
		}
	}
}

/* Issue 14: where each role ran (configured, allowed, seen) and the feed thread's system
 * calls per datagram, counted on the running daemon. */
static void check_place_and_syscalls(json_t *b, const char *name, int sqpoll)
{
	static const char *roles[] = {"feed_thread", "consumer", "sender", "raw_receiver"};
	json_t *pl = json_object_get(b, "placement"), *sc = json_object_get(b, "syscalls");

	for (int k = 0; k < 4; k++) {
		json_t *r = json_object_get(pl, roles[k]);
		if (!r)
			fail_msg("%s: no placement of %s", name, roles[k]);
		assert_true(json_integer_value(json_object_get(r, "samples")) > 0);
		assert_true(json_array_size(json_object_get(r, "cpus_seen")) > 0);
		assert_true(strlen(json_string_value(json_object_get(r, "cpus_allowed"))) > 0);
	}
	/* the feed thread and the raw receiver are pinned to --feed-cpu: that is all they saw */
	assert_int_equal(json_integer_value(json_object_get(json_object_get(pl, "feed_thread"),
	                                                    "samples_off_configured")),
	                 0);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(pl, "raw_receiver"),
	                                                    "samples_off_configured")),
	                 0);
	/* --sender-cpu 0: every sample of the replayer, the first one after its fork too */
	assert_int_equal(json_integer_value(json_object_get(json_object_get(pl, "sender"),
	                                                    "samples_off_configured")),
	                 0);
	assert_string_equal(
	    json_string_value(json_object_get(json_object_get(pl, "sender"), "cpus_allowed")), "0");
	assert_int_equal(json_object_get(pl, "sq_thread") != NULL, sqpoll);
	if (!json_is_true(json_object_get(sc, "measured")))
		fail_msg("%s: system calls not measured: %s", name,
		         json_string_value(json_object_get(sc, "note")));
	assert_true(json_integer_value(json_object_get(sc, "datagrams")) > 0);
	assert_true(json_real_value(json_object_get(sc, "per_datagram")) >= 0);
	/* consumer wake-ups: with SQPOLL every one is the SQ thread's, else none is */
	json_t *fc = json_object_get(sc, "feed_counts_steady");
	json_int_t wakes = json_integer_value(json_object_get(fc, "ring_wakes"));
	json_int_t async = json_integer_value(json_object_get(fc, "ring_wakes_async"));
	assert_int_equal(async, sqpoll ? wakes : 0);
	if (!strcmp(name, "epoll")) /* it sleeps in epoll_wait and reads with recvmmsg */
		assert_true(json_real_value(json_object_get(sc, "per_datagram")) > 0);
}

/* Issue 14: the largest single burst absorbed with no loss is a loss-free step's size, and
 * every loss-free burst has its drain time. */
static void check_burst_absorb(json_t *b)
{
	json_t *ba = json_object_get(b, "burst_absorb"), *st = json_object_get(ba, "search"), *s;
	json_int_t max = json_integer_value(json_object_get(ba, "max_messages_no_loss"));
	int found = max == 0;
	size_t k;

	assert_true(json_array_size(st) >= 1 && json_array_size(st) <= 2);
	json_array_foreach(st, k, s)
	{
		const char *why = json_string_value(json_object_get(s, "loss_why"));
		/* offered 0: back to back, as fast as uf-replay sends */
		assert_true(json_real_value(json_object_get(s, "offered_rate")) == 0);
		assert_true(json_integer_value(json_object_get(s, "messages")) >= 2000);
		assert_int_equal(json_is_true(json_object_get(s, "loss")), why && why[0] != '\0');
		if (json_is_true(json_object_get(s, "loss")))
			continue;
		assert_int_equal(json_integer_value(json_object_get(s, "delivered")),
		                 json_integer_value(json_object_get(s, "messages")));
		assert_true(
		    json_integer_value(json_object_get(json_object_get(s, "drain_ns"), "p50")) > 0);
		if (json_integer_value(json_object_get(s, "messages")) == max)
			found = 1;
	}
	assert_true(found);
	if (max)
		assert_true(json_integer_value(json_object_get(ba, "drain_ns")) > 0);
}

/* Issue 26 item 2, the exact figure: the steady step's daemon ran with its busy clock, which
 * counted the working loop turns of the step's messages. Their time is wall time, within the
 * thread's time on a CPU plus what it waited preempted; a busy-polling thread's CPU time holds
 * its spin too, so there it is below the run time alone. */
static void check_busy_clock(json_t *b)
{
	const char *be = json_string_value(json_object_get(b, "backend"));
	json_int_t msgs = json_integer_value(json_object_get(b, "messages"));
	double busy = json_real_value(json_object_get(b, "busy_ns_per_msg"));
	double run = json_real_value(json_object_get(b, "run_ns_per_msg"));
	json_t *pre = json_object_get(b, "preempted_ns");

	if (!json_is_true(json_object_get(b, "busy_clock")))
		fail_msg("%s: no busy clock figure", be);
	assert_true(json_integer_value(json_object_get(b, "busy_ns")) > 0);
	assert_true(busy > 0);
	assert_non_null(pre);
	assert_true(msgs > 0);
	/* the same window's ns over the same messages */
	assert_true(
	    fabs(busy * (double)msgs - (double)json_integer_value(json_object_get(b, "busy_ns"))) <=
	    1e-6 * busy * (double)msgs + 1);
	if (strcmp(be, "epoll") != 0)
		assert_true(busy <= run);
	else /* epoll sleeps when idle: its CPU time is nearly all work, preemption apart */
		assert_true(busy <= run + (double)json_integer_value(pre) / (double)msgs);
	assert_true(json_real_value(json_object_get(b, "busy_vs_book_before")) > 0);
	assert_true(json_real_value(json_object_get(b, "busy_vs_book_after")) > 0);
	assert_true(json_real_value(json_object_get(b, "busy_vs_sink_before")) > 0);
	assert_true(json_real_value(json_object_get(b, "busy_vs_sink_after")) > 0);
}

/* The interrupts the feed's CPU served in the step (their clock ticks are in the thread's
 * system time on a kernel without IRQ time accounting): read at both ends, so present; the
 * CPU's own timer ticks alone make them more than none over a step of a second; the
 * rescheduling IPIs are some of them, NET_RX some of the softirqs. */
static void check_cpu_irqs(json_t *b)
{
	json_t *q = json_object_get(b, "cpu_irqs");
	if (!json_is_object(q))
		fail_msg("%s: no cpu_irqs", json_string_value(json_object_get(b, "backend")));
	assert_true(json_integer_value(json_object_get(q, "hard")) > 0);
	assert_true(json_integer_value(json_object_get(q, "resched")) <=
	            json_integer_value(json_object_get(q, "hard")));
	assert_true(json_integer_value(json_object_get(q, "net_rx")) <=
	            json_integer_value(json_object_get(q, "soft")));
}

/* Issue 26: uf-bench book ran on the same day before and after the back ends, and every back
 * end's steady step says what its feed thread spent per message, the idle spin taken out. */
static void check_feed_cpu_vs_book(json_t *j)
{
	json_t *fc = json_object_get(j, "feed_cpu_vs_book"), *b;
	const char *ends[] = {"book_before", "book_after"};
	size_t i;

	assert_non_null(fc);
	for (i = 0; i < 2; i++) {
		json_t *bk = json_object_get(fc, ends[i]);
		if (!json_is_true(json_object_get(bk, "ok")))
			fail_msg("%s: %s", ends[i], json_string_value(json_object_get(bk, "note")));
		assert_true(json_integer_value(json_object_get(bk, "messages")) > 0);
		assert_true(json_real_value(json_object_get(bk, "decode_ns_per_msg")) > 0);
		/* decode + books costs more than decode alone */
		assert_true(json_real_value(json_object_get(bk, "ns_per_msg")) >
		            json_real_value(json_object_get(bk, "decode_ns_per_msg")));
		/* the row with the feed's ring and image was found */
		assert_true(json_real_value(json_object_get(bk, "sink_row_ns_per_msg")) > 0);
	}
	assert_int_equal(json_array_size(json_object_get(fc, "backends")), 4);
	json_array_foreach(json_object_get(fc, "backends"), i, b)
	{
		json_t *st =
		    json_object_get(json_array_get(json_object_get(j, "backends"), i), "steady");
		if (!json_is_true(json_object_get(b, "ok")))
			fail_msg("%s: feed CPU not measured: %s",
			         json_string_value(json_object_get(b, "backend")),
			         json_string_value(json_object_get(b, "note")));
		/* the feed thread's messages are the step's, its time and its idle polls seen: the
		 * busy-clock step of its own, a steady replay at the steady step's rate */
		assert_string_equal(json_string_value(json_object_get(b, "step")), "feed_cpu");
		assert_int_equal(json_integer_value(json_object_get(b, "messages")),
		                 json_integer_value(json_object_get(b, "delivered")));
		assert_true(json_integer_value(json_object_get(b, "delivered")) > 0);
		assert_true(json_integer_value(json_object_get(b, "delivered")) <=
		            json_integer_value(json_object_get(st, "messages"))); /* as many sent */
		/* the steady latency step (no busy clock) was estimated too */
		assert_true(json_real_value(json_object_get(b, "steady_work_ns_per_msg")) != 0);
		assert_true(json_integer_value(json_object_get(b, "run_ns")) > 0);
		assert_true(json_integer_value(json_object_get(b, "idle_polls")) > 0);
		assert_true(json_real_value(json_object_get(b, "idle_ns_per_poll")) > 0);
		/* the spin taken out, never added */
		assert_true(json_real_value(json_object_get(b, "work_ns_per_msg")) <=
		            json_real_value(json_object_get(b, "run_ns_per_msg")));
		check_busy_clock(b);
		check_cpu_irqs(b);
	}
}

static void test_e2e_every_backend_reports_latency_rate_and_cpu(void **state)
{
	char dir[64], path[128];
	const char *argv[] = {"uf-bench", "e2e",
	                      "--json",   "--duration",
	                      "1",        "--steps",
	                      "2",        "--burst-steps",
	                      "1",        "--rate",
	                      "20000",    "--max-rate",
	                      "80000",    "--results",
	                      dir,        "--bsize-steps",
	                      "2",        "--max-orders",
	                      "500000",   "--sender-cpu",
	                      "0",        NULL};
	struct tb_run r;
	json_error_t e;
	json_t *j, *bes, *b, *plots, *p;
	size_t i;

	(void)state;
	tb_mkdtemp(dir, sizeof(dir));
	tb_run_tool("uf-bench", argv, 55, &r);
	assert_int_equal(r.status, 0);
	j = json_loads(r.out, 0, &e);
	if (!j)
		fail_msg("stdout is not JSON (%s): %.300s", e.text, r.out);
	assert_string_equal(json_string_value(json_object_get(j, "bench")), "e2e");
	/* the daemon's table size and the consumers' spin are part of what was measured */
	assert_int_equal(
	    json_integer_value(json_object_get(json_object_get(j, "params"), "max_orders")),
	    500000);
	assert_int_equal(
	    json_integer_value(json_object_get(json_object_get(j, "params"), "consumer_spin_us")),
	    -1);
	assert_true(json_integer_value(json_object_get(json_object_get(j, "machine"), "cpus")) > 0);
	assert_true(strlen(json_string_value(
	                json_object_get(json_object_get(j, "machine"), "kernel"))) > 0);
	bes = json_object_get(j, "backends");
	assert_int_equal(json_array_size(bes), 4);
	json_array_foreach(bes, i, b)
	{
		json_t *srch = json_object_get(b, "search"), *s;
		double max = json_real_value(json_object_get(b, "max_rate_no_loss"));
		size_t k;
		int found = max == 0;
		assert_string_equal(json_string_value(json_object_get(b, "backend")),
		                    uf_backend_name((enum uf_backend)i));
		if (!json_is_true(json_object_get(b, "ok")))
			fail_msg("%s did not run: %s", uf_backend_name((enum uf_backend)i),
			         json_string_value(json_object_get(b, "note")));
		check_step(json_object_get(b, "steady"), 1);
		check_step(json_object_get(b, "burst"), 1);
		assert_true(json_real_value(json_object_get(json_object_get(b, "burst"),
		                                            "burst_factor")) == 10);
		assert_true(json_array_size(srch) >= 1 && json_array_size(srch) <= 2);
		json_array_foreach(srch, k, s)
		{
			check_step(s, 0);
			/* the reported maximum is a loss-free step's achieved rate */
			if (!json_is_true(json_object_get(s, "loss")) &&
			    json_real_value(json_object_get(s, "achieved_rate")) == max)
				found = 1;
		}
		assert_true(found);
		{ /* the burst search: same shape, bursts of 10x */
			json_t *bs = json_object_get(b, "burst_search");
			json_t *st = json_object_get(bs, "search");
			double bmax = json_real_value(json_object_get(bs, "max_rate_no_loss"));
			int bfound = bmax == 0;
			assert_true(json_array_size(st) >= 1);
			json_array_foreach(st, k, s)
			{
				check_step(s, 0);
				assert_true(json_real_value(json_object_get(s, "burst_factor")) ==
				            10);
				if (!json_is_true(json_object_get(s, "loss")) &&
				    json_real_value(json_object_get(s, "achieved_rate")) == bmax)
					bfound = 1;
			}
			assert_true(bfound);
		}
		check_vs_raw(b, uf_backend_name((enum uf_backend)i));
		check_stages(json_object_get(b, "steady"));
		check_place_and_syscalls(b, uf_backend_name((enum uf_backend)i), i == 0);
		check_burst_absorb(b);
		if (i < 3) /* busy-polling back ends spend CPU whether or not data comes */
			assert_true(json_integer_value(json_object_get(json_object_get(b, "steady"),
			                                               "cpu_ns")) > 0);
	}
	assert_non_null(json_object_get(json_object_get(j, "ratios"), "epoll_vs_sqpoll_burst_p99"));
	check_feed_cpu_vs_book(j);
	plots = json_object_get(j, "plots");
	if (json_array_size(plots) != 2)
		fail_msg("expected 2 PNG plots (is gnuplot-nox installed?): %s", r.err);
	json_array_foreach(plots, i, p)
	{
		unsigned char magic[4] = {0};
		FILE *f;
		snprintf(path, sizeof(path), "%s/%s", dir, json_string_value(p));
		f = fopen(path, "rb");
		assert_non_null(f);
		assert_int_equal(fread(magic, 1, 4, f), 4);
		fclose(f);
		assert_memory_equal(magic, "\x89PNG", 4);
	}
	json_decref(j);
	snprintf(path, sizeof(path), "%s/e2e.json", dir);
	j = json_load_file(path, 0, &e);
	assert_non_null(j);
	assert_int_equal(json_array_size(json_object_get(j, "backends")), 4);
	json_decref(j);
	tb_run_free(&r);
	tb_rmtree(dir);
}

static void test_e2e_bad_usage_says_why_and_exits_2(void **state)
{
	const char *bad_be[] = {"uf-bench", "e2e", "--backends", "carrier-pigeon", NULL};
	const char *bad_cpu[] = {"uf-bench", "e2e", "--consumer-cpu", "1000", NULL};
	const char *bad_raw[] = {"uf-bench", "e2e", "--raw", "carrier-pigeon", NULL};
	const char *bad_spin[] = {"uf-bench", "e2e", "--consumer-spin-us", "forever", NULL};
	const char *bad_mo[] = {"uf-bench", "e2e", "--max-orders", "12", NULL};
	const char *bad_day[] = {"uf-bench",  "e2e",   "--backends",
	                         "epoll",     "--day", UF_SOURCE_DIR "/CMakeLists.txt",
	                         "--results", "/tmp",  NULL};
	struct tb_run r;

	(void)state;
	tb_run_tool("uf-bench", bad_be, 20, &r);
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err, "carrier-pigeon"));
	tb_run_free(&r);
	tb_run_tool("uf-bench", bad_raw, 20, &r);
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err, "--raw"));
	tb_run_free(&r);
	tb_run_tool("uf-bench", bad_spin, 20, &r);
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err, "--consumer-spin-us: bad value \"forever\""));
	tb_run_free(&r);
	tb_run_tool("uf-bench", bad_mo, 20, &r);
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err, "--max-orders: bad value \"12\""));
	tb_run_free(&r);
	tb_run_tool("uf-bench", bad_cpu, 20, &r);
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err, "CPUs"));
	tb_run_free(&r);
	tb_run_tool("uf-bench", bad_day, 20, &r);
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err, "not a Nasdaq daily-format ITCH file"));
	tb_run_free(&r);
}

/* A bin dir whose uringfeed is `script` (a shell body) and whose uf-gen and uf-replay are the
 * real ones: a daemon that exits at start, made to order. */
static void fake_daemon_dir(const char *dir, const char *script)
{
	const char *bindir = getenv("UF_BIN_DIR") ? getenv("UF_BIN_DIR") : UF_BIN_DIR;
	char path[128], real[1024];
	FILE *f;

	snprintf(path, sizeof(path), "%s/uringfeed", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "#!/bin/sh\n%s\n", script);
	fclose(f);
	assert_int_equal(chmod(path, 0755), 0);
	for (int i = 0; i < 2; i++) {
		const char *tool = i ? "uf-gen" : "uf-replay";
		snprintf(real, sizeof(real), "%s/%s", bindir, tool);
		snprintf(path, sizeof(path), "%s/%s", dir, tool);
		assert_int_equal(symlink(real, path), 0);
	}
}

/* uf-bench keeps its temp folder for a failed daemon's log: each one it named is removed. */
static void remove_kept(const char *err)
{
	const char *k = err;
	int n = 0;
	while ((k = strstr(k, "kept /tmp/uf-bench-e2e-")) != NULL) {
		char cmd[160];
		snprintf(cmd, sizeof(cmd), "rm -rf -- '%.*s'", (int)strcspn(k + 5, "\n'"), k + 5);
		assert_int_equal(system(cmd), 0);
		k += 5;
		n++;
	}
	assert_true(n > 0);
}

/* A daemon that cannot start is reported per back end with its own last words, exit 1. */
static void test_e2e_reports_a_daemon_that_exits_at_start(void **state)
{
	char dir[64], res[96];
	const char *argv[] = {"uf-bench", "e2e",       "--json",     "--duration", "1",
	                      "--steps",  "1",         "--backends", "epoll",      "--bin-dir",
	                      dir,        "--results", res,          "--no-plot",  NULL};
	struct tb_run r;
	json_error_t e;
	json_t *j, *b;

	(void)state;
	tb_mkdtemp(dir, sizeof(dir));
	snprintf(res, sizeof(res), "%s/results", dir);
	fake_daemon_dir(dir, "echo 'uringfeed: broken on purpose' >&2\nexit 1");
	tb_run_tool("uf-bench", argv, 50, &r);
	assert_int_equal(r.status, 1);
	j = json_loads(r.out, 0, &e);
	if (!j)
		fail_msg("stdout is not JSON (%s): %.300s", e.text, r.out);
	b = json_array_get(json_object_get(j, "backends"), 0);
	assert_false(json_is_true(json_object_get(b, "ok")));
	assert_non_null(strstr(json_string_value(json_object_get(b, "note")), "broken on purpose"));
	assert_non_null(strstr(r.err, "broken on purpose"));
	remove_kept(r.err); /* it keeps its temp folder for the log: the test removes it */
	json_decref(j);
	tb_run_free(&r);
	tb_rmtree(dir);
}

/* `--backends io_uring_nosqpoll,nosqpoll+spin`: the same back end twice in one run, only the
 * variant's daemon with "idle_pause": false (the other's key left out: the back end's
 * default), and each config one the real daemon accepts. The daemon is a script that keeps
 * the config it was given and exits, so nothing is replayed. */
static void test_e2e_spin_variant_runs_its_daemon_without_idle_pause(void **state)
{
	char dir[64], res[96], script[256], path[160];
	const char *argv[] = {"uf-bench",   "e2e",        "--json",
	                      "--duration", "1",          "--steps",
	                      "1",          "--backends", "io_uring_nosqpoll,nosqpoll+spin",
	                      "--bin-dir",  dir,          "--results",
	                      res,          "--no-plot",  NULL};
	struct tb_run r;
	json_error_t e;
	json_t *j, *bes;
	int given = 0, left_out = 0;

	(void)state;
	tb_mkdtemp(dir, sizeof(dir));
	snprintf(res, sizeof(res), "%s/results", dir);
	/* uringfeed --config FILE: the nth start's config is kept as cfg.n */
	snprintf(script, sizeof(script),
	         "n=$(ls %s | grep -c '^cfg\\.')\ncp \"$2\" %s/cfg.$n\necho 'uringfeed: kept' >&2\n"
	         "exit 1",
	         dir, dir);
	fake_daemon_dir(dir, script);
	tb_run_tool("uf-bench", argv, 50, &r);
	assert_int_equal(r.status, 1); /* no daemon ran: reported, exit 1 */
	j = json_loads(r.out, 0, &e);
	if (!j)
		fail_msg("stdout is not JSON (%s): %.300s", e.text, r.out);
	bes = json_object_get(j, "backends");
	assert_int_equal(json_array_size(bes), 2);
	assert_string_equal(json_string_value(json_object_get(json_array_get(bes, 0), "label")),
	                    "io_uring");
	assert_string_equal(json_string_value(json_object_get(json_array_get(bes, 1), "label")),
	                    "io_uring+spin");
	for (int n = 0;; n++) {
		snprintf(path, sizeof(path), "%s/cfg.%d", dir, n);
		json_t *c = json_load_file(path, 0, &e);
		if (!c)
			break;
		json_t *feed = json_array_get(json_object_get(c, "feeds"), 0);
		assert_string_equal(json_string_value(json_object_get(feed, "backend")),
		                    "io_uring_nosqpoll");
		json_t *p = json_object_get(feed, "idle_pause");
		if (p) {
			assert_true(json_is_false(p));
			given++;
		} else {
			left_out++;
		}
		json_decref(c);
		const char *chk[] = {"uringfeed", "--check-config", path, "--no-host-checks", NULL};
		struct tb_run v;
		tb_run_tool("uringfeed", chk, 20, &v);
		if (v.status != 0)
			fail_msg("%s is not a valid config: %s", path, v.err);
		tb_run_free(&v);
	}
	assert_true(given >= 1);
	assert_true(left_out >= 1);
	remove_kept(r.err);
	json_decref(j);
	tb_run_free(&r);
	tb_rmtree(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_e2e_bad_usage_says_why_and_exits_2),
	    cmocka_unit_test(test_e2e_reports_a_daemon_that_exits_at_start),
	    cmocka_unit_test(test_e2e_spin_variant_runs_its_daemon_without_idle_pause),
	    cmocka_unit_test(test_e2e_every_backend_reports_latency_rate_and_cpu),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
