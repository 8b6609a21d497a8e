/* MoldUDP64: header, blocks, heartbeat, end of session, re-requests, the packet builder,
 * every truncation of a valid packet, lying lengths and counts, and the batch decoder
 * (same messages with prefetch at any distance). Packets under test live in heap buffers
 * of exactly their length so ASan catches any read past the datagram. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "decode/uf_decode.h"

static const char SESSION[10] = {'0', '0', '0', '0', '1', '0', '0', '5', '9', 'B'};

/* A 'D' (19 bytes) and an 'X' (23 bytes) with recognisable references. */
static void make_d(uint8_t *m, uint64_t ref)
{
	memset(m, 0, 19);
	m[0] = 'D';
	uf_put_be64(m + 11, ref);
}

static void make_x(uint8_t *m, uint64_t ref, uint32_t sh)
{
	memset(m, 0, 23);
	m[0] = 'X';
	uf_put_be64(m + 11, ref);
	uf_put_be32(m + 19, sh);
}

/* By hand: header + D + X, seq 14764496. Returns a malloc'd exact-size copy. */
static uint8_t *hand_packet(size_t *len)
{
	uint8_t buf[128];
	size_t o = 0;
	memcpy(buf, SESSION, 10);
	uf_put_be64(buf + 10, 14764496);
	uf_put_be16(buf + 18, 2);
	o = 20;
	uf_put_be16(buf + o, 19);
	make_d(buf + o + 2, 111);
	o += 21;
	uf_put_be16(buf + o, 23);
	make_x(buf + o + 2, 222, 50);
	o += 25;
	uint8_t *p = malloc(o);
	memcpy(p, buf, o);
	*len = o;
	return p;
}

static void test_mold_data_packet_yields_blocks_with_sequences(void **s)
{
	size_t len;
	uint8_t *p = hand_packet(&len);
	struct uf_frame pkt;
	assert_int_equal(uf_mold_open(&pkt, p, len), UF_MOLD_DATA);
	assert_memory_equal(pkt.session, SESSION, 10);
	assert_int_equal(pkt.seq, 14764496);
	assert_int_equal(pkt.count, 2);
	assert_int_equal(uf_mold_next_seq(&pkt), 14764498);
	struct uf_frame_iter it;
	struct uf_frame_msg b = {0};
	uf_mold_iter_init(&it, &pkt);
	assert_int_equal(uf_mold_next(&it, &b), 1);
	assert_int_equal(b.seq, 14764496);
	assert_int_equal(b.len, 19);
	assert_int_equal(b.msg[0], 'D');
	assert_int_equal(uf_mold_next(&it, &b), 1);
	assert_int_equal(b.seq, 14764497);
	assert_int_equal(b.len, 23);
	struct uf_itch_msg m;
	assert_int_equal(uf_itch_decode(b.msg, b.len, &m), 0);
	assert_int_equal(m.u.cancel.order_ref, 222);
	assert_int_equal(m.u.cancel.shares, 50);
	assert_int_equal(uf_mold_next(&it, &b), 0);
	free(p);
}

