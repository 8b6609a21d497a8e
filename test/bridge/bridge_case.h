/* The fixture of the uf-bridge scenario tests (test_bridge_consumers, test_bridge_security,
 * test_bridge_cluster, test_bridge_restart): one "case" is a set of nats-server processes, a
 * day feeder (uf-bridge-feed) into a ring and uf-bridge publishing that ring, with the book
 * comparisons (local ring, remote handle, uf-tail --nats, uf-decode of the file) and the
 * bounded readers every scenario checks with. The group set-up and teardown are
 * bridge_test_util.h's (bt_setup_dirs / bt_teardown_dirs); each test's teardown is
 * case_teardown. */
#ifndef BRIDGE_CASE_H
#define BRIDGE_CASE_H

#include "bridge_test_util.h"

#define DEPTH "10"

struct bt_case {
	struct bt_nats ns;  /* servers */
	char ring[32];      /* ring name */
	char status[256];   /* bridge status file */
	char start[256];    /* the feeder plays once this exists */
	char feed_out[256]; /* the feeder's stdout */
	pid_t bridge, feed; /* processes */
};

static int g_per_symbol;       /* the next bridge gets --per-symbol */
static const char *g_ack_wait; /* the next bridge gets --ack-wait this, if not NULL */
static const char *g_key_file; /* the next bridge gets --key-file this, if not NULL */
static const char *g_window;   /* the next bridge gets --window this, if not NULL */
static const char *g_batch;    /* the next bridge gets --batch this, if not NULL */
static int g_compact;          /* the next bridge gets --compact */
static const char *g_eager;    /* the next bridge gets --eager this, if not NULL */

/* Names the case's ring (bt`tag`_PID) and files (bt_dir/`tag`.*); no process yet. */
static inline void case_name(struct bt_case *k, const char *tag)
{
	memset(k, 0, sizeof(*k));
	snprintf(k->ring, sizeof(k->ring), "bt%s_%d", tag, (int)getpid());
	snprintf(k->status, sizeof(k->status), "%s/%s.status", bt_dir, tag);
	snprintf(k->start, sizeof(k->start), "%s/%s.start", bt_dir, tag);
	snprintf(k->feed_out, sizeof(k->feed_out), "%s/%s.feed", bt_dir, tag);
}

/* Names the case and starts its `servers` (1, or 3 clustered) JetStream servers. */
static inline void case_begin(struct bt_case *k, const char *tag, int servers)
{
	case_name(k, tag);
	bt_nats_start(&k->ns, servers, tag);
}

/* Starts a feeder of `day` into the case's ring; returns once the ring exists (the feeder
 * then waits for `start` to exist before it plays). */
static inline pid_t case_feed(struct bt_case *k, const char *day, const char *rate,
                              const char *drop, const char *capacity, const char *depth,
                              const char *start, const char *out)
{
	char *feed_argv[] = {"uf-bridge-feed", "--in",         (char *)day,   "--ring",
	                     k->ring,          "--start-file", (char *)start, "--rate",
	                     (char *)rate,     "--drop-every", (char *)drop,  "--capacity",
	                     (char *)capacity, "--depth",      (char *)depth, NULL};
	pid_t pid = bt_spawn(UF_BRIDGE_FEED, feed_argv, out);

	bt_wait_ring_open(k->ring);
	return pid;
}

/* Starts the bridge; returns once it has written its first status (stream, bucket and
 * commit exist). */
