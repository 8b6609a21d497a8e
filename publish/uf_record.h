/* uringfeed normalized book-update records: the contract consumers compile against.
 *
 * Timestamps: exch_ts (exchange, ns since midnight), rx_ts (kernel receive time), and the
 * publish time as rx_ts + pub_delta_ns: a full publish timestamp did not fit the line.
 *
 * Every record is 64 bytes (one cache line), fixed-width fields, no pointers, host byte
 * order (producer and consumers share a host). A consumer reads a stream of these from a
 * ring (ring/) and may check UF_RECORD_VERSION against the ring header's record version.
 *
 * Prices are signed 64-bit integers with UF_PRICE_DECIMALS implied decimals (ITCH 5.0
 * prices have 4: 1284600 is $128.46). Shares are unsigned 64-bit.
 *
 * Record kinds and what their fields mean:
 *   UF_REC_LEVEL          a price level changed: `price`, `shares` and `orders` are the level's
 *                         new totals on `side` (shares == 0 and orders == 0: level removed).
 *   UF_REC_ORDER_ADD      market-by-order: order `ref` added with `shares` at `price`.
 *   UF_REC_ORDER_MODIFY   order `ref` now has `shares` left at `price` (execution or partial
 *                         cancel; `aux` = shares removed by this event).
 *   UF_REC_ORDER_DELETE   order `ref` left the book (`shares` = shares it had).
 *   UF_REC_TRADE          a trade: `price`, `shares`, `ref` = match number; `aux` =
 *                         UF_TRADE_* source; `side` as reported (0 when not).
 *   UF_REC_STATUS         instrument or market status: `aux` = UF_STATUS_* code, `price` and
 *                         `shares` carry the status's values (see UF_STATUS_*).
 *   UF_REC_GAP            the feed lost sequence numbers [`feed_seq`, `feed_seq + shares`) that
 *                         could not be recovered; every book may be wrong (UF_RECF_STALE set
 *                         on later records until a snapshot repairs them).
 *   UF_REC_SNAPSHOT_BEGIN / UF_REC_SNAPSHOT_END
 *                         bracket a series of UF_REC_LEVEL records (UF_RECF_SNAPSHOT set) that
 *                         together are the whole book of `instrument`.
 *   UF_REC_INSTRUMENT     directory entry: `instrument` = id, `ref` = 8-byte symbol (bytes,
 *                         space padded), `shares` = round lot size, `aux` = market category.
 */
#ifndef UF_RECORD_H
#define UF_RECORD_H

#include <stdint.h>

#define UF_RECORD_VERSION 1
#define UF_RECORD_SIZE 64
#define UF_PRICE_DECIMALS 4

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
};

enum uf_rec_side {
	UF_SIDE_NONE = 0,
	UF_SIDE_BID = 'B',
	UF_SIDE_ASK = 'S',
};

enum uf_rec_flags {
	UF_RECF_LAST = 1u << 0,     /* last record produced by one exchange message */
	UF_RECF_BBO = 1u << 1,      /* best bid or offer changed with this record */
	UF_RECF_SNAPSHOT = 1u << 2, /* part of a snapshot, not a live change */
	UF_RECF_STALE = 1u << 3,    /* book possibly wrong: an unrecovered gap came before */
};

struct uf_record {
	uint8_t kind;        /* enum uf_rec_kind */
	uint8_t side;        /* enum uf_rec_side */
	uint16_t flags;      /* enum uf_rec_flags */
	uint32_t instrument; /* instrument id (ITCH stock locate) */
	int64_t price;       /* UF_PRICE_DECIMALS implied decimals */
	uint64_t shares;     /* see kind */
	union {
		uint32_t orders; /* orders at the level (UF_REC_LEVEL) */
		uint32_t aux;    /* kind-specific for the other kinds, see above */
	};
	uint32_t pub_delta_ns; /* publish time minus rx_ts in ns (saturates at UINT32_MAX;
				* 0 when rx_ts is 0): the handler's own latency */
	uint64_t ref;        /* order reference, match number, or symbol bytes */
	uint64_t exch_ts;    /* exchange timestamp, ns since midnight (ITCH) */
	uint64_t rx_ts;      /* kernel receive timestamp, ns since the epoch (CLOCK_REALTIME) */
	uint64_t feed_seq;   /* MoldUDP64 sequence number of the source message */
};

_Static_assert(sizeof(struct uf_record) == UF_RECORD_SIZE, "record must be one cache line");

#endif /* UF_RECORD_H */
