/* uf-bench e2e: what a run is asked (struct e2e_opts) and what it measured (steps, searches,
 * one result per back end), plus the back ends it knows. The orchestration (e2e_run.c) fills
 * these, the rate search (e2e_search.c) decides from them, the report (e2e_report.c) prints
 * them; none of them holds a process, a socket or a file. */
#ifndef UF_BENCH_E2E_MODEL_H
#define UF_BENCH_E2E_MODEL_H

#include <stdint.h>

#include "feed/uf_feed_config.h"

#include "bench.h"
#include "e2e.h"
#include "e2e_place.h"

#define MAXC       4  /* consumer processes per back end, at most */
#define MAX_SEARCH 12 /* search steps, at most */
#define NSTEPS                                                                                     \
	(5 + 3 * MAX_SEARCH) /* warm-up, steady, burst, syscalls, three searches,                  \
	                      * feed CPU */
#define ST_WARMUP  0         /* step index of the warm-up replay */
#define ST_STEADY  1         /* step index of the steady replay */
#define ST_BURST   2         /* step index of the bursty replay */
#define ST_SYSCALL 3         /* step index of the system call count */
#define ST_SEARCH  4         /* first search step */
#define ST_BSIZE   (ST_SEARCH + 2 * MAX_SEARCH) /* first burst-size step */
#define ST_FEEDCPU (ST_BSIZE + MAX_SEARCH)      /* the feed CPU step (busy clock on, issue 26) */
#define NPLOT      160                          /* points per latency distribution plot */
#define MAX_SAMPLE (1u << 23) /* latency samples per consumer per sampled step, at most */

/* The receive back ends, in the order they run and are reported. Names: e2e_backend.c.
 * BE_SQPOLL_JOURNAL is BE_SQPOLL with the ring's day journal on (ring.journal, in the run's
 * temp dir): `--backends sqpoll,sqpoll+journal` measures the journal's cost in one run.
 * BE_NOSQPOLL_RECORD is BE_NOSQPOLL with both the pcapng capture (feed "capture") and the
 * journal on: `--backends nosqpoll,nosqpoll+record` (docs/capture.md). BE_SQPOLL_PAUSE is BE_SQPOLL
 * with the feed's "idle_pause" true (a CPU pause after every empty poll), BE_NOSQPOLL_SPIN is
 * BE_NOSQPOLL with it false: each the opposite of its back end's default, so `--backends
 * sqpoll,sqpoll+pause` (or nosqpoll,nosqpoll+spin) measures the default's choice in one run.
 * None of these is in "all" (the default). */
enum backend {
	BE_SQPOLL,
	BE_NOSQPOLL,
	BE_RECVMMSG,
	BE_EPOLL,
	BE_SQPOLL_JOURNAL,
	BE_NOSQPOLL_RECORD,
	BE_SQPOLL_PAUSE,
	BE_NOSQPOLL_SPIN,
	BE_COUNT
};
#define BE_ALL_MASK ((1u << BE_SQPOLL_JOURNAL) - 1) /* "all": every receive back end once */

/* The engine back end a run uses (BE_SQPOLL_JOURNAL: io_uring with SQPOLL). */
enum uf_backend e2e_backend_feed(enum backend be);

/* 1 when the run's daemon keeps the ring's day journal (docs/journal.md). */
int e2e_backend_journal(enum backend be);

/* The feed "idle_pause" the run's daemon is given: UF_FEED_IDLE_PAUSE_* (AUTO: the key is left
 * out, the back end's default). */
int e2e_backend_idle_pause(enum backend be);

/* 1 when the run's daemon captures every datagram to pcapng (docs/capture.md). */
int e2e_backend_capture(enum backend be);

/* The name uringfeed's config "backend" key takes ("io_uring", ...); also the JSON "backend"
 * and the plot data file names. */
const char *e2e_backend_cfg(enum backend be);

/* The name in the tables, the JSON "label" and the plot keys ("io_uring+SQPOLL", ...). */
const char *e2e_backend_label(enum backend be);

/* Parses --backends: a comma-separated list of config names, the aliases "sqpoll" and
 * "nosqpoll", or "all"; `s` is cut up (strtok_r). Sets *mask (1 << enum backend) and returns
 * 0, or -EINVAL for an unknown name or an empty list. */
int e2e_backends_parse(char *s, uint32_t *mask);

#define E2E_SIZE_RATES 4 /* rates of --sizes (e2e_sizes.h), at most */

