/* Offline readers: daily files (with the zero-length quirk), classic pcap in every byte order
 * and timestamp resolution, with and without 802.1Q tags, Linux cooked captures, framing
 * errors counted by kind, sequence gaps, truncation at every byte, and refused formats with
 * a message that says what the file is. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "decode/uf_decode.h"

static const char SESSION[10] = {'S', 'E', 'S', 'S', 'I', 'O', 'N', '0', '0', '1'};

struct buf {
	uint8_t d[65536];
	size_t n;
};

static void put(struct buf *b, const void *p, size_t n)
{
	assert_true(b->n + n <= sizeof(b->d));
	memcpy(b->d + b->n, p, n);
	b->n += n;
}

static void put_le32(struct buf *b, uint32_t v, int swap)
{
	uint8_t x[4];
	if (swap)
		uf_put_be32(x, v);
	else
		memcpy(x, &v, 4);
	put(b, x, 4);
}

static void put_le16(struct buf *b, uint16_t v, int swap)
{
	uint8_t x[2];
	if (swap)
		uf_put_be16(x, v);
	else
		memcpy(x, &v, 2);
	put(b, x, 2);
}

static void msg_d(uint8_t *m, uint64_t ref)
{
	memset(m, 0, 19);
	m[0] = 'D';
	uf_put_be64(m + 11, ref);
}

/* A MoldUDP64 datagram with `n` D messages from `seq` (ref = seq). */
static size_t mold(uint8_t *out, uint64_t seq, int n)
{
	struct uf_mold_builder b;
	uf_mold_builder_init(&b, out, 1472, SESSION, seq);
	for (int i = 0; i < n; i++) {
		uint8_t d[19];
		msg_d(d, seq + (uint64_t)i);
		uf_mold_builder_add(&b, d, 19);
	}
	if (n == 0)
		uf_mold_build_heartbeat(out, SESSION, seq);
	return b.len;
}

struct pcap_opts {
	int ns;         /* nanosecond magic */
	int swap;       /* big-endian file */
	int vlans;      /* 802.1Q tags */
	uint32_t link;  /* link type (1 Ethernet, 113 SLL) */
	uint8_t proto;  /* IP protocol (17) */
	uint16_t etype; /* ethertype after tags (0x0800) */
	uint16_t frag;  /* IPv4 flags/fragment field */
};

static void pcap_global(struct buf *b, const struct pcap_opts *o)
{
	put_le32(b, o->ns ? 0xa1b23c4d : 0xa1b2c3d4, o->swap);
	put_le16(b, 2, o->swap);
	put_le16(b, 4, o->swap);
	put_le32(b, 0, o->swap);
	put_le32(b, 0, o->swap);
	put_le32(b, 262144, o->swap);
	put_le32(b, o->link, o->swap);
}

static void pcap_record(struct buf *b, const struct pcap_opts *o, uint32_t sec, uint32_t frac,
                        const uint8_t *payload, size_t plen)
{
	uint8_t f[2048];
	size_t n = 0;
	if (o->link == 1) {
		memset(f, 0xee, 12);
		n = 12;
		for (int v = 0; v < o->vlans; v++) {
			uf_put_be16(f + n, 0x8100);
			uf_put_be16(f + n + 2, (uint16_t)(100 + v));
			n += 4;
		}
		uf_put_be16(f + n, o->etype);
		n += 2;
	} else { /* Linux cooked (SLL): protocol at 14 */
		memset(f, 0, 14);
		uf_put_be16(f + 14, o->etype);
		n = 16;
	}
	uint8_t *ip = f + n;
	memset(ip, 0, 20);
	ip[0] = 0x45;
	uf_put_be16(ip + 2, (uint16_t)(20 + 8 + plen));
	uf_put_be16(ip + 6, o->frag);
	ip[8] = 64;
	ip[9] = o->proto;
	uint8_t *udp = ip + 20;
	uf_put_be16(udp, 5000);
	uf_put_be16(udp + 2, 26477);
	uf_put_be16(udp + 4, (uint16_t)(8 + plen));
	uf_put_be16(udp + 6, 0);
	memcpy(udp + 8, payload, plen);
	n += 28 + plen;
	put_le32(b, sec, o->swap);
	put_le32(b, frac, o->swap);
	put_le32(b, (uint32_t)n, o->swap);
	put_le32(b, (uint32_t)n, o->swap);
	put(b, f, n);
}

static const struct pcap_opts PLAIN = {.link = 1, .proto = 17, .etype = 0x0800};

