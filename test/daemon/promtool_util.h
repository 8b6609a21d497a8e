/* Runs `promtool check metrics` (Debian package prometheus) on a text and captures everything
 * it prints. The linter reads the exposition on stdin and prints one line per problem
 * (unit abbreviations, counters without _total, bad histograms...), so "passes" means exit 0
 * and no output at all. Include after cmocka.h. */
#ifndef UF_TEST_PROMTOOL_H
#define UF_TEST_PROMTOOL_H

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test/common/uf_test_proc.h"

#define UF_PROMTOOL "/usr/bin/promtool"

/* Exit status of `promtool check metrics` on `text`; its stdout and stderr go to `out`.
 * Fails the test when promtool is missing (tools/setup.sh installs it) or hangs (10 s). */
static inline int uf_promtool_check(const char *text, char *out, size_t outlen)
{
	char in[] = "/tmp/uf-prom-in-XXXXXX", res[] = "/tmp/uf-prom-out-XXXXXX";
	int fi = mkstemp(in), fo = mkstemp(res), st = 0;
	size_t len = strlen(text);

	if (access(UF_PROMTOOL, X_OK) != 0)
		fail_msg("%s not found: apt-get install prometheus (tools/setup.sh)", UF_PROMTOOL);
	assert_true(fi >= 0 && fo >= 0);
	assert_int_equal(write(fi, text, len), (ssize_t)len);
	lseek(fi, 0, SEEK_SET);
	pid_t pid = uf_test_fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(fi, 0);
		dup2(fo, 1);
		dup2(fo, 2);
		execl(UF_PROMTOOL, "promtool", "check", "metrics", (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 1000; i++) {
		if (waitpid(pid, &st, WNOHANG) == pid)
			break;
		if (i == 999) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			fail_msg("promtool did not finish within 10 s");
		}
		usleep(10000);
	}
	ssize_t n = pread(fo, out, outlen - 1, 0);
	out[n > 0 ? n : 0] = '\0';
	close(fi);
	close(fo);
	unlink(in);
	unlink(res);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

#endif /* UF_TEST_PROMTOOL_H */
