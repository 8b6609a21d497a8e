/* Snapshot-then-stream: load the state of the day from a GLIMPSE 5.0 snapshot server
 * (SoupBinTCP, feed/soup_client.h) into fresh books while the live lines are buffered, then
 * continue the stream from the snapshot's End of Snapshot sequence.
 *
 * Two parts:
 *   - struct uf_snap_buf: the bounded buffer of live packets kept while a snapshot loads,
 *     ONE copy per sequence (a packet is kept only when it carries a sequence no kept packet
 *     has: the B copy of what A delivered is not stored). Pure, no system call: unit-tested
 *     on its own.
 *   - struct uf_snapshot + uf_feed_snapshot_*(): the merge state machine, run by the feed
 *     thread (pipeline.c calls the hooks):
 *
 *       IDLE --start (feed start, hole too large or too old, books stale)--> LOADING
 *       LOADING: line packets go to the buffer, not the arbiter; the client is polled
 *         Login Accepted: fresh books (the reset consumers see, one marked place below),
 *           then every snapshot message applied through the publisher (records + image)
 *         End of Snapshot N, once the lines confirm it (same session, N neither older
 *           than they showed at login nor ahead of what they show by more than max_lead,
 *           the buffered live messages agreeing with the snapshot's orders; else refused:
 *           a failure, below): uf_arb_resync(session, N), then the buffer replayed in
 *           sequence order through the arbiter: packets wholly below N dropped, a straddling
 *           one applied from message N, later ones in order, holes recovered as usual
 *           --> IDLE (or WAIT_LIVE when no live packet has shown the session yet: the first
 *           one then resyncs)
 *         timeout, no working login within max_hold_ms, rejected, buffer full, a claim
 *           refused: failure (counted, why kept for /status); books touched by this attempt
 *           are emptied and flagged stale (GAP record), the buffer goes to the arbiter as
 *           it is (recovery as without a snapshot), a new attempt after a back-off --> IDLE
 *
 * Why the client runs on the feed thread, and only while LOADING: while a snapshot loads the
 * feed applies no live data, so the client's system calls (one non-blocking recv per loop
 * turn) delay nothing but the buffering of live datagrams, which the receive batch still
 * drains every turn; the snapshot's messages must be applied by the thread that owns the
 * books and the ring anyway, so a cold thread would only add a queue and a copy of every
 * message. Outside LOADING the feed thread makes no call of the client at all. */
#ifndef UF_FEED_SNAPSHOT_H
#define UF_FEED_SNAPSHOT_H

#include <stddef.h>
#include <stdint.h>

#include "decode/uf_frame.h"
#include "feed/arbiter.h"
#include "feed/uf_feed_stats.h"
#include "publish/uf_proto.h"
#include "publish/uf_step.h"
#include "feed/soup_client.h"

#define UF_SNAP_HOLES        64   /* holes below the highest buffered sequence tracked */
#define UF_SNAP_CHECK_REFS   256  /* orders the End of Snapshot check follows at once */
#define UF_SNAP_RETRY_MIN_MS 1000 /* first retry after a failure */
#define UF_SNAP_RETRY_MAX_MS 30000

/* One buffered datagram. */
struct uf_snap_pkt {
	uint64_t seq;   /* first sequence */
	uint64_t end;   /* sequence after its last message */
	uint64_t rx_ns; /* receive time */
	uint32_t len;   /* bytes in data */
	uint16_t src;   /* line index */
	uint8_t *data;  /* copy (slot_size bytes reserved) */
};

/* Live packets kept while a snapshot loads: one copy per sequence, bounded. */
#define UF_SNAP_EOS_MAX 64 /* largest end-of-session datagram kept (bytes) */

struct uf_snap_buf {
	uint32_t cap;             /* packets */
	uint32_t n;               /* kept, in arrival order */
	uint32_t slot_size;       /* bytes per copy */
	struct uf_snap_pkt *pkts; /* cap entries */
	uint32_t *order;          /* indices sorted by seq (uf_snap_buf_sort) */
	uint8_t *mem;             /* cap * slot_size (mmap, faulted lazily) */
	size_t mem_len;           /* its length */
	uint64_t lo;              /* lowest kept sequence: a lagging line may bring older ones */
	uint64_t hi;              /* sequence after the highest kept message (0 = none) */
	uint32_t nholes;          /* tracked holes below hi */
	int holes_lost;           /* more holes than tracked: keep any packet below hi */
	struct {
		uint64_t first, end; /* [first, end) not kept yet */
	} holes[UF_SNAP_HOLES];
	char session[UF_FRAME_SESSION_LEN]; /* session of the kept packets */
	int have_session;                   /* session is set */
	uint64_t hi_line[2]; /* sequence after the highest message each line showed (copies too):
	                      * what both lines showed is confirmed (uf_snap_buf_confirmed) */
	/* The last end-of-session packet of each line (the day may end while a snapshot
	 * loads; the arbiter must still see it, after the data). */
	uint8_t eos[2][UF_SNAP_EOS_MAX]; /* copies (a framing's end of session is a header) */
	uint32_t eos_len[2];             /* their lengths */
	uint64_t eos_rx[2];              /* their receive times */
	uint8_t have_eos[2];             /* copy present */
};

