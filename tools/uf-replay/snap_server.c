/* SoupBinTCP / GLIMPSE snapshot server of uf-replay (see snap_server.h). */
#include "snap_server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/uf_atomic.h"
#include "common/uf_parse.h"
#include "common/uf_time.h"
#include "decode/uf_soup.h"
#include "snap_state.h"

#define RP_SNAP_MAX_CLIENTS 16
#define RP_SNAP_RX_MAX      1024 /* longest client packet accepted (login is 49 bytes) */
#define RP_SNAP_POLL_MS     20   /* wake-up period: catch up with the sender, heartbeats */

enum rp_snap_phase {
	RP_SNAP_AWAIT_LOGIN = 0, /* connected, no login yet */
	RP_SNAP_LOGGED_IN,       /* snapshot being written, then heartbeats */
	RP_SNAP_CLOSING,         /* write what is queued (a rejection), then close */
};

struct rp_snap_client {
	int fd;                           /* -1 = free slot */
	uint8_t phase;                    /* enum rp_snap_phase */
	uint8_t eos_queued;               /* End of Snapshot is in out[] (counted when written) */
	uint64_t last_rx_ns;              /* last packet from the client */
	uint64_t last_tx_ns;              /* last byte written */
	uint8_t *out;                     /* bytes queued for the client */
	size_t out_len, out_off, out_cap; /* queued, written so far, capacity */
	uint64_t snap_msgs;               /* sequenced messages in out[] not yet counted */
	struct uf_soup_stream rx;         /* client packets */
	uint8_t rxbuf[RP_SNAP_RX_MAX];
};

struct rp_snap_server {
	struct rp_snap_server_cfg cfg;
	int lfd; /* listening socket */
	pthread_t thread;
	uint32_t stop;         /* set by rp_snap_server_stop */
	uint64_t sent_next;    /* release-stored by the sender: next sequence to send */
	uint64_t applied_next; /* thread: next sequence to apply to `state` */
	rp_snap_msg_fn get;
	void *ctx;
	struct rp_snap_state *state;
	struct rp_snap_server_stats st; /* written by the thread (relaxed), read by anyone */
	struct rp_snap_client cl[RP_SNAP_MAX_CLIENTS];
};

#define RP_SNAP_INC(s, f, n) uf_store_relaxed_u64(&(s)->st.f, (s)->st.f + (n))

int rp_snap_server_parse(const char *arg, struct rp_snap_server_cfg *cfg)
{
	char buf[64];
	memset(cfg, 0, sizeof(*cfg));
	strcpy(cfg->username, RP_SNAP_DEFAULT_USER);
	strcpy(cfg->password, RP_SNAP_DEFAULT_PASSWORD);
	strcpy(cfg->session, "REPLAY0001");
	cfg->heartbeat_ms = 1000;
	cfg->idle_timeout_ms = 15000;
	if (strlen(arg) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, arg);
	char *user = strchr(buf, ','), *pass = NULL;
	if (user) {
		*user++ = '\0';
		pass = strchr(user, ',');
		if (!pass)
			return -EINVAL;
		*pass++ = '\0';
		uint8_t tmp[10];
		if (uf_soup_put_alpha(tmp, UF_SOUP_USERNAME_LEN, user) < 0 || !*user ||
		    uf_soup_put_alpha(tmp, UF_SOUP_PASSWORD_LEN, pass) < 0)
			return -EINVAL;
		strcpy(cfg->username, user);
		strcpy(cfg->password, pass);
	}
	uint64_t v;
	if (uf_parse_u64(buf, 0, 65535, &v) < 0)
		return -EINVAL;
	cfg->port = (uint16_t)v;
	return 0;
}

/* ---- clients ---- */

static void rp_snap_close(struct rp_snap_client *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	free(c->out);
	c->out = NULL;
	c->out_len = c->out_off = c->out_cap = 0;
}

static int rp_snap_queue(struct rp_snap_client *c, const uint8_t *p, size_t n)
{
	if (c->out_len + n > c->out_cap) {
		size_t cap = c->out_cap ? c->out_cap : 4096;
		while (cap < c->out_len + n)
			cap *= 2;
		uint8_t *o = realloc(c->out, cap);
		if (!o)
			return -ENOMEM;
		c->out = o;
		c->out_cap = cap;
	}
	memcpy(c->out + c->out_len, p, n);
	c->out_len += n;
	return 0;
}

