/* uf-gen and uf-decode as users run them: a generated day is deterministic, has every type,
 * skewed activity, partial executions, replace chains, varied order lifetimes and zero
 * reference errors under an independent order-book check; uf-decode's subcommands print what
 * they promise and exit 0 / 1 / 2 as documented. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/uf_endian.h"
#include "test/common/uf_test_dir.h"

static char g_bin[4096];
static char g_dir[64] = "/tmp/uf-decode-tools-XXXXXX";

static int setup(void **s)
{
	const char *b = getenv("UF_BIN_DIR");
	snprintf(g_bin, sizeof(g_bin), "%s", b && *b ? b : UF_BIN_DIR);
	if (!mkdtemp(g_dir)) {
		fprintf(stderr, "mkdtemp: %s\n", strerror(errno));
		return -1;
	}
	return 0;
}

static int teardown(void **s)
{
	return uf_test_rm_tree(g_dir);
}

/* Runs a shell command; returns its exit status, output (stdout) in out if given. */
static int run(char *out, size_t outlen, const char *fmt, ...)
{
	char cmd[8192];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	size_t n = 0;
	char tmp[4096];
	size_t k;
	while ((k = fread(tmp, 1, sizeof(tmp), p)) > 0) {
		if (out && n + k < outlen) {
			memcpy(out + n, tmp, k);
			n += k;
		}
	}
	if (out)
		out[n] = 0;
	int st = pclose(p);
	assert_true(WIFEXITED(st));
	return WEXITSTATUS(st);
}

