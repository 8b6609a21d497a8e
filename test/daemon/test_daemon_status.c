/* Status endpoint over real HTTP on loopback: /status is JSON that jansson parses back,
 * /metrics is Prometheus text that a strict exposition-format parser (written here) accepts,
 * and both carry exactly the counters the test stored; bad requests get proper codes. */
#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/uf_time.h"
#include "daemon/log.h"
#include "daemon/status.h"
#include "test/common/uf_test_json.h"
#include "test/daemon/status_fixture.h"

/* ---- what the "feeds" hold ---- */

struct fixture {
	struct uf_feed_stats stats[2]; /* written by the test / a writer thread */
	int fail;                      /* fill returns -EAGAIN when set */
	int all_running;               /* beta runs too (for /ready) */
	struct uf_status_server *srv;  /* server under test */
};

static int fill(void *arg, struct uf_status_snapshot *s)
{
	struct fixture *fx = arg;

	if (fx->fail)
		return -EAGAIN;
	snprintf(s->version, sizeof(s->version), "9.8.7");
	s->pid = 4242;
	s->start_ns = 1000000000ull;
	s->now_ns = uf_now_realtime_ns();
	snprintf(s->config, sizeof(s->config), "/etc/uringfeed/test.json");
	s->reloads = 3;
	s->nfeeds = 2;
	for (int i = 0; i < 2; i++) {
		struct uf_status_feed *f = &s->feeds[i];
		snprintf(f->name, sizeof(f->name), i ? "beta" : "alpha");
		snprintf(f->backend, sizeof(f->backend), i ? "epoll" : "io_uring");
		snprintf(f->protocol, sizeof(f->protocol), "%s",
		         i ? "iex-tops" : "itch50-moldudp64");
		f->state = i && !fx->all_running ? UF_STATUS_FAILED : UF_STATUS_RUNNING;
		if (f->state == UF_STATUS_FAILED)
			snprintf(f->error, sizeof(f->error), "bind: \"quoted\" \\ error");
		uf_feed_stats_read(&fx->stats[i], &f->stats);
	}
	uf_test_status_ring(&s->feeds[0].ring, s->now_ns, "risk\"x");
	return 0;
}

static void set_counters(struct fixture *fx)
{
	struct uf_feed_stats *a = &fx->stats[0], *b = &fx->stats[1];

	memset(fx->stats, 0, sizeof(fx->stats));
	a->nlines = 2;
	snprintf(a->line_names[0], UF_CFG_NAME_MAX, "A");
	snprintf(a->line_names[1], UF_CFG_NAME_MAX, "B");
	uf_stat_add(&a->packets, 1001);
	uf_stat_add(&a->messages, 123456789012ull);
	uf_stat_add(&a->gaps, 7);
	uf_stat_add(&a->rerequests, 5);
	uf_stat_add(&a->recovered_messages, 40);
	uf_stat_add(&a->gaps_unrecovered, 1);
	uf_stat_add(&a->decode_truncated_header, 2);
	uf_stat_add(&a->decode_unknown_type, 9);
	uf_stat_add(&a->book_integrity_errors, 4);
	uf_stat_add(&a->cq_overflows, 6);
	uf_stat_add(&a->records, 777);
	uf_stat_add(&a->lines[0].packets, 600);
	uf_stat_add(&a->lines[0].wins, 550);
	uf_stat_add(&a->lines[1].packets, 401);
	uf_stat_add(&a->lines[1].wins, 451);
	uf_stat_add(&a->lines[1].duplicates, 33);
	uf_stat_add(&a->lines[1].rearms, 8);
	for (int i = 1; i <= 1000; i++) /* 1..1000 us: p50 ~ 500 us, p99 ~ 990 us */
		uf_lat_record(&a->latency, (int64_t)i * 1000);
	b->nlines = 1;
	snprintf(b->line_names[0], UF_CFG_NAME_MAX, "only");
	uf_stat_add(&b->messages, 3);
	uf_stat_add(&b->lines[0].packets, 2);
}

static int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
	char err[256];

	uf_log_set_level(UF_LOG_WARN);
	inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	set_counters(fx);
	if (uf_status_start(&a, fill, fx, &fx->srv, err, sizeof(err)) != 0)
		fail_msg("status server did not start: %s", err);
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;
	uf_status_stop(fx->srv);
	free(fx);
	return 0;
}

/* ---- a small HTTP client (the test's side; the server is libmicrohttpd) ---- */

struct resp {
	int code;           /* status code, -1 when none */
	char headers[2048]; /* raw header block */
	char *body;         /* malloc'ed, NUL-terminated */
	size_t body_len;    /* bytes */
};

static const char *http_src; /* client source address (another loopback one), NULL: any */

