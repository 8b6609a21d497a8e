/* The sink: published records -> ring records and book image. See sink.h for the policy. */
#include "feed/sink.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/uf_compiler.h"
#include "common/uf_err.h"
#include "common/uf_time.h"
#include "feed/feed_log.h"
#include "publish/uf_publish.h"
#include "ring/journal_writer.h"
#include "ring/uf_ring.h"

_Static_assert(UF_SINK_MAX_DEPTH <= UF_RING_MAX_DEPTH, "the ring's image holds the depth");
_Static_assert(UF_INSTRUMENT_ALL == UINT32_MAX, "a doubt of all books is the ring's all entries");

/* Keeps the first error of a step; later updates of the step are still made. */
static inline void uf_sink_keep(int *first, int rc)
{
	if (UF_UNLIKELY(rc < 0) && *first == 0)
		*first = rc;
}

/* The journal writer's faults and laps go to the engine's log (from the writer's thread). */
static void uf_sink_journal_log(void *ctx, const char *line)
{
	(void)ctx;
	uf_feed_log_warn("%s", line);
}

/* Every side's count unknown: the next copy of each reads all it may need. Cold. */
static void uf_sink_forget_totals(struct uf_sink *s)
{
	if (s->side_total)
		memset(s->side_total, 0xff, 2 * (size_t)s->max_inst * sizeof(*s->side_total));
}

int uf_sink_open(struct uf_sink *s, const struct uf_feed_config *cfg, struct uf_publisher *pub,
                 char *err, size_t errlen)
{
	struct uf_ring_options opt;
	memset(s, 0, sizeof(*s));
	s->pub = pub;
	s->max_inst = uf_publish_max_instruments(pub);
	s->depth = cfg->book.depth; /* resolved by uf_feed_create (uf_feed_config_resolve) */
	if (s->depth > UF_SINK_MAX_DEPTH)
		s->depth = UF_SINK_MAX_DEPTH;
	s->dirty = calloc(s->max_inst, sizeof(*s->dirty));
	s->is_dirty = calloc(s->max_inst, 1);
	s->dirty_rx = calloc(s->max_inst, sizeof(*s->dirty_rx));
	s->dirty_px = calloc(4 * (size_t)s->max_inst, sizeof(*s->dirty_px));
	s->side_total = malloc(2 * (size_t)s->max_inst * sizeof(*s->side_total));
	if (!s->dirty || !s->is_dirty || !s->dirty_rx || !s->dirty_px || !s->side_total) {
		uf_sink_close(s);
		uf_err_set(err, errlen, "out of memory");
		return -ENOMEM;
	}
	uf_sink_forget_totals(s);
	uf_ring_options_init(&opt);
	opt.capacity = cfg->ring.capacity;
	opt.mode = cfg->ring.mode;
	if (cfg->ring.has_gid)
		opt.gid = cfg->ring.gid;
	opt.numa_node = cfg->numa_node >= 0 ? cfg->numa_node : UF_RING_NUMA_AUTO;
	opt.depth = cfg->book.depth;
	opt.max_instruments = cfg->book.max_instruments;
	const char *name = cfg->ring.name[0] ? cfg->ring.name : cfg->name;
	/* a restart mid-day: the new generation continues the day's journal after its last
	 * whole record, so the day is one sequence (docs/journal.md); unreadable: from 0 */
	if (cfg->ring.journal.dir[0])
		(void)uf_journal_resume_seq(cfg->ring.journal.dir, name, uf_now_realtime_ns(),
		                            &opt.first_seq);
	int rc = uf_ring_create(name, &opt, &s->ring, err, errlen);
	if (rc < 0) {
		s->ring = NULL;
		uf_sink_close(s);
		return rc;
	}
	if (cfg->ring.journal.dir[0]) {
		struct uf_journal_options jo;
		memset(&jo, 0, sizeof(jo));
		jo.dir = cfg->ring.journal.dir;
		jo.fsync = cfg->ring.journal.fsync;
		jo.interval_ms = cfg->ring.journal.interval_ms;
		jo.keep_days = cfg->ring.journal.keep_days;
		jo.log = uf_sink_journal_log;
		rc = uf_journal_start(s->ring, &jo, &s->journal, err, errlen);
		if (rc < 0) {
			s->journal = NULL;
			uf_sink_close(s);
		}
	}
	return rc;
}

