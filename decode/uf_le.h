/* Unaligned little-endian loads and stores for wire formats that are little-endian (IEX-TP,
 * DEEP and TOPS): the mirror of common/uf_endian.h's big-endian helpers. On a little-endian
 * host memcpy compiles to one plain load; a big-endian host swaps. */
#ifndef UF_LE_H
#define UF_LE_H

#include <stdint.h>
#include <string.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define UF_LE_SWAP16(v) __builtin_bswap16(v)
#define UF_LE_SWAP32(v) __builtin_bswap32(v)
#define UF_LE_SWAP64(v) __builtin_bswap64(v)
#else
#define UF_LE_SWAP16(v) (v)
#define UF_LE_SWAP32(v) (v)
#define UF_LE_SWAP64(v) (v)
#endif

static inline uint16_t uf_le16(const uint8_t *p)
{
	uint16_t v;
	memcpy(&v, p, sizeof(v));
	return UF_LE_SWAP16(v);
}

static inline uint32_t uf_le32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, sizeof(v));
	return UF_LE_SWAP32(v);
}

static inline uint64_t uf_le64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, sizeof(v));
	return UF_LE_SWAP64(v);
}

/* Signed 8-byte fields (IEX prices, timestamps, sequence numbers): two's complement. */
static inline int64_t uf_le64s(const uint8_t *p)
{
	return (int64_t)uf_le64(p);
}

static inline void uf_put_le16(uint8_t *p, uint16_t v)
{
	v = UF_LE_SWAP16(v);
	memcpy(p, &v, sizeof(v));
}

static inline void uf_put_le32(uint8_t *p, uint32_t v)
{
	v = UF_LE_SWAP32(v);
	memcpy(p, &v, sizeof(v));
}

static inline void uf_put_le64(uint8_t *p, uint64_t v)
{
	v = UF_LE_SWAP64(v);
	memcpy(p, &v, sizeof(v));
}

#endif /* UF_LE_H */
