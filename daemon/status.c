/* Status endpoint: the libmicrohttpd glue around the renderers of status_render.c.
 * See status.h. */
#include "daemon/status.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <microhttpd.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/uf_atomic.h"
#include "common/uf_err.h"
#include "common/uf_time.h"
#include "daemon/conn_guard.h"
#include "daemon/log.h"

/* Limits of the main endpoint: a client that opens connections and trickles bytes holds a
 * slot until it goes quiet for CONN_TIMEOUT_S; PER_IP caps what one address can hold, so
 * other addresses (Prometheus, the prober) keep room below CONN_LIMIT. The probe endpoint
 * (/health and /ready only, its own thread and port) has small limits of its own: the
 * main port can be flooded without taking liveness and readiness away. A local user has
 * many addresses (127.0.0.0/8): past KEEP connections the oldest one is evicted for each
 * new one (conn_guard.h), so a flood of slow clients can never hold every slot; the
 * libmicrohttpd limit (CONN_LIMIT) is above KEEP so that the new connection is taken while
 * the evicted one is being closed. */
#define MAIN_CONN_LIMIT      256
#define MAIN_CONN_KEEP       192
#define MAIN_PER_IP_LIMIT    16
#define MAIN_CONN_TIMEOUT_S  5
#define PROBE_CONN_LIMIT     32
#define PROBE_CONN_KEEP      24
#define PROBE_PER_IP_LIMIT   8
#define PROBE_CONN_TIMEOUT_S 2
_Static_assert(MAIN_CONN_LIMIT <= UF_CONN_GUARD_MAX, "every connection tracked");

struct uf_status_server {
	struct MHD_Daemon *mhd;   /* libmicrohttpd daemon with its own polling thread */
	struct MHD_Daemon *probe; /* the probe endpoint's daemon, NULL when not started */
	int fd;                   /* listening socket (ours: MHD closes it at stop) */
	uint16_t port;            /* bound port, host order */
	uint16_t probe_port;      /* probe endpoint port, 0 when none */
	uf_status_fill_fn fill;   /* owner's snapshot callback */
	void *arg;                /* its argument */
	uint64_t requests;        /* requests answered (HTTP thread writes, others read relaxed) */
	struct uf_status_guard {
		struct uf_conn_guard g;    /* its connections (only its MHD thread touches it) */
		struct uf_log_limit limit; /* eviction log lines */
		const char *what;          /* "status" or "probe" */
		uint64_t evicted;          /* g.evicted, for other threads (relaxed) */
	} guard_main, guard_probe;
};

/* ---- connection guard (libmicrohttpd's polling thread) ---- */

/* Accept policy: called for each new connection after the per-address cap. At the guard's
 * limit, the oldest connection is shut down (libmicrohttpd sees it closed on its next poll and
 * tells guard_notify) and the new one is taken. */
static enum MHD_Result guard_admit(void *cls, const struct sockaddr *addr, socklen_t addrlen)
{
	struct uf_status_guard *gd = cls;
	int fd = uf_conn_guard_admit(&gd->g);
	if (fd >= 0) {
		shutdown(fd, SHUT_RDWR);
		uf_store_relaxed_u64(&gd->evicted, gd->g.evicted);
		uf_log_limited(&gd->limit, uf_now_mono_ns(), UF_LOG_WARN,
		               "%s: %u connections open: the oldest was closed to take a new one "
		               "(%llu so far; slow or idle clients)",
		               gd->what, gd->g.n, (unsigned long long)gd->g.evicted);
	}
	return MHD_YES;
}

static void guard_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
                         enum MHD_ConnectionNotificationCode toe)
{
	struct uf_status_guard *gd = cls;
	const union MHD_ConnectionInfo *ci =
	    MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	if (!ci)
		return;
	if (toe == MHD_CONNECTION_NOTIFY_STARTED)
		(void)uf_conn_guard_opened(&gd->g, ci->connect_fd, uf_now_mono_ns());
	else
		uf_conn_guard_closed(&gd->g, ci->connect_fd);
}

static void guard_init(struct uf_status_guard *gd, const char *what, uint32_t keep)
{
	uf_conn_guard_init(&gd->g, keep);
	gd->limit.burst = 3;
	gd->limit.per_min = 6;
	gd->what = what;
}

/* ---- HTTP ---- */

