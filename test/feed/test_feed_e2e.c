/* End-to-end feed tests over loopback multicast, one executable per receive back end
 * (FT_BACKEND): a feed thread runs uf_feed_run() in this process; uf-replay (child process)
 * sends a generated day to its A and B groups with injected faults and serves re-requests;
 * the books and the record stream read back through libufconsumer must equal the file
 * applied directly (ft_reference.c). Each case uses its own groups, ports and ring, so
 * concurrent tests cannot collide. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "common/uf_endian.h"
#include "feed/mcast.h"
#include "feed/uf_feed.h"
#include "ring/uf_ring.h"
#include "ring/ufconsumer.h"
#include "feed_test_util.h"

#ifndef FT_BACKEND
#error "FT_BACKEND must name the receive back end under test"
#endif

#define FT_MESSAGES 60000
#define FT_SYMBOLS 24
#define FT_DEPTH 10
#define FT_RATE "150000"          /* messages/s: moderate, so a shared 2-CPU box keeps up */
#define FT_DONE_TIMEOUT_MS 30000  /* a case that is not done by then fails */

static char g_day[256];
static char *g_ref_books;
static struct uf_record *g_ref_recs;
static size_t g_ref_nrecs;
static uint64_t g_ref_msgs;

struct ft_case {
	struct uf_feed_config cfg;
	struct uf_feed *feed;
	pthread_t thr;
	volatile int stop;
	int run_rc;
	pid_t replay;
	char replay_out[256];
	struct uf_feed_stats st; /* copy taken at the end */
	char books[1]; /* unused */
};

static void *ft_feed_thread(void *arg)
{
	struct ft_case *c = arg;
	c->run_rc = uf_feed_run(c->feed, &c->stop);
	if (c->run_rc < 0)
		fprintf(stderr, "uf_feed_run: %s\n", uf_feed_error(c->feed));
	return NULL;
}

/* Feed configuration of case `sc`: lines 239.77.<backend>.<2sc>/<2sc+1>, ports
 * 41000 + 100 * backend + 10 * sc (+1 B, +5 request server). */
static void ft_config(struct uf_feed_config *cfg, int sc, int with_recovery)
{
	memset(cfg, 0, sizeof(*cfg));
	snprintf(cfg->name, sizeof(cfg->name), "ft%d", sc);
	snprintf(cfg->protocol, sizeof(cfg->protocol), "itch50-moldudp64");
	cfg->backend = FT_BACKEND;
	cfg->cpu = -1;
	cfg->sqpoll_cpu = -1;
	cfg->sqpoll_idle_ms = 10; /* short: the SQ thread is asleep when a case's traffic starts */
	cfg->numa_node = -1;
	cfg->nlines = 2;
	for (int l = 0; l < 2; l++) {
		struct uf_line_config *lc = &cfg->lines[l];
		snprintf(lc->name, sizeof(lc->name), "%c", 'A' + l);
		char g[32];
		snprintf(g, sizeof(g), "239.77.%d.%d", (int)FT_BACKEND, sc * 2 + l);
		inet_pton(AF_INET, g, &lc->group);
		lc->port = (uint16_t)(41000 + 100 * (int)FT_BACKEND + 10 * sc + l);
		inet_pton(AF_INET, "127.0.0.1", &lc->interface);
	}
	cfg->recovery.enabled = with_recovery;
	cfg->recovery.server.sin_family = AF_INET;
	cfg->recovery.server.sin_port = htons((uint16_t)(41000 + 100 * (int)FT_BACKEND + 10 * sc + 5));
	inet_pton(AF_INET, "127.0.0.1", &cfg->recovery.server.sin_addr);
	cfg->recovery.max_count = 1000;
	cfg->recovery.timeout_ms = 50;
	cfg->recovery.retries = 5;
	/* generous: on a loaded 2-CPU box the other line's copy can sit in a softirq backlog */
	cfg->recovery.wait_ms = 20;
	cfg->recovery.wait_packets = 64;
	cfg->recovery.queue_packets = 16384;
	cfg->recovery.max_requests_per_s = 1000;
	snprintf(cfg->ring.name, sizeof(cfg->ring.name), "uft%d_%d_%d", (int)FT_BACKEND, sc,
		 (int)getpid());
	cfg->ring.capacity = 1 << 20;
	cfg->ring.mode = 0600;
	cfg->book.depth = FT_DEPTH;
	cfg->book.max_orders = 1 << 20;
	cfg->book.max_instruments = 1024;
	cfg->buffers.count = 4096;
	cfg->buffers.size = 2048;
}

