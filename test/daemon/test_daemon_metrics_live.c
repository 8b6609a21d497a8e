/* The running daemon (UF_BIN_DIR/uringfeed) as an operator's Prometheus and prober see it:
 * uf-replay sends a generated day on line A only (line B stays silent all session) with the
 * packet of sequence 5000 dropped and no re-request server, so exactly one gap is given up.
 *   - /ready is 503 "no data received yet" before the first packet, then names line B as
 *     silent during the session, then the stale books after the gap;
 *   - /metrics of the live daemon passes `promtool check metrics` with no output, and every
 *     pipeline stage has samples;
 *   - the log (journal format forced) carries exactly one warning line for the gap and one
 *     for the silent line, written by the main loop, not the feed thread. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "test/common/uf_test_daemon.h"
#include "test/common/uf_test_dir.h"
#include "test/common/uf_test_promtool.h"

static char tmpdir[64];

static void check_promtool(const char *text)
{
	char out[8192];
	if (uf_test_promtool_check_metrics_within(text, out, sizeof(out), 10000) != 0)
		fail_msg("promtool check metrics on the live /metrics:\n%s", out);
}

static int setup(void **state)
{
	(void)state;
	return uf_test_daemon_dir(tmpdir, sizeof(tmpdir), "live");
}

static int teardown(void **state)
{
	(void)state;
	return uf_test_rm_tree(tmpdir);
}

static void test_live_metrics_ready_and_event_log(void **state)
{
	(void)state;
	char day[256];
	const char *body;

	snprintf(day, sizeof(day), "%s/day.itch", tmpdir);
	uf_test_gen_day(tmpdir, day, "20000", "20", "3");
	struct uf_test_feed feed = {
	    .top = "\"status\":{\"listen\":\"127.0.0.1:0\",\"probe_listen\":\"127.0.0.1:0\","
	           "\"ready_silence_ms\":300},"
	           "\"log\":{\"level\":\"info\",\"journal\":\"always\"}",
	    .name = "live",
	    .capacity = 262144,
	    .max_orders = 1000000};
	uf_test_feed_unique(&feed, 2, 77, 26000, 500, "live");
	uf_test_write_feed_config(tmpdir, &feed);

	pid_t daemon = uf_test_daemon_start(tmpdir, uf_test_bin("uringfeed"), NULL, 0);
	uint16_t port = uf_test_status_port(tmpdir);
	uint16_t probe = uf_test_log_port(tmpdir, "probe endpoint http://127.0.0.1:");
	/* journal format: priority prefix, no timestamp; "ready:" once the feed thread made a
	 * pass of its loop ("running;" comes when it was made: /ready could still say
	 * "starting") */
	uf_test_wait_log(tmpdir, "<6>running;", 10000);
	uf_test_wait_log(tmpdir, "<6>ready:", 10000);

	/* Before any data: not ready, and says so; alive all the same. */
	assert_int_equal(uf_test_http_get(probe, "/ready", &body), 503);
	assert_string_equal(body, "feed live: no data received yet\n");
	assert_int_equal(uf_test_http_get(probe, "/health", &body), 200);
	/* empty histograms, NaN ages */
	assert_int_equal(uf_test_http_get(port, "/metrics", &body), 200);
	check_promtool(body);
	assert_non_null(
	    strstr(body, "uringfeed_line_last_packet_age_seconds{feed=\"live\",line=\"B\"} NaN\n"));
	assert_true(uf_test_series(body, "uringfeed_ready{feed=\"live\"}") == 0);

	/* Line A only: B stays silent all session. */
	pid_t replay = uf_test_replay_start(tmpdir, day, &feed, 1, "10000", "@5000");

	/* During the session line B is silent: 503 naming it. */
	uint64_t end = uf_test_now_ms() + 10000;
	int code;
	do {
		code = uf_test_http_get(port, "/ready", &body);
		if (strstr(body, "line B has received nothing this session"))
			break;
		usleep(50000);
	} while (uf_test_now_ms() < end);
	assert_int_equal(code, 503);
	assert_non_null(strstr(body, "feed live: line B has received nothing this session\n"));

	/* The live exposition, mid-traffic, is clean for promtool; every stage is timed. */
	assert_int_equal(uf_test_http_get(port, "/metrics", &body), 200);
	check_promtool(body);
	static const char *const stages[] = {"receive", "arbitration", "decode",
	                                     "books",   "ring",        "image"};
	for (size_t i = 0; i < sizeof(stages) / sizeof(stages[0]); i++) {
		char k[128];
		snprintf(k, sizeof(k), "uringfeed_stage_seconds_count{feed=\"live\",stage=\"%s\"}",
		         stages[i]);
		if (!(uf_test_series(body, k) > 0))
			fail_msg("no samples in %s", k);
	}
	assert_true(uf_test_series(body, "uringfeed_wire_to_publish_seconds_count{feed=\"live\"}") >
	            0);
	assert_true(uf_test_series(body, "process_resident_memory_bytes") > 1e6);
	assert_true(uf_test_series(body, "process_open_fds") > 3);

	assert_int_equal(uf_test_wait_exit(replay, 20000, "uf-replay"), 0);
	/* After the gap and the end of session: stale books keep it unready. */
	end = uf_test_now_ms() + 10000;
	do {
		code = uf_test_http_get(port, "/ready", &body);
		if (strstr(body, "books stale") && !strstr(body, "line B"))
			break;
		usleep(50000);
	} while (uf_test_now_ms() < end);
	assert_int_equal(code, 503);
	assert_non_null(strstr(body, "books stale (an unrecovered gap"));
	assert_null(strstr(body, "line B")); /* after the end of session silence is normal */
	assert_int_equal(uf_test_http_get(port, "/metrics", &body), 200);
	check_promtool(body);
	assert_true(uf_test_series(body, "uringfeed_gaps_unrecovered_total{feed=\"live\"}") == 1);
	assert_true(uf_test_series(body, "uringfeed_books_stale{feed=\"live\"}") > 0);
	assert_true(uf_test_series(body, "uringfeed_session_ended{feed=\"live\"}") == 1);
	assert_true(uf_test_series(body, "uringfeed_recovery_in_progress{feed=\"live\"}") == 0);

	/* The main loop wrote one line per event, with journald priorities. */
	uf_test_wait_log(tmpdir, "<4>feed live: 1 gap given up", 5000);
	uf_test_wait_log(tmpdir, "<4>feed live: line B silent: no packet this session", 5000);
	uf_test_wait_log(tmpdir, "<6>feed live: end of session", 5000);
	assert_int_equal(uf_test_log_count(tmpdir, "gap given up"), 1);
	assert_int_equal(uf_test_log_count(tmpdir, "line B silent"), 1);
	assert_int_equal(uf_test_log_count(tmpdir, "line B back"), 0);
	print_message("daemon log:\n%s", uf_test_daemon_log());

	assert_int_equal(kill(daemon, SIGTERM), 0);
	assert_int_equal(uf_test_wait_exit(daemon, 15000, "uringfeed after SIGTERM"), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_live_metrics_ready_and_event_log, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
