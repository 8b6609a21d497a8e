/* Ring lifecycle and safety: consumers killed, producer restarted or dead, two producers,
 * layout versions, permissions and read-only mappings.
 * Multi-process through fork; every wait is bounded. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "test/common/uf_test_proc.h"
#include "ring/uf_ring.h"
#include "ring/ufconsumer.h"
#define RING_TEST_RING_HELPERS
#include "ring_test_util.h"

static int child_read_until_killed(const char *name, int ready_fd, int sleep_in_wait)
{
	uf_consumer_t *c = attach(name, 0, UF_CONSUMER_START_LATEST);
	uint64_t end = uf_now_mono_ns() + 20000000000ull, seq;
	struct uf_record rec;

	CHILD_CHECK(c != NULL);
	test_pipe_put(ready_fd);
	while (uf_now_mono_ns() < end) {
		int rc = uf_consumer_next(c, &rec, &seq);
		if (rc == -EAGAIN && sleep_in_wait)
			uf_consumer_wait(c, -1);
	}
	return 1; /* should have been killed */
}

static void test_ring_killed_consumer_is_reaped_and_producer_unaffected(void **state)
{
	char name[64];
	int fds[2], st, freed = 0;
	pid_t busy, sleeper;
	struct uf_ring *r;
	uint64_t end, wakes;

	test_ring_name(name, sizeof(name), "kill");
	r = make_ring(name, 1024, 0600);
	assert_int_equal(pipe(fds), 0);
	busy = uf_test_fork();
	assert_true(busy >= 0);
	if (busy == 0)
		_exit(child_read_until_killed(name, fds[1], 0));
	sleeper = uf_test_fork();
	assert_true(sleeper >= 0);
	if (sleeper == 0)
		_exit(child_read_until_killed(name, fds[1], 1));
	assert_true(test_pipe_get(fds[0], 5000));
	assert_true(test_pipe_get(fds[0], 5000));
	assert_int_equal(uf_ring_consumers(r, NULL, 0), 2);

	/* mid-stream: kill the busy reader while records flow */
	publish_range(r, 0, 5000, 4);
	kill(busy, SIGKILL);
	publish_range(r, 5000, 100000, 4); /* never blocks on the dead reader */
	end = uf_now_mono_ns() + 5000000000ull;
	while (freed == 0 && uf_now_mono_ns() < end) {
		freed = uf_ring_reap(r); /* the corpse is a zombie until waited for: still dead */
		usleep(1000);
	}
	assert_int_equal(freed, 1);
	assert_int_equal(uf_ring_consumers(r, NULL, 0), 1);
	st = test_wait_child(busy, 5000);
	assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);

	/* now kill the other one while it sleeps in FUTEX_WAIT: its sleeper count must go.
	 * The sleeper wakes every 50 ms slice (SLEEP_SLICE_NS) to look for a restart and is
	 * briefly not sleeping then: its flag and the count are judged from one reading, not
	 * from a second one that can fall into that gap (seen under ASan in CI: 0 != 1). */
	int sleeping = 0;
	uint32_t sleepers = 0;
	end = uf_now_mono_ns() + 5000000000ull;
	for (;;) {
		sleeping = sleeping_consumers(r);
		sleepers = uf_load_relaxed_u32(&r->ct->sleepers);
		if ((sleeping == 1 && sleepers == 1) || uf_now_mono_ns() >= end)
			break;
		usleep(1000);
	}
	assert_int_equal(sleeping, 1);
	assert_int_equal(sleepers, 1);
	kill(sleeper, SIGKILL);
	st = test_wait_child(sleeper, 5000);
	assert_true(WIFSIGNALED(st));
	assert_int_equal(uf_ring_reap(r), 1);
	assert_int_equal(uf_ring_consumers(r, NULL, 0), 0);
	assert_int_equal(uf_load_relaxed_u32(&r->ct->sleepers), 0);
	wakes = r->hdr->wakes;
	publish_range(r, 100000, 101000, 4);
	assert_int_equal(r->hdr->wakes, wakes); /* nobody sleeps: no FUTEX_WAKE */
	assert_int_equal(uf_ring_reap(r), 0);
	close(fds[0]);
	close(fds[1]);
	uf_ring_close(r);
	uf_ring_unlink(name, NULL);
}

