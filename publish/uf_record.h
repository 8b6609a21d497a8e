/* uringfeed normalized book-update records: the contract consumers compile against.
 *
 * Every record is 64 bytes (one cache line), fixed-width fields, no pointers, host byte
 * order (producer and consumers share a host). A consumer reads a stream of these from a
 * ring (ring/) and may check UF_RECORD_VERSION against the ring header's record version.
 *
 * Units
 *   price    signed 64-bit, UF_PRICE_DECIMALS (4) implied decimals: 1284600 is $128.46.
 *            The one exception is UF_STATUS_MWCB_LEVELS, which keeps the wire's 8 decimals
 *            (said again there).
 *   shares   unsigned 64-bit.
 *   exch_ts  exchange timestamp: ns since local midnight (America/New_York) of the venue's
 *            trading day, for every venue. ITCH sends exactly that; IEX sends ns since the
 *            epoch, converted (common/uf_nyday.h: EST/EDT by the US rule since 2007; a day
 *            on which the clocks change runs to 23 or 25 h). Absolute time = New York midnight
 *            of the trading date + exch_ts: the date is in the UF_STATUS_VENUE status of
 *            instrument 0, on every venue's ring (IEX: the venue's timestamps; ITCH, which
 *            does not carry its date: the receive time's New York date).
 *   rx_ts    kernel receive timestamp, ns since the epoch (CLOCK_REALTIME); 0 when the source
 *            had none (offline files).
 *   publish  rx_ts + pub_delta_ns: a full publish timestamp did not fit the line.
 *   feed_seq the venue's sequence number of the exchange message that caused the record
 *            (MoldUDP64, IEX-TP; for offline files: the message's 1-based position in the
 *            file). A venue stream that starts over (a new session, an IEX-TP restart) is
 *            announced by a UF_REC_RESET record first.
 *
 * Events. One exchange message produces 0 to UF_REC_MAX_PER_MSG records, all with the same
 * feed_seq, exch_ts and rx_ts. UF_RECF_LAST means "the venue's event is complete": it is on
 * the last record of a message that completes one. On ITCH every message is an event of its
 * own, so the last record of each carries it; IEX DEEP marks the price level updates of an
 * event still in progress (event flag 0): their records, and any record inside such an
 * event (a trade), carry no LAST until the update that completes it (a GAP or RESET ends an
 * event too). A consumer that applies a book only at UF_RECF_LAST never sees a half-applied
 * event (the two halves of a replace, a DEEP book in transition). Messages that change
 * nothing a consumer can see, or that the book rejected as integrity errors, produce no
 * record (a DEEP price level update always does: it may be the one completing an event).
 *
 * Venues. Records mean the same whatever the venue: letters are ITCH's where a venue has
 * the same notion (IEX's are translated, listed at each kind and code), and a consumer
 * needs no venue-specific code. IEX has no locate codes: instrument ids are assigned per
 * symbol on first sight from 1 up (stable for the session, a reset keeps them), announced by
 * a UF_REC_INSTRUMENT record before the first record of that book; 0 is the market.
 *
 * Record kinds, the ITCH messages that produce them, and what their fields mean
 * (fields not named are 0):
 *
 *   UF_REC_LEVEL          (A F E C X D U; IEX 8 5 Q) a price level changed: `price` and
 *                         `side` name the level, `shares` and `orders` are its NEW totals
 *                         (both 0: the level is gone; `orders` is 0 where the venue does not
 *                         say: IEX DEEP sets a level's shares, 0 = gone; a TOPS quote keeps
 *                         one level per side, removing the old best when its price moves).
 * UF_RECF_BBO exactly when the best level of `side` (its price, shares or orders) differs after
 * this record from before it. Applying LEVEL records in order reproduces the full-depth book.
 *   UF_REC_ORDER_ADD      (A F U) market-by-order: order `ref` added on `side` with `shares` at
 *                         `price`. `aux` = the 4 MPID attribution bytes of an `F` (as a
 *                         little-endian u32 of the wire bytes; 0 for `A` and `U`).
 *                         Time priority: last in its level.
 *   UF_REC_ORDER_MODIFY   (E C X) order `ref` still rests, with `shares` left at `price`;
 *                         `aux` = shares removed by this event (executed or cancelled).
 *   UF_REC_ORDER_DELETE   (E C X D U) order `ref` left the book: `shares` = shares it had
 *                         before this event, `aux` = shares the book lost by it, which is
 *                         always `shares` (an execution or cancel larger than the order is an
 *                         integrity error: the order leaves with what it had).
 *                         A replace (`U`) is ORDER_DELETE of the old reference, then
 *                         ORDER_ADD of the new one, both with UF_RECF_REPLACE; the new order
 *                         loses time priority.
 *   UF_REC_TRADE          (E C P Q B; IEX T B) a trade: `price`, `shares`, `ref` = match
 *                         number (IEX: trade id), `side` = side of the resting order (E, C,
 *                         P) or 0 (Q, B, IEX); `aux` = UF_TRADE_* source in bits 0-7, the
 *                         cross type letter of a `Q` (IEX: the sale condition flags byte) in
 *                         bits 8-15, UF_TRADE_NONPRINTABLE when the exchange marked it
 *                         non-printable (`C` with printable 'N': do not count it in volume).
 *                         UF_TRADE_BROKEN (`B`, IEX `B`): the trade with match number `ref`
 *                         was broken; `price` and `shares` are 0.
 *                         Volume and last trade: a TRADE record moves them exactly when
 *                         uf_rec_trade_prints() says so: printable, not a break, shares > 0
 *                         (a `Q` with 0 shares is a cross that did not happen). A break
 *                         moves neither (the record does not carry the broken shares). The
 *                         producer's book image and instrument view follow this rule, and a
 *                         new session (UF_REC_RESET) starts both at 0.
 *   UF_REC_STATUS         (S H Y L V W K J h I N O; IEX S H O P E I X A) instrument or
 *                         market status: `aux` = UF_STATUS_* code; `price`, `shares`, `ref`
 *                         as listed at each code. Market-wide statuses have `instrument` =
 *                         the message's locate (0 on Nasdaq and IEX).
 *   UF_REC_GAP            the feed lost sequence numbers [`feed_seq`, `feed_seq + shares`)
 *                         and could not recover them. Every book may be wrong from here on:
 *                         UF_RECF_STALE is set on every later record of every instrument
 *                         until the books are rebuilt (new session, or replay from the start).
 *                         `instrument` = 0.
 *   UF_REC_SNAPSHOT_BEGIN / UF_REC_SNAPSHOT_END
 *                         bracket the whole book of `instrument` as UF_REC_LEVEL records with
 *                         UF_RECF_SNAPSHOT set (bids best first, then asks best first);
 *                         `feed_seq` = the last sequence applied to that book, so the stream
 *                         continues at feed_seq + 1. BEGIN's `shares` = number of LEVEL
 *                         records that follow; END carries UF_RECF_LAST.
 *   UF_REC_INSTRUMENT     (R; IEX D) directory entry: `instrument` = id, `ref` = the 8
 *                         symbol bytes (space padded, memcpy into char[8]), `shares` = round
 *                         lot size, `aux` = market category letter, `price` = financial
 *                         status letter (0 where the venue has none: IEX). A venue without
 *                         locates also announces an id on first sight of its symbol with
 *                         an INSTRUMENT record whose other fields are 0.
 *   UF_REC_RESET          every book is void from here on: empty every book (levels, orders),
 *                         clear every STALE doubt, and start volume and last trade over; keep
 *                         the directory (INSTRUMENT) and statuses. `shares` = UF_RESET_* reason
 *                         (UF_RESET_NEW_SESSION: the feed started another session, a new
 *                         day, or the venue's stream started over inside its session (IEX-TP
 *                         sequence 1 at stream offset 0 after a publisher restart: same
 *                         session bytes); UF_RESET_SNAPSHOT: the books are rebuilt from a GLIMPSE
 *                         snapshot whose records follow); `ref` = the session's first 8 name
 *                         bytes and `aux` its last 2 (little-endian u16 of the wire bytes);
 *                         `feed_seq` = 1 for a new session (its first sequence), 0 for a
 *                         snapshot (its records carry feed_seq 0); `instrument` = 0;
 *                         UF_RECF_LAST. The book image empties in the same publish step, so a
 *                         late consumer's snapshot is either all before it or all after.
 *   UF_REC_STALE          a doubt: the book of `instrument` (every book when `instrument` is
 *                         UF_INSTRUMENT_ALL) may be wrong from here on, without lost sequence
 *                         numbers: `aux` = UF_STALE_* reason, `feed_seq` = the message that
 *                         caused it, `shares` = the UF_PUB_ERR_* kind for an integrity or
 *                         table error (publish/uf_publish.h), else 0. Sent once, when the
 *                         book becomes stale; UF_RECF_STALE is then set on it and on every
 *                         later record of that book until a RESET. A message's STALE record
 *                         comes after its other records (the last carries UF_RECF_LAST).
 *
 * New kinds may appear within UF_RECORD_VERSION 1 (the layout does not change): a consumer
 * ignores kinds it does not know (docs/consumers.md, "ABI and versioning policy").
 */
