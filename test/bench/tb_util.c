/* test/bench helpers (see tb_util.h). */
#include "tb_util.h"
#include "test/common/uf_test_proc.h"

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

static char *slurp(const char *path)
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

void tb_run_tool(const char *tool, const char *const argv[], int timeout_s, struct tb_run *r)
{
	char bin[1024], out[64], err[64];
	struct timespec t0, now;
	pid_t pid;
	int st = 0;

	snprintf(bin, sizeof(bin), "%s/%s",
	         getenv("UF_BIN_DIR") ? getenv("UF_BIN_DIR") : UF_BIN_DIR, tool);
	if (access(bin, X_OK) != 0)
		fail_msg("%s is not built (%s): build the uf-bench target first", bin,
		         strerror(errno));
	snprintf(out, sizeof(out), "/tmp/tb-out-%d", (int)getpid());
	snprintf(err, sizeof(err), "/tmp/tb-err-%d", (int)getpid());
	pid = uf_test_fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int fo = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int fe = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fo < 0 || fe < 0 || dup2(fo, 1) < 0 || dup2(fe, 2) < 0)
			_exit(126);
		execv(bin, (char *const *)argv);
		_exit(127);
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	r->status = -1;
	for (;;) { /* bounded: the tool is killed after timeout_s */
		pid_t w = waitpid(pid, &st, WNOHANG);
		if (w == pid) {
			r->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
			break;
		}
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec - t0.tv_sec > timeout_s) {
			kill(pid, SIGTERM);
			usleep(500000);
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			break;
		}
		usleep(10000);
	}
	r->out = slurp(out);
	r->err = slurp(err);
	unlink(out);
	unlink(err);
	if (r->status != 0)
		fprintf(stderr, "%s exited %d; stderr:\n%s\n", tool, r->status, r->err);
}

void tb_run_free(struct tb_run *r)
{
	free(r->out);
	free(r->err);
	r->out = r->err = NULL;
}

void tb_mkdtemp(char *buf, size_t len)
{
	snprintf(buf, len, "/tmp/tb-bench-XXXXXX");
	assert_non_null(mkdtemp(buf));
}

void tb_rmtree(const char *dir)
{
	char cmd[512];

	if (strncmp(dir, "/tmp/tb-bench-", 14) != 0)
		return;
	snprintf(cmd, sizeof(cmd), "rm -rf -- '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
}
