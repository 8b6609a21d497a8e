/* IEX DEEP 1.0 / TOPS 1.6 messages: every type decoded field by field from vectors built here
 * from the specifications' layouts (plus the TOPS specification's quote update example),
 * exact lengths, unknown types, per-protocol type sets, and the counters' names. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "decode/uf_decode.h"

#define TS 1493132621826542542ll /* a timestamp of the real DEEP capture */

/* Common 18 bytes: type, code, timestamp, symbol (space padded). */
static void head(uint8_t *m, uint8_t type, uint8_t code, const char *sym)
{
	m[0] = type;
	m[1] = code;
	uf_put_le64(m + 2, (uint64_t)TS);
	if (sym) {
		memset(m + 10, ' ', 8);
		memcpy(m + 10, sym, strlen(sym));
	}
}

static void decode_ok(const uint8_t *m, size_t len, struct uf_iex_msg *out)
{
	memset(out, 0x5a, sizeof(*out)); /* every field checked below must be written */
	assert_int_equal(uf_iex_decode(m, len, out), m[0]);
	assert_int_equal(out->type, m[0]);
	assert_int_equal(out->code, m[1]);
	assert_int_equal(out->len, len);
	assert_ptr_equal(out->raw, m);
	assert_int_equal(out->timestamp, TS);
	assert_int_equal(uf_iex_msg_len(m[0]), len);
}

static void test_iex_system_event_S(void **s)
{
	uint8_t m[10];
	head(m, 'S', 'O', NULL);
	struct uf_iex_msg d;
	decode_ok(m, sizeof(m), &d);
	assert_int_equal(d.u.sys.event, 'O');
	static const char zero[8];
	assert_memory_equal(d.symbol, zero, 8); /* no symbol on the wire */
}

static void test_iex_security_directory_D(void **s)
{
	uint8_t m[31];
	head(m, 'D', UF_IEX_DIR_TEST | UF_IEX_DIR_ETP, "ZEXIT");
	uf_put_le32(m + 18, 100);
	uf_put_le64(m + 22, 100000); /* $10.0000 */
	m[30] = 2;
	struct uf_iex_msg d;
	decode_ok(m, sizeof(m), &d);
	assert_memory_equal(d.symbol, "ZEXIT   ", 8);
	assert_int_equal(d.u.dir.flags, 0xA0);
	assert_int_equal(d.u.dir.round_lot_size, 100);
	assert_int_equal(d.u.dir.adjusted_poc, 100000);
	assert_int_equal(d.u.dir.luld_tier, 2);
}

static void test_iex_trading_status_H(void **s)
{
	uint8_t m[22];
	head(m, 'H', 'H', "AAPL");
	memcpy(m + 18, "T1  ", 4);
	struct uf_iex_msg d;
	decode_ok(m, sizeof(m), &d);
	assert_memory_equal(d.symbol, "AAPL    ", 8);
	assert_int_equal(d.u.trading_status.status, 'H');
	assert_memory_equal(d.u.trading_status.reason, "T1  ", 4);
}

static void test_iex_retail_liquidity_I_operational_halt_O_security_event_E(void **s)
{
	uint8_t m[18];
	struct uf_iex_msg d;
	head(m, 'I', 'C', "IBM");
	decode_ok(m, sizeof(m), &d);
	assert_int_equal(d.u.retail.indicator, 'C');
	assert_memory_equal(d.symbol, "IBM     ", 8);
	head(m, 'O', 'O', "ZVZZT");
	decode_ok(m, sizeof(m), &d);
	assert_int_equal(d.u.op_halt.status, 'O');
	assert_memory_equal(d.symbol, "ZVZZT   ", 8);
	head(m, 'E', 'C', "ZXIET");
	decode_ok(m, sizeof(m), &d);
	assert_int_equal(d.u.sec_event.event, 'C');
}

static void test_iex_short_sale_price_test_P(void **s)
{
	uint8_t m[19];
	head(m, 'P', 1, "MSFT");
	m[18] = 'A';
	struct uf_iex_msg d;
	decode_ok(m, sizeof(m), &d);
	assert_int_equal(d.u.ssr.status, 1);
	assert_int_equal(d.u.ssr.detail, 'A');
}