static void test_ring_restart_changes_generation_and_reattach_works(void **state)
{
	char name[64];
	int go[2], ready[2];
	struct uf_ring *r, *r2;
	pid_t pid;

	test_ring_name(name, sizeof(name), "restart");
	r = make_ring(name, 256, 0600);
	assert_int_equal(pipe(go), 0);
	assert_int_equal(pipe(ready), 0);
	pid = uf_test_fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		uf_consumer_t *c = attach(name, 0, UF_CONSUMER_START_LATEST);
		struct uf_consumer_info i1, i2;
		struct uf_record rec;
		uint64_t seq, want = 0, end = uf_now_mono_ns() + 20000000000ull;
		char err[256];
		int rc;

		CHILD_CHECK(c != NULL);
		uf_consumer_get_info(c, &i1);
		test_pipe_put(ready[1]);
		/* read the first generation until the restart shows */
		for (;;) {
			CHILD_CHECK(uf_now_mono_ns() < end);
			rc = uf_consumer_next(c, &rec, &seq);
			if (rc == 0) {
				CHILD_CHECK(seq == want && test_rec_ok(&rec, seq));
				want++;
			} else if (rc == -EAGAIN) {
				CHILD_CHECK(uf_consumer_wait(c, 100000000) != -EINTR);
			} else {
				CHILD_CHECK(rc == -ESTALE);
				break;
			}
		}
		CHILD_CHECK(want == 100);
		CHILD_CHECK(uf_consumer_reattach(c, err, sizeof(err)) == 0);
		uf_consumer_get_info(c, &i2);
		CHILD_CHECK(i2.generation > i1.generation);
		CHILD_CHECK(i2.position == 0);
		test_pipe_put(ready[1]);
		want = 0;
		for (;;) {
			CHILD_CHECK(uf_now_mono_ns() < end);
			rc = uf_consumer_next(c, &rec, &seq);
			if (rc == 0) {
				CHILD_CHECK(seq == want && test_rec_ok(&rec, seq));
				want++;
			} else if (rc == -EAGAIN) {
				uf_consumer_wait(c, 100000000);
			} else {
				CHILD_CHECK(rc == -EPIPE);
				break;
			}
		}
		CHILD_CHECK(want == 50);
		uf_consumer_detach(c);
		_exit(0);
	}
	assert_true(test_pipe_get(ready[0], 5000));
	publish_range(r, 0, 100, 4);
	usleep(20000);
	/* restart without a clean close (as after a crash): a new generation replaces it */
	r2 = make_ring(name, 256, 0600);
	assert_true(uf_ring_generation(r2) > uf_ring_generation(r));
	assert_true(test_pipe_get(ready[0], 10000));
	publish_range(r2, 0, 50, 4);
	uf_ring_close(r2);
	assert_true(test_child_ok(test_wait_child(pid, 20000)));
	uf_ring_close(r);
	for (int i = 0; i < 2; i++) {
		close(go[i]);
		close(ready[i]);
	}
	uf_ring_unlink(name, NULL);
}

static void patch_u32(const char *name, size_t off, uint32_t v)
{
	char path[256];
	int fd;

	snprintf(path, sizeof(path), "/dev/shm/uf.%s/data", name);
	fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, &v, sizeof(v), (off_t)off), (ssize_t)sizeof(v));
	close(fd);
}

static void test_ring_refuses_other_layout_version(void **state)
{
	char name[64], err[256] = "";
	struct uf_ring *r;
	uf_consumer_t *c = NULL;

	test_ring_name(name, sizeof(name), "version");
	r = make_ring(name, 64, 0600);
	/* a newer producer's ring, and an older one's (layout 1: 8 status slots per entry, a
	 * different entry size): refused by name, never misread */
	const uint32_t others[] = {UF_RING_LAYOUT_VERSION + 1, UF_RING_LAYOUT_VERSION - 1};
	for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++) {
		uint32_t v = others[i];
		char want[64], reads[64];
		patch_u32(name, offsetof(struct uf_ring_hdr, layout_version), v);
		assert_int_equal(uf_consumer_attach(name, NULL, &c, err, sizeof(err)), -EPROTO);
		assert_null(c);
		fprintf(stderr, "refused as expected: %s\n", err);
		snprintf(want, sizeof(want), "layout version %u,", v);
		snprintf(reads, sizeof(reads), "reads version %u", UF_RING_LAYOUT_VERSION);
		assert_non_null(strstr(err, want));
		assert_non_null(strstr(err, reads));
	}
	patch_u32(name, offsetof(struct uf_ring_hdr, layout_version), UF_RING_LAYOUT_VERSION);
	patch_u32(name, offsetof(struct uf_ring_hdr, record_size), 128);
	assert_int_equal(uf_consumer_attach(name, NULL, &c, err, sizeof(err)), -EPROTO);
	assert_non_null(strstr(err, "128 bytes"));
	patch_u32(name, offsetof(struct uf_ring_hdr, record_size), 64);
	patch_u32(name, 0, 0xdeadbeef);
	assert_int_equal(uf_consumer_attach(name, NULL, &c, err, sizeof(err)), -EPROTO);
	assert_non_null(strstr(err, "not a uringfeed ring"));
	uf_ring_close(r);
	uf_ring_unlink(name, NULL);
	assert_int_equal(uf_consumer_attach(name, NULL, &c, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "no such ring"));
}

