/* feed_lag: how far behind the wire does recovery make the published stream run? Runs one feed
 * in-process against uf-replay (loss per line, a re-request server that answers at once, late
 * or not at all), reads every record from the ring while the day plays, and prints one JSON
 * line: max / p99 / p50 of (publish time - wire time) over the day's messages, and the time
 * from the day's last message on the wire to its publication. Not a test: run by hand
 * (docs/feed.md, "Recovery lag").
 *
 *   feed_lag [--backend recvmmsg] [--rate 100000 (0 = full)] [--messages 200000]
 *            [--drop 0.05] [--server on|down] [--server-delay-ms 200] [--seed 1]
 *            [--queue-packets 65536] [--max-rps 1000] [--limit-s 60]
 *
 * Times, from the records (publish/uf_record.h): publish = rx_ts + pub_delta_ns, or, when
 * pub_delta_ns saturated (>= 4.29 s), the time this reader saw the record (later than the
 * publish by at most its read delay). Wire time of message s: the earliest receive time of
 * any record at or after s (s was sent before every later message, so it was on the wire no
 * later than that; for a message received live this is its own rx_ts, for a recovered one
 * the arrival of the first later message that was received). lag = publish - wire is thus
 * exact for live messages and a lower bound for recovered ones. */
#include <pthread.h>

#include "ring/ufconsumer.h"
#include "feed_prog_util.h"

static volatile int g_stop, g_cons_stop;
static struct uf_feed *g_feed;
static char g_ring[32];

struct lag_rec {
	uint64_t seq, rx, pub;
};
static struct lag_rec *g_recs;
static size_t g_n, g_cap;
static int g_cons_err;

static void *run_feed(void *arg)
{
	(void)arg;
	int rc = uf_feed_run(g_feed, &g_stop);
	if (rc < 0)
		fprintf(stderr, "uf_feed_run: %s\n", uf_feed_error(g_feed));
	return NULL;
}