static void test_iex_price_level_updates_8_and_5(void **s)
{
	uint8_t m[30];
	struct uf_iex_msg d;
	head(m, '8', UF_IEX_LEVEL_EVENT_COMPLETE, "ZIEXT");
	uf_put_le32(m + 18, 9700);
	uf_put_le64(m + 22, 990500); /* $99.05 */
	decode_ok(m, sizeof(m), &d);
	assert_int_equal(d.u.level.flags, 1);
	assert_int_equal(d.u.level.side, 'B');
	assert_int_equal(d.u.level.size, 9700);
	assert_int_equal(d.u.level.price, 990500);
	head(m, '5', 0, "ZIEXT");
	uf_put_le32(m + 18, 0); /* size 0: the level is gone */
	uf_put_le64(m + 22, 990700);
	decode_ok(m, sizeof(m), &d);
	assert_int_equal(d.u.level.flags, 0);
	assert_int_equal(d.u.level.side, 'S');
	assert_int_equal(d.u.level.size, 0);
	assert_int_equal(d.u.level.price, 990700);
}

/* The quote update example of the TOPS specification: ZIEXT, bid 9,700 @ 99.05, ask 1,000 @
 * 99.07, 2016-08-23 19:30:32.5727 UTC. */
static void test_iex_quote_update_Q_spec_example(void **s)
{
	static const uint8_t m[42] = {
	    0x51, 0x00, 0xac, 0x63, 0xc0, 0x20, 0x96, 0x86, 0x6d, 0x14, 0x5a, 0x49, 0x45, 0x58,
	    0x54, 0x20, 0x20, 0x20, 0xe4, 0x25, 0x00, 0x00, 0x24, 0x1d, 0x0f, 0x00, 0x00, 0x00,
	    0x00, 0x00, 0xec, 0x1d, 0x0f, 0x00, 0x00, 0x00, 0x00, 0x00, 0xe8, 0x03, 0x00, 0x00};
	struct uf_iex_msg d;
	assert_int_equal(uf_iex_decode(m, sizeof(m), &d), 'Q');
	assert_memory_equal(d.symbol, "ZIEXT   ", 8);
	assert_int_equal(d.u.quote.flags, 0);
	assert_int_equal(d.u.quote.bid_size, 9700);
	assert_int_equal(d.u.quote.bid_price, 990500);
	assert_int_equal(d.u.quote.ask_price, 990700);
	assert_int_equal(d.u.quote.ask_size, 1000);
	/* 2016-08-23 19:30:32.572715948 UTC in ns since the epoch (0x146D869620C063AC). */
	assert_int_equal(d.timestamp, 1471980632572715948ll);
}

static void test_iex_trade_report_T_and_break_B(void **s)
{
	uint8_t m[38];
	struct uf_iex_msg d;
	head(m, 'T', UF_IEX_SALE_ISO | UF_IEX_SALE_ODD_LOT, "ZIEXT");
	uf_put_le32(m + 18, 100);
	uf_put_le64(m + 22, 990500);
	uf_put_le64(m + 30, 429974);
	decode_ok(m, sizeof(m), &d);
	assert_int_equal(d.u.trade.flags, 0xA0);
	assert_int_equal(d.u.trade.size, 100);
	assert_int_equal(d.u.trade.price, 990500);
	assert_int_equal(d.u.trade.trade_id, 429974);
	m[0] = 'B';
	decode_ok(m, sizeof(m), &d);
	assert_int_equal(d.u.trade.trade_id, 429974);
}

static void test_iex_official_price_X_negative_price_kept(void **s)
{
	uint8_t m[26];
	head(m, 'X', 'Q', "ZIEXT");
	uf_put_le64(m + 18, (uint64_t)-12345); /* signed on the wire */
	struct uf_iex_msg d;
	decode_ok(m, sizeof(m), &d);
	assert_int_equal(d.u.official.price_type, 'Q');
	assert_int_equal(d.u.official.price, -12345);
}

static void test_iex_auction_information_A(void **s)
{
	uint8_t m[80];
	head(m, 'A', 'C', "ZIEXT");
	uf_put_le32(m + 18, 10000);
	uf_put_le64(m + 22, 990500);
	uf_put_le64(m + 30, 990600);
	uf_put_le32(m + 38, 2000);
	m[42] = 'B';
	m[43] = 1;
	uf_put_le32(m + 44, 1499715000);
	uf_put_le64(m + 48, 990700);
	uf_put_le64(m + 56, 990800);
	uf_put_le64(m + 64, 891700);
	uf_put_le64(m + 72, 1089900);
	struct uf_iex_msg d;
	decode_ok(m, sizeof(m), &d);
	assert_int_equal(d.u.auction.auction_type, 'C');
	assert_int_equal(d.u.auction.paired_shares, 10000);
	assert_int_equal(d.u.auction.reference_price, 990500);
	assert_int_equal(d.u.auction.indicative_price, 990600);
	assert_int_equal(d.u.auction.imbalance_shares, 2000);
	assert_int_equal(d.u.auction.imbalance_side, 'B');
	assert_int_equal(d.u.auction.extension, 1);
	assert_int_equal(d.u.auction.scheduled_time, 1499715000);
	assert_int_equal(d.u.auction.book_clearing_price, 990700);
	assert_int_equal(d.u.auction.collar_reference, 990800);
	assert_int_equal(d.u.auction.lower_collar, 891700);
	assert_int_equal(d.u.auction.upper_collar, 1089900);
}

