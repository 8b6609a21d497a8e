/* SoupBinTCP 3.00 and GLIMPSE 5.0 codec: hand-built packets from the spec layouts, every
 * malformed form (truncation at every byte, lying lengths, bad numbers and text), and the
 * incremental stream parser over every split of a byte stream. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "decode/uf_decode.h"

/* Spec vectors, written out byte by byte: length (big-endian, type + payload), type,
 * payload. Alpha fields left-justified with spaces, numeric right-justified with spaces. Each
 * string piece of L and A is one field (6, 10, 10, 20; 10, 20), and the exact array sizes make
 * the compiler refuse a vector one byte too long. */
static const uint8_t v_login_req[49] = "\x00\x2F"
                                       "L"
                                       "TRADER"
                                       "SECRET    "
                                       "          "
                                       "                   1";
static const uint8_t v_login_acc[33] = "\x00\x1F"
                                       "A"
                                       "SESSION001"
                                       "                1234";
static const uint8_t v_login_rej_a[] = {0x00, 0x02, 'J', 'A'};
static const uint8_t v_login_rej_s[] = {0x00, 0x02, 'J', 'S'};
static const uint8_t v_seq[] = {0x00, 0x05, 'S', 'S', 0x00, 0x01, 0xFF};
static const uint8_t v_srv_hb[] = {0x00, 0x01, 'H'};
static const uint8_t v_eos[] = {0x00, 0x01, 'Z'};
static const uint8_t v_debug[] = {0x00, 0x03, '+', 'h', 'i'};
static const uint8_t v_unseq[] = {0x00, 0x03, 'U', 0x00, 0x7F};
static const uint8_t v_cli_hb[] = {0x00, 0x01, 'R'};
static const uint8_t v_logout[] = {0x00, 0x01, 'O'};

struct vec {
	const uint8_t *b;
	size_t n;
	enum uf_soup_dir dir;
};

static const struct vec vecs[] = {
    {v_login_req, sizeof(v_login_req), UF_SOUP_FROM_CLIENT},
    {v_login_acc, sizeof(v_login_acc), UF_SOUP_FROM_SERVER},
    {v_login_rej_a, sizeof(v_login_rej_a), UF_SOUP_FROM_SERVER},
    {v_login_rej_s, sizeof(v_login_rej_s), UF_SOUP_FROM_SERVER},
    {v_seq, sizeof(v_seq), UF_SOUP_FROM_SERVER},
    {v_srv_hb, sizeof(v_srv_hb), UF_SOUP_FROM_SERVER},
    {v_eos, sizeof(v_eos), UF_SOUP_FROM_SERVER},
    {v_debug, sizeof(v_debug), UF_SOUP_FROM_SERVER},
    {v_debug, sizeof(v_debug), UF_SOUP_FROM_CLIENT},
    {v_unseq, sizeof(v_unseq), UF_SOUP_FROM_CLIENT},
    {v_cli_hb, sizeof(v_cli_hb), UF_SOUP_FROM_CLIENT},
    {v_logout, sizeof(v_logout), UF_SOUP_FROM_CLIENT},
};
#define NVECS (sizeof(vecs) / sizeof(vecs[0]))

static int parse(const uint8_t *b, size_t n, enum uf_soup_dir dir, struct uf_soup_packet *pk)
{
	return uf_soup_parse(b, n, dir, UF_SOUP_MAX_PACKET, pk);
}

