/* The daemon with ring.journal (docs/journal.md), end to end: uf-replay sends a generated day
 * through a 65536-record ring (with a smaller one a writer descheduled on a loaded 2-CPU host
 * is lapped: holes, which test_ring_journal covers); the journal holds every record
 * (GET /status, /metrics through promtool), `uf-tail --from-start` prints the whole day from
 * sequence 0; a journal file torn mid-record while the daemon is down is cut at the next
 * start (counted in /status, logged) and the new run's records go to its new file. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
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

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "ring/ufbook.h"
#include "ring/ufconsumer.h"
#include "test/common/uf_test_daemon.h"
#include "test/common/uf_test_dir.h"
#include "test/common/uf_test_promtool.h"
#include "test/feed/ft_snap_settled.h"

static char tmpdir[64];
static pid_t g_daemon = -1; /* killed by the teardown when a check failed mid-way */

static int setup(void **state)
{
	(void)state;
	return uf_test_daemon_dir(tmpdir, sizeof(tmpdir), "journal");
}

static int teardown(void **state)
{
	(void)state;
	return uf_test_daemon_cleanup(tmpdir, &g_daemon);
}

/* feeds[0].ring.journal.<key> of GET /status (-1 when absent). */
static int64_t journal_field(uint16_t port, const char *key)
{
	const char *body;
	json_error_t je;
	json_t *root, *v;
	int64_t out = -1;

	assert_int_equal(uf_test_http_get(port, "/status", &body), 200);
	root = json_loads(body, 0, &je);
	assert_non_null(root);
	v = json_object_get(
	    json_object_get(json_array_get(json_object_get(root, "feeds"), 0), "ring"), "journal");
	if (v && json_is_integer(json_object_get(v, key)))
		out = json_integer_value(json_object_get(v, key));
	else if (v && json_is_boolean(json_object_get(v, key)))
		out = json_is_true(json_object_get(v, key));
	json_decref(root);
	return out;
}

/* The daemon's /status body (ft_snap_wait_settled_status), NULL when not 200. */
static const char *status_body(void *ctx)
{
	const char *body;
	return uf_test_http_get(*(const uint16_t *)ctx, "/status", &body) == 200 ? body : NULL;
}

static int64_t ring_sequence(uint16_t port)
{
	const char *body;
	json_error_t je;
	json_t *root;
	int64_t out;

	assert_int_equal(uf_test_http_get(port, "/status", &body), 200);
	root = json_loads(body, 0, &je);
	assert_non_null(root);
	out = json_integer_value(json_object_get(
	    json_object_get(json_array_get(json_object_get(root, "feeds"), 0), "ring"),
	    "sequence"));
	json_decref(root);
	return out;
}

/* The one journal file in `dir` (the first run's), into path. */
static void only_file(const char *dir, char *path, size_t len)
{
	struct dirent *de;
	DIR *d = opendir(dir);
	int n = 0;

	assert_non_null(d);
	while ((de = readdir(d)))
		if (strstr(de->d_name, ".ufj")) {
			snprintf(path, len, "%s/%s", dir, de->d_name);
			n++;
		}
	closedir(d);
	assert_int_equal(n, 1);
}

