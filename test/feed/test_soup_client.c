/* The SoupBinTCP client (feed/soup_client.c) against uf-replay's GLIMPSE snapshot server
 * (tools/uf-replay/snap_server.c, compiled in), on loopback with ephemeral ports: snapshots
 * that give exactly the books of the day's prefix, login rejected, heartbeats both ways,
 * reconnect after a server restart, and the same through the uf-replay binary. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "decode/uf_decode.h"
#include "feed/soup_client.h"
#include "feed_test_util.h"
#include "publish/uf_publish.h"
#include "snap_server.h"
#include "snap_state.h"
#include "soup_test_util.h"
#include "test/common/uf_test_run.h"

#define TS_MESSAGES 20000

static char g_day[256];
static struct uf_reader g_rd;
static struct uf_reader_msg *g_msgs; /* g_msgs[seq - 1] */
static uint64_t g_n;

/* ---- books ---- */

/* Books of messages 1 .. next_seq - 1 of the day. */
static struct uf_publisher *ts_pub_prefix(uint64_t next_seq)
{
	struct uf_publisher *p = ts_pub_new();
	for (uint64_t s = 1; s < next_seq; s++)
		ts_pub_apply(p, g_msgs[s - 1].msg, g_msgs[s - 1].len);
	return p;
}

/* ---- snapshot state alone ---- */

/* At many points of the day (first message, last, none, all, and between), the snapshot of
 * messages 1..N-1 loaded into empty books gives the books of those messages. */
static void test_snapshot_state_gives_the_books_of_the_prefix(void **s)
{
	(void)s;
	const uint64_t points[] = {1, 2, 3, 101, g_n / 3, g_n / 2, g_n - 7, g_n, g_n + 1};
	struct rp_snap_state *st;
	assert_int_equal(rp_snap_state_create(&st), 0);
	uint64_t applied = 1;
	for (size_t i = 0; i < sizeof(points) / sizeof(points[0]); i++) {
		for (; applied < points[i]; applied++)
			assert_int_equal(rp_snap_state_apply(st, g_msgs[applied - 1].msg,
			                                     g_msgs[applied - 1].len),
			                 0);
		struct uf_publisher *snap = ts_pub_new(), *want = ts_pub_prefix(points[i]);
		long long n = rp_snap_state_emit(st, ts_emit_to_pub, snap);
		assert_true(n >= 0);
		size_t levels = ts_pub_compare(snap, want);
		if (points[i] > g_n / 3)
			assert_true(levels > 100); /* a real book, not two empty ones */
		uf_publish_destroy(snap);
		uf_publish_destroy(want);
	}
	struct rp_snap_state_stats ss;
	rp_snap_state_stats(st, &ss);
	assert_int_equal(ss.applied, g_n);
	assert_int_equal(ss.undecodable, 0);
	rp_snap_state_destroy(st);
}

/* ---- client + in-process server ---- */

static const uint8_t *ts_msg(void *ctx, uint64_t seq, size_t *len)
{
	(void)ctx;
	*len = g_msgs[seq - 1].len;
	return g_msgs[seq - 1].msg;
}

struct ts_sink {
	struct uf_publisher *pub; /* books built from the snapshot */
	uint64_t messages;        /* sequenced messages */
	uint64_t last_seq;        /* their SoupBinTCP sequence, checked contiguous */
	uint64_t end_seq;         /* End of Snapshot's next real-time sequence, 0 = none */
	int accepted, rejected, disconnected, logged_out, end_of_session;
	uint8_t reject_reason;
	int last_err;
};

static void ts_on_message(void *ctx, uint64_t seq, const uint8_t *msg, size_t len)
{
	struct ts_sink *k = ctx;
	assert_int_equal(seq, k->last_seq + 1);
	k->last_seq = seq;
	k->messages++;
	if (k->pub)
		ts_pub_apply(k->pub, msg, len);
}

static void ts_on_event(void *ctx, const struct uf_soup_client_event *ev)
{
	struct ts_sink *k = ctx;
	switch (ev->kind) {
	case UF_SOUP_EV_LOGIN_ACCEPTED:
		k->accepted++;
		k->last_seq = ev->seq - 1;
		break;
	case UF_SOUP_EV_LOGIN_REJECTED:
		k->rejected++;
		k->reject_reason = ev->reason;
		break;
	case UF_SOUP_EV_DISCONNECTED:
		k->disconnected++;
		k->last_err = ev->err;
		break;
	case UF_SOUP_EV_END_OF_SNAPSHOT:
		k->end_seq = ev->seq;
		break;
	case UF_SOUP_EV_LOGGED_OUT:
		k->logged_out++;
		break;
	case UF_SOUP_EV_END_OF_SESSION:
		k->end_of_session++;
		break;
	}
}

