/* uf-bridge fan-out with real servers, what remote consumers see: libufconsumer "nats://"
 * and uf-tail --nats end with exactly the local books on a day with losses, when they join
 * late (the bucket's books, then the stream) or hand a snapshot over to the stream, when they
 * read nothing (the bridge is not held back) or fall a buffer behind (lapped exactly), when
 * the bridge itself is lapped, and on the per-symbol subjects. Split from test_bridge.c; the
 * fixture is bridge_case.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <nats/nats.h>

#include "bridge_case.h"
#include "ring/nats/nats_book.h"
#include "ring/nats/uf_nats_wire.h"

/* A day with losses (every 997th message an unrecovered gap): the remote books equal the
 * local ones, through the library and through uf-tail --nats. */
static void test_remote_books_equal_local_books_on_a_day_with_loss(void **state)
{
	struct bt_case k;
	const char *day = bt_gen_day(50000, 30, 7);
	char *feed, *st;

	case_begin(&k, "loss", 1);
	case_start(&k, day, "0", "997", k.ns.urls, "1");
	case_go(&k);
	feed = case_finish(&k);
	assert_true(bt_json_num(feed, "gaps") >= 50);
	st = uf_test_slurp(k.status);
	assert_int_equal(bt_json_num(st, "published"), bt_json_num(feed, "records"));
	assert_int_equal(bt_json_num(st, "laps"), 0);
	expect_local_books(&k, remote_books(&k, k.ns.urls));
	free(feed);
	free(st);
	case_end(&k);
}

/* A consumer that attaches while the day is half played starts from the bucket's books (its
 * first sequence is not 0: it never read the first half) and ends with the right books. */
static void test_late_remote_consumer_snapshot_then_stream(void **state)
{
	struct bt_case k;
	const char *day = bt_gen_day(40000, 30, 13);
	struct uf_consumer_info info;
	struct drain d = {0};
	char *feed, *ref, *st;
	uf_consumer_t *c;

	case_begin(&k, "late", 1);
	ref = decode_books(day);
	case_start(&k, day, "20000", "0", k.ns.urls, "1");
	case_go(&k);
	st = bt_wait_status(k.status, "published", 30000, 30000);
	free(st);
	c = remote_attach(k.ns.urls, k.ring);
	uf_consumer_get_info(c, &info);
	assert_true(info.position >= 30000);
	d.next = info.position;
	drain(c, &d, 0, NULL, NULL);
	feed = case_finish(&k);
	assert_int_equal(d.next, bt_json_num(feed, "tail"));
	expect_remote_books(c, ref);
	uf_consumer_detach(c);
	free(feed);
	free(ref);
	case_end(&k);
}

/* A remote consumer that reads nothing while the whole day goes through: the bridge finishes
 * (everything published, never lapped) before the consumer read a single record; the
 * consumer then still gets every record. */
static void test_slow_remote_consumer_never_slows_the_bridge(void **state)
{
	struct bt_case k;
	const char *day = bt_gen_day(50000, 30, 17);
	struct uf_consumer_info info;
	struct drain d = {0};
	char *feed, *st;
	uf_consumer_t *c;

	feed = case_play_unread(&k, "slow", day, &c);
	uf_consumer_get_info(c, &info);
	assert_int_equal(info.received, 0);
	st = uf_test_slurp(k.status);
	assert_int_equal(bt_json_num(st, "published"), bt_json_num(feed, "records"));
	assert_int_equal(bt_json_num(st, "laps"), 0);
	drain(c, &d, 0, NULL, NULL);
	assert_int_equal(d.received, bt_json_num(feed, "records"));
	uf_consumer_detach(c);
	free(feed);
	free(st);
	case_end(&k);
}

/* The bridge is stopped (SIGSTOP) until the ring laps it: it must say so on the stream (the
 * remote consumer loses exactly the records the bridge lost, lap for lap), re-snapshot from
 * the ring's image, and the remote consumer must still end with the local books. */
