/* ITCH 5.0 decoder: one hand-built spec vector per message type (offsets written out from
 * ../shared/ITCH50-MOLDUDP64.md, distinct values in every field so a swapped or shifted
 * field fails), wrong lengths for every type, unknown types, and reads bounded by `len`
 * (each vector lives in a heap buffer of exactly its length, so ASan sees any overread). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "decode/uf_decode.h"

/* Big-endian writers of the test's own (not the decoder's). */
static void w8(uint8_t *p, size_t off, uint8_t v)
{
	p[off] = v;
}
static void wn(uint8_t *p, size_t off, uint64_t v, int n)
{
	for (int i = n - 1; i >= 0; i--, v >>= 8)
		p[off + (size_t)i] = (uint8_t)v;
}
static void ws(uint8_t *p, size_t off, const char *s, size_t n)
{
	memset(p + off, ' ', n);
	memcpy(p + off, s, strlen(s) < n ? strlen(s) : n);
}

/* Common header: type @0, locate @1(2), tracking @3(2), timestamp @5(6). */
static uint8_t *vec(uint8_t type, size_t len)
{
	uint8_t *p = calloc(1, len);
	assert_non_null(p);
	w8(p, 0, type);
	wn(p, 1, 0x1234, 2);
	wn(p, 3, 0x0506, 2);
	wn(p, 5, 0x0000BADC0FFEEull, 6);
	return p;
}

static void check_header(const struct uf_itch_msg *m, uint8_t type, size_t len, const uint8_t *p)
{
	assert_int_equal(m->type, type);
	assert_int_equal(m->locate, 0x1234);
	assert_int_equal(m->tracking, 0x0506);
	assert_int_equal(m->timestamp, 0x0000BADC0FFEEull);
	assert_int_equal(m->len, len);
	assert_ptr_equal(m->raw, p);
}

static void decode_ok(uint8_t *p, size_t len, struct uf_itch_msg *m)
{
	assert_int_equal(uf_itch_msg_len(p[0]), len);
	assert_int_equal(uf_itch_decode(p, len, m), 0);
	check_header(m, p[0], len, p);
	/* The inline form is the same function. */
	struct uf_itch_msg m2;
	assert_int_equal(uf_itch_decode_inline(p, len, &m2), 0);
	assert_int_equal(m2.type, m->type);
}

static void test_itch_system_event_S(void **s)
{
	uint8_t *p = vec('S', 12);
	struct uf_itch_msg m;
	w8(p, 11, 'O');
	decode_ok(p, 12, &m);
	assert_int_equal(m.u.sys.event, 'O');
	free(p);
}

static void test_itch_stock_directory_R(void **s)
{
	uint8_t *p = vec('R', 39);
	struct uf_itch_msg m;
	ws(p, 11, "AAPL", 8);
	w8(p, 19, 'Q');
	w8(p, 20, 'N');
	wn(p, 21, 100, 4);
	w8(p, 25, 'Y');
	w8(p, 26, 'C');
	ws(p, 27, "Z", 2);
	w8(p, 29, 'P');
	w8(p, 30, 'N');
	w8(p, 31, 'I');
	w8(p, 32, '1');
	w8(p, 33, 'E');
	wn(p, 34, 0x01020304, 4);
	w8(p, 38, 'V');
	decode_ok(p, 39, &m);
	assert_memory_equal(m.u.dir.stock, "AAPL    ", 8);
	assert_int_equal(m.u.dir.market_category, 'Q');
	assert_int_equal(m.u.dir.financial_status, 'N');
	assert_int_equal(m.u.dir.round_lot_size, 100);
	assert_int_equal(m.u.dir.round_lots_only, 'Y');
	assert_int_equal(m.u.dir.issue_classification, 'C');
	assert_memory_equal(m.u.dir.issue_subtype, "Z ", 2);
	assert_int_equal(m.u.dir.authenticity, 'P');
	assert_int_equal(m.u.dir.short_sale_threshold, 'N');
	assert_int_equal(m.u.dir.ipo_flag, 'I');
	assert_int_equal(m.u.dir.luld_tier, '1');
	assert_int_equal(m.u.dir.etp_flag, 'E');
	assert_int_equal(m.u.dir.etp_leverage, 0x01020304);
	assert_int_equal(m.u.dir.inverse, 'V');
	free(p);
}

