/* Status renderers without a server: a snapshot built here in, text out. Every counter of
 * the X-macro lists gets its own value, so a counter that is dropped, renamed or mixed up
 * with another fails by name; escaping, absent rings, clamped feed counts and /health's
 * codes are forced by the snapshot, not hoped for. */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "daemon/status_render.h"
#include "decode/uf_soup.h"
#include "feed/snapshot.h"
#include "test/common/uf_test_json.h"
#include "test/daemon/status_fixture.h"

#define NOW_NS   5000000000000ull
#define START_NS 4990000000000ull

/* Value of feed counter k (0-based position in UF_FEED_COUNTERS) of feed i. */
static uint64_t feed_val(int i, int k)
{
	return 1000u * (uint64_t)(i + 1) + (uint64_t)k;
}

/* Value of line counter k of line l of feed i. */
static uint64_t line_val(int i, int l, int k)
{
	return 100000u * (uint64_t)(i + 1) + 1000u * (uint64_t)(l + 1) + (uint64_t)k;
}

static void fill_feed(struct uf_status_feed *f, int i, const char *name)
{
	int k = 0;
	snprintf(f->name, sizeof(f->name), "%s", name);
	snprintf(f->backend, sizeof(f->backend), "recvmmsg");
	snprintf(f->protocol, sizeof(f->protocol), i ? "iex-deep" : "itch50-moldudp64");
	if (!i) /* the second feed has not been created: no book memory yet */
		snprintf(f->book_memory, sizeof(f->book_memory), "thp");
	f->state = UF_STATUS_RUNNING;
#define SET_FEED(field, help) f->stats.field = feed_val(i, k++);
	UF_FEED_COUNTERS(SET_FEED)
#undef SET_FEED
	f->stats.nlines = 2;
	for (int l = 0; l < 2; l++) {
		snprintf(f->stats.line_names[l], sizeof(f->stats.line_names[l]), l ? "B" : "A");
		k = 0;
#define SET_LINE(field, help) f->stats.lines[l].field = line_val(i, l, k++);
		UF_FEED_LINE_COUNTERS(SET_LINE)
#undef SET_LINE
	}
	uf_lat_record_n(&f->stats.latency, 1500, 3);
}

/* Two feeds: "alpha" with a ring and two consumers, "be\"ta\\" (a name that needs escaping)
 * failed, without a ring. */
static struct uf_status_snapshot *make_snapshot(void)
{
	struct uf_status_snapshot *s = calloc(1, sizeof(*s));
	assert_non_null(s);
	snprintf(s->version, sizeof(s->version), "1.2.3");
	s->pid = 77;
	s->start_ns = START_NS;
	s->now_ns = NOW_NS;
	snprintf(s->config, sizeof(s->config), "/etc/uf.json");
	s->reloads = 9;
	s->nfeeds = 2;
	fill_feed(&s->feeds[0], 0, "alpha");
	fill_feed(&s->feeds[1], 1, "be\"ta\\");
	s->feeds[1].state = UF_STATUS_FAILED;
	snprintf(s->feeds[1].error, sizeof(s->feeds[1].error), "bind: in use");
	uf_test_status_ring(&s->feeds[0].ring, NOW_NS - 250000000, "risk");
	return s;
}

