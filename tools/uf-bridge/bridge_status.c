/* uf-bridge's status line: a pure renderer (the loop samples, this formats). */
#include "tools/uf-bridge/bridge.h"

#include <inttypes.h>
#include <stdio.h>

/* `in` as a JSON string body: '"', '\\' and control bytes become '_' (a URL has none). */
static void json_safe(const char *in, char *out, size_t len)
{
	size_t i = 0;

	for (; in[i] && i + 1 < len; i++)
		out[i] = in[i] == '"' || in[i] == '\\' || (unsigned char)in[i] < 0x20 ? '_' : in[i];
	out[i] = '\0';
}

int uf_bridge_status_json(const struct uf_bridge_status *st, char *buf, size_t len)
{
	uint64_t lag = st->ring_tail > st->position ? st->ring_tail - st->position : 0;
	uint64_t mean = st->messages ? st->ack_ns_sum / st->messages : 0;
	char server[sizeof(st->server)];
	int n;

	json_safe(st->server, server, sizeof(server));
	n = snprintf(
	    buf, len,
	    "{\"ring\":\"%s\",\"generation\":%" PRIu64 ",\"position\":%" PRIu64 ",\"read\":%" PRIu64
	    ",\"ring_tail\":%" PRIu64 ",\"lag\":%" PRIu64 ",\"published\":%" PRIu64
	    ",\"messages\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"js_last\":%" PRIu64
	    ",\"retries\":%" PRIu64 ",\"duplicates\":%" PRIu64 ",\"laps\":%" PRIu64
	    ",\"lost\":%" PRIu64 ",\"kv_puts\":%" PRIu64 ",\"reconnects\":%" PRIu64
	    ",\"ack_timeouts\":%" PRIu64 ",\"failovers\":%" PRIu64
	    ",\"ack_us_mean\":%.1f,\"ack_us_max\":%.1f,\"pub_lag_us_max\":%.1f"
	    ",\"sym_msgs\":%" PRIu64 ",\"sym_failed\":%" PRIu64 ",\"in_flight\":%" PRIu64
	    ",\"window_full\":%" PRIu64 ",\"resends\":%" PRIu64 ",\"order_errors\":%" PRIu64
	    ",\"held\":%" PRIu64 ",\"server\":\"%s\",\"connected\":%d,\"closed\":%d}",
	    st->ring, st->generation, st->position, st->read, st->ring_tail, lag, st->published,
	    st->messages, st->bytes, st->js_last, st->retries, st->duplicates, st->laps, st->lost,
	    st->kv_puts, st->reconnects, st->ack_timeouts, st->failovers, (double)mean / 1e3,
	    (double)st->ack_ns_max / 1e3, (double)st->pub_lag_ns_max / 1e3, st->sym_msgs,
	    st->sym_failed, st->in_flight, st->window_full, st->resends, st->order_errors, st->held,
	    server, st->connected, st->closed);
	return n < 0 || (size_t)n >= len ? -1 : n;
}
