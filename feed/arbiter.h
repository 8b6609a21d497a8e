/* A/B arbitration, gap detection and MoldUDP64 recovery for one feed: many copies of one
 * sequenced stream in, exactly one ordered stream out.
 *
 * Every validated packet (from line A, line B or the re-request server) goes through
 * uf_arb_packet(). The arbiter keeps the session and the next expected sequence:
 *   - a packet whose messages were all delivered already is a duplicate (counted, dropped);
 *   - a packet that starts at or before the expected sequence is delivered (from the first
 *     new message) through the `deliver` callback: the first copy wins;
 *   - a packet that starts beyond it opens a hole (the missing range before it): the packet
 *     is copied into a bounded queue (ordered by sequence), once: a copy whose messages are
 *     all queued already (the other line's) is a duplicate and takes no slot. Every hole is
 *     tracked on its own (a sorted table of missing ranges): each waits for the other line
 *     (wait_ms with every socket drained, or until every line has moved wait_packets packets
 *     past it), then gets its own re-requests (unicast, at most max_count messages each,
 *     for what is missing only: never joined with a neighbour, never covering what was
 *     received), retried after timeout_ms up to `retries` times; up to max_in_flight
 *     requests are outstanding at once, at most max_requests_per_s (a credit of time kept
 *     up to max_in_flight requests: a tick sends as many as the time since the last ones
 *     pays for). A request gives its slot back at timeout_ms, but its range is not asked
 *     for again before the server's answer delay (learned from its answers, at least
 *     timeout_ms, at most (retries + 1) x timeout_ms). Queued packets are delivered in
 *     order as soon as what precedes them is filled or given up;
 *   - every hole has a deadline: wait_ms + (retries + 1) x timeout_ms after it opened,
 *     however long it waited for a request slot, so the lag's bound holds whatever the
 *     number of holes. Answers filling part of it push the deadline to (retries + 1) x
 *     timeout_ms after the answer, and a request for its start that is pending while
 *     answers arrive is waited for; neither beyond UF_ARB_HARD_CAP (twice the deadline)
 *     from its opening. At its deadline (or earlier: no server, retries exhausted) it is
 *     handed to the `gap` callback (a gap marker, books flagged stale), counted, and
 *     everything complete behind it is delivered at once; so no data waits longer than the
 *     deadline of the hole before it. A full queue gives up the oldest hole first, counted
 *     the same way plus queue_overflows.
 * Heartbeats and end of session reveal gaps at the tail.
 *
 * What the arbiter trusts (docs/feed.md, "What the arbiter trusts", states the same rules):
 *   - Jumps: a packet of a line whose sequence lies beyond `high` + max_jump (further than
 *     anything the lines have shown so far) is held in that line's quarantine: it opens no
 *     gap, sends no re-request and moves no counter but `quarantined`. It is released, and
 *     then handled like any packet (a gap, recovery...), when it is corroborated: another
 *     line shows a packet within max_jump of it, or its own line continues it with
 *     jump_confirm packets in a row (each starting where the previous ended), or the stream
 *     catches up with it. A packet of its line that does not continue it drops it.
 *   - Heartbeats and ends of session: one announcing beyond `high` (within max_jump) opens
 *     no gap until another live line's heartbeat or end announces at least as far (believed
 *     up to where both did), or its own line repeats it jump_confirm times in a row, or the
 *     stream reaches it; any other packet of its line that leaves it beyond `high` drops it
 *     (heartbeats_*, end_of_session_held).
 *   - End of session counts only when every live line announced it at the same sequence
 *     and no packet showed anything beyond it. A line is live when it sent a packet of the
 *     current session less than line_silent_ns (receive time) before the packet at hand.
 *   - Another session replaces the current one when every live line (and the line that
 *     carries it) showed `need` of its packets in a row (no data or heartbeat of the current
 *     session on that line in between): need = 1 when the current session has ended (or
 *     never showed anything past sequence 1), session_confirm otherwise. The very first
 *     session is taken at once. The new session starts at sequence 1 (its packets dropped
 *     while confirming are recovered like any gap); the previous one is then dropped.
 *   - A stream starting over inside the session (a framing's `restart`: IEX-TP sequence 1
 *     at stream offset 0 after a publisher restart, with the framing's send times, `sent`):
 *     a start sent after every packet that took the current stream further is a newer
 *     stream's. A line shows the newer stream by such a start, or by a packet sent at or
 *     after another line's start (it lost every start), or, when no line shows one, by a
 *     data packet lying below `high` yet sent after the stream's newest packet (no packet
 *     of the current stream is). The newer stream replaces the current one when every live
 *     line shows it, or when its line went on with it for jump_confirm data packets and
 *     the lines that show it not yet stopped being waited for: wait_ms after its start
 *     (receive times), or the line's hold is full. Until then that line's data packets of
 *     it are held (UF_ARB_RESTART_HOLD per line; beyond, and heartbeats, dropped as
 *     wrong_session) and handled first once it starts. A line holding one that shows a
 *     start after data of it, or a later-sent packet whose sequence goes back, shows a
 *     newer one still: the held one starts at once, and the packet is judged against it.
 *     It is handled as a new session of the same name (the lines' liveness kept): what
 *     the old stream received past its holes is delivered, what it still missed is a gap
 *     (one per hole), then a RESET record voids the books (the same on a session change).
 *     From then on a packet sent before the new stream's start (the framing's `sent`) is
 *     the old stream's tail from a line that showed the restart later: dropped (its
 *     wrong_session), never taken for the new stream's message of the same sequence.
 *   - Re-request answers (src UF_ARB_SRC_RECOVERY, already checked to come from the
 *     server's address by the feed) are accepted only when they are data of the current
 *     session lying inside one of the last UF_ARB_REQ_HISTORY ranges requested (at least
 *     8 per request that may be in flight); the rest is
 *     counted in rerequest_answers_rejected and dropped. So `recovered_messages` counts only
 *     messages that answered a request.
 *   - Optional per-line source: uf_arb_source_ok() drops datagrams of a line that do not
 *     come from its configured source (foreign_source of that line).
 *
 * Single-threaded (the feed thread). No allocation after uf_arb_init(); system calls only to
 * send re-requests and to read the clock while a gap is open. */
