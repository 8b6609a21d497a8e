/* Daemon logging: one line per event on stderr, "2026-12-03T06:55:42.123456Z INFO  message".
 *
 * For control paths only (startup, configuration, placement, signals, HTTP): each call
 * formats into a stack buffer and issues one write(2), so lines from several threads never
 * interleave, but it is still a syscall: feed threads never log on the hot path, they count. */
#ifndef UF_LOG_H
#define UF_LOG_H

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

/* Prints one line at `level` if enabled; a trailing newline is added, long lines are cut
 * at 1 KiB and end in "...". Preserves errno. */
void uf_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define uf_log_error(...) uf_log(UF_LOG_ERROR, __VA_ARGS__)
#define uf_log_warn(...)  uf_log(UF_LOG_WARN, __VA_ARGS__)
#define uf_log_info(...)  uf_log(UF_LOG_INFO, __VA_ARGS__)
#define uf_log_debug(...) uf_log(UF_LOG_DEBUG, __VA_ARGS__)

#endif /* UF_LOG_H */
