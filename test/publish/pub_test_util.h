/* Helpers shared by the publish/ tests: message builders, engine-vs-model book comparison,
 * and a record checker that rebuilds books from the record stream alone (what a consumer
 * does) and checks the LAST / BBO flags and the MBO records against it. */
#ifndef UF_TEST_PUB_UTIL_H
#define UF_TEST_PUB_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "common/uf_symbol.h"
#include "decode/uf_decode.h"
#include "publish/uf_publish.h"
#include "ref_model.h"

/* ---- message builders (typed views, as uf_itch_decode would fill them) ---- */

static inline struct uf_itch_msg mk_hdr(uint8_t type, uint16_t locate, uint64_t ts)
{
	struct uf_itch_msg m;
	memset(&m, 0, sizeof(m));
	m.type = type;
	m.locate = locate;
	m.timestamp = ts;
	m.len = (uint16_t)uf_itch_msg_len(type);
	return m;
}

static inline void mk_sym(char out[8], const char *sym)
{
	uf_symbol_pad(out, sym);
}

static inline struct uf_itch_msg mk_add(uint16_t loc, uint64_t ref, uint8_t side, uint32_t shares,
                                        uint32_t price, const char *sym)
{
	struct uf_itch_msg m = mk_hdr('A', loc, 1000);
	m.u.add.order_ref = ref;
	m.u.add.side = side;
	m.u.add.shares = shares;
	m.u.add.price = price;
	mk_sym(m.u.add.stock, sym ? sym : "T");
	return m;
}

static inline struct uf_itch_msg mk_exec(uint16_t loc, uint64_t ref, uint32_t shares,
                                         uint64_t match)
{
	struct uf_itch_msg m = mk_hdr('E', loc, 2000);
	m.u.exec.order_ref = ref;
	m.u.exec.shares = shares;
	m.u.exec.match = match;
	return m;
}

static inline struct uf_itch_msg mk_execp(uint16_t loc, uint64_t ref, uint32_t shares,
                                          uint64_t match, uint8_t printable, uint32_t price)
{
	struct uf_itch_msg m = mk_hdr('C', loc, 2000);
	m.u.exec.order_ref = ref;
	m.u.exec.shares = shares;
	m.u.exec.match = match;
	m.u.exec.printable = printable;
	m.u.exec.price = price;
	return m;
}

static inline struct uf_itch_msg mk_cancel(uint16_t loc, uint64_t ref, uint32_t shares)
{
	struct uf_itch_msg m = mk_hdr('X', loc, 3000);
	m.u.cancel.order_ref = ref;
	m.u.cancel.shares = shares;
	return m;
}

static inline struct uf_itch_msg mk_del(uint16_t loc, uint64_t ref)
{
	struct uf_itch_msg m = mk_hdr('D', loc, 4000);
	m.u.del.order_ref = ref;
	return m;
}

static inline struct uf_itch_msg mk_replace(uint16_t loc, uint64_t orig, uint64_t nref,
                                            uint32_t shares, uint32_t price)
{
	struct uf_itch_msg m = mk_hdr('U', loc, 5000);
	m.u.replace.orig_ref = orig;
	m.u.replace.new_ref = nref;
	m.u.replace.shares = shares;
	m.u.replace.price = price;
	return m;
}

/* ---- engine vs model ---- */

/* Asserts that every book of the engine equals the model's, level by level; returns the
 * number of levels compared. */
static inline size_t pub_compare_books(const struct uf_publisher *p, const struct ref_model *r)
{
	size_t n;
	struct ref_level *l = ref_levels(r, &n);
	uint32_t max = uf_publish_max_instruments(p);
	size_t pos = 0, total = 0;
	struct uf_level *buf = malloc(65536 * sizeof(*buf));
	assert_non_null(buf);
	for (uint32_t inst = 0; inst < max; inst++) {
		for (int s = 0; s < 2; s++) {
			uint8_t side = s ? UF_SIDE_ASK : UF_SIDE_BID;
			size_t depth = uf_publish_depth(p, inst, side);
			assert_true(depth <= 65536);
			int got = uf_publish_top(p, inst, side, buf, 65536);
			assert_int_equal(got, (int)depth);
			for (int i = 0; i < got; i++, pos++) {
				if (pos >= n || l[pos].inst != inst || l[pos].side != side ||
				    (int64_t)l[pos].price != buf[i].price ||
				    l[pos].shares != buf[i].shares ||
				    l[pos].orders != buf[i].orders) {
					print_error(
					    "book mismatch inst %u side %c level %d: engine "
					    "%lld/%llu/%u, model %s %u/%c/%u/%llu/%u\n",
					    inst, side, i, (long long)buf[i].price,
					    (unsigned long long)buf[i].shares, buf[i].orders,
					    pos < n ? "" : "(none)", pos < n ? l[pos].inst : 0,
					    pos < n ? l[pos].side : '-', pos < n ? l[pos].price : 0,
					    pos < n ? (unsigned long long)l[pos].shares : 0,
					    pos < n ? l[pos].orders : 0);
					fail();
				}
			}
			total += (size_t)got;
		}
	}
	if (pos != n) {
		print_error("model has %zu levels, engine %zu\n", n, pos);
		fail();
	}
	free(buf);
	free(l);
	return total;
}

