/* Producer side of the ring: create (files, NUMA, huge pages, permissions, generation),
 * close, consumer monitoring and reaping, wake-up. The hot path is inline in uf_ring.h. */
#include "ring/uf_ring.h"

#include <errno.h>
#include <fcntl.h>
#include <numa.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "common/uf_err.h"
#include "common/uf_label.h"
#include "common/uf_smaps.h"
#include "common/uf_time.h"
#include "ring/ctable.h"
#include "ring/journal_file.h"
#include "ring/ring_util.h"

#define UF_RING_HUGE_ALIGN (2ull << 20)
#define UF_HUGETLBFS_MAGIC 0x958458f6 /* linux/magic.h */
#define UF_RING_PAGE       4096ull

void uf_ring_options_init(struct uf_ring_options *opt)
{
	memset(opt, 0, sizeof(*opt));
	opt->capacity = UF_RING_DEFAULT_CAPACITY;
	opt->mode = 0600;
	opt->gid = -1;
	opt->numa_node = UF_RING_NUMA_AUTO;
	opt->hugepages = 1;
	opt->max_consumers = UF_RING_DEFAULT_CONSUMERS;
	opt->depth = UF_RING_DEFAULT_DEPTH;
	opt->max_instruments = UF_RING_DEFAULT_INSTRUMENTS;
}

static uint64_t align_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) & ~(a - 1);
}

/* Huge page size when `dir` is a hugetlbfs mount (explicit huge pages), else 0. */
static uint64_t hugetlbfs_page(const char *dir)
{
	struct statfs sf;

	if (statfs(dir, &sf) < 0 || (unsigned long)sf.f_type != UF_HUGETLBFS_MAGIC)
		return 0;
	return (uint64_t)sf.f_bsize;
}

/* Reads the header of the ring currently in the directory `dfd`. Returns 0, or -ENOENT when
 * there is none (or it is not a ring). */
