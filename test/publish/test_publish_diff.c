/* publish/: differential tests. Long seeded random streams (many instruments, replace
 * chains, partial executions, deletes, injected integrity errors) go through the engine and
 * through the naive reference model (ref_model.h); books and error counts must agree, and the
 * books a consumer rebuilds from the records alone must agree too. Batch apply with any
 * prefetch distance must write exactly the records single apply writes. */
#include <errno.h>
#include <stdio.h>
#include <unistd.h>

#include "decode/uf_decode.h"
#include "pub_test_util.h"

struct gen {
	uint64_t s;        /* xorshift64* state */
	uint32_t ninst;    /* instruments 1 .. ninst */
	uint32_t max_inst; /* engine's max_instruments (bad locates are >= this) */
	uint64_t next_ref; /* next fresh order reference */
	uint64_t *refs;    /* refs added (some dead by now: the model says which) */
	size_t nrefs, cap;
	uint32_t mid[1024]; /* per instrument mid price */
	uint32_t spread;    /* how far from the mid prices wander (levels per side) */
	uint64_t ts;
};

static uint64_t rnd(struct gen *g)
{
	g->s ^= g->s >> 12;
	g->s ^= g->s << 25;
	g->s ^= g->s >> 27;
	return g->s * 0x2545F4914F6CDD1Dull;
}

static uint32_t rndn(struct gen *g, uint32_t n)
{
	return (uint32_t)(rnd(g) % n);
}

static void gen_init(struct gen *g, uint64_t seed, uint32_t ninst, uint32_t max_inst,
                     uint32_t spread)
{
	memset(g, 0, sizeof(*g));
	g->s = seed * 0x9E3779B97F4A7C15ull + 1;
	g->ninst = ninst;
	g->max_inst = max_inst;
	g->next_ref = 1000 + seed * 7;
	g->spread = spread;
	for (uint32_t i = 0; i <= ninst; i++)
		g->mid[i] = 100000 + rndn(g, 5000000);
}

static void gen_push(struct gen *g, uint64_t ref)
{
	if (g->nrefs == g->cap) {
		g->cap = g->cap ? g->cap * 2 : 4096;
		g->refs = realloc(g->refs, g->cap * sizeof(*g->refs));
		assert_non_null(g->refs);
	}
	g->refs[g->nrefs++] = ref;
}

/* A live order picked at random (NULL when none). */
static struct ref_order *gen_pick(struct gen *g, struct ref_model *r)
{
	while (g->nrefs) {
		size_t i = rndn(g, (uint32_t)g->nrefs);
		struct ref_order *o = ref_find(r, g->refs[i]);
		if (o)
			return o;
		g->refs[i] = g->refs[--g->nrefs];
	}
	return NULL;
}

static uint32_t gen_inst(struct gen *g)
{
	/* Skewed: low ids carry most of the flow. */
	uint32_t a = rndn(g, g->ninst), b = rndn(g, g->ninst);
	return 1 + (a < b ? a : b);
}

static uint32_t gen_price(struct gen *g, uint32_t inst, uint8_t side)
{
	uint32_t off = rndn(g, 100) < 85 ? rndn(g, 8) : rndn(g, g->spread);
	uint32_t mid = g->mid[inst];
	return side == 'B' ? mid - 1 - off * 100 : mid + 1 + off * 100;
}

static uint32_t gen_shares(struct gen *g)
{
	return rndn(g, 10) < 8 ? (1 + rndn(g, 20)) * 100 : 1 + rndn(g, 1500);
}

