/* Shared-memory layout of one uringfeed ring: the contract between the producer (uf_ring) and
 * every consumer (libufconsumer). Internal to ring/: other modules use uf_ring.h or
 * ufconsumer.h.
 *
 * A ring named NAME lives in a private directory DIR/uf.NAME (DIR: /dev/shm by default),
 * created by the producer, mode 0700 (0750 with a group), never writable by anyone else:
 *
 *   uf.NAME/data  producer-written, consumers open it O_RDONLY and map it PROT_READ:
 *                 [struct uf_ring_hdr][records: capacity x 64 B][book image]
 *                 allocated with fallocate (a full tmpfs is an error at create, not a SIGBUS
 *                 later); consumers cannot write, truncate or replace it.
 *   uf.NAME/sock  Unix stream socket: hands every connecting consumer the consumer table
 *                 (struct uf_ring_hello + the table's fd, SCM_RIGHTS).
 *   consumer table: a memfd sealed with F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL, the only
 *                 memory consumers write: [struct uf_ring_ctable][struct uf_ring_cslot x nslots]
 *
 * Trust boundary: the table is input to the producer, never state. The producer keeps its own
 * copies of nslots, the size and the generation, bounds every loop by them, and treats what
 * it reads there (pids, sleepers, flags, counters) as claims. The seals make the table
 * impossible to shrink, so no consumer can make a mapping of it fault (SIGBUS) in the
 * producer or in another consumer: a hostile member of the ring's group can falsify the
 * table's numbers (other consumers' statistics, spurious FUTEX_WAKEs) and nothing else. The
 * producer detects and repairs a damaged table header and sleeper count (uf_ring_reap).
 *
 * Restart: the producer builds the data file and the socket under temporary names in the
 * directory and rename()s them over the old ones (socket first, data last); on first creation
 * it builds the whole directory under a temporary name and renames the directory, so the name
 * uf.NAME appears complete. A consumer still mapping the old data file notices that the name
 * now points at another inode (uf_consumer_next returns -ESTALE).
 *
 * Sequences: record number s (first_seq, first_seq + 1, ... since this generation started;
 * first_seq is 0 unless the producer continues a day's journal, docs/journal.md) lives in
 * slot s & (capacity - 1). `tail` is the number of records published; `claim` is tail plus the
 * records being written right now. A consumer that copied slot s checks afterwards that
 * claim - s <= capacity; otherwise the slot may have been overwritten during the copy and the
 * record is discarded as lapped (never returned torn).
 */
#ifndef UF_RING_LAYOUT_H
#define UF_RING_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include "common/uf_compiler.h"
#include "publish/uf_record.h"
#include "publish/uf_level.h"

#define UF_RING_MAGIC          0x474e4952464d5546ull /* "UFMFRING" little-endian */
#define UF_RING_CT_MAGIC       0x534e4f4346465546ull /* "UFFCONS" */
#define UF_RING_LAYOUT_VERSION 2 /* 2: a status slot per code (was 8 slots, first come) */
#define UF_RING_IMAGE_MAGIC    0x45474d4946465546ull /* "UFFIMGE" */

#define UF_RING_NAME_MAX     32 /* ring name bytes incl. NUL */
#define UF_RING_MAX_DEPTH    64 /* book image levels per side, upper bound */
#define UF_RING_STATUS_SLOTS 20 /* status slots per image entry: slot code - 1 */

/* Every defined status code has its slot, so no status is ever refused for want of room. A new
 * UF_STATUS_* code stops the build here: raise the slots and UF_RING_LAYOUT_VERSION together
 * (a consumer of the old layout must refuse the ring, not misread its entries). */
_Static_assert(UF_RING_STATUS_SLOTS >= UF_STATUS_MAX, "an image slot for every status code");

enum uf_ring_state {
	UF_RING_STATE_OPEN = 1,   /* producer running */
	UF_RING_STATE_CLOSED = 2, /* producer shut down cleanly; nothing more will come */
};

/* Header of the data file. Three lines written by the producer only; consumers read them. */
struct uf_ring_hdr {
	/* line 0: written once at creation, read by attach */
	uint64_t magic;          /* UF_RING_MAGIC */
	uint32_t layout_version; /* UF_RING_LAYOUT_VERSION */
	uint32_t record_size;    /* sizeof(struct uf_record) */
	uint32_t record_version; /* UF_RECORD_VERSION of the producer */
	uint32_t hugepages;      /* 0 small pages, 1 transparent huge pages granted, 2 hugetlbfs */
	uint64_t capacity;       /* records, power of two */
	uint64_t generation;     /* changes on every producer start (strictly increasing) */
	uint64_t created_ns;     /* CLOCK_REALTIME at creation */
	uint64_t ring_off;       /* byte offset of slot 0 */
	uint64_t image_off;      /* byte offset of struct uf_image_hdr */
	uint64_t file_size;      /* total bytes of the data file */
	int32_t producer_pid;    /* pid of the producer process */
	int32_t numa_node;       /* node the memory was bound to, -1 when not bound */
	uint64_t producer_start; /* producer's /proc starttime: tells a dead producer from a
	                          * reused pid */
	uint64_t first_seq;      /* sequence of this generation's first record: the records
	                          * before it are in the journal of the day (a restarted
	                          * producer continues the day's sequence), never in the slots */
	uint8_t pad0[UF_FALSE_SHARING - 96];