static void test_soup_spec_vectors_parse(void **state)
{
	(void)state;
	struct uf_soup_packet pk;

	assert_int_equal(parse(v_login_req, sizeof(v_login_req), UF_SOUP_FROM_CLIENT, &pk), 49);
	assert_int_equal(pk.type, 'L');
	assert_int_equal(pk.payload_len, 46);
	assert_memory_equal(pk.u.login.username, "TRADER", 6);
	assert_memory_equal(pk.u.login.password, "SECRET    ", 10);
	assert_memory_equal(pk.u.login.session, "          ", 10);
	assert_int_equal(pk.u.login.seq, 1);

	assert_int_equal(parse(v_login_acc, sizeof(v_login_acc), UF_SOUP_FROM_SERVER, &pk), 33);
	assert_int_equal(pk.type, 'A');
	assert_memory_equal(pk.u.accepted.session, "SESSION001", 10);
	assert_int_equal(pk.u.accepted.seq, 1234);

	assert_int_equal(parse(v_login_rej_a, 4, UF_SOUP_FROM_SERVER, &pk), 4);
	assert_int_equal(pk.u.rejected.reason, 'A');
	assert_int_equal(parse(v_login_rej_s, 4, UF_SOUP_FROM_SERVER, &pk), 4);
	assert_int_equal(pk.u.rejected.reason, 'S');

	assert_int_equal(parse(v_seq, sizeof(v_seq), UF_SOUP_FROM_SERVER, &pk), 7);
	assert_int_equal(pk.type, 'S');
	assert_int_equal(pk.payload_len, 4);
	assert_ptr_equal(pk.payload, v_seq + 3); /* zero copy */

	assert_int_equal(parse(v_unseq, sizeof(v_unseq), UF_SOUP_FROM_CLIENT, &pk), 5);
	assert_int_equal(pk.type, 'U');
	assert_int_equal(pk.payload_len, 2);
	assert_int_equal(parse(v_debug, sizeof(v_debug), UF_SOUP_FROM_CLIENT, &pk), 5);
	assert_memory_equal(pk.payload, "hi", 2);
	const uint8_t *empty[] = {v_srv_hb, v_eos, v_cli_hb, v_logout};
	const enum uf_soup_dir edir[] = {UF_SOUP_FROM_SERVER, UF_SOUP_FROM_SERVER,
	                                 UF_SOUP_FROM_CLIENT, UF_SOUP_FROM_CLIENT};
	for (int i = 0; i < 4; i++) {
		assert_int_equal(parse(empty[i], 3, edir[i], &pk), 3);
		assert_int_equal(pk.type, empty[i][2]);
		assert_int_equal(pk.payload_len, 0);
	}
}

static void test_soup_builders_reproduce_spec_vectors(void **state)
{
	(void)state;
	uint8_t out[64];

	assert_int_equal(uf_soup_build_login_request(out, "TRADER", "SECRET", "", 1), 49);
	assert_memory_equal(out, v_login_req, 49);
	assert_int_equal(uf_soup_build_login_accepted(out, "SESSION001", 1234), 33);
	assert_memory_equal(out, v_login_acc, 33);
	assert_int_equal(uf_soup_build_login_rejected(out, 'A'), 4);
	assert_memory_equal(out, v_login_rej_a, 4);
	assert_int_equal(uf_soup_build_login_rejected(out, 'S'), 4);
	assert_memory_equal(out, v_login_rej_s, 4);
	assert_int_equal(uf_soup_build(out, sizeof(out), 'S', v_seq + 3, 4), 7);
	assert_memory_equal(out, v_seq, 7);
	assert_int_equal(uf_soup_build(out, sizeof(out), 'U', v_unseq + 3, 2), 5);
	assert_memory_equal(out, v_unseq, 5);
	assert_int_equal(uf_soup_build(out, sizeof(out), '+', "hi", 2), 5);
	assert_memory_equal(out, v_debug, 5);
	const uint8_t *empty[] = {v_srv_hb, v_eos, v_cli_hb, v_logout};
	for (int i = 0; i < 4; i++) {
		assert_int_equal(uf_soup_build(out, sizeof(out), empty[i][2], NULL, 0), 3);
		assert_memory_equal(out, empty[i], 3);
	}
	/* Refusals: a field that does not fit, a bad reject code, no room, 16-bit overflow. */
	assert_int_equal(uf_soup_build_login_request(out, "TOOLONGU", "p", "", 1), -EINVAL);
	assert_int_equal(uf_soup_build_login_request(out, "u", "pass\x01", "", 1), -EINVAL);
	assert_int_equal(uf_soup_build_login_request(out, "u", "p", "ELEVENCHARS", 1), -EINVAL);
	assert_int_equal(uf_soup_build_login_accepted(out, "a b", 1), -EINVAL);
	assert_int_equal(uf_soup_build_login_rejected(out, 'X'), -EINVAL);
	assert_int_equal(uf_soup_build(out, 5, 'S', "abc", 3), -ENOSPC);
	assert_int_equal(uf_soup_build_header(out, 'S', 65535), -EINVAL);
	assert_int_equal(uf_soup_build_header(out, 'S', 65534), 3);
	assert_int_equal(out[0], 0xFF);
	assert_int_equal(out[1], 0xFF);
	/* The largest sequence number fits the 20-byte field exactly. */
	assert_int_equal(uf_soup_build_login_accepted(out, "S", UINT64_MAX), 33);
	struct uf_soup_packet pk;
	assert_int_equal(parse(out, 33, UF_SOUP_FROM_SERVER, &pk), 33);
	assert_true(pk.u.accepted.seq == UINT64_MAX);
	assert_memory_equal(out + 13, "18446744073709551615", 20);
}

