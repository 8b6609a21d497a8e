/* The promtool helper the status renderer's tests use (test/common/uf_test_promtool.h):
 * clean text passes, each kind of convention break promtool knows is reported, and text
 * larger than a pipe buffer goes through whole. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "test/common/uf_test_promtool.h"

static char why[8192];

static void test_promtool_accepts_conventional_metrics(void **state)
{
	const char *text =
	    "# HELP uringfeed_gaps_unrecovered_total gaps given up\n"
	    "# TYPE uringfeed_gaps_unrecovered_total counter\n"
	    "uringfeed_gaps_unrecovered_total{feed=\"nasdaq\"} 3\n"
	    "# HELP uringfeed_line_last_packet_age_seconds seconds since the line's last packet\n"
	    "# TYPE uringfeed_line_last_packet_age_seconds gauge\n"
	    "uringfeed_line_last_packet_age_seconds{feed=\"nasdaq\",line=\"A\"} 0.25\n"
	    "# HELP uringfeed_wire_to_publish_seconds wire to publish latency\n"
	    "# TYPE uringfeed_wire_to_publish_seconds histogram\n"
	    "uringfeed_wire_to_publish_seconds_bucket{feed=\"nasdaq\",le=\"1e-05\"} 1\n"
	    "uringfeed_wire_to_publish_seconds_bucket{feed=\"nasdaq\",le=\"0.001\"} 5\n"
	    "uringfeed_wire_to_publish_seconds_bucket{feed=\"nasdaq\",le=\"+Inf\"} 6\n"
	    "uringfeed_wire_to_publish_seconds_sum{feed=\"nasdaq\"} 0.0123\n"
	    "uringfeed_wire_to_publish_seconds_count{feed=\"nasdaq\"} 6\n";

	if (uf_test_promtool_check_metrics(text, why, sizeof(why)) != 0)
		fail_msg("promtool refused clean metrics: %s", why);
	assert_string_equal(why, "");
}

/* Each convention break must be reported with promtool's own words. */
static void test_promtool_reports_each_convention_break(void **state)
{
	static const struct {
		const char *text, *expect;
	} cases[] = {
	    {"# HELP uf_wire_to_publish_ns latency\n# TYPE uf_wire_to_publish_ns gauge\n"
	     "uf_wire_to_publish_ns 5\n",
	     "abbreviated units"},
	    {"# HELP uf_age_milliseconds age\n# TYPE uf_age_milliseconds gauge\n"
	     "uf_age_milliseconds 5\n",
	     "base unit \"seconds\""},
	    {"# HELP uf_packets packets\n# TYPE uf_packets counter\nuf_packets 5\n",
	     "should have \"_total\" suffix"},
	    {"uf_packets_total{feed=\"a\" 5\n", "parsing error"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (uf_test_promtool_check_metrics(cases[i].text, why, sizeof(why)) == 0)
			fail_msg("case %zu passed promtool", i);
		if (!strstr(why, cases[i].expect))
			fail_msg("case %zu: want \"%s\" in promtool's output, got: %s", i,
			         cases[i].expect, why);
	}
}

/* 4096 series (~300 KB, several pipe buffers): all of it reaches promtool, which accepts it,
 * and one bad family at the very end is still seen. */
static void test_promtool_reads_text_larger_than_a_pipe(void **state)
{
	size_t cap = 512 * 1024, len = 0;
	char *text = malloc(cap);

	assert_non_null(text);
	len += (size_t)snprintf(text + len, cap - len,
	                        "# HELP uringfeed_consumer_lag_records records behind\n"
	                        "# TYPE uringfeed_consumer_lag_records gauge\n");
	for (int i = 0; i < 4096; i++)
		len +=
		    (size_t)snprintf(text + len, cap - len,
		                     "uringfeed_consumer_lag_records{ring=\"nasdaq\",slot=\"%d\","
		                     "pid=\"%d\"} %d\n",
		                     i, 10000 + i, i);
	assert_true(len > 256 * 1024);
	if (uf_test_promtool_check_metrics(text, why, sizeof(why)) != 0)
		fail_msg("promtool refused %zu bytes of clean metrics: %s", len, why);
	snprintf(text + len, cap - len, "# HELP uf_late late\n# TYPE uf_late counter\nuf_late 1\n");
	assert_int_equal(uf_test_promtool_check_metrics(text, why, sizeof(why)), -1);
	assert_non_null(strstr(why, "uf_late counter metrics should have \"_total\" suffix"));
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_promtool_accepts_conventional_metrics),
	    cmocka_unit_test(test_promtool_reports_each_convention_break),
	    cmocka_unit_test(test_promtool_reads_text_larger_than_a_pipe),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
