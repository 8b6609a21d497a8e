/* uf-bench e2e: where the processes of a step ran, and how many system calls the feed thread
 * made per datagram (issue 14). Both are read from outside: /proc/PID/task/TID/stat (field
 * 39, the CPU the thread last ran on) and .../status (Cpus_allowed_list) for placement,
 * `strace -c -p TID` over a bounded steady replay for system calls. Nothing here touches the
 * measured processes beyond reading /proc, except the strace attach of the syscall step. */
#ifndef UF_BENCH_E2E_PLACE_H
#define UF_BENCH_E2E_PLACE_H

#include <stdint.h>
#include <sys/types.h>

/* The roles whose placement is reported. */
enum place_role {
	PL_FEED,     /* uringfeed's feed thread ("uf-e2e") */
	PL_SQPOLL,   /* its io_uring SQ thread ("iou-sqp-PID"), SQPOLL back end only */
	PL_CONSUMER, /* the consumer processes */
	PL_SENDER,   /* uf-replay */
	PL_RAW,      /* the raw receiver (its own steps) */
	PL_RAW_SQ,   /* the raw receiver's SQ thread */
	PL_COUNT
};

struct place_one {
	int configured;    /* CPU asked for, -1: not pinned, -2: role absent */
	char allowed[64];  /* Cpus_allowed_list of the thread as /proc says (first sample) */
	uint64_t seen;     /* CPUs (0..63) the samples found it on, one bit each */
	uint32_t samples;  /* samples taken */
	uint32_t on_other; /* samples on a CPU other than the configured one */
};

struct placement {
	struct place_one r[PL_COUNT];
};

/* The name of a role in the tables and the JSON. */
const char *e2e_place_name(enum place_role r);

/* A thread of process `pid` whose comm starts with `prefix` (the first found), or -ENOENT. */
pid_t e2e_find_thread(pid_t pid, const char *prefix);

/* One sample of thread `tid` of `pid` for role `r`: its last CPU, and its allowed CPUs the
 * first time. Returns 0 or -errno (the thread is gone). */
int e2e_place_sample(struct placement *p, enum place_role r, pid_t pid, pid_t tid);

/* "0,1" style list of the CPUs in `mask` into buf. */
void e2e_cpu_list(uint64_t mask, char *buf, size_t len);

/* The system calls of one thread over a window: strace -c -p TID. */
struct sysc {
	pid_t strace;   /* the strace process, -1: none */
	char out[4096]; /* its summary file */
	char err[4096]; /* its stderr */
	uint64_t calls; /* system calls counted */
	char top[160];  /* "name:calls ..." per system call, as strace sorted them */
	int ok;         /* counted */
	char note[160]; /* why not */
};

/* Starts `strace -c -o FILE -p tid` (files under dir) and waits (5 s at most) until it has
 * attached. Returns 0, or -errno with s->note saying why (strace not installed, refused). */
int e2e_sysc_start(struct sysc *s, const char *dir, pid_t tid);

/* Detaches strace (SIGINT), waits for its summary and reads the total call count. */
int e2e_sysc_stop(struct sysc *s);

#endif /* UF_BENCH_E2E_PLACE_H */
