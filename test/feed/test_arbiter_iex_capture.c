/* The arbiter on the real IEX DEEP capture (../shared/data/iex, UF_SHARED_DATA, conformance
 * label) sent on two lines that each lose packets, packet by packet (no network, a fake
 * clock), in the order the engine handles them: a batch of one socket's datagrams, then a
 * batch of the other's, so one line lags the other by up to a few hundred packets.
 *
 * The capture has 12 streams in one session id (11 publisher restarts, each starting with
 * heartbeats at sequence 1 before its first data, also at 1). For several seeds (the losses
 * and the batch sizes) it asserts what a consumer relies on:
 *   - exactly 11 new streams (new_session), never one more: a stream taken as new twice
 *     delivers its messages a second time after a RESET;
 *   - every message delivered is the capture's message of that stream and sequence, byte
 *     for byte, and none is delivered twice;
 *   - every message is delivered or given up as a gap, and the gaps hold exactly the
 *     messages both lines lost: a hole one line can fill is filled, also when the other
 *     line already started the next stream (it waits for the lagging line, holding what
 *     it sent of the new stream) or lost a packet of it, or every start it carried. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "decode/uf_decode.h"
#include "feed/arbiter.h"
#include "publish/uf_proto.h"
#include "test/feed/arb_two_lines.h"

#define CX_STREAMS 12
#define CX_MAX_SEQ (1u << 17) /* more than any stream's last sequence (105,210) */

/* Per stream and sequence: the message's bytes in the capture, and what the arbiter did. */
struct cx_msg {
	const uint8_t *p;
	uint16_t len;
	uint8_t lost_a, lost_b; /* in a segment that line dropped */
	uint8_t delivered;      /* times delivered */
	uint8_t given_up;       /* inside a gap */
};

struct cx {
	struct atl_seg *seg;  /* the capture's segments, copied */
	uint32_t *seg_stream; /* the stream of each */
	size_t nseg;
	struct cx_msg *m[CX_STREAMS]; /* [stream][seq] */
	uint64_t last[CX_STREAMS];    /* last sequence of each stream */
	struct uf_arb a;
	struct uf_feed_stats st;
	unsigned stream;         /* the arbiter's current stream (new_session calls) */
	uint64_t wrong_delivery; /* delivered bytes not the capture's */
	uint64_t beyond;         /* delivered or given up past the stream's end */
};

static void cx_message(void *ctx, uint64_t seq, const uint8_t *msg, size_t len)
{
	struct cx *x = ctx;
	if (seq > x->last[x->stream]) {
		x->beyond++;
		return;
	}
	struct cx_msg *m = &x->m[x->stream][seq];
	m->delivered++;
	if (len != m->len || memcmp(msg, m->p, m->len) != 0)
		x->wrong_delivery++;
}

static void cx_deliver(void *ctx, const struct uf_frame *pkt, uint32_t skip, uint64_t rx,
                       unsigned src)
{
	(void)rx;
	(void)src;
	struct cx *x = ctx;
	atl_each_message(x->a.framing, pkt, skip, cx_message, x);
}

static void cx_gap(void *ctx, uint64_t first, uint64_t count)
{
	struct cx *x = ctx;
	for (uint64_t seq = first; seq < first + count; seq++) {
		if (seq > x->last[x->stream])
			x->beyond++;
		else
			x->m[x->stream][seq].given_up++;
	}
}

static void cx_session(void *ctx, const char s[UF_FRAME_SESSION_LEN])
{
	(void)s;
	struct cx *x = ctx;
	x->stream++;
	assert_true(x->stream < CX_STREAMS);
}

/* Reads the DEEP capture: every segment copied, its stream found (sequence 1 at stream
 * offset 0 after anything but such a heartbeat starts the next), each message indexed. */
static void cx_load(struct cx *x)
{
	const char *dir = getenv("UF_SHARED_DATA");
	if (!dir)
		fail_msg("UF_SHARED_DATA is not set: run through ctest (conformance label)");
	char path[512];
	snprintf(path, sizeof(path), "%s/iex/iex-deep-1.0-20170425.pcap.gz", dir);
	struct uf_decode_counters dc;
	memset(&dc, 0, sizeof(dc));
	struct uf_reader rd;
	if (uf_reader_open(&rd, path, &dc) != 0)
		fail_msg("%s: %s", path, rd.err);
	const struct uf_framing *fr = uf_proto_find("iex-deep")->framing;
	size_t cap = 1u << 17;
	x->seg = calloc(cap, sizeof(*x->seg));
	x->seg_stream = calloc(cap, sizeof(*x->seg_stream));
	assert_true(x->seg && x->seg_stream);
	for (int s = 0; s < CX_STREAMS; s++) {
		x->m[s] = calloc(CX_MAX_SEQ, sizeof(struct cx_msg));
		assert_non_null(x->m[s]);
	}
	const uint8_t *p;
	size_t len;
	uint64_t ts, sent;
	int stream = -1, prev_start_hb = 0;
	while (uf_reader_next_payload(&rd, &p, &len, &ts) == 1) {
		struct uf_frame f;
		int kind = fr->open(&f, p, len);
		if (kind < 0)
			continue; /* the truncated last record */
		int start = f.seq == 1 && fr->restart(&f, &sent);
		if (start && !prev_start_hb)
			stream++;
		prev_start_hb = start && kind != UF_FRAME_DATA;
		assert_true(stream >= 0 && stream < CX_STREAMS);
		assert_true(x->nseg < cap);
		x->seg_stream[x->nseg] = (uint32_t)stream;
		struct atl_seg *g = &x->seg[x->nseg++];
		g->b = malloc(len);
		assert_non_null(g->b);
		memcpy(g->b, p, len);
		g->len = (uint32_t)len;
		if (kind != UF_FRAME_DATA)
			continue;
		assert_int_equal(fr->open(&f, g->b, len), UF_FRAME_DATA);
		struct uf_frame_iter it;
		struct uf_frame_msg b;
		fr->iter_init(&it, &f);
		for (uint64_t seq = f.seq; fr->iter_next(&it, &b); seq++) {
			assert_true(seq < CX_MAX_SEQ);
			x->m[stream][seq].p = b.msg;
			x->m[stream][seq].len = (uint16_t)b.len;
			if (seq > x->last[stream])
				x->last[stream] = seq;
		}
	}
	uf_reader_close(&rd);
	assert_int_equal(stream, CX_STREAMS - 1);
	assert_int_equal(x->nseg, 121314);
}