/* Applies what the sender has sent since the last call. */
static void rp_snap_catch_up(struct rp_snap_server *s)
{
	uint64_t to = uf_load_acquire_u64(&s->sent_next); /* pairs with rp_snap_server_sent */
	for (; s->applied_next < to; s->applied_next++) {
		size_t len;
		const uint8_t *m = s->get(s->ctx, s->applied_next, &len);
		(void)rp_snap_state_apply(s->state, m, len); /* undecodable ones are counted */
	}
}

struct rp_snap_emit_ctx {
	struct rp_snap_client *c;
	uint64_t seq;   /* SoupBinTCP sequence of the next message */
	uint64_t first; /* first sequence the client asked for */
};

static int rp_snap_emit(void *ctx, const uint8_t *msg, size_t len)
{
	struct rp_snap_emit_ctx *e = ctx;
	uint8_t hdr[UF_SOUP_HDR_LEN];
	if (e->seq++ < e->first)
		return 0;
	uf_soup_build_header(hdr, 'S', len);
	if (rp_snap_queue(e->c, hdr, sizeof(hdr)) < 0 || rp_snap_queue(e->c, msg, len) < 0)
		return -ENOMEM;
	e->c->snap_msgs++;
	return 1;
}

static int rp_snap_field_is(const char *field, size_t len, const char *want)
{
	uint8_t padded[UF_SOUP_SESSION_LEN];
	return uf_soup_put_alpha(padded, len, want) == 0 && memcmp(field, padded, len) == 0;
}

/* A login request: accept and queue the snapshot, or queue the rejection. */
static int rp_snap_login(struct rp_snap_server *s, struct rp_snap_client *c,
                         const struct uf_soup_packet *pk)
{
	uint8_t buf[64];
	int blank = rp_snap_field_is(pk->u.login.session, UF_SOUP_SESSION_LEN, "");
	uint8_t reason = 0;
	if (!rp_snap_field_is(pk->u.login.username, UF_SOUP_USERNAME_LEN, s->cfg.username) ||
	    !rp_snap_field_is(pk->u.login.password, UF_SOUP_PASSWORD_LEN, s->cfg.password))
		reason = UF_SOUP_REJECT_NOT_AUTHORIZED;
	else if (!blank &&
	         !rp_snap_field_is(pk->u.login.session, UF_SOUP_SESSION_LEN, s->cfg.session))
		reason = UF_SOUP_REJECT_NO_SESSION;
	if (reason) {
		int n = uf_soup_build_login_rejected(buf, reason);
		RP_SNAP_INC(s, rejected, 1);
		c->phase = RP_SNAP_CLOSING;
		return rp_snap_queue(c, buf, (size_t)n);
	}
	/* The state as of this moment: everything sent so far. */
	rp_snap_catch_up(s);
	uint64_t first = pk->u.login.seq ? pk->u.login.seq : UINT64_MAX;
	int n = uf_soup_build_login_accepted(buf, s->cfg.session, first == UINT64_MAX ? 1 : first);
	if (n < 0 || rp_snap_queue(c, buf, (size_t)n) < 0)
		return -ENOMEM;
	struct rp_snap_emit_ctx e = {c, 1, first};
	if (rp_snap_state_emit(s->state, rp_snap_emit, &e) < 0)
		return -ENOMEM;
	uint8_t eos[UF_GLIMPSE_END_OF_SNAPSHOT_LEN];
	uf_glimpse_build_end_of_snapshot(eos, s->applied_next);
	int eos_queued = rp_snap_emit(&e, eos, sizeof(eos));
	if (eos_queued < 0)
		return -ENOMEM;
	/* Login Accepted carries the first sequence that will follow; with seq 0 ("only new
	 * messages") nothing follows, so it is the one after the End of Snapshot. */
	if (first == UINT64_MAX)
		uf_soup_put_number(c->out + UF_SOUP_HDR_LEN + UF_SOUP_SESSION_LEN, UF_SOUP_SEQ_LEN,
		                   e.seq);
	c->eos_queued = (uint8_t)eos_queued; /* 0 when the client asked to start past it */
	c->phase = RP_SNAP_LOGGED_IN;
	RP_SNAP_INC(s, logins, 1);
	return 0;
}

