/* IEX DEEP 1.0 and TOPS 1.6: typed views of every message type.
 *
 * uf_iex_decode() fills a struct uf_iex_msg from the wire bytes in place: no copy of the
 * message, no allocation. Every number is little-endian on the wire and converted to host
 * order; character fields keep their wire bytes (symbols 8 bytes, space padded, not
 * terminated); `raw` points back into the caller's buffer. Prices are signed 8-byte integers
 * with 4 implied decimals, timestamps nanoseconds since the epoch (UTC), as on the wire.
 *
 * Every message starts with the same 10 bytes: type @0, one type-specific byte @1 (a flag
 * set, event or status code), timestamp @2 (i64). Every type but the system event then has
 * the symbol @10. The two protocols share most types; DEEP adds the price level updates ('8',
 * '5'), TOPS the quote update ('Q'). Both decode here; uf_iex_decode_proto() refuses a type
 * the given protocol does not define. Lengths are exact per type: a message whose length
 * differs from its type's is refused (-EBADMSG), so no read passes `len`.
 *
 * Layouts: IEX DEEP Specification 1.0 and TOPS Specification 1.6 (IEX), checked against the
 * Open Markets Initiative's generated structs (Iex.Equities.Deep.IexTp.v1.0,
 * Iex.Equities.Tops.IexTp.v1.6) and the real captures in ../shared/data/iex. The Retail
 * Liquidity Indicator ('I', 18 bytes) appears in later revisions of both (TOPS 1.66, DEEP
 * 1.08); it is decoded for both protocols so a newer publisher is not counted as malformed. */
#ifndef UF_IEX_H
#define UF_IEX_H

#include <stddef.h>
#include <stdint.h>

#define UF_IEX_HDR_LEN 10 /* type, type-specific byte, timestamp */
#define UF_IEX_MAX_LEN 80 /* longest message: auction information ('A') */
#define UF_IEX_NTYPES  14

/* The 14 type letters in the order counters index them (uf_iex_type_index). */
#define UF_IEX_TYPES "SDHIOPE85QTXBA"

/* Message types (the type byte). */
enum uf_iex_type {
	UF_IEX_SYSTEM_EVENT = 'S',       /* 10 bytes */
	UF_IEX_SECURITY_DIRECTORY = 'D', /* 31 */
	UF_IEX_TRADING_STATUS = 'H',     /* 22 */
	UF_IEX_RETAIL_LIQUIDITY = 'I',   /* 18, later revisions */
	UF_IEX_OPERATIONAL_HALT = 'O',   /* 18 */
	UF_IEX_SHORT_SALE_TEST = 'P',    /* 19 */
	UF_IEX_SECURITY_EVENT = 'E',     /* 18 */
	UF_IEX_PRICE_LEVEL_BUY = '8',    /* 30, DEEP only */
	UF_IEX_PRICE_LEVEL_SELL = '5',   /* 30, DEEP only */
	UF_IEX_QUOTE_UPDATE = 'Q',       /* 42, TOPS only */
	UF_IEX_TRADE_REPORT = 'T',       /* 38 */
	UF_IEX_OFFICIAL_PRICE = 'X',     /* 26 */
	UF_IEX_TRADE_BREAK = 'B',        /* 38 */
	UF_IEX_AUCTION_INFO = 'A',       /* 80 */
};

/* Flag bits, as the specifications number them (bit 7 = 0x80). */
#define UF_IEX_LEVEL_EVENT_COMPLETE                                                                \
	0x01                            /* price level: the book event is complete; 0 =            \
	                                 * more updates of the same event follow */
#define UF_IEX_SALE_ISO            0x80 /* trade: intermarket sweep */
#define UF_IEX_SALE_EXTENDED_HOURS 0x40 /* trade: outside regular hours */
#define UF_IEX_SALE_ODD_LOT        0x20 /* trade: odd lot */
#define UF_IEX_SALE_TRADE_THROUGH  0x10 /* trade: trade-through exempt */
#define UF_IEX_SALE_SINGLE_PRICE   0x08 /* trade: single-price cross */
#define UF_IEX_DIR_TEST            0x80 /* security directory: test security */
#define UF_IEX_DIR_WHEN_ISSUED     0x40 /* security directory: when issued */
#define UF_IEX_DIR_ETP             0x20 /* security directory: exchange-traded product */
#define UF_IEX_QUOTE_UNAVAILABLE   0x80 /* quote: symbol halted, paused or unavailable */
#define UF_IEX_QUOTE_PRE_POST      0x40 /* quote: pre- or post-market session */

