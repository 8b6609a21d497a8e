/* The arbiter's parts, shared by its files only (never included outside feed/arb*.c):
 *   arbiter.c      setup, delivery and arbitration proper, resync
 *   arb_holes.c    the bounded queue (min-heap by sequence) and the hole table
 *   arb_session.c  sessions, end of session, the quarantine of uncorroborated jumps
 *   arb_request.c  re-request scheduling, accepted answers, the timers
 * The contract is arbiter.h; each function's comment is at its definition. */
#ifndef UF_ARB_INTERNAL_H
#define UF_ARB_INTERNAL_H

#include <stdint.h>

#include "common/uf_compiler.h"
#include "feed/arbiter.h"

/* ---- the queue: binary min-heap on slots[].seq ---- */

static inline uint64_t uf_arb_key(const struct uf_arb *a, uint32_t i)
{
	return a->slots[a->heap[i]].seq;
}

/* ---- the hole table: sorted, disjoint missing ranges in holes[h0 .. h0 + nholes) ---- */

static inline struct uf_arb_hole *uf_arb_hole_at(struct uf_arb *a, uint32_t i)
{
	return &a->holes[a->h0 + i];
}

/* A hole's life from its opening: the wait for the other line, then 1 + retries tries. The
 * documented bound of the lag (docs/feed.md, "Bound"); answers arriving extend it, up to
 * UF_ARB_HARD_CAP of it. */
static inline uint64_t uf_arb_life(const struct uf_arb *a)
{
	return a->wait_ns + a->deadline_ns;
}

/* ---- quarantine of jumps nothing corroborates yet ---- */

/* Sequence `a->high` + max_jump: how far a line may announce without corroboration. */
static inline uint64_t uf_arb_limit(const struct uf_arb *a)
{
	return a->high > UINT64_MAX - a->p.max_jump ? UINT64_MAX : a->high + a->p.max_jump;
}

/* arb_holes.c: the queue (a min-heap of slots by sequence) and the hole table */
void uf_arb_heap_push(struct uf_arb *a, uint32_t slot);
uint32_t uf_arb_heap_pop(struct uf_arb *a);
void uf_arb_queue_clear(struct uf_arb *a);
int uf_arb_holes_hit(const struct uf_arb *a, uint64_t first, uint64_t end);
void uf_arb_hole_room(struct uf_arb *a);
void uf_arb_hole_remove(struct uf_arb *a, uint32_t i);
void uf_arb_holes_fill(struct uf_arb *a, uint64_t first, uint64_t end, unsigned src);

/* arbiter.c: delivery, arbitration proper (uf_arb_accept), setup and resync */
void uf_arb_give_up(struct uf_arb *a);
void uf_arb_accept(struct uf_arb *a, const struct uf_frame *pkt, uint64_t rx_ns, unsigned src);

/* arb_session.c: sessions, end of session and the quarantine of uncorroborated jumps */
void uf_arb_eos_update(struct uf_arb *a, uint64_t rx_ns);
void uf_arb_eos_contradict(struct uf_arb *a, uint64_t end);
void uf_arb_session_start(struct uf_arb *a, const char *name, int keep_lines);
int uf_arb_other_session(struct uf_arb *a, const struct uf_frame *pkt, uint64_t rx_ns,
                         unsigned src);
int uf_arb_restart(struct uf_arb *a, const struct uf_frame *pkt, uint64_t rx_ns, unsigned src);
/* The rules of a framing whose streams start over (`restart`), for a packet of the current
 * session: 1 when it is an older stream's tail (dropped) or a newer stream's not started yet
 * (held or dropped). Cold for other framings: they never call it. */
int uf_arb_stream_rules(struct uf_arb *a, const struct uf_frame *pkt, uint64_t rx_ns, unsigned src);
int uf_arb_older_stream(struct uf_arb *a, unsigned src);
void uf_arb_sent_note(struct uf_arb *a, const struct uf_frame *pkt);

/* 1 when data packet `pkt` of the current session (send time in pkt_sent) lies wholly at
 * sequences the stream has shown (below `high`: delivered, queued or a hole's) yet was sent
 * after the newest packet that took the stream further. No packet of the current stream is:
 * a stream sends its sequences in order, so every one below `high` was sent before the one
 * that set it. It is a newer stream whose every start its line lost (uf_arb_restart); taken
 * for the current stream's it would be dropped as a duplicate, or fill a hole with another
 * stream's messages. Hot for framings with send times: two compares. */
static inline int uf_arb_sent_too_late(const struct uf_arb *a, const struct uf_frame *pkt)
{
	return a->pkt_sent > a->stream_newest && a->stream_newest && pkt->kind == UF_FRAME_DATA &&
	       uf_frame_next_seq(pkt) <= a->high;
}
void uf_arb_end_stream(struct uf_arb *a, uint64_t last);
void uf_arb_quarantine(struct uf_arb *a, const struct uf_frame *pkt, uint64_t rx_ns, unsigned src);
void uf_arb_quar_recheck(struct uf_arb *a, unsigned src);
int uf_arb_hb_believed(struct uf_arb *a, const struct uf_frame *pkt, uint64_t rx_ns, unsigned src);
void uf_arb_hb_settle(struct uf_arb *a, unsigned src);

/* arb_request.c: re-request scheduling, answers, timers (uf_arb_tick) */
int uf_arb_answer_ok(const struct uf_arb *a, const struct uf_frame *pkt);
void uf_arb_answer_learn(struct uf_arb *a, const struct uf_frame *pkt);

#endif /* UF_ARB_INTERNAL_H */