/* Mode of the ring's directory (""), data file ("/data") or socket ("/sock"). */
static unsigned file_mode(const char *name, const char *leaf)
{
	char path[256];
	struct stat st;

	snprintf(path, sizeof(path), "/dev/shm/uf.%s%s", name, leaf);
	assert_int_equal(lstat(path, &st), 0);
	return st.st_mode & 0777;
}

/* Permissions the consumer's mapping of `path` has in /proc/self/maps ("r--s"), or "". */
static void mapping_perms(const char *path, char out[5])
{
	char line[512];
	FILE *f = fopen("/proc/self/maps", "r");

	out[0] = '\0';
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		size_t n = strlen(line);
		if (n && line[n - 1] == '\n')
			line[--n] = '\0';
		if (n >= strlen(path) && strcmp(line + n - strlen(path), path) == 0) {
			sscanf(line, "%*s %4s", out);
			break;
		}
	}
	fclose(f);
}

#define SEGV_EXIT 77

static void *mapping_start(const char *path)
{
	char line[512];
	void *p = NULL;
	FILE *f = fopen("/proc/self/maps", "r");

	while (f && fgets(line, sizeof(line), f)) {
		size_t n = strlen(line);
		if (n && line[n - 1] == '\n')
			line[--n] = '\0';
		if (n >= strlen(path) && strcmp(line + n - strlen(path), path) == 0) {
			sscanf(line, "%p", &p);
			break;
		}
	}
	if (f)
		fclose(f);
	return p;
}

static void segv_exit(int sig)
{
	_exit(SEGV_EXIT);
}

static void test_ring_access_modes_and_readonly_mapping(void **state)
{
	char name[64], name2[64], data_path[256];
	struct uf_ring *r, *r2;
	pid_t pid;
	int st;

	test_ring_name(name, sizeof(name), "access");
	r = make_ring(name, 64, 0600);
	assert_int_equal(file_mode(name, ""), 0700);
	assert_int_equal(file_mode(name, "/data"), 0600);
	assert_int_equal(file_mode(name, "/sock"), 0600);
	test_ring_name(name2, sizeof(name2), "group");
	{
		struct uf_ring_options o;
		char err[256] = "", path[256];
		struct stat st;
		uf_ring_options_init(&o);
		o.capacity = 64;
		o.max_instruments = 8;
		o.mode = 0640;
		o.gid = 4242; /* the consumers' group (root may give files to any group) */
		assert_int_equal(uf_ring_create(name2, &o, &r2, err, sizeof(err)), 0);
		static const char *const leaves[] = {"", "/data", "/sock"};
		for (int k = 0; k < 3; k++) {
			snprintf(path, sizeof(path), "/dev/shm/uf.%s%s", name2, leaves[k]);
			assert_int_equal(lstat(path, &st), 0);
			assert_int_equal(st.st_gid, 4242);
		}
	}
	assert_int_equal(file_mode(name2, ""), 0750);      /* group enters the directory, */
	assert_int_equal(file_mode(name2, "/data"), 0640); /* reads the data ... */
	assert_int_equal(file_mode(name2, "/sock"), 0660); /* ... and asks for the table */
	uf_ring_close(r2);
	uf_ring_unlink(name2, NULL);

	snprintf(data_path, sizeof(data_path), "/dev/shm/uf.%s/data", name);
	pid = uf_test_fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		uf_consumer_t *c = attach(name, 0, UF_CONSUMER_START_LATEST);
		char perms[5];
		volatile uint64_t *p;
		CHILD_CHECK(c != NULL);
		mapping_perms(data_path, perms);
		CHILD_CHECK(strcmp(perms, "r--s") == 0);
		mapping_perms("/memfd:uf.ring.consumers (deleted)", perms);
		CHILD_CHECK(strcmp(perms, "rw-s") == 0); /* the sealed table, no file */
		p = mapping_start(data_path);
		CHILD_CHECK(p != NULL);
		CHILD_CHECK(p[0] == UF_RING_MAGIC);
		/* our own handler, so a sanitizer's SEGV report does not hide the signal */
		signal(SIGSEGV, segv_exit);
		p[0] = 0; /* must fault: the producer's area is read-only here */
		_exit(3);
	}
	st = test_wait_child(pid, 10000);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), SEGV_EXIT);   /* the write faulted */
	assert_int_equal(r->hdr->magic, UF_RING_MAGIC); /* and nothing changed */
	assert_int_equal(uf_ring_reap(r), 1);           /* the crashed consumer is cleaned up */
	uf_ring_close(r);
	uf_ring_unlink(name, NULL);
}

