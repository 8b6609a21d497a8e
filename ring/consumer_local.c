/* libufconsumer's local back end: attach, read, wait, snapshot of a ring in shared memory on
 * this host (ring/consumer_local.h; the layout is ring/uf_ring_layout.h). Everything the
 * producer wrote is mapped PROT_READ; the only stores go to this consumer's slot in the
 * consumer table and to the table's sleeper count. The table is memory every consumer can
 * write: this library keeps its own copy of its size and slot, and the table is a sealed
 * memfd, so nothing another consumer does to it can make this one fault. */
#include "ring/consumer_local.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/uf_err.h"
#include "common/uf_symbol.h"
#include "common/uf_time.h"
#include "ring/book_each.h"
#include "ring/journal_file.h"
#include "ring/journal_reader.h"
#include "ring/ring_verify.h"

#define IDLE_RESTART_EVERY 65536u /* empty polls between restart checks (one stat()) */
#define SNAPSHOT_BUDGET_NS                                                                         \
	20000000ull               /* seqlock retries for this long before -EBUSY: a                \
	                           * producer preempted mid-write holds the lock odd */
#define SLEEP_SLICE_NS 50000000ll /* a sleeper re-checks close/restart at least this often */
#define ATTACH_TRIES   50         /* data/table generation mismatch retries (restart race) */
#define JOURNAL_GRACE_NS                                                                           \
	2000000000ull /* a position neither ring nor journal holds waits this long for the         \
	               * journal writer (it copies within milliseconds) before it is a lap */

/* The handle of this back end is its state (consumer_backend.h). */
static inline struct uf_consumer_local *local_of(struct uf_consumer *c)
{
	return (struct uf_consumer_local *)c;
}

static inline const struct uf_consumer_local *local_of_const(const struct uf_consumer *c)
{
	return (const struct uf_consumer_local *)c;
}

/* Opens the ring directory: a real directory (not a link), owned by an accepted uid, that
 * nobody but its owner may write (else anyone could have swapped the files in it). */
static int open_dir(struct uf_consumer_local *c, char *err, size_t errlen)
{
	struct stat st;
	int fd, rc;

	fd = open(c->dir_path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && errno == ENOTDIR && lstat(c->dir_path, &st) == 0 && S_ISLNK(st.st_mode))
		errno = ELOOP; /* a link to a directory: O_DIRECTORY sees the link first */
	if (fd < 0) {
		rc = -errno;
		if (errno == ENOENT)
			uf_err_set(err, errlen,
			           "ring %s: %s: no such ring (is the producer running?)", c->name,
			           c->dir_path);
		else if (errno == ELOOP)
			uf_err_set(
			    err, errlen,
			    "ring %s: %s is a symbolic link: refused (a ring directory is made by "
			    "its producer, never linked)",
			    c->name, c->dir_path);
		else if (errno == ENOTDIR)
			uf_err_set(
			    err, errlen,
			    "ring %s: %s is not a ring directory (a ring of an older release, or "
			    "something else): refused",
			    c->name, c->dir_path);
		else
			uf_err_set(err, errlen, "ring %s: %s: %s", c->name, c->dir_path,
			           strerror(errno));
		return rc;
	}
	if (fstat(fd, &st) < 0 || !uf_ring_verify_owner(st.st_uid, c->opt.owner)) {
		uf_err_set(
		    err, errlen,
		    "ring %s: %s is owned by uid %u, not by root, this user or the expected "
		    "owner: refused (squatted? set options.owner or UF_RING_OWNER if that uid "
		    "is your producer)",
		    c->name, c->dir_path, (unsigned)st.st_uid);
		close(fd);
		return -EPERM;
	}
	if (st.st_mode & 0022) {
		uf_err_set(err, errlen,
		           "ring %s: %s has mode %04o: group or others may write it: refused",
		           c->name, c->dir_path, (unsigned)(st.st_mode & 07777));
		close(fd);
		return -EPERM;
	}
	c->owner = st.st_uid;
	return fd;
}