static void test_itch_trading_action_H(void **s)
{
	uint8_t *p = vec('H', 25);
	struct uf_itch_msg m;
	ws(p, 11, "MSFT", 8);
	w8(p, 19, 'H');
	w8(p, 20, 'r');
	ws(p, 21, "T1", 4);
	decode_ok(p, 25, &m);
	assert_memory_equal(m.u.trading_action.stock, "MSFT    ", 8);
	assert_int_equal(m.u.trading_action.trading_state, 'H');
	assert_int_equal(m.u.trading_action.reserved, 'r');
	assert_memory_equal(m.u.trading_action.reason, "T1  ", 4);
	free(p);
}

static void test_itch_reg_sho_Y(void **s)
{
	uint8_t *p = vec('Y', 20);
	struct uf_itch_msg m;
	ws(p, 11, "ZVZZT", 8);
	w8(p, 19, '1');
	decode_ok(p, 20, &m);
	assert_memory_equal(m.u.reg_sho.stock, "ZVZZT   ", 8);
	assert_int_equal(m.u.reg_sho.action, '1');
	free(p);
}

static void test_itch_market_participant_L(void **s)
{
	uint8_t *p = vec('L', 26);
	struct uf_itch_msg m;
	ws(p, 11, "GSCO", 4);
	ws(p, 15, "IBM", 8);
	w8(p, 23, 'Y');
	w8(p, 24, 'N');
	w8(p, 25, 'A');
	decode_ok(p, 26, &m);
	assert_memory_equal(m.u.mp_position.mpid, "GSCO", 4);
	assert_memory_equal(m.u.mp_position.stock, "IBM     ", 8);
	assert_int_equal(m.u.mp_position.primary_mm, 'Y');
	assert_int_equal(m.u.mp_position.mm_mode, 'N');
	assert_int_equal(m.u.mp_position.participant_state, 'A');
	free(p);
}

static void test_itch_mwcb_decline_V(void **s)
{
	uint8_t *p = vec('V', 35);
	struct uf_itch_msg m;
	wn(p, 11, 0x0102030405060708ull, 8);
	wn(p, 19, 0x1112131415161718ull, 8);
	wn(p, 27, 0x2122232425262728ull, 8);
	decode_ok(p, 35, &m);
	assert_int_equal(m.u.mwcb_decline.level1, 0x0102030405060708ull);
	assert_int_equal(m.u.mwcb_decline.level2, 0x1112131415161718ull);
	assert_int_equal(m.u.mwcb_decline.level3, 0x2122232425262728ull);
	free(p);
}

static void test_itch_mwcb_status_W(void **s)
{
	uint8_t *p = vec('W', 12);
	struct uf_itch_msg m;
	w8(p, 11, '2');
	decode_ok(p, 12, &m);
	assert_int_equal(m.u.mwcb_status.breached_level, '2');
	free(p);
}

static void test_itch_ipo_quoting_K(void **s)
{
	uint8_t *p = vec('K', 28);
	struct uf_itch_msg m;
	ws(p, 11, "NEWCO", 8);
	wn(p, 19, 34200, 4);
	w8(p, 23, 'A');
	wn(p, 24, 250000, 4);
	decode_ok(p, 28, &m);
	assert_memory_equal(m.u.ipo.stock, "NEWCO   ", 8);
	assert_int_equal(m.u.ipo.release_time, 34200);
	assert_int_equal(m.u.ipo.qualifier, 'A');
	assert_int_equal(m.u.ipo.price, 250000);
	free(p);
}

static void test_itch_luld_collar_J(void **s)
{
	uint8_t *p = vec('J', 35);
	struct uf_itch_msg m;
	ws(p, 11, "TSLA", 8);
	wn(p, 19, 2000000, 4);
	wn(p, 23, 2100000, 4);
	wn(p, 27, 1900000, 4);
	wn(p, 31, 3, 4);
	decode_ok(p, 35, &m);
	assert_int_equal(m.u.luld.reference_price, 2000000);
	assert_int_equal(m.u.luld.upper_price, 2100000);
	assert_int_equal(m.u.luld.lower_price, 1900000);
	assert_int_equal(m.u.luld.extension, 3);
	free(p);
}

