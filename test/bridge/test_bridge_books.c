/* The full-depth books of the NATS fan-out (ring/nats/nats_book.c) and uf-bridge's status
 * renderer: pure code, no server. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ring/nats/nats_book.h"
#include "ring/ufbook.h"
#include "tools/uf-bridge/bridge.h"
#include "tools/uf-bridge/bridge_pipe.h"
#include "test/common/uf_test_status.h"

static struct uf_record lvl(uint32_t id, uint8_t side, int64_t px, uint64_t sh, uint32_t ord)
{
	struct uf_record r;

	memset(&r, 0, sizeof(r));
	r.kind = UF_REC_LEVEL;
	r.side = side;
	r.instrument = id;
	r.price = px;
	r.shares = sh;
	r.orders = ord;
	return r;
}

static void test_levels_keep_best_first_and_vanish_at_zero(void **state)
{
	struct uf_nats_books bk;
	struct uf_book_snapshot s;
	struct uf_record r;
	uint64_t seq = 0;

	assert_int_equal(uf_nats_books_init(&bk, 16, 1), 0);
	r = lvl(3, UF_SIDE_BID, 100, 10, 1);
	assert_int_equal(uf_nats_books_apply(&bk, &r, seq++), 1);
	r = lvl(3, UF_SIDE_BID, 102, 20, 2);
	uf_nats_books_apply(&bk, &r, seq++);
	r = lvl(3, UF_SIDE_BID, 101, 30, 3);
	uf_nats_books_apply(&bk, &r, seq++);
	r = lvl(3, UF_SIDE_ASK, 105, 5, 1);
	uf_nats_books_apply(&bk, &r, seq++);
	r = lvl(3, UF_SIDE_ASK, 103, 7, 1);
	uf_nats_books_apply(&bk, &r, seq++);
	r = lvl(3, UF_SIDE_BID, 102, 0, 0); /* the best bid leaves: 101 is promoted */
	uf_nats_books_apply(&bk, &r, seq++);
	assert_int_equal(uf_nats_books_snapshot(&bk, 3, 1, seq, &s), 0);
	assert_int_equal(s.nbid, 1);
	assert_int_equal(s.bid[0].price, 101);
	assert_int_equal(s.bid[0].shares, 30);
	assert_int_equal(s.nask, 1);
	assert_int_equal(s.ask[0].price, 103);
	assert_int_equal(uf_nats_books_snapshot(&bk, 3, 10, seq, &s), 0);
	assert_int_equal(s.nbid, 2);
	assert_int_equal(s.bid[1].price, 100);
	assert_int_equal(s.ask[1].price, 105);
	assert_int_equal(s.stamp, seq);
	assert_int_equal(uf_nats_books_snapshot(&bk, 4, 10, seq, &s), -ENOENT);
	uf_nats_books_free(&bk);
}

static void test_encoded_book_decodes_to_the_same_book_and_skips_older_records(void **state)
{
	struct uf_nats_books a, b;
	struct uf_book_snapshot sa, sb;
	struct uf_record r;
	void *buf = NULL;
	size_t cap = 0;
	int len;

	assert_int_equal(uf_nats_books_init(&a, 8, 5), 0);
	assert_int_equal(uf_nats_books_init(&b, 8, 5), 0);
	for (int i = 0; i < 100; i++) { /* more levels than any image depth */
		r = lvl(2, UF_SIDE_ASK, 1000 + i, (uint64_t)i + 1, 1);
		uf_nats_books_apply(&a, &r, (uint64_t)i);
	}
	len = uf_nats_books_encode(&a, 2, 100, &buf, &cap);
	assert_true(len > 0);
	assert_int_equal(uf_nats_books_decode(&b, buf, (size_t)len, 0), 0);
	assert_int_equal(uf_nats_books_snapshot(&a, 2, 64, 100, &sa), 0);
	assert_int_equal(uf_nats_books_snapshot(&b, 2, 64, 100, &sb), 0);
	assert_memory_equal(sa.ask, sb.ask, 64 * sizeof(struct uf_level));
	/* a record the entry already reflects (seq 99 < stamp 100) is not applied twice */
	r = lvl(2, UF_SIDE_ASK, 1000, 0, 0);
	assert_int_equal(uf_nats_books_apply(&b, &r, 99), 0);
	assert_int_equal(uf_nats_books_apply(&b, &r, 100), 1);
	assert_int_equal(uf_nats_books_snapshot(&b, 2, 1, 101, &sb), 0);
	assert_int_equal(sb.ask[0].price, 1001);
	/* a damaged entry is refused; another generation's is ignored (-ESTALE), whatever its
	 * book version or size (the bridge leaves old generations' keys in the bucket) */
	assert_int_equal(uf_nats_books_decode(&b, buf, (size_t)len - 1, 0), -EPROTO);
	b.generation = 6;
	assert_int_equal(uf_nats_books_decode(&b, buf, (size_t)len, 0), -ESTALE);
	((struct uf_nats_book *)buf)->version = 1;
	assert_int_equal(uf_nats_books_decode(&b, buf, UF_NATS_BOOK_PREFIX, 0), -ESTALE);
	/* this generation's entry in another book version (a bridge of another release; version
	 * 1 kept 8 status slots) is refused, not misread */
	b.generation = 5;
	assert_int_equal(uf_nats_books_decode(&b, buf, (size_t)len, 0), -EPROTO);
	((struct uf_nats_book *)buf)->version = UF_NATS_BOOK_VERSION + 1;
	assert_int_equal(uf_nats_books_decode(&b, buf, (size_t)len, 0), -EPROTO);
	assert_int_equal(uf_nats_books_decode(&b, buf, UF_NATS_BOOK_PREFIX - 1, 0), -EPROTO);
	free(buf);
	uf_nats_books_free(&a);
	uf_nats_books_free(&b);
}

