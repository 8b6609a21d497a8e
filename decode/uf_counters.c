/* Decode counters: the one place error kinds get their printed names. */
#include "decode/uf_counters.h"

#include <stdio.h>

static const char *const mold_names[UF_MOLD_NERR] = {
    [UF_MOLD_ERR_TRUNCATED_HEADER] = "truncated_header",
    [UF_MOLD_ERR_BLOCK_LENGTH_TRUNCATED] = "block_length_truncated",
    [UF_MOLD_ERR_BLOCK_OVERRUNS_PACKET] = "block_overruns_packet",
    [UF_MOLD_ERR_COUNT_MISMATCH] = "count_mismatch",
    [UF_MOLD_ERR_TRAILING_BYTES] = "trailing_bytes",
    [UF_MOLD_ERR_BAD_END_OF_SESSION] = "bad_end_of_session",
    [UF_MOLD_ERR_BAD_VERSION] = "bad_version",
    [UF_MOLD_ERR_WRONG_PROTOCOL_ID] = "wrong_protocol_id",
    [UF_MOLD_ERR_PAYLOAD_PAST_DATAGRAM] = "payload_length_past_datagram",
    [UF_MOLD_ERR_BAD_SEQUENCE] = "bad_sequence",
};

static const char *const file_names[UF_FILE_NERR] = {
    [UF_FILE_ERR_TRUNCATED_RECORD] = "truncated_record",
    [UF_FILE_ERR_TRUNCATED_FILE] = "truncated_file",
    [UF_FILE_ERR_IP_FRAGMENT] = "ip_fragment",
    [UF_FILE_ERR_BAD_IP_HEADER] = "bad_ip_header",
    [UF_FILE_ERR_BAD_UDP_LENGTH] = "bad_udp_length",
    [UF_FILE_ERR_UNRESOLVABLE_LENGTH] = "unresolvable_length",
};

static const char *const skip_names[UF_SKIP_N] = {
    [UF_SKIP_NON_IPV4] = "non_ipv4",
    [UF_SKIP_NON_UDP] = "non_udp",
    [UF_SKIP_OTHER_PORT] = "other_port",
};

const char *uf_mold_err_name(int kind)
{
	if (kind < 0 || kind >= UF_MOLD_NERR)
		return "unknown";
	return mold_names[kind];
}

static uint64_t emit(uf_counter_fn fn, void *ctx, const char *name, const uint64_t *v)
{
	uint64_t x = uf_load_relaxed_u64(v);
	if (fn)
		fn(ctx, name, x);
	return x;
}

uint64_t uf_decode_counters_foreach_error(const struct uf_decode_counters *c, uf_counter_fn fn,
                                          void *ctx)
{
	uint64_t total = 0;
	char name[32];
	for (int i = 0; i < UF_MOLD_NERR; i++)
		total += emit(fn, ctx, mold_names[i], &c->mold_err[i]);
	for (int i = 0; i < UF_ITCH_NTYPES; i++) {
		snprintf(name, sizeof(name), "bad_length_%c", UF_ITCH_TYPES[i]);
		total += emit(fn, ctx, name, &c->itch_bad_len[i]);
	}
	total += emit(fn, ctx, "unknown_type", &c->itch_unknown_type);
	total += emit(fn, ctx, "empty_message", &c->itch_empty);
	for (int i = 0; i < UF_FILE_NERR; i++)
		total += emit(fn, ctx, file_names[i], &c->file_err[i]);
	return total;
}

uint64_t uf_decode_counters_foreach_skipped(const struct uf_decode_counters *c, uf_counter_fn fn,
                                            void *ctx)
{
	uint64_t total = 0;
	for (int i = 0; i < UF_SKIP_N; i++)
		total += emit(fn, ctx, skip_names[i], &c->skipped[i]);
	return total;
}

void uf_decode_counters_foreach_stat(const struct uf_decode_counters *c, uf_counter_fn fn,
                                     void *ctx)
{
	char name[16];
	emit(fn, ctx, "packets", &c->packets);
	emit(fn, ctx, "heartbeats", &c->heartbeats);
	emit(fn, ctx, "end_of_session", &c->end_of_session);
	emit(fn, ctx, "messages", &c->messages);
	emit(fn, ctx, "bytes", &c->bytes);
	emit(fn, ctx, "gaps", &c->gaps);
	emit(fn, ctx, "zero_len_resolved", &c->zero_len_resolved);
	for (int i = 0; i < UF_ITCH_NTYPES; i++) {
		snprintf(name, sizeof(name), "type_%c", UF_ITCH_TYPES[i]);
		emit(fn, ctx, name, &c->by_type[i]);
	}
}

uint64_t uf_decode_counters_foreach_iex_error(const struct uf_decode_counters *c, uf_counter_fn fn,
                                              void *ctx)
{
	uint64_t total = 0;
	char name[32];
	for (int i = 0; i < UF_IEX_NTYPES; i++) {
		snprintf(name, sizeof(name), "iex_bad_length_%c", UF_IEX_TYPES[i]);
		total += emit(fn, ctx, name, &c->iex_bad_len[i]);
	}
	total += emit(fn, ctx, "iex_unknown_type", &c->iex_unknown_type);
	total += emit(fn, ctx, "iex_empty_message", &c->iex_empty);
	total += emit(fn, ctx, "iex_offset_mismatch", &c->iex_offset_mismatch);
	return total;
}

void uf_decode_counters_foreach_iex_stat(const struct uf_decode_counters *c, uf_counter_fn fn,
                                         void *ctx)
{
	char name[24];
	emit(fn, ctx, "iex_packets", &c->iex_packets);
	emit(fn, ctx, "iex_stream_restarts", &c->iex_stream_restarts);
	for (int i = 0; i < UF_IEX_NTYPES; i++) {
		snprintf(name, sizeof(name), "iex_type_%c", UF_IEX_TYPES[i]);
		emit(fn, ctx, name, &c->iex_by_type[i]);
	}
}

uint64_t uf_decode_counters_errors(const struct uf_decode_counters *c)
{
	return uf_decode_counters_foreach_error(c, NULL, NULL) +
	       uf_decode_counters_foreach_iex_error(c, NULL, NULL);
}

void uf_decode_counters_add(struct uf_decode_counters *dst, const struct uf_decode_counters *src)
{
	/* The struct is uint64_t fields only (asserted below): add it as an array. */
	_Static_assert(sizeof(*src) % sizeof(uint64_t) == 0, "counters are u64 only");
	uint64_t *d = (uint64_t *)dst;
	const uint64_t *s = (const uint64_t *)src;
	for (size_t i = 0; i < sizeof(*src) / sizeof(uint64_t); i++)
		d[i] += s[i];
}