#ifndef UF_RECORD_H
#define UF_RECORD_H

#include <stddef.h>
#include <stdint.h>

/* Layout checks that compile as C11 and C++11 and later: this header is installed and
 * included from both (g++ does not know _Static_assert). */
#ifndef UF_STATIC_ASSERT
#ifdef __cplusplus
#define UF_STATIC_ASSERT(cond, msg) static_assert(cond, msg)
#else
#define UF_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)
#endif
#endif

#define UF_RECORD_VERSION  1
#define UF_RECORD_SIZE     64
#define UF_PRICE_DECIMALS  4
#define UF_REC_MAX_PER_MSG 4 /* most records one exchange message produces (U) */

enum uf_rec_kind {
	UF_REC_LEVEL = 1,
	UF_REC_ORDER_ADD = 2,
	UF_REC_ORDER_MODIFY = 3,
	UF_REC_ORDER_DELETE = 4,
	UF_REC_TRADE = 5,
	UF_REC_STATUS = 6,
	UF_REC_GAP = 7,
	UF_REC_SNAPSHOT_BEGIN = 8,
	UF_REC_SNAPSHOT_END = 9,
	UF_REC_INSTRUMENT = 10,
	UF_REC_RESET = 11, /* every book void: new session (see above) */
	UF_REC_STALE = 12, /* a book (or all) may be wrong from here on (see above) */
};