struct e2e_opts {
	double duration;          /* seconds per back end (replay time; start-up comes on top) */
	double rate;              /* steady and burst mean rate, msg/s */
	double burst;             /* burst factor */
	double burst_ms;          /* burst period */
	double max_rate;          /* search cap */
	int steps;                /* steady search steps */
	int burst_steps;          /* burst search steps */
	int consumers;            /* consumer processes */
	int json;                 /* JSON on stdout instead of the table */
	int plot;                 /* gnuplot PNGs */
	int keep;                 /* keep the temp dir */
	int feed_cpu;             /* feed thread CPU (and the raw receiver's) */
	int sqpoll_cpu;           /* SQPOLL thread CPU (and the raw receiver's SQPOLL thread) */
	int consumer_cpu;         /* consumer processes' CPU, -1: not pinned */
	int sender_cpu;           /* uf-replay's CPU, -1: not pinned */
	int64_t consumer_spin_us; /* consumers busy-poll this long before sleeping, -1: library
	                             default */
	uint64_t max_orders;      /* the daemon's book.max_orders (order table size) */
	int raw_kind;             /* raw-receive method (enum raw_kind), -1: each back end's own */
	int bsize_steps;          /* burst-size search steps (0: none) */
	int no_busy_clock;        /* --no-busy-clock: the steady step's daemon without the
	                           * feed's busy clock (struct feedcpu busy_*) */
	uint32_t mask;            /* back ends */
	const char *results;      /* results folder */
	const char *day;          /* daily-format input, NULL = generate */
	uint64_t day_msgs;        /* generated day size */
	int generated;            /* the day is uf-gen's (every message makes a record) */
	char bindir[2048];        /* uringfeed, uf-replay, uf-gen */
	char tmp[2048];           /* temp dir */
	int ncpu;                 /* CPUs available */
	double size_rates[E2E_SIZE_RATES]; /* --sizes: rates of the datagram-size rows */
	int nsize_rates;                   /* entries (0: no --sizes, the usual run) */
};

/* Burst drain times of one step: for every burst whose messages all arrived, the time from
 * its first datagram's kernel receive timestamp to the read of its last message (the end of
 * the queue). */
struct drain {
	uint64_t n;    /* complete bursts */
	uint64_t p50;  /* ns */
	uint64_t max;  /* ns */
	uint64_t mean; /* ns */
};

/* The daemon's own wire-to-publish histogram (GET /status feeds[0].latency_ns). It is
 * cumulative and has no buckets there yet: the figures cover `prior` samples taken before
 * the step (a short warm-up after a fresh start) and the step's `n`. */
struct pubhist {
	uint64_t n, prior;
	uint64_t p50, p99, p999, max; /* ns */
};

/* One histogram of one step (GET /metrics before and after, differenced): exact count and
 * mean, p50 / p99 interpolated in power-of-two buckets (e2e_hist_quantile). */
struct histfig {
	uint64_t n;    /* samples in the step */
	uint64_t mean; /* ns, exact (sum / count) */
	uint64_t p50;  /* ns, interpolated */
	uint64_t p99;  /* ns, interpolated */
};

/* The daemon's per-stage figures over one step (timed packets: 1 in stage_timing_every). */
struct stagefigs {
	int ok;                         /* /metrics read before and after */
	struct histfig pub;             /* wire to publish, per message, this step only */
	struct histfig st[E2E_NSTAGES]; /* receive, arbitration, decode, books, ring, image */
};

/* Issue 26: the feed thread's own CPU per message in a steady step, the idle spin taken out.
 * A busy-polling feed thread is on its CPU all the time, so its CPU time over a step is the
 * wall time whatever the rate; what the messages cost is that time less the empty polls
 * (the daemon counts them: busy_polls) at what one empty poll costs, measured on the same
 * thread with nothing arriving just before the step (idle_*). All stages: receive (the
 * io_uring reaps and enters), arbitration, decode, books, ring, image, wakes. */
struct feedcpu {
	int ok;                  /* measured */
	char note[96];           /* why not */
	uint64_t idle_run_ns;    /* calibration window: the thread's CPU time */
	uint64_t idle_polls;     /* and its empty polls */
	double idle_ns_per_poll; /* idle_run_ns / idle_polls */
	uint64_t run_ns;         /* the step: the thread's CPU time (schedstat) */
	uint64_t polls;          /* its empty polls */
	uint64_t messages;       /* messages it delivered */
	double run_per_msg;      /* run_ns / messages, ns: spin included */
	double work_per_msg;     /* (run_ns - polls x idle_ns_per_poll) / messages, ns: the
	                          * estimate */
	int busy_ok;             /* the daemon's busy clock was on and counted (busy_ns) */
	uint64_t busy_ns;        /* the step: the feed's busy_ns delta (loop turns that did
	                          * work, timed by the feed itself on its tick clock) */
	double busy_per_msg;     /* busy_ns / messages, ns: the exact figure */
	uint64_t wait_ns;        /* the step: time the thread was runnable and not running
	                          * (schedstat): busy_ns is wall time, so preemption inside a
	                          * working turn is in it; at most this much of it */
	int sys_ok;              /* sys_ns read at both ends of the step */
	uint64_t sys_ns;         /* the step: the thread's time in the kernel (stime, clock
	                          * ticks): without SQPOLL the receive copies of both lines, run
	                          * as task work in the feed's own turns (with SQPOLL the SQ
	                          * thread makes them); and, without IRQ time accounting, the
	                          * interrupts its CPU served meanwhile (irqs) */
	double sys_per_msg;      /* sys_ns / messages */
	int irq_ok;              /* irqs read at both ends of the step */
	struct e2e_irqs irqs;    /* the step: interrupts the feed's CPU served (their ticks are
	                          * in sys_ns too on a kernel without IRQ time accounting) */
};

