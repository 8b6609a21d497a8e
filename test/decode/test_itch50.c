/* ITCH 5.0 decoder: one hand-built spec vector per message type (offsets written out from
 * ../shared/ITCH50-MOLDUDP64.md, distinct values in every field so a swapped or shifted
 * field fails), wrong lengths for every type, unknown types, and reads bounded by `len`
 * (each vector lives in a heap buffer of exactly its length, so ASan sees any overread). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
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

/* One field of a spec vector, a table row ({FN(...)} a number, {FS(...)} a string): written
 * at `off`, `width` bytes (the big-endian number `v`, or the string `str` space padded), and
 * expected back in the decoded member at `moff` (`msize` bytes). Where the spec puts a field
 * and where the decoder must put it stand on one line. */
struct field {
	size_t off, width;  /* in the message */
	uint64_t v;         /* the number, when str is NULL */
	const char *str;    /* the string, or NULL */
	size_t moff, msize; /* the member of struct uf_itch_msg */
};

#define FIELD_MEMBER(member)                                                                       \
	offsetof(struct uf_itch_msg, member), sizeof(((struct uf_itch_msg *)0)->member)
#define FN(off, width, v, member)   off, width, v, NULL, FIELD_MEMBER(member)
#define FS(off, width, str, member) off, width, 0, str, FIELD_MEMBER(member)

/* The unsigned integer member of `size` bytes at p. */
static uint64_t member_u(const uint8_t *p, size_t size)
{
	uint8_t v8;
	uint16_t v16;
	uint32_t v32;
	uint64_t v64;

	switch (size) {
	case 1:
		memcpy(&v8, p, 1);
		return v8;
	case 2:
		memcpy(&v16, p, 2);
		return v16;
	case 4:
		memcpy(&v32, p, 4);
		return v32;
	default:
		assert_int_equal(size, 8);
		memcpy(&v64, p, 8);
		return v64;
	}
}

/* Builds the vector of `type`, `len` bytes (vec's header, then the n fields f), decodes it
 * into *m (decode_ok) and checks each field in its member. */
static void check_vector(uint8_t type, size_t len, const struct field *f, size_t n,
                         struct uf_itch_msg *m)
{
	uint8_t *p = vec(type, len);
	for (size_t i = 0; i < n; i++) {
		if (f[i].str)
			ws(p, f[i].off, f[i].str, f[i].width);
		else
			wn(p, f[i].off, f[i].v, (int)f[i].width);
	}
	decode_ok(p, len, m);
	for (size_t i = 0; i < n; i++) {
		const uint8_t *got = (const uint8_t *)m + f[i].moff;
		if (f[i].str) {
			char want[16];
			size_t k = strlen(f[i].str);
			assert_int_equal(f[i].msize, f[i].width);
			assert_true(f[i].width <= sizeof(want));
			memset(want, ' ', f[i].width);
			memcpy(want, f[i].str, k < f[i].width ? k : f[i].width);
			if (memcmp(got, want, f[i].width) != 0)
				fprintf(stderr, "'%c' field at offset %zu:\n", type, f[i].off);
			assert_memory_equal(got, want, f[i].width);
		} else {
			if (member_u(got, f[i].msize) != f[i].v)
				fprintf(stderr, "'%c' field at offset %zu:\n", type, f[i].off);
			assert_int_equal(member_u(got, f[i].msize), f[i].v);
		}
	}
	free(p);
}

static void test_itch_system_event_S(void **s)
{
	static const struct field f[] = {
	    {FN(11, 1, 'O', u.sys.event)},
	};
	struct uf_itch_msg m;
	check_vector('S', 12, f, UF_ARRAY_SIZE(f), &m);
}

