/* IEX DEEP 1.0 and TOPS 1.6 over IEX-TP: a segment's messages decoded (decode/uf_iex.h) and
 * applied through the venue API (publish/uf_venue.h) into the same books and records as
 * ITCH (publish/proto_iex.h). What each message type becomes is the record contract's
 * (publish/uf_record.h, "IEX"): this file is its one implementation. */
#include <errno.h>
#include <string.h>

#include "common/uf_compiler.h"
#include "common/uf_nyday.h"
#include "decode/uf_decode.h"
#include "publish/proto_iex.h"
#include "publish/publisher.h"
#include "publish/uf_venue.h"

/* The entry's per-feed state: the New York day its timestamps fall in. */
struct uf_iex_state {
	struct uf_nyday day; /* cached local day: epoch ns -> ns since midnight */
};

#define UF_IEX_MIC "IEXG    " /* the venue's ISO 10383 code, as UF_STATUS_VENUE carries it */

/* ---- the framings: IEX-TP of one message protocol, plus the stream restart rule ---- */

/* When an opened segment was sent (its header's send time): the arbiter's old-stream rule
 * (decode/uf_frame.h). */
static int uf_iex_sent(const struct uf_frame *f, uint64_t *sent_ns)
{
	struct uf_iextp_hdr h;
	if (uf_iextp_parse_header(&h, f->buf, f->len) != 0 || h.send_time < 0)
		return 0;
	*sent_ns = (uint64_t)h.send_time;
	return 1;
}

/* 1 when an opened segment at sequence 1 starts its stream over (stream offset 0), with its
 * send time: the arbiter's restart rule (decode/uf_frame.h). */
static int uf_iex_restart(const struct uf_frame *f, uint64_t *sent_ns)
{
	return uf_iextp_is_stream_start(f) && uf_iex_sent(f, sent_ns);
}

static int uf_iex_open_deep(struct uf_frame *f, const uint8_t *buf, size_t len)
{
	return uf_iextp_open_proto(f, buf, len, UF_IEXTP_PROTO_DEEP);
}

static int uf_iex_open_tops(struct uf_frame *f, const uint8_t *buf, size_t len)
{
	return uf_iextp_open_proto(f, buf, len, UF_IEXTP_PROTO_TOPS);
}

/* IEX-TP with one message protocol id (the other's segments are refused as
 * wrong_protocol_id), no re-request service, and the restart rule. */
static const struct uf_framing uf_iex_deep_framing = {
    .name = "iextp-deep",
    .max_count = UF_IEXTP_MAX_COUNT,
    .open = uf_iex_open_deep,
    .iter_init = uf_iextp_iter_init,
    .iter_next = uf_iextp_next,
    .restart = uf_iex_restart,
    .sent = uf_iex_sent,
};

static const struct uf_framing uf_iex_tops_framing = {
    .name = "iextp-tops",
    .max_count = UF_IEXTP_MAX_COUNT,
    .open = uf_iex_open_tops,
    .iter_init = uf_iextp_iter_init,
    .iter_next = uf_iextp_next,
    .restart = uf_iex_restart,
    .sent = uf_iex_sent,
};

/* ---- messages into records ---- */

/* IEX letters translated to the ITCH letters the record contract documents, so a consumer
 * reads one meaning whatever the venue. */
static uint8_t uf_iex_system_event(uint8_t e)
{
	return e == 'R' ? 'Q' : e; /* start of regular market hours: ITCH 'Q' */
}

static uint8_t uf_iex_retail(uint8_t ind)
{
	switch (ind) {
	case 'A':
		return 'B'; /* buy side interest */
	case 'B':
		return 'S'; /* sell side */
	case 'C':
		return 'A'; /* both */
	default:
		return 'N'; /* none */
	}
}

/* Short sale price test: '0' not in effect, '1' in effect (activated or detail not given),
 * '2' remains in effect (continued), as ITCH's Reg SHO action. */
