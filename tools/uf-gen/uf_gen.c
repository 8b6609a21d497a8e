/* uf-gen: a seeded generator of realistic synthetic ITCH 5.0 days in the daily format.
 *
 *   uf-gen --out FILE --messages N --symbols K --seed S
 *
 * Same seed, same arguments: same bytes (one PRNG, no clocks, no floating-point libm calls
 * whose results could differ between builds). What makes the day realistic:
 *   - the day's shape: S O, a directory (R) for every symbol with a unique ticker of 1-5
 *     letters, MWCB levels (V), S S, pre-open news (L H Y K J O h), the opening auction (a
 *     NOII per symbol, S Q, one opening cross Q per symbol), continuous trading, the closing
 *     auction (NOII per symbol, S M, one closing cross Q per symbol), S E, S C;
 *   - skew: symbols are drawn from a Zipf(1) distribution, so a few carry most messages;
 *   - orders live for varied times: half the events hit one of the most recent orders
 *     (fleeting orders), half any live order (resting ones); replaces chain (a replaced
 *     order can be replaced again); executions and cancels are often partial;
 *   - the books are real books: every symbol has a price ladder of its resting orders in
 *     time priority; passive orders (A, F, U) join, improve or sit behind their own side and
 *     are always strictly better than nothing on the other side (never crossed, never
 *     locked); each symbol has a fair value that random-walks (leaning back towards its
 *     home price, so it stays on the ladder): quotes are placed around it, and marketable
 *     orders, more often on the side it moved to, meet hidden liquidity (P) and execute
 *     against the resting touch in time priority (E/C, partial on the last order);
 *   - every reference is valid: E, C, X, D and U only name live orders, never for more
 *     shares than remain; B names an earlier match number; order references are unique.
 * Every one of the 23 types appears at least once in any day with N >= K + 64. */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/uf_endian.h"
#include "common/uf_parse.h"

#define TICK          100u                           /* $0.01 in ITCH price units (4 decimals) */
#define DAY_OPEN_NS   (4ull * 3600 * 1000000000ull)  /* 04:00 system hours */
#define DAY_CLOSE_NS  (20ull * 3600 * 1000000000ull) /* 20:00 */
#define RECENT_WINDOW 64    /* "most recent orders" for fleeting activity */
#define MAX_SYMBOLS   65000 /* locate codes are u16 */
#define OUTBUF        (4u << 20)
#define NIL           UINT32_MAX    /* no order (end of a level's list) */
#define LEVEL_BUDGET  (64ull << 20) /* bytes for every symbol's price ladder */
#define LADDER_MIN    128u          /* ticks per symbol, fewest */
#define LADDER_MAX    4096u         /* ticks per symbol, most */

struct order {
	uint64_t ref;    /* order reference number */
	uint32_t shares; /* shares remaining */
	uint32_t price;  /* limit price (ITCH units) */
	uint32_t prev;   /* older order at the same price and side (pool index), NIL if none */
	uint32_t next;   /* newer order at the same price and side, NIL if none */
	uint16_t locate; /* symbol */
	uint8_t side;    /* 'B' / 'S' */
};

/* One price of a symbol's ladder: its resting orders in time priority. Bids and asks share
 * the ladder because a book that never crosses or locks has only one side at any price. */
struct level {
	uint32_t head; /* oldest order (pool index), NIL when empty */
	uint32_t tail; /* newest order */
};

struct symbol {
	char name[8];  /* space padded */
	uint32_t lo;   /* price of ladder index 0, in ticks (>= 1) */
	int32_t bid;   /* ladder index of the best bid, -1 when no bids */
	int32_t ask;   /* ladder index of the best ask, -1 when no asks */
	int32_t last;  /* ladder index of the last execution (the reference without a book) */
	uint32_t home; /* ladder index the price reverts to (keeps it inside the ladder) */
	int32_t fair;  /* ladder index of the fair value: random-walks; quotes and marketable
	                * orders follow it, so the book moves with it */
};

struct gen {
	uint64_t rng;       /* xorshift64* state */
	FILE *out;          /* output file */
	uint8_t *buf;       /* output buffer */
	size_t blen;        /* bytes in buf */
	uint64_t written;   /* messages written */
	uint64_t limit;     /* body events may not write past this many messages */
	uint64_t ts;        /* current timestamp (ns since midnight) */
	uint32_t nsym;      /* K */
	struct symbol *sym; /* K symbols, locate = index + 1 */
	double *cdf;        /* Zipf cumulative weights */
	uint32_t width;     /* ticks in each symbol's ladder */
	struct level *lvl;  /* K ladders of `width` levels */
	struct order *pool; /* live orders */
	size_t live, cap;   /* live orders, pool capacity */
	size_t target_live; /* pool size the add rate steers towards */
	uint64_t next_ref;  /* next order reference */
	uint64_t match;     /* last match number used */
	int io_err;         /* a write failed */
};

static inline uint64_t rnd(struct gen *g)
{
	uint64_t x = g->rng;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	g->rng = x;
	return x * 0x2545F4914F6CDD1Dull;
}

/* Uniform in [0, n). n > 0. */
static inline uint32_t below(struct gen *g, uint32_t n)
{
	return (uint32_t)(((rnd(g) >> 32) * (uint64_t)n) >> 32);
}

