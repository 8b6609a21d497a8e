/* The journal's on-disk format: one file per ring generation and UTC day, holding every record
 * the ring published, in ring order, each with its sequence. Shared by the writer
 * (ring/journal_writer.c, in the daemon) and the reader (ring/journal_reader.c, in
 * libufconsumer). Internal to ring/; docs/journal.md describes it for people.
 *
 *   DIR/RING.YYYYMMDD.GENERATION.ufj
 *   [struct uf_journal_hdr: 128 bytes][struct uf_journal_entry: 80 bytes] x n
 *
 * One sequence space per day: a producer restarted mid-day starts its new ring generation at
 * the sequence after the day's last whole record, and its first file names the generation it
 * continues (prev_generation), so the day's files form one chain of sequences.
 *
 * Each entry carries its own sequence and a CRC32C over itself, so a reader needs nothing but
 * the file: a torn tail (a crash in the middle of a write: a partial entry, or whole entries
 * of zeros or old bytes) fails the CRC or the sequence order and is found by reading back
 * from the end; a corrupted entry in the middle fails its CRC. Sequences strictly increase
 * from entry to entry; a HOLE entry says explicitly that the sequences [seq, seq + count) are
 * not in the journal (the writer was lapped by the ring, or could not write), so a gap is
 * never silent. A file is input to every reader: each field is checked before use. */
#ifndef UF_JOURNAL_FILE_H
#define UF_JOURNAL_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "publish/uf_record.h"
#include "ring/uf_ring_layout.h"

#define UF_JOURNAL_MAGIC       0x4c4e524a46465546ull /* "UFFJRNL" little-endian */
#define UF_JOURNAL_VERSION     1
#define UF_JOURNAL_SUFFIX      ".ufj"
#define UF_JOURNAL_POINTER     "journal" /* file in the ring directory naming the journal dir */
#define UF_JOURNAL_PATH_MAX    512       /* bytes of a journal file path */
#define UF_JOURNAL_MAX_FILES   64        /* files of one ring generation a reader follows */
#define UF_JOURNAL_TAIL_WINDOW 16384     /* entries a writer may have in flight, at most */

/* Every file a ring's private directory can hold, for uf_ring_unlink and the tests' clean-up
 * (test/common/uf_test_rings.h), which must remove the same ones before the directory: data,
 * socket, a journaled ring's pointer to its journal (the journal itself stays). */
#define UF_RING_DIR_LEAVES UF_RING_DATA_NAME, UF_RING_SOCK_NAME, UF_JOURNAL_POINTER

enum uf_journal_entry_kind {
	UF_JOURNAL_RECORD = 1, /* `rec` is the ring's record number `seq` */
	UF_JOURNAL_HOLE = 2,   /* records [seq, seq + rec.shares) are missing; rec.rx_ts is when
	                        * the writer noticed, rec.aux why (enum uf_journal_hole_why) */
};

enum uf_journal_hole_why {
	UF_JOURNAL_HOLE_LAPPED = 1, /* the ring overwrote them before the writer copied them */
	UF_JOURNAL_HOLE_WRITE = 2,  /* the writer could not write them (full, gone, read-only) */
};

/* File header, written once when the file is created. */
struct uf_journal_hdr {
	uint64_t magic;              /* UF_JOURNAL_MAGIC */
	uint32_t version;            /* UF_JOURNAL_VERSION */
	uint32_t hdr_size;           /* sizeof(struct uf_journal_hdr): entries start here */
	uint32_t entry_size;         /* sizeof(struct uf_journal_entry) */
	uint32_t record_size;        /* sizeof(struct uf_record) */
	uint32_t record_version;     /* UF_RECORD_VERSION of the producer */
	uint32_t day;                /* UTC day of the file, YYYYMMDD */
	uint64_t generation;         /* the ring generation: the sequence space of the entries */
	uint64_t first_seq;          /* sequence the first entry starts at */
	uint64_t created_ns;         /* CLOCK_REALTIME when the file was created */
	char ring[UF_RING_NAME_MAX]; /* ring name, NUL-terminated */
	uint64_t prev_generation;    /* the generation whose journal this file continues (a
	                              * restarted producer: its first_seq is the end of that
	                              * generation's last whole record, the same day); 0: none.
	                              * Readers walk these links to read the day across restarts */
	uint8_t pad[28];             /* zero */
	uint32_t crc;                /* CRC32C of the header with this field 0 */
};

