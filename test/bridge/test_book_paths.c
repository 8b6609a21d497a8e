/* One record stream holding every record kind, through every consumer path, must give the
 * same books: the producer's image (the reference), the local book builder (lapped on
 * purpose mid-stream: it re-syncs from the image), the NATS remote consumer streaming and one
 * attaching late (uf-bridge's key-value bucket), the book builder fed the records read from
 * the NATS handle, Python (the library's book builder on the ring, and a nats:// handle), and
 * `uf-tail --books` on the ring and on NATS. Compared: levels, flags, directory, last trade,
 * volume, trade count, statuses.
 *
 * The test is the producer: it publishes the script below with the producer API and keeps
 * the book image the way feed/sink.c does (trade only when it prints, STALE and RESET through
 * the image setters, the touched sides of a book copied at the end of each message).
 *
 * Script (ids 1 AAPL, 2 MSFT, 3 DEEP, 4 IBM, 5 ALLST; 0 = market-wide statuses):
 *   A  directory, statuses (one per book, one market-wide, and every status code, ITCH's
 *      and IEX's, twice on ALLST: more than the 8 codes ring layout 1 kept), levels on both
 *      sides, orders (add, modify, delete, replace), trades that print (E, Q) and that do not
 *      (non-printable C, a break, a cross of 0 shares), STALE of MSFT, STALE of all, a GAP
 *      (records then say STALE)
 *   B  RESET (new session), new levels, trades and statuses: the books start over (statuses
 *      stay)
 *   C  STALE of MSFT (its later records say STALE)
 *   D  3 ring capacities of IBM level changes while the local builder reads nothing (it is
 *      lapped), paced so that uf-bridge is not
 *   E  a SNAPSHOT bracket of DEEP with other levels than it had, a last trade, then close */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <dirent.h>
#include <inttypes.h>

#include "bridge_test_util.h"
#include "ring/uf_ring.h"
#include "ring/ufbook.h"

#define CAP      4096u /* ring records: the lap phase is three of these */
#define DEPTH    16u   /* image depth: every book of the script fits (no truncation) */
#define MAX_INST 16u   /* image entries */

struct prod {
	struct uf_ring *r;       /* the ring */
	uf_book_builder_t *lv;   /* the producer's level books (the publisher's, for the image) */
	uint8_t stale[MAX_INST]; /* the producer's doubt per book: later records say STALE */
	uint64_t feed_seq;       /* message number */
};

static struct uf_record rec(uint8_t kind, uint32_t id)
{
	struct uf_record r;

	memset(&r, 0, sizeof(r));
	r.kind = kind;
	r.instrument = id;
	return r;
}

static struct uf_record lvl(uint32_t id, uint8_t side, int64_t px, uint64_t sh, uint32_t ord)
{
	struct uf_record r = rec(UF_REC_LEVEL, id);

	r.side = side;
	r.price = px;
	r.shares = sh;
	r.orders = ord;
	return r;
}

static struct uf_record ordr(uint8_t kind, uint32_t id, uint64_t ref, uint8_t side, int64_t px,
                             uint64_t sh)
{
	struct uf_record r = rec(kind, id);

	r.ref = ref;
	r.side = side;
	r.price = px;
	r.shares = sh;
	return r;
}

static struct uf_record trade(uint32_t id, int64_t px, uint64_t sh, uint32_t aux)
{
	struct uf_record r = rec(UF_REC_TRADE, id);

	r.price = px;
	r.shares = sh;
	r.aux = aux;
	r.ref = 9000 + (uint64_t)px; /* match number */
	return r;
}

static struct uf_record status(uint32_t id, uint32_t code, uint64_t shares)
{
	struct uf_record r = rec(UF_REC_STATUS, id);

	r.aux = code;
	r.shares = shares;
	return r;
}

static struct uf_record directory(uint32_t id, const char *sym, uint64_t lot, uint32_t cat)
{
	struct uf_record r = rec(UF_REC_INSTRUMENT, id);
	char b[8];

	memset(b, ' ', sizeof(b));
	memcpy(b, sym, strlen(sym));
	memcpy(&r.ref, b, 8);
	r.shares = lot;
	r.aux = cat;
	return r;
}

static struct uf_record stale(uint32_t id)
{
	struct uf_record r = rec(UF_REC_STALE, id);

	r.aux = UF_STALE_INTEGRITY;
	return r;
}

