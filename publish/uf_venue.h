/* A venue's events given as values: what a protocol entry whose messages are not ITCH (IEX
 * DEEP and TOPS, publish/proto_iex.c) applies to the publisher (publish/uf_publish.h).
 *
 * The same books, directory and records as the ITCH path, so every consumer (ring image,
 * book model, uf-tail, Python, NATS) shows them with no venue-specific code:
 *   - price-level books (UF_BOOK_LEVELS): "level `price` on `side` now has `shares`" (0 =
 *     gone), and level-1 quotes (best bid and ask: a side's old best disappears when its
 *     price moves). Both write UF_REC_LEVEL records with the new totals, `orders` 0 (the
 *     venue does not say), UF_RECF_BBO exactly when the side's best level changes;
 *   - instrument ids per symbol for venues without locate codes: assigned on first sight
 *     from 1 up (0 stays market-wide), stable for the publisher's life (a new session keeps
 *     them, as it keeps the directory), announced by a UF_REC_INSTRUMENT record before the
 *     first record of that book;
 *   - trades, statuses and directory entries as records whose fields the caller chose from
 *     the record contract (publish/uf_record.h).
 *
 * One message is applied as: uf_venue_begin, then any of the writers below (each returns
 * the records it wrote into out[k..], at most UF_REC_MAX_PER_MSG for one message in all),
 * then uf_venue_end, which appends the message's doubt (UF_REC_STALE) and sets UF_RECF_LAST
 * when the venue's event is complete. Bad values (a side that is not B/S, a price a level
 * cannot hold, removing a level the book has not got, a full table) are counted by kind
 * (enum uf_pub_err) and put the book in doubt, never silently.
 *
 * Hot (one call sequence per message): no allocation, lock or system call; one symbol hash
 * probe per message, one binary search per level. Single-threaded: the feed thread. */
#ifndef UF_VENUE_H
#define UF_VENUE_H

#include <stddef.h>
#include <stdint.h>

#include "publish/uf_publish.h"
#include "publish/uf_record.h"

/* What one message does to the venue's event (the records' UF_RECF_LAST). */
enum uf_venue_event {
	UF_VENUE_EV_ONE = 0,   /* a message of its own: LAST unless an event is in progress */
	UF_VENUE_EV_OPEN = 1,  /* part of an event still in progress (DEEP event flag 0): no
	                        * LAST; the event stays open until a message closes it */
	UF_VENUE_EV_CLOSE = 2, /* completes the event (DEEP event flag 1): LAST */
};

/* One message being applied: copied into each of its records. */
struct uf_venue_msg {
	uint64_t seq;     /* feed_seq */
	uint64_t rx_ts;   /* kernel receive time, ns since the epoch (0: none) */
	uint64_t exch_ts; /* exchange time as the record contract says (ns since the venue's
	                   * local midnight) */
	uint32_t inst;    /* the message's book, set by uf_venue_symbol (UF_INSTRUMENT_ALL: none
	                   * could be given) */
};

/* Starts a message (seq, rx_ts and exch_ts set by the caller; pub_delta_ns is stamped as the
 * records enter the ring, uf_rec_stamp): sets m->inst to
 * UF_INSTRUMENT_ALL. Returns 0, or -ENOBUFS when cap < UF_REC_MAX_PER_MSG (the caller makes
 * room first: uf_step_room). */
int uf_venue_begin(struct uf_publisher *p, struct uf_venue_msg *m, size_t cap);

/* The instrument id of symbol `sym` (8 bytes, space padded as on the wire) into m->inst:
 * found by one hash probe, or assigned the next free id, in which case (with `announce`) its
 * UF_REC_INSTRUMENT record (symbol in `ref`, the rest 0) is written to out[0] so that it
 * precedes every record of the book; a directory message passes 0 and writes its own
 * (uf_venue_directory). Every id in use (max_instruments - 1 symbols): m->inst =
 * UF_INSTRUMENT_ALL, counted as UF_PUB_ERR_IDS_FULL, and every book is put in doubt
 * (a book the stream cannot name is missing; one STALE record until the next reset).
 * Returns the records written (0 or 1). */
