/* Unaligned byte-order loads and stores for wire formats, both orders in one place: big-endian
 * (MoldUDP64 and ITCH pack fields at odd offsets in network order) and little-endian (IEX-TP,
 * DEEP and TOPS). memcpy compiles to one plain load; the host's order decides which of the two
 * needs a bswap, so the rule lives here once and every decoder calls uf_be* / uf_le*. */
#ifndef UF_ENDIAN_H
#define UF_ENDIAN_H

#include <stdint.h>
#include <string.h>

/* Host order -> big-endian (UF_BE_SWAP*) and -> little-endian (UF_LE_SWAP*): each swap is its
 * own inverse, so one macro serves both loads and stores. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define UF_BE_SWAP16(v) (v)
#define UF_BE_SWAP32(v) (v)
#define UF_BE_SWAP64(v) (v)
#define UF_LE_SWAP16(v) __builtin_bswap16(v)
#define UF_LE_SWAP32(v) __builtin_bswap32(v)
#define UF_LE_SWAP64(v) __builtin_bswap64(v)
#else
#define UF_BE_SWAP16(v) __builtin_bswap16(v)
#define UF_BE_SWAP32(v) __builtin_bswap32(v)
#define UF_BE_SWAP64(v) __builtin_bswap64(v)
#define UF_LE_SWAP16(v) (v)
#define UF_LE_SWAP32(v) (v)
#define UF_LE_SWAP64(v) (v)
#endif

/* The loads and stores of one width in one order, written once: memcpy (one unaligned load
 * or store: wire fields sit at odd offsets), then that order's swap. */
#define UF_ENDIAN_ACCESSORS(order, ORDER, bits)                                                    \
	static inline uint##bits##_t uf_##order##bits(const uint8_t *p)                            \
	{                                                                                          \
		uint##bits##_t v;                                                                  \
		memcpy(&v, p, sizeof(v));                                                          \
		return UF_##ORDER##_SWAP##bits(v);                                                 \
	}                                                                                          \
	static inline void uf_put_##order##bits(uint8_t *p, uint##bits##_t v)                      \
	{                                                                                          \
		v = UF_##ORDER##_SWAP##bits(v);                                                    \
		memcpy(p, &v, sizeof(v));                                                          \
	}

/* Big-endian (MoldUDP64, ITCH 5.0, SoupBinTCP): uf_be16 / uf_be32 / uf_be64 and
 * uf_put_be16 / uf_put_be32 / uf_put_be64. */
UF_ENDIAN_ACCESSORS(be, BE, 16)
UF_ENDIAN_ACCESSORS(be, BE, 32)
UF_ENDIAN_ACCESSORS(be, BE, 64)

/* Little-endian (IEX-TP 1.25, DEEP 1.0, TOPS 1.6): uf_le16 / uf_le32 / uf_le64 and
 * uf_put_le16 / uf_put_le32 / uf_put_le64. */
UF_ENDIAN_ACCESSORS(le, LE, 16)
UF_ENDIAN_ACCESSORS(le, LE, 32)
UF_ENDIAN_ACCESSORS(le, LE, 64)

/* ITCH timestamps are 6 bytes: nanoseconds since midnight. */
static inline uint64_t uf_be48(const uint8_t *p)
{
	return ((uint64_t)uf_be16(p) << 32) | uf_be32(p + 2);
}

static inline void uf_put_be48(uint8_t *p, uint64_t v)
{
	uf_put_be16(p, (uint16_t)(v >> 32));
	uf_put_be32(p + 2, (uint32_t)v);
}

/* Signed 8-byte fields (IEX prices, timestamps, sequence numbers): two's complement. */
static inline int64_t uf_le64s(const uint8_t *p)
{
	return (int64_t)uf_le64(p);
}

#endif /* UF_ENDIAN_H */
