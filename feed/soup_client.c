/* SoupBinTCP 3.00 client state machine (see soup_client.h). */
#include "feed/soup_client.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/uf_time.h"

#define UF_SOUP_CL_RXBUF (64 * 1024) /* reads this much at once; holds any packet */
#define UF_SOUP_CL_TXBUF 256         /* login, heartbeats, logout: small packets only */
#define MS               1000000ull

struct uf_soup_client {
	struct uf_soup_client_params p;
	struct uf_soup_client_cb cb;
	uint8_t state;        /* enum uf_soup_client_state */
	int fd;               /* -1 when not connected */
	uint64_t deadline_ns; /* CONNECTING/LOGIN_SENT: give up; BACKOFF: reconnect */
	uint64_t last_rx_ns;  /* last packet from the server */
	uint64_t last_tx_ns;  /* last packet we sent */
	uint64_t backoff_ms;  /* next back-off delay */
	uint64_t login_ns;    /* when this connection logged in (0: not logged in) */
	uint64_t want_seq;    /* sequence to request at the next login */
	uint64_t next_seq;    /* sequence of the next sequenced message */
	uint8_t tx[UF_SOUP_CL_TXBUF];
	size_t tx_len, tx_off; /* queued small packets */
	struct uf_soup_client_stats st;
	struct uf_soup_stream rx;
	uint8_t rxbuf[UF_SOUP_CL_RXBUF];
};

void uf_soup_client_params_default(struct uf_soup_client_params *p)
{
	memset(p, 0, sizeof(*p));
	p->server.sin_family = AF_INET;
	p->seq = 1;
	p->connect_timeout_ms = 2000;
	p->login_timeout_ms = 5000;
	p->server_timeout_ms = 15000;
	p->heartbeat_ms = 1000;
	p->backoff_min_ms = 100;
	p->backoff_max_ms = 5000;
	p->max_packet = 4096;
	p->glimpse = 1;
}

static const char *const uf_soup_cl_names[] = {"idle",   "connecting", "login_sent",
                                               "active", "backoff",    "done"};

const char *uf_soup_client_state_name(enum uf_soup_client_state s)
{
	return (unsigned)s < sizeof(uf_soup_cl_names) / sizeof(uf_soup_cl_names[0])
	           ? uf_soup_cl_names[s]
	           : "?";
}

int uf_soup_client_create(const struct uf_soup_client_params *p, const struct uf_soup_client_cb *cb,
                          struct uf_soup_client **out)
{
	uint8_t probe[64];
	if (uf_soup_build_login_request(probe, p->username, p->password, p->session, p->seq) < 0 ||
	    p->max_packet < 64 || p->max_packet > UF_SOUP_MAX_PACKET || p->backoff_min_ms == 0 ||
	    p->backoff_min_ms > p->backoff_max_ms || p->heartbeat_ms == 0 ||
	    p->heartbeat_ms >= p->server_timeout_ms)
		return -EINVAL;
	struct uf_soup_client *c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->p = *p;
	if (cb)
		c->cb = *cb;
	c->fd = -1;
	c->backoff_ms = p->backoff_min_ms;
	c->want_seq = c->next_seq = p->seq;
	uf_soup_stream_init(&c->rx, c->rxbuf, sizeof(c->rxbuf), UF_SOUP_FROM_SERVER, p->max_packet);
	*out = c;
	return 0;
}

static void uf_soup_cl_close(struct uf_soup_client *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	c->tx_len = c->tx_off = 0;
	uf_soup_stream_reset(&c->rx);
}

void uf_soup_client_destroy(struct uf_soup_client *c)
{
	if (!c)
		return;
	uf_soup_cl_close(c);
	free(c);
}

static void uf_soup_cl_event(struct uf_soup_client *c, struct uf_soup_client_event *ev)
{
	if (c->cb.on_event)
		c->cb.on_event(c->cb.ctx, ev);
}

/* The connection is gone: report it (why: err, and the refused or out-of-place packet when
 * one ended it) and wait out the back-off. The back-off doubles up to the cap across logins
 * (an accepted login proves little: a server that accepts and then breaks would get a login
 * storm); only a non-GLIMPSE session that stayed up backoff_max_ms was healthy enough to
 * start again from the minimum. */
