/* uf-bridge fan-out with real servers, what a remote consumer trusts: forged messages on the
 * record subject (any form, with or without the bridge's message ids or a shared key's MAC)
 * are dropped and counted and change no book, a consumer whose bucket is gone gives up, and
 * a TLS server is verified by the bridge and the consumers. Split from test_bridge.c; the
 * fixture is bridge_case.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <nats/nats.h>

#include "bridge_case.h"
#include "nats_msg_header.h"
#include "ring/nats/nats_auth.h"
#include "ring/nats/uf_nats_wire.h"

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
		    nats_msg_header(info.generation, UF_NATS_DATA, 1ull << 40, 0, 1);
		struct uf_nats_msg cl =
		    nats_msg_header(info.generation, UF_NATS_CLOSED, info.tail, 0, 0);
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
		    nats_msg_header(info.generation, UF_NATS_CLOSED, info.tail, 0, 0);
		struct uf_nats_msg lap =
		    nats_msg_header(info.generation, UF_NATS_LAP, info.tail, 1ull << 40, 0);
		struct uf_nats_msg rs =
		    nats_msg_header(info.generation + 1, UF_NATS_RESET, 0, 0, 0);
		struct uf_nats_msg dt =
		    nats_msg_header(info.generation, UF_NATS_DATA, info.tail, 0, 1);
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
		    nats_msg_header(info.generation, UF_NATS_CLOSED, info.tail, 0, 0);
		/* DATA at the tail under every id the bridge's first message can have (1 to 64
		 * records: it takes what the ring holds when it wakes), unsigned or with a MAC
		 * made without the key */
		for (uint32_t n = 1; n <= 64; n++) {
			struct uf_nats_msg dt =
			    nats_msg_header(info.generation, UF_NATS_DATA, info.tail, 0, n);
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
		    nats_msg_header(info.generation, UF_NATS_LAP, info.tail, info.tail + 5, 0);
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

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_teardown(test_forged_messages_on_the_record_subject_are_dropped,
	                              case_teardown),
	    cmocka_unit_test_teardown(test_forged_bridge_form_messages_are_refused_and_counted,
	                              case_teardown),
	    cmocka_unit_test_teardown(test_shared_key_forger_cannot_change_a_remote_book,
	                              case_teardown),
	    cmocka_unit_test_teardown(test_remote_consumer_gives_up_when_the_bucket_is_gone,
	                              case_teardown),
	    cmocka_unit_test_teardown(test_tls_bridge_and_remote_consumer, case_teardown),
	};
	return BT_RUN_GROUP("bridge-security", tests);
}
