/* The compact form of DATA records (see nats_codec.h). */
#include "ring/nats/nats_codec.h"

#include <string.h>

size_t uf_nats_compact_encode(const struct uf_record *recs, uint32_t n, unsigned char *out)
{
	uint64_t prev[8] = {0};
	size_t o = 0;

	for (uint32_t i = 0; i < n; i++) {
		uint64_t w[8];
		unsigned char *counts = out + o;

		memcpy(w, &recs[i], sizeof(w));
		o += 4;
		memset(counts, 0, 4);
		for (int k = 0; k < 8; k++) {
			uint64_t x = w[k] ^ prev[k];
			unsigned nb = x ? (unsigned)(64 - __builtin_clzll(x) + 7) / 8 : 0;
			counts[k / 2] |= (unsigned char)(nb << (4 * (k & 1)));
			/* all 8 bytes written, nb kept: a record never writes past its own
			 * UF_NATS_COMPACT_MAX bytes (4 + 7 words of at most 8 + these 8) */
			memcpy(out + o, &x, sizeof(x));
			o += nb;
			prev[k] = w[k];
		}
	}
	return o;
}

int uf_nats_compact_next(const unsigned char *in, size_t len, size_t *off, struct uf_record *prev)
{
	uint64_t w[8];
	size_t base = *off, p;

	if (base > len || len - base < 4)
		return -1;
	p = base + 4; /* the counts first, then the bytes of each word */
	memcpy(w, prev, sizeof(w));
	for (int k = 0; k < 8; k++) {
		unsigned nb = (in[base + k / 2] >> (4 * (k & 1))) & 0xfu;
		uint64_t x = 0;
		if (nb > 8 || len - p < nb)
			return -1;
		if (len - p >= sizeof(x)) { /* one load, the bytes past nb masked off */
			memcpy(&x, in + p, sizeof(x));
			if (nb < 8)
				x &= (1ull << (8 * nb)) - 1;
		} else {
			for (unsigned b = 0; b < nb; b++)
				x |= (uint64_t)in[p + b] << (8 * b);
		}
		w[k] ^= x;
		p += nb;
	}
	*off = p;
	memcpy(prev, w, sizeof(w));
	return 0;
}

int uf_nats_compact_check(const unsigned char *in, size_t len, uint32_t n)
{
	size_t p = 0;

	for (uint32_t i = 0; i < n; i++) {
		uint32_t c, sum = 0;
		if (p > len || len - p < 4)
			return -1;
		memcpy(&c, in + p, sizeof(c));
		for (int k = 0; k < 8; k++) {
			uint32_t nb = (c >> (4 * k)) & 0xfu;
			if (nb > 8)
				return -1;
			sum += nb;
		}
		p += 4 + sum;
	}
	return p == len ? 0 : -1;
}

int uf_nats_compact_decode(const unsigned char *in, size_t len, uint32_t n, struct uf_record *out)
{
	struct uf_record prev;
	size_t off = 0;

	memset(&prev, 0, sizeof(prev));
	for (uint32_t i = 0; i < n; i++) {
		if (uf_nats_compact_next(in, len, &off, &prev) < 0)
			return -1;
		out[i] = prev;
	}
	return off == len ? 0 : -1;
}
