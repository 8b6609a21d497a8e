/* Configuration loader, in process: good files parse to exactly the values written (and the
 * documented defaults for what is left out); bad ones fail with the key path and the value.
 * The command-line side (exit status 2, stderr) is test_daemon_cli.c. */
#include <arpa/inet.h>
#include <errno.h>
#include <grp.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "daemon/log.h"
#include "daemon/uf_config.h"
#include "ring/journal_writer.h"

#define MIN_FEED                                                                                   \
	"{\"feeds\":[{\"name\":\"nasdaq\",\"lines\":[{\"group\":\"239.1.1.1\",\"port\":30001}]}]}"

static void assert_addr(struct in_addr a, const char *want)
{
	char s[INET_ADDRSTRLEN];
	inet_ntop(AF_INET, &a, s, sizeof(s));
	assert_string_equal(s, want);
}

/* An address:port the configuration names (status.listen, recovery.server, ...). */
static void assert_endpoint(const struct sockaddr_in *a, const char *addr, int port)
{
	assert_addr(a->sin_addr, addr);
	assert_int_equal(ntohs(a->sin_port), port);
}

/* The values of n numeric keys against the nwant expected ones; a mismatch names the key. */
static void assert_numbers(const char *const *keys, const int64_t *got, size_t n,
                           const int64_t *want, size_t nwant)
{
	assert_int_equal(nwant, n);
	for (size_t i = 0; i < n; i++)
		if (got[i] != want[i])
			fail_msg("%s: %lld, want %lld", keys[i], (long long)got[i],
			         (long long)want[i]);
}

/* The numeric keys both load tests check, in the order of their expected values (the
 * documented defaults in one, the values written in the other). */
/* clang-format off */
#define TOP_NUMBERS(X)                                                                             \
	X(status_enabled) X(log_level) X(log_journal) X(probe_enabled) X(ready_silence_ms) X(nfeeds)
#define FEED_NUMBERS(X)                                                                            \
	X(no_stage_timing) X(stage_timing_every) X(busy_clock) X(idle_pause) X(cpu) X(sqpoll_cpu)  \
	X(sqpoll_idle_ms) X(numa_node) X(nlines)                                                   \
	X(recovery.enabled) X(recovery.max_count) X(recovery.timeout_ms) X(recovery.retries)       \
	X(recovery.wait_ms) X(recovery.wait_packets) X(recovery.queue_packets)                     \
	X(recovery.max_requests_per_s) X(recovery.max_in_flight)                                   \
	X(arbitration.max_jump) X(arbitration.jump_confirm) X(arbitration.session_confirm)         \
	X(arbitration.line_silent_ms)                                                              \
	X(ring.capacity) X(ring.mode) X(book.depth) X(book.max_orders) X(book.max_instruments)     \
	X(buffers.count) X(buffers.size) X(nsymbols)
/* snapshot.*: the numeric tunables (the session is checked apart). */
#define SNAPSHOT_NUMBERS(X)                                                                        \
	X(snapshot.on_start) X(snapshot.max_gap_messages) X(snapshot.max_gap_age_ms)                \
	X(snapshot.timeout_ms) X(snapshot.buffer_packets) X(snapshot.max_lead)                      \
	X(snapshot.max_hold_ms) X(snapshot.reload_uncertain)
/* clang-format on */
#define NWANT(a)     (a), sizeof(a) / sizeof((a)[0])
#define KEY_NAME(k)  #k,
#define KEY_VALUE(k) (int64_t) v->k,

static void assert_top_numbers(const struct uf_config *v, const int64_t *want, size_t nwant)
{
	static const char *const keys[] = {TOP_NUMBERS(KEY_NAME)};
	const int64_t got[] = {TOP_NUMBERS(KEY_VALUE)};
	assert_numbers(keys, got, sizeof(got) / sizeof(got[0]), want, nwant);
}

static void assert_feed_numbers(const struct uf_feed_config *v, const int64_t *want, size_t nwant)
{
	static const char *const keys[] = {FEED_NUMBERS(KEY_NAME)};
	const int64_t got[] = {FEED_NUMBERS(KEY_VALUE)};
	assert_numbers(keys, got, sizeof(got) / sizeof(got[0]), want, nwant);
}

static void assert_snapshot(const struct uf_feed_config *v, const char *session,
                            const int64_t *want, size_t nwant)
{
	static const char *const keys[] = {SNAPSHOT_NUMBERS(KEY_NAME)};
	const int64_t got[] = {SNAPSHOT_NUMBERS(KEY_VALUE)};
	assert_string_equal(v->snapshot.session, session);
	assert_numbers(keys, got, sizeof(got) / sizeof(got[0]), want, nwant);
}

static void test_config_minimal_file_gets_documented_defaults(void **state)
{
	struct uf_config cfg;
	char err[512];
	const struct uf_feed_config *f;

	assert_int_equal(uf_config_load_string(MIN_FEED, &cfg, err, sizeof(err)), 0);
	assert_string_equal(err, "");
	static const int64_t top[] = {1, UF_LOG_INFO, UF_LOG_JOURNAL_AUTO, 0, 2000, 1};
	assert_top_numbers(&cfg, NWANT(top));
	assert_endpoint(&cfg.status_listen, "127.0.0.1", 8080);
	f = &cfg.feeds[0];
	static const int64_t feed[] = {
	    0,       16,   0,  0,       -1,    -1,   1000,  -1,   1, /* stage timing .. nlines */
	    0,       1000, 50, 5,       2,     64,   65536, 1000, 8, /* recovery */
	    10000,   4,    16, 5000,                                 /* arbitration */
	    1048576, 0600, 10, 4000000, 16384, 4096, 2048,  0,       /* ring .. nsymbols */
	};
	assert_feed_numbers(f, NWANT(feed));
	assert_string_equal(f->name, "nasdaq");
	assert_string_equal(f->protocol, "itch50-moldudp64");
	assert_int_equal(f->backend, UF_BACKEND_IO_URING);
	assert_string_equal(f->lines[0].name, "A");
	assert_addr(f->lines[0].group, "239.1.1.1");
	assert_int_equal(f->lines[0].port, 30001);
	assert_addr(f->lines[0].interface, "0.0.0.0");
	assert_addr(f->lines[0].source, "0.0.0.0");
	assert_string_equal(f->ring.name, "nasdaq");     /* defaults to the feed name */
	assert_true(uf_config_symbol_wanted(f, "AAPL")); /* empty filter passes everything */
	uf_config_free(&cfg);
}

/* A feed whose JSON leaves every optional key out is exactly what an embedder of the engine
 * gets from uf_feed_config_defaults(): one table of defaults, not one per reader. */
static void test_config_left_out_keys_are_the_engines_defaults(void **state)
{
	struct uf_config cfg;
	struct uf_feed_config d;
	char err[512];

	assert_int_equal(uf_config_load_string(MIN_FEED, &cfg, err, sizeof(err)), 0);
	uf_feed_config_defaults(&d);
	d.nlines = cfg.feeds[0].nlines; /* the lines are the file's */
	const struct uf_feed_config *v = &d;
	const int64_t want[] = {FEED_NUMBERS(KEY_VALUE)};
	const int64_t want_snap[] = {SNAPSHOT_NUMBERS(KEY_VALUE)};
	assert_feed_numbers(&cfg.feeds[0], NWANT(want));
	assert_snapshot(&cfg.feeds[0], "", NWANT(want_snap));
	assert_string_equal(cfg.feeds[0].protocol, d.protocol);
	assert_int_equal(cfg.feeds[0].backend, d.backend);
	uf_config_free(&cfg);
}

