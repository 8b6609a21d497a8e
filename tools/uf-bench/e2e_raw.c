/* uf-bench e2e: the raw-receive baseline (see e2e_raw.h). The sockets are set up as the
 * feed's (feed/mcast.c: non-blocking, SO_REUSEADDR, SO_TIMESTAMPNS, 16 MiB receive buffer,
 * SO_RXQ_OVFL, bound to the group, joined on 127.0.0.1, IP_MULTICAST_ALL off) and the io_uring
 * variant as feed/ingest_uring.c's (one multishot recvmsg per registered socket, 4096
 * provided buffers of 2048 bytes, CQ twice that, 64 SQ entries, SQPOLL with a 1 s idle or
 * SINGLE_ISSUER | DEFER_TASKRUN | TASKRUN_FLAG, batches of 64 CQEs). What it does with a
 * datagram: read the MoldUDP64 header (session, sequence, count), keep the first copy of
 * each sequence, and store one latency sample per message. */
#include "bench.h"
#include "e2e_raw.h"

#include <arpa/inet.h>
#include <errno.h>
#include <liburing.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define RAW_RCVBUF   (16 << 20) /* feed.c UF_FEED_RCVBUF */
#define RAW_BATCH    64         /* feed/ingest.h UF_INGEST_BATCH */
#define RAW_BUFS     4096       /* ingest.c default buffers.count */
#define RAW_BUF_SIZE 2048       /* ingest.c default buffers.size */
#define RAW_SQ       64         /* ingest_uring.c UF_URING_SQ_ENTRIES */
#define RAW_IDLE     4096       /* ingest_uring.c UF_URING_IDLE_ENTER */
#define RAW_CTL_LEN  (CMSG_SPACE(sizeof(struct timespec)) + CMSG_SPACE(sizeof(uint32_t)))

static const char *const raw_names[RAW_COUNT] = {
    [RAW_URING_SQPOLL] = "io_uring+SQPOLL", [RAW_URING] = "io_uring",
    [RAW_RECVMMSG] = "recvmmsg-busy",       [RAW_EPOLL] = "epoll",
    [RAW_RECVMSG] = "recvmsg-busy",
};

enum raw_kind e2e_raw_for(enum backend be)
{
	switch (be) {
	case BE_SQPOLL:
		return RAW_URING_SQPOLL;
	case BE_NOSQPOLL:
		return RAW_URING;
	case BE_RECVMMSG:
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

static uint64_t rt_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
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
	if (seq + count <= x->next) {
		c->dup_datagrams++;
		return;
	}
	x->next = seq + count;
	c->datagrams++;
	lat = now >= rx ? now - rx : 0;
	if (now < rx)
		c->negative++;
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

static int open_socket(const char *group, uint16_t port, char *err, size_t errlen)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
	struct ip_mreq mr;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), one = 1, zero = 0;
	int rcvbuf = RAW_RCVBUF;

	if (fd < 0 || inet_pton(AF_INET, group, &sa.sin_addr) != 1)
		goto fail;
	mr.imr_multiaddr = sa.sin_addr;
	mr.imr_interface.s_addr = htonl(INADDR_LOOPBACK);
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof(one)) < 0)
		goto fail;
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof(rcvbuf)) < 0)
		(void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	(void)setsockopt(fd, SOL_SOCKET, SO_RXQ_OVFL, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    setsockopt(fd, IPPROTO_IP, IP_ADD_MEMBERSHIP, &mr, sizeof(mr)) < 0)
		goto fail;
	(void)setsockopt(fd, IPPROTO_IP, IP_MULTICAST_ALL, &zero, sizeof(zero));
	return fd;
fail:
	snprintf(err, errlen, "socket %s:%u: %s", group, port, strerror(errno));
	if (fd >= 0)
		close(fd);
	return -1;
}

/* ---- recvmsg, recvmmsg, epoll --------------------------------------------------------- */

static uint8_t bufs[RAW_BATCH][RAW_BUF_SIZE];
static uint8_t ctls[RAW_BATCH][64];

