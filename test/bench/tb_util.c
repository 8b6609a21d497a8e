/* test/bench helpers (see tb_util.h). */
#include "tb_util.h"

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

#include "test/common/uf_test_dir.h"
#include "test/common/uf_test_run.h"

void tb_run_tool(const char *tool, const char *const argv[], int timeout_s, struct tb_run *r)
{
	struct uf_test_run run;
	char bin[1024];

	snprintf(bin, sizeof(bin), "%s/%s",
	         getenv("UF_BIN_DIR") ? getenv("UF_BIN_DIR") : UF_BIN_DIR, tool);
	uf_test_run_path(bin, argv, timeout_s * 1000, &run);
	r->status = run.status;
	r->out = run.out;
	r->err = run.err;
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
	if (strncmp(dir, "/tmp/tb-bench-", 14) != 0)
		return;
	uf_test_rm_tree(dir);
}
