/* The one record -> book model: every rule for applying a record (publish/uf_record.h) to a
 * full-depth book, shared by every consumer path so that they all show the same books: the
 * SDK's book builder (ring/book_builder.c, hence Python and C++), the NATS remote consumer and
 * uf-bridge's key-value bucket (ring/nats/nats_book.c). Internal to libufconsumer and
 * tools/uf-bridge (not installed, not exported).
 *
 * The reference is the producer's book image (feed/sink.c, ring/image.c): a book here holds
 * what an image entry holds (levels, flags, directory, last trade, volume, statuses), only
 * to full depth. Per record kind:
 *   LEVEL            sets the level's totals; shares and orders both 0 remove it
 *   ORDER_*          change no level (their LEVEL records do): the live order table, when
 *                    uf_book_model_track_orders() turned it on
 *   TRADE            last trade, volume and trade count, exactly when uf_rec_trade_prints()
 *   STATUS           latest value per code, a slot per code (as the image's slots); a code
 *                    beyond UF_STATUS_MAX (or 0) changes nothing and counts as ignored
 *   INSTRUMENT       symbol, round lot, market category; STALE when the record carries
 *                    UF_RECF_STALE (a book named, or entering a symbol filter, in doubt)
 *   GAP              every book stale (and every book made later: their records say so too)
 *   STALE            its book stale; every book for UF_INSTRUMENT_ALL
 *   RESET            every book void: levels, orders, flags, last trade, volume and trades
 *                    cleared; directory and statuses kept (as the producer's image)
 *   SNAPSHOT_BEGIN   empties the book (its bracket's LEVEL records rebuild it) and clears
 *                    TRUNCATED: the stream now gives the whole book
 *   SNAPSHOT_END     nothing (the bracket's records did it all)
 * A book's STALE flag follows the UF_RECF_STALE bit of its LEVEL and SNAPSHOT_BEGIN records
 * (the producer sets it on every record after a doubt until the books are rebuilt).
 * Stamps: a book loaded from an image entry (or a key-value entry) carries its stamp; a
 * record with a smaller sequence is already in it and is skipped, a global record (GAP,
 * RESET, STALE of all) too, book by book. Below the model's floor (a handover's start)
 * every record is skipped.
 *
 * Books are allocated on first use (a book exists = it is present, as an image entry is):
 * memory follows the instruments seen, not max. Cold-ish: consumer threads, never the feed
 * thread; a side's array grows with realloc when it gets deeper than ever before. */
#ifndef UF_RING_BOOK_MODEL_H
#define UF_RING_BOOK_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "publish/uf_level.h"
#include "publish/uf_record.h"
#include "ring/ufbook.h"
#include "ring/ufconsumer.h"

/* One side, sorted so that the best level is the last: an inside change moves few entries. */
struct uf_bm_side {
	struct uf_level *lv; /* levels, best last */
	uint32_t n;          /* valid levels */
	uint32_t cap;        /* allocated levels */
};

/* One instrument's book: what an image entry holds, to full depth. */
struct uf_bm_book {
	uint64_t stamp;            /* records of this book below it are in it already */
	uint32_t id;               /* instrument id */
	uint32_t flags;            /* UF_BOOKF_STALE, UF_BOOKF_TRUNCATED_* */
	uint64_t symbol;           /* the 8 directory bytes, space padded (0: never named) */
	char name[9];              /* the symbol trimmed, NUL-terminated */
	uint32_t round_lot;        /* directory round lot */
	uint32_t category;         /* directory market category */
	int64_t last_price;        /* last printing trade */
	uint64_t last_shares;      /* last printing trade */
	uint64_t last_exch_ts;     /* last printing trade */
	uint64_t last_rx_ts;       /* last printing trade */
	uint64_t volume;           /* printing shares this session */
	uint64_t trades;           /* printing trades this session */
	uint64_t update_rx_ts;     /* receive time of the last level or trade change */
	struct uf_bm_side side[2]; /* 0 bids, 1 asks */
	struct uf_book_status status[UF_STATUS_MAX]; /* latest value per code, slot code - 1;
	                                              * code 0 = never set */
};

/* A snapshot (and so every consumer path) holds every status a book can. */
_Static_assert(UF_BOOK_MAX_STATUS >= UF_STATUS_MAX, "a snapshot holds every status code");

struct uf_book_model_stats {
	uint64_t applied;        /* records that changed or confirmed a book */
	uint64_t skipped;        /* records below their book's stamp (or the floor) */
	uint64_t ignored;        /* kinds that change no book, bad instruments, orders untracked */
	uint64_t gaps;           /* GAP records applied */
	uint64_t resets;         /* RESET records applied, and uf_book_model_clear calls */
	uint64_t orders_live;    /* orders tracked now */
	uint64_t orders_unknown; /* ORDER_MODIFY/DELETE of a reference not tracked */
	uint64_t orders_full;    /* ORDER_ADD refused: the table holds its maximum */
};

