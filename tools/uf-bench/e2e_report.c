/* uf-bench e2e: the report (see e2e_report.h). Formats only: every figure was measured by
 * e2e_run.c; only the plots write files and run gnuplot. */
#include "e2e_report.h"

#include "e2e_raw.h"

#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>

void e2e_machine_info(struct machine *m)
{
	char line[256];
	struct utsname u;
	FILE *f = fopen("/proc/cpuinfo", "r");

	snprintf(m->cpu, sizeof(m->cpu), "unknown CPU");
	while (f && fgets(line, sizeof(line), f)) {
		char *p = strchr(line, ':');
		if (strncmp(line, "model name", 10) == 0 && p) {
			p += 2;
			p[strcspn(p, "\n")] = '\0';
			snprintf(m->cpu, sizeof(m->cpu), "%s", p);
			break;
		}
	}
	if (f)
		fclose(f);
	snprintf(m->kernel, sizeof(m->kernel), "%s", uname(&u) == 0 ? u.release : "unknown");
	m->ncpu = uf_bench_ncpus();
}

static const struct beres *find_be(const struct beres *rs, int n, enum backend be)
{
	for (int i = 0; i < n; i++)
		if (rs[i].be == be && rs[i].ok)
			return &rs[i];
	return NULL;
}

static double cpu_at_max(const struct search *sr)
{
	return sr->max_idx >= 0 ? sr->st[sr->max_idx].cpu_per_msg : 0;
}

static double ratio(double a, double b)
{
	return a > 0 && b > 0 ? a / b : 0;
}

void e2e_report_ratios(const struct beres *rs, int n, struct ratios *q)
{
	const struct beres *sq = find_be(rs, n, BE_SQPOLL), *mm = find_be(rs, n, BE_RECVMMSG);
	const struct beres *ep = find_be(rs, n, BE_EPOLL), *ns = find_be(rs, n, BE_NOSQPOLL);

	memset(q, 0, sizeof(*q));
	if (sq && mm) {
		q->sq_vs_mmsg_rate = ratio(sq->s[0].max_rate, mm->s[0].max_rate);
		q->sq_vs_mmsg_cpu = ratio(cpu_at_max(&sq->s[0]), cpu_at_max(&mm->s[0]));
		q->sq_vs_mmsg_burst_rate = ratio(sq->s[1].max_rate, mm->s[1].max_rate);
	}
	if (ep && sq)
		q->epoll_vs_sq_p99 = ratio((double)ep->burst.lat.p99, (double)sq->burst.lat.p99);
	if (ep && ns)
		q->epoll_vs_nosq_p99 = ratio((double)ep->burst.lat.p99, (double)ns->burst.lat.p99);
	if (ep && mm)
		q->epoll_vs_mmsg_p99 = ratio((double)ep->burst.lat.p99, (double)mm->burst.lat.p99);
}

static void print_lat_row(const char *label, const char *what, const struct step *s)
{
	printf("%-16s %-22s %9.0f %9.1f %9.1f %9.1f %9.1f %9" PRIu64 " %10.0f %5.0f%%  %s\n", label,
	       what, s->achieved, (double)s->lat.p50 / 1e3, (double)s->lat.p99 / 1e3,
	       (double)s->lat.p999 / 1e3, (double)s->lat.max / 1e3, s->lat.n, s->cpu_per_msg,
	       s->cpu_util * 100, s->loss ? s->why : "none");
}

/* Issue 14: where the wire-to-publish time goes, per stage, for each latency step. */
static void print_stage_table(const struct beres *rs, int n)
{
	printf("\nper-stage time of a timed packet, us (uringfeed GET /metrics before and after "
	       "each step, differenced: this step only; mean exact / p50 interpolated in "
	       "power-of-two buckets)\n");
	printf("%-16s %-7s %8s", "backend", "case", "packets");
	for (int k = 0; k < E2E_NSTAGES; k++)
		printf(" %13s", e2e_stage_names[k]);
	printf(" %13s %13s\n", "pub(message)", "pub_p99");
	for (int i = 0; i < n; i++) {
		const struct beres *b = &rs[i];
		for (int w = 0; w < 2 && b->ok; w++) {
			const struct step *s = w ? &b->burst : &b->steady;
			const struct stagefigs *f = &s->stages;
			if (!f->ok) {
				printf("%-16s %-7s no stage histograms at /metrics\n",
				       e2e_backend_label(b->be), w ? "bursts" : "steady");
				continue;
			}
			printf("%-16s %-7s %8" PRIu64, e2e_backend_label(b->be),
			       w ? "bursts" : "steady", f->st[0].n);
			for (int k = 0; k < E2E_NSTAGES; k++)
				printf(" %6.2f/%6.2f", (double)f->st[k].mean / 1e3,
				       (double)f->st[k].p50 / 1e3);
			printf(" %6.1f/%6.1f %13.1f\n", (double)f->pub.mean / 1e3,
			       (double)f->pub.p50 / 1e3, (double)f->pub.p99 / 1e3);
		}
	}
}

