/* publish/: order-by-order books for every instrument, the instrument directory, and the
 * normalized records (publish/uf_record.h) that describe every change.
 *
 * One publisher belongs to one feed thread: every function below except the monitoring
 * reads (uf_publish_stats) must be called from that thread. Everything is allocated at
 * uf_publish_create(), sized from its parameters; applying messages never allocates, locks,
 * makes a system call or prints. Bad input (unknown order references, over-executions,
 * duplicate references, full tables) is counted by kind in struct uf_publish_stats and never
 * crashes; the message that caused it changes nothing it cannot change consistently.
 *
 * Costs: an order is found by one hash probe (open addressing, power-of-two table, linear
 * probing with backward-shift deletion, so no tombstones accumulate over a day); a level by
 * binary search of its side's sorted array, which keeps the best price last so the common
 * change near the inside moves few entries; executions, cancels and deletes reach their
 * level through the order without a search. See docs/publish.md. */
#ifndef UF_PUBLISH_H
#define UF_PUBLISH_H

#include <stddef.h>
#include <stdint.h>

#include "decode/uf_decode.h"
#include "publish/uf_level.h"
#include "publish/uf_record.h"

#define UF_PUB_SYMBOL_LEN      8            /* ITCH symbols: 8 bytes, space padded */
#define UF_PUB_MAX_INSTRUMENTS 65536        /* stock locates are 16-bit */
#define UF_PUB_MAX_ORDERS      (1ull << 36) /* max_orders the order table accepts */

/* Integrity errors, counted by kind; names from uf_publish_err_name(). Those that leave a
 * book missing an order or a change (UNKNOWN_REF, OVER_EXEC, OVER_CANCEL, DUP_REF,
 * ORDERS_FULL, LEVELS_FULL, BAD_SIDE, BAD_PRICE, UNKNOWN_LEVEL, IDS_FULL) also put that book
 * (every book for IDS_FULL) in doubt: a UF_REC_STALE record
 * after the message's records, UF_RECF_STALE on the book from then on. LOCATE_MISMATCH is
 * applied consistently to the order's book, BAD_INSTRUMENT has no book, UNKNOWN_TYPE changes
 * none: counted only. */
enum uf_pub_err {
	UF_PUB_ERR_UNKNOWN_REF = 0, /* E C X D U on an order reference not in the book */
	UF_PUB_ERR_OVER_EXEC,       /* E C executing more shares than the order has left */
	UF_PUB_ERR_OVER_CANCEL,     /* X cancelling more shares than the order has left */
	UF_PUB_ERR_DUP_REF,         /* A F U adding a reference that is already live */
	UF_PUB_ERR_ORDERS_FULL,     /* A F refused: max_orders live orders */
	UF_PUB_ERR_LEVELS_FULL,     /* A F U refused: max_levels live levels (or level arena) */
	UF_PUB_ERR_BAD_INSTRUMENT,  /* locate >= max_instruments: message ignored */
	UF_PUB_ERR_BAD_SIDE,        /* A F with a side other than 'B'/'S': ignored */
	UF_PUB_ERR_LOCATE_MISMATCH, /* E C X D U whose locate is not the order's (applied to
	                             * the order's instrument, which the book trusts) */
	UF_PUB_ERR_UNKNOWN_TYPE,    /* a message type the book does not know: ignored */
	UF_PUB_ERR_BAD_PRICE,       /* a venue's price level outside 0 .. UINT32_MAX
	                             * (uf_venue.h): refused, its book in doubt */
	UF_PUB_ERR_UNKNOWN_LEVEL,   /* a venue removing a price level the book has not got
	                             * (uf_venue.h): its book in doubt */
	UF_PUB_ERR_IDS_FULL,        /* a new symbol found every instrument id taken
	                             * (uf_venue.h): its messages ignored, every book in doubt */
	UF_PUB_NERR
};

/* Monitoring counters. Written only by the feed thread (relaxed stores); another thread may
 * read them at any time through uf_publish_stats(). */
struct uf_publish_stats {
	uint64_t messages;            /* messages applied (any type) */
	uint64_t records;             /* records written */
	uint64_t gaps;                /* uf_publish_gap() calls */
	uint64_t gap_messages;        /* sequence numbers lost in those gaps */
	uint64_t live_orders;         /* orders in the book now */
	uint64_t peak_orders;         /* most live orders at once */
	uint64_t live_levels;         /* price levels in all books now */
	uint64_t peak_levels;         /* most live levels at once */
	uint64_t errors[UF_PUB_NERR]; /* integrity errors by kind */
	uint64_t errors_total;        /* sum of errors[] */
	uint64_t stale_books;         /* books in doubt now (a gap: every named book; a STALE
	                               * doubt: that book); 0 again at a reset */
};