/* Next message of the stream; the model state steers it towards valid references. */
static struct uf_itch_msg gen_next(struct gen *g, struct ref_model *r)
{
	struct uf_itch_msg m;
	struct ref_order *o = NULL;
	uint32_t k = rndn(g, 100);
	g->ts += 1 + rndn(g, 1000);
	if (rndn(g, 1000) == 0) { /* the mids move */
		uint32_t i = gen_inst(g);
		g->mid[i] += rndn(g, 2) ? 500 : -500;
	}
	if (k >= 40 && k < 87 && !(o = gen_pick(g, r)))
		k = 0;
	if (k < 40) {
		uint32_t inst = gen_inst(g);
		uint8_t side = rndn(g, 2) ? 'B' : 'S';
		m = mk_add((uint16_t)inst, g->next_ref, side, gen_shares(g),
		           gen_price(g, inst, side), NULL);
		char sym[9];
		snprintf(sym, sizeof(sym), "S%u", inst % 100000u);
		mk_sym(m.u.add.stock, sym);
		if (rndn(g, 10) == 0) {
			m.type = 'F';
			memcpy(m.u.add.attribution, "ABCD", 4);
		}
		gen_push(g, g->next_ref++);
	} else if (k < 52) {
		uint32_t sh = o->shares;
		uint32_t want = rndn(g, 2) ? sh : 1 + rndn(g, sh);
		if (rndn(g, 30) == 0)
			want = sh + 1 + rndn(g, 100); /* injected over-execution */
		if (rndn(g, 3) == 0)
			m = mk_execp((uint16_t)o->inst, o->ref, want, rnd(g),
			             rndn(g, 5) ? 'Y' : 'N', o->price + 1);
		else
			m = mk_exec((uint16_t)o->inst, o->ref, want, rnd(g));
	} else if (k < 62) {
		uint32_t sh = o->shares;
		uint32_t want = rndn(g, 3) == 0 ? sh : 1 + rndn(g, sh);
		if (rndn(g, 30) == 0)
			want = sh + 1; /* injected over-cancel */
		m = mk_cancel((uint16_t)o->inst, o->ref, want);
	} else if (k < 77) {
		m = mk_del((uint16_t)o->inst, o->ref);
	} else if (k < 87) {
		uint32_t price = rndn(g, 4) == 0 ? o->price : gen_price(g, o->inst, o->side);
		uint64_t nref = g->next_ref++;
		if (rndn(g, 40) == 0 && g->nrefs) {
			nref =
			    g->refs[rndn(g, (uint32_t)g->nrefs)]; /* maybe a live ref: duplicate */
			g->next_ref--;
		} else {
			gen_push(g, nref);
		}
		m = mk_replace((uint16_t)o->inst, o->ref, nref, gen_shares(g), price);
	} else if (k < 91) {
		uint32_t inst = gen_inst(g);
		static const uint8_t tt[3] = {'P', 'Q', 'B'};
		m = mk_hdr(tt[rndn(g, 3)], (uint16_t)inst, 0);
		if (m.type == 'P') {
			m.u.trade.side = 'B';
			m.u.trade.shares = gen_shares(g);
			m.u.trade.price = g->mid[inst];
			m.u.trade.match = rnd(g);
		} else if (m.type == 'Q') {
			m.u.cross.shares = gen_shares(g);
			m.u.cross.price = g->mid[inst];
			m.u.cross.cross_type = 'O';
		} else {
			m.u.broken.match = rnd(g);
		}
	} else if (k < 95) {
		static const uint8_t st[] = {'R', 'H', 'Y', 'L', 'K', 'J', 'h',
		                             'I', 'N', 'O', 'S', 'V', 'W'};
		m = mk_hdr(st[rndn(g, sizeof(st))], (uint16_t)gen_inst(g), 0);
		if (m.type == 'R') {
			char sym[9];
			snprintf(sym, sizeof(sym), "S%u", m.locate % 100000u);
			mk_sym(m.u.dir.stock, sym);
			m.u.dir.round_lot_size = 100;
		}
	} else {
		/* Injected integrity errors. */
		switch (rndn(g, 7)) {
		case 0: /* unknown reference, any of E X D U */
			switch (rndn(g, 4)) {
			case 0:
				m = mk_exec(1, 1ull << 60 | rnd(g) >> 8, 10, 1);
				break;
			case 1:
				m = mk_cancel(1, 1ull << 60 | rnd(g) >> 8, 10);
				break;
			case 2:
				m = mk_del(1, 1ull << 60 | rnd(g) >> 8);
				break;
			default:
				m = mk_replace(1, 1ull << 60 | rnd(g) >> 8, g->next_ref++, 5, 5);
				break;
			}
			break;
		case 1: /* duplicate add of a (maybe) live reference */
			if (g->nrefs) {
				uint64_t ref = g->refs[rndn(g, (uint32_t)g->nrefs)];
				m = mk_add(1, ref, 'B', 100, g->mid[1] - 1, NULL);
			} else {
				m = mk_add(1, g->next_ref++, 'B', 100, g->mid[1] - 1, NULL);
			}
			break;
		case 2: /* bad side */
			m = mk_add(2, g->next_ref++, 'Z', 100, 5, NULL);
			break;
		case 3: /* locate out of range */
			m = mk_add((uint16_t)(g->max_inst + rndn(g, 100)), g->next_ref++, 'S', 10,
			           5, NULL);
			break;
		case 4: /* locate that is not the order's */
			o = gen_pick(g, r);
			m = o ? mk_cancel(o->inst == 1 ? 2 : 1, o->ref, 1) : mk_del(1, 1ull << 61);
			break;
		case 5: /* unknown message type */
			m = mk_hdr('z', 1, 0);
			break;
		default: /* execution larger than any order */
			o = gen_pick(g, r);
			m = o ? mk_exec((uint16_t)o->inst, o->ref, UINT32_MAX, 1)
			      : mk_del(1, 1ull << 62);
			break;
		}
	}
	m.timestamp = g->ts;
	return m;
}

