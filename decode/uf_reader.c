/* Offline inputs: recognise the file (inflating a gzip'd one first), walk pcap framing down
 * to MoldUDP64 or IEX-TP, or walk the daily format; every message leaves through the same
 * framing iterator the feed uses. */
#include "decode/uf_reader.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/uf_err.h"
#include "decode/uf_gzip.h"
#include "decode/uf_pcapng.h"

#define PCAP_GLOBAL_LEN     24
#define PCAP_RECORD_LEN     16
#define LINKTYPE_ETHERNET   1
#define LINKTYPE_RAW        101
#define LINKTYPE_LINUX_SLL  113
#define LINKTYPE_IPV4       228
#define LINKTYPE_LINUX_SLL2 276
#define ETH_HLEN            14
#define ETHERTYPE_IPV4      0x0800
#define ETHERTYPE_VLAN      0x8100
#define ETHERTYPE_QINQ      0x88a8
#define ETHERTYPE_QINQ_OLD  0x9100
#define MAX_VLAN_TAGS       4
#define IPPROTO_UDP_NUM     17

const char *uf_reader_format_name(int format)
{
	return format == UF_INPUT_PCAP ? "pcap" : format == UF_INPUT_DAILY ? "daily" : "none";
}

static inline uint32_t rd32(const struct uf_reader *r, const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return r->pcap_swapped ? __builtin_bswap32(v) : v;
}

static inline uint16_t rd16(const struct uf_reader *r, const uint8_t *p)
{
	uint16_t v;
	memcpy(&v, p, 2);
	return r->pcap_swapped ? __builtin_bswap16(v) : v;
}

/* Recognises the format from the first bytes; 0 or -EPROTONOSUPPORT/-ENODATA with r->err. */
static int recognise(struct uf_reader *r)
{
	const uint8_t *b = r->base;
	if (r->size == 0) {
		uf_err_set(r->err, sizeof(r->err), "empty input");
		return -ENODATA;
	}
	if (r->size >= 4) {
		uint32_t magic;
		memcpy(&magic, b, 4);
		int known = 1;
		switch (magic) {
		case 0xa1b2c3d4:
			r->pcap_ns = 0;
			r->pcap_swapped = 0;
			break;
		case 0xa1b23c4d:
			r->pcap_ns = 1;
			r->pcap_swapped = 0;
			break;
		case 0xd4c3b2a1:
			r->pcap_ns = 0;
			r->pcap_swapped = 1;
			break;
		case 0x4d3cb2a1:
			r->pcap_ns = 1;
			r->pcap_swapped = 1;
			break;
		default:
			known = 0;
		}
		if (known) {
			if (r->size < PCAP_GLOBAL_LEN) {
				uf_err_set(r->err, sizeof(r->err),
				           "pcap file shorter than its 24-byte global header");
				return -EPROTONOSUPPORT;
			}
			uint16_t major = rd16(r, b + 4);
			r->linktype = rd32(r, b + 20) & 0x0fffffff; /* high bits: FCS info */
			if (major != 2) {
				uf_err_set(r->err, sizeof(r->err),
				           "pcap version %u is not supported (classic pcap 2.4 is)",
				           major);
				return -EPROTONOSUPPORT;
			}
			if (r->linktype != LINKTYPE_ETHERNET && r->linktype != LINKTYPE_LINUX_SLL &&
			    r->linktype != LINKTYPE_LINUX_SLL2 && r->linktype != LINKTYPE_RAW &&
			    r->linktype != LINKTYPE_IPV4) {
				uf_err_set(
				    r->err, sizeof(r->err),
				    "pcap link type %u is not supported (Ethernet, Linux cooked, "
				    "raw IPv4 are)",
				    r->linktype);
				return -EPROTONOSUPPORT;
			}
			r->format = UF_INPUT_PCAP;
			r->off = PCAP_GLOBAL_LEN;
			return 0;
		}
		if (uf_pcapng_is(b, r->size))
			return uf_pcapng_reader_open(r); /* decode/uf_pcapng.c */
	}
	if (r->size >= 2 && b[0] == 0x1f && b[1] == 0x8b) {
		uf_err_set(r->err, sizeof(r->err),
		           "gzip-compressed input: decompress it first (gunzip -k FILE)");
		return -EPROTONOSUPPORT;
	}
	/* Daily format: the first message must be a known type whose length matches its
	 * prefix (or whose prefix is the zero quirk). */
	if (r->size >= 3) {
		uint16_t l = uf_be16(b);
		size_t want = uf_itch_len(b[2]);
		if (want && (l == 0 || l == want)) {
			r->format = UF_INPUT_DAILY;
			r->off = 0;
			return 0;
		}
	}
	uf_err_set(
	    r->err, sizeof(r->err),
	    "not a recognised input: neither a classic pcap nor a Nasdaq daily-format ITCH 5.0 "
	    "file (first bytes %02x %02x %02x %02x)",
	    b[0], r->size > 1 ? b[1] : 0, r->size > 2 ? b[2] : 0, r->size > 3 ? b[3] : 0);
	return -EPROTONOSUPPORT;
}

