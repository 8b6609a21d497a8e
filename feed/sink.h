/* The sink: where published records become ring records and book-image updates.
 *
 * The one owner of the book-image policy, and the only file of feed/ that talks to ring/:
 *   - every record of a publish step goes to the ring in one publish (the ring's largest
 *     batch bounds a step: uf_sink_max_batch), then the image is updated inside one image
 *     batch stamped with the ring sequence after those records, so a late consumer's
 *     snapshot holds all of a step or none of it;
 *   - LEVEL records mark their instrument's side dirty; at the end of the step (deferred: at
 *     the flush) each dirty side's changed levels (of the top `depth`) are copied from the
 *     publisher into the image, in place; the side's whole count goes with them, so a deeper
 *     side is flagged truncated in the image;
 *   - TRADE, STATUS (code != 0) and INSTRUMENT records map onto the image's trade, status and
 *     directory fields; a TRADE moves volume and last trade only when uf_rec_trade_prints()
 *     (the record contract: not non-printable, not a break, shares > 0);
 *   - a STALE record marks its entry (or every entry) stale, and so does an INSTRUMENT record
 *     that carries UF_RECF_STALE (a book named after a doubt of every book, or entering the
 *     symbol filter in doubt); a gap (unrecovered messages) marks every image entry stale; a RESET
 * record (new session) empties every image book, clears the stale flags and starts volume and last
 * trade over, in the step that publishes it;
 *   - an instrument that enters the symbol filter gets its directory entry (UF_RECF_STALE
 *     when the publisher has its book in doubt) and its whole book, in the stream and in the
 *     image.
 *
 * Errors: the ring refuses an image update for an instrument outside its image (-ERANGE) or a
 * status code beyond UF_STATUS_MAX (-EINVAL: every defined code has its slot). The stream
 * itself is always complete; each call still applies every other update of its step and
 * returns the first error, which the pipeline counts (image_errors). Feed thread only, except
 * open/close (control thread). */
#ifndef UF_SINK_H
#define UF_SINK_H

#include <stddef.h>
#include <stdint.h>

#include "common/uf_tick.h"
#include "feed/uf_feed_config.h"
#include "publish/uf_level.h"
#include "publish/uf_record.h"

#define UF_SINK_MAX_DEPTH UF_CFG_BOOK_DEPTH_MAX /* image levels per side copied at most */
/* Records a deferred image bracket may span before uf_sink_records flushes it itself: a receive
 * batch (64 datagrams of ~95 records) stays under it, a snapshot load or the replay of what
 * was buffered during one does not, and must not hold image entries locked for longer than a
 * reader retries (20 ms, ring/consumer_local.c). */
#define UF_SINK_IMAGE_MAX_RECS 8192
/* Sides of a dirty book (struct uf_sink.is_dirty): only those are copied. STALE: a record of
 * the book carried UF_RECF_STALE, so its image entry is flagged at the copy (an entry made
 * after a gap or an all-books doubt would otherwise show a book the stream doubts as sound). */
#define UF_SINK_DIRTY_BID   1u
#define UF_SINK_DIRTY_ASK   2u
#define UF_SINK_DIRTY_BOTH  3u
#define UF_SINK_DIRTY_STALE 4u
/* struct uf_sink.side_total of a side whose count the sink does not know (never copied, or the
 * image written another way since): its next copy reads every level it may need. */
#define UF_SINK_TOTAL_UNKNOWN UINT32_MAX

struct uf_publisher;
struct uf_ring;
struct uf_journal;

struct uf_sink {
	struct uf_ring *ring;       /* shared-memory ring and book image (owned) */
	struct uf_journal *journal; /* day journal of the ring (owned), NULL when not configured:
	                             * a thread of its own, the feed thread never calls it */
	struct uf_publisher *pub;   /* books the image copies (not owned) */
	uint32_t max_inst;          /* instrument ids 0..max_inst-1 (publisher's) */
	uint32_t depth;             /* image levels per side */
	uint32_t ndirty;            /* instruments whose image book is stale */
	uint32_t *dirty;            /* their ids */
	uint8_t *is_dirty;    /* per instrument: UF_SINK_DIRTY_* sides changed (0: not listed) */
	uint64_t *dirty_rx;   /* per instrument: receive time of its latest change */
	int64_t *dirty_px;    /* per instrument, [4 id] bid and [4 id + 1] ask: the best price
	                       * changed since the copy, [4 id + 2] and [4 id + 3] the worst (a
	                       * side not named: all of it); the copy covers that range */
	uint32_t *side_total; /* per instrument, [2 id] bid and [2 id + 1] ask: the side's level
	                       * count in the publisher when it was last copied into the image
	                       * (UF_SINK_TOTAL_UNKNOWN: not known). The image keeps at most
	                       * `depth` levels and a cut flag, so for a side deeper than that only
	                       * this says whether its count moved, that is, whether the levels
	                       * below the changed prices moved up or down (uf_sink_copy_side). */
	int defer_image;      /* 1: books are copied by uf_sink_image_flush, not per step */
	int image_open;       /* the deferred image bracket is open (steps since a flush) */
	uint64_t open_recs;   /* records published while it has been open */
	/* Scratch for whole-book copies (uf_sink_copy_book: a book entering the filter): depth +
	 * 1 levels, so the ring sees that a deeper book is cut and flags the image entry
	 * truncated (UF_IMAGE_F_TRUNC_*). The per-step copies write into the image in place. */
	struct uf_level bids[UF_SINK_MAX_DEPTH + 1];
	struct uf_level asks[UF_SINK_MAX_DEPTH + 1];
	const struct uf_tick_clock *clock; /* set by the feed for stage timing, else NULL */
	uint64_t published_tick;           /* tick when uf_sink_records' ring publish ended
	                                    * (the ring | image stage boundary) */
};

