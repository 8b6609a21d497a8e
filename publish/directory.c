/* Instrument directory (R), per-instrument and market status (S H Y L V W K J h I N O), last
 * trade, and symbol lookup. Rare messages next to the order flow: plain functions, not
 * inlined into the hot loop. */
#include <errno.h>
#include <string.h>

#include "common/uf_compiler.h"
#include "common/uf_symbol.h"
#include "publish/publisher.h"

static uint64_t uf_pub_sym_key(const char sym[8])
{
	uint64_t k;
	memcpy(&k, sym, 8);
	return k;
}

static uint32_t uf_pub_sym_home(const struct uf_publisher *p, uint64_t key)
{
	return (uint32_t)((key * 0x9E3779B97F4A7C15ull) >> 32) & p->sym_mask;
}

/* Puts `inst` under its current symbol (replacing another id under the same symbol). */
static void uf_pub_sym_insert(struct uf_publisher *p, uint32_t inst)
{
	uint64_t key = uf_pub_sym_key(p->inst[inst].symbol);
	uint32_t i = uf_pub_sym_home(p, key);
	for (;;) {
		uint32_t v = p->sym_slots[i];
		if (v == 0 || uf_pub_sym_key(p->inst[v - 1].symbol) == key) {
			p->sym_slots[i] = inst + 1;
			return;
		}
		i = (i + 1) & p->sym_mask;
	}
}

/* Rebuilds the symbol hash: after an instrument changed its symbol (rare; O(ids)). */
static UF_COLD void uf_pub_sym_rebuild(struct uf_publisher *p)
{
	memset(p->sym_slots, 0, p->sym_bytes);
	for (uint32_t i = 0; i < p->max_instruments; i++)
		if (p->books[i].named)
			uf_pub_sym_insert(p, i);
}

void uf_pub_dir_name(struct uf_publisher *p, uint32_t inst, const char sym[8])
{
	struct uf_pub_instrument *in = &p->inst[inst];
	if (p->books[inst].named) {
		if (memcmp(in->symbol, sym, 8) == 0)
			return;
		memcpy(in->symbol, sym, 8);
		uf_pub_sym_rebuild(p);
		return;
	}
	memcpy(in->symbol, sym, 8);
	p->books[inst].named = 1;
	uf_pub_sym_insert(p, inst);
}

void uf_pub_trade(struct uf_publisher *p, const struct uf_record *r)
{
	if (!uf_rec_trade_prints(r) || r->instrument >= p->max_instruments)
		return;
	struct uf_pub_instrument *in = &p->inst[r->instrument];
	in->last_trade_price = (uint64_t)r->price;
	in->last_trade_shares = r->shares;
	in->last_trade_ts = r->exch_ts;
	in->last_trade_match = r->ref;
	in->volume += r->shares;
}

static uint64_t uf_pub_bytes4(const char *b)
{
	uint32_t v;
	memcpy(&v, b, 4);
	return v;
}

