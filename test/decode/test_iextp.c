/* IEX-TP 1.25 framing: the specification's example segment, heartbeats, every refusal counted
 * by kind, truncation at every byte, the session rendering, the builder, the framing tables
 * and the stream-start test the DEEP restarts need. Vectors are built here from the spec's
 * layout (little-endian 40-byte header, u16-length blocks). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "decode/uf_decode.h"

/* The outbound segment example of the IEX-TP specification: protocol id 0xFFFF (an example
 * protocol), channel 1, session 0x42870000, payload 7 bytes, 2 messages (0x69 and 0xBE 0xEF),
 * stream offset 0x21A68C, first sequence 0xC3CA, send time 0x146D869620C245EC. */
static const uint8_t SPEC_SEGMENT[] = {
    0x01, 0x00, 0xFF, 0xFF, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x87, 0x42, 0x07, 0x00, 0x02, 0x00,
    0x8c, 0xa6, 0x21, 0x00, 0x00, 0x00, 0x00, 0x00, 0xca, 0xc3, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0xec, 0x45, 0xc2, 0x20, 0x96, 0x86, 0x6d, 0x14, 0x01, 0x00, 0x69, 0x02, 0x00, 0xBE, 0xEF};

static void test_iextp_spec_example_segment_opens_with_every_field(void **s)
{
	struct uf_frame f;
	assert_int_equal(uf_iextp_open_proto(&f, SPEC_SEGMENT, sizeof(SPEC_SEGMENT), 0xFFFF),
	                 UF_FRAME_DATA);
	assert_int_equal(f.kind, UF_FRAME_DATA);
	assert_int_equal(f.count, 2);
	assert_int_equal(f.seq, 0xC3CA);
	assert_memory_equal(f.session, "1116143616", 10); /* 0x42870000 in decimal */
	assert_int_equal(uf_iextp_stream_offset(&f), 0x21A68C);
	assert_int_equal(uf_iextp_protocol(&f), 0xFFFF);
	struct uf_iextp_hdr h;
	assert_int_equal(uf_iextp_parse_header(&h, SPEC_SEGMENT, sizeof(SPEC_SEGMENT)), 0);
	assert_int_equal(h.version, 1);
	assert_int_equal(h.reserved, 0);
	assert_int_equal(h.protocol_id, 0xFFFF);
	assert_int_equal(h.channel_id, 1);
	assert_int_equal(h.session_id, 0x42870000u);
	assert_int_equal(h.payload_len, 7);
	assert_int_equal(h.count, 2);
	assert_int_equal(h.stream_offset, 0x21A68C);
	assert_int_equal(h.first_seq, 0xC3CA);
	assert_int_equal(h.send_time, 0x146D869620C245ECll);
	struct uf_frame_iter it;
	struct uf_frame_msg m = {0};
	uf_iextp_iter_init(&it, &f);
	assert_int_equal(uf_iextp_next(&it, &m), 1);
	assert_int_equal(m.seq, 0xC3CA);
	assert_int_equal(m.len, 1);
	assert_int_equal(m.msg[0], 0x69);
	assert_int_equal(uf_iextp_next(&it, &m), 1);
	assert_int_equal(m.seq, 0xC3CB);
	assert_int_equal(m.len, 2);
	assert_int_equal(m.msg[0], 0xBE);
	assert_int_equal(m.msg[1], 0xEF);
	assert_int_equal(uf_iextp_next(&it, &m), 0);
	assert_int_equal(uf_frame_next_seq(&f), 0xC3CC);
	/* 0xFFFF is not DEEP or TOPS: the generic open refuses it. */
	assert_int_equal(uf_iextp_open(&f, SPEC_SEGMENT, sizeof(SPEC_SEGMENT)), -EBADMSG);
	assert_int_equal(f.err, UF_MOLD_ERR_WRONG_PROTOCOL_ID);
}

