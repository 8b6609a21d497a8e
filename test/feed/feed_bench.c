/* feed_bench: how fast can a back end take a generated day without loss, and what CPU does
 * it use? Runs one feed in-process (as the tests do) against uf-replay at a given rate, and
 * prints one JSON line: losses per line and after arbitration, re-requests, CPU of the feed
 * thread, of the SQ poll thread (io_uring) and of the whole process, and the wire-to-publish
 * latency. Not a test: run by hand (docs/feed.md, "Figures").
 *
 *   feed_bench --backend io_uring --rate 400000 [--messages 200000] [--cpu 0]
 *              [--sqpoll-cpu 1] [--symbols 50] [--no-b] [--sqpoll-idle-ms 1000]
 *              [--delay-ms 200] [--stage-every N (0: stage timing off; default 16)] */
#include <dirent.h>
#include <pthread.h>
#include <sys/resource.h>

#include "feed_prog_util.h"

static volatile int g_stop;
static struct uf_feed *g_feed;

static pid_t g_tid;

/* Voluntary (blocked) and involuntary (preempted) context switches of thread `tid`. */
static void ctxsw(pid_t tid, unsigned long *vol, unsigned long *invol)
{
	char path[64], line[128];
	snprintf(path, sizeof(path), "/proc/self/task/%d/status", (int)tid);
	FILE *f = fopen(path, "r");
	*vol = *invol = 0;
	while (f && fgets(line, sizeof(line), f)) {
		sscanf(line, "voluntary_ctxt_switches: %lu", vol);
		sscanf(line, "nonvoluntary_ctxt_switches: %lu", invol);
	}
	if (f)
		fclose(f);
}

static void *run(void *arg)
{
	g_tid = gettid();
	int rc = uf_feed_run(g_feed, &g_stop);
	if (rc < 0)
		fprintf(stderr, "uf_feed_run: %s\n", uf_feed_error(g_feed));
	return NULL;
}

