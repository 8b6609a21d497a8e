/* The running daemon (or any built tool) under test, as the daemon tests drive it: started
 * with its stdout/stderr in files of the test's scratch folder, waited for (bounded) through
 * its log or its exit, asked over HTTP on loopback. One copy for every test that runs the
 * real uringfeed (test/daemon/test_daemon_*.c, test/ops/test_daemon_*.c), so a fix to how a
 * test waits or reads a reply reaches all of them.
 *
 * `dir` is the test's scratch folder: the children's output files and the daemon's config
 * live there, and the daemon's log is `dir`/daemon.err (start the daemon with
 * uf_test_spawn(dir, argv, "daemon.out", "daemon.err", ...)). Include after cmocka.h: every
 * helper fails the test rather than return an error. */
#ifndef UF_TEST_DAEMON_H
#define UF_TEST_DAEMON_H

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "test/common/uf_test_dir.h"
#include "test/common/uf_test_port.h"
#include "test/common/uf_test_proc.h"

/* A scratch folder /tmp/uf-`name`-XXXXXX into dir[len], which the daemon and the consumers
 * the test starts also take for their rings (UF_RING_DIR). 0, or -1 (a cmocka setup's
 * failure). */
static inline int uf_test_daemon_dir(char *dir, size_t len, const char *name)
{
	snprintf(dir, len, "/tmp/uf-%s-XXXXXX", name);
	if (!mkdtemp(dir))
		return -1;
	setenv("UF_RING_DIR", dir, 1);
	return 0;
}

/* Kills *pid (when > 0) and reaps it, then sets it to -1: a teardown's end for a process a
 * failed test left running. */
static inline void uf_test_kill(pid_t *pid)
{
	if (*pid > 0) {
		kill(*pid, SIGKILL);
		waitpid(*pid, NULL, 0);
	}
	*pid = -1;
}

static inline uint64_t uf_test_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* `dir`/`name`, which must be executable (else the test fails: build it first). The result
 * stays valid for the next three calls (an argv names several tools). */
static inline const char *uf_test_binpath(const char *dir, const char *name)
{
	static char path[4][512];
	static int i;
	char *p = path[i++ & 3];
	snprintf(p, 512, "%s/%s", dir, name);
	if (access(p, X_OK) != 0)
		fail_msg("cannot run %s: %s (build it first)", p, strerror(errno));
	return p;
}

/* A tool of the build's bin folder: $UF_BIN_DIR (CTest sets it), else the configured one. */
static inline const char *uf_test_bin(const char *name)
{
	const char *dir = getenv("UF_BIN_DIR");
	return uf_test_binpath(dir ? dir : UF_BIN_DIR, name);
}

/* Forks argv with stdout/stderr to the files `out` and `err` in `dir`; `env` ("K=V" strings,
 * NULL-ended, or NULL) is added to the child's environment, and WATCHDOG_PID set to the
 * child's pid when `wdpid`. The child dies with the test (uf_test_fork()). */
