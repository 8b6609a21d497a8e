/* One aggregated price level: what the books hand out (uf_publish_top) and the unit of the
 * ring's book image (uf_ring.h producer side, ufconsumer.h consumer side). Defined once,
 * here, beside the record contract; installed with libufconsumer. */
#ifndef UF_LEVEL_H
#define UF_LEVEL_H

#include <stdint.h>

#include "publish/uf_record.h" /* UF_STATIC_ASSERT */

struct uf_level {
	int64_t price;     /* UF_PRICE_DECIMALS implied decimals (feed units) */
	uint64_t shares;   /* total shares resting at the price */
	uint32_t orders;   /* number of orders at the price */
	uint32_t reserved; /* zero; keeps the struct 24 bytes in shared memory */
};

UF_STATIC_ASSERT(sizeof(struct uf_level) == 24, "level is 24 bytes in shared memory");

#endif /* UF_LEVEL_H */