	/* line 1: lifecycle, written at start and at close */
	uint32_t state;              /* enum uf_ring_state */
	uint32_t pad1a;              /* keeps closed_ns aligned */
	uint64_t closed_ns;          /* CLOCK_REALTIME when closed, 0 while open */
	char name[UF_RING_NAME_MAX]; /* ring name, NUL-terminated */
	uint8_t pad1[UF_FALSE_SHARING - 48];

	/* line 2: the hot producer line, read by every consumer poll */
	uint64_t tail;  /* records published; release-stored after the records */
	uint64_t claim; /* tail + records being written; stored before the records */
	uint32_t wake;  /* futex word: bumped before FUTEX_WAKE, only when sleepers */
	uint32_t pad2a; /* keeps the line layout explicit */
	uint64_t wakes; /* FUTEX_WAKE calls made (monitoring) */
	uint8_t pad2[UF_FALSE_SHARING - 32];
};

_Static_assert(sizeof(struct uf_ring_hdr) == 3 * UF_FALSE_SHARING, "ring header is 3 lines");
_Static_assert(offsetof(struct uf_ring_hdr, state) == UF_FALSE_SHARING, "lifecycle line");
_Static_assert(offsetof(struct uf_ring_hdr, tail) == 2 * UF_FALSE_SHARING, "producer line");
_Static_assert(offsetof(struct uf_ring_hdr, layout_version) == 8, "version is at a fixed place");

/* Consumer table header: consumer-written counters on their own line. */
struct uf_ring_ctable {
	uint64_t magic;          /* UF_RING_CT_MAGIC */
	uint32_t layout_version; /* UF_RING_LAYOUT_VERSION */
	uint32_t nslots;         /* entries in the slot array */
	uint64_t generation;     /* equals the data file's generation */
	uint8_t pad0[UF_FALSE_SHARING - 24];

	uint32_t sleepers; /* consumers inside FUTEX_WAIT (or about to be) */
	uint32_t pad1a;    /* explicit padding */
	uint8_t pad1[UF_FALSE_SHARING - 8];
};

_Static_assert(sizeof(struct uf_ring_ctable) == 2 * UF_FALSE_SHARING, "table header is 2 lines");

/* One consumer's registration. Written by that consumer (and freed by the producer when the
 * consumer's process is gone); any other member of the group could scribble on it too, so the
 * producer only reports what it says. */
struct uf_ring_cslot {
	uint32_t pid;          /* owner pid; 0 = free. Claimed with CAS 0 -> pid */
	uint32_t flags;        /* 1 = currently sleeping in FUTEX_WAIT */
	uint64_t start_time;   /* owner's /proc/pid/stat starttime, guards against pid reuse */
	uint64_t attach_ns;    /* CLOCK_REALTIME at attach */
	uint64_t position;     /* sequence of the next record this consumer will read */
	uint64_t last_seen_ns; /* CLOCK_REALTIME (coarse) of the consumer's last activity */
	uint64_t received;     /* records returned to the application */
	uint64_t lost;         /* records skipped because the consumer was lapped */
	uint64_t laps;         /* times the consumer was lapped */
	char tag[16];          /* application-chosen label, NUL-terminated */
	uint8_t pad[UF_FALSE_SHARING - 80];
};

_Static_assert(sizeof(struct uf_ring_cslot) == UF_FALSE_SHARING, "one slot per line pair");

/* ---- Book image (last-value cache) ---- */

/* Slot i holds status code i + 1 (indexed by code: no search on the feed thread, and the same
 * order, ascending code, for every reader). */
struct uf_image_status_raw {
	uint32_t code;    /* i + 1 once that status was set; 0 = unused (never set) */
	uint32_t pad;     /* zero */
	int64_t price;    /* the status record's price field */
	uint64_t shares;  /* the status record's shares field */
	uint64_t exch_ts; /* exchange timestamp of the status */
};

/* uf_image_entry.flags besides UF_RECF_STALE (the same values as UF_BOOKF_TRUNCATED_* of
 * ufconsumer.h): the producer had more levels on that side than the image depth holds. */
