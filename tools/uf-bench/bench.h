/* Shared helpers for uf-bench subcommands (one bench_<name>.c per subcommand). */
#ifndef UF_BENCH_H
#define UF_BENCH_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define UF_BENCH_CMD(name, summary) int uf_bench_##name(int argc, char **argv);
#include "bench_cmds.h"
#undef UF_BENCH_CMD

/* The name of `uf-bench book`'s row with the feed's sink behind the datagram row: the bench
 * names it, `uf-bench e2e` finds it by name in book's JSON. */
#define UF_BENCH_BOOK_SINK_ROW "per datagram, +ring +image"

/* Parses the value `s` of option `opt` of `uf-bench cmd` as a count in [lo, hi]
 * (common/uf_parse.h uf_parse_u64); -1 after "uf-bench CMD: OPT wants a number in [LO, HI],
 * got S" on stderr. */
int uf_bench_parse_u64(const char *cmd, const char *opt, const char *s, uint64_t lo, uint64_t hi,
                       uint64_t *v);

/* Pins the calling thread to `cpu` when it exists; returns 0 or -errno. */
int uf_bench_pin(int cpu);

/* Pins task `pid` (0: the calling thread) to `cpu`; returns 0 or -errno. A parent pins the
 * child it forked as well as the child pinning itself, so a placement sample taken right
 * after the fork never sees the mask the child has not set yet. */
int uf_bench_pin_task(pid_t pid, int cpu);

/* Forks a child that dies with uf-bench: `deathsig` reaches it when uf-bench exits (SIGTERM
 * lets a daemon clean up; SIGKILL for a busy poller of ours), and a child whose parent was
 * gone before that was set leaves at once (exit 127). fork's result: the pid, 0 in the child,
 * or -errno. */
pid_t uf_bench_fork(int deathsig);

/* uf_bench_fork pinned to `cpu` (-1: not pinned, every CPU uf-bench had before
 * uf_bench_keep_off): the child sets that mask first thing and the parent sets it on the
 * child too (it reported a pinned sender as "allowed 0-1, seen 0,1" otherwise). */
pid_t uf_bench_fork_on(int deathsig, int cpu);

/* Forks (uf_bench_fork, SIGTERM) and execs argv[0] (searched in PATH when it has no '/')
 * with stdout to `out_path` and stderr to `err_path` (NULL: inherit), pinned to `cpu` first
 * (-1: not pinned; the parent pins the child too, see uf_bench_pin_task). Returns the pid or
 * -errno. */
pid_t uf_bench_spawn(char *const argv[], const char *out_path, const char *err_path, int cpu);

/* Number of CPUs this process may run on (before uf_bench_keep_off). */
int uf_bench_ncpus(void);

/* Keeps uf-bench's own threads (the calling one and those it creates after) off `cpu`, the
 * CPU being measured: waking there to read the daemon's /status or the ring, uf-bench
 * preempted the busy feed thread for up to 891 us (sched_switch trace, quiet host), which
 * was the feed's millisecond p99 in `e2e --sizes`. What uf-bench forks (uf_bench_fork) gets
 * back every CPU it had: the measured setup keeps its own placement. No-op on one CPU.
 * Returns 0 or -errno. */
int uf_bench_keep_off(int cpu);

/* The 1-minute load average (to say how noisy the machine was). */
double uf_bench_loadavg(void);

/* Prints the closing line of the decode and book tables: "(N CPUs, load average L;
 * checksum XXXX)", the checksum being the low 16 bits of `acc` (what kept the passes live). */
void uf_bench_print_machine(uint64_t acc);

/* Memory shared with forked children (MAP_SHARED | MAP_ANONYMOUS), zeroed; NULL on failure. */
void *uf_bench_shared_alloc(size_t size);
void uf_bench_shared_free(void *p, size_t size);

/* Latency summary of `n` samples (sorted in place). */
struct uf_bench_pct {
	uint64_t n;    /* samples */
	uint64_t p50;  /* ns */
	uint64_t p99;  /* ns */
	uint64_t p999; /* ns */
	uint64_t max;  /* ns */
};
void uf_bench_percentiles(uint64_t *v, size_t n, struct uf_bench_pct *out);

/* Waits for `pid` at most timeout_ms, then kills it. Returns the wait status or -1. */
int uf_bench_wait_child(pid_t pid, int timeout_ms);

#endif /* UF_BENCH_H */