static void test_ring_consumer_sees_producer_died_without_closing(void **state)
{
	struct uf_consumer_info info;
	struct uf_record rec;
	char name[64];
	uf_consumer_t *c;
	uint64_t seq;
	pid_t pid;
	int st;

	test_ring_name(name, sizeof(name), "dead");
	pid = uf_test_fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct uf_ring_options o;
		struct uf_ring *r = NULL;
		struct uf_record recs[3];
		uf_ring_options_init(&o);
		o.capacity = 64;
		o.max_instruments = 8;
		CHILD_CHECK(uf_ring_create(name, &o, &r, NULL, 0) == 0);
		for (int i = 0; i < 3; i++)
			test_rec_make(&recs[i], (uint64_t)i);
		CHILD_CHECK(uf_ring_publish(r, recs, 3) == 0);
		_exit(0); /* a crash: no uf_ring_close */
	}
	st = test_wait_child(pid, 10000);
	assert_true(test_child_ok(st));
	c = attach(name, 0, UF_CONSUMER_START_OLDEST);
	assert_non_null(c);
	uf_consumer_get_info(c, &info);
	assert_int_equal(info.producer_alive, 0);
	assert_int_equal(info.closed, 0);
	assert_int_equal(info.producer_pid, pid);
	for (uint64_t s = 0; s < 3; s++) { /* what was published is still readable */
		assert_int_equal(uf_consumer_next(c, &rec, &seq), 0);
		assert_int_equal(seq, s);
	}
	assert_int_equal(uf_consumer_next(c, &rec, &seq), -EAGAIN);
	uf_consumer_detach(c);
	uf_ring_unlink(name, NULL);
}

static void test_ring_create_refuses_a_ring_another_producer_runs(void **state)
{
	char name[64], err[256] = "";
	struct uf_ring *r = NULL;
	int go[2], ready[2];
	pid_t pid;

	test_ring_name(name, sizeof(name), "busy");
	assert_int_equal(pipe(go), 0);
	assert_int_equal(pipe(ready), 0);
	pid = uf_test_fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct uf_ring *cr = NULL;
		struct uf_ring_options o;
		uf_ring_options_init(&o);
		o.capacity = 64;
		o.max_instruments = 8;
		CHILD_CHECK(uf_ring_create(name, &o, &cr, NULL, 0) == 0);
		test_pipe_put(ready[1]);
		test_pipe_get(go[0], 10000);
		uf_ring_close(cr);
		_exit(0);
	}
	assert_true(test_pipe_get(ready[0], 5000));
	assert_int_equal(uf_ring_create(name, NULL, &r, err, sizeof(err)), -EBUSY);
	assert_non_null(strstr(err, "in use by running producer"));
	assert_null(r);
	test_pipe_put(go[1]);
	assert_true(test_child_ok(test_wait_child(pid, 5000)));
	/* closed by its producer: a new producer may take the name */
	r = make_ring(name, 64, 0600);
	uf_ring_close(r);
	uf_ring_unlink(name, NULL);
	for (int i = 0; i < 2; i++) {
		close(go[i]);
		close(ready[i]);
	}
}

/* ShmemPmdMapped of the mapping that starts at `p`, in bytes (the test's own reading of
 * /proc/self/smaps); -1 when no mapping starts there. */
