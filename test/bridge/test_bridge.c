/* NATS JetStream fan-out with real servers: uf-bridge republishes a ring fed from a generated
 * day; remote consumers (libufconsumer "nats://", uf-tail --nats) must end with exactly the
 * local books, across the SIGKILL of a cluster node and the hang (SIGSTOP) of the bridge's
 * node, when they join late, and a consumer that reads nothing must not hold the bridge
 * back. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <dirent.h>

#include <nats/nats.h>

#include "bridge_test_util.h"
#include "ring/nats/nats_auth.h"
#include "ring/nats/nats_book.h"
#include "ring/nats/uf_nats_wire.h"

#define DEPTH "10"

struct bt_case {
	struct bt_nats ns;  /* servers */
	char ring[32];      /* ring name */
	char status[256];   /* bridge status file */
	char start[256];    /* the feeder plays once this exists */
	char feed_out[256]; /* the feeder's stdout */
	pid_t bridge, feed; /* processes */
};

static char g_ring_dir[128];
static int g_per_symbol;                /* the next bridge gets --per-symbol */
static const char *g_ack_wait;          /* the next bridge gets --ack-wait this, if not NULL */
static const char *g_key_file;          /* the next bridge gets --key-file this, if not NULL */
static const char *g_window;            /* the next bridge gets --window this, if not NULL */
static const char *g_batch;             /* the next bridge gets --batch this, if not NULL */
static int g_compact;                   /* the next bridge gets --compact */
static const char *g_eager;             /* the next bridge gets --eager this, if not NULL */
static struct bt_case *g_stepdown_case; /* for lap_drain_batch() */

static void case_begin(struct bt_case *k, const char *tag, int servers)
{
	memset(k, 0, sizeof(*k));
	snprintf(k->ring, sizeof(k->ring), "bt%s_%d", tag, (int)getpid());
	snprintf(k->status, sizeof(k->status), "%s/%s.status", bt_dir, tag);
	snprintf(k->start, sizeof(k->start), "%s/%s.start", bt_dir, tag);
	snprintf(k->feed_out, sizeof(k->feed_out), "%s/%s.feed", bt_dir, tag);
	bt_nats_start(&k->ns, servers, tag);
}

/* Starts a feeder of `day` into the case's ring; returns once the ring exists (the feeder
 * then waits for `start` to exist before it plays). */
static pid_t case_feed(struct bt_case *k, const char *day, const char *rate, const char *drop,
                       const char *capacity, const char *depth, const char *start, const char *out)
{
	char *feed_argv[] = {"uf-bridge-feed", "--in",         (char *)day,   "--ring",
	                     k->ring,          "--start-file", (char *)start, "--rate",
	                     (char *)rate,     "--drop-every", (char *)drop,  "--capacity",
	                     (char *)capacity, "--depth",      (char *)depth, NULL};
	struct uf_consumer_info info;
	pid_t pid = bt_spawn(UF_BRIDGE_FEED, feed_argv, out);
	char shm[300];

	snprintf(shm, sizeof(shm), "%s/uf.%s", g_ring_dir, k->ring);
	for (uint64_t end = bt_now_ms() + 10000;; bt_sleep_ms(10)) {
		struct uf_consumer_options co;
		uf_consumer_t *c;
		assert_true(bt_now_ms() < end);
		if (access(shm, F_OK) != 0)
			continue;
		uf_consumer_options_init(&co); /* a new generation once it is not closed */
		if (uf_consumer_attach(k->ring, &co, &c, NULL, 0) < 0)
			continue;
		uf_consumer_get_info(c, &info);
		uf_consumer_detach(c);
		if (!info.closed)
			break;
	}
	return pid;
}

/* Starts the bridge; returns once it has written its first status (stream, bucket and
 * commit exist). */
