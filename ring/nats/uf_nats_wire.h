/* What uf-bridge puts on NATS JetStream and what libufconsumer's "nats://" attach reads back:
 * the contract between the two sides of a fan-out (docs/fanout.md). Internal to ring/ and
 * tools/uf-bridge.
 *
 * Subjects and buckets, for ring NAME:
 *   stream UF_NAME, subject uf.NAME.seq   every message below, in ring-sequence order; the
 *                                         JetStream stream sequence numbers them without holes
 *   stream UF_NAME, subject uf.NAME.rec.SYMBOL
 *                                         optional (--per-symbol): the records of one
 *                                         instrument from each DATA message (kind SYMBOL),
 *                                         for consumers that want only a few; SYMBOL is the
 *                                         trimmed symbol with bytes outside [A-Za-z0-9_-] as
 *                                         '_', or "_<id>" for an instrument without one
 *   key-value bucket UF_NAME_books        key "commit": struct uf_nats_commit
 *                                         key "i<id>": struct uf_nats_book + levels
 *
 * Byte order: little-endian (the producer, the bridge and every consumer are x86-64 or
 * aarch64 Linux); the magic of every header rejects anything else.
 *
 * Exactly-once: a message's Nats-Msg-Id is "<generation>:<kind>:<first_seq>:<count>", so a bridge
 * that re-publishes after losing a NATS node (it does not know whether the first try was
 * stored) is de-duplicated by JetStream inside the stream's duplicate window. Ids are
 * predictable, so another publisher can store something under the next one first and have
 * JetStream drop the bridge's message as a duplicate: when the bridge is told "duplicate" and
 * the stored message is not its own, it publishes again as "<id>:r<16 hex digits>" (random),
 * which consumers accept as the same id. The bridge
 * keeps a window of messages in flight (tools/uf-bridge/bridge_pipe.h); each one sent while
 * its predecessor is unacknowledged carries Nats-Expected-Last-Msg-Id = the predecessor's
 * id, and what is not acknowledged is sent again in order, so the stream order is the ring
 * order. */
#ifndef UF_NATS_WIRE_H
#define UF_NATS_WIRE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "publish/uf_level.h"
#include "publish/uf_record.h"

#define UF_NATS_MAGIC        0x4e42u /* "BN": message header */
#define UF_NATS_BOOK_MAGIC   0x4b42u /* "BK": key-value book entry */
#define UF_NATS_COMMIT_MAGIC 0x4342u /* "BC": key-value commit entry */
#define UF_NATS_VERSION      1
#define UF_NATS_VERSION_COMPACT                                                                    \
	2 /* DATA only (uf-bridge --compact): the records follow in the compact form of            \
	   * ring/nats/nats_codec.h, not as 64-byte records; consumers read both versions */
/* Records per message: 256 KiB + header in 64-byte form, a quarter of nats-server's default
 * max_payload (1 MiB). Larger messages mean fewer JetStream operations, acknowledgements and
 * headers per record (nats-server's cost goes by messages, docs/performance.md). Consumers
 * built when this was 1024 refuse larger messages: upgrade them before raising --batch. */
#define UF_NATS_MAX_RECORDS 4096
/* Version of the key-value book entries (struct uf_nats_book), apart from the messages' and
 * the commit entry's UF_NATS_VERSION: 2 = a status slot per code (1 had 8, first come). */
#define UF_NATS_BOOK_VERSION 2
#define UF_NATS_STATUS       20 /* status slots per book entry: slot code - 1 */

/* As the ring's image: a slot for every defined code. A new UF_STATUS_* code stops the build
 * here: raise the slots and UF_NATS_BOOK_VERSION together. */
_Static_assert(UF_NATS_STATUS >= UF_STATUS_MAX, "a book entry slot for every status code");

enum uf_nats_kind {
	UF_NATS_DATA = 1,   /* `count` records, ring sequences first_seq .. first_seq+count-1 */
	UF_NATS_LAP = 2,    /* the bridge was lapped by its local ring: records [first_seq, aux)
	                     * are lost. The bridge re-snapshotted its books from the ring's
	                     * image and wrote every one to the bucket before this message */
	UF_NATS_RESET = 3,  /* a new ring generation (or a new bridge) starts at first_seq; books
	                     * are in the bucket under this generation */
	UF_NATS_CLOSED = 4, /* the producer closed the ring after first_seq - 1 */
	UF_NATS_SYMBOL = 5, /* per-instrument subject: `count` records of one instrument (not
	                     * consecutive), then `count` uint64 ring sequences, one per record */
};

/* Header of every stream message; `count` records of 64 bytes follow (DATA only), or with
 * version UF_NATS_VERSION_COMPACT their compact form (nats_codec.h), which must decode to
 * exactly `count` records filling the message. */
struct uf_nats_msg {
	uint16_t magic;           /* UF_NATS_MAGIC */
	uint8_t version;          /* UF_NATS_VERSION */
	uint8_t kind;             /* enum uf_nats_kind */
	uint32_t count;           /* records that follow */
	uint64_t generation;      /* generation of the bridge's source ring */
	uint64_t first_seq;       /* ring sequence, see the kinds */
	uint64_t aux;             /* LAP: resume sequence; otherwise 0 */
	uint64_t pub_ns;          /* CLOCK_REALTIME when the bridge published (latency) */
	uint64_t ring_tail;       /* ring sequence the bridge had read up to (>= the records') */
	uint32_t depth;           /* source image levels per side */
	uint32_t max_instruments; /* source image entries */
	uint64_t capacity;        /* source ring capacity */
};