static struct uf_publisher *mk_pub(uint64_t max_orders, uint32_t max_inst, uint32_t max_levels,
                                   uint32_t prefetch)
{
	struct uf_publish_params pp;
	uf_publish_params_default(&pp);
	pp.max_orders = max_orders;
	pp.max_instruments = max_inst;
	pp.max_levels = max_levels;
	pp.prefetch = prefetch;
	struct uf_publisher *p = NULL;
	assert_int_equal(uf_publish_create(&pp, &p), 0);
	return p;
}

/* Runs `n` messages of seed `seed` through engine, model and record checker, comparing every
 * `every` messages. */
static void run_stream(uint64_t seed, size_t n, uint32_t ninst, uint64_t max_orders,
                       uint32_t spread, size_t every)
{
	const uint32_t max_inst = ninst + 2;
	struct uf_publisher *p = mk_pub(max_orders, max_inst, 1u << 18, 0);
	struct ref_model *r = malloc(sizeof(*r));
	struct gen *g = malloc(sizeof(*g));
	struct rec_checker *c = malloc(sizeof(*c));
	assert_true(r && g && c);
	ref_init(r, max_orders, max_inst);
	gen_init(g, seed, ninst, max_inst, spread);
	rc_init(c, max_inst, 1);
	struct uf_record rec[UF_REC_MAX_PER_MSG];
	for (size_t i = 0; i < n; i++) {
		struct uf_itch_msg m = gen_next(g, r);
		int k = uf_publish_apply(p, &m, i + 1, 0, rec, UF_REC_MAX_PER_MSG);
		assert_true(k >= 0);
		ref_apply(r, &m);
		rc_event(c, rec, k);
		if ((i + 1) % every == 0 || i + 1 == n) {
			pub_compare_books(p, r);
			pub_compare_errors(p, r);
			rc_compare(c, p);
		}
	}
	struct uf_publish_stats st;
	uf_publish_stats(p, &st);
	print_message("seed %llu: %zu msgs, %llu records, %llu BBO changes, %llu live orders, "
	              "peak %llu orders / %llu levels, %llu integrity errors\n",
	              (unsigned long long)seed, n, (unsigned long long)st.records,
	              (unsigned long long)c->bbo, (unsigned long long)st.live_orders,
	              (unsigned long long)st.peak_orders, (unsigned long long)st.peak_levels,
	              (unsigned long long)st.errors_total);
	assert_int_equal(st.messages, n);
	assert_int_equal(st.records, c->records);
	assert_true(st.errors_total > 0);   /* the stream did inject errors */
	assert_true(st.peak_orders > 1000); /* and built real books */
	free(g->refs);
	rc_free(c);
	ref_free(r);
	free(c);
	free(g);
	free(r);
	uf_publish_destroy(p);
}