void e2e_report_table(const struct beres *rs, int n, const struct e2e_opts *o,
                      const struct machine *m, const struct ratios *q)
{
	char what[64];

	printf("uf-bench e2e: uf-replay -> uringfeed -> %d consumer(s), loopback multicast A+B\n"
	       "machine: %s, kernel %s, %d CPUs, load average %.2f before, %.2f after "
	       "(shared machine: figures are noisy)\n"
	       "latency = consumer read (CLOCK_REALTIME) - kernel receive timestamp, one sample "
	       "per message; cpu = uringfeed utime+stime (all threads) / message\n\n",
	       o->consumers, m->cpu, m->kernel, m->ncpu, m->load_start, m->load_end);
	printf("%-16s %-22s %9s %9s %9s %9s %9s %9s %10s %6s  %s\n", "backend", "case", "msg/s",
	       "p50_us", "p99_us", "p99.9_us", "max_us", "samples", "cpu_ns/msg", "cpu", "loss");
	for (int i = 0; i < n; i++) {
		const struct beres *b = &rs[i];
		if (!b->ok) {
			printf("%-16s did not run: %s\n", e2e_backend_label(b->be), b->note);
			continue;
		}
		snprintf(what, sizeof(what), "steady");
		print_lat_row(e2e_backend_label(b->be), what, &b->steady);
		snprintf(what, sizeof(what), "bursts %gx/%gms", o->burst, o->burst_ms);
		print_lat_row(e2e_backend_label(b->be), what, &b->burst);
	}
	printf("\nagainst the raw-receive baseline (same replay, groups and CPUs, run just before "
	       "each step with uringfeed stopped; raw = read - kernel rx timestamp per message)\n");
	printf("%-16s %-7s %-16s %9s %9s %9s %9s %9s %9s %8s %8s %8s %8s\n", "backend", "case",
	       "raw_method", "raw_p50", "raw_p99", "pub_p50", "pub_p99", "cons_p50", "cons_p99",
	       "pub/raw", "pub/raw", "cons/raw", "cons/raw");
	printf("%-16s %-7s %-16s %9s %9s %9s %9s %9s %9s %8s %8s %8s %8s\n", "", "", "", "us", "us",
	       "us", "us", "us", "us", "p50", "p99", "p50", "p99");
	for (int i = 0; i < n; i++) {
		const struct beres *b = &rs[i];
		for (int w = 0; w < 2 && b->ok; w++) {
			const struct rawres *rw = w ? &b->raw_burst : &b->raw_steady;
			const struct step *s = w ? &b->burst : &b->steady;
			if (!rw->ran) {
				printf("%-16s %-7s raw receiver did not run: %s\n",
				       e2e_backend_label(b->be), w ? "bursts" : "steady", rw->note);
				continue;
			}
			printf("%-16s %-7s %-16s %9.1f %9.1f %9.1f %9.1f %9.1f %9.1f %8.2f %8.2f "
			       "%8.2f "
			       "%8.2f%s%s\n",
			       e2e_backend_label(b->be), w ? "bursts" : "steady",
			       e2e_raw_name((enum raw_kind)rw->kind), (double)rw->lat.p50 / 1e3,
			       (double)rw->lat.p99 / 1e3, (double)s->pub.p50 / 1e3,
			       (double)s->pub.p99 / 1e3, (double)s->lat.p50 / 1e3,
			       (double)s->lat.p99 / 1e3,
			       ratio((double)s->pub.p50, (double)rw->lat.p50),
			       ratio((double)s->pub.p99, (double)rw->lat.p99),
			       ratio((double)s->lat.p50, (double)rw->lat.p50),
			       ratio((double)s->lat.p99, (double)rw->lat.p99),
			       rw->note[0] ? "  raw: " : "", rw->note);
		}
	}
	printf("(pub = the daemon's wire-to-publish histogram, fresh daemon: %s; cons = wire to "
	       "consumer)\n",
	       "it also holds a 2000-message warm-up");
	print_stage_table(rs, n);
	printf("\n%gx burst drain: first datagram's rx timestamp to the read of the burst's last "
	       "message (complete bursts)\n",
	       o->burst);
	printf("%-16s %7s %12s %12s %7s %12s %12s %9s\n", "backend", "bursts", "cons_p50_us",
	       "cons_max_us", "raw_n", "raw_p50_us", "raw_max_us", "cons/raw");
	for (int i = 0; i < n; i++) {
		const struct beres *b = &rs[i];
		if (!b->ok)
			continue;
		printf("%-16s %7" PRIu64 " %12.1f %12.1f %7" PRIu64 " %12.1f %12.1f %9.2f\n",
		       e2e_backend_label(b->be), b->burst.drain.n, (double)b->burst.drain.p50 / 1e3,
		       (double)b->burst.drain.max / 1e3, b->raw_burst.drain.n,
		       (double)b->raw_burst.drain.p50 / 1e3, (double)b->raw_burst.drain.max / 1e3,
		       ratio((double)b->burst.drain.p50, (double)b->raw_burst.drain.p50));
	}
	printf("\nlargest single burst absorbed with no loss (sent back to back by uf-replay "
	       "--rate 0 after silence; drain = first rx timestamp to the consumer's read of the "
	       "last message)\n");
	printf("%-16s %12s %12s %14s %13s  %s\n", "backend", "max_msgs", "drain_us", "sender_msg/s",
	       "first_lossy", "search (messages: loss)");
	for (int i = 0; i < n; i++) {
		const struct beres *b = &rs[i];
		const struct bsize *z = &b->bsize;
		const struct step *m = z->max_idx >= 0 ? &z->st[z->max_idx] : NULL;
		char fl[24] = "none";
		if (!b->ok || !z->n)
			continue;
		if (z->first_loss)
			snprintf(fl, sizeof(fl), "%" PRIu64, z->first_loss);
		printf("%-16s %12" PRIu64 " %12.1f %14.0f %13s  ", e2e_backend_label(b->be),
		       z->max_ok, m ? (double)m->drain.max / 1e3 : 0, m ? m->achieved : 0, fl);
		for (int k = 0; k < z->n; k++)
			printf("%s%" PRIu64 ":%s", k ? ", " : "", z->st[k].sent,
			       z->st[k].loss ? z->st[k].why : "ok");
		printf("%s\n", z->capped ? "  (the whole day in one burst: the cap)" : "");
	}
	printf("\nsystem calls of the feed thread per datagram received (strace -c -p TID over a "
	       "steady replay at %.0f msg/s of its own; ptrace slows each call, so the window is "
	       "not a latency step)\n",
	       o->rate);
	printf("%-16s %10s %10s %8s %12s  %s\n", "backend", "syscalls", "datagrams", "window_s",
	       "per_datagram", "which (calls)");
	for (int i = 0; i < n; i++) {
		const struct beres *b = &rs[i];
		if (!b->ok)
			continue;
		if (!b->sysc.ok) {
			printf("%-16s %10s %10s %8s %12s  not measured: %s\n",
			       e2e_backend_label(b->be), "-", "-", "-", "-", b->sysc.note);
			continue;
		}
		printf("%-16s %10" PRIu64 " %10" PRIu64 " %8.2f %12.3f  %s\n",
		       e2e_backend_label(b->be), b->sysc.calls, b->sysc.datagrams, b->sysc.seconds,
		       b->sysc.per_packet, b->sysc.which);
	}
	printf("\nthe feed's own counts over the steady latency step (no ptrace): receive batches, "
	       "io_uring_enter calls it made, wake-ups of sleeping consumers (idle: none was "
	       "blocked yet; by_sq: made by the io_uring SQ thread, no system call of the feed "
	       "thread), per datagram\n");
	printf("%-16s %10s %9s %9s %9s %9s %9s %12s %12s\n", "backend", "datagrams", "batches",
	       "enters", "wakes", "idle", "by_sq", "enters/dgram", "wakes/dgram");
	for (int i = 0; i < n; i++) {
		const struct beres *b = &rs[i];
		const struct e2e_status *d = &b->steady.d;
		if (!b->ok)
			continue;
		printf("%-16s %10" PRIu64 " %9" PRIu64 " %9" PRIu64 " %9" PRIu64 " %9" PRIu64
		       " %9" PRIu64 " %12.3f %12.3f\n",
		       e2e_backend_label(b->be), d->line_packets, d->batches, d->sq_wakeups,
		       d->ring_wakes, d->ring_wakes_idle, d->ring_wakes_async,
		       ratio((double)d->sq_wakeups, (double)d->line_packets),
		       ratio((double)d->ring_wakes, (double)d->line_packets));
	}
	printf("\nplacement during the steady steps (configured CPU; allowed by the affinity mask; "
	       "CPUs /proc/PID/task/TID/stat showed, sampled every 10 ms)\n");
	printf("uringfeed's order table: book.max_orders %llu\n",
	       (unsigned long long)o->max_orders);
	if (o->consumer_spin_us >= 0)
		printf("consumers busy-poll %lld us before sleeping on the futex "
		       "(--consumer-spin-us)\n",
		       (long long)o->consumer_spin_us);
	else
		printf("consumers busy-poll the consumer library's default before sleeping\n");
	for (int i = 0; i < n; i++) {
		const struct beres *b = &rs[i];
		if (!b->ok)
			continue;
		printf("%-16s", e2e_backend_label(b->be));
		for (int k = 0; k < PL_COUNT; k++) {
			const struct place_one *p = &b->place.r[k];
			char seen[160], cfg[16];
			if (p->configured == -2)
				continue;
			e2e_cpu_list(p->seen, seen, sizeof(seen));
			if (p->configured >= 0)
				snprintf(cfg, sizeof(cfg), "%d", p->configured);
			else
				snprintf(cfg, sizeof(cfg), "any");
			printf(" %s=%s/%s/%s", e2e_place_name((enum place_role)k), cfg,
			       p->allowed[0] ? p->allowed : "?", seen);
		}
		printf("\n");
	}
	printf("\nhighest rate with no loss (mean msg/s; bursts: %gx the mean for %g ms of every "
	       "%g ms)\n",
	       o->burst, o->burst_ms / o->burst, o->burst_ms);
	printf("%-16s %-7s %13s %14s %6s  %-14s %s\n", "backend", "pattern", "max_no_loss/s",
	       "cpu_ns/msg@max", "cpu", "first_lossy/s", "search (offered msg/s: loss)");
	for (int i = 0; i < n; i++) {
		const struct beres *b = &rs[i];
		for (int w = 0; w < 2 && b->ok; w++) {
			const struct search *sr = &b->s[w];
			char fl[24] = "none";
			if (sr->first_loss_rate > 0)
				snprintf(fl, sizeof(fl), "%.0f", sr->first_loss_rate);
			printf("%-16s %-7s %13.0f %14.0f %5.0f%%  %-14s ", e2e_backend_label(b->be),
			       w ? "bursts" : "steady", sr->max_rate, cpu_at_max(sr),
			       sr->max_idx >= 0 ? sr->st[sr->max_idx].cpu_util * 100 : 0, fl);
			for (int k = 0; k < sr->n; k++)
				printf("%s%.0f:%s", k ? ", " : "", sr->st[k].offered,
				       sr->st[k].loss ? sr->st[k].why : "ok");
			if (sr->sender_limited)
				printf(
				    "  (uf-replay reached %.0f of %.0f offered: the sender, on the "
				    "same CPUs, was the limit)",
				    sr->st[sr->n - 1].achieved, sr->st[sr->n - 1].offered);
			printf("\n");
		}
	}
	printf("\naims (issue 8), as measured in this run:\n");
	if (q->sq_vs_mmsg_rate > 0)
		printf("  SQPOLL max rate / recvmmsg max rate = %.3f (aim >= 1: %s)\n",
		       q->sq_vs_mmsg_rate, q->sq_vs_mmsg_rate >= 1 ? "met" : "NOT met");
	if (q->sq_vs_mmsg_cpu > 0)
		printf("  SQPOLL cpu/msg / recvmmsg cpu/msg at their max rates = %.3f (aim < 1: "
		       "%s)\n",
		       q->sq_vs_mmsg_cpu, q->sq_vs_mmsg_cpu < 1 ? "met" : "NOT met");
	if (q->epoll_vs_sq_p99 > 0)
		printf("  epoll burst p99 / SQPOLL burst p99 = %.3f (aim >= 5: %s)\n",
		       q->epoll_vs_sq_p99, q->epoll_vs_sq_p99 >= 5 ? "met" : "NOT met");
	if (q->epoll_vs_nosq_p99 > 0)
		printf("  epoll burst p99 / io_uring (no SQPOLL) burst p99 = %.2f\n",
		       q->epoll_vs_nosq_p99);
	if (q->epoll_vs_mmsg_p99 > 0)
		printf("  epoll burst p99 / recvmmsg burst p99 = %.2f\n", q->epoll_vs_mmsg_p99);
	if (q->sq_vs_mmsg_burst_rate > 0)
		printf("  SQPOLL / recvmmsg highest loss-free mean rate under bursts = %.2f\n",
		       q->sq_vs_mmsg_burst_rate);
	if (q->sq_vs_mmsg_rate == 0 && q->epoll_vs_sq_p99 == 0)
		printf("  (needs io_uring with recvmmsg or epoll in the same run)\n");
	if (o->ncpu < 4)
		printf("note: %d CPUs for the feed thread%s, uf-replay and the consumer(s): busy "
		       "pollers share cores with them, which is what these figures show\n",
		       o->ncpu, find_be(rs, n, BE_SQPOLL) ? ", the SQPOLL thread" : "");
}

