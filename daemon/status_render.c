/* Status renderers: a snapshot in, text out (see status_render.h). No I/O, no clock, no
 * globals: what they print depends on the snapshot alone. */
#include "daemon/status_render.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DECODE_PREFIX "decode_"

static const char *const state_names[] = {"starting", "running", "stopping", "stopped", "failed"};

const char *uf_status_state_name(enum uf_status_state st)
{
	if ((unsigned)st >= sizeof(state_names) / sizeof(state_names[0]))
		return "unknown";
	return state_names[st];
}

/* ---- counters by name, from the X-macro lists of uf_feed_stats.h ---- */

struct counter_def {
	const char *name; /* field name (also the JSON key) */
	const char *help; /* one-line help (Prometheus HELP) */
	size_t off;       /* offset in its struct */
};

#define UF_DEF_FEED(f, h) {#f, h, offsetof(struct uf_feed_stats, f)},
#define UF_DEF_LINE(f, h) {#f, h, offsetof(struct uf_feed_line_stats, f)},
static const struct counter_def feed_counters[] = {UF_FEED_COUNTERS(UF_DEF_FEED)};
static const struct counter_def line_counters[] = {UF_FEED_LINE_COUNTERS(UF_DEF_LINE)};
#undef UF_DEF_FEED
#undef UF_DEF_LINE
#define NFEEDC (sizeof(feed_counters) / sizeof(feed_counters[0]))
#define NLINEC (sizeof(line_counters) / sizeof(line_counters[0]))

static uint64_t counter_at(const void *base, const struct counter_def *d)
{
	uint64_t v;
	memcpy(&v, (const char *)base + d->off, sizeof(v));
	return v;
}

static int is_decode_error(const struct counter_def *d)
{
	return strncmp(d->name, DECODE_PREFIX, strlen(DECODE_PREFIX)) == 0;
}

static int feed_nlines(const struct uf_status_feed *f)
{
	uint64_t n = f->stats.nlines;
	return n > UF_CFG_MAX_LINES ? UF_CFG_MAX_LINES : (int)n;
}

/* ---- JSON ---- */

static json_t *latency_json(const struct uf_lat_hist *h)
{
	return json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:I}", "count", (json_int_t)h->count, "mean",
	                 (json_int_t)(h->count ? h->sum_ns / h->count : 0), "p50",
	                 (json_int_t)uf_lat_quantile(h, 0.5), "p99",
	                 (json_int_t)uf_lat_quantile(h, 0.99), "p99_9",
	                 (json_int_t)uf_lat_quantile(h, 0.999), "max", (json_int_t)h->max_ns,
	                 "negative", (json_int_t)h->negative);
}

static json_t *ring_json(const struct uf_status_ring *r, uint64_t now_ns)
{
	json_t *o = json_object(), *cons = json_array();
	int n = r->nconsumers < UF_STATUS_MAX_CONSUMERS ? r->nconsumers : UF_STATUS_MAX_CONSUMERS;

	json_object_set_new(o, "name", json_string(r->name));
	json_object_set_new(o, "capacity", json_integer((json_int_t)r->capacity));
	json_object_set_new(o, "sequence", json_integer((json_int_t)r->sequence));
	json_object_set_new(o, "generation", json_integer((json_int_t)r->generation));
	json_object_set_new(o, "state", json_string(r->closed ? "closed" : "open"));
	json_object_set_new(o, "nconsumers", json_integer(r->nconsumers));
	for (int i = 0; i < n; i++) {
		const struct uf_status_consumer *c = &r->consumers[i];
		json_t *jc =
		    json_pack("{s:i,s:i,s:I,s:I,s:I,s:I,s:b,s:s}", "slot", (int)c->slot, "pid",
		              (int)c->pid, "position", (json_int_t)c->position, "lag",
		              (json_int_t)c->lag, "lost", (json_int_t)c->lost, "laps",
		              (json_int_t)c->laps, "sleeping", c->sleeping, "tag", c->tag);
		if (jc && c->last_seen_ns && now_ns >= c->last_seen_ns)
			json_object_set_new(
			    jc, "idle_ms",
			    json_integer((json_int_t)((now_ns - c->last_seen_ns) / 1000000)));
		if (jc)
			json_array_append_new(cons, jc);
	}
	json_object_set_new(o, "consumers", cons);
	return o;
}