static void test_config_every_key_parses_to_its_value(void **state)
{
	const char *json =
	    "{\"_comment\":\"top\",\"status\":{\"listen\":\"127.0.0.2:9100\",\"enabled\":false,"
	    "\"probe_listen\":\"127.0.0.3:9101\",\"ready_silence_ms\":750},"
	    "\"log\":{\"level\":\"debug\",\"journal\":\"always\"},"
	    "\"feeds\":[{\"_comment_x\":\"feed\",\"name\":\"f1\",\"protocol\":\"itch50-moldudp64\","
	    "\"backend\":\"io_uring\",\"cpu\":0,\"sqpoll_cpu\":1,\"sqpoll_idle_ms\":250,\"numa_"
	    "node\":0,"
	    "\"lines\":[{\"name\":\"east\",\"group\":\"239.2.2.2\",\"port\":1234,\"interface\":"
	    "\"127.0.0.1\"},"
	    "{\"name\":\"west\",\"group\":\"239.2.2.3\",\"port\":1235,\"interface\":\"127.0.0.1\","
	    "\"source\":\"10.9.8.7\"}]"
	    ","
	    "\"recovery\":{\"server\":\"10.1.2.3:4567\",\"max_count\":500,\"timeout_ms\":20,"
	    "\"retries\":3,"
	    "\"wait_ms\":7,\"wait_packets\":9,\"queue_packets\":1024,\"max_requests_per_s\":100,"
	    "\"max_in_flight\":16},"
	    "\"arbitration\":{\"max_jump\":5000000000,\"jump_confirm\":8,\"session_confirm\":3,"
	    "\"line_silent_ms\":750},"
	    "\"ring\":{\"name\":\"r1\",\"capacity\":65536,\"mode\":\"0640\"},"
	    "\"book\":{\"depth\":5,\"max_orders\":123456,\"max_instruments\":100},"
	    "\"buffers\":{\"count\":1024,\"size\":4096},"
	    "\"symbols\":[\"MSFT\",\"AAPL\",\"BRK.A\"],\"stage_timing\":false,"
	    "\"stage_timing_every\":4,\"busy_clock\":true,\"idle_pause\":true},"
	    "{\"name\":\"f2\",\"backend\":\"epoll\",\"lines\":[{\"group\":\"239.2.2.4\",\"port\":1}"
	    "]}]}";
	struct uf_config cfg;
	char err[512];
	const struct uf_feed_config *f;

	assert_int_equal(uf_config_load_string(json, &cfg, err, sizeof(err)), 0);
	static const int64_t top[] = {0, UF_LOG_DEBUG, UF_LOG_JOURNAL_ALWAYS, 1, 750, 2};
	assert_top_numbers(&cfg, NWANT(top));
	assert_endpoint(&cfg.status_listen, "127.0.0.2", 9100);
	assert_endpoint(&cfg.probe_listen, "127.0.0.3", 9101);
	f = &cfg.feeds[0];
	/* clang-format off */
	static const int64_t feed[] = {
	    1,            4,    1,  1,  0,  1,  250, 0,    2,          /* stage timing .. nlines */
	    1,            500,  20, 3,      7,   9,    1024, 100, 16,  /* recovery */
	    5000000000ll, 8,    3,  750,                               /* arbitration */
	    65536,        0640, 5,  123456, 100, 1024, 4096, 3,        /* ring .. nsymbols */
	};
	/* clang-format on */
	assert_feed_numbers(f, NWANT(feed));
	assert_string_equal(f->lines[1].name, "west");
	assert_addr(f->lines[1].group, "239.2.2.3");
	assert_int_equal(f->lines[1].port, 1235);
	assert_addr(f->lines[1].interface, "127.0.0.1");
	assert_addr(f->lines[1].source, "10.9.8.7");
	assert_addr(f->lines[0].source, "0.0.0.0"); /* not given: any sender */
	assert_endpoint(&f->recovery.server, "10.1.2.3", 4567);
	assert_string_equal(f->ring.name, "r1");
	assert_string_equal(f->symbols[0], "AAPL"); /* kept sorted for bsearch */
	assert_string_equal(f->symbols[1], "BRK.A");
	assert_string_equal(f->symbols[2], "MSFT");
	assert_true(uf_config_symbol_wanted(f, "MSFT"));
	assert_false(uf_config_symbol_wanted(f, "TSLA"));
	assert_int_equal(cfg.feeds[1].backend, UF_BACKEND_EPOLL);
	assert_string_equal(cfg.feeds[1].lines[0].name, "A");
	uf_config_free(&cfg);
}

static void test_config_symbols_file_is_read_relative_to_the_config(void **state)
{
	char dir[] = "/tmp/uf-cfg-XXXXXX", path[256], syms[256], err[512];
	struct uf_config cfg;
	FILE *fp;

	assert_non_null(mkdtemp(dir));
	snprintf(syms, sizeof(syms), "%s/desk.txt", dir);
	fp = fopen(syms, "w");
	assert_non_null(fp);
	fputs("# desk symbols\nTSLA\n  AAPL   # with a comment\n\nNVDA\n", fp);
	fclose(fp);
	snprintf(path, sizeof(path), "%s/c.json", dir);
	fp = fopen(path, "w");
	assert_non_null(fp);
	fputs("{\"feeds\":[{\"name\":\"x\",\"symbols_file\":\"desk.txt\","
	      "\"lines\":[{\"group\":\"239.1.1.1\",\"port\":1}]}]}",
	      fp);
	fclose(fp);
	assert_int_equal(uf_config_load(path, &cfg, err, sizeof(err)), 0);
	assert_int_equal(cfg.feeds[0].nsymbols, 3);
	assert_string_equal(cfg.feeds[0].symbols[0], "AAPL");
	assert_string_equal(cfg.feeds[0].symbols[2], "TSLA");
	uf_config_free(&cfg);

	fp = fopen(syms, "a");
	fputs("TOOLONGSYM\n", fp);
	fclose(fp);
	assert_int_equal(uf_config_load(path, &cfg, err, sizeof(err)), -EINVAL);
	assert_non_null(
	    strstr(err, "feeds[0].symbols_file:6: symbol \"TOOLONGSYM\" must be 1 to 8"));
	unlink(syms);
	unlink(path);
	rmdir(dir);
}

/* Loads a config whose symbols_file is `syms` (made by the caller) and expects the refusal
 * `want`. alarm(): a load that blocks (a FIFO opened for reading) fails here in 5 s instead
 * of hanging the suite. */
