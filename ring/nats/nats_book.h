/* The NATS fan-out's books: what uf-bridge keeps to write each instrument's book to the
 * key-value bucket, and what a remote consumer keeps to answer uf_consumer_snapshot() the way
 * the producer's image would. Internal to ring/ and tools/uf-bridge (cold-ish: the bridge and
 * a remote consumer, never the feed thread).
 *
 * Records are applied by the one record -> book model (ring/book_model.h), the same rules
 * as the SDK's book builder; this unit keeps only what is NATS's own: the key-value entry
 * encoding (ring/nats/uf_nats_wire.h), the set of books changed since the last flush, each
 * entry's stamp, and seeding from a local image snapshot. */
#ifndef UF_NATS_BOOK_H
#define UF_NATS_BOOK_H

#include <stddef.h>
#include <stdint.h>

#include "ring/book_model.h"
#include "ring/nats/uf_nats_wire.h"
#include "ring/ufconsumer.h"

struct uf_nats_books {
	struct uf_book_model m; /* the books and every rule that changes them */
	uint32_t max;           /* ids 0 .. max-1 */
	uint32_t ndirty;        /* entries in dirty_ids */
	uint32_t *dirty_ids;    /* instruments changed since the last take (max entries) */
	uint8_t *is_dirty;      /* per id: 1 while in dirty_ids */
	uint64_t *stamp;        /* per id: the entry reflects every record < it */
	uint64_t generation;    /* stamped into encoded entries */
};

/* Allocates the id table for `max` instruments. Returns 0 or -ENOMEM. */
int uf_nats_books_init(struct uf_nats_books *bk, uint32_t max, uint64_t generation);

/* Frees every book and the table. */
void uf_nats_books_free(struct uf_nats_books *bk);

/* Empties every book (a new generation, or before re-loading a snapshot). */
void uf_nats_books_clear(struct uf_nats_books *bk);

/* Applies record `seq` through the book model (skipped below the book's stamp). Returns 1
 * when applied, 0 when skipped or not a book change, -ENOMEM. */
int uf_nats_books_apply(struct uf_nats_books *bk, const struct uf_record *r, uint64_t seq);

/* Replaces instrument s->instrument with a consumer snapshot (the bridge seeds from the
 * local image after a lap: only the image's depth is known). */
int uf_nats_books_seed(struct uf_nats_books *bk, const struct uf_book_snapshot *s);

/* Encodes instrument `id` as a key-value entry stamped `stamp` into *buf (grown with
 * realloc as needed). Returns its length, -ENOENT when never set, -ENOMEM. */
int uf_nats_books_encode(struct uf_nats_books *bk, uint32_t id, uint64_t stamp, void **buf,
                         size_t *cap);

/* Decodes a key-value entry into its instrument's book; records below
 * max(entry stamp, min_from) will be skipped. Returns 0, -EPROTO (bad entry, or this
 * generation's entry in another book version), -ESTALE (other generation, of any version:
 * ignored), -ERANGE (id too large), -ENOMEM. */
int uf_nats_books_decode(struct uf_nats_books *bk, const void *buf, size_t len, uint64_t min_from);

/* Copies instrument `id` cut to `depth` levels per side (flagged TRUNCATED where cut, as the
 * image), stamped `stamp`. Returns 0, -ENOENT, -ERANGE. */
int uf_nats_books_snapshot(const struct uf_nats_books *bk, uint32_t id, uint32_t depth,
                           uint64_t stamp, struct uf_book_snapshot *s);

/* 1 when instrument `id` has a book (anything set it). */
int uf_nats_books_present(const struct uf_nats_books *bk, uint32_t id);

/* Sequence from which records of `id` apply (its entry's stamp); UINT64_MAX when absent. */
uint64_t uf_nats_books_apply_from(const struct uf_nats_books *bk, uint32_t id);

/* Id of the present instrument whose directory symbol is `symbol` ("AAPL"): 0, -ENOENT. */
int uf_nats_books_lookup(const struct uf_nats_books *bk, const char *symbol, uint32_t *id);

/* Marks instrument `id` changed again (a flush that failed is retried). */
void uf_nats_books_mark_dirty(struct uf_nats_books *bk, uint32_t id);

/* Hands out the ids changed since the last call (valid until the next apply). */
uint32_t uf_nats_books_take_dirty(struct uf_nats_books *bk, const uint32_t **ids);

/* The keys one read of the bucket has seen. The watcher's mark "every entry present at the
 * start was delivered" can come before the last of them while the bridge writes (nats-server
 * derives it from a per-message pending count that can drop to 0 and grow again; the missing
 * entries follow the mark): a remote consumer that believed it lost those books, and a record
 * arriving later for one of them made a book without its symbol. So a load counts the
 * distinct keys it read against the bucket's key count taken before the watch, and reads on
 * past an early mark. */
struct uf_nats_keys {
	uint8_t *seen;     /* per instrument id: 1 once read; [max] is the commit key */
	uint32_t max;      /* instrument ids 0 .. max-1 */
	uint64_t want;     /* keys the bucket held before the watch */
	uint64_t distinct; /* keys read so far, each counted once */
};

/* Starts a count of `want` keys for instruments 0 .. max-1. Returns 0 or -ENOMEM. */
int uf_nats_keys_init(struct uf_nats_keys *k, uint32_t max, uint64_t want);

/* Frees the count. */
void uf_nats_keys_free(struct uf_nats_keys *k);

/* Counts key `key` as read: "commit" and "i<id>" (id < max) once however often they come
 * (an entry rewritten during the watch comes again); any other key at each delivery (only a
 * foreign writer makes one, and nobody rewrites it). */
void uf_nats_keys_saw(struct uf_nats_keys *k, const char *key);

/* 1 when at least as many distinct keys were read as the bucket held before the watch. */
int uf_nats_keys_complete(const struct uf_nats_keys *k);

#endif /* UF_NATS_BOOK_H */
