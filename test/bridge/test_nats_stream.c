/* What a remote consumer believes of the bridge's stream (ring/nats/nats_stream.c), against a
 * fake stream and bucket (nats_stream_fake.h): every rule of nats_stream.h, one by one, with
 * messages in the bridge's own form as a second NATS client could publish them, and the
 * receiver giving up (`failed`) when the bucket cannot be read. No server. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "nats_stream_fake.h"
#include "ring/nats/nats_codec.h"

#define GEN 7

static unsigned char g_buf[sizeof(struct uf_nats_msg) + 8 * sizeof(struct uf_record)];
static char g_id[UF_NATS_MSG_ID_MAX];

/* Delivers one message in the bridge's form at stream sequence `sseq`. */
static int deliver(struct uf_nats_stream *s, const struct uf_nats_stream_hooks *hk, uint64_t sseq,
                   uint64_t gen, uint8_t kind, uint64_t first, uint64_t aux, uint32_t count)
{
	size_t len = fake_msg(g_buf, g_id, gen, kind, first, aux, count);
	return uf_nats_stream_on_msg(s, hk, g_buf, len, g_id, sseq);
}

static void world(struct fake_world *w, uint64_t position, uint64_t js_from)
{
	memset(w, 0, sizeof(*w));
	w->first_sseq = 1;
	w->max = 4;
	w->cm.magic = UF_NATS_COMMIT_MAGIC;
	w->cm.version = UF_NATS_VERSION;
	w->cm.generation = GEN;
	w->cm.position = position;
	w->cm.js_from = js_from;
	w->cm.max_instruments = 4;
}

static void test_continuing_data_is_applied_and_replays_are_refused(void **state)
{
	struct fake_world w;
	struct uf_nats_stream s;
	struct uf_nats_stream_hooks hk;
	struct uf_book_snapshot snap;

	(void)state;
	world(&w, 100, 10);
	assert_int_equal(fake_begin(&s, &hk, &w), 0);
	/* right after attach the stream re-sends records below the commit's position: silent */
	assert_int_equal(deliver(&s, &hk, 10, GEN, UF_NATS_DATA, 96, 0, 4), 0);
	assert_int_equal(s.forged, 0);
	assert_int_equal(deliver(&s, &hk, 11, GEN, UF_NATS_DATA, 98, 0, 4), 0);
	assert_int_equal(s.tail, 102);
	assert_int_equal(s.seqs[100 & s.mask], 100);
	assert_int_equal(s.seqs[101 & s.mask], 101);
	assert_int_equal(uf_nats_books_snapshot(&s.books, 1, 10, s.tail, &snap), 0);
	assert_int_equal(snap.bid[0].shares, 102); /* the last LEVEL (seq 101) */
	/* now a replay of records already held is not the bridge's */
	assert_int_equal(deliver(&s, &hk, 12, GEN, UF_NATS_DATA, 98, 0, 3), 0);
	assert_int_equal(s.forged, 1);
	/* a redelivery (stream sequence already seen) is not counted */
	assert_int_equal(deliver(&s, &hk, 11, GEN, UF_NATS_DATA, 98, 0, 4), 0);
	assert_int_equal(s.forged, 1);
	assert_int_equal(s.tail, 102);
	assert_int_equal(w.loads + w.drops + w.closes, 0);
	fake_end(&s);
}

