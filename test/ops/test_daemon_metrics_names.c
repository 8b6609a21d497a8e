/* The alert rules and the dashboard name only metrics the daemon really exports: a live
 * daemon (epoll feed, two lines), a consumer attached (uf-tail), a short replay of a
 * generated day (so the session, line ages, histograms and consumer families all have
 * samples); then every uringfeed_* / process_* name used in
 * configs/prometheus/uringfeed-alerts.yml and configs/grafana/uringfeed-dashboard.json must
 * be in that scrape: as a sample's name (`_bucket`, `_sum`, `_count` are matched as the
 * sample names they are), or as a family's name in a `# TYPE` line (a histogram named
 * without its suffix). So the monitoring cannot drift from the exporter again. The checker
 * itself must report a name that is not exported (uringfeed_session_open, the name the rules
 * used before). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "test/common/uf_test_daemon.h"
#include "test/common/uf_test_dir.h"

static char tmpdir[64];
static pid_t dpid = -1; /* the daemon */

/* The names used in a rules or dashboard text: uringfeed_* and process_* identifiers that
 * are not part of a longer identifier or a recording rule's name (feed:uringfeed_...:p99). */
static int used_names(const char *text, char names[][96], int max)
{
	int n = 0;
	for (const char *p = text; *p; p++) {
		if (strncmp(p, "uringfeed_", 10) != 0 && strncmp(p, "process_", 8) != 0)
			continue;
		if (p > text && (p[-1] == ':' || p[-1] == '_' || (p[-1] >= 'a' && p[-1] <= 'z') ||
		                 (p[-1] >= 'A' && p[-1] <= 'Z') || (p[-1] >= '0' && p[-1] <= '9')))
			continue;
		size_t len = strspn(p, "abcdefghijklmnopqrstuvwxyz0123456789_");
		char name[96];
		snprintf(name, sizeof(name), "%.*s", (int)len, p);
		p += len - 1;
		int dup = 0;
		for (int i = 0; i < n && !dup; i++)
			dup = strcmp(names[i], name) == 0;
		if (!dup && n < max)
			snprintf(names[n++], sizeof(names[0]), "%s", name);
	}
	return n;
}

/* 1 when `name` is in the exposition text: a sample line starting with it (then '{' or ' '),
 * or a "# TYPE name " family line. */
static int exported(const char *scrape, const char *name)
{
	char k[160];
	const char *forms[] = {"\n%s{", "\n%s ", "\n# TYPE %s "};
	for (size_t i = 0; i < 3; i++) {
		snprintf(k, sizeof(k), forms[i], name);
		if (strstr(scrape, k))
			return 1;
	}
	return 0;
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		fail_msg("cannot read %s: %s", path, strerror(errno));
	static char buf[4][1 << 17];
	static int i;
	char *b = buf[i++ & 3];
	size_t n = fread(b, 1, sizeof(buf[0]) - 1, f);
	b[n] = '\0';
	fclose(f);
	return b;
}

static int setup(void **state)
{
	(void)state;
	return uf_test_daemon_dir(tmpdir, sizeof(tmpdir), "names");
}

static int teardown(void **state)
{
	(void)state;
	return uf_test_daemon_cleanup(tmpdir, &dpid);
}

