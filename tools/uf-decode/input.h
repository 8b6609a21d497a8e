/* uf-decode: shared input loading and iteration for every subcommand (stats, print, bench,
 * and books from publish/). Everything goes through decode/'s readers, so a file is decoded
 * by exactly the code the live feed runs. */
#ifndef UF_DECODE_INPUT_H
#define UF_DECODE_INPUT_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#include "decode/uf_decode.h"

/* Exit statuses of every subcommand. */
#define UF_EXIT_OK        0 /* success */
#define UF_EXIT_INPUT_ERR 1 /* the input had errors (counted) */
#define UF_EXIT_USAGE     2 /* bad usage or unreadable input */

/* Called for each message that decoded (after counting), in file order. `raw_len` is the
 * wire length. Return nonzero to stop early (e.g. print --limit). */
typedef int (*uf_input_msg_fn)(void *ctx, uint64_t seq, const struct uf_itch_msg *m);
/* Called for each message that did not decode (unknown type, bad length); may be NULL. */
typedef int (*uf_input_bad_fn)(void *ctx, uint64_t seq, const uint8_t *msg, size_t len, int rc);

/* Called for each IEX DEEP/TOPS message that decoded; `proto` is its message protocol id
 * (UF_IEXTP_PROTO_DEEP / _TOPS). Return nonzero to stop early. */
typedef int (*uf_input_iex_fn)(void *ctx, uint64_t seq, uint16_t proto, const struct uf_iex_msg *m);

/* What uf_input_for_each_fns calls; any member may be NULL (those messages are counted only). */
struct uf_input_fns {
	uf_input_msg_fn itch;    /* ITCH 5.0 messages (daily files, MoldUDP64 captures) */
	uf_input_iex_fn iex;     /* IEX messages (IEX-TP captures) */
	uf_input_bad_fn bad;     /* ITCH messages that did not decode */
	uf_input_bad_fn bad_iex; /* IEX messages that did not decode (rc as uf_iex_decode) */
};

/* Decodes every message of each file in turn into `c`. Returns UF_EXIT_OK when all files
 * were read (errors inside them are in `c`), or UF_EXIT_USAGE after printing why a file
 * could not be opened or was refused. ITCH only: IEX messages are counted, not passed on. */
int uf_input_for_each(const char *const *paths, int npaths, struct uf_decode_counters *c,
                      uf_input_msg_fn fn, uf_input_bad_fn bad, void *ctx);

/* The same for every venue: ITCH messages to fns->itch, IEX messages to fns->iex. */
int uf_input_for_each_fns(const char *const *paths, int npaths, struct uf_decode_counters *c,
                          const struct uf_input_fns *fns, void *ctx);

/* Keeps only UDP datagrams to destination `port` in pcap inputs read by uf_input_for_each
 * (0 = all); a daily input then fails to open (it has no ports). */
void uf_input_set_udp_port(uint16_t port);

/* What the UDP payloads of pcap inputs read by uf_input_for_each are: "auto" (the first
 * payload decides, the default), "mold" (MoldUDP64), "iex-deep" or "iex-tops" (IEX-TP of
 * that protocol only). Returns 0, or -EINVAL for another name (nothing changed). */
int uf_input_set_payload(const char *name);

/* A whole input re-packed as MoldUDP64 datagrams in memory, laid out like a receive buffer
 * pool: one packet per fixed-size slot (what an io_uring provided-buffer ring hands out). */
struct uf_input_packets {
	uint8_t *arena;             /* npkts slots of `slot` bytes, stream order */
	uint8_t *arena2;            /* the same packets in shuffled slots */
	size_t slot;                /* slot size (2048) */
	size_t npkts;               /* packets */
	struct uf_decode_pkt *seq;  /* packets in slot order (sequential layout) */
	struct uf_decode_pkt *scat; /* same packets, slots in a shuffled order (recycled buffers) */
	uint64_t nmsgs;             /* messages in all packets */
	uint64_t msg_bytes;         /* ITCH message bytes */
	uint64_t pkt_bytes;         /* datagram bytes (headers included) */
	struct uf_decode_counters load; /* what reading the file counted */
};

/* Loads `path` (daily or pcap) and packs its messages into datagrams of at most `mtu_payload`
 * bytes (1472 for a 1500-byte MTU). Returns UF_EXIT_OK or UF_EXIT_USAGE (message printed). */
int uf_input_load_packets(const char *path, size_t mtu_payload, struct uf_input_packets *out);
void uf_input_free_packets(struct uf_input_packets *p);

/* The passes `uf-decode bench`, `uf-bench decode` and `uf-bench book` time alike. */

/* Reads every byte of every packet (8 at a time) in the order given, folding them into
 * `*acc`: what touching the data costs before any decoding. Returns elapsed ns. */
uint64_t uf_input_read_pass(const struct uf_decode_pkt *pk, size_t n, uint64_t *acc);

/* Busy-waits `ns` (pause loop): the idle wait of a feed thread between datagrams. */
void uf_input_idle_wait(uint64_t ns);

/* Decodes every packet once in batches of `batch` through uf_decode_batch_inline (the feed
 * thread's path) with prefetch distance `dist`; `*msgs` gets the messages seen, `*errors`
 * the decode errors, and `*acc` folds their fields so nothing is optimised away. With
 * `gap_ns`, each batch follows uf_input_idle_wait(gap_ns) and only the decoding is timed.
 * Returns elapsed ns. */
uint64_t uf_input_decode_pass(const struct uf_decode_pkt *pk, size_t n, size_t batch, unsigned dist,
                              uint64_t gap_ns, uint64_t *msgs, uint64_t *acc, uint64_t *errors);

/* Prints `c` as the stats JSON object (sorted keys, zero counts omitted) plus newline:
 * {"packets":P,"messages":N,"types":{..},"errors":{..},"gaps":G,"skipped":{..}}, and when
 * IEX-TP segments were read ,"iex_packets":S,"iex_stream_restarts":R,"iex_types":{..}
 * after them (IEX message errors are in "errors" as iex_*). */
void uf_input_print_stats_json(FILE *f, const struct uf_decode_counters *c);

#endif /* UF_DECODE_INPUT_H */