static struct rp_snap_server *ts_server(uint16_t port, uint32_t hb_ms, uint32_t idle_ms,
                                        uint16_t *bound)
{
	struct rp_snap_server_cfg cfg;
	struct rp_snap_server *srv;
	assert_int_equal(rp_snap_server_parse("0,TESTER,PASS123", &cfg), 0);
	cfg.port = port;
	strcpy(cfg.session, "SNAPTEST");
	cfg.heartbeat_ms = hb_ms;
	cfg.idle_timeout_ms = idle_ms;
	assert_int_equal(rp_snap_server_start(&cfg, ts_msg, NULL, &srv, bound), 0);
	assert_true(*bound != 0);
	return srv;
}

/* Default parameters for a server on loopback `port`, logging in as user/pass. */
static void ts_params(struct uf_soup_client_params *p, uint16_t port, const char *user,
                      const char *pass)
{
	uf_soup_client_params_default(p);
	p->server.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	p->server.sin_port = htons(port);
	strcpy(p->username, user);
	strcpy(p->password, pass);
}

/* A client of `p` that reports to `k`. */
static struct uf_soup_client *ts_create(const struct uf_soup_client_params *p, struct ts_sink *k)
{
	struct uf_soup_client *c;
	struct uf_soup_client_cb cb = {ts_on_message, ts_on_event, k};
	assert_int_equal(uf_soup_client_create(p, &cb, &c), 0);
	return c;
}

/* A server that has sent the whole day. */
static struct rp_snap_server *ts_day_server(uint16_t *port)
{
	struct rp_snap_server *srv = ts_server(0, 1000, 15000, port);
	rp_snap_server_sent(srv, g_n + 1);
	return srv;
}

static struct uf_soup_client *ts_client(uint16_t port, const char *user, const char *pass,
                                        struct ts_sink *k)
{
	struct uf_soup_client_params p;
	ts_params(&p, port, user, pass);
	p.backoff_min_ms = 20;
	p.backoff_max_ms = 200;
	return ts_create(&p, k);
}

/* Runs the client until `cond` holds (bounded: fails after timeout_ms). */
#define TS_RUN_UNTIL(c, cond, timeout_ms)                                                          \
	do {                                                                                       \
		uint64_t end_ = uf_now_mono_ns() + (uint64_t)(timeout_ms)*1000000u;                \
		while (!(cond)) {                                                                  \
			if (uf_now_mono_ns() > end_)                                               \
				fail_msg("timed out waiting for: %s (state %s)", #cond,            \
				         uf_soup_client_state_name(uf_soup_client_state(c)));      \
			uf_soup_client_run((c), 10, NULL);                                         \
		}                                                                                  \
	} while (0)

/* Waits (bounded) until the server thread has applied what was marked sent: a login right
 * after includes it all (the thread catches up at each login anyway). */
static void ts_snapshot_at(struct rp_snap_server *srv, uint16_t port, uint64_t next_seq)
{
	rp_snap_server_sent(srv, next_seq);
	struct ts_sink k = {.pub = ts_pub_new()};
	struct uf_soup_client *c = ts_client(port, "TESTER", "PASS123", &k);
	uf_soup_client_start(c, uf_now_mono_ns());
	TS_RUN_UNTIL(c, uf_soup_client_state(c) == UF_SOUP_CL_DONE, 20000);
	assert_int_equal(k.accepted, 1);
	assert_int_equal(k.logged_out, 1);
	assert_int_equal(k.end_seq, next_seq);
	struct uf_publisher *want = ts_pub_prefix(next_seq);
	ts_pub_compare(k.pub, want);
	struct uf_soup_client_stats st;
	uf_soup_client_stats(c, &st);
	assert_int_equal(st.snapshots, 1);
	assert_int_equal(st.messages, k.messages);
	assert_int_equal(st.soup.packets[uf_soup_type_index('S')], k.messages + 1);
	uf_publish_destroy(want);
	uf_publish_destroy(k.pub);
	uf_soup_client_destroy(c);
}

static void test_client_loads_snapshots_that_give_the_prefix_books(void **s)
{
	(void)s;
	uint16_t port;
	struct rp_snap_server *srv = ts_server(0, 1000, 15000, &port);
	ts_snapshot_at(srv, port, 1); /* nothing sent yet: an empty snapshot, End at 1 */
	ts_snapshot_at(srv, port, 777);
	ts_snapshot_at(srv, port, g_n / 2);
	ts_snapshot_at(srv, port, g_n + 1);
	struct rp_snap_server_stats ss;
	rp_snap_server_stats(srv, &ss);
	assert_int_equal(ss.logins, 4);
	assert_int_equal(ss.snapshots, 4);
	assert_int_equal(ss.rejected, 0);
	rp_snap_server_stop(srv);
}

