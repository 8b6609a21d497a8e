/* A deliberately simple reference model of ITCH order books, for differential tests of
 * publish/: orders in a growable array with a chained hash (bucket lists), books computed from
 * scratch by sorting all live orders. Shares no code or data structure with the engine.
 * It mirrors the engine's documented integrity policy (docs/publish.md):
 *   add of a live ref -> duplicate_ref, ignored; add when max_orders are live -> full, ignored;
 *   bad side / locate >= max_instruments -> ignored; E C X D U on an unknown ref -> ignored;
 *   over-execution / over-cancel -> counted, the order loses what it had;
 *   replace: the old order goes, the new one is added with the old side and instrument;
 *   E C X D U whose locate differs from the order's -> counted, applied to the order;
 *   every error above but the locate mismatch and a locate >= max_instruments puts its book in
 *   doubt (stale: the book the add names, the order's book for an over-execution or
 *   over-cancel, the message's locate for an unknown ref). */
#ifndef UF_TEST_REF_MODEL_H
#define UF_TEST_REF_MODEL_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "publish/uf_publish.h"

#define REF_NBUCKET 65536

struct ref_order {
	uint64_t ref;
	uint32_t inst;
	uint8_t side; /* 'B' / 'S' */
	uint32_t price;
	uint32_t shares;
	int32_t next; /* bucket chain, -1 = end */
	int live;
};

struct ref_model {
	struct ref_order *o; /* every order ever added (dead ones stay, marked) */
	size_t n, cap;
	int32_t bucket[REF_NBUCKET];
	uint64_t live;
	uint64_t max_orders;
	uint32_t max_inst;
	uint64_t err[UF_PUB_NERR];
	uint8_t stale[UF_PUB_MAX_INSTRUMENTS]; /* 1: the book may be wrong (an error above) */
};

/* Counts an error that leaves book `inst` in doubt. */
static inline void ref_doubt(struct ref_model *r, enum uf_pub_err kind, uint32_t inst)
{
	r->err[kind]++;
	if (inst < r->max_inst)
		r->stale[inst] = 1;
}

static inline void ref_init(struct ref_model *r, uint64_t max_orders, uint32_t max_inst)
{
	memset(r, 0, sizeof(*r));
	for (size_t i = 0; i < REF_NBUCKET; i++)
		r->bucket[i] = -1;
	r->max_orders = max_orders;
	r->max_inst = max_inst;
}

static inline void ref_free(struct ref_model *r)
{
	free(r->o);
	r->o = NULL;
}

static inline struct ref_order *ref_find(struct ref_model *r, uint64_t ref)
{
	for (int32_t i = r->bucket[ref % REF_NBUCKET]; i >= 0; i = r->o[i].next)
		if (r->o[i].live && r->o[i].ref == ref)
			return &r->o[i];
	return NULL;
}

static inline void ref_add(struct ref_model *r, uint32_t inst, uint8_t side, uint64_t ref,
                           uint32_t shares, uint32_t price)
{
	if (side != 'B' && side != 'S') {
		ref_doubt(r, UF_PUB_ERR_BAD_SIDE, inst);
		return;
	}
	if (ref_find(r, ref)) {
		ref_doubt(r, UF_PUB_ERR_DUP_REF, inst);
		return;
	}
	if (r->live >= r->max_orders) {
		ref_doubt(r, UF_PUB_ERR_ORDERS_FULL, inst);
		return;
	}
	if (r->n == r->cap) {
		r->cap = r->cap ? r->cap * 2 : 1024;
		r->o = realloc(r->o, r->cap * sizeof(*r->o));
		if (!r->o)
			abort();
	}
	struct ref_order *o = &r->o[r->n];
	o->ref = ref;
	o->inst = inst;
	o->side = side;
	o->price = price;
	o->shares = shares;
	o->live = 1;
	o->next = r->bucket[ref % REF_NBUCKET];
	r->bucket[ref % REF_NBUCKET] = (int32_t)r->n;
	r->n++;
	r->live++;
}

static inline void ref_reduce(struct ref_model *r, struct ref_order *o, uint32_t locate,
                              uint32_t want, int all, enum uf_pub_err over)
{
	if (o->inst != locate)
		r->err[UF_PUB_ERR_LOCATE_MISMATCH]++;
	if (all || want >= o->shares) {
		if (!all && want > o->shares)
			ref_doubt(r, over, o->inst);
		o->shares = 0;
		o->live = 0;
		r->live--;
	} else {
		o->shares -= want;
	}
}