#define UF_IMAGE_F_TRUNC_BID (1u << 16)
#define UF_IMAGE_F_TRUNC_ASK (1u << 17)

/* Per-instrument entry header; 2 x depth levels follow (bids then asks). Entry size is
 * sizeof(this) + 2 * depth * 24 rounded up to 64. */
struct uf_image_entry {
	uint64_t lock;         /* seqlock: odd while the producer writes */
	uint64_t stamp;        /* stream sequence this entry reflects: every record < stamp
	                        * that concerns the instrument is applied, none >= stamp */
	uint32_t present;      /* 1 once any field was set */
	uint32_t flags;        /* UF_RECF_STALE after an unrecovered gap, UF_IMAGE_F_TRUNC_* */
	uint64_t symbol;       /* 8 symbol bytes, space padded (as UF_REC_INSTRUMENT ref) */
	uint32_t round_lot;    /* directory: round lot size */
	uint32_t category;     /* directory: market category */
	uint32_t nbid;         /* valid bid levels (<= depth) */
	uint32_t nask;         /* valid ask levels (<= depth) */
	int64_t last_price;    /* last trade price, 0 before any trade */
	uint64_t last_shares;  /* last trade shares */
	uint64_t last_exch_ts; /* last trade exchange timestamp */
	uint64_t last_rx_ts;   /* last trade receive timestamp */
	uint64_t volume;       /* cumulative traded shares (the producer's rule: the feed adds
	                        * the TRADE records uf_rec_trade_prints accepts, and starts over
	                        * at a RESET) */
	uint64_t trades;       /* number of trades added (same rule) */
	uint64_t update_rx_ts; /* rx_ts of the last update of any kind */
	struct uf_image_status_raw status[UF_RING_STATUS_SLOTS]; /* latest value per code,
	                                                          * slot code - 1 */
};

_Static_assert(sizeof(struct uf_image_entry) % 8 == 0, "entry header is 8-byte aligned");

struct uf_image_hdr {
	uint64_t magic;           /* UF_RING_IMAGE_MAGIC */
	uint32_t depth;           /* levels per side per entry */
	uint32_t max_instruments; /* entries; instrument id is the index */
	uint64_t entry_size;      /* bytes per entry, multiple of 64 */
	uint64_t entries_off;     /* offset of entry 0 from this header */
	uint64_t commit_seq;      /* every record < commit_seq is reflected in every entry
	                           * (uf_ring_image_commit); 0 when the producer never commits */
	uint8_t pad[UF_FALSE_SHARING - 40];
};

_Static_assert(sizeof(struct uf_image_hdr) == UF_FALSE_SHARING, "image header is one line");

static inline uint64_t uf_image_entry_size(uint32_t depth)
{
	uint64_t sz = sizeof(struct uf_image_entry) + 2ull * depth * sizeof(struct uf_level);
	return (sz + UF_CACHELINE - 1) & ~(uint64_t)(UF_CACHELINE - 1);
}

static inline struct uf_image_entry *uf_image_entry_at(const struct uf_image_hdr *ih, uint32_t id)
{
	return (struct uf_image_entry *)((char *)ih + ih->entries_off +
	                                 (uint64_t)id * ih->entry_size);
}

static inline struct uf_level *uf_image_levels(struct uf_image_entry *e)
{
	return (struct uf_level *)(e + 1);
}

/* Where a lapped reader resumes: the oldest record with a quarter ring of headroom, so the
 * producer does not overwrite it again at once. Both sides use this formula. */
static inline uint64_t uf_ring_resume_seq(uint64_t claim, uint64_t capacity)
{
	uint64_t keep = capacity - capacity / 4;
	return claim > keep ? claim - keep : 0;
}

/* What the producer sends on uf.NAME/sock, with the table's memfd as SCM_RIGHTS. */
struct uf_ring_hello {
	uint64_t magic;          /* UF_RING_CT_MAGIC */
	uint32_t layout_version; /* UF_RING_LAYOUT_VERSION */
	uint32_t nslots;         /* entries in the slot array */
	uint64_t generation;     /* the data file's generation this table belongs to */
	uint64_t table_size;     /* bytes of the memfd (fstat must agree) */
};

_Static_assert(sizeof(struct uf_ring_hello) == 32, "hello is 32 bytes, no padding");

#define UF_RING_MAX_CONSUMERS 4096 /* upper bound of nslots */

/* Names: DIR/uf.NAME/{data,sock}. */
#define UF_RING_SHM_DIR   "/dev/shm"
#define UF_RING_DIR_FMT   "uf.%s"
#define UF_RING_DATA_NAME "data"
#define UF_RING_SOCK_NAME "sock"

#endif /* UF_RING_LAYOUT_H */
