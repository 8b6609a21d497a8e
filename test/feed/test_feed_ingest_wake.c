/* Issue 14: with SQPOLL the io_uring SQ thread makes the consumers' FUTEX_WAKE for the feed
 * thread (uf_ingest_futex_wake), so the feed makes no system call per packet even when its
 * consumers sleep.
 *
 * The "feed" here is a thread that cannot make a futex system call at all: a seccomp filter
 * fails every futex(2) of that thread with EPERM. A waiter blocked in FUTEX_WAIT is still
 * woken, so the SQ thread did it. The completions are reaped by uf_ingest_poll like the
 * receives: a wake that found nobody is counted idle, one the kernel refused (a misaligned
 * word) is counted, made again as a system call, and no later wake is handed over. */
#include <errno.h>
#include <limits.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/futex.h>
#include <linux/seccomp.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <setjmp.h>
#include <cmocka.h>

#include "feed/ingest.h"
#include "feed_test_util.h"

#if defined(__x86_64__)
#define IW_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define IW_AUDIT_ARCH AUDIT_ARCH_AARCH64
#else
#error "the seccomp filter of this test needs the audit arch of this machine"
#endif

#define IW_TIMEOUT_NS 10000000000ull /* every wait of this test is bounded by it */

/* Fails every futex(2) of the calling thread (only: no TSYNC) with EPERM. */
static int iw_forbid_futex(void)
{
	struct sock_filter f[] = {
	    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, IW_AUDIT_ARCH, 1, 0),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_futex, 0, 1),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {.len = (unsigned short)(sizeof(f) / sizeof(f[0])), .filter = f};
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -errno;
	return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0 ? -errno : 0;
}

struct iw_waiter {
	uint32_t *word;
	pid_t tid;
	volatile int started;
	volatile long rc; /* FUTEX_WAIT's result: 0 woken, -ETIMEDOUT, ... */
	volatile int done;
};