static double cpu_of(clockid_t cid)
{
	struct timespec ts;
	clock_gettime(cid, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* utime + stime (s) of this process's threads whose name starts with `prefix`. */
static double threads_cpu(const char *prefix)
{
	double sum = 0;
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	long hz = sysconf(_SC_CLK_TCK);
	while (d && (e = readdir(d))) {
		char path[300], buf[1024];
		snprintf(path, sizeof(path), "/proc/self/task/%s/stat", e->d_name);
		FILE *f = fopen(path, "r");
		if (!f)
			continue;
		size_t n = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
		buf[n] = 0;
		char *l = strchr(buf, '('), *r = strrchr(buf, ')');
		if (!l || !r || strncmp(l + 1, prefix, strlen(prefix)))
			continue;
		unsigned long ut, st;
		if (sscanf(r + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut,
		           &st) == 2)
			sum += (double)(ut + st) / (double)hz;
	}
	if (d)
		closedir(d);
	return sum;
}

int main(int argc, char **argv)
{
	const char *backend = "io_uring";
	double rate = 200000;
	unsigned messages = 200000, symbols = 50;
	int cpu = -1, sqcpu = -1, no_b = 0, idle_ms = 1000, delay_ms = 200, every = 16;
	const struct fp_opt o[] = {FP_OPT("cpu", cpu),
	                           FP_OPT("sqpoll-cpu", sqcpu),
	                           FP_OPT("symbols", symbols),
	                           FP_FLAG("no-b", no_b),
	                           FP_OPT("sqpoll-idle-ms", idle_ms),
	                           FP_OPT("delay-ms", delay_ms),
	                           FP_OPT("stage-every", every)};
	struct uf_feed_config cfg;
	char day[256], a[64], b[64];
	int rc = fp_parse_options(argc, argv, &backend, &rate, &messages, o,
	                          (int)(sizeof(o) / sizeof(o[0])));
	if (!rc)
		rc = fp_config_init(&cfg, "bench", backend);
	if (!rc)
		rc = fp_ring_dir_and_day(day, sizeof(day), messages, symbols);
	if (rc)
		return rc;
	cfg.cpu = cpu;
	cfg.sqpoll_cpu = sqcpu;
	cfg.sqpoll_idle_ms = (uint32_t)idle_ms;
	fp_config_lines(&cfg, no_b ? 1 : 2, 78, 0, 22001, a, b);
	fp_config_recovery(&cfg, 22010, 20, 65536, 1000);
	snprintf(cfg.ring.name, sizeof(cfg.ring.name), "ufbench_%d", (int)getpid());
	cfg.no_stage_timing = every <= 0;
	cfg.stage_timing_every = every > 0 ? (uint32_t)every : 0;
	if (fp_feed_create(&cfg, &g_feed))
		return 1;
	pthread_t thr;
	pthread_create(&thr, NULL, run, NULL);
	clockid_t fcid;
	pthread_getcpuclockid(thr, &fcid);
	/* ring set up; with delay > sqpoll idle the SQ thread is asleep when traffic starts */
	struct timespec settle = {delay_ms / 1000, (long)(delay_ms % 1000) * 1000000L};
	nanosleep(&settle, NULL);
	double f0 = cpu_of(fcid), s0 = threads_cpu("iou-sqp");
	unsigned long v0, i0, v1, i1;
	ctxsw(g_tid, &v0, &i0);
	struct rusage ru0, ru1;
	getrusage(RUSAGE_SELF, &ru0);
	uint64_t t0 = uf_now_mono_ns();
	char r[32];
	snprintf(r, sizeof(r), "%.0f", rate);
	char *args[] = {"uf-replay", "--in",     day,      "--a", a,
	                "--b",       b,          "--rate", r,     "--serve-rerequests",
	                "22010",     "--linger", "30",     NULL};
	if (no_b) {
		args[5] = "--rate";
		args[6] = r;
		args[7] = "--serve-rerequests";
		args[8] = "22010";
		args[9] = "--linger";
		args[10] = "30";
		args[11] = NULL;
	}
	pid_t rp = ft_spawn(args, NULL);
	const struct uf_feed_stats *st = uf_feed_stats(g_feed);
	fp_wait_day(st, messages, t0 + 120ull * 1000000000ull);
	uint64_t t1 = uf_now_mono_ns();
	double f1 = cpu_of(fcid), s1 = threads_cpu("iou-sqp");
	ctxsw(g_tid, &v1, &i1);
	getrusage(RUSAGE_SELF, &ru1);
	g_stop = 1;
	pthread_join(thr, NULL);
	fp_stop_replay(rp);
	static struct uf_feed_stats s;
	uf_feed_stats_read(st, &s);
	double wall = (double)(t1 - t0) / 1e9;
	double proc = (double)(ru1.ru_utime.tv_sec - ru0.ru_utime.tv_sec + ru1.ru_stime.tv_sec -
	                       ru0.ru_stime.tv_sec) +
	              (double)(ru1.ru_utime.tv_usec - ru0.ru_utime.tv_usec + ru1.ru_stime.tv_usec -
	                       ru0.ru_stime.tv_usec) /
	                  1e6;
	printf(
	    "{\"backend\":\"%s\",\"used\":\"%s\",\"rate\":%.0f,\"messages\":%llu,\"wall_s\":%.3f,"
	    "\"achieved_msgs_per_s\":%.0f,\"line_a_lost\":%llu,\"line_b_lost\":%llu,\"gaps\":%llu,"
	    "\"rerequests\":%llu,\"recovered\":%llu,\"unrecovered\":%llu,\"rearms\":%llu,"
	    "\"cq_overflows\":%llu,\"kernel_drops_a\":%llu,\"kernel_drops_b\":%llu,"
	    "\"packets_a\":%llu,\"packets_b\":%llu,\"line_gaps_a\":%llu,\"line_gaps_b\":%llu,"
	    "\"feed_thread_cpu\":%.2f,\"sqpoll_cpu\":%.2f,\"process_cpu\":%.2f,"
	    "\"feed_blocked\":%lu,\"feed_preempted\":%lu,\"sq_wakeups\":%llu,\"batches\":%llu,"
	    "\"empty_polls\":%llu,"
	    "\"lat_p50_ns\":%llu,\"lat_p99_ns\":%llu,\"lat_p999_ns\":%llu,\"lat_max_ns\":%llu,"
	    "\"stage_every\":%d,\"stage_p50_ns\":{\"receive\":%llu,\"arbitration\":%llu,"
	    "\"decode\":%llu,\"books\":%llu,\"ring\":%llu,\"image\":%llu}}\n",
	    backend, uf_feed_backend_name(g_feed), rate, (unsigned long long)s.messages, wall,
	    (double)s.messages / wall, (unsigned long long)s.lines[0].gap_messages,
	    (unsigned long long)s.lines[1].gap_messages, (unsigned long long)s.gaps,
	    (unsigned long long)s.rerequests, (unsigned long long)s.recovered_messages,
	    (unsigned long long)s.messages_unrecovered,
	    (unsigned long long)(s.lines[0].rearms + s.lines[1].rearms),
	    (unsigned long long)s.cq_overflows, (unsigned long long)s.lines[0].kernel_drops,
	    (unsigned long long)s.lines[1].kernel_drops, (unsigned long long)s.lines[0].packets,
	    (unsigned long long)s.lines[1].packets, (unsigned long long)s.lines[0].gaps,
	    (unsigned long long)s.lines[1].gaps, (f1 - f0) / wall, (s1 - s0) / wall, proc / wall,
	    v1 - v0, i1 - i0, (unsigned long long)s.sq_wakeups, (unsigned long long)s.batches,
	    (unsigned long long)s.busy_polls, (unsigned long long)uf_lat_quantile(&s.latency, 0.5),
	    (unsigned long long)uf_lat_quantile(&s.latency, 0.99),
	    (unsigned long long)uf_lat_quantile(&s.latency, 0.999),
	    (unsigned long long)s.latency.max_ns, every,
	    (unsigned long long)uf_lat_quantile(&s.stages[UF_STAGE_RECEIVE], 0.5),
	    (unsigned long long)uf_lat_quantile(&s.stages[UF_STAGE_ARBITRATION], 0.5),
	    (unsigned long long)uf_lat_quantile(&s.stages[UF_STAGE_DECODE], 0.5),
	    (unsigned long long)uf_lat_quantile(&s.stages[UF_STAGE_BOOKS], 0.5),
	    (unsigned long long)uf_lat_quantile(&s.stages[UF_STAGE_RING], 0.5),
	    (unsigned long long)uf_lat_quantile(&s.stages[UF_STAGE_IMAGE], 0.5));
	fp_cleanup(g_feed, cfg.ring.name, day);
	return 0;
}