static void test_lapped_bridge_resnapshots_and_remote_consumer_sees_the_lap(void **state)
{
	struct bt_case k;
	const char *day = bt_gen_day(40000, 30, 19);
	struct uf_consumer_options co;
	struct uf_consumer_info li;
	struct laps seen = {0};
	uf_consumer_t *c, *local;
	uint64_t stopped_at, end;
	char *st, *feed, err[256];

	case_begin(&k, "lap", 1);
	/* image depth 64: the re-snapshot is then the whole book of every instrument */
	case_start_cap(&k, day, "20000", "0", k.ns.urls, "1", "4096", "64");
	uf_consumer_options_init(&co);
	assert_int_equal(uf_consumer_attach(k.ring, &co, &local, err, sizeof(err)), 0);
	c = remote_attach(k.ns.urls, k.ring);
	case_go(&k);
	st = bt_wait_status(k.status, "published", 20000, 30000);
	free(st);
	assert_int_equal(kill(k.bridge, SIGSTOP), 0);
	uf_consumer_get_info(local, &li);
	stopped_at = li.tail;
	for (end = bt_now_ms() + 30000; li.tail < stopped_at + 2 * 4096 && !li.closed;) {
		assert_true(bt_now_ms() < end);
		bt_sleep_ms(5);
		uf_consumer_get_info(local, &li);
	}
	assert_true(li.tail >= stopped_at + 2 * 4096); /* the ring went round past the bridge */
	assert_int_equal(kill(k.bridge, SIGCONT), 0);
	read_to_close(c, 60000, NULL, count_lap, &seen);
	feed = case_finish(&k);
	st = uf_test_slurp(k.status);
	/* at least the forced lap; a loaded machine may lap the bridge again while it
	 * re-snapshots (the ring holds 90 ms here): each one must reach the consumer */
	assert_true(bt_json_num(st, "laps") >= 1);
	assert_true(bt_json_num(st, "lost") > 0);
	assert_int_equal(seen.laps, bt_json_num(st, "laps"));
	assert_int_equal(seen.lost, bt_json_num(st, "lost"));
	expect_local_books(&k, bt_render_books(c, 10));
	uf_consumer_detach(c);
	uf_consumer_detach(local);
	free(st);
	free(feed);
	case_end(&k);
}

/* --per-symbol: the records of one instrument, read back from uf.RING.rec.SYMBOL with their
 * ring sequences, are exactly that instrument's records in the ring, in order. */
