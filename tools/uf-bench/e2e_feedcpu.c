/* uf-bench e2e: feed thread CPU per message against uf-bench book (see e2e_feedcpu.h). */
#include "e2e_feedcpu.h"

#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "bench.h"

#define E2E_FEEDCPU_AIM 1.5 /* issue 26: within 1.5x of the tight loop */

/* The last line uf-bench book wrote on stderr (what it said when it failed): the temporary
 * folder is gone after the run, so the report carries it. */
static void last_line(const char *path, char *out, size_t len)
{
	char line[256];
	FILE *f = fopen(path, "r");
	out[0] = '\0';
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		if (line[0]) {
			size_t k = strlen(line) < len - 1 ? strlen(line) : len - 1;
			memcpy(out, line, k);
			out[k] = '\0';
		}
	}
	fclose(f);
}

void e2e_bookref_run(const struct e2e_opts *o, const char *day_path, struct e2e_bookref *ref)
{
	char bin[PATH_MAX], out[PATH_MAX], errp[PATH_MAX], orders[32], said[128];
	char *argv[] = {bin, "book",         (char *)day_path, "--json", "--reps",
	                "3", "--max-orders", orders,           NULL};
	json_error_t jerr;
	json_t *root, *rows, *row;
	size_t i;
	pid_t pid;
	int st;

	memset(ref, 0, sizeof(*ref));
	snprintf(bin, sizeof(bin), "%s/uf-bench", o->bindir);
	snprintf(out, sizeof(out), "%s/book.json", o->tmp);
	snprintf(errp, sizeof(errp), "%s/book.err", o->tmp);
	snprintf(orders, sizeof(orders), "%" PRIu64, o->max_orders);
	/* The day's ITCH rows only: uf-bench book adds IEX DEEP rows when it finds the shared
	 * capture (UF_SHARED_DATA, else ../shared/data), and a fault there would fail the
	 * reference; the child looks for it in the temporary folder, where it is not. */
	{
		const char *had = getenv("UF_SHARED_DATA");
		char *keep = had ? strdup(had) : NULL;
		setenv("UF_SHARED_DATA", o->tmp, 1);
		pid = uf_bench_spawn(argv, out, errp, o->feed_cpu);
		if (keep)
			setenv("UF_SHARED_DATA", keep, 1);
		else
			unsetenv("UF_SHARED_DATA");
		free(keep);
	}
	st = pid > 0 ? uf_bench_wait_child(pid, 300000) : -1;
	if (st < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		last_line(errp, said, sizeof(said));
		snprintf(ref->note, sizeof(ref->note), "uf-bench book failed (status %d): %s", st,
		         said);
		return;
	}
	root = json_load_file(out, 0, &jerr);
	if (!root) {
		snprintf(ref->note, sizeof(ref->note), "uf-bench book: no JSON in %.120s", out);
		return;
	}
	ref->messages = (uint64_t)json_integer_value(json_object_get(root, "messages"));
	ref->load = json_real_value(json_object_get(root, "loadavg"));
	rows = json_object_get(root, "rows");
	json_array_foreach(rows, i, row)
	{
		const char *pass = json_string_value(json_object_get(row, "pass"));
		double v = json_real_value(json_object_get(row, "ns_per_msg"));
		if (!pass)
			continue;
		if (!strncmp(pass, "decode alone", 12))
			ref->decode_ns = v;
		else if (!strncmp(pass, "decode+book, prefetch ", 22) && !strstr(pass, "off"))
			ref->ns_per_msg = v;
		else if (!strcmp(pass, UF_BENCH_BOOK_SINK_ROW))
			ref->sink_ns = v;
	}
	ref->ok = json_is_true(json_object_get(root, "ok")) && ref->messages && ref->ns_per_msg > 0;
	if (!ref->ok)
		snprintf(ref->note, sizeof(ref->note),
		         "uf-bench book: not ok or no decode+book row");
	json_decref(root);
}

static double ratio(double a, double b)
{
	return a > 0 && b > 0 ? a / b : 0;
}