static uint8_t *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	uint8_t *b = malloc((size_t)n + 1);
	assert_int_equal(fread(b, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	*len = (size_t)n;
	return b;
}

static int gen(const char *name, long n, int k, int seed)
{
	return run(NULL, 0, "'%s/uf-gen' --out '%s/%s' --messages %ld --symbols %d --seed %d",
	           g_bin, g_dir, name, n, k, seed);
}

/* An independent order table for the check: open addressing on the reference. */
struct slot {
	uint64_t ref;    /* 0 = empty */
	uint32_t shares; /* remaining */
	uint16_t locate; /* instrument */
	uint8_t via_u;   /* created by a replace */
	uint64_t born;   /* message index of the add */
};

#define TABLE (1u << 20)
static struct slot g_tab[TABLE];

static struct slot *find(uint64_t ref, int insert)
{
	uint64_t h = (ref * 0x9E3779B97F4A7C15ull) >> 44;
	for (uint32_t i = 0; i < TABLE; i++) {
		struct slot *s = &g_tab[(h + i) & (TABLE - 1)];
		if (s->ref == ref)
			return s;
		if (s->ref == 0)
			return insert ? s : NULL;
	}
	return NULL;
}

static void erase(struct slot *s)
{
	/* backward-shift deletion keeps probe chains intact */
	uint32_t i = (uint32_t)(s - g_tab);
	for (;;) {
		g_tab[i].ref = 0;
		uint32_t j = i;
		for (;;) {
			j = (j + 1) & (TABLE - 1);
			if (g_tab[j].ref == 0)
				return;
			uint32_t home = (uint32_t)((g_tab[j].ref * 0x9E3779B97F4A7C15ull) >> 44);
			if (((j - home) & (TABLE - 1)) >= ((j - i) & (TABLE - 1))) {
				g_tab[i] = g_tab[j];
				i = j;
				break;
			}
		}
	}
}

static void test_uf_gen_is_deterministic(void **s)
{
	assert_int_equal(gen("a.itch", 50000, 50, 7), 0);
	assert_int_equal(gen("b.itch", 50000, 50, 7), 0);
	assert_int_equal(gen("c.itch", 50000, 50, 8), 0);
	size_t la, lb, lc;
	char p[256];
	snprintf(p, sizeof(p), "%s/a.itch", g_dir);
	uint8_t *a = slurp(p, &la);
	snprintf(p, sizeof(p), "%s/b.itch", g_dir);
	uint8_t *b = slurp(p, &lb);
	snprintf(p, sizeof(p), "%s/c.itch", g_dir);
	uint8_t *c = slurp(p, &lc);
	assert_int_equal(la, lb);
	assert_memory_equal(a, b, la);
	assert_true(la != lc || memcmp(a, c, la) != 0);
	free(a);
	free(b);
	free(c);
}

static void test_uf_gen_day_is_realistic_and_every_reference_valid(void **s)
{
	const long N = 300000;
	const int K = 200;
	assert_int_equal(gen("day.itch", N, K, 42), 0);
	char p[256];
	snprintf(p, sizeof(p), "%s/day.itch", g_dir);
	size_t len;
	uint8_t *d = slurp(p, &len);
	memset(g_tab, 0, sizeof(g_tab));
	uint64_t types[256] = {0}, adds_by_locate[65536] = {0}, integrity = 0, n = 0;
	uint64_t partial_exec = 0, chains = 0, short_lived = 0, long_lived = 0, last_ts = 0;
	uint64_t max_match = 0, bad_break = 0, ts_back = 0, near_px = 0, far_px = 0;
	static uint32_t last_px[65536], first_px[65536];
	uint32_t min_px1 = UINT32_MAX, max_px1 = 0; /* add prices of the busiest symbol */
	memset(last_px, 0, sizeof(last_px));
	memset(first_px, 0, sizeof(first_px));
	size_t off = 0;
	while (off + 2 <= len) {
		uint16_t l = uf_be16(d + off);
		const uint8_t *m = d + off + 2;
		assert_true(off + 2 + l <= len);
		off += 2 + (size_t)l;
		n++;
		types[m[0]]++;
		uint64_t ts = uf_be48(m + 5);
		if (ts < last_ts)
			ts_back++;
		last_ts = ts;
		struct slot *o;
		switch (m[0]) {
		case 'A':
		case 'F':
			o = find(uf_be64(m + 11), 1);
			if (o->ref)
				integrity++; /* duplicate live reference */
			*o = (struct slot){uf_be64(m + 11), uf_be32(m + 20), uf_be16(m + 1), 0, n};
			adds_by_locate[uf_be16(m + 1)]++;
			{
				uint16_t loc = uf_be16(m + 1);
				uint32_t px = uf_be32(m + 32);
				if (last_px[loc]) {
					uint32_t d = px > last_px[loc] ? px - last_px[loc]
					                               : last_px[loc] - px;
					near_px += d <= 1000; /* within 10 ticks of the last add */
					far_px += d > 1000;
				} else {
					first_px[loc] = px;
				}
				last_px[loc] = px;
				if (loc == 1) {
					min_px1 = px < min_px1 ? px : min_px1;
					max_px1 = px > max_px1 ? px : max_px1;
				}
			}
			break;
		case 'E':
		case 'C':
		case 'X': {
			o = find(uf_be64(m + 11), 0);
			uint32_t sh = uf_be32(m + 19);
			if (!o || sh > o->shares || uf_be16(m + 1) != o->locate) {
				integrity++;
				break;
			}
			if (m[0] != 'X' && sh < o->shares)
				partial_exec++;
			if (m[0] != 'X') {
				uint64_t mt = uf_be64(m + 23);
				max_match = mt > max_match ? mt : max_match;
			}
			o->shares -= sh;
			if (o->shares == 0) {
				uint64_t life = n - o->born;
				short_lived += life < 10;
				long_lived += life > 10000;
				erase(o);
			}
			break;
		}
		case 'D':
			o = find(uf_be64(m + 11), 0);
			if (!o) {
				integrity++;
				break;
			}
			short_lived += n - o->born < 10;
			long_lived += n - o->born > 10000;
			erase(o);
			break;
		case 'U': {
			o = find(uf_be64(m + 11), 0);
			if (!o) {
				integrity++;
				break;
			}
			chains += o->via_u;
			uint16_t loc = o->locate;
			erase(o);
			struct slot *nw = find(uf_be64(m + 19), 1);
			if (nw->ref)
				integrity++;
			*nw = (struct slot){uf_be64(m + 19), uf_be32(m + 27), loc, 1, n};
			break;
		}
		case 'P':
			max_match = uf_be64(m + 36) > max_match ? uf_be64(m + 36) : max_match;
			break;
		case 'Q':
			max_match = uf_be64(m + 31) > max_match ? uf_be64(m + 31) : max_match;
			break;
		case 'B':
			if (uf_be64(m + 11) == 0 || uf_be64(m + 11) > max_match)
				bad_break++;
			break;
		}
	}
	free(d);
	assert_int_equal(off, len);
	assert_int_equal(n, N);
	assert_int_equal(integrity, 0);
	assert_int_equal(bad_break, 0);
	assert_int_equal(ts_back, 0);
	const char *all = "SRHYLVWKJhAFECXDUPQBINO";
	for (const char *t = all; *t; t++)
		if (!types[(uint8_t)*t]) {
			print_error("type %c never appears\n", *t);
			fail();
		}
	assert_int_equal(types['R'], K);
	/* skew: the busiest 10% of symbols carry more than half of the adds */
	uint64_t sorted[200], total = 0;
	for (int i = 0; i < K; i++)
		total += sorted[i] = adds_by_locate[i + 1];
	for (int i = 0; i < K; i++) /* partial selection sort of the top 20 */
		for (int j = i + 1; j < K && i < K / 10; j++)
			if (sorted[j] > sorted[i]) {
				uint64_t t = sorted[i];
				sorted[i] = sorted[j];
				sorted[j] = t;
			}
	uint64_t top = 0;
	for (int i = 0; i < K / 10; i++)
		top += sorted[i];
	assert_true(top * 2 > total);
	/* prices cluster near a mid that moves over the day */
	assert_true(near_px > 9 * far_px);
	/* the busiest symbol's quotes span far more than the depth of one book (~10 ticks) */
	assert_true(max_px1 - min_px1 >= 30 * 100);
	assert_true(partial_exec > 100);
	assert_true(chains > 100);
	assert_true(short_lived > 1000);
	assert_true(long_lived > 1000);
}

/* The displayed book of a generated day, checked after every message that can raise a bid
 * or lower an ask (A, F, U): no symbol's best bid is ever at or above its best ask. A
 * marketable order must show up as executions of the resting side, never as a crossing add.
 * The model is the test's own: shares per price level and side, best prices per symbol. */
#define BK_TICKS 65536u /* prices up to $655.35 in whole cents */
#define BK_SYMS  100

struct bk_order {
	uint64_t ref;    /* 0 = empty slot */
	uint32_t shares; /* remaining */
	uint32_t tick;   /* price in cents */
	uint16_t locate; /* symbol */
	uint8_t side;    /* 'B' / 'S' */
};

static struct bk_order g_bk[TABLE];
static uint32_t g_lvl[BK_SYMS + 1][2][BK_TICKS]; /* orders per [locate][bid/ask][tick] */

static struct bk_order *bk_find(uint64_t ref, int insert)
{
	uint64_t h = (ref * 0x9E3779B97F4A7C15ull) >> 44;
	for (uint32_t i = 0; i < TABLE; i++) {
		struct bk_order *o = &g_bk[(h + i) & (TABLE - 1)];
		if (o->ref == ref)
			return o;
		if (o->ref == 0)
			return insert ? o : NULL;
	}
	return NULL;
}

static void bk_erase(struct bk_order *s)
{
	uint32_t i = (uint32_t)(s - g_bk);
	for (;;) {
		g_bk[i].ref = 0;
		uint32_t j = i;
		for (;;) {
			j = (j + 1) & (TABLE - 1);
			if (g_bk[j].ref == 0)
				return;
			uint32_t home = (uint32_t)((g_bk[j].ref * 0x9E3779B97F4A7C15ull) >> 44);
			if (((j - home) & (TABLE - 1)) >= ((j - i) & (TABLE - 1))) {
				g_bk[i] = g_bk[j];
				i = j;
				break;
			}
		}
	}
}

struct bk_best {
	int64_t bid; /* best bid tick, -1 none */
	int64_t ask; /* best ask tick, -1 none */
};

/* Adds (+1) or removes (-1) an order at its level and keeps the symbol's bests. */
static void bk_level(struct bk_best *b, const struct bk_order *o, int d)
{
	int sd = o->side == 'S';
	uint32_t *l = g_lvl[o->locate][sd];
	l[o->tick] = (uint32_t)((int64_t)l[o->tick] + d);
	struct bk_best *x = &b[o->locate];
	if (d > 0) {
		if (!sd && (int64_t)o->tick > x->bid)
			x->bid = o->tick;
		if (sd && (x->ask < 0 || (int64_t)o->tick < x->ask))
			x->ask = o->tick;
		return;
	}
	if (l[o->tick])
		return;
	if (!sd && (int64_t)o->tick == x->bid) {
		int64_t t = x->bid - 1;
		while (t >= 0 && !l[t])
			t--;
		x->bid = t;
	} else if (sd && (int64_t)o->tick == x->ask) {
		int64_t t = x->ask + 1;
		while (t < BK_TICKS && !l[t])
			t++;
		x->ask = t < BK_TICKS ? t : -1;
	}
}

/* Replays `path`; returns the number of messages after which some book was crossed or
 * locked (0 for a sound day); fails on any reference or price the model cannot hold. */
static uint64_t books_crossed_after(const char *path, uint64_t *adds_checked, uint64_t *execs,
                                    uint64_t *execs_at_touch)
{
	size_t len;
	uint8_t *d = slurp(path, &len);
	static struct bk_best best[BK_SYMS + 1];
	memset(g_bk, 0, sizeof(g_bk));
	memset(g_lvl, 0, sizeof(g_lvl));
	for (int i = 0; i <= BK_SYMS; i++)
		best[i] = (struct bk_best){-1, -1};
	uint64_t bad = 0;
	*adds_checked = *execs = *execs_at_touch = 0;
	for (size_t off = 0; off + 2 <= len;) {
		uint16_t l = uf_be16(d + off);
		const uint8_t *m = d + off + 2;
		off += 2 + (size_t)l;
		uint16_t loc = uf_be16(m + 1);
		struct bk_order *o = NULL, n = {0};
		switch (m[0]) {
		case 'A':
		case 'F':
			n = (struct bk_order){uf_be64(m + 11), uf_be32(m + 20),
			                      uf_be32(m + 32) / 100, loc, m[19]};
			assert_int_equal(uf_be32(m + 32) % 100, 0); /* whole cents */
			break;
		case 'U':
			o = bk_find(uf_be64(m + 11), 0);
			assert_non_null(o);
			n = (struct bk_order){uf_be64(m + 19), uf_be32(m + 27),
			                      uf_be32(m + 31) / 100, o->locate, o->side};
			assert_int_equal(uf_be32(m + 31) % 100, 0);
			bk_level(best, o, -1);
			bk_erase(o);
			break;
		case 'E':
		case 'C':
		case 'X':
		case 'D': {
			o = bk_find(uf_be64(m + 11), 0);
			assert_non_null(o);
			uint32_t sh = m[0] == 'D' ? o->shares : uf_be32(m + 19);
			assert_true(sh <= o->shares);
			*execs += m[0] == 'E' || m[0] == 'C';
			if (m[0] == 'E' || m[0] == 'C') /* only the best level trades */
				*execs_at_touch +=
				    (int64_t)o->tick ==
				    (o->side == 'B' ? best[o->locate].bid : best[o->locate].ask);
			o->shares -= sh;
			if (o->shares == 0) {
				bk_level(best, o, -1);
				bk_erase(o);
			}
			break;
		}
		}
		if (n.ref) {
			assert_true(n.locate >= 1 && n.locate <= BK_SYMS);
			assert_true(n.tick < BK_TICKS);
			struct bk_order *slot = bk_find(n.ref, 1);
			assert_int_equal(slot->ref, 0); /* a fresh reference */
			*slot = n;
			bk_level(best, slot, +1);
			const struct bk_best *b = &best[n.locate];
			(*adds_checked)++;
			if (b->bid >= 0 && b->ask >= 0 && b->bid >= b->ask && !bad) {
				print_error(
				    "locate %u crossed/locked after message at byte %zu: bid "
				    "%lld ask %lld\n",
				    n.locate, off, (long long)b->bid, (long long)b->ask);
				bad = off;
			}
		}
	}
	for (int i = 1; i <= BK_SYMS && !bad; i++) /* and at the end of the day */
		if (best[i].bid >= 0 && best[i].ask >= 0 && best[i].bid >= best[i].ask)
			bad = len;
	free(d);
	return bad;
}

static void test_uf_gen_books_never_cross_or_lock(void **s)
{
	static const int seeds[] = {1, 42, 2026};
	for (size_t i = 0; i < sizeof(seeds) / sizeof(seeds[0]); i++) {
		char name[32], p[256];
		snprintf(name, sizeof(name), "bk%d.itch", seeds[i]);
		assert_int_equal(gen(name, 300000, BK_SYMS, seeds[i]), 0);
		snprintf(p, sizeof(p), "%s/%s", g_dir, name);
		uint64_t adds = 0, execs = 0, execs_at_touch = 0;
		assert_int_equal(books_crossed_after(p, &adds, &execs, &execs_at_touch), 0);
		assert_true(adds > 100000); /* the check ran on every add and replace */
		assert_true(execs > 10000);
		assert_int_equal(execs_at_touch, execs); /* executions hit the touch, in order */
	}
}

/* Every symbol has its opening and closing auction: a NOII, then after S Q (S M) one
 * cross Q of its type, in that order; tickers are unique, 1-5 upper-case letters of varied
 * length, space padded. */
static void test_uf_gen_crosses_every_symbol_and_varies_tickers(void **s)
{
	enum { K = 50 };
	assert_int_equal(gen("x.itch", 200000, K, 1), 0);
	char p[256];
	snprintf(p, sizeof(p), "%s/x.itch", g_dir);
	size_t len;
	uint8_t *d = slurp(p, &len);
	int noii[K + 1][2] = {{0}}, cross[K + 1][2] = {{0}}, by_len[9] = {0}, bad_order = 0;
	char names[K + 1][9] = {{0}};
	uint8_t phase = 0; /* last S event code */
	for (size_t off = 0; off + 2 <= len;) {
		uint16_t l = uf_be16(d + off);
		const uint8_t *m = d + off + 2;
		off += 2 + (size_t)l;
		uint16_t loc = uf_be16(m + 1);
		if (m[0] == 'S') {
			phase = m[11];
		} else if (m[0] == 'R') {
			assert_true(loc >= 1 && loc <= K);
			int n = 0;
			while (n < 8 && m[11 + n] >= 'A' && m[11 + n] <= 'Z')
				n++;
			for (int k = n; k < 8; k++)
				assert_int_equal(m[11 + k], ' '); /* letters, then padding only */
			assert_true(n >= 1 && n <= 5);
			by_len[n]++;
			memcpy(names[loc], m + 11, 8);
			for (int j = 1; j < loc; j++)
				assert_memory_not_equal(names[j], names[loc], 8);
		} else if (m[0] == 'I' && (m[48] == 'O' || m[48] == 'C') && loc <= K) {
			int c = m[48] == 'C';
			/* the open's NOII comes before S Q, the close's before S M */
			bad_order += c ? phase != 'Q' : phase != 'S';
			noii[loc][c]++;
		} else if (m[0] == 'Q') {
			assert_true(loc >= 1 && loc <= K);
			assert_true(m[39] == 'O' || m[39] == 'C');
			int c = m[39] == 'C';
			bad_order += c ? phase != 'M' : phase != 'Q';
			bad_order += noii[loc][c] == 0; /* announced before it crosses */
			assert_true(uf_be32(m + 27) > 0);
			assert_memory_equal(m + 19, names[loc], 8);
			cross[loc][c]++;
		}
	}
	free(d);
	assert_int_equal(bad_order, 0);
	for (int i = 1; i <= K; i++) {
		assert_int_equal(cross[i][0], 1);
		assert_int_equal(cross[i][1], 1);
	}
	int lens = 0;
	for (int n = 1; n <= 5; n++)
		lens += by_len[n] > 0;
	assert_true(lens >= 3);
	assert_true(by_len[3] + by_len[4] > by_len[5]); /* mostly 3-4 letters */
}

static void test_uf_gen_rejects_bad_arguments(void **s)
{
	assert_int_equal(run(NULL, 0, "'%s/uf-gen' 2>/dev/null", g_bin), 2);
	assert_int_equal(run(NULL, 0,
	                     "'%s/uf-gen' --out %s/x --messages 10 --symbols 100 --seed 1 "
	                     "2>/dev/null",
	                     g_bin, g_dir),
	                 2);
	assert_int_equal(run(NULL, 0,
	                     "'%s/uf-gen' --out %s/x --messages abc --symbols 1 --seed 1 "
	                     "2>/dev/null",
	                     g_bin, g_dir),
	                 2);
	assert_int_equal(run(NULL, 0,
	                     "'%s/uf-gen' --out /nonexistent/dir/x --messages 1000 "
	                     "--symbols 1 --seed 1 2>/dev/null",
	                     g_bin),
	                 2);
}

static void test_uf_decode_stats_json_and_exit_codes(void **s)
{
	static char out[65536];
	assert_int_equal(gen("s.itch", 20000, 20, 3), 0);
	assert_int_equal(run(out, sizeof(out), "'%s/uf-decode' stats '%s/s.itch'", g_bin, g_dir),
	                 0);
	assert_non_null(strstr(out, "{\"packets\":0,\"messages\":20000,\"types\":{\"A\":"));
	assert_non_null(strstr(out, ",\"errors\":{},\"gaps\":0,\"skipped\":{}}\n"));
	/* keys sorted bytewise: ... "Y" before "h" */
	assert_true(strstr(out, "\"Y\":") < strstr(out, "\"h\":"));
	/* a file cut inside a message: counted, exit 1 */
	assert_int_equal(run(NULL, 0, "head -c 100001 '%s/s.itch' > '%s/cut.itch'", g_dir, g_dir),
	                 0);
	assert_int_equal(run(out, sizeof(out), "'%s/uf-decode' stats '%s/cut.itch'", g_bin, g_dir),
	                 1);
	assert_non_null(strstr(out, "\"truncated_file\":1"));
	/* unreadable, refused, usage */
	assert_int_equal(run(NULL, 0, "'%s/uf-decode' stats /nonexistent 2>/dev/null", g_bin), 2);
	assert_int_equal(run(out, sizeof(out), "'%s/uf-decode' stats /etc/hostname 2>&1", g_bin),
	                 2);
	assert_non_null(strstr(out, "not a recognised input"));
	assert_int_equal(run(NULL, 0, "'%s/uf-decode' stats 2>/dev/null", g_bin), 2);
	assert_int_equal(run(NULL, 0, "'%s/uf-decode' frobnicate x 2>/dev/null", g_bin), 2);
	assert_int_equal(run(NULL, 0, "'%s/uf-decode' 2>/dev/null", g_bin), 2);
	assert_int_equal(run(NULL, 0, "'%s/uf-decode' --help >/dev/null", g_bin), 0);
}

/* One Ethernet/IPv4 frame as a classic pcap record (us): `proto` 17 carries `payload` as UDP
 * to `port`; ARP (etype 0x0806) and IGMP (proto 2) carry it as their bodies. */
static void put_frame(FILE *f, uint16_t etype, uint8_t proto, uint16_t port, const uint8_t *pl,
                      size_t plen)
{
	uint8_t fr[1600] = {0};
	memset(fr, 0xee, 12);
	uf_put_be16(fr + 12, etype);
	uint8_t *ip = fr + 14;
	ip[0] = 0x45;
	uf_put_be16(ip + 2, (uint16_t)(20 + 8 + plen));
	ip[8] = 1;
	ip[9] = proto;
	uf_put_be16(ip + 20, 40000);
	uf_put_be16(ip + 22, port);
	uf_put_be16(ip + 24, (uint16_t)(8 + plen));
	memcpy(ip + 28, pl, plen);
	uint32_t n = (uint32_t)(14 + 28 + plen), rec[4] = {1700000000, 0, n, n};
	assert_int_equal(fwrite(rec, 4, 4, f), 4);
	assert_int_equal(fwrite(fr, 1, n, f), n);
}

/* A capture with ARP and IGMP beside MoldUDP64: those are skipped, not errors (exit 0);
 * --port skips other ports; a truncated UDP frame stays an error (exit 1). */
static void test_uf_decode_stats_skips_frames_that_are_not_moldudp64(void **s)
{
	static char out[65536];
	char path[256];
	snprintf(path, sizeof(path), "%s/mixed.pcap", g_dir);
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	uint32_t gh[6] = {0xa1b2c3d4, 0x00040002, 0, 0, 65535, 1};
	assert_int_equal(fwrite(gh, 4, 6, f), 6);
	uint8_t mold[64] = "SESSION001";
	uf_put_be64(mold + 10, 1);
	uf_put_be16(mold + 18, 1);
	uf_put_be16(mold + 20, 19); /* one D message */
	mold[22] = 'D';
	uf_put_be64(mold + 22 + 11, 7);
	size_t ml = 22 + 19;
	put_frame(f, 0x0800, 17, 26400, mold, ml);
	put_frame(f, 0x0806, 0, 0, mold, 28); /* ARP */
	put_frame(f, 0x0800, 2, 0, mold, 8);  /* IGMP */
	uf_put_be64(mold + 10, 2);
	put_frame(f, 0x0800, 17, 5353, mold, ml); /* mDNS port: MoldUDP64-shaped, other port */
	assert_int_equal(fclose(f), 0);
	assert_int_equal(run(out, sizeof(out), "'%s/uf-decode' stats '%s'", g_bin, path), 0);
	assert_non_null(strstr(out, "\"messages\":2,"));
	assert_non_null(strstr(out, "\"errors\":{}"));
	assert_non_null(strstr(out, "\"skipped\":{\"non_ipv4\":1,\"non_udp\":1}}"));
	assert_int_equal(
	    run(out, sizeof(out), "'%s/uf-decode' stats --port 26400 '%s'", g_bin, path), 0);
	assert_non_null(strstr(out, "\"packets\":1,\"messages\":1,"));
	assert_non_null(
	    strstr(out, "\"skipped\":{\"non_ipv4\":1,\"non_udp\":1,\"other_port\":1}}"));
	/* bad --port values and a daily file with --port are usage errors */
	assert_int_equal(
	    run(NULL, 0, "'%s/uf-decode' stats --port 0 '%s' 2>/dev/null", g_bin, path), 2);
	assert_int_equal(
	    run(NULL, 0, "'%s/uf-decode' stats --port 70000 '%s' 2>/dev/null", g_bin, path), 2);
	assert_int_equal(run(NULL, 0, "'%s/uf-decode' stats '%s' --port 2>/dev/null", g_bin, path),
	                 2);
	assert_int_equal(gen("pd.itch", 2000, 5, 1), 0);
	assert_int_equal(run(NULL, 0, "'%s/uf-decode' stats --port 26400 '%s/pd.itch' 2>/dev/null",
	                     g_bin, g_dir),
	                 2);
	/* a UDP frame whose IP header claims more than was captured: still an error */
	f = fopen(path, "ab");
	assert_non_null(f);
	uint8_t fr[60] = {0};
	uf_put_be16(fr + 12, 0x0800);
	fr[14] = 0x45;
	uf_put_be16(fr + 16, 200);
	fr[23] = 17;
	uint32_t rec[4] = {1700000000, 0, sizeof(fr), 242};
	assert_int_equal(fwrite(rec, 4, 4, f), 4);
	assert_int_equal(fwrite(fr, 1, sizeof(fr), f), sizeof(fr));
	assert_int_equal(fclose(f), 0);
	assert_int_equal(run(out, sizeof(out), "'%s/uf-decode' stats '%s'", g_bin, path), 1);
	assert_non_null(strstr(out, "\"errors\":{\"truncated_record\":1}"));
}

static void test_uf_decode_print_lines_and_limit(void **s)
{
	static char out[65536];
	assert_int_equal(gen("p.itch", 5000, 5, 9), 0);
	assert_int_equal(
	    run(out, sizeof(out), "'%s/uf-decode' print '%s/p.itch' --limit 3", g_bin, g_dir), 0);
	int lines = 0;
	for (char *p = out; *p; p++)
		lines += *p == '\n';
	assert_int_equal(lines, 3);
	static const char first[] = "{\"seq\":1,\"type\":\"S\",\"stock_locate\":0,";
	assert_true(!strncmp(out, first, strlen(first)));
	assert_non_null(strstr(out, "\"event_code\":\"O\"}"));
	/* the directory entry: symbol trimmed, round lot as an integer */
	assert_non_null(strstr(out, "\"type\":\"R\",\"stock_locate\":1,"));
	assert_non_null(strstr(out, "\"round_lot_size\":100,"));
	assert_int_equal(run(out, sizeof(out),
	                     "'%s/uf-decode' print '%s/p.itch' | grep -m1 '\"type\":\"A\"'", g_bin,
	                     g_dir),
	                 0);
	assert_non_null(strstr(out, "\"order_ref\":"));
	assert_non_null(strstr(out, "\"price\":"));
	/* every type prints its own fields, named as in the spec */
	static const struct {
		char t;
		const char *key;
	} keys[] = {
	    {'S', "\"event_code\":"},
	    {'R', "\"luld_tier\":"},
	    {'H', "\"trading_state\":"},
	    {'Y', "\"action\":"},
	    {'L', "\"participant_state\":"},
	    {'V', "\"level_3\":"},
	    {'W', "\"breached_level\":"},
	    {'K', "\"ipo_price\":"},
	    {'J', "\"reference_price\":"},
	    {'h', "\"market_code\":"},
	    {'A', "\"side\":"},
	    {'F', "\"attribution\":"},
	    {'E', "\"executed_shares\":"},
	    {'C', "\"execution_price\":"},
	    {'X', "\"cancelled_shares\":"},
	    {'D', "\"order_ref\":"},
	    {'U', "\"new_ref\":"},
	    {'P', "\"match_number\":"},
	    {'Q', "\"cross_price\":"},
	    {'B', "\"match_number\":"},
	    {'I', "\"current_ref_price\":"},
	    {'N', "\"interest_flag\":"},
	    {'O', "\"near_exec_time\":"},
	};
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		assert_int_equal(
		    run(out, sizeof(out),
		        "'%s/uf-decode' print '%s/p.itch' | grep -m1 '\"type\":\"%c\"'", g_bin,
		        g_dir, keys[i].t),
		    0);
		if (!strstr(out, keys[i].key)) {
			print_error("type %c: no %s in %s\n", keys[i].t, keys[i].key, out);
			fail();
		}
	}
	assert_int_equal(
	    run(NULL, 0, "'%s/uf-decode' print '%s/p.itch' --limit x 2>/dev/null", g_bin, g_dir),
	    2);
}

