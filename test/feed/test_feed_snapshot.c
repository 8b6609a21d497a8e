/* Snapshot-then-stream, one executable per receive back end (FT_BACKEND):
 *   - the merge, forced: a GLIMPSE server in this process holds its End of Snapshot until the
 *     test has made the feed buffer live packets before, across and after the snapshot's
 *     sequence on both lines (one copy per sequence kept), then releases it;
 *   - a hole larger than max_gap_messages loads a snapshot instead of being re-requested;
 *   - the snapshot server down: bounded attempts, counted, books flagged stale, no crash;
 *   - late start: the feed starts after half the day was sent by uf-replay
 *     (--serve-snapshot), books equal the file's;
 *   - SIGKILL + restart of `uringfeed` mid-day: a consumer attached across it sees -ESTALE,
 *     re-attaches, and the books equal the file's.
 * Ephemeral TCP ports; multicast groups 239.78.<backend>.<n>, UDP ports 25000 + 100 *
 * backend + 10 * case. Every wait is for an event, bounded. */
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "common/uf_endian.h"
#include "decode/uf_decode.h"
#include "decode/uf_soup.h"
#include "feed/mcast.h"
#include "feed/uf_feed.h"
#include "ring/uf_ring.h"
#include "ring/ufconsumer.h"
#include "feed_test_util.h"
#include "ft_books.h"
#include "snap_state.h"
#include "test/common/uf_test_daemon.h"

#define TS_TAG       "ts"
#define TS_OCTET     78
#define TS_PORT_BASE 25000
#include "ts_snap_harness.h"

/* ---- a GLIMPSE server that holds its End of Snapshot until released ---- */

struct ts_glimpse {
	int lfd;               /* listening socket */
	uint16_t port;         /* its port */
	uint64_t end_seq;      /* End of Snapshot: snapshot of messages 1..end_seq-1 */
	volatile int release;  /* test -> server: send the End of Snapshot */
	volatile int64_t body; /* server -> test: messages in the snapshot body, when sent */
	int die_after_body;    /* close instead of sending the End, refuse reconnects */
	int pad_right;         /* numbers left-justified, space-padded (issue 23 item 2) */
	pthread_t thr;
	int rc; /* 0 ok */
};

static int ts_emit(void *ctx, const uint8_t *msg, size_t len)
{
	uint8_t pkt[256];
	int n = uf_soup_build(pkt, sizeof(pkt), 'S', msg, len);
	return n < 0 ? n : ts_write_all(*(int *)ctx, pkt, (size_t)n);
}

/* Rewrites a 20-byte numeric field left-justified ("1001" then spaces), as some servers do. */
static void ts_left_justify(uint8_t *field)
{
	uint64_t v = 0;
	char tmp[UF_SOUP_SEQ_LEN + 1];
	assert_int_equal(uf_soup_parse_number(field, UF_SOUP_SEQ_LEN, &v), 0);
	snprintf(tmp, sizeof(tmp), "%-20llu", (unsigned long long)v);
	memcpy(field, tmp, UF_SOUP_SEQ_LEN);
}

