/* Receive back ends behind one interface: a batch of datagrams in, buffers back out.
 *
 *   n = uf_ingest_poll(ig, pkts, max, wait_ms);   // up to `max` datagrams, any source
 *   ... consume pkts[0..n) (copy what must outlive the batch) ...
 *   uf_ingest_release(ig, pkts, n);               // buffers go back to the kernel at once
 *
 * Back ends (enum uf_backend):
 *   io_uring          SQPOLL ring (SQ thread pinned, idle configurable), sockets as registered
 *                     files, one multishot IORING_OP_RECVMSG per socket selecting buffers from
 *                     one provided buffer ring over one registered region (huge pages when
 *                     available, NUMA-local); CQEs reaped in batches by busy-polling the CQ
 *                     ring: no syscall while packets flow.
 *   io_uring_nosqpoll the same without the SQ thread: SINGLE_ISSUER | DEFER_TASKRUN |
 *                     TASKRUN_FLAG; the thread enters the kernel only when the SQ flags ask
 *                     for it (IORING_SQ_TASKRUN / CQ overflow) or to submit a re-arm.
 *   recvmmsg          busy-polls recvmmsg(MSG_DONTWAIT) on every socket (one syscall per
 *                     socket per poll, even when idle).
 *   epoll             epoll_wait (sleeps up to wait_ms), then recvmmsg on ready sockets.
 * Fallbacks when the kernel refuses a feature are logged to stderr and visible through
 * uf_ingest_backend().
 *
 * Every source (socket) has an index: the feed uses 0..nlines-1 for the lines and the next
 * one for the re-request socket. Single-threaded: poll and release on the feed thread. */
#ifndef UF_INGEST_H
#define UF_INGEST_H

#include <liburing.h>
#include <stdint.h>
#include <sys/socket.h>

#include "feed/uf_feed_config.h"
#include "feed/uf_feed_stats.h"

#define UF_INGEST_MAX_SRC 4  /* lines A, B, re-request socket, spare */
#define UF_INGEST_BATCH   64 /* datagrams per poll at most */
_Static_assert(UF_CFG_BUFFERS_COUNT_MIN >= UF_INGEST_BATCH, "a batch never waits for buffers");

/* One received datagram, valid until uf_ingest_release(). */
struct uf_pkt {
	const uint8_t *data; /* UDP payload */
	uint32_t len;        /* payload bytes */
	uint16_t src;        /* source index */
	uint16_t bid;        /* io_uring provided-buffer id (back end private) */
	uint64_t rx_ns;      /* kernel receive time (CLOCK_REALTIME ns), 0 when none */
	uint32_t from_addr;  /* sender IPv4 address (network order), 0 when unknown */
	uint16_t from_port;  /* sender UDP port (network order) */
};

struct uf_ingest_params {
	enum uf_backend backend; /* wanted back end */
	int sqpoll_cpu;          /* SQ thread CPU, -1 = not pinned */
	uint32_t sqpoll_idle_ms; /* SQ thread idle before it sleeps, 0 = the engine's default
	                          * (UF_FEED_DEFAULT_SQPOLL_IDLE_MS) */
	int numa_node;           /* node for the buffer region, -1 = local (first touch) */
	uint32_t buf_count;      /* provided buffers (power of two, <= 32768), 0 = default */
	uint32_t buf_size;       /* bytes per buffer (payload + recvmsg header), 0 = default */
};