/* Maps and validates the data file. Fills hdr/slots/image/sizes/identity of `c`. */
static int map_data(struct uf_consumer_local *c, char *err, size_t errlen)
{
	struct uf_ring_hdr h;
	struct uf_image_hdr ih;
	struct stat st;
	const char *why;
	void *p;
	int fd, dfd, rc;

	dfd = open_dir(c, err, errlen);
	if (dfd < 0)
		return dfd;
	fd = openat(dfd, UF_RING_DATA_NAME, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	close(dfd);
	if (fd < 0) {
		rc = -errno;
		uf_err_set(err, errlen, "ring %s: %s: %s", c->name, c->data_path,
		           errno == ENOENT  ? "no such ring (is the producer running?)"
		           : errno == ELOOP ? "a symbolic link: refused"
		                            : strerror(errno));
		return rc;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != c->owner ||
	    (st.st_mode & 0022)) {
		uf_err_set(err, errlen,
		           "ring %s: %s is not a regular file of the directory's owner (uid %u) "
		           "writable only by it (uid %u, mode %04o): refused",
		           c->name, c->data_path, (unsigned)c->owner, (unsigned)st.st_uid,
		           (unsigned)(st.st_mode & 07777));
		rc = -EPERM;
		goto out_close;
	}
	if (st.st_size < (off_t)sizeof(h) || pread(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h)) {
		uf_err_set(err, errlen, "ring %s: %s is too short to be a ring", c->name,
		           c->data_path);
		rc = -EPROTO;
		goto out_close;
	}
	if (h.magic != UF_RING_MAGIC) {
		uf_err_set(err, errlen, "ring %s: %s is not a uringfeed ring (bad magic)", c->name,
		           c->data_path);
		rc = -EPROTO;
		goto out_close;
	}
	if (h.layout_version != UF_RING_LAYOUT_VERSION) {
		uf_err_set(err, errlen,
		           "ring %s: layout version %u, but this libufconsumer reads version %u: "
		           "use the libufconsumer of the producer's release",
		           c->name, h.layout_version, UF_RING_LAYOUT_VERSION);
		rc = -EPROTO;
		goto out_close;
	}
	if (h.record_size != sizeof(struct uf_record) || h.record_version != UF_RECORD_VERSION) {
		uf_err_set(
		    err, errlen,
		    "ring %s: records are %u bytes version %u, this consumer expects %zu bytes "
		    "version %u",
		    c->name, h.record_size, h.record_version, sizeof(struct uf_record),
		    UF_RECORD_VERSION);
		rc = -EPROTO;
		goto out_close;
	}
	why = uf_ring_verify_header(&h, (uint64_t)st.st_size, c->name);
	if (!why) {
		if (pread(fd, &ih, sizeof(ih), (off_t)h.image_off) != (ssize_t)sizeof(ih))
			why = "book image header unreadable";
		else
			why = uf_ring_verify_image(&ih, h.file_size - h.image_off);
	}
	if (why) {
		uf_err_set(err, errlen,
		           "ring %s: %s: inconsistent header: %s (capacity %llu, file_size %llu, "
		           "size on disk %lld): refused",
		           c->name, c->data_path, why, (unsigned long long)h.capacity,
		           (unsigned long long)h.file_size, (long long)st.st_size);
		rc = -EPROTO;
		goto out_close;
	}
	/* PROT_READ: a stray write from this process faults instead of corrupting the ring.
	 * Nobody but the owner may write (or truncate) the file: checked above. */
	p = mmap(NULL, h.file_size, PROT_READ, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		rc = -errno;
		uf_err_set(err, errlen, "ring %s: mmap: %s", c->name, strerror(errno));
		goto out_close;
	}
	close(fd);
	c->hdr = p;
	c->slots = (const struct uf_record *)((const char *)p + h.ring_off);
	c->image = (const struct uf_image_hdr *)((const char *)p + h.image_off);
	c->data_size = h.file_size;
	c->capacity = h.capacity;
	c->first_seq = h.first_seq;
	c->mask = h.capacity - 1;
	c->generation = h.generation;
	c->depth = ih.depth;
	c->max_instruments = ih.max_instruments;
	c->dev = st.st_dev;
	c->ino = st.st_ino;
	return 0;

out_close:
	close(fd);
	return rc;
}

/* A private, zeroed one-slot table: a consumer of a closed ring (or one whose producer is
 * gone) reads without registering; its slot stores land here. */
static int local_table(struct uf_consumer_local *c)
{
	size_t size = sizeof(struct uf_ring_ctable) + sizeof(struct uf_ring_cslot);
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return -errno;
	c->ct = p;
	c->ct_size = size;
	c->nslots = 1;
	c->registered = 0;
	return 0;
}

static int producer_gone(const struct uf_consumer_local *c)
{
	uint64_t start = 0;

	if (uf_load_acquire_u32(&c->hdr->state) == UF_RING_STATE_CLOSED)
		return 1;
	return uf_ring_proc_stat((pid_t)c->hdr->producer_pid, &start, NULL) < 0 ||
	       (c->hdr->producer_start != 0 && start != c->hdr->producer_start);
}

/* Gets the consumer table from the producer and checks it: sealed against shrinking and
 * growing (else another consumer could make our mapping SIGBUS), of the size it claims, of
 * the mapped data generation. */
static int map_table(struct uf_consumer_local *c, char *err, size_t errlen)
{
	struct uf_ring_hello hello;
	struct stat st;
	int fd, rc, seals;
	void *p;

	fd = uf_ring_table_fetch(c->dir, c->name, c->owner, &hello, err, errlen);
	if (fd == -ECONNREFUSED || fd == -ENOENT) {
		if (producer_gone(c))
			return local_table(c);
		uf_err_set(err, errlen,
		           "ring %s: %s/sock does not answer yet (producer restarting?)", c->name,
		           c->dir_path);
		return -ESTALE;
	}
	if (fd < 0)
		return fd;
	seals = fcntl(fd, F_GET_SEALS);
	if (seals < 0 || (seals & (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)) !=
	                     (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)) {
		uf_err_set(err, errlen,
		           "ring %s: the consumer table is not sealed against resizing: "
		           "refused",
		           c->name);
		rc = -EPROTO;
		goto out_close;
	}
	if (hello.magic != UF_RING_CT_MAGIC || hello.layout_version != UF_RING_LAYOUT_VERSION ||
	    hello.nslots < 1 || hello.nslots > UF_RING_MAX_CONSUMERS || fstat(fd, &st) < 0 ||
	    (uint64_t)st.st_size != hello.table_size ||
	    hello.table_size < sizeof(struct uf_ring_ctable) +
	                           (uint64_t)hello.nslots * sizeof(struct uf_ring_cslot)) {
		uf_err_set(err, errlen, "ring %s: consumer table is not layout version %u", c->name,
		           UF_RING_LAYOUT_VERSION);
		rc = -EPROTO;
		goto out_close;
	}
	if (hello.generation != c->generation) {
		uf_err_set(err, errlen,
		           "ring %s: producer is restarting (table generation differs)", c->name);
		rc = -ESTALE;
		goto out_close;
	}
	p = mmap(NULL, hello.table_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		rc = -errno;
		uf_err_set(err, errlen, "ring %s: mmap table: %s", c->name, strerror(errno));
		goto out_close;
	}
	close(fd);
	c->ct = p;
	c->ct_size = hello.table_size;
	c->nslots = hello.nslots;
	c->registered = 1;
	return 0;

out_close:
	close(fd);
	return rc;
}

static int claim_slot(struct uf_consumer_local *c, char *err, size_t errlen)
{
	struct uf_ring_cslot *slots = (struct uf_ring_cslot *)(c->ct + 1);
	uint32_t me = (uint32_t)getpid();
	uint64_t start = 0;

	uf_ring_proc_stat(getpid(), &start, NULL);
	for (uint32_t i = 0; i < c->nslots; i++) { /* our copy: the table's field is input */
		uint32_t expect = 0;
		if (uf_load_relaxed_u32(&slots[i].pid) != 0)
			continue;
		if (!uf_cas_u32(&slots[i].pid, &expect, me))
			continue;
		c->slot = &slots[i];
		c->slot->start_time = start;
		c->slot->attach_ns = uf_now_realtime_ns();
		c->slot->last_seen_ns = c->slot->attach_ns;
		c->slot->received = 0;
		c->slot->lost = 0;
		c->slot->laps = 0;
		uf_store_relaxed_u32(&c->slot->flags, 0);
		memcpy(c->slot->tag, c->tag, sizeof(c->slot->tag));
		return 0;
	}
	uf_err_set(err, errlen,
	           "ring %s: all %u consumer slots are in use (the producer reaps dead consumers; "
	           "raise max_consumers if they are all alive)",
	           c->name, c->nslots);
	return -EUSERS;
}

static void unmap_all(struct uf_consumer_local *c)
{
	if (c->slot) {
		/* slot contents first, then the release that frees it */
		uf_store_release_u32(&c->slot->pid, 0);
		c->slot = NULL;
	}
	if (c->ct)
		munmap(c->ct, c->ct_size);
	if (c->hdr)
		munmap((void *)c->hdr, c->data_size);
	c->ct = NULL;
	c->hdr = NULL;
}

/* The journal directory of the ring: $UF_JOURNAL_DIR, else what the producer wrote in
 * uf.NAME/journal (a file of the ring's owner that nobody else may write, like the data). */
static int journal_dir(const struct uf_consumer_local *c, char *out, size_t len)
{
	const char *env = getenv("UF_JOURNAL_DIR");
	char path[320];
	struct stat st;
	ssize_t n;
	int fd;

	if (env && *env) {
		if (snprintf(out, len, "%s", env) >= (int)len)
			return -ENAMETOOLONG;
		return 0;
	}
	if (snprintf(path, sizeof(path), "%s/%s", c->dir_path, UF_JOURNAL_POINTER) >=
	    (int)sizeof(path))
		return -ENAMETOOLONG;
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -ENODATA; /* the producer keeps no journal */
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != c->owner ||
	    (st.st_mode & 0022)) {
		close(fd);
		return -EPERM;
	}
	n = read(fd, out, len - 1);
	close(fd);
	if (n <= 0)
		return -ENODATA;
	out[n] = 0;
	out[strcspn(out, "\n")] = 0;
	return out[0] == '/' ? 0 : -ENODATA;
}