/* An INSTRUMENT (directory) record naming `id` `sym`. */
static struct uf_record instr(uint32_t id, const char *sym)
{
	struct uf_record r;
	char b[8];

	memset(&r, 0, sizeof(r));
	memset(b, ' ', sizeof(b));
	memcpy(b, sym, strlen(sym));
	r.kind = UF_REC_INSTRUMENT;
	r.instrument = id;
	memcpy(&r.ref, b, 8);
	r.shares = 100;
	return r;
}

/* One watcher delivery: a key (its entry from `src` when "i<id>"), or NULL for the mark
 * "every entry present at the start was delivered". */
struct delivery {
	const char *key;
	uint32_t id;
};

/* Loads `dst` from the deliveries as the remote consumer does: with `count_keys`, through
 * uf_nats_keys against `want` keys (the fix), else stopping at the mark (the rule before).
 * Returns how many deliveries were read. */
static int load_from(struct uf_nats_books *dst, struct uf_nats_books *src, const struct delivery *d,
                     int nd, uint64_t want, int count_keys)
{
	struct uf_nats_keys k;
	void *buf = NULL;
	size_t cap = 0;
	int i, early = 0;

	assert_int_equal(uf_nats_keys_init(&k, src->max, want), 0);
	for (i = 0; i < nd; i++) {
		if (!d[i].key) {
			if (!count_keys || uf_nats_keys_complete(&k))
				break;
			early = 1;
			continue;
		}
		uf_nats_keys_saw(&k, d[i].key);
		if (d[i].key[0] == 'i') {
			int len = uf_nats_books_encode(src, d[i].id, 10, &buf, &cap);
			assert_true(len > 0);
			assert_int_equal(uf_nats_books_decode(dst, buf, (size_t)len, 10), 0);
		}
		if (early && uf_nats_keys_complete(&k))
			break;
	}
	free(buf);
	uf_nats_keys_free(&k);
	return i;
}

/* The flake of test_late_remote_consumer_snapshot_then_stream (a late remote consumer's
 * book without its symbol), forced: the bridge rewrites entries while a consumer watches
 * the bucket, and nats-server's mark "every entry present at the start was delivered"
 * comes before the entry of instrument 2 (its pending count dropped to 0, then grew). The
 * rule "stop at the mark" left book 2 out; the next record of instrument 2 then made it
 * from the stream alone: levels, no symbol. Counting the bucket's keys reads on past the
 * early mark, and book 2 keeps its symbol. */
/* Every status code, each with its latest value, goes through a book entry and back (book
 * version 1 carried 8); a slot that does not hold its own code is not believed. */
