/* A second venue protocol plugs in through publish/uf_proto.h alone: a test-only "toy"
 * protocol (little-endian framing of its own, a binary session id, fixed 16-byte messages)
 * is registered at run time and a real feed (uf_feed_create / uf_feed_run on loopback
 * multicast, epoll) selected by its name delivers its records into the ring. Nothing of
 * feed/pipeline.c or feed/arbiter.c knows it: the arbiter fills a hole of line A from
 * line B by re-opening its queued copy through the toy framing, and a message the toy
 * decoder refuses is counted and puts its book in doubt (a STALE record) at its place.
 *
 * Toy wire format (all little endian):
 *   header 16 bytes: magic "TY", count u16 (0 heartbeat, 0xFFFF end of session),
 *                    session u32, first sequence u64
 *   message 16 bytes: type u8 ('R' directory, 'A' add), side u8, locate u16, ref u32,
 *                     shares u32, price u32 (for 'R' the 8 bytes from ref on are the
 *                     symbol) */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/uf_endian.h"
#include "common/uf_symbol.h"
#include "common/uf_time.h"
#include "decode/uf_itch50.h"
#include "decode/uf_mold.h"
#include "feed/mcast.h"
#include "feed/uf_feed.h"
#include "publish/uf_proto.h"
#include "ring/uf_ring.h"
#include "ring/ufconsumer.h"
#include "test/common/uf_test_feed_thread.h"
#include "test/feed/feed_test_util.h"

#define TOY_HDR 16
#define TOY_MSG 16
#define TOY_END 0xFFFFu

static uint16_t le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)le16(p) | (uint32_t)le16(p + 2) << 16;
}

static uint64_t le64(const uint8_t *p)
{
	return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
}

