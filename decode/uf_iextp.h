/* IEX-TP 1.25 (IEX Transport Protocol): the framing of IEX DEEP and TOPS over UDP.
 *
 * An outbound segment is a 40-byte little-endian header then `count` message blocks, each a
 * u16 little-endian length and that many bytes:
 *
 *   @0  u8  version (1)          @1  u8  reserved            @2  u16 message protocol id
 *   @4  u32 channel id           @8  u32 session id          @12 u16 payload length
 *   @14 u16 message count        @16 i64 stream offset       @24 i64 first message sequence
 *   @32 i64 send time (ns since the epoch)
 *
 * The payload (the blocks) is exactly `payload length` bytes and ends the datagram. A count of
 * 0 is a heartbeat whose first sequence is the next message's sequence; IEX-TP has no end of
 * session marker (a new session id starts a new stream).
 *
 * uf_iextp_open() checks every length against the datagram before anything is handed out
 * (version, protocol id, payload length against the datagram, each block inside the payload,
 * exactly `count` blocks, sequence in range): a segment that lies is refused whole with
 * f->err saying why, one of enum uf_mold_err's kinds (decode/uf_counters.h), counted by kind
 * like a MoldUDP64 packet. The binary session id is rendered in decimal, left aligned and space
 * padded, into the frame's 10-byte session, so sessions compare the same way for every venue.
 *
 * Everything a feed calls per packet is inline: no allocation, no system calls. */
#ifndef UF_IEXTP_H
#define UF_IEXTP_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "common/uf_compiler.h"
#include "common/uf_endian.h"
#include "decode/uf_counters.h"
#include "decode/uf_frame.h"

#define UF_IEXTP_HDR_LEN    40     /* header bytes before the first block */
#define UF_IEXTP_VERSION    1      /* the only version IEX-TP 1.25 defines */
#define UF_IEXTP_PROTO_TOPS 0x8003 /* message protocol id of TOPS (1.5, 1.6) */
#define UF_IEXTP_PROTO_DEEP 0x8004 /* message protocol id of DEEP (1.0) */
#define UF_IEXTP_MAX_COUNT  0xFFFFu

/* Every header field, host order (uf_iextp_parse_header): what tools print and tests check.
 * The frame (struct uf_frame) carries only what arbitration needs. */
struct uf_iextp_hdr {
	uint8_t version;       /* 1 */
	uint8_t reserved;      /* unused by IEX-TP 1.25 (not checked) */
	uint16_t protocol_id;  /* UF_IEXTP_PROTO_DEEP / _TOPS */
	uint32_t channel_id;   /* channel the stream belongs to */
	uint32_t session_id;   /* stream identity: a new id starts a new sequence space */
	uint16_t payload_len;  /* bytes of message blocks after the header */
	uint16_t count;        /* message blocks; 0 = heartbeat */
	int64_t stream_offset; /* byte offset of this payload in the session's stream */
	int64_t first_seq;     /* sequence of the first message (heartbeat: the next one) */
	int64_t send_time;     /* ns since the epoch, when the segment was sent */
};

/* The IEX-TP framings (uf_iextp.c). uf_iextp_framing accepts DEEP and TOPS segments (tools
 * reading either); uf_iextp_deep_framing and uf_iextp_tops_framing accept only their own
 * protocol id and refuse the other as wrong_protocol_id (a feed configured for one protocol).
 * request_build/request_parse are NULL: see docs/decode.md ("IEX-TP") for recovery. */
extern const struct uf_framing uf_iextp_framing;
extern const struct uf_framing uf_iextp_deep_framing;
extern const struct uf_framing uf_iextp_tops_framing;

/* Reads the 40-byte header into h (no check of its values). Returns 0, or -EBADMSG when
 * len < UF_IEXTP_HDR_LEN. Cold and hot alike: a few loads. */
static inline int uf_iextp_parse_header(struct uf_iextp_hdr *h, const uint8_t *buf, size_t len)
{
	if (UF_UNLIKELY(len < UF_IEXTP_HDR_LEN))
		return -EBADMSG;
	h->version = buf[0];
	h->reserved = buf[1];
	h->protocol_id = uf_le16(buf + 2);
	h->channel_id = uf_le32(buf + 4);
	h->session_id = uf_le32(buf + 8);
	h->payload_len = uf_le16(buf + 12);
	h->count = uf_le16(buf + 14);
	h->stream_offset = uf_le64s(buf + 16);
	h->first_seq = uf_le64s(buf + 24);
	h->send_time = uf_le64s(buf + 32);
	return 0;
}

