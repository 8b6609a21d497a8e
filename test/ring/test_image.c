/* Book image (last-value cache): consistency under a concurrent writer, the
 * snapshot-then-stream handover (no gap, no double count), directory and status. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "test/common/uf_test_proc.h"
#include "ring/uf_ring.h"
#include "ring/ufconsumer.h"
#define RING_TEST_MAKE_RING
#include "ring_test_util.h"

#define NI    4        /* instruments in the handover stream (ids 1..NI) */
#define QUIET (NI + 1) /* instrument with a book set once at the start, then never touched */
#define NP    20       /* price points per side */
#define DEPTH 32       /* image depth: holds the whole book of the stream */

static struct uf_ring *make_ring(const char *name, uint64_t capacity, uint32_t depth)
{
	return make_ring_with(name, capacity, 0600, depth);
}

static uf_consumer_t *attach(const char *name)
{
	uf_consumer_t *c = NULL;
	char err[256] = "";

	if (uf_consumer_attach(name, NULL, &c, err, sizeof(err)) != 0)
		fprintf(stderr, "attach: %s\n", err);
	return c;
}

/* ---- a small book model: both the producer and the consumer use it ---- */
struct model {
	uint64_t shares[QUIET + 1][2][NP]; /* [instrument][0 bid, 1 ask][price index] */
	uint32_t orders[QUIET + 1][2][NP];
	uint64_t volume[QUIET + 1];
	uint64_t trades[QUIET + 1];
};

static int64_t price_of(int side, int idx)
{
	return side == 0 ? 1000 + idx : 1000 + NP + idx; /* bids below asks */
}

/* Top levels of one side, best first. */
static uint32_t model_side(const struct model *m, uint32_t inst, int side, struct uf_level *out)
{
	uint32_t n = 0;

	for (int k = 0; k < NP; k++) {
		int idx = side == 0 ? NP - 1 - k : k;
		if (m->shares[inst][side][idx] == 0)
			continue;
		out[n].price = price_of(side, idx);
		out[n].shares = m->shares[inst][side][idx];
		out[n].orders = m->orders[inst][side][idx];
		out[n].reserved = 0;
		n++;
	}
	return n;
}

static void model_apply(struct model *m, const struct uf_record *r)
{
	if (r->kind == UF_REC_LEVEL) {
		int side = r->side == UF_SIDE_BID ? 0 : 1;
		int idx = (int)(r->price - price_of(side, 0));
		m->shares[r->instrument][side][idx] = r->shares;
		m->orders[r->instrument][side][idx] = r->orders;
	} else if (r->kind == UF_REC_TRADE) {
		m->volume[r->instrument] += r->shares;
		m->trades[r->instrument]++;
	}
}

static uint64_t rng_next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* One exchange message: 1 or 2 records, published, then the image updated with the tail. */
static void produce_message(struct uf_ring *r, struct model *m, uint64_t *rng)
{
	struct uf_record recs[2];
	struct uf_level lv[NP];
	uint64_t x = rng_next(rng);
	uint32_t inst = 1 + (uint32_t)(x % NI);
	int nrec = 1 + (int)((x >> 8) % 4 == 0);
	int touched_side[2] = {0, 0}, traded = 0;

	for (int i = 0; i < nrec; i++) {
		uint64_t y = rng_next(rng);
		struct uf_record *rec = &recs[i];
		memset(rec, 0, sizeof(*rec));
		rec->instrument = inst;
		rec->feed_seq = uf_ring_tail(r) + (uint64_t)i;
		if (y % 10 < 7) {
			int side = (int)((y >> 4) & 1);
			rec->kind = UF_REC_LEVEL;
			rec->side = side == 0 ? UF_SIDE_BID : UF_SIDE_ASK;
			rec->price = price_of(side, (int)((y >> 8) % NP));
			rec->shares = (y >> 16) % 3 == 0 ? 0 : 100 * (1 + (y >> 20) % 50);
			rec->orders = rec->shares ? 1 + (uint32_t)((y >> 28) % 9) : 0;
			touched_side[side] = 1;
		} else {
			rec->kind = UF_REC_TRADE;
			rec->price = 1000 + (int64_t)((y >> 8) % (2 * NP));
			rec->shares = 1 + (y >> 16) % 500;
			traded = 1;
		}
		rec->flags = i == nrec - 1 ? UF_RECF_LAST : 0;
		model_apply(m, rec);
	}
	assert_int_equal(uf_ring_publish(r, recs, (size_t)nrec), 0);
	/* one consistent image update per message (both sides and the trade may change):
	 * alternately the per-instrument bracket and the per-publish batch */
	int batch = (int)(x >> 40) & 1;
	if (batch)
		assert_int_equal(uf_ring_image_batch_begin(r), 0);
	else
		assert_int_equal(uf_ring_image_begin(r, inst), 0);
	for (int side = 0; side < 2; side++) {
		if (!touched_side[side])
			continue;
		uint32_t n = model_side(m, inst, side, lv);
		assert_int_equal(uf_ring_image_set_levels(r, inst,
		                                          side == 0 ? UF_SIDE_BID : UF_SIDE_ASK, lv,
		                                          n, uf_ring_tail(r), 0),
		                 0);
	}
	if (traded) {
		for (int i = 0; i < nrec; i++)
			if (recs[i].kind == UF_REC_TRADE)
				uf_ring_image_add_trade(r, inst, recs[i].price, recs[i].shares, 0,
				                        0, uf_ring_tail(r));
	}
	if (batch) {
		uf_ring_image_batch_end(r, uf_ring_tail(r)); /* commits too */
	} else {
		uf_ring_image_end(r, uf_ring_tail(r));
		uf_ring_image_commit(r);
	}
}

