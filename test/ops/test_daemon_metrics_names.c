/* The alert rules and the dashboard name only metrics the daemon really exports: a live
 * daemon (epoll feed, two lines), a consumer attached (uf-tail), a short replay of a
 * generated day (so the session, line ages, histograms and consumer families all have
 * samples); then every uringfeed_* / process_* name used in
 * configs/prometheus/uringfeed-alerts.yml and configs/grafana/uringfeed-dashboard.json must
 * be in that scrape: as a sample's name (`_bucket`, `_sum`, `_count` are matched as the
 * sample names they are), or as a family's name in a `# TYPE` line (a histogram named
 * without its suffix). So the monitoring cannot drift from the exporter again. The checker
 * itself must report a name that is not exported (uringfeed_session_open, the name the rules
 * used before). */
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

static char tmpdir[64];
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

/* The names used in a rules or dashboard text: uringfeed_* and process_* identifiers that
 * are not part of a longer identifier or a recording rule's name (feed:uringfeed_...:p99). */
static int used_names(const char *text, char names[][96], int max)
{
	int n = 0;
	for (const char *p = text; *p; p++) {
		if (strncmp(p, "uringfeed_", 10) != 0 && strncmp(p, "process_", 8) != 0)
			continue;
		if (p > text && (p[-1] == ':' || p[-1] == '_' || (p[-1] >= 'a' && p[-1] <= 'z') ||
		                 (p[-1] >= 'A' && p[-1] <= 'Z') || (p[-1] >= '0' && p[-1] <= '9')))
			continue;
		size_t len = strspn(p, "abcdefghijklmnopqrstuvwxyz0123456789_");
		char name[96];
		snprintf(name, sizeof(name), "%.*s", (int)len, p);
		p += len - 1;
		int dup = 0;
		for (int i = 0; i < n && !dup; i++)
			dup = strcmp(names[i], name) == 0;
		if (!dup && n < max)
			snprintf(names[n++], sizeof(names[0]), "%s", name);
	}
	return n;
}

/* 1 when `name` is in the exposition text: a sample line starting with it (then '{' or ' '),
 * or a "# TYPE name " family line. */
static int exported(const char *scrape, const char *name)
{
	char k[160];
	const char *forms[] = {"\n%s{", "\n%s ", "\n# TYPE %s "};
	for (size_t i = 0; i < 3; i++) {
		snprintf(k, sizeof(k), forms[i], name);
		if (strstr(scrape, k))
			return 1;
	}
	return 0;
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		fail_msg("cannot read %s: %s", path, strerror(errno));
	static char buf[4][1 << 17];
	static int i;
	char *b = buf[i++ & 3];
	size_t n = fread(b, 1, sizeof(buf[0]) - 1, f);
	b[n] = '\0';
	fclose(f);
	return b;
}

static int setup(void **state)
{
	(void)state;
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/uf-names-XXXXXX");
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
	return uf_test_rm_tree(tmpdir);
}

