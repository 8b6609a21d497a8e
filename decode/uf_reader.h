/* Offline inputs: Nasdaq daily-format ITCH files and classic pcap captures of MoldUDP64 or
 * IEX-TP, plain or gzip'd.
 *
 * uf_reader_open() maps the file read-only and recognises its format:
 *   - gzip (1f 8b): inflated into memory once (decode/uf_gzip.h), then recognised as below;
 *   - classic pcap, microsecond (a1b2c3d4) or nanosecond (a1b23c4d) magic, either byte
 *     order; link type Ethernet (1) with or without 802.1Q/802.1ad tags, or Linux cooked
 *     (113); IPv4; UDP; the UDP payload is a MoldUDP64 datagram and goes through
 *     uf_mold_open(), the same parser the live feed uses, or an IEX-TP segment (DEEP or
 *     TOPS) through uf_iextp_open_proto(). Which one is decided by the first UDP payload
 *     (IEX-TP version 1 and a known message protocol id, else MoldUDP64) unless
 *     uf_reader_set_payload() chose; an IEX capture also keeps the protocol id it started
 *     with, and a segment of another protocol is wrong_protocol_id;
 *   - the daily format (u16 big-endian length + message, repeated); a zero length prefix
 *     means "the length of this type" (seen in real files) and is resolved from the type;
 *   - pcapng (decode/uf_pcapng.h, e.g. uringfeed's own captures): the same, per interface
 *     link type; its datagrams are yielded de-duplicated in sequence order (both lines and
 *     re-request answers of a capture give the arbitrated stream once);
 *   - anything else (other link types, random bytes) is refused with a message
 *     in r->err saying what the file is and what to do.
 * uf_reader_next() then yields every message as (sequence, pointer, length, protocol):
 * MoldUDP64 or IEX-TP sequence numbers for pcap, the 1-based message ordinal for daily files.
 * Frames that are not the feed (not IPv4, not UDP, another UDP port when filtering) are counted as
 * skipped, not as errors. Framing errors of frames that claim to be UDP and malformed packets are
 * counted in the caller's uf_decode_counters and skipped; forward jumps in sequence numbers between
 * packets of one session are counted in `gaps`, and an IEX-TP stream that starts again at
 * sequence 1 and stream offset 0 in the same session in iex_stream_restarts; an IEX-TP segment
 * whose stream offset disagrees with the bytes before it (no gap between them, yet not where the
 * last one ended; or after a gap, before it) in iex_offset_mismatch. The messages are not
 * decoded here: callers decode with uf_decode_msg_counted() (ITCH, proto 0) or
 * uf_iex_decode_counted() (IEX, proto = the message protocol id).
 *
 * Cold path: may log into r->err; allocation-free after open (the file is mmapped, or
 * inflated once). */
#ifndef UF_READER_H
#define UF_READER_H

#include <stddef.h>
#include <stdint.h>

#include "decode/uf_counters.h"
#include "decode/uf_iextp.h"
#include "decode/uf_mold.h"

enum uf_input_format {
	UF_INPUT_DAILY = 1, /* Nasdaq daily-file format */
	UF_INPUT_PCAP = 2,  /* classic pcap of MoldUDP64 or IEX-TP over UDP/IPv4 */
};

/* What a pcap's UDP payloads are (uf_reader_set_payload). */
enum uf_reader_payload {
	UF_PAYLOAD_AUTO = 0,  /* decided by the first UDP payload (the default) */
	UF_PAYLOAD_MOLD = 1,  /* MoldUDP64 (ITCH 5.0 messages) */
	UF_PAYLOAD_IEXTP = 2, /* IEX-TP (DEEP or TOPS messages) */
};

