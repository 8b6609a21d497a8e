/* Price levels: a pool of level nodes, and per book side a sorted array of (key, level).
 *
 * A level node (32 bytes, never straddles a cache line) holds the level's totals; orders
 * point at their node, so executions, cancels and deletes update a level without searching.
 * Each book side keeps its levels in one sorted array of 8-byte entries, key << 32 | node,
 * ascending by key with the BEST LEVEL LAST (key = price for bids, ~price for asks). So:
 * best price O(1); finding a price O(log n) binary search over contiguous memory (the
 * common case, a price at or beyond the best, is answered by the first compare); inserting
 * or removing moves only the entries better than it, which on real books are few because
 * activity crowds the inside; top-N reads are one backward scan.
 *
 * The arrays live in one arena allocated at start, carved into power-of-two chunks
 * (8 entries = one cache line, doubling) with a free list per size; a side that fills its
 * chunk moves to the next size (amortized O(1)) and gives the old chunk back. Nothing is
 * allocated from the system after start. Private to publish/. */
#ifndef UF_PUB_LEVELS_H
#define UF_PUB_LEVELS_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "common/uf_compiler.h"
#include "publish/pub_mem.h"

#define UF_LV_MIN_CAP 8u /* entries in the smallest chunk: one cache line */
#define UF_LV_NCLASS  26 /* chunk sizes 8 << 0 .. 8 << 25 */
#define UF_LV_NONE    UINT32_MAX

struct uf_level_node {
	uint64_t shares;    /* displayed shares at the level */
	uint32_t price;     /* ITCH price, 4 implied decimals */
	uint32_t orders;    /* orders resting at the level */
	uint32_t book;      /* instrument << 1 | side index (0 bid, 1 ask) */
	uint32_t next_free; /* free-list link while the node is unused */
	uint64_t pad;       /* 0: keeps the node at 32 bytes */
};

_Static_assert(sizeof(struct uf_level_node) == 32, "level nodes never straddle a line");

struct uf_book_side {
	uint32_t base; /* arena offset (entries) of the sorted array */
	uint32_t n;    /* levels on this side */
	uint32_t cap;  /* entries in the chunk (0: no chunk yet) */
};

/* One instrument's book: 32 bytes, two per cache line. */
struct uf_book {
	struct uf_book_side side[2]; /* [0] bids, [1] asks */
	uint32_t stale;              /* 1 after an unrecovered gap */
	uint32_t named;              /* 1 once the instrument has a symbol (R, or adopted from
	                              * the first A/F when no R came): keeps the cold directory
	                              * line out of the add path */
};

_Static_assert(sizeof(struct uf_book) == 32, "two books per cache line");

struct uf_levels {
	struct uf_level_node *nodes;       /* max + 1 nodes; node 0 is never used */
	uint32_t max;                      /* nodes usable (1 .. max) */
	uint32_t bump;                     /* next never-used node */
	uint32_t free_head;                /* freed nodes, linked by next_free; 0 = none */
	uint32_t live;                     /* nodes in use */
	uint64_t *arena;                   /* sorted-array entries */
	uint32_t arena_size;               /* entries in the arena */
	uint32_t arena_bump;               /* next never-used entry */
	uint32_t chunk_free[UF_LV_NCLASS]; /* freed chunks per size class, UF_LV_NONE = none;
	                                    * link stored in the chunk's first entry */
	size_t nodes_bytes;                /* table sizes */
	size_t arena_bytes;
	struct uf_pub_mem nodes_mem; /* their mappings: page kinds, for freeing */
	struct uf_pub_mem arena_mem;
};

/* Entries of the sorted-array arena for max_levels levels and max_instruments books: a
 * side's chunk is at most twice its levels, and each non-empty side holds at least a minimum
 * chunk; freed chunks wait for reuse by their size class. Three times the levels plus two
 * minimum chunks per instrument side covers that with room for fragmentation. */
static inline uint64_t uf_levels_arena_entries(uint32_t max_levels, uint32_t max_instruments)
{
	uint64_t entries = 3ull * max_levels + 2ull * UF_LV_MIN_CAP * max_instruments;
	return entries > UINT32_MAX - 1 ? UINT32_MAX - 1 : entries;
}

/* Bytes uf_levels_init maps for these sizes. */
static inline uint64_t uf_levels_bytes(uint32_t max_levels, uint32_t max_instruments)
{
	return ((uint64_t)max_levels + 1) * sizeof(struct uf_level_node) +
	       uf_levels_arena_entries(max_levels, max_instruments) * sizeof(uint64_t);
}

/* Maps the pool and the arena on the page kinds allowed (UF_PUB_PAGES_*, pub_mem.h). Cold. */
int uf_levels_init(struct uf_levels *lv, uint32_t max_levels, uint32_t max_instruments,
                   int numa_node, uint32_t page_kinds);