static json_t *drain_json(const struct drain *d)
{
	return json_pack("{s:I, s:I, s:I, s:I}", "bursts", (json_int_t)d->n, "p50",
	                 (json_int_t)d->p50, "mean", (json_int_t)d->mean, "max",
	                 (json_int_t)d->max);
}

/* {samples, p50, p99, p999, max} of per-message samples, ns. */
static json_t *pct_json(const struct uf_bench_pct *p)
{
	return json_pack("{s:I, s:I, s:I, s:I, s:I}", "samples", (json_int_t)p->n, "p50",
	                 (json_int_t)p->p50, "p99", (json_int_t)p->p99, "p999", (json_int_t)p->p999,
	                 "max", (json_int_t)p->max);
}

static json_t *raw_json(const struct rawres *w)
{
	json_t *j = json_pack("{s:b, s:s, s:s, s:I, s:I, s:I, s:I, s:f}", "ran", w->ran, "method",
	                      e2e_raw_name((enum raw_kind)w->kind), "note", w->note, "messages",
	                      (json_int_t)w->sent, "received", (json_int_t)w->messages, "datagrams",
	                      (json_int_t)w->datagrams, "kernel_drops", (json_int_t)w->kernel_drops,
	                      "achieved_rate", w->achieved);
	json_object_set_new(j, "latency_ns", pct_json(&w->lat));
	json_object_set_new(j, "drain_ns", drain_json(&w->drain));
	return j;
}