static void expect_symbols_file_refused(const char *dir, const char *syms, const char *want)
{
	char path[256], err[512];
	struct uf_config cfg;
	FILE *fp;

	snprintf(path, sizeof(path), "%s/c.json", dir);
	fp = fopen(path, "w");
	assert_non_null(fp);
	fprintf(fp,
	        "{\"feeds\":[{\"name\":\"x\",\"symbols_file\":\"%s\","
	        "\"lines\":[{\"group\":\"239.1.1.1\",\"port\":1}]}]}",
	        syms);
	fclose(fp);
	alarm(5);
	int r = uf_config_load(path, &cfg, err, sizeof(err));
	alarm(0);
	if (r != -EINVAL || !strstr(err, want))
		fail_msg("symbols_file %s: returned %d, message: %s\n  wanted: %s", syms, r, err,
		         want);
	unlink(path);
}

/* issue 23, item 16: a FIFO hung --check-config; an empty file, a comments-only file or a
 * directory was taken as "all symbols". Each is refused by name. */
static void test_config_symbols_file_must_be_a_nonempty_regular_file(void **state)
{
	char dir[] = "/tmp/uf-cfg-XXXXXX", p[256];
	FILE *fp;

	assert_non_null(mkdtemp(dir));
	snprintf(p, sizeof(p), "%s/fifo", dir);
	assert_int_equal(mkfifo(p, 0600), 0);
	expect_symbols_file_refused(dir, "fifo", "fifo\" is a FIFO, not a file of symbols");
	unlink(p);
	snprintf(p, sizeof(p), "%s/sub", dir);
	assert_int_equal(mkdir(p, 0700), 0);
	expect_symbols_file_refused(dir, "sub", "sub\" is a directory, not a file of symbols");
	rmdir(p);
	expect_symbols_file_refused(dir, "/dev/null", "\"/dev/null\" is a character device");
	snprintf(p, sizeof(p), "%s/empty.txt", dir);
	fp = fopen(p, "w");
	assert_non_null(fp);
	fclose(fp);
	expect_symbols_file_refused(dir, "empty.txt", "empty.txt\" lists no symbol");
	fp = fopen(p, "w");
	fputs("# nothing yet\n\n   \n", fp);
	fclose(fp);
	expect_symbols_file_refused(dir, "empty.txt", "empty.txt\" lists no symbol");
	unlink(p);
	expect_symbols_file_refused(dir, "missing.txt", "cannot read");
	rmdir(dir);
}

/* SIGHUP's "does this feed need a restart": equal configs compare equal whatever lies after a
 * string's NUL (the loader's copy and a struct copy need not agree there; a memcmp did compare
 * it), the symbol filter never counts, and a change of any one field does. */
/* clang-format off */
#define FEED_CHANGES(X)                                                                            \
	X(name[0] = 'z') X(protocol[1] = 'z') X(backend = UF_BACKEND_EPOLL) X(cpu = 1)              \
	X(sqpoll_cpu = 1) X(sqpoll_idle_ms++) X(numa_node = 0) X(nlines = 1)                       \
	X(lines[0].name[0] = 'z') X(lines[1].group.s_addr ^= 1) X(lines[0].port++)                 \
	X(lines[1].interface.s_addr ^= 1) X(lines[0].source.s_addr ^= 1)                           \
	X(recovery.enabled ^= 1) X(recovery.server.sin_port ^= 1) X(recovery.server.sin_addr.s_addr ^= 1) \
	X(recovery.max_count++) X(recovery.timeout_ms++) X(recovery.retries++)                     \
	X(recovery.wait_ms++) X(recovery.wait_packets++) X(recovery.queue_packets++)               \
	X(recovery.max_requests_per_s++) X(recovery.max_in_flight++)                               \
	X(snapshot.enabled ^= 1) X(snapshot.server.sin_port ^= 1) X(snapshot.username[0] = 'z')    \
	X(snapshot.password[0] = 'z') X(snapshot.session[0] = 'z') X(snapshot.on_start ^= 1)      \
	X(snapshot.max_gap_messages++) X(snapshot.max_gap_age_ms++) X(snapshot.timeout_ms++)      \
	X(snapshot.buffer_packets++) X(snapshot.max_lead++) X(snapshot.max_hold_ms++)              \
	X(snapshot.reload_uncertain++)                                                             \
	X(arbitration.max_jump++) X(arbitration.jump_confirm++)       \
	X(arbitration.session_confirm++) X(arbitration.line_silent_ms++) X(ring.name[0] = 'z')    \
	X(ring.capacity *= 2) X(ring.mode = 0640) X(ring.has_gid ^= 1) X(ring.gid++)              \
	X(ring.journal.dir[0] = '/') X(ring.journal.fsync = 2) X(ring.journal.interval_ms++)      \
	X(ring.journal.keep_days++)                                                               \
	X(book.depth++) X(book.max_orders++) X(book.max_instruments++) X(buffers.count *= 2)      \
	X(buffers.size++) X(symbols_file[0] = 'z') X(no_stage_timing ^= 1) X(stage_timing_every++) \
	X(busy_clock ^= 1) X(idle_pause = UF_FEED_IDLE_PAUSE_OFF)                                  \
	X(capture.enabled ^= 1) X(capture.dir[0] = 'z') X(capture.rotate_mb++)                    \
	X(capture.max_total_bytes++) X(capture.buffer_mb++)
