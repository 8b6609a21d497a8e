/* Capture: chunk hand-over between the feed thread and the writer, and the writer's files
 * (capture.h). The pcapng bytes themselves are decode/uf_pcapng.c's. */
#include "feed/capture.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/uf_atomic.h"
#include "common/uf_err.h"
#include "feed/feed_log.h"

#define UF_CAPTURE_IDLE_NS  1000000ull     /* writer sleep when nothing is queued */
#define UF_CAPTURE_CHECK_NS 1000000000ull  /* how often the writer checks its file is there */
#define UF_CAPTURE_RETRY_NS 100000000ull   /* no new file sooner after a failed open */
#define UF_CAPTURE_LOG_NS   10000000000ull /* one warning per reason per 10 s at most */
#define UF_CAPTURE_HDR_MAX  4096

enum uf_capture_why {
	UF_CAPTURE_DISK_FULL = 0,
	UF_CAPTURE_NO_DIR,
	UF_CAPTURE_READ_ONLY,
	UF_CAPTURE_IO_ERROR,
	UF_CAPTURE_WRITER_BEHIND, /* counted by the feed thread; here for symmetry of names */
};

static const char *const why_names[] = {"disk full", "directory gone", "read-only", "I/O error",
                                        "writer behind"};

/* ---- SPSC queues ---- */

static int q_init(struct uf_capture_q *q, uint32_t n)
{
	uint32_t cap = 1;
	while (cap < n)
		cap <<= 1;
	q->slots = calloc(cap, sizeof(*q->slots));
	if (!q->slots)
		return -ENOMEM;
	q->mask = cap - 1;
	q->head = q->tail = 0;
	return 0;
}

/* Producer: never full (capacity >= chunks, each chunk is in one place at a time). */
static void q_push(struct uf_capture_q *q, uint32_t v)
{
	uint32_t t = q->tail; /* only the producer writes it */
	q->slots[t & q->mask] = v;
	uf_store_release_u32(&q->tail, t + 1); /* the slot is written before the new tail */
}

/* Consumer: 1 and *v, or 0 when empty. */
static int q_pop(struct uf_capture_q *q, uint32_t *v)
{
	uint32_t h = q->head;                   /* only the consumer writes it */
	if (uf_load_acquire_u32(&q->tail) == h) /* slot reads come after seeing the tail */
		return 0;
	*v = q->slots[h & q->mask];
	uf_store_release_u32(&q->head, h + 1); /* the slot is read before it is given back */
	return 1;
}

static uint32_t q_len(struct uf_capture_q *q)
{
	return uf_load_acquire_u32(&q->tail) - uf_load_acquire_u32(&q->head);
}

/* ---- feed thread ---- */

/* Feed thread: the queued-bytes gauge (the feed owns it: it stays true while the writer is
 * stuck in a write, which is when it matters). */
static void queued_gauge(struct uf_capture *c)
{
	uint64_t q = (uint64_t)q_len(&c->full) * UF_CAPTURE_CHUNK;
	if (q != c->st->capture_queued_bytes)
		uf_store_relaxed_u64(&c->st->capture_queued_bytes, q);
}

/* Hands the current chunk over (if it has anything). */
static void hand_over(struct uf_capture *c)
{
	if (c->cur < 0)
		return;
	struct uf_capture_chunk *m = &c->meta[c->cur];
	if (m->used == 0 && !(m->flags & UF_CAPTURE_ROTATE))
		return;                     /* empty: keep filling it */
	q_push(&c->full, (uint32_t)c->cur); /* the meta written above travels with it */
	c->cur = -1;
	queued_gauge(c);
}

int uf_capture_take_chunk(struct uf_capture *c, uint32_t need)
{
	hand_over(c);
	uint32_t idx;
	if (need > UF_CAPTURE_CHUNK || !q_pop(&c->free, &idx))
		return -1;
	struct uf_capture_chunk *m = &c->meta[idx];
	m->used = 0;
	m->packets = 0;
	m->last_rx_ns = 0;
	m->flags = c->pending_flags;
	c->pending_flags = 0;
	c->cur = idx;
	return 0;
}

void uf_capture_flush(struct uf_capture *c)
{
	if (c->cur >= 0 && c->meta[c->cur].used)
		hand_over(c);
}

void uf_capture_flush_idle(struct uf_capture *c, uint64_t now_ns)
{
	queued_gauge(c);
	if (c->cur < 0 || !c->meta[c->cur].used ||
	    now_ns - c->idle_flush_ns < UF_CAPTURE_IDLE_FLUSH_NS)
		return;
	c->idle_flush_ns = now_ns;
	hand_over(c);
}