/* Uniform double in [0, 1). */
static inline double unit(struct gen *g)
{
	return (double)(rnd(g) >> 11) * (1.0 / 9007199254740992.0);
}

static void flush_out(struct gen *g)
{
	if (g->blen && fwrite(g->buf, 1, g->blen, g->out) != g->blen)
		g->io_err = errno ? errno : EIO;
	g->blen = 0;
}

/* Starts a message of `len` bytes with the common header; returns where to write fields. */
static uint8_t *msg_begin(struct gen *g, uint8_t type, uint16_t locate, size_t len)
{
	if (g->blen + 2 + len > OUTBUF)
		flush_out(g);
	uint8_t *p = g->buf + g->blen;
	uf_put_be16(p, (uint16_t)len);
	p += 2;
	memset(p, 0, len);
	p[0] = type;
	uf_put_be16(p + 1, locate);
	uf_put_be16(p + 3, (uint16_t)(rnd(g) & 3)); /* tracking numbers vary a little */
	uf_put_be48(p + 5, g->ts);
	g->blen += 2 + len;
	g->written++;
	return p;
}

/* Messages a multi-message event may still write. */
static inline uint64_t room(const struct gen *g)
{
	return g->written < g->limit ? g->limit - g->written : 0;
}

static void advance_time(struct gen *g, uint64_t step)
{
	/* Bursty: mostly tiny gaps, occasionally a long quiet one. */
	uint64_t r = rnd(g);
	uint64_t d = (r & 7) == 0 ? step * 4 : step / 2;
	g->ts += 1 + (d ? (r >> 16) % (d + 1) : 0);
	if (g->ts >= DAY_CLOSE_NS + 3600ull * 1000000000ull)
		g->ts = DAY_CLOSE_NS + 3600ull * 1000000000ull - 1;
}