/* The step's figures over the raw receiver's: wire to publish and wire to consumer. */
static json_t *vs_raw_json(const struct step *s, const struct rawres *w)
{
	json_t *j = json_pack("{s:f, s:f, s:f, s:f}", "publish_p50",
	                      ratio((double)s->pub.p50, (double)w->lat.p50), "publish_p99",
	                      ratio((double)s->pub.p99, (double)w->lat.p99), "consumer_p50",
	                      ratio((double)s->lat.p50, (double)w->lat.p50), "consumer_p99",
	                      ratio((double)s->lat.p99, (double)w->lat.p99));
	if (s->burst > 1)
		json_object_set_new(j, "drain_p50",
		                    json_real(ratio((double)s->drain.p50, (double)w->drain.p50)));
	return j;
}

static json_t *histfig_json(const struct histfig *f)
{
	return json_pack("{s:I, s:I, s:I, s:I}", "samples", (json_int_t)f->n, "mean",
	                 (json_int_t)f->mean, "p50", (json_int_t)f->p50, "p99", (json_int_t)f->p99);
}

/* {source, wire_to_publish_ns, stages_ns {receive, ...}}: this step only. */
static json_t *stages_json(const struct stagefigs *f)
{
	json_t *st = json_object();
	for (int k = 0; k < E2E_NSTAGES; k++)
		json_object_set_new(st, e2e_stage_names[k], histfig_json(&f->st[k]));
	return json_pack("{s:s, s:o, s:o}", "source",
	                 "uringfeed GET /metrics before and after the step, differenced (mean "
	                 "exact, p50/p99 interpolated in power-of-two buckets)",
	                 "wire_to_publish_ns", histfig_json(&f->pub), "stages_ns", st);
}

static json_t *step_json(const struct step *s, int sampled);