static int previous_header(int dfd, struct uf_ring_hdr *h)
{
	int fd = openat(dfd, UF_RING_DATA_NAME, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -ENOENT;
	n = pread(fd, h, sizeof(*h), 0);
	close(fd);
	if (n != (ssize_t)sizeof(*h) || h->magic != UF_RING_MAGIC)
		return -ENOENT;
	return 0;
}

/* Whether another live process still produces into the ring `h` describes (two daemons
 * configured with the same ring name): replacing it would silently cut its consumers off. */
static int owned_by_other_producer(const struct uf_ring_hdr *h)
{
	uint64_t start = 0;

	if (h->state != UF_RING_STATE_OPEN || h->producer_pid == (int32_t)getpid())
		return 0;
	if (uf_ring_proc_stat((pid_t)h->producer_pid, &start, NULL) < 0)
		return 0;
	return h->producer_start == 0 || start == h->producer_start;
}

/* Removes the two files a ring of the old layout (before the private directory) left at
 * `path` and `path`.cons, when they are ours. */
static void unlink_legacy(const char *path)
{
	char cons[300];
	struct stat st;

	if (lstat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid())
		unlink(path);
	snprintf(cons, sizeof(cons), "%s.cons", path);
	if (lstat(cons, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid())
		unlink(cons);
}

/* Opens the ring's private directory `path`, refusing one this user does not own, a symbolic
 * link or a non-directory (a squatter in a shared /dev/shm). When it does not exist, creates
 * and opens `tmp` instead and sets *fresh: the caller renames it to `path` once complete, so
 * the name appears with the ring in it. Returns the directory fd or -errno. */
static int open_ring_dir(const char *path, const char *tmp, const char *name, int *fresh, char *err,
                         size_t errlen)
{
	struct stat st;
	int fd, rc;

	*fresh = 0;
	unlink_legacy(path);
	fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT) {
		/* leftovers of a crashed start with our pid */
		char leaf[400];
		snprintf(leaf, sizeof(leaf), "%s/%s.tmp%d", tmp, UF_RING_DATA_NAME, (int)getpid());
		unlink(leaf);
		snprintf(leaf, sizeof(leaf), "%s/%s.tmp%d", tmp, UF_RING_SOCK_NAME, (int)getpid());
		unlink(leaf);
		rmdir(tmp);
		if (mkdir(tmp, 0700) < 0) {
			rc = -errno;
			uf_err_set(err, errlen, "ring %s: create directory %s: %s", name, tmp,
			           strerror(errno));
			return rc;
		}
		fd = open(tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0) {
			rc = -errno;
			rmdir(tmp);
			uf_err_set(err, errlen, "ring %s: open directory %s: %s", name, tmp,
			           strerror(-rc));
			return rc;
		}
		*fresh = 1;
		return fd;
	}
	if (fd < 0 && errno == ENOTDIR && lstat(path, &st) == 0 && S_ISLNK(st.st_mode))
		errno = ELOOP; /* a link to a directory: O_DIRECTORY sees the link first */
	if (fd < 0) {
		rc = -errno;
		if (errno == ELOOP)
			uf_err_set(
			    err, errlen,
			    "ring %s: %s is a symbolic link: refusing it (squatted? remove it)",
			    name, path);
		else if (errno == ENOTDIR)
			uf_err_set(
			    err, errlen,
			    "ring %s: %s exists and is not a directory: refusing it (remove it)",
			    name, path);
		else
			uf_err_set(err, errlen, "ring %s: open directory %s: %s", name, path,
			           strerror(errno));
		return rc;
	}
	if (fstat(fd, &st) < 0 || st.st_uid != geteuid()) {
		uf_err_set(
		    err, errlen,
		    "ring %s: %s is owned by uid %u, not by this producer (uid %u): refusing a "
		    "squatted ring directory (remove it)",
		    name, path, (unsigned)st.st_uid, (unsigned)geteuid());
		close(fd);
		return -EPERM;
	}
	return fd;
}

/* Creates `leaf` in the ring directory `dfd` (path `dpath`) exclusively with exactly `mode`
 * and `size` allocated bytes, maps it read-write, binds it to `node` and touches every page
 * there. On failure nothing is left in the directory. */
static int make_data(int dfd, const char *dpath, const char *leaf, uint32_t mode, int64_t gid,
                     uint64_t size, int node, int huge, void **map, char *err, size_t errlen)
{
	void *p;
	int fd, rc;

	fd = openat(dfd, leaf, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		rc = -errno;
		uf_err_set(err, errlen, "ring: create %s/%s: %s", dpath, leaf, strerror(errno));
		return rc;
	}
	if (gid >= 0 && fchown(fd, (uid_t)-1, (gid_t)gid) < 0) {
		rc = -errno;
		uf_err_set(err, errlen, "ring: chown %s/%s to gid %lld: %s", dpath, leaf,
		           (long long)gid, strerror(errno));
		goto out_unlink;
	}
	if (fchmod(fd, mode) < 0) {
		rc = -errno;
		uf_err_set(err, errlen, "ring: chmod %s/%s: %s", dpath, leaf, strerror(errno));
		goto out_unlink;
	}
	rc = uf_ring_allocate(fd, size);
	if (rc < 0) {
		uf_err_set(err, errlen, "ring: allocate %s/%s (%llu bytes): %s%s", dpath, leaf,
		           (unsigned long long)size, strerror(-rc),
		           rc == -ENOSPC ? " (file system full: free space or lower capacity)"
		                         : "");
		goto out_unlink;
	}
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		rc = -errno;
		uf_err_set(err, errlen, "ring: mmap %s/%s: %s", dpath, leaf, strerror(errno));
		goto out_unlink;
	}
	close(fd);
	if (huge)
		madvise(p, size, MADV_HUGEPAGE); /* best effort: the kernel decides */
	if (node >= 0)
		numa_tonode_memory(p, size, node); /* before the first touch places the pages */
	memset(p, 0, size); /* fault everything in now, on the node, not on the hot path */
	*map = p;
	return 0;

out_unlink:
	unlinkat(dfd, leaf, 0);
	close(fd);
	return rc;
}

