/* /metrics as Prometheus sees it: a realistic snapshot (two feeds, two lines each, latency
 * and every stage timed, a session, consumers, a failed feed without a ring, a line that
 * never received, process metrics) rendered by the pure renderer and handed to
 * `promtool check metrics`, which must print nothing. Also pins the conventions the
 * operations rules depend on: histogram series in seconds, +Inf == _count, names. */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/uf_label.h"
#include "daemon/status_render.h"
#include "test/common/uf_test_promtool.h"

#define NOW_NS 1764000000000000000ull

static void fill_feed(struct uf_status_feed *f, const char *name, int running)
{
	snprintf(f->name, sizeof(f->name), "%s", name);
	snprintf(f->backend, sizeof(f->backend), "io_uring");
	f->state = running ? UF_STATUS_RUNNING : UF_STATUS_FAILED;
	if (!running)
		snprintf(f->error, sizeof(f->error), "receive failed: \"x\"");
	f->stats.packets = 12345;
	f->stats.messages = 98765;
	f->stats.gaps = 3;
	f->stats.gaps_unrecovered = 1;
	f->stats.sessions = 1;
	f->stats.decode_unknown_type = 2;
	f->stats.nlines = 2;
	snprintf(f->stats.line_names[0], sizeof(f->stats.line_names[0]), "A");
	snprintf(f->stats.line_names[1], sizeof(f->stats.line_names[1]), "B");
	f->stats.lines[0].packets = 12000;
	f->stats.lines[1].packets = 345;
	f->stats.line_last_rx_ns[0] = NOW_NS - 1500000; /* 1.5 ms ago */
	f->stats.line_last_rx_ns[1] = 0;                /* never */
	f->stats.books_stale = 17;
	f->stats.recovering = 1;
	memcpy(f->stats.session, "S20261203 ", 10);
	for (int i = 1; i <= 5000; i++) {
		uf_lat_record(&f->stats.latency, (int64_t)i * 37);
		for (unsigned st = 0; st < UF_STAGE_COUNT; st++)
			uf_lat_record(&f->stats.stages[st], (int64_t)(i % 97) * (st + 1) * 11);
	}
	uf_lat_record(&f->stats.latency, (int64_t)5 << 40); /* beyond the last bound */
	uf_lat_record(&f->stats.latency, -5);               /* clock step */
}

static struct uf_status_snapshot *make_snapshot(void)
{
	struct uf_status_snapshot *s = calloc(1, sizeof(*s));
	assert_non_null(s);
	snprintf(s->version, sizeof(s->version), "0.9.0");
	s->pid = 4242;
	s->start_ns = NOW_NS - 3600000000000ull;
	s->now_ns = NOW_NS;
	s->ready_silence_ns = 2000000000ull;
	s->nfeeds = 2;
	fill_feed(&s->feeds[0], "nasdaq", 1);
	fill_feed(&s->feeds[1], "bx\"2", 0);
	struct uf_status_ring *r = &s->feeds[0].ring;
	r->present = 1;
	snprintf(r->name, sizeof(r->name), "nasdaq");
	r->capacity = 1 << 20;
	r->sequence = 555555;
	r->nconsumers = 2;
	r->consumers[0] = (struct uf_status_consumer){
	    .slot = 0, .pid = 100, .lag = 12, .lost = 0, .laps = 0, .tag = "uf-tail"};
	r->consumers[1] = (struct uf_status_consumer){
	    .slot = 1, .pid = 101, .lag = 0, .lost = 4096, .laps = 2, .tag = "risk"};
	r->journal_on = 1; /* the ring's day journal (docs/journal.md) */
	r->journal = (struct uf_journal_stats){.records = 555000,
	                                       .bytes = 44400128,
	                                       .files = 1,
	                                       .lag = 555,
	                                       .holes = 1,
	                                       .hole_records = 300,
	                                       .write_errors = 2,
	                                       .dropped = 250,
	                                       .failing = 1};
	s->process = (struct uf_status_process){.present = 1,
	                                        .cpu_seconds = 12.5,
	                                        .resident_bytes = 123456789,
	                                        .virtual_bytes = 987654321,
	                                        .open_fds = 17,
	                                        .max_fds = 1024,
	                                        .start_time_s = 1764000000.25};
	return s;
}

