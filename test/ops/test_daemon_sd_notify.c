/* The daemon under a fake systemd: the test binds the Unix datagram socket $NOTIFY_SOCKET
 * names, sets WATCHDOG_USEC (1 s: pings every 0.5 s) and WATCHDOG_PID, and runs the real
 * daemon built with UF_TEST_HOOKS (uringfeed-test-hooks: the same main.c and daemon.c, plus
 * the stall hook of daemon.c). UF_TEST_STALL_FEED names the feed whose thread starts stalled;
 * SIGUSR2 toggles the stall. A stalled feed thread blocks outside its loop while the main loop
 * runs on, so this is the case the watchdog exists for (SIGSTOP would stop the main loop too).
 *   - before the feed loop ever ran: STATUS= "starting", and neither READY=1 nor WATCHDOG=1;
 *   - released: READY=1 from the daemon's pid (SCM_CREDENTIALS), the loop has counted passes,
 *     then WATCHDOG=1 pings;
 *   - a replay: STATUS= carries the message count and the session;
 *   - SIGHUP: RELOADING=1 with MONOTONIC_USEC, then READY=1;
 *   - stalled: STATUS= names the stuck feed and no WATCHDOG=1 comes for 4 periods; released,
 *     pings resume and STATUS= says 1/1 running again;
 *   - SIGTERM: STOPPING=1 and exit 0. */
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
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "test/common/uf_test_daemon.h"
#include "test/common/uf_test_dir.h"

static char tmpdir[64];
static int nfd = -1;    /* the notify socket */
static pid_t dpid = -1; /* the daemon */

/* Next notify datagram within timeout_ms into msg (NUL-terminated); 0 on timeout. Checks the
 * sender is the daemon (the kernel's SCM_CREDENTIALS, what NotifyAccess=main relies on). */
static int next_msg(int timeout_ms, char *msg, size_t len)
{
	struct pollfd p = {.fd = nfd, .events = POLLIN};
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(struct ucred))];
	} ctl;
	struct iovec iov = {.iov_base = msg, .iov_len = len - 1};
	struct msghdr mh = {
	    .msg_iov = &iov, .msg_iovlen = 1, .msg_control = &ctl, .msg_controllen = sizeof(ctl)};

	if (timeout_ms < 0)
		timeout_ms = 0;
	if (poll(&p, 1, timeout_ms) != 1)
		return 0;
	ssize_t n = recvmsg(nfd, &mh, 0);
	assert_true(n >= 0);
	msg[n] = '\0';
	struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
	assert_non_null(c);
	assert_int_equal(c->cmsg_type, SCM_CREDENTIALS);
	struct ucred cr;
	memcpy(&cr, CMSG_DATA(c), sizeof(cr));
	if (cr.pid != dpid)
		fail_msg("notify datagram \"%s\" from pid %d, not the daemon %d", msg, (int)cr.pid,
		         (int)dpid);
	print_message("notify +%llu ms: %s\n", (unsigned long long)(uf_test_now_ms() % 100000),
	              msg);
	return 1;
}

/* Reads datagrams until one contains `want` (and, when given, `also`): returns it. */
static const char *wait_msg(const char *want, const char *also, int timeout_ms)
{
	static char msg[1024];
	uint64_t end = uf_test_now_ms() + (uint64_t)timeout_ms;
	while (uf_test_now_ms() < end) {
		if (!next_msg((int)(end - uf_test_now_ms()), msg, sizeof(msg)))
			break;
		if (strstr(msg, want) && (!also || strstr(msg, also)))
			return msg;
	}
	fail_msg("no notify datagram with \"%s\"%s%s within %d ms; log:\n%s", want,
	         also ? " and " : "", also ? also : "", timeout_ms, uf_test_read_log(tmpdir));
	return NULL;
}

/* Counts datagrams starting with `what` during ms milliseconds. */
static int count_msgs(const char *what, int ms)
{
	char msg[1024];
	int n = 0;
	uint64_t end = uf_test_now_ms() + (uint64_t)ms;
	while (uf_test_now_ms() < end)
		if (next_msg((int)(end - uf_test_now_ms()), msg, sizeof(msg)) &&
		    strncmp(msg, what, strlen(what)) == 0)
			n++;
	return n;
}

static int setup(void **state)
{
	(void)state;
	return uf_test_daemon_dir(tmpdir, sizeof(tmpdir), "sdn");
}

static int teardown(void **state)
{
	(void)state;
	if (nfd >= 0)
		close(nfd);
	return uf_test_daemon_cleanup(tmpdir, &dpid);
}