static void test_per_symbol_subject_holds_exactly_the_instruments_records(void **state)
{
	struct bt_case k;
	const char *day = bt_gen_day(20000, 30, 41);
	struct uf_consumer_options co;
	struct uf_book_snapshot snap;
	struct uf_record recs[256], *want;
	uint64_t *want_seq, nwant = 0, got = 0, seq, cnt[65536] = {0};
	uint32_t best = 0;
	uf_consumer_t *local;
	natsConnection *nc = NULL;
	natsSubscription *sub = NULL;
	jsSubOptions so;
	jsCtx *js = NULL;
	char subj[128], err[256], *feed, *st;
	int n;

	case_begin(&k, "sym", 1);
	g_per_symbol = 1;
	k.feed = case_feed(&k, day, "0", "0", "1048576", "10", k.start, k.feed_out);
	case_bridge(&k, k.ns.urls, "1", 1);
	g_per_symbol = 0;
	uf_consumer_options_init(&co);
	co.start = UF_CONSUMER_START_OLDEST;
	assert_int_equal(uf_consumer_attach(k.ring, &co, &local, err, sizeof(err)), 0);
	case_go(&k);
	feed = case_finish(&k);
	st = uf_test_slurp(k.status);
	assert_true(bt_json_num(st, "sym_msgs") > 0);
	assert_int_equal(bt_json_num(st, "sym_failed"), 0);
	/* the busiest named instrument, and its records as the ring has them */
	want = malloc(sizeof(*want) * 200000);
	want_seq = malloc(sizeof(*want_seq) * 200000);
	assert_non_null(want);
	assert_non_null(want_seq);
	{
		struct uf_record *all = malloc(sizeof(*all) * 200000);
		uint64_t nall = 0;
		assert_non_null(all);
		while ((n = uf_consumer_read(local, recs, 256, &seq)) > 0) {
			assert_int_equal(seq, nall);
			for (int i = 0; i < n && nall < 200000; i++) {
				all[nall++] = recs[i];
				cnt[recs[i].instrument & 0xffff]++;
			}
		}
		assert_int_equal(nall, bt_json_num(feed, "records"));
		for (uint32_t i = 1; i < 65536; i++)
			if (cnt[i] > cnt[best] && uf_consumer_snapshot(local, i, &snap) == 0 &&
			    snap.symbol[0])
				best = i;
		assert_true(cnt[best] > 100);
		for (uint64_t i = 0; i < nall; i++) {
			if (all[i].instrument == best) {
				want[nwant] = all[i];
				want_seq[nwant++] = i;
			}
		}
		free(all);
	}
	assert_int_equal(uf_consumer_snapshot(local, best, &snap), 0);
	snprintf(subj, sizeof(subj), "uf.%s.rec.%s", k.ring, snap.symbol);
	assert_int_equal(natsConnection_ConnectTo(&nc, k.ns.urls), NATS_OK);
	assert_int_equal(natsConnection_JetStream(&js, nc, NULL), NATS_OK);
	jsSubOptions_Init(&so);
	so.Ordered = true;
	assert_int_equal(js_SubscribeSync(&sub, js, subj, NULL, &so, NULL), NATS_OK);
	while (got < nwant) {
		natsMsg *m = NULL;
		struct uf_nats_msg h;
		const char *d;
		if (natsSubscription_NextMsg(&m, sub, 5000) != NATS_OK)
			fail_msg("%s: %" PRIu64 " of %" PRIu64 " records", subj, got, nwant);
		d = natsMsg_GetData(m);
		assert_true(natsMsg_GetDataLength(m) >= (int)sizeof(h));
		memcpy(&h, d, sizeof(h));
		assert_int_equal(h.kind, UF_NATS_SYMBOL);
		assert_int_equal(natsMsg_GetDataLength(m),
		                 sizeof(h) +
		                     h.count * (sizeof(struct uf_record) + sizeof(uint64_t)));
		for (uint32_t i = 0; i < h.count; i++) {
			struct uf_record r;
			uint64_t s;
			memcpy(&r, d + sizeof(h) + i * sizeof(r), sizeof(r));
			memcpy(&s, d + sizeof(h) + h.count * sizeof(r) + i * sizeof(s), sizeof(s));
			assert_true(got < nwant);
			assert_int_equal(s, want_seq[got]);
			assert_memory_equal(&r, &want[got], sizeof(r));
			got++;
		}
		natsMsg_Destroy(m);
	}
	natsSubscription_Destroy(sub);
	jsCtx_Destroy(js);
	natsConnection_Destroy(nc);
	/* the ordered subject, read past the per-symbol messages in the same stream */
	expect_local_books(&k, remote_books(&k, k.ns.urls));
	uf_consumer_detach(local);
	free(want);
	free(want_seq);
	free(feed);
	free(st);
	case_end(&k);
}

/* An application that reads nothing while more than its buffer (262,144 records) arrives is
 * lapped like a local consumer of a small ring: one -EOVERFLOW naming exactly the records it
 * lost (the quarter-ring headroom rule of the local ring), then the rest in order. */
static void test_remote_consumer_falling_a_buffer_behind_is_lapped_exactly(void **state)
{
	struct bt_case k;
	const char *day = bt_gen_day(150000, 30, 43);
	struct uf_consumer_info info;
	struct uf_consumer_lap lap;
	struct uf_record rec;
	struct drain d = {0};
	uint64_t total, end, seq;
	char *feed;
	uf_consumer_t *c;

	feed = case_play_unread(&k, "own", day, &c);
	total = (uint64_t)bt_json_num(feed, "records");
	assert_true(total > 262144 + 1000);                 /* more than the consumer's buffer */
	for (end = bt_now_ms() + 60000;; bt_sleep_ms(20)) { /* the receiver has it all */
		uf_consumer_get_info(c, &info);
		if (info.tail == total)
			break;
		assert_true(bt_now_ms() < end);
	}
	assert_int_equal(info.received, 0);
	assert_int_equal(uf_consumer_next(c, &rec, &seq), -EOVERFLOW);
	uf_consumer_last_lap(c, &lap);
	assert_int_equal(lap.from_seq, 0);
	assert_int_equal(lap.resume_seq, total - (262144 - 262144 / 4));
	assert_int_equal(lap.lost, lap.resume_seq);
	d.next = lap.resume_seq;
	drain(c, &d, 0, NULL, NULL);
	assert_int_equal(d.next, total);
	uf_consumer_get_info(c, &info);
	assert_int_equal(info.lost, lap.lost);
	assert_int_equal(info.laps, 1);
	uf_consumer_detach(c);
	free(feed);
	case_end(&k);
}

