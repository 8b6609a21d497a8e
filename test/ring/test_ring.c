/* Broadcast ring data path: order, laps, torn records, several consumers, wake-ups,
 * limits. Producer API (uf_ring.h) against consumer processes (libufconsumer).
 * Multi-process through fork; every wait is bounded. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "test/common/uf_test_proc.h"
#include "ring/uf_ring.h"
#include "ring/ufconsumer.h"
#define RING_TEST_RING_HELPERS
#include "ring_test_util.h"

static void test_ring_reader_reads_in_order_across_wrap(void **state)
{
	char name[64];
	struct uf_record rec, buf[5];
	uint64_t seq = 0, want = 0, first;
	struct uf_ring *r;
	uf_consumer_t *c;
	int rc;

	test_ring_name(name, sizeof(name), "order");
	r = make_ring(name, 64, 0600);
	c = attach(name, 0, UF_CONSUMER_START_LATEST);
	assert_non_null(c);
	assert_int_equal(uf_consumer_next(c, &rec, &seq), -EAGAIN);
	for (uint64_t round = 0; round < 40; round++) {
		publish_range(r, round * 37, (round + 1) * 37, 1 + round % 7);
		while ((rc = uf_consumer_next(c, &rec, &seq)) == 0) {
			assert_int_equal(seq, want);
			assert_true(test_rec_ok(&rec, want));
			want++;
			if (want % 5 == 0) { /* batch read path too */
				rc = uf_consumer_read(c, buf, 5, &first);
				if (rc > 0) {
					assert_int_equal(first, want);
					for (int i = 0; i < rc; i++)
						assert_true(test_rec_ok(&buf[i], want + i));
					want += (uint64_t)rc;
				}
			}
		}
		assert_int_equal(rc, -EAGAIN);
	}
	assert_int_equal(want, 40 * 37);
	assert_int_equal(uf_ring_publish(r, buf, 17), -EMSGSIZE); /* > capacity / 4 */
	assert_int_equal(uf_ring_publish(r, buf, 0), 0);
	uf_ring_close(r);
	assert_int_equal(uf_consumer_next(c, &rec, &seq), -EPIPE);
	uf_consumer_detach(c);
	uf_ring_unlink(name, NULL);
}

static void test_ring_reader_detects_lap_exactly(void **state)
{
	char name[64];
	struct uf_consumer_lap lap;
	struct uf_consumer_info info;
	struct uf_record rec;
	uint64_t seq;
	struct uf_ring *r;
	uf_consumer_t *c;

	test_ring_name(name, sizeof(name), "lap");
	r = make_ring(name, 16, 0600);
	c = attach(name, 0, UF_CONSUMER_START_LATEST);
	assert_non_null(c);
	publish_range(r, 0, 100, 3);
	/* claim = 100, capacity 16: resume keeps 12 records, at 88; 88 records lost */
	assert_int_equal(uf_consumer_next(c, &rec, &seq), -EOVERFLOW);
	uf_consumer_last_lap(c, &lap);
	assert_int_equal(lap.from_seq, 0);
	assert_int_equal(lap.resume_seq, 88);
	assert_int_equal(lap.lost, 88);
	for (uint64_t s = 88; s < 100; s++) {
		assert_int_equal(uf_consumer_next(c, &rec, &seq), 0);
		assert_int_equal(seq, s);
		assert_true(test_rec_ok(&rec, s));
	}
	assert_int_equal(uf_consumer_next(c, &rec, &seq), -EAGAIN);
	uf_consumer_get_info(c, &info);
	assert_int_equal(info.lost, 88);
	assert_int_equal(info.laps, 1);
	assert_int_equal(info.received, 12);
	assert_int_equal(info.producer_alive, 1);
	assert_int_equal(info.producer_pid, getpid());

	/* the producer's report agrees */
	{
		struct uf_ring_consumer_info ci[4];
		assert_int_equal(uf_ring_consumers(r, ci, 4), 1);
		assert_int_equal(ci[0].pid, getpid());
		assert_int_equal(ci[0].lost, 88);
		assert_int_equal(ci[0].position, 100);
		assert_int_equal(ci[0].lag, 0);
		assert_string_equal(ci[0].tag, "test");
		publish_range(r, 100, 103, 1);
		assert_int_equal(uf_ring_consumers(r, ci, 4), 1);
		assert_int_equal(ci[0].lag, 3);
	}
	uf_consumer_detach(c);
	uf_ring_close(r);
	uf_ring_unlink(name, NULL);
}

