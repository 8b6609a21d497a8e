/* Placement (CPU checks, pinning, NUMA-local memory with the huge page fallback logged) and
 * the daemon's logging (levels, timestamp format, whole lines). */
#include <errno.h>
#include <numa.h>
#include <numaif.h>
#include <pthread.h>
#include <regex.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "daemon/log.h"
#include "daemon/placement.h"

/* Captures log lines in a temporary file; returns its contents (static buffer). */
static FILE *cap;

static void capture_start(void)
{
	cap = tmpfile();
	assert_non_null(cap);
	uf_log_set_fd(fileno(cap));
}

static const char *capture_end(void)
{
	static char buf[8192];
	size_t n;

	uf_log_set_fd(2);
	rewind(cap);
	n = fread(buf, 1, sizeof(buf) - 1, cap);
	buf[n] = '\0';
	fclose(cap);
	return buf;
}

static int highest_usable_cpu(void)
{
	cpu_set_t set;
	int hi = -1;
	assert_int_equal(sched_getaffinity(0, sizeof(set), &set), 0);
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &set))
			hi = c;
	return hi;
}

static void test_place_cpu_checks_follow_the_affinity_mask(void **state)
{
	cpu_set_t set;
	char list[128];

	assert_int_equal(sched_getaffinity(0, sizeof(set), &set), 0);
	assert_true(uf_place_cpu_usable(highest_usable_cpu()));
	assert_false(uf_place_cpu_usable(-1));
	assert_false(uf_place_cpu_usable(CPU_SETSIZE));
	assert_false(uf_place_cpu_usable(4000));
	assert_int_equal(uf_place_cpu_list(list, sizeof(list)), CPU_COUNT(&set));
	assert_true(strlen(list) > 0);
	/* A CPU outside the mask is refused even though it exists: restrict a child thread. */
	if (CPU_COUNT(&set) >= 2) {
		int hi = highest_usable_cpu();
		cpu_set_t one;
		CPU_ZERO(&one);
		CPU_SET(hi, &one);
		assert_int_equal(sched_setaffinity(0, sizeof(one), &one), 0);
		assert_false(uf_place_cpu_usable(hi == 0 ? 1 : 0));
		assert_true(uf_place_cpu_usable(hi));
		assert_int_equal(sched_setaffinity(0, sizeof(set), &set), 0);
	}
}

struct pin_arg {
	int cpu;    /* where to pin */
	int rc;     /* uf_place_pin_self result */
	int ran_on; /* sched_getcpu() after pinning */
};

static void *pin_main(void *p)
{
	struct pin_arg *a = p;
	a->rc = uf_place_pin_self(a->cpu, "test thread");
	sched_yield();
	a->ran_on = sched_getcpu();
	return NULL;
}

static void test_place_pin_self_moves_the_thread_to_its_cpu(void **state)
{
	struct pin_arg a = {.cpu = highest_usable_cpu()};
	pthread_t t;
	const char *log;

	capture_start();
	assert_int_equal(pthread_create(&t, NULL, pin_main, &a), 0);
	pthread_join(t, NULL);
	log = capture_end();
	assert_int_equal(a.rc, 0);
	assert_int_equal(a.ran_on, a.cpu);
	assert_non_null(strstr(log, "test thread pinned to CPU"));
}

static void test_place_alloc_is_zeroed_on_its_node_and_says_which_pages(void **state)
{
	struct uf_place_mem m;
	size_t len = 3u << 20; /* 3 MiB: two huge pages when there are any */
	const char *log;
	int node = -1;

	capture_start();
	assert_int_equal(uf_place_alloc(len, 0, "test buffers", &m), 0);
	log = capture_end();
	assert_non_null(m.addr);
	assert_int_equal((uintptr_t)m.addr % (size_t)sysconf(_SC_PAGESIZE), 0);
	assert_int_equal(m.len, len);
	assert_true(m.map_len >= len);
	for (size_t i = 0; i < len; i += 4096)
		assert_int_equal(((volatile unsigned char *)m.addr)[i], 0);
	memset(m.addr, 0xab, len); /* writable all the way */
	if (m.huge) {
		assert_int_equal(m.map_len % (2u << 20), 0);
		assert_non_null(strstr(log, "(2 MiB huge pages)"));
	} else {
		/* The fallback is logged, with the reason and the way to fix it. */
		assert_non_null(strstr(log, "test buffers: no explicit huge pages"));
		assert_non_null(strstr(log, "vm.nr_hugepages"));
	}
	if (numa_available() == 0) {
		assert_int_equal(m.node, 0);
		/* The kernel says which node backs the first page. */
		assert_int_equal(get_mempolicy(&node, NULL, 0, m.addr, MPOL_F_NODE | MPOL_F_ADDR),
		                 0);
		assert_int_equal(node, 0);
		assert_non_null(strstr(log, "on NUMA node 0"));
	}
	uf_place_free(&m);
	assert_null(m.addr);
}