/* Opens the journal of the mapped generation (once). -ENODATA when there is none. */
static int journal_open(struct uf_consumer_local *c, char *err, size_t errlen)
{
	char dir[UF_JOURNAL_PATH_MAX];
	int rc;

	if (c->journal)
		return 0;
	rc = journal_dir(c, dir, sizeof(dir));
	if (rc == 0)
		rc = uf_journal_reader_open(dir, c->name, c->generation, &c->journal);
	if (rc == -ENOENT)
		rc = -ENODATA;
	if (rc < 0)
		uf_err_set(err, errlen,
		           "ring %s: no journal to read from (%s): configure ring.journal in the "
		           "producer, or set UF_JOURNAL_DIR",
		           c->name, rc == -ENODATA ? "none for this generation" : strerror(-rc));
	return rc;
}

static uint64_t start_position(const struct uf_consumer_local *c)
{
	uint64_t tail = uf_load_acquire_u64(&c->hdr->tail);
	uint64_t claim = uf_load_relaxed_u64(&c->hdr->claim);

	if (c->opt.start == UF_CONSUMER_START_OLDEST) {
		uint64_t oldest = uf_ring_resume_seq(claim, c->capacity);
		if (oldest < c->first_seq)
			oldest = c->first_seq; /* before it: the journal's, not the ring's */
		return oldest < tail ? oldest : tail;
	}
	if (c->opt.start == UF_CONSUMER_START_JOURNAL && c->journal) {
		uint64_t first =
		    uf_journal_reader_first(c->journal, uf_journal_day(uf_now_realtime_ns()));
		return first < tail ? first : tail;
	}
	return tail;
}