static void ft_start(struct ft_case *c, int sc, int with_recovery)
{
	char err[256];
	ft_config(&c->cfg, sc, with_recovery);
	int rc = uf_feed_create(&c->cfg, &c->feed, err, sizeof(err));
	if (rc < 0)
		fail_msg("uf_feed_create: %s", err);
	c->stop = 0;
	assert_int_equal(pthread_create(&c->thr, NULL, ft_feed_thread, c), 0);
}

/* Starts uf-replay for case `sc` with extra arguments (NULL-terminated list). */
static void ft_replay(struct ft_case *c, int sc, int serve, const char *extra, ...)
{
	char a[64], b[64], port[16];
	const struct uf_line_config *l = c->cfg.lines;
	char ga[INET_ADDRSTRLEN], gb[INET_ADDRSTRLEN];
	inet_ntop(AF_INET, &l[0].group, ga, sizeof(ga));
	inet_ntop(AF_INET, &l[1].group, gb, sizeof(gb));
	snprintf(a, sizeof(a), "%s:%u", ga, l[0].port);
	snprintf(b, sizeof(b), "%s:%u", gb, l[1].port);
	snprintf(port, sizeof(port), "%u", ntohs(c->cfg.recovery.server.sin_port));
	char *argv[40] = { "uf-replay", "--in", g_day, "--a", a, "--b", b, "--interface",
			   "127.0.0.1", "--rate", FT_RATE, "--seed", "42", NULL };
	int n = 13;
	if (serve) {
		argv[n++] = "--serve-rerequests";
		argv[n++] = port;
		argv[n++] = "--linger";
		argv[n++] = "20";
	}
	va_list ap;
	va_start(ap, extra);
	for (const char *s = extra; s && n < 38; s = va_arg(ap, const char *))
		argv[n++] = (char *)s;
	va_end(ap);
	argv[n] = NULL;
	snprintf(c->replay_out, sizeof(c->replay_out), "%s/replay-%d-%d.json", ft_tmpdir(),
		 (int)FT_BACKEND, sc);
	c->replay = ft_spawn(argv, c->replay_out);
	assert_true(c->replay > 0);
}

/* Waits (bounded) until the feed has accounted for every message and the end of session. */
static int ft_wait_done(struct ft_case *c)
{
	uint64_t end = uf_now_mono_ns() + (uint64_t)FT_DONE_TIMEOUT_MS * 1000000u;
	const struct uf_feed_stats *s = uf_feed_stats(c->feed);
	while (uf_now_mono_ns() < end) {
		if (uf_load_relaxed_u64(&s->end_of_session) >= 1 &&
		    uf_load_relaxed_u64(&s->messages) + uf_load_relaxed_u64(&s->messages_unrecovered) >=
			    g_ref_msgs)
			return 0;
		struct timespec ts = { 0, 2000000 };
		nanosleep(&ts, NULL);
	}
	uf_feed_stats_read(s, &c->st);
	fprintf(stderr, "not done: messages %llu unrecovered %llu eos %llu of %llu\n",
		(unsigned long long)c->st.messages, (unsigned long long)c->st.messages_unrecovered,
		(unsigned long long)c->st.end_of_session, (unsigned long long)g_ref_msgs);
	return -1;
}

struct ft_books_ctx {
	struct ft_book *v;
	size_t n, cap;
	int stale;
};

