/* publish/proto_iex.c on the real IEX captures in ../shared/data/iex (UF_SHARED_DATA,
 * conformance label): every IEX-TP segment of the DEEP 1.0 and TOPS 1.6 captures applied
 * through the protocol entries, the records applied by a consumer's book builder (the one
 * book model every consumer path shares), and the books compared with a model this test
 * builds from the raw message bytes (the specifications' offsets, not decode/uf_iex.c):
 *   DEEP: per stream a map (symbol, side, price) -> size; a stream that starts over inside
 *         the session (sequence 1 at stream offset 0: the capture has 11) voids the books as
 *         the arbiter does (a RESET). Every level of every book equal, no decode error, the 8
 *         deletes of levels their stream never set counted and flagged (unknown_level).
 *   TOPS: per symbol the last quote (size 0 = empty side).
 * The captures are single-line recordings without losses: no gap is involved. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "decode/uf_decode.h"
#include "publish/uf_proto.h"
#include "publish/uf_publish.h"
#include "ring/ufbook.h"

#define CAP_SLOTS (1u << 17) /* model hash slots: more than twice the levels ever open */

/* One model level (DEEP) or one side's quote (TOPS). */
struct cap_level {
	uint64_t sym;   /* 8 symbol bytes; 0 = free slot */
	int64_t price;  /* 4 decimals (the key; 0 for a TOPS side) */
	int64_t qprice; /* TOPS: the side's quoted price */
	uint32_t size;  /* shares */
	uint8_t side;   /* 'B' / 'S' */
	uint8_t live;   /* 1 = present */
};

struct cap {
	struct uf_publisher *pub;
	const struct uf_proto *proto;
	void *state;
	struct uf_pub_step step;
	struct uf_record buf[256];
	uf_book_builder_t *bb;
	uint64_t seq;             /* records handed to the builder */
	uint64_t resets;          /* RESET records */
	uint64_t msg_errors;      /* messages that did not decode */
	struct cap_level *lv;     /* the model, open addressing */
	uint64_t unknown_deletes; /* model: deletes of a level the stream never set */
};

static void cap_split(void *owner)
{
	struct cap *x = owner;
	for (size_t i = 0; i < x->step.nrec; i++) {
		const struct uf_record *r = &x->buf[i];
		x->resets += r->kind == UF_REC_RESET;
		assert_true(uf_book_builder_apply(x->bb, r, ++x->seq) >= 0);
	}
	x->step.nrec = 0;
}

static void cap_decoded(void *owner)
{
	(void)owner;
}

static void cap_msg_error(void *owner, enum uf_step_err kind)
{
	(void)kind;
	((struct cap *)owner)->msg_errors++;
}

