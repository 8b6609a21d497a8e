/* Receive back ends: shared setup (buffer region), recvmmsg busy-poll and epoll + recvmmsg.
 * The io_uring back ends live in ingest_uring.c. */
#include "feed/ingest.h"

#include <errno.h>
#include <numa.h>
#include <numaif.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/uf_compiler.h"
#include "common/uf_err.h"
#include "feed/feed_log.h"
#include "feed/ingest_internal.h"
#include "feed/uf_feed.h"

#define UF_HUGE_PAGE (2u << 20)

const char *uf_ingest_backend(const struct uf_ingest *ig)
{
	const char *n = uf_backend_name(ig->backend);
	return n ? n : "unknown";
}

/* One mapping for every receive buffer: huge pages when the kernel has them reserved,
 * otherwise normal pages with a transparent-huge-page hint; bound to `node` when given,
 * and touched here, on the feed thread, so first-touch also places it locally. */
int uf_ingest_region_alloc(struct uf_ingest *ig, int node, char *err, size_t errlen)
{
	size_t len = (size_t)ig->buf_count * ig->buf_size;
	size_t huge_len = (len + UF_HUGE_PAGE - 1) & ~((size_t)UF_HUGE_PAGE - 1);
	void *p = mmap(NULL, huge_len, PROT_READ | PROT_WRITE,
	               MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | MAP_POPULATE, -1, 0);
	if (p != MAP_FAILED) {
		ig->region_huge = 1;
		len = huge_len;
	} else {
		uf_feed_log_info("feed: no huge pages for %zu bytes of receive buffers (%s): "
		                 "using normal pages",
		                 huge_len, strerror(errno));
		p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED) {
			uf_err_rc(err, errlen, -errno, "mmap %zu bytes of receive buffers", len);
			return -errno;
		}
		(void)madvise(p, len, MADV_HUGEPAGE);
	}
	if (node >= 0 && numa_available() >= 0 && node <= numa_max_node())
		numa_tonode_memory(p, len, node);
	memset(p, 0, len); /* fault in now, not on the first packet */
	ig->region = p;
	ig->region_len = len;
	return 0;
}

static void uf_ingest_mmsg_setup(struct uf_ingest *ig)
{
	for (int i = 0; i < UF_INGEST_BATCH; i++) {
		ig->iov[i].iov_base = ig->region + (size_t)i * ig->buf_size;
		ig->iov[i].iov_len = ig->buf_size;
	}
}

static int uf_ingest_epoll_setup(struct uf_ingest *ig, char *err, size_t errlen)
{
	ig->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (ig->epfd < 0) {
		uf_err_rc(err, errlen, -errno, "epoll_create1");
		return -errno;
	}
	for (int i = 0; i < ig->nsrc; i++) {
		struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (uint32_t)i};
		if (epoll_ctl(ig->epfd, EPOLL_CTL_ADD, ig->fds[i], &ev) < 0) {
			uf_err_rc(err, errlen, -errno, "epoll_ctl");
			return -errno;
		}
	}
	return 0;
}

int uf_ingest_open(struct uf_ingest *ig, const struct uf_ingest_params *p, const int *fds, int nsrc,
                   struct uf_feed_line_stats **st, struct uf_feed_stats *fst, char *err,
                   size_t errlen)
{
	memset(ig, 0, sizeof(*ig));
	ig->epfd = -1;
	if (nsrc < 1 || nsrc > UF_INGEST_MAX_SRC) {
		snprintf(err, errlen, "%d sources: 1..%d supported", nsrc, UF_INGEST_MAX_SRC);
		return -EINVAL;
	}
	ig->nsrc = nsrc;
	for (int i = 0; i < nsrc; i++) {
		ig->fds[i] = fds[i];
		ig->st[i] = st[i];
	}
	ig->fst = fst;
	ig->buf_size = p->buf_size ? p->buf_size : UF_FEED_DEFAULT_BUFFERS_SIZE;
	ig->buf_count = p->buf_count ? p->buf_count : UF_FEED_DEFAULT_BUFFERS_COUNT;
	if (ig->buf_size < UF_CFG_BUFFERS_SIZE_MIN || ig->buf_size > UF_CFG_BUFFERS_SIZE_MAX) {
		snprintf(err, errlen, "buffers.size %u: %d..%d bytes", ig->buf_size,
		         UF_CFG_BUFFERS_SIZE_MIN, UF_CFG_BUFFERS_SIZE_MAX);
		return -EINVAL;
	}
	if (ig->buf_count < UF_CFG_BUFFERS_COUNT_MIN || ig->buf_count > UF_CFG_BUFFERS_COUNT_MAX ||
	    (ig->buf_count & (ig->buf_count - 1))) {
		snprintf(err, errlen, "buffers.count %u: a power of two in %d..%d", ig->buf_count,
		         UF_CFG_BUFFERS_COUNT_MIN, UF_CFG_BUFFERS_COUNT_MAX);
		return -EINVAL;
	}
	int rc = uf_ingest_region_alloc(ig, p->numa_node, err, errlen);
	if (rc < 0)
		return rc;
	ig->backend = p->backend;
	if (p->backend == UF_BACKEND_IO_URING || p->backend == UF_BACKEND_IO_URING_NOSQPOLL) {
		rc = uf_ingest_uring_open(ig, p, err, errlen);
		if (rc == 0)
			return 0;
		uf_feed_log_warn("feed: io_uring back end unavailable (%s): falling back to "
		                 "recvmmsg",
		                 err);
		uf_ingest_uring_close(ig);
		ig->backend = UF_BACKEND_RECVMMSG;
		err[0] = '\0';
	}
	uf_ingest_mmsg_setup(ig);
	if (ig->backend == UF_BACKEND_EPOLL) {
		rc = uf_ingest_epoll_setup(ig, err, errlen);
		if (rc < 0) {
			uf_ingest_close(ig);
			return rc;
		}
	}
	return 0;
}