static int ft_book_cb(const struct uf_book_snapshot *s, void *arg)
{
	struct ft_books_ctx *x = arg;
	if (s->flags & UF_RECF_STALE)
		x->stale++;
	if (s->nbid == 0 && s->nask == 0)
		return 0;
	if (x->n == x->cap) {
		x->cap = x->cap ? x->cap * 2 : 64;
		x->v = realloc(x->v, x->cap * sizeof(*x->v));
	}
	struct ft_buf line = { 0 };
	int64_t px[UF_BOOK_MAX_DEPTH];
	uint64_t sh[UF_BOOK_MAX_DEPTH];
	uint32_t od[UF_BOOK_MAX_DEPTH];
	ft_buf_add(&line, "{\"symbol\":\"%s\",", s->symbol[0] ? s->symbol : "?");
	for (uint32_t i = 0; i < s->nbid; i++) {
		px[i] = s->bid[i].price;
		sh[i] = s->bid[i].shares;
		od[i] = s->bid[i].orders;
	}
	ft_side(&line, "bid", px, sh, od, s->nbid);
	ft_buf_add(&line, ",");
	for (uint32_t i = 0; i < s->nask; i++) {
		px[i] = s->ask[i].price;
		sh[i] = s->ask[i].shares;
		od[i] = s->ask[i].orders;
	}
	ft_side(&line, "ask", px, sh, od, s->nask);
	ft_buf_add(&line, "}");
	snprintf(x->v[x->n].symbol, sizeof(x->v[x->n].symbol), "%s", s->symbol);
	x->v[x->n++].line = line.p;
	return 0;
}

/* The feed's books from the book image, in the uf-decode books format. */
static char *ft_feed_books(const char *ring, int *stale)
{
	char err[256];
	uf_consumer_t *cons;
	int rc = uf_consumer_attach(ring, NULL, &cons, err, sizeof(err));
	if (rc < 0)
		fail_msg("attach %s: %s", ring, err);
	struct ft_books_ctx x = { 0 };
	assert_int_equal(uf_consumer_snapshot_all(cons, ft_book_cb, &x), 0);
	uf_consumer_detach(cons);
	if (stale)
		*stale = x.stale;
	char *s = ft_books_join(x.v, x.n);
	free(x.v);
	return s;
}

/* Reads every record of the ring (from the oldest) and compares it with the reference
 * stream, field by field, except receive and publish times. Returns gap records seen. */
static size_t ft_check_stream(const char *ring, int expect_identical)
{
	char err[256];
	struct uf_consumer_options o;
	uf_consumer_options_init(&o);
	o.start = UF_CONSUMER_START_OLDEST;
	uf_consumer_t *cons;
	if (uf_consumer_attach(ring, &o, &cons, err, sizeof(err)) < 0)
		fail_msg("attach %s: %s", ring, err);
	struct uf_record r;
	uint64_t seq;
	size_t i = 0, gaps = 0;
	for (;;) {
		int rc = uf_consumer_next(cons, &r, &seq);
		if (rc == -EAGAIN || rc == -EPIPE)
			break;
		assert_int_equal(rc, 0);
		if (r.kind == UF_REC_GAP) {
			gaps++;
			continue;
		}
		if (!expect_identical)
			continue;
		assert_true(i < g_ref_nrecs);
		const struct uf_record *e = &g_ref_recs[i];
		if (r.kind != e->kind || r.side != e->side || r.flags != e->flags ||
		    r.instrument != e->instrument || r.price != e->price || r.shares != e->shares ||
		    r.aux != e->aux || r.ref != e->ref || r.exch_ts != e->exch_ts ||
		    r.feed_seq != e->feed_seq)
			fail_msg("record %zu differs: kind %u/%u seq %llu/%llu price %lld/%lld shares "
				 "%llu/%llu flags %u/%u", i, r.kind, e->kind,
				 (unsigned long long)r.feed_seq, (unsigned long long)e->feed_seq,
				 (long long)r.price, (long long)e->price, (unsigned long long)r.shares,
				 (unsigned long long)e->shares, r.flags, e->flags);
		i++;
	}
	uf_consumer_detach(cons);
	if (expect_identical)
		assert_int_equal(i, g_ref_nrecs);
	return gaps;
}