static json_t *bsize_json(const struct bsize *z)
{
	const struct step *m = z->max_idx >= 0 ? &z->st[z->max_idx] : NULL;
	json_t *j = json_pack(
	    "{s:I, s:I, s:b, s:I, s:f}", "max_messages_no_loss", (json_int_t)z->max_ok,
	    "first_loss_messages", (json_int_t)z->first_loss, "capped_by_day", z->capped,
	    "drain_ns", (json_int_t)(m ? m->drain.max : 0), "sender_rate", m ? m->achieved : 0.0);
	json_t *srch = json_array();
	for (int k = 0; k < z->n; k++) {
		json_t *s = step_json(&z->st[k], 0);
		json_object_set_new(s, "drain_ns", drain_json(&z->st[k].drain));
		json_array_append_new(srch, s);
	}
	json_object_set_new(j, "search", srch);
	return j;
}

static json_t *place_json(const struct placement *pl)
{
	json_t *j = json_object();
	for (int k = 0; k < PL_COUNT; k++) {
		const struct place_one *p = &pl->r[k];
		json_t *seen = json_array();
		if (p->configured == -2)
			continue;
		for (int c = 0; c < 64; c++)
			if (p->seen & (1ull << c))
				json_array_append_new(seen, json_integer(c));
		json_object_set_new(
		    j, e2e_place_name((enum place_role)k),
		    json_pack("{s:o, s:s, s:o, s:I, s:I}", "configured_cpu",
		              p->configured >= 0 ? json_integer(p->configured) : json_null(),
		              "cpus_allowed", p->allowed, "cpus_seen", seen, "samples",
		              (json_int_t)p->samples, "samples_off_configured",
		              (json_int_t)p->on_other));
	}
	return j;
}

static json_t *step_json(const struct step *s, int sampled)
{
	json_t *j =
	    json_pack("{s:f, s:f, s:I, s:f, s:f, s:I, s:I, s:f, s:f, s:b, s:s}", "offered_rate",
	              s->offered, "burst_factor", s->burst, "messages", (json_int_t)s->sent,
	              "replay_s", s->replay_s, "achieved_rate", s->achieved, "delivered",
	              (json_int_t)s->delivered, "cpu_ns", (json_int_t)s->cpu_ns, "cpu_ns_per_msg",
	              s->cpu_per_msg, "cpu_util", s->cpu_util, "loss", s->loss, "loss_why", s->why);
	json_object_set_new(
	    j, "counters",
	    json_pack(
	        "{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "gaps", (json_int_t)s->d.gaps,
	        "line_gaps", (json_int_t)s->d.line_gaps, "rerequests", (json_int_t)s->d.rerequests,
	        "gaps_unrecovered", (json_int_t)s->d.gaps_unrecovered, "messages_unrecovered",
	        (json_int_t)s->d.messages_unrecovered, "queue_overflows",
	        (json_int_t)s->d.queue_overflows, "cq_overflows", (json_int_t)s->d.cq_overflows,
	        "line_enobufs", (json_int_t)s->d.line_enobufs, "consumer_lap_lost",
	        (json_int_t)s->lap_lost, "consumer_gap_records", (json_int_t)s->gap_recs));
	json_object_set_new(json_object_get(j, "counters"), "consumer_messages",
	                    json_integer((json_int_t)s->cons_msgs));
	json_object_set_new(json_object_get(j, "counters"), "consumer_seq_skipped",
	                    json_integer((json_int_t)s->seq_skipped));
	json_object_set_new(json_object_get(j, "counters"), "consumer_seq_backwards",
	                    json_integer((json_int_t)s->seq_back));
	if (sampled) {
		json_object_set_new(
		    j, "wire_to_publish_ns",
		    json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:s}", "samples",
		              (json_int_t)s->pub.n, "samples_before_step", (json_int_t)s->pub.prior,
		              "p50", (json_int_t)s->pub.p50, "p99", (json_int_t)s->pub.p99, "p999",
		              (json_int_t)s->pub.p999, "max", (json_int_t)s->pub.max, "source",
		              "uringfeed GET /status latency_ns (cumulative since a fresh start)"));
		if (s->burst > 1)
			json_object_set_new(j, "drain_ns", drain_json(&s->drain));
		if (s->stages.ok)
			json_object_set_new(j, "stages", stages_json(&s->stages));
	}
	if (sampled)
		json_object_set_new(j, "latency_ns", pct_json(&s->lat));
	return j;
}

