/* The uringfeed binary (from UF_BIN_DIR): every kind of bad configuration exits with status 2
 * and one line on stderr naming the file and line:column (syntax) or the key path and value
 * (semantics), under both --check-config and --config, before any feed or ring exists. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "test/common/uf_test_daemon.h"
#include "test/common/uf_test_dir.h"
#include "test/common/uf_test_run.h"

static char tmpdir[64];

struct run {
	int status;     /* exit status, or 128 + signal */
	char out[8192]; /* stdout */
	char err[8192]; /* stderr */
};

static const char *bin(void)
{
	static char path[512];
	const char *dir = getenv("UF_BIN_DIR");
	snprintf(path, sizeof(path), "%s/uringfeed", dir ? dir : UF_BIN_DIR);
	if (access(path, X_OK) != 0)
		fail_msg("cannot run %s: %s (build the uringfeed target first)", path,
		         strerror(errno));
	return path;
}

/* Runs uringfeed with up to 4 arguments; kills it after 10 s (a hang is a failure). */
static void run(struct run *r, const char *a1, const char *a2, const char *a3, const char *a4)
{
	const char *argv[] = {"uringfeed", a1, a2, a3, a4, NULL};
	struct uf_test_run got;

	uf_test_run_path(bin(), argv, 10000, &got);
	if (got.status < 0)
		fail_msg("uringfeed %s %s did not exit within 10 s", a1, a2 ? a2 : "");
	r->status = got.status;
	snprintf(r->out, sizeof(r->out), "%s", got.out);
	snprintf(r->err, sizeof(r->err), "%s", got.err);
	uf_test_run_free(&got);
}

static const char *write_cfg(const char *name, const char *json)
{
	static char path[256];
	FILE *f;
	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(json, f);
	fclose(f);
	return path;
}

static int setup(void **state)
{
	/* Any ring the daemon wrongly created would land here, where the test looks for it. */
	return uf_test_daemon_dir(tmpdir, sizeof(tmpdir), "cli");
}

static int teardown(void **state)
{
	return uf_test_rm_tree(tmpdir);
}

#define OKFEED "\"name\":\"cli\",\"lines\":[{\"group\":\"239.9.9.1\",\"port\":31001}]"

