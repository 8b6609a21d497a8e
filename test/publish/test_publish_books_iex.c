/* `uf-decode books` on the real IEX captures ($UF_SHARED_DATA/iex, conformance label), as a
 * user runs it: the books it prints (built by the live feed's protocol entries) are compared
 * with a model this test builds from the raw IEX-TP bytes (the specifications' offsets, its
 * own framing walk, not decode/ or publish/):
 *   DEEP: (symbol, side, price) -> size per stream; a stream starting over inside the session
 *         (sequence 1 at stream offset 0) voids the model, as the feed does; every level of
 *         every printed book equal to the model and the model holds no other level; exit 1
 *         (the truncated last record, the 8 deletes of levels never set).
 *   TOPS: per symbol the last quote; a printed level is a quoted side of size > 0, and every
 *         such side is printed; at the end of the capture and mid-way (--until-seq). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <zlib.h>

#include <cmocka.h>

#define SLOTS (1u << 17)

struct lvl {
	char sym[9];    /* trimmed symbol; "" = free slot */
	uint8_t side;   /* 'B' / 'S' */
	int64_t price;  /* 4 decimals */
	uint32_t size;  /* shares, 0 = none */
	int64_t qprice; /* TOPS: the side's quoted price (the key's price is 0) */
	int seen;       /* matched by a printed level */
};

static struct lvl *g_lv;
static char g_bin[4096], g_dir[4096];

static int setup(void **s)
{
	(void)s;
	const char *b = getenv("UF_BIN_DIR");
	const char *d = getenv("UF_SHARED_DATA");
	snprintf(g_bin, sizeof(g_bin), "%s/uf-decode", b && *b ? b : UF_BIN_DIR);
	struct stat st;
	if (!d || !*d) {
		fprintf(stderr, "UF_SHARED_DATA is not set: IEX conformance data unavailable\n");
		return -1;
	}
	snprintf(g_dir, sizeof(g_dir), "%s/iex", d);
	if (stat(g_dir, &st) < 0) {
		fprintf(stderr, "IEX captures absent: %s: %s\n", g_dir, strerror(errno));
		return -1;
	}
	g_lv = calloc(SLOTS, sizeof(*g_lv));
	return g_lv ? 0 : -1;
}

