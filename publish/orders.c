/* Order table setup (the hot operations are inline in orders.h). */
#include "publish/orders.h"

#include <errno.h>
#include <string.h>

#include "publish/pub_mem.h"

int uf_orders_init(struct uf_order_table *t, uint64_t max_orders, int numa_node)
{
	memset(t, 0, sizeof(*t));
	if (max_orders == 0 || max_orders > (1ull << 36))
		return -EINVAL;
	/* Load at most 3/4 when full: linear probing stays short (about 2.5 probes for a hit). */
	uint64_t want = max_orders + max_orders / 3 + 1;
	uint32_t bits = 4;
	while ((1ull << bits) < want)
		bits++;
	t->bytes = (size_t)(1ull << bits) * sizeof(struct uf_order);
	t->slots = uf_pub_mem_alloc(t->bytes, numa_node);
	if (!t->slots)
		return -ENOMEM;
	t->mask = (1ull << bits) - 1;
	t->shift = 64 - bits;
	t->max = max_orders;
	return 0;
}

void uf_orders_fini(struct uf_order_table *t)
{
	uf_pub_mem_free(t->slots, t->bytes);
	t->slots = NULL;
}

void uf_orders_clear(struct uf_order_table *t)
{
	memset(t->slots, 0, t->bytes);
	t->count = 0;
}
