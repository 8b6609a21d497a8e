/* libFuzzer target over the packet decoder: the input is one received datagram. It goes
 * through uf_mold_open + the block iterator + the ITCH decoder (single and batch, with
 * prefetch), and the same bytes are also offered to the offline reader (daily or pcap).
 * Any out-of-bounds read (ASan), undefined behaviour (UBSan) or inconsistency between the
 * paths aborts. Built only with clang and -DUF_FUZZ=ON. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "decode/uf_decode.h"

static void count_msg(void *ctx, uint64_t seq, const struct uf_itch_msg *m)
{
	(*(uint64_t *)ctx)++;
	if (m->len != uf_itch_msg_len(m->type))
		abort(); /* a delivered message always has its type's length */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* Copy to an exact-size heap buffer so ASan sees one byte past the datagram. */
	uint8_t *buf = malloc(size ? size : 1);
	if (!buf)
		return 0;
	memcpy(buf, data, size);

	struct uf_decode_counters c1, c2;
	memset(&c1, 0, sizeof(c1));
	memset(&c2, 0, sizeof(c2));
	struct uf_frame pkt;
	uint64_t single = 0;
	int k = uf_mold_open_counted(&pkt, buf, size, &c1);
	if (k == UF_MOLD_DATA) {
		struct uf_frame_iter it;
		struct uf_frame_msg b;
		struct uf_itch_msg m;
		uint64_t blocks = 0;
		uf_mold_iter_init(&it, &pkt);
		while (uf_mold_next(&it, &b)) {
			if (b.seq != pkt.seq + blocks || b.msg < buf || b.msg + b.len > buf + size)
				abort();
			blocks++;
			if (uf_decode_msg_counted(b.msg, b.len, &m, &c1) == 0)
				single++;
		}
		if (blocks != pkt.count)
			abort(); /* a validated packet yields exactly `count` blocks */
	}
	/* The batch path must agree with the single path, at any prefetch distance. */
	struct uf_decode_pkt pk = {.data = buf, .len = (uint32_t)size};
	uint64_t batch = 0;
	if (size <= UINT32_MAX) {
		uf_decode_batch(&pk, 1, (unsigned)(size % 5), &c2, NULL, count_msg, &batch);
		if (batch != single || c2.messages != c1.messages)
			abort();
	}

	/* Offline reader over the same bytes (pcap or daily, or a clear refusal). */
	struct uf_reader r;
	if (uf_reader_open_mem(&r, buf, size, NULL) == 0) {
		struct uf_reader_msg rm;
		struct uf_itch_msg m;
		uint64_t guard = 0;
		while (uf_reader_next(&r, &rm) > 0 && guard++ < 1000000) {
			/* r.base is buf, or the inflated copy of a gzip input */
			if (rm.msg < r.base || rm.msg + rm.len > r.base + r.size)
				abort();
			uf_decode_msg_counted(rm.msg, rm.len, &m, r.c);
		}
		uf_reader_close(&r);
	} else if (r.err[0] == 0) {
		abort(); /* a refusal always says why */
	}
	free(buf);
	return 0;
}
