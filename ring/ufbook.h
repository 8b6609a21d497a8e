/* libufconsumer book builder: local price-level books rebuilt from a ring, for consumers that
 * want books rather than records.
 *
 *   uf_book_builder_t *b;
 *   uf_book_builder_create(0, &b);
 *   uf_book_builder_sync(b, c);                        // image -> books, stream from the stamps
 *   while (...) {
 *           int rc = uf_book_builder_next(b, c, &rec, &seq);  // read one record and apply it
 *           if (rc == 0 && (rec.flags & UF_RECF_LAST)) ...    // a whole event is applied
 *           else if (rc == -EAGAIN) uf_consumer_wait(c, ...);
 *           else if (rc == -EOVERFLOW) ...                    // lapped: already re-synced
 *           else if (rc == -ESTALE) { uf_consumer_reattach(c, ...); uf_book_builder_sync(b, c); }
 *   }
 *   uf_book_builder_top(b, id, &bid, &ask);
 *
 * What it does with each record kind (publish/uf_record.h): the same as every other consumer
 * path (the NATS remote consumer, uf-bridge's bucket, uf-tail, Python), one model for all:
 *   LEVEL            sets the level's totals (both 0: removes it): full depth, no limit
 *   SNAPSHOT_BEGIN   empties the instrument's book (the bracket that follows rebuilds it) and
 *                    clears its TRUNCATED flags: the stream now gives the whole book
 *   GAP              flags every book STALE (and counts the gap)
 *   STALE            flags its book (every book for UF_INSTRUMENT_ALL) STALE
 *   RESET            a new session: every book empties, STALE clears, last trade, volume and
 *                    trade count start over (symbols and statuses stay)
 *   INSTRUMENT       remembers the symbol, round lot and market category; flags the book
 *                    STALE when the record carries UF_RECF_STALE (named in doubt)
 *   TRADE            last trade, volume and trade count, only when uf_rec_trade_prints()
 *   STATUS           keeps the latest value per status code, every defined code
 *   ORDER_*          the live order table, when uf_book_builder_track_orders() turned it on
 *   anything else    counted, ignored
 * A book's STALE flag follows the UF_RECF_STALE bit of the last LEVEL or SNAPSHOT_BEGIN record
 * applied to it (the producer sets it on every record after a gap until the books are
 * rebuilt). uf_book_builder_snapshot() hands out a book as the image holds it (trade, volume,
 * statuses included).
 * A RESET record clears every book itself; after a producer restart (-ESTALE) the caller
 * re-syncs (uf_book_builder_sync).
 *
 * Handover (uf_book_builder_sync): every book is loaded from the image snapshot with its
 * stamp; the consumer seeks to the image's commit sequence, and a record of an instrument is
 * applied only when its sequence is >= that instrument's stamp: no gap, no double count.
 * A lap (-EOVERFLOW) makes uf_book_builder_next re-sync before it returns.
 *
 * Truncation: the image holds at most `depth` levels per side (uf_consumer_info.depth). A
 * side the image cut is flagged UF_BOOKF_TRUNCATED_BID/ASK in the snapshot and in the
 * builder's book: its levels past the image depth are unknown until a SNAPSHOT bracket of
 * the instrument or a reset. Every other book is exact to full depth.
 *
 * Cost: levels live in per-side sorted arrays, best price last, so a change at the inside
 * moves few entries; an array grows (realloc) when a side gets deeper than ever before, so a
 * day's first minutes allocate and the steady state does not. One thread per builder.
 * Return convention as ufconsumer.h: 0 or a count on success, -errno on failure. */
#ifndef UFBOOK_H
#define UFBOOK_H

#include <stddef.h>
#include <stdint.h>

#include "publish/uf_level.h"
#include "publish/uf_record.h"
#include "ring/ufconsumer.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct uf_book_builder uf_book_builder_t; /* opaque handle */

struct uf_book_builder_stats {
	uint64_t applied;     /* records that changed or confirmed a book */
	uint64_t skipped;     /* records below their instrument's stamp (already in the image) */
	uint64_t ignored;     /* records of kinds the builder does not apply, or bad instruments */
	uint64_t syncs;       /* image handovers done (uf_book_builder_sync, including re-syncs) */
	uint64_t laps;        /* -EOVERFLOW seen by uf_book_builder_next */
	uint64_t gaps;        /* UF_REC_GAP records applied */
	uint64_t resets;      /* uf_book_builder_clear calls (and reset records) */
	uint64_t truncated;   /* books whose image copy was cut at the image depth, at the last sync
	                       * (they carry UF_BOOKF_TRUNCATED_*) */
	uint64_t orders_live; /* orders tracked now (uf_book_builder_track_orders) */
	uint64_t orders_unknown; /* ORDER_MODIFY/DELETE of a reference not tracked (it rested
	                          * before the handover: the image has no orders) */
	uint64_t orders_full;    /* ORDER_ADD refused: max_orders tracked already */
};

/* One tracked order (market by order). */
struct uf_book_order {
	uint64_t ref;        /* order reference */
	int64_t price;       /* price */
	uint64_t shares;     /* shares left */
	uint32_t instrument; /* instrument id */
	uint8_t side;        /* UF_SIDE_BID or UF_SIDE_ASK */
	uint8_t reserved[3]; /* zero */
};

/* Creates a builder for instrument ids 0 .. max_instruments-1 (0 = 65536, every ITCH stock
 * locate). Cold: allocates the per-instrument table. Returns 0, -EINVAL, -ENOMEM. */
