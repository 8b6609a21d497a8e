/* The IEX protocol entries (publish/proto_iex.c) through their table entries: IEX-TP segments
 * built byte by byte are applied to a publish step, and every message type's records are
 * checked field by field against the record contract (publish/uf_record.h), with exch_ts in
 * ns since New York midnight (common/uf_nyday.h, checked on its own too). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/uf_nyday.h"
#include "publish/uf_proto.h"
#include "publish/uf_publish.h"
#include "test/common/uf_test_iex.h"

#define FI_NS 1000000000ull

/* ---- a publish step that keeps every record ---- */

struct px {
	struct uf_publisher *pub;
	struct uf_pub_step step;
	struct uf_record buf[16];   /* the step's buffer: small, so packets publish in steps */
	struct uf_record all[4096]; /* every record handed on */
	size_t n;                   /* records in all */
	unsigned errors[3];         /* msg_error by kind */
	const struct uf_proto *proto;
	void *state;
};

static void px_split(void *owner)
{
	struct px *x = owner;
	assert_true(x->n + x->step.nrec <= 4096);
	memcpy(&x->all[x->n], x->buf, x->step.nrec * sizeof(x->buf[0]));
	x->n += x->step.nrec;
	x->step.nrec = 0;
}

static void px_decoded(void *owner)
{
	(void)owner;
}

static void px_msg_error(void *owner, enum uf_step_err kind)
{
	struct px *x = owner;
	x->errors[kind]++;
}

static struct px *px_new_any(const char *proto);

static struct px *px_new(const char *proto)
{
	struct px *x = px_new_any(proto);
	assert_int_equal(x->proto->book, UF_BOOK_LEVELS);
	assert_null(x->proto->snapshot_msg);
	assert_null(x->proto->framing->request_build); /* no re-request service */
	return x;
}

/* A step on any protocol entry (ITCH too). */
static struct px *px_new_any(const char *proto)
{
	struct px *x = calloc(1, sizeof(*x));
	assert_non_null(x);
	struct uf_publish_params pp;
	uf_publish_params_default(&pp);
	pp.max_orders = 1024;
	pp.max_levels = 4096;
	pp.max_instruments = 64;
	assert_int_equal(uf_publish_create(&pp, &x->pub), 0);
	x->proto = uf_proto_find(proto);
	assert_non_null(x->proto);
	x->state = calloc(1, x->proto->state_size);
	x->step.pub = x->pub;
	x->step.recs = x->buf;
	x->step.rec_cap = x->step.step_cap = 16;
	x->step.split = px_split;
	x->step.decoded = px_decoded;
	x->step.msg_error = px_msg_error;
	x->step.owner = x;
	return x;
}

static void px_free(struct px *x)
{
	uf_publish_destroy(x->pub);
	free(x->state);
	free(x);
}

/* Opens a segment through the entry's framing and applies it whole; returns the index of its
 * first record in x->all. */
static size_t px_apply(struct px *x, const struct ti_seg *s)
{
	size_t first = x->n;
	struct uf_frame f;
	assert_int_equal(x->proto->framing->open(&f, s->b, ti_seg_len(s)), UF_FRAME_DATA);
	x->proto->apply(&x->step, x->state, &f, 0, 0);
	px_split(x);
	return first;
}

static void check(const struct uf_record *r, uint8_t kind, uint32_t inst, uint8_t side,
                  int64_t price, uint64_t shares, uint32_t aux, uint64_t ref, uint64_t seq)
{
	assert_int_equal(r->kind, kind);
	assert_int_equal(r->instrument, inst);
	assert_int_equal(r->side, side);
	assert_int_equal(r->price, price);
	assert_int_equal(r->shares, shares);
	assert_int_equal(r->aux, aux);
	assert_int_equal(r->ref, ref);
	assert_int_equal(r->feed_seq, seq);
}

static uint64_t sym_ref(const char *s)
{
	char pad[8];
	memset(pad, ' ', 8);
	memcpy(pad, s, strlen(s));
	uint64_t v;
	memcpy(&v, pad, 8);
	return v;
}

/* ---- New York time of day ---- */