/* Every prefix of every vector is "need more" (0), never an error or a packet. */
static void test_soup_truncation_at_every_byte(void **state)
{
	(void)state;
	struct uf_soup_packet pk;

	for (size_t v = 0; v < NVECS; v++) {
		for (size_t k = 0; k < vecs[v].n; k++)
			assert_int_equal(parse(vecs[v].b, k, vecs[v].dir, &pk), 0);
		assert_int_equal(parse(vecs[v].b, vecs[v].n, vecs[v].dir, &pk), (int)vecs[v].n);
		/* A stream cut at every byte: the end of the connection is a counted truncation. */
		for (size_t k = 1; k < vecs[v].n; k++) {
			uint8_t buf[128];
			struct uf_soup_stream s;
			size_t room;
			assert_int_equal(
			    uf_soup_stream_init(&s, buf, sizeof(buf), vecs[v].dir, sizeof(buf)), 0);
			memcpy(uf_soup_stream_space(&s, &room), vecs[v].b, k);
			uf_soup_stream_commit(&s, k);
			assert_int_equal(uf_soup_stream_next(&s, &pk), 0);
			assert_int_equal(uf_soup_stream_end(&s), -EBADMSG);
			assert_int_equal(s.c.errors[UF_SOUP_ERR_TRUNCATED], 1);
			assert_int_equal(s.last_err, UF_SOUP_ERR_TRUNCATED);
		}
	}
}

static void expect_err(const uint8_t *b, size_t n, enum uf_soup_dir dir, size_t max,
                       enum uf_soup_err e)
{
	struct uf_soup_packet pk;
	memset(&pk, 0, sizeof(pk));
	assert_int_equal(uf_soup_parse(b, n, dir, max, &pk), -EBADMSG);
	if (pk.err != e)
		fail_msg("expected %s, got %s", uf_soup_err_name(e), uf_soup_err_name(pk.err));
}

