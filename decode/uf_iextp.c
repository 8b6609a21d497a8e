/* IEX-TP segment building and the IEX-TP framing entries (the parser is inline in
 * uf_iextp.h). */
#include "decode/uf_iextp.h"

void uf_iextp_write_header(uint8_t out[UF_IEXTP_HDR_LEN], const struct uf_iextp_hdr *h)
{
	out[0] = h->version;
	out[1] = h->reserved;
	uf_put_le16(out + 2, h->protocol_id);
	uf_put_le32(out + 4, h->channel_id);
	uf_put_le32(out + 8, h->session_id);
	uf_put_le16(out + 12, h->payload_len);
	uf_put_le16(out + 14, h->count);
	uf_put_le64(out + 16, (uint64_t)h->stream_offset);
	uf_put_le64(out + 24, (uint64_t)h->first_seq);
	uf_put_le64(out + 32, (uint64_t)h->send_time);
}

int uf_iextp_builder_init(struct uf_iextp_builder *b, uint8_t *buf, size_t cap,
                          const struct uf_iextp_hdr *h)
{
	if (cap < UF_IEXTP_HDR_LEN)
		return -EINVAL;
	struct uf_iextp_hdr z = *h;
	z.payload_len = 0;
	z.count = 0;
	b->buf = buf;
	b->cap = cap;
	b->len = UF_IEXTP_HDR_LEN;
	b->count = 0;
	uf_iextp_write_header(buf, &z);
	return 0;
}

int uf_iextp_builder_add(struct uf_iextp_builder *b, const uint8_t *msg, size_t len)
{
	if (len > 0xFFFF)
		return -EMSGSIZE;
	if (b->count == UF_IEXTP_MAX_COUNT || b->len - UF_IEXTP_HDR_LEN + 2 + len > 0xFFFF)
		return -EOVERFLOW;
	if (b->cap - b->len < 2 + len)
		return -ENOSPC;
	uf_put_le16(b->buf + b->len, (uint16_t)len);
	if (len)
		memcpy(b->buf + b->len + 2, msg, len);
	b->len += 2 + len;
	b->count++;
	uf_put_le16(b->buf + 12, (uint16_t)(b->len - UF_IEXTP_HDR_LEN));
	uf_put_le16(b->buf + 14, b->count);
	return 0;
}

static int iextp_open_any(struct uf_frame *f, const uint8_t *buf, size_t len)
{
	return uf_iextp_open_proto(f, buf, len, 0);
}

static int iextp_open_deep(struct uf_frame *f, const uint8_t *buf, size_t len)
{
	return uf_iextp_open_proto(f, buf, len, UF_IEXTP_PROTO_DEEP);
}

static int iextp_open_tops(struct uf_frame *f, const uint8_t *buf, size_t len)
{
	return uf_iextp_open_proto(f, buf, len, UF_IEXTP_PROTO_TOPS);
}

/* No request_build: see uf_iextp.h. max_count is what one segment can carry. */
const struct uf_framing uf_iextp_framing = {
    .name = "iex-tp",
    .max_count = UF_IEXTP_MAX_COUNT,
    .open = iextp_open_any,
    .iter_init = uf_iextp_iter_init,
    .iter_next = uf_iextp_next,
};

const struct uf_framing uf_iextp_deep_framing = {
    .name = "iex-tp-deep",
    .max_count = UF_IEXTP_MAX_COUNT,
    .open = iextp_open_deep,
    .iter_init = uf_iextp_iter_init,
    .iter_next = uf_iextp_next,
};

const struct uf_framing uf_iextp_tops_framing = {
    .name = "iex-tp-tops",
    .max_count = UF_IEXTP_MAX_COUNT,
    .open = iextp_open_tops,
    .iter_init = uf_iextp_iter_init,
    .iter_next = uf_iextp_next,
};
