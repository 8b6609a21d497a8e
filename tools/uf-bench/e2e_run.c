/* uf-bench e2e: one back end's run, step by step (see e2e_run.h). A step writes a prefix of
 * the day, replays it with uf-replay at a rate (steady or in bursts), waits until the daemon
 * and every consumer have drained it, and turns the counters before and after into one
 * struct step: delivered messages, CPU per message, and which counters said loss. The rate
 * searches run steps at the rates e2e_search.c asks for; a lossy step is followed by a fresh
 * daemon so that every step is measured on its own. */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "e2e_run.h"
#include "e2e_search.h"
#include "ring/uf_ring.h"

volatile sig_atomic_t e2e_stop;

static void add_why(struct step *s, const char *what, uint64_t v)
{
	size_t len = strlen(s->why);
	if (!v)
		return;
	s->loss = 1;
	snprintf(s->why + len, sizeof(s->why) - len, "%s%s=%" PRIu64, len ? " " : "", what, v);
}

/* Fills the plot points of a sorted sample array: latency at quantiles 1 - 10^-x. */
static void plot_points(struct step *s, const uint64_t *v, size_t n)
{
	double xmax = n > 1 ? (double)n : 1;
	s->nplot = 0;
	if (n < 2)
		return;
	for (int k = 0; k < NPLOT; k++) {
		/* x = 1 / (1 - q) from 1 to n, log-spaced */
		double x = exp(log(xmax) * k / (NPLOT - 1));
		double q = 1.0 - 1.0 / x;
		size_t i = (size_t)(q * (double)(n - 1));
		s->plot_x[s->nplot] = x;
		s->plot_us[s->nplot] = (double)v[i] / 1000.0;
		s->nplot++;
	}
}

static int run_step(struct run *r, const struct day *day, int idx, struct step *s, double rate,
                    double burst, double secs)
{
	const struct e2e_opts *o = r->o;
	char file[PATH_MAX], out[PATH_MAX], errp[PATH_MAX], bin[PATH_MAX];
	char rate_s[32], burst_s[32], bper_s[32], a[48], b[48], rr[16], sess[16];
	struct e2e_status s0, s1;
	uint64_t c0 = 0, c1 = 0, t0, t1, n;
	char *argv[24];
	int argc = 0, st, rc;
	pid_t pid;

	memset(s, 0, sizeof(*s));
	s->offered = rate;
	s->burst = burst;
	n = (uint64_t)(rate * secs);
	if (n < 2000)
		n = 2000;
	if (n > day->n)
		n = day->n;
	snprintf(file, sizeof(file), "%s/step.itch", o->tmp);
	snprintf(out, sizeof(out), "%s/replay.json", o->tmp);
	snprintf(errp, sizeof(errp), "%s/replay.err", o->tmp);
	snprintf(bin, sizeof(bin), "%s/uf-replay", o->bindir);
	if ((rc = e2e_day_write_prefix(day, n, file)) < 0)
		return rc;
	s->sent = n;
	snprintf(rate_s, sizeof(rate_s), "%.0f", rate);
	snprintf(burst_s, sizeof(burst_s), "%g", burst);
	snprintf(bper_s, sizeof(bper_s), "%g", o->burst_ms);
	snprintf(a, sizeof(a), "%s:%u", r->group_a, r->port_a);
	snprintf(b, sizeof(b), "%s:%u", r->group_b, r->port_b);
	snprintf(rr, sizeof(rr), "%u", r->port_rr);
	snprintf(sess, sizeof(sess), "E2E%07u", ++r->session % 10000000u);
	argv[argc++] = bin;
	argv[argc++] = "--in";
	argv[argc++] = file;
	argv[argc++] = "--a";
	argv[argc++] = a;
	argv[argc++] = "--b";
	argv[argc++] = b;
	argv[argc++] = "--interface";
	argv[argc++] = "127.0.0.1";
	argv[argc++] = "--session";
	argv[argc++] = sess;
	argv[argc++] = "--rate";
	argv[argc++] = rate_s;
	argv[argc++] = "--serve-rerequests";
	argv[argc++] = rr;
	if (burst > 1) {
		argv[argc++] = "--burst";
		argv[argc++] = burst_s;
		argv[argc++] = "--burst-period";
		argv[argc++] = bper_s;
	}
	argv[argc] = NULL;

	if ((rc = e2e_status_read(r->status_port, &s0)) < 0)
		return rc;
	__atomic_store_n(&r->ctl->step, (uint32_t)idx, __ATOMIC_RELEASE);
	if (e2e_proc_cpu_ns(r->feed, &c0) < 0)
		return -ECHILD;
	t0 = uf_bench_now_ns();
	pid = e2e_spawn(argv, out, errp);
	if (pid < 0)
		return pid;
	st = uf_bench_wait_child(pid, (int)(secs * 4000) + 15000);
	t1 = uf_bench_now_ns();
	if (e2e_proc_cpu_ns(r->feed, &c1) < 0)
		return -ECHILD;
	if (st < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "uf-bench e2e: uf-replay failed (see %s)\n", errp);
		return -EIO;
	}
	{
		json_error_t jerr;
		json_t *j = json_load_file(out, 0, &jerr);
		s->replay_s = json_real_value(json_object_get(j, "seconds"));
		if (json_is_integer(json_object_get(j, "seconds")))
			s->replay_s = (double)json_integer_value(json_object_get(j, "seconds"));
		json_decref(j);
	}
	if (s->replay_s <= 0)
		s->replay_s = (double)(t1 - t0) / 1e9;
	s->achieved = (double)n / s->replay_s;
	if (burst > 1) { /* the mean over whole periods: the last burst ends early */
		double per = o->burst_ms / 1e3;
		s->achieved = (double)n / (ceil(s->replay_s / per - 1e-6) * per);
	}
	s->wall_s = (double)(t1 - t0) / 1e9;
	s->cpu_ns = c1 - c0;

	/* Drain: every message in and every consumer at the ring's tail, 3 s at most. */
	for (uint64_t give_up = uf_bench_now_ns() + 3000000000ull;;) {
		int done = 1;
		if ((rc = e2e_status_read(r->status_port, &s1)) < 0)
			return rc;
		if (s1.messages - s0.messages +
		        (s1.messages_unrecovered - s0.messages_unrecovered) <
		    n)
			done = 0;
		for (int i = 0; i < r->ncons && done; i++)
			if (__atomic_load_n(&r->ctl->position[i], __ATOMIC_ACQUIRE) <
			    s1.ring_sequence)
				done = 0;
		if (done || uf_bench_now_ns() > give_up || e2e_stop)
			break;
		e2e_sleep_ms(5);
	}
	s->delivered = s1.messages - s0.messages;