int uf_pub_status_apply(struct uf_publisher *p, const struct uf_itch_msg *m,
                        const struct uf_pub_ctx *c, struct uf_record *r)
{
	uint32_t loc = m->locate;
	struct uf_pub_instrument *in = NULL;
	uint16_t st = 0;

	/* Market-wide messages first: they need no instrument. */
	switch (m->type) {
	case 'S':
		p->market.system_event = m->u.sys.event;
		uf_pub_rec(r, c, UF_REC_STATUS, 0, 0, loc, 0, m->u.sys.event, UF_STATUS_SYSTEM, 0);
		return 1;
	case 'V':
		p->market.mwcb_level[0] = m->u.mwcb_decline.level1;
		p->market.mwcb_level[1] = m->u.mwcb_decline.level2;
		p->market.mwcb_level[2] = m->u.mwcb_decline.level3;
		uf_pub_rec(r, c, UF_REC_STATUS, 0, 0, loc, (int64_t)m->u.mwcb_decline.level1,
		           m->u.mwcb_decline.level2, UF_STATUS_MWCB_LEVELS,
		           m->u.mwcb_decline.level3);
		return 1;
	case 'W':
		p->market.mwcb_breached = m->u.mwcb_status.breached_level;
		uf_pub_rec(r, c, UF_REC_STATUS, 0, 0, loc, 0, m->u.mwcb_status.breached_level,
		           UF_STATUS_MWCB_BREACH, 0);
		return 1;
	case 'R':
	case 'H':
	case 'Y':
	case 'L':
	case 'K':
	case 'J':
	case 'h':
	case 'I':
	case 'N':
	case 'O':
		break;
	default:
		uf_pub_error(p, UF_PUB_ERR_UNKNOWN_TYPE);
		return 0;
	}
	if (UF_UNLIKELY(loc >= p->max_instruments)) {
		uf_pub_error(p, UF_PUB_ERR_BAD_INSTRUMENT);
		return 0;
	}
	in = &p->inst[loc];
	st = p->books[loc].stale ? UF_RECF_STALE : 0;

	switch (m->type) {
	case 'R': {
		uf_pub_dir_name(p, loc, m->u.dir.stock);
		in->round_lot = m->u.dir.round_lot_size;
		in->market_category = m->u.dir.market_category;
		in->financial_status = m->u.dir.financial_status;
		in->issue_classification = m->u.dir.issue_classification;
		in->luld_tier = m->u.dir.luld_tier;
		in->has_directory = 1;
		uf_pub_rec(r, c, UF_REC_INSTRUMENT, 0, st, loc, m->u.dir.financial_status,
		           m->u.dir.round_lot_size, m->u.dir.market_category,
		           uf_pub_sym_key(m->u.dir.stock));
		return 1;
	}
	case 'H':
		in->trading_state = m->u.trading_action.trading_state;
		memcpy(in->halt_reason, m->u.trading_action.reason, 4);
		uf_pub_rec(r, c, UF_REC_STATUS, 0, st, loc, 0, m->u.trading_action.trading_state,
		           UF_STATUS_TRADING, uf_pub_bytes4(m->u.trading_action.reason));
		return 1;
	case 'Y':
		in->reg_sho = m->u.reg_sho.action;
		uf_pub_rec(r, c, UF_REC_STATUS, 0, st, loc, 0, m->u.reg_sho.action,
		           UF_STATUS_REG_SHO, 0);
		return 1;
	case 'L':
		uf_pub_rec(r, c, UF_REC_STATUS, 0, st, loc, 0,
		           m->u.mp_position.primary_mm | (uint32_t)m->u.mp_position.mm_mode << 8 |
		               (uint32_t)m->u.mp_position.participant_state << 16,
		           UF_STATUS_MP_POSITION, uf_pub_bytes4(m->u.mp_position.mpid));
		return 1;
	case 'K':
		in->ipo_release_time = m->u.ipo.release_time;
		in->ipo_qualifier = m->u.ipo.qualifier;
		in->ipo_price = m->u.ipo.price;
		uf_pub_rec(r, c, UF_REC_STATUS, 0, st, loc, m->u.ipo.price, m->u.ipo.release_time,
		           UF_STATUS_IPO, m->u.ipo.qualifier);
		return 1;
	case 'J':
		in->luld_ref_price = m->u.luld.reference_price;
		in->luld_upper = m->u.luld.upper_price;
		in->luld_lower = m->u.luld.lower_price;
		in->luld_extension = m->u.luld.extension;
		uf_pub_rec(r, c, UF_REC_STATUS, 0, st, loc, m->u.luld.reference_price,
		           m->u.luld.upper_price, UF_STATUS_LULD,
		           m->u.luld.lower_price | (uint64_t)m->u.luld.extension << 32);
		return 1;
	case 'h':
		in->op_halt = m->u.op_halt.action;
		uf_pub_rec(r, c, UF_REC_STATUS, 0, st, loc, 0, m->u.op_halt.action,
		           UF_STATUS_OP_HALT, m->u.op_halt.market_code);
		return 1;
	case 'I': {
		uint8_t dir = m->u.noii.direction;
		in->noii_paired = m->u.noii.paired_shares;
		in->noii_imbalance = m->u.noii.imbalance_shares;
		in->noii_direction = dir;
		in->noii_cross_type = m->u.noii.cross_type;
		in->noii_ref_price = m->u.noii.current_ref_price;
		in->noii_near_price = m->u.noii.near_price;
		in->noii_far_price = m->u.noii.far_price;
		uf_pub_rec(&r[0], c, UF_REC_STATUS, (dir == 'B' || dir == 'S') ? dir : 0, st, loc,
		           m->u.noii.current_ref_price, m->u.noii.imbalance_shares, UF_STATUS_NOII,
		           m->u.noii.paired_shares);
		uf_pub_rec(&r[1], c, UF_REC_STATUS, 0, st, loc, m->u.noii.near_price,
		           m->u.noii.far_price, UF_STATUS_NOII_PRICES,
		           dir | (uint64_t)m->u.noii.cross_type << 8 |
		               (uint64_t)m->u.noii.price_variation << 16);
		return 2;
	}
	case 'N':
		in->rpi = m->u.rpi.interest_flag;
		uf_pub_rec(r, c, UF_REC_STATUS, 0, st, loc, 0, m->u.rpi.interest_flag,
		           UF_STATUS_RPI, 0);
		return 1;
	case 'O':
		in->dlcr_open_eligible = m->u.dlcr.open_eligibility;
		in->dlcr_near_time = m->u.dlcr.near_exec_time;
		in->dlcr_near_price = m->u.dlcr.near_exec_price;
		in->dlcr_min_price = m->u.dlcr.min_price;
		in->dlcr_max_price = m->u.dlcr.max_price;
		in->dlcr_lower_collar = m->u.dlcr.lower_collar;
		in->dlcr_upper_collar = m->u.dlcr.upper_collar;
		uf_pub_rec(&r[0], c, UF_REC_STATUS, 0, st, loc, m->u.dlcr.near_exec_price,
		           m->u.dlcr.near_exec_time, UF_STATUS_DLCR, m->u.dlcr.open_eligibility);
		uf_pub_rec(&r[1], c, UF_REC_STATUS, 0, st, loc, m->u.dlcr.lower_collar,
		           m->u.dlcr.upper_collar, UF_STATUS_DLCR_COLLARS,
		           m->u.dlcr.min_price | (uint64_t)m->u.dlcr.max_price << 32);
		return 2;
	}
	return 0;
}

