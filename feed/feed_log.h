/* The engine's log hook: how feed/ reports the few cold-path events an operator should see
 * (back-end fallbacks, a refused socket buffer size, a CPU it could not pin to).
 *
 * feed/ does not own a logger: the embedder installs one with uf_feed_set_log() (the daemon
 * routes these lines into its own log, daemon/log.h). Without one, lines go to stderr. Feed
 * threads only log at setup and on fallbacks, never per packet: the hot path counts. */
#ifndef UF_FEED_LOG_H
#define UF_FEED_LOG_H

/* Levels, most severe first (the daemon's daemon/log.h uses the same numbers). */
enum uf_feed_log_level {
	UF_FEED_LOG_ERROR = 0, /* the feed cannot do what it was asked */
	UF_FEED_LOG_WARN = 1,  /* degraded but running (fallbacks) */
	UF_FEED_LOG_INFO = 2,  /* setup decisions */
	UF_FEED_LOG_DEBUG = 3, /* everything else */
};

/* Receives one formatted line (no trailing newline) at `level`; `ctx` is the pointer given
 * to uf_feed_set_log. Called from any feed thread or the control thread: must be
 * thread-safe. */
typedef void (*uf_feed_log_fn)(void *ctx, int level, const char *line);

/* Installs the hook (NULL restores the default: "uringfeed LEVEL: line" on stderr).
 * Set it before creating feeds: the hook is read without synchronisation by feed threads. */
void uf_feed_set_log(uf_feed_log_fn fn, void *ctx);

/* Formats one line (cut at 1 KiB) and hands it to the hook. Preserves errno. */
void uf_feed_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define uf_feed_log_warn(...)  uf_feed_log(UF_FEED_LOG_WARN, __VA_ARGS__)
#define uf_feed_log_info(...)  uf_feed_log(UF_FEED_LOG_INFO, __VA_ARGS__)
#define uf_feed_log_debug(...) uf_feed_log(UF_FEED_LOG_DEBUG, __VA_ARGS__)

#endif /* UF_FEED_LOG_H */