/* One replay step's outcome. */
struct step {
	int ran;                 /* 1 when it ran */
	double offered;          /* msg/s asked of uf-replay (mean) */
	double burst;            /* burst factor, 0 = steady */
	uint64_t sent;           /* messages in the replayed file */
	double replay_s;         /* uf-replay's own duration */
	double achieved;         /* sent / replay_s */
	uint64_t delivered;      /* feed messages delta */
	uint64_t cpu_ns;         /* uringfeed CPU over the replay */
	double wall_s;           /* replay wall time as uf-bench saw it */
	double cpu_per_msg;      /* ns */
	double cpu_util;         /* CPUs busy on average */
	struct e2e_status d;     /* counter deltas */
	uint64_t lap_lost;       /* consumers, summed */
	uint64_t gap_recs;       /* consumers, summed */
	uint64_t seq_skipped;    /* consumers, summed: feed_seq numbers with no LAST record */
	uint64_t seq_back;       /* consumers, summed: feed_seq going backwards */
	uint64_t cons_msgs;      /* LAST records, slowest consumer */
	int loss;                /* any loss */
	char why[160];           /* which counters said loss */
	struct uf_bench_pct lat; /* latency (steady/burst only) */
	double plot_x[NPLOT];    /* 1 / (1 - quantile) */
	double plot_us[NPLOT];   /* latency at that quantile */
	int nplot;               /* points */
	struct pubhist pub;      /* wire to publish (the daemon's histogram) */
	struct drain drain;      /* bursts: wire to consumer of a burst's last message */
	struct stagefigs stages; /* the daemon's per-stage histograms over this step */
	struct feedcpu fcpu;     /* the steady step: the feed thread's CPU per message */
};

/* The raw-receive baseline of one latency step (e2e_raw.h). */
struct rawres {
	int ran;                 /* 1 when it ran */
	int kind;                /* enum raw_kind */
	char note[160];          /* why not */
	uint64_t sent;           /* messages replayed */
	uint64_t messages;       /* messages received (first copies) */
	uint64_t datagrams;      /* datagrams received (first copies) */
	uint64_t kernel_drops;   /* SO_RXQ_OVFL */
	double achieved;         /* uf-replay's rate */
	struct uf_bench_pct lat; /* read time - rx_ts, one sample per message */
	struct drain drain;      /* bursts */
};

/* One bounded search for the highest loss-free rate (driven by e2e_search.c). */
struct search {
	struct step st[MAX_SEARCH]; /* steps, in the order run */
	int n;                      /* steps run */
	double max_rate;            /* highest achieved rate of a loss-free step (0: none) */
	int max_idx;                /* its index in st[] (-1: none) */
	double first_loss_rate;     /* lowest offered rate that lost (0: none) */
	int sender_limited;         /* stopped because uf-replay could go no faster */
	double rate;                /* the rate to offer next */
	double cap;                 /* offered rates stay at or below it */
	int steps;                  /* steps allowed (<= MAX_SEARCH) */
	int done;                   /* the search is over */
};

/* The largest single burst absorbed with no loss (e2e_run.c run_bsize). */
struct bsize {
	struct step st[MAX_SEARCH]; /* steps in the order run (offered 0: back to back) */
	int n;                      /* steps run */
	uint64_t max_ok;            /* largest loss-free burst, messages (0: none) */
	int max_idx;                /* its step (-1: none) */
	uint64_t first_loss;        /* smallest lossy burst (0: none) */
	int capped;                 /* the whole day went through as one burst */
};

/* One back end's results. */
struct beres {
	enum backend be;           /* back end */
	int ok;                    /* ran to the end */
	char note[256];            /* why not, or a remark */
	struct step steady, burst; /* latency steps */
	struct step cpu;           /* issue 26 item 2: a steady replay at --rate into a daemon with
	                            * its busy clock on, apart from the latency steps (the clock
	                            * read makes an empty poll slower); ran = 0 with
	                            * --no-busy-clock: then the steady step's estimate stands */
	struct rawres raw_steady;  /* the raw receiver, right before the steady step */
	struct rawres raw_burst;   /* and right before the burst step */
	struct placement place;    /* where each role ran during the steady steps */
	struct {
		int ok;             /* counted */
		char note[160];     /* why not */
		pid_t tid;          /* the feed thread */
		uint64_t calls;     /* its system calls over the window */
		char which[160];    /* "name:calls ..." (strace's order: most time first) */
		uint64_t datagrams; /* datagrams the feed received in the window (both lines) */
		double seconds;     /* window */
		double per_packet;  /* calls / datagrams */
		struct step st;     /* the steady replay it counted over */
	} sysc;
	struct search s[2]; /* rate searches: [0] steady, [1] bursts */
	struct bsize bsize; /* the largest burst absorbed */
};

#endif /* UF_BENCH_E2E_MODEL_H */
