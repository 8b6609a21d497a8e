/* Reading a ring's journal by sequence (ring/journal_reader.h). */
#include "ring/journal_reader.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ring/journal_file.h"

#define CHUNK     256 /* entries read per pread when reading on */
#define MAX_CHAIN 16  /* generations followed back through prev_generation links */

struct jfile {
	int fd;                         /* read-only */
	uint64_t first_seq;             /* from its header */
	uint64_t nent;                  /* whole entries at the last look */
	uint64_t size;                  /* bytes at the last look */
	uint32_t day;                   /* its UTC day */
	uint64_t created_ns;            /* from its header */
	uint64_t generation;            /* from its header */
	uint64_t prev_generation;       /* from its header: the generation it continues */
	uint64_t torn_at;               /* entry index of a torn tail counted (UINT64_MAX none) */
	char path[UF_JOURNAL_PATH_MAX]; /* for messages */
};

struct uf_journal_reader {
	char dir[UF_JOURNAL_PATH_MAX - 64]; /* journal directory */
	char ring[UF_RING_NAME_MAX];        /* ring name */
	uint64_t generation;                /* sequence space followed */
	uint64_t gens[MAX_CHAIN];           /* it and the generations it continues (links) */
	int ngens;                          /* gens[0] = generation */
	int nfiles;                         /* files[0..nfiles), by first_seq */
	struct jfile files[UF_JOURNAL_MAX_FILES];
	/* where the next sequential read starts, to skip the search */
	int hint_file;     /* -1 none */
	uint64_t hint_idx; /* entry index */
	uint64_t hint_seq; /* its sequence */
	struct uf_journal_reader_stats st;
	struct uf_journal_entry chunk[CHUNK]; /* read buffer */
};

static int entry_at(const struct jfile *f, uint64_t idx, struct uf_journal_entry *e)
{
	ssize_t n =
	    pread(f->fd, e, sizeof(*e), (off_t)(sizeof(struct uf_journal_hdr) + idx * sizeof(*e)));

	if (n < 0)
		return -errno;
	return n == (ssize_t)sizeof(*e) && uf_journal_entry_ok(e);
}

static void look(struct jfile *f)
{
	struct stat st;

	if (fstat(f->fd, &st) < 0)
		return;
	f->size = (uint64_t)st.st_size;
	f->nent = f->size < sizeof(struct uf_journal_hdr)
	              ? 0
	              : (f->size - sizeof(struct uf_journal_hdr)) / sizeof(struct uf_journal_entry);
}

static int by_first_seq(const void *a, const void *b)
{
	const struct jfile *x = a, *y = b;

	if (x->first_seq != y->first_seq)
		return x->first_seq < y->first_seq ? -1 : 1;
	return x->created_ns < y->created_ns ? -1 : x->created_ns > y->created_ns;
}

static int followed(const struct uf_journal_reader *r, uint64_t gen)
{
	for (int i = 0; i < r->ngens; i++)
		if (r->gens[i] == gen)
			return 1;
	return 0;
}

static int scan_once(struct uf_journal_reader *r);

/* Lists the files of the ring generation and of the generations it continues (a producer
 * restarted mid-day: the first file of a generation links to the one before), again when a
 * new day adds one. Keeps open ones. */
static int scan(struct uf_journal_reader *r)
{
	for (;;) {
		int rc = scan_once(r);
		if (rc < 0 || r->nfiles == 0)
			return rc;
		/* the chain goes back from the first file (lowest sequence) of what we follow */
		uint64_t prev = r->files[0].prev_generation;
		if (prev == 0 || followed(r, prev) || r->ngens == MAX_CHAIN ||
		    prev >= r->files[0].generation)
			return 0;
		r->gens[r->ngens++] = prev;
	}
}

static int scan_once(struct uf_journal_reader *r)
{
	struct dirent *de;
	DIR *d = opendir(r->dir);

	if (!d)
		return -errno;
	while ((de = readdir(d)) && r->nfiles < UF_JOURNAL_MAX_FILES) {
		struct uf_journal_hdr h;
		struct jfile *f = &r->files[r->nfiles];
		size_t len = strlen(de->d_name);
		int fd, known = 0;

		if (len <= strlen(UF_JOURNAL_SUFFIX) ||
		    strcmp(de->d_name + len - strlen(UF_JOURNAL_SUFFIX), UF_JOURNAL_SUFFIX) != 0)
			continue;
		char path[UF_JOURNAL_PATH_MAX];

		if (snprintf(path, sizeof(path), "%s/%s", r->dir, de->d_name) >= (int)sizeof(path))
			continue;
		for (int i = 0; i < r->nfiles; i++)
			known |= strcmp(r->files[i].path, path) == 0;
		if (known)
			continue;
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		if (fd < 0)
			continue;
		if (pread(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h) || uf_journal_hdr_check(&h) ||
		    strcmp(h.ring, r->ring) != 0 || !followed(r, h.generation)) {
			close(fd);
			continue;
		}
		memcpy(f->path, path, sizeof(path));
		f->fd = fd;
		f->first_seq = h.first_seq;
		f->day = h.day;
		f->created_ns = h.created_ns;
		f->generation = h.generation;
		f->prev_generation = h.prev_generation;
		f->torn_at = UINT64_MAX;
		look(f);
		r->nfiles++;
		r->st.files++;
	}
	closedir(d);
	if (r->nfiles)
		qsort(r->files, (size_t)r->nfiles, sizeof(r->files[0]), by_first_seq);
	r->hint_file = -1;
	return 0;
}

