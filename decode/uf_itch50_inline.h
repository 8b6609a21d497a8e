/* The ITCH 5.0 decoder body, inline so the batch loop and the feed thread pay no call.
 * Included by uf_itch50.h only; not a public header of its own.
 *
 * Every field offset below comes from ../shared/ITCH50-MOLDUDP64.md. The length check comes
 * first and is exact, so no read below can pass `len`. */
#ifndef UF_ITCH50_INLINE_H
#define UF_ITCH50_INLINE_H

#include <errno.h>
#include <string.h>

#include "common/uf_compiler.h"
#include "common/uf_endian.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the table-driven decode (struct uf_itch_op) assumes a little-endian host"
#endif

/* Decodes one message of exactly `len` bytes (see uf_itch_decode for the contract). */
static inline int uf_itch_decode_inline(const uint8_t *p, size_t len, struct uf_itch_msg *m)
{
	if (UF_UNLIKELY(len == 0)) {
		m->type = 0;
		m->len = 0;
		m->raw = p;
		return -EBADMSG;
	}
	uint8_t t = p[0];
	size_t want = uf_itch_len_tab[t];
	m->type = t;
	m->len = (uint16_t)len;
	m->raw = p;
	if (UF_UNLIKELY(want == 0))
		return -ENOMSG;
	if (UF_UNLIKELY(want != len))
		return -EBADMSG;
	m->locate = uf_be16(p + 1);
	m->tracking = uf_be16(p + 3);
	m->timestamp = uf_be48(p + 5);
	unsigned hot = uf_itch_hot_tab[t];
	if (UF_LIKELY(hot)) { /* order messages: table-driven, see struct uf_itch_op */
		const struct uf_itch_op *op = uf_itch_hot_ops[hot];
		uint8_t *u = (uint8_t *)&m->u;
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC unroll 6
#elif defined(__clang__)
#pragma unroll
#endif
		for (int k = 0; k < UF_ITCH_HOT_OPS; k++) {
			uint64_t raw, v;
			memcpy(&raw, p + op[k].end - 8, 8);
			v = (__builtin_bswap64(raw) & op[k].swap_mask) |
			    ((raw >> op[k].raw_shift) & op[k].raw_mask);
			memcpy(u + op[k].dst, &v, 8);
		}
		return 0;
	}
	switch (t) {
	case 'A':
	case 'F':
		m->u.add.order_ref = uf_be64(p + 11);
		m->u.add.side = p[19];
		m->u.add.shares = uf_be32(p + 20);
		memcpy(m->u.add.stock, p + 24, 8);
		m->u.add.price = uf_be32(p + 32);
		if (t == 'F')
			memcpy(m->u.add.attribution, p + 36, 4);
		else
			memset(m->u.add.attribution, 0, 4);
		break;
	case 'E':
	case 'C':
		m->u.exec.order_ref = uf_be64(p + 11);
		m->u.exec.shares = uf_be32(p + 19);
		m->u.exec.match = uf_be64(p + 23);
		if (t == 'C') {
			m->u.exec.printable = p[31];
			m->u.exec.price = uf_be32(p + 32);
		} else {
			m->u.exec.printable = 0;
			m->u.exec.price = 0;
		}
		break;
	case 'X':
		m->u.cancel.order_ref = uf_be64(p + 11);
		m->u.cancel.shares = uf_be32(p + 19);
		break;
	case 'D':
		m->u.del.order_ref = uf_be64(p + 11);
		break;
	case 'U':
		m->u.replace.orig_ref = uf_be64(p + 11);
		m->u.replace.new_ref = uf_be64(p + 19);
		m->u.replace.shares = uf_be32(p + 27);
		m->u.replace.price = uf_be32(p + 31);
		break;
	case 'P':
		m->u.trade.order_ref = uf_be64(p + 11);
		m->u.trade.side = p[19];
		m->u.trade.shares = uf_be32(p + 20);
		memcpy(m->u.trade.stock, p + 24, 8);
		m->u.trade.price = uf_be32(p + 32);
		m->u.trade.match = uf_be64(p + 36);
		break;
	case 'Q':
		m->u.cross.shares = uf_be64(p + 11);
		memcpy(m->u.cross.stock, p + 19, 8);
		m->u.cross.price = uf_be32(p + 27);
		m->u.cross.match = uf_be64(p + 31);
		m->u.cross.cross_type = p[39];
		break;
	case 'B':
		m->u.broken.match = uf_be64(p + 11);
		break;
	case 'S':
		m->u.sys.event = p[11];
		break;
	case 'R':
		memcpy(m->u.dir.stock, p + 11, 8);
		m->u.dir.market_category = p[19];
		m->u.dir.financial_status = p[20];
		m->u.dir.round_lot_size = uf_be32(p + 21);
		m->u.dir.round_lots_only = p[25];
		m->u.dir.issue_classification = p[26];
		memcpy(m->u.dir.issue_subtype, p + 27, 2);
		m->u.dir.authenticity = p[29];
		m->u.dir.short_sale_threshold = p[30];
		m->u.dir.ipo_flag = p[31];
		m->u.dir.luld_tier = p[32];
		m->u.dir.etp_flag = p[33];
		m->u.dir.etp_leverage = uf_be32(p + 34);
		m->u.dir.inverse = p[38];
		break;
	case 'H':
		memcpy(m->u.trading_action.stock, p + 11, 8);
		m->u.trading_action.trading_state = p[19];
		m->u.trading_action.reserved = p[20];
		memcpy(m->u.trading_action.reason, p + 21, 4);
		break;
	case 'Y':
		memcpy(m->u.reg_sho.stock, p + 11, 8);
		m->u.reg_sho.action = p[19];
		break;
	case 'L':
		memcpy(m->u.mp_position.mpid, p + 11, 4);
		memcpy(m->u.mp_position.stock, p + 15, 8);
		m->u.mp_position.primary_mm = p[23];
		m->u.mp_position.mm_mode = p[24];
		m->u.mp_position.participant_state = p[25];
		break;
	case 'V':
		m->u.mwcb_decline.level1 = uf_be64(p + 11);
		m->u.mwcb_decline.level2 = uf_be64(p + 19);
		m->u.mwcb_decline.level3 = uf_be64(p + 27);
		break;
	case 'W':
		m->u.mwcb_status.breached_level = p[11];
		break;
	case 'K':
		memcpy(m->u.ipo.stock, p + 11, 8);
		m->u.ipo.release_time = uf_be32(p + 19);
		m->u.ipo.qualifier = p[23];
		m->u.ipo.price = uf_be32(p + 24);
		break;
	case 'J':
		memcpy(m->u.luld.stock, p + 11, 8);
		m->u.luld.reference_price = uf_be32(p + 19);
		m->u.luld.upper_price = uf_be32(p + 23);
		m->u.luld.lower_price = uf_be32(p + 27);
		m->u.luld.extension = uf_be32(p + 31);
		break;
	case 'h':
		memcpy(m->u.op_halt.stock, p + 11, 8);
		m->u.op_halt.market_code = p[19];
		m->u.op_halt.action = p[20];
		break;
	case 'I':
		m->u.noii.paired_shares = uf_be64(p + 11);
		m->u.noii.imbalance_shares = uf_be64(p + 19);
		m->u.noii.direction = p[27];
		memcpy(m->u.noii.stock, p + 28, 8);
		m->u.noii.far_price = uf_be32(p + 36);
		m->u.noii.near_price = uf_be32(p + 40);
		m->u.noii.current_ref_price = uf_be32(p + 44);
		m->u.noii.cross_type = p[48];
		m->u.noii.price_variation = p[49];
		break;
	case 'N':
		memcpy(m->u.rpi.stock, p + 11, 8);
		m->u.rpi.interest_flag = p[19];
		break;
	case 'O':
		memcpy(m->u.dlcr.stock, p + 11, 8);
		m->u.dlcr.open_eligibility = p[19];
		m->u.dlcr.min_price = uf_be32(p + 20);
		m->u.dlcr.max_price = uf_be32(p + 24);
		m->u.dlcr.near_exec_price = uf_be32(p + 28);
		m->u.dlcr.near_exec_time = uf_be64(p + 32);
		m->u.dlcr.lower_collar = uf_be32(p + 40);
		m->u.dlcr.upper_collar = uf_be32(p + 44);
		break;
	default: /* unreachable: every letter with a length has a case */
		return -ENOMSG;
	}
	return 0;
}

#endif /* UF_ITCH50_INLINE_H */
