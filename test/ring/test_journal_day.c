/* A consumer attached from the journal at 90 % of a day ends with the producer's books and a
 * continuous sequence. The day (uf-gen) goes through the engine's own path, as the feed thread
 * plays it: decode -> publisher -> sink (feed/sink.h: ring, book image, and the journal writer
 * of ring.journal); the ring is 1024 records, so it laps dozens of times before the consumer
 * attaches. The reference is the day itself as the producer ended it: the book image, which
 * the sink builds from the publisher's books. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "decode/uf_decode.h"
#include "decode/uf_reader.h"
#include "feed/sink.h"
#include "feed/uf_feed_config.h"
#include "publish/uf_publish.h"
#include "ring/journal_writer.h"
#include "ring/ufbook.h"
#include "ring/ufconsumer.h"
#include "ring/uf_ring.h"
#include "ring_test_util.h"
#include "test/common/uf_test_dir.h"
#include "test/common/uf_test_run.h"

#define CAP      1024u
#define MESSAGES 60000u
#define MAX_INST 2048u

static char g_dir[128];

static int setup(void **state)
{
	(void)state;
	snprintf(g_dir, sizeof(g_dir), "/tmp/uf_journal_day.XXXXXX");
	return mkdtemp(g_dir) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	uf_test_rm_tree(g_dir);
	return 0;
}

struct day {
	struct uf_publisher *p;
	struct uf_sink sink;
	struct uf_reader rd;
	struct uf_decode_counters dc;
	uint64_t messages;      /* played so far */
	uint64_t sink_errors;   /* uf_sink_records calls that failed: the feed's image_errors */
	uf_book_builder_t *all; /* when set: every record applied as published (a reference) */
};

/* Plays the next message; returns 0 at the end of the file. Keeps the journal writer, when
 * there is one, within half a ring (waits for it, bounded): a 2-CPU host must not let the ring
 * lap it. */
static int play_one(struct day *d)
{
	struct uf_record recs[UF_REC_MAX_PER_MSG];
	struct uf_reader_msg rm;
	struct uf_itch_msg m;
	struct uf_journal_stats js;
	uint64_t end;
	int n;

	do {
		if (uf_reader_next(&d->rd, &rm) <= 0)
			return 0;
	} while (uf_decode_msg_counted(rm.msg, rm.len, &m, &d->dc) != 0);
	d->messages++;
	n = uf_publish_apply(d->p, &m, rm.seq, uf_now_realtime_ns(), recs, UF_REC_MAX_PER_MSG);
	if (n > 0) {
		uint64_t first = uf_ring_tail(d->sink.ring);
		if (uf_sink_records(&d->sink, recs, (size_t)n, recs[0].rx_ts) < 0)
			d->sink_errors++;
		for (int i = 0; d->all && i < n; i++)
			assert_true(uf_book_builder_apply(d->all, &recs[i], first + (uint64_t)i) >=
			            0);
	}
	if (!d->sink.journal)
		return 1;
	end = uf_now_mono_ns() + 10000000000ull;
	for (;;) {
		uf_journal_get_stats(d->sink.journal, &js);
		if (uf_ring_tail(d->sink.ring) - js.position <= CAP / 2)
			break;
		if (uf_now_mono_ns() > end)
			fail_msg("journal writer stuck at %llu", (unsigned long long)js.position);
		usleep(50);
	}
	return 1;
}

/* Reads what the consumer has, applies it; checks the sequence runs on from *next. */
static uint64_t drain(uf_consumer_t *c, uf_book_builder_t *b, uint64_t *next)
{
	struct uf_record recs[256];
	uint64_t got = 0;

	for (;;) {
		uint64_t first = 0;
		int n = uf_consumer_read(c, recs, 256, &first);
		if (n == -EAGAIN)
			return got;
		if (n < 0)
			fail_msg("read at %llu: %s", (unsigned long long)*next,
			         uf_consumer_strerror(n));
		if (first != *next)
			fail_msg("sequence %llu after %llu: a gap or a duplicate",
			         (unsigned long long)first, (unsigned long long)*next);
		for (int i = 0; i < n; i++)
			assert_true(uf_book_builder_apply(b, &recs[i], first + (uint64_t)i) >= 0);
		*next += (uint64_t)n;
		got += (uint64_t)n;
	}
}

