/* The ring journal (ring/journal_writer.h, ring/journal_reader.h, UF_CONSUMER_START_JOURNAL):
 * a consumer attached late reads the day from the journal and is handed over to the ring with
 * no gap and no duplicate, seeks anywhere of the day, torn and corrupt files are detected and
 * continued, and a full or vanished directory is counted while the producer never waits. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sched.h>
#include <dirent.h>

#include <cmocka.h>

#include "ring/journal_file.h"
#include "ring/journal_reader.h"
#include "ring/journal_writer.h"
#include "ring/ufbook.h"
#include "ring/ufconsumer.h"
#include "ring/uf_ring.h"
#include "ring_test_util.h"

#define NINST 8

/* Record number `seq` of a synthetic day: price levels and trades of NINST instruments, every
 * field a function of seq (the books are a fold of the whole sequence: one record missing or
 * doubled changes them). */
static void day_rec(struct uf_record *r, uint64_t seq)
{
	uint64_t x = seq * 0x9e3779b97f4a7c15ull;

	x ^= x >> 29;
	memset(r, 0, sizeof(*r));
	r->instrument = (uint32_t)(x % NINST);
	r->flags = UF_RECF_LAST;
	r->exch_ts = seq * 1000 + 7;
	r->rx_ts = seq + 1;
	r->feed_seq = seq + 1;
	if (x % 10 == 0) {
		r->kind = UF_REC_TRADE;
		r->side = UF_SIDE_BID;
		r->price = (int64_t)(1000000 + (x >> 8) % 20 * 100);
		r->shares = 1 + (x >> 16) % 500;
		r->ref = seq;
		return;
	}
	r->kind = UF_REC_LEVEL;
	r->side = (x >> 5) & 1 ? UF_SIDE_ASK : UF_SIDE_BID;
	r->price = (int64_t)(r->side == UF_SIDE_BID ? 990000 : 1010000) +
	           (int64_t)((x >> 8) % 20) * (r->side == UF_SIDE_BID ? -100 : 100);
	r->shares = (x >> 20) % 4 == 0 ? 0 : 100 * (1 + (x >> 24) % 50);
	r->orders = r->shares ? 1 + (uint32_t)((x >> 32) % 5) : 0;
}

static int rec_is(const struct uf_record *r, uint64_t seq)
{
	struct uf_record want;

	day_rec(&want, seq);
	return memcmp(r, &want, sizeof(want)) == 0;
}

static char jdir[128];

static int setup_dir(void **state)
{
	(void)state;
	snprintf(jdir, sizeof(jdir), "/tmp/uf_journal_test.XXXXXX");
	return mkdtemp(jdir) ? 0 : -1;
}

static void rm_tree(const char *dir)
{
	char path[512];
	struct dirent *de;
	DIR *d = opendir(dir);

	if (!d)
		return;
	while ((de = readdir(d)))
		if (de->d_name[0] != '.') {
			snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
			unlink(path);
		}
	closedir(d);
	rmdir(dir);
}

static int teardown_dir(void **state)
{
	(void)state;
	rm_tree(jdir);
	return 0;
}

static struct uf_ring *make_ring(const char *name, uint64_t capacity)
{
	struct uf_ring_options o;
	struct uf_ring *r = NULL;
	char err[256] = "";

	uf_ring_options_init(&o);
	o.capacity = capacity;
	o.max_instruments = 64;
	o.numa_node = UF_RING_NUMA_NONE;
	o.hugepages = 0;
	if (uf_ring_create(name, &o, &r, err, sizeof(err)) < 0)
		fail_msg("uf_ring_create: %s", err);
	return r;
}

static struct uf_journal *start_writer(struct uf_ring *r, const char *dir, int fsync)
{
	struct uf_journal_options jo;
	struct uf_journal *j = NULL;
	char err[256] = "";

	memset(&jo, 0, sizeof(jo));
	jo.dir = dir;
	jo.fsync = fsync;
	jo.idle_us = 50;
	if (uf_journal_start(r, &jo, &j, err, sizeof(err)) < 0)
		fail_msg("uf_journal_start: %s", err);
	return j;
}

/* Waits (bounded) until the writer has copied everything published: the test keeps the writer
 * from being lapped on a busy 2-CPU host by waiting for the event, never a sleep. */
static void wait_copied(struct uf_journal *j, struct uf_ring *r)
{
	uint64_t end = uf_now_mono_ns() + 10000000000ull;
	struct uf_journal_stats st;

	for (;;) {
		uf_journal_get_stats(j, &st);
		if (st.position >= uf_ring_tail(r))
			return;
		if (uf_now_mono_ns() > end)
			fail_msg("writer stuck at %llu, tail %llu", (unsigned long long)st.position,
			         (unsigned long long)uf_ring_tail(r));
		usleep(50);
	}
}

