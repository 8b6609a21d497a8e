/* A/B arbitration, gap detection and MoldUDP64 recovery for one feed: many copies of one
 * sequenced stream in, exactly one ordered stream out.
 *
 * Every validated packet (from line A, line B or the re-request server) goes through
 * uf_arb_packet(). The arbiter keeps the session and the next expected sequence:
 *   - a packet whose messages were all delivered already is a duplicate (counted, dropped);
 *   - a packet that starts at or before the expected sequence is delivered (from the first
 *     new message) through the `deliver` callback: the first copy wins;
 *   - a packet that starts beyond it opens a gap: the packet is copied into a bounded queue
 *     (ordered by sequence) and the arbiter waits for the other line: wait_ms with every
 *     socket drained, or until every line has moved wait_packets packets past the hole;
 *     then it sends re-requests (unicast, at most max_count messages each, retried after
 *     timeout_ms up to `retries` times, at most max_requests_per_s) and delivers queued
 *     packets in order as soon as the hole is filled;
 *   - when recovery fails (no server, retries exhausted) or the queue overflows, the hole is
 *     handed to the `gap` callback (a gap marker, books flagged stale), counted, and the
 *     stream goes on.
 * Heartbeats and end of session reveal gaps at the tail. Another session replaces the
 * current one at once when the current one has ended (or never delivered anything), else
 * only after UF_ARB_SESSION_CONFIRM of its packets in a row: a stray packet on the group
 * must not wipe a running day's books. The new session starts at sequence 1 (its first
 * packets, dropped while confirming, are recovered like any gap); packets of the previous
 * session are then dropped.
 *
 * Single-threaded (the feed thread). No allocation after uf_arb_init(); system calls only to
 * send re-requests and to read the clock while a gap is open. */
#ifndef UF_ARBITER_H
#define UF_ARBITER_H

#include <netinet/in.h>
#include <stdint.h>

#include "decode/uf_mold.h"
#include "feed/uf_feed_config.h"
#include "feed/uf_feed_stats.h"

#define UF_ARB_SRC_RECOVERY    UF_CFG_MAX_LINES /* source index of the re-request socket */
#define UF_ARB_SESSION_CONFIRM 16 /* packets in a row that make another session current */
/* Waiting for the other line ends at this bound even if the sockets never drain (sustained
 * full batches with one line dead): a needless re-request is cheap, a stalled gap is not. */
#define UF_ARB_WAIT_CAP(wait_ns) (8 * (wait_ns) + 10000000ull)

struct uf_arb_cb {
	/* Deliver messages [pkt->seq + skip, pkt->seq + pkt->count) of a validated data packet,
	 * in order. `src` is the line index or UF_ARB_SRC_RECOVERY. */
	void (*deliver)(void *ctx, const struct uf_mold_packet *pkt, uint32_t skip, uint64_t rx_ns,
	                unsigned src);
	/* Sequences [first, first + count) are given up: publish a gap marker. */
	void (*gap)(void *ctx, uint64_t first, uint64_t count);
	/* A new session started (after the first): books of the old one are void. */
	void (*new_session)(void *ctx, const char session[UF_MOLD_SESSION_LEN]);
	void *ctx;
};

/* One queued out-of-order packet. */
struct uf_arb_slot {
	uint64_t seq;   /* first sequence */
	uint64_t end;   /* sequence after its last message */
	uint64_t rx_ns; /* receive time */
	uint32_t len;   /* datagram bytes in `data` */
	uint16_t src;   /* source it came from */
	uint8_t *data;  /* copy of the datagram (slot_size bytes reserved) */
};

