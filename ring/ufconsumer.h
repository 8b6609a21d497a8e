/* libufconsumer: read a uringfeed ring from another process.
 *
 *   pkg-config --cflags --libs ufconsumer
 *
 * A consumer attaches to a ring by name, reads 64-byte records (publish/uf_record.h) in order,
 * and always knows whether it saw everything: a consumer that fell more than a ring behind
 * gets -EOVERFLOW with the exact number of records it lost and the sequence it resumes at;
 * it never gets a torn record. It can copy a consistent book of any instrument from the book
 * image (last-value cache), stamped with the stream sequence it reflects, and continue from
 * the stream without a gap or a double count (see docs/ring.md, "handover").
 *
 * The producer never waits for consumers. A consumer maps the producer's memory read-only
 * and writes only its own registration slot.
 *
 * Return convention: 0 (or a count) on success, -errno on failure. Expected outcomes of
 * uf_consumer_next have their own codes:
 *   -EAGAIN    nothing new yet
 *   -EOVERFLOW lapped: see uf_consumer_last_lap(); the next call continues at resume_seq
 *   -EPIPE     the producer closed the ring and everything was read
 *   -ESTALE    the producer restarted (new generation): call uf_consumer_reattach()
 * A consumer reading a journal (UF_CONSUMER_START_JOURNAL, or a seek before the ring) gets
 * -EOVERFLOW for a hole the journal records (the journal writer was lapped or could not
 * write), with the exact sequences lost in uf_consumer_last_lap(), and -EAGAIN for up to
 * 2 s while the journal writer has not yet written a record the ring no longer holds.
 *
 * A handle is used by one thread at a time.
 *
 * Back ends: a handle reads either a ring in shared memory on this host (a ring name) or the
 * same ring as uf-bridge republishes it on NATS ("nats://...", see uf_consumer_attach). Every
 * function below works on both, with the same records, sequences and meanings; the one
 * -ENOTSUP is an attach with UF_CONSUMER_START_JOURNAL on NATS (the journal is files on the
 * producer's host). A function a back end cannot serve must return -ENOTSUP (reason documented
 * at the function); test_consumer_api calls every exported function on both back ends.
 * Differences in what is reported: uf_consumer_info of a NATS handle has producer_pid 0,
 * numa_node -1, hugepages 0 (the producer is on another host), and its capacity is the
 * client's buffer.
 *
 * Arguments: a NULL handle or output pointer gets -EINVAL (void functions then do nothing,
 * or zero their output), except in uf_consumer_next and uf_consumer_read, which are the hot
 * path and do not check.
 */
#ifndef UFCONSUMER_H
#define UFCONSUMER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "publish/uf_record.h"
#include "publish/uf_level.h"

