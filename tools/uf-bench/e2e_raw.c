/* uf-bench e2e: the raw-receive baseline (see e2e_raw.h). The sockets are the feed's own
 * (feed/mcast.c uf_mcast_open_rx: 16 MiB receive buffer, joined on 127.0.0.1) and io_uring,
 * recvmmsg and epoll receive through the feed's own back ends (feed/ingest.h, with the
 * daemon's default buffers and SQPOLL idle), so the baseline and the feed cannot drift
 * apart; recvmsg-busy, which the feed has no back end for, is a plain loop here. What it
 * does with a datagram: read the MoldUDP64 header (session, sequence, count), keep the first
 * copy of each sequence, and store one latency sample per message (read time, taken once
 * per received batch, minus the datagram's kernel timestamp). */
#include "bench.h"
#include "e2e_raw.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/uf_time.h"
#include "feed/feed_log.h"
#include "feed/ingest.h"
#include "feed/mcast.h"
#include "feed/uf_feed.h"

#define RAW_RCVBUF        (16 << 20) /* feed.c UF_FEED_RCVBUF */
#define RAW_BUFS          4096       /* the daemon's default buffers.count */
#define RAW_BUF_SIZE      2048       /* the daemon's default buffers.size */
#define RAW_SQ_IDLE_MS    1000       /* the daemon's default SQPOLL idle */
#define RAW_EPOLL_WAIT_MS 10         /* epoll: longest sleep before `stop` is looked at */

static const char *const raw_names[RAW_COUNT] = {
    [RAW_URING_SQPOLL] = "io_uring+SQPOLL", [RAW_URING] = "io_uring",
    [RAW_RECVMMSG] = "recvmmsg-busy",       [RAW_EPOLL] = "epoll",
    [RAW_RECVMSG] = "recvmsg-busy",
};

enum raw_kind e2e_raw_for(enum backend be)
{
	switch (e2e_backend_feed(be)) { /* a variant (journal, capture, pause): its engine's */
	case UF_BACKEND_IO_URING:
		return RAW_URING_SQPOLL;
	case UF_BACKEND_IO_URING_NOSQPOLL:
		return RAW_URING;
	case UF_BACKEND_RECVMMSG:
		return RAW_RECVMMSG;
	default:
		return RAW_EPOLL;
	}
}

const char *e2e_raw_name(enum raw_kind k)
{
	return k < RAW_COUNT ? raw_names[k] : "?";
}

int e2e_raw_parse(const char *s, int *kind)
{
	if (!strcmp(s, "same")) {
		*kind = -1;
		return 0;
	}
	for (int k = 0; k < RAW_COUNT; k++)
		if (!strcmp(s, raw_names[k])) {
			*kind = k;
			return 0;
		}
	return -EINVAL;
}

struct rx {
	const struct raw_args *a;
	struct rawctl *c;
	uint64_t next; /* next new sequence */
};

/* One datagram: `rx` its kernel timestamp, `now` when it was read. */
static void rx_datagram(struct rx *x, const uint8_t *p, size_t len, uint64_t rx, uint64_t now)
{
	struct rawctl *c = x->c;
	uint64_t seq, lat, b;
	uint16_t count;

	if (len < 20 || memcmp(p, x->a->session, 10) != 0)
		return; /* another session's (a previous step's end of session) */
	memcpy(&seq, p + 10, 8);
	seq = be64toh(seq);
	count = (uint16_t)(p[18] << 8 | p[19]);
	if (count == 0 || count == 0xFFFF)
		return; /* heartbeat, end of session */
	if (seq + count <= x->next)
		return; /* the other line's copy, or an older sequence */
	x->next = seq + count;
	c->datagrams++;
	lat = now >= rx ? now - rx : 0; /* read before rx_ts (clocks): 0 */
	for (unsigned i = 0; i < count && c->nsamples < x->a->cap; i++)
		x->a->samples[c->nsamples++] = lat;
	b = e2e_burst_of(seq, c->burst_per);
	if (b < RAW_MAX_BURSTS) {
		if (!c->burst_first_rx[b] || rx < c->burst_first_rx[b])
			c->burst_first_rx[b] = rx;
		c->burst_last_rd[b] = now;
		c->burst_msgs[b] += count;
		if (b + 1 > c->nbursts)
			c->nbursts = b + 1;
	}
	__atomic_store_n(&c->messages, c->messages + count, __ATOMIC_RELEASE);
}