/* A tracked order's slot; o.side == 0 marks a free slot. */
struct uf_bm_order_slot {
	struct uf_book_order o; /* the order */
};

struct uf_book_model {
	struct uf_bm_book **v;            /* per instrument id, NULL until present */
	uint32_t max;                     /* ids 0 .. max-1 */
	uint32_t all_stale;               /* 1 after a GAP or STALE of all, until a RESET: a
	                                   * book made from then on starts stale */
	uint64_t floor;                   /* records below it are skipped (every book has them) */
	uint64_t next;                    /* one past the highest sequence handed to apply */
	struct uf_book_model_stats stats; /* counters */
	struct uf_bm_order_slot *orders;  /* order table, NULL when not tracking */
	uint64_t omask;                   /* order table slots - 1 */
	uint64_t omax;                    /* orders it may hold */
	/* Called for every book a record changed (the NATS side keeps its dirty set and entry
	 * stamps with it); NULL when nobody listens. */
	void (*changed)(void *arg, uint32_t id, uint64_t seq);
	void *changed_arg; /* its argument */
};

/* Prepares a model for ids 0 .. max-1 (max > 0). Cold. Returns 0, -EINVAL, -ENOMEM. */
int uf_book_model_init(struct uf_book_model *m, uint32_t max);

/* Frees every book, the table and the order table. */
void uf_book_model_free(struct uf_book_model *m);

/* What a RESET does to every book, and more: stamps and the floor back to 0, orders gone.
 * Directory and statuses stay. Counted in stats.resets. */
void uf_book_model_clear(struct uf_book_model *m);

/* Forgets every book (a new generation of the source: nothing of the old one holds). */
void uf_book_model_wipe(struct uf_book_model *m);

/* Applies record `seq`. Returns 1 when it changed or confirmed a book, 0 when skipped or
 * ignored, -ENOMEM when a side could not grow (the book is then flagged STALE). */
int uf_book_model_apply(struct uf_book_model *m, const struct uf_record *r, uint64_t seq);

/* The book of `id` (NULL: not present, or id >= max). */
static inline const struct uf_bm_book *uf_book_model_peek(const struct uf_book_model *m,
                                                          uint32_t id)
{
	return id < m->max ? m->v[id] : NULL;
}

/* The book of `id`, made (empty, stamped with the floor) when absent. NULL: id >= max or
 * -ENOMEM (tell them apart with id < m->max). */
struct uf_bm_book *uf_book_model_book(struct uf_book_model *m, uint32_t id);

/* Replaces one side of `bk` with `n` levels given best first (`src` may be unaligned).
 * Returns 0 or -ENOMEM. */
int uf_book_model_set_side(struct uf_bm_book *bk, int sidx, const void *src, uint32_t n);

/* Replaces the book of snap->instrument with an image snapshot (levels, flags, directory,
 * trade, volume, statuses) and its stamp; an empty symbol keeps the one known. Returns 0,
 * -ERANGE, -ENOMEM. */
int uf_book_model_load(struct uf_book_model *m, const struct uf_book_snapshot *snap);

/* Copies book `id` as an image snapshot, each side cut at `depth` levels (at most
 * UF_BOOK_MAX_DEPTH) and flagged TRUNCATED when cut, as the image cuts; stamped `stamp`.
 * Returns 0, -ENOENT (not present), -ERANGE. */
int uf_book_model_snapshot(const struct uf_book_model *m, uint32_t id, uint32_t depth,
                           uint64_t stamp, struct uf_book_snapshot *s);

/* Id of the present book named by the 8 directory bytes `symbol`: 0 and *id, or -ENOENT. */
int uf_book_model_lookup(const struct uf_book_model *m, uint64_t symbol, uint32_t *id);

/* Turns on the live order table for up to `max_orders` orders (allocated here, never
 * again). Returns 0, -EINVAL (0, too many, or on already), -ENOMEM. */
int uf_book_model_track_orders(struct uf_book_model *m, uint64_t max_orders);

/* Copies order `ref`: 0, -ENOENT (not tracked), -ENOTSUP (tracking off). O(1). */
int uf_book_model_order(const struct uf_book_model *m, uint64_t ref, struct uf_book_order *out);

/* Calls fn for every tracked order until it returns non-zero (that value is returned).
 * Returns 0 or -ENOTSUP. */
int uf_book_model_for_each_order(const struct uf_book_model *m,
                                 int (*fn)(const struct uf_book_order *o, void *arg), void *arg);

#endif /* UF_RING_BOOK_MODEL_H */
