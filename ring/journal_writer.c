/* The journal writer thread (ring/journal_writer.h): ring -> entries -> io_uring writes.
 *
 * Buffers are used in a circle: `fill` is the one being filled, `head` the oldest in flight;
 * they are submitted in circle order, so "every buffer up to X completed" is the on-disk
 * prefix (io_uring may complete them out of order). Continuity is one rule: before entries
 * starting at sequence s are appended to a file whose last entry ends at file_end < s, a HOLE
 * entry [file_end, s) is appended first (why: the last reason the writer skipped). */
#include "ring/journal_writer.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <limits.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/uf_atomic.h"
#include "common/uf_err.h"
#include "common/uf_time.h"
#include "ring/journal_file.h"
#include "ring/ring_util.h"
#include "ring/uf_ring.h"

#define NBUF          8    /* buffers in the circle */
#define BUF_ENTRIES   1024 /* entries per buffer (80 KiB): one write */
#define FSYNC_TAG     UINT64_MAX
#define CHECK_EVERY   1000000000ull /* day change, file still linked, fault retry */
#define LAP_LOG_EVERY 1000000000ull /* at most one lap line per second */

enum buf_state { BUF_FREE = 0, BUF_FILLING, BUF_INFLIGHT, BUF_DONE, BUF_FAILED };

struct jbuf {
	struct uf_journal_entry *e; /* BUF_ENTRIES entries (registered with the ring) */
	uint32_t n;                 /* entries filled */
	uint32_t nrec;              /* of those, records (not holes) */
	uint32_t nhole;             /* of those, holes: counted once written, like the records */
	uint64_t hole_recs;         /* sequences those holes cover */
	int state;                  /* enum buf_state */
	int res;                    /* the write's result */
	uint64_t off;               /* file offset it was written at */
	uint64_t first_seq;         /* sequence of its first entry */
	uint64_t end_seq;           /* sequence after its last entry */
};

struct uf_journal {
	struct uf_ring *r;                  /* the ring followed (this process produces into it) */
	struct uf_journal_options opt;      /* as given; opt.dir points at dir */
	char dir[UF_JOURNAL_PATH_MAX - 64]; /* journal directory */
	pthread_t thread;                   /* the writer */
	int started;                        /* thread runs */
	sem_t ready;                        /* posted by the thread once its io_uring is set up */
	int init_rc;                        /* that setup's result */
	uint32_t stop;                      /* set by uf_journal_stop */
	struct io_uring uring;              /* writes and fsyncs */
	int fixed;                          /* 1: buffers registered (write_fixed) */
	void *mem;                          /* buffer memory */
	struct jbuf bufs[NBUF];             /* the circle */
	int fill;                           /* buffer being filled, -1 none */
	int head;                           /* oldest buffer in flight or done */
	int next;                           /* buffer the next fill takes */
	int inflight;                       /* writes submitted, not reaped */
	int fsync_inflight;                 /* fsyncs submitted, not reaped */
	int fd;                             /* current file, -1 none (failing) */
	char path[UF_JOURNAL_PATH_MAX];     /* its name */
	uint32_t day;                       /* its day */
	uint64_t off;                       /* next write offset in it */
	uint64_t file_end;                  /* sequence after its last appended entry */
	uint64_t pos;                       /* next ring sequence to copy */
	uint64_t prev_gen;                  /* generation the first new file continues (the
	                                     * ring started at its end), 0 none */
	uint32_t skip_why;                  /* enum uf_journal_hole_why of the last skip */
	uint64_t failed_off;                /* lowest offset of a failed write (UINT64_MAX none) */
	uint64_t failed_seq;                /* its first sequence */
	uint64_t next_check_ns;             /* monotonic */
	uint64_t next_fsync_ns;             /* monotonic */
	uint64_t last_lap_log_ns;           /* monotonic */
	uint64_t laps_unlogged;             /* laps since the last lap line */
	int logged_err;                     /* errno of the last fault line */
	uint64_t logged_err_ns;             /* when it was written (monotonic) */
	struct uf_journal_stats st;         /* counters (relaxed atomics: read by get_stats) */
};

/* Counter updates: single writer (this thread), read from others with relaxed loads. */
#define ST_ADD(j, f, v) uf_store_relaxed_u64(&(j)->st.f, (j)->st.f + (uint64_t)(v))
#define ST_SET(j, f, v) uf_store_relaxed_u64(&(j)->st.f, (uint64_t)(v))

