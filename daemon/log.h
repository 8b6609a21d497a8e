/* Daemon logging: one line per event on stderr, "2026-12-03T06:55:42.123456Z INFO  message".
 *
 * Under systemd (stderr is the journal: $JOURNAL_STREAM names stderr's device:inode) or with
 * "log.journal": "always", lines are "<N>message" instead: the syslog priority prefix that
 * journald turns into PRIORITY= (3 error, 4 warning, 6 info, 7 debug), no timestamp
 * (journald stamps). "never" keeps the timestamped format whatever stderr is.
 *
 * For control paths only (startup, configuration, placement, signals, HTTP): each call
 * formats into a stack buffer and issues one write(2), so lines from several threads never
 * interleave, but it is still a syscall: feed threads never log on the hot path, they count. */
#ifndef UF_LOG_H
#define UF_LOG_H

#include <stdint.h>

enum uf_log_level {
	UF_LOG_ERROR = 0, /* the daemon cannot do what it was asked */
	UF_LOG_WARN = 1,  /* degraded but running (fallbacks, dropped consumers) */
	UF_LOG_INFO = 2,  /* lifecycle: start, stop, reload, placement decisions (default) */
	UF_LOG_DEBUG = 3, /* everything else */
};

/* Sets the most verbose level printed (default UF_LOG_INFO). Thread-safe. */
void uf_log_set_level(int level);
int uf_log_get_level(void);

/* Sets the fd lines go to (default 2, stderr); tests point it at a pipe or file. */
void uf_log_set_fd(int fd);

/* Level name ("error", "warn", "info", "debug") <-> number; -1 when unknown. */
const char *uf_log_level_name(int level);
int uf_log_level_parse(const char *name);

/* Journal format selection ("log.journal"). */
enum uf_log_journal {
	UF_LOG_JOURNAL_AUTO = 0, /* "<N>" prefixes when stderr is the journal */
	UF_LOG_JOURNAL_ALWAYS,   /* always "<N>" prefixes */
	UF_LOG_JOURNAL_NEVER,    /* always timestamps */
};

/* "auto", "always", "never" -> enum uf_log_journal, -1 when unknown. */
int uf_log_journal_parse(const char *name);

/* Chooses the format (AUTO inspects $JOURNAL_STREAM against the log fd now). */
void uf_log_set_journal(int mode);

/* 1 when lines carry "<N>" priority prefixes. */
int uf_log_journal_on(void);

/* syslog priority of a level: 3, 4, 6, 7. */
int uf_log_priority(int level);

/* Token bucket for one kind of event line: at most `burst` lines at once, refilled at
 * `per_min` lines a minute; lines over the limit are counted and the next line that passes
 * says how many were suppressed. Not thread-safe: one thread owns a limiter (the daemon's
 * main loop). Zero-initialise, then set burst and per_min. */
struct uf_log_limit {
	double burst;        /* bucket size, lines */
	double per_min;      /* refill rate, lines a minute */
	double tokens;       /* lines available now */
	uint64_t last_ns;    /* refill time (monotonic ns), 0 = full bucket at first use */
	uint64_t suppressed; /* lines dropped since the last one printed */
};

/* uf_log through a limiter; `now_ns` is CLOCK_MONOTONIC (a parameter, so tests drive the
 * clock). Returns 1 when printed (or filtered by the level), 0 when suppressed. */
int uf_log_limited(struct uf_log_limit *l, uint64_t now_ns, int level, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Prints one line at `level` if enabled; a trailing newline is added, long lines are cut
 * at 1 KiB and end in "...". Preserves errno. */
void uf_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define uf_log_error(...) uf_log(UF_LOG_ERROR, __VA_ARGS__)
#define uf_log_warn(...)  uf_log(UF_LOG_WARN, __VA_ARGS__)
#define uf_log_info(...)  uf_log(UF_LOG_INFO, __VA_ARGS__)
#define uf_log_debug(...) uf_log(UF_LOG_DEBUG, __VA_ARGS__)

#endif /* UF_LOG_H */