struct uf_ingest {
	enum uf_backend backend;                          /* back end in use (after fallbacks) */
	int nsrc;                                         /* sources */
	int fds[UF_INGEST_MAX_SRC];                       /* socket per source (not owned) */
	struct uf_feed_line_stats *st[UF_INGEST_MAX_SRC]; /* counters per source */
	struct uf_feed_stats *fst;                        /* feed-wide counters (overflows...) */
	uint32_t buf_size;                                /* bytes per buffer */
	uint32_t buf_count;                               /* buffers */
	uint8_t *region;                                  /* all receive buffers, one mapping */
	size_t region_len;                                /* its length */
	int region_huge;                                  /* 1 when MAP_HUGETLB succeeded */
	/* io_uring */
	struct io_uring ring;         /* the ring (valid when ring_up) */
	int ring_up;                  /* ring initialised */
	int sqpoll;                   /* SQPOLL in use */
	int defer;                    /* DEFER_TASKRUN in use */
	struct io_uring_buf_ring *br; /* provided buffer ring */
	size_t br_len;                /* its mapping length */
	int br_registered;            /* registered with the kernel */
	int files_registered;         /* sockets registered as fixed files */
	int napi;                     /* NAPI busy poll registered (6.9+) */
	int async_wake;               /* uf_ingest_futex_wake available: SQPOLL and a kernel
	                               * with IORING_OP_FUTEX_WAKE (6.7+) */
	unsigned br_pending;          /* buffers added, not yet advanced */
	struct msghdr rmsg;           /* template for multishot recvmsg */
	int armed[UF_INGEST_MAX_SRC]; /* multishot in flight per source */
	int need_rearm;               /* some multishot ended: re-arm after release */
	uint32_t koverflow_seen;      /* last value of *cq.koverflow */
	unsigned idle_polls;          /* polls since the last CQE (no SQPOLL) */
	uint64_t idle_since_ns;       /* CLOCK_MONOTONIC when the idle run was first checked */
	/* recvmmsg / epoll */
	int epfd;                                 /* epoll fd, -1 when unused */
	int next_src;                             /* round-robin start */
	struct mmsghdr mm[UF_INGEST_BATCH];       /* recvmmsg vector */
	struct iovec iov[UF_INGEST_BATCH];        /* one per buffer */
	uint8_t ctl[UF_INGEST_BATCH][64];         /* SCM_TIMESTAMPNS space per message */
	struct sockaddr_in from[UF_INGEST_BATCH]; /* sender address per message */
};

/* Sets up `p->backend` (or a fallback) over the sockets fds[0..nsrc). `st[i]` receive the
 * per-source counters, `fst` the feed-wide ones. Call on the feed thread.
 * Returns 0 or -errno (message in `err`). */
int uf_ingest_open(struct uf_ingest *ig, const struct uf_ingest_params *p, const int *fds, int nsrc,
                   struct uf_feed_line_stats **st, struct uf_feed_stats *fst, char *err,
                   size_t errlen);

/* Receives up to `max` (<= UF_INGEST_BATCH) datagrams. Busy-poll back ends return at once;
 * epoll sleeps up to `wait_ms` when nothing is ready. Returns the count (0 = nothing) or
 * -errno on a failure that stops the feed. */
int uf_ingest_poll(struct uf_ingest *ig, struct uf_pkt *pkts, int max, int wait_ms);

/* Gives the buffers of pkts[0..n) back (io_uring: to the provided buffer ring at once). */
void uf_ingest_release(struct uf_ingest *ig, const struct uf_pkt *pkts, int n);

/* Tears down the ring, buffers and epoll fd (not the sockets). Safe on a zeroed struct. */
void uf_ingest_close(struct uf_ingest *ig);

/* Asks the SQ thread to make FUTEX_WAKE(word, all waiters) for the caller, who makes no
 * system call (io_uring with SQPOLL on a kernel with IORING_OP_FUTEX_WAKE; ig->async_wake).
 * Call on the feed thread (the ring is SINGLE_ISSUER). The completion is reaped by
 * uf_ingest_poll: counted in ring_wakes_idle when it woke nobody; a request the kernel failed
 * is counted in ring_wake_errors, made again as a system call at once, and the feed stops
 * handing wakes over. Returns 0 when handed over, -EOPNOTSUPP when not available, -EBUSY
 * when the submission queue is full (the caller makes the system call itself). */
int uf_ingest_futex_wake(struct uf_ingest *ig, uint32_t *word);

/* Name of the back end in use. */
const char *uf_ingest_backend(const struct uf_ingest *ig);

#endif /* UF_INGEST_H */