_Static_assert(sizeof(struct uf_nats_msg) == 64, "message header is 64 bytes on the wire");

/* uf_nats_commit.flags: the bridge stored CLOSED at `position` (written after the CLOSED
 * message, with js_from naming it): a remote consumer believes a CLOSED only when the commit
 * entry says so, since anyone who may publish on the record subject could send one. */
#define UF_NATS_COMMIT_CLOSED 0x01u

/* Key "commit": every book entry of `generation` in the bucket reflects every record <
 * `position`; a consumer reads the stream from stream sequence `js_from` (whose first record
 * is at or before `position`) and applies records >= max(position, entry stamp). */
struct uf_nats_commit {
	uint16_t magic;           /* UF_NATS_COMMIT_MAGIC */
	uint8_t version;          /* UF_NATS_VERSION */
	uint8_t flags;            /* UF_NATS_COMMIT_*: was a zero pad, so older readers ignore it */
	uint32_t depth;           /* source image levels per side */
	uint64_t generation;      /* source ring generation */
	uint64_t position;        /* see above */
	uint64_t js_from;         /* stream sequence to read from */
	uint64_t capacity;        /* source ring capacity */
	uint32_t max_instruments; /* source image entries */
	uint32_t pad1;            /* zero */
	uint64_t created_ns;      /* source ring creation time */
};

_Static_assert(sizeof(struct uf_nats_commit) == 56, "commit entry layout");

/* Slot i of a book entry holds status code i + 1, as the ring's image does. */
struct uf_nats_status {
	uint32_t code;    /* i + 1 once set; 0 = unused */
	uint32_t pad;     /* zero */
	int64_t price;    /* the status record's price */
	uint64_t shares;  /* the status record's shares */
	uint64_t exch_ts; /* exchange time */
};

/* Key "i<id>": one instrument's full-depth book (not cut to the image depth: a consumer
 * that applies LEVEL records to it must know the levels below the top ones too). nbid then
 * nask struct uf_level follow, best first. */
struct uf_nats_book {
	uint16_t magic;        /* UF_NATS_BOOK_MAGIC */
	uint8_t version;       /* UF_NATS_BOOK_VERSION */
	uint8_t pad0;          /* zero */
	uint32_t instrument;   /* id */
	uint64_t generation;   /* source ring generation */
	uint64_t stamp;        /* reflects every record < stamp of the instrument, none >= */
	uint32_t flags;        /* UF_RECF_STALE */
	uint32_t round_lot;    /* directory */
	uint64_t symbol;       /* 8 symbol bytes, space padded */
	uint32_t category;     /* directory market category */
	uint32_t nbid;         /* bid levels that follow */
	uint32_t nask;         /* ask levels that follow (after the bids) */
	uint32_t nstatus;      /* used status[] slots (informative: readers go by the codes) */
	int64_t last_price;    /* last trade */
	uint64_t last_shares;  /* last trade */
	uint64_t last_exch_ts; /* last trade */
	uint64_t last_rx_ts;   /* last trade */
	uint64_t volume;       /* traded shares */
	uint64_t trades;       /* trades */
	uint64_t update_rx_ts; /* rx time of the last change */
	struct uf_nats_status status[UF_NATS_STATUS]; /* latest value per code, slot code - 1 */
};

_Static_assert(sizeof(struct uf_nats_book) % 8 == 0, "book entry is 8-byte aligned");

/* Bytes every book entry version begins with, at these places: magic, version, instrument,
 * generation (a reader tells another generation's entry from another version's). */
#define UF_NATS_BOOK_PREFIX 16
_Static_assert(offsetof(struct uf_nats_book, version) == 2 &&
                   offsetof(struct uf_nats_book, generation) == 8 &&
                   offsetof(struct uf_nats_book, stamp) == UF_NATS_BOOK_PREFIX,
               "book entry prefix is fixed across versions");

#define UF_NATS_MSG_ID_MAX 96 /* "<generation>:<kind>:<first_seq>:<count>[:r<16 hex>]" */

/* NATS names of ring `ring`: '.' (a subject separator, not allowed in stream names) becomes
 * '_', so rings "a.b" and "a_b" must not share a NATS account. */
struct uf_nats_names {
	char token[40];   /* ring name as one subject token */
	char stream[48];  /* UF_<token> */
	char subject[64]; /* uf.<token>.seq */
	char bucket[56];  /* UF_<token>_books */
	char per_sym[64]; /* uf.<token>.rec (a symbol token follows) */
};

static inline void uf_nats_names_make(const char *ring, struct uf_nats_names *n)
{
	size_t i;

	for (i = 0; ring[i] && i < sizeof(n->token) - 1; i++)
		n->token[i] = ring[i] == '.' ? '_' : ring[i];
	n->token[i] = '\0';
	snprintf(n->stream, sizeof(n->stream), "UF_%s", n->token);
	snprintf(n->subject, sizeof(n->subject), "uf.%s.seq", n->token);
	snprintf(n->bucket, sizeof(n->bucket), "UF_%s_books", n->token);
	snprintf(n->per_sym, sizeof(n->per_sym), "uf.%s.rec", n->token);
}

#endif /* UF_NATS_WIRE_H */
