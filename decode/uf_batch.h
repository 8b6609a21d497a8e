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

#define UF_DECODE_PREFETCH_DEFAULT   8  /* packets ahead: best of 1-16 in docs/decode.md */
#define UF_DECODE_PREFETCH_MAX_LINES 24 /* lines of one packet prefetched (1536 B: an MTU) */

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

/* One read prefetch that the compiler cannot drop. GCC 12 at -O2 deletes __builtin_prefetch
 * loops inside inlined static functions (seen here: `objdump -d | grep prefetch` was empty
 * and prefetch on/off measured the same), so x86 spells the instruction out. */
static inline void uf_decode_prefetch_line(const void *p)
{
#if defined(__x86_64__) || defined(__i386__)
	__asm__ volatile("prefetcht0 %0" : : "m"(*(const char *)p));
#else
	__builtin_prefetch(p, 0, 3);
#endif
}

/* Prefetches the lines of one datagram (capped at UF_DECODE_PREFETCH_MAX_LINES). */
static inline void uf_decode_prefetch_pkt(const struct uf_decode_pkt *pk)
{
	const uint8_t *p = pk->data;
	uint32_t lines = (pk->len + UF_CACHELINE - 1) / UF_CACHELINE;
	if (lines > UF_DECODE_PREFETCH_MAX_LINES)
		lines = UF_DECODE_PREFETCH_MAX_LINES;
	for (uint32_t l = 0; l < lines; l++)
		uf_decode_prefetch_line(p + (size_t)l * UF_CACHELINE);
}

/* Decodes packets[0..n) in order, prefetching `prefetch_distance` packets ahead (0 = off),
 * calling fn(ctx, seq, msg) (if not NULL) for each message that decoded. Returns the
 * number of messages delivered. Heartbeats and end of session are counted, not delivered; sequence
 * tracking (gaps, A/B) is the caller's business: it sees each packet through `pkt_fn` if given (may
 * be NULL), called with the opened packet before its messages, for valid packets only. */
typedef void (*uf_decode_pkt_fn)(void *ctx, const struct uf_mold_packet *pkt);

static inline size_t uf_decode_batch_inline(const struct uf_decode_pkt *pkts, size_t n,
                                            unsigned prefetch_distance,
                                            struct uf_decode_counters *c, uf_decode_pkt_fn pkt_fn,
                                            uf_decode_msg_fn fn, void *ctx)
{
	size_t delivered = 0;
	uint64_t bytes = 0; /* kept in a register, added to the counters once per batch */
	/* Warm the first `distance` packets: the loop prefetches i + distance from then on. */
	for (size_t i = 0; i < prefetch_distance && i < n; i++)
		uf_decode_prefetch_pkt(&pkts[i]);
	for (size_t i = 0; i < n; i++) {
		if (prefetch_distance && i + prefetch_distance < n)
			uf_decode_prefetch_pkt(&pkts[i + prefetch_distance]);
		struct uf_mold_packet pkt;
		int k = uf_mold_open_counted(&pkt, pkts[i].data, pkts[i].len, c);
		if (UF_UNLIKELY(k < 0))
			continue;
		if (pkt_fn)
			pkt_fn(ctx, &pkt);
		struct uf_mold_iter it;
		struct uf_mold_block b;
		struct uf_itch_msg m;
		uf_mold_iter_init(&it, &pkt);
		while (uf_mold_next(&it, &b)) {
			int rc = uf_itch_decode_inline(b.msg, b.len, &m);
			if (UF_LIKELY(rc == 0)) {
				/* messages/bytes stay in registers: a memory counter per message is
				 * a store-to-load chain through the whole batch */
				UF_DC_ADD(c->by_type[uf_itch_type_index(m.type)], 1);
				bytes += b.len;
				if (fn) /* folds away when fn is a constant */
					fn(ctx, b.seq, &m);
				delivered++;
			} else {
				uf_decode_count_error(&m, b.len, rc, c);
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