/* Maps a generation of the ring into `c` (whose name/dir/opt are set) and registers. */
static int attach_maps(struct uf_consumer_local *c, char *err, size_t errlen)
{
	int rc = -ESTALE;

	for (int tries = 0; tries < ATTACH_TRIES; tries++) {
		rc = map_data(c, err, errlen);
		if (rc < 0)
			return rc;
		rc = map_table(c, err, errlen);
		if (rc == 0)
			break;
		munmap((void *)c->hdr, c->data_size);
		c->hdr = NULL;
		if (rc != -ESTALE)
			return rc;
		usleep(10000); /* the producer renames the second file within microseconds */
	}
	if (rc < 0)
		return rc;
	if (c->opt.start == UF_CONSUMER_START_JOURNAL) {
		rc = journal_open(c, err, errlen);
		if (rc < 0) {
			unmap_all(c);
			return rc;
		}
	}
	rc = claim_slot(c, err, errlen);
	if (rc < 0) {
		uf_journal_reader_close(c->journal);
		c->journal = NULL;
		unmap_all(c);
		return rc;
	}
	c->pos = start_position(c);
	uf_store_relaxed_u64(&c->slot->position, c->pos);
	c->stale = 0;
	c->idle = 0;
	return 0;
}

static int local_attach(const char *name, const struct uf_consumer_options *opt,
                        struct uf_consumer **out, char *err, size_t errlen)
{
	struct uf_consumer_local *c;
	const char *dir;
	int rc;

