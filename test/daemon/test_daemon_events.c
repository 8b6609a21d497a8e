/* The event log (daemon/events.c) driven by snapshots built here: a gap and a silent line
 * each give exactly one line with its journald priority, an unchanged snapshot gives none,
 * a burst is cut by the token bucket and the next line that passes says how many were
 * suppressed; consumers attaching and being lapped are reported. The clock of the buckets
 * is a parameter, so the refill is forced, not waited for. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "daemon/events.h"
#include "daemon/log.h"

#define NOW   1764000000000000000ull /* snapshot clock (CLOCK_REALTIME) */
#define SEC   1000000000ull
#define MONO0 (1000 * SEC) /* bucket clock (CLOCK_MONOTONIC) */

static char logpath[64];
static int logfd = -1;

static int setup(void **state)
{
	(void)state;
	snprintf(logpath, sizeof(logpath), "/tmp/uf-events-%d.log", (int)getpid());
	logfd = open(logpath, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (logfd < 0)
		return -1;
	uf_log_set_fd(logfd);
	uf_log_set_level(UF_LOG_INFO);
	uf_log_set_journal(UF_LOG_JOURNAL_ALWAYS);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	uf_log_set_fd(2);
	uf_log_set_journal(UF_LOG_JOURNAL_NEVER);
	close(logfd);
	unlink(logpath);
	return 0;
}

/* The log so far (static buffer). */
static const char *log_text(void)
{
	static char buf[65536];
	ssize_t n = pread(logfd, buf, sizeof(buf) - 1, 0);
	buf[n > 0 ? n : 0] = '\0';
	return buf;
}

/* Lines of the log containing `needle`; *prefix_ok is 0 when one of them does not start
 * with `prefix`. */
static int count_lines(const char *needle, const char *prefix, int *prefix_ok)
{
	const char *t = log_text();
	int n = 0;
	*prefix_ok = 1;
	for (const char *line = t; *line;) {
		const char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line);
		char l[1200];
		snprintf(l, sizeof(l), "%.*s", (int)len, line);
		if (strstr(l, needle)) {
			n++;
			if (strncmp(l, prefix, strlen(prefix)) != 0)
				*prefix_ok = 0;
		}
		line += len + (nl ? 1 : 0);
	}
	return n;
}

static struct uf_status_snapshot *make_snapshot(void)
{
	struct uf_status_snapshot *s = calloc(1, sizeof(*s));
	assert_non_null(s);
	s->now_ns = NOW;
	s->ready_silence_ns = 2 * SEC;
	s->nfeeds = 1;
	struct uf_status_feed *f = &s->feeds[0];
	snprintf(f->name, sizeof(f->name), "nasdaq");
	f->state = UF_STATUS_RUNNING;
	f->stats.packets = 1000;
	f->stats.sessions = 1;
	memcpy(f->stats.session, "S1        ", 10);
	f->stats.nlines = 2;
	snprintf(f->stats.line_names[0], sizeof(f->stats.line_names[0]), "A");
	snprintf(f->stats.line_names[1], sizeof(f->stats.line_names[1]), "B");
	f->stats.line_last_rx_ns[0] = NOW - SEC / 10;
	f->stats.line_last_rx_ns[1] = NOW - SEC / 10;
	return s;
}

static void test_events_gap_and_silent_line_log_once_each_with_priorities(void **state)
{
	(void)state;
	struct uf_events ev;
	struct uf_status_snapshot *s = make_snapshot();
	int ok;

	uf_events_init(&ev);
	uf_events_tick(&ev, s, MONO0); /* baseline: the session start is news */
	assert_int_equal(count_lines("session S1 started", "<6>", &ok), 1);
	assert_true(ok);

	/* Line B goes quiet for 5 s during the session; a gap is given up. */
	s->feeds[0].stats.line_last_rx_ns[1] = NOW - 5 * SEC;
	s->feeds[0].stats.gaps = 1;
	s->feeds[0].stats.gaps_unrecovered = 1;
	s->feeds[0].stats.messages_unrecovered = 42;
	s->feeds[0].stats.books_stale = 7;
	uf_events_tick(&ev, s, MONO0 + SEC);
	uf_events_tick(&ev, s, MONO0 + 2 * SEC); /* nothing new: nothing logged */
	uf_events_tick(&ev, s, MONO0 + 3 * SEC);
	assert_int_equal(count_lines("1 gap given up, 42 messages lost", "<4>", &ok), 1);
	assert_true(ok);
	assert_int_equal(count_lines("line B silent for 5.0 s", "<4>", &ok), 1);
	assert_true(ok);
	assert_int_equal(count_lines("line A", "", &ok), 0);

	/* B comes back: one info line. */
	s->feeds[0].stats.line_last_rx_ns[1] = NOW - SEC / 10;
	uf_events_tick(&ev, s, MONO0 + 4 * SEC);
	assert_int_equal(count_lines("line B back", "<6>", &ok), 1);
	assert_true(ok);

	/* The end of the session is no reason to call a quiet line silent. */
	s->feeds[0].stats.end_of_session = 1;
	s->feeds[0].stats.session_ended = 1;
	s->now_ns = NOW + 60 * SEC;
	uf_events_tick(&ev, s, MONO0 + 5 * SEC);
	assert_int_equal(count_lines("end of session S1 reached", "<6>", &ok), 1);
	assert_int_equal(count_lines("silent", "", &ok), 1);
	free(s);
}

