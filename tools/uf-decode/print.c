/* uf-decode print FILE [--limit N] [--payload KIND]: one JSON line per message, every field named
 * as in
 * ../shared/ITCH50-MOLDUDP64.md (snake_case), prices as integers in the feed's units,
 * character fields as strings with trailing spaces trimmed. Messages that did not decode
 * get a line with "error" naming the counter they went to. IEX DEEP/TOPS messages likewise,
 * fields named as in the IEX specifications (snake_case), with "protocol" ("deep"/"tops"),
 * prices as signed integers with 4 implied decimals, flag bytes as numbers. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
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

static void js(FILE *f, const char *key, int64_t v)
{
	fprintf(f, ",\"%s\":%lld", key, (long long)v);
}

/* How a field prints: jchr, jstr, ju or js. */
enum pf_kind { PF_CHR, PF_STR, PF_UNS, PF_SIG };

/* One field of a decoded message, for the tables below: one place says which fields each
 * message type has and under which key, pf_print prints any of them. */
struct pf_field {
	const char *key;   /* JSON key; NULL ends a table */
	uint16_t off;      /* offset in the decoded struct (uf_itch_msg, uf_iex_msg) */
	uint8_t size;      /* bytes: the integer's width, the string's length */
	uint8_t kind;      /* enum pf_kind */
	uint8_t is_signed; /* an integer member of a signed type (widened as C would) */
	uint8_t only;      /* printed for this message type only; 0 = every type of the table */
};

#define PF_SIGNED(x) _Generic((x), int8_t : 1, int16_t : 1, int32_t : 1, int64_t : 1, default : 0)
#define PF_FIELD(T, kind, key, member, only)                                                       \
	{                                                                                          \
		key, offsetof(T, member), sizeof(((T *)0)->member), kind,                          \
		    PF_SIGNED(((T *)0)->member), only                                              \
	}

/* The integer field at p, widened to 64 bits as an assignment from its own type would. */
static uint64_t pf_int(const struct pf_field *fl, const uint8_t *p)
{
	uint8_t v8;
	uint16_t v16;
	uint32_t v32;
	uint64_t v64;

	switch (fl->size) {
	case 1:
		memcpy(&v8, p, 1);
		return fl->is_signed ? (uint64_t)(int64_t)(int8_t)v8 : v8;
	case 2:
		memcpy(&v16, p, 2);
		return fl->is_signed ? (uint64_t)(int64_t)(int16_t)v16 : v16;
	case 4:
		memcpy(&v32, p, 4);
		return fl->is_signed ? (uint64_t)(int64_t)(int32_t)v32 : v32;
	default:
		memcpy(&v64, p, 8);
		return v64;
	}
}

/* Prints the fields `table[type]` lists of the decoded message `msg` (none when the type has
 * no entry). */
static void pf_print(FILE *f, const void *msg, uint8_t type,
                     const struct pf_field *const table[256])
{
	const uint8_t *base = msg;

	for (const struct pf_field *fl = table[type]; fl && fl->key; fl++) {
		if (fl->only && fl->only != type)
			continue;
		switch (fl->kind) {
		case PF_CHR:
			jchr(f, fl->key, base[fl->off]);
			break;
		case PF_STR:
			jstr(f, fl->key, base + fl->off, fl->size);
			break;
		case PF_UNS:
			ju(f, fl->key, pf_int(fl, base + fl->off));
			break;
		default:
			js(f, fl->key, (int64_t)pf_int(fl, base + fl->off));
			break;
		}
	}
}

/* The fields of each ITCH 5.0 message type after the common header, in message order. */
#define ITCH(kind, key, member)            PF_FIELD(struct uf_itch_msg, kind, key, member, 0)
#define ITCH_ONLY(type, kind, key, member) PF_FIELD(struct uf_itch_msg, kind, key, member, type)
static const struct pf_field itch_sys[] = {ITCH(PF_CHR, "event_code", u.sys.event), {0}};
static const struct pf_field itch_dir[] = {
    ITCH(PF_STR, "stock", u.dir.stock),
    ITCH(PF_CHR, "market_category", u.dir.market_category),
    ITCH(PF_CHR, "financial_status", u.dir.financial_status),
    ITCH(PF_UNS, "round_lot_size", u.dir.round_lot_size),
    ITCH(PF_CHR, "round_lots_only", u.dir.round_lots_only),
    ITCH(PF_CHR, "issue_classification", u.dir.issue_classification),
    ITCH(PF_STR, "issue_sub_type", u.dir.issue_subtype),
    ITCH(PF_CHR, "authenticity", u.dir.authenticity),
    ITCH(PF_CHR, "short_sale_threshold", u.dir.short_sale_threshold),
    ITCH(PF_CHR, "ipo_flag", u.dir.ipo_flag),
    ITCH(PF_CHR, "luld_tier", u.dir.luld_tier),
    ITCH(PF_CHR, "etp_flag", u.dir.etp_flag),
    ITCH(PF_UNS, "etp_leverage", u.dir.etp_leverage),
    ITCH(PF_CHR, "inverse", u.dir.inverse),
    {0}};