static int done(const struct rx *x)
{
	return __atomic_load_n(&x->c->stop, __ATOMIC_ACQUIRE) ||
	       (x->c->want && x->c->messages >= x->c->want);
}

/* The kernel timestamp and drop total of one received message's control data. */
static uint64_t cmsg_rx(struct msghdr *h, struct rawctl *c)
{
	uint64_t rx = 0;
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(h); cm; cm = CMSG_NXTHDR(h, cm)) {
		if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_TIMESTAMPNS) {
			struct timespec ts;
			memcpy(&ts, CMSG_DATA(cm), sizeof(ts));
			rx = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
		} else if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SO_RXQ_OVFL) {
			uint32_t d;
			memcpy(&d, CMSG_DATA(cm), sizeof(d));
			if (d > c->kernel_drops)
				c->kernel_drops = d; /* per socket total; the larger one is kept */
		}
	}
	return rx;
}

/* ---- the receive loops ---------------------------------------------------------------- */

/* The feed's back end that the raw method `k` reads with (RAW_RECVMSG has none). */
static enum uf_backend raw_backend(enum raw_kind k)
{
	switch (k) {
	case RAW_URING_SQPOLL:
		return UF_BACKEND_IO_URING;
	case RAW_URING:
		return UF_BACKEND_IO_URING_NOSQPOLL;
	case RAW_RECVMMSG:
		return UF_BACKEND_RECVMMSG;
	default:
		return UF_BACKEND_EPOLL;
	}
}

/* The back ends' setup lines: warnings (a refused kernel feature) are the raw receiver's, said
 * as such; the setup decisions a daemon logs at info level are not news here. */
static void raw_log(void *ctx, int level, const char *line)
{
	(void)ctx;
	if (level <= UF_FEED_LOG_WARN)
		fprintf(stderr, "uf-bench e2e: raw receiver: %s\n", line);
}

/* io_uring, recvmmsg and epoll: feed/ingest.c's receive with the feed's defaults (4096
 * buffers of 2048 bytes, SQPOLL idle 1 s, the SQ thread on a->sq_cpu), the very code the
 * feed thread runs. A back end the kernel refuses is an error here, not a fallback: the
 * baseline must be the method it is named for. */
static int loop_ingest(struct rx *x, int *fd, char *err, size_t errlen)
{
	static struct uf_feed_line_stats st[2]; /* the receiver's own counters (drops) */
	static struct uf_feed_stats fst;
	struct uf_feed_line_stats *stp[2] = {&st[0], &st[1]};
	struct uf_ingest_params p = {
	    .backend = raw_backend(x->a->kind),
	    .sqpoll_cpu = x->a->sq_cpu,
	    .sqpoll_idle_ms = RAW_SQ_IDLE_MS,
	    .numa_node = -1,
	    .buf_count = RAW_BUFS,
	    .buf_size = RAW_BUF_SIZE,
	};
	static struct uf_ingest ig; /* ~14 KiB of recvmmsg vectors: not on the stack */
	struct uf_pkt pkts[UF_INGEST_BATCH];
	int rc;

	uf_feed_set_log(raw_log, NULL); /* the forked receiver's own copy of the hook */
	rc = uf_ingest_open(&ig, &p, fd, 2, stp, &fst, err, errlen);
	if (rc < 0)
		return rc;
	if (ig.backend != p.backend) {
		snprintf(err, errlen, "%s unavailable (the feed would fall back to %s)",
		         uf_backend_name(p.backend), uf_ingest_backend(&ig));
		uf_ingest_close(&ig);
		return -EOPNOTSUPP;
	}
	__atomic_store_n(&x->c->ready, 1, __ATOMIC_RELEASE);
	while (!done(x)) {
		int n = uf_ingest_poll(&ig, pkts, UF_INGEST_BATCH, RAW_EPOLL_WAIT_MS);
		if (n < 0) {
			snprintf(err, errlen, "receive: %s", strerror(-n));
			rc = n;
			break;
		}
		if (n == 0)
			continue;
		uint64_t now = uf_now_realtime_ns();
		for (int i = 0; i < n; i++)
			rx_datagram(x, pkts[i].data, pkts[i].len, pkts[i].rx_ns, now);
		uf_ingest_release(&ig, pkts, n);
	}
	/* per socket totals (SO_RXQ_OVFL): the larger one is kept */
	x->c->kernel_drops =
	    st[0].kernel_drops > st[1].kernel_drops ? st[0].kernel_drops : st[1].kernel_drops;
	uf_ingest_close(&ig);
	return rc;
}