/* Sends `raw` as is, reads until the server closes (bounded by a 5 s poll timeout). */
static void http_raw(uint16_t port, const char *raw, struct resp *r)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
	size_t cap = 65536, len = 0;
	char *buf = malloc(cap);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	memset(r, 0, sizeof(*r));
	r->code = -1;
	inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	assert_true(fd >= 0);
	if (http_src) {
		struct sockaddr_in src = {.sin_family = AF_INET};
		inet_pton(AF_INET, http_src, &src.sin_addr);
		assert_int_equal(bind(fd, (struct sockaddr *)&src, sizeof(src)), 0);
	}
	assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	ssize_t w = send(fd, raw, strlen(raw), MSG_NOSIGNAL);
	if (w < 0 && (errno == EPIPE || errno == ECONNRESET)) { /* closed at accept */
		close(fd);
		buf[0] = '\0';
		r->body = buf;
		return;
	}
	assert_int_equal(w, (ssize_t)strlen(raw));
	for (;;) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		if (poll(&p, 1, 5000) != 1)
			fail_msg("no answer within 5 s to: %s", raw);
		if (len + 4096 > cap)
			buf = realloc(buf, cap *= 2);
		ssize_t n = read(fd, buf + len, cap - len - 1);
		if (n < 0 && errno == ECONNRESET)
			break; /* refused after accept: no answer */
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	buf[len] = '\0';
	char *hend = strstr(buf, "\r\n\r\n");
	if (len == 0) { /* closed without an answer: code stays -1 */
		r->body = buf;
		return;
	}
	if (sscanf(buf, "HTTP/1.%*d %d", &r->code) != 1 || !hend)
		fail_msg("not an HTTP response: %.200s", buf);
	snprintf(r->headers, sizeof(r->headers), "%.*s", (int)(hend - buf), buf);
	r->body_len = len - (size_t)(hend + 4 - buf);
	r->body = malloc(r->body_len + 1);
	memcpy(r->body, hend + 4, r->body_len);
	r->body[r->body_len] = '\0';
	free(buf);
}

static void http(uint16_t port, const char *method, const char *path, struct resp *r)
{
	char req[256];
	snprintf(req, sizeof(req), "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
	         method, path);
	http_raw(port, req, r);
}

/* `method` `path` on `port` answers `code` and, when `body` is not NULL, exactly `body`. */
static void expect_http(uint16_t port, const char *method, const char *path, int code,
                        const char *body)
{
	struct resp r;
	http(port, method, path, &r);
	assert_int_equal(r.code, code);
	if (body)
		assert_string_equal(r.body, body);
	free(r.body);
}

/* The request `raw`, sent as is, answers `code`. */
static void expect_raw(uint16_t port, const char *raw, int code)
{
	struct resp r;
	http_raw(port, raw, &r);
	assert_int_equal(r.code, code);
	free(r.body);
}

/* ---- strict Prometheus text exposition format 0.0.4 parser ---- */

#define MAX_SERIES 2048
struct prom {
	int n;                     /* series parsed */
	char key[MAX_SERIES][256]; /* name{labels as written} */
	double val[MAX_SERIES];    /* value */
	char err[256];             /* why it was refused */
};

static int name_start(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
}
static int name_char(int c)
{
	return name_start(c) || (c >= '0' && c <= '9');
}

/* Family a sample name belongs to, given the declared TYPE of `fam`. */
static int sample_in_family(const char *sample, const char *fam, const char *type)
{
	size_t fl = strlen(fam);
	if (strcmp(sample, fam) == 0)
		return strcmp(type, "histogram") != 0;
	if (strncmp(sample, fam, fl) != 0)
		return 0;
	const char *suf = sample + fl;
	if (strcmp(type, "summary") == 0)
		return !strcmp(suf, "_sum") || !strcmp(suf, "_count");
	if (strcmp(type, "histogram") == 0)
		return !strcmp(suf, "_sum") || !strcmp(suf, "_count") || !strcmp(suf, "_bucket");
	return 0;
}

static int prom_fail(struct prom *p, int lineno, const char *why, const char *line)
{
	snprintf(p->err, sizeof(p->err), "line %d: %s: %.120s", lineno, why, line);
	return -1;
}

/* Parses a whole exposition; 0 or -1 with p->err. Rules enforced: every line is a HELP, TYPE,
 * other comment or sample; names and label names match their grammars; label values are
 * quoted with only \\ \" \n escapes; values are floats (or +Inf/-Inf/NaN); TYPE comes at most
 * once per family and before its samples; a family's samples are contiguous; no series twice;
 * the text ends with a newline. */