/* clang-format on */
#define FEED_CHANGE_CASE(stmt)                                                                     \
	do {                                                                                       \
		struct uf_feed_config y = *base;                                                   \
		y.stmt;                                                                            \
		if (uf_config_feed_same_except_symbols(base, &y))                                  \
			fail_msg("a change of %s is not seen by the reload", #stmt);               \
	} while (0);

static void test_config_reload_compares_every_field_and_no_padding(void **state)
{
	struct uf_config cfg;
	char err[512];

	assert_int_equal(uf_config_load_string(MIN_FEED, &cfg, err, sizeof(err)), 0);
	struct uf_feed_config *base = &cfg.feeds[0];
	base->nlines = 2; /* both lines compared */
	struct uf_feed_config x = *base;
	/* the bytes after each string's NUL: never part of the value */
	x.name[sizeof(x.name) - 1] = 'q';
	x.ring.name[sizeof(x.ring.name) - 1] = 'q';
	x.snapshot.password[sizeof(x.snapshot.password) - 1] = 'q';
	x.lines[0].name[sizeof(x.lines[0].name) - 1] = 'q';
	assert_true(uf_config_feed_same_except_symbols(base, &x));
	char other[1][9] = {"AAPL"};
	x.symbols = other; /* the filter is what a reload applies: never a restart */
	x.nsymbols = 1;
	assert_true(uf_config_feed_same_except_symbols(base, &x));
	FEED_CHANGES(FEED_CHANGE_CASE)
	uf_config_free(&cfg);
}

/* Loads `json`, expects -EINVAL and `want` inside the message. */
static void expect_error(const char *json, const char *want)
{
	struct uf_config cfg;
	char err[512];
	int r = uf_config_load_string(json, &cfg, err, sizeof(err));

	if (r != -EINVAL || !strstr(err, want))
		fail_msg("config %s\n  returned %d, message: %s\n  wanted: %s", json, r, err, want);
}

#define FEED(extra)                                                                                \
	"{\"feeds\":[{\"name\":\"n\"," extra ",\"lines\":[{\"group\":\"239.1.1.1\",\"port\":5}]}]" \
	"}"
#define LINES(l) "{\"feeds\":[{\"name\":\"n\",\"lines\":[" l "]}]}"

/* One daemon, two venues: a Nasdaq feed and an IEX feed, each its own ring. */
static void test_config_two_venues_in_one_daemon(void **state)
{
	(void)state;
	struct uf_config cfg;
	char err[512];
	const char *json =
	    "{\"feeds\":[{\"name\":\"nasdaq\",\"lines\":[{\"group\":\"239.1.1.1\",\"port\":5}]},"
	    "{\"name\":\"iex\",\"protocol\":\"iex-deep\",\"ring\":{\"name\":\"iex\"},"
	    "\"lines\":[{\"group\":\"233.215.21.4\",\"port\":10378}]}]}";
	assert_int_equal(uf_config_load_string(json, &cfg, err, sizeof(err)), 0);
	assert_int_equal(cfg.nfeeds, 2);
	assert_string_equal(cfg.feeds[0].protocol, "itch50-moldudp64");
	assert_string_equal(cfg.feeds[1].protocol, "iex-deep");
}

static void test_config_semantic_errors_name_key_path_and_value(void **state)
{
	expect_error(FEED("\"ring\":{\"capcity\":1024}"),
	             "<string>: feeds[0].ring.capcity: unknown key (known keys here: name, "
	             "capacity, mode, group, journal)");
	expect_error("{\"feeds\":[],\"stauts\":{}}", "<string>: stauts: unknown key");
	expect_error(FEED("\"stage_timing_every\":0"),
	             "feeds[0].stage_timing_every: 0 is out of range");
	expect_error(FEED("\"busy_clock\":1"),
	             "feeds[0].busy_clock: expected true or false, got an integer 1");
	expect_error(FEED("\"busy_clock\":\"on\""),
	             "feeds[0].busy_clock: expected true or false, got a string \"on\"");
	expect_error(FEED("\"idle_pause\":1"),
	             "feeds[0].idle_pause: expected true, false or \"auto\", got an integer 1");
	expect_error(FEED("\"idle_pause\":\"on\""),
	             "feeds[0].idle_pause: expected true, false or \"auto\", got a string \"on\"");
	expect_error(FEED("\"idle_pause\":null"),
	             "feeds[0].idle_pause: expected true, false or \"auto\", got JSON null");
	expect_error("{\"log\":{\"journal\":\"yes\"},\"feeds\":[]}",
	             "log.journal: \"yes\" is not one of \"auto\", \"always\", \"never\"");
	expect_error("{\"status\":{\"ready_silence_ms\":0},\"feeds\":[]}",
	             "status.ready_silence_ms: 0 is out of range");
	expect_error("{\"status\":{\"probe_listen\":\"127.0.0.1\"},\"feeds\":[]}",
	             "status.probe_listen: \"127.0.0.1\" is not ADDRESS:PORT");
	expect_error(FEED("\"cpu\":\"0\""),
	             "feeds[0].cpu: expected an integer CPU number, got a string \"0\"");
	expect_error(FEED("\"cpu\":4095"),
	             "feeds[0].cpu: CPU 4095 does not exist or is not available");
	expect_error(FEED("\"cpu\":-2"), "feeds[0].cpu: -2 is out of range");
	expect_error(FEED("\"ring\":{\"capacity\":1000000}"),
	             "feeds[0].ring.capacity: 1000000 is not a power of two");
	expect_error(FEED("\"ring\":{\"capacity\":512}"),
	             "feeds[0].ring.capacity: 512 is out of range");
	expect_error(FEED("\"ring\":{\"mode\":\"0666\"}"),
	             "feeds[0].ring.mode: \"0666\" is not one of");
	expect_error(FEED("\"backend\":\"uring\""), "feeds[0].backend: \"uring\" is not one of");
	expect_error(FEED("\"protocol\":\"pitch\""),
	             "feeds[0].protocol: \"pitch\" is not supported");
	/* the IEX protocols are known, and what they do not offer is refused with the key */
	expect_error(FEED("\"protocol\":\"iex-deep\",\"recovery\":{\"server\":\"10.0.0.1:5\"}"),
	             "feeds[0].recovery.server: protocol \"iex-deep\" has no re-request service");
	expect_error(FEED("\"protocol\":\"iex-tops\",\"snapshot\":{\"server\":\"10.0.0.1:5\"}"),
	             "feeds[0].snapshot: protocol \"iex-tops\" has no snapshot service");
	expect_error(FEED("\"backend\":\"epoll\",\"sqpoll_cpu\":0"),
	             "feeds[0].sqpoll_cpu: 0 is set but backend \"epoll\" has no SQ poll thread");
	expect_error(FEED("\"recovery\":{\"server\":\"10.1.2.3:4567\",\"max_in_flight\":65}"),
	             "feeds[0].recovery.max_in_flight: 65 is out of range (1..64)");
	expect_error(FEED("\"book\":{\"depth\":0}"),
	             "feeds[0].book.depth: 0 is out of range (1..64)");
	expect_error(FEED("\"book\":{\"max_orders\":1.5}"),
	             "feeds[0].book.max_orders: expected an integer, got a real number 1.5");
	expect_error(FEED("\"buffers\":{\"count\":1000}"),
	             "feeds[0].buffers.count: 1000 is not a power of two");
	expect_error(
	    FEED("\"recovery\":{\"server\":\"239.1.1.9:5\"}"),
	    "feeds[0].recovery.server: \"239.1.1.9:5\": \"239.1.1.9\" is not a unicast address");
	expect_error(FEED("\"recovery\":{\"server\":\"10.0.0.1\"}"),
	             "feeds[0].recovery.server: \"10.0.0.1\" is not ADDRESS:PORT");
	expect_error(FEED("\"recovery\":{\"server\":\"10.0.0.1:70000\"}"),
	             "port 70000 is out of range");
	expect_error(FEED("\"recovery\":{\"timeout_ms\":5}"),
	             "feeds[0].recovery.server: missing required key");
	expect_error(FEED("\"recovery\":{\"sever\":\"10.0.0.1:5\"}"),
	             "feeds[0].recovery.sever: unknown key");
	expect_error(FEED("\"symbols\":[\"AAPL\",\"AAPL\"]"),
	             "feeds[0].symbols: symbol \"AAPL\" is listed twice");
	expect_error(FEED("\"symbols\":[\"AAPL\",7]"),
	             "feeds[0].symbols[1]: expected a string, got an integer 7");
	expect_error(FEED("\"name\":\"x\""),
	             "syntax error"); /* duplicate key: JSON_REJECT_DUPLICATES */
	expect_error(FEED("\"numa_node\":77"), "feeds[0].numa_node: NUMA node 77 does not exist");
	expect_error(LINES("{\"group\":\"10.1.1.1\",\"port\":5}"),
	             "feeds[0].lines[0].group: \"10.1.1.1\" is not a multicast group");
	expect_error(LINES("{\"group\":\"239.1.1\",\"port\":5}"),
	             "feeds[0].lines[0].group: \"239.1.1\" is not an IPv4 address");
	expect_error(
	    LINES("{\"group\":\"239.1.1.1\",\"port\":5},{\"group\":\"239.1.1.2\",\"port\":70000}"),
	    "feeds[0].lines[1].port: 70000 is out of range (1..65535)");
	expect_error(LINES("{\"group\":\"239.1.1.1\"}"),
	             "feeds[0].lines[0].port: missing required key");
	expect_error(
	    LINES("{\"group\":\"239.1.1.1\",\"port\":5},{\"group\":\"239.1.1.1\",\"port\":5}"),
	    "feeds[0].lines[1]: same group and port as lines[0]");
	expect_error(LINES("{\"name\":\"A\",\"group\":\"239.1.1.1\",\"port\":5},{\"name\":\"A\","
	                   "\"group\":\"239.1.1.2\",\"port\":5}"),
	             "feeds[0].lines[1].name: \"A\" is the name of lines[0] too");
	expect_error(LINES(""), "feeds[0].lines: has 0 entries");
	expect_error(LINES("{\"group\":\"239.1.1.1\",\"port\":5,\"source\":\"239.1.1.9\"}"),
	             "feeds[0].lines[0].source: \"239.1.1.9\" is not a unicast address");
	expect_error(LINES("{\"group\":\"239.1.1.1\",\"port\":5,\"source\":\"0.0.0.0\"}"),
	             "feeds[0].lines[0].source: \"0.0.0.0\" is not a unicast address");
	expect_error(FEED("\"arbitration\":{\"jump_confirm\":65}"),
	             "feeds[0].arbitration.jump_confirm: 65 is out of range (1..64)");
	expect_error(FEED("\"arbitration\":{\"max_jump\":0}"),
	             "feeds[0].arbitration.max_jump: 0 is out of range");
	expect_error(FEED("\"arbitration\":{\"session_confirm\":0}"),
	             "feeds[0].arbitration.session_confirm: 0 is out of range");
	expect_error(FEED("\"arbitration\":{\"line_silent_ms\":0}"),
	             "feeds[0].arbitration.line_silent_ms: 0 is out of range");
	/* Every limit the engine enforces is refused here, naming the key (not at start). */
	expect_error(FEED("\"buffers\":{\"count\":16}"),
	             "feeds[0].buffers.count: 16 is out of range (64..32768)");
	expect_error(FEED("\"buffers\":{\"count\":65536}"),
	             "feeds[0].buffers.count: 65536 is out of range (64..32768)");
	expect_error(FEED("\"book\":{\"max_orders\":4294967296}"),
	             "feeds[0].book.max_orders: 4294967296 is out of range (1..1073741824)");
	expect_error(FEED("\"book\":{\"max_instruments\":65536}"),
	             "feeds[0].book.max_instruments: 65536 is out of range (1..65535)");
	expect_error(FEED("\"ring\":{\"capacity\":2147483648}"),
	             "feeds[0].ring.capacity: 2147483648 is out of range");
	expect_error(FEED("\"recovery\":{\"server\":\"10.0.0.1:5\",\"queue_packets\":16777217}"),
	             "feeds[0].recovery.queue_packets: 16777217 is out of range");
	expect_error(FEED("\"ring\":{\"group\":\"uf-no-such-group-x\"}"),
	             "feeds[0].ring.group: group \"uf-no-such-group-x\" does not exist");
	expect_error(FEED("\"ring\":{\"group\":\"\"}"), "feeds[0].ring.group: must not be empty");
	expect_error(FEED("\"ring\":{\"group\":7}"),
	             "feeds[0].ring.group: expected a string, got an integer 7");
	expect_error(FEED("\"arbitration\":{\"maxjump\":5}"),
	             "feeds[0].arbitration.maxjump: unknown key");
	expect_error(LINES("{\"group\":\"239.1.1.1\",\"port\":5,\"interface\":\"224.0.0.1\"}"),
	             "feeds[0].lines[0].interface: \"224.0.0.1\" is not a local interface address");
	expect_error("{\"feeds\":[{\"lines\":[{\"group\":\"239.1.1.1\",\"port\":5}]}]}",
	             "feeds[0].name: missing required key");
	expect_error(
	    "{\"feeds\":[{\"name\":\"a b\",\"lines\":[{\"group\":\"239.1.1.1\",\"port\":5}]}]}",
	    "feeds[0].name: \"a b\" may only hold letters, digits");
	expect_error(
	    "{\"feeds\":[{\"name\":\"a\",\"lines\":[{\"group\":\"239.1.1.1\",\"port\":5}]},"
	    "{\"name\":\"a\",\"lines\":[{\"group\":\"239.1.1.2\",\"port\":5}]}]}",
	    "feeds[1].name: duplicate feed name \"a\" (also feeds[0].name)");
	expect_error(
	    "{\"feeds\":[{\"name\":\"a\",\"lines\":[{\"group\":\"239.1.1.1\",\"port\":5}]},"
	    "{\"name\":\"b\",\"ring\":{\"name\":\"a\"},\"lines\":[{\"group\":\"239.1.1.2\","
	    "\"port\":5}]}]}",
	    "feeds[1].ring.name: duplicate ring name \"a\" (also the ring of feeds[0] \"a\")");
	expect_error(
	    "{\"feeds\":[{\"name\":\"a\",\"lines\":[{\"group\":\"239.1.1.1\",\"port\":5}]},"
	    "{\"name\":\"b\",\"lines\":[{\"group\":\"239.1.1.1\",\"port\":5}]}]}",
	    "feeds[1].lines[0]: group 239.1.1.1 port 5 is also feeds[0].lines[0]");
	expect_error(
	    "{\"feeds\":[{\"name\":\"a\",\"cpu\":0,\"lines\":[{\"group\":\"239.1.1.1\",\"port\":5}]"
	    "},"
	    "{\"name\":\"b\",\"cpu\":0,\"lines\":[{\"group\":\"239.1.1.2\",\"port\":5}]}]}",
	    "feeds[1].cpu: CPU 0 is already busy-polled by feeds[0] \"a\"");
	expect_error("{\"status\":{\"listen\":\"localhost:80\"},\"feeds\":[]}",
	             "status.listen: \"localhost:80\": \"localhost\" is not an IPv4 address");
	expect_error("{\"status\":{\"enabled\":1},\"feeds\":[]}",
	             "status.enabled: expected true or false");
	expect_error("{\"log\":{\"level\":\"verbose\"},\"feeds\":[]}",
	             "log.level: \"verbose\" is not one of");
	expect_error("{\"feeds\":[]}", "feeds: has 0 entries");
	expect_error("{}", "feeds: missing required key");
	expect_error("[]", "<string>: the top level must be an object, got an array");
	expect_error("{\"feeds\":[7]}", "feeds[0]: expected a feed object, got an integer 7");
}

/* "snapshot": parsed to its values, defaults for the rest, valid without "recovery", and
 * every refusal names the key. */
static void test_config_snapshot_keys_parse_and_refuse(void **state)
{
	struct uf_config cfg;
	char err[512];
	const struct uf_feed_config *f;

	assert_int_equal(uf_config_load_string(MIN_FEED, &cfg, err, sizeof(err)), 0);
	assert_int_equal(cfg.feeds[0].snapshot.enabled, 0);
	uf_config_free(&cfg);
	assert_int_equal(
	    uf_config_load_string(FEED("\"snapshot\":{\"server\":\"10.1.2.3:4000\",\"username\":"
	                               "\"u1\",\"password\":\"pw\"}"),
	                          &cfg, err, sizeof(err)),
	    0);
	f = &cfg.feeds[0];
	assert_int_equal(f->recovery.enabled, 0); /* a snapshot server alone is valid */
	assert_int_equal(f->snapshot.enabled, 1);
	assert_endpoint(&f->snapshot.server, "10.1.2.3", 4000);
	assert_string_equal(f->snapshot.username, "u1");
	assert_string_equal(f->snapshot.password, "pw");
	static const int64_t snapD[] = {1, 50000, 1000, 10000, 65536, 2000, 2000, 3};
	assert_snapshot(f, "", NWANT(snapD));
	uf_config_free(&cfg);
	assert_int_equal(
	    uf_config_load_string(
	        FEED("\"snapshot\":{\"server\":\"127.0.0.1:1\",\"username\":\"abcdef\","
	             "\"password\":\"0123456789\",\"session\":\"SESS000001\",\"on_start\":false,"
	             "\"max_gap_messages\":0,\"max_gap_age_ms\":250,\"timeout_ms\":3000,"
	             "\"buffer_packets\":1024,\"max_lead\":500,\"max_hold_ms\":700,"
	             "\"reload_uncertain\":0}"),
	        &cfg, err, sizeof(err)),
	    0);
	f = &cfg.feeds[0];
	static const int64_t snapW[] = {0, 0, 250, 3000, 1024, 500, 700, 0};
	assert_snapshot(f, "SESS000001", NWANT(snapW));
	uf_config_free(&cfg);
	/* left out, the hold shrinks to a shorter attempt; given, it must fit in it */
	assert_int_equal(uf_config_load_string(
	                     FEED("\"snapshot\":{\"server\":\"127.0.0.1:1\",\"username\":\"u\","
	                          "\"password\":\"p\",\"timeout_ms\":300}"),
	                     &cfg, err, sizeof(err)),
	                 0);
	assert_int_equal(cfg.feeds[0].snapshot.max_hold_ms, 300);
	uf_config_free(&cfg);
	expect_error(FEED("\"snapshot\":{\"server\":\"127.0.0.1:1\",\"username\":\"u\","
	                  "\"password\":\"p\",\"timeout_ms\":3000,\"max_hold_ms\":5000}"),
	             "feeds[0].snapshot.max_hold_ms: 5000 is above timeout_ms (3000)");
	expect_error(FEED("\"snapshot\":{\"server\":\"127.0.0.1:1\",\"username\":\"u\","
	                  "\"password\":\"p\",\"max_lead\":0}"),
	             "feeds[0].snapshot.max_lead: 0 is out of range");
	expect_error(FEED("\"snapshot\":{\"server\":\"127.0.0.1:1\",\"username\":\"u\","
	                  "\"password\":\"p\",\"reload_uncertain\":101}"),
	             "feeds[0].snapshot.reload_uncertain: 101 is out of range");
	expect_error(FEED("\"snapshot\":{\"username\":\"u\",\"password\":\"p\"}"),
	             "feeds[0].snapshot.server: missing required key");
	expect_error(FEED("\"snapshot\":{\"server\":\"127.0.0.1:1\",\"password\":\"p\"}"),
	             "feeds[0].snapshot.username: missing required key");
	expect_error(FEED("\"snapshot\":{\"server\":\"127.0.0.1:1\",\"username\":\"toolong\","
	                  "\"password\":\"p\"}"),
	             "feeds[0].snapshot.username");
	expect_error(FEED("\"snapshot\":{\"server\":\"127.0.0.1:1\",\"username\":\"a b\","
	                  "\"password\":\"p\"}"),
	             "feeds[0].snapshot.username: \"a b\": only printable ASCII");
	expect_error(FEED("\"snapshot\":{\"server\":\"239.1.1.1:1\",\"username\":\"u\","
	                  "\"password\":\"p\"}"),
	             "feeds[0].snapshot.server: \"239.1.1.1:1\": \"239.1.1.1\" is not a unicast");
	expect_error(FEED("\"snapshot\":{\"server\":\"127.0.0.1:1\",\"username\":\"u\","
	                  "\"password\":\"p\",\"timeout_ms\":0}"),
	             "feeds[0].snapshot.timeout_ms: 0 is out of range");
	expect_error(FEED("\"snapshot\":{\"server\":\"127.0.0.1:1\",\"username\":\"u\","
	                  "\"password\":\"p\",\"onstart\":true}"),
	             "feeds[0].snapshot.onstart: unknown key");
	expect_error(FEED("\"snapshot\":7"), "feeds[0].snapshot");
}

/* "capture": defaults, every key, and each refusal --check-config must give (the folder is
 * checked on the host: missing, not a folder, bad numbers). */
static void test_config_capture_keys_parse_and_refuse(void **state)
{
	struct uf_config cfg;
	char err[512];
	const struct uf_feed_config *f;
	(void)state;

	assert_int_equal(uf_config_load_string(MIN_FEED, &cfg, err, sizeof(err)), 0);
	assert_int_equal(cfg.feeds[0].capture.enabled, 0);
	uf_config_free(&cfg);
	assert_int_equal(
	    uf_config_load_string(FEED("\"capture\":{\"dir\":\"/tmp\"}"), &cfg, err, sizeof(err)),
	    0);
	f = &cfg.feeds[0];
	assert_int_equal(f->capture.enabled, 1);
	assert_string_equal(f->capture.dir, "/tmp");
	assert_int_equal(f->capture.rotate_mb, UF_FEED_DEFAULT_CAPTURE_ROTATE_MB);
	assert_int_equal(f->capture.buffer_mb, UF_FEED_DEFAULT_CAPTURE_BUFFER_MB);
	assert_true(f->capture.max_total_bytes == 0);
	uf_config_free(&cfg);
	assert_int_equal(uf_config_load_string(FEED("\"capture\":{\"dir\":\"/tmp\",\"rotate_mb\":"
	                                            "256,\"max_total_gb\":1.5,\"buffer_mb\":16}"),
	                                       &cfg, err, sizeof(err)),
	                 0);
	f = &cfg.feeds[0];
	assert_int_equal(f->capture.rotate_mb, 256);
	assert_int_equal(f->capture.buffer_mb, 16);
	assert_true(f->capture.max_total_bytes == 3ull << 29);
	uf_config_free(&cfg);
	expect_error(FEED("\"capture\":{\"rotate_mb\":5}"), "feeds[0].capture.dir: missing");
	expect_error(FEED("\"capture\":{\"dir\":\"/nonexistent/uf-capture\"}"),
	             "feeds[0].capture.dir: \"/nonexistent/uf-capture\": No such file");
	expect_error(FEED("\"capture\":{\"dir\":\"/etc/hostname\"}"),
	             "feeds[0].capture.dir: \"/etc/hostname\" is not a directory");
	expect_error(FEED("\"capture\":{\"dir\":\"/tmp\",\"rotate_mb\":0}"),
	             "feeds[0].capture.rotate_mb: 0 is out of range");
	expect_error(FEED("\"capture\":{\"dir\":\"/tmp\",\"buffer_mb\":1}"),
	             "feeds[0].capture.buffer_mb: 1 is out of range");
	expect_error(FEED("\"capture\":{\"dir\":\"/tmp\",\"max_total_gb\":-1}"),
	             "feeds[0].capture.max_total_gb: -1 is not a size");
	expect_error(FEED("\"capture\":{\"dir\":\"/tmp\",\"max_total_gb\":\"10G\"}"),
	             "feeds[0].capture.max_total_gb: \"10G\" is not a size");
	expect_error(FEED("\"capture\":{\"dir\":\"/tmp\",\"rotate_mb\":1024,\"max_total_gb\":1}"),
	             "holds less than two files");
	expect_error(FEED("\"capture\":{\"dir\":\"/tmp\",\"rotate\":1}"),
	             "feeds[0].capture.rotate: unknown key");
	/* a relative folder is the config's folder's, like symbols_file */
	char cdir[] = "/tmp/uf-cfg-cap-XXXXXX", path[256], want[300];
	assert_non_null(mkdtemp(cdir));
	snprintf(path, sizeof(path), "%s/cap", cdir);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(want, sizeof(want), "%s", path);
	snprintf(path, sizeof(path), "%s/c.json", cdir);
	FILE *fp = fopen(path, "w");
	assert_non_null(fp);
	fputs(FEED("\"capture\":{\"dir\":\"cap\"}"), fp);
	fclose(fp);
	assert_int_equal(uf_config_load(path, &cfg, err, sizeof(err)), 0);
	assert_string_equal(cfg.feeds[0].capture.dir, want);
	uf_config_free(&cfg);
	unlink(path);
	rmdir(want);
	rmdir(cdir);
	/* not writable: a read-only mount is refused even for root */
	char ro[] = "/tmp/uf-cfg-ro.XXXXXX";
	assert_non_null(mkdtemp(ro));
	if (mount("tmpfs", ro, "tmpfs", MS_RDONLY, "size=64k") == 0) {
		char json[256];
		snprintf(json, sizeof(json), FEED("\"capture\":{\"dir\":\"%s\"}"), ro);
		expect_error(json, "is not writable: Read-only file system");
		umount2(ro, MNT_DETACH);
	} else {
		fail_msg("mount a read-only tmpfs on %s: %s (needs root)", ro, strerror(errno));
	}
	rmdir(ro);
}

/* "idle_pause": true, false and "auto" (the same as leaving it out) each give their value. */
static void test_config_idle_pause_takes_true_false_and_auto(void **state)
{
	static const struct {
		const char *json;
		int want;
	} cases[] = {
	    {FEED("\"idle_pause\":true"), UF_FEED_IDLE_PAUSE_ON},
	    {FEED("\"idle_pause\":false"), UF_FEED_IDLE_PAUSE_OFF},
	    {FEED("\"idle_pause\":\"auto\""), UF_FEED_IDLE_PAUSE_AUTO},
	    {FEED("\"busy_clock\":false"), UF_FEED_IDLE_PAUSE_AUTO},
	};
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct uf_config cfg;
		char err[512];
		if (uf_config_load_string(cases[i].json, &cfg, err, sizeof(err)) != 0)
			fail_msg("%s: %s", cases[i].json, err);
		assert_int_equal(cfg.feeds[0].idle_pause, cases[i].want);
		uf_config_free(&cfg);
	}
}