struct uf_iex_msg {
	uint8_t type;       /* message type, enum uf_iex_type */
	uint8_t code;       /* the type-specific byte @1 (flags, event, status), also in u */
	uint16_t len;       /* wire length of the message */
	int64_t timestamp;  /* ns since the epoch (UTC) */
	char symbol[8];     /* @10, space padded; all zero bytes for the system event */
	const uint8_t *raw; /* the message in the caller's buffer (zero copy) */
	union {
		struct {
			uint8_t event; /* 'O' start of messages, 'S', 'R', 'M', 'E', 'C' */
		} sys;                 /* S */
		struct {
			uint8_t flags;           /* UF_IEX_DIR_* */
			uint32_t round_lot_size; /* shares per round lot */
			int64_t adjusted_poc;    /* adjusted previous official close (price) */
			uint8_t luld_tier;       /* 0 n/a, 1 tier 1, 2 tier 2 */
		} dir;                           /* D */
		struct {
			uint8_t status; /* 'H' halted, 'O' order acceptance, 'P' paused, 'T' */
			char reason[4]; /* e.g. "T1  ", space padded */
		} trading_status;       /* H */
		struct {
			uint8_t indicator; /* ' ', 'A' buy, 'B' sell, 'C' both */
		} retail;                  /* I */
		struct {
			uint8_t status; /* 'O' operationally halted on IEX, 'N' not */
		} op_halt;              /* O */
		struct {
			uint8_t status; /* 0 not in effect, 1 in effect */
			uint8_t detail; /* ' ', 'A', 'C', 'D', 'N' */
		} ssr;                  /* P */
		struct {
			uint8_t event; /* 'O' opening process complete, 'C' closing */
		} sec_event;           /* E */
		struct {
			uint8_t flags; /* UF_IEX_LEVEL_EVENT_COMPLETE */
			uint8_t side;  /* 'B' for '8', 'S' for '5' (derived from the type) */
			uint32_t size; /* aggregate shares at the level; 0 deletes it */
			int64_t price;
		} level; /* 8, 5 */
		struct {
			uint8_t flags; /* UF_IEX_QUOTE_* */
			uint32_t bid_size;
			int64_t bid_price;
			int64_t ask_price;
			uint32_t ask_size;
		} quote; /* Q */
		struct {
			uint8_t flags;     /* sale condition, UF_IEX_SALE_* */
			uint32_t size;     /* shares */
			int64_t price;     /* execution price */
			uint64_t trade_id; /* IEX trade id (a break names the trade it breaks) */
		} trade;                   /* T, B */
		struct {
			uint8_t price_type; /* 'Q' official opening, 'M' official closing */
			int64_t price;
		} official; /* X */
		struct {
			uint8_t auction_type;      /* 'O', 'C', 'I' IPO, 'H' halt, 'V' volatility */
			uint32_t paired_shares;    /* shares paired at the reference price */
			int64_t reference_price;   /* clearing price at or within the collars */
			int64_t indicative_price;  /* indicative clearing price */
			uint32_t imbalance_shares; /* unpaired shares at the reference price */
			uint8_t imbalance_side;    /* 'B', 'S', 'N' */
			uint8_t extension;         /* extensions of the auction so far */
			uint32_t scheduled_time;   /* seconds since the epoch (u32 "event time") */
			int64_t book_clearing_price; /* clearing price of the auction book alone */
			int64_t collar_reference;    /* reference for the collars */
			int64_t lower_collar;
			int64_t upper_collar;
		} auction; /* A */
	} u;
};

/* Wire length of a message type, or 0 for a type neither protocol defines. */
size_t uf_iex_msg_len(uint8_t type);

/* Index of `type` in UF_IEX_TYPES (0..13), -1 if unknown. */
int uf_iex_type_index(uint8_t type);

/* 1 when message protocol `proto` (UF_IEXTP_PROTO_DEEP / _TOPS, decode/uf_iextp.h) defines
 * `type`, 0 otherwise (and for an unknown protocol). */
int uf_iex_type_in_proto(uint8_t type, uint16_t proto);

/* Decodes one message of exactly `len` bytes at `m` into `out`.
 * Returns the type (> 0); -ENOMSG for a type neither protocol defines (out->type, out->len,
 * out->raw set, nothing else); -EBADMSG when `len` is 0 or does not match the type's length
 * (nothing read past len). */
int uf_iex_decode(const uint8_t *m, size_t len, struct uf_iex_msg *out);

/* uf_iex_decode for one protocol: -ENOMSG as well for a known type that `proto` does not
 * define (a quote update on DEEP, a price level on TOPS). proto 0 = either. */
int uf_iex_decode_proto(uint16_t proto, const uint8_t *m, size_t len, struct uf_iex_msg *out);

struct uf_decode_counters;
/* uf_iex_decode_proto plus counting into c: messages, bytes, iex_by_type on success;
 * iex_empty, iex_bad_len[type], iex_unknown_type on failure. Returns as uf_iex_decode_proto. */
int uf_iex_decode_counted(uint16_t proto, const uint8_t *m, size_t len, struct uf_iex_msg *out,
                          struct uf_decode_counters *c);

/* Name of a message type for tools ("price_level_buy"...), "unknown" otherwise. */
const char *uf_iex_type_name(uint8_t type);

/* ---- hot-path inline form ---- */

extern const uint8_t uf_iex_len_tab[256];  /* wire length by type byte, 0 = unknown */
extern const uint8_t uf_iex_idx1_tab[256]; /* 1 + index into UF_IEX_TYPES, 0 = unknown */

/* uf_iex_decode's body, inline (decode/uf_iex_inline.h): same contract, no call. */
#include "decode/uf_iex_inline.h"

#endif /* UF_IEX_H */
