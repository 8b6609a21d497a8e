/* Reading a ring's journal (ring/journal_file.h) by sequence: what libufconsumer uses to start
 * a consumer at the start of the day and to seek before the ring's oldest record. Internal to
 * ring/. Cold: every call may read files (pread); nothing here is on the ring's hot path.
 *
 * The reader follows the files of one ring generation in one directory, ordered by their
 * first sequence, and finds a sequence by binary search over the entries (each carries its
 * sequence), then reads on sequentially. Files grow while they are read (the writer
 * appends): what is past the last whole entry is "not yet". Every entry is checked (CRC,
 * kind, sequence order) before it is returned. */
#ifndef UF_JOURNAL_READER_H
#define UF_JOURNAL_READER_H

#include <stddef.h>
#include <stdint.h>

#include "publish/uf_record.h"

struct uf_journal_reader;

/* What the reader saw that was wrong. */
struct uf_journal_reader_stats {
	uint64_t corrupt; /* entries that failed their check with valid entries after them
	                   * (skipped as a hole) */
	uint64_t torn;    /* torn tails met: a partial or failing last entry that stayed so
	                   * on a second look */
	uint64_t holes;   /* hole entries (and gaps between files) met */
	uint64_t files;   /* files followed */
};

/* Opens the journal of ring `ring`, generation `generation`, in `dir`: lists its files.
 * Returns 0, -ENOENT when the directory holds no file of that generation, -errno. */
int uf_journal_reader_open(const char *dir, const char *ring, uint64_t generation,
                           struct uf_journal_reader **out);

void uf_journal_reader_close(struct uf_journal_reader *r);

/* First sequence the journal holds: of the first file of UTC day `day` (YYYYMMDD), or of
 * the first file when `day` is 0 or no file is of that day. */
uint64_t uf_journal_reader_first(struct uf_journal_reader *r, uint32_t day);

/* Reads records from sequence `seq` on, at most `max`. Returns:
 *   n > 0       records seq .. seq + n - 1 in recs;
 *   0           the journal does not hold `seq` yet (past its last whole entry);
 *   -ENODATA    `seq` is before the journal's first sequence;
 *   -EOVERFLOW  `seq` is in a hole (the writer was lapped or could not write) or in a
 *               corrupt stretch: *next gets the first sequence after it the journal holds
 *               (or will hold);
 *   -EBADMSG    `seq` is at a torn tail (a partial or failing last entry of a file that
 *               did not change on a second look): nothing after it can be read (counted);
 *   -errno      a read failed. */
int uf_journal_reader_read(struct uf_journal_reader *r, uint64_t seq, struct uf_record *recs,
                           size_t max, uint64_t *next);

/* The first sequence after the journal's last whole entry (re-reads the sizes). */
uint64_t uf_journal_reader_end(struct uf_journal_reader *r);

void uf_journal_reader_get_stats(const struct uf_journal_reader *r,
                                 struct uf_journal_reader_stats *st);

#endif /* UF_JOURNAL_READER_H */
