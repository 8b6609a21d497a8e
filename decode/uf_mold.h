/* MoldUDP64: downstream packets, heartbeats, end of session, re-requests.
 *
 * A downstream packet is a 20-byte header (session @0 10 ASCII, sequence @10 u64, count @18
 * u16) and `count` message blocks (u16 length + data). uf_mold_open() checks every length
 * against the datagram before anything is handed out: a packet that lies is reported by kind
 * (enum uf_mold_err) and must be dropped whole, so sequence tracking never sees half a
 * packet. After a successful open, uf_mold_next() walks the blocks; it still bounds every
 * read by the datagram, so even an unvalidated iterator never reads out of bounds.
 *
 * Everything here is hot and inline: no allocation, no syscalls. */
#ifndef UF_MOLD_H
#define UF_MOLD_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "common/uf_compiler.h"
#include "common/uf_endian.h"
#include "decode/uf_counters.h"
#include "decode/uf_frame.h"

#define UF_MOLD_HDR_LEN       20
#define UF_MOLD_SESSION_LEN   10
#define UF_MOLD_COUNT_END     0xFFFFu /* message count meaning "end of session" */
#define UF_MOLD_REREQUEST_LEN 20      /* a re-request is a header alone */
#define UF_MOLD_MAX_PAYLOAD   65507   /* largest UDP payload over IPv4 */

/* A MoldUDP64 packet's kinds are the engine's frame kinds (decode/uf_frame.h). */
enum uf_mold_kind {
	UF_MOLD_DATA = UF_FRAME_DATA,           /* count >= 1 message blocks */
	UF_MOLD_HEARTBEAT = UF_FRAME_HEARTBEAT, /* count 0: seq is the next expected sequence */
	UF_MOLD_END_OF_SESSION = UF_FRAME_END,  /* count 0xFFFF: seq is the next sequence */
};
_Static_assert(UF_MOLD_SESSION_LEN == UF_FRAME_SESSION_LEN, "a Mold session is a frame session");

/* The MoldUDP64 framing (uf_mold.c): uf_mold_open and the re-request pair behind the
 * engine's framing interface. */
extern const struct uf_framing uf_mold_framing;

/* Reads only the 20-byte header. Returns 0, or -EBADMSG (pkt->err = TRUNCATED_HEADER). */
static inline int uf_mold_parse_header(struct uf_frame *pkt, const uint8_t *buf, size_t len)
{
	pkt->buf = buf;
	pkt->len = len;
	pkt->kind = 0; /* not a walkable packet until uf_mold_open says so */
	pkt->err = 0;
	if (UF_UNLIKELY(len < UF_MOLD_HDR_LEN)) {
		pkt->err = UF_MOLD_ERR_TRUNCATED_HEADER;
		return -EBADMSG;
	}
	memcpy(pkt->session, buf, UF_MOLD_SESSION_LEN);
	pkt->seq = uf_be64(buf + 10);
	pkt->count = uf_be16(buf + 18);
	return 0;
}

/* Called by uf_mold_walk for block i (message bytes and length) once its length is known to
 * lie inside the datagram. */
typedef void (*uf_mold_block_fn)(void *ctx, uint32_t i, const uint8_t *msg, uint16_t len);

/* THE MoldUDP64 block walk: checks the `count` blocks after the header against the datagram
 * (every length inside it, nothing after the last), calling blk (NULL: none) on each block as
 * it goes, so work on a block overlaps the serial walk (load a length, add, load the next).
 * Returns UF_MOLD_DATA (pkt->kind set), or -EBADMSG with pkt->err saying which length lied;
 * blocks before the lie were already seen by blk, so a caller hands nothing on before the
 * whole walk succeeded. Needs a parsed header with 1 <= count < 0xFFFF. Always inlined: with
 * a constant blk the callback is inlined too (uf_mold_open, decode/uf_batch.h's fused
 * decode). */
static inline __attribute__((always_inline)) int uf_mold_walk(struct uf_frame *pkt,
                                                              uf_mold_block_fn blk, void *ctx)
{
	const uint8_t *p = pkt->buf + UF_MOLD_HDR_LEN, *end = pkt->buf + pkt->len;
	for (uint32_t i = 0; i < pkt->count; i++) {
		if (UF_UNLIKELY(end - p < 2)) {
			pkt->err = p == end ? UF_MOLD_ERR_COUNT_MISMATCH
			                    : UF_MOLD_ERR_BLOCK_LENGTH_TRUNCATED;
			return -EBADMSG;
		}
		uint16_t bl = uf_be16(p);
		if (UF_UNLIKELY((size_t)(end - p - 2) < bl)) {
			pkt->err = UF_MOLD_ERR_BLOCK_OVERRUNS_PACKET;
			return -EBADMSG;
		}
		if (blk)
			blk(ctx, i, p + 2, bl);
		p += 2 + (size_t)bl;
	}
	if (UF_UNLIKELY(p != end)) {
		pkt->err = UF_MOLD_ERR_TRAILING_BYTES;
		return -EBADMSG;
	}
	pkt->kind = UF_MOLD_DATA;
	return UF_MOLD_DATA;
}

/* Parses and validates a whole downstream datagram.
 * Returns its kind (UF_MOLD_DATA, UF_MOLD_HEARTBEAT, UF_MOLD_END_OF_SESSION), or -EBADMSG
 * with pkt->err saying which length lied. O(count): touches only the length fields. */