int uf_venue_symbol(struct uf_publisher *p, struct uf_venue_msg *m, const char sym[8], int announce,
                    struct uf_record *out);

/* Price-level book: level `price` on `side` ('B'/'S') of m->inst now has `shares` (0: the
 * level is gone). Writes its UF_REC_LEVEL record (also when the size did not change: the
 * venue sent it, and the record may be the one that completes an event). Refused and put in
 * doubt: a bad side, a price outside 0 .. UINT32_MAX (the level table's range), removing a
 * level the book has not got, a full level table. Returns the records written (0 or 1). */
int uf_venue_level(struct uf_publisher *p, const struct uf_venue_msg *m, uint8_t side,
                   int64_t price, uint64_t shares, struct uf_record *out);

/* Level-1 book: the best bid and ask of m->inst are now (bid_px, bid_sz) and (ask_px,
 * ask_sz); a size of 0 empties that side. On each side whose price moved the old level is
 * removed (LEVEL, shares 0) before the new one is written; a side that did not change writes
 * nothing. Returns the records written (0 to 4). */
int uf_venue_quote(struct uf_publisher *p, const struct uf_venue_msg *m, int64_t bid_px,
                   uint64_t bid_sz, int64_t ask_px, uint64_t ask_sz, struct uf_record *out);

/* One record of `kind` (UF_REC_TRADE, UF_REC_STATUS) for m->inst, or for instrument 0 (the
 * market) when `market`: fields as the record contract says for that kind (publish/
 * uf_record.h). TRADE records move volume and last trade (uf_rec_trade_prints). STATUS
 * records of UF_STATUS_TRADING, UF_STATUS_REG_SHO, UF_STATUS_OP_HALT, UF_STATUS_RPI and
 * UF_STATUS_SYSTEM update the instrument view (uf_publish_instrument) and the market state as
 * their ITCH messages do. Returns the records written (0 when m->inst is none and !market). */
int uf_venue_record(struct uf_publisher *p, const struct uf_venue_msg *m, int market, uint8_t kind,
                    uint8_t side, int64_t price, uint64_t shares, uint32_t aux, uint64_t ref,
                    struct uf_record *out);

/* A directory entry for m->inst: round lot and LULD tier into the instrument view, and one
 * UF_REC_INSTRUMENT record (`ref` symbol, `shares` round lot, `aux` market category letter,
 * `price` financial status letter: 0 where the venue has none). Returns the records
 * written (0 or 1). */
int uf_venue_directory(struct uf_publisher *p, const struct uf_venue_msg *m, uint32_t round_lot,
                       uint8_t luld_tier, uint8_t market_category, uint8_t financial_status,
                       struct uf_record *out);

/* The venue and its trading day, published once a day by every venue's protocol entry so
 * that a consumer finds any ring's venue the same way: one UF_STATUS_VENUE record (instrument
 * 0: shares = `date` as YYYYMMDD, 0 when not known; price and ref = `mic`, 8 bytes space
 * padded) into out[0], an event of its own (UF_RECF_LAST), with feed_seq `seq`, receive time
 * `rx_ts` and exchange time `exch_ts` (ns since that day's New York midnight); it also sets
 * the market's status in the image (kept for late consumers). Counted as a record, not a
 * message. Returns the records written (1), or 0 when out has no room for one
 * (cap < UF_REC_MAX_PER_MSG). Cold: about once a day. */
int uf_venue_day(struct uf_publisher *p, uint64_t seq, uint64_t rx_ts, uint64_t exch_ts,
                 const char mic[8], uint32_t date, struct uf_record *out, size_t cap);

/* Ends the message whose records are out[0..k): appends the STALE record of a doubt it
 * raised, sets UF_RECF_LAST on its last record unless the venue's event stays open (`ev`),
 * and counts the message and its records. Returns the records written in all (k or k + 1). */
int uf_venue_end(struct uf_publisher *p, const struct uf_venue_msg *m, enum uf_venue_event ev,
                 struct uf_record *out, int k);

#endif /* UF_VENUE_H */