/* Child: attaches from the oldest record and tells the parent (ready_fd) it is attached. */
static uf_consumer_t *child_attach_oldest(const char *name, uint64_t spin_ns, int ready_fd)
{
	uf_consumer_t *c = attach(name, spin_ns, UF_CONSUMER_START_OLDEST);

	CHILD_CHECK(c != NULL);
	test_pipe_put(ready_fd);
	return c;
}

/* Child: the next record, before the deadline `end`; a record returned (0) must be *want,
 * intact, and moves *want on. Returns what uf_consumer_next returned. */
static int child_next_in_order(uf_consumer_t *c, uint64_t *want, uint64_t end)
{
	struct uf_record rec;
	uint64_t seq;
	int rc;

	CHILD_CHECK(uf_now_mono_ns() < end);
	rc = uf_consumer_next(c, &rec, &seq);
	if (rc == 0) {
		CHILD_CHECK(seq == *want);
		CHILD_CHECK(test_rec_ok(&rec, seq));
		(*want)++;
	}
	return rc;
}

/* Child: reads every record until the ring is closed, checks order and content. */
static int child_read_all(const char *name, uint64_t spin_ns, int use_wait, uint64_t total,
                          int ready_fd)
{
	uf_consumer_t *c = child_attach_oldest(name, spin_ns, ready_fd);
	uint64_t want = 0, end = uf_now_mono_ns() + 20000000000ull;
	int rc;

	for (;;) {
		rc = child_next_in_order(c, &want, end);
		if (rc == 0)
			continue;
		if (rc == -EPIPE)
			break;
		CHILD_CHECK(rc == -EAGAIN);
		if (use_wait) {
			rc = uf_consumer_wait(c, 100000000);
			CHILD_CHECK(rc == 0 || rc == -ETIMEDOUT);
		}
	}
	CHILD_CHECK(want == total);
	uf_consumer_detach(c);
	return 0;
}

static void test_ring_several_consumers_see_every_record(void **state)
{
	const uint64_t total = 200000;
	const int nc = 3;
	char name[64];
	int fds[2], st;
	pid_t pids[3];
	struct uf_ring *r;

	test_ring_name(name, sizeof(name), "multi");
	r = make_ring(name, 1 << 18, 0600); /* larger than the stream: nobody can be lapped */
	assert_int_equal(pipe(fds), 0);
	for (int i = 0; i < nc; i++) {
		pids[i] = uf_test_fork();
		assert_true(pids[i] >= 0);
		if (pids[i] == 0) {
			/* 0: busy-poll, 1: spin then futex, 2: futex at once */
			uint64_t spin = i == 1 ? 50000 : 0;
			_exit(child_read_all(name, spin, i != 0, total, fds[1]));
		}
	}
	for (int i = 0; i < nc; i++)
		assert_true(test_pipe_get(fds[0], 5000));
	for (uint64_t s = 0; s < total; s += 1000) {
		publish_range(r, s, s + 1000, 1 + (s / 1000) % 8);
		if ((s / 1000) % 20 == 0)
			usleep(200); /* let the futex waiters fall asleep now and then */
	}
	uf_ring_close(r);
	for (int i = 0; i < nc; i++) {
		st = test_wait_child(pids[i], 30000);
		assert_true(test_child_ok(st));
	}
	close(fds[0]);
	close(fds[1]);
	uf_ring_unlink(name, NULL);
}

