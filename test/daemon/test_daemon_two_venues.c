/* One daemon, two venues, live (issue 24 "Done when"; UF_SHARED_DATA, conformance label):
 * a Nasdaq ITCH feed (a generated day), an IEX DEEP feed and an IEX TOPS feed, each its own
 * ring, fed at once by uf-replay over loopback multicast; the IEX captures with 5% loss on
 * EACH line (IEX-TP has no recovery service: a hole both lines lost is a GAP, books stale).
 * After the replays, every ring's book image (read with the consumer library) is compared
 * with `uf-decode books --depth 10` of the replayed input, symbol by symbol and level by
 * level: a book that differs must be flagged stale (assert: no unflagged difference); the
 * counts of books that differ and of books flagged are printed. The Nasdaq feed loses nothing
 * (its B line is whole): its books are all equal. TOPS is replayed up to message 40000
 * (uf-replay --until-seq; the day ends with every side empty) and compared with
 * `uf-decode books --until-seq` at the last message sent. /status names the three feeds, /metrics
 * passes promtool with a uringfeed_ready series per feed, /ready answers. */
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

#include "ring/ufconsumer.h"
#include "test/common/uf_test_daemon.h"
#include "test/common/uf_test_dir.h"
#include "test/common/uf_test_promtool.h"

#define DEPTH 10

static char tmpdir[64], g_deep[4096], g_tops[4096];

static int setup(void **state)
{
	(void)state;
	const char *d = getenv("UF_SHARED_DATA");
	struct stat st;
	if (!d || !*d) {
		fprintf(stderr, "UF_SHARED_DATA is not set: IEX captures unavailable\n");
		return -1;
	}
	snprintf(g_deep, sizeof(g_deep), "%s/iex/iex-deep-1.0-20170425.pcap.gz", d);
	snprintf(g_tops, sizeof(g_tops), "%s/iex/iex-tops-1.6-20170710.pcap.gz", d);
	if (stat(g_deep, &st) < 0 || stat(g_tops, &st) < 0) {
		fprintf(stderr, "IEX captures absent under %s/iex: %s\n", d, strerror(errno));
		return -1;
	}
	return uf_test_daemon_dir(tmpdir, sizeof(tmpdir), "2venue");
}

static int teardown(void **state)
{
	(void)state;
	return uf_test_rm_tree(tmpdir);
}

/* One book as uf-decode books printed it (levels kept as their text: compared as such). */
struct ref_book {
	char sym[9];
	char bid[1024], ask[1024]; /* "[[p,s,o],...]" at --depth 10 */
	int matched;
};

struct ref {
	struct ref_book *v;
	size_t n;
};

static void ref_load(const char *input, unsigned long long until, struct ref *r)
{
	char cmd[8400], opt[48] = "";
	if (until)
		snprintf(opt, sizeof(opt), "--until-seq %llu", until);
	snprintf(cmd, sizeof(cmd), "'%s' books --depth %d %s '%s' 2>/dev/null",
	         uf_test_bin("uf-decode"), DEPTH, opt, input);
	FILE *f = popen(cmd, "r");
	assert_non_null(f);
	static char line[8192];
	size_t cap = 0;
	r->n = 0;
	r->v = NULL;
	while (fgets(line, sizeof(line), f)) {
		if (r->n == cap) {
			cap = cap ? cap * 2 : 256;
			r->v = realloc(r->v, cap * sizeof(*r->v));
			assert_non_null(r->v);
		}
		struct ref_book *b = &r->v[r->n++];
		memset(b, 0, sizeof(*b));
		char *s = strstr(line, "{\"symbol\":\"") + 11;
		char *q = strchr(s, '"');
		assert_true(q - s <= 8);
		memcpy(b->sym, s, (size_t)(q - s));
		char *bid = strstr(q, "\"bid\":") + 6, *ask = strstr(q, ",\"ask\":");
		assert_true(ask - bid < (long)sizeof(b->bid));
		memcpy(b->bid, bid, (size_t)(ask - bid));
		ask += 7;
		char *end = strrchr(ask, '}');
		assert_true(end - ask < (long)sizeof(b->ask));
		memcpy(b->ask, ask, (size_t)(end - ask));
	}
	pclose(f); /* exit 1 for the DEEP capture's truncated record: the books are printed */
	assert_true(r->n > 0 || strstr(input, "tops"));
}

static void side_text(char *out, size_t cap, const struct uf_level *lv, uint32_t n)
{
	size_t k = (size_t)snprintf(out, cap, "[");
	for (uint32_t i = 0; i < n && i < DEPTH; i++)
		k += (size_t)snprintf(out + k, cap - k, "%s[%lld,%llu,%u]", i ? "," : "",
		                      (long long)lv[i].price, (unsigned long long)lv[i].shares,
		                      lv[i].orders);
	snprintf(out + k, cap - k, "]");
}

struct cmp {
	struct ref *r;
	uint64_t books, differ, flagged, unflagged;
};