static void *iw_waiter_thread(void *arg)
{
	struct iw_waiter *w = arg;
	w->tid = gettid();
	__atomic_store_n(&w->started, 1, __ATOMIC_RELEASE);
	struct timespec ts = {(time_t)(IW_TIMEOUT_NS / 1000000000ull), 0};
	long rc = syscall(SYS_futex, w->word, FUTEX_WAIT, 0, &ts, NULL, 0);
	w->rc = rc < 0 ? -errno : rc;
	__atomic_store_n(&w->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* What the "feed" thread saw; checked on the main thread (cmocka asserts belong there). */
struct iw_result {
	int setup_rc;          /* 0, or where it stopped (negative errno) */
	char err[256];         /* uf_ingest_open's message */
	int backend_sqpoll;    /* the ring runs with SQPOLL */
	int async_available;   /* ig.async_wake after open */
	long own_wake_errno;   /* errno of a FUTEX_WAKE the thread tried itself */
	int wake_rc;           /* uf_ingest_futex_wake for the sleeper */
	int waiter_blocked;    /* the waiter was asleep in the kernel before the wake */
	long waiter_rc;        /* its FUTEX_WAIT result */
	int polled_packets;    /* packets uf_ingest_poll returned (none was sent) */
	int idle_rc;           /* uf_ingest_futex_wake with nobody waiting */
	uint64_t idle_counted; /* ring_wakes_idle after its completion */
	int bad_rc;            /* uf_ingest_futex_wake on a misaligned word */
	uint64_t bad_counted;  /* ring_wake_errors after its completion */
	int async_after_error; /* ig.async_wake after that */
	int after_error_rc;    /* the next uf_ingest_futex_wake */
	struct iw_waiter w;    /* the sleeper: joined by the main thread (a join waits on a
	                        * futex, which the "feed" thread cannot) */
	pthread_t wt;
	int waiter_started;
};

/* Polls until `*counter` reaches `want` or the deadline; returns packets seen (none). */
static int iw_poll_until(struct uf_ingest *ig, const uint64_t *counter, uint64_t want)
{
	struct uf_pkt pkts[UF_INGEST_BATCH];
	int seen = 0;
	uint64_t end = uf_now_mono_ns() + IW_TIMEOUT_NS;
	while (uf_load_relaxed_u64(counter) < want && uf_now_mono_ns() < end) {
		int n = uf_ingest_poll(ig, pkts, UF_INGEST_BATCH, 0);
		if (n > 0) {
			seen += n;
			uf_ingest_release(ig, pkts, n);
		}
		sched_yield(); /* 2 CPUs: leave one to the SQ thread */
	}
	return seen;
}

static void *iw_feed_thread(void *arg)
{
	struct iw_result *r = arg;
	static uint32_t word;     /* the sleeper's futex word */
	static uint32_t spare[2]; /* an aligned word, and a misaligned one inside it */
	struct uf_feed_stats fst;
	struct uf_feed_line_stats line;
	struct uf_feed_line_stats *st[1] = {&line};
	struct uf_ingest ig;
	memset(&fst, 0, sizeof(fst));
	memset(&line, 0, sizeof(line));

	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		r->setup_rc = -errno;
		return NULL;
	}
	struct uf_ingest_params p = {.backend = UF_BACKEND_IO_URING,
	                             .sqpoll_cpu = -1,
	                             .sqpoll_idle_ms = 1000,
	                             .numa_node = -1,
	                             .buf_count = 64,
	                             .buf_size = 2048};
	r->setup_rc = uf_ingest_open(&ig, &p, &fd, 1, st, &fst, r->err, sizeof(r->err));
	if (r->setup_rc < 0) {
		close(fd);
		return NULL;
	}
	r->backend_sqpoll = ig.sqpoll;
	r->async_available = ig.async_wake;

	/* A sleeper, started before the filter (a new thread inherits it). */
	struct iw_waiter *wp = &r->w;
	wp->word = &word;
	if (pthread_create(&r->wt, NULL, iw_waiter_thread, wp) != 0) {
		r->setup_rc = -EAGAIN;
		goto out;
	}
	r->waiter_started = 1;
	int rc = iw_forbid_futex();
	if (rc < 0) {
		r->setup_rc = rc;
		goto out;
	}
	errno = 0;
	if (syscall(SYS_futex, &word, FUTEX_WAKE, INT_MAX, NULL, NULL, 0) < 0)
		r->own_wake_errno = errno; /* EPERM: this thread cannot wake anyone itself */

	uint64_t end = uf_now_mono_ns() + IW_TIMEOUT_NS;
	while (
	    (!__atomic_load_n(&wp->started, __ATOMIC_ACQUIRE) || ft_thread_state(wp->tid) != 'S') &&
	    uf_now_mono_ns() < end)
		usleep(1000);
	r->waiter_blocked = __atomic_load_n(&wp->started, __ATOMIC_ACQUIRE) &&
	                    ft_thread_state(wp->tid) == 'S' && !wp->done;
	__atomic_store_n(&word, 1, __ATOMIC_RELEASE); /* as the ring bumps its wake word */
	r->wake_rc = uf_ingest_futex_wake(&ig, &word);
	end = uf_now_mono_ns() + IW_TIMEOUT_NS;
	struct uf_pkt pkts[UF_INGEST_BATCH];
	while (!__atomic_load_n(&wp->done, __ATOMIC_ACQUIRE) && uf_now_mono_ns() < end) {
		int n = uf_ingest_poll(&ig, pkts, UF_INGEST_BATCH, 0); /* reaps the wake's CQE */
		if (n > 0) {
			r->polled_packets += n;
			uf_ingest_release(&ig, pkts, n);
		}
		usleep(100);
	}
	/* Until the woken waiter is gone: its exit must not wait for a lock this thread could
	 * only release with a futex wake (a sanitizer's runtime, say). stat(2), no allocation. */
	char task[64];
	struct stat sb;
	snprintf(task, sizeof(task), "/proc/self/task/%d", (int)wp->tid);
	while (__atomic_load_n(&wp->done, __ATOMIC_ACQUIRE) && stat(task, &sb) == 0 &&
	       uf_now_mono_ns() < end)
		usleep(1000);

	/* Nobody waiting: the completion says 0 woken, counted idle. */
	r->idle_rc = uf_ingest_futex_wake(&ig, &word);
	r->polled_packets += iw_poll_until(&ig, &fst.ring_wakes_idle, 1);
	r->idle_counted = uf_load_relaxed_u64(&fst.ring_wakes_idle);

	/* A word the kernel refuses (not 4-byte aligned): -EINVAL in the completion. */
	r->bad_rc = uf_ingest_futex_wake(&ig, (uint32_t *)(void *)((char *)spare + 1));
	r->polled_packets += iw_poll_until(&ig, &fst.ring_wake_errors, 1);
	r->bad_counted = uf_load_relaxed_u64(&fst.ring_wake_errors);
	r->async_after_error = ig.async_wake;
	r->after_error_rc = uf_ingest_futex_wake(&ig, &word);
out:
	uf_ingest_close(&ig);
	close(fd);
	return NULL;
}

static void test_ingest_sqpoll_wakes_a_sleeper_without_a_futex_call(void **state)
{
	(void)state;
	struct iw_result r;
	pthread_t t;
	memset(&r, 0, sizeof(r));
	assert_int_equal(pthread_create(&t, NULL, iw_feed_thread, &r), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	if (r.waiter_started)
		assert_int_equal(pthread_join(r.wt, NULL), 0);
	r.waiter_rc = r.w.rc;
	if (r.setup_rc < 0)
		fail_msg("setup: %s (%s)", strerror(-r.setup_rc), r.err);
	assert_true(r.backend_sqpoll);
	assert_true(r.async_available); /* kernel 6.7+: IORING_OP_FUTEX_WAKE */
	assert_int_equal(r.own_wake_errno, EPERM);
	assert_true(r.waiter_blocked);
	assert_int_equal(r.wake_rc, 0);
	assert_int_equal(r.waiter_rc, 0);      /* woken, not timed out: by the SQ thread */
	assert_int_equal(r.polled_packets, 0); /* wake completions are not packets */
	assert_int_equal(r.idle_rc, 0);
	assert_int_equal(r.idle_counted, 1);
	assert_int_equal(r.bad_rc, 0); /* handed over: the kernel refuses it later */
	assert_int_equal(r.bad_counted, 1);
	assert_false(r.async_after_error);
	assert_int_equal(r.after_error_rc, -EOPNOTSUPP);
}

/* Without SQPOLL there is no SQ thread to hand a wake to: the caller makes the call. */
static void test_ingest_without_sqpoll_hands_no_wake_over(void **state)
{
	(void)state;
	struct uf_feed_stats fst;
	struct uf_feed_line_stats line;
	struct uf_feed_line_stats *st[1] = {&line};
	struct uf_ingest ig;
	char err[256];
	uint32_t word = 0;
	memset(&fst, 0, sizeof(fst));
	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	assert_true(fd >= 0);
	struct uf_ingest_params p = {.backend = UF_BACKEND_IO_URING_NOSQPOLL,
	                             .sqpoll_cpu = -1,
	                             .numa_node = -1,
	                             .buf_count = 64,
	                             .buf_size = 2048};
	assert_int_equal(uf_ingest_open(&ig, &p, &fd, 1, st, &fst, err, sizeof(err)), 0);
	assert_false(ig.async_wake);
	assert_int_equal(uf_ingest_futex_wake(&ig, &word), -EOPNOTSUPP);
	uf_ingest_close(&ig);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_ingest_sqpoll_wakes_a_sleeper_without_a_futex_call),
	    cmocka_unit_test(test_ingest_without_sqpoll_hands_no_wake_over),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