/* A gzip'd input is inflated into memory once; r->base/size then describe the inflated
 * bytes (a mapping of the compressed file is released). 0, or -errno with r->err set. */
static int inflate_if_gzip(struct uf_reader *r)
{
	if (!uf_gzip_is(r->base, r->size))
		return 0;
	uint8_t *out;
	size_t n;
	int rc = uf_gzip_inflate(r->base, r->size, &out, &n, r->err, sizeof(r->err));
	if (rc == -ENOMEM)
		uf_err_set(r->err, sizeof(r->err), "out of memory inflating gzip input");
	if (rc < 0)
		return rc;
	if (r->mapped)
		munmap((void *)r->base, r->size);
	r->mapped = 0;
	r->inflated = out;
	r->base = out;
	r->size = n;
	if (n == 0) {
		uf_err_set(r->err, sizeof(r->err), "gzip input inflates to nothing");
		return -ENODATA;
	}
	return 0;
}

static void init(struct uf_reader *r, struct uf_decode_counters *c)
{
	memset(r, 0, sizeof(*r));
	r->fd = -1;
	r->c = c ? c : &r->own;
}

int uf_reader_open_mem(struct uf_reader *r, const uint8_t *buf, size_t len,
                       struct uf_decode_counters *c)
{
	init(r, c);
	r->base = buf;
	r->size = len;
	int rc = inflate_if_gzip(r);
	if (rc == 0)
		rc = recognise(r);
	if (rc < 0) { /* a failed open holds nothing: callers need not close it */
		free(r->inflated);
		r->inflated = NULL;
		r->base = NULL;
	}
	return rc;
}