json_t *e2e_report_json(const struct beres *rs, int n, const struct e2e_opts *o,
                        const struct machine *m, const struct ratios *q, json_t *plots)
{
	json_t *root = json_object(), *bes = json_array();

	json_object_set_new(root, "bench", json_string("e2e"));
	json_object_set_new(root, "machine",
	                    json_pack("{s:s, s:s, s:i, s:f, s:f}", "cpu", m->cpu, "kernel",
	                              m->kernel, "cpus", m->ncpu, "loadavg_start", m->load_start,
	                              "loadavg_end", m->load_end));
	json_object_set_new(
	    root, "params",
	    json_pack("{s:f, s:f, s:f, s:f, s:f, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:I, s:I, "
	              "s:s}",
	              "duration_s", o->duration, "rate", o->rate, "burst_factor", o->burst,
	              "burst_period_ms", o->burst_ms, "max_rate", o->max_rate, "search_steps",
	              o->steps, "burst_search_steps", o->burst_steps, "consumers", o->consumers,
	              "feed_cpu", o->feed_cpu, "sqpoll_cpu", o->sqpoll_cpu, "consumer_cpu",
	              o->consumer_cpu, "sender_cpu", o->sender_cpu, "consumer_spin_us",
	              (json_int_t)o->consumer_spin_us, "max_orders", (json_int_t)o->max_orders,
	              "raw", o->raw_kind >= 0 ? e2e_raw_name((enum raw_kind)o->raw_kind) : "same"));
	for (int i = 0; i < n; i++) {
		const struct beres *b = &rs[i];
		json_t *jb =
		    json_pack("{s:s, s:s, s:b, s:s}", "backend", e2e_backend_cfg(b->be), "label",
		              e2e_backend_label(b->be), "ok", b->ok, "note", b->note);
		if (b->ok) {
			json_object_set_new(jb, "steady", step_json(&b->steady, 1));
			json_object_set_new(jb, "burst", step_json(&b->burst, 1));
			json_object_set_new(jb, "raw",
			                    json_pack("{s:o, s:o}", "steady",
			                              raw_json(&b->raw_steady), "burst",
			                              raw_json(&b->raw_burst)));
			json_object_set_new(jb, "placement", place_json(&b->place));
			json_object_set_new(jb, "burst_absorb", bsize_json(&b->bsize));
			json_object_set_new(
			    jb, "syscalls",
			    json_pack("{s:b, s:s, s:s, s:s, s:i, s:I, s:I, s:f, s:f, s:b}",
			              "measured", b->sysc.ok, "method",
			              "strace -c -p TID (feed thread)", "note", b->sysc.note,
			              "which", b->sysc.which, "tid", (int)b->sysc.tid, "calls",
			              (json_int_t)b->sysc.calls, "datagrams",
			              (json_int_t)b->sysc.datagrams, "seconds", b->sysc.seconds,
			              "per_datagram", b->sysc.per_packet, "loss", b->sysc.st.loss));
			json_object_set_new(
			    json_object_get(jb, "syscalls"), "feed_counts_steady",
			    json_pack("{s:I, s:I, s:I, s:I, s:I, s:I}", "datagrams",
			              (json_int_t)b->steady.d.line_packets, "batches",
			              (json_int_t)b->steady.d.batches, "io_uring_enters",
			              (json_int_t)b->steady.d.sq_wakeups, "ring_wakes",
			              (json_int_t)b->steady.d.ring_wakes, "ring_wakes_idle",
			              (json_int_t)b->steady.d.ring_wakes_idle, "ring_wakes_async",
			              (json_int_t)b->steady.d.ring_wakes_async));
			json_object_set_new(jb, "vs_raw",
			                    json_pack("{s:o, s:o}", "steady",
			                              vs_raw_json(&b->steady, &b->raw_steady),
			                              "burst",
			                              vs_raw_json(&b->burst, &b->raw_burst)));
			for (int w = 0; w < 2; w++) {
				const struct search *sr = &b->s[w];
				json_t *srch = json_array(), *dst = w ? json_object() : jb;
				json_object_set_new(dst, "max_rate_no_loss",
				                    json_real(sr->max_rate));
				json_object_set_new(dst, "cpu_ns_per_msg_at_max",
				                    json_real(cpu_at_max(sr)));
				json_object_set_new(dst, "first_loss_rate",
				                    json_real(sr->first_loss_rate));
				json_object_set_new(dst, "sender_limited",
				                    json_boolean(sr->sender_limited));
				for (int k = 0; k < sr->n; k++)
					json_array_append_new(srch, step_json(&sr->st[k], 0));
				json_object_set_new(dst, "search", srch);
				if (w) /* the steady search's keys sit on the back end itself */
					json_object_set_new(jb, "burst_search", dst);
			}
		}
		json_array_append_new(bes, jb);
	}
	json_object_set_new(root, "backends", bes);
	json_object_set_new(root, "ratios",
	                    json_pack("{s:f, s:f, s:f, s:f, s:f, s:f}",
	                              "sqpoll_vs_recvmmsg_burst_max_rate", q->sq_vs_mmsg_burst_rate,
	                              "sqpoll_vs_recvmmsg_max_rate", q->sq_vs_mmsg_rate,
	                              "sqpoll_vs_recvmmsg_cpu_per_msg", q->sq_vs_mmsg_cpu,
	                              "epoll_vs_sqpoll_burst_p99", q->epoll_vs_sq_p99,
	                              "epoll_vs_nosqpoll_burst_p99", q->epoll_vs_nosq_p99,
	                              "epoll_vs_recvmmsg_burst_p99", q->epoll_vs_mmsg_p99));
	json_object_set_new(root, "plots", plots);
	return root;
}

