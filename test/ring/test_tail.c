/* uf-tail against a ring this test produces: --books format (as `uf-decode books`), records,
 * clean ends (close, --count, --timeout), --top, errors. */
#include <dirent.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "test/common/uf_test_proc.h"
#include "ring/journal_writer.h"
#include "ring/uf_ring.h"
#include "ring_test_util.h"

static char g_bin[512];

static struct uf_ring *make_ring(const char *name)
{
	struct uf_ring_options o;
	struct uf_ring *r = NULL;
	char err[256] = "";

	uf_ring_options_init(&o);
	o.capacity = 1024;
	o.depth = 5;
	o.max_instruments = 32;
	if (uf_ring_create(name, &o, &r, err, sizeof(err)) != 0)
		fprintf(stderr, "create: %s\n", err);
	assert_non_null(r);
	return r;
}

/* Runs uf-tail with `args`; stdout into out, returns the exit status (-1 if not exited). */
static int run_tail(const char *args, char *out, size_t len)
{
	char cmd[1024];
	size_t n = 0;
	FILE *p;
	int st;

	snprintf(cmd, sizeof(cmd), "timeout -s KILL 20 %s/uf-tail %s", g_bin, args);
	p = popen(cmd, "r");
	assert_non_null(p);
	while (n + 1 < len) {
		size_t k = fread(out + n, 1, len - 1 - n, p);
		if (k == 0)
			break;
		n += k;
	}
	out[n] = '\0';
	st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void set_side(struct uf_ring *r, uint32_t id, int side, const int64_t *px, int n)
{
	struct uf_level lv[8];

	for (int i = 0; i < n; i++)
		lv[i] =
		    (struct uf_level){.price = px[i], .shares = 100u * (i + 1), .orders = 1u + i};
	assert_int_equal(uf_ring_image_set_levels(r, id, side, lv, (uint32_t)n, 1, 0), 0);
}

static void test_tail_books_prints_uf_decode_format_sorted_by_symbol(void **state)
{
	static const int64_t msft_b[] = {4100000, 4099900}, msft_a[] = {4100100};
	static const int64_t aapl_b[] = {1284600}, aapl_a[] = {1284700, 1284800, 1284900};
	static const int64_t aa_a[] = {300000};
	char name[64], args[256], out[4096];
	struct uf_ring *r;

	test_ring_name(name, sizeof(name), "books");
	r = make_ring(name);
	uf_ring_image_set_symbol(r, 1, uf_ring_symbol_pack("MSFT"), 100, 'Q', 0);
	uf_ring_image_set_symbol(r, 2, uf_ring_symbol_pack("AAPL"), 100, 'Q', 0);
	uf_ring_image_set_symbol(r, 3, uf_ring_symbol_pack("ZZZ"), 100, 'Q', 0); /* empty book */
	uf_ring_image_set_symbol(r, 4, uf_ring_symbol_pack("AA"), 100, 'N', 0);
	set_side(r, 1, UF_SIDE_BID, msft_b, 2);
	set_side(r, 1, UF_SIDE_ASK, msft_a, 1);
	set_side(r, 2, UF_SIDE_BID, aapl_b, 1);
	set_side(r, 2, UF_SIDE_ASK, aapl_a, 3);
	set_side(r, 4, UF_SIDE_ASK, aa_a, 1);

	snprintf(args, sizeof(args), "--ring %s --books", name);
	assert_int_equal(run_tail(args, out, sizeof(out)), 0);
	assert_string_equal(
	    out, "{\"symbol\":\"AA\",\"bid\":[],\"ask\":[[300000,100,1]]}\n"
	         "{\"symbol\":\"AAPL\",\"bid\":[[1284600,100,1]],\"ask\":[[1284700,100,1],"
	         "[1284800,200,2],[1284900,300,3]]}\n"
	         "{\"symbol\":\"MSFT\",\"bid\":[[4100000,100,1],[4099900,200,2]],"
	         "\"ask\":[[4100100,100,1]]}\n");
	snprintf(args, sizeof(args), "--ring %s --books --depth 1", name);
	assert_int_equal(run_tail(args, out, sizeof(out)), 0);
	assert_string_equal(
	    out, "{\"symbol\":\"AA\",\"bid\":[],\"ask\":[[300000,100,1]]}\n"
	         "{\"symbol\":\"AAPL\",\"bid\":[[1284600,100,1]],\"ask\":[[1284700,100,1]]}\n"
	         "{\"symbol\":\"MSFT\",\"bid\":[[4100000,100,1]],\"ask\":[[4100100,100,1]]}\n");

	/* --top resolves symbols through the directory and shows the best prices */
	snprintf(args, sizeof(args), "--ring %s --top AAPL,NOPE --timeout 0.3 --interval 100",
	         name);
	assert_int_equal(run_tail(args, out, sizeof(out)), 0);
	assert_non_null(strstr(out, "SYMBOL"));
	assert_non_null(strstr(out, "128.4600"));
	assert_non_null(strstr(out, "128.4700"));
	assert_non_null(strstr(out, "NOPE     (not in the directory yet)"));
	uf_ring_close(r);
	uf_ring_unlink(name, NULL);
}

/* A book the image flags may be wrong says so in its line ("stale":true), even an empty one
 * (the day may have orders there: a line that says so, not no line), and so does uf-tail on
 * stderr; a side cut at the image's depth says "truncated":true when more levels
 * were asked than the image holds (every level, or --depth beyond it), not when the asked
 * depth fits. A sound, complete book keeps the exact `uf-decode books` line. */
static void test_tail_books_marks_stale_and_cut_books(void **state)
{
	static const int64_t ok_b[] = {100}, bad_b[] = {200}, deep_a[] = {10, 11, 12, 13, 14, 15};
	char name[64], args[512], out[4096], errpath[128];
	struct uf_ring *r;

	test_ring_name(name, sizeof(name), "marks");
	r = make_ring(name); /* image depth 5 */
	uf_ring_image_set_symbol(r, 1, uf_ring_symbol_pack("OK"), 100, 'Q', 0);
	uf_ring_image_set_symbol(r, 2, uf_ring_symbol_pack("BAD"), 100, 'Q', 0);
	uf_ring_image_set_symbol(r, 3, uf_ring_symbol_pack("DEEP"), 100, 'Q', 0);
	uf_ring_image_set_symbol(r, 4, uf_ring_symbol_pack("GONE"), 100, 'Q', 0); /* empty */
	uf_ring_image_set_symbol(r, 5, uf_ring_symbol_pack("NONE"), 100, 'Q', 0); /* empty */
	set_side(r, 1, UF_SIDE_BID, ok_b, 1);
	set_side(r, 2, UF_SIDE_BID, bad_b, 1);
	set_side(r, 3, UF_SIDE_ASK, deep_a, 6); /* one more than the image holds */
	assert_int_equal(uf_ring_image_set_stale(r, 2, 1, 1), 0);
	assert_int_equal(uf_ring_image_set_stale(r, 4, 1, 1), 0);
	/* in doubt, but no symbol and no level: a book nobody knows, not printed */
	set_side(r, 6, UF_SIDE_BID, ok_b, 1);
	set_side(r, 6, UF_SIDE_BID, ok_b, 0);
	assert_int_equal(uf_ring_image_set_stale(r, 6, 1, 1), 0);

	snprintf(errpath, sizeof(errpath), "/tmp/uf-tail-marks-%d.err", (int)getpid());
	snprintf(args, sizeof(args), "--ring %s --books 2>%s", name, errpath);
	assert_int_equal(run_tail(args, out, sizeof(out)), 0);
	assert_string_equal(out, "{\"symbol\":\"BAD\",\"bid\":[[200,100,1]],\"ask\":[],"
	                         "\"stale\":true}\n"
	                         "{\"symbol\":\"DEEP\",\"bid\":[],\"ask\":[[10,100,1],[11,200,2],"
	                         "[12,300,3],[13,400,4],[14,500,5]],\"truncated\":true}\n"
	                         "{\"symbol\":\"GONE\",\"bid\":[],\"ask\":[],\"stale\":true}\n"
	                         "{\"symbol\":\"OK\",\"bid\":[[100,100,1]],\"ask\":[]}\n");
	FILE *f = fopen(errpath, "r");
	assert_non_null(f);
	size_t n = fread(out, 1, sizeof(out) - 1, f);
	out[n] = '\0';
	fclose(f);
	unlink(errpath);
	assert_non_null(strstr(out, "2 of 4 books are stale"));
	/* the asked depth fits in the image: nothing is missing from the line */
	snprintf(args, sizeof(args), "--ring %s --books --depth 5 2>/dev/null", name);
	assert_int_equal(run_tail(args, out, sizeof(out)), 0);
	assert_null(strstr(out, "truncated"));
	assert_non_null(strstr(out, "\"stale\":true"));
	snprintf(args, sizeof(args), "--ring %s --books --depth 6 2>/dev/null", name);
	assert_int_equal(run_tail(args, out, sizeof(out)), 0);
	assert_non_null(strstr(out, "[14,500,5]],\"truncated\":true}"));
	uf_ring_close(r);
	uf_ring_unlink(name, NULL);
}

static void test_tail_prints_records_and_ends_cleanly(void **state)
{
	char name[64], args[256], out[16384];
	struct uf_record recs[5];
	struct uf_ring *r;
	uint64_t t0;
	int lines = 0;

	test_ring_name(name, sizeof(name), "recs");
	r = make_ring(name);
	for (int i = 0; i < 5; i++)
		test_rec_make(&recs[i], (uint64_t)i);
	assert_int_equal(uf_ring_publish(r, recs, 5), 0);

	/* --count bounds it */
	snprintf(args, sizeof(args), "--ring %s --oldest --json --count 3", name);
	assert_int_equal(run_tail(args, out, sizeof(out)), 0);
	for (char *p = out; (p = strchr(p, '\n')); p++)
		lines++;
	assert_int_equal(lines, 3);
	{
		const char *want = "{\"seq\":0,\"kind\":\"level\",\"instrument\":0,";
		assert_true(strncmp(out, want, strlen(want)) == 0);
	}
	assert_non_null(strstr(out, "\"seq\":2,"));
	assert_non_null(strstr(out, "\"feed_seq\":1,"));

	/* --timeout bounds it when nothing comes */
	t0 = uf_now_mono_ns();
	snprintf(args, sizeof(args), "--ring %s --timeout 0.3", name);
	assert_int_equal(run_tail(args, out, sizeof(out)), 0);
	assert_string_equal(out, "");
	assert_true(uf_now_mono_ns() - t0 < 5000000000ull);

	/* a closed ring: everything is drained, then a clean exit */
	uf_ring_close(r);
	snprintf(args, sizeof(args), "--ring %s --oldest", name);
	assert_int_equal(run_tail(args, out, sizeof(out)), 0);
	lines = 0;
	for (char *p = out; (p = strchr(p, '\n')); p++)
		lines++;
	assert_int_equal(lines, 5);
	assert_non_null(strstr(out, "level"));

	snprintf(args, sizeof(args), "--ring %s --info", name);
	assert_int_equal(run_tail(args, out, sizeof(out)), 0);
	assert_non_null(strstr(out, "\"closed\":1"));
	assert_non_null(strstr(out, "\"tail\":5"));
	uf_ring_unlink(name, NULL);
}

/* --info names the venue and its trading date when the image's market entry (instrument 0)
 * holds a UF_STATUS_VENUE (an IEX ring), and says it does not know them otherwise. */
static void test_tail_info_shows_the_venue_and_trading_date(void **state)
{
	char name[64], args[256], out[4096];
	struct uf_ring *r;
	(void)state;

	test_ring_name(name, sizeof(name), "venue");
	r = make_ring(name);
	snprintf(args, sizeof(args), "--ring %s --info", name);
	assert_int_equal(run_tail(args, out, sizeof(out)), 0);
	assert_non_null(strstr(out, "\"venue\":\"\",\"trading_date\":0}"));
	int64_t mic;
	memcpy(&mic, "IEXG    ", 8);
	assert_int_equal(uf_ring_image_begin(r, 0), 0);
	assert_int_equal(uf_ring_image_set_status(r, 0, UF_STATUS_VENUE, mic, 20170425, 1, 0), 0);
	uf_ring_image_end(r, 0);
	uf_ring_image_commit(r);
	assert_int_equal(run_tail(args, out, sizeof(out)), 0);
	assert_non_null(strstr(out, "\"venue\":\"IEXG\",\"trading_date\":20170425}"));
	uf_ring_close(r);
	uf_ring_unlink(name, NULL);
}

/* --from-start prints every record of the day from the ring's journal (the ring lapped 4
 * times), each sequence once and in order, then the live ring; without a journal it says so. */
static void test_tail_from_start_reads_the_journal_then_the_ring(void **state)
{
	char name[64], args[256], dir[64] = "/tmp/uf_tail_journal.XXXXXX", path[512];
	static char out[4 << 20]; /* 5000 JSON lines */
	struct uf_journal_options jo;
	struct uf_journal *j = NULL;
	struct uf_record recs[64];
	struct uf_ring *r;
	uint64_t want = 0;
	char err[256] = "";

	(void)state;
	assert_non_null(mkdtemp(dir));
	test_ring_name(name, sizeof(name), "jtail");
	r = make_ring(name);
	snprintf(args, sizeof(args), "--ring %s --from-start --count 1 --timeout 2", name);
	assert_int_equal(run_tail(args, out, sizeof(out)), 1); /* no journal: an error */
	memset(&jo, 0, sizeof(jo));
	jo.dir = dir;
	jo.idle_us = 50;
	assert_int_equal(uf_journal_start(r, &jo, &j, err, sizeof(err)), 0);
	for (uint64_t s = 0; s < 5000; s += 50) {
		for (int i = 0; i < 50; i++)
			test_rec_make(&recs[i], s + (uint64_t)i);
		assert_int_equal(uf_ring_publish(r, recs, 50), 0);
		assert_int_equal(uf_journal_sync(j, 5000000000ll), 0); /* never lapped */
	}
	snprintf(args, sizeof(args), "--ring %s --from-start --json --count 5000", name);
	assert_int_equal(run_tail(args, out, sizeof(out)), 0);
	for (char *p = out; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		char key[48];
		int k = snprintf(key, sizeof(key), "{\"seq\":%llu,", (unsigned long long)want);
		if (strncmp(p, key, (size_t)k) != 0)
			fail_msg("line %llu: %.80s", (unsigned long long)want, p);
		want++;
	}
	assert_int_equal(want, 5000);
	uf_journal_stop(j);
	uf_ring_close(r);
	uf_ring_unlink(name, NULL);
	{ /* the journal's file(s), then the directory */
		DIR *dd = opendir(dir);
		struct dirent *de;
		while (dd && (de = readdir(dd)))
			if (de->d_name[0] != '.') {
				snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
				unlink(path);
			}
		if (dd)
			closedir(dd);
	}
	assert_int_equal(rmdir(dir), 0);
}

/* Waits (bounded, 10 s) until process `pid` holds a consumer slot of ring `r`, and when
 * `asleep`, until that slot says it sleeps in FUTEX_WAIT (one reading: a sleeper leaves the
 * wait for a moment every 50 ms slice). Fails the test on time out. */
static void tail_wait_attached(struct uf_ring *r, pid_t pid, int asleep)
{
	const struct uf_ring_cslot *slots = (const struct uf_ring_cslot *)(r->ct + 1);
	uint64_t end = uf_now_mono_ns() + 10000000000ull;
	for (;;) {
		for (uint32_t i = 0; i < r->ct->nslots; i++)
			if (uf_load_relaxed_u32(&slots[i].pid) == (uint32_t)pid &&
			    (!asleep || uf_load_relaxed_u32(&slots[i].flags) == 1))
				return;
		if (uf_now_mono_ns() > end)
			fail_msg("uf-tail %d never %s", (int)pid,
			         asleep ? "slept in the ring's futex wait" : "attached");
		usleep(1000);
	}
}

static void test_tail_ends_cleanly_on_ctrl_c(void **state)
{
	char name[64], path[600];
	struct uf_ring *r;
	uint64_t t0;
	pid_t pid;
	int st;

	test_ring_name(name, sizeof(name), "sigint");
	r = make_ring(name);
	snprintf(path, sizeof(path), "%s/uf-tail", g_bin);
	for (int mode = 0; mode < 2; mode++) { /* records, then --top */
		pid = uf_test_fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			int fd = open("/dev/null", O_WRONLY);
			dup2(fd, 1);
			if (mode == 0)
				execl(path, "uf-tail", "--ring", name, "--timeout", "20",
				      (char *)NULL);
			else
				execl(path, "uf-tail", "--ring", name, "--top", "AAPL", "--timeout",
				      "20", (char *)NULL);
			_exit(127);
		}
		/* attached (its signal handler is in place before it attaches), and for the records
		 * mode seen asleep in the futex wait once, which SIGINT must cut short */
		tail_wait_attached(r, pid, mode == 0);
		t0 = uf_now_mono_ns();
		kill(pid, SIGINT);
		st = test_wait_child(pid, 5000);
		assert_true(WIFEXITED(st));
		assert_int_equal(WEXITSTATUS(st), 0);
		assert_true(uf_now_mono_ns() - t0 < 2000000000ull); /* promptly, not at --timeout */
	}
	uf_ring_close(r);
	uf_ring_unlink(name, NULL);
}