/* One exchange message: its records published, then the image updated in one bracket and
 * committed, as feed/sink.c does (uf_sink_records, uf_sink_gap). */
static void message(struct prod *p, struct uf_record *recs, size_t n)
{
	struct uf_level lv[DEPTH + 1];
	uint8_t dirty[MAX_INST] = {0}; /* bit 0 bids, bit 1 asks */
	uint64_t seq;

	p->feed_seq++;
	for (size_t i = 0; i < n; i++) {
		struct uf_record *r = &recs[i];
		r->feed_seq = p->feed_seq;
		r->exch_ts = p->feed_seq * 1000;
		r->rx_ts = 1700000000000000000ull + p->feed_seq;
		if (i + 1 == n)
			r->flags |= UF_RECF_LAST;
		/* the producer's doubt, on every record of a book in doubt (publish/uf_record.h) */
		if (r->kind == UF_REC_GAP || r->kind == UF_REC_STALE)
			r->flags |= UF_RECF_STALE;
		else if (r->kind != UF_REC_RESET && r->instrument < MAX_INST &&
		         p->stale[r->instrument])
			r->flags |= UF_RECF_STALE;
		if (r->kind == UF_REC_GAP ||
		    (r->kind == UF_REC_STALE && r->instrument == UF_INSTRUMENT_ALL))
			memset(p->stale, 1, sizeof(p->stale));
		else if (r->kind == UF_REC_STALE)
			p->stale[r->instrument] = 1;
		else if (r->kind == UF_REC_RESET)
			memset(p->stale, 0, sizeof(p->stale));
	}
	assert_int_equal(uf_ring_publish(p->r, recs, n), 0);
	seq = uf_ring_tail(p->r);
	assert_int_equal(uf_ring_image_batch_begin(p->r), 0);
	for (size_t i = 0; i < n; i++) {
		const struct uf_record *r = &recs[i];
		uf_book_builder_apply(p->lv, r, seq - n + i);
		switch (r->kind) {
		case UF_REC_TRADE:
			if (uf_rec_trade_prints(r))
				assert_int_equal(uf_ring_image_add_trade(p->r, r->instrument,
				                                         r->price, r->shares,
				                                         r->exch_ts, r->rx_ts, seq),
				                 0);
			break;
		case UF_REC_STALE:
		case UF_REC_GAP:
			assert_int_equal(
			    uf_ring_image_set_stale(
			        p->r, r->kind == UF_REC_GAP ? UINT32_MAX : r->instrument, 1, seq),
			    0);
			break;
		case UF_REC_RESET:
			assert_int_equal(uf_ring_image_reset_book(p->r, UINT32_MAX, seq), 0);
			break;
		case UF_REC_STATUS:
			assert_int_equal(uf_ring_image_set_status(p->r, r->instrument, r->aux,
			                                          r->price, r->shares, r->exch_ts,
			                                          seq),
			                 0);
			break;
		case UF_REC_INSTRUMENT:
			assert_int_equal(uf_ring_image_set_symbol(p->r, r->instrument, r->ref,
			                                          (uint32_t)r->shares, r->aux, seq),
			                 0);
			break;
		case UF_REC_SNAPSHOT_BEGIN: /* the bracket restates both sides */
			dirty[r->instrument] |= 3;
			break;
		case UF_REC_LEVEL:
			dirty[r->instrument] |= r->side == UF_SIDE_BID ? 1 : 2;
			break;
		default:
			break;
		}
	}
	for (uint32_t id = 0; id < MAX_INST; id++) {
		for (int k = 0; k < 2; k++) {
			int side = k ? UF_SIDE_ASK : UF_SIDE_BID;
			int got;
			if (!(dirty[id] & (1 << k)))
				continue;
			got = uf_book_builder_levels(p->lv, id, side, lv, DEPTH + 1);
			assert_true(got >= 0);
			assert_int_equal(uf_ring_image_set_levels(p->r, id, side, lv, (uint32_t)got,
			                                          seq, recs[n - 1].rx_ts),
			                 0);
		}
	}
	uf_ring_image_batch_end(p->r, seq);
}

static void one(struct prod *p, struct uf_record r)
{
	message(p, &r, 1);
}

