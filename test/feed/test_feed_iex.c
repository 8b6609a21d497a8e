/* IEX DEEP and TOPS live through the real engine (uf_feed_create / uf_feed_run on loopback
 * multicast, every receive back end): IEX-TP segments built byte by byte
 * (test/common/uf_test_iex.h) on lines A and B. Checked from the ring, as a consumer sees it:
 *   - A and B arbitrated by session and sequence (a segment lost on A is taken from B);
 *   - a segment lost on both lines: the hole waits for the other line (IEX-TP has no
 *     re-request service), then a GAP record, and every later record of the books STALE;
 *   - the stream starting over inside its session (sequence 1 at stream offset 0, sent
 *     later: a publisher restart, as in the real DEEP capture) once both lines show it: a
 *     RESET record, then the new stream on empty books; never dropped as duplicates;
 *   - the books a consumer builds from the records (uf_book_builder) and the ones the
 *     producer's image holds are exactly the venue's, with no venue-specific code;
 *   - TOPS quotes as a level-1 book. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/uf_time.h"
#include "feed/arbiter.h"
#include "feed/mcast.h"
#include "feed/uf_feed.h"
#include "ring/ufbook.h"
#include "ring/ufconsumer.h"
#include "test/common/uf_test_iex.h"
#include "test/common/uf_test_feed_thread.h"
#include "test/feed/feed_test_util.h"

#define FI_SESSION 42u
#define FI_SEC     1000000000ll

struct fi {
	struct uf_feed_config cfg;
	struct uf_feed *feed;
	struct uf_test_feed_thread thr;
	uf_consumer_t *c;
	int tx;
	struct uf_record recs[256]; /* every record read so far */
	size_t n;
	uint64_t last_seq; /* ring sequence of the last one */
};

/* Starts the feed; with `server` non-NULL its config also names a re-request server there
 * (which an IEX-TP feed must never ask: no request layout is implemented). */
static void fi_start_srv(struct fi *t, enum uf_backend be, int sc, const char *proto,
                         const struct sockaddr_in *server)
{
	char err[256];
	memset(t, 0, sizeof(*t));
	ft_config_lines(&t->cfg, "fi", be, sc, 98, 28000, 5);
	snprintf(t->cfg.protocol, sizeof(t->cfg.protocol), "%s", proto);
	if (server) {
		t->cfg.recovery.enabled = 1;
		t->cfg.recovery.server = *server;
	}
	/* no re-request service: a hole waits for the other line this long, then is a gap
	 * (long enough for line B's copy on a loaded host, short enough for the test) */
	t->cfg.recovery.wait_ms = 1500;
	t->cfg.recovery.wait_packets = 1000;
	t->cfg.recovery.timeout_ms = 1500;
	t->cfg.recovery.retries = 1;
	if (uf_feed_create(&t->cfg, &t->feed, err, sizeof(err)) < 0)
		fail_msg("uf_feed_create (%s, %s): %s", proto, uf_backend_name(be), err);
	struct uf_consumer_options opt;
	uf_consumer_options_init(&opt);
	opt.start = UF_CONSUMER_START_OLDEST;
	if (uf_consumer_attach(t->cfg.ring.name, &opt, &t->c, err, sizeof(err)) < 0)
		fail_msg("uf_consumer_attach: %s", err);
	uf_test_feed_thread_start(&t->thr, t->feed);
	struct in_addr lo;
	inet_pton(AF_INET, "127.0.0.1", &lo);
	t->tx = uf_mcast_open_tx(lo, 1, err, sizeof(err));
	if (t->tx < 0)
		fail_msg("uf_mcast_open_tx: %s", err);
}

static void fi_start(struct fi *t, enum uf_backend be, int sc, const char *proto)
{
	fi_start_srv(t, be, sc, proto, NULL);
}

static void fi_stop(struct fi *t)
{
	assert_int_equal(uf_test_feed_thread_stop(&t->thr), 0);
	close(t->tx);
	uf_consumer_detach(t->c);
	uf_feed_destroy(t->feed);
}

static void fi_send(struct fi *t, int line, const struct ti_seg *s)
{
	const struct uf_line_config *l = &t->cfg.lines[line];
	struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons(l->port)};
	to.sin_addr = l->group;
	assert_int_equal(sendto(t->tx, s->b, ti_seg_len(s), 0, (struct sockaddr *)&to, sizeof(to)),
	                 (ssize_t)ti_seg_len(s));
}