static void test_events_burst_is_rate_limited_and_counts_the_suppressed(void **state)
{
	(void)state;
	struct uf_events ev;
	struct uf_status_snapshot *s = make_snapshot();
	int ok;

	uf_events_init(&ev);
	uf_events_tick(&ev, s, MONO0);
	/* 30 ticks in the same second, each with one more gap given up. */
	for (int i = 1; i <= 30; i++) {
		s->feeds[0].stats.gaps_unrecovered = (uint64_t)i;
		uf_events_tick(&ev, s, MONO0 + SEC);
	}
	assert_int_equal(count_lines("gap given up", "<4>", &ok), UF_EVENTS_BURST);
	/* A minute later the bucket has room again: the next line carries the count. */
	s->feeds[0].stats.gaps_unrecovered = 31;
	uf_events_tick(&ev, s, MONO0 + 61 * SEC);
	assert_int_equal(count_lines("gap given up", "<4>", &ok), UF_EVENTS_BURST + 1);
	assert_int_equal(count_lines("(" /* 30 - 5 */ "25 similar lines suppressed)", "<4>", &ok),
	                 1);
	free(s);
}

static void test_events_consumers_attach_and_lap(void **state)
{
	(void)state;
	struct uf_events ev;
	struct uf_status_snapshot *s = make_snapshot();
	struct uf_status_ring *r = &s->feeds[0].ring;
	int ok;

	r->present = 1;
	snprintf(r->name, sizeof(r->name), "nasdaq");
	uf_events_init(&ev);
	uf_events_tick(&ev, s, MONO0);
	r->nconsumers = 1;
	r->consumers[0] = (struct uf_status_consumer){.slot = 3, .pid = 99, .tag = "risk"};
	uf_events_tick(&ev, s, MONO0 + SEC);
	assert_int_equal(count_lines("consumer risk (pid 99, slot 3) attached", "<6>", &ok), 1);
	r->consumers[0].laps = 2;
	r->consumers[0].lost = 5000;
	uf_events_tick(&ev, s, MONO0 + 2 * SEC);
	assert_int_equal(count_lines("lapped 2 times, 5000 records lost", "<4>", &ok), 1);
	assert_true(ok);
	r->nconsumers = 0;
	uf_events_tick(&ev, s, MONO0 + 3 * SEC);
	assert_int_equal(count_lines("consumer risk (pid 99, slot 3) detached", "<6>", &ok), 1);
	free(s);
}

/* Terminal format unchanged when the journal is off; AUTO without $JOURNAL_STREAM is off. */
static void test_log_format_follows_the_journal_setting(void **state)
{
	(void)state;
	int ok;
	unsetenv("JOURNAL_STREAM");
	uf_log_set_journal(UF_LOG_JOURNAL_AUTO);
	assert_int_equal(uf_log_journal_on(), 0);
	uf_log_warn("plain line %d", 1);
	assert_int_equal(count_lines("Z WARN  plain line 1", "20", &ok), 1);
	assert_true(ok);
	uf_log_set_journal(UF_LOG_JOURNAL_ALWAYS);
	uf_log_error("journal line %d", 2);
	assert_int_equal(count_lines("journal line 2", "<3>journal line 2", &ok), 1);
	assert_true(ok);
	assert_int_equal(uf_log_journal_parse("never"), UF_LOG_JOURNAL_NEVER);
	assert_int_equal(uf_log_journal_parse("sometimes"), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(
	        test_events_gap_and_silent_line_log_once_each_with_priorities, setup, teardown),
	    cmocka_unit_test_setup_teardown(
	        test_events_burst_is_rate_limited_and_counts_the_suppressed, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_events_consumers_attach_and_lap, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_log_format_follows_the_journal_setting, setup,
	                                    teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