/* Every type refuses one byte less and one more; nothing is read past len (ASan). */
static void test_iex_lengths_are_exact_for_every_type(void **s)
{
	static const struct {
		char t;
		size_t len;
	} want[] = {{'S', 10}, {'D', 31}, {'H', 22}, {'I', 18}, {'O', 18}, {'P', 19}, {'E', 18},
	            {'8', 30}, {'5', 30}, {'Q', 42}, {'T', 38}, {'X', 26}, {'B', 38}, {'A', 80}};
	assert_int_equal(sizeof(want) / sizeof(want[0]), UF_IEX_NTYPES);
	for (size_t i = 0; i < UF_IEX_NTYPES; i++) {
		uint8_t t = (uint8_t)want[i].t;
		assert_int_equal(uf_iex_msg_len(t), want[i].len);
		assert_int_equal(uf_iex_type_index(t), (int)i); /* UF_IEX_TYPES order */
		assert_int_equal(UF_IEX_TYPES[i], t);
		assert_string_not_equal(uf_iex_type_name(t), "unknown");
		uint8_t m[UF_IEX_MAX_LEN + 1];
		memset(m, 0, sizeof(m));
		m[0] = t;
		struct uf_iex_msg d;
		assert_int_equal(uf_iex_decode(m, want[i].len, &d), t);
		assert_int_equal(uf_iex_decode(m, want[i].len - 1, &d), -EBADMSG);
		assert_int_equal(uf_iex_decode(m, want[i].len + 1, &d), -EBADMSG);
		assert_int_equal(d.type, t);
		assert_int_equal(d.len, want[i].len + 1);
	}
	uint8_t z = 0;
	struct uf_iex_msg d;
	assert_int_equal(uf_iex_decode(&z, 0, &d), -EBADMSG);
	/* Every byte that is not one of the 14 letters is unknown, at any length. */
	int unknown = 0;
	for (int t = 0; t < 256; t++) {
		uint8_t m[UF_IEX_MAX_LEN] = {(uint8_t)t};
		if (uf_iex_msg_len((uint8_t)t))
			continue;
		unknown++;
		assert_int_equal(uf_iex_decode(m, 18, &d), -ENOMSG);
		assert_int_equal(d.type, t);
		assert_int_equal(uf_iex_type_index((uint8_t)t), -1);
		assert_string_equal(uf_iex_type_name((uint8_t)t), "unknown");
	}
	assert_int_equal(unknown, 256 - UF_IEX_NTYPES);
}

static void test_iex_each_protocol_keeps_its_types(void **s)
{
	for (const char *t = UF_IEX_TYPES; *t; t++) {
		int deep = uf_iex_type_in_proto((uint8_t)*t, UF_IEXTP_PROTO_DEEP);
		int tops = uf_iex_type_in_proto((uint8_t)*t, UF_IEXTP_PROTO_TOPS);
		assert_int_equal(deep, *t != 'Q');
		assert_int_equal(tops, *t != '8' && *t != '5');
		assert_int_equal(uf_iex_type_in_proto((uint8_t)*t, 0x1234), 0);
	}
	uint8_t q[42] = {'Q'}, l[30] = {'8'};
	struct uf_iex_msg d;
	struct uf_decode_counters c;
	memset(&c, 0, sizeof(c));
	assert_int_equal(uf_iex_decode_counted(UF_IEXTP_PROTO_DEEP, q, 42, &d, &c), -ENOMSG);
	assert_int_equal(uf_iex_decode_counted(UF_IEXTP_PROTO_TOPS, l, 30, &d, &c), -ENOMSG);
	assert_int_equal(c.iex_unknown_type, 2);
	assert_int_equal(uf_iex_decode_counted(UF_IEXTP_PROTO_TOPS, q, 42, &d, &c), 'Q');
	assert_int_equal(uf_iex_decode_counted(UF_IEXTP_PROTO_DEEP, l, 30, &d, &c), '8');
	assert_int_equal(uf_iex_decode_counted(0, q, 42, &d, &c), 'Q'); /* 0: either */
	assert_int_equal(c.iex_by_type[uf_iex_type_index('Q')], 2);
	assert_int_equal(c.iex_by_type[uf_iex_type_index('8')], 1);
	assert_int_equal(c.messages, 3);
	assert_int_equal(c.bytes, 42 + 30 + 42);
	assert_int_equal(uf_iex_decode_counted(UF_IEXTP_PROTO_DEEP, l, 29, &d, &c), -EBADMSG);
	assert_int_equal(uf_iex_decode_counted(UF_IEXTP_PROTO_DEEP, l, 0, &d, &c), -EBADMSG);
	assert_int_equal(c.iex_bad_len[uf_iex_type_index('8')], 1);
	assert_int_equal(c.iex_empty, 1);
	assert_int_equal(uf_decode_counters_errors(&c), 4);
}

