/* uf-replay: the re-request server (see replay_rerequest.h). */
#include "replay_rerequest.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "feed/mcast.h"

int rp_rerequest_open(struct rp_rerequest *rr, int port)
{
	struct in_addr any = {.s_addr = htonl(INADDR_ANY)};
	char err[256];

	memset(rr, 0, sizeof(*rr));
	rr->fd = uf_mcast_open_unicast(any, (uint16_t)port, 4 << 20, err, sizeof(err));
	if (rr->fd < 0) {
		fprintf(stderr, "uf-replay: re-request server on port %d: %s\n", port, err);
		return -1;
	}
	return 0;
}

static int rerequest_pollfds(void *ctx, struct pollfd *pfd, int max)
{
	struct rp_rerequest *rr = ctx;
	if (max < 1)
		return 0;
	pfd[0] = (struct pollfd){.fd = rr->fd, .events = POLLIN};
	return 1;
}

/* Answers every pending re-request from what was sent (never fault-injected). */
static void rerequest_serve(void *ctx, const struct rp_stream *st)
{
	struct rp_rerequest *rr = ctx;
	uint8_t in[64], out[RP_MAX_PAYLOAD];
	for (;;) {
		struct sockaddr_in from;
		socklen_t fl = sizeof(from);
		ssize_t got =
		    recvfrom(rr->fd, in, sizeof(in), MSG_DONTWAIT, (struct sockaddr *)&from, &fl);
		if (got < 0)
			return;
		struct uf_mold_packet req;
		if (uf_mold_rerequest_parse(&req, in, (size_t)got) < 0 ||
		    memcmp(req.session, st->session, UF_MOLD_SESSION_LEN) != 0 || req.seq == 0) {
			rr->rerequests_bad++;
			continue;
		}
		rr->rerequests++;
		uint64_t first = req.seq, end = req.seq + req.count;
		if (end > st->sent_high)
			end = st->sent_high; /* only what was sent */
		while (first < end) {
			uint64_t k = rp_stream_fit(st, first, end);
			size_t len = rp_stream_build(st, out, sizeof(out), first, k);
			rp_sendto(rr->fd, out, len, &from);
			rr->retransmitted_pkts++;
			rr->retransmitted_msgs += k;
			first += k;
		}
	}
}

struct rp_server rp_rerequest_server(struct rp_rerequest *rr)
{
	return (struct rp_server){
	    .ctx = rr, .pollfds = rerequest_pollfds, .serve = rerequest_serve};
}

void rp_rerequest_close(struct rp_rerequest *rr)
{
	if (rr->fd >= 0)
		close(rr->fd);
	rr->fd = -1;
}