static void test_uf_decode_bench_prints_all_rows(void **s)
{
	static char out[65536];
	assert_int_equal(gen("bench.itch", 20000, 20, 5), 0);
	assert_int_equal(
	    run(out, sizeof(out), "'%s/uf-decode' bench '%s/bench.itch' --reps 1", g_bin, g_dir),
	    0);
	assert_non_null(strstr(out, "20000 messages"));
	assert_non_null(strstr(out, "read every byte (baseline)"));
	assert_non_null(strstr(out, "decode prefetch off"));
	assert_non_null(strstr(out, "decode prefetch 8"));
	assert_non_null(strstr(out, "decode prefetch 16"));
	assert_non_null(strstr(out, "scattered"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_uf_gen_is_deterministic),
	    cmocka_unit_test(test_uf_gen_day_is_realistic_and_every_reference_valid),
	    cmocka_unit_test(test_uf_gen_books_never_cross_or_lock),
	    cmocka_unit_test(test_uf_gen_crosses_every_symbol_and_varies_tickers),
	    cmocka_unit_test(test_uf_gen_rejects_bad_arguments),
	    cmocka_unit_test(test_uf_decode_stats_json_and_exit_codes),
	    cmocka_unit_test(test_uf_decode_stats_skips_frames_that_are_not_moldudp64),
	    cmocka_unit_test(test_uf_decode_print_lines_and_limit),
	    cmocka_unit_test(test_uf_decode_bench_prints_all_rows),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