static void test_book_entry_carries_every_status_code(void **state)
{
	struct uf_nats_books a, b;
	struct uf_book_snapshot sa, sb;
	struct uf_record r;
	struct uf_nats_book *h;
	void *buf = NULL;
	size_t cap = 0;
	uint64_t seq = 0;
	int len;

	(void)state;
	assert_int_equal(uf_nats_books_init(&a, 8, 5), 0);
	assert_int_equal(uf_nats_books_init(&b, 8, 5), 0);
	memset(&r, 0, sizeof(r));
	r.kind = UF_REC_STATUS;
	r.instrument = 3;
	for (uint32_t round = 0; round < 2; round++)
		for (uint32_t code = UF_STATUS_MAX; code >= 1; code--) {
			uf_test_status_value(&r, round, code);
			assert_int_equal(uf_nats_books_apply(&a, &r, seq++), 1);
		}
	len = uf_nats_books_encode(&a, 3, 1000, &buf, &cap);
	assert_true(len > 0);
	h = buf;
	assert_int_equal(h->version, UF_NATS_BOOK_VERSION);
	assert_int_equal(h->nstatus, UF_STATUS_MAX);
	assert_int_equal(uf_nats_books_decode(&b, buf, (size_t)len, 0), 0);
	assert_int_equal(uf_nats_books_snapshot(&a, 3, 8, 1000, &sa), 0);
	assert_int_equal(uf_nats_books_snapshot(&b, 3, 8, 1000, &sb), 0);
	assert_int_equal(sb.nstatus, UF_STATUS_MAX);
	for (uint32_t k = 0; k < sb.nstatus; k++) {
		assert_int_equal(sb.status[k].code, k + 1);
		assert_int_equal(sb.status[k].price, 1000 + k + 1);
		assert_int_equal(sb.status[k].shares, 10u * (k + 1) + 1);
		assert_int_equal(sb.status[k].exch_ts, 100 + k + 1);
	}
	assert_memory_equal(sa.status, sb.status, sizeof(sa.status));
	h->status[4].code = 7; /* slot of code 5 claiming code 7: dropped, code 7 kept */
	assert_int_equal(uf_nats_books_decode(&b, buf, (size_t)len, 0), 0);
	assert_int_equal(uf_nats_books_snapshot(&b, 3, 8, 1000, &sb), 0);
	assert_int_equal(sb.nstatus, UF_STATUS_MAX - 1);
	assert_int_equal(sb.status[4].code, 6);
	assert_int_equal(sb.status[5].code, 7);
	assert_int_equal(sb.status[5].price, 1007);
	free(buf);
	uf_nats_books_free(&a);
	uf_nats_books_free(&b);
}

static void test_early_watch_mark_no_longer_loses_a_book_and_its_symbol(void **state)
{
	static const char *const syms[] = {"", "AAA", "BBB", "CCC"};
	/* commit, i1, i1 rewritten, i3, the mark, i2: 4 keys in the bucket before the watch */
	static const struct delivery d[] = {{"commit", 0}, {"i1", 1}, {"i1", 1},
	                                    {"i3", 3},     {NULL, 0}, {"i2", 2}};
	struct uf_nats_books br, old, now;
	struct uf_book_snapshot s;
	struct uf_record r;
	uint64_t seq = 0;

	assert_int_equal(uf_nats_books_init(&br, 4, 1), 0);
	for (uint32_t id = 1; id < 4; id++) {
		r = instr(id, syms[id]);
		uf_nats_books_apply(&br, &r, seq++);
		r = lvl(id, UF_SIDE_BID, 100 * id, 10, 1);
		uf_nats_books_apply(&br, &r, seq++);
	}
	assert_int_equal(uf_nats_books_init(&old, 4, 1), 0);
	assert_int_equal(uf_nats_books_init(&now, 4, 1), 0);
	assert_int_equal(load_from(&old, &br, d, 6, 4, 0), 4); /* stopped at the mark */
	assert_int_equal(load_from(&now, &br, d, 6, 4, 1), 5); /* read i2 after it */
	assert_false(uf_nats_books_present(&old, 2));
	assert_true(uf_nats_books_present(&now, 2));
	/* the stream goes on past the commit: a level of instrument 2 */
	r = lvl(2, UF_SIDE_ASK, 205, 7, 1);
	assert_int_equal(uf_nats_books_apply(&old, &r, 12), 1);
	assert_int_equal(uf_nats_books_apply(&now, &r, 12), 1);
	assert_int_equal(uf_nats_books_snapshot(&old, 2, 10, 13, &s), 0);
	assert_string_equal(s.symbol, ""); /* the flake: a book with levels and no symbol */
	assert_int_equal(s.nbid, 0);       /* and without the level the entry held */
	assert_int_equal(uf_nats_books_snapshot(&now, 2, 10, 13, &s), 0);
	assert_string_equal(s.symbol, "BBB");
	assert_int_equal(s.nbid, 1);
	assert_int_equal(s.bid[0].price, 200);
	assert_int_equal(s.nask, 1);
	for (uint32_t id = 1; id < 4; id++) { /* and every other book is named as the bridge's */
		assert_int_equal(uf_nats_books_snapshot(&now, id, 10, 13, &s), 0);
		assert_string_equal(s.symbol, syms[id]);
	}
	uf_nats_books_free(&br);
	uf_nats_books_free(&old);
	uf_nats_books_free(&now);
}

