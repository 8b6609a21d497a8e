/* Batch decoding with software prefetch: MoldUDP64 packets -> ITCH typed views.
 *
 * The feed thread receives packets in batches (a CQE batch, a recvmmsg vector). While it
 * decodes packet i, the packet at i + prefetch_distance is prefetched line by line, so its
 * bytes arrive from memory while the current one is decoded. Distance 0 turns prefetch off.
 * The effect is measured by `uf-decode bench` (docs/decode.md), not assumed.
 *
 * Malformed packets are counted by kind (uf_decode_counters) and dropped whole; messages with
 * a bad length or an unknown type are counted and skipped; the callback sees only messages
 * that decoded. No allocation, no syscalls. */
#ifndef UF_BATCH_H
#define UF_BATCH_H

#include <stddef.h>
#include <stdint.h>

#include "common/uf_compiler.h"
#include "decode/uf_counters.h"
#include "decode/uf_itch50.h"
#include "decode/uf_mold.h"

#define UF_DECODE_PREFETCH_DEFAULT   UF_FRAME_PREFETCH_DEFAULT   /* packets ahead */
#define UF_DECODE_PREFETCH_MAX_LINES UF_FRAME_PREFETCH_MAX_LINES /* lines of one packet */

/* One received datagram. */
struct uf_decode_pkt {
	const uint8_t *data; /* MoldUDP64 datagram (caller's buffer) */
	uint32_t len;        /* its length */
	uint32_t user;       /* caller's tag (line, buffer id): untouched */
};

/* Called once per decoded message, in order. `seq` is the MoldUDP64 sequence number. */
typedef void (*uf_decode_msg_fn)(void *ctx, uint64_t seq, const struct uf_itch_msg *m);

/* Counts a message uf_itch_decode refused (rc = its return value). Cold. */
static inline void uf_decode_count_error(const struct uf_itch_msg *m, size_t len, int rc,
                                         struct uf_decode_counters *c)
{
	if (len == 0)
		UF_DC_ADD(c->itch_empty, 1);
	else if (rc == -ENOMSG)
		UF_DC_ADD(c->itch_unknown_type, 1);
	else
		UF_DC_ADD(c->itch_bad_len[uf_itch_type_index(m->type)], 1);
}

/* Decodes one message and counts it (by type, or the error by kind). Returns as
 * uf_itch_decode: 0, -ENOMSG (unknown type), -EBADMSG (bad length). */
static inline int uf_decode_msg_counted(const uint8_t *p, size_t len, struct uf_itch_msg *m,
                                        struct uf_decode_counters *c)
{
	int rc = uf_itch_decode_inline(p, len, m);
	if (UF_LIKELY(rc == 0)) {
		UF_DC_ADD(c->messages, 1);
		UF_DC_ADD(c->bytes, len);
		UF_DC_ADD(c->by_type[uf_itch_type_index(m->type)], 1);
	} else {
		uf_decode_count_error(m, len, rc, c);
	}
	return rc;
}

/* Prefetches the lines of one datagram (the one prefetch rule, decode/uf_frame.h). */
static inline void uf_decode_prefetch_pkt(const struct uf_decode_pkt *pk)
{
	uf_frame_prefetch(pk->data, pk->len);
}

/* Decodes packets[0..n) in order, prefetching `prefetch_distance` packets ahead (0 = off),
 * calling fn(ctx, seq, msg) (if not NULL) for each message that decoded. Returns the
 * number of messages delivered. Heartbeats and end of session are counted, not delivered; sequence
 * tracking (gaps, A/B) is the caller's business: it sees each packet through `pkt_fn` if given (may
 * be NULL), called with the opened packet before its messages, for valid packets only. */
typedef void (*uf_decode_pkt_fn)(void *ctx, const struct uf_frame *pkt);

#define UF_DECODE_FUSED_MAX 128 /* blocks decoded in one pass; above, two passes */

/* Fused decode state: where block i's message goes and what decoding it returned. */
struct uf_decode_fused {
	struct uf_itch_msg *out; /* decoded messages */
	int8_t *rc;              /* decode results */
};

/* uf_mold_walk's callback for the fused decode (inlined into the walk). */
static inline __attribute__((always_inline)) void
uf_decode_fused_block(void *ctx, uint32_t i, const uint8_t *msg, uint16_t len)
{
	struct uf_decode_fused *d = ctx;
	d->rc[i] = (int8_t)uf_itch_decode_inline(msg, len, &d->out[i]);
}