int uf_reader_open(struct uf_reader *r, const char *path, struct uf_decode_counters *c)
{
	struct stat st;
	int rc;
	init(r, c);
	r->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (r->fd < 0) {
		rc = -errno;
		uf_err_set(r->err, sizeof(r->err), "%s: cannot open: %s", path, strerror(errno));
		return rc;
	}
	if (fstat(r->fd, &st) < 0) {
		rc = -errno;
		uf_err_set(r->err, sizeof(r->err), "%s: cannot stat: %s", path, strerror(errno));
		goto out_close;
	}
	if (!S_ISREG(st.st_mode)) {
		rc = S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
		uf_err_set(r->err, sizeof(r->err), "%s: not a regular file", path);
		goto out_close;
	}
	r->size = (size_t)st.st_size;
	if (r->size == 0) {
		uf_err_set(r->err, sizeof(r->err), "%s: empty file", path);
		rc = -ENODATA;
		goto out_close;
	}
	void *m = mmap(NULL, r->size, PROT_READ, MAP_PRIVATE, r->fd, 0);
	if (m == MAP_FAILED) {
		rc = -errno;
		uf_err_set(r->err, sizeof(r->err), "%s: cannot map %zu bytes: %s", path, r->size,
		           strerror(errno));
		goto out_close;
	}
	/* Read ahead aggressively, drop behind: files are read once, front to back. */
	madvise(m, r->size, MADV_SEQUENTIAL);
	r->base = m;
	r->mapped = 1;
	rc = inflate_if_gzip(r);
	if (rc == 0)
		rc = recognise(r);
	if (rc < 0) {
		char why[sizeof(r->err)];
		memcpy(why, r->err, sizeof(why));
		uf_err_set(r->err, sizeof(r->err), "%s: %s", path, why);
		goto out_unmap;
	}
	return 0;
out_unmap:
	if (r->mapped)
		munmap(m, r->size);
	free(r->inflated);
	r->inflated = NULL;
	r->mapped = 0;
	r->base = NULL;
out_close:
	close(r->fd);
	r->fd = -1;
	return rc;
}

void uf_reader_close(struct uf_reader *r)
{
	uf_pcapng_reader_close(r);
	if (r->mapped)
		munmap((void *)r->base, r->size);
	free(r->inflated);
	r->inflated = NULL;
	if (r->fd >= 0)
		close(r->fd);
	r->mapped = 0;
	r->fd = -1;
	r->base = NULL;
}

int uf_reader_set_udp_port(struct uf_reader *r, uint16_t port)
{
	if (r->format != UF_INPUT_PCAP)
		return -EINVAL;
	r->udp_port = port;
	return 0;
}

int uf_reader_set_payload(struct uf_reader *r, int payload, uint16_t iex_proto)
{
	if (r->format != UF_INPUT_PCAP ||
	    (payload != UF_PAYLOAD_AUTO && payload != UF_PAYLOAD_MOLD &&
	     payload != UF_PAYLOAD_IEXTP))
		return -EINVAL;
	r->payload = payload;
	r->iex_proto = iex_proto;
	return 0;
}

void uf_reader_rewind(struct uf_reader *r)
{
	r->off = r->format == UF_INPUT_PCAP ? PCAP_GLOBAL_LEN : 0;
	r->in_packet = 0;
	r->ordinal = 0;
	r->have_seq = 0;
	if (r->png)
		uf_pcapng_reader_rewind(r);
}

static int frame_payload(struct uf_reader *r, const uint8_t *f, size_t caplen, size_t origlen,
                         const uint8_t **pl, size_t *pllen);

/* Strips link, IPv4 and UDP headers from one captured frame. 1 with the UDP payload, or 0
 * with the reason counted. */
int uf_reader_frame_payload(struct uf_reader *r, const uint8_t *f, size_t caplen,
                            const uint8_t **pl, size_t *pllen)
{
	return frame_payload(r, f, caplen, caplen, pl, pllen);
}