static void ft_finish(struct ft_case *c)
{
	c->stop = 1;
	pthread_join(c->thr, NULL);
	assert_int_equal(c->run_rc, 0);
	uf_feed_stats_read(uf_feed_stats(c->feed), &c->st);
	if (c->replay > 0) {
		kill(c->replay, SIGTERM); /* it lingers to serve re-requests */
		assert_int_equal(ft_wait(c->replay, 10000), 0);
	}
	uf_feed_destroy(c->feed);
	uf_ring_unlink(c->cfg.ring.name, NULL);
	fprintf(stderr, "[%s] packets %llu msgs %llu winsA %llu winsB %llu dupA %llu dupB %llu "
		"gaps %llu filled_by_line %llu rereq %llu recovered %llu unrecovered %llu "
		"rearms %llu cq_overflows %llu p50 %llu p99 %llu max %llu ns\n",
		uf_backend_name(FT_BACKEND), (unsigned long long)c->st.packets,
		(unsigned long long)c->st.messages, (unsigned long long)c->st.lines[0].wins,
		(unsigned long long)c->st.lines[1].wins, (unsigned long long)c->st.lines[0].duplicates,
		(unsigned long long)c->st.lines[1].duplicates, (unsigned long long)c->st.gaps,
		(unsigned long long)c->st.gaps_filled_by_line, (unsigned long long)c->st.rerequests,
		(unsigned long long)c->st.recovered_messages,
		(unsigned long long)c->st.messages_unrecovered,
		(unsigned long long)(c->st.lines[0].rearms + c->st.lines[1].rearms),
		(unsigned long long)c->st.cq_overflows,
		(unsigned long long)uf_lat_quantile(&c->st.latency, 0.5),
		(unsigned long long)uf_lat_quantile(&c->st.latency, 0.99),
		(unsigned long long)c->st.latency.max_ns);
}

/* Common end of the cases whose books must come out identical. */
static void ft_expect_identical(struct ft_case *c)
{
	assert_int_equal(ft_wait_done(c), 0);
	int stale = 0;
	char *books = ft_feed_books(c->cfg.ring.name, &stale);
	if (strcmp(books, g_ref_books) != 0) {
		fprintf(stderr, "feed books:\n%.2000s\nreference books:\n%.2000s\n", books, g_ref_books);
		fail_msg("books differ from the file's");
	}
	free(books);
	assert_int_equal(stale, 0);
	assert_int_equal(ft_check_stream(c->cfg.ring.name, 1), 0);
	ft_finish(c);
	assert_int_equal(c->st.messages, g_ref_msgs);
	assert_int_equal(c->st.messages_unrecovered, 0);
	assert_int_equal(c->st.gaps_unrecovered, 0);
	assert_int_equal(c->st.end_of_session, 1);
	assert_int_equal(c->st.sessions, 1);
	assert_int_equal(c->st.book_integrity_errors, 0);
	assert_true(c->st.latency.count > 0);
}

static void test_feed_clean_day_gives_identical_books(void **state)
{
	struct ft_case c = { 0 };
	ft_start(&c, 0, 1);
	struct timespec idle = { 0, 100000000 };
	nanosleep(&idle, NULL); /* io_uring: past sqpoll_idle_ms, traffic must wake it */
	ft_replay(&c, 0, 1, NULL);
	ft_expect_identical(&c);
	assert_int_equal(c.st.gaps, 0);
	assert_int_equal(c.st.rerequests, 0);
	assert_true(c.st.lines[0].wins + c.st.lines[1].wins > 0);
	/* every packet came twice: exactly one copy of each was a duplicate */
	assert_int_equal(c.st.lines[0].wins + c.st.lines[1].wins,
			 c.st.lines[0].duplicates + c.st.lines[1].duplicates);
}