/* recvmsg-busy: one plain recvmsg(MSG_DONTWAIT) per datagram on each socket in turn, the
 * bare call the feed has no back end for (issue 14's 4.6 us figure). */
static void loop_recvmsg(struct rx *x, const int *fd)
{
	static uint8_t buf[RAW_BUF_SIZE];
	uint8_t ctl[64];
	struct iovec iov = {.iov_base = buf, .iov_len = sizeof(buf)};
	int src = 0;

	__atomic_store_n(&x->c->ready, 1, __ATOMIC_RELEASE);
	while (!done(x)) {
		struct msghdr h = {.msg_iov = &iov,
		                   .msg_iovlen = 1,
		                   .msg_control = ctl,
		                   .msg_controllen = sizeof(ctl)};
		ssize_t n = recvmsg(fd[src], &h, MSG_DONTWAIT);
		src = 1 - src; /* a flooded line never starves the other */
		if (n <= 0)
			continue;
		uint64_t now = uf_now_realtime_ns();
		rx_datagram(x, buf, (size_t)n, cmsg_rx(&h, x->c), now);
	}
}

/* ---- the process ---------------------------------------------------------------------- */

static int raw_main(const struct raw_args *a, struct rawctl *c)
{
	struct rx x = {.a = a, .c = c, .next = 1};
	int fd[2], rc = 0;

	c->tid = (int32_t)syscall(SYS_gettid);
	int prc;
	if (a->cpu >= 0 && (prc = uf_bench_pin(a->cpu)) < 0) {
		snprintf(c->err, sizeof(c->err), "CPU %d: %s", a->cpu, strerror(-prc));
		return 1;
	}
	for (int i = 0; i < 2; i++) {
		struct in_addr group, lo = {.s_addr = htonl(INADDR_LOOPBACK)};
		if (inet_pton(AF_INET, a->group[i], &group) != 1) {
			snprintf(c->err, sizeof(c->err), "group %s: not an IPv4 address",
			         a->group[i]);
			return 1;
		}
		fd[i] = uf_mcast_open_rx(group, a->port[i], lo, RAW_RCVBUF, c->err, sizeof(c->err));
		if (fd[i] < 0) {
			if (i)
				close(fd[0]);
			return 1;
		}
	}
	if (a->kind == RAW_RECVMSG)
		loop_recvmsg(&x, fd);
	else
		rc = loop_ingest(&x, fd, c->err, sizeof(c->err));
	close(fd[0]);
	close(fd[1]);
	return rc < 0;
}

pid_t e2e_raw_start(const struct raw_args *a, struct rawctl *ctl)
{
	uint64_t give_up = uf_now_mono_ns() + 10000000000ull;
	pid_t pid = uf_bench_fork(SIGKILL);

	if (pid < 0)
		return pid;
	if (pid == 0) {
		if (raw_main(a, ctl)) {
			__atomic_store_n(&ctl->ready, 2, __ATOMIC_RELEASE);
			_exit(1);
		}
		_exit(0);
	}
	for (;;) {
		uint32_t r = __atomic_load_n(&ctl->ready, __ATOMIC_ACQUIRE);
		if (r == 1)
			return pid;
		if (r == 2 || uf_now_mono_ns() > give_up) {
			if (r != 2)
				snprintf(ctl->err, sizeof(ctl->err), "not receiving within 10 s");
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
			return -EIO;
		}
		usleep(2000);
	}
}

int e2e_raw_finish(pid_t pid, struct rawctl *ctl, int linger_ms)
{
	uint64_t give_up = uf_now_mono_ns() + (uint64_t)linger_ms * 1000000ull;

	while (__atomic_load_n(&ctl->messages, __ATOMIC_ACQUIRE) < ctl->want &&
	       uf_now_mono_ns() < give_up && waitpid(pid, NULL, WNOHANG) == 0)
		usleep(2000);
	__atomic_store_n(&ctl->stop, 1, __ATOMIC_RELEASE);
	return uf_bench_wait_child(pid, 5000) < 0 ? -ETIMEDOUT : 0;
}