int uf_publish_lookup(const struct uf_publisher *p, const char *symbol)
{
	size_t len = strlen(symbol);
	if (len == 0 || len > UF_PUB_SYMBOL_LEN)
		return -ENOENT;
	char pad[UF_SYMBOL_LEN];
	uf_symbol_pad(pad, symbol);
	return uf_pub_sym_find(p, pad);
}

int uf_pub_sym_find(const struct uf_publisher *p, const char sym[8])
{
	uint64_t key = uf_pub_sym_key(sym);
	uint32_t i = uf_pub_sym_home(p, key);
	for (uint32_t n = 0; n <= p->sym_mask; n++) {
		uint32_t v = p->sym_slots[i];
		if (v == 0)
			return -ENOENT;
		if (uf_pub_sym_key(p->inst[v - 1].symbol) == key)
			return (int)(v - 1);
		i = (i + 1) & p->sym_mask;
	}
	return -ENOENT;
}

int uf_publish_symbol(const struct uf_publisher *p, uint32_t instrument, char buf[9])
{
	if (instrument >= p->max_instruments || !p->books[instrument].named)
		return -ENOENT;
	return (int)uf_symbol_unpad(buf, p->inst[instrument].symbol);
}

const struct uf_pub_instrument *uf_publish_instrument(const struct uf_publisher *p,
                                                      uint32_t instrument)
{
	return instrument < p->max_instruments ? &p->inst[instrument] : NULL;
}

const struct uf_pub_market *uf_publish_market(const struct uf_publisher *p)
{
	return &p->market;
}