static int frame_payload(struct uf_reader *r, const uint8_t *f, size_t caplen, size_t origlen,
                         const uint8_t **pl, size_t *pllen)
{
	struct uf_decode_counters *c = r->c;
	size_t off = 0;
	uint16_t etype = ETHERTYPE_IPV4;
	switch (r->linktype) {
	case LINKTYPE_ETHERNET:
		if (caplen < ETH_HLEN)
			goto truncated;
		etype = uf_be16(f + 12);
		off = ETH_HLEN;
		for (int tags = 0; (etype == ETHERTYPE_VLAN || etype == ETHERTYPE_QINQ ||
		                    etype == ETHERTYPE_QINQ_OLD) &&
		                   tags < MAX_VLAN_TAGS;
		     tags++) {
			if (caplen < off + 4)
				goto truncated;
			etype = uf_be16(f + off + 2);
			off += 4;
		}
		break;
	case LINKTYPE_LINUX_SLL:
		if (caplen < 16)
			goto truncated;
		etype = uf_be16(f + 14);
		off = 16;
		break;
	case LINKTYPE_LINUX_SLL2:
		if (caplen < 20)
			goto truncated;
		etype = uf_be16(f);
		off = 20;
		break;
	default: /* raw IPv4 */
		break;
	}
	/* Not MoldUDP64 at all (ARP, IPv6, LLDP...): skipped, not an error. Raw IP link types
	 * say the version in the first nibble only. */
	int raw = r->linktype == LINKTYPE_RAW || r->linktype == LINKTYPE_IPV4;
	if (etype != ETHERTYPE_IPV4 || (raw && caplen > off && (f[off] >> 4) == 6)) {
		UF_DC_ADD(c->skipped[UF_SKIP_NON_IPV4], 1);
		return 0;
	}
	if (caplen < off + 1)
		goto truncated;
	if ((f[off] >> 4) != 4) { /* says IPv4 and is not: malformed */
		UF_DC_ADD(c->file_err[UF_FILE_ERR_BAD_IP_HEADER], 1);
		return 0;
	}
	const uint8_t *ip = f + off;
	size_t avail = caplen - off;
	if (avail < 20)
		goto truncated;
	if (ip[9] != IPPROTO_UDP_NUM) { /* IGMP, TCP, ICMP...: skipped */
		UF_DC_ADD(c->skipped[UF_SKIP_NON_UDP], 1);
		return 0;
	}
	/* From here the frame claims to be UDP: what is wrong with it is an error. */
	size_t ihl = (size_t)(ip[0] & 0x0f) * 4;
	size_t tot = uf_be16(ip + 2);
	if (ihl < 20 || tot < ihl) {
		UF_DC_ADD(c->file_err[UF_FILE_ERR_BAD_IP_HEADER], 1);
		return 0;
	}
	if (tot > avail) /* snapped by the capture's snaplen, or a lying header */
		goto truncated;
	if ((uf_be16(ip + 6) & 0x3fff) != 0) { /* MF flag or a fragment offset */
		UF_DC_ADD(c->file_err[UF_FILE_ERR_IP_FRAGMENT], 1);
		return 0;
	}
	const uint8_t *udp = ip + ihl;
	size_t udp_avail = tot - ihl;
	if (udp_avail < 8) {
		UF_DC_ADD(c->file_err[UF_FILE_ERR_BAD_UDP_LENGTH], 1);
		return 0;
	}
	if (r->udp_port && uf_be16(udp + 2) != r->udp_port) { /* another feed or service */
		UF_DC_ADD(c->skipped[UF_SKIP_OTHER_PORT], 1);
		return 0;
	}
	size_t ulen = uf_be16(udp + 4);
	if (ulen < 8 || ulen > udp_avail) {
		UF_DC_ADD(c->file_err[UF_FILE_ERR_BAD_UDP_LENGTH], 1);
		return 0;
	}
	*pl = udp + 8;
	*pllen = ulen - 8;
	r->frame_ip = ip;
	return 1;
truncated:
	(void)origlen;
	UF_DC_ADD(c->file_err[UF_FILE_ERR_TRUNCATED_RECORD], 1);
	return 0;
}

