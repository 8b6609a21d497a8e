/* uf-bench e2e: the raw-receive baseline (issue 14). A process that only reads the datagrams
 * of a step (same multicast groups and ports, same replay, pinned like the feed thread, the
 * SQPOLL thread like the feed's) with the receive method of the back end under test, and
 * records, per message, (read time - kernel receive timestamp of its datagram): the floor
 * wire-to-publish is compared with. It runs while uringfeed is stopped, so the two never
 * share a CPU or a datagram. Nothing here decodes, arbitrates or publishes. */
#ifndef UF_BENCH_E2E_RAW_H
#define UF_BENCH_E2E_RAW_H

#include <stdint.h>
#include <sys/types.h>

#include "e2e_model.h"

/* How the raw receiver reads: the socket calls of each back end, nothing else. */
enum raw_kind {
	RAW_URING_SQPOLL, /* io_uring multishot recvmsg, provided buffers, SQPOLL thread */
	RAW_URING,        /* the same without SQPOLL (SINGLE_ISSUER | DEFER_TASKRUN) */
	RAW_RECVMMSG,     /* busy recvmmsg(MSG_DONTWAIT) on every socket in turn */
	RAW_EPOLL,        /* epoll_wait, then recvmmsg on the ready sockets */
	RAW_RECVMSG,      /* plain busy recvmsg(MSG_DONTWAIT) loop (issue 14's 4.6 us figure) */
	RAW_COUNT
};

#define RAW_MAX_BURSTS 4096 /* bursts whose drain time one step keeps, at most */

/* Shared between uf-bench and the raw receiver of one step (uf_bench_shared_alloc). The
 * receiver writes everything but `stop`; uf-bench reads it after the child has exited,
 * except `ready`, `tid` and `messages`, which it polls (atomics). */
struct rawctl {
	uint32_t ready;        /* 1 receiving, 2 failed (err says why) */
	uint32_t stop;         /* uf-bench: leave now */
	int32_t tid;           /* the receiving thread (placement and syscall count) */
	char err[160];         /* why it failed */
	uint64_t want;         /* messages of the step: leave once all are in */
	double burst_per;      /* messages per burst (uf-replay's rate x period), 0: steady */
	uint64_t datagrams;    /* data datagrams of the step's session, first copies */
	uint64_t messages;     /* messages in first copies */
	uint64_t kernel_drops; /* SO_RXQ_OVFL total, both sockets */
	uint64_t nsamples;     /* latency samples stored */
	uint64_t nbursts;      /* bursts seen (indices < RAW_MAX_BURSTS) */
	uint64_t burst_first_rx[RAW_MAX_BURSTS]; /* earliest rx_ts of a burst's datagrams */
	uint64_t burst_last_rd[RAW_MAX_BURSTS];  /* read time of its last message's datagram */
	uint64_t burst_msgs[RAW_MAX_BURSTS];     /* messages of the burst received */
};

/* The raw method that matches back end `be`. */
enum raw_kind e2e_raw_for(enum backend be);

/* The raw method a run of back end `be` uses: --raw's (`opt` >= 0, enum raw_kind) or, for
 * "same" (-1), the back end's own. */
static inline enum raw_kind e2e_raw_method(int opt, enum backend be)
{
	return opt >= 0 ? (enum raw_kind)opt : e2e_raw_for(be);
}

/* Its name in the tables and the JSON ("io_uring+SQPOLL", "recvmsg-busy", ...). */
const char *e2e_raw_name(enum raw_kind k);

/* Parses --raw: "same" (-1: each back end's own method) or a method name. 0 or -EINVAL. */
int e2e_raw_parse(const char *s, int *kind);

/* What the receiver listens to and how it is placed. */
struct raw_args {
	enum raw_kind kind;
	char group[2][32]; /* A and B groups */
	uint16_t port[2];  /* their ports */
	char session[11];  /* the step's MoldUDP64 session (10 characters) */
	int cpu;           /* the receiving thread's CPU (the feed thread's), -1: any */
	int sq_cpu;        /* the SQPOLL thread's CPU (RAW_URING_SQPOLL), -1: any */
	uint64_t *samples; /* shared: one sample (ns) per message */
	uint64_t cap;      /* samples at most */
};

/* Forks the receiver; returns its pid once it receives (ctl->ready == 1), or -errno with
 * ctl->err saying why (the child is reaped). */
pid_t e2e_raw_start(const struct raw_args *a, struct rawctl *ctl);

/* Waits until the receiver has ctl->want messages or `linger_ms` passed, then stops and
 * reaps it. Returns 0, or -ETIMEDOUT when it had to be killed. */
int e2e_raw_finish(pid_t pid, struct rawctl *ctl, int linger_ms);

/* Burst index of message `seq` (1-based) for `per` messages per burst: uf-replay's own
 * formula (replay_send.c rp_due), so both sides cut the stream at the same messages. */
static inline uint64_t e2e_burst_of(uint64_t seq, double per)
{
	return per > 0 ? (uint64_t)((double)(seq - 1) / per) : 0;
}

#endif /* UF_BENCH_E2E_RAW_H */
