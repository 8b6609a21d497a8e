/* uf-replay: the stream it sends, messages 1..N of the input in file order, and how they
 * pack into MoldUDP64 packets. The sender and every server build packets from it the same
 * way, so a retransmission holds exactly what the original packet held. */
#ifndef UF_REPLAY_STREAM_H
#define UF_REPLAY_STREAM_H

#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>

#include "decode/uf_decode.h"

#define RP_MAX_PAYLOAD 65507 /* the largest UDP payload */

struct rp_msg {
	const uint8_t *p; /* message bytes in the input mapping */
	uint16_t len;     /* message length */
};

struct rp_stream {
	struct rp_msg *msgs;               /* msgs[seq - 1] */
	uint64_t n;                        /* messages */
	char session[UF_MOLD_SESSION_LEN]; /* MoldUDP64 session, space-padded */
	size_t mtu;                        /* payload bytes per packet */
	int pack_ts;        /* --pack timestamp: a packet holds one exchange microsecond at most (an
	                     * exchange sends what its matching engine did in one go), 0: fill to mtu */
	uint64_t sent_high; /* sequence after the last message sent (serve up to it) */
	struct uf_reader rd; /* the input (msgs point into its mapping) */
};

/* Opens `path` (daily ITCH or pcap of MoldUDP64) and indexes its messages. Prints why not on
 * stderr and returns -errno (-ENODATA: no messages). */
int rp_stream_load(struct rp_stream *st, const char *path);

/* Frees the index and closes the input. */
void rp_stream_close(struct rp_stream *st);

/* How many messages from `first` (below `limit`) fit in one packet of st->mtu bytes; with
 * st->pack_ts only those whose ITCH timestamp falls in the first one's microsecond. */
uint64_t rp_stream_fit(const struct rp_stream *st, uint64_t first, uint64_t limit);

/* Builds the data packet of messages [first, first + count) into buf; returns its length. */
size_t rp_stream_build(const struct rp_stream *st, uint8_t *buf, size_t cap, uint64_t first,
                       uint64_t count);

/* The ITCH timestamp (ns since midnight) of message `m`, 0 when it has none. */
uint64_t rp_msg_ts(const struct rp_msg *m);

/* sendto() that waits out a full socket buffer (ENOBUFS/EAGAIN, 1000 tries 20 us apart);
 * any other failure is printed on stderr and the datagram is lost. */
void rp_sendto(int fd, const uint8_t *buf, size_t len, const struct sockaddr_in *dst);

#endif /* UF_REPLAY_STREAM_H */