static void test_itch_stock_directory_R(void **s)
{
	static const struct field f[] = {
	    {FS(11, 8, "AAPL", u.dir.stock)},
	    {FN(19, 1, 'Q', u.dir.market_category)},
	    {FN(20, 1, 'N', u.dir.financial_status)},
	    {FN(21, 4, 100, u.dir.round_lot_size)},
	    {FN(25, 1, 'Y', u.dir.round_lots_only)},
	    {FN(26, 1, 'C', u.dir.issue_classification)},
	    {FS(27, 2, "Z", u.dir.issue_subtype)},
	    {FN(29, 1, 'P', u.dir.authenticity)},
	    {FN(30, 1, 'N', u.dir.short_sale_threshold)},
	    {FN(31, 1, 'I', u.dir.ipo_flag)},
	    {FN(32, 1, '1', u.dir.luld_tier)},
	    {FN(33, 1, 'E', u.dir.etp_flag)},
	    {FN(34, 4, 0x01020304, u.dir.etp_leverage)},
	    {FN(38, 1, 'V', u.dir.inverse)},
	};
	struct uf_itch_msg m;
	check_vector('R', 39, f, UF_ARRAY_SIZE(f), &m);
}

static void test_itch_trading_action_H(void **s)
{
	static const struct field f[] = {
	    {FS(11, 8, "MSFT", u.trading_action.stock)},
	    {FN(19, 1, 'H', u.trading_action.trading_state)},
	    {FN(20, 1, 'r', u.trading_action.reserved)},
	    {FS(21, 4, "T1", u.trading_action.reason)},
	};
	struct uf_itch_msg m;
	check_vector('H', 25, f, UF_ARRAY_SIZE(f), &m);
}

static void test_itch_reg_sho_Y(void **s)
{
	static const struct field f[] = {
	    {FS(11, 8, "ZVZZT", u.reg_sho.stock)},
	    {FN(19, 1, '1', u.reg_sho.action)},
	};
	struct uf_itch_msg m;
	check_vector('Y', 20, f, UF_ARRAY_SIZE(f), &m);
}

static void test_itch_market_participant_L(void **s)
{
	static const struct field f[] = {
	    {FS(11, 4, "GSCO", u.mp_position.mpid)},
	    {FS(15, 8, "IBM", u.mp_position.stock)},
	    {FN(23, 1, 'Y', u.mp_position.primary_mm)},
	    {FN(24, 1, 'N', u.mp_position.mm_mode)},
	    {FN(25, 1, 'A', u.mp_position.participant_state)},
	};
	struct uf_itch_msg m;
	check_vector('L', 26, f, UF_ARRAY_SIZE(f), &m);
}

static void test_itch_mwcb_decline_V(void **s)
{
	static const struct field f[] = {
	    {FN(11, 8, 0x0102030405060708ull, u.mwcb_decline.level1)},
	    {FN(19, 8, 0x1112131415161718ull, u.mwcb_decline.level2)},
	    {FN(27, 8, 0x2122232425262728ull, u.mwcb_decline.level3)},
	};
	struct uf_itch_msg m;
	check_vector('V', 35, f, UF_ARRAY_SIZE(f), &m);
}

static void test_itch_mwcb_status_W(void **s)
{
	static const struct field f[] = {
	    {FN(11, 1, '2', u.mwcb_status.breached_level)},
	};
	struct uf_itch_msg m;
	check_vector('W', 12, f, UF_ARRAY_SIZE(f), &m);
}

static void test_itch_ipo_quoting_K(void **s)
{
	static const struct field f[] = {
	    {FS(11, 8, "NEWCO", u.ipo.stock)},
	    {FN(19, 4, 34200, u.ipo.release_time)},
	    {FN(23, 1, 'A', u.ipo.qualifier)},
	    {FN(24, 4, 250000, u.ipo.price)},
	};
	struct uf_itch_msg m;
	check_vector('K', 28, f, UF_ARRAY_SIZE(f), &m);
}