static void test_itch_operational_halt_h(void **s)
{
	uint8_t *p = vec('h', 21);
	struct uf_itch_msg m;
	ws(p, 11, "QQQ", 8);
	w8(p, 19, 'B');
	w8(p, 20, 'H');
	decode_ok(p, 21, &m);
	assert_memory_equal(m.u.op_halt.stock, "QQQ     ", 8);
	assert_int_equal(m.u.op_halt.market_code, 'B');
	assert_int_equal(m.u.op_halt.action, 'H');
	free(p);
}

static void test_itch_add_order_A(void **s)
{
	uint8_t *p = vec('A', 36);
	struct uf_itch_msg m;
	wn(p, 11, 0xA1A2A3A4A5A6A7A8ull, 8);
	w8(p, 19, 'B');
	wn(p, 20, 0x00C0FFEE, 4);
	ws(p, 24, "GOOGL", 8);
	wn(p, 32, 1284600, 4);
	decode_ok(p, 36, &m);
	assert_int_equal(m.u.add.order_ref, 0xA1A2A3A4A5A6A7A8ull);
	assert_int_equal(m.u.add.side, 'B');
	assert_int_equal(m.u.add.shares, 0x00C0FFEE);
	assert_memory_equal(m.u.add.stock, "GOOGL   ", 8);
	assert_int_equal(m.u.add.price, 1284600);
	assert_memory_equal(m.u.add.attribution, "\0\0\0\0", 4);
	free(p);
}

static void test_itch_add_order_mpid_F(void **s)
{
	uint8_t *p = vec('F', 40);
	struct uf_itch_msg m;
	wn(p, 11, 77, 8);
	w8(p, 19, 'S');
	wn(p, 20, 300, 4);
	ws(p, 24, "META", 8);
	wn(p, 32, 3001234, 4);
	ws(p, 36, "VIRT", 4);
	decode_ok(p, 40, &m);
	assert_int_equal(m.u.add.order_ref, 77);
	assert_int_equal(m.u.add.side, 'S');
	assert_int_equal(m.u.add.shares, 300);
	assert_int_equal(m.u.add.price, 3001234);
	assert_memory_equal(m.u.add.attribution, "VIRT", 4);
	free(p);
}

static void test_itch_order_executed_E(void **s)
{
	uint8_t *p = vec('E', 31);
	struct uf_itch_msg m;
	wn(p, 11, 0x1111222233334444ull, 8);
	wn(p, 19, 0x55667788, 4);
	wn(p, 23, 255554, 8);
	decode_ok(p, 31, &m);
	assert_int_equal(m.u.exec.order_ref, 0x1111222233334444ull);
	assert_int_equal(m.u.exec.shares, 0x55667788);
	assert_int_equal(m.u.exec.match, 255554);
	free(p);
}

static void test_itch_order_executed_price_C(void **s)
{
	uint8_t *p = vec('C', 36);
	struct uf_itch_msg m;
	wn(p, 11, 9, 8);
	wn(p, 19, 50, 4);
	wn(p, 23, 0x0A0B0C0D0E0F1011ull, 8);
	w8(p, 31, 'Y');
	wn(p, 32, 1284700, 4);
	decode_ok(p, 36, &m);
	assert_int_equal(m.u.exec.order_ref, 9);
	assert_int_equal(m.u.exec.shares, 50);
	assert_int_equal(m.u.exec.match, 0x0A0B0C0D0E0F1011ull);
	assert_int_equal(m.u.exec.printable, 'Y');
	assert_int_equal(m.u.exec.price, 1284700);
	free(p);
}

static void test_itch_order_cancel_X(void **s)
{
	uint8_t *p = vec('X', 23);
	struct uf_itch_msg m;
	wn(p, 11, 0xFFFFFFFFFFFFFFFEull, 8);
	wn(p, 19, 0xFFFFFFFF, 4);
	decode_ok(p, 23, &m);
	assert_int_equal(m.u.cancel.order_ref, 0xFFFFFFFFFFFFFFFEull);
	assert_int_equal(m.u.cancel.shares, 0xFFFFFFFFu);
	free(p);
}