/* Fills pkts from one recvmmsg result. Timestamps come from SCM_TIMESTAMPNS. */
static int uf_ingest_mmsg_take(struct uf_ingest *ig, int src, int base, int got,
                               struct uf_pkt *pkts)
{
	for (int i = 0; i < got; i++) {
		struct mmsghdr *m = &ig->mm[base + i];
		struct uf_pkt *k = &pkts[base + i];
		k->data = ig->iov[base + i].iov_base;
		k->len = m->msg_len;
		k->src = (uint16_t)src;
		k->bid = 0;
		k->rx_ns = 0;
		k->from_addr = ig->from[base + i].sin_addr.s_addr;
		k->from_port = ig->from[base + i].sin_port;
		if (UF_UNLIKELY(m->msg_hdr.msg_flags & MSG_TRUNC))
			uf_stat_add(&ig->st[src]->truncated, 1);
		for (struct cmsghdr *c = CMSG_FIRSTHDR(&m->msg_hdr); c;
		     c = CMSG_NXTHDR(&m->msg_hdr, c)) {
			if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
				struct timespec ts;
				memcpy(&ts, CMSG_DATA(c), sizeof(ts));
				k->rx_ns =
				    (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
			} else if (UF_UNLIKELY(c->cmsg_level == SOL_SOCKET &&
			                       c->cmsg_type == SO_RXQ_OVFL)) {
				uint32_t drops; /* the socket's drop total, sent once it is not 0 */
				memcpy(&drops, CMSG_DATA(c), sizeof(drops));
				uf_stat_raise(&ig->st[src]->kernel_drops, drops);
			}
		}
	}
	return got;
}

static int uf_ingest_mmsg_recv(struct uf_ingest *ig, int src, int base, int room,
                               struct uf_pkt *pkts)
{
	for (int i = base; i < base + room; i++) {
		struct msghdr *h = &ig->mm[i].msg_hdr;
		h->msg_name = &ig->from[i];
		h->msg_namelen = sizeof(ig->from[i]);
		h->msg_iov = &ig->iov[i];
		h->msg_iovlen = 1;
		h->msg_control = ig->ctl[i];
		h->msg_controllen = sizeof(ig->ctl[i]);
		h->msg_flags = 0;
	}
	int got = recvmmsg(ig->fds[src], &ig->mm[base], (unsigned)room, MSG_DONTWAIT, NULL);
	if (got < 0) {
		if (errno != EAGAIN && errno != EINTR)
			uf_stat_add(&ig->st[src]->rx_errors, 1);
		return 0;
	}
	return uf_ingest_mmsg_take(ig, src, base, got, pkts);
}

int uf_ingest_poll(struct uf_ingest *ig, struct uf_pkt *pkts, int max, int wait_ms)
{
	if (max > UF_INGEST_BATCH)
		max = UF_INGEST_BATCH;
	if (ig->backend == UF_BACKEND_IO_URING || ig->backend == UF_BACKEND_IO_URING_NOSQPOLL)
		return uf_ingest_uring_poll(ig, pkts, max);
	int n = 0;
	if (ig->backend == UF_BACKEND_EPOLL) {
		struct epoll_event ev[UF_INGEST_MAX_SRC];
		int ne = epoll_wait(ig->epfd, ev, ig->nsrc, wait_ms);
		if (ne < 0)
			return errno == EINTR ? 0 : -errno;
		/* Each ready source an equal share of what is left: the first one returned,
		 * when flooded, would otherwise take the whole batch poll after poll while the
		 * other line's datagrams wait in its socket (thousands behind: its copies come
		 * too late to fill the holes of the first). */
		for (int i = 0; i < ne && n < max; i++)
			n += uf_ingest_mmsg_recv(ig, (int)ev[i].data.u32, n, (max - n) / (ne - i),
			                         pkts);
		return n;
	}
	/* Busy-poll: every source once per call, starting at a rotating one so a flooded line
	 * never starves the other. */
	for (int k = 0; k < ig->nsrc && n < max; k++) {
		int src = (ig->next_src + k) % ig->nsrc;
		n += uf_ingest_mmsg_recv(ig, src, n, max - n, pkts);
	}
	ig->next_src = (ig->next_src + 1) % ig->nsrc;
	return n;
}

void uf_ingest_release(struct uf_ingest *ig, const struct uf_pkt *pkts, int n)
{
	if (ig->backend == UF_BACKEND_IO_URING || ig->backend == UF_BACKEND_IO_URING_NOSQPOLL)
		uf_ingest_uring_release(ig, pkts, n);
	/* recvmmsg buffers are reused by the next poll: nothing to do. */
}

void uf_ingest_close(struct uf_ingest *ig)
{
	uf_ingest_uring_close(ig);
	if (ig->epfd >= 0)
		close(ig->epfd);
	ig->epfd = -1;
	if (ig->region)
		munmap(ig->region, ig->region_len);
	ig->region = NULL;
}