static int prom_parse(const char *text, struct prom *p)
{
	char fam[128] = "", type[16] = "";
	char seen_fams[256][128];
	int nseen = 0, lineno = 0;
	const char *s = text;

	memset(p, 0, sizeof(*p));
	if (*text && text[strlen(text) - 1] != '\n')
		return prom_fail(p, 0, "does not end with a newline", "");
	while (*s) {
		char line[1024];
		const char *e = strchr(s, '\n');
		size_t len = (size_t)(e - s);
		lineno++;
		if (len >= sizeof(line))
			return prom_fail(p, lineno, "line too long", s);
		memcpy(line, s, len);
		line[len] = '\0';
		s = e + 1;
		if (len == 0)
			return prom_fail(p, lineno, "empty line", line);
		if (line[0] == '#') {
			char kw[8], name[128], rest[512];
			if (sscanf(line, "# %7s %127s %511[^\n]", kw, name, rest) >= 2 &&
			    (!strcmp(kw, "HELP") || !strcmp(kw, "TYPE"))) {
				if (!name_start((unsigned char)name[0]))
					return prom_fail(p, lineno, "bad family name", line);
				for (char *c = name; *c; c++)
					if (!name_char((unsigned char)*c))
						return prom_fail(p, lineno, "bad family name",
						                 line);
				if (!strcmp(kw, "TYPE")) {
					if (strcmp(rest, "counter") && strcmp(rest, "gauge") &&
					    strcmp(rest, "summary") && strcmp(rest, "histogram") &&
					    strcmp(rest, "untyped"))
						return prom_fail(p, lineno, "unknown TYPE", line);
					for (int i = 0; i < nseen; i++)
						if (!strcmp(seen_fams[i], name))
							return prom_fail(p, lineno,
							                 "family declared twice",
							                 line);
					if (nseen == 256)
						return prom_fail(p, lineno, "too many families",
						                 line);
					snprintf(seen_fams[nseen++], sizeof(seen_fams[0]), "%s",
					         name);
					snprintf(fam, sizeof(fam), "%s", name);
					snprintf(type, sizeof(type), "%.15s", rest);
				}
			}
			continue; /* other comments are allowed */
		}
		/* sample: name [{labels}] value [timestamp] */
		char name[128], key[256];
		const char *c = line;
		size_t nl = 0, kl;
		if (!name_start((unsigned char)*c))
			return prom_fail(p, lineno, "bad metric name", line);
		while (name_char((unsigned char)*c) && nl + 1 < sizeof(name))
			name[nl++] = *c++;
		name[nl] = '\0';
		if (!fam[0] || !sample_in_family(name, fam, type))
			return prom_fail(p, lineno,
			                 "sample outside its declared family (no TYPE, or "
			                 "families interleaved)",
			                 line);
		kl = (size_t)snprintf(key, sizeof(key), "%s", name);
		if (*c == '{') {
			kl += (size_t)snprintf(key + kl, sizeof(key) - kl, "{");
			c++;
			int first = 1;
			while (*c != '}') {
				char ln[64], lv[128];
				size_t i = 0, j = 0;
				if (!first) {
					if (*c != ',')
						return prom_fail(p, lineno,
						                 "expected , between labels", line);
					c++;
					if (*c == '}')
						break; /* trailing comma is allowed */
				}
				if (!(name_start((unsigned char)*c) && *c != ':'))
					return prom_fail(p, lineno, "bad label name", line);
				while ((name_char((unsigned char)*c) && *c != ':') &&
				       i + 1 < sizeof(ln))
					ln[i++] = *c++;
				ln[i] = '\0';
				if (*c++ != '=' || *c++ != '"')
					return prom_fail(p, lineno, "expected =\" after label name",
					                 line);
				while (*c && *c != '"') {
					if (*c == '\\') {
						c++;
						if (*c != '\\' && *c != '"' && *c != 'n')
							return prom_fail(
							    p, lineno, "bad escape in label value",
							    line);
						lv[j++] = *c == 'n' ? '\n' : *c;
						c++;
					} else {
						lv[j++] = *c++;
					}
					if (j + 1 >= sizeof(lv))
						return prom_fail(p, lineno, "label value too long",
						                 line);
				}
				lv[j] = '\0';
				if (*c++ != '"')
					return prom_fail(p, lineno, "unterminated label value",
					                 line);
				kl += (size_t)snprintf(key + kl, sizeof(key) - kl, "%s%s=\"%s\"",
				                       first ? "" : ",", ln, lv);
				first = 0;
			}
			c++;
			kl += (size_t)snprintf(key + kl, sizeof(key) - kl, "}");
		}
		if (*c++ != ' ')
			return prom_fail(p, lineno, "expected one space before the value", line);
		char *end;
		double v;
		if (!strncmp(c, "+Inf", 4)) {
			v = INFINITY;
			end = (char *)c + 4;
		} else if (!strncmp(c, "-Inf", 4)) {
			v = -INFINITY;
			end = (char *)c + 4;
		} else if (!strncmp(c, "NaN", 3)) {
			v = NAN;
			end = (char *)c + 3;
		} else {
			if (!((*c >= '0' && *c <= '9') || *c == '-' || *c == '+' || *c == '.'))
				return prom_fail(p, lineno, "value is not a number", line);
			v = strtod(c, &end);
			if (end == c)
				return prom_fail(p, lineno, "value is not a number", line);
		}
		if (*end == ' ') { /* optional integer timestamp */
			char *te;
			strtoll(end + 1, &te, 10);
			if (te == end + 1 || *te)
				return prom_fail(p, lineno, "bad timestamp", line);
		} else if (*end) {
			return prom_fail(p, lineno, "junk after the value", line);
		}
		for (int i = 0; i < p->n; i++)
			if (!strcmp(p->key[i], key))
				return prom_fail(p, lineno, "series appears twice", line);
		if (p->n == MAX_SERIES)
			return prom_fail(p, lineno, "too many series", line);
		snprintf(p->key[p->n], sizeof(p->key[0]), "%s", key);
		p->val[p->n++] = v;
	}
	return 0;
}

