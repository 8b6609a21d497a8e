/* uf-replay: the MoldUDP64 re-request server (--serve-rerequests PORT). It answers every
 * re-request of the stream's session from what was sent so far, never through the fault
 * injection: a feed that lost a packet on both lines gets it back intact. */
#ifndef UF_REPLAY_REREQUEST_H
#define UF_REPLAY_REREQUEST_H

#include <stdint.h>

#include "replay_server.h"

struct rp_rerequest {
	int fd;                      /* UDP socket on the port, -1 when not serving */
	uint64_t rerequests;         /* answered */
	uint64_t rerequests_bad;     /* unparsable, other session or sequence 0 */
	uint64_t retransmitted_msgs; /* messages sent back */
	uint64_t retransmitted_pkts; /* packets sent back */
};

/* Opens the server on UDP `port` on every address. Returns 0, or -1 with the reason on stderr. */
int rp_rerequest_open(struct rp_rerequest *rr, int port);

/* The hooks the sender calls (see replay_server.h). */
struct rp_server rp_rerequest_server(struct rp_rerequest *rr);

/* Closes the socket (if open). */
void rp_rerequest_close(struct rp_rerequest *rr);

#endif /* UF_REPLAY_REREQUEST_H */
