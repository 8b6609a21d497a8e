/* The arbiter's stream-restart rule (IEX-TP, feed/arbiter.h) on random days, seed by seed:
 * each day is several streams in one session id, each starting with 0-4 heartbeats at
 * sequence 1 and then its data from 1 (40-400 messages), send times rising, and 600
 * heartbeats of silence before the next start (IEX: minutes, one a second); both lines
 * carry it, each losing its own packets (up to 15 %, and runs of 2-40), getting some twice
 * and some out of order, handled in the engine's batch order with the lines up to 512 packets apart
 * (test/feed/arb_two_lines.h). Every message says which stream it belongs to and its sequence (a
 * DEEP price level: size = stream, price = sequence).
 *
 * Asserted on every run, whatever was lost:
 *   - a delivered message is at the sequence it carries, and every message delivered
 *     between two new_session calls is of one stream: a stream's messages are never taken
 *     for another's (the worst failure: wrong books, no flag);
 *   - no message is delivered twice, and no stream is started twice (each arbiter stream
 *     maps to a later stream of the day than the one before).
 * With one line whole (the other lossy), also: every message delivered, no gap, every
 * restart seen once.
 *
 * Each line keeps at least one start (a heartbeat at 1 or the first data) of every stream.
 * NOT handled (this test finds it without that rule): a line that loses every start of a
 * stream and so many of its first messages that the first packet it shows lies past the
 * old stream's last sequence. That packet continues the old stream by sequence and send
 * time, so it is taken for the old stream's (and, sent after the real start, it makes that
 * start look like a late copy). Only the content tells them apart: IEX-TP's stream offset
 * (a segment continuing the delivered stream starts at the byte where the last one ended)
 * would, when the messages' lengths differ. On the real feed a stream starts with 16-23
 * heartbeats a second apart and runs 23,000-29,000 messages (the DEEP capture): one line
 * would have to lose all of them and more than a whole stream's worth of messages. The
 * cases where a line or both lose every start are in test_arbiter_restart.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "feed/arbiter.h"
#include "publish/uf_proto.h"
#include "test/common/uf_test_iex.h"
#include "test/feed/arb_two_lines.h"

#define RR_STREAMS  8
#define RR_MAX_MSGS 400 /* per stream */
#define RR_SILENCE  600 /* heartbeats between two streams: more than lag + batch */
#define RR_MAX_SEGS (RR_STREAMS * (RR_MAX_MSGS + 4 + RR_SILENCE))

struct rr {
	struct atl_seg seg[RR_MAX_SEGS];
	uint8_t mem[RR_MAX_SEGS][256];
	size_t nseg;
	size_t start_lo[RR_STREAMS], start_hi[RR_STREAMS]; /* each stream's starts: segments */
	int nstreams;
	unsigned silence; /* heartbeats between two streams */
	uint32_t nmsgs[RR_STREAMS];
	uint8_t delivered[RR_STREAMS][RR_MAX_MSGS + 1];
	struct uf_arb a;
	struct uf_feed_stats st;
	int arb_stream;          /* new_session calls */
	int map[RR_STREAMS * 4]; /* arbiter stream -> the day's stream (-1: none yet) */
	uint64_t wrong, twice, gap_messages;
};

static void rr_message(void *ctx, uint64_t seq, const uint8_t *msg, size_t len)
{
	(void)len;
	struct rr *x = ctx;
	uint32_t stream = (uint32_t)msg[18] | (uint32_t)msg[19] << 8;
	uint64_t carried = 0;
	for (int i = 0; i < 8; i++)
		carried |= (uint64_t)msg[22 + i] << (8 * i);
	int *m = &x->map[x->arb_stream];
	if (*m < 0)
		*m = (int)stream;
	if (carried != seq || (int)stream != *m || stream >= RR_STREAMS || seq > RR_MAX_MSGS) {
		x->wrong++;
		return;
	}
	if (x->delivered[stream][seq]++)
		x->twice++;
}

static void rr_deliver(void *ctx, const struct uf_frame *pkt, uint32_t skip, uint64_t rx,
                       unsigned src)
{
	(void)rx;
	(void)src;
	struct rr *x = ctx;
	atl_each_message(x->a.framing, pkt, skip, rr_message, x);
}

static void rr_gap(void *ctx, uint64_t first, uint64_t count)
{
	(void)first;
	struct rr *x = ctx;
	x->gap_messages += count;
}

