/* The sink (feed/sink.h) without sockets or threads: a publisher's records go through the
 * sink into a real ring, and a consumer attached to that ring checks what it holds: the
 * records in order, the book image (levels, trade, status, directory), the gap and session
 * side effects, a filter entry's snapshot, and the ring's refusals coming back as errors
 * (forced: an image smaller than the publisher's instrument range, a ninth status code). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/uf_compiler.h"
#include "common/uf_symbol.h"
#include "decode/uf_decode.h"
#include "feed/sink.h"
#include "publish/uf_publish.h"
#include "ring/uf_ring.h"
#include "ring/ufconsumer.h"

#include "sink_fixture.h"

struct fx {
	char name[UF_CFG_NAME_MAX]; /* ring name, unique per test */
	struct uf_feed_config cfg;  /* what the sink is opened with */
	struct uf_publisher *pub;   /* books (16 instruments) */
	struct uf_sink sink;        /* under test */
	uf_consumer_t *cons;        /* reads the ring from its first record */
	uint64_t seq;               /* next feed sequence */
	struct uf_record recs[64];  /* one step's records */
};

static uint32_t g_gid; /* ring.gid for the next fx_setup */
static int g_has_gid;  /* ring.has_gid for the next fx_setup */

static int fx_setup(struct fx *x, uint32_t ring_instruments)
{
	const struct sink_fx_params sp = {.tag = "sink",
	                                  .feed = "sinkfeed",
	                                  .ring_capacity = 4096,
	                                  .depth = 5,
	                                  .ring_instruments = ring_instruments,
	                                  .pub_instruments = 16,
	                                  .max_orders = 1024,
	                                  .has_gid = (uint32_t)g_has_gid,
	                                  .gid = g_gid};
	char err[256];
	memset(x, 0, sizeof(*x));
	sink_fx_open(&sp, x->name, sizeof(x->name), &x->cfg, &x->pub, &x->sink);
	struct uf_consumer_options opt;
	uf_consumer_options_init(&opt);
	opt.start = UF_CONSUMER_START_OLDEST;
	int rc = uf_consumer_attach(x->name, &opt, &x->cons, err, sizeof(err));
	if (rc < 0)
		fail_msg("uf_consumer_attach: %s", err);
	x->seq = 1;
	return 0;
}

static void fx_teardown(struct fx *x)
{
	uf_consumer_detach(x->cons);
	uf_sink_close(&x->sink);
	uf_publish_destroy(x->pub);
	uf_ring_unlink(x->name, NULL); /* its private directory: nothing left in RAM */
}

/* Applies the messages as one publish step through the sink; returns the sink's result
 * and the records of the step in x->recs[0..*n). */
static int step(struct fx *x, const struct uf_itch_msg *m, size_t nm, size_t *n)
{
	return sink_fx_step(x->pub, &x->sink, &x->seq, m, nm, RX_NS, x->recs,
	                    UF_ARRAY_SIZE(x->recs), n);
}

/* Reads exactly n records from the ring into out and checks nothing more is there. */
static void read_exactly(struct fx *x, struct uf_record *out, size_t n)
{
	size_t got = 0;
	uint64_t first;
	while (got < n) {
		int r = uf_consumer_read(x->cons, out + got, n - got, &first);
		if (r <= 0)
			fail_msg("ring holds %zu records, expected %zu (read: %d)", got, n, r);
		got += (size_t)r;
	}
	struct uf_record extra;
	assert_int_equal(uf_consumer_read(x->cons, &extra, 1, &first), -EAGAIN);
}

static void snap(struct fx *x, uint32_t id, struct uf_book_snapshot *s)
{
	int rc = uf_consumer_snapshot(x->cons, id, s);
	if (rc < 0)
		fail_msg("snapshot of %u: %d", id, rc);
}

static void test_sink_records_reach_ring_and_image(void **state)
{
	(void)state;
	struct fx x;
	size_t n, total = 0;
	struct uf_record sent[64], got[64];
	fx_setup(&x, 16);
	const struct uf_itch_msg m1[] = {dir(3, "MSFT"), add(3, 1, 'B', 100, 150000),
	                                 add(3, 2, 'S', 200, 151000)};
	assert_int_equal(step(&x, m1, 3, &n), 0);
	memcpy(sent + total, x.recs, n * sizeof(*sent));
	total += n;
	const struct uf_itch_msg m2[] = {trade(3, 50, 150500), halt(3, 'T'),
	                                 add(3, 3, 'B', 10, 150000)};
	assert_int_equal(step(&x, m2, 3, &n), 0);
	memcpy(sent + total, x.recs, n * sizeof(*sent));
	total += n;

	/* The stream: exactly the publisher's records, in order. */
	read_exactly(&x, got, total);
	assert_memory_equal(got, sent, total * sizeof(*sent));

	/* The image: directory, levels (both adds at 150000 merged), trade, status. */
	struct uf_book_snapshot s;
	snap(&x, 3, &s);
	assert_string_equal(s.symbol, "MSFT");
	assert_int_equal(s.round_lot, 100);
	assert_int_equal(s.category, 'Q');
	assert_int_equal(s.nbid, 1);
	assert_int_equal(s.bid[0].price, 150000);
	assert_int_equal(s.bid[0].shares, 110);
	assert_int_equal(s.nask, 1);
	assert_int_equal(s.ask[0].price, 151000);
	assert_int_equal(s.ask[0].shares, 200);
	assert_int_equal(s.trades, 1);
	assert_int_equal(s.volume, 50);
	assert_int_equal(s.last_price, 150500);
	assert_int_equal(s.nstatus, 1);
	assert_int_equal(s.status[0].code, UF_STATUS_TRADING);
	assert_int_equal(s.stamp, total); /* stamped with the tail after its step */
	assert_int_equal(s.update_rx_ts, RX_NS);
	assert_int_equal(s.flags & UF_RECF_STALE, 0);
	fx_teardown(&x);
}

static void test_sink_gap_marks_stale_and_session_clears(void **state)
{
	(void)state;
	struct fx x;
	size_t n, total = 0;
	struct uf_record got[64];
	fx_setup(&x, 16);
	const struct uf_itch_msg m[] = {dir(5, "AAPL"), add(5, 1, 'B', 100, 1000)};
	assert_int_equal(step(&x, m, 2, &n), 0);
	total += n;
	int g = uf_publish_gap(x.pub, x.seq, 7, x.recs, UF_ARRAY_SIZE(x.recs));
	assert_int_equal(g, 1);
	assert_int_equal(uf_sink_gap(&x.sink, x.recs, (size_t)g), 0);
	total += 1;
	read_exactly(&x, got, total);
	assert_int_equal(got[total - 1].kind, UF_REC_GAP);
	struct uf_book_snapshot s;
	snap(&x, 5, &s);
	assert_int_equal(s.flags & UF_RECF_STALE, UF_RECF_STALE);
	assert_int_equal(s.nbid, 1);

	/* A new session: the publisher starts over and says so (one RESET record), every image
	 * book empties and stale clears, in the step that publishes the record. */
	int k = uf_publish_new_session(x.pub, "SESSION002", x.recs, UF_ARRAY_SIZE(x.recs));
	assert_int_equal(k, 1);
	assert_int_equal(uf_sink_new_session(&x.sink, x.recs, 1), 0);
	read_exactly(&x, got, 1);
	assert_int_equal(got[0].kind, UF_REC_RESET);
	assert_int_equal(got[0].shares, UF_RESET_NEW_SESSION);
	assert_int_equal(got[0].feed_seq, 1);
	assert_int_equal(got[0].flags, UF_RECF_LAST);
	assert_memory_equal(&got[0].ref, "SESSION0", 8);
	assert_memory_equal(&got[0].aux, "02", 2);
	snap(&x, 5, &s);
	assert_int_equal(s.flags & UF_RECF_STALE, 0);
	assert_int_equal(s.nbid, 0);
	assert_int_equal(s.nask, 0);
	assert_int_equal(s.stamp, total + 1);  /* the image is at the RESET's step, not before */
	assert_string_equal(s.symbol, "AAPL"); /* the directory stays */
	fx_teardown(&x);
}