static void test_soup_bad_lengths_and_types(void **state)
{
	(void)state;
	uint8_t b[128];

	/* Length 0: no type byte. Refused from the 2 bytes alone. */
	expect_err((const uint8_t[]){0x00, 0x00}, 2, UF_SOUP_FROM_SERVER, 64,
	           UF_SOUP_ERR_ZERO_LENGTH);
	/* Longer than the receiver allows: refused before any payload arrives. */
	expect_err((const uint8_t[]){0x00, 0x40}, 2, UF_SOUP_FROM_SERVER, 64, UF_SOUP_ERR_TOO_LONG);
	expect_err((const uint8_t[]){0xFF, 0xFF}, 2, UF_SOUP_FROM_SERVER, 1024,
	           UF_SOUP_ERR_TOO_LONG);
	struct uf_soup_packet pk;
	assert_int_equal(
	    uf_soup_parse((const uint8_t[]){0x00, 0x3E}, 2, UF_SOUP_FROM_SERVER, 64, &pk),
	    0); /* 64 bytes on the wire: allowed, waits for the rest */
	/* Unknown types and types of the other direction. */
	expect_err((const uint8_t[]){0x00, 0x01, 'Q'}, 3, UF_SOUP_FROM_SERVER, 64,
	           UF_SOUP_ERR_UNKNOWN_TYPE);
	expect_err((const uint8_t[]){0x00, 0x01, 0x00}, 3, UF_SOUP_FROM_CLIENT, 64,
	           UF_SOUP_ERR_UNKNOWN_TYPE);
	const char *srv = "AJSHZ", *cli = "LURO";
	for (const char *t = srv; *t; t++)
		expect_err((const uint8_t[]){0x00, 0x01, (uint8_t)*t}, 3, UF_SOUP_FROM_CLIENT, 64,
		           UF_SOUP_ERR_WRONG_DIRECTION);
	for (const char *t = cli; *t; t++)
		expect_err((const uint8_t[]){0x00, 0x01, (uint8_t)*t}, 3, UF_SOUP_FROM_SERVER, 64,
		           UF_SOUP_ERR_WRONG_DIRECTION);
	/* Fixed-size types one byte short and one byte long: refused from the header alone. */
	const struct {
		uint8_t type;
		int len;
		enum uf_soup_dir dir;
	} fixed[] = {{'A', 30, UF_SOUP_FROM_SERVER}, {'J', 1, UF_SOUP_FROM_SERVER},
	             {'H', 0, UF_SOUP_FROM_SERVER},  {'Z', 0, UF_SOUP_FROM_SERVER},
	             {'L', 46, UF_SOUP_FROM_CLIENT}, {'R', 0, UF_SOUP_FROM_CLIENT},
	             {'O', 0, UF_SOUP_FROM_CLIENT}};
	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++) {
		for (int d = -1; d <= 1; d += 2) {
			int pl = fixed[i].len + d;
			if (pl < 0)
				continue;
			memset(b, ' ', sizeof(b));
			uf_put_be16(b, (uint16_t)(pl + 1));
			b[2] = fixed[i].type;
			expect_err(b, 3, fixed[i].dir, 128, UF_SOUP_ERR_BAD_LENGTH);
			expect_err(b, (size_t)pl + 3, fixed[i].dir, 128, UF_SOUP_ERR_BAD_LENGTH);
		}
	}
	/* Login rejected with a code the spec does not define. */
	expect_err((const uint8_t[]){0x00, 0x02, 'J', 'X'}, 4, UF_SOUP_FROM_SERVER, 64,
	           UF_SOUP_ERR_BAD_REJECT_CODE);
}

/* The sequence number field of A (offset 13) and L (offset 29) with bad contents. */
static void test_soup_bad_ascii_numbers(void **state)
{
	(void)state;
	const char *bad[] = {
	    "                    ", /* blank */
	    "                 1 2", /* space inside */
	    "1 2                 ", /* left-justified with a space inside */
	    "                 12a", /* letter */
	    "                -123", /* sign */
	    "18446744073709551616", /* 2^64: overflows */
	    "99999999999999999999", /* overflows */
	    ("                 \x00"
	     "12"), /* NUL (split: a hex escape would swallow the 1) */
	};
	uint8_t b[64];
	uint64_t v;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memcpy(b, v_login_acc, sizeof(v_login_acc));
		memcpy(b + 13, bad[i], 20);
		expect_err(b, sizeof(v_login_acc), UF_SOUP_FROM_SERVER, 64, UF_SOUP_ERR_BAD_NUMBER);
		memcpy(b, v_login_req, sizeof(v_login_req));
		memcpy(b + 29, bad[i], 20);
		expect_err(b, sizeof(v_login_req), UF_SOUP_FROM_CLIENT, 64, UF_SOUP_ERR_BAD_NUMBER);
		assert_int_equal(uf_soup_parse_number((const uint8_t *)bad[i], 20, &v), -EINVAL);
		uint8_t g[21] = {'G'};
		memcpy(g + 1, bad[i], 20);
		assert_int_equal(uf_glimpse_end_of_snapshot(g, 21, &v), -EBADMSG);
	}
	/* Padded on the right or on both sides (issue 23 item 2): the same number, in Login
	 * Accepted, Login Request and End of Snapshot alike. */
	const char *padded[] = {"1001                ", "        1001        ",
	                        "00000000000000001001", "                1001"};
	for (size_t i = 0; i < sizeof(padded) / sizeof(padded[0]); i++) {
		struct uf_soup_packet pk;
		memcpy(b, v_login_acc, sizeof(v_login_acc));
		memcpy(b + 13, padded[i], 20);
		assert_int_equal(
		    uf_soup_parse(b, sizeof(v_login_acc), UF_SOUP_FROM_SERVER, 64, &pk),
		    (int)sizeof(v_login_acc));
		assert_true(pk.u.accepted.seq == 1001);
		memcpy(b, v_login_req, sizeof(v_login_req));
		memcpy(b + 29, padded[i], 20);
		assert_int_equal(
		    uf_soup_parse(b, sizeof(v_login_req), UF_SOUP_FROM_CLIENT, 64, &pk),
		    (int)sizeof(v_login_req));
		assert_true(pk.u.login.seq == 1001);
		uint8_t g[21] = {'G'};
		memcpy(g + 1, padded[i], 20);
		v = 0;
		assert_int_equal(uf_glimpse_end_of_snapshot(g, 21, &v), 1);
		assert_true(v == 1001);
	}
	/* Zero-padded and the largest value are numbers. */
	assert_int_equal(uf_soup_parse_number((const uint8_t *)"00000000000000000007", 20, &v), 0);
	assert_int_equal(v, 7);
	assert_int_equal(uf_soup_parse_number((const uint8_t *)"18446744073709551615", 20, &v), 0);
	assert_true(v == UINT64_MAX);
}

