/* Offline reading of IEX captures: IEX-TP payloads recognised in classic pcap, gzip'd inputs
 * (one member or several, from memory or a file) read directly, stream restarts inside one
 * session counted and not taken for duplicates, gaps, a segment of the other protocol, a
 * truncated last record, the payload option, and corrupt or truncated gzip refused with a
 * message. Captures are built here (Ethernet/IPv4/UDP) and compressed with zlib. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include <cmocka.h>

#include "decode/uf_decode.h"

struct buf {
	uint8_t d[1 << 16];
	size_t n;
};

static void put(struct buf *b, const void *p, size_t n)
{
	assert_true(b->n + n <= sizeof(b->d));
	memcpy(b->d + b->n, p, n);
	b->n += n;
}

static void put32(struct buf *b, uint32_t v)
{
	uint8_t x[4];
	uf_put_le32(x, v);
	put(b, x, 4);
}

static void pcap_global(struct buf *b)
{
	b->n = 0;
	put32(b, 0xa1b2c3d4);
	uint8_t ver[4] = {2, 0, 4, 0};
	put(b, ver, 4);
	put32(b, 0);
	put32(b, 0);
	put32(b, 65535);
	put32(b, 1); /* Ethernet */
}

/* One Ethernet/IPv4/UDP frame to port 10378 carrying `pl`; `short_by` bytes fewer in the
 * file than the record header says (a truncated last record). */
static void pcap_udp(struct buf *b, uint32_t sec, const uint8_t *pl, size_t plen, size_t short_by)
{
	uint8_t f[2048];
	memset(f, 0xee, 12);
	uf_put_be16(f + 12, 0x0800);
	uint8_t *ip = f + 14;
	memset(ip, 0, 20);
	ip[0] = 0x45;
	uf_put_be16(ip + 2, (uint16_t)(28 + plen));
	ip[8] = 64;
	ip[9] = 17;
	uint8_t *udp = ip + 20;
	uf_put_be16(udp, 10378);
	uf_put_be16(udp + 2, 10378);
	uf_put_be16(udp + 4, (uint16_t)(8 + plen));
	uf_put_be16(udp + 6, 0);
	memcpy(udp + 8, pl, plen);
	size_t n = 42 + plen;
	put32(b, sec);
	put32(b, 0);
	put32(b, (uint32_t)n);
	put32(b, (uint32_t)n);
	put(b, f, n - short_by);
}

/* An IEX-TP segment of `proto` in session 1132527616: `n` messages from `seq` at stream
 * offset `off`; message i is a trade report ('T', DEEP and TOPS) with trade id seq + i, or
 * a system event when `sys`. */
static size_t seg(uint8_t *out, uint16_t proto, int64_t seq, int64_t off, int n, int sys)
{
	struct uf_iextp_hdr h = {.version = 1,
	                         .protocol_id = proto,
	                         .channel_id = 1,
	                         .session_id = 1132527616,
	                         .stream_offset = off,
	                         .first_seq = seq,
	                         .send_time = 1493132598742110851ll};
	struct uf_iextp_builder b;
	assert_int_equal(uf_iextp_builder_init(&b, out, 1472, &h), 0);
	for (int i = 0; i < n; i++) {
		uint8_t m[38];
		memset(m, 0, sizeof(m));
		if (sys) {
			m[0] = 'S';
			m[1] = 'O';
			assert_int_equal(uf_iextp_builder_add(&b, m, 10), 0);
			continue;
		}
		m[0] = 'T';
		memcpy(m + 10, "ZIEXT   ", 8);
		uf_put_le32(m + 18, 100);
		uf_put_le64(m + 22, 990500);
		uf_put_le64(m + 30, (uint64_t)(seq + i));
		assert_int_equal(uf_iextp_builder_add(&b, m, 38), 0);
	}
	return b.len;
}

/* A DEEP capture: a stream, a restart at 1 / offset 0 in the same session, a gap, a TOPS
 * segment that does not belong. 9 messages come out: 1 2 3 | 1 2 3 | 6 7 8 (after the gap:
 * 4 and 5 are missing). */
