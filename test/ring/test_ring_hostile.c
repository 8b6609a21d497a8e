/* The ring's trust boundary under attack: a consumer (a member of the ring's group, not the
 * producer's user) scribbles on and tries to shrink everything it can write, squats the ring's
 * name, lies in a header; a full file system at create. Producer, victims and attacker run as
 * separate processes; every one of them must end by exit(0), none by a signal. */
#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <linux/falloc.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "ring/ring_util.h"
#include "ring/uf_ring.h"
#include "ring/ufconsumer.h"
#include "test/common/uf_test_proc.h"

#define RING_TEST_RING_HELPERS
#include "ring_test_util.h"

#define NOBODY_UID 65534 /* the attacker's and the group member's uid */
#define RING_GID   4243  /* the ring's consumer group */
#define OTHER_UID  65533 /* a squatter */

/* ---- a private base directory for this test process's rings ---- */

static char g_base[128];

static int rm_entry(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	return remove(p) < 0 ? 0 : 0;
}

static void base_cleanup(void)
{
	if (g_base[0])
		nftw(g_base, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static const char *base_dir(void)
{
	if (g_base[0])
		return g_base;
	/* base directories of earlier runs that died before their cleanup (killed, timeout) */
	DIR *d = opendir("/dev/shm");
	struct dirent *e;
	while (d && (e = readdir(d)) != NULL) {
		long pid;
		if (strncmp(e->d_name, "uf-hostile-", 11))
			continue;
		pid = strtol(e->d_name + 11, NULL, 10);
		if (pid > 0 && kill((pid_t)pid, 0) < 0 && errno == ESRCH) {
			snprintf(g_base, sizeof(g_base), "/dev/shm/%.100s", e->d_name);
			base_cleanup();
		}
	}
	if (d)
		closedir(d);
	snprintf(g_base, sizeof(g_base), "/dev/shm/uf-hostile-%d", (int)getpid());
	base_cleanup();
	if (mkdir(g_base, 0755) < 0 || chmod(g_base, 0755) < 0) {
		fprintf(stderr, "cannot create %s: %s\n", g_base, strerror(errno));
		abort();
	}
	atexit(base_cleanup);
	return g_base;
}

static void path_of(char *buf, size_t len, const char *name, const char *leaf)
{
	snprintf(buf, len, "%.40s/uf.%.40s%s", base_dir(), name, leaf);
}

static struct uf_ring *make_ring_in_base(const char *name, uint32_t mode, int64_t gid)
{
	struct uf_ring_options o;
	struct uf_ring *r = NULL;
	char err[256] = "";
	int rc;

	uf_ring_options_init(&o);
	o.capacity = 1024;
	o.max_instruments = 8;
	o.max_consumers = 8;
	o.mode = mode;
	o.gid = gid;
	o.dir = base_dir();
	rc = uf_ring_create(name, &o, &r, err, sizeof(err));
	if (rc != 0)
		fprintf(stderr, "uf_ring_create(%s): %d %s\n", name, rc, err);
	assert_int_equal(rc, 0);
	return r;
}

static int attach_in_base(const char *name, uint64_t spin_ns, uf_consumer_t **c, char *err,
                          size_t errlen)
{
	struct uf_consumer_options o;

	uf_consumer_options_init(&o);
	o.spin_ns = spin_ns;
	o.dir = base_dir();
	o.tag = "hostile-test";
	*c = NULL;
	return uf_consumer_attach(name, &o, c, err, errlen);
}

/* Becomes uid 65534, in the ring's group when `in_group`. Children only. */
static void drop_to_nobody(int in_group)
{
	gid_t g = RING_GID;

	CHILD_CHECK(setgroups(in_group ? 1 : 0, &g) == 0);
	CHILD_CHECK(setgid(in_group ? RING_GID : NOBODY_UID) == 0);
	CHILD_CHECK(setuid(NOBODY_UID) == 0);
	prctl(PR_SET_PDEATHSIG, SIGKILL); /* a credential change cleared it */
	CHILD_CHECK(geteuid() == NOBODY_UID);
}

/* What any process allowed to connect to the ring's socket gets: the table's fd. This is the
 * attacker's side of the protocol, written here on purpose (not the library's code). */
static int grab_table(const char *name, size_t *size)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct uf_ring_hello hello;
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = {.iov_base = &hello, .iov_len = sizeof(hello)};
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
	struct cmsghdr *cm;
	int s, fd = -1;

	path_of(sa.sun_path, sizeof(sa.sun_path), name, "/sock");
	s = socket(AF_UNIX, SOCK_STREAM, 0);
	if (s < 0 || connect(s, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return -1;
	m.msg_control = u.buf;
	m.msg_controllen = sizeof(u.buf);
	if (recvmsg(s, &m, 0) == (ssize_t)sizeof(hello) && (cm = CMSG_FIRSTHDR(&m)) &&
	    cm->cmsg_type == SCM_RIGHTS)
		memcpy(&fd, CMSG_DATA(cm), sizeof(int));
	close(s);
	*size = hello.table_size;
	return fd;
}

/* ---- hostile consumer against a running producer and two victims ---- */

enum attack {
	ATTACK_SCRIBBLE, /* 0xFF, then pseudo-random bytes, over the whole table */
	ATTACK_SHRINK,   /* truncate/shrink/grow/seal attempts, then a hole punched */
};

struct pipes {
	int ready[2];    /* producer -> parent: ring created */
	int repaired[2]; /* producer -> parent: uf_ring_reap repaired the table */
	int stop[2];     /* parent -> producer: close the ring */
	int vready[2];   /* victim -> parent: attached and reading */
	int phase[2];    /* parent -> victims: the attack is over */
	int vdone[2];    /* victim -> parent: read 200 records after the attack */
	int hdone[2];    /* attacker -> parent: attack done */
};

static void producer_main(const char *name, struct pipes *p)
{
	struct uf_ring_options o;
	struct uf_ring_consumer_info ci[8];
	struct uf_ring *r = NULL;
	struct pollfd stop = {.fd = p->stop[0], .events = POLLIN};
	uint64_t seq = 0, repairs = 0;
	char err[256] = "";

	uf_ring_options_init(&o);
	o.capacity = 1024;
	o.max_instruments = 8;
	o.max_consumers = 8;
	o.mode = 0640;
	o.gid = RING_GID;
	o.dir = base_dir();
	if (uf_ring_create(name, &o, &r, err, sizeof(err)) != 0) {
		fprintf(stderr, "producer: %s\n", err);
		_exit(3);
	}
	test_pipe_put(p->ready[1]);
	for (;;) {
		struct uf_record rec;
		test_rec_make(&rec, seq);
		CHILD_CHECK(uf_ring_publish(r, &rec, 1) == 0); /* the hot path, sleepers load */
		seq++;
		if ((seq & 63) == 0) {
			/* what the daemon's control and status threads do, far more often */
			uf_ring_reap(r);
			CHILD_CHECK(uf_ring_consumers(r, ci, 8) <= 8);
			if (r->table_repairs > repairs) {
				repairs = r->table_repairs;
				test_pipe_put(p->repaired[1]);
			}
			if (poll(&stop, 1, 0) == 1)
				break;
			struct timespec ts = {0, 100000}; /* pace: ~0.5 M records/s, not a CPU */
			nanosleep(&ts, NULL);
		}
	}
	CHILD_CHECK(repairs >= 1);
	uf_ring_close(r);
	_exit(0);
}

static void victim_main(const char *name, struct pipes *p, int unprivileged)
{
	struct pollfd phase = {.fd = p->phase[0], .events = POLLIN};
	uf_consumer_t *c;
	struct uf_record rec;
	uint64_t seq, got = 0, after = 0;
	int after_phase = 0, rc;
	char err[256] = "";

	if (unprivileged)
		drop_to_nobody(1);
	rc = attach_in_base(name, 0, &c, err, sizeof(err)); /* spin 0: sleeps on the futex */
	if (rc != 0)
		fprintf(stderr, "victim: %s\n", err);
	CHILD_CHECK(rc == 0);
	for (;;) {
		rc = uf_consumer_wait(c, 100000000);
		CHILD_CHECK(rc == 0 || rc == -ETIMEDOUT);
		while ((rc = uf_consumer_next(c, &rec, &seq)) == 0 || rc == -EOVERFLOW) {
			if (rc != 0)
				continue; /* lapped by the fast producer: allowed, counted */
			CHILD_CHECK(test_rec_ok(&rec, seq));
			if (++got == 1)
				test_pipe_put(p->vready[1]);
			if (after_phase && ++after == 200)
				test_pipe_put(p->vdone[1]);
		}
		if (rc == -EPIPE)
			break;
		CHILD_CHECK(rc == -EAGAIN);
		if (!after_phase && poll(&phase, 1, 0) == 1)
			after_phase = test_pipe_get(p->phase[0], 0);
	}
	CHILD_CHECK(after >= 200);
	uf_consumer_detach(c);
	_exit(0);
}

static void attacker_main(const char *name, struct pipes *p, enum attack kind)
{
	char path[256];
	uf_consumer_t *c;
	size_t size = 0;
	uint8_t *t;
	int fd, fd2, rc;
	char err[256] = "";

	drop_to_nobody(1);
	/* what it cannot touch at all: the data file and the directory */
	path_of(path, sizeof(path), name, "/data");
	CHILD_CHECK(open(path, O_RDWR) < 0 && errno == EACCES);
	CHILD_CHECK(truncate(path, 0) < 0 && errno == EACCES);
	path_of(path, sizeof(path), name, "/evil");
	CHILD_CHECK(open(path, O_RDWR | O_CREAT, 0666) < 0 && errno == EACCES);
	/* a registered consumer like any other ... */
	rc = attach_in_base(name, 0, &c, err, sizeof(err));
	if (rc != 0)
		fprintf(stderr, "attacker: %s\n", err);
	CHILD_CHECK(rc == 0);
	/* ... that also takes the consumer table for itself */
	fd = grab_table(name, &size);
	CHILD_CHECK(fd >= 0 && size >= sizeof(struct uf_ring_ctable));
	t = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	CHILD_CHECK(t != MAP_FAILED);
	if (kind == ATTACK_SCRIBBLE) {
		struct uf_ring_ctable *ct = (struct uf_ring_ctable *)t;
		uint64_t x = 0x9e3779b97f4a7c15ull;
		memset(t, 0xff, size);
		ct->nslots = 0xffffffffu; /* the crash of issue 12 */
		ct->sleepers = 0xffffffffu;
		for (size_t i = 0; i < size; i += 8) { /* then noise over every field */
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			memcpy(t + i, &x, 8);
		}
		ct->nslots = 0xffffffffu;
		ct->sleepers = 0xfffffff0u;
	} else {
		char self[64];
		CHILD_CHECK(ftruncate(fd, 0) < 0 && errno == EPERM);
		CHILD_CHECK(ftruncate(fd, (off_t)size / 2) < 0 && errno == EPERM);
		CHILD_CHECK(ftruncate(fd, (off_t)size * 2) < 0 && errno == EPERM);
		CHILD_CHECK(fallocate(fd, 0, 0, (off_t)size * 2) < 0);
		CHILD_CHECK(fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE) < 0 && errno == EPERM);
		CHILD_CHECK(fcntl(fd, F_ADD_SEALS, F_SEAL_FUTURE_WRITE) < 0 && errno == EPERM);
		snprintf(self, sizeof(self), "/proc/self/fd/%d", fd); /* another open file */
		fd2 = open(self, O_RDWR);
		CHILD_CHECK(fd2 >= 0);
		CHILD_CHECK(ftruncate(fd2, 0) < 0 && errno == EPERM);
		close(fd2);
		/* what it can do: punch the whole table out (it reads back as zeros; the last
		 * byte is padding nobody else writes, the header the producer soon repairs) */
		t[size - 1] = 0x5a;
		CHILD_CHECK(
		    fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, (off_t)size) == 0);
		CHILD_CHECK(t[size - 1] == 0);
	}
	test_pipe_put(p->hdone[1]);
	munmap(t, size);
	close(fd);
	uf_consumer_detach(c); /* frees a slot that is no longer its own: harmless */
	_exit(0);
}

static void run_hostile(enum attack kind, const char *what)
{
	struct pipes p;
	int *all = (int *)&p;
	char name[64], err[256] = "";
	pid_t prod, vict[2], att;
	uf_consumer_t *c;
	struct uf_record rec;
	uint64_t seq, got = 0;
	int rc;

	for (size_t i = 0; i < sizeof(p) / sizeof(int); i += 2)
		assert_int_equal(pipe(all + i), 0);
	test_ring_name(name, sizeof(name), what);
	prod = uf_test_fork();
	assert_true(prod >= 0);
	if (prod == 0)
		producer_main(name, &p);
	assert_true(test_pipe_get(p.ready[0], 10000));
	for (int k = 0; k < 2; k++) {
		vict[k] = uf_test_fork();
		assert_true(vict[k] >= 0);
		if (vict[k] == 0)
			victim_main(name, &p, k);
		assert_true(test_pipe_get(p.vready[0], 10000));
	}
	att = uf_test_fork();
	assert_true(att >= 0);
	if (att == 0)
		attacker_main(name, &p, kind);
	assert_true(test_pipe_get(p.hdone[0], 10000));
	/* the producer noticed the damage in its next reap and repaired the table */
	assert_true(test_pipe_get(p.repaired[0], 10000));
	test_pipe_put(p.phase[1]);
	test_pipe_put(p.phase[1]);
	/* a consumer attaching afterwards works */
	rc = attach_in_base(name, 0, &c, err, sizeof(err));
	if (rc != 0)
		fprintf(stderr, "late consumer: %s\n", err);
	assert_int_equal(rc, 0);
	while (got < 200) {
		rc = uf_consumer_wait(c, 5000000000ll);
		assert_int_equal(rc, 0);
		while ((rc = uf_consumer_next(c, &rec, &seq)) == 0 || rc == -EOVERFLOW)
			if (rc == 0) {
				assert_true(test_rec_ok(&rec, seq));
				got++;
			}
		assert_int_equal(rc, -EAGAIN);
	}
	uf_consumer_detach(c);
	/* the victims kept reading through it all */
	assert_true(test_pipe_get(p.vdone[0], 10000));
	assert_true(test_pipe_get(p.vdone[0], 10000));
	test_pipe_put(p.stop[1]);
	{
		pid_t kids[4] = {att, vict[0], vict[1], prod};
		const char *who[4] = {"attacker", "victim (root)", "victim (group member)",
		                      "producer"};
		for (int k = 0; k < 4; k++) {
			int st = test_wait_child(kids[k], 10000);
			if (!test_child_ok(st))
				fail_msg("%s: %s %d", who[k],
				         st >= 0 && WIFSIGNALED(st) ? "killed by signal" : "exit",
				         st >= 0 && WIFSIGNALED(st) ? WTERMSIG(st)
				                                    : WEXITSTATUS(st));
		}
	}
	for (size_t i = 0; i < sizeof(p) / sizeof(int); i++)
		close(all[i]);
	uf_ring_unlink(name, base_dir());
}

static void test_hostile_scribble_on_the_table_hurts_nobody(void **state)
{
	run_hostile(ATTACK_SCRIBBLE, "scribble");
}

static void test_hostile_cannot_shrink_anything_and_a_hole_hurts_nobody(void **state)
{
	run_hostile(ATTACK_SHRINK, "shrink");
}

/* ---- damage detected and repaired, in process, field by field ---- */

static void test_damaged_table_is_repaired_and_new_consumers_attach(void **state)
{
	char name[64], err[256] = "";
	struct uf_ring_consumer_info ci[8];
	struct uf_ring *r;
	uf_consumer_t *c1, *c2;
	struct uf_ring_cslot *slots;
	struct uf_record rec;
	uint64_t seq;
	size_t size;
	int fd;
	struct uf_ring_ctable *ct;

	test_ring_name(name, sizeof(name), "repair");
	r = make_ring_in_base(name, 0600, -1);
	assert_int_equal(attach_in_base(name, 0, &c1, err, sizeof(err)), 0);
	fd = grab_table(name, &size);
	assert_true(fd >= 0);
	ct = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	assert_true(ct != MAP_FAILED);
	slots = (struct uf_ring_cslot *)(ct + 1);
	ct->magic = 0;
	ct->nslots = 0xffffffffu;
	ct->generation = 1;
	ct->sleepers = 0xffffffffu;
	slots[3].flags = 0xdeadbeef;
	slots[5].pid = 0xfffffff0u; /* no process has it */
	slots[5].flags = 1;
	/* the status endpoint: bounded by the producer's copy, whatever nslots says */
	assert_int_equal(uf_ring_consumers(r, ci, 8), 2);
	assert_int_equal(r->table_repairs, 0);
	assert_int_equal(uf_ring_reap(r), 1); /* the impossible pid */
	assert_int_equal(r->table_repairs, 1);
	assert_int_equal(ct->magic, UF_RING_CT_MAGIC);
	assert_int_equal(ct->nslots, 8);
	assert_int_equal(ct->generation, r->generation);
	assert_true(ct->sleepers <= 8);
	assert_int_equal(slots[3].flags, 0);
	assert_int_equal(uf_ring_reap(r), 0);
	assert_int_equal(r->table_repairs, 1); /* repaired once, healthy since */
	assert_int_equal(uf_ring_consumers(r, ci, 8), 1);
	/* afterwards: a new consumer attaches; the old one still reads */
	assert_int_equal(attach_in_base(name, 0, &c2, err, sizeof(err)), 0);
	publish_range(r, 0, 10, 4);
	for (uint64_t s = 0; s < 10; s++) {
		assert_int_equal(uf_consumer_next(c1, &rec, &seq), 0);
		assert_true(test_rec_ok(&rec, s));
		assert_int_equal(uf_consumer_next(c2, &rec, &seq), 0);
		assert_true(test_rec_ok(&rec, s));
	}
	assert_int_equal(uf_ring_consumers(r, ci, 8), 2);
	munmap(ct, size);
	close(fd);
	uf_consumer_detach(c1);
	uf_consumer_detach(c2);
	uf_ring_close(r);
	uf_ring_unlink(name, base_dir());
}

/* The attacker's writable view of ring `name`'s slots (grab_table + mmap); *size and *fd for
 * unmap_slots. */
static struct uf_ring_cslot *map_slots(const char *name, size_t *size, int *fd)
{
	*fd = grab_table(name, size);
	assert_true(*fd >= 0);
	void *m = mmap(NULL, *size, PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0);
	assert_true(m != MAP_FAILED);
	return (struct uf_ring_cslot *)((struct uf_ring_ctable *)m + 1);
}

static void unmap_slots(struct uf_ring_cslot *slots, size_t size, int fd)
{
	munmap((struct uf_ring_ctable *)slots - 1, size);
	close(fd);
}

static void test_forged_registrations_are_freed_and_attach_works_again(void **state)
{
	char name[64], err[256] = "";
	struct uf_ring_consumer_info ci[8];
	struct uf_ring *r;
	uf_consumer_t *c1, *c2;
	struct uf_ring_cslot *slots;
	uint64_t init_start = 0;
	size_t size;
	int fd;

	test_ring_name(name, sizeof(name), "forged");
	r = make_ring_in_base(name, 0600, -1);
	assert_int_equal(attach_in_base(name, 0, &c1, err, sizeof(err)), 0); /* slot 0 */
	slots = map_slots(name, &size, &fd);
	/* every other slot claimed for a live process with the right start time (init) */
	assert_int_equal(uf_ring_proc_stat(1, &init_start, NULL), 0);
	for (int i = 1; i < 8; i++) {
		slots[i].start_time = init_start;
		slots[i].pid = 1;
	}
	assert_int_equal(attach_in_base(name, 0, &c2, err, sizeof(err)), -EUSERS); /* locked out */
	assert_int_equal(uf_ring_reap(r), 7); /* init never asked this producer for the table */
	assert_int_equal(r->table_repairs, 1);
	assert_int_equal(attach_in_base(name, 0, &c2, err, sizeof(err)), 0);
	assert_int_equal(uf_ring_reap(r), 0); /* the real consumers stay */
	assert_int_equal(uf_ring_consumers(r, ci, 8), 2);
	unmap_slots(slots, size, fd);
	uf_consumer_detach(c1);
	uf_consumer_detach(c2);
	uf_ring_close(r);
	uf_ring_unlink(name, base_dir());
}

/* A consumer writes its own tag in the shared table: whatever bytes it puts there, the producer
 * reports a cleaned one (issue 23 item 13: a cut UTF-8 character or a newline went straight to
 * /metrics, /status and the log). */
static void test_a_forged_tag_is_reported_clean(void **state)
{
	char name[64], err[256] = "";
	struct uf_ring_consumer_info ci[2];
	struct uf_ring *r;
	uf_consumer_t *c;
	struct uf_ring_cslot *slots;
	size_t size;
	int fd;

	test_ring_name(name, sizeof(name), "tag");
	r = make_ring_in_base(name, 0600, -1);
	assert_int_equal(attach_in_base(name, 0, &c, err, sizeof(err)), 0); /* slot 0 */
	slots = map_slots(name, &size, &fd);
	/* 16 bytes, no NUL: a newline, an escape sequence, an e-acute, a euro sign the
	 * field's last byte (the terminator's place) cuts */
	static const char raw[16] = "a\nb\x1b[2Jcd\xc3\xa9"
	                            "fg\xe2\x82\xac";
	memcpy(slots[0].tag, raw, sizeof(slots[0].tag));
	assert_int_equal(uf_ring_consumers(r, ci, 2), 1);
	assert_string_equal(ci[0].tag, "a?b?[2Jcd\xc3\xa9"
	                               "fg");
	unmap_slots(slots, size, fd);
	uf_consumer_detach(c);
	uf_ring_close(r);
	uf_ring_unlink(name, base_dir());
}

/* ---- connections that never read their handout ---- */

#define UNREAD_CONNS 600

/* issue 23 item 14: the table's fd rides in every unread connection's queue and the kernel
 * charges each to the producer's RLIMIT_NOFILE. A producer that is not root (OTHER_UID,
 * nofile 512) is attacked by a group member opening 600 connections that never read; before,
 * every later attach failed (sendmsg: ETOOMANYREFS), unlogged. Now the user's unread handouts
 * are bounded: the attacker gets a few, the rest of its connections are closed unanswered,
 * and another consumer attaches. */
static void test_unread_connections_do_not_lock_consumers_out(void **state)
{
	char name[64], dir[64], sock[108], err[256] = "";
	int ready[2], stop[2], report[2];
	uf_consumer_t *c = NULL;

	test_ring_name(name, sizeof(name), "unread");
	snprintf(dir, sizeof(dir), "%.40s/np", base_dir());
	assert_int_equal(mkdir(dir, 0755), 0);
	assert_int_equal(chown(dir, OTHER_UID, RING_GID), 0);
	snprintf(sock, sizeof(sock), "%.50s/uf.%.40s/sock", dir, name);
	assert_int_equal(pipe(ready), 0);
	assert_int_equal(pipe(stop), 0);
	assert_int_equal(pipe(report), 0);
	pid_t prod = uf_test_fork();
	if (prod == 0) { /* the producer: not root, nofile 512 */
		gid_t g = RING_GID;
		struct rlimit rl = {512, 512};
		struct uf_ring_options o;
		struct uf_ring *r = NULL;
		CHILD_CHECK(setrlimit(RLIMIT_NOFILE, &rl) == 0);
		CHILD_CHECK(setgroups(1, &g) == 0);
		CHILD_CHECK(setgid(RING_GID) == 0);
		CHILD_CHECK(setuid(OTHER_UID) == 0);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		uf_ring_options_init(&o);
		o.capacity = 1024;
		o.max_instruments = 8;
		o.max_consumers = 8;
		o.mode = 0640;
		o.gid = RING_GID;
		o.dir = dir;
		if (uf_ring_create(name, &o, &r, err, sizeof(err)) != 0) {
			fprintf(stderr, "producer: %s\n", err);
			_exit(3);
		}
		test_pipe_put(ready[1]);
		CHILD_CHECK(test_pipe_get(stop[0], 60000));
		uf_ring_close(r);
		_exit(0);
	}
	assert_true(test_pipe_get(ready[0], 10000));
	pid_t att = uf_test_fork();
	if (att == 0) { /* a group member that connects and never reads */
		struct rlimit rl = {4096, 4096};
		int fds[UNREAD_CONNS], handed = 0, closed = 0;
		CHILD_CHECK(setrlimit(RLIMIT_NOFILE, &rl) == 0);
		drop_to_nobody(1);
		for (int i = 0; i < UNREAD_CONNS; i++) {
			struct sockaddr_un sa = {.sun_family = AF_UNIX};
			memcpy(sa.sun_path, sock, sizeof(sock));
			fds[i] = socket(AF_UNIX, SOCK_STREAM, 0);
			CHILD_CHECK(fds[i] >= 0);
			CHILD_CHECK(connect(fds[i], (struct sockaddr *)&sa, sizeof(sa)) == 0);
		}
		/* each one ends with the handout waiting in it, or closed unanswered */
		for (int i = 0; i < UNREAD_CONNS; i++) {
			struct pollfd p = {.fd = fds[i], .events = POLLIN};
			char b;
			CHILD_CHECK(poll(&p, 1, 5000) == 1);
			if (recv(fds[i], &b, 1, MSG_PEEK | MSG_DONTWAIT) == 1)
				handed++;
			else
				closed++;
		}
		int out[2] = {handed, closed};
		CHILD_CHECK(write(report[1], out, sizeof(out)) == (ssize_t)sizeof(out));
		CHILD_CHECK(test_pipe_get(stop[0], 60000)); /* keeps them unread until then */
		_exit(0);
	}
	int got[2] = {-1, -1};
	struct pollfd rp = {.fd = report[0], .events = POLLIN};
	assert_int_equal(poll(&rp, 1, 30000), 1);
	assert_int_equal(read(report[0], got, sizeof(got)), (ssize_t)sizeof(got));
	print_message("attacker: %d handouts left unread, %d connections closed unanswered\n",
	              got[0], got[1]);
	assert_true(got[0] >= 1 && got[0] <= 8);
	assert_int_equal(got[0] + got[1], UNREAD_CONNS);
	/* while the attacker holds its unread handouts, a consumer of another user attaches */
	struct uf_consumer_options co;
	uf_consumer_options_init(&co);
	co.dir = dir;
	co.tag = "after-flood";
	co.owner = OTHER_UID; /* the producer is not root here */
	int rc = uf_consumer_attach(name, &co, &c, err, sizeof(err));
	if (rc != 0)
		fail_msg("attach during the flood: %d %s", rc, err);
	uf_consumer_detach(c);
	test_pipe_put(stop[1]);
	test_pipe_put(stop[1]);
	assert_true(test_child_ok(test_wait_child(att, 10000)));
	assert_true(test_child_ok(test_wait_child(prod, 10000)));
	for (int k = 0; k < 2; k++) {
		close(ready[k]);
		close(stop[k]);
		close(report[k]);
	}
}

/* ---- squatted, foreign, linked, loosely permitted rings are refused ---- */

static void expect_attach(const char *name, int want, const char *msg)
{
	uf_consumer_t *c = NULL;
	char err[512] = "";
	int rc = attach_in_base(name, 0, &c, err, sizeof(err));

	if (rc != want || !strstr(err, msg))
		fail_msg("attach %s: got %d \"%s\", want %d with \"%s\"", name, rc, err, want, msg);
	fprintf(stderr, "refused as expected: %s\n", err);
	assert_null(c);
}

static void expect_create(const char *name, int want, const char *msg)
{
	struct uf_ring_options o;
	struct uf_ring *r = NULL;
	char err[512] = "";
	int rc;

	uf_ring_options_init(&o);
	o.capacity = 1024;
	o.max_instruments = 8;
	o.dir = base_dir();
	rc = uf_ring_create(name, &o, &r, err, sizeof(err));
	if (rc != want || !strstr(err, msg))
		fail_msg("create %s: got %d \"%s\", want %d with \"%s\"", name, rc, err, want, msg);
	fprintf(stderr, "refused as expected: %s\n", err);
	assert_null(r);
}

static void test_squatted_foreign_and_linked_rings_are_refused(void **state)
{
	char sq[64], ln[64], real[64], fl[64], p[256], p2[256];
	struct uf_ring *r;
	uf_consumer_t *c;
	struct uf_consumer_options o;
	char err[512] = "";

	/* a ring directory another user made (a finished ring, given away) */
	test_ring_name(sq, sizeof(sq), "squat");
	r = make_ring_in_base(sq, 0600, -1);
	publish_range(r, 0, 5, 5);
	uf_ring_close(r);
	path_of(p, sizeof(p), sq, "");
	assert_int_equal(chown(p, OTHER_UID, OTHER_UID), 0);
	path_of(p, sizeof(p), sq, "/data");
	assert_int_equal(chown(p, OTHER_UID, OTHER_UID), 0);
	expect_attach(sq, -EPERM, "owned by uid 65533");
	expect_create(sq, -EPERM, "squatted");
	/* unless this consumer was told that uid is its producer */
	uf_consumer_options_init(&o);
	o.dir = base_dir();
	o.owner = OTHER_UID;
	o.start = UF_CONSUMER_START_OLDEST;
	assert_int_equal(uf_consumer_attach(sq, &o, &c, err, sizeof(err)), 0);
	uf_consumer_detach(c);

	/* a symbolic link to a real ring, and a data file that is a link */
	test_ring_name(real, sizeof(real), "real");
	test_ring_name(ln, sizeof(ln), "link");
	r = make_ring_in_base(real, 0600, -1);
	path_of(p, sizeof(p), real, "");
	path_of(p2, sizeof(p2), ln, "");
	assert_int_equal(symlink(p, p2), 0);
	expect_attach(ln, -ELOOP, "symbolic link");
	expect_create(ln, -ELOOP, "symbolic link");
	assert_int_equal(uf_ring_unlink(ln, base_dir()), -ELOOP); /* and deletes nothing */
	path_of(p, sizeof(p), real, "/data");
	assert_int_equal(access(p, F_OK), 0);
	unlink(p2);

	/* loose modes: anyone in the group (or anyone) could have swapped the files */
	path_of(p, sizeof(p), real, "");
	assert_int_equal(chmod(p, 0777), 0);
	expect_attach(real, -EPERM, "mode 0777");
	assert_int_equal(chmod(p, 0770), 0);
	expect_attach(real, -EPERM, "group or others may write");
	assert_int_equal(chmod(p, 0700), 0);
	path_of(p, sizeof(p), real, "/data");
	assert_int_equal(chmod(p, 0666), 0);
	expect_attach(real, -EPERM, "writable only by it");
	assert_int_equal(chmod(p, 0600), 0);
	assert_int_equal(attach_in_base(real, 0, &c, err, sizeof(err)), 0); /* repaired: fine */
	uf_consumer_detach(c);
	uf_ring_close(r);

	/* a plain file where the directory should be (an old-layout ring of someone else) */
	test_ring_name(fl, sizeof(fl), "file");
	path_of(p, sizeof(p), fl, "");
	int fd = open(p, O_CREAT | O_WRONLY, 0644);
	assert_true(fd >= 0);
	assert_int_equal(fchown(fd, OTHER_UID, OTHER_UID), 0);
	close(fd);
	expect_attach(fl, -ENOTDIR, "not a ring directory");
	expect_create(fl, -ENOTDIR, "not a directory");
	unlink(p);
	uf_ring_unlink(real, base_dir());
	assert_int_equal(uf_ring_unlink(sq, base_dir()), 0);
}

/* ---- every header field is checked before it is trusted ---- */

static void patch(const char *name, uint64_t off, const void *v, size_t n)
{
	char path[256];
	int fd;

	path_of(path, sizeof(path), name, "/data");
	fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, v, n, (off_t)off), (ssize_t)n);
	close(fd);
}