static void test_daemon_journal_holds_the_day_and_cuts_a_torn_tail(void **state)
{
	char day[256], jdir[128], json[2048], lines[512], file[512], count[32], tailout[256];
	struct uf_test_feed feed = {.name = "jrnl", .capacity = 65536, .max_orders = 1000000};
	const char *body;
	struct stat st;
	int64_t seq, rec;
	uint64_t end;
	pid_t daemon, replay;
	uint16_t port;
	int n = 0;

	(void)state;
	snprintf(day, sizeof(day), "%s/day.itch", tmpdir);
	snprintf(jdir, sizeof(jdir), "%s/journal", tmpdir);
	assert_int_equal(mkdir(jdir, 0755), 0);
	uf_test_gen_day(tmpdir, day, "20000", "20", "5");
	uf_test_feed_unique(&feed, 2, 78, 27000, 500, "jrnl");
	for (int i = 0; i < feed.nlines; i++)
		n += snprintf(lines + n, sizeof(lines) - (size_t)n,
		              "%s{\"name\":\"%c\",\"group\":\"%s\",\"port\":%d,\"interface\":"
		              "\"127.0.0.1\"}",
		              i ? "," : "", 'A' + i, feed.group[i], feed.port[i]);
	snprintf(json, sizeof(json),
	         "{\"status\":{\"listen\":\"127.0.0.1:0\"},\"log\":{\"journal\":\"never\"},"
	         "\"feeds\":[{\"name\":\"jrnl\",\"backend\":\"epoll\",\"cpu\":-1,\"lines\":[%s],"
	         "\"ring\":{\"name\":\"%s\",\"capacity\":65536,\"journal\":{\"dir\":\"%s\","
	         "\"fsync\":\"interval\",\"interval_ms\":100,\"keep_days\":3}},"
	         "\"book\":{\"max_orders\":1000000}}]}",
	         lines, feed.ring, jdir);
	uf_test_write_file(tmpdir, "uf.json", json);
	{ /* --check-config accepts it */
		char cfg[256];
		snprintf(cfg, sizeof(cfg), "%s/uf.json", tmpdir);
		const char *argv[] = {uf_test_bin("uringfeed"), "--check-config", cfg, NULL};
		assert_int_equal(uf_test_run_tool(tmpdir, argv, "check", 20000), 0);
	}

	daemon = g_daemon = uf_test_daemon_start(tmpdir, uf_test_bin("uringfeed"), NULL, 0);
	port = uf_test_status_port(tmpdir);
	uf_test_wait_log(tmpdir, "running;", 10000);
	assert_int_equal(journal_field(port, "records"), 0);
	replay = uf_test_replay_start(tmpdir, day, &feed, 2, "20000", NULL);
	assert_int_equal(uf_test_wait_exit(replay, 30000, "uf-replay"), 0);
	/* the day is in: wait (bounded) until the journal holds every record of the ring */
	end = uf_test_now_ms() + 20000;
	do {
		seq = ring_sequence(port);
		rec = journal_field(port, "records");
		if (seq > 20000 && rec == seq && journal_field(port, "lag") == 0)
			break;
		usleep(20000);
	} while (uf_test_now_ms() < end);
	assert_true(seq > 20000); /* every message makes at least one record */
	if (rec != seq)
		fail_msg("journal: %lld records of %lld, holes %lld (%lld records), laps %lld",
		         (long long)rec, (long long)seq, (long long)journal_field(port, "holes"),
		         (long long)journal_field(port, "hole_records"),
		         (long long)journal_field(port, "laps"));
	assert_int_equal(journal_field(port, "holes"), 0);
	assert_int_equal(journal_field(port, "write_errors"), 0);
	assert_int_equal(journal_field(port, "failing"), 0);
	assert_true(journal_field(port, "fsyncs") > 0);
	assert_int_equal(uf_test_http_get(port, "/metrics", &body), 200);
	{
		char want[160], out[8192];
		snprintf(want, sizeof(want),
		         "uringfeed_journal_records_total{feed=\"jrnl\",ring=\"%s\"}", feed.ring);
		assert_true(uf_test_series(body, want) == (double)seq);
		if (uf_test_promtool_check_metrics_within(body, out, sizeof(out), 10000) != 0)
			fail_msg("promtool: %s", out);
	}

	/* uf-tail --from-start: the whole day from sequence 0, each once, in order */
	snprintf(count, sizeof(count), "%lld", (long long)seq);
	{
		const char *argv[] = {uf_test_bin("uf-tail"),
		                      "--ring",
		                      feed.ring,
		                      "--from-start",
		                      "--json",
		                      "--count",
		                      count,
		                      NULL};
		static char out[16 << 20];
		char key[48];
		int64_t want = 0;
		FILE *f;
		assert_int_equal(uf_test_run_tool(tmpdir, argv, "tail", 30000), 0);
		snprintf(tailout, sizeof(tailout), "%s/tail.out", tmpdir);
		f = fopen(tailout, "r");
		assert_non_null(f);
		while (fgets(out, sizeof(out), f)) {
			int k = snprintf(key, sizeof(key), "{\"seq\":%lld,", (long long)want);
			if (strncmp(out, key, (size_t)k) != 0)
				fail_msg("uf-tail line %lld: %.80s", (long long)want, out);
			want++;
		}
		fclose(f);
		assert_int_equal(want, seq);
	}

	assert_int_equal(kill(daemon, SIGTERM), 0);
	assert_int_equal(uf_test_wait_exit(daemon, 15000, "uringfeed after SIGTERM"), 0);

	/* a torn tail, as a crash in the middle of a write leaves it */
	only_file(jdir, file, sizeof(file));
	assert_int_equal(stat(file, &st), 0);
	assert_int_equal((st.st_size - 128) % 80, 0);
	assert_int_equal((st.st_size - 128) / 80, seq);
	assert_int_equal(truncate(file, st.st_size - 33), 0);

	{ /* the new daemon's log: the old one's "serving" line must not be read again */
		char a[128], b[128];
		snprintf(a, sizeof(a), "%s/daemon.err", tmpdir);
		snprintf(b, sizeof(b), "%s/daemon-1.err", tmpdir);
		assert_int_equal(rename(a, b), 0);
	}
	daemon = g_daemon = uf_test_daemon_start(tmpdir, uf_test_bin("uringfeed"), NULL, 0);
	port = uf_test_status_port(tmpdir);
	assert_int_equal(journal_field(port, "torn_cut"), 1);
	uf_test_wait_log(tmpdir, "cut a torn tail of 47 bytes", 5000);
	assert_int_equal(stat(file, &st), 0);
	assert_int_equal(st.st_size, 128 + 80 * (seq - 1)); /* after the last whole record */
	assert_int_equal(kill(daemon, SIGTERM), 0);
	assert_int_equal(uf_test_wait_exit(daemon, 15000, "uringfeed after SIGTERM"), 0);
	g_daemon = -1;
}