static void test_client_login_rejected(void **s)
{
	(void)s;
	uint16_t port;
	struct rp_snap_server *srv = ts_day_server(&port);

	/* Wrong password: 'A' (not authorized), and the client stops for good. */
	struct ts_sink k = {0};
	struct uf_soup_client *c = ts_client(port, "TESTER", "WRONG", &k);
	uf_soup_client_start(c, uf_now_mono_ns());
	TS_RUN_UNTIL(c, uf_soup_client_state(c) == UF_SOUP_CL_DONE, 10000);
	assert_int_equal(k.rejected, 1);
	assert_int_equal(k.reject_reason, 'A');
	assert_int_equal(k.accepted, 0);
	assert_int_equal(k.messages, 0);
	uf_soup_client_destroy(c);

	/* Wrong username, same answer. */
	memset(&k, 0, sizeof(k));
	c = ts_client(port, "NOBODY", "PASS123", &k);
	uf_soup_client_start(c, uf_now_mono_ns());
	TS_RUN_UNTIL(c, uf_soup_client_state(c) == UF_SOUP_CL_DONE, 10000);
	assert_int_equal(k.reject_reason, 'A');
	uf_soup_client_destroy(c);

	/* A session the server does not have: 'S', which the client retries after a back-off
	 * (the session may appear later), getting 'S' again each time. */
	struct uf_soup_client_params p;
	ts_params(&p, port, "TESTER", "PASS123");
	strcpy(p.session, "OTHERSESS");
	p.backoff_min_ms = 10;
	memset(&k, 0, sizeof(k));
	c = ts_create(&p, &k);
	uf_soup_client_start(c, uf_now_mono_ns());
	TS_RUN_UNTIL(c, k.rejected >= 3, 10000);
	assert_int_equal(k.reject_reason, 'S');
	assert_int_equal(k.accepted, 0);
	assert_true(uf_soup_client_state(c) != UF_SOUP_CL_DONE);
	uf_soup_client_destroy(c);

	struct rp_snap_server_stats ss;
	rp_snap_server_stats(srv, &ss);
	assert_true(ss.rejected >= 5);
	assert_int_equal(ss.logins, 0);
	rp_snap_server_stop(srv);
}

/* A client that asked for "only new messages" (seq 0) gets nothing after Login Accepted:
 * only server heartbeats keep it alive; its own heartbeats keep the server from dropping it. */
static struct uf_soup_client *ts_idle_client(uint16_t port, uint32_t server_timeout_ms,
                                             struct ts_sink *k)
{
	struct uf_soup_client_params p;
	ts_params(&p, port, "TESTER", "PASS123");
	p.seq = 0;
	p.glimpse = 0;
	p.heartbeat_ms = 50;
	p.server_timeout_ms = server_timeout_ms;
	p.backoff_min_ms = 20;
	p.backoff_max_ms = 100;
	return ts_create(&p, k);
}

static void test_heartbeats_keep_an_idle_session_alive(void **s)
{
	(void)s;
	uint16_t port;
	/* Server heartbeats every 100 ms and drops a client silent for 1.5 s; the client's
	 * heartbeats go every 50 ms and it gives the server 1.5 s (margins for a loaded host). */
	struct rp_snap_server *srv = ts_server(0, 100, 1500, &port);
	struct ts_sink k = {0};
	struct uf_soup_client *c = ts_idle_client(port, 1500, &k);
	uf_soup_client_start(c, uf_now_mono_ns());
	TS_RUN_UNTIL(c, uf_soup_client_state(c) == UF_SOUP_CL_ACTIVE, 10000);
	/* 4 s idle: well past either side's timeout. */
	uint64_t end = uf_now_mono_ns() + 4000000000ull;
	while (uf_now_mono_ns() < end)
		uf_soup_client_run(c, 50, NULL);
	struct uf_soup_client_stats st;
	uf_soup_client_stats(c, &st);
	assert_int_equal(uf_soup_client_state(c), UF_SOUP_CL_ACTIVE);
	assert_int_equal(k.disconnected, 0);
	assert_int_equal(k.messages, 0);
	assert_true(st.heartbeats_rx >= 10); /* ~40 expected */
	assert_true(st.heartbeats_tx >= 20); /* ~80 expected */
	struct rp_snap_server_stats ss;
	rp_snap_server_stats(srv, &ss);
	assert_int_equal(ss.timeouts, 0);
	assert_true(ss.heartbeats >= 10);
	uf_soup_client_logout(c);
	assert_int_equal(k.logged_out, 1);
	uf_soup_client_destroy(c);
	rp_snap_server_stop(srv);

	/* The same client against a server whose heartbeats are far apart (60 s): the server
	 * timeout (500 ms) fires, which is what the heartbeats above prevented. */
	srv = ts_server(0, 60000, 15000, &port);
	memset(&k, 0, sizeof(k));
	c = ts_idle_client(port, 500, &k);
	uf_soup_client_start(c, uf_now_mono_ns());
	TS_RUN_UNTIL(c, k.disconnected >= 1, 10000);
	assert_int_equal(k.last_err, -ETIMEDOUT);
	uf_soup_client_stats(c, &st);
	assert_int_equal(st.server_timeouts, 1);
	uf_soup_client_destroy(c);
	rp_snap_server_stop(srv);
}