static void test_itch_order_delete_D(void **s)
{
	uint8_t *p = vec('D', 19);
	struct uf_itch_msg m;
	wn(p, 11, 123456789, 8);
	decode_ok(p, 19, &m);
	assert_int_equal(m.u.del.order_ref, 123456789);
	free(p);
}

static void test_itch_order_replace_U(void **s)
{
	uint8_t *p = vec('U', 35);
	struct uf_itch_msg m;
	wn(p, 11, 1000, 8);
	wn(p, 19, 2000, 8);
	wn(p, 27, 400, 4);
	wn(p, 31, 999900, 4);
	decode_ok(p, 35, &m);
	assert_int_equal(m.u.replace.orig_ref, 1000);
	assert_int_equal(m.u.replace.new_ref, 2000);
	assert_int_equal(m.u.replace.shares, 400);
	assert_int_equal(m.u.replace.price, 999900);
	free(p);
}

static void test_itch_trade_P(void **s)
{
	uint8_t *p = vec('P', 44);
	struct uf_itch_msg m;
	wn(p, 11, 0, 8);
	w8(p, 19, 'B');
	wn(p, 20, 100, 4);
	ws(p, 24, "GOOGL", 8);
	wn(p, 32, 1284600, 4);
	wn(p, 36, 255554, 8);
	decode_ok(p, 44, &m);
	assert_int_equal(m.u.trade.order_ref, 0);
	assert_int_equal(m.u.trade.side, 'B');
	assert_int_equal(m.u.trade.shares, 100);
	assert_memory_equal(m.u.trade.stock, "GOOGL   ", 8);
	assert_int_equal(m.u.trade.price, 1284600);
	assert_int_equal(m.u.trade.match, 255554);
	free(p);
}

static void test_itch_cross_trade_Q(void **s)
{
	uint8_t *p = vec('Q', 40);
	struct uf_itch_msg m;
	wn(p, 11, 0x0000000100000002ull, 8);
	ws(p, 19, "SPY", 8);
	wn(p, 27, 4500000, 4);
	wn(p, 31, 42, 8);
	w8(p, 39, 'O');
	decode_ok(p, 40, &m);
	assert_int_equal(m.u.cross.shares, 0x0000000100000002ull);
	assert_memory_equal(m.u.cross.stock, "SPY     ", 8);
	assert_int_equal(m.u.cross.price, 4500000);
	assert_int_equal(m.u.cross.match, 42);
	assert_int_equal(m.u.cross.cross_type, 'O');
	free(p);
}

static void test_itch_broken_trade_B(void **s)
{
	uint8_t *p = vec('B', 19);
	struct uf_itch_msg m;
	wn(p, 11, 0xDEADBEEFull, 8);
	decode_ok(p, 19, &m);
	assert_int_equal(m.u.broken.match, 0xDEADBEEFull);
	free(p);
}

static void test_itch_noii_I(void **s)
{
	uint8_t *p = vec('I', 50);
	struct uf_itch_msg m;
	wn(p, 11, 1000000, 8);
	wn(p, 19, 2500, 8);
	w8(p, 27, 'S');
	ws(p, 28, "AMZN", 8);
	wn(p, 36, 1300000, 4);
	wn(p, 40, 1310000, 4);
	wn(p, 44, 1320000, 4);
	w8(p, 48, 'C');
	w8(p, 49, 'L');
	decode_ok(p, 50, &m);
	assert_int_equal(m.u.noii.paired_shares, 1000000);
	assert_int_equal(m.u.noii.imbalance_shares, 2500);
	assert_int_equal(m.u.noii.direction, 'S');
	assert_memory_equal(m.u.noii.stock, "AMZN    ", 8);
	assert_int_equal(m.u.noii.far_price, 1300000);
	assert_int_equal(m.u.noii.near_price, 1310000);
	assert_int_equal(m.u.noii.current_ref_price, 1320000);
	assert_int_equal(m.u.noii.cross_type, 'C');
	assert_int_equal(m.u.noii.price_variation, 'L');
	free(p);
}

static void test_itch_retail_interest_N(void **s)
{
	uint8_t *p = vec('N', 20);
	struct uf_itch_msg m;
	ws(p, 11, "BAC", 8);
	w8(p, 19, 'A');
	decode_ok(p, 20, &m);
	assert_memory_equal(m.u.rpi.stock, "BAC     ", 8);
	assert_int_equal(m.u.rpi.interest_flag, 'A');
	free(p);
}