static void publish_range(struct uf_ring *r, struct uf_journal *j, uint64_t from, uint64_t to,
                          uint64_t chunk)
{
	struct uf_record recs[256];

	assert_true(chunk <= 256);
	while (from < to) {
		uint64_t n = to - from < chunk ? to - from : chunk;
		for (uint64_t i = 0; i < n; i++)
			day_rec(&recs[i], from + i);
		assert_int_equal(uf_ring_publish(r, recs, n), 0);
		from += n;
		if (j)
			wait_copied(j, r);
	}
}

/* The journal's own file of the ring (one per generation and day). */
static void journal_path(struct uf_ring *r, char *buf, size_t len)
{
	assert_int_equal(uf_journal_file_name(buf, len, jdir, r->name,
	                                      uf_journal_day(uf_now_realtime_ns()),
	                                      uf_ring_generation(r)),
	                 0);
}

static void compare_books(uf_book_builder_t *want, uf_book_builder_t *got)
{
	for (uint32_t i = 0; i < NINST; i++) {
		struct uf_book_snapshot a, b;
		int ra = uf_book_builder_snapshot(want, i, &a);
		int rb = uf_book_builder_snapshot(got, i, &b);

		assert_int_equal(ra, rb);
		if (ra < 0)
			continue;
		assert_int_equal(a.nbid, b.nbid);
		assert_int_equal(a.nask, b.nask);
		assert_memory_equal(a.bid, b.bid, a.nbid * sizeof(a.bid[0]));
		assert_memory_equal(a.ask, b.ask, a.nask * sizeof(a.ask[0]));
		assert_int_equal(a.volume, b.volume);
		assert_int_equal(a.trades, b.trades);
		assert_int_equal(a.last_price, b.last_price);
		assert_int_equal(a.flags, b.flags);
	}
}

/* A consumer attached from the journal at 90 % of a day whose ring lapped 20 times ends with
 * the books of the whole day and every sequence once, in order, while the producer goes on. */
static void test_journal_consumer_from_start_after_laps(void **state)
{
	const uint64_t cap = 1024, total = 20 * 1024 + 300, at = total * 9 / 10;
	char name[64], err[256] = "";
	struct uf_consumer_options co;
	struct uf_journal_stats st;
	uf_book_builder_t *want, *got;
	uf_consumer_t *c = NULL;
	struct uf_record recs[64];
	uint64_t next = 0, published = at, from_journal = 0;
	struct uf_ring *r;
	struct uf_journal *j;

	(void)state;
	test_ring_name(name, sizeof(name), "jday");
	r = make_ring(name, cap);
	j = start_writer(r, jdir, UF_JOURNAL_FSYNC_NONE);
	publish_range(r, j, 0, at, 64);
	assert_true(uf_ring_tail(r) / cap >= 10); /* the ring lapped at least 10 times */

	uf_consumer_options_init(&co);
	co.start = UF_CONSUMER_START_JOURNAL;
	if (uf_consumer_attach(name, &co, &c, err, sizeof(err)) < 0)
		fail_msg("attach: %s", err);
	assert_int_equal(uf_book_builder_create(64, &want), 0);
	assert_int_equal(uf_book_builder_create(64, &got), 0);
	for (uint64_t s = 0; s < total; s++) {
		day_rec(&recs[0], s);
		assert_true(uf_book_builder_apply(want, &recs[0], s) >= 0);
	}
	uint64_t deadline = uf_now_mono_ns() + 20000000000ull;
	while (next < total) {
		uint64_t first = 0;
		int n;

		if (published < total) { /* the day goes on while the consumer catches up */
			publish_range(r, j, published,
			              published + 8 > total ? total : published + 8, 8);
			published = published + 8 > total ? total : published + 8;
		}
		n = uf_consumer_read(c, recs, 64, &first);
		if (n == -EAGAIN) {
			assert_true(uf_now_mono_ns() < deadline);
			continue;
		}
		if (n < 0)
			fail_msg("read at %llu: %s", (unsigned long long)next,
			         uf_consumer_strerror(n));
		assert_int_equal(first, next); /* no gap, no duplicate */
		if (uf_ring_tail(r) - first > cap)
			from_journal += (uint64_t)n;
		for (int i = 0; i < n; i++) {
			if (!rec_is(&recs[i], first + (uint64_t)i))
				fail_msg("record %llu differs", (unsigned long long)first + i);
			assert_true(uf_book_builder_apply(got, &recs[i], first + (uint64_t)i) >= 0);
		}
		next += (uint64_t)n;
	}
	assert_true(from_journal >= at - 2 * cap); /* most came from the journal, then the ring */
	compare_books(want, got);
	assert_int_equal(uf_consumer_next(c, &recs[0], NULL), -EAGAIN); /* nothing twice */
	uf_journal_get_stats(j, &st);
	assert_int_equal(st.holes, 0);
	assert_int_equal(st.laps, 0);
	assert_int_equal(uf_journal_sync(j, 5000000000ll), 0);
	uf_journal_get_stats(j, &st);
	assert_int_equal(st.records, total);
	assert_int_equal(st.lag, 0);
	uf_book_builder_destroy(want);
	uf_book_builder_destroy(got);
	uf_consumer_detach(c);
	uf_journal_stop(j);
	uf_ring_close(r);
	/* a journaled ring is removed whole: its pointer to the journal goes with it (it kept the
	 * directory, and the name, taken) */
	char path[160];
	snprintf(path, sizeof(path), "/dev/shm/uf.%s/journal", name);
	assert_int_equal(access(path, F_OK), 0);
	assert_int_equal(uf_ring_unlink(name, NULL), 0);
	snprintf(path, sizeof(path), "/dev/shm/uf.%s", name);
	assert_int_equal(access(path, F_OK), -1);
}