static void test_feed_loss_on_a_only_needs_no_rerequest(void **state)
{
	struct ft_case c = { 0 };
	char err[256];
	ft_config(&c.cfg, 1, 1);
	/* Only "line B moved 64 packets past the hole" may trigger a re-request here: on a
	 * loaded 2-CPU box a B copy can sit in a softirq backlog for tens of ms, which a timer
	 * would misread as loss on both lines. */
	c.cfg.recovery.wait_ms = 10000;
	if (uf_feed_create(&c.cfg, &c.feed, err, sizeof(err)) < 0)
		fail_msg("uf_feed_create: %s", err);
	assert_int_equal(pthread_create(&c.thr, NULL, ft_feed_thread, &c), 0);
	ft_replay(&c, 1, 1, "--drop-a", "0.10", NULL);
	ft_expect_identical(&c);
	assert_true(c.st.lines[0].gap_messages > 0); /* line A's own losses are visible */
	if (c.st.lines[1].gap_messages == 0) {
		assert_int_equal(c.st.rerequests, 0);
		assert_int_equal(c.st.recovered_messages, 0);
	} else {
		/* the host itself dropped some of B's copies (backlog/socket overflow): recovery
		 * had to step in, and the books above are identical anyway */
		fprintf(stderr, "note: line B lost %llu messages on this host; %llu re-requests\n",
			(unsigned long long)c.st.lines[1].gap_messages,
			(unsigned long long)c.st.rerequests);
	}
	assert_true(c.st.lines[1].wins > c.st.lines[0].wins / 20);
}

static void test_feed_loss_on_both_lines_recovers_by_rerequest(void **state)
{
	struct ft_case c = { 0 };
	ft_start(&c, 2, 1);
	ft_replay(&c, 2, 1, "--drop-a", "0.05", "--drop-b", "0.05", NULL);
	ft_expect_identical(&c);
	assert_true(c.st.gaps > 0);
	assert_true(c.st.rerequests > 0);
	assert_true(c.st.recovered_messages > 0);
	assert_true(c.st.recovery_packets > 0);
}

static void test_feed_dead_server_flags_gap_and_keeps_running(void **state)
{
	struct ft_case c = { 0 };
	ft_start(&c, 3, 1); /* a request server is configured, but nobody answers */
	/* the packets holding sequence 3000 are lost on both lines */
	ft_replay(&c, 3, 0, "--drop-a", "@3000", "--drop-b", "@3000", NULL);
	assert_int_equal(ft_wait_done(&c), 0);
	int stale = 0;
	char *books = ft_feed_books(c.cfg.ring.name, &stale);
	free(books);
	assert_true(stale > 0); /* the books say they may be wrong */
	assert_int_equal(ft_check_stream(c.cfg.ring.name, 0), 1); /* one gap marker published */
	ft_finish(&c);
	assert_int_equal(c.st.gaps_unrecovered, 1);
	assert_true(c.st.messages_unrecovered > 0);
	assert_int_equal(c.st.messages + c.st.messages_unrecovered, g_ref_msgs);
	assert_true(c.st.rerequests >= 1); /* it tried, retried, then gave up */
	assert_true(c.st.rerequest_timeouts >= 1);
	assert_int_equal(c.st.end_of_session, 1); /* and went on to the end of the day */
	fprintf(stderr, "book integrity errors after the gap: %llu\n",
		(unsigned long long)c.st.book_integrity_errors);
	assert_true(c.st.book_integrity_errors > 0); /* later messages hit the lost orders */
}

static void test_feed_duplicates_and_reordering_change_nothing(void **state)
{
	struct ft_case c = { 0 };
	ft_start(&c, 4, 1);
	ft_replay(&c, 4, 1, "--dup", "0.10", "--reorder", "0.10", NULL);
	ft_expect_identical(&c);
	assert_true(c.st.lines[0].duplicates + c.st.lines[1].duplicates >
		    c.st.lines[0].wins + c.st.lines[1].wins);
}

