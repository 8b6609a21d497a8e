/* The feed's producer calls into ring/ (see feed_ring.h for why this is its own file). */
#include "feed/feed_ring.h"

#include <stdio.h>

#include "ring/uf_ring.h"

int uf_feed_ring_create(const struct uf_feed_config *cfg, struct uf_ring **out, char *err,
                        size_t errlen)
{
	struct uf_ring_options opt;
	uf_ring_options_init(&opt);
	if (cfg->ring.capacity)
		opt.capacity = cfg->ring.capacity;
	if (cfg->ring.mode)
		opt.mode = cfg->ring.mode;
	opt.numa_node = cfg->numa_node >= 0 ? cfg->numa_node : UF_RING_NUMA_AUTO;
	if (cfg->book.depth)
		opt.depth = cfg->book.depth;
	if (cfg->book.max_instruments)
		opt.max_instruments = cfg->book.max_instruments;
	const char *name = cfg->ring.name[0] ? cfg->ring.name : cfg->name;
	return uf_ring_create(name, &opt, out, err, errlen);
}

uint64_t uf_feed_ring_publish(struct uf_ring *r, const struct uf_record *recs, size_t n)
{
	while (n) {
		size_t k = n < r->max_batch ? n : (size_t)r->max_batch;
		(void)uf_ring_publish(r, recs, k);
		recs += k;
		n -= k;
	}
	return uf_ring_tail(r);
}

void uf_feed_ring_image_record(struct uf_ring *r, const struct uf_record *rec, uint64_t seq)
{
	switch (rec->kind) {
	case UF_REC_TRADE:
		(void)uf_ring_image_add_trade(r, rec->instrument, rec->price, rec->shares,
		                              rec->exch_ts, rec->rx_ts, seq);
		break;
	case UF_REC_STATUS:
		if (rec->aux)
			(void)uf_ring_image_set_status(r, rec->instrument, rec->aux, rec->price,
			                               rec->shares, rec->exch_ts, seq);
		break;
	case UF_REC_INSTRUMENT:
		(void)uf_ring_image_set_symbol(r, rec->instrument, rec->ref, (uint32_t)rec->shares,
		                               rec->aux, seq);
		break;
	default:
		break;
	}
}

void uf_feed_ring_set_book(struct uf_ring *r, uint32_t instrument, const struct uf_level *bids,
                           uint32_t nbid, const struct uf_level *asks, uint32_t nask, uint64_t seq,
                           uint64_t rx_ts)
{
	(void)uf_ring_image_set_book(r, instrument, bids, nbid, asks, nask, seq, rx_ts);
}

void uf_feed_ring_batch_begin(struct uf_ring *r)
{
	/* -EBUSY only if a bracket is open: the feed never nests them */
	(void)uf_ring_image_batch_begin(r);
}

void uf_feed_ring_batch_end(struct uf_ring *r, uint64_t seq)
{
	uf_ring_image_batch_end(r, seq);
}

size_t uf_feed_ring_max_batch(const struct uf_ring *r)
{
	return (size_t)r->max_batch;
}

void uf_feed_ring_set_stale_all(struct uf_ring *r, int stale, uint64_t seq)
{
	(void)uf_ring_image_set_stale(r, UINT32_MAX, stale, seq);
}

void uf_feed_ring_close(struct uf_ring *r)
{
	if (r)
		uf_ring_close(r);
}