static void test_promtool_accepts_the_rendered_metrics_without_a_word(void **state)
{
	(void)state;
	struct uf_status_snapshot *s = make_snapshot();
	char *text = uf_status_render_prometheus(s);
	char out[8192];
	assert_non_null(text);
	if (uf_test_promtool_check_metrics_within(text, out, sizeof(out), 10000) != 0)
		fail_msg("promtool check metrics said:\n%s", out);
	/* The names the alert rules and dashboards use. */
	static const char *const want[] = {
	    "uringfeed_wire_to_publish_seconds_bucket{feed=\"nasdaq\",le=\"+Inf\"} 5001\n",
	    "uringfeed_wire_to_publish_seconds_count{feed=\"nasdaq\"} 5001\n",
	    "uringfeed_stage_seconds_count{feed=\"nasdaq\",stage=\"receive\"} 5000\n",
	    "uringfeed_stage_seconds_count{feed=\"nasdaq\",stage=\"image\"} 5000\n",
	    "uringfeed_stage_seconds_bucket{feed=\"nasdaq\",stage=\"decode\",le=\"+Inf\"} 5000\n",
	    "uringfeed_line_last_packet_age_seconds{feed=\"nasdaq\",line=\"A\"} 0.001500\n",
	    "uringfeed_line_last_packet_age_seconds{feed=\"nasdaq\",line=\"B\"} NaN\n",
	    "uringfeed_books_stale{feed=\"nasdaq\"} 17\n",
	    "uringfeed_session_info{feed=\"nasdaq\",session=\"S20261203\"} 1\n",
	    "uringfeed_recovery_in_progress{feed=\"nasdaq\"} 1\n",
	    "uringfeed_snapshot_in_progress{feed=\"nasdaq\"} 0\n",
	    "uringfeed_ready{feed=\"nasdaq\"} 0\n",
	    "uringfeed_gaps_unrecovered_total{feed=\"nasdaq\"} 1\n",
	    "uringfeed_messages_total{feed=\"nasdaq\"} 98765\n",
	    "uringfeed_wire_to_publish_negative_total{feed=\"nasdaq\"} 1\n",
	    "uringfeed_consumer_lost_records_total{feed=\"nasdaq\",ring=\"nasdaq\",consumer=\"risk/"
	    "1\",pid=\"101\"} 4096\n",
	    "uringfeed_consumer_laps_total{feed=\"nasdaq\",ring=\"nasdaq\",consumer=\"risk/1\","
	    "pid=\"101\"} 2\n",
	    "uringfeed_consumer_lag_records{feed=\"nasdaq\",ring=\"nasdaq\",consumer=\"uf-tail/0\","
	    "pid=\"100\"} 12\n",
	    "uringfeed_journal_records_total{feed=\"nasdaq\",ring=\"nasdaq\"} 555000\n",
	    "uringfeed_journal_bytes_total{feed=\"nasdaq\",ring=\"nasdaq\"} 44400128\n",
	    "uringfeed_journal_files_total{feed=\"nasdaq\",ring=\"nasdaq\"} 1\n",
	    "uringfeed_journal_lag_records{feed=\"nasdaq\",ring=\"nasdaq\"} 555\n",
	    "uringfeed_journal_holes_total{feed=\"nasdaq\",ring=\"nasdaq\"} 1\n",
	    "uringfeed_journal_hole_records_total{feed=\"nasdaq\",ring=\"nasdaq\"} 300\n",
	    "uringfeed_journal_write_errors_total{feed=\"nasdaq\",ring=\"nasdaq\"} 2\n",
	    "uringfeed_journal_dropped_records_total{feed=\"nasdaq\",ring=\"nasdaq\"} 250\n",
	    "uringfeed_journal_failing{feed=\"nasdaq\",ring=\"nasdaq\"} 1\n",
	    "process_cpu_seconds_total 12.500\n",
	    "process_resident_memory_bytes 123456789\n",
	    "process_start_time_seconds 1764000000.250\n",
	    "process_open_fds 17\n",
	    "uringfeed_feed_up{feed=\"bx\\\"2\",backend=\"io_uring\",state=\"failed\"} 0\n",
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		if (!strstr(text, want[i]))
			fail_msg("missing from /metrics: %s", want[i]);
	/* Abbreviated units are gone for good. */
	assert_null(strstr(text, "_ns"));
	free(text);
	free(s);
}

/* issue 23 item 13: a consumer chooses its tag. Cut in the middle of a UTF-8 character (a
 * 16-byte field) it made promtool refuse the whole scrape and jansson drop the consumer from
 * /status; a newline in it forged log lines. The producer cleans it once where it reads the
 * table (uf_ring_consumers -> uf_label_clean); shown here on every renderer. */
static void test_a_hostile_consumer_tag_is_harmless_once_cleaned(void **state)
{
	(void)state;
	struct uf_status_snapshot *s = make_snapshot();
	struct uf_status_consumer *k = &s->feeds[0].ring.consumers[2];
	char out[8192];
	/* "équipe-risk" + a cut euro sign, as a 16-byte field holds it: 15 bytes + NUL */
	static const char cut[16] = "\xc3\xa9quipe-ris\xe2\x82";
	static const char forged[16] = "x\nERROR feed";
	s->feeds[0].ring.nconsumers = 3;
	*k = (struct uf_status_consumer){.slot = 2, .pid = 102};
	memcpy(k->tag, cut, sizeof(k->tag));
	char *raw = uf_status_render_prometheus(s); /* the check is real: raw, promtool refuses */
	assert_non_null(raw);
	assert_int_equal(uf_test_promtool_check_metrics_within(raw, out, sizeof(out), 10000), -1);
	free(raw);
	uf_label_clean(k->tag, sizeof(k->tag));
	assert_string_equal(k->tag, "\xc3\xa9quipe-ris"); /* whole characters kept */
	char *text = uf_status_render_prometheus(s);
	assert_non_null(text);
	if (uf_test_promtool_check_metrics_within(text, out, sizeof(out), 10000) != 0)
		fail_msg("promtool check metrics said:\n%s", out);
	assert_non_null(strstr(text, "consumer=\"\xc3\xa9quipe-ris/2\""));
	free(text);
	char *json = uf_status_render_json(s);
	assert_non_null(json);
	assert_non_null(strstr(json, "quipe-ris")); /* the consumer is listed, not dropped */
	free(json);
	memcpy(k->tag, forged, sizeof(k->tag));
	uf_label_clean(k->tag, sizeof(k->tag));
	assert_string_equal(k->tag, "x?ERROR feed"); /* no line break left to forge a log line */
	free(s);
}

/* The check is real: promtool does complain about what the old endpoint served. */
static void test_promtool_refuses_abbreviated_units(void **state)
{
	(void)state;
	char out[4096];
	const char *bad = "# HELP uringfeed_wire_to_publish_max_ns largest\n"
	                  "# TYPE uringfeed_wire_to_publish_max_ns gauge\n"
	                  "uringfeed_wire_to_publish_max_ns{feed=\"a\"} 5\n";
	assert_int_equal(uf_test_promtool_check_metrics_within(bad, out, sizeof(out), 10000), -1);
	/* promtool's own complaint: not "promtool not found", nor a timeout */
	assert_non_null(strstr(out, "should not contain abbreviated units"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_promtool_accepts_the_rendered_metrics_without_a_word),
	    cmocka_unit_test(test_a_hostile_consumer_tag_is_harmless_once_cleaned),
	    cmocka_unit_test(test_promtool_refuses_abbreviated_units),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