/* 1 when the consumer's model of `inst` equals snapshot `s` (book, volume, trades). */
static int model_matches(const struct model *m, uint32_t inst, const struct uf_book_snapshot *s)
{
	struct uf_level lv[NP];
	uint32_t nb = model_side(m, inst, 0, lv);

	if (nb != s->nbid || memcmp(lv, s->bid, nb * sizeof(lv[0])) != 0)
		return 0;
	uint32_t na = model_side(m, inst, 1, lv);
	if (na != s->nask || memcmp(lv, s->ask, na * sizeof(lv[0])) != 0)
		return 0;
	return m->volume[inst] == s->volume && m->trades[inst] == s->trades;
}

/* Takes the handover snapshot into the model: fills stamps, seeks to the lowest stamp.
 * Returns 0, or -ERANGE when the stream moved past the snapshot (take it again). */
static int take_snapshot(uf_consumer_t *c, struct model *m, uint64_t *stamp, uint64_t end)
{
	struct uf_book_snapshot s;
	uint64_t min_stamp = UINT64_MAX;
	int rc;

	memset(m, 0, sizeof(*m));
	for (uint32_t inst = 1; inst <= QUIET; inst++) {
		while ((rc = uf_consumer_snapshot(c, inst, &s)) == -EBUSY)
			CHILD_CHECK(uf_now_mono_ns() < end); /* producer descheduled mid-update */
		CHILD_CHECK(rc == 0);
		CHILD_CHECK(s.nbid <= NP && s.nask <= NP);
		for (uint32_t i = 0; i < s.nbid; i++) {
			int idx = (int)(s.bid[i].price - price_of(0, 0));
			m->shares[inst][0][idx] = s.bid[i].shares;
			m->orders[inst][0][idx] = s.bid[i].orders;
		}
		for (uint32_t i = 0; i < s.nask; i++) {
			int idx = (int)(s.ask[i].price - price_of(1, 0));
			m->shares[inst][1][idx] = s.ask[i].shares;
			m->orders[inst][1][idx] = s.ask[i].orders;
		}
		m->volume[inst] = s.volume;
		m->trades[inst] = s.trades;
		stamp[inst] = s.stamp;
		if (s.stamp < min_stamp)
			min_stamp = s.stamp;
	}
	return uf_consumer_seek(c, min_stamp);
}

/* Consumer: attach mid-stream, snapshot every instrument, continue from the stream applying
 * only records at or after each instrument's stamp; at the end equal the final image. A lap
 * (or a snapshot the stream already left behind) means: snapshot again, as a real consumer
 * would. */