static void test_status_render_json_every_counter(void **state)
{
	(void)state;
	struct uf_status_snapshot *s = make_snapshot();
	s->feeds[0].stats.snapshot_last_failure = UF_SNAP_WHY_LEAD;
	s->feeds[0].stats.snapshot_last_disconnect =
	    UF_SNAP_DISC(-EBADMSG, 1 + UF_SOUP_ERR_BAD_NUMBER, 'A');
	s->feeds[0].stats.snapshot_last_claim = 1000009000;
	s->feeds[0].stats.snapshot_last_shown = 9500;
	char *text = uf_status_render_json(s);
	assert_non_null(text);
	json_error_t e;
	json_t *root = json_loads(text, 0, &e);
	if (!root)
		fail_msg("JSON does not parse: %s at %d:%d", e.text, e.line, e.column);
	for (int i = 0; i < 2; i++) {
		char p[160];
		int k = 0;
		uint64_t dec = 0;
#define CHECK_FEED(field, help)                                                                    \
	if (strncmp(#field, "decode_", 7) == 0) {                                                  \
		snprintf(p, sizeof(p), "feeds/%d/decode_errors/%s", i, &(#field)[7]);              \
		dec += feed_val(i, k);                                                             \
	} else {                                                                                   \
		snprintf(p, sizeof(p), "feeds/%d/%s", i, #field);                                  \
	}                                                                                          \
	assert_int_equal(uf_test_json_int(root, p), feed_val(i, k++));
		UF_FEED_COUNTERS(CHECK_FEED)
#undef CHECK_FEED
		snprintf(p, sizeof(p), "feeds/%d/decode_errors_total", i);
		assert_int_equal(uf_test_json_int(root, p), dec);
		for (int l = 0; l < 2; l++) {
			k = 0;
#define CHECK_LINE(field, help)                                                                    \
	snprintf(p, sizeof(p), "feeds/%d/lines/%d/%s", i, l, #field);                              \
	assert_int_equal(uf_test_json_int(root, p), line_val(i, l, k++));
			UF_FEED_LINE_COUNTERS(CHECK_LINE)
#undef CHECK_LINE
		}
		snprintf(p, sizeof(p), "feeds/%d/latency_ns/count", i);
		assert_int_equal(uf_test_json_int(root, p), 3);
	}
	json_t *f0 = json_array_get(json_object_get(root, "feeds"), 0);
	json_t *f1 = json_array_get(json_object_get(root, "feeds"), 1);
	assert_string_equal(json_string_value(json_object_get(f1, "name")), "be\"ta\\");
	assert_string_equal(json_string_value(json_object_get(f0, "protocol")), "itch50-moldudp64");
	assert_string_equal(json_string_value(json_object_get(f1, "protocol")), "iex-deep");
	assert_string_equal(json_string_value(json_object_get(f0, "book_memory")), "thp");
	assert_true(json_is_null(json_object_get(f1, "book_memory")));
	assert_string_equal(json_string_value(json_object_get(f1, "state")), "failed");
	assert_string_equal(json_string_value(json_object_get(f1, "error")), "bind: in use");
	assert_null(json_object_get(f0, "error")); /* only a feed with an error has the key */
	assert_null(json_object_get(f1, "ring"));  /* no ring, no key */
	assert_int_equal(uf_test_json_int(root, "feeds/0/ring/sequence"), 777);
	assert_int_equal(uf_test_json_int(root, "feeds/0/ring/consumers/0/lag"), 77);
	assert_int_equal(uf_test_json_int(root, "feeds/0/ring/consumers/0/idle_ms"),
	                 250); /* now - seen */
	assert_null(json_object_get(
	    json_array_get(json_object_get(json_object_get(f0, "ring"), "consumers"), 1),
	    "idle_ms")); /* never seen: no age */
	/* why the snapshot path last failed, by name */
	assert_string_equal(
	    json_string_value(json_object_get(json_object_get(f0, "snapshot"), "last_failure")),
	    "lead");
	json_t *ld = json_object_get(json_object_get(f0, "snapshot"), "last_disconnect");
	assert_int_equal(json_integer_value(json_object_get(ld, "errno")), EBADMSG);
	assert_string_equal(json_string_value(json_object_get(ld, "refused")), "bad_number");
	assert_string_equal(json_string_value(json_object_get(ld, "packet")), "A");
	assert_int_equal(uf_test_json_int(root, "feeds/0/snapshot/last_claim"), 1000009000);
	assert_int_equal(uf_test_json_int(root, "feeds/0/snapshot/last_shown"), 9500);
	json_t *s1 = json_object_get(f1, "snapshot"); /* never failed: nulls */
	assert_true(json_is_null(json_object_get(s1, "last_failure")));
	assert_true(
	    json_is_null(json_object_get(json_object_get(s1, "last_disconnect"), "refused")));
	assert_int_equal(uf_test_json_int(root, "reloads"), 9);
	assert_int_equal(uf_test_json_int(root, "time_ns"), (json_int_t)NOW_NS);
	assert_true(json_real_value(json_object_get(root, "uptime_s")) == 10.0);
	json_decref(root);
	free(text);
	free(s);
}

/* Whether `text` holds `line` as one whole line. */
static int has_line(const char *text, const char *line)
{
	size_t n = strlen(line);
	for (const char *p = text; (p = strstr(p, line)) != NULL; p++)
		if ((p == text || p[-1] == '\n') && p[n] == '\n')
			return 1;
	return 0;
}

static void test_status_render_prometheus_every_counter(void **state)
{
	(void)state;
	struct uf_status_snapshot *s = make_snapshot();
	char *text = uf_status_render_prometheus(s);
	char want[512];
	assert_non_null(text);
	static const char *const fe[2] = {"alpha", "be\\\"ta\\\\"}; /* label-escaped */
	for (int i = 0; i < 2; i++) {
		int k = 0;
#define CHECK_FEED(field, help)                                                                    \
	if (strncmp(#field, "decode_", 7) == 0)                                                    \
		snprintf(want, sizeof(want),                                                       \
		         "uringfeed_decode_errors_total{feed=\"%s\",kind=\"%s\"} %" PRIu64, fe[i], \
		         &(#field)[7], feed_val(i, k));                                            \
	else if (!strcmp(#field, "snapshot_duration_ns"))                                          \
		snprintf(want, sizeof(want),                                                       \
		         "uringfeed_snapshot_duration_seconds_total{feed=\"%s\"} %.9f", fe[i],     \
		         (double)feed_val(i, k) / 1e9);                                            \
	else if (!strcmp(#field, "busy_ns"))                                                       \
		snprintf(want, sizeof(want), "uringfeed_busy_seconds_total{feed=\"%s\"} %.9f",     \
		         fe[i], (double)feed_val(i, k) / 1e9);                                     \
	else if (!strcmp(#field, "idle_pause"))                                                    \
		snprintf(want, sizeof(want), "uringfeed_idle_pause{feed=\"%s\"} %" PRIu64, fe[i],  \
		         feed_val(i, k));                                                          \
	else if (!strcmp(#field, "snapshot_last_duration_ns"))                                     \
		snprintf(want, sizeof(want),                                                       \
		         "uringfeed_snapshot_last_duration_seconds{feed=\"%s\"} %.9f", fe[i],      \
		         (double)feed_val(i, k) / 1e9);                                            \
	else if (!strcmp(#field, "snapshot_in_progress"))                                          \
		snprintf(want, sizeof(want),                                                       \
		         "uringfeed_snapshot_in_progress{feed=\"%s\"} %" PRIu64, fe[i],            \
		         feed_val(i, k));                                                          \
	else if (!strcmp(#field, "snapshot_pending"))                                              \
		snprintf(want, sizeof(want), "uringfeed_snapshot_pending{feed=\"%s\"} %" PRIu64,   \
		         fe[i], feed_val(i, k));                                                   \
	else if (strncmp(#field, "capture_dropped_", 16) == 0)                                     \
		snprintf(want, sizeof(want),                                                       \
		         "uringfeed_capture_dropped_total{feed=\"%s\",reason=\"%s\"} %" PRIu64,    \
		         fe[i], &(#field)[16], feed_val(i, k));                                    \
	else if (!strcmp(#field, "capture_lag_ns"))                                                \
		snprintf(want, sizeof(want), "uringfeed_capture_lag_seconds{feed=\"%s\"} %.9f",    \
		         fe[i], (double)feed_val(i, k) / 1e9);                                     \
	else if (!strcmp(#field, "capture_queued_bytes"))                                          \
		snprintf(want, sizeof(want),                                                       \
		         "uringfeed_capture_queued_bytes{feed=\"%s\"} %" PRIu64, fe[i],            \
		         feed_val(i, k));                                                          \
	else                                                                                       \
		snprintf(want, sizeof(want), "uringfeed_%s_total{feed=\"%s\"} %" PRIu64, #field,   \
		         fe[i], feed_val(i, k));                                                   \
	k++;                                                                                       \
	if (!has_line(text, want))                                                                 \
		fail_msg("missing line: %s", want);
		UF_FEED_COUNTERS(CHECK_FEED)
#undef CHECK_FEED
		for (int l = 0; l < 2; l++) {
			k = 0;
#define CHECK_LINE(field, help)                                                                    \
	snprintf(want, sizeof(want), "uringfeed_line_%s_total{feed=\"%s\",line=\"%s\"} %" PRIu64,  \
	         #field, fe[i], l ? "B" : "A", line_val(i, l, k++));                               \
	if (!has_line(text, want))                                                                 \
		fail_msg("missing line: %s", want);
			UF_FEED_LINE_COUNTERS(CHECK_LINE)
#undef CHECK_LINE
		}
	}
	assert_true(has_line(text, "# TYPE uringfeed_records_total counter"));
	assert_true(
	    has_line(text, "uringfeed_ring_sequence{feed=\"alpha\",ring=\"alpha_ring\"} 777"));
	assert_true(has_line(text, "uringfeed_feed_up{feed=\"be\\\"ta\\\\\",backend=\"recvmmsg\","
	                           "state=\"failed\"} 0"));
	assert_true(has_line(text, "uringfeed_config_reloads_total 9"));
	/* The ringless feed has no ring sample at all. */
	assert_null(strstr(text, "uringfeed_ring_sequence{feed=\"be"));
	/* Every family is declared once. */
	const char *t1 = strstr(text, "# TYPE uringfeed_records_total");
	assert_null(strstr(t1 + 1, "# TYPE uringfeed_records_total"));
	assert_int_equal(text[strlen(text) - 1], '\n');
	free(text);
	free(s);
}

static void test_status_render_health_codes(void **state)
{
	(void)state;
	struct uf_status_snapshot *s = make_snapshot();
	uf_test_expect_health(s, 503, "feed be\"ta\\: failed: bind: in use\n");
	s->feeds[1].state = UF_STATUS_RUNNING;
	uf_test_expect_health(s, 200, "ok: 2 feeds running\n");
	free(s);
}

/* One running feed, data flowing on both lines in a session: ready. Each test below breaks
 * one condition and expects 503 with exactly that reason. */
static struct uf_status_snapshot *ready_snapshot(void)
{
	struct uf_status_snapshot *s = calloc(1, sizeof(*s));
	assert_non_null(s);
	s->now_ns = NOW_NS;
	s->ready_silence_ns = 2000000000ull;
	s->nfeeds = 1;
	struct uf_status_feed *f = &s->feeds[0];
	snprintf(f->name, sizeof(f->name), "nq");
	f->state = UF_STATUS_RUNNING;
	f->stats.packets = 10;
	f->stats.sessions = 1;
	f->stats.nlines = 2;
	snprintf(f->stats.line_names[0], sizeof(f->stats.line_names[0]), "A");
	snprintf(f->stats.line_names[1], sizeof(f->stats.line_names[1]), "B");
	f->stats.line_last_rx_ns[0] = NOW_NS - 1000000;
	f->stats.line_last_rx_ns[1] = NOW_NS - 1999000000ull; /* just inside the limit */
	return s;
}

static void expect_ready(const struct uf_status_snapshot *s, unsigned want_code, const char *want)
{
	unsigned code = 0;
	char *text = uf_status_render_ready(s, &code);
	assert_non_null(text);
	assert_int_equal(code, want_code);
	assert_string_equal(text, want);
	assert_int_equal(uf_status_feed_not_ready(s, 0, NULL, 0) == 0, want_code == 200);
	free(text);
}

static void test_status_ready_decides_from_the_snapshot(void **state)
{
	(void)state;
	struct uf_status_snapshot *s = ready_snapshot();
	struct uf_status_feed *f = &s->feeds[0];
	expect_ready(s, 200, "ready: 1 feed\n");

	/* Before any data. */
	f->stats.packets = 0;
	expect_ready(s, 503, "feed nq: no data received yet\n");
	f->stats.packets = 10;

	/* A line silent past the limit during the session, then one that never received. */
	f->stats.line_last_rx_ns[1] = NOW_NS - 2500000000ull;
	expect_ready(s, 503, "feed nq: line B silent for 2.5 s (limit 2.0 s)\n");
	f->stats.line_last_rx_ns[0] = 0;
	expect_ready(s, 503,
	             "feed nq: line A has received nothing this session\n"
	             "feed nq: line B silent for 2.5 s (limit 2.0 s)\n");
	/* A line without a packet this session gets the grace period from the session start:
	 * the other line may just have been first. The same for a packet of an old session. */
	f->stats.line_last_rx_ns[1] = NOW_NS - 1000000;
	f->stats.session_start_ns = NOW_NS - 500000000ull;
	expect_ready(s, 200, "ready: 1 feed\n");
	f->stats.line_last_rx_ns[0] = NOW_NS - 9000000000ull; /* before this session */
	expect_ready(s, 200, "ready: 1 feed\n");
	f->stats.session_start_ns = NOW_NS - 3000000000ull;
	expect_ready(s, 503, "feed nq: line A has received nothing this session\n");
	f->stats.line_last_rx_ns[0] = 0;
	f->stats.line_last_rx_ns[1] = NOW_NS - 2500000000ull;
	f->stats.session_start_ns = 0;
	/* After the end of session silence is normal. */
	f->stats.session_ended = 1;
	expect_ready(s, 200, "ready: 1 feed\n");
	f->stats.session_ended = 0;
	f->stats.line_last_rx_ns[0] = NOW_NS;
	f->stats.line_last_rx_ns[1] = NOW_NS;

	/* Stale books and recovery in progress, both at once: two reasons. */
	f->stats.books_stale = 12;
	f->stats.recovering = 1;
	expect_ready(
	    s, 503,
	    "feed nq: 12 books stale (an unrecovered gap, a message that did not decode, a book "
	    "integrity error or a full table; until a snapshot or the next session)\n"
	    "feed nq: gap recovery in progress\n");
	f->stats.books_stale = 0;
	f->stats.recovering = 0;

	/* A snapshot loading: the books are being rebuilt, not ready until it is merged. */
	f->stats.snapshot_in_progress = 1;
	expect_ready(s, 503, "feed nq: snapshot loading\n");
	f->stats.snapshot_in_progress = 0;
	expect_ready(s, 200, "ready: 1 feed\n");

	/* Capture drops leave the feed ready (the feed is fine) but the body says so. */
	f->stats.capture_dropped_disk_full = 40;
	f->stats.capture_dropped_writer_behind = 2;
	expect_ready(s, 200,
	             "ready: 1 feed\n"
	             "feed nq: capture dropped 42 datagrams (writer_behind 2, disk_full 40, "
	             "no_dir 0, read_only 0, io_error 0); the feed goes on\n");
	f->stats.books_stale = 1;
	expect_ready(
	    s, 503,
	    "feed nq: 1 books stale (an unrecovered gap, a message that did not decode, a book "
	    "integrity error or a full table; until a snapshot or the next session)\n"
	    "feed nq: capture dropped 42 datagrams (writer_behind 2, disk_full 40, "
	    "no_dir 0, read_only 0, io_error 0); the feed goes on\n");
	f->stats.books_stale = 0;
	f->stats.capture_dropped_disk_full = 0;
	f->stats.capture_dropped_writer_behind = 0;

	/* A feed that does not run is not ready, whatever its counters. */
	f->state = UF_STATUS_FAILED;
	snprintf(f->error, sizeof(f->error), "boom");
	expect_ready(s, 503, "feed nq: failed: boom\n");
	free(s);
}

/* The STATUS= line: counts, session, and one clause per feed with a problem (stuck first:
 * a stuck feed is not counted as running); cut to the buffer. */
static void test_status_render_systemd_line(void **state)
{
	(void)state;
	struct uf_status_snapshot *s = ready_snapshot();
	struct uf_status_feed *f = &s->feeds[0];
	uint8_t stuck[UF_CFG_MAX_FEEDS] = {0};
	char buf[256];

	f->stats.messages = 123456;
	snprintf(f->stats.session, sizeof(f->stats.session), "S1");
	size_t n = uf_status_render_systemd(s, NULL, buf, sizeof(buf));
	assert_int_equal(n, strlen(buf));
	assert_string_equal(buf, "feeds 1/1 running, 123456 msgs, 0 stale books, session S1");
	stuck[0] = 1;
	uf_status_render_systemd(s, stuck, buf, sizeof(buf));
	assert_string_equal(buf, "feeds 0/1 running, 123456 msgs, 0 stale books, session S1; "
	                         "feed nq stuck (no heartbeat)");
	stuck[0] = 0;

	/* A second feed, stale after a gap and recovering: its first reason only. */
	s->nfeeds = 2;
	struct uf_status_feed *g = &s->feeds[1];
	*g = *f;
	snprintf(g->name, sizeof(g->name), "bx");
	g->stats.messages = 10;
	g->stats.books_stale = 7;
	g->stats.recovering = 1;
	f->stats.session_ended = 1;
	uf_status_render_systemd(s, stuck, buf, sizeof(buf));
	assert_string_equal(buf, "feeds 2/2 running, 123466 msgs, 7 stale books; feed bx: 7 books "
	                         "stale (an unrecovered gap, a message that did not decode, a book "
	                         "integrity error or a full table; until a snapshot or the next "
	                         "session)");
	g->state = UF_STATUS_FAILED;
	snprintf(g->error, sizeof(g->error), "receive failed");
	uf_status_render_systemd(s, stuck, buf, sizeof(buf));
	assert_string_equal(buf, "feeds 1/2 running, 123466 msgs, 7 stale books; feed bx: failed: "
	                         "receive failed");
	/* Cut, always terminated. */
	assert_int_equal(uf_status_render_systemd(s, stuck, buf, 12), 11);
	assert_string_equal(buf, "feeds 1/2 r");
	free(s);
}

/* A snapshot claiming more feeds than it holds renders only what it holds. */
static void test_status_render_clamps_feed_count(void **state)
{
	(void)state;
	struct uf_status_snapshot *s = make_snapshot();
	s->nfeeds = UF_CFG_MAX_FEEDS + 1000;
	char *text = uf_status_render_json(s);
	assert_non_null(text);
	json_t *root = json_loads(text, 0, NULL);
	assert_non_null(root);
	assert_int_equal(json_array_size(json_object_get(root, "feeds")), UF_CFG_MAX_FEEDS);
	json_decref(root);
	free(text);
	text = uf_status_render_prometheus(s);
	assert_non_null(text);
	free(text);
	free(s);
}

static void test_status_render_state_names(void **state)
{
	(void)state;
	assert_string_equal(uf_status_state_name(UF_STATUS_STARTING), "starting");
	assert_string_equal(uf_status_state_name(UF_STATUS_FAILED), "failed");
	assert_string_equal(uf_status_state_name((enum uf_status_state)99), "unknown");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_status_render_json_every_counter),
	    cmocka_unit_test(test_status_render_prometheus_every_counter),
	    cmocka_unit_test(test_status_render_health_codes),
	    cmocka_unit_test(test_status_ready_decides_from_the_snapshot),
	    cmocka_unit_test(test_status_render_systemd_line),
	    cmocka_unit_test(test_status_render_clamps_feed_count),
	    cmocka_unit_test(test_status_render_state_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
