/* uf-bench e2e helpers (see e2e.h). */
#include "e2e.h"

#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/uf_time.h"
#include "bench.h"

int e2e_free_port(int socktype)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, socktype, 0), port;

	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &len) < 0) {
		port = -errno;
		close(fd);
		return port;
	}
	port = ntohs(a.sin_port);
	close(fd);
	return port;
}

int e2e_http_get(uint16_t port, const char *path, int timeout_ms, char **body)
{
	struct sockaddr_in a = {.sin_family = AF_INET,
	                        .sin_port = htons(port),
	                        .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	uint64_t end = uf_now_mono_ns() + (uint64_t)timeout_ms * 1000000ull;
	size_t cap = 1 << 16, len = 0;
	char req[256], *buf = NULL, *p;
	int fd, rc, code;

	*body = NULL;
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		rc = -errno;
		goto out_close;
	}
	snprintf(req, sizeof(req), "GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n", path);
	if (write(fd, req, strlen(req)) != (ssize_t)strlen(req)) {
		rc = -EIO;
		goto out_close;
	}
	buf = malloc(cap);
	if (!buf) {
		rc = -ENOMEM;
		goto out_close;
	}
	for (;;) { /* HTTP/1.0: the server closes after the body */
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		uint64_t now = uf_now_mono_ns();
		ssize_t n;
		if (now >= end) {
			rc = -ETIMEDOUT;
			goto out_free;
		}
		if (poll(&pfd, 1, (int)((end - now) / 1000000 + 1)) <= 0)
			continue;
		if (len + 1 == cap) {
			char *nb = realloc(buf, cap * 2);
			if (!nb) {
				rc = -ENOMEM;
				goto out_free;
			}
			buf = nb;
			cap *= 2;
		}
		n = read(fd, buf + len, cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = -errno;
			goto out_free;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
	p = strstr(buf, "\r\n\r\n");
	if (sscanf(buf, "HTTP/%*d.%*d %d", &code) != 1 || !p) {
		rc = -EPROTO;
		goto out_free;
	}
	memmove(buf, p + 4, strlen(p + 4) + 1);
	*body = buf;
	close(fd);
	return code;

out_free:
	free(buf);
out_close:
	close(fd);
	return rc;
}

static uint64_t jnum(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	return json_is_integer(v) && json_integer_value(v) > 0 ? (uint64_t)json_integer_value(v)
	                                                       : 0;
}

int e2e_status_read(uint16_t port, struct e2e_status *st)
{
	char *body;
	int code = e2e_http_get(port, "/status", 3000, &body);
	json_t *root, *feed, *lines, *line, *ring;
	json_error_t jerr;
	size_t i;

	memset(st, 0, sizeof(*st));
	if (code < 0)
		return code;
	if (code != 200) {
		free(body);
		return -EPROTO;
	}
	root = json_loads(body, 0, &jerr);
	free(body);
	feed = json_array_get(json_object_get(root, "feeds"), 0);
	if (!json_is_object(feed)) {
		json_decref(root);
		return -EPROTO;
	}
	st->messages = jnum(feed, "messages");
	st->gaps = jnum(feed, "gaps");
	st->rerequests = jnum(feed, "rerequests");
	st->gaps_unrecovered = jnum(feed, "gaps_unrecovered");
	st->messages_unrecovered = jnum(feed, "messages_unrecovered");
	st->queue_overflows = jnum(feed, "queue_overflows");
	st->cq_overflows = jnum(feed, "cq_overflows");
	st->batches = jnum(feed, "batches");
	st->busy_polls = jnum(feed, "busy_polls");
	st->busy_ns = jnum(feed, "busy_ns");
	st->sq_wakeups = jnum(feed, "sq_wakeups");
	st->ring_wakes = jnum(feed, "ring_wakes"); /* 0 from a daemon before issue 14 */
	st->ring_wakes_idle = jnum(feed, "ring_wakes_idle");
	st->ring_wakes_async = jnum(feed, "ring_wakes_async"); /* 0 from an older daemon */
	lines = json_object_get(feed, "lines");
	json_array_foreach(lines, i, line)
	{
		st->line_gaps += jnum(line, "gaps");
		st->line_enobufs += jnum(line, "enobufs");
		st->line_packets += jnum(line, "packets");
	}
	{
		json_t *lat = json_object_get(feed, "latency_ns");
		st->pub_count = jnum(lat, "count");
		st->pub_p50 = jnum(lat, "p50");
		st->pub_p99 = jnum(lat, "p99");
		st->pub_p999 = jnum(lat, "p99_9");
		st->pub_max = jnum(lat, "max");
	}
	ring = json_object_get(feed, "ring");
	st->ring_sequence = jnum(ring, "sequence");
	json_decref(root);
	return 0;
}

/* Fields 14 and 15 of a stat line (utime, stime), after the parenthesised comm: their sum into
 * *ticks, and stime alone into *sys (may be NULL). */
static int stat_times(const char *path, uint64_t *ticks, uint64_t *sys)
{
	char buf[1024], *p;
	unsigned long long ut, st;
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		return -errno;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')');
	if (!p ||
	    sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
		return -EPROTO;
	*ticks = ut + st;
	if (sys)
		*sys = st;
	return 0;
}

static uint64_t ticks_ns(uint64_t ticks)
{
	long hz = sysconf(_SC_CLK_TCK);
	return ticks * (1000000000ull / (uint64_t)(hz > 0 ? hz : 100));
}

int e2e_proc_cpu_ns(pid_t pid, uint64_t *ns)
{
	char path[64];
	uint64_t ticks;
	int rc;

	/* /proc/PID/stat sums every thread of the group, the SQPOLL thread (iou-sqp) too:
	 * it is a thread of the process. */
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	rc = stat_times(path, &ticks, NULL);
	if (rc < 0)
		return rc;
	*ns = ticks_ns(ticks);
	return 0;
}

int e2e_thread_sys_ns(pid_t pid, pid_t tid, uint64_t *ns)
{
	char path[96];
	uint64_t ticks, sys;
	int rc;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)pid, (int)tid);
	rc = stat_times(path, &ticks, &sys);
	if (rc < 0)
		return rc;
	*ns = ticks_ns(sys);
	return 0;
}