/* Reads the ring from its oldest record until told to stop and the ring is drained. */
static void *run_consumer(void *arg)
{
	(void)arg;
	char err[256];
	struct uf_consumer_options o;
	uf_consumer_options_init(&o);
	o.start = UF_CONSUMER_START_OLDEST;
	o.spin_ns = 200000;
	uf_consumer_t *c;
	if (uf_consumer_attach(g_ring, &o, &c, err, sizeof(err)) < 0) {
		fprintf(stderr, "attach: %s\n", err);
		g_cons_err = 1;
		return NULL;
	}
	static struct uf_record r[512];
	for (;;) {
		int n = uf_consumer_read(c, r, 512, NULL);
		if (n == -EAGAIN) {
			if (g_cons_stop)
				break;
			uf_consumer_wait(c, 1000000);
			continue;
		}
		if (n < 0) {
			fprintf(stderr, "consumer: %s\n", uf_consumer_strerror(n));
			g_cons_err = 1;
			break;
		}
		uint64_t now = uf_now_realtime_ns();
		for (int i = 0; i < n; i++) {
			if (r[i].kind == UF_REC_GAP || !r[i].feed_seq || !r[i].rx_ts)
				continue;
			if (g_n && r[i].feed_seq == g_recs[g_n - 1].seq)
				continue; /* one sample per message */
			if (g_n == g_cap) {
				g_cap = g_cap ? 2 * g_cap : 1 << 20;
				g_recs = realloc(g_recs, g_cap * sizeof(*g_recs));
			}
			struct lag_rec *l = &g_recs[g_n++];
			l->seq = r[i].feed_seq;
			l->rx = r[i].rx_ts;
			l->pub =
			    r[i].pub_delta_ns < UINT32_MAX ? r[i].rx_ts + r[i].pub_delta_ns : now;
		}
	}
	uf_consumer_detach(c);
	return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	const char *backend = "recvmmsg", *server = "on";
	double rate = 100000, drop = 0.05;
	unsigned messages = 200000, seed = 1, queue = 65536, limit_s = 60, delay_ms = 0, rps = 1000;
	const struct fp_opt o[] = {
	    FP_OPT("drop", drop),  FP_OPT("server", server),   FP_OPT("server-delay-ms", delay_ms),
	    FP_OPT("seed", seed),  FP_OPT("limit-s", limit_s), FP_OPT("queue-packets", queue),
	    FP_OPT("max-rps", rps)};
	int rc = fp_parse_options(argc, argv, &backend, &rate, &messages, o,
	                          (int)(sizeof(o) / sizeof(o[0])));
	if (rc)
		return rc;
	int serve = !strcmp(server, "on");
	if (!serve && strcmp(server, "down")) {
		fprintf(stderr, "--server on|down\n");
		return 2;
	}
	struct uf_feed_config cfg;
	char day[256], a[64], b[64], port[16], r[32], dr[32], sd[32], dl[32];
	rc = fp_config_init(&cfg, "lag", backend);
	if (!rc)
		rc = fp_ring_dir_and_day(day, sizeof(day), messages, 50);
	if (rc)
		return rc;
	int base = 23000 + (int)(getpid() % 500) * 4;
	fp_config_lines(&cfg, 2, 79, (int)(getpid() % 200), base, a, b);
	/* The daemon's defaults (daemon/uf_config.h), except the queue when asked. */
	fp_config_recovery(&cfg, base + 2, 2, queue, rps);
	snprintf(g_ring, sizeof(g_ring), "uflag_%d", (int)getpid());
	snprintf(cfg.ring.name, sizeof(cfg.ring.name), "%s", g_ring);
	if (fp_feed_create(&cfg, &g_feed))
		return 1;
	pthread_t thr, cthr;
	pthread_create(&thr, NULL, run_feed, NULL);
	pthread_create(&cthr, NULL, run_consumer, NULL);
	struct timespec settle = {0, 200000000};
	nanosleep(&settle, NULL);
	snprintf(port, sizeof(port), "%d", base + 2);
	snprintf(r, sizeof(r), "%.0f", rate);
	snprintf(dr, sizeof(dr), "%g", drop);
	snprintf(sd, sizeof(sd), "%u", seed);
	snprintf(dl, sizeof(dl), "%u", delay_ms);
	char *args[32] = {"uf-replay", "--in",   day, "--a",      a,   "--b",
	                  b,           "--rate", r,   "--drop-a", dr,  "--drop-b",
	                  dr,          "--seed", sd,  "--linger", "30"};
	int na = 17;
	if (serve) {
		args[na++] = "--serve-rerequests";
		args[na++] = port;
		if (delay_ms) {
			args[na++] = "--rerequest-delay-ms";
			args[na++] = dl;
		}
	}
	args[na] = NULL;
	uint64_t t0 = uf_now_mono_ns();
	pid_t rp = ft_spawn(args, NULL);
	const struct uf_feed_stats *st = uf_feed_stats(g_feed);
	int done = fp_wait_day(st, messages, t0 + (uint64_t)limit_s * 1000000000ull);
	uint64_t t1 = uf_now_mono_ns();
	g_stop = 1;
	pthread_join(thr, NULL);
	g_cons_stop = 1;
	pthread_join(cthr, NULL);
	fp_stop_replay(rp);
	static struct uf_feed_stats s;
	uf_feed_stats_read(st, &s);

	/* wire time: suffix minimum of rx over the stream (records arrive in sequence order) */
	uint64_t *lag = malloc((g_n ? g_n : 1) * sizeof(*lag));
	uint64_t wire = UINT64_MAX, maxlag = 0, end_lag = 0;
	for (size_t i = g_n; i-- > 0;) {
		if (g_recs[i].rx < wire)
			wire = g_recs[i].rx;
		lag[i] = g_recs[i].pub > wire ? g_recs[i].pub - wire : 0;
		if (lag[i] > maxlag)
			maxlag = lag[i];
		if (i == g_n - 1)
			end_lag = lag[i];
	}
	qsort(lag, g_n, sizeof(*lag), cmp_u64);
	uint64_t p99 = g_n ? lag[(size_t)((double)(g_n - 1) * 0.99)] : 0;
	uint64_t p50 = g_n ? lag[(g_n - 1) / 2] : 0;
	printf(
	    "{\"backend\":\"%s\",\"rate\":%.0f,\"messages\":%u,\"drop_per_line\":%g,"
	    "\"server\":\"%s\",\"server_delay_ms\":%u,\"seed\":%u,\"queue_packets\":%u,\"max_"
	    "rps\":%u,"
	    "\"complete\":%d,\"wall_s\":%.3f,\"samples\":%zu,"
	    "\"lag_max_ms\":%.1f,\"lag_p99_ms\":%.1f,\"lag_p50_ms\":%.3f,\"end_lag_ms\":%.1f,"
	    "\"gaps\":%llu,\"gap_messages\":%llu,\"rerequests\":%llu,\"rerequested_messages\":%llu,"
	    "\"rerequest_timeouts\":%llu,\"recovered\":%llu,\"holes_extended\":%llu,"
	    "\"gaps_unrecovered\":%llu,\"unrecovered\":%llu,\"queue_overflows\":%llu,"
	    "\"queued_packets\":%llu,\"consumer_error\":%d}\n",
	    backend, rate, messages, drop, server, delay_ms, seed, queue, rps, done,
	    (double)(t1 - t0) / 1e9, g_n, (double)maxlag / 1e6, (double)p99 / 1e6,
	    (double)p50 / 1e6, (double)end_lag / 1e6, (unsigned long long)s.gaps,
	    (unsigned long long)s.gap_messages, (unsigned long long)s.rerequests,
	    (unsigned long long)s.rerequested_messages, (unsigned long long)s.rerequest_timeouts,
	    (unsigned long long)s.recovered_messages, (unsigned long long)s.holes_extended,
	    (unsigned long long)s.gaps_unrecovered, (unsigned long long)s.messages_unrecovered,
	    (unsigned long long)s.queue_overflows, (unsigned long long)s.queued_packets,
	    g_cons_err);
	free(lag);
	free(g_recs);
	fp_cleanup(g_feed, cfg.ring.name, day);
	return done ? 0 : 1;
}