/* The step whose feed CPU is reported: the busy-clock step when it ran, else the steady
 * latency step (--no-busy-clock: the estimate alone). */
static const struct step *feedcpu_step(const struct beres *b)
{
	return b->cpu.ran ? &b->cpu : &b->steady;
}

/* " (aim <= 1.5: met)" for io_uring without SQPOLL (issue 26 item 2's back end) when both
 * references ran: x against each of them. */
static void aim(enum backend be, double x, const struct e2e_bookref ref[2])
{
	if (be != BE_NOSQPOLL || !ref[0].ok || !ref[1].ok)
		return;
	int met = ratio(x, ref[0].ns_per_msg) <= E2E_FEEDCPU_AIM &&
	          ratio(x, ref[1].ns_per_msg) <= E2E_FEEDCPU_AIM;
	printf(" (aim <= %.1f: %s)", E2E_FEEDCPU_AIM, met ? "met" : "NOT met");
}

void e2e_feedcpu_print(const struct beres *rs, int n, const struct e2e_opts *o,
                       const struct e2e_bookref ref[2])
{
	printf("\nfeed thread CPU per message, all stages, %s, against uf-bench book on the same "
	       "day (decode+book, prefetch on, CPU %d)\n",
	       o->no_busy_clock ? "steady step" : "feed CPU step (steady, busy clock on)",
	       o->feed_cpu);
	for (int k = 0; k < 2; k++) {
		if (ref[k].ok)
			printf("  uf-bench book %s the back ends: %.2f ns/msg (decode alone %.2f; "
			       "datagram by datagram with the feed's ring and image %.2f, %.3fx), "
			       "%" PRIu64 " messages, load %.2f\n",
			       k ? "after" : "before", ref[k].ns_per_msg, ref[k].decode_ns,
			       ref[k].sink_ns, ratio(ref[k].sink_ns, ref[k].ns_per_msg),
			       ref[k].messages, ref[k].load);
		else
			printf("  uf-bench book %s the back ends: %s\n", k ? "after" : "before",
			       ref[k].note);
	}
	for (int i = 0; i < n; i++) {
		const struct step *s = feedcpu_step(&rs[i]);
		const struct feedcpu *fc = &s->fcpu;
		if (!rs[i].ok || !s->ran)
			continue;
		if (!fc->ok) {
			printf("  %s: not measured (%s)\n", e2e_backend_label(rs[i].be),
			       fc->note[0] ? fc->note : "no steady step");
			continue;
		}
		if (fc->busy_ok) {
			printf("  feed busy ns/msg (exact, busy clock) at %.0f msg/s (%s, achieved "
			       "%.0f): %.2f ns; uf-bench book on the same day: %.2f / %.2f ns/msg; "
			       "ratio X/Y %.3f / %.3f",
			       s->offered, e2e_backend_label(rs[i].be), s->achieved,
			       fc->busy_per_msg, ref[0].ns_per_msg, ref[1].ns_per_msg,
			       ratio(fc->busy_per_msg, ref[0].ns_per_msg),
			       ratio(fc->busy_per_msg, ref[1].ns_per_msg));
			aim(rs[i].be, fc->busy_per_msg, ref);
			if (ref[0].sink_ns > 0 && ref[1].sink_ns > 0)
				printf(
				    "\n    against the tight loop with the feed's ring and image "
				    "(what being live adds: receive, arbitration, cold caches): "
				    "ratio %.3f / %.3f",
				    ratio(fc->busy_per_msg, ref[0].sink_ns),
				    ratio(fc->busy_per_msg, ref[1].sink_ns));
			printf("\n    %" PRIu64 " ns in working loop turns for %" PRIu64
			       " messages (the feed's busy_ns; its own daemon and steady step, "
			       "after the latency steps: the clock's read slows an empty poll); "
			       "the thread waited %" PRIu64
			       " ns preempted in the step (at most that much of busy_ns is not "
			       "work: the work is %.2f to %.2f ns/msg)\n",
			       fc->busy_ns, fc->messages, fc->wait_ns,
			       fc->wait_ns < fc->busy_ns
			           ? (double)(fc->busy_ns - fc->wait_ns) / (double)fc->messages
			           : 0.0,
			       fc->busy_per_msg);
			if (fc->sys_ok) {
				printf(
				    "    of which in the kernel: %.2f ns/msg (the thread's system "
				    "time, %" PRIu64 " ns in clock ticks: %s); in user space: %.2f "
				    "ns/msg, ratio X/Y %.3f / %.3f\n",
				    fc->sys_per_msg, fc->sys_ns,
				    e2e_backend_feed(rs[i].be) == UF_BACKEND_IO_URING
				        ? "no receive call: the SQ thread makes the receive copies"
				        : "the receive copies of both lines run in the feed's "
				          "turns",
				    fc->busy_per_msg - fc->sys_per_msg,
				    ratio(fc->busy_per_msg - fc->sys_per_msg, ref[0].ns_per_msg),
				    ratio(fc->busy_per_msg - fc->sys_per_msg, ref[1].ns_per_msg));
				if (fc->irq_ok)
					printf(
					    "    the feed's CPU %d served %" PRIu64
					    " hardware interrupts and IPIs (%" PRIu64
					    " rescheduling IPIs: a thread woken onto it, "
					    "preempting the feed) and %" PRIu64
					    " softirqs (%" PRIu64
					    " NET_RX) in the step: without IRQ time accounting "
					    "(CONFIG_IRQ_TIME_ACCOUNTING) the ticks that land in "
					    "them and in the switches they cause are in that "
					    "system time too\n",
					    o->feed_cpu, fc->irqs.hard, fc->irqs.resched,
					    fc->irqs.soft, fc->irqs.net_rx);
			}
		} else {
			printf("  feed busy ns/msg (exact, busy clock): not measured (%s)\n",
			       o->no_busy_clock ? "--no-busy-clock" : "no busy_ns counted");
		}
		printf("  feed CPU/msg, estimate (thread time less empty polls x idle poll) at "
		       "%.0f msg/s (%s, achieved %.0f): %.2f ns; uf-bench book on the same day: "
		       "%.2f / %.2f ns/msg; ratio X/Y %.3f / %.3f",
		       s->offered, e2e_backend_label(rs[i].be), s->achieved, fc->work_per_msg,
		       ref[0].ns_per_msg, ref[1].ns_per_msg,
		       ratio(fc->work_per_msg, ref[0].ns_per_msg),
		       ratio(fc->work_per_msg, ref[1].ns_per_msg));
		if (!fc->busy_ok) /* the verdict goes with the exact figure when there is one */
			aim(rs[i].be, fc->work_per_msg, ref);
		printf("\n    thread on CPU %.2f ns/msg with its spin; %" PRIu64
		       " empty polls at %.2f ns each (idle: %" PRIu64 " ns / %" PRIu64
		       " polls); %" PRIu64 " messages%s\n",
		       fc->run_per_msg, fc->polls, fc->idle_ns_per_poll, fc->idle_run_ns,
		       fc->idle_polls, fc->messages,
		       s->achieved < 0.95 * s->offered ? "; uf-replay fell short of the rate: "
		                                         "the replayer was the limit"
		                                       : "");
		if (s != &rs[i].steady && rs[i].steady.fcpu.ok)
			printf(
			    "    the steady latency step (no busy clock), estimated the same way: "
			    "%.2f ns/msg (thread on CPU %.2f, empty polls at %.2f ns)\n",
			    rs[i].steady.fcpu.work_per_msg, rs[i].steady.fcpu.run_per_msg,
			    rs[i].steady.fcpu.idle_ns_per_poll);
	}
}

