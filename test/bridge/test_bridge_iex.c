/* Consumers on IEX with no venue-specific code: the real IEX DEEP capture played into a ring
 * through the iex-deep protocol entry (uf-bridge-feed-iex), republished by uf-bridge through
 * a real nats-server (loopback, free port, JetStream); the books a remote consumer sees
 * (uf-tail --nats, and libufconsumer's "nats://" handle) must equal the local ring's
 * (uf-tail --ring) and those of `uf-decode books` of the same capture. Conformance: needs
 * ../shared/data/iex (UF_SHARED_DATA), and says so when it is absent. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <sys/stat.h>

#include "bridge_case.h"

static const char *deep_capture(void)
{
	static char p[600];
	const char *d = getenv("UF_SHARED_DATA");
	if (!d)
		fail_msg("UF_SHARED_DATA is not set: run through ctest (conformance label)");
	snprintf(p, sizeof(p), "%s/iex/iex-deep-1.0-20170425.pcap.gz", d);
	if (access(p, R_OK) != 0)
		fail_msg("the real IEX DEEP capture is absent (%s): this conformance test needs it",
		         p);
	return p;
}

/* `uf-decode books` of the capture: exit 1 is expected (the capture's truncated last record
 * and its 8 deletes of never-set levels are reported), its books printed all the same. */
static char *decode_capture_books(const char *path, const char *const argv[])
{
	struct uf_test_run r;
	uf_test_run_path(path, argv, 120000, &r);
	if (r.status != 0 && r.status != 1)
		fprintf(stderr, "%s exit %d: %s\n", argv[0], r.status, r.err);
	assert_true(r.status == 0 || r.status == 1);
	char *out = r.out;
	r.out = NULL;
	uf_test_run_free(&r);
	return out;
}

static void test_remote_iex_books_equal_local_and_the_capture(void **state)
{
	(void)state;
	const char *cap = deep_capture();
	struct bt_case k;
	case_begin(&k, "iex", 1);

	/* the feeder creates the ring, then waits for the start file */
	char *feed_argv[] = {
	    "uf-bridge-feed-iex", "--in",  (char *)cap, "--ring", k.ring, "--depth", DEPTH,
	    "--start-file",       k.start, NULL};
	k.feed = bt_spawn(UF_BRIDGE_FEED_IEX, feed_argv, k.feed_out);
	bt_wait_ring_open(k.ring);
	case_bridge(&k, k.ns.urls, "1", 1);
	/* a remote consumer attached before the day starts: it streams every record */
	struct uf_consumer_options co;
	uf_consumer_options_init(&co);
	co.tag = "test_bridge_iex";
	char name[400], err[512];
	snprintf(name, sizeof(name), "%s/%s", k.ns.urls, k.ring);
	uf_consumer_t *c = NULL;
	if (uf_consumer_attach(name, &co, &c, err, sizeof(err)) < 0)
		fail_msg("attach %s: %s", name, err);
	case_go(&k);
	assert_int_equal(bt_wait(k.feed, 120000), 0);
	assert_int_equal(bt_wait(k.bridge, 120000), 0);
	char *fo = uf_test_slurp(k.feed_out);
	int64_t records = bt_json_num(fo, "records");
	assert_true(records > 100000);
	assert_int_equal(bt_json_num(fo, "restarts"), 11); /* the capture's 11 restarts */
	char *st = uf_test_slurp(k.status);
	assert_int_equal(bt_json_num(st, "published"), records);
	assert_int_equal(bt_json_num(st, "laps"), 0);

	const char *decode_argv[] = {"uf-decode", "books", cap, "--depth", DEPTH, NULL};
	char *local = local_books(&k);
	char *remote = remote_books(&k, k.ns.urls);
	char *file = decode_capture_books(bt_bin("uf-decode"), decode_argv);
	char *handle = bt_render_books(c, 10);
	assert_true(strlen(file) > 100); /* open books, several symbols */
	assert_string_equal(local, file);
	assert_string_equal(remote, local);
	assert_string_equal(handle, local);
	fprintf(stderr, "note: %lld records, %zu bytes of books\n", (long long)records,
	        strlen(local));
	uf_consumer_detach(c);
	free(local);
	free(remote);
	free(file);
	free(handle);
	free(fo);
	free(st);
	case_end(&k);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_teardown(test_remote_iex_books_equal_local_and_the_capture,
	                              case_teardown),
	};
	return BT_RUN_GROUP("bridge-iex-test", tests);
}