static void test_messages_not_in_the_bridge_form_are_refused(void **state)
{
	struct fake_world w;
	struct uf_nats_stream s;
	struct uf_nats_stream_hooks hk;
	size_t len;

	(void)state;
	world(&w, 0, 1);
	assert_int_equal(fake_begin(&s, &hk, &w), 0);
	len = fake_msg(g_buf, g_id, GEN, UF_NATS_DATA, 0, 0, 2);
	assert_int_equal(uf_nats_stream_on_msg(&s, &hk, g_buf, len, NULL, 1), 0);
	assert_int_equal(uf_nats_stream_on_msg(&s, &hk, g_buf, len, "7:1:0:3", 2), 0);
	assert_int_equal(uf_nats_stream_on_msg(&s, &hk, g_buf, len - 1, g_id, 3), 0);
	assert_int_equal(uf_nats_stream_on_msg(&s, &hk, g_buf, 10, g_id, 4), 0);
	g_buf[0] ^= 1; /* magic */
	assert_int_equal(uf_nats_stream_on_msg(&s, &hk, g_buf, len, g_id, 5), 0);
	/* a first sequence whose records would wrap around */
	len = fake_msg(g_buf, g_id, GEN, UF_NATS_DATA, UINT64_MAX - 1, 0, 2);
	assert_int_equal(uf_nats_stream_on_msg(&s, &hk, g_buf, len, g_id, 6), 0);
	/* records of another generation, a per-symbol message on the record subject */
	assert_int_equal(deliver(&s, &hk, 7, GEN + 1, UF_NATS_DATA, 0, 0, 1), 0);
	assert_int_equal(deliver(&s, &hk, 8, GEN, UF_NATS_SYMBOL, 0, 0, 1), 0);
	assert_int_equal(s.forged, 8);
	assert_int_equal(s.tail, 0);
	/* the bridge's id with a malformed retry suffix, then with a good one */
	len = fake_msg(g_buf, g_id, GEN, UF_NATS_DATA, 0, 0, 2);
	assert_int_equal(uf_nats_stream_on_msg(&s, &hk, g_buf, len, "7:1:0:2:r0123", 9), 0);
	assert_int_equal(
	    uf_nats_stream_on_msg(&s, &hk, g_buf, len, "7:1:0:2:x0123456789abcdef", 10), 0);
	assert_int_equal(s.forged, 10);
	assert_int_equal(s.tail, 0);
	assert_int_equal(
	    uf_nats_stream_on_msg(&s, &hk, g_buf, len, "7:1:0:2:r0123456789abcdef", 11), 0);
	assert_int_equal(s.tail, 2);
	assert_int_equal(deliver(&s, &hk, 12, GEN, UF_NATS_DATA, 2, 0, 2), 0); /* plain id */
	assert_int_equal(s.tail, 4);
	assert_int_equal(s.forged, 10);
	fake_end(&s);
}

static void test_skipped_records_are_believed_only_when_the_stream_lost_messages(void **state)
{
	struct fake_world w;
	struct uf_nats_stream s;
	struct uf_nats_stream_hooks hk;

	(void)state;
	world(&w, 0, 1);
	assert_int_equal(fake_begin(&s, &hk, &w), 0);
	assert_int_equal(deliver(&s, &hk, 1, GEN, UF_NATS_DATA, 0, 0, 2), 0);
	/* DATA at 2^40 while the stream still holds everything after message 1 */
	assert_int_equal(deliver(&s, &hk, 2, GEN, UF_NATS_DATA, 1ull << 40, 0, 1), 0);
	assert_int_equal(s.forged, 1);
	assert_int_equal(s.tail, 2);
	assert_int_equal(w.loads, 1); /* the commit entry, at 0, was asked */
	/* the genuine stream goes on */
	assert_int_equal(deliver(&s, &hk, 3, GEN, UF_NATS_DATA, 2, 0, 2), 0);
	assert_int_equal(s.tail, 4);
	/* the delivery skipped messages the bridge stored (its commit entry is past them): a
	 * lap, books from the bucket, as before these checks */
	w.cm.position = 30;
	assert_int_equal(deliver(&s, &hk, 4, GEN, UF_NATS_DATA, 31, 0, 2), 0);
	assert_int_equal(s.forged, 2); /* 31 > 30: not that one */
	assert_int_equal(deliver(&s, &hk, 5, GEN, UF_NATS_DATA, 20, 0, 2), 0);
	assert_int_equal(s.forged, 2);
	assert_int_equal(s.tail, 22);
	assert_int_equal(s.njumps, 1);
	assert_int_equal(s.jumps[0].from, 4);
	assert_int_equal(s.jumps[0].to, 20);
	/* retention removed messages 6..9: records 22..49 are gone, the bucket has books */
	w.first_sseq = 10;
	w.cm.position = 60;
	w.loads = 0;
	assert_int_equal(deliver(&s, &hk, 10, GEN, UF_NATS_DATA, 50, 0, 2), 0);
	assert_int_equal(s.forged, 2);
	assert_int_equal(w.loads, 1); /* the books only: the stream's own loss is enough */
	assert_int_equal(s.tail, 52);
	assert_int_equal(s.njumps, 2);
	assert_int_equal(s.jumps[1].from, 22);
	assert_int_equal(s.jumps[1].to, 50);
	fake_end(&s);
}