static void fill_image(struct uf_image_hdr *ih, uint32_t depth, uint32_t max_instruments)
{
	ih->magic = UF_RING_IMAGE_MAGIC;
	ih->depth = depth;
	ih->max_instruments = max_instruments;
	ih->entry_size = uf_image_entry_size(depth);
	ih->entries_off = sizeof(*ih);
}

/* Writes the table header from the producer's copies (at create, and to repair it). */
static void table_reset_header(struct uf_ring *r)
{
	r->ct->magic = UF_RING_CT_MAGIC;
	r->ct->layout_version = UF_RING_LAYOUT_VERSION;
	r->ct->nslots = r->nslots;
	r->ct->generation = r->generation;
}

int uf_ring_create(const char *name, const struct uf_ring_options *opt_in, struct uf_ring **out,
                   char *err, size_t errlen)
{
	struct uf_ring_options opt;
	char dpath[256], tmpdir[300], cur[300], sock_path[400], data_tmp[64], sock_tmp[64];
	uint64_t ring_off, image_off, image_size, data_size, ct_size, gen, now, htlb_page, page;
	uint32_t rmode, dmode, smode;
	const char *dir;
	struct uf_ring_hdr prev;
	struct uf_ring *r;
	int node = -1, huge = 0, rc, dfd, fresh, ct_fd = -1;
	void *data = NULL, *ctmap = NULL;

	if (opt_in)
		opt = *opt_in;
	else
		uf_ring_options_init(&opt);
	if (uf_ring_name_check(name) < 0) {
		uf_err_set(err, errlen, "ring: bad name \"%s\" (1-31 bytes of A-Za-z0-9_.-)",
		           name ? name : "(null)");
		return -EINVAL;
	}
	if (opt.capacity < 16 || (opt.capacity & (opt.capacity - 1)) ||
	    opt.capacity > (1ull << 32)) {
		uf_err_set(err, errlen,
		           "ring %s: capacity %llu is not a power of two in [16, 2^32]", name,
		           (unsigned long long)opt.capacity);
		return -EINVAL;
	}
	if (opt.depth < 1 || opt.depth > UF_RING_MAX_DEPTH || opt.max_instruments < 1 ||
	    opt.max_instruments > (1u << 24) || opt.max_consumers < 1 ||
	    opt.max_consumers > UF_RING_MAX_CONSUMERS) {
		uf_err_set(err, errlen,
		           "ring %s: depth %u (1..%d), max_instruments %u (1..2^24) or "
		           "max_consumers %u (1..%d) out of range",
		           name, opt.depth, UF_RING_MAX_DEPTH, opt.max_instruments,
		           opt.max_consumers, UF_RING_MAX_CONSUMERS);
		return -EINVAL;
	}
	if (opt.mode & ~0666u) {
		uf_err_set(err, errlen, "ring %s: mode %o has bits outside 0666", name, opt.mode);
		return -EINVAL;
	}
	/* Clamp: readers are the owner, plus the group when the mode gives it read. "Other"
	 * never gets anything (a consumer must register, and registering must not be open to
	 * every local user) and nobody but the owner gets write. */
	rmode = (opt.mode & 0040) ? 0640 : 0600;
	dmode = rmode == 0640 ? 0750 : 0700;
	smode = rmode == 0640 ? 0660 : 0600; /* connect() needs write permission */
	dir = uf_ring_dir_pick(opt.dir);
	if (uf_ring_path(dpath, sizeof(dpath), dir, name, UF_RING_FILE_DIR) < 0 ||
	    strlen(dir) >= sizeof(r->dir)) {
		uf_err_set(err, errlen, "ring %s: directory path too long: %s", name, dir);
		return -ENAMETOOLONG;
	}
	snprintf(tmpdir, sizeof(tmpdir), "%s.tmp%d", dpath, (int)getpid());
	snprintf(data_tmp, sizeof(data_tmp), "%s.tmp%d", UF_RING_DATA_NAME, (int)getpid());
	snprintf(sock_tmp, sizeof(sock_tmp), "%s.tmp%d", UF_RING_SOCK_NAME, (int)getpid());
	/* a Unix socket path holds 107 bytes: check the longest one we will bind */
	if (snprintf(sock_path, sizeof(sock_path), "%s/%s", tmpdir, sock_tmp) >=
	    (int)sizeof(((struct sockaddr_un *)0)->sun_path)) {
		uf_err_set(
		    err, errlen,
		    "ring %s: socket path %s is longer than a Unix socket allows (107 bytes): "
		    "use a shorter directory",
		    name, sock_path);
		return -ENAMETOOLONG;
	}

	if (opt.numa_node != UF_RING_NUMA_NONE && numa_available() >= 0) {
		node = opt.numa_node;
		if (node == UF_RING_NUMA_AUTO) {
			int cpu = sched_getcpu();
			node = cpu >= 0 ? numa_node_of_cpu(cpu) : 0;
		}
		if (node < 0 || node > numa_max_node()) {
			uf_err_set(err, errlen, "ring %s: NUMA node %d does not exist (max %d)",
			           name, node, numa_max_node());
			return -EINVAL;
		}
	}
	/* explicit huge pages when the directory is hugetlbfs (sizes must be page multiples);
	 * otherwise transparent huge pages are asked for, and what was granted is read back
	 * after the pre-fault (common/uf_smaps.h): on tmpfs the mount's huge= option decides,
	 * which no sysfs setting tells */
	htlb_page = hugetlbfs_page(dir);
	huge = htlb_page ? 2 : (opt.hugepages ? 1 : 0); /* 1: asked; granted or not below */
	page = htlb_page ? htlb_page : UF_RING_PAGE;

	ring_off = align_up(sizeof(struct uf_ring_hdr), UF_RING_PAGE);
	image_off = align_up(ring_off + opt.capacity * sizeof(struct uf_record), UF_RING_PAGE);
	image_size = sizeof(struct uf_image_hdr) +
	             (uint64_t)opt.max_instruments * uf_image_entry_size(opt.depth);
	data_size = align_up(image_off + image_size, page);
	/* a whole last huge page for THP, but only for data that fills one: a small ring on a
	 * small tmpfs must not be refused for its rounding */
	if (huge == 1 && data_size >= UF_RING_HUGE_ALIGN)
		data_size = align_up(data_size, UF_RING_HUGE_ALIGN);
	ct_size = align_up(sizeof(struct uf_ring_ctable) +
	                       (uint64_t)opt.max_consumers * sizeof(struct uf_ring_cslot),
	                   UF_RING_PAGE);

	dfd = open_ring_dir(dpath, tmpdir, name, &fresh, err, errlen);
	if (dfd < 0)
		return dfd;
	snprintf(cur, sizeof(cur), "%s", fresh ? tmpdir : dpath);
	snprintf(sock_path, sizeof(sock_path), "%s/%s", cur, sock_tmp);
	gen = 0;
	if (!fresh && previous_header(dfd, &prev) == 0) {
		if (owned_by_other_producer(&prev)) {
			uf_err_set(
			    err, errlen,
			    "ring %s: %s is in use by running producer pid %d (two feeds with "
			    "one ring name?)",
			    name, dpath, (int)prev.producer_pid);
			rc = -EBUSY;
			goto out_dir;
		}
		gen = prev.generation;
	}
	if ((opt.gid >= 0 && fchown(dfd, (uid_t)-1, (gid_t)opt.gid) < 0) ||
	    fchmod(dfd, dmode) < 0) {
		rc = -errno;
		uf_err_set(err, errlen, "ring %s: chown/chmod %s: %s", name, cur, strerror(errno));
		goto out_dir;
	}
	r = calloc(1, sizeof(*r));
	if (r) { /* bracket bookkeeping: allocated now, never on the hot path */
		r->touched = calloc(opt.max_instruments, sizeof(*r->touched));
		r->is_touched = calloc(opt.max_instruments, sizeof(*r->is_touched));
	}
	if (!r || !r->touched || !r->is_touched) {
		uf_err_set(err, errlen, "ring %s: out of memory", name);
		rc = -ENOMEM;
		goto out_free;
	}
	unlinkat(dfd, data_tmp, 0); /* leftovers of a crashed start with our pid */
	unlinkat(dfd, sock_tmp, 0);
	rc = make_data(dfd, cur, data_tmp, rmode, opt.gid, data_size, node, huge == 1, &data, err,
	               errlen);
	if (rc < 0)
		goto out_free;
	if (huge != 2) /* what was granted, asked or not (a huge=always mount gives it anyway) */
		huge = uf_smaps_huge_bytes(data, data_size) > 0;
	rc = uf_ring_table_make(name, ct_size, node, &ctmap, &ct_fd, err, errlen);
	if (rc < 0)
		goto out_unmap_data;

	now = uf_now_realtime_ns();
	gen = gen >= now ? gen + 1 : now;

	r->hdr = data;
	r->ct = ctmap;
	r->slots = (struct uf_record *)((char *)data + ring_off);
	r->image = (struct uf_image_hdr *)((char *)data + image_off);
	r->mask = opt.capacity - 1;
	r->max_batch = opt.capacity / 4;
	r->data_size = data_size;
	r->ct_size = ct_size;
	r->nslots = opt.max_consumers;
	r->generation = gen;
	snprintf(r->name, sizeof(r->name), "%s", name);
	snprintf(r->dir, sizeof(r->dir), "%s", dir);

	fill_image(r->image, opt.depth, opt.max_instruments);
	r->hdr->magic = UF_RING_MAGIC;
	r->hdr->layout_version = UF_RING_LAYOUT_VERSION;
	r->hdr->record_size = sizeof(struct uf_record);
	r->hdr->record_version = UF_RECORD_VERSION;
	r->hdr->hugepages = (uint32_t)huge;
	r->hdr->capacity = opt.capacity;
	r->hdr->generation = gen;
	r->hdr->first_seq = opt.first_seq;
	r->hdr->tail = opt.first_seq; /* nothing published yet: the slots are never read below */
	r->hdr->claim = opt.first_seq;
	r->tail = opt.first_seq;
	r->hdr->created_ns = now;
	r->hdr->ring_off = ring_off;
	r->hdr->image_off = image_off;
	r->hdr->file_size = data_size;
	r->hdr->producer_pid = (int32_t)getpid();
	r->hdr->numa_node = node;
	uf_ring_proc_stat(getpid(), &r->hdr->producer_start, NULL);
	snprintf(r->hdr->name, sizeof(r->hdr->name), "%s", name);
	r->hdr->state = UF_RING_STATE_OPEN;
	table_reset_header(r);

	{
		struct uf_ring_hello hello = {
		    .magic = UF_RING_CT_MAGIC,
		    .layout_version = UF_RING_LAYOUT_VERSION,
		    .nslots = r->nslots,
		    .generation = r->generation,
		    .table_size = r->ct_size,
		};
		rc = uf_ring_server_start(&r->server, name, sock_path, smode, opt.gid, ct_fd,
		                          &hello, err, errlen);
	}
	if (rc < 0)
		goto out_unmap_ct;
	ct_fd = -1; /* the server owns it now */
	/* Everything is complete before the data name appears: socket first, data last,
	 * because consumers find a ring through its data file and then ask the socket for the
	 * matching table; a fresh directory appears under its name only now. */
	if (renameat(dfd, sock_tmp, dfd, UF_RING_SOCK_NAME) < 0 ||
	    renameat(dfd, data_tmp, dfd, UF_RING_DATA_NAME) < 0 ||
	    (fresh && rename(tmpdir, dpath) < 0)) {
		rc = -errno;
		uf_err_set(err, errlen, "ring %s: publish files in %s: %s", name, dpath,
		           strerror(errno));
		goto out_stop;
	}
	close(dfd);
	*out = r;
	return 0;

out_stop:
	uf_ring_server_stop(r->server);
	r->server = NULL;
	unlinkat(dfd, UF_RING_SOCK_NAME, 0);
	unlinkat(dfd, UF_RING_DATA_NAME, 0);
out_unmap_ct:
	munmap(ctmap, ct_size);
	if (ct_fd >= 0)
		close(ct_fd);
	unlinkat(dfd, sock_tmp, 0);
out_unmap_data:
	munmap(data, data_size);
	unlinkat(dfd, data_tmp, 0);
out_free:
	if (r) {
		free(r->touched);
		free(r->is_touched);
	}
	free(r);
out_dir:
	close(dfd);
	if (fresh)
		rmdir(tmpdir);
	return rc;
}