static void test_lying_header_fields_are_refused(void **state)
{
	struct lie {
		uint64_t off; /* offset in the data file; UINT64_MAX - k: image header + k */
		uint64_t val; /* the lie */
		int width;    /* bytes */
		const char *msg;
	};
	const uint64_t IMG = UINT64_MAX - 1000;
	const struct lie lies[] = {
	    {offsetof(struct uf_ring_hdr, capacity), 1000, 8, "capacity is not a power of two"},
	    {offsetof(struct uf_ring_hdr, capacity), 1ull << 40, 8, "capacity"},
	    {offsetof(struct uf_ring_hdr, capacity), 1ull << 20, 8, "past the end"},
	    {offsetof(struct uf_ring_hdr, ring_off), 64, 8, "ring offset"},
	    {offsetof(struct uf_ring_hdr, ring_off), UINT64_MAX - 4095, 8, "ring offset"},
	    {offsetof(struct uf_ring_hdr, image_off), 4096, 8, "image offset overlaps"},
	    {offsetof(struct uf_ring_hdr, image_off), UINT64_MAX - 127, 8, "image offset"},
	    {offsetof(struct uf_ring_hdr, file_size), 1ull << 62, 8, "file_size differs"},
	    {offsetof(struct uf_ring_hdr, state), 9, 4, "neither open nor closed"},
	    {offsetof(struct uf_ring_hdr, name), 'X', 1, "ring name"},
	    {IMG + offsetof(struct uf_image_hdr, magic), 0, 8, "image magic"},
	    {IMG + offsetof(struct uf_image_hdr, depth), 0, 4, "depth"},
	    {IMG + offsetof(struct uf_image_hdr, depth), 1000, 4, "depth"},
	    {IMG + offsetof(struct uf_image_hdr, max_instruments), 1u << 30, 4, "max_instruments"},
	    {IMG + offsetof(struct uf_image_hdr, max_instruments), 1u << 20, 4, "past the end"},
	    {IMG + offsetof(struct uf_image_hdr, entry_size), 64, 8, "entry size"},
	    {IMG + offsetof(struct uf_image_hdr, entries_off), 0, 8, "entry size or offset"},
	};
	char name[64], path[256], err[512];
	struct uf_ring *r;
	uf_consumer_t *c;
	uint64_t image_off, size;

	test_ring_name(name, sizeof(name), "lies");
	r = make_ring_in_base(name, 0600, -1);
	image_off = r->hdr->image_off;
	size = r->data_size;
	for (size_t i = 0; i < sizeof(lies) / sizeof(lies[0]); i++) {
		uint64_t off = lies[i].off >= IMG ? image_off + (lies[i].off - IMG) : lies[i].off;
		uint8_t saved[8];
		char p2[256];
		int fd;

		path_of(p2, sizeof(p2), name, "/data");
		fd = open(p2, O_RDONLY);
		assert_int_equal(pread(fd, saved, (size_t)lies[i].width, (off_t)off),
		                 lies[i].width);
		close(fd);
		patch(name, off, &lies[i].val, (size_t)lies[i].width);
		expect_attach(name, -EPROTO, lies[i].msg);
		patch(name, off, saved, (size_t)lies[i].width);
	}
	/* a file cut short under a header that still claims the full size (the producer is
	 * closed first: its own mapping would fault past the new end) */
	uf_ring_close(r);
	path_of(path, sizeof(path), name, "/data");
	assert_int_equal(truncate(path, (off_t)size - 4096), 0);
	expect_attach(name, -EPROTO, "file_size differs");
	assert_int_equal(truncate(path, 100), 0);
	expect_attach(name, -EPROTO, "too short");
	uf_ring_unlink(name, base_dir());
	/* restored header (new ring): attaches */
	r = make_ring_in_base(name, 0600, -1);
	assert_int_equal(attach_in_base(name, 0, &c, err, sizeof(err)), 0);
	uf_consumer_detach(c);
	uf_ring_close(r);
	uf_ring_unlink(name, base_dir());
}

