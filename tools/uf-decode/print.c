/* uf-decode print FILE [--limit N] [--payload KIND]: one JSON line per message, every field named
 * as in
 * ../shared/ITCH50-MOLDUDP64.md (snake_case), prices as integers in the feed's units,
 * character fields as strings with trailing spaces trimmed. Messages that did not decode
 * get a line with "error" naming the counter they went to. IEX DEEP/TOPS messages likewise,
 * fields named as in the IEX specifications (snake_case), with "protocol" ("deep"/"tops"),
 * prices as signed integers with 4 implied decimals, flag bytes as numbers. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/uf_parse.h"
#include "cmd.h"

struct print_ctx {
	FILE *f;          /* output */
	uint64_t limit;   /* lines to print, 0 = all */
	uint64_t printed; /* lines printed */
};

/* Bytes as a JSON string, trailing spaces trimmed, anything unprintable escaped. */
static void jstr(FILE *f, const char *key, const void *bytes, size_t n)
{
	const uint8_t *b = bytes;
	while (n && (b[n - 1] == ' ' || b[n - 1] == 0))
		n--;
	fprintf(f, ",\"%s\":\"", key);
	for (size_t i = 0; i < n; i++) {
		if (b[i] == '"' || b[i] == '\\')
			fprintf(f, "\\%c", b[i]);
		else if (b[i] < 0x20 || b[i] >= 0x7f)
			fprintf(f, "\\u%04x", b[i]);
		else
			fputc(b[i], f);
	}
	fputc('"', f);
}

/* One character field: kept even when it is a space (a space is a value in ITCH). */
static void jchr(FILE *f, const char *key, uint8_t c)
{
	if (c == '"' || c == '\\')
		fprintf(f, ",\"%s\":\"\\%c\"", key, c);
	else if (c < 0x20 || c >= 0x7f)
		fprintf(f, ",\"%s\":\"\\u%04x\"", key, c);
	else
		fprintf(f, ",\"%s\":\"%c\"", key, c);
}

static void ju(FILE *f, const char *key, uint64_t v)
{
	fprintf(f, ",\"%s\":%llu", key, (unsigned long long)v);
}