static void deep_capture(struct buf *b)
{
	uint8_t p[1500];
	pcap_global(b);
	pcap_udp(b, 1, p, seg(p, UF_IEXTP_PROTO_DEEP, 1, 0, 0, 0), 0);   /* heartbeat */
	pcap_udp(b, 2, p, seg(p, UF_IEXTP_PROTO_DEEP, 1, 0, 1, 1), 0);   /* S */
	pcap_udp(b, 3, p, seg(p, UF_IEXTP_PROTO_DEEP, 2, 12, 2, 0), 0);  /* T T */
	pcap_udp(b, 4, p, seg(p, UF_IEXTP_PROTO_DEEP, 4, 92, 0, 0), 0);  /* heartbeat: next 4 */
	pcap_udp(b, 5, p, seg(p, UF_IEXTP_PROTO_DEEP, 1, 0, 0, 0), 0);   /* restart */
	pcap_udp(b, 6, p, seg(p, UF_IEXTP_PROTO_DEEP, 1, 0, 1, 1), 0);   /* S */
	pcap_udp(b, 7, p, seg(p, UF_IEXTP_PROTO_TOPS, 2, 12, 2, 0), 0);  /* wrong protocol */
	pcap_udp(b, 8, p, seg(p, UF_IEXTP_PROTO_DEEP, 2, 12, 2, 0), 0);  /* T T */
	pcap_udp(b, 9, p, seg(p, UF_IEXTP_PROTO_DEEP, 6, 172, 3, 0), 0); /* gap: 4, 5 */
}

/* gzip of buf[0, n) as one member (level 6), into out; returns its length. */
static size_t gzip_member(const uint8_t *in, size_t n, uint8_t *out, size_t cap)
{
	z_stream z = {0};
	assert_int_equal(deflateInit2(&z, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY),
	                 Z_OK);
	z.next_in = (Bytef *)(uintptr_t)in;
	z.avail_in = (uInt)n;
	z.next_out = out;
	z.avail_out = (uInt)cap;
	assert_int_equal(deflate(&z, Z_FINISH), Z_STREAM_END);
	size_t len = cap - z.avail_out;
	deflateEnd(&z);
	return len;
}

struct got {
	uint64_t seq[32];
	uint8_t type[32];
	uint16_t proto[32];
	int n;
};

static void read_all(struct uf_reader *r, struct uf_decode_counters *c, struct got *g)
{
	struct uf_reader_msg m;
	memset(g, 0, sizeof(*g));
	while (uf_reader_next(r, &m) > 0) {
		assert_true(g->n < 32);
		struct uf_iex_msg d;
		assert_true(m.proto != 0);
		assert_true(uf_iex_decode_counted(m.proto, m.msg, m.len, &d, c) > 0);
		if (d.type == 'T')
			assert_int_equal(d.u.trade.trade_id, m.seq); /* what the builder wrote */
		g->seq[g->n] = m.seq;
		g->type[g->n] = d.type;
		g->proto[g->n] = m.proto;
		g->n++;
	}
}

static void check_deep(const struct got *g, const struct uf_decode_counters *c)
{
	static const uint64_t want[] = {1, 2, 3, 1, 2, 3, 6, 7, 8};
	assert_int_equal(g->n, 9);
	for (int i = 0; i < 9; i++) {
		assert_int_equal(g->seq[i], want[i]);
		assert_int_equal(g->proto[i], UF_IEXTP_PROTO_DEEP);
		assert_int_equal(g->type[i], want[i] == 1 ? 'S' : 'T');
	}
	assert_int_equal(c->iex_packets, 9);
	assert_int_equal(c->packets, 9);
	assert_int_equal(c->heartbeats, 3);
	assert_int_equal(c->iex_stream_restarts, 1); /* counted once, not per heartbeat */
	assert_int_equal(c->gaps, 1);
	assert_int_equal(c->mold_err[UF_MOLD_ERR_WRONG_PROTOCOL_ID], 1);
	assert_int_equal(c->iex_offset_mismatch, 0); /* every offset agrees, across the restart */
	assert_int_equal(c->messages, 9);
	assert_int_equal(c->iex_by_type[uf_iex_type_index('T')], 7);
	assert_int_equal(c->iex_by_type[uf_iex_type_index('S')], 2);
	assert_int_equal(uf_decode_counters_errors(c), 1);
}