/* Starts a PLAIN capture in `b` (global header only) and builds in `p` the MoldUDP64 datagram
 * of `n` messages from seq 1 that the caller records; returns its length. */
static size_t plain_pcap_start(struct buf *b, uint8_t *p, int n)
{
	b->n = 0;
	pcap_global(b, &PLAIN);
	return mold(p, 1, n);
}

/* Three packets: seq 1 (3 msgs), heartbeat at 4, seq 4 (2 msgs). */
static void build_pcap(struct buf *b, const struct pcap_opts *o)
{
	uint8_t p[1472];
	b->n = 0;
	pcap_global(b, o);
	pcap_record(b, o, 1692711000, 5, p, mold(p, 1, 3));
	pcap_record(b, o, 1692711000, 6, p, mold(p, 4, 0));
	pcap_record(b, o, 1692711001, 7, p, mold(p, 4, 2));
}

static void read_all(struct uf_reader *r, uint64_t *seqs, size_t *n)
{
	struct uf_reader_msg m;
	*n = 0;
	while (uf_reader_next(r, &m) > 0) {
		struct uf_itch_msg im;
		assert_int_equal(uf_itch_decode(m.msg, m.len, &im), 0);
		assert_int_equal(im.u.del.order_ref, m.seq);
		seqs[(*n)++] = m.seq;
	}
}

/* Opens `len` bytes at `data` on `r`, counting into `c` (zeroed first); the open must work. */
static void open_counted(struct uf_reader *r, struct uf_decode_counters *c, const void *data,
                         size_t len)
{
	memset(c, 0, sizeof(*c));
	assert_int_equal(uf_reader_open_mem(r, data, len, c), 0);
}

/* How many messages `r` yields from where it stands to its end. */
static int count_msgs(struct uf_reader *r)
{
	struct uf_reader_msg m;
	int n = 0;
	while (uf_reader_next(r, &m) > 0)
		n++;
	return n;
}

static void test_reader_pcap_every_variant_yields_same_messages(void **s)
{
	static struct buf b;
	for (int ns = 0; ns < 2; ns++)
		for (int swap = 0; swap < 2; swap++)
			for (int vlans = 0; vlans <= 2; vlans++)
				for (int sll = 0; sll < 2; sll++) {
					if (sll && vlans)
						continue;
					struct pcap_opts o = PLAIN;
					o.ns = ns;
					o.swap = swap;
					o.vlans = vlans;
					o.link = sll ? 113 : 1;
					build_pcap(&b, &o);
					struct uf_reader r;
					struct uf_decode_counters c;
					open_counted(&r, &c, b.d, b.n);
					assert_int_equal(r.format, UF_INPUT_PCAP);
					uint64_t seqs[16];
					size_t n;
					struct uf_reader_msg m;
					assert_int_equal(uf_reader_next(&r, &m), 1);
					assert_int_equal(m.ts_ns, 1692711000ull * 1000000000ull +
					                              (ns ? 5 : 5000));
					uf_reader_rewind(&r);
					read_all(&r, seqs, &n);
					assert_int_equal(n, 5);
					for (size_t i = 0; i < n; i++)
						assert_int_equal(seqs[i], i + 1);
					assert_int_equal(c.packets,
					                 4); /* 3 + 1 read before rewind */
					assert_int_equal(uf_decode_counters_errors(&c), 0);
					assert_int_equal(c.gaps, 0);
					uf_reader_close(&r);
				}
}

/* ARP, IGMP, TCP and IPv6 frames are not MoldUDP64: skipped and counted apart, not errors;
 * a UDP fragment and a lying MoldUDP64 count are errors. */
