/* Book image writer: per-instrument entries under a sequence lock, so a consumer copying an
 * entry while the producer changes it retries instead of seeing half an update. Each setter
 * is one lock/unlock pair around a few dozen stores: cheap enough for every message. */
#include "ring/uf_ring.h"

#include <string.h>

#include "common/uf_symbol.h"

/* Ends a bracket: every entry it touched becomes visible at once, stamped `seq`. */
static void release_touched(struct uf_ring *r, uint64_t seq)
{
	for (uint32_t i = 0; i < r->ntouched; i++) {
		uint32_t id = r->touched[i];
		uf_ring_entry_unlock(uf_image_entry_at(r->image, id), seq);
		r->is_touched[id] = 0;
	}
	r->ntouched = 0;
	r->batch = 0;
}

int uf_ring_image_begin(struct uf_ring *r, uint32_t instrument)
{
	if (UF_UNLIKELY(instrument >= r->image->max_instruments))
		return -ERANGE;
	if (UF_UNLIKELY(r->batch))
		return -EBUSY;
	r->batch = 1;
	uf_ring_entry_begin(r, instrument); /* held until uf_ring_image_end */
	return 0;
}

void uf_ring_image_end(struct uf_ring *r, uint64_t seq)
{
	if (r->batch == 1)
		release_touched(r, seq);
}

int uf_ring_image_batch_begin(struct uf_ring *r)
{
	if (UF_UNLIKELY(r->batch))
		return -EBUSY;
	r->batch = 2;
	return 0;
}

void uf_ring_image_batch_end(struct uf_ring *r, uint64_t seq)
{
	if (r->batch != 2)
		return;
	release_touched(r, seq);
	/* every record < seq is reflected: late consumers may resume from here */
	uf_store_release_u64(&r->image->commit_seq, seq);
}

static void copy_side(struct uf_level *dst, uint32_t depth, const struct uf_level *src, uint32_t n)
{
	uint32_t i;

	for (i = 0; i < n; i++) {
		dst[i].price = src[i].price;
		dst[i].shares = src[i].shares;
		dst[i].orders = src[i].orders;
		dst[i].reserved = 0;
	}
	if (n < depth)
		memset(&dst[n], 0, (size_t)(depth - n) * sizeof(*dst));
}

int uf_ring_image_set_levels(struct uf_ring *r, uint32_t instrument, int side,
                             const struct uf_level *levels, uint32_t n, uint64_t seq,
                             uint64_t rx_ts)
{
	/* The whole side through the in-place write: one rule (cut to depth, flag the cut, clear
	 * what the side lost) for this setter and the feed's per-level copy. */
	struct uf_ring_side w;
	int rc = uf_ring_image_side_begin(r, instrument, side, &w);
	if (UF_UNLIKELY(rc < 0))
		return rc;
	uint32_t k = n < w.depth ? n : w.depth;
	for (uint32_t i = 0; i < k; i++)
		w.lv[i] = (struct uf_level){.price = levels[i].price,
		                            .shares = levels[i].shares,
		                            .orders = levels[i].orders};
	uf_ring_image_side_end(r, &w, n, seq, rx_ts);
	return 0;
}

int uf_ring_image_set_book(struct uf_ring *r, uint32_t instrument, const struct uf_level *bids,
                           uint32_t nbid, const struct uf_level *asks, uint32_t nask, uint64_t seq,
                           uint64_t rx_ts)
{
	uint32_t depth = r->image->depth;
	uint32_t cut_bid = nbid > depth, cut_ask = nask > depth;
	struct uf_image_entry *e;

	if (cut_bid)
		nbid = depth;
	if (cut_ask)
		nask = depth;
	e = uf_ring_entry_begin(r, instrument);
	if (UF_UNLIKELY(!e))
		return -ERANGE;
	copy_side(uf_image_levels(e), depth, bids, nbid);
	copy_side(uf_image_levels(e) + depth, depth, asks, nask);
	e->nbid = nbid;
	e->nask = nask;
	e->flags = uf_ring_set_trunc(uf_ring_set_trunc(e->flags, UF_IMAGE_F_TRUNC_BID, cut_bid),
	                             UF_IMAGE_F_TRUNC_ASK, cut_ask);
	e->update_rx_ts = rx_ts;
	uf_ring_entry_end(r, e, seq);
	return 0;
}

