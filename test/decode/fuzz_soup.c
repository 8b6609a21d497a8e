/* libFuzzer target over the SoupBinTCP stream parser: the input's first byte picks the
 * direction, the packet limit and how the rest is cut into reads; the rest is the TCP byte
 * stream. The stream parser (reads of random sizes into a buffer no larger than one packet,
 * so the unfinished tail is moved often) must hand out exactly the packets that one-shot
 * uf_soup_parse finds walking the whole input, with the same bytes, and refuse at the same
 * packet with the same kind. Built only with clang and -DUF_FUZZ=ON. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "decode/uf_decode.h"

#define MAXP 4096

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	enum uf_soup_dir dir = (data[0] & 1) ? UF_SOUP_FROM_CLIENT : UF_SOUP_FROM_SERVER;
	size_t max_packet = 3 + (size_t)(data[0] >> 1) * 8; /* 3 .. 1019 */
	uint32_t rng = data[0] * 2654435761u + 1;
	const uint8_t *in = data + 1;
	size_t n = size - 1;

	/* One shot over the whole input. */
	size_t off[MAXP], plen[MAXP], count = 0, pos = 0;
	int end_err = -1; /* refusal kind, -1 when the input just ends */
	struct uf_soup_packet pk;
	while (count < MAXP) {
		int rc = uf_soup_parse(in + pos, n - pos, dir, max_packet, &pk);
		if (rc == 0)
			break;
		if (rc < 0) {
			end_err = pk.err;
			break;
		}
		off[count] = (size_t)(pk.payload - in);
		plen[count] = pk.payload_len;
		if (pk.payload != in + pos + 3 || (size_t)rc != 3u + pk.payload_len)
			abort();
		count++;
		pos += (size_t)rc;
	}
	if (count == MAXP)
		return 0;

	/* Streamed in random reads. */
	uint8_t *buf = malloc(max_packet);
	struct uf_soup_stream s;
	if (!buf || uf_soup_stream_init(&s, buf, max_packet, dir, max_packet) < 0)
		abort();
	size_t fed = 0, got = 0;
	int failed = 0;
	while (fed < n && !failed) {
		size_t room;
		uint8_t *w = uf_soup_stream_space(&s, &room);
		if (room == 0)
			abort(); /* a packet in progress always fits */
		rng = rng * 1103515245u + 12345u;
		size_t k = 1 + (rng >> 8) % room;
		if (k > n - fed)
			k = n - fed;
		memcpy(w, in + fed, k);
		uf_soup_stream_commit(&s, k);
		fed += k;
		int rc;
		while ((rc = uf_soup_stream_next(&s, &pk)) == 1) {
			if (got >= count || pk.payload_len != plen[got] ||
			    memcmp(pk.payload, in + off[got], plen[got]) != 0)
				abort();
			got++;
		}
		if (rc < 0) {
			if (end_err < 0 || got != count || s.last_err != end_err)
				abort();
			failed = 1;
		}
	}
	if (!failed) {
		if (end_err >= 0 && fed == n)
			abort(); /* one-shot refused, the stream never did */
		int rc = uf_soup_stream_end(&s);
		if (got != count || (rc < 0) != (pos < n))
			abort();
	}
	uint64_t sum = 0;
	for (int i = 0; i < UF_SOUP_NTYPES; i++)
		sum += s.c.packets[i];
	if (sum != got)
		abort();
	free(buf);
	return 0;
}