static void test_reader_pcap_skips_non_udp_non_ipv4_counts_fragments(void **s)
{
	static struct buf b;
	uint8_t p[1472];
	size_t pl = plain_pcap_start(&b, p, 1);
	struct pcap_opts tcp = PLAIN, arp = PLAIN, frag = PLAIN, igmp = PLAIN, v6 = PLAIN;
	tcp.proto = 6;
	igmp.proto = 2;
	arp.etype = 0x0806;
	v6.etype = 0x86dd;
	frag.frag = 0x2000; /* more fragments */
	pcap_record(&b, &tcp, 0, 0, p, pl);
	pcap_record(&b, &igmp, 0, 0, p, pl);
	pcap_record(&b, &arp, 0, 0, p, pl);
	pcap_record(&b, &v6, 0, 0, p, pl);
	pcap_record(&b, &frag, 0, 0, p, pl);
	pcap_record(&b, &PLAIN, 0, 0, p, pl);
	/* a MoldUDP64 payload that lies about its count */
	uf_put_be16(p + 18, 5);
	pcap_record(&b, &PLAIN, 0, 0, p, pl);
	struct uf_reader r;
	struct uf_decode_counters c;
	open_counted(&r, &c, b.d, b.n);
	uint64_t seqs[8];
	size_t n;
	read_all(&r, seqs, &n);
	assert_int_equal(n, 1);
	assert_int_equal(c.skipped[UF_SKIP_NON_UDP], 2);
	assert_int_equal(c.skipped[UF_SKIP_NON_IPV4], 2);
	assert_int_equal(c.skipped[UF_SKIP_OTHER_PORT], 0);
	assert_int_equal(uf_decode_counters_foreach_skipped(&c, NULL, NULL), 4);
	assert_int_equal(c.file_err[UF_FILE_ERR_IP_FRAGMENT], 1);
	assert_int_equal(c.mold_err[UF_MOLD_ERR_COUNT_MISMATCH], 1);
	assert_int_equal(uf_decode_counters_errors(&c), 2);
	uf_reader_close(&r);
}

/* With a port filter, datagrams to other ports are skipped (even malformed ones: they are
 * someone else's); without one every port is read. A daily file has no ports. */
static void test_reader_pcap_port_filter_skips_other_ports(void **s)
{
	static struct buf b;
	uint8_t p[1472];
	size_t pl = plain_pcap_start(&b, p, 2);
	pcap_record(&b, &PLAIN, 0, 0, p, pl); /* to 26477 */
	size_t other = b.n;
	pcap_record(&b, &PLAIN, 0, 0, p, pl);
	uf_put_be16(b.d + other + 16 + 14 + 20 + 2, 53); /* destination port 53 */
	size_t bad = b.n;
	pcap_record(&b, &PLAIN, 0, 0, p, pl);
	uf_put_be16(b.d + bad + 16 + 14 + 20 + 2, 9999);
	uf_put_be16(b.d + bad + 16 + 14 + 20 + 4, 3); /* and a UDP length that lies */
	struct uf_reader r;
	struct uf_decode_counters c;
	uint64_t seqs[8];
	size_t n;
	open_counted(&r, &c, b.d, b.n);
	assert_int_equal(uf_reader_set_udp_port(&r, 26477), 0);
	read_all(&r, seqs, &n);
	assert_int_equal(n, 2);
	assert_int_equal(c.skipped[UF_SKIP_OTHER_PORT], 2);
	assert_int_equal(uf_decode_counters_errors(&c), 0);
	uf_reader_close(&r);
	/* no filter: port 53's copy is read (gap-free duplicate sequence), the lie counted */
	open_counted(&r, &c, b.d, b.n);
	read_all(&r, seqs, &n);
	assert_int_equal(n, 4);
	assert_int_equal(c.skipped[UF_SKIP_OTHER_PORT], 0);
	assert_int_equal(c.file_err[UF_FILE_ERR_BAD_UDP_LENGTH], 1);
	uf_reader_close(&r);
	/* a daily file refuses a port */
	uint8_t d[2 + 19];
	uf_put_be16(d, 19);
	msg_d(d + 2, 1);
	assert_int_equal(uf_reader_open_mem(&r, d, sizeof(d), NULL), 0);
	assert_int_equal(uf_reader_set_udp_port(&r, 26477), -EINVAL);
	uf_reader_close(&r);
}

static void test_reader_pcap_sequence_jump_is_a_gap_not_an_error(void **s)
{
	static struct buf b;
	uint8_t p[1472];
	b.n = 0;
	pcap_global(&b, &PLAIN);
	pcap_record(&b, &PLAIN, 0, 0, p, mold(p, 1, 2));
	pcap_record(&b, &PLAIN, 0, 0, p, mold(p, 3, 1));  /* in order */
	pcap_record(&b, &PLAIN, 0, 0, p, mold(p, 10, 1)); /* 4..9 missing: gap */
	pcap_record(&b, &PLAIN, 0, 0, p, mold(p, 10, 1)); /* duplicate: not a gap */
	pcap_record(&b, &PLAIN, 0, 0, p, mold(p, 20, 0)); /* heartbeat says 20: gap */
	struct uf_reader r;
	struct uf_decode_counters c;
	open_counted(&r, &c, b.d, b.n);
	int n = count_msgs(&r);
	assert_int_equal(n, 5);
	assert_int_equal(c.gaps, 2);
	assert_int_equal(uf_decode_counters_errors(&c), 0);
	uf_reader_close(&r);
}

