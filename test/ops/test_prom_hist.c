/* Feed latency histogram to Prometheus buckets (daemon/prom_hist.c): exact counts
 * at the bounds, +Inf == _count even when the copy's count disagrees, and rendered text
 * that promtool accepts. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "test/common/uf_test_promtool.h"
#include "daemon/prom_hist.h"

static struct uf_lat_hist h;

/* Index of the Prometheus bound equal to 2^exp ns. */
static unsigned k_of(unsigned exp)
{
	return exp - UF_PROM_HIST_MIN_EXP;
}

static void test_prom_hist_counts_exactly_at_power_of_two_bounds(void **state)
{
	struct uf_prom_hist ph;

	memset(&h, 0, sizeof(h));
	uf_lat_record(&h, 0);            /* le 1.024 us */
	uf_lat_record(&h, 1023);         /* last ns under 2^10 */
	uf_lat_record(&h, 1024);         /* exactly 2^10: counted under 2^11 */
	uf_lat_record_n(&h, 50000, 10);  /* 50 us: under 2^16 = 65.5 us */
	uf_lat_record(&h, 65535);        /* under 2^16 */
	uf_lat_record(&h, 65537);        /* over 2^16 */
	uf_lat_record(&h, 3000000000ll); /* 3 s: past the last bound, +Inf only */
	uf_lat_record(&h, -5);           /* clock step: in no bucket */
	uf_prom_hist_from_lat(&h, &ph);

	assert_int_equal(ph.le_ns[0], 1024);
	assert_int_equal(ph.le_ns[UF_PROM_HIST_NLE - 1], 1ull << 30);
	assert_int_equal(ph.cum[k_of(10)], 2);
	assert_int_equal(ph.cum[k_of(11)], 3);
	assert_int_equal(ph.cum[k_of(15)], 3);
	assert_int_equal(ph.cum[k_of(16)], 14);
	assert_int_equal(ph.cum[k_of(17)], 15);
	assert_int_equal(ph.cum[k_of(30)], 15);
	assert_int_equal(ph.count, 16);
	assert_int_equal(ph.sum_ns, 0 + 1023 + 1024 + 500000 + 65535 + 65537 + 3000000000ull);
	for (unsigned k = 1; k < UF_PROM_HIST_NLE; k++)
		assert_true(ph.cum[k] >= ph.cum[k - 1]);
}

/* Every value from 0 to 2^20 ns once: the count under 2^k ns must be exactly 2^k. */
static void test_prom_hist_matches_a_brute_force_count(void **state)
{
	struct uf_prom_hist ph;

	memset(&h, 0, sizeof(h));
	for (int64_t v = 0; v <= (1 << 20); v++)
		uf_lat_record(&h, v);
	uf_prom_hist_from_lat(&h, &ph);
	for (unsigned e = UF_PROM_HIST_MIN_EXP; e <= 20; e++)
		if (ph.cum[k_of(e)] != (1ull << e))
			fail_msg("le 2^%u ns: %llu, want %llu", e,
			         (unsigned long long)ph.cum[k_of(e)], 1ull << e);
	assert_int_equal(ph.cum[k_of(21)], (1 << 20) + 1);
	assert_int_equal(ph.count, (1 << 20) + 1);
}

/* A copy taken while the feed thread moved: h.count says more than the buckets hold. The
 * rendered +Inf and _count must agree with the buckets, or Prometheus rejects the series. */
static void test_prom_hist_count_comes_from_the_buckets(void **state)
{
	struct uf_prom_hist ph;

	memset(&h, 0, sizeof(h));
	uf_lat_record_n(&h, 2000, 7);
	h.count = 9;
	uf_prom_hist_from_lat(&h, &ph);
	assert_int_equal(ph.count, 7);
	assert_int_equal(ph.cum[UF_PROM_HIST_NLE - 1], 7);
}

static void test_prom_hist_renders_text_promtool_accepts(void **state)
{
	struct uf_prom_hist ph;
	char text[8192], why[4096];
	int off;

	memset(&h, 0, sizeof(h));
	uf_lat_record_n(&h, 20000, 5);
	uf_lat_record(&h, 2000000);
	uf_prom_hist_from_lat(&h, &ph);
	off = snprintf(text, sizeof(text),
	               "# HELP uringfeed_wire_to_publish_seconds wire to publish latency\n"
	               "# TYPE uringfeed_wire_to_publish_seconds histogram\n");
	int n = uf_prom_hist_render(&ph, "uringfeed_wire_to_publish_seconds", "feed=\"nasdaq\"",
	                            text + off, sizeof(text) - (size_t)off);
	assert_true(n > 0);
	off += n;
	n = uf_prom_hist_render(&ph, "uringfeed_wire_to_publish_seconds", "feed=\"bx\"", text + off,
	                        sizeof(text) - (size_t)off);
	assert_true(n > 0);
	assert_non_null(strstr(text, "uringfeed_wire_to_publish_seconds_bucket{feed=\"nasdaq\","
	                             "le=\"1.024e-06\"} 0\n"));
	assert_non_null(strstr(text, "uringfeed_wire_to_publish_seconds_bucket{feed=\"nasdaq\","
	                             "le=\"3.2768e-05\"} 5\n"));
	assert_non_null(strstr(text, "uringfeed_wire_to_publish_seconds_bucket{feed=\"nasdaq\","
	                             "le=\"+Inf\"} 6\n"));
	assert_non_null(strstr(text, "uringfeed_wire_to_publish_seconds_sum{feed=\"nasdaq\"} "
	                             "0.002100000\n"));
	assert_non_null(
	    strstr(text, "uringfeed_wire_to_publish_seconds_count{feed=\"nasdaq\"} 6\n"));
	if (uf_test_promtool_check_metrics(text, why, sizeof(why)) != 0)
		fail_msg("promtool: %s\n%s", why, text);

	/* Without labels, and into a buffer that is too small. */
	n = uf_prom_hist_render(&ph, "uf_x_seconds", "", text, sizeof(text));
	assert_true(n > 0);
	assert_non_null(strstr(text, "uf_x_seconds_bucket{le=\"+Inf\"} 6\nuf_x_seconds_sum "
	                             "0.002100000\nuf_x_seconds_count 6\n"));
	assert_int_equal(uf_prom_hist_render(&ph, "uf_x_seconds", "", text, 100), -ENOSPC);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_prom_hist_counts_exactly_at_power_of_two_bounds),
	    cmocka_unit_test(test_prom_hist_matches_a_brute_force_count),
	    cmocka_unit_test(test_prom_hist_count_comes_from_the_buckets),
	    cmocka_unit_test(test_prom_hist_renders_text_promtool_accepts),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