/* Data files and one gnuplot script; returns the PNGs made (names relative to results). */
json_t *e2e_report_plots(const struct beres *rs, int n, const struct e2e_opts *o,
                         const struct machine *m)
{
	static const char *phase[] = {"steady", "burst"};
	json_t *made = json_array();
	char path[PATH_MAX], gp[8192];
	size_t len = 0;
	int any = 0;

	len += (size_t)snprintf(gp + len, sizeof(gp) - len,
	                        "# generated by uf-bench e2e: latency distribution per back end\n"
	                        "set terminal pngcairo noenhanced size 960,600 font 'sans,10'\n"
	                        "set logscale xy\nset grid\nset key left top\n"
	                        "set xlabel 'percentile'\nset ylabel 'wire to consumer (us)'\n"
	                        "set xtics ('0%%%%' 1, '50%%%%' 2, '90%%%%' 10, '99%%%%' 100, "
	                        "'99.9%%%%' 1000, '99.99%%%%' "
	                        "10000, '99.999%%%%' 100000)\n");
	for (int p = 0; p < 2; p++) {
		int first = 1;
		len += (size_t)snprintf(gp + len, sizeof(gp) - len,
		                        "set output 'e2e_latency_%s.png'\n"
		                        "set title \"%s: %s, %.0f msg/s mean%s (%s, %d CPUs, "
		                        "load %.1f)\"\n",
		                        phase[p], "uf-bench e2e", phase[p], o->rate,
		                        p ? ", bursts of 10x" : "", m->cpu, m->ncpu, m->load_end);
		for (int i = 0; i < n; i++) {
			const struct step *s = p ? &rs[i].burst : &rs[i].steady;
			FILE *f;
			if (!rs[i].ok || s->nplot == 0)
				continue;
			snprintf(path, sizeof(path), "%s/e2e_%s_%s.dat", o->results,
			         e2e_backend_cfg(rs[i].be), phase[p]);
			f = fopen(path, "w");
			if (!f)
				continue;
			fprintf(f, "# 1/(1-q) latency_us (%s, %s)\n", e2e_backend_label(rs[i].be),
			        phase[p]);
			for (int k = 0; k < s->nplot; k++)
				fprintf(f, "%.4f %.3f\n", s->plot_x[k], s->plot_us[k]);
			fclose(f);
			len += (size_t)snprintf(
			    gp + len, sizeof(gp) - len,
			    "%s 'e2e_%s_%s.dat' using 1:2 with lines lw 2 title "
			    "'%s'",
			    first ? "plot" : ", \\\n    ", e2e_backend_cfg(rs[i].be), phase[p],
			    e2e_backend_label(rs[i].be));
			first = 0;
			any = 1;
		}
		if (!first) {
			len += (size_t)snprintf(gp + len, sizeof(gp) - len, "\n");
			snprintf(path, sizeof(path), "e2e_latency_%s.png", phase[p]);
			json_array_append_new(made, json_string(path));
		}
	}
	if (!any)
		return made;
	snprintf(path, sizeof(path), "%s/e2e_latency.gp", o->results);
	if (e2e_write_file(path, gp) < 0 || e2e_gnuplot(o->results, "e2e_latency.gp", 30000)) {
		json_array_clear(made);
		return made;
	}
	return made;
}

/* ---- --sizes: wire to publish by datagram size (e2e_sizes.h) ------------------------------ */

/* A bare busy receiver on loopback reads a datagram 1-7 us after its kernel timestamp (docs/
 * performance.md, quiet rounds). A raw p50 beyond this means the receiver itself waited for a
 * CPU (other jobs on the host): the row's ratio is then the scheduler's, and the table gives
 * no verdict on the aim ("busy"). */
#define E2E_SIZE_RAW_SANE_NS 20000u

/* "yes" / "no" for the row's aim, "busy" when the raw baseline shows a host without a free
 * CPU for it. */
static const char *size_verdict(const struct sizerow *w)
{
	double x50 = ratio((double)w->pub.p50, (double)w->raw.lat.p50);
	if (w->raw.lat.p50 > E2E_SIZE_RAW_SANE_NS)
		return "busy";
	return x50 > 0 && x50 <= e2e_size_classes[w->cls].aim ? "yes" : "no";
}

/* Messages per datagram the raw receiver saw (the same replay as the feed's step). */
static double size_per_dgram(const struct sizerow *w)
{
	return w->raw.datagrams ? (double)w->raw.messages / (double)w->raw.datagrams : 0;
}

void e2e_report_sizes_table(const struct sizeres *rs, int n, const struct machine *m)
{
	printf("uf-bench e2e --sizes: wire-to-publish against a bare receiver, by datagram size\n"
	       "machine: %s, kernel %s, %d CPUs, load average %.2f before, %.2f after "
	       "(shared machine: figures are noisy)\n"
	       "raw = its read (CLOCK_REALTIME) - kernel receive timestamp, publish = the "
	       "records' pub_delta_ns;\nboth exact, one sample per message; each row: raw first, "
	       "then a fresh uringfeed on the same replay (sent/s: what uf-replay achieved in the "
	       "feed's step);\naim_met busy: the raw p50 is above "
	       "%u us, the bare receiver waited for a CPU (no verdict);\n"
	       "own = the back end's own receive method bare (own_method), between the two on the "
	       "same replay: recv_x = own_p50 / raw_p50 (the receive method's share of p50_x), "
	       "work_x = pub_p50 / own_p50 (what the feed adds to its own receive)\n\n",
	       m->cpu, m->kernel, m->ncpu, m->load_start, m->load_end,
	       E2E_SIZE_RAW_SANE_NS / 1000u);
	printf("%-16s %-16s %9s %9s %-8s %10s %9s %9s %9s %9s %8s %8s %5s %-7s %9s %9s %8s "
	       "%-16s %9s %8s %8s %s\n",
	       "backend", "raw_method", "msg/s", "sent/s", "size", "msgs/dgram", "raw_p50",
	       "raw_p99", "pub_p50", "pub_p99", "p50_x", "p99_x", "aim", "aim_met", "raw_p10",
	       "pub_p10", "p10_x", "own_method", "own_p50", "recv_x", "work_x", "loss");
	for (int i = 0; i < n; i++) {
		const struct sizeres *b = &rs[i];
		for (int k = 0; k < b->n; k++) {
			const struct sizerow *w = &b->row[k];
			const struct e2e_size_class *c = &e2e_size_classes[w->cls];
			double x50 = ratio((double)w->pub.p50, (double)w->raw.lat.p50);
			if (!w->ran) {
				printf("%-16s %-16s %9.0f %9s %-8s did not run: %s\n",
				       e2e_backend_label((enum backend)b->be),
				       e2e_raw_name((enum raw_kind)b->raw_kind), w->rate, "-",
				       c->name, w->note);
				continue;
			}
			char own[3][24] = {"-", "-", "-"};
			if (b->own_kind >= 0) {
				snprintf(own[0], sizeof(own[0]), "%.2f",
				         (double)w->own.lat.p50 / 1e3);
				snprintf(own[1], sizeof(own[1]), "%.2fx",
				         ratio((double)w->own.lat.p50, (double)w->raw.lat.p50));
				snprintf(own[2], sizeof(own[2]), "%.2fx",
				         ratio((double)w->pub.p50, (double)w->own.lat.p50));
			}
			printf("%-16s %-16s %9.0f %9.0f %-8s %10.2f %9.2f %9.2f %9.2f %9.2f %7.2fx "
			       "%7.2fx "
			       "%4.1fx %-7s %9.2f %9.2f %7.2fx %-16s %9s %8s %8s %s\n",
			       e2e_backend_label((enum backend)b->be),
			       e2e_raw_name((enum raw_kind)b->raw_kind), w->rate, w->feed.achieved,
			       c->name, size_per_dgram(w), (double)w->raw.lat.p50 / 1e3,
			       (double)w->raw.lat.p99 / 1e3, (double)w->pub.p50 / 1e3,
			       (double)w->pub.p99 / 1e3, x50,
			       ratio((double)w->pub.p99, (double)w->raw.lat.p99), c->aim,
			       size_verdict(w), (double)w->raw_p10 / 1e3, (double)w->pub_p10 / 1e3,
			       ratio((double)w->pub_p10, (double)w->raw_p10),
			       b->own_kind >= 0 ? e2e_raw_name((enum raw_kind)b->own_kind) : "-",
			       own[0], own[1], own[2], w->feed.loss ? w->feed.why : "none");
		}
	}
}