static void test_lap_and_reset_need_the_commit_entry(void **state)
{
	struct fake_world w;
	struct uf_nats_stream s;
	struct uf_nats_stream_hooks hk;

	(void)state;
	world(&w, 0, 1);
	assert_int_equal(fake_begin(&s, &hk, &w), 0);
	assert_int_equal(deliver(&s, &hk, 1, GEN, UF_NATS_DATA, 0, 0, 2), 0);
	/* a LAP to 2^40: the commit entry is still at 0 */
	assert_int_equal(deliver(&s, &hk, 2, GEN, UF_NATS_LAP, 2, 1ull << 40, 0), 0);
	assert_int_equal(s.forged, 1);
	assert_int_equal(s.tail, 2);
	/* a lap behind what we hold */
	assert_int_equal(deliver(&s, &hk, 3, GEN, UF_NATS_LAP, 0, 1, 0), 0);
	assert_int_equal(s.forged, 2);
	/* a RESET of another generation while the commit entry is still ours */
	assert_int_equal(deliver(&s, &hk, 4, GEN + 1, UF_NATS_RESET, 0, 0, 0), 0);
	assert_int_equal(s.forged, 3);
	assert_int_equal(s.stale, 0);
	/* the bridge's own LAP: it wrote every book and the commit at the resume point first */
	w.cm.position = 40;
	assert_int_equal(deliver(&s, &hk, 5, GEN, UF_NATS_LAP, 2, 40, 0), 0);
	assert_int_equal(s.forged, 3);
	assert_int_equal(s.tail, 40);
	assert_int_equal(s.jumps[0].from, 2);
	assert_int_equal(s.jumps[0].to, 40);
	/* a restarted bridge re-sends from the ring's oldest record: not a replay */
	assert_int_equal(deliver(&s, &hk, 6, GEN, UF_NATS_RESET, 30, 0, 0), 0);
	assert_int_equal(deliver(&s, &hk, 7, GEN, UF_NATS_DATA, 30, 0, 4), 0);
	assert_int_equal(deliver(&s, &hk, 8, GEN, UF_NATS_DATA, 34, 0, 8), 0);
	assert_int_equal(s.forged, 3);
	assert_int_equal(s.tail, 42);
	/* the producer restarted: the bridge wrote the new generation's commit first */
	w.cm.generation = GEN + 1;
	assert_int_equal(deliver(&s, &hk, 9, GEN + 1, UF_NATS_RESET, 0, 0, 0), 1);
	assert_int_equal(s.stale, 1);
	fake_end(&s);
}