/* Sums column `cpu` of a /proc/interrupts-style table (a header of "CPUn" names, then one
 * "label: count count ..." row per source; rows with fewer counts, such as ERR and MIS, are
 * system-wide and skipped). `row` (may be NULL) names one row whose count goes to *one. */
static int irq_table_sum(const char *path, int cpu, const char *row, uint64_t *sum, uint64_t *one)
{
	char line[16384], want[16]; /* a row is ~11 bytes a CPU: 1,400 CPUs */
	int col = -1, ncol = 0;
	FILE *f = fopen(path, "r");

	if (!f)
		return -errno;
	snprintf(want, sizeof(want), "CPU%d", cpu);
	*sum = 0;
	if (one)
		*one = 0;
	if (fgets(line, sizeof(line), f))
		for (char *sv = NULL, *t = strtok_r(line, " \t\n", &sv); t;
		     t = strtok_r(NULL, " \t\n", &sv), ncol++)
			if (!strcmp(t, want))
				col = ncol;
	while (col >= 0 && fgets(line, sizeof(line), f)) {
		char *p = strchr(line, ':'), *end;
		unsigned long long v = 0;
		int i;

		if (!p)
			continue;
		*p = '\0';
		for (i = 0, p++; i <= col; i++, p = end) {
			v = strtoull(p, &end, 10);
			if (end == p)
				break;
		}
		if (i <= col)
			continue; /* a system-wide row */
		*sum += v;
		if (row && one) {
			char *lab = line;
			while (*lab == ' ')
				lab++;
			if (!strcmp(lab, row))
				*one = v;
		}
	}
	fclose(f);
	return col < 0 ? -ENOENT : 0;
}

int e2e_cpu_irqs(int cpu, struct e2e_irqs *q)
{
	/* "RES" is x86's row of rescheduling IPIs (arm64 numbers its IPIs: resched stays 0) */
	int rc = irq_table_sum("/proc/interrupts", cpu, "RES", &q->hard, &q->resched);

	if (rc == 0)
		rc = irq_table_sum("/proc/softirqs", cpu, "NET_RX", &q->soft, &q->net_rx);
	return rc;
}

void e2e_sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

int e2e_write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	int rc = 0;

	if (!f)
		return -errno;
	if (fputs(text, f) < 0)
		rc = -EIO;
	if (fclose(f) != 0 && rc == 0)
		rc = -errno;
	return rc;
}

int e2e_gnuplot(const char *dir, const char *script, int timeout_ms)
{
	pid_t pid = fork();
	int st;

	if (pid < 0)
		return -errno;
	if (pid == 0) {
		if (chdir(dir) < 0)
			_exit(126);
		execlp("gnuplot", "gnuplot", script, (char *)NULL);
		_exit(127);
	}
	st = uf_bench_wait_child(pid, timeout_ms);
	if (st < 0) {
		fprintf(stderr, "uf-bench e2e: gnuplot %s: killed after %d ms\n", script,
		        timeout_ms);
		return -ETIMEDOUT;
	}
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "uf-bench e2e: gnuplot %s failed (status %d%s)\n", script,
		        WIFEXITED(st) ? WEXITSTATUS(st) : -1,
		        WIFEXITED(st) && WEXITSTATUS(st) == 127
		            ? ": not installed? apt-get install gnuplot-nox"
		            : "");
		return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
	}
	return 0;
}