static void *ts_glimpse_thread(void *arg)
{
	struct ts_glimpse *g = arg;
	g->rc = -1;
	struct pollfd pfd = {g->lfd, POLLIN, 0};
	if (poll(&pfd, 1, TS_WAIT_MS) != 1)
		return NULL;
	int fd = accept(g->lfd, NULL, NULL);
	if (fd < 0)
		return NULL;
	uint8_t login[64];
	size_t got = 0;
	while (got < 49) { /* a Login Request is 49 bytes */
		pfd.fd = fd;
		if (poll(&pfd, 1, TS_WAIT_MS) != 1)
			goto out;
		ssize_t r = recv(fd, login + got, 49 - got, 0);
		if (r <= 0)
			goto out;
		got += (size_t)r;
	}
	uint8_t pkt[64];
	int n = uf_soup_build_login_accepted(pkt, TS_SESSION, 1);
	if (n > 0 && g->pad_right)
		ts_left_justify(pkt + UF_SOUP_HDR_LEN + UF_SOUP_SESSION_LEN);
	if (n < 0 || ts_write_all(fd, pkt, (size_t)n) < 0)
		goto out;
	struct rp_snap_state *st;
	if (rp_snap_state_create(&st) < 0)
		goto out;
	for (uint64_t s = 1; s < g->end_seq; s++)
		rp_snap_state_apply(st, g_msg[s], g_len[s]);
	long long body = rp_snap_state_emit(st, ts_emit, &fd);
	rp_snap_state_destroy(st);
	if (body < 0)
		goto out;
	g->body = body;
	if (g->die_after_body) { /* a server that dies mid-snapshot and stays down */
		close(g->lfd);
		g->lfd = -1;
		g->rc = 0;
		goto out;
	}
	uint64_t end = ts_now_ms() + TS_WAIT_MS;
	while (!g->release && ts_now_ms() < end)
		ts_nap(); /* the test releases it once the feed buffered what it must */
	uint8_t eos[UF_SOUP_HDR_LEN + 32];
	int m = uf_glimpse_build_end_of_snapshot(eos + UF_SOUP_HDR_LEN, g->end_seq);
	if (m > 0 && g->pad_right)
		ts_left_justify(eos + UF_SOUP_HDR_LEN + 1);
	if (m < 0 || uf_soup_build_header(eos, 'S', (size_t)m) < 0 ||
	    ts_write_all(fd, eos, UF_SOUP_HDR_LEN + (size_t)m) < 0)
		goto out;
	g->rc = 0;
	/* until the client logs out and closes */
	pfd.fd = fd;
	while (poll(&pfd, 1, 2000) == 1 && recv(fd, pkt, sizeof(pkt), 0) > 0)
		;
out:
	close(fd);
	return NULL;
}

static void ts_glimpse_start(struct ts_glimpse *g, uint64_t end_seq)
{
	memset(g, 0, sizeof(*g));
	g->end_seq = end_seq;
	g->body = -1;
	g->lfd = ts_tcp_bound(&g->port, 1);
	assert_int_equal(pthread_create(&g->thr, NULL, ts_glimpse_thread, g), 0);
}

static void ts_glimpse_stop(struct ts_glimpse *g)
{
	g->release = 1;
	pthread_join(g->thr, NULL);
	if (g->lfd >= 0)
		close(g->lfd);
}

/* Waits (bounded) until the snapshot server sent its body, which must not be empty. */
static void ts_wait_body(struct ts_glimpse *g)
{
	uint64_t end = ts_now_ms() + TS_WAIT_MS;
	while (g->body < 0 && ts_now_ms() < end)
		ts_nap();
	assert_true(g->body > 0);
}

/* ---- the merge, forced ---- */

static void test_snapshot_merge_with_live_packets_before_across_and_after(void **state)
{
	struct ts_case c;
	struct ts_glimpse g;
	const uint64_t K = 5000; /* End of Snapshot: the books hold 1..4999 */
	ts_glimpse_start(&g, K);
	ts_config(&c.cfg, 0, g.port);
	ts_create(&c);
	ts_run(&c);
	/* The snapshot body is out and applied, its end held back: the feed is loading. */
	ts_wait_body(&g);
	assert_int_equal(ts_wait_ge(&c.s->snapshot_messages, (uint64_t)g.body, TS_WAIT_MS), 0);
	assert_int_equal(uf_load_relaxed_u64(&c.s->snapshot_in_progress), 1);
	/* Live on A: 4000..6000 in 7-message packets (one of them holds 4994..5000: it straddles
	 * 5000), the packet 5498..5504 lost on A; B sends them all, so of B's copies only
	 * 5498..5504 is kept. */
	unsigned pkts = 0;
	pkts += ts_send_range(&c, 1, 4000, 5498);
	pkts += ts_send_range(&c, 1, 5505, 6001);
	unsigned b = ts_send_range(&c, 2, 4000, 6001);
	uint64_t distinct = pkts + 1; /* A's, plus B's 5498 */
	assert_int_equal(distinct, b);
	assert_int_equal(ts_wait_ge(&c.s->lines[0].packets, pkts, TS_WAIT_MS), 0);
	assert_int_equal(ts_wait_ge(&c.s->lines[1].packets, b, TS_WAIT_MS), 0);
	/* One copy per sequence: every A packet, and of B's only the one A lost. */
	assert_int_equal(uf_load_relaxed_u64(&c.s->snapshot_buffered_packets), distinct);
	assert_int_equal(uf_load_relaxed_u64(&c.s->messages), 0); /* nothing applied yet */
	g.release = 1;
	assert_int_equal(ts_wait_ge(&c.s->snapshots_loaded, 1, TS_WAIT_MS), 0);
	/* After the merge: 5000..6000 applied once (the straddler from 5000), 4000..4999
	 * dropped as already in the snapshot. */
	assert_int_equal(ts_wait_ge(&c.s->messages, 6001 - K, TS_WAIT_MS), 0);
	assert_int_equal(uf_load_relaxed_u64(&c.s->messages), 6001 - K);
	ts_send_rest(&c, 6001);
	struct uf_feed_stats st;
	uf_feed_stats_read(c.s, &st);
	assert_int_equal(st.messages, g_n + 1 - K); /* every message after the snapshot, once */
	assert_int_equal(st.messages_unrecovered, 0);
	assert_int_equal(st.gaps_unrecovered, 0);
	assert_int_equal(st.snapshots_loaded, 1);
	assert_int_equal(st.snapshot_failures, 0);
	assert_int_equal(st.snapshot_in_progress, 0);
	assert_int_equal(st.snapshot_messages, (uint64_t)g.body);
	assert_true(st.snapshot_bytes > st.snapshot_messages);
	assert_true(st.snapshot_last_duration_ns > 0);
	ts_expect_books(&c);
	ts_glimpse_stop(&g);
	assert_int_equal(g.rc, 0);
	ts_end(&c);
}