/* Creation parameters; start from uf_publish_params_default(). */
struct uf_publish_params {
	uint64_t max_orders;      /* live orders the table must hold; default 4,000,000
	                           * (table: next power of two >= 4/3 of it, 16 bytes a slot) */
	uint32_t max_instruments; /* ids 0 .. max-1 (stock locates); default 16384, at most
	                           * 65536 */
	uint32_t max_levels;      /* live price levels, all books together; default 1<<20
	                           * (32 bytes each, plus 3 x 8 bytes of sorted-array arena) */
	uint32_t prefetch;        /* uf_publish_apply_batch() look-ahead in messages; 0 = no
	                           * prefetch; default 16 */
	int numa_node;            /* bind the tables to this node (libnuma); -1 = don't */
	uint32_t flags;           /* UF_PUB_F_* */
	uint32_t page_kinds;      /* UF_PUB_PAGES_*: huge page kinds the order and level tables
	                           * try, largest first, before plain pages; default both
	                           * (0: plain pages only) */
};

/* Pages under the order and level tables (their random probes miss the TLB on 4 KiB pages). */
enum uf_pub_page_kind {
	UF_PUB_PAGE_4K = 0,      /* plain pages */
	UF_PUB_PAGE_THP = 1,     /* transparent huge pages (some or all of the table) */
	UF_PUB_PAGE_HUGETLB = 2, /* the vm.nr_hugepages pool, 2 MiB pages */
};

#define UF_PUB_HUGE_PAGE     (2u << 20) /* the huge page size used (x86-64 PMD) */
#define UF_PUB_PAGES_THP     (1u << UF_PUB_PAGE_THP)
#define UF_PUB_PAGES_HUGETLB (1u << UF_PUB_PAGE_HUGETLB)

#define UF_PUB_F_NO_MBO (1u << 0) /* don't write ORDER_* records (levels and trades only) */

/* Read view of one instrument: directory (R), status, last trade. Values are the wire's
 * letters/numbers, 0 when never received. */
struct uf_pub_instrument {
	char symbol[UF_PUB_SYMBOL_LEN]; /* space padded, not terminated; all 0 = never named */
	uint32_t round_lot;             /* R round lot size */
	uint8_t market_category;        /* R */
	uint8_t financial_status;       /* R */
	uint8_t issue_classification;   /* R */
	uint8_t luld_tier;              /* R */
	uint8_t has_directory;          /* 1 once an R was received */
	uint8_t trading_state;          /* H: 'H' halted, 'P' paused, 'Q' quotation only, 'T' */
	uint8_t reg_sho;                /* Y action */
	uint8_t op_halt;                /* h action: 'H' halted, 'T' resumed */
	char halt_reason[4];            /* H reason */
	uint8_t rpi;                    /* N interest flag */
	uint8_t ipo_qualifier;          /* K */
	uint8_t stale;                  /* 1 after an unrecovered gap: book may be wrong */
	uint8_t pad0;                   /* 0 */
	uint32_t ipo_release_time;      /* K, seconds since midnight */
	uint32_t ipo_price;             /* K */
	uint32_t luld_ref_price;        /* J */
	uint32_t luld_upper;            /* J */
	uint32_t luld_lower;            /* J */
	uint32_t luld_extension;        /* J */
	uint32_t noii_ref_price;        /* I current reference price */
	uint32_t noii_near_price;       /* I */
	uint32_t noii_far_price;        /* I */
	uint8_t noii_direction;         /* I imbalance direction */
	uint8_t noii_cross_type;        /* I */
	uint8_t dlcr_open_eligible;     /* O */
	uint8_t pad1;                   /* 0 */
	uint64_t noii_paired;           /* I paired shares */
	uint64_t noii_imbalance;        /* I imbalance shares */
	uint64_t last_trade_price;      /* last printable trade (E, C, P, Q with shares) */
	uint64_t last_trade_shares;     /* its shares */
	uint64_t last_trade_ts;         /* its exchange timestamp */
	uint64_t last_trade_match;      /* its match number */
	uint64_t volume;                /* printable shares traded today (E, C, P, Q) */
	uint64_t dlcr_near_time;        /* O near execution time, ns since midnight */
	uint32_t dlcr_near_price;       /* O near execution price */
	uint32_t dlcr_min_price;        /* O minimum allowed price */
	uint32_t dlcr_max_price;        /* O maximum allowed price */
	uint32_t dlcr_lower_collar;     /* O */
	uint32_t dlcr_upper_collar;     /* O */
	uint32_t pad2;                  /* 0 */
};