/* The key count: "commit" and "i<id>" once however often they come, other keys at each
 * delivery, ids at or past max (or not canonical) are other keys. */
static void test_bucket_key_count_counts_each_key_once(void **state)
{
	struct uf_nats_keys k;

	assert_int_equal(uf_nats_keys_init(&k, 10, 5), 0);
	uf_nats_keys_saw(&k, "commit");
	uf_nats_keys_saw(&k, "commit");
	uf_nats_keys_saw(&k, "i9");
	uf_nats_keys_saw(&k, "i9");
	uf_nats_keys_saw(&k, "i0");
	assert_int_equal(k.distinct, 3);
	assert_false(uf_nats_keys_complete(&k));
	uf_nats_keys_saw(&k, "i10"); /* past max: another generation's, counted as delivered */
	assert_int_equal(k.distinct, 4);
	uf_nats_keys_saw(&k, "i01"); /* not a key the bridge writes: its own */
	assert_int_equal(k.distinct, 5);
	assert_true(uf_nats_keys_complete(&k));
	uf_nats_keys_saw(&k, "i0");
	assert_int_equal(k.distinct, 5);
	uf_nats_keys_free(&k);
	/* an empty count is complete at once (the load then ends at the mark, as before) */
	assert_int_equal(uf_nats_keys_init(&k, 4, 0), 0);
	assert_true(uf_nats_keys_complete(&k));
	uf_nats_keys_free(&k);
}

static void test_gap_marks_every_present_book_stale(void **state)
{
	struct uf_nats_books bk;
	struct uf_book_snapshot s;
	struct uf_record r = lvl(1, UF_SIDE_BID, 10, 1, 1), g;

	assert_int_equal(uf_nats_books_init(&bk, 4, 1), 0);
	uf_nats_books_apply(&bk, &r, 0);
	memset(&g, 0, sizeof(g));
	g.kind = UF_REC_GAP;
	assert_int_equal(uf_nats_books_apply(&bk, &g, 1), 1);
	assert_int_equal(uf_nats_books_snapshot(&bk, 1, 4, 2, &s), 0);
	assert_true(s.flags & UF_RECF_STALE);
	uf_nats_books_free(&bk);
}

/* The NATS books apply records by the record contract, as the book builder does: a STALE
 * record flags its book, a RESET voids every book (levels, volume, doubts), a trade moves
 * volume only when uf_rec_trade_prints(). The same stream through the builder gives the
 * same snapshot. (The second copy of the rules this replaced failed all three.) */