/* A DEEP segment with `n` one-byte-tagged messages of `mlen` bytes from `seq`. */
static size_t segment(uint8_t *out, size_t cap, uint16_t proto, int64_t seq, int n, size_t mlen)
{
	struct uf_iextp_hdr h = {.version = 1,
	                         .protocol_id = proto,
	                         .channel_id = 1,
	                         .session_id = 1132527616,
	                         .stream_offset = 0,
	                         .first_seq = seq,
	                         .send_time = 1493132598742110851ll};
	struct uf_iextp_builder b;
	assert_int_equal(uf_iextp_builder_init(&b, out, cap, &h), 0);
	for (int i = 0; i < n; i++) {
		uint8_t m[64];
		memset(m, 0, sizeof(m));
		m[0] = (uint8_t)('a' + i);
		assert_int_equal(uf_iextp_builder_add(&b, m, mlen), 0);
	}
	return b.len;
}

static void test_iextp_heartbeat_says_next_sequence(void **s)
{
	uint8_t p[64];
	size_t len = segment(p, sizeof(p), UF_IEXTP_PROTO_DEEP, 28141, 0, 0);
	assert_int_equal(len, UF_IEXTP_HDR_LEN);
	struct uf_frame f;
	struct uf_decode_counters c;
	memset(&c, 0, sizeof(c));
	assert_int_equal(uf_iextp_open_counted(&f, p, len, UF_IEXTP_PROTO_DEEP, &c),
	                 UF_FRAME_HEARTBEAT);
	assert_int_equal(f.seq, 28141);
	assert_int_equal(f.count, 0);
	assert_int_equal(uf_frame_next_seq(&f), 28141);
	assert_int_equal(c.heartbeats, 1);
	assert_int_equal(c.packets, 1);
	assert_int_equal(c.iex_packets, 1);
	struct uf_frame_iter it;
	struct uf_frame_msg m = {0};
	uf_iextp_iter_init(&it, &f);
	assert_int_equal(uf_iextp_next(&it, &m), 0);
}

/* Opens p with `want`, expects a refusal of kind `err`, counted once under its name. */
static void expect_refused(const uint8_t *p, size_t len, uint16_t want, int err, const char *name)
{
	struct uf_frame f;
	struct uf_decode_counters c;
	memset(&c, 0, sizeof(c));
	assert_int_equal(uf_iextp_open_counted(&f, p, len, want, &c), -EBADMSG);
	if (f.err != err) {
		print_error("expected %s, got %s\n", name, uf_mold_err_name(f.err));
		fail();
	}
	assert_int_equal(f.kind, 0);
	assert_int_equal(c.mold_err[err], 1);
	assert_int_equal(uf_decode_counters_errors(&c), 1);
	assert_string_equal(uf_mold_err_name(err), name);
	/* A refused segment yields no message, even to an iterator. */
	struct uf_frame_iter it;
	struct uf_frame_msg m = {0};
	uf_iextp_iter_init(&it, &f);
	assert_int_equal(uf_iextp_next(&it, &m), 0);
}

