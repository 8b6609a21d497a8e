/* SoupBinTCP 3.00 codec and GLIMPSE 5.0 End of Snapshot (see uf_soup.h). */
#include "decode/uf_soup.h"

#include <string.h>

#include "common/uf_endian.h"

static const char *const uf_soup_err_names[UF_SOUP_NERR] = {
    [UF_SOUP_ERR_ZERO_LENGTH] = "zero_length",
    [UF_SOUP_ERR_TOO_LONG] = "too_long",
    [UF_SOUP_ERR_UNKNOWN_TYPE] = "unknown_type",
    [UF_SOUP_ERR_WRONG_DIRECTION] = "wrong_direction",
    [UF_SOUP_ERR_BAD_LENGTH] = "bad_length",
    [UF_SOUP_ERR_BAD_NUMBER] = "bad_number",
    [UF_SOUP_ERR_BAD_ALPHA] = "bad_alpha",
    [UF_SOUP_ERR_BAD_REJECT_CODE] = "bad_reject_code",
    [UF_SOUP_ERR_TRUNCATED] = "truncated",
    [UF_SOUP_ERR_BAD_SNAPSHOT_END] = "bad_snapshot_end",
};

const char *uf_soup_err_name(unsigned kind)
{
	return kind < UF_SOUP_NERR ? uf_soup_err_names[kind] : NULL;
}

int uf_soup_type_index(uint8_t type)
{
	const char *p = type ? strchr(UF_SOUP_TYPES, type) : NULL;
	return p ? (int)(p - UF_SOUP_TYPES) : -1;
}

/* Payload length a fixed-size type must have, -1 for the variable ones (+ S U). */
static int uf_soup_fixed_len(uint8_t type)
{
	switch (type) {
	case 'A':
		return UF_SOUP_LOGIN_ACCEPTED_PAYLOAD;
	case 'J':
		return 1;
	case 'L':
		return UF_SOUP_LOGIN_REQUEST_PAYLOAD;
	case 'H':
	case 'Z':
	case 'R':
	case 'O':
		return 0;
	default:
		return -1;
	}
}

static int uf_soup_dir_ok(uint8_t type, enum uf_soup_dir dir)
{
	if (type == '+')
		return 1;
	if (dir == UF_SOUP_FROM_SERVER)
		return strchr("AJSHZ", type) != NULL;
	return strchr("LURO", type) != NULL;
}

int uf_soup_parse_number(const uint8_t *p, size_t len, uint64_t *out)
{
	size_t i = 0;
	size_t end = len;
	uint64_t v = 0;

	/* Padding on either side: servers differ (SoupBinTCP specifies right-justified, a GLIMPSE
	 * dissector types the field alphanumeric, left-justified); both carry the same number. */
	while (i < len && p[i] == ' ')
		i++;
	while (end > i && p[end - 1] == ' ')
		end--;
	if (i == end)
		return -EINVAL; /* blank: no number at all */
	for (; i < end; i++) {
		if (p[i] < '0' || p[i] > '9')
			return -EINVAL; /* letters, signs, NULs and spaces inside the digits */
		uint64_t d = (uint64_t)(p[i] - '0');
		if (v > (UINT64_MAX - d) / 10)
			return -EINVAL;
		v = v * 10 + d;
	}
	*out = v;
	return 0;
}

/* Printable ASCII, and once padding starts only padding (left-justified). */
static int uf_soup_alpha_ok(const uint8_t *p, size_t len)
{
	int pad = 0;

	for (size_t i = 0; i < len; i++) {
		if (p[i] < 0x20 || p[i] > 0x7e)
			return 0;
		if (p[i] == ' ')
			pad = 1;
		else if (pad)
			return 0;
	}
	return 1;
}

static int uf_soup_refuse(struct uf_soup_packet *pk, enum uf_soup_err e)
{
	pk->err = (uint8_t)e;
	return -EBADMSG;
}

int uf_soup_parse(const uint8_t *p, size_t avail, enum uf_soup_dir dir, size_t max_packet,
                  struct uf_soup_packet *pk)
{
	if (avail < UF_SOUP_LEN_FIELD)
		return 0;
	size_t len = uf_be16(p); /* type + payload */
	if (len == 0)
		return uf_soup_refuse(pk, UF_SOUP_ERR_ZERO_LENGTH);
	if (UF_SOUP_LEN_FIELD + len > max_packet)
		return uf_soup_refuse(pk, UF_SOUP_ERR_TOO_LONG);
	if (avail < UF_SOUP_HDR_LEN)
		return 0;
	uint8_t type = p[2];
	if (uf_soup_type_index(type) < 0)
		return uf_soup_refuse(pk, UF_SOUP_ERR_UNKNOWN_TYPE);
	if (!uf_soup_dir_ok(type, dir))
		return uf_soup_refuse(pk, UF_SOUP_ERR_WRONG_DIRECTION);
	/* A fixed-size type is judged by its length field, before its bytes arrive. */
	int fixed = uf_soup_fixed_len(type);
	if (fixed >= 0 && len - 1 != (size_t)fixed)
		return uf_soup_refuse(pk, UF_SOUP_ERR_BAD_LENGTH);
	if (avail < UF_SOUP_LEN_FIELD + len)
		return 0;

