/* libFuzzer target over the IEX path: the input is one received IEX-TP datagram. It goes
 * through uf_iextp_open_proto (any protocol, DEEP only, TOPS only, chosen by the input's
 * length), the framing tables, the block iterator and the DEEP/TOPS decoder; the same bytes
 * are also decoded as one bare message. Any out-of-bounds read (ASan), undefined behaviour
 * (UBSan) or inconsistency between the paths aborts. Built only with clang and -DUF_FUZZ=ON. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "decode/uf_decode.h"

static const struct uf_framing *const framings[3] = {&uf_iextp_framing, &uf_iextp_deep_framing,
                                                     &uf_iextp_tops_framing};
static const uint16_t protos[3] = {0, UF_IEXTP_PROTO_DEEP, UF_IEXTP_PROTO_TOPS};

/* Decodes one message every way and checks they agree. */
static void check_msg(const uint8_t *m, size_t len, uint16_t proto, struct uf_decode_counters *c)
{
	struct uf_iex_msg d, e;
	int any = uf_iex_decode(m, len, &d);
	int one = uf_iex_decode_counted(proto, m, len, &e, c);
	if (any > 0) {
		if (d.len != uf_iex_msg_len(d.type) || d.raw != m || any != m[0])
			abort(); /* a delivered message always has its type's length */
		if (uf_iex_type_index(d.type) < 0)
			abort();
		if ((one > 0) != (proto == 0 || uf_iex_type_in_proto(d.type, proto)))
			abort(); /* the protocol filter removes exactly the other protocol's types
			          */
	} else if (one > 0 || (any != -EBADMSG && any != -ENOMSG)) {
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* Copy to an exact-size heap buffer so ASan sees one byte past the datagram. */
	uint8_t *buf = malloc(size ? size : 1);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	int which = (int)(size % 3);
	struct uf_decode_counters c;
	memset(&c, 0, sizeof(c));
	struct uf_frame f, g;
	int k = uf_iextp_open_counted(&f, buf, size, protos[which], &c);
	if (framings[which]->open(&g, buf, size) != k || g.err != f.err || g.kind != f.kind)
		abort(); /* the framing entry is the inline parser */
	if (k < 0 && (f.err >= UF_MOLD_NERR || c.mold_err[f.err] != 1))
		abort(); /* a refusal is counted once, under a named kind */
	if (k == UF_FRAME_DATA || k == UF_FRAME_HEARTBEAT) {
		if (f.seq < 1 || memchr(f.session, 0, sizeof(f.session)))
			abort(); /* accepted sequences are >= 1, sessions are rendered text */
		struct uf_frame_iter it;
		struct uf_frame_msg b;
		uint64_t blocks = 0;
		framings[which]->iter_init(&it, &f);
		while (framings[which]->iter_next(&it, &b)) {
			if (b.seq != f.seq + blocks || b.msg < buf || b.msg + b.len > buf + size)
				abort();
			blocks++;
			check_msg(b.msg, b.len, uf_iextp_protocol(&f), &c);
		}
		if (blocks != f.count)
			abort(); /* a validated segment yields exactly `count` blocks */
	} else if (k != -EBADMSG) {
		abort();
	}
	/* The bytes as one bare message, under each protocol. */
	check_msg(buf, size, protos[which], &c);
	free(buf);
	return 0;
}