static void test_iex_reader_plain_and_gzip_give_the_same_messages(void **s)
{
	static struct buf b;
	static uint8_t gz[1 << 16];
	deep_capture(&b);
	struct uf_reader r;
	struct uf_decode_counters c;
	struct got g;
	memset(&c, 0, sizeof(c));
	assert_int_equal(uf_reader_open_mem(&r, b.d, b.n, &c), 0);
	assert_int_equal(r.format, UF_INPUT_PCAP);
	read_all(&r, &c, &g);
	assert_int_equal(r.payload, UF_PAYLOAD_IEXTP);
	check_deep(&g, &c);
	uf_reader_close(&r);

	size_t gl = gzip_member(b.d, b.n, gz, sizeof(gz));
	assert_true(gl < b.n); /* it did compress */
	memset(&c, 0, sizeof(c));
	assert_int_equal(uf_reader_open_mem(&r, gz, gl, &c), 0);
	assert_non_null(r.inflated);
	assert_int_equal(r.size, b.n);
	read_all(&r, &c, &g);
	check_deep(&g, &c);
	/* Rewind re-reads the inflated copy (the restart is counted again: counters add up). */
	uf_reader_rewind(&r);
	struct got g2;
	read_all(&r, &c, &g2);
	assert_int_equal(g2.n, 9);
	assert_int_equal(c.iex_stream_restarts, 2);
	uf_reader_close(&r);
	assert_null(r.inflated);
}

static void test_iex_reader_gzip_members_concatenate(void **s)
{
	static struct buf b;
	static uint8_t gz[1 << 16];
	deep_capture(&b);
	size_t half = b.n / 2;
	size_t l1 = gzip_member(b.d, half, gz, sizeof(gz));
	size_t l2 = gzip_member(b.d + half, b.n - half, gz + l1, sizeof(gz) - l1);
	struct uf_reader r;
	struct uf_decode_counters c;
	struct got g;
	memset(&c, 0, sizeof(c));
	assert_int_equal(uf_reader_open_mem(&r, gz, l1 + l2, &c), 0);
	assert_int_equal(r.size, b.n);
	read_all(&r, &c, &g);
	check_deep(&g, &c);
	uf_reader_close(&r);
}

static void expect_gzip_refused(const uint8_t *d, size_t n, const char *needle)
{
	struct uf_reader r;
	int rc = uf_reader_open_mem(&r, d, n, NULL);
	assert_int_equal(rc, -EBADMSG);
	if (!strstr(r.err, needle)) {
		print_error("message '%s' does not mention '%s'\n", r.err, needle);
		fail();
	}
	uf_reader_close(&r);
}

static void test_iex_reader_corrupt_or_truncated_gzip_is_refused(void **s)
{
	static struct buf b;
	static uint8_t gz[1 << 16];
	deep_capture(&b);
	size_t gl = gzip_member(b.d, b.n, gz, sizeof(gz));
	expect_gzip_refused(gz, gl / 2, "truncated");
	expect_gzip_refused(gz, 10, "truncated"); /* the header alone */
	gz[gl - 5] ^= 0xff;                       /* the trailer's length: CRC/size check */
	expect_gzip_refused(gz, gl, "corrupt gzip");
	gz[gl - 5] ^= 0xff;
	/* A valid gzip of nothing is an empty input, refused as such (and holds no memory). */
	size_t el = gzip_member(b.d, 0, gz + gl, sizeof(gz) - gl);
	struct uf_reader e;
	assert_int_equal(uf_reader_open_mem(&e, gz + gl, el, NULL), -ENODATA);
	assert_non_null(strstr(e.err, "nothing"));
	assert_null(e.inflated);
	gz[12] ^= 0xff; /* inside the deflate data */
	struct uf_reader r;
	assert_true(uf_reader_open_mem(&r, gz, gl, NULL) < 0);
	assert_non_null(strstr(r.err, "gzip"));
	uf_reader_close(&r);
}

