/* Out-of-line batch decode (the body is uf_batch.h's inline form). */
#include "decode/uf_batch.h"

size_t uf_decode_batch(const struct uf_decode_pkt *pkts, size_t n, unsigned prefetch_distance,
                       struct uf_decode_counters *c, uf_decode_pkt_fn pkt_fn, uf_decode_msg_fn fn,
                       void *ctx)
{
	return uf_decode_batch_inline(pkts, n, prefetch_distance, c, pkt_fn, fn, ctx);
}