/* A free ephemeral port of `type` on loopback (bound, read, closed: the tool binds it next). */
static int free_port(int type)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, type, 0), port;

	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	port = ntohs(a.sin_port);
	close(fd);
	return port;
}

/* The feed's config: the ring journal in `jdir`, depth 10; with a snapshot server and a
 * re-request server when snap_port is not 0 (the restarted daemon loads the state of the day
 * from uf-replay's GLIMPSE server). */
static void restart_config(const struct uf_test_feed *feed, const char *jdir, int snap_port,
                           int rr_port)
{
	char json[2048], lines[512], extra[256] = "";
	int n = 0;

	for (int i = 0; i < feed->nlines; i++)
		n += snprintf(lines + n, sizeof(lines) - (size_t)n,
		              "%s{\"name\":\"%c\",\"group\":\"%s\",\"port\":%d,\"interface\":"
		              "\"127.0.0.1\"}",
		              i ? "," : "", 'A' + i, feed->group[i], feed->port[i]);
	if (snap_port)
		snprintf(extra, sizeof(extra),
		         "\"recovery\":{\"server\":\"127.0.0.1:%d\"},\"snapshot\":{\"server\":"
		         "\"127.0.0.1:%d\",\"username\":\"replay\",\"password\":\"replay\"},",
		         rr_port, snap_port);
	snprintf(json, sizeof(json),
	         "{\"status\":{\"listen\":\"127.0.0.1:0\"},\"log\":{\"journal\":\"never\","
	         "\"level\":\"info\"},\"feeds\":[{\"name\":\"jrst\",\"backend\":\"epoll\",\"cpu\":-"
	         "1,\"lines\":[%s],%s"
	         "\"ring\":{\"name\":\"%s\",\"capacity\":65536,\"journal\":{\"dir\":\"%s\","
	         "\"fsync\":\"none\"}},"
	         "\"book\":{\"depth\":10,\"max_orders\":1000000}}]}",
	         lines, extra, feed->ring, jdir);
	uf_test_write_file(tmpdir, "uf.json", json);
}

/* The day's books as a consumer that read it from the journal built them, against the book
 * image of the ring (the restarted daemon's): levels the image holds, flags, trades. */
struct cmp {
	uf_book_builder_t *b;
	uint32_t books;
	uint32_t stale; /* books the image flags stale (the consumer must flag the same) */
};

