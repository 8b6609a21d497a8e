/* uf-bench e2e: the report of a run, from the results alone (e2e_model.h): the text tables,
 * the JSON document (stdout with --json, always DIR/e2e.json) and the latency plots (gnuplot
 * data, script and PNGs in the results folder), with the machine they ran on and the ratios
 * of issue 8's aims. */
#ifndef UF_BENCH_E2E_REPORT_H
#define UF_BENCH_E2E_REPORT_H

#include <jansson.h>

#include "e2e_model.h"
#include "e2e_sizes.h"

/* The machine the figures come from. */
struct machine {
	char cpu[128];     /* lscpu model name */
	char kernel[128];  /* uname -r */
	int ncpu;          /* CPUs usable */
	double load_start; /* 1-minute load average before */
	double load_end;   /* and after */
};

/* The aims, as ratios of this run's figures (0 when a side did not run). */
struct ratios {
	double sq_vs_mmsg_rate; /* SQPOLL max rate / recvmmsg max rate (aim >= 1) */
	double sq_vs_mmsg_cpu;  /* SQPOLL CPU/msg / recvmmsg CPU/msg at their max rates (aim < 1) */
	double epoll_vs_sq_p99; /* epoll burst p99 / SQPOLL burst p99 (aim >= 5) */
	double epoll_vs_nosq_p99;     /* epoll burst p99 / io_uring (no SQPOLL) burst p99 */
	double epoll_vs_mmsg_p99;     /* epoll burst p99 / recvmmsg burst p99 */
	double sq_vs_mmsg_burst_rate; /* the same as sq_vs_mmsg_rate for the burst search */
};

/* Fills the CPU model, kernel release and CPU count (not the load averages). */
void e2e_machine_info(struct machine *m);

/* The ratios between the back ends of rs[0..n) that ran. */
void e2e_report_ratios(const struct beres *rs, int n, struct ratios *q);

/* The tables on stdout: latency per back end and case, highest loss-free rates, aims. */
void e2e_report_table(const struct beres *rs, int n, const struct e2e_opts *o,
                      const struct machine *m, const struct ratios *q);

/* The JSON document; takes ownership of `plots` (the array e2e_report_plots returned). */
json_t *e2e_report_json(const struct beres *rs, int n, const struct e2e_opts *o,
                        const struct machine *m, const struct ratios *q, json_t *plots);

/* Writes the plot data files and one gnuplot script into o->results and runs gnuplot;
 * returns the PNGs made (names relative to o->results; empty when gnuplot failed). */
json_t *e2e_report_plots(const struct beres *rs, int n, const struct e2e_opts *o,
                         const struct machine *m);

/* --sizes: the rows of every back end in rs[0..n) on stdout (latency by datagram size, the
 * ratios and whether issue 26's aim is met), and the same as the JSON document. */
void e2e_report_sizes_table(const struct sizeres *rs, int n, const struct machine *m);
json_t *e2e_report_sizes_json(const struct sizeres *rs, int n, const struct e2e_opts *o,
                              const struct machine *m);

#endif /* UF_BENCH_E2E_REPORT_H */