/* Sizes inside every range but larger than this host's memory are refused up front (they
 * would fail at start with ENOMEM), naming the feed and the keys. Forced: 2^30 orders (a
 * 32 GiB order table); a host with that much free memory cannot run this test and says so.
 */
static void test_config_refuses_sizes_beyond_the_hosts_memory(void **state)
{
	const char *json = FEED("\"book\":{\"max_orders\":1073741824}");
	struct uf_config cfg;
	char err[512];
	unsigned long long kb = 0;
	char line[128];
	FILE *fp = fopen("/proc/meminfo", "r");
	assert_non_null(fp);
	while (fgets(line, sizeof(line), fp) && sscanf(line, "MemAvailable: %llu kB", &kb) != 1)
		;
	fclose(fp);
	if (kb == 0 || kb >= (32ull << 20))
		fail_msg("MemAvailable %llu kB: this test needs a host with less than 32 "
		         "GiB free",
		         kb);
	assert_int_equal(uf_config_load_string(json, &cfg, err, sizeof(err)), -EINVAL);
	if (!strstr(err, "feeds[0]: needs about ") || !strstr(err, "book.max_orders 1073741824") ||
	    !strstr(err, "ring.capacity 1048576") || !strstr(err, "(MemAvailable)"))
		fail_msg("message: %s", err);
	/* The same sizes for a small feed pass. */
	assert_int_equal(
	    uf_config_load_string(FEED("\"book\":{\"max_orders\":1000}"), &cfg, err, sizeof(err)),
	    0);
	uf_config_free(&cfg);
}