#ifdef __cplusplus
extern "C" {
#endif

/* API/ABI version 2 (libufconsumer.so.2): UF_BOOK_MAX_STATUS went from 8 to 32, room for
 * every UF_STATUS_* code (UF_STATUS_MAX, checked when the library is built) and for codes to
 * come within this ABI. */
#define UF_CONSUMER_API_VERSION 2
#define UF_BOOK_MAX_DEPTH       64 /* levels per side a snapshot can hold */
#define UF_BOOK_MAX_STATUS      32 /* status codes a snapshot can hold (above) */

/* uf_book_snapshot.flags (and the book builder's books, ring/ufbook.h). */
#define UF_BOOKF_STALE UF_RECF_STALE /* may be wrong: an unrecovered gap came before */
#define UF_BOOKF_TRUNCATED_BID                                                                     \
	(1u << 16)                        /* the book has more bid levels than nbid: the           \
	                                   * image holds only `depth` per side */
#define UF_BOOKF_TRUNCATED_ASK (1u << 17) /* the same for asks */
#define UF_BOOKF_TRUNCATED     (UF_BOOKF_TRUNCATED_BID | UF_BOOKF_TRUNCATED_ASK)

typedef struct uf_consumer uf_consumer_t; /* opaque handle */

enum uf_consumer_start {
	UF_CONSUMER_START_LATEST = 0, /* first record read is the next one published */
	UF_CONSUMER_START_OLDEST = 1, /* first record read is the oldest still safely in the ring */
	UF_CONSUMER_START_JOURNAL = 2, /* first record read is the first of the day in the ring's
	                                * journal (docs/journal.md): the consumer reads the journal,
	                                * then the ring, with no gap and no duplicate. Attach fails
	                                * with -ENODATA when the producer keeps no journal. Local
	                                * rings only: a NATS handle returns -ENOTSUP */
};

struct uf_consumer_options {
	uint64_t spin_ns; /* uf_consumer_wait busy-polls this long before sleeping on a futex */
	int start;        /* enum uf_consumer_start */
	uint32_t owner;   /* a uid the ring may belong to besides root and this process's own
	                   * (0 = none; $UF_RING_OWNER, a uid or user name, also counts) */
	const char *tag;  /* label shown in the producer's consumer report (15 bytes kept) */
	const char *dir;  /* base directory of the rings; NULL = $UF_RING_DIR or /dev/shm */
};

/* What the last -EOVERFLOW meant. */
struct uf_consumer_lap {
	uint64_t from_seq;   /* sequence the consumer wanted to read */
	uint64_t resume_seq; /* sequence of the next record it will get */
	uint64_t lost;       /* resume_seq - from_seq: records it will never see */
};

struct uf_consumer_info {
	uint64_t generation;      /* producer generation of the attached ring */
	uint64_t capacity;        /* records */
	uint64_t position;        /* sequence of the next record this consumer reads */
	uint64_t tail;            /* records published so far */
	uint64_t received;        /* records returned */
	uint64_t lost;            /* records lost to laps, in total */
	uint64_t laps;            /* number of laps */
	uint64_t created_ns;      /* when the producer created the ring (CLOCK_REALTIME) */
	int32_t producer_pid;     /* producer process */
	int32_t numa_node;        /* node the ring lives on, -1 when unbound */
	uint32_t depth;           /* book image levels per side */
	uint32_t max_instruments; /* book image entries */
	int closed;               /* 1 once the producer closed the ring */
	int producer_alive;       /* 0 when the producer process is gone (crashed without
	                           * closing; a restart then shows as -ESTALE). Needs a shared
	                           * pid namespace */
	int hugepages;            /* 0 small pages, 1 transparent huge pages granted, 2 hugetlbfs */
	uint32_t forged;          /* NATS handle: stream messages dropped because they do not
	                           * continue the stream uf-bridge wrote (published by another
	                           * client, replayed, or unauthenticated with a shared key set);
	                           * saturates. 0 on a local ring. Added in the struct's former tail
	                           * padding: size and every offset unchanged (ABI 1) */
};

struct uf_book_status {
	uint32_t code;     /* status code (UF_STATUS_* of publish/uf_record.h) */
	uint32_t reserved; /* zero */
	int64_t price;     /* the status record's price field */
	uint64_t shares;   /* the status record's shares field */
	uint64_t exch_ts;  /* exchange timestamp */
};

/* A consistent copy of one instrument's image entry. */
struct uf_book_snapshot {
	uint32_t instrument;   /* id (ITCH stock locate) */
	uint32_t flags;        /* UF_BOOKF_STALE when the book may be wrong after a gap;
	                        * UF_BOOKF_TRUNCATED_BID/ASK when a side was cut at the image
	                        * depth (the levels past it are not in the snapshot) */
	uint64_t stamp;        /* the entry reflects every record < stamp of this instrument and
	                        * none >= stamp: apply stream records with seq >= stamp.
	                        * Handover: snapshot, uf_consumer_seek(min stamp), apply records
	                        * of each instrument from its stamp on; -ERANGE or a lap: again */
	char symbol[9];        /* trimmed symbol, NUL-terminated ("" when no directory entry) */
	uint32_t round_lot;    /* directory round lot */
	uint32_t category;     /* directory market category */
	uint32_t nbid;         /* valid entries in bid[] (best = highest first) */
	uint32_t nask;         /* valid entries in ask[] (best = lowest first) */
	int64_t last_price;    /* last printing trade price (uf_rec_trade_prints: the feed's
	                        * producer counts no non-printable, broken or 0-share trade) */
	uint64_t last_shares;  /* last trade shares */
	uint64_t last_exch_ts; /* last trade exchange time */
	uint64_t last_rx_ts;   /* last trade receive time */
	uint64_t volume;       /* cumulative printing shares this session (0 after a RESET) */
	uint64_t trades;       /* number of printing trades this session */
	uint64_t update_rx_ts; /* receive time of the update that last changed the entry */
	uint32_t nstatus;      /* valid entries in status[]: one per code seen, every code the
	                        * instrument received (none is ever dropped for want of room) */
	uint32_t reserved;     /* zero */
	struct uf_book_status status[UF_BOOK_MAX_STATUS]; /* latest value per status code, in
	                                                   * ascending code order */
	struct uf_level bid[UF_BOOK_MAX_DEPTH];           /* bids */
	struct uf_level ask[UF_BOOK_MAX_DEPTH];           /* asks */
};

/* Defaults: spin 20 us before sleeping, start at the latest record. */
void uf_consumer_options_init(struct uf_consumer_options *opt);

/* Attaches to ring `name`: checks that its directory and data file are what a producer makes
 * (a real directory and file, owned by root, this user or options.owner, writable by nobody
 * else), maps the data read-only after checking every header field against the file size,
 * gets the sealed consumer table from the producer's socket and registers in it. A ring whose
 * producer closed it or is gone is read without registering. `opt` may be NULL (defaults).
 * Errors (with a one-line reason in `err`): -ENOENT no such ring, -EACCES, -EPERM a foreign
 * or group/world-writable ring (squatted), -ELOOP a symbolic link, -EPROTO not a ring or a
 * different layout version or record size or an inconsistent header, -EUSERS table full,
 * -ESTALE the producer was restarting (retry).
 * A name "nats://HOST:PORT[,nats://HOST:PORT...]/RING" attaches to RING as uf-bridge
 * republishes it on NATS JetStream (when built with UF_NATS): every call below then works on
 * it with the same records, sequences and semantics; see docs/fanout.md for what differs
 * (credentials and TLS from UF_NATS_* environment variables). */
int uf_consumer_attach(const char *name, const struct uf_consumer_options *opt, uf_consumer_t **out,
                       char *err, size_t errlen);

/* Unregisters and unmaps; `c` is freed. NULL is accepted. */
void uf_consumer_detach(uf_consumer_t *c);

/* Attaches to the ring's current generation (after -ESTALE), with the same options; the
 * position starts according to options.start. The handle stays valid on failure (still the
 * old generation) and the call may be retried. */
int uf_consumer_reattach(uf_consumer_t *c, char *err, size_t errlen);

/* Copies the next record into `rec` and its sequence into `seq` (may be NULL). Non-blocking.
 * Returns 0 or one of the codes in the header comment. */
int uf_consumer_next(uf_consumer_t *c, struct uf_record *rec, uint64_t *seq);

/* Copies up to `max` consecutive records; `first_seq` (may be NULL) gets the first one's
 * sequence. Returns the count (>0) or the codes of uf_consumer_next. */
int uf_consumer_read(uf_consumer_t *c, struct uf_record *recs, size_t max, uint64_t *first_seq);

/* Blocks until uf_consumer_next has something to say (a record, a lap, close or restart):
 * busy-polls options.spin_ns, then sleeps on a futex (the producer wakes sleepers only).
 * timeout_ns < 0 waits forever. Returns 0, -ETIMEDOUT or -EINTR. */
int uf_consumer_wait(uf_consumer_t *c, int64_t timeout_ns);

/* Details of the last -EOVERFLOW. */
void uf_consumer_last_lap(const uf_consumer_t *c, struct uf_consumer_lap *lap);

/* Moves the read position to `seq`, which must be in the ring: [oldest safe, tail], or,
 * when the producer keeps a journal (docs/journal.md), anywhere in it: the reads then come
 * from the journal until they reach the ring (no gap, no duplicate). Used after a snapshot
 * to continue from its stamp. Returns 0, -ERANGE (past the tail, or before the ring with no
 * journal), -ENODATA (before the journal's first record: nobody holds it). A NATS handle
 * seeks within what its stream keeps (-ERANGE beyond). */
int uf_consumer_seek(uf_consumer_t *c, uint64_t seq);

/* Facts about the attached ring. Cold: reads /proc for producer_alive. */
void uf_consumer_get_info(const uf_consumer_t *c, struct uf_consumer_info *info);

/* Copies instrument `id` consistently (sequence lock, retried for at most ~20 ms). Returns 0,
 * -ENOENT (never set), -ERANGE (id >= max_instruments), -EBUSY (the producer kept changing
 * it, or was descheduled in the middle of an update: try again). */
int uf_consumer_snapshot(uf_consumer_t *c, uint32_t id, struct uf_book_snapshot *snap);

/* Every record < the returned sequence is reflected in the book image (0 when the producer
 * never committed): an instrument the image does not hold has no record below it. The
 * handover starts reading here (uf_book_builder_sync). On a NATS handle the image is the
 * books the client keeps from the stream, and this is the next sequence it will receive. */
uint64_t uf_consumer_image_seq(const uf_consumer_t *c);

/* Calls `fn` with a snapshot of every present instrument in id order (`snap` is reused
 * between calls); stops early and returns fn's value when it is not 0. Returns 0 or -errno. */
int uf_consumer_snapshot_all(uf_consumer_t *c,
                             int (*fn)(const struct uf_book_snapshot *snap, void *arg), void *arg);

/* Instrument id of `symbol` ("AAPL"), from the directory in the book image. O(instruments).
 * Returns 0 and sets *id, or -ENOENT. */
int uf_consumer_lookup(uf_consumer_t *c, const char *symbol, uint32_t *id);

/* The short message of a uf_consumer_* return code ("lapped", "ring closed", ...). */
const char *uf_consumer_strerror(int rc);

#ifdef __cplusplus
}
#endif

#endif /* UFCONSUMER_H */
