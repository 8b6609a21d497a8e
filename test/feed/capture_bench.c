/* capture_bench: what the capture costs the feed, and how fast it can write. Not a test: run
 * by hand (docs/capture.md, "Figures"). One in-process feed per replay of a generated day
 * (uf-replay, both lines, loopback), and two measurements in one run:
 *
 *   latency  rounds of (capture off, capture on) at --rate, alternated so both see the same
 *            machine; wire-to-publish from every message record's pub_delta_ns (exact
 *            values, not histogram buckets), p50 / p99 per mode over all its rounds;
 *   search   capture on at doubling rates from --search-from, until the capture dropped or
 *            the feed itself lost messages; then bisected (--search-steps replays): the
 *            highest rate with no capture drop, and what the writer wrote per second. Its
 *            day (--search-messages, default 2 M: ~136 MB of capture) is larger than the
 *            buffer, so the writer's sustained rate is what is measured.
 *
 *   capture_bench [--backend io_uring] [--rate 100000] [--messages 200000] [--rounds 3]
 *                 [--dir /dev/shm/...] [--search-from 400000] [--search-steps 6]
 *                 [--max-rate 6400000] [--cpu C] [--sqpoll-cpu C] [--buffer-mb 64]
 *                 [--search-messages 2000000]
 *                 [--direct-probe]
 * One JSON line per replay, then one summary line. --direct-probe also times 1 MiB writes to
 * --dir buffered and with O_DIRECT (the writer's choice, docs/capture.md). */
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>

#include "feed/uf_feed.h"
#include "feed_prog_util.h"
#include "ring/ufconsumer.h"

static volatile int g_stop;

struct cb_run {
	double rate;         /* messages/s asked */
	int capture;         /* capture on */
	uint64_t messages;   /* delivered */
	uint64_t lost;       /* given up */
	uint64_t cap_drops;  /* capture drops, every reason */
	uint64_t cap_behind; /* of which: writer behind (no free chunk) */
	uint64_t cap_bytes;  /* pcapng bytes written */
	uint64_t cap_pk;     /* datagrams written */
	double wall;         /* replay seconds */
	uint64_t *lat;       /* pub_delta_ns per message record */
	size_t nlat;         /* entries */
};

static void *cb_thread(void *arg)
{
	struct uf_feed *f = arg;
	if (uf_feed_run(f, &g_stop) < 0)
		fprintf(stderr, "uf_feed_run: %s\n", uf_feed_error(f));
	return NULL;
}

/* Every message record's publish delay, from the oldest record of the ring. */
static void cb_read_latency(const char *ring, struct cb_run *r)
{
	char err[256];
	uf_consumer_t *c;
	struct uf_consumer_options o;
	uf_consumer_options_init(&o);
	o.start = UF_CONSUMER_START_OLDEST;
	if (uf_consumer_attach(ring, &o, &c, err, sizeof(err)) < 0) {
		fprintf(stderr, "attach %s: %s\n", ring, err);
		return;
	}
	size_t cap = 1 << 20;
	r->lat = malloc(cap * sizeof(*r->lat));
	struct uf_record rec;
	while (r->lat && uf_consumer_next(c, &rec, NULL) == 0) {
		if (!rec.rx_ts || rec.kind == UF_REC_GAP)
			continue;
		if (r->nlat == cap)
			r->lat = realloc(r->lat, (cap *= 2) * sizeof(*r->lat));
		if (r->lat)
			r->lat[r->nlat++] = rec.pub_delta_ns;
	}
	uf_consumer_detach(c);
}

static int cb_u64cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static uint64_t cb_quantile(uint64_t *v, size_t n, double q)
{
	if (!n)
		return 0;
	size_t i = (size_t)(q * (double)(n - 1));
	return v[i];
}