/* A book first seen after a gap: its records carry UF_RECF_STALE (the publisher doubts every
 * book after an unrecovered gap), and so must its image entry, made after the gap's STALE-all
 * touched only the entries present then (a late joiner took it as sound). */
static void test_sink_book_first_seen_after_a_gap_is_stale_in_the_image(void **state)
{
	(void)state;
	struct fx x;
	size_t n;
	fx_setup(&x, 16);
	const struct uf_itch_msg m[] = {dir(5, "AAPL"), add(5, 1, 'B', 100, 1000)};
	assert_int_equal(step(&x, m, 2, &n), 0);
	int g = uf_publish_gap(x.pub, x.seq, 7, x.recs, UF_ARRAY_SIZE(x.recs));
	assert_int_equal(g, 1);
	assert_int_equal(uf_sink_gap(&x.sink, x.recs, (size_t)g), 0);
	/* after the gap: a new book (9), directory and both sides, and a trade of one (11)
	 * that has no level at all */
	const struct uf_itch_msg m2[] = {dir(9, "MSFT"), add(9, 2, 'B', 10, 500),
	                                 add(9, 3, 'S', 20, 510), dir(11, "IBM"),
	                                 trade(11, 5, 700)};
	assert_int_equal(step(&x, m2, 5, &n), 0);
	for (size_t i = 0; i < n; i++)
		if (x.recs[i].instrument == 9 || x.recs[i].instrument == 11)
			assert_true(x.recs[i].flags & UF_RECF_STALE); /* the stream doubts them */
	struct uf_book_snapshot s;
	snap(&x, 9, &s);
	assert_int_equal(s.nbid, 1);
	assert_int_equal(s.nask, 1);
	assert_int_equal(s.flags & UF_RECF_STALE, UF_RECF_STALE);
	snap(&x, 11, &s);
	assert_int_equal(s.trades, 1);
	assert_int_equal(s.flags & UF_RECF_STALE, UF_RECF_STALE);
	snap(&x, 5, &s);
	assert_int_equal(s.flags & UF_RECF_STALE, UF_RECF_STALE); /* as before */
	/* a new session clears it, and books made then are sound */
	int k = uf_publish_new_session(x.pub, "SESSION002", x.recs, UF_ARRAY_SIZE(x.recs));
	assert_int_equal(uf_sink_new_session(&x.sink, x.recs, (size_t)k), 0);
	const struct uf_itch_msg m3[] = {add(9, 4, 'B', 10, 500)};
	assert_int_equal(step(&x, m3, 1, &n), 0);
	snap(&x, 9, &s);
	assert_int_equal(s.flags & UF_RECF_STALE, 0);
	fx_teardown(&x);
}

/* A side deeper than the image's depth is cut to depth and flagged truncated (the sink asks
 * the publisher for depth + 1 levels); when it shrinks back to depth the flag clears. */
static void test_sink_flags_a_deeper_book_truncated(void **state)
{
	(void)state;
	struct fx x;
	size_t n;
	struct uf_book_snapshot s;
	fx_setup(&x, 16);
	struct uf_itch_msg m[9];
	m[0] = dir(4, "DEEP");
	for (int i = 0; i < 6; i++) /* 6 bid levels: one more than depth 5 */
		m[1 + i] = add(4, 10 + (uint64_t)i, 'B', 100, 1000 - 10 * (uint32_t)i);
	m[7] = add(4, 20, 'S', 100, 2000); /* one ask level */
	assert_int_equal(step(&x, m, 8, &n), 0);
	snap(&x, 4, &s);
	assert_int_equal(s.nbid, 5);
	assert_int_equal(s.bid[0].price, 1000);
	assert_int_equal(s.bid[4].price, 960);
	assert_int_equal(s.nask, 1);
	assert_int_equal(s.flags & UF_BOOKF_TRUNCATED_BID, UF_BOOKF_TRUNCATED_BID);
	assert_int_equal(s.flags & UF_BOOKF_TRUNCATED_ASK, 0);
	/* The deepest bid leaves: exactly depth levels, the copy is whole again. */
	struct uf_itch_msg d = msg('D', 4);
	d.u.del.order_ref = 15;
	assert_int_equal(step(&x, &d, 1, &n), 0);
	snap(&x, 4, &s);
	assert_int_equal(s.nbid, 5);
	assert_int_equal(s.flags & UF_BOOKF_TRUNCATED, 0);
	fx_teardown(&x);
}

/* ring.group (has_gid/gid) reaches the ring: its private directory belongs to that group.
 * Forced: a group other than the process's own when running as root. */
static void test_sink_ring_gets_the_configured_group(void **state)
{
	(void)state;
	struct fx x;
	struct stat st;
	char dir[256];
	const char *base = getenv("UF_RING_DIR") ? getenv("UF_RING_DIR") : "/dev/shm";
	g_gid = geteuid() == 0 ? (getegid() == 4 ? 5u : 4u) : (uint32_t)getegid();
	g_has_gid = 1;
	fx_setup(&x, 16);
	g_has_gid = 0;
	snprintf(dir, sizeof(dir), "%s/uf.%s", base, x.name);
	assert_int_equal(stat(dir, &st), 0);
	assert_int_equal(st.st_gid, g_gid);
	fx_teardown(&x);
}

static struct uf_itch_msg execp(uint16_t loc, uint64_t ref, uint32_t shares, uint64_t match,
                                uint8_t printable, uint32_t price)
{
	struct uf_itch_msg m = msg('C', loc);
	m.u.exec.order_ref = ref;
	m.u.exec.shares = shares;
	m.u.exec.match = match;
	m.u.exec.printable = printable;
	m.u.exec.price = price;
	return m;
}

static struct uf_itch_msg cross(uint16_t loc, uint64_t shares, uint32_t price, uint64_t match)
{
	struct uf_itch_msg m = msg('Q', loc);
	uf_symbol_pad(m.u.cross.stock, "X");
	m.u.cross.shares = shares;
	m.u.cross.price = price;
	m.u.cross.match = match;
	m.u.cross.cross_type = 'O';
	return m;
}

static struct uf_itch_msg broken(uint16_t loc, uint64_t match)
{
	struct uf_itch_msg m = msg('B', loc);
	m.u.broken.match = match;
	return m;
}