/* ---- a hole too large to re-request ---- */

static void ts_gap_too_large(int pad_right)
{
	struct ts_case c;
	struct ts_glimpse g;
	const uint64_t K = 9000;
	ts_glimpse_start(&g, K);
	g.pad_right = pad_right; /* read by the server only once the feed logs in, below */
	ts_config(&c.cfg, 1, g.port);
	c.cfg.snapshot.on_start = 0;
	c.cfg.snapshot.max_gap_messages = 1000;
	ts_start_live_to_3000(&c);
	assert_int_equal(uf_load_relaxed_u64(&c.s->snapshot_in_progress), 0);
	/* Both lines jump 3000 -> 6000: a hole of 3000 > 1000 messages. */
	ts_send_range(&c, 3, 6000, 10001);
	ts_wait_body(&g);
	assert_int_equal(uf_load_relaxed_u64(&c.s->snapshot_in_progress), 1);
	assert_int_equal(uf_load_relaxed_u64(&c.s->rerequests), 0);
	g.release = 1;
	assert_int_equal(ts_wait_ge(&c.s->snapshots_loaded, 1, TS_WAIT_MS), 0);
	ts_send_rest(&c, 10001);
	struct uf_feed_stats st;
	uf_feed_stats_read(c.s, &st);
	assert_int_equal(st.messages, 3000 + (g_n + 1 - K));
	assert_int_equal(st.messages_unrecovered, 0);
	assert_int_equal(st.snapshots_loaded, 1);
	ts_expect_books(&c);
	ts_glimpse_stop(&g);
	ts_end(&c);
}

static void test_snapshot_gap_too_large_loads_a_snapshot(void **state)
{
	(void)state;
	ts_gap_too_large(0);
}

/* Issue 23 item 2: a server padding its numbers on the right ("9000" then spaces, in Login
 * Accepted and in 'G') gives the same load, not a refusal per login. */
static void test_snapshot_numbers_padded_on_the_right_load(void **state)
{
	(void)state;
	ts_gap_too_large(1);
}

/* ---- a hole too old to re-request ---- */