static void test_mold_heartbeat_and_end_of_session(void **s)
{
	uint8_t *hb = malloc(20), *eos = malloc(20);
	uf_mold_build_heartbeat(hb, SESSION, 500);
	uf_mold_build_end_of_session(eos, SESSION, 501);
	struct uf_frame pkt;
	struct uf_decode_counters c;
	memset(&c, 0, sizeof(c));
	assert_int_equal(uf_mold_open_counted(&pkt, hb, 20, &c), UF_MOLD_HEARTBEAT);
	assert_int_equal(pkt.seq, 500);
	assert_int_equal(uf_mold_next_seq(&pkt), 500);
	struct uf_frame_iter it;
	struct uf_frame_msg b = {0};
	uf_mold_iter_init(&it, &pkt);
	assert_int_equal(uf_mold_next(&it, &b), 0);
	assert_int_equal(uf_mold_open_counted(&pkt, eos, 20, &c), UF_MOLD_END_OF_SESSION);
	assert_int_equal(pkt.count, 0xFFFF);
	assert_int_equal(pkt.seq, 501);
	assert_int_equal(c.packets, 2);
	assert_int_equal(c.heartbeats, 1);
	assert_int_equal(c.end_of_session, 1);
	assert_int_equal(uf_decode_counters_errors(&c), 0);
	free(hb);
	free(eos);
	/* A heartbeat with a byte after it is not a heartbeat. */
	uint8_t *bad = malloc(21);
	uf_mold_build_heartbeat(bad, SESSION, 1);
	bad[20] = 0;
	assert_int_equal(uf_mold_open(&pkt, bad, 21), -EBADMSG);
	assert_int_equal(pkt.err, UF_MOLD_ERR_TRAILING_BYTES);
	uf_mold_build_end_of_session(bad, SESSION, 1);
	assert_int_equal(uf_mold_open(&pkt, bad, 21), -EBADMSG);
	assert_int_equal(pkt.err, UF_MOLD_ERR_BAD_END_OF_SESSION);
	free(bad);
}

static void test_mold_rerequest_round_trip_and_rejects(void **s)
{
	uint8_t *req = malloc(UF_MOLD_REREQUEST_LEN);
	uf_mold_rerequest_build(req, SESSION, 123456789012ull, 300);
	struct uf_frame r;
	assert_int_equal(uf_mold_rerequest_parse(&r, req, 20), 0);
	assert_memory_equal(r.session, SESSION, 10);
	assert_int_equal(r.seq, 123456789012ull);
	assert_int_equal(r.count, 300);
	assert_int_equal(uf_mold_rerequest_parse(&r, req, 19), -EBADMSG);
	free(req);
	uint8_t big[21] = {0};
	uf_mold_rerequest_build(big, SESSION, 1, 1);
	assert_int_equal(uf_mold_rerequest_parse(&r, big, 21), -EBADMSG);
	uf_mold_rerequest_build(big, SESSION, 1, 0);
	assert_int_equal(uf_mold_rerequest_parse(&r, big, 20), -EBADMSG);
	uf_mold_rerequest_build(big, SESSION, 1, 0xFFFF);
	assert_int_equal(uf_mold_rerequest_parse(&r, big, 20), -EBADMSG);
}

static void test_mold_builder_matches_hand_packet_and_respects_capacity(void **s)
{
	size_t len;
	uint8_t *hand = hand_packet(&len);
	uint8_t buf[66], d[19], x[23];
	make_d(d, 111);
	make_x(x, 222, 50);
	struct uf_mold_builder b;
	assert_int_equal(uf_mold_builder_init(&b, buf, sizeof(buf), SESSION, 14764496), 0);
	assert_int_equal(uf_mold_builder_add(&b, d, 19), 0);
	assert_int_equal(uf_mold_builder_add(&b, x, 23), 0);
	assert_int_equal(b.len, len);
	assert_memory_equal(buf, hand, len);
	assert_int_equal(uf_mold_builder_add(&b, d, 1), -ENOSPC); /* buffer is full */
	assert_int_equal(b.count, 2);
	assert_int_equal(uf_mold_builder_init(&b, buf, 19, SESSION, 1), -EINVAL);
	free(hand);
}

/* Every proper prefix of a valid packet is refused with the kind that fits, never read
 * past (the copy is exactly `cut` bytes). */