static void test_soup_bad_alpha_fields(void **state)
{
	(void)state;
	uint8_t b[64];
	/* username, password, session of L; session of A. */
	const size_t off_l[] = {3, 9, 19}, off_a = 3;

	for (size_t i = 0; i < 3; i++) {
		memcpy(b, v_login_req, sizeof(v_login_req));
		b[off_l[i]] = 0x01;
		expect_err(b, sizeof(v_login_req), UF_SOUP_FROM_CLIENT, 64, UF_SOUP_ERR_BAD_ALPHA);
		memcpy(b, v_login_req, sizeof(v_login_req));
		b[off_l[i]] = ' '; /* text after padding: not left-justified */
		b[off_l[i] + 1] = 'X';
		expect_err(b, sizeof(v_login_req), UF_SOUP_FROM_CLIENT, 64, UF_SOUP_ERR_BAD_ALPHA);
	}
	memcpy(b, v_login_acc, sizeof(v_login_acc));
	b[off_a + 9] = 0x80;
	expect_err(b, sizeof(v_login_acc), UF_SOUP_FROM_SERVER, 64, UF_SOUP_ERR_BAD_ALPHA);
}

/* All server vectors back to back, fed to a stream split at every pair of positions: the same
 * packets come out, payloads point into the stream's buffer, counters count them by type. */
static void test_soup_stream_every_split(void **state)
{
	(void)state;
	uint8_t all[256];
	size_t n = 0, expect = 0;
	uint8_t types[16];

	for (size_t v = 0; v < NVECS; v++)
		if (vecs[v].dir == UF_SOUP_FROM_SERVER) {
			memcpy(all + n, vecs[v].b, vecs[v].n);
			n += vecs[v].n;
			types[expect++] = vecs[v].b[2];
		}
	for (size_t cut1 = 0; cut1 <= n; cut1++) {
		for (size_t cut2 = cut1; cut2 <= n; cut2 += 3) {
			/* A buffer barely larger than the longest packet forces compaction. */
			uint8_t buf[40];
			struct uf_soup_stream s;
			struct uf_soup_packet pk;
			size_t got = 0, fed = 0, room;
			const size_t cuts[] = {cut1, cut2, n};
			assert_int_equal(
			    uf_soup_stream_init(&s, buf, sizeof(buf), UF_SOUP_FROM_SERVER, 40), 0);
			for (int c = 0; c < 3; c++) {
				while (fed < cuts[c]) {
					uint8_t *w = uf_soup_stream_space(&s, &room);
					assert_true(room > 0);
					size_t k = cuts[c] - fed < room ? cuts[c] - fed : room;
					memcpy(w, all + fed, k);
					uf_soup_stream_commit(&s, k);
					fed += k;
					int rc;
					while ((rc = uf_soup_stream_next(&s, &pk)) == 1) {
						assert_true(got < expect);
						assert_int_equal(pk.type, types[got]);
						assert_true(pk.payload >= buf &&
						            pk.payload + pk.payload_len <=
						                buf + sizeof(buf));
						got++;
					}
					assert_int_equal(rc, 0);
				}
			}
			assert_int_equal(got, expect);
			assert_int_equal(uf_soup_stream_end(&s), 0);
			assert_int_equal(s.c.packets[uf_soup_type_index('S')], 1);
			assert_int_equal(s.c.packets[uf_soup_type_index('J')], 2);
			assert_int_equal(s.c.bytes, n);
		}
	}
}