void uf_capture_new_session(struct uf_capture *c)
{
	uf_capture_flush(c);
	if (c->cur >= 0 && c->meta[c->cur].used == 0)
		c->meta[c->cur].flags |= UF_CAPTURE_ROTATE;
	else
		c->pending_flags |= UF_CAPTURE_ROTATE;
}

void uf_capture_stream(struct uf_capture *c, unsigned iface, const uint8_t *data, size_t len)
{
	if (iface >= (unsigned)c->p.nif)
		return;
	const struct uf_capture_if *f = &c->p.ifs[iface];
	struct uf_pcapng_udp a = {.src_addr = f->src_addr,
	                          .dst_addr = f->dst_addr,
	                          .src_port = f->src_port,
	                          .dst_port = f->dst_port};
	uint64_t now = uf_now_realtime_ns();
	while (len) {
		uint32_t n = len > UF_CAPTURE_TCP_SEG ? UF_CAPTURE_TCP_SEG : (uint32_t)len;
		uint32_t need = (uint32_t)uf_pcapng_epb_tcp_size(n);
		if ((c->cur < 0 || c->meta[c->cur].used + need > UF_CAPTURE_CHUNK) &&
		    uf_capture_take_chunk(c, need) < 0) {
			uf_stat_add(&c->st->capture_dropped_writer_behind, 1);
		} else {
			struct uf_capture_chunk *m = &c->meta[c->cur];
			uint8_t *out = c->mem + (size_t)c->cur * UF_CAPTURE_CHUNK + m->used;
			m->used += (uint32_t)uf_pcapng_epb_tcp(out, iface, now, &a,
			                                       c->tcp_seq[iface], data, n);
			m->packets++;
			m->last_rx_ns = now;
			uf_stat_add(&c->st->capture_packets, 1);
			uf_stat_add(&c->st->capture_bytes, need);
		}
		c->tcp_seq[iface] += n; /* a dropped segment leaves its hole in the sequence */
		data += n;
		len -= n;
	}
}

/* ---- writer thread ---- */

size_t uf_capture_file_header(const struct uf_capture_params *p, uint8_t *out, size_t cap)
{
	char comment[160];
	snprintf(comment, sizeof(comment),
	         "uringfeed capture of feed %s: every datagram as received, kernel receive "
	         "timestamps",
	         p->feed);
	size_t n = uf_pcapng_shb(out, cap, "uringfeed", comment);
	if (!n)
		return 0;
	for (int i = 0; i < p->nif; i++) {
		size_t k = uf_pcapng_idb(out + n, cap - n, p->ifs[i].name, p->ifs[i].desc);
		if (!k)
			return 0;
		n += k;
	}
	return n;
}

static enum uf_capture_why why_of(int err)
{
	switch (err) {
	case ENOSPC:
	case EDQUOT:
	case EFBIG:
		return UF_CAPTURE_DISK_FULL;
	case ENOENT:
	case ENOTDIR:
	case ESTALE:
		return UF_CAPTURE_NO_DIR;
	case EROFS:
	case EACCES:
	case EPERM:
		return UF_CAPTURE_READ_ONLY;
	default:
		return UF_CAPTURE_IO_ERROR;
	}
}

/* Counts a chunk's datagrams as dropped for `err`; one warning per reason, then one per
 * UF_CAPTURE_LOG_NS with the count since. */
static void drop(struct uf_capture *c, const struct uf_capture_chunk *m, int err, const char *what)
{
	enum uf_capture_why w = why_of(err);
	uint64_t *ctr[] = {&c->st->capture_dropped_disk_full, &c->st->capture_dropped_no_dir,
	                   &c->st->capture_dropped_read_only, &c->st->capture_dropped_io_error};
	uf_stat_add(ctr[w], m->packets);
	c->unlogged[w] += m->packets;
	uint64_t now = uf_now_mono_ns();
	if (c->logged_ns[w] && now - c->logged_ns[w] < UF_CAPTURE_LOG_NS)
		return;
	c->logged_ns[w] = now;
	uf_feed_log_warn("feed %s: capture dropping (%s): %s %s: %s; %llu datagrams not "
	                 "captured since the last warning; the feed goes on",
	                 c->p.feed, why_names[w], what, c->path[0] ? c->path : c->p.dir,
	                 strerror(err), (unsigned long long)c->unlogged[w]);
	c->unlogged[w] = 0;
}