static uint64_t le(const uint8_t *p, int n)
{
	uint64_t v = 0;
	for (int i = n - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static struct lvl *slot(const char *sym, uint8_t side, int64_t price)
{
	uint64_t h = 1469598103934665603ull;
	for (const char *c = sym; *c; c++)
		h = (h ^ (uint8_t)*c) * 1099511628211ull;
	h ^= (uint64_t)price * 0x9E3779B97F4A7C15ull ^ side;
	uint32_t i = (uint32_t)(h >> 32) & (SLOTS - 1);
	while (g_lv[i].sym[0] &&
	       (strcmp(g_lv[i].sym, sym) || g_lv[i].side != side || g_lv[i].price != price))
		i = (i + 1) & (SLOTS - 1);
	return &g_lv[i];
}

static void sym_of(const uint8_t *p, char out[9])
{
	memcpy(out, p, 8);
	out[8] = 0;
	for (int k = 7; k >= 0 && out[k] == ' '; k--)
		out[k] = 0;
}

static void set_level(const char *sym, uint8_t side, int64_t price, uint32_t size)
{
	struct lvl *l = slot(sym, side, price);
	snprintf(l->sym, sizeof(l->sym), "%s", sym);
	l->side = side;
	l->price = price;
	l->size = size;
}

/* The model: reads the gzip'd classic pcap itself, walks each UDP payload's IEX-TP segment. */
static void build_model(const char *file, int tops, uint64_t until)
{
	memset(g_lv, 0, SLOTS * sizeof(*g_lv));
	char path[8400];
	snprintf(path, sizeof(path), "%s/%s", g_dir, file);
	gzFile z = gzopen(path, "rb");
	assert_non_null(z);
	uint8_t gh[24], rh[16];
	static uint8_t pkt[65536];
	assert_int_equal(gzread(z, gh, 24), 24);
	assert_true(le(gh, 4) == 0xa1b2c3d4 || le(gh, 4) == 0xa1b23c4d);
	int started = 0;
	while (gzread(z, rh, 16) == 16) {
		uint32_t cap = (uint32_t)le(rh + 8, 4);
		assert_true(cap <= sizeof(pkt));
		if (gzread(z, pkt, cap) != (int)cap)
			break; /* the truncated last record */
		if (cap < 14 + 20 + 8 + 40 || le(pkt + 12, 2) != 0x0008) /* Ethernet: IPv4 */
			continue;
		const uint8_t *ip = pkt + 14;
		size_t ihl = (size_t)(ip[0] & 15) * 4;
		if (ip[9] != 17)
			continue;
		const uint8_t *tp = ip + ihl + 8; /* IEX-TP header: 40 bytes */
		size_t len = cap - (size_t)(tp - pkt);
		uint16_t count = (uint16_t)le(tp + 14, 2);
		int64_t off = (int64_t)le(tp + 16, 8);
		uint64_t seq = le(tp + 24, 8);
		if (!count)
			continue;
		if (started && seq == 1 && off == 0) /* the stream starts over: books voided */
			memset(g_lv, 0, SLOTS * sizeof(*g_lv));
		started = 1;
		size_t p = 40;
		int stop = 0;
		for (uint16_t k = 0; k < count && p + 2 <= len && !stop; k++) {
			stop = until && seq + k == until; /* --until-seq: this one is the last */
			size_t ml = le(tp + p, 2);
			const uint8_t *m = tp + p + 2;
			p += 2 + ml;
			if (p > len)
				break;
			char sym[9];
			if (!tops && ml == 30 && (m[0] == '8' || m[0] == '5')) {
				sym_of(m + 10, sym);
				set_level(sym, m[0] == '8' ? 'B' : 'S', (int64_t)le(m + 22, 8),
				          (uint32_t)le(m + 18, 4));
			} else if (tops && ml == 42 && m[0] == 'Q') {
				sym_of(m + 10, sym);
				set_level(sym, 'B', 0, (uint32_t)le(m + 18, 4));
				slot(sym, 'B', 0)->qprice = (int64_t)le(m + 22, 8);
				set_level(sym, 'S', 0, (uint32_t)le(m + 38, 4));
				slot(sym, 'S', 0)->qprice = (int64_t)le(m + 30, 8);
			}
		}
		if (stop)
			break;
	}
	gzclose(z);
}

/* Parses `[[p,s,o],...]` at *pp; calls back each level. Returns levels. */
static int parse_side(const char **pp, const char *sym, uint8_t side, int tops, uint64_t *matched)
{
	const char *p = *pp;
	assert_int_equal(*p, '[');
	p++;
	int n = 0;
	while (*p == '[') {
		long long price;
		unsigned long long size;
		unsigned orders;
		int used = 0;
		assert_int_equal(sscanf(p, "[%lld,%llu,%u]%n", &price, &size, &orders, &used), 3);
		p += used;
		assert_int_equal(orders, 0); /* a level book: no order counts */
		struct lvl *l = slot(sym, side, tops ? 0 : price);
		if (!l->sym[0] || l->size != size || (tops && l->qprice != price))
			fail_msg("%s %c %lld %llu: printed, the model has %u", sym, side, price,
			         size, l->sym[0] ? l->size : 0);
		l->seen = 1;
		(*matched)++;
		n++;
		if (*p == ',')
			p++;
	}
	assert_int_equal(*p, ']');
	*pp = p + 1;
	return n;
}

/* Runs uf-decode books on `file`; every printed level is in the model; every model level of
 * size > 0 was printed. Returns uf-decode's exit status; *levels = levels printed. */
static int compare(const char *file, int tops, uint64_t until, uint64_t *levels)
{
	char cmd[12600], opt[64] = "";
	if (until)
		snprintf(opt, sizeof(opt), "--until-seq %llu", (unsigned long long)until);
	snprintf(cmd, sizeof(cmd), "'%s' books %s '%s/%s' 2>/dev/null", g_bin, opt, g_dir, file);
	FILE *f = popen(cmd, "r");
	assert_non_null(f);
	static char line[1 << 22];
	*levels = 0;
	while (fgets(line, sizeof(line), f)) {
		char sym[9] = {0};
		const char *p = strstr(line, "{\"symbol\":\"");
		assert_non_null(p);
		p += 11;
		const char *q = strchr(p, '"');
		assert_true(q && q - p <= 8);
		memcpy(sym, p, (size_t)(q - p));
		p = strstr(q, "\"bid\":");
		assert_non_null(p);
		p += 6;
		parse_side(&p, sym, 'B', tops, levels);
		assert_true(!strncmp(p, ",\"ask\":", 7));
		p += 7;
		parse_side(&p, sym, 'S', tops, levels);
	}
	int st = pclose(f);
	assert_true(WIFEXITED(st));
	for (uint32_t i = 0; i < SLOTS; i++)
		if (g_lv[i].sym[0] && g_lv[i].size && !g_lv[i].seen)
			fail_msg("%s %c %lld size %u: in the model, not printed", g_lv[i].sym,
			         g_lv[i].side, (long long)g_lv[i].price, g_lv[i].size);
	return WEXITSTATUS(st);
}

static void test_deep_books_equal_the_wire(void **s)
{
	(void)s;
	build_model("iex-deep-1.0-20170425.pcap.gz", 0, 0);
	uint64_t levels;
	/* exit 1: the truncated last record and the 8 deletes of levels never set */
	assert_int_equal(compare("iex-deep-1.0-20170425.pcap.gz", 0, 0, &levels), 1);
	print_message("deep: %llu levels printed, all equal to the wire\n",
	              (unsigned long long)levels);
	assert_true(levels > 0);
	/* mid-way: the books after the first message numbered 50000 (exit 0 or 1: an unknown
	 * level delete may come before it) */
	build_model("iex-deep-1.0-20170425.pcap.gz", 0, 50000);
	int st = compare("iex-deep-1.0-20170425.pcap.gz", 0, 50000, &levels);
	assert_true(st == 0 || st == 1);
	print_message("deep --until-seq 50000: %llu levels printed, all equal\n",
	              (unsigned long long)levels);
	assert_true(levels > 0);
}

static void test_tops_books_are_the_last_quotes(void **s)
{
	(void)s;
	build_model("iex-tops-1.6-20170710.pcap.gz", 1, 0);
	uint64_t quoted = 0;
	for (uint32_t i = 0; i < SLOTS; i++)
		quoted += g_lv[i].sym[0] != 0;
	assert_true(quoted > 0); /* the model saw the quotes */
	uint64_t levels;
	assert_int_equal(compare("iex-tops-1.6-20170710.pcap.gz", 1, 0, &levels), 0);
	print_message("tops: %llu sides quoted, %llu levels printed\n", (unsigned long long)quoted,
	              (unsigned long long)levels);
	/* the day ends with every side empty: mid-day (--until-seq), quotes are open */
	build_model("iex-tops-1.6-20170710.pcap.gz", 1, 40000);
	assert_int_equal(compare("iex-tops-1.6-20170710.pcap.gz", 1, 40000, &levels), 0);
	print_message("tops --until-seq 40000: %llu levels printed, all equal\n",
	              (unsigned long long)levels);
	assert_true(levels > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_deep_books_equal_the_wire),
	    cmocka_unit_test(test_tops_books_are_the_last_quotes),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