/* Next pcap record's UDP payload: 1, or 0 at the end (a truncated tail is counted). */
static int next_record(struct uf_reader *r, const uint8_t **pl, size_t *pllen, uint64_t *ts)
{
	if (r->png)
		return uf_pcapng_reader_record(r, pl, pllen, ts);
	while (r->off < r->size) {
		if (r->size - r->off < PCAP_RECORD_LEN) {
			UF_DC_ADD(r->c->file_err[UF_FILE_ERR_TRUNCATED_RECORD], 1);
			r->off = r->size;
			return 0;
		}
		const uint8_t *h = r->base + r->off;
		uint64_t sec = rd32(r, h), frac = rd32(r, h + 4);
		size_t caplen = rd32(r, h + 8), origlen = rd32(r, h + 12);
		if (caplen > r->size - r->off - PCAP_RECORD_LEN) {
			UF_DC_ADD(r->c->file_err[UF_FILE_ERR_TRUNCATED_RECORD], 1);
			r->off = r->size;
			return 0;
		}
		const uint8_t *f = h + PCAP_RECORD_LEN;
		r->off += PCAP_RECORD_LEN + caplen;
		*ts = sec * 1000000000ull + (r->pcap_ns ? frac : frac * 1000ull);
		if (frame_payload(r, f, caplen, origlen, pl, pllen))
			return 1;
	}
	return 0;
}

int uf_reader_next_payload(struct uf_reader *r, const uint8_t **payload, size_t *len,
                           uint64_t *ts_ns)
{
	if (r->format != UF_INPUT_PCAP)
		return -EINVAL;
	return next_record(r, payload, len, ts_ns);
}

/* IEX-TP: the stream offset a segment claims against the bytes seen before it. A segment
 * that follows the last one without a gap must start where it ended; after a gap, not
 * before it. `start`: the segment starts tracking (first, new session, restart). */
static void track_offset(struct uf_reader *r, const struct uf_frame *pkt, int start)
{
	int64_t off = uf_iextp_stream_offset(pkt);
	int64_t end = off + (int64_t)(pkt->len - UF_IEXTP_HDR_LEN);
	if (!start) {
		if (pkt->seq < r->next_seq)
			return; /* an old segment: nothing to check it against */
		if (pkt->seq == r->next_seq ? off != r->next_offset : off < r->next_offset)
			UF_DC_ADD(r->c->iex_offset_mismatch, 1);
	}
	r->next_offset = end;
}

/* Gap tracking across the packets of one capture: a forward jump within a session. An
 * IEX-TP stream that starts again (sequence 1 at stream offset 0) in the same session is a
 * restart, counted once, and tracking starts over from it. */
static void track_seq(struct uf_reader *r, const struct uf_frame *pkt)
{
	int iex = r->payload == UF_PAYLOAD_IEXTP;
	if (!r->have_seq || memcmp(r->session, pkt->session, UF_MOLD_SESSION_LEN) != 0) {
		memcpy(r->session, pkt->session, UF_MOLD_SESSION_LEN);
		r->have_seq = 1;
		r->next_seq = uf_mold_next_seq(pkt);
		if (iex)
			track_offset(r, pkt, 1);
		return;
	}
	if (iex && r->next_seq > 1 && uf_iextp_is_stream_start(pkt)) {
		UF_DC_ADD(r->c->iex_stream_restarts, 1);
		r->next_seq = uf_frame_next_seq(pkt);
		track_offset(r, pkt, 1);
		return;
	}
	if (iex)
		track_offset(r, pkt, 0);
	if (pkt->seq > r->next_seq)
		UF_DC_ADD(r->c->gaps, 1);
	uint64_t n = uf_mold_next_seq(pkt);
	if (n > r->next_seq)
		r->next_seq = n;
}

/* 1 when a UDP payload looks like IEX-TP: version 1 and a known message protocol id (a
 * MoldUDP64 session is ASCII, so its first byte is never 1). */
static int looks_iextp(const uint8_t *pl, size_t len)
{
	return len >= UF_IEXTP_HDR_LEN && pl[0] == UF_IEXTP_VERSION &&
	       uf_iextp_proto_known(uf_le16(pl + 2));
}

/* Opens one UDP payload with the capture's framing (decided on the first payload). */
/* Where a datagram's framing errors are counted: pcapng counts them when it indexes the file
 * (once per datagram), so the in-order pass counts into scratch, not again. */
static struct uf_decode_counters *uf_reader_open_counters(struct uf_reader *r)
{
	return r->png ? uf_pcapng_reader_scratch(r) : r->c;
}

