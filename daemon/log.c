/* Daemon logging: see log.h. */
#include "daemon/log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/uf_atomic.h"

static uint32_t log_level =
    UF_LOG_INFO;            /* read by every thread: relaxed, a stale level is harmless */
static uint32_t log_fd = 2; /* destination; tests redirect it */

static uint32_t log_journal; /* 1: "<N>" prefixes (uf_log_set_journal) */

static const char *const level_names[] = {"error", "warn", "info", "debug"};
static const int level_prio[] = {3, 4, 6, 7}; /* LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG */
static const char *const journal_names[] = {"auto", "always", "never"};
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

int uf_log_journal_parse(const char *name)
{
	for (int i = 0; i < (int)(sizeof(journal_names) / sizeof(journal_names[0])); i++)
		if (strcmp(name, journal_names[i]) == 0)
			return i;
	return -1;
}

/* systemd sets JOURNAL_STREAM=<dev>:<inode> of the stream it connected stdout/stderr to;
 * the fd is the journal only if it is still that very stream (a redirect changes it). */
static int fd_is_journal(int fd)
{
	const char *js = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;
	if (!js || sscanf(js, "%llu:%llu", &dev, &ino) != 2 || fstat(fd, &st) != 0)
		return 0;
	return (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

void uf_log_set_journal(int mode)
{
	int on = mode == UF_LOG_JOURNAL_ALWAYS ||
	         (mode == UF_LOG_JOURNAL_AUTO && fd_is_journal((int)uf_load_relaxed_u32(&log_fd)));
	uf_store_relaxed_u32(&log_journal, (uint32_t)on);
}

int uf_log_journal_on(void)
{
	return (int)uf_load_relaxed_u32(&log_journal);
}

int uf_log_priority(int level)
{
	if (level < UF_LOG_ERROR)
		level = UF_LOG_ERROR;
	if (level > UF_LOG_DEBUG)
		level = UF_LOG_DEBUG;
	return level_prio[level];
}

static void uf_vlog(int level, const char *suffix, const char *fmt, va_list ap)
{
	char line[1024 + 64];
	struct timespec ts;
	struct tm tm;
	size_t n;
	int saved = errno;
	int r;

	if (level > uf_log_get_level())
		return;
	if (level < UF_LOG_ERROR)
		level = UF_LOG_ERROR;
	if (level > UF_LOG_DEBUG)
		level = UF_LOG_DEBUG;

	if (uf_log_journal_on()) {
		n = (size_t)snprintf(line, sizeof(line), "<%d>", level_prio[level]);
	} else {
		clock_gettime(CLOCK_REALTIME, &ts);
		gmtime_r(&ts.tv_sec, &tm);
		n = strftime(line, 32, "%Y-%m-%dT%H:%M:%S", &tm);
		n += (size_t)snprintf(line + n, sizeof(line) - n, ".%06ldZ %s ", ts.tv_nsec / 1000,
		                      level_tags[level]);
	}

	r = vsnprintf(line + n, sizeof(line) - n - 1, fmt, ap);
	if (r >= 0 && suffix && (size_t)r < sizeof(line) - n - 1)
		r += snprintf(line + n + r, sizeof(line) - n - 1 - (size_t)r, "%s", suffix);
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

void uf_log(int level, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	uf_vlog(level, NULL, fmt, ap);
	va_end(ap);
}

int uf_log_limited(struct uf_log_limit *l, uint64_t now_ns, int level, const char *fmt, ...)
{
	char suffix[64] = "";
	va_list ap;

	if (l->last_ns == 0) {
		l->tokens = l->burst;
	} else if (now_ns > l->last_ns) {
		l->tokens += (double)(now_ns - l->last_ns) / 60e9 * l->per_min;
		if (l->tokens > l->burst)
			l->tokens = l->burst;
	}
	l->last_ns = now_ns ? now_ns : 1;
	if (l->tokens < 1.0) {
		l->suppressed++;
		return 0;
	}
	l->tokens -= 1.0;
	if (l->suppressed)
		snprintf(suffix, sizeof(suffix), " (%llu similar lines suppressed)",
		         (unsigned long long)l->suppressed);
	l->suppressed = 0;
	va_start(ap, fmt);
	uf_vlog(level, suffix, fmt, ap);
	va_end(ap);
	return 1;
}