/* Child: reads a ring that laps it; every record returned must be intact and in sequence;
 * after a lap the next record is exactly resume_seq; received + lost = total. */
static int child_lapped_reader(const char *name, uint64_t total, int ready_fd)
{
	uf_consumer_t *c = child_attach_oldest(name, 0, ready_fd);
	uint64_t want = 0, got = 0, lost = 0, laps = 0, n = 0;
	uint64_t end = uf_now_mono_ns() + 20000000000ull;
	struct uf_consumer_lap lap;
	int rc;

	for (;;) {
		rc = child_next_in_order(c, &want, end);
		if (rc == 0) {
			got++;
			if (++n % 4096 == 0)
				usleep(300); /* fall behind on purpose */
			continue;
		}
		if (rc == -EOVERFLOW) {
			uf_consumer_last_lap(c, &lap);
			CHILD_CHECK(lap.from_seq == want);
			CHILD_CHECK(lap.resume_seq > want);
			CHILD_CHECK(lap.lost == lap.resume_seq - want);
			lost += lap.lost;
			laps++;
			want = lap.resume_seq;
			continue;
		}
		if (rc == -EPIPE)
			break;
		CHILD_CHECK(rc == -EAGAIN);
		uf_cpu_relax();
	}
	CHILD_CHECK(got + lost == total);
	CHILD_CHECK(laps > 0); /* the test must actually have lapped */
	fprintf(stderr, "lapped reader %d: got %llu lost %llu in %llu laps\n", (int)getpid(),
	        (unsigned long long)got, (unsigned long long)lost, (unsigned long long)laps);
	uf_consumer_detach(c);
	return 0;
}

static void test_ring_lapped_reader_never_sees_torn_record(void **state)
{
	const uint64_t total = 2000000;
	char name[64];
	int fds[2];
	pid_t pids[2];
	struct uf_ring *r;

	test_ring_name(name, sizeof(name), "torn");
	r = make_ring(name, 64, 0600);
	assert_int_equal(pipe(fds), 0);
	for (int i = 0; i < 2; i++) {
		pids[i] = uf_test_fork();
		assert_true(pids[i] >= 0);
		if (pids[i] == 0)
			_exit(child_lapped_reader(name, total, fds[1]));
	}
	for (int i = 0; i < 2; i++)
		assert_true(test_pipe_get(fds[0], 5000));
	publish_range(r, 0, total, 5);
	uf_ring_close(r);
	for (int i = 0; i < 2; i++)
		assert_true(test_child_ok(test_wait_child(pids[i], 30000)));
	close(fds[0]);
	close(fds[1]);
	uf_ring_unlink(name, NULL);
}

/* Makes the pipes `fds` (the child says it is attached) and `back` (free for the test), and
 * forks a child that attaches at the latest record. In the child returns 0 with *cc its
 * consumer; in the parent returns the child's pid once the child is attached. */
static pid_t fork_latest_reader(const char *name, int fds[2], int back[2], uf_consumer_t **cc)
{
	pid_t pid;

	assert_int_equal(pipe(fds), 0);
	assert_int_equal(pipe(back), 0);
	pid = uf_test_fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		*cc = attach(name, 0, UF_CONSUMER_START_LATEST);
		CHILD_CHECK(*cc != NULL);
		test_pipe_put(fds[1]);
		return 0;
	}
	assert_true(test_pipe_get(fds[0], 5000));
	return pid;
}

/* The end of a test with a fork_latest_reader child: the child must exit cleanly; the pipes
 * and the ring go. */
static void end_with_reader(pid_t pid, int fds[2], int back[2], struct uf_ring *r, const char *name)
{
	assert_true(test_child_ok(test_wait_child(pid, 5000)));
	for (int i = 0; i < 2; i++) {
		close(fds[i]);
		close(back[i]);
	}
	uf_ring_close(r);
	uf_ring_unlink(name, NULL);
}

