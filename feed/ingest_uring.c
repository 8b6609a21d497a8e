/* io_uring receive back ends: SQPOLL (default) and SINGLE_ISSUER | DEFER_TASKRUN.
 *
 * One ring per feed thread. Each socket is a registered file with one multishot recvmsg in
 * flight; the kernel picks a buffer from one provided buffer ring (group 0) over the
 * region, writes struct io_uring_recvmsg_out + source address + cmsgs (SCM_TIMESTAMPNS) +
 * payload into it, and posts a CQE with the buffer id. The feed thread reaps CQEs in
 * batches without a syscall, hands payloads to the pipeline, and returns each buffer to the
 * ring as soon as the batch is consumed. */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/uf_compiler.h"
#include "common/uf_err.h"
#include "common/uf_time.h"
#include "feed/feed_log.h"
#include "feed/ingest_internal.h"

#define UF_URING_BGID       0
#define UF_URING_SQ_ENTRIES 64
/* The no-SQPOLL ring enters the kernel when IORING_SQ_TASKRUN says deferred work waits (one
 * enter per receive batch). The safety net for a kernel that would not raise the flag: an
 * enter anyway after UF_URING_IDLE_ENTER_NS without a CQE, the clock read once every
 * UF_URING_IDLE_ENTER empty polls. It used to enter every 4096 empty polls (~0.2 ms of
 * spinning here), which at 100 k msg/s was a second io_uring_enter per datagram that found
 * nothing (issue 14, docs/profiling.md); a kernel that raises the flag never needs it. */
#define UF_URING_IDLE_ENTER    4096
#define UF_URING_IDLE_ENTER_NS 1000000ull

/* IORING_OP_FUTEX_WAKE (kernel 6.7+; liburing 2.3 has neither the opcode nor a prep
 * helper): futex2 flags in sqe->fd (a 32-bit shared futex: the consumers are other
 * processes), the word in addr, how many to wake in addr2, the bitset in addr3. */
#define UF_IORING_OP_FUTEX_WAKE 52 /* (51 is FUTEX_WAIT) */
#define UF_FUTEX2_SIZE_U32      0x02
#define UF_FUTEX_BITSET_ANY     0xffffffffull
/* user_data: a receive's CQE carries its source index (< UF_INGEST_MAX_SRC), a wake's the
 * address of its futex word (a pointer, never that small). */
_Static_assert(UF_INGEST_MAX_SRC < 4096, "a wake's user_data never looks like a source");

/* NAPI busy polling (kernel 6.9+): the SQ thread (or an enter) polls the NIC queues of the
 * sockets directly instead of waiting for an interrupt. liburing 2.3 predates it: raw
 * register opcode and struct. Refused on older kernels: logged, the ring works without it.
 * Loopback has no NAPI context, so it is harmless in tests. */
#define UF_IORING_REGISTER_NAPI 27
#define UF_NAPI_BUSY_POLL_US    50
struct uf_io_uring_napi {
	uint32_t busy_poll_to;    /* busy poll timeout, us */
	uint8_t prefer_busy_poll; /* prefer busy poll over interrupts */
	uint8_t pad[3];           /* 0 */
	uint64_t resv;            /* 0 */
};

static void uf_uring_register_napi(struct uf_ingest *ig)
{
	struct uf_io_uring_napi napi = {.busy_poll_to = UF_NAPI_BUSY_POLL_US,
	                                .prefer_busy_poll = 1};
	long rc =
	    syscall(__NR_io_uring_register, ig->ring.ring_fd, UF_IORING_REGISTER_NAPI, &napi, 1);
	ig->napi = rc == 0;
	if (rc < 0)
		uf_feed_log_info(
		    "feed: io_uring NAPI busy poll not available (%s): interrupts only",
		    strerror(errno));
}

/* With SQPOLL the SQ thread can make the consumers' FUTEX_WAKE for the feed thread. */
static void uf_uring_probe_futex_wake(struct uf_ingest *ig)
{
	struct io_uring_probe *pr = io_uring_get_probe_ring(&ig->ring);
	ig->async_wake = pr && io_uring_opcode_supported(pr, UF_IORING_OP_FUTEX_WAKE);
	if (pr)
		io_uring_free_probe(pr);
	if (!ig->async_wake)
		uf_feed_log_info("feed: io_uring has no IORING_OP_FUTEX_WAKE (kernel < 6.7): the "
		                 "feed thread wakes sleeping consumers with system calls");
}

