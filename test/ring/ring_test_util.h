/* Helpers for the multi-process ring tests: unique ring names, records whose every field is
 * derived from their sequence (so a torn record is detectable), bounded child waits. */
#ifndef RING_TEST_UTIL_H
#define RING_TEST_UTIL_H

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/uf_time.h"
#include "publish/uf_record.h"

/* A child reports failure with this: prints where, exits with the line number (1..255). */
#define CHILD_CHECK(cond)                                                                          \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "child %d: %s:%d: check failed: %s\n", (int)getpid(),      \
			        __FILE__, __LINE__, #cond);                                        \
			_exit(__LINE__ % 250 + 2);                                                 \
		}                                                                                  \
	} while (0)

/* Every ring name handed out is removed from /dev/shm at exit, even when an assertion
 * failed half way (children leave with _exit and do not run this). */
static char test_ring_names[64][64];
static int test_ring_nnames;

static inline void test_ring_cleanup(void)
{
	char path[256];

	for (int i = 0; i < test_ring_nnames; i++) {
		snprintf(path, sizeof(path), "/dev/shm/uf.%.63s", test_ring_names[i]);
		unlink(path);
		snprintf(path, sizeof(path), "/dev/shm/uf.%.63s.cons", test_ring_names[i]);
		unlink(path);
	}
}

static inline void test_ring_name(char *buf, size_t len, const char *what)
{
	static int n;
	snprintf(buf, len, "t%d_%s_%d", (int)getpid(), what, n++);
	if (test_ring_nnames == 0)
		atexit(test_ring_cleanup);
	if (test_ring_nnames < 64)
		snprintf(test_ring_names[test_ring_nnames++], 64, "%s", buf);
}

/* Record number `seq`: every field a different function of seq. */
static inline void test_rec_make(struct uf_record *r, uint64_t seq)
{
	memset(r, 0, sizeof(*r));
	r->kind = UF_REC_LEVEL;
	r->side = (seq & 1) ? UF_SIDE_ASK : UF_SIDE_BID;
	r->flags = (uint16_t)(seq * 7);
	r->instrument = (uint32_t)(seq % 977);
	r->price = (int64_t)(seq * 3 + 1);
	r->shares = ~seq;
	r->orders = (uint32_t)(seq ^ 0x5a5a5a5a);
	r->pub_delta_ns = (uint32_t)(seq >> 3);
	r->ref = seq * 0x9e3779b97f4a7c15ull;
	r->exch_ts = seq + 11;
	r->rx_ts = seq << 1;
	r->feed_seq = seq;
}

/* 1 when `r` is exactly record number seq (no mixture of two records). */
static inline int test_rec_ok(const struct uf_record *r, uint64_t seq)
{
	struct uf_record want;
	test_rec_make(&want, seq);
	return memcmp(r, &want, sizeof(want)) == 0;
}

/* Waits for `pid` at most timeout_ms, then SIGKILLs it. Returns the wait status, or -1 when
 * it had to be killed. */
static inline int test_wait_child(pid_t pid, int timeout_ms)
{
	uint64_t end = uf_now_mono_ns() + (uint64_t)timeout_ms * 1000000ull;
	int st;

	for (;;) {
		pid_t r = waitpid(pid, &st, WNOHANG);
		if (r == pid)
			return st;
		if (r < 0)
			return -1;
		if (uf_now_mono_ns() > end) {
			fprintf(stderr, "child %d did not finish in %d ms: killed\n", (int)pid,
			        timeout_ms);
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			return -1;
		}
		usleep(1000);
	}
}

/* 1 when the status is a clean exit(0). */
static inline int test_child_ok(int st)
{
	return st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/* Reads one byte from fd within timeout_ms; returns 1, or 0 on timeout/EOF. */
static inline int test_pipe_get(int fd, int timeout_ms)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	char b;

	if (poll(&p, 1, timeout_ms) != 1)
		return 0;
	return read(fd, &b, 1) == 1;
}

static inline void test_pipe_put(int fd)
{
	char b = 'x';
	if (write(fd, &b, 1) != 1)
		perror("pipe write");
}

#endif /* RING_TEST_UTIL_H */