/* Reserves cap copies of slot_size bytes (MAP_NORESERVE). 0 or -ENOMEM. Cold. */
int uf_snap_buf_init(struct uf_snap_buf *b, uint32_t cap, uint32_t slot_size);
void uf_snap_buf_fini(struct uf_snap_buf *b);
/* Forgets every packet (memory kept). */
void uf_snap_buf_clear(struct uf_snap_buf *b);

/* Keeps a validated data packet if it carries a sequence not kept yet. Returns 1 kept,
 * 0 not needed (every sequence kept already, or another session than the kept ones),
 * -ENOSPC full (not kept), -EMSGSIZE larger than a slot. No system call. */
int uf_snap_buf_add(struct uf_snap_buf *b, const struct uf_frame *pkt, uint64_t rx_ns,
                    unsigned src);

/* Keeps the latest end-of-session packet of line `src` (< 2). Returns 1 kept, 0 not one (or
 * longer than UF_SNAP_EOS_MAX). */
int uf_snap_buf_add_eos(struct uf_snap_buf *b, const struct uf_frame *pkt, uint64_t rx_ns,
                        unsigned src);

/* The sequence after the highest message the buffer holds as confirmed (0: none): shown by
 * both lines (when `nlines` is 2), or continued, i.e. in the run without a hole from the
 * lowest kept sequence up to the start of its last packet (that packet's own count vouches
 * for nothing; a run of one packet confirms nothing). A lone forged packet far ahead on one
 * line raises neither. Cold: O(n). */
uint64_t uf_snap_buf_confirmed(const struct uf_snap_buf *b, int nlines);

/* Orders b->order[0..n) by sequence (ties: arrival order). Cold. */
void uf_snap_buf_sort(struct uf_snap_buf *b);

/* Why an attempt failed (struct uf_feed_stats.snapshot_last_failure; uf_snap_why_name). */
enum uf_snap_why {
	UF_SNAP_WHY_NONE = 0,
	UF_SNAP_WHY_TIMEOUT,     /* no End of Snapshot within snapshot.timeout_ms */
	UF_SNAP_WHY_DONE,        /* the server ended the session or refused the login ('A') */
	UF_SNAP_WHY_BUFFER_FULL, /* the live buffer filled up */
	UF_SNAP_WHY_LEAD,        /* End of Snapshot beyond the lines + max_lead: refused */
	UF_SNAP_WHY_LAG,         /* End of Snapshot below the lines at login - max_lead: refused */
	UF_SNAP_WHY_SESSION,     /* the server's session is not the live lines' one: refused */
	UF_SNAP_WHY_HOLD,        /* max_hold_ms without a working login: live data released */
	UF_SNAP_WHY_CLIENT,      /* the client could not be created */
	UF_SNAP_WHY_ORDERS,      /* the buffered live messages contradict the snapshot's orders */
	UF_SNAP_WHY_COUNT,
};

/* "timeout", "lead", ... ("?" out of range). */
const char *uf_snap_why_name(unsigned why);

/* struct uf_feed_stats.snapshot_last_disconnect: errno, the refused packet's kind and the
 * type letter of the packet that ended the connection, in one gauge. */
#define UF_SNAP_DISC(err, refusal, packet)                                                         \
	((uint64_t)(uint32_t)(-(err)&0xffff) | (uint64_t)(refusal) << 16 | (uint64_t)(packet) << 24)
#define UF_SNAP_DISC_ERRNO(v)   ((int)((v)&0xffff))
#define UF_SNAP_DISC_REFUSAL(v) ((unsigned)(((v) >> 16) & 0xff)) /* 1 + enum uf_soup_err */
#define UF_SNAP_DISC_PACKET(v)  ((unsigned)(((v) >> 24) & 0xff))

enum uf_snap_state {
	UF_SNAP_IDLE = 0,  /* no snapshot running */
	UF_SNAP_LOADING,   /* client running, live packets buffered */
	UF_SNAP_WAIT_LIVE, /* loaded; the next live packet names the session to resync (and is
	                    * checked: same session as the snapshot, End of Snapshot not beyond
	                    * it by more than max_lead) */
};