static void test_iextp_every_lie_is_refused_and_counted_by_kind(void **s)
{
	uint8_t p[256], q[256];
	size_t len = segment(p, sizeof(p), UF_IEXTP_PROTO_DEEP, 100, 3, 30);
	assert_int_equal(len, 40 + 3 * 32);
	struct uf_frame f;
	assert_int_equal(uf_iextp_open_proto(&f, p, len, UF_IEXTP_PROTO_DEEP), UF_FRAME_DATA);

	memcpy(q, p, len);
	q[0] = 2;
	expect_refused(q, len, UF_IEXTP_PROTO_DEEP, UF_MOLD_ERR_BAD_VERSION, "bad_version");
	/* A DEEP segment on a TOPS feed, and an unknown protocol anywhere. */
	expect_refused(p, len, UF_IEXTP_PROTO_TOPS, UF_MOLD_ERR_WRONG_PROTOCOL_ID,
	               "wrong_protocol_id");
	memcpy(q, p, len);
	uf_put_le16(q + 2, 0x8005);
	expect_refused(q, len, 0, UF_MOLD_ERR_WRONG_PROTOCOL_ID, "wrong_protocol_id");
	/* Payload length past the datagram (the datagram was cut or the header lies). */
	expect_refused(p, len - 1, UF_IEXTP_PROTO_DEEP, UF_MOLD_ERR_PAYLOAD_PAST_DATAGRAM,
	               "payload_length_past_datagram");
	/* Bytes after the payload. */
	memcpy(q, p, len);
	q[len] = 0;
	expect_refused(q, len + 1, UF_IEXTP_PROTO_DEEP, UF_MOLD_ERR_TRAILING_BYTES,
	               "trailing_bytes");
	/* The count lies: more blocks said than there are, and fewer. */
	memcpy(q, p, len);
	uf_put_le16(q + 14, 4);
	expect_refused(q, len, UF_IEXTP_PROTO_DEEP, UF_MOLD_ERR_COUNT_MISMATCH, "count_mismatch");
	uf_put_le16(q + 14, 2);
	expect_refused(q, len, UF_IEXTP_PROTO_DEEP, UF_MOLD_ERR_TRAILING_BYTES, "trailing_bytes");
	/* A block runs past the payload; a block length split by the payload's end. */
	memcpy(q, p, len);
	uf_put_le16(q + 40 + 64, 31);
	expect_refused(q, len, UF_IEXTP_PROTO_DEEP, UF_MOLD_ERR_BLOCK_OVERRUNS_PACKET,
	               "block_overruns_packet");
	memcpy(q, p, len);
	uf_put_le16(q + 40 + 32, 31); /* second block one longer: the third length is split */
	uf_put_le16(q + 12, (uint16_t)(len - 40 - 30)); /* payload ends 1 byte into it */
	expect_refused(q, len - 30, UF_IEXTP_PROTO_DEEP, UF_MOLD_ERR_BLOCK_LENGTH_TRUNCATED,
	               "block_length_truncated");
	/* Sequences below 1, and a last sequence past INT64_MAX. */
	memcpy(q, p, len);
	uf_put_le64(q + 24, 0);
	expect_refused(q, len, UF_IEXTP_PROTO_DEEP, UF_MOLD_ERR_BAD_SEQUENCE, "bad_sequence");
	uf_put_le64(q + 24, (uint64_t)-5);
	expect_refused(q, len, UF_IEXTP_PROTO_DEEP, UF_MOLD_ERR_BAD_SEQUENCE, "bad_sequence");
	uf_put_le64(q + 24, (uint64_t)INT64_MAX - 1);
	expect_refused(q, len, UF_IEXTP_PROTO_DEEP, UF_MOLD_ERR_BAD_SEQUENCE, "bad_sequence");
	/* A heartbeat carrying a payload. */
	size_t hl = segment(q, sizeof(q), UF_IEXTP_PROTO_TOPS, 5, 0, 0);
	q[hl] = 0x51;
	uf_put_le16(q + 12, 1);
	expect_refused(q, hl + 1, UF_IEXTP_PROTO_TOPS, UF_MOLD_ERR_TRAILING_BYTES,
	               "trailing_bytes");
	expect_refused(p, 39, UF_IEXTP_PROTO_DEEP, UF_MOLD_ERR_TRUNCATED_HEADER,
	               "truncated_header");
}