/* A ring larger than its directory's free space is refused up front, naming ring.capacity
 * and the directory (the ring's fallocate would fail at start). Forced: the smallest power
 * of two of records whose file exceeds what /dev/shm has free. */
static void test_config_refuses_a_ring_larger_than_its_directory(void **state)
{
	struct statvfs vfs;
	char json[512], err[512], want[128];
	struct uf_config cfg;
	const char *old = getenv("UF_RING_DIR");
	char saved[256] = "";
	if (old)
		snprintf(saved, sizeof(saved), "%s", old);
	setenv("UF_RING_DIR", "/dev/shm", 1);
	assert_int_equal(statvfs("/dev/shm", &vfs), 0);
	uint64_t free_bytes = (uint64_t)vfs.f_bavail * vfs.f_frsize;
	uint64_t cap = 1024;
	while (cap * 64 <= free_bytes && cap < (1ull << 30))
		cap <<= 1;
	if (cap * 64 <= free_bytes)
		fail_msg("/dev/shm has %llu bytes free: more than a 2^30-record ring needs",
		         (unsigned long long)free_bytes);
	snprintf(json, sizeof(json), FEED("\"ring\":{\"capacity\":%llu}"), (unsigned long long)cap);
	int r = uf_config_load_string(json, &cfg, err, sizeof(err));
	snprintf(want, sizeof(want), "feeds[0].ring.capacity: %llu records need a ring file",
	         (unsigned long long)cap);
	if (r != -EINVAL || !strstr(err, want) || !strstr(err, "/dev/shm has"))
		fail_msg("returned %d: %s\n  wanted: %s ... /dev/shm has", r, err, want);
	if (saved[0])
		setenv("UF_RING_DIR", saved, 1);
	else
		unsetenv("UF_RING_DIR");
}