static uint8_t uf_iex_ssr(uint8_t status, uint8_t detail)
{
	if (!status)
		return '0';
	return detail == 'C' ? '2' : '1';
}

/* Seconds since New York midnight of epoch second `s` (the auction's scheduled time). */
static uint64_t uf_iex_local_s(const struct uf_nyday *day, uint32_t s)
{
	struct uf_nyday d = *day; /* a time on another day must not move the cached one */
	return uf_nyday_since_midnight(&d, (uint64_t)s * UF_NYDAY_NS_PER_S) / UF_NYDAY_NS_PER_S;
}

static uint64_t uf_iex_u64(int64_t v)
{
	return v < 0 ? 0 : (uint64_t)v;
}

/* Applies one decoded message; returns the records written into out (UF_RECF_LAST set by
 * uf_venue_end). `out` has room for UF_REC_MAX_PER_MSG. */
static int uf_iex_apply_msg(struct uf_publisher *p, struct uf_iex_state *st,
                            const struct uf_iex_msg *im, uint64_t seq, uint64_t rx_ns,
                            struct uf_record *out)
{
	struct uf_venue_msg m = {.seq = seq, .rx_ts = rx_ns};
	m.exch_ts =
	    im->timestamp > 0 ? uf_nyday_since_midnight(&st->day, (uint64_t)im->timestamp) : 0;
	if (UF_UNLIKELY(uf_venue_begin(p, &m, UF_REC_MAX_PER_MSG) != 0))
		return 0;
	enum uf_venue_event ev = UF_VENUE_EV_ONE;
	int k = 0;
	if (im->type == UF_IEX_SYSTEM_EVENT) {
		k +=
		    uf_venue_record(p, &m, 1, UF_REC_STATUS, 0, 0,
		                    uf_iex_system_event(im->u.sys.event), UF_STATUS_SYSTEM, 0, out);
		return uf_venue_end(p, &m, ev, out, k);
	}
	/* A directory entry announces its symbol itself; every other message's first sight of
	 * a symbol is announced before its records. */
	k += uf_venue_symbol(p, &m, im->symbol, im->type != UF_IEX_SECURITY_DIRECTORY, out);
	struct uf_record *r = &out[k];
	switch (im->type) {
	case UF_IEX_PRICE_LEVEL_BUY:
	case UF_IEX_PRICE_LEVEL_SELL:
		k +=
		    uf_venue_level(p, &m, im->u.level.side, im->u.level.price, im->u.level.size, r);
		ev = im->u.level.flags & UF_IEX_LEVEL_EVENT_COMPLETE ? UF_VENUE_EV_CLOSE
		                                                     : UF_VENUE_EV_OPEN;
		break;
	case UF_IEX_QUOTE_UPDATE:
		k += uf_venue_quote(p, &m, im->u.quote.bid_price, im->u.quote.bid_size,
		                    im->u.quote.ask_price, im->u.quote.ask_size, r);
		break;
	case UF_IEX_TRADE_REPORT:
		k += uf_venue_record(
		    p, &m, 0, UF_REC_TRADE, UF_SIDE_NONE, im->u.trade.price, im->u.trade.size,
		    UF_TRADE_REPORT | (uint32_t)im->u.trade.flags << 8, im->u.trade.trade_id, r);
		break;
	case UF_IEX_TRADE_BREAK:
		k += uf_venue_record(p, &m, 0, UF_REC_TRADE, UF_SIDE_NONE, 0, 0, UF_TRADE_BROKEN,
		                     im->u.trade.trade_id, r);
		break;
	case UF_IEX_SECURITY_DIRECTORY:
		k += uf_venue_directory(p, &m, im->u.dir.round_lot_size, im->u.dir.luld_tier, 0, 0,
		                        r);
		break;
	case UF_IEX_TRADING_STATUS: {
		uint32_t reason;
		memcpy(&reason, im->u.trading_status.reason, 4);
		k += uf_venue_record(p, &m, 0, UF_REC_STATUS, 0, 0, im->u.trading_status.status,
		                     UF_STATUS_TRADING, reason, r);
		break;
	}
	case UF_IEX_OPERATIONAL_HALT:
		k += uf_venue_record(p, &m, 0, UF_REC_STATUS, 0, 0,
		                     im->u.op_halt.status == 'O' ? 'H' : 'T', UF_STATUS_OP_HALT, 0,
		                     r);
		break;
	case UF_IEX_SHORT_SALE_TEST:
		k += uf_venue_record(p, &m, 0, UF_REC_STATUS, 0, 0,
		                     uf_iex_ssr(im->u.ssr.status, im->u.ssr.detail),
		                     UF_STATUS_REG_SHO, im->u.ssr.detail, r);
		break;
	case UF_IEX_SECURITY_EVENT:
		k += uf_venue_record(p, &m, 0, UF_REC_STATUS, 0, 0, im->u.sec_event.event,
		                     UF_STATUS_SECURITY_EVENT, 0, r);
		break;
	case UF_IEX_RETAIL_LIQUIDITY:
		k += uf_venue_record(p, &m, 0, UF_REC_STATUS, 0, 0,
		                     uf_iex_retail(im->u.retail.indicator), UF_STATUS_RPI, 0, r);
		break;
	case UF_IEX_OFFICIAL_PRICE:
		k += uf_venue_record(p, &m, 0, UF_REC_STATUS, 0, im->u.official.price,
		                     im->u.official.price_type, UF_STATUS_OFFICIAL_PRICE, 0, r);
		break;
	case UF_IEX_AUCTION_INFO: {
		uint8_t is = im->u.auction.imbalance_side;
		k += uf_venue_record(p, &m, 0, UF_REC_STATUS, (is == 'B' || is == 'S') ? is : 0,
		                     im->u.auction.reference_price, im->u.auction.imbalance_shares,
		                     UF_STATUS_AUCTION, im->u.auction.paired_shares, &out[k]);
		k += uf_venue_record(p, &m, 0, UF_REC_STATUS, 0, im->u.auction.indicative_price,
		                     uf_iex_u64(im->u.auction.book_clearing_price),
		                     UF_STATUS_AUCTION_PRICES,
		                     uf_iex_u64(im->u.auction.collar_reference), &out[k]);
		k += uf_venue_record(
		    p, &m, 0, UF_REC_STATUS, 0, im->u.auction.lower_collar,
		    uf_iex_u64(im->u.auction.upper_collar), UF_STATUS_AUCTION_COLLARS,
		    im->u.auction.auction_type | (uint64_t)im->u.auction.extension << 8 |
		        uf_iex_local_s(&st->day, im->u.auction.scheduled_time) << 32,
		    &out[k]);
		break;
	}
	default:
		break; /* every type uf_iex_decode returns is above */
	}
	return uf_venue_end(p, &m, ev, out, k);
}

