/* Child processes for tests.
 *
 * uf_test_fork() is fork() whose child is killed (SIGKILL) as soon as the test process dies,
 * whatever way it dies: a CTest timeout, a crash, or a failed cmocka assertion that leaves
 * the test before its cleanup. Without it a daemon or busy-polling consumer started by a
 * failed test outlives it and steals a CPU from every later test on a 2-CPU machine.
 * Fork from the main thread: the kernel sends the signal when the forking *thread* exits. */
#ifndef UF_TEST_PROC_H
#define UF_TEST_PROC_H

#include <signal.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <unistd.h>

static inline pid_t uf_test_fork(void)
{
	pid_t parent = getpid();
	pid_t pid = fork();

	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent) /* the parent died before prctl took effect */
			_exit(127);
	}
	return pid;
}

#endif /* UF_TEST_PROC_H */
