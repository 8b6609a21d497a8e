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
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "common/uf_parse.h"
#include "common/uf_schedstat.h"
#include "common/uf_time.h"
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

/* One uf-replay command line: the step's file at `rate` (in bursts of `burst` x when > 1). */
struct replay_cmd {
	char file[PATH_MAX], out[PATH_MAX], errp[PATH_MAX], bin[PATH_MAX];
	char rate_s[32], burst_s[32], bper_s[32], a[48], b[48], rr[16], sess[16], mtu_s[24];
	char *argv[26];
	double burst_per; /* messages per burst as uf-replay computes it, 0: steady */
};

/* Writes the first n messages of the day (0: rate x secs; 2000 at least) to the step file and
 * builds the command. Returns the message count or -errno. */
static int64_t replay_prepare(struct run *r, const struct day *day, struct replay_cmd *c,
                              double rate, double burst, double secs, uint64_t n)
{
	const struct e2e_opts *o = r->o;
	double rate_sent, period_ms;
	int argc = 0, rc;

	if (!n)
		n = (uint64_t)(rate * secs);
	if (n < 2000)
		n = 2000;
	if (n > day->n)
		n = day->n;
	snprintf(c->file, sizeof(c->file), "%s/step.itch", o->tmp);
	snprintf(c->out, sizeof(c->out), "%s/replay.json", o->tmp);
	snprintf(c->errp, sizeof(c->errp), "%s/replay.err", o->tmp);
	snprintf(c->bin, sizeof(c->bin), "%s/uf-replay", o->bindir);
	if ((rc = e2e_day_write_prefix(day, n, c->file)) < 0)
		return rc;
	snprintf(c->rate_s, sizeof(c->rate_s), "%.0f", rate);
	snprintf(c->burst_s, sizeof(c->burst_s), "%g", burst);
	snprintf(c->bper_s, sizeof(c->bper_s), "%g", o->burst_ms);
	snprintf(c->a, sizeof(c->a), "%s:%u", r->group_a, r->port_a);
	snprintf(c->b, sizeof(c->b), "%s:%u", r->group_b, r->port_b);
	snprintf(c->rr, sizeof(c->rr), "%u", r->port_rr);
	snprintf(c->sess, sizeof(c->sess), "E2E%07u", ++r->session % 10000000u);
	/* uf-replay's own arithmetic on the same strings (replay_opts.c, replay_send.c) */
	c->burst_per = 0;
	if (burst > 1 && uf_parse_double(c->rate_s, 0, HUGE_VAL, &rate_sent) == 0 &&
	    uf_parse_double(c->bper_s, 0, HUGE_VAL, &period_ms) == 0)
		c->burst_per = rate_sent * (period_ms / 1e3);
	c->argv[argc++] = c->bin;
	c->argv[argc++] = "--in";
	c->argv[argc++] = c->file;
	c->argv[argc++] = "--a";
	c->argv[argc++] = c->a;
	c->argv[argc++] = "--b";
	c->argv[argc++] = c->b;
	c->argv[argc++] = "--interface";
	c->argv[argc++] = "127.0.0.1";
	c->argv[argc++] = "--session";
	c->argv[argc++] = c->sess;
	c->argv[argc++] = "--rate";
	c->argv[argc++] = c->rate_s;
	c->argv[argc++] = "--serve-rerequests";
	c->argv[argc++] = c->rr;
	if (burst > 1) {
		c->argv[argc++] = "--burst";
		c->argv[argc++] = c->burst_s;
		c->argv[argc++] = "--burst-period";
		c->argv[argc++] = c->bper_s;
	}
	if (r->mtu) {
		snprintf(c->mtu_s, sizeof(c->mtu_s), "%zu", r->mtu);
		c->argv[argc++] = "--mtu";
		c->argv[argc++] = c->mtu_s;
	}
	c->argv[argc] = NULL;
	return (int64_t)n;
}

/* One placement sample of every role running now (r->place). */
static void place_sample(struct run *r, pid_t sender, pid_t feed_tid, pid_t sq_tid,
                         pid_t raw_sq_tid)
{
	if (feed_tid > 0)
		(void)e2e_place_sample(r->place, PL_FEED, r->feed, feed_tid);
	if (sq_tid > 0)
		(void)e2e_place_sample(r->place, PL_SQPOLL, r->feed, sq_tid);
	if (r->raw_pid > 0)
		(void)e2e_place_sample(r->place, PL_RAW, r->raw_pid, r->raw_pid);
	if (raw_sq_tid > 0)
		(void)e2e_place_sample(r->place, PL_RAW_SQ, r->raw_pid, raw_sq_tid);
	for (int i = 0; i < r->ncons && r->feed > 0; i++)
		(void)e2e_place_sample(r->place, PL_CONSUMER, r->cons[i], r->cons[i]);
	(void)e2e_place_sample(r->place, PL_SENDER, sender, sender);
}

