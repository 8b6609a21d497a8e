/* IEX DEEP 1.0 / TOPS 1.6 message decoding (layouts in uf_iex.h and docs/decode.md). */
#include "decode/uf_iex.h"

#include <errno.h>
#include <string.h>

#include "common/uf_compiler.h"
#include "common/uf_endian.h"
#include "decode/uf_counters.h"
#include "decode/uf_iextp.h"

/* Wire length by type byte, 0 = neither protocol defines it. */
const uint8_t uf_iex_len_tab[256] = {
    ['S'] = 10, ['D'] = 31, ['H'] = 22, ['I'] = 18, ['O'] = 18, ['P'] = 19, ['E'] = 18,
    ['8'] = 30, ['5'] = 30, ['Q'] = 42, ['T'] = 38, ['X'] = 26, ['B'] = 38, ['A'] = 80,
};

/* 1 + index into UF_IEX_TYPES, 0 = unknown. */
const uint8_t uf_iex_idx1_tab[256] = {
    ['S'] = 1, ['D'] = 2, ['H'] = 3,  ['I'] = 4,  ['O'] = 5,  ['P'] = 6,  ['E'] = 7,
    ['8'] = 8, ['5'] = 9, ['Q'] = 10, ['T'] = 11, ['X'] = 12, ['B'] = 13, ['A'] = 14,
};

_Static_assert(sizeof(UF_IEX_TYPES) - 1 == UF_IEX_NTYPES, "one letter per type");

size_t uf_iex_msg_len(uint8_t type)
{
	return uf_iex_len_tab[type];
}

int uf_iex_type_index(uint8_t type)
{
	return (int)uf_iex_idx1_tab[type] - 1;
}

int uf_iex_type_in_proto(uint8_t type, uint16_t proto)
{
	if (!uf_iex_len_tab[type])
		return 0;
	switch (proto) {
	case UF_IEXTP_PROTO_DEEP:
		return type != UF_IEX_QUOTE_UPDATE;
	case UF_IEXTP_PROTO_TOPS:
		return type != UF_IEX_PRICE_LEVEL_BUY && type != UF_IEX_PRICE_LEVEL_SELL;
	default:
		return 0;
	}
}

const char *uf_iex_type_name(uint8_t type)
{
	switch (type) {
	case UF_IEX_SYSTEM_EVENT:
		return "system_event";
	case UF_IEX_SECURITY_DIRECTORY:
		return "security_directory";
	case UF_IEX_TRADING_STATUS:
		return "trading_status";
	case UF_IEX_RETAIL_LIQUIDITY:
		return "retail_liquidity_indicator";
	case UF_IEX_OPERATIONAL_HALT:
		return "operational_halt_status";
	case UF_IEX_SHORT_SALE_TEST:
		return "short_sale_price_test_status";
	case UF_IEX_SECURITY_EVENT:
		return "security_event";
	case UF_IEX_PRICE_LEVEL_BUY:
		return "price_level_buy";
	case UF_IEX_PRICE_LEVEL_SELL:
		return "price_level_sell";
	case UF_IEX_QUOTE_UPDATE:
		return "quote_update";
	case UF_IEX_TRADE_REPORT:
		return "trade_report";
	case UF_IEX_OFFICIAL_PRICE:
		return "official_price";
	case UF_IEX_TRADE_BREAK:
		return "trade_break";
	case UF_IEX_AUCTION_INFO:
		return "auction_information";
	default:
		return "unknown";
	}
}

int uf_iex_decode(const uint8_t *p, size_t len, struct uf_iex_msg *m)
{
	return uf_iex_decode_inline(p, len, m);
}

int uf_iex_decode_proto(uint16_t proto, const uint8_t *p, size_t len, struct uf_iex_msg *m)
{
	if (proto && len && uf_iex_len_tab[p[0]] && !uf_iex_type_in_proto(p[0], proto)) {
		m->type = p[0];
		m->len = (uint16_t)len;
		m->raw = p;
		return -ENOMSG;
	}
	return uf_iex_decode(p, len, m);
}

int uf_iex_decode_counted(uint16_t proto, const uint8_t *p, size_t len, struct uf_iex_msg *m,
                          struct uf_decode_counters *c)
{
	int rc = uf_iex_decode_proto(proto, p, len, m);
	if (UF_LIKELY(rc > 0)) {
		UF_DC_ADD(c->messages, 1);
		UF_DC_ADD(c->bytes, len);
		UF_DC_ADD(c->iex_by_type[uf_iex_idx1_tab[rc] - 1], 1);
	} else if (len == 0) {
		UF_DC_ADD(c->iex_empty, 1);
	} else if (rc == -EBADMSG) {
		UF_DC_ADD(c->iex_bad_len[uf_iex_idx1_tab[p[0]] - 1], 1);
	} else {
		UF_DC_ADD(c->iex_unknown_type, 1);
	}
	return rc;
}