static double prom_get(const struct prom *p, const char *key)
{
	for (int i = 0; i < p->n; i++)
		if (!strcmp(p->key[i], key))
			return p->val[i];
	fail_msg("series %s not in the exposition", key);
	return NAN;
}

/* ---- tests ---- */

/* An integer of the /status JSON, by path. */
struct json_want {
	const char *path;
	json_int_t value;
};

static void expect_json_ints(json_t *j, const struct json_want *w, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		json_int_t v = uf_test_json_int(j, w[i].path);
		if (v != w[i].value)
			fail_msg("%s: %lld, want %lld", w[i].path, (long long)v,
			         (long long)w[i].value);
	}
}

/* A series of the /metrics text, by name and labels; compared exactly. */
struct prom_want {
	const char *key;
	double value;
};

static void expect_prom(const struct prom *p, const struct prom_want *w, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		double v = prom_get(p, w[i].key);
		if (v != w[i].value)
			fail_msg("%s: %.17g, want %.17g", w[i].key, v, w[i].value);
	}
}

static json_t *get_json(struct fixture *fx)
{
	struct resp r;
	json_error_t je;
	json_t *j;

	http(uf_status_port(fx->srv), "GET", "/status", &r);
	assert_int_equal(r.code, 200);
	assert_non_null(strcasestr(r.headers, "Content-Type: application/json"));
	j = json_loads(r.body, JSON_REJECT_DUPLICATES, &je);
	if (!j)
		fail_msg("/status is not valid JSON: %d:%d %s", je.line, je.column, je.text);
	free(r.body);
	return j;
}

static void test_status_json_carries_the_counters_the_feeds_wrote(void **state)
{
	struct fixture *fx = *state;
	json_t *j = get_json(fx);
	const struct uf_lat_hist *h = &fx->stats[0].latency;

	assert_string_equal(json_string_value(json_object_get(j, "version")), "9.8.7");
	static const struct json_want want[] = {
	    {"pid", 4242},
	    {"reloads", 3},
	    {"feeds/0/packets", 1001},
	    {"feeds/0/messages", 123456789012ll},
	    {"feeds/0/gaps", 7},
	    {"feeds/0/rerequests", 5},
	    {"feeds/0/recovered_messages", 40},
	    {"feeds/0/gaps_unrecovered", 1},
	    {"feeds/0/book_integrity_errors", 4},
	    {"feeds/0/cq_overflows", 6},
	    {"feeds/0/decode_errors/truncated_header", 2},
	    {"feeds/0/decode_errors/unknown_type", 9},
	    {"feeds/0/decode_errors_total", 11},
	    {"feeds/0/lines/0/wins", 550},
	    {"feeds/0/lines/1/wins", 451},
	    {"feeds/0/lines/1/duplicates", 33},
	    {"feeds/0/lines/1/rearms", 8},
	    {"feeds/0/latency_ns/count", 1000},
	    {"feeds/0/latency_ns/max", 1000000},
	    {"feeds/0/ring/sequence", 777},
	    {"feeds/0/ring/nconsumers", 2},
	    {"feeds/0/ring/consumers/0/pid", 100},
	    {"feeds/0/ring/consumers/0/lag", 77},
	    {"feeds/0/ring/consumers/1/lost", 12},
	};
	expect_json_ints(j, want, sizeof(want) / sizeof(want[0]));
	assert_int_equal(json_array_size(json_object_get(j, "feeds")), 2);
	json_t *a = json_array_get(json_object_get(j, "feeds"), 0);
	assert_string_equal(json_string_value(json_object_get(a, "name")), "alpha");
	assert_string_equal(json_string_value(json_object_get(a, "state")), "running");
	assert_string_equal(json_string_value(json_object_get(a, "backend")), "io_uring");
	assert_string_equal(json_string_value(json_object_get(a, "protocol")), "itch50-moldudp64");
	assert_string_equal(json_string_value(json_object_get(
	                        json_array_get(json_object_get(a, "lines"), 1), "name")),
	                    "B");
	assert_int_equal(uf_test_json_int(j, "feeds/0/latency_ns/p50"),
	                 (json_int_t)uf_lat_quantile(h, 0.5));
	assert_int_equal(uf_test_json_int(j, "feeds/0/latency_ns/p99"),
	                 (json_int_t)uf_lat_quantile(h, 0.99));
	assert_int_equal(uf_test_json_int(j, "feeds/0/latency_ns/p99_9"),
	                 (json_int_t)uf_lat_quantile(h, 0.999));
	/* The histogram's 12.5 % resolution: p50 of 1..1000 us lies in [500, 563] us. */
	assert_in_range(uf_test_json_int(j, "feeds/0/latency_ns/p50"), 500000, 563000);
	json_t *b = json_array_get(json_object_get(j, "feeds"), 1);
	assert_string_equal(json_string_value(json_object_get(b, "state")), "failed");
	assert_string_equal(json_string_value(json_object_get(b, "error")),
	                    "bind: \"quoted\" \\ error");
	assert_int_equal(json_array_size(json_object_get(b, "lines")), 1);
	assert_null(json_object_get(b, "ring"));
	json_decref(j);
}

