/* The standard process_* metrics (the names every Prometheus client library exports, so
 * the usual dashboards and alerts work): CPU, memory, file descriptors, start time.
 *
 * Read on the HTTP thread per scrape (a few /proc reads: cold), rendered by a pure
 * function. process_start_time_seconds lets an alert see restarts (UringfeedRestarted). */
#ifndef UF_PROC_METRICS_H
#define UF_PROC_METRICS_H

#include <stddef.h>
#include <stdint.h>

struct uf_proc_metrics {
	double cpu_seconds;        /* user + system CPU of every thread so far */
	uint64_t resident_bytes;   /* resident set size */
	uint64_t virtual_bytes;    /* address space size */
	double start_time_seconds; /* process start, Unix time (boot time + start tick) */
	uint64_t open_fds;         /* file descriptors open now */
	uint64_t max_fds;          /* RLIMIT_NOFILE soft limit */
	uint64_t max_virtual;      /* RLIMIT_AS soft limit; UINT64_MAX = unlimited */
};

/* Fills `m` for this process from /proc/self/stat, /proc/stat (btime), /proc/self/fd and
 * getrlimit. Returns 0 or -errno (a /proc file missing or not in the expected format). */
int uf_proc_metrics_read(struct uf_proc_metrics *m);

/* Renders the families with HELP and TYPE lines into `buf` (NUL-terminated). Returns the
 * length, or -ENOSPC when `len` is too small. Pure. An unlimited address space is rendered
 * as +Inf, as the client libraries do. */
int uf_proc_metrics_render(const struct uf_proc_metrics *m, char *buf, size_t len);

#endif /* UF_PROC_METRICS_H */