	if (uf_ring_name_check(name) < 0) {
		uf_err_set(err, errlen,
		           "ring name \"%s\" is not valid (1-31 bytes of A-Za-z0-9_.-)",
		           name ? name : "(null)");
		return -EINVAL;
	}
	if (posix_memalign((void **)&c, UF_CACHELINE, sizeof(*c)) != 0) {
		uf_err_set(err, errlen, "ring %s: out of memory", name);
		return -ENOMEM;
	}
	memset(c, 0, sizeof(*c)); /* line-aligned: the read path's fields, consumer_local.h */
	c->handle.ops = &uf_consumer_local_ops;
	c->opt = *opt;
	if (c->opt.tag)
		snprintf(c->tag, sizeof(c->tag), "%s", c->opt.tag);
	c->opt.tag = NULL;
	dir = uf_ring_dir_pick(c->opt.dir);
	c->opt.dir = NULL;
	snprintf(c->dir, sizeof(c->dir), "%s", dir);
	snprintf(c->name, sizeof(c->name), "%s", name);
	if (strlen(dir) >= sizeof(c->dir) ||
	    uf_ring_path(c->dir_path, sizeof(c->dir_path), c->dir, name, UF_RING_FILE_DIR) < 0 ||
	    uf_ring_path(c->data_path, sizeof(c->data_path), c->dir, name, UF_RING_FILE_DATA) < 0) {
		uf_err_set(err, errlen, "ring %s: directory path too long", name);
		free(c);
		return -ENAMETOOLONG;
	}
	rc = attach_maps(c, err, errlen);
	if (rc < 0) {
		free(c);
		return rc;
	}
	*out = &c->handle;
	return 0;
}

static void local_detach(struct uf_consumer *h)
{
	struct uf_consumer_local *c = local_of(h);

	unmap_all(c);
	uf_journal_reader_close(c->journal);
	free(c);
}

static int local_reattach(struct uf_consumer *h, char *err, size_t errlen)
{
	struct uf_consumer_local *c = local_of(h);
	struct uf_consumer_local fresh = *c;
	int rc;

	fresh.hdr = NULL;
	fresh.ct = NULL;
	fresh.slot = NULL;
	fresh.journal = NULL; /* the new generation's own, when it asks for one */
	rc = attach_maps(&fresh, err, errlen);
	if (rc < 0)
		return rc;
	unmap_all(c);
	uf_journal_reader_close(c->journal);
	fresh.received = 0;
	fresh.lost = 0;
	fresh.laps = 0;
	memset(&fresh.lap, 0, sizeof(fresh.lap));
	*c = fresh;
	return 0;
}

/* Whether the name now points at another file (producer restarted). One stat(): cold. */
static int restarted(struct uf_consumer_local *c)
{
	struct stat st;

	if (c->stale)
		return 1;
	if (stat(c->data_path, &st) < 0)
		return 0; /* removed: nothing to re-attach to (yet) */
	c->stale = st.st_ino != c->ino || st.st_dev != c->dev;
	return c->stale;
}

/* Nothing to read at c->pos: closed, restarted or just empty. */
UF_COLD int uf_consumer_local_empty(struct uf_consumer_local *c)
{
	uint32_t idle = ++c->idle;

	if (c->stale)
		return -ESTALE; /* seen by uf_consumer_wait already */
	/* the state store is released after the final tail: re-read the tail after it */
	if (uf_load_acquire_u32(&c->hdr->state) == UF_RING_STATE_CLOSED) {
		if (uf_load_acquire_u64(&c->hdr->tail) > c->pos)
			return -EAGAIN; /* records remain: the caller will come back */
		return restarted(c) ? -ESTALE : -EPIPE;
	}
	if ((idle % UF_CONSUMER_IDLE_SEEN_EVERY) == 0)
		uf_store_relaxed_u64(&c->slot->last_seen_ns, uf_now_realtime_coarse_ns());
	if ((idle % IDLE_RESTART_EVERY) == 0 && restarted(c))
		return -ESTALE;
	return -EAGAIN;
}

static int lose(struct uf_consumer_local *c, uint64_t from, uint64_t resume);

UF_COLD int uf_consumer_local_lapped(struct uf_consumer_local *c, uint64_t from)
{
	uint64_t claim = uf_load_acquire_u64(&c->hdr->claim);
	uint64_t resume = uf_ring_resume_seq(claim, c->capacity);

	if (resume < c->first_seq)
		resume = c->first_seq; /* the ring holds nothing before its first sequence */
	if (resume <= from)
		resume = from + 1; /* cannot happen with claim - from > capacity; stay monotonic */
	return lose(c, from, resume);
}