/* 1 when `name` is FEED-YYYYMMDDTHHMMSSZ-N...pcapng of this feed (not of a feed whose name
 * merely starts with ours, "nasdaq" vs "nasdaq-bx"). */
static int is_our_file(const char *name, size_t l, const char *feed, size_t plen)
{
	static const char pat[] = "-ddddddddTddddddZ-"; /* d: a digit */
	size_t pl = sizeof(pat) - 1;
	if (l < plen + pl + 7 || strncmp(name, feed, plen) || strcmp(name + l - 7, ".pcapng"))
		return 0;
	for (size_t i = 0; i < pl; i++) {
		char ch = name[plen + i];
		if (pat[i] == 'd' ? (ch < '0' || ch > '9') : ch != pat[i])
			return 0;
	}
	return 1;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Deletes this feed's oldest files in the directory while their total is above the limit
 * (never the file being written). O(files) per new file. */
static void prune(struct uf_capture *c)
{
	if (!c->p.max_total_bytes)
		return;
	DIR *d = opendir(c->p.dir);
	if (!d)
		return;
	char **names = NULL;
	size_t n = 0, cap = 0;
	uint64_t total = 0;
	size_t plen = strlen(c->p.feed);
	struct dirent *e;
	while ((e = readdir(d))) {
		size_t l = strlen(e->d_name);
		if (!is_our_file(e->d_name, l, c->p.feed, plen))
			continue;
		struct stat sb;
		if (fstatat(dirfd(d), e->d_name, &sb, 0) < 0 || !S_ISREG(sb.st_mode))
			continue;
		if (n == cap) {
			char **nn = realloc(names, (cap ? cap * 2 : 64) * sizeof(*names));
			if (!nn)
				break;
			names = nn;
			cap = cap ? cap * 2 : 64;
		}
		names[n] = strdup(e->d_name);
		if (!names[n])
			break;
		total += (uint64_t)sb.st_size;
		n++;
	}
	if (n)
		qsort(names, n, sizeof(*names), name_cmp);
	const char *cur = strrchr(c->path, '/');
	cur = cur ? cur + 1 : c->path;
	for (size_t i = 0; i < n && total > c->p.max_total_bytes; i++) {
		struct stat sb;
		if (!strcmp(names[i], cur) || fstatat(dirfd(d), names[i], &sb, 0) < 0)
			continue;
		if (unlinkat(dirfd(d), names[i], 0) == 0) {
			total -= (uint64_t)sb.st_size;
			uf_stat_add(&c->st->capture_files_deleted, 1);
		}
	}
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	closedir(d);
}

static void close_file(struct uf_capture *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	c->path[0] = '\0';
}

/* One write of buf[0..len) at the file's end through the ring; registered buffer `idx`
 * (-1: plain write). Short writes continue. 0 or -errno. */
static int ring_write(struct io_uring *ring, int fd, const uint8_t *buf, uint32_t len, uint64_t off,
                      int idx)
{
	while (len) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
		if (!sqe)
			return -EBUSY;
		if (idx >= 0)
			io_uring_prep_write_fixed(sqe, fd, buf, len, off, idx);
		else
			io_uring_prep_write(sqe, fd, buf, len, off);
		struct io_uring_cqe *cqe;
		int rc = io_uring_submit_and_wait(ring, 1);
		if (rc < 0)
			return rc;
		rc = io_uring_wait_cqe(ring, &cqe);
		if (rc < 0)
			return rc;
		int res = cqe->res;
		io_uring_cqe_seen(ring, cqe);
		if (res < 0)
			return res;
		if (res == 0)
			return -EIO;
		buf += res;
		off += (uint64_t)res;
		len -= (uint32_t)res;
	}
	return 0;
}

