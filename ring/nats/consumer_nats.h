/* The remote side of libufconsumer: uf_consumer_attach("nats://h1:4222,nats://h2:4222/RING")
 * reads what uf-bridge publishes for RING (ring/nats/uf_nats_wire.h) and answers every
 * uf_consumer_* call like a local ring does: the same records with the same sequences, a
 * book image (rebuilt from the stream, seeded from the key-value bucket) whose snapshots are
 * stamped for the same snapshot-then-stream handover, -EOVERFLOW with exact counts when
 * records are lost (the bridge was lapped, the stream's retention dropped them, or this
 * consumer fell more than its buffer behind), -EPIPE after the producer closed the ring,
 * -ESTALE on a new generation. Internal: ring/consumer.c dispatches to it through
 * uf_consumer_nats_ops (ring/consumer_backend.h), which is all this back end exports.
 * docs/fanout.md. */
#ifndef UF_CONSUMER_NATS_H
#define UF_CONSUMER_NATS_H

#include "ring/consumer_backend.h"

#endif /* UF_CONSUMER_NATS_H */