static void test_place_alloc_refuses_a_node_that_does_not_exist(void **state)
{
	struct uf_place_mem m;
	const char *log;

	capture_start();
	assert_int_equal(uf_place_alloc(4096, 999, "nowhere", &m), -EINVAL);
	log = capture_end();
	assert_null(m.addr);
	assert_non_null(strstr(log, "nowhere: NUMA node 999 does not exist"));
	assert_false(uf_place_node_usable(999));
	assert_true(uf_place_node_usable(0));
	assert_int_equal(uf_place_node_of_cpu(0), numa_available() == 0 ? numa_node_of_cpu(0) : 0);
}

struct ctl_arg {
	int busy[2];     /* busy CPUs to avoid */
	int nbusy;       /* how many */
	int left;        /* uf_place_control_threads result */
	cpu_set_t after; /* the thread's mask afterwards */
};

static void *ctl_main(void *p)
{
	struct ctl_arg *a = p;
	a->left = uf_place_control_threads(a->busy, a->nbusy);
	pthread_getaffinity_np(pthread_self(), sizeof(a->after), &a->after);
	return NULL;
}

static void test_place_control_threads_stay_off_busy_cpus(void **state)
{
	cpu_set_t set;
	struct ctl_arg a = {.busy = {highest_usable_cpu()}, .nbusy = 1};
	pthread_t t;
	const char *log;

	sched_getaffinity(0, sizeof(set), &set);
	assert_int_equal(pthread_create(&t, NULL, ctl_main, &a), 0);
	pthread_join(t, NULL);
	if (CPU_COUNT(&set) >= 2) {
		assert_int_equal(a.left, CPU_COUNT(&set) - 1);
		assert_false(CPU_ISSET(a.busy[0], &a.after));
	}
	/* Every CPU busy: the mask stays and the operator is told. */
	a.nbusy = 0;
	for (int c = 0; c < CPU_SETSIZE && a.nbusy < 2; c++)
		if (CPU_ISSET(c, &set))
			a.busy[a.nbusy++] = c;
	if (CPU_COUNT(&set) > 2)
		return; /* two busy CPUs do not cover a bigger machine; the first half covered it */
	capture_start();
	assert_int_equal(pthread_create(&t, NULL, ctl_main, &a), 0);
	pthread_join(t, NULL);
	log = capture_end();
	assert_int_equal(a.left, 0);
	assert_int_equal(CPU_COUNT(&a.after), CPU_COUNT(&set));
	assert_non_null(strstr(log, "every usable CPU runs a feed"));
}

static void test_log_lines_have_time_level_and_respect_the_level(void **state)
{
	regex_t re;
	char big[3000];
	const char *log;

	assert_int_equal(
	    regcomp(&re,
	            "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{6}Z "
	            "WARN  disk 42 full\n$",
	            REG_EXTENDED),
	    0);
	uf_log_set_level(UF_LOG_WARN);
	capture_start();
	uf_log_info("not shown");
	uf_log_debug("not shown either");
	uf_log_warn("disk %d full", 42);
	log = capture_end();
	if (regexec(&re, log, 0, NULL, 0) != 0)
		fail_msg("unexpected log output: \"%s\"", log);
	regfree(&re);

	uf_log_set_level(UF_LOG_DEBUG);
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	capture_start();
	errno = EBUSY;
	uf_log_error("%s", big);
	assert_int_equal(errno, EBUSY); /* logging preserves errno */
	log = capture_end();
	assert_true(strlen(log) < 1100);
	assert_non_null(strstr(log, " ERROR xxx"));
	assert_non_null(strstr(log, "...\n"));
	assert_int_equal(uf_log_level_parse("debug"), UF_LOG_DEBUG);
	assert_int_equal(uf_log_level_parse("loud"), -1);
	assert_string_equal(uf_log_level_name(UF_LOG_WARN), "warn");
	uf_log_set_level(UF_LOG_INFO);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_place_cpu_checks_follow_the_affinity_mask),
	    cmocka_unit_test(test_place_pin_self_moves_the_thread_to_its_cpu),
	    cmocka_unit_test(test_place_alloc_is_zeroed_on_its_node_and_says_which_pages),
	    cmocka_unit_test(test_place_alloc_refuses_a_node_that_does_not_exist),
	    cmocka_unit_test(test_place_control_threads_stay_off_busy_cpus),
	    cmocka_unit_test(test_log_lines_have_time_level_and_respect_the_level),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