static void test_closed_only_at_the_tail_and_confirmed_by_the_commit_entry(void **state)
{
	struct fake_world w;
	struct uf_nats_stream s;
	struct uf_nats_stream_hooks hk;

	(void)state;
	world(&w, 0, 1);
	assert_int_equal(fake_begin(&s, &hk, &w), 0);
	assert_int_equal(deliver(&s, &hk, 1, GEN, UF_NATS_DATA, 0, 0, 4), 0);
	assert_int_equal(deliver(&s, &hk, 2, GEN, UF_NATS_CLOSED, 9, 0, 0), 0); /* ahead */
	assert_int_equal(deliver(&s, &hk, 3, GEN, UF_NATS_CLOSED, 2, 0, 0), 0); /* behind */
	assert_int_equal(w.closes, 0);
	assert_int_equal(s.forged, 2);
	/* exactly at the tail, but the commit entry does not say closed (yet): pending, twice */
	w.cm.position = 4;
	assert_int_equal(deliver(&s, &hk, 4, GEN, UF_NATS_CLOSED, 4, 0, 0), 0);
	assert_int_equal(deliver(&s, &hk, 5, GEN, UF_NATS_CLOSED, 4, 0, 0), 0);
	assert_int_equal(uf_nats_stream_idle(&s, &hk), 0);
	assert_int_equal(s.closed, 0);
	assert_int_equal(s.forged, 2);
	/* records follow: neither was an end */
	assert_int_equal(deliver(&s, &hk, 6, GEN, UF_NATS_DATA, 4, 0, 2), 0);
	assert_int_equal(s.forged, 4);
	assert_int_equal(s.tail, 6);
	/* a close the bridge's commit entry has gone past */
	w.cm.position = 7;
	assert_int_equal(deliver(&s, &hk, 7, GEN, UF_NATS_CLOSED, 6, 0, 0), 0);
	assert_int_equal(s.forged, 5);
	assert_int_equal(deliver(&s, &hk, 8, GEN, UF_NATS_DATA, 6, 0, 1), 0);
	/* the real end: CLOSED arrives before the commit entry that confirms it */
	assert_int_equal(deliver(&s, &hk, 9, GEN, UF_NATS_CLOSED, 7, 0, 0), 0);
	assert_int_equal(s.closed, 0);
	w.cm.flags = UF_NATS_COMMIT_CLOSED;
	assert_int_equal(uf_nats_stream_idle(&s, &hk), 1);
	assert_int_equal(s.closed, 1);
	assert_int_equal(s.forged, 5);
	assert_int_equal(uf_nats_stream_idle(&s, &hk), 0);
	fake_end(&s);
}

/* The bucket cannot be read when a believed lap needs it: the books can no longer be kept
 * right, so the receiver gives up (failed) and stops, whatever comes next. */
static void test_unreadable_bucket_sets_failed_and_stops_the_receiver(void **state)
{
	struct fake_world w;
	struct uf_nats_stream s;
	struct uf_nats_stream_hooks hk;

	(void)state;
	world(&w, 0, 1);
	assert_int_equal(fake_begin(&s, &hk, &w), 0);
	assert_int_equal(deliver(&s, &hk, 1, GEN, UF_NATS_DATA, 0, 0, 2), 0);
	assert_int_equal(s.failed, 0);
	w.first_sseq = 5; /* messages 2..4 were removed: the gap is real */
	w.load_rc = -EIO;
	assert_int_equal(deliver(&s, &hk, 5, GEN, UF_NATS_DATA, 10, 0, 2), 1);
	assert_int_equal(s.failed, 1);
	assert_int_equal(s.tail, 2);
	assert_int_equal(s.forged, 0);
	w.load_rc = 0;
	assert_int_equal(deliver(&s, &hk, 6, GEN, UF_NATS_DATA, 12, 0, 2), 1);
	assert_int_equal(s.tail, 2);
	fake_end(&s);
}

/* With a shared key, a message is looked at only when its trailer is the HMAC of its
 * content under that key. */