/* Every prefix of a valid segment is refused, each read inside the copy (ASan checks). */
static void test_iextp_truncation_at_every_byte_is_refused(void **s)
{
	uint8_t p[256];
	size_t len = segment(p, sizeof(p), UF_IEXTP_PROTO_TOPS, 7, 2, 42);
	for (size_t cut = 0; cut < len; cut++) {
		uint8_t *q = malloc(cut ? cut : 1);
		memcpy(q, p, cut);
		struct uf_frame f;
		assert_int_equal(uf_iextp_open(&f, q, cut), -EBADMSG);
		int want =
		    cut < 40 ? UF_MOLD_ERR_TRUNCATED_HEADER : UF_MOLD_ERR_PAYLOAD_PAST_DATAGRAM;
		assert_int_equal(f.err, want);
		/* With the payload length fixed to the cut, the blocks are what lies. */
		if (cut >= 40) {
			uf_put_le16(q + 12, (uint16_t)(cut - 40));
			assert_int_equal(uf_iextp_open(&f, q, cut), -EBADMSG);
			size_t in = cut - 40; /* payload bytes kept: blocks are 44 bytes */
			int w = in % 44 == 0   ? UF_MOLD_ERR_COUNT_MISMATCH
			        : in % 44 == 1 ? UF_MOLD_ERR_BLOCK_LENGTH_TRUNCATED
			                       : UF_MOLD_ERR_BLOCK_OVERRUNS_PACKET;
			assert_int_equal(f.err, w);
		}
		free(q);
	}
}

static void test_iextp_session_renders_in_decimal_space_padded(void **s)
{
	char out[10];
	uf_iextp_session_render(out, 0);
	assert_memory_equal(out, "0         ", 10);
	uf_iextp_session_render(out, 4294967295u);
	assert_memory_equal(out, "4294967295", 10);
	uf_iextp_session_render(out, 1137508352);
	assert_memory_equal(out, "1137508352", 10);
	uf_iextp_session_render(out, 42);
	assert_memory_equal(out, "42        ", 10);
}

static void test_iextp_builder_limits_and_header_roundtrip(void **s)
{
	uint8_t p[100];
	struct uf_iextp_hdr h = {.version = 1,
	                         .protocol_id = UF_IEXTP_PROTO_TOPS,
	                         .channel_id = 7,
	                         .session_id = 9,
	                         .payload_len = 999, /* ignored by init */
	                         .count = 999,
	                         .stream_offset = 1234,
	                         .first_seq = 55,
	                         .send_time = -1};
	struct uf_iextp_builder b;
	assert_int_equal(uf_iextp_builder_init(&b, p, 39, &h), -EINVAL);
	assert_int_equal(uf_iextp_builder_init(&b, p, sizeof(p), &h), 0);
	uint8_t m[60] = {'Q'};
	assert_int_equal(uf_iextp_builder_add(&b, m, 42), 0);
	assert_int_equal(uf_iextp_builder_add(&b, m, 42), -ENOSPC); /* 40 + 44 + 44 > 100 */
	assert_int_equal(uf_iextp_builder_add(&b, m, 0x10000), -EMSGSIZE);
	assert_int_equal(uf_iextp_builder_add(&b, m, 14), 0); /* exactly fills 100 */
	assert_int_equal(b.len, 100);
	struct uf_iextp_hdr g;
	assert_int_equal(uf_iextp_parse_header(&g, p, b.len), 0);
	assert_int_equal(g.payload_len, 60);
	assert_int_equal(g.count, 2);
	assert_int_equal(g.channel_id, 7);
	assert_int_equal(g.stream_offset, 1234);
	assert_int_equal(g.send_time, -1);
	struct uf_frame f;
	assert_int_equal(uf_iextp_open_proto(&f, p, b.len, UF_IEXTP_PROTO_TOPS), UF_FRAME_DATA);
	assert_memory_equal(f.session, "9         ", 10);
	/* write_header writes what it is given, lies included. */
	uint8_t hb[40];
	h.payload_len = 3;
	h.count = 0;
	uf_iextp_write_header(hb, &h);
	assert_int_equal(uf_iextp_open(&f, hb, 40), -EBADMSG);
	assert_int_equal(f.err, UF_MOLD_ERR_PAYLOAD_PAST_DATAGRAM);
}

