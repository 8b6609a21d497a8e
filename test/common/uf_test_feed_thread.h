/* A real feed's loop (uf_feed_run) on a thread of its own, as the daemon runs it, for the tests
 * that drive an engine in their own process: start it, watch it (done, tid), stop it and check
 * what the loop returned. One copy of the trampoline instead of one per test file. Include
 * after cmocka.h: a thread that cannot start or be joined fails the test. */
#ifndef UF_TEST_FEED_THREAD_H
#define UF_TEST_FEED_THREAD_H

#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

#include "feed/uf_feed.h"

struct uf_test_feed_thread {
	struct uf_feed *feed; /* the engine the loop runs (not owned) */
	pthread_t thr;
	volatile int stop; /* uf_feed_run's stop flag: uf_test_feed_thread_stop sets it */
	int rc;            /* what uf_feed_run returned (once `done`) */
	volatile int done; /* uf_feed_run has returned (a loop that ends by itself is a failure
	                    * for tests that watch it) */
	pid_t tid;         /* the loop's thread id once it runs (0 before; read with acquire):
	                    * for its scheduler statistics */
};

static inline void *uf_test_feed_thread_main(void *arg)
{
	struct uf_test_feed_thread *t = arg;
	__atomic_store_n(&t->tid, gettid(), __ATOMIC_RELEASE);
	t->rc = uf_feed_run(t->feed, &t->stop);
	if (t->rc < 0)
		fprintf(stderr, "uf_feed_run: %s\n", uf_feed_error(t->feed));
	t->done = 1;
	return NULL;
}

/* Starts `feed`'s loop on a new thread (t's other fields are reset). */
static inline void uf_test_feed_thread_start(struct uf_test_feed_thread *t, struct uf_feed *feed)
{
	t->feed = feed;
	t->stop = 0;
	t->rc = 0;
	t->done = 0;
	t->tid = 0;
	assert_int_equal(pthread_create(&t->thr, NULL, uf_test_feed_thread_main, t), 0);
}

/* Stops the loop and waits for its thread. Returns what uf_feed_run returned. */
static inline int uf_test_feed_thread_stop(struct uf_test_feed_thread *t)
{
	t->stop = 1;
	assert_int_equal(pthread_join(t->thr, NULL), 0);
	return t->rc;
}

#endif /* UF_TEST_FEED_THREAD_H */
