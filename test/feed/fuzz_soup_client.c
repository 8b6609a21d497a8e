/* libFuzzer target: the SoupBinTCP client (feed/soup_client.c) against a hostile server. The
 * first input byte picks the mode (GLIMPSE or plain, resume), the packet limit and how the
 * rest is cut into writes; the rest is what the "server" writes on a real loopback TCP
 * connection, then it closes its side. The client must:
 *   - deliver exactly the sequenced messages a one-shot walk of the stream says it should
 *     (uf_soup_parse as the server's packets, the client's rules: before the login answer
 *     only 'A', 'J', 'H', '+'; after it 'S' messages until 'Z', a refusal, an out-of-place
 *     packet or, in GLIMPSE mode, an End of Snapshot), in order, with contiguous sequence
 *     numbers from the Login Accepted's, and report the End of Snapshot's number;
 *   - count them (stats.messages, logins) as it reported them;
 *   - send only well-formed client packets (login, heartbeats, logout);
 *   - call nothing back after DONE, never crash, leak or overrun (ASan + UBSan).
 * Built only with clang and -DUF_FUZZ=ON; the seeds in fuzz-seeds-soup run as a regression
 * test (feed_fuzz_soup_client_corpus). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/uf_time.h"
#include "decode/uf_soup.h"
#include "feed/soup_client.h"

#define FZ_MAX_MSGS 8192

/* What the callbacks saw. */
struct fz_seen {
	uint64_t msgs;     /* on_message calls */
	uint64_t next_seq; /* sequence the next message must carry */
	int logged_in;     /* a LOGIN_ACCEPTED came, connection not lost since */
	int logins;        /* LOGIN_ACCEPTED events */
	int done;          /* a final event came (DONE after it) */
	int ended;         /* END_OF_SNAPSHOT */
	uint64_t end_seq;  /* its number */
	int lost;          /* DISCONNECTED events */
	struct uf_soup_client *c;
	const uint8_t *want[FZ_MAX_MSGS]; /* the model's messages */
	uint16_t want_len[FZ_MAX_MSGS];
	uint64_t nwant;
};

static void fz_on_message(void *ctx, uint64_t seq, const uint8_t *msg, size_t len)
{
	struct fz_seen *s = ctx;
	if (!s->logged_in || s->done || seq != s->next_seq)
		abort(); /* a message outside a login, after the end, or out of sequence */
	if (s->msgs >= s->nwant || len != s->want_len[s->msgs] ||
	    memcmp(msg, s->want[s->msgs], len) != 0)
		abort(); /* not the message the stream carries at this place */
	s->msgs++;
	s->next_seq++;
}

static void fz_on_event(void *ctx, const struct uf_soup_client_event *ev)
{
	struct fz_seen *s = ctx;
	if (s->done)
		abort(); /* nothing after DONE */
	switch (ev->kind) {
	case UF_SOUP_EV_LOGIN_ACCEPTED:
		if (s->logged_in)
			abort();
		s->logged_in = 1;
		s->logins++;
		s->next_seq = ev->seq;
		break;
	case UF_SOUP_EV_END_OF_SNAPSHOT:
		if (!s->logged_in)
			abort();
		s->ended = 1;
		s->end_seq = ev->seq;
		break;
	case UF_SOUP_EV_DISCONNECTED:
		if (ev->err >= 0)
			abort();
		s->logged_in = 0;
		s->lost++;
		break;
	case UF_SOUP_EV_LOGIN_REJECTED:
		break;
	case UF_SOUP_EV_END_OF_SESSION:
	case UF_SOUP_EV_LOGGED_OUT:
		s->done = 1;
		s->logged_in = 0;
		break;
	default:
		abort();
	}
}

/* The one-shot model: which 'S' payloads the client must deliver, and whether an End of
 * Snapshot ends them (its number in *end_seq). */
