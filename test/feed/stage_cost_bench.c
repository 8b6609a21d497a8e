/* stage_cost_bench: what the per-stage timing costs the feed thread per packet. Not a test:
 * run by hand (docs/daemon.md, "Stage timing cost").
 *
 * Replays, in a tight loop, exactly the clock reads and histogram records pipeline.c makes
 * per packet that delivers messages, with stage timing on (ticks, common/uf_tick.h: the TSC
 * when usable, and the same code with CLOCK_REALTIME ticks for hosts without one) and off
 * (one CLOCK_REALTIME read, the wire-to-publish record), on the same struct uf_feed_stats,
 * and prints ns per packet for each and the difference. The best of several rounds is kept: on a
 * shared machine the minimum is the figure least disturbed by other processes. Also prints one
 * clock read and one rdtsc alone.
 *
 *   stage_cost_bench [--packets N] [--rounds R] [--every N (default 16, as the feed)] */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <x86intrin.h>

#include "common/uf_tick.h"
#include "common/uf_time.h"
#include "feed/uf_feed_stats.h"

static struct uf_feed_stats st;
static volatile uint64_t sink_v;

static double now_s(void)
{
	return (double)uf_now_mono_ns() / 1e9;
}

/* Before (and with stage_timing off): one CLOCK_REALTIME read after the sink, the
 * wire-to-publish record for the packet's messages (8 here). */
static double run_off(uint64_t n)
{
	double t = now_s();
	for (uint64_t i = 0; i < n; i++) {
		uint64_t end = uf_now_realtime_ns();
		uf_lat_record_n(&st.latency, (int64_t)(3000 + (end & 1023)), 8);
	}
	return (now_s() - t) * 1e9 / (double)n;
}

/* With stage timing, as pipeline.c does it: one packet in `every` is timed: an anchor (one
 * CLOCK_REALTIME read and one tick) when it is taken, five more ticks (delivered, decoded,
 * books done, ring published in sink.c, image done), one tick -> wall time conversion and
 * seven records (wire-to-publish and six stages); the other packets take the untimed path. */
static double run_on(struct uf_tick_clock *c, uint64_t n, unsigned every)
{
	double t = now_s();
	unsigned left = 1;
	for (uint64_t i = 0; i < n; i++) {
		if (--left) {
			uint64_t end = uf_now_realtime_ns();
			uf_lat_record_n(&st.latency, (int64_t)(3000 + (end & 1023)), 8);
			continue;
		}
		left = every;
		uf_tick_anchor(c);
		uint64_t rx = c->anchor_rt - 3000 - (i & 1023);
		uint64_t tk0 = c->anchor_ticks;
		uf_lat_record(&st.stages[UF_STAGE_RECEIVE], (int64_t)(c->anchor_rt - rx));
		uint64_t t1 = uf_tick_now(c);
		uf_lat_record(&st.stages[UF_STAGE_ARBITRATION], (int64_t)uf_tick_ns(c, t1 - tk0));
		uint64_t t2 = uf_tick_now(c);
		uf_lat_record(&st.stages[UF_STAGE_DECODE], (int64_t)uf_tick_ns(c, t2 - t1));
		uint64_t t3 = uf_tick_now(c);
		uf_lat_record(&st.stages[UF_STAGE_BOOKS], (int64_t)uf_tick_ns(c, t3 - t2));
		uint64_t t4 = uf_tick_now(c);
		uint64_t t5 = uf_tick_now(c);
		uf_lat_record_n(&st.latency, (int64_t)(uf_tick_realtime(c, t5) - rx), 8);
		uf_lat_record(&st.stages[UF_STAGE_RING], (int64_t)uf_tick_ns(c, t4 - t3));
		uf_lat_record(&st.stages[UF_STAGE_IMAGE], (int64_t)uf_tick_ns(c, t5 - t4));
	}
	return (now_s() - t) * 1e9 / (double)n;
}

/* The stand-in for the kernel timestamp above costs one read in both loops. */
static double run_clock(uint64_t n)
{
	double t = now_s();
	uint64_t acc = 0;
	for (uint64_t i = 0; i < n; i++)
		acc += uf_now_realtime_ns();
	sink_v = acc;
	return (now_s() - t) * 1e9 / (double)n;
}

static double run_rdtsc(uint64_t n)
{
	double t = now_s();
	uint64_t acc = 0;
	for (uint64_t i = 0; i < n; i++)
		acc += __rdtsc();
	sink_v = acc;
	return (now_s() - t) * 1e9 / (double)n;
}

int main(int argc, char **argv)
{
	uint64_t n = 2000000;
	int rounds = 7;
	unsigned every = UF_FEED_STAGE_EVERY_DEFAULT;
	static const struct option o[] = {{"packets", required_argument, 0, 'n'},
	                                  {"rounds", required_argument, 0, 'r'},
	                                  {"every", required_argument, 0, 'e'},
	                                  {0, 0, 0, 0}};
	int c;
	while ((c = getopt_long(argc, argv, "", o, NULL)) != -1) {
		if (c == 'n')
			n = strtoull(optarg, NULL, 10);
		else if (c == 'r')
			rounds = atoi(optarg);
		else if (c == 'e')
			every = (unsigned)atoi(optarg) ? (unsigned)atoi(optarg) : 1;
		else
			return 2;
	}
	struct uf_tick_clock clock, noclock;
	uf_tick_init(&clock, 20000000);
	memset(&noclock, 0, sizeof(noclock));
	noclock.mult = 1ull << 32; /* the fallback: ticks are CLOCK_REALTIME ns */
	double off = 1e9, on = 1e9, onr = 1e9, on1 = 1e9, clk = 1e9, tsc = 1e9;
	for (int r = 0; r < rounds; r++) {
		double a = run_off(n), b = run_on(&clock, n, every), k = run_clock(n),
		       t = run_rdtsc(n), br = run_on(&noclock, n, every), b1 = run_on(&clock, n, 1);
		onr = br < onr ? br : onr;
		on1 = b1 < on1 ? b1 : on1;
		off = a < off ? a : off;
		on = b < on ? b : on;
		clk = k < clk ? k : clk;
		tsc = t < tsc ? t : tsc;
	}
	printf("{\"packets\":%llu,\"rounds\":%d,\"every\":%u,\"tsc\":%d,"
	       "\"ns_per_packet_timing_off\":%.1f,\"ns_per_packet_timing_on\":%.1f,"
	       "\"ns_added_per_packet\":%.1f,\"ns_added_per_packet_without_tsc\":%.1f,"
	       "\"ns_added_per_timed_packet\":%.1f,"
	       "\"ns_per_clock_realtime\":%.1f,\"ns_per_rdtsc\":%.1f}\n",
	       (unsigned long long)n, rounds, every, clock.tsc, off, on, on - off, onr - off,
	       on1 - off, clk, tsc);
	return 0;
}
