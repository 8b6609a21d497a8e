/* uf-decode on the real IEX captures in $UF_SHARED_DATA/iex, as users run it: `stats` prints
 * the documented JSON (IEX section included) and exits 1 for the DEEP capture's truncated last
 * record, 0 for TOPS; `print` gives one line per message with every field; `--payload`
 * overrides the detection. The gzip'd captures are read in place. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <cmocka.h>

static char g_bin[4096], g_deep[4096], g_tops[4096];

static int setup(void **s)
{
	const char *b = getenv("UF_BIN_DIR");
	const char *d = getenv("UF_SHARED_DATA");
	struct stat st;
	snprintf(g_bin, sizeof(g_bin), "%s/uf-decode", b && *b ? b : UF_BIN_DIR);
	if (!d || !*d) {
		fprintf(stderr, "UF_SHARED_DATA is not set: IEX conformance data unavailable\n");
		return -1;
	}
	snprintf(g_deep, sizeof(g_deep), "%s/iex/iex-deep-1.0-20170425.pcap.gz", d);
	snprintf(g_tops, sizeof(g_tops), "%s/iex/iex-tops-1.6-20170710.pcap.gz", d);
	if (stat(g_deep, &st) < 0 || stat(g_tops, &st) < 0) {
		fprintf(stderr, "IEX captures absent under %s/iex: %s\n", d, strerror(errno));
		return -1;
	}
	if (stat(g_bin, &st) < 0) {
		fprintf(stderr, "%s: %s (build the uf-decode target)\n", g_bin, strerror(errno));
		return -1;
	}
	return 0;
}

/* Line-by-line view of a command's stdout. */
struct lines {
	uint64_t n;       /* lines read */
	char first[1024]; /* the first one, newline stripped */
	char third[1024]; /* the third one */
	uint64_t with[4]; /* lines containing needle[i] */
	const char *needle[4];
};

/* Runs `cmd`, feeding each stdout line to `l`; returns the exit status. */
static int run_lines(const char *cmd, struct lines *l)
{
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	static char line[1 << 16];
	while (fgets(line, sizeof(line), p)) {
		line[strcspn(line, "\n")] = 0;
		size_t len = strlen(line);
		assert_true(len < sizeof(l->first)); /* no line of uf-decode is that long */
		if (l->n == 0)
			memcpy(l->first, line, len + 1);
		if (l->n == 2)
			memcpy(l->third, line, len + 1);
		for (int i = 0; i < 4; i++)
			if (l->needle[i] && strstr(line, l->needle[i]))
				l->with[i]++;
		l->n++;
	}
	int st = pclose(p);
	assert_true(WIFEXITED(st));
	return WEXITSTATUS(st);
}

static void test_stats_deep_prints_counts_and_exits_1_for_the_truncated_record(void **s)
{
	char cmd[8400];
	struct lines l = {0};
	snprintf(cmd, sizeof(cmd), "'%s' stats '%s'", g_bin, g_deep);
	assert_int_equal(run_lines(cmd, &l), 1);
	assert_int_equal(l.n, 1);
	assert_string_equal(
	    l.first,
	    "{\"packets\":121314,\"messages\":391999,\"types\":{},\"errors\":{\"truncated_record\":"
	    "1},"
	    "\"gaps\":0,\"skipped\":{},\"iex_packets\":121314,\"iex_stream_restarts\":11,"
	    "\"iex_types\":{\"5\":14627,\"8\":12941,\"B\":73,\"E\":59,\"H\":93638,\"O\":93638,"
	    "\"P\":93636,\"S\":44,\"T\":83343}}");
}

static void test_stats_tops_prints_counts_and_exits_0(void **s)
{
	char cmd[8400];
	struct lines l = {0};
	snprintf(cmd, sizeof(cmd), "'%s' stats '%s'", g_bin, g_tops);
	assert_int_equal(run_lines(cmd, &l), 0);
	assert_string_equal(
	    l.first, "{\"packets\":13022,\"messages\":57674,\"types\":{},\"errors\":{},\"gaps\":0,"
	             "\"skipped\":{},\"iex_packets\":13022,\"iex_stream_restarts\":0,"
	             "\"iex_types\":{\"A\":642,\"B\":3,\"D\":10,\"H\":7803,\"O\":7801,\"P\":7802,"
	             "\"Q\":27217,\"S\":6,\"T\":6390}}");
	/* Read as DEEP, every TOPS segment is the wrong protocol. */
	struct lines w = {.needle = {"\"wrong_protocol_id\":13022", "\"messages\":0"}};
	snprintf(cmd, sizeof(cmd), "'%s' stats --payload iex-deep '%s'", g_bin, g_tops);
	assert_int_equal(run_lines(cmd, &w), 1);
	assert_int_equal(w.with[0], 1);
	assert_int_equal(w.with[1], 1);
	snprintf(cmd, sizeof(cmd), "'%s' stats --payload nasdaq '%s' 2>/dev/null", g_bin, g_tops);
	struct lines u = {0};
	assert_int_equal(run_lines(cmd, &u), 2);
}

static void test_print_deep_gives_one_line_per_message(void **s)
{
	char cmd[8400];
	struct lines l = {
	    .needle = {"\"protocol\":\"deep\"", "\"error\"", "\"type\":\"8\"", "\"event_flags\":"}};
	snprintf(cmd, sizeof(cmd), "'%s' print '%s'", g_bin, g_deep);
	assert_int_equal(run_lines(cmd, &l), 1); /* the truncated record is an input error */
	assert_int_equal(l.n, 391999);
	assert_int_equal(l.with[0], 391999);
	assert_int_equal(l.with[1], 0);
	assert_int_equal(l.with[2], 12941);
	assert_int_equal(l.with[3], 12941 + 14627);
	assert_string_equal(l.first, "{\"seq\":1,\"protocol\":\"deep\",\"type\":\"S\",\"name\":"
	                             "\"system_event\",\"timestamp\":1493132621826542542,"
	                             "\"system_event\":\"O\"}");
	assert_string_equal(l.third, "{\"seq\":3,\"protocol\":\"deep\",\"type\":\"O\",\"name\":"
	                             "\"operational_halt_status\",\"timestamp\":"
	                             "1493132621826542542,\"symbol\":\"A\","
	                             "\"operational_halt_status\":\"N\"}");
}

static void test_print_tops_shows_every_quote_field(void **s)
{
	char cmd[8400];
	struct lines l = {.needle = {"\"bid_size\":700,\"bid_price\":187700,\"ask_price\":0,"
	                             "\"ask_size\":0",
	                             "\"protocol\":\"tops\"", "\"upper_auction_collar\":"}};
	snprintf(cmd, sizeof(cmd), "'%s' print '%s'", g_bin, g_tops);
	assert_int_equal(run_lines(cmd, &l), 0);
	assert_int_equal(l.n, 57674);
	assert_true(l.with[0] >= 1); /* GOOD's bid, seq 31210 */
	assert_int_equal(l.with[1], 57674);
	assert_int_equal(l.with[2], 642);
	struct lines k = {0};
	snprintf(cmd, sizeof(cmd), "'%s' print --limit 3 '%s'", g_bin, g_tops);
	assert_int_equal(run_lines(cmd, &k), 0);
	assert_int_equal(k.n, 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_stats_deep_prints_counts_and_exits_1_for_the_truncated_record),
	    cmocka_unit_test(test_stats_tops_prints_counts_and_exits_0),
	    cmocka_unit_test(test_print_deep_gives_one_line_per_message),
	    cmocka_unit_test(test_print_tops_shows_every_quote_field),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