static long long shmem_pmd_bytes(const void *p)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	char line[512];
	long long kb = -1;
	int mine = 0;
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long s, e, v;
		if (sscanf(line, "%llx-%llx ", &s, &e) == 2)
			mine = s == (unsigned long long)(uintptr_t)p;
		else if (mine && sscanf(line, "ShmemPmdMapped: %llu kB", &v) == 1)
			kb = (long long)v;
	}
	fclose(f);
	return kb < 0 ? -1 : kb * 1024;
}

/* The ring reports the pages the kernel gave it, read back, not the pages a setting says it
 * may get: on tmpfs the mount's huge= option decides (shmem_enabled in sysfs does not), so a
 * ring on a huge=never mount is on small pages whatever it asked, and one on a huge=always
 * mount is on huge pages even when it did not ask. A consumer sees the same in the header.
 * Runs as root: mounts tmpfs in its own mount namespace. */
static void test_ring_reports_the_pages_the_kernel_granted(void **state)
{
	(void)state;
	char mnt[] = "/tmp/uf-ring-huge-XXXXXX", name[64];
	if (geteuid() != 0)
		fail_msg("this test mounts a tmpfs: it must run as root");
	assert_non_null(mkdtemp(mnt));
	test_ring_name(name, sizeof(name), "huge");
	pid_t pid = uf_test_fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		static const struct {
			const char *opts;
			int ask, want;
		} cases[] = {
		    {"size=64M,mode=0755,huge=never", 1, 0},
		    {"size=64M,mode=0755,huge=always", 1, 1},
		    {"size=64M,mode=0755,huge=always", 0, 1},
		};
		CHILD_CHECK(unshare(CLONE_NEWNS) == 0);
		CHILD_CHECK(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0);
		/* free 2 MiB blocks for the huge=always cases: without them tmpfs quietly gives
		 * small pages, and the check below would be of the machine's memory */
		int cfd = open("/proc/sys/vm/compact_memory", O_WRONLY);
		if (cfd >= 0) {
			(void)!write(cfd, "1", 1);
			close(cfd);
		}
		for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
			struct uf_ring_options o;
			struct uf_ring *r = NULL;
			struct uf_consumer_options co;
			struct uf_consumer_info info;
			uf_consumer_t *c = NULL;
			char err[512] = "";
			CHILD_CHECK(mount("tmpfs", mnt, "tmpfs", 0, cases[i].opts) == 0);
			uf_ring_options_init(&o);
			o.capacity = 1u << 16; /* 4 MiB of records: two whole huge pages and more */
			o.max_instruments = 64;
			o.hugepages = cases[i].ask;
			o.numa_node = UF_RING_NUMA_NONE;
			o.dir = mnt;
			CHILD_CHECK(uf_ring_create(name, &o, &r, err, sizeof(err)) == 0);
			long long huge = shmem_pmd_bytes(r->hdr);
			fprintf(stderr, "%s, asked %d: %lld bytes on huge pages, reported %d\n",
			        cases[i].opts, cases[i].ask, huge, uf_ring_hugepages(r));
			CHILD_CHECK(cases[i].want ? huge > 0 : huge == 0);
			CHILD_CHECK(uf_ring_hugepages(r) == cases[i].want);
			uf_consumer_options_init(&co);
			co.dir = mnt;
			CHILD_CHECK(uf_consumer_attach(name, &co, &c, err, sizeof(err)) == 0);
			uf_consumer_get_info(c, &info);
			CHILD_CHECK(info.hugepages == cases[i].want);
			uf_consumer_detach(c);
			uf_ring_close(r);
			CHILD_CHECK(uf_ring_unlink(name, mnt) == 0);
			CHILD_CHECK(umount(mnt) == 0);
		}
		_exit(0);
	}
	int st = test_wait_child(pid, 30000);
	rmdir(mnt);
	assert_true(test_child_ok(st));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_ring_killed_consumer_is_reaped_and_producer_unaffected),
	    cmocka_unit_test(test_ring_restart_changes_generation_and_reattach_works),
	    cmocka_unit_test(test_ring_refuses_other_layout_version),
	    cmocka_unit_test(test_ring_access_modes_and_readonly_mapping),
	    cmocka_unit_test(test_ring_consumer_sees_producer_died_without_closing),
	    cmocka_unit_test(test_ring_create_refuses_a_ring_another_producer_runs),
	    cmocka_unit_test(test_ring_reports_the_pages_the_kernel_granted),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