static void test_status_metrics_are_strict_prometheus_text_with_the_same_counters(void **state)
{
	struct fixture *fx = *state;
	struct prom *p = malloc(sizeof(*p));
	struct resp r;

	http(uf_status_port(fx->srv), "GET", "/metrics", &r);
	assert_int_equal(r.code, 200);
	assert_non_null(strcasestr(r.headers, "Content-Type: text/plain; version=0.0.4"));
	if (prom_parse(r.body, p) != 0)
		fail_msg("/metrics refused by the strict parser: %s", p->err);
	assert_true(p->n > 100);
	static const struct prom_want want[] = {
	    {"uringfeed_packets_total{feed=\"alpha\"}", 1001},
	    {"uringfeed_messages_total{feed=\"alpha\"}", 123456789012.0},
	    {"uringfeed_messages_total{feed=\"beta\"}", 3},
	    {"uringfeed_rerequests_total{feed=\"alpha\"}", 5},
	    {"uringfeed_gaps_unrecovered_total{feed=\"alpha\"}", 1},
	    {"uringfeed_decode_errors_total{feed=\"alpha\",kind=\"truncated_header\"}", 2},
	    {"uringfeed_decode_errors_total{feed=\"alpha\",kind=\"unknown_type\"}", 9},
	    {"uringfeed_line_wins_total{feed=\"alpha\",line=\"B\"}", 451},
	    {"uringfeed_line_packets_total{feed=\"beta\",line=\"only\"}", 2},
	    {"uringfeed_feed_up{feed=\"alpha\",backend=\"io_uring\",state=\"running\"}", 1},
	    {"uringfeed_feed_up{feed=\"beta\",backend=\"epoll\",state=\"failed\"}", 0},
	    /* Latency is a histogram in seconds: samples 1, 2, ... 1000 us; bounds are powers
	     * of two nanoseconds, so the cumulative counts are exact (2^19 ns: 1..524 us). */
	    {"uringfeed_wire_to_publish_seconds_count{feed=\"alpha\"}", 1000},
	    {"uringfeed_wire_to_publish_seconds_sum{feed=\"alpha\"}", 0.5005},
	    {"uringfeed_wire_to_publish_seconds_bucket{feed=\"alpha\",le=\"0.000524288\"}", 524},
	    {"uringfeed_wire_to_publish_seconds_bucket{feed=\"alpha\",le=\"+Inf\"}", 1000},
	    {"uringfeed_wire_to_publish_max_seconds{feed=\"alpha\"}", 0.001},
	    {"uringfeed_ring_sequence{feed=\"alpha\",ring=\"alpha_ring\"}", 777},
	    {"uringfeed_consumer_lag_records{feed=\"alpha\",ring=\"alpha_ring\","
	     "consumer=\"tail/0\",pid=\"100\"}",
	     77},
	    /* The consumer's tag had a quote: escaped on the wire, unescaped by the parser. */
	    {"uringfeed_consumer_lag_records{feed=\"alpha\",ring=\"alpha_ring\","
	     "consumer=\"risk\"x/3\",pid=\"101\"}",
	     0},
	    {"uringfeed_config_reloads_total", 3},
	};
	expect_prom(p, want, sizeof(want) / sizeof(want[0]));
	free(r.body);
	free(p);
}

static void test_status_prometheus_parser_refuses_malformed_text(void **state)
{
	static const char *const bad[] = {
	    "# TYPE m counter\nm 1",                     /* no final newline */
	    "m 1\n",                                     /* no TYPE */
	    "# TYPE 1m counter\n1m 1\n",                 /* bad name */
	    "# TYPE m counter\nm{a=\"x} 1\n",            /* unterminated label */
	    "# TYPE m counter\nm{a=x} 1\n",              /* unquoted label */
	    "# TYPE m counter\nm{a=\"\\t\"} 1\n",        /* bad escape */
	    "# TYPE m counter\nm one\n",                 /* bad value */
	    "# TYPE m counter\nm 1\nm 2\n",              /* series twice */
	    "# TYPE m counter\n# TYPE n gauge\nm 1\n",   /* interleaved */
	    "# TYPE m counter\nm 1\n# TYPE m counter\n", /* family twice */
	    "# TYPE m counter\nm 1 x\n",                 /* bad timestamp */
	    "# TYPE m counter\n\nm 1\n",                 /* empty line */
	    "# TYPE m summary\nm_bucket 1\n",            /* suffix of another type */
	};
	struct prom *p = malloc(sizeof(*p));

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (prom_parse(bad[i], p) == 0)
			fail_msg("parser accepted malformed text #%zu: %s", i, bad[i]);
	assert_int_equal(
	    prom_parse("# HELP m h\n# TYPE m counter\nm{a=\"\\\"\",b=\"c\",} 1.5e3 1700000000000\n",
	               p),
	    0);
	assert_true(prom_get(p, "m{a=\"\"\",b=\"c\"}") == 1500.0);
	free(p);
}