#define UF_INSTRUMENT_ALL 0xFFFFFFFFu /* UF_REC_STALE `instrument`: every book */

/* UF_REC_RESET `shares`: why every book was voided. */
enum uf_reset_reason {
	UF_RESET_NEW_SESSION = 1, /* another MoldUDP64 session (a new day) started */
	UF_RESET_SNAPSHOT = 2,    /* the books are rebuilt from a GLIMPSE snapshot (late start,
	                           * restart, or a gap too large or old to re-request): its
	                           * records follow, then the stream from its End of Snapshot */
};

/* UF_REC_STALE `aux`: why a book is in doubt. */
enum uf_stale_reason {
	UF_STALE_DECODE = 1,     /* a message inside a valid packet did not decode: its book
	                          * (locate readable) or every book (not) missed a change */
	UF_STALE_INTEGRITY = 2,  /* the book refused or clipped a change (unknown reference,
	                          * over-execution, duplicate reference, ...): `shares` = kind */
	UF_STALE_TABLE_FULL = 3, /* the order or level table was full: an order is missing */
	UF_STALE_SNAPSHOT = 4,   /* a snapshot's End of Snapshot could not be confirmed to the
	                          * message by the live orders: a message of this book may be
	                          * missing or applied twice; `feed_seq` = the first one in doubt */
};

enum uf_rec_side {
	UF_SIDE_NONE = 0,
	UF_SIDE_BID = 'B',
	UF_SIDE_ASK = 'S',
};

enum uf_rec_flags {
	UF_RECF_LAST = 1u << 0,     /* the venue's event is complete (see "Events" above) */
	UF_RECF_BBO = 1u << 1,      /* best bid or offer changed with this record */
	UF_RECF_SNAPSHOT = 1u << 2, /* part of a snapshot, not a live change */
	UF_RECF_STALE = 1u << 3,    /* book possibly wrong: an unrecovered gap came before */
	UF_RECF_REPLACE = 1u << 4,  /* ORDER_DELETE/ORDER_ADD halves of a replace (`U`) */
};

/* UF_REC_TRADE `aux`, bits 0-7: where the trade came from. */
enum uf_trade_source {
	UF_TRADE_EXEC = 1,       /* `E`: resting order executed at its own price */
	UF_TRADE_EXEC_PRICE = 2, /* `C`: resting order executed at a different price */
	UF_TRADE_NON_CROSS = 3,  /* `P`: execution against a non-displayed order */
	UF_TRADE_CROSS = 4,      /* `Q`: opening/closing/IPO/halt cross; bits 8-15 = cross type */
	UF_TRADE_BROKEN = 5,     /* `B`: trade `ref` broken (price and shares 0) */
	UF_TRADE_REPORT = 6,     /* IEX `T`: a trade the venue reports without the resting side;
	                          * bits 8-15 = its sale condition flags (0x80 intermarket sweep,
	                          * 0x40 extended hours, 0x20 odd lot, 0x10 trade-through
	                          * exempt, 0x08 single-price cross) */
};
#define UF_TRADE_NONPRINTABLE (1u << 16) /* `C` marked non-printable: not volume */