static enum MHD_Result reply(struct MHD_Connection *conn, unsigned code, const char *type,
                             char *body, const char *allow)
{
	struct MHD_Response *resp;
	enum MHD_Result r;

	/* The body is ours (malloc'ed): libmicrohttpd frees it with the response. */
	resp = MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE);
	if (!resp) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	if (allow)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, allow);
	r = MHD_queue_response(conn, code, resp);
	MHD_destroy_response(resp);
	return r;
}

static char *textf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *textf(const char *fmt, ...)
{
	va_list ap;
	char *s = NULL;

	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		s = NULL;
	va_end(ap);
	return s ? s : strdup("");
}

/* Process metrics from /proc (HTTP thread, cold): the fields Prometheus client libraries
 * export as process_*. Leaves p->present 0 when /proc/self/stat cannot be read. */
static void read_process(struct uf_status_process *p)
{
	char buf[1024];
	unsigned long long utime, stime, start, vsize;
	long long rss;
	long tck = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
	FILE *fp = fopen("/proc/self/stat", "re");
	size_t n;
	char *q;

	if (!fp)
		return;
	n = fread(buf, 1, sizeof(buf) - 1, fp);
	fclose(fp);
	buf[n] = '\0';
	/* comm may hold spaces and parentheses: fields start after the last ')'. */
	q = strrchr(buf, ')');
	if (!q || tck <= 0 ||
	    sscanf(q + 2,
	           "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %*d %*d %*d %*d %*d %*d "
	           "%llu %llu %lld",
	           &utime, &stime, &start, &vsize, &rss) != 5)
		return;
	p->cpu_seconds = (double)(utime + stime) / (double)tck;
	p->virtual_bytes = vsize;
	p->resident_bytes = rss > 0 ? (uint64_t)rss * (uint64_t)page : 0;
	fp = fopen("/proc/stat", "re");
	if (fp) {
		unsigned long long btime = 0;
		while (fgets(buf, sizeof(buf), fp))
			if (sscanf(buf, "btime %llu", &btime) == 1)
				break;
		fclose(fp);
		p->start_time_s = (double)btime + (double)start / (double)tck;
	}
	DIR *d = opendir("/proc/self/fd");
	if (d) {
		struct dirent *e;
		uint64_t k = 0;
		while ((e = readdir(d)))
			k += e->d_name[0] != '.';
		closedir(d);
		p->open_fds = k > 0 ? k - 1 : 0; /* minus the directory's own fd */
	}
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
		p->max_fds = rl.rlim_cur == RLIM_INFINITY ? 0 : (uint64_t)rl.rlim_cur;
	p->present = 1;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *conn, const char *url,
                              const char *method, const char *version, const char *upload_data,
                              size_t *upload_data_size, void **req_cls)
{
	struct uf_status_server *s = cls;
	struct uf_status_snapshot *snap;
	enum { PAGE_INDEX, PAGE_STATUS, PAGE_METRICS, PAGE_HEALTH, PAGE_READY } page;
	unsigned code = MHD_HTTP_OK;
	char *body;

	/* Count every request once (the first call for it). */
	if (*req_cls == NULL) {
		*req_cls = s;
		/* Only the HTTP thread writes it; relaxed: a monitoring number, orders nothing. */
		uf_store_relaxed_u64(&s->requests, s->requests + 1);
	}
	if (strcmp(url, "/status") == 0)
		page = PAGE_STATUS;
	else if (strcmp(url, "/metrics") == 0)
		page = PAGE_METRICS;
	else if (strcmp(url, "/health") == 0)
		page = PAGE_HEALTH;
	else if (strcmp(url, "/ready") == 0)
		page = PAGE_READY;
	else if (strcmp(url, "/") == 0)
		page = PAGE_INDEX;
	else
		return reply(conn, MHD_HTTP_NOT_FOUND, "text/plain; charset=utf-8",
		             textf("404 not found: %.100s (try /status, /metrics, /health or "
		                   "/ready)\n",
		                   url),
		             NULL);
	if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0) {
		static const char *const known[] = {"POST",    "PUT",   "DELETE", "PATCH",
		                                    "OPTIONS", "TRACE", "CONNECT"};
		int k = 0;
		for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
			k |= strcmp(method, known[i]) == 0;
		/* RFC 9110: 405 for a method this resource does not allow, 501 for one the
		 * server does not know at all. */
		if (!k)
			return reply(conn, MHD_HTTP_NOT_IMPLEMENTED, "text/plain; charset=utf-8",
			             textf("501 unknown method: %.20s\n", method), NULL);
		return reply(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain; charset=utf-8",
		             textf("405 method not allowed: %.20s (GET or HEAD)\n", method),
		             "GET, HEAD");
	}
	if (page == PAGE_INDEX)
		return reply(conn, MHD_HTTP_OK, "text/plain; charset=utf-8",
		             textf("uringfeed status endpoint\n"
		                   "  GET /status   JSON: counters, latency, rings, consumers\n"
		                   "  GET /metrics  Prometheus text format\n"
		                   "  GET /health   200 when every feed runs, else 503\n"
		                   "  GET /ready    200 when every feed has fresh data, else 503 "
		                   "and why\n"),
		             NULL);

	snap = calloc(1, sizeof(*snap));
	if (!snap)
		return reply(conn, MHD_HTTP_SERVICE_UNAVAILABLE, "text/plain; charset=utf-8",
		             textf("503 out of memory\n"), NULL);
	if (s->fill(s->arg, snap) != 0) {
		free(snap);
		return reply(conn, MHD_HTTP_SERVICE_UNAVAILABLE, "text/plain; charset=utf-8",
		             textf("503 status not available yet\n"), NULL);
	}
	if (page == PAGE_STATUS || page == PAGE_METRICS)
		read_process(&snap->process);
	switch (page) {
	case PAGE_STATUS:
		body = uf_status_render_json(snap);
		break;
	case PAGE_METRICS:
		body = uf_status_render_prometheus(snap);
		break;
	case PAGE_READY:
		body = uf_status_render_ready(snap, &code);
		break;
	default:
		body = uf_status_render_health(snap, &code);
		break;
	}
	free(snap);
	if (!body)
		return reply(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "text/plain; charset=utf-8",
		             textf("500 could not render\n"), NULL);
	if (page == PAGE_STATUS) {
		/* json_dumps output has no trailing newline; curl users appreciate one. */
		size_t n = strlen(body);
		char *nb = realloc(body, n + 2);
		if (nb) {
			body = nb;
			body[n] = '\n';
			body[n + 1] = '\0';
		}
	}
	return reply(conn, code,
	             page == PAGE_STATUS    ? "application/json"
	             : page == PAGE_METRICS ? "text/plain; version=0.0.4; charset=utf-8"
	                                    : "text/plain; charset=utf-8",
	             body, NULL);
}