/* Records [from, resume) are lost: the lap the caller reports as -EOVERFLOW. */
static int lose(struct uf_consumer_local *c, uint64_t from, uint64_t resume)
{
	c->lap.from_seq = from;
	c->lap.resume_seq = resume;
	c->lap.lost = resume - from;
	c->lost += resume - from;
	c->laps++;
	c->pos = resume;
	uf_store_relaxed_u64(&c->slot->position, resume);
	uf_store_relaxed_u64(&c->slot->lost, c->lost);
	uf_store_relaxed_u64(&c->slot->laps, c->laps);
	return -EOVERFLOW;
}

UF_COLD int uf_consumer_local_behind(struct uf_consumer_local *c, struct uf_record *recs,
                                     size_t max, uint64_t *first_seq)
{
	uint64_t p = c->pos, next = 0;
	int rc;

	if (!c->journal)
		return uf_consumer_local_lapped(c, p);
	rc = uf_journal_reader_read(c->journal, p, recs, max, &next);
	if (rc > 0) {
		if (first_seq)
			*first_seq = p;
		c->pos = p + (uint64_t)rc;
		c->received += (uint64_t)rc;
		c->idle = 0;
		c->jwait_since_ns = 0;
		uf_store_relaxed_u64(&c->slot->position, c->pos);
		uf_store_relaxed_u64(&c->slot->received, c->received);
		return rc;
	}
	if (rc == -EOVERFLOW && next > p) /* a hole the journal names: exactly those are lost */
		return lose(c, p, next);
	if (rc == 0 || rc == -EBADMSG) {
		/* not written yet (or the last entry of a file being written, caught half copied):
		 * the writer copies within milliseconds; wait for it a while, then the records are
		 * lost like any lap (a file torn for good: its writer is gone) */
		uint64_t now = uf_now_mono_ns();
		if (c->jwait_seq != p || c->jwait_since_ns == 0) {
			c->jwait_seq = p;
			c->jwait_since_ns = now;
		}
		if (now - c->jwait_since_ns < JOURNAL_GRACE_NS)
			return -EAGAIN;
	}
	c->jwait_since_ns = 0;
	return uf_consumer_local_lapped(c, p); /* torn, unreadable, or never written */
}

/* Whether a read would return something other than -EAGAIN (cheap part). */
static inline int has_news(const struct uf_consumer_local *c)
{
	return uf_load_acquire_u64(&c->hdr->tail) != c->pos ||
	       uf_load_acquire_u32(&c->hdr->state) == UF_RING_STATE_CLOSED;
}

/* Spins options.spin_ns, then sleeps on the ring's futex word in slices (SLEEP_SLICE_NS) so
 * that a restart is noticed even when no producer is left to wake us. */
static int local_wait(struct uf_consumer *h, int64_t timeout_ns)
{
	struct uf_consumer_local *c = local_of(h);
	uint64_t start = uf_now_mono_ns(), now = start;
	uint64_t deadline = timeout_ns < 0 ? UINT64_MAX : start + (uint64_t)timeout_ns;
	uint64_t spin_end = start + c->opt.spin_ns;

	/* spin phase: costs a CPU, saves the futex round trip (several microseconds) */
	for (uint32_t i = 0;; i++) {
		if (has_news(c))
			return 0;
		if ((i & 63) == 63) {
			now = uf_now_mono_ns();
			if (now >= spin_end || now >= deadline)
				break;
		}
		uf_cpu_relax();
	}
	uf_store_relaxed_u64(&c->slot->last_seen_ns, uf_now_realtime_coarse_ns());
	for (;;) {
		uint32_t word;
		int64_t slice;
		int rc;

		if (now >= deadline)
			return -ETIMEDOUT;
		if (restarted(c))
			return 0;
		slice = (int64_t)(deadline - now);
		if (slice > SLEEP_SLICE_NS)
			slice = SLEEP_SLICE_NS;
		word = uf_load_acquire_u32(&c->hdr->wake);
		uf_store_relaxed_u32(&c->slot->flags, 1);
		uf_fetch_add_u32(&c->ct->sleepers, 1);
		uf_fence_seq_cst(); /* sleepers increment before the tail load: pairs with the
		                     * producer's tail store + fence + sleepers load */
		if (has_news(c)) {
			uf_fetch_add_u32(&c->ct->sleepers, (uint32_t)-1);
			uf_store_relaxed_u32(&c->slot->flags, 0);
			return 0;
		}
		rc = uf_ring_futex_wait(&c->hdr->wake, word, slice);
		uf_fetch_add_u32(&c->ct->sleepers, (uint32_t)-1);
		uf_store_relaxed_u32(&c->slot->flags, 0);
		uf_store_relaxed_u64(&c->slot->last_seen_ns, uf_now_realtime_coarse_ns());
		if (rc == -EINTR)
			return -EINTR;
		if (has_news(c))
			return 0;
		now = uf_now_mono_ns();
	}
}