/* Datagrams the capture still has to write or count (0 once the writer caught up). */
static uint64_t cb_pending(const struct uf_feed_stats *st)
{
	uint64_t done = uf_load_relaxed_u64(&st->capture_packets_written) +
	                uf_load_relaxed_u64(&st->capture_dropped_disk_full) +
	                uf_load_relaxed_u64(&st->capture_dropped_no_dir) +
	                uf_load_relaxed_u64(&st->capture_dropped_read_only) +
	                uf_load_relaxed_u64(&st->capture_dropped_io_error);
	uint64_t in = uf_load_relaxed_u64(&st->capture_packets);
	return in > done ? in - done : 0;
}

/* One replay of the day at `rate` with capture on/off. */
static int cb_replay(struct uf_feed_config *cfg, const char *day, const char *a, const char *b,
                     unsigned messages, double rate, int capture, int want_latency,
                     struct cb_run *out)
{
	struct uf_feed *feed;
	memset(out, 0, sizeof(*out));
	out->rate = rate;
	out->capture = capture;
	cfg->capture.enabled = capture;
	if (fp_feed_create(cfg, &feed))
		return 1;
	g_stop = 0;
	pthread_t thr;
	pthread_create(&thr, NULL, cb_thread, feed);
	struct timespec settle = {0, 200000000};
	nanosleep(&settle, NULL);
	char r[32], port[16];
	snprintf(r, sizeof(r), "%.0f", rate);
	snprintf(port, sizeof(port), "%u", ntohs(cfg->recovery.server.sin_port));
	char *args[] = {"uf-replay", "--in",     (char *)day, "--a", (char *)a,
	                "--b",       (char *)b,  "--rate",    r,     "--serve-rerequests",
	                port,        "--linger", "30",        NULL};
	uint64_t t0 = uf_now_mono_ns();
	pid_t rp = ft_spawn(args, NULL);
	const struct uf_feed_stats *st = uf_feed_stats(feed);
	fp_wait_day(st, messages, t0 + 300ull * 1000000000ull);
	out->wall = (double)(uf_now_mono_ns() - t0) / 1e9;
	g_stop = 1;
	pthread_join(thr, NULL);
	fp_stop_replay(rp);
	/* the feed handed its last chunk over when it stopped: wait for the writer (bounded) */
	uint64_t end = uf_now_mono_ns() + 60000000000ull;
	while (cb_pending(st) && uf_now_mono_ns() < end) {
		struct timespec ts = {0, 1000000};
		nanosleep(&ts, NULL);
	}
	static struct uf_feed_stats s;
	uf_feed_stats_read(st, &s);
	out->messages = s.messages;
	out->lost = s.messages_unrecovered;
	out->cap_drops = s.capture_dropped_writer_behind + s.capture_dropped_disk_full +
	                 s.capture_dropped_no_dir + s.capture_dropped_read_only +
	                 s.capture_dropped_io_error + cb_pending(st);
	out->cap_behind = s.capture_dropped_writer_behind;
	out->cap_bytes = s.capture_bytes_written;
	out->cap_pk = s.capture_packets_written;
	if (want_latency)
		cb_read_latency(cfg->ring.name, out);
	uf_feed_destroy(feed);
	uf_ring_unlink(cfg->ring.name, NULL);
	return 0;
}

static void cb_print(const struct cb_run *r, const char *phase)
{
	uint64_t p50 = 0, p99 = 0;
	if (r->nlat) {
		qsort(r->lat, r->nlat, sizeof(*r->lat), cb_u64cmp);
		p50 = cb_quantile(r->lat, r->nlat, 0.5);
		p99 = cb_quantile(r->lat, r->nlat, 0.99);
	}
	printf("{\"phase\":\"%s\",\"capture\":%s,\"rate\":%.0f,\"messages\":%llu,\"lost\":%llu,"
	       "\"wall_s\":%.3f,\"achieved_msgs_per_s\":%.0f,\"capture_drops\":%llu,"
	       "\"capture_drops_writer_behind\":%llu,\"capture_datagrams\":%llu,"
	       "\"capture_bytes\":%llu,\"capture_bytes_per_msg\":%.2f,\"capture_mb_per_s\":%.1f,"
	       "\"records\":%zu,\"pub_p50_ns\":%llu,\"pub_p99_ns\":%llu}\n",
	       phase, r->capture ? "true" : "false", r->rate, (unsigned long long)r->messages,
	       (unsigned long long)r->lost, r->wall,
	       r->wall > 0 ? (double)r->messages / r->wall : 0.0, (unsigned long long)r->cap_drops,
	       (unsigned long long)r->cap_behind, (unsigned long long)r->cap_pk,
	       (unsigned long long)r->cap_bytes,
	       r->messages ? (double)r->cap_bytes / (double)r->messages : 0.0,
	       r->wall > 0 ? (double)r->cap_bytes / r->wall / 1e6 : 0.0, r->nlat,
	       (unsigned long long)p50, (unsigned long long)p99);
	fflush(stdout);
}