/* Every prefix of a pcap: never a crash, never a message from a partial record, and an
 * error counted unless the cut falls between records. */
static void test_reader_pcap_truncation_at_every_byte(void **s)
{
	static struct buf b;
	build_pcap(&b, &PLAIN);
	size_t boundaries[4], nb = 0, off = 24;
	boundaries[nb++] = 24;
	while (off < b.n) {
		uint32_t caplen;
		memcpy(&caplen, b.d + off + 8, 4);
		off += 16 + caplen;
		boundaries[nb++] = off;
	}
	for (size_t cut = 24; cut <= b.n; cut++) {
		uint8_t *copy = malloc(cut);
		memcpy(copy, b.d, cut);
		struct uf_reader r;
		struct uf_decode_counters c;
		open_counted(&r, &c, copy, cut);
		int n = count_msgs(&r);
		int at_boundary = 0, complete = 0;
		for (size_t i = 0; i < nb; i++) {
			if (boundaries[i] == cut)
				at_boundary = 1;
			if (boundaries[i] <= cut)
				complete = (int)i;
		}
		static const int msgs_after[] = {0, 3, 3, 5};
		assert_int_equal(n, msgs_after[complete]);
		assert_int_equal(uf_decode_counters_errors(&c), at_boundary ? 0 : 1);
		uf_reader_close(&r);
		free(copy);
	}
}

/* Offset of the IPv4 header in the n-th record of a PLAIN capture built by pcap_record. */
static size_t ip_off(const struct buf *b, int nth)
{
	size_t off = 24;
	for (int i = 0; i < nth; i++) {
		uint32_t caplen;
		memcpy(&caplen, b->d + off + 8, 4);
		off += 16 + caplen;
	}
	return off + 16 + 14;
}

static void test_reader_pcap_lying_lengths_are_counted(void **s)
{
	static struct buf b;
	uint8_t p[1472];
	size_t pl = plain_pcap_start(&b, p, 1);
	for (int i = 0; i < 6; i++)
		pcap_record(&b, &PLAIN, 0, 0, p, pl);
	uf_put_be16(b.d + ip_off(&b, 0) + 2, 2000);      /* IP total length beyond the frame */
	uf_put_be16(b.d + ip_off(&b, 1) + 2, 19);        /* IP total length below its header */
	uf_put_be16(b.d + ip_off(&b, 2) + 20 + 4, 7);    /* UDP length below its header */
	uf_put_be16(b.d + ip_off(&b, 3) + 20 + 4, 1400); /* UDP length beyond the IP packet */
	b.d[ip_off(&b, 4)] = 0x65;                       /* IP version 6 in an IPv4 ethertype */
	/* the last record's caplen claims more than the file holds */
	uint32_t big = 100000;
	memcpy(b.d + ip_off(&b, 5) - 14 - 16 + 8, &big, 4);
	struct uf_reader r;
	struct uf_decode_counters c;
	open_counted(&r, &c, b.d, b.n);
	int n = count_msgs(&r);
	assert_int_equal(n, 0);
	assert_int_equal(c.file_err[UF_FILE_ERR_TRUNCATED_RECORD], 2);
	/* version 6 under an IPv4 ethertype claims IPv4 and is not: malformed */
	assert_int_equal(c.file_err[UF_FILE_ERR_BAD_IP_HEADER], 2);
	assert_int_equal(c.file_err[UF_FILE_ERR_BAD_UDP_LENGTH], 2);
	assert_int_equal(uf_decode_counters_foreach_skipped(&c, NULL, NULL), 0);
	assert_int_equal(uf_decode_counters_errors(&c), 6);
	uf_reader_close(&r);
}

/* Daily file: D (prefix 19), zero-prefix X, A (prefix 36). */
static size_t build_daily(uint8_t *out)
{
	size_t n = 0;
	uf_put_be16(out, 19);
	msg_d(out + 2, 1);
	n = 21;
	uf_put_be16(out + n, 0); /* the quirk: length from the type */
	memset(out + n + 2, 0, 23);
	out[n + 2] = 'X';
	uf_put_be64(out + n + 2 + 11, 2);
	n += 25;
	uf_put_be16(out + n, 36);
	memset(out + n + 2, 0, 36);
	out[n + 2] = 'A';
	uf_put_be64(out + n + 2 + 11, 3);
	n += 38;
	return n;
}