static void local_last_lap(const struct uf_consumer *h, struct uf_consumer_lap *lap)
{
	*lap = local_of_const(h)->lap;
}

static int local_seek(struct uf_consumer *h, uint64_t seq)
{
	struct uf_consumer_local *c = local_of(h);
	uint64_t tail = uf_load_acquire_u64(&c->hdr->tail);
	uint64_t claim = uf_load_relaxed_u64(&c->hdr->claim);
	uint64_t oldest = claim > c->capacity ? claim - c->capacity : 0;

	if (oldest < c->first_seq)
		oldest = c->first_seq; /* the slots never held what came before */

	if (seq > tail)
		return -ERANGE;
	if (seq < oldest) {
		/* before the ring: the journal holds it, when the producer keeps one */
		if (journal_open(c, NULL, 0) < 0)
			return -ERANGE;
		if (seq < uf_journal_reader_first(c->journal, 0))
			return -ENODATA; /* before the journal's start: nobody holds it */
	}
	c->pos = seq;
	uf_store_relaxed_u64(&c->slot->position, seq);
	return 0;
}

/* Cold: reads /proc for producer_alive. */
static void local_get_info(const struct uf_consumer *h, struct uf_consumer_info *info)
{
	const struct uf_consumer_local *c = local_of_const(h);

	memset(info, 0, sizeof(*info));
	info->generation = c->generation;
	info->capacity = c->capacity;
	info->position = c->pos;
	info->tail = uf_load_acquire_u64(&c->hdr->tail);
	info->received = c->received;
	info->lost = c->lost;
	info->laps = c->laps;
	info->created_ns = c->hdr->created_ns;
	info->producer_pid = c->hdr->producer_pid;
	info->numa_node = c->hdr->numa_node;
	info->depth = c->depth;
	info->max_instruments = c->max_instruments;
	info->closed = uf_load_acquire_u32(&c->hdr->state) == UF_RING_STATE_CLOSED;
	{
		uint64_t start = 0;
		info->producer_alive =
		    uf_ring_proc_stat((pid_t)c->hdr->producer_pid, &start, NULL) == 0 &&
		    (c->hdr->producer_start == 0 || start == c->hdr->producer_start);
	}
	info->hugepages = (int)c->hdr->hugepages;
}

_Static_assert(UF_BOOK_MAX_STATUS >= UF_RING_STATUS_SLOTS, "a snapshot holds every status slot");