/* State letter of process `pid` (/proc/PID/stat field 3), '?' when unreadable. */
static char proc_state(pid_t pid)
{
	char path[64], buf[256], *p;
	FILE *f;
	size_t n;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return '?';
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : '?';
}

/* A publish calls FUTEX_WAKE only when a consumer sleeps: none for 10000 publishes with a
 * registered consumer that never sleeps, one at most per publish to a sleeper. */
static void test_ring_wakes_only_when_a_consumer_sleeps(void **state)
{
	char name[64];
	int fds[2], back[2];
	struct uf_ring *r;
	uf_consumer_t *c, *cc;
	pid_t pid;
	uint64_t end;

	test_ring_name(name, sizeof(name), "wake");
	r = make_ring(name, 1024, 0600);
	c = attach(name, 0, UF_CONSUMER_START_LATEST); /* registered, never sleeping */
	assert_non_null(c);
	publish_range(r, 0, 10000, 8);
	assert_int_equal(r->hdr->wakes, 0);
	uf_consumer_detach(c);

	/* A sleeper leaves FUTEX_WAIT for a moment every 50 ms slice; a publish landing in that
	 * gap finds no sleeper counted and owes no wake (the sleeper then finds the record
	 * itself). So: five rounds of one record each; no round may wake more than once, and at
	 * least one must wake. */
	enum { ROUNDS = 5 };
	int woke = 0;
	pid = fork_latest_reader(name, fds, back, &cc);
	if (pid == 0) {
		struct uf_record rec;
		uint64_t seq;
		for (uint64_t i = 0; i < ROUNDS; i++) {
			CHILD_CHECK(uf_consumer_wait(cc, 10000000000ll) == 0);
			CHILD_CHECK(uf_consumer_next(cc, &rec, &seq) == 0);
			CHILD_CHECK(seq == 10000 + i && test_rec_ok(&rec, seq));
			test_pipe_put(back[1]);
		}
		uf_consumer_detach(cc);
		_exit(0);
	}
	for (uint64_t i = 0; i < ROUNDS; i++) {
		/* flagged asleep and blocked (state S), judged from one reading each */
		int sleeping = 0;
		end = uf_now_mono_ns() + 5000000000ull;
		while (((sleeping = sleeping_consumers(r)) == 0 || proc_state(pid) != 'S') &&
		       uf_now_mono_ns() < end)
			usleep(200);
		assert_int_equal(sleeping, 1);
		uint64_t wakes = r->hdr->wakes;
		publish_range(r, 10000 + i, 10001 + i, 1);
		assert_true(r->hdr->wakes <= wakes + 1);
		woke += r->hdr->wakes == wakes + 1;
		assert_true(test_pipe_get(back[0], 5000));
	}
	assert_true(woke >= 1);
	end_with_reader(pid, fds, back, r, name);
}

/* Issue 14, deferred wake-up: publishes in deferred mode make no system call however many
 * there are, and leave one wake owed; the flush makes exactly one FUTEX_WAKE, and it is that
 * call that wakes the consumer blocked in the kernel (the kernel says it woke one thread, so
 * the consumer did not just time out of its 50 ms sleep slice). A consumer's sleep slice can
 * end between our check and the flush (then the flush finds nobody blocked): five rounds,
 * at least one must show the kernel waking the consumer. */