static void test_reader_daily_resolves_zero_length_without_error(void **s)
{
	uint8_t d[128];
	size_t len = build_daily(d);
	struct uf_reader r;
	struct uf_decode_counters c;
	open_counted(&r, &c, d, len);
	assert_int_equal(r.format, UF_INPUT_DAILY);
	uint64_t seqs[8];
	size_t n;
	read_all(&r, seqs, &n);
	assert_int_equal(n, 3);
	assert_int_equal(seqs[2], 3);
	assert_int_equal(c.zero_len_resolved, 1);
	assert_int_equal(uf_decode_counters_errors(&c), 0);
	assert_int_equal(c.packets, 0);
	uf_reader_close(&r);
}

static void test_reader_daily_truncation_at_every_byte(void **s)
{
	uint8_t d[128];
	size_t len = build_daily(d);
	const size_t bounds[] = {0, 21, 46, 84};
	for (size_t cut = 3; cut <= len; cut++) {
		uint8_t *copy = malloc(cut);
		memcpy(copy, d, cut);
		struct uf_reader r;
		struct uf_decode_counters c;
		open_counted(&r, &c, copy, cut);
		int n = count_msgs(&r), complete = 0, at = 0;
		for (int i = 0; i < 4; i++) {
			if (bounds[i] <= cut)
				complete = i;
			if (bounds[i] == cut)
				at = 1;
		}
		assert_int_equal(n, complete);
		assert_int_equal(c.file_err[UF_FILE_ERR_TRUNCATED_FILE], at ? 0 : 1);
		uf_reader_close(&r);
		free(copy);
	}
}

static void test_reader_daily_zero_length_on_unknown_type_stops_loudly(void **s)
{
	uint8_t d[128];
	size_t len = build_daily(d);
	d[21 + 2] = 'z'; /* the zero-prefixed message now has no known length */
	struct uf_reader r;
	struct uf_decode_counters c;
	open_counted(&r, &c, d, len);
	uint64_t seqs[8];
	size_t n;
	read_all(&r, seqs, &n);
	assert_int_equal(n, 1);
	assert_int_equal(c.file_err[UF_FILE_ERR_UNRESOLVABLE_LENGTH], 1);
	uf_reader_close(&r);
}

static void test_reader_daily_wrong_prefix_is_a_bad_length_of_that_type(void **s)
{
	uint8_t d[128];
	size_t len = build_daily(d);
	/* The A's prefix says 35: the reader trusts prefixes, the decoder refuses the length,
	 * and the byte left over is read as a message that cannot be resolved. */
	uf_put_be16(d + 46, 35);
	struct uf_reader r;
	struct uf_decode_counters c;
	open_counted(&r, &c, d, len);
	struct uf_reader_msg m;
	struct uf_itch_msg im;
	int ok = 0;
	while (uf_reader_next(&r, &m) > 0)
		if (uf_decode_msg_counted(m.msg, m.len, &im, &c) == 0)
			ok++;
	assert_int_equal(ok, 2);
	assert_int_equal(c.itch_bad_len[uf_itch_type_index('A')], 1);
	assert_true(uf_decode_counters_errors(&c) >= 2); /* + the leftover byte */
	uf_reader_close(&r);
}

static void expect_refused(const void *data, size_t len, const char *needle)
{
	struct uf_reader r;
	int rc = uf_reader_open_mem(&r, data, len, NULL);
	assert_true(rc < 0);
	if (!strstr(r.err, needle)) {
		print_error("message '%s' does not mention '%s'\n", r.err, needle);
		fail();
	}
	uf_reader_close(&r);
}

static void test_reader_refuses_other_formats_with_clear_message(void **s)
{
	static const uint8_t pcapng[] = {0x0a, 0x0d, 0x0d, 0x0a, 0x1c, 0, 0, 0, 0x4d, 0x3c};
	static const uint8_t gz[] = {0x1f, 0x8b, 0x08, 0, 0, 0, 0, 0};
	static const char text[] = "hello, this is not market data\n";
	expect_refused(pcapng, sizeof(pcapng), "pcapng");
	expect_refused(gz, sizeof(gz), "gzip");
	expect_refused(text, sizeof(text) - 1, "not a recognised input");
	expect_refused(text, 0, "empty");
	static struct buf b;
	struct pcap_opts wifi = PLAIN;
	wifi.link = 105;
	b.n = 0;
	pcap_global(&b, &wifi);
	expect_refused(b.d, b.n, "link type 105");
	expect_refused(b.d, 10, "shorter than its 24-byte global header");
}

