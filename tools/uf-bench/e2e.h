/* uf-bench e2e helpers: free ports, the daemon's status endpoint, /proc CPU times,
 * sleeps and gnuplot. Only the e2e files use them; none of this is on a measured path. */
#ifndef UF_BENCH_E2E_H
#define UF_BENCH_E2E_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The feed counters one step compares before and after (from GET /status, feeds[0]). */
struct e2e_status {
	uint64_t messages;             /* messages delivered in sequence */
	uint64_t gaps;                 /* gaps in the arbitrated stream */
	uint64_t rerequests;           /* re-requests sent */
	uint64_t gaps_unrecovered;     /* gaps given up */
	uint64_t messages_unrecovered; /* messages given up */
	uint64_t queue_overflows;      /* out-of-order queue full */
	uint64_t line_gaps;            /* sum over lines of their own sequence jumps */
	uint64_t line_enobufs;         /* sum over lines: provided buffer ring empty */
	uint64_t line_packets;         /* sum over lines: datagrams received */
	uint64_t cq_overflows;         /* io_uring CQ overflows */
	uint64_t ring_sequence;        /* ring tail (next sequence to publish) */
	uint64_t batches;              /* receive polls that returned packets */
	uint64_t busy_polls;           /* receive polls that found nothing (the idle spin) */
	uint64_t busy_ns;              /* feed loop time in turns that did work (busy_clock) */
	uint64_t sq_wakeups;           /* io_uring_enter calls the feed made (wake-up, events) */
	uint64_t ring_wakes;           /* FUTEX_WAKE calls for sleeping consumers */
	uint64_t ring_wakes_idle;      /* of those, the ones that found no consumer blocked */
	uint64_t ring_wakes_async;     /* of those, the ones the io_uring SQ thread made */
	uint64_t pub_count;            /* latency_ns: wire-to-publish samples so far */
	uint64_t pub_p50, pub_p99, pub_p999, pub_max; /* and its quantiles, ns (cumulative) */
};

/* One cumulative histogram of GET /metrics (Prometheus buckets: le = 2^k ns, then +Inf), as
 * the daemon exposes it: two reads differenced (e2e_hist_diff) give one step's samples alone,
 * without the warm-up before it. */
#define E2E_HIST_MAXB 48
struct e2e_hist {
	int nb;                        /* finite buckets */
	uint64_t le_ns[E2E_HIST_MAXB]; /* upper bounds, ns */
	uint64_t cum[E2E_HIST_MAXB];   /* samples <= le_ns[i] */
	uint64_t count;                /* all samples (the +Inf bucket) */
	double sum_ns;                 /* sum of samples */
};

/* The daemon's wire-to-publish and per-stage histograms (feed 0), in enum uf_stage order
 * (receive, arbitration, decode, books, ring, image). */
#define E2E_NSTAGES 6
struct e2e_hists {
	int ok;                             /* 1 when /metrics had them */
	struct e2e_hist pub;                /* uringfeed_wire_to_publish_seconds */
	struct e2e_hist stage[E2E_NSTAGES]; /* uringfeed_stage_seconds{stage=...} */
};

/* "receive", "arbitration", "decode", "books", "ring", "image" (the daemon's stage labels). */
extern const char *const e2e_stage_names[E2E_NSTAGES];

/* GET /metrics and fills `h`. Returns 0 or -errno (-EPROTO: not there). */
int e2e_metrics_read(uint16_t port, struct e2e_hists *h);

/* d = b - a (same bucket bounds; a zeroed `a` gives b). */
void e2e_hist_diff(const struct e2e_hist *a, const struct e2e_hist *b, struct e2e_hist *d);

/* Quantile q of `h` in ns, interpolated linearly inside its power-of-two bucket (as
 * Prometheus' histogram_quantile): within a factor 2 of the truth, usually much closer. 0 when
 * empty; the last finite bound when q falls in +Inf. */
uint64_t e2e_hist_quantile(const struct e2e_hist *h, double q);

/* A UDP (SOCK_DGRAM) or TCP (SOCK_STREAM) port on 127.0.0.1 nobody holds right now (bound to
 * port 0, then released): unique ports per run without a fixed range. Returns it or -errno. */
int e2e_free_port(int socktype);

/* GET `path` from 127.0.0.1:port; the body (NUL-terminated, malloc'ed) in *body.
 * Returns the HTTP status code or -errno (-ETIMEDOUT after timeout_ms). */
int e2e_http_get(uint16_t port, const char *path, int timeout_ms, char **body);

/* GET /status and fills `st` from its first feed. Returns 0 or -errno (-EPROTO: bad JSON). */
int e2e_status_read(uint16_t port, struct e2e_status *st);

/* utime + stime of every thread of `pid` so far (kernel threads of the process, such as the
 * io_uring SQPOLL thread, included), in ns. Returns 0 or -errno. */
int e2e_proc_cpu_ns(pid_t pid, uint64_t *ns);
/* Thread tid's time in the kernel (stime of /proc/PID/task/TID/stat), ns: counted in clock
 * ticks (10 ms at 100 Hz), so only a window of seconds gives it to a few percent. */
int e2e_thread_sys_ns(pid_t pid, pid_t tid, uint64_t *ns);

/* Interrupts one CPU has served so far: hardware interrupts and IPIs (/proc/interrupts),
 * softirqs (/proc/softirqs) and of them NET_RX (the network stack's receive). Without
 * CONFIG_IRQ_TIME_ACCOUNTING the clock ticks that land in them are charged as system time to
 * whatever thread ran on the CPU, so they say what a busy thread's stime holds besides its
 * own system calls. */
struct e2e_irqs {
	uint64_t hard;
	uint64_t resched; /* of hard: rescheduling IPIs (a thread woken onto this CPU) */
	uint64_t soft;
	uint64_t net_rx;
};
/* Fills `q` for `cpu`. Returns 0, or -errno (-ENOENT: no such CPU column). */
int e2e_cpu_irqs(int cpu, struct e2e_irqs *q);

/* Sleeps `ms` milliseconds (a poll interval: waking early on a signal is fine). */
void e2e_sleep_ms(int ms);

/* Writes `text` to `path`. Returns 0 or -errno. */
int e2e_write_file(const char *path, const char *text);

/* Runs `gnuplot script` in `dir`, waiting at most timeout_ms. Returns 0, or -errno / the
 * exit status as a positive number (with a line on stderr saying which). */
int e2e_gnuplot(const char *dir, const char *script, int timeout_ms);

#endif /* UF_BENCH_E2E_H */