static struct ref_book *ref_find(struct ref *r, const char *sym)
{
	for (size_t i = 0; i < r->n; i++)
		if (!strcmp(r->v[i].sym, sym))
			return &r->v[i];
	return NULL;
}

static int cmp_book(const struct uf_book_snapshot *s, void *arg)
{
	struct cmp *c = arg;
	char bid[1024], ask[1024];
	side_text(bid, sizeof(bid), s->bid, s->nbid);
	side_text(ask, sizeof(ask), s->ask, s->nask);
	struct ref_book *b = ref_find(c->r, s->symbol);
	int stale = (s->flags & UF_BOOKF_STALE) != 0;
	int empty = !s->nbid && !s->nask;
	int same = b ? !strcmp(b->bid, bid) && !strcmp(b->ask, ask) : empty;
	if (b)
		b->matched = 1;
	if (empty && !b)
		return 0; /* neither has it */
	c->books++;
	c->flagged += stale;
	if (!same) {
		c->differ++;
		if (!stale) {
			c->unflagged++;
			print_message("UNFLAGGED %s ring bid %s ask %s / decode %s %s\n", s->symbol,
			              bid, ask, b ? b->bid : "-", b ? b->ask : "-");
		}
	}
	return 0;
}

/* Compares ring `ring` with r; returns the counts. */
static struct cmp compare_ring(const char *ring, struct ref *r, const char *what)
{
	struct uf_consumer_options opt;
	uf_consumer_options_init(&opt);
	uf_consumer_t *c = NULL;
	char err[256];
	assert_int_equal(uf_consumer_attach(ring, &opt, &c, err, sizeof(err)), 0);
	struct cmp k = {.r = r};
	for (size_t i = 0; i < r->n; i++)
		r->v[i].matched = 0;
	assert_int_equal(uf_consumer_snapshot_all(c, cmp_book, &k), 0);
	for (size_t i = 0; i < r->n; i++)
		if (!r->v[i].matched) { /* in the input's books, not in the ring's image */
			k.books++;
			k.differ++;
			k.unflagged++;
			print_message("MISSING %s in ring %s\n", r->v[i].sym, ring);
		}
	uf_consumer_detach(c);
	print_message("%s: %llu books compared, %llu differ, %llu flagged stale, %llu "
	              "unflagged differences\n",
	              what, (unsigned long long)k.books, (unsigned long long)k.differ,
	              (unsigned long long)k.flagged, (unsigned long long)k.unflagged);
	return k;
}

/* Waits (bounded) until ring `ring` has published nothing new for 1 s. */
static void wait_quiet(const char *ring)
{
	struct uf_consumer_options opt;
	uf_consumer_options_init(&opt);
	uf_consumer_t *c = NULL;
	char err[256];
	assert_int_equal(uf_consumer_attach(ring, &opt, &c, err, sizeof(err)), 0);
	struct uf_consumer_info info;
	uint64_t end = uf_test_now_ms() + 30000, last = UINT64_MAX, since = uf_test_now_ms();
	while (uf_test_now_ms() < end) {
		uf_consumer_get_info(c, &info);
		if (info.tail != last) {
			last = info.tail;
			since = uf_test_now_ms();
		} else if (uf_test_now_ms() - since > 1000) {
			break;
		}
		usleep(50000);
	}
	assert_true(uf_test_now_ms() < end);
	uf_consumer_detach(c);
}

static pid_t replay(const char *in, const char *a, const char *b, const char *drop,
                    const char *until, const char *out, const char *errf)
{
	const char *argv[] = {uf_test_bin("uf-replay"),
	                      "--in",
	                      in,
	                      "--a",
	                      a,
	                      "--b",
	                      b,
	                      "--interface",
	                      "127.0.0.1",
	                      "--rate",
	                      "300000",
	                      "--seed",
	                      "11",
	                      drop ? "--drop-a" : NULL,
	                      drop,
	                      "--drop-b",
	                      drop,
	                      until ? "--until-seq" : NULL,
	                      until,
	                      NULL};
	return uf_test_spawn(tmpdir, argv, out, errf, NULL, 0);
}