static void test_nyday_converts_epoch_to_new_york_time_of_day(void **st)
{
	(void)st;
	struct uf_nyday d = {0};
	assert_int_equal(uf_nyday_since_midnight(&d, (uint64_t)TI_TS), TI_TS_LOCAL);
	assert_int_equal(d.date, 20170425);
	assert_int_equal(d.end_ns - d.start_ns, 86400ull * UF_NYDAY_NS_PER_S);
	/* winter: 2017-01-03 14:30:00 UTC is 09:30 EST */
	uint64_t jan = (uint64_t)uf_nyday_days(2017, 1, 3) * 86400 + 14 * 3600 + 30 * 60;
	assert_int_equal(uf_nyday_since_midnight(&d, jan * UF_NYDAY_NS_PER_S),
	                 (9 * 3600ull + 30 * 60) * UF_NYDAY_NS_PER_S);
	assert_int_equal(d.date, 20170103);
	/* 2017-03-12 (second Sunday of March) is 23 h long; 07:00 UTC is 03:00 EDT */
	uint64_t on = (uint64_t)uf_nyday_days(2017, 3, 12) * 86400 + 7 * 3600;
	assert_int_equal(uf_nyday_since_midnight(&d, on * UF_NYDAY_NS_PER_S),
	                 2 * 3600ull * UF_NYDAY_NS_PER_S); /* 2 h after midnight (EST) */
	assert_int_equal(d.end_ns - d.start_ns, 23 * 3600ull * UF_NYDAY_NS_PER_S);
	/* 2017-11-05 (first Sunday of November) is 25 h long */
	uint64_t off = (uint64_t)uf_nyday_days(2017, 11, 5) * 86400 + 12 * 3600;
	uf_nyday_since_midnight(&d, off * UF_NYDAY_NS_PER_S);
	assert_int_equal(d.date, 20171105);
	assert_int_equal(d.end_ns - d.start_ns, 25 * 3600ull * UF_NYDAY_NS_PER_S);
	/* 03:59:59 UTC on 2017-04-26 is still 23:59:59 on the 25th in New York */
	uint64_t late = (uint64_t)uf_nyday_days(2017, 4, 26) * 86400 + 3 * 3600 + 3599;
	assert_int_equal(uf_nyday_since_midnight(&d, late * UF_NYDAY_NS_PER_S),
	                 86399ull * UF_NYDAY_NS_PER_S);
	assert_int_equal(d.date, 20170425);
	assert_int_equal(uf_nyday_civil(uf_nyday_days(2024, 2, 29)), 20240229);
}

/* ---- DEEP ---- */