/* The one-pass form of a data packet: walks the blocks once (uf_mold_walk, the walk
 * uf_mold_open() does), decoding each message into out[] as it goes, so the decode work overlaps
 * the serial walk (load a length, add, load the next) instead of following a separate validation
 * walk. Nothing is delivered here: the caller hands out[] on only when the whole packet validated,
 * so a packet that lies is still dropped whole. Returns UF_MOLD_DATA with pkt, out[0..count) and
 * rc[0..count) filled, or -EBADMSG with pkt->err set. Needs 1 <= count <= UF_DECODE_FUSED_MAX
 * (caller checks). */
static inline int uf_decode_walk_fused(struct uf_frame *pkt, struct uf_itch_msg *out, int8_t *rc)
{
	struct uf_decode_fused d = {out, rc};
	return uf_mold_walk(pkt, uf_decode_fused_block, &d); /* the one block walk (uf_mold.h) */
}

static inline size_t uf_decode_batch_inline(const struct uf_decode_pkt *pkts, size_t n,
                                            unsigned prefetch_distance,
                                            struct uf_decode_counters *c, uf_decode_pkt_fn pkt_fn,
                                            uf_decode_msg_fn fn, void *ctx)
{
	size_t delivered = 0;
	uint64_t bytes = 0; /* kept in a register, added to the counters once per batch */
	struct uf_itch_msg out[UF_DECODE_FUSED_MAX]; /* one packet's messages, decoded */
	int8_t rc[UF_DECODE_FUSED_MAX];              /* and what decoding each returned */
	/* Warm the first `distance` packets: the loop prefetches i + distance from then on. */
	for (size_t i = 0; i < prefetch_distance && i < n; i++)
		uf_decode_prefetch_pkt(&pkts[i]);
	for (size_t i = 0; i < n; i++) {
		if (prefetch_distance && i + prefetch_distance < n)
			uf_decode_prefetch_pkt(&pkts[i + prefetch_distance]);
		struct uf_frame pkt;
		if (UF_LIKELY(uf_mold_parse_header(&pkt, pkts[i].data, pkts[i].len) == 0 &&
		              pkt.count >= 1 && pkt.count <= UF_DECODE_FUSED_MAX)) {
			UF_DC_ADD(c->packets, 1);
			if (UF_UNLIKELY(uf_decode_walk_fused(&pkt, out, rc) < 0)) {
				UF_DC_ADD(c->mold_err[pkt.err], 1);
				continue;
			}
			if (pkt_fn)
				pkt_fn(ctx, &pkt);
			for (uint32_t k = 0; k < pkt.count; k++) {
				if (UF_LIKELY(rc[k] == 0)) {
					UF_DC_ADD(c->by_type[uf_itch_type_index(out[k].type)], 1);
					bytes += out[k].len;
					if (fn) /* folds away when fn is a constant */
						fn(ctx, pkt.seq + k, &out[k]);
					delivered++;
				} else {
					uf_decode_count_error(&out[k], out[k].len, rc[k], c);
				}
			}
			continue;
		}
		/* Heartbeats, end of session, short or very long packets: validate, then walk. */
		int k = uf_mold_open_counted(&pkt, pkts[i].data, pkts[i].len, c);
		if (UF_UNLIKELY(k < 0))
			continue;
		if (pkt_fn)
			pkt_fn(ctx, &pkt);
		struct uf_frame_iter it;
		struct uf_frame_msg b;
		struct uf_itch_msg m;
		uf_mold_iter_init(&it, &pkt);
		while (uf_mold_next(&it, &b)) {
			int r = uf_itch_decode_inline(b.msg, b.len, &m);
			if (UF_LIKELY(r == 0)) {
				/* messages/bytes stay in registers: a memory counter per message is
				 * a store-to-load chain through the whole batch */
				UF_DC_ADD(c->by_type[uf_itch_type_index(m.type)], 1);
				bytes += b.len;
				if (fn)
					fn(ctx, b.seq, &m);
				delivered++;
			} else {
				uf_decode_count_error(&m, b.len, r, c);
			}
		}
	}
	UF_DC_ADD(c->messages, delivered);
	UF_DC_ADD(c->bytes, bytes);
	return delivered;
}

/* Out-of-line form of uf_decode_batch_inline (for callers that do not need the inlining). */
size_t uf_decode_batch(const struct uf_decode_pkt *pkts, size_t n, unsigned prefetch_distance,
                       struct uf_decode_counters *c, uf_decode_pkt_fn pkt_fn, uf_decode_msg_fn fn,
                       void *ctx);

#endif /* UF_BATCH_H */
