/* The order table's home slots (publish/orders.h): consecutive references share lines, and
 * references that differ only in their high bits do not pile into one probe chain.
 *
 * The table keeps a reference's low bits (XORed with a hash of the bits above them) so that a
 * day's consecutive ITCH references fill consecutive slots. A plain low-bits home would put
 * references that differ only above the table's bits (a table's length apart, or numbers in
 * the high bits only) all in one chain: every find would walk it. These tests count the
 * probes, so they fail on such a home, and check every order is found, changed and removed
 * exactly. Several dense sequences at once (per-gateway numbering) are the home's known limit:
 * that pattern is checked for exactness and its probes printed, not bounded. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "publish/orders.h"

#define MAX_ORDERS 30000 /* 2^16 slots: load 0.46 when full */

/* Probes the find of `ref` that returned `s` made: slots from its home to s, inclusive. */
static uint64_t probes(const struct uf_order_table *t, uint64_t ref, const struct uf_order *s)
{
	uint64_t home = uf_orders_home(t, ref), at = (uint64_t)(s - t->slots);
	return ((at - home) & t->mask) + 1;
}

typedef uint64_t (*ref_fn)(uint64_t i);

static uint64_t consecutive(uint64_t i)
{
	return 3000000000ull + i;
}

static uint64_t a_table_apart(uint64_t i)
{
	return 77 + (i << 16); /* the same low 16 bits: one home for all, without the high hash */
}

static uint64_t per_gateway(uint64_t i)
{
	return ((i % 8) << 56) | (i / 8); /* eight gateways numbering from 0 each */
}

static uint64_t high_bits_only(uint64_t i)
{
	return (i + 1) << 40; /* nothing below bit 40 */
}

/* Fills the table with `n` references of pattern `fn`, checks the longest and mean probe
 * count, removes every other one (backward shifts), checks the rest are found, then empties it
 * and checks it is empty. */
static void run_pattern(ref_fn fn, uint64_t n, const char *name, int bounded)
{
	struct uf_order_table t;
	assert_int_equal(uf_orders_init(&t, MAX_ORDERS, -1, 0), 0);
	for (uint64_t i = 0; i < n; i++) {
		int dup = 0;
		struct uf_order *s = uf_orders_insert(&t, fn(i), &dup);
		assert_non_null(s);
		s->shares = (uint32_t)i + 1;
		s->level = 1;
	}
	uint64_t worst = 0, sum = 0;
	for (uint64_t i = 0; i < n; i++) {
		const struct uf_order *s = uf_orders_find(&t, fn(i));
		assert_non_null(s);
		assert_int_equal(s->shares, (uint32_t)i + 1);
		uint64_t p = probes(&t, fn(i), s);
		sum += p;
		worst = p > worst ? p : worst;
	}
	print_message("%s: %llu orders, probes mean %.2f, longest %llu\n", name,
	              (unsigned long long)n, (double)sum / (double)n, (unsigned long long)worst);
	/* the removes' scan bound is the longest displacement an insert made */
	assert_int_equal(t.max_disp, worst - 1);
	/* random keys at load 0.46 average ~1.4 probes a find and a longest chain in the tens; one
	 * chain for a pattern would be thousands */
	if (bounded) {
		assert_true(worst <= 64);
		assert_true(sum <= 2 * n);
	}
	for (uint64_t i = 0; i < n; i += 2)
		uf_orders_remove(&t, uf_orders_find(&t, fn(i)));
	for (uint64_t i = 0; i < n; i++) {
		const struct uf_order *s = uf_orders_find(&t, fn(i));
		if (i % 2 == 0)
			assert_null(s);
		else
			assert_true(s && s->shares == (uint32_t)i + 1);
	}
	for (uint64_t i = 1; i < n; i += 2)
		uf_orders_remove(&t, uf_orders_find(&t, fn(i)));
	assert_int_equal(t.count, 0);
	uf_orders_clear(&t);
	assert_int_equal(t.max_disp, 0);
	for (uint64_t i = 0; i <= t.mask; i++)
		assert_int_equal(t.slots[i].level, 0);
	uf_orders_fini(&t);
}

static void test_consecutive_references_share_lines(void **state)
{
	(void)state;
	struct uf_order_table t;
	assert_int_equal(uf_orders_init(&t, MAX_ORDERS, -1, 0), 0);
	/* 4096 consecutive references: each at its home, four to a line, in 1024 lines */
	uint64_t lines[1024];
	size_t nlines = 0;
	for (uint64_t i = 0; i < 4096; i++) {
		int dup = 0;
		struct uf_order *s = uf_orders_insert(&t, consecutive(i), &dup);
		assert_non_null(s);
		s->level = 1;
		assert_ptr_equal(s, uf_orders_home_slot(&t, consecutive(i)));
		uint64_t line = (uint64_t)(uintptr_t)s / 64;
		int seen = 0;
		for (size_t k = 0; k < nlines && !seen; k++)
			seen = lines[k] == line;
		if (!seen) {
			assert_true(nlines < 1024);
			lines[nlines++] = line;
		}
	}
	assert_int_equal(nlines, 1024);
	uf_orders_fini(&t);
	run_pattern(consecutive, MAX_ORDERS, "consecutive", 1);
}

static void test_references_a_table_apart_do_not_share_a_chain(void **state)
{
	(void)state;
	run_pattern(a_table_apart, MAX_ORDERS, "a table apart", 1);
}

/* The known limit: exact, but the runs overlap (probes printed, not bounded). */
static void test_per_gateway_references_stay_exact(void **state)
{
	(void)state;
	run_pattern(per_gateway, MAX_ORDERS, "per gateway", 0);
}

static void test_references_in_high_bits_only_do_not_share_a_chain(void **state)
{
	(void)state;
	run_pattern(high_bits_only, MAX_ORDERS, "high bits only", 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_consecutive_references_share_lines),
	    cmocka_unit_test(test_references_a_table_apart_do_not_share_a_chain),
	    cmocka_unit_test(test_per_gateway_references_stay_exact),
	    cmocka_unit_test(test_references_in_high_bits_only_do_not_share_a_chain),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