/* Reads records until `total` are in (10 s at most: a wait for events, not a sleep). */
static void fi_read(struct fi *t, size_t total)
{
	uint64_t end = uf_now_mono_ns() + 10 * (uint64_t)FI_SEC;
	while (t->n < total && uf_now_mono_ns() < end) {
		int rc = uf_consumer_next(t->c, &t->recs[t->n], &t->last_seq);
		if (rc == 0)
			t->n++;
		else if (rc == -EAGAIN)
			uf_consumer_wait(t->c, 10000000);
		else
			fail_msg("uf_consumer_next: %d", rc);
	}
	if (t->n != total)
		fail_msg("%zu records of %zu arrived", t->n, total);
}

static void fi_level(const struct uf_record *r, uint8_t side, int64_t price, uint64_t shares,
                     uint64_t seq, uint16_t flags)
{
	assert_int_equal(r->kind, UF_REC_LEVEL);
	assert_int_equal(r->instrument, 1);
	assert_int_equal(r->side, side);
	assert_int_equal(r->price, price);
	assert_int_equal(r->shares, shares);
	assert_int_equal(r->orders, 0);
	assert_int_equal(r->feed_seq, seq);
	assert_int_equal(r->flags, flags);
	assert_int_equal(r->exch_ts, TI_TS_LOCAL);
}

/* A DEEP segment of the first stream: stream offset non-zero past its start, sent in order. */
static void fi_deep(struct ti_seg *s, int64_t seq)
{
	ti_seg_begin(s, UF_IEXTP_PROTO_DEEP, FI_SESSION, seq == 1 ? 0 : 100 * seq, seq,
	             TI_TS + seq);
}

/* The first stream's start: 1 system 'O', 2 the directory entry of ZIEXT, 3 a bid 300 at
 * 25.0000. */
static void fi_first_start(struct ti_seg *s)
{
	uint8_t m[80];
	fi_deep(s, 1);
	ti_seg_add(s, m, ti_system(m, 'O', TI_TS));
	ti_seg_add(s, m, ti_directory(m, "ZIEXT", 100, 1, TI_TS));
	ti_seg_add(s, m, ti_level(m, 'B', 1, "ZIEXT", 300, 250000, TI_TS));
}

/* The restarted stream's start, ten minutes on: 1 system 'O', 2 a bid 500 at 10.0000. */
static void fi_restart_start(struct ti_seg *s)
{
	uint8_t m[80];
	ti_seg_begin(s, UF_IEXTP_PROTO_DEEP, FI_SESSION, 0, 1, TI_TS + 600 * FI_SEC);
	ti_seg_add(s, m, ti_system(m, 'O', TI_TS));
	ti_seg_add(s, m, ti_level(m, 'B', 1, "ZIEXT", 500, 100000, TI_TS));
}

