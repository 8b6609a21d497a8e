/* The NATS permissions docs/fanout.md ("Permissions a deployment needs") documents, on a real
 * nats-server: a user for uf-bridge and a user for remote consumers, each allowed exactly
 * what the table lists. The bridge publishes a whole day and a remote consumer (both during
 * the day and late, from the bucket) ends with the local books, with no permission violation
 * logged by the server; then the consumer's user publishing on the record subject and into
 * the bucket (the forged-message attack) is refused by the server and changes nothing, while
 * the same publish from the bridge's user is stored (the refusal is the permissions', not
 * the message's). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <dirent.h>

#include <nats/nats.h>

#include "bridge_test_util.h"
#include "ring/nats/uf_nats_wire.h"

static char g_ring_dir[128];

/* The users' passwords; the URLs carry them (nats://user:password@host:port). */
#define BRIDGE_USER   "ufbridge"
#define BRIDGE_PASS   "bridge-secret"
#define CONSUMER_USER "ufconsumer"
#define CONSUMER_PASS "consumer-secret"

/* One JetStream server on loopback with the two users of the documented table for ring
 * names `nm`; its log goes to `log`. */
static void start_server(struct bt_nats *ns, const struct uf_nats_names *nm, const char *log)
{
	char conf[300];
	FILE *f;

	memset(ns, 0, sizeof(*ns));
	ns->n = 1;
	ns->port[0] = bt_free_port();
	snprintf(conf, sizeof(conf), "%s/perm.conf", bt_dir);
	f = fopen(conf, "w");
	assert_non_null(f);
	fprintf(f, "listen: \"127.0.0.1:%d\"\nserver_name: perm0\n", ns->port[0]);
	fprintf(f, "jetstream { store_dir: \"%s/js-perm\" }\n", bt_dir);
	fprintf(f, "authorization {\n  users = [\n");
	/* uf-bridge: uf.RING.>, $KV.UF_RING_books.>, $JS.API.>, _INBOX.> replies; receives
	 * on _INBOX.> */
	fprintf(f,
	        "    { user: \"%s\", password: \"%s\", permissions: {\n"
	        "        publish: { allow: [\"uf.%s.>\", \"$KV.%s.>\", \"$JS.API.>\", "
	        "\"_INBOX.>\"] }\n"
	        "        subscribe: { allow: [\"_INBOX.>\"] } } }\n",
	        BRIDGE_USER, BRIDGE_PASS, nm->token, nm->bucket);
	/* remote consumer: only its JetStream API requests; receives on _INBOX.> */
	fprintf(f,
	        "    { user: \"%s\", password: \"%s\", permissions: {\n"
	        "        publish: { allow: [\"$JS.API.CONSUMER.CREATE.%s\", "
	        "\"$JS.API.CONSUMER.CREATE.%s.>\", \"$JS.API.CONSUMER.CREATE.KV_%s\", "
	        "\"$JS.API.CONSUMER.CREATE.KV_%s.>\", \"$JS.API.CONSUMER.DELETE.*.>\", "
	        "\"$JS.API.STREAM.INFO.%s\", \"$JS.API.STREAM.INFO.KV_%s\", "
	        "\"$JS.API.DIRECT.GET.KV_%s.>\", \"$JS.API.STREAM.MSG.GET.KV_%s\", "
	        "\"$JS.API.STREAM.NAMES\", \"$JS.FC.%s.>\", \"$JS.FC.KV_%s.>\"] }\n"
	        "        subscribe: { allow: [\"_INBOX.>\"] } } }\n",
	        CONSUMER_USER, CONSUMER_PASS, nm->stream, nm->stream, nm->bucket, nm->bucket,
	        nm->stream, nm->bucket, nm->bucket, nm->bucket, nm->stream, nm->bucket);
	fprintf(f, "  ]\n}\n");
	fclose(f);
	char *argv[] = {"nats-server", "-c", conf, NULL};
	ns->pid[0] = bt_spawn(UF_NATS_SERVER, argv, log);
	for (uint64_t end = bt_now_ms() + 10000; !bt_port_open(ns->port[0]);) {
		assert_true(bt_now_ms() < end);
		bt_sleep_ms(20);
	}
}