static void test_mold_truncation_at_every_byte_is_refused(void **s)
{
	size_t len;
	uint8_t *full = hand_packet(&len);
	for (size_t cut = 0; cut < len; cut++) {
		uint8_t *p = malloc(cut ? cut : 1);
		memcpy(p, full, cut);
		struct uf_frame pkt;
		struct uf_decode_counters c;
		memset(&c, 0, sizeof(c));
		int k = uf_mold_open_counted(&pkt, p, cut, &c);
		assert_int_equal(k, -EBADMSG);
		int want;
		if (cut < 20)
			want = UF_MOLD_ERR_TRUNCATED_HEADER;
		else if (cut == 20 || cut == 41)
			want = UF_MOLD_ERR_COUNT_MISMATCH; /* ends cleanly between blocks */
		else if (cut == 21 || cut == 42)
			want = UF_MOLD_ERR_BLOCK_LENGTH_TRUNCATED;
		else
			want = UF_MOLD_ERR_BLOCK_OVERRUNS_PACKET;
		assert_int_equal(pkt.err, want);
		assert_int_equal(c.mold_err[want], 1);
		assert_int_equal(uf_decode_counters_errors(&c), 1);
		/* An iterator over a refused packet yields nothing. */
		struct uf_frame_iter it;
		struct uf_frame_msg b = {0};
		pkt.kind = 0;
		uf_mold_iter_init(&it, &pkt);
		assert_int_equal(uf_mold_next(&it, &b), 0);
		free(p);
	}
	free(full);
}

static void test_mold_lying_counts_and_lengths_are_counted_by_kind(void **s)
{
	size_t len;
	uint8_t *p = hand_packet(&len);
	struct uf_frame pkt;
	/* count says 3, two blocks present */
	uf_put_be16(p + 18, 3);
	assert_int_equal(uf_mold_open(&pkt, p, len), -EBADMSG);
	assert_int_equal(pkt.err, UF_MOLD_ERR_COUNT_MISMATCH);
	/* count says 1, a second block follows */
	uf_put_be16(p + 18, 1);
	assert_int_equal(uf_mold_open(&pkt, p, len), -EBADMSG);
	assert_int_equal(pkt.err, UF_MOLD_ERR_TRAILING_BYTES);
	uf_put_be16(p + 18, 2);
	/* the last block claims more than is there */
	uf_put_be16(p + 41, 24);
	assert_int_equal(uf_mold_open(&pkt, p, len), -EBADMSG);
	assert_int_equal(pkt.err, UF_MOLD_ERR_BLOCK_OVERRUNS_PACKET);
	/* the first block claims 0xFFFF */
	uf_put_be16(p + 41, 23);
	uf_put_be16(p + 20, 0xFFFF);
	assert_int_equal(uf_mold_open(&pkt, p, len), -EBADMSG);
	assert_int_equal(pkt.err, UF_MOLD_ERR_BLOCK_OVERRUNS_PACKET);
	/* the first block claims less: the rest no longer parses as blocks */
	uf_put_be16(p + 20, 18);
	assert_int_equal(uf_mold_open(&pkt, p, len), -EBADMSG);
	/* restored, it opens again */
	uf_put_be16(p + 20, 19);
	assert_int_equal(uf_mold_open(&pkt, p, len), UF_MOLD_DATA);
	free(p);
}

/* A zero-length block is legal MoldUDP64; the ITCH decoder counts it as empty_message. */
static void test_mold_zero_length_block_reaches_decoder_as_empty(void **s)
{
	uint8_t *p = malloc(22);
	memcpy(p, SESSION, 10);
	uf_put_be64(p + 10, 7);
	uf_put_be16(p + 18, 1);
	uf_put_be16(p + 20, 0);
	struct uf_decode_pkt pk = {.data = p, .len = 22};
	struct uf_decode_counters c;
	memset(&c, 0, sizeof(c));
	size_t got = uf_decode_batch(&pk, 1, 0, &c, NULL, NULL, NULL);
	assert_int_equal(got, 0);
	assert_int_equal(c.itch_empty, 1);
	assert_int_equal(c.packets, 1);
	free(p);
}

struct collect {
	uint64_t seqs[4096];
	uint64_t refs[4096];
	size_t n;
	size_t pkts;
};

