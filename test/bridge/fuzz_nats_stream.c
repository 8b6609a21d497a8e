/* libFuzzer target over the remote consumer's handling of NATS messages (ring/nats/
 * nats_stream.c): the input is a run of messages as any client allowed to publish on the
 * record subject could send, each with its own stream sequence, id and what the fake stream
 * and bucket answer (nats_stream_fake.h). Whatever comes, the state must stay coherent: the
 * tail never moves back, every record below it that is held sits in its slot, the skipped
 * ranges are ordered and bounded, a refused message changes nothing but the count, and
 * nothing crashes, leaks or reads out of bounds. Built only with clang and -DUF_FUZZ=ON.
 *
 * Each message: 1 control byte (bit 0 a header of the bridge's form, bit 1 a matching
 * Nats-Msg-Id, bit 2 the stream lost messages, bit 3 the commit says closed, bit 4 the
 * bucket fails, bit 5 the commit moves to the message's resume point, bits 6-7 stream
 * sequence step), 1 byte kind, 1 byte record count (0..7), 1 byte first-sequence mode (bits
 * 0-1; bit 2 the records sent in the compact form of wire version 2 (nats_codec.h), bit 3
 * with the compact bytes then cut or lengthened by the sequence's bits 8-10; bit 4 a shared
 * key set, bit 5 the message signed with it, bit 6 with another key), then 8 bytes of
 * sequence, then the records' bytes as they come. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "nats_stream_fake.h"
#include "ring/nats/nats_codec.h"

#define GEN 3

static void check(const struct uf_nats_stream *s, uint64_t tail_before)
{
	if (s->tail < tail_before || s->njumps > UF_NATS_JUMPS)
		abort();
	for (uint32_t i = 0; i < s->njumps; i++) {
		if (s->jumps[i].from > s->jumps[i].to || s->jumps[i].to > s->tail)
			abort();
		if (i && s->jumps[i].from < s->jumps[i - 1].to)
			abort();
	}
	if (s->tail > s->base && s->seqs[(s->tail - 1) & s->mask] != s->tail - 1 &&
	    !(s->njumps && s->jumps[s->njumps - 1].to == s->tail))
		abort(); /* the last record held is where the tail says, unless a jump ended there
		          */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static unsigned char
	    msg[sizeof(struct uf_nats_msg) + 8 * UF_NATS_COMPACT_MAX + 8 + UF_NATS_MAC_LEN];
	static struct uf_nats_key key = {.len = 20}, other = {.len = 20};
	struct fake_world w;
	struct uf_nats_stream s;
	struct uf_nats_stream_hooks hk;
	uint64_t sseq = 1;
	size_t off = 0;

	memset(&w, 0, sizeof(w));
	w.first_sseq = 1;
	w.max = 8;
	w.cm.magic = UF_NATS_COMMIT_MAGIC;
	w.cm.version = UF_NATS_VERSION;
	w.cm.generation = GEN;
	w.cm.position = 5;
	w.cm.js_from = 1;
	w.cm.max_instruments = 8;
	if (fake_begin(&s, &hk, &w) < 0)
		abort();
	memset(key.k, 0x11, key.len);
	memset(other.k, 0x22, other.len);
	while (size - off >= 12) {
		const uint8_t *p = data + off;
		uint8_t ctl = p[0], kind = p[1] % 7;
		uint32_t count = p[2] % 8;
		uint64_t v, first, before = s.tail, forged = s.forged;
		char id[UF_NATS_MSG_ID_MAX];
		size_t len, have;
		int closed = s.closed;
		uint32_t pend_n;

		memcpy(&v, p + 4, 8);
		off += 12;
		switch (p[3] % 4) { /* near the tail most of the time: that is where bugs hide */
		case 0:
			first = s.tail + (v % 4);
			break;
		case 1:
			first = s.tail > (v % 16) ? s.tail - (v % 16) : 0;
			break;
		case 2:
			first = s.tail + (v % 100000);
			break;
		default:
			first = v;
			break;
		}
		len = fake_msg(msg, id, (ctl & 0x80) && (ctl & 0x40) ? GEN + 1 : GEN, kind, first,
		               first + (v >> 48), count);
		have = size - off < count * sizeof(struct uf_record)
		           ? size - off
		           : count * sizeof(struct uf_record);
		memcpy(msg + sizeof(struct uf_nats_msg), data + off,
		       have); /* the records as given */
		off += have;
		if (!(ctl & 1))
			memcpy(msg, data + off - have - 12,
			       12 < len ? 12 : len); /* a header of junk */
		sseq += (uint64_t)((ctl >> 6) & 3);
		w.first_sseq = (ctl & 4) ? sseq : 1;
		w.cm.flags = (ctl & 8) ? UF_NATS_COMMIT_CLOSED : 0;
		w.load_rc = (ctl & 16) ? -EIO : 0;
		if (ctl & 32)
			w.cm.position = kind == UF_NATS_LAP ? first + (v >> 48) : first;
		if ((ctl & 0xc0) == 0xc0)
			w.cm.generation = GEN + 1;
		if (have != count * sizeof(struct uf_record))
			len = sizeof(struct uf_nats_msg) + have;
		if (p[3] & 0x04) { /* version 2: the records as given, compact (junk header kept) */
			struct uf_record recs[8];
			size_t clen, cut = (size_t)((v >> 8) & 7);
			memset(recs, 0, sizeof(recs));
			memcpy(recs, msg + sizeof(struct uf_nats_msg), have);
			clen =
			    uf_nats_compact_encode(recs, count, msg + sizeof(struct uf_nats_msg));
			if (p[3] & 0x08) { /* a compact payload that does not end where it should */
				if (cut < 4) {
					clen = clen > cut ? clen - cut : 0;
				} else {
					memset(msg + sizeof(struct uf_nats_msg) + clen,
					       (int)(v >> 16), cut - 3);
					clen += cut - 3;
				}
			}
			if (ctl & 1)
				msg[offsetof(struct uf_nats_msg, version)] =
				    UF_NATS_VERSION_COMPACT;
			len = sizeof(struct uf_nats_msg) + clen;
		}
		s.key = (p[3] & 0x10) ? &key : NULL;
		if (p[3] & 0x60) {
			if (uf_nats_mac((p[3] & 0x20) ? &key : &other, "seq", msg, len, msg + len) <
			    0)
				abort();
			len += UF_NATS_MAC_LEN;
		}
		/* a pending close settles against the world as it is now, before the message */
		(void)uf_nats_stream_idle(&s, &hk);
		before = s.tail;
		forged = s.forged;
		closed = s.closed;
		pend_n = s.close_pending_n;
		int rc = uf_nats_stream_on_msg(&s, &hk, msg, len, (ctl & 2) ? id : "x", sseq);
		check(&s, before);
		if ((s.tail != before || s.closed != closed) && s.forged - forged > pend_n)
			abort(); /* a refused message changed the stream (only a pending close that
			          * records proved no end may be counted with a change) */
		if (s.key && !(p[3] & 0x20) && (s.tail != before || s.closed != closed))
			abort(); /* with the key, only what it signed moves the stream */
		if (rc == 1)
			break;
		sseq++;
	}
	fake_end(&s);
	return 0;
}
