/* Scratch folders for tests: removing one with everything below it. */
#ifndef UF_TEST_DIR_H
#define UF_TEST_DIR_H

#include <signal.h>
#include <stdio.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test/common/uf_test_proc.h"

/* Removes `dir` and everything below it (`rm -rf -- dir` in a child from uf_test_fork(), so
 * it dies with the test). Gives up after 10 s and kills the child: a hung file system cannot
 * hang the test. Returns 0 when rm succeeded, -1 otherwise (said on stderr). */
static inline int uf_test_rm_tree(const char *dir)
{
	pid_t pid = uf_test_fork();
	int st = 0;

	if (pid < 0) {
		perror("uf_test_rm_tree: fork");
		return -1;
	}
	if (pid == 0) {
		execlp("rm", "rm", "-rf", "--", dir, (char *)NULL);
		_exit(127);
	}
	st = uf_test_wait_status(pid, 10000);
	if (st < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "could not remove %s\n", dir);
		return -1;
	}
	return 0;
}

#endif /* UF_TEST_DIR_H */