/* The feed's snapshot state (inside struct uf_feed). */
struct uf_snapshot {
	int enabled;                    /* a snapshot server is configured */
	enum uf_snap_state state;       /* see above */
	struct uf_soup_client_params p; /* client parameters from the config */
	struct uf_soup_client *cl;      /* client of the current attempt (NULL when IDLE) */
	uint64_t started_ns;            /* attempt start (monotonic) */
	uint64_t deadline_ns;           /* attempt gives up after this */
	uint64_t retry_ns;              /* no new attempt before this */
	uint32_t retry_ms;              /* current back-off after failures */
	uint64_t timeout_ns;            /* per attempt */
	uint64_t max_gap_messages;      /* trigger: hole size (0 = off) */
	uint64_t max_gap_age_ns;        /* trigger: hole age (0 = off) */
	uint64_t unrecovered_seen;      /* gaps_unrecovered when last looked at */
	int touched;                    /* this attempt reset the books */
	int ended;                      /* End of Snapshot seen */
	int want;                       /* load one at the next retry time (books known wrong) */
	/* Re-loads to clear books flagged uncertain (uf_snap_flag_uncertain): an honest server's
	 * next End of Snapshot usually falls where the live orders place it exactly, and the
	 * flag would otherwise hold until the next RESET (all day, /ready 503). Bounded, so a
	 * server whose End is never placed exactly is not asked for ever. */
	uint32_t reload_max;     /* snapshot.reload_uncertain: re-loads in a row (0 = never) */
	uint32_t reloads;        /* re-loads started since a load last ended certain */
	int reload;              /* re-load at the next retry time (books flagged uncertain) */
	int reloading;           /* the running attempt is such a re-load */
	int overflow;            /* the live buffer was full: give the attempt up */
	enum uf_snap_why refuse; /* a callback refused the load: fail the attempt so */
	uint64_t max_lead;       /* snapshot.max_lead (messages) */
	uint64_t max_hold_ns;    /* snapshot.max_hold_ms */
	uint64_t shown_login;    /* what the lines showed at the last Login Accepted */
	char login_session[UF_FRAME_SESSION_LEN]; /* that login's session */
	uint64_t end_seq;                         /* End of Snapshot: next real-time sequence */
	uint64_t ended_ns; /* when it came: the lines must confirm it within max_hold_ms */
	uint64_t msgs;     /* messages of this attempt's current login */
	/* What the orders could not confirm of the End of Snapshot accepted (uf_snap_bracket):
	 * N lies in [unc_lo, unc_hi]; the books of the messages in [unc_lo, unc_hi) are flagged
	 * stale at the merge (a partial execution or cancel there cannot be placed). */
	uint32_t *unc;    /* those books (instruments), each once */
	uint32_t nunc;    /* entries in unc */
	uint32_t unc_cap; /* unc's room */
	int unc_all;      /* no room to name them: every book */
	uint64_t unc_lo, unc_hi;
	struct uf_snap_buf buf; /* live packets while LOADING */
	/* What the loader works with (linked by uf_feed_snapshot_init; the feed owns them). */
	struct uf_pub_step *step;     /* the publish step: snapshot messages are applied into it,
	                               * its hooks flush, publish a gap, void the books */
	const struct uf_proto *proto; /* the venue: framing and snapshot_msg */
	struct uf_arb *arb;           /* the live stream: resync, replay of buffered packets */
	struct uf_feed_stats *st;     /* the feed's counters (snapshot_*, gaps_unrecovered) */
	const char *name;             /* the feed's name (log lines) */
	int nlines;                   /* lines: sources at or above are the request server */
	int on_start;                 /* load one when the feed starts */
};

/* snap_check.c, the End of Snapshot N against the orders of the live messages buffered
 * meanwhile (cold, once per End of Snapshot; docs/snapshot.md "Trust"):
 * uf_snap_check_orders: before N an order a message ended must be absent from the snapshot and
 * one it added present; from N on the reverse. Returns 0, or -1 with what[] naming the message
 * and the order.
 * uf_snap_bracket: every order the run of live messages around N names is placed by the shares
 * the snapshot holds of it (uf_snap_place), which brackets the true N; N outside the bracket is
 * refused (-1, what[] says why); the books of the messages inside it, whose effect nothing
 * places, are left in s->unc for the merge to flag. */
int uf_snap_check_orders(struct uf_snapshot *s, uint64_t n, char *what, size_t wlen);
int uf_snap_bracket(struct uf_snapshot *s, uint64_t n, char *what, size_t wlen);

/* feed.c: from the config (cold), linking the feed's publish step, protocol, arbiter and
 * counters. 0, -ENOMEM, -EINVAL (client parameters) or -ENOTSUP (the protocol has no
 * snapshot service). */
int uf_feed_snapshot_init(struct uf_snapshot *s, const struct uf_feed_config *cfg,
                          const struct uf_proto *proto, struct uf_pub_step *step,
                          struct uf_arb *arb, struct uf_feed_stats *st);
void uf_feed_snapshot_fini(struct uf_snapshot *s);

/* pipeline.c: at the start of uf_feed_run (loads one when snapshot.on_start). */
void uf_feed_snapshot_run_start(struct uf_snapshot *s);

/* pipeline.c, per validated line packet while state != IDLE: 1 when the snapshot took it
 * (buffered or dropped), 0 when it goes on to the arbiter. */
int uf_feed_snapshot_packet(struct uf_snapshot *s, const struct uf_frame *pkt, uint64_t rx_ns,
                            unsigned src);

/* pipeline.c, once per loop turn when uf_feed_snapshot_due(): drives the client while
 * LOADING (and merges or fails), otherwise checks the triggers. */
void uf_feed_snapshot_step(struct uf_snapshot *s);

#endif /* UF_FEED_SNAPSHOT_H */