static void case_bridge_tls(struct bt_case *k, const char *urls, const char *replicas,
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
static void case_bridge(struct bt_case *k, const char *urls, const char *replicas,
                        int exit_on_close)
{
	case_bridge_tls(k, urls, replicas, exit_on_close, NULL);
}

/* Feeder first (it creates the ring and waits for the start file), then the bridge. */
static void case_start_cap(struct bt_case *k, const char *day, const char *rate, const char *drop,
                           const char *urls, const char *replicas, const char *capacity,
                           const char *depth)
{
	k->feed = case_feed(k, day, rate, drop, capacity, depth, k->start, k->feed_out);
	case_bridge(k, urls, replicas, 1);
}

static void case_start(struct bt_case *k, const char *day, const char *rate, const char *drop,
                       const char *urls, const char *replicas)
{
	case_start_cap(k, day, rate, drop, urls, replicas, "1048576", "10");
}

static void case_go(struct bt_case *k)
{
	FILE *f = fopen(k->start, "w");
	assert_non_null(f);
	fclose(f);
}

/* Waits for the feeder and the bridge to finish; returns the feeder's summary line. */
static char *case_finish(struct bt_case *k)
{
	assert_int_equal(bt_wait(k->feed, 60000), 0);
	assert_int_equal(bt_wait(k->bridge, 60000), 0);
	return uf_test_slurp(k->feed_out);
}

static void case_end(struct bt_case *k)
{
	char p[300];

	bt_nats_stop(&k->ns);
	snprintf(p, sizeof(p), "%s/uf.%s", g_ring_dir, k->ring);
	unlink(p);
	snprintf(p, sizeof(p), "%s/uf.%s.cons", g_ring_dir, k->ring);
	unlink(p);
}

static char *local_books(const struct bt_case *k)
{
	const char *argv[] = {"uf-tail", "--ring", k->ring, "--books", "--depth", DEPTH, NULL};
	return bt_tail(argv);
}

static char *remote_books(const struct bt_case *k, const char *urls)
{
	const char *argv[] = {"uf-tail", "--nats",  urls,  "--ring", k->ring,
	                      "--books", "--depth", DEPTH, NULL};
	return bt_tail(argv);
}

static char *decode_books(const char *day)
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
static void expect_local_books(const struct bt_case *k, char *remote)
{
	char *local = local_books(k);

	assert_true(strlen(local) > 100);
	assert_string_equal(remote, local);
	free(local);
	free(remote);
}

/* The remote handle's books are the file's (`ref`, not empty). */
static void expect_remote_books(uf_consumer_t *c, const char *ref)
{
	char *remote = bt_render_books(c, 10);

	assert_true(strlen(ref) > 100);
	assert_string_equal(remote, ref);
	free(remote);
}

/* Both the local books and the remote handle's are the file's (`ref`, not empty). */
static void expect_local_and_remote_books(const struct bt_case *k, uf_consumer_t *c,
                                          const char *ref)
{
	char *remote = bt_render_books(c, 10), *local = local_books(k);

	assert_true(strlen(ref) > 100);
	assert_string_equal(local, ref);
	assert_string_equal(remote, ref);
	free(local);
	free(remote);
}

static uf_consumer_t *remote_attach(const char *urls, const char *ring)
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
static void read_to_close(uf_consumer_t *c, uint64_t ms,
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

static void drain_batch(const struct uf_record *r, int n, uint64_t seq, void *arg)
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
static void drain(uf_consumer_t *c, struct drain *d, uint64_t at_count, void (*at)(void *),
                  void *arg)
{
	struct drain_run x = {d, at_count, at, arg, at == NULL};

	read_to_close(c, 90000, drain_batch, NULL, &x);
	d->closed = 1;
	assert_true(x.fired);
}

/* One-node case at full speed with a remote consumer that reads nothing until the day is
 * played; returns the feeder's summary line. */
static char *case_play_unread(struct bt_case *k, const char *tag, const char *day,
                              uf_consumer_t **c)
{
	case_begin(k, tag, 1);
	case_start(k, day, "0", "0", k->ns.urls, "1");
	*c = remote_attach(k->ns.urls, k->ring);
	case_go(k);
	return case_finish(k);
}

/* A day with losses (every 997th message an unrecovered gap): the remote books equal the
 * local ones, through the library and through uf-tail --nats. */
static void test_remote_books_equal_local_books_on_a_day_with_loss(void **state)
{
	struct bt_case k;
	const char *day = bt_gen_day(50000, 30, 7);
	char *feed, *st;

	case_begin(&k, "loss", 1);
	case_start(&k, day, "0", "997", k.ns.urls, "1");
	case_go(&k);
	feed = case_finish(&k);
	assert_true(bt_json_num(feed, "gaps") >= 50);
	st = uf_test_slurp(k.status);
	assert_int_equal(bt_json_num(st, "published"), bt_json_num(feed, "records"));
	assert_int_equal(bt_json_num(st, "laps"), 0);
	expect_local_books(&k, remote_books(&k, k.ns.urls));
	free(feed);
	free(st);
	case_end(&k);
}

/* Publishes on the record subject of `k`, as any NATS client allowed to publish there can: a
 * CLOSED far ahead and a DATA at first sequence 2^40 of the current generation (read from the
 * bridge's status), with and without a Nats-Msg-Id of the bridge's form. */
static void forge_messages(const struct bt_case *k)
{
	natsConnection *nc = NULL;
	char subj[128], *st = uf_test_slurp(k->status);
	unsigned char buf[sizeof(struct uf_nats_msg) + sizeof(struct uf_record)];
	struct uf_nats_msg h;

	snprintf(subj, sizeof(subj), "uf.%s.seq", k->ring);
	assert_int_equal(natsConnection_ConnectTo(&nc, k->ns.urls), NATS_OK);
	for (int kind = 0; kind < 2; kind++) {
		memset(&h, 0, sizeof(h));
		h.magic = UF_NATS_MAGIC;
		h.version = UF_NATS_VERSION;
		h.generation = (uint64_t)bt_json_num(st, "generation");
		h.kind = kind == 0 ? UF_NATS_CLOSED : UF_NATS_DATA;
		h.count = kind == 0 ? 0 : 1;
		h.first_seq = 1ull << 40;
		memset(buf, 0, sizeof(buf));
		memcpy(buf, &h, sizeof(h));
		assert_int_equal(
		    natsConnection_Publish(nc, subj, buf,
		                           (int)(sizeof(h) + h.count * sizeof(struct uf_record))),
		    NATS_OK);
	}
	assert_int_equal(natsConnection_Flush(nc), NATS_OK);
	natsConnection_Destroy(nc);
	free(st);
}

static void forge_cb(void *arg)
{
	forge_messages(arg);
}

/* A forger publishes a CLOSED and a DATA at 2^40 on the record subject mid-stream: the remote
 * consumer drops both, receives every genuine record once and ends with the books uf-decode
 * computes, as does uf-tail --nats (issue 23 item 12). */
static void test_forged_messages_on_the_record_subject_are_dropped(void **state)
{
	struct bt_case k;
	const char *day = bt_gen_day(30000, 30, 13);
	struct drain d = {0};
	char *feed, *ref;
	uf_consumer_t *c;

	case_begin(&k, "forge", 1);
	ref = decode_books(day);
	case_start(&k, day, "8000", "0", k.ns.urls, "1");
	c = remote_attach(k.ns.urls, k.ring);
	case_go(&k);
	drain(c, &d, 10000, forge_cb, &k);
	feed = case_finish(&k);
	assert_int_equal(d.received, bt_json_num(feed, "records"));
	expect_local_and_remote_books(&k, c, ref);
	uf_consumer_detach(c);
	free(feed);
	free(ref);
	case_end(&k);
}

/* Publishes one message on the record subject of ring `ring` as a second NATS client: header
 * `h`, `nrec` records (each a LEVEL of instrument 1 at a price no book holds), and a
 * Nats-Msg-Id of the bridge's form unless `msgid` says otherwise ("" = no header). */
static void forge_one_mac(natsConnection *nc, const char *ring, const struct uf_nats_msg *h,
                          uint32_t nrec, const char *msgid, int junk_mac)
{
	unsigned char
	    buf[sizeof(struct uf_nats_msg) + 4 * sizeof(struct uf_record) + UF_NATS_MAC_LEN];
	char subj[128], id[UF_NATS_MSG_ID_MAX];
	natsMsg *m = NULL;

	assert_true(nrec <= 4);
	memset(buf, 0, sizeof(buf));
	memcpy(buf, h, sizeof(*h));
	for (uint32_t i = 0; i < nrec; i++) {
		struct uf_record r;
		memset(&r, 0, sizeof(r));
		r.kind = UF_REC_LEVEL;
		r.instrument = 1;
		r.price = 999999999;
		r.shares = 4242;
		memcpy(buf + sizeof(*h) + i * sizeof(r), &r, sizeof(r));
	}
	snprintf(subj, sizeof(subj), "uf.%s.seq", ring);
	snprintf(id, sizeof(id), "%" PRIu64 ":%u:%" PRIu64 ":%u", h->generation, (unsigned)h->kind,
	         h->first_seq, (unsigned)h->count);
	if (junk_mac) /* a MAC made without the key */
		memset(buf + sizeof(*h) + nrec * sizeof(struct uf_record), 0x5a, UF_NATS_MAC_LEN);
	assert_int_equal(natsMsg_Create(&m, subj, NULL, (const char *)buf,
	                                (int)(sizeof(*h) + nrec * sizeof(struct uf_record) +
	                                      (junk_mac ? UF_NATS_MAC_LEN : 0))),
	                 NATS_OK);
	if (!msgid || msgid[0])
		assert_int_equal(natsMsgHeader_Set(m, "Nats-Msg-Id", msgid ? msgid : id), NATS_OK);
	assert_int_equal(natsConnection_PublishMsg(nc, m), NATS_OK);
	natsMsg_Destroy(m);
}

static void forge_one(natsConnection *nc, const char *ring, const struct uf_nats_msg *h,
                      uint32_t nrec, const char *msgid)
{
	forge_one_mac(nc, ring, h, nrec, msgid, 0);
}

static struct uf_nats_msg forge_header(uint64_t generation, uint8_t kind, uint64_t first,
                                       uint64_t aux, uint32_t count)
{
	struct uf_nats_msg h;

	memset(&h, 0, sizeof(h));
	h.magic = UF_NATS_MAGIC;
	h.version = UF_NATS_VERSION;
	h.kind = kind;
	h.count = count;
	h.generation = generation;
	h.first_seq = first;
	h.aux = aux;
	return h;
}

/* Waits (bounded) until the remote handle has dropped `want` messages. */
static void wait_forged(uf_consumer_t *c, uint32_t want)
{
	struct uf_consumer_info info;

	for (uint64_t end = bt_now_ms() + 20000;; bt_sleep_ms(20)) {
		uf_consumer_get_info(c, &info);
		if (info.forged >= want)
			break;
		if (bt_now_ms() > end)
			fail_msg("remote consumer dropped %u forged messages, not %u", info.forged,
			         want);
	}
	assert_int_equal(info.forged, want);
}

struct forge_run {
	struct bt_case *k;
	uf_consumer_t *c;
};

/* Mid-stream, as a second client: DATA at 2^40, a CLOSED at the consumer's tail, and a
 * replay of records the consumer already has (a genuine stored DATA message cut one record
 * short, so JetStream's de-duplication does not hide it). */
static void forge_mid_stream(void *arg)
{
	struct forge_run *x = arg;
	struct uf_consumer_info info;
	natsConnection *nc = NULL;
	jsCtx *js = NULL;
	char stream[64];
	int replayed = 0;

	uf_consumer_get_info(x->c, &info);
	snprintf(stream, sizeof(stream), "UF_%s", x->k->ring);
	assert_int_equal(natsConnection_ConnectTo(&nc, x->k->ns.urls), NATS_OK);
	assert_int_equal(natsConnection_JetStream(&js, nc, NULL), NATS_OK);
	for (uint64_t seq = 1; seq < 50 && !replayed; seq++) {
		natsMsg *m = NULL;
		struct uf_nats_msg h;
		if (js_GetMsg(&m, js, stream, seq, NULL, NULL) != NATS_OK)
			continue;
		memcpy(&h, natsMsg_GetData(m), sizeof(h));
		if (h.kind == UF_NATS_DATA && h.count >= 2 && h.first_seq + h.count < info.tail) {
			char subj[128], id[UF_NATS_MSG_ID_MAX];
			natsMsg *r = NULL;
			h.count--;
			snprintf(subj, sizeof(subj), "uf.%s.seq", x->k->ring);
			snprintf(id, sizeof(id), "%" PRIu64 ":%u:%" PRIu64 ":%u", h.generation,
			         (unsigned)h.kind, h.first_seq, (unsigned)h.count);
			assert_int_equal(
			    natsMsg_Create(&r, subj, NULL, natsMsg_GetData(m),
			                   (int)(sizeof(h) + h.count * sizeof(struct uf_record))),
			    NATS_OK);
			memcpy((char *)natsMsg_GetData(r), &h, sizeof(h));
			assert_int_equal(natsMsgHeader_Set(r, "Nats-Msg-Id", id), NATS_OK);
			assert_int_equal(natsConnection_PublishMsg(nc, r), NATS_OK);
			natsMsg_Destroy(r);
			replayed = 1;
		}
		natsMsg_Destroy(m);
	}
	assert_true(replayed);
	{
		struct uf_nats_msg d =
		    forge_header(info.generation, UF_NATS_DATA, 1ull << 40, 0, 1);
		struct uf_nats_msg cl =
		    forge_header(info.generation, UF_NATS_CLOSED, info.tail, 0, 0);
		forge_one(nc, x->k->ring, &d, 1, NULL);
		forge_one(nc, x->k->ring, &cl, 0, NULL);
	}
	assert_int_equal(natsConnection_Flush(nc), NATS_OK);
	jsCtx_Destroy(js);
	natsConnection_Destroy(nc);
}

/* Forged messages in the bridge's own form (ids naming their content), by a second NATS
 * client: before the day plays, a CLOSED exactly at the consumer's tail, a LAP to 2^40, a
 * RESET of another generation, a DATA continuing the tail with a wrong id and one without
 * an id; mid-stream a DATA at 2^40, a CLOSED at the tail and a replay of records already
 * received. The remote consumer (and uf-tail --nats following it) drops and counts exactly
 * those 8, is not closed before the real end, receives every genuine record once and ends
 * with the books uf-decode computes (issue 23 item 12). */
static void test_forged_bridge_form_messages_are_refused_and_counted(void **state)
{
	struct bt_case k;
	const char *day = bt_gen_day(30000, 30, 17);
	struct uf_consumer_info info;
	struct drain d = {0};
	struct forge_run x;
	natsConnection *nc = NULL;
	char *feed, *ref, *tail_err, tail_out[300], tail_errp[310];
	const char *tail_argv[] = {"uf-tail", "--nats", NULL, "--ring", NULL, "--json", NULL};
	pid_t tail;
	uf_consumer_t *c;

	case_begin(&k, "forgeid", 1);
	ref = decode_books(day);
	case_start(&k, day, "8000", "0", k.ns.urls, "1");
	c = remote_attach(k.ns.urls, k.ring);
	tail_argv[2] = k.ns.urls;
	tail_argv[4] = k.ring;
	snprintf(tail_out, sizeof(tail_out), "%s/forgeid.tail", bt_dir);
	snprintf(tail_errp, sizeof(tail_errp), "%s.err", tail_out);
	tail = bt_spawn(bt_bin("uf-tail"), (char *const *)tail_argv, tail_out);
	bt_sleep_ms(1500); /* uf-tail attached (a later attach would only miss forgeries) */
	uf_consumer_get_info(c, &info);
	d.next = info.tail;
	assert_int_equal(natsConnection_ConnectTo(&nc, k.ns.urls), NATS_OK);
	{
		struct uf_nats_msg cl =
		    forge_header(info.generation, UF_NATS_CLOSED, info.tail, 0, 0);
		struct uf_nats_msg lap =
		    forge_header(info.generation, UF_NATS_LAP, info.tail, 1ull << 40, 0);
		struct uf_nats_msg rs = forge_header(info.generation + 1, UF_NATS_RESET, 0, 0, 0);
		struct uf_nats_msg dt =
		    forge_header(info.generation, UF_NATS_DATA, info.tail, 0, 1);
		forge_one(nc, k.ring, &cl, 0, NULL);
		forge_one(nc, k.ring, &lap, 0, NULL);
		forge_one(nc, k.ring, &rs, 0, NULL);
		forge_one(nc, k.ring, &dt, 1, "not-the-bridge");
		forge_one(nc, k.ring, &dt, 1, "");
	}
	assert_int_equal(natsConnection_Flush(nc), NATS_OK);
	natsConnection_Destroy(nc);
	wait_forged(c, 4); /* the CLOSED at the tail waits for the commit entry: counted once
	                    * records follow it */
	bt_sleep_ms(500);  /* idle: the commit entry is asked again, still not closed */
	assert_int_equal(uf_consumer_read(c, (struct uf_record[1]){0}, 1, NULL), -EAGAIN);
	uf_consumer_get_info(c, &info);
	assert_int_equal(info.closed, 0);
	{
		char *st = uf_test_slurp(k.status);
		assert_int_equal(info.generation, bt_json_num(st, "generation"));
		free(st);
	}

	x.k = &k;
	x.c = c;
	case_go(&k);
	drain(c, &d, 10000, forge_mid_stream, &x);
	feed = case_finish(&k);
	assert_int_equal(d.received, bt_json_num(feed, "records"));
	uf_consumer_get_info(c, &info);
	assert_int_equal(info.forged, 8);
	assert_int_equal(info.closed, 1);
	expect_local_and_remote_books(&k, c, ref);
	/* uf-tail --nats was not ended by the forged CLOSEDs: it printed every record and said
	 * what it dropped */
	assert_int_equal(bt_wait(tail, 60000), 0);
	{
		char *out = uf_test_slurp(tail_out);
		uint64_t lines = 0;
		for (const char *p = out; *p; p++)
			lines += *p == '\n';
		assert_int_equal(lines, bt_json_num(feed, "records"));
		free(out);
	}
	tail_err = uf_test_slurp(tail_errp);
	assert_non_null(strstr(tail_err, "stream messages dropped so far"));
	uf_consumer_detach(c);
	free(tail_err);
	free(feed);
	free(ref);
	case_end(&k);
}

static void write_key(const char *path, const char *key)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fprintf(f, "%s\n", key);
	fclose(f);
}

/* Attaching `ring` with the environment as it is must fail (the shared key does not match). */
static void expect_attach_refused(const char *urls, const char *ring, const char *why)
{
	struct uf_consumer_options co;
	uf_consumer_t *c = NULL;
	char name[400], err[512] = "";

	uf_consumer_options_init(&co);
	snprintf(name, sizeof(name), "%s/%s", urls, ring);
	assert_true(uf_consumer_attach(name, &co, &c, err, sizeof(err)) < 0);
	assert_null(c);
	assert_non_null(strstr(err, why));
}

/* With a shared key on the bridge and the consumer, a second client that knows the bridge's
 * message form but not the key publishes a DATA continuing exactly at the consumer's tail
 * with a fake level (the one forgery the stream checks alone cannot refuse), unsigned or
 * with a MAC made without the key, under each id the bridge's next message can have, and a
 * CLOSED at the tail: all are dropped and counted, the books end as uf-decode computes. The
 * forged DATA takes the id the bridge's first message has (ids are predictable): JetStream
 * drops the bridge's as a duplicate until the bridge sees the stored message is not its own
 * and publishes it again under a random suffix, so every record still arrives. A consumer with a
 * wrong key, or none, cannot attach: it believes nothing (issue 23 item 12). */
static void test_shared_key_forger_cannot_change_a_remote_book(void **state)
{
	struct bt_case k;
	const char *day = bt_gen_day(20000, 30, 19);
	char key[300], wrong[300], *feed, *ref;
	struct uf_consumer_info info;
	struct drain d = {0};
	natsConnection *nc = NULL;
	uf_consumer_t *c;

	snprintf(key, sizeof(key), "%s/fanout.key", bt_dir);
	snprintf(wrong, sizeof(wrong), "%s/wrong.key", bt_dir);
	write_key(key, "4f1c0a7d9e2b5c8a1f3e6d9c2b5a8e1d");
	write_key(wrong, "4f1c0a7d9e2b5c8a1f3e6d9c2b5a8e1e");
	g_key_file = key;
	case_begin(&k, "key", 1);
	ref = decode_books(day);
	case_start(&k, day, "8000", "0", k.ns.urls, "1");
	g_key_file = NULL;
	unsetenv("UF_NATS_KEY");
	unsetenv("UF_NATS_KEY_FILE");
	expect_attach_refused(k.ns.urls, k.ring, "commit entry has the wrong size");
	setenv("UF_NATS_KEY_FILE", wrong, 1);
	expect_attach_refused(k.ns.urls, k.ring, "not authenticated by the shared key");
	setenv("UF_NATS_KEY", "short", 1); /* ignored: the file comes first */
	setenv("UF_NATS_KEY_FILE", key, 1);
	c = remote_attach(k.ns.urls, k.ring);
	unsetenv("UF_NATS_KEY");
	uf_consumer_get_info(c, &info);
	d.next = info.tail;
	assert_int_equal(natsConnection_ConnectTo(&nc, k.ns.urls), NATS_OK);
	{
		struct uf_nats_msg cl =
		    forge_header(info.generation, UF_NATS_CLOSED, info.tail, 0, 0);
		/* DATA at the tail under every id the bridge's first message can have (1 to 64
		 * records: it takes what the ring holds when it wakes), unsigned or with a MAC
		 * made without the key */
		for (uint32_t n = 1; n <= 64; n++) {
			struct uf_nats_msg dt =
			    forge_header(info.generation, UF_NATS_DATA, info.tail, 0, n);
			forge_one_mac(nc, k.ring, &dt, n < 4 ? n : 4, NULL, (int)(n & 1));
		}
		forge_one_mac(nc, k.ring, &cl, 0, NULL, 1);
	}
	assert_int_equal(natsConnection_Flush(nc), NATS_OK);
	natsConnection_Destroy(nc);
	wait_forged(c, 65);
	uf_consumer_get_info(c, &info);
	assert_int_equal(info.tail, d.next); /* no fake level was taken */
	assert_int_equal(info.closed, 0);
	case_go(&k);
	drain(c, &d, 0, NULL, NULL);
	feed = case_finish(&k);
	assert_int_equal(d.received, bt_json_num(feed, "records"));
	uf_consumer_get_info(c, &info);
	assert_int_equal(info.forged, 65);
	{ /* the bridge saw its first message's id taken and said so */
		char prefix[64], path[400], *log = NULL;
		struct dirent *e;
		DIR *dir = opendir(bt_dir);
		assert_non_null(dir);
		snprintf(prefix, sizeof(prefix), "%s.bridge.", k.ring);
		while ((e = readdir(dir)) != NULL && !log) {
			size_t n = strlen(e->d_name);
			if (strncmp(e->d_name, prefix, strlen(prefix)) != 0 || n < 4 ||
			    strcmp(e->d_name + n - 4, ".err") != 0)
				continue;
			snprintf(path, sizeof(path), "%s/%s", bt_dir, e->d_name);
			log = uf_test_slurp(path);
		}
		closedir(dir);
		assert_non_null(log);
		assert_non_null(strstr(log, "message id taken by another publisher"));
		free(log);
	}
	expect_local_and_remote_books(&k, c, ref);
	{ /* uf-tail --nats, with the key file from the environment it inherits */
		char *rt = remote_books(&k, k.ns.urls);
		assert_string_equal(rt, ref);
		free(rt);
	}
	uf_consumer_detach(c);
	unsetenv("UF_NATS_KEY_FILE");
	free(feed);
	free(ref);
	case_end(&k);
}

/* The bucket is deleted (an operator, a purge) and then the stream says the bridge was lapped:
 * the books can no longer be loaded, so the remote consumer gives up instead of going on
 * with books it cannot repair: uf_consumer_read returns -EIO, the handle reports the
 * producer not alive (issue 23 item 17: `failed` was never set). */
static void test_remote_consumer_gives_up_when_the_bucket_is_gone(void **state)
{
	struct bt_case k;
	const char *day = bt_gen_day(2000, 10, 23);
	struct uf_consumer_info info;
	struct uf_record rec;
	natsConnection *nc = NULL;
	jsCtx *js = NULL;
	char bucket[64];
	uf_consumer_t *c;
	int rc = 0;

	case_begin(&k, "gone", 1);
	case_start(&k, day, "0", "0", k.ns.urls, "1");
	c = remote_attach(k.ns.urls, k.ring);
	uf_consumer_get_info(c, &info);
	assert_int_equal(info.producer_alive, 1);
	kill(k.bridge, SIGKILL); /* it would write the bucket again */
	bt_wait(k.bridge, 5000);
	snprintf(bucket, sizeof(bucket), "UF_%s_books", k.ring);
	assert_int_equal(natsConnection_ConnectTo(&nc, k.ns.urls), NATS_OK);
	assert_int_equal(natsConnection_JetStream(&js, nc, NULL), NATS_OK);
	assert_int_equal(js_DeleteKeyValue(js, bucket), NATS_OK);
	{
		struct uf_nats_msg lap =
		    forge_header(info.generation, UF_NATS_LAP, info.tail, info.tail + 5, 0);
		forge_one(nc, k.ring, &lap, 0, NULL);
	}
	assert_int_equal(natsConnection_Flush(nc), NATS_OK);
	for (uint64_t end = bt_now_ms() + 30000; bt_now_ms() < end;) {
		rc = uf_consumer_read(c, &rec, 1, NULL);
		if (rc != -EAGAIN)
			break;
		uf_consumer_wait(c, 100000000);
	}
	assert_int_equal(rc, -EIO);
	uf_consumer_get_info(c, &info);
	assert_int_equal(info.producer_alive, 0);
	assert_int_equal(info.forged, 0); /* not a forgery: the consumer could not tell */
	assert_int_equal(uf_consumer_wait(c, 1000000000), 0); /* nothing more to wait for */
	uf_consumer_detach(c);
	jsCtx_Destroy(js);
	natsConnection_Destroy(nc);
	case_go(&k);
	bt_wait(k.feed, 60000);
	case_end(&k);
}

static void kill_first_node(void *arg)
{
	struct bt_case *k = arg;

	kill(k->ns.pid[0], SIGKILL); /* the node the bridge and the consumer are connected to */
	bt_wait(k->ns.pid[0], 5000);
	k->ns.pid[0] = 0;
}

/* Three nodes, replicas 3: the node that both the bridge and a streaming remote consumer are
 * connected to is SIGKILLed mid-stream. The consumer must see every record once, in order,
 * and end with the books uf-decode computes from the file. */
static void test_remote_consumer_streams_across_sigkill_of_a_cluster_node(void **state)
{
	struct bt_case k;
	const char *day = bt_gen_day(30000, 30, 11);
	struct drain d = {0};
	char *feed, *ref, *tail, urls23[200];
	uf_consumer_t *c;

	case_begin(&k, "clu", 3);
	ref = decode_books(day);
	case_start(&k, day, "8000", "0", k.ns.urls, "3");
	c = remote_attach(k.ns.urls, k.ring);
	case_go(&k);
	drain(c, &d, 15000, kill_first_node, &k);
	assert_int_equal(k.ns.pid[0], 0); /* the kill happened mid-stream */
	feed = case_finish(&k);
	assert_int_equal(d.received, bt_json_num(feed, "records"));
	expect_local_and_remote_books(&k, c, ref);
	snprintf(urls23, sizeof(urls23), "nats://127.0.0.1:%d,nats://127.0.0.1:%d", k.ns.port[1],
	         k.ns.port[2]);
	tail = remote_books(&k, urls23);
	assert_string_equal(tail, ref);
	uf_consumer_detach(c);
	free(feed);
	free(ref);
	free(tail);
	case_end(&k);
}

/* A consumer that attaches while the day is half played starts from the bucket's books (its
 * first sequence is not 0: it never read the first half) and ends with the right books. */
static void test_late_remote_consumer_snapshot_then_stream(void **state)
{
	struct bt_case k;
	const char *day = bt_gen_day(40000, 30, 13);
	struct uf_consumer_info info;
	struct drain d = {0};
	char *feed, *ref, *st;
	uf_consumer_t *c;

	case_begin(&k, "late", 1);
	ref = decode_books(day);
	case_start(&k, day, "20000", "0", k.ns.urls, "1");
	case_go(&k);
	st = bt_wait_status(k.status, "published", 30000, 30000);
	free(st);
	c = remote_attach(k.ns.urls, k.ring);
	uf_consumer_get_info(c, &info);
	assert_true(info.position >= 30000);
	d.next = info.position;
	drain(c, &d, 0, NULL, NULL);
	feed = case_finish(&k);
	assert_int_equal(d.next, bt_json_num(feed, "tail"));
	expect_remote_books(c, ref);
	uf_consumer_detach(c);
	free(feed);
	free(ref);
	case_end(&k);
}

/* A remote consumer that reads nothing while the whole day goes through: the bridge finishes
 * (everything published, never lapped) before the consumer read a single record; the
 * consumer then still gets every record. */
static void test_slow_remote_consumer_never_slows_the_bridge(void **state)
{
	struct bt_case k;
	const char *day = bt_gen_day(50000, 30, 17);
	struct uf_consumer_info info;
	struct drain d = {0};
	char *feed, *st;
	uf_consumer_t *c;

	feed = case_play_unread(&k, "slow", day, &c);
	uf_consumer_get_info(c, &info);
	assert_int_equal(info.received, 0);
	st = uf_test_slurp(k.status);
	assert_int_equal(bt_json_num(st, "published"), bt_json_num(feed, "records"));
	assert_int_equal(bt_json_num(st, "laps"), 0);
	drain(c, &d, 0, NULL, NULL);
	assert_int_equal(d.received, bt_json_num(feed, "records"));
	uf_consumer_detach(c);
	free(feed);
	free(st);
	case_end(&k);
}

struct laps {
	uint64_t laps, lost;
};

static void count_lap(const struct uf_consumer_lap *lap, void *arg)
{
	struct laps *n = arg;

	n->lost += lap->lost;
	n->laps++;
}

/* The bridge is stopped (SIGSTOP) until the ring laps it: it must say so on the stream (the
 * remote consumer loses exactly the records the bridge lost, lap for lap), re-snapshot from
 * the ring's image, and the remote consumer must still end with the local books. */
static void test_lapped_bridge_resnapshots_and_remote_consumer_sees_the_lap(void **state)
{
	struct bt_case k;
	const char *day = bt_gen_day(40000, 30, 19);
	struct uf_consumer_options co;
	struct uf_consumer_info li;
	struct laps seen = {0};
	uf_consumer_t *c, *local;
	uint64_t stopped_at, end;
	char *st, *feed, err[256];

	case_begin(&k, "lap", 1);
	/* image depth 64: the re-snapshot is then the whole book of every instrument */
	case_start_cap(&k, day, "20000", "0", k.ns.urls, "1", "4096", "64");
	uf_consumer_options_init(&co);
	assert_int_equal(uf_consumer_attach(k.ring, &co, &local, err, sizeof(err)), 0);
	c = remote_attach(k.ns.urls, k.ring);
	case_go(&k);
	st = bt_wait_status(k.status, "published", 20000, 30000);
	free(st);
	assert_int_equal(kill(k.bridge, SIGSTOP), 0);
	uf_consumer_get_info(local, &li);
	stopped_at = li.tail;
	for (end = bt_now_ms() + 30000; li.tail < stopped_at + 2 * 4096 && !li.closed;) {
		assert_true(bt_now_ms() < end);
		bt_sleep_ms(5);
		uf_consumer_get_info(local, &li);
	}
	assert_true(li.tail >= stopped_at + 2 * 4096); /* the ring went round past the bridge */
	assert_int_equal(kill(k.bridge, SIGCONT), 0);
	read_to_close(c, 60000, NULL, count_lap, &seen);
	feed = case_finish(&k);
	st = uf_test_slurp(k.status);
	/* at least the forced lap; a loaded machine may lap the bridge again while it
	 * re-snapshots (the ring holds 90 ms here): each one must reach the consumer */
	assert_true(bt_json_num(st, "laps") >= 1);
	assert_true(bt_json_num(st, "lost") > 0);
	assert_int_equal(seen.laps, bt_json_num(st, "laps"));
	assert_int_equal(seen.lost, bt_json_num(st, "lost"));
	expect_local_books(&k, bt_render_books(c, 10));
	uf_consumer_detach(c);
	uf_consumer_detach(local);
	free(st);
	free(feed);
	case_end(&k);
}

/* A string field of a one-line JSON object ("key":"value") into out, or "". */
static void json_str(const char *json, const char *key, char *out, size_t len)
{
	char pat[64];
	const char *p, *q;

	snprintf(pat, sizeof(pat), "\"%s\":\"", key);
	p = json ? strstr(json, pat) : NULL;
	q = p ? strchr(p + strlen(pat), '"') : NULL;
	out[0] = '\0';
	if (q)
		snprintf(out, len, "%.*s", (int)(q - p - strlen(pat)), p + strlen(pat));
}

/* Reads the ordered subject of the case's stream from the start through the CLOSED message
 * (via `urls`): one RESET at 0, then DATA messages that follow each other exactly (no
 * overlap: nothing stored twice; no hole: nothing lost; ring order), no LAP. Returns the
 * records counted. */
static uint64_t stream_records_exactly_once(const struct bt_case *k, const char *urls)
{
	natsConnection *nc = NULL;
	natsSubscription *sub = NULL;
	jsSubOptions so;
	jsCtx *js = NULL;
	char subj[128];
	uint64_t next = 0, resets = 0;

	snprintf(subj, sizeof(subj), "uf.%s.seq", k->ring);
	assert_int_equal(natsConnection_ConnectTo(&nc, urls), NATS_OK);
	assert_int_equal(natsConnection_JetStream(&js, nc, NULL), NATS_OK);
	jsSubOptions_Init(&so);
	so.Ordered = true;
	/* right after a node was lost the cluster may still be electing leaders: the consumer
	 * creation times out meanwhile (bounded: 60 s, as the remote consumer's attach) */
	for (uint64_t end = bt_now_ms() + 60000;; bt_sleep_ms(200)) {
		natsStatus s = js_SubscribeSync(&sub, js, subj, NULL, &so, NULL);
		if (s == NATS_OK)
			break;
		assert_int_equal(s, NATS_TIMEOUT);
		assert_true(bt_now_ms() < end);
	}
	for (;;) {
		natsMsg *m = NULL;
		struct uf_nats_msg h;
		if (natsSubscription_NextMsg(&m, sub, 10000) != NATS_OK)
			fail_msg("%s: no CLOSED message after %" PRIu64 " records", subj, next);
		assert_true(natsMsg_GetDataLength(m) >= (int)sizeof(h));
		memcpy(&h, natsMsg_GetData(m), sizeof(h));
		natsMsg_Destroy(m);
		if (h.kind == UF_NATS_CLOSED) {
			assert_int_equal(h.first_seq, next);
			break;
		}
		assert_int_not_equal(h.kind, UF_NATS_LAP);
		if (h.kind == UF_NATS_RESET) {
			assert_int_equal(h.first_seq, 0);
			resets++;
			continue;
		}
		assert_int_equal(h.kind, UF_NATS_DATA);
		if (h.first_seq != next)
			fail_msg("%s: DATA of %" PRIu64 "..%" PRIu64 " after %" PRIu64 " records",
			         subj, h.first_seq, h.first_seq + h.count - 1, next);
		next += h.count;
	}
	assert_int_equal(resets, 1);
	natsSubscription_Destroy(sub);
	jsCtx_Destroy(js);
	natsConnection_Destroy(nc);
	return next;
}

/* The leader of `stream` as seen through `js`, into out ("" while there is none). */
static void stream_leader(jsCtx *js, const char *stream, char *out, size_t len)
{
	jsStreamInfo *si = NULL;

	out[0] = '\0';
	if (js_GetStreamInfo(&si, js, stream, NULL, NULL) == NATS_OK && si->Cluster &&
	    si->Cluster->Leader)
		snprintf(out, len, "%s", si->Cluster->Leader);
	jsStreamInfo_Destroy(si);
}

/* Moves the leader of `stream` off server `name` (leader step-downs, bounded: 30 s). */
static void stream_leader_off(natsConnection *nc, jsCtx *js, const char *stream, const char *name)
{
	char leader[64], subj[200];

	snprintf(subj, sizeof(subj), "$JS.API.STREAM.LEADER.STEPDOWN.%s", stream);
	for (uint64_t end = bt_now_ms() + 30000;; bt_sleep_ms(200)) {
		natsMsg *reply = NULL;
		assert_true(bt_now_ms() < end);
		stream_leader(js, stream, leader, sizeof(leader));
		if (leader[0] && strcmp(leader, name) != 0)
			return;
		if (leader[0])
			(void)natsConnection_Request(&reply, nc, subj, NULL, 0, 5000);
		natsMsg_Destroy(reply);
	}
}

/* Three nodes, replicas 3: the node the bridge is connected to is SIGSTOPped mid-stream. It
 * keeps its TCP connections and answers nothing: the bridge must count acknowledgement
 * timeouts, report itself not connected with the lag growing, leave that node for another
 * and go on publishing while it is still stopped. The stream must hold every record exactly
 * once, in order, and a streaming remote consumer (on the other nodes) must get them all
 * and end with uf-decode's books. The node stays stopped 3 s at least (the bound is
 * 2 x 500 ms), then resumes with the bridge's last message possibly still unread in its
 * socket: JetStream's duplicate window must drop it.
 * The stopped node leads neither the stream, nor the bucket, nor the remote consumer's
 * JetStream consumer: the bridge's failover is what is tested here, not the cluster's leader
 * elections (with the stream's leader stopped, the bridge also gets through, after the
 * election, but the remote consumer's ordered JetStream consumer, re-created by libnats,
 * was seen to skip a message: a remote consumer matter, reported as a lap, not hidden). */
static void test_bridge_fails_over_from_a_hung_cluster_node(void **state)
{
	natsConnection *nc = NULL;
	jsConsumerInfoList *cl = NULL;
	jsCtx *js = NULL;
	char stream[64], kv[80], name0[32], seen[20][64];
	int nseen = 0;
	struct bt_case k;
	const char *day = bt_gen_day(40000, 30, 53);
	struct drain d = {0};
	char *feed, *ref, *st, urls12[200], hung[64], server[128];
	int64_t published_at_stop, max_lag = 0;
	int saw_down = 0, moved = 0;
	uint64_t stopped_ms, moved_ms = 0, end;
	uf_consumer_t *c;

	case_begin(&k, "hang", 3);
	ref = decode_books(day);
	g_ack_wait = "500";
	case_start(&k, day, "5000", "0", k.ns.urls, "3");
	g_ack_wait = NULL;
	snprintf(hung, sizeof(hung), "nats://127.0.0.1:%d", k.ns.port[0]);
	snprintf(urls12, sizeof(urls12), "nats://127.0.0.1:%d,nats://127.0.0.1:%d", k.ns.port[1],
	         k.ns.port[2]);
	snprintf(stream, sizeof(stream), "UF_%s", k.ring);
	snprintf(kv, sizeof(kv), "KV_UF_%s_books", k.ring);
	snprintf(name0, sizeof(name0), "hang0"); /* bt_nats_start names nodes tag + index */
	assert_int_equal(natsConnection_ConnectTo(&nc, urls12), NATS_OK);
	assert_int_equal(natsConnection_JetStream(&js, nc, NULL), NATS_OK);
	stream_leader_off(nc, js, stream, name0);
	stream_leader_off(nc, js, kv, name0);
	/* the remote consumer's JetStream consumer (R1) is placed by the cluster: attached
	 * again until its new consumer is not on the node to be stopped (bounded; the ones
	 * left behind idle until the server drops them) */
	for (int tries = 0;; tries++) {
		int mine = 0, on0 = 0;
		assert_true(tries < 20);
		c = remote_attach(urls12, k.ring);
		assert_int_equal(js_Consumers(&cl, js, stream, NULL, NULL), NATS_OK);
		for (int i = 0; i < cl->Count; i++) {
			const jsConsumerInfo *ci = cl->List[i];
			int old = 0;
			for (int j = 0; j < nseen; j++)
				old |= strcmp(seen[j], ci->Name) == 0;
			if (old)
				continue;
			mine++;
			on0 |= !ci->Cluster || !ci->Cluster->Leader ||
			       strcmp(ci->Cluster->Leader, name0) == 0;
			if (nseen < 20)
				snprintf(seen[nseen++], sizeof(seen[0]), "%s", ci->Name);
		}
		jsConsumerInfoList_Destroy(cl);
		cl = NULL;
		assert_int_equal(mine, 1);
		if (!on0)
			break;
		uf_consumer_detach(c);
	}
	jsCtx_Destroy(js);
	natsConnection_Destroy(nc);
	case_go(&k);
	st = bt_wait_status(k.status, "published", 5000, 30000);
	json_str(st, "server", server, sizeof(server));
	assert_string_equal(server, hung); /* the first of the list, as given */
	free(st);
	assert_int_equal(kill(k.ns.pid[0], SIGSTOP), 0);
	stopped_ms = bt_now_ms();
	st = uf_test_slurp(k.status);
	published_at_stop = bt_json_num(st, "published");
	free(st);
	/* while the node is stopped: the lag shows, "connected" drops, then the bridge
	 * publishes again through another node (bounded: leader elections take seconds) */
	for (end = bt_now_ms() + 40000; !moved || bt_now_ms() < stopped_ms + 3000;
	     bt_sleep_ms(10)) {
		if (bt_now_ms() > end)
			fail_msg("the bridge never left the stopped node (lag seen %lld, %s)",
			         (long long)max_lag,
			         saw_down ? "connected 0 seen" : "always connected");
		st = uf_test_slurp(k.status);
		if (!st[0]) {
			free(st);
			continue;
		}
		json_str(st, "server", server, sizeof(server));
		if (bt_json_num(st, "lag") > max_lag)
			max_lag = bt_json_num(st, "lag");
		if (bt_json_num(st, "connected") == 0)
			saw_down = 1;
		moved = moved || (bt_json_num(st, "connected") == 1 && server[0] &&
		                  strcmp(server, hung) != 0 &&
		                  bt_json_num(st, "published") > published_at_stop + 1000);
		if (moved && !moved_ms)
			moved_ms = bt_now_ms();
		free(st);
	}
	assert_int_equal(kill(k.ns.pid[0], SIGCONT), 0);
	fprintf(stderr,
	        "# publishing through another node %llu ms after the stop (lag seen %lld)\n",
	        (unsigned long long)(moved_ms - stopped_ms), (long long)max_lag);
	assert_true(max_lag > 0);
	assert_true(saw_down);
	feed = case_finish(&k);
	/* the stream first (it is the reference), then what the remote consumer made of it */
	assert_int_equal(stream_records_exactly_once(&k, urls12), bt_json_num(feed, "records"));
	drain(c, &d, 0, NULL, NULL); /* every record once, in order, no lap */
	assert_int_equal(d.received, bt_json_num(feed, "records"));
	st = uf_test_slurp(k.status);
	assert_true(bt_json_num(st, "failovers") >= 1);
	assert_true(bt_json_num(st, "ack_timeouts") >= 2);
	assert_int_equal(bt_json_num(st, "laps"), 0);
	assert_int_equal(bt_json_num(st, "published"), bt_json_num(feed, "records"));
	assert_int_equal(bt_json_num(st, "lag"), 0);
	expect_local_and_remote_books(&k, c, ref);
	uf_consumer_detach(c);
	free(st);
	free(feed);
	free(ref);
	case_end(&k);
}

/* Records as read, folded into one hash, with the sequences checked to follow each other. */
struct rec_hash {
	uint64_t next;     /* sequence expected next */
	uint64_t received; /* records read */
	uint64_t h;        /* FNV-1a of every record's 64 bytes, in order */
	uint64_t at_count; /* call at(arg) once after this many records (0: never) */
	void (*at)(void *);
	void *arg;
	int fired;
};

static void hash_batch(const struct uf_record *r, int n, uint64_t seq, void *arg)
{
	struct rec_hash *x = arg;
	const unsigned char *p = (const unsigned char *)r;

	if (seq != x->next)
		fail_msg("records jump from %" PRIu64 " to %" PRIu64, x->next, seq);
	for (size_t i = 0; i < (size_t)n * sizeof(*r); i++)
		x->h = (x->h ^ p[i]) * 0x100000001b3ull;
	x->next = seq + (uint64_t)n;
	x->received += (uint64_t)n;
	if (x->at && !x->fired && x->received >= x->at_count) {
		x->at(x->arg);
		x->fired = 1;
	}
}

/* Three nodes, replicas 3, the bridge at full speed with a small window of small messages
 * (16 x 32 records) so that the window is full when the node the bridge and a streaming
 * remote consumer are connected to is SIGKILLed: messages in flight are lost with the node,
 * the bridge sends its window again from the first unacknowledged one, and nothing may be
 * lost, doubled or reordered. The stream read back holds every record once in ring order;
 * the remote consumer's records are byte for byte the local ring's, in the same order.
 * `compact`: the records cross in the compact form (wire version 2). `eager`: the bridge
 * runs with --eager 2 (partial messages held while 2 are in flight) and the day is paced
 * (20,000 messages/s) so that the bridge catches up with the ring and holds: the window is
 * then not full, the status must show the holds instead. */
static void window_full_across_sigkill(int compact, int eager)
{
	struct bt_case k;
	const char *day = bt_gen_day(60000, 30, 29);
	struct rec_hash remote = {.h = 0xcbf29ce484222325ull}, local = {.h = 0xcbf29ce484222325ull};
	struct uf_consumer_options co;
	uf_consumer_t *c, *lc;
	char *feed, *st, urls12[200];

	case_begin(&k, eager ? "wine" : compact ? "winc" : "win", 3);
	g_window = "16";
	g_batch = "32";
	g_ack_wait = "500";
	g_compact = compact;
	g_eager = eager ? "2" : NULL;
	case_start(&k, day, eager ? "20000" : "0", "0", k.ns.urls, "3");
	g_window = g_batch = g_ack_wait = g_eager = NULL;
	g_compact = 0;
	c = remote_attach(k.ns.urls, k.ring);
	case_go(&k);
	remote.at_count = 20000;
	remote.at = kill_first_node;
	remote.arg = &k;
	read_to_close(c, 90000, hash_batch, NULL, &remote);
	assert_true(remote.fired);
	assert_int_equal(k.ns.pid[0], 0); /* the kill happened mid-stream */
	feed = case_finish(&k);
	assert_int_equal(remote.received, bt_json_num(feed, "records"));
	/* the local ring still holds the day: the producer's records, in order */
	uf_consumer_options_init(&co);
	co.start = UF_CONSUMER_START_OLDEST;
	assert_int_equal(uf_consumer_attach(k.ring, &co, &lc, NULL, 0), 0);
	read_to_close(lc, 30000, hash_batch, NULL, &local);
	uf_consumer_detach(lc);
	assert_int_equal(local.received, remote.received);
	assert_true(local.h == remote.h);
	snprintf(urls12, sizeof(urls12), "nats://127.0.0.1:%d,nats://127.0.0.1:%d", k.ns.port[1],
	         k.ns.port[2]);
	assert_int_equal(stream_records_exactly_once(&k, urls12), bt_json_num(feed, "records"));
	st = uf_test_slurp(k.status);
	fprintf(stderr, "# %s\n", st);
	if (eager) {
		assert_true(bt_json_num(st, "held") > 0); /* partial messages were held */
	} else {
		assert_true(bt_json_num(st, "window_full") > 0); /* the window did fill up */
		assert_true(bt_json_num(st, "resends") >= 1); /* the kill cost messages in flight */
	}
	assert_int_equal(bt_json_num(st, "order_errors"), 0);
	assert_int_equal(bt_json_num(st, "laps"), 0);
	assert_int_equal(bt_json_num(st, "published"), bt_json_num(feed, "records"));
	if (compact) /* fewer bytes than the records: they did cross compact */
		assert_true(bt_json_num(st, "bytes") <
		            bt_json_num(st, "published") * (int64_t)sizeof(struct uf_record));
	uf_consumer_detach(c);
	free(st);
	free(feed);
	case_end(&k);
}

static void test_async_window_full_across_sigkill_of_a_cluster_node(void **state)
{
	(void)state;
	window_full_across_sigkill(0, 0);
}

static void test_compact_records_across_sigkill_of_a_cluster_node(void **state)
{
	(void)state;
	window_full_across_sigkill(1, 0);
}

/* The same with --eager 2 --compact: holding partial messages changes when messages are cut,
 * not what the window guarantees across the kill. */
static void test_eager_compact_records_across_sigkill_of_a_cluster_node(void **state)
{
	(void)state;
	window_full_across_sigkill(1, 1);
}

/* Asks the stream's leader to step down `times` times, each once a leader is known again
 * (bounded). */
static void stepdowns(void *arg)
{
	struct bt_case *k = arg;
	natsConnection *nc = NULL;
	jsCtx *js = NULL;
	char stream[64], subj[200], leader[64], prev[64] = "";

	snprintf(stream, sizeof(stream), "UF_%s", k->ring);
	snprintf(subj, sizeof(subj), "$JS.API.STREAM.LEADER.STEPDOWN.%s", stream);
	assert_int_equal(natsConnection_ConnectTo(&nc, k->ns.urls), NATS_OK);
	assert_int_equal(natsConnection_JetStream(&js, nc, NULL), NATS_OK);
	for (int i = 0; i < 3; i++) {
		natsMsg *reply = NULL;
		for (uint64_t end = bt_now_ms() + 30000;; bt_sleep_ms(100)) {
			assert_true(bt_now_ms() < end);
			stream_leader(js, stream, leader, sizeof(leader));
			if (leader[0] && strcmp(leader, prev) != 0)
				break;
		}
		snprintf(prev, sizeof(prev), "%s", leader);
		fprintf(stderr, "# stream leader %s steps down\n", leader);
		(void)natsConnection_Request(&reply, nc, subj, NULL, 0, 5000);
		natsMsg_Destroy(reply);
		bt_sleep_ms(300);
	}
	jsCtx_Destroy(js);
	natsConnection_Destroy(nc);
}

struct lap_drain {
	struct drain d;   /* records read */
	struct laps seen; /* laps reported */
	int fired;        /* the stepdowns were asked */
};

static void lap_drain_batch(const struct uf_record *r, int n, uint64_t seq, void *arg)
{
	struct lap_drain *x = arg;

	(void)r;
	x->d.next = seq + (uint64_t)n;
	x->d.received += (uint64_t)n;
	if (x->d.received >= 10000 && !x->fired) {
		x->fired = 1;
		stepdowns(g_stepdown_case);
	}
}

static void lap_drain_lap(const struct uf_consumer_lap *lap, void *arg)
{
	struct lap_drain *x = arg;

	count_lap(lap, &x->seen);
}

/* Three nodes, replicas 3: the stream's leader steps down three times while a remote
 * consumer streams (leader elections, no node lost). The remote consumer must get every
 * record: the stream still holds them all. */
static void test_stream_leader_elections_lose_nothing_for_a_remote_consumer(void **state)
{
	struct bt_case k;
	const char *day = bt_gen_day(30000, 30, 59);
	struct lap_drain x;
	char *feed, *st;
	uf_consumer_t *c;

	memset(&x, 0, sizeof(x));
	case_begin(&k, "elect", 3);
	g_stepdown_case = &k;
	case_start(&k, day, "6000", "0", k.ns.urls, "3");
	c = remote_attach(k.ns.urls, k.ring);
	case_go(&k);
	read_to_close(c, 120000, lap_drain_batch, lap_drain_lap, &x);
	feed = case_finish(&k);
	st = uf_test_slurp(k.status);
	fprintf(stderr, "# remote laps %llu lost %llu; bridge laps %lld\n",
	        (unsigned long long)x.seen.laps, (unsigned long long)x.seen.lost,
	        (long long)bt_json_num(st, "laps"));
	assert_true(x.fired); /* the stepdowns happened mid-stream */
	assert_int_equal(bt_json_num(st, "laps"), 0);
	assert_int_equal(x.seen.laps, 0);
	assert_int_equal(x.d.received, bt_json_num(feed, "records"));
	expect_local_books(&k, bt_render_books(c, 10));
	uf_consumer_detach(c);
	free(st);
	free(feed);
	case_end(&k);
}

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

/* A server that requires TLS: the bridge (--tls-ca) and remote consumers (UF_NATS_TLS_CA)
 * verify it and get the same books; without the CA a consumer cannot attach. */
static void test_tls_bridge_and_remote_consumer(void **state)
{
	struct bt_case k;
	const char *day = bt_gen_day(20000, 30, 37);
	char ca[300], name[400], err[512], *feed;
	struct uf_consumer_options co;
	uf_consumer_t *c = NULL;
	struct drain d = {0};

	memset(&k, 0, sizeof(k));
	snprintf(k.ring, sizeof(k.ring), "bttls_%d", (int)getpid());
	snprintf(k.status, sizeof(k.status), "%s/tls.status", bt_dir);
	snprintf(k.start, sizeof(k.start), "%s/tls.start", bt_dir);
	snprintf(k.feed_out, sizeof(k.feed_out), "%s/tls.feed", bt_dir);
	bt_nats_start_tls(&k.ns, bt_dir);
	snprintf(ca, sizeof(ca), "%s/ca.pem", bt_dir);
	k.feed = case_feed(&k, day, "0", "0", "1048576", "10", k.start, k.feed_out);
	case_bridge_tls(&k, k.ns.urls, "1", 1, ca);
	unsetenv("UF_NATS_TLS_CA");
	uf_consumer_options_init(&co);
	snprintf(name, sizeof(name), "%s/%s", k.ns.urls, k.ring);
	assert_true(uf_consumer_attach(name, &co, &c, err, sizeof(err)) < 0); /* plain: refused */
	setenv("UF_NATS_TLS_CA", ca, 1);
	c = remote_attach(k.ns.urls, k.ring);
	case_go(&k);
	drain(c, &d, 0, NULL, NULL);
	feed = case_finish(&k);
	assert_int_equal(d.received, bt_json_num(feed, "records"));
	expect_local_books(&k, remote_books(&k, k.ns.urls)); /* uf-tail inherits UF_NATS_TLS_CA */
	unsetenv("UF_NATS_TLS_CA");
	uf_consumer_detach(c);
	free(feed);
	case_end(&k);
}

/* --per-symbol: the records of one instrument, read back from uf.RING.rec.SYMBOL with their
 * ring sequences, are exactly that instrument's records in the ring, in order. */
static void test_per_symbol_subject_holds_exactly_the_instruments_records(void **state)
{
	struct bt_case k;
	const char *day = bt_gen_day(20000, 30, 41);
	struct uf_consumer_options co;
	struct uf_book_snapshot snap;
	struct uf_record recs[256], *want;
	uint64_t *want_seq, nwant = 0, got = 0, seq, cnt[65536] = {0};
	uint32_t best = 0;
	uf_consumer_t *local;
	natsConnection *nc = NULL;
	natsSubscription *sub = NULL;
	jsSubOptions so;
	jsCtx *js = NULL;
	char subj[128], err[256], *feed, *st;
	int n;

	case_begin(&k, "sym", 1);
	g_per_symbol = 1;
	k.feed = case_feed(&k, day, "0", "0", "1048576", "10", k.start, k.feed_out);
	case_bridge(&k, k.ns.urls, "1", 1);
	g_per_symbol = 0;
	uf_consumer_options_init(&co);
	co.start = UF_CONSUMER_START_OLDEST;
	assert_int_equal(uf_consumer_attach(k.ring, &co, &local, err, sizeof(err)), 0);
	case_go(&k);
	feed = case_finish(&k);
	st = uf_test_slurp(k.status);
	assert_true(bt_json_num(st, "sym_msgs") > 0);
	assert_int_equal(bt_json_num(st, "sym_failed"), 0);
	/* the busiest named instrument, and its records as the ring has them */
	want = malloc(sizeof(*want) * 200000);
	want_seq = malloc(sizeof(*want_seq) * 200000);
	assert_non_null(want);
	assert_non_null(want_seq);
	{
		struct uf_record *all = malloc(sizeof(*all) * 200000);
		uint64_t nall = 0;
		assert_non_null(all);
		while ((n = uf_consumer_read(local, recs, 256, &seq)) > 0) {
			assert_int_equal(seq, nall);
			for (int i = 0; i < n && nall < 200000; i++) {
				all[nall++] = recs[i];
				cnt[recs[i].instrument & 0xffff]++;
			}
		}
		assert_int_equal(nall, bt_json_num(feed, "records"));
		for (uint32_t i = 1; i < 65536; i++)
			if (cnt[i] > cnt[best] && uf_consumer_snapshot(local, i, &snap) == 0 &&
			    snap.symbol[0])
				best = i;
		assert_true(cnt[best] > 100);
		for (uint64_t i = 0; i < nall; i++) {
			if (all[i].instrument == best) {
				want[nwant] = all[i];
				want_seq[nwant++] = i;
			}
		}
		free(all);
	}
	assert_int_equal(uf_consumer_snapshot(local, best, &snap), 0);
	snprintf(subj, sizeof(subj), "uf.%s.rec.%s", k.ring, snap.symbol);
	assert_int_equal(natsConnection_ConnectTo(&nc, k.ns.urls), NATS_OK);
	assert_int_equal(natsConnection_JetStream(&js, nc, NULL), NATS_OK);
	jsSubOptions_Init(&so);
	so.Ordered = true;
	assert_int_equal(js_SubscribeSync(&sub, js, subj, NULL, &so, NULL), NATS_OK);
	while (got < nwant) {
		natsMsg *m = NULL;
		struct uf_nats_msg h;
		const char *d;
		if (natsSubscription_NextMsg(&m, sub, 5000) != NATS_OK)
			fail_msg("%s: %" PRIu64 " of %" PRIu64 " records", subj, got, nwant);
		d = natsMsg_GetData(m);
		assert_true(natsMsg_GetDataLength(m) >= (int)sizeof(h));
		memcpy(&h, d, sizeof(h));
		assert_int_equal(h.kind, UF_NATS_SYMBOL);
		assert_int_equal(natsMsg_GetDataLength(m),
		                 sizeof(h) +
		                     h.count * (sizeof(struct uf_record) + sizeof(uint64_t)));
		for (uint32_t i = 0; i < h.count; i++) {
			struct uf_record r;
			uint64_t s;
			memcpy(&r, d + sizeof(h) + i * sizeof(r), sizeof(r));
			memcpy(&s, d + sizeof(h) + h.count * sizeof(r) + i * sizeof(s), sizeof(s));
			assert_true(got < nwant);
			assert_int_equal(s, want_seq[got]);
			assert_memory_equal(&r, &want[got], sizeof(r));
			got++;
		}
		natsMsg_Destroy(m);
	}
	natsSubscription_Destroy(sub);
	jsCtx_Destroy(js);
	natsConnection_Destroy(nc);
	/* the ordered subject, read past the per-symbol messages in the same stream */
	expect_local_books(&k, remote_books(&k, k.ns.urls));
	uf_consumer_detach(local);
	free(want);
	free(want_seq);
	free(feed);
	free(st);
	case_end(&k);
}

/* An application that reads nothing while more than its buffer (262,144 records) arrives is
 * lapped like a local consumer of a small ring: one -EOVERFLOW naming exactly the records it
 * lost (the quarter-ring headroom rule of the local ring), then the rest in order. */
static void test_remote_consumer_falling_a_buffer_behind_is_lapped_exactly(void **state)
{
	struct bt_case k;
	const char *day = bt_gen_day(150000, 30, 43);
	struct uf_consumer_info info;
	struct uf_consumer_lap lap;
	struct uf_record rec;
	struct drain d = {0};
	uint64_t total, end, seq;
	char *feed;
	uf_consumer_t *c;

	feed = case_play_unread(&k, "own", day, &c);
	total = (uint64_t)bt_json_num(feed, "records");
	assert_true(total > 262144 + 1000);                 /* more than the consumer's buffer */
	for (end = bt_now_ms() + 60000;; bt_sleep_ms(20)) { /* the receiver has it all */
		uf_consumer_get_info(c, &info);
		if (info.tail == total)
			break;
		assert_true(bt_now_ms() < end);
	}
	assert_int_equal(info.received, 0);
	assert_int_equal(uf_consumer_next(c, &rec, &seq), -EOVERFLOW);
	uf_consumer_last_lap(c, &lap);
	assert_int_equal(lap.from_seq, 0);
	assert_int_equal(lap.resume_seq, total - (262144 - 262144 / 4));
	assert_int_equal(lap.lost, lap.resume_seq);
	d.next = lap.resume_seq;
	drain(c, &d, 0, NULL, NULL);
	assert_int_equal(d.next, total);
	uf_consumer_get_info(c, &info);
	assert_int_equal(info.lost, lap.lost);
	assert_int_equal(info.laps, 1);
	uf_consumer_detach(c);
	free(feed);
	case_end(&k);
}

struct handover {
	struct uf_nats_books bk;
	uint64_t applied; /* records that changed a book */
};

static void apply_batch(const struct uf_record *r, int n, uint64_t seq, void *arg)
{
	struct handover *h = arg;

	for (int i = 0; i < n; i++)
		h->applied += uf_nats_books_apply(&h->bk, &r[i], seq + (uint64_t)i) > 0;
}

static int seed_snapshot(const struct uf_book_snapshot *s, void *arg)
{
	struct uf_nats_books *bk = arg;
	assert_int_equal(uf_nats_books_seed(bk, s), 0);
	return 0;
}

/* The documented handover, done by an application on a remote handle mid-stream: snapshot
 * every book, seek to the smallest stamp, apply each instrument's records from its stamp on.
 * Its books must end equal to the producer's (image depth 64: the snapshots are whole). */
static void test_remote_snapshot_then_stream_handover_ends_with_local_books(void **state)
{
	struct bt_case k;
	const char *day = bt_gen_day(40000, 30, 47);
	struct handover h = {0};
	struct uf_consumer_info info;
	struct bt_books l = {0};
	uint64_t from;
	char *st, *feed;
	uf_consumer_t *c;

	case_begin(&k, "hand", 1);
	case_start_cap(&k, day, "20000", "0", k.ns.urls, "1", "1048576", "64");
	case_go(&k);
	st = bt_wait_status(k.status, "published", 20000, 30000);
	free(st);
	c = remote_attach(k.ns.urls, k.ring);
	uf_consumer_get_info(c, &info);
	assert_int_equal(uf_nats_books_init(&h.bk, info.max_instruments, 0), 0);
	assert_int_equal(uf_consumer_snapshot_all(c, seed_snapshot, &h.bk), 0);
	from = info.position;
	for (uint32_t i = 0; i < h.bk.max; i++)
		if (uf_nats_books_apply_from(&h.bk, i) < from)
			from = uf_nats_books_apply_from(&h.bk, i);
	assert_true(from > 0); /* mid-stream */
	assert_int_equal(uf_consumer_seek(c, from), 0);
	read_to_close(c, 60000, apply_batch, NULL, &h);
	feed = case_finish(&k);
	assert_true(h.applied > 1000);
	for (uint32_t i = 0; i < h.bk.max; i++) {
		struct uf_book_snapshot s;
		if (uf_nats_books_snapshot(&h.bk, i, 64, 0, &s) == 0)
			bt_collect(&s, &l);
	}
	expect_local_books(&k, bt_render_list(l, 10));
	uf_nats_books_free(&h.bk);
	uf_consumer_detach(c);
	free(feed);
	case_end(&k);
}

static int case_teardown(void **state)
{
	bt_kill_all();
	g_key_file = NULL; /* a failed case must not leave its key to the next */
	unsetenv("UF_NATS_KEY");
	unsetenv("UF_NATS_KEY_FILE");
	return 0;
}

/* Ring directories of earlier test processes that died without their teardown (a crash, a
 * timeout) hold 80 MB rings each: removed. */
static void remove_dead_ring_dirs(void)
{
	DIR *d = opendir("/dev/shm");
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d)) != NULL) {
		char p[300];
		long pid;
		if (strncmp(e->d_name, "uf-bridge-test-", 15) != 0)
			continue;
		pid = strtol(e->d_name + 15, NULL, 10);
		if (pid <= 0 || kill((pid_t)pid, 0) == 0 || errno != ESRCH)
			continue;
		snprintf(p, sizeof(p), "/dev/shm/%.250s", e->d_name);
		uf_test_rm_tree(p);
	}
	closedir(d);
}