static void on_msg(void *ctx, uint64_t seq, const struct uf_itch_msg *m)
{
	struct collect *c = ctx;
	assert_true(c->n < 4096);
	c->seqs[c->n] = seq;
	c->refs[c->n++] = m->u.del.order_ref;
}

static void on_pkt(void *ctx, const struct uf_frame *pkt)
{
	((struct collect *)ctx)->pkts++;
}

/* 200 packets of 1..20 D messages with one corrupt packet and one heartbeat in the middle:
 * every prefetch distance delivers exactly the same messages in the same order. */
static void test_batch_same_messages_at_every_prefetch_distance(void **s)
{
	enum { NPKT = 200 };
	struct uf_decode_pkt pk[NPKT];
	uint64_t seq = 1;
	size_t want = 0;
	for (int i = 0; i < NPKT; i++) {
		uint8_t *buf = malloc(1472);
		struct uf_mold_builder b;
		uf_mold_builder_init(&b, buf, 1472, SESSION, seq);
		int n = 1 + (i * 7) % 20;
		if (i == 50)
			n = 0; /* heartbeat */
		for (int k = 0; k < n; k++) {
			uint8_t d[19];
			make_d(d, seq + (uint64_t)k);
			assert_int_equal(uf_mold_builder_add(&b, d, 19), 0);
		}
		pk[i] = (struct uf_decode_pkt){.data = buf, .len = (uint32_t)b.len};
		if (i == 100) {
			pk[i].len -= 3; /* truncated in flight: dropped whole */
		} else {
			want += (size_t)n;
		}
		seq += (uint64_t)n;
	}
	static struct collect ref, got;
	for (unsigned dist = 0; dist <= 70; dist += (dist < 8 ? 1 : 31)) {
		struct collect *c = dist == 0 ? &ref : &got;
		memset(c, 0, sizeof(*c));
		struct uf_decode_counters cnt;
		memset(&cnt, 0, sizeof(cnt));
		/* in batches of 16, like a CQE batch */
		size_t total = 0;
		for (size_t i = 0; i < NPKT; i += 16)
			total += uf_decode_batch(pk + i, NPKT - i < 16 ? NPKT - i : 16, dist, &cnt,
			                         on_pkt, on_msg, c);
		assert_int_equal(total, want);
		assert_int_equal(c->n, want);
		assert_int_equal(cnt.messages, want);
		assert_int_equal(cnt.by_type[uf_itch_type_index('D')], want);
		assert_int_equal(cnt.bytes, want * 19);
		assert_int_equal(cnt.packets, NPKT);
		assert_int_equal(cnt.heartbeats, 1);
		assert_int_equal(cnt.mold_err[UF_MOLD_ERR_BLOCK_OVERRUNS_PACKET], 1);
		assert_int_equal(c->pkts, NPKT - 1);
		for (size_t k = 0; k < c->n; k++)
			assert_int_equal(c->seqs[k], c->refs[k]); /* ref was built = its seq */
		if (dist)
			assert_memory_equal(ref.seqs, got.seqs, want * sizeof(uint64_t));
	}
	for (int i = 0; i < NPKT; i++)
		free((void *)pk[i].data);
}

/* The reference: uf_mold_open, then uf_mold_next + uf_itch_decode, counted by hand. */
static void reference_decode(const uint8_t *p, size_t len, struct uf_decode_counters *c,
                             struct collect *got)
{
	struct uf_frame pkt;
	int k = uf_mold_open_counted(&pkt, p, len, c);
	if (k < 0)
		return;
	got->pkts++;
	struct uf_frame_iter it;
	struct uf_frame_msg b;
	struct uf_itch_msg m;
	uf_mold_iter_init(&it, &pkt);
	while (uf_mold_next(&it, &b))
		if (uf_decode_msg_counted(b.msg, b.len, &m, c) == 0)
			on_msg(got, b.seq, &m);
}