/* Checks instrument 1's book as the consumer built it and as the producer's image holds it. */
static void fi_books(struct fi *t, const struct uf_level *bids, size_t nb,
                     const struct uf_level *asks, size_t na, uint32_t flags)
{
	uf_book_builder_t *rb, *ib;
	assert_int_equal(uf_book_builder_create(16, &rb), 0);
	assert_int_equal(uf_book_builder_create(16, &ib), 0);
	for (size_t i = 0; i < t->n; i++)
		assert_true(uf_book_builder_apply(rb, &t->recs[i], i + 1) >= 0);
	/* The image's books, through a consumer of their own once the image holds every
	 * record read (it is committed after the records of a receive batch). */
	char err[256];
	struct uf_consumer_options opt;
	uf_consumer_options_init(&opt);
	uf_consumer_t *c2 = NULL;
	if (uf_consumer_attach(t->cfg.ring.name, &opt, &c2, err, sizeof(err)) < 0)
		fail_msg("uf_consumer_attach: %s", err);
	uint64_t end = uf_now_mono_ns() + 10 * (uint64_t)FI_SEC;
	while (uf_consumer_image_seq(c2) <= t->last_seq && uf_now_mono_ns() < end)
		usleep(1000);
	assert_true(uf_consumer_image_seq(c2) > t->last_seq);
	assert_int_equal(uf_book_builder_sync(ib, c2), 0);
	/* a late consumer finds the venue and its trading date in the image (instrument 0) */
	struct uf_book_snapshot snap;
	assert_int_equal(uf_consumer_snapshot(c2, 0, &snap), 0);
	int venue = 0;
	for (uint32_t i = 0; i < snap.nstatus; i++)
		venue |= snap.status[i].code == UF_STATUS_VENUE &&
		         snap.status[i].shares == 20170425 &&
		         !memcmp(&snap.status[i].price, "IEXG    ", 8);
	assert_true(venue);
	uf_consumer_detach(c2);
	uf_book_builder_t *b[2] = {rb, ib};
	for (int k = 0; k < 2; k++) {
		struct uf_level lv[8];
		assert_string_equal(uf_book_builder_symbol(b[k], 1), "ZIEXT");
		assert_int_equal(uf_book_builder_levels(b[k], 1, UF_SIDE_BID, lv, 8), (int)nb);
		for (size_t i = 0; i < nb; i++) {
			assert_int_equal(lv[i].price, bids[i].price);
			assert_int_equal(lv[i].shares, bids[i].shares);
		}
		assert_int_equal(uf_book_builder_levels(b[k], 1, UF_SIDE_ASK, lv, 8), (int)na);
		for (size_t i = 0; i < na; i++) {
			assert_int_equal(lv[i].price, asks[i].price);
			assert_int_equal(lv[i].shares, asks[i].shares);
		}
		assert_int_equal(uf_book_builder_flags(b[k], 1) & UF_BOOKF_STALE, flags);
	}
	uf_book_builder_destroy(rb);
	uf_book_builder_destroy(ib);
}