/* UF_REC_STATUS `aux`: which status, and where its values sit. Letters are the wire's
 * one-byte codes stored as numbers (e.g. shares = 'T' = 84 for "trading"). */
enum uf_status_code {
	UF_STATUS_SYSTEM = 1,      /* `S`: shares = event code ('O','S','Q','M','E','C') */
	UF_STATUS_TRADING = 2,     /* `H`: shares = trading state ('H','P','Q','T'),
	                            * ref = the 4 reason bytes (little-endian u32 of wire bytes) */
	UF_STATUS_REG_SHO = 3,     /* `Y`: shares = Reg SHO action ('0','1','2') */
	UF_STATUS_MP_POSITION = 4, /* `L`: ref = 4 MPID bytes (as ref above), shares = primary MM
	                            * | mode << 8 | participant state << 16 (letters) */
	UF_STATUS_MWCB_LEVELS = 5, /* `V`: price = level 1, shares = level 2, ref = level 3, all
	                            * with 8 implied decimals (as on the wire, not 4) */
	UF_STATUS_MWCB_BREACH = 6, /* `W`: shares = breached level ('1','2','3') */
	UF_STATUS_IPO = 7,         /* `K`: price = IPO price, shares = quotation release time
	                            * (s since midnight), ref = release qualifier ('A','C') */
	UF_STATUS_LULD = 8,        /* `J`: price = reference price, shares = upper collar,
	                            * ref = lower collar | extension number << 32 */
	UF_STATUS_OP_HALT = 9,     /* `h`: shares = action ('H' halted, 'T' resumed),
	                            * ref = market code ('Q','B','X') */
	UF_STATUS_NOII = 10,       /* `I` part 1: price = current reference price, shares =
	                            * imbalance shares, ref = paired shares, side = 'B'/'S' for a
	                            * buy/sell imbalance else 0 */
	UF_STATUS_NOII_PRICES =
	    11,                      /* `I` part 2: price = near price, shares = far price, ref =
	                              * direction | cross type << 8 | price variation << 16 (letters) */
	UF_STATUS_RPI = 12,          /* `N`: shares = interest flag ('B','S','A','N') */
	UF_STATUS_DLCR = 13,         /* `O` part 1: price = near execution price, shares = near
	                              * execution time (ns since midnight), ref = open eligibility
	                              * ('N','Y') */
	UF_STATUS_DLCR_COLLARS = 14, /* `O` part 2: price = lower collar, shares = upper collar,
	                              * ref = minimum price | maximum price << 32 */
	/* Appended for IEX (letters as listed; the codes above serve IEX too, translated:
	 * S: shares = ITCH event code, IEX 'R' start of regular hours as 'Q'; H: shares = 'H'
	 * halted, 'O' order acceptance period (IEX), 'P' paused, 'T' trading, ref = the 4 reason
	 * bytes; O: UF_STATUS_OP_HALT shares 'H' halted on the venue / 'T' not, ref 0; P:
	 * UF_STATUS_REG_SHO shares '0' not in effect, '1' in effect, '2' continued, ref = IEX
	 * detail letter; I: UF_STATUS_RPI shares 'B' buy, 'S' sell, 'A' both, 'N' none) */
	UF_STATUS_SECURITY_EVENT = 15,  /* IEX `E`: shares = 'O' opening process complete, 'C'
	                                 * closing process complete */
	UF_STATUS_OFFICIAL_PRICE = 16,  /* IEX `X`: price = official price, shares = 'Q' opening,
	                                 * 'M' closing */
	UF_STATUS_AUCTION = 17,         /* IEX `A` part 1: price = reference price, shares =
	                                 * imbalance shares, ref = paired shares, side = 'B'/'S'
	                                 * for a buy/sell imbalance else 0 */
	UF_STATUS_AUCTION_PRICES = 18,  /* IEX `A` part 2: price = indicative clearing price,
	                                 * shares = auction book clearing price, ref = collar
	                                 * reference price (prices, 4 decimals; negative as 0) */
	UF_STATUS_AUCTION_COLLARS = 19, /* IEX `A` part 3: price = lower collar, shares = upper
	                                 * collar, ref = auction type letter ('O','C','I','H','V')
	                                 * | extension number << 8 | scheduled time (s since
	                                 * local midnight) << 32 */
	UF_STATUS_VENUE = 20,           /* market-wide (instrument 0), before the first record of
	                                 * each trading day: shares = the trading date as
	                                 * YYYYMMDD, the New York date exch_ts counts from (0 =
	                                 * not known); price and ref = the venue's MIC (ISO
	                                 * 10383: 8 bytes space padded as symbols, "IEXG", read
	                                 * by memcpy; in price too because the image keeps a
	                                 * status's price and shares, so a late consumer has
	                                 * both). "IEXG" or "XNAS": ITCH does not carry its
	                                 * date, so a Nasdaq feed gives its receive time's New
	                                 * York date (a live feed receives its day that day),
	                                 * before the first records received on each day; a
	                                 * packet without receive time gives none */
	UF_STATUS_LIMIT /* one past the highest code: a new code goes above this line. Every
	                 * layout that keeps statuses per instrument (the ring's image, the
	                 * consumer snapshot, the NATS book entry, the book model) asserts at
	                 * compile time that it has a slot for each code up to UF_STATUS_MAX */
};
#define UF_STATUS_MAX (UF_STATUS_LIMIT - 1) /* highest defined UF_STATUS_* code */