/* Reads and handles what the client sent. Returns 0, or -1 when the client must go. */
static int rp_snap_read(struct rp_snap_server *s, struct rp_snap_client *c, uint64_t now)
{
	for (int rounds = 0; rounds < 64; rounds++) { /* bounded: one client cannot hog it */
		size_t room;
		uint8_t *w = uf_soup_stream_space(&c->rx, &room);
		ssize_t got = recv(c->fd, w, room, MSG_DONTWAIT);
		if (got == 0)
			return -1; /* closed (a truncated packet is the client's loss) */
		if (got < 0)
			return (errno == EAGAIN || errno == EINTR) ? 0 : -1;
		uf_soup_stream_commit(&c->rx, (size_t)got);
		struct uf_soup_packet pk;
		int rc;
		while ((rc = uf_soup_stream_next(&c->rx, &pk)) == 1) {
			c->last_rx_ns = now;
			if (c->phase == RP_SNAP_CLOSING)
				continue;
			if (pk.type == 'O')
				return -1; /* logout: the session ends here */
			if (pk.type == 'L') {
				if (c->phase != RP_SNAP_AWAIT_LOGIN) {
					RP_SNAP_INC(s, bad_packets, 1);
					return -1;
				}
				if (rp_snap_login(s, c, &pk) < 0)
					return -1;
			} else if (c->phase == RP_SNAP_AWAIT_LOGIN && pk.type != '+') {
				RP_SNAP_INC(s, bad_packets, 1); /* anything but login first */
				return -1;
			}
			/* R (heartbeat), U (nothing to do with it), +: only keep alive. */
		}
		if (rc < 0) {
			RP_SNAP_INC(s, bad_packets, 1);
			return -1;
		}
	}
	return 0;
}

/* Writes what the socket takes. Returns 0, or -1 when the client must go. */
static int rp_snap_write(struct rp_snap_server *s, struct rp_snap_client *c, uint64_t now)
{
	while (c->out_off < c->out_len) {
		ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off,
		                 MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n < 0)
			return (errno == EAGAIN || errno == EINTR) ? 0 : -1;
		c->out_off += (size_t)n;
		c->last_tx_ns = now;
	}
	c->out_off = c->out_len = 0;
	if (c->eos_queued) {
		c->eos_queued = 0;
		RP_SNAP_INC(s, snapshots, 1);
	}
	if (c->snap_msgs) {
		RP_SNAP_INC(s, snapshot_messages, c->snap_msgs);
		c->snap_msgs = 0;
	}
	return c->phase == RP_SNAP_CLOSING ? -1 : 0;
}

