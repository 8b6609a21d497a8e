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

#include <dirent.h>

#include "test/common/uf_test_daemon.h"
#include "test/common/uf_test_dir.h"
#include "test/common/uf_test_promtool.h"

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
	uf_test_feed_unique(&feed, 2, 78, 47000, 500, "jrnl");
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

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_daemon_journal_holds_the_day_and_cuts_a_torn_tail,
	                                    setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