static void test_iextp_framings_keep_their_protocol(void **s)
{
	uint8_t deep[128], tops[128];
	size_t dl = segment(deep, sizeof(deep), UF_IEXTP_PROTO_DEEP, 1, 2, 30);
	size_t tl = segment(tops, sizeof(tops), UF_IEXTP_PROTO_TOPS, 1, 1, 42);
	struct uf_frame f;
	assert_int_equal(uf_iextp_framing.open(&f, deep, dl), UF_FRAME_DATA);
	assert_int_equal(uf_iextp_framing.open(&f, tops, tl), UF_FRAME_DATA);
	assert_int_equal(uf_iextp_deep_framing.open(&f, deep, dl), UF_FRAME_DATA);
	assert_int_equal(uf_iextp_deep_framing.open(&f, tops, tl), -EBADMSG);
	assert_int_equal(f.err, UF_MOLD_ERR_WRONG_PROTOCOL_ID);
	assert_int_equal(uf_iextp_tops_framing.open(&f, deep, dl), -EBADMSG);
	assert_int_equal(uf_iextp_tops_framing.open(&f, tops, tl), UF_FRAME_DATA);
	/* The framing's iterator walks what open accepted. */
	assert_int_equal(uf_iextp_deep_framing.open(&f, deep, dl), UF_FRAME_DATA);
	struct uf_frame_iter it;
	struct uf_frame_msg m = {0};
	int n = 0;
	uf_iextp_deep_framing.iter_init(&it, &f);
	while (uf_iextp_deep_framing.iter_next(&it, &m)) {
		assert_int_equal(m.seq, 1 + n);
		assert_int_equal(m.len, 30);
		assert_int_equal(m.msg[0], 'a' + n);
		n++;
	}
	assert_int_equal(n, 2);
	/* No re-request service behind these framings (docs/decode.md, IEX-TP). */
	assert_null(uf_iextp_framing.request_build);
	assert_null(uf_iextp_deep_framing.request_parse);
	assert_string_equal(uf_iextp_deep_framing.name, "iex-tp-deep");
	assert_true(uf_iextp_deep_framing.max_count >= 1);
}

static void test_iextp_stream_start_is_sequence_1_at_offset_0(void **s)
{
	uint8_t p[128];
	size_t len = segment(p, sizeof(p), UF_IEXTP_PROTO_DEEP, 1, 0, 0);
	struct uf_frame f;
	assert_int_equal(uf_iextp_open(&f, p, len), UF_FRAME_HEARTBEAT);
	assert_true(uf_iextp_is_stream_start(&f));
	uf_put_le64(p + 16, 684607); /* same sequence further in the stream: not a start */
	assert_int_equal(uf_iextp_open(&f, p, len), UF_FRAME_HEARTBEAT);
	assert_false(uf_iextp_is_stream_start(&f));
	len = segment(p, sizeof(p), UF_IEXTP_PROTO_DEEP, 2, 1, 30);
	assert_int_equal(uf_iextp_open(&f, p, len), UF_FRAME_DATA);
	assert_false(uf_iextp_is_stream_start(&f));
	len = segment(p, sizeof(p), UF_IEXTP_PROTO_DEEP, 1, 1, 30);
	assert_int_equal(uf_iextp_open(&f, p, len), UF_FRAME_DATA);
	assert_true(uf_iextp_is_stream_start(&f));
	f.kind = 0; /* a refused frame is never a start */
	assert_false(uf_iextp_is_stream_start(&f));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_iextp_spec_example_segment_opens_with_every_field),
	    cmocka_unit_test(test_iextp_heartbeat_says_next_sequence),
	    cmocka_unit_test(test_iextp_every_lie_is_refused_and_counted_by_kind),
	    cmocka_unit_test(test_iextp_truncation_at_every_byte_is_refused),
	    cmocka_unit_test(test_iextp_session_renders_in_decimal_space_padded),
	    cmocka_unit_test(test_iextp_builder_limits_and_header_roundtrip),
	    cmocka_unit_test(test_iextp_framings_keep_their_protocol),
	    cmocka_unit_test(test_iextp_stream_start_is_sequence_1_at_offset_0),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
