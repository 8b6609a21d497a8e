/* Decode counters: what the MoldUDP64 parser, the ITCH decoder and the offline readers saw,
 * every error counted by kind under a stable name.
 *
 * One struct per decoding thread; only that thread writes it (relaxed stores through
 * UF_DC_ADD, so a status thread may read any field with uf_load_relaxed_u64 while the
 * feed runs, without a lock). Names come from uf_decode_counters_foreach(), the one place
 * that spells them, so `uf-decode stats` and the daemon's status endpoint print the same keys:
 *   mold:  truncated_header, block_length_truncated, block_overruns_packet, count_mismatch,
 *          trailing_bytes, bad_end_of_session, and for IEX-TP also bad_version,
 *          wrong_protocol_id, payload_length_past_datagram, bad_sequence
 *   itch:  bad_length_<type> (one per type, e.g. bad_length_A), unknown_type, empty_message
 *   files: truncated_record, truncated_file, ip_fragment, bad_ip_header, bad_udp_length,
 *          unresolvable_length
 * Frames of a capture that are not MoldUDP64 at all (ARP, IGMP, IPv6, TCP, other UDP ports
 * when filtering) are not errors: they are counted apart as `skipped` (non_ipv4, non_udp,
 * other_port), uf_decode_counters_foreach_skipped().
 * IEX DEEP/TOPS message errors have their own list (uf_decode_counters_foreach_iex_error):
 *   iex:   iex_bad_length_<type> (e.g. iex_bad_length_Q), iex_unknown_type, iex_empty_message,
 *          iex_offset_mismatch
 * and uf_decode_counters_errors() sums both lists. */
#ifndef UF_COUNTERS_H
#define UF_COUNTERS_H

#include <stddef.h>
#include <stdint.h>

#include "common/uf_atomic.h"
#include "decode/uf_iex.h"
#include "decode/uf_itch50.h"

/* Packet framing errors (MoldUDP64, IEX-TP: struct uf_frame's err); a packet with any of
 * these is dropped whole. */
enum uf_mold_err {
	UF_MOLD_ERR_TRUNCATED_HEADER = 0,   /* fewer than 20 bytes */
	UF_MOLD_ERR_BLOCK_LENGTH_TRUNCATED, /* a block's 2-byte length runs past the packet */
	UF_MOLD_ERR_BLOCK_OVERRUNS_PACKET,  /* a block's data runs past the packet */
	UF_MOLD_ERR_COUNT_MISMATCH,         /* fewer blocks than the header's count */
	UF_MOLD_ERR_TRAILING_BYTES,         /* bytes left after `count` blocks */
	UF_MOLD_ERR_BAD_END_OF_SESSION,     /* end of session (0xFFFF) carrying bytes */
	/* Framings with more header than MoldUDP64 (IEX-TP, decode/uf_iextp.h): */
	UF_MOLD_ERR_BAD_VERSION,           /* header version is not one the framing speaks */
	UF_MOLD_ERR_WRONG_PROTOCOL_ID,     /* message protocol id not the one expected */
	UF_MOLD_ERR_PAYLOAD_PAST_DATAGRAM, /* header's payload length runs past the datagram */
	UF_MOLD_ERR_BAD_SEQUENCE,          /* first sequence < 1, or the last one overflows */
	UF_MOLD_NERR
};

/* Offline-reader errors (daily files and pcap framing). */
enum uf_file_err {
	UF_FILE_ERR_TRUNCATED_RECORD = 0, /* pcap record header says more than the file holds */
	UF_FILE_ERR_TRUNCATED_FILE,       /* daily file ends inside a message */
	UF_FILE_ERR_IP_FRAGMENT,    /* fragment of a UDP datagram (MoldUDP64 never fragments) */
	UF_FILE_ERR_BAD_IP_HEADER,  /* IPv4 header length/total length/version inconsistent */
	UF_FILE_ERR_BAD_UDP_LENGTH, /* UDP length disagrees with the frame */
	UF_FILE_ERR_UNRESOLVABLE_LENGTH, /* daily zero length prefix on an unknown type: stop */
	UF_FILE_NERR
};

/* Captured frames that are not MoldUDP64 and were passed over: not errors. */
enum uf_skip_kind {
	UF_SKIP_NON_IPV4 = 0, /* link payload is not IPv4 (ARP, IPv6, LLDP, ...) */
	UF_SKIP_NON_UDP,      /* IPv4 but not UDP (IGMP, TCP, ICMP, ...) */
	UF_SKIP_OTHER_PORT,   /* UDP to a port other than the reader's filter */
	UF_SKIP_N
};

