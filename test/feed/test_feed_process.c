/* The whole product as an operator runs it: `uringfeed --config FILE` (a process), `uf-replay`
 * with loss on both lines and re-requests, then `uf-tail --ring NAME --books --depth N` must
 * print exactly what `uf-decode books FILE --depth N` prints. SIGTERM then stops uringfeed
 * with exit status 0. One case per receive back end. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "feed_test_util.h"

#define FP_MESSAGES "50000"
#define FP_DEPTH    "10"

static char g_day[256];
static char g_ref[256];
static pid_t g_feed_pid; /* uringfeed of the running case, killed by the teardown on failure */

static char g_ring[32]; /* ring of the running case */

/* Removes the case's ring files from the test's ring dir (UF_RING_DIR). */
static void fp_unlink_ring(void)
{
	if (!g_ring[0])
		return;
	char p[256];
	snprintf(p, sizeof(p), "%s/uf.%s", ft_use_ring_dir(), g_ring);
	ft_rm_dir(p); /* the ring's private directory */
	g_ring[0] = '\0';
}

/* After every case, passed or failed: no daemon left running, no ring left in RAM. */
static int fp_case_teardown(void **s)
{
	if (g_feed_pid > 0) {
		kill(g_feed_pid, SIGKILL);
		ft_wait(g_feed_pid, 5000);
	}
	g_feed_pid = 0;
	fp_unlink_ring();
	return 0;
}

static char *fp_slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return NULL;
	struct ft_buf b = {0};
	ft_buf_add(&b, "%s", "");
	char line[8192];
	while (fgets(line, sizeof(line), f))
		ft_buf_add(&b, "%s", line);
	fclose(f);
	return b.p;
}

static void fp_run(const char *backend, int idx)
{
	char cfg[256], ring[32], out[256], tail_out[256];
	snprintf(ring, sizeof(ring), "ufp%d_%d", idx, (int)getpid());
	snprintf(g_ring, sizeof(g_ring), "%s", ring);
	snprintf(cfg, sizeof(cfg), "%s/feed-%d.json", ft_tmpdir(), idx);
	FILE *f = fopen(cfg, "w");
	assert_non_null(f);
	int port = 23000 + 10 * idx;
	fprintf(
	    f,
	    "{\"status\":{\"enabled\":false},\"log\":{\"level\":\"warn\"},\"feeds\":[{"
	    "\"name\":\"fp%d\",\"protocol\":\"itch50-moldudp64\",\"backend\":\"%s\",\"cpu\":1,%s"
	    "\"lines\":[{\"name\":\"A\",\"group\":\"239.79.%d.1\",\"port\":%d,\"interface\":\"127."
	    "0.0.1\"},"
	    "{\"name\":\"B\",\"group\":\"239.79.%d.2\",\"port\":%d,\"interface\":\"127.0.0.1\"}],"
	    "\"recovery\":{\"server\":\"127.0.0.1:%d\"},"
	    "\"ring\":{\"name\":\"%s\",\"capacity\":1048576},"
	    "\"book\":{\"depth\":10,\"max_orders\":1000000}}]}\n",
	    idx, backend, strcmp(backend, "io_uring") ? "" : "\"sqpoll_cpu\":0,", idx, port, idx,
	    port + 1, port + 5, ring);
	fclose(f);
	snprintf(out, sizeof(out), "%s/uringfeed-%d.out", ft_tmpdir(), idx);
	char *feed_argv[] = {"uringfeed", "--config", cfg, NULL};
	pid_t feed = ft_spawn(feed_argv, out);
	assert_true(feed > 0);
	g_feed_pid = feed;
	/* Started when its ring exists (bounded wait: 10 s). */
	char shm[256];
	snprintf(shm, sizeof(shm), "%s/uf.%s", ft_use_ring_dir(), ring);
	int ready = 0;
	for (int i = 0; i < 1000 && !ready; i++) {
		ready = access(shm, F_OK) == 0;
		struct timespec ts = {0, 10000000};
		nanosleep(&ts, NULL);
		if (waitpid(feed, NULL, WNOHANG) == feed) {
			g_feed_pid = 0;
			fail_msg("uringfeed exited early (see %s)", out);
		}
	}
	assert_true(ready);
	struct timespec settle = {0, 200000000};
	nanosleep(&settle, NULL); /* the feed thread sets up its ring and joins */
	char a[64], b[64], srv[16];
	snprintf(a, sizeof(a), "239.79.%d.1:%d", idx, port);
	snprintf(b, sizeof(b), "239.79.%d.2:%d", idx, port + 1);
	snprintf(srv, sizeof(srv), "%d", port + 5);
	char *rp_argv[] = {"uf-replay", "--in",     g_day,  "--a",
	                   a,           "--b",      b,      "--rate",
	                   "100000",    "--drop-a", "0.03", "--drop-b",
	                   "0.03",      "--seed",   "5",    "--serve-rerequests",
	                   srv,         "--linger", "2",    NULL};
	assert_int_equal(ft_run(rp_argv, NULL, 30000), 0);
	/* uf-replay lingered 2 s answering re-requests: the books must be complete now. */
	snprintf(tail_out, sizeof(tail_out), "%s/tail-%d.out", ft_tmpdir(), idx);
	char *tail_argv[] = {"uf-tail", "--ring", ring, "--books", "--depth", FP_DEPTH, NULL};
	assert_int_equal(ft_run(tail_argv, tail_out, 10000), 0);
	kill(feed, SIGTERM);
	g_feed_pid = 0;
	assert_int_equal(ft_wait(feed, 10000), 0);
	char *got = fp_slurp(tail_out), *want = fp_slurp(g_ref);
	assert_non_null(got);
	assert_non_null(want);
	assert_true(strlen(want) > 100);
	if (strcmp(got, want) != 0) {
		fprintf(stderr, "uf-tail:\n%.1500s\nuf-decode:\n%.1500s\n", got, want);
		fail_msg("uf-tail --books differs from uf-decode books (%s)", backend);
	}
	free(got);
	free(want);
	/* the ring files outlive uringfeed (consumers may still read them): the test removes them
	 */
	fp_unlink_ring();
}