static void test_status_bad_requests_get_proper_codes(void **state)
{
	struct fixture *fx = *state;
	uint16_t port = uf_status_port(fx->srv);
	struct resp r;

	expect_http(port, "GET", "/nope", 404, NULL);
	expect_http(port, "GET", "/status/extra", 404, NULL);
	http(port, "POST", "/status", &r);
	assert_int_equal(r.code, 405);
	assert_non_null(strcasestr(r.headers, "Allow: GET, HEAD"));
	free(r.body);
	expect_http(port, "DELETE", "/metrics", 405, NULL);
	expect_http(port, "BREW", "/status", 501, NULL); /* unknown method: 501, not 405 */
	expect_raw(port,
	           "GET /status HTTP/1.1\r\nHost: x\r\nNoColonHere\r\nConnection: close\r\n\r\n",
	           400);
	expect_raw(port, "GET /status FOO/1.0\r\nHost: x\r\n\r\n", 400);
	expect_raw(port, "GET /status HTTP/2.5\r\nHost: x\r\n\r\n", 505);
	/* No HTTP version at all: libmicrohttpd hangs up without an answer; never a 200. */
	http_raw(port, "GARBAGE\r\n\r\n", &r);
	assert_int_not_equal(r.code, 200);
	free(r.body);
	/* HTTP/1.1 requires Host. */
	expect_raw(port, "GET /status HTTP/1.1\r\nConnection: close\r\n\r\n", 400);
	http(port, "HEAD", "/status", &r);
	assert_int_equal(r.code, 200);
	assert_int_equal(r.body_len, 0);
	free(r.body);
	/* A query string does not change the path. */
	expect_http(port, "GET", "/status?pretty=1", 200, NULL);
	http(port, "GET", "/", &r);
	assert_int_equal(r.code, 200);
	assert_non_null(strstr(r.body, "/metrics"));
	free(r.body);
	/* /health: feed beta failed, so 503 naming it and why; HEAD gives the same code. */
	expect_http(port, "GET", "/health", 503, "feed beta: failed: bind: \"quoted\" \\ error\n");
	expect_http(port, "HEAD", "/health", 503, NULL);
	fx->fail = 1;
	expect_http(port, "GET", "/status", 503, NULL);
	fx->fail = 0;
	/* Requests libmicrohttpd refused itself (400, 505) never reach the handler. */
	assert_int_equal(uf_status_requests(fx->srv), 11);
}

/* A "feed thread" keeps adding to a counter while requests read it: every read sees a
 * whole value between what was written before and after, and the final read sees all. */
struct writer {
	struct uf_feed_stats *st; /* counters to bump */
	uint64_t n;               /* increments to make */
};

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	for (uint64_t i = 0; i < w->n; i++)
		uf_stat_add(&w->st->messages, 1);
	return NULL;
}

static void test_status_reads_counters_while_a_feed_thread_writes(void **state)
{
	struct fixture *fx = *state;
	struct writer w = {&fx->stats[1], 20000000};
	json_int_t last = 0, v;
	pthread_t t;

	uf_store_relaxed_u64(&fx->stats[1].messages, 0);
	assert_int_equal(pthread_create(&t, NULL, writer_main, &w), 0);
	for (int i = 0; i < 5; i++) {
		json_t *j = get_json(fx);
		v = uf_test_json_int(j, "feeds/1/messages");
		json_decref(j);
		assert_in_range(v, last, (json_int_t)w.n);
		last = v;
	}
	pthread_join(t, NULL);
	json_t *j = get_json(fx);
	assert_int_equal(uf_test_json_int(j, "feeds/1/messages"), (json_int_t)w.n);
	json_decref(j);
}

static void test_status_health_is_200_when_every_feed_runs(void **state)
{
	struct uf_status_snapshot *snap = calloc(1, sizeof(*snap));

	snap->nfeeds = 2;
	snprintf(snap->feeds[0].name, sizeof(snap->feeds[0].name), "a");
	snprintf(snap->feeds[1].name, sizeof(snap->feeds[1].name), "b");
	snap->feeds[0].state = snap->feeds[1].state = UF_STATUS_RUNNING;
	uf_test_expect_health(snap, 200, "ok: 2 feeds running\n");
	snap->feeds[1].state = UF_STATUS_STOPPING;
	uf_test_expect_health(snap, 503, "feed b: stopping\n");
	free(snap);
}

