/* The publisher's state, shared by the files of publish/. Private: other modules use
 * publish/uf_publish.h. */
#ifndef UF_PUB_PUBLISHER_H
#define UF_PUB_PUBLISHER_H

#include <stdint.h>

#include "common/uf_atomic.h"
#include "common/uf_time.h"
#include "publish/levels.h"
#include "publish/orders.h"
#include "publish/uf_publish.h"

struct uf_publisher {
	struct uf_order_table orders;   /* live orders by reference */
	struct uf_levels lv;            /* level nodes and sorted side arrays */
	struct uf_book *books;          /* [max_instruments], hot */
	struct uf_pub_instrument *inst; /* [max_instruments], directory/status, cold */
	uint32_t max_instruments;       /* ids 0 .. max-1 */
	uint32_t prefetch;              /* batch look-ahead, 0 = off */
	uint32_t flags;                 /* UF_PUB_F_* */
	int numa_node;                  /* placement given at create */
	uint32_t *sym_slots;            /* symbol hash: instrument id + 1, 0 = empty */
	uint32_t sym_mask;              /* slots - 1 */
	uint64_t last_seq;              /* feed_seq of the last message applied */
	uint64_t last_ts;               /* its exchange timestamp */
	struct uf_pub_market market;    /* S, V, W */
	struct uf_publish_stats st;     /* counters, relaxed stores (read by monitors) */
	uint32_t doubt;                 /* 1: the message being applied put a book in doubt */
	uint32_t doubt_inst;            /* that book */
	uint32_t doubt_kind;            /* its enum uf_pub_err */
	uint32_t all_stale;             /* 1: every book is stale (gap or doubt of all) */
	uint32_t ev_open;               /* 1: a venue's event is in progress (uf_venue.h: its
	                                 * records wait for the one that completes it to carry
	                                 * UF_RECF_LAST); a gap or a reset closes it */
	uint32_t next_id;               /* next instrument id uf_venue_symbol assigns (from 1) */
	size_t books_bytes;             /* mapping sizes, for freeing */
	size_t inst_bytes;
	size_t sym_bytes;
};

/* Per-message values copied into every record of one event. */
struct uf_pub_ctx {
	uint64_t seq;     /* feed_seq */
	uint64_t rx_ts;   /* kernel receive time */
	uint64_t exch_ts; /* exchange timestamp */
};

/* Counter bump: single writer, relaxed store so a monitor's read is never torn. */
static inline void uf_pub_count(uint64_t *c, uint64_t v)
{
	uf_store_relaxed_u64(c, *c + v);
}

static inline void uf_pub_error(struct uf_publisher *p, enum uf_pub_err kind)
{
	uf_pub_count(&p->st.errors[kind], 1);
	uf_pub_count(&p->st.errors_total, 1);
}

/* An integrity or table error that left book `inst` (UF_INSTRUMENT_ALL: some book no id
 * names) missing or clipping a change: counted, and the book is put in doubt once the message
 * is applied (UF_REC_STALE, publish.c). The first doubt of a message wins (a message touches
 * one book). */
static inline void uf_pub_doubt(struct uf_publisher *p, enum uf_pub_err kind, uint32_t inst)
{
	uf_pub_error(p, kind);
	if ((inst < p->max_instruments || inst == UF_INSTRUMENT_ALL) && !p->doubt) {
		p->doubt = 1;
		p->doubt_inst = inst;
		p->doubt_kind = (uint32_t)kind;
	}
}

static inline void uf_pub_rec(struct uf_record *r, const struct uf_pub_ctx *c, uint8_t kind,
                              uint8_t side, uint16_t flags, uint32_t inst, int64_t price,
                              uint64_t shares, uint32_t aux, uint64_t ref)
{
	r->kind = kind;
	r->side = side;
	r->flags = flags;
	r->instrument = inst;
	r->price = price;
	r->shares = shares;
	r->aux = aux;
	r->pub_delta_ns = 0; /* stamped as the records enter the ring (uf_rec_stamp) */
	r->ref = ref;
	r->exch_ts = c->exch_ts;
	r->rx_ts = c->rx_ts;
	r->feed_seq = c->seq;
}

static inline uint16_t uf_pub_stale(const struct uf_book *b)
{
	return b->stale ? UF_RECF_STALE : 0;
}

/* The doubt a message's errors raised (uf_pub_doubt), as its last record (without
 * UF_RECF_LAST). Returns the records written (0/1). Cold. publish.c. */
int uf_pub_doubt_out(struct uf_publisher *p, const struct uf_pub_ctx *c, struct uf_record *r);

/* Counts msgs messages and recs records, and the live tables' sizes. */
static inline void uf_pub_account(struct uf_publisher *p, uint64_t msgs, uint64_t recs)
{
	uf_pub_count(&p->st.messages, msgs);
	uf_pub_count(&p->st.records, recs);
	uint64_t lo = p->orders.count, ll = p->lv.live;
	uf_store_relaxed_u64(&p->st.live_orders, lo);
	uf_store_relaxed_u64(&p->st.live_levels, ll);
	if (lo > p->st.peak_orders)
		uf_store_relaxed_u64(&p->st.peak_orders, lo);
	if (ll > p->st.peak_levels)
		uf_store_relaxed_u64(&p->st.peak_levels, ll);
}

/* The instrument named by the 8 symbol bytes `sym` (space padded), or -ENOENT. One hash
 * probe. directory.c. */
int uf_pub_sym_find(const struct uf_publisher *p, const char sym[8]);

/* Directory and status messages (S R H Y L V W K J h I N O): updates the directory and
 * writes their records (without UF_RECF_LAST). Returns the records written. directory.c. */
int uf_pub_status_apply(struct uf_publisher *p, const struct uf_itch_msg *m,
                        const struct uf_pub_ctx *c, struct uf_record *out);

/* Gives instrument `inst` the symbol `sym` (8 bytes, space padded). directory.c. */
void uf_pub_dir_name(struct uf_publisher *p, uint32_t inst, const char sym[8]);

/* Volume and last trade of TRADE record `r`'s instrument, when the record says it prints
 * (uf_rec_trade_prints: the record contract). directory.c. */
void uf_pub_trade(struct uf_publisher *p, const struct uf_record *r);

#endif /* UF_PUB_PUBLISHER_H */