static void test_process_io_uring_books_equal_uf_decode(void **s)
{
	fp_run("io_uring", 0);
}
static void test_process_io_uring_nosqpoll_books_equal_uf_decode(void **s)
{
	fp_run("io_uring_nosqpoll", 1);
}
static void test_process_recvmmsg_books_equal_uf_decode(void **s)
{
	fp_run("recvmmsg", 2);
}
static void test_process_epoll_books_equal_uf_decode(void **s)
{
	fp_run("epoll", 3);
}

static int fp_setup(void **s)
{
	if (!ft_use_ring_dir()) /* the daemon and uf-tail inherit UF_RING_DIR */
		return -1;
	if (ft_gen_day(g_day, sizeof(g_day), (unsigned)atoi(FP_MESSAGES), 30, 3) < 0) {
		fprintf(stderr, "FATAL: uf-gen failed\n");
		return -1;
	}
	snprintf(g_ref, sizeof(g_ref), "%s/ref.books", ft_tmpdir());
	char *argv[] = {"uf-decode", "books", g_day, "--depth", FP_DEPTH, NULL};
	if (ft_run(argv, g_ref, 30000) != 0) {
		fprintf(stderr, "FATAL: uf-decode books failed\n");
		return -1;
	}
	return 0;
}

static int fp_teardown(void **s)
{
	ft_rm_dir(ft_use_ring_dir());
	uf_test_rm_tree(ft_tmpdir());
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_teardown(test_process_io_uring_books_equal_uf_decode,
	                              fp_case_teardown),
	    cmocka_unit_test_teardown(test_process_io_uring_nosqpoll_books_equal_uf_decode,
	                              fp_case_teardown),
	    cmocka_unit_test_teardown(test_process_recvmmsg_books_equal_uf_decode,
	                              fp_case_teardown),
	    cmocka_unit_test_teardown(test_process_epoll_books_equal_uf_decode, fp_case_teardown),
	};
	return cmocka_run_group_tests(tests, fp_setup, fp_teardown);
}