/* Renders a session id into the 10-byte frame session: decimal, left aligned, space padded
 * (a u32 has at most 10 digits). */
static inline void uf_iextp_session_render(char out[UF_FRAME_SESSION_LEN], uint32_t id)
{
	char d[UF_FRAME_SESSION_LEN];
	int n = 0;
	do {
		d[n++] = (char)('0' + id % 10);
		id /= 10;
	} while (id);
	for (int i = 0; i < UF_FRAME_SESSION_LEN; i++)
		out[i] = i < n ? d[n - 1 - i] : ' ';
}

/* 1 when `proto` is a message protocol id this decoder knows (DEEP or TOPS). */
static inline int uf_iextp_proto_known(uint16_t proto)
{
	return proto == UF_IEXTP_PROTO_DEEP || proto == UF_IEXTP_PROTO_TOPS;
}

/* Parses and validates a whole segment whose protocol id must be `want` (0: DEEP or TOPS).
 * Returns UF_FRAME_DATA or UF_FRAME_HEARTBEAT with f filled (session rendered, seq = first
 * sequence, count = message count), or -EBADMSG with f->err one of: truncated_header,
 * bad_version, wrong_protocol_id, payload_length_past_datagram (payload length runs past the
 * datagram), trailing_bytes (bytes after the payload, or a heartbeat with a payload),
 * block_length_truncated, block_overruns_packet (a block runs past the payload),
 * count_mismatch (fewer blocks than the count), bad_sequence (first sequence < 1, or the
 * segment's last sequence overflows). O(count): touches only the length fields. */
static inline int uf_iextp_open_proto(struct uf_frame *f, const uint8_t *buf, size_t len,
                                      uint16_t want)
{
	f->buf = buf;
	f->len = len;
	f->kind = 0; /* not walkable until the whole segment checked out */
	f->err = 0;
	if (UF_UNLIKELY(len < UF_IEXTP_HDR_LEN)) {
		f->err = UF_MOLD_ERR_TRUNCATED_HEADER;
		return -EBADMSG;
	}
	uint16_t proto = uf_le16(buf + 2);
	size_t plen = uf_le16(buf + 12);
	int64_t seq = uf_le64s(buf + 24);
	f->count = uf_le16(buf + 14);
	f->seq = (uint64_t)seq;
	uf_iextp_session_render(f->session, uf_le32(buf + 8));
	if (UF_UNLIKELY(buf[0] != UF_IEXTP_VERSION)) {
		f->err = UF_MOLD_ERR_BAD_VERSION;
		return -EBADMSG;
	}
	if (UF_UNLIKELY(want ? proto != want : !uf_iextp_proto_known(proto))) {
		f->err = UF_MOLD_ERR_WRONG_PROTOCOL_ID;
		return -EBADMSG;
	}
	if (UF_UNLIKELY(plen > len - UF_IEXTP_HDR_LEN)) {
		f->err = UF_MOLD_ERR_PAYLOAD_PAST_DATAGRAM;
		return -EBADMSG;
	}
	if (UF_UNLIKELY(plen < len - UF_IEXTP_HDR_LEN)) {
		f->err = UF_MOLD_ERR_TRAILING_BYTES;
		return -EBADMSG;
	}
	if (UF_UNLIKELY(seq < 1 || seq > INT64_MAX - (int64_t)f->count)) {
		f->err = UF_MOLD_ERR_BAD_SEQUENCE;
		return -EBADMSG;
	}
	if (f->count == 0) {
		if (UF_UNLIKELY(plen != 0)) { /* a heartbeat carrying bytes */
			f->err = UF_MOLD_ERR_TRAILING_BYTES;
			return -EBADMSG;
		}
		f->kind = UF_FRAME_HEARTBEAT;
		return UF_FRAME_HEARTBEAT;
	}
	const uint8_t *p = buf + UF_IEXTP_HDR_LEN, *end = buf + len;
	for (uint32_t i = 0; i < f->count; i++) {
		if (UF_UNLIKELY(end - p < 2)) {
			f->err = p == end ? UF_MOLD_ERR_COUNT_MISMATCH
			                  : UF_MOLD_ERR_BLOCK_LENGTH_TRUNCATED;
			return -EBADMSG;
		}
		size_t bl = uf_le16(p);
		if (UF_UNLIKELY((size_t)(end - p - 2) < bl)) {
			f->err = UF_MOLD_ERR_BLOCK_OVERRUNS_PACKET;
			return -EBADMSG;
		}
		p += 2 + bl;
	}
	if (UF_UNLIKELY(p != end)) { /* bytes inside the payload after `count` blocks */
		f->err = UF_MOLD_ERR_TRAILING_BYTES;
		return -EBADMSG;
	}
	f->kind = UF_FRAME_DATA;
	return UF_FRAME_DATA;
}