/* ---- /metrics histograms ---------------------------------------------------------------- */

/* Adds one "_bucket" line's le and value to `h` (le "+Inf": the total). */
static void hist_add_bucket(struct e2e_hist *h, const char *le, uint64_t v)
{
	if (strcmp(le, "+Inf") == 0) {
		h->count = v;
		return;
	}
	if (h->nb < E2E_HIST_MAXB) {
		h->le_ns[h->nb] = (uint64_t)(strtod(le, NULL) * 1e9 + 0.5);
		h->cum[h->nb++] = v;
	}
}

const char *const e2e_stage_names[E2E_NSTAGES] = {"receive", "arbitration", "decode",
                                                  "books",   "ring",        "image"};

/* The histogram a metric line belongs to (NULL: another one). `lab` points after '{'. */
static struct e2e_hist *hist_of(struct e2e_hists *h, const char *name, size_t nlen, const char *lab)
{
	if (nlen == strlen("uringfeed_wire_to_publish_seconds") &&
	    strncmp(name, "uringfeed_wire_to_publish_seconds", nlen) == 0)
		return &h->pub;
	if (nlen == strlen("uringfeed_stage_seconds") &&
	    strncmp(name, "uringfeed_stage_seconds", nlen) == 0) {
		const char *s = strstr(lab, "stage=\"");
		for (int i = 0; s && i < E2E_NSTAGES; i++) {
			size_t k = strlen(e2e_stage_names[i]);
			if (strncmp(s + 7, e2e_stage_names[i], k) == 0 && s[7 + k] == '"')
				return &h->stage[i];
		}
	}
	return NULL;
}

int e2e_metrics_read(uint16_t port, struct e2e_hists *h)
{
	char *body, *line, *save = NULL;
	int code = e2e_http_get(port, "/metrics", 3000, &body);

	memset(h, 0, sizeof(*h));
	if (code < 0)
		return code;
	if (code != 200) {
		free(body);
		return -EPROTO;
	}
	/* One feed per e2e daemon: every line of these families is feed 0's. */
	for (line = strtok_r(body, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		const char *brace = strchr(line, '{'), *close, *val;
		struct e2e_hist *hh;
		size_t nlen;
		if (line[0] == '#' || !brace || !(close = strchr(brace, '}')))
			continue;
		val = close + 1;
		nlen = (size_t)(brace - line);
		if (nlen > 7 && strncmp(brace - 7, "_bucket", 7) == 0) {
			const char *le = strstr(brace, "le=\"");
			char lebuf[32];
			size_t ll;
			if (!le || !(hh = hist_of(h, line, nlen - 7, brace + 1)))
				continue;
			le += 4;
			ll = strcspn(le, "\"");
			if (ll >= sizeof(lebuf))
				continue;
			memcpy(lebuf, le, ll);
			lebuf[ll] = '\0';
			hist_add_bucket(hh, lebuf, strtoull(val, NULL, 10));
		} else if (nlen > 4 && strncmp(brace - 4, "_sum", 4) == 0) {
			if ((hh = hist_of(h, line, nlen - 4, brace + 1)))
				hh->sum_ns = strtod(val, NULL) * 1e9;
		}
	}
	free(body);
	h->ok = h->pub.nb > 0 && h->stage[0].nb > 0;
	return h->ok ? 0 : -EPROTO;
}

void e2e_hist_diff(const struct e2e_hist *a, const struct e2e_hist *b, struct e2e_hist *d)
{
	*d = *b;
	if (a->nb != b->nb)
		return; /* a fresh daemon (or none before): b alone */
	for (int i = 0; i < b->nb; i++)
		d->cum[i] = b->cum[i] - a->cum[i];
	d->count = b->count - a->count;
	d->sum_ns = b->sum_ns - a->sum_ns;
}

uint64_t e2e_hist_quantile(const struct e2e_hist *h, double q)
{
	double want = q * (double)h->count;
	uint64_t prev_cum = 0, prev_le = 0;

	if (!h->count)
		return 0;
	for (int i = 0; i < h->nb; i++) {
		if ((double)h->cum[i] >= want && h->cum[i] > prev_cum) {
			double f = (want - (double)prev_cum) / (double)(h->cum[i] - prev_cum);
			return prev_le + (uint64_t)(f * (double)(h->le_ns[i] - prev_le));
		}
		prev_cum = h->cum[i];
		prev_le = h->le_ns[i];
	}
	return prev_le;
}