static void test_notify_ready_watchdog_status_stopping(void **state)
{
	(void)state;
	char day[256], sock[128], envs[4][192];
	const char *body, *m;
	int on = 1;

	/* The fake systemd's end: a datagram socket that receives the sender's credentials. */
	snprintf(sock, sizeof(sock), "%s/notify", tmpdir);
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	assert_true(strlen(sock) < sizeof(sa.sun_path));
	memcpy(sa.sun_path, sock, strlen(sock) + 1);
	nfd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	assert_true(nfd >= 0);
	assert_int_equal(bind(nfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(setsockopt(nfd, SOL_SOCKET, SO_PASSCRED, &on, sizeof(on)), 0);

	snprintf(day, sizeof(day), "%s/day.itch", tmpdir);
	uf_test_gen_day(tmpdir, day, "3000", "10", "5");
	struct uf_test_feed feed = {.name = "sd", .capacity = 65536, .max_orders = 100000};
	uf_test_feed_unique(&feed, 1, 78, 27000, 450, "sdn");
	uf_test_write_feed_config(tmpdir, &feed);

	snprintf(envs[0], sizeof(envs[0]), "NOTIFY_SOCKET=%s", sock);
	snprintf(envs[1], sizeof(envs[1]), "WATCHDOG_USEC=1000000");
	snprintf(envs[2], sizeof(envs[2]), "UF_TEST_STALL_FEED=sd");
	const char *env[] = {envs[0], envs[1], envs[2], NULL};
	dpid = uf_test_daemon_start(
	    tmpdir, uf_test_binpath(UF_TEST_BIN_DIR, "uringfeed-test-hooks"), env, 1);
	uint16_t hport = uf_test_status_port(tmpdir);

	/* The feed thread is stalled before its loop ever ran: the main loop runs (its first
	 * STATUS= arrives) but says "starting", and neither READY=1 nor a ping comes in four
	 * watchdog periods of 0.5 s. */
	wait_msg("STATUS=starting: feeds ", NULL, 10000);
	char msg[1024];
	uint64_t end = uf_test_now_ms() + 2000;
	while (uf_test_now_ms() < end)
		if (next_msg((int)(end - uf_test_now_ms()), msg, sizeof(msg))) {
			assert_null(strstr(msg, "READY=1"));
			assert_null(strstr(msg, "WATCHDOG=1"));
		}
	assert_int_equal(uf_test_http_get(hport, "/metrics", &body), 200);
	assert_true(uf_test_series(body, "uringfeed_busy_polls_total{feed=\"sd\"}") == 0);
	assert_true(uf_test_series(body, "uringfeed_batches_total{feed=\"sd\"}") == 0);

	/* Released: READY=1 once the loop has run (it counted passes), then pings. */
	assert_int_equal(kill(dpid, SIGUSR2), 0);
	wait_msg("READY=1", NULL, 5000);
	assert_int_equal(uf_test_http_get(hport, "/metrics", &body), 200);
	assert_true(uf_test_series(body, "uringfeed_busy_polls_total{feed=\"sd\"}") +
	                uf_test_series(body, "uringfeed_batches_total{feed=\"sd\"}") >=
	            1);
	wait_msg("STATUS=feeds 1/1 running, 0 msgs", NULL, 3000);
	wait_msg("WATCHDOG=1", NULL, 3000);
	wait_msg("WATCHDOG=1", NULL, 3000);

	/* Traffic: STATUS= follows the message count and names the session. */
	pid_t replay = uf_test_replay_start(tmpdir, day, &feed, 1, "20000", NULL);
	assert_int_equal(uf_test_wait_exit(replay, 20000, "uf-replay"), 0);
	m = wait_msg("STATUS=feeds 1/1 running, 3000 msgs, 0 stale books, session ", NULL, 5000);
	print_message("status after the replay: %s\n", m);

	/* SIGHUP: RELOADING=1 (with the monotonic time Type=notify-reload wants), READY=1. */
	assert_int_equal(kill(dpid, SIGHUP), 0);
	wait_msg("RELOADING=1\nMONOTONIC_USEC=", NULL, 5000);
	wait_msg("READY=1", NULL, 5000);
	uf_test_wait_log(tmpdir, "reload: done", 5000);

	/* Stalled: STATUS= names the stuck feed; from then on no ping in 4 periods. */
	assert_int_equal(kill(dpid, SIGUSR2), 0);
	wait_msg("STATUS=feeds 0/1 running", "feed sd stuck (no heartbeat)", 5000);
	assert_int_equal(count_msgs("WATCHDOG=1", 2000), 0);
	uf_test_wait_log(tmpdir, "watchdog: feed sd: its thread made no progress", 1000);

	/* Released again: the pings resume and the status clears. */
	assert_int_equal(kill(dpid, SIGUSR2), 0);
	wait_msg("WATCHDOG=1", NULL, 3000);
	m = wait_msg("STATUS=feeds 1/1 running", NULL, 3000);
	assert_null(strstr(m, "stuck"));

	/* SIGTERM: STOPPING=1, then a clean exit. */
	assert_int_equal(kill(dpid, SIGTERM), 0);
	wait_msg("STOPPING=1", NULL, 5000);
	assert_int_equal(uf_test_wait_exit(dpid, 15000, "uringfeed after SIGTERM"), 0);
	dpid = -1;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_notify_ready_watchdog_status_stopping, setup,
	                                    teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