static void test_rules_and_dashboard_use_exported_names(void **state)
{
	(void)state;
	char day[256];
	static char scrape[1 << 20];
	static char names[256][96];
	const char *body;

	snprintf(day, sizeof(day), "%s/day.itch", tmpdir);
	uf_test_gen_day(tmpdir, day, "5000", "10", "7");
	struct uf_test_feed feed = {.name = "names", .capacity = 65536, .max_orders = 100000};
	uf_test_feed_unique(&feed, 2, 79, 25000, 400, "names");
	/* a ring journal, so that its families (the journal alerts use them) are exported */
	char jdir[128], jextra[192];
	snprintf(jdir, sizeof(jdir), "%s/journal", tmpdir);
	assert_int_equal(mkdir(jdir, 0755), 0);
	snprintf(jextra, sizeof(jextra), ",\"journal\":{\"dir\":\"%s\"}", jdir);
	feed.ring_extra = jextra;
	uf_test_write_feed_config(tmpdir, &feed);

	dpid = uf_test_daemon_start(tmpdir, uf_test_bin("uringfeed"), NULL, 0);
	uint16_t hport = uf_test_status_port(tmpdir);
	uf_test_wait_log(tmpdir, "running;", 10000);

	/* A consumer, attached before the traffic (it ends when the daemon closes the ring). */
	const char *targv[] = {
	    uf_test_bin("uf-tail"), "--ring", feed.ring, "--timeout", "60", NULL};
	pid_t tail = uf_test_spawn(tmpdir, targv, "tail.out", "tail.err", NULL, 0);
	uint64_t end = uf_test_now_ms() + 10000;
	do {
		assert_int_equal(uf_test_http_get(hport, "/metrics", &body), 200);
		if (strstr(body, "\nuringfeed_consumer_lag_records{"))
			break;
		usleep(20000);
	} while (uf_test_now_ms() < end);
	assert_non_null(strstr(body, "\nuringfeed_consumer_lag_records{"));

	pid_t replay = uf_test_replay_start(tmpdir, day, &feed, 2, "20000", NULL);
	assert_int_equal(uf_test_wait_exit(replay, 20000, "uf-replay"), 0);
	end = uf_test_now_ms() + 10000;
	do {
		assert_int_equal(uf_test_http_get(hport, "/metrics", &body), 200);
		if (uf_test_series(body, "uringfeed_messages_total{feed=\"names\"}") == 5000)
			break;
		usleep(20000);
	} while (uf_test_now_ms() < end);
	assert_true(uf_test_series(body, "uringfeed_messages_total{feed=\"names\"}") == 5000);
	snprintf(scrape, sizeof(scrape), "\n%s", body); /* every line starts after a '\n' */

	/* Every name the rules and the dashboard use is in the scrape. */
	char path[512];
	int n = 0, missing = 0;
	snprintf(path, sizeof(path), "%s/configs/prometheus/uringfeed-alerts.yml", UF_SOURCE_DIR);
	n = used_names(slurp(path), names, 256);
	int nrules = n;
	snprintf(path, sizeof(path), "%s/configs/grafana/uringfeed-dashboard.json", UF_SOURCE_DIR);
	char(*rest)[96] = names + n;
	int nd = used_names(slurp(path), rest, 256 - n);
	/* (duplicates across the two files are checked twice: harmless) */
	n += nd;
	assert_true(nrules >= 10);
	assert_true(nd >= 15);
	for (int i = 0; i < n; i++) {
		if (exported(scrape, names[i]))
			continue;
		print_error("%s is used by %s but not exported by the daemon\n", names[i],
		            i < nrules ? "the alert rules" : "the dashboard");
		missing++;
	}
	print_message("%d names in the rules, %d in the dashboard, %d missing\n", nrules, nd,
	              missing);
	assert_int_equal(missing, 0);
	/* The checker does see a name that is not exported, or an old one. */
	assert_false(exported(scrape, "uringfeed_session_open"));
	assert_false(exported(scrape, "uringfeed_wire_to_publish_ns"));
	assert_true(exported(scrape, "uringfeed_wire_to_publish_seconds"));
	assert_true(exported(scrape, "uringfeed_wire_to_publish_seconds_bucket"));
	char probe[2][96];
	assert_int_equal(used_names("x feed:uringfeed_a:p99 uringfeed_b_total{} my_uringfeed_c "
	                            "process_open_fds",
	                            probe, 2),
	                 2);
	assert_string_equal(probe[0], "uringfeed_b_total");
	assert_string_equal(probe[1], "process_open_fds");

	assert_int_equal(kill(dpid, SIGTERM), 0);
	assert_int_equal(uf_test_wait_exit(dpid, 15000, "uringfeed after SIGTERM"), 0);
	dpid = -1;
	assert_int_equal(uf_test_wait_exit(tail, 10000, "uf-tail after the ring closed"), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_rules_and_dashboard_use_exported_names, setup,
	                                    teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