int uf_journal_reader_open(const char *dir, const char *ring, uint64_t generation,
                           struct uf_journal_reader **out)
{
	struct uf_journal_reader *r = calloc(1, sizeof(*r));
	int rc;

	if (!r)
		return -ENOMEM;
	if (snprintf(r->dir, sizeof(r->dir), "%s", dir) >= (int)sizeof(r->dir) ||
	    snprintf(r->ring, sizeof(r->ring), "%s", ring) >= (int)sizeof(r->ring)) {
		free(r);
		return -ENAMETOOLONG;
	}
	r->generation = generation;
	r->gens[0] = generation;
	r->ngens = 1;
	r->hint_file = -1;
	rc = scan(r);
	if (rc == 0 && r->nfiles == 0)
		rc = -ENOENT;
	if (rc < 0) {
		uf_journal_reader_close(r);
		return rc;
	}
	*out = r;
	return 0;
}

void uf_journal_reader_close(struct uf_journal_reader *r)
{
	if (!r)
		return;
	for (int i = 0; i < r->nfiles; i++)
		close(r->files[i].fd);
	free(r);
}

uint64_t uf_journal_reader_first(struct uf_journal_reader *r, uint32_t day)
{
	for (int i = 0; day && i < r->nfiles; i++)
		if (r->files[i].day == day)
			return r->files[i].first_seq;
	return r->nfiles ? r->files[0].first_seq : 0;
}

/* The file that should hold `seq`: the last one starting at or before it. */
static int file_of(const struct uf_journal_reader *r, uint64_t seq)
{
	int k = -1;

	for (int i = 0; i < r->nfiles; i++)
		if (r->files[i].first_seq <= seq)
			k = i;
	return k;
}

/* A failing entry at `idx` of file `fi`: corrupt when a valid entry follows it in the file
 * (returns -EOVERFLOW with *next at that entry's sequence, or at the next file's start when
 * the file ends in it and another file follows), else a torn tail (-EBADMSG, counted once)
 * unless the file grew meanwhile (0: the writer is writing it). */
static int bad_entry(struct uf_journal_reader *r, int fi, uint64_t idx, uint64_t *next)
{
	struct jfile *f = &r->files[fi];
	uint64_t size = f->size;
	struct uf_journal_entry e;

	for (uint64_t k = idx + 1; k < f->nent; k++) {
		int rc = entry_at(f, k, &e);
		if (rc < 0)
			return rc;
		if (rc) {
			r->st.corrupt += k - idx;
			*next = e.seq;
			r->hint_file = -1;
			return -EOVERFLOW;
		}
	}
	if (fi + 1 < r->nfiles) { /* this file ends torn; the next goes on */
		r->st.corrupt += f->nent - idx;
		*next = r->files[fi + 1].first_seq;
		r->hint_file = -1;
		return -EOVERFLOW;
	}
	look(f);
	if (f->size != size)
		return 0; /* still being written */
	if (f->torn_at != idx) {
		f->torn_at = idx;
		r->st.torn++;
	}
	return -EBADMSG;
}

/* Index of the last entry of file `fi` whose sequence is <= seq, by binary search (entries
 * strictly increase). -ENOENT when the first entry is already past it; -EOVERFLOW through
 * bad_entry when a probe fails its check. */
static int64_t search(struct uf_journal_reader *r, int fi, uint64_t seq, uint64_t *next)
{
	struct jfile *f = &r->files[fi];
	uint64_t lo = 0, hi = f->nent; /* answer in [lo, hi) */
	struct uf_journal_entry e;

	while (hi - lo > 1) {
		uint64_t mid = lo + (hi - lo) / 2;
		int rc = entry_at(f, mid, &e);
		if (rc < 0)
			return rc;
		if (!rc) {
			/* a bad probe: narrow linearly from lo instead */
			for (uint64_t k = lo; k < hi; k++) {
				rc = entry_at(f, k, &e);
				if (rc < 0)
					return rc;
				if (!rc)
					return (int64_t)k; /* caller reads it and meets the fault */
				if (e.seq > seq)
					return k == 0 ? -ENOENT : (int64_t)k - 1;
			}
			return (int64_t)hi - 1;
		}
		if (e.seq <= seq)
			lo = mid;
		else
			hi = mid;
	}
	(void)next;
	return (int64_t)lo;
}