static const struct pf_field itch_trading_action[] = {
    ITCH(PF_STR, "stock", u.trading_action.stock),
    ITCH(PF_CHR, "trading_state", u.trading_action.trading_state),
    ITCH(PF_CHR, "reserved", u.trading_action.reserved),
    ITCH(PF_STR, "reason", u.trading_action.reason),
    {0}};
static const struct pf_field itch_reg_sho[] = {
    ITCH(PF_STR, "stock", u.reg_sho.stock), ITCH(PF_CHR, "action", u.reg_sho.action), {0}};
static const struct pf_field itch_mp_position[] = {
    ITCH(PF_STR, "mpid", u.mp_position.mpid),
    ITCH(PF_STR, "stock", u.mp_position.stock),
    ITCH(PF_CHR, "primary_mm", u.mp_position.primary_mm),
    ITCH(PF_CHR, "mm_mode", u.mp_position.mm_mode),
    ITCH(PF_CHR, "participant_state", u.mp_position.participant_state),
    {0}};
static const struct pf_field itch_mwcb_decline[] = {ITCH(PF_UNS, "level_1", u.mwcb_decline.level1),
                                                    ITCH(PF_UNS, "level_2", u.mwcb_decline.level2),
                                                    ITCH(PF_UNS, "level_3", u.mwcb_decline.level3),
                                                    {0}};
static const struct pf_field itch_mwcb_status[] = {
    ITCH(PF_CHR, "breached_level", u.mwcb_status.breached_level), {0}};
static const struct pf_field itch_ipo[] = {ITCH(PF_STR, "stock", u.ipo.stock),
                                           ITCH(PF_UNS, "release_time", u.ipo.release_time),
                                           ITCH(PF_CHR, "qualifier", u.ipo.qualifier),
                                           ITCH(PF_UNS, "ipo_price", u.ipo.price),
                                           {0}};
static const struct pf_field itch_luld[] = {ITCH(PF_STR, "stock", u.luld.stock),
                                            ITCH(PF_UNS, "reference_price", u.luld.reference_price),
                                            ITCH(PF_UNS, "upper_price", u.luld.upper_price),
                                            ITCH(PF_UNS, "lower_price", u.luld.lower_price),
                                            ITCH(PF_UNS, "extension", u.luld.extension),
                                            {0}};
static const struct pf_field itch_op_halt[] = {ITCH(PF_STR, "stock", u.op_halt.stock),
                                               ITCH(PF_CHR, "market_code", u.op_halt.market_code),
                                               ITCH(PF_CHR, "action", u.op_halt.action),
                                               {0}};
static const struct pf_field itch_add[] = {ITCH(PF_UNS, "order_ref", u.add.order_ref),
                                           ITCH(PF_CHR, "side", u.add.side),
                                           ITCH(PF_UNS, "shares", u.add.shares),
                                           ITCH(PF_STR, "stock", u.add.stock),
                                           ITCH(PF_UNS, "price", u.add.price),
                                           ITCH_ONLY('F', PF_STR, "attribution", u.add.attribution),
                                           {0}};
static const struct pf_field itch_exec[] = {ITCH(PF_UNS, "order_ref", u.exec.order_ref),
                                            ITCH(PF_UNS, "executed_shares", u.exec.shares),
                                            ITCH(PF_UNS, "match_number", u.exec.match),
                                            ITCH_ONLY('C', PF_CHR, "printable", u.exec.printable),
                                            ITCH_ONLY('C', PF_UNS, "execution_price", u.exec.price),
                                            {0}};
static const struct pf_field itch_cancel[] = {ITCH(PF_UNS, "order_ref", u.cancel.order_ref),
                                              ITCH(PF_UNS, "cancelled_shares", u.cancel.shares),
                                              {0}};
static const struct pf_field itch_del[] = {ITCH(PF_UNS, "order_ref", u.del.order_ref), {0}};
static const struct pf_field itch_replace[] = {ITCH(PF_UNS, "original_ref", u.replace.orig_ref),
                                               ITCH(PF_UNS, "new_ref", u.replace.new_ref),
                                               ITCH(PF_UNS, "shares", u.replace.shares),
                                               ITCH(PF_UNS, "price", u.replace.price),
                                               {0}};