static void test_itch_dlcr_O(void **s)
{
	uint8_t *p = vec('O', 48);
	struct uf_itch_msg m;
	ws(p, 11, "ARM", 8);
	w8(p, 19, 'Y');
	wn(p, 20, 500000, 4);
	wn(p, 24, 600000, 4);
	wn(p, 28, 550000, 4);
	wn(p, 32, 0x0000112233445566ull, 8);
	wn(p, 40, 520000, 4);
	wn(p, 44, 580000, 4);
	decode_ok(p, 48, &m);
	assert_memory_equal(m.u.dlcr.stock, "ARM     ", 8);
	assert_int_equal(m.u.dlcr.open_eligibility, 'Y');
	assert_int_equal(m.u.dlcr.min_price, 500000);
	assert_int_equal(m.u.dlcr.max_price, 600000);
	assert_int_equal(m.u.dlcr.near_exec_price, 550000);
	assert_int_equal(m.u.dlcr.near_exec_time, 0x0000112233445566ull);
	assert_int_equal(m.u.dlcr.lower_collar, 520000);
	assert_int_equal(m.u.dlcr.upper_collar, 580000);
	free(p);
}

/* Every type, every wrong length from 1 to 60: -EBADMSG, counted as bad_length_<type>, and
 * nothing read past len (exact-size heap buffers under ASan). */
static void test_itch_wrong_length_rejected_for_every_type(void **s)
{
	static const struct {
		char t;
		size_t len;
	} spec[] = {
	    {'S', 12}, {'R', 39}, {'H', 25}, {'Y', 20}, {'L', 26}, {'V', 35}, {'W', 12}, {'K', 28},
	    {'J', 35}, {'h', 21}, {'A', 36}, {'F', 40}, {'E', 31}, {'C', 36}, {'X', 23}, {'D', 19},
	    {'U', 35}, {'P', 44}, {'Q', 40}, {'B', 19}, {'I', 50}, {'N', 20}, {'O', 48},
	};
	assert_int_equal(UF_ARRAY_SIZE(spec), UF_ITCH_NTYPES);
	for (size_t i = 0; i < UF_ARRAY_SIZE(spec); i++) {
		assert_int_equal(uf_itch_msg_len((uint8_t)spec[i].t), spec[i].len);
		assert_int_equal(uf_itch_type_index((uint8_t)spec[i].t),
		                 strchr(UF_ITCH_TYPES, spec[i].t) - UF_ITCH_TYPES);
		for (size_t len = 1; len <= 60; len++) {
			if (len == spec[i].len)
				continue;
			uint8_t *p = malloc(len);
			assert_non_null(p);
			memset(p, 0x5a, len);
			p[0] = (uint8_t)spec[i].t;
			struct uf_itch_msg m;
			struct uf_decode_counters c;
			memset(&c, 0, sizeof(c));
			assert_int_equal(uf_decode_msg_counted(p, len, &m, &c), -EBADMSG);
			assert_int_equal(c.itch_bad_len[uf_itch_type_index((uint8_t)spec[i].t)], 1);
			assert_int_equal(c.messages, 0);
			assert_int_equal(uf_decode_counters_errors(&c), 1);
			free(p);
		}
	}
}

static void test_itch_unknown_type_counted_and_skipped(void **s)
{
	int unknown = 0;
	for (int t = 0; t < 256; t++) {
		if (uf_itch_msg_len((uint8_t)t))
			continue;
		unknown++;
		uint8_t *p = malloc(1);
		p[0] = (uint8_t)t;
		struct uf_itch_msg m;
		struct uf_decode_counters c;
		memset(&c, 0, sizeof(c));
		assert_int_equal(uf_decode_msg_counted(p, 1, &m, &c), -ENOMSG);
		assert_int_equal(c.itch_unknown_type, 1);
		assert_int_equal(m.type, t);
		free(p);
	}
	assert_int_equal(unknown, 256 - UF_ITCH_NTYPES);
	struct uf_itch_msg m;
	struct uf_decode_counters c;
	memset(&c, 0, sizeof(c));
	uint8_t dummy = 'A';
	assert_int_equal(uf_decode_msg_counted(&dummy, 0, &m, &c), -EBADMSG);
	assert_int_equal(c.itch_empty, 1);
}