static int setup(void **state)
{
	remove_dead_ring_dirs();
	snprintf(bt_dir, sizeof(bt_dir), "/tmp/uf-bridge-test.XXXXXX");
	if (!mkdtemp(bt_dir))
		return -1;
	snprintf(g_ring_dir, sizeof(g_ring_dir), "/dev/shm/uf-bridge-test-%d", (int)getpid());
	if (mkdir(g_ring_dir, 0700) < 0)
		return -1;
	setenv("UF_RING_DIR", g_ring_dir, 1);
	return 0;
}

static int teardown(void **state)
{
	bt_kill_all();
	uf_test_rm_tree(g_ring_dir);
	if (getenv("UF_BT_KEEP")) /* debugging: keep the servers' and processes' logs */
		fprintf(stderr, "logs kept in %s\n", bt_dir);
	else
		uf_test_rm_tree(bt_dir);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_teardown(test_remote_books_equal_local_books_on_a_day_with_loss,
	                              case_teardown),
	    cmocka_unit_test_teardown(test_forged_messages_on_the_record_subject_are_dropped,
	                              case_teardown),
	    cmocka_unit_test_teardown(test_forged_bridge_form_messages_are_refused_and_counted,
	                              case_teardown),
	    cmocka_unit_test_teardown(test_shared_key_forger_cannot_change_a_remote_book,
	                              case_teardown),
	    cmocka_unit_test_teardown(test_remote_consumer_gives_up_when_the_bucket_is_gone,
	                              case_teardown),
	    cmocka_unit_test_teardown(test_remote_consumer_streams_across_sigkill_of_a_cluster_node,
	                              case_teardown),
	    cmocka_unit_test_teardown(test_async_window_full_across_sigkill_of_a_cluster_node,
	                              case_teardown),
	    cmocka_unit_test_teardown(test_compact_records_across_sigkill_of_a_cluster_node,
	                              case_teardown),
	    cmocka_unit_test_teardown(test_eager_compact_records_across_sigkill_of_a_cluster_node,
	                              case_teardown),
	    cmocka_unit_test_teardown(test_bridge_fails_over_from_a_hung_cluster_node,
	                              case_teardown),
	    cmocka_unit_test_teardown(test_late_remote_consumer_snapshot_then_stream,
	                              case_teardown),
	    cmocka_unit_test_teardown(
	        test_remote_snapshot_then_stream_handover_ends_with_local_books, case_teardown),
	    cmocka_unit_test_teardown(test_slow_remote_consumer_never_slows_the_bridge,
	                              case_teardown),
	    cmocka_unit_test_teardown(
	        test_remote_consumer_falling_a_buffer_behind_is_lapped_exactly, case_teardown),
	    cmocka_unit_test_teardown(
	        test_lapped_bridge_resnapshots_and_remote_consumer_sees_the_lap, case_teardown),
	    cmocka_unit_test_teardown(
	        test_stream_leader_elections_lose_nothing_for_a_remote_consumer, case_teardown),
	    cmocka_unit_test_teardown(test_bridge_killed_and_restarted_no_duplicate_no_reorder,
	                              case_teardown),
	    cmocka_unit_test_teardown(
	        test_producer_restart_is_followed_by_bridge_and_remote_consumer, case_teardown),
	    cmocka_unit_test_teardown(test_tls_bridge_and_remote_consumer, case_teardown),
	    cmocka_unit_test_teardown(test_per_symbol_subject_holds_exactly_the_instruments_records,
	                              case_teardown),
	};
	if (getenv("UF_BT_ONLY")) /* debugging: run the cases matching this pattern */
		cmocka_set_test_filter(getenv("UF_BT_ONLY"));
	return cmocka_run_group_tests(tests, setup, teardown);
}