/* uf_consumer_seek goes to any sequence the journal or the ring holds; before the journal's
 * first record it is a clear -ENODATA, past the tail -ERANGE. */
static void test_journal_seek_anywhere(void **state)
{
	const uint64_t cap = 1024, early = 3000, total = 12000;
	static const uint64_t targets[] = {3000, 3001, 5555, 9000, 11000, 11999, 7777, 3000, 12000};
	char name[64], err[256] = "";
	uf_consumer_t *c = NULL;
	struct uf_record recs[32];
	struct uf_ring *r;
	struct uf_journal *j;

	(void)state;
	test_ring_name(name, sizeof(name), "jseek");
	r = make_ring(name, cap);
	publish_range(r, NULL, 0, early, 64); /* before the journal: nobody keeps these */
	j = start_writer(r, jdir, UF_JOURNAL_FSYNC_INTERVAL);
	publish_range(r, j, early, total, 64);
	assert_int_equal(uf_journal_sync(j, 5000000000ll), 0);
	if (uf_consumer_attach(name, NULL, &c, err, sizeof(err)) < 0)
		fail_msg("attach: %s", err);
	assert_int_equal(uf_consumer_seek(c, early - 1), -ENODATA);
	assert_int_equal(uf_consumer_seek(c, 0), -ENODATA);
	assert_int_equal(uf_consumer_seek(c, total + 1), -ERANGE);
	for (size_t k = 0; k < UF_ARRAY_SIZE(targets); k++) {
		uint64_t first = UINT64_MAX;
		int n;

		assert_int_equal(uf_consumer_seek(c, targets[k]), 0);
		n = uf_consumer_read(c, recs, 32, &first);
		if (targets[k] == total) {
			assert_int_equal(n, -EAGAIN);
			continue;
		}
		assert_true(n > 0);
		assert_int_equal(first, targets[k]);
		for (int i = 0; i < n; i++)
			assert_true(rec_is(&recs[i], first + (uint64_t)i));
	}
	/* from a seek into the journal, a read runs on into the ring without a gap */
	assert_int_equal(uf_consumer_seek(c, 4000), 0);
	for (uint64_t want = 4000; want < total;) {
		uint64_t first = 0;
		int n = uf_consumer_read(c, recs, 32, &first);
		assert_true(n > 0);
		assert_int_equal(first, want);
		want += (uint64_t)n;
	}
	assert_int_equal(uf_consumer_strerror(-ENODATA)[0] != 0, 1);
	uf_consumer_detach(c);
	uf_journal_stop(j);
	uf_ring_close(r);
}

/* A file cut in the middle of a record: the reader stops at the torn record (-EBADMSG,
 * counted once); a corrupted record in the middle is skipped as a counted hole. A writer
 * started again on the ring cuts the torn tail (counted) and continues after the last whole
 * record, re-reading the rest from the ring: the journal is whole again. */