/* Why clearing the flags before the bump is safe: a consumer reads the wake word, then sets
 * its flag, then counts itself in sleepers (ring/consumer_local.c, its wait). A flag this
 * loop clears was therefore set after a word read that precedes the bump below: that
 * consumer's FUTEX_WAIT returns at once (word changed) or is woken by our FUTEX_WAKE. A
 * consumer that reads the bumped word sets its flag after this loop, so the next flush sees
 * it. The table is consumer-writable: a flag we cannot clear (garbage) only costs calls. */
int uf_ring_unwoken_sleeper(struct uf_ring *r)
{
	struct uf_ring_cslot *slots = (struct uf_ring_cslot *)(r->ct + 1);
	uf_fence_acquire(); /* the flags stored before the sleeper counts we saw are visible */
	for (uint32_t i = 0; i < r->nslots; i++)
		if (uf_load_relaxed_u32(&slots[i].flags) != 0)
			return 1;
	return 0;
}

int uf_ring_wake(struct uf_ring *r)
{
	struct uf_ring_cslot *slots = (struct uf_ring_cslot *)(r->ct + 1);
	int rc;
	for (uint32_t i = 0; i < r->nslots; i++) { /* "woken": before the bump (see above) */
		uint32_t one = 1;
		if (uf_load_relaxed_u32(&slots[i].flags) == 1)
			(void)uf_cas_u32(&slots[i].flags, &one, 0);
	}
	/* the bump makes a consumer that read the old value before sleeping return at once */
	uf_store_release_u32(&r->hdr->wake, r->hdr->wake + 1);
	uf_store_relaxed_u64(&r->hdr->wakes, r->hdr->wakes + 1);
	r->wake_pending = 0; /* this wake serves every publish before it */
	r->wakes++;
	if (r->waker && r->waker(r->waker_ctx, &r->hdr->wake) == 0) {
		r->wakes_async++;
		return UF_RING_WAKE_ASYNC;
	}
	rc = uf_ring_futex_wake_all(&r->hdr->wake);
	r->wakes_idle += rc == 0;
	return rc;
}