/* Market-wide state. */
struct uf_pub_market {
	uint8_t system_event;   /* last S event code */
	uint8_t mwcb_breached;  /* last W level, 0 if none */
	uint8_t pad[6];         /* 0 */
	uint64_t mwcb_level[3]; /* V levels, 8 implied decimals */
};

struct uf_publisher;

/* Fills `pp` with the defaults documented in struct uf_publish_params. */
void uf_publish_params_default(struct uf_publish_params *pp);

/* Allocates and pre-faults every table (order and level tables on hugetlb pages, else
 * transparent huge pages, else plain pages: pp->page_kinds, uf_publish_book_memory; bound to
 * pp->numa_node when
 * >= 0). Cold. Returns 0 and *out, -EINVAL for impossible parameters, -ENOMEM. */
int uf_publish_create(const struct uf_publish_params *pp, struct uf_publisher **out);

/* Bytes of the tables uf_publish_create() allocates (and pre-faults) for `pp` (the three big
 * ones are rounded up to whole 2 MiB pages on top: at most 6 MiB more), or 0 for
 * parameters it would refuse with -EINVAL. For checking a configuration up front. */
uint64_t uf_publish_memory(const struct uf_publish_params *pp);

/* Frees everything. NULL is fine. */
void uf_publish_destroy(struct uf_publisher *p);

/* What the order and level tables got (uf_pub_page_kind): the smallest kind among those of
 * at least a huge page (UF_PUB_HUGE_PAGE; smaller ones stay on 4k), so "thp" or "hugetlb"
 * means every big one has huge pages; "4k" when none is that big. `huge_bytes` / `bytes` (either
 * may be NULL): how much of those tables is backed by huge pages, of how much. For /status
 * ("book_memory") and the benches. */
unsigned uf_publish_book_memory(const struct uf_publisher *p, uint64_t *huge_bytes,
                                uint64_t *bytes);

/* "4k", "thp", "hugetlb" for a uf_pub_page_kind; "?" beyond. */
const char *uf_publish_page_kind_name(unsigned kind);

/* Empties every book, clears stale flags and starts volume and last trade over, keeping the
 * directory and statuses (new session, or before a replay from the start). Writes no record:
 * a feed uses uf_publish_new_session. Cold: O(table size). */
void uf_publish_reset(struct uf_publisher *p);

/* A new MoldUDP64 session (a new day) starts: uf_publish_reset, then one UF_REC_RESET record
 * (reason UF_RESET_NEW_SESSION, the 10 session bytes in ref/aux, feed_seq 1) into `out`, which
 * the caller publishes before anything of the new session. Returns 1, or -ENOBUFS when cap
 * is 0 (nothing reset). Cold. */
int uf_publish_new_session(struct uf_publisher *p, const char session[10], struct uf_record *out,
                           size_t cap);

/* The same reset for another reason (UF_RESET_*): uf_publish_new_session is
 * uf_publish_void_books(p, UF_RESET_NEW_SESSION, session, 1, ...); a GLIMPSE snapshot load uses
 * UF_RESET_SNAPSHOT with the session it continues and feed_seq 0 (the snapshot's own records,
 * then the stream from its End of Snapshot sequence, follow). Returns 1 or -ENOBUFS. Cold. */
int uf_publish_void_books(struct uf_publisher *p, uint32_t reason, const char session[10],
                          uint64_t feed_seq, struct uf_record *out, size_t cap);

/* Message `feed_seq` could not be applied (it did not decode: `reason` UF_STALE_DECODE): book
 * `instrument` (UF_INSTRUMENT_ALL: every book) may be wrong from here on. Flags it stale and
 * writes one UF_REC_STALE record (UF_RECF_LAST) when it was not stale already. Returns the
 * records written (0 or 1; 0 too for an instrument beyond max_instruments), -ENOBUFS when
 * cap is 0. Cold. */
int uf_publish_doubt(struct uf_publisher *p, uint32_t instrument, uint32_t reason,
                     uint64_t feed_seq, uint64_t rx_ts, struct uf_record *out, size_t cap);

/* Applies one decoded message: updates books, directory and status, writes its records to
 * `out` (UF_RECF_LAST on the last). `feed_seq` and `rx_ts` are copied into the records;
 * pub_delta_ns is left 0 (whoever makes them readable stamps it: uf_rec_stamp).
 * Returns the number of records written (0..UF_REC_MAX_PER_MSG), or -ENOBUFS when
 * cap < UF_REC_MAX_PER_MSG (nothing applied). Hot: no allocation, lock or system call. */