static void run_deep(enum uf_backend be)
{
	struct fi *t = calloc(1, sizeof(*t));
	assert_non_null(t);
	fi_start(t, be, 0, "iex-deep");
	struct ti_seg s1, s2, s3, s5, r1;
	uint8_t m[80];
	/* 1-3 on both lines; 4 on B only; 5-6 (an event in two updates) on A, then B */
	fi_first_start(&s1);
	fi_deep(&s2, 4);
	ti_seg_add(&s2, m, ti_level(m, 'S', 1, "ZIEXT", 200, 250100, TI_TS));
	fi_deep(&s3, 5);
	ti_seg_add(&s3, m, ti_level(m, 'B', 0, "ZIEXT", 0, 250000, TI_TS));
	ti_seg_add(&s3, m, ti_level(m, 'B', 1, "ZIEXT", 100, 249900, TI_TS));
	fi_send(t, 0, &s1);
	fi_send(t, 1, &s1);
	fi_send(t, 0, &s3); /* A lost 4: a hole */
	fi_send(t, 1, &s2); /* B fills it */
	fi_send(t, 1, &s3);
	fi_read(t, 7);
	assert_int_equal(t->recs[0].kind, UF_REC_STATUS); /* the venue and its trading date */
	assert_int_equal(t->recs[0].aux, UF_STATUS_VENUE);
	assert_int_equal(t->recs[0].shares, 20170425);
	assert_memory_equal(&t->recs[0].ref, "IEXG    ", 8);
	assert_int_equal(t->recs[1].kind, UF_REC_STATUS);
	assert_int_equal(t->recs[1].aux, UF_STATUS_SYSTEM);
	assert_int_equal(t->recs[2].kind, UF_REC_INSTRUMENT);
	assert_int_equal(t->recs[2].instrument, 1);
	assert_int_equal(t->recs[2].shares, 100);
	fi_level(&t->recs[3], 'B', 250000, 300, 3, UF_RECF_BBO | UF_RECF_LAST);
	fi_level(&t->recs[4], 'S', 250100, 200, 4, UF_RECF_BBO | UF_RECF_LAST); /* from B */
	fi_level(&t->recs[5], 'B', 250000, 0, 5, UF_RECF_BBO); /* the event goes on */
	fi_level(&t->recs[6], 'B', 249900, 100, 6, UF_RECF_BBO | UF_RECF_LAST);
	const struct uf_level b1[] = {{249900, 100, 0, 0}}, a1[] = {{250100, 200, 0, 0}};
	fi_books(t, b1, 1, a1, 1, 0);

	/* 7 lost on both lines, 8 on both: after the wait a GAP, then 8 STALE */
	struct ti_seg s4;
	fi_deep(&s4, 8);
	ti_seg_add(&s4, m, ti_level(m, 'S', 1, "ZIEXT", 300, 250200, TI_TS));
	fi_send(t, 0, &s4);
	fi_send(t, 1, &s4);
	fi_read(t, 9);
	assert_int_equal(t->recs[7].kind, UF_REC_GAP);
	assert_int_equal(t->recs[7].feed_seq, 7);
	assert_int_equal(t->recs[7].shares, 1);
	fi_level(&t->recs[8], 'S', 250200, 300, 8, UF_RECF_STALE | UF_RECF_LAST);
	const struct uf_level a2[] = {{250100, 200, 0, 0}, {250200, 300, 0, 0}};
	fi_books(t, b1, 1, a2, 2, UF_BOOKF_STALE);

	/* The publisher restarts: the stream starts over at 1, offset 0, sent later. Line A
	 * alone is not believed; with B it is a new stream: RESET, then 1 on empty books. */
	struct ti_seg hb; /* both lines live now, however long the gap took on this host */
	ti_seg_begin(&hb, UF_IEXTP_PROTO_DEEP, FI_SESSION, 900, 9, TI_TS + 599 * FI_SEC);
	fi_send(t, 0, &hb);
	fi_send(t, 1, &hb);
	fi_restart_start(&r1);
	fi_send(t, 0, &r1);
	fi_send(t, 1, &r1);
	ti_seg_begin(&s5, UF_IEXTP_PROTO_DEEP, FI_SESSION, 64, 3, TI_TS + 601 * FI_SEC);
	ti_seg_add(&s5, m, ti_level(m, 'S', 1, "ZIEXT", 10, 100100, TI_TS));
	fi_send(t, 0, &s5);
	fi_send(t, 1, &s5);
	fi_read(t, 13);
	const struct uf_record *r = &t->recs[9];
	assert_int_equal(r[0].kind, UF_REC_RESET);
	assert_int_equal(r[0].shares, UF_RESET_NEW_SESSION);
	assert_memory_equal(&r[0].ref, "42      ", 8);
	assert_int_equal(r[1].kind, UF_REC_STATUS);
	assert_int_equal(r[1].feed_seq, 1);
	fi_level(&r[2], 'B', 100000, 500, 2, UF_RECF_BBO | UF_RECF_LAST); /* id kept, no STALE */
	fi_level(&r[3], 'S', 100100, 10, 3, UF_RECF_BBO | UF_RECF_LAST);
	const struct uf_level b3[] = {{100000, 500, 0, 0}}, a3[] = {{100100, 10, 0, 0}};
	fi_books(t, b3, 1, a3, 1, 0);
	const struct uf_feed_stats *fs = uf_feed_stats(t->feed);
	assert_true(fs->lines[1].wins >= 1);       /* 4 came from B */
	assert_int_equal(fs->gaps_unrecovered, 1); /* 7 */
	assert_int_equal(fs->messages_unrecovered, 1);
	assert_int_equal(fs->sessions, 2); /* the restart is a new stream */
	/* the first line's start, and its 3 if read before the other line's start: held, then
	 * handled once the stream starts (feed/arbiter.h), never dropped */
	assert_int_equal(fs->lines[0].wrong_session + fs->lines[1].wrong_session, 0);
	assert_int_equal(fs->messages, 10);

	fi_stop(t);
	free(t);
}

static void test_iex_deep_live_epoll(void **st)
{
	(void)st;
	run_deep(UF_BACKEND_EPOLL);
}

static void test_iex_deep_live_recvmmsg(void **st)
{
	(void)st;
	run_deep(UF_BACKEND_RECVMMSG);
}

static void test_iex_deep_live_io_uring(void **st)
{
	(void)st;
	run_deep(UF_BACKEND_IO_URING);
}

static void test_iex_deep_live_io_uring_nosqpoll(void **st)
{
	(void)st;
	run_deep(UF_BACKEND_IO_URING_NOSQPOLL);
}