static void phase_a(struct prod *p)
{
	struct uf_record m[4];

	one(p, directory(1, "AAPL", 100, 'Q'));
	one(p, directory(2, "MSFT", 100, 'Q'));
	one(p, directory(3, "DEEP", 50, 'G'));
	one(p, directory(4, "IBM", 100, 'N'));
	one(p, status(0, UF_STATUS_SYSTEM, 'O')); /* market-wide */
	one(p, status(1, UF_STATUS_TRADING, 'T'));
	one(p, status(2, UF_STATUS_REG_SHO, '0'));
	one(p, directory(5, "ALLST", 100, 'Q'));
	for (uint32_t round = 0; round < 2; round++) /* every code, highest first, twice */
		for (uint32_t code = UF_STATUS_MAX; code >= 1; code--) {
			struct uf_record r = status(5, code, 10u * code + round);
			r.price = (int64_t)(1000 * round + code);
			one(p, r);
		}
	for (uint32_t id = 1; id <= 4; id++) {
		m[0] = ordr(UF_REC_ORDER_ADD, id, id * 100 + 1, UF_SIDE_BID, 1000000 * id, 100);
		m[1] = lvl(id, UF_SIDE_BID, 1000000 * id, 100, 1);
		message(p, m, 2);
		m[0] =
		    ordr(UF_REC_ORDER_ADD, id, id * 100 + 2, UF_SIDE_ASK, 1000000 * id + 100, 50);
		m[1] = lvl(id, UF_SIDE_ASK, 1000000 * id + 100, 50, 1);
		message(p, m, 2);
	}
	for (int i = 0; i < 12; i++) { /* DEEP: 12 levels a side */
		one(p, lvl(3, UF_SIDE_BID, 2990000 - 100 * i, 10u + (uint64_t)i, 1));
		one(p, lvl(3, UF_SIDE_ASK, 3000200 + 100 * i, 20u + (uint64_t)i, 2));
	}
	/* an execution (E): trade, order modified, level */
	m[0] = trade(1, 1000100, 20, UF_TRADE_EXEC);
	m[0].side = UF_SIDE_ASK;
	m[1] = ordr(UF_REC_ORDER_MODIFY, 1, 102, UF_SIDE_ASK, 1000100, 30);
	m[1].aux = 20;
	m[2] = lvl(1, UF_SIDE_ASK, 1000100, 30, 1);
	message(p, m, 3);
	/* a replace (U): delete + add, both levels */
	m[0] = ordr(UF_REC_ORDER_DELETE, 1, 101, UF_SIDE_BID, 1000000, 100);
	m[0].flags = UF_RECF_REPLACE;
	m[1] = lvl(1, UF_SIDE_BID, 1000000, 0, 0);
	m[2] = ordr(UF_REC_ORDER_ADD, 1, 103, UF_SIDE_BID, 999900, 150);
	m[2].flags = UF_RECF_REPLACE;
	m[3] = lvl(1, UF_SIDE_BID, 999900, 150, 1);
	message(p, m, 4);
	one(p, trade(1, 1000050, 500, UF_TRADE_EXEC_PRICE | UF_TRADE_NONPRINTABLE));
	one(p, trade(1, 0, 0, UF_TRADE_BROKEN));
	one(p, trade(2, 2000050, 0, UF_TRADE_CROSS | ('O' << 8))); /* a cross that did not happen */
	one(p, trade(2, 2000060, 300, UF_TRADE_CROSS | ('O' << 8)));
	one(p, stale(2));
	one(p, stale(UF_INSTRUMENT_ALL));
	one(p, lvl(4, UF_SIDE_BID, 4000000, 0, 0)); /* says STALE now */
	m[0] = rec(UF_REC_GAP, 0);
	m[0].shares = 3;
	message(p, m, 1);
	one(p, lvl(1, UF_SIDE_BID, 999800, 7, 1));
	one(p, trade(1, 999900, 5, UF_TRADE_EXEC));
}