static inline void case_bridge_tls(struct bt_case *k, const char *urls, const char *replicas,
                                   int exit_on_close, const char *tls_ca)
{
	char out[300];
	char *argv[32];
	int n = 0;

	argv[n++] = "uf-bridge";
	argv[n++] = "--ring";
	argv[n++] = k->ring;
	argv[n++] = "--nats";
	argv[n++] = (char *)urls;
	argv[n++] = "--replicas";
	argv[n++] = (char *)replicas;
	argv[n++] = "--status-file";
	argv[n++] = k->status;
	argv[n++] = "--kv-interval";
	argv[n++] = "50";
	if (exit_on_close)
		argv[n++] = "--exit-on-close";
	if (g_per_symbol)
		argv[n++] = "--per-symbol";
	if (g_ack_wait) {
		argv[n++] = "--ack-wait";
		argv[n++] = (char *)g_ack_wait;
	}
	if (g_key_file) {
		argv[n++] = "--key-file";
		argv[n++] = (char *)g_key_file;
	}
	if (g_window) {
		argv[n++] = "--window";
		argv[n++] = (char *)g_window;
	}
	if (g_batch) {
		argv[n++] = "--batch";
		argv[n++] = (char *)g_batch;
	}
	if (g_compact)
		argv[n++] = "--compact";
	if (g_eager) {
		argv[n++] = "--eager";
		argv[n++] = (char *)g_eager;
	}
	if (tls_ca) {
		argv[n++] = "--tls-ca";
		argv[n++] = (char *)tls_ca;
	}
	argv[n] = NULL;
	unlink(k->status);
	snprintf(out, sizeof(out), "%s/%s.bridge.%d", bt_dir, k->ring, (int)bt_now_ms());
	k->bridge = bt_spawn(bt_bin("uf-bridge"), argv, out);
	free(bt_wait_status(k->status, "generation", 0, 30000));
}

/* Starts the bridge; returns once it has written its first status (stream, bucket and
 * commit exist). */
static inline void case_bridge(struct bt_case *k, const char *urls, const char *replicas,
                               int exit_on_close)
{
	case_bridge_tls(k, urls, replicas, exit_on_close, NULL);
}

/* Feeder first (it creates the ring and waits for the start file), then the bridge. */
static inline void case_start_cap(struct bt_case *k, const char *day, const char *rate,
                                  const char *drop, const char *urls, const char *replicas,
                                  const char *capacity, const char *depth)
{
	k->feed = case_feed(k, day, rate, drop, capacity, depth, k->start, k->feed_out);
	case_bridge(k, urls, replicas, 1);
}

static inline void case_start(struct bt_case *k, const char *day, const char *rate,
                              const char *drop, const char *urls, const char *replicas)
{
	case_start_cap(k, day, rate, drop, urls, replicas, "1048576", "10");
}

/* The feeder plays: its start file exists. */
static inline void case_go(struct bt_case *k)
{
	bt_touch(k->start);
}

/* Waits for the feeder and the bridge to finish; returns the feeder's summary line. */
static inline char *case_finish(struct bt_case *k)
{
	assert_int_equal(bt_wait(k->feed, 60000), 0);
	assert_int_equal(bt_wait(k->bridge, 60000), 0);
	return uf_test_slurp(k->feed_out);
}

static inline void case_end(struct bt_case *k)
{
	char p[300];

	bt_nats_stop(&k->ns);
	snprintf(p, sizeof(p), "%s/uf.%s", bt_ring_dir, k->ring);
	unlink(p);
	snprintf(p, sizeof(p), "%s/uf.%s.cons", bt_ring_dir, k->ring);
	unlink(p);
}

static inline char *local_books(const struct bt_case *k)
{
	const char *argv[] = {"uf-tail", "--ring", k->ring, "--books", "--depth", DEPTH, NULL};
	return bt_tail(argv);
}

static inline char *remote_books(const struct bt_case *k, const char *urls)
{
	const char *argv[] = {"uf-tail", "--nats",  urls,  "--ring", k->ring,
	                      "--books", "--depth", DEPTH, NULL};
	return bt_tail(argv);
}

static inline char *decode_books(const char *day)
{
	struct uf_test_run r;
	const char *argv[] = {"uf-decode", "books", day, "--depth", DEPTH, NULL};
	char *out;

	uf_test_run_path(bt_bin("uf-decode"), argv, 30000, &r);
	assert_int_equal(r.status, 0);
	out = r.out;
	r.out = NULL;
	uf_test_run_free(&r);
	return out;
}

/* The local books (uf-tail on the ring) are not empty and equal `remote`; frees `remote`. */
static inline void expect_local_books(const struct bt_case *k, char *remote)
{
	char *local = local_books(k);

	assert_true(strlen(local) > 100);
	assert_string_equal(remote, local);
	free(local);
	free(remote);
}

/* The remote handle's books are the file's (`ref`, not empty). */
static inline void expect_remote_books(uf_consumer_t *c, const char *ref)
{
	char *remote = bt_render_books(c, 10);

	assert_true(strlen(ref) > 100);
	assert_string_equal(remote, ref);
	free(remote);
}