static void rr_session(void *ctx, const char s[UF_FRAME_SESSION_LEN])
{
	(void)s;
	struct rr *x = ctx;
	x->arb_stream++;
	assert_true(x->arb_stream < RR_STREAMS * 4);
}

static void rr_add(struct rr *x, struct ti_seg *s)
{
	assert_true(x->nseg < RR_MAX_SEGS);
	size_t len = ti_seg_len(s);
	assert_true(len <= sizeof(x->mem[0]));
	memcpy(x->mem[x->nseg], s->b, len);
	x->seg[x->nseg].b = x->mem[x->nseg];
	x->seg[x->nseg].len = (uint32_t)len;
	x->nseg++;
}

/* A random day: 2..RR_STREAMS streams of 40..RR_MAX_MSGS messages in segments of 1..6. */
static void rr_day(struct rr *x, uint64_t *seed)
{
	x->nseg = 0;
	x->nstreams = 2 + (int)(atl_rand(seed) % (RR_STREAMS - 1));
	int64_t sent = TI_TS;
	for (int s = 0; s < x->nstreams; s++) {
		x->nmsgs[s] = 40 + (uint32_t)(atl_rand(seed) % (RR_MAX_MSGS - 39));
		unsigned hbs = (unsigned)(atl_rand(seed) % 5);
		struct ti_seg g;
		x->start_lo[s] = x->nseg;
		x->start_hi[s] = x->nseg + hbs; /* the heartbeats at 1, then the first data */
		for (unsigned h = 0; h < hbs; h++) {
			ti_seg_begin(&g, UF_IEXTP_PROTO_DEEP, 42, 0, 1, sent += 1000);
			rr_add(x, &g);
		}
		int64_t off = 0;
		for (uint32_t seq = 1; seq <= x->nmsgs[s];) {
			uint32_t n = 1 + (uint32_t)(atl_rand(seed) % 6);
			if (seq + n - 1 > x->nmsgs[s])
				n = x->nmsgs[s] - seq + 1;
			ti_seg_begin(&g, UF_IEXTP_PROTO_DEEP, 42, off, seq, sent += 1000);
			uint8_t m[32];
			for (uint32_t i = 0; i < n; i++) {
				size_t len =
				    ti_level(m, 'B', 0, "RAND", (uint32_t)s, seq + i, TI_TS);
				ti_seg_add(&g, m, len);
				off +=
				    (int64_t)len + 2; /* IEX-TP counts each block's length field */
			}
			rr_add(x, &g);
			seq += n;
		}
		/* The silence before the next start (IEX: minutes, a heartbeat a second): longer
		 * than the lines ever run apart here, so the lagging line catches up. */
		for (unsigned h = 0; s + 1 < x->nstreams && h < x->silence; h++) {
			ti_seg_begin(&g, UF_IEXTP_PROTO_DEEP, 42, off, x->nmsgs[s] + 1,
			             sent += 1000);
			rr_add(x, &g);
		}
	}
}

/* A line's faults (test/feed/arb_two_lines.h): it loses segments with probability 1/`loss`
 * each and runs of 2..40 at 1/(8 loss) (none when `loss` is 0), and, whole or not, gets a
 * segment twice at 1/64 and two segments swapped at 1/128. */
static void rr_faults(uint8_t *fl, size_t nseg, unsigned loss, uint64_t *seed)
{
	memset(fl, 0, nseg);
	for (size_t i = 0; i < nseg; i++) {
		if (loss && atl_rand(seed) % loss == 0)
			fl[i] |= ATL_DROP;
		if (loss && atl_rand(seed) % (8 * loss) == 0)
			for (size_t k = i, end = i + 2 + atl_rand(seed) % 39; k < end && k < nseg;
			     k++)
				fl[k] |= ATL_DROP;
		if (atl_rand(seed) % 64 == 0)
			fl[i] |= ATL_TWICE;
		if (atl_rand(seed) % 128 == 0)
			fl[i] |= ATL_SWAP;
	}
}