static int cmp_one(const struct uf_book_snapshot *img, void *arg)
{
	struct cmp *x = arg;
	struct uf_book_snapshot got;

	if (uf_book_builder_snapshot(x->b, img->instrument, &got) < 0) {
		if (img->nbid || img->nask || img->trades)
			fail_msg("instrument %u: in the image, not in the consumer's books",
			         img->instrument);
		return 0;
	}
	if (!(img->flags & UF_BOOKF_TRUNCATED_BID))
		assert_int_equal(got.nbid, img->nbid);
	if (!(img->flags & UF_BOOKF_TRUNCATED_ASK))
		assert_int_equal(got.nask, img->nask);
	assert_true(got.nbid >= img->nbid && got.nask >= img->nask);
	assert_memory_equal(got.bid, img->bid, img->nbid * sizeof(img->bid[0]));
	assert_memory_equal(got.ask, img->ask, img->nask * sizeof(img->ask[0]));
	assert_int_equal(got.flags & UF_BOOKF_STALE, img->flags & UF_BOOKF_STALE);
	x->stale += (img->flags & UF_BOOKF_STALE) != 0;
	x->books++;
	return 0;
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	static char buf[2][1 << 20];
	static int k;
	char *b = buf[k++ & 1];
	size_t n;

	if (!f)
		fail_msg("cannot read %s", path);
	n = fread(b, 1, sizeof(buf[0]) - 1, f);
	b[n] = 0;
	fclose(f);
	return b;
}

/* Issue 25: "a restarted daemon must continue the journal after the last whole record". A
 * day goes out; the daemon is SIGKILLed a third of the way in; its journal file gets a torn
 * last record (a crash mid-write); the restarted daemon (loading the state of the day from a
 * GLIMPSE snapshot) starts its ring at the sequence after the last whole record and links its
 * journal file to the first run's. Then `uf-tail --from-start` prints every record of the day
 * once, in order, from 0 (the torn record cut, its sequence the new run's first), a consumer
 * from the journal reads the same sequence and ends with the ring's books, and the books
 * equal `uf-decode books` of the day. */