static void test_journal_torn_tail_and_restart(void **state)
{
	const uint64_t cap = 1 << 14, total = 5000;
	char name[64], path[UF_JOURNAL_PATH_MAX];
	struct uf_journal_reader *jr = NULL;
	struct uf_journal_reader_stats rs;
	struct uf_journal_stats st;
	struct uf_record recs[256];
	struct stat sb;
	uint64_t next = 0, seq;
	struct uf_ring *r;
	struct uf_journal *j;
	int fd, n;

	(void)state;
	test_ring_name(name, sizeof(name), "jtorn");
	r = make_ring(name, cap);
	j = start_writer(r, jdir, UF_JOURNAL_FSYNC_BATCH);
	publish_range(r, j, 0, total, 128);
	assert_int_equal(uf_journal_sync(j, 5000000000ll), 0);
	uf_journal_stop(j);
	journal_path(r, path, sizeof(path));
	fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &sb), 0);
	assert_int_equal(sb.st_size, sizeof(struct uf_journal_hdr) + total * 80);
	/* cut record 4999 in its middle, and flip a byte of record 1000 */
	assert_int_equal(ftruncate(fd, sb.st_size - 30), 0);
	{
		off_t off = (off_t)(sizeof(struct uf_journal_hdr) + 1000 * 80 + 17);
		uint8_t b;
		assert_int_equal(pread(fd, &b, 1, off), 1);
		b ^= 0x40;
		assert_int_equal(pwrite(fd, &b, 1, off), 1);
	}
	close(fd);

	assert_int_equal(uf_journal_reader_open(jdir, name, uf_ring_generation(r), &jr), 0);
	for (seq = 0; seq < total;) {
		n = uf_journal_reader_read(jr, seq, recs, 256, &next);
		if (n == -EOVERFLOW) {
			assert_int_equal(seq, 1000); /* the corrupt record, and only it */
			assert_int_equal(next, 1001);
			seq = next;
			continue;
		}
		if (n == -EBADMSG)
			break;
		assert_true(n > 0);
		for (int i = 0; i < n; i++)
			assert_true(rec_is(&recs[i], seq + (uint64_t)i));
		seq += (uint64_t)n;
	}
	assert_int_equal(seq, total - 1); /* stopped at the torn record */
	assert_int_equal(uf_journal_reader_read(jr, seq, recs, 1, &next), -EBADMSG);
	uf_journal_reader_get_stats(jr, &rs);
	assert_int_equal(rs.torn, 1);
	assert_int_equal(rs.corrupt, 1);
	uf_journal_reader_close(jr);

	/* fix record 1000 back (a corruption in the middle is the reader's to skip; the
	 * restart test is about the tail), then restart the writer */
	fd = open(path, O_RDWR);
	{
		off_t off = (off_t)(sizeof(struct uf_journal_hdr) + 1000 * 80 + 17);
		uint8_t b;
		assert_int_equal(pread(fd, &b, 1, off), 1);
		b ^= 0x40;
		assert_int_equal(pwrite(fd, &b, 1, off), 1);
	}
	close(fd);
	j = start_writer(r, jdir, UF_JOURNAL_FSYNC_NONE);
	uf_journal_get_stats(j, &st);
	assert_int_equal(st.torn_cut, 1); /* the partial record */
	publish_range(r, j, total, total + 1000, 100);
	assert_int_equal(uf_journal_sync(j, 5000000000ll), 0);
	uf_journal_get_stats(j, &st);
	assert_int_equal(st.holes, 0); /* record 4999 came again from the ring */
	uf_journal_stop(j);
	assert_int_equal(uf_journal_reader_open(jdir, name, uf_ring_generation(r), &jr), 0);
	for (seq = 0; seq < total + 1000;) {
		n = uf_journal_reader_read(jr, seq, recs, 256, &next);
		if (n <= 0)
			fail_msg("read at %llu: %d", (unsigned long long)seq, n);
		for (int i = 0; i < n; i++)
			assert_true(rec_is(&recs[i], seq + (uint64_t)i));
		seq += (uint64_t)n;
	}
	assert_int_equal(uf_journal_reader_read(jr, seq, recs, 1, &next), 0); /* not yet */
	uf_journal_reader_close(jr);
	uf_ring_close(r);
}

/* The writer lapped by the ring writes an explicit hole, and a consumer from the journal
 * gets -EOVERFLOW with exactly those sequences, then continues. */
static void test_journal_lapped_writer_records_a_hole(void **state)
{
	const uint64_t cap = 256;
	char name[64], err[256] = "";
	struct uf_consumer_options co;
	struct uf_consumer_lap lap;
	struct uf_journal_stats st;
	struct uf_record recs[64];
	uf_consumer_t *c = NULL;
	uint64_t next = 0, lost = 0;
	struct uf_ring *r;
	struct uf_journal *j;

	(void)state;
	test_ring_name(name, sizeof(name), "jlap");
	r = make_ring(name, cap);
	j = start_writer(r, jdir, UF_JOURNAL_FSYNC_NONE);
	publish_range(r, j, 0, 1000, 64);
	/* a burst of 40 rings without letting the writer run in between (it may still copy
	 * some: what it misses must be a hole, what it copies must be right) */
	publish_range(r, NULL, 1000, 1000 + 40 * cap, 64);
	publish_range(r, j, 1000 + 40 * cap, 1000 + 41 * cap, 64);
	assert_int_equal(uf_journal_sync(j, 5000000000ll), 0);
	uf_journal_get_stats(j, &st);
	uf_consumer_options_init(&co);
	co.start = UF_CONSUMER_START_JOURNAL;
	if (uf_consumer_attach(name, &co, &c, err, sizeof(err)) < 0)
		fail_msg("attach: %s", err);
	for (;;) {
		uint64_t first = 0;
		int n = uf_consumer_read(c, recs, 64, &first);
		if (n == -EAGAIN)
			break;
		if (n == -EOVERFLOW) {
			uf_consumer_last_lap(c, &lap);
			assert_int_equal(lap.from_seq, next);
			lost += lap.lost;
			next = lap.resume_seq;
			continue;
		}
		assert_true(n > 0);
		assert_int_equal(first, next);
		for (int i = 0; i < n; i++)
			assert_true(rec_is(&recs[i], first + (uint64_t)i));
		next += (uint64_t)n;
	}
	assert_int_equal(next, 1000 + 41 * cap);
	if (st.laps > 0) {
		assert_true(st.holes >= 1);
		assert_int_equal(lost, st.hole_records); /* the consumer lost exactly the holes */
	} else {
		assert_int_equal(lost, 0); /* the writer kept up after all */
	}
	uf_consumer_detach(c);
	uf_journal_stop(j);
	uf_ring_close(r);
}