static void test_shared_key_refuses_what_it_did_not_sign(void **state)
{
	struct fake_world w;
	struct uf_nats_stream s;
	struct uf_nats_stream_hooks hk;
	struct uf_nats_key key, other;
	size_t len;

	(void)state;
	assert_int_equal(setenv("UF_NATS_KEY", "0123456789abcdef0123", 1), 0);
	assert_int_equal(uf_nats_key_load(&key, NULL, NULL, 0), 0);
	assert_int_equal(setenv("UF_NATS_KEY", "0123456789abcdef0124", 1), 0);
	assert_int_equal(uf_nats_key_load(&other, NULL, NULL, 0), 0);
	assert_int_equal(setenv("UF_NATS_KEY", "short", 1), 0);
	assert_int_equal(uf_nats_key_load(&other, NULL, NULL, 0), -EINVAL);
	assert_int_equal(setenv("UF_NATS_KEY", "0123456789abcdef0124", 1), 0);
	assert_int_equal(uf_nats_key_load(&other, NULL, NULL, 0), 0);
	unsetenv("UF_NATS_KEY");
	world(&w, 0, 1);
	assert_int_equal(fake_begin(&s, &hk, &w), 0);
	s.key = &key;
	len = fake_msg(g_buf, g_id, GEN, UF_NATS_DATA, 0, 0, 2);
	assert_int_equal(uf_nats_stream_on_msg(&s, &hk, g_buf, len, g_id, 1), 0); /* unsigned */
	assert_int_equal(uf_nats_mac(&other, "seq", g_buf, len, g_buf + len), 0);
	assert_int_equal(uf_nats_stream_on_msg(&s, &hk, g_buf, len + UF_NATS_MAC_LEN, g_id, 2), 0);
	assert_int_equal(uf_nats_mac(&key, "sym", g_buf, len, g_buf + len), 0); /* other domain */
	assert_int_equal(uf_nats_stream_on_msg(&s, &hk, g_buf, len + UF_NATS_MAC_LEN, g_id, 3), 0);
	assert_int_equal(s.forged, 3);
	assert_int_equal(s.tail, 0);
	assert_int_equal(uf_nats_mac(&key, "seq", g_buf, len, g_buf + len), 0);
	assert_int_equal(uf_nats_stream_on_msg(&s, &hk, g_buf, len + UF_NATS_MAC_LEN, g_id, 4), 0);
	assert_int_equal(s.tail, 2);
	g_buf[sizeof(struct uf_nats_msg) + 16] ^= 1; /* one bit of a record */
	assert_int_equal(uf_nats_stream_on_msg(&s, &hk, g_buf, len + UF_NATS_MAC_LEN, g_id, 5), 0);
	assert_int_equal(s.forged, 4);
	fake_end(&s);
}

/* Turns a version-1 DATA message in buf (len bytes) into its compact form (version 2) in out;
 * returns the new length. */
static size_t to_compact(const unsigned char *buf, size_t len, unsigned char *out)
{
	struct uf_nats_msg h;
	struct uf_record recs[8];

	memcpy(&h, buf, sizeof(h));
	memcpy(recs, buf + sizeof(h), len - sizeof(h));
	h.version = UF_NATS_VERSION_COMPACT;
	memcpy(out, &h, sizeof(h));
	return sizeof(h) + uf_nats_compact_encode(recs, h.count, out + sizeof(h));
}

/* The compact form gives back every record bit for bit, whatever its bytes (zero words,
 * all-ones words, records equal to the one before), and refuses an input cut anywhere, a
 * count above 8 and bytes left over. */
static void test_compact_records_decode_to_the_same_records_and_refuse_bad_lengths(void **state)
{
	struct uf_record in[6], out[6];
	unsigned char enc[6 * UF_NATS_COMPACT_MAX + 1];
	size_t len;
	uint64_t x = 0x9e3779b97f4a7c15ull;

	(void)state;
	memset(in, 0, sizeof(in));
	for (int i = 0; i < 6; i++) { /* record 0 all zero, 1 random, 2 = 1, 3 all ones, ... */
		unsigned char *b = (unsigned char *)&in[i];
		for (size_t k = 0; i == 1 || i >= 4 ? k < sizeof(in[i]) : 0; k++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			b[k] = (unsigned char)(i == 5 && k % 8 < 5 ? 0 : x);
		}
	}
	in[2] = in[1];
	memset(&in[3], 0xff, sizeof(in[3]));
	len = uf_nats_compact_encode(in, 6, enc);
	assert_true(len < sizeof(in));
	assert_int_equal(uf_nats_compact_decode(enc, len, 6, out), 0);
	assert_int_equal(uf_nats_compact_check(enc, len, 6), 0);
	assert_memory_equal(in, out, sizeof(in));
	assert_int_equal(uf_nats_compact_encode(in, 1, enc), 4); /* a zero record: 4 bytes */
	len = uf_nats_compact_encode(in, 6, enc);
	/* the check (the consumer's, from the counts alone) refuses exactly what decode does */
	for (size_t cut = 0; cut < len; cut++) {
		assert_int_equal(uf_nats_compact_decode(enc, cut, 6, out), -1);
		assert_int_equal(uf_nats_compact_check(enc, cut, 6), -1);
	}
	enc[len] = 0;
	assert_int_equal(uf_nats_compact_decode(enc, len + 1, 6, out), -1); /* one byte more */
	assert_int_equal(uf_nats_compact_check(enc, len + 1, 6), -1);
	assert_int_equal(uf_nats_compact_decode(enc, len, 5, out), -1); /* count too low */
	assert_int_equal(uf_nats_compact_check(enc, len, 5), -1);
	assert_int_equal(uf_nats_compact_check(enc, len, 7), -1); /* count too high */
	enc[4] = 0x09; /* record 0 is 4 zero bytes: record 1's first word now claims 9 bytes */
	assert_int_equal(uf_nats_compact_decode(enc, len, 6, out), -1);
	assert_int_equal(uf_nats_compact_check(enc, len, 6), -1);
	enc[4] = 0x90; /* the same in the high nibble (word 1) */
	assert_int_equal(uf_nats_compact_check(enc, len, 6), -1);
}

