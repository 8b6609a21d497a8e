/* What a remote consumer believes of the bridge's stream (docs/fanout.md, "What a remote
 * consumer trusts"). Any NATS client allowed to publish on uf.RING.seq can put a message
 * there; this unit decides, message by message, whether it continues the stream the bridge
 * wrote, and only then applies it to the consumer's records and books. Internal to ring/
 * (the receiver thread of consumer_nats.c, the fuzzer and the unit tests).
 *
 * The rules (each refusal counted in `forged`):
 * - with a shared key set, a message must end with a valid HMAC (nats_auth.h): nothing else
 *   is looked at;
 * - a message must be the bridge's form: magic, version, length, and a Nats-Msg-Id naming
 *   its content;
 * - DATA continues the records received; records already held are a replay (refused) except
 *   right after attach or a bridge restart, when the bridge re-sends what it had;
 * - DATA that skips records is believed only when JetStream itself no longer holds a stream
 *   message after the last one believed (its retention removed it), or when the bucket's
 *   commit entry is already at or past its first record (the delivery skipped messages the
 *   bridge stored); otherwise the records in between would have come first;
 * - LAP and RESET that move forward are believed only when the bucket's commit entry, which
 *   the bridge writes before either, is at or past the resume point; a RESET of another
 *   generation only when the commit entry has left this generation;
 * - CLOSED only exactly at the records received and once the commit entry says the bridge
 *   closed the generation there (checked at once, then while the stream is idle and before
 *   each message: a close is pending meanwhile, refused when records follow it).
 * What cannot be told apart without the shared key: a forger who predicts the next
 * records (DATA at exactly the tail) or who can also write the bucket. */
#ifndef UF_NATS_STREAM_H
#define UF_NATS_STREAM_H

#include <stddef.h>
#include <stdint.h>

#include "ring/nats/nats_auth.h"
#include "ring/nats/nats_book.h"
#include "ring/nats/uf_nats_wire.h"

#define UF_NATS_JUMPS       64  /* sequence ranges the stream skipped, kept for the reader */
#define UF_NATS_APPLY_CHUNK 256 /* records of a message stored between progress() calls */

struct uf_nats_jump {
	uint64_t from; /* first sequence that will never come */
	uint64_t to;   /* sequence of the next record that does */
};

/* The network side of the checks, supplied by the consumer (a fake one in the tests and the
 * fuzzer). Called by the receiver with the consumer's lock held; a hook may release it while
 * it waits on the network: only the receiver changes the state below. */
struct uf_nats_stream_hooks {
	/* 1 when JetStream's retention removed stream sequence `sseq` (the stream's first
	 * sequence is past it), 0 when the stream still holds it or cannot tell */
	int (*stream_dropped)(void *arg, uint64_t sseq);
	/* Reads the commit entry into *cm and, when `bk` is not NULL, every book entry of its
	 * generation into *bk (initialised by the hook; records below max(stamp, min_from)
	 * skipped). Returns 0, or -errno when the bucket cannot be read (retries are the
	 * hook's: an error here makes the consumer give up) */
	int (*load)(void *arg, struct uf_nats_books *bk, struct uf_nats_commit *cm,
	            uint64_t min_from);
	/* Reads the commit entry once (no wait): 1 when it says the bridge closed `generation`
	 * at `seq` (UF_NATS_COMMIT_CLOSED), -1 when it shows the bridge went on (another
	 * generation, or a position past `seq`), 0 when it does not say yet */
	int (*close_confirmed)(void *arg, uint64_t generation, uint64_t seq);
	/* Called after every UF_NATS_APPLY_CHUNK records a DATA message stored (NULL: never),
	 * when every record below the tail is stored and the books are at the tail: the consumer
	 * lets its application read meanwhile (releases the lock, wakes it). Without it a message
	 * of thousands of records held the lock for its whole application, and an application
	 * reading 256 records a call got 256 per message: it fell a buffer behind */
	void (*progress)(void *arg);
	void *arg; /* passed to each */
};

struct uf_nats_stream {
	const char *ring;              /* for log lines */
	const struct uf_nats_key *key; /* shared key (NULL or len 0: none): every message must end
	                                * with its MAC (nats_auth.h) */
	struct uf_record *buf;         /* records, slot = seq & mask (owned by the consumer) */
	uint64_t *seqs;                /* sequence held by each slot (owned by the consumer) */
	uint64_t mask;                 /* slots - 1 */
	uint64_t base;                 /* oldest sequence stored since attach */
	uint64_t tail;                 /* next ring sequence expected */
	struct uf_nats_jump jumps[UF_NATS_JUMPS]; /* skipped ranges, oldest first */
	uint32_t njumps;                          /* entries in jumps */
	struct uf_nats_books books;               /* image at `tail` */
	struct uf_nats_commit cm;                 /* commit entry read at attach */
	uint64_t js_next;         /* next stream sequence expected (redeliveries below it) */
	uint64_t js_believed;     /* stream sequence of the last message believed */
	uint64_t close_pending;   /* 1 + the tail at which CLOSED came before the commit entry
	                           * confirmed it (the bridge writes it right after), 0 none */
	uint32_t close_pending_n; /* CLOSED messages waiting there: counted as forged when
	                           * records or a commit entry past them show it was no end */
	uint64_t forged;          /* messages refused: they do not continue the stream */
	int overlap;              /* records below tail are expected (attach, bridge restart) */
	int closed;               /* the producer closed the ring at `tail` */
	int stale;                /* a new generation follows `tail` */
	int failed;               /* the bucket could not be read when the stream needed it: the
	                           * books can no longer be kept right; the receiver stops */
};

/* Starts at the commit entry s->cm (and s->books loaded at it): records from its position,
 * stream messages from its js_from, every flag clear. */
void uf_nats_stream_begin(struct uf_nats_stream *s);

/* One stream message: `data`/`len` its payload, `msgid` its Nats-Msg-Id header (NULL when
 * absent), `sseq` its JetStream stream sequence (0 when unknown). Returns 0, or 1 when the
 * receiver must stop (a new generation, or failed). */
int uf_nats_stream_on_msg(struct uf_nats_stream *s, const struct uf_nats_stream_hooks *hk,
                          const void *data, size_t len, const char *msgid, uint64_t sseq);

/* The stream is idle (no message for a while): settles a pending CLOSED against the commit
 * entry. Returns 1 when the state changed (closed, or the close refused), else 0. */
int uf_nats_stream_idle(struct uf_nats_stream *s, const struct uf_nats_stream_hooks *hk);

#endif /* UF_NATS_STREAM_H */