static int child_handover(const char *name, int done_fd)
{
	static struct model m;
	struct uf_book_snapshot s;
	uint64_t stamp[QUIET + 1], seq, skipped = 0, applied = 0, resnaps = 0;
	uint64_t end = uf_now_mono_ns() + 20000000000ull;
	struct uf_record rec;
	uf_consumer_t *c = attach(name);
	int rc;

	CHILD_CHECK(c != NULL);
	while (take_snapshot(c, &m, stamp, end) == -ERANGE) {
		CHILD_CHECK(uf_now_mono_ns() < end);
		resnaps++;
	}
	test_pipe_put(done_fd);
	for (;;) {
		CHILD_CHECK(uf_now_mono_ns() < end);
		rc = uf_consumer_next(c, &rec, &seq);
		if (rc == 0) {
			CHILD_CHECK(rec.feed_seq == seq); /* the producer numbered them: no gap */
			CHILD_CHECK(rec.instrument >= 1 && rec.instrument <= NI);
			if (seq < stamp[rec.instrument]) {
				skipped++; /* already in the snapshot */
				continue;
			}
			model_apply(&m, &rec);
			applied++;
			continue;
		}
		if (rc == -EPIPE)
			break;
		if (rc == -EOVERFLOW) {
			while (take_snapshot(c, &m, stamp, end) == -ERANGE)
				CHILD_CHECK(uf_now_mono_ns() < end);
			resnaps++;
			continue;
		}
		CHILD_CHECK(rc == -EAGAIN);
		uf_consumer_wait(c, 100000000);
	}
	for (uint32_t inst = 1; inst <= QUIET; inst++) {
		CHILD_CHECK(uf_consumer_snapshot(c, inst, &s) == 0);
		CHILD_CHECK(model_matches(&m, inst, &s));
	}
	fprintf(stderr,
	        "handover: %llu records skipped as already in the snapshot, %llu applied, "
	        "%llu re-snapshots\n",
	        (unsigned long long)skipped, (unsigned long long)applied,
	        (unsigned long long)resnaps);
	uf_consumer_detach(c);
	return 0;
}

static void test_image_snapshot_then_stream_has_no_gap_and_no_duplicate(void **state)
{
	static struct model m;
	struct uf_book_snapshot s;
	char name[64];
	uint64_t rng = 88172645463325252ull, msgs = 0, after = 0;
	int fds[2], snapped = 0;
	struct uf_ring *r;
	uf_consumer_t *c;
	pid_t pid;

	memset(&m, 0, sizeof(m));
	test_ring_name(name, sizeof(name), "handover");
	r = make_ring(name, 1 << 17, DEPTH);
	for (uint32_t inst = 1; inst <= QUIET; inst++) {
		char sym[9];
		snprintf(sym, sizeof(sym), "SYM%u", inst);
		uf_ring_image_set_symbol(r, inst, uf_ring_symbol_pack(sym), 100, 'Q', 0);
	}
	{
		/* a quiet instrument: its stamp falls out of the ring long before the consumer
		 * comes; the commit sequence still lets the consumer resume */
		struct uf_level q[2] = {{.price = price_of(0, 3), .shares = 500, .orders = 2},
		                        {.price = price_of(1, 4), .shares = 700, .orders = 3}};
		m.shares[QUIET][0][3] = 500;
		m.orders[QUIET][0][3] = 2;
		m.shares[QUIET][1][4] = 700;
		m.orders[QUIET][1][4] = 3;
		assert_int_equal(uf_ring_image_set_book(r, QUIET, &q[0], 1, &q[1], 1, 0, 0), 0);
	}
	for (int i = 0; i < 150000; i++, msgs++)
		produce_message(r, &m, &rng); /* more than the ring holds before the consumer */
	assert_int_equal(pipe(fds), 0);
	fcntl(fds[0], F_SETFL, O_NONBLOCK);
	pid = uf_test_fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(child_handover(name, fds[1]));
	/* keep publishing while the child snapshots; then a while longer; bounded */
	while (msgs < 5000000 && after < 20000) {
		produce_message(r, &m, &rng);
		msgs++;
		if (snapped)
			after++;
		else if ((msgs & 255) == 0 && test_pipe_get(fds[0], 0))
			snapped = 1;
	}
	assert_true(snapped);
	uf_ring_close(r);
	assert_true(test_child_ok(test_wait_child(pid, 30000)));

	/* the image itself agrees with the producer's model */
	c = attach(name);
	assert_non_null(c);
	for (uint32_t inst = 1; inst <= QUIET; inst++) {
		assert_int_equal(uf_consumer_snapshot(c, inst, &s), 0);
		assert_true(model_matches(&m, inst, &s));
	}
	uf_consumer_detach(c);
	close(fds[0]);
	close(fds[1]);
	uf_ring_unlink(name, NULL);
}

