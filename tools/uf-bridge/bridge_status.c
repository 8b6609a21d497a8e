/* uf-bridge's status line: a pure renderer (the loop samples, this formats). */
#include "tools/uf-bridge/bridge.h"

#include <inttypes.h>
#include <stdio.h>

int uf_bridge_status_json(const struct uf_bridge_status *st, char *buf, size_t len)
{
	uint64_t lag = st->ring_tail > st->position ? st->ring_tail - st->position : 0;
	uint64_t mean = st->messages ? st->ack_ns_sum / st->messages : 0;
	int n = snprintf(buf, len,
	                 "{\"ring\":\"%s\",\"generation\":%" PRIu64 ",\"position\":%" PRIu64
	                 ",\"ring_tail\":%" PRIu64 ",\"lag\":%" PRIu64 ",\"published\":%" PRIu64
	                 ",\"messages\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"js_last\":%" PRIu64
	                 ",\"retries\":%" PRIu64 ",\"duplicates\":%" PRIu64 ",\"laps\":%" PRIu64
	                 ",\"lost\":%" PRIu64 ",\"kv_puts\":%" PRIu64 ",\"reconnects\":%" PRIu64
	                 ",\"ack_us_mean\":%.1f,\"ack_us_max\":%.1f,\"pub_lag_us_max\":%.1f"
	                 ",\"sym_msgs\":%" PRIu64 ",\"sym_failed\":%" PRIu64
	                 ",\"connected\":%d,\"closed\":%d}",
	                 st->ring, st->generation, st->position, st->ring_tail, lag, st->published,
	                 st->messages, st->bytes, st->js_last, st->retries, st->duplicates,
	                 st->laps, st->lost, st->kv_puts, st->reconnects, (double)mean / 1e3,
	                 (double)st->ack_ns_max / 1e3, (double)st->pub_lag_ns_max / 1e3,
	                 st->sym_msgs, st->sym_failed, st->connected, st->closed);
	return n < 0 || (size_t)n >= len ? -1 : n;
}