/* Impossible configurations fail at create with a message that names the culprit. */
static void test_feed_create_says_what_is_wrong(void **state)
{
	struct uf_feed_config cfg;
	struct uf_feed *f = NULL;
	char err[256];
	ft_config(&cfg, 10, 1);
	inet_pton(AF_INET, "10.250.250.250", &cfg.lines[1].interface); /* not on this host */
	assert_true(uf_feed_create(&cfg, &f, err, sizeof(err)) < 0);
	assert_null(f);
	assert_non_null(strstr(err, "line B"));
	assert_non_null(strstr(err, "10.250.250.250"));
	ft_config(&cfg, 10, 1);
	cfg.nlines = 3;
	assert_int_equal(uf_feed_create(&cfg, &f, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "lines"));
	ft_config(&cfg, 10, 1);
	cfg.ring.capacity = 1000; /* not a power of two */
	assert_true(uf_feed_create(&cfg, &f, err, sizeof(err)) < 0);
	assert_non_null(strstr(err, "ring"));
	ft_config(&cfg, 10, 1);
	char bad[1][9] = { "TOOLONGSY" }; /* 9 bytes, no terminator */
	cfg.symbols = bad;
	cfg.nsymbols = 1;
	assert_int_equal(uf_feed_create(&cfg, &f, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "symbol"));
	enum uf_backend b;
	assert_int_equal(uf_backend_parse("epoll", &b), 0);
	assert_int_equal(b, UF_BACKEND_EPOLL);
	assert_string_equal(uf_backend_name(UF_BACKEND_IO_URING_NOSQPOLL), "io_uring_nosqpoll");
	assert_int_equal(uf_backend_parse("select", &b), -EINVAL);
}

/* Bad datagrams on line A (short, lying counts, lying lengths, trailing bytes) while a day
 * plays: each is counted by kind and dropped whole, nothing else changes. */
static void test_feed_malformed_datagrams_are_counted_and_dropped(void **state)
{
	struct ft_case c = { 0 };
	ft_start(&c, 9, 1);
	char err[128];
	int tx = uf_mcast_open_tx(c.cfg.lines[0].interface, 1, err, sizeof(err));
	assert_true(tx >= 0);
	struct sockaddr_in dst = { .sin_family = AF_INET, .sin_port = htons(c.cfg.lines[0].port),
				   .sin_addr = c.cfg.lines[0].group };
	uint8_t bad[4][64];
	size_t len[4];
	memset(bad, 0, sizeof(bad));
	memcpy(bad[0], "SHORT", 5); /* truncated header */
	len[0] = 5;
	for (int i = 1; i < 4; i++) {
		memcpy(bad[i], "REPLAY0001", 10); /* the day's own session */
		uf_put_be64(bad[i] + 10, 7);
	}
	uf_put_be16(bad[1] + 18, 3); /* count 3, one block */
	uf_put_be16(bad[1] + 20, 2);
	len[1] = 24;
	uf_put_be16(bad[2] + 18, 1); /* one block claiming 500 bytes */
	uf_put_be16(bad[2] + 20, 500);
	len[2] = 30;
	uf_put_be16(bad[3] + 18, 1); /* one 2-byte block, then 5 stray bytes */
	uf_put_be16(bad[3] + 20, 2);
	len[3] = 29;
	for (int r = 0; r < 5; r++)
		for (int i = 0; i < 4; i++)
			sendto(tx, bad[i], len[i], 0, (struct sockaddr *)&dst, sizeof(dst));
	ft_replay(&c, 9, 1, NULL);
	for (int r = 0; r < 5; r++)
		for (int i = 0; i < 4; i++)
			sendto(tx, bad[i], len[i], 0, (struct sockaddr *)&dst, sizeof(dst));
	close(tx);
	ft_expect_identical(&c);
	assert_int_equal(c.st.lines[0].malformed, 40);
	assert_int_equal(c.st.decode_truncated_header, 10);
	assert_int_equal(c.st.decode_count_mismatch, 10);
	assert_int_equal(c.st.decode_block_overruns_packet, 10);
	assert_int_equal(c.st.decode_trailing_bytes, 10);
}

/* The next day: the same file replayed as a new session. The feed must notice the new
 * session, reset the books and rebuild them from its first message (otherwise every order
 * would exist twice). */