static void test_deep_levels_build_the_book_and_the_event_flag_is_last(void **st)
{
	(void)st;
	struct px *x = px_new("iex-deep");
	struct ti_seg s;
	uint8_t m[80];
	ti_seg_begin(&s, UF_IEXTP_PROTO_DEEP, 42, 0, 1, TI_TS);
	ti_seg_add(&s, m, ti_system(m, 'R', TI_TS));
	ti_seg_add(&s, m, ti_directory(m, "ZIEXT", 100, 1, TI_TS));
	ti_seg_add(&s, m, ti_level(m, 'B', 0, "ZIEXT", 300, 250000, TI_TS)); /* in transition */
	ti_seg_add(&s, m, ti_level(m, 'S', 0, "ZIEXT", 200, 250100, TI_TS));
	ti_seg_add(&s, m, ti_trade(m, 'T', 0x20, "ZIEXT", 50, 250100, 9001, TI_TS));
	ti_seg_add(&s, m, ti_level(m, 'S', 1, "ZIEXT", 150, 250100, TI_TS)); /* completes */
	ti_seg_add(&s, m, ti_level(m, 'B', 1, "AAPL", 100, 1430000, TI_TS)); /* first sight */
	size_t i = px_apply(x, &s);
	assert_int_equal(x->n - i, 9);
	/* the first message of a New York day: its date and the venue first */
	check(&x->all[i], UF_REC_STATUS, 0, 0, (int64_t)sym_ref("IEXG"), 20170425, UF_STATUS_VENUE,
	      sym_ref("IEXG"), 1);
	assert_int_equal(x->all[i].flags, UF_RECF_LAST);
	const struct uf_record *r = &x->all[i + 1];
	check(&r[0], UF_REC_STATUS, 0, 0, 0, 'Q', UF_STATUS_SYSTEM, 0, 1);
	assert_int_equal(r[0].flags, UF_RECF_LAST);
	assert_int_equal(r[0].exch_ts, TI_TS_LOCAL);
	check(&r[1], UF_REC_INSTRUMENT, 1, 0, 0, 100, 0, sym_ref("ZIEXT"), 2);
	check(&r[2], UF_REC_LEVEL, 1, 'B', 250000, 300, 0, 0, 3);
	assert_int_equal(r[2].flags, UF_RECF_BBO); /* no LAST: the event goes on */
	check(&r[3], UF_REC_LEVEL, 1, 'S', 250100, 200, 0, 0, 4);
	assert_int_equal(r[3].flags, UF_RECF_BBO);
	check(&r[4], UF_REC_TRADE, 1, 0, 250100, 50, UF_TRADE_REPORT | 0x20 << 8, 9001, 5);
	assert_int_equal(r[4].flags, 0); /* inside the event */
	check(&r[5], UF_REC_LEVEL, 1, 'S', 250100, 150, 0, 0, 6);
	assert_int_equal(r[5].flags, UF_RECF_BBO | UF_RECF_LAST);
	check(&r[6], UF_REC_INSTRUMENT, 2, 0, 0, 0, 0, sym_ref("AAPL"), 7);
	check(&r[7], UF_REC_LEVEL, 2, 'B', 1430000, 100, 0, 0, 7);
	assert_int_equal(r[7].flags, UF_RECF_BBO | UF_RECF_LAST);
	for (size_t k = 0; k < 8; k++)
		assert_int_equal(r[k].exch_ts, TI_TS_LOCAL);
	struct uf_level lv[2];
	assert_int_equal(uf_publish_top(x->pub, 1, UF_SIDE_ASK, lv, 2), 1);
	assert_int_equal(lv[0].shares, 150);
	assert_int_equal(uf_publish_lookup(x->pub, "AAPL"), 2);
	assert_int_equal(uf_publish_instrument(x->pub, 1)->volume, 50);
	assert_int_equal(uf_publish_instrument(x->pub, 1)->round_lot, 100);

	/* statuses, a break, an official price, an auction; a quote is not DEEP's */
	ti_seg_begin(&s, UF_IEXTP_PROTO_DEEP, 42, 0, 8, TI_TS);
	ti_seg_add(&s, m, ti_trading_status(m, "ZIEXT", 'H', "T1  ", TI_TS));
	ti_seg_add(&s, m, ti_trade(m, 'B', 0, "ZIEXT", 50, 250100, 9001, TI_TS));
	ti_head(m, 'X', 'M', TI_TS, "ZIEXT");
	ti_le(m + 18, 250050, 8);
	ti_seg_add(&s, m, 26);
	ti_head(m, 'P', 1, TI_TS, "ZIEXT");
	m[18] = 'C';
	ti_seg_add(&s, m, 19);
	ti_head(m, 'O', 'O', TI_TS, "ZIEXT");
	ti_seg_add(&s, m, 18);
	ti_head(m, 'E', 'O', TI_TS, "ZIEXT");
	ti_seg_add(&s, m, 18);
	ti_head(m, 'A', 'C', TI_TS, "ZIEXT");
	ti_le(m + 18, 1000, 4);   /* paired */
	ti_le(m + 22, 250000, 8); /* reference */
	ti_le(m + 30, 250010, 8); /* indicative */
	ti_le(m + 38, 300, 4);    /* imbalance */
	m[42] = 'S';
	m[43] = 2;                    /* extensions */
	ti_le(m + 44, 1493150400, 4); /* 16:00:00 EDT */
	ti_le(m + 48, 250020, 8);
	ti_le(m + 56, 250000, 8);
	ti_le(m + 64, 225000, 8);
	ti_le(m + 72, 275000, 8);
	ti_seg_add(&s, m, 80);
	ti_seg_add(&s, m, ti_quote(m, "ZIEXT", 1, 1, 2, 1, TI_TS));
	i = px_apply(x, &s);
	assert_int_equal(x->n - i, 10);
	r = &x->all[i];
	check(&r[0], UF_REC_STATUS, 1, 0, 0, 'H', UF_STATUS_TRADING, 0x20203154, 8);
	check(&r[1], UF_REC_TRADE, 1, 0, 0, 0, UF_TRADE_BROKEN, 9001, 9);
	check(&r[2], UF_REC_STATUS, 1, 0, 250050, 'M', UF_STATUS_OFFICIAL_PRICE, 0, 10);
	check(&r[3], UF_REC_STATUS, 1, 0, 0, '2', UF_STATUS_REG_SHO, 'C', 11);
	check(&r[4], UF_REC_STATUS, 1, 0, 0, 'H', UF_STATUS_OP_HALT, 0, 12);
	check(&r[5], UF_REC_STATUS, 1, 0, 0, 'O', UF_STATUS_SECURITY_EVENT, 0, 13);
	check(&r[6], UF_REC_STATUS, 1, 'S', 250000, 300, UF_STATUS_AUCTION, 1000, 14);
	check(&r[7], UF_REC_STATUS, 1, 0, 250010, 250020, UF_STATUS_AUCTION_PRICES, 250000, 14);
	check(&r[8], UF_REC_STATUS, 1, 0, 225000, 275000, UF_STATUS_AUCTION_COLLARS,
	      'C' | 2u << 8 | 57600ull << 32, 14);
	assert_int_equal(r[8].flags, UF_RECF_LAST);
	assert_false(r[7].flags & UF_RECF_LAST);
	check(&r[9], UF_REC_STALE, 1, 0, 0, 0, UF_STALE_DECODE, 0, 15); /* the quote */
	assert_int_equal(x->errors[UF_STEP_ERR_UNKNOWN], 1);
	const struct uf_pub_instrument *in = uf_publish_instrument(x->pub, 1);
	assert_int_equal(in->trading_state, 'H');
	assert_int_equal(in->reg_sho, '2');
	assert_int_equal(in->op_halt, 'H');
	assert_int_equal(in->volume, 50); /* a break moves no volume */
	px_free(x);
}