void uf_sink_close(struct uf_sink *s)
{
	if (s->ring) {
		/* the image is complete before the ring says closed */
		(void)uf_sink_image_flush(s);
		/* the journal holds every record before the ring says closed */
		uf_journal_stop(s->journal);
		s->journal = NULL;
		uf_ring_close(s->ring);
	}
	free(s->dirty);
	free(s->is_dirty);
	free(s->dirty_rx);
	free(s->dirty_px);
	free(s->side_total);
	s->dirty_px = NULL;
	s->side_total = NULL;
	s->ring = NULL;
	s->dirty = NULL;
	s->is_dirty = NULL;
	s->dirty_rx = NULL;
}

size_t uf_sink_max_batch(const struct uf_sink *s)
{
	return (size_t)s->ring->max_batch;
}

/* Publishes n records (in the ring's largest batches when a cold path hands more) and
 * returns the ring sequence after them: the stamp of the image updates they cause. */
static uint64_t uf_sink_publish(struct uf_sink *s, const struct uf_record *recs, size_t n,
                                int *first)
{
	while (n) {
		size_t k = n < s->ring->max_batch ? n : (size_t)s->ring->max_batch;
		uf_sink_keep(first, uf_ring_publish(s->ring, recs, k));
		recs += k;
		n -= k;
	}
	return uf_ring_tail(s->ring);
}

/* Opens the image batch of one step: -EBUSY only if one is open, which the sink never
 * leaves behind. */
static inline void uf_sink_batch_begin(struct uf_sink *s, int *first)
{
	uf_sink_keep(first, uf_ring_image_batch_begin(s->ring));
}

/* A RESET voids the doubts of the records before it: a book a day-1 record flagged stale in
 * the open (deferred) bracket must not be flagged again at the flush, after the RESET cleared
 * it (the next day's books would read stale though whole). Its level marks stay: the flush
 * copies the publisher's books as they are then. A book left with no mark leaves the list. */
static UF_COLD void uf_sink_forget_doubts(struct uf_sink *s)
{
	uint32_t k = 0;
	for (uint32_t i = 0; i < s->ndirty; i++) {
		uint32_t id = s->dirty[i];
		s->is_dirty[id] &= (uint8_t)~UF_SINK_DIRTY_STALE;
		if (s->is_dirty[id])
			s->dirty[k++] = id;
	}
	s->ndirty = k;
}

/* One record's effect on the image, other than levels (those go through the dirty set). */
static int uf_sink_image_record(struct uf_sink *s, const struct uf_record *r, uint64_t seq)
{
	switch (r->kind) {
	case UF_REC_TRADE:
		/* volume and last trade move exactly as the record contract says */
		if (!uf_rec_trade_prints(r))
			return 0;
		return uf_ring_image_add_trade(s->ring, r->instrument, r->price, r->shares,
		                               r->exch_ts, r->rx_ts, seq);
	case UF_REC_STALE: /* UF_INSTRUMENT_ALL is the ring's "every entry" (UINT32_MAX) */
		return uf_ring_image_set_stale(s->ring, r->instrument, 1, seq);
	case UF_REC_RESET:
		uf_sink_forget_doubts(s);
		uf_sink_forget_totals(s); /* the image's books are emptied, not copied */
		return uf_ring_image_reset_book(s->ring, UINT32_MAX, seq);
	case UF_REC_STATUS:
		if (!r->aux)
			return 0;
		return uf_ring_image_set_status(s->ring, r->instrument, r->aux, r->price, r->shares,
		                                r->exch_ts, seq);
	case UF_REC_INSTRUMENT: {
		int rc = uf_ring_image_set_symbol(s->ring, r->instrument, r->ref,
		                                  (uint32_t)r->shares, r->aux, seq);
		/* A book named (or entering the filter) while in doubt: its entry appears
		 * stale, as the record says, though the STALE record came before the entry
		 * existed (a doubt of every book) or was not for it yet (filtered out). */
		if (rc == 0 && (r->flags & UF_RECF_STALE))
			rc = uf_ring_image_set_stale(s->ring, r->instrument, 1, seq);
		return rc;
	}
	default:
		return 0;
	}
}

/* Copies instrument id's top levels from the publisher into the image: depth + 1 of them,
 * so that the ring cuts a deeper side to depth and flags it truncated. */