static void put_le(uint8_t *p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* ---- the toy framing: what a decode/ file of a new venue would hold ---- */

static int toy_open(struct uf_frame *f, const uint8_t *buf, size_t len)
{
	f->buf = buf;
	f->len = len;
	f->kind = 0;
	f->err = 0;
	if (len < TOY_HDR || buf[0] != 'T' || buf[1] != 'Y') {
		f->err = UF_MOLD_ERR_TRUNCATED_HEADER;
		return -EBADMSG;
	}
	f->count = le16(buf + 2);
	/* a binary session id rendered as the records carry sessions: 10 decimal digits */
	char s[UF_FRAME_SESSION_LEN + 1];
	snprintf(s, sizeof(s), "%010u", le32(buf + 4));
	memcpy(f->session, s, UF_FRAME_SESSION_LEN);
	f->seq = le64(buf + 8);
	size_t body = len - TOY_HDR;
	if (f->count == 0 || f->count == TOY_END) {
		if (body) {
			f->err = UF_MOLD_ERR_TRAILING_BYTES;
			return -EBADMSG;
		}
		f->kind = f->count ? UF_FRAME_END : UF_FRAME_HEARTBEAT;
		return f->kind;
	}
	if (body != (size_t)f->count * TOY_MSG) {
		f->err = body < (size_t)f->count * TOY_MSG ? UF_MOLD_ERR_COUNT_MISMATCH
		                                           : UF_MOLD_ERR_TRAILING_BYTES;
		return -EBADMSG;
	}
	f->kind = UF_FRAME_DATA;
	return UF_FRAME_DATA;
}

static void toy_iter_init(struct uf_frame_iter *it, const struct uf_frame *f)
{
	it->p = f->buf + TOY_HDR;
	it->end = f->buf + f->len;
	it->seq = f->seq;
	it->left = f->kind == UF_FRAME_DATA ? f->count : 0;
	if (f->len < TOY_HDR)
		it->p = it->end;
}

static int toy_iter_next(struct uf_frame_iter *it, struct uf_frame_msg *m)
{
	if (!it->left || it->end - it->p < TOY_MSG)
		return 0;
	m->seq = it->seq++;
	m->msg = it->p;
	m->len = TOY_MSG;
	it->p += TOY_MSG;
	it->left--;
	return 1;
}

static const struct uf_framing toy_framing = {
    .name = "toy",
    .max_count = 1000,
    .open = toy_open,
    .iter_init = toy_iter_init,
    .iter_next = toy_iter_next,
};

/* ---- the toy protocol: decoding into the engine's normalized events, applied per packet */

static int toy_decode(const uint8_t *p, struct uf_itch_msg *m)
{
	memset(m, 0, sizeof(*m));
	m->locate = le16(p + 2);
	m->timestamp = 1000;
	m->raw = p;
	if (p[0] == 'R') {
		m->type = 'R';
		memcpy(m->u.dir.stock, p + 4, 8);
		m->u.dir.market_category = 'Q';
		m->u.dir.financial_status = 'N';
		m->u.dir.round_lot_size = 100;
	} else if (p[0] == 'A') {
		m->type = 'A';
		m->u.add.order_ref = le32(p + 4);
		m->u.add.side = p[1];
		m->u.add.shares = le32(p + 8);
		m->u.add.price = le32(p + 12);
		memset(m->u.add.stock, ' ', 8);
	} else {
		return -ENOMSG;
	}
	m->len = (uint16_t)uf_itch_msg_len(m->type);
	return 0;
}

static int g_toy_apply_calls; /* packets the toy entry was handed */

static void toy_apply(struct uf_pub_step *s, void *state, const struct uf_frame *f, uint32_t skip,
                      uint64_t rx_ns)
{
	(void)state;
	g_toy_apply_calls++;
	struct uf_frame_iter it;
	struct uf_frame_msg fm;
	toy_framing.iter_init(&it, f);
	for (uint32_t i = 0; toy_framing.iter_next(&it, &fm); i++) {
		if (i < skip)
			continue;
		struct uf_itch_msg m;
		if (toy_decode(fm.msg, &m) < 0) {
			uf_step_msg_error(s, UF_STEP_ERR_UNKNOWN, fm.len, le16(fm.msg + 2), fm.seq,
			                  rx_ns);
			continue;
		}
		uf_step_room(s, UF_REC_MAX_PER_MSG);
		int k = uf_publish_apply(s->pub, &m, fm.seq, rx_ns, s->recs + s->nrec,
		                         s->step_cap - s->nrec);
		if (k > 0)
			s->nrec += (size_t)k;
		s->lat_msgs++;
	}
}

static const struct uf_proto toy_proto = {
    .name = "toy",
    .framing = &toy_framing,
    .book = UF_BOOK_ORDERS,
    .apply = toy_apply,
};

/* ---- building toy packets ---- */

struct toy_pkt {
	uint8_t b[TOY_HDR + 8 * TOY_MSG];
	size_t len;
};

static void toy_begin(struct toy_pkt *p, uint32_t session, uint64_t seq)
{
	memset(p, 0, sizeof(*p));
	p->b[0] = 'T';
	p->b[1] = 'Y';
	put_le(p->b + 4, session, 4);
	put_le(p->b + 8, seq, 8);
	p->len = TOY_HDR;
}

static void toy_msg(struct toy_pkt *p, uint8_t type, uint8_t side, uint16_t loc, uint32_t ref,
                    uint32_t shares, uint32_t price)
{
	uint8_t *m = p->b + p->len;
	m[0] = type;
	m[1] = side;
	put_le(m + 2, loc, 2);
	put_le(m + 4, ref, 4);
	put_le(m + 8, shares, 4);
	put_le(m + 12, price, 4);
	p->len += TOY_MSG;
	put_le(p->b + 2, (p->len - TOY_HDR) / TOY_MSG, 2);
}

static void toy_dir(struct toy_pkt *p, uint16_t loc, const char *sym)
{
	toy_msg(p, 'R', 0, loc, 0, 0, 0);
	char pad[8];
	uf_symbol_pad(pad, sym);
	memcpy(p->b + p->len - TOY_MSG + 4, pad, 8);
}

/* ---- registration ---- */

static void test_proto_table_finds_builtin_and_registered_entries(void **st)
{
	(void)st;
	const struct uf_proto *itch = uf_proto_find("itch50-moldudp64");
	assert_non_null(itch);
	assert_ptr_equal(uf_proto_find(""), itch); /* the default */
	assert_ptr_equal(uf_proto_find(NULL), itch);
	assert_null(uf_proto_find("toy"));
	assert_int_equal(uf_proto_register(&toy_proto), 0);
	assert_ptr_equal(uf_proto_find("toy"), &toy_proto);
	assert_int_equal(uf_proto_register(&toy_proto), -EEXIST);
	struct uf_proto bad = toy_proto;
	bad.name = "bad";
	bad.apply = NULL;
	assert_int_equal(uf_proto_register(&bad), -EINVAL);
	char names[200];
	assert_string_equal(uf_proto_names(names, sizeof(names)),
	                    "\"itch50-moldudp64\", \"iex-deep\", \"iex-tops\", \"toy\"");
}

/* The built-in entry's framing, used only through the table: open, walk, re-request. */
static void test_proto_itch50_framing_through_the_table(void **st)
{
	(void)st;
	const struct uf_framing *fr = uf_proto_find("itch50-moldudp64")->framing;
	uint8_t buf[256];
	struct uf_mold_builder b;
	const char sess[UF_FRAME_SESSION_LEN] = {'S', 'E', 'S', 'S', '1', ' ', ' ', ' ', ' ', ' '};
	assert_int_equal(uf_mold_builder_init(&b, buf, sizeof(buf), sess, 41), 0);
	const uint8_t m1[3] = {'X', 1, 2}, m2[5] = {'Y', 3, 4, 5, 6};
	assert_int_equal(uf_mold_builder_add(&b, m1, sizeof(m1)), 0);
	assert_int_equal(uf_mold_builder_add(&b, m2, sizeof(m2)), 0);
	struct uf_frame f;
	assert_int_equal(fr->open(&f, buf, b.len), UF_FRAME_DATA);
	assert_memory_equal(f.session, sess, UF_FRAME_SESSION_LEN);
	assert_int_equal(f.seq, 41);
	assert_int_equal(f.count, 2);
	assert_int_equal(uf_frame_next_seq(&f), 43);
	struct uf_frame_iter it;
	struct uf_frame_msg m;
	fr->iter_init(&it, &f);
	assert_int_equal(fr->iter_next(&it, &m), 1);
	assert_int_equal(m.seq, 41);
	assert_int_equal(m.len, 3);
	assert_memory_equal(m.msg, m1, 3);
	assert_int_equal(fr->iter_next(&it, &m), 1);
	assert_int_equal(m.seq, 42);
	assert_int_equal(m.len, 5);
	assert_int_equal(fr->iter_next(&it, &m), 0);
	assert_int_equal(fr->open(&f, buf, b.len - 1), -EBADMSG); /* a length lies: refused */
	assert_int_equal(f.err, UF_MOLD_ERR_BLOCK_OVERRUNS_PACKET);
	uint8_t req[UF_FRAME_REQUEST_MAX];
	size_t n = fr->request_build(req, sess, 1000, 25);
	assert_int_equal(n, UF_MOLD_REREQUEST_LEN);
	struct uf_frame r;
	assert_int_equal(fr->request_parse(&r, req, n), 0);
	assert_int_equal(r.seq, 1000);
	assert_int_equal(r.count, 25);
	assert_int_equal(fr->max_count, 0xFFFE);
}

/* ---- end to end through the engine ---- */

struct tp_feed {
	struct uf_feed_config cfg;
	struct uf_feed *feed;
	struct uf_test_feed_thread thr;
};

static void tp_send(int fd, const struct uf_line_config *l, const struct toy_pkt *p)
{
	struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons(l->port)};
	to.sin_addr = l->group;
	assert_int_equal(sendto(fd, p->b, p->len, 0, (struct sockaddr *)&to, sizeof(to)),
	                 (ssize_t)p->len);
}