static void test_status_port_in_use_is_reported_with_the_address(void **state)
{
	struct fixture *fx = *state;
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(uf_status_port(fx->srv))};
	struct uf_status_server *second = NULL;
	char err[256], want[64];

	inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	assert_int_equal(uf_status_start(&a, fill, fx, &second, err, sizeof(err)), -EADDRINUSE);
	assert_null(second);
	snprintf(want, sizeof(want), "cannot listen on 127.0.0.1:%u", uf_status_port(fx->srv));
	assert_non_null(strstr(err, want));
}

static void test_status_ready_says_why_and_turns_200(void **state)
{
	struct fixture *fx = *state;

	expect_http(uf_status_port(fx->srv), "GET", "/ready", 503,
	            "feed beta: failed: bind: \"quoted\" \\ error\n");
	fx->all_running = 1;
	/* beta runs but has no packet yet */
	expect_http(uf_status_port(fx->srv), "GET", "/ready", 503,
	            "feed beta: no data received yet\n");
	uf_stat_add(&fx->stats[1].packets, 2);
	expect_http(uf_status_port(fx->srv), "GET", "/ready", 200, "ready: 2 feeds\n");
	/* /health is liveness only: it never looked at the data. */
	expect_http(uf_status_port(fx->srv), "GET", "/health", 200, NULL);
}

static uint64_t mono_ms(void)
{
	return uf_now_mono_ns() / 1000000;
}

#define SLOW_CLIENTS 64

/* 64 clients connect and trickle header bytes, never finishing a request. They may hold at
 * most MAIN_PER_IP_LIMIT slots of the main port, so another address still gets /health at
 * once, and the probe port, with its own thread and budget, answers whatever happens on the
 * main one. Before the limits, 32 such clients took /health away. */
static void test_status_slow_clients_do_not_take_health_away(void **state)
{
	struct fixture *fx = *state;
	struct sockaddr_in pa = {.sin_family = AF_INET, .sin_port = 0};
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(uf_status_port(fx->srv))};
	int fds[SLOW_CLIENTS];
	char err[256];
	struct resp r;

	fx->all_running = 1;
	inet_pton(AF_INET, "127.0.0.1", &pa.sin_addr);
	inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	if (uf_status_start_probe(fx->srv, &pa, err, sizeof(err)) != 0)
		fail_msg("probe endpoint did not start: %s", err);
	uint16_t probe = uf_status_probe_port(fx->srv);
	assert_true(probe != 0 && probe != uf_status_port(fx->srv));

	for (int i = 0; i < SLOW_CLIENTS; i++) {
		fds[i] = socket(AF_INET, SOCK_STREAM, 0);
		assert_true(fds[i] >= 0);
		assert_int_equal(connect(fds[i], (struct sockaddr *)&a, sizeof(a)), 0);
		const char *start = "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ";
		send(fds[i], start, strlen(start), MSG_NOSIGNAL);
	}
	for (int round = 0; round < 3; round++) /* trickle: one more byte each */
		for (int i = 0; i < SLOW_CLIENTS; i++)
			send(fds[i], "x", 1, MSG_NOSIGNAL);

	/* The slow address is at its limit: its next connection is closed unanswered. */
	expect_http(uf_status_port(fx->srv), "GET", "/health", -1, NULL);

	/* Another address on the main port, and the probe port: answered while the slow
	 * clients still hold their slots (not once the server timed them out, after
	 * MAIN_CONN_TIMEOUT_S: that is how they took /health away). */
	uint64_t t0 = mono_ms();
	http_src = "127.0.0.2";
	http(uf_status_port(fx->srv), "GET", "/health", &r);
	http_src = NULL;
	assert_int_equal(r.code, 200);
	free(r.body);
	expect_http(probe, "GET", "/health", 200, "ok: 2 feeds running\n");
	expect_http(probe, "GET", "/ready", 503, "feed beta: no data received yet\n");
	uint64_t took = mono_ms() - t0;
	int held = 0; /* slow connections the server still keeps open, unanswered */
	for (int i = 0; i < SLOW_CLIENTS; i++) {
		char c;
		ssize_t got = recv(fds[i], &c, 1, MSG_DONTWAIT | MSG_PEEK);
		held += got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
	}
	print_message("health under %d slow clients: %llu ms for 3 requests, %d of them held\n",
	              SLOW_CLIENTS, (unsigned long long)took, held);
	assert_true(held >= 1);
	/* The probe port serves only the probes. */
	expect_http(probe, "GET", "/metrics", 404, NULL);
	for (int i = 0; i < SLOW_CLIENTS; i++)
		close(fds[i]);
}

#define FLOOD_ADDRS   30
#define FLOOD_CLIENTS 300

/* Opens `n` slow clients to `port` from FLOOD_ADDRS loopback addresses (127.0.0.10 ...), each
 * starting a request it never finishes. Returns how many connected. */