static void test_two_venues_one_daemon_books_equal_or_flagged(void **state)
{
	(void)state;
	char day[256], cfg[4096], ga[6][32], ring[3][64];
	int pid = (int)getpid(), port0 = 22000 + (pid % 500) * 6;
	const char *names[3] = {"nasdaq", "deep", "tops"};
	const char *protos[3] = {"itch50-moldudp64", "iex-deep", "iex-tops"};
	snprintf(day, sizeof(day), "%s/day.itch", tmpdir);
	uf_test_gen_day(tmpdir, day, "100000", "20", "5");
	size_t k = 0;
	k += (size_t)snprintf(cfg + k, sizeof(cfg) - k,
	                      "{\"status\":{\"listen\":\"127.0.0.1:0\"},\"log\":{\"journal\":"
	                      "\"never\"},\"feeds\":[");
	for (int f = 0; f < 3; f++) {
		snprintf(ring[f], sizeof(ring[f]), "uf_2v%s_%d", names[f], pid);
		for (int l = 0; l < 2; l++)
			snprintf(ga[f * 2 + l], sizeof(ga[0]), "239.%d.%d.%d:%d", 90 + f, pid % 250,
			         l + 1, port0 + f * 2 + l);
		k += (size_t)snprintf(
		    cfg + k, sizeof(cfg) - k,
		    "%s{\"name\":\"%s\",\"protocol\":\"%s\",\"backend\":\"epoll\",\"cpu\":-1,"
		    "\"lines\":[{\"name\":\"A\",\"group\":\"239.%d.%d.1\",\"port\":%d,"
		    "\"interface\":\"127.0.0.1\"},{\"name\":\"B\",\"group\":\"239.%d.%d.2\","
		    "\"port\":%d,\"interface\":\"127.0.0.1\"}],\"ring\":{\"name\":\"%s\","
		    "\"capacity\":1048576},\"book\":{\"depth\":%d,\"max_orders\":%s%s}}",
		    f ? "," : "", names[f], protos[f], 90 + f, pid % 250, port0 + f * 2, 90 + f,
		    pid % 250, port0 + f * 2 + 1, ring[f], DEPTH, f ? "1024" : "1000000",
		    f ? ",\"max_instruments\":16384" : "");
	}
	snprintf(cfg + k, sizeof(cfg) - k, "]}");
	uf_test_write_file(tmpdir, "uf.json", cfg);
	pid_t daemon = uf_test_daemon_start(tmpdir, uf_test_bin("uringfeed"), NULL, 0);
	uint16_t port = uf_test_status_port(tmpdir);
	uf_test_wait_log(tmpdir, "running;", 10000);

	pid_t r0 = replay(day, ga[0], ga[1], NULL, NULL, "r0.out", "r0.err");
	pid_t r1 = replay(g_deep, ga[2], ga[3], "0.05", NULL, "r1.out", "r1.err");
	/* TOPS ends the day with every side empty: stopped mid-day, while quotes are open */
	pid_t r2 = replay(g_tops, ga[4], ga[5], "0.05", "40000", "r2.out", "r2.err");
	assert_int_equal(uf_test_wait_exit(r0, 60000, "uf-replay nasdaq"), 0);
	assert_int_equal(uf_test_wait_exit(r1, 60000, "uf-replay deep"), 0);
	assert_int_equal(uf_test_wait_exit(r2, 60000, "uf-replay tops"), 0);
	char out[4096];
	uf_test_read_file(tmpdir, "r1.out", out, sizeof(out));
	print_message("deep replay: %s", out);
	assert_non_null(strstr(out, "\"stream_restarts\":11")); /* replayed as they are */
	assert_null(strstr(out, "\"dropped\":0,"));             /* both lines lost packets */
	for (int f = 0; f < 3; f++)
		wait_quiet(ring[f]);

	struct ref r;
	ref_load(day, 0, &r);
	struct cmp c = compare_ring(ring[0], &r, "nasdaq");
	assert_true(c.books > 0);
	assert_int_equal(c.differ, 0); /* line B whole: every book equal */
	free(r.v);
	ref_load(g_deep, 0, &r);
	c = compare_ring(ring[1], &r, "iex-deep (5% loss a line)");
	assert_true(c.books > 0);
	assert_int_equal(c.unflagged, 0);
	free(r.v);
	uf_test_read_file(tmpdir, "r2.out", out, sizeof(out));
	const char *ls = strstr(out, "\"last_seq\":");
	assert_non_null(ls);
	ref_load(g_tops, strtoull(ls + 11, NULL, 10), &r); /* the books when the replay stopped */
	c = compare_ring(ring[2], &r, "iex-tops (5% loss a line, up to message 40000)");
	assert_true(c.books > 0);
	assert_int_equal(c.unflagged, 0);
	free(r.v);

	const char *body;
	assert_int_equal(uf_test_http_get(port, "/status", &body), 200);
	for (int f = 0; f < 3; f++) {
		char want[64];
		snprintf(want, sizeof(want), "\"%s\"", names[f]);
		assert_non_null(strstr(body, want));
		assert_non_null(strstr(body, protos[f]));
	}
	assert_int_equal(uf_test_http_get(port, "/metrics", &body), 200);
	char pout[8192];
	if (uf_test_promtool_check_metrics_within(body, pout, sizeof(pout), 10000) != 0)
		fail_msg("promtool check metrics:\n%s", pout);
	for (int f = 0; f < 3; f++) {
		char want[64];
		snprintf(want, sizeof(want), "uringfeed_ready{feed=\"%s\"}", names[f]);
		assert_non_null(strstr(body, want));
	}
	int rs = uf_test_http_get(port, "/ready", &body);
	assert_true(rs == 200 || rs == 503);
	print_message("/ready %d: %.300s\n", rs, body);
	uf_test_kill(&daemon);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_two_venues_one_daemon_books_equal_or_flagged),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
