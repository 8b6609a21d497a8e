/* The "every status code, twice" tests' values (the image, the book model and the NATS book
 * entry keep one slot per code: ring layout 2): round `round`'s value of `code`, so a check
 * can tell the latest value from the first and one code's slot from another's. */
#ifndef UF_TEST_STATUS_H
#define UF_TEST_STATUS_H

#include <stdint.h>

#include "publish/uf_record.h"

static inline void uf_test_status_value(struct uf_record *r, uint32_t round, uint32_t code)
{
	r->aux = code;
	r->price = (int64_t)(1000 * round + code);
	r->shares = 10u * code + round;
	r->exch_ts = 100u * round + code;
}

#endif /* UF_TEST_STATUS_H */