static inline int uf_mold_open(struct uf_frame *pkt, const uint8_t *buf, size_t len)
{
	if (uf_mold_parse_header(pkt, buf, len) < 0)
		return -EBADMSG;
	if (pkt->count == 0 || pkt->count == UF_MOLD_COUNT_END) {
		if (UF_UNLIKELY(len != UF_MOLD_HDR_LEN)) { /* a header-only packet carrying bytes */
			pkt->err = pkt->count ? UF_MOLD_ERR_BAD_END_OF_SESSION
			                      : UF_MOLD_ERR_TRAILING_BYTES;
			return -EBADMSG;
		}
		pkt->kind = pkt->count ? UF_MOLD_END_OF_SESSION : UF_MOLD_HEARTBEAT;
		return pkt->kind;
	}
	return uf_mold_walk(pkt, NULL, NULL);
}

/* uf_mold_open plus counting: packets, heartbeats, end_of_session, mold_err[kind]. */
static inline int uf_mold_open_counted(struct uf_frame *pkt, const uint8_t *buf, size_t len,
                                       struct uf_decode_counters *c)
{
	int k = uf_mold_open(pkt, buf, len);
	UF_DC_ADD(c->packets, 1);
	if (UF_UNLIKELY(k < 0))
		UF_DC_ADD(c->mold_err[pkt->err], 1);
	else if (k == UF_MOLD_HEARTBEAT)
		UF_DC_ADD(c->heartbeats, 1);
	else if (k == UF_MOLD_END_OF_SESSION)
		UF_DC_ADD(c->end_of_session, 1);
	return k;
}

/* Starts walking the blocks of an opened packet (no blocks unless kind is UF_MOLD_DATA). */
static inline void uf_mold_iter_init(struct uf_frame_iter *it, const struct uf_frame *pkt)
{
	it->p = pkt->buf + UF_MOLD_HDR_LEN;
	it->end = pkt->buf + pkt->len;
	it->seq = pkt->seq;
	it->left = pkt->kind == UF_MOLD_DATA ? pkt->count : 0;
	if (pkt->len < UF_MOLD_HDR_LEN) { /* never opened: nothing to walk */
		it->p = it->end;
		it->left = 0;
	}
}

/* Next block: returns 1 and fills `b`, or 0 when the packet is done (or a length would
 * overrun: impossible after a successful uf_mold_open). */
static inline int uf_mold_next(struct uf_frame_iter *it, struct uf_frame_msg *b)
{
	if (!it->left || it->end - it->p < 2)
		return 0;
	uint16_t bl = uf_be16(it->p);
	if (UF_UNLIKELY((size_t)(it->end - it->p - 2) < bl))
		return 0;
	b->seq = it->seq++;
	b->msg = it->p + 2;
	b->len = bl;
	it->p += 2 + (size_t)bl;
	it->left--;
	return 1;
}

/* Sequence that follows this packet (what the next packet should start at). */
static inline uint64_t uf_mold_next_seq(const struct uf_frame *pkt)
{
	return uf_frame_next_seq(pkt);
}

/* ---- re-requests (client -> request server) ---- */

/* Writes a 20-byte re-request for `count` messages from `seq` of `session` (10 bytes). */
static inline void uf_mold_rerequest_build(uint8_t out[UF_MOLD_REREQUEST_LEN],
                                           const char session[UF_MOLD_SESSION_LEN], uint64_t seq,
                                           uint16_t count)
{
	memcpy(out, session, UF_MOLD_SESSION_LEN);
	uf_put_be64(out + 10, seq);
	uf_put_be16(out + 18, count);
}

/* Parses a re-request. Returns 0, or -EBADMSG unless it is exactly 20 bytes with a count
 * of 1..0xFFFE (0 and 0xFFFF mean nothing in a request). */
static inline int uf_mold_rerequest_parse(struct uf_frame *req, const uint8_t *buf, size_t len)
{
	if (uf_mold_parse_header(req, buf, len) < 0)
		return -EBADMSG;
	if (len != UF_MOLD_REREQUEST_LEN) {
		req->err = UF_MOLD_ERR_TRAILING_BYTES;
		return -EBADMSG;
	}
	if (req->count == 0 || req->count == UF_MOLD_COUNT_END) {
		req->err = UF_MOLD_ERR_COUNT_MISMATCH;
		return -EBADMSG;
	}
	req->kind = 0;
	return 0;
}

/* ---- building downstream packets (replayer, retransmission server, tests; not hot) ---- */

/* A packet under construction in a caller-owned buffer. */
struct uf_mold_builder {
	uint8_t *buf;   /* caller's buffer, at least UF_MOLD_HDR_LEN */
	size_t cap;     /* its size (e.g. MTU payload: 1472 for a 1500-byte MTU) */
	size_t len;     /* bytes written so far */
	uint16_t count; /* blocks added so far */
};

/* Starts a data packet for `session` whose first block is `seq`. -EINVAL if cap < 20. */
int uf_mold_builder_init(struct uf_mold_builder *b, uint8_t *buf, size_t cap,
                         const char session[UF_MOLD_SESSION_LEN], uint64_t seq);
/* Appends one message block. -ENOSPC when it does not fit (the packet is unchanged),
 * -EMSGSIZE if len > 0xFFFF, -EOVERFLOW at 0xFFFE blocks. */
int uf_mold_builder_add(struct uf_mold_builder *b, const uint8_t *msg, size_t len);
/* Writes a heartbeat (count 0) or end-of-session (count 0xFFFF) header into out[20]. */
void uf_mold_build_heartbeat(uint8_t out[UF_MOLD_HDR_LEN], const char session[UF_MOLD_SESSION_LEN],
                             uint64_t next_seq);
void uf_mold_build_end_of_session(uint8_t out[UF_MOLD_HDR_LEN],
                                  const char session[UF_MOLD_SESSION_LEN], uint64_t next_seq);

#endif /* UF_MOLD_H */
