/* Unaligned big-endian loads and stores for wire formats (MoldUDP64 and ITCH are big-endian
 * and pack fields at odd offsets). memcpy compiles to one load plus bswap. */
#ifndef UF_ENDIAN_H
#define UF_ENDIAN_H

#include <stdint.h>
#include <string.h>

static inline uint16_t uf_be16(const uint8_t *p)
{
	uint16_t v;
	memcpy(&v, p, sizeof(v));
	return __builtin_bswap16(v);
}

static inline uint32_t uf_be32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, sizeof(v));
	return __builtin_bswap32(v);
}

static inline uint64_t uf_be64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, sizeof(v));
	return __builtin_bswap64(v);
}

/* ITCH timestamps are 6 bytes: nanoseconds since midnight. */
static inline uint64_t uf_be48(const uint8_t *p)
{
	return ((uint64_t)uf_be16(p) << 32) | uf_be32(p + 2);
}

static inline void uf_put_be16(uint8_t *p, uint16_t v)
{
	v = __builtin_bswap16(v);
	memcpy(p, &v, sizeof(v));
}

static inline void uf_put_be32(uint8_t *p, uint32_t v)
{
	v = __builtin_bswap32(v);
	memcpy(p, &v, sizeof(v));
}

static inline void uf_put_be64(uint8_t *p, uint64_t v)
{
	v = __builtin_bswap64(v);
	memcpy(p, &v, sizeof(v));
}

static inline void uf_put_be48(uint8_t *p, uint64_t v)
{
	uf_put_be16(p, (uint16_t)(v >> 32));
	uf_put_be32(p + 2, (uint32_t)v);
}

#endif /* UF_ENDIAN_H */