/* ---- a full file system at create ---- */

static int dir_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)) != NULL)
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

static void test_full_file_system_at_create_is_a_clean_enospc(void **state)
{
	char mnt[160], name[64];
	pid_t pid;
	int st;

	snprintf(mnt, sizeof(mnt), "%s/tmpfs-1M", base_dir());
	assert_int_equal(mkdir(mnt, 0755), 0);
	test_ring_name(name, sizeof(name), "full");
	pid = uf_test_fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct uf_ring_options o;
		struct uf_ring *r = NULL;
		uf_consumer_t *c = NULL;
		struct uf_consumer_options co;
		struct uf_record rec;
		uint64_t seq;
		char err[512] = "";

		/* a 1 MiB tmpfs, visible to this process only */
		CHILD_CHECK(unshare(CLONE_NEWNS) == 0);
		CHILD_CHECK(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0);
		CHILD_CHECK(mount("tmpfs", mnt, "tmpfs", 0, "size=1M,mode=0755") == 0);
		uf_ring_options_init(&o);
		o.capacity = 1u << 16; /* 4 MiB of records: does not fit */
		o.max_instruments = 8;
		o.dir = mnt;
		CHILD_CHECK(uf_ring_create(name, &o, &r, err, sizeof(err)) == -ENOSPC);
		fprintf(stderr, "refused as expected: %s\n", err);
		CHILD_CHECK(r == NULL);
		CHILD_CHECK(strstr(err, mnt) != NULL);       /* names the path */
		CHILD_CHECK(strstr(err, " bytes)") != NULL); /* and the size */
		CHILD_CHECK(strstr(err, "No space left") != NULL);
		CHILD_CHECK(dir_entries(mnt) == 0); /* no temporary file or directory left */
		/* twice: nothing accumulates */
		CHILD_CHECK(uf_ring_create(name, &o, &r, err, sizeof(err)) == -ENOSPC);
		CHILD_CHECK(dir_entries(mnt) == 0);
		/* a ring that fits works in the same place */
		o.capacity = 1024;
		CHILD_CHECK(uf_ring_create(name, &o, &r, err, sizeof(err)) == 0);
		uf_consumer_options_init(&co);
		co.dir = mnt;
		CHILD_CHECK(uf_consumer_attach(name, &co, &c, err, sizeof(err)) == 0);
		test_rec_make(&rec, 0);
		CHILD_CHECK(uf_ring_publish(r, &rec, 1) == 0);
		CHILD_CHECK(uf_consumer_next(c, &rec, &seq) == 0 && test_rec_ok(&rec, 0));
		uf_consumer_detach(c);
		uf_ring_close(r);
		CHILD_CHECK(uf_ring_unlink(name, mnt) == 0);
		CHILD_CHECK(dir_entries(mnt) == 0);
		CHILD_CHECK(umount(mnt) == 0);
		_exit(0);
	}
	st = test_wait_child(pid, 20000);
	if (st >= 0 && WIFSIGNALED(st))
		fail_msg("create on a full tmpfs killed the process with signal %d", WTERMSIG(st));
	assert_true(test_child_ok(st));
	rmdir(mnt);
}

