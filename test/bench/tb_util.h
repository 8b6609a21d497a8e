/* test/bench helpers: run uf-bench (or another built tool) and capture what it prints. */
#ifndef TB_UTIL_H
#define TB_UTIL_H

#include <stddef.h>

/* The output of one run. */
struct tb_run {
	int status; /* exit status (0-255), or -1 when it did not exit within the timeout */
	char *out;  /* stdout, NUL-terminated (malloc'ed) */
	char *err;  /* stderr, NUL-terminated (malloc'ed) */
};

/* Runs UF_BIN_DIR/<tool> with argv (NULL-terminated, argv[0] = tool name), killing it after
 * timeout_s. Fails the test (cmocka) when it cannot even start. */
void tb_run_tool(const char *tool, const char *const argv[], int timeout_s, struct tb_run *r);
void tb_run_free(struct tb_run *r);

/* A fresh temp folder (mkdtemp) and its recursive removal. */
void tb_mkdtemp(char *buf, size_t len);
void tb_rmtree(const char *dir);

#endif /* TB_UTIL_H */