static uint64_t le(const uint8_t *p, int n)
{
	uint64_t v = 0;
	for (int i = n - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/* The model slot of (sym, side, price) (DEEP; TOPS uses price 0: one entry a side). */
static struct cap_level *cap_slot(struct cap *x, uint64_t sym, uint8_t side, int64_t price)
{
	uint64_t h =
	    (sym * 0x9E3779B97F4A7C15ull) ^ ((uint64_t)price * 0xC2B2AE3D27D4EB4Full) ^ side;
	uint32_t i = (uint32_t)(h >> 40) & (CAP_SLOTS - 1);
	for (;;) {
		struct cap_level *l = &x->lv[i];
		if (!l->sym || (l->sym == sym && l->side == side && l->price == price))
			return l;
		i = (i + 1) & (CAP_SLOTS - 1);
	}
}

/* The model's view of one message block (raw bytes). */
static void cap_model_msg(struct cap *x, const uint8_t *m, size_t len)
{
	if (len == 30 && (m[0] == '8' || m[0] == '5')) {
		uint64_t sym = le(m + 10, 8);
		uint8_t side = m[0] == '8' ? 'B' : 'S';
		uint32_t size = (uint32_t)le(m + 18, 4);
		int64_t price = (int64_t)le(m + 22, 8);
		struct cap_level *l = cap_slot(x, sym, side, price);
		if (!size && !(l->sym && l->live))
			x->unknown_deletes++;
		l->sym = sym;
		l->side = side;
		l->price = price;
		l->size = size;
		l->live = size != 0;
	} else if (len == 42 && m[0] == 'Q') {
		uint64_t sym = le(m + 10, 8);
		for (int s = 0; s < 2; s++) {
			struct cap_level *l = cap_slot(x, sym, s ? 'S' : 'B', 0);
			l->sym = sym;
			l->side = s ? 'S' : 'B';
			l->size = (uint32_t)le(m + (s ? 38 : 18), 4);
			l->qprice = (int64_t)le(m + (s ? 30 : 22), 8);
			l->price = 0;
			l->live = 1; /* a side quoted: size 0 = empty, compared as such */
		}
	}
}

static struct cap *cap_new(const char *proto)
{
	struct cap *x = calloc(1, sizeof(*x));
	assert_non_null(x);
	struct uf_publish_params pp;
	uf_publish_params_default(&pp);
	pp.max_orders = 1024;
	pp.max_levels = 1u << 18;
	pp.max_instruments = 16384;
	assert_int_equal(uf_publish_create(&pp, &x->pub), 0);
	x->proto = uf_proto_find(proto);
	assert_non_null(x->proto);
	x->state = calloc(1, x->proto->state_size);
	assert_int_equal(uf_book_builder_create(16384, &x->bb), 0);
	x->lv = calloc(CAP_SLOTS, sizeof(*x->lv));
	assert_non_null(x->lv);
	x->step.pub = x->pub;
	x->step.recs = x->buf;
	x->step.rec_cap = x->step.step_cap = 256;
	x->step.split = cap_split;
	x->step.decoded = cap_decoded;
	x->step.msg_error = cap_msg_error;
	x->step.owner = x;
	return x;
}

static void cap_free(struct cap *x)
{
	uf_publish_destroy(x->pub);
	uf_book_builder_destroy(x->bb);
	free(x->state);
	free(x->lv);
	free(x);
}

static void cap_compare_deep(struct cap *x);
static void cap_compare_tops(struct cap *x);

/* Plays the capture: every data segment through the entry (a new stream first voids the
 * books, as the arbiter does) and through the model; after data segment `check_at` (and at
 * the end) the books are compared with `compare`. Returns the segments applied. */
static uint64_t cap_play(struct cap *x, const char *file, uint64_t check_at,
                         void (*compare)(struct cap *x))
{
	const char *dir = getenv("UF_SHARED_DATA");
	if (!dir)
		fail_msg("UF_SHARED_DATA is not set: run through ctest (conformance label)");
	char path[512];
	snprintf(path, sizeof(path), "%s/iex/%s", dir, file);
	struct uf_decode_counters dc;
	memset(&dc, 0, sizeof(dc));
	struct uf_reader rd;
	if (uf_reader_open(&rd, path, &dc) != 0)
		fail_msg("%s: %s", path, rd.err);
	const uint8_t *p;
	size_t len;
	uint64_t ts, segs = 0, next = 1;
	int started = 0;
	while (uf_reader_next_payload(&rd, &p, &len, &ts) == 1) {
		struct uf_frame f;
		if (x->proto->framing->open(&f, p, len) != UF_FRAME_DATA)
			continue; /* heartbeats; the truncated last record never gets here */
		uint64_t sent;
		if (started && f.seq == 1 && x->proto->framing->restart(&f, &sent)) {
			/* the arbiter's rule for a stream that starts over: RESET, then 1.. */
			assert_true(x->step.nrec + 1 <= x->step.rec_cap);
			assert_int_equal(
			    uf_publish_new_session(x->pub, f.session, &x->buf[x->step.nrec], 1), 1);
			x->step.nrec++;
			memset(x->lv, 0, CAP_SLOTS * sizeof(*x->lv));
			next = 1;
		}
		assert_int_equal(f.seq, next); /* one line, no loss */
		next = f.seq + f.count;
		started = 1;
		x->proto->apply(&x->step, x->state, &f, 0, 0);
		struct uf_frame_iter it;
		struct uf_frame_msg b;
		x->proto->framing->iter_init(&it, &f);
		while (x->proto->framing->iter_next(&it, &b))
			cap_model_msg(x, b.msg, b.len);
		if (++segs == check_at) {
			cap_split(x);
			compare(x);
		}
	}
	cap_split(x);
	compare(x);
	uf_reader_close(&rd);
	return segs;
}

/* Every model level is in the consumer's book (by symbol), and the books hold no other. */
static void cap_compare_deep(struct cap *x)
{
	uint64_t model_levels = 0, book_levels = 0;
	for (uint32_t i = 0; i < CAP_SLOTS; i++) {
		const struct cap_level *l = &x->lv[i];
		if (!l->sym || !l->live)
			continue;
		model_levels++;
		char sym[9];
		memcpy(sym, &l->sym, 8);
		sym[8] = 0;
		for (int k = 7; k >= 0 && sym[k] == ' '; k--)
			sym[k] = 0;
		int id = uf_publish_lookup(x->pub, sym);
		assert_true(id > 0);
		struct uf_level lv[256];
		int n = uf_book_builder_levels(x->bb, (uint32_t)id, l->side, lv, 256);
		int found = 0;
		for (int k = 0; k < n; k++)
			if (lv[k].price == l->price) {
				assert_int_equal(lv[k].shares, l->size);
				assert_int_equal(lv[k].orders, 0);
				found = 1;
			}
		if (!found)
			fail_msg("%s %c %lld: in the model, not in the book", sym, l->side,
			         (long long)l->price);
	}
	for (uint32_t id = 1; id < 16384; id++)
		book_levels += uf_book_builder_depth(x->bb, id, UF_SIDE_BID) +
		               uf_book_builder_depth(x->bb, id, UF_SIDE_ASK);
	assert_int_equal(book_levels, model_levels);
	print_message("deep: %llu levels open, all equal\n", (unsigned long long)model_levels);
}

/* TOPS: every quoted side is the book's one level (or empty), and no book holds more. */
static void cap_compare_tops(struct cap *x)
{
	uint64_t sides = 0, levels = 0;
	for (uint32_t i = 0; i < CAP_SLOTS; i++) {
		const struct cap_level *l = &x->lv[i];
		if (!l->sym)
			continue;
		sides++;
		char sym[9];
		memcpy(sym, &l->sym, 8);
		sym[8] = 0;
		for (int k = 7; k >= 0 && sym[k] == ' '; k--)
			sym[k] = 0;
		int id = uf_publish_lookup(x->pub, sym);
		assert_true(id > 0);
		struct uf_level lv[4];
		int n = uf_book_builder_levels(x->bb, (uint32_t)id, l->side, lv, 4);
		assert_int_equal(n, l->size ? 1 : 0);
		if (n) {
			assert_int_equal(lv[0].price, l->qprice);
			assert_int_equal(lv[0].shares, l->size);
			levels++;
		}
	}
	uint64_t book_levels = 0;
	for (uint32_t id = 1; id < 16384; id++)
		book_levels += uf_book_builder_depth(x->bb, id, UF_SIDE_BID) +
		               uf_book_builder_depth(x->bb, id, UF_SIDE_ASK);
	assert_int_equal(book_levels, levels);
	print_message("tops: %llu sides quoted, %llu levels, all equal\n",
	              (unsigned long long)sides, (unsigned long long)levels);
}

static void test_iex_tops_capture_top_of_book_equals_the_last_quotes(void **st)
{
	(void)st;
	struct cap *x = cap_new("iex-tops");
	assert_true(cap_play(x, "iex-tops-1.6-20170710.pcap.gz", 6000, cap_compare_tops) > 0);
	struct uf_publish_stats ps;
	uf_publish_stats(x->pub, &ps);
	print_message("tops: %llu messages, %llu records\n", (unsigned long long)ps.messages,
	              (unsigned long long)ps.records);
	assert_int_equal(x->msg_errors, 0);
	assert_int_equal(ps.errors_total, 0);
	assert_int_equal(x->resets, 0);
	cap_free(x);
}

static void test_iex_deep_capture_books_equal_the_wire(void **st)
{
	(void)st;
	struct cap *x = cap_new("iex-deep");
	uint64_t segs = cap_play(x, "iex-deep-1.0-20170425.pcap.gz", 60000, cap_compare_deep);
	assert_true(segs > 0);
	struct uf_publish_stats ps;
	uf_publish_stats(x->pub, &ps);
	assert_int_equal(x->msg_errors, 0);
	print_message("deep: %llu messages, %llu records\n", (unsigned long long)ps.messages,
	              (unsigned long long)ps.records);
	assert_int_equal(ps.messages, 391999); /* every message of the capture's segments */
	assert_int_equal(x->resets, 11);       /* the 11 restarts inside the session */
	assert_int_equal(x->unknown_deletes, 8);
	assert_int_equal(ps.errors[UF_PUB_ERR_UNKNOWN_LEVEL], 8); /* counted and flagged */
	assert_int_equal(ps.errors_total, 8);
	cap_free(x);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_iex_deep_capture_books_equal_the_wire),
	    cmocka_unit_test(test_iex_tops_capture_top_of_book_equals_the_last_quotes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