static int open_payload(struct uf_reader *r, const uint8_t *pl, size_t len)
{
	if (r->payload == UF_PAYLOAD_AUTO)
		r->payload = looks_iextp(pl, len) ? UF_PAYLOAD_IEXTP : UF_PAYLOAD_MOLD;
	if (r->payload == UF_PAYLOAD_MOLD)
		return uf_mold_open_counted(&r->pkt, pl, len, uf_reader_open_counters(r));
	if (!r->iex_proto && len >= 4 && uf_iextp_proto_known(uf_le16(pl + 2)))
		r->iex_proto = uf_le16(pl + 2); /* a capture is one protocol: keep the first */
	return uf_iextp_open_counted(&r->pkt, pl, len, r->iex_proto, uf_reader_open_counters(r));
}

static int next_pcap(struct uf_reader *r, struct uf_reader_msg *m)
{
	for (;;) {
		struct uf_frame_msg b;
		if (r->in_packet && (r->payload == UF_PAYLOAD_IEXTP ? uf_iextp_next(&r->it, &b)
		                                                    : uf_mold_next(&r->it, &b))) {
			if (b.seq < r->png_skip_below)
				continue; /* pcapng: delivered by an earlier copy */
			m->seq = b.seq;
			m->msg = b.msg;
			m->len = b.len;
			m->ts_ns = r->pcap_ts_ns;
			m->proto = r->payload == UF_PAYLOAD_IEXTP ? r->iex_proto : 0;
			return 1;
		}
		r->in_packet = 0;
		const uint8_t *pl;
		size_t len;
		if (!next_record(r, &pl, &len, &r->pcap_ts_ns))
			return 0;
		int k = open_payload(r, pl, len);
		if (k < 0)
			continue;
		track_seq(r, &r->pkt);
		if (k == UF_FRAME_DATA) {
			if (r->payload == UF_PAYLOAD_IEXTP)
				uf_iextp_iter_init(&r->it, &r->pkt);
			else
				uf_mold_iter_init(&r->it, &r->pkt);
			r->in_packet = 1;
		}
	}
}

static int next_daily(struct uf_reader *r, struct uf_reader_msg *m)
{
	size_t left = r->size - r->off;
	if (left == 0)
		return 0;
	const uint8_t *p = r->base + r->off;
	if (left < 2) {
		UF_DC_ADD(r->c->file_err[UF_FILE_ERR_TRUNCATED_FILE], 1);
		r->off = r->size;
		return 0;
	}
	size_t len = uf_be16(p);
	if (len == 0) { /* the zero-length quirk: the type says how long the message is */
		if (left < 3) {
			UF_DC_ADD(r->c->file_err[UF_FILE_ERR_TRUNCATED_FILE], 1);
			r->off = r->size;
			return 0;
		}
		len = uf_itch_len(p[2]);
		if (len == 0) { /* no way to find the next message: stop here, loudly */
			UF_DC_ADD(r->c->file_err[UF_FILE_ERR_UNRESOLVABLE_LENGTH], 1);
			r->off = r->size;
			return 0;
		}
		UF_DC_ADD(r->c->zero_len_resolved, 1);
	}
	if (left - 2 < len) {
		UF_DC_ADD(r->c->file_err[UF_FILE_ERR_TRUNCATED_FILE], 1);
		r->off = r->size;
		return 0;
	}
	m->seq = ++r->ordinal;
	m->msg = p + 2;
	m->len = (uint16_t)len;
	m->ts_ns = 0;
	m->proto = 0;
	r->off += 2 + len;
	return 1;
}

int uf_reader_next(struct uf_reader *r, struct uf_reader_msg *m)
{
	if (r->format == UF_INPUT_DAILY)
		return next_daily(r, m);
	if (r->format == UF_INPUT_PCAP)
		return next_pcap(r, m);
	return 0;
}