struct handover {
	struct uf_nats_books bk;
	uint64_t applied; /* records that changed a book */
};

static void apply_batch(const struct uf_record *r, int n, uint64_t seq, void *arg)
{
	struct handover *h = arg;

	for (int i = 0; i < n; i++)
		h->applied += uf_nats_books_apply(&h->bk, &r[i], seq + (uint64_t)i) > 0;
}

static int seed_snapshot(const struct uf_book_snapshot *s, void *arg)
{
	struct uf_nats_books *bk = arg;
	assert_int_equal(uf_nats_books_seed(bk, s), 0);
	return 0;
}

/* The documented handover, done by an application on a remote handle mid-stream: snapshot
 * every book, seek to the smallest stamp, apply each instrument's records from its stamp on.
 * Its books must end equal to the producer's (image depth 64: the snapshots are whole). */
static void test_remote_snapshot_then_stream_handover_ends_with_local_books(void **state)
{
	struct bt_case k;
	const char *day = bt_gen_day(40000, 30, 47);
	struct handover h = {0};
	struct uf_consumer_info info;
	struct bt_books l = {0};
	uint64_t from;
	char *st, *feed;
	uf_consumer_t *c;

	case_begin(&k, "hand", 1);
	case_start_cap(&k, day, "20000", "0", k.ns.urls, "1", "1048576", "64");
	case_go(&k);
	st = bt_wait_status(k.status, "published", 20000, 30000);
	free(st);
	c = remote_attach(k.ns.urls, k.ring);
	uf_consumer_get_info(c, &info);
	assert_int_equal(uf_nats_books_init(&h.bk, info.max_instruments, 0), 0);
	assert_int_equal(uf_consumer_snapshot_all(c, seed_snapshot, &h.bk), 0);
	from = info.position;
	for (uint32_t i = 0; i < h.bk.max; i++)
		if (uf_nats_books_apply_from(&h.bk, i) < from)
			from = uf_nats_books_apply_from(&h.bk, i);
	assert_true(from > 0); /* mid-stream */
	assert_int_equal(uf_consumer_seek(c, from), 0);
	read_to_close(c, 60000, apply_batch, NULL, &h);
	feed = case_finish(&k);
	assert_true(h.applied > 1000);
	for (uint32_t i = 0; i < h.bk.max; i++) {
		struct uf_book_snapshot s;
		if (uf_nats_books_snapshot(&h.bk, i, 64, 0, &s) == 0)
			bt_collect(&s, &l);
	}
	expect_local_books(&k, bt_render_list(l, 10));
	uf_nats_books_free(&h.bk);
	uf_consumer_detach(c);
	free(feed);
	case_end(&k);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_teardown(test_remote_books_equal_local_books_on_a_day_with_loss,
	                              case_teardown),
	    cmocka_unit_test_teardown(test_late_remote_consumer_snapshot_then_stream,
	                              case_teardown),
	    cmocka_unit_test_teardown(
	        test_remote_snapshot_then_stream_handover_ends_with_local_books, case_teardown),
	    cmocka_unit_test_teardown(test_slow_remote_consumer_never_slows_the_bridge,
	                              case_teardown),
	    cmocka_unit_test_teardown(
	        test_remote_consumer_falling_a_buffer_behind_is_lapped_exactly, case_teardown),
	    cmocka_unit_test_teardown(
	        test_lapped_bridge_resnapshots_and_remote_consumer_sees_the_lap, case_teardown),
	    cmocka_unit_test_teardown(test_per_symbol_subject_holds_exactly_the_instruments_records,
	                              case_teardown),
	};
	return BT_RUN_GROUP("bridge-consumers", tests);
}
