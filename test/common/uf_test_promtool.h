/* `promtool check metrics` as a test assertion: the Prometheus project's own linter of the
 * exposition format and naming conventions (counters end in _total, base units, no
 * abbreviated units, ...). Debian package `prometheus` provides promtool.
 *
 *   char why[4096];
 *   if (uf_test_promtool_check_metrics(text, why, sizeof(why)) != 0)
 *           fail_msg("promtool: %s", why);
 */
#ifndef UF_TEST_PROMTOOL_H
#define UF_TEST_PROMTOOL_H

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "test/common/uf_test_proc.h"

/* Runs promtool check metrics with `text` on its stdin. Returns 0 when it exits 0 having
 * printed nothing at all (a lint warning is a failure too); -1 otherwise, with what it
 * printed (or why it could not run: promtool missing, no answer within timeout_ms) in
 * `out`. */
static inline int uf_test_promtool_check_metrics_within(const char *text, char *out, size_t cap,
                                                        int timeout_ms)
{
	struct timespec t0, now;
	int in[2], res[2], st = 0;
	size_t len = strlen(text), off = 0, got = 0;
	pid_t pid;

	out[0] = '\0';
	if (pipe(in) < 0 || pipe(res) < 0) {
		snprintf(out, cap, "pipe: %s", strerror(errno));
		return -1;
	}
	pid = uf_test_fork();
	if (pid < 0) {
		snprintf(out, cap, "fork: %s", strerror(errno));
		return -1;
	}
	if (pid == 0) {
		dup2(in[0], 0);
		dup2(res[1], 1);
		dup2(res[1], 2);
		close(in[0]);
		close(in[1]);
		close(res[0]);
		close(res[1]);
		execlp("promtool", "promtool", "check", "metrics", (char *)NULL);
		dprintf(2,
		        "promtool not found: apt-get install prometheus (or run tools/setup.sh)");
		_exit(127);
	}
	close(in[0]);
	close(res[1]);
	signal(SIGPIPE, SIG_IGN); /* promtool exiting early must not kill the test */
	/* promtool reads all of stdin before it prints, so writing everything first cannot
	 * deadlock on a full output pipe. */
	while (off < len) {
		ssize_t n = write(in[1], text + off, len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		off += (size_t)n;
	}
	close(in[1]);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		struct pollfd p = {.fd = res[0], .events = POLLIN};
		clock_gettime(CLOCK_MONOTONIC, &now);
		long left = timeout_ms - ((now.tv_sec - t0.tv_sec) * 1000 +
		                          (now.tv_nsec - t0.tv_nsec) / 1000000);
		int r = left > 0 ? poll(&p, 1, (int)left) : 0;
		if (r == 0) {
			kill(pid, SIGKILL);
			snprintf(out + got, cap - got, "[promtool timed out after %d ms]",
			         timeout_ms);
			break;
		}
		if (r < 0 && errno == EINTR)
			continue;
		char tmp[1024];
		ssize_t n = read(res[0], tmp, sizeof(tmp));
		if (n <= 0)
			break;
		size_t take = (size_t)n < cap - 1 - got ? (size_t)n : cap - 1 - got;
		memcpy(out + got, tmp, take);
		got += take;
		out[got] = '\0';
	}
	close(res[0]);
	waitpid(pid, &st, 0);
	if (off < len && !out[0])
		snprintf(out, cap, "promtool stopped reading after %zu of %zu bytes", off, len);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || out[0] || off < len) {
		if (!out[0])
			snprintf(out, cap, "promtool exited with status %d", WEXITSTATUS(st));
		return -1;
	}
	return 0;
}

/* The same within 30 s. */
static inline int uf_test_promtool_check_metrics(const char *text, char *out, size_t cap)
{
	return uf_test_promtool_check_metrics_within(text, out, cap, 30000);
}

#endif /* UF_TEST_PROMTOOL_H */