static void fz_model(struct fz_seen *s, const uint8_t *in, size_t n, size_t max_packet, int glimpse,
                     int *end_of_snapshot, uint64_t *end_seq)
{
	size_t pos = 0;
	int logged = 0;
	struct uf_soup_packet pk;
	*end_of_snapshot = 0;
	while (s->nwant < FZ_MAX_MSGS) {
		int rc = uf_soup_parse(in + pos, n - pos, UF_SOUP_FROM_SERVER, max_packet, &pk);
		if (rc <= 0)
			return; /* the stream ends (or is refused) here */
		pos += (size_t)rc;
		if (!logged) {
			if (pk.type == 'A')
				logged = 1;
			else if (pk.type != 'H' && pk.type != '+')
				return; /* rejected, or a packet before the login answer */
			continue;
		}
		if (pk.type == 'H' || pk.type == '+')
			continue;
		if (pk.type != 'S')
			return; /* end of session, or a second login answer */
		if (glimpse) {
			uint64_t rt;
			int g = uf_glimpse_end_of_snapshot(pk.payload, pk.payload_len, &rt);
			if (g < 0)
				return;
			if (g == 1) {
				*end_of_snapshot = 1;
				*end_seq = rt;
				return;
			}
		}
		s->want[s->nwant] = pk.payload;
		s->want_len[s->nwant++] = pk.payload_len;
	}
}

static int fz_listener(struct sockaddr_in *a)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		abort();
	memset(a, 0, sizeof(*a));
	a->sin_family = AF_INET;
	a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	socklen_t al = sizeof(*a);
	if (bind(fd, (struct sockaddr *)a, sizeof(*a)) < 0 || listen(fd, 64) < 0 ||
	    getsockname(fd, (struct sockaddr *)a, &al) < 0)
		abort();
	return fd;
}

/* Polls the client (waiting on its fd up to `ms` per turn) until `until` says stop or the
 * turns run out. */
static void fz_drive(struct uf_soup_client *c, int turns, int ms, int (*until)(const void *),
                     const void *arg)
{
	for (int i = 0; i < turns && !until(arg); i++) {
		struct pollfd pfd;
		uint64_t now = uf_now_mono_ns();
		enum uf_soup_client_state st = uf_soup_client_poll(c, now);
		if (until(arg) || st == UF_SOUP_CL_DONE || st == UF_SOUP_CL_IDLE)
			return;
		int wait = uf_soup_client_pollfd(c, &pfd, uf_now_mono_ns());
		if (wait < 0 || wait > ms)
			wait = ms;
		(void)poll(&pfd, pfd.fd >= 0 ? 1 : 0, wait);
	}
}

static int fz_not_connecting(const void *arg)
{
	enum uf_soup_client_state st = uf_soup_client_state(arg);
	return st != UF_SOUP_CL_CONNECTING && st != UF_SOUP_CL_BACKOFF;
}

/* The first connection ended (lost, or the client is done): what follows is a reconnect to
 * a server that no longer answers. */
static int fz_connection_over(const void *arg)
{
	const struct fz_seen *s = arg;
	enum uf_soup_client_state st = uf_soup_client_state(s->c);
	return s->lost || s->done || (st != UF_SOUP_CL_LOGIN_SENT && st != UF_SOUP_CL_ACTIVE);
}