/* A message of a known type with the wrong length puts its book in doubt when its symbol is
 * known, every book otherwise; a segment of the other protocol is refused by the framing. */
static void test_deep_bad_messages_are_counted_and_flag_their_book(void **st)
{
	(void)st;
	struct px *x = px_new("iex-deep");
	struct ti_seg s;
	uint8_t m[80];
	ti_seg_begin(&s, UF_IEXTP_PROTO_DEEP, 42, 0, 1, TI_TS);
	ti_seg_add(&s, m, ti_level(m, 'B', 1, "AAA", 10, 100, TI_TS));
	ti_seg_add(&s, m, 29); /* a price level one byte short: AAA's */
	ti_seg_add(&s, m, ti_level(m, 'B', 1, "BBB", 10, 100, TI_TS));
	ti_seg_add(&s, m, ti_level(m, 'B', 1, "BBB", 10, 100, TI_TS) - 1);
	size_t i = px_apply(x, &s) + 1; /* after the day's UF_STATUS_VENUE */
	const struct uf_record *r = &x->all[i];
	assert_int_equal(x->n - i, 6);
	check(&r[2], UF_REC_STALE, 1, 0, 0, 0, UF_STALE_DECODE, 0, 2);
	check(&r[5], UF_REC_STALE, 2, 0, 0, 0, UF_STALE_DECODE, 0, 4);
	assert_int_equal(x->errors[UF_STEP_ERR_BAD_LENGTH], 2);
	ti_seg_begin(&s, UF_IEXTP_PROTO_DEEP, 42, 0, 5, TI_TS);
	ti_seg_add(&s, m, ti_level(m, 'S', 1, "NEW", 10, 100, TI_TS) - 1); /* never seen */
	i = px_apply(x, &s);
	assert_int_equal(x->n - i, 1);
	check(&x->all[i], UF_REC_STALE, UF_INSTRUMENT_ALL, 0, 0, 0, UF_STALE_DECODE, 0, 5);
	struct uf_frame f;
	ti_seg_begin(&s, UF_IEXTP_PROTO_TOPS, 42, 0, 6, TI_TS);
	ti_seg_add(&s, m, ti_system(m, 'O', TI_TS));
	assert_int_equal(x->proto->framing->open(&f, s.b, ti_seg_len(&s)), -EBADMSG);
	assert_int_equal(f.err, UF_MOLD_ERR_WRONG_PROTOCOL_ID);
	px_free(x);
}

/* The framing's restart rule: sequence 1 at stream offset 0 starts the stream over, stamped
 * with its send time; anything else does not. */