struct uf_arb {
	struct uf_arb_cb cb;      /* where results go */
	struct uf_feed_stats *st; /* counters */
	int nlines;               /* lines in use */
	/* recovery parameters */
	int recovery;              /* 1 when a request server is configured */
	int fd;                    /* re-request socket (-1 without recovery) */
	struct sockaddr_in server; /* request server */
	uint32_t max_count;        /* messages per re-request */
	uint64_t timeout_ns;       /* re-request timeout */
	uint32_t retries;          /* re-requests per hole start after the first */
	uint64_t wait_ns;          /* wait for the other line before requesting */
	uint32_t wait_packets;     /* ... or this many packets */
	uint64_t min_interval_ns;  /* 1 s / max_requests_per_s */
	/* session */
	char session[UF_MOLD_SESSION_LEN];      /* current session */
	char prev_session[UF_MOLD_SESSION_LEN]; /* previous session: its packets are dropped */
	int have_session;                       /* session is set */
	int have_prev;                          /* prev_session is set */
	char cand_session[UF_MOLD_SESSION_LEN]; /* another session seen while ours runs */
	uint32_t cand_pkts;                     /* its packets since the last one of ours */
	uint64_t delivered;                     /* messages delivered or given up in this session */
	int eos_seen;                           /* end of session received */
	int eos_done;                           /* end of session reached and counted */
	uint64_t eos_seq;                       /* its sequence */
	uint64_t expected;                      /* next sequence to deliver */
	uint64_t high;                          /* sequence after the last one announced anywhere */
	uint64_t
	    line_next[UF_CFG_MAX_LINES]; /* per line: sequence after its last packet (0 = none) */
	/* gap state */
	int gap_open;                             /* expected < high */
	uint64_t gap_since_ns;                    /* when it opened (monotonic) */
	uint32_t gap_pkts;                        /* packets received since */
	uint32_t gap_reqs;                        /* re-requests sent for this gap */
	uint32_t gap_line_pkts[UF_CFG_MAX_LINES]; /* packets per line since the gap opened */
	int req_out;                              /* a re-request is outstanding */
	uint64_t req_first;                       /* its first sequence */
	uint64_t req_end;                         /* sequence after its last */
	uint64_t req_sent_ns;                     /* when sent */
	uint64_t last_req_ns;                     /* last send (rate limit) */
	uint32_t req_tries;                       /* re-requests sent for the current `expected` */
	uint64_t tries_at;                        /* the `expected` those tries were for */
	int rate_limited;                         /* the current attempt was postponed already */
	/* bounded queue: a min-heap of slot indices ordered by seq, plus a free list */
	uint32_t cap;              /* queue_packets */
	uint32_t slot_size;        /* bytes per slot */
	uint32_t nheap;            /* queued packets */
	uint32_t nfree;            /* free slot indices */
	uint32_t *heap;            /* slot indices, heap ordered by slots[].seq */
	uint32_t *freel;           /* free slot indices */
	struct uf_arb_slot *slots; /* cap slots */
	uint8_t *mem;              /* cap * slot_size bytes (mmap, faulted lazily) */
	size_t mem_len;            /* its length */
};

/* Sets up the arbiter for `cfg` (recovery.*, lines) with re-request socket `fd` (-1: no
 * recovery) and queue slots of `slot_size` bytes. Returns 0 or -ENOMEM. Cold. */
int uf_arb_init(struct uf_arb *a, const struct uf_feed_config *cfg, int fd, uint32_t slot_size,
                struct uf_feed_stats *st, const struct uf_arb_cb *cb);

/* Frees the queue. Safe on a zeroed struct. */
void uf_arb_fini(struct uf_arb *a);

/* One validated MoldUDP64 packet (kind set by uf_mold_open) from source `src`. Hot. */
void uf_arb_packet(struct uf_arb *a, const struct uf_mold_packet *pkt, uint64_t rx_ns,
                   unsigned src);

/* Timers: call when a.gap_open, at least every millisecond; sends re-requests, retries and
 * gives up. `now_ns` is CLOCK_MONOTONIC. `drained` says the last receive poll emptied every
 * socket: only then can wait_ms prove that no line has the missing packets (a feed thread
 * that was descheduled has not read the other line yet, however long it was away). A hole
 * also stops waiting once EVERY line has delivered wait_packets packets since it opened, and
 * in any case after UF_ARB_WAIT_CAP(wait_ms). */
void uf_arb_tick(struct uf_arb *a, uint64_t now_ns, int drained);

/* 1 while a hole is open (the feed loop then calls uf_arb_tick). */
static inline int uf_arb_gap_open(const struct uf_arb *a)
{
	return a->gap_open;
}

#endif /* UF_ARBITER_H */