static inline pid_t uf_test_spawn(const char *dir, const char *const argv[], const char *out,
                                  const char *err, const char *const env[], int wdpid)
{
	pid_t pid = uf_test_fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char o[256], e[256], p[32];
		snprintf(o, sizeof(o), "%s/%s", dir, out);
		snprintf(e, sizeof(e), "%s/%s", dir, err);
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

/* Exit status of pid (128 + signal when killed) within timeout_ms, or fails the test after
 * killing it. */
static inline int uf_test_wait_exit(pid_t pid, int timeout_ms, const char *what)
{
	int st;
	uint64_t end = uf_test_now_ms() + (uint64_t)timeout_ms;
	while (uf_test_now_ms() < end) {
		if (waitpid(pid, &st, WNOHANG) == pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		usleep(10000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	fail_msg("%s did not exit within %d ms", what, timeout_ms);
	return -1;
}

/* Runs argv to its end within timeout_ms (output to `name`.out/.err in `dir`); its exit
 * status. A failure names the tool (argv[0]'s last part). */
static inline int uf_test_run_tool(const char *dir, const char *const argv[], const char *name,
                                   int timeout_ms)
{
	char out[64], err[64];
	const char *tool = strrchr(argv[0], '/');
	snprintf(out, sizeof(out), "%s.out", name);
	snprintf(err, sizeof(err), "%s.err", name);
	return uf_test_wait_exit(uf_test_spawn(dir, argv, out, err, NULL, 0), timeout_ms,
	                         tool ? tool + 1 : argv[0]);
}

/* Generates a day of `messages` ITCH messages over `symbols` symbols into `day` with uf-gen
 * (output in `dir`/gen.*); fails the test unless uf-gen exits 0 within 20 s. */
static inline void uf_test_gen_day(const char *dir, const char *day, const char *messages,
                                   const char *symbols, const char *seed)
{
	const char *gen[] = {uf_test_bin("uf-gen"), "--out", day,      "--messages", messages,
	                     "--symbols",           symbols, "--seed", seed,         NULL};
	assert_int_equal(uf_test_run_tool(dir, gen, "gen", 20000), 0);
}

/* Starts the daemon `path` (uf_test_bin("uringfeed"), or a test build of it) on the config
 * `dir`/uf.json, its log in `dir`/daemon.err; env and wdpid as uf_test_spawn(). */
static inline pid_t uf_test_daemon_start(const char *dir, const char *path, const char *const env[],
                                         int wdpid)
{
	char cfg[256];
	snprintf(cfg, sizeof(cfg), "%s/uf.json", dir);
	const char *argv[] = {path, "--config", cfg, NULL};
	return uf_test_spawn(dir, argv, "daemon.out", "daemon.err", env, wdpid);
}

/* `dir`/`name` into buf (NUL-terminated, "" when it cannot be opened). */
static inline void uf_test_read_file(const char *dir, const char *name, char *buf, size_t len)
{
	char p[256];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	FILE *f = fopen(p, "r");
	size_t n = f ? fread(buf, 1, len - 1, f) : 0;
	buf[n] = '\0';
	if (f)
		fclose(f);
}

/* Writes `text` to `dir`/`name` through a temporary file and a rename: a daemon re-reading
 * it on SIGHUP never reads half a file. */
static inline void uf_test_write_file(const char *dir, const char *name, const char *text)
{
	char p[256], tmp[272];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	snprintf(tmp, sizeof(tmp), "%s.tmp", p);
	FILE *f = fopen(tmp, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	assert_int_equal(rename(tmp, p), 0);
}

/* One epoll feed on loopback multicast, the daemon's configuration in the tests that run it
 * with traffic. */
struct uf_test_feed {
	const char *top;     /* the keys before "feeds" ("\"status\":{...},\"log\":{...}"); NULL:
	                      * status on an ephemeral loopback port, log.journal "never" */
	const char *name;    /* the feed's name */
	unsigned capacity;   /* ring.capacity */
	unsigned max_orders; /* book.max_orders */
	const char *extra; /* more members of the feed object (",\"capture\":{...}"), NULL: none */
	const char *ring_extra; /* more members of the ring object (",\"journal\":{...}"), NULL:
	                         * none */
	/* Set by uf_test_feed_unique(): */
	int nlines;        /* 1 (line A) or 2 (A and B) */
	char group[2][32]; /* the lines' groups */
	int port[2];       /* their UDP ports */
	char ring[64];     /* the ring's name */
};

/* Gives `f` `nlines` lines (A, or A and B) on groups 239.`net`.<pid % 250>.1 and .2, ports
 * `port0` + 2 * (pid % `span`) and the next one, and the ring "uf_`tag`_<pid>": names unique
 * to this test process, so that tests running at once share no group, port or ring. */
static inline void uf_test_feed_unique(struct uf_test_feed *f, int nlines, int net, int port0,
                                       int span, const char *tag)
{
	int pid = (int)getpid();
	assert_true(nlines >= 1 && nlines <= 2);
	f->nlines = nlines;
	for (int i = 0; i < nlines; i++) {
		snprintf(f->group[i], sizeof(f->group[i]), "239.%d.%d.%d", net, pid % 250, i + 1);
		f->port[i] = uf_test_port_fixed(port0 + (pid % span) * 2 + i);
	}
	snprintf(f->ring, sizeof(f->ring), "uf_%s_%d", tag, pid);
}

/* Writes `f` as `dir`/uf.json (the file uf_test_daemon_start() gives the daemon). */
static inline void uf_test_write_feed_config(const char *dir, const struct uf_test_feed *f)
{
	char json[2048], lines[512];
	int n = 0;
	for (int i = 0; i < f->nlines; i++)
		n += snprintf(lines + n, sizeof(lines) - (size_t)n,
		              "%s{\"name\":\"%c\",\"group\":\"%s\",\"port\":%d,\"interface\":"
		              "\"127.0.0.1\"}",
		              i ? "," : "", 'A' + i, f->group[i], f->port[i]);
	snprintf(json, sizeof(json),
	         "{%s,\"feeds\":[{\"name\":\"%s\",\"backend\":\"epoll\",\"cpu\":-1,"
	         "\"lines\":[%s],\"ring\":{\"name\":\"%s\",\"capacity\":%u%s},"
	         "\"book\":{\"max_orders\":%u}%s}]}",
	         f->top ? f->top
	                : "\"status\":{\"listen\":\"127.0.0.1:0\"},\"log\":{\"journal\":\"never\"}",
	         f->name, lines, f->ring, f->capacity, f->ring_extra ? f->ring_extra : "",
	         f->max_orders, f->extra ? f->extra : "");
	uf_test_write_file(dir, "uf.json", json);
}

/* Starts uf-replay sending the ITCH day `day` to the first `nlines` lines of `f` over
 * loopback at `rate` messages/s, dropping the line-A packets `drop_a` names (uf-replay
 * --drop-a; NULL: none). Its output goes to `dir`/replay.out and replay.err. */
static inline pid_t uf_test_replay_start(const char *dir, const char *day,
                                         const struct uf_test_feed *f, int nlines, const char *rate,
                                         const char *drop_a)
{
	char dst[2][64];
	assert_true(nlines >= 1 && nlines <= f->nlines);
	for (int i = 0; i < nlines; i++)
		snprintf(dst[i], sizeof(dst[i]), "%s:%d", f->group[i], f->port[i]);
	const char *opt[][2] = {{"--a", dst[0]},
	                        {"--b", nlines == 2 ? dst[1] : NULL},
	                        {"--interface", "127.0.0.1"},
	                        {"--rate", rate},
	                        {"--drop-a", drop_a}};
	const char *argv[16] = {uf_test_bin("uf-replay"), "--in", day};
	int n = 3;
	for (size_t i = 0; i < sizeof(opt) / sizeof(opt[0]); i++)
		if (opt[i][1]) { /* an option without a value is left out */
			argv[n++] = opt[i][0];
			argv[n++] = opt[i][1];
		}
	return uf_test_spawn(dir, argv, "replay.out", "replay.err", NULL, 0);
}

/* A daemon test's teardown: kills the daemon *pid (when still running) and removes the
 * scratch folder `dir`; 0, or -1 when it could not be removed. */
static inline int uf_test_daemon_cleanup(const char *dir, pid_t *pid)
{
	uf_test_kill(pid);
	return uf_test_rm_tree(dir);
}

/* The copy of the daemon's log the last uf_test_read_log()/uf_test_wait_log() made. */
static inline char *uf_test_daemon_log(void)
{
	static char log[1 << 16];
	return log;
}

/* Re-reads `dir`/daemon.err into uf_test_daemon_log(); returns it. */
static inline const char *uf_test_read_log(const char *dir)
{
	uf_test_read_file(dir, "daemon.err", uf_test_daemon_log(), 1 << 16);
	return uf_test_daemon_log();
}

/* Waits (bounded) until the daemon's log holds `needle`; returns where, in
 * uf_test_daemon_log(). Fails the test, printing the log, when it never does. */
static inline const char *uf_test_wait_log(const char *dir, const char *needle, int timeout_ms)
{
	uint64_t end = uf_test_now_ms() + (uint64_t)timeout_ms;
	do {
		const char *p = strstr(uf_test_read_log(dir), needle);
		if (p)
			return p;
		usleep(20000);
	} while (uf_test_now_ms() < end);
	fail_msg("daemon log never showed \"%s\"; log:\n%s", needle, uf_test_daemon_log());
	return NULL;
}

/* Lines of the daemon's log that contain `needle` (read afresh). */
static inline int uf_test_log_count(const char *dir, const char *needle)
{
	int n = 0;
	for (const char *p = uf_test_read_log(dir); (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

/* The port of a loopback listener the daemon logs as "`prefix`<port>" (such as
 * "serving http://127.0.0.1:"), waiting up to 10 s for the line. */
static inline uint16_t uf_test_log_port(const char *dir, const char *prefix)
{
	const char *p = uf_test_wait_log(dir, prefix, 10000);
	return (uint16_t)atoi(p + strlen(prefix));
}

/* The daemon's status (HTTP) port, from its log. */
static inline uint16_t uf_test_status_port(const char *dir)
{
	return uf_test_log_port(dir, "serving http://127.0.0.1:");
}

/* GET path on 127.0.0.1:port: the status code; the body into a static buffer (valid until
 * the next call). Each read waits at most 5 s. */
static inline int uf_test_http_get(uint16_t port, const char *path, const char **body)
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

/* Value of one series (`key` is the name with its labels) in an exposition text, -1 when
 * absent. */
static inline double uf_test_series(const char *text, const char *key)
{
	char k[512];
	snprintf(k, sizeof(k), "\n%s ", key);
	const char *p = strstr(text, k);
	return p ? strtod(p + strlen(k), NULL) : -1;
}

#endif /* UF_TEST_DAEMON_H */