static void print_fields(FILE *f, const struct uf_itch_msg *m)
{
	switch (m->type) {
	case 'S':
		jchr(f, "event_code", m->u.sys.event);
		break;
	case 'R':
		jstr(f, "stock", m->u.dir.stock, 8);
		jchr(f, "market_category", m->u.dir.market_category);
		jchr(f, "financial_status", m->u.dir.financial_status);
		ju(f, "round_lot_size", m->u.dir.round_lot_size);
		jchr(f, "round_lots_only", m->u.dir.round_lots_only);
		jchr(f, "issue_classification", m->u.dir.issue_classification);
		jstr(f, "issue_sub_type", m->u.dir.issue_subtype, 2);
		jchr(f, "authenticity", m->u.dir.authenticity);
		jchr(f, "short_sale_threshold", m->u.dir.short_sale_threshold);
		jchr(f, "ipo_flag", m->u.dir.ipo_flag);
		jchr(f, "luld_tier", m->u.dir.luld_tier);
		jchr(f, "etp_flag", m->u.dir.etp_flag);
		ju(f, "etp_leverage", m->u.dir.etp_leverage);
		jchr(f, "inverse", m->u.dir.inverse);
		break;
	case 'H':
		jstr(f, "stock", m->u.trading_action.stock, 8);
		jchr(f, "trading_state", m->u.trading_action.trading_state);
		jchr(f, "reserved", m->u.trading_action.reserved);
		jstr(f, "reason", m->u.trading_action.reason, 4);
		break;
	case 'Y':
		jstr(f, "stock", m->u.reg_sho.stock, 8);
		jchr(f, "action", m->u.reg_sho.action);
		break;
	case 'L':
		jstr(f, "mpid", m->u.mp_position.mpid, 4);
		jstr(f, "stock", m->u.mp_position.stock, 8);
		jchr(f, "primary_mm", m->u.mp_position.primary_mm);
		jchr(f, "mm_mode", m->u.mp_position.mm_mode);
		jchr(f, "participant_state", m->u.mp_position.participant_state);
		break;
	case 'V':
		ju(f, "level_1", m->u.mwcb_decline.level1);
		ju(f, "level_2", m->u.mwcb_decline.level2);
		ju(f, "level_3", m->u.mwcb_decline.level3);
		break;
	case 'W':
		jchr(f, "breached_level", m->u.mwcb_status.breached_level);
		break;
	case 'K':
		jstr(f, "stock", m->u.ipo.stock, 8);
		ju(f, "release_time", m->u.ipo.release_time);
		jchr(f, "qualifier", m->u.ipo.qualifier);
		ju(f, "ipo_price", m->u.ipo.price);
		break;
	case 'J':
		jstr(f, "stock", m->u.luld.stock, 8);
		ju(f, "reference_price", m->u.luld.reference_price);
		ju(f, "upper_price", m->u.luld.upper_price);
		ju(f, "lower_price", m->u.luld.lower_price);
		ju(f, "extension", m->u.luld.extension);
		break;
	case 'h':
		jstr(f, "stock", m->u.op_halt.stock, 8);
		jchr(f, "market_code", m->u.op_halt.market_code);
		jchr(f, "action", m->u.op_halt.action);
		break;
	case 'A':
	case 'F':
		ju(f, "order_ref", m->u.add.order_ref);
		jchr(f, "side", m->u.add.side);
		ju(f, "shares", m->u.add.shares);
		jstr(f, "stock", m->u.add.stock, 8);
		ju(f, "price", m->u.add.price);
		if (m->type == 'F')
			jstr(f, "attribution", m->u.add.attribution, 4);
		break;
	case 'E':
	case 'C':
		ju(f, "order_ref", m->u.exec.order_ref);
		ju(f, "executed_shares", m->u.exec.shares);
		ju(f, "match_number", m->u.exec.match);
		if (m->type == 'C') {
			jchr(f, "printable", m->u.exec.printable);
			ju(f, "execution_price", m->u.exec.price);
		}
		break;
	case 'X':
		ju(f, "order_ref", m->u.cancel.order_ref);
		ju(f, "cancelled_shares", m->u.cancel.shares);
		break;
	case 'D':
		ju(f, "order_ref", m->u.del.order_ref);
		break;
	case 'U':
		ju(f, "original_ref", m->u.replace.orig_ref);
		ju(f, "new_ref", m->u.replace.new_ref);
		ju(f, "shares", m->u.replace.shares);
		ju(f, "price", m->u.replace.price);
		break;
	case 'P':
		ju(f, "order_ref", m->u.trade.order_ref);
		jchr(f, "side", m->u.trade.side);
		ju(f, "shares", m->u.trade.shares);
		jstr(f, "stock", m->u.trade.stock, 8);
		ju(f, "price", m->u.trade.price);
		ju(f, "match_number", m->u.trade.match);
		break;
	case 'Q':
		ju(f, "shares", m->u.cross.shares);
		jstr(f, "stock", m->u.cross.stock, 8);
		ju(f, "cross_price", m->u.cross.price);
		ju(f, "match_number", m->u.cross.match);
		jchr(f, "cross_type", m->u.cross.cross_type);
		break;
	case 'B':
		ju(f, "match_number", m->u.broken.match);
		break;
	case 'I':
		ju(f, "paired_shares", m->u.noii.paired_shares);
		ju(f, "imbalance_shares", m->u.noii.imbalance_shares);
		jchr(f, "direction", m->u.noii.direction);
		jstr(f, "stock", m->u.noii.stock, 8);
		ju(f, "far_price", m->u.noii.far_price);
		ju(f, "near_price", m->u.noii.near_price);
		ju(f, "current_ref_price", m->u.noii.current_ref_price);
		jchr(f, "cross_type", m->u.noii.cross_type);
		jchr(f, "price_variation", m->u.noii.price_variation);
		break;
	case 'N':
		jstr(f, "stock", m->u.rpi.stock, 8);
		jchr(f, "interest_flag", m->u.rpi.interest_flag);
		break;
	case 'O':
		jstr(f, "stock", m->u.dlcr.stock, 8);
		jchr(f, "open_eligibility", m->u.dlcr.open_eligibility);
		ju(f, "min_price", m->u.dlcr.min_price);
		ju(f, "max_price", m->u.dlcr.max_price);
		ju(f, "near_exec_price", m->u.dlcr.near_exec_price);
		ju(f, "near_exec_time", m->u.dlcr.near_exec_time);
		ju(f, "lower_collar", m->u.dlcr.lower_collar);
		ju(f, "upper_collar", m->u.dlcr.upper_collar);
		break;
	}
}

