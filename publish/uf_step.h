/* The publish step: where a protocol's messages become records on their way to the ring.
 *
 * The engine (feed/) owns one per feed: the publisher, the record buffer of the packet in
 * flight and the hooks that hand it on (symbol filter, ring, image; feed/pipeline.c). A
 * protocol entry (publish/uf_proto.h) applies a packet's messages into it and calls
 * uf_step_room() before each message, so the buffer never overflows and a long packet is
 * published in steps. The entry sees nothing of the engine but this struct.
 *
 * Single-threaded (the feed thread). The hooks are the engine's; the hot path calls `split`
 * only when the buffer is full (about once per UF_FEED_PUBLISH_RECS records), `decoded` only
 * on a timed packet, `msg_error` only for a message that did not decode. */
#ifndef UF_STEP_H
#define UF_STEP_H

#include <stddef.h>
#include <stdint.h>

#include "common/uf_compiler.h"
#include "publish/uf_publish.h"
#include "publish/uf_record.h"

/* Why a message of a valid packet was not applied (the engine counts each kind). */
enum uf_step_err {
	UF_STEP_ERR_EMPTY = 0,  /* a zero-length message */
	UF_STEP_ERR_UNKNOWN,    /* a message type the protocol does not know */
	UF_STEP_ERR_BAD_LENGTH, /* a known type with the wrong length */
};

struct uf_pub_step {
	struct uf_publisher *pub; /* books and records (publish/uf_publish.h) */
	struct uf_record *recs;   /* the records waiting to be handed on (the engine's buffer) */
	size_t nrec;              /* records waiting in recs */
	size_t rec_cap;           /* recs usable in one publish (the ring's batch, at most the
	                           * buffer) */
	size_t step_cap;          /* records per publish step for the current receive batch
	                           * (<= rec_cap: small while the feed keeps up) */
	uint64_t lat_msgs;        /* messages behind the waiting records (latency samples) */
	uint64_t lat_rx;          /* their receive time */
	int timed;                /* the packet in flight is a stage-timing sample: call
	                           * `decoded` once its messages are decoded */
	/* Hands recs[0..nrec) on now (mid packet: the engine also closes its timing segment)
	 * and sets nrec to 0. */
	void (*split)(void *owner);
	/* Timed packets: the packet's messages are decoded, applying starts now. */
	void (*decoded)(void *owner);
	/* Counts a message that did not decode (enum uf_step_err). Cold. */
	void (*msg_error)(void *owner, enum uf_step_err kind);
	/* The engine's ways out, for whoever feeds the step outside the per-packet path (the
	 * snapshot loader): hand the waiting records on (filter, ring, image, latency, wake);
	 * publish a gap marker for [first, first + count) (every book stale); void every book
	 * with one RESET record (`reason` UF_RESET_*, `session`, stamped feed_seq) and empty the
	 * image. Each hands on what waits first. Cold. */
	void (*flush)(void *owner);
	void (*gap)(void *owner, uint64_t first, uint64_t count);
	void (*reset)(void *owner, uint32_t reason, const char session[10], uint64_t feed_seq);
	void *owner; /* the hooks' context (struct uf_feed) */
};

/* Makes room for `need` records in the current step (a step holds at most step_cap): hands
 * the waiting ones on when they would not fit. Hot, inline: a compare. */
static inline void uf_step_room(struct uf_pub_step *s, size_t need)
{
	if (UF_UNLIKELY(s->nrec + need > s->step_cap))
		s->split(s->owner);
}

/* A message of a valid packet did not decode: counted by kind (`len` 0 is EMPTY whatever
 * `kind` says), and the book it concerned (`instrument`, UF_INSTRUMENT_ALL when the message is
 * too short to say) put in doubt in the stream at its place (a UF_REC_STALE record, in
 * order). The message counts towards the latency samples. Cold. */
void uf_step_msg_error(struct uf_pub_step *s, enum uf_step_err kind, size_t len,
                       uint32_t instrument, uint64_t seq, uint64_t rx_ns);

#endif /* UF_STEP_H */