static void loop_sockets(struct rx *x, const int *fd)
{
	struct mmsghdr mm[RAW_BATCH];
	struct iovec iov[RAW_BATCH];
	int epfd = -1, src = 0, batch = x->a->kind == RAW_RECVMSG ? 1 : RAW_BATCH;

	for (int i = 0; i < RAW_BATCH; i++) {
		iov[i].iov_base = bufs[i];
		iov[i].iov_len = sizeof(bufs[i]);
	}
	if (x->a->kind == RAW_EPOLL) {
		epfd = epoll_create1(EPOLL_CLOEXEC);
		for (int i = 0; i < 2 && epfd >= 0; i++) {
			struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (uint32_t)i};
			(void)epoll_ctl(epfd, EPOLL_CTL_ADD, fd[i], &ev);
		}
	}
	__atomic_store_n(&x->c->ready, 1, __ATOMIC_RELEASE);
	while (!done(x)) {
		struct epoll_event ev[2];
		int ready[2] = {src, 1 - src}, nready = 2, got;
		if (epfd >= 0) {
			nready = epoll_wait(epfd, ev, 2, 10);
			for (int i = 0; i < nready; i++)
				ready[i] = (int)ev[i].data.u32;
		}
		for (int r = 0; r < nready; r++) {
			for (int i = 0; i < batch; i++) {
				struct msghdr *h = &mm[i].msg_hdr;
				memset(h, 0, sizeof(*h));
				h->msg_iov = &iov[i];
				h->msg_iovlen = 1;
				h->msg_control = ctls[i];
				h->msg_controllen = sizeof(ctls[i]);
			}
			if (batch == 1) {
				ssize_t n = recvmsg(fd[ready[r]], &mm[0].msg_hdr, MSG_DONTWAIT);
				mm[0].msg_len = n > 0 ? (unsigned)n : 0;
				got = n > 0;
			} else {
				got =
				    recvmmsg(fd[ready[r]], mm, (unsigned)batch, MSG_DONTWAIT, NULL);
			}
			if (got <= 0)
				continue;
			uint64_t now = rt_ns();
			for (int i = 0; i < got; i++)
				rx_datagram(x, bufs[i], mm[i].msg_len,
				            cmsg_rx(&mm[i].msg_hdr, x->c), now);
		}
		src = 1 - src; /* a flooded line never starves the other */
	}
	if (epfd >= 0)
		close(epfd);
}

/* ---- io_uring ------------------------------------------------------------------------- */

static int uring_arm(struct io_uring *ring, struct msghdr *tmpl, int src)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
	if (!sqe)
		return -EBUSY;
	io_uring_prep_recvmsg_multishot(sqe, src, tmpl, 0);
	sqe->flags |= IOSQE_FIXED_FILE | IOSQE_BUFFER_SELECT;
	sqe->buf_group = 0;
	io_uring_sqe_set_data64(sqe, (uint64_t)src);
	return 0;
}

/* The kernel timestamp and drop total in a multishot recvmsg buffer's control data. */
static uint64_t uring_cmsg_rx(struct io_uring_recvmsg_out *o, struct msghdr *tmpl, struct rawctl *c)
{
	uint64_t rx = 0;
	for (struct cmsghdr *cm = io_uring_recvmsg_cmsg_firsthdr(o, tmpl); cm;
	     cm = io_uring_recvmsg_cmsg_nexthdr(o, tmpl, cm)) {
		if (cm->cmsg_level != SOL_SOCKET)
			continue;
		if (cm->cmsg_type == SCM_TIMESTAMPNS) {
			struct timespec ts;
			memcpy(&ts, CMSG_DATA(cm), sizeof(ts));
			rx = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
		} else if (cm->cmsg_type == SO_RXQ_OVFL) {
			uint32_t d;
			memcpy(&d, CMSG_DATA(cm), sizeof(d));
			if (d > c->kernel_drops)
				c->kernel_drops = d;
		}
	}
	return rx;
}