static void test_image_snapshot_is_consistent_while_written(void **state)
{
	const uint32_t depth = 8;
	struct uf_level bids[8], asks[8];
	char name[64];
	int fds[2], done = 0;
	struct uf_ring *r;
	uint64_t k = 0, end;
	pid_t pid;

	test_ring_name(name, sizeof(name), "seqlock");
	r = make_ring(name, 64, depth);
	uf_ring_image_set_symbol(r, 7, uf_ring_symbol_pack("SEQL"), 100, 'Q', 0);
	assert_int_equal(pipe(fds), 0);
	fcntl(fds[0], F_SETFL, O_NONBLOCK);
	pid = uf_test_fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct uf_book_snapshot s;
		uint64_t stop = uf_now_mono_ns() + 500000000ull, last = 0, changes = 0, busy = 0;
		uf_consumer_t *c = attach(name);
		CHILD_CHECK(c != NULL);
		while (uf_now_mono_ns() < stop) {
			int rc = uf_consumer_snapshot(c, 7, &s);
			if (rc == -EBUSY) {
				busy++;
				continue;
			}
			CHILD_CHECK(rc == 0);
			CHILD_CHECK(strcmp(s.symbol, "SEQL") == 0);
			if (s.stamp == 0)
				continue; /* only the directory so far */
			/* update 2k-1 wrote book k, update 2k trade k: each field says its k */
			uint64_t kb = (s.stamp + 1) / 2, kt = s.stamp / 2;
			CHILD_CHECK(s.nbid == 1 + kb % depth);
			CHILD_CHECK(s.nask == depth - kb % depth);
			for (uint32_t i = 0; i < s.nbid; i++)
				CHILD_CHECK(s.bid[i].price == (int64_t)(kb * 10 - i) &&
				            s.bid[i].shares == kb &&
				            s.bid[i].orders == (uint32_t)kb);
			for (uint32_t i = 0; i < s.nask; i++)
				CHILD_CHECK(s.ask[i].price == (int64_t)(kb * 10 + 1 + i) &&
				            s.ask[i].shares == kb + 1);
			CHILD_CHECK(s.trades == kt && s.last_price == (int64_t)kt);
			changes += s.stamp != last;
			last = s.stamp;
		}
		CHILD_CHECK(changes > 10); /* it really read while the writer wrote */
		fprintf(stderr, "seqlock reader: %llu distinct versions, %llu busy\n",
		        (unsigned long long)changes, (unsigned long long)busy);
		test_pipe_put(fds[1]);
		uf_consumer_detach(c);
		_exit(0);
	}
	end = uf_now_mono_ns() + 10000000000ull;
	while (!done && uf_now_mono_ns() < end) {
		k++;
		uint32_t nb = 1 + (uint32_t)(k % depth), na = depth - (uint32_t)(k % depth);
		for (uint32_t i = 0; i < depth; i++) {
			bids[i] = (struct uf_level){
			    .price = (int64_t)(k * 10 - i), .shares = k, .orders = (uint32_t)k};
			asks[i] = (struct uf_level){
			    .price = (int64_t)(k * 10 + 1 + i), .shares = k + 1, .orders = 1};
		}
		/* two updates per k, each stamped: the reader checks every field against the
		 * stamp it copied with them, so a torn copy cannot pass */
		assert_int_equal(uf_ring_image_set_book(r, 7, bids, nb, asks, na, 2 * k - 1, 0), 0);
		assert_int_equal(uf_ring_image_add_trade(r, 7, (int64_t)k, 1, 0, 0, 2 * k), 0);
		if ((k & 1023) == 0)
			done = test_pipe_get(fds[0], 0);
	}
	assert_true(test_child_ok(test_wait_child(pid, 10000)));
	close(fds[0]);
	close(fds[1]);
	uf_ring_close(r);
	uf_ring_unlink(name, NULL);
}

