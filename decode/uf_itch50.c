/* ITCH 5.0: the type tables and the out-of-line decoder (the body is uf_itch50_inline.h). */
#include "decode/uf_itch50.h"

#include <stddef.h>

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

/* Rows of uf_itch_hot_ops by type letter. */
const uint8_t uf_itch_hot_tab[256] = {
    ['A'] = 1, ['F'] = 2, ['E'] = 3, ['C'] = 4, ['X'] = 5, ['D'] = 6, ['U'] = 7, ['P'] = 8,
};

#define UOFF(f) (offsetof(struct uf_itch_msg, u.f) - offsetof(struct uf_itch_msg, u))
#define MASK(w) (~0ull >> (64 - 8 * (w))) /* w = 1..8 bytes */
/* A big-endian number of `w` bytes at wire offset `src`. */
#define NUM(f, src, w)                                                                             \
	{                                                                                          \
		MASK(w), 0, (src) + (w), UOFF(f), 0                                                \
	}
/* `w` text bytes at `src`, copied as they are. */
#define TXT(f, src, w)                                                                             \
	{                                                                                          \
		0, MASK(w), (src) + (w), UOFF(f), 64 - 8 * (w)                                     \
	}
/* Zeros (fields the type does not carry). The load (bytes 11-18) is inside any of them. */
#define ZERO(f)                                                                                    \
	{                                                                                          \
		0, 0, 19, UOFF(f), 0                                                               \
	}

/* Offsets from ../shared/ITCH50-MOLDUDP64.md, the same as the switch in uf_itch50_inline.h
 * (test_itch50 checks both paths field by field against hand-built vectors). */
const struct uf_itch_op uf_itch_hot_ops[1 + UF_ITCH_HOT_TYPES][UF_ITCH_HOT_OPS] = {
    [1] = {NUM(add.order_ref, 11, 8), NUM(add.side, 19, 1), NUM(add.shares, 20, 4),
           TXT(add.stock, 24, 8), NUM(add.price, 32, 4), ZERO(add.attribution)}, /* A */
    [2] = {NUM(add.order_ref, 11, 8), NUM(add.side, 19, 1), NUM(add.shares, 20, 4),
           TXT(add.stock, 24, 8), NUM(add.price, 32, 4), TXT(add.attribution, 36, 4)}, /* F */
    [3] = {NUM(exec.order_ref, 11, 8), NUM(exec.shares, 19, 4), NUM(exec.match, 23, 8),
           ZERO(exec.printable), ZERO(exec.price), ZERO(exec.price)}, /* E */
    [4] = {NUM(exec.order_ref, 11, 8), NUM(exec.shares, 19, 4), NUM(exec.match, 23, 8),
           NUM(exec.printable, 31, 1), NUM(exec.price, 32, 4), NUM(exec.price, 32, 4)}, /* C */
    [5] = {NUM(cancel.order_ref, 11, 8), NUM(cancel.shares, 19, 4), NUM(cancel.shares, 19, 4),
           NUM(cancel.shares, 19, 4), NUM(cancel.shares, 19, 4), NUM(cancel.shares, 19, 4)},
    [6] = {NUM(del.order_ref, 11, 8), NUM(del.order_ref, 11, 8), NUM(del.order_ref, 11, 8),
           NUM(del.order_ref, 11, 8), NUM(del.order_ref, 11, 8), NUM(del.order_ref, 11, 8)},
    [7] = {NUM(replace.orig_ref, 11, 8), NUM(replace.new_ref, 19, 8), NUM(replace.shares, 27, 4),
           NUM(replace.price, 31, 4), NUM(replace.price, 31, 4), NUM(replace.price, 31, 4)},
    [8] = {NUM(trade.order_ref, 11, 8), NUM(trade.side, 19, 1), NUM(trade.shares, 20, 4),
           TXT(trade.stock, 24, 8), NUM(trade.price, 32, 4), NUM(trade.match, 36, 8)}, /* P */
};

/* Every 8-byte store stays inside the union, every load inside its message. */
_Static_assert(UOFF(add.attribution) + 8 <= sizeof(((struct uf_itch_msg *)0)->u), "A/F store");
_Static_assert(UOFF(trade.match) + 8 <= sizeof(((struct uf_itch_msg *)0)->u), "P store");
_Static_assert(UOFF(exec.price) + 8 <= sizeof(((struct uf_itch_msg *)0)->u), "C store");

_Static_assert(sizeof(UF_ITCH_TYPES) - 1 == UF_ITCH_NTYPES, "23 ITCH 5.0 message types");

size_t uf_itch_msg_len(uint8_t type)
{
	return uf_itch_len(type);
}

int uf_itch_decode(const uint8_t *p, size_t len, struct uf_itch_msg *m)
{
	return uf_itch_decode_inline(p, len, m);
}