static void test_snapshot_gap_too_old_loads_a_snapshot(void **state)
{
	struct ts_case c;
	struct ts_glimpse g;
	const uint64_t K = 3100;
	ts_glimpse_start(&g, K);
	ts_config(&c.cfg, 5, g.port);
	c.cfg.snapshot.on_start = 0;
	c.cfg.snapshot.max_gap_messages = 0; /* off: only the age counts */
	c.cfg.snapshot.max_gap_age_ms = 100;
	/* A request server nobody answers: without the age trigger the hole would be
	 * re-requested for 6 x 200 ms, then given up. */
	int mute = socket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_in ma = {.sin_family = AF_INET};
	ma.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(mute, (struct sockaddr *)&ma, sizeof(ma)), 0);
	socklen_t ml = sizeof(ma);
	assert_int_equal(getsockname(mute, (struct sockaddr *)&ma, &ml), 0);
	c.cfg.recovery.enabled = 1;
	c.cfg.recovery.server = ma;
	c.cfg.recovery.max_count = 1000;
	c.cfg.recovery.timeout_ms = 200;
	c.cfg.recovery.retries = 5;
	c.cfg.recovery.wait_packets = 64;
	c.cfg.recovery.max_requests_per_s = 1000;
	ts_start_live_to_3000(&c);
	/* 3001..3049 lost on both lines: a small hole that never fills */
	ts_send_range(&c, 3, 3050, 3205);
	ts_wait_body(&g);
	g.release = 1;
	assert_int_equal(ts_wait_ge(&c.s->snapshots_loaded, 1, TS_WAIT_MS), 0);
	ts_send_rest(&c, 3205);
	struct uf_feed_stats st;
	uf_feed_stats_read(c.s, &st);
	assert_int_equal(st.gaps_unrecovered, 0); /* the age trigger came first */
	assert_int_equal(st.snapshots_loaded, 1);
	assert_int_equal(st.messages, 3000 + (g_n + 1 - K));
	ts_expect_books(&c);
	ts_glimpse_stop(&g);
	close(mute);
	ts_end(&c);
}

/* ---- a server that dies mid-snapshot, mid-day ---- */

static void test_snapshot_dying_mid_snapshot_flags_books_stale_and_retries(void **state)
{
	struct ts_case c;
	struct ts_glimpse g;
	ts_glimpse_start(&g, 9000);
	g.die_after_body = 1;
	ts_config(&c.cfg, 6, g.port);
	c.cfg.snapshot.on_start = 0;
	c.cfg.snapshot.max_gap_messages = 1000;
	c.cfg.snapshot.timeout_ms = 500;
	ts_start_live_to_3000(&c);
	ts_send_range(&c, 3, 6000, 10001); /* a hole of 3000: loads; the server dies in it */
	assert_int_equal(ts_wait_ge(&c.s->snapshot_failures, 1, TS_WAIT_MS), 0);
	/* the books were reset for the snapshot: what 1..3000 had built is gone, and said so;
	 * the books being known wrong, a new attempt follows the back-off (refused: counted) */
	assert_int_equal(ts_wait_ge(&c.s->snapshot_failures, 2, TS_WAIT_MS), 0);
	assert_int_equal(uf_load_relaxed_u64(&c.s->snapshots_loaded), 0);
	uf_consumer_t *cons = ft_attach_oldest(c.cfg.ring.name);
	struct uf_record r;
	uint64_t seq;
	int reset_gap = 0;
	uint64_t stale_after = 0, after = 0;
	while (uf_consumer_next(cons, &r, &seq) == 0) {
		if (r.kind == UF_REC_GAP && r.feed_seq == 1 && r.shares == 3000)
			reset_gap = 1;
		else if (reset_gap && r.kind == UF_REC_LEVEL) {
			after++;
			stale_after += (r.flags & UF_RECF_STALE) != 0;
		}
	}
	uf_consumer_detach(cons);
	assert_true(reset_gap);
	assert_true(after > 0); /* the stream went on (packets from 6000, the hole given up) */
	assert_int_equal(stale_after, after);
	ts_glimpse_stop(&g);
	ts_end(&c);
}

/* ---- the server down ---- */