static void test_ring_deferred_wake_is_one_call_at_the_flush(void **state)
{
	enum { ROUNDS = 5 };
	char name[64];
	int fds[2], back[2], woke = 0;
	struct uf_ring *r;
	uf_consumer_t *cc;
	pid_t pid;

	test_ring_name(name, sizeof(name), "defer");
	r = make_ring(name, 1024, 0600);
	pid = fork_latest_reader(name, fds, back, &cc);
	if (pid == 0) {
		struct uf_record rec;
		uint64_t seq;
		for (uint64_t i = 0; i < ROUNDS; i++) {
			/* each round publishes three records in three publishes */
			CHILD_CHECK(uf_consumer_wait(cc, 10000000000ll) == 0);
			for (uint64_t k = 0; k < 3; k++) {
				while (uf_consumer_next(cc, &rec, &seq) == -EAGAIN)
					CHILD_CHECK(uf_consumer_wait(cc, 5000000000ll) == 0);
				CHILD_CHECK(seq == i * 3 + k && test_rec_ok(&rec, seq));
			}
			test_pipe_put(back[1]);
		}
		uf_consumer_detach(cc);
		_exit(0);
	}
	uf_ring_defer_wake(r, 1);
	for (uint64_t i = 0; i < ROUNDS; i++) {
		uint64_t end = uf_now_mono_ns() + 5000000000ull, wakes;
		int rc;
		/* flagged asleep and blocked (state S): inside FUTEX_WAIT */
		int sleeping = 0;
		/* judged from one reading: the sleeper leaves FUTEX_WAIT every 50 ms slice */
		while (((sleeping = sleeping_consumers(r)) == 0 || proc_state(pid) != 'S') &&
		       uf_now_mono_ns() < end)
			usleep(200);
		assert_int_equal(sleeping, 1);
		wakes = r->hdr->wakes;
		publish_range(r, i * 3, i * 3 + 3, 1);  /* three publishes, one batch */
		assert_int_equal(r->hdr->wakes, wakes); /* no system call yet */
		assert_int_equal(r->wake_pending, 1);
		rc = uf_ring_wake_flush(r); /* -1: it left FUTEX_WAIT on its own meanwhile */
		woke += rc == 1;
		/* one FUTEX_WAKE at most for the three publishes (none when the sleeper had
		 * already left FUTEX_WAIT on its own), and exactly one when it woke someone */
		assert_true(r->hdr->wakes <= wakes + 1);
		if (rc == 1)
			assert_int_equal(r->hdr->wakes, wakes + 1);
		assert_int_equal(r->wake_pending, 0);
		assert_int_equal(uf_ring_wake_flush(r), -1); /* nothing owed any more */
		assert_true(test_pipe_get(back[0], 5000));   /* the consumer read all three */
	}
	assert_true(woke >= 1);
	end_with_reader(pid, fds, back, r, name);
}

/* Issue 14: a flush calls FUTEX_WAKE only for a consumer not woken yet. Forced by hand on the
 * producer's own table: a counted sleeper whose slot flag a wake has cleared (woken, not yet
 * running) costs no call; one whose flag is set (it went to sleep again) gets the call, and
 * the call clears the flag. */
static void test_ring_flush_skips_sleepers_already_woken(void **state)
{
	char name[64];
	struct uf_ring *r;
	uf_consumer_t *c;
	struct uf_ring_cslot *slots;
	uint64_t wakes;
	int slot = -1;

	test_ring_name(name, sizeof(name), "woken");
	r = make_ring(name, 1024, 0600);
	c = attach(name, 0, UF_CONSUMER_START_LATEST);
	assert_non_null(c);
	slots = (struct uf_ring_cslot *)(r->ct + 1);
	for (uint32_t i = 0; i < r->nslots; i++)
		if (slots[i].pid == (uint32_t)getpid())
			slot = (int)i;
	assert_true(slot >= 0);
	uf_ring_defer_wake(r, 1);

	/* counted, flag clear: woken already */
	r->ct->sleepers = 1;
	slots[slot].flags = 0;
	wakes = r->hdr->wakes;
	publish_range(r, 0, 1, 1);
	assert_int_equal(r->wake_pending, 1);
	assert_int_equal(uf_ring_wake_flush(r), -1);
	assert_int_equal(r->hdr->wakes, wakes); /* no call */

	/* counted, flag set: asleep and not woken */
	slots[slot].flags = 1;
	publish_range(r, 1, 2, 1);
	assert_true(uf_ring_wake_flush(r) >= 0); /* nobody blocked in the kernel: 0 */
	assert_int_equal(r->hdr->wakes, wakes + 1);
	assert_int_equal(slots[slot].flags, 0); /* marked woken */

	/* the next publish finds it woken: no call */
	publish_range(r, 2, 3, 1);
	assert_int_equal(uf_ring_wake_flush(r), -1);
	assert_int_equal(r->hdr->wakes, wakes + 1);

	r->ct->sleepers = 0;
	uf_consumer_detach(c);
	uf_ring_close(r);
	uf_ring_unlink(name, NULL);
}

