/* The daemon with "capture" on, as an operator sees it (issue 25): the capture folder is a
 * 1 MiB tmpfs mounted by this test (root needed: the test fails without it), so the disk
 * fills in the middle of a two-line day. The feed goes on: every message of the day is
 * delivered; the capture drops are counted by reason in /metrics and /status, /ready stays
 * 200 and its body says the capture dropped; the log has one warning for it; the files the
 * capture kept are whole pcapng that uf-decode reads. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "test/common/uf_test_daemon.h"
#include "test/common/uf_test_dir.h"

#define TDC_MESSAGES "40000"

static char tmpdir[64];
static char capdir[128];
static pid_t daemon_pid = -1;

static int setup(void **state)
{
	(void)state;
	if (uf_test_daemon_dir(tmpdir, sizeof(tmpdir), "capture") < 0)
		return -1;
	snprintf(capdir, sizeof(capdir), "%s/cap", tmpdir);
	mkdir(capdir, 0755);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	uf_test_kill(&daemon_pid);
	umount2(capdir, MNT_DETACH);
	return uf_test_rm_tree(tmpdir);
}

static void test_daemon_capture_disk_full_mid_day_feed_goes_on(void **state)
{
	(void)state;
	if (mount("tmpfs", capdir, "tmpfs", 0, "size=1m") < 0)
		fail_msg("mount a 1 MiB tmpfs on %s: %s (this test needs root)", capdir,
		         strerror(errno));
	char day[256], extra[256];
	snprintf(day, sizeof(day), "%s/day.itch", tmpdir);
	uf_test_gen_day(tmpdir, day, TDC_MESSAGES, "20", "4");
	snprintf(extra, sizeof(extra),
	         ",\"capture\":{\"dir\":\"%s\",\"rotate_mb\":1,\"buffer_mb\":4}", capdir);
	struct uf_test_feed feed = {
	    .name = "cap", .capacity = 262144, .max_orders = 1000000, .extra = extra};
	uf_test_feed_unique(&feed, 2, 76, 27000, 500, "cap");
	uf_test_write_feed_config(tmpdir, &feed);
	daemon_pid = uf_test_daemon_start(tmpdir, uf_test_bin("uringfeed"), NULL, 0);
	uint16_t port = uf_test_status_port(tmpdir);
	pid_t replay = uf_test_replay_start(tmpdir, day, &feed, 2, "100000", NULL);
	assert_int_equal(uf_test_wait_exit(replay, 30000, "uf-replay"), 0);

	/* the whole day delivered, although the capture's disk filled */
	const char *body;
	uint64_t end = uf_test_now_ms() + 20000;
	double msgs = 0;
	do {
		assert_int_equal(uf_test_http_get(port, "/metrics", &body), 200);
		msgs = uf_test_series(body, "uringfeed_messages_total{feed=\"cap\"}");
		if (msgs >= 40000 &&
		    uf_test_series(body, "uringfeed_capture_dropped_total{feed=\"cap\",reason="
		                         "\"disk_full\"}") > 0)
			break;
		usleep(50000);
	} while (uf_test_now_ms() < end);
	assert_true(msgs == 40000);
	double full = uf_test_series(
	    body, "uringfeed_capture_dropped_total{feed=\"cap\",reason=\"disk_full\"}");
	double written =
	    uf_test_series(body, "uringfeed_capture_packets_written_total{feed=\"cap\"}");
	double taken = uf_test_series(body, "uringfeed_capture_packets_total{feed=\"cap\"}");
	assert_true(full > 0);
	assert_true(written > 0);
	assert_true(taken >= written + full);
	assert_true(uf_test_series(body, "uringfeed_capture_files_opened_total{feed=\"cap\"}") >=
	            1);
	assert_true(uf_test_series(body, "uringfeed_capture_dropped_total{feed=\"cap\",reason="
	                                 "\"writer_behind\"}") == 0);

	/* /ready: still ready, and the body says what the capture lost */
	int code = uf_test_http_get(port, "/ready", &body);
	assert_int_equal(code, 200);
	assert_non_null(strstr(body, "ready: 1 feed\n"));
	assert_non_null(strstr(body, "feed cap: capture dropped "));
	assert_non_null(strstr(body, "disk_full "));
	/* /status JSON carries the counters */
	assert_int_equal(uf_test_http_get(port, "/status", &body), 200);
	assert_non_null(strstr(body, "\"capture_dropped_disk_full\":"));
	assert_null(strstr(body, "\"capture_dropped_total\":0"));
	/* one warning for the reason in the log, not one per chunk */
	uf_test_wait_log(tmpdir, "capture dropping (disk full)", 5000);
	assert_int_equal(uf_test_log_count(tmpdir, "capture dropping (disk full)"), 1);

	assert_int_equal(kill(daemon_pid, SIGTERM), 0);
	assert_int_equal(uf_test_wait_exit(daemon_pid, 15000, "uringfeed after SIGTERM"), 0);
	daemon_pid = -1;
	/* what was kept reads as whole pcapng */
	char cmd[512];
	snprintf(cmd, sizeof(cmd),
	         "cat %s/cap-*.pcapng > %s/all.pcapng && %s stats %s/all.pcapng "
	         "> %s/stats.out 2>&1",
	         capdir, tmpdir, uf_test_bin("uf-decode"), tmpdir, tmpdir);
	int rc = system(cmd);
	char out[4096];
	uf_test_read_file(tmpdir, "stats.out", out, sizeof(out));
	if (rc != 0)
		fail_msg("%s: %d\n%s", cmd, rc, out);
	assert_non_null(strstr(out, "\"messages\":"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_daemon_capture_disk_full_mid_day_feed_goes_on,
	                                    setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