/* Reads records until `n` are in or 10 s passed. */
static size_t tp_read(uf_consumer_t *c, struct uf_record *out, size_t n)
{
	size_t got = 0;
	uint64_t end = uf_now_mono_ns() + 10000000000ull;
	while (got < n && uf_now_mono_ns() < end) {
		int rc = uf_consumer_next(c, &out[got], NULL);
		if (rc == 0)
			got++;
		else if (rc == -EAGAIN)
			uf_consumer_wait(c, 10000000);
		else
			fail_msg("uf_consumer_next: %d", rc);
	}
	return got;
}

/* The LEVEL records of recs[0..n) in order (kind, side, shares, feed_seq). */
static size_t tp_levels(const struct uf_record *recs, size_t n, const struct uf_record **out)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (recs[i].kind == UF_REC_LEVEL)
			out[k++] = &recs[i];
	return k;
}

static void test_proto_toy_feed_delivers_records_through_the_engine(void **st)
{
	(void)st;
	if (!uf_proto_find("toy"))
		assert_int_equal(uf_proto_register(&toy_proto), 0);
	struct tp_feed t;
	char err[256];
	ft_config_lines(&t.cfg, "tp", UF_BACKEND_EPOLL, 0, 97, 27700, 5);
	snprintf(t.cfg.protocol, sizeof(t.cfg.protocol), "toy");
	/* A hole waits for the other line (no request: the toy venue has no re-request
	 * service), long enough for line B's copy to fill it on a loaded host. */
	t.cfg.recovery.wait_ms = 5000;
	t.cfg.recovery.wait_packets = 1000;
	t.cfg.recovery.timeout_ms = 5000;
	t.cfg.recovery.retries = 1;
	int rc = uf_feed_create(&t.cfg, &t.feed, err, sizeof(err));
	if (rc < 0)
		fail_msg("uf_feed_create: %s", err);
	struct uf_consumer_options opt;
	uf_consumer_options_init(&opt);
	opt.start = UF_CONSUMER_START_OLDEST;
	uf_consumer_t *c = NULL;
	if (uf_consumer_attach(t.cfg.ring.name, &opt, &c, err, sizeof(err)) < 0)
		fail_msg("uf_consumer_attach: %s", err);
	uf_test_feed_thread_start(&t.thr, t.feed);

	struct in_addr lo;
	inet_pton(AF_INET, "127.0.0.1", &lo);
	int tx = uf_mcast_open_tx(lo, 1, err, sizeof(err));
	if (tx < 0)
		fail_msg("uf_mcast_open_tx: %s", err);
	/* The feed thread's sockets are open since uf_feed_create: nothing sent is lost. */
	struct toy_pkt p;
	toy_begin(&p, 20261204, 1); /* A: 1 directory, 2 bid 100 @ 10.0000 */
	toy_dir(&p, 1, "TOYA");
	toy_msg(&p, 'A', 'B', 1, 1, 100, 100000);
	tp_send(tx, &t.cfg.lines[0], &p);
	toy_begin(&p, 20261204, 4); /* A: 4 ask 50 @ 10.1000 (3 lost on A: a hole) */
	toy_msg(&p, 'A', 'S', 1, 3, 50, 101000);
	tp_send(tx, &t.cfg.lines[0], &p);
	toy_begin(&p, 20261204, 3); /* B: 3 bid 200 @ 10.0000 fills it */
	toy_msg(&p, 'A', 'B', 1, 2, 200, 100000);
	tp_send(tx, &t.cfg.lines[1], &p);
	toy_begin(&p, 20261204, 5); /* A: 5 a type the toy does not know, 6 bid 10 */
	toy_msg(&p, 'Z', 0, 1, 0, 0, 0);
	toy_msg(&p, 'A', 'B', 1, 4, 10, 99000);
	tp_send(tx, &t.cfg.lines[0], &p);

	/* INSTRUMENT; per add ORDER_ADD + LEVEL (x4); one STALE for the 'Z' */
	struct uf_record recs[32];
	size_t n = tp_read(c, recs, 10);
	assert_int_equal(n, 10);
	assert_int_equal(recs[0].kind, UF_REC_INSTRUMENT);
	assert_int_equal(recs[0].instrument, 1);
	assert_int_equal(recs[0].feed_seq, 1);
	const struct uf_record *lv[16];
	assert_int_equal(tp_levels(recs, n, lv), 4);
	/* in sequence order: the hole at 3 was filled from line B before 4 was delivered */
	assert_int_equal(lv[0]->feed_seq, 2);
	assert_int_equal(lv[0]->side, UF_SIDE_BID);
	assert_int_equal(lv[0]->shares, 100);
	assert_int_equal(lv[1]->feed_seq, 3);
	assert_int_equal(lv[1]->side, UF_SIDE_BID);
	assert_int_equal(lv[1]->shares, 300); /* both bids at 10.0000 */
	assert_int_equal(lv[1]->orders, 2);
	assert_int_equal(lv[2]->feed_seq, 4);
	assert_int_equal(lv[2]->side, UF_SIDE_ASK);
	assert_int_equal(lv[2]->shares, 50);
	assert_int_equal(lv[3]->feed_seq, 6);
	assert_int_equal(lv[3]->shares, 10);
	assert_true(lv[3]->price < lv[0]->price);
	size_t stale = 0;
	for (size_t i = 0; i < n; i++) {
		assert_int_not_equal(recs[i].kind, UF_REC_GAP); /* nothing was given up */
		if (recs[i].kind == UF_REC_STALE) {
			stale++;
			assert_int_equal(recs[i].instrument, 1);
			assert_int_equal(recs[i].feed_seq, 5);
			assert_true(i > 0 && recs[i - 1].feed_seq == 4); /* at its place */
		}
	}
	assert_int_equal(stale, 1);

	assert_int_equal(uf_test_feed_thread_stop(&t.thr), 0);
	const struct uf_feed_stats *fs = uf_feed_stats(t.feed);
	assert_int_equal(fs->messages, 6);
	assert_int_equal(fs->decode_unknown_type, 1);
	assert_int_equal(fs->gaps_unrecovered, 0);
	assert_int_equal(fs->lines[1].wins, 1); /* line B's copy filled the hole */
	assert_int_equal(g_toy_apply_calls, 4); /* once per packet, never per message */
	close(tx);
	uf_consumer_detach(c);
	uf_feed_destroy(t.feed);
}