void uf_ring_close(struct uf_ring *r)
{
	if (!r)
		return;
	if (r->batch) { /* a bracket left open: release it rather than leave entries locked */
		r->batch = 2;
		uf_ring_image_batch_end(r, r->tail);
	}
	uf_ring_image_commit(r); /* everything published is in the image */
	r->hdr->closed_ns = uf_now_realtime_ns();
	/* every record and closed_ns are visible before the state says closed */
	uf_store_release_u32(&r->hdr->state, UF_RING_STATE_CLOSED);
	uf_fence_seq_cst(); /* state store before the wake word bump seen by sleepers */
	uf_ring_wake(r);
	uf_ring_server_stop(r->server); /* late consumers read what is left unregistered */
	r->server = NULL;
	munmap(r->ct, r->ct_size);
	munmap(r->hdr, r->data_size);
	free(r->touched);
	free(r->is_touched);
	free(r);
}

int uf_ring_unlink(const char *name, const char *dir)
{
	char path[256];
	int dfd, rc = -ENOENT;

	if (uf_ring_name_check(name) < 0)
		return -EINVAL;
	dir = uf_ring_dir_pick(dir);
	if (uf_ring_path(path, sizeof(path), dir, name, UF_RING_FILE_DIR) < 0)
		return -ENAMETOOLONG;
	/* through the directory fd, never following a link: a squatter's symlink must not make
	 * us delete files elsewhere */
	dfd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0 && errno == ENOTDIR) {
		struct stat st;
		if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode))
			return -ELOOP; /* not ours to follow, nor to remove */
	}
	if (dfd >= 0) {
		/* every leaf, the journal pointer too: one left and the directory is not empty,
		 * the ring's name stays taken */
		static const char *const leaves[] = {UF_RING_DIR_LEAVES};
		rc = 0;
		for (size_t i = 0; i < sizeof(leaves) / sizeof(leaves[0]); i++)
			unlinkat(dfd, leaves[i], 0);
		close(dfd);
		if (rmdir(path) < 0)
			rc = -errno;
	} else if (errno != ENOENT && errno != ENOTDIR) {
		rc = -errno;
	}
	{
		struct stat st;
		char cons[300];
		snprintf(cons, sizeof(cons), "%s.cons", path);
		if ((lstat(path, &st) == 0 && S_ISREG(st.st_mode)) || lstat(cons, &st) == 0)
			rc = 0;
		unlink_legacy(path);
	}
	return rc;
}