static int on_msg(void *ctx, uint64_t seq, const struct uf_itch_msg *m)
{
	struct print_ctx *p = ctx;
	FILE *f = p->f;
	fprintf(f, "{\"seq\":%llu", (unsigned long long)seq);
	jchr(f, "type", m->type);
	ju(f, "stock_locate", m->locate);
	ju(f, "tracking_number", m->tracking);
	ju(f, "timestamp", m->timestamp);
	print_fields(f, m);
	fputs("}\n", f);
	return p->limit && ++p->printed >= p->limit;
}

static void js(FILE *f, const char *key, int64_t v)
{
	fprintf(f, ",\"%s\":%lld", key, (long long)v);
}

static void print_iex_fields(FILE *f, const struct uf_iex_msg *m)
{
	switch (m->type) {
	case UF_IEX_SYSTEM_EVENT:
		jchr(f, "system_event", m->u.sys.event);
		break;
	case UF_IEX_SECURITY_DIRECTORY:
		ju(f, "flags", m->u.dir.flags);
		ju(f, "round_lot_size", m->u.dir.round_lot_size);
		js(f, "adjusted_poc_price", m->u.dir.adjusted_poc);
		ju(f, "luld_tier", m->u.dir.luld_tier);
		break;
	case UF_IEX_TRADING_STATUS:
		jchr(f, "trading_status", m->u.trading_status.status);
		jstr(f, "reason", m->u.trading_status.reason, 4);
		break;
	case UF_IEX_RETAIL_LIQUIDITY:
		jchr(f, "retail_liquidity_indicator", m->u.retail.indicator);
		break;
	case UF_IEX_OPERATIONAL_HALT:
		jchr(f, "operational_halt_status", m->u.op_halt.status);
		break;
	case UF_IEX_SHORT_SALE_TEST:
		ju(f, "short_sale_price_test_status", m->u.ssr.status);
		jchr(f, "detail", m->u.ssr.detail);
		break;
	case UF_IEX_SECURITY_EVENT:
		jchr(f, "security_event", m->u.sec_event.event);
		break;
	case UF_IEX_PRICE_LEVEL_BUY:
	case UF_IEX_PRICE_LEVEL_SELL:
		ju(f, "event_flags", m->u.level.flags);
		jchr(f, "side", m->u.level.side);
		ju(f, "size", m->u.level.size);
		js(f, "price", m->u.level.price);
		break;
	case UF_IEX_QUOTE_UPDATE:
		ju(f, "flags", m->u.quote.flags);
		ju(f, "bid_size", m->u.quote.bid_size);
		js(f, "bid_price", m->u.quote.bid_price);
		js(f, "ask_price", m->u.quote.ask_price);
		ju(f, "ask_size", m->u.quote.ask_size);
		break;
	case UF_IEX_TRADE_REPORT:
	case UF_IEX_TRADE_BREAK:
		ju(f, "sale_condition_flags", m->u.trade.flags);
		ju(f, "size", m->u.trade.size);
		js(f, "price", m->u.trade.price);
		ju(f, "trade_id", m->u.trade.trade_id);
		break;
	case UF_IEX_OFFICIAL_PRICE:
		jchr(f, "price_type", m->u.official.price_type);
		js(f, "official_price", m->u.official.price);
		break;
	case UF_IEX_AUCTION_INFO:
		jchr(f, "auction_type", m->u.auction.auction_type);
		ju(f, "paired_shares", m->u.auction.paired_shares);
		js(f, "reference_price", m->u.auction.reference_price);
		js(f, "indicative_clearing_price", m->u.auction.indicative_price);
		ju(f, "imbalance_shares", m->u.auction.imbalance_shares);
		jchr(f, "imbalance_side", m->u.auction.imbalance_side);
		ju(f, "extension_number", m->u.auction.extension);
		ju(f, "scheduled_auction_time", m->u.auction.scheduled_time);
		js(f, "auction_book_clearing_price", m->u.auction.book_clearing_price);
		js(f, "collar_reference_price", m->u.auction.collar_reference);
		js(f, "lower_auction_collar", m->u.auction.lower_collar);
		js(f, "upper_auction_collar", m->u.auction.upper_collar);
		break;
	}
}

