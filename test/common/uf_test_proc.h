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
#include <stdint.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
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

/* Waits for the child `pid` at most timeout_ms (polled every ms), then SIGKILLs and reaps it,
 * saying so on stderr: a hung child cannot hang the test. Returns its wait status (for
 * WIFEXITED and the like), or -1 when it had to be killed or is not this process's child. */
static inline int uf_test_wait_status(pid_t pid, int timeout_ms)
{
	struct timespec t0, now, nap = {0, 1000000};
	int st;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		pid_t r = waitpid(pid, &st, WNOHANG);
		if (r == pid)
			return st;
		if (r < 0)
			return -1;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if ((int64_t)(now.tv_sec - t0.tv_sec) * 1000 +
		        (now.tv_nsec - t0.tv_nsec) / 1000000 >
		    timeout_ms) {
			fprintf(stderr, "child %d still running after %d ms: killed\n", (int)pid,
			        timeout_ms);
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			return -1;
		}
		nanosleep(&nap, NULL);
	}
}

#endif /* UF_TEST_PROC_H */
