/* uf-replay: the re-request server (see replay_rerequest.h). */
#include "replay_rerequest.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/uf_time.h"
#include "feed/mcast.h"

int rp_rerequest_open(struct rp_rerequest *rr, int port, uint32_t delay_ms)
{
	struct in_addr any = {.s_addr = htonl(INADDR_ANY)};
	char err[256];

	memset(rr, 0, sizeof(*rr));
	rr->delay_ns = (uint64_t)delay_ms * 1000000u;
	if (delay_ms && !(rr->pending = calloc(RP_RR_PENDING, sizeof(*rr->pending)))) {
		fprintf(stderr, "uf-replay: re-request server: out of memory\n");
		return -1;
	}
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

/* Sends messages [first, end) (as far as they were sent) to `to`. */
static void rerequest_answer(struct rp_rerequest *rr, const struct rp_stream *st, uint64_t first,
                             uint64_t end, const struct sockaddr_in *to)
{
	uint8_t out[RP_MAX_PAYLOAD];
	if (end > st->sent_high)
		end = st->sent_high; /* only what was sent */
	while (first < end) {
		uint64_t k = rp_stream_fit(st, first, end);
		size_t len = rp_stream_build(st, out, sizeof(out), first, k);
		rp_sendto(rr->fd, out, len, to);
		rr->retransmitted_pkts++;
		rr->retransmitted_msgs += k;
		first += k;
	}
}

/* The delayed answers that are due (FIFO: every request waits the same delay). */
static void rerequest_answer_due(struct rp_rerequest *rr, const struct rp_stream *st)
{
	uint64_t now = uf_now_mono_ns();
	while (rr->n && rr->pending[rr->head].due_ns <= now) {
		struct rp_rr_req *q = &rr->pending[rr->head];
		rerequest_answer(rr, st, q->first, q->end, &q->from);
		rr->head = (rr->head + 1) % RP_RR_PENDING;
		rr->n--;
	}
}

static uint64_t rerequest_next_due(void *ctx)
{
	struct rp_rerequest *rr = ctx;
	return rr->n ? rr->pending[rr->head].due_ns : 0;
}

/* Answers every pending re-request from what was sent (never fault-injected), at once or
 * after --rerequest-delay-ms. */
static void rerequest_serve(void *ctx, const struct rp_stream *st)
{
	struct rp_rerequest *rr = ctx;
	uint8_t in[64];
	if (rr->pending)
		rerequest_answer_due(rr, st);
	for (;;) {
		struct sockaddr_in from;
		socklen_t fl = sizeof(from);
		ssize_t got =
		    recvfrom(rr->fd, in, sizeof(in), MSG_DONTWAIT, (struct sockaddr *)&from, &fl);
		if (got < 0)
			return;
		struct uf_frame req;
		if (uf_mold_rerequest_parse(&req, in, (size_t)got) < 0 ||
		    memcmp(req.session, st->session, UF_MOLD_SESSION_LEN) != 0 || req.seq == 0) {
			rr->rerequests_bad++;
			continue;
		}
		rr->rerequests++;
		if (!rr->pending) {
			rerequest_answer(rr, st, req.seq, req.seq + req.count, &from);
			continue;
		}
		if (rr->n == RP_RR_PENDING) {
			rr->delayed_dropped++;
			continue;
		}
		struct rp_rr_req *q = &rr->pending[(rr->head + rr->n++) % RP_RR_PENDING];
		q->due_ns = uf_now_mono_ns() + rr->delay_ns;
		q->first = req.seq;
		q->end = req.seq + req.count;
		q->from = from;
	}
}

struct rp_server rp_rerequest_server(struct rp_rerequest *rr)
{
	return (struct rp_server){.ctx = rr,
	                          .pollfds = rerequest_pollfds,
	                          .serve = rerequest_serve,
	                          .next_due = rerequest_next_due};
}

void rp_rerequest_close(struct rp_rerequest *rr)
{
	if (rr->fd >= 0)
		close(rr->fd);
	rr->fd = -1;
	free(rr->pending);
	rr->pending = NULL;
}