/* A full file system (a small tmpfs), a directory that disappears, a read-only one: the writer
 * counts and logs, the producer publishes on without waiting, and once space is back the
 * journal goes on after an explicit hole. Runs as root in its own mount namespace. */
static void test_journal_full_tmpfs_and_vanished_dir(void **state)
{
	char mnt[160], name[64];
	pid_t pid;
	int st;

	(void)state;
	if (geteuid() != 0)
		fail_msg("this test mounts a tmpfs: it must run as root");
	snprintf(mnt, sizeof(mnt), "%s/tmpfs", jdir);
	assert_int_equal(mkdir(mnt, 0755), 0);
	test_ring_name(name, sizeof(name), "jfull");
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct uf_journal_options jo;
		struct uf_journal_stats js;
		struct uf_journal *j = NULL;
		struct uf_ring *r;
		char err[256] = "", sub[200], gone[200];
		uint64_t nxt = 20032; /* the next record's sequence after the first 20032 */
		uint64_t t0, end;

		CHILD_CHECK(unshare(CLONE_NEWNS) == 0);
		CHILD_CHECK(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0);
		/* read-only: refused at start with the reason */
		CHILD_CHECK(mount("tmpfs", mnt, "tmpfs", MS_RDONLY, "size=256k,mode=0755") == 0);
		r = make_ring(name, 1 << 12);
		memset(&jo, 0, sizeof(jo));
		jo.dir = mnt;
		CHILD_CHECK(uf_journal_start(r, &jo, &j, err, sizeof(err)) == -EROFS);
		CHILD_CHECK(strstr(err, mnt) != NULL);
		CHILD_CHECK(umount(mnt) == 0);
		/* 256 KiB: about 3200 entries fit; the journal in a directory of it */
		CHILD_CHECK(mount("tmpfs", mnt, "tmpfs", 0, "size=256k,mode=0755") == 0);
		snprintf(sub, sizeof(sub), "%s/j", mnt);
		snprintf(gone, sizeof(gone), "%s/gone", mnt);
		CHILD_CHECK(mkdir(sub, 0755) == 0);
		jo.dir = sub;
		jo.idle_us = 50;
		CHILD_CHECK(uf_journal_start(r, &jo, &j, err, sizeof(err)) == 0);
		{
			/* paced by the writer's copy position (it moves on also while failing), so
			 * the writer meets the full disk instead of being lapped on a busy host */
			struct uf_record recs[64];
			for (uint64_t s = 0; s < 16000; s += 64) { /* 250 x 64: 1.28 MB */
				for (int i = 0; i < 64; i++)
					day_rec(&recs[i], s + (uint64_t)i);
				CHILD_CHECK(uf_ring_publish(r, recs, 64) == 0);
				end = uf_now_mono_ns() + 10000000000ull;
				do
					uf_journal_get_stats(j, &js);
				while (js.position < s + 64 && uf_now_mono_ns() < end &&
				       !usleep(50));
			}
			/* and the producer never waits for it: a burst while it fails */
			t0 = uf_now_mono_ns();
			for (uint64_t s = 16000; s < 20032; s += 64) {
				for (int i = 0; i < 64; i++)
					day_rec(&recs[i], s + (uint64_t)i);
				CHILD_CHECK(uf_ring_publish(r, recs, 64) == 0);
			}
			fprintf(stderr,
			        "published 4032 records in %llu us with the journal failing\n",
			        (unsigned long long)((uf_now_mono_ns() - t0) / 1000));
		}
		end = uf_now_mono_ns() + 10000000000ull;
		do {
			uf_journal_get_stats(j, &js);
			usleep(1000);
		} while ((js.write_errors == 0 || !js.failing || js.position < 20032) &&
		         uf_now_mono_ns() < end);
		CHILD_CHECK(js.write_errors > 0);
		CHILD_CHECK(js.last_error == ENOSPC);
		CHILD_CHECK(js.failing == 1);
		CHILD_CHECK(js.dropped > 0);
		/* it retries once a second and fails again (each retry writes a hole entry that
		 * is cut with its failed write: counted only once it is on disk) */
		end = uf_now_mono_ns() + 10000000000ull;
		do { /* records keep coming: each retry has something to write */
			struct uf_record rec;
			day_rec(&rec, nxt++);
			CHILD_CHECK(uf_ring_publish(r, &rec, 1) == 0);
			uf_journal_get_stats(j, &js);
			usleep(20000);
		} while (js.write_errors < 3 && uf_now_mono_ns() < end);
		CHILD_CHECK(js.write_errors >= 3);
		/* space again: the writer resumes with a hole entry for what it dropped */
		CHILD_CHECK(mount(NULL, mnt, NULL, MS_REMOUNT, "size=64m") == 0);
		end = uf_now_mono_ns() + 10000000000ull;
		do {
			uf_journal_get_stats(j, &js);
			usleep(1000);
		} while (js.failing && uf_now_mono_ns() < end);
		CHILD_CHECK(js.failing == 0);
		{
			struct uf_record recs[64];
			for (int i = 0; i < 64; i++)
				day_rec(&recs[i], nxt + (uint64_t)i);
			CHILD_CHECK(uf_ring_publish(r, recs, 64) == 0);
			nxt += 64;
		}
		CHILD_CHECK(uf_journal_sync(j, 5000000000ll) == 0);
		uf_journal_get_stats(j, &js);
		CHILD_CHECK(js.holes >= 1);
		{
			/* the journal is continuous: records, one hole, records */
			struct uf_journal_reader *jr = NULL;
			struct uf_record recs[256];
			uint64_t seq = 0, next = 0, holes = 0;
			CHILD_CHECK(uf_journal_reader_open(sub, name, uf_ring_generation(r), &jr) ==
			            0);
			while (seq < nxt) {
				int n = uf_journal_reader_read(jr, seq, recs, 256, &next);
				if (n == -EOVERFLOW) {
					CHILD_CHECK(next > seq);
					holes += next - seq;
					seq = next;
					continue;
				}
				CHILD_CHECK(n > 0);
				for (int i = 0; i < n; i++)
					CHILD_CHECK(rec_is(&recs[i], seq + (uint64_t)i));
				seq += (uint64_t)n;
			}
			CHILD_CHECK(holes == js.hole_records);
			uf_journal_reader_close(jr);
		}
		/* the directory disappears (renamed away, atomically): counted once the writer
		 * looks (once a second), the producer goes on; back again, the writer continues
		 * the file after a hole for what it dropped */
		{
			uint64_t errs = js.write_errors, holes = js.hole_records;
			struct uf_record rec;
			CHILD_CHECK(rename(sub, gone) == 0);
			end = uf_now_mono_ns() + 10000000000ull;
			do {
				uf_journal_get_stats(j, &js);
				usleep(1000);
			} while ((js.write_errors == errs || !js.failing) &&
			         uf_now_mono_ns() < end);
			CHILD_CHECK(js.write_errors > errs);
			CHILD_CHECK(js.failing == 1);
			CHILD_CHECK(js.last_error == ENOENT);
			for (int k = 0; k < 100; k++) {
				day_rec(&rec, nxt++);
				CHILD_CHECK(uf_ring_publish(r, &rec, 1) == 0);
			}
			CHILD_CHECK(rename(gone, sub) == 0);
			end = uf_now_mono_ns() + 10000000000ull;
			do {
				uf_journal_get_stats(j, &js);
				usleep(1000);
			} while (js.failing && uf_now_mono_ns() < end);
			CHILD_CHECK(js.failing == 0);
			day_rec(&rec, nxt++);
			CHILD_CHECK(uf_ring_publish(r, &rec, 1) == 0);
			CHILD_CHECK(uf_journal_sync(j, 5000000000ll) == 0);
			uf_journal_get_stats(j, &js);
			CHILD_CHECK(js.hole_records > holes); /* what it dropped, marked */
		}
		uf_journal_stop(j);
		uf_ring_close(r);
		_exit(0);
	}
	st = test_wait_child(pid, 40000);
	rmdir(mnt);
	assert_true(test_child_ok(st));
}