/* A consumer reads both wire versions: compact DATA is applied exactly as the same records
 * in 64-byte form (also the part past the tail of a message that overlaps it), a compact
 * payload that does not decode to its count is refused and changes nothing, and only DATA
 * may be compact. */
static void test_compact_data_is_applied_like_plain_data_and_bad_compact_is_refused(void **state)
{
	struct fake_world w;
	struct uf_nats_stream s;
	struct uf_nats_stream_hooks hk;
	struct uf_book_snapshot snap;
	unsigned char c[sizeof(struct uf_nats_msg) + 8 * UF_NATS_COMPACT_MAX];
	size_t len, clen;

	(void)state;
	world(&w, 100, 10);
	assert_int_equal(fake_begin(&s, &hk, &w), 0);
	len = fake_msg(g_buf, g_id, GEN, UF_NATS_DATA, 98, 0, 4); /* overlaps: 98, 99 held */
	clen = to_compact(g_buf, len, c);
	assert_true(clen < len);
	assert_int_equal(uf_nats_stream_on_msg(&s, &hk, c, clen, g_id, 10), 0);
	assert_int_equal(s.forged, 0);
	assert_int_equal(s.tail, 102);
	assert_memory_equal(&s.buf[100 & s.mask], g_buf + sizeof(struct uf_nats_msg) + 2 * 64, 64);
	assert_memory_equal(&s.buf[101 & s.mask], g_buf + sizeof(struct uf_nats_msg) + 3 * 64, 64);
	assert_int_equal(uf_nats_books_snapshot(&s.books, 1, 10, s.tail, &snap), 0);
	assert_int_equal(snap.bid[0].shares,
	                 102); /* the last LEVEL (seq 101), as in 64-byte form */
	/* cut by one byte, one byte more, one record claimed more: refused, nothing changes */
	len = fake_msg(g_buf, g_id, GEN, UF_NATS_DATA, 102, 0, 3);
	clen = to_compact(g_buf, len, c);
	assert_int_equal(uf_nats_stream_on_msg(&s, &hk, c, clen - 1, g_id, 11), 0);
	c[clen] = 0;
	assert_int_equal(uf_nats_stream_on_msg(&s, &hk, c, clen + 1, g_id, 12), 0);
	assert_int_equal(s.forged, 2);
	assert_int_equal(s.tail, 102);
	/* and the good one goes through, then plain DATA continues it */
	assert_int_equal(uf_nats_stream_on_msg(&s, &hk, c, clen, g_id, 13), 0);
	assert_int_equal(s.tail, 105);
	assert_int_equal(deliver(&s, &hk, 14, GEN, UF_NATS_DATA, 105, 0, 2), 0);
	assert_int_equal(s.tail, 107);
	assert_int_equal(s.forged, 2);
	/* a LAP in version 2: not a form the bridge sends */
	len = fake_msg(g_buf, g_id, GEN, UF_NATS_LAP, 107, 200, 0);
	g_buf[offsetof(struct uf_nats_msg, version)] = UF_NATS_VERSION_COMPACT;
	assert_int_equal(uf_nats_stream_on_msg(&s, &hk, g_buf, len, g_id, 15), 0);
	assert_int_equal(s.forged, 3);
	assert_int_equal(s.tail, 107);
	assert_int_equal(w.loads, 0);
	fake_end(&s);
}