static void uf_soup_cl_lost_pk(struct uf_soup_client *c, int err, uint8_t refusal, uint8_t packet,
                               uint64_t now)
{
	int was_connected = c->state == UF_SOUP_CL_LOGIN_SENT || c->state == UF_SOUP_CL_ACTIVE;
	uf_soup_cl_close(c);
	if (was_connected)
		c->st.disconnects++;
	else
		c->st.connect_failures++;
	if (!c->p.glimpse && c->login_ns && now - c->login_ns >= c->p.backoff_max_ms * MS)
		c->backoff_ms = c->p.backoff_min_ms;
	c->login_ns = 0;
	c->state = UF_SOUP_CL_BACKOFF;
	c->deadline_ns = now + c->backoff_ms * MS;
	c->backoff_ms =
	    c->backoff_ms * 2 > c->p.backoff_max_ms ? c->p.backoff_max_ms : c->backoff_ms * 2;
	c->st.last_err = err;
	c->st.last_refusal = refusal;
	c->st.last_packet = packet;
	struct uf_soup_client_event ev = {
	    .kind = UF_SOUP_EV_DISCONNECTED, .err = err, .refusal = refusal, .packet = packet};
	uf_soup_cl_event(c, &ev);
}

static void uf_soup_cl_lost(struct uf_soup_client *c, int err, uint64_t now)
{
	uf_soup_cl_lost_pk(c, err, 0, 0, now);
}

static void uf_soup_cl_done(struct uf_soup_client *c)
{
	uf_soup_cl_close(c);
	c->state = UF_SOUP_CL_DONE;
}

/* Queues a small packet and writes what the socket takes. Returns 0 or -errno. */
static int uf_soup_cl_send(struct uf_soup_client *c, const uint8_t *p, size_t n, uint64_t now)
{
	if (p) {
		if (c->tx_len + n > sizeof(c->tx))
			return -ENOBUFS; /* the server stopped reading heartbeats: it is dead */
		memcpy(c->tx + c->tx_len, p, n);
		c->tx_len += n;
		c->last_tx_ns = now;
	}
	while (c->tx_off < c->tx_len) {
		ssize_t w = send(c->fd, c->tx + c->tx_off, c->tx_len - c->tx_off,
		                 MSG_DONTWAIT | MSG_NOSIGNAL);
		if (w < 0)
			return (errno == EAGAIN || errno == EINTR) ? 0 : -errno;
		c->tx_off += (size_t)w;
	}
	c->tx_len = c->tx_off = 0;
	return 0;
}

static void uf_soup_cl_connect(struct uf_soup_client *c, uint64_t now)
{
	c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	c->state = UF_SOUP_CL_CONNECTING;
	c->deadline_ns = now + c->p.connect_timeout_ms * MS;
	if (c->fd < 0) {
		uf_soup_cl_lost(c, -errno, now);
		return;
	}
	if (connect(c->fd, (const struct sockaddr *)&c->p.server, sizeof(c->p.server)) < 0 &&
	    errno != EINPROGRESS)
		uf_soup_cl_lost(c, -errno, now);
	/* else: completion shows as POLLOUT, checked with SO_ERROR */
}

static void uf_soup_cl_connected(struct uf_soup_client *c, uint64_t now)
{
	uint8_t login[64];
	int n = uf_soup_build_login_request(login, c->p.username, c->p.password, c->p.session,
	                                    c->want_seq);
	c->st.connects++;
	c->state = UF_SOUP_CL_LOGIN_SENT;
	c->deadline_ns = now + c->p.login_timeout_ms * MS;
	c->last_rx_ns = now;
	int rc = uf_soup_cl_send(c, login, (size_t)n, now);
	if (rc < 0)
		uf_soup_cl_lost(c, rc, now);
}

