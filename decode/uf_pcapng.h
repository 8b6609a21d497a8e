/* pcapng: the one place that knows the file format, both ways.
 *
 * Write side (the feed's capture, feed/capture.h): builders for the three blocks a capture
 * needs, in host byte order (little-endian here; a reader takes either, the Section Header
 * says which):
 *   uf_pcapng_shb()  Section Header Block, with the writing application and a comment;
 *   uf_pcapng_idb()  Interface Description Block, LINKTYPE_ETHERNET, if_name, if_description
 *                    and if_tsresol = 9 (timestamps in nanoseconds);
 *   uf_pcapng_epb_udp()  Enhanced Packet Block holding one UDP datagram with its Ethernet,
 *                    IPv4 (valid header checksum) and UDP (checksum 0: "not computed", legal
 *                    in IPv4) headers reconstructed, so tshark and tcpdump show it as the wire
 *                    did. It copies the payload once and does nothing else: the feed thread
 *                    calls it per datagram.
 *
 * Read side (decode/uf_reader.c, uf-replay): uf_pcapng_open() over a mapped file, then
 * uf_pcapng_next() yields every Enhanced (or Simple) Packet Block with its interface and its
 * time in ns, whatever the interface's if_tsresol / if_tsoffset; blocks of other kinds are
 * skipped; a new section (files concatenated) restarts the interface list. A block that runs
 * past the end of the file (a capture cut by a crash) ends the walk and is counted as torn.
 * No allocation. */
#ifndef UF_PCAPNG_H
#define UF_PCAPNG_H

#include <stddef.h>
#include <stdint.h>

#define UF_PCAPNG_MAX_IF       16 /* interfaces per section the reader keeps */
#define UF_PCAPNG_EPB_FIXED    32 /* EPB: type, length, iface, ts (2), caplen, origlen, trailer */
#define UF_PCAPNG_UDP_HDRS     42 /* Ethernet 14 + IPv4 20 + UDP 8 */
#define UF_PCAPNG_LINKTYPE_ETH 1  /* LINKTYPE_ETHERNET */
#define UF_PCAPNG_BT_SHB       0x0A0D0D0Au
#define UF_PCAPNG_BT_IDB       0x00000001u
#define UF_PCAPNG_BT_SPB       0x00000003u
#define UF_PCAPNG_BT_EPB       0x00000006u
#define UF_PCAPNG_BYTE_ORDER   0x1A2B3C4Du
#define UF_PCAPNG_NAME_MAX     128 /* if_name / if_description kept by the reader */

/* Addresses of one reconstructed datagram (network byte order, as the socket gave them). */
struct uf_pcapng_udp {
	uint32_t src_addr; /* sender IPv4 */
	uint32_t dst_addr; /* group (lines) or our address (re-request answers), 0 = unknown */
	uint16_t src_port; /* sender port */
	uint16_t dst_port; /* line port / our port */
};

/* Bytes an EPB holding a `len`-byte UDP payload takes (padded to 4 bytes). Hot, inline. */
static inline size_t uf_pcapng_epb_size(uint32_t len)
{
	return UF_PCAPNG_EPB_FIXED + ((UF_PCAPNG_UDP_HDRS + (size_t)len + 3) & ~(size_t)3);
}

/* Writes a Section Header Block (unknown section length) naming the application `app` and
 * carrying `comment` (NULL = none) into out[0..cap). Returns its size, 0 when cap is short. */
size_t uf_pcapng_shb(uint8_t *out, size_t cap, const char *app, const char *comment);

/* Writes an Interface Description Block: Ethernet, snaplen 65535 + headers, if_name `name`,
 * if_description `desc` (NULL = none), if_tsresol 9. Returns its size, 0 when cap is short. */
size_t uf_pcapng_idb(uint8_t *out, size_t cap, const char *name, const char *desc);

/* Writes one EPB for interface `iface` at `ts_ns` (ns since the epoch) holding `payload` as
 * a UDP datagram from/to `a`, into `out`, which has uf_pcapng_epb_size(len) bytes. Returns
 * that size. No checks, no allocation, no system call: the caller sized the room. */
size_t uf_pcapng_epb_udp(uint8_t *out, uint32_t iface, uint64_t ts_ns,
                         const struct uf_pcapng_udp *a, const uint8_t *payload, uint32_t len);

#define UF_PCAPNG_TCP_HDRS 54 /* Ethernet 14 + IPv4 20 + TCP 20 */