/* A refused packet fails the stream for good (framing is lost) until reset. */
static void test_soup_stream_fails_after_error(void **state)
{
	(void)state;
	uint8_t buf[64];
	struct uf_soup_stream s;
	struct uf_soup_packet pk;
	size_t room;
	const uint8_t bytes[] = {0x00, 0x01, 'H', 0x00, 0x02, 'J', 'Q', 0x00, 0x01, 'H'};

	assert_int_equal(uf_soup_stream_init(&s, buf, 8, UF_SOUP_FROM_SERVER, 64), -EINVAL);
	assert_int_equal(uf_soup_stream_init(&s, buf, sizeof(buf), UF_SOUP_FROM_SERVER, 64), 0);
	memcpy(uf_soup_stream_space(&s, &room), bytes, sizeof(bytes));
	uf_soup_stream_commit(&s, sizeof(bytes));
	assert_int_equal(uf_soup_stream_next(&s, &pk), 1);
	assert_int_equal(uf_soup_stream_next(&s, &pk), -EBADMSG);
	assert_int_equal(uf_soup_stream_next(&s, &pk), -EBADMSG); /* the good H after is lost */
	assert_int_equal(s.c.errors[UF_SOUP_ERR_BAD_REJECT_CODE], 1);
	uf_soup_stream_space(&s, &room);
	assert_int_equal(room, 0);
	uf_soup_stream_reset(&s);
	memcpy(uf_soup_stream_space(&s, &room), bytes, 3);
	uf_soup_stream_commit(&s, 3);
	assert_int_equal(uf_soup_stream_next(&s, &pk), 1);
	assert_int_equal(s.c.packets[uf_soup_type_index('H')], 2);
	for (unsigned e = 0; e < UF_SOUP_NERR; e++)
		assert_non_null(uf_soup_err_name(e));
	assert_null(uf_soup_err_name(UF_SOUP_NERR));
}

static void test_glimpse_end_of_snapshot(void **state)
{
	(void)state;
	const uint8_t g[] = {'G', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ',
	                     ' ', ' ', ' ', ' ', ' ', ' ', '5', '0', '0', '1'};
	uint8_t out[32];
	uint64_t seq = 0;
	struct uf_itch_msg m;

	assert_int_equal(uf_glimpse_end_of_snapshot(g, sizeof(g), &seq), 1);
	assert_int_equal(seq, 5001);
	assert_int_equal(uf_glimpse_build_end_of_snapshot(out, 5001), 21);
	assert_memory_equal(out, g, 21);
	assert_int_equal(uf_glimpse_end_of_snapshot(g, 20, &seq), -EBADMSG);
	assert_int_equal(uf_glimpse_end_of_snapshot(out, 22, &seq), -EBADMSG);
	assert_int_equal(uf_glimpse_end_of_snapshot((const uint8_t *)"A", 1, &seq), 0);
	assert_int_equal(uf_glimpse_end_of_snapshot(g, 0, &seq), 0);
	/* 'G' is GLIMPSE-only: the real-time ITCH decoder keeps calling it unknown. */
	assert_int_equal(uf_itch_decode(g, sizeof(g), &m), -ENOMSG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_soup_spec_vectors_parse),
	    cmocka_unit_test(test_soup_builders_reproduce_spec_vectors),
	    cmocka_unit_test(test_soup_truncation_at_every_byte),
	    cmocka_unit_test(test_soup_bad_lengths_and_types),
	    cmocka_unit_test(test_soup_bad_ascii_numbers),
	    cmocka_unit_test(test_soup_bad_alpha_fields),
	    cmocka_unit_test(test_soup_stream_every_split),
	    cmocka_unit_test(test_soup_stream_fails_after_error),
	    cmocka_unit_test(test_glimpse_end_of_snapshot),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