/* Volume, last trade and trade count in the image are exactly what the TRADE records say
 * (uf_rec_trade_prints): a non-printable execution, a broken trade and a cross of 0 shares
 * move nothing; the publisher's instrument view agrees; a new session starts them over. */
static void test_sink_image_trades_follow_the_record_contract(void **state)
{
	(void)state;
	struct fx x;
	size_t n;
	struct uf_book_snapshot s;
	fx_setup(&x, 16);
	const struct uf_itch_msg m[] = {
	    dir(2, "TRD"),
	    add(2, 1, 'S', 1000, 5000),
	    trade(2, 100, 4990),            /* P: prints 100 @ 4990 */
	    execp(2, 1, 200, 7, 'Y', 5010), /* C printable: 200 @ 5010 */
	    execp(2, 1, 300, 8, 'N', 5020), /* C non-printable: nothing */
	    cross(2, 0, 5030, 9),           /* Q of 0 shares: nothing */
	    broken(2, 7),                   /* B: nothing (the record has no shares) */
	};
	assert_int_equal(step(&x, m, UF_ARRAY_SIZE(m), &n), 0);
	uint64_t vol = 0, trades = 0;
	int64_t last = 0;
	for (size_t i = 0; i < n; i++)
		if (uf_rec_trade_prints(&x.recs[i])) {
			vol += x.recs[i].shares;
			trades++;
			last = x.recs[i].price;
		}
	assert_int_equal(vol, 300);
	assert_int_equal(trades, 2);
	snap(&x, 2, &s);
	assert_int_equal(s.volume, vol);
	assert_int_equal(s.trades, trades);
	assert_int_equal(s.last_price, last);
	assert_int_equal(s.last_price, 5010);
	const struct uf_pub_instrument *pi = uf_publish_instrument(x.pub, 2);
	assert_int_equal(pi->volume, vol);
	assert_int_equal(pi->last_trade_price, 5010);
	/* A cross with shares prints. */
	const struct uf_itch_msg q = cross(2, 50, 5040, 10);
	assert_int_equal(step(&x, &q, 1, &n), 0);
	snap(&x, 2, &s);
	assert_int_equal(s.volume, 350);
	assert_int_equal(s.last_price, 5040);
	/* A new session: volume and last trade start over, in the image and the publisher. */
	int k = uf_publish_new_session(x.pub, "SESSION003", x.recs, UF_ARRAY_SIZE(x.recs));
	assert_int_equal(uf_sink_new_session(&x.sink, x.recs, (size_t)k), 0);
	snap(&x, 2, &s);
	assert_int_equal(s.volume, 0);
	assert_int_equal(s.trades, 0);
	assert_int_equal(s.last_price, 0);
	assert_int_equal(pi->volume, 0);
	assert_int_equal(pi->last_trade_price, 0);
	fx_teardown(&x);
}

/* Doubts reach the stream and the image: an integrity error (unknown reference) and a full
 * level table each put their book (only theirs) stale with one STALE record; a decode doubt
 * of every book (uf_publish_doubt, UF_INSTRUMENT_ALL) flags every image entry. */