static const struct bad {
	const char *json; /* file content */
	const char *want; /* expected on stderr after "<file>" */
} bads[] = {
    {"{\"feeds\":[{" OKFEED ",}]}", ":1:"},        /* trailing comma: syntax */
    {"{\n\"feeds\": [\n{" OKFEED "}\n]\n", ":5:"}, /* unterminated: line 5 */
    {"{\"feeds\":[{" OKFEED ",\"cpu\":1,\"cpu\":0}]}",
     ":1:82: syntax error: duplicate object key near '\"cpu\"'"},
    {"{\"feeds\":[{" OKFEED ",\"cpus\":1}]}", ": feeds[0].cpus: unknown key"},
    {"{\"feeds\":[{" OKFEED ",\"cpu\":\"one\"}]}",
     ": feeds[0].cpu: expected an integer CPU number, got a string \"one\""},
    {"{\"feeds\":[{" OKFEED ",\"cpu\":1023}]}",
     ": feeds[0].cpu: CPU 1023 does not exist or is not available to this process"},
    {"{\"feeds\":[{" OKFEED ",\"sqpoll_cpu\":999}]}",
     ": feeds[0].sqpoll_cpu: CPU 999 does not exist"},
    {"{\"feeds\":[{" OKFEED ",\"ring\":{\"capacity\":3000}}]}",
     ": feeds[0].ring.capacity: 3000 is not a power of two"},
    {"{\"feeds\":[{" OKFEED ",\"ring\":{\"capacity\":4294967296000}}]}",
     ": feeds[0].ring.capacity: 4294967296000 is out of range"},
    {"{\"feeds\":[{" OKFEED ",\"book\":{\"depth\":100}}]}",
     ": feeds[0].book.depth: 100 is out of range (1..64)"},
    {"{\"feeds\":[{" OKFEED ",\"backend\":\"dpdk\"}]}",
     ": feeds[0].backend: \"dpdk\" is not one of"},
    {"{\"feeds\":[{" OKFEED ",\"recovery\":{\"server\":\"10.0.0.1:0\"}}]}",
     ": feeds[0].recovery.server: \"10.0.0.1:0\": port 0 is out of range (1..65535)"},
    {"{\"feeds\":[{\"name\":\"x\",\"lines\":[{\"group\":\"10.9.9.1\",\"port\":1}]}]}",
     ": feeds[0].lines[0].group: \"10.9.9.1\" is not a multicast group"},
    {"{\"feeds\":[{\"name\":\"x\",\"lines\":[{\"group\":\"239.9.9.1\",\"port\":1},{\"group\":\"239."
     "9.9.2\",\"port\":65536}]}]}",
     ": feeds[0].lines[1].port: 65536 is out of range (1..65535)"},
    {"{\"feeds\":[{" OKFEED "},{\"name\":\"two\",\"ring\":{\"name\":\"cli\"},\"lines\":[{\"group\":"
     "\"239.9.9.7\",\"port\":1}]}]}",
     ": feeds[1].ring.name: duplicate ring name \"cli\""},
    {"{\"feeds\":[{" OKFEED
     "},{\"name\":\"cli\",\"lines\":[{\"group\":\"239.9.9.7\",\"port\":1}]}]}",
     ": feeds[1].name: duplicate feed name \"cli\""},
    {"{\"status\":{\"listen\":\"127.0.0.1:99999\"},\"feeds\":[{" OKFEED "}]}",
     ": status.listen: \"127.0.0.1:99999\": port 99999 is out of range"},
    {"{\"log\":{\"level\":3},\"feeds\":[{" OKFEED "}]}",
     ": log.level: expected a string, got an integer 3"},
    {"{\"feeds\":{}}", ": feeds: expected an array of feed objects, got an object"},
    /* limits the engine enforces at start are refused by the check too (issue 12) */
    {"{\"feeds\":[{" OKFEED ",\"buffers\":{\"count\":16}}]}",
     ": feeds[0].buffers.count: 16 is out of range (64..32768)"},
    {"{\"feeds\":[{" OKFEED ",\"book\":{\"max_orders\":4294967296}}]}",
     ": feeds[0].book.max_orders: 4294967296 is out of range"},
    {"{\"feeds\":[{" OKFEED ",\"book\":{\"max_orders\":1073741824}}]}",
     ": feeds[0]: needs about "}, /* a 32 GiB order table: more than this host has free */
    {"{\"feeds\":[{" OKFEED ",\"ring\":{\"group\":\"uf-no-such-group-x\"}}]}",
     ": feeds[0].ring.group: group \"uf-no-such-group-x\" does not exist"},
    /* a capture folder that is not there (issue 25) */
    {"{\"feeds\":[{" OKFEED ",\"capture\":{\"dir\":\"/nonexistent/uf-cap\"}}]}",
     ": feeds[0].capture.dir: \"/nonexistent/uf-cap\": No such file or directory (create it "
     "first)"},
    {"", ":1:"}, /* empty file: syntax error with a position */
};

static void test_cli_bad_configs_exit_2_with_the_key_path_on_stderr(void **state)
{
	struct run r;
	char name[32], want[512], ring[256];
	struct stat st;

	for (size_t i = 0; i < sizeof(bads) / sizeof(bads[0]); i++) {
		snprintf(name, sizeof(name), "bad%zu.json", i);
		const char *path = write_cfg(name, bads[i].json);
		snprintf(want, sizeof(want), "%s%s", path, bads[i].want);
		const char *modes[] = {"--check-config", "--config"};
		for (int m = 0; m < 2; m++) {
			run(&r, modes[m], path, NULL, NULL);
			if (r.status != 2 || !strstr(r.err, want))
				fail_msg("uringfeed %s %s (%s)\n  exit %d, stderr: %s  wanted exit "
				         "2 and: %s",
				         modes[m], path, bads[i].json, r.status, r.err, want);
			/* One line, and nothing on stdout. */
			assert_int_equal(strchr(r.err, '\n') - r.err + 1, (long)strlen(r.err));
			assert_string_equal(r.out, "");
		}
	}
	/* --config stopped before creating anything: no ring in UF_RING_DIR. */
	snprintf(ring, sizeof(ring), "%s/uf.cli", tmpdir);
	assert_int_not_equal(stat(ring, &st), 0);
}

