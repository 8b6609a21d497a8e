/* The feed's side of ring/: the few producer calls the pipeline (feed.c) makes, so feed.c
 * sees neither the ring's layout nor its inline internals. Levels are publish/uf_level.h's
 * `struct uf_level`, the one type both the books and the image use. */
#ifndef UF_FEED_RING_H
#define UF_FEED_RING_H

#include <stddef.h>
#include <stdint.h>

#include "feed/uf_feed_config.h"
#include "publish/uf_level.h"
#include "publish/uf_record.h"

struct uf_ring;

/* Creates ring cfg->ring.name with cfg's capacity, mode, depth and instruments. Cold. */
int uf_feed_ring_create(const struct uf_feed_config *cfg, struct uf_ring **out, char *err,
                        size_t errlen);

/* Publishes n records (split into the ring's largest batch when needed). Returns the ring
 * sequence after them (the stamp for image updates of the same records). */
uint64_t uf_feed_ring_publish(struct uf_ring *r, const struct uf_record *recs, size_t n);

/* Applies one published record's effect on the image (trades, status, symbols);
 * levels are refreshed separately with uf_feed_ring_set_book. */
void uf_feed_ring_image_record(struct uf_ring *r, const struct uf_record *rec, uint64_t seq);

/* Replaces the image book of one instrument; bids/asks best first. */
void uf_feed_ring_set_book(struct uf_ring *r, uint32_t instrument, const struct uf_level *bids,
                           uint32_t nbid, const struct uf_level *asks, uint32_t nask, uint64_t seq,
                           uint64_t rx_ts);

/* Brackets the image updates of one publish step (uf_ring_image_batch_begin/end): entries
 * touched in between stay locked and appear together stamped `seq` (the tail after that
 * publish), so a late consumer's snapshot never holds half a packet. end also commits. */
void uf_feed_ring_batch_begin(struct uf_ring *r);
void uf_feed_ring_batch_end(struct uf_ring *r, uint64_t seq);

/* Largest record count one uf_ring_publish takes. A publish step must stay within it: a
 * split publish would commit (declare reflected in the image) the first part's records
 * before their image updates are made. */
size_t uf_feed_ring_max_batch(const struct uf_ring *r);

/* Sets (after an unrecovered gap) or clears (a new session starts the books over) the stale
 * flag of every instrument in the image. */
void uf_feed_ring_set_stale_all(struct uf_ring *r, int stale, uint64_t seq);

/* Marks the ring closed and frees the handle. */
void uf_feed_ring_close(struct uf_ring *r);

#endif /* UF_FEED_RING_H */