static void test_snapshot_server_down_is_retried_counted_and_books_flagged_stale(void **state)
{
	struct ts_case c;
	uint16_t port;
	int dead = ts_tcp_bound(&port, 0); /* bound, not listening: connections refused */
	ts_config(&c.cfg, 2, port);
	c.cfg.snapshot.timeout_ms = 300;
	ts_create(&c);
	ts_run(&c);
	assert_int_equal(ts_wait_ge(&c.s->snapshot_failures, 1, TS_WAIT_MS), 0);
	assert_int_equal(uf_load_relaxed_u64(&c.s->snapshot_in_progress), 0);
	/* Late start without a snapshot and without a re-request server: 1..1000 are lost. */
	ts_send_rest(&c, 1001);
	/* The given-up hole makes the books stale, which asks for a snapshot again: attempted
	 * after the back-off, failed, counted. */
	assert_int_equal(ts_wait_ge(&c.s->snapshot_failures, 2, TS_WAIT_MS), 0);
	struct uf_feed_stats st;
	uf_feed_stats_read(c.s, &st);
	assert_int_equal(st.snapshots_loaded, 0);
	assert_int_equal(st.messages_unrecovered, 1000);
	assert_int_equal(st.messages, g_n - 1000);
	assert_true(st.snapshot_failures <= 3); /* back-off: 1 s, then 2 s */
	/* Stale in the stream: the GAP record, then every book record flagged STALE. */
	uf_consumer_t *cons = ft_attach_oldest(c.cfg.ring.name);
	struct uf_record r;
	uint64_t seq;
	uint64_t gaps = 0, after = 0, stale = 0;
	while (uf_consumer_next(cons, &r, &seq) == 0) {
		if (r.kind == UF_REC_GAP) {
			gaps++;
			assert_int_equal(r.feed_seq, 1);
			assert_int_equal(r.shares, 1000);
		} else if (gaps && r.kind == UF_REC_LEVEL) {
			after++;
			stale += (r.flags & UF_RECF_STALE) != 0;
		}
	}
	uf_consumer_detach(cons);
	assert_int_equal(gaps, 1);
	assert_true(after > 1000);
	assert_int_equal(stale, after);
	close(dead);
	ts_end(&c);
}

/* ---- late start and restart against uf-replay ---- */

/* Starts argv[0] with stdout to /dev/null and stderr to `err_path`. */
static pid_t ts_spawn_err(char *const argv[], const char *err_path)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", ft_bin_dir(), argv[0]);
	pid_t pid = uf_test_fork();
	if (pid == 0) {
		int fd = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int nul = open("/dev/null", O_WRONLY);
		if (fd >= 0)
			dup2(fd, 2);
		if (nul >= 0)
			dup2(nul, 1);
		execv(path, argv);
		_exit(127);
	}
	return pid;
}

/* The port uf-replay's snapshot server printed on stderr (bounded wait). */
static uint16_t ts_snapshot_port(const char *err_path)
{
	uint64_t end = ts_now_ms() + TS_WAIT_MS;
	while (ts_now_ms() < end) {
		FILE *f = fopen(err_path, "r");
		char line[256];
		while (f && fgets(line, sizeof(line), f)) {
			const char *p = strstr(line, "snapshot server listening on 127.0.0.1:");
			if (p)
				return (uint16_t)atoi(p + strlen("snapshot server listening on "
				                                 "127.0.0.1:"));
		}
		if (f)
			fclose(f);
		ts_nap();
	}
	fail_msg("uf-replay printed no snapshot port (%s)", err_path);
	return 0;
}

/* Waits until line `l` of case config `cfg` carried a packet reaching sequence `seq`
 * (a receiver of our own on the group). */
static void ts_wait_wire(const struct uf_feed_config *cfg, uint64_t seq)
{
	char err[200];
	int fd = uf_mcast_open_rx(cfg->lines[0].group, cfg->lines[0].port, cfg->lines[0].interface,
	                          1 << 20, err, sizeof(err));
	if (fd < 0)
		fail_msg("receiver: %s", err);
	uint64_t end = ts_now_ms() + TS_WAIT_MS;
	uint8_t buf[2048];
	for (;;) {
		assert_true(ts_now_ms() < end);
		struct pollfd pfd = {fd, POLLIN, 0};
		if (poll(&pfd, 1, 100) != 1)
			continue;
		ssize_t r = recv(fd, buf, sizeof(buf), 0);
		if (r >= 20 && uf_be64(buf + 10) + uf_be16(buf + 18) >= seq)
			break;
	}
	close(fd);
}

