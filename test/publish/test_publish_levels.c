/* publish/levels.h: the sorted-array search the level lookup and removal rely on, checked
 * against a linear scan (the book tests reach it only through whole messages). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "publish/levels.h"

/* First position whose key is >= key, by a plain scan. */
static uint32_t scan_lower_bound(const uint64_t *a, uint32_t n, uint32_t key)
{
	uint32_t i = 0;
	while (i < n && (uint32_t)(a[i] >> 32) < key)
		i++;
	return i;
}

static uint64_t rng_next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Every array length up to 130 (odd, even, powers of two and their neighbours), keys with
 * gaps, and every probe key: each present key, each gap, below the first, beyond the last. */
static void test_lower_bound_equals_linear_scan_for_every_length_and_key(void **state)
{
	(void)state;
	uint64_t a[130];
	uint64_t s = 0x2545F4914F6CDD1Dull;
	for (uint32_t n = 0; n <= 130; n++) {
		uint32_t k = (uint32_t)(rng_next(&s) % 5);
		for (uint32_t i = 0; i < n; i++) {
			k +=
			    1 + (uint32_t)(rng_next(&s) % 3); /* strictly ascending, gaps of 0..2 */
			a[i] = (uint64_t)k << 32 | (i + 1);
		}
		uint32_t top = n ? (uint32_t)(a[n - 1] >> 32) + 2 : 3;
		for (uint32_t key = 0; key <= top; key++)
			assert_int_equal(uf_lv_lower_bound(a, n, key), scan_lower_bound(a, n, key));
	}
}

/* Keys at the ends of the range: ~price makes ask keys near UINT32_MAX, bids near 0. */
static void test_lower_bound_handles_extreme_keys(void **state)
{
	(void)state;
	uint64_t a[5];
	const uint32_t keys[5] = {0, 1, 0x7fffffffu, UINT32_MAX - 1, UINT32_MAX};
	for (uint32_t i = 0; i < 5; i++)
		a[i] = (uint64_t)keys[i] << 32 | (i + 1);
	for (uint32_t n = 0; n <= 5; n++) {
		for (uint32_t i = 0; i < 5; i++) {
			assert_int_equal(uf_lv_lower_bound(a, n, keys[i]),
			                 scan_lower_bound(a, n, keys[i]));
			assert_int_equal(uf_lv_lower_bound(a, n, keys[i] + 1),
			                 scan_lower_bound(a, n, keys[i] + 1));
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_lower_bound_equals_linear_scan_for_every_length_and_key),
	    cmocka_unit_test(test_lower_bound_handles_extreme_keys),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
