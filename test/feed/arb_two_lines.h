/* Two lines into one arbiter, packet by packet, in the order the engine handles them: a
 * batch of one socket's datagrams, then a batch of the other's, each line losing its own
 * packets, the lag between them kept within a bound. A fake clock runs 2 us a packet. Used
 * by the arbiter tests that play whole days (the real IEX capture, random IEX-TP days). */
#ifndef UF_TEST_ARB_TWO_LINES_H
#define UF_TEST_ARB_TWO_LINES_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "feed/arbiter.h"

/* One datagram of the day, as both lines carry it. */
struct atl_seg {
	uint8_t *b;
	uint32_t len;
};

static uint64_t atl_now_ns;

static uint64_t atl_now(void)
{
	return atl_now_ns;
}

/* xorshift64*: the losses and batch sizes of one seed, the same on every machine */
static inline uint64_t atl_rand(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ull;
}

/* Calls fn for each message of a delivered packet from `skip` on, with its sequence. */
static inline void
atl_each_message(const struct uf_framing *fr, const struct uf_frame *pkt, uint32_t skip,
                 void (*fn)(void *ctx, uint64_t seq, const uint8_t *msg, size_t len), void *ctx)
{
	struct uf_frame_iter it;
	struct uf_frame_msg b;
	fr->iter_init(&it, pkt);
	for (uint64_t seq = pkt->seq; fr->iter_next(&it, &b); seq++)
		if (seq >= pkt->seq + skip)
			fn(ctx, seq, b.msg, b.len);
}

/* An arbiter for two lines with the daemon's defaults (wait 2 ms or 64 packets past a
 * hole) on `framing`, on the fake clock. */
static inline void atl_init(struct uf_arb *a, const struct uf_framing *framing,
                            struct uf_feed_stats *st, const struct uf_arb_cb *cb)
{
	struct uf_feed_config cfg;
	uf_feed_config_defaults(&cfg);
	cfg.nlines = 2;
	memset(st, 0, sizeof(*st));
	if (uf_arb_init(a, &cfg, framing, -1, 2048, st, cb) != 0)
		abort();
	atl_now_ns = 1000000000ull;
	a->now = atl_now;
}

/* What a line does with a segment (flags of atl_play's per-line array). */
#define ATL_DROP  1 /* lost */
#define ATL_TWICE 2 /* the network repeats it */
#define ATL_SWAP  4 /* the next segment arrives before it */

static inline void atl_send(struct uf_arb *a, const struct atl_seg *g, unsigned l)
{
	struct uf_frame f;
	if (a->framing->open(&f, g->b, g->len) < 0)
		abort(); /* the day is built valid */
	atl_now_ns += 2000;
	uf_arb_packet(a, &f, atl_now_ns, l);
}

/* Plays the day: line l does with segment i what fl[l][i] says (ATL_*); batches of
 * 1..`batch` segments, A's then B's, a line no more than `lag` segments ahead of the other.
 * Then the end of the day: every hole's life is over. */
static inline void atl_play(struct uf_arb *a, const struct atl_seg *seg, size_t nseg,
                            uint8_t *const fl[2], uint64_t *seed, unsigned batch, size_t lag)
{
	size_t *ord[2];
	for (int l = 0; l < 2; l++) {
		ord[l] = malloc(nseg * sizeof(*ord[l]));
		if (!ord[l])
			abort();
		for (size_t i = 0; i < nseg; i++)
			ord[l][i] = i;
		for (size_t i = 0; i + 1 < nseg; i++)
			if (fl[l][i] & ATL_SWAP) {
				ord[l][i] = i + 1;
				ord[l][i + 1] = i;
				i++;
			}
	}
	size_t next[2] = {0, 0};
	while (next[0] < nseg || next[1] < nseg) {
		for (unsigned l = 0; l < 2; l++) {
			size_t n = 1 + atl_rand(seed) % batch;
			if (next[l] > next[1 - l] + lag)
				n = 0; /* far enough ahead: the other socket's turn */
			for (; n && next[l] < nseg; n--, next[l]++) {
				size_t i = ord[l][next[l]];
				if (fl[l][i] & ATL_DROP)
					continue;
				atl_send(a, &seg[i], l);
				if (fl[l][i] & ATL_TWICE)
					atl_send(a, &seg[i], l);
			}
		}
		uf_arb_tick(a, atl_now_ns, 0);
	}
	atl_now_ns += 10000000000ull;
	uf_arb_tick(a, atl_now_ns, 1);
	free(ord[0]);
	free(ord[1]);
}

#endif