/* One packet from the server. Returns 0, or -1 when the connection was closed meanwhile. */
static int uf_soup_cl_packet(struct uf_soup_client *c, const struct uf_soup_packet *pk,
                             uint64_t now)
{
	struct uf_soup_client_event ev = {0};
	c->last_rx_ns = now;
	if (c->state == UF_SOUP_CL_LOGIN_SENT) {
		switch (pk->type) {
		case 'A':
			c->st.logins++;
			c->state = UF_SOUP_CL_ACTIVE;
			c->login_ns = now ? now : 1;
			c->next_seq = pk->u.accepted.seq;
			ev.kind = UF_SOUP_EV_LOGIN_ACCEPTED;
			ev.seq = pk->u.accepted.seq;
			memcpy(ev.session, pk->u.accepted.session, UF_SOUP_SESSION_LEN);
			uf_soup_cl_event(c, &ev);
			/* the callback may have refused it (uf_soup_client_refuse) */
			return c->state == UF_SOUP_CL_ACTIVE ? 0 : -1;
		case 'J':
			c->st.rejects++;
			ev.kind = UF_SOUP_EV_LOGIN_REJECTED;
			ev.reason = pk->u.rejected.reason;
			if (pk->u.rejected.reason == UF_SOUP_REJECT_NOT_AUTHORIZED) {
				uf_soup_cl_done(c); /* the same credentials will not do better */
				uf_soup_cl_event(c, &ev);
			} else {
				uf_soup_cl_event(c, &ev);
				uf_soup_cl_lost(c, -EAGAIN, now); /* session not there yet: retry */
			}
			return -1;
		case 'H':
			c->st.heartbeats_rx++;
			return 0;
		case '+':
			return 0;
		default: /* S or Z before the login answer: the server is broken */
			c->rx.c.errors[UF_SOUP_ERR_WRONG_DIRECTION]++;
			uf_soup_cl_lost_pk(c, -EPROTO, 1 + UF_SOUP_ERR_WRONG_DIRECTION, pk->type,
			                   now);
			return -1;
		}
	}
	switch (pk->type) {
	case 'S': {
		uint64_t seq = c->next_seq++;
		if (c->p.resume)
			c->want_seq = c->next_seq;
		if (c->p.glimpse) {
			uint64_t rt;
			int g = uf_glimpse_end_of_snapshot(pk->payload, pk->payload_len, &rt);
			if (g < 0) {
				c->st.bad_snapshot_end++;
				uf_soup_cl_lost_pk(c, -EBADMSG, 1 + UF_SOUP_ERR_BAD_SNAPSHOT_END,
				                   'G', now);
				return -1;
			}
			if (g == 1) {
				c->st.snapshots++;
				ev.kind = UF_SOUP_EV_END_OF_SNAPSHOT;
				ev.seq = rt;
				uf_soup_cl_event(c,
				                 &ev); /* may refuse it (uf_soup_client_refuse) */
				if (c->state == UF_SOUP_CL_ACTIVE)
					uf_soup_client_logout(c);
				return -1;
			}
		}
		c->st.messages++;
		if (c->cb.on_message)
			c->cb.on_message(c->cb.ctx, seq, pk->payload, pk->payload_len);
		return c->state == UF_SOUP_CL_ACTIVE ? 0 : -1;
	}
	case 'H':
		c->st.heartbeats_rx++;
		return 0;
	case 'Z':
		ev.kind = UF_SOUP_EV_END_OF_SESSION;
		ev.seq = c->next_seq;
		uf_soup_cl_done(c);
		uf_soup_cl_event(c, &ev);
		return -1;
	case '+':
		return 0;
	default: /* a second Login Accepted/Rejected */
		c->rx.c.errors[UF_SOUP_ERR_WRONG_DIRECTION]++;
		uf_soup_cl_lost_pk(c, -EPROTO, 1 + UF_SOUP_ERR_WRONG_DIRECTION, pk->type, now);
		return -1;
	}
}