#ifndef UF_ARBITER_H
#define UF_ARBITER_H

#include <netinet/in.h>
#include <stdint.h>

#include "decode/uf_frame.h"
#include "feed/uf_feed_config.h"
#include "feed/uf_feed_stats.h"

#define UF_ARB_SRC_RECOVERY    UF_CFG_MAX_LINES /* source index of the re-request socket */
#define UF_ARB_SESSION_CONFIRM 16               /* default session_confirm */
#define UF_ARB_MAX_JUMP        10000ull         /* default max_jump (messages) */
#define UF_ARB_JUMP_CONFIRM    4                /* default jump_confirm (packets) */
#define UF_ARB_CONFIRM_MAX     64            /* largest jump_confirm: quarantine slots per line */
#define UF_ARB_LINE_SILENT_NS  5000000000ull /* default line_silent_ns: 5 heartbeat periods */
#define UF_ARB_MAX_IN_FLIGHT   64            /* largest recovery.max_in_flight */
/* Requested ranges an answer may fall in: every request that may be in flight, and the
 * retries of each (a slow server answers an older try of a hole still open). */
#define UF_ARB_REQ_HISTORY 512
/* Upper bounds the configuration accepts (daemon/config.c): beyond them a threshold no
 * longer protects anything (a jump of 2^62, a session needing a million packets). */
#define UF_ARB_MAX_JUMP_MAX        (1ll << 62)
#define UF_ARB_SESSION_CONFIRM_MAX 1000000
#define UF_ARB_LINE_SILENT_MS_MAX  3600000 /* one hour */
/* Waiting for the other line ends at this bound even if the sockets never drain (sustained
 * full batches with one line dead): a needless re-request is cheap, a stalled gap is not. */
#define UF_ARB_WAIT_CAP(wait_ns) (8 * (wait_ns) + 10000000ull)
/* A hole whose answers keep arriving lives past its deadline (each answer pushes it back by
 * (retries + 1) x timeout), but never longer than this from its opening: a server that
 * trickles answers cannot hold the stream forever. `life` is wait_ns + deadline_ns. */
#define UF_ARB_HARD_CAP(life) (2 * (life))

/* What the arbiter needs corroborated before it believes it (see above). Defaults from
 * uf_arb_params_default(); set with uf_arb_set_params() before the first packet. */
struct uf_arb_params {
	uint64_t max_jump;        /* messages beyond `high` a line may jump unconfirmed (>= 1) */
	uint32_t jump_confirm;    /* packets in a row that confirm a jump (1..CONFIRM_MAX) */
	uint32_t session_confirm; /* packets in a row per live line for a new session (>= 1) */
	uint64_t line_silent_ns;  /* a line silent this long is not live (receive time, > 0) */
};

