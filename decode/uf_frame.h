/* A venue's packet framing, seen by the engine: one sequenced datagram described the same way
 * whatever the wire format (MoldUDP64 today, IEX-TP next).
 *
 * The arbiter, the snapshot buffer and the pipeline never parse a venue's header: a framing
 * (struct uf_framing, one per wire format) opens a datagram into a struct uf_frame (session,
 * first sequence, message count, kind), walks its messages and builds the re-requests the
 * arbiter sends; the protocol entry that owns it (publish/uf_proto.h) decodes and applies the
 * messages. Adding a framing is a file under decode/ defining one const struct uf_framing.
 *
 * Everything a framing does per packet is hot: no allocation, no system calls. */
#ifndef UF_FRAME_H
#define UF_FRAME_H

#include <stddef.h>
#include <stdint.h>

#include "common/uf_compiler.h"

/* The session as records carry it (RESET records, the status endpoint): 10 bytes, ASCII,
 * space padded, not terminated. A framing whose session id is binary renders it into these 10
 * bytes (a u32 in decimal fits), so comparing two sessions is a 10-byte compare. */
#define UF_FRAME_SESSION_LEN 10
/* Largest re-request a framing builds (bytes): the arbiter's stack buffer. */
#define UF_FRAME_REQUEST_MAX 64

enum uf_frame_kind {
	UF_FRAME_DATA = 1,      /* count >= 1 messages from seq */
	UF_FRAME_HEARTBEAT = 2, /* no messages: seq is the next expected sequence */
	UF_FRAME_END = 3,       /* end of session: seq is the next sequence; no more data */
};

/* One opened datagram: points into the caller's buffer (zero copy). Filled by a framing's
 * open(); what the arbiter and the snapshot buffer decide on. */
struct uf_frame {
	const uint8_t *buf;                 /* the datagram */
	size_t len;                         /* its length */
	char session[UF_FRAME_SESSION_LEN]; /* session (see UF_FRAME_SESSION_LEN) */
	uint64_t seq;                       /* sequence of the first message (or next expected) */
	uint32_t count;                     /* messages as the header says (the framing's raw
	                                     * value for heartbeats and end of session) */
	uint8_t kind;                       /* enum uf_frame_kind once opened, 0 before */
	uint8_t err;                        /* why open() refused it: enum uf_mold_err's list
	                                     * (uf_counters.h), the framing errors every
	                                     * length-prefixed format has; counted by kind */
};

/* Cursor over the messages of one opened data frame (a framing's iter_init / iter_next). */
struct uf_frame_iter {
	const uint8_t *p;   /* next message (or its length field) */
	const uint8_t *end; /* one past the datagram */
	uint64_t seq;       /* sequence of the next message */
	uint32_t left;      /* messages not yet returned */
};

/* One message of a frame and its sequence number. */
struct uf_frame_msg {
	uint64_t seq;       /* sequence number of this message */
	const uint8_t *msg; /* message bytes, in the datagram */
	uint16_t len;       /* message length (may be 0: the decoder counts that) */
};

/* A wire format's framing: what the engine needs to arbitrate and recover its packets. Every
 * member is required unless marked optional. Const tables, one per format. */
struct uf_framing {
	const char *name;   /* "moldudp64": logs and docs */
	uint32_t max_count; /* most messages one re-request may ask for */
	/* Opens and validates a whole datagram into f (every length checked against the datagram:
	 * a packet that lies is refused whole). Returns its kind (> 0), or -EBADMSG with f->err
	 * set. Hot: called on every datagram, and again on queued copies when they are released. */
	int (*open)(struct uf_frame *f, const uint8_t *buf, size_t len);
	/* Walks the messages of a frame open() returned UF_FRAME_DATA for, in order: iter_init,
	 * then iter_next until it returns 0 (1: `m` filled). Every read stays inside the
	 * datagram even on a frame that was never opened. Cold paths and tools; the hot path
	 * walks inside the protocol entry's apply. */
	void (*iter_init)(struct uf_frame_iter *it, const struct uf_frame *f);
	int (*iter_next)(struct uf_frame_iter *it, struct uf_frame_msg *m);
	/* Optional (NULL: the venue has no re-request service). Writes a re-request for `count`
	 * messages from `seq` of `session` into out[UF_FRAME_REQUEST_MAX]; returns its length.
	 * Cold (a gap is open). */
	size_t (*request_build)(uint8_t *out, const char session[UF_FRAME_SESSION_LEN],
	                        uint64_t seq, uint32_t count);
	/* Optional, the server side of request_build (replayer, tests): parses a re-request into
	 * f (session, seq, count). Returns 0 or -EBADMSG. */
	int (*request_parse)(struct uf_frame *f, const uint8_t *buf, size_t len);
	/* Optional (NULL: a session's sequence never starts over). 1 when an opened frame at
	 * sequence 1 starts its session's stream over (IEX-TP: stream offset 0, seen after a
	 * publisher restart inside one session id), with *sent_ns = when the venue sent it: one
	 * sent after the current stream's start is a new stream (the arbiter voids the books,
	 * feed/arbiter.h), an older one a late copy. Called only for frames at sequence 1. */
	int (*restart)(const struct uf_frame *f, uint64_t *sent_ns);
	/* Optional, with restart: when the venue sent an opened frame (any kind, any sequence),
	 * into *sent_ns; 1 when the frame says, 0 when not. After a stream starts over, a line
	 * still sending the old stream's tail sends sequences the new stream reuses: the arbiter
	 * tells them apart by this (sent before the current stream's start: the old stream).
	 * Hot for those framings: one header read per datagram once a stream's start is known. */
	int (*sent)(const struct uf_frame *f, uint64_t *sent_ns);
};

#define UF_FRAME_PREFETCH_DEFAULT   8  /* datagrams ahead: best of 1-16 in docs/decode.md */
#define UF_FRAME_PREFETCH_MAX_LINES 24 /* lines of one datagram prefetched (1536 B: an MTU) */

/* One read prefetch that the compiler cannot drop. GCC 12 at -O2 deletes __builtin_prefetch
 * loops inside inlined static functions (seen here: `objdump -d | grep prefetch` was empty
 * and prefetch on/off measured the same), so x86 spells the instruction out. */
static inline void uf_frame_prefetch_line(const void *p)
{
#if defined(__x86_64__) || defined(__i386__)
	__asm__ volatile("prefetcht0 %0" : : "m"(*(const char *)p));
#else
	__builtin_prefetch(p, 0, 3);
#endif
}

/* Prefetches the cache lines of one received datagram (capped at UF_FRAME_PREFETCH_MAX_LINES):
 * the receive loop loads datagram i + distance while datagram i is handled, whatever its
 * wire format. */
static inline void uf_frame_prefetch(const uint8_t *data, uint32_t len)
{
	uint32_t lines = (len + UF_CACHELINE - 1) / UF_CACHELINE;
	if (lines > UF_FRAME_PREFETCH_MAX_LINES)
		lines = UF_FRAME_PREFETCH_MAX_LINES;
	for (uint32_t l = 0; l < lines; l++)
		uf_frame_prefetch_line(data + (size_t)l * UF_CACHELINE);
}

/* Sequence that follows this frame (what the next packet should start at). */
static inline uint64_t uf_frame_next_seq(const struct uf_frame *f)
{
	return f->kind == UF_FRAME_DATA ? f->seq + f->count : f->seq;
}

#endif /* UF_FRAME_H */
