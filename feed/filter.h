/* The symbol filter: which instruments' records and image entries a feed publishes.
 *
 * Books are kept for every instrument whatever the filter; the filter only drops records of
 * instruments it does not want. THE rule of what passes is uf_filter_keeps: every record about
 * every instrument (instrument 0, market-wide; GAP; RESET; the doubt of every book, STALE of
 * UF_INSTRUMENT_ALL) and every record of a wanted book, its doubts included. A doubt that came
 * before the book was wanted reaches consumers on the book's INSTRUMENT record
 * (UF_RECF_STALE). The image follows the stream (sink.h), so late joiners see the same doubts.
 *
 * The list changes while the feed runs (SIGHUP) without a lock on the feed thread: two slots,
 * the feed thread reads slots[active]; uf_filter_set (control thread) fills the other slot and
 * publishes it in `pending`; the feed thread picks it up between two batches
 * (uf_filter_pending, then uf_filter_switch once it has published the books of the
 * instruments that enter). */
#ifndef UF_FILTER_H
#define UF_FILTER_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "publish/uf_record.h"

/* One symbol list. */
struct uf_filter_slot {
	uint32_t n;      /* symbols (0 = everything passes) */
	char (*syms)[9]; /* sorted, NUL-terminated, trimmed */
};

struct uf_filter {
	int on;                         /* a non-empty list is active (else everything passes) */
	uint32_t max_inst;              /* instruments 0..max_inst-1 */
	uint8_t *wanted;                /* per instrument: passes the active list */
	struct uf_filter_slot slots[2]; /* double buffer: [active] read by the feed thread */
	uint32_t active;                /* slot the feed thread uses (feed thread writes) */
	uint32_t pending;               /* 0, or slot + 1 published by uf_filter_set */
	pthread_mutex_t lock;           /* serialises uf_filter_set callers */
	/* uf_filter_stale_books' cache (feed thread): a recount is O(instruments). */
	uint64_t gen;          /* bumped when wanted[] changes or a book becomes stale */
	uint64_t stale_gen;    /* gen at the last count */
	uint64_t stale_pub;    /* publisher's stale count at the last count (0: none made) */
	uint64_t stale_wanted; /* the last count: wanted books in doubt */
};

struct uf_publisher;

/* Sets up the filter with an initial list (n == 0: everything passes). Cold. Returns 0,
 * -EINVAL for a symbol longer than 8 characters, -ENOMEM. */
int uf_filter_init(struct uf_filter *fl, uint32_t max_inst, const char (*symbols)[9], uint32_t n);
void uf_filter_fini(struct uf_filter *fl);

/* Control thread: publishes a new list for the feed thread (see uf_feed_set_symbols).
 * Returns 0, -EINVAL, -ENOMEM, or -EBUSY when the previous list was not picked up within a
 * second (the feed thread is not running). */
int uf_filter_set(struct uf_filter *fl, const char (*symbols)[9], uint32_t n);

/* Feed thread: 0, or the slot + 1 of a list published by uf_filter_set. */
uint32_t uf_filter_pending(const struct uf_filter *fl);

/* Whether 8 space-padded symbol bytes pass the list in `slot`. */
int uf_filter_slot_wants(const struct uf_filter *fl, uint32_t slot, const void *sym8);

/* Feed thread: makes `slot` the active list and frees the other one for the next change. */
void uf_filter_switch(struct uf_filter *fl, uint32_t slot);

/* 1 when record `r` reaches the ring and the image under the active list: a record about
 * every instrument (instrument 0, UF_INSTRUMENT_ALL, GAP, RESET) or one of a wanted book,
 * so no doubt of a book a consumer can see is dropped. */
int uf_filter_keeps(const struct uf_filter *fl, const struct uf_record *r);

/* Feed thread, per publish step while fl->on: drops the records uf_filter_keeps does not
 * keep (learning each instrument's symbol from its INSTRUMENT record). Returns the records
 * kept, compacted at the front of `recs`. */
size_t uf_filter_records(struct uf_filter *fl, struct uf_record *recs, size_t n);

/* Feed thread: the books in doubt that this feed's consumers can see, from the publisher's
 * count `pub_stale` (uf_publish_stats' stale_books, which counts every named book): that
 * count without a list; with one, the wanted books the publisher has stale. Recounts
 * (O(instruments), cold) only when the count, the wanted set or a doubt changed since the
 * last call; 0 at once when the publisher has no doubt. */
uint64_t uf_filter_stale_books(struct uf_filter *fl, const struct uf_publisher *pub,
                               uint64_t pub_stale);

#endif /* UF_FILTER_H */
