/* The examples (examples/) run as a user runs them, each against a live ring: sdk-producer
 * publishes phase 1 of its script, waits until the example has attached and read everything
 * (so phase 2 reaches it live, not through the image), publishes phase 2, and keeps the ring
 * open. Each example's output must show both phases. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "test/common/uf_test_run.h"
#include "test/ring/ring_test_util.h"

struct producer {
	pid_t pid;  /* sdk-producer */
	int in_fd;  /* its stdin: closing it ends the producer */
	int out_fd; /* its stdout */
};

static const char *bin_dir(void)
{
	return getenv("UF_BIN_DIR") ? getenv("UF_BIN_DIR") : UF_BIN_DIR;
}

/* Starts sdk-producer on ring `name`, waiting for one consumer before phase 2. */
static void producer_start(struct producer *p, const char *name)
{
	char path[512];
	int in[2], out[2];

	snprintf(path, sizeof(path), "%s/../test-bin/sdk-producer", bin_dir());
	assert_int_equal(access(path, X_OK), 0);
	assert_int_equal(pipe(in), 0);
	assert_int_equal(pipe(out), 0);
	p->pid = uf_test_fork();
	assert_true(p->pid >= 0);
	if (p->pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[1]);
		close(out[0]);
		execl(path, "sdk-producer", "--ring", name, "--wait-consumers", "1", (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	p->in_fd = in[1];
	p->out_fd = out[0];
}

/* Reads the producer's stdout until `word` appeared (bounded). */
static void producer_expect(struct producer *p, const char *word, int timeout_ms)
{
	static char buf[256];
	static size_t len;
	struct pollfd pf = {.fd = p->out_fd, .events = POLLIN};

	while (!strstr(buf, word)) {
		ssize_t n;
		assert_int_equal(poll(&pf, 1, timeout_ms), 1);
		n = read(p->out_fd, buf + len, sizeof(buf) - 1 - len);
		assert_true(n > 0);
		len += (size_t)n;
		buf[len] = '\0';
	}
	len = 0;
	buf[0] = '\0';
}

static void producer_stop(struct producer *p)
{
	close(p->in_fd);
	assert_true(test_child_ok(test_wait_child(p->pid, 10000)));
	close(p->out_fd);
}

static void run_example(const char *name, const char *const argv[], struct uf_test_run *r)
{
	struct producer p;

	producer_start(&p, name);
	producer_expect(&p, "ready", 10000);
	{
		char path[512];
		snprintf(path, sizeof(path), "%s/%s", bin_dir(), argv[0]);
		uf_test_run_path(path, argv, 30000, r);
	}
	/* the producer published phase 2 only once the example had caught up */
	producer_expect(&p, "live", 10000);
	producer_stop(&p);
	if (r->status != 0)
		print_error("%s exited %d: %s\n", argv[0], r->status, r->err);
	assert_int_equal(r->status, 0);
}

static void test_minimal_c_consumer_prints_every_record_of_both_phases(void **state)
{
	char name[64];
	struct uf_test_run r;
	const char *argv[] = {"../examples/minimal_consumer", name, "37", NULL};
	int lines = 0;

	(void)state;
	test_ring_name(name, sizeof(name), "exc");
	run_example(name, argv, &r);
	for (const char *s = r.out; (s = strchr(s, '\n')); s++)
		lines++;
	assert_int_equal(lines, 37);
	assert_non_null(strstr(r.out, "0 10 1 - 0 100 81\n")); /* AAPL directory, 'Q' = 81 */
	assert_non_null(strstr(r.out, "\n3 1 1 B 1500000 100 1\n"));
	assert_non_null(strstr(r.out, "\n29 1 1 B 1500000 0 0\n")); /* phase 2, live */
	assert_non_null(strstr(r.out, "\n36 9 2 - 0 2 0\n"));
	free(r.out), free(r.err);
}

static void test_cpp_book_consumer_follows_live_bbo_changes(void **state)
{
	char name[64];
	struct uf_test_run r;
	const char *argv[] = {"../examples/book_consumer", name, "800", NULL};

	(void)state;
	test_ring_name(name, sizeof(name), "excpp");
	run_example(name, argv, &r);
	/* phase 2 arrived live, one best-price change after another */
	assert_non_null(strstr(r.out, "bbo AAPL 149.9900 200 150.0100 300\n"
	                              "bbo AAPL 150.0050 400 150.0100 300\n"
	                              "bbo MSFT 410.0000 50 410.0500 20\n"
	                              "bbo DEEP 9.9900 20 10.1000 10 TRUNCATED\n"));
	/* the books at the end, from the image handover plus the live stream */
	assert_non_null(strstr(r.out, "top AAPL 150.0050 400 150.0100 300\n"
	                              "top MSFT 410.0000 50 410.0500 20\n"
	                              "top DEEP 9.9900 20 10.1000 10 TRUNCATED\n"));
	free(r.out), free(r.err);
}

static void test_python_consumer_prints_top_of_book(void **state)
{
	char name[64], script[512], lib[512], pypath[512];
	struct uf_test_run r;
	struct producer p;
	const char *py = getenv("UF_PYTHON3");
	const char *argv[] = {"python3", script, name, "1.5", NULL};

	(void)state;
	assert_non_null(py);
	snprintf(script, sizeof(script), "%s/examples/python/top_of_book.py", UF_SOURCE_DIR);
	snprintf(pypath, sizeof(pypath), "%s/python", UF_SOURCE_DIR);
	snprintf(lib, sizeof(lib), "%s/../lib/libufconsumer.so", bin_dir());
	setenv("PYTHONPATH", pypath, 1);
	setenv("UF_CONSUMER_LIB", lib, 1);
	test_ring_name(name, sizeof(name), "expy");
	producer_start(&p, name);
	producer_expect(&p, "ready", 10000);
	uf_test_run_path(py, argv, 30000, &r);
	producer_expect(&p, "live", 10000);
	producer_stop(&p);
	if (r.status != 0)
		print_error("top_of_book.py exited %d: %s\n", r.status, r.err);
	assert_int_equal(r.status, 0);
	assert_string_equal(r.out, "AAPL 150.0050 400 150.0100 300\n"
	                           "MSFT 410.0000 50 410.0500 20\n"
	                           "DEEP 9.9900 20 10.1000 10 TRUNCATED\n");
	free(r.out), free(r.err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_minimal_c_consumer_prints_every_record_of_both_phases),
	    cmocka_unit_test(test_cpp_book_consumer_follows_live_bbo_changes),
	    cmocka_unit_test(test_python_consumer_prints_top_of_book),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