/* Bytes an EPB holding `len` bytes of a TCP stream takes (padded to 4 bytes). */
static inline size_t uf_pcapng_epb_tcp_size(uint32_t len)
{
	return UF_PCAPNG_EPB_FIXED + ((UF_PCAPNG_TCP_HDRS + (size_t)len + 3) & ~(size_t)3);
}

/* Writes one EPB holding stream bytes payload[0..len) as a TCP segment (PSH|ACK, sequence
 * `seq`, checksum 0) from/to `a` (ports and addresses as for UDP), valid IPv4 header. The
 * capture records snapshot sessions (SoupBinTCP) this way: tshark follows them as a stream.
 * `len` <= 65535 - 40. Returns the size written (uf_pcapng_epb_tcp_size(len)). */
size_t uf_pcapng_epb_tcp(uint8_t *out, uint32_t iface, uint64_t ts_ns,
                         const struct uf_pcapng_udp *a, uint32_t seq, const uint8_t *payload,
                         uint32_t len);

/* ---- read side ---- */

/* One interface of the current section. */
struct uf_pcapng_if {
	uint16_t linktype;             /* LINKTYPE_* */
	uint64_t ts_num;               /* timestamp unit = ts_num / ts_den seconds */
	uint64_t ts_den;               /* (if_tsresol; default 1/1000000) */
	int64_t ts_offset_s;           /* if_tsoffset, seconds */
	char name[UF_PCAPNG_NAME_MAX]; /* if_name, "" when absent */
	char desc[UF_PCAPNG_NAME_MAX]; /* if_description, "" when absent */
};

/* One packet block. */
struct uf_pcapng_rec {
	uint32_t iface;       /* interface index within its section */
	uint32_t section;     /* 0-based section number (a new SHB starts the next) */
	uint64_t ts_ns;       /* ns since the epoch */
	const uint8_t *frame; /* captured bytes, inside the mapping */
	uint32_t caplen;      /* captured length */
	uint32_t origlen;     /* length on the wire */
};

/* Reader state over a caller-owned buffer (mapping). */
struct uf_pcapng {
	const uint8_t *base;                       /* the file */
	size_t size;                               /* its size */
	size_t off;                                /* next block */
	int swapped;                               /* section written in the other byte order */
	uint32_t section;                          /* sections seen - 1 */
	uint32_t nif;                              /* interfaces in the current section */
	struct uf_pcapng_if ifs[UF_PCAPNG_MAX_IF]; /* them (extra ones are counted, not kept) */
	uint64_t torn;                             /* blocks cut short or corrupt (walk stopped) */
	uint64_t unknown_iface;                    /* packets of an interface not described */
	uint64_t skipped_blocks;                   /* other block kinds (statistics, comments) */
};

/* 1 when buf starts with a pcapng Section Header Block magic. */
int uf_pcapng_is(const uint8_t *buf, size_t len);

/* Starts a walk over buf[0..len) (must begin with an SHB). Returns 0 or -EPROTONOSUPPORT
 * with a reason in `err` (not pcapng, bad byte-order magic, unsupported major version). */
int uf_pcapng_open(struct uf_pcapng *p, const uint8_t *buf, size_t len, char *err, size_t errlen);

/* Next packet block: 1 with `rec` filled, 0 at the end (a torn tail counts in p->torn). */
int uf_pcapng_next(struct uf_pcapng *p, struct uf_pcapng_rec *rec);

/* Interface `i` of the current section, NULL when not described. */
const struct uf_pcapng_if *uf_pcapng_iface(const struct uf_pcapng *p, uint32_t i);

/* Back to the first block. */
void uf_pcapng_rewind(struct uf_pcapng *p);

#endif /* UF_PCAPNG_H */

/* ---- glue for decode/uf_reader.c (a pcapng input) ----
 * A capture holds every copy of every datagram in arrival order (both lines, re-request
 * answers). uf_reader yields the arbitrated stream instead: at open, every MoldUDP64 data
 * packet is indexed (frame errors and packet counters go to the reader's counters once per
 * datagram), then sorted by (session in order of first appearance, sequence, arrival);
 * uf_reader then skips the messages already delivered (r->png_skip_below), so every message
 * comes once, in sequence order. Allocates the index (cold). */
struct uf_reader;
int uf_pcapng_reader_open(struct uf_reader *r);
int uf_pcapng_reader_record(struct uf_reader *r, const uint8_t **pl, size_t *len, uint64_t *ts);
struct uf_decode_counters *uf_pcapng_reader_scratch(struct uf_reader *r);
void uf_pcapng_reader_rewind(struct uf_reader *r);
void uf_pcapng_reader_close(struct uf_reader *r);