static int uf_sink_copy_book(struct uf_sink *s, uint32_t id, uint64_t seq, uint64_t rx_ts)
{
	if (id < s->max_inst) /* a deeper side's count is not read here */
		s->side_total[2 * (size_t)id] = s->side_total[2 * (size_t)id + 1] =
		    UF_SINK_TOTAL_UNKNOWN;
	int nb = uf_publish_top(s->pub, id, UF_SIDE_BID, s->bids, s->depth + 1);
	int na = uf_publish_top(s->pub, id, UF_SIDE_ASK, s->asks, s->depth + 1);
	return uf_ring_image_set_book(s->ring, id, s->bids, nb > 0 ? (uint32_t)nb : 0, s->asks,
	                              na > 0 ? (uint32_t)na : 0, seq, rx_ts);
}

/* Copies one side of instrument id's book where the records since the last copy changed it,
 * prices `best` to `worst`, straight from the publisher into the image entry (the ring's
 * in-place side write, no staging copy): the levels better than `best` are the same in the
 * publisher as in the image (none of them changed, none was inserted above them), so neither
 * is read. One read takes the levels from..end (the image's levels within the range) and the
 * side's count: when the side kept its count, the levels worse than `worst` did not move (as
 * many levels were added as removed, all better than them), and that is all (nothing at all
 * when no image level lies in the range: a level added and removed again). The count before
 * is the image's own for a side that fits in it; for a side deeper than the image (cut) it is
 * the sink's note of the count at the last copy (side_total: on a deep book nearly every copy
 * read the whole image side again when the image's cut flag was all there was to go on).
 * Otherwise, or when the count is not known, a second read takes end..depth. A side deeper
 * than the image whose changes all lie below the image's last level reads no level (from =
 * end = depth) and keeps its levels and its truncated flag. The entry is touched (stamp,
 * receive time) in every case, as a full copy (uf_sink_copy_book) touches it. Inlined into
 * uf_sink_copy_dirty: one call per side less on the feed's hottest image path. */
static inline __attribute__((always_inline)) int uf_sink_copy_side(struct uf_sink *s, uint32_t id,
                                                                   int side, int64_t best,
                                                                   int64_t worst, uint64_t seq,
                                                                   uint64_t rx_ts)
{
	struct uf_ring_side w;
	uint32_t from, end, n;
	size_t total;
	int rc = uf_ring_image_side_begin(s->ring, id, side, &w);
	if (UF_UNLIKELY(rc < 0))
		return rc;
	uf_ring_image_side_span(&w, best, worst, &from, &end);
	/* the levels from..end first, with the side's count: when it kept its count, that is
	 * all that can differ */
	int got =
	    uf_publish_levels(s->pub, id, (uint8_t)side, from, w.lv + from, end - from, &total);
	/* the side's count at the last copy: the image's own count, or for a side deeper than
	 * the image (cut) the sink's note of it */
	uint32_t *known = &s->side_total[2 * (size_t)id + (side == UF_SIDE_ASK)];
	uint64_t before = w.cut ? *known : w.n;
	*known = total < UF_SINK_TOTAL_UNKNOWN ? (uint32_t)total : UF_SINK_TOTAL_UNKNOWN;
	if (UF_UNLIKELY(got < 0)) {
		rc = got;
		*known = UF_SINK_TOTAL_UNKNOWN;
	} else if (total != before) {
		/* the levels below moved too: end..depth, or what is left of the side (levels
		 * from..end the first read did not fill are past the new count: cleared) */
		n = total < w.depth ? (uint32_t)total : w.depth;
		if (n > end) {
			got = uf_publish_levels(s->pub, id, (uint8_t)side, end, w.lv + end, n - end,
			                        NULL);
			if (UF_UNLIKELY(got < 0))
				rc = got;
		}
	}
	uf_ring_image_side_end(s->ring, &w, total, seq, rx_ts);
	return rc;
}

/* Notes that a LEVEL record changed `price` on the sides `bits` of book id: the copy covers
 * the best to the worst such price (a side not named: the whole side). */