json_t *e2e_report_sizes_json(const struct sizeres *rs, int n, const struct e2e_opts *o,
                              const struct machine *m)
{
	json_t *root = json_object(), *bes = json_array();

	json_object_set_new(root, "bench", json_string("e2e-sizes"));
	json_object_set_new(root, "machine",
	                    json_pack("{s:s, s:s, s:i, s:f, s:f}", "cpu", m->cpu, "kernel",
	                              m->kernel, "cpus", m->ncpu, "loadavg_start", m->load_start,
	                              "loadavg_end", m->load_end));
	json_object_set_new(root, "params",
	                    json_pack("{s:f, s:i, s:i, s:i}", "duration_s", o->duration, "feed_cpu",
	                              o->feed_cpu, "sqpoll_cpu", o->sqpoll_cpu, "sender_cpu",
	                              o->sender_cpu));
	for (int i = 0; i < n; i++) {
		const struct sizeres *b = &rs[i];
		json_t *rows = json_array();
		for (int k = 0; k < b->n; k++) {
			const struct sizerow *w = &b->row[k];
			const struct e2e_size_class *c = &e2e_size_classes[w->cls];
			json_t *jr = json_pack(
			    "{s:f, s:s, s:I, s:f, s:b, s:s, s:f, s:f, s:f, s:I}", "rate", w->rate,
			    "size", c->name, "mtu", (json_int_t)c->mtu, "messages_per_datagram",
			    size_per_dgram(w), "ran", w->ran, "note", w->note, "publish_p50_vs_raw",
			    ratio((double)w->pub.p50, (double)w->raw.lat.p50), "publish_p99_vs_raw",
			    ratio((double)w->pub.p99, (double)w->raw.lat.p99), "aim_p50_vs_raw",
			    c->aim, "no_rx_ts", (json_int_t)w->pub_missing);
			json_object_set_new(jr, "aim_met", json_string(size_verdict(w)));
			json_object_set_new(
			    jr, "p10_ns",
			    json_pack("{s:I, s:I, s:f}", "raw", (json_int_t)w->raw_p10, "publish",
			              (json_int_t)w->pub_p10, "publish_vs_raw",
			              ratio((double)w->pub_p10, (double)w->raw_p10)));
			json_object_set_new(jr, "raw", raw_json(&w->raw));
			if (b->own_kind >= 0) {
				json_t *jo = raw_json(&w->own);
				json_object_set_new(jo, "p10_ns",
				                    json_integer((json_int_t)w->own_p10));
				json_object_set_new(jr, "own", jo);
				json_object_set_new(jr, "own_p50_vs_raw",
				                    json_real(ratio((double)w->own.lat.p50,
				                                    (double)w->raw.lat.p50)));
				json_object_set_new(
				    jr, "publish_p50_vs_own",
				    json_real(ratio((double)w->pub.p50, (double)w->own.lat.p50)));
			}
			json_object_set_new(jr, "publish_ns", pct_json(&w->pub));
			json_object_set_new(jr, "feed", step_json(&w->feed, 0));
			json_array_append_new(rows, jr);
		}
		json_t *jb = json_pack("{s:s, s:s, s:s, s:b, s:s, s:o}", "backend",
		                       e2e_backend_cfg((enum backend)b->be), "label",
		                       e2e_backend_label((enum backend)b->be), "raw_method",
		                       e2e_raw_name((enum raw_kind)b->raw_kind), "ok", b->ok,
		                       "note", b->note, "rows", rows);
		json_object_set_new(jb, "own_method",
		                    b->own_kind >= 0
		                        ? json_string(e2e_raw_name((enum raw_kind)b->own_kind))
		                        : json_null());
		json_array_append_new(bes, jb);
	}
	json_object_set_new(root, "backends", bes);
	return root;
}