/* Packets of `n` blocks cycling through D, X, A, an unknown type, a D of the wrong length
 * and an empty block, with n on both sides of the one-pass limit (UF_DECODE_FUSED_MAX):
 * whole, cut at every byte, and with the count raised or lowered by one. The batch decoder
 * (one pass up to the limit, two above) must count and deliver exactly what opening the
 * packet and then walking it does. */
static void test_batch_one_pass_agrees_with_open_then_walk(void **s)
{
	static const int sizes[] = {
	    1, 5, UF_DECODE_FUSED_MAX - 1, UF_DECODE_FUSED_MAX, UF_DECODE_FUSED_MAX + 1, 300};
	static struct collect want, got;
	static uint8_t buf[8192];
	for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
		int n = sizes[si];
		size_t o = 20;
		memcpy(buf, SESSION, 10);
		uf_put_be64(buf + 10, 1000);
		uf_put_be16(buf + 18, (uint16_t)n);
		for (int k = 0; k < n; k++) {
			uint8_t m[40] = {0};
			size_t ml = 19;
			switch (k % 6) {
			case 0:
				make_d(m, 1000 + (uint64_t)k);
				break;
			case 1:
				make_x(m, 1000 + (uint64_t)k, 7);
				ml = 23;
				break;
			case 2:
				m[0] = 'A';
				uf_put_be64(m + 11, 1000 + (uint64_t)k);
				ml = 36;
				break;
			case 3:
				m[0] = '?'; /* unknown type */
				ml = 5;
				break;
			case 4:
				make_d(m, 1);
				ml = 18; /* bad length for D */
				break;
			default:
				ml = 0; /* empty block */
			}
			uf_put_be16(buf + o, (uint16_t)ml);
			memcpy(buf + o + 2, m, ml);
			o += 2 + ml;
		}
		for (int variant = 0; variant < 3; variant++) {
			uf_put_be16(buf + 18, (uint16_t)(n + (variant == 1) - (variant == 2)));
			for (size_t cut = 0; cut <= o; cut++) {
				if (variant && cut != o)
					continue; /* count lies are tried on the whole packet */
				uint8_t *p = malloc(cut ? cut : 1);
				memcpy(p, buf, cut);
				struct uf_decode_counters cw, cg;
				memset(&cw, 0, sizeof(cw));
				memset(&cg, 0, sizeof(cg));
				memset(&want, 0, sizeof(want));
				memset(&got, 0, sizeof(got));
				reference_decode(p, cut, &cw, &want);
				struct uf_decode_pkt pk = {.data = p, .len = (uint32_t)cut};
				size_t d = uf_decode_batch(&pk, 1, 1, &cg, on_pkt, on_msg, &got);
				assert_int_equal(d, want.n);
				assert_int_equal(got.pkts, want.pkts);
				assert_memory_equal(&cg, &cw, sizeof(cw));
				assert_memory_equal(got.seqs, want.seqs, want.n * sizeof(uint64_t));
				assert_memory_equal(got.refs, want.refs, want.n * sizeof(uint64_t));
				free(p);
			}
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_mold_data_packet_yields_blocks_with_sequences),
	    cmocka_unit_test(test_mold_heartbeat_and_end_of_session),
	    cmocka_unit_test(test_mold_rerequest_round_trip_and_rejects),
	    cmocka_unit_test(test_mold_builder_matches_hand_packet_and_respects_capacity),
	    cmocka_unit_test(test_mold_truncation_at_every_byte_is_refused),
	    cmocka_unit_test(test_mold_lying_counts_and_lengths_are_counted_by_kind),
	    cmocka_unit_test(test_mold_zero_length_block_reaches_decoder_as_empty),
	    cmocka_unit_test(test_batch_same_messages_at_every_prefetch_distance),
	    cmocka_unit_test(test_batch_one_pass_agrees_with_open_then_walk),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
