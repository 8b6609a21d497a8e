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

#include "decode/uf_soup.h"
#include "feed/snapshot.h"

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

/* Stats that are not plain event counts: rendered by hand in base units and with the right
 * type (nanosecond sums as seconds, gauges as gauges), not as uringfeed_<name>_total. */
static int is_not_a_count(const struct counter_def *d)
{
	static const char *const names[] = {"snapshot_duration_ns",
	                                    "snapshot_last_duration_ns",
	                                    "snapshot_in_progress",
	                                    "snapshot_pending",
	                                    "capture_dropped_writer_behind",
	                                    "capture_dropped_disk_full",
	                                    "capture_dropped_no_dir",
	                                    "capture_dropped_read_only",
	                                    "capture_dropped_io_error",
	                                    "capture_lag_ns",
	                                    "capture_queued_bytes",
	                                    "busy_ns",
	                                    "idle_pause"};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(d->name, names[i]))
			return 1;
	return 0;
}

/* Capture drops by reason (the label values of uringfeed_capture_dropped_total). */
static const struct {
	const char *reason;
	size_t off;
} capture_drops[] = {
    {"writer_behind", offsetof(struct uf_feed_stats, capture_dropped_writer_behind)},
    {"disk_full", offsetof(struct uf_feed_stats, capture_dropped_disk_full)},
    {"no_dir", offsetof(struct uf_feed_stats, capture_dropped_no_dir)},
    {"read_only", offsetof(struct uf_feed_stats, capture_dropped_read_only)},
    {"io_error", offsetof(struct uf_feed_stats, capture_dropped_io_error)},
};
#define NCAPDROP (sizeof(capture_drops) / sizeof(capture_drops[0]))

static uint64_t capture_drop(const struct uf_status_feed *f, size_t k)
{
	uint64_t v;
	memcpy(&v, (const char *)&f->stats + capture_drops[k].off, sizeof(v));
	return v;
}

static uint64_t capture_drops_total(const struct uf_status_feed *f)
{
	uint64_t t = 0;
	for (size_t k = 0; k < NCAPDROP; k++)
		t += capture_drop(f, k);
	return t;
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
	if (r->journal_on) {
		const struct uf_journal_stats *j = &r->journal;
		json_t *jj = json_pack(
		    "{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:b,s:s}", "position",
		    (json_int_t)j->position, "written_seq", (json_int_t)j->written_seq, "lag",
		    (json_int_t)j->lag, "records", (json_int_t)j->records, "bytes",
		    (json_int_t)j->bytes, "files", (json_int_t)j->files, "holes",
		    (json_int_t)j->holes, "hole_records", (json_int_t)j->hole_records, "laps",
		    (json_int_t)j->laps, "write_errors", (json_int_t)j->write_errors, "dropped",
		    (json_int_t)j->dropped, "fsyncs", (json_int_t)j->fsyncs, "torn_cut",
		    (json_int_t)j->torn_cut, "deleted_files", (json_int_t)j->deleted_files,
		    "failing", j->failing != 0, "last_error",
		    j->last_error ? strerror(j->last_error) : "");
		if (jj)
			json_object_set_new(o, "journal", jj);
	}
	return o;
}

static const char *session_label(const struct uf_status_feed *f, char *buf, size_t len);

/* Why the snapshot path last failed, by name (issue 23 item 3): the failed attempt's reason,
 * the last lost connection (its errno, the refused packet's kind and type letter), and the
 * last End of Snapshot refused against what the lines had shown. Nulls for what never was. */
