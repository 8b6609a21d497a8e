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
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "common/uf_err.h"
#include "common/uf_time.h"
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

/* Whether the kernel backs shmem with transparent huge pages when advised. */
static int shmem_thp_allowed(void)
{
	char buf[128] = "";
	FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/shmem_enabled", "r");

	if (!f)
		return 0;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = '\0';
	fclose(f);
	return strstr(buf, "[always]") || strstr(buf, "[within_size]") || strstr(buf, "[advise]") ||
	       strstr(buf, "[force]");
}

/* Huge page size when `dir` is a hugetlbfs mount (explicit huge pages), else 0. */
static uint64_t hugetlbfs_page(const char *dir)
{
	struct statfs sf;

	if (statfs(dir, &sf) < 0 || (unsigned long)sf.f_type != UF_HUGETLBFS_MAGIC)
		return 0;
	return (uint64_t)sf.f_bsize;
}

/* Reads the header of the ring currently under `path`. Returns 0, or -ENOENT when there is
 * none (or it is not a ring). */
static int previous_header(const char *path, struct uf_ring_hdr *h)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
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

/* Creates `path` exclusively with exactly `mode` (umask does not apply) and `size` bytes,
 * maps it read-write, binds it to `node` and touches every page there. */
static int make_area(const char *path, uint32_t mode, int64_t gid, uint64_t size, int node,
                     int huge, void **map, char *err, size_t errlen)
{
	void *p;
	int fd, rc;

	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0) {
		rc = -errno;
		uf_err_set(err, errlen, "ring: create %s: %s", path, strerror(errno));
		return rc;
	}
	if (gid >= 0 && fchown(fd, (uid_t)-1, (gid_t)gid) < 0) {
		rc = -errno;
		uf_err_set(err, errlen, "ring: chown %s to gid %lld: %s", path, (long long)gid,
		           strerror(errno));
		goto out_unlink;
	}
	if (fchmod(fd, mode) < 0 || ftruncate(fd, (off_t)size) < 0) {
		rc = -errno;
		uf_err_set(err, errlen, "ring: size/mode %s (%llu bytes): %s", path,
		           (unsigned long long)size, strerror(errno));
		goto out_unlink;
	}
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		rc = -errno;
		uf_err_set(err, errlen, "ring: mmap %s: %s", path, strerror(errno));
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
	unlink(path);
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

int uf_ring_create(const char *name, const struct uf_ring_options *opt_in, struct uf_ring **out,
                   char *err, size_t errlen)
{
	struct uf_ring_options opt;
	char data_path[256], cons_path[256], data_tmp[300], cons_tmp[300];
	uint64_t ring_off, image_off, image_size, data_size, ct_size, gen, now, htlb_page, page;
	const char *dir;
	struct uf_ring_hdr prev;
	struct uf_ring *r;
	int node = -1, huge = 0, rc;
	void *data, *ctmap;

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
	    opt.max_instruments > (1u << 24) || opt.max_consumers < 1 || opt.max_consumers > 4096) {
		uf_err_set(err, errlen,
		           "ring %s: depth %u (1..%d), max_instruments %u (1..2^24) or "
		           "max_consumers %u (1..4096) out of range",
		           name, opt.depth, UF_RING_MAX_DEPTH, opt.max_instruments,
		           opt.max_consumers);
		return -EINVAL;
	}
	if (opt.mode & ~0666u) {
		uf_err_set(err, errlen, "ring %s: mode %o has bits outside 0666", name, opt.mode);
		return -EINVAL;
	}
	dir = uf_ring_dir_pick(opt.dir);
	if (uf_ring_path(data_path, sizeof(data_path), dir, name, 0) < 0 ||
	    uf_ring_path(cons_path, sizeof(cons_path), dir, name, 1) < 0 ||
	    strlen(dir) >= sizeof(r->dir)) {
		uf_err_set(err, errlen, "ring %s: directory path too long: %s", name, dir);
		return -ENAMETOOLONG;
	}
	snprintf(data_tmp, sizeof(data_tmp), "%s.tmp%d", data_path, (int)getpid());
	snprintf(cons_tmp, sizeof(cons_tmp), "%s.tmp%d", cons_path, (int)getpid());

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
	 * otherwise transparent huge pages on /dev/shm when the kernel allows them for shmem */
	htlb_page = hugetlbfs_page(dir);
	huge = htlb_page ? 2 : (opt.hugepages && shmem_thp_allowed());
	page = htlb_page ? htlb_page : (huge ? UF_RING_HUGE_ALIGN : UF_RING_PAGE);

	ring_off = align_up(sizeof(struct uf_ring_hdr), UF_RING_PAGE);
	image_off = align_up(ring_off + opt.capacity * sizeof(struct uf_record), UF_RING_PAGE);
	image_size = sizeof(struct uf_image_hdr) +
	             (uint64_t)opt.max_instruments * uf_image_entry_size(opt.depth);
	data_size = align_up(image_off + image_size, page);
	ct_size = align_up(sizeof(struct uf_ring_ctable) +
	                       (uint64_t)opt.max_consumers * sizeof(struct uf_ring_cslot),
	                   htlb_page ? htlb_page : UF_RING_PAGE);

	if (previous_header(data_path, &prev) == 0 && owned_by_other_producer(&prev)) {
		uf_err_set(
		    err, errlen,
		    "ring %s: %s is in use by running producer pid %d (two feeds with one ring "
		    "name?)",
		    name, data_path, (int)prev.producer_pid);
		return -EBUSY;
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
	unlink(data_tmp); /* leftovers of a crashed start with our pid */
	unlink(cons_tmp);
	/* data: owner writes; group/other get at most read. Table: read+write for the same
	 * classes that may read the data, so they can register. */
	rc = make_area(data_tmp, (opt.mode & 0444) | 0200, opt.gid, data_size, node, huge == 1,
	               &data, err, errlen);
	if (rc < 0)
		goto out_free;
	rc = make_area(cons_tmp, (opt.mode & 0444) | ((opt.mode & 0444) >> 1), opt.gid, ct_size,
	               node, 0, &ctmap, err, errlen);
	if (rc < 0)
		goto out_unmap_data;

	now = uf_now_realtime_ns();
	gen = previous_header(data_path, &prev) == 0 ? prev.generation : 0;
	gen = gen >= now ? gen + 1 : now;

	r->hdr = data;
	r->ct = ctmap;
	r->slots = (struct uf_record *)((char *)data + ring_off);
	r->image = (struct uf_image_hdr *)((char *)data + image_off);
	r->mask = opt.capacity - 1;
	r->max_batch = opt.capacity / 4;
	r->data_size = data_size;
	r->ct_size = ct_size;
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
	r->hdr->created_ns = now;
	r->hdr->ring_off = ring_off;
	r->hdr->image_off = image_off;
	r->hdr->file_size = data_size;
	r->hdr->producer_pid = (int32_t)getpid();
	r->hdr->numa_node = node;
	uf_ring_proc_stat(getpid(), &r->hdr->producer_start, NULL);
	snprintf(r->hdr->name, sizeof(r->hdr->name), "%s", name);
	r->hdr->state = UF_RING_STATE_OPEN;

	r->ct->magic = UF_RING_CT_MAGIC;
	r->ct->layout_version = UF_RING_LAYOUT_VERSION;
	r->ct->nslots = opt.max_consumers;
	r->ct->generation = gen;

	/* Both files are complete before either name appears: table first, data last, because
	 * consumers find a ring through its data file and then expect the matching table. */
	if (rename(cons_tmp, cons_path) < 0 || rename(data_tmp, data_path) < 0) {
		rc = -errno;
		uf_err_set(err, errlen, "ring %s: publish files in %s: %s", name, dir,
		           strerror(errno));
		goto out_unmap_ct;
	}
	*out = r;
	return 0;

out_unmap_ct:
	munmap(ctmap, ct_size);
	unlink(cons_tmp);
out_unmap_data:
	munmap(data, data_size);
	unlink(data_tmp);
out_free:
	if (r) {
		free(r->touched);
		free(r->is_touched);
	}
	free(r);
	return rc;
}

