/* The snapshot tests' harness (test_feed_snapshot.c, test_feed_snapshot_trust.c): the day in
 * memory, a feed of this process on two loopback multicast lines, live MoldUDP64 packets sent
 * by the test, bounded waits, and the books compared with the file's. The including file
 * defines FT_BACKEND, TS_TAG (ring and feed names), TS_OCTET and TS_PORT_BASE (groups
 * 239.TS_OCTET.<backend>.<n>, UDP ports TS_PORT_BASE + 100 * backend + 10 * case, cases 10..19
 * from TS_PORT_BASE + 400 on: each file its own, so the executables may run at once). Include after
 * cmocka.h. */
#ifndef TS_SNAP_HARNESS_H
#define TS_SNAP_HARNESS_H

#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "common/uf_endian.h"
#include "decode/uf_decode.h"
#include "feed/mcast.h"
#include "feed/uf_feed.h"
#include "ring/uf_ring.h"
#include "ring/ufconsumer.h"
#include "feed_test_util.h"
#include "ft_books.h"
#include "ft_snap_settled.h"
#include "test/common/uf_test_feed_thread.h"

#ifndef FT_BACKEND
#error "FT_BACKEND must name the receive back end under test"
#endif

#define TS_MESSAGES 20000
#define TS_SYMBOLS  16
#define TS_DEPTH    10
#define TS_PER_PKT  7 /* messages per live packet: packet edges fall across the snapshot's */
#define TS_SESSION  "SNAPTEST01"
#define TS_WAIT_MS  20000

static char g_day[256];
static char *g_ref_books;
static uint8_t *g_file;       /* the day file, in memory */
static const uint8_t **g_msg; /* message i (1-based) */
static uint16_t *g_len;       /* its length */
static uint64_t g_n;          /* messages in the day */

static inline uint64_t ts_now_ms(void)
{
	return uf_now_mono_ns() / 1000000u;
}

static inline void ts_nap(void)
{
	struct timespec ts = {0, 2000000};
	nanosleep(&ts, NULL);
}

/* Waits (bounded) until *counter >= want. Returns 0, or -1 on time out. */
static inline int ts_wait_ge(const uint64_t *counter, uint64_t want, int ms)
{
	uint64_t end = ts_now_ms() + (uint64_t)ms;
	while (uf_load_relaxed_u64(counter) < want) {
		if (ts_now_ms() > end) {
			fprintf(stderr, "waited %d ms: counter %llu < %llu\n", ms,
			        (unsigned long long)uf_load_relaxed_u64(counter),
			        (unsigned long long)want);
			return -1;
		}
		ts_nap();
	}
	return 0;
}

static inline int ts_write_all(int fd, const uint8_t *p, size_t n)
{
	while (n) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* A TCP socket bound to an ephemeral port of 127.0.0.1; listening when `listen_too`. */
static inline int ts_tcp_bound(uint16_t *port, int listen_too)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(fd >= 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	socklen_t al = sizeof(a);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &al), 0);
	if (listen_too)
		assert_int_equal(listen(fd, 4), 0);
	*port = ntohs(a.sin_port);
	return fd;
}

/* ---- the feed in this process, and live packets sent by the test ---- */

struct ts_case {
	struct uf_feed_config cfg;
	struct uf_feed *feed;
	struct uf_test_feed_thread thr;
	int tx;                        /* multicast sender */
	struct sockaddr_in to[2];      /* line groups */
	const struct uf_feed_stats *s; /* live counters */
};

