/* Nasdaq TotalView-ITCH 5.0: typed views of the 23 message types.
 *
 * uf_itch_decode() fills a struct uf_itch_msg from the wire bytes in place: no copy of the
 * message, no allocation; numeric fields are converted to host order, character fields
 * (stock, MPID, reason) keep their wire bytes (8-byte symbols space-padded, not terminated),
 * `raw` points back into the caller's buffer. Prices are the feed's integer units:
 * 4 implied decimals, except MWCB levels (`V`), which carry 8. */
#ifndef UF_ITCH50_H
#define UF_ITCH50_H

#include <stddef.h>
#include <stdint.h>

#define UF_ITCH_HDR_LEN 11 /* type, locate, tracking, 6-byte timestamp */
#define UF_ITCH_MAX_LEN 50 /* longest message: NOII ('I') */
#define UF_ITCH_NTYPES  23

struct uf_itch_msg {
	uint8_t type;       /* message type letter, e.g. 'A' */
	uint16_t locate;    /* stock locate code (per day, from 'R') */
	uint16_t tracking;  /* Nasdaq internal tracking number */
	uint64_t timestamp; /* ns since midnight */
	uint16_t len;       /* wire length of the message */
	const uint8_t *raw; /* the message in the caller's buffer (zero copy) */
	union {
		struct {
			uint8_t event;
		} sys; /* S */
		struct {
			char stock[8];
			uint8_t market_category, financial_status;
			uint32_t round_lot_size;
			uint8_t round_lots_only, issue_classification;
			char issue_subtype[2];
			uint8_t authenticity, short_sale_threshold, ipo_flag, luld_tier, etp_flag;
			uint32_t etp_leverage;
			uint8_t inverse;
		} dir; /* R */
		struct {
			char stock[8];
			uint8_t trading_state, reserved;
			char reason[4];
		} trading_action; /* H */
		struct {
			char stock[8];
			uint8_t action;
		} reg_sho; /* Y */
		struct {
			char mpid[4];
			char stock[8];
			uint8_t primary_mm, mm_mode, participant_state;
		} mp_position; /* L */
		struct {
			uint64_t level1, level2, level3;
		} mwcb_decline; /* V, 8 decimals */
		struct {
			uint8_t breached_level;
		} mwcb_status; /* W */
		struct {
			char stock[8];
			uint32_t release_time; /* seconds since midnight */
			uint8_t qualifier;
			uint32_t price;
		} ipo; /* K */
		struct {
			char stock[8];
			uint32_t reference_price, upper_price, lower_price, extension;
		} luld; /* J */
		struct {
			char stock[8];
			uint8_t market_code, action;
		} op_halt; /* h */
		struct {
			uint64_t order_ref;
			uint8_t side; /* 'B' or 'S' */
			uint32_t shares;
			char stock[8];
			uint32_t price;
			char attribution[4]; /* 'F' only; zero bytes for 'A' */
		} add;                       /* A, F */
		struct {
			uint64_t order_ref;
			uint32_t shares; /* executed shares */
			uint64_t match;
			uint8_t printable; /* 'C' only */
			uint32_t price;    /* 'C' only: the print price, not the order's */
		} exec;                    /* E, C */
		struct {
			uint64_t order_ref;
			uint32_t shares;
		} cancel; /* X: cancelled shares */
		struct {
			uint64_t order_ref;
		} del; /* D */
		struct {
			uint64_t orig_ref, new_ref;
			uint32_t shares, price;
		} replace; /* U */
		struct {
			uint64_t order_ref;
			uint8_t side;
			uint32_t shares;
			char stock[8];
			uint32_t price;
			uint64_t match;
		} trade; /* P */
		struct {
			uint64_t shares;
			char stock[8];
			uint32_t price;
			uint64_t match;
			uint8_t cross_type;
		} cross; /* Q */
		struct {
			uint64_t match;
		} broken; /* B */
		struct {
			uint64_t paired_shares, imbalance_shares;
			uint8_t direction;
			char stock[8];
			uint32_t far_price, near_price, current_ref_price;
			uint8_t cross_type, price_variation;
		} noii; /* I */
		struct {
			char stock[8];
			uint8_t interest_flag;
		} rpi; /* N */
		struct {
			char stock[8];
			uint8_t open_eligibility;
			uint32_t min_price, max_price, near_exec_price;
			uint64_t near_exec_time;
			uint32_t lower_collar, upper_collar;
		} dlcr; /* O */
	} u;
};