static inline void uf_sink_mark_level(struct uf_sink *s, uint32_t id, uint8_t bits, uint8_t had,
                                      int64_t price)
{
	int64_t *px = &s->dirty_px[4 * (size_t)id];
	if (bits == UF_SINK_DIRTY_BID) {
		int first = !(had & UF_SINK_DIRTY_BID);
		px[0] = first || price > px[0] ? price : px[0];
		px[2] = first || price < px[2] ? price : px[2];
	} else if (bits == UF_SINK_DIRTY_ASK) {
		int first = !(had & UF_SINK_DIRTY_ASK);
		px[1] = first || price < px[1] ? price : px[1];
		px[3] = first || price > px[3] ? price : px[3];
	} else {
		px[0] = INT64_MAX;
		px[1] = INT64_MIN;
		px[2] = INT64_MIN;
		px[3] = INT64_MAX;
	}
}

/* Copies every dirty book into the open image batch, stamped seq (at its end): only the sides
 * that changed (a message changes one side of one book; copying both was a third of the image
 * stage, docs/profiling.md), and of those only the levels between the best and the worst
 * price changed (issue 26, uf_sink_copy_side). Every change of a side in the publisher is a
 * LEVEL record naming it and its price, so a side no record named since the last copy, and
 * the levels of a side above the best price named, are already right in the image. */
static void uf_sink_copy_dirty(struct uf_sink *s, uint64_t seq, int *first)
{
	for (uint32_t i = 0; i < s->ndirty; i++) {
		uint32_t id = s->dirty[i];
		uint8_t bits = s->is_dirty[id];
		const int64_t *px = &s->dirty_px[4 * (size_t)id];
		if (bits & UF_SINK_DIRTY_BID)
			uf_sink_keep(first, uf_sink_copy_side(s, id, UF_SIDE_BID, px[0], px[2], seq,
			                                      s->dirty_rx[id]));
		if (bits & UF_SINK_DIRTY_ASK)
			uf_sink_keep(first, uf_sink_copy_side(s, id, UF_SIDE_ASK, px[1], px[3], seq,
			                                      s->dirty_rx[id]));
		if (UF_UNLIKELY(bits & UF_SINK_DIRTY_STALE))
			uf_sink_keep(first, uf_ring_image_set_stale(s->ring, id, 1, seq));
		s->is_dirty[id] = 0;
	}
	s->ndirty = 0;
}

int uf_sink_records(struct uf_sink *s, const struct uf_record *recs, size_t n, uint64_t rx_ts)
{
	int first = 0;
	if (n == 0)
		return 0;
	uint64_t seq = uf_sink_publish(s, recs, n, &first);
	if (s->clock)
		s->published_tick = uf_tick_now(s->clock); /* stage boundary ring | image */
	if (s->defer_image) {
		/* One bracket from the first step to uf_sink_image_flush: the trade, status,
		 * directory and doubt updates go in now (their entries stay locked), the books
		 * are copied at the flush. */
		if (!s->image_open) {
			uf_sink_batch_begin(s, &first);
			s->image_open = 1;
		}
	} else {
		uf_sink_batch_begin(s, &first);
	}
	for (size_t i = 0; i < n; i++) {
		const struct uf_record *r = &recs[i];
		/* A record the publisher flags stale (its book is in doubt since a gap or a
		 * doubt) flags the book's image entry too: a book first seen after an all-books
		 * doubt has no entry to flag when the doubt is published. The STALE record itself
		 * is the image's own update below; global kinds name no book. */
		if (UF_UNLIKELY(r->flags & UF_RECF_STALE) && r->instrument < s->max_inst &&
		    r->kind != UF_REC_STALE) {
			if (!s->is_dirty[r->instrument])
				s->dirty[s->ndirty++] = r->instrument;
			s->is_dirty[r->instrument] |= UF_SINK_DIRTY_STALE;
		}
		if (r->kind == UF_REC_LEVEL) {
			if (r->instrument < s->max_inst) {
				/* which side changed: only that one is copied (a side the record
				 * does not name is taken as both) */
				uint8_t bits = r->side == UF_SIDE_BID   ? UF_SINK_DIRTY_BID
				               : r->side == UF_SIDE_ASK ? UF_SINK_DIRTY_ASK
				                                        : UF_SINK_DIRTY_BOTH;
				uint8_t had = s->is_dirty[r->instrument];
				if (!had)
					s->dirty[s->ndirty++] = r->instrument;
				uf_sink_mark_level(s, r->instrument, bits, had, r->price);
				s->is_dirty[r->instrument] = had | bits;
				s->dirty_rx[r->instrument] = rx_ts; /* its latest change */
			}
		} else if (r->kind != UF_REC_GAP) { /* trades, statuses, directory, doubts */
			uf_sink_keep(&first, uf_sink_image_record(s, r, seq));
		}
	}
	if (s->defer_image) {
		/* The books wait for uf_sink_image_flush, but a bracket holding a snapshot load
		 * or a long replay would keep its entries locked past a reader's budget: every
		 * record the publisher made is in the ring here, so the sink may flush itself. */
		s->open_recs += n;
		if (UF_UNLIKELY(s->open_recs >= UF_SINK_IMAGE_MAX_RECS))
			uf_sink_keep(&first, uf_sink_image_flush(s));
		return first;
	}
	uf_sink_copy_dirty(s, seq, &first);
	uf_ring_image_batch_end(s->ring, seq);
	return first;
}