static json_t *snapshot_json(const struct uf_feed_stats *st)
{
	json_t *o = json_object(), *d = json_object();
	uint64_t v = st->snapshot_last_disconnect;
	unsigned refusal = UF_SNAP_DISC_REFUSAL(v), packet = UF_SNAP_DISC_PACKET(v);
	int err = UF_SNAP_DISC_ERRNO(v);
	char pk[2] = {(char)packet, 0};

	json_object_set_new(o, "last_failure",
	                    st->snapshot_last_failure
	                        ? json_string(uf_snap_why_name((unsigned)st->snapshot_last_failure))
	                        : json_null());
	json_object_set_new(d, "errno", err ? json_integer(err) : json_null());
	json_object_set_new(d, "refused",
	                    refusal && refusal <= UF_SOUP_NERR
	                        ? json_string(uf_soup_err_name(refusal - 1))
	                        : json_null());
	json_object_set_new(d, "packet",
	                    packet > ' ' && packet < 0x7f ? json_string(pk) : json_null());
	json_object_set_new(o, "last_disconnect", d);
	json_object_set_new(o, "last_claim",
	                    st->snapshot_last_claim
	                        ? json_integer((json_int_t)st->snapshot_last_claim)
	                        : json_null());
	json_object_set_new(o, "last_shown", json_integer((json_int_t)st->snapshot_last_shown));
	return o;
}