static void phase_b_c(struct prod *p)
{
	struct uf_record r = rec(UF_REC_RESET, 0);

	r.shares = UF_RESET_NEW_SESSION;
	memcpy(&r.ref, "00000000", 8);
	one(p, r);
	one(p, lvl(1, UF_SIDE_BID, 1010000, 10, 1));
	one(p, lvl(1, UF_SIDE_BID, 1009900, 20, 2));
	one(p, lvl(1, UF_SIDE_ASK, 1010100, 30, 3));
	one(p, lvl(2, UF_SIDE_BID, 2010000, 40, 1));
	one(p, lvl(2, UF_SIDE_ASK, 2010100, 50, 1));
	one(p, trade(1, 1010100, 15, UF_TRADE_EXEC));
	one(p, trade(1, 1010000, 25, UF_TRADE_NON_CROSS));
	one(p, trade(1, 1010050, 900, UF_TRADE_EXEC_PRICE | UF_TRADE_NONPRINTABLE));
	one(p, trade(2, 2010100, 60, UF_TRADE_EXEC));
	one(p, status(1, UF_STATUS_TRADING, 'H'));
	one(p, status(5, UF_STATUS_OP_HALT, 'H'));
	one(p, stale(2)); /* C */
	one(p, lvl(2, UF_SIDE_BID, 2009900, 45, 2));
}

static void phase_e(struct prod *p)
{
	struct uf_record m[8];
	size_t n = 0;

	m[n] = rec(UF_REC_SNAPSHOT_BEGIN, 3);
	m[n].flags = UF_RECF_SNAPSHOT;
	m[n++].shares = 4;
	m[n] = lvl(3, UF_SIDE_BID, 2995000, 70, 7);
	m[n++].flags = UF_RECF_SNAPSHOT | UF_RECF_BBO;
	m[n] = lvl(3, UF_SIDE_BID, 2994000, 60, 6);
	m[n++].flags = UF_RECF_SNAPSHOT;
	m[n] = lvl(3, UF_SIDE_ASK, 3005000, 80, 8);
	m[n++].flags = UF_RECF_SNAPSHOT | UF_RECF_BBO;
	m[n] = lvl(3, UF_SIDE_ASK, 3006000, 90, 9);
	m[n++].flags = UF_RECF_SNAPSHOT;
	m[n] = rec(UF_REC_SNAPSHOT_END, 3);
	m[n].flags = UF_RECF_SNAPSHOT;
	m[n++].shares = 4;
	message(p, m, n);
	one(p, trade(3, 3005000, 11, UF_TRADE_EXEC));
}

/* ---- rendering: one line per book, every compared field ---- */

static int by_id(const void *a, const void *b)
{
	const struct uf_book_snapshot *x = a, *y = b;

	return (x->instrument > y->instrument) - (x->instrument < y->instrument);
}

/* Also what python/ prints (render() in the script below); frees l. */
static char *render(struct bt_books l)
{
	size_t cap = 1 << 16, len = 0;
	char *out = malloc(cap);

	assert_non_null(out);
	out[0] = '\0';
	qsort(l.v, l.n, sizeof(*l.v), by_id);
	for (size_t i = 0; i < l.n; i++) {
		const struct uf_book_snapshot *s = &l.v[i];
		len += (size_t)snprintf(out + len, cap - len,
		                        "%u|%s|%u|%u|%u|%" PRId64 ",%" PRIu64 ",%" PRIu64
		                        ",%" PRIu64 "|%" PRIu64 "|%" PRIu64 "|st:",
		                        s->instrument, s->symbol, s->flags, s->round_lot,
		                        s->category, s->last_price, s->last_shares, s->last_exch_ts,
		                        s->last_rx_ts, s->volume, s->trades);
		for (uint32_t k = 0; k < s->nstatus; k++)
			len += (size_t)snprintf(out + len, cap - len, "%s%u,%" PRId64 ",%" PRIu64,
			                        k ? ";" : "", s->status[k].code, s->status[k].price,
			                        s->status[k].shares);
		for (int side = 0; side < 2; side++) {
			const struct uf_level *lv = side ? s->ask : s->bid;
			uint32_t n = side ? s->nask : s->nbid;
			len += (size_t)snprintf(out + len, cap - len, "|%s:", side ? "ask" : "bid");
			for (uint32_t k = 0; k < n; k++)
				len += (size_t)snprintf(
				    out + len, cap - len, "%s%" PRId64 ",%" PRIu64 ",%u",
				    k ? ";" : "", lv[k].price, lv[k].shares, lv[k].orders);
		}
		len += (size_t)snprintf(out + len, cap - len, "\n");
		assert_true(len < cap - 1024);
	}
	free(l.v);
	return out;
}

static char *render_consumer(uf_consumer_t *c)
{
	struct bt_books l = {0};

	assert_int_equal(uf_consumer_snapshot_all(c, bt_keep, &l), 0);
	return render(l);
}