/* Creates ring cfg->ring.name (default cfg->name) with cfg's capacity, mode, depth and
 * instruments, and the dirty set for `pub`'s instruments. Cold. Returns 0, or -errno with
 * one line in `err`. */
int uf_sink_open(struct uf_sink *s, const struct uf_feed_config *cfg, struct uf_publisher *pub,
                 char *err, size_t errlen);

/* Issue 14: the feed thread defers the ring's consumer wake-up (at most one FUTEX_WAKE per
 * packet, after all its publish steps and image updates, instead of one inside every publish).
 * uf_sink_defer_wake switches the ring to that mode; uf_sink_wake_flush makes the wake the
 * batch owes: -1 none owed, else the number of consumers the kernel woke (0: none was blocked
 * yet) or -errno. The feed calls it after every packet and every loop iteration. */
void uf_sink_defer_wake(struct uf_sink *s, int on);
int uf_sink_wake_flush(struct uf_sink *s);

/* Hands the ring's FUTEX_WAKE to `fn` (uf_ring_set_waker; NULL: system calls again). The
 * feed sets its io_uring SQ thread while its loop runs and removes it before the loop's
 * final flush, so no wake is queued on a ring that is being torn down. A wake handed over
 * makes uf_sink_wake_flush return UF_RING_WAKE_ASYNC. */
void uf_sink_set_waker(struct uf_sink *s, int (*fn)(void *ctx, uint32_t *word), void *ctx);

/* Issue 14: the deferred image. Copying the books a step changed into the image took as long
 * as applying them (docs/profiling.md), and every message of the step waited for it before
 * the next step was published. With uf_sink_defer_image(s, 1) a step only publishes its
 * records, marks its books dirty and makes its trade/status/directory/doubt updates inside
 * one image bracket that stays open across steps; uf_sink_image_flush copies the dirty books
 * (each once, however many steps changed it), then stamps and commits the whole bracket with
 * the ring's tail. Meanwhile the ring does not commit (uf_ring_publish inside a bracket), so a
 * late consumer's snapshot is never stamped past what its entry holds: it stays older and the
 * consumer reads more of the stream, or it waits on an entry the bracket holds (trades and
 * statuses of the window). The image lags the stream by at most one receive batch.
 *
 * Contract: call uf_sink_image_flush only when every record the publisher made has been
 * handed to uf_sink_records (the books must be what the stream up to the tail says); the
 * feed calls it after each receive batch; uf_sink_records also flushes once a bracket spans
 * UF_SINK_IMAGE_MAX_RECS records. Returns 0 or the first -errno of the copies.
 * uf_sink_defer_image(s, 0) flushes first. uf_sink_gap, uf_sink_instrument_enters and
 * uf_sink_close flush before their own work. */
void uf_sink_defer_image(struct uf_sink *s, int on);
int uf_sink_image_flush(struct uf_sink *s);

/* Marks the ring closed (consumers see it) and frees what open allocated. Safe on a sink
 * that was zeroed and never opened, or whose open failed. */
void uf_sink_close(struct uf_sink *s);

/* Largest record count one step may hand over: a step published in two parts would commit
 * (declare reflected in the image) the first part before its image updates are made. */
size_t uf_sink_max_batch(const struct uf_sink *s);

/* One publish step: the records of one packet (at most uf_sink_max_batch), received at
 * rx_ts (stamped on the image books they change). Returns 0 or the first -errno. */
int uf_sink_records(struct uf_sink *s, const struct uf_record *recs, size_t n, uint64_t rx_ts);

/* Unrecovered messages: publishes the publisher's gap records (`recs`, n of them) and marks
 * every image entry stale. Returns 0 or the first -errno. */
int uf_sink_gap(struct uf_sink *s, const struct uf_record *recs, size_t n);

/* A new session started: publishes `recs` (uf_publish_new_session's RESET record, n of them)
 * and, in the same step, empties every image book, clears the stale flags and starts volume
 * and last trade over. Returns 0 or the first -errno. */
int uf_sink_new_session(struct uf_sink *s, const struct uf_record *recs, size_t n);

/* Instrument `id` entered the symbol filter: its directory entry, then its whole book as a
 * snapshot (SNAPSHOT_BEGIN, LEVEL..., SNAPSHOT_END), in the stream and in the image.
 * `scratch` (cap records, cap >= 1) is overwritten; *published gets the records that went
 * to the ring. Cold. Returns 0 or the first -errno (-ENOENT for an id the publisher does
 * not know: nothing published). */
int uf_sink_instrument_enters(struct uf_sink *s, uint32_t id, struct uf_record *scratch, size_t cap,
                              size_t *published);

#endif /* UF_SINK_H */