/* Copies one entry under its sequence lock. */
static int copy_entry(const struct uf_consumer_local *c, uint32_t id, struct uf_book_snapshot *s)
{
	const struct uf_image_entry *e;
	const struct uf_level *lv;
	uint32_t depth = c->depth;

	if (id >= c->max_instruments)
		return -ERANGE;
	e = uf_image_entry_at(c->image, id);
	lv = uf_image_levels((struct uf_image_entry *)e);
	uint64_t give_up = 0;
	/* read before the entry: every record < commit is already in the entry we copy next */
	uint64_t commit = uf_load_acquire_u64(&c->image->commit_seq);

	for (uint32_t tries = 0;; tries++) {
		uint64_t l1 = uf_load_acquire_u64(&e->lock); /* fields are read after the lock */
		uint32_t nb, na, ns = 0;

		if ((tries & 255) == 255) { /* the clock only once in a while */
			uint64_t now = uf_now_mono_ns();
			if (give_up == 0)
				give_up = now + SNAPSHOT_BUDGET_NS;
			else if (now > give_up)
				return -EBUSY;
		}
		if (l1 & 1) {
			uf_cpu_relax();
			continue;
		}
		if (!e->present) {
			uf_fence_acquire();
			if (uf_load_relaxed_u64(&e->lock) == l1)
				return -ENOENT;
			continue;
		}
		s->instrument = id;
		s->flags = e->flags;
		s->stamp = e->stamp > commit ? e->stamp : commit;
		uf_symbol_unpad(s->symbol, &e->symbol);
		s->round_lot = e->round_lot;
		s->category = e->category;
		nb = e->nbid;
		na = e->nask;
		nb = nb > depth ? depth : nb;
		na = na > depth ? depth : na;
		s->nbid = nb;
		s->nask = na;
		memcpy(s->bid, lv, nb * sizeof(*lv));
		memcpy(s->ask, lv + depth, na * sizeof(*lv));
		s->last_price = e->last_price;
		s->last_shares = e->last_shares;
		s->last_exch_ts = e->last_exch_ts;
		s->last_rx_ts = e->last_rx_ts;
		s->volume = e->volume;
		s->trades = e->trades;
		s->update_rx_ts = e->update_rx_ts;
		/* ascending code; a slot that does not hold its own code is not one */
		for (uint32_t i = 0; i < UF_RING_STATUS_SLOTS; i++) {
			if (uf_status_slot(e->status[i].code) != i)
				continue;
			s->status[ns].code = e->status[i].code;
			s->status[ns].reserved = 0;
			s->status[ns].price = e->status[i].price;
			s->status[ns].shares = e->status[i].shares;
			s->status[ns].exch_ts = e->status[i].exch_ts;
			ns++;
		}
		s->nstatus = ns;
		s->reserved = 0;
		uf_fence_acquire(); /* every copy above completes before the lock is re-read */
		if (uf_load_relaxed_u64(&e->lock) == l1)
			return 0;
	}
}

static int local_snapshot(struct uf_consumer *h, uint32_t id, struct uf_book_snapshot *snap)
{
	return copy_entry(local_of(h), id, snap);
}

static uint64_t local_image_seq(const struct uf_consumer *h)
{
	/* entries read after it reflect it */
	return uf_load_acquire_u64(&local_of_const(h)->image->commit_seq);
}

/* uf_book_each()'s read of one entry of the local image. */
static int get_entry(void *src, uint32_t id, struct uf_book_snapshot *s)
{
	const struct uf_consumer_local *c = src;
	const struct uf_image_entry *e = uf_image_entry_at(c->image, id);

	if (!uf_load_acquire_u32(&e->present))
		return -ENOENT; /* never written: skip without the lock dance */
	return copy_entry(c, id, s);
}

static int local_snapshot_all(struct uf_consumer *h,
                              int (*fn)(const struct uf_book_snapshot *, void *), void *arg)
{
	struct uf_consumer_local *c = local_of(h);

	return uf_book_each(c->max_instruments, get_entry, c, fn, arg);
}

/* O(instruments): a scan of the image's directory. */
static int local_lookup(struct uf_consumer *h, const char *symbol, uint32_t *id)
{
	const struct uf_consumer_local *c = local_of(h);
	char want[9], have[9];
	uint64_t packed;

	if (!symbol || strlen(symbol) > 8)
		return -ENOENT;
	uf_symbol_pad(want, symbol);
	memcpy(&packed, want, 8);
	for (uint32_t i = 0; i < c->max_instruments; i++) {
		const struct uf_image_entry *e = uf_image_entry_at(c->image, i);
		/* a torn read of 8 bytes is impossible (one aligned load); re-check below */
		if (uf_load_relaxed_u64(&e->symbol) != packed)
			continue;
		uf_symbol_unpad(have, &packed);
		if (strcmp(have, symbol) == 0) {
			*id = i;
			return 0;
		}
	}
	return -ENOENT;
}

/* uf_consumer_local_read is inline in consumer_local.h: consumer.c calls it directly; this
 * entry serves callers that dispatch through the table. */
static int local_read(struct uf_consumer *c, struct uf_record *recs, size_t max,
                      uint64_t *first_seq)
{
	return uf_consumer_local_read(c, recs, max, first_seq);
}

const struct uf_consumer_ops uf_consumer_local_ops = {
    .name = "local",
    .attach = local_attach,
    .detach = local_detach,
    .reattach = local_reattach,
    .read = local_read,
    .wait = local_wait,
    .last_lap = local_last_lap,
    .seek = local_seek,
    .get_info = local_get_info,
    .snapshot = local_snapshot,
    .image_seq = local_image_seq,
    .snapshot_all = local_snapshot_all,
    .lookup = local_lookup,
};