/* A protocol without a snapshot service refuses a snapshot configuration, and an unknown
 * name is refused with the table's names. */
static void test_proto_feed_refuses_what_the_protocol_cannot_do(void **st)
{
	(void)st;
	if (!uf_proto_find("toy"))
		assert_int_equal(uf_proto_register(&toy_proto), 0);
	struct uf_feed_config cfg;
	struct uf_feed *f = NULL;
	char err[256];
	ft_config_lines(&cfg, "tq", UF_BACKEND_EPOLL, 1, 97, 27700, 5);
	snprintf(cfg.protocol, sizeof(cfg.protocol), "nasdaq-smoke-signals");
	assert_int_equal(uf_feed_create(&cfg, &f, err, sizeof(err)), -EPROTONOSUPPORT);
	assert_non_null(strstr(err, "\"itch50-moldudp64\", \"iex-deep\", \"iex-tops\", \"toy\""));
	snprintf(cfg.protocol, sizeof(cfg.protocol), "toy");
	cfg.snapshot.enabled = 1;
	assert_true(uf_feed_create(&cfg, &f, err, sizeof(err)) < 0);
	assert_null(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_proto_table_finds_builtin_and_registered_entries),
	    cmocka_unit_test(test_proto_itch50_framing_through_the_table),
	    cmocka_unit_test(test_proto_toy_feed_delivers_records_through_the_engine),
	    cmocka_unit_test(test_proto_feed_refuses_what_the_protocol_cannot_do),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