/* Compares the consumer table with the producer's copies and repairs what cannot be right: a
 * header that differs, a slot flag other than 0/1, more sleepers than slots. Called from
 * uf_ring_reap (cold). Returns 1 when something was repaired. */
static int table_check(struct uf_ring *r)
{
	struct uf_ring_cslot *slots = (struct uf_ring_cslot *)(r->ct + 1);
	uint32_t sleeping = 0, bad_flags = 0, sleepers;
	char what[160] = "";
	size_t n = 0;

	if (r->ct->magic != UF_RING_CT_MAGIC || r->ct->layout_version != UF_RING_LAYOUT_VERSION ||
	    r->ct->nslots != r->nslots || r->ct->generation != r->generation) {
		n += (size_t)snprintf(what + n, sizeof(what) - n, ", header (nslots %u, want %u)",
		                      r->ct->nslots, r->nslots);
		table_reset_header(r);
	}
	for (uint32_t i = 0; i < r->nslots; i++) { /* our bound, not the table's */
		uint32_t f = uf_load_relaxed_u32(&slots[i].flags);
		if (f > 1) {
			uf_store_relaxed_u32(&slots[i].flags, 0);
			bad_flags++;
		} else if (f == 1 && uf_load_relaxed_u32(&slots[i].pid) != 0) {
			sleeping++;
		}
	}
	if (bad_flags && n < sizeof(what))
		n += (size_t)snprintf(what + n, sizeof(what) - n, ", %u slot flags", bad_flags);
	sleepers = uf_load_relaxed_u32(&r->ct->sleepers);
	if (sleepers > r->nslots) {
		/* a true count never exceeds the slots; the sleeping flags are the best estimate
		 * (a consumer between its flag and its increment may make it one off until the
		 * next check: at worst one wasted FUTEX_WAKE or one 50 ms sleep slice) */
		if (n < sizeof(what))
			n +=
			    (size_t)snprintf(what + n, sizeof(what) - n, ", sleepers %u", sleepers);
		uf_store_relaxed_u32(&r->ct->sleepers, sleeping);
	}
	if (n == 0)
		return 0;
	r->table_repairs++;
	fprintf(stderr,
	        "uringfeed: ring %s: consumer table damaged (%s): repaired from the "
	        "producer's copies\n",
	        r->name, what + 2);
	return 1;
}

