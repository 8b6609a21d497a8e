/* Daemon logging: see log.h. */
#include "daemon/log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/uf_atomic.h"

static uint32_t log_level =
    UF_LOG_INFO;            /* read by every thread: relaxed, a stale level is harmless */
static uint32_t log_fd = 2; /* destination; tests redirect it */

static const char *const level_names[] = {"error", "warn", "info", "debug"};
static const char *const level_tags[] = {"ERROR", "WARN ", "INFO ", "DEBUG"};

void uf_log_set_level(int level)
{
	if (level < UF_LOG_ERROR)
		level = UF_LOG_ERROR;
	if (level > UF_LOG_DEBUG)
		level = UF_LOG_DEBUG;
	/* No ordering needed: the level gates output, it guards no data. */
	uf_store_relaxed_u32(&log_level, (uint32_t)level);
}

int uf_log_get_level(void)
{
	return (int)uf_load_relaxed_u32(&log_level);
}

void uf_log_set_fd(int fd)
{
	uf_store_relaxed_u32(&log_fd, (uint32_t)fd);
}

const char *uf_log_level_name(int level)
{
	if (level < UF_LOG_ERROR || level > UF_LOG_DEBUG)
		return "unknown";
	return level_names[level];
}

int uf_log_level_parse(const char *name)
{
	for (int i = 0; i <= UF_LOG_DEBUG; i++)
		if (strcmp(name, level_names[i]) == 0)
			return i;
	return -1;
}

void uf_log(int level, const char *fmt, ...)
{
	char line[1024 + 64];
	struct timespec ts;
	struct tm tm;
	va_list ap;
	size_t n;
	int saved = errno;
	int r;

	if (level > uf_log_get_level())
		return;
	if (level < UF_LOG_ERROR)
		level = UF_LOG_ERROR;
	if (level > UF_LOG_DEBUG)
		level = UF_LOG_DEBUG;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	n = strftime(line, 32, "%Y-%m-%dT%H:%M:%S", &tm);
	n += (size_t)snprintf(line + n, sizeof(line) - n, ".%06ldZ %s ", ts.tv_nsec / 1000,
	                      level_tags[level]);

	va_start(ap, fmt);
	r = vsnprintf(line + n, sizeof(line) - n - 1, fmt, ap);
	va_end(ap);
	if (r < 0)
		r = 0;
	if ((size_t)r >= sizeof(line) - n - 1) {
		/* Cut: mark it so nobody mistakes a truncated value for the whole one. */
		n = sizeof(line) - 5;
		memcpy(line + n, "...", 3);
		n += 3;
	} else {
		n += (size_t)r;
	}
	line[n++] = '\n';

	/* One write: lines from concurrent threads stay whole (stderr is unbuffered anyway). */
	for (size_t off = 0; off < n;) {
		ssize_t w = write((int)uf_load_relaxed_u32(&log_fd), line + off, n - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			break;
		off += (size_t)w;
	}
	errno = saved;
}