/* Marks the messages of segment `i` lost on line `l`. */
static void cx_lose(struct cx *x, size_t i, int l)
{
	struct uf_frame f;
	const struct uf_framing *fr = x->a.framing;
	if (fr->open(&f, x->seg[i].b, x->seg[i].len) != UF_FRAME_DATA)
		return;
	for (uint64_t seq = f.seq; seq < f.seq + f.count; seq++) {
		struct cx_msg *m = &x->m[x->seg_stream[i]][seq];
		if (l == 0)
			m->lost_a = 1;
		else
			m->lost_b = 1;
	}
}

/* One run: each line drops a segment with probability 1/`loss`; the lines are handled in
 * batches of 1..`batch` segments, A's then B's, the lag between them kept within `lag`. */
static void cx_run(struct cx *x, uint64_t seed, unsigned loss, unsigned batch, size_t lag)
{
	for (int s = 0; s < CX_STREAMS; s++)
		for (uint64_t q = 1; q <= x->last[s]; q++) {
			x->m[s][q].lost_a = x->m[s][q].lost_b = 0;
			x->m[s][q].delivered = x->m[s][q].given_up = 0;
		}
	x->stream = 0;
	x->wrong_delivery = x->beyond = 0;
	struct uf_arb_cb cb = {cx_deliver, cx_gap, cx_session, x};
	atl_init(&x->a, uf_proto_find("iex-deep")->framing, &x->st, &cb);
	uint8_t *drop[2];
	for (int l = 0; l < 2; l++) {
		drop[l] = calloc(x->nseg, 1);
		assert_non_null(drop[l]);
		for (size_t i = 0; i < x->nseg; i++)
			if (atl_rand(&seed) % loss == 0) {
				drop[l][i] = ATL_DROP;
				cx_lose(x, i, l);
			}
	}
	atl_play(&x->a, x->seg, x->nseg, drop, &seed, batch, lag);
	free(drop[0]);
	free(drop[1]);
}

/* The verdict of one run, printed, then asserted. */
static void cx_check(struct cx *x, uint64_t seed)
{
	uint64_t both = 0, twice = 0, missing = 0, given_up_filled = 0, given_up = 0;
	for (int s = 0; s < CX_STREAMS; s++)
		for (uint64_t q = 1; q <= x->last[s]; q++) {
			const struct cx_msg *m = &x->m[s][q];
			both += m->lost_a && m->lost_b;
			twice +=
			    m->delivered > 1 || m->given_up > 1 || (m->delivered && m->given_up);
			missing += !m->delivered && !m->given_up;
			given_up += m->given_up != 0;
			given_up_filled += m->given_up && !(m->lost_a && m->lost_b);
		}
	printf("seed %llu: %u new streams, lost on both lines %llu, given up %llu (of which "
	       "one line had %llu), twice %llu, missing %llu, wrong %llu, beyond %llu\n",
	       (unsigned long long)seed, x->stream, (unsigned long long)both,
	       (unsigned long long)given_up, (unsigned long long)given_up_filled,
	       (unsigned long long)twice, (unsigned long long)missing,
	       (unsigned long long)x->wrong_delivery, (unsigned long long)x->beyond);
	assert_int_equal(x->stream, CX_STREAMS - 1);
	assert_int_equal(x->wrong_delivery, 0);
	assert_int_equal(twice, 0);
	assert_int_equal(x->beyond, 0);
	assert_int_equal(missing, 0);
	/* what both lines lost is given up, and nothing a line could fill */
	assert_int_equal(given_up_filled, 0);
	assert_int_equal(given_up, both);
	uf_arb_fini(&x->a);
}

static void test_iex_deep_capture_two_lossy_lines(void **st)
{
	(void)st;
	struct cx *x = calloc(1, sizeof(*x));
	assert_non_null(x);
	cx_load(x);
	static const struct {
		uint64_t seed;
		unsigned loss, batch;
		size_t lag;
	} runs[] = {
	    {1, 100, 32, 64},   {2, 100, 64, 256},    {3, 100, 16, 32},  {4, 50, 64, 256},
	    {5, 100, 8, 8},     {6, 200, 128, 512},   {7, 100, 64, 128}, {8, 100, 32, 256},
	    {9, 100, 64, 1500}, {10, 100, 256, 3000},
	};
	for (size_t r = 0; r < sizeof(runs) / sizeof(runs[0]); r++) {
		cx_run(x, runs[r].seed, runs[r].loss, runs[r].batch, runs[r].lag);
		cx_check(x, runs[r].seed);
	}
	for (size_t i = 0; i < x->nseg; i++)
		free(x->seg[i].b);
	free(x->seg);
	free(x->seg_stream);
	for (int s = 0; s < CX_STREAMS; s++)
		free(x->m[s]);
	free(x);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_iex_deep_capture_two_lossy_lines),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