static void test_image_directory_status_and_limits(void **state)
{
	struct uf_book_snapshot s;
	struct uf_level lv[6];
	char name[64];
	uint32_t id = 0;
	struct uf_ring *r;
	uf_consumer_t *c;

	test_ring_name(name, sizeof(name), "dir");
	r = make_ring(name, 64, 4);
	c = attach(name);
	assert_non_null(c);
	assert_int_equal(uf_consumer_lookup(c, "AAPL", &id), -ENOENT);
	assert_int_equal(uf_consumer_snapshot(c, 3, &s), -ENOENT);
	assert_int_equal(uf_consumer_snapshot(c, 64, &s), -ERANGE);
	assert_int_equal(uf_ring_image_set_symbol(r, 3, uf_ring_symbol_pack("AAPL"), 100, 'Q', 5),
	                 0);
	assert_int_equal(uf_ring_image_set_symbol(r, 9, uf_ring_symbol_pack("ZVZZT"), 1, 'S', 6),
	                 0);
	assert_int_equal(uf_consumer_lookup(c, "AAPL", &id), 0);
	assert_int_equal(id, 3);
	assert_int_equal(uf_consumer_lookup(c, "ZVZZT", &id), 0);
	assert_int_equal(id, 9);
	assert_int_equal(uf_consumer_lookup(c, "AAP", &id), -ENOENT);
	assert_int_equal(uf_consumer_lookup(c, "TOOLONGSYM", &id), -ENOENT);

	for (int i = 0; i < 6; i++)
		lv[i] = (struct uf_level){.price = 1000 - i, .shares = 10u * (i + 1), .orders = 1};
	/* more levels than the depth: cut to 4 */
	assert_int_equal(uf_ring_image_set_levels(r, 3, UF_SIDE_BID, lv, 6, 7, 111), 0);
	assert_int_equal(uf_ring_image_set_levels(r, 3, 'X', lv, 1, 7, 0), -EINVAL);
	assert_int_equal(uf_ring_image_set_levels(r, 64, UF_SIDE_BID, lv, 1, 7, 0), -ERANGE);
	assert_int_equal(uf_ring_image_set_status(r, 3, 2, 0, 'H', 99, 8), 0);
	assert_int_equal(uf_ring_image_set_status(r, 3, 2, 0, 'T', 100, 9), 0); /* same code */
	assert_int_equal(uf_ring_image_set_status(r, 3, 5, 1234, 0, 101, 10), 0);
	assert_int_equal(uf_ring_image_set_status(r, 3, 0, 0, 0, 0, 10), -EINVAL);
	/* every other defined code, highest first: each has its own slot (layout 1 kept the
	 * first 8 and refused the rest), and readers get them in code order, not arrival order */
	for (uint32_t code = UF_STATUS_MAX; code >= 1; code--)
		if (code != 2 && code != 5)
			assert_int_equal(
			    uf_ring_image_set_status(r, 3, code, 10 * code, code, 200 + code, 11),
			    0);
	/* beyond the enum: refused, and no slot (nor the entry's stamp) changes */
	assert_int_equal(uf_ring_image_set_status(r, 3, UF_STATUS_MAX + 1, 7, 7, 7, 12), -EINVAL);
	assert_int_equal(uf_ring_image_set_status(r, 3, UINT32_MAX, 7, 7, 7, 12), -EINVAL);
	assert_int_equal(uf_ring_image_set_status(r, 64, 2, 7, 7, 7, 12), -ERANGE);
	assert_int_equal(uf_ring_image_set_stale(r, UINT32_MAX, 1, 13), 0);

	assert_int_equal(uf_consumer_snapshot(c, 3, &s), 0);
	assert_string_equal(s.symbol, "AAPL");
	assert_int_equal(s.round_lot, 100);
	assert_int_equal(s.category, 'Q');
	assert_int_equal(s.nbid, 4);
	assert_int_equal(s.nask, 0);
	assert_int_equal(s.bid[3].price, 997);
	assert_int_equal(s.bid[3].shares, 40);
	assert_int_equal(s.update_rx_ts, 111);
	assert_int_equal(s.stamp, 13);
	assert_int_equal(s.flags & UF_RECF_STALE, UF_RECF_STALE);
	assert_int_equal(s.nstatus, UF_STATUS_MAX);
	for (uint32_t k = 0; k < s.nstatus; k++) {
		uint32_t code = k + 1;
		assert_int_equal(s.status[k].code, code);
		if (code == 2) { /* the latest of its two values */
			assert_int_equal(s.status[k].shares, 'T');
			assert_int_equal(s.status[k].exch_ts, 100);
		} else if (code == 5) {
			assert_int_equal(s.status[k].price, 1234);
			assert_int_equal(s.status[k].exch_ts, 101);
		} else {
			assert_int_equal(s.status[k].price, 10 * code);
			assert_int_equal(s.status[k].shares, code);
			assert_int_equal(s.status[k].exch_ts, 200 + code);
		}
	}
	assert_int_equal(uf_consumer_snapshot(c, 9, &s), 0);
	assert_string_equal(s.symbol, "ZVZZT");
	assert_int_equal(s.flags & UF_RECF_STALE, UF_RECF_STALE);
	assert_int_equal(uf_ring_image_set_stale(r, 9, 0, 14), 0);
	assert_int_equal(uf_consumer_snapshot(c, 9, &s), 0);
	assert_int_equal(s.flags & UF_RECF_STALE, 0);

	/* begin/end: one update for several setters; readers never see the middle */
	assert_int_equal(uf_ring_image_begin(r, 64), -ERANGE);
	assert_int_equal(uf_ring_image_begin(r, 3), 0);
	assert_int_equal(uf_ring_image_begin(r, 9), -EBUSY);
	assert_int_equal(uf_ring_image_set_levels(r, 3, UF_SIDE_ASK, lv, 2, 999, 0), 0);
	assert_int_equal(uf_ring_image_add_trade(r, 3, 1001, 7, 0, 0, 999), 0);
	assert_int_equal(uf_consumer_snapshot(c, 3, &s), -EBUSY);
	assert_int_equal(uf_consumer_snapshot(c, 9, &s), 0); /* other entries are not held */
	uf_ring_image_end(r, 20);
	assert_int_equal(uf_consumer_snapshot(c, 3, &s), 0);
	assert_int_equal(s.stamp, 20);
	assert_int_equal(s.nask, 2);
	assert_int_equal(s.volume, 7);

	/* a batch: any instruments, any order; all visible at batch end with its stamp */
	assert_int_equal(uf_ring_image_batch_begin(r), 0);
	assert_int_equal(uf_ring_image_batch_begin(r), -EBUSY);
	assert_int_equal(uf_ring_image_begin(r, 3), -EBUSY);
	assert_int_equal(uf_ring_image_add_trade(r, 3, 1002, 5, 0, 0, 1), 0);
	assert_int_equal(uf_ring_image_set_levels(r, 9, UF_SIDE_BID, lv, 3, 1, 0), 0);
	assert_int_equal(uf_ring_image_add_trade(r, 3, 1003, 6, 0, 0, 1), 0);
	assert_int_equal(uf_consumer_snapshot(c, 3, &s), -EBUSY);
	assert_int_equal(uf_consumer_snapshot(c, 9, &s), -EBUSY);
	uf_ring_image_batch_end(r, 30);
	assert_int_equal(uf_consumer_snapshot(c, 3, &s), 0);
	assert_int_equal(s.stamp, 30);
	assert_int_equal(s.volume, 7 + 5 + 6);
	assert_int_equal(s.trades, 3);
	assert_int_equal(s.last_price, 1003);
	assert_int_equal(uf_consumer_snapshot(c, 9, &s), 0);
	assert_int_equal(s.stamp, 30);
	assert_int_equal(s.nbid, 3);

	/* fewer levels clear the rest */
	assert_int_equal(uf_ring_image_set_levels(r, 3, UF_SIDE_BID, lv, 1, 15, 0), 0);
	assert_int_equal(uf_consumer_snapshot(c, 3, &s), 0);
	assert_int_equal(s.nbid, 1);
	uf_consumer_detach(c);
	uf_ring_close(r);
	uf_ring_unlink(name, NULL);
}