static void test_iex_framing_tells_a_stream_start(void **st)
{
	(void)st;
	const struct uf_framing *fr = uf_proto_find("iex-deep")->framing;
	assert_non_null(fr->restart);
	struct ti_seg s;
	struct uf_frame f;
	uint64_t sent = 0;
	ti_seg_begin(&s, UF_IEXTP_PROTO_DEEP, 42, 0, 1, TI_TS + 5);
	assert_int_equal(fr->open(&f, s.b, ti_seg_len(&s)), UF_FRAME_HEARTBEAT);
	assert_int_equal(fr->restart(&f, &sent), 1);
	assert_int_equal(sent, TI_TS + 5);
	ti_seg_begin(&s, UF_IEXTP_PROTO_DEEP, 42, 4000, 1, TI_TS); /* seq 1 mid-stream: no */
	assert_int_equal(fr->open(&f, s.b, ti_seg_len(&s)), UF_FRAME_HEARTBEAT);
	assert_int_equal(fr->restart(&f, &sent), 0);
	char sess[11] = {0};
	memcpy(sess, f.session, 10);
	assert_string_equal(sess, "42        ");
}

/* ---- TOPS ---- */

static void test_tops_quotes_make_a_level_one_book(void **st)
{
	(void)st;
	struct px *x = px_new("iex-tops");
	struct ti_seg s;
	uint8_t m[80];
	ti_seg_begin(&s, UF_IEXTP_PROTO_TOPS, 7, 0, 1, TI_TS);
	ti_seg_add(&s, m, ti_quote(m, "SPY", 500, 2350000, 2350100, 700, TI_TS));
	ti_seg_add(&s, m, ti_quote(m, "SPY", 500, 2350000, 2350200, 100, TI_TS));
	ti_seg_add(&s, m, ti_quote(m, "SPY", 0, 0, 0, 0, TI_TS));
	ti_head(m, 'I', 'C', TI_TS, "SPY");
	ti_seg_add(&s, m, 18);
	ti_seg_add(&s, m, ti_level(m, 'B', 1, "SPY", 10, 100, TI_TS)); /* DEEP's, not TOPS' */
	size_t i = px_apply(x, &s) + 1; /* after the day's UF_STATUS_VENUE */
	const struct uf_record *r = &x->all[i];
	assert_int_equal(x->n - i, 9);
	check(&r[0], UF_REC_INSTRUMENT, 1, 0, 0, 0, 0, sym_ref("SPY"), 1);
	check(&r[1], UF_REC_LEVEL, 1, 'B', 2350000, 500, 0, 0, 1);
	check(&r[2], UF_REC_LEVEL, 1, 'S', 2350100, 700, 0, 0, 1);
	assert_int_equal(r[2].flags, UF_RECF_BBO | UF_RECF_LAST);
	check(&r[3], UF_REC_LEVEL, 1, 'S', 2350100, 0, 0, 0, 2); /* the old best goes */
	check(&r[4], UF_REC_LEVEL, 1, 'S', 2350200, 100, 0, 0, 2);
	check(&r[5], UF_REC_LEVEL, 1, 'B', 2350000, 0, 0, 0, 3);
	check(&r[6], UF_REC_LEVEL, 1, 'S', 2350200, 0, 0, 0, 3);
	check(&r[7], UF_REC_STATUS, 1, 0, 0, 'A', UF_STATUS_RPI, 0, 4);
	check(&r[8], UF_REC_STALE, 1, 0, 0, 0, UF_STALE_DECODE, 0, 5);
	assert_int_equal(uf_publish_depth(x->pub, 1, UF_SIDE_BID), 0);
	assert_int_equal(uf_publish_depth(x->pub, 1, UF_SIDE_ASK), 0);
	px_free(x);
}

/* ---- every venue names itself the same way: ITCH too ---- */

/* One MoldUDP64 packet of session "TESTSESS01" at `seq` holding one ITCH System Event
 * (`event`, ITCH time `ts`): 20 + 2 + 12 bytes into b. */
static size_t itch_sys_pkt(uint8_t *b, uint64_t seq, uint8_t event, uint64_t ts)
{
	memset(b, 0, 34);
	memcpy(b, "TESTSESS01", 10);
	for (int i = 0; i < 8; i++)
		b[10 + i] = (uint8_t)(seq >> (56 - 8 * i));
	b[19] = 1;  /* one block */
	b[21] = 12; /* of 12 bytes */
	b[22] = 'S';
	for (int i = 0; i < 6; i++)
		b[27 + i] = (uint8_t)(ts >> (40 - 8 * i));
	b[33] = event;
	return 34;
}

/* Applies an ITCH packet received at rx_ns; returns the index of its first record. */
static size_t px_apply_itch(struct px *x, uint64_t seq, uint8_t event, uint64_t rx_ns)
{
	uint8_t b[34];
	size_t first = x->n;
	struct uf_frame f;
	size_t len = itch_sys_pkt(b, seq, event, 3600ull * FI_NS);
	assert_int_equal(x->proto->framing->open(&f, b, len), UF_FRAME_DATA);
	x->proto->apply(&x->step, x->state, &f, 0, rx_ns);
	px_split(x);
	return first;
}