/* Accepts the client's connection (the one from its local port), dropping any other. */
static int fz_accept(int lfd, struct uf_soup_client *c)
{
	struct pollfd pfd;
	struct sockaddr_in me, peer;
	socklen_t ml = sizeof(me);
	uf_soup_client_pollfd(c, &pfd, uf_now_mono_ns());
	if (pfd.fd < 0 || getsockname(pfd.fd, (struct sockaddr *)&me, &ml) < 0)
		abort();
	for (int tries = 0; tries < 100; tries++) {
		struct pollfd lp = {lfd, POLLIN, 0};
		if (poll(&lp, 1, 2000) != 1)
			abort();
		socklen_t pl = sizeof(peer);
		int fd = accept4(lfd, (struct sockaddr *)&peer, &pl, SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		if (peer.sin_port == me.sin_port)
			return fd;
		close(fd); /* a reconnect of an earlier input's client */
	}
	abort();
}

/* Everything the client sent must parse as client packets of the kinds it may send. */
static void fz_check_client_bytes(int fd, size_t max_packet)
{
	static uint8_t buf[1 << 16];
	size_t n = 0;
	for (;;) {
		ssize_t r = recv(fd, buf + n, sizeof(buf) - n, MSG_DONTWAIT);
		if (r <= 0)
			break;
		n += (size_t)r;
		if (n == sizeof(buf))
			abort(); /* a login and a few heartbeats, never this much */
	}
	size_t pos = 0;
	struct uf_soup_packet pk;
	while (pos < n) {
		int rc = uf_soup_parse(buf + pos, n - pos, UF_SOUP_FROM_CLIENT, max_packet, &pk);
		if (rc < 0)
			abort(); /* the client wrote a malformed packet */
		if (rc == 0)
			break; /* the rest was not written yet (the server closed first) */
		if (pk.type != 'L' && pk.type != 'R' && pk.type != 'O')
			abort();
		pos += (size_t)rc;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int lfd = -1;
	static struct sockaddr_in addr;
	static struct fz_seen s;
	if (size < 1)
		return 0;
	if (lfd < 0)
		lfd = fz_listener(&addr);
	uint8_t ctl = data[0];
	const uint8_t *in = data + 1;
	size_t n = size - 1;

	struct uf_soup_client_params p;
	uf_soup_client_params_default(&p);
	p.server = addr;
	strcpy(p.username, "fuzz");
	strcpy(p.password, "fuzz");
	p.glimpse = ctl & 1;
	p.resume = (ctl >> 1) & 1;
	p.max_packet = 64u << ((ctl >> 2) & 3); /* 64 .. 512 */
	p.backoff_min_ms = 1;
	p.backoff_max_ms = 1;
	memset(&s, 0, sizeof(s));
	int end_of_snapshot;
	uint64_t end_seq = 0;
	fz_model(&s, in, n, p.max_packet, p.glimpse, &end_of_snapshot, &end_seq);

	struct uf_soup_client_cb cb = {fz_on_message, fz_on_event, &s};
	struct uf_soup_client *c;
	if (uf_soup_client_create(&p, &cb, &c) < 0)
		abort();
	s.c = c;
	uf_soup_client_start(c, uf_now_mono_ns());
	fz_drive(c, 200, 10, fz_not_connecting, c);
	if (uf_soup_client_state(c) != UF_SOUP_CL_LOGIN_SENT)
		abort(); /* loopback connects */
	int fd = fz_accept(lfd, c);
	/* The server's bytes, cut into writes of 1 .. 2^k bytes (k from the control byte), the
	 * client polled between them so it reads partial packets. */
	size_t cut = (size_t)1 << (ctl >> 4);
	for (size_t off = 0; off < n;) {
		size_t k = n - off < cut ? n - off : cut;
		if (send(fd, in + off, k, MSG_NOSIGNAL) != (ssize_t)k)
			break; /* the client closed: the rest is not its business */
		off += k;
		if (fz_connection_over(&s))
			break; /* refused, closed or done: the rest is not read */
		uf_soup_client_poll(c, uf_now_mono_ns());
	}
	shutdown(fd, SHUT_WR);
	fz_drive(c, 500, 10, fz_connection_over, &s);
	if (!fz_connection_over(&s))
		abort(); /* the server closed: the client must have noticed */
	fz_check_client_bytes(fd, 4096);
	close(fd);

	struct uf_soup_client_stats st;
	uf_soup_client_stats(c, &st);
	if (s.msgs != s.nwant || st.messages != s.msgs || st.logins != (uint64_t)s.logins)
		abort(); /* every message the stream carried, none more, counted as delivered */
	if (s.ended != end_of_snapshot || (s.ended && s.end_seq != end_seq))
		abort();
	uf_soup_client_destroy(c);
	for (;;) { /* reconnects it made meanwhile */
		int x = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (x < 0)
			break;
		close(x);
	}
	return 0;
}