#define D(f) s->d.f = s1.f - s0.f
	D(messages);
	D(gaps);
	D(rerequests);
	D(gaps_unrecovered);
	D(messages_unrecovered);
	D(queue_overflows);
	D(line_gaps);
	D(line_enobufs);
	D(cq_overflows);
	D(end_of_session);
	D(records);
#undef D
	s->cons_msgs = UINT64_MAX;
	for (int i = 0; i < r->ncons; i++) {
		const struct cstep *cs = &r->ctl->res[i][idx];
		s->lap_lost += cs->lap_lost;
		s->gap_recs += cs->gap_recs;
		s->seq_skipped += cs->seq_skipped;
		s->seq_back += cs->seq_back;
		if (cs->messages < s->cons_msgs)
			s->cons_msgs = cs->messages;
	}
	if (r->ncons == 0)
		s->cons_msgs = 0;
	add_why(s, "gaps", s->d.gaps);
	add_why(s, "line_gaps", s->d.line_gaps);
	add_why(s, "rerequests", s->d.rerequests);
	add_why(s, "unrecovered", s->d.messages_unrecovered);
	add_why(s, "queue_overflows", s->d.queue_overflows);
	add_why(s, "cq_overflows", s->d.cq_overflows);
	add_why(s, "consumer_lapped", s->lap_lost);
	add_why(s, "gap_records", s->gap_recs);
	/* Every message of a generated day makes at least one record, so a feed_seq the
	 * consumer never saw is a hole; a real day may have messages that make none. */
	if (o->generated)
		add_why(s, "seq_holes", s->seq_skipped);
	add_why(s, "seq_backwards", s->seq_back);
	add_why(s, "undelivered", s->delivered < n ? n - s->delivered : 0);
	s->cpu_per_msg = s->delivered ? (double)s->cpu_ns / (double)s->delivered : 0;
	s->cpu_util = s->wall_s > 0 ? (double)s->cpu_ns / 1e9 / s->wall_s : 0;
	s->ran = 1;
	return 0;
}

