/* pcapng blocks: builders for the capture writer, a walker for the readers (uf_pcapng.h). */
#include "decode/uf_pcapng.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/uf_endian.h"
#include "common/uf_err.h"
#include "decode/uf_mold.h"
#include "decode/uf_reader.h"

#define OPT_ENDOFOPT 0
#define OPT_COMMENT  1
#define SHB_USERAPPL 4
#define IF_NAME      2
#define IF_DESC      3
#define IF_TSRESOL   9
#define IF_TSOFFSET  14
#define UF_SNAPLEN   (65535 + UF_PCAPNG_UDP_HDRS)
#define BLOCK_MIN    12 /* type, length, trailing length */

static inline void put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

static inline void put16(uint8_t *p, uint16_t v)
{
	memcpy(p, &v, 2);
}

/* One option (code, length, value padded to 4). Returns bytes written, 0 when no room. */
static size_t put_opt(uint8_t *out, size_t cap, uint16_t code, const void *v, size_t len)
{
	size_t padded = (len + 3) & ~(size_t)3;
	if (len > 0xffff || cap < 4 + padded)
		return 0;
	put16(out, code);
	put16(out + 2, (uint16_t)len);
	memset(out + 4, 0, padded);
	memcpy(out + 4, v, len);
	return 4 + padded;
}

/* Appends a string option when s is set; keeps *ok 0 once something did not fit. */
static size_t put_str_opt(uint8_t *out, size_t cap, uint16_t code, const char *s, int *ok)
{
	if (!s || !*s)
		return 0;
	size_t n = put_opt(out, cap, code, s, strlen(s));
	if (!n)
		*ok = 0;
	return n;
}

/* Closes a block whose body ends at `end` bytes: end-of-options, trailing length. */
static size_t close_block(uint8_t *out, size_t cap, size_t end, int *ok)
{
	if (!*ok || cap < end + 8)
		return 0;
	put16(out + end, OPT_ENDOFOPT);
	put16(out + end + 2, 0);
	end += 4;
	put32(out + 4, (uint32_t)(end + 4));
	put32(out + end, (uint32_t)(end + 4));
	return end + 4;
}

size_t uf_pcapng_shb(uint8_t *out, size_t cap, const char *app, const char *comment)
{
	int ok = 1;
	if (cap < 24)
		return 0;
	put32(out, UF_PCAPNG_BT_SHB);
	put32(out + 8, UF_PCAPNG_BYTE_ORDER);
	put16(out + 12, 1);        /* major */
	put16(out + 14, 0);        /* minor */
	memset(out + 16, 0xff, 8); /* section length: not known while writing */
	size_t n = 24;
	n += put_str_opt(out + n, cap - n, OPT_COMMENT, comment, &ok);
	n += put_str_opt(out + n, cap - n, SHB_USERAPPL, app, &ok);
	return close_block(out, cap, n, &ok);
}

size_t uf_pcapng_idb(uint8_t *out, size_t cap, const char *name, const char *desc)
{
	int ok = 1;
	if (cap < 16)
		return 0;
	put32(out, UF_PCAPNG_BT_IDB);
	put16(out + 8, UF_PCAPNG_LINKTYPE_ETH);
	put16(out + 10, 0);
	put32(out + 12, UF_SNAPLEN);
	size_t n = 16;
	n += put_str_opt(out + n, cap - n, IF_NAME, name, &ok);
	n += put_str_opt(out + n, cap - n, IF_DESC, desc, &ok);
	uint8_t res = 9; /* 10^-9 s */
	size_t o = put_opt(out + n, cap - n, IF_TSRESOL, &res, 1);
	if (!o)
		ok = 0;
	n += o;
	return close_block(out, cap, n, &ok);
}

/* RFC 1071 sum over the 20-byte IPv4 header (checksum field zero). */
static uint16_t ip_checksum(const uint8_t *h)
{
	uint32_t s = 0;
	for (int i = 0; i < 20; i += 2)
		s += (uint32_t)h[i] << 8 | h[i + 1];
	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}

static void put_eth_ip(uint8_t *e, const struct uf_pcapng_udp *a, uint8_t proto, uint32_t l4);

/* An enhanced packet block's fixed head (type, length, interface, timestamp, captured and
 * original length: the whole frame is always kept) into out[0..28). */