static uint16_t pick_symbol(struct gen *g)
{
	double u = unit(g) * g->cdf[g->nsym - 1];
	uint32_t lo = 0, hi = g->nsym - 1;
	while (lo < hi) {
		uint32_t mid = (lo + hi) / 2;
		if (g->cdf[mid] < u)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (uint16_t)(lo + 1);
}

static inline struct symbol *sym_of(struct gen *g, uint16_t locate)
{
	return &g->sym[locate - 1];
}

/* ---- the books: every symbol's ladder of price levels, kept so no book crosses ---- */

static inline struct level *level_at(struct gen *g, uint16_t locate, int32_t idx)
{
	return &g->lvl[(size_t)(locate - 1) * g->width + (uint32_t)idx];
}

static inline int32_t level_of(struct gen *g, const struct order *o)
{
	return (int32_t)(o->price / TICK - sym_of(g, o->locate)->lo);
}

static inline uint32_t price_of(const struct symbol *s, int32_t idx)
{
	return (s->lo + (uint32_t)idx) * TICK;
}

/* Mid of the book in ticks (ladder index), or the last execution when a side is empty. */
static int32_t mid_idx(const struct symbol *s)
{
	if (s->bid >= 0 && s->ask >= 0)
		return (s->bid + s->ask) / 2;
	if (s->bid >= 0)
		return s->bid;
	if (s->ask >= 0)
		return s->ask;
	return s->last;
}

/* Appends pool[i] (price, side and locate set) to its level: it joins the queue last. */
static void book_insert(struct gen *g, uint32_t i)
{
	struct order *o = &g->pool[i];
	struct symbol *s = sym_of(g, o->locate);
	int32_t li = level_of(g, o);
	struct level *l = level_at(g, o->locate, li);
	o->next = NIL;
	o->prev = l->tail;
	if (l->tail != NIL)
		g->pool[l->tail].next = i;
	else
		l->head = i;
	l->tail = i;
	if (o->side == 'B' && li > s->bid)
		s->bid = li;
	if (o->side == 'S' && (s->ask < 0 || li < s->ask))
		s->ask = li;
}

/* Takes pool[i] out of its level; when that empties the best, finds the next best. */
static void book_unlink(struct gen *g, uint32_t i)
{
	struct order *o = &g->pool[i];
	struct symbol *s = sym_of(g, o->locate);
	int32_t li = level_of(g, o);
	struct level *l = level_at(g, o->locate, li);
	if (o->prev != NIL)
		g->pool[o->prev].next = o->next;
	else
		l->head = o->next;
	if (o->next != NIL)
		g->pool[o->next].prev = o->prev;
	else
		l->tail = o->prev;
	if (l->head != NIL)
		return;
	/* O(distance to the next level): prices cluster at the touch, so it is short. */
	if (o->side == 'B' && li == s->bid) {
		int32_t j = li - 1;
		while (j >= 0 && level_at(g, o->locate, j)->head == NIL)
			j--;
		s->bid = j;
	} else if (o->side == 'S' && li == s->ask) {
		int32_t j = li + 1;
		while (j < (int32_t)g->width && level_at(g, o->locate, j)->head == NIL)
			j++;
		s->ask = j < (int32_t)g->width ? j : -1;
	}
}

/* Points pool[i]'s neighbours (or its level) at index i after the order moved there. */
static void book_relink(struct gen *g, uint32_t i)
{
	struct order *o = &g->pool[i];
	struct level *l = level_at(g, o->locate, level_of(g, o));
	if (o->prev != NIL)
		g->pool[o->prev].next = i;
	else
		l->head = i;
	if (o->next != NIL)
		g->pool[o->next].prev = i;
	else
		l->tail = i;
}

/* Removes a live order from the book and the pool (the last order fills its slot). */
static void remove_order(struct gen *g, size_t i)
{
	book_unlink(g, (uint32_t)i);
	g->pool[i] = g->pool[--g->live];
	if (i < g->live)
		book_relink(g, (uint32_t)i);
}

/* Distance behind the touch in ticks: geometric, so prices cluster at the touch. */
static uint32_t depth_ticks(struct gen *g)
{
	uint64_t r = rnd(g);
	uint32_t k = (uint32_t)__builtin_ctzll(r | (1ull << 40));
	return k + below(g, 3) - 1 + (k == 0); /* 0 (join the best) is the most common */
}

/* A passive price for `side`: a tick or more from the fair value (clustering there), and
 * always strictly inside the other side: a bid stays below the best ask, an ask above the
 * best bid (never locked, never crossed).
 * Returns the ladder index, or -1 when the ladder has no room on that side (the caller
 * then trades instead). */
static int32_t passive_idx(struct gen *g, const struct symbol *s, uint8_t side)
{
	int32_t w = (int32_t)g->width, d = (int32_t)depth_ticks(g), idx;
	if (side == 'B') {
		int32_t cap = s->ask >= 0 ? s->ask - 1 : w - 1; /* highest allowed bid */
		idx = s->fair - 1 - d;
		idx = idx > cap ? cap : idx;
		idx = idx < 0 ? (cap >= 0 ? 0 : -1) : idx;
	} else {
		int32_t floor_ = s->bid >= 0 ? s->bid + 1 : 0; /* lowest allowed ask */
		idx = s->fair + 1 + d;
		idx = idx < floor_ ? floor_ : idx;
		idx = idx >= w ? (floor_ < w ? w - 1 : -1) : idx;
	}
	return idx;
}

/* Moves the fair value a tick, leaning back towards home so it stays on the ladder. */
static void drift_fair(struct gen *g, struct symbol *s)
{
	int32_t dev = s->fair - (int32_t)s->home, span = (int32_t)g->width / 4;
	int32_t pull = dev * 400 / (span ? span : 1); /* per mille toward home */
	pull = pull > 400 ? 400 : pull < -400 ? -400 : pull;
	s->fair += (int32_t)below(g, 1000) < 500 - pull ? 1 : -1;
	s->fair = s->fair < 1                       ? 1
	          : s->fair > (int32_t)g->width - 2 ? (int32_t)g->width - 2
	                                            : s->fair;
}

static uint32_t order_shares(struct gen *g)
{
	uint32_t r = below(g, 100);
	if (r < 70)
		return 100 * (1 + below(g, 5));
	if (r < 85)
		return 1 + below(g, 99); /* odd lots */
	return 100 * (1 + below(g, 50));
}

static void put_stock(uint8_t *p, const struct symbol *s)
{
	memcpy(p, s->name, 8);
}

/* ---- order events ---- */

static void emit_aggressive(struct gen *g, uint16_t loc, uint8_t side, int want_c);

/* Writes the A/F of a new resting order at ladder index `idx`. */
static void emit_add_at(struct gen *g, uint16_t loc, uint8_t side, int32_t idx, uint32_t shares)
{
	struct symbol *s = sym_of(g, loc);
	struct order o = {.ref = g->next_ref++, .locate = loc, .side = side};
	o.price = price_of(s, idx);
	o.shares = shares;
	int mpid = below(g, 20) == 0;
	uint8_t *p = msg_begin(g, mpid ? 'F' : 'A', loc, mpid ? 40 : 36);
	uf_put_be64(p + 11, o.ref);
	p[19] = o.side;
	uf_put_be32(p + 20, o.shares);
	put_stock(p + 24, s);
	uf_put_be32(p + 32, o.price);
	if (mpid)
		memcpy(p + 36, (const char *[]){"GSCO", "MSCO", "VIRT", "CDEL"}[below(g, 4)], 4);
	g->pool[g->live] = o;
	book_insert(g, (uint32_t)g->live++);
}

static void emit_add(struct gen *g)
{
	uint16_t loc = pick_symbol(g);
	struct symbol *s = sym_of(g, loc);
	if (below(g, 32) == 0)
		drift_fair(g, s);
	uint8_t side = below(g, 2) ? 'B' : 'S';
	int32_t idx = passive_idx(g, s, side);
	if (idx < 0) { /* the other side fills the ladder's end: trade into it instead */
		emit_aggressive(g, loc, side, 0);
		return;
	}
	emit_add_at(g, loc, side, idx, order_shares(g));
}

/* A live order: half the time one of the most recent (fleeting), else any (resting). */
static size_t pick_order(struct gen *g)
{
	if (below(g, 2) && g->live > RECENT_WINDOW)
		return g->live - 1 - below(g, RECENT_WINDOW);
	return below(g, (uint32_t)g->live);
}

/* Writes the execution of `sh` shares of resting order pool[i] (E, or C with a price). */
static void emit_fill(struct gen *g, size_t i, uint32_t sh, int with_price)
{
	struct order *o = &g->pool[i];
	uint8_t *p = msg_begin(g, with_price ? 'C' : 'E', o->locate, with_price ? 36 : 31);
	uf_put_be64(p + 11, o->ref);
	uf_put_be32(p + 19, sh);
	uf_put_be64(p + 23, ++g->match);
	if (with_price) {
		p[31] = below(g, 10) ? 'Y' : 'N';
		uint32_t px = o->price; /* price improvement for the aggressor, now and then */
		if (below(g, 3) == 0)
			px = o->side == 'B' ? (px > TICK ? px - TICK : px) : px + TICK;
		uf_put_be32(p + 32, px);
	}
	sym_of(g, o->locate)->last = level_of(g, o);
	o->shares -= sh;
	if (o->shares == 0)
		remove_order(g, i);
}

/* A hidden (non-displayed) execution: P at a price inside the spread; no book change. */
static void emit_hidden(struct gen *g, uint16_t loc, uint8_t resting_side, uint32_t shares)
{
	struct symbol *s = sym_of(g, loc);
	int32_t px = mid_idx(s);
	if (s->bid >= 0 && s->ask >= 0)
		px = s->bid + (int32_t)below(g, (uint32_t)(s->ask - s->bid + 1));
	uint8_t *p = msg_begin(g, 'P', loc, 44);
	uf_put_be64(p + 11, 0); /* non-displayed order: Nasdaq sends reference 0 */
	p[19] = resting_side;
	uf_put_be32(p + 20, shares);
	put_stock(p + 24, s);
	uf_put_be32(p + 32, price_of(s, px));
	uf_put_be64(p + 36, ++g->match);
	s->last = px;
}

/* An incoming marketable order on `side`: it first meets hidden liquidity now and then (P),
 * then executes against the other side's best levels in time priority (an E or C per resting
 * order, partial on the last) up to a limit a few ticks through the touch; what is left
 * either rests at the limit (now the new best, as the other side up to it is gone) or is
 * cancelled unseen (IOC). Only resting orders are ever printed, so the book never crosses.
 * Writes no more than room() messages. want_c forces the first fill to be a C. */
static void emit_aggressive(struct gen *g, uint16_t loc, uint8_t side, int want_c)
{
	struct symbol *s = sym_of(g, loc);
	int32_t *opp = side == 'B' ? &s->ask : &s->bid;
	uint32_t qty = order_shares(g);
	if (*opp < 0 || room(g) == 0)
		return;
	if (below(g, 6) == 0 && qty > 1) { /* part of it fills against a hidden order */
		uint32_t h = 1 + below(g, qty - 1);
		emit_hidden(g, loc, side == 'B' ? 'S' : 'B', h);
		qty -= h;
	}
	uint32_t through = below(g, 4) == 0 ? below(g, 3) : 0; /* levels past the touch */
	int32_t limit = side == 'B' ? *opp + (int32_t)through : *opp - (int32_t)through;
	while (qty && *opp >= 0 && room(g) && (side == 'B' ? *opp <= limit : *opp >= limit)) {
		struct level *l = level_at(g, loc, *opp);
		size_t i = l->head;
		uint32_t sh = qty < g->pool[i].shares ? qty : g->pool[i].shares;
		emit_fill(g, i, sh, want_c || below(g, 14) == 0);
		want_c = 0;
		qty -= sh;
	}
	int clear = *opp < 0 || (side == 'B' ? *opp > limit : *opp < limit);
	if (qty && clear && room(g) && g->live < g->cap && below(g, 2) && limit >= 0 &&
	    limit < (int32_t)g->width)
		emit_add_at(g, loc, side, limit, qty);
}

/* Executes against a random resting order's book (the E/C pinned events need a live order). */
static void emit_exec(struct gen *g, int with_price)
{
	struct order *o = &g->pool[pick_order(g)];
	emit_aggressive(g, o->locate, o->side == 'B' ? 'S' : 'B', with_price);
}

static void emit_cancel(struct gen *g)
{
	size_t i = pick_order(g);
	struct order *o = &g->pool[i];
	if (o->shares < 2) { /* a partial cancel needs two shares: delete instead */
		uint8_t *p = msg_begin(g, 'D', o->locate, 19);
		uf_put_be64(p + 11, o->ref);
		remove_order(g, i);
		return;
	}
	uint32_t sh = 1 + below(g, o->shares - 1);
	uint8_t *p = msg_begin(g, 'X', o->locate, 23);
	uf_put_be64(p + 11, o->ref);
	uf_put_be32(p + 19, sh);
	o->shares -= sh;
}

static void emit_delete(struct gen *g)
{
	size_t i = pick_order(g);
	uint8_t *p = msg_begin(g, 'D', g->pool[i].locate, 19);
	uf_put_be64(p + 11, g->pool[i].ref);
	remove_order(g, i);
}

/* Cancel/replace: a new reference, a new passive price (so it never crosses), often the
 * same size. Loses time priority: it joins its new level last. */
static void emit_replace(struct gen *g)
{
	size_t i = pick_order(g);
	struct order *o = &g->pool[i];
	struct symbol *s = sym_of(g, o->locate);
	book_unlink(g, (uint32_t)i); /* price it against the book without itself */
	int32_t idx = passive_idx(g, s, o->side);
	if (idx < 0)
		idx = level_of(g, o); /* no room elsewhere: keep the price (never crosses) */
	uint8_t *p = msg_begin(g, 'U', o->locate, 35);
	uf_put_be64(p + 11, o->ref);
	o->ref = g->next_ref++; /* the chain continues under the new reference */
	o->price = price_of(s, idx);
	o->shares = below(g, 3) ? o->shares : order_shares(g);
	uf_put_be64(p + 19, o->ref);
	uf_put_be32(p + 27, o->shares);
	uf_put_be32(p + 31, o->price);
	/* Keep the replaced order among the recent ones so chains form. */
	size_t last = g->live - 1;
	if (i != last) {
		struct order t = g->pool[last];
		g->pool[last] = *o;
		g->pool[i] = t;
		book_relink(g, (uint32_t)i);
	}
	book_insert(g, (uint32_t)last);
}

/* A body trade: an incoming marketable order on a Zipf-picked symbol. It buys more often
 * when the fair value is above the mid (and sells when below), so the touch follows it. */
static void emit_trade_event(struct gen *g)
{
	uint16_t loc = pick_symbol(g);
	struct symbol *s = sym_of(g, loc);
	int32_t lean = (s->fair - mid_idx(s)) * 150; /* per mille toward buying */
	lean = lean > 450 ? 450 : lean < -450 ? -450 : lean;
	uint8_t side = (int32_t)below(g, 1000) < 500 + lean ? 'B' : 'S';
	if ((side == 'B' ? s->ask : s->bid) < 0)
		side = side == 'B' ? 'S' : 'B';
	if ((side == 'B' ? s->ask : s->bid) < 0) { /* an empty book: quote it instead */
		int32_t idx = passive_idx(g, s, side);
		if (idx >= 0 && g->live < g->cap)
			emit_add_at(g, loc, side, idx, order_shares(g));
		return;
	}
	emit_aggressive(g, loc, side, 0);
}

/* A lone hidden execution (the P that a pinned B later breaks). */
static void emit_trade(struct gen *g)
{
	uint16_t loc = pick_symbol(g);
	emit_hidden(g, loc, below(g, 2) ? 'B' : 'S', order_shares(g));
}

/* ---- market and instrument events ---- */

static void emit_system(struct gen *g, uint8_t code)
{
	uint8_t *p = msg_begin(g, 'S', 0, 12);
	p[11] = code;
}

static void emit_directory(struct gen *g, uint16_t loc)
{
	struct symbol *s = sym_of(g, loc);
	uint8_t *p = msg_begin(g, 'R', loc, 39);
	put_stock(p + 11, s);
	p[19] = "QGSNAPZ"[below(g, 7)];
	p[20] = below(g, 20) ? 'N' : 'D';
	uf_put_be32(p + 21, 100);
	p[25] = 'N';
	p[26] = "CCCCAEFO"[below(g, 8)];
	memcpy(p + 27, "Z ", 2);
	p[29] = 'P';
	p[30] = below(g, 10) ? 'N' : 'Y';
	p[31] = 'N';
	p[32] = below(g, 3) ? '2' : '1';
	p[33] = below(g, 10) ? 'N' : 'Y';
	uf_put_be32(p + 34, p[33] == 'Y' ? 1 + below(g, 3) : 0);
	p[38] = 'N';
}

static void emit_stock_event(struct gen *g, uint8_t type, uint16_t loc)
{
	struct symbol *s = sym_of(g, loc);
	uint32_t mid = price_of(s, mid_idx(s)); /* reference prices sit at the book's mid */
	uint8_t *p;
	switch (type) {
	case 'H':
		p = msg_begin(g, 'H', loc, 25);
		put_stock(p + 11, s);
		p[19] = "THPQT"[below(g, 5)];
		p[20] = ' ';
		memcpy(p + 21, p[19] == 'T' ? "    " : "T1  ", 4);
		break;
	case 'Y':
		p = msg_begin(g, 'Y', loc, 20);
		put_stock(p + 11, s);
		p[19] = "012"[below(g, 3)];
		break;
	case 'L':
		p = msg_begin(g, 'L', loc, 26);
		memcpy(p + 11, (const char *[]){"GSCO", "MSCO", "VIRT", "CDEL"}[below(g, 4)], 4);
		put_stock(p + 15, s);
		p[23] = below(g, 2) ? 'Y' : 'N';
		p[24] = "NPRSL"[below(g, 5)];
		p[25] = "AESDP"[below(g, 5)];
		break;
	case 'K':
		p = msg_begin(g, 'K', loc, 28);
		put_stock(p + 11, s);
		uf_put_be32(p + 19, (uint32_t)(g->ts / 1000000000ull) + 900);
		p[23] = 'A';
		uf_put_be32(p + 24, mid);
		break;
	case 'J':
		p = msg_begin(g, 'J', loc, 35);
		put_stock(p + 11, s);
		uf_put_be32(p + 19, mid);
		uf_put_be32(p + 23, mid + mid / 20);
		uf_put_be32(p + 27, mid - mid / 20);
		uf_put_be32(p + 31, below(g, 3));
		break;
	case 'h':
		p = msg_begin(g, 'h', loc, 21);
		put_stock(p + 11, s);
		p[19] = "QBX"[below(g, 3)];
		p[20] = below(g, 2) ? 'H' : 'T';
		break;
	case 'I': {
		p = msg_begin(g, 'I', loc, 50);
		uf_put_be64(p + 11, 100ull * (1 + below(g, 1000)));
		uf_put_be64(p + 19, 100ull * below(g, 200));
		p[27] = "BSNO"[below(g, 4)];
		put_stock(p + 28, s);
		uf_put_be32(p + 36, mid + TICK * below(g, 5));
		uf_put_be32(p + 40, mid);
		uf_put_be32(p + 44, mid);
		p[48] = 'H'; /* a halt/IPO auction: open and close NOII come from emit_auction */
		p[49] = " LABC"[below(g, 5)];
		break;
	}
	case 'N':
		p = msg_begin(g, 'N', loc, 20);
		put_stock(p + 11, s);
		p[19] = "BSAN"[below(g, 4)];
		break;
	case 'O':
		p = msg_begin(g, 'O', loc, 48);
		put_stock(p + 11, s);
		p[19] = below(g, 2) ? 'Y' : 'N';
		uf_put_be32(p + 20, mid - mid / 10);
		uf_put_be32(p + 24, mid + mid / 10);
		uf_put_be32(p + 28, mid);
		uf_put_be64(p + 32, g->ts + 60000000000ull);
		uf_put_be32(p + 40, mid - mid / 20);
		uf_put_be32(p + 44, mid + mid / 20);
		break;
	case 'Q':
		p = msg_begin(g, 'Q', loc, 40);
		uf_put_be64(p + 11, 100ull * (1 + below(g, 10000)));
		put_stock(p + 19, s);
		uf_put_be32(p + 27, mid);
		uf_put_be64(p + 31, ++g->match);
		p[39] = "OCHI"[below(g, 4)];
		break;
	}
}

/* The auction of one symbol: its NOII ahead of the cross (`noii`), or the cross itself (Q),
 * cross_type 'O' (opening) or 'C' (closing). The cross price is inside the displayed spread
 * (on-open/on-close orders are not displayed, so the book does not change). */
static void emit_auction(struct gen *g, uint16_t loc, uint8_t cross_type, int noii)
{
	struct symbol *s = sym_of(g, loc);
	int32_t m = mid_idx(s);
	uint8_t *p;
	if (noii) {
		uint64_t paired = 100ull * (1 + below(g, 5000));
		uint64_t imbalance = below(g, 4) ? 100ull * below(g, 500) : 0;
		p = msg_begin(g, 'I', loc, 50);
		uf_put_be64(p + 11, paired);
		uf_put_be64(p + 19, imbalance);
		p[27] = imbalance ? (below(g, 2) ? 'B' : 'S') : 'N';
		put_stock(p + 28, s);
		uf_put_be32(p + 36, price_of(s, m + (int32_t)below(g, 3) - 1 > 0
		                                    ? m + (int32_t)below(g, 3) - 1
		                                    : m)); /* far */
		uf_put_be32(p + 40, price_of(s, m));       /* near */
		uf_put_be32(p + 44, price_of(s, m));       /* current reference */
		p[48] = cross_type;
		p[49] = " LABC"[below(g, 5)];
		return;
	}
	p = msg_begin(g, 'Q', loc, 40);
	uf_put_be64(p + 11, 100ull * (1 + below(g, 10000)));
	put_stock(p + 19, s);
	uf_put_be32(p + 27, price_of(s, m));
	uf_put_be64(p + 31, ++g->match);
	p[39] = cross_type;
	s->last = m;
}

static void emit_market_event(struct gen *g, uint8_t type)
{
	uint8_t *p;
	if (type == 'V') {
		p = msg_begin(g, 'V', 0, 35);
		uf_put_be64(p + 11, 380000000000ull); /* 3800.00000000: 8 decimals */
		uf_put_be64(p + 19, 350000000000ull);
		uf_put_be64(p + 27, 320000000000ull);
	} else if (type == 'W') {
		p = msg_begin(g, 'W', 0, 12);
		p[11] = '1';
	} else if (type == 'B') {
		p = msg_begin(g, 'B', 0, 19);
		uf_put_be64(p + 11, 1 + (g->match > 1 ? rnd(g) % g->match : 0));
	}
}

/* One continuous-trading event; the mix steers the live-order count to its target. */
static void emit_body_event(struct gen *g)
{
	uint32_t r = below(g, 1000);
	int want_add = g->live < g->target_live ? r < 520 : r < 380;
	if (g->live == 0 || (want_add && g->live < g->cap)) {
		emit_add(g);
		return;
	}
	r = below(g, 10000);
	if (r < 5400)
		emit_delete(g);
	else if (r < 6900)
		emit_cancel(g);
	else if (r < 8300)
		emit_replace(g);
	else if (r < 9990) /* marketable orders: E/C against the touch, some P */
		emit_trade_event(g);
	else if (r < 9999) /* rare per-stock news, spread over the day */
		emit_stock_event(g, (uint8_t) "HYLNIJh"[below(g, 7)], pick_symbol(g));
	else if (g->match)
		emit_market_event(g, 'B'); /* a trade broken after the fact */
	else
		emit_trade(g);
}

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: uf-gen --out FILE --messages N --symbols K --seed S\n"
	        "  writes a synthetic ITCH 5.0 day (daily format: u16 length + message).\n"
	        "  N >= K + 64 so that every message type appears; 1 <= K <= %d.\n",
	        MAX_SYMBOLS);
}