static inline void ts_config(struct uf_feed_config *cfg, int sc, uint16_t snap_port)
{
	/* cases 10..19: ports TS_PORT_BASE + 400 + 100 * backend + 10 * (sc - 10), past the
	 * four back ends' ranges of cases 0..9 */
	ft_config_lines(cfg, TS_TAG, FT_BACKEND, sc, TS_OCTET, TS_PORT_BASE + (sc >= 10 ? 300 : 0),
	                TS_DEPTH);
	cfg->recovery.enabled = 0; /* the snapshot is the only way to the state of the day */
	cfg->recovery.wait_ms = 20;
	cfg->recovery.queue_packets = 16384;
	cfg->snapshot.enabled = 1;
	cfg->snapshot.server.sin_family = AF_INET;
	cfg->snapshot.server.sin_port = htons(snap_port);
	inet_pton(AF_INET, "127.0.0.1", &cfg->snapshot.server.sin_addr);
	strcpy(cfg->snapshot.username, "replay");
	strcpy(cfg->snapshot.password, "replay");
	cfg->snapshot.on_start = 1;
	cfg->snapshot.timeout_ms = 10000;
	cfg->snapshot.buffer_packets = 8192;
	/* the engine's default: a load that flags books uncertain is followed by re-loads */
	cfg->snapshot.reload_uncertain = UF_FEED_DEFAULT_SNAPSHOT_RELOAD_UNCERTAIN;
}

static inline void ts_create(struct ts_case *c)
{
	char err[256];
	if (uf_feed_create(&c->cfg, &c->feed, err, sizeof(err)) < 0)
		fail_msg("uf_feed_create: %s", err);
	c->s = uf_feed_stats(c->feed);
	struct in_addr lo;
	inet_pton(AF_INET, "127.0.0.1", &lo);
	c->tx = uf_mcast_open_tx(lo, 1, err, sizeof(err));
	if (c->tx < 0)
		fail_msg("sender: %s", err);
	for (int l = 0; l < 2; l++) {
		c->to[l].sin_family = AF_INET;
		c->to[l].sin_addr = c->cfg.lines[l].group;
		c->to[l].sin_port = htons(c->cfg.lines[l].port);
	}
}

static inline void ts_run(struct ts_case *c)
{
	uf_test_feed_thread_start(&c->thr, c->feed);
}

static inline void ts_end(struct ts_case *c)
{
	assert_int_equal(uf_test_feed_thread_stop(&c->thr), 0);
	close(c->tx);
	uf_feed_destroy(c->feed);
	char p[300];
	snprintf(p, sizeof(p), "%s/uf.%s", ft_use_ring_dir(), c->cfg.ring.name);
	ft_rm_dir(p);
}

/* Sends one MoldUDP64 packet on line l: messages [seq, seq + count) of the day, or a
 * heartbeat (count 0) / end of session (0xFFFF) announcing seq. */
static inline void ts_send(struct ts_case *c, int l, uint64_t seq, uint16_t count)
{
	uint8_t pkt[2048];
	memcpy(pkt, TS_SESSION, 10);
	uf_put_be64(pkt + 10, seq);
	uf_put_be16(pkt + 18, count);
	size_t off = 20;
	for (uint64_t s = seq; count != 0xFFFF && s < seq + count; s++) {
		uf_put_be16(pkt + off, g_len[s]);
		memcpy(pkt + off + 2, g_msg[s], g_len[s]);
		off += 2u + g_len[s];
	}
	assert_int_equal(sendto(c->tx, pkt, off, 0, (struct sockaddr *)&c->to[l], sizeof(c->to[l])),
	                 (ssize_t)off);
}

/* Sends [from, to) in TS_PER_PKT packets on the lines in `mask` (bit 0 A, bit 1 B), the
 * last packet shorter; returns the packets sent per line. */
static inline unsigned ts_send_range(struct ts_case *c, unsigned mask, uint64_t from, uint64_t to)
{
	unsigned n = 0;
	for (uint64_t s = from; s < to; s += TS_PER_PKT) {
		uint16_t k = (uint16_t)(to - s < TS_PER_PKT ? to - s : TS_PER_PKT);
		for (int l = 0; l < 2; l++)
			if (mask & (1u << l))
				ts_send(c, l, s, k);
		n++;
		if (n % 64 == 0) { /* let a busy 2-CPU box read: never more than a socket holds */
			struct timespec ts = {0, 200000};
			nanosleep(&ts, NULL);
		}
	}
	return n;
}

