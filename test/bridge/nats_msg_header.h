/* The header of a NATS message as uf-bridge writes it (tools/uf-bridge/bridge.c), for the
 * tests that hand the remote consumer messages of their own: the fake stream's messages
 * (nats_stream_fake.h) and the forged ones of test_bridge_security. */
#ifndef NATS_MSG_HEADER_H
#define NATS_MSG_HEADER_H

#include <stdint.h>
#include <string.h>

#include "ring/nats/uf_nats_wire.h"

/* A current-version header of kind `kind` (UF_NATS_DATA, _LAP, ...) for ring generation
 * `generation`: `count` records from sequence `first`, `aux` as the kind defines it. */
static inline struct uf_nats_msg nats_msg_header(uint64_t generation, uint8_t kind, uint64_t first,
                                                 uint64_t aux, uint32_t count)
{
	struct uf_nats_msg h;

	memset(&h, 0, sizeof(h));
	h.magic = UF_NATS_MAGIC;
	h.version = UF_NATS_VERSION;
	h.kind = kind;
	h.count = count;
	h.generation = generation;
	h.first_seq = first;
	h.aux = aux;
	return h;
}

#endif /* NATS_MSG_HEADER_H */