static void test_feed_new_session_starts_the_books_over(void **state)
{
	struct ft_case c = { 0 };
	ft_start(&c, 7, 1);
	ft_replay(&c, 7, 1, "--session", "DAY1", "--linger", "0", NULL);
	assert_int_equal(ft_wait(c.replay, 30000), 0);
	ft_replay(&c, 7, 1, "--session", "DAY2", NULL);
	const struct uf_feed_stats *s = uf_feed_stats(c.feed);
	uint64_t end = uf_now_mono_ns() + (uint64_t)FT_DONE_TIMEOUT_MS * 1000000u;
	while (uf_now_mono_ns() < end && !(uf_load_relaxed_u64(&s->end_of_session) >= 2 &&
					    uf_load_relaxed_u64(&s->messages) >= 2 * g_ref_msgs)) {
		struct timespec ts = { 0, 2000000 };
		nanosleep(&ts, NULL);
	}
	char *books = ft_feed_books(c.cfg.ring.name, NULL);
	assert_string_equal(books, g_ref_books);
	free(books);
	ft_finish(&c);
	assert_int_equal(c.st.sessions, 2);
	assert_int_equal(c.st.end_of_session, 2);
	assert_int_equal(c.st.messages, 2 * g_ref_msgs);
	assert_int_equal(c.st.gaps_unrecovered, 0);
}

#if FT_URING
/* The kernel refuses the SQ thread's CPU: the feed falls back (logged) and still works. */
static void test_feed_falls_back_when_the_kernel_refuses_sqpoll(void **state)
{
	struct ft_case c = { 0 };
	char err[256];
	ft_config(&c.cfg, 8, 1);
	c.cfg.backend = UF_BACKEND_IO_URING;
	c.cfg.sqpoll_cpu = 4095; /* no such CPU: IORING_SETUP_SQ_AFF fails */
	if (uf_feed_create(&c.cfg, &c.feed, err, sizeof(err)) < 0)
		fail_msg("uf_feed_create: %s", err);
	assert_string_equal(uf_feed_backend_name(c.feed), "io_uring");
	assert_int_equal(pthread_create(&c.thr, NULL, ft_feed_thread, &c), 0);
	ft_replay(&c, 8, 1, NULL);
	assert_int_equal(ft_wait_done(&c), 0);
	assert_string_equal(uf_feed_backend_name(c.feed), "io_uring_nosqpoll");
	char *books = ft_feed_books(c.cfg.ring.name, NULL);
	assert_string_equal(books, g_ref_books);
	free(books);
	ft_finish(&c);
}

/* A buffer ring far too small for the burst: multishot receives end with -ENOBUFS, are
 * re-armed and counted, and nothing is lost (the datagrams wait in the socket). */
static void test_feed_buffer_ring_exhaustion_rearms_and_loses_nothing(void **state)
{
	struct ft_case c = { 0 };
	char err[256];
	ft_config(&c.cfg, 6, 1);
	c.cfg.buffers.count = 64;
	if (uf_feed_create(&c.cfg, &c.feed, err, sizeof(err)) < 0)
		fail_msg("uf_feed_create: %s", err);
	assert_int_equal(pthread_create(&c.thr, NULL, ft_feed_thread, &c), 0);
	ft_replay(&c, 6, 1, "--rate", "0", NULL); /* as fast as the sender can */
	ft_expect_identical(&c);
	assert_true(c.st.lines[0].rearms + c.st.lines[1].rearms > 0);
	assert_true(c.st.lines[0].enobufs + c.st.lines[1].enobufs > 0);
	assert_int_equal(c.st.cq_overflows, 0);
}
#endif

/* The reference lines of the symbols in `syms` only. */
static char *ft_ref_books_of(const char (*syms)[9], int n)
{
	struct ft_buf b = { 0 };
	ft_buf_add(&b, "%s", "");
	for (const char *line = g_ref_books; *line;) {
		const char *nl = strchr(line, '\n');
		for (int i = 0; i < n; i++) {
			char key[32];
			snprintf(key, sizeof(key), "{\"symbol\":\"%s\",", syms[i]);
			if (!strncmp(line, key, strlen(key)))
				ft_buf_add(&b, "%.*s\n", (int)(nl - line), line);
		}
		line = nl + 1;
	}
	return b.p;
}

