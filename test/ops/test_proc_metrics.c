/* process_* metrics (daemon/proc_metrics.c): each value moved by doing what it
 * measures (burn CPU, touch memory, open descriptors, lower the descriptor limit), the start
 * time against the clock, and rendered text promtool accepts. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "test/common/uf_test_promtool.h"
#include "daemon/proc_metrics.h"

static double now_s(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void test_proc_metrics_cpu_grows_with_cpu_burnt(void **state)
{
	struct uf_proc_metrics a, b;
	volatile uint64_t x = 1;

	assert_int_equal(uf_proc_metrics_read(&a), 0);
	double t0 = now_s(CLOCK_PROCESS_CPUTIME_ID);
	while (now_s(CLOCK_PROCESS_CPUTIME_ID) - t0 < 0.3) /* CPU time: immune to a busy host */
		for (int i = 0; i < 100000; i++)
			x = x * 6364136223846793005ull + 1;
	assert_int_equal(uf_proc_metrics_read(&b), 0);
	/* /proc counts in 10 ms ticks: 300 ms burnt shows as at least 0.25 s. */
	if (b.cpu_seconds - a.cpu_seconds < 0.25)
		fail_msg("cpu_seconds %.2f -> %.2f after burning 0.3 s", a.cpu_seconds,
		         b.cpu_seconds);
}

static void test_proc_metrics_resident_grows_with_touched_memory(void **state)
{
	struct uf_proc_metrics a, b;
	size_t len = 64u << 20;

	assert_int_equal(uf_proc_metrics_read(&a), 0);
	char *p = malloc(len);
	assert_non_null(p);
	memset(p, 1, len);
	assert_int_equal(uf_proc_metrics_read(&b), 0);
	if (b.resident_bytes < a.resident_bytes + (60u << 20))
		fail_msg("resident %llu -> %llu after touching 64 MiB",
		         (unsigned long long)a.resident_bytes,
		         (unsigned long long)b.resident_bytes);
	assert_true(b.virtual_bytes >= a.virtual_bytes + len);
	free(p);
}

static void test_proc_metrics_counts_open_descriptors_and_the_limit(void **state)
{
	struct uf_proc_metrics a, b;
	struct rlimit old, rl;
	int fds[10];

	assert_int_equal(uf_proc_metrics_read(&a), 0);
	for (int i = 0; i < 10; i++)
		assert_true((fds[i] = open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0);
	assert_int_equal(uf_proc_metrics_read(&b), 0);
	assert_int_equal(b.open_fds, a.open_fds + 10);
	for (int i = 0; i < 10; i++)
		close(fds[i]);

	assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
	rl = old;
	rl.rlim_cur = 777;
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &rl), 0);
	assert_int_equal(uf_proc_metrics_read(&b), 0);
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
	assert_int_equal(b.max_fds, 777);
}

static double test_started;

static void test_proc_metrics_start_time_is_this_process(void **state)
{
	struct uf_proc_metrics m;

	assert_int_equal(uf_proc_metrics_read(&m), 0);
	/* btime is whole seconds: the start time is within about a second of when main ran. */
	if (m.start_time_seconds > test_started + 1.5 || m.start_time_seconds < test_started - 30)
		fail_msg("start %.2f, main ran at %.2f", m.start_time_seconds, test_started);
}

static void test_proc_metrics_render_is_promtool_clean(void **state)
{
	struct uf_proc_metrics m = {.cpu_seconds = 12.5,
	                            .resident_bytes = 1u << 20,
	                            .virtual_bytes = 4u << 20,
	                            .start_time_seconds = 1796000000.25,
	                            .open_fds = 17,
	                            .max_fds = 65536,
	                            .max_virtual = UINT64_MAX};
	char text[4096], why[4096];

	assert_true(uf_proc_metrics_render(&m, text, sizeof(text)) > 0);
	const char *want[] = {
	    "\nprocess_cpu_seconds_total 12.50\n",
	    "\nprocess_open_fds 17\n",
	    "\nprocess_max_fds 65536\n",
	    "\nprocess_virtual_memory_bytes 4194304\n",
	    "\nprocess_virtual_memory_max_bytes +Inf\n",
	    "\nprocess_resident_memory_bytes 1048576\n",
	    "\nprocess_start_time_seconds 1796000000.25\n",
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		if (!strstr(text, want[i]))
			fail_msg("missing \"%s\" in:\n%s", want[i] + 1, text);
	if (uf_test_promtool_check_metrics(text, why, sizeof(why)) != 0)
		fail_msg("promtool: %s\n%s", why, text);

	/* Real values too, and a buffer too small. */
	assert_int_equal(uf_proc_metrics_read(&m), 0);
	assert_true(uf_proc_metrics_render(&m, text, sizeof(text)) > 0);
	if (uf_test_promtool_check_metrics(text, why, sizeof(why)) != 0)
		fail_msg("promtool: %s\n%s", why, text);
	assert_int_equal(uf_proc_metrics_render(&m, text, 64), -ENOSPC);
}

int main(void)
{
	test_started = now_s(CLOCK_REALTIME);
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_proc_metrics_cpu_grows_with_cpu_burnt),
	    cmocka_unit_test(test_proc_metrics_resident_grows_with_touched_memory),
	    cmocka_unit_test(test_proc_metrics_counts_open_descriptors_and_the_limit),
	    cmocka_unit_test(test_proc_metrics_start_time_is_this_process),
	    cmocka_unit_test(test_proc_metrics_render_is_promtool_clean),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
