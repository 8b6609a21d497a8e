/* The symbol filter: see filter.h. */
#include "feed/filter.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/uf_atomic.h"
#include "common/uf_compiler.h"
#include "common/uf_symbol.h"
#include "publish/uf_publish.h"

static int uf_filter_sym_cmp(const void *a, const void *b)
{
	return strcmp(a, b);
}

/* Copies and sorts a symbol list into `sl`. Cold. */
static int uf_filter_fill(struct uf_filter_slot *sl, const char (*symbols)[9], uint32_t n)
{
	char(*v)[9] = NULL;
	if (n) {
		v = calloc(n, sizeof(*v));
		if (!v)
			return -ENOMEM;
		for (uint32_t i = 0; i < n; i++) {
			if (memchr(symbols[i], '\0', 9) == NULL) {
				free(v);
				return -EINVAL;
			}
			memcpy(v[i], symbols[i], 9);
		}
		qsort(v, n, sizeof(*v), uf_filter_sym_cmp);
	}
	free(sl->syms);
	sl->syms = v;
	sl->n = n;
	return 0;
}

int uf_filter_init(struct uf_filter *fl, uint32_t max_inst, const char (*symbols)[9], uint32_t n)
{
	memset(fl, 0, sizeof(*fl));
	pthread_mutex_init(&fl->lock, NULL);
	fl->max_inst = max_inst;
	fl->wanted = malloc(max_inst ? max_inst : 1);
	if (!fl->wanted)
		return -ENOMEM;
	/* With a list, nothing is wanted until its INSTRUMENT record names it. */
	memset(fl->wanted, n ? 0 : 1, max_inst);
	int rc = uf_filter_fill(&fl->slots[0], symbols, n);
	if (rc < 0)
		return rc;
	fl->on = n != 0;
	return 0;
}

void uf_filter_fini(struct uf_filter *fl)
{
	free(fl->wanted);
	free(fl->slots[0].syms);
	free(fl->slots[1].syms);
	fl->wanted = NULL;
	fl->slots[0].syms = fl->slots[1].syms = NULL;
	pthread_mutex_destroy(&fl->lock);
}

int uf_filter_set(struct uf_filter *fl, const char (*symbols)[9], uint32_t n)
{
	int rc = 0;
	pthread_mutex_lock(&fl->lock);
	/* The feed thread takes a published slot between batches; the inactive slot is only
	 * ours once it did (pending == 0). Bounded wait. */
	for (int i = 0; i < 1000 && uf_load_acquire_u32(&fl->pending) != 0; i++)
		usleep(1000);
	if (uf_load_acquire_u32(&fl->pending) != 0) {
		rc = -EBUSY;
		goto out_unlock;
	}
	uint32_t slot = 1 - uf_load_acquire_u32(&fl->active);
	rc = uf_filter_fill(&fl->slots[slot], symbols, n);
	if (rc == 0)
		uf_store_release_u32(&fl->pending, slot + 1); /* the slot's contents first */
out_unlock:
	pthread_mutex_unlock(&fl->lock);
	return rc;
}

uint32_t uf_filter_pending(const struct uf_filter *fl)
{
	return uf_load_acquire_u32(&fl->pending); /* pairs with uf_filter_set's release */
}

int uf_filter_slot_wants(const struct uf_filter *fl, uint32_t slot, const void *sym8)
{
	const struct uf_filter_slot *sl = &fl->slots[slot];
	char s[UF_SYMBOL_LEN + 1];
	if (sl->n == 0)
		return 1;
	uf_symbol_unpad(s, sym8);
	return bsearch(s, sl->syms, sl->n, sizeof(*sl->syms), uf_filter_sym_cmp) != NULL;
}

void uf_filter_switch(struct uf_filter *fl, uint32_t slot)
{
	fl->on = fl->slots[slot].n != 0;
	fl->gen++; /* the caller rewrote wanted[] for the new list */
	uf_store_release_u32(&fl->active, slot);
	uf_store_release_u32(&fl->pending, 0); /* the old slot is free for the next change */
}

int uf_filter_keeps(const struct uf_filter *fl, const struct uf_record *r)
{
	uint32_t id = r->instrument;
	/* Records about every instrument: market-wide statuses (locate 0), a gap, a RESET, a
	 * doubt of every book (UF_INSTRUMENT_ALL). Dropping one would leave the wanted books
	 * wrong in the stream and the image without a word. */
	if (id == 0 || id == UF_INSTRUMENT_ALL || r->kind == UF_REC_GAP || r->kind == UF_REC_RESET)
		return 1;
	return id < fl->max_inst && fl->wanted[id]; /* a wanted book's records, doubts included */
}

size_t uf_filter_records(struct uf_filter *fl, struct uf_record *recs, size_t n)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		const struct uf_record *r = &recs[i];
		uint32_t id = r->instrument;
		if (r->kind == UF_REC_INSTRUMENT && id < fl->max_inst) {
			uint8_t w = (uint8_t)uf_filter_slot_wants(fl, fl->active, &r->ref);
			fl->gen += w != fl->wanted[id]; /* uf_filter_stale_books recounts */
			fl->wanted[id] = w;
		} else if (UF_UNLIKELY(r->kind == UF_REC_STALE)) {
			fl->gen++; /* a book became stale: so does the count */
		}
		if (uf_filter_keeps(fl, r)) {
			if (k != i)
				recs[k] = *r;
			k++;
		}
	}
	return k;
}

uint64_t uf_filter_stale_books(struct uf_filter *fl, const struct uf_publisher *pub,
                               uint64_t pub_stale)
{
	if (pub_stale == 0)
		fl->stale_pub = 0; /* a reset: the next doubt is counted afresh */
	if (!fl->on || pub_stale == 0)
		return pub_stale; /* every book is published, or none is in doubt */
	if (pub_stale == fl->stale_pub && fl->gen == fl->stale_gen)
		return fl->stale_wanted; /* nothing changed since the last count */
	uint64_t n = 0;
	for (uint32_t id = 1; id < fl->max_inst; id++) {
		if (!fl->wanted[id])
			continue;
		const struct uf_pub_instrument *pi = uf_publish_instrument(pub, id);
		n += pi && pi->stale;
	}
	fl->stale_pub = pub_stale;
	fl->stale_gen = fl->gen;
	fl->stale_wanted = n;
	return n;
}
