/* The consumer back-end contract: what a source of records and books must provide for
 * libufconsumer's uf_consumer_* API (ring/ufconsumer.h) to run on it. Internal to ring/.
 *
 * A back end is one table of operations. Its handle state starts with `struct uf_consumer`
 * (the ops pointer), so a uf_consumer_t * is the back end's own state and dispatch costs one
 * load and one indirect call; nothing is allocated per call. ring/consumer.c checks the
 * arguments, picks the back end from the name at attach and dispatches; each back end lives
 * in its own files:
 *   local shared-memory ring   ring/consumer_local.{h,c}
 *   NATS JetStream (uf-bridge) ring/nats/consumer_nats.{h,c}, with UF_CONSUMER_NATS
 * Every entry is mandatory: a back end that cannot do something says so with -ENOTSUP (and
 * ufconsumer.h documents it), it never leaves a NULL that the dispatcher would call. */
#ifndef UF_CONSUMER_BACKEND_H
#define UF_CONSUMER_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "ring/ufconsumer.h"

struct uf_consumer_ops;

/* Back ends are internal to libufconsumer: hidden, so the dispatcher's compare with the local
 * table's address is one instruction (no GOT load) and no consumer can depend on them. */
#define UF_CONSUMER_BACKEND_HIDDEN __attribute__((visibility("hidden")))

/* The head of every back end's handle state (first member: a handle is cast to its state). */
struct uf_consumer {
	const struct uf_consumer_ops *ops; /* the back end that owns the rest of the state */
};

/* One back end. Each entry has the contract of the uf_consumer_* function of the same name
 * in ufconsumer.h; the dispatcher has already checked the pointers that header requires. */
struct uf_consumer_ops {
	const char *name; /* "local", "nats": for messages */
	/* Creates a handle of this back end for `name` (the full name given to
	 * uf_consumer_attach); `opt` is never NULL. */
	int (*attach)(const char *name, const struct uf_consumer_options *opt,
	              struct uf_consumer **out, char *err, size_t errlen);
	void (*detach)(struct uf_consumer *c); /* releases everything, frees c */
	int (*reattach)(struct uf_consumer *c, char *err, size_t errlen); /* new generation */
	int (*read)(struct uf_consumer *c, struct uf_record *recs, size_t max,
	            uint64_t *first_seq); /* per call, not per record: see consumer.c */
	int (*wait)(struct uf_consumer *c, int64_t timeout_ns); /* until read has news */
	void (*last_lap)(const struct uf_consumer *c, struct uf_consumer_lap *lap);   /* last lap */
	int (*seek)(struct uf_consumer *c, uint64_t seq);                             /* move */
	void (*get_info)(const struct uf_consumer *c, struct uf_consumer_info *info); /* facts */
	int (*snapshot)(struct uf_consumer *c, uint32_t id,
	                struct uf_book_snapshot *snap);     /* one book of the image */
	uint64_t (*image_seq)(const struct uf_consumer *c); /* the image reflects records < it */
	int (*snapshot_all)(struct uf_consumer *c,
	                    int (*fn)(const struct uf_book_snapshot *snap, void *arg),
	                    void *arg); /* every present book, id order */
	int (*lookup)(struct uf_consumer *c, const char *symbol, uint32_t *id); /* by symbol */
};

/* The shared-memory ring on this host (ring/consumer_local.c): every name that is not a URL. */
extern const struct uf_consumer_ops uf_consumer_local_ops UF_CONSUMER_BACKEND_HIDDEN;

/* The ring as uf-bridge republishes it ("nats://..."), when libufconsumer is built with
 * UF_NATS; NULL otherwise, and attach then names the missing build option. */
#ifdef UF_CONSUMER_NATS
extern const struct uf_consumer_ops uf_consumer_nats_ops UF_CONSUMER_BACKEND_HIDDEN;
#define UF_CONSUMER_NATS_OPS (&uf_consumer_nats_ops)
#else
#define UF_CONSUMER_NATS_OPS NULL
#endif
#define UF_CONSUMER_NATS_PREFIX "nats://" /* names that select the NATS back end */

#endif /* UF_CONSUMER_BACKEND_H */