static void put_epb_head(uint8_t *out, size_t total, uint32_t iface, uint64_t ts_ns,
                         uint32_t caplen)
{
	put32(out, UF_PCAPNG_BT_EPB);
	put32(out + 4, (uint32_t)total);
	put32(out + 8, iface);
	put32(out + 12, (uint32_t)(ts_ns >> 32));
	put32(out + 16, (uint32_t)ts_ns);
	put32(out + 20, caplen);
	put32(out + 24, caplen);
}

size_t uf_pcapng_epb_udp(uint8_t *out, uint32_t iface, uint64_t ts_ns,
                         const struct uf_pcapng_udp *a, const uint8_t *payload, uint32_t len)
{
	uint32_t caplen = UF_PCAPNG_UDP_HDRS + len;
	size_t total = uf_pcapng_epb_size(len);
	put_epb_head(out, total, iface, ts_ns, caplen);
	uint8_t *e = out + 28;
	put_eth_ip(e, a, 17, 8 + len);
	uint8_t *udp = e + 34;
	memcpy(udp, &a->src_port, 2);
	memcpy(udp + 2, &a->dst_port, 2);
	uf_put_be16(udp + 4, (uint16_t)(8 + len));
	uf_put_be16(udp + 6, 0); /* not computed */
	memcpy(udp + 8, payload, len);
	size_t pad = total - UF_PCAPNG_EPB_FIXED - caplen;
	memset(udp + 8 + len, 0, pad);
	put32(out + total - 4, (uint32_t)total);
	return total;
}

/* Ethernet and IPv4 headers (protocol `proto`, `l4` bytes after them) into e[0..34). */
static void put_eth_ip(uint8_t *e, const struct uf_pcapng_udp *a, uint8_t proto, uint32_t l4)
{
	const uint8_t *dst = (const uint8_t *)&a->dst_addr;
	const uint8_t *src = (const uint8_t *)&a->src_addr;
	if ((dst[0] & 0xf0) == 0xe0) {
		e[0] = 0x01, e[1] = 0x00, e[2] = 0x5e, e[3] = dst[1] & 0x7f, e[4] = dst[2],
		e[5] = dst[3];
	} else {
		e[0] = 0x02, e[1] = 0x00, memcpy(e + 2, dst, 4);
	}
	e[6] = 0x02, e[7] = 0x00;
	memcpy(e + 8, src, 4);
	uf_put_be16(e + 12, 0x0800);
	uint8_t *ip = e + 14;
	ip[0] = 0x45;
	ip[1] = 0;
	uf_put_be16(ip + 2, (uint16_t)(20 + l4));
	uf_put_be16(ip + 4, 0);
	uf_put_be16(ip + 6, 0x4000);
	ip[8] = 64;
	ip[9] = proto;
	ip[10] = ip[11] = 0;
	memcpy(ip + 12, src, 4);
	memcpy(ip + 16, dst, 4);
	uf_put_be16(ip + 10, ip_checksum(ip));
}

size_t uf_pcapng_epb_tcp(uint8_t *out, uint32_t iface, uint64_t ts_ns,
                         const struct uf_pcapng_udp *a, uint32_t seq, const uint8_t *payload,
                         uint32_t len)
{
	uint32_t caplen = UF_PCAPNG_TCP_HDRS + len;
	size_t total = uf_pcapng_epb_tcp_size(len);
	put_epb_head(out, total, iface, ts_ns, caplen);
	uint8_t *e = out + 28;
	put_eth_ip(e, a, 6, 20 + len);
	uint8_t *t = e + 34;
	memcpy(t, &a->src_port, 2);
	memcpy(t + 2, &a->dst_port, 2);
	uf_put_be32(t + 4, seq);
	uf_put_be32(t + 8, 1);      /* ack: the client's side is not recorded */
	t[12] = 5 << 4;             /* 20-byte header */
	t[13] = 0x18;               /* PSH | ACK */
	uf_put_be16(t + 14, 65535); /* window */
	uf_put_be16(t + 16, 0);     /* checksum: not computed */
	uf_put_be16(t + 18, 0);
	memcpy(t + 20, payload, len);
	memset(t + 20 + len, 0, total - UF_PCAPNG_EPB_FIXED - caplen);
	put32(out + total - 4, (uint32_t)total);
	return total;
}

/* ---- read side ---- */