void uf_ring_wake(struct uf_ring *r)
{
	/* the bump makes a consumer that read the old value before sleeping return at once */
	uf_store_release_u32(&r->hdr->wake, r->hdr->wake + 1);
	uf_store_relaxed_u64(&r->hdr->wakes, r->hdr->wakes + 1);
	uf_ring_futex_wake_all(&r->hdr->wake);
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
	munmap(r->ct, r->ct_size);
	munmap(r->hdr, r->data_size);
	free(r->touched);
	free(r->is_touched);
	free(r);
}

int uf_ring_unlink(const char *name, const char *dir)
{
	char path[256];
	int rc = 0;

	if (uf_ring_name_check(name) < 0)
		return -EINVAL;
	dir = uf_ring_dir_pick(dir);
	if (uf_ring_path(path, sizeof(path), dir, name, 0) < 0)
		return -ENAMETOOLONG;
	if (unlink(path) < 0)
		rc = -errno;
	if (uf_ring_path(path, sizeof(path), dir, name, 1) < 0)
		return -ENAMETOOLONG;
	if (unlink(path) < 0 && rc == 0)
		rc = -errno;
	return rc;
}

int uf_ring_consumers(struct uf_ring *r, struct uf_ring_consumer_info *out, size_t max)
{
	struct uf_ring_cslot *slots = (struct uf_ring_cslot *)(r->ct + 1);
	uint64_t tail = r->tail;
	int count = 0;

	for (uint32_t i = 0; i < r->ct->nslots; i++) {
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
			o->sleeping = uf_load_relaxed_u32(&s->flags) & 1;
			memcpy(o->tag, s->tag, sizeof(o->tag));
			o->tag[sizeof(o->tag) - 1] = '\0';
		}
		count++;
	}
	return count;
}

int uf_ring_reap(struct uf_ring *r)
{
	struct uf_ring_cslot *slots = (struct uf_ring_cslot *)(r->ct + 1);
	int freed = 0;

	for (uint32_t i = 0; i < r->ct->nslots; i++) {
		struct uf_ring_cslot *s = &slots[i];
		uint32_t pid = uf_load_acquire_u32(&s->pid);
		uint64_t want = uf_load_relaxed_u64(&s->start_time), start = 0;
		char state = 0;
		int dead;

		if (pid == 0)
			continue;
		if (uf_ring_proc_stat((pid_t)pid, &start, &state) < 0)
			dead = 1;
		else
			dead = state == 'Z' || state == 'X' || (want != 0 && start != want);
		if (!dead)
			continue;
		/* a consumer killed inside uf_consumer_wait left its sleeper count behind: take
		 * it back, or every publish would pay a FUTEX_WAKE for a ghost */
		if (uf_load_relaxed_u32(&s->flags) & 1) {
			uint32_t n = uf_load_relaxed_u32(&r->ct->sleepers);
			while (n > 0 && !uf_cas_u32(&r->ct->sleepers, &n, n - 1))
				;
		}
		uf_store_relaxed_u32(&s->flags, 0);
		/* CAS: free the slot only if the dead owner still holds it */
		if (uf_cas_u32(&s->pid, &pid, 0))
			freed++;
	}
	return freed;
}