/* The arbiter counts into the feed's stats it is given (uf_arb_init's `st`): the feed-wide
 * lists (gaps, re-requests, recovered messages...), the per-line ones (wins, duplicates...)
 * and its own trust checks, UF_ARB_COUNTERS and UF_ARB_LINE_COUNTERS (feed/uf_feed_stats.h).
 * One set, counted once, read by /status and /metrics as it is written (relaxed stores). */

struct uf_arb_cb {
	/* Deliver messages [pkt->seq + skip, pkt->seq + pkt->count) of a validated data packet,
	 * in order. `src` is the line index or UF_ARB_SRC_RECOVERY. */
	void (*deliver)(void *ctx, const struct uf_frame *pkt, uint32_t skip, uint64_t rx_ns,
	                unsigned src);
	/* Sequences [first, first + count) are given up: publish a gap marker. */
	void (*gap)(void *ctx, uint64_t first, uint64_t count);
	/* A new session started (after the first): books of the old one are void. */
	void (*new_session)(void *ctx, const char session[UF_FRAME_SESSION_LEN]);
	void *ctx;
};

/* One line's quarantine: packets of an uncorroborated jump, in arrival order. */
struct uf_arb_quar {
	uint64_t first;                     /* first sequence held */
	uint64_t next;                      /* sequence after the last packet held */
	uint32_t n;                         /* packets held */
	uint32_t len[UF_ARB_CONFIRM_MAX];   /* their datagram bytes */
	uint64_t rx_ns[UF_ARB_CONFIRM_MAX]; /* their receive times */
	uint8_t *data[UF_ARB_CONFIRM_MAX];  /* their copies (slot_size bytes each) */
};

/* A line's packets of a newer stream (IEX-TP restart) held until that stream starts
 * (uf_arb_restart): copies in `mem`, slot_size bytes each. Sized for the lines running
 * wait_ms apart at a busy feed's packet rate. */
#define UF_ARB_RESTART_HOLD 1024
struct uf_arb_hold {
	uint32_t n;      /* packets held */
	uint32_t *len;   /* their datagram bytes (UF_ARB_RESTART_HOLD; in qmem, cold: out of
	                  * the struct, whose hot fields stay where they were) */
	uint64_t *rx_ns; /* their receive times (likewise) */
	uint8_t *mem;    /* their copies */
};

/* One missing range [first, end) of the stream: nothing of it was received. Holes are kept
 * sorted and disjoint; everything in [expected, high) not in a hole is queued. */
struct uf_arb_hole {
	uint64_t first, end;  /* missing range */
	uint64_t opened_ns;   /* when it was detected (monotonic) */
	uint64_t deadline_ns; /* given up then: opened + the hole's life (wait +
	                       * (retries + 1) x timeout), pushed back by answers
	                       * filling part of it, never past opened +
	                       * UF_ARB_HARD_CAP(life): the lag's bound */
	uint32_t tries;       /* requests for its start (since it moved or answers came) */
	uint32_t asked;       /* 1 once a request covered part of it */
	uint32_t line_pkts[UF_CFG_MAX_LINES]; /* per line: packets beyond it before a request */
};

/* Requests remembered as pending: in flight (holding one of max_in_flight slots until
 * answered or timeout_ns) or timed out but not to be repeated yet (a slow server still answers
 * them: uf_arb_retry_ns). At least UF_ARB_MAX_IN_FLIGHT. */
#define UF_ARB_PENDING_MAX 256