/* Runs the prepared uf-replay to its end; its own duration (JSON "seconds") in *secs. With
 * r->place set, samples where every role runs every 10 ms meanwhile. */
static int replay_run(struct run *r, struct replay_cmd *c, double timeout_s, double *secs)
{
	uint64_t t0 = uf_now_mono_ns(), next = t0;
	uint64_t end = t0 + (uint64_t)((timeout_s + 15) * 1e9);
	pid_t pid = uf_bench_spawn(c->argv, c->out, c->errp, r->o->sender_cpu);
	pid_t feed_tid = -1, sq_tid = -1, raw_sq_tid = -1;
	int st = -1;

	if (pid < 0)
		return (int)pid;
	if (r->place && r->feed > 0) {
		feed_tid = e2e_find_thread(r->feed, "uf-e2e");
		sq_tid = e2e_find_thread(r->feed, "iou-sqp");
	}
	if (r->place && r->raw_pid > 0)
		raw_sq_tid = e2e_find_thread(r->raw_pid, "iou-sqp");
	for (;;) {
		uint64_t now = uf_now_mono_ns();
		pid_t w = waitpid(pid, &st, WNOHANG);
		if (w == pid)
			break;
		if (w < 0 || now > end) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
			st = -1;
			break;
		}
		if (r->place && now >= next) {
			place_sample(r, pid, feed_tid, sq_tid, raw_sq_tid);
			next = now + 10000000ull;
		}
		usleep(2000);
	}
	if (st < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "uf-bench e2e: uf-replay failed (see %s)\n", c->errp);
		return -EIO;
	}
	{
		json_error_t jerr;
		json_t *j = json_load_file(c->out, 0, &jerr);
		*secs = json_real_value(json_object_get(j, "seconds"));
		if (json_is_integer(json_object_get(j, "seconds")))
			*secs = (double)json_integer_value(json_object_get(j, "seconds"));
		json_decref(j);
	}
	if (*secs <= 0)
		*secs = (double)(uf_now_mono_ns() - t0) / 1e9;
	return 0;
}

/* Drain times of the bursts whose messages all arrived: `first`/`last` per burst (earliest
 * rx_ts, read of the last message), `got` messages each; the expected counts come from the
 * replayed n and messages per burst. */
static void drain_stats(const uint64_t *first, const uint64_t *last, const uint64_t *got,
                        uint64_t n, double per, struct drain *d)
{
	uint64_t v[RAW_MAX_BURSTS], nb = 0, sum = 0, want[RAW_MAX_BURSTS] = {0};
	struct uf_bench_pct pc;

	memset(d, 0, sizeof(*d));
	if (per <= 0)
		return;
	for (uint64_t seq = 1; seq <= n; seq++) {
		uint64_t b = e2e_burst_of(seq, per);
		if (b < RAW_MAX_BURSTS)
			want[b]++;
	}
	for (uint64_t b = 0; b < RAW_MAX_BURSTS && want[b]; b++)
		if (got[b] == want[b] && first[b] && last[b] >= first[b]) {
			v[nb] = last[b] - first[b];
			sum += v[nb++];
		}
	if (!nb)
		return;
	uf_bench_percentiles(v, nb, &pc);
	d->n = nb;
	d->p50 = pc.p50;
	d->max = pc.max;
	d->mean = sum / nb;
}

static void histfig_of(const struct e2e_hist *a, const struct e2e_hist *b, struct histfig *f)
{
	struct e2e_hist d;
	e2e_hist_diff(a, b, &d);
	f->n = d.count;
	f->mean = d.count ? (uint64_t)(d.sum_ns / (double)d.count) : 0;
	f->p50 = e2e_hist_quantile(&d, 0.5);
	f->p99 = e2e_hist_quantile(&d, 0.99);
}

/* The step's own share of the daemon's cumulative histograms (before: m0, after: m1). */
static void stage_figs(const struct e2e_hists *m0, const struct e2e_hists *m1, struct stagefigs *sf)
{
	memset(sf, 0, sizeof(*sf));
	if (!m0->ok || !m1->ok)
		return;
	histfig_of(&m0->pub, &m1->pub, &sf->pub);
	for (int i = 0; i < E2E_NSTAGES; i++)
		histfig_of(&m0->stage[i], &m1->stage[i], &sf->st[i]);
	sf->ok = 1;
}