/* Starts a new file with its header. 0 or -errno (c->path holds the name tried). */
static int open_file(struct uf_capture *c, struct io_uring *ring)
{
	close_file(c);
	uint8_t hdr[UF_CAPTURE_HDR_MAX];
	size_t hl = uf_capture_file_header(&c->p, hdr, sizeof(hdr));
	if (!hl)
		return -EOVERFLOW;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	struct tm tm;
	gmtime_r(&ts.tv_sec, &tm);
	int fd = -1;
	for (int tries = 0; tries < 100 && fd < 0; tries++) {
		snprintf(c->path, sizeof(c->path), "%s/%s-%04d%02d%02dT%02d%02d%02dZ-%04u.pcapng",
		         c->p.dir, c->p.feed, tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
		         tm.tm_hour, tm.tm_min, tm.tm_sec, c->file_no++);
		fd = open(c->path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0640);
		if (fd < 0 && errno != EEXIST)
			return -errno;
	}
	if (fd < 0)
		return -EEXIST;
	c->fd = fd;
	c->file_off = 0;
	int rc = ring_write(ring, fd, hdr, (uint32_t)hl, 0, -1);
	if (rc < 0) {
		(void)unlink(c->path);
		close_file(c);
		return rc;
	}
	c->file_off = hl;
	uf_stat_add(&c->st->capture_files_opened, 1);
	uf_stat_add(&c->st->capture_bytes_written, hl);
	c->last_check_ns = uf_now_mono_ns();
	prune(c);
	return 0;
}

/* Once a second: is c->path still the file we write (not deleted, not hidden by a mount,
 * the directory still there)? If not, the next chunk starts a new file, which reports why. */
static void check_file(struct uf_capture *c)
{
	uint64_t now = uf_now_mono_ns();
	if (c->fd < 0 || now - c->last_check_ns < UF_CAPTURE_CHECK_NS)
		return;
	c->last_check_ns = now;
	struct stat a, b;
	if (fstat(c->fd, &a) < 0 || stat(c->path, &b) < 0 || a.st_ino != b.st_ino ||
	    a.st_dev != b.st_dev || a.st_nlink == 0 || access(c->p.dir, W_OK) < 0)
		close_file(c);
}

/* Writes chunk `idx`: a new file first when asked, when the size limit would be passed or
 * when there is none. On error the chunk's datagrams are counted dropped and the file is cut
 * back to its last whole block (a pcapng reader never meets half a block). */
static void write_chunk(struct uf_capture *c, struct io_uring *ring, uint32_t idx, int fixed)
{
	struct uf_capture_chunk *m = &c->meta[idx];
	check_file(c);
	int rotate = (m->flags & UF_CAPTURE_ROTATE) ||
	             (c->fd >= 0 && c->file_off + m->used > c->p.rotate_bytes);
	if (rotate && m->used == 0) {
		close_file(c); /* a session mark alone: the next data opens the file */
		return;
	}
	if (c->fd < 0 || rotate) {
		uint64_t now = uf_now_mono_ns();
		if (c->fd < 0 && c->retry_ns && now < c->retry_ns) {
			drop(c, m, c->open_err, "opening");
			return;
		}
		int rc = open_file(c, ring);
		if (rc < 0) {
			c->retry_ns = now + UF_CAPTURE_RETRY_NS;
			c->open_err = -rc;
			drop(c, m, -rc, "opening");
			return;
		}
		c->retry_ns = 0;
	}
	int rc = ring_write(ring, c->fd, c->mem + (size_t)idx * UF_CAPTURE_CHUNK, m->used,
	                    c->file_off, fixed ? (int)idx : -1);
	if (rc < 0) {
		if (ftruncate(c->fd, (off_t)c->file_off) < 0)
			close_file(c); /* the next chunk starts a clean file */
		drop(c, m, -rc, "writing");
		return;
	}
	c->file_off += m->used;
	uf_stat_add(&c->st->capture_bytes_written, m->used);
	uf_stat_add(&c->st->capture_packets_written, m->packets);
	if (m->last_rx_ns) {
		uint64_t now = uf_now_realtime_ns();
		uf_store_relaxed_u64(&c->st->capture_lag_ns,
		                     now > m->last_rx_ns ? now - m->last_rx_ns : 0);
	}
}

/* The feed thread counts writer-behind drops but never logs: the writer says it for it,
 * once, then at most once per UF_CAPTURE_LOG_NS with the count since. */
static void log_behind(struct uf_capture *c)
{
	const int w = UF_CAPTURE_WRITER_BEHIND;
	uint64_t n = uf_load_relaxed_u64(&c->st->capture_dropped_writer_behind);
	uint64_t now = uf_now_mono_ns();
	if (n == c->behind_seen || (c->logged_ns[w] && now - c->logged_ns[w] < UF_CAPTURE_LOG_NS))
		return;
	c->logged_ns[w] = now;
	uf_feed_log_warn("feed %s: capture dropping (%s): %llu datagrams not captured since the "
	                 "last warning (%llu MiB of buffer full); the feed goes on",
	                 c->p.feed, why_names[w], (unsigned long long)(n - c->behind_seen),
	                 (unsigned long long)(c->mem_len >> 20));
	c->behind_seen = n;
}