static inline void pub_compare_errors(const struct uf_publisher *p, const struct ref_model *r)
{
	struct uf_publish_stats st;
	uf_publish_stats(p, &st);
	for (unsigned k = 0; k < UF_PUB_NERR; k++) {
		if (st.errors[k] != r->err[k]) {
			print_error("error %s: engine %llu, model %llu\n", uf_publish_err_name(k),
			            (unsigned long long)st.errors[k],
			            (unsigned long long)r->err[k]);
			fail();
		}
	}
	assert_int_equal(st.live_orders, r->live);
	/* the same books in doubt: the engine's rule against the model's */
	for (uint32_t inst = 0; inst < uf_publish_max_instruments(p); inst++) {
		const struct uf_pub_instrument *in = uf_publish_instrument(p, inst);
		int want = inst < r->max_inst && r->stale[inst];
		if ((in->stale != 0) != want) {
			print_error("stale mismatch inst %u: engine %u, model %d\n", inst,
			            in->stale, want);
			fail();
		}
	}
}

/* ---- record checker: a consumer's view ---- */

struct rc_level {
	uint32_t price;
	uint64_t shares;
	uint32_t orders;
};

struct rc_side {
	struct rc_level *l; /* best first */
	size_t n, cap;
};

struct rec_checker {
	uint32_t max_inst;
	struct rc_side *sides; /* [max_inst * 2] */
	struct ref_model mbo;  /* orders rebuilt from ORDER_* records */
	int mbo_on;            /* check ORDER_* records */
	uint64_t records;
	uint64_t events; /* records with UF_RECF_LAST */
	uint64_t bbo;    /* LEVEL records with UF_RECF_BBO */
};

static inline void rc_init(struct rec_checker *c, uint32_t max_inst, int mbo_on)
{
	memset(c, 0, sizeof(*c));
	c->max_inst = max_inst;
	c->sides = calloc((size_t)max_inst * 2, sizeof(*c->sides));
	assert_non_null(c->sides);
	ref_init(&c->mbo, UINT64_MAX, max_inst);
	c->mbo_on = mbo_on;
}

static inline void rc_free(struct rec_checker *c)
{
	for (size_t i = 0; i < (size_t)c->max_inst * 2; i++)
		free(c->sides[i].l);
	free(c->sides);
	ref_free(&c->mbo);
}

static inline int rc_better(uint8_t side, uint32_t a, uint32_t b)
{
	return side == 'B' ? a > b : a < b;
}

static inline void rc_level(struct rec_checker *c, const struct uf_record *r)
{
	assert_true(r->instrument < c->max_inst);
	assert_true(r->side == 'B' || r->side == 'S');
	struct rc_side *s = &c->sides[r->instrument * 2 + (r->side == 'S')];
	struct rc_level before = s->n ? s->l[0] : (struct rc_level){0, 0, 0};
	size_t i = 0;
	uint32_t price = (uint32_t)r->price;
	while (i < s->n && rc_better(r->side, s->l[i].price, price))
		i++;
	int found = i < s->n && s->l[i].price == price;
	if (r->shares == 0 && r->orders == 0) {
		assert_true(found); /* a removal names a level the consumer has */
		memmove(&s->l[i], &s->l[i + 1], (s->n - i - 1) * sizeof(*s->l));
		s->n--;
	} else if (found) {
		s->l[i].shares = r->shares;
		s->l[i].orders = r->orders;
	} else {
		if (s->n == s->cap) {
			s->cap = s->cap ? s->cap * 2 : 16;
			s->l = realloc(s->l, s->cap * sizeof(*s->l));
			assert_non_null(s->l);
		}
		memmove(&s->l[i + 1], &s->l[i], (s->n - i) * sizeof(*s->l));
		s->l[i] = (struct rc_level){price, r->shares, r->orders};
		s->n++;
	}
	struct rc_level after = s->n ? s->l[0] : (struct rc_level){0, 0, 0};
	int changed = memcmp(&before, &after, sizeof(before)) != 0;
	if (changed != !!(r->flags & UF_RECF_BBO)) {
		print_error(
		    "BBO flag %d but best changed %d (inst %u side %c price %lld seq %llu)\n",
		    !!(r->flags & UF_RECF_BBO), changed, r->instrument, r->side,
		    (long long)r->price, (unsigned long long)r->feed_seq);
		fail();
	}
	if (r->flags & UF_RECF_BBO)
		c->bbo++;
}

