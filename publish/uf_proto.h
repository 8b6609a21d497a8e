/* Venue protocols behind one interface: what the engine (feed/) knows of a venue.
 *
 * A protocol entry is a const struct uf_proto: its framing (decode/uf_frame.h: packet ->
 * session, first sequence, message count, kind; re-requests), the book kind its messages
 * feed, and the code that decodes a data packet's messages and applies them to the publish
 * step (publish/uf_step.h), called ONCE PER PACKET: the entry keeps its own fused decode,
 * prefetching and batching behind that call. The snapshot loader hands it the messages of a
 * snapshot one at a time. feed/pipeline.c, feed/arbiter.c, feed/sink.c and feed/snapshot.c
 * call nothing venue-specific: they go through the entry chosen by the feed's "protocol" key.
 *
 * Adding a venue (docs/architecture.md, "Where a protocol plugs in"): its framing and message
 * decoder under decode/, its apply function (and a new book kind) under publish/, one line in
 * the table of publish/protocols.c. An embedder or a test may add an entry at run time with
 * uf_proto_register. */
#ifndef UF_PROTO_H
#define UF_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include "decode/uf_frame.h"
#include "publish/uf_step.h"

#define UF_PROTO_DEFAULT "itch50-moldudp64" /* the entry an empty "protocol" selects */
#define UF_PROTO_MAX     16                 /* entries: built in plus registered */

/* The book a protocol's messages maintain. */
enum uf_book_kind {
	UF_BOOK_ORDERS = 1, /* order by order (adds, executions, cancels): levels derived */
	UF_BOOK_LEVELS = 2, /* price levels as the venue sends them (no order ids) */
};

/* struct uf_proto order_refs ops. */
enum uf_proto_ref_op {
	UF_PROTO_REF_ADD = 1, /* the message creates the order */
	UF_PROTO_REF_REMOVE,  /* it ends it (whatever its shares) */
	UF_PROTO_REF_TOUCH,   /* it changes it (may end it: a full execution) */
};

/* One order a live message names (struct uf_proto order_refs). */
struct uf_proto_ref {
	uint64_t ref;    /* order reference */
	uint32_t shares; /* ADD: the order's shares; TOUCH: the shares it takes off (executed,
	                  * cancelled), 0 when the message does not say; REMOVE: 0. The snapshot
	                  * check places an order's shares between its live messages with them */
	uint8_t op;      /* enum uf_proto_ref_op */
};

struct uf_proto {
	const char *name;                 /* the "protocol" config value, e.g. "itch50-moldudp64" */
	const struct uf_framing *framing; /* its packets (decode/uf_frame.h) */
	enum uf_book_kind book;           /* the book kind it feeds */
	size_t state_size;                /* per-feed scratch its apply uses (decoded messages of
	                                   * one packet...): the engine allocates it once, zeroed,
	                                   * cache-line aligned; 0 = none */
	/* Decodes messages [f->seq + skip, f->seq + f->count) of an opened data frame and applies
	 * them in order to s (uf_step_room before each message's records; uf_step_msg_error for
	 * one that does not decode). `state` is the entry's scratch. Hot: one call per packet. */
	void (*apply)(struct uf_pub_step *s, void *state, const struct uf_frame *f, uint32_t skip,
	              uint64_t rx_ns);
	/* Optional (NULL: no snapshot service for this venue). Applies one snapshot message
	 * (feed_seq 0, no receive time) to s. Returns 0, or -(1 + enum uf_step_err) when it did
	 * not decode (counted by the caller). Cold. */
	int (*snapshot_msg)(struct uf_pub_step *s, const uint8_t *msg, size_t len);
	/* Optional (NULL: a snapshot's orders are not checked against the live lines). The
	 * orders one live message creates (UF_PROTO_REF_ADD), ends (REMOVE: a delete, the old
	 * side of a replace) or changes (TOUCH: executions, cancels): up to two in out[], with
	 * the shares each adds or takes off, and the book (instrument) they are in; returns how
	 * many (0: none, or it did not decode). Cold: the snapshot loader checks the End of
	 * Snapshot claim with them, and flags the books it cannot confirm (feed/snapshot.c). */
	int (*order_refs)(const uint8_t *msg, size_t len, struct uf_proto_ref out[2],
	                  uint32_t *instrument);
	/* Optional, with order_refs: the shares left of order `ref` in the books of s, 0 when
	 * they do not hold it (a held order always has shares). Cold. */
	uint32_t (*order_held)(const struct uf_pub_step *s, uint64_t ref);
};

/* The entry named `name` (NULL or "": UF_PROTO_DEFAULT), or NULL when there is none. Cold. */
const struct uf_proto *uf_proto_find(const char *name);

/* Adds an entry (a venue outside the source tree, a test's toy protocol) before any feed
 * that uses it is created; the entry must outlive them. Returns 0, -EEXIST (the name is
 * taken), -EINVAL (no name, apply, or framing open/iter_init/iter_next) or -ENOSPC (UF_PROTO_MAX
 * entries). Not thread-safe: setup only. */
int uf_proto_register(const struct uf_proto *p);

/* Writes the known names, quoted and comma separated, into buf (for error messages).
 * Returns buf. */
const char *uf_proto_names(char *buf, size_t cap);

#endif /* UF_PROTO_H */
