/* The compact form of a DATA message's records (wire version UF_NATS_VERSION_COMPACT,
 * uf_nats_wire.h): the 64-byte records of one market-data message differ from the record
 * before them in few bytes (same receive time and feed sequence within a datagram, close
 * exchange times, the same instrument), so each record is sent as its XOR with the previous
 * one (the first with zero), word by word, keeping only the low-order bytes that are not
 * zero. Measured on the shared captures and a generated day: 18.6-22.6 bytes a record instead
 * of 64 (docs/performance.md). Internal to ring/ and tools/uf-bridge.
 *
 * Per record: 4 bytes, two 4-bit counts per byte (word 2i in the low nibble, 2i+1 in the
 * high one) of the bytes kept of each of the 8 little-endian words of the XOR (0..8), then
 * those bytes, words in order, lowest byte first. No alignment anywhere. */
#ifndef UF_NATS_CODEC_H
#define UF_NATS_CODEC_H

#include <stddef.h>
#include <stdint.h>

#include "publish/uf_record.h"

#define UF_NATS_COMPACT_MAX (4 + sizeof(struct uf_record)) /* worst case bytes a record */

/* Encodes n records into out (room for n * UF_NATS_COMPACT_MAX bytes is the caller's).
 * Returns the bytes written. Pure. */
size_t uf_nats_compact_encode(const struct uf_record *recs, uint32_t n, unsigned char *out);

/* Decodes records from in[0, len) one at a time: *prev holds the previous record (zero it
 * before the first), *off the read offset (0 before the first). Returns 0 with the record in
 * *prev, or -1 when the input ends inside it or a count is above 8. Pure. */
int uf_nats_compact_next(const unsigned char *in, size_t len, size_t *off, struct uf_record *prev);

/* Whether in[0, len) is exactly n compact records (every count <= 8, the bytes they name
 * fill it), as uf_nats_compact_decode would accept it, from the count bytes alone: a
 * consumer checks a message before applying any of it without decoding it twice (the
 * decode cost 15 ns a record, the check reads 4 bytes a record). 0 or -1. Pure. */
int uf_nats_compact_check(const unsigned char *in, size_t len, uint32_t n);

/* Decodes exactly n records filling in[0, len) into out. 0, or -1 when the input is not
 * exactly n records. Pure. */
int uf_nats_compact_decode(const unsigned char *in, size_t len, uint32_t n, struct uf_record *out);

#endif /* UF_NATS_CODEC_H */