struct uf_decode_counters {
	uint64_t packets;                      /* MoldUDP64 packets seen (valid or not) */
	uint64_t heartbeats;                   /* packets with count 0 */
	uint64_t end_of_session;               /* packets with count 0xFFFF */
	uint64_t messages;                     /* ITCH messages decoded without error */
	uint64_t bytes;                        /* ITCH message bytes decoded without error */
	uint64_t gaps;                         /* forward sequence jumps between packets */
	uint64_t zero_len_resolved;            /* daily zero length prefixes taken from the type:
	                                        * not an error (a known quirk of real files) */
	uint64_t by_type[UF_ITCH_NTYPES];      /* decoded messages per type, UF_ITCH_TYPES order */
	uint64_t mold_err[UF_MOLD_NERR];       /* malformed packets, by kind */
	uint64_t itch_bad_len[UF_ITCH_NTYPES]; /* length does not match type, by type */
	uint64_t itch_unknown_type;            /* unknown type letter: skipped */
	uint64_t itch_empty;                   /* zero-length message block */
	uint64_t file_err[UF_FILE_NERR];       /* offline reader framing errors, by kind */
	uint64_t skipped[UF_SKIP_N];           /* frames that are not MoldUDP64: not errors */
	/* IEX (decode/uf_iextp.h, decode/uf_iex.h): packets, heartbeats, messages, bytes, gaps
	 * and framing errors (mold_err) are counted above, shared with MoldUDP64/ITCH. */
	uint64_t iex_packets;                /* IEX-TP segments seen (valid or not) */
	uint64_t iex_stream_restarts;        /* sequence back at 1, stream offset 0, in the same
	                                      * session: a new stream, not duplicates */
	uint64_t iex_by_type[UF_IEX_NTYPES]; /* decoded messages per type, UF_IEX_TYPES order */
	uint64_t iex_bad_len[UF_IEX_NTYPES]; /* length does not match type, by type */
	uint64_t iex_unknown_type;           /* type the protocol does not define: skipped */
	uint64_t iex_empty;                  /* zero-length message block */
	uint64_t iex_offset_mismatch;        /* readers: a segment's stream offset disagrees with
	                                      * the segments before it (a lying header; its
	                                      * messages are still delivered) */
};

/* Single-writer increment that a monitoring thread may read concurrently. */
#define UF_DC_ADD(field, n) uf_store_relaxed_u64(&(field), uf_load_relaxed_u64(&(field)) + (n))

/* Every error name, in a fixed order, with its current count (zero counts included).
 * `fn` is called once per error kind; returns the total error count. Cold. */
typedef void (*uf_counter_fn)(void *ctx, const char *name, uint64_t value);
uint64_t uf_decode_counters_foreach_error(const struct uf_decode_counters *c, uf_counter_fn fn,
                                          void *ctx);

/* Every skipped-frame kind ("non_ipv4", "non_udp", "other_port") with its count, zero
 * counts included; returns their total. Cold. */
uint64_t uf_decode_counters_foreach_skipped(const struct uf_decode_counters *c, uf_counter_fn fn,
                                            void *ctx);

/* Every non-error counter with its name: packets, heartbeats, end_of_session, messages,
 * bytes, gaps, zero_len_resolved, then type_<letter> for each of the 23 types (for a status
 * endpoint that shows the traffic beside the errors). Cold. */
void uf_decode_counters_foreach_stat(const struct uf_decode_counters *c, uf_counter_fn fn,
                                     void *ctx);

/* Every IEX error name (iex_bad_length_<letter> for the 14 types, iex_unknown_type,
 * iex_empty_message, iex_offset_mismatch) with its count, zero counts included; returns their
 * total. Cold. */
uint64_t uf_decode_counters_foreach_iex_error(const struct uf_decode_counters *c, uf_counter_fn fn,
                                              void *ctx);

/* Every IEX traffic counter with its name: iex_packets, iex_stream_restarts, then
 * iex_type_<letter> for each of the 14 types. Cold. */
void uf_decode_counters_foreach_iex_stat(const struct uf_decode_counters *c, uf_counter_fn fn,
                                         void *ctx);

/* Sum of every error counter, both lists (what `uf-decode` exits 1 on). Cold. */
uint64_t uf_decode_counters_errors(const struct uf_decode_counters *c);

/* dst += src, field by field (merging per-file or per-thread counters). Cold. */
void uf_decode_counters_add(struct uf_decode_counters *dst, const struct uf_decode_counters *src);

/* Name of a MoldUDP64 error kind ("truncated_header"...), or "unknown". */
const char *uf_mold_err_name(int kind);

#endif /* UF_COUNTERS_H */
