/* Order table setup (the hot operations are inline in orders.h). */
#include "publish/orders.h"

#include <errno.h>
#include <string.h>

#include "publish/pub_mem.h"

int uf_orders_init(struct uf_order_table *t, uint64_t max_orders, int numa_node,
                   uint32_t page_kinds)
{
	memset(t, 0, sizeof(*t));
	/* Load at most 3/4 when full: linear probing stays short (about 2.5 probes for a hit). */
	uint64_t bytes = uf_orders_bytes(max_orders);
	if (bytes == 0)
		return -EINVAL;
	uint32_t bits = (uint32_t)__builtin_ctzll(bytes / sizeof(struct uf_order));
	t->bytes = (size_t)bytes;
	int rc = uf_pub_mem_map(&t->mem, t->bytes, numa_node, page_kinds);
	if (rc)
		return rc;
	t->slots = t->mem.p;
	t->mask = (1ull << bits) - 1;
	t->bits = bits;
	t->max = max_orders;
	return 0;
}

void uf_orders_fini(struct uf_order_table *t)
{
	uf_pub_mem_unmap(&t->mem);
	t->slots = NULL;
}

void uf_orders_clear(struct uf_order_table *t)
{
	memset(t->slots, 0, t->bytes);
	t->count = 0;
	t->max_disp = 0;
}