static void test_client_reconnects_after_server_restart(void **s)
{
	(void)s;
	uint16_t port, again;
	struct rp_snap_server *srv = ts_server(0, 100, 15000, &port);
	struct ts_sink k = {0};
	struct uf_soup_client *c = ts_idle_client(port, 1000, &k);
	uf_soup_client_start(c, uf_now_mono_ns());
	TS_RUN_UNTIL(c, k.accepted == 1, 10000);

	rp_snap_server_stop(srv); /* closes the connection and the listener */
	TS_RUN_UNTIL(c, k.disconnected >= 1, 10000);
	/* While it is down, connects are refused and retried with back-off. */
	TS_RUN_UNTIL(c, k.disconnected >= 3, 10000);
	assert_int_equal(k.last_err, -ECONNREFUSED);
	assert_int_equal(k.accepted, 1);

	srv = ts_server(port, 100, 15000, &again);
	assert_int_equal(again, port);
	TS_RUN_UNTIL(c, k.accepted == 2, 10000);
	assert_int_equal(uf_soup_client_state(c), UF_SOUP_CL_ACTIVE);
	struct uf_soup_client_stats st;
	uf_soup_client_stats(c, &st);
	assert_int_equal(st.logins, 2);
	assert_true(st.connect_failures >= 2);
	uf_soup_client_destroy(c);
	rp_snap_server_stop(srv);
}

/* Starts `c` and runs it until its first attempt ends (bounded): it must end by timing out. */
static void ts_first_attempt_times_out(struct uf_soup_client *c, struct ts_sink *k,
                                       struct uf_soup_client_stats *st)
{
	uf_soup_client_start(c, uf_now_mono_ns());
	TS_RUN_UNTIL(c, k->disconnected >= 1, 5000);
	assert_int_equal(k->last_err, -ETIMEDOUT);
	uf_soup_client_stats(c, st);
}