/* TOPS: quotes keep one level a side; the old best goes when the price moves. */
static void test_iex_tops_live_level_one_book(void **st)
{
	(void)st;
	struct fi *t = calloc(1, sizeof(*t));
	assert_non_null(t);
	fi_start(t, UF_BACKEND_EPOLL, 1, "iex-tops");
	struct ti_seg s;
	uint8_t m[80];
	ti_seg_begin(&s, UF_IEXTP_PROTO_TOPS, 7, 0, 1, TI_TS);
	ti_seg_add(&s, m, ti_directory(m, "ZIEXT", 100, 1, TI_TS));
	ti_seg_add(&s, m, ti_quote(m, "ZIEXT", 500, 250000, 250100, 700, TI_TS));
	ti_seg_add(&s, m, ti_quote(m, "ZIEXT", 400, 249900, 250100, 700, TI_TS));
	fi_send(t, 0, &s);
	fi_send(t, 1, &s);
	fi_read(t, 6);
	assert_int_equal(t->recs[1].kind, UF_REC_INSTRUMENT);
	fi_level(&t->recs[2], 'B', 250000, 500, 2, UF_RECF_BBO);
	fi_level(&t->recs[3], 'S', 250100, 700, 2, UF_RECF_BBO | UF_RECF_LAST);
	fi_level(&t->recs[4], 'B', 250000, 0, 3, UF_RECF_BBO);
	fi_level(&t->recs[5], 'B', 249900, 400, 3, UF_RECF_BBO | UF_RECF_LAST);
	const struct uf_level b[] = {{249900, 400, 0, 0}}, a[] = {{250100, 700, 0, 0}};
	fi_books(t, b, 1, a, 1, 0);
	fi_stop(t);
	free(t);
}

/* What the handler does instead of IEX-TP's unicast gap fill (whose request layout no public
 * source gave: docs/feed.md): a message lost on both lines is a GAP, never asked for, even
 * with a server configured; every later record of the feed's books is STALE, also once
 * every level the books hold was set again after the gap (what the lost message did is not
 * known), until the next stream start voids the books (RESET) and clears it. */
