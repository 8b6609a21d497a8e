/* The producer's state read from another thread, under ThreadSanitizer: this file and the
 * ring's sources are compiled with -fsanitize=thread (test/ring/CMakeLists.txt), a producer
 * thread publishes while the test's thread asks for the consumers (as the daemon's status
 * thread does), and TSan fails the run on any data race (issue 23 item 17: uf_ring_consumers
 * read the producer thread's plain r->tail). Bounded: a fixed number of publishes. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/uf_atomic.h"
#include "ring/uf_ring.h"
#include "ring_test_util.h"

#define RACE_PUBLISHES 20000

struct race {
	struct uf_ring *r;
	uint32_t done; /* set by the producer when it is finished (release) */
};

static void *producer(void *arg)
{
	struct race *x = arg;
	struct uf_record rec[4];
	for (uint64_t i = 0; i < RACE_PUBLISHES; i++) {
		for (int k = 0; k < 4; k++)
			test_rec_make(&rec[k], i * 4 + (uint64_t)k);
		assert_int_equal(uf_ring_publish(x->r, rec, 4), 0);
	}
	uf_store_release_u32(&x->done, 1);
	return NULL;
}

static void test_consumers_read_while_the_producer_publishes(void **state)
{
	char name[64], err[256];
	struct uf_ring_options o;
	struct uf_ring_consumer_info ci[4];
	struct race x = {0};
	pthread_t t;

	test_ring_name(name, sizeof(name), "race");
	uf_ring_options_init(&o);
	o.capacity = 4096;
	o.max_instruments = 16;
	o.hugepages = 0;
	assert_int_equal(uf_ring_create(name, &o, &x.r, err, sizeof(err)), 0);
	assert_int_equal(pthread_create(&t, NULL, producer, &x), 0);
	uint64_t calls = 0;
	while (!uf_load_acquire_u32(&x.done)) {
		assert_true(uf_ring_consumers(x.r, ci, 4) >= 0);
		calls++;
	}
	pthread_join(t, NULL);
	assert_true(calls > 0);
	assert_int_equal(uf_ring_tail(x.r), 4 * RACE_PUBLISHES);
	uf_ring_close(x.r);
	uf_ring_unlink(name, NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_consumers_read_while_the_producer_publishes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