/* A pcapng file that holds no MoldUDP64 data packet leaves the reader's index empty: it must
 * open (or be refused) and yield nothing, not sort a NULL index (the fuzzer found the second
 * input below, a section header whose length field was mangled). */
static void test_reader_pcapng_without_data_packets_yields_nothing(void **s)
{
	static const uint8_t shb_idb[] = {
	    0x0a, 0x0d, 0x0d, 0x0a, 0x1c, 0,    0,    0,    0x4d, 0x3c, 0x2b, 0x1a, 1, 0, 0,
	    0,    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x1c, 0,    0,    0, /* SHB, 28
	                                                                                  bytes */
	    1,    0,    0,    0,    0x14, 0,    0,    0,    1,    0,    0,    0,    0, 0, 4,
	    0,    0x14, 0,    0,    0 /* IDB, Ethernet */
	};
	static const uint8_t mangled[] = {
	    0x0a, 0x0d, 0x0d, 0x0a, 0xff, 0x01, 0xff, 0xfe, 0x4d, 0x3c, 0x2b, 0x1a, 0x01, 0x00,
	    0xf2, 0xfe, 0xf5, 0x12, 0x00, 0xfa, 0x08, 0xff, 0xf7, 0xff, 0x13, 0x2f, 0x89, 0xff};
	const struct {
		const uint8_t *d;
		size_t n;
	} in[] = {{shb_idb, sizeof(shb_idb)}, {mangled, sizeof(mangled)}};
	for (size_t i = 0; i < sizeof(in) / sizeof(in[0]); i++) {
		struct uf_reader r;
		if (uf_reader_open_mem(&r, in[i].d, in[i].n, NULL) < 0) {
			assert_true(r.err[0] != '\0'); /* refused, with a reason */
			uf_reader_close(&r);
			continue;
		}
		struct uf_reader_msg m;
		assert_int_equal(uf_reader_next(&r, &m), 0);
		uf_reader_close(&r);
	}
}

static void test_reader_file_paths_errors_and_payloads(void **s)
{
	struct uf_reader r;
	assert_int_equal(uf_reader_open(&r, "/nonexistent/uf-decode-test", NULL), -ENOENT);
	assert_non_null(strstr(r.err, "cannot open"));
	uf_reader_close(&r);
	assert_int_equal(uf_reader_open(&r, "/tmp", NULL), -EISDIR);
	uf_reader_close(&r);

	static struct buf b;
	build_pcap(&b, &PLAIN);
	char path[] = "/tmp/uf-decode-test-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, b.d, b.n), (ssize_t)b.n);
	close(fd);
	struct uf_decode_counters c;
	memset(&c, 0, sizeof(c));
	assert_int_equal(uf_reader_open(&r, path, &c), 0);
	const uint8_t *pl;
	size_t len;
	uint64_t ts;
	int pkts = 0;
	while (uf_reader_next_payload(&r, &pl, &len, &ts) > 0) {
		struct uf_frame pkt;
		assert_true(uf_mold_open(&pkt, pl, len) > 0);
		pkts++;
	}
	assert_int_equal(pkts, 3);
	uf_reader_close(&r);
	unlink(path);
	assert_string_equal(uf_reader_format_name(UF_INPUT_PCAP), "pcap");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_reader_pcap_every_variant_yields_same_messages),
	    cmocka_unit_test(test_reader_pcap_skips_non_udp_non_ipv4_counts_fragments),
	    cmocka_unit_test(test_reader_pcap_port_filter_skips_other_ports),
	    cmocka_unit_test(test_reader_pcap_sequence_jump_is_a_gap_not_an_error),
	    cmocka_unit_test(test_reader_pcap_truncation_at_every_byte),
	    cmocka_unit_test(test_reader_pcap_lying_lengths_are_counted),
	    cmocka_unit_test(test_reader_daily_resolves_zero_length_without_error),
	    cmocka_unit_test(test_reader_daily_truncation_at_every_byte),
	    cmocka_unit_test(test_reader_daily_zero_length_on_unknown_type_stops_loudly),
	    cmocka_unit_test(test_reader_daily_wrong_prefix_is_a_bad_length_of_that_type),
	    cmocka_unit_test(test_reader_refuses_other_formats_with_clear_message),
	    cmocka_unit_test(test_reader_pcapng_without_data_packets_yields_nothing),
	    cmocka_unit_test(test_reader_file_paths_errors_and_payloads),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