	const uint8_t *pl = p + UF_SOUP_HDR_LEN;
	pk->type = type;
	pk->err = 0;
	pk->payload_len = (uint16_t)(len - 1);
	pk->wire_len = (uint32_t)(UF_SOUP_LEN_FIELD + len);
	pk->payload = pl;
	switch (type) {
	case 'A':
		if (!uf_soup_alpha_ok(pl, UF_SOUP_SESSION_LEN))
			return uf_soup_refuse(pk, UF_SOUP_ERR_BAD_ALPHA);
		if (uf_soup_parse_number(pl + UF_SOUP_SESSION_LEN, UF_SOUP_SEQ_LEN,
		                         &pk->u.accepted.seq) < 0)
			return uf_soup_refuse(pk, UF_SOUP_ERR_BAD_NUMBER);
		memcpy(pk->u.accepted.session, pl, UF_SOUP_SESSION_LEN);
		break;
	case 'J':
		if (pl[0] != UF_SOUP_REJECT_NOT_AUTHORIZED && pl[0] != UF_SOUP_REJECT_NO_SESSION)
			return uf_soup_refuse(pk, UF_SOUP_ERR_BAD_REJECT_CODE);
		pk->u.rejected.reason = pl[0];
		break;
	case 'L': {
		const uint8_t *user = pl, *pass = user + UF_SOUP_USERNAME_LEN;
		const uint8_t *sess = pass + UF_SOUP_PASSWORD_LEN,
		              *seq = sess + UF_SOUP_SESSION_LEN;
		if (!uf_soup_alpha_ok(user, UF_SOUP_USERNAME_LEN) ||
		    !uf_soup_alpha_ok(pass, UF_SOUP_PASSWORD_LEN) ||
		    !uf_soup_alpha_ok(sess, UF_SOUP_SESSION_LEN))
			return uf_soup_refuse(pk, UF_SOUP_ERR_BAD_ALPHA);
		if (uf_soup_parse_number(seq, UF_SOUP_SEQ_LEN, &pk->u.login.seq) < 0)
			return uf_soup_refuse(pk, UF_SOUP_ERR_BAD_NUMBER);
		memcpy(pk->u.login.username, user, UF_SOUP_USERNAME_LEN);
		memcpy(pk->u.login.password, pass, UF_SOUP_PASSWORD_LEN);
		memcpy(pk->u.login.session, sess, UF_SOUP_SESSION_LEN);
		break;
	}
	default:
		break;
	}
	return (int)pk->wire_len;
}

int uf_soup_put_number(uint8_t *out, size_t len, uint64_t v)
{
	size_t i = len;

	do {
		if (i == 0)
			return -EINVAL;
		out[--i] = (uint8_t)('0' + v % 10);
		v /= 10;
	} while (v);
	memset(out, ' ', i);
	return 0;
}

int uf_soup_put_alpha(uint8_t *out, size_t len, const char *s)
{
	size_t n = strlen(s);

	if (n > len || !uf_soup_alpha_ok((const uint8_t *)s, n))
		return -EINVAL;
	memcpy(out, s, n);
	memset(out + n, ' ', len - n);
	return 0;
}

int uf_soup_build_header(uint8_t *out, uint8_t type, size_t payload_len)
{
	if (payload_len + 1 > 0xFFFF)
		return -EINVAL;
	uf_put_be16(out, (uint16_t)(payload_len + 1));
	out[2] = type;
	return UF_SOUP_HDR_LEN;
}

int uf_soup_build(uint8_t *out, size_t cap, uint8_t type, const void *payload, size_t len)
{
	if (len + 1 > 0xFFFF)
		return -EINVAL;
	if (cap < UF_SOUP_HDR_LEN + len)
		return -ENOSPC;
	uf_soup_build_header(out, type, len);
	if (len)
		memmove(out + UF_SOUP_HDR_LEN, payload, len);
	return (int)(UF_SOUP_HDR_LEN + len);
}

int uf_soup_build_login_accepted(uint8_t *out, const char *session, uint64_t seq)
{
	uint8_t *pl = out + UF_SOUP_HDR_LEN;

	if (uf_soup_put_alpha(pl, UF_SOUP_SESSION_LEN, session) < 0 ||
	    uf_soup_put_number(pl + UF_SOUP_SESSION_LEN, UF_SOUP_SEQ_LEN, seq) < 0)
		return -EINVAL;
	uf_soup_build_header(out, 'A', UF_SOUP_LOGIN_ACCEPTED_PAYLOAD);
	return UF_SOUP_HDR_LEN + UF_SOUP_LOGIN_ACCEPTED_PAYLOAD;
}