static void test_itch_luld_collar_J(void **s)
{
	static const struct field f[] = {
	    {FS(11, 8, "TSLA", u.luld.stock)},        {FN(19, 4, 2000000, u.luld.reference_price)},
	    {FN(23, 4, 2100000, u.luld.upper_price)}, {FN(27, 4, 1900000, u.luld.lower_price)},
	    {FN(31, 4, 3, u.luld.extension)},
	};
	struct uf_itch_msg m;
	check_vector('J', 35, f, UF_ARRAY_SIZE(f), &m);
}

static void test_itch_operational_halt_h(void **s)
{
	static const struct field f[] = {
	    {FS(11, 8, "QQQ", u.op_halt.stock)},
	    {FN(19, 1, 'B', u.op_halt.market_code)},
	    {FN(20, 1, 'H', u.op_halt.action)},
	};
	struct uf_itch_msg m;
	check_vector('h', 21, f, UF_ARRAY_SIZE(f), &m);
}

static void test_itch_add_order_A(void **s)
{
	static const struct field f[] = {
	    {FN(11, 8, 0xA1A2A3A4A5A6A7A8ull, u.add.order_ref)},
	    {FN(19, 1, 'B', u.add.side)},
	    {FN(20, 4, 0x00C0FFEE, u.add.shares)},
	    {FS(24, 8, "GOOGL", u.add.stock)},
	    {FN(32, 4, 1284600, u.add.price)},
	};
	struct uf_itch_msg m;
	check_vector('A', 36, f, UF_ARRAY_SIZE(f), &m);
	assert_memory_equal(m.u.add.attribution, "\0\0\0\0", 4);
}

static void test_itch_add_order_mpid_F(void **s)
{
	static const struct field f[] = {
	    {FN(11, 8, 77, u.add.order_ref)},  {FN(19, 1, 'S', u.add.side)},
	    {FN(20, 4, 300, u.add.shares)},    {FS(24, 8, "META", u.add.stock)},
	    {FN(32, 4, 3001234, u.add.price)}, {FS(36, 4, "VIRT", u.add.attribution)},
	};
	struct uf_itch_msg m;
	check_vector('F', 40, f, UF_ARRAY_SIZE(f), &m);
}

static void test_itch_order_executed_E(void **s)
{
	static const struct field f[] = {
	    {FN(11, 8, 0x1111222233334444ull, u.exec.order_ref)},
	    {FN(19, 4, 0x55667788, u.exec.shares)},
	    {FN(23, 8, 255554, u.exec.match)},
	};
	struct uf_itch_msg m;
	check_vector('E', 31, f, UF_ARRAY_SIZE(f), &m);
}

static void test_itch_order_executed_price_C(void **s)
{
	static const struct field f[] = {
	    {FN(11, 8, 9, u.exec.order_ref)},
	    {FN(19, 4, 50, u.exec.shares)},
	    {FN(23, 8, 0x0A0B0C0D0E0F1011ull, u.exec.match)},
	    {FN(31, 1, 'Y', u.exec.printable)},
	    {FN(32, 4, 1284700, u.exec.price)},
	};
	struct uf_itch_msg m;
	check_vector('C', 36, f, UF_ARRAY_SIZE(f), &m);
}

static void test_itch_order_cancel_X(void **s)
{
	static const struct field f[] = {
	    {FN(11, 8, 0xFFFFFFFFFFFFFFFEull, u.cancel.order_ref)},
	    {FN(19, 4, 0xFFFFFFFF, u.cancel.shares)},
	};
	struct uf_itch_msg m;
	check_vector('X', 23, f, UF_ARRAY_SIZE(f), &m);
}

static void test_itch_order_delete_D(void **s)
{
	static const struct field f[] = {
	    {FN(11, 8, 123456789, u.del.order_ref)},
	};
	struct uf_itch_msg m;
	check_vector('D', 19, f, UF_ARRAY_SIZE(f), &m);
}