_Static_assert(sizeof(struct uf_journal_hdr) == 128, "journal header is 128 bytes");

/* One record (or hole) and its sequence. */
struct uf_journal_entry {
	struct uf_record rec; /* the ring's record as published (zero for a hole but the
	                       * fields named in enum uf_journal_entry_kind) */
	uint64_t seq;         /* its ring sequence (a hole: the first missing one) */
	uint32_t kind;        /* enum uf_journal_entry_kind */
	uint32_t crc;         /* CRC32C of the 76 bytes before it */
};

_Static_assert(sizeof(struct uf_journal_entry) == 80, "journal entry is 80 bytes");

/* CRC32C (Castagnoli) of `len` bytes, continuing from `crc` (0 to start). The SSE4.2
 * instruction where the CPU has it, a table otherwise. */
uint32_t uf_journal_crc32c(uint32_t crc, const void *buf, size_t len);

/* Fills `e` as a record entry (sequence and CRC). */
void uf_journal_entry_record(struct uf_journal_entry *e, const struct uf_record *rec, uint64_t seq);

/* Fills `e` as a hole entry of `count` missing sequences from `seq`. */
void uf_journal_entry_hole(struct uf_journal_entry *e, uint64_t seq, uint64_t count, uint32_t why,
                           uint64_t now_ns);

/* 1 when the entry's CRC and kind are right (its sequence is the caller's to check). */
int uf_journal_entry_ok(const struct uf_journal_entry *e);

/* The first sequence after `e` (seq + 1, or seq + count for a hole). */
uint64_t uf_journal_entry_end(const struct uf_journal_entry *e);

/* Fills a header for a new file (CRC included). */
void uf_journal_hdr_init(struct uf_journal_hdr *h, const char *ring, uint64_t generation,
                         uint64_t first_seq, uint32_t day, uint64_t now_ns);

/* Makes `h` (filled by uf_journal_hdr_init) continue generation `prev` (CRC updated). */
void uf_journal_hdr_link(struct uf_journal_hdr *h, uint64_t prev);

/* NULL when `h` is a journal header this build reads, else the reason. */
const char *uf_journal_hdr_check(const struct uf_journal_hdr *h);

/* The UTC day (YYYYMMDD) of a CLOCK_REALTIME time. */
uint32_t uf_journal_day(uint64_t realtime_ns);

/* Days since the epoch of a YYYYMMDD day, for retention (0 for a malformed day). */
int64_t uf_journal_day_number(uint32_t day);

/* DIR/RING.DAY.GENERATION.ufj into buf; -ENAMETOOLONG. */
int uf_journal_file_name(char *buf, size_t len, const char *dir, const char *ring, uint32_t day,
                         uint64_t generation);

/* The end of the whole, valid entries of an open journal file of `size` bytes: scans back
 * from the last whole entry to the last one whose CRC holds and whose sequence follows the
 * one before it. Sets *valid_bytes (header + good entries), *end_seq (the sequence after the
 * last good entry; the header's first_seq when there is none). Whole entries are checked
 * back from the end until UF_JOURNAL_TAIL_WINDOW of them chain without a break (a writer
 * never has more than that in flight, so nothing older can be torn). Returns 0 or -errno. */
int uf_journal_file_tail(int fd, uint64_t size, const struct uf_journal_hdr *h,
                         uint64_t *valid_bytes, uint64_t *end_seq);

#endif /* UF_JOURNAL_FILE_H */