static pid_t ts_replay(const struct uf_feed_config *cfg, int sc, const char *rate, char *err_path,
                       size_t len)
{
	char a[64], b[64], ga[INET_ADDRSTRLEN], gb[INET_ADDRSTRLEN], rr[16];
	inet_ntop(AF_INET, &cfg->lines[0].group, ga, sizeof(ga));
	inet_ntop(AF_INET, &cfg->lines[1].group, gb, sizeof(gb));
	snprintf(a, sizeof(a), "%s:%u", ga, cfg->lines[0].port);
	snprintf(b, sizeof(b), "%s:%u", gb, cfg->lines[1].port);
	snprintf(rr, sizeof(rr), "%u", cfg->lines[0].port + 5);
	snprintf(err_path, len, "%s/replay-%d-%d.err", ft_tmpdir(), (int)FT_BACKEND, sc);
	char *argv[] = {"uf-replay",
	                "--in",
	                g_day,
	                "--a",
	                a,
	                "--b",
	                b,
	                "--interface",
	                "127.0.0.1",
	                "--rate",
	                (char *)rate,
	                "--drop-a",
	                "0.01",
	                "--drop-b",
	                "0.01",
	                "--seed",
	                "7",
	                "--session",
	                TS_SESSION,
	                "--serve-rerequests",
	                rr,
	                "--serve-snapshot",
	                "0",
	                "--linger",
	                "3",
	                NULL};
	pid_t pid = ts_spawn_err(argv, err_path);
	assert_true(pid > 0);
	return pid;
}

static void test_snapshot_late_start_gives_the_files_books(void **state)
{
	struct ts_case c;
	char err_path[256];
	ts_config(&c.cfg, 3, 0);
	pid_t rp = ts_replay(&c.cfg, 3, "8000", err_path, sizeof(err_path));
	uint16_t port = ts_snapshot_port(err_path);
	ts_wait_wire(&c.cfg, g_n / 2); /* half the day is on the wire */
	c.cfg.snapshot.server.sin_port = htons(port);
	c.cfg.recovery.enabled = 1; /* 1% loss per line after the snapshot: re-requests */
	c.cfg.recovery.server.sin_family = AF_INET;
	c.cfg.recovery.server.sin_port = htons(c.cfg.lines[0].port + 5);
	inet_pton(AF_INET, "127.0.0.1", &c.cfg.recovery.server.sin_addr);
	c.cfg.recovery.max_count = 1000;
	c.cfg.recovery.timeout_ms = 50;
	c.cfg.recovery.retries = 5;
	c.cfg.recovery.wait_packets = 64; /* 0 would be "no wait" (uf_feed_config.h) */
	c.cfg.recovery.max_requests_per_s = 1000;
	ts_create(&c);
	ts_run(&c);
	assert_int_equal(ts_wait_ge(&c.s->end_of_session, 1, TS_WAIT_MS), 0);
	assert_int_equal(ft_snap_wait_settled(c.s, TS_WAIT_MS), 0);
	struct uf_feed_stats st;
	uf_feed_stats_read(c.s, &st);
	/* The server snapshots a running day: its End of Snapshot can fall where the live orders
	 * place it only within a range, and the feed then loads again (ft_snap_settled.h). Every
	 * load beyond the first is such a re-load. */
	assert_int_equal(st.snapshots_loaded, 1 + st.snapshot_reloads);
	assert_true(st.snapshot_reloads <= c.cfg.snapshot.reload_uncertain);
	assert_int_equal(st.messages_unrecovered, 0);
	assert_true(st.messages < g_n / 2 + 1); /* the first half came from the snapshot */
	ts_expect_books(&c);
	kill(rp, SIGTERM);
	ft_wait(rp, 10000);
	ts_end(&c);
}

static pid_t g_daemon; /* killed by the case teardown when a case fails */

static pid_t ts_daemon_start(const char *cfg_path, const char *ring, int idx)
{
	char out[256];
	snprintf(out, sizeof(out), "%s/uringfeed-%d-%d.err", ft_tmpdir(), (int)FT_BACKEND, idx);
	char *argv[] = {"uringfeed", "--config", (char *)cfg_path, NULL};
	pid_t pid = ts_spawn_err(argv, out);
	assert_true(pid > 0);
	g_daemon = pid;
	/* Running once its ring is there (a fresh one: the generation changes). */
	char err[256];
	uint64_t end = ts_now_ms() + TS_WAIT_MS;
	for (;;) {
		uf_consumer_t *cons;
		if (uf_consumer_attach(ring, NULL, &cons, err, sizeof(err)) == 0) {
			struct uf_consumer_info info;
			uf_consumer_get_info(cons, &info);
			uf_consumer_detach(cons);
			if (info.producer_pid == pid && info.producer_alive)
				return pid;
		}
		if (waitpid(pid, NULL, WNOHANG) == pid)
			fail_msg("uringfeed exited early (see %s)", out);
		assert_true(ts_now_ms() < end);
		ts_nap();
	}
}

