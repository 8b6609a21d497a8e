/* Status endpoint: health and counters over HTTP (libmicrohttpd), for operators and Prometheus.
 *
 *   GET /status   one JSON document (jansson): per feed its counters, per line, decode errors
 *                 by kind, latency quantiles, the ring's sequence and its consumers.
 *   GET /metrics  the same numbers in the Prometheus text exposition format 0.0.4.
 *   GET /health   200 "ok: N feeds running" when every feed runs, else 503 listing the feeds
 *                 that do not (and why): for load balancers and systemd/k8s probes.
 *   GET /         a short plain-text index of the above.
 *   HEAD on each of these; other known methods 405 (with Allow), unknown ones 501, any other
 *   path 404; malformed HTTP (HTTP/1.1 without Host, broken header lines) gets 400 and an
 *   unsupported version 505 from libmicrohttpd itself (strict mode).
 *
 * The feed threads never see this module: they only store counters (relaxed atomics, see
 * feed/uf_feed_stats.h). On each request the HTTP thread calls the owner's fill callback,
 * which copies those counters into a struct uf_status_snapshot with relaxed loads, then
 * renders from the copy. Nothing here takes a lock a feed thread could wait on. */
#ifndef UF_STATUS_H
#define UF_STATUS_H

#include <netinet/in.h>
#include <stdint.h>

#include "daemon/uf_config.h"
#include "feed/uf_feed_stats.h"

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
};

/* One feed, as copied on the HTTP thread. */
struct uf_status_feed {
	char name[UF_CFG_NAME_MAX]; /* feed name */
	char backend[24];           /* back end in use */
	enum uf_status_state state; /* lifecycle */
	char error[160];            /* last error, "" when none */
	struct uf_feed_stats stats; /* copy of the feed's counters (uf_feed_stats_read) */
	struct uf_status_ring ring; /* its ring */
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
	int nfeeds;                                    /* feeds[0..nfeeds) are valid */
	struct uf_status_feed feeds[UF_CFG_MAX_FEEDS]; /* per feed */
};

/* Fills `snap` (zeroed by the caller) on the HTTP thread. Must not block on a feed thread.
 * Returns 0, or -errno to answer 503. */
typedef int (*uf_status_fill_fn)(void *arg, struct uf_status_snapshot *snap);

struct uf_status_server; /* opaque */

/* Listens on `addr` (port 0 = any free port, see uf_status_port) and serves requests on one
 * libmicrohttpd thread created here, which inherits the caller's CPU affinity (call
 * uf_place_control_threads first). Returns 0, or -errno with a one-line reason in `err`. */
int uf_status_start(const struct sockaddr_in *addr, uf_status_fill_fn fill, void *arg,
                    struct uf_status_server **out, char *err, size_t errlen);

/* Port the server listens on (host order). */
uint16_t uf_status_port(const struct uf_status_server *s);

/* Requests that reached the handler (libmicrohttpd answers malformed HTTP itself). */
uint64_t uf_status_requests(const struct uf_status_server *s);

/* Stops the thread, closes the socket, frees `s`. NULL is fine. */
void uf_status_stop(struct uf_status_server *s);

/* Renderers, exposed for tests and `uringfeed --check-config`: return a malloc'ed string
 * (NUL-terminated) the caller frees, or NULL on allocation failure. */
char *uf_status_render_json(const struct uf_status_snapshot *snap);
char *uf_status_render_prometheus(const struct uf_status_snapshot *snap);
/* Plain text for /health; *code gets 200 when every feed runs, else 503. */
char *uf_status_render_health(const struct uf_status_snapshot *snap, unsigned *code);

/* "starting", "running", ... */
const char *uf_status_state_name(enum uf_status_state st);

#endif /* UF_STATUS_H */