static void test_nats_books_follow_reset_stale_and_the_trade_print_rule(void **state)
{
	struct uf_nats_books bk;
	struct uf_book_snapshot *s = calloc(2, sizeof(*s));
	uf_book_builder_t *bb;
	struct uf_record v[8];
	uint64_t seq = 0;
	int n = 0;

	assert_non_null(s);
	assert_int_equal(uf_nats_books_init(&bk, 8, 1), 0);
	assert_int_equal(uf_book_builder_create(8, &bb), 0);
	v[n++] = lvl(1, UF_SIDE_BID, 100, 10, 1);
	v[n++] = lvl(2, UF_SIDE_ASK, 200, 5, 1);
	memset(&v[n], 0, sizeof(v[n]));
	v[n].kind = UF_REC_TRADE;
	v[n].instrument = 1;
	v[n].price = 100;
	v[n].shares = 10;
	v[n].aux = UF_TRADE_EXEC;
	n++;
	v[n] = v[n - 1];
	v[n].shares = 30;
	v[n].price = 101;
	v[n].aux = UF_TRADE_EXEC_PRICE | UF_TRADE_NONPRINTABLE; /* not volume, not last trade */
	n++;
	memset(&v[n], 0, sizeof(v[n]));
	v[n].kind = UF_REC_STALE;
	v[n].instrument = 2;
	v[n].aux = UF_STALE_INTEGRITY;
	v[n].flags = UF_RECF_STALE | UF_RECF_LAST;
	n++;
	for (int i = 0; i < n; i++) {
		uf_nats_books_apply(&bk, &v[i], seq);
		uf_book_builder_apply(bb, &v[i], seq++);
	}
	assert_int_equal(uf_nats_books_snapshot(&bk, 1, 10, seq, &s[0]), 0);
	assert_int_equal(s[0].volume, 10);
	assert_int_equal(s[0].trades, 1);
	assert_int_equal(s[0].last_price, 100);
	assert_int_equal(uf_book_builder_snapshot(bb, 1, &s[1]), 0);
	assert_memory_equal(&s[0], &s[1], sizeof(s[0]));
	assert_int_equal(uf_nats_books_snapshot(&bk, 2, 10, seq, &s[0]), 0);
	assert_true(s[0].flags & UF_BOOKF_STALE);
	memset(&v[0], 0, sizeof(v[0]));
	v[0].kind = UF_REC_RESET;
	v[0].shares = UF_RESET_NEW_SESSION;
	v[0].feed_seq = 1;
	v[0].flags = UF_RECF_LAST;
	uf_nats_books_apply(&bk, &v[0], seq);
	uf_book_builder_apply(bb, &v[0], seq++);
	for (uint32_t id = 1; id <= 2; id++) {
		memset(s, 0, 2 * sizeof(*s)); /* levels past the counts are not written */
		assert_int_equal(uf_nats_books_snapshot(&bk, id, 10, seq, &s[0]), 0);
		assert_int_equal(s[0].nbid + s[0].nask, 0);
		assert_int_equal(s[0].flags, 0);
		assert_int_equal(s[0].volume, 0);
		assert_int_equal(s[0].last_price, 0);
		assert_int_equal(uf_book_builder_snapshot(bb, id, &s[1]), 0);
		assert_memory_equal(&s[0], &s[1], sizeof(s[0]));
	}
	uf_book_builder_destroy(bb);
	uf_nats_books_free(&bk);
	free(s);
}

static void test_status_line_reports_lag_and_losses(void **state)
{
	struct uf_bridge_status st;
	char buf[1024];

	memset(&st, 0, sizeof(st));
	strcpy(st.ring, "itch");
	st.position = 90;
	st.ring_tail = 100;
	st.laps = 2;
	st.lost = 7000;
	st.messages = 4;
	st.ack_ns_sum = 4000;
	assert_true(uf_bridge_status_json(&st, buf, sizeof(buf)) > 0);
	assert_non_null(strstr(buf, "\"lag\":10,"));
	assert_non_null(strstr(buf, "\"laps\":2,\"lost\":7000,"));
	assert_non_null(strstr(buf, "\"ack_us_mean\":1.0,"));
	assert_int_equal(uf_bridge_status_json(&st, buf, 20), -1);
}

/* lag is counted from the last acknowledged record (position), not from what was read: a
 * hung server leaves the records read but unacknowledged in the lag. */