static void test_ring_create_rejects_bad_options(void **state)
{
	struct uf_ring_options o;
	struct uf_ring *r = NULL;
	char err[256];

	uf_ring_options_init(&o);
	o.capacity = 1000;
	assert_int_equal(uf_ring_create("ok", &o, &r, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "power of two"));
	uf_ring_options_init(&o);
	assert_int_equal(uf_ring_create("bad/name", &o, &r, err, sizeof(err)), -EINVAL);
	assert_int_equal(uf_ring_create("", &o, &r, err, sizeof(err)), -EINVAL);
	o.depth = 65;
	assert_int_equal(uf_ring_create("ok", &o, &r, err, sizeof(err)), -EINVAL);
	uf_ring_options_init(&o);
	o.mode = 01777;
	assert_int_equal(uf_ring_create("ok", &o, &r, err, sizeof(err)), -EINVAL);
	assert_null(r);
}

static void test_ring_full_table_and_bad_seek_are_refused(void **state)
{
	uf_consumer_t *c[8], *extra = NULL;
	char name[64], err[256] = "";
	struct uf_ring *r;

	test_ring_name(name, sizeof(name), "full");
	r = make_ring(name, 64, 0600); /* 8 consumer slots */
	for (int i = 0; i < 8; i++) {
		c[i] = attach(name, 0, UF_CONSUMER_START_LATEST);
		assert_non_null(c[i]);
	}
	assert_int_equal(uf_consumer_attach(name, NULL, &extra, err, sizeof(err)), -EUSERS);
	assert_non_null(strstr(err, "all 8 consumer slots are in use"));
	uf_consumer_detach(c[7]); /* a slot comes back on detach */
	c[7] = attach(name, 0, UF_CONSUMER_START_LATEST);
	assert_non_null(c[7]);
	assert_int_equal(uf_ring_consumers(r, NULL, 0), 8);

	publish_range(r, 0, 200, 8);
	assert_int_equal(uf_consumer_seek(c[0], 201), -ERANGE); /* not published yet */
	assert_int_equal(uf_consumer_seek(c[0], 100), -ERANGE); /* overwritten already */
	assert_int_equal(uf_consumer_seek(c[0], 150), 0);
	{
		struct uf_record rec;
		uint64_t seq;
		assert_int_equal(uf_consumer_next(c[0], &rec, &seq), 0);
		assert_int_equal(seq, 150);
		assert_true(test_rec_ok(&rec, 150));
	}
	for (int i = 0; i < 8; i++)
		uf_consumer_detach(c[i]);
	assert_int_equal(uf_ring_consumers(r, NULL, 0), 0);
	uf_ring_close(r);
	uf_ring_unlink(name, NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_ring_reader_reads_in_order_across_wrap),
	    cmocka_unit_test(test_ring_reader_detects_lap_exactly),
	    cmocka_unit_test(test_ring_several_consumers_see_every_record),
	    cmocka_unit_test(test_ring_lapped_reader_never_sees_torn_record),
	    cmocka_unit_test(test_ring_wakes_only_when_a_consumer_sleeps),
	    cmocka_unit_test(test_ring_deferred_wake_is_one_call_at_the_flush),
	    cmocka_unit_test(test_ring_flush_skips_sleepers_already_woken),
	    cmocka_unit_test(test_ring_create_rejects_bad_options),
	    cmocka_unit_test(test_ring_full_table_and_bad_seek_are_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