static const struct pf_field itch_trade[] = {ITCH(PF_UNS, "order_ref", u.trade.order_ref),
                                             ITCH(PF_CHR, "side", u.trade.side),
                                             ITCH(PF_UNS, "shares", u.trade.shares),
                                             ITCH(PF_STR, "stock", u.trade.stock),
                                             ITCH(PF_UNS, "price", u.trade.price),
                                             ITCH(PF_UNS, "match_number", u.trade.match),
                                             {0}};
static const struct pf_field itch_cross[] = {
    ITCH(PF_UNS, "shares", u.cross.shares),         ITCH(PF_STR, "stock", u.cross.stock),
    ITCH(PF_UNS, "cross_price", u.cross.price),     ITCH(PF_UNS, "match_number", u.cross.match),
    ITCH(PF_CHR, "cross_type", u.cross.cross_type), {0}};
static const struct pf_field itch_broken[] = {ITCH(PF_UNS, "match_number", u.broken.match), {0}};
static const struct pf_field itch_noii[] = {
    ITCH(PF_UNS, "paired_shares", u.noii.paired_shares),
    ITCH(PF_UNS, "imbalance_shares", u.noii.imbalance_shares),
    ITCH(PF_CHR, "direction", u.noii.direction),
    ITCH(PF_STR, "stock", u.noii.stock),
    ITCH(PF_UNS, "far_price", u.noii.far_price),
    ITCH(PF_UNS, "near_price", u.noii.near_price),
    ITCH(PF_UNS, "current_ref_price", u.noii.current_ref_price),
    ITCH(PF_CHR, "cross_type", u.noii.cross_type),
    ITCH(PF_CHR, "price_variation", u.noii.price_variation),
    {0}};
static const struct pf_field itch_rpi[] = {
    ITCH(PF_STR, "stock", u.rpi.stock), ITCH(PF_CHR, "interest_flag", u.rpi.interest_flag), {0}};
static const struct pf_field itch_dlcr[] = {
    ITCH(PF_STR, "stock", u.dlcr.stock),
    ITCH(PF_CHR, "open_eligibility", u.dlcr.open_eligibility),
    ITCH(PF_UNS, "min_price", u.dlcr.min_price),
    ITCH(PF_UNS, "max_price", u.dlcr.max_price),
    ITCH(PF_UNS, "near_exec_price", u.dlcr.near_exec_price),
    ITCH(PF_UNS, "near_exec_time", u.dlcr.near_exec_time),
    ITCH(PF_UNS, "lower_collar", u.dlcr.lower_collar),
    ITCH(PF_UNS, "upper_collar", u.dlcr.upper_collar),
    {0}};

static const struct pf_field *const itch_fields[256] = {
    ['S'] = itch_sys,         ['R'] = itch_dir,         ['H'] = itch_trading_action,
    ['Y'] = itch_reg_sho,     ['L'] = itch_mp_position, ['V'] = itch_mwcb_decline,
    ['W'] = itch_mwcb_status, ['K'] = itch_ipo,         ['J'] = itch_luld,
    ['h'] = itch_op_halt,     ['A'] = itch_add,         ['F'] = itch_add,
    ['E'] = itch_exec,        ['C'] = itch_exec,        ['X'] = itch_cancel,
    ['D'] = itch_del,         ['U'] = itch_replace,     ['P'] = itch_trade,
    ['Q'] = itch_cross,       ['B'] = itch_broken,      ['I'] = itch_noii,
    ['N'] = itch_rpi,         ['O'] = itch_dlcr,
};

static int on_msg(void *ctx, uint64_t seq, const struct uf_itch_msg *m)
{
	struct print_ctx *p = ctx;
	FILE *f = p->f;
	fprintf(f, "{\"seq\":%llu", (unsigned long long)seq);
	jchr(f, "type", m->type);
	ju(f, "stock_locate", m->locate);
	ju(f, "tracking_number", m->tracking);
	ju(f, "timestamp", m->timestamp);
	pf_print(f, m, m->type, itch_fields);
	fputs("}\n", f);
	return p->limit && ++p->printed >= p->limit;
}

/* The fields of each IEX message type after the timestamp and symbol, in message order. */
#define IEX(kind, key, member) PF_FIELD(struct uf_iex_msg, kind, key, member, 0)
static const struct pf_field iex_sys[] = {IEX(PF_CHR, "system_event", u.sys.event), {0}};
static const struct pf_field iex_dir[] = {IEX(PF_UNS, "flags", u.dir.flags),
                                          IEX(PF_UNS, "round_lot_size", u.dir.round_lot_size),
                                          IEX(PF_SIG, "adjusted_poc_price", u.dir.adjusted_poc),
                                          IEX(PF_UNS, "luld_tier", u.dir.luld_tier),
                                          {0}};