int uf_soup_build_login_rejected(uint8_t *out, uint8_t reason)
{
	if (reason != UF_SOUP_REJECT_NOT_AUTHORIZED && reason != UF_SOUP_REJECT_NO_SESSION)
		return -EINVAL;
	uf_soup_build_header(out, 'J', 1);
	out[UF_SOUP_HDR_LEN] = reason;
	return UF_SOUP_HDR_LEN + 1;
}

int uf_soup_build_login_request(uint8_t *out, const char *username, const char *password,
                                const char *session, uint64_t seq)
{
	uint8_t *pl = out + UF_SOUP_HDR_LEN;
	uint8_t *pass = pl + UF_SOUP_USERNAME_LEN, *sess = pass + UF_SOUP_PASSWORD_LEN;

	if (uf_soup_put_alpha(pl, UF_SOUP_USERNAME_LEN, username) < 0 ||
	    uf_soup_put_alpha(pass, UF_SOUP_PASSWORD_LEN, password) < 0 ||
	    uf_soup_put_alpha(sess, UF_SOUP_SESSION_LEN, session) < 0 ||
	    uf_soup_put_number(sess + UF_SOUP_SESSION_LEN, UF_SOUP_SEQ_LEN, seq) < 0)
		return -EINVAL;
	uf_soup_build_header(out, 'L', UF_SOUP_LOGIN_REQUEST_PAYLOAD);
	return UF_SOUP_HDR_LEN + UF_SOUP_LOGIN_REQUEST_PAYLOAD;
}

/* ---- stream ---- */

int uf_soup_stream_init(struct uf_soup_stream *s, uint8_t *buf, size_t cap, enum uf_soup_dir dir,
                        size_t max_packet)
{
	if (max_packet < UF_SOUP_HDR_LEN || max_packet > UF_SOUP_MAX_PACKET || cap < max_packet)
		return -EINVAL;
	memset(s, 0, sizeof(*s));
	s->buf = buf;
	s->cap = cap;
	s->max_packet = max_packet;
	s->dir = (uint8_t)dir;
	return 0;
}

void uf_soup_stream_reset(struct uf_soup_stream *s)
{
	s->head = s->tail = 0;
	s->failed = 0;
	s->last_err = 0;
}

uint8_t *uf_soup_stream_space(struct uf_soup_stream *s, size_t *room)
{
	if (s->head == s->tail) {
		s->head = s->tail = 0; /* nothing pending: start over at no cost */
	} else if (s->cap - s->tail < s->max_packet && s->head > 0) {
		/* Not enough room behind for the longest packet: move the unfinished tail. */
		memmove(s->buf, s->buf + s->head, s->tail - s->head);
		s->tail -= s->head;
		s->head = 0;
	}
	*room = s->failed ? 0 : s->cap - s->tail;
	return s->buf + s->tail;
}

void uf_soup_stream_commit(struct uf_soup_stream *s, size_t n)
{
	s->tail += n;
}

int uf_soup_stream_next(struct uf_soup_stream *s, struct uf_soup_packet *pk)
{
	if (s->failed)
		return -EBADMSG;
	int rc = uf_soup_parse(s->buf + s->head, s->tail - s->head, (enum uf_soup_dir)s->dir,
	                       s->max_packet, pk);
	if (rc > 0) {
		s->head += (size_t)rc;
		s->c.packets[uf_soup_type_index(pk->type)]++;
		s->c.bytes += (uint64_t)rc;
		return 1;
	}
	if (rc < 0) {
		s->failed = 1;
		s->last_err = pk->err;
		s->c.errors[pk->err]++;
		return -EBADMSG;
	}
	return 0;
}

int uf_soup_stream_end(struct uf_soup_stream *s)
{
	if (s->failed || s->head == s->tail)
		return s->failed ? -EBADMSG : 0;
	s->failed = 1;
	s->last_err = UF_SOUP_ERR_TRUNCATED;
	s->c.errors[UF_SOUP_ERR_TRUNCATED]++;
	return -EBADMSG;
}

/* ---- GLIMPSE 5.0 ---- */

int uf_glimpse_end_of_snapshot(const uint8_t *msg, size_t len, uint64_t *next_seq)
{
	if (len < 1 || msg[0] != UF_GLIMPSE_END_OF_SNAPSHOT)
		return 0;
	if (len != UF_GLIMPSE_END_OF_SNAPSHOT_LEN ||
	    uf_soup_parse_number(msg + 1, UF_SOUP_SEQ_LEN, next_seq) < 0)
		return -EBADMSG;
	return 1;
}

int uf_glimpse_build_end_of_snapshot(uint8_t *out, uint64_t next_seq)
{
	out[0] = UF_GLIMPSE_END_OF_SNAPSHOT;
	uf_soup_put_number(out + 1, UF_SOUP_SEQ_LEN, next_seq); /* 20 digits hold any u64 */
	return UF_GLIMPSE_END_OF_SNAPSHOT_LEN;
}
