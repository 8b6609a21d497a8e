/* uf-replay: the GLIMPSE snapshot server (snap_server.c, its own thread) as one more server
 * beside the sender (replay_server.h): each serve tells it how far the day has been sent, so
 * a login is answered with the state of every message below that point. */
#ifndef UF_REPLAY_SNAPSHOT_H
#define UF_REPLAY_SNAPSHOT_H

#include "replay_opts.h"
#include "replay_server.h"
#include "replay_stream.h"
#include "snap_server.h"

struct rp_snapshot {
	struct rp_snap_server *srv; /* NULL: not serving */
	const struct rp_stream *st; /* the messages it snapshots (never change once loaded) */
	uint16_t port;              /* the TCP port it listens on */
};

/* Starts the server of `o->snap` over the messages of `st` (session st->session). Returns 0
 * or -errno (the reason printed on stderr). */
int rp_snapshot_open(struct rp_snapshot *s, const struct rp_opts *o, const struct rp_stream *st);

/* The sender's view of it: no fds (it has its own thread), a serve hook that moves the
 * snapshot point to st->sent_high. */
struct rp_server rp_snapshot_server(struct rp_snapshot *s);

/* Stops the server's thread and frees it; safe on a server never opened. */
void rp_snapshot_close(struct rp_snapshot *s);

#endif /* UF_REPLAY_SNAPSHOT_H */
