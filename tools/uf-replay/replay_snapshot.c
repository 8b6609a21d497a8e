/* uf-replay: the snapshot server beside the sender (see replay_snapshot.h). */
#include "replay_snapshot.h"

#include <string.h>

/* Message `seq` for the server's thread: msgs[] is fixed once loaded, so no lock. */
static const uint8_t *rp_snapshot_msg(void *ctx, uint64_t seq, size_t *len)
{
	const struct rp_stream *st = ctx;
	*len = st->msgs[seq - 1].len;
	return st->msgs[seq - 1].p;
}

static int rp_snapshot_pollfds(void *ctx, struct pollfd *pfd, int max)
{
	(void)ctx;
	(void)pfd;
	(void)max;
	return 0; /* it waits on its own sockets in its own thread */
}

static void rp_snapshot_serve(void *ctx, const struct rp_stream *st)
{
	struct rp_snapshot *s = ctx;
	rp_snap_server_sent(s->srv, st->sent_high);
}

int rp_snapshot_open(struct rp_snapshot *s, const struct rp_opts *o, const struct rp_stream *st)
{
	struct rp_snap_server_cfg cfg = o->snap;
	memset(s, 0, sizeof(*s));
	s->st = st;
	memcpy(cfg.session, st->session, UF_MOLD_SESSION_LEN);
	cfg.session[UF_MOLD_SESSION_LEN] = '\0';
	for (int i = UF_MOLD_SESSION_LEN - 1; i >= 0 && cfg.session[i] == ' '; i--)
		cfg.session[i] = '\0'; /* the name as given: the server pads it itself */
	return rp_snap_server_start(&cfg, rp_snapshot_msg, (void *)st, &s->srv, &s->port);
}

struct rp_server rp_snapshot_server(struct rp_snapshot *s)
{
	struct rp_server srv = {
	    .ctx = s, .pollfds = rp_snapshot_pollfds, .serve = rp_snapshot_serve};
	return srv;
}

void rp_snapshot_close(struct rp_snapshot *s)
{
	if (s->srv)
		rp_snap_server_stop(s->srv);
	s->srv = NULL;
}
