/* MoldUDP64 packet building (the parser is inline in uf_mold.h). */
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