static json_t *feed_json(const struct uf_status_feed *f, uint64_t now_ns)
{
	json_t *o = json_object(), *dec = json_object(), *lines = json_array();
	uint64_t dec_total = 0;

	json_object_set_new(o, "name", json_string(f->name));
	json_object_set_new(o, "backend", json_string(f->backend));
	json_object_set_new(o, "state", json_string(uf_status_state_name(f->state)));
	if (f->error[0])
		json_object_set_new(o, "error", json_string(f->error));
	for (size_t i = 0; i < NFEEDC; i++) {
		const struct counter_def *d = &feed_counters[i];
		uint64_t v = counter_at(&f->stats, d);
		if (is_decode_error(d)) {
			json_object_set_new(dec, d->name + strlen(DECODE_PREFIX),
			                    json_integer((json_int_t)v));
			dec_total += v;
		} else {
			json_object_set_new(o, d->name, json_integer((json_int_t)v));
		}
	}
	json_object_set_new(o, "decode_errors", dec);
	json_object_set_new(o, "decode_errors_total", json_integer((json_int_t)dec_total));
	for (int l = 0; l < feed_nlines(f); l++) {
		json_t *jl = json_object();
		json_object_set_new(jl, "name", json_string(f->stats.line_names[l]));
		for (size_t i = 0; i < NLINEC; i++)
			json_object_set_new(jl, line_counters[i].name,
			                    json_integer((json_int_t)counter_at(
			                        &f->stats.lines[l], &line_counters[i])));
		json_array_append_new(lines, jl);
	}
	json_object_set_new(o, "lines", lines);
	json_object_set_new(o, "latency_ns", latency_json(&f->stats.latency));
	if (f->ring.present)
		json_object_set_new(o, "ring", ring_json(&f->ring, now_ns));
	return o;
}

char *uf_status_render_json(const struct uf_status_snapshot *snap)
{
	json_t *root = json_object(), *feeds = json_array();
	char *out;

	json_object_set_new(root, "version", json_string(snap->version));
	json_object_set_new(root, "pid", json_integer(snap->pid));
	json_object_set_new(root, "config", json_string(snap->config));
	json_object_set_new(root, "time_ns", json_integer((json_int_t)snap->now_ns));
	json_object_set_new(root, "uptime_s",
	                    json_real(snap->now_ns > snap->start_ns
	                                  ? (double)(snap->now_ns - snap->start_ns) / 1e9
	                                  : 0.0));
	json_object_set_new(root, "reloads", json_integer((json_int_t)snap->reloads));
	for (int i = 0; i < snap->nfeeds && i < UF_CFG_MAX_FEEDS; i++)
		json_array_append_new(feeds, feed_json(&snap->feeds[i], snap->now_ns));
	json_object_set_new(root, "feeds", feeds);
	out = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(root);
	return out;
}

/* ---- Prometheus text format 0.0.4 ---- */

/* Growing text buffer; on allocation failure it latches `failed` and drops later output. */
struct tbuf {
	char *p;    /* text */
	size_t len; /* bytes used */
	size_t cap; /* bytes allocated */
	int failed; /* an allocation failed */
};

__attribute__((format(printf, 2, 3))) static void tb_printf(struct tbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (b->failed)
		return;
	for (;;) {
		size_t room = b->cap - b->len;
		va_start(ap, fmt);
		n = vsnprintf(b->p ? b->p + b->len : NULL, b->p ? room : 0, fmt, ap);
		va_end(ap);
		if (n < 0) {
			b->failed = 1;
			return;
		}
		if (b->p && (size_t)n < room) {
			b->len += (size_t)n;
			return;
		}
		size_t cap = b->cap ? b->cap * 2 : 16384;
		while (cap < b->len + (size_t)n + 1)
			cap *= 2;
		char *q = realloc(b->p, cap);
		if (!q) {
			b->failed = 1;
			return;
		}
		b->p = q;
		b->cap = cap;
	}
}

/* Label values escape backslash, double quote and newline (exposition format rules). */
static const char *esc(const char *s, char *buf, size_t len)
{
	size_t o = 0;
	for (; *s && o + 3 < len; s++) {
		if (*s == '\\' || *s == '"') {
			buf[o++] = '\\';
			buf[o++] = *s;
		} else if (*s == '\n') {
			buf[o++] = '\\';
			buf[o++] = 'n';
		} else {
			buf[o++] = *s;
		}
	}
	buf[o] = '\0';
	return buf;
}