/* MB/s of 256 writes of 1 MiB to a fresh file in `dir`, buffered or O_DIRECT, fsync at the
 * end (what the writer does per chunk, without the io_uring). -1 when refused. */
static double cb_probe(const char *dir, int direct)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/probe-%d.bin", dir, direct);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | (direct ? O_DIRECT : 0), 0600);
	if (fd < 0)
		return -1;
	void *buf;
	if (posix_memalign(&buf, 4096, 1 << 20)) {
		close(fd);
		return -1;
	}
	memset(buf, 0x5a, 1 << 20);
	uint64_t t0 = uf_now_mono_ns();
	int ok = 1;
	for (int i = 0; i < 256 && ok; i++)
		ok = write(fd, buf, 1 << 20) == 1 << 20;
	fsync(fd);
	double s = (double)(uf_now_mono_ns() - t0) / 1e9;
	close(fd);
	unlink(path);
	free(buf);
	return ok ? 256.0 / s : -1;
}

int main(int argc, char **argv)
{
	const char *backend = "io_uring", *dir = NULL;
	double rate = 100000, from = 400000, max_rate = 6400000;
	unsigned messages = 200000, search_messages = 2000000;
	int rounds = 3, steps = 6, cpu = -1, sqcpu = -1, buffer_mb = 64, probe = 0;
	const struct fp_opt o[] = {FP_OPT("dir", dir),
	                           FP_OPT("search-messages", search_messages),
	                           FP_OPT("rounds", rounds),
	                           FP_OPT("search-from", from),
	                           FP_OPT("search-steps", steps),
	                           FP_OPT("max-rate", max_rate),
	                           FP_OPT("cpu", cpu),
	                           FP_OPT("sqpoll-cpu", sqcpu),
	                           FP_OPT("buffer-mb", buffer_mb),
	                           FP_FLAG("direct-probe", probe)};
	struct uf_feed_config cfg;
	char day[256], a[64], b[64], own[128];
	int rc = fp_parse_options(argc, argv, &backend, &rate, &messages, o,
	                          (int)(sizeof(o) / sizeof(o[0])));
	if (!rc)
		rc = fp_config_init(&cfg, "capbench", backend);
	if (!rc)
		rc = fp_ring_dir_and_day(day, sizeof(day), messages, 50);
	if (rc)
		return rc;
	if (!dir) {
		snprintf(own, sizeof(own), "/dev/shm/uf-capture-bench-%d", (int)getpid());
		mkdir(own, 0700);
		dir = own;
	}
	if (probe)
		printf("{\"probe\":\"%s\",\"buffered_mb_per_s\":%.0f,\"o_direct_mb_per_s\":%.0f}\n",
		       dir, cb_probe(dir, 0), cb_probe(dir, 1));
	cfg.cpu = cpu;
	cfg.sqpoll_cpu = sqcpu;
	fp_config_lines(&cfg, 2, 79, 0, 22101, a, b);
	fp_config_recovery(&cfg, 22110, 20, 65536, 1000);
	snprintf(cfg.ring.name, sizeof(cfg.ring.name), "ufcapbench_%d", (int)getpid());
	snprintf(cfg.capture.dir, sizeof(cfg.capture.dir), "%.200s", dir);
	cfg.capture.rotate_mb = 1024;
	cfg.capture.buffer_mb = (uint32_t)buffer_mb;
	cfg.capture.max_total_bytes = 0;

	/* latency: off and on alternated, every message record of each mode pooled */
	struct cb_run pool[2] = {0};
	size_t cap[2] = {0};
	for (int i = 0; i < 2 * rounds; i++) {
		int on = i & 1;
		struct cb_run r;
		if (cb_replay(&cfg, day, a, b, messages, rate, on, 1, &r))
			return 1;
		cb_print(&r, "latency");
		struct cb_run *p = &pool[on];
		if (p->nlat + r.nlat > cap[on]) {
			cap[on] = (p->nlat + r.nlat) * 2;
			p->lat = realloc(p->lat, cap[on] * sizeof(*p->lat));
		}
		memcpy(p->lat + p->nlat, r.lat, r.nlat * sizeof(*r.lat));
		p->nlat += r.nlat;
		p->messages += r.messages;
		p->cap_drops += r.cap_drops;
		free(r.lat);
		ft_rm_dir(dir);
		mkdir(dir, 0700);
	}
	uint64_t q[2][2];
	for (int m = 0; m < 2; m++) {
		qsort(pool[m].lat, pool[m].nlat, sizeof(uint64_t), cb_u64cmp);
		q[m][0] = cb_quantile(pool[m].lat, pool[m].nlat, 0.5);
		q[m][1] = cb_quantile(pool[m].lat, pool[m].nlat, 0.99);
	}

	/* search: capture on, doubling, then bisecting; a step passes with no capture drop
	 * and no message lost by the feed itself */
	char sday[256];
	if (steps > 0 && ft_gen_day(sday, sizeof(sday), search_messages, 50, 12) < 0) {
		fprintf(stderr, "uf-gen failed\n");
		return 1;
	}
	double ok = 0, bad = 0, r = from, best_mbps = 0, best_achieved = 0;
	for (int i = 0; i < steps && r <= max_rate; i++) {
		struct cb_run x;
		if (cb_replay(&cfg, sday, a, b, search_messages, r, 1, 0, &x))
			return 1;
		cb_print(&x, "search");
		int pass = x.cap_drops == 0 && x.lost == 0 && x.messages == search_messages;
		double achieved = x.wall > 0 ? (double)x.messages / x.wall : 0;
		if (pass &&
		    achieved > best_achieved) { /* the sender may not reach the rate asked */
			best_achieved = achieved;
			best_mbps = x.wall > 0 ? (double)x.cap_bytes / x.wall / 1e6 : 0;
		}
		if (pass) {
			ok = r;
		} else {
			bad = r;
		}
		r = bad ? (ok + bad) / 2 : r * 2;
		ft_rm_dir(dir);
		mkdir(dir, 0700);
	}
	printf("{\"summary\":true,\"backend\":\"%s\",\"dir\":\"%s\",\"rate\":%.0f,\"rounds\":%d,"
	       "\"pub_p50_ns_off\":%llu,\"pub_p50_ns_on\":%llu,\"p50_change_pct\":%.1f,"
	       "\"pub_p99_ns_off\":%llu,\"pub_p99_ns_on\":%llu,\"records_off\":%zu,"
	       "\"records_on\":%zu,\"capture_drops_latency_runs\":%llu,"
	       "\"highest_rate_no_capture_drop\":%.0f,\"first_failing_rate\":%.0f,"
	       "\"highest_achieved_msgs_per_s_no_capture_drop\":%.0f,"
	       "\"capture_mb_per_s_at_highest\":%.1f}\n",
	       backend, dir, rate, rounds, (unsigned long long)q[0][0], (unsigned long long)q[1][0],
	       q[0][0] ? 100.0 * ((double)q[1][0] - (double)q[0][0]) / (double)q[0][0] : 0.0,
	       (unsigned long long)q[0][1], (unsigned long long)q[1][1], pool[0].nlat, pool[1].nlat,
	       (unsigned long long)pool[1].cap_drops, ok, bad, best_achieved, best_mbps);
	free(pool[0].lat);
	free(pool[1].lat);
	if (steps > 0)
		unlink(sday);
	if (dir == own)
		ft_rm_dir(own);
	ft_rm_dir(ft_use_ring_dir());
	unlink(day);
	return 0;
}