/* Issue 14's deferred image: a bracket may stay open across publishes. While it is open no
 * publish and no uf_ring_image_commit may move the commit sequence (a late consumer's
 * snapshot stamp is max(entry stamp, commit): a commit past updates not yet made would make
 * it skip records its snapshot lacks); the bracket's end stamps what it touched and commits.
 * Outside a bracket every publish still commits the tail before it. */
static void test_image_open_bracket_holds_the_commit(void **state)
{
	struct uf_book_snapshot s;
	struct uf_record rec[2];
	char name[64];
	struct uf_ring *r;
	uf_consumer_t *c;

	test_ring_name(name, sizeof(name), "bracket");
	r = make_ring(name, 64, 4);
	c = attach(name);
	assert_non_null(c);
	memset(rec, 0, sizeof(rec));
	rec[0].kind = rec[1].kind = UF_REC_LEVEL;
	rec[0].instrument = rec[1].instrument = 1;
	assert_int_equal(uf_ring_image_set_symbol(r, 1, uf_ring_symbol_pack("TOUCH"), 100, 'Q', 0),
	                 0);
	assert_int_equal(uf_ring_image_set_symbol(r, 2, uf_ring_symbol_pack("QUIET"), 100, 'Q', 0),
	                 0);

	/* Regression: outside a bracket each publish commits the tail before it. */
	assert_int_equal(uf_consumer_image_seq(c), 0);
	for (uint64_t k = 1; k <= 3; k++) {
		assert_int_equal(uf_ring_publish(r, rec, 1), 0);
		assert_int_equal(uf_consumer_image_seq(c), k - 1);
	}
	uf_ring_image_commit(r);
	assert_int_equal(uf_consumer_image_seq(c), 3);

	/* A batch bracket open across three publishes: the commit stays at 3. */
	assert_int_equal(uf_ring_image_batch_begin(r), 0);
	assert_int_equal(uf_ring_image_add_trade(r, 1, 1005, 40, 0, 0, 4), 0);
	assert_int_equal(uf_ring_publish(r, rec, 2), 0);
	assert_int_equal(uf_consumer_image_seq(c), 3);
	uf_ring_image_commit(r); /* a no-op inside the bracket */
	assert_int_equal(uf_consumer_image_seq(c), 3);
	assert_int_equal(uf_ring_publish(r, rec, 1), 0);
	assert_int_equal(uf_ring_publish(r, rec, 2), 0);
	assert_int_equal(uf_ring_tail(r), 8);
	assert_int_equal(uf_consumer_image_seq(c), 3);
	uf_ring_image_commit(r);
	assert_int_equal(uf_consumer_image_seq(c), 3);
	/* A late consumer: the untouched entry is readable and stamped with the old commit, so
	 * it applies records 3..7 itself; the touched one is held (the reader gives up after its
	 * ~20 ms budget: this producer does not end the bracket meanwhile). */
	assert_int_equal(uf_consumer_snapshot(c, 2, &s), 0);
	assert_int_equal(s.stamp, 3);
	uint64_t t0 = uf_now_mono_ns();
	assert_int_equal(uf_consumer_snapshot(c, 1, &s), -EBUSY);
	assert_true(uf_now_mono_ns() - t0 < 2000000000ull);
	/* The end stamps the touched entry and commits its seq, once. */
	uf_ring_image_batch_end(r, uf_ring_tail(r));
	assert_int_equal(uf_consumer_image_seq(c), 8);
	assert_int_equal(uf_consumer_snapshot(c, 1, &s), 0);
	assert_int_equal(s.stamp, 8);
	assert_int_equal(s.volume, 40);
	assert_int_equal(s.trades, 1);
	assert_int_equal(s.last_price, 1005);
	assert_int_equal(uf_consumer_snapshot(c, 2, &s), 0);
	assert_int_equal(s.stamp, 8); /* quiet: the commit carries it */
	/* Closed again: publishes commit as before (the bracket left nothing behind). */
	assert_int_equal(uf_ring_publish(r, rec, 1), 0);
	assert_int_equal(uf_consumer_image_seq(c), 8);
	assert_int_equal(uf_ring_publish(r, rec, 1), 0);
	assert_int_equal(uf_consumer_image_seq(c), 9);

	/* The one-instrument bracket holds the commit the same way; its end does not commit
	 * (uf_ring_image_commit or the next publish does). */
	assert_int_equal(uf_ring_image_begin(r, 2), 0);
	assert_int_equal(uf_ring_publish(r, rec, 1), 0);
	assert_int_equal(uf_consumer_image_seq(c), 9);
	uf_ring_image_commit(r);
	assert_int_equal(uf_consumer_image_seq(c), 9);
	uf_ring_image_end(r, uf_ring_tail(r));
	assert_int_equal(uf_consumer_image_seq(c), 9);
	uf_ring_image_commit(r);
	assert_int_equal(uf_consumer_image_seq(c), 11);
	uf_consumer_detach(c);
	uf_ring_close(r);
	uf_ring_unlink(name, NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_image_directory_status_and_limits),
	    cmocka_unit_test(test_image_open_bracket_holds_the_commit),
	    cmocka_unit_test(test_image_snapshot_is_consistent_while_written),
	    cmocka_unit_test(test_image_snapshot_then_stream_has_no_gap_and_no_duplicate),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