static void test_random_streams_match_reference_model(void **state)
{
	(void)state;
	for (uint64_t seed = 1; seed <= 3; seed++)
		run_stream(seed, 120000, 40, 1000000, 60, 20000);
}

static void test_deep_books_with_thousands_of_levels_match(void **state)
{
	(void)state;
	/* Few instruments, prices spread over ~3000 levels a side: chunks grow and move. */
	run_stream(11, 150000, 3, 1000000, 3000, 50000);
}

static void test_full_order_table_behaves_like_the_model(void **state)
{
	(void)state;
	run_stream(21, 40000, 20, 1500, 50, 5000);
	/* The check inside compares ORDERS_FULL counts; make sure they happened. */
	struct uf_publisher *p = mk_pub(1500, 22, 1u << 16, 0);
	struct ref_model *r = malloc(sizeof(*r));
	struct gen g;
	ref_init(r, 1500, 22);
	gen_init(&g, 21, 20, 22, 50);
	struct uf_record rec[4];
	for (size_t i = 0; i < 40000; i++) {
		struct uf_itch_msg m = gen_next(&g, r);
		uf_publish_apply(p, &m, i + 1, 0, rec, 4);
		ref_apply(r, &m);
	}
	assert_true(r->err[UF_PUB_ERR_ORDERS_FULL] > 0);
	pub_compare_errors(p, r);
	free(g.refs);
	ref_free(r);
	free(r);
	uf_publish_destroy(p);
}

static void test_batch_prefetch_writes_exactly_the_single_apply_records(void **state)
{
	(void)state;
	const size_t n = 60000;
	struct uf_itch_msg *msgs = malloc(n * sizeof(*msgs));
	struct uf_record *want = malloc(n * UF_REC_MAX_PER_MSG * sizeof(*want));
	struct uf_record *got = malloc(n * UF_REC_MAX_PER_MSG * sizeof(*got));
	struct ref_model *r = malloc(sizeof(*r));
	struct gen g;
	assert_true(msgs && want && got && r);
	ref_init(r, 1000000, 42);
	gen_init(&g, 5, 40, 42, 60);
	for (size_t i = 0; i < n; i++) {
		msgs[i] = gen_next(&g, r);
		ref_apply(r, &msgs[i]);
	}
	struct uf_publisher *p = mk_pub(1000000, 42, 1u << 18, 0);
	size_t nwant = 0;
	for (size_t i = 0; i < n; i++) {
		int k = uf_publish_apply(p, &msgs[i], 100 + i, 0, &want[nwant], UF_REC_MAX_PER_MSG);
		assert_true(k >= 0);
		nwant += (size_t)k;
	}
	pub_compare_books(p, r);
	uf_publish_destroy(p);

	static const uint32_t dist[] = {0, 1, 2, 5, 16, 64};
	for (size_t d = 0; d < UF_ARRAY_SIZE(dist); d++) {
		p = mk_pub(1000000, 42, 1u << 18, dist[d]);
		size_t i = 0, ngot = 0;
		uint64_t bs = 1;
		while (i < n) {
			/* Batch sizes vary; the output sometimes runs out mid-batch. */
			size_t want_n = 1 + (size_t)((bs = bs * 6364136223846793005ull + 1) >> 58);
			if (want_n > n - i)
				want_n = n - i;
			size_t cap = (bs >> 40) % 3 == 0 ? UF_REC_MAX_PER_MSG * 3 + 1
			                                 : want_n * UF_REC_MAX_PER_MSG;
			size_t applied = 0;
			int k = uf_publish_apply_batch(p, &msgs[i], want_n, 100 + i, 0, &got[ngot],
			                               cap, &applied);
			assert_true(k >= 0);
			assert_true(applied >= 1 && applied <= want_n);
			i += applied;
			ngot += (size_t)k;
		}
		assert_int_equal(ngot, nwant);
		for (size_t j = 0; j < nwant; j++) {
			if (memcmp(&got[j], &want[j], sizeof(want[j])) != 0) {
				print_error(
				    "prefetch %u: record %zu differs (kind %u/%u seq %llu/%llu)\n",
				    dist[d], j, got[j].kind, want[j].kind,
				    (unsigned long long)got[j].feed_seq,
				    (unsigned long long)want[j].feed_seq);
				fail();
			}
		}
		pub_compare_books(p, r);
		uf_publish_destroy(p);
	}
	free(g.refs);
	ref_free(r);
	free(r);
	free(msgs);
	free(want);
	free(got);
}

