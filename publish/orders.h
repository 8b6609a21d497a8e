/* The order table: order reference -> (shares left, level), open addressing.
 *
 * Power-of-two slots, linear probing, and backward-shift deletion so a day of adds and
 * deletes leaves no tombstones and probe chains stay as short as the live load allows. Slots
 * are 16 bytes, four to a cache line. Private to publish/.
 *
 * The home slot keeps a reference's low bits, XORed with a hash of its high bits
 * (uf_orders_home): ITCH references are numbered in order through the day, so consecutive
 * orders take consecutive slots, four to a line, and the orders a stream touches most (the
 * ones entered lately: most orders are cancelled or executed soon after they are entered) sit
 * together in few lines and pages, instead of one line each anywhere in the table as with the
 * Fibonacci hashing before (issue 26: the live feed's books stage, docs/performance.md).
 * Scattering blocks of consecutive slots instead (a line, 4 KiB) was tried: a line gained
 * little live, a 4 KiB block made strided and per-gateway numbers probe far. */
#ifndef UF_PUB_ORDERS_H
#define UF_PUB_ORDERS_H

#include <stddef.h>
#include <stdint.h>

#include "common/uf_compiler.h"
#include "publish/pub_mem.h"
#include "publish/uf_publish.h"

/* level == 0 marks an empty slot (level 0 is never handed out), so any reference, even 0,
 * can be a key, and a zeroed table is empty. */
struct uf_order {
	uint64_t ref;    /* order reference number */
	uint32_t shares; /* displayed shares left */
	uint32_t level;  /* index of its price level (levels.h); 0 = slot empty */
};

_Static_assert(sizeof(struct uf_order) == 16, "four slots per cache line");

struct uf_order_table {
	struct uf_order *slots; /* 2^bits slots */
	uint64_t mask;          /* slots - 1 */
	uint32_t bits;          /* log2(slots) */
	uint32_t max_disp;      /* no live order sits further than this past its home (an upper
	                         * bound: raised by inserts, kept by removes; 0 when cleared) */
	uint64_t count;         /* live orders */
	uint64_t max;           /* live orders allowed (keeps the load <= 3/4) */
	size_t bytes;           /* bytes of the slots (clearing) */
	struct uf_pub_mem mem;  /* their mapping: page kind, for freeing */
};

/* Bytes of the table for `max_orders` (slots: power of two >= max * 4/3, load <= 3/4), or 0
 * when max_orders is 0 or beyond UF_PUB_MAX_ORDERS. */
static inline uint64_t uf_orders_bytes(uint64_t max_orders)
{
	if (max_orders == 0 || max_orders > UF_PUB_MAX_ORDERS)
		return 0;
	uint64_t want = max_orders + max_orders / 3 + 1;
	uint32_t bits = 4;
	while ((1ull << bits) < want)
		bits++;
	return (1ull << bits) * sizeof(struct uf_order);
}

/* Sizes and maps the table for `max_orders` (uf_orders_bytes), on the page kinds allowed
 * (UF_PUB_PAGES_*, pub_mem.h). Cold. */
int uf_orders_init(struct uf_order_table *t, uint64_t max_orders, int numa_node,
                   uint32_t page_kinds);
void uf_orders_fini(struct uf_order_table *t);
/* Empties the table. Cold: O(slots). */
void uf_orders_clear(struct uf_order_table *t);

/* The reference's low bits, XORed with a hash of the bits above them: consecutive references
 * keep consecutive slots (an XOR with a constant moves an aligned block of slots as a whole:
 * the four slots of a line stay a line), while references that differ only above the table's
 * bits (the same number again a table's length later, numbers only in the high bits) get
 * homes scattered by the multiply instead of one chain. The limit (test_publish_orders): a
 * venue that numbers its orders in several dense sequences at once (per gateway, say) would
 * have their runs overlap in the low bits and probe far; ITCH numbers one sequence a day. */
static inline uint64_t uf_orders_home(const struct uf_order_table *t, uint64_t ref)
{
	uint64_t high = ref >> t->bits;
	return (ref ^ ((high * 0x9E3779B97F4A7C15ull) >> (64 - t->bits))) & t->mask;
}

/* Address of the home slot of `ref`: what a prefetch should fetch. */
static inline struct uf_order *uf_orders_home_slot(const struct uf_order_table *t, uint64_t ref)
{
	return &t->slots[uf_orders_home(t, ref)];
}

/* The live order `ref`, or NULL. */
static inline struct uf_order *uf_orders_find(const struct uf_order_table *t, uint64_t ref)
{
	uint64_t i = uf_orders_home(t, ref);
	for (;;) {
		struct uf_order *s = &t->slots[i];
		if (s->level == 0)
			return NULL;
		if (s->ref == ref)
			return s;
		i = (i + 1) & t->mask;
	}
}

/* Slot for a new order `ref`: the empty slot to fill (caller sets shares and level, which
 * makes it live), NULL when `ref` is already live (*dup = 1) or the table is full (*dup = 0).
 * Counts the order. */
static inline struct uf_order *uf_orders_insert(struct uf_order_table *t, uint64_t ref, int *dup)
{
	if (UF_UNLIKELY(t->count >= t->max)) {
		*dup = uf_orders_find(t, ref) != NULL;
		return NULL;
	}
	uint64_t home = uf_orders_home(t, ref), i = home;
	for (;;) {
		struct uf_order *s = &t->slots[i];
		if (s->level == 0) {
			s->ref = ref;
			t->count++;
			uint32_t d = (uint32_t)((i - home) & t->mask);
			if (UF_UNLIKELY(d > t->max_disp))
				t->max_disp = d;
			return s;
		}
		if (UF_UNLIKELY(s->ref == ref)) {
			*dup = 1;
			return NULL;
		}
		i = (i + 1) & t->mask;
	}
}

/* Removes the live order in slot `s`, shifting later members of its probe chain back so no
 * tombstone is left. Invalidates pointers to other slots of the chain. The scan stops at the
 * chain's end or max_disp slots past the hole, whichever comes first: an order further on has
 * its home after the hole, so it stays. Consecutive references make long runs of orders each
 * at its home; without the bound a remove walked every order entered after it that is still
 * live. */
static inline void uf_orders_remove(struct uf_order_table *t, struct uf_order *s)
{
	uint64_t i = (uint64_t)(s - t->slots);
	uint64_t j = i;
	t->count--;
	for (;;) {
		j = (j + 1) & t->mask;
		struct uf_order *n = &t->slots[j];
		if (n->level == 0 || ((j - i) & t->mask) > t->max_disp)
			break;
		uint64_t k = uf_orders_home(t, n->ref);
		/* n may move to the hole at i only if its home is not in (i, j] cyclically. */
		int stays = (i <= j) ? (i < k && k <= j) : (i < k || k <= j);
		if (!stays) {
			t->slots[i] = *n;
			i = j;
		}
	}
	t->slots[i].level = 0;
}

#endif /* UF_PUB_ORDERS_H */