static void test_iex_reader_truncated_last_record_is_counted(void **s)
{
	static struct buf b;
	uint8_t p[1500];
	deep_capture(&b);
	pcap_udp(&b, 10, p, seg(p, UF_IEXTP_PROTO_DEEP, 9, 292, 3, 0), 40); /* cut short */
	struct uf_reader r;
	struct uf_decode_counters c;
	struct got g;
	memset(&c, 0, sizeof(c));
	assert_int_equal(uf_reader_open_mem(&r, b.d, b.n, &c), 0);
	read_all(&r, &c, &g);
	assert_int_equal(g.n, 9); /* nothing of the cut segment */
	assert_int_equal(c.file_err[UF_FILE_ERR_TRUNCATED_RECORD], 1);
	assert_int_equal(c.iex_packets, 9);
	assert_int_equal(uf_decode_counters_errors(&c), 2);
	uf_reader_close(&r);
}

static void test_iex_reader_payload_option_overrides_detection(void **s)
{
	static struct buf b;
	deep_capture(&b);
	struct uf_reader r;
	struct uf_decode_counters c;
	struct uf_reader_msg m;
	/* Read as MoldUDP64: every segment is a malformed Mold packet, nothing comes out. */
	memset(&c, 0, sizeof(c));
	assert_int_equal(uf_reader_open_mem(&r, b.d, b.n, &c), 0);
	assert_int_equal(uf_reader_set_payload(&r, UF_PAYLOAD_MOLD, 0), 0);
	assert_int_equal(uf_reader_next(&r, &m), 0);
	assert_int_equal(c.packets, 9);
	assert_int_equal(c.iex_packets, 0);
	assert_int_equal(uf_decode_counters_errors(&c), 9);
	uf_reader_close(&r);
	/* Read as TOPS: the DEEP segments are the wrong protocol, the TOPS one comes out. */
	memset(&c, 0, sizeof(c));
	assert_int_equal(uf_reader_open_mem(&r, b.d, b.n, &c), 0);
	assert_int_equal(uf_reader_set_payload(&r, UF_PAYLOAD_IEXTP, UF_IEXTP_PROTO_TOPS), 0);
	int n = 0;
	while (uf_reader_next(&r, &m) > 0) {
		assert_int_equal(m.proto, UF_IEXTP_PROTO_TOPS);
		n++;
	}
	assert_int_equal(n, 2);
	assert_int_equal(c.mold_err[UF_MOLD_ERR_WRONG_PROTOCOL_ID], 8);
	assert_int_equal(uf_reader_set_payload(&r, 7, 0), -EINVAL);
	uf_reader_close(&r);
	/* A daily file has no UDP payloads. */
	static const uint8_t daily[] = {0, 12, 'S', 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 'O'};
	assert_int_equal(uf_reader_open_mem(&r, daily, sizeof(daily), NULL), 0);
	assert_int_equal(uf_reader_set_payload(&r, UF_PAYLOAD_IEXTP, 0), -EINVAL);
	assert_int_equal(uf_reader_next(&r, &m), 1);
	assert_int_equal(m.proto, 0);
	uf_reader_close(&r);
}

