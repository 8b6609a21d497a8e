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

#include "bridge_case.h"
#include "ring/nats/uf_nats_wire.h"

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
	struct bt_case k;
	struct uf_consumer_options co;
	struct uf_consumer_info info;
	struct async_errs errs = {0};
	struct drain whole = {0}, later = {0};
	uf_consumer_t *c = NULL, *late = NULL;
	char log[256], burl[300], curl[300], name[400], err[512], subj[160], *feed, *st, *local,
	    *remote;
	natsConnection *cnc, *bnc;
	jsCtx *cjs = NULL, *bjs = NULL;
	uint64_t seq_last, kv_last;
	const char *day = bt_gen_day(40000, 30, 23);

	case_name(&k, "perm");
	uf_nats_names_make(k.ring, &nm);
	snprintf(log, sizeof(log), "%s/nats-perm.log", bt_dir);
	start_server(&k.ns, &nm, log);
	user_url(burl, sizeof(burl), &k.ns, BRIDGE_USER, BRIDGE_PASS);
	user_url(curl, sizeof(curl), &k.ns, CONSUMER_USER, CONSUMER_PASS);

	/* the feeder makes the ring and waits for `start`; the bridge as its user */
	k.feed = case_feed(&k, day, "20000", "0", "1048576", "10", k.start, k.feed_out);
	case_bridge(&k, burl, "1", 1);

	/* a remote consumer for the whole day, as the consumer's user */
	uf_consumer_options_init(&co);
	co.tag = "test_nats_permissions";
	snprintf(name, sizeof(name), "%s/%s", curl, k.ring);
	if (uf_consumer_attach(name, &co, &c, err, sizeof(err)) < 0)
		fail_msg("attach as the consumer's user: %s", err);
	case_go(&k);
	/* a late one: books from the bucket mid-day, then the stream */
	free(bt_wait_status(k.status, "published", 20000, 30000));
	if (uf_consumer_attach(name, &co, &late, err, sizeof(err)) < 0)
		fail_msg("late attach as the consumer's user: %s", err);
	uf_consumer_get_info(late, &info);
	assert_true(info.position >= 20000);
	drain(c, &whole, 0, NULL, NULL); /* in order, no lap, to the close */
	later.next = info.position;
	drain(late, &later, 0, NULL, NULL);
	feed = case_finish(&k);
	st = uf_test_slurp(k.status);
	assert_int_equal(whole.received, bt_json_num(feed, "records"));
	assert_int_equal(bt_json_num(st, "published"), bt_json_num(feed, "records"));
	uf_consumer_get_info(c, &info);
	assert_int_equal(info.forged, 0);
	local = local_books(&k);
	assert_true(strlen(local) > 100);
	remote = bt_render_books(c, 10);
	assert_string_equal(remote, local);
	free(remote);
	remote = bt_render_books(late, 10);
	assert_string_equal(remote, local);
	free(remote);
	remote = remote_books(&k, curl); /* uf-tail --nats as the consumer's user */
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
	case_end(&k);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_teardown(
	        test_documented_permissions_run_the_fanout_and_refuse_a_consumers_publish,
	        case_teardown),
	};
	return BT_RUN_GROUP("nats-perm-test", tests);
}