/* A loopback listener the test speaks for, byte by byte. */
static int ts_listen(uint16_t *port)
{
	int l = socket(AF_INET, SOCK_STREAM, 0), one = 1;
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof(a);
	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	assert_int_equal(bind(l, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(l, 4), 0);
	assert_int_equal(getsockname(l, (struct sockaddr *)&a, &al), 0);
	*port = ntohs(a.sin_port);
	return l;
}

/* A server that answers the login with garbage: the client refuses the packet by kind, drops
 * the connection and reconnects, and never hands garbage on. */
static void test_client_drops_a_server_that_sends_malformed_packets(void **s)
{
	(void)s;
	uint16_t port;
	int l = ts_listen(&port);
	struct ts_sink k = {0};
	struct uf_soup_client *c = ts_client(port, "TESTER", "PASS123", &k);
	uf_soup_client_start(c, uf_now_mono_ns());
	TS_RUN_UNTIL(c, uf_soup_client_state(c) == UF_SOUP_CL_LOGIN_SENT, 5000);
	int fd = accept(l, NULL, NULL);
	assert_true(fd >= 0);
	/* Login Accepted whose sequence number has a letter in it. */
	const uint8_t bad[33] = "\x00\x1F"
	                        "A"
	                        "SNAPTEST  "
	                        "               12x4";
	assert_int_equal(write(fd, bad, sizeof(bad)), (ssize_t)sizeof(bad));
	TS_RUN_UNTIL(c, k.disconnected >= 1, 5000);
	assert_int_equal(k.last_err, -EBADMSG);
	assert_int_equal(k.accepted, 0);
	struct uf_soup_client_stats st;
	uf_soup_client_stats(c, &st);
	assert_int_equal(st.soup.errors[UF_SOUP_ERR_BAD_NUMBER], 1);
	/* It comes back (back-off) and logs in again. */
	int fd2 = -1;
	uint64_t end = uf_now_mono_ns() + 5000000000ull;
	while (fd2 < 0 && uf_now_mono_ns() < end) {
		uf_soup_client_run(c, 10, NULL);
		struct pollfd pfd = {.fd = l, .events = POLLIN};
		if (poll(&pfd, 1, 0) == 1)
			fd2 = accept(l, NULL, NULL);
	}
	assert_true(fd2 >= 0);
	TS_RUN_UNTIL(c, uf_soup_client_state(c) == UF_SOUP_CL_LOGIN_SENT, 5000);
	close(fd2);
	close(fd);
	close(l);
	uf_soup_client_destroy(c);
}

/* A requested sequence number k > 1 starts at the k-th message of the login's snapshot. */
static void test_requested_sequence_starts_inside_the_snapshot(void **s)
{
	(void)s;
	uint16_t port;
	struct rp_snap_server *srv = ts_day_server(&port);
	struct uf_soup_client_params p;
	struct uf_soup_client *c;
	struct ts_sink all = {0}, tail = {0};
	ts_params(&p, port, "TESTER", "PASS123");
	c = ts_create(&p, &all);
	uf_soup_client_start(c, uf_now_mono_ns());
	TS_RUN_UNTIL(c, uf_soup_client_state(c) == UF_SOUP_CL_DONE, 20000);
	uf_soup_client_destroy(c);
	p.seq = 100;
	c = ts_create(&p, &tail);
	uf_soup_client_start(c, uf_now_mono_ns());
	TS_RUN_UNTIL(c, uf_soup_client_state(c) == UF_SOUP_CL_DONE, 20000);
	assert_true(all.messages > 200);
	assert_int_equal(tail.messages, all.messages - 99);
	assert_int_equal(tail.last_seq, all.last_seq); /* the same numbering, 100 .. M */
	assert_int_equal(tail.end_seq, g_n + 1);
	uf_soup_client_destroy(c);
	rp_snap_server_stop(srv);
}

/* Reads one login request from `fd` (bounded) and returns its requested sequence number. */
static uint64_t ts_read_login(int fd)
{
	uint8_t b[49];
	size_t got = 0;
	struct uf_soup_packet pk;
	while (got < sizeof(b)) {
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		assert_int_equal(poll(&pfd, 1, 5000), 1);
		ssize_t n = read(fd, b + got, sizeof(b) - got);
		assert_true(n > 0);
		got += (size_t)n;
	}
	assert_int_equal(uf_soup_parse(b, sizeof(b), UF_SOUP_FROM_CLIENT, 64, &pk), 49);
	assert_int_equal(pk.type, 'L');
	return pk.u.login.seq;
}

/* Login timeout, then a server that ends the session with 'Z': both reported, the second
 * ends the client for good. */
static void test_client_login_timeout_and_end_of_session(void **s)
{
	(void)s;
	uint16_t port;
	int l = ts_listen(&port);
	struct uf_soup_client_params p;
	struct uf_soup_client *c;
	struct ts_sink k = {0};
	ts_params(&p, port, "TESTER", "PASS123");
	p.login_timeout_ms = 200;
	p.backoff_min_ms = 10;
	p.glimpse = 0;
	c = ts_create(&p, &k);
	/* The kernel completes the connect; nobody answers the login. */
	struct uf_soup_client_stats st;
	ts_first_attempt_times_out(c, &k, &st);
	assert_int_equal(st.login_timeouts, 1);
	int fd = accept(l, NULL, NULL); /* the timed-out connection */
	assert_true(fd >= 0);
	close(fd);
	/* Next attempt: answer it and send two messages; the client sends an unsequenced
	 * message; then End of Session. */
	assert_int_equal(uf_soup_client_send_unsequenced(c, "hi", 2), -ENOTCONN);
	TS_RUN_UNTIL(c, uf_soup_client_state(c) == UF_SOUP_CL_LOGIN_SENT, 5000);
	fd = accept(l, NULL, NULL);
	assert_true(fd >= 0);
	assert_int_equal(ts_read_login(fd), 1);
	uint8_t out[128];
	int n = uf_soup_build_login_accepted(out, "SESS", 41);
	n += uf_soup_build(out + n, sizeof(out) - (size_t)n, 'S', "ab", 2);
	n += uf_soup_build(out + n, sizeof(out) - (size_t)n, 'S', "cd", 2);
	assert_int_equal(write(fd, out, (size_t)n), n);
	TS_RUN_UNTIL(c, k.messages == 2, 5000);
	assert_int_equal(uf_soup_client_send_unsequenced(c, "hi", 2), 0);
	uint8_t in[64];
	struct uf_soup_stream rs;
	struct uf_soup_packet pk;
	size_t room;
	uf_soup_stream_init(&rs, in, sizeof(in), UF_SOUP_FROM_CLIENT, sizeof(in));
	for (int found = 0; !found;) { /* client heartbeats may come first on a slow host */
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		assert_int_equal(poll(&pfd, 1, 5000), 1);
		uint8_t *w = uf_soup_stream_space(&rs, &room);
		ssize_t got = read(fd, w, room);
		assert_true(got > 0);
		uf_soup_stream_commit(&rs, (size_t)got);
		while (uf_soup_stream_next(&rs, &pk) == 1)
			if (pk.type == 'U') {
				assert_int_equal(pk.payload_len, 2);
				assert_memory_equal(pk.payload, "hi", 2);
				found = 1;
			}
	}
	n = uf_soup_build(out, sizeof(out), 'Z', NULL, 0);
	assert_int_equal(write(fd, out, (size_t)n), n);
	TS_RUN_UNTIL(c, uf_soup_client_state(c) == UF_SOUP_CL_DONE, 5000);
	assert_int_equal(k.accepted, 1);
	assert_int_equal(k.messages, 2);
	assert_int_equal(k.last_seq, 42);
	assert_int_equal(k.end_of_session, 1);
	assert_int_equal(uf_soup_client_next_seq(c), 43);
	close(fd);
	close(l);
	uf_soup_client_destroy(c);
}

/* A connection lost in the middle of a snapshot: with resume = 0 (GLIMPSE) the client asks
 * for sequence 1 again and LOGIN_ACCEPTED(1) tells the caller to start over; with resume = 1
 * it asks for the next sequence it has not received. */
static void test_reconnect_mid_snapshot_restarts_or_resumes(void **s)
{
	(void)s;
	for (int resume = 0; resume <= 1; resume++) {
		uint16_t port;
		int l = ts_listen(&port);
		struct uf_soup_client_params p;
		struct uf_soup_client *c;
		struct ts_sink k = {0};
		ts_params(&p, port, "TESTER", "PASS123");
		p.backoff_min_ms = 10;
		p.resume = (uint8_t)resume;
		c = ts_create(&p, &k);
		uf_soup_client_start(c, uf_now_mono_ns());
		TS_RUN_UNTIL(c, uf_soup_client_state(c) == UF_SOUP_CL_LOGIN_SENT, 5000);
		int fd = accept(l, NULL, NULL);
		assert_int_equal(ts_read_login(fd), 1);
		/* Login Accepted, two snapshot messages, and the connection dies. */
		uint8_t out[256];
		int n = uf_soup_build_login_accepted(out, "SNAPTEST", 1);
		n += uf_soup_build(out + n, sizeof(out) - (size_t)n, 'S', "m1", 2);
		n += uf_soup_build(out + n, sizeof(out) - (size_t)n, 'S', "m2", 2);
		assert_int_equal(write(fd, out, (size_t)n), n);
		TS_RUN_UNTIL(c, k.messages == 2, 5000);
		close(fd);
		TS_RUN_UNTIL(c, k.disconnected == 1, 5000);
		TS_RUN_UNTIL(c, uf_soup_client_state(c) == UF_SOUP_CL_LOGIN_SENT, 5000);
		fd = accept(l, NULL, NULL);
		uint64_t want = resume ? 3 : 1;
		assert_int_equal(ts_read_login(fd), want);
		n = uf_soup_build_login_accepted(out, "SNAPTEST", want);
		uint8_t eos[UF_GLIMPSE_END_OF_SNAPSHOT_LEN];
		uf_glimpse_build_end_of_snapshot(eos, 900);
		if (!resume) { /* the whole snapshot again */
			n += uf_soup_build(out + n, sizeof(out) - (size_t)n, 'S', "m1", 2);
			n += uf_soup_build(out + n, sizeof(out) - (size_t)n, 'S', "m2", 2);
		}
		n += uf_soup_build(out + n, sizeof(out) - (size_t)n, 'S', "m3", 2);
		n += uf_soup_build(out + n, sizeof(out) - (size_t)n, 'S', eos, sizeof(eos));
		assert_int_equal(write(fd, out, (size_t)n), n);
		TS_RUN_UNTIL(c, uf_soup_client_state(c) == UF_SOUP_CL_DONE, 5000);
		assert_int_equal(k.accepted, 2);
		assert_int_equal(k.end_seq, 900);
		assert_int_equal(k.messages, resume ? 3 : 5);
		assert_int_equal(k.last_seq, 3); /* checked contiguous from each Login Accepted */
		assert_int_equal(k.logged_out, 1);
		/* The last packet before the client closed is the logout request (client
		 * heartbeats may come before it on a slow host). */
		uint8_t o[256];
		size_t have = 0;
		for (;;) {
			struct pollfd pfd = {.fd = fd, .events = POLLIN};
			assert_int_equal(poll(&pfd, 1, 5000), 1);
			ssize_t r = read(fd, o + have, sizeof(o) - have);
			assert_true(r >= 0);
			if (r == 0)
				break;
			have += (size_t)r;
		}
		assert_true(have >= 3);
		assert_memory_equal(o + have - 3, "\x00\x01O", 3);
		close(fd);
		close(l);
		uf_soup_client_destroy(c);
	}
}

/* A server whose accept queue is full drops the SYN: the connect never completes and the
 * client's connect timeout ends the attempt (then it backs off and tries again). */
static void test_client_connect_timeout(void **s)
{
	(void)s;
	uint16_t port;
	int l = ts_listen(&port);
	assert_int_equal(listen(l, 0), 0); /* the smallest accept queue */
	struct sockaddr_in a = {.sin_family = AF_INET,
	                        .sin_port = htons(port),
	                        .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	int fill[4];
	for (int i = 0; i < 4; i++) { /* fill the queue; later SYNs are dropped */
		fill[i] = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
		(void)connect(fill[i], (struct sockaddr *)&a, sizeof(a));
	}
	struct uf_soup_client_params p;
	struct uf_soup_client *c;
	struct ts_sink k = {0};
	ts_params(&p, port, "TESTER", "PASS123");
	p.server = a;
	p.connect_timeout_ms = 200;
	p.backoff_min_ms = 5000; /* still backing off when the test looks */
	c = ts_create(&p, &k);
	struct uf_soup_client_stats st;
	ts_first_attempt_times_out(c, &k, &st);
	assert_int_equal(st.connect_failures, 1);
	assert_int_equal(st.connects, 0);
	assert_int_equal(uf_soup_client_state(c), UF_SOUP_CL_BACKOFF);
	uf_soup_client_destroy(c);
	for (int i = 0; i < 4; i++)
		close(fill[i]);
	close(l);
}

/* The server drops a connection that sends a malformed packet, one that sends anything but a
 * login first, and one that stays silent. */
static void test_server_drops_bad_and_silent_clients(void **s)
{
	(void)s;
	uint16_t port;
	struct rp_snap_server *srv = ts_server(0, 100, 300, &port);
	struct sockaddr_in a = {.sin_family = AF_INET,
	                        .sin_port = htons(port),
	                        .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	uint8_t login[64], buf[256];
	assert_int_equal(uf_soup_build_login_request(login, "TESTER", "PASS123", "", 1), 49);
	const uint8_t hb_first[3] = {0x00, 0x01, 'R'};
	for (int round = 0; round < 3; round++) {
		int fd = socket(AF_INET, SOCK_STREAM, 0);
		assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
		if (round == 0) {
			login[40] = 'x'; /* inside the sequence number */
			assert_int_equal(write(fd, login, 49), 49);
			login[40] = ' ';
		} else if (round == 1) {
			assert_int_equal(write(fd, hb_first, 3), 3);
		} /* round 2: says nothing */
		/* The server closes: read sees the end (bounded by poll). */
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		assert_int_equal(poll(&pfd, 1, 5000), 1);
		assert_int_equal(read(fd, buf, sizeof(buf)), 0);
		close(fd);
	}
	struct rp_snap_server_stats ss;
	uint64_t end = uf_now_mono_ns() + 5000000000ull;
	do {
		rp_snap_server_stats(srv, &ss);
	} while (ss.timeouts < 1 && uf_now_mono_ns() < end);
	assert_int_equal(ss.connections, 3);
	assert_int_equal(ss.bad_packets, 2);
	assert_int_equal(ss.timeouts, 1);
	assert_int_equal(ss.logins, 0);
	rp_snap_server_stop(srv);
}

/* ---- through the uf-replay binary ---- */

/* Starts uf-replay with --serve-snapshot 0 and reads the port it prints on stderr. */
static pid_t ts_replay_start(uint16_t *port)
{
	int pipefd[2];
	assert_int_equal(pipe(pipefd), 0);
	char path[512], group[64];
	snprintf(path, sizeof(path), "%s/uf-replay", ft_bin_dir());
	snprintf(group, sizeof(group), "239.81.1.%d:%d", 1 + getpid() % 250,
	         20000 + getpid() % 12000);
	pid_t pid = uf_test_fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(pipefd[1], 2);
		int null = open("/dev/null", O_WRONLY);
		dup2(null, 1);
		char *argv[] = {"uf-replay", "--in",     g_day,  "--a",
		                group,       "--rate",   "8000", "--serve-snapshot",
		                "0",         "--linger", "60",   NULL};
		execv(path, argv);
		_exit(127);
	}
	close(pipefd[1]);
	char buf[512];
	size_t len = 0;
	const char *key = "listening on 127.0.0.1:";
	char *at = NULL;
	while (!at || !strchr(at, '\n')) {
		struct pollfd pfd = {.fd = pipefd[0], .events = POLLIN};
		if (poll(&pfd, 1, 10000) != 1)
			fail_msg("uf-replay printed no port in 10 s");
		ssize_t n = read(pipefd[0], buf + len, sizeof(buf) - 1 - len);
		if (n <= 0)
			fail_msg("uf-replay exited before printing its port");
		len += (size_t)n;
		buf[len] = '\0';
		at = strstr(buf, key);
	}
	*port = (uint16_t)atoi(at + strlen(key));
	close(pipefd[0]);
	return pid;
}

static void test_uf_replay_serves_snapshots_mid_day_and_at_the_end(void **s)
{
	(void)s;
	uint16_t port;
	pid_t pid = ts_replay_start(&port);
	assert_true(port != 0);
	int mid = 0;
	uint64_t end_seq = 0, deadline = uf_now_mono_ns() + 30000000000ull;
	/* Log in again and again while the day is sent (2.5 s at 8000 msg/s): each snapshot,
	 * whatever its point, must give the books of the prefix it names. Until one lands mid-day
	 * and one after the last message. */
	while (end_seq != g_n + 1) {
		assert_true(uf_now_mono_ns() < deadline);
		struct ts_sink k = {.pub = ts_pub_new()};
		struct uf_soup_client *c = ts_client(port, "replay", "replay", &k);
		uf_soup_client_start(c, uf_now_mono_ns());
		TS_RUN_UNTIL(c, uf_soup_client_state(c) == UF_SOUP_CL_DONE, 20000);
		assert_int_equal(k.accepted, 1);
		end_seq = k.end_seq;
		assert_true(end_seq >= 1 && end_seq <= g_n + 1);
		struct uf_publisher *want = ts_pub_prefix(end_seq);
		ts_pub_compare(k.pub, want);
		mid += end_seq > 1 && end_seq <= g_n;
		uf_publish_destroy(want);
		uf_publish_destroy(k.pub);
		uf_soup_client_destroy(c);
	}
	assert_true(mid >= 1);
	/* The whole day through the CLI: uf-snap writes the snapshot as a daily file, whose
	 * books (uf-decode books) are the day's. */
	char snap[300], server[64], bin[512];
	struct uf_test_run r, books_snap, books_day;
	snprintf(snap, sizeof(snap), "%s/snapshot.itch", ft_tmpdir());
	snprintf(server, sizeof(server), "127.0.0.1:%u", port);
	snprintf(bin, sizeof(bin), "%s/uf-snap", ft_bin_dir());
	const char *snap_argv[] = {"uf-snap", "--server", server, "--out", snap, NULL};
	uf_test_run_path(bin, snap_argv, 20000, &r);
	assert_int_equal(r.status, 0);
	char want_seq[64];
	snprintf(want_seq, sizeof(want_seq), "\"next_seq\":%llu,", (unsigned long long)g_n + 1);
	assert_non_null(strstr(r.out, want_seq));
	snprintf(bin, sizeof(bin), "%s/uf-decode", ft_bin_dir());
	const char *books_snap_argv[] = {"uf-decode", "books", snap, NULL};
	const char *books_day_argv[] = {"uf-decode", "books", g_day, NULL};
	uf_test_run_path(bin, books_snap_argv, 20000, &books_snap);
	uf_test_run_path(bin, books_day_argv, 20000, &books_day);
	assert_int_equal(books_snap.status, 0);
	assert_int_equal(books_day.status, 0);
	assert_true(strlen(books_day.out) > 1000);
	assert_string_equal(books_snap.out, books_day.out);
	uf_test_run_free(&r);
	uf_test_run_free(&books_snap);
	uf_test_run_free(&books_day);
	/* A bad login is refused by the tool too. */
	struct ts_sink k = {0};
	struct uf_soup_client *c = ts_client(port, "replay", "nope", &k);
	uf_soup_client_start(c, uf_now_mono_ns());
	TS_RUN_UNTIL(c, uf_soup_client_state(c) == UF_SOUP_CL_DONE, 10000);
	assert_int_equal(k.reject_reason, 'A');
	uf_soup_client_destroy(c);
	kill(pid, SIGTERM);
	assert_int_equal(ft_wait(pid, 10000), 0);
}

/* Bad --serve-snapshot values are usage errors (exit 2), before anything is sent. */
static void test_uf_replay_rejects_bad_serve_snapshot_values(void **s)
{
	(void)s;
	const char *bad[] = {"70000", "-1", "x", "1,user", "1,TOOLONGNAME,pw", "1,u,ELEVENCHARSX",
	                     "1,,pw"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *argv[] = {
		    "uf-replay",        "--in",         g_day, "--a", "239.81.1.1:25101",
		    "--serve-snapshot", (char *)bad[i], NULL};
		if (ft_run(argv, NULL, 10000) != 2)
			fail_msg("--serve-snapshot '%s' was accepted", bad[i]);
	}
}

static int ts_setup(void **s)
{
	(void)s;
	if (ft_gen_day(g_day, sizeof(g_day), TS_MESSAGES, 20, 13) < 0) {
		fprintf(stderr, "FATAL: uf-gen failed\n");
		return -1;
	}
	if (uf_reader_open(&g_rd, g_day, NULL) < 0)
		return -1;
	g_msgs = calloc(TS_MESSAGES, sizeof(*g_msgs));
	while (g_n < TS_MESSAGES && uf_reader_next(&g_rd, &g_msgs[g_n]) == 1)
		g_n++;
	return g_n == TS_MESSAGES ? 0 : -1;
}

static int ts_teardown(void **s)
{
	(void)s;
	free(g_msgs);
	uf_reader_close(&g_rd);
	uf_test_rm_tree(ft_tmpdir());
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_snapshot_state_gives_the_books_of_the_prefix),
	    cmocka_unit_test(test_client_loads_snapshots_that_give_the_prefix_books),
	    cmocka_unit_test(test_client_login_rejected),
	    cmocka_unit_test(test_heartbeats_keep_an_idle_session_alive),
	    cmocka_unit_test(test_client_reconnects_after_server_restart),
	    cmocka_unit_test(test_client_drops_a_server_that_sends_malformed_packets),
	    cmocka_unit_test(test_requested_sequence_starts_inside_the_snapshot),
	    cmocka_unit_test(test_client_login_timeout_and_end_of_session),
	    cmocka_unit_test(test_server_drops_bad_and_silent_clients),
	    cmocka_unit_test(test_client_connect_timeout),
	    cmocka_unit_test(test_reconnect_mid_snapshot_restarts_or_resumes),
	    cmocka_unit_test(test_uf_replay_serves_snapshots_mid_day_and_at_the_end),
	    cmocka_unit_test(test_uf_replay_rejects_bad_serve_snapshot_values),
	};
	return cmocka_run_group_tests(tests, ts_setup, ts_teardown);
}
