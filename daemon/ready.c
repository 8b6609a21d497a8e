/* Readiness decision: see ready.h. */
#include "daemon/ready.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

struct text {
	char *p;
	size_t len, off;
	int nreasons;
};

static void add(struct text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add(struct text *t, const char *fmt, ...)
{
	va_list ap;

	if (t->off >= t->len)
		return;
	va_start(ap, fmt);
	int n = vsnprintf(t->p + t->off, t->len - t->off, fmt, ap);
	va_end(ap);
	if (n > 0)
		t->off += (size_t)n < t->len - t->off ? (size_t)n : t->len - t->off - 1;
}

static void reason(struct text *t, const struct uf_ready_feed *f, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void reason(struct text *t, const struct uf_ready_feed *f, const char *fmt, ...)
{
	char msg[160];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	add(t, "%sfeed %s: %s", t->nreasons++ ? "; " : "not ready: ", f->name, msg);
}

int uf_ready_decide(const struct uf_ready_feed *feeds, int n, uint64_t now_ns,
                    const struct uf_ready_policy *pol, char *why, size_t len)
{
	struct text t = {why, len, 0, 0};

	if (len)
		why[0] = '\0';
	if (n <= 0) {
		add(&t, "not ready: no feeds");
		return 0;
	}
	for (int i = 0; i < n; i++) {
		const struct uf_ready_feed *f = &feeds[i];

		if (!f->running) {
			reason(&t, f, "not running");
			continue; /* the rest says nothing about a feed that does not run */
		}
		if (f->messages == 0)
			reason(&t, f, "no data yet");
		for (int l = 0; f->session_open && l < f->nlines && l < UF_READY_MAX_LINES; l++) {
			const struct uf_ready_line *ln = &f->lines[l];
			if (!ln->last_packet_ns) {
				reason(&t, f, "line %s: nothing received this session", ln->name);
				continue;
			}
			uint64_t age =
			    now_ns > ln->last_packet_ns ? now_ns - ln->last_packet_ns : 0;
			if (age > pol->silent_ns)
				reason(&t, f, "line %s silent for %.1f s", ln->name,
				       (double)age / 1e9);
		}
		if (f->books_stale)
			reason(&t, f, "%llu books stale", (unsigned long long)f->books_stale);
		if (f->recovery_in_progress)
			reason(&t, f, "recovery in progress");
	}
	if (t.nreasons)
		return 0;
	add(&t, "ready: %d feed%s", n, n == 1 ? "" : "s");
	return 1;
}