static void test_itch_order_replace_U(void **s)
{
	static const struct field f[] = {
	    {FN(11, 8, 1000, u.replace.orig_ref)},
	    {FN(19, 8, 2000, u.replace.new_ref)},
	    {FN(27, 4, 400, u.replace.shares)},
	    {FN(31, 4, 999900, u.replace.price)},
	};
	struct uf_itch_msg m;
	check_vector('U', 35, f, UF_ARRAY_SIZE(f), &m);
}

static void test_itch_trade_P(void **s)
{
	static const struct field f[] = {
	    {FN(11, 8, 0, u.trade.order_ref)},   {FN(19, 1, 'B', u.trade.side)},
	    {FN(20, 4, 100, u.trade.shares)},    {FS(24, 8, "GOOGL", u.trade.stock)},
	    {FN(32, 4, 1284600, u.trade.price)}, {FN(36, 8, 255554, u.trade.match)},
	};
	struct uf_itch_msg m;
	check_vector('P', 44, f, UF_ARRAY_SIZE(f), &m);
}

static void test_itch_cross_trade_Q(void **s)
{
	static const struct field f[] = {
	    {FN(11, 8, 0x0000000100000002ull, u.cross.shares)},
	    {FS(19, 8, "SPY", u.cross.stock)},
	    {FN(27, 4, 4500000, u.cross.price)},
	    {FN(31, 8, 42, u.cross.match)},
	    {FN(39, 1, 'O', u.cross.cross_type)},
	};
	struct uf_itch_msg m;
	check_vector('Q', 40, f, UF_ARRAY_SIZE(f), &m);
}

static void test_itch_broken_trade_B(void **s)
{
	static const struct field f[] = {
	    {FN(11, 8, 0xDEADBEEFull, u.broken.match)},
	};
	struct uf_itch_msg m;
	check_vector('B', 19, f, UF_ARRAY_SIZE(f), &m);
}

static void test_itch_noii_I(void **s)
{
	static const struct field f[] = {
	    {FN(11, 8, 1000000, u.noii.paired_shares)},
	    {FN(19, 8, 2500, u.noii.imbalance_shares)},
	    {FN(27, 1, 'S', u.noii.direction)},
	    {FS(28, 8, "AMZN", u.noii.stock)},
	    {FN(36, 4, 1300000, u.noii.far_price)},
	    {FN(40, 4, 1310000, u.noii.near_price)},
	    {FN(44, 4, 1320000, u.noii.current_ref_price)},
	    {FN(48, 1, 'C', u.noii.cross_type)},
	    {FN(49, 1, 'L', u.noii.price_variation)},
	};
	struct uf_itch_msg m;
	check_vector('I', 50, f, UF_ARRAY_SIZE(f), &m);
}

static void test_itch_retail_interest_N(void **s)
{
	static const struct field f[] = {
	    {FS(11, 8, "BAC", u.rpi.stock)},
	    {FN(19, 1, 'A', u.rpi.interest_flag)},
	};
	struct uf_itch_msg m;
	check_vector('N', 20, f, UF_ARRAY_SIZE(f), &m);
}

static void test_itch_dlcr_O(void **s)
{
	static const struct field f[] = {
	    {FS(11, 8, "ARM", u.dlcr.stock)},
	    {FN(19, 1, 'Y', u.dlcr.open_eligibility)},
	    {FN(20, 4, 500000, u.dlcr.min_price)},
	    {FN(24, 4, 600000, u.dlcr.max_price)},
	    {FN(28, 4, 550000, u.dlcr.near_exec_price)},
	    {FN(32, 8, 0x0000112233445566ull, u.dlcr.near_exec_time)},
	    {FN(40, 4, 520000, u.dlcr.lower_collar)},
	    {FN(44, 4, 580000, u.dlcr.upper_collar)},
	};
	struct uf_itch_msg m;
	check_vector('O', 48, f, UF_ARRAY_SIZE(f), &m);
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