/* A generation's journal in two files (a new day starts a new one at the next sequence): the
 * reader runs from one into the next without a gap; a consumer from the start reads both. */
static void test_journal_reads_on_across_files(void **state)
{
	char name[64], path[UF_JOURNAL_PATH_MAX], moved[UF_JOURNAL_PATH_MAX + 16], err[256] = "";
	struct uf_journal_reader *jr = NULL;
	struct uf_journal_reader_stats rs;
	struct uf_consumer_options co;
	struct uf_record recs[100];
	uf_consumer_t *c = NULL;
	uint64_t seq, next = 0;
	struct uf_ring *r;
	struct uf_journal *j;

	(void)state;
	test_ring_name(name, sizeof(name), "jfiles");
	r = make_ring(name, 256);
	j = start_writer(r, jdir, UF_JOURNAL_FSYNC_NONE);
	publish_range(r, j, 0, 1000, 50);
	assert_int_equal(uf_journal_sync(j, 5000000000ll), 0);
	uf_journal_stop(j);
	/* what a day change leaves: yesterday's file ends at 1000, today's starts there */
	journal_path(r, path, sizeof(path));
	snprintf(moved, sizeof(moved), "%s.day1.ufj", path);
	assert_int_equal(rename(path, moved), 0);
	j = start_writer(r, jdir, UF_JOURNAL_FSYNC_NONE);
	publish_range(r, j, 1000, 2000, 50);
	assert_int_equal(uf_journal_sync(j, 5000000000ll), 0);
	uf_journal_stop(j);

	assert_int_equal(uf_journal_reader_open(jdir, name, uf_ring_generation(r), &jr), 0);
	for (seq = 0; seq < 2000;) {
		int n = uf_journal_reader_read(jr, seq, recs, 100, &next);
		if (n <= 0)
			fail_msg("read at %llu: %d", (unsigned long long)seq, n);
		for (int i = 0; i < n; i++)
			assert_true(rec_is(&recs[i], seq + (uint64_t)i));
		seq += (uint64_t)n;
	}
	uf_journal_reader_get_stats(jr, &rs);
	assert_int_equal(rs.files, 2);
	assert_int_equal(rs.holes + rs.corrupt + rs.torn, 0);
	uf_journal_reader_close(jr);

	uf_consumer_options_init(&co);
	co.start = UF_CONSUMER_START_JOURNAL;
	co.spin_ns = 0;
	if (uf_consumer_attach(name, &co, &c, err, sizeof(err)) < 0)
		fail_msg("attach: %s", err);
	for (seq = 0; seq < 2000;) {
		uint64_t first = 0;
		int n = uf_consumer_read(c, recs, 100, &first);
		assert_true(n > 0);
		assert_int_equal(first, seq);
		seq += (uint64_t)n;
	}
	uf_consumer_detach(c);
	uf_ring_close(r);
}