static inline void rc_mbo(struct rec_checker *c, const struct uf_record *r)
{
	struct ref_order *o;
	switch (r->kind) {
	case UF_REC_ORDER_ADD:
		assert_null(ref_find(&c->mbo, r->ref));
		ref_add(&c->mbo, r->instrument, r->side, r->ref, (uint32_t)r->shares,
		        (uint32_t)r->price);
		break;
	case UF_REC_ORDER_MODIFY:
		o = ref_find(&c->mbo, r->ref);
		assert_non_null(o);
		assert_int_equal(o->inst, r->instrument);
		assert_int_equal(o->side, r->side);
		assert_int_equal(o->price, r->price);
		assert_int_equal(o->shares - r->aux, r->shares);
		o->shares = (uint32_t)r->shares;
		break;
	case UF_REC_ORDER_DELETE:
		o = ref_find(&c->mbo, r->ref);
		assert_non_null(o);
		assert_int_equal(o->shares, r->shares);
		assert_int_equal(o->price, r->price);
		o->live = 0;
		c->mbo.live--;
		break;
	}
}

/* Feeds the records of one event (one apply call). */
static inline void rc_event(struct rec_checker *c, const struct uf_record *r, int n)
{
	for (int i = 0; i < n; i++) {
		/* LAST on exactly the final record of the event. */
		assert_int_equal(!!(r[i].flags & UF_RECF_LAST), i == n - 1);
		assert_int_equal(r[i].feed_seq, r[0].feed_seq);
		if (r[i].kind == UF_REC_LEVEL)
			rc_level(c, &r[i]);
		else if (c->mbo_on)
			rc_mbo(c, &r[i]);
	}
	c->records += (uint64_t)n;
	if (n)
		c->events++;
}

/* The consumer-built book equals the engine's. */
static inline void rc_compare(const struct rec_checker *c, const struct uf_publisher *p)
{
	struct uf_level *buf = malloc(65536 * sizeof(*buf));
	assert_non_null(buf);
	for (uint32_t inst = 0; inst < c->max_inst; inst++) {
		for (int s = 0; s < 2; s++) {
			const struct rc_side *rs = &c->sides[inst * 2 + s];
			int got =
			    uf_publish_top(p, inst, s ? UF_SIDE_ASK : UF_SIDE_BID, buf, 65536);
			assert_int_equal(got, (int)rs->n);
			for (int i = 0; i < got; i++) {
				assert_int_equal(buf[i].price, rs->l[i].price);
				assert_int_equal(buf[i].shares, rs->l[i].shares);
				assert_int_equal(buf[i].orders, rs->l[i].orders);
			}
		}
	}
	free(buf);
	if (c->mbo_on)
		pub_compare_books(p, &c->mbo);
}

/* ---- `uf-decode books` expectations, from the model alone ---- */

/* Symbols as the engine names them: R always, the first A/F/P of a never-named id. */
struct sym_map {
	char sym[65536][9]; /* trimmed; "" = never named */
	uint8_t named[65536];
};

static inline void sym_trim(char out[9], const char in[8])
{
	uf_symbol_unpad(out, in);
}

static inline void sym_apply(struct sym_map *s, const struct uf_itch_msg *m, uint32_t max_inst)
{
	if (m->locate >= max_inst)
		return;
	if (m->type == 'R') {
		sym_trim(s->sym[m->locate], m->u.dir.stock);
		s->named[m->locate] = 1;
	} else if ((m->type == 'A' || m->type == 'F') && !s->named[m->locate] &&
	           (m->u.add.side == 'B' || m->u.add.side == 'S')) {
		sym_trim(s->sym[m->locate], m->u.add.stock);
		s->named[m->locate] = 1;
	} else if (m->type == 'P' && !s->named[m->locate]) {
		sym_trim(s->sym[m->locate], m->u.trade.stock);
		s->named[m->locate] = 1;
	}
}