static inline uint32_t rd32(const struct uf_pcapng *p, const uint8_t *b)
{
	uint32_t v;
	memcpy(&v, b, 4);
	return p->swapped ? __builtin_bswap32(v) : v;
}

static inline uint16_t rd16(const struct uf_pcapng *p, const uint8_t *b)
{
	uint16_t v;
	memcpy(&v, b, 2);
	return p->swapped ? __builtin_bswap16(v) : v;
}

int uf_pcapng_is(const uint8_t *b, size_t len)
{
	return len >= 4 && b[0] == 0x0a && b[1] == 0x0d && b[2] == 0x0d && b[3] == 0x0a;
}

/* Reads the SHB at p->off: byte order and version. 0, or -EPROTONOSUPPORT. */
static int read_shb(struct uf_pcapng *p, char *err, size_t errlen)
{
	const uint8_t *b = p->base + p->off;
	if (p->size - p->off < 28) {
		uf_err_set(err, errlen, "pcapng section header cut short");
		return -EPROTONOSUPPORT;
	}
	uint32_t bom;
	memcpy(&bom, b + 8, 4);
	if (bom == UF_PCAPNG_BYTE_ORDER)
		p->swapped = 0;
	else if (bom == __builtin_bswap32(UF_PCAPNG_BYTE_ORDER))
		p->swapped = 1;
	else {
		uf_err_set(err, errlen, "pcapng byte-order magic 0x%08x is wrong", bom);
		return -EPROTONOSUPPORT;
	}
	if (rd16(p, b + 12) != 1) {
		uf_err_set(err, errlen, "pcapng major version %u is not supported (1 is)",
		           rd16(p, b + 12));
		return -EPROTONOSUPPORT;
	}
	p->nif = 0;
	return 0;
}

int uf_pcapng_open(struct uf_pcapng *p, const uint8_t *buf, size_t len, char *err, size_t errlen)
{
	memset(p, 0, sizeof(*p));
	p->base = buf;
	p->size = len;
	if (!uf_pcapng_is(buf, len)) {
		uf_err_set(err, errlen, "not a pcapng file");
		return -EPROTONOSUPPORT;
	}
	return read_shb(p, err, errlen);
}

void uf_pcapng_rewind(struct uf_pcapng *p)
{
	p->off = 0;
	p->section = 0;
	p->nif = 0;
	char err[8];
	(void)read_shb(p, err, sizeof(err));
}

const struct uf_pcapng_if *uf_pcapng_iface(const struct uf_pcapng *p, uint32_t i)
{
	return i < p->nif && i < UF_PCAPNG_MAX_IF ? &p->ifs[i] : NULL;
}

static void copy_str(char *dst, const uint8_t *v, size_t len)
{
	if (len >= UF_PCAPNG_NAME_MAX)
		len = UF_PCAPNG_NAME_MAX - 1;
	memcpy(dst, v, len);
	dst[len] = '\0';
}

/* An IDB's body body[0..len): link type and the options the reader uses. */
static void read_idb(struct uf_pcapng *p, const uint8_t *body, size_t len)
{
	uint32_t i = p->nif++;
	if (i >= UF_PCAPNG_MAX_IF || len < 8)
		return;
	struct uf_pcapng_if *f = &p->ifs[i];
	memset(f, 0, sizeof(*f));
	f->linktype = rd16(p, body);
	f->ts_num = 1;
	f->ts_den = 1000000;
	for (size_t o = 8; o + 4 <= len;) {
		uint16_t code = rd16(p, body + o), ol = rd16(p, body + o + 2);
		const uint8_t *v = body + o + 4;
		if (code == OPT_ENDOFOPT || o + 4 + ol > len)
			break;
		if (code == IF_NAME)
			copy_str(f->name, v, ol);
		else if (code == IF_DESC)
			copy_str(f->desc, v, ol);
		else if (code == IF_TSRESOL && ol >= 1) {
			unsigned e = v[0] & 0x7f;
			if (v[0] & 0x80) { /* 2^-e */
				f->ts_den = e < 63 ? 1ull << e : 1ull << 62;
			} else {
				f->ts_den = 1;
				for (unsigned k = 0; k < e && k < 19; k++)
					f->ts_den *= 10;
			}
		} else if (code == IF_TSOFFSET && ol >= 8) {
			uint64_t lo = rd32(p, v), hi = rd32(p, v + 4);
			f->ts_offset_s = (int64_t)(p->swapped ? (lo << 32 | hi) : (hi << 32 | lo));
		}
		o += 4 + ((ol + 3u) & ~3u);
	}
}