/* uf_iextp_open_proto for DEEP or TOPS segments (any known protocol id). */
static inline int uf_iextp_open(struct uf_frame *f, const uint8_t *buf, size_t len)
{
	return uf_iextp_open_proto(f, buf, len, 0);
}

/* uf_iextp_open_proto plus counting: iex_packets and packets, heartbeats, mold_err[kind]. */
static inline int uf_iextp_open_counted(struct uf_frame *f, const uint8_t *buf, size_t len,
                                        uint16_t want, struct uf_decode_counters *c)
{
	int k = uf_iextp_open_proto(f, buf, len, want);
	UF_DC_ADD(c->packets, 1);
	UF_DC_ADD(c->iex_packets, 1);
	if (UF_UNLIKELY(k < 0))
		UF_DC_ADD(c->mold_err[f->err], 1);
	else if (k == UF_FRAME_HEARTBEAT)
		UF_DC_ADD(c->heartbeats, 1);
	return k;
}

/* Starts walking the blocks of an opened segment (none unless its kind is UF_FRAME_DATA). */
static inline void uf_iextp_iter_init(struct uf_frame_iter *it, const struct uf_frame *f)
{
	it->p = f->buf + UF_IEXTP_HDR_LEN;
	it->end = f->buf + f->len;
	it->seq = f->seq;
	it->left = f->kind == UF_FRAME_DATA ? f->count : 0;
	if (f->len < UF_IEXTP_HDR_LEN) { /* never opened: nothing to walk */
		it->p = it->end;
		it->left = 0;
	}
}

/* Next block: 1 with `m` filled, or 0 when the segment is done (or a length would overrun:
 * impossible after a successful open). */
static inline int uf_iextp_next(struct uf_frame_iter *it, struct uf_frame_msg *m)
{
	if (!it->left || it->end - it->p < 2)
		return 0;
	uint16_t bl = uf_le16(it->p);
	if (UF_UNLIKELY((size_t)(it->end - it->p - 2) < bl))
		return 0;
	m->seq = it->seq++;
	m->msg = it->p + 2;
	m->len = bl;
	it->p += 2 + (size_t)bl;
	it->left--;
	return 1;
}

/* Stream offset of an opened segment (header @16). */
static inline int64_t uf_iextp_stream_offset(const struct uf_frame *f)
{
	return f->len >= UF_IEXTP_HDR_LEN ? uf_le64s(f->buf + 16) : 0;
}

/* Message protocol id of an opened segment (header @2). */
static inline uint16_t uf_iextp_protocol(const struct uf_frame *f)
{
	return f->len >= UF_IEXTP_HDR_LEN ? uf_le16(f->buf + 2) : 0;
}

/* 1 when an opened segment starts a stream: first sequence 1 at stream offset 0. Seen inside
 * one session id in real DEEP captures after a publisher restart (docs/decode.md): the
 * stream that follows is new, not a repeat of the messages already numbered 1.. */
static inline int uf_iextp_is_stream_start(const struct uf_frame *f)
{
	return f->kind != 0 && f->seq == 1 && uf_iextp_stream_offset(f) == 0;
}

/* ---- building segments (replayer, tests; not hot) ---- */

/* A segment under construction in a caller-owned buffer. */
struct uf_iextp_builder {
	uint8_t *buf;   /* caller's buffer, at least UF_IEXTP_HDR_LEN */
	size_t cap;     /* its size (e.g. 1472 for a 1500-byte MTU) */
	size_t len;     /* bytes written so far */
	uint16_t count; /* blocks added so far */
};

/* Starts a data segment whose header is `h` (its payload_len and count are ignored and kept
 * up to date by add). -EINVAL if cap < UF_IEXTP_HDR_LEN. */
int uf_iextp_builder_init(struct uf_iextp_builder *b, uint8_t *buf, size_t cap,
                          const struct uf_iextp_hdr *h);
/* Appends one message block. -ENOSPC when it does not fit (the segment is unchanged),
 * -EMSGSIZE if len > 0xFFFF, -EOVERFLOW at 0xFFFF blocks or a payload past 0xFFFF bytes. */
int uf_iextp_builder_add(struct uf_iextp_builder *b, const uint8_t *msg, size_t len);
/* Writes the 40-byte header `h` as is (payload_len and count included) into out. */
void uf_iextp_write_header(uint8_t out[UF_IEXTP_HDR_LEN], const struct uf_iextp_hdr *h);

#endif /* UF_IEXTP_H */