/* nats://user:password@127.0.0.1:port */
static void user_url(char *out, size_t len, const struct bt_nats *ns, const char *user,
                     const char *pass)
{
	snprintf(out, len, "nats://%s:%s@127.0.0.1:%d", user, pass, ns->port[0]);
}

/* Lines of the server's log holding `what` (its log is stderr: `log`.err). */
static int log_count(const char *log, const char *what)
{
	char p[320], line[2048];
	FILE *f;
	int n = 0;

	snprintf(p, sizeof(p), "%s.err", log);
	f = fopen(p, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		n += strstr(line, what) != NULL;
	fclose(f);
	return n;
}

static char *tail_books(const char *ring, const char *urls)
{
	struct uf_test_run r;
	char *out;

	if (urls) {
		const char *argv[] = {"uf-tail", "--nats",  urls, "--ring", ring,
		                      "--books", "--depth", "10", NULL};
		uf_test_run_path(bt_bin("uf-tail"), argv, 60000, &r);
	} else {
		const char *argv[] = {"uf-tail", "--ring", ring, "--books", "--depth", "10", NULL};
		uf_test_run_path(bt_bin("uf-tail"), argv, 60000, &r);
	}
	if (r.status != 0)
		fprintf(stderr, "uf-tail: %s\n", r.err);
	assert_int_equal(r.status, 0);
	out = r.out;
	r.out = NULL;
	uf_test_run_free(&r);
	return out;
}

/* Reads `c` to the close (bounded), sequences following each other, no lap; returns the
 * count read. */
static uint64_t read_all(uf_consumer_t *c, uint64_t next)
{
	struct uf_record recs[256];
	uint64_t end = bt_now_ms() + 90000, seq, got = 0;

	for (;;) {
		int n = uf_consumer_read(c, recs, 256, &seq);
		if (n > 0) {
			assert_int_equal(seq, next);
			next = seq + (uint64_t)n;
			got += (uint64_t)n;
			continue;
		}
		if (n == -EPIPE)
			return got;
		assert_int_equal(n, -EAGAIN); /* a lap (-EOVERFLOW) fails too */
		assert_true(bt_now_ms() < end);
		uf_consumer_wait(c, 100000000);
	}
}

/* The last stream sequence of `stream`, read as `nc`'s user. */
static uint64_t last_seq(jsCtx *js, const char *stream)
{
	jsStreamInfo *si = NULL;
	uint64_t last;

	assert_int_equal(js_GetStreamInfo(&si, js, stream, NULL, NULL), NATS_OK);
	last = si->State.LastSeq;
	jsStreamInfo_Destroy(si);
	return last;
}

struct async_errs {
	int not_permitted; /* NATS_NOT_PERMITTED reported by the client library */
};

static void on_async_err(natsConnection *nc, natsSubscription *sub, natsStatus err, void *arg)
{
	struct async_errs *e = arg;

	(void)nc;
	(void)sub;
	if (err == NATS_NOT_PERMITTED)
		__atomic_add_fetch(&e->not_permitted, 1, __ATOMIC_RELAXED);
}

static natsConnection *connect_as(const char *url, struct async_errs *errs)
{
	natsOptions *o = NULL;
	natsConnection *nc = NULL;

	assert_int_equal(natsOptions_Create(&o), NATS_OK);
	assert_int_equal(natsOptions_SetURL(o, url), NATS_OK);
	if (errs)
		assert_int_equal(natsOptions_SetErrorHandler(o, on_async_err, errs), NATS_OK);
	assert_int_equal(natsConnection_Connect(&nc, o), NATS_OK);
	natsOptions_Destroy(o);
	return nc;
}

static void test_documented_permissions_run_the_fanout_and_refuse_a_consumers_publish(void **state)
{
	struct uf_nats_names nm;
	struct bt_nats ns;
	struct uf_consumer_options co;
	struct uf_consumer_info info;
	struct async_errs errs = {0};
	uf_consumer_t *c = NULL, *late = NULL;
	char ring[32], start[256], status[256], feed_out[256], log[256], bridge_out[256];
	char burl[300], curl[300], name[400], err[512], subj[160], *feed, *st, *local, *remote;
	char day_arg[300];
	natsConnection *cnc, *bnc;
	jsCtx *cjs = NULL, *bjs = NULL;
	uint64_t seq_last, kv_last, got;
	const char *day = bt_gen_day(40000, 30, 23);
	pid_t feeder, bridge;

	snprintf(ring, sizeof(ring), "btperm_%d", (int)getpid());
	uf_nats_names_make(ring, &nm);
	snprintf(start, sizeof(start), "%s/perm.start", bt_dir);
	snprintf(status, sizeof(status), "%s/perm.status", bt_dir);
	snprintf(feed_out, sizeof(feed_out), "%s/perm.feed", bt_dir);
	snprintf(log, sizeof(log), "%s/nats-perm.log", bt_dir);
	snprintf(bridge_out, sizeof(bridge_out), "%s/perm.bridge", bt_dir);
	start_server(&ns, &nm, log);
	user_url(burl, sizeof(burl), &ns, BRIDGE_USER, BRIDGE_PASS);
	user_url(curl, sizeof(curl), &ns, CONSUMER_USER, CONSUMER_PASS);

	/* the feeder makes the ring and waits for `start`; the bridge as its user */
	snprintf(day_arg, sizeof(day_arg), "%s", day);
	char *feed_argv[] = {"uf-bridge-feed", "--in",    day_arg,  "--ring", ring,
	                     "--start-file",   start,     "--rate", "20000",  "--capacity",
	                     "1048576",        "--depth", "10",     NULL};
	feeder = bt_spawn(UF_BRIDGE_FEED, feed_argv, feed_out);
	{
		char shm[300];
		snprintf(shm, sizeof(shm), "%s/uf.%s", g_ring_dir, ring);
		for (uint64_t end = bt_now_ms() + 10000; access(shm, F_OK) != 0; bt_sleep_ms(10))
			assert_true(bt_now_ms() < end);
	}
	char *bridge_argv[] = {"uf-bridge", "--ring",        ring, "--nats",
	                       burl,        "--replicas",    "1",  "--status-file",
	                       status,      "--kv-interval", "50", "--exit-on-close",
	                       NULL};
	bridge = bt_spawn(bt_bin("uf-bridge"), bridge_argv, bridge_out);
	free(bt_wait_status(status, "generation", 0, 30000));

	/* a remote consumer for the whole day, as the consumer's user */
	uf_consumer_options_init(&co);
	co.tag = "test_nats_permissions";
	snprintf(name, sizeof(name), "%s/%s", curl, ring);
	if (uf_consumer_attach(name, &co, &c, err, sizeof(err)) < 0)
		fail_msg("attach as the consumer's user: %s", err);
	{
		FILE *f = fopen(start, "w");
		assert_non_null(f);
		fclose(f);
	}
	/* a late one: books from the bucket mid-day, then the stream */
	free(bt_wait_status(status, "published", 20000, 30000));
	if (uf_consumer_attach(name, &co, &late, err, sizeof(err)) < 0)
		fail_msg("late attach as the consumer's user: %s", err);
	uf_consumer_get_info(late, &info);
	assert_true(info.position >= 20000);
	got = read_all(c, 0);
	read_all(late, info.position);
	assert_int_equal(bt_wait(feeder, 60000), 0);
	assert_int_equal(bt_wait(bridge, 60000), 0);
	feed = uf_test_slurp(feed_out);
	st = uf_test_slurp(status);
	assert_int_equal(got, bt_json_num(feed, "records"));
	assert_int_equal(bt_json_num(st, "published"), bt_json_num(feed, "records"));
	uf_consumer_get_info(c, &info);
	assert_int_equal(info.forged, 0);
	local = tail_books(ring, NULL);
	assert_true(strlen(local) > 100);
	remote = bt_render_books(c, 10);
	assert_string_equal(remote, local);
	free(remote);
	remote = bt_render_books(late, 10);
	assert_string_equal(remote, local);
	free(remote);
	remote = tail_books(ring, curl); /* uf-tail --nats as the consumer's user */
	assert_string_equal(remote, local);
	free(remote);
	/* everything above needed nothing the table does not allow */
	assert_int_equal(log_count(log, "Violation"), 0);

	/* the attack: the consumer's user publishes a record message and a book entry */
	cnc = connect_as(curl, &errs);
	bnc = connect_as(burl, NULL);
	assert_int_equal(natsConnection_JetStream(&cjs, cnc, NULL), NATS_OK);
	assert_int_equal(natsConnection_JetStream(&bjs, bnc, NULL), NATS_OK);
	snprintf(subj, sizeof(subj), "KV_%s", nm.bucket);
	seq_last = last_seq(cjs, nm.stream); /* STREAM.INFO is the consumer's to ask */
	kv_last = last_seq(cjs, subj);
	assert_int_equal(natsConnection_PublishString(cnc, nm.subject, "forged"), NATS_OK);
	snprintf(subj, sizeof(subj), "$KV.%s.i1", nm.bucket);
	assert_int_equal(natsConnection_PublishString(cnc, subj, "forged"), NATS_OK);
	natsConnection_FlushTimeout(cnc, 5000);
	for (uint64_t end = bt_now_ms() + 10000;
	     __atomic_load_n(&errs.not_permitted, __ATOMIC_RELAXED) < 2; bt_sleep_ms(10))
		assert_true(bt_now_ms() < end);
	assert_true(log_count(log, "Publish Violation") >= 2);
	assert_int_equal(last_seq(cjs, nm.stream), seq_last);
	snprintf(subj, sizeof(subj), "KV_%s", nm.bucket);
	assert_int_equal(last_seq(cjs, subj), kv_last);
	/* the same publish by the bridge's user is stored: it was the permission */
	{
		jsPubAck *pa = NULL;
		assert_int_equal(js_Publish(&pa, bjs, nm.subject, "forged", 6, NULL, NULL),
		                 NATS_OK);
		jsPubAck_Destroy(pa);
	}
	assert_int_equal(last_seq(cjs, nm.stream), seq_last + 1);
	/* stored, it reaches the consumers, which drop it as not the bridge's (no key here:
	 * the server's permissions are what keeps a well-formed forgery out) */
	for (uint64_t end = bt_now_ms() + 10000;; bt_sleep_ms(10)) {
		uf_consumer_get_info(c, &info);
		if (info.forged == 1)
			break;
		assert_true(bt_now_ms() < end);
	}
	jsCtx_Destroy(cjs);
	jsCtx_Destroy(bjs);
	natsConnection_Destroy(cnc);
	natsConnection_Destroy(bnc);
	uf_consumer_detach(c);
	uf_consumer_detach(late);
	free(local);
	free(feed);
	free(st);
	bt_nats_stop(&ns);
}

static int setup(void **state)
{
	snprintf(bt_dir, sizeof(bt_dir), "/tmp/uf-nats-perm-test.XXXXXX");
	if (!mkdtemp(bt_dir))
		return -1;
	snprintf(g_ring_dir, sizeof(g_ring_dir), "/dev/shm/uf-nats-perm-test-%d", (int)getpid());
	if (mkdir(g_ring_dir, 0700) < 0)
		return -1;
	setenv("UF_RING_DIR", g_ring_dir, 1);
	return 0;
}

static int teardown(void **state)
{
	bt_kill_all();
	uf_test_rm_tree(g_ring_dir);
	if (getenv("UF_BT_KEEP")) /* debugging: keep the server's and processes' logs */
		fprintf(stderr, "logs kept in %s\n", bt_dir);
	else
		uf_test_rm_tree(bt_dir);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(
	        test_documented_permissions_run_the_fanout_and_refuse_a_consumers_publish),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