static void test_cli_missing_file_and_bad_usage_exit_2(void **state)
{
	struct run r;
	char path[256];

	snprintf(path, sizeof(path), "%s/none.json", tmpdir);
	run(&r, "--config", path, NULL, NULL);
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err, "none.json: cannot read"));
	run(&r, "--frobnicate", NULL, NULL, NULL);
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err, "unknown option --frobnicate"));
	run(&r, NULL, NULL, NULL, NULL);
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err, "give exactly one of --config FILE or --check-config FILE"));
	run(&r, "--config", UF_SOURCE_DIR "/configs/loopback.json", "--log-level", "chatty");
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err, "--log-level \"chatty\""));
	run(&r, "--config", UF_SOURCE_DIR "/configs/loopback.json", "extra", NULL);
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err, "unexpected argument \"extra\""));
}

static void test_cli_version_help_and_good_configs_exit_0(void **state)
{
	struct run r;

	run(&r, "--version", NULL, NULL, NULL);
	assert_int_equal(r.status, 0);
	assert_true(strncmp(r.out, "uringfeed ", 10) == 0);
	run(&r, "--help", NULL, NULL, NULL);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "--check-config FILE"));
	run(&r, "--check-config", UF_SOURCE_DIR "/configs/loopback.json", NULL, NULL);
	if (r.status != 0)
		fail_msg("configs/loopback.json refused: %s", r.err);
	assert_non_null(strstr(r.out, "loopback.json: valid: 1 feed, status on 127.0.0.1:8080"));
	assert_non_null(strstr(
	    r.out, "feed nasdaq: itch50-moldudp64, io_uring_nosqpoll, cpu 1, "
	           "line A 239.1.1.1:30001 on 127.0.0.1, line B 239.1.1.2:30002 on 127.0.0.1, "
	           "recovery 127.0.0.1:30100, snapshot 127.0.0.1:30200 (on start), "
	           "ring nasdaq (1048576 records, mode 0600)"));
	run(&r, "--check-config", UF_SOURCE_DIR "/configs/two-venues.json", NULL, NULL);
	if (r.status != 0)
		fail_msg("configs/two-venues.json refused: %s", r.err);
	assert_non_null(strstr(r.out, "two-venues.json: valid: 2 feeds"));
	assert_non_null(strstr(r.out, "feed iex: iex-deep, epoll"));
	run(&r, "--check-config", UF_SOURCE_DIR "/configs/nasdaq-production.json",
	    "--no-host-checks", NULL);
	if (r.status != 0)
		fail_msg("configs/nasdaq-production.json refused: %s", r.err);
	assert_non_null(strstr(r.out, "valid (CPU/NUMA not checked against this host): 2 feeds"));
	assert_non_null(
	    strstr(r.out, "feed nasdaq_bx: itch50-moldudp64, io_uring, cpu 4, sqpoll_cpu 5"));
	assert_non_null(strstr(r.out, "7 symbols"));
	/* On this host the production CPUs may be missing: then it must say so and exit 2. */
	run(&r, "--check-config", UF_SOURCE_DIR "/configs/nasdaq-production.json", NULL, NULL);
	if (sysconf(_SC_NPROCESSORS_ONLN) < 6) {
		assert_int_equal(r.status, 2);
		assert_non_null(
		    strstr(r.err, "nasdaq-production.json: feeds[0].cpu: CPU 2 does not exist"));
	} else {
		assert_int_equal(r.status, 0);
	}
	/* --no-host-checks is only for checking. */
	run(&r, "--config", UF_SOURCE_DIR "/configs/loopback.json", "--no-host-checks", NULL);
	assert_int_equal(r.status, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_cli_bad_configs_exit_2_with_the_key_path_on_stderr),
	    cmocka_unit_test(test_cli_missing_file_and_bad_usage_exit_2),
	    cmocka_unit_test(test_cli_version_help_and_good_configs_exit_0),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