int uf_ring_image_set_status(struct uf_ring *r, uint32_t instrument, uint32_t code, int64_t price,
                             uint64_t shares, uint64_t exch_ts, uint64_t seq)
{
	struct uf_image_entry *e;
	struct uf_image_status_raw *st;

	/* 0 and codes beyond the enum have no slot: refused before any write, so a code this
	 * build does not know never lands in (or past) another code's slot */
	if (UF_UNLIKELY(!uf_status_code_known(code)))
		return -EINVAL;
	e = uf_ring_entry_begin(r, instrument);
	if (UF_UNLIKELY(!e))
		return -ERANGE;
	st = &e->status[uf_status_slot(code)];
	st->code = code;
	st->price = price;
	st->shares = shares;
	st->exch_ts = exch_ts;
	uf_ring_entry_end(r, e, seq);
	return 0;
}

int uf_ring_image_add_trade(struct uf_ring *r, uint32_t instrument, int64_t price, uint64_t shares,
                            uint64_t exch_ts, uint64_t rx_ts, uint64_t seq)
{
	struct uf_image_entry *e = uf_ring_entry_begin(r, instrument);

	if (UF_UNLIKELY(!e))
		return -ERANGE;
	e->last_price = price;
	e->last_shares = shares;
	e->last_exch_ts = exch_ts;
	e->last_rx_ts = rx_ts;
	e->volume += shares;
	e->trades++;
	e->update_rx_ts = rx_ts;
	uf_ring_entry_end(r, e, seq);
	return 0;
}

int uf_ring_image_set_symbol(struct uf_ring *r, uint32_t instrument, uint64_t symbol,
                             uint32_t round_lot, uint32_t category, uint64_t seq)
{
	struct uf_image_entry *e = uf_ring_entry_begin(r, instrument);

	if (UF_UNLIKELY(!e))
		return -ERANGE;
	e->symbol = symbol;
	e->round_lot = round_lot;
	e->category = category;
	uf_ring_entry_end(r, e, seq);
	return 0;
}

/* Whether entry `id` holds anything: present (released once), or first set inside the open
 * bracket (present only once the bracket ends). A doubt or a reset of every entry must reach
 * an entry the same bracket made, or a directory entry and a doubt of every book in one
 * receive batch would leave that entry clean. */
static inline int entry_known(const struct uf_ring *r, uint32_t id)
{
	return uf_image_entry_at(r->image, id)->present || (r->batch && r->is_touched[id]);
}

static void set_stale_one(struct uf_ring *r, uint32_t id, int stale, uint64_t seq)
{
	struct uf_image_entry *e = uf_ring_entry_begin(r, id);

	if (stale)
		e->flags |= UF_RECF_STALE;
	else
		e->flags &= ~(uint32_t)UF_RECF_STALE;
	uf_ring_entry_end(r, e, seq);
}

int uf_ring_image_set_stale(struct uf_ring *r, uint32_t instrument, int stale, uint64_t seq)
{
	if (instrument == UINT32_MAX) {
		for (uint32_t i = 0; i < r->image->max_instruments; i++)
			if (entry_known(r, i))
				set_stale_one(r, i, stale, seq);
		return 0;
	}
	if (instrument >= r->image->max_instruments)
		return -ERANGE;
	/* Flagged already: no write (the sink re-flags a doubted book at every copy while it
	 * stays in doubt; the entry's lock and stamp need not move for that). The producer
	 * reads its own entry. */
	if (stale && (uf_image_entry_at(r->image, instrument)->flags & UF_RECF_STALE) &&
	    uf_image_entry_at(r->image, instrument)->present)
		return 0;
	set_stale_one(r, instrument, stale, seq);
	return 0;
}

static void reset_one(struct uf_ring *r, uint32_t id, uint64_t seq)
{
	uint32_t depth = r->image->depth;
	struct uf_image_entry *e = uf_ring_entry_begin(r, id);

	copy_side(uf_image_levels(e), 2 * depth, NULL, 0);
	e->nbid = 0;
	e->nask = 0;
	e->flags &= ~(uint32_t)(UF_RECF_STALE | UF_IMAGE_F_TRUNC_BID | UF_IMAGE_F_TRUNC_ASK);
	e->last_price = 0;
	e->last_shares = 0;
	e->last_exch_ts = 0;
	e->last_rx_ts = 0;
	e->volume = 0;
	e->trades = 0;
	uf_ring_entry_end(r, e, seq);
}

int uf_ring_image_reset_book(struct uf_ring *r, uint32_t instrument, uint64_t seq)
{
	if (instrument == UINT32_MAX) {
		for (uint32_t i = 0; i < r->image->max_instruments; i++)
			if (entry_known(r, i))
				reset_one(r, i, seq);
		return 0;
	}
	if (instrument >= r->image->max_instruments)
		return -ERANGE;
	reset_one(r, instrument, seq);
	return 0;
}

uint64_t uf_ring_symbol_pack(const char *sym)
{
	uint64_t v;

	uf_symbol_pad(&v, sym);
	return v;
}
