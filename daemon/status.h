/* Status endpoint: health and counters over HTTP (libmicrohttpd), for operators and Prometheus.
 *
 *   GET /status   one JSON document (jansson): per feed its counters, per line, decode errors
 *                 by kind, latency quantiles, the ring's sequence and its consumers.
 *   GET /metrics  the same numbers in the Prometheus text exposition format 0.0.4.
 *   GET /health   200 "ok: N feeds running" when every feed runs, else 503 listing the feeds
 *                 that do not (and why): for load balancers and systemd/k8s probes.
 *   GET /ready    200 "ready: N feeds" when every feed has fresh data, else 503 with one
 *                 line per reason: no data yet, a line silent past status.ready_silence_ms
 *                 during the session, books stale, gap recovery in progress (pure decision:
 *                 uf_status_feed_not_ready). /health stays the liveness check.
 *   GET /         a short plain-text index of the above.
 *
 * Slow clients: the main endpoint caps connections per client address and drops idle ones
 * (limits in status.c), so one address that opens connections and trickles bytes cannot take
 * the endpoint from the others. For probes that must answer whatever the main port suffers,
 * uf_status_start_probe opens a second, small endpoint ("status.probe_listen", its own
 * libmicrohttpd thread and limits) serving only /health and /ready.
 *   HEAD on each of these; other known methods 405 (with Allow), unknown ones 501, any other
 *   path 404; malformed HTTP (HTTP/1.1 without Host, broken header lines) gets 400 and an
 *   unsupported version 505 from libmicrohttpd itself (strict mode).
 *
 * The feed threads never see this module: they only store counters (relaxed atomics, see
 * feed/uf_feed_stats.h). On each request the HTTP thread calls the owner's fill callback,
 * which copies those counters into a struct uf_status_snapshot with relaxed loads, then
 * renders from the copy (pure renderers: status_render.h). Nothing here takes a lock a feed
 * thread could wait on. */
#ifndef UF_STATUS_H
#define UF_STATUS_H

#include <netinet/in.h>
#include <stdint.h>

#include "daemon/status_render.h"

/* Fills `snap` (zeroed by the caller) on the HTTP thread. Must not block on a feed thread.
 * Returns 0, or -errno to answer 503. */
typedef int (*uf_status_fill_fn)(void *arg, struct uf_status_snapshot *snap);

struct uf_status_server; /* opaque */

/* Listens on `addr` (port 0 = any free port, see uf_status_port) and serves requests on one
 * libmicrohttpd thread created here, which inherits the caller's CPU affinity (call
 * uf_place_control_threads first). Returns 0, or -errno with a one-line reason in `err`. */
int uf_status_start(const struct sockaddr_in *addr, uf_status_fill_fn fill, void *arg,
                    struct uf_status_server **out, char *err, size_t errlen);

/* Opens the probe endpoint on `addr` (port 0 = any): /health and /ready only, served by a
 * second libmicrohttpd thread with its own connection budget. Returns 0, or -errno with a
 * reason in `err` (the main endpoint keeps running). */
int uf_status_start_probe(struct uf_status_server *s, const struct sockaddr_in *addr, char *err,
                          size_t errlen);

/* Port the server listens on (host order). */
uint16_t uf_status_port(const struct uf_status_server *s);

/* Port of the probe endpoint, 0 when it was not started. */
uint16_t uf_status_probe_port(const struct uf_status_server *s);

/* Requests that reached the handler (libmicrohttpd answers malformed HTTP itself). */
uint64_t uf_status_requests(const struct uf_status_server *s);

/* Connections closed (main and probe endpoints) to make room for a new client when the
 * endpoint was full (daemon/conn_guard.h). */
uint64_t uf_status_evicted(const struct uf_status_server *s);

/* Stops the thread, closes the socket, frees `s`. NULL is fine. */
void uf_status_stop(struct uf_status_server *s);

#endif /* UF_STATUS_H */
