/* ITCH 5.0: the type tables and the out-of-line decoder (the body is uf_itch50_inline.h). */
#include "decode/uf_itch50.h"

/* Wire lengths from ../shared/ITCH50-MOLDUDP64.md; every other byte value is unknown. */
const uint8_t uf_itch_len_tab[256] = {
    ['S'] = 12, ['R'] = 39, ['H'] = 25, ['Y'] = 20, ['L'] = 26, ['V'] = 35, ['W'] = 12, ['K'] = 28,
    ['J'] = 35, ['h'] = 21, ['A'] = 36, ['F'] = 40, ['E'] = 31, ['C'] = 36, ['X'] = 23, ['D'] = 19,
    ['U'] = 35, ['P'] = 44, ['Q'] = 40, ['B'] = 19, ['I'] = 50, ['N'] = 20, ['O'] = 48,
};

/* 1 + index of each letter in UF_ITCH_TYPES; 0 elsewhere. */
const uint8_t uf_itch_idx1_tab[256] = {
    ['S'] = 1,  ['R'] = 2,  ['H'] = 3,  ['Y'] = 4,  ['L'] = 5,  ['V'] = 6,  ['W'] = 7,  ['K'] = 8,
    ['J'] = 9,  ['h'] = 10, ['A'] = 11, ['F'] = 12, ['E'] = 13, ['C'] = 14, ['X'] = 15, ['D'] = 16,
    ['U'] = 17, ['P'] = 18, ['Q'] = 19, ['B'] = 20, ['I'] = 21, ['N'] = 22, ['O'] = 23,
};

_Static_assert(sizeof(UF_ITCH_TYPES) - 1 == UF_ITCH_NTYPES, "23 ITCH 5.0 message types");

size_t uf_itch_msg_len(uint8_t type)
{
	return uf_itch_len(type);
}

int uf_itch_decode(const uint8_t *p, size_t len, struct uf_itch_msg *m)
{
	return uf_itch_decode_inline(p, len, m);
}