static void test_rules_and_dashboard_use_exported_names(void **state)
{
	(void)state;
	char day[256], cfg[256], json[2048], ga[32], gb[32], da[64], db[64], ring[64];
	static char scrape[1 << 20];
	static char names[256][96];
	const char *body;
	int pid = (int)getpid();
	int port_a = 45000 + (pid % 400) * 2, port_b = port_a + 1;

	snprintf(day, sizeof(day), "%s/day.itch", tmpdir);
	snprintf(cfg, sizeof(cfg), "%s/uf.json", tmpdir);
	snprintf(ga, sizeof(ga), "239.79.%d.1", pid % 250);
	snprintf(gb, sizeof(gb), "239.79.%d.2", pid % 250);
	snprintf(ring, sizeof(ring), "uf_names_%d", pid);
	const char *gen[] = {bin("uf-gen"), "--out", day,      "--messages", "5000",
	                     "--symbols",   "10",    "--seed", "7",          NULL};
	assert_int_equal(wait_exit(spawn(gen, "gen.out", "gen.err", NULL, 0), 20000, "uf-gen"), 0);
	snprintf(json, sizeof(json),
	         "{\"status\":{\"listen\":\"127.0.0.1:0\"},\"log\":{\"journal\":\"never\"},"
	         "\"feeds\":[{\"name\":\"names\",\"backend\":\"epoll\",\"cpu\":-1,"
	         "\"lines\":[{\"name\":\"A\",\"group\":\"%s\",\"port\":%d,\"interface\":"
	         "\"127.0.0.1\"},{\"name\":\"B\",\"group\":\"%s\",\"port\":%d,\"interface\":"
	         "\"127.0.0.1\"}],"
	         "\"ring\":{\"name\":\"%s\",\"capacity\":65536},"
	         "\"book\":{\"max_orders\":100000}}]}",
	         ga, port_a, gb, port_b, ring);
	FILE *f = fopen(cfg, "w");
	assert_non_null(f);
	fputs(json, f);
	fclose(f);

	const char *dargv[] = {bin("uringfeed"), "--config", cfg, NULL};
	dpid = spawn(dargv, "daemon.out", "daemon.err", NULL, 0);
	const char *p = wait_log("serving http://127.0.0.1:", 10000);
	uint16_t hport = (uint16_t)atoi(p + strlen("serving http://127.0.0.1:"));
	wait_log("running;", 10000);

	/* A consumer, attached before the traffic (it ends when the daemon closes the ring). */
	const char *targv[] = {bin("uf-tail"), "--ring", ring, "--timeout", "60", NULL};
	pid_t tail = spawn(targv, "tail.out", "tail.err", NULL, 0);
	uint64_t end = now_ms() + 10000;
	do {
		assert_int_equal(get(hport, "/metrics", &body), 200);
		if (strstr(body, "\nuringfeed_consumer_lag_records{"))
			break;
		usleep(20000);
	} while (now_ms() < end);
	assert_non_null(strstr(body, "\nuringfeed_consumer_lag_records{"));

	snprintf(da, sizeof(da), "%s:%d", ga, port_a);
	snprintf(db, sizeof(db), "%s:%d", gb, port_b);
	const char *rargv[] = {bin("uf-replay"), "--in",      day,      "--a",   da,  "--b", db,
	                       "--interface",    "127.0.0.1", "--rate", "20000", NULL};
	assert_int_equal(
	    wait_exit(spawn(rargv, "replay.out", "replay.err", NULL, 0), 20000, "uf-replay"), 0);
	end = now_ms() + 10000;
	do {
		assert_int_equal(get(hport, "/metrics", &body), 200);
		if (series(body, "uringfeed_messages_total{feed=\"names\"}") == 5000)
			break;
		usleep(20000);
	} while (now_ms() < end);
	assert_true(series(body, "uringfeed_messages_total{feed=\"names\"}") == 5000);
	snprintf(scrape, sizeof(scrape), "\n%s", body); /* every line starts after a '\n' */

	/* Every name the rules and the dashboard use is in the scrape. */
	char path[512];
	int n = 0, missing = 0;
	snprintf(path, sizeof(path), "%s/configs/prometheus/uringfeed-alerts.yml", UF_SOURCE_DIR);
	n = used_names(slurp(path), names, 256);
	int nrules = n;
	snprintf(path, sizeof(path), "%s/configs/grafana/uringfeed-dashboard.json", UF_SOURCE_DIR);
	char(*rest)[96] = names + n;
	int nd = used_names(slurp(path), rest, 256 - n);
	/* (duplicates across the two files are checked twice: harmless) */
	n += nd;
	assert_true(nrules >= 10);
	assert_true(nd >= 15);
	for (int i = 0; i < n; i++) {
		if (exported(scrape, names[i]))
			continue;
		print_error("%s is used by %s but not exported by the daemon\n", names[i],
		            i < nrules ? "the alert rules" : "the dashboard");
		missing++;
	}
	print_message("%d names in the rules, %d in the dashboard, %d missing\n", nrules, nd,
	              missing);
	assert_int_equal(missing, 0);
	/* The checker does see a name that is not exported, or an old one. */
	assert_false(exported(scrape, "uringfeed_session_open"));
	assert_false(exported(scrape, "uringfeed_wire_to_publish_ns"));
	assert_true(exported(scrape, "uringfeed_wire_to_publish_seconds"));
	assert_true(exported(scrape, "uringfeed_wire_to_publish_seconds_bucket"));
	char probe[2][96];
	assert_int_equal(used_names("x feed:uringfeed_a:p99 uringfeed_b_total{} my_uringfeed_c "
	                            "process_open_fds",
	                            probe, 2),
	                 2);
	assert_string_equal(probe[0], "uringfeed_b_total");
	assert_string_equal(probe[1], "process_open_fds");

	assert_int_equal(kill(dpid, SIGTERM), 0);
	assert_int_equal(wait_exit(dpid, 15000, "uringfeed after SIGTERM"), 0);
	dpid = -1;
	assert_int_equal(wait_exit(tail, 10000, "uf-tail after the ring closed"), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_rules_and_dashboard_use_exported_names, setup,
	                                    teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