static void test_daemon_journal_continues_the_day_across_a_sigkill(void **state)
{
	char day[256], jdir[128], file[512], path[512], rr_s[16], count[32];
	struct uf_test_feed feed = {.name = "jrst", .capacity = 65536, .max_orders = 1000000};
	struct stat st;
	int64_t seq, first_seq, whole;
	uint64_t end;
	pid_t daemon, replay;
	uint16_t port;
	struct ft_snap_settle settle = {0, 0, 0};
	int snap_port = 0, rr_port;

	(void)state;
	snprintf(day, sizeof(day), "%s/day.itch", tmpdir);
	snprintf(jdir, sizeof(jdir), "%s/journal", tmpdir);
	assert_int_equal(mkdir(jdir, 0755), 0);
	uf_test_gen_day(tmpdir, day, "30000", "20", "11");
	{ /* the reference: the books of the day file */
		const char *argv[] = {
		    uf_test_bin("uf-decode"), "books", day, "--depth", "10", NULL};
		assert_int_equal(uf_test_run_tool(tmpdir, argv, "ref", 30000), 0);
	}
	uf_test_feed_unique(&feed, 2, 77, 29000, 400, "jrst");
	restart_config(&feed, jdir, 0, 0);
	daemon = g_daemon = uf_test_daemon_start(tmpdir, uf_test_bin("uringfeed"), NULL, 0);
	port = uf_test_status_port(tmpdir);
	uf_test_wait_log(tmpdir, "running;", 10000);

	/* uf-replay with a GLIMPSE server and a re-request server for the restarted daemon */
	rr_port = free_port(SOCK_DGRAM);
	snprintf(rr_s, sizeof(rr_s), "%d", rr_port);
	{
		char a[64], b[64];
		snprintf(a, sizeof(a), "%s:%d", feed.group[0], feed.port[0]);
		snprintf(b, sizeof(b), "%s:%d", feed.group[1], feed.port[1]);
		const char *argv[] = {uf_test_bin("uf-replay"),
		                      "--in",
		                      day,
		                      "--a",
		                      a,
		                      "--b",
		                      b,
		                      "--interface",
		                      "127.0.0.1",
		                      "--rate",
		                      "6000",
		                      "--serve-snapshot",
		                      "0",
		                      "--serve-rerequests",
		                      rr_s,
		                      "--linger",
		                      "3",
		                      NULL};
		replay = uf_test_spawn(tmpdir, argv, "replay.out", "replay.err", NULL, 0);
	}
	end = uf_test_now_ms() + 20000;
	while (!snap_port && uf_test_now_ms() < end) {
		char err[4096];
		const char *p;
		uf_test_read_file(tmpdir, "replay.err", err, sizeof(err));
		p = strstr(err, "snapshot server listening on 127.0.0.1:");
		if (p)
			snap_port = atoi(p + strlen("snapshot server listening on 127.0.0.1:"));
		else
			usleep(10000);
	}
	assert_true(snap_port > 0);

	/* a third of the day in the ring: SIGKILL, no goodbye */
	end = uf_test_now_ms() + 30000;
	while ((seq = ring_sequence(port)) < 10000 && uf_test_now_ms() < end)
		usleep(5000);
	assert_true(seq >= 10000);
	assert_int_equal(kill(daemon, SIGKILL), 0);
	assert_int_equal(uf_test_wait_exit(daemon, 15000, "uringfeed after SIGKILL"),
	                 128 + SIGKILL);

	/* a torn last record, as a crash in the middle of a write leaves it */
	only_file(jdir, file, sizeof(file));
	assert_int_equal(stat(file, &st), 0);
	assert_true(st.st_size > 128 + 80 * 1000);
	assert_int_equal(truncate(file, st.st_size - ((st.st_size - 128) % 80) - 33), 0);
	whole = (st.st_size - 128) / 80 - 1; /* entries before the torn one */

	snprintf(path, sizeof(path), "%s/daemon.err", tmpdir);
	{
		char b[512];
		snprintf(b, sizeof(b), "%s/daemon-1.err", tmpdir);
		assert_int_equal(rename(path, b), 0);
	}
	restart_config(&feed, jdir, snap_port, rr_port);
	daemon = g_daemon = uf_test_daemon_start(tmpdir, uf_test_bin("uringfeed"), NULL, 0);
	port = uf_test_status_port(tmpdir);
	uf_test_wait_log(tmpdir, "cut a torn tail of", 10000);
	{ /* "journal R: generation G continues the day of generation P at sequence N" */
		const char *p =
		    strstr(uf_test_wait_log(tmpdir, "continues the day of generation", 10000),
		           "continues the day of generation");
		p = strstr(p, " at sequence ");
		assert_non_null(p);
		first_seq = strtoll(p + strlen(" at sequence "), NULL, 10);
	}
	/* after the last whole record: the torn one (and a tail the kill left, if any) cut */
	assert_true(first_seq > 1000 && first_seq <= whole);
	assert_true(journal_field(port, "torn_cut") >= 1);
	assert_true(ring_sequence(port) >= first_seq);
	uf_test_wait_log(tmpdir, "snapshot loaded", 30000);

	/* the rest of the day; uf-replay lingers 3 s for re-requests; then the snapshot settles
	 * (a re-load of books the restart's load flagged uncertain is over) */
	assert_int_equal(uf_test_wait_exit(replay, 60000, "uf-replay"), 0);
	assert_int_equal(ft_snap_wait_settled_status(status_body, &port,
	                                             UF_FEED_DEFAULT_SNAPSHOT_RELOAD_UNCERTAIN,
	                                             60000, &settle),
	                 0);
	end = uf_test_now_ms() + 20000;
	do {
		seq = ring_sequence(port);
		if (journal_field(port, "written_seq") == seq && journal_field(port, "lag") == 0)
			break;
		usleep(20000);
	} while (uf_test_now_ms() < end);
	assert_int_equal(journal_field(port, "written_seq"), seq);
	assert_int_equal(journal_field(port, "holes"), 0);
	assert_true(seq > first_seq + 20000);
	fprintf(stderr,
	        "first run: %lld records in the journal; the restart went on at %lld; the "
	        "day: %lld records\n",
	        (long long)whole, (long long)first_seq, (long long)seq);

	/* the books: the file's */
	{
		const char *argv[] = {
		    uf_test_bin("uf-tail"), "--ring", feed.ring, "--books", "--depth", "10", NULL};
		char a[256], b[256];
		assert_int_equal(uf_test_run_tool(tmpdir, argv, "books", 10000), 0);
		snprintf(a, sizeof(a), "%s/books.out", tmpdir);
		snprintf(b, sizeof(b), "%s/ref.out", tmpdir);
		const char *got = slurp(a), *want = slurp(b);
		assert_true(strlen(want) > 100);
		if (strcmp(got, want) != 0)
			fail_msg(
			    "books after the restart differ from uf-decode's:\n%.600s\nvs\n%.600s",
			    got, want);
	}

	/* uf-tail --from-start: the whole day, 0 .. seq - 1, each once, in order */
	snprintf(count, sizeof(count), "%lld", (long long)seq);
	{
		const char *argv[] = {uf_test_bin("uf-tail"),
		                      "--ring",
		                      feed.ring,
		                      "--from-start",
		                      "--json",
		                      "--count",
		                      count,
		                      NULL};
		static char line[4096];
		char key[48], out[256];
		int64_t want = 0;
		FILE *f;
		assert_int_equal(uf_test_run_tool(tmpdir, argv, "tail", 30000), 0);
		snprintf(out, sizeof(out), "%s/tail.out", tmpdir);
		f = fopen(out, "r");
		assert_non_null(f);
		while (fgets(line, sizeof(line), f)) {
			int k = snprintf(key, sizeof(key), "{\"seq\":%lld,", (long long)want);
			if (strncmp(line, key, (size_t)k) != 0)
				fail_msg("uf-tail line %lld: %.80s", (long long)want, line);
			want++;
		}
		fclose(f);
		assert_int_equal(want, seq);
	}

	/* a consumer from the journal: the same sequence, and the ring's books */
	{
		struct uf_consumer_options o;
		uf_consumer_t *c;
		uf_book_builder_t *b;
		struct uf_record recs[256];
		struct cmp x = {0};
		char err[256];
		uint64_t next = 0;

		uf_consumer_options_init(&o);
		o.start = UF_CONSUMER_START_JOURNAL;
		if (uf_consumer_attach(feed.ring, &o, &c, err, sizeof(err)) < 0)
			fail_msg("attach: %s", err);
		assert_int_equal(uf_book_builder_create(4096, &b), 0);
		end = uf_test_now_ms() + 30000;
		while (next < (uint64_t)seq && uf_test_now_ms() < end) {
			uint64_t first = 0;
			int n = uf_consumer_read(c, recs, 256, &first);
			if (n == -EAGAIN) {
				usleep(1000);
				continue;
			}
			if (n < 0)
				fail_msg("read at %llu: %s", (unsigned long long)next,
				         uf_consumer_strerror(n));
			if (first != next)
				fail_msg("sequence %llu after %llu", (unsigned long long)first,
				         (unsigned long long)next);
			for (int i = 0; i < n; i++)
				assert_true(
				    uf_book_builder_apply(b, &recs[i], first + (uint64_t)i) >= 0);
			next += (uint64_t)n;
		}
		assert_int_equal(next, seq);
		x.b = b;
		assert_int_equal(uf_consumer_snapshot_all(c, cmp_one, &x), 0);
		assert_true(x.books >= 10);
		/* No book stale: nothing in this day is lost for good, and books a snapshot load
		 * flagged uncertain were re-loaded (unless the re-loads ran out: ft_snap_stale_ok,
		 * the one rule of the snapshot tests). */
		assert_true(ft_snap_stale_ok(&settle, x.stale));
		uf_book_builder_destroy(b);
		uf_consumer_detach(c);
	}

	assert_int_equal(kill(daemon, SIGTERM), 0);
	assert_int_equal(uf_test_wait_exit(daemon, 15000, "uringfeed after SIGTERM"), 0);
	g_daemon = -1;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_daemon_journal_holds_the_day_and_cuts_a_torn_tail,
	                                    setup, teardown),
	    cmocka_unit_test_setup_teardown(test_daemon_journal_continues_the_day_across_a_sigkill,
	                                    setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