static const struct pf_field iex_trading_status[] = {
    IEX(PF_CHR, "trading_status", u.trading_status.status),
    IEX(PF_STR, "reason", u.trading_status.reason),
    {0}};
static const struct pf_field iex_retail[] = {
    IEX(PF_CHR, "retail_liquidity_indicator", u.retail.indicator), {0}};
static const struct pf_field iex_op_halt[] = {
    IEX(PF_CHR, "operational_halt_status", u.op_halt.status), {0}};
static const struct pf_field iex_ssr[] = {IEX(PF_UNS, "short_sale_price_test_status", u.ssr.status),
                                          IEX(PF_CHR, "detail", u.ssr.detail),
                                          {0}};
static const struct pf_field iex_sec_event[] = {IEX(PF_CHR, "security_event", u.sec_event.event),
                                                {0}};
static const struct pf_field iex_level[] = {IEX(PF_UNS, "event_flags", u.level.flags),
                                            IEX(PF_CHR, "side", u.level.side),
                                            IEX(PF_UNS, "size", u.level.size),
                                            IEX(PF_SIG, "price", u.level.price),
                                            {0}};
static const struct pf_field iex_quote[] = {
    IEX(PF_UNS, "flags", u.quote.flags),         IEX(PF_UNS, "bid_size", u.quote.bid_size),
    IEX(PF_SIG, "bid_price", u.quote.bid_price), IEX(PF_SIG, "ask_price", u.quote.ask_price),
    IEX(PF_UNS, "ask_size", u.quote.ask_size),   {0}};
static const struct pf_field iex_trade[] = {IEX(PF_UNS, "sale_condition_flags", u.trade.flags),
                                            IEX(PF_UNS, "size", u.trade.size),
                                            IEX(PF_SIG, "price", u.trade.price),
                                            IEX(PF_UNS, "trade_id", u.trade.trade_id),
                                            {0}};
static const struct pf_field iex_official[] = {IEX(PF_CHR, "price_type", u.official.price_type),
                                               IEX(PF_SIG, "official_price", u.official.price),
                                               {0}};
static const struct pf_field iex_auction[] = {
    IEX(PF_CHR, "auction_type", u.auction.auction_type),
    IEX(PF_UNS, "paired_shares", u.auction.paired_shares),
    IEX(PF_SIG, "reference_price", u.auction.reference_price),
    IEX(PF_SIG, "indicative_clearing_price", u.auction.indicative_price),
    IEX(PF_UNS, "imbalance_shares", u.auction.imbalance_shares),
    IEX(PF_CHR, "imbalance_side", u.auction.imbalance_side),
    IEX(PF_UNS, "extension_number", u.auction.extension),
    IEX(PF_UNS, "scheduled_auction_time", u.auction.scheduled_time),
    IEX(PF_SIG, "auction_book_clearing_price", u.auction.book_clearing_price),
    IEX(PF_SIG, "collar_reference_price", u.auction.collar_reference),
    IEX(PF_SIG, "lower_auction_collar", u.auction.lower_collar),
    IEX(PF_SIG, "upper_auction_collar", u.auction.upper_collar),
    {0}};

static const struct pf_field *const iex_fields[256] = {
    [UF_IEX_SYSTEM_EVENT] = iex_sys,
    [UF_IEX_SECURITY_DIRECTORY] = iex_dir,
    [UF_IEX_TRADING_STATUS] = iex_trading_status,
    [UF_IEX_RETAIL_LIQUIDITY] = iex_retail,
    [UF_IEX_OPERATIONAL_HALT] = iex_op_halt,
    [UF_IEX_SHORT_SALE_TEST] = iex_ssr,
    [UF_IEX_SECURITY_EVENT] = iex_sec_event,
    [UF_IEX_PRICE_LEVEL_BUY] = iex_level,
    [UF_IEX_PRICE_LEVEL_SELL] = iex_level,
    [UF_IEX_QUOTE_UPDATE] = iex_quote,
    [UF_IEX_TRADE_REPORT] = iex_trade,
    [UF_IEX_TRADE_BREAK] = iex_trade,
    [UF_IEX_OFFICIAL_PRICE] = iex_official,
    [UF_IEX_AUCTION_INFO] = iex_auction,
};

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
	pf_print(f, m, m->type, iex_fields);
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