static void *writer_main(void *arg)
{
	struct uf_capture *c = arg;
	struct io_uring ring;
	int fixed = 0;
	int rc = io_uring_queue_init(8, &ring, 0);
	if (rc < 0) {
		uf_feed_log_warn("feed %s: capture writer: io_uring_queue_init: %s: capture off",
		                 c->p.feed, strerror(-rc));
		/* Nothing is ever written: chunks go back so the feed counts io errors. */
	} else {
		struct iovec *iov = calloc(c->nchunks, sizeof(*iov));
		for (uint32_t i = 0; iov && i < c->nchunks; i++) {
			iov[i].iov_base = c->mem + (size_t)i * UF_CAPTURE_CHUNK;
			iov[i].iov_len = UF_CAPTURE_CHUNK;
		}
		fixed = iov && io_uring_register_buffers(&ring, iov, c->nchunks) == 0;
		if (!fixed)
			uf_feed_log_info("feed %s: capture writer: buffers not registered "
			                 "(RLIMIT_MEMLOCK?): plain writes",
			                 c->p.feed);
		free(iov);
	}
	for (;;) {
		uint32_t idx;
		if (!q_pop(&c->full, &idx)) {
			if (uf_load_acquire_u32(&c->stop) && q_len(&c->full) == 0)
				break; /* stop is set after the last hand-over */
			struct timespec ts = {0, UF_CAPTURE_IDLE_NS};
			nanosleep(&ts, NULL);
			check_file(c);
			log_behind(c);
			continue;
		}
		log_behind(c);
		if (rc < 0)
			drop(c, &c->meta[idx], -rc, "io_uring");
		else
			write_chunk(c, &ring, idx, fixed);
		q_push(&c->free, idx);
	}
	close_file(c);
	if (rc >= 0)
		io_uring_queue_exit(&ring);
	return NULL;
}

int uf_capture_open(struct uf_capture *c, const struct uf_capture_params *p,
                    struct uf_feed_stats *st, char *err, size_t errlen)
{
	memset(c, 0, sizeof(*c));
	c->fd = -1;
	c->cur = -1;
	c->p = *p;
	c->st = st;
	if (p->nif < 1 || p->nif > UF_CAPTURE_MAX_IF || !p->rotate_bytes)
		return uf_err_rc(err, errlen, -EINVAL, "capture: %d interfaces, rotate %llu",
		                 p->nif, (unsigned long long)p->rotate_bytes);
	c->nchunks = (uint32_t)(p->buffer_bytes / UF_CAPTURE_CHUNK);
	if (c->nchunks < 2)
		c->nchunks = 2;
	c->mem_len = (size_t)c->nchunks * UF_CAPTURE_CHUNK;
	c->mem = mmap(NULL, c->mem_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (c->mem == MAP_FAILED) {
		c->mem = NULL;
		return uf_err_rc(err, errlen, -errno, "capture: mmap %zu bytes of buffers",
		                 c->mem_len);
	}
	memset(c->mem, 0, c->mem_len); /* fault in now, not on the feed thread */
	c->meta = calloc(c->nchunks, sizeof(*c->meta));
	int rc = -ENOMEM;
	if (!c->meta || q_init(&c->full, c->nchunks) < 0 || q_init(&c->free, c->nchunks) < 0)
		goto out_free;
	for (uint32_t i = 0; i < c->nchunks; i++)
		q_push(&c->free, i);
	for (int i = 0; i < UF_CAPTURE_MAX_IF; i++)
		c->tcp_seq[i] = 1;
	rc = -pthread_create(&c->thread, NULL, writer_main, c);
	if (rc < 0)
		goto out_free;
	c->thread_up = 1;
	return 0;
out_free:
	uf_err_rc(err, errlen, rc, "capture: setting up %u chunks", c->nchunks);
	uf_capture_close(c);
	return rc;
}

void uf_capture_close(struct uf_capture *c)
{
	if (c->thread_up) {
		hand_over(c);
		uf_store_release_u32(&c->stop, 1); /* after the last push: the writer drains */
		pthread_join(c->thread, NULL);
		c->thread_up = 0;
	}
	free(c->full.slots);
	free(c->free.slots);
	free(c->meta);
	if (c->mem)
		munmap(c->mem, c->mem_len);
	memset(c, 0, sizeof(*c));
	c->fd = -1;
	c->cur = -1;
}