static struct bt_books builder_books(const uf_book_builder_t *b)
{
	struct bt_books l = {0};
	struct uf_book_snapshot *s = malloc(sizeof(*s));

	assert_non_null(s);
	for (uint32_t id = 0; id < uf_book_builder_max_instruments(b); id++)
		if (uf_book_builder_snapshot(b, id, s) == 0)
			bt_keep(s, &l);
	free(s);
	return l;
}

/* Reads `b` on `c` until there is nothing more (-EAGAIN) or the ring is closed (-EPIPE);
 * returns the laps seen. */
static int drain(uf_book_builder_t *b, uf_consumer_t *c, int until_closed)
{
	uint64_t end = bt_now_ms() + 60000;
	int laps = 0;

	for (;;) {
		int rc = uf_book_builder_next(b, c, NULL, NULL);
		if (rc == 0)
			continue;
		if (rc == -EOVERFLOW) {
			laps++;
			continue;
		}
		if (rc == -EPIPE || (rc == -EAGAIN && !until_closed))
			return laps;
		assert_int_equal(rc, -EAGAIN);
		assert_true(bt_now_ms() < end);
		uf_consumer_wait(c, 10000000);
	}
}

struct remote_apply {
	uf_book_builder_t *b; /* builder fed the remote handle's records */
	uint64_t next;        /* sequence expected next: no gap, no lap */
};

static const char py_script[] =
    "import sys, uringfeed\n"
    "def render(snaps):\n"
    "    out = ''\n"
    "    for s in sorted(snaps, key=lambda s: s.instrument):\n"
    "        out += '%d|%s|%d|%d|%d|%d,%d,%d,%d|%d|%d|st:%s|bid:%s|ask:%s\\n' % (\n"
    "            s.instrument, s.symbol, s.flags, s.round_lot, s.category, s.last_price,\n"
    "            s.last_shares, s.last_exch_ts, s.last_rx_ts, s.volume, s.trades,\n"
    "            ';'.join('%d,%d,%d' % t for t in s.status),\n"
    "            ';'.join('%d,%d,%d' % t for t in s.bid),\n"
    "            ';'.join('%d,%d,%d' % t for t in s.ask))\n"
    "    return out\n"
    "mode, name, ready = sys.argv[1], sys.argv[2], sys.argv[3]\n"
    "c = uringfeed.Consumer(name, start='oldest', tag='py-paths')\n"
    "if mode == 'builder':\n"
    "    b = uringfeed.BookBuilder(16)\n" /* MAX_INST */
    "    b.sync(c)\n"
    "    open(ready, 'w').close()\n"
    "    for _ in b.follow(c, timeout=60):\n"
    "        pass\n"
    "    snaps = b.snapshot_all()\n"
    "else:\n"
    "    snaps = c.snapshot_all()\n"
    "sys.stdout.write(render(snaps))\n";

static void remote_batch(const struct uf_record *r, int n, uint64_t seq, struct remote_apply *ra)
{
	assert_int_equal(seq, ra->next);
	for (int i = 0; i < n; i++)
		uf_book_builder_apply(ra->b, &r[i], seq + (uint64_t)i);
	ra->next = seq + (uint64_t)n;
}

/* Reads a remote handle to the end of the stream (-EPIPE); a lap fails. */
static void remote_to_close(uf_consumer_t *c, struct remote_apply *ra)
{
	struct uf_record recs[256];
	uint64_t end = bt_now_ms() + 60000, seq;

	for (;;) {
		int n = uf_consumer_read(c, recs, 256, &seq);
		if (n > 0) {
			if (ra)
				remote_batch(recs, n, seq, ra);
			continue;
		}
		if (n == -EPIPE)
			return;
		assert_int_equal(n, -EAGAIN);
		assert_true(bt_now_ms() < end);
		uf_consumer_wait(c, 10000000);
	}
}

static uf_consumer_t *attach(const char *name)
{
	struct uf_consumer_options co;
	uf_consumer_t *c = NULL;
	char err[512];

	uf_consumer_options_init(&co);
	co.start = UF_CONSUMER_START_OLDEST;
	co.tag = "test_book_paths";
	if (uf_consumer_attach(name, &co, &c, err, sizeof(err)) < 0)
		fail_msg("attach %s: %s", name, err);
	return c;
}