struct uf_reader {
	const uint8_t *base;               /* mapped file (or caller's buffer) */
	size_t size;                       /* its size */
	size_t off;                        /* next unread byte */
	int fd;                            /* open file, -1 for memory input */
	int mapped;                        /* 1 when base is our mmap */
	int format;                        /* enum uf_input_format */
	int pcap_ns;                       /* pcap timestamps in ns (else us) */
	int pcap_swapped;                  /* pcap header in the other byte order */
	uint32_t linktype;                 /* pcap link type */
	uint16_t udp_port;                 /* pcap: only UDP to this destination port, 0 = any */
	int in_packet;                     /* 1 while `it` has blocks left */
	struct uf_frame pkt;               /* current datagram (pcap) */
	struct uf_frame_iter it;           /* blocks of the current datagram */
	uint64_t ordinal;                  /* daily: messages returned so far */
	uint64_t pcap_ts_ns;               /* capture time of the current record (pcap) */
	char session[UF_MOLD_SESSION_LEN]; /* session of the last data packet (gap tracking) */
	uint64_t next_seq;                 /* sequence expected next in that session */
	int have_seq;                      /* next_seq is meaningful */
	int payload;                       /* enum uf_reader_payload (AUTO until decided) */
	uint16_t iex_proto;                /* IEX-TP: message protocol id kept (0 = any known) */
	int64_t next_offset;               /* IEX-TP: stream offset expected next (session) */
	uint8_t *inflated;                 /* gzip input: the inflated file (base), malloc'd */
	struct uf_decode_counters *c;      /* caller's counters (never NULL after open) */
	struct uf_decode_counters own;     /* used when the caller passes NULL: `c` may point
	                                    * here, so an open reader is never copied */
	struct uf_pcapng_reader *png;      /* pcapng input (decode/uf_pcapng.h), else NULL */
	uint64_t png_skip_below;           /* pcapng: messages below this were delivered */
	const uint8_t *frame_ip;           /* IPv4 header of the last frame with a payload */
	char err[256];                     /* why open/next failed, for the user */
};

/* One message from a file. */
struct uf_reader_msg {
	uint64_t seq;       /* MoldUDP64 sequence (pcap) or 1-based ordinal (daily) */
	const uint8_t *msg; /* message bytes, inside the mapping */
	uint16_t len;       /* message length (zero prefixes already resolved) */
	uint64_t ts_ns;     /* pcap capture time (ns since the epoch), 0 for daily files */
	uint16_t proto;     /* 0: ITCH 5.0; else the IEX-TP message protocol id (DEEP, TOPS) */
};

/* Opens and recognises `path`. Returns 0, or -errno with r->err set (-ENOENT and friends
 * for unreadable files, -EPROTONOSUPPORT for a format that is refused, -ENODATA for an
 * empty file). Counters go to `c` (may be NULL: r->own). */
int uf_reader_open(struct uf_reader *r, const char *path, struct uf_decode_counters *c);

/* Same over a caller-owned buffer (tests, fuzzing). The buffer must outlive the reader. */
int uf_reader_open_mem(struct uf_reader *r, const uint8_t *buf, size_t len,
                       struct uf_decode_counters *c);

/* Next message: 1 and `m` filled, 0 at the end of the input (including an input whose tail
 * is truncated: that is counted as an error). Never fails otherwise. */
int uf_reader_next(struct uf_reader *r, struct uf_reader_msg *m);

/* pcap only: next UDP payload as captured (for replaying a capture packet by packet).
 * Returns 1 with payload, len and ts_ns set, 0 at the end, -EINVAL on a daily file.
 * Do not mix with uf_reader_next on the same reader. Payloads are not validated. */
int uf_reader_next_payload(struct uf_reader *r, const uint8_t **payload, size_t *len,
                           uint64_t *ts_ns);

/* pcap only: keeps UDP datagrams to destination `port` (0 = all, the default); frames to
 * other ports are counted in skipped[UF_SKIP_OTHER_PORT]. Returns 0, or -EINVAL on a daily
 * file (it has no ports). Call after open, before reading. */
int uf_reader_set_udp_port(struct uf_reader *r, uint16_t port);

/* pcap only: says what the UDP payloads are instead of detecting it, and for IEX-TP which
 * message protocol id to keep (UF_IEXTP_PROTO_DEEP / _TOPS; 0 = the first one seen). Returns
 * 0, or -EINVAL on a daily file or an unknown payload kind. Call after open, before reading. */
int uf_reader_set_payload(struct uf_reader *r, int payload, uint16_t iex_proto);
/* The link, IPv4 and UDP framing of one captured frame of link type r->linktype: 1 with the
 * UDP payload (its IPv4 header in r->frame_ip, its UDP header 8 bytes before it), or 0 with
 * the reason counted (skipped kinds or file errors). */
int uf_reader_frame_payload(struct uf_reader *r, const uint8_t *f, size_t caplen,
                            const uint8_t **pl, size_t *pllen);

/* Rewinds to the first message (counters are not reset). */
void uf_reader_rewind(struct uf_reader *r);

/* Unmaps (frees an inflated gzip input) and closes. Safe on a reader whose open failed. */
void uf_reader_close(struct uf_reader *r);

/* "daily" / "pcap". */
const char *uf_reader_format_name(int format);

#endif /* UF_READER_H */