static json_t *feed_json(const struct uf_status_feed *f, uint64_t now_ns)
{
	json_t *o = json_object(), *dec = json_object(), *lines = json_array();
	uint64_t dec_total = 0;

	json_object_set_new(o, "name", json_string(f->name));
	json_object_set_new(o, "backend", json_string(f->backend));
	json_object_set_new(o, "protocol", json_string(f->protocol));
	json_object_set_new(o, "book_memory",
	                    f->book_memory[0] ? json_string(f->book_memory) : json_null());
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
	json_object_set_new(o, "capture_dropped_total",
	                    json_integer((json_int_t)capture_drops_total(f)));
	json_object_set_new(o, "decode_errors", dec);
	json_object_set_new(o, "decode_errors_total", json_integer((json_int_t)dec_total));
	for (int l = 0; l < feed_nlines(f); l++) {
		json_t *jl = json_object();
		json_object_set_new(jl, "name", json_string(f->stats.line_names[l]));
		for (size_t i = 0; i < NLINEC; i++)
			json_object_set_new(jl, line_counters[i].name,
			                    json_integer((json_int_t)counter_at(
			                        &f->stats.lines[l], &line_counters[i])));
		uint64_t t = f->stats.line_last_rx_ns[l];
		json_object_set_new(jl, "last_packet_age_s",
		                    t ? json_real(now_ns > t ? (double)(now_ns - t) / 1e9 : 0.0)
		                      : json_null());
		json_array_append_new(lines, jl);
	}
	json_object_set_new(o, "lines", lines);
	json_object_set_new(o, "latency_ns", latency_json(&f->stats.latency));
	json_t *stages = json_object();
	for (unsigned st = 0; st < UF_STAGE_COUNT; st++)
		json_object_set_new(stages, uf_stage_name(st), latency_json(&f->stats.stages[st]));
	json_object_set_new(o, "stages_ns", stages);
	char sess[32];
	json_object_set_new(o, "session", json_string(session_label(f, sess, sizeof(sess))));
	json_object_set_new(o, "session_ended", json_boolean(f->stats.session_ended));
	json_object_set_new(o, "recovering", json_boolean(f->stats.recovering));
	json_object_set_new(o, "books_stale", json_integer((json_int_t)f->stats.books_stale));
	json_object_set_new(o, "snapshot", snapshot_json(&f->stats));
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
	for (int i = 0; i < snap->nfeeds && i < UF_CFG_MAX_FEEDS; i++) {
		char why[1024] = "";
		json_t *jf = feed_json(&snap->feeds[i], snap->now_ns);
		json_t *reasons = json_array();
		int n = uf_status_feed_not_ready(snap, i, why, sizeof(why));
		for (char *line = why, *nl; *line && (nl = strchr(line, '\n')); line = nl + 1) {
			*nl = '\0';
			json_array_append_new(reasons, json_string(line));
		}
		json_object_set_new(jf, "ready", json_boolean(n == 0));
		json_object_set_new(jf, "not_ready", reasons);
		json_array_append_new(feeds, jf);
	}
	json_object_set_new(root, "feeds", feeds);
	if (snap->process.present)
		json_object_set_new(
		    root, "process",
		    json_pack("{s:f,s:I,s:I,s:I,s:I}", "cpu_seconds", snap->process.cpu_seconds,
		              "resident_bytes", (json_int_t)snap->process.resident_bytes,
		              "virtual_bytes", (json_int_t)snap->process.virtual_bytes, "open_fds",
		              (json_int_t)snap->process.open_fds, "max_fds",
		              (json_int_t)snap->process.max_fds));
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

/* Histogram bucket bounds of /metrics: powers of two nanoseconds, 64 ns .. 8.6 s. They are
 * edges of the feed's log-linear buckets (uf_feed_stats.h), so each cumulative count is exact:
 * the samples below 2^e ns. */
#define PROM_LE_MIN_EXP 6
#define PROM_LE_MAX_EXP 33

/* One Prometheus histogram (in seconds) from a histogram copy; `labels` is the label list
 * without braces, e.g. feed="x",stage="decode". _count is the sum of the buckets (the copy's
 * counters are independent relaxed loads: this keeps +Inf == _count). */
static void prom_hist(struct tbuf *b, const char *name, const char *labels,
                      const struct uf_lat_hist *h)
{
	uint64_t cum = 0, total = 0;
	unsigned i = 0;
	for (unsigned k = 0; k < UF_LAT_NBUCKETS; k++)
		total += h->buckets[k];
	for (unsigned e = PROM_LE_MIN_EXP; e <= PROM_LE_MAX_EXP; e++) {
		unsigned upto = uf_lat_bucket(1ull << e); /* first bucket at or above 2^e */
		for (; i < upto; i++)
			cum += h->buckets[i];
		tb_printf(b, "%s_bucket{%s,le=\"%.9g\"} %" PRIu64 "\n", name, labels,
		          (double)(1ull << e) / 1e9, cum);
	}
	tb_printf(b, "%s_bucket{%s,le=\"+Inf\"} %" PRIu64 "\n", name, labels, total);
	tb_printf(b, "%s_sum{%s} %.9f\n", name, labels, (double)h->sum_ns / 1e9);
	tb_printf(b, "%s_count{%s} %" PRIu64 "\n", name, labels, total);
}

/* Consumer label: its tag and slot ("uf-tail/3"), unique per ring while it is attached. */
static const char *consumer_label(const struct uf_status_consumer *c, char *buf, size_t len)
{
	char t[64];
	snprintf(buf, len, "%s/%u", esc(c->tag[0] ? c->tag : "consumer", t, sizeof(t)), c->slot);
	return buf;
}

static int ring_nconsumers(const struct uf_status_ring *r)
{
	if (!r->present)
		return 0;
	return r->nconsumers < UF_STATUS_MAX_CONSUMERS ? r->nconsumers : UF_STATUS_MAX_CONSUMERS;
}

/* The session name without MoldUDP64's space padding. */
static const char *session_label(const struct uf_status_feed *f, char *buf, size_t len)
{
	char t[sizeof(f->stats.session)];
	size_t n;
	memcpy(t, f->stats.session, sizeof(t));
	t[sizeof(t) - 1] = '\0';
	n = strlen(t);
	while (n && t[n - 1] == ' ')
		t[--n] = '\0';
	return esc(t, buf, len);
}

/* One family with a sample per feed, the value a uint64_t of the feed's stats at offset `off`
 * (offsetof(struct uf_feed_stats, ...)); `ns`: nanoseconds, written in seconds. */
static void feed_family(struct tbuf *b, const struct uf_status_snapshot *snap, int nf,
                        const char *name, const char *type, const char *help, size_t off, int ns)
{
	char fe[128];
	family(b, name, type, help);
	for (int i = 0; i < nf; i++) {
		uint64_t v;
		memcpy(&v, (const char *)&snap->feeds[i].stats + off, sizeof(v));
		esc(snap->feeds[i].name, fe, sizeof(fe));
		if (ns)
			tb_printf(b, "%s{feed=\"%s\"} %.9f\n", name, fe, (double)v / 1e9);
		else
			tb_printf(b, "%s{feed=\"%s\"} %" PRIu64 "\n", name, fe, v);
	}
}

char *uf_status_render_prometheus(const struct uf_status_snapshot *snap)
{
	struct tbuf b = {0};
	char fe[128], le[128], re[128], cl[160], lab[512];
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
	family(&b, "uringfeed_ready", "gauge",
	       "1 when the feed is ready (GET /ready lists the reasons when it is not)");
	for (int i = 0; i < nf; i++)
		tb_printf(&b, "uringfeed_ready{feed=\"%s\"} %d\n",
		          esc(snap->feeds[i].name, fe, sizeof(fe)),
		          uf_status_feed_not_ready(snap, i, NULL, 0) == 0);

	/* Feed-wide counters, one family each; decode_* become one family with a kind label. */
	for (size_t c = 0; c < NFEEDC; c++) {
		const struct counter_def *d = &feed_counters[c];
		char name[96];
		if (is_decode_error(d) || is_not_a_count(d))
			continue;
		snprintf(name, sizeof(name), "uringfeed_%s_total", d->name);
		feed_family(&b, snap, nf, name, "counter", d->help, d->off, 0);
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

	family(&b, "uringfeed_capture_dropped_total", "counter",
	       "datagrams the capture did not write, by reason (writer_behind, disk_full, "
	       "no_dir, read_only, io_error); the feed itself went on");
	for (int i = 0; i < nf; i++)
		for (size_t k = 0; k < NCAPDROP; k++)
			tb_printf(&b,
			          "uringfeed_capture_dropped_total{feed=\"%s\",reason=\"%s\"} "
			          "%" PRIu64 "\n",
			          esc(snap->feeds[i].name, fe, sizeof(fe)), capture_drops[k].reason,
			          capture_drop(&snap->feeds[i], k));
	feed_family(&b, snap, nf, "uringfeed_capture_lag_seconds", "gauge",
	            "receive time of the newest datagram in the last capture write to that "
	            "write's completion",
	            offsetof(struct uf_feed_stats, capture_lag_ns), 1);
	feed_family(&b, snap, nf, "uringfeed_capture_queued_bytes", "gauge",
	            "capture bytes handed to the writer thread and not written yet",
	            offsetof(struct uf_feed_stats, capture_queued_bytes), 0);

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
	family(&b, "uringfeed_line_last_packet_age_seconds", "gauge",
	       "seconds since the line's last packet (kernel receive time); NaN before its first");
	for (int i = 0; i < nf; i++) {
		const struct uf_status_feed *f = &snap->feeds[i];
		for (int l = 0; l < feed_nlines(f); l++) {
			uint64_t t = f->stats.line_last_rx_ns[l];
			esc(f->name, fe, sizeof(fe));
			esc(f->stats.line_names[l], le, sizeof(le));
			if (!t)
				tb_printf(&b,
				          "uringfeed_line_last_packet_age_seconds{feed=\"%s\",line="
				          "\"%s\"} NaN\n",
				          fe, le);
			else
				tb_printf(&b,
				          "uringfeed_line_last_packet_age_seconds{feed=\"%s\",line="
				          "\"%s\"} %.6f\n",
				          fe, le,
				          snap->now_ns > t ? (double)(snap->now_ns - t) / 1e9
				                           : 0.0);
		}
	}

	family(&b, "uringfeed_wire_to_publish_seconds", "histogram",
	       "kernel receive timestamp to records in the ring, per message");
	for (int i = 0; i < nf; i++) {
		snprintf(lab, sizeof(lab), "feed=\"%s\"", esc(snap->feeds[i].name, fe, sizeof(fe)));
		prom_hist(&b, "uringfeed_wire_to_publish_seconds", lab,
		          &snap->feeds[i].stats.latency);
	}
	feed_family(&b, snap, nf, "uringfeed_wire_to_publish_max_seconds", "gauge",
	            "largest wire-to-publish latency since start",
	            offsetof(struct uf_feed_stats, latency.max_ns), 1);
	feed_family(&b, snap, nf, "uringfeed_wire_to_publish_negative_total", "counter",
	            "samples with the publish time before the receive time (clock stepped), not in "
	            "the histogram",
	            offsetof(struct uf_feed_stats, latency.negative), 0);
	family(&b, "uringfeed_stage_seconds", "histogram",
	       "time per packet in each stage of the pipeline: receive, arbitration, decode, "
	       "books, ring, image");
	for (int i = 0; i < nf; i++)
		for (unsigned st = 0; st < UF_STAGE_COUNT; st++) {
			snprintf(lab, sizeof(lab), "feed=\"%s\",stage=\"%s\"",
			         esc(snap->feeds[i].name, fe, sizeof(fe)), uf_stage_name(st));
			prom_hist(&b, "uringfeed_stage_seconds", lab,
			          &snap->feeds[i].stats.stages[st]);
		}

	feed_family(&b, snap, nf, "uringfeed_books_stale", "gauge",
	            "books flagged stale by an unrecovered gap (until the next session)",
	            offsetof(struct uf_feed_stats, books_stale), 0);
	family(&b, "uringfeed_session_info", "gauge",
	       "current MoldUDP64 session (value is always 1; absent before the first packet)");
	for (int i = 0; i < nf; i++)
		if (snap->feeds[i].stats.session[0])
			tb_printf(&b, "uringfeed_session_info{feed=\"%s\",session=\"%s\"} 1\n",
			          esc(snap->feeds[i].name, fe, sizeof(fe)),
			          session_label(&snap->feeds[i], le, sizeof(le)));
	feed_family(&b, snap, nf, "uringfeed_session_ended", "gauge",
	            "1 once the current session's end of session was reached",
	            offsetof(struct uf_feed_stats, session_ended), 0);
	feed_family(&b, snap, nf, "uringfeed_recovery_in_progress", "gauge",
	            "1 while a gap is open (waiting for the other line or re-requesting)",
	            offsetof(struct uf_feed_stats, recovering), 0);
	feed_family(&b, snap, nf, "uringfeed_snapshot_in_progress", "gauge",
	            "1 while a GLIMPSE snapshot loads (live packets are buffered meanwhile)",
	            offsetof(struct uf_feed_stats, snapshot_in_progress), 0);
	feed_family(&b, snap, nf, "uringfeed_snapshot_pending", "gauge",
	            "1 while a GLIMPSE snapshot loads or one is due (books known wrong, or flagged "
	            "uncertain with a re-load left): the books are not settled",
	            offsetof(struct uf_feed_stats, snapshot_pending), 0);
	feed_family(&b, snap, nf, "uringfeed_busy_seconds_total", "counter",
	            "feed loop time in turns that did work (packets, a snapshot step, a gap "
	            "timer, a filter switch); only with busy_clock on, else 0",
	            offsetof(struct uf_feed_stats, busy_ns), 1);
	feed_family(&b, snap, nf, "uringfeed_idle_pause", "gauge",
	            "1 when the feed loop pauses the CPU after an empty poll, 0 when it spins "
	            "without (config idle_pause; auto: no pause with SQPOLL)",
	            offsetof(struct uf_feed_stats, idle_pause), 0);
	feed_family(&b, snap, nf, "uringfeed_snapshot_duration_seconds_total", "counter",
	            "time spent loading GLIMPSE snapshots, start to merge",
	            offsetof(struct uf_feed_stats, snapshot_duration_ns), 1);
	feed_family(&b, snap, nf, "uringfeed_snapshot_last_duration_seconds", "gauge",
	            "duration of the last GLIMPSE snapshot loaded, start to merge",
	            offsetof(struct uf_feed_stats, snapshot_last_duration_ns), 1);

	/* Rings: gauges (the sequence restarts with a new generation). */
	static const struct {
		const char *name, *help;
	} ringm[] = {
	    {"uringfeed_ring_sequence", "records published to the ring so far (next sequence)"},
	    {"uringfeed_ring_capacity_records", "ring capacity in records"},
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
	/* Journal writers (docs/journal.md). */
	static const struct {
		const char *name, *type, *help;
		size_t off;
	} jm[] = {
	    {"uringfeed_journal_records_total", "counter", "records written to the ring's journal",
	     offsetof(struct uf_journal_stats, records)},
	    {"uringfeed_journal_bytes_total", "counter", "bytes written to the ring's journal",
	     offsetof(struct uf_journal_stats, bytes)},
	    {"uringfeed_journal_files_total", "counter", "journal files created or continued",
	     offsetof(struct uf_journal_stats, files)},
	    {"uringfeed_journal_lag_records", "gauge",
	     "records published to the ring not yet written to the journal",
	     offsetof(struct uf_journal_stats, lag)},
	    {"uringfeed_journal_holes_total", "counter",
	     "hole entries written (the writer was lapped or could not write)",
	     offsetof(struct uf_journal_stats, holes)},
	    {"uringfeed_journal_hole_records_total", "counter",
	     "sequences the journal's hole entries cover (records not in the journal)",
	     offsetof(struct uf_journal_stats, hole_records)},
	    {"uringfeed_journal_laps_total", "counter", "times the ring lapped the journal writer",
	     offsetof(struct uf_journal_stats, laps)},
	    {"uringfeed_journal_write_errors_total", "counter",
	     "journal writes or opens that failed (full, removed, read-only, I/O error)",
	     offsetof(struct uf_journal_stats, write_errors)},
	    {"uringfeed_journal_dropped_records_total", "counter",
	     "records not written because the journal could not be written",
	     offsetof(struct uf_journal_stats, dropped)},
	    {"uringfeed_journal_fsyncs_total", "counter", "fdatasync calls completed",
	     offsetof(struct uf_journal_stats, fsyncs)},
	    {"uringfeed_journal_torn_cut_total", "counter",
	     "entries of a torn journal tail cut at start (a crash mid-write)",
	     offsetof(struct uf_journal_stats, torn_cut)},
	    {"uringfeed_journal_deleted_files_total", "counter",
	     "journal files removed by keep_days",
	     offsetof(struct uf_journal_stats, deleted_files)},
	};
	for (size_t m = 0; m < sizeof(jm) / sizeof(jm[0]); m++) {
		int any = 0;
		for (int i = 0; i < nf; i++)
			any |= snap->feeds[i].ring.present && snap->feeds[i].ring.journal_on;
		if (!any)
			break;
		family(&b, jm[m].name, jm[m].type, jm[m].help);
		for (int i = 0; i < nf; i++) {
			const struct uf_status_ring *r = &snap->feeds[i].ring;
			uint64_t v;
			if (!r->present || !r->journal_on)
				continue;
			memcpy(&v, (const char *)&r->journal + jm[m].off, sizeof(v));
			tb_printf(&b, "%s{feed=\"%s\",ring=\"%s\"} %" PRIu64 "\n", jm[m].name,
			          esc(snap->feeds[i].name, fe, sizeof(fe)),
			          esc(r->name, re, sizeof(re)), v);
		}
	}
	{
		int any = 0;
		for (int i = 0; i < nf; i++)
			any |= snap->feeds[i].ring.present && snap->feeds[i].ring.journal_on;
		if (any)
			family(
			    &b, "uringfeed_journal_failing", "gauge",
			    "1 while the journal writer cannot write (records are dropped, a hole "
			    "entry follows)");
		for (int i = 0; any && i < nf; i++) {
			const struct uf_status_ring *r = &snap->feeds[i].ring;
			if (!r->present || !r->journal_on)
				continue;
			tb_printf(&b, "uringfeed_journal_failing{feed=\"%s\",ring=\"%s\"} %d\n",
			          esc(snap->feeds[i].name, fe, sizeof(fe)),
			          esc(r->name, re, sizeof(re)), r->journal.failing != 0);
		}
	}
	static const struct {
		const char *name, *type, *help;
	} consm[] = {
	    {"uringfeed_consumer_lag_records", "gauge",
	     "records published that the consumer has not read"},
	    {"uringfeed_consumer_lost_records_total", "counter",
	     "records the consumer lost because the producer lapped it"},
	    {"uringfeed_consumer_laps_total", "counter", "times the producer lapped the consumer"},
	};
	for (size_t m = 0; m < sizeof(consm) / sizeof(consm[0]); m++) {
		family(&b, consm[m].name, consm[m].type, consm[m].help);
		for (int i = 0; i < nf; i++) {
			const struct uf_status_ring *r = &snap->feeds[i].ring;
			for (int c = 0; c < ring_nconsumers(r); c++) {
				const struct uf_status_consumer *k = &r->consumers[c];
				uint64_t v = m == 0 ? k->lag : m == 1 ? k->lost : k->laps;
				tb_printf(&b,
				          "%s{feed=\"%s\",ring=\"%s\",consumer=\"%s\",pid=\"%d\"} "
				          "%" PRIu64 "\n",
				          consm[m].name, esc(snap->feeds[i].name, fe, sizeof(fe)),
				          esc(r->name, re, sizeof(re)),
				          consumer_label(k, cl, sizeof(cl)), (int)k->pid, v);
			}
		}
	}

	if (snap->process.present) {
		const struct uf_status_process *p = &snap->process;
		family(&b, "process_cpu_seconds_total", "counter",
		       "Total user and system CPU time spent in seconds.");
		tb_printf(&b, "process_cpu_seconds_total %.3f\n", p->cpu_seconds);
		family(&b, "process_resident_memory_bytes", "gauge",
		       "Resident memory size in bytes.");
		tb_printf(&b, "process_resident_memory_bytes %" PRIu64 "\n", p->resident_bytes);
		family(&b, "process_virtual_memory_bytes", "gauge",
		       "Virtual memory size in bytes.");
		tb_printf(&b, "process_virtual_memory_bytes %" PRIu64 "\n", p->virtual_bytes);
		family(&b, "process_start_time_seconds", "gauge",
		       "Start time of the process since unix epoch in seconds.");
		tb_printf(&b, "process_start_time_seconds %.3f\n", p->start_time_s);
		family(&b, "process_open_fds", "gauge", "Number of open file descriptors.");
		tb_printf(&b, "process_open_fds %" PRIu64 "\n", p->open_fds);
		family(&b, "process_max_fds", "gauge", "Maximum number of open file descriptors.");
		tb_printf(&b, "process_max_fds %" PRIu64 "\n", p->max_fds);
	}
	if (b.failed) {
		free(b.p);
		return NULL;
	}
	if (!b.p)
		return strdup("");
	return b.p;
}

/* ---- readiness ---- */

int uf_status_line_silent(const struct uf_status_feed *f, int l, uint64_t now_ns,
                          uint64_t silence_ns, uint64_t *age_ns)
{
	uint64_t t = f->stats.line_last_rx_ns[l];
	uint64_t since = f->stats.session_start_ns;
	*age_ns = t ? (now_ns > t ? now_ns - t : 0) : UINT64_MAX;
	if (f->stats.sessions == 0 || f->stats.session_ended)
		return 0; /* outside the session silence is normal */
	/* Quiet since the session started (or since before it) counts from its start: the
	 * other line may simply have been a few microseconds first. */
	if (since && (!t || t < since)) {
		*age_ns = UINT64_MAX; /* nothing this session */
		return (now_ns > since ? now_ns - since : 0) > silence_ns;
	}
	return *age_ns > silence_ns;
}

/* Appends one reason line to out (when given); returns 1. */
__attribute__((format(printf, 3, 4))) static int reason(char *out, size_t len, const char *fmt, ...)
{
	va_list ap;
	size_t used;
	if (!out || len == 0)
		return 1;
	used = strlen(out);
	if (used + 1 >= len)
		return 1;
	va_start(ap, fmt);
	vsnprintf(out + used, len - used, fmt, ap);
	va_end(ap);
	return 1;
}

int uf_status_feed_not_ready(const struct uf_status_snapshot *snap, int i, char *out, size_t len)
{
	const struct uf_status_feed *f = &snap->feeds[i];
	int n = 0;

	if (f->state != UF_STATUS_RUNNING)
		return reason(out, len, "feed %s: %s%s%.160s\n", f->name,
		              uf_status_state_name(f->state), f->error[0] ? ": " : "", f->error);
	if (f->stats.packets == 0)
		return reason(out, len, "feed %s: no data received yet\n", f->name);
	for (int l = 0; l < feed_nlines(f); l++) {
		uint64_t age;
		if (!uf_status_line_silent(f, l, snap->now_ns, snap->ready_silence_ns, &age))
			continue;
		if (age == UINT64_MAX)
			n +=
			    reason(out, len, "feed %s: line %s has received nothing this session\n",
			           f->name, f->stats.line_names[l]);
		else
			n += reason(out, len, "feed %s: line %s silent for %.1f s (limit %.1f s)\n",
			            f->name, f->stats.line_names[l], (double)age / 1e9,
			            (double)snap->ready_silence_ns / 1e9);
	}
	if (f->stats.books_stale)
		n += reason(
		    out, len,
		    "feed %s: %" PRIu64 " books stale (an unrecovered gap, a message that "
		    "did not decode, a book integrity error or a full table; until a snapshot "
		    "or the next session)\n",
		    f->name, f->stats.books_stale);
	if (f->stats.snapshot_in_progress)
		n += reason(out, len, "feed %s: snapshot loading\n", f->name);
	if (f->stats.recovering)
		n += reason(out, len, "feed %s: gap recovery in progress\n", f->name);
	return n;
}

char *uf_status_render_ready(const struct uf_status_snapshot *snap, unsigned *code)
{
	size_t len = 16384;
	char *out = calloc(1, len);
	int bad = 0;

	if (!out)
		return NULL;
	for (int i = 0; i < snap->nfeeds && i < UF_CFG_MAX_FEEDS; i++)
		bad += uf_status_feed_not_ready(snap, i, out, len);
	if (snap->nfeeds == 0)
		bad += reason(out, len, "no feeds\n");
	if (!bad)
		snprintf(out, len, "ready: %d feed%s\n", snap->nfeeds,
		         snap->nfeeds == 1 ? "" : "s");
	/* Capture drops do not make a feed unready (the feed is fine), but an operator reading
	 * the body must see that the record of the day has holes. */
	for (int i = 0; i < snap->nfeeds && i < UF_CFG_MAX_FEEDS; i++) {
		const struct uf_status_feed *f = &snap->feeds[i];
		uint64_t t = capture_drops_total(f);
		if (!t)
			continue;
		reason(out, len, "feed %s: capture dropped %" PRIu64 " datagrams (", f->name, t);
		for (size_t k = 0; k < NCAPDROP; k++)
			reason(out, len, "%s%s %" PRIu64, k ? ", " : "", capture_drops[k].reason,
			       capture_drop(f, k));
		reason(out, len, "); the feed goes on\n");
	}
	*code = bad ? 503 : 200;
	return out;
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

/* Appends to buf at *off (snprintf semantics, never past len - 1). */
__attribute__((format(printf, 4, 5))) static void sd_add(char *buf, size_t len, size_t *off,
                                                         const char *fmt, ...)
{
	va_list ap;
	int n;

	if (*off + 1 >= len)
		return;
	va_start(ap, fmt);
	n = vsnprintf(buf + *off, len - *off, fmt, ap);
	va_end(ap);
	if (n > 0)
		*off = *off + (size_t)n < len ? *off + (size_t)n : len - 1;
}

size_t uf_status_render_systemd(const struct uf_status_snapshot *snap, const uint8_t *stuck,
                                char *buf, size_t len)
{
	int nf = snap->nfeeds < UF_CFG_MAX_FEEDS ? snap->nfeeds : UF_CFG_MAX_FEEDS;
	uint64_t msgs = 0, stale = 0;
	int running = 0;
	size_t off = 0;
	char why[512];

	if (!len)
		return 0;
	buf[0] = '\0';
	for (int i = 0; i < nf; i++) {
		const struct uf_status_feed *f = &snap->feeds[i];
		msgs += f->stats.messages;
		stale += f->stats.books_stale;
		running += f->state == UF_STATUS_RUNNING && !(stuck && stuck[i]);
	}
	sd_add(buf, len, &off, "feeds %d/%d running, %" PRIu64 " msgs, %" PRIu64 " stale books",
	       running, nf, msgs, stale);
	if (nf == 1 && snap->feeds[0].stats.session[0])
		sd_add(buf, len, &off, ", session %s%s", snap->feeds[0].stats.session,
		       snap->feeds[0].stats.session_ended ? " (ended)" : "");
	for (int i = 0; i < nf; i++) {
		const struct uf_status_feed *f = &snap->feeds[i];
		if (stuck && stuck[i]) {
			sd_add(buf, len, &off, "; feed %s stuck (no heartbeat)", f->name);
			continue;
		}
		why[0] = '\0';
		if (uf_status_feed_not_ready(snap, i, why, sizeof(why)) == 0)
			continue;
		why[strcspn(why, "\n")] = '\0'; /* the first reason is enough for one line */
		sd_add(buf, len, &off, "; %s", why);
	}
	return off;
}