struct names {
	int n;
	uint64_t bad_q, unknown, empty, restarts, type_8, packets;
};

static void name_cb(void *ctx, const char *name, uint64_t v)
{
	struct names *nm = ctx;
	nm->n++;
	if (!strcmp(name, "iex_bad_length_Q"))
		nm->bad_q = v;
	if (!strcmp(name, "iex_unknown_type"))
		nm->unknown = v;
	if (!strcmp(name, "iex_empty_message"))
		nm->empty = v;
	if (!strcmp(name, "iex_stream_restarts"))
		nm->restarts = v;
	if (!strcmp(name, "iex_type_8"))
		nm->type_8 = v;
	if (!strcmp(name, "iex_packets"))
		nm->packets = v;
}

static void test_iex_counters_have_stable_names(void **s)
{
	struct uf_decode_counters c;
	memset(&c, 0, sizeof(c));
	c.iex_bad_len[uf_iex_type_index('Q')] = 3;
	c.iex_unknown_type = 2;
	c.iex_empty = 1;
	c.iex_stream_restarts = 11;
	c.iex_by_type[uf_iex_type_index('8')] = 5;
	c.iex_packets = 7;
	struct names nm = {0};
	assert_int_equal(uf_decode_counters_foreach_iex_error(&c, name_cb, &nm), 6);
	assert_int_equal(nm.n, UF_IEX_NTYPES + 3);
	assert_int_equal(nm.bad_q, 3);
	assert_int_equal(nm.unknown, 2);
	assert_int_equal(nm.empty, 1);
	memset(&nm, 0, sizeof(nm));
	uf_decode_counters_foreach_iex_stat(&c, name_cb, &nm);
	assert_int_equal(nm.n, 2 + UF_IEX_NTYPES);
	assert_int_equal(nm.restarts, 11);
	assert_int_equal(nm.type_8, 5);
	assert_int_equal(nm.packets, 7);
	/* The IEX errors are errors of the whole struct (what uf-decode exits 1 on). */
	assert_int_equal(uf_decode_counters_errors(&c), 6);
	struct uf_decode_counters d;
	memset(&d, 0, sizeof(d));
	uf_decode_counters_add(&d, &c);
	assert_int_equal(d.iex_stream_restarts, 11);
	assert_string_equal(uf_mold_err_name(UF_MOLD_ERR_PAYLOAD_PAST_DATAGRAM),
	                    "payload_length_past_datagram");
	assert_string_equal(uf_mold_err_name(UF_MOLD_ERR_BAD_VERSION), "bad_version");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_iex_system_event_S),
	    cmocka_unit_test(test_iex_security_directory_D),
	    cmocka_unit_test(test_iex_trading_status_H),
	    cmocka_unit_test(test_iex_retail_liquidity_I_operational_halt_O_security_event_E),
	    cmocka_unit_test(test_iex_short_sale_price_test_P),
	    cmocka_unit_test(test_iex_price_level_updates_8_and_5),
	    cmocka_unit_test(test_iex_quote_update_Q_spec_example),
	    cmocka_unit_test(test_iex_trade_report_T_and_break_B),
	    cmocka_unit_test(test_iex_official_price_X_negative_price_kept),
	    cmocka_unit_test(test_iex_auction_information_A),
	    cmocka_unit_test(test_iex_lengths_are_exact_for_every_type),
	    cmocka_unit_test(test_iex_each_protocol_keeps_its_types),
	    cmocka_unit_test(test_iex_counters_have_stable_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