/* A message of thousands of records (above the former 1024 bound) is stored in chunks: after
 * every UF_NATS_APPLY_CHUNK records the consumer may let its application read (progress),
 * and each time every record below the tail is stored and the books are at the tail. Plain
 * and compact alike. */
static void test_big_messages_are_applied_in_chunks_the_application_can_read(void **state)
{
	static unsigned char big[sizeof(struct uf_nats_msg) + 1500 * sizeof(struct uf_record)];
	static unsigned char cbig[sizeof(struct uf_nats_msg) + 1500 * UF_NATS_COMPACT_MAX];
	static struct uf_record recs[1500];
	struct fake_world w;
	struct uf_nats_stream s;
	struct uf_nats_stream_hooks hk;
	struct uf_book_snapshot snap;
	struct uf_nats_msg h;
	size_t len, clen;

	(void)state;
	world(&w, 100, 10);
	assert_int_equal(fake_begin(&s, &hk, &w), 0);
	len = fake_msg(big, g_id, GEN, UF_NATS_DATA, 100, 0, 600);
	assert_int_equal(uf_nats_stream_on_msg(&s, &hk, big, len, g_id, 10), 0);
	assert_int_equal(s.tail, 700);
	assert_int_equal(w.progresses, 2); /* after 256 and 512 records */
	assert_int_equal(w.progress_tail[0], 356);
	assert_int_equal(w.progress_tail[1], 612);
	/* compact, 1500 records: 5 chunks; the books follow every record */
	len = fake_msg(big, g_id, GEN, UF_NATS_DATA, 700, 0, 1500);
	memcpy(&h, big, sizeof(h));
	memcpy(recs, big + sizeof(h), 1500 * sizeof(struct uf_record));
	h.version = UF_NATS_VERSION_COMPACT;
	memcpy(cbig, &h, sizeof(h));
	clen = sizeof(h) + uf_nats_compact_encode(recs, 1500, cbig + sizeof(h));
	assert_true(clen < len);
	assert_int_equal(uf_nats_stream_on_msg(&s, &hk, cbig, clen, g_id, 11), 0);
	assert_int_equal(s.forged, 0);
	assert_int_equal(s.tail, 2200);
	assert_int_equal(w.progresses, 7);
	for (int i = 2; i < 7; i++)
		assert_int_equal(w.progress_tail[i], 700 + 256 * (uint64_t)(i - 1));
	for (uint64_t q = 700; q < 2200; q++)
		assert_memory_equal(&s.buf[q & s.mask], &recs[q - 700], sizeof(recs[0]));
	assert_int_equal(uf_nats_books_snapshot(&s.books, 1, 10, s.tail, &snap), 0);
	{ /* the last record (seq 2199: price 101, 2200 shares) is in the book */
		int found = 0;
		for (int i = 0; i < 7; i++)
			found |= snap.bid[i].price == 101 && snap.bid[i].shares == 2200;
		assert_true(found);
	}
	fake_end(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_continuing_data_is_applied_and_replays_are_refused),
	    cmocka_unit_test(test_big_messages_are_applied_in_chunks_the_application_can_read),
	    cmocka_unit_test(test_messages_not_in_the_bridge_form_are_refused),
	    cmocka_unit_test(test_skipped_records_are_believed_only_when_the_stream_lost_messages),
	    cmocka_unit_test(test_lap_and_reset_need_the_commit_entry),
	    cmocka_unit_test(test_closed_only_at_the_tail_and_confirmed_by_the_commit_entry),
	    cmocka_unit_test(test_unreadable_bucket_sets_failed_and_stops_the_receiver),
	    cmocka_unit_test(test_shared_key_refuses_what_it_did_not_sign),
	    cmocka_unit_test(
	        test_compact_records_decode_to_the_same_records_and_refuse_bad_lengths),
	    cmocka_unit_test(
	        test_compact_data_is_applied_like_plain_data_and_bad_compact_is_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