static void test_iex_deep_gap_stale_until_restart(void **st)
{
	(void)st;
	/* a would-be gap-fill server on loopback: it must receive nothing */
	int srv = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
	assert_true(srv >= 0);
	struct sockaddr_in sa = {.sin_family = AF_INET};
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(srv, (struct sockaddr *)&sa, sizeof(sa)), 0);
	socklen_t sl = sizeof(sa);
	assert_int_equal(getsockname(srv, (struct sockaddr *)&sa, &sl), 0);

	struct fi *t = calloc(1, sizeof(*t));
	assert_non_null(t);
	fi_start_srv(t, UF_BACKEND_EPOLL, 0, "iex-deep", &sa);
	struct ti_seg s1, s5, s7, hb, r1, r3;
	uint8_t m[80];
	fi_first_start(&s1);
	fi_send(t, 0, &s1);
	fi_send(t, 1, &s1);
	/* 4 lost on both lines; 5 sets the bid level again, 6 an ask */
	fi_deep(&s5, 5);
	ti_seg_add(&s5, m, ti_level(m, 'B', 1, "ZIEXT", 250, 250000, TI_TS));
	ti_seg_add(&s5, m, ti_level(m, 'S', 1, "ZIEXT", 200, 250100, TI_TS));
	fi_send(t, 0, &s5);
	fi_send(t, 1, &s5);
	fi_read(t, 7);
	assert_int_equal(t->recs[0].aux, UF_STATUS_VENUE);
	fi_level(&t->recs[3], 'B', 250000, 300, 3, UF_RECF_BBO | UF_RECF_LAST);
	assert_int_equal(t->recs[4].kind, UF_REC_GAP);
	assert_int_equal(t->recs[4].feed_seq, 4);
	assert_int_equal(t->recs[4].shares, 1);
	fi_level(&t->recs[5], 'B', 250000, 250, 5, UF_RECF_BBO | UF_RECF_STALE | UF_RECF_LAST);
	fi_level(&t->recs[6], 'S', 250100, 200, 6, UF_RECF_BBO | UF_RECF_STALE | UF_RECF_LAST);
	/* 7-8 replace the one bid level: every level now came after the gap, still STALE */
	fi_deep(&s7, 7);
	ti_seg_add(&s7, m, ti_level(m, 'B', 0, "ZIEXT", 0, 250000, TI_TS));
	ti_seg_add(&s7, m, ti_level(m, 'B', 1, "ZIEXT", 100, 249900, TI_TS));
	fi_send(t, 0, &s7);
	fi_send(t, 1, &s7);
	fi_read(t, 9);
	fi_level(&t->recs[7], 'B', 250000, 0, 7, UF_RECF_BBO | UF_RECF_STALE);
	fi_level(&t->recs[8], 'B', 249900, 100, 8, UF_RECF_BBO | UF_RECF_STALE | UF_RECF_LAST);
	const struct uf_level b1[] = {{249900, 100, 0, 0}}, a1[] = {{250100, 200, 0, 0}};
	fi_books(t, b1, 1, a1, 1, UF_BOOKF_STALE);
	/* nothing was asked of the configured server */
	uint8_t junk[64];
	assert_int_equal(recv(srv, junk, sizeof(junk), MSG_DONTWAIT), -1);
	assert_int_equal(errno, EAGAIN);
	const struct uf_feed_stats *fs = uf_feed_stats(t->feed);
	assert_int_equal(fs->rerequests, 0);
	assert_int_equal(fs->recovery_packets, 0);
	assert_int_equal(fs->gaps_unrecovered, 1);
	assert_int_equal(fs->messages_unrecovered, 1);

	/* the next stream start (a publisher restart) voids the books: STALE cleared */
	ti_seg_begin(&hb, UF_IEXTP_PROTO_DEEP, FI_SESSION, 900, 9, TI_TS + 599 * FI_SEC);
	fi_send(t, 0, &hb);
	fi_send(t, 1, &hb);
	fi_restart_start(&r1);
	fi_send(t, 0, &r1);
	fi_send(t, 1, &r1);
	ti_seg_begin(&r3, UF_IEXTP_PROTO_DEEP, FI_SESSION, 64, 3, TI_TS + 601 * FI_SEC);
	ti_seg_add(&r3, m, ti_level(m, 'S', 1, "ZIEXT", 10, 100100, TI_TS));
	fi_send(t, 0, &r3);
	fi_send(t, 1, &r3);
	fi_read(t, 13);
	assert_int_equal(t->recs[9].kind, UF_REC_RESET);
	fi_level(&t->recs[11], 'B', 100000, 500, 2, UF_RECF_BBO | UF_RECF_LAST);
	fi_level(&t->recs[12], 'S', 100100, 10, 3, UF_RECF_BBO | UF_RECF_LAST);
	const struct uf_level b2[] = {{100000, 500, 0, 0}}, a2[] = {{100100, 10, 0, 0}};
	fi_books(t, b2, 1, a2, 1, 0);
	assert_int_equal(recv(srv, junk, sizeof(junk), MSG_DONTWAIT), -1);
	assert_int_equal(uf_feed_stats(t->feed)->rerequests, 0);
	fi_stop(t);
	free(t);
	close(srv);
}

/* A restart seen first on line A, which starts the new stream alone (jump_confirm packets in
 * a row), while line B still sends the old stream's tail: a receive batch hands one socket's
 * datagrams before the other's, so this is the usual order under load (the real DEEP capture,
 * both lines whole, lost a third of its messages to it). The tail's sequences are the old
 * stream's, which the new one reuses: they must be dropped as older than the new stream's
 * start, never taken for the new stream's messages (filling its holes with the old content,
 * or opening a hole nothing fills). */
