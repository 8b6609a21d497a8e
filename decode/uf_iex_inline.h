/* The IEX DEEP/TOPS decoder body, inline so a protocol entry's per-packet apply pays no call
 * per message. Included by uf_iex.h only; not a public header of its own.
 *
 * Offsets are the specifications' (table in uf_iex.h and docs/decode.md). The length check
 * comes first and is exact, so no read below can pass `len`. */
#ifndef UF_IEX_INLINE_H
#define UF_IEX_INLINE_H

#include <errno.h>
#include <string.h>

#include "common/uf_compiler.h"
#include "common/uf_endian.h"

/* Decodes one message of exactly `len` bytes (see uf_iex_decode for the contract). */
static inline int uf_iex_decode_inline(const uint8_t *p, size_t len, struct uf_iex_msg *m)
{
	if (UF_UNLIKELY(len == 0)) {
		m->type = 0;
		m->len = 0;
		m->raw = p;
		return -EBADMSG;
	}
	uint8_t t = p[0];
	m->type = t;
	m->len = (uint16_t)len;
	m->raw = p;
	size_t want = uf_iex_len_tab[t];
	if (UF_UNLIKELY(want == 0))
		return -ENOMSG;
	if (UF_UNLIKELY(want != len))
		return -EBADMSG;
	/* Every type is at least 10 bytes: type, code, timestamp. */
	m->code = p[1];
	m->timestamp = uf_le64s(p + 2);
	if (t == UF_IEX_SYSTEM_EVENT)
		memset(m->symbol, 0, sizeof(m->symbol));
	else
		memcpy(m->symbol, p + 10, sizeof(m->symbol)); /* every other type is >= 18 */
	switch (t) {
	case UF_IEX_PRICE_LEVEL_BUY:
	case UF_IEX_PRICE_LEVEL_SELL:
		m->u.level.flags = p[1];
		m->u.level.side = t == UF_IEX_PRICE_LEVEL_BUY ? 'B' : 'S';
		m->u.level.size = uf_le32(p + 18);
		m->u.level.price = uf_le64s(p + 22);
		break;
	case UF_IEX_TRADE_REPORT:
	case UF_IEX_TRADE_BREAK:
		m->u.trade.flags = p[1];
		m->u.trade.size = uf_le32(p + 18);
		m->u.trade.price = uf_le64s(p + 22);
		m->u.trade.trade_id = uf_le64(p + 30);
		break;
	case UF_IEX_QUOTE_UPDATE:
		m->u.quote.flags = p[1];
		m->u.quote.bid_size = uf_le32(p + 18);
		m->u.quote.bid_price = uf_le64s(p + 22);
		m->u.quote.ask_price = uf_le64s(p + 30);
		m->u.quote.ask_size = uf_le32(p + 38);
		break;
	case UF_IEX_SYSTEM_EVENT:
		m->u.sys.event = p[1];
		break;
	case UF_IEX_SECURITY_DIRECTORY:
		m->u.dir.flags = p[1];
		m->u.dir.round_lot_size = uf_le32(p + 18);
		m->u.dir.adjusted_poc = uf_le64s(p + 22);
		m->u.dir.luld_tier = p[30];
		break;
	case UF_IEX_TRADING_STATUS:
		m->u.trading_status.status = p[1];
		memcpy(m->u.trading_status.reason, p + 18, 4);
		break;
	case UF_IEX_RETAIL_LIQUIDITY:
		m->u.retail.indicator = p[1];
		break;
	case UF_IEX_OPERATIONAL_HALT:
		m->u.op_halt.status = p[1];
		break;
	case UF_IEX_SHORT_SALE_TEST:
		m->u.ssr.status = p[1];
		m->u.ssr.detail = p[18];
		break;
	case UF_IEX_SECURITY_EVENT:
		m->u.sec_event.event = p[1];
		break;
	case UF_IEX_OFFICIAL_PRICE:
		m->u.official.price_type = p[1];
		m->u.official.price = uf_le64s(p + 18);
		break;
	case UF_IEX_AUCTION_INFO:
		m->u.auction.auction_type = p[1];
		m->u.auction.paired_shares = uf_le32(p + 18);
		m->u.auction.reference_price = uf_le64s(p + 22);
		m->u.auction.indicative_price = uf_le64s(p + 30);
		m->u.auction.imbalance_shares = uf_le32(p + 38);
		m->u.auction.imbalance_side = p[42];
		m->u.auction.extension = p[43];
		m->u.auction.scheduled_time = uf_le32(p + 44);
		m->u.auction.book_clearing_price = uf_le64s(p + 48);
		m->u.auction.collar_reference = uf_le64s(p + 56);
		m->u.auction.lower_collar = uf_le64s(p + 64);
		m->u.auction.upper_collar = uf_le64s(p + 72);
		break;
	}
	return t;
}

#endif /* UF_IEX_INLINE_H */