int uf_publish_apply(struct uf_publisher *p, const struct uf_itch_msg *m, uint64_t feed_seq,
                     uint64_t rx_ts, struct uf_record *out, size_t cap);

/* Applies msgs[0..n) in order (message i has feed_seq first_seq + i, all share rx_ts),
 * prefetching the order-table slots, books and levels of the messages `prefetch` ahead
 * (parameter; uf_publish_set_prefetch). Stops early when `out` has less than
 * UF_REC_MAX_PER_MSG free slots left. Sets *applied to the messages applied; returns the
 * records written. */
int uf_publish_apply_batch(struct uf_publisher *p, const struct uf_itch_msg *msgs, size_t n,
                           uint64_t first_seq, uint64_t rx_ts, struct uf_record *out, size_t cap,
                           size_t *applied);

/* Starts loading what applying msgs[0..n) will touch first (order-table home slots, books):
 * the first stage of uf_publish_apply_batch's look-ahead for all n at once. The feed calls it
 * for a whole datagram as soon as it is decoded (issue 14): a packet's first messages then
 * do not wait for their misses one by one, and later publish steps find their lines loaded.
 * Reads nothing but the messages; no-op with prefetch off. */
void uf_publish_prefetch(const struct uf_publisher *p, const struct uf_itch_msg *msgs, size_t n);

/* Changes the batch look-ahead (0 = off). */
void uf_publish_set_prefetch(struct uf_publisher *p, uint32_t distance);

/* The feed gave up sequence numbers [first_seq, first_seq + count): writes one UF_REC_GAP
 * record and flags every book stale (UF_RECF_STALE on its later records, `stale` in its
 * instrument view). Returns 1, or -ENOBUFS when cap is 0. */
int uf_publish_gap(struct uf_publisher *p, uint64_t first_seq, uint64_t count,
                   struct uf_record *out, size_t cap);

/* Writes the whole book of `instrument` as SNAPSHOT_BEGIN, UF_RECF_SNAPSHOT LEVEL records
 * (bids best first, then asks best first), SNAPSHOT_END. Returns the records written,
 * -ENOBUFS when they don't fit in cap (nothing written), -ENOENT for a bad id. */
int uf_publish_snapshot(struct uf_publisher *p, uint32_t instrument, struct uf_record *out,
                        size_t cap);

/* Copies up to `n` best levels of one side (UF_SIDE_BID: highest first; UF_SIDE_ASK: lowest
 * first). Returns levels copied (0 for an empty side or a bad id), -EINVAL for a bad side. */
int uf_publish_top(const struct uf_publisher *p, uint32_t instrument, uint8_t side,
                   struct uf_level *levels, size_t n);

/* The same from the side's level `from` on (0 = best): levels[i] is level from + i. The image
 * copies only the levels a step changed (feed/sink.c), so it must not read the ones above;
 * `total` (NULL: not wanted) gets the side's level count in the same call (0 for a bad id or
 * side), which tells the image whether the levels below moved. */
int uf_publish_levels(const struct uf_publisher *p, uint32_t instrument, uint8_t side, size_t from,
                      struct uf_level *levels, size_t n, size_t *total);

/* Number of levels on one side (0 for a bad id or side). */
size_t uf_publish_depth(const struct uf_publisher *p, uint32_t instrument, uint8_t side);

/* Directory: instrument view by id (NULL when id >= max_instruments). */
const struct uf_pub_instrument *uf_publish_instrument(const struct uf_publisher *p,
                                                      uint32_t instrument);

/* Market-wide state (S, V, W). */
const struct uf_pub_market *uf_publish_market(const struct uf_publisher *p);

/* Symbol -> id. `symbol` is NUL-terminated, without padding ("AAPL"). Returns the id, or
 * -ENOENT. O(1) (hash). */
int uf_publish_lookup(const struct uf_publisher *p, const char *symbol);

/* Id -> symbol, NUL-terminated and trimmed into buf[9]. Returns its length, or -ENOENT when
 * the id has no symbol. */
int uf_publish_symbol(const struct uf_publisher *p, uint32_t instrument, char buf[9]);

/* max_instruments given at creation (ids are 0 .. this - 1). */
uint32_t uf_publish_max_instruments(const struct uf_publisher *p);

/* Copies the counters; safe from any thread. */
void uf_publish_stats(const struct uf_publisher *p, struct uf_publish_stats *out);

/* Stable snake_case name of an integrity error kind ("unknown_ref"), or NULL. */
const char *uf_publish_err_name(unsigned kind);

#endif /* UF_PUBLISH_H */