static uint64_t to_ns(const struct uf_pcapng_if *f, uint64_t units)
{
	unsigned __int128 ns = (unsigned __int128)units * 1000000000ull * f->ts_num / f->ts_den;
	return (uint64_t)ns + (uint64_t)f->ts_offset_s * 1000000000ull; /* wraps, never UB */
}

int uf_pcapng_next(struct uf_pcapng *p, struct uf_pcapng_rec *rec)
{
	while (p->off < p->size) {
		const uint8_t *b = p->base + p->off;
		size_t left = p->size - p->off;
		if (left < BLOCK_MIN)
			goto torn;
		uint32_t type;
		memcpy(&type, b, 4); /* the SHB magic reads the same in both orders */
		if (type == UF_PCAPNG_BT_SHB) {
			char err[8];
			if (read_shb(p, err, sizeof(err)) < 0)
				goto torn;
			if (p->off > 0)
				p->section++;
		} else {
			type = rd32(p, b);
		}
		uint32_t blen = rd32(p, b + 4);
		if (blen < BLOCK_MIN || (blen & 3) || blen > left || rd32(p, b + blen - 4) != blen)
			goto torn;
		p->off += blen;
		const uint8_t *body = b + 8;
		size_t blen_body = blen - BLOCK_MIN;
		if (type == UF_PCAPNG_BT_IDB) {
			read_idb(p, body, blen_body);
			continue;
		}
		if (type == UF_PCAPNG_BT_EPB && blen_body >= 20) {
			uint32_t iface = rd32(p, body), caplen = rd32(p, body + 12);
			if (caplen > blen_body - 20)
				goto torn;
			const struct uf_pcapng_if *f = uf_pcapng_iface(p, iface);
			if (!f) {
				p->unknown_iface++;
				continue;
			}
			uint64_t units = (uint64_t)rd32(p, body + 4) << 32 | rd32(p, body + 8);
			rec->iface = iface;
			rec->section = p->section;
			rec->ts_ns = to_ns(f, units);
			rec->frame = body + 20;
			rec->caplen = caplen;
			rec->origlen = rd32(p, body + 16);
			return 1;
		}
		if (type == UF_PCAPNG_BT_SPB && blen_body >= 4 && p->nif > 0) {
			uint32_t orig = rd32(p, body);
			rec->iface = 0;
			rec->section = p->section;
			rec->ts_ns = 0;
			rec->frame = body + 4;
			rec->caplen = orig < blen_body - 4 ? orig : (uint32_t)(blen_body - 4);
			rec->origlen = orig;
			return 1;
		}
		if (type != UF_PCAPNG_BT_SHB)
			p->skipped_blocks++;
	}
	return 0;
torn:
	p->torn++;
	p->off = p->size;
	return 0;
}

/* ---- glue for decode/uf_reader.c ---- */

/* One indexed data packet. */
struct png_ent {
	uint32_t sess;     /* session number, in order of first appearance */
	uint64_t seq;      /* first sequence */
	uint64_t order;    /* arrival order */
	uint64_t ts_ns;    /* receive time */
	const uint8_t *pl; /* UDP payload, inside the mapping */
	uint32_t len;      /* its length */
	uint32_t count;    /* messages */
};

struct uf_pcapng_reader {
	struct uf_pcapng walk;             /* block walker */
	struct png_ent *e;                 /* data packets, sorted */
	size_t n;                          /* entries */
	size_t pos;                        /* next to deliver */
	char (*sess)[UF_MOLD_SESSION_LEN]; /* sessions by number */
	uint64_t *next;                    /* per session: first sequence not delivered */
	uint32_t nsess;                    /* sessions */
	struct uf_decode_counters scratch; /* re-parse counters (not the user's) */
};