/* One pending re-request. */
struct uf_arb_req {
	uint64_t first, end; /* requested range */
	uint64_t sent_ns;    /* when sent (monotonic) */
	uint32_t slot;       /* 1 while it holds a max_in_flight slot */
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
	const struct uf_framing *framing;       /* the venue's packets (uf_arb_init) */
	struct uf_arb_cb cb;                    /* where results go */
	struct uf_feed_stats *st;               /* counters */
	struct uf_arb_params p;                 /* trust thresholds */
	int nlines;                             /* lines in use */
	uint32_t line_source[UF_CFG_MAX_LINES]; /* expected source per line (s_addr), 0 = any */
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
	uint32_t max_in_flight;    /* re-requests outstanding at once */
	uint64_t deadline_ns;      /* the tries' share of a hole's life: (retries + 1) x
	                            * timeout; a hole lives wait_ns + this from its opening */
	uint64_t (*now)(void);     /* monotonic clock (uf_now_mono_ns; tests set a fake one) */
	/* session */
	char session[UF_FRAME_SESSION_LEN];      /* current session */
	char prev_session[UF_FRAME_SESSION_LEN]; /* previous session: its packets are dropped */
	int have_session;                        /* session is set */
	int have_prev;                           /* prev_session is set */
	char cand_session[UF_FRAME_SESSION_LEN]; /* another session seen while ours runs */
	uint32_t cand_row[UF_CFG_MAX_LINES];     /* its packets in a row, per line */
	uint64_t stream_sent;                    /* venue send time of the current stream's
	                                          * start (framing restart, 0 = none) */
	uint64_t stream_newest;                  /* venue send time of the newest packet that
	                                          * took the current stream further (its high):
	                                          * a start sent no later is this stream's own */
	uint64_t pkt_sent;                       /* the packet at hand's send time (0 = none) */
	int has_restart;                         /* the framing's streams start over (`restart`) */
	int has_sent;                            /* ... and it gives send times (`sent`) */
	uint8_t restart_row[UF_CFG_MAX_LINES];   /* per line: showed a start of a newer stream
	                                          * than the current one */
	int restart_any;                         /* some restart_row is set */
	uint64_t restart_sent[UF_CFG_MAX_LINES]; /* per line: that start's send time */
	uint64_t restart_next[UF_CFG_MAX_LINES]; /* per line: the new stream's next sequence */
	uint32_t restart_cnt[UF_CFG_MAX_LINES];  /* per line: its data packets in a row */
	uint64_t restart_rx[UF_CFG_MAX_LINES];   /* per line: when it showed that start */
	uint64_t restart_last[UF_CFG_MAX_LINES]; /* per line: the newest send time it showed
	                                          * of that stream */
	int replaying;                           /* handling the held packets of a stream
	                                          * that just started (no restart rule then) */
	uint64_t delivered;                  /* messages delivered or given up in this session */
	int eos_seen;                        /* end of session corroborated (every live line) */
	int any_eos;                         /* some line_eos is set */
	uint64_t line_eos[UF_CFG_MAX_LINES]; /* per line: end-of-session sequence (0 = none) */
	uint64_t line_rx[UF_CFG_MAX_LINES];  /* per line: receive time of its last packet */
	uint8_t line_seen[UF_CFG_MAX_LINES]; /* per line: sent a packet of this session */
	int eos_done;                        /* end of session reached and counted */
	uint64_t eos_seq;                    /* its sequence */
	uint64_t expected;                   /* next sequence to deliver */
	uint64_t high;                       /* sequence after the last one announced anywhere */
	uint64_t
	    line_next[UF_CFG_MAX_LINES]; /* per line: sequence after its last packet (0 = none) */
	/* gap state */
	int gap_open;              /* expected < high */
	struct uf_arb_hole *holes; /* hole table: holes[h0 .. h0 + nholes), sorted */
	uint32_t hole_cap;         /* its size (queue_packets + 2: holes <= queued + 1) */
	uint32_t h0, nholes;       /* first entry, entries */
	struct uf_arb_req inflight[UF_ARB_PENDING_MAX]; /* pending re-requests: their ranges
	                                                 * are not asked for again yet */
	uint32_t ninflight;                             /* entries in inflight */
	uint32_t nslots;        /* of them, those holding a max_in_flight slot */
	uint64_t srv_delay_ns;  /* the server's answer delay, learned from answers that filled
	                         * holes: a timed-out range is asked again only after it */
	uint64_t answer_ns;     /* when an answer last filled part of a hole (0: never) */
	uint64_t req_credit_ns; /* rate limit: send time earned, up to max_in_flight intervals */
	uint64_t credit_at_ns;  /* when req_credit_ns was last brought up to date (0: never) */
	int rate_limited;       /* a request is postponed by the rate limit (counted once) */
	int inflight_full;      /* a request waits for a slot (counted once) */
	struct {
		uint64_t first, end; /* a requested range [first, end) */
		uint64_t sent_ns;    /* when (the server's delay is measured from it) */
	} reqs[UF_ARB_REQ_HISTORY];  /* the last ranges requested (end 0 = none) */
	uint32_t nreqs;              /* requests recorded (index of the next % N) */
	/* heartbeats announcing beyond `high`, per line, until corroborated (arb_session.c) */
	uint64_t
	    hb_claim[UF_CFG_MAX_LINES];    /* the sequence its held heartbeats announce (0 none) */
	uint32_t hb_row[UF_CFG_MAX_LINES]; /* heartbeats in a row announcing it */
	/* quarantine of uncorroborated jumps, per line */
	uint32_t nquar;                          /* lines with a non-empty quarantine */
	struct uf_arb_quar q[UF_CFG_MAX_LINES];  /* per line */
	struct uf_arb_hold rs[UF_CFG_MAX_LINES]; /* per line: a newer stream's data packets held
	                                          * until that stream starts (uf_arb_restart) */
	uint8_t *qmem;                           /* q's and rs's copies (mmap, faulted lazily) */
	size_t qmem_len;                         /* its length */
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

/* Sets up the arbiter for `cfg` (recovery.*, lines) and the venue's `framing` (decode/
 * uf_frame.h: queued copies are re-opened and re-requests built through it; one without
 * request_build has no recovery), with re-request socket `fd` (-1: no recovery) and queue
 * slots of `slot_size` bytes. Returns 0, -ENOMEM or -EINVAL (no framing). Cold. */
int uf_arb_init(struct uf_arb *a, const struct uf_feed_config *cfg,
                const struct uf_framing *framing, int fd, uint32_t slot_size,
                struct uf_feed_stats *st, const struct uf_arb_cb *cb);

/* The default trust thresholds (UF_ARB_MAX_JUMP, UF_ARB_JUMP_CONFIRM, ...). */
void uf_arb_params_default(struct uf_arb_params *p);

/* Replaces the trust thresholds (uf_arb_init sets the defaults). Call before the first
 * packet. Returns 0, or -EINVAL for a value out of range (nothing changed). Cold. */
int uf_arb_set_params(struct uf_arb *a, const struct uf_arb_params *p);

/* Accepts datagrams of line `line` only from `source` (INADDR_ANY: from anyone, the
 * default). Returns 0 or -EINVAL (no such line). Cold. */
int uf_arb_set_line_source(struct uf_arb *a, unsigned line, struct in_addr source);

/* 1 when a datagram of line `line` from `from_addr` (network order) may be handed to
 * uf_arb_packet; 0 when it came from another source than the configured one (counted in
 * st->lines[line].foreign_source: the caller drops it). Hot. */
static inline int uf_arb_source_ok(struct uf_arb *a, unsigned line, uint32_t from_addr)
{
	if (line >= UF_CFG_MAX_LINES || !a->line_source[line] || a->line_source[line] == from_addr)
		return 1;
	uf_stat_add(&a->st->lines[line].foreign_source, 1);
	return 0;
}

/* Frees the queue. Safe on a zeroed struct. */
void uf_arb_fini(struct uf_arb *a);

/* One validated packet (kind set by the framing's open) from source `src`. Hot. */
void uf_arb_packet(struct uf_arb *a, const struct uf_frame *pkt, uint64_t rx_ns, unsigned src);

/* Timers: call when a.gap_open, at least every millisecond; sends re-requests, retries and
 * gives up holes at their deadline. `now_ns` is CLOCK_MONOTONIC (a->now's clock). `drained` says
 * the last receive poll emptied every socket: only then can wait_ms prove that no line has the
 * missing packets (a feed thread that was descheduled has not read the other line yet, however long
 * it was away). A hole also stops waiting once EVERY line has delivered wait_packets packets since
 * it opened, and in any case after UF_ARB_WAIT_CAP(wait_ms). */
void uf_arb_tick(struct uf_arb *a, uint64_t now_ns, int drained);

/* 1 while a hole is open (the feed loop then calls uf_arb_tick). */
static inline int uf_arb_gap_open(const struct uf_arb *a)
{
	return a->gap_open;
}

/* When the oldest open hole was detected (monotonic ns), 0 with none: how long the stream
 * has been waiting, for the snapshot's "gap too old" rule. */
static inline uint64_t uf_arb_oldest_hole_ns(const struct uf_arb *a)
{
	return a->nholes ? a->holes[a->h0].opened_ns : 0;
}

/* Snapshot merge (feed/snapshot.c): the books now hold every message before `next_seq` of
 * `session` (NULL: the current one). Continues the stream from `next_seq`: a session other
 * than the current one becomes current (the old one's packets are then dropped); queued
 * packets wholly below next_seq are dropped, one straddling it is delivered from message
 * next_seq on, later ones in order; the hole state (requests, retries) starts afresh.
 * `expected` may move backwards (a snapshot older than what was delivered: the books were
 * replaced, the difference is recovered like any gap). Cold. */
void uf_arb_resync(struct uf_arb *a, const char *session, uint64_t next_seq);

#endif /* UF_ARBITER_H */