/* Merges the consumers' samples of a sampled step, computes percentiles and plot points. */
static void step_latency(struct run *r, int idx, struct step *s)
{
	uint64_t total = 0, nall = 0, *all;
	int k = idx - ST_STEADY;

	for (int i = 0; i < r->ncons; i++)
		total += r->ctl->res[i][idx].nsamples;
	all = malloc((total ? total : 1) * sizeof(uint64_t));
	if (!all)
		return;
	for (int i = 0; i < r->ncons; i++) {
		uint64_t ns = r->ctl->res[i][idx].nsamples;
		memcpy(all + nall, r->samples + ((uint64_t)i * 2 + (uint64_t)k) * r->cap,
		       ns * sizeof(uint64_t));
		nall += ns;
	}
	uf_bench_percentiles(all, nall, &s->lat);
	plot_points(s, all, nall);
	free(all);
}

/* ---- one back end ----------------------------------------------------------------------- */

/* Waits until every consumer has attached `want[i]` times. */
static int wait_attached(struct run *r, const uint32_t *want, struct beres *res)
{
	for (uint64_t give_up = uf_bench_now_ns() + 20000000000ull;;) {
		int ready = 0;
		for (int i = 0; i < r->ncons; i++) {
			if (__atomic_load_n(&r->ctl->ready[i], __ATOMIC_ACQUIRE) == 2) {
				snprintf(res->note, sizeof(res->note),
				         "a consumer could not attach");
				return -EIO;
			}
			ready += __atomic_load_n(&r->ctl->attached[i], __ATOMIC_ACQUIRE) >= want[i];
		}
		if (ready == r->ncons)
			return 0;
		if (uf_bench_now_ns() > give_up || e2e_stop) {
			snprintf(res->note, sizeof(res->note),
			         "consumers not attached within 20 s");
			return -ETIMEDOUT;
		}
		e2e_sleep_ms(5);
	}
}

/* A lossy step leaves the feed recovering a gap (its re-request server, uf-replay, is gone)
 * and would charge the give-up to the next step: start a fresh daemon instead, so every step
 * is measured on its own. Consumers follow it to the new ring. */
static int restart_feed(struct run *r, const struct day *day, struct beres *res)
{
	uint32_t want[MAXC];
	struct step warm;
	int port = e2e_free_port(SOCK_STREAM);

	for (int i = 0; i < r->ncons; i++)
		want[i] = __atomic_load_n(&r->ctl->attached[i], __ATOMIC_ACQUIRE) + 1;
	e2e_daemon_stop(r);
	uf_ring_unlink(r->ring, NULL);
	if (port < 0) {
		snprintf(res->note, sizeof(res->note), "no free TCP port for the status endpoint");
		return port;
	}
	r->status_port = (uint16_t)port;
	if (e2e_daemon_start(r, res) < 0 || wait_attached(r, want, res) < 0)
		return -EIO;
	return run_step(r, day, ST_WARMUP, &warm, r->o->rate, 0, 0.2);
}

/* Rate search `which` (0 steady, 1 bursts of `burst` x the mean), `secs` of replay a step:
 * runs the steps e2e_search.c asks for, --steps (--burst-steps) at most. */
static int run_search(struct run *r, const struct day *day, struct beres *res, int which,
                      double burst, double secs)
{
	const struct e2e_opts *o = r->o;
	struct search *sr = &res->s[which];
	int steps = which ? o->burst_steps : o->steps;

	e2e_search_start(sr, o->rate * 2, o->max_rate, steps);
	while (!sr->done && !e2e_stop) {
		struct step *s = &sr->st[sr->n];
		fprintf(stderr, "uf-bench e2e: %s: %s search %d/%d at %.0f msg/s...\n",
		        e2e_backend_label(r->be), which ? "burst" : "steady", sr->n + 1, steps,
		        sr->rate);
		if (run_step(r, day, ST_SEARCH + which * MAX_SEARCH + sr->n, s, sr->rate, burst,
		             secs) < 0) {
			char what[80];
			snprintf(what, sizeof(what), "%s search step at %.0f msg/s failed",
			         which ? "burst" : "steady", sr->rate);
			e2e_daemon_step_failed(r, res, what);
			return -EIO;
		}
		e2e_search_record(sr);
		if (s->loss && restart_feed(r, day, res) < 0)
			return -EIO;
	}
	return 0;
}

void e2e_run_backend(const struct e2e_opts *o, enum backend be, const struct day *day,
                     struct beres *res)
{
	struct run r = {.o = o, .be = be, .feed = -1};
	int tp = e2e_free_port(SOCK_STREAM), pa = e2e_free_port(SOCK_DGRAM);
	int pb = e2e_free_port(SOCK_DGRAM), prr = e2e_free_port(SOCK_DGRAM);
	double per_search, per_burst, t_lat;

