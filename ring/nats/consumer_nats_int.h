/* The remote consumer's state, shared by its two halves: consumer_nats.c (attach, the
 * receiver thread, the application's calls) and nats_bucket.c (reading the bucket, and the
 * stream checks' hooks onto JetStream). Internal to ring/nats. */
#ifndef UF_CONSUMER_NATS_INT_H
#define UF_CONSUMER_NATS_INT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include <nats/nats.h>

#include "ring/consumer_backend.h"
#include "ring/nats/nats_auth.h"
#include "ring/nats/nats_book.h"
#include "ring/nats/nats_stream.h"
#include "ring/nats/uf_nats_wire.h"
#include "ring/uf_ring_layout.h"

#define NC_CAPACITY   (1u << 18)     /* records buffered for the application (16 MiB) */
#define NC_FETCH_MS   100            /* receiver wait slice */
#define NC_CATCHUP_NS 20000000000ull /* attach reads the stream up to its end this long */
/* Attach retries JetStream requests that time out this long. After a node is lost, a new
 * consumer (the bucket's watcher, the stream's subscription) can be placed on the dead peer
 * for a while and never answer: short attempts, each a new consumer, get through sooner
 * than one long wait. */
#define NC_ATTACH_NS 60000000000ull

struct uf_nats_consumer {
	struct uf_consumer handle; /* ops = &uf_consumer_nats_ops; first member */
	/* set at attach */
	char ring[UF_RING_NAME_MAX];    /* ring name on the bridge's host */
	char urls[1024];                /* server list */
	struct uf_nats_names nm;        /* subjects and bucket */
	struct uf_consumer_options opt; /* as given */
	struct uf_nats_key key;         /* shared key ($UF_NATS_KEY_FILE, $UF_NATS_KEY), or none */
	natsOptions *opts;              /* connection options */
	natsConnection *nc;             /* connection */
	jsCtx *js;                      /* JetStream context */
	kvStore *kv;                    /* the books bucket */
	natsSubscription *sub;          /* ordered consumer on the stream */
	pthread_t thr;                  /* receiver */
	int thr_started;                /* 1 while thr runs */
	int quit;                       /* asks the receiver to stop (atomic accesses) */
	int readers;                    /* application reads waiting for or holding mu (atomic
	                                 * accesses): the receiver lets go of mu between chunks
	                                 * of a message only for them */
	/* guarded by mu */
	pthread_mutex_t mu;            /* guards everything below */
	pthread_cond_t cv;             /* signalled on every change */
	struct uf_nats_stream st;      /* records, books and what the stream is believed to be:
	                                * changed by the receiver only (nats_stream.h) */
	uint64_t pos;                  /* next sequence the application reads */
	int waiters;                   /* application threads asleep on cv (nats_wait) */
	uint64_t received, lost, laps; /* as uf_consumer_info */
	struct uf_consumer_lap lap;    /* last lap */
};

_Static_assert(sizeof(struct uf_consumer_info) == 96 &&
                   offsetof(struct uf_consumer_info, forged) == 92,
               "forged took the info's tail padding: its size and layout stay those of ABI 1");
_Static_assert(offsetof(struct uf_nats_consumer, handle) == 0,
               "a uf_consumer_t * is cast to the NATS state: the handle comes first");

/* The handle of this back end is its state (consumer_backend.h). */
static inline struct uf_nats_consumer *nats_of(struct uf_consumer *c)
{
	return (struct uf_nats_consumer *)c;
}

static inline const struct uf_nats_consumer *nats_of_const(const struct uf_consumer *c)
{
	return (const struct uf_nats_consumer *)c;
}

/* Reads the commit entry, then every book entry of its generation, into `bk` (initialised
 * here). Records below max(entry stamp, commit position, min_from) will not be applied
 * again. With a shared key, an entry it did not sign fails the load (-EBADMSG). Cold: one
 * watch of the whole bucket. Returns 0, -ENOENT, -EIO (retry), -EPROTO, -EBADMSG, -ENOMEM,
 * with a reason in err. */
int uf_nats_load_books(struct uf_nats_consumer *n, struct uf_nats_books *bk,
                       struct uf_nats_commit *cm, uint64_t min_from, char *err, size_t errlen);

/* The stream checks' hooks (nats_stream.h) onto n's JetStream context and bucket; each
 * releases n->mu while it waits on the network. */
void uf_nats_bucket_hooks(struct uf_nats_consumer *n, struct uf_nats_stream_hooks *hk);

#endif /* UF_CONSUMER_NATS_INT_H */