static int uf_uring_setup(struct uf_ingest *ig, const struct uf_ingest_params *p, int sqpoll,
                          char *err, size_t errlen)
{
	/* CQ sized for a full buffer ring of completions plus re-arm errors: a CQE per buffer
	 * can be outstanding at once, so the CQ only overflows if buffers are over-committed. */
	unsigned cq = ig->buf_count * 2;
	static const unsigned sq_extra[] = {IORING_SETUP_SINGLE_ISSUER, 0};
	static const unsigned nosq_extra[] = {
	    IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_TASKRUN_FLAG,
	    IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG,
	    0,
	};
	const unsigned *extra = sqpoll ? sq_extra : nosq_extra;
	size_t nextra = sqpoll ? UF_ARRAY_SIZE(sq_extra) : UF_ARRAY_SIZE(nosq_extra);
	int rc = -EINVAL;
	for (size_t i = 0; i < nextra; i++) {
		struct io_uring_params prm;
		memset(&prm, 0, sizeof(prm));
		prm.flags = IORING_SETUP_CQSIZE | extra[i];
		prm.cq_entries = cq;
		if (sqpoll) {
			prm.flags |= IORING_SETUP_SQPOLL;
			prm.sq_thread_idle =
			    p->sqpoll_idle_ms ? p->sqpoll_idle_ms : UF_FEED_DEFAULT_SQPOLL_IDLE_MS;
			if (p->sqpoll_cpu >= 0) {
				prm.flags |= IORING_SETUP_SQ_AFF;
				prm.sq_thread_cpu = (unsigned)p->sqpoll_cpu;
			}
		}
		rc = io_uring_queue_init_params(UF_URING_SQ_ENTRIES, &ig->ring, &prm);
		if (rc == 0) {
			if (i > 0)
				uf_feed_log_warn(
				    "feed: io_uring refused setup flags 0x%x: using 0x%x", extra[0],
				    extra[i]);
			ig->defer = (extra[i] & IORING_SETUP_DEFER_TASKRUN) != 0;
			ig->ring_up = 1;
			ig->sqpoll = sqpoll;
			(void)io_uring_register_ring_fd(&ig->ring); /* cheaper enters; optional */
			if (sqpoll)
				uf_uring_probe_futex_wake(ig);
			return 0;
		}
		if (rc != -EINVAL)
			break;
	}
	uf_err_rc(err, errlen, rc, "io_uring_queue_init%s", sqpoll ? " (SQPOLL)" : "");
	return rc;
}

static int uf_uring_arm(struct uf_ingest *ig, int src)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&ig->ring);
	if (UF_UNLIKELY(!sqe)) {
		(void)io_uring_submit(&ig->ring);
		sqe = io_uring_get_sqe(&ig->ring);
		if (!sqe)
			return -EBUSY;
	}
	io_uring_prep_recvmsg_multishot(sqe, src, &ig->rmsg, 0); /* fd = fixed-file index */
	sqe->flags |= IOSQE_FIXED_FILE | IOSQE_BUFFER_SELECT;
	sqe->buf_group = UF_URING_BGID;
	io_uring_sqe_set_data64(sqe, (uint64_t)src);
	ig->armed[src] = 1;
	return 0;
}

/* Submits queued SQEs. With SQPOLL, liburing only enters the kernel when the SQ thread
 * sleeps (IORING_SQ_NEED_WAKEUP); that wake-up is counted. */
static void uf_uring_submit(struct uf_ingest *ig)
{
	if (ig->sqpoll && (IO_URING_READ_ONCE(*ig->ring.sq.kflags) & IORING_SQ_NEED_WAKEUP))
		uf_stat_add(&ig->fst->sq_wakeups, 1);
	else if (!ig->sqpoll)
		uf_stat_add(&ig->fst->sq_wakeups, 1);
	(void)io_uring_submit(&ig->ring);
}