static void jlog(struct uf_journal *j, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void jlog(struct uf_journal *j, const char *fmt, ...)
{
	char line[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (j->opt.log)
		j->opt.log(j->opt.log_ctx, line);
	else
		fprintf(stderr, "%s\n", line);
}

const char *uf_journal_fsync_name(int mode)
{
	switch (mode) {
	case UF_JOURNAL_FSYNC_NONE:
		return "none";
	case UF_JOURNAL_FSYNC_INTERVAL:
		return "interval";
	case UF_JOURNAL_FSYNC_BATCH:
		return "every_batch";
	default:
		return NULL;
	}
}

int uf_journal_fsync_parse(const char *name)
{
	for (int m = UF_JOURNAL_FSYNC_NONE; m <= UF_JOURNAL_FSYNC_BATCH; m++)
		if (name && strcmp(name, uf_journal_fsync_name(m)) == 0)
			return m;
	return -EINVAL;
}

static uint64_t ring_tail(const struct uf_journal *j)
{
	/* the slots up to the tail are written before it (the producer's release) */
	return uf_load_acquire_u64(&j->r->hdr->tail);
}

/* ---- files ---- */

/* Reads the header of an open journal file; -EBADMSG when it is not one. */
static int read_hdr(int fd, struct uf_journal_hdr *h)
{
	if (pread(fd, h, sizeof(*h), 0) != (ssize_t)sizeof(*h))
		return -EBADMSG;
	return uf_journal_hdr_check(h) ? -EBADMSG : 0;
}

/* Cuts the torn tail of an open file (counted) and reports where it ends. */
static int cut_tail(struct uf_journal *j, int fd, const struct uf_journal_hdr *h, uint64_t *valid,
                    uint64_t *end_seq)
{
	struct stat st;
	uint64_t size;
	int rc;

	if (fstat(fd, &st) < 0)
		return -errno;
	size = (uint64_t)st.st_size;
	rc = uf_journal_file_tail(fd, size, h, valid, end_seq);
	if (rc < 0)
		return rc;
	if (*valid < size) {
		uint64_t whole = (size - *valid) / sizeof(struct uf_journal_entry);
		uint64_t partial = (size - *valid) % sizeof(struct uf_journal_entry) != 0;
		if (ftruncate(fd, (off_t)*valid) < 0)
			return -errno;
		ST_ADD(j, torn_cut, whole + partial);
		jlog(j,
		     "journal %s: cut a torn tail of %llu bytes (%llu whole entries%s) after "
		     "sequence %llu",
		     h->ring, (unsigned long long)(size - *valid), (unsigned long long)whole,
		     partial ? " and a partial one" : "", (unsigned long long)*end_seq);
	}
	return 0;
}

/* Opens today's file: continues it when it exists (a writer of the same generation ran
 * before), else creates it with first sequence file_end. Sets fd/off/path/day (and file_end
 * when continued). Returns 0 or -errno. */
static int open_file(struct uf_journal *j, uint64_t now_ns)
{
	struct uf_journal_hdr h;
	uint32_t day = uf_journal_day(now_ns);
	uint64_t valid, end;
	int fd, rc;

	rc = uf_journal_file_name(j->path, sizeof(j->path), j->dir, j->r->name, day,
	                          uf_ring_generation(j->r));
	if (rc < 0)
		return rc;
	fd = open(j->path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	if (fd >= 0) {
		rc = read_hdr(fd, &h);
		if (rc == 0 &&
		    (strcmp(h.ring, j->r->name) != 0 || h.generation != uf_ring_generation(j->r)))
			rc = -EBADMSG;
		if (rc == 0)
			rc = cut_tail(j, fd, &h, &valid, &end);
		if (rc == 0 && end > j->pos) {
			rc = -EPROTO; /* entries past what the ring published: not ours */
		}
		if (rc < 0) {
			jlog(j, "journal %s: %s exists but cannot be continued (%s)", j->r->name,
			     j->path, strerror(-rc));
			close(fd);
			return rc;
		}
		j->off = valid;
		j->file_end = end;
		if (j->skip_why == 0)
			j->skip_why = UF_JOURNAL_HOLE_LAPPED;
	} else if (errno == ENOENT) {
		fd = open(j->path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0640);
		if (fd < 0)
			return -errno;
		uf_journal_hdr_init(&h, j->r->name, uf_ring_generation(j->r), j->file_end, day,
		                    now_ns);
		if (j->prev_gen && j->file_end == j->r->hdr->first_seq)
			uf_journal_hdr_link(&h,
			                    j->prev_gen); /* the day goes on across the restart */
		j->prev_gen = 0;                          /* only the first file links */
		if (pwrite(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h)) {
			rc = errno ? -errno : -ENOSPC;
			close(fd);
			unlink(j->path);
			return rc;
		}
		j->off = sizeof(h);
		ST_ADD(j, bytes, sizeof(h));
	} else {
		return -errno;
	}
	j->fd = fd;
	j->day = day;
	ST_ADD(j, files, 1);
	return 0;
}

/* keep_days: removes this ring's files of days before today - keep_days. */
static void retention(struct uf_journal *j, uint64_t now_ns)
{
	int64_t oldest = uf_journal_day_number(uf_journal_day(now_ns)) - (int64_t)j->opt.keep_days;
	struct dirent *de;
	DIR *d;

	if (j->opt.keep_days == 0 || !(d = opendir(j->dir)))
		return;
	while ((de = readdir(d))) {
		char path[UF_JOURNAL_PATH_MAX];
		struct uf_journal_hdr h;
		size_t len = strlen(de->d_name);
		int fd, rc;

		if (len <= strlen(UF_JOURNAL_SUFFIX) ||
		    strcmp(de->d_name + len - strlen(UF_JOURNAL_SUFFIX), UF_JOURNAL_SUFFIX) != 0)
			continue;
		if (snprintf(path, sizeof(path), "%s/%s", j->dir, de->d_name) >= (int)sizeof(path))
			continue;
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		if (fd < 0)
			continue;
		rc = read_hdr(fd, &h);
		close(fd);
		if (rc < 0 || strcmp(h.ring, j->r->name) != 0 ||
		    uf_journal_day_number(h.day) >= oldest || strcmp(path, j->path) == 0)
			continue;
		if (unlink(path) == 0) {
			ST_ADD(j, deleted_files, 1);
			jlog(j, "journal %s: removed %s (keep_days %u)", j->r->name, path,
			     j->opt.keep_days);
		}
	}
	closedir(d);
}

/* The newest file of this ring (by creation time) gets its torn tail cut; when it is of
 * the current generation, the writer continues after it. */
static void recover_newest(struct uf_journal *j)
{
	char best[UF_JOURNAL_PATH_MAX] = "";
	uint64_t best_ns = 0;
	struct dirent *de;
	DIR *d = opendir(j->dir);

	if (!d)
		return;
	while ((de = readdir(d))) {
		char path[UF_JOURNAL_PATH_MAX];
		struct uf_journal_hdr h;
		size_t len = strlen(de->d_name);
		int fd;

		if (len <= strlen(UF_JOURNAL_SUFFIX) ||
		    strcmp(de->d_name + len - strlen(UF_JOURNAL_SUFFIX), UF_JOURNAL_SUFFIX) != 0)
			continue;
		if (snprintf(path, sizeof(path), "%s/%s", j->dir, de->d_name) >= (int)sizeof(path))
			continue;
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		if (fd < 0)
			continue;
		if (read_hdr(fd, &h) == 0 && strcmp(h.ring, j->r->name) == 0 &&
		    h.created_ns >= best_ns) {
			best_ns = h.created_ns;
			snprintf(best, sizeof(best), "%s", path);
		}
		close(fd);
	}
	closedir(d);
	if (best[0]) {
		struct uf_journal_hdr h;
		uint64_t valid, end;
		int fd = open(best, O_RDWR | O_CLOEXEC | O_NOFOLLOW);

		if (fd < 0)
			return;
		if (read_hdr(fd, &h) == 0 && cut_tail(j, fd, &h, &valid, &end) == 0) {
			if (h.generation == uf_ring_generation(j->r) && end <= ring_tail(j)) {
				j->file_end = end; /* continue after its last whole record */
				j->pos = end;
			} else if (h.generation < uf_ring_generation(j->r) && end > 0 &&
			           end == j->r->hdr->first_seq) {
				/* the restarted producer's ring goes on from this file's last whole
				 * record (uf_journal_resume_seq): the new file links to it */
				j->prev_gen = h.generation;
				jlog(j,
				     "journal %s: generation %llu continues the day of generation "
				     "%llu "
				     "at sequence %llu",
				     h.ring, (unsigned long long)uf_ring_generation(j->r),
				     (unsigned long long)h.generation, (unsigned long long)end);
			}
		}
		close(fd);
	}
}

UF_COLD int uf_journal_resume_seq(const char *dir, const char *ring, uint64_t now_ns, uint64_t *seq)
{
	char best[UF_JOURNAL_PATH_MAX] = "";
	struct uf_journal_hdr h, bh;
	uint64_t best_ns = 0, valid, end;
	struct stat st;
	struct dirent *de;
	DIR *d = opendir(dir);
	int fd, rc;

	*seq = 0;
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		char path[UF_JOURNAL_PATH_MAX];
		size_t len = strlen(de->d_name);

		if (len <= strlen(UF_JOURNAL_SUFFIX) ||
		    strcmp(de->d_name + len - strlen(UF_JOURNAL_SUFFIX), UF_JOURNAL_SUFFIX) != 0)
			continue;
		if (snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) >= (int)sizeof(path))
			continue;
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		if (fd < 0)
			continue;
		if (read_hdr(fd, &h) == 0 && strcmp(h.ring, ring) == 0 && h.created_ns >= best_ns) {
			best_ns = h.created_ns;
			bh = h;
			snprintf(best, sizeof(best), "%s", path);
		}
		close(fd);
	}
	closedir(d);
	if (!best[0] || bh.day != uf_journal_day(now_ns))
		return 0; /* no journal of today: the day starts at 0 */
	fd = open(best, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	rc = fstat(fd, &st) < 0 ? -errno : 0;
	if (rc == 0)
		rc = uf_journal_file_tail(fd, (uint64_t)st.st_size, &bh, &valid, &end);
	close(fd);
	if (rc == 0)
		*seq = end;
	return rc;
}

/* Tells consumers where the journal is: uf.NAME/journal holds the directory. */
static int write_pointer(struct uf_journal *j, char *err, size_t errlen)
{
	char rdir[256], tmp[320], final[320];
	int fd, n, rc = 0;

	if (uf_ring_path(rdir, sizeof(rdir), j->r->dir, j->r->name, UF_RING_FILE_DIR) < 0 ||
	    snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", rdir, UF_JOURNAL_POINTER) >=
	        (int)sizeof(tmp) ||
	    snprintf(final, sizeof(final), "%s/%s", rdir, UF_JOURNAL_POINTER) >=
	        (int)sizeof(final)) {
		uf_err_set(err, errlen, "journal %s: ring directory path too long", j->r->name);
		return -ENAMETOOLONG;
	}
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0) {
		rc = -errno;
		uf_err_set(err, errlen, "journal %s: %s: %s", j->r->name, tmp, strerror(errno));
		return rc;
	}
	n = dprintf(fd, "%s\n", j->dir);
	if (n < 0 || fchmod(fd, 0644) < 0)
		rc = -EIO;
	close(fd);
	if (rc == 0 && rename(tmp, final) < 0)
		rc = -errno;
	if (rc < 0) {
		unlink(tmp);
		uf_err_set(err, errlen, "journal %s: cannot write %s: %s", j->r->name, final,
		           strerror(-rc));
	}
	return rc;
}

/* ---- faults ---- */

/* A write or open failed: stop writing until the next check, count, tell once. */
static void fault(struct uf_journal *j, int err, const char *what)
{
	uint64_t now = uf_now_mono_ns();
	int was_failing = j->st.failing;

	/* the state first, then the count: a reader that sees the count sees why */
	uf_store_relaxed_u32((uint32_t *)&j->st.failing, 1);
	uf_store_relaxed_u32((uint32_t *)&j->st.last_error, (uint32_t)err);
	uf_store_release_u64(&j->st.write_errors, j->st.write_errors + 1);

	/* once per fault, not once per retry: again only for another errno or after a minute */
	if (!was_failing && (err != j->logged_err || now - j->logged_err_ns > 60000000000ull)) {
		j->logged_err = err;
		j->logged_err_ns = now;
		jlog(j,
		     "journal %s: %s %s: %s; records are dropped (counted) until it can write "
		     "again, then a hole entry marks them",
		     j->r->name, what, j->path[0] ? j->path : j->dir, strerror(err));
	}
	j->skip_why = UF_JOURNAL_HOLE_WRITE;
}

/* ---- buffers and io_uring ---- */

static void reap_one(struct uf_journal *j, struct io_uring_cqe *cqe)
{
	uint64_t tag = io_uring_cqe_get_data64(cqe);

	if (tag == FSYNC_TAG) {
		j->fsync_inflight--;
		if (cqe->res == -ECANCELED)
			return; /* linked to a write that failed: that write is the fault */
		if (cqe->res < 0)
			fault(j, -cqe->res, "fdatasync");
		else
			ST_ADD(j, fsyncs, 1);
		return;
	}
	struct jbuf *b = &j->bufs[tag];
	uint64_t len = (uint64_t)b->n * sizeof(struct uf_journal_entry);

	j->inflight--;
	b->res = cqe->res;
	if (cqe->res < 0 || (uint64_t)cqe->res != len) {
		b->state = BUF_FAILED;
		fault(j, cqe->res < 0 ? -cqe->res : ENOSPC, "write to");
		if (b->off < j->failed_off) {
			j->failed_off = b->off;
			j->failed_seq = b->first_seq;
		}
		return;
	}
	b->state = BUF_DONE;
}

/* Frees done buffers in circle order; the written prefix advances with them. */
static void advance_head(struct uf_journal *j)
{
	for (;;) {
		struct jbuf *b = &j->bufs[j->head];
		if (b->state == BUF_DONE && b->off < j->failed_off) {
			ST_ADD(j, records, b->nrec);
			ST_ADD(j, holes, b->nhole);
			ST_ADD(j, hole_records, b->hole_recs);
			ST_ADD(j, bytes, (uint64_t)b->n * sizeof(struct uf_journal_entry));
			ST_SET(j, written_seq, b->end_seq);
		} else if (b->state == BUF_DONE) { /* after a failed write: cut with it */
			ST_ADD(j, dropped, b->nrec);
		} else if (b->state == BUF_FAILED) {
			ST_ADD(j, dropped, b->nrec);
		} else {
			return;
		}
		b->state = BUF_FREE;
		b->n = 0;
		b->nrec = 0;
		b->nhole = 0;
		b->hole_recs = 0;
		j->head = (j->head + 1) % NBUF;
	}
}

static void reap(struct uf_journal *j, int wait)
{
	struct io_uring_cqe *cqe;

	if (wait && io_uring_wait_cqe(&j->uring, &cqe) == 0) {
		reap_one(j, cqe);
		io_uring_cqe_seen(&j->uring, cqe);
	}
	while (io_uring_peek_cqe(&j->uring, &cqe) == 0) {
		reap_one(j, cqe);
		io_uring_cqe_seen(&j->uring, cqe);
	}
	advance_head(j);
}

/* The buffer to append to: the one being filled, else the next free one (waits for a
 * completion when the circle is full: the writer waits, never the feed). */
static struct jbuf *fill_buf(struct uf_journal *j)
{
	struct jbuf *b;

	if (j->fill >= 0)
		return &j->bufs[j->fill];
	while (j->bufs[j->next].state != BUF_FREE)
		reap(j, 1);
	j->fill = j->next;
	j->next = (j->next + 1) % NBUF;
	b = &j->bufs[j->fill];
	b->state = BUF_FILLING;
	b->n = 0;
	b->nrec = 0;
	b->nhole = 0;
	b->hole_recs = 0;
	b->first_seq = j->file_end;
	return b;
}

static void submit_fill(struct uf_journal *j)
{
	struct jbuf *b;
	struct io_uring_sqe *sqe;
	uint32_t len;

	if (j->fill < 0)
		return;
	b = &j->bufs[j->fill];
	j->fill = -1;
	if (b->n == 0) {
		b->off = j->off; /* nothing: frees in order, the written prefix unchanged */
		b->end_seq = j->file_end;
		b->state = BUF_DONE;
		advance_head(j);
		return;
	}
	len = b->n * (uint32_t)sizeof(struct uf_journal_entry);
	b->off = j->off;
	b->end_seq = j->file_end;
	j->off += len;
	sqe = io_uring_get_sqe(&j->uring);
	if (!sqe) {
		io_uring_submit(&j->uring);
		sqe = io_uring_get_sqe(&j->uring);
	}
	if (j->fixed)
		io_uring_prep_write_fixed(sqe, j->fd, b->e, len, b->off, (int)(b - j->bufs));
	else
		io_uring_prep_write(sqe, j->fd, b->e, len, b->off);
	io_uring_sqe_set_data64(sqe, (uint64_t)(b - j->bufs));
	if (j->opt.fsync == UF_JOURNAL_FSYNC_BATCH) {
		struct io_uring_sqe *fs;
		sqe->flags |= IOSQE_IO_LINK; /* the fdatasync runs after this write succeeds */
		fs = io_uring_get_sqe(&j->uring);
		if (!fs) {
			io_uring_submit(&j->uring);
			fs = io_uring_get_sqe(&j->uring);
		}
		io_uring_prep_fsync(fs, j->fd, IORING_FSYNC_DATASYNC);
		io_uring_sqe_set_data64(fs, FSYNC_TAG);
		j->fsync_inflight++;
	}
	b->state = BUF_INFLIGHT;
	j->inflight++;
	io_uring_submit(&j->uring);
}

/* Appends one entry slot for sequence `seq`, after a hole entry when the file does not
 * reach `seq` yet (the one continuity rule). Returns the entry to fill. */
static struct uf_journal_entry *append(struct uf_journal *j, uint64_t seq)
{
	struct jbuf *b = fill_buf(j);

	if (seq != j->file_end) {
		uint64_t count = seq - j->file_end;
		uf_journal_entry_hole(&b->e[b->n++], j->file_end, count, j->skip_why,
		                      uf_now_realtime_ns());
		b->nhole++; /* counted when written: a failed write makes it again later */
		b->hole_recs += count;
		j->file_end = seq;
		if (b->n == BUF_ENTRIES) {
			submit_fill(j);
			b = fill_buf(j);
		}
	}
	return &b->e[b->n];
}

/* Counts the entry `append` returned and submits a full buffer. */
static void appended(struct uf_journal *j, uint64_t end_seq, int is_record)
{
	struct jbuf *b = &j->bufs[j->fill];

	b->n++;
	b->nrec += is_record;
	j->file_end = end_seq;
	if (b->n == BUF_ENTRIES)
		submit_fill(j);
}

/* Waits for every write in flight (and fsync). */
static void drain(struct uf_journal *j)
{
	submit_fill(j);
	while (j->inflight > 0 || j->fsync_inflight > 0)
		reap(j, 1);
	advance_head(j);
}

/* After a failed write: waits for the rest, forgets the file from the failed offset on (the
 * bytes after it are not a valid prefix) and closes it; the records from there become a hole
 * when a file can be written again. */
static void abandon_file(struct uf_journal *j)
{
	drain(j);
	if (j->fd >= 0) {
		if (j->failed_off != UINT64_MAX) {
			if (ftruncate(j->fd, (off_t)j->failed_off) == 0)
				j->off = j->failed_off;
			j->file_end = j->failed_seq;
		}
		close(j->fd);
		j->fd = -1;
	}
	j->failed_off = UINT64_MAX;
}

/* Once a second: file removed (its directory gone), new day, and recovery from a fault. */
static void check(struct uf_journal *j, uint64_t now_mono)
{
	uint64_t now = uf_now_realtime_ns();
	struct stat st;

	j->next_check_ns = now_mono + CHECK_EVERY;
	if (j->fd >= 0) {
		/* the file must still be where readers look: removed, or its directory removed
		 * or renamed, and the writes would go nowhere anyone reads */
		struct stat at;
		if (fstat(j->fd, &st) < 0 || st.st_nlink == 0 || stat(j->path, &at) < 0 ||
		    at.st_ino != st.st_ino || at.st_dev != st.st_dev) {
			fault(j, ENOENT, "file no longer at its path:");
			abandon_file(j);
		}
	}
	if (j->fd >= 0 && uf_journal_day(now) != j->day) {
		drain(j);
		close(j->fd);
		j->fd = -1;
		retention(j, now);
	}
	if (j->fd < 0) {
		int rc = open_file(j, now);
		if (rc < 0) {
			fault(j, -rc, "cannot open a file in");
			return;
		}
	}
	if (j->st.failing) { /* a file is open again (or only an fdatasync had failed) */
		jlog(j, "journal %s: writing again to %s (the records missed are a hole)",
		     j->r->name, j->path);
		uf_store_relaxed_u32((uint32_t *)&j->st.failing, 0);
	}
}

/* The ring lapped the writer at `from`: skip to where a reader resumes. */
static void lapped(struct uf_journal *j, uint64_t from, uint64_t now_mono)
{
	uint64_t claim = uf_load_acquire_u64(&j->r->hdr->claim);
	uint64_t resume = uf_ring_resume_seq(claim, j->r->mask + 1);

	if (resume <= from)
		resume = from + 1;
	j->pos = resume;
	j->skip_why = UF_JOURNAL_HOLE_LAPPED;
	ST_ADD(j, laps, 1);
	j->laps_unlogged++;
	if (now_mono - j->last_lap_log_ns >= LAP_LOG_EVERY) {
		jlog(j,
		     "journal %s: the ring lapped the writer (%llu time(s) since the last line): "
		     "sequences %llu-%llu are a hole in the journal",
		     j->r->name, (unsigned long long)j->laps_unlogged, (unsigned long long)from,
		     (unsigned long long)resume - 1);
		j->laps_unlogged = 0;
		j->last_lap_log_ns = now_mono;
	}
}

/* Copies what the ring has from pos into entries. Returns the records copied. */
static uint64_t copy_from_ring(struct uf_journal *j, uint64_t tail, uint64_t now_mono)
{
	const struct uf_record *slots = j->r->slots;
	uint64_t cap = j->r->mask + 1, mask = j->r->mask, done = 0;

	while (j->pos < tail) {
		struct uf_journal_entry *e = append(j, j->pos);
		struct jbuf *b = &j->bufs[j->fill];
		uint64_t n = tail - j->pos, room = BUF_ENTRIES - b->n, p = j->pos;

		if (n > room)
			n = room;
		for (uint64_t i = 0; i < n; i++)
			e[i].rec = slots[(p + i) & mask];
		uf_fence_acquire(); /* the copies complete before the claim is re-read */
		if (uf_load_relaxed_u64(&j->r->hdr->claim) - p > cap) {
			lapped(j, p, now_mono); /* a slot may have been rewritten during the copy */
			return done;
		}
		for (uint64_t i = 0; i < n; i++) {
			uf_journal_entry_record(&e[i], &e[i].rec, p + i);
			if (i + 1 < n) {
				b->n++;
				b->nrec++;
			}
		}
		j->pos = p + n;
		appended(j, p + n, 1);
		done += n;
	}
	return done;
}

/* The writer's io_uring, made on (and owned by) the writer thread: its task work (completions
 * of the io-wq workers, the ring's teardown) then interrupts only this thread, never the
 * process's other threads (a consumer's socket call in the same process would see EINTR). */
static int uring_setup(struct uf_journal *j)
{
	struct iovec iov[NBUF];
	int rc = io_uring_queue_init(4 * NBUF, &j->uring, 0);

	if (rc < 0)
		return rc;
	for (int i = 0; i < NBUF; i++) {
		iov[i].iov_base = j->bufs[i].e;
		iov[i].iov_len = BUF_ENTRIES * sizeof(struct uf_journal_entry);
	}
	/* registered buffers spare a page pin per write; without (RLIMIT_MEMLOCK) plain writes */
	j->fixed = io_uring_register_buffers(&j->uring, iov, NBUF) == 0;
	return 0;
}

static void *writer_main(void *arg)
{
	struct uf_journal *j = arg;
	uint64_t cap = j->r->mask + 1;

	j->init_rc = uring_setup(j);
	sem_post(&j->ready); /* uf_journal_start reads init_rc after this */
	if (j->init_rc < 0)
		return NULL;

	for (;;) {
		uint64_t now = uf_now_mono_ns();
		uint64_t tail;

		reap(j, 0);
		if (j->failed_off != UINT64_MAX)
			abandon_file(j);
		if (now >= j->next_check_ns)
			check(j, now);
		if (j->opt.fsync == UF_JOURNAL_FSYNC_INTERVAL && now >= j->next_fsync_ns &&
		    j->fd >= 0) {
			struct io_uring_sqe *sqe = io_uring_get_sqe(&j->uring);
			j->next_fsync_ns = now + (uint64_t)j->opt.interval_ms * 1000000ull;
			if (sqe) {
				io_uring_prep_fsync(sqe, j->fd, IORING_FSYNC_DATASYNC);
				io_uring_sqe_set_data64(sqe, FSYNC_TAG);
				j->fsync_inflight++;
				io_uring_submit(&j->uring);
			}
		}
		tail = ring_tail(j);
		ST_SET(j, position, j->pos);
		if (tail - j->pos > cap) {
			lapped(j, j->pos, now);
			continue;
		}
		if (j->pos == tail) {
			submit_fill(j); /* caught up: what is buffered goes out now */
			if (uf_load_acquire_u32(&j->stop) && ring_tail(j) == j->pos)
				break;
			struct timespec ts = {0, (long)j->opt.idle_us * 1000};
			nanosleep(&ts, NULL);
			continue;
		}
		if (j->fd < 0) { /* failing: follow the ring, drop, hole later */
			ST_ADD(j, dropped, tail - j->pos);
			j->pos = tail;
			continue;
		}
		copy_from_ring(j, tail, now);
	}
	drain(j);
	if (j->failed_off != UINT64_MAX)
		abandon_file(j);
	if (j->fd >= 0 && j->opt.fsync != UF_JOURNAL_FSYNC_NONE && fdatasync(j->fd) == 0)
		ST_ADD(j, fsyncs, 1);
	ST_SET(j, position, j->pos);
	io_uring_queue_exit(&j->uring); /* on the thread that owns it */
	return NULL;
}

/* ---- setup ---- */

UF_COLD int uf_journal_start(struct uf_ring *r, const struct uf_journal_options *opt,
                             struct uf_journal **out, char *err, size_t errlen)
{
	struct uf_journal *j;
	struct stat st;
	char real[PATH_MAX];
	int rc;

	if (!r || !opt || !opt->dir || !out) {
		uf_err_set(err, errlen, "journal: no ring, options or directory");
		return -EINVAL;
	}
	if (!realpath(opt->dir, real) || stat(real, &st) < 0 || !S_ISDIR(st.st_mode)) {
		rc = errno ? -errno : -ENOTDIR;
		uf_err_set(err, errlen, "journal %s: directory %s: %s", r->name, opt->dir,
		           strerror(-rc));
		return rc;
	}
	if (access(real, W_OK) < 0) {
		rc = -errno;
		uf_err_set(err, errlen, "journal %s: directory %s is not writable: %s", r->name,
		           real, strerror(errno));
		return rc;
	}
	j = calloc(1, sizeof(*j));
	if (!j) {
		uf_err_set(err, errlen, "journal %s: out of memory", r->name);
		return -ENOMEM;
	}
	if (strlen(real) >= sizeof(j->dir)) {
		free(j);
		uf_err_set(err, errlen, "journal %s: directory path too long", r->name);
		return -ENAMETOOLONG;
	}
	snprintf(j->dir, sizeof(j->dir), "%s", real);
	j->r = r;
	j->opt = *opt;
	j->opt.dir = j->dir;
	if (j->opt.interval_ms == 0)
		j->opt.interval_ms = 1000;
	if (j->opt.idle_us == 0)
		j->opt.idle_us = 200;
	j->fd = -1;
	j->fill = -1;
	j->failed_off = UINT64_MAX;
	j->pos = ring_tail(j);
	j->file_end = j->pos;
	recover_newest(j);
	ST_SET(j, written_seq, j->file_end);
	rc = posix_memalign(&j->mem, 4096, NBUF * BUF_ENTRIES * sizeof(struct uf_journal_entry));
	if (rc != 0) {
		rc = -rc;
		uf_err_set(err, errlen, "journal %s: out of memory", r->name);
		goto out_free;
	}
	for (int i = 0; i < NBUF; i++)
		j->bufs[i].e = (struct uf_journal_entry *)j->mem + (size_t)i * BUF_ENTRIES;
	rc = open_file(j, uf_now_realtime_ns());
	if (rc < 0) {
		uf_err_set(err, errlen, "journal %s: cannot open %s: %s", r->name, j->path,
		           strerror(-rc));
		goto out_mem;
	}
	ST_SET(j, written_seq, j->file_end);
	retention(j, uf_now_realtime_ns());
	rc = write_pointer(j, err, errlen);
	if (rc < 0)
		goto out_file;
	j->next_check_ns = uf_now_mono_ns() + CHECK_EVERY;
	j->next_fsync_ns = uf_now_mono_ns() + (uint64_t)j->opt.interval_ms * 1000000ull;
	if (sem_init(&j->ready, 0, 0) < 0) {
		rc = -errno;
		goto out_file;
	}
	rc = -pthread_create(&j->thread, NULL, writer_main, j);
	if (rc < 0) {
		uf_err_set(err, errlen, "journal %s: pthread_create: %s", r->name, strerror(-rc));
		goto out_sem;
	}
	while (sem_wait(&j->ready) < 0 && errno == EINTR)
		;
	if (j->init_rc < 0) {
		rc = j->init_rc;
		pthread_join(j->thread, NULL);
		uf_err_set(err, errlen, "journal %s: io_uring_queue_init: %s", r->name,
		           strerror(-rc));
		goto out_sem;
	}
	j->started = 1;
	*out = j;
	return 0;

out_sem:
	sem_destroy(&j->ready);
out_file:
	close(j->fd);
out_mem:
	free(j->mem);
out_free:
	free(j);
	return rc;
}

UF_COLD void uf_journal_stop(struct uf_journal *j)
{
	if (!j)
		return;
	uf_store_release_u32(&j->stop, 1);
	if (j->started)
		pthread_join(j->thread, NULL); /* it drained and closed its io_uring */
	if (j->fd >= 0)
		close(j->fd);
	sem_destroy(&j->ready);
	free(j->mem);
	free(j);
}

void uf_journal_get_stats(const struct uf_journal *j, struct uf_journal_stats *st)
{
	const struct uf_journal_stats *w = &j->st;
	uint64_t tail;

#define LOAD(f) st->f = uf_load_relaxed_u64(&w->f)
	/* the count before the state it follows (fault(): state, then release of the count) */
	st->write_errors = uf_load_acquire_u64(&w->write_errors);
	LOAD(position);
	LOAD(written_seq);
	LOAD(records);
	LOAD(bytes);
	LOAD(files);
	LOAD(holes);
	LOAD(hole_records);
	LOAD(laps);
	LOAD(dropped);
	LOAD(fsyncs);
	LOAD(torn_cut);
	LOAD(deleted_files);
#undef LOAD
	st->last_error = (int32_t)uf_load_relaxed_u32((const uint32_t *)&w->last_error);
	st->failing = (int32_t)uf_load_relaxed_u32((const uint32_t *)&w->failing);
	tail = ring_tail(j);
	st->lag = tail > st->written_seq ? tail - st->written_seq : 0;
}

UF_COLD int uf_journal_sync(struct uf_journal *j, int64_t timeout_ns)
{
	uint64_t target = ring_tail(j);
	uint64_t deadline = uf_now_mono_ns() + (uint64_t)timeout_ns;

	while (uf_load_relaxed_u64(&j->st.written_seq) < target) {
		struct timespec ts = {0, 100000};
		if (uf_now_mono_ns() >= deadline)
			return -ETIMEDOUT;
		nanosleep(&ts, NULL);
	}
	return 0;
}