/* The feed thread's CPU time and its empty-poll count at one instant: the thread first, then
 * GET /status, in that order at both ends of a window, so the request's own delay is in
 * both ends alike. */
static int feed_cpu_mark(struct run *r, pid_t tid, uint64_t *run_ns, uint64_t *wait_ns,
                         struct e2e_status *st)
{
	int rc = uf_schedstat_read(r->feed, tid, run_ns, wait_ns);
	return rc < 0 ? rc : e2e_status_read(r->status_port, st);
}

/* What one empty poll of the feed thread costs, nothing arriving (struct feedcpu): its CPU
 * time over half a second of idle spin / the empty polls it counted meanwhile. */
static void feed_cpu_idle(struct run *r, pid_t tid, struct feedcpu *fc)
{
	struct e2e_status a, b;
	uint64_t ra = 0, rb = 0;

	if (feed_cpu_mark(r, tid, &ra, NULL, &a) < 0) {
		snprintf(fc->note, sizeof(fc->note), "feed thread %d: no schedstat", (int)tid);
		return;
	}
	e2e_sleep_ms(500);
	if (feed_cpu_mark(r, tid, &rb, NULL, &b) < 0) {
		snprintf(fc->note, sizeof(fc->note), "feed thread %d: no schedstat", (int)tid);
		return;
	}
	fc->idle_run_ns = rb - ra;
	fc->idle_polls = b.busy_polls - a.busy_polls;
	if (b.messages != a.messages)
		snprintf(fc->note, sizeof(fc->note), "messages arrived while idle");
	else if (!fc->idle_polls)
		snprintf(fc->note, sizeof(fc->note), "no empty polls counted (busy_polls)");
	else
		fc->idle_ns_per_poll = (double)fc->idle_run_ns / (double)fc->idle_polls;
}