static void test_sink_doubts_mark_their_books_stale(void **state)
{
	(void)state;
	struct fx x;
	size_t n;
	struct uf_book_snapshot s;
	fx_setup(&x, 16);
	const struct uf_itch_msg m1[] = {dir(1, "ONE"), dir(2, "TWO"), dir(3, "THREE"),
	                                 add(1, 1, 'B', 10, 100), add(2, 2, 'B', 10, 100)};
	assert_int_equal(step(&x, m1, UF_ARRAY_SIZE(m1), &n), 0);
	struct uf_itch_msg del = msg('D', 1);
	del.u.del.order_ref = 999; /* unknown: book 1 misses something */
	assert_int_equal(step(&x, &del, 1, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(x.recs[0].kind, UF_REC_STALE);
	assert_int_equal(x.recs[0].instrument, 1);
	assert_int_equal(x.recs[0].aux, UF_STALE_INTEGRITY);
	snap(&x, 1, &s);
	assert_int_equal(s.flags & UF_RECF_STALE, UF_RECF_STALE);
	snap(&x, 2, &s);
	assert_int_equal(s.flags & UF_RECF_STALE, 0);
	/* Book 1's next record carries the flag. */
	const struct uf_itch_msg a = add(1, 3, 'B', 5, 100);
	assert_int_equal(step(&x, &a, 1, &n), 0);
	assert_true(x.recs[n - 1].flags & UF_RECF_STALE);
	/* Every book: one record, every entry stale. */
	int k = uf_publish_doubt(x.pub, UF_INSTRUMENT_ALL, UF_STALE_DECODE, x.seq++, RX_NS, x.recs,
	                         UF_ARRAY_SIZE(x.recs));
	assert_int_equal(k, 1);
	assert_int_equal(x.recs[0].instrument, UF_INSTRUMENT_ALL);
	assert_int_equal(uf_sink_records(&x.sink, x.recs, 1, RX_NS), 0);
	for (uint32_t id = 1; id <= 3; id++) {
		snap(&x, id, &s);
		assert_int_equal(s.flags & UF_RECF_STALE, UF_RECF_STALE);
	}
	/* Again: nothing new to say, no record. */
	assert_int_equal(uf_publish_doubt(x.pub, 2, UF_STALE_DECODE, x.seq++, RX_NS, x.recs,
	                                  UF_ARRAY_SIZE(x.recs)),
	                 0);
	fx_teardown(&x);
}

/* A full level table puts the refused order's book in doubt (publisher of 2 levels). */
static void test_sink_full_table_marks_the_book_stale(void **state)
{
	(void)state;
	struct fx x;
	size_t n;
	struct uf_book_snapshot s;
	fx_setup(&x, 16);
	uf_publish_destroy(x.pub);
	struct uf_publish_params pp;
	uf_publish_params_default(&pp);
	pp.max_instruments = 16;
	pp.max_orders = 1024;
	pp.max_levels = 2;
	pp.numa_node = -1;
	assert_int_equal(uf_publish_create(&pp, &x.pub), 0);
	x.sink.pub = x.pub;
	const struct uf_itch_msg m[] = {dir(6, "FULL"), dir(7, "OTHER"), add(7, 1, 'B', 10, 100),
	                                add(6, 2, 'B', 10, 100), add(6, 3, 'B', 10, 101)};
	assert_int_equal(step(&x, m, UF_ARRAY_SIZE(m), &n), 0);
	assert_int_equal(x.recs[n - 1].kind, UF_REC_STALE);
	assert_int_equal(x.recs[n - 1].instrument, 6);
	assert_int_equal(x.recs[n - 1].aux, UF_STALE_TABLE_FULL);
	assert_int_equal(x.recs[n - 1].shares, UF_PUB_ERR_LEVELS_FULL);
	snap(&x, 6, &s);
	assert_int_equal(s.flags & UF_RECF_STALE, UF_RECF_STALE);
	assert_int_equal(s.nbid, 1);
	snap(&x, 7, &s);
	assert_int_equal(s.flags & UF_RECF_STALE, 0);
	fx_teardown(&x);
}

static void test_sink_instrument_enters_with_snapshot(void **state)
{
	(void)state;
	struct fx x;
	size_t n, published;
	struct uf_record got[64];
	fx_setup(&x, 16);
	const struct uf_itch_msg m[] = {dir(7, "IBM"), add(7, 1, 'B', 100, 1000),
	                                add(7, 2, 'B', 100, 990), add(7, 3, 'S', 5, 1010)};
	assert_int_equal(step(&x, m, 4, &n), 0);
	read_exactly(&x, got, n); /* what the step published: not part of this check */
	assert_int_equal(
	    uf_sink_instrument_enters(&x.sink, 7, x.recs, UF_ARRAY_SIZE(x.recs), &published), 0);
	/* directory entry, SNAPSHOT_BEGIN, 3 levels, SNAPSHOT_END */
	assert_int_equal(published, 6);
	read_exactly(&x, got, published);
	assert_int_equal(got[0].kind, UF_REC_INSTRUMENT);
	assert_int_equal(got[0].instrument, 7);
	char sym[9];
	uf_symbol_unpad(sym, &got[0].ref);
	assert_string_equal(sym, "IBM");
	assert_int_equal(got[1].kind, UF_REC_SNAPSHOT_BEGIN);
	assert_int_equal(got[5].kind, UF_REC_SNAPSHOT_END);
	for (int i = 2; i < 5; i++) {
		assert_int_equal(got[i].kind, UF_REC_LEVEL);
		assert_int_equal(got[i].instrument, 7);
	}
	struct uf_book_snapshot s;
	snap(&x, 7, &s);
	assert_int_equal(s.nbid, 2);
	assert_int_equal(s.bid[0].price, 1000);
	assert_int_equal(s.bid[1].price, 990);
	assert_int_equal(s.nask, 1);
	/* An id the publisher does not have: refused, nothing published. */
	assert_int_equal(
	    uf_sink_instrument_enters(&x.sink, 1u << 20, x.recs, UF_ARRAY_SIZE(x.recs), &published),
	    -ENOENT);
	assert_int_equal(published, 0);
	fx_teardown(&x);
}

/* A book named after a doubt of every book (its entry did not exist when the doubt came),
 * and one named in the same deferred bracket as that doubt: both image entries are stale, as
 * the records say (the directory record carries UF_RECF_STALE). */
static void test_sink_books_named_around_a_doubt_of_all_are_stale(void **state)
{
	(void)state;
	struct fx x;
	size_t n;
	struct uf_book_snapshot s;
	fx_setup(&x, 16);
	uf_sink_defer_image(&x.sink, 1);
	const struct uf_itch_msg m0[] = {dir(1, "ONE")};
	assert_int_equal(step(&x, m0, 1, &n), 0); /* the bracket is open: 1 not released yet */
	int k = uf_publish_doubt(x.pub, UF_INSTRUMENT_ALL, UF_STALE_DECODE, x.seq++, RX_NS, x.recs,
	                         UF_ARRAY_SIZE(x.recs));
	assert_int_equal(k, 1);
	assert_int_equal(uf_sink_records(&x.sink, x.recs, 1, RX_NS), 0);
	assert_int_equal(uf_sink_image_flush(&x.sink), 0);
	snap(&x, 1, &s);
	assert_int_equal(s.flags & UF_RECF_STALE, UF_RECF_STALE);
	/* Named after the doubt, in a later bracket: its directory record says it is stale. */
	const struct uf_itch_msg m1[] = {dir(5, "FIVE")};
	assert_int_equal(step(&x, m1, 1, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(x.recs[0].kind, UF_REC_INSTRUMENT);
	assert_true(x.recs[0].flags & UF_RECF_STALE);
	assert_int_equal(uf_sink_image_flush(&x.sink), 0);
	snap(&x, 5, &s);
	assert_int_equal(s.flags & UF_RECF_STALE, UF_RECF_STALE);
	/* A RESET clears both, and a book named then is clean. */
	k = uf_publish_new_session(x.pub, "SESSION002", x.recs, UF_ARRAY_SIZE(x.recs));
	assert_int_equal(uf_sink_new_session(&x.sink, x.recs, (size_t)k), 0);
	const struct uf_itch_msg m2[] = {dir(6, "SIX")};
	assert_int_equal(step(&x, m2, 1, &n), 0);
	assert_int_equal(uf_sink_image_flush(&x.sink), 0);
	const uint32_t ids[] = {1, 5, 6};
	for (size_t i = 0; i < UF_ARRAY_SIZE(ids); i++) {
		snap(&x, ids[i], &s);
		assert_int_equal(s.flags & UF_RECF_STALE, 0);
	}
	fx_teardown(&x);
}

/* The feed's case (test_feed_e2e, new_session_clears_stale_books, under load): the last
 * records of a day that lost a gap (every book in doubt: its records carry UF_RECF_STALE) and
 * the next day's RESET in one receive batch, so one deferred image bracket. The RESET clears
 * the image's stale flags at once; the doubts of the records before it must not come back
 * at the flush (they did: the new day's books, whole, read stale). Books doubted after the
 * RESET still are. */
static void test_sink_reset_in_the_bracket_voids_the_doubts_before_it(void **state)
{
	(void)state;
	struct fx x;
	size_t n;
	struct uf_book_snapshot s;
	fx_setup(&x, 16);
	uf_sink_defer_image(&x.sink, 1);
	const struct uf_itch_msg m0[] = {dir(5, "AAPL"), dir(7, "MSFT"), add(5, 1, 'B', 100, 1000)};
	assert_int_equal(step(&x, m0, 3, &n), 0);
	int g = uf_publish_gap(x.pub, x.seq, 7, x.recs, UF_ARRAY_SIZE(x.recs));
	assert_int_equal(g, 1);
	assert_int_equal(uf_sink_gap(&x.sink, x.recs, (size_t)g), 0);
	x.seq += 7;
	/* day 1 goes on after the gap: both books move, their records doubted, not flushed */
	const struct uf_itch_msg m1[] = {add(5, 2, 'S', 50, 1100), add(7, 3, 'B', 20, 400)};
	assert_int_equal(step(&x, m1, 2, &n), 0);
	for (size_t i = 0; i < n; i++)
		if (x.recs[i].kind == UF_REC_LEVEL)
			assert_true(x.recs[i].flags & UF_RECF_STALE);
	/* day 2 in the same bracket: the RESET, then book 5 alone */
	int k = uf_publish_new_session(x.pub, "SESSION002", x.recs, UF_ARRAY_SIZE(x.recs));
	assert_int_equal(k, 1);
	assert_int_equal(uf_sink_new_session(&x.sink, x.recs, (size_t)k), 0);
	x.seq = 1;
	const struct uf_itch_msg m2[] = {add(5, 1, 'B', 10, 900)};
	assert_int_equal(step(&x, m2, 1, &n), 0);
	assert_int_equal(uf_sink_image_flush(&x.sink), 0);
	snap(&x, 5, &s);
	assert_int_equal(s.flags & UF_RECF_STALE, 0);
	assert_int_equal(s.nbid, 1);
	assert_int_equal(s.bid[0].price, 900);
	assert_int_equal(s.bid[0].shares, 10);
	assert_int_equal(s.nask, 0); /* day 1's ask is gone */
	snap(&x, 7, &s);
	assert_int_equal(s.flags & UF_RECF_STALE, 0);
	assert_int_equal(s.nbid, 0);
	/* a doubt after the RESET, in the next bracket, still flags its book */
	k = uf_publish_doubt(x.pub, 5, UF_STALE_DECODE, x.seq++, RX_NS, x.recs,
	                     UF_ARRAY_SIZE(x.recs));
	assert_int_equal(k, 1);
	assert_int_equal(uf_sink_records(&x.sink, x.recs, 1, RX_NS), 0);
	const struct uf_itch_msg m3[] = {add(5, 4, 'B', 5, 910)};
	assert_int_equal(step(&x, m3, 1, &n), 0);
	assert_int_equal(uf_sink_image_flush(&x.sink), 0);
	snap(&x, 5, &s);
	assert_int_equal(s.flags & UF_RECF_STALE, UF_RECF_STALE);
	assert_int_equal(s.nbid, 2);
	snap(&x, 7, &s);
	assert_int_equal(s.flags & UF_RECF_STALE, 0);
	fx_teardown(&x);
}

/* A book that enters the symbol filter while the publisher has it in doubt (its STALE record
 * was filtered out then): its directory record says so and its image entry is stale. */
static void test_sink_instrument_enters_in_doubt(void **state)
{
	(void)state;
	struct fx x;
	size_t published;
	struct uf_record got[64];
	struct uf_book_snapshot s;
	fx_setup(&x, 16);
	struct uf_record scratch[8];
	struct uf_itch_msg m[] = {dir(7, "IBM"), add(7, 1, 'B', 100, 1000), msg('D', 7)};
	m[2].u.del.order_ref = 999;                   /* unknown: book 7 in doubt */
	for (size_t i = 0; i < UF_ARRAY_SIZE(m); i++) /* not handed to the sink: filtered */
		assert_true(uf_publish_apply(x.pub, &m[i], x.seq++, RX_NS, scratch,
		                             UF_ARRAY_SIZE(scratch)) >= 0);
	assert_int_equal(uf_publish_instrument(x.pub, 7)->stale, 1);
	assert_int_equal(
	    uf_sink_instrument_enters(&x.sink, 7, x.recs, UF_ARRAY_SIZE(x.recs), &published), 0);
	assert_int_equal(published, 4); /* directory, BEGIN, 1 level, END */
	read_exactly(&x, got, published);
	assert_int_equal(got[0].kind, UF_REC_INSTRUMENT);
	assert_int_equal(got[0].flags, UF_RECF_LAST | UF_RECF_STALE);
	assert_int_equal(got[1].kind, UF_REC_SNAPSHOT_BEGIN);
	assert_true(got[1].flags & UF_RECF_STALE);
	snap(&x, 7, &s);
	assert_int_equal(s.flags & UF_RECF_STALE, UF_RECF_STALE);
	assert_int_equal(s.nbid, 1);
	fx_teardown(&x);
}

/* The image holds 4 instruments, the publisher 16: a book of instrument 9 cannot go into
 * the image. The sink says so, the stream still has every record, and the other
 * instrument of the same step still gets its image update. */
static void test_sink_returns_image_range_error(void **state)
{
	(void)state;
	struct fx x;
	size_t n;
	struct uf_record got[64];
	fx_setup(&x, 4);
	const struct uf_itch_msg m[] = {add(9, 1, 'B', 100, 1000), add(2, 2, 'B', 300, 500)};
	assert_int_equal(step(&x, m, 2, &n), -ERANGE);
	read_exactly(&x, got, n); /* every record of the step, the refused instrument's too */
	assert_int_equal(got[0].instrument, 9);
	assert_int_equal(got[n - 1].instrument, 2);
	struct uf_book_snapshot s;
	snap(&x, 2, &s);
	assert_int_equal(s.nbid, 1);
	assert_int_equal(s.bid[0].shares, 300);
	/* The next step without the out-of-range instrument succeeds. */
	const struct uf_itch_msg m2[] = {add(2, 3, 'S', 1, 600)};
	assert_int_equal(step(&x, m2, 1, &n), 0);
	fx_teardown(&x);
}

/* Every defined status code on one instrument goes into the image (ring layout 1 kept 8 and
 * the sink returned -ENOSPC for a ninth: image_errors on a generated day); a code beyond the
 * enum is refused (-EINVAL, which the pipeline counts) and touches no other code's slot. */
static void test_sink_keeps_every_status_code_and_refuses_unknown_ones(void **state)
{
	(void)state;
	struct fx x;
	struct uf_record r[UF_STATUS_MAX + 1];
	fx_setup(&x, 16);
	memset(r, 0, sizeof(r));
	for (uint32_t i = 0; i <= UF_STATUS_MAX; i++) {
		r[i].kind = UF_REC_STATUS;
		r[i].flags = UF_RECF_LAST;
		r[i].instrument = 4;
		r[i].aux = UF_STATUS_MAX - i; /* highest first; r[UF_STATUS_MAX] is set below */
		r[i].price = (int64_t)(1000 + r[i].aux);
		r[i].shares = (uint64_t)(100 + r[i].aux);
	}
	r[UF_STATUS_MAX].aux = UF_STATUS_MAX + 1;
	assert_int_equal(uf_sink_records(&x.sink, r, UF_STATUS_MAX, RX_NS), 0);
	assert_int_equal(uf_sink_records(&x.sink, r + UF_STATUS_MAX, 1, RX_NS), -EINVAL);
	struct uf_book_snapshot s;
	snap(&x, 4, &s);
	assert_int_equal(s.nstatus, UF_STATUS_MAX);
	for (uint32_t k = 0; k < s.nstatus; k++) {
		assert_int_equal(s.status[k].code, k + 1);
		assert_int_equal(s.status[k].price, 1000 + k + 1);
		assert_int_equal(s.status[k].shares, 100 + k + 1);
	}
	struct uf_record got[UF_STATUS_MAX + 1];
	read_exactly(&x, got, UF_STATUS_MAX + 1); /* the refused status is in the stream */
	assert_int_equal(got[UF_STATUS_MAX].aux, UF_STATUS_MAX + 1);
	fx_teardown(&x);
}

/* ---- Issue 14: the deferred image (uf_sink_defer_image) ---- */

/* step() with its own receive time (the image books carry their latest change's). */
static int step_rx(struct fx *x, const struct uf_itch_msg *m, size_t nm, uint64_t rx)
{
	size_t k;
	return sink_fx_step(x->pub, &x->sink, &x->seq, m, nm, rx, x->recs, UF_ARRAY_SIZE(x->recs),
	                    &k);
}

/* The producer's seqlock word of an image entry: +2 per write, odd while a bracket holds it.
 * Read from the producer's side (the test is the producer): how often the sink wrote it. */
static uint64_t entry_lock(struct fx *x, uint32_t id)
{
	return uf_image_entry_at(x->sink.ring->image, id)->lock;
}

static int levels_equal(const struct uf_level *a, uint32_t na, const struct uf_level *b, int nb)
{
	if (nb < 0 || (uint32_t)nb != na)
		return 0;
	for (uint32_t i = 0; i < na; i++)
		if (a[i].price != b[i].price || a[i].shares != b[i].shares ||
		    a[i].orders != b[i].orders)
			return 0;
	return 1;
}

/* 1 when both sides of `s` are exactly the publisher's book of s->instrument (the books of
 * these tests are shallower than the image depth, so the whole book). */
static int snap_is_publisher(struct fx *x, const struct uf_book_snapshot *s)
{
	struct uf_level lv[UF_SINK_MAX_DEPTH + 1];
	int nb = uf_publish_top(x->pub, s->instrument, UF_SIDE_BID, lv, UF_ARRAY_SIZE(lv));
	assert_true(nb <= (int)x->cfg.book.depth);
	if (!levels_equal(s->bid, s->nbid, lv, nb))
		return 0;
	int na = uf_publish_top(x->pub, s->instrument, UF_SIDE_ASK, lv, UF_ARRAY_SIZE(lv));
	assert_true(na <= (int)x->cfg.book.depth);
	return levels_equal(s->ask, s->nask, lv, na);
}

static int image_is_publisher(struct fx *x, uint32_t id)
{
	struct uf_book_snapshot s;
	snap(x, id, &s);
	return snap_is_publisher(x, &s);
}

/* Deferred: the steps publish, the image books and commit wait; the flush copies each dirty
 * book once (its entry written once for three steps), stamps and commits with the tail; a
 * trade of the window holds its entry until then and counts once. */
static void test_sink_deferred_image_waits_for_the_flush(void **state)
{
	(void)state;
	struct fx x;
	struct uf_book_snapshot s;
	fx_setup(&x, 16);
	uf_sink_defer_image(&x.sink, 1);
	const struct uf_itch_msg m0[] = {dir(1, "ONE"),
	                                 dir(2, "TWO"),
	                                 dir(3, "THREE"),
	                                 add(1, 1, 'B', 100, 1000),
	                                 add(1, 2, 'S', 100, 1010),
	                                 add(2, 3, 'B', 50, 2000),
	                                 add(3, 4, 'S', 70, 3000)};
	assert_int_equal(step_rx(&x, m0, UF_ARRAY_SIZE(m0), RX_NS), 0);
	assert_int_equal(uf_consumer_image_seq(x.cons), 0);
	assert_int_equal(uf_sink_image_flush(&x.sink), 0);
	uint64_t base = uf_ring_tail(x.sink.ring);
	assert_true(base >= UF_ARRAY_SIZE(m0));
	assert_int_equal(uf_consumer_image_seq(x.cons), base);
	for (uint32_t id = 1; id <= 3; id++) {
		snap(&x, id, &s);
		assert_true(snap_is_publisher(&x, &s));
		assert_int_equal(s.stamp, base);
	}
	uint64_t lock1 = entry_lock(&x, 1), lock2 = entry_lock(&x, 2), lock3 = entry_lock(&x, 3);
	assert_int_equal(lock1 & 1, 0);

	/* Instrument 1 changes in three steps (levels only), 2 trades once (a 'P': no level). */
	const struct uf_itch_msg w1[] = {add(1, 5, 'B', 200, 1001)};
	const struct uf_itch_msg w2[] = {del(1, 2), trade(2, 30, 2001)};
	const struct uf_itch_msg w3[] = {add(1, 6, 'S', 10, 1020), add(1, 7, 'B', 5, 1001)};
	assert_int_equal(step_rx(&x, w1, UF_ARRAY_SIZE(w1), RX_NS + 1), 0);
	assert_int_equal(step_rx(&x, w2, UF_ARRAY_SIZE(w2), RX_NS + 2), 0);
	assert_int_equal(step_rx(&x, w3, UF_ARRAY_SIZE(w3), RX_NS + 3), 0);
	uint64_t tail = uf_ring_tail(x.sink.ring);
	assert_true(tail >= base + 5);
	/* Nothing committed, no book copied: 1's entry is the old book, not even rewritten. */
	assert_int_equal(uf_consumer_image_seq(x.cons), base);
	snap(&x, 1, &s);
	assert_int_equal(s.stamp, base);
	assert_int_equal(s.nbid, 1);
	assert_int_equal(s.bid[0].price, 1000);
	assert_int_equal(s.bid[0].shares, 100);
	assert_int_equal(s.nask, 1);
	assert_int_equal(s.ask[0].price, 1010);
	assert_int_equal(s.update_rx_ts, RX_NS);
	assert_false(snap_is_publisher(&x, &s));
	assert_int_equal(entry_lock(&x, 1), lock1);
	/* The trade's entry is held by the open bracket (odd): a reader gives up (~20 ms). */
	assert_int_equal(entry_lock(&x, 2), lock2 + 1);
	assert_int_equal(uf_consumer_snapshot(x.cons, 2, &s), -EBUSY);

	assert_int_equal(uf_sink_image_flush(&x.sink), 0);
	assert_int_equal(uf_ring_tail(x.sink.ring), tail); /* the flush publishes nothing */
	assert_int_equal(uf_consumer_image_seq(x.cons), tail);
	snap(&x, 1, &s);
	assert_true(snap_is_publisher(&x, &s));
	assert_int_equal(s.nbid, 2); /* 1001 (205) and 1000 (100); ask 1010 gone, 1020 in */
	assert_int_equal(s.bid[0].shares, 205);
	assert_int_equal(s.ask[0].price, 1020);
	assert_int_equal(s.stamp, tail);
	assert_int_equal(s.update_rx_ts, RX_NS + 3);    /* its latest change */
	assert_int_equal(entry_lock(&x, 1), lock1 + 2); /* copied once for three steps */
	snap(&x, 2, &s);
	assert_true(snap_is_publisher(&x, &s));
	assert_int_equal(s.stamp, tail);
	assert_int_equal(s.volume, 30);
	assert_int_equal(s.trades, 1);
	assert_int_equal(s.last_price, 2001);
	assert_int_equal(uf_publish_instrument(x.pub, 2)->volume, 30);
	assert_int_equal(entry_lock(&x, 2), lock2 + 2);
	snap(&x, 3, &s); /* quiet: untouched, the commit carries its stamp */
	assert_true(snap_is_publisher(&x, &s));
	assert_int_equal(s.stamp, tail);
	assert_int_equal(entry_lock(&x, 3), lock3);
	/* Nothing open: another flush changes nothing. */
	assert_int_equal(uf_sink_image_flush(&x.sink), 0);
	assert_int_equal(entry_lock(&x, 1), lock1 + 2);
	assert_int_equal(uf_consumer_image_seq(x.cons), tail);
	fx_teardown(&x);
}

/* One deferred step that changes instrument 1's book: afterwards the image's book 1 is the
 * old one (so the flush that follows is what the caller checks). */
static void pending_change(struct fx *x, uint64_t ref, uint8_t side, uint32_t price)
{
	const struct uf_itch_msg m = add(1, ref, side, 10, price);
	assert_int_equal(step_rx(x, &m, 1, RX_NS), 0);
	assert_false(image_is_publisher(x, 1));
	assert_true(uf_consumer_image_seq(x->cons) < uf_ring_tail(x->sink.ring));
}

static void assert_flushed(struct fx *x)
{
	struct uf_book_snapshot s;
	snap(x, 1, &s);
	assert_true(snap_is_publisher(x, &s));
	assert_int_equal(s.stamp, uf_ring_tail(x->sink.ring));
	assert_int_equal(uf_consumer_image_seq(x->cons), uf_ring_tail(x->sink.ring));
}

/* A gap, a filter entry, turning the deferral off and closing the sink each flush the
 * pending books first: the image is never left behind the stream. */
static void test_sink_deferred_image_flushed_by_gap_enter_off_and_close(void **state)
{
	(void)state;
	struct fx x;
	struct uf_record scratch[64], got[64];
	size_t published;
	fx_setup(&x, 16);
	uf_sink_defer_image(&x.sink, 1);
	const struct uf_itch_msg m0[] = {dir(1, "ONE"), dir(2, "TWO"), add(1, 1, 'B', 100, 1000),
	                                 add(2, 2, 'S', 100, 500)};
	assert_int_equal(step_rx(&x, m0, UF_ARRAY_SIZE(m0), RX_NS), 0);
	assert_int_equal(uf_sink_image_flush(&x.sink), 0);
	assert_flushed(&x);

	/* a gap: flushed, then every entry stale */
	pending_change(&x, 10, 'B', 1001);
	int g = uf_publish_gap(x.pub, x.seq, 3, x.recs, UF_ARRAY_SIZE(x.recs));
	assert_int_equal(g, 1);
	x.seq += 3;
	assert_int_equal(uf_sink_gap(&x.sink, x.recs, (size_t)g), 0);
	assert_flushed(&x);
	struct uf_book_snapshot s;
	snap(&x, 1, &s);
	assert_int_equal(s.flags & UF_RECF_STALE, UF_RECF_STALE);

	/* instrument 2 enters the filter */
	pending_change(&x, 11, 'S', 1010);
	assert_int_equal(
	    uf_sink_instrument_enters(&x.sink, 2, scratch, UF_ARRAY_SIZE(scratch), &published), 0);
	assert_true(published >= 3);
	assert_flushed(&x);
	assert_true(image_is_publisher(&x, 2));

	/* deferral off: flushed now, and the next step copies its books at once */
	pending_change(&x, 12, 'B', 1002);
	uf_sink_defer_image(&x.sink, 0);
	assert_flushed(&x);
	const struct uf_itch_msg a = add(1, 13, 'S', 10, 1011);
	assert_int_equal(step_rx(&x, &a, 1, RX_NS), 0);
	assert_flushed(&x);

	/* close: the consumer of the closed ring finds the final books */
	uf_sink_defer_image(&x.sink, 1);
	pending_change(&x, 14, 'B', 1003);
	struct uf_level bid[8], ask[8];
	int nb = uf_publish_top(x.pub, 1, UF_SIDE_BID, bid, 8);
	int na = uf_publish_top(x.pub, 1, UF_SIDE_ASK, ask, 8);
	uint64_t tail = uf_ring_tail(x.sink.ring);
	uf_sink_close(&x.sink);
	assert_int_equal(uf_consumer_image_seq(x.cons), tail);
	snap(&x, 1, &s);
	assert_int_equal(s.stamp, tail);
	assert_true(levels_equal(s.bid, s.nbid, bid, nb));
	assert_true(levels_equal(s.ask, s.nask, ask, na));
	assert_int_equal(s.nbid, 4); /* 1003, 1002, 1001, 1000 */
	/* and the ring says closed once its records are read */
	uint64_t first;
	int rc;
	for (int i = 0; i < 1000 && (rc = uf_consumer_read(x.cons, got, 64, &first)) > 0; i++)
		;
	assert_int_equal(rc, -EPIPE);
	fx_teardown(&x); /* closes again: a no-op */
}

/* A price-level book rebuilt by a consumer: the snapshot, then LEVEL records. */
struct lv_book {
	struct uf_level side[2][16]; /* [0] bids highest first, [1] asks lowest first */
	uint32_t n[2];
};

static void lv_book_load(struct lv_book *b, const struct uf_book_snapshot *s)
{
	memset(b, 0, sizeof(*b));
	assert_true(s->nbid <= 16 && s->nask <= 16);
	memcpy(b->side[0], s->bid, s->nbid * sizeof(s->bid[0]));
	memcpy(b->side[1], s->ask, s->nask * sizeof(s->ask[0]));
	b->n[0] = s->nbid;
	b->n[1] = s->nask;
}

static void lv_book_apply(struct lv_book *b, const struct uf_record *r)
{
	int k = r->side == UF_SIDE_BID ? 0 : 1;
	struct uf_level *lv = b->side[k];
	uint32_t i = 0;
	/* position: first level not better than the record's price */
	while (i < b->n[k] && (k == 0 ? lv[i].price > r->price : lv[i].price < r->price))
		i++;
	int here = i < b->n[k] && lv[i].price == r->price;
	if (r->shares == 0 && r->orders == 0) {
		if (here) {
			memmove(&lv[i], &lv[i + 1], (b->n[k] - i - 1) * sizeof(*lv));
			b->n[k]--;
		}
		return;
	}
	if (!here) {
		assert_true(b->n[k] < 16);
		memmove(&lv[i + 1], &lv[i], (b->n[k] - i) * sizeof(*lv));
		b->n[k]++;
	}
	lv[i].price = r->price;
	lv[i].shares = r->shares;
	lv[i].orders = r->orders;
	lv[i].reserved = 0;
}

static int lv_book_is_publisher(struct fx *x, uint32_t id, const struct lv_book *b)
{
	struct uf_level lv[32];
	int nb = uf_publish_top(x->pub, id, UF_SIDE_BID, lv, 32);
	if (!levels_equal(b->side[0], b->n[0], lv, nb))
		return 0;
	int na = uf_publish_top(x->pub, id, UF_SIDE_ASK, lv, 32);
	return levels_equal(b->side[1], b->n[1], lv, na);
}

/* The handover while the deferred bracket is open: a late consumer snapshots a quiet
 * instrument and one changed (by levels only, so not held) in the window's steps, reads the
 * stream from the stamps, and must end with exactly the publisher's books. A ring that
 * committed at a publish inside the bracket stamps the changed book past the steps its copy
 * lacks: the consumer skips them and keeps a wrong book. */
static void test_sink_deferred_image_handover_mid_window(void **state)
{
	(void)state;
	struct fx x;
	struct uf_book_snapshot s1, s3, s;
	char err[256];
	fx_setup(&x, 16);
	uf_sink_defer_image(&x.sink, 1);
	const struct uf_itch_msg m0[] = {dir(1, "MOVE"),           dir(2, "OTHER"),
	                                 dir(3, "QUIET"),          add(1, 1, 'B', 100, 1000),
	                                 add(1, 2, 'B', 100, 999), add(1, 3, 'S', 100, 1010),
	                                 add(2, 4, 'B', 10, 2000), add(3, 5, 'B', 70, 500),
	                                 add(3, 6, 'S', 80, 510)};
	assert_int_equal(step_rx(&x, m0, UF_ARRAY_SIZE(m0), RX_NS), 0);
	assert_int_equal(uf_sink_image_flush(&x.sink), 0);
	uint64_t base = uf_ring_tail(x.sink.ring);

	/* The window: 1 changes in the first two steps, the last step only touches 2. */
	const struct uf_itch_msg w1[] = {add(1, 7, 'B', 50, 1000), add(1, 8, 'S', 20, 1009)};
	const struct uf_itch_msg w2[] = {del(1, 2), add(2, 9, 'S', 5, 2010)};
	const struct uf_itch_msg w3[] = {add(2, 10, 'B', 5, 1999)};
	assert_int_equal(step_rx(&x, w1, UF_ARRAY_SIZE(w1), RX_NS + 1), 0);
	assert_int_equal(step_rx(&x, w2, UF_ARRAY_SIZE(w2), RX_NS + 2), 0);
	assert_int_equal(step_rx(&x, w3, UF_ARRAY_SIZE(w3), RX_NS + 3), 0);
	assert_true(uf_ring_tail(x.sink.ring) > base + 4);

	/* The late consumer, mid-window. */
	uf_consumer_t *late = NULL;
	assert_int_equal(uf_consumer_attach(x.name, NULL, &late, err, sizeof(err)), 0);
	assert_int_equal(uf_consumer_snapshot(late, 1, &s1), 0); /* levels only: not held */
	assert_int_equal(uf_consumer_snapshot(late, 3, &s3), 0);
	struct lv_book b1, b3;
	lv_book_load(&b1, &s1);
	lv_book_load(&b3, &s3);
	assert_int_equal(uf_consumer_seek(late, s1.stamp < s3.stamp ? s1.stamp : s3.stamp), 0);
	struct uf_record rec;
	uint64_t seq, applied1 = 0;
	int rc;
	while ((rc = uf_consumer_next(late, &rec, &seq)) == 0) {
		if (rec.kind != UF_REC_LEVEL)
			continue;
		if (rec.instrument == 1 && seq >= s1.stamp) {
			lv_book_apply(&b1, &rec);
			applied1++;
		} else if (rec.instrument == 3 && seq >= s3.stamp) {
			lv_book_apply(&b3, &rec);
		}
	}
	assert_int_equal(rc, -EAGAIN);

	assert_int_equal(uf_sink_image_flush(&x.sink), 0);
	assert_true(lv_book_is_publisher(&x, 1, &b1));
	assert_true(lv_book_is_publisher(&x, 3, &b3));
	/* why: the snapshot of 1 is not stamped past what its entry holds, so the window's levels
	 * of 1 came from the stream */
	assert_true(s1.stamp <= base);
	assert_true(applied1 >= 3);
	/* and the flushed image agrees */
	snap(&x, 1, &s);
	assert_true(snap_is_publisher(&x, &s));
	assert_int_equal(b1.n[0], s.nbid);
	assert_int_equal(b1.n[1], s.nask);
	snap(&x, 3, &s);
	assert_true(snap_is_publisher(&x, &s));
	uf_consumer_detach(late);
	fx_teardown(&x);
}

/* A bracket that would span more than UF_SINK_IMAGE_MAX_RECS records (a snapshot load, the
 * replay of what was buffered meanwhile) is flushed by uf_sink_records itself, at the end of
 * the step that crosses the bound, so image entries are never held locked for that long. */
static void test_sink_deferred_image_flushes_itself_past_the_record_bound(void **state)
{
	(void)state;
	struct fx x;
	struct uf_book_snapshot s;
	fx_setup(&x, 16);
	uf_sink_defer_image(&x.sink, 1);
	const struct uf_itch_msg m0[] = {dir(1, "ONE"), add(1, 1, 'B', 100, 1000)};
	assert_int_equal(step_rx(&x, m0, UF_ARRAY_SIZE(m0), RX_NS), 0);
	assert_int_equal(uf_sink_image_flush(&x.sink), 0);
	uint64_t base = uf_ring_tail(x.sink.ring);
	assert_int_equal(uf_consumer_image_seq(x.cons), base);
	uint64_t ref = 100;
	int flushed = 0;
	for (int k = 0; k < 10000 && !flushed; k++) {
		/* 8 orders added and deleted: ~32 records, levels of instrument 1 only */
		struct uf_itch_msg m[17];
		for (int i = 0; i < 8; i++) {
			m[2 * i] = add(1, ref, 'S', 10, 1100 + (uint32_t)(ref % 7));
			m[2 * i + 1] = del(1, ref);
			ref++;
		}
		m[16] = add(1, ref, 'B', 1, 901); /* a book that moves: 901 grows */
		ref++;
		uint64_t before = uf_ring_tail(x.sink.ring) - base;
		assert_int_equal(step_rx(&x, m, UF_ARRAY_SIZE(m), RX_NS + (uint64_t)k), 0);
		uint64_t spanned = uf_ring_tail(x.sink.ring) - base;
		if (spanned < UF_SINK_IMAGE_MAX_RECS) {
			assert_int_equal(uf_consumer_image_seq(x.cons), base);
			continue;
		}
		/* the step that crossed the bound flushed: stamped and committed at the tail */
		assert_true(before < UF_SINK_IMAGE_MAX_RECS);
		assert_int_equal(uf_consumer_image_seq(x.cons), uf_ring_tail(x.sink.ring));
		assert_false(x.sink.image_open);
		snap(&x, 1, &s);
		assert_true(snap_is_publisher(&x, &s));
		assert_int_equal(s.stamp, uf_ring_tail(x.sink.ring));
		flushed = 1;
	}
	assert_true(flushed);
	/* and the next window starts over: nothing committed until the bound or a flush */
	uint64_t t1 = uf_ring_tail(x.sink.ring);
	const struct uf_itch_msg m1[] = {add(1, ref, 'B', 5, 901)};
	assert_int_equal(step_rx(&x, m1, UF_ARRAY_SIZE(m1), RX_NS), 0);
	assert_int_equal(uf_consumer_image_seq(x.cons), t1);
	assert_int_equal(uf_sink_image_flush(&x.sink), 0);
	assert_int_equal(uf_consumer_image_seq(x.cons), uf_ring_tail(x.sink.ring));
	fx_teardown(&x);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_sink_records_reach_ring_and_image),
	    cmocka_unit_test(test_sink_gap_marks_stale_and_session_clears),
	    cmocka_unit_test(test_sink_book_first_seen_after_a_gap_is_stale_in_the_image),
	    cmocka_unit_test(test_sink_instrument_enters_with_snapshot),
	    cmocka_unit_test(test_sink_instrument_enters_in_doubt),
	    cmocka_unit_test(test_sink_books_named_around_a_doubt_of_all_are_stale),
	    cmocka_unit_test(test_sink_reset_in_the_bracket_voids_the_doubts_before_it),
	    cmocka_unit_test(test_sink_flags_a_deeper_book_truncated),
	    cmocka_unit_test(test_sink_ring_gets_the_configured_group),
	    cmocka_unit_test(test_sink_image_trades_follow_the_record_contract),
	    cmocka_unit_test(test_sink_doubts_mark_their_books_stale),
	    cmocka_unit_test(test_sink_full_table_marks_the_book_stale),
	    cmocka_unit_test(test_sink_returns_image_range_error),
	    cmocka_unit_test(test_sink_keeps_every_status_code_and_refuses_unknown_ones),
	    cmocka_unit_test(test_sink_deferred_image_waits_for_the_flush),
	    cmocka_unit_test(test_sink_deferred_image_flushed_by_gap_enter_off_and_close),
	    cmocka_unit_test(test_sink_deferred_image_handover_mid_window),
	    cmocka_unit_test(test_sink_deferred_image_flushes_itself_past_the_record_bound),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