struct names {
	int n;
	int seen_bad_len_A, seen_unknown, seen_trunc_hdr;
};

static void name_cb(void *ctx, const char *name, uint64_t v)
{
	struct names *nm = ctx;
	nm->n++;
	if (!strcmp(name, "bad_length_A"))
		nm->seen_bad_len_A = (int)v;
	if (!strcmp(name, "unknown_type"))
		nm->seen_unknown = (int)v;
	if (!strcmp(name, "truncated_header"))
		nm->seen_trunc_hdr = (int)v;
}

struct stat_names {
	int n;
	uint64_t packets, type_h;
};

static void stat_cb(void *ctx, const char *name, uint64_t v)
{
	struct stat_names *sn = ctx;
	sn->n++;
	if (!strcmp(name, "packets"))
		sn->packets = v;
	if (!strcmp(name, "type_h"))
		sn->type_h = v;
}

static void test_counters_have_stable_names(void **s)
{
	struct uf_decode_counters c;
	memset(&c, 0, sizeof(c));
	c.itch_bad_len[uf_itch_type_index('A')] = 3;
	c.itch_unknown_type = 2;
	c.mold_err[UF_MOLD_ERR_TRUNCATED_HEADER] = 1;
	struct names nm = {0};
	assert_int_equal(uf_decode_counters_foreach_error(&c, name_cb, &nm), 6);
	assert_int_equal(nm.n, UF_MOLD_NERR + UF_ITCH_NTYPES + 2 + UF_FILE_NERR);
	assert_int_equal(nm.seen_bad_len_A, 3);
	assert_int_equal(nm.seen_unknown, 2);
	assert_int_equal(nm.seen_trunc_hdr, 1);
	assert_string_equal(uf_mold_err_name(UF_MOLD_ERR_BLOCK_OVERRUNS_PACKET),
	                    "block_overruns_packet");
	c.packets = 7;
	c.by_type[uf_itch_type_index('h')] = 5;
	struct stat_names sn = {0};
	uf_decode_counters_foreach_stat(&c, stat_cb, &sn);
	assert_int_equal(sn.n, 7 + UF_ITCH_NTYPES);
	assert_int_equal(sn.packets, 7);
	assert_int_equal(sn.type_h, 5);
	struct uf_decode_counters d;
	memset(&d, 0, sizeof(d));
	uf_decode_counters_add(&d, &c);
	uf_decode_counters_add(&d, &c);
	assert_int_equal(uf_decode_counters_errors(&d), 12);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_itch_system_event_S),
	    cmocka_unit_test(test_itch_stock_directory_R),
	    cmocka_unit_test(test_itch_trading_action_H),
	    cmocka_unit_test(test_itch_reg_sho_Y),
	    cmocka_unit_test(test_itch_market_participant_L),
	    cmocka_unit_test(test_itch_mwcb_decline_V),
	    cmocka_unit_test(test_itch_mwcb_status_W),
	    cmocka_unit_test(test_itch_ipo_quoting_K),
	    cmocka_unit_test(test_itch_luld_collar_J),
	    cmocka_unit_test(test_itch_operational_halt_h),
	    cmocka_unit_test(test_itch_add_order_A),
	    cmocka_unit_test(test_itch_add_order_mpid_F),
	    cmocka_unit_test(test_itch_order_executed_E),
	    cmocka_unit_test(test_itch_order_executed_price_C),
	    cmocka_unit_test(test_itch_order_cancel_X),
	    cmocka_unit_test(test_itch_order_delete_D),
	    cmocka_unit_test(test_itch_order_replace_U),
	    cmocka_unit_test(test_itch_trade_P),
	    cmocka_unit_test(test_itch_cross_trade_Q),
	    cmocka_unit_test(test_itch_broken_trade_B),
	    cmocka_unit_test(test_itch_noii_I),
	    cmocka_unit_test(test_itch_retail_interest_N),
	    cmocka_unit_test(test_itch_dlcr_O),
	    cmocka_unit_test(test_itch_wrong_length_rejected_for_every_type),
	    cmocka_unit_test(test_itch_unknown_type_counted_and_skipped),
	    cmocka_unit_test(test_counters_have_stable_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