struct cmp {
	uf_book_builder_t *b;
	uint32_t books;
	uint32_t most_status; /* the most status codes one book had */
};

/* One image entry against the consumer's book: the levels the image holds, the flags, the
 * last trade, volume, trade count and every status. */
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
	assert_true(got.nbid >= img->nbid);
	assert_true(got.nask >= img->nask);
	if (!(img->flags & UF_BOOKF_TRUNCATED_BID))
		assert_int_equal(got.nbid, img->nbid);
	if (!(img->flags & UF_BOOKF_TRUNCATED_ASK))
		assert_int_equal(got.nask, img->nask);
	assert_memory_equal(got.bid, img->bid, img->nbid * sizeof(img->bid[0]));
	assert_memory_equal(got.ask, img->ask, img->nask * sizeof(img->ask[0]));
	assert_int_equal(got.volume, img->volume);
	assert_int_equal(got.trades, img->trades);
	assert_int_equal(got.last_price, img->last_price);
	assert_int_equal(got.flags & UF_BOOKF_STALE, img->flags & UF_BOOKF_STALE);
	assert_int_equal(got.nstatus, img->nstatus);
	assert_memory_equal(got.status, img->status, img->nstatus * sizeof(img->status[0]));
	if (img->nstatus > x->most_status)
		x->most_status = img->nstatus;
	x->books++;
	return 0;
}

/* A publisher for the day and the feed config of its sink (ring `tag`, named into name[]). */
static void day_setup(struct day *d, struct uf_feed_config *cfg, char *name, size_t nlen,
                      const char *tag)
{
	struct uf_publish_params pp;
	memset(d, 0, sizeof(*d));
	uf_publish_params_default(&pp);
	pp.max_orders = 1000000;
	pp.max_instruments = MAX_INST;
	pp.numa_node = -1;
	assert_int_equal(uf_publish_create(&pp, &d->p), 0);
	uf_feed_config_defaults(cfg);
	test_ring_name(name, nlen, tag);
	snprintf(cfg->name, sizeof(cfg->name), "%s", name);
	snprintf(cfg->ring.name, sizeof(cfg->ring.name), "%s", name);
	cfg->ring.capacity = CAP;
	cfg->book.depth = 10;
	cfg->book.max_orders = pp.max_orders;
	cfg->book.max_instruments = MAX_INST;
}

static void test_consumer_from_the_journal_at_90_percent_ends_with_the_days_books(void **state)
{
	char day_path[200], jdir[200], name[32], err[256] = "";
	const char *argv[] = {"uf-gen",    "--out", day_path, "--messages", "60000",
	                      "--symbols", "40",    "--seed", "7",          NULL};
	struct uf_test_run run;
	struct uf_feed_config cfg;
	struct uf_consumer_options co;
	struct uf_journal_stats js;
	uf_consumer_t *c = NULL, *image = NULL;
	uf_book_builder_t *b = NULL;
	struct day d;
	uint64_t next, played_at_attach;
	struct cmp x = {0};

	(void)state;
	snprintf(day_path, sizeof(day_path), "%s/day.itch", g_dir);
	snprintf(jdir, sizeof(jdir), "%s/journal", g_dir);
	assert_int_equal(mkdir(jdir, 0755), 0);
	uf_test_run_path(UF_BIN_DIR "/uf-gen", argv, 60000, &run);
	assert_int_equal(run.status, 0);
	uf_test_run_free(&run);

	day_setup(&d, &cfg, name, sizeof(name), "jdayfeed");
	snprintf(cfg.ring.journal.dir, sizeof(cfg.ring.journal.dir), "%s", jdir);
	cfg.ring.journal.fsync = UF_JOURNAL_FSYNC_NONE;
	if (uf_sink_open(&d.sink, &cfg, d.p, err, sizeof(err)) < 0)
		fail_msg("sink: %s", err);
	assert_non_null(d.sink.journal);
	assert_int_equal(uf_reader_open(&d.rd, day_path, NULL), 0);

	while (d.messages < MESSAGES * 9 / 10 && play_one(&d))
		;
	played_at_attach = d.messages;
	assert_true(uf_ring_tail(d.sink.ring) / CAP >= 10); /* the ring lapped >= 10 times */

	uf_consumer_options_init(&co);
	co.start = UF_CONSUMER_START_JOURNAL;
	if (uf_consumer_attach(name, &co, &c, err, sizeof(err)) < 0)
		fail_msg("attach: %s", err);
	assert_int_equal(uf_book_builder_create(MAX_INST, &b), 0);
	next = 0;            /* the day's first record */
	while (play_one(&d)) /* the rest of the day, read while it is published */
		drain(c, b, &next);
	assert_true(d.messages > played_at_attach);
	assert_int_equal(d.sink_errors, 0);
	assert_int_equal(uf_sink_image_flush(&d.sink), 0);
	assert_int_equal(uf_journal_sync(d.sink.journal, 5000000000ll), 0);
	drain(c, b, &next);
	assert_int_equal(next, uf_ring_tail(d.sink.ring)); /* every record, once */
	uf_journal_get_stats(d.sink.journal, &js);
	assert_int_equal(js.holes, 0);
	assert_int_equal(js.records, next);

	x.b = b;
	assert_int_equal(uf_consumer_attach(name, NULL, &image, err, sizeof(err)), 0);
	assert_int_equal(uf_consumer_snapshot_all(image, cmp_one, &x), 0);
	assert_true(x.books >= 20); /* the day's books, compared */
	fprintf(stderr, "%llu records over %llu laps, %u books equal, up to %u status codes\n",
	        (unsigned long long)next, (unsigned long long)(next / CAP), x.books, x.most_status);

	uf_consumer_detach(image);
	uf_consumer_detach(c);
	uf_book_builder_destroy(b);
	uf_reader_close(&d.rd);
	uf_sink_close(&d.sink);
	uf_publish_destroy(d.p);
}