static json_t *bookref_json(const struct e2e_bookref *r)
{
	return json_pack("{s:b, s:s, s:I, s:f, s:f, s:f, s:f}", "ok", r->ok, "note", r->note,
	                 "messages", (json_int_t)r->messages, "decode_ns_per_msg", r->decode_ns,
	                 "ns_per_msg", r->ns_per_msg, "sink_row_ns_per_msg", r->sink_ns, "loadavg",
	                 r->load);
}

json_t *e2e_feedcpu_json(const struct beres *rs, int n, const struct e2e_opts *o,
                         const struct e2e_bookref ref[2])
{
	json_t *bes = json_array();
	for (int i = 0; i < n; i++) {
		const struct step *s = feedcpu_step(&rs[i]);
		const struct feedcpu *fc = &s->fcpu;
		json_t *be = json_pack(
		    "{s:s, s:b, s:s, s:f, s:f, s:f, s:f, s:I, s:I, s:f, s:I, s:I, s:I, s:f, s:f}",
		    "backend", e2e_backend_cfg(rs[i].be), "ok", fc->ok, "note", fc->note,
		    "offered_rate", s->offered, "achieved_rate", s->achieved, "work_ns_per_msg",
		    fc->work_per_msg, "run_ns_per_msg", fc->run_per_msg, "run_ns",
		    (json_int_t)fc->run_ns, "empty_polls", (json_int_t)fc->polls,
		    "idle_ns_per_poll", fc->idle_ns_per_poll, "idle_run_ns",
		    (json_int_t)fc->idle_run_ns, "idle_polls", (json_int_t)fc->idle_polls,
		    "messages", (json_int_t)fc->messages, "vs_book_before",
		    ratio(fc->work_per_msg, ref[0].ns_per_msg), "vs_book_after",
		    ratio(fc->work_per_msg, ref[1].ns_per_msg));
		/* the exact figure (the daemon's busy clock) beside the estimate above */
		json_object_set_new(be, "busy_clock", json_boolean(fc->busy_ok));
		json_object_set_new(be, "busy_ns", json_integer((json_int_t)fc->busy_ns));
		json_object_set_new(be, "busy_ns_per_msg", json_real(fc->busy_per_msg));
		json_object_set_new(be, "preempted_ns", json_integer((json_int_t)fc->wait_ns));
		json_object_set_new(
		    be, "sys_ns", fc->sys_ok ? json_integer((json_int_t)fc->sys_ns) : json_null());
		json_object_set_new(be, "sys_ns_per_msg",
		                    fc->sys_ok ? json_real(fc->sys_per_msg) : json_null());
		json_object_set_new(be, "cpu_irqs",
		                    fc->irq_ok ? json_pack("{s:I, s:I, s:I, s:I}", "hard",
		                                           (json_int_t)fc->irqs.hard, "resched",
		                                           (json_int_t)fc->irqs.resched, "soft",
		                                           (json_int_t)fc->irqs.soft, "net_rx",
		                                           (json_int_t)fc->irqs.net_rx)
		                               : json_null());
		json_object_set_new(be, "step",
		                    json_string(s == &rs[i].cpu ? "feed_cpu" : "steady"));
		json_object_set_new(be, "delivered", json_integer((json_int_t)s->delivered));
		json_object_set_new(be, "steady_work_ns_per_msg",
		                    json_real(rs[i].steady.fcpu.work_per_msg));
		json_object_set_new(be, "busy_vs_book_before",
		                    json_real(ratio(fc->busy_per_msg, ref[0].ns_per_msg)));
		json_object_set_new(be, "busy_vs_book_after",
		                    json_real(ratio(fc->busy_per_msg, ref[1].ns_per_msg)));
		json_object_set_new(be, "busy_vs_sink_before",
		                    json_real(ratio(fc->busy_per_msg, ref[0].sink_ns)));
		json_object_set_new(be, "busy_vs_sink_after",
		                    json_real(ratio(fc->busy_per_msg, ref[1].sink_ns)));
		json_array_append_new(bes, be);
	}
	return json_pack("{s:i, s:f, s:o, s:o, s:o}", "cpu", o->feed_cpu, "aim", E2E_FEEDCPU_AIM,
	                 "book_before", bookref_json(&ref[0]), "book_after", bookref_json(&ref[1]),
	                 "backends", bes);
}