static void test_status_line_reports_lag_from_the_acknowledged_position_and_failovers(void **state)
{
	struct uf_bridge_status st;
	char buf[1536];

	memset(&st, 0, sizeof(st));
	strcpy(st.ring, "itch");
	st.position = 100;
	st.read = 150;
	st.ring_tail = 400;
	st.ack_timeouts = 3;
	st.failovers = 1;
	strcpy(st.server, "nats://10.0.0.2:4222");
	assert_true(uf_bridge_status_json(&st, buf, sizeof(buf)) > 0);
	assert_non_null(
	    strstr(buf, "\"position\":100,\"read\":150,\"ring_tail\":400,\"lag\":300,"));
	assert_non_null(strstr(buf, "\"ack_timeouts\":3,\"failovers\":1,"));
	assert_non_null(strstr(buf, "\"server\":\"nats://10.0.0.2:4222\",\"connected\":0,"));
	strcpy(st.server, "a\"b\\c\n"); /* never breaks the JSON */
	st.connected = 1;
	assert_true(uf_bridge_status_json(&st, buf, sizeof(buf)) > 0);
	assert_non_null(strstr(buf, "\"server\":\"a_b_c_\",\"connected\":1,"));
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void test_config_file_loads_and_refuses_unknown_keys_and_bad_values(void **state)
{
	struct uf_bridge_config cfg;
	char path[64], err[256];

	uf_bridge_config_init(&cfg);
	assert_int_equal(
	    uf_bridge_config_load(&cfg, UF_SOURCE_DIR "/configs/uf-bridge.json", err, sizeof(err)),
	    0);
	assert_string_equal(cfg.ring, "nasdaq");
	assert_int_equal(cfg.replicas, 3);
	assert_non_null(strstr(cfg.urls, "nats://nats-b.dc1:4222"));
	snprintf(path, sizeof(path), "/tmp/uf-bridge-cfg-%d.json", (int)getpid());
	write_file(path, "{\"ring\":\"r\",\"nats\":\"nats://h:1\",\"replica\":3}");
	assert_int_equal(uf_bridge_config_load(&cfg, path, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "unknown key \"replica\""));
	write_file(path, "{\"ring\":\"r\",\"batch\":5000}");
	assert_int_equal(uf_bridge_config_load(&cfg, path, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "\"batch\""));
	write_file(path, "{\"ring\":");
	assert_int_equal(uf_bridge_config_load(&cfg, path, err, sizeof(err)), -1);
	unlink(path);
}

static void test_config_ack_timeouts_default_file_and_bounds(void **state)
{
	struct uf_bridge_config cfg;
	char path[64], err[256];

	uf_bridge_config_init(&cfg);
	assert_int_equal(cfg.ack_timeouts, 2);
	snprintf(path, sizeof(path), "/tmp/uf-bridge-cfg-at-%d.json", (int)getpid());
	write_file(path, "{\"ring\":\"r\",\"ack_timeouts\":5}");
	assert_int_equal(uf_bridge_config_load(&cfg, path, err, sizeof(err)), 0);
	assert_int_equal(cfg.ack_timeouts, 5);
	write_file(path, "{\"ring\":\"r\",\"ack_timeouts\":0}");
	assert_int_equal(uf_bridge_config_load(&cfg, path, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "\"ack_timeouts\""));
	unlink(path);
}

/* The window's acknowledgement parser: what JetStream answers a publish with. Only an answer
 * naming our stream with a sequence retires a message; errors carry their err_code. */
static void test_pub_ack_parser_accepts_only_our_streams_acknowledgements(void **state)
{
	const char *ok = "{\"stream\":\"UF_itch\",\"seq\":4272}";
	const char *dup = "{\"stream\":\"UF_itch\", \"seq\": 17,\"duplicate\":true}";
	const char *dom = "{\"stream\":\"UF_itch\",\"domain\":\"hub\",\"seq\":5}";
	const char *err = "{\"error\":{\"code\":400,\"err_code\":10070,\"description\":"
	                  "\"wrong last msg ID: 1:1:0:32\"}}";
	const char *other = "{\"stream\":\"UF_itch2\",\"seq\":3}";
	const char *prefix = "{\"stream\":\"UF_it\",\"seq\":3}";
	uint64_t seq;
	int d, code;

	(void)state;
	assert_int_equal(uf_bridge_ack_parse(ok, (int)strlen(ok), "UF_itch", &seq, &d, &code), 0);
	assert_int_equal(seq, 4272);
	assert_int_equal(d, 0);
	assert_int_equal(uf_bridge_ack_parse(dup, (int)strlen(dup), "UF_itch", &seq, &d, &code), 0);
	assert_int_equal(seq, 17);
	assert_int_equal(d, 1);
	assert_int_equal(uf_bridge_ack_parse(dom, (int)strlen(dom), "UF_itch", &seq, &d, &code), 0);
	assert_int_equal(seq, 5);
	assert_int_equal(uf_bridge_ack_parse(err, (int)strlen(err), "UF_itch", &seq, &d, &code),
	                 -1);
	assert_int_equal(code, 10070);
	assert_int_equal(uf_bridge_ack_parse(other, (int)strlen(other), "UF_itch", &seq, &d, &code),
	                 -1);
	assert_int_equal(
	    uf_bridge_ack_parse(prefix, (int)strlen(prefix), "UF_itch", &seq, &d, &code), -1);
	/* not JSON, an empty answer (a status message), sequence 0, a cut answer */
	assert_int_equal(uf_bridge_ack_parse("+OK", 3, "UF_itch", &seq, &d, &code), -1);
	assert_int_equal(uf_bridge_ack_parse("", 0, "UF_itch", &seq, &d, &code), -1);
	assert_int_equal(uf_bridge_ack_parse("{\"stream\":\"UF_itch\",\"seq\":0}", 29, "UF_itch",
	                                     &seq, &d, &code),
	                 -1);
	assert_int_equal(uf_bridge_ack_parse(ok, 20, "UF_itch", &seq, &d, &code), -1);
	assert_int_equal(code, 0);
}

/* --window: default 32, the config key "window", bounds 1..1024; the status line shows the
 * window's counters. */
static void test_window_config_and_status_counters(void **state)
{
	struct uf_bridge_config cfg;
	struct uf_bridge_status st;
	char path[256], err[256], buf[1536];
	FILE *f;

	(void)state;
	uf_bridge_config_init(&cfg);
	assert_int_equal(cfg.window, 32);
	snprintf(path, sizeof(path), "/tmp/uf-bridge-window-%d.json", (int)getpid());
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("{\"ring\":\"r\",\"window\":7}", f);
	fclose(f);
	assert_int_equal(uf_bridge_config_load(&cfg, path, err, sizeof(err)), 0);
	assert_int_equal(cfg.window, 7);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("{\"ring\":\"r\",\"window\":0}", f);
	fclose(f);
	assert_int_equal(uf_bridge_config_load(&cfg, path, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "\"window\""));
	/* --eager: default 0 (a caught-up bridge always sends), key "eager", bounds 0..1024 */
	assert_int_equal(cfg.eager, 0);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("{\"ring\":\"r\",\"eager\":2,\"batch\":4096}", f);
	fclose(f);
	assert_int_equal(uf_bridge_config_load(&cfg, path, err, sizeof(err)), 0);
	assert_int_equal(cfg.eager, 2);
	assert_int_equal(cfg.batch, 4096); /* UF_NATS_MAX_RECORDS (5000 is refused, above) */
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("{\"ring\":\"r\",\"eager\":1025}", f);
	fclose(f);
	assert_int_equal(uf_bridge_config_load(&cfg, path, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "\"eager\""));
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("{\"ring\":\"r\",\"batch\":4097}", f);
	fclose(f);
	assert_int_equal(uf_bridge_config_load(&cfg, path, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "\"batch\""));
	unlink(path);
	memset(&st, 0, sizeof(st));
	strcpy(st.ring, "itch");
	st.in_flight = 16;
	st.window_full = 259;
	st.resends = 1;
	st.held = 5;
	assert_true(uf_bridge_status_json(&st, buf, sizeof(buf)) > 0);
	assert_non_null(
	    strstr(buf, "\"in_flight\":16,\"window_full\":259,\"resends\":1,\"order_errors\":0,"));
	assert_non_null(strstr(buf, "\"order_errors\":0,\"held\":5,"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_levels_keep_best_first_and_vanish_at_zero),
	    cmocka_unit_test(test_encoded_book_decodes_to_the_same_book_and_skips_older_records),
	    cmocka_unit_test(test_book_entry_carries_every_status_code),
	    cmocka_unit_test(test_early_watch_mark_no_longer_loses_a_book_and_its_symbol),
	    cmocka_unit_test(test_bucket_key_count_counts_each_key_once),
	    cmocka_unit_test(test_gap_marks_every_present_book_stale),
	    cmocka_unit_test(test_nats_books_follow_reset_stale_and_the_trade_print_rule),
	    cmocka_unit_test(test_status_line_reports_lag_and_losses),
	    cmocka_unit_test(test_config_file_loads_and_refuses_unknown_keys_and_bad_values),
	    cmocka_unit_test(
	        test_status_line_reports_lag_from_the_acknowledged_position_and_failovers),
	    cmocka_unit_test(test_config_ack_timeouts_default_file_and_bounds),
	    cmocka_unit_test(test_pub_ack_parser_accepts_only_our_streams_acknowledgements),
	    cmocka_unit_test(test_window_config_and_status_counters),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
