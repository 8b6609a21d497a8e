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

#include "test/common/uf_test_dir.h"
#include "test/common/uf_test_proc.h"
#include "test/daemon/promtool_util.h"

static char tmpdir[64];

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static const char *binpath(const char *name)
{
	static char path[4][512];
	static int i;
	const char *dir = getenv("UF_BIN_DIR");
	char *p = path[i++ & 3];
	snprintf(p, 512, "%s/%s", dir ? dir : UF_BIN_DIR, name);
	if (access(p, X_OK) != 0)
		fail_msg("cannot run %s: %s (build it first)", p, strerror(errno));
	return p;
}

static pid_t spawn(const char *const argv[], const char *out, const char *err)
{
	pid_t pid = uf_test_fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char o[256], e[256];
		snprintf(o, sizeof(o), "%s/%s", tmpdir, out);
		snprintf(e, sizeof(e), "%s/%s", tmpdir, err);
		int fo = open(o, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		int fe = open(e, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		dup2(fo, 1);
		dup2(fe, 2);
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

static void read_file(const char *name, char *buf, size_t len)
{
	char p[256];
	snprintf(p, sizeof(p), "%s/%s", tmpdir, name);
	FILE *f = fopen(p, "r");
	size_t n = f ? fread(buf, 1, len - 1, f) : 0;
	buf[n] = '\0';
	if (f)
		fclose(f);
}

static char daemon_log[1 << 16];

static const char *wait_log(const char *needle, int timeout_ms)
{
	uint64_t end = now_ms() + (uint64_t)timeout_ms;
	do {
		read_file("daemon.err", daemon_log, sizeof(daemon_log));
		const char *p = strstr(daemon_log, needle);
		if (p)
			return p;
		usleep(20000);
	} while (now_ms() < end);
	fail_msg("daemon log never showed \"%s\"; log:\n%s", needle, daemon_log);
	return NULL;
}

/* Lines of the daemon's log that contain `needle`. */
static int log_count(const char *needle)
{
	int n = 0;
	read_file("daemon.err", daemon_log, sizeof(daemon_log));
	for (const char *p = daemon_log; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

/* GET path: status code, body into a static buffer. */
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

/* Value of one series in an exposition text, -1 when absent. */
static double series(const char *text, const char *key)
{
	char k[512];
	snprintf(k, sizeof(k), "\n%s ", key);
	const char *p = strstr(text, k);
	return p ? strtod(p + strlen(k), NULL) : -1;
}

static void check_promtool(const char *text)
{
	char out[8192];
	int rc = uf_promtool_check(text, out, sizeof(out));
	if (rc != 0 || out[0])
		fail_msg("promtool check metrics on the live /metrics: exit %d:\n%s", rc, out);
}

static int setup(void **state)
{
	(void)state;
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/uf-live-XXXXXX");
	if (!mkdtemp(tmpdir))
		return -1;
	setenv("UF_RING_DIR", tmpdir, 1);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	return uf_test_rm_tree(tmpdir);
}

static void test_live_metrics_ready_and_event_log(void **state)
{
	(void)state;
	char day[256], cfg[256], json[2048], ga[32], gb[32];
	const char *body;
	int pid = (int)getpid();
	int port_a = 46000 + (pid % 500) * 2, port_b = port_a + 1;

	snprintf(day, sizeof(day), "%s/day.itch", tmpdir);
	snprintf(cfg, sizeof(cfg), "%s/uf.json", tmpdir);
	snprintf(ga, sizeof(ga), "239.77.%d.1", pid % 250);
	snprintf(gb, sizeof(gb), "239.77.%d.2", pid % 250);
	const char *gen[] = {binpath("uf-gen"), "--out", day,      "--messages", "20000",
	                     "--symbols",       "20",    "--seed", "3",          NULL};
	assert_int_equal(wait_exit(spawn(gen, "gen.out", "gen.err"), 20000, "uf-gen"), 0);
	snprintf(json, sizeof(json),
	         "{\"status\":{\"listen\":\"127.0.0.1:0\",\"probe_listen\":\"127.0.0.1:0\","
	         "\"ready_silence_ms\":300},"
	         "\"log\":{\"level\":\"info\",\"journal\":\"always\"},"
	         "\"feeds\":[{\"name\":\"live\",\"backend\":\"epoll\",\"cpu\":-1,"
	         "\"lines\":[{\"name\":\"A\",\"group\":\"%s\",\"port\":%d,\"interface\":"
	         "\"127.0.0.1\"},{\"name\":\"B\",\"group\":\"%s\",\"port\":%d,\"interface\":"
	         "\"127.0.0.1\"}],"
	         "\"ring\":{\"name\":\"uf_live_%d\",\"capacity\":262144},"
	         "\"book\":{\"max_orders\":1000000}}]}",
	         ga, port_a, gb, port_b, pid);
	FILE *f = fopen(cfg, "w");
	assert_non_null(f);
	fputs(json, f);
	fclose(f);

	const char *dargv[] = {binpath("uringfeed"), "--config", cfg, NULL};
	pid_t daemon = spawn(dargv, "daemon.out", "daemon.err");
	const char *p = wait_log("serving http://127.0.0.1:", 10000);
	uint16_t port = (uint16_t)atoi(p + strlen("serving http://127.0.0.1:"));
	p = wait_log("probe endpoint http://127.0.0.1:", 10000);
	uint16_t probe = (uint16_t)atoi(p + strlen("probe endpoint http://127.0.0.1:"));
	wait_log("<6>running;", 10000); /* journal format: priority prefix, no timestamp */

	/* Before any data: not ready, and says so; alive all the same. */
	assert_int_equal(get(probe, "/ready", &body), 503);
	assert_string_equal(body, "feed live: no data received yet\n");
	assert_int_equal(get(probe, "/health", &body), 200);
	assert_int_equal(get(port, "/metrics", &body), 200); /* empty histograms, NaN ages */
	check_promtool(body);
	assert_non_null(
	    strstr(body, "uringfeed_line_last_packet_age_seconds{feed=\"live\",line=\"B\"} NaN\n"));
	assert_true(series(body, "uringfeed_ready{feed=\"live\"}") == 0);

	char dst[64];
	snprintf(dst, sizeof(dst), "%s:%d", ga, port_a);
	const char *rargv[] = {
	    binpath("uf-replay"), "--in",   day,     "--a",      dst,     "--interface",
	    "127.0.0.1",          "--rate", "10000", "--drop-a", "@5000", NULL};
	pid_t replay = spawn(rargv, "replay.out", "replay.err");

	/* During the session line B is silent: 503 naming it. */
	uint64_t end = now_ms() + 10000;
	int code;
	do {
		code = get(port, "/ready", &body);
		if (strstr(body, "line B has received nothing this session"))
			break;
		usleep(50000);
	} while (now_ms() < end);
	assert_int_equal(code, 503);
	assert_non_null(strstr(body, "feed live: line B has received nothing this session\n"));

	/* The live exposition, mid-traffic, is clean for promtool; every stage is timed. */
	assert_int_equal(get(port, "/metrics", &body), 200);
	check_promtool(body);
	static const char *const stages[] = {"receive", "arbitration", "decode",
	                                     "books",   "ring",        "image"};
	for (size_t i = 0; i < sizeof(stages) / sizeof(stages[0]); i++) {
		char k[128];
		snprintf(k, sizeof(k), "uringfeed_stage_seconds_count{feed=\"live\",stage=\"%s\"}",
		         stages[i]);
		if (!(series(body, k) > 0))
			fail_msg("no samples in %s", k);
	}
	assert_true(series(body, "uringfeed_wire_to_publish_seconds_count{feed=\"live\"}") > 0);
	assert_true(series(body, "process_resident_memory_bytes") > 1e6);
	assert_true(series(body, "process_open_fds") > 3);

	assert_int_equal(wait_exit(replay, 20000, "uf-replay"), 0);
	/* After the gap and the end of session: stale books keep it unready. */
	end = now_ms() + 10000;
	do {
		code = get(port, "/ready", &body);
		if (strstr(body, "books stale") && !strstr(body, "line B"))
			break;
		usleep(50000);
	} while (now_ms() < end);
	assert_int_equal(code, 503);
	assert_non_null(strstr(body, "books stale (an unrecovered gap"));
	assert_null(strstr(body, "line B")); /* after the end of session silence is normal */
	assert_int_equal(get(port, "/metrics", &body), 200);
	check_promtool(body);
	assert_true(series(body, "uringfeed_gaps_unrecovered_total{feed=\"live\"}") == 1);
	assert_true(series(body, "uringfeed_books_stale{feed=\"live\"}") > 0);
	assert_true(series(body, "uringfeed_session_ended{feed=\"live\"}") == 1);
	assert_true(series(body, "uringfeed_recovery_in_progress{feed=\"live\"}") == 0);

	/* The main loop wrote one line per event, with journald priorities. */
	wait_log("<4>feed live: 1 gap given up", 5000);
	wait_log("<4>feed live: line B silent: no packet this session", 5000);
	wait_log("<6>feed live: end of session", 5000);
	assert_int_equal(log_count("gap given up"), 1);
	assert_int_equal(log_count("line B silent"), 1);
	assert_int_equal(log_count("line B back"), 0);
	print_message("daemon log:\n%s", daemon_log);

	assert_int_equal(kill(daemon, SIGTERM), 0);
	assert_int_equal(wait_exit(daemon, 15000, "uringfeed after SIGTERM"), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_live_metrics_ready_and_event_log, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
