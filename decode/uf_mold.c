/* MoldUDP64 packet building and the MoldUDP64 framing entry (the parser is inline in
 * uf_mold.h). */
#include "decode/uf_mold.h"

int uf_mold_builder_init(struct uf_mold_builder *b, uint8_t *buf, size_t cap,
                         const char session[UF_MOLD_SESSION_LEN], uint64_t seq)
{
	if (cap < UF_MOLD_HDR_LEN)
		return -EINVAL;
	b->buf = buf;
	b->cap = cap;
	b->len = UF_MOLD_HDR_LEN;
	b->count = 0;
	memcpy(buf, session, UF_MOLD_SESSION_LEN);
	uf_put_be64(buf + 10, seq);
	uf_put_be16(buf + 18, 0);
	return 0;
}

int uf_mold_builder_add(struct uf_mold_builder *b, const uint8_t *msg, size_t len)
{
	if (len > 0xFFFF)
		return -EMSGSIZE;
	if (b->count >= UF_MOLD_COUNT_END - 1)
		return -EOVERFLOW;
	if (b->cap - b->len < 2 + len)
		return -ENOSPC;
	uf_put_be16(b->buf + b->len, (uint16_t)len);
	if (len)
		memcpy(b->buf + b->len + 2, msg, len);
	b->len += 2 + len;
	b->count++;
	uf_put_be16(b->buf + 18, b->count);
	return 0;
}

static void build_header(uint8_t *out, const char *session, uint64_t seq, uint16_t count)
{
	memcpy(out, session, UF_MOLD_SESSION_LEN);
	uf_put_be64(out + 10, seq);
	uf_put_be16(out + 18, count);
}

void uf_mold_build_heartbeat(uint8_t out[UF_MOLD_HDR_LEN], const char session[UF_MOLD_SESSION_LEN],
                             uint64_t next_seq)
{
	build_header(out, session, next_seq, 0);
}

void uf_mold_build_end_of_session(uint8_t out[UF_MOLD_HDR_LEN],
                                  const char session[UF_MOLD_SESSION_LEN], uint64_t next_seq)
{
	build_header(out, session, next_seq, UF_MOLD_COUNT_END);
}

/* The framing interface over the inline parser: one call per datagram. */
static int uf_mold_framing_open(struct uf_frame *f, const uint8_t *buf, size_t len)
{
	return uf_mold_open(f, buf, len);
}

static size_t uf_mold_framing_request(uint8_t *out, const char session[UF_FRAME_SESSION_LEN],
                                      uint64_t seq, uint32_t count)
{
	_Static_assert(UF_MOLD_REREQUEST_LEN <= UF_FRAME_REQUEST_MAX, "a request fits");
	uf_mold_rerequest_build(out, session, seq, (uint16_t)count);
	return UF_MOLD_REREQUEST_LEN;
}

const struct uf_framing uf_mold_framing = {
    .name = "moldudp64",
    .max_count = UF_MOLD_COUNT_END - 1, /* 0xFFFF means end of session */
    .open = uf_mold_framing_open,
    .iter_init = uf_mold_iter_init,
    .iter_next = uf_mold_next,
    .request_build = uf_mold_framing_request,
    .request_parse = uf_mold_rerequest_parse,
};