/* The feed-level check of the status slots: a day whose busiest stock receives 11 status
 * codes (uf-gen: L H Y K J O h, I and N; seed and size chosen so) goes through the sink
 * without one refusal (ring layout 1 kept 8 codes and refused the rest: image_errors in the
 * daemon's /status), and every image entry, statuses included, equals a book model that
 * applied every record as it was published. */
static void test_generated_day_puts_every_status_in_the_image(void **state)
{
	char day_path[200], name[32], err[256] = "";
	const char *argv[] = {"uf-gen",    "--out", day_path, "--messages", "100000",
	                      "--symbols", "3",     "--seed", "1",          NULL};
	struct uf_test_run run;
	struct uf_feed_config cfg;
	uf_consumer_t *image = NULL;
	struct day d;
	struct cmp x = {0};

	(void)state;
	snprintf(day_path, sizeof(day_path), "%s/statusday.itch", g_dir);
	uf_test_run_path(UF_BIN_DIR "/uf-gen", argv, 60000, &run);
	assert_int_equal(run.status, 0);
	uf_test_run_free(&run);

	day_setup(&d, &cfg, name, sizeof(name), "statusday");
	if (uf_sink_open(&d.sink, &cfg, d.p, err, sizeof(err)) < 0)
		fail_msg("sink: %s", err);
	assert_int_equal(uf_book_builder_create(MAX_INST, &d.all), 0);
	assert_int_equal(uf_reader_open(&d.rd, day_path, NULL), 0);
	while (play_one(&d))
		;
	assert_int_equal(uf_sink_image_flush(&d.sink), 0);
	assert_int_equal(d.sink_errors, 0);

	x.b = d.all;
	assert_int_equal(uf_consumer_attach(name, NULL, &image, err, sizeof(err)), 0);
	assert_int_equal(uf_consumer_snapshot_all(image, cmp_one, &x), 0);
	fprintf(stderr, "%llu messages, %u books equal, up to %u status codes\n",
	        (unsigned long long)d.messages, x.books, x.most_status);
	assert_true(x.books >= 3);
	assert_true(x.most_status > 8); /* the day has what layout 1 could not hold */

	uf_consumer_detach(image);
	uf_book_builder_destroy(d.all);
	uf_reader_close(&d.rd);
	uf_sink_close(&d.sink);
	uf_publish_destroy(d.p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(
	        test_consumer_from_the_journal_at_90_percent_ends_with_the_days_books, setup,
	        teardown),
	    cmocka_unit_test_setup_teardown(test_generated_day_puts_every_status_in_the_image,
	                                    setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
