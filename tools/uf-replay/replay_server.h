/* uf-replay: what a server beside the sender looks like to it. The sender never blocks
 * except in its waits (pacing, heartbeats, --linger); each wait polls every server's fds and
 * calls every server's serve hook, before and after. So a new server (say a GLIMPSE snapshot
 * server over SoupBinTCP) is one more replay_<name>.c that fills a struct rp_server, one more
 * option, and one rp_sender_add_server() call in main. */
#ifndef UF_REPLAY_SERVER_H
#define UF_REPLAY_SERVER_H

#include <poll.h>

#include "replay_stream.h"

struct rp_server {
	void *ctx; /* the server's own state */
	/* Puts the fds the sender must wake up for into pfd[0..max) (POLLIN, ...); returns how
	 * many. Called before every wait. */
	int (*pollfds)(void *ctx, struct pollfd *pfd, int max);
	/* Answers everything pending without blocking; `st` says what was sent so far
	 * (messages below st->sent_high). */
	void (*serve)(void *ctx, const struct rp_stream *st);
	/* Optional (NULL: none): the monotonic time at which serve has work without any fd
	 * becoming ready (a delayed answer), 0 when none; the wait wakes up then. */
	uint64_t (*next_due)(void *ctx);
};

#endif /* UF_REPLAY_SERVER_H */
