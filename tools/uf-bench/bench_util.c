/* Helpers every uf-bench subcommand uses: option values, pinning, shared memory, percentiles. */
#include "bench.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/uf_parse.h"
#include "common/uf_time.h"

int uf_bench_parse_u64(const char *cmd, const char *opt, const char *s, uint64_t lo, uint64_t hi,
                       uint64_t *v)
{
	if (uf_parse_u64(s, lo, hi, v) < 0) {
		fprintf(stderr,
		        "uf-bench %s: %s wants a number in [%" PRIu64 ", %" PRIu64 "], got %s\n",
		        cmd, opt, lo, hi, s);
		return -1;
	}
	return 0;
}

int uf_bench_pin_task(pid_t pid, int cpu)
{
	cpu_set_t set;

	if (cpu < 0 || cpu >= CPU_SETSIZE)
		return -EINVAL;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(pid, sizeof(set), &set) < 0 ? -errno : 0;
}

int uf_bench_pin(int cpu)
{
	return uf_bench_pin_task(0, cpu);
}

static int redirect(int fd, const char *path)
{
	int f = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	if (f < 0)
		return -1;
	if (dup2(f, fd) < 0)
		return -1;
	close(f);
	return 0;
}

/* The CPUs uf-bench had before uf_bench_keep_off: what its children get back. */
static cpu_set_t uf_bench_all;
static int uf_bench_all_saved;

int uf_bench_keep_off(int cpu)
{
	cpu_set_t set;

	if (!uf_bench_all_saved) {
		if (sched_getaffinity(0, sizeof(uf_bench_all), &uf_bench_all) < 0)
			return -errno;
		uf_bench_all_saved = 1;
	}
	set = uf_bench_all;
	if (cpu < 0 || cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, &set) || CPU_COUNT(&set) < 2)
		return 0;
	CPU_CLR(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set) < 0 ? -errno : 0;
}

pid_t uf_bench_fork_on(int deathsig, int cpu)
{
	pid_t parent = getpid(), pid = fork();

	if (pid < 0)
		return -errno;
	if (pid == 0) {
		/* one mask change, the final one: pinned, or the CPUs it would have had without
		 * keep_off (restoring first and pinning after would let a placement sample see
		 * every CPU in between) */
		if (cpu >= 0) {
			if (uf_bench_pin(cpu) < 0)
				_exit(126);
		} else if (uf_bench_all_saved) {
			(void)sched_setaffinity(0, sizeof(uf_bench_all), &uf_bench_all);
		}
		prctl(PR_SET_PDEATHSIG, deathsig);
		if (getppid() != parent)
			_exit(127);
	} else if (cpu >= 0) {
		(void)uf_bench_pin_task(pid, cpu); /* see uf_bench_pin_task */
	}
	return pid;
}

pid_t uf_bench_fork(int deathsig)
{
	return uf_bench_fork_on(deathsig, -1);
}

pid_t uf_bench_spawn(char *const argv[], const char *out_path, const char *err_path, int cpu)
{
	/* SIGTERM: a killed uf-bench must not leave a busy-polling daemon behind */
	pid_t pid = uf_bench_fork_on(SIGTERM, cpu);

	if (pid == 0) {
		if ((out_path && redirect(1, out_path) < 0) ||
		    (err_path && redirect(2, err_path) < 0))
			_exit(127);
		execvp(argv[0], argv);
		fprintf(stderr, "uf-bench: exec %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	return pid;
}

int uf_bench_ncpus(void)
{
	cpu_set_t set;

	if (uf_bench_all_saved)
		return CPU_COUNT(&uf_bench_all);
	if (sched_getaffinity(0, sizeof(set), &set) < 0)
		return 1;
	return CPU_COUNT(&set);
}

double uf_bench_loadavg(void)
{
	double l = -1;
	FILE *f = fopen("/proc/loadavg", "r");

	if (f) {
		if (fscanf(f, "%lf", &l) != 1)
			l = -1;
		fclose(f);
	}
	return l;
}

void uf_bench_print_machine(uint64_t acc)
{
	printf("(%d CPUs, load average %.2f; checksum %04" PRIx64 ")\n", uf_bench_ncpus(),
	       uf_bench_loadavg(), acc & 0xffff);
}

void *uf_bench_shared_alloc(size_t size)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

void uf_bench_shared_free(void *p, size_t size)
{
	if (p)
		munmap(p, size);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

void uf_bench_percentiles(uint64_t *v, size_t n, struct uf_bench_pct *out)
{
	memset(out, 0, sizeof(*out));
	out->n = n;
	if (n == 0)
		return;
	qsort(v, n, sizeof(*v), cmp_u64);
	out->p50 = v[(size_t)((double)(n - 1) * 0.50)];
	out->p99 = v[(size_t)((double)(n - 1) * 0.99)];
	out->p999 = v[(size_t)((double)(n - 1) * 0.999)];
	out->max = v[n - 1];
}

int uf_bench_wait_child(pid_t pid, int timeout_ms)
{
	uint64_t end = uf_now_mono_ns() + (uint64_t)timeout_ms * 1000000ull;
	int st;

	for (;;) {
		pid_t r = waitpid(pid, &st, WNOHANG);
		if (r == pid)
			return st;
		if (r < 0)
			return -1;
		if (uf_now_mono_ns() > end) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			return -1;
		}
		usleep(2000);
	}
}