	memset(res, 0, sizeof(*res));
	res->be = be;
	res->s[0].max_idx = res->s[1].max_idx = -1;
	if (tp < 0 || pa < 0 || pb < 0 || prr < 0 || pa == pb || pa == prr || pb == prr) {
		snprintf(res->note, sizeof(res->note), "no free ports on 127.0.0.1");
		return;
	}
	r.status_port = (uint16_t)tp;
	r.port_a = (uint16_t)pa;
	r.port_b = (uint16_t)pb;
	r.port_rr = (uint16_t)prr;
	snprintf(r.group_a, sizeof(r.group_a), "239.88.%d.%d", (int)(getpid() % 250),
	         1 + 2 * (int)be);
	snprintf(r.group_b, sizeof(r.group_b), "239.88.%d.%d", (int)(getpid() % 250),
	         2 + 2 * (int)be);
	snprintf(r.ring, sizeof(r.ring), "ufbench-e2e-%d-%d", (int)getpid(), (int)be); /* <= 31 */

	/* --duration: 25 % steady, 25 % bursts, 30 % steady search, 20 % burst search */
	t_lat = o->duration * 0.25;
	per_search = o->duration * 0.3 / o->steps;
	if (per_search < 0.25)
		per_search = 0.25;
	per_burst = o->duration * 0.2 / o->burst_steps;
	if (per_burst < 5 * o->burst_ms / 1e3) /* several burst periods per step */
		per_burst = 5 * o->burst_ms / 1e3;
	r.cap = (uint64_t)(o->rate * t_lat * 1.5) + 10000;
	if (r.cap > MAX_SAMPLE)
		r.cap = MAX_SAMPLE;
	r.samples_size = (size_t)r.cap * 2 * (size_t)o->consumers * sizeof(uint64_t);
	r.ctl = uf_bench_shared_alloc(sizeof(*r.ctl));
	r.samples = uf_bench_shared_alloc(r.samples_size);
	if (!r.ctl || !r.samples) {
		snprintf(res->note, sizeof(res->note), "out of memory for %zu bytes of samples",
		         r.samples_size);
		goto out_free;
	}
	if (e2e_daemon_start(&r, res) < 0)
		goto out_stop;
	for (int i = 0; i < o->consumers; i++) {
		pid_t pid = fork();
		if (pid < 0)
			break;
		if (pid == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			_exit(e2e_consumer_main(&r, i));
		}
		r.cons[r.ncons++] = pid;
	}
	if (r.ncons < o->consumers) {
		snprintf(res->note, sizeof(res->note), "cannot fork consumers");
		goto out_stop;
	}
	{
		const uint32_t want[MAXC] = {1, 1, 1, 1};
		if (wait_attached(&r, want, res) < 0)
			goto out_stop;
	}
	{
		struct step warm;
		fprintf(stderr, "uf-bench e2e: %s: warm-up, steady %.0f msg/s, burst %gx...\n",
		        e2e_backend_label(be), o->rate, o->burst);
		if (run_step(&r, day, ST_WARMUP, &warm, o->rate, 0, 0.2) < 0 ||
		    run_step(&r, day, ST_STEADY, &res->steady, o->rate, 0, t_lat) < 0 ||
		    run_step(&r, day, ST_BURST, &res->burst, o->rate, o->burst, t_lat) < 0) {
			e2e_daemon_step_failed(&r, res, "a latency step failed");
			goto out_stop;
		}
	}
	if (run_search(&r, day, res, 0, 0, per_search) < 0 ||
	    run_search(&r, day, res, 1, o->burst, per_burst) < 0)
		goto out_stop;
	step_latency(&r, ST_STEADY, &res->steady);
	step_latency(&r, ST_BURST, &res->burst);
	res->ok = !e2e_stop;
	if (e2e_stop)
		snprintf(res->note, sizeof(res->note), "interrupted");

out_stop:
	if (r.ctl)
		__atomic_store_n(&r.ctl->stop, 1, __ATOMIC_RELEASE);
	e2e_daemon_stop(&r);
	for (int i = 0; i < r.ncons; i++)
		if (uf_bench_wait_child(r.cons[i], 5000) < 0)
			fprintf(stderr, "uf-bench e2e: a consumer had to be killed\n");
	uf_ring_unlink(r.ring, NULL);
out_free:
	uf_bench_shared_free(r.samples, r.samples_size);
	uf_bench_shared_free(r.ctl, sizeof(*r.ctl));
}