/* One step of `want` messages (0: rate x secs) at `rate` (0: uf-replay as fast as it can). */
static int run_step_n(struct run *r, const struct day *day, int idx, struct step *s, double rate,
                      double burst, double secs, uint64_t want)
{
	const struct e2e_opts *o = r->o;
	struct replay_cmd cmd;
	struct e2e_status s0, s1;
	static struct e2e_hists m0, m1; /* big; one step at a time */
	uint64_t c0 = 0, c1 = 0, t0, t1, n, fr0 = 0, fr1 = 0, fw0 = 0, fw1 = 0, fs0 = 0, fs1 = 0;
	struct e2e_irqs iq0 = {0}, iq1 = {0};
	struct e2e_status q0, q1;
	struct feedcpu *fc = NULL;
	pid_t ftid = -1;
	int64_t got;
	int rc, track = idx == ST_BURST || (idx >= ST_BSIZE && idx < ST_FEEDCPU);

	memset(s, 0, sizeof(*s));
	s->offered = rate;
	s->burst = burst;
	if ((got = replay_prepare(r, day, &cmd, rate, burst, secs, want)) < 0)
		return (int)got;
	n = (uint64_t)got;
	s->sent = n;
	/* Drain tracking: the burst step per burst, a burst-size step as one burst. */
	{
		double none = 0;
		__atomic_store(&r->ctl->burst_per, &none, __ATOMIC_RELEASE);
	}
	if (track) {
		memset(r->ctl->burst_first_rx, 0, sizeof(r->ctl->burst_first_rx));
		memset(r->ctl->burst_last_rd, 0, sizeof(r->ctl->burst_last_rd));
		memset(r->ctl->burst_msgs, 0, sizeof(r->ctl->burst_msgs));
		cmd.burst_per = idx == ST_BURST ? cmd.burst_per : (double)n;
	}

	if (idx == ST_STEADY || idx == ST_FEEDCPU) { /* feed CPU per message (struct feedcpu) */
		fc = &s->fcpu;
		ftid = e2e_find_thread(r->feed, "uf-e2e");
		if (ftid > 0)
			feed_cpu_idle(r, ftid, fc);
		else
			snprintf(fc->note, sizeof(fc->note), "feed thread not found");
		if (!fc->idle_ns_per_poll)
			fc = NULL;
	}
	if ((rc = e2e_status_read(r->status_port, &s0)) < 0)
		return rc;
	(void)e2e_metrics_read(r->status_port, &m0); /* m0.ok = 0 when absent */
	__atomic_store_n(&r->ctl->step, (uint32_t)idx, __ATOMIC_RELEASE);
	if (track)
		__atomic_store(&r->ctl->burst_per, &cmd.burst_per, __ATOMIC_RELEASE);
	if (e2e_proc_cpu_ns(r->feed, &c0) < 0)
		return -ECHILD;
	if (fc && feed_cpu_mark(r, ftid, &fr0, &fw0, &q0) < 0)
		fc = NULL;
	if (fc && e2e_thread_sys_ns(r->feed, ftid, &fs0) < 0)
		fs0 = UINT64_MAX; /* no system time for this step */
	if (fc && (o->feed_cpu < 0 || e2e_cpu_irqs(o->feed_cpu, &iq0) < 0))
		iq0.hard = UINT64_MAX; /* not pinned, or no counts: none for this step */
	t0 = uf_now_mono_ns();
	rc = replay_run(r, &cmd, want ? (double)n / 1e5 + 5 : secs * 4, &s->replay_s);
	t1 = uf_now_mono_ns();
	if (e2e_proc_cpu_ns(r->feed, &c1) < 0)
		return -ECHILD;
	if (rc < 0)
		return rc;
	s->achieved = (double)n / s->replay_s;
	if (burst > 1) { /* the mean over whole periods: the last burst ends early */
		double per = o->burst_ms / 1e3;
		s->achieved = (double)n / (ceil(s->replay_s / per - 1e-6) * per);
	}
	s->wall_s = (double)(t1 - t0) / 1e9;
	s->cpu_ns = c1 - c0;

	/* Drain: every message in and every consumer at the ring's tail, 3 s at most. */
	for (uint64_t give_up = uf_now_mono_ns() + 3000000000ull;;) {
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
		if (done || uf_now_mono_ns() > give_up || e2e_stop)
			break;
		e2e_sleep_ms(5);
	}
	if (fc && feed_cpu_mark(r, ftid, &fr1, &fw1, &q1) == 0) {
		/* the work: the thread's time less its empty polls at the idle cost of one */
		double spin = (double)(q1.busy_polls - q0.busy_polls) * fc->idle_ns_per_poll;
		fc->run_ns = fr1 - fr0;
		fc->wait_ns = fw1 - fw0;
		fc->polls = q1.busy_polls - q0.busy_polls;
		fc->messages = q1.messages - q0.messages;
		/* the exact figure, same window: the feed's own sum of its working turns */
		fc->busy_ns = q1.busy_ns - q0.busy_ns;
		if (fc->messages) {
			fc->run_per_msg = (double)fc->run_ns / (double)fc->messages;
			fc->work_per_msg = ((double)fc->run_ns - spin) / (double)fc->messages;
			fc->ok = 1;
			if (fs0 != UINT64_MAX && e2e_thread_sys_ns(r->feed, ftid, &fs1) == 0 &&
			    fs1 >= fs0) {
				fc->sys_ns = fs1 - fs0;
				fc->sys_per_msg = (double)fc->sys_ns / (double)fc->messages;
				fc->sys_ok = 1;
			}
			if (iq0.hard != UINT64_MAX && e2e_cpu_irqs(o->feed_cpu, &iq1) == 0) {
				fc->irqs.hard = iq1.hard - iq0.hard;
				fc->irqs.resched = iq1.resched - iq0.resched;
				fc->irqs.soft = iq1.soft - iq0.soft;
				fc->irqs.net_rx = iq1.net_rx - iq0.net_rx;
				fc->irq_ok = 1;
			}
			if (r->busy_clock && fc->busy_ns) {
				fc->busy_per_msg = (double)fc->busy_ns / (double)fc->messages;
				fc->busy_ok = 1;
			}
		}
	}
	(void)e2e_metrics_read(r->status_port, &m1);
	stage_figs(&m0, &m1, &s->stages);
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
	D(line_packets);
	D(batches);
	D(sq_wakeups);
	D(ring_wakes);
	D(ring_wakes_idle);
	D(ring_wakes_async);
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
	s->pub.n = s1.pub_count - s0.pub_count;
	s->pub.prior = s0.pub_count;
	s->pub.p50 = s1.pub_p50;
	s->pub.p99 = s1.pub_p99;
	s->pub.p999 = s1.pub_p999;
	s->pub.max = s1.pub_max;
	if (track) { /* the slowest consumer's drain of each burst */
		uint64_t last[RAW_MAX_BURSTS], fst[RAW_MAX_BURSTS], cnt[RAW_MAX_BURSTS];
		for (int b = 0; b < RAW_MAX_BURSTS; b++) {
			fst[b] = r->ctl->burst_first_rx[0][b];
			last[b] = r->ctl->burst_last_rd[0][b];
			cnt[b] = r->ctl->burst_msgs[0][b];
			for (int i = 1; i < r->ncons; i++) {
				if (r->ctl->burst_last_rd[i][b] > last[b])
					last[b] = r->ctl->burst_last_rd[i][b];
				if (r->ctl->burst_msgs[i][b] < cnt[b])
					cnt[b] = r->ctl->burst_msgs[i][b];
			}
		}
		drain_stats(fst, last, cnt, n, cmd.burst_per, &s->drain);
	}
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

static int run_step(struct run *r, const struct day *day, int idx, struct step *s, double rate,
                    double burst, double secs)
{
	return run_step_n(r, day, idx, s, rate, burst, secs, 0);
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

/* The raw-receive baseline of one latency step: the same replay (rate, bursts, message
 * count, groups, ports) read by e2e_raw.c's receiver while no uringfeed runs. */
static int run_raw(struct run *r, const struct day *day, struct rawres *w, double rate,
                   double burst, double secs)
{
	const struct e2e_opts *o = r->o;
	struct replay_cmd cmd;
	struct raw_args a;
	struct rawctl *c = r->raw;
	int64_t got;
	double rs = 0;
	pid_t pid;
	int rc;

	memset(w, 0, sizeof(*w));
	memset(&a, 0, sizeof(a));
	w->kind = (int)e2e_raw_method(o->raw_kind, r->be);
	if ((got = replay_prepare(r, day, &cmd, rate, burst, secs, 0)) < 0)
		return (int)got;
	w->sent = (uint64_t)got;
	memset(c, 0, sizeof(*c));
	c->want = w->sent;
	c->burst_per = cmd.burst_per;
	a.kind = (enum raw_kind)w->kind;
	snprintf(a.group[0], sizeof(a.group[0]), "%s", r->group_a);
	snprintf(a.group[1], sizeof(a.group[1]), "%s", r->group_b);
	a.port[0] = r->port_a;
	a.port[1] = r->port_b;
	memcpy(a.session, cmd.sess, 10);
	a.cpu = o->feed_cpu;
	a.sq_cpu = o->sqpoll_cpu;
	a.samples = r->raw_samples;
	a.cap = r->cap;
	pid = e2e_raw_start(&a, c);
	if (pid < 0) {
		snprintf(w->note, sizeof(w->note), "raw receiver: %.140s", c->err);
		return -EIO;
	}
	r->raw_pid = pid;
	rc = replay_run(r, &cmd, secs * 4, &rs);
	r->raw_pid = -1;
	if (e2e_raw_finish(pid, c, rc < 0 ? 0 : 3000) < 0)
		fprintf(stderr, "uf-bench e2e: the raw receiver had to be killed\n");
	if (rc < 0) {
		snprintf(w->note, sizeof(w->note), "uf-replay failed");
		return rc;
	}
	w->achieved = rs > 0 ? (double)w->sent / rs : 0;
	w->messages = c->messages;
	w->datagrams = c->datagrams;
	w->kernel_drops = c->kernel_drops;
	uf_bench_percentiles(r->raw_samples, c->nsamples, &w->lat);
	drain_stats(c->burst_first_rx, c->burst_last_rd, c->burst_msgs, w->sent, cmd.burst_per,
	            &w->drain);
	if (w->messages < w->sent)
		snprintf(w->note, sizeof(w->note), "received %" PRIu64 " of %" PRIu64 " messages",
		         w->messages, w->sent);
	w->ran = 1;
	return 0;
}

/* System calls of the feed thread per datagram over a steady replay of `secs` at --rate,
 * counted by strace from outside (its own step: ptrace slows every system call, so the
 * latency steps never run under it). The window runs from the attach to the detach. */
static void run_syscalls(struct run *r, const struct day *day, struct beres *res, double secs)
{
	struct e2e_status s0, s1;
	struct sysc sc;
	uint64_t t0;
	pid_t tid = e2e_find_thread(r->feed, "uf-e2e");

	if (tid < 0) {
		snprintf(res->sysc.note, sizeof(res->sysc.note), "feed thread uf-e2e not found");
		return;
	}
	res->sysc.tid = tid;
	if (e2e_status_read(r->status_port, &s0) < 0) {
		snprintf(res->sysc.note, sizeof(res->sysc.note), "GET /status failed");
		return;
	}
	if (e2e_sysc_start(&sc, r->o->tmp, tid) < 0) {
		snprintf(res->sysc.note, sizeof(res->sysc.note), "%s", sc.note);
		return;
	}
	t0 = uf_now_mono_ns();
	(void)run_step(r, day, ST_SYSCALL, &res->sysc.st, r->o->rate, 0, secs);
	if (e2e_sysc_stop(&sc) < 0 || e2e_status_read(r->status_port, &s1) < 0) {
		snprintf(res->sysc.note, sizeof(res->sysc.note), "%s",
		         sc.note[0] ? sc.note : "GET /status failed");
		return;
	}
	res->sysc.seconds = (double)(uf_now_mono_ns() - t0) / 1e9;
	res->sysc.calls = sc.calls;
	snprintf(res->sysc.which, sizeof(res->sysc.which), "%s", sc.top);
	res->sysc.datagrams = s1.line_packets - s0.line_packets;
	res->sysc.per_packet =
	    res->sysc.datagrams ? (double)sc.calls / (double)res->sysc.datagrams : 0;
	res->sysc.ok = res->sysc.datagrams > 0;
	if (!res->sysc.ok)
		snprintf(res->sysc.note, sizeof(res->sysc.note), "no datagram in the window");
}

/* What each role was asked to run on (-2: the role does not exist in this run). */
static void place_init(const struct e2e_opts *o, enum backend be, struct placement *p)
{
	enum raw_kind rk = e2e_raw_method(o->raw_kind, be);

	memset(p, 0, sizeof(*p));
	p->r[PL_FEED].configured = o->feed_cpu;
	p->r[PL_SQPOLL].configured =
	    e2e_backend_feed(be) == UF_BACKEND_IO_URING ? o->sqpoll_cpu : -2;
	p->r[PL_CONSUMER].configured = o->consumer_cpu;
	p->r[PL_SENDER].configured = o->sender_cpu;
	p->r[PL_RAW].configured = o->feed_cpu;
	p->r[PL_RAW_SQ].configured = rk == RAW_URING_SQPOLL ? o->sqpoll_cpu : -2;
}

/* ---- one back end ----------------------------------------------------------------------- */

/* Waits until every consumer has attached `want[i]` times. */
static int wait_attached(struct run *r, const uint32_t *want, struct beres *res)
{
	for (uint64_t give_up = uf_now_mono_ns() + 20000000000ull;;) {
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
		if (uf_now_mono_ns() > give_up || e2e_stop) {
			snprintf(res->note, sizeof(res->note),
			         "consumers not attached within 20 s");
			return -ETIMEDOUT;
		}
		e2e_sleep_ms(5);
	}
}

/* Stops the daemon on purpose (a raw step follows): consumers wait for the next one. */
static void feed_down(struct run *r)
{
	__atomic_store_n(&r->ctl->feed_pid, 0, __ATOMIC_RELEASE);
	e2e_daemon_stop(r);
	uf_ring_unlink(r->ring, NULL);
}

/* A fresh daemon on a new status port, consumers attached to its ring, and a warm-up of
 * `warm_s` seconds at --rate (2000 messages at least). */
static int feed_up(struct run *r, const struct day *day, struct beres *res, double warm_s)
{
	uint32_t want[MAXC];
	struct step warm;
	int port = e2e_free_port(SOCK_STREAM);

	for (int i = 0; i < r->ncons; i++)
		want[i] = __atomic_load_n(&r->ctl->attached[i], __ATOMIC_ACQUIRE) + 1;
	if (port < 0) {
		snprintf(res->note, sizeof(res->note), "no free TCP port for the status endpoint");
		return port;
	}
	r->status_port = (uint16_t)port;
	if (e2e_daemon_start(r, res) < 0 || wait_attached(r, want, res) < 0)
		return -EIO;
	return run_step(r, day, ST_WARMUP, &warm, r->o->rate, 0, warm_s);
}

/* A lossy step leaves the feed recovering a gap (its re-request server, uf-replay, is gone)
 * and would charge the give-up to the next step: start a fresh daemon instead, so every step
 * is measured on its own. Consumers follow it to the new ring. */
static int restart_feed(struct run *r, const struct day *day, struct beres *res)
{
	e2e_daemon_stop(r);
	uf_ring_unlink(r->ring, NULL);
	return feed_up(r, day, res, 0.2);
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

/* The largest burst absorbed with no loss: single bursts of N messages sent back to back
 * (uf-replay --rate 0) after silence, N doubling from one --burst burst (--rate x
 * --burst-period, 2000 at least) until a step loses, then bisected; --bsize-steps steps at
 * most, N capped by the day. A lossy step is followed by a fresh daemon. */
static int run_bsize(struct run *r, const struct day *day, struct beres *res)
{
	const struct e2e_opts *o = r->o;
	struct bsize *b = &res->bsize;
	uint64_t size = (uint64_t)(o->rate * o->burst_ms / 1e3), lo = 0, hi = 0;

	if (size < 2000)
		size = 2000;
	b->max_idx = -1;
	for (b->n = 0; b->n < o->bsize_steps && b->n < MAX_SEARCH && !e2e_stop;) {
		struct step *s = &b->st[b->n];
		if (size > day->n)
			size = day->n;
		fprintf(stderr, "uf-bench e2e: %s: burst size %d/%d: %" PRIu64 " messages...\n",
		        e2e_backend_label(r->be), b->n + 1, o->bsize_steps, size);
		if (run_step_n(r, day, ST_BSIZE + b->n, s, 0, 0, 0, size) < 0) {
			e2e_daemon_step_failed(r, res, "a burst-size step failed");
			return -EIO;
		}
		b->n++;
		if (s->loss) {
			hi = size;
			if (!b->first_loss || size < b->first_loss)
				b->first_loss = size;
			if (restart_feed(r, day, res) < 0)
				return -EIO;
		} else if (size > lo) {
			lo = size;
			/* what uf-replay reports it sent, not what was asked: the report's
			 * figure is a step that really went through */
			b->max_ok = s->sent ? s->sent : size;
			b->max_idx = b->n - 1;
		}
		if (!hi && lo >= day->n) {
			b->capped = 1; /* the whole day in one burst went through */
			break;
		}
		if (hi && hi - lo <= (lo / 16 > 1000 ? lo / 16 : 1000))
			break;
		size = hi ? lo + (hi - lo) / 2 : size * 2;
		if (!lo && hi)
			size = hi / 2;
	}
	return 0;
}

/* The run's addresses: free ports on loopback (status, both lines, re-requests), the two
 * groups 239.<net>.<pid>.<2be+1|2be+2> and the ring "ufbench-<tag>-<pid>-<be>" (<= 31), so
 * that runs of several back ends and concurrent uf-bench processes never share one.
 * Returns 0, or -1 with `note` saying why. */
int e2e_run_addresses(struct run *r, int net, const char *tag, char *note, size_t note_len)
{
	int tp = e2e_free_port(SOCK_STREAM), pa = e2e_free_port(SOCK_DGRAM);
	int pb = e2e_free_port(SOCK_DGRAM), prr = e2e_free_port(SOCK_DGRAM);
	int be = (int)r->be;

	if (tp < 0 || pa < 0 || pb < 0 || prr < 0 || pa == pb || pa == prr || pb == prr) {
		snprintf(note, note_len, "no free ports on 127.0.0.1");
		return -1;
	}
	r->status_port = (uint16_t)tp;
	r->port_a = (uint16_t)pa;
	r->port_b = (uint16_t)pb;
	r->port_rr = (uint16_t)prr;
	snprintf(r->group_a, sizeof(r->group_a), "239.%d.%d.%d", net, (int)(getpid() % 250),
	         1 + 2 * be);
	snprintf(r->group_b, sizeof(r->group_b), "239.%d.%d.%d", net, (int)(getpid() % 250),
	         2 + 2 * be);
	snprintf(r->ring, sizeof(r->ring), "ufbench-%s-%d-%d", tag, (int)getpid(), be);
	return 0;
}

void e2e_run_backend(const struct e2e_opts *o, enum backend be, const struct day *day,
                     struct beres *res)
{
	struct run r = {.o = o, .be = be, .feed = -1, .raw_pid = -1};
	double per_search, per_burst, t_lat;
	int rc;

	memset(res, 0, sizeof(*res));
	res->be = be;
	res->s[0].max_idx = res->s[1].max_idx = -1;
	if (e2e_run_addresses(&r, 88, "e2e", res->note, sizeof(res->note)) < 0)
		return;

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
	r.raw = uf_bench_shared_alloc(sizeof(*r.raw));
	r.raw_samples = uf_bench_shared_alloc(r.cap * sizeof(uint64_t));
	if (!r.ctl || !r.samples || !r.raw || !r.raw_samples) {
		snprintf(res->note, sizeof(res->note), "out of memory for %zu bytes of samples",
		         r.samples_size);
		goto out_free;
	}
	/* Alternated, each pair on the same CPUs with nothing else of ours running: raw steady,
	 * feed steady, raw burst, feed burst. uringfeed is started afresh (with a short warm-up)
	 * before each of its latency steps, so its own cumulative histogram holds that step. */
	fprintf(stderr, "uf-bench e2e: %s: raw receive (%s), steady %.0f msg/s...\n",
	        e2e_backend_label(be), e2e_raw_name(e2e_raw_method(o->raw_kind, be)), o->rate);
	place_init(o, be, &res->place);
	r.place = &res->place;
	if (run_raw(&r, day, &res->raw_steady, o->rate, 0, t_lat) < 0)
		fprintf(stderr, "uf-bench e2e: %s: %s\n", e2e_backend_label(be),
		        res->raw_steady.note);
	if (e2e_daemon_start(&r, res) < 0)
		goto out_stop;
	for (int i = 0; i < o->consumers; i++) {
		pid_t pid = uf_bench_fork_on(SIGKILL, o->consumer_cpu);
		if (pid < 0)
			break;
		if (pid == 0)
			_exit(e2e_consumer_main(&r, i));
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
		r.place = NULL;
		if (run_step(&r, day, ST_WARMUP, &warm, o->rate, 0, 0) < 0) {
			e2e_daemon_step_failed(&r, res, "a latency step failed");
			goto out_stop;
		}
		r.place = &res->place;
		rc = run_step(&r, day, ST_STEADY, &res->steady, o->rate, 0, t_lat);
		r.place = NULL;
		if (rc < 0) {
			e2e_daemon_step_failed(&r, res, "a latency step failed");
			goto out_stop;
		}
		fprintf(stderr, "uf-bench e2e: %s: system calls of the feed thread (strace)...\n",
		        e2e_backend_label(be));
		run_syscalls(&r, day, res, t_lat / 2 > 0.5 ? t_lat / 2 : 0.5);
		feed_down(&r);
		/* Issue 26 item 2, the exact figure: a daemon of its own with the busy clock on
		 * (one clock read per loop turn: an empty poll costs ~2x, so not in any latency
		 * step), the same steady replay at --rate; every other daemon runs without. */
		if (!o->no_busy_clock) {
			fprintf(stderr,
			        "uf-bench e2e: %s: feed CPU, busy clock on, steady %.0f "
			        "msg/s...\n",
			        e2e_backend_label(be), o->rate);
			r.busy_clock = 1; /* the daemon's config, and what its step may count on */
			if (feed_up(&r, day, res, 0) < 0)
				goto out_stop;
			if (run_step(&r, day, ST_FEEDCPU, &res->cpu, o->rate, 0, t_lat) < 0) {
				e2e_daemon_step_failed(&r, res, "the feed CPU step failed");
				goto out_stop;
			}
			feed_down(&r);
			r.busy_clock = 0;
		}
		if (run_raw(&r, day, &res->raw_burst, o->rate, o->burst, t_lat) < 0)
			fprintf(stderr, "uf-bench e2e: %s: %s\n", e2e_backend_label(be),
			        res->raw_burst.note);
		if (feed_up(&r, day, res, 0) < 0)
			goto out_stop;
		if (run_step(&r, day, ST_BURST, &res->burst, o->rate, o->burst, t_lat) < 0) {
			e2e_daemon_step_failed(&r, res, "a latency step failed");
			goto out_stop;
		}
	}
	if (run_bsize(&r, day, res) < 0)
		goto out_stop;
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
	uf_bench_shared_free(r.raw, sizeof(*r.raw));
	uf_bench_shared_free(r.raw_samples, r.cap * sizeof(uint64_t));
}

int e2e_run_raw_step(struct run *r, const struct day *day, struct rawres *w, double rate,
                     double secs)
{
	return run_raw(r, day, w, rate, 0, secs);
}

int e2e_run_feed_up(struct run *r, const struct day *day, struct beres *res, double warm_s)
{
	return feed_up(r, day, res, warm_s);
}

void e2e_run_feed_down(struct run *r)
{
	feed_down(r);
}

int e2e_run_feed_step(struct run *r, const struct day *day, struct step *s, double rate,
                      double secs)
{
	return run_step(r, day, ST_STEADY, s, rate, 0, secs);
}
