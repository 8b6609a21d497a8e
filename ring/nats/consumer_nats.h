/* The remote side of libufconsumer: uf_consumer_attach("nats://h1:4222,nats://h2:4222/RING")
 * reads what uf-bridge publishes for RING (ring/nats/uf_nats_wire.h) and answers every
 * uf_consumer_* call like a local ring does: the same records with the same sequences, a
 * book image (rebuilt from the stream, seeded from the key-value bucket) whose snapshots are
 * stamped for the same snapshot-then-stream handover, -EOVERFLOW with exact counts when
 * records are lost (the bridge was lapped, the stream's retention dropped them, or this
 * consumer fell more than its buffer behind), -EPIPE after the producer closed the ring,
 * -ESTALE on a new generation. Internal: consumer.c dispatches to these. docs/fanout.md. */
#ifndef UF_CONSUMER_NATS_H
#define UF_CONSUMER_NATS_H

#include <stddef.h>
#include <stdint.h>

#include "ring/ufconsumer.h"

#define UF_NATS_URL_PREFIX "nats://"

struct uf_nats_consumer;

int uf_nats_consumer_attach(const char *name, const struct uf_consumer_options *opt,
                            struct uf_nats_consumer **out, char *err, size_t errlen);
void uf_nats_consumer_detach(struct uf_nats_consumer *n);
int uf_nats_consumer_reattach(struct uf_nats_consumer *n, char *err, size_t errlen);
int uf_nats_consumer_read(struct uf_nats_consumer *n, struct uf_record *recs, size_t max,
                          uint64_t *first_seq);
int uf_nats_consumer_wait(struct uf_nats_consumer *n, int64_t timeout_ns);
void uf_nats_consumer_last_lap(const struct uf_nats_consumer *n, struct uf_consumer_lap *lap);
int uf_nats_consumer_seek(struct uf_nats_consumer *n, uint64_t seq);
void uf_nats_consumer_get_info(const struct uf_nats_consumer *n, struct uf_consumer_info *info);
int uf_nats_consumer_snapshot(struct uf_nats_consumer *n, uint32_t id,
                              struct uf_book_snapshot *snap);
int uf_nats_consumer_snapshot_all(struct uf_nats_consumer *n,
                                  int (*fn)(const struct uf_book_snapshot *snap, void *arg),
                                  void *arg);
int uf_nats_consumer_lookup(struct uf_nats_consumer *n, const char *symbol, uint32_t *id);

#endif /* UF_CONSUMER_NATS_H */