int uf_sink_image_flush(struct uf_sink *s)
{
	int first = 0;
	if (!s->image_open)
		return 0;
	/* Every record the publisher made is in the ring (the caller's contract), so its books
	 * are exactly what the records up to the tail say: stamp and commit them there. */
	uint64_t seq = uf_ring_tail(s->ring);
	uf_sink_copy_dirty(s, seq, &first);
	uf_ring_image_batch_end(s->ring, seq);
	s->image_open = 0;
	s->open_recs = 0;
	return first;
}

void uf_sink_defer_image(struct uf_sink *s, int on)
{
	if (!on)
		(void)uf_sink_image_flush(s);
	s->defer_image = on;
}

int uf_sink_gap(struct uf_sink *s, const struct uf_record *recs, size_t n)
{
	int first = uf_sink_image_flush(s);
	uint64_t seq = uf_sink_publish(s, recs, n, &first);
	uf_sink_batch_begin(s, &first);
	uf_sink_keep(&first, uf_ring_image_set_stale(s->ring, UINT32_MAX, 1, seq));
	uf_ring_image_batch_end(s->ring, seq);
	return first;
}

int uf_sink_new_session(struct uf_sink *s, const struct uf_record *recs, size_t n)
{
	/* The RESET record and the emptied image in one step: the image batch is stamped with
	 * the sequence after the record. */
	return uf_sink_records(s, recs, n, 0);
}

int uf_sink_instrument_enters(struct uf_sink *s, uint32_t id, struct uf_record *scratch, size_t cap,
                              size_t *published)
{
	int first = uf_sink_image_flush(s); /* this one brackets its own steps */
	const struct uf_pub_instrument *pi = uf_publish_instrument(s->pub, id);
	*published = 0;
	if (!pi || cap < 1)
		return -ENOENT;
	/* Its directory entry first (the stream and the image never had it), then its book. */
	struct uf_record *ir = &scratch[0];
	memset(ir, 0, sizeof(*ir));
	ir->kind = UF_REC_INSTRUMENT;
	ir->flags = UF_RECF_LAST | (pi->stale ? UF_RECF_STALE : 0); /* a doubt it missed */
	ir->instrument = id;
	memcpy(&ir->ref, pi->symbol, sizeof(ir->ref));
	ir->shares = pi->round_lot;
	ir->aux = pi->market_category;
	uint64_t iseq = uf_sink_publish(s, ir, 1, &first);
	uf_sink_batch_begin(s, &first);
	uf_sink_keep(&first, uf_sink_image_record(s, ir, iseq));
	uf_ring_image_batch_end(s->ring, iseq);
	*published = 1;
	int n = uf_publish_snapshot(s->pub, id, scratch, cap);
	if (n > 0) {
		uint64_t seq = uf_sink_publish(s, scratch, (size_t)n, &first);
		uf_sink_batch_begin(s, &first);
		uf_sink_keep(&first, uf_sink_copy_book(s, id, seq, 0));
		uf_ring_image_batch_end(s->ring, seq);
		*published += (size_t)n;
	}
	return first;
}

void uf_sink_defer_wake(struct uf_sink *s, int on)
{
	uf_ring_defer_wake(s->ring, on);
}

int uf_sink_wake_flush(struct uf_sink *s)
{
	return uf_ring_wake_flush(s->ring);
}

void uf_sink_set_waker(struct uf_sink *s, int (*fn)(void *ctx, uint32_t *word), void *ctx)
{
	if (s->ring)
		uf_ring_set_waker(s->ring, fn, ctx);
}