int uf_journal_reader_read(struct uf_journal_reader *r, uint64_t seq, struct uf_record *recs,
                           size_t max, uint64_t *next)
{
	struct jfile *f;
	uint64_t idx;
	int fi;

	if (r->nfiles == 0 || max == 0)
		return 0;
	if (seq < r->files[0].first_seq)
		return -ENODATA;
	if (r->hint_file >= 0 && r->hint_seq == seq) {
		fi = r->hint_file;
		idx = r->hint_idx;
	} else {
		int64_t k;
		fi = file_of(r, seq);
		f = &r->files[fi];
		look(f);
		if (f->nent == 0)
			goto past_end;
		k = search(r, fi, seq, next);
		if (k < 0)
			return (int)k;
		idx = (uint64_t)k;
	}
	f = &r->files[fi];
	if (idx >= f->nent)
		look(f);
	if (idx >= f->nent)
		goto past_end;
	{
		uint64_t want = CHUNK < max ? CHUNK : max;
		uint64_t have = f->nent - idx;
		ssize_t got;
		size_t n = 0;

		if (want > have)
			want = have;
		got = pread(f->fd, r->chunk, want * sizeof(r->chunk[0]),
		            (off_t)(sizeof(struct uf_journal_hdr) + idx * sizeof(r->chunk[0])));
		if (got < 0)
			return -errno;
		want = (uint64_t)got / sizeof(r->chunk[0]);
		for (uint64_t i = 0; i < want; i++) {
			const struct uf_journal_entry *e = &r->chunk[i];
			if (!uf_journal_entry_ok(e)) {
				if (n)
					break;
				return bad_entry(r, fi, idx + i, next);
			}
			if (e->kind == UF_JOURNAL_HOLE && e->seq <= seq &&
			    seq < uf_journal_entry_end(e)) {
				r->st.holes++;
				*next = uf_journal_entry_end(e);
				r->hint_file = fi;
				r->hint_idx = idx + i + 1;
				r->hint_seq = *next;
				return -EOVERFLOW;
			}
			if (e->seq < seq + n && i == 0 && n == 0)
				goto past_entry; /* the search landed before seq: seq is past it */
			if (e->kind != UF_JOURNAL_RECORD || e->seq != seq + n)
				break;
			recs[n++] = e->rec;
		}
		if (n) {
			r->hint_file = fi;
			r->hint_idx = idx + n;
			r->hint_seq = seq + n;
			return (int)n;
		}
		if (want == 0)
			goto past_end;
		/* the entry at idx is a record after seq: seq falls between entries. Entries
		 * chain, so only a broken file does that: a corrupt stretch */
		r->st.corrupt++;
		*next = r->chunk[0].seq;
		return -EOVERFLOW;
	}
past_entry:
	/* the last entry <= seq ends before seq: seq is past this file's end */
	if (idx + 1 < f->nent) {
		struct uf_journal_entry e;
		int rc = entry_at(f, idx + 1, &e);
		if (rc < 0)
			return rc;
		if (!rc)
			return bad_entry(r, fi, idx + 1, next);
		r->st.corrupt++; /* entries do not chain here */
		*next = e.seq;
		return -EOVERFLOW;
	}
past_end:
	/* past the whole entries of file fi */
	if (fi + 1 >= r->nfiles) {
		int before = r->nfiles, rc = 0;
		if (f->size >
		    sizeof(struct uf_journal_hdr) + f->nent * sizeof(struct uf_journal_entry)) {
			rc = bad_entry(r, fi, f->nent, next); /* a partial entry at the end */
			if (rc != -EBADMSG)
				return rc; /* 0: still being written */
		}
		scan(r); /* a new file (a new day) may have started */
		if (r->nfiles == before)
			return rc;
		r->hint_file = -1;
		return uf_journal_reader_read(r, seq, recs, max, next); /* with the new file */
	}
	if (r->files[fi + 1].first_seq > seq) {
		r->st.holes++; /* a gap between files */
		*next = r->files[fi + 1].first_seq;
		return -EOVERFLOW;
	}
	r->hint_file = -1; /* the next file starts at seq (a new day): read on there */
	return uf_journal_reader_read(r, seq, recs, max, next);
}

uint64_t uf_journal_reader_end(struct uf_journal_reader *r)
{
	struct uf_journal_entry e;
	struct jfile *f;

	if (r->nfiles == 0)
		return 0;
	f = &r->files[r->nfiles - 1];
	look(f);
	for (uint64_t k = f->nent; k > 0; k--)
		if (entry_at(f, k - 1, &e) == 1)
			return uf_journal_entry_end(&e);
	return f->first_seq;
}

void uf_journal_reader_get_stats(const struct uf_journal_reader *r,
                                 struct uf_journal_reader_stats *st)
{
	*st = r->st;
}
