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
#include "test/common/uf_test_proc.h"
#include "test/common/uf_test_rings.h"

/* A child reports failure with this: prints where, exits with the line number (1..255). */
#define CHILD_CHECK(cond)                                                                          \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "child %d: %s:%d: check failed: %s\n", (int)getpid(),      \
			        __FILE__, __LINE__, #cond);                                        \
			_exit(__LINE__ % 250 + 2);                                                 \
		}                                                                                  \
	} while (0)

/* A unique ring name for `what`, removed at exit (uf_test_rings_remember). */
static inline void test_ring_name(char *buf, size_t len, const char *what)
{
	static int n;
	snprintf(buf, len, "t%d_%s_%d", (int)getpid(), what, n++);
	uf_test_rings_remember(buf);
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
	return uf_test_wait_status(pid, timeout_ms);
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

#if defined(RING_TEST_RING_HELPERS) || defined(RING_TEST_MAKE_RING)
/* Creates ring `name` with `capacity`, file `mode` and book image `depth`, room for 64
 * instruments and 8 consumers; fails the test, saying why, when it cannot. For test files
 * that include cmocka.h and uf_ring.h before this header and define RING_TEST_MAKE_RING (or
 * RING_TEST_RING_HELPERS). */
static inline struct uf_ring *make_ring_with(const char *name, uint64_t capacity, uint32_t mode,
                                             uint32_t depth)
{
	struct uf_ring_options o;
	struct uf_ring *r = NULL;
	char err[256] = "";
	int rc;

	uf_ring_options_init(&o);
	o.capacity = capacity;
	o.mode = mode;
	o.depth = depth;
	o.max_instruments = 64;
	o.max_consumers = 8;
	rc = uf_ring_create(name, &o, &r, err, sizeof(err));
	if (rc != 0)
		fprintf(stderr, "uf_ring_create(%s): %d %s\n", name, rc, err);
	assert_int_equal(rc, 0);
	return r;
}
#endif

#ifdef RING_TEST_RING_HELPERS
/* Ring helpers for the test_ring*.c files (they include cmocka.h, uf_ring.h and ufconsumer.h
 * before this header and define RING_TEST_RING_HELPERS). */
static inline struct uf_ring *make_ring(const char *name, uint64_t capacity, uint32_t mode)
{
	return make_ring_with(name, capacity, mode, UF_RING_DEFAULT_DEPTH);
}

static inline uf_consumer_t *attach(const char *name, uint64_t spin_ns, int start)
{
	struct uf_consumer_options o;
	uf_consumer_t *c = NULL;
	char err[256] = "";
	int rc;

	uf_consumer_options_init(&o);
	o.spin_ns = spin_ns;
	o.start = start;
	o.tag = "test";
	rc = uf_consumer_attach(name, &o, &c, err, sizeof(err));
	if (rc != 0)
		fprintf(stderr, "attach %s: %d %s\n", name, rc, err);
	return rc == 0 ? c : NULL;
}

static inline void publish_range(struct uf_ring *r, uint64_t from, uint64_t to, size_t batch)
{
	struct uf_record recs[16];

	while (from < to) {
		size_t n = 0;
		while (n < batch && n < 16 && from + n < to) {
			test_rec_make(&recs[n], from + n);
			n++;
		}
		assert_int_equal(uf_ring_publish(r, recs, n), 0);
		from += n;
	}
}
/* Consumers currently asleep in FUTEX_WAIT, per the producer's report. */
static inline int sleeping_consumers(struct uf_ring *r)
{
	struct uf_ring_consumer_info ci[8];
	int n = uf_ring_consumers(r, ci, 8), s = 0;

	for (int i = 0; i < n && i < 8; i++)
		s += ci[i].sleeping;
	return s;
}
#endif /* RING_TEST_RING_HELPERS */

#endif /* RING_TEST_UTIL_H */
