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

#include "bridge_test_util.h"

#define DEPTH "10"

static char g_ring_dir[128];

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
static char *decode_books(const char *path, const char *const argv[])
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
	struct bt_nats ns;
	char ring[32], status[256], start[256], feed_out[256], bridge_out[300], shm[300];
	snprintf(ring, sizeof(ring), "btiex_%d", (int)getpid());
	snprintf(status, sizeof(status), "%s/iex.status", bt_dir);
	snprintf(start, sizeof(start), "%s/iex.start", bt_dir);
	snprintf(feed_out, sizeof(feed_out), "%s/iex.feed", bt_dir);
	snprintf(bridge_out, sizeof(bridge_out), "%s/iex.bridge", bt_dir);
	bt_nats_start(&ns, 1, "iex");

	/* the feeder creates the ring, then waits for the start file */
	char *feed_argv[] = {
	    "uf-bridge-feed-iex", "--in", (char *)cap, "--ring", ring, "--depth", DEPTH,
	    "--start-file",       start,  NULL};
	pid_t feed = bt_spawn(UF_BRIDGE_FEED_IEX, feed_argv, feed_out);
	snprintf(shm, sizeof(shm), "%s/uf.%s", g_ring_dir, ring);
	for (uint64_t end = bt_now_ms() + 10000; access(shm, F_OK) != 0; bt_sleep_ms(10))
		assert_true(bt_now_ms() < end);
	char *bridge_argv[] = {"uf-bridge", "--ring",        ring, "--nats",
	                       ns.urls,     "--replicas",    "1",  "--status-file",
	                       status,      "--kv-interval", "50", "--exit-on-close",
	                       NULL};
	unlink(status);
	pid_t bridge = bt_spawn(bt_bin("uf-bridge"), bridge_argv, bridge_out);
	free(bt_wait_status(status, "generation", 0, 30000));
	/* a remote consumer attached before the day starts: it streams every record */
	struct uf_consumer_options co;
	uf_consumer_options_init(&co);
	co.tag = "test_bridge_iex";
	char name[400], err[512];
	snprintf(name, sizeof(name), "%s/%s", ns.urls, ring);
	uf_consumer_t *c = NULL;
	if (uf_consumer_attach(name, &co, &c, err, sizeof(err)) < 0)
		fail_msg("attach %s: %s", name, err);
	FILE *f = fopen(start, "w");
	assert_non_null(f);
	fclose(f);
	assert_int_equal(bt_wait(feed, 120000), 0);
	assert_int_equal(bt_wait(bridge, 120000), 0);
	char *fo = uf_test_slurp(feed_out);
	int64_t records = bt_json_num(fo, "records");
	assert_true(records > 100000);
	assert_int_equal(bt_json_num(fo, "restarts"), 11); /* the capture's 11 restarts */
	char *st = uf_test_slurp(status);
	assert_int_equal(bt_json_num(st, "published"), records);
	assert_int_equal(bt_json_num(st, "laps"), 0);

	const char *local_argv[] = {"uf-tail", "--ring", ring, "--books", "--depth", DEPTH, NULL};
	const char *remote_argv[] = {"uf-tail", "--nats",  ns.urls, "--ring", ring,
	                             "--books", "--depth", DEPTH,   NULL};
	const char *decode_argv[] = {"uf-decode", "books", cap, "--depth", DEPTH, NULL};
	char *local = bt_tail(local_argv);
	char *remote = bt_tail(remote_argv);
	char *file = decode_books(bt_bin("uf-decode"), decode_argv);
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
	bt_nats_stop(&ns);
	unlink(shm);
	snprintf(shm, sizeof(shm), "%s/uf.%s.cons", g_ring_dir, ring);
	unlink(shm);
}

static int setup(void **state)
{
	(void)state;
	snprintf(bt_dir, sizeof(bt_dir), "/tmp/uf-bridge-iex-test.XXXXXX");
	if (!mkdtemp(bt_dir))
		return -1;
	snprintf(g_ring_dir, sizeof(g_ring_dir), "/dev/shm/uf-bridge-iex-test-%d", (int)getpid());
	if (mkdir(g_ring_dir, 0700) < 0)
		return -1;
	setenv("UF_RING_DIR", g_ring_dir, 1);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	bt_kill_all();
	uf_test_rm_tree(g_ring_dir);
	uf_test_rm_tree(bt_dir);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_remote_iex_books_equal_local_and_the_capture),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