int uf_ring_consumers(struct uf_ring *r, struct uf_ring_consumer_info *out, size_t max)
{
	struct uf_ring_cslot *slots = (struct uf_ring_cslot *)(r->ct + 1);
	/* Called from threads other than the producer's (the daemon's status thread): r->tail is
	 * the producer thread's plain copy, a data race there (issue 23 item 17). The header's
	 * tail is release-stored by uf_ring_publish; only the producer maps it writable. */
	uint64_t tail = uf_load_acquire_u64(&r->hdr->tail);
	int count = 0;

	for (uint32_t i = 0; i < r->nslots; i++) { /* the producer's bound, not the table's */
		struct uf_ring_cslot *s = &slots[i];
		uint32_t pid = uf_load_acquire_u32(&s->pid); /* slot fields after its owner */
		uint64_t pos;

		if (pid == 0)
			continue;
		if ((size_t)count < max) {
			struct uf_ring_consumer_info *o = &out[count];
			memset(o, 0, sizeof(*o));
			pos = uf_load_relaxed_u64(&s->position);
			o->slot = i;
			o->pid = (int32_t)pid;
			o->position = pos;
			o->lag = tail > pos ? tail - pos : 0;
			o->last_seen_ns = uf_load_relaxed_u64(&s->last_seen_ns);
			o->received = uf_load_relaxed_u64(&s->received);
			o->lost = uf_load_relaxed_u64(&s->lost);
			o->laps = uf_load_relaxed_u64(&s->laps);
			o->sleeping = uf_load_relaxed_u32(&s->flags) == 1;
			memcpy(o->tag, s->tag, sizeof(o->tag));
			/* the consumer wrote it: cleaned once here for every output (status,
			 * metrics, logs), see common/uf_label.h */
			uf_label_clean(o->tag, sizeof(o->tag));
		}
		count++;
	}
	return count;
}