static inline void ref_apply(struct ref_model *r, const struct uf_itch_msg *m)
{
	struct ref_order *o;
	switch (m->type) {
	case 'A':
	case 'F':
		if (m->locate >= r->max_inst) {
			r->err[UF_PUB_ERR_BAD_INSTRUMENT]++;
			return;
		}
		ref_add(r, m->locate, m->u.add.side, m->u.add.order_ref, m->u.add.shares,
		        m->u.add.price);
		return;
	case 'E':
	case 'C':
		o = ref_find(r, m->u.exec.order_ref);
		if (!o) {
			ref_doubt(r, UF_PUB_ERR_UNKNOWN_REF, m->locate);
			return;
		}
		ref_reduce(r, o, m->locate, m->u.exec.shares, 0, UF_PUB_ERR_OVER_EXEC);
		return;
	case 'X':
		o = ref_find(r, m->u.cancel.order_ref);
		if (!o) {
			ref_doubt(r, UF_PUB_ERR_UNKNOWN_REF, m->locate);
			return;
		}
		ref_reduce(r, o, m->locate, m->u.cancel.shares, 0, UF_PUB_ERR_OVER_CANCEL);
		return;
	case 'D':
		o = ref_find(r, m->u.del.order_ref);
		if (!o) {
			ref_doubt(r, UF_PUB_ERR_UNKNOWN_REF, m->locate);
			return;
		}
		ref_reduce(r, o, m->locate, 0, 1, UF_PUB_ERR_OVER_CANCEL);
		return;
	case 'U': {
		o = ref_find(r, m->u.replace.orig_ref);
		if (!o) {
			ref_doubt(r, UF_PUB_ERR_UNKNOWN_REF, m->locate);
			return;
		}
		uint32_t inst = o->inst;
		uint8_t side = o->side;
		ref_reduce(r, o, m->locate, 0, 1, UF_PUB_ERR_OVER_CANCEL);
		ref_add(r, inst, side, m->u.replace.new_ref, m->u.replace.shares,
		        m->u.replace.price);
		return;
	}
	case 'P':
	case 'Q':
		if (m->locate >= r->max_inst)
			r->err[UF_PUB_ERR_BAD_INSTRUMENT]++;
		return;
	case 'B':
	case 'S':
	case 'V':
	case 'W':
		return;
	case 'R':
	case 'H':
	case 'Y':
	case 'L':
	case 'K':
	case 'J':
	case 'h':
	case 'I':
	case 'N':
	case 'O':
		if (m->locate >= r->max_inst)
			r->err[UF_PUB_ERR_BAD_INSTRUMENT]++;
		return;
	default:
		r->err[UF_PUB_ERR_UNKNOWN_TYPE]++;
		return;
	}
}

/* One aggregated level of the model's book. */
struct ref_level {
	uint32_t inst;
	uint8_t side;
	uint32_t price;
	uint64_t shares;
	uint32_t orders;
};

static int ref_level_cmp(const void *a, const void *b)
{
	const struct ref_level *x = a, *y = b;
	if (x->inst != y->inst)
		return x->inst < y->inst ? -1 : 1;
	if (x->side != y->side)
		return x->side < y->side ? -1 : 1;
	/* Best first: bids high to low, asks low to high. */
	if (x->price != y->price) {
		int lower = x->price < y->price;
		return x->side == 'B' ? (lower ? 1 : -1) : (lower ? -1 : 1);
	}
	return 0;
}

/* Every level of every book, sorted (instrument, side 'B' before 'S', best first).
 * Caller frees. */
static inline struct ref_level *ref_levels(const struct ref_model *r, size_t *count)
{
	struct ref_level *l = malloc((r->live + 1) * sizeof(*l));
	if (!l)
		abort();
	size_t k = 0;
	for (size_t i = 0; i < r->n; i++) {
		const struct ref_order *o = &r->o[i];
		if (!o->live)
			continue;
		l[k].inst = o->inst;
		l[k].side = o->side;
		l[k].price = o->price;
		l[k].shares = o->shares;
		l[k].orders = 1;
		k++;
	}
	qsort(l, k, sizeof(*l), ref_level_cmp);
	size_t w = 0;
	for (size_t i = 0; i < k; i++) {
		if (w && l[w - 1].inst == l[i].inst && l[w - 1].side == l[i].side &&
		    l[w - 1].price == l[i].price) {
			l[w - 1].shares += l[i].shares;
			l[w - 1].orders++;
		} else {
			l[w++] = l[i];
		}
	}
	*count = w;
	return l;
}

#endif /* UF_TEST_REF_MODEL_H */