/* Wire length of a message type, or 0 for an unknown type. O(1) table lookup. */
size_t uf_itch_msg_len(uint8_t type);

/* Decodes one message of exactly `len` bytes at `p` into `m`.
 * Returns 0; -ENOMSG for an unknown type (m->type, m->len set, nothing else);
 * -EBADMSG when `len` does not match the type's length (nothing read past len).
 * Out-of-line copy of uf_itch_decode_inline() below. */
int uf_itch_decode(const uint8_t *p, size_t len, struct uf_itch_msg *m);

/* ---- additions (decode/, issue 3): hot-path inline forms and type tables ---- */

/* The 23 type letters in the order counters index them (uf_itch_type_index). */
#define UF_ITCH_TYPES "SRHYLVWKJhAFECXDUPQBINO"

extern const uint8_t uf_itch_len_tab[256];  /* wire length by type letter, 0 = unknown */
extern const uint8_t uf_itch_idx1_tab[256]; /* 1 + index into UF_ITCH_TYPES, 0 = unknown */

/* Wire length of `type`, 0 if unknown: the inline form of uf_itch_msg_len. */
static inline size_t uf_itch_len(uint8_t type)
{
	return uf_itch_len_tab[type];
}

/* Index of `type` in UF_ITCH_TYPES (0..22), -1 if unknown. */
static inline int uf_itch_type_index(uint8_t type)
{
	return (int)uf_itch_idx1_tab[type] - 1;
}

/* Table-driven decode of the order messages (A F E C X D U P: ~98 % of a day), so the hot
 * path has no type switch and its mispredicted indirect jump. Each type is a fixed list of
 * UF_ITCH_HOT_OPS field moves, run unrolled and branch-free: load the 8 wire bytes that end
 * where the field ends (every field ends at byte 12 or later, and at most at `len`, so the
 * load stays inside the message), then either byte-swap and mask (a big-endian number) or
 * shift and mask (text copied as is); store 8 bytes at the field's offset in m->u. Moves go
 * in increasing destination order, so the spill of one 8-byte store into the next field is
 * overwritten by that field's move; lists shorter than UF_ITCH_HOT_OPS repeat their last
 * move. A move with both masks 0 writes zeros (E's printable and price, A's attribution). */
struct uf_itch_op {
	uint64_t swap_mask; /* bswap(load) & swap_mask: a big-endian number (0 for text) */
	uint64_t raw_mask;  /* (load >> raw_shift) & raw_mask: text bytes (0 for numbers) */
	uint8_t end;        /* wire offset just past the field (the load starts at end - 8) */
	uint8_t dst;        /* offset of the field in m->u; 8 bytes are stored there */
	uint8_t raw_shift;  /* 64 - 8 * width for text, so its bytes land at the bottom */
};

#define UF_ITCH_HOT_OPS   6 /* longest list: A, F and P have six fields */
#define UF_ITCH_HOT_TYPES 8 /* A F E C X D U P */

extern const uint8_t uf_itch_hot_tab[256]; /* 1 + row of uf_itch_hot_ops, 0 = switch path */
extern const struct uf_itch_op uf_itch_hot_ops[1 + UF_ITCH_HOT_TYPES][UF_ITCH_HOT_OPS];

#include "decode/uf_itch50_inline.h"

#endif /* UF_ITCH50_H */