/* Writes an empty journal file of `ring`, day `day`, generation `gen` into jdir. */
static void old_file(const char *ring, uint32_t day, uint64_t gen, char *path, size_t len)
{
	struct uf_journal_hdr h;
	int fd;

	assert_int_equal(uf_journal_file_name(path, len, jdir, ring, day, gen), 0);
	uf_journal_hdr_init(&h, ring, gen, 0, day, uf_now_realtime_ns() - 86400000000000ull * 30);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0640);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, &h, sizeof(h)), sizeof(h));
	close(fd);
}

/* keep_days: files of this ring older than today - keep_days go at start (counted, logged);
 * younger ones and other rings' files stay. */
static void test_journal_keep_days_removes_only_old_files_of_the_ring(void **state)
{
	const uint64_t day_ns = 86400000000000ull, now = uf_now_realtime_ns();
	char name[64], old1[UF_JOURNAL_PATH_MAX], old2[UF_JOURNAL_PATH_MAX];
	char young[UF_JOURNAL_PATH_MAX], other[UF_JOURNAL_PATH_MAX];
	struct uf_journal_options jo;
	struct uf_journal_stats st;
	struct uf_journal *j = NULL;
	struct uf_ring *r;
	char err[256] = "";

	(void)state;
	test_ring_name(name, sizeof(name), "jkeep");
	old_file(name, uf_journal_day(now - 20 * day_ns), 11, old1, sizeof(old1));
	old_file(name, uf_journal_day(now - 4 * day_ns), 12, old2, sizeof(old2));
	old_file(name, uf_journal_day(now - 2 * day_ns), 13, young, sizeof(young));
	old_file("someotherring", uf_journal_day(now - 20 * day_ns), 14, other, sizeof(other));
	r = make_ring(name, 1024);
	memset(&jo, 0, sizeof(jo));
	jo.dir = jdir;
	jo.keep_days = 3;
	assert_int_equal(uf_journal_start(r, &jo, &j, err, sizeof(err)), 0);
	uf_journal_get_stats(j, &st);
	assert_int_equal(st.deleted_files, 2);
	assert_int_equal(access(old1, F_OK), -1);
	assert_int_equal(access(old2, F_OK), -1);
	assert_int_equal(access(young, F_OK), 0);
	assert_int_equal(access(other, F_OK), 0);
	uf_journal_stop(j);
	uf_ring_close(r);
}

/* A producer restarted mid-day (issue 25): uf_journal_resume_seq gives the sequence after the
 * day's last whole record (a torn one cut), the new ring generation starts there, its journal
 * file links to the old one, and consumers of the new generation read the whole day as one
 * sequence: from the journal (START_JOURNAL, seek) across both generations into the ring,
 * while START_OLDEST never reads the new ring's empty slots below its first sequence. */