static void test_iex_reader_gzip_file_and_gzip_mold_capture(void **s)
{
	static struct buf b;
	static uint8_t gz[1 << 16];
	/* A MoldUDP64 capture gzip'd still reads as MoldUDP64 (proto 0). */
	pcap_global(&b);
	uint8_t p[1500];
	static const char session[10] = {'S', 'E', 'S', 'S', 'I', 'O', 'N', '0', '0', '1'};
	struct uf_mold_builder mb;
	uf_mold_builder_init(&mb, p, sizeof(p), session, 1);
	uint8_t d[19] = {'D'};
	uf_mold_builder_add(&mb, d, sizeof(d));
	pcap_udp(&b, 1, p, mb.len, 0);
	size_t gl = gzip_member(b.d, b.n, gz, sizeof(gz));
	char path[] = "/tmp/uf-iex-reader-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, gz, gl), (ssize_t)gl);
	close(fd);
	struct uf_reader r;
	struct uf_decode_counters c;
	memset(&c, 0, sizeof(c));
	assert_int_equal(uf_reader_open(&r, path, &c), 0);
	struct uf_reader_msg m;
	assert_int_equal(uf_reader_next(&r, &m), 1);
	assert_int_equal(m.proto, 0);
	assert_int_equal(m.seq, 1);
	assert_int_equal(m.msg[0], 'D');
	assert_int_equal(uf_reader_next(&r, &m), 0);
	assert_int_equal(r.payload, UF_PAYLOAD_MOLD);
	assert_int_equal(c.iex_packets, 0);
	uf_reader_close(&r);
	/* A gzip file that is cut short says so, with the path. */
	fd = open(path, O_WRONLY | O_TRUNC);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, gz, gl - 9), (ssize_t)(gl - 9));
	close(fd);
	assert_int_equal(uf_reader_open(&r, path, NULL), -EBADMSG);
	assert_non_null(strstr(r.err, path));
	assert_non_null(strstr(r.err, "truncated"));
	uf_reader_close(&r);
	unlink(path);
}

/* Stream offsets are checked against the bytes before them: a contiguous segment must start
 * where the last ended, one after a gap not before it. Its messages still come out. */
static void test_iex_reader_stream_offset_that_lies_is_counted(void **s)
{
	static struct buf b;
	uint8_t p[1500];
	pcap_global(&b);
	pcap_udp(&b, 1, p, seg(p, UF_IEXTP_PROTO_DEEP, 1, 0, 2, 0), 0);    /* ends at 80 */
	pcap_udp(&b, 2, p, seg(p, UF_IEXTP_PROTO_DEEP, 3, 81, 1, 0), 0);   /* says 81: lies */
	pcap_udp(&b, 3, p, seg(p, UF_IEXTP_PROTO_DEEP, 4, 121, 1, 0), 0);  /* from its end: ok */
	pcap_udp(&b, 4, p, seg(p, UF_IEXTP_PROTO_DEEP, 9, 100, 1, 0), 0);  /* gap, yet back */
	pcap_udp(&b, 5, p, seg(p, UF_IEXTP_PROTO_DEEP, 10, 140, 0, 0), 0); /* heartbeat: ok */
	pcap_udp(&b, 6, p, seg(p, UF_IEXTP_PROTO_DEEP, 2, 40, 1, 0), 0);   /* old: not checked */
	struct uf_reader r;
	struct uf_decode_counters c;
	struct got g;
	memset(&c, 0, sizeof(c));
	assert_int_equal(uf_reader_open_mem(&r, b.d, b.n, &c), 0);
	read_all(&r, &c, &g);
	assert_int_equal(g.n, 6);
	assert_int_equal(c.iex_offset_mismatch, 2);
	assert_int_equal(c.gaps, 1);
	assert_int_equal(uf_decode_counters_errors(&c), 2);
	uf_reader_close(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_iex_reader_plain_and_gzip_give_the_same_messages),
	    cmocka_unit_test(test_iex_reader_gzip_members_concatenate),
	    cmocka_unit_test(test_iex_reader_corrupt_or_truncated_gzip_is_refused),
	    cmocka_unit_test(test_iex_reader_truncated_last_record_is_counted),
	    cmocka_unit_test(test_iex_reader_payload_option_overrides_detection),
	    cmocka_unit_test(test_iex_reader_gzip_file_and_gzip_mold_capture),
	    cmocka_unit_test(test_iex_reader_stream_offset_that_lies_is_counted),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