struct exp_book {
	const char *sym;
	uint32_t inst;
};

static int exp_book_cmp(const void *a, const void *b)
{
	const struct exp_book *x = a, *y = b;
	int c = strcmp(x->sym, y->sym);
	return c ? c : (x->inst < y->inst ? -1 : x->inst > y->inst);
}

/* The exact text `uf-decode books [--depth depth]` must print (depth 0 = all), a book the
 * model's errors put in doubt marked "stale":true. Caller frees. */
static inline char *model_books_json(const struct ref_model *r, const struct sym_map *s,
                                     size_t depth)
{
	size_t n;
	struct ref_level *l = ref_levels(r, &n);
	struct exp_book *b = malloc((n + 1) * sizeof(*b));
	size_t nb = 0;
	for (size_t i = 0; i < n; i++)
		if (i == 0 || l[i].inst != l[i - 1].inst)
			b[nb++] = (struct exp_book){s->sym[l[i].inst], l[i].inst};
	/* and the named books in doubt that are empty: printed, marked */
	size_t with_levels = nb;
	for (uint32_t inst = 0; inst < r->max_inst; inst++) {
		if (!r->stale[inst] || !s->named[inst])
			continue;
		int has = 0;
		for (size_t k = 0; k < with_levels && !has; k++)
			has = b[k].inst == inst;
		if (!has) {
			b = realloc(b, (nb + 1) * sizeof(*b));
			assert_non_null(b);
			b[nb++] = (struct exp_book){s->sym[inst], inst};
		}
	}
	qsort(b, nb, sizeof(*b), exp_book_cmp);
	size_t cap = 1024 + n * 64, len = 0;
	char *out = malloc(cap);
	assert_non_null(out);
	for (size_t k = 0; k < nb; k++) {
		len += (size_t)sprintf(out + len, "{\"symbol\":\"%s\",\"bid\":[", b[k].sym);
		for (int side = 0; side < 2; side++) {
			uint8_t sc = side ? 'S' : 'B';
			size_t cnt = 0;
			for (size_t i = 0; i < n; i++) {
				if (l[i].inst != b[k].inst || l[i].side != sc)
					continue;
				if (depth && cnt == depth)
					break;
				len += (size_t)sprintf(out + len, "%s[%u,%llu,%u]", cnt ? "," : "",
				                       l[i].price, (unsigned long long)l[i].shares,
				                       l[i].orders);
				cnt++;
			}
			len += (size_t)sprintf(out + len, side ? "]" : "],\"ask\":[");
		}
		/* a book the model's errors put in doubt is said to be so */
		len +=
		    (size_t)sprintf(out + len, r->stale[b[k].inst] ? ",\"stale\":true}\n" : "}\n");
	}
	out[len] = '\0';
	free(b);
	free(l);
	return out;
}

/* Replays the ITCH file `path` (daily or pcap) through the reference model `r` and the
 * symbol map `s` (instruments below max_inst); messages that do not decode are skipped, as
 * `uf-decode books` skips them. Fails the test when the file cannot be opened. */
static inline void pub_model_from_file(struct ref_model *r, struct sym_map *s, const char *path,
                                       uint32_t max_inst)
{
	struct uf_reader rd;
	struct uf_reader_msg rm;
	struct uf_itch_msg m;

	assert_int_equal(uf_reader_open(&rd, path, NULL), 0);
	while (uf_reader_next(&rd, &rm) == 1) {
		if (uf_itch_decode(rm.msg, rm.len, &m) != 0)
			continue;
		ref_apply(r, &m);
		sym_apply(s, &m, max_inst);
	}
	uf_reader_close(&rd);
}

/* Runs a command and returns its stdout (caller frees); *status = exit status. */
static inline char *run_capture(const char *cmd, int *status)
{
	FILE *f = popen(cmd, "r");
	assert_non_null(f);
	size_t cap = 1 << 16, len = 0;
	char *buf = malloc(cap);
	size_t got;
	while ((got = fread(buf + len, 1, cap - len - 1, f)) > 0) {
		len += got;
		if (cap - len < 2) {
			cap *= 2;
			buf = realloc(buf, cap);
			assert_non_null(buf);
		}
	}
	buf[len] = '\0';
	int st = pclose(f);
	*status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	return buf;
}

static inline const char *bin_dir(void)
{
	const char *b = getenv("UF_BIN_DIR");
	return b ? b : UF_BIN_DIR;
}

#endif /* UF_TEST_PUB_UTIL_H */