/* 1 when `code` is a status code this build defines (1 .. UF_STATUS_MAX), the one test of
 * every place that keeps a status by its code; 0 for 0 (no status) and for codes beyond. */
static inline int uf_status_code_known(uint32_t code)
{
	return code >= 1 && code <= (uint32_t)UF_STATUS_MAX;
}

/* The slot a per-instrument status table (the ring's image, the book model, the NATS book
 * entry) keeps a known `code` in: one per code, in code order. A slot i is in use when it
 * holds its own code: uf_status_slot(code) == i (0, never set, is no slot's). */
static inline uint32_t uf_status_slot(uint32_t code)
{
	return code - 1;
}

struct uf_record {
	uint8_t kind;        /* enum uf_rec_kind */
	uint8_t side;        /* enum uf_rec_side */
	uint16_t flags;      /* enum uf_rec_flags */
	uint32_t instrument; /* instrument id (ITCH stock locate; IEX: per symbol, see above) */
	int64_t price;       /* UF_PRICE_DECIMALS implied decimals */
	uint64_t shares;     /* see kind */
	union {
		uint32_t orders; /* orders at the level (UF_REC_LEVEL) */
		uint32_t aux;    /* kind-specific for the other kinds, see above */
	};
	uint32_t pub_delta_ns; /* publish time minus rx_ts in ns (saturates at UINT32_MAX;
	                        * 0 when rx_ts is 0): the handler's own latency. Publish time:
	                        * the clock read just before the record is copied into the
	                        * ring (uf_rec_stamp), after every book update of its step */
	uint64_t ref;          /* order reference, match number, or symbol bytes */
	uint64_t exch_ts;      /* exchange timestamp, ns since New York midnight (see Units) */
	uint64_t rx_ts;        /* kernel receive timestamp, ns since the epoch (CLOCK_REALTIME) */
	uint64_t feed_seq;     /* the venue's sequence number of the source message */
};

/* Stamps pub_delta_ns on recs[0..n): `now` (CLOCK_REALTIME, ns, one read for the lot, taken
 * just before they enter the ring) minus each record's rx_ts; 0 for a record without a
 * receive time or one received "after" now (a clock step), UINT32_MAX beyond 4.29 s. The one
 * rule for the field: the publisher leaves it 0, whoever makes the records readable stamps
 * them, so the figure is the time to readable, the books of the record's own step included. */
static inline void uf_rec_stamp(struct uf_record *recs, size_t n, uint64_t now)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t rx = recs[i].rx_ts;
		uint64_t d = rx && now > rx ? now - rx : 0;
		recs[i].pub_delta_ns = d > UINT32_MAX ? UINT32_MAX : (uint32_t)d;
	}
}

/* 1 when TRADE record `r` moves volume and last trade (see UF_REC_TRADE): printable, not a
 * break, shares > 0. The one rule the producer's image, its instrument view and consumers
 * share. */
static inline int uf_rec_trade_prints(const struct uf_record *r)
{
	return r->kind == UF_REC_TRADE && r->shares != 0 &&
	       (r->aux & 0xffu) != (uint32_t)UF_TRADE_BROKEN && !(r->aux & UF_TRADE_NONPRINTABLE);
}

UF_STATIC_ASSERT(sizeof(struct uf_record) == UF_RECORD_SIZE, "record must be one cache line");
UF_STATIC_ASSERT(offsetof(struct uf_record, price) == 8, "record layout is a contract");
UF_STATIC_ASSERT(offsetof(struct uf_record, orders) == 24, "record layout is a contract");
UF_STATIC_ASSERT(offsetof(struct uf_record, ref) == 32, "record layout is a contract");
UF_STATIC_ASSERT(offsetof(struct uf_record, feed_seq) == 56, "record layout is a contract");

#endif /* UF_RECORD_H */