/* ring.group names a group of this host, resolved to the gid the ring's files get. */
static void test_config_ring_group_resolves_to_its_gid(void **state)
{
	struct group *g = getgrgid(getegid());
	char json[512], err[512];
	struct uf_config cfg;
	assert_non_null(g);
	snprintf(json, sizeof(json), FEED("\"ring\":{\"mode\":\"0640\",\"group\":\"%s\"}"),
	         g->gr_name);
	assert_int_equal(uf_config_load_string(json, &cfg, err, sizeof(err)), 0);
	assert_int_equal(cfg.feeds[0].ring.has_gid, 1);
	assert_int_equal(cfg.feeds[0].ring.gid, getegid());
	uf_config_free(&cfg);
	assert_int_equal(uf_config_load_string(MIN_FEED, &cfg, err, sizeof(err)), 0);
	assert_int_equal(cfg.feeds[0].ring.has_gid, 0); /* not given: the creator's group */
	uf_config_free(&cfg);
}

/* ring.journal (docs/journal.md): an existing writable absolute directory, an fsync mode by
 * name, retention in days; each mistake named with its key path. */
static void test_config_ring_journal_parses_and_refuses(void **state)
{
	struct uf_config cfg;
	char err[512];

	(void)state;
	assert_int_equal(uf_config_load_string(MIN_FEED, &cfg, err, sizeof(err)), 0);
	assert_string_equal(cfg.feeds[0].ring.journal.dir, ""); /* default: no journal */
	uf_config_free(&cfg);
	assert_int_equal(
	    uf_config_load_string(FEED("\"ring\":{\"journal\":{\"dir\":\"/tmp\",\"fsync\":"
	                               "\"every_batch\",\"keep_days\":5}}"),
	                          &cfg, err, sizeof(err)),
	    0);
	assert_string_equal(cfg.feeds[0].ring.journal.dir, "/tmp");
	assert_int_equal(cfg.feeds[0].ring.journal.fsync, UF_JOURNAL_FSYNC_BATCH);
	assert_int_equal(cfg.feeds[0].ring.journal.keep_days, 5);
	assert_int_equal(cfg.feeds[0].ring.journal.interval_ms, 1000);
	uf_config_free(&cfg);
	expect_error(FEED("\"ring\":{\"journal\":{\"fsync\":\"none\"}}"),
	             "feeds[0].ring.journal.dir: missing required key");
	expect_error(FEED("\"ring\":{\"journal\":{\"dir\":\"/tmp\",\"fsync\":\"always\"}}"),
	             "feeds[0].ring.journal.fsync: \"always\" is not one of");
	expect_error(FEED("\"ring\":{\"journal\":{\"dir\":\"/nonexistent-uf-journal\"}}"),
	             "feeds[0].ring.journal.dir: \"/nonexistent-uf-journal\" is not a directory");
	expect_error(FEED("\"ring\":{\"journal\":{\"dir\":\"rel/dir\"}}"),
	             "feeds[0].ring.journal.dir: \"rel/dir\" is not an absolute path");
	expect_error(FEED("\"ring\":{\"journal\":{\"dir\":\"/tmp\",\"keep\":1}}"),
	             "feeds[0].ring.journal.keep");
}