static void rp_snap_accept(struct rp_snap_server *s, uint64_t now)
{
	for (;;) {
		int fd = accept4(s->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			return;
		struct rp_snap_client *c = NULL;
		for (int i = 0; i < RP_SNAP_MAX_CLIENTS && !c; i++)
			if (s->cl[i].fd < 0)
				c = &s->cl[i];
		if (!c) {
			close(fd); /* full: the client sees the close and retries later */
			continue;
		}
		RP_SNAP_INC(s, connections, 1);
		c->fd = fd;
		c->phase = RP_SNAP_AWAIT_LOGIN;
		c->eos_queued = 0;
		c->snap_msgs = 0;
		c->last_rx_ns = c->last_tx_ns = now;
		uf_soup_stream_init(&c->rx, c->rxbuf, sizeof(c->rxbuf), UF_SOUP_FROM_CLIENT,
		                    sizeof(c->rxbuf));
	}
}

static void *rp_snap_thread(void *arg)
{
	struct rp_snap_server *s = arg;
	struct pollfd pfd[1 + RP_SNAP_MAX_CLIENTS];
	uint64_t hb_ns = (uint64_t)s->cfg.heartbeat_ms * 1000000u;
	uint64_t idle_ns = (uint64_t)s->cfg.idle_timeout_ms * 1000000u;

	while (!uf_load_acquire_u32(&s->stop)) {
		rp_snap_catch_up(s);
		pfd[0] = (struct pollfd){.fd = s->lfd, .events = POLLIN};
		for (int i = 0; i < RP_SNAP_MAX_CLIENTS; i++) {
			struct rp_snap_client *c = &s->cl[i];
			pfd[1 + i] = (struct pollfd){
			    .fd = c->fd,
			    .events = (short)(POLLIN | (c->out_len > c->out_off ? POLLOUT : 0))};
		}
		(void)poll(pfd, 1 + RP_SNAP_MAX_CLIENTS, RP_SNAP_POLL_MS);
		uint64_t now = uf_now_mono_ns();
		if (pfd[0].revents & POLLIN)
			rp_snap_accept(s, now);
		for (int i = 0; i < RP_SNAP_MAX_CLIENTS; i++) {
			struct rp_snap_client *c = &s->cl[i];
			if (c->fd < 0 || pfd[1 + i].fd != c->fd)
				continue; /* free, or accepted during this round */
			int drop = 0;
			if (pfd[1 + i].revents & (POLLIN | POLLHUP | POLLERR))
				drop = rp_snap_read(s, c, now) < 0;
			if (!drop && c->phase == RP_SNAP_LOGGED_IN && c->out_len == 0 &&
			    now - c->last_tx_ns >= hb_ns) {
				uint8_t hb[UF_SOUP_HDR_LEN];
				uf_soup_build(hb, sizeof(hb), 'H', NULL, 0);
				drop = rp_snap_queue(c, hb, sizeof(hb)) < 0;
				RP_SNAP_INC(s, heartbeats, 1);
			}
			if (!drop)
				drop = rp_snap_write(s, c, now) < 0;
			if (!drop && now - c->last_rx_ns > idle_ns) {
				RP_SNAP_INC(s, timeouts, 1);
				drop = 1;
			}
			if (drop)
				rp_snap_close(c);
		}
	}
	return NULL;
}

int rp_snap_server_start(const struct rp_snap_server_cfg *cfg, rp_snap_msg_fn get, void *ctx,
                         struct rp_snap_server **out, uint16_t *bound_port)
{
	uint8_t field[UF_SOUP_SESSION_LEN];
	if (uf_soup_put_alpha(field, UF_SOUP_SESSION_LEN, cfg->session) < 0) {
		fprintf(stderr,
		        "uf-replay: snapshot server: session '%s' is not a SoupBinTCP "
		        "session name (<= 10 printable characters, no inner spaces)\n",
		        cfg->session);
		return -EINVAL;
	}
	struct rp_snap_server *s = calloc(1, sizeof(*s));
	int rc = -ENOMEM, one = 1;
	if (!s)
		goto fail;
	s->cfg = *cfg;
	s->get = get;
	s->ctx = ctx;
	s->applied_next = s->sent_next = 1;
	for (int i = 0; i < RP_SNAP_MAX_CLIENTS; i++)
		s->cl[i].fd = -1;
	if (rp_snap_state_create(&s->state) < 0)
		goto out_free;
	s->lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (s->lfd < 0) {
		rc = -errno;
		goto out_state;
	}
	/* A restarted server takes its port back at once (TIME_WAIT of the old connections). */
	(void)setsockopt(s->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	struct sockaddr_in a = {.sin_family = AF_INET,
	                        .sin_port = htons(cfg->port),
	                        .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof(a);
	if (bind(s->lfd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(s->lfd, 16) < 0 ||
	    getsockname(s->lfd, (struct sockaddr *)&a, &al) < 0) {
		rc = -errno;
		fprintf(stderr, "uf-replay: snapshot server on 127.0.0.1:%u: %s\n", cfg->port,
		        strerror(errno));
		goto out_sock;
	}
	rc = -pthread_create(&s->thread, NULL, rp_snap_thread, s);
	if (rc < 0)
		goto out_sock;
	*bound_port = ntohs(a.sin_port);
	fprintf(stderr, "uf-replay: snapshot server listening on 127.0.0.1:%u\n", *bound_port);
	fflush(stderr);
	*out = s;
	return 0;
out_sock:
	close(s->lfd);
out_state:
	rp_snap_state_destroy(s->state);
out_free:
	free(s);
fail:
	return rc;
}

void rp_snap_server_sent(struct rp_snap_server *s, uint64_t next_seq)
{
	/* Release pairs with the thread's acquire in rp_snap_catch_up; the message bytes
	 * themselves were loaded before the thread started and never change. */
	uf_store_release_u64(&s->sent_next, next_seq);
}

void rp_snap_server_stats(struct rp_snap_server *s, struct rp_snap_server_stats *out)
{
	const uint64_t *src = (const uint64_t *)&s->st;
	uint64_t *dst = (uint64_t *)out;
	for (size_t i = 0; i < sizeof(*out) / sizeof(uint64_t); i++)
		dst[i] = uf_load_relaxed_u64(&src[i]);
}

void rp_snap_server_stop(struct rp_snap_server *s)
{
	if (!s)
		return;
	uf_store_release_u32(&s->stop, 1); /* the thread sees it within one poll period */
	pthread_join(s->thread, NULL);
	fprintf(stderr,
	        "uf-replay: snapshot server: %llu connections, %llu logins, %llu rejected, %llu "
	        "snapshots (%llu messages), %llu dropped for bad packets, %llu for silence\n",
	        (unsigned long long)s->st.connections, (unsigned long long)s->st.logins,
	        (unsigned long long)s->st.rejected, (unsigned long long)s->st.snapshots,
	        (unsigned long long)s->st.snapshot_messages, (unsigned long long)s->st.bad_packets,
	        (unsigned long long)s->st.timeouts);
	for (int i = 0; i < RP_SNAP_MAX_CLIENTS; i++)
		rp_snap_close(&s->cl[i]);
	close(s->lfd);
	rp_snap_state_destroy(s->state);
	free(s);
}