static void test_journal_restart_continues_the_day(void **state)
{
	const uint64_t cap = 1024, first = 3000, more = 600;
	char name[64], path[UF_JOURNAL_PATH_MAX], err[256];
	struct uf_journal_hdr h;
	struct uf_journal_stats st;
	struct uf_consumer_options o;
	struct uf_ring_options ro;
	struct uf_record recs[256];
	uint64_t gen_a, resume = 1, seq, fs;
	struct uf_ring *r;
	struct uf_journal *j;
	uf_consumer_t *c;
	struct stat sb;
	int fd, n;

	(void)state;
	test_ring_name(name, sizeof(name), "jrst");
	r = make_ring(name, cap);
	gen_a = uf_ring_generation(r);
	j = start_writer(r, jdir, UF_JOURNAL_FSYNC_NONE);
	publish_range(r, j, 0, first, 100); /* laps the ring: the morning is only on disk */
	assert_int_equal(uf_journal_sync(j, 5000000000ll), 0);
	uf_journal_stop(j);
	journal_path(r, path, sizeof(path));
	uf_ring_close(r);
	/* the producer dies in the middle of writing record first - 1 */
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal(truncate(path, sb.st_size - 30), 0);

	assert_int_equal(uf_journal_resume_seq(jdir, name, uf_now_realtime_ns(), &resume), 0);
	assert_int_equal(resume, first - 1); /* after the last whole record */
	{ /* a journal of another day does not carry over: a new day starts at 0 */
		uint64_t other = 1;
		assert_int_equal(uf_journal_resume_seq(
		                     jdir, name, uf_now_realtime_ns() + 86400000000000ull, &other),
		                 0);
		assert_int_equal(other, 0);
	}

	uf_ring_options_init(&ro);
	ro.capacity = cap;
	ro.max_instruments = 64;
	ro.numa_node = UF_RING_NUMA_NONE;
	ro.hugepages = 0;
	ro.first_seq = resume;
	if (uf_ring_create(name, &ro, &r, err, sizeof(err)) < 0)
		fail_msg("uf_ring_create: %s", err);
	assert_true(uf_ring_generation(r) > gen_a);
	assert_int_equal(uf_ring_tail(r), resume);
	j = start_writer(r, jdir, UF_JOURNAL_FSYNC_NONE);
	uf_journal_get_stats(j, &st);
	assert_int_equal(st.torn_cut, 1);
	journal_path(r, path, sizeof(path));
	fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &h, sizeof(h), 0), (ssize_t)sizeof(h));
	close(fd);
	assert_null(uf_journal_hdr_check(&h));
	assert_int_equal(h.prev_generation, gen_a); /* the link the readers follow */
	assert_int_equal(h.first_seq, resume);
	publish_range(r, j, resume, resume + 100, 100);

	/* START_OLDEST: the new ring's first record, not its never-written slots before it */
	uf_consumer_options_init(&o);
	o.start = UF_CONSUMER_START_OLDEST;
	if (uf_consumer_attach(name, &o, &c, err, sizeof(err)) < 0)
		fail_msg("attach: %s", err);
	fs = 0;
	n = uf_consumer_read(c, recs, 1, &fs);
	assert_int_equal(n, 1);
	assert_int_equal(fs, resume);
	assert_true(rec_is(&recs[0], resume));
	/* seek before the ring: the first generation's journal */
	assert_int_equal(uf_consumer_seek(c, 100), 0);
	n = uf_consumer_read(c, recs, 1, &fs);
	assert_int_equal(n, 1);
	assert_int_equal(fs, 100);
	assert_true(rec_is(&recs[0], 100));
	uf_consumer_detach(c);

	/* START_JOURNAL: 0 .. the live end, once each, across the two generations */
	publish_range(r, j, resume + 100, resume + more, 100);
	o.start = UF_CONSUMER_START_JOURNAL;
	if (uf_consumer_attach(name, &o, &c, err, sizeof(err)) < 0)
		fail_msg("attach: %s", err);
	uint64_t deadline = uf_now_mono_ns() + 10000000000ull;
	for (seq = 0; seq < resume + more && uf_now_mono_ns() < deadline;) {
		n = uf_consumer_read(c, recs, 256, &fs);
		if (n == -EAGAIN)
			continue; /* the journal holds all of it (synced above): not expected */
		if (n <= 0)
			fail_msg("read at %llu: %d", (unsigned long long)seq, n);
		assert_int_equal(fs, seq);
		for (int i = 0; i < n; i++)
			assert_true(rec_is(&recs[i], seq + (uint64_t)i));
		seq += (uint64_t)n;
	}
	assert_int_equal(seq, resume + more);
	assert_int_equal(uf_consumer_read(c, recs, 1, &fs), -EAGAIN);
	uf_consumer_detach(c);
	uf_journal_stop(j);
	uf_ring_close(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_journal_consumer_from_start_after_laps, setup_dir,
	                                    teardown_dir),
	    cmocka_unit_test_setup_teardown(test_journal_seek_anywhere, setup_dir, teardown_dir),
	    cmocka_unit_test_setup_teardown(test_journal_restart_continues_the_day, setup_dir,
	                                    teardown_dir),
	    cmocka_unit_test_setup_teardown(test_journal_torn_tail_and_restart, setup_dir,
	                                    teardown_dir),
	    cmocka_unit_test_setup_teardown(test_journal_lapped_writer_records_a_hole, setup_dir,
	                                    teardown_dir),
	    cmocka_unit_test_setup_teardown(test_journal_full_tmpfs_and_vanished_dir, setup_dir,
	                                    teardown_dir),
	    cmocka_unit_test_setup_teardown(
	        test_journal_keep_days_removes_only_old_files_of_the_ring, setup_dir, teardown_dir),
	    cmocka_unit_test_setup_teardown(test_journal_reads_on_across_files, setup_dir,
	                                    teardown_dir),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