static int flood(uint16_t port, int *fds, int n)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
	const char *start = "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ";
	int ok = 0;

	inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	for (int i = 0; i < n; i++) {
		struct sockaddr_in src = {.sin_family = AF_INET};
		char ip[32];
		snprintf(ip, sizeof(ip), "127.0.0.%d", 10 + i % FLOOD_ADDRS);
		inet_pton(AF_INET, ip, &src.sin_addr);
		fds[i] = socket(AF_INET, SOCK_STREAM, 0);
		assert_true(fds[i] >= 0);
		assert_int_equal(bind(fds[i], (struct sockaddr *)&src, sizeof(src)), 0);
		if (connect(fds[i], (struct sockaddr *)&a, sizeof(a)) == 0 &&
		    send(fds[i], start, strlen(start), MSG_NOSIGNAL) > 0)
			ok++;
	}
	return ok;
}

/* Keeps the flood's connections alive past the endpoints' inactivity timeouts: a byte to
 * each every 200 ms until told to stop (at most 20 s). */
struct trickle {
	int *fds[2];
	int n;
	volatile int stop;
};

static void *trickle_main(void *arg)
{
	struct trickle *t = arg;
	for (int round = 0; round < 100 && !t->stop; round++) {
		for (int k = 0; k < 2; k++)
			for (int i = 0; i < t->n; i++)
				send(t->fds[k][i], "x", 1, MSG_NOSIGNAL | MSG_DONTWAIT);
		usleep(200000);
	}
	return NULL;
}

/* issue 23 item 15: 300 slow clients from 30 loopback addresses (the per-address caps do not
 * help: a local user has all of 127.0.0.0/8) took /health away on the main port and on the
 * probe port. Past its limit, each endpoint closes its oldest connection for a new one, so a
 * prober from yet another address is answered on both, and the evictions are counted. */
static void test_status_a_flood_from_many_addresses_leaves_room_for_the_prober(void **state)
{
	struct fixture *fx = *state;
	struct sockaddr_in pa = {.sin_family = AF_INET, .sin_port = 0};
	static int fmain[FLOOD_CLIENTS], fprobe[FLOOD_CLIENTS];
	struct rlimit rl;
	char err[256];

	/* 600 client sockets and as many accepted ones live in this one process */
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &rl), 0);
	if (rl.rlim_cur < 4096 && rl.rlim_max >= 4096) {
		rl.rlim_cur = 4096;
		assert_int_equal(setrlimit(RLIMIT_NOFILE, &rl), 0);
	}
	fx->all_running = 1;
	inet_pton(AF_INET, "127.0.0.1", &pa.sin_addr);
	if (uf_status_start_probe(fx->srv, &pa, err, sizeof(err)) != 0)
		fail_msg("probe endpoint did not start: %s", err);
	uint16_t probe = uf_status_probe_port(fx->srv);
	int nm = flood(uf_status_port(fx->srv), fmain, FLOOD_CLIENTS);
	int np = flood(probe, fprobe, FLOOD_CLIENTS);
	print_message("flood: %d clients on the main port, %d on the probe port\n", nm, np);
	assert_true(nm >= 200 && np >= 200); /* beyond both endpoints' limits */
	/* They trickle on while the prober asks: no slot ever frees by timeout (before the
	 * guard, the prober waited in the listen queue until http_raw's 5 s ran out). */
	struct trickle tr = {.fds = {fmain, fprobe}, .n = FLOOD_CLIENTS};
	pthread_t tt;
	assert_int_equal(pthread_create(&tt, NULL, trickle_main, &tr), 0);
	usleep(300000);         /* a round of trickling first: the flood is alive, not timed out */
	http_src = "127.0.0.2"; /* an address the flood does not use */
	expect_http(probe, "GET", "/health", 200, "ok: 2 feeds running\n");
	expect_http(uf_status_port(fx->srv), "GET", "/health", 200, "ok: 2 feeds running\n");
	http_src = "127.0.0.3";
	expect_http(probe, "GET", "/ready", 503, "feed beta: no data received yet\n");
	http_src = NULL;
	tr.stop = 1;
	pthread_join(tt, NULL);
	uint64_t ev = uf_status_evicted(fx->srv);
	print_message("connections evicted: %llu\n", (unsigned long long)ev);
	assert_true(ev > 0);
	for (int i = 0; i < FLOOD_CLIENTS; i++) {
		close(fmain[i]);
		close(fprobe[i]);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_status_json_carries_the_counters_the_feeds_wrote,
	                                    setup, teardown),
	    cmocka_unit_test_setup_teardown(
	        test_status_metrics_are_strict_prometheus_text_with_the_same_counters, setup,
	        teardown),
	    cmocka_unit_test(test_status_prometheus_parser_refuses_malformed_text),
	    cmocka_unit_test_setup_teardown(test_status_bad_requests_get_proper_codes, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_status_reads_counters_while_a_feed_thread_writes,
	                                    setup, teardown),
	    cmocka_unit_test(test_status_health_is_200_when_every_feed_runs),
	    cmocka_unit_test_setup_teardown(test_status_ready_says_why_and_turns_200, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_status_slow_clients_do_not_take_health_away, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(
	        test_status_a_flood_from_many_addresses_leaves_room_for_the_prober, setup,
	        teardown),
	    cmocka_unit_test_setup_teardown(test_status_port_in_use_is_reported_with_the_address,
	                                    setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