static char *run_python(const char *mode, const char *name, const char *ready)
{
	char script[600];
	struct uf_test_run r;
	FILE *f;
	char *out;

	snprintf(script, sizeof(script), "%s/paths.py", bt_dir);
	f = fopen(script, "w");
	assert_non_null(f);
	fputs(py_script, f);
	fclose(f);
	const char *argv[] = {"python3", script, mode, name, ready, NULL};
	uf_test_run_path(UF_PYTHON3, argv, 90000, &r);
	if (r.status != 0)
		fprintf(stderr, "python3 %s: %s\n", mode, r.err);
	assert_int_equal(r.status, 0);
	out = r.out;
	r.out = NULL;
	uf_test_run_free(&r);
	return out;
}

static void test_every_consumer_path_shows_the_same_books(void **state)
{
	struct bt_nats ns;
	struct uf_ring_options ro;
	struct prod p = {0};
	struct remote_apply ra = {0};
	uf_consumer_t *lc, *rc1, *rc2;
	uf_book_builder_t *lb;
	char ring[64], status[300], out[300], urls_ring[400], ready[300], err[256];
	char *ref, *got;
	int laps;
	pid_t bridge, py;

	(void)state;
	snprintf(ring, sizeof(ring), "paths_%d", (int)getpid());
	snprintf(status, sizeof(status), "%s/bridge.status", bt_dir);
	snprintf(ready, sizeof(ready), "%s/py.ready", bt_dir);
	bt_nats_start(&ns, 1, "paths");
	snprintf(urls_ring, sizeof(urls_ring), "%s/%s", ns.urls, ring);

	uf_ring_options_init(&ro);
	ro.capacity = CAP;
	ro.depth = DEPTH;
	ro.max_instruments = MAX_INST;
	ro.numa_node = UF_RING_NUMA_NONE;
	ro.hugepages = 0;
	if (uf_ring_create(ring, &ro, &p.r, err, sizeof(err)) < 0)
		fail_msg("ring: %s", err);
	assert_int_equal(uf_book_builder_create(MAX_INST, &p.lv), 0);

	char *bargv[] = {"uf-bridge", "--ring",        ring, "--nats",
	                 ns.urls,     "--replicas",    "1",  "--status-file",
	                 status,      "--kv-interval", "50", "--exit-on-close",
	                 NULL};
	snprintf(out, sizeof(out), "%s/bridge.out", bt_dir);
	bridge = bt_spawn(bt_bin("uf-bridge"), bargv, out);
	free(bt_wait_status(status, "generation", 0, 30000));

	/* every reader attaches before the first record */
	lc = attach(ring);
	assert_int_equal(uf_book_builder_create(MAX_INST, &lb), 0);
	assert_int_equal(uf_book_builder_sync(lb, lc), 0);
	rc1 = attach(urls_ring);
	assert_int_equal(uf_book_builder_create(MAX_INST, &ra.b), 0);
	char *pargv[] = {"python3", NULL, "builder", ring, ready, NULL};
	char script[300];
	snprintf(script, sizeof(script), "%s/paths.py", bt_dir);
	{
		FILE *f = fopen(script, "w");
		assert_non_null(f);
		fputs(py_script, f);
		fclose(f);
	}
	pargv[1] = script;
	snprintf(out, sizeof(out), "%s/py-builder.out", bt_dir);
	py = bt_spawn(UF_PYTHON3, pargv, out);
	for (uint64_t end = bt_now_ms() + 30000; access(ready, F_OK) != 0; bt_sleep_ms(10))
		assert_true(bt_now_ms() < end);

	phase_a(&p);
	phase_b_c(&p);
	assert_int_equal(drain(lb, lc, 0), 0);
	/* D: the local builder reads nothing for three capacities; the bridge keeps up */
	for (uint32_t i = 0; i < 3 * CAP; i++) {
		one(&p, lvl(4, i % 2 ? UF_SIDE_ASK : UF_SIDE_BID,
		            i % 2 ? 4000100 + 100 * (i % 5) : 4000000 - 100 * (i % 5), 1u + i, 1));
		if (i % (CAP / 2) == CAP / 2 - 1)
			free(bt_wait_status(status, "position", (int64_t)uf_ring_tail(p.r), 30000));
	}
	phase_e(&p);
	uf_ring_close(p.r);
	laps = drain(lb, lc, 1);
	assert_true(laps >= 1);
	assert_int_equal(bt_wait(bridge, 60000), 0);
	assert_int_equal(bt_wait(py, 90000), 0);

	/* the reference: the producer's image, and what it must hold */
	ref = render_consumer(lc);
	fprintf(stderr, "%s", ref);
	assert_non_null(strstr(ref, "0||0|0|0|0,0,0,0|0|0|st:1,0,79|bid:|ask:\n"));
	assert_non_null(strstr(ref, "1|AAPL|0|100|81|1010000,25,")); /* last printing trade */
	assert_non_null(
	    strstr(ref, "|40|2|st:2,0,72|bid:1010000,10,1;1009900,20,2|ask:1010100,30,3\n"));
	assert_non_null(strstr(ref, "2|MSFT|8|100|81|2010100,60,")); /* stale again after RESET */
	assert_non_null(strstr(ref, "3|DEEP|0|50|71|3005000,11,"));
	{ /* ALLST: every code in code order, each with its latest value */
		char want[1024];
		int n = snprintf(want, sizeof(want), "5|ALLST|0|100|81|0,0,0,0|0|0|st:");
		for (uint32_t code = 1; code <= UF_STATUS_MAX; code++) {
			int halt = code == UF_STATUS_OP_HALT; /* changed again after the RESET */
			n += snprintf(want + n, sizeof(want) - (size_t)n, "%s%u,%u,%u",
			              code > 1 ? ";" : "", code, halt ? 0 : 1000 + code,
			              halt ? 'H' : 10 * code + 1);
		}
		snprintf(want + n, sizeof(want) - (size_t)n, "|bid:|ask:\n");
		assert_non_null(strstr(ref, want));
	}
	assert_non_null(
	    strstr(ref, "|bid:2995000,70,7;2994000,60,6|ask:3005000,80,8;3006000,90,9\n"));

	got = render(builder_books(lb)); /* local builder, lapped and re-synced */
	assert_string_equal(got, ref);
	free(got);
	remote_to_close(rc1, &ra); /* NATS remote consumer, streaming from the first record */
	got = render_consumer(rc1);
	assert_string_equal(got, ref);
	free(got);
	got = render(builder_books(ra.b)); /* the builder fed the remote records */
	assert_string_equal(got, ref);
	free(got);
	rc2 = attach(urls_ring); /* late: books from uf-bridge's bucket */
	remote_to_close(rc2, NULL);
	got = render_consumer(rc2);
	assert_string_equal(got, ref);
	free(got);
	got = uf_test_slurp(out); /* Python's book builder on the ring */
	assert_string_equal(got, ref);
	free(got);
	got = run_python("image", urls_ring, ready); /* Python on a nats:// handle */
	assert_string_equal(got, ref);
	free(got);

	/* uf-tail --books, local and remote: the levels of the same books */
	{
		char depth[8];
		struct bt_books l = {0};
		struct bt_books lbk = builder_books(lb);
		snprintf(depth, sizeof(depth), "%u", DEPTH);
		const char *lt[] = {"uf-tail", "--ring", ring, "--books", "--depth", depth, NULL};
		const char *rt[] = {"uf-tail", "--nats",  ns.urls, "--ring", ring,
		                    "--books", "--depth", depth,   NULL};
		char *tl = bt_tail(lt), *tr = bt_tail(rt), *want;
		for (size_t i = 0; i < lbk.n; i++)
			bt_collect(&lbk.v[i], &l);
		free(lbk.v);
		want = bt_render_list(l, DEPTH);
		assert_true(strlen(want) > 100);
		assert_string_equal(tl, want);
		assert_string_equal(tr, want);
		free(tl);
		free(tr);
		free(want);
	}
	free(ref);
	uf_consumer_detach(rc2);
	uf_consumer_detach(rc1);
	uf_consumer_detach(lc);
	uf_book_builder_destroy(ra.b);
	uf_book_builder_destroy(lb);
	uf_book_builder_destroy(p.lv);
	bt_nats_stop(&ns);
}

static int setup(void **state)
{
	(void)state;
	if (bt_setup_dirs("book-paths") < 0)
		return -1;
	setenv("UF_CONSUMER_LIB", UF_CONSUMER_LIB, 1);
	setenv("PYTHONPATH", UF_SOURCE_DIR "/python", 1);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_every_consumer_path_shows_the_same_books),
	};
	return cmocka_run_group_tests(tests, setup, bt_group_teardown);
}