static void test_feed_symbol_filter_publishes_only_wanted_and_reloads_live(void **state)
{
	struct ft_case c = { 0 };
	char syms[2][9] = { { 0 } };
	/* the first two symbols of the reference books */
	for (int i = 0, off = 0; i < 2; i++) {
		const char *p = g_ref_books + off + strlen("{\"symbol\":\"");
		size_t len = strcspn(p, "\"");
		memcpy(syms[i], p, len);
		off = (int)(strchr(g_ref_books + off, '\n') - g_ref_books) + 1;
	}
	ft_config(&c.cfg, 5, 1);
	c.cfg.symbols = syms;
	c.cfg.nsymbols = 2;
	char err[256];
	if (uf_feed_create(&c.cfg, &c.feed, err, sizeof(err)) < 0)
		fail_msg("uf_feed_create: %s", err);
	c.cfg.symbols = NULL; /* the feed copied them */
	c.cfg.nsymbols = 0;
	assert_int_equal(pthread_create(&c.thr, NULL, ft_feed_thread, &c), 0);
	ft_replay(&c, 5, 1, NULL);
	assert_int_equal(ft_wait_done(&c), 0);
	char *books = ft_feed_books(c.cfg.ring.name, NULL);
	char *want = ft_ref_books_of((const char(*)[9])syms, 2);
	assert_string_equal(books, want);
	free(books);
	free(want);
	uint64_t before = uf_load_relaxed_u64(&uf_feed_stats(c.feed)->records);
	assert_true(before < g_ref_nrecs / 2); /* most records were filtered out */
	/* SIGHUP-style reload to "everything": every book appears, correct, without replay */
	assert_int_equal(uf_feed_set_symbols(c.feed, NULL, 0), 0);
	uint64_t end = uf_now_mono_ns() + 5000000000ull;
	for (;;) {
		books = ft_feed_books(c.cfg.ring.name, NULL);
		if (!strcmp(books, g_ref_books) || uf_now_mono_ns() > end)
			break;
		free(books);
		struct timespec ts = { 0, 5000000 };
		nanosleep(&ts, NULL);
	}
	assert_string_equal(books, g_ref_books);
	free(books);
	assert_true(uf_load_relaxed_u64(&uf_feed_stats(c.feed)->records) > before);
	ft_finish(&c);
}

static int ft_setup(void **state)
{
	if (ft_gen_day(g_day, sizeof(g_day), FT_MESSAGES, FT_SYMBOLS, 7) < 0) {
		fprintf(stderr, "FATAL: uf-gen failed: the feed tests need it (tools/uf-gen)\n");
		return -1;
	}
	if (ft_reference(g_day, FT_DEPTH, &g_ref_books, &g_ref_recs, &g_ref_nrecs, &g_ref_msgs) < 0)
		return -1;
	if (g_ref_msgs != FT_MESSAGES || g_ref_nrecs == 0 || !g_ref_books[0]) {
		fprintf(stderr, "FATAL: reference has %llu messages, %zu records\n",
			(unsigned long long)g_ref_msgs, g_ref_nrecs);
		return -1;
	}
	return 0;
}

static int ft_teardown(void **state)
{
	free(g_ref_books);
	free(g_ref_recs);
	if (g_day[0])
		unlink(g_day);
	char cmd[256];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", ft_tmpdir());
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", ft_tmpdir());
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_feed_clean_day_gives_identical_books),
		cmocka_unit_test(test_feed_loss_on_a_only_needs_no_rerequest),
		cmocka_unit_test(test_feed_loss_on_both_lines_recovers_by_rerequest),
		cmocka_unit_test(test_feed_dead_server_flags_gap_and_keeps_running),
		cmocka_unit_test(test_feed_duplicates_and_reordering_change_nothing),
		cmocka_unit_test(test_feed_symbol_filter_publishes_only_wanted_and_reloads_live),
		cmocka_unit_test(test_feed_new_session_starts_the_books_over),
		cmocka_unit_test(test_feed_create_says_what_is_wrong),
		cmocka_unit_test(test_feed_malformed_datagrams_are_counted_and_dropped),
#if FT_URING
		cmocka_unit_test(test_feed_buffer_ring_exhaustion_rearms_and_loses_nothing),
		cmocka_unit_test(test_feed_falls_back_when_the_kernel_refuses_sqpoll),
#endif
	};
	return cmocka_run_group_tests(tests, ft_setup, ft_teardown);
}