int uf_ring_reap(struct uf_ring *r)
{
	struct uf_ring_cslot *slots = (struct uf_ring_cslot *)(r->ct + 1);
	int freed = 0, forged = 0;

	table_check(r);
	for (uint32_t i = 0; i < r->nslots; i++) {
		struct uf_ring_cslot *s = &slots[i];
		uint32_t pid = uf_load_acquire_u32(&s->pid);
		uint64_t want = uf_load_relaxed_u64(&s->start_time), start = 0;
		char state = 0;
		int dead;

		if (pid == 0)
			continue;
		/* a pid no process can have (scribbled) is dead too */
		if (pid > (uint32_t)INT32_MAX || uf_ring_proc_stat((pid_t)pid, &start, &state) < 0)
			dead = 1;
		else
			dead = state == 'Z' || state == 'X' || (want != 0 && start != want);
		/* alive, but never asked us for the table: a slot forged by someone who has
		 * it (say, a live pid written into every slot to lock new consumers out) */
		if (!dead && r->server && !uf_ring_server_handed(r->server, pid, start)) {
			dead = 1;
			forged++;
		}
		if (!dead)
			continue;
		/* a consumer killed inside uf_consumer_wait left its sleeper count behind: take
		 * it back, or every publish would pay a FUTEX_WAKE for a ghost */
		if (uf_load_relaxed_u32(&s->flags) == 1) {
			uint32_t n = uf_load_relaxed_u32(&r->ct->sleepers);
			while (n > 0 && !uf_cas_u32(&r->ct->sleepers, &n, n - 1))
				;
		}
		uf_store_relaxed_u32(&s->flags, 0);
		/* CAS: free the slot only if the dead owner still holds it */
		if (uf_cas_u32(&s->pid, &pid, 0))
			freed++;
	}
	if (forged) {
		r->table_repairs++;
		fprintf(stderr,
		        "uringfeed: ring %s: consumer table damaged (%d slot%s claimed by live "
		        "processes that never asked for the table): freed\n",
		        r->name, forged, forged == 1 ? "" : "s");
	}
	return freed;
}
