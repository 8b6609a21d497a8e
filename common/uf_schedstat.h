/* A thread's account from the scheduler itself (/proc/PID/task/TID/schedstat): nanoseconds on
 * a CPU, and nanoseconds runnable but waiting on a run queue (preempted). Exact, unlike
 * utime/stime, which count clock ticks and round a 100 ms window by tens of percent. One
 * reading gives both. Cold: a file read. */
#ifndef UF_SCHEDSTAT_H
#define UF_SCHEDSTAT_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

/* Thread `tid` of process `pid`: its CPU time into *run_ns and its run-queue wait into
 * *wait_ns (either may be NULL). Returns 0, -errno when the file cannot be opened (the
 * thread is gone, or the kernel keeps no schedstats), -EPROTO when it does not parse. */
static inline int uf_schedstat_read(pid_t pid, pid_t tid, uint64_t *run_ns, uint64_t *wait_ns)
{
	char path[96];
	unsigned long long run, wait;
	FILE *f;
	int ok;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/schedstat", (int)pid, (int)tid);
	f = fopen(path, "r");
	if (!f)
		return -errno;
	ok = fscanf(f, "%llu %llu", &run, &wait) == 2;
	fclose(f);
	if (!ok)
		return -EPROTO;
	if (run_ns)
		*run_ns = run;
	if (wait_ns)
		*wait_ns = wait;
	return 0;
}

#endif /* UF_SCHEDSTAT_H */