static int loop_uring(struct rx *x, int *fd, char *err, size_t errlen)
{
	int sqpoll = x->a->kind == RAW_URING_SQPOLL, rc = -EINVAL, mask, armed[2] = {1, 1};
	struct io_uring_params prm;
	struct io_uring ring;
	struct io_uring_buf_ring *br;
	struct msghdr tmpl;
	uint8_t *region;
	unsigned idle = 0;

	memset(&prm, 0, sizeof(prm));
	prm.flags = IORING_SETUP_CQSIZE | IORING_SETUP_SINGLE_ISSUER;
	prm.cq_entries = RAW_BUFS * 2;
	if (sqpoll) {
		prm.flags |= IORING_SETUP_SQPOLL;
		prm.sq_thread_idle = 1000;
		if (x->a->sq_cpu >= 0) {
			prm.flags |= IORING_SETUP_SQ_AFF;
			prm.sq_thread_cpu = (unsigned)x->a->sq_cpu;
		}
	} else {
		prm.flags |= IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_TASKRUN_FLAG;
	}
	if ((rc = io_uring_queue_init_params(RAW_SQ, &ring, &prm)) < 0) {
		snprintf(err, errlen, "io_uring_queue_init: %s", strerror(-rc));
		return rc;
	}
	(void)io_uring_register_ring_fd(&ring);
	region = mmap(NULL, (size_t)RAW_BUFS * RAW_BUF_SIZE, PROT_READ | PROT_WRITE,
	              MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	/* liburing 2.3 has no io_uring_setup_buf_ring: map and register it as the feed does */
	br = mmap(NULL, RAW_BUFS * sizeof(struct io_uring_buf), PROT_READ | PROT_WRITE,
	          MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (br != MAP_FAILED) {
		struct io_uring_buf_reg reg = {.ring_addr = (uint64_t)(uintptr_t)br,
		                               .ring_entries = RAW_BUFS};
		rc = io_uring_register_buf_ring(&ring, &reg, 0);
		io_uring_buf_ring_init(br);
	}
	if (region == MAP_FAILED || br == MAP_FAILED || rc < 0 ||
	    (rc = io_uring_register_files(&ring, fd, 2)) < 0) {
		snprintf(err, errlen, "io_uring buffers/files: %s",
		         strerror(rc < 0 ? -rc : ENOMEM));
		io_uring_queue_exit(&ring);
		return -ENOMEM;
	}
	mask = io_uring_buf_ring_mask(RAW_BUFS);
	for (int i = 0; i < RAW_BUFS; i++)
		io_uring_buf_ring_add(br, region + (size_t)i * RAW_BUF_SIZE, RAW_BUF_SIZE,
		                      (unsigned short)i, mask, i);
	io_uring_buf_ring_advance(br, RAW_BUFS);
	memset(&tmpl, 0, sizeof(tmpl));
	tmpl.msg_namelen = sizeof(struct sockaddr_in);
	tmpl.msg_controllen = RAW_CTL_LEN;
	if (uring_arm(&ring, &tmpl, 0) < 0 || uring_arm(&ring, &tmpl, 1) < 0 ||
	    io_uring_submit(&ring) < 0) {
		snprintf(err, errlen, "arming multishot recvmsg failed");
		io_uring_queue_exit(&ring);
		return -EIO;
	}
	__atomic_store_n(&x->c->ready, 1, __ATOMIC_RELEASE);
	while (!done(x)) {
		struct io_uring_cqe *cqes[RAW_BATCH];
		unsigned cnt, back = 0;
		int rearm = 0;
		if (!sqpoll && ((IO_URING_READ_ONCE(*ring.sq.kflags) & IORING_SQ_TASKRUN) ||
		                (io_uring_cq_ready(&ring) == 0 && ++idle >= RAW_IDLE))) {
			idle = 0;
			(void)io_uring_get_events(&ring);
		}
		if (io_uring_cq_has_overflow(&ring))
			(void)io_uring_get_events(&ring);
		cnt = io_uring_peek_batch_cqe(&ring, cqes, RAW_BATCH);
		if (!cnt)
			continue;
		idle = 0;
		uint64_t now = rt_ns();
		for (unsigned i = 0; i < cnt; i++) {
			struct io_uring_cqe *c = cqes[i];
			struct io_uring_recvmsg_out *o;
			unsigned bid;
			uint8_t *buf;
			if (!(c->flags & IORING_CQE_F_MORE)) {
				armed[c->user_data & 1] = 0;
				rearm = 1;
			}
			if (c->res < 0 || !(c->flags & IORING_CQE_F_BUFFER))
				continue;
			bid = c->flags >> IORING_CQE_BUFFER_SHIFT;
			buf = region + (size_t)bid * RAW_BUF_SIZE;
			o = io_uring_recvmsg_validate(buf, c->res, &tmpl);
			if (o) {
				uint64_t rx = uring_cmsg_rx(o, &tmpl, x->c);
				rx_datagram(x, io_uring_recvmsg_payload(o, &tmpl),
				            io_uring_recvmsg_payload_length(o, c->res, &tmpl), rx,
				            now);
			}
			io_uring_buf_ring_add(br, buf, RAW_BUF_SIZE, (unsigned short)bid, mask,
			                      (int)back++);
		}
		io_uring_cq_advance(&ring, cnt);
		io_uring_buf_ring_advance(br, (int)back);
		if (rearm) {
			for (int s = 0; s < 2; s++)
				if (!armed[s] && uring_arm(&ring, &tmpl, s) == 0)
					armed[s] = 1;
			(void)io_uring_submit(&ring);
		}
	}
	io_uring_queue_exit(&ring);
	munmap(br, RAW_BUFS * sizeof(struct io_uring_buf));
	munmap(region, (size_t)RAW_BUFS * RAW_BUF_SIZE);
	return 0;
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
	for (int i = 0; i < 2; i++)
		if ((fd[i] = open_socket(a->group[i], a->port[i], c->err, sizeof(c->err))) < 0)
			return 1;
	if (a->kind == RAW_URING || a->kind == RAW_URING_SQPOLL)
		rc = loop_uring(&x, fd, c->err, sizeof(c->err));
	else
		loop_sockets(&x, fd);
	close(fd[0]);
	close(fd[1]);
	return rc < 0;
}

pid_t e2e_raw_start(const struct raw_args *a, struct rawctl *ctl)
{
	pid_t parent = getpid(), pid;
	uint64_t give_up = uf_bench_now_ns() + 10000000000ull;

	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(127);
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
		if (r == 2 || uf_bench_now_ns() > give_up) {
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
	uint64_t give_up = uf_bench_now_ns() + (uint64_t)linger_ms * 1000000ull;

	while (__atomic_load_n(&ctl->messages, __ATOMIC_ACQUIRE) < ctl->want &&
	       uf_bench_now_ns() < give_up && waitpid(pid, NULL, WNOHANG) == 0)
		usleep(2000);
	__atomic_store_n(&ctl->stop, 1, __ATOMIC_RELEASE);
	return uf_bench_wait_child(pid, 5000) < 0 ? -ETIMEDOUT : 0;
}