static void test_config_syntax_errors_give_line_and_column(void **state)
{
	/* Line 3, after "port": a missing comma. */
	expect_error("{\"feeds\":[\n  {\"name\":\"n\",\n   \"port\":5 \"x\":1}]}", "<string>:3:");
	expect_error("{\"feeds\":[\n  {\"name\":\"n\",\n   \"port\":5 \"x\":1}]}", "syntax error");
	expect_error("{\"feeds\": [", "<string>:1:");
	expect_error("{\"a\":1,\"a\":2}", "duplicate object key");
}

static void test_config_missing_file_is_an_errno_error(void **state)
{
	struct uf_config cfg;
	char err[512];
	int r = uf_config_load("/nonexistent/uf.json", &cfg, err, sizeof(err));

	assert_true(r < 0);
	assert_int_not_equal(r, -EINVAL);
	assert_non_null(strstr(err, "/nonexistent/uf.json: cannot read"));
	assert_int_equal(uf_config_load("/tmp", &cfg, err, sizeof(err)), -EISDIR);
	assert_string_equal(err, "/tmp: cannot read: is a directory");
}

static void test_config_shipped_files_in_configs_are_valid(void **state)
{
	struct uf_config cfg;
	char err[512];

	assert_int_equal(
	    uf_config_load(UF_SOURCE_DIR "/configs/loopback.json", &cfg, err, sizeof(err)), 0);
	assert_int_equal(cfg.nfeeds, 1);
	assert_string_equal(cfg.feeds[0].name, "nasdaq");
	assert_int_equal(cfg.feeds[0].nlines, 2);
	assert_addr(cfg.feeds[0].lines[0].interface, "127.0.0.1");
	assert_int_equal(cfg.feeds[0].recovery.enabled, 1);
	uf_config_free(&cfg);

	/* The production example names CPUs 2-5, which a small test machine may lack: it
	 * must be valid apart from host checks, and fail on CPUs only when they are missing
	 * here. */
	assert_int_equal(uf_config_load_ex(UF_SOURCE_DIR "/configs/nasdaq-production.json",
	                                   UF_CFG_NO_HOST_CHECKS, &cfg, err, sizeof(err)),
	                 0);
	assert_int_equal(cfg.nfeeds, 2);
	assert_int_equal(cfg.feeds[0].ring.capacity, 4194304);
	assert_int_equal(cfg.feeds[0].ring.mode, 0640);
	assert_int_equal(cfg.feeds[1].nsymbols, 7);
	uf_config_free(&cfg);
	int r =
	    uf_config_load(UF_SOURCE_DIR "/configs/nasdaq-production.json", &cfg, err, sizeof(err));
	if (sysconf(_SC_NPROCESSORS_ONLN) < 6) {
		assert_int_equal(r, -EINVAL);
		assert_non_null(strstr(err, "feeds[0].cpu: CPU 2 does not exist"));
	} else {
		assert_int_equal(r, 0);
		uf_config_free(&cfg);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_config_minimal_file_gets_documented_defaults),
	    cmocka_unit_test(test_config_two_venues_in_one_daemon),
	    cmocka_unit_test(test_config_left_out_keys_are_the_engines_defaults),
	    cmocka_unit_test(test_config_every_key_parses_to_its_value),
	    cmocka_unit_test(test_config_symbols_file_is_read_relative_to_the_config),
	    cmocka_unit_test(test_config_symbols_file_must_be_a_nonempty_regular_file),
	    cmocka_unit_test(test_config_reload_compares_every_field_and_no_padding),
	    cmocka_unit_test(test_config_semantic_errors_name_key_path_and_value),
	    cmocka_unit_test(test_config_capture_keys_parse_and_refuse),
	    cmocka_unit_test(test_config_snapshot_keys_parse_and_refuse),

	    cmocka_unit_test(test_config_idle_pause_takes_true_false_and_auto),
	    cmocka_unit_test(test_config_refuses_sizes_beyond_the_hosts_memory),
	    cmocka_unit_test(test_config_ring_group_resolves_to_its_gid),
	    cmocka_unit_test(test_config_ring_journal_parses_and_refuses),
	    cmocka_unit_test(test_config_refuses_a_ring_larger_than_its_directory),
	    cmocka_unit_test(test_config_syntax_errors_give_line_and_column),
	    cmocka_unit_test(test_config_missing_file_is_an_errno_error),
	    cmocka_unit_test(test_config_shipped_files_in_configs_are_valid),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
