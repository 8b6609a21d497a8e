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

#include "test/common/uf_test_dir.h"
#include "test/common/uf_test_proc.h"

static char tmpdir[64];
static int nfd = -1;    /* the notify socket */
static pid_t dpid = -1; /* the daemon */

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static const char *binpath(const char *dir, const char *name)
{
	static char path[4][512];
	static int i;
	char *p = path[i++ & 3];
	snprintf(p, 512, "%s/%s", dir, name);
	if (access(p, X_OK) != 0)
		fail_msg("cannot run %s: %s (build it first)", p, strerror(errno));
	return p;
}

static const char *bin(const char *name)
{
	const char *dir = getenv("UF_BIN_DIR");
	return binpath(dir ? dir : UF_BIN_DIR, name);
}

/* Forks argv with stdout/stderr to files in tmpdir; `env` ("K=V" strings, NULL-ended) is
 * added to the child's environment, and WATCHDOG_PID set to the child's pid when `wdpid`. */
static pid_t spawn(const char *const argv[], const char *out, const char *err,
                   const char *const env[], int wdpid)
{
	pid_t pid = uf_test_fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char o[256], e[256], p[32];
		snprintf(o, sizeof(o), "%s/%s", tmpdir, out);
		snprintf(e, sizeof(e), "%s/%s", tmpdir, err);
		int fo = open(o, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		int fe = open(e, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		dup2(fo, 1);
		dup2(fe, 2);
		for (int i = 0; env && env[i]; i++)
			putenv((char *)env[i]);
		if (wdpid) { /* as systemd does: the watchdog is this pid's business */
			snprintf(p, sizeof(p), "%d", (int)getpid());
			setenv("WATCHDOG_PID", p, 1);
		}
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	return pid;
}

static int wait_exit(pid_t pid, int timeout_ms, const char *what)
{
	int st;
	uint64_t end = now_ms() + (uint64_t)timeout_ms;
	while (now_ms() < end) {
		if (waitpid(pid, &st, WNOHANG) == pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		usleep(10000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	fail_msg("%s did not exit within %d ms", what, timeout_ms);
	return -1;
}

static char daemon_log[1 << 16];

static const char *wait_log(const char *needle, int timeout_ms)
{
	char p[256];
	uint64_t end = now_ms() + (uint64_t)timeout_ms;
	snprintf(p, sizeof(p), "%s/daemon.err", tmpdir);
	do {
		FILE *f = fopen(p, "r");
		size_t n = f ? fread(daemon_log, 1, sizeof(daemon_log) - 1, f) : 0;
		daemon_log[n] = '\0';
		if (f)
			fclose(f);
		const char *hit = strstr(daemon_log, needle);
		if (hit)
			return hit;
		usleep(20000);
	} while (now_ms() < end);
	fail_msg("daemon log never showed \"%s\"; log:\n%s", needle, daemon_log);
	return NULL;
}

/* GET path on 127.0.0.1:port; the body into a static buffer. */
static int get(uint16_t port, const char *path, const char **body)
{
	static char buf[1 << 20];
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
	size_t len = 0;
	char req[256];
	int fd = socket(AF_INET, SOCK_STREAM, 0), code = -1;

	snprintf(req, sizeof(req),
	         "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n", path);
	inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(write(fd, req, strlen(req)), (ssize_t)strlen(req));
	for (;;) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		assert_int_equal(poll(&p, 1, 5000), 1);
		ssize_t n = read(fd, buf + len, sizeof(buf) - 1 - len);
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	buf[len] = '\0';
	assert_int_equal(sscanf(buf, "HTTP/1.1 %d", &code), 1);
	const char *b = strstr(buf, "\r\n\r\n");
	assert_non_null(b);
	*body = b + 4;
	return code;
}

static double series(const char *text, const char *key)
{
	char k[512];
	snprintf(k, sizeof(k), "\n%s ", key);
	const char *p = strstr(text, k);
	return p ? strtod(p + strlen(k), NULL) : -1;
}

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
	print_message("notify +%llu ms: %s\n", (unsigned long long)(now_ms() % 100000), msg);
	return 1;
}

/* Reads datagrams until one contains `want` (and, when given, `also`): returns it. */
static const char *wait_msg(const char *want, const char *also, int timeout_ms)
{
	static char msg[1024];
	uint64_t end = now_ms() + (uint64_t)timeout_ms;
	while (now_ms() < end) {
		if (!next_msg((int)(end - now_ms()), msg, sizeof(msg)))
			break;
		if (strstr(msg, want) && (!also || strstr(msg, also)))
			return msg;
	}
	fail_msg("no notify datagram with \"%s\"%s%s within %d ms; log:\n%s", want,
	         also ? " and " : "", also ? also : "", timeout_ms, (wait_log("", 0), daemon_log));
	return NULL;
}

/* Counts datagrams starting with `what` during ms milliseconds. */
static int count_msgs(const char *what, int ms)
{
	char msg[1024];
	int n = 0;
	uint64_t end = now_ms() + (uint64_t)ms;
	while (now_ms() < end)
		if (next_msg((int)(end - now_ms()), msg, sizeof(msg)) &&
		    strncmp(msg, what, strlen(what)) == 0)
			n++;
	return n;
}

static int setup(void **state)
{
	(void)state;
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/uf-sdn-XXXXXX");
	if (!mkdtemp(tmpdir))
		return -1;
	setenv("UF_RING_DIR", tmpdir, 1);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	if (dpid > 0) {
		kill(dpid, SIGKILL);
		waitpid(dpid, NULL, 0);
	}
	if (nfd >= 0)
		close(nfd);
	return uf_test_rm_tree(tmpdir);
}

static void test_notify_ready_watchdog_status_stopping(void **state)
{
	(void)state;
	char day[256], cfg[256], json[2048], grp[32], sock[128], envs[4][192], dst[64];
	const char *body, *m;
	int pid = (int)getpid(), on = 1;
	int port = 47000 + (pid % 900);

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
	snprintf(cfg, sizeof(cfg), "%s/uf.json", tmpdir);
	snprintf(grp, sizeof(grp), "239.78.%d.1", pid % 250);
	const char *gen[] = {bin("uf-gen"), "--out", day,      "--messages", "3000",
	                     "--symbols",   "10",    "--seed", "5",          NULL};
	assert_int_equal(wait_exit(spawn(gen, "gen.out", "gen.err", NULL, 0), 20000, "uf-gen"), 0);
	snprintf(json, sizeof(json),
	         "{\"status\":{\"listen\":\"127.0.0.1:0\"},\"log\":{\"journal\":\"never\"},"
	         "\"feeds\":[{\"name\":\"sd\",\"backend\":\"epoll\",\"cpu\":-1,"
	         "\"lines\":[{\"name\":\"A\",\"group\":\"%s\",\"port\":%d,\"interface\":"
	         "\"127.0.0.1\"}],"
	         "\"ring\":{\"name\":\"uf_sdn_%d\",\"capacity\":65536},"
	         "\"book\":{\"max_orders\":100000}}]}",
	         grp, port, pid);
	FILE *f = fopen(cfg, "w");
	assert_non_null(f);
	fputs(json, f);
	fclose(f);

	snprintf(envs[0], sizeof(envs[0]), "NOTIFY_SOCKET=%s", sock);
	snprintf(envs[1], sizeof(envs[1]), "WATCHDOG_USEC=1000000");
	snprintf(envs[2], sizeof(envs[2]), "UF_TEST_STALL_FEED=sd");
	const char *env[] = {envs[0], envs[1], envs[2], NULL};
	const char *dargv[] = {binpath(UF_TEST_BIN_DIR, "uringfeed-test-hooks"), "--config", cfg,
	                       NULL};
	dpid = spawn(dargv, "daemon.out", "daemon.err", env, 1);
	const char *p = wait_log("serving http://127.0.0.1:", 10000);
	uint16_t hport = (uint16_t)atoi(p + strlen("serving http://127.0.0.1:"));

	/* The feed thread is stalled before its loop ever ran: the main loop runs (its first
	 * STATUS= arrives) but says "starting", and neither READY=1 nor a ping comes in four
	 * watchdog periods of 0.5 s. */
	wait_msg("STATUS=starting: feeds ", NULL, 10000);
	char msg[1024];
	uint64_t end = now_ms() + 2000;
	while (now_ms() < end)
		if (next_msg((int)(end - now_ms()), msg, sizeof(msg))) {
			assert_null(strstr(msg, "READY=1"));
			assert_null(strstr(msg, "WATCHDOG=1"));
		}
	assert_int_equal(get(hport, "/metrics", &body), 200);
	assert_true(series(body, "uringfeed_busy_polls_total{feed=\"sd\"}") == 0);
	assert_true(series(body, "uringfeed_batches_total{feed=\"sd\"}") == 0);

	/* Released: READY=1 once the loop has run (it counted passes), then pings. */
	assert_int_equal(kill(dpid, SIGUSR2), 0);
	wait_msg("READY=1", NULL, 5000);
	assert_int_equal(get(hport, "/metrics", &body), 200);
	assert_true(series(body, "uringfeed_busy_polls_total{feed=\"sd\"}") +
	                series(body, "uringfeed_batches_total{feed=\"sd\"}") >=
	            1);
	wait_msg("STATUS=feeds 1/1 running, 0 msgs", NULL, 3000);
	wait_msg("WATCHDOG=1", NULL, 3000);
	wait_msg("WATCHDOG=1", NULL, 3000);

	/* Traffic: STATUS= follows the message count and names the session. */
	snprintf(dst, sizeof(dst), "%s:%d", grp, port);
	const char *rargv[] = {bin("uf-replay"), "--in",      day,      "--a",   dst,
	                       "--interface",    "127.0.0.1", "--rate", "20000", NULL};
	assert_int_equal(
	    wait_exit(spawn(rargv, "replay.out", "replay.err", NULL, 0), 20000, "uf-replay"), 0);
	m = wait_msg("STATUS=feeds 1/1 running, 3000 msgs, 0 stale books, session ", NULL, 5000);
	print_message("status after the replay: %s\n", m);

	/* SIGHUP: RELOADING=1 (with the monotonic time Type=notify-reload wants), READY=1. */
	assert_int_equal(kill(dpid, SIGHUP), 0);
	wait_msg("RELOADING=1\nMONOTONIC_USEC=", NULL, 5000);
	wait_msg("READY=1", NULL, 5000);
	wait_log("reload: done", 5000);

	/* Stalled: STATUS= names the stuck feed; from then on no ping in 4 periods. */
	assert_int_equal(kill(dpid, SIGUSR2), 0);
	wait_msg("STATUS=feeds 0/1 running", "feed sd stuck (no heartbeat)", 5000);
	assert_int_equal(count_msgs("WATCHDOG=1", 2000), 0);
	wait_log("watchdog: feed sd: its thread made no progress", 1000);

	/* Released again: the pings resume and the status clears. */
	assert_int_equal(kill(dpid, SIGUSR2), 0);
	wait_msg("WATCHDOG=1", NULL, 3000);
	m = wait_msg("STATUS=feeds 1/1 running", NULL, 3000);
	assert_null(strstr(m, "stuck"));

	/* SIGTERM: STOPPING=1, then a clean exit. */
	assert_int_equal(kill(dpid, SIGTERM), 0);
	wait_msg("STOPPING=1", NULL, 5000);
	assert_int_equal(wait_exit(dpid, 15000, "uringfeed after SIGTERM"), 0);
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