/* ---- ring.mode cannot open the ring to everyone ---- */

static unsigned mode_of(const char *name, const char *leaf)
{
	char p[256];
	struct stat st;

	path_of(p, sizeof(p), name, leaf);
	assert_int_equal(lstat(p, &st), 0);
	return st.st_mode & 07777;
}

static void test_mode_is_clamped_and_only_the_group_gets_in(void **state)
{
	static const struct {
		uint32_t asked;
		unsigned dir, data, sock;
	} cases[] = {
	    {0600, 0700, 0600, 0600}, {0640, 0750, 0640, 0600 | 060}, {0644, 0750, 0640, 0660},
	    {0666, 0750, 0640, 0660}, {0604, 0700, 0600, 0600},       {0660, 0750, 0640, 0660},
	};
	char name[64], err[256] = "";
	struct uf_ring *r;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		test_ring_name(name, sizeof(name), "mode");
		r = make_ring_in_base(name, cases[i].asked, RING_GID);
		if (mode_of(name, "") != cases[i].dir || mode_of(name, "/data") != cases[i].data ||
		    mode_of(name, "/sock") != cases[i].sock)
			fail_msg("mode %04o gave dir %04o data %04o sock %04o", cases[i].asked,
			         mode_of(name, ""), mode_of(name, "/data"), mode_of(name, "/sock"));
		if (cases[i].asked == 0666) {
			/* outsiders cannot get in at all; group members read but cannot write */
			for (int in_group = 0; in_group < 2; in_group++) {
				pid_t pid = uf_test_fork();
				assert_true(pid >= 0);
				if (pid == 0) {
					uf_consumer_t *c;
					char p[256];
					int rc;
					drop_to_nobody(in_group);
					rc = attach_in_base(name, 0, &c, err, sizeof(err));
					if (!in_group) {
						CHILD_CHECK(rc == -EACCES);
						_exit(0);
					}
					CHILD_CHECK(rc == 0);
					path_of(p, sizeof(p), name, "/data");
					CHILD_CHECK(open(p, O_RDWR) < 0 && errno == EACCES);
					uf_consumer_detach(c);
					_exit(0);
				}
				assert_true(test_child_ok(test_wait_child(pid, 10000)));
			}
		}
		uf_ring_close(r);
		uf_ring_unlink(name, base_dir());
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_hostile_scribble_on_the_table_hurts_nobody),
	    cmocka_unit_test(test_hostile_cannot_shrink_anything_and_a_hole_hurts_nobody),
	    cmocka_unit_test(test_damaged_table_is_repaired_and_new_consumers_attach),
	    cmocka_unit_test(test_forged_registrations_are_freed_and_attach_works_again),
	    cmocka_unit_test(test_a_forged_tag_is_reported_clean),
	    cmocka_unit_test(test_unread_connections_do_not_lock_consumers_out),
	    cmocka_unit_test(test_squatted_foreign_and_linked_rings_are_refused),
	    cmocka_unit_test(test_lying_header_fields_are_refused),
	    cmocka_unit_test(test_full_file_system_at_create_is_a_clean_enospc),
	    cmocka_unit_test(test_mode_is_clamped_and_only_the_group_gets_in),
	};

	if (geteuid() != 0) {
		fprintf(stderr, "test_ring_hostile needs root (it plays other users): failing\n");
		return 1;
	}
	base_dir(); /* made by this process, before any child: they all share it */
	return cmocka_run_group_tests(tests, NULL, NULL);
}