int uf_ingest_uring_open(struct uf_ingest *ig, const struct uf_ingest_params *p, char *err,
                         size_t errlen)
{
	int rc;
	if (p->backend == UF_BACKEND_IO_URING) {
		rc = uf_uring_setup(ig, p, 1, err, errlen);
		if (rc < 0) {
			uf_feed_log_warn("feed: %s: falling back to io_uring without SQPOLL", err);
			ig->backend = UF_BACKEND_IO_URING_NOSQPOLL;
		}
	}
	if (!ig->ring_up) {
		rc = uf_uring_setup(ig, p, 0, err, errlen);
		if (rc < 0)
			return rc;
	}
	rc = io_uring_register_files(&ig->ring, ig->fds, (unsigned)ig->nsrc);
	if (rc < 0) {
		uf_err_rc(err, errlen, rc, "io_uring_register_files");
		return rc;
	}
	ig->files_registered = 1;
	uf_uring_register_napi(ig);

	/* The provided buffer ring: one 16-byte entry per buffer, page aligned. */
	ig->br_len = (size_t)ig->buf_count * sizeof(struct io_uring_buf);
	void *br =
	    mmap(NULL, ig->br_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (br == MAP_FAILED) {
		uf_err_rc(err, errlen, -errno, "mmap buffer ring");
		return -errno;
	}
	ig->br = br;
	struct io_uring_buf_reg reg = {
	    .ring_addr = (uint64_t)(uintptr_t)br,
	    .ring_entries = ig->buf_count,
	    .bgid = UF_URING_BGID,
	};
	rc = io_uring_register_buf_ring(&ig->ring, &reg, 0);
	if (rc < 0) {
		uf_err_rc(err, errlen, rc, "io_uring_register_buf_ring");
		return rc;
	}
	ig->br_registered = 1;
	io_uring_buf_ring_init(ig->br);
	int mask = io_uring_buf_ring_mask(ig->buf_count);
	for (unsigned i = 0; i < ig->buf_count; i++)
		io_uring_buf_ring_add(ig->br, ig->region + (size_t)i * ig->buf_size, ig->buf_size,
		                      (unsigned short)i, mask, (int)i);
	io_uring_buf_ring_advance(ig->br, (int)ig->buf_count);

	/* Multishot recvmsg template: the kernel reserves namelen + controllen at the start of
	 * every buffer for the source address and the timestamp cmsg. */
	memset(&ig->rmsg, 0, sizeof(ig->rmsg));
	ig->rmsg.msg_namelen = sizeof(struct sockaddr_in);
	ig->rmsg.msg_controllen =
	    CMSG_SPACE(sizeof(struct timespec)) + CMSG_SPACE(sizeof(uint32_t));
	for (int s = 0; s < ig->nsrc; s++) {
		rc = uf_uring_arm(ig, s);
		if (rc < 0) {
			uf_err_rc(err, errlen, rc, "arming multishot recvmsg");
			return rc;
		}
	}
	uf_uring_submit(ig);
	ig->koverflow_seen = IO_URING_READ_ONCE(*ig->ring.cq.koverflow);
	return 0;
}

/* Re-arms every source whose multishot receive ended, in one submit. */
static void uf_uring_rearm(struct uf_ingest *ig)
{
	for (int s = 0; s < ig->nsrc; s++)
		if (!ig->armed[s])
			(void)uf_uring_arm(ig, s);
	ig->need_rearm = 0;
	uf_uring_submit(ig);
}

int uf_ingest_futex_wake(struct uf_ingest *ig, uint32_t *word)
{
	if (!ig->async_wake)
		return -EOPNOTSUPP;
	struct io_uring_sqe *sqe = io_uring_get_sqe(&ig->ring);
	if (UF_UNLIKELY(!sqe))
		return -EBUSY; /* receive re-arms pending: the caller makes the call itself */
	memset(sqe, 0, sizeof(*sqe));
	sqe->opcode = UF_IORING_OP_FUTEX_WAKE;
	sqe->fd = UF_FUTEX2_SIZE_U32;
	sqe->addr = (uint64_t)(uintptr_t)word;
	sqe->addr2 = INT_MAX;
	sqe->addr3 = UF_FUTEX_BITSET_ANY;
	io_uring_sqe_set_data64(sqe, (uint64_t)(uintptr_t)word);
	uf_uring_submit(ig); /* the SQ thread takes it: no enter unless it sleeps (counted) */
	return 0;
}

/* A wake's completion: how many it woke, or the kernel's refusal. Refused, the wake is made
 * again as a system call (late, never lost) and the feed stops handing wakes over. Cold on
 * error only. */
static void uf_uring_wake_done(struct uf_ingest *ig, const struct io_uring_cqe *c)
{
	if (c->res == 0) {
		uf_stat_add(&ig->fst->ring_wakes_idle, 1);
		return;
	}
	if (UF_LIKELY(c->res > 0))
		return;
	uf_stat_add(&ig->fst->ring_wake_errors, 1);
	if (ig->async_wake)
		uf_feed_log_warn("feed: io_uring FUTEX_WAKE failed (%s): waking consumers with "
		                 "system calls from now on",
		                 strerror(-c->res));
	ig->async_wake = 0;
	(void)syscall(SYS_futex, (uint32_t *)(uintptr_t)c->user_data, FUTEX_WAKE, INT_MAX, NULL,
	              NULL, 0);
}

static inline void uf_uring_recycle(struct uf_ingest *ig, unsigned bid)
{
	io_uring_buf_ring_add(ig->br, ig->region + (size_t)bid * ig->buf_size, ig->buf_size,
	                      (unsigned short)bid, io_uring_buf_ring_mask(ig->buf_count),
	                      (int)ig->br_pending);
	ig->br_pending++;
}

static inline void uf_uring_flush_recycled(struct uf_ingest *ig)
{
	if (ig->br_pending) {
		/* Release store of the tail: the entries written above are visible first. */
		io_uring_buf_ring_advance(ig->br, (int)ig->br_pending);
		ig->br_pending = 0;
	}
}

/* Overflow: the kernel keeps overflowed CQEs (IORING_FEAT_NODROP) on a list that an enter
 * flushes; if it could not even allocate, *cq.koverflow counts CQEs dropped for good. */
static void uf_uring_check_overflow(struct uf_ingest *ig)
{
	struct io_uring *r = &ig->ring;
	if (UF_UNLIKELY(io_uring_cq_has_overflow(r))) {
		uf_stat_add(&ig->fst->cq_overflows, 1);
		(void)io_uring_get_events(r);
	}
	uint32_t ko = IO_URING_READ_ONCE(*r->cq.koverflow);
	if (UF_UNLIKELY(ko != ig->koverflow_seen)) {
		uf_stat_add(&ig->fst->cq_overflows, ko - ig->koverflow_seen);
		ig->koverflow_seen = ko;
	}
}

int uf_ingest_uring_poll(struct uf_ingest *ig, struct uf_pkt *pkts, int max)
{
	struct io_uring *r = &ig->ring;
	if (!ig->sqpoll) {
		unsigned f = IO_URING_READ_ONCE(*r->sq.kflags);
		int enter = (f & IORING_SQ_TASKRUN) != 0;
		if (!enter && io_uring_cq_ready(r) == 0 &&
		    UF_UNLIKELY(++ig->idle_polls >= UF_URING_IDLE_ENTER)) {
			/* idle for a while: enter only once the run has lasted the safety interval
			 */
			uint64_t now = uf_now_mono_ns();
			ig->idle_polls = 0;
			if (!ig->idle_since_ns)
				ig->idle_since_ns = now;
			else if (now - ig->idle_since_ns >= UF_URING_IDLE_ENTER_NS)
				enter = 1;
		}
		if (enter) {
			ig->idle_polls = 0;
			ig->idle_since_ns = 0;
			uf_stat_add(&ig->fst->sq_wakeups, 1);
			(void)io_uring_get_events(r);
		}
	}
	uf_uring_check_overflow(ig);

	struct io_uring_cqe *cqes[UF_INGEST_BATCH];
	unsigned cnt = io_uring_peek_batch_cqe(r, cqes, (unsigned)max);
	if (cnt == 0)
		return 0;
	ig->idle_polls = 0;
	ig->idle_since_ns = 0;
	int n = 0, rearm = 0;
	for (unsigned i = 0; i < cnt; i++) {
		struct io_uring_cqe *c = cqes[i];
		if (UF_UNLIKELY(c->user_data >= (uint64_t)ig->nsrc)) {
			if (c->user_data >= UF_INGEST_MAX_SRC)
				uf_uring_wake_done(ig, c);
			continue;
		}
		unsigned src = (unsigned)c->user_data;
		struct uf_feed_line_stats *st = ig->st[src];
		if (UF_UNLIKELY(!(c->flags & IORING_CQE_F_MORE))) {
			/* The multishot ended: buffer ring ran dry (-ENOBUFS) or an error. */
			ig->armed[src] = 0;
			rearm = 1;
			uf_stat_add(&st->rearms, 1);
		}
		if (UF_UNLIKELY(c->res < 0)) {
			if (c->res == -ENOBUFS)
				uf_stat_add(&st->enobufs, 1);
			else if (c->res == -EINVAL || c->res == -EOPNOTSUPP)
				return c->res; /* the kernel cannot do multishot recvmsg */
			else
				uf_stat_add(&st->rx_errors, 1);
			continue;
		}
		if (UF_UNLIKELY(!(c->flags & IORING_CQE_F_BUFFER)))
			continue;
		unsigned bid = c->flags >> IORING_CQE_BUFFER_SHIFT;
		uint8_t *buf = ig->region + (size_t)bid * ig->buf_size;
		struct io_uring_recvmsg_out *o = io_uring_recvmsg_validate(buf, c->res, &ig->rmsg);
		if (UF_UNLIKELY(!o)) {
			uf_stat_add(&st->rx_errors, 1);
			uf_uring_recycle(ig, bid);
			continue;
		}
		if (UF_UNLIKELY(o->flags & MSG_TRUNC))
			uf_stat_add(&st->truncated, 1);
		uint64_t rx = 0;
		for (struct cmsghdr *cm = io_uring_recvmsg_cmsg_firsthdr(o, &ig->rmsg); cm;
		     cm = io_uring_recvmsg_cmsg_nexthdr(o, &ig->rmsg, cm)) {
			if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_TIMESTAMPNS) {
				struct timespec ts;
				memcpy(&ts, CMSG_DATA(cm), sizeof(ts));
				rx = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
			} else if (UF_UNLIKELY(cm->cmsg_level == SOL_SOCKET &&
			                       cm->cmsg_type == SO_RXQ_OVFL)) {
				uint32_t drops; /* the socket's drop total, sent once it is not 0 */
				memcpy(&drops, CMSG_DATA(cm), sizeof(drops));
				uf_stat_raise(&st->kernel_drops, drops);
			}
		}
		struct uf_pkt *k = &pkts[n++];
		k->from_addr = 0;
		k->from_port = 0;
		if (o->namelen >= sizeof(struct sockaddr_in)) {
			struct sockaddr_in sin;
			memcpy(&sin, io_uring_recvmsg_name(o), sizeof(sin));
			k->from_addr = sin.sin_addr.s_addr;
			k->from_port = sin.sin_port;
		}
		k->data = io_uring_recvmsg_payload(o, &ig->rmsg);
		k->len = io_uring_recvmsg_payload_length(o, c->res, &ig->rmsg);
		k->src = (uint16_t)src;
		k->bid = (uint16_t)bid;
		k->rx_ns = rx;
	}
	io_uring_cq_advance(r, cnt);
	uf_uring_flush_recycled(ig);
	if (UF_UNLIKELY(rearm)) {
		ig->need_rearm = 1;
		if (n == 0)
			uf_uring_rearm(ig); /* nothing to release: the buffers are back already */
	}
	return n;
}

void uf_ingest_uring_release(struct uf_ingest *ig, const struct uf_pkt *pkts, int n)
{
	for (int i = 0; i < n; i++)
		uf_uring_recycle(ig, pkts[i].bid);
	uf_uring_flush_recycled(ig);
	/* Re-arm only now: with the batch's buffers back in the ring, the new receive does not
	 * end in -ENOBUFS at once. */
	if (UF_UNLIKELY(ig->need_rearm))
		uf_uring_rearm(ig);
}

void uf_ingest_uring_close(struct uf_ingest *ig)
{
	if (ig->ring_up) {
		if (ig->br_registered)
			(void)io_uring_unregister_buf_ring(&ig->ring, UF_URING_BGID);
		if (ig->files_registered)
			(void)io_uring_unregister_files(&ig->ring);
		io_uring_queue_exit(&ig->ring);
	}
	ig->ring_up = 0;
	ig->br_registered = 0;
	ig->files_registered = 0;
	if (ig->br)
		munmap(ig->br, ig->br_len);
	ig->br = NULL;
}
