/* uf-replay: the MoldUDP64 re-request server (--serve-rerequests PORT). It answers every
 * re-request of the stream's session from what was sent so far, never through the fault
 * injection: a feed that lost a packet on both lines gets it back intact.
 * --rerequest-delay-ms D: each answer goes D ms after its request arrived (a slow server,
 * for measuring what recovery does to the stream's lag); requests wait in a bounded FIFO
 * (RP_RR_PENDING; beyond it they are dropped and counted, as a loaded server would). */
#ifndef UF_REPLAY_REREQUEST_H
#define UF_REPLAY_REREQUEST_H

#include <netinet/in.h>
#include <stdint.h>

#include "replay_server.h"

#define RP_RR_PENDING 4096 /* delayed requests waiting for their answer, at most */

struct rp_rr_req {
	uint64_t due_ns;         /* when to answer (monotonic) */
	uint64_t first, end;     /* asked range */
	struct sockaddr_in from; /* who asked */
};

struct rp_rerequest {
	int fd;                      /* UDP socket on the port, -1 when not serving */
	uint64_t rerequests;         /* answered */
	uint64_t rerequests_bad;     /* unparsable, other session or sequence 0 */
	uint64_t retransmitted_msgs; /* messages sent back */
	uint64_t retransmitted_pkts; /* packets sent back */
	uint64_t delay_ns;           /* --rerequest-delay-ms */
	uint64_t delayed_dropped;    /* requests dropped: the delay FIFO was full */
	struct rp_rr_req *pending;   /* delay FIFO (RP_RR_PENDING entries), NULL without delay */
	uint32_t head, n;            /* its oldest entry and count */
};

/* Opens the server on UDP `port` on every address, answering `delay_ms` after each request.
 * Returns 0, or -1 with the reason on stderr. */
int rp_rerequest_open(struct rp_rerequest *rr, int port, uint32_t delay_ms);

/* The hooks the sender calls (see replay_server.h). */
struct rp_server rp_rerequest_server(struct rp_rerequest *rr);

/* Closes the socket (if open). */
void rp_rerequest_close(struct rp_rerequest *rr);

#endif /* UF_REPLAY_REREQUEST_H */