/* The probe endpoint: /health and /ready only (404 for the rest: /status and /metrics
 * render tens of KiB, they belong on the main port). */
static enum MHD_Result handle_probe(void *cls, struct MHD_Connection *conn, const char *url,
                                    const char *method, const char *version,
                                    const char *upload_data, size_t *upload_data_size,
                                    void **req_cls)
{
	if (strcmp(url, "/health") != 0 && strcmp(url, "/ready") != 0)
		return reply(conn, MHD_HTTP_NOT_FOUND, "text/plain; charset=utf-8",
		             textf("404 not found: %.100s (the probe port serves /health and "
		                   "/ready)\n",
		                   url),
		             NULL);
	return handle(cls, conn, url, method, version, upload_data, upload_data_size, req_cls);
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	char msg[256];
	size_t n;

	vsnprintf(msg, sizeof(msg), fmt, ap);
	n = strlen(msg);
	while (n && msg[n - 1] == '\n')
		msg[--n] = '\0';
	uf_log_debug("status: %s", msg);
}

int uf_status_start(const struct sockaddr_in *addr, uf_status_fill_fn fill, void *arg,
                    struct uf_status_server **out, char *err, size_t errlen)
{
	struct uf_status_server *s;
	struct sockaddr_in bound;
	socklen_t blen = sizeof(bound);
	char host[INET_ADDRSTRLEN];
	int one = 1, r;

