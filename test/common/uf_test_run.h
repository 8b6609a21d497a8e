/* Running a built tool (uringfeed, uf-bench, ...) as a user would and capturing what it
 * prints, bounded in time. Include after cmocka.h: a tool that cannot start fails the test. */
#ifndef UF_TEST_RUN_H
#define UF_TEST_RUN_H

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "test/common/uf_test_proc.h"

/* The output of one run. */
struct uf_test_run {
	int status; /* exit status, 128 + signal, or -1 when it was killed at the timeout */
	char *out;  /* stdout, NUL-terminated (malloc'ed) */
	char *err;  /* stderr, NUL-terminated (malloc'ed) */
};

/* Reads the whole file `path` into a NUL-terminated malloc'ed buffer ("" when it cannot be
 * opened). */
static inline char *uf_test_slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	size_t cap = 1 << 16, len = 0, n;
	char *buf = malloc(cap);

	assert_non_null(buf);
	if (!f) {
		buf[0] = '\0';
		return buf;
	}
	while ((n = fread(buf + len, 1, cap - len - 1, f)) > 0) {
		len += n;
		if (len + 1 == cap) {
			cap *= 2;
			buf = realloc(buf, cap);
			assert_non_null(buf);
		}
	}
	buf[len] = '\0';
	fclose(f);
	return buf;
}

/* Runs the executable `path` with `argv` (NULL-terminated, argv[0] the name it sees), its
 * stdout and stderr going to temp files that are read back into `r`. A run still going after
 * timeout_ms gets SIGTERM, then SIGKILL 0.5 s later, and status -1. The child comes from
 * uf_test_fork(): it dies with the test. Fails the test when `path` is not executable. */
static inline void uf_test_run_path(const char *path, const char *const argv[], int timeout_ms,
                                    struct uf_test_run *r)
{
	char out[] = "/tmp/uf-test-out-XXXXXX", err[] = "/tmp/uf-test-err-XXXXXX";
	struct timespec t0, now;
	int fo, fe, st = 0;
	pid_t pid;

	if (access(path, X_OK) != 0)
		fail_msg("cannot run %s: %s (build its target first)", path, strerror(errno));
	fo = mkstemp(out);
	fe = mkstemp(err);
	assert_true(fo >= 0 && fe >= 0);
	pid = uf_test_fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (dup2(fo, 1) < 0 || dup2(fe, 2) < 0)
			_exit(126);
		execv(path, (char *const *)argv);
		_exit(127);
	}
	close(fo);
	close(fe);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	r->status = -1;
	for (;;) { /* bounded: the tool is killed after timeout_ms */
		if (waitpid(pid, &st, WNOHANG) == pid) {
			r->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
			break;
		}
		clock_gettime(CLOCK_MONOTONIC, &now);
		if ((now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000 >
		    timeout_ms) {
			kill(pid, SIGTERM);
			usleep(500000);
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			break;
		}
		usleep(10000);
	}
	r->out = uf_test_slurp(out);
	r->err = uf_test_slurp(err);
	unlink(out);
	unlink(err);
}

/* Frees what uf_test_run_path captured. */
static inline void uf_test_run_free(struct uf_test_run *r)
{
	free(r->out);
	free(r->err);
	r->out = r->err = NULL;
}

#endif /* UF_TEST_RUN_H */