static void uf_soup_cl_read(struct uf_soup_client *c, uint64_t now)
{
	for (int rounds = 0; rounds < 64; rounds++) { /* bounded: timers get their turn */
		size_t room;
		uint8_t *w = uf_soup_stream_space(&c->rx, &room);
		ssize_t got = recv(c->fd, w, room, MSG_DONTWAIT);
		if (got == 0) {
			int trunc = uf_soup_stream_end(&c->rx);
			uint8_t t = c->rx.tail - c->rx.head >= 3 ? c->rx.buf[c->rx.head + 2] : 0;
			if (trunc < 0)
				uf_soup_cl_lost_pk(c, -EBADMSG, 1 + UF_SOUP_ERR_TRUNCATED, t, now);
			else
				uf_soup_cl_lost(c, -ECONNRESET, now);
			return;
		}
		if (got < 0) {
			if (errno != EAGAIN && errno != EINTR)
				uf_soup_cl_lost(c, -errno, now);
			return;
		}
		if (c->p.tap)
			c->p.tap(c->p.tap_ctx, w, (size_t)got);
		uf_soup_stream_commit(&c->rx, (size_t)got);
		struct uf_soup_packet pk;
		int rc;
		while ((rc = uf_soup_stream_next(&c->rx, &pk)) == 1)
			if (uf_soup_cl_packet(c, &pk, now) < 0)
				return;
		if (rc < 0) { /* the stream stopped at the refused packet: name its type */
			uint8_t t = c->rx.tail - c->rx.head >= 3 ? c->rx.buf[c->rx.head + 2] : 0;
			uf_soup_cl_lost_pk(c, -EBADMSG, (uint8_t)(1 + c->rx.last_err), t, now);
			return;
		}
	}
}

void uf_soup_client_start(struct uf_soup_client *c, uint64_t now_ns)
{
	if (c->state != UF_SOUP_CL_IDLE)
		return;
	c->state = UF_SOUP_CL_BACKOFF; /* a back-off that is already over */
	c->deadline_ns = now_ns;
}

enum uf_soup_client_state uf_soup_client_poll(struct uf_soup_client *c, uint64_t now)
{
	struct pollfd pfd;
	switch (c->state) {
	case UF_SOUP_CL_BACKOFF:
		if (now >= c->deadline_ns)
			uf_soup_cl_connect(c, now);
		break;
	case UF_SOUP_CL_CONNECTING: {
		pfd = (struct pollfd){.fd = c->fd, .events = POLLOUT};
		if (poll(&pfd, 1, 0) == 1) {
			int err = 0;
			socklen_t el = sizeof(err);
			getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &el);
			if (err)
				uf_soup_cl_lost(c, -err, now);
			else
				uf_soup_cl_connected(c, now);
		} else if (now >= c->deadline_ns) {
			uf_soup_cl_lost(c, -ETIMEDOUT, now);
		}
		break;
	}
	default:
		break;
	}
	if (c->state != UF_SOUP_CL_LOGIN_SENT && c->state != UF_SOUP_CL_ACTIVE)
		return (enum uf_soup_client_state)c->state;

	uf_soup_cl_read(c, now);
	if (c->state == UF_SOUP_CL_LOGIN_SENT && now >= c->deadline_ns) {
		c->st.login_timeouts++;
		uf_soup_cl_lost(c, -ETIMEDOUT, now);
	} else if (c->state == UF_SOUP_CL_ACTIVE &&
	           now - c->last_rx_ns >= c->p.server_timeout_ms * MS) {
		c->st.server_timeouts++;
		uf_soup_cl_lost(c, -ETIMEDOUT, now);
	}
	if (c->state == UF_SOUP_CL_ACTIVE || c->state == UF_SOUP_CL_LOGIN_SENT) {
		int rc = 0;
		if (c->state == UF_SOUP_CL_ACTIVE &&
		    now - c->last_tx_ns >= c->p.heartbeat_ms * MS) {
			uint8_t hb[UF_SOUP_HDR_LEN];
			uf_soup_build(hb, sizeof(hb), 'R', NULL, 0);
			c->st.heartbeats_tx++;
			rc = uf_soup_cl_send(c, hb, sizeof(hb), now);
		} else if (c->tx_off < c->tx_len) {
			rc = uf_soup_cl_send(c, NULL, 0, now);
		}
		if (rc < 0)
			uf_soup_cl_lost(c, rc, now);
	}
	return (enum uf_soup_client_state)c->state;
}