/* Both the local books and the remote handle's are the file's (`ref`, not empty). */
static inline void expect_local_and_remote_books(const struct bt_case *k, uf_consumer_t *c,
                                                 const char *ref)
{
	char *remote = bt_render_books(c, 10), *local = local_books(k);

	assert_true(strlen(ref) > 100);
	assert_string_equal(local, ref);
	assert_string_equal(remote, ref);
	free(local);
	free(remote);
}

static inline uf_consumer_t *remote_attach(const char *urls, const char *ring)
{
	struct uf_consumer_options co;
	uf_consumer_t *c = NULL;
	char name[400], err[512];
	int rc;

	uf_consumer_options_init(&co);
	co.tag = "test_bridge";
	snprintf(name, sizeof(name), "%s/%s", urls, ring);
	rc = uf_consumer_attach(name, &co, &c, err, sizeof(err));
	if (rc < 0)
		fail_msg("attach %s: %s", name, err);
	return c;
}

struct drain {
	uint64_t received; /* records read */
	uint64_t next;     /* sequence expected next */
	int closed;        /* -EPIPE seen */
};

/* Reads `c` until the ring is closed (-EPIPE), failing after `ms`: each batch of records goes
 * to `batch` (may be NULL), each lap to `lapped` (NULL: a lap fails the test). */
static inline void
read_to_close(uf_consumer_t *c, uint64_t ms,
              void (*batch)(const struct uf_record *r, int n, uint64_t seq, void *arg),
              void (*lapped)(const struct uf_consumer_lap *lap, void *arg), void *arg)
{
	struct uf_record recs[256];
	uint64_t end = bt_now_ms() + ms, seq;

	for (;;) {
		int n = uf_consumer_read(c, recs, 256, &seq);
		if (n > 0) {
			if (batch)
				batch(recs, n, seq, arg);
			continue;
		}
		if (n == -EPIPE)
			return;
		if (n == -EOVERFLOW) {
			struct uf_consumer_lap lap;
			uf_consumer_last_lap(c, &lap);
			if (!lapped)
				fail_msg("remote consumer lost %" PRIu64 " records at %" PRIu64,
				         lap.lost, lap.from_seq);
			lapped(&lap, arg);
			continue;
		}
		assert_int_equal(n, -EAGAIN);
		assert_true(bt_now_ms() < end);
		uf_consumer_wait(c, 100000000);
	}
}

struct drain_run {
	struct drain *d;
	uint64_t at_count;
	void (*at)(void *);
	void *arg;
	int fired;
};

static inline void drain_batch(const struct uf_record *r, int n, uint64_t seq, void *arg)
{
	struct drain_run *x = arg;
	struct drain *d = x->d;

	(void)r;
	if (seq != d->next)
		fail_msg("records jump from %" PRIu64 " to %" PRIu64, d->next, seq);
	d->next = seq + (uint64_t)n;
	d->received += (uint64_t)n;
	if (!x->fired && d->received >= x->at_count) {
		x->at(x->arg);
		x->fired = 1;
	}
}

/* Reads until the ring is closed (bounded), checking that sequences follow each other with
 * no lap; calls `at` once after `at_count` records. */
static inline void drain(uf_consumer_t *c, struct drain *d, uint64_t at_count, void (*at)(void *),
                         void *arg)
{
	struct drain_run x = {d, at_count, at, arg, at == NULL};

	read_to_close(c, 90000, drain_batch, NULL, &x);
	d->closed = 1;
	assert_true(x.fired);
}

/* One-node case at full speed with a remote consumer that reads nothing until the day is
 * played; returns the feeder's summary line. */
static inline char *case_play_unread(struct bt_case *k, const char *tag, const char *day,
                                     uf_consumer_t **c)
{
	case_begin(k, tag, 1);
	case_start(k, day, "0", "0", k->ns.urls, "1");
	*c = remote_attach(k->ns.urls, k->ring);
	case_go(k);
	return case_finish(k);
}

struct laps {
	uint64_t laps, lost;
};

static inline void count_lap(const struct uf_consumer_lap *lap, void *arg)
{
	struct laps *n = arg;

	n->lost += lap->lost;
	n->laps++;
}

static inline int case_teardown(void **state)
{
	bt_kill_all();
	g_key_file = NULL; /* a failed case must not leave its key to the next */
	unsetenv("UF_NATS_KEY");
	unsetenv("UF_NATS_KEY_FILE");
	return 0;
}

#endif /* BRIDGE_CASE_H */
