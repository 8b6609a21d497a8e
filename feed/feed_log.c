/* The engine's log hook: see feed_log.h. */
#include "feed/feed_log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

static uf_feed_log_fn log_fn; /* NULL: stderr (set before feeds start, then only read) */
static void *log_ctx;         /* passed back to log_fn */

void uf_feed_set_log(uf_feed_log_fn fn, void *ctx)
{
	log_fn = fn;
	log_ctx = ctx;
}

static void uf_feed_log_stderr(int level, const char *line)
{
	static const char *const tags[] = {"ERROR", "WARN", "INFO", "DEBUG"};
	const char *tag = level >= 0 && level <= UF_FEED_LOG_DEBUG ? tags[level] : "?";
	/* one fprintf: stderr is unbuffered, so one line is one write */
	fprintf(stderr, "uringfeed %s: %s\n", tag, line);
}

void uf_feed_log(int level, const char *fmt, ...)
{
	char line[1024];
	int saved = errno;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (log_fn)
		log_fn(log_ctx, level, line);
	else
		uf_feed_log_stderr(level, line);
	errno = saved;
}
