/* Level pool and sorted-array arena setup, and the rare chunk moves (hot paths are inline in
 * levels.h). */
#include "publish/levels.h"

#include <errno.h>

#include "publish/pub_mem.h"

static uint32_t uf_lv_class(uint32_t cap)
{
	uint32_t c = 0;
	while ((UF_LV_MIN_CAP << c) < cap)
		c++;
	return c;
}

int uf_levels_init(struct uf_levels *lv, uint32_t max_levels, uint32_t max_instruments,
                   int numa_node, uint32_t page_kinds)
{
	memset(lv, 0, sizeof(*lv));
	if (max_levels == 0 || max_levels >= (1u << 30))
		return -EINVAL;
	lv->max = max_levels;
	lv->bump = 1;
	lv->nodes_bytes = ((size_t)max_levels + 1) * sizeof(struct uf_level_node);
	int rc = uf_pub_mem_map(&lv->nodes_mem, lv->nodes_bytes, numa_node, page_kinds);
	if (rc)
		return rc;
	lv->nodes = lv->nodes_mem.p;
	uint64_t entries = uf_levels_arena_entries(max_levels, max_instruments);
	lv->arena_size = (uint32_t)entries;
	lv->arena_bytes = (size_t)entries * sizeof(uint64_t);
	rc = uf_pub_mem_map(&lv->arena_mem, lv->arena_bytes, numa_node, page_kinds);
	if (rc) {
		uf_pub_mem_unmap(&lv->nodes_mem);
		lv->nodes = NULL;
		return rc;
	}
	lv->arena = lv->arena_mem.p;
	for (int c = 0; c < UF_LV_NCLASS; c++)
		lv->chunk_free[c] = UF_LV_NONE;
	return 0;
}

void uf_levels_fini(struct uf_levels *lv)
{
	uf_pub_mem_unmap(&lv->nodes_mem);
	uf_pub_mem_unmap(&lv->arena_mem);
	lv->nodes = NULL;
	lv->arena = NULL;
}

void uf_levels_clear(struct uf_levels *lv)
{
	lv->bump = 1;
	lv->free_head = 0;
	lv->live = 0;
	lv->arena_bump = 0;
	for (int c = 0; c < UF_LV_NCLASS; c++)
		lv->chunk_free[c] = UF_LV_NONE;
}

/* A chunk of class c, or UF_LV_NONE. */
static uint32_t uf_lv_chunk_get(struct uf_levels *lv, uint32_t c)
{
	if (c >= UF_LV_NCLASS)
		return UF_LV_NONE;
	uint32_t off = lv->chunk_free[c];
	if (off != UF_LV_NONE) {
		lv->chunk_free[c] = (uint32_t)lv->arena[off];
		return off;
	}
	uint32_t cap = UF_LV_MIN_CAP << c;
	if ((uint64_t)lv->arena_bump + cap > lv->arena_size)
		return UF_LV_NONE;
	off = lv->arena_bump;
	lv->arena_bump += cap;
	return off;
}

static void uf_lv_chunk_put(struct uf_levels *lv, uint32_t off, uint32_t cap)
{
	uint32_t c = uf_lv_class(cap);
	lv->arena[off] = lv->chunk_free[c];
	lv->chunk_free[c] = off;
}

int uf_levels_grow(struct uf_levels *lv, struct uf_book_side *s)
{
	uint32_t ncap = s->cap ? s->cap * 2 : UF_LV_MIN_CAP;
	uint32_t off = uf_lv_chunk_get(lv, uf_lv_class(ncap));
	if (off == UF_LV_NONE)
		return -ENOSPC;
	if (s->cap) {
		memcpy(&lv->arena[off], &lv->arena[s->base], (size_t)s->n * sizeof(uint64_t));
		uf_lv_chunk_put(lv, s->base, s->cap);
	}
	s->base = off;
	s->cap = ncap;
	return 0;
}

void uf_levels_release_chunk(struct uf_levels *lv, struct uf_book_side *s)
{
	if (s->cap) {
		uf_lv_chunk_put(lv, s->base, s->cap);
		s->cap = 0;
		s->base = 0;
	}
}