/* Garbage: every message type with random fields, references from a tiny space (so adds
 * collide and executions miss), locates past the table, sides that are not B/S, zero and
 * maximal shares and prices. Nothing may crash, and the model must still agree. */
static void test_garbage_messages_never_crash_and_match_the_model(void **state)
{
	(void)state;
	static const uint8_t types[] = "SRHYLVWKJhAFECXDUPQBINOZ";
	struct uf_publisher *p = mk_pub(5000, 300, 1u << 16, 8);
	struct ref_model *r = malloc(sizeof(*r));
	struct rec_checker *c = malloc(sizeof(*c));
	struct gen g;
	ref_init(r, 5000, 300);
	rc_init(c, 300, 1);
	gen_init(&g, 99, 10, 300, 10);
	struct uf_itch_msg batch[32];
	struct uf_record rec[32 * UF_REC_MAX_PER_MSG];
	for (size_t i = 0; i < 200000; i += 32) {
		for (int j = 0; j < 32; j++) {
			struct uf_itch_msg m;
			uint8_t *b = (uint8_t *)&m;
			for (size_t k = 0; k < sizeof(m); k++)
				b[k] = (uint8_t)rnd(&g);
			m.raw = NULL;
			m.type = types[rndn(&g, sizeof(types) - 1)];
			m.locate = (uint16_t)(rndn(&g, 4) ? rndn(&g, 12) : rnd(&g));
			uint64_t ref = rndn(&g, 3000);
			uint32_t sh =
			    rndn(&g, 8) == 0 ? (rndn(&g, 2) ? 0 : UINT32_MAX) : rndn(&g, 500);
			uint32_t px =
			    rndn(&g, 8) == 0 ? (rndn(&g, 2) ? 0 : UINT32_MAX) : 1000 + rndn(&g, 50);
			switch (m.type) {
			case 'A':
			case 'F':
				m.u.add.order_ref = ref;
				m.u.add.side =
				    rndn(&g, 10) ? (rndn(&g, 2) ? 'B' : 'S') : (uint8_t)rnd(&g);
				m.u.add.shares = sh;
				m.u.add.price = px;
				break;
			case 'E':
			case 'C':
				m.u.exec.order_ref = ref;
				m.u.exec.shares = sh;
				break;
			case 'X':
				m.u.cancel.order_ref = ref;
				m.u.cancel.shares = sh;
				break;
			case 'D':
				m.u.del.order_ref = ref;
				break;
			case 'U':
				m.u.replace.orig_ref = ref;
				m.u.replace.new_ref = rndn(&g, 3000);
				m.u.replace.shares = sh;
				m.u.replace.price = px;
				break;
			}
			batch[j] = m;
			ref_apply(r, &m);
		}
		size_t done = 0;
		while (done < 32) {
			size_t applied;
			int k = uf_publish_apply_batch(p, &batch[done], 32 - done, i + done, 0, rec,
			                               UF_ARRAY_SIZE(rec), &applied);
			assert_true(k >= 0);
			int st = 0;
			for (int q = 0; q < k; q++)
				if (rec[q].flags & UF_RECF_LAST) {
					rc_event(c, &rec[st], q - st + 1);
					st = q + 1;
				}
			assert_int_equal(st, k);
			done += applied;
		}
	}
	pub_compare_books(p, r);
	pub_compare_errors(p, r);
	rc_compare(c, p);
	struct uf_publish_stats st;
	uf_publish_stats(p, &st);
	/* every kind ITCH messages can raise was exercised (BAD_PRICE, UNKNOWN_LEVEL and
	 * IDS_FULL belong to the venue API, publish/uf_venue.h: test_publish_venue) */
	for (unsigned k = 0; k < UF_PUB_NERR; k++)
		if (k != UF_PUB_ERR_LEVELS_FULL && k != UF_PUB_ERR_ORDERS_FULL &&
		    k != UF_PUB_ERR_BAD_PRICE && k != UF_PUB_ERR_UNKNOWN_LEVEL &&
		    k != UF_PUB_ERR_IDS_FULL)
			assert_true(st.errors[k] > 0);
	rc_free(c);
	ref_free(r);
	free(c);
	free(r);
	uf_publish_destroy(p);
}

