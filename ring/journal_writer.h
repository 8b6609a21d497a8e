/* The journal writer: a thread that reads a ring in this process the way a consumer does and
 * appends every record to the day's journal file with io_uring (format: ring/journal_file.h,
 * docs/journal.md). The feed thread never waits for it and never knows it exists: the writer
 * only loads the ring's tail and claim and copies slots. When it falls more than a ring
 * behind, the ring has overwritten what it had not copied: it writes a HOLE entry for exactly
 * those sequences (counted, logged), and goes on. When the directory cannot be written (full,
 * gone, read-only), it keeps following the ring, drops what it cannot write, retries once a
 * second and writes one HOLE entry for what was lost once it can write again.
 *
 * A file per ring generation and UTC day: DIR/RING.YYYYMMDD.GENERATION.ufj. At start the
 * writer cuts the torn tail of the ring's newest file (a crash mid-write: counted) and, when
 * that file is of the ring's current generation, continues it after its last whole record
 * (re-reading from the ring what is still there, a HOLE for the rest); when it is of an
 * earlier generation whose last whole record ends where the ring starts (a producer restarted
 * mid-day with uf_journal_resume_seq), the new file links to it (prev_generation). It writes the
 * journal directory into the ring's directory (uf.NAME/journal) so consumers find it. */
#ifndef UF_JOURNAL_WRITER_H
#define UF_JOURNAL_WRITER_H

#include <stddef.h>
#include <stdint.h>

#include "common/uf_compiler.h"

struct uf_ring;
struct uf_journal;

enum uf_journal_fsync {
	UF_JOURNAL_FSYNC_NONE = 0,     /* the page cache decides: survives a daemon crash, not a
	                                * power loss */
	UF_JOURNAL_FSYNC_INTERVAL = 1, /* fdatasync every interval_ms: a power loss loses at most
	                                * that much */
	UF_JOURNAL_FSYNC_BATCH = 2,    /* fdatasync linked after every write */
};

/* Called from the writer thread with one line (no newline); NULL: stderr. */
typedef void (*uf_journal_log_fn)(void *ctx, const char *line);

struct uf_journal_options {
	const char *dir;       /* directory of the journal files (must exist) */
	int fsync;             /* enum uf_journal_fsync */
	uint32_t interval_ms;  /* UF_JOURNAL_FSYNC_INTERVAL period; 0 = 1000 */
	uint32_t keep_days;    /* files of days older than today - keep_days are deleted at
	                        * start and at each new day; 0 = keep everything */
	uint32_t idle_us;      /* sleep when the ring has nothing new; 0 = 200 */
	uf_journal_log_fn log; /* where faults are told (once per kind of fault per file) */
	void *log_ctx;         /* passed to log */
};

/* What the writer did. Read from any thread (each field is an atomic copy). */
struct uf_journal_stats {
	uint64_t position;      /* next ring sequence the writer will copy */
	uint64_t written_seq;   /* every sequence < this is on disk (or in an explicit hole) */
	uint64_t lag;           /* records published the writer has not written yet */
	uint64_t records;       /* records written */
	uint64_t bytes;         /* bytes written (entries and headers) */
	uint64_t files;         /* files created or continued */
	uint64_t holes;         /* HOLE entries written (laps and write faults; counted when
	                         * their write completed, so they match what readers meet) */
	uint64_t hole_records;  /* sequences they cover */
	uint64_t laps;          /* times the ring lapped the writer */
	uint64_t write_errors;  /* writes or opens that failed (full, gone, read-only, ...) */
	uint64_t dropped;       /* records not written because of those faults */
	uint64_t fsyncs;        /* fdatasync calls completed */
	uint64_t torn_cut;      /* entries of a torn tail cut at start (plus one per file with
	                         * a partial entry) */
	uint64_t deleted_files; /* files removed by keep_days */
	int32_t last_error;     /* errno of the last fault, 0 when none */
	int32_t failing;        /* 1 while the writer cannot write */
};

/* Starts the writer of ring `r` (a ring this process produces into): checks the directory,
 * cuts and continues the ring's newest file as described above, sets up io_uring with
 * registered buffers and starts the thread. Cold: allocates, opens, starts a thread.
 * Returns 0 or -errno with one line in `err`. */
UF_COLD int uf_journal_start(struct uf_ring *r, const struct uf_journal_options *opt,
                             struct uf_journal **out, char *err, size_t errlen);

/* Where a ring restarted today must start so that the day's journal in `dir` goes on without
 * a gap or a repeat: the sequence after the last whole record of the ring's newest file when
 * that file is of today's UTC day (of `now_ns`), else 0. Reads only (the torn tail is cut by
 * uf_journal_start, which then links the new generation's file to that one). Call before
 * uf_ring_create and pass it as uf_ring_options.first_seq. Returns 0 or -errno (*seq 0). */
UF_COLD int uf_journal_resume_seq(const char *dir, const char *ring, uint64_t now_ns,
                                  uint64_t *seq);

/* Writes what the ring holds that the writer has not, waits for the writes (and an
 * fdatasync unless fsync is none), stops the thread, frees `j`. Call before the ring is
 * closed. NULL is fine. */
UF_COLD void uf_journal_stop(struct uf_journal *j);

/* Copies the writer's counters. Never waits. */
void uf_journal_get_stats(const struct uf_journal *j, struct uf_journal_stats *st);

/* Blocks until the writer has written every record published before the call (or `timeout_ns`
 * passed, -ETIMEDOUT). For tests and shutdown; polls every 100 us. */
UF_COLD int uf_journal_sync(struct uf_journal *j, int64_t timeout_ns);

/* The name of an fsync mode ("none", "interval", "every_batch"), and the reverse (-EINVAL). */
const char *uf_journal_fsync_name(int mode);
int uf_journal_fsync_parse(const char *name);

#endif /* UF_JOURNAL_WRITER_H */