static int ent_cmp(const void *a, const void *b)
{
	const struct png_ent *x = a, *y = b;
	if (x->sess != y->sess)
		return x->sess < y->sess ? -1 : 1;
	if (x->seq != y->seq)
		return x->seq < y->seq ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

static int32_t png_session(struct uf_pcapng_reader *g, const char *s)
{
	for (uint32_t i = 0; i < g->nsess; i++)
		if (!memcmp(g->sess[i], s, UF_MOLD_SESSION_LEN))
			return (int32_t)i;
	if ((g->nsess & 63) == 0) {
		void *ns = realloc(g->sess, (g->nsess + 64) * sizeof(*g->sess));
		if (!ns)
			return -1;
		g->sess = ns;
		void *nx = realloc(g->next, (g->nsess + 64) * sizeof(*g->next));
		if (!nx)
			return -1;
		g->next = nx;
	}
	memcpy(g->sess[g->nsess], s, UF_MOLD_SESSION_LEN);
	g->next[g->nsess] = 0;
	return (int32_t)g->nsess++;
}

int uf_pcapng_reader_open(struct uf_reader *r)
{
	struct uf_pcapng_reader *g = calloc(1, sizeof(*g));
	if (!g) {
		uf_err_set(r->err, sizeof(r->err), "out of memory");
		return -ENOMEM;
	}
	int rc = uf_pcapng_open(&g->walk, r->base, r->size, r->err, sizeof(r->err));
	if (rc < 0) {
		free(g);
		return rc;
	}
	r->png = g;
	r->format = UF_INPUT_PCAP;
	size_t cap = 0;
	struct uf_pcapng_rec rec;
	uint64_t order = 0;
	while (uf_pcapng_next(&g->walk, &rec) == 1) {
		const struct uf_pcapng_if *f = uf_pcapng_iface(&g->walk, rec.iface);
		r->linktype = f->linktype;
		const uint8_t *pl;
		size_t len;
		if (!uf_reader_frame_payload(r, rec.frame, rec.caplen, &pl, &len))
			continue;
		struct uf_frame pkt;
		if (uf_mold_open_counted(&pkt, pl, len, r->c) != UF_MOLD_DATA || pkt.count == 0)
			continue;
		int32_t s = png_session(g, pkt.session);
		if (s < 0)
			goto nomem;
		if (g->n == cap) {
			cap = cap ? cap * 2 : 4096;
			void *ne = realloc(g->e, cap * sizeof(*g->e));
			if (!ne)
				goto nomem;
			g->e = ne;
		}
		g->e[g->n++] = (struct png_ent){.sess = (uint32_t)s,
		                                .seq = pkt.seq,
		                                .order = order++,
		                                .ts_ns = rec.ts_ns,
		                                .pl = pl,
		                                .len = (uint32_t)len,
		                                .count = pkt.count};
	}
	if (g->walk.torn)
		UF_DC_ADD(r->c->file_err[UF_FILE_ERR_TRUNCATED_RECORD], g->walk.torn);
	if (g->n) /* g->e is NULL for a file with no MoldUDP64 data packet */
		qsort(g->e, g->n, sizeof(*g->e), ent_cmp);
	uf_pcapng_reader_rewind(r);
	return 0;
nomem:
	uf_pcapng_reader_close(r);
	uf_err_set(r->err, sizeof(r->err), "out of memory indexing the pcapng file");
	return -ENOMEM;
}

int uf_pcapng_reader_record(struct uf_reader *r, const uint8_t **pl, size_t *len, uint64_t *ts)
{
	struct uf_pcapng_reader *g = r->png;
	while (g->pos < g->n) {
		const struct png_ent *e = &g->e[g->pos++];
		uint64_t end = e->seq + e->count;
		if (end <= g->next[e->sess])
			continue; /* every message of it was delivered by an earlier copy */
		r->png_skip_below = g->next[e->sess] > e->seq ? g->next[e->sess] : 0;
		g->next[e->sess] = end;
		*pl = e->pl;
		*len = e->len;
		*ts = e->ts_ns;
		return 1;
	}
	return 0;
}

struct uf_decode_counters *uf_pcapng_reader_scratch(struct uf_reader *r)
{
	return &r->png->scratch;
}

void uf_pcapng_reader_rewind(struct uf_reader *r)
{
	struct uf_pcapng_reader *g = r->png;
	g->pos = 0;
	for (uint32_t i = 0; i < g->nsess; i++)
		g->next[i] = 0;
	r->png_skip_below = 0;
}

void uf_pcapng_reader_close(struct uf_reader *r)
{
	struct uf_pcapng_reader *g = r->png;
	if (!g)
		return;
	free(g->e);
	free(g->sess);
	free(g->next);
	free(g);
	r->png = NULL;
}