static void rr_run(struct rr *x, uint64_t seed, unsigned loss_a, unsigned loss_b)
{
	uint64_t s = seed;
	rr_day(x, &s);
	memset(x->delivered, 0, sizeof(x->delivered));
	for (size_t i = 0; i < sizeof(x->map) / sizeof(x->map[0]); i++)
		x->map[i] = -1;
	x->arb_stream = 0;
	x->wrong = x->twice = x->gap_messages = 0;
	struct uf_arb_cb cb = {rr_deliver, rr_gap, rr_session, x};
	atl_init(&x->a, uf_proto_find("iex-deep")->framing, &x->st, &cb);
	static uint8_t da[RR_MAX_SEGS], db[RR_MAX_SEGS];
	rr_faults(da, x->nseg, loss_a, &s);
	rr_faults(db, x->nseg, loss_b, &s);
	uint8_t *drop[2] = {da, db};
	/* Each line keeps one start of every stream (see the file's head: what is not handled) */
	for (int l = 0; l < 2; l++)
		for (int st = 0; st < x->nstreams; st++) {
			int kept = 0;
			for (size_t i = x->start_lo[st]; i <= x->start_hi[st]; i++)
				kept |= !(drop[l][i] & ATL_DROP);
			if (!kept)
				drop[l][x->start_hi[st]] &= (uint8_t)~ATL_DROP;
		}
	unsigned batch = 1 + (unsigned)(atl_rand(&s) % 64);
	size_t lag = (size_t)(atl_rand(&s) % 513);
	atl_play(&x->a, x->seg, x->nseg, drop, &s, batch, lag);
	uf_arb_fini(&x->a);

	uint64_t missing = 0, total = 0;
	for (int st = 0; st < x->nstreams; st++)
		for (uint32_t q = 1; q <= x->nmsgs[st]; q++) {
			total++;
			missing += !x->delivered[st][q];
		}
	int prev = -1, increasing = 1;
	for (int k = 0; k <= x->arb_stream; k++) {
		if (x->map[k] < 0)
			continue;
		increasing &= x->map[k] > prev;
		prev = x->map[k];
	}
	if (x->wrong || x->twice || !increasing ||
	    ((!loss_a || !loss_b) && x->silence && (missing || x->gap_messages)))
		print_message("seed %llu (loss 1/%u, 1/%u, batch %u, lag %zu): %d streams, %d new, "
		              "%llu messages, wrong %llu, twice %llu, missing %llu, gap %llu\n",
		              (unsigned long long)seed, loss_a, loss_b, batch, lag, x->nstreams,
		              x->arb_stream, (unsigned long long)total,
		              (unsigned long long)x->wrong, (unsigned long long)x->twice,
		              (unsigned long long)missing, (unsigned long long)x->gap_messages);
	assert_int_equal(x->wrong, 0);
	assert_int_equal(x->twice, 0);
	assert_true(increasing);
	if ((!loss_a || !loss_b) && x->silence) {
		assert_int_equal(missing, 0);
		assert_int_equal(x->gap_messages, 0);
		assert_int_equal(x->arb_stream, x->nstreams - 1);
	}
}

static void test_restart_random_days_one_whole_line(void **st)
{
	(void)st;
	struct rr *x = calloc(1, sizeof(*x));
	assert_non_null(x);
	x->silence = RR_SILENCE;
	for (uint64_t seed = 1; seed <= 300; seed++)
		rr_run(x, seed, seed % 2 ? 0 : 7 + (unsigned)(seed % 20),
		       seed % 2 ? 7 + (unsigned)(seed % 20) : 0);
	free(x);
}

static void test_restart_random_days_two_lossy_lines(void **st)
{
	(void)st;
	struct rr *x = calloc(1, sizeof(*x));
	assert_non_null(x);
	x->silence = RR_SILENCE;
	for (uint64_t seed = 1000; seed < 1600; seed++)
		rr_run(x, seed, 7 + (unsigned)(seed % 30), 7 + (unsigned)((seed / 30) % 30));
	free(x);
}

/* No silence: a stream starts right after the last ends, so a lagging line may still be in
 * one stream while the other holds the next and shows a third (short streams go by within
 * the lag). Some messages are then lost, flagged (a stream whose wait ended); never taken
 * for another stream's, never twice. */
static void test_restart_random_days_back_to_back(void **st)
{
	(void)st;
	struct rr *x = calloc(1, sizeof(*x));
	assert_non_null(x);
	x->silence = 0;
	for (uint64_t seed = 2000; seed < 2600; seed++)
		rr_run(x, seed, seed % 3 ? 7 + (unsigned)(seed % 30) : 0,
		       seed % 3 == 1 ? 0 : 7 + (unsigned)((seed / 30) % 30));
	free(x);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_restart_random_days_one_whole_line),
	    cmocka_unit_test(test_restart_random_days_two_lossy_lines),
	    cmocka_unit_test(test_restart_random_days_back_to_back),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