static void test_tail_reports_errors(void **state)
{
	char out[1024];

	assert_int_equal(run_tail("--ring no_such_ring_here 2>/dev/null", out, sizeof(out)), 1);
	assert_int_equal(run_tail("2>/dev/null", out, sizeof(out)), 2);
	assert_int_equal(run_tail("--ring x --depth 0 2>/dev/null", out, sizeof(out)), 2);
	assert_int_equal(run_tail("--ring 'bad/name' 2>/dev/null", out, sizeof(out)), 1);
}

int main(void)
{
	const char *env = getenv("UF_BIN_DIR");
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_tail_books_prints_uf_decode_format_sorted_by_symbol),
	    cmocka_unit_test(test_tail_books_marks_stale_and_cut_books),
	    cmocka_unit_test(test_tail_prints_records_and_ends_cleanly),
	    cmocka_unit_test(test_tail_info_shows_the_venue_and_trading_date),
	    cmocka_unit_test(test_tail_from_start_reads_the_journal_then_the_ring),
	    cmocka_unit_test(test_tail_ends_cleanly_on_ctrl_c),
	    cmocka_unit_test(test_tail_reports_errors),
	};

	snprintf(g_bin, sizeof(g_bin), "%s", env && env[0] ? env : UF_BIN_DIR);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