static void family(struct tbuf *b, const char *name, const char *type, const char *help)
{
	/* HELP text escapes only backslash and newline; ours have neither, but stay safe. */
	char h[256];
	size_t o = 0;
	for (const char *s = help; *s && o + 3 < sizeof(h); s++) {
		if (*s == '\\' || *s == '\n') {
			h[o++] = '\\';
			h[o++] = *s == '\n' ? 'n' : '\\';
		} else {
			h[o++] = *s;
		}
	}
	h[o] = '\0';
	tb_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, h, name, type);
}

char *uf_status_render_prometheus(const struct uf_status_snapshot *snap)
{
	struct tbuf b = {0};
	char fe[128], le[128], re[128], tg[64];
	int nf = snap->nfeeds < UF_CFG_MAX_FEEDS ? snap->nfeeds : UF_CFG_MAX_FEEDS;

	family(&b, "uringfeed_build_info", "gauge", "uringfeed version (value is always 1)");
	tb_printf(&b, "uringfeed_build_info{version=\"%s\"} 1\n",
	          esc(snap->version, fe, sizeof(fe)));
	family(&b, "uringfeed_start_time_seconds", "gauge",
	       "daemon start time, seconds since the epoch");
	tb_printf(&b, "uringfeed_start_time_seconds %.3f\n", (double)snap->start_ns / 1e9);
	family(&b, "uringfeed_config_reloads_total", "counter", "SIGHUP reloads applied");
	tb_printf(&b, "uringfeed_config_reloads_total %" PRIu64 "\n", snap->reloads);

	family(&b, "uringfeed_feed_up", "gauge", "1 while the feed loop runs, 0 otherwise");
	for (int i = 0; i < nf; i++) {
		const struct uf_status_feed *f = &snap->feeds[i];
		tb_printf(&b, "uringfeed_feed_up{feed=\"%s\",backend=\"%s\",state=\"%s\"} %d\n",
		          esc(f->name, fe, sizeof(fe)), esc(f->backend, le, sizeof(le)),
		          uf_status_state_name(f->state), f->state == UF_STATUS_RUNNING);
	}

	/* Feed-wide counters, one family each; decode_* become one family with a kind label. */
	for (size_t c = 0; c < NFEEDC; c++) {
		const struct counter_def *d = &feed_counters[c];
		char name[96];
		if (is_decode_error(d))
			continue;
		snprintf(name, sizeof(name), "uringfeed_%s_total", d->name);
		family(&b, name, "counter", d->help);
		for (int i = 0; i < nf; i++)
			tb_printf(&b, "%s{feed=\"%s\"} %" PRIu64 "\n", name,
			          esc(snap->feeds[i].name, fe, sizeof(fe)),
			          counter_at(&snap->feeds[i].stats, d));
	}
	family(&b, "uringfeed_decode_errors_total", "counter",
	       "malformed MoldUDP64 packets and ITCH messages, by kind");
	for (int i = 0; i < nf; i++)
		for (size_t c = 0; c < NFEEDC; c++)
			if (is_decode_error(&feed_counters[c]))
				tb_printf(&b,
				          "uringfeed_decode_errors_total{feed=\"%s\",kind=\"%s\"} "
				          "%" PRIu64 "\n",
				          esc(snap->feeds[i].name, fe, sizeof(fe)),
				          feed_counters[c].name + strlen(DECODE_PREFIX),
				          counter_at(&snap->feeds[i].stats, &feed_counters[c]));

	for (size_t c = 0; c < NLINEC; c++) {
		const struct counter_def *d = &line_counters[c];
		char name[96];
		snprintf(name, sizeof(name), "uringfeed_line_%s_total", d->name);
		family(&b, name, "counter", d->help);
		for (int i = 0; i < nf; i++)
			for (int l = 0; l < feed_nlines(&snap->feeds[i]); l++)
				tb_printf(&b, "%s{feed=\"%s\",line=\"%s\"} %" PRIu64 "\n", name,
				          esc(snap->feeds[i].name, fe, sizeof(fe)),
				          esc(snap->feeds[i].stats.line_names[l], le, sizeof(le)),
				          counter_at(&snap->feeds[i].stats.lines[l], d));
	}

	family(&b, "uringfeed_wire_to_publish_ns", "summary",
	       "kernel receive timestamp to records in the ring, nanoseconds");
	for (int i = 0; i < nf; i++) {
		const struct uf_lat_hist *h = &snap->feeds[i].stats.latency;
		static const double qs[] = {0.5, 0.99, 0.999};
		esc(snap->feeds[i].name, fe, sizeof(fe));
		for (size_t q = 0; q < sizeof(qs) / sizeof(qs[0]); q++)
			tb_printf(
			    &b,
			    "uringfeed_wire_to_publish_ns{feed=\"%s\",quantile=\"%g\"} %" PRIu64
			    "\n",
			    fe, qs[q], uf_lat_quantile(h, qs[q]));
		tb_printf(&b, "uringfeed_wire_to_publish_ns_sum{feed=\"%s\"} %" PRIu64 "\n", fe,
		          h->sum_ns);
		tb_printf(&b, "uringfeed_wire_to_publish_ns_count{feed=\"%s\"} %" PRIu64 "\n", fe,
		          h->count);
	}
	family(&b, "uringfeed_wire_to_publish_max_ns", "gauge",
	       "largest wire-to-publish latency since start, nanoseconds");
	for (int i = 0; i < nf; i++)
		tb_printf(&b, "uringfeed_wire_to_publish_max_ns{feed=\"%s\"} %" PRIu64 "\n",
		          esc(snap->feeds[i].name, fe, sizeof(fe)),
		          snap->feeds[i].stats.latency.max_ns);

	/* Rings: gauges (the sequence restarts with a new generation). */
	static const struct {
		const char *name, *help;
	} ringm[] = {
	    {"uringfeed_ring_sequence", "records published to the ring so far (next sequence)"},
	    {"uringfeed_ring_capacity", "ring capacity in records"},
	    {"uringfeed_ring_closed", "1 once the ring is marked closed for consumers"},
	    {"uringfeed_ring_consumers", "consumers registered on the ring"},
	};
	for (size_t m = 0; m < sizeof(ringm) / sizeof(ringm[0]); m++) {
		family(&b, ringm[m].name, "gauge", ringm[m].help);
		for (int i = 0; i < nf; i++) {
			const struct uf_status_ring *r = &snap->feeds[i].ring;
			uint64_t v = m == 0   ? r->sequence
			             : m == 1 ? r->capacity
			             : m == 2 ? (uint64_t)r->closed
			                      : (uint64_t)r->nconsumers;
			if (!r->present)
				continue;
			tb_printf(&b, "%s{feed=\"%s\",ring=\"%s\"} %" PRIu64 "\n", ringm[m].name,
			          esc(snap->feeds[i].name, fe, sizeof(fe)),
			          esc(r->name, re, sizeof(re)), v);
		}
	}
	family(&b, "uringfeed_consumer_lag", "gauge",
	       "records published that the consumer has not read");
	for (int i = 0; i < nf; i++) {
		const struct uf_status_ring *r = &snap->feeds[i].ring;
		int n = r->nconsumers < UF_STATUS_MAX_CONSUMERS ? r->nconsumers
		                                                : UF_STATUS_MAX_CONSUMERS;
		for (int c = 0; r->present && c < n; c++)
			tb_printf(&b,
			          "uringfeed_consumer_lag{feed=\"%s\",ring=\"%s\",slot=\"%u\",pid="
			          "\"%d\",tag=\"%s\"} %" PRIu64 "\n",
			          esc(snap->feeds[i].name, fe, sizeof(fe)),
			          esc(r->name, re, sizeof(re)), r->consumers[c].slot,
			          (int)r->consumers[c].pid,
			          esc(r->consumers[c].tag, tg, sizeof(tg)), r->consumers[c].lag);
	}
	if (b.failed) {
		free(b.p);
		return NULL;
	}
	if (!b.p)
		return strdup("");
	return b.p;
}

char *uf_status_render_health(const struct uf_status_snapshot *snap, unsigned *code)
{
	struct tbuf b = {0};
	int bad = 0;

	for (int i = 0; i < snap->nfeeds && i < UF_CFG_MAX_FEEDS; i++) {
		const struct uf_status_feed *f = &snap->feeds[i];
		if (f->state == UF_STATUS_RUNNING)
			continue;
		bad++;
		tb_printf(&b, "feed %s: %s%s%s\n", f->name, uf_status_state_name(f->state),
		          f->error[0] ? ": " : "", f->error);
	}
	if (!bad)
		tb_printf(&b, "ok: %d feed%s running\n", snap->nfeeds,
		          snap->nfeeds == 1 ? "" : "s");
	*code = bad ? 503 : 200;
	if (b.failed) {
		free(b.p);
		return NULL;
	}
	return b.p;
}