/* A generated day from uf-gen (decode/'s generator), read through decode/'s reader. */
static void test_generated_day_matches_reference_model(void **state)
{
	(void)state;
	const char *bin = getenv("UF_BIN_DIR");
	char gen[512], out[256], cmd[1024];
	snprintf(gen, sizeof(gen), "%s/uf-gen", bin ? bin : UF_BIN_DIR);
	if (access(gen, X_OK) != 0) {
		print_error("uf-gen not built at %s: build target uf-gen first\n", gen);
		fail();
	}
	snprintf(out, sizeof(out), "/tmp/uf-pub-test-%d.itch", (int)getpid());
	snprintf(cmd, sizeof(cmd), "%s --out %s --messages 400000 --symbols 300 --seed 7", gen,
	         out);
	assert_int_equal(system(cmd), 0);
	struct uf_reader rd;
	struct uf_decode_counters dc;
	memset(&dc, 0, sizeof(dc));
	int rc = uf_reader_open(&rd, out, &dc);
	if (rc)
		print_error("%s\n", rd.err);
	assert_int_equal(rc, 0);
	struct uf_publisher *p = mk_pub(4000000, 65536, 1u << 20, 16);
	struct ref_model *r = malloc(sizeof(*r));
	struct rec_checker *c = malloc(sizeof(*c));
	ref_init(r, 4000000, 65536);
	rc_init(c, 65536, 1);
	struct uf_reader_msg rm;
	struct uf_itch_msg m;
	struct uf_record rec[UF_REC_MAX_PER_MSG];
	size_t n = 0;
	while (uf_reader_next(&rd, &rm) == 1) {
		if (uf_itch_decode(rm.msg, rm.len, &m) != 0)
			continue;
		int k = uf_publish_apply(p, &m, rm.seq, 0, rec, UF_REC_MAX_PER_MSG);
		assert_true(k >= 0);
		ref_apply(r, &m);
		rc_event(c, rec, k);
		n++;
	}
	uf_reader_close(&rd);
	unlink(out);
	assert_int_equal(n, 400000);
	size_t levels = pub_compare_books(p, r);
	pub_compare_errors(p, r);
	rc_compare(c, p);
	struct uf_publish_stats st;
	uf_publish_stats(p, &st);
	print_message(
	    "uf-gen day: %zu msgs, %zu levels at the end, %llu live orders, %llu integrity "
	    "errors\n",
	    n, levels, (unsigned long long)st.live_orders, (unsigned long long)st.errors_total);
	/* uf-gen promises valid references: a clean day has no integrity error. */
	assert_int_equal(st.errors_total, 0);
	assert_true(levels > 0);
	rc_free(c);
	ref_free(r);
	free(c);
	free(r);
	uf_publish_destroy(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_random_streams_match_reference_model),
	    cmocka_unit_test(test_deep_books_with_thousands_of_levels_match),
	    cmocka_unit_test(test_full_order_table_behaves_like_the_model),
	    cmocka_unit_test(test_batch_prefetch_writes_exactly_the_single_apply_records),
	    cmocka_unit_test(test_garbage_messages_never_crash_and_match_the_model),
	    cmocka_unit_test(test_generated_day_matches_reference_model),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