void uf_levels_fini(struct uf_levels *lv);
/* Forgets every level (books must be cleared by the caller). Cold. */
void uf_levels_clear(struct uf_levels *lv);
/* Moves `s` to a chunk twice as big. Returns 0, or -ENOSPC when the arena is exhausted. */
int uf_levels_grow(struct uf_levels *lv, struct uf_book_side *s);
/* Gives the chunk of an empty side back. */
void uf_levels_release_chunk(struct uf_levels *lv, struct uf_book_side *s);

static inline uint32_t uf_lv_key(unsigned sidx, uint32_t price)
{
	return sidx ? ~price : price;
}

static inline uint64_t *uf_lv_entries(const struct uf_levels *lv, const struct uf_book_side *s)
{
	return lv->arena + s->base;
}

/* First position whose key is >= key (n when all are smaller). */
static inline uint32_t uf_lv_lower_bound(const uint64_t *a, uint32_t n, uint32_t key)
{
	/* Fast path: at or beyond the best (last) entry, the most common place for a change. */
	if (n == 0 || (uint32_t)(a[n - 1] >> 32) < key)
		return n;
	/* Branch-free halving: the loop count depends on n only and the step is a conditional
	 * move, so a search costs no misprediction whatever the price (a branchy binary search
	 * mispredicted about every other step). */
	const uint64_t *base = a;
	while (n > 1) {
		uint32_t half = n / 2;
		base = (uint32_t)(base[half] >> 32) < key ? base + half : base;
		n -= half;
	}
	return (uint32_t)(base - a) + ((uint32_t)(*base >> 32) < key);
}

/* The level of `price` on side `sidx` of `b` (instrument `inst`), created empty when absent.
 * *is_best = 1 when it is the side's best level. Returns the node index, 0 when the pool or
 * the arena is full. */
static inline __attribute__((always_inline)) uint32_t uf_levels_get(struct uf_levels *lv,
                                                                    struct uf_book *b,
                                                                    uint32_t inst, unsigned sidx,
                                                                    uint32_t price, int *is_best)
{
	struct uf_book_side *s = &b->side[sidx];
	uint32_t key = uf_lv_key(sidx, price);
	uint64_t *a = uf_lv_entries(lv, s);
	uint32_t pos = uf_lv_lower_bound(a, s->n, key);
	if (pos < s->n && (uint32_t)(a[pos] >> 32) == key) {
		*is_best = pos == s->n - 1;
		return (uint32_t)a[pos];
	}
	/* New level: a node first, then room in the array. */
	uint32_t idx = lv->free_head;
	if (idx != 0) {
		lv->free_head = lv->nodes[idx].next_free;
	} else {
		if (UF_UNLIKELY(lv->bump > lv->max))
			return 0;
		idx = lv->bump++;
	}
	if (UF_UNLIKELY(s->n == s->cap)) {
		if (uf_levels_grow(lv, s) != 0) {
			lv->nodes[idx].next_free = lv->free_head;
			lv->free_head = idx;
			return 0;
		}
		a = uf_lv_entries(lv, s);
	}
	if (pos < s->n)
		memmove(&a[pos + 1], &a[pos], (size_t)(s->n - pos) * sizeof(*a));
	a[pos] = (uint64_t)key << 32 | idx;
	s->n++;
	struct uf_level_node *nd = &lv->nodes[idx];
	nd->shares = 0;
	nd->price = price;
	nd->orders = 0;
	nd->book = inst << 1 | sidx;
	lv->live++;
	*is_best = pos == s->n - 1;
	return idx;
}

/* 1 when node `idx` is the best level of side `s`. */
static inline int uf_levels_is_best(const struct uf_levels *lv, const struct uf_book_side *s,
                                    uint32_t idx)
{
	return s->n != 0 && (uint32_t)lv->arena[s->base + s->n - 1] == idx;
}

/* Removes the (empty) level `idx` from side `s`. Returns 1 when it was the best level. */
static inline int uf_levels_remove(struct uf_levels *lv, struct uf_book_side *s, uint32_t idx)
{
	struct uf_level_node *nd = &lv->nodes[idx];
	uint64_t *a = uf_lv_entries(lv, s);
	uint32_t key = uf_lv_key(nd->book & 1, nd->price);
	uint32_t pos = uf_lv_lower_bound(a, s->n, key);
	int was_best = pos == s->n - 1;
	/* pos always holds idx: every live node is in its side's array exactly once. */
	memmove(&a[pos], &a[pos + 1], (size_t)(s->n - pos - 1) * sizeof(*a));
	s->n--;
	nd->next_free = lv->free_head;
	lv->free_head = idx;
	lv->live--;
	if (s->n == 0)
		uf_levels_release_chunk(lv, s);
	return was_best;
}

#endif /* UF_PUB_LEVELS_H */