/* The venue of a ring as any consumer reads it, whatever the venue: the UF_STATUS_VENUE
 * status record (MIC in price and ref, trading date in shares). */
static int venue_of(const struct uf_record *r, char mic[9], uint32_t *date)
{
	if (r->kind != UF_REC_STATUS || r->aux != UF_STATUS_VENUE || r->instrument != 0)
		return 0;
	memcpy(mic, &r->ref, 8);
	mic[8] = 0;
	*date = (uint32_t)r->shares;
	return 1;
}

/* Nasdaq ITCH does not carry its date: the entry gives the New York date of the receive
 * time, once a day before that day's first records, with MIC XNAS; no receive time, no
 * status. A consumer reads it from an ITCH ring exactly as from an IEX one. */
static void test_itch_names_its_venue_and_day_like_iex(void **st)
{
	(void)st;
	struct px *x = px_new_any("itch50-moldudp64");
	char mic[9];
	uint32_t date;
	/* 2017-04-25 09:30 New York (EDT) = 13:30 UTC */
	const uint64_t day1 =
	    (uint64_t)uf_nyday_days(2017, 4, 25) * 86400 * FI_NS + (13 * 3600 + 1800) * FI_NS;
	size_t i = px_apply_itch(x, 1, 'O', day1);
	assert_int_equal(x->n - i, 2);
	assert_true(venue_of(&x->all[i], mic, &date));
	assert_string_equal(mic, "XNAS    ");
	assert_int_equal(date, 20170425);
	check(&x->all[i], UF_REC_STATUS, 0, 0, (int64_t)sym_ref("XNAS"), 20170425, UF_STATUS_VENUE,
	      sym_ref("XNAS"), 1);
	assert_int_equal(x->all[i].flags, UF_RECF_LAST);
	assert_int_equal(x->all[i].exch_ts, (9 * 3600 + 1800) * FI_NS); /* New York time */
	assert_int_equal(x->all[i].rx_ts, day1);
	check(&x->all[i + 1], UF_REC_STATUS, 0, 0, 0, 'O', UF_STATUS_SYSTEM, 0, 1);
	/* the same day again, and a packet received a little earlier (the other line): none */
	i = px_apply_itch(x, 2, 'S', day1 + 5 * 3600 * FI_NS);
	assert_int_equal(x->n - i, 1);
	i = px_apply_itch(x, 3, 'Q', day1 - 60 * FI_NS);
	assert_int_equal(x->n - i, 1);
	/* no receive time: no date to give */
	i = px_apply_itch(x, 4, 'M', 0);
	assert_int_equal(x->n - i, 1);
	assert_false(venue_of(&x->all[i], mic, &date));
	/* the next New York day (04:00 EDT on the 26th = 08:00 UTC): its date first */
	const uint64_t day2 = day1 + (18 * 3600 + 1800) * FI_NS;
	i = px_apply_itch(x, 5, 'E', day2);
	assert_int_equal(x->n - i, 2);
	assert_true(venue_of(&x->all[i], mic, &date));
	assert_int_equal(date, 20170426);
	assert_int_equal(x->all[i].exch_ts, 4 * 3600 * FI_NS);
	px_free(x);

	/* an IEX ring, read by the same function */
	struct px *y = px_new("iex-deep");
	struct ti_seg s;
	uint8_t m[80];
	ti_seg_begin(&s, UF_IEXTP_PROTO_DEEP, 42, 0, 1, TI_TS);
	ti_seg_add(&s, m, ti_system(m, 'O', TI_TS));
	i = px_apply(y, &s);
	assert_true(venue_of(&y->all[i], mic, &date));
	assert_string_equal(mic, "IEXG    ");
	assert_int_equal(date, 20170425);
	px_free(y);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_nyday_converts_epoch_to_new_york_time_of_day),
	    cmocka_unit_test(test_deep_levels_build_the_book_and_the_event_flag_is_last),
	    cmocka_unit_test(test_deep_bad_messages_are_counted_and_flag_their_book),
	    cmocka_unit_test(test_iex_framing_tells_a_stream_start),
	    cmocka_unit_test(test_tops_quotes_make_a_level_one_book),
	    cmocka_unit_test(test_itch_names_its_venue_and_day_like_iex),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