	inet_ntop(AF_INET, &addr->sin_addr, host, sizeof(host));
	s = calloc(1, sizeof(*s));
	if (!s) {
		snprintf(err, errlen, "status: out of memory");
		return -ENOMEM;
	}
	s->fill = fill;
	s->arg = arg;
	/* Our own socket, so a bind failure says which address and why. */
	s->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s->fd < 0) {
		r = -errno;
		uf_err_rc(err, errlen, -errno, "status: socket");
		goto out_free;
	}
	setsockopt(s->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(s->fd, (const struct sockaddr *)addr, sizeof(*addr)) != 0 ||
	    listen(s->fd, 64) != 0) {
		r = -errno;
		uf_err_rc(err, errlen, -errno, "status: cannot listen on %s:%u", host,
		          ntohs(addr->sin_port));
		goto out_close;
	}
	getsockname(s->fd, (struct sockaddr *)&bound, &blen);
	s->port = ntohs(bound.sin_port);
	/* STRICT_FOR_CLIENT 1: refuse (400) what RFC 7230 forbids, e.g. HTTP/1.1 without Host
	 * or header lines without a colon, instead of guessing. */
	guard_init(&s->guard_main, "status", MAIN_CONN_KEEP);
	s->mhd = MHD_start_daemon(
	    MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_USE_ERROR_LOG, 0, guard_admit,
	    &s->guard_main, handle, s, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
	    MHD_OPTION_LISTEN_SOCKET, s->fd, MHD_OPTION_CONNECTION_LIMIT, (unsigned)MAIN_CONN_LIMIT,
	    MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)MAIN_PER_IP_LIMIT,
	    MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)MAIN_CONN_TIMEOUT_S,
	    MHD_OPTION_STRICT_FOR_CLIENT, (int)1, MHD_OPTION_NOTIFY_CONNECTION, guard_notify,
	    &s->guard_main, MHD_OPTION_END);
	if (!s->mhd) {
		r = -EIO;
		snprintf(err, errlen, "status: libmicrohttpd could not start on %s:%u", host,
		         s->port);
		goto out_close;
	}
	uf_log_info("status: serving http://%s:%u/status and /metrics", host, s->port);
	*out = s;
	return 0;

out_close:
	close(s->fd);
out_free:
	free(s);
	return r;
}

int uf_status_start_probe(struct uf_status_server *s, const struct sockaddr_in *addr, char *err,
                          size_t errlen)
{
	struct sockaddr_in bound;
	socklen_t blen = sizeof(bound);
	char host[INET_ADDRSTRLEN];
	int one = 1, r;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	inet_ntop(AF_INET, &addr->sin_addr, host, sizeof(host));
	if (fd < 0)
		return uf_err_rc(err, errlen, -errno, "status: probe socket");
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (const struct sockaddr *)addr, sizeof(*addr)) != 0 || listen(fd, 16) != 0) {
		r = uf_err_rc(err, errlen, -errno, "status: cannot listen on %s:%u (probe_listen)",
		              host, ntohs(addr->sin_port));
		close(fd);
		return r;
	}
	getsockname(fd, (struct sockaddr *)&bound, &blen);
	guard_init(&s->guard_probe, "status probe", PROBE_CONN_KEEP);
	s->probe = MHD_start_daemon(
	    MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_USE_ERROR_LOG, 0, guard_admit,
	    &s->guard_probe, handle_probe, s, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
	    MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_CONNECTION_LIMIT, (unsigned)PROBE_CONN_LIMIT,
	    MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)PROBE_PER_IP_LIMIT,
	    MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)PROBE_CONN_TIMEOUT_S,
	    MHD_OPTION_STRICT_FOR_CLIENT, (int)1, MHD_OPTION_NOTIFY_CONNECTION, guard_notify,
	    &s->guard_probe, MHD_OPTION_END);
	if (!s->probe) {
		close(fd);
		snprintf(err, errlen, "status: libmicrohttpd could not start on %s:%u (probe)",
		         host, ntohs(bound.sin_port));
		return -EIO;
	}
	s->probe_port = ntohs(bound.sin_port);
	uf_log_info("status: probe endpoint http://%s:%u/health and /ready", host, s->probe_port);
	return 0;
}

uint16_t uf_status_port(const struct uf_status_server *s)
{
	return s->port;
}

uint16_t uf_status_probe_port(const struct uf_status_server *s)
{
	return s->probe_port;
}

uint64_t uf_status_requests(const struct uf_status_server *s)
{
	return uf_load_relaxed_u64(&s->requests);
}

uint64_t uf_status_evicted(const struct uf_status_server *s)
{
	return uf_load_relaxed_u64(&s->guard_main.evicted) +
	       uf_load_relaxed_u64(&s->guard_probe.evicted);
}

void uf_status_stop(struct uf_status_server *s)
{
	if (!s)
		return;
	if (s->probe)
		MHD_stop_daemon(s->probe);
	MHD_stop_daemon(s->mhd);
	/* MHD_OPTION_LISTEN_SOCKET: the daemon closes a socket it was given at stop. */
	free(s);
}