/* A message that did not decode: the book of its symbol when it has one already (a known
 * type, of the wrong length or of the other protocol, still shows its symbol @10), else
 * every book (a type nobody knows says nothing of where its symbol is). Cold. */
static void uf_iex_error(struct uf_pub_step *s, int rc, const struct uf_frame_msg *b,
                         uint64_t rx_ns)
{
	uint32_t inst = UF_INSTRUMENT_ALL;
	if (b->len >= 18 && uf_iex_msg_len(b->msg[0]) != 0 && b->msg[0] != UF_IEX_SYSTEM_EVENT) {
		int id = uf_pub_sym_find(s->pub, (const char *)b->msg + 10);
		if (id >= 0)
			inst = (uint32_t)id;
	}
	uf_step_msg_error(s, rc == -ENOMSG ? UF_STEP_ERR_UNKNOWN : UF_STEP_ERR_BAD_LENGTH, b->len,
	                  inst, b->seq, rx_ns);
}

/* The message at `seq` (epoch time `ts`) is the first of another New York day: caches the
 * day and publishes it (UF_STATUS_VENUE, market-wide, an event of its own) before the
 * message's records. Cold: about once a day. */
static UF_COLD void uf_iex_new_day(struct uf_pub_step *s, struct uf_iex_state *st, uint64_t ts,
                                   uint64_t seq, uint64_t rx_ns)
{
	uf_nyday_set(&st->day, ts);
	uf_step_room(s, UF_REC_MAX_PER_MSG);
	s->nrec += (size_t)uf_venue_day(s->pub, seq, rx_ns, ts - st->day.start_ns, UF_IEX_MIC,
	                                st->day.date, s->recs + s->nrec, s->step_cap - s->nrec);
}