static void test_iex_deep_old_stream_tail_is_not_the_new_stream(void **st)
{
	(void)st;
	struct fi *t = calloc(1, sizeof(*t));
	assert_non_null(t);
	fi_start(t, UF_BACKEND_IO_URING_NOSQPOLL, 0, "iex-deep");
	struct ti_seg o1, o4, o5, n[5];
	uint8_t m[80];
	fi_first_start(&o1);
	fi_deep(&o4, 4);
	ti_seg_add(&o4, m, ti_level(m, 'S', 1, "ZIEXT", 200, 250100, TI_TS));
	fi_deep(&o5, 5);
	ti_seg_add(&o5, m, ti_level(m, 'B', 1, "ZIEXT", 100, 249800, TI_TS));
	fi_send(t, 0, &o1);
	fi_send(t, 1, &o1);
	fi_send(t, 0, &o4); /* B has not sent 4 and 5 yet */
	fi_send(t, 0, &o5);
	fi_read(t, 6); /* venue, system, directory, bid, ask, bid */
	fi_level(&t->recs[5], 'B', 249800, 100, 5, UF_RECF_LAST); /* below the best */

	/* The new stream, sent ten minutes later: 1 (system, bid), then one level a segment */
	const int64_t px[4] = {100100, 100200, 99900, 100300};
	const uint64_t qty[4] = {10, 20, 30, 40};
	const uint8_t side[4] = {'S', 'S', 'B', 'S'};
	fi_restart_start(&n[0]);
	for (int i = 0; i < 4; i++) {
		ti_seg_begin(&n[i + 1], UF_IEXTP_PROTO_DEEP, FI_SESSION, 64 * (i + 1), 3 + i,
		             TI_TS + (601 + i) * FI_SEC);
		ti_seg_add(&n[i + 1], m, ti_level(m, side[i], 1, "ZIEXT", qty[i], px[i], TI_TS));
	}
	/* A alone: the new stream's first jump_confirm packets, held while B, live, may still
	 * send the old stream's tail. B stays behind past wait_ms (1,500 ms here, by receive
	 * times): A's next packet, sent after that, makes the new stream the current one. */
	for (int i = 0; i < UF_ARB_JUMP_CONFIRM; i++)
		fi_send(t, 0, &n[i]);
	struct timespec past_wait = {1, 600 * 1000 * 1000};
	nanosleep(&past_wait, NULL); /* a lower bound on the time between two receives */
	fi_send(t, 0, &n[4]);
	fi_read(t, 13);
	assert_int_equal(t->recs[6].kind, UF_REC_RESET);
	/* now B: the old tail (4 and 5, sent before the new stream's start), dropped, then the
	 * new stream from its start: duplicates */
	fi_send(t, 1, &o4);
	fi_send(t, 1, &o5);
	for (int i = 0; i < 5; i++)
		fi_send(t, 1, &n[i]);
	const struct uf_record *r = &t->recs[7];
	assert_int_equal(r[0].kind, UF_REC_STATUS);
	assert_int_equal(r[0].feed_seq, 1);
	fi_level(&r[1], 'B', 100000, 500, 2, UF_RECF_BBO | UF_RECF_LAST);
	fi_level(&r[2], 'S', 100100, 10, 3, UF_RECF_BBO | UF_RECF_LAST);
	fi_level(&r[3], 'S', 100200, 20, 4, UF_RECF_LAST);
	fi_level(&r[4], 'B', 99900, 30, 5, UF_RECF_LAST);
	fi_level(&r[5], 'S', 100300, 40, 6, UF_RECF_LAST);
	const struct uf_level b[] = {{100000, 500, 0, 0}, {99900, 30, 0, 0}};
	const struct uf_level a[] = {{100100, 10, 0, 0}, {100200, 20, 0, 0}, {100300, 40, 0, 0}};
	fi_books(t, b, 2, a, 3, 0);
	const struct uf_feed_stats *fs = uf_feed_stats(t->feed);
	assert_int_equal(fs->gaps_unrecovered, 0);
	assert_int_equal(fs->messages_unrecovered, 0);
	assert_int_equal(fs->sessions, 2);
	/* B's packets make no records: wait (5 s at most) for the feed to count them: the old
	 * tail dropped (sent before the new stream's start), the new stream's 5 duplicates
	 * (its copy of the first segment may be a sixth) */
	for (int spin = 0;
	     spin < 5000 && (fs->lines[1].wrong_session < 2 || fs->lines[1].duplicates < 5); spin++)
		usleep(1000);
	assert_int_equal(fs->lines[1].wrong_session, 2);
	assert_true(fs->lines[1].duplicates >= 5);
	assert_int_equal(fs->messages, 5 + 6);
	fi_stop(t);
	free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_iex_deep_live_epoll),
	    cmocka_unit_test(test_iex_deep_live_recvmmsg),
	    cmocka_unit_test(test_iex_deep_live_io_uring),
	    cmocka_unit_test(test_iex_deep_live_io_uring_nosqpoll),
	    cmocka_unit_test(test_iex_tops_live_level_one_book),
	    cmocka_unit_test(test_iex_deep_gap_stale_until_restart),
	    cmocka_unit_test(test_iex_deep_old_stream_tail_is_not_the_new_stream),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