/* The port a daemon logged as "`prefix`<port>" in `path` (waits up to TS_WAIT_MS). */
static uint16_t ts_log_port(const char *path, const char *prefix)
{
	static char text[1 << 16];
	uint64_t end = ts_now_ms() + TS_WAIT_MS;
	do {
		FILE *f = fopen(path, "r");
		size_t n = f ? fread(text, 1, sizeof(text) - 1, f) : 0;
		if (f)
			fclose(f);
		text[n] = '\0';
		const char *p = strstr(text, prefix);
		if (p)
			return (uint16_t)atoi(p + strlen(prefix));
		ts_nap();
	} while (ts_now_ms() < end);
	fail_msg("%s never said \"%s\"", path, prefix);
	return 0;
}

/* The daemon's /status body (ft_snap_wait_settled_status), NULL when not 200. */
static const char *ts_status_get(void *ctx)
{
	const char *body;
	return uf_test_http_get(*(const uint16_t *)ctx, "/status", &body) == 200 ? body : NULL;
}

static void test_snapshot_restart_after_sigkill_gives_the_files_books(void **state)
{
	struct ts_case c;
	char err_path[256], cfg_path[256], ring[32], ga[INET_ADDRSTRLEN], gb[INET_ADDRSTRLEN];
	ts_config(&c.cfg, 4, 0);
	snprintf(ring, sizeof(ring), "utr%d_%d", (int)FT_BACKEND, (int)getpid());
	pid_t rp = ts_replay(&c.cfg, 4, "6000", err_path, sizeof(err_path));
	uint16_t port = ts_snapshot_port(err_path);
	inet_ntop(AF_INET, &c.cfg.lines[0].group, ga, sizeof(ga));
	inet_ntop(AF_INET, &c.cfg.lines[1].group, gb, sizeof(gb));
	snprintf(cfg_path, sizeof(cfg_path), "%s/restart-%d.json", ft_tmpdir(), (int)FT_BACKEND);
	FILE *f = fopen(cfg_path, "w");
	assert_non_null(f);
	fprintf(
	    f,
	    "{\"status\":{\"listen\":\"127.0.0.1:0\"},\"log\":{\"level\":\"info\"},"
	    "\"feeds\":[{"
	    "\"name\":\"tr\",\"backend\":\"%s\",\"sqpoll_idle_ms\":10,"
	    "\"lines\":[{\"name\":\"A\",\"group\":\"%s\",\"port\":%u,\"interface\":\"127.0.0.1\"},"
	    "{\"name\":\"B\",\"group\":\"%s\",\"port\":%u,\"interface\":\"127.0.0.1\"}],"
	    "\"recovery\":{\"server\":\"127.0.0.1:%u\"},"
	    "\"snapshot\":{\"server\":\"127.0.0.1:%u\",\"username\":\"replay\","
	    "\"password\":\"replay\"},"
	    "\"ring\":{\"name\":\"%s\",\"capacity\":1048576},"
	    "\"book\":{\"depth\":%d,\"max_orders\":1000000,\"max_instruments\":1024}}]}\n",
	    uf_backend_name(FT_BACKEND), ga, c.cfg.lines[0].port, gb, c.cfg.lines[1].port,
	    c.cfg.lines[0].port + 5, port, ring, TS_DEPTH);
	fclose(f);
	ts_daemon_start(cfg_path, ring, 0);
	char err[256];
	uf_consumer_t *cons;
	if (uf_consumer_attach(ring, NULL, &cons, err, sizeof(err)) < 0)
		fail_msg("attach: %s", err);
	struct uf_consumer_info before;
	uf_consumer_get_info(cons, &before);
	ts_wait_wire(&c.cfg, g_n / 3);
	kill(g_daemon, SIGKILL); /* mid-day, no goodbye */
	assert_int_equal(ft_wait(g_daemon, 5000), -1);
	ts_wait_wire(&c.cfg, g_n / 2);
	pid_t d2 = ts_daemon_start(cfg_path, ring, 1);
	/* The consumer attached across the restart: -ESTALE, then re-attach. */
	struct uf_record r;
	uint64_t seq;
	int rc, estale = 0;
	uint64_t end = ts_now_ms() + TS_WAIT_MS;
	while (!estale && ts_now_ms() < end) {
		rc = uf_consumer_next(cons, &r, &seq);
		if (rc == -ESTALE)
			estale = 1;
		else if (rc == -EAGAIN || rc == -EPIPE)
			uf_consumer_wait(cons, 50000000); /* its sleep slices look for a restart */
		else if (rc != 0 && rc != -EOVERFLOW)
			fail_msg("uf_consumer_next: %d", rc);
	}
	assert_true(estale);
	assert_int_equal(uf_consumer_reattach(cons, err, sizeof(err)), 0);
	struct uf_consumer_info after;
	uf_consumer_get_info(cons, &after);
	assert_true(after.generation > before.generation);
	/* uf-replay ends the day and lingers 3 s for re-requests; then the books are final once
	 * the daemon's snapshot settled (a re-load of books a load flagged uncertain is over). */
	assert_int_equal(ft_wait(rp, 60000), 0);
	char log2[256], line[512];
	snprintf(log2, sizeof(log2), "%s/uringfeed-%d-1.err", ft_tmpdir(), (int)FT_BACKEND);
	uint16_t sport = ts_log_port(log2, "serving http://127.0.0.1:");
	struct ft_snap_settle set = {0, 0, 0};
	assert_int_equal(ft_snap_wait_settled_status(ts_status_get, &sport,
	                                             UF_FEED_DEFAULT_SNAPSHOT_RELOAD_UNCERTAIN,
	                                             3 * TS_WAIT_MS, &set),
	                 0);
	int stale = -1;
	char *got = ft_consumer_books(cons, &stale);
	if (strcmp(got, g_ref_books) != 0) {
		fprintf(stderr, "after restart:\n%.1200s\nfile:\n%.1200s\n", got, g_ref_books);
		fail_msg("books after the restart differ from the file's");
	}
	free(got);
	uf_consumer_detach(cons);
	/* ... by the snapshot, not by re-requesting the first half of the day */
	FILE *lf = fopen(log2, "r");
	assert_non_null(lf);
	int loaded = 0;
	while (fgets(line, sizeof(line), lf))
		loaded |= strstr(line, "snapshot loaded") != NULL;
	fclose(lf);
	assert_true(loaded);
	/* none stale: a load that flagged books was re-loaded (unless the re-loads ran out) */
	assert_true(ft_snap_stale_ok(&set, stale));
	kill(d2, SIGTERM);
	assert_int_equal(ft_wait(d2, 10000), 0);
	g_daemon = 0;
	char p[300];
	snprintf(p, sizeof(p), "%s/uf.%s", ft_use_ring_dir(), ring);
	ft_rm_dir(p);
}

static int ts_case_teardown(void **s)
{
	if (g_daemon > 0) {
		kill(g_daemon, SIGKILL);
		ft_wait(g_daemon, 5000);
	}
	g_daemon = 0;
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_snapshot_merge_with_live_packets_before_across_and_after),
	    cmocka_unit_test(test_snapshot_gap_too_large_loads_a_snapshot),
	    cmocka_unit_test(test_snapshot_numbers_padded_on_the_right_load),
	    cmocka_unit_test(test_snapshot_gap_too_old_loads_a_snapshot),
	    cmocka_unit_test(test_snapshot_dying_mid_snapshot_flags_books_stale_and_retries),
	    cmocka_unit_test(test_snapshot_server_down_is_retried_counted_and_books_flagged_stale),
	    cmocka_unit_test(test_snapshot_late_start_gives_the_files_books),
	    cmocka_unit_test_teardown(test_snapshot_restart_after_sigkill_gives_the_files_books,
	                              ts_case_teardown),
	};
	return cmocka_run_group_tests(tests, ts_setup, ts_teardown);
}