/* Applies messages [f->seq + skip, f->seq + f->count) of an opened segment of `proto` (a
 * constant in each entry's copy: inlined into both). */
static inline __attribute__((always_inline)) void uf_iex_apply(uint16_t proto,
                                                               struct uf_pub_step *s, void *state,
                                                               const struct uf_frame *f,
                                                               uint32_t skip, uint64_t rx_ns)
{
	struct uf_iex_state *st = state;
	struct uf_frame_iter it;
	struct uf_frame_msg b;
	uf_iextp_iter_init(&it, f);
	if (s->timed)
		s->decoded(s->owner); /* decoding is fused with applying: it starts now */
	for (uint32_t i = 0; uf_iextp_next(&it, &b); i++) {
		if (i < skip)
			continue;
		struct uf_iex_msg im;
		int rc = uf_iex_decode_inline(b.msg, b.len, &im); /* no call per message */
		if (UF_UNLIKELY(rc > 0 && (proto == UF_IEXTP_PROTO_DEEP
		                               ? im.type == UF_IEX_QUOTE_UPDATE
		                               : im.type == UF_IEX_PRICE_LEVEL_BUY ||
		                                     im.type == UF_IEX_PRICE_LEVEL_SELL)))
			rc = -ENOMSG; /* a type of the other protocol */
		if (UF_UNLIKELY(rc < 0)) {
			uf_iex_error(s, rc, &b, rx_ns);
			continue;
		}
		uint64_t ts = im.timestamp > 0 ? (uint64_t)im.timestamp : 0;
		if (UF_UNLIKELY(ts && ts - st->day.start_ns >= st->day.end_ns - st->day.start_ns))
			uf_iex_new_day(s, st, ts, b.seq, rx_ns);
		uf_step_room(s, UF_REC_MAX_PER_MSG);
		s->nrec +=
		    (size_t)uf_iex_apply_msg(s->pub, st, &im, b.seq, rx_ns, s->recs + s->nrec);
		s->lat_msgs++;
	}
}

static void uf_iex_apply_deep(struct uf_pub_step *s, void *state, const struct uf_frame *f,
                              uint32_t skip, uint64_t rx_ns)
{
	uf_iex_apply(UF_IEXTP_PROTO_DEEP, s, state, f, skip, rx_ns);
}

static void uf_iex_apply_tops(struct uf_pub_step *s, void *state, const struct uf_frame *f,
                              uint32_t skip, uint64_t rx_ns)
{
	uf_iex_apply(UF_IEXTP_PROTO_TOPS, s, state, f, skip, rx_ns);
}

const struct uf_proto uf_proto_iex_deep = {
    .name = "iex-deep",
    .framing = &uf_iex_deep_framing,
    .book = UF_BOOK_LEVELS,
    .state_size = sizeof(struct uf_iex_state),
    .apply = uf_iex_apply_deep,
    .snapshot_msg = NULL, /* DEEP has no snapshot service */
};

const struct uf_proto uf_proto_iex_tops = {
    .name = "iex-tops",
    .framing = &uf_iex_tops_framing,
    .book = UF_BOOK_LEVELS,
    .state_size = sizeof(struct uf_iex_state),
    .apply = uf_iex_apply_tops,
    .snapshot_msg = NULL,
};