static inline void ts_send_end(struct ts_case *c)
{
	ts_send(c, 0, g_n + 1, 0xFFFF);
	ts_send(c, 1, g_n + 1, 0xFFFF);
}

/* Both lines send `from`..the day's last message, then the End of Session, which the feed
 * must reach (bounded). */
static inline void ts_send_rest(struct ts_case *c, uint64_t from)
{
	ts_send_range(c, 3, from, g_n + 1);
	ts_send_end(c);
	assert_int_equal(ts_wait_ge(&c->s->end_of_session, 1, TS_WAIT_MS), 0);
}

/* Both lines send 1..3000, all applied (bounded). */
static inline void ts_live_to_3000(struct ts_case *c)
{
	ts_send_range(c, 3, 1, 3001);
	assert_int_equal(ts_wait_ge(&c->s->messages, 3000, TS_WAIT_MS), 0);
}

/* A feed of the case's config, running, with 1..3000 applied. */
static inline void ts_start_live_to_3000(struct ts_case *c)
{
	ts_create(c);
	ts_run(c);
	ts_live_to_3000(c);
}

/* Once the feed is settled (no snapshot load running or due: ft_snap_wait_settled), the
 * ring's books equal the file's and none is stale, unless the re-loads of books a load flagged
 * uncertain ran out (ft_snap_stale_ok, the one rule). */
static inline void ts_expect_books(const struct ts_case *c)
{
	assert_int_equal(ft_snap_wait_settled(c->s, TS_WAIT_MS), 0);
	int stale = -1;
	char *got = ft_ring_books(c->cfg.ring.name, &stale);
	if (strcmp(got, g_ref_books) != 0) {
		fprintf(stderr, "feed:\n%.1200s\nfile:\n%.1200s\n", got, g_ref_books);
		fail_msg("books differ from the file's");
	}
	struct ft_snap_settle set = ft_snap_settle_of(c->s, c->cfg.snapshot.reload_uncertain);
	assert_true(ft_snap_stale_ok(&set, stale));
	free(got);
}

static inline int ts_setup(void **state)
{
	if (!ft_use_ring_dir())
		return -1;
	if (ft_gen_day(g_day, sizeof(g_day), TS_MESSAGES, TS_SYMBOLS, 11) < 0)
		return -1;
	struct uf_record *recs;
	size_t nrecs;
	if (ft_reference(g_day, TS_DEPTH, &g_ref_books, &recs, &nrecs, &g_n) < 0)
		return -1;
	free(recs);
	struct uf_reader rd;
	if (uf_reader_open(&rd, g_day, NULL) < 0)
		return -1;
	g_msg = calloc(g_n + 2, sizeof(*g_msg));
	g_len = calloc(g_n + 2, sizeof(*g_len));
	size_t total = 0;
	struct uf_reader_msg m;
	uint64_t i = 0;
	while (uf_reader_next(&rd, &m) == 1)
		total += m.len;
	g_file = malloc(total);
	uf_reader_rewind(&rd);
	total = 0;
	while (uf_reader_next(&rd, &m) == 1 && i < g_n) {
		memcpy(g_file + total, m.msg, m.len);
		g_msg[++i] = g_file + total;
		g_len[i] = m.len;
		total += m.len;
	}
	uf_reader_close(&rd);
	return i == g_n ? 0 : -1;
}

static inline int ts_teardown(void **state)
{
	free(g_ref_books);
	free(g_file);
	free(g_msg);
	free(g_len);
	ft_rm_dir(ft_use_ring_dir());
	uf_test_rm_tree(ft_tmpdir());
	return 0;
}

#endif /* TS_SNAP_HARNESS_H */