static const char *iex_proto_name(uint16_t proto)
{
	return proto == UF_IEXTP_PROTO_DEEP   ? "deep"
	       : proto == UF_IEXTP_PROTO_TOPS ? "tops"
	                                      : "iex";
}

static int on_iex(void *ctx, uint64_t seq, uint16_t proto, const struct uf_iex_msg *m)
{
	struct print_ctx *p = ctx;
	FILE *f = p->f;
	fprintf(f, "{\"seq\":%llu,\"protocol\":\"%s\"", (unsigned long long)seq,
	        iex_proto_name(proto));
	jchr(f, "type", m->type);
	fprintf(f, ",\"name\":\"%s\"", uf_iex_type_name(m->type));
	js(f, "timestamp", m->timestamp);
	if (m->type != UF_IEX_SYSTEM_EVENT)
		jstr(f, "symbol", m->symbol, 8);
	print_iex_fields(f, m);
	fputs("}\n", f);
	return p->limit && ++p->printed >= p->limit;
}

/* One JSON error line for a message that did not decode; `prefix` names the venue's error
 * kinds ("" for ITCH, "iex_" for IEX). */
static int print_bad(struct print_ctx *p, const char *prefix, uint64_t seq, const uint8_t *msg,
                     size_t len, int rc)
{
	char err[32];
	if (len == 0)
		snprintf(err, sizeof(err), "%sempty_message", prefix);
	else if (rc == -ENOMSG)
		snprintf(err, sizeof(err), "%sunknown_type", prefix);
	else
		snprintf(err, sizeof(err), "%sbad_length_%c", prefix, msg[0]);
	fprintf(p->f, "{\"seq\":%llu,\"error\":\"%s\",\"length\":%zu", (unsigned long long)seq, err,
	        len);
	if (len)
		fprintf(p->f, ",\"type_byte\":%u", msg[0]);
	fputs("}\n", p->f);
	return p->limit && ++p->printed >= p->limit;
}

static int on_bad_iex(void *ctx, uint64_t seq, const uint8_t *msg, size_t len, int rc)
{
	return print_bad(ctx, "iex_", seq, msg, len, rc);
}

static int on_bad(void *ctx, uint64_t seq, const uint8_t *msg, size_t len, int rc)
{
	return print_bad(ctx, "", seq, msg, len, rc);
}

int uf_decode_cmd_print(int argc, char **argv)
{
	static char obuf[1 << 20];
	struct print_ctx p = {.f = stdout};
	const char *file = NULL;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--limit") && i + 1 < argc) {
			if (uf_parse_u64(argv[++i], 0, UINT64_MAX, &p.limit) < 0) {
				fprintf(stderr, "uf-decode print: --limit wants a number, got %s\n",
				        argv[i]);
				return UF_EXIT_USAGE;
			}
			if (p.limit == 0)
				return UF_EXIT_OK;
		} else if (!strcmp(argv[i], "--payload") && i + 1 < argc) {
			if (uf_input_set_payload(argv[++i]) < 0) {
				fprintf(stderr,
				        "uf-decode print: --payload wants auto, mold, iex-deep or "
				        "iex-tops, got %s\n",
				        argv[i]);
				return UF_EXIT_USAGE;
			}
		} else if (argv[i][0] == '-' && argv[i][1]) {
			fprintf(stderr, "uf-decode print: unknown option %s\n", argv[i]);
			return UF_EXIT_USAGE;
		} else if (!file) {
			file = argv[i];
		} else {
			fprintf(stderr, "uf-decode print: one FILE only\n");
			return UF_EXIT_USAGE;
		}
	}
	if (!file) {
		fprintf(stderr, "usage: uf-decode print FILE [--limit N] [--payload KIND]\n");
		return UF_EXIT_USAGE;
	}
	setvbuf(stdout, obuf, _IOFBF, sizeof(obuf));
	struct uf_decode_counters c;
	memset(&c, 0, sizeof(c));
	const struct uf_input_fns fns = {
	    .itch = on_msg, .iex = on_iex, .bad = on_bad, .bad_iex = on_bad_iex};
	int rc = uf_input_for_each_fns((const char *const *)&file, 1, &c, &fns, &p);
	if (fflush(stdout) != 0)
		return UF_EXIT_USAGE;
	if (rc != UF_EXIT_OK)
		return rc;
	return uf_decode_counters_errors(&c) ? UF_EXIT_INPUT_ERR : UF_EXIT_OK;
}