static void make_symbols(struct gen *g)
{
	/* Unique tickers of 1-5 uppercase letters, lengths roughly as listed on Nasdaq (few of
	 * one or two letters, most of three or four, some five). A 64-bit code per name in an
	 * open-addressing set keeps them unique; a draw that collides is redrawn, and after 64
	 * collisions (one- and two-letter names run out) the name gets five letters. */
	size_t setn = 1;
	while (setn < 2 * (size_t)g->nsym)
		setn *= 2;
	uint64_t *set = calloc(setn, sizeof(*set));
	for (uint32_t i = 0; i < g->nsym; i++) {
		char *n = g->sym[i].name;
		uint64_t code = 0;
		for (int tries = 0;; tries++) {
			uint32_t r = below(g, 100);
			int len = tries >= 64 ? 5
			          : r < 1     ? 1
			          : r < 6     ? 2
			          : r < 36    ? 3
			          : r < 88    ? 4
			                      : 5;
			memset(n, ' ', 8);
			code = 0;
			for (int k = 0; k < len; k++) {
				n[k] = (char)('A' + below(g, 26));
				code = code << 8 | (uint8_t)n[k];
			}
			size_t h = (size_t)((code * 0x9E3779B97F4A7C15ull) >> 20) & (setn - 1);
			while (set && set[h] && set[h] != code)
				h = (h + 1) & (setn - 1);
			if (!set || !set[h]) { /* new (without a set, out of memory: unchecked) */
				if (set)
					set[h] = code;
				break;
			}
		}
		/* $5-$65, a quarter of them x5; the ladder is centred on it (ticks >= 1). */
		uint32_t home = (uint32_t)(5 + below(g, 60)) * 100u * (below(g, 4) ? 1 : 5);
		struct symbol *s = &g->sym[i];
		s->lo = home > g->width / 2 ? home - g->width / 2 : 1;
		s->home = home - s->lo;
		s->last = s->fair = (int32_t)s->home;
		s->bid = s->ask = -1;
	}
	free(set);
	/* Zipf(1): weight 1/(rank+1). */
	double acc = 0;
	for (uint32_t i = 0; i < g->nsym; i++) {
		acc += 1.0 / (double)(i + 1);
		g->cdf[i] = acc;
	}
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"out", required_argument, 0, 'o'},     {"messages", required_argument, 0, 'n'},
	    {"symbols", required_argument, 0, 'k'}, {"seed", required_argument, 0, 's'},
	    {"help", no_argument, 0, 'h'},          {0, 0, 0, 0},
	};
	const char *out = NULL;
	uint64_t n = 0, k = 0, seed = 0;
	int have_n = 0, have_k = 0, have_s = 0, c;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'o':
			out = optarg;
			break;
		case 'n':
			if (uf_parse_u64(optarg, 0, UINT64_MAX, &n))
				goto bad_value;
			have_n = 1;
			break;
		case 'k':
			if (uf_parse_u64(optarg, 0, UINT64_MAX, &k))
				goto bad_value;
			have_k = 1;
			break;
		case 's':
			if (uf_parse_u64(optarg, 0, UINT64_MAX, &seed))
				goto bad_value;
			have_s = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc || !out || !have_n || !have_k || !have_s) {
		usage(stderr);
		return 2;
	}
	if (k < 1 || k > MAX_SYMBOLS) {
		fprintf(stderr, "uf-gen: --symbols %llu: must be 1..%d\n", (unsigned long long)k,
		        MAX_SYMBOLS);
		return 2;
	}
	if (n < k + 64) {
		fprintf(stderr,
		        "uf-gen: --messages %llu: need at least symbols + 64 = %llu so "
		        "every message type appears\n",
		        (unsigned long long)n, (unsigned long long)(k + 64));
		return 2;
	}

	struct gen g = {0};
	int rc = 1;
	g.rng = seed * 0x9E3779B97F4A7C15ull + 0x6A09E667F3BCC909ull;
	if (!g.rng)
		g.rng = 1;
	for (int i = 0; i < 8; i++)
		rnd(&g);
	g.nsym = (uint32_t)k;
	g.target_live = n / 20 < 1000 ? 1000 : n / 20 > 1000000 ? 1000000 : n / 20;
	g.cap = g.target_live * 2;
	g.next_ref = 1;
	g.buf = malloc(OUTBUF);
	g.sym = calloc(k, sizeof(*g.sym));
	g.cdf = calloc(k, sizeof(*g.cdf));
	g.pool = calloc(g.cap, sizeof(*g.pool));
	/* Ladder width: as many ticks as the budget gives every symbol (a power of two). */
	g.width = LADDER_MAX;
	while (g.width > LADDER_MIN && (uint64_t)g.width * k * sizeof(struct level) > LEVEL_BUDGET)
		g.width /= 2;
	g.lvl = malloc((size_t)k * g.width * sizeof(*g.lvl));
	if (!g.buf || !g.sym || !g.cdf || !g.pool || !g.lvl) {
		fprintf(stderr, "uf-gen: out of memory\n");
		goto out_free;
	}
	g.out = fopen(out, "wb");
	if (!g.out) {
		fprintf(stderr, "uf-gen: %s: %s\n", out, strerror(errno));
		rc = 2;
		goto out_free;
	}
	memset(g.lvl, 0xff, (size_t)k * g.width * sizeof(*g.lvl)); /* every level empty: NIL */
	make_symbols(&g);

	/* Header: start of messages, directory, market-wide levels, start of system hours. */
	g.ts = 3ull * 3600 * 1000000000ull;
	emit_system(&g, 'O');
	for (uint32_t i = 0; i < g.nsym; i++) {
		g.ts += 1000;
		emit_directory(&g, (uint16_t)(i + 1));
	}
	emit_market_event(&g, 'V');
	g.ts = DAY_OPEN_NS;
	emit_system(&g, 'S');
	/* Events every day has, pinned to fractions of the body so any N shows them: pre-open
	 * (L H Y K J O h), the opening auction (a NOII per crossing symbol, S Q at ~09:30, an
	 * opening cross Q per crossing symbol), during the day (N W, a C, a P and the B that
	 * breaks it, E X U), the closing auction (NOII per symbol, S M at ~16:00, a closing
	 * cross Q per symbol). Upper-case kinds are one message; the lower-case runs 'i', 'o'
	 * (open NOII, open cross), 'j', 'k' (close NOII, close cross) write one message per
	 * crossing symbol, one per loop turn. */
	static const struct {
		uint16_t permille;
		uint8_t kind;
	} pinned[] = {
	    {10, 'L'},
	    {20, 'H'},
	    {30, 'Y'},
	    {40, 'K'},
	    {50, 'J'},
	    {60, 'O'},
	    {300, 'h'},
	    {330, 'i'},
	    {344, 'q'},
	    /* S Q: market open */ {345, 'o'},
	    {400, 'N'},
	    {450, 'C'},
	    {500, 'P'},
	    {520, 'B'},
	    {600, 'W'},
	    {650, 'E'},
	    {680, 'X'},
	    {700, 'U'},
	    {735, 'j'},
	    {750, 'm'},
	    /* S M: market close */ {751, 'k'},
	};
	uint64_t body = n - g.written - 2; /* the trailer is S E + S C */
	uint64_t step = (DAY_CLOSE_NS - DAY_OPEN_NS) / (body ? body : 1);
	size_t next_pin = 0;
	uint64_t start = g.written;
	g.limit = start + body;
	/* Symbols with an opening and closing auction: all of them when the day is big enough,
	 * else the busiest (locates 1..crossing, the Zipf head) within 4 % of the body each. */
	uint64_t crossing = body / 25 < 1 ? 1 : body / 25;
	crossing = crossing > g.nsym ? g.nsym : crossing;
	uint32_t run = 0; /* next symbol of a per-symbol run */
	while (g.written < start + body) {
		uint64_t done = g.written - start;
		advance_time(&g, step);
		if (next_pin < sizeof(pinned) / sizeof(pinned[0]) &&
		    done >= body * pinned[next_pin].permille / 1000) {
			uint8_t kind = pinned[next_pin].kind;
			int ok = 1;
			switch (kind) {
			case 'q':
				emit_system(&g, 'Q');
				break;
			case 'i':
			case 'o':
			case 'j':
			case 'k':
				emit_auction(&g, (uint16_t)(run + 1),
				             kind == 'i' || kind == 'o' ? 'O' : 'C',
				             kind == 'i' || kind == 'j');
				ok = ++run == crossing;
				run = ok ? 0 : run;
				break;
			case 'm':
				emit_system(&g, 'M');
				break;
			case 'W':
			case 'B':
				emit_market_event(&g, kind);
				break;
			case 'P':
				emit_trade(&g);
				break;
			case 'C':
			case 'E':
			case 'X':
			case 'U':
				if (g.live ==
				    0) { /* needs a live order: add one, retry next time */
					emit_add(&g);
					ok = 0;
				} else if (kind == 'C' || kind == 'E') {
					emit_exec(&g, kind == 'C');
				} else if (kind == 'X') {
					emit_cancel(&g); /* a D when the order has one share */
				} else {
					emit_replace(&g);
				}
				break;
			default:
				emit_stock_event(&g, kind, pick_symbol(&g));
				break;
			}
			if (ok)
				next_pin++;
			continue;
		}
		emit_body_event(&g);
	}
	g.ts = g.ts > DAY_CLOSE_NS ? g.ts + 1 : DAY_CLOSE_NS;
	emit_system(&g, 'E');
	g.ts += 1000;
	emit_system(&g, 'C');
	flush_out(&g);
	if (fclose(g.out) != 0 && !g.io_err)
		g.io_err = errno;
	if (g.io_err) {
		fprintf(stderr, "uf-gen: %s: write failed: %s\n", out, strerror(g.io_err));
		goto out_free;
	}
	if (g.written != n) { /* a body event that emits two messages could overshoot */
		fprintf(stderr, "uf-gen: internal error: wrote %llu messages, asked %llu\n",
		        (unsigned long long)g.written, (unsigned long long)n);
		goto out_free;
	}
	rc = 0;
out_free:
	free(g.lvl);
	free(g.pool);
	free(g.cdf);
	free(g.sym);
	free(g.buf);
	return rc;
bad_value:
	fprintf(stderr, "uf-gen: not a non-negative integer: %s\n", optarg);
	return 2;
}