int uf_book_builder_create(uint32_t max_instruments, uf_book_builder_t **out);

/* Frees everything. NULL is accepted. */
void uf_book_builder_destroy(uf_book_builder_t *b);

/* Reset: empties every book and clears STALE and TRUNCATED flags and stamps; symbols are
 * kept (a producer restart may renumber them: uf_book_builder_sync loads them again). */
void uf_book_builder_clear(uf_book_builder_t *b);

/* Replaces the book of snap->instrument with the snapshot (levels, STALE and TRUNCATED flags,
 * symbol) and remembers its stamp: records of that instrument below the stamp are skipped
 * from now on. Returns 0 or -ERANGE. */
int uf_book_builder_load(uf_book_builder_t *b, const struct uf_book_snapshot *snap);

/* Applies record `seq` of the stream. Returns 1 when it was applied, 0 when it was skipped
 * (below the instrument's stamp) or ignored (see the kind list above), -ENOMEM when a side
 * could not grow (the book is then flagged STALE). */
int uf_book_builder_apply(uf_book_builder_t *b, const struct uf_record *rec, uint64_t seq);

/* Handover from the book image: clears the books, loads every instrument's snapshot and
 * moves the consumer to the image's commit sequence (uf_consumer_image_seq). Works on a
 * local and on a "nats://" handle alike (like every function here: none returns -ENOTSUP
 * for a back end). Retries while
 * the producer laps the consumer in the middle (at most ~100 times). Returns 0, -EBUSY
 * (the image kept changing, or the ring kept lapping: try again), -ENOMEM. */
int uf_book_builder_sync(uf_book_builder_t *b, uf_consumer_t *c);

/* Reads the next record (uf_consumer_next), applies it, and copies it out (`rec`, `seq` may
 * be NULL). Returns 0 with a record; -EOVERFLOW after a lap, once the books are re-synced
 * (no record); otherwise uf_consumer_next's codes (-EAGAIN, -EPIPE, -ESTALE: re-attach and
 * sync) or -errno of a failed re-sync. */
int uf_book_builder_next(uf_book_builder_t *b, uf_consumer_t *c, struct uf_record *rec,
                         uint64_t *seq);

/* Optional market-by-order tracking: from now on ORDER_ADD / ORDER_MODIFY / ORDER_DELETE
 * records keep a table of live orders (up to `max_orders`; table allocated here, never
 * again). The image carries no orders, so only orders added after the handover are known:
 * exact for a consumer that reads the day from its first record (UF_CONSUMER_START_OLDEST
 * with the whole day in the ring, no sync); after a sync or a lap the table restarts empty
 * and changes to older orders are counted in stats.orders_unknown. Cold. Returns 0, -EINVAL
 * (0 orders, or tracking already on), -ENOMEM. */
int uf_book_builder_track_orders(uf_book_builder_t *b, uint64_t max_orders);

/* Copies order `ref`. Returns 0, -ENOENT (not tracked), -ENOTSUP (tracking off). O(1). */
int uf_book_builder_order(const uf_book_builder_t *b, uint64_t ref, struct uf_book_order *out);

/* Calls `fn` for every tracked order (table order, not time priority); stops early and
 * returns fn's value when it is not 0. Returns 0 or -ENOTSUP. O(table size). */
int uf_book_builder_for_each_order(const uf_book_builder_t *b,
                                   int (*fn)(const struct uf_book_order *o, void *arg), void *arg);

/* Best bid and best ask of `instrument` (either pointer may be NULL). Returns a bit set:
 * 1 = a bid was copied, 2 = an ask was copied (0: both sides empty), or -ERANGE. */
int uf_book_builder_top(const uf_book_builder_t *b, uint32_t instrument, struct uf_level *bid,
                        struct uf_level *ask);

/* Copies up to `n` best levels of one side (UF_SIDE_BID highest first, UF_SIDE_ASK lowest
 * first). Returns the levels copied, -EINVAL for a bad side, -ERANGE for a bad id. */
int uf_book_builder_levels(const uf_book_builder_t *b, uint32_t instrument, int side,
                           struct uf_level *out, size_t n);

/* Number of levels on one side (0 for a bad id or side). */
size_t uf_book_builder_depth(const uf_book_builder_t *b, uint32_t instrument, int side);

/* UF_BOOKF_* of the book (0 for a bad id). */
uint32_t uf_book_builder_flags(const uf_book_builder_t *b, uint32_t instrument);

/* Symbol of `instrument`, trimmed and NUL-terminated ("" when never named, or a bad id). The
 * pointer stays valid until the builder is destroyed. */
const char *uf_book_builder_symbol(const uf_book_builder_t *b, uint32_t instrument);

/* Copies the book of `instrument` as an image entry holds it (struct uf_book_snapshot: levels
 * best first, each side cut at UF_BOOK_MAX_DEPTH and flagged TRUNCATED when cut, flags,
 * directory, last trade, volume, trade count, statuses), so a builder shows what
 * uf_consumer_snapshot() would. `stamp` = one past the highest sequence applied. Returns 0,
 * -ENOENT (no record or snapshot named the instrument yet), -ERANGE. O(depth). */
int uf_book_builder_snapshot(const uf_book_builder_t *b, uint32_t instrument,
                             struct uf_book_snapshot *snap);

/* Instrument ids the builder covers. */
uint32_t uf_book_builder_max_instruments(const uf_book_builder_t *b);

void uf_book_builder_get_stats(const uf_book_builder_t *b, struct uf_book_builder_stats *st);

#ifdef __cplusplus
}
#endif

#endif /* UFBOOK_H */