int uf_soup_client_pollfd(const struct uf_soup_client *c, struct pollfd *pfd, uint64_t now)
{
	uint64_t due;
	pfd->fd = c->fd;
	pfd->events = POLLIN;
	pfd->revents = 0;
	switch (c->state) {
	case UF_SOUP_CL_IDLE:
	case UF_SOUP_CL_DONE:
		return -1;
	case UF_SOUP_CL_CONNECTING:
		pfd->events = POLLOUT;
		due = c->deadline_ns;
		break;
	case UF_SOUP_CL_BACKOFF:
		due = c->deadline_ns;
		break;
	case UF_SOUP_CL_LOGIN_SENT:
		due = c->deadline_ns;
		break;
	default: {
		uint64_t hb = c->last_tx_ns + c->p.heartbeat_ms * MS;
		uint64_t dead = c->last_rx_ns + c->p.server_timeout_ms * MS;
		due = hb < dead ? hb : dead;
		break;
	}
	}
	if (c->tx_off < c->tx_len)
		pfd->events |= POLLOUT;
	return due > now ? (int)((due - now + MS - 1) / MS) : 0;
}

void uf_soup_client_refuse(struct uf_soup_client *c, int err, uint8_t packet, uint64_t now)
{
	if (c->state != UF_SOUP_CL_LOGIN_SENT && c->state != UF_SOUP_CL_ACTIVE)
		return;
	c->st.refused++;
	uf_soup_cl_lost_pk(c, err, 0, packet, now);
}

void uf_soup_client_logout(struct uf_soup_client *c)
{
	if (c->state == UF_SOUP_CL_DONE)
		return;
	if (c->fd >= 0 && (c->state == UF_SOUP_CL_ACTIVE || c->state == UF_SOUP_CL_LOGIN_SENT)) {
		uint8_t o[UF_SOUP_HDR_LEN];
		uf_soup_build(o, sizeof(o), 'O', NULL, 0);
		(void)uf_soup_cl_send(c, o, sizeof(o), uf_now_mono_ns());
	}
	uf_soup_cl_done(c);
	struct uf_soup_client_event ev = {.kind = UF_SOUP_EV_LOGGED_OUT, .seq = c->next_seq};
	uf_soup_cl_event(c, &ev);
}

int uf_soup_client_send_unsequenced(struct uf_soup_client *c, const void *msg, size_t len)
{
	uint8_t buf[UF_SOUP_CL_TXBUF];
	if (c->state != UF_SOUP_CL_ACTIVE)
		return -ENOTCONN;
	if (c->tx_off < c->tx_len)
		return -EAGAIN;
	int n = uf_soup_build(buf, sizeof(buf), 'U', msg, len);
	if (n < 0)
		return -EINVAL;
	ssize_t w = send(c->fd, buf, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL);
	if (w < 0)
		return errno == EAGAIN ? -EAGAIN : -errno;
	if (w < n) { /* the rest goes with the next writes, in order */
		memcpy(c->tx, buf + w, (size_t)(n - w));
		c->tx_len = (size_t)(n - w);
		c->tx_off = 0;
	}
	c->last_tx_ns = uf_now_mono_ns();
	return 0;
}

enum uf_soup_client_state uf_soup_client_run(struct uf_soup_client *c, int timeout_ms,
                                             const volatile int *stop)
{
	uint64_t end = uf_now_mono_ns() + (uint64_t)timeout_ms * MS;
	for (;;) {
		uint64_t now = uf_now_mono_ns();
		enum uf_soup_client_state s = uf_soup_client_poll(c, now);
		if (s == UF_SOUP_CL_DONE || s == UF_SOUP_CL_IDLE || (stop && *stop))
			return s;
		now = uf_now_mono_ns();
		if (now >= end)
			return s;
		struct pollfd pfd;
		int wait = uf_soup_client_pollfd(c, &pfd, now);
		int left = (int)((end - now + MS - 1) / MS);
		if (wait < 0 || wait > left)
			wait = left;
		(void)poll(&pfd, pfd.fd >= 0 ? 1 : 0, wait);
	}
}

enum uf_soup_client_state uf_soup_client_state(const struct uf_soup_client *c)
{
	return (enum uf_soup_client_state)c->state;
}

uint64_t uf_soup_client_next_seq(const struct uf_soup_client *c)
{
	return c->next_seq;
}

void uf_soup_client_stats(const struct uf_soup_client *c, struct uf_soup_client_stats *out)
{
	*out = c->st;
	out->soup = c->rx.c;
}
