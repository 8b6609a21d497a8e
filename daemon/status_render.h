/* Status rendering: a snapshot of counters in, text out.
 *
 * struct uf_status_snapshot is a plain copy of everything /status, /metrics and /health
 * show (the daemon fills it on the HTTP thread from the feeds' relaxed counters). The
 * renderers are pure: they read only the snapshot (its now_ns stands in for the clock),
 * so their output is a function of it and unit tests pin it down
 * (test/daemon/test_status_render.c) without a server, a feed or a socket. */
#ifndef UF_STATUS_RENDER_H
#define UF_STATUS_RENDER_H

#include <stddef.h>
#include <stdint.h>

#include "daemon/uf_config.h"
#include "feed/uf_feed_stats.h"
#include "ring/journal_writer.h"

#define UF_STATUS_MAX_CONSUMERS 64

/* Lifecycle of one feed as the status endpoint shows it. */
enum uf_status_state {
	UF_STATUS_STARTING = 0, /* created, thread not yet receiving */
	UF_STATUS_RUNNING,      /* feed loop running */
	UF_STATUS_STOPPING,     /* stop requested */
	UF_STATUS_STOPPED,      /* loop returned cleanly */
	UF_STATUS_FAILED,       /* loop returned an error (see error) */
};

/* One consumer registered on a ring. */
struct uf_status_consumer {
	uint32_t slot;         /* consumer table slot */
	int32_t pid;           /* consumer process id */
	uint64_t position;     /* next sequence it will read */
	uint64_t lag;          /* records published that it has not read */
	uint64_t last_seen_ns; /* CLOCK_REALTIME of its last activity, 0 unknown */
	uint64_t lost;         /* records it lost to laps */
	uint64_t laps;         /* times it was lapped */
	int sleeping;          /* 1 while blocked on the futex */
	char tag[16];          /* label the consumer gave itself */
};

/* The ring a feed publishes to. */
struct uf_status_ring {
	int present;                /* 0 when the feed has no ring (yet) */
	char name[UF_CFG_NAME_MAX]; /* ring name */
	uint64_t capacity;          /* records */
	uint64_t sequence;          /* records published so far (next sequence) */
	uint64_t generation;        /* changes when the producer restarts */
	int closed;                 /* 1 once marked closed for consumers */
	int nconsumers;             /* registered consumers (may exceed the entries kept) */
	struct uf_status_consumer consumers[UF_STATUS_MAX_CONSUMERS]; /* first entries */
	int journal_on;                  /* 1 when ring.journal is configured and running */
	struct uf_journal_stats journal; /* its writer's counters (docs/journal.md) */
};

/* One feed, as copied on the HTTP thread. */
struct uf_status_feed {
	char name[UF_CFG_NAME_MAX]; /* feed name */
	char backend[24];           /* back end in use */
	char protocol[24];          /* venue protocol ("itch50-moldudp64", "iex-deep"...) */
	char book_memory[8];        /* pages under its order and level tables: "hugetlb",
	                             * "thp", "4k"; "" before the feed exists (null) */
	enum uf_status_state state; /* lifecycle */
	char error[160];            /* last error, "" when none */
	struct uf_feed_stats stats; /* copy of the feed's counters (uf_feed_stats_read) */
	struct uf_status_ring ring; /* its ring */
};

/* The process, as /proc shows it (filled by the HTTP glue; present = 0 when unread). */
struct uf_status_process {
	int present;             /* 1 when the fields below were read */
	double cpu_seconds;      /* user + system CPU time */
	uint64_t resident_bytes; /* resident set size */
	uint64_t virtual_bytes;  /* virtual memory size */
	uint64_t open_fds;       /* open file descriptors */
	uint64_t max_fds;        /* RLIMIT_NOFILE soft limit */
	double start_time_s;     /* process start, seconds since the epoch */
};

/* What one request renders. Filled by the owner's callback; large (tens of KiB), so the
 * server allocates it per request on the HTTP thread. */
struct uf_status_snapshot {
	char version[32];                              /* uringfeed version */
	int32_t pid;                                   /* daemon pid */
	uint64_t start_ns;                             /* CLOCK_REALTIME at daemon start */
	uint64_t now_ns;                               /* CLOCK_REALTIME of this snapshot */
	char config[256];                              /* configuration file */
	uint64_t reloads;                              /* SIGHUP reloads applied */
	uint64_t ready_silence_ns;                     /* status.ready_silence_ms, in ns */
	struct uf_status_process process;              /* process metrics */
	int nfeeds;                                    /* feeds[0..nfeeds) are valid */
	struct uf_status_feed feeds[UF_CFG_MAX_FEEDS]; /* per feed */
};

/* Renderers: return a malloc'ed string (NUL-terminated) the caller frees, or NULL on
 * allocation failure.
 *   json: GET /status, one JSON document (jansson).
 *   prometheus: GET /metrics, text exposition format 0.0.4. */
char *uf_status_render_json(const struct uf_status_snapshot *snap);
char *uf_status_render_prometheus(const struct uf_status_snapshot *snap);
/* Plain text for /health; *code gets 200 when every feed runs, else 503. */
char *uf_status_render_health(const struct uf_status_snapshot *snap, unsigned *code);

/* Plain text for /ready; *code gets 200 when every feed is ready ("ready: ..." body), else
 * 503 with one line per reason (uf_status_feed_not_ready). */
char *uf_status_render_ready(const struct uf_status_snapshot *snap, unsigned *code);

/* Readiness of feed `i` (pure): the number of reasons it is not ready (0 = ready), each
 * appended to `out` as one line ending in '\n' when out != NULL (cut to `len`). A feed is
 * not ready while it does not run, before its first packet, while a line is silent during
 * the session (uf_status_line_silent), while books are stale or a gap is being recovered. */
int uf_status_feed_not_ready(const struct uf_status_snapshot *snap, int i, char *out, size_t len);

/* 1 when line `l` of `f` is silent at `now_ns`: the session runs (started, end not reached)
 * and the line's last packet is older than `silence_ns`, or it had none since the session
 * started more than `silence_ns` ago. *age_ns gets the time since its last packet
 * (UINT64_MAX: none this session). */
int uf_status_line_silent(const struct uf_status_feed *f, int l, uint64_t now_ns,
                          uint64_t silence_ns, uint64_t *age_ns);

/* The one line systemd shows in `systemctl status` (STATUS=, sent by the daemon's main loop):
 * "feeds 1/1 running, 123456 msgs, 0 stale books, session S" and then, per feed with a
 * problem, "; feed X stuck (no heartbeat)", "; feed X failed: ...", "; feed X recovering",
 * "; feed X not ready: <first reason>". `stuck[i]` (may be NULL) flags feed i whose thread's
 * heartbeat stopped (daemon/watchdog.h): it is not counted as running. Pure; returns the
 * length written (cut to len - 1). */
size_t uf_status_render_systemd(const struct uf_status_snapshot *snap, const uint8_t *stuck,
                                char *buf, size_t len);

/* "starting", "running", ... */
const char *uf_status_state_name(enum uf_status_state st);

#endif /* UF_STATUS_RENDER_H */
