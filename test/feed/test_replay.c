/* uf-replay as a black box: its CLI, its determinism under --seed, what it puts on the wire
 * (every message once, in order, numbered from 1, faults exactly where asked) and its
 * retransmission server. A receiver socket in this process joins the test groups. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "decode/uf_decode.h"
#include "feed/mcast.h"
#include "feed_test_util.h"

#define TR_MESSAGES 20000

static char g_day[256];

static char *tr_slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return NULL;
	static char buf[4096];
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	return buf;
}

/* Runs uf-replay with `args` (after --in DAY), returns its exit status and its summary. */
static int tr_replay(char *summary, size_t len, const char *a1, ...)
{
	char *argv[32] = {"uf-replay", "--in", g_day};
	int n = 3;
	va_list ap;
	va_start(ap, a1);
	for (const char *s = a1; s && n < 31; s = va_arg(ap, const char *))
		argv[n++] = (char *)s;
	va_end(ap);
	argv[n] = NULL;
	char out[256];
	snprintf(out, sizeof(out), "%s/replay.json", ft_tmpdir());
	int rc = ft_run(argv, out, 30000);
	if (summary) {
		char *s = tr_slurp(out);
		size_t n = s ? strlen(s) : 0;
		if (n >= len)
			n = len - 1;
		memcpy(summary, s ? s : "", n);
		summary[n] = '\0';
	}
	return rc;
}

static void test_replay_rejects_bad_usage_with_status_2(void **s)
{
	assert_int_equal(tr_replay(NULL, 0, NULL), 2); /* no --a */
	assert_int_equal(tr_replay(NULL, 0, "--a", "10.1.1.1:5000", NULL), 2);
	assert_int_equal(tr_replay(NULL, 0, "--a", "239.81.0.1:25001", "--drop-a", "1.5", NULL), 2);
	assert_int_equal(tr_replay(NULL, 0, "--a", "239.81.0.1:25001", "--drop-b", "@x", NULL), 2);
	assert_int_equal(
	    tr_replay(NULL, 0, "--a", "239.81.0.1:25001", "--rate", "5", "--speed", "2", NULL), 2);
	assert_int_equal(
	    tr_replay(NULL, 0, "--a", "239.81.0.1:25001", "--session", "ELEVENCHARS", NULL), 2);
	char *argv[] = {"uf-replay",        "--in", "/nonexistent/day.itch", "--a",
	                "239.81.0.1:25001", NULL};
	assert_int_equal(ft_run(argv, NULL, 10000), 2);
}

static void test_replay_same_seed_same_faults(void **s)
{
	char x[1024], y[1024], z[1024];
	const char *common[] = {"--a",       "239.81.0.2:25002",
	                        "--b",       "239.81.0.3:25003",
	                        "--rate",    "0",
	                        "--drop-a",  "0.1",
	                        "--drop-b",  "0.2",
	                        "--dup",     "0.1",
	                        "--reorder", "0.1"};
	assert_int_equal(tr_replay(x, sizeof(x), common[0], common[1], common[2], common[3],
	                           common[4], common[5], common[6], common[7], common[8], common[9],
	                           common[10], common[11], common[12], common[13], "--seed", "9",
	                           NULL),
	                 0);
	assert_int_equal(tr_replay(y, sizeof(y), common[0], common[1], common[2], common[3],
	                           common[4], common[5], common[6], common[7], common[8], common[9],
	                           common[10], common[11], common[12], common[13], "--seed", "9",
	                           NULL),
	                 0);
	assert_int_equal(tr_replay(z, sizeof(z), common[0], common[1], common[2], common[3],
	                           common[4], common[5], common[6], common[7], common[8], common[9],
	                           common[10], common[11], common[12], common[13], "--seed", "10",
	                           NULL),
	                 0);
	/* the summaries differ only in "seconds" */
	char *ta = strstr(x, "\"a\":"), *tb = strstr(y, "\"a\":"), *tc = strstr(z, "\"a\":");
	assert_non_null(ta);
	assert_non_null(tb);
	assert_non_null(tc);
	assert_string_equal(ta, tb);
	assert_string_not_equal(ta, tc);
	assert_non_null(strstr(x, "\"messages\":20000"));
}

/* Receives every datagram on `fd` until `idle_ms` of silence. Returns the count; the
 * MoldUDP64 data packets are checked with `fn`. */
static int tr_drain(int fd, int idle_ms, void (*fn)(void *, struct uf_frame *), void *ctx)
{
	static uint8_t buf[65536];
	int n = 0;
	uint64_t last = uf_now_mono_ns();
	while ((uf_now_mono_ns() - last) / 1000000u < (uint64_t)idle_ms) {
		ssize_t r = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (r < 0) {
			struct timespec ts = {0, 1000000};
			nanosleep(&ts, NULL);
			continue;
		}
		last = uf_now_mono_ns();
		struct uf_frame p;
		if (uf_mold_open(&p, buf, (size_t)r) > 0)
			fn(ctx, &p);
		n++;
	}
	return n;
}

struct tr_seen {
	uint64_t next;    /* next sequence expected */
	uint64_t missing; /* sequences skipped */
	uint64_t first_missing;
	int eos;          /* end of session seen */
	int out_of_order; /* a data packet that did not start at `next` (other than a skip) */
};

static void tr_track(void *ctx, struct uf_frame *p)
{
	struct tr_seen *s = ctx;
	if (p->kind == UF_MOLD_END_OF_SESSION) {
		s->eos = 1;
		return;
	}
	if (p->kind != UF_MOLD_DATA)
		return;
	if (p->seq > s->next) {
		if (!s->missing)
			s->first_missing = s->next;
		s->missing += p->seq - s->next;
	} else if (p->seq < s->next) {
		s->out_of_order = 1;
	}
	s->next = p->seq + p->count;
}

static void test_replay_sends_every_message_once_and_drops_exactly_at_given_sequences(void **s)
{
	char err[128];
	struct in_addr g, lo;
	inet_pton(AF_INET, "239.81.0.4", &g);
	inet_pton(AF_INET, "127.0.0.1", &lo);
	int fd = uf_mcast_open_rx(g, 25004, lo, 8 << 20, err, sizeof(err));
	assert_true(fd >= 0);
	char *argv[] = {"uf-replay", "--in",   g_day,      "--a",   "239.81.0.4:25004",
	                "--rate",    "200000", "--drop-a", "@5000", NULL};
	pid_t pid = ft_spawn(argv, NULL);
	assert_true(pid > 0);
	struct tr_seen seen = {.next = 1};
	tr_drain(fd, 500, tr_track, &seen);
	assert_int_equal(ft_wait(pid, 10000), 0);
	close(fd);
	assert_int_equal(seen.next, TR_MESSAGES + 1); /* numbered 1..N, all the way */
	assert_true(seen.eos);
	assert_false(seen.out_of_order);
	assert_true(seen.first_missing <= 5000); /* exactly the packet holding 5000 is gone */
	assert_true(seen.first_missing + seen.missing > 5000);
	assert_true(seen.missing < 200);
}

struct tr_answer {
	uint64_t first, end; /* range answered */
	int packets;
	int bad; /* a block that differs from the file */
	struct uf_reader_msg *msgs;
};

static void tr_check_answer(void *ctx, struct uf_frame *p)
{
	struct tr_answer *a = ctx;
	struct uf_frame_iter it;
	struct uf_frame_msg b;
	if (p->kind != UF_MOLD_DATA)
		return;
	if (!a->packets)
		a->first = p->seq;
	a->packets++;
	uf_mold_iter_init(&it, p);
	while (uf_mold_next(&it, &b)) {
		const struct uf_reader_msg *m = &a->msgs[b.seq - 1];
		if (b.len != m->len || memcmp(b.msg, m->msg, b.len))
			a->bad = 1;
		a->end = b.seq + 1;
	}
}

static void test_replay_serves_rerequests_from_what_it_sent(void **s)
{
	/* the file's messages, for comparing retransmissions byte by byte */
	struct uf_reader rd;
	assert_int_equal(uf_reader_open(&rd, g_day, NULL), 0);
	struct uf_reader_msg *msgs = calloc(TR_MESSAGES, sizeof(*msgs));
	for (int i = 0; i < TR_MESSAGES; i++)
		assert_int_equal(uf_reader_next(&rd, &msgs[i]), 1);
	char *argv[] = {"uf-replay", "--in",     g_day,       "--a",      "239.81.0.5:25005",
	                "--rate",    "0",        "--session", "TESTSESS", "--serve-rerequests",
	                "25009",     "--linger", "3",         NULL};
	pid_t pid = ft_spawn(argv, NULL);
	assert_true(pid > 0);
	struct timespec ts = {0, 500000000};
	nanosleep(&ts, NULL); /* everything sent, now lingering */
	char err[128];
	struct in_addr lo;
	inet_pton(AF_INET, "127.0.0.1", &lo);
	int fd = uf_mcast_open_unicast(lo, 0, 0, err, sizeof(err));
	assert_true(fd >= 0);
	struct sockaddr_in srv = {.sin_family = AF_INET, .sin_port = htons(25009), .sin_addr = lo};
	char sess[UF_MOLD_SESSION_LEN];
	memset(sess, ' ', sizeof(sess));
	memcpy(sess, "TESTSESS", 8);
	uint8_t req[UF_MOLD_REREQUEST_LEN];
	/* 1. an ordinary request: 700 messages from 1234, maybe over several packets */
	uf_mold_rerequest_build(req, sess, 1234, 700);
	sendto(fd, req, sizeof(req), 0, (struct sockaddr *)&srv, sizeof(srv));
	struct tr_answer a = {.msgs = msgs};
	tr_drain(fd, 200, tr_check_answer, &a);
	assert_int_equal(a.first, 1234);
	assert_int_equal(a.end, 1234 + 700);
	assert_true(a.packets >= 2);
	assert_false(a.bad);
	/* 2. past the end: answered up to the last message sent */
	memset(&a, 0, sizeof(a));
	a.msgs = msgs;
	uf_mold_rerequest_build(req, sess, TR_MESSAGES - 10, 500);
	sendto(fd, req, sizeof(req), 0, (struct sockaddr *)&srv, sizeof(srv));
	tr_drain(fd, 200, tr_check_answer, &a);
	assert_int_equal(a.first, TR_MESSAGES - 10);
	assert_int_equal(a.end, TR_MESSAGES + 1);
	assert_false(a.bad);
	/* 3. another session: ignored */
	memset(&a, 0, sizeof(a));
	a.msgs = msgs;
	char other[UF_MOLD_SESSION_LEN];
	memset(other, ' ', sizeof(other));
	memcpy(other, "OTHER", 5);
	uf_mold_rerequest_build(req, other, 1, 10);
	sendto(fd, req, sizeof(req), 0, (struct sockaddr *)&srv, sizeof(srv));
	tr_drain(fd, 200, tr_check_answer, &a);
	assert_int_equal(a.packets, 0);
	close(fd);
	kill(pid, SIGTERM);
	assert_int_equal(ft_wait(pid, 10000), 0);
	free(msgs);
	uf_reader_close(&rd);
}

/* Every data packet as built (blocks equal to the file's at their sequences) and the
 * sequences they cover. */
struct tr_intact {
	struct uf_reader_msg *msgs; /* the file's messages */
	uint8_t *covered;           /* covered[seq - 1] */
	int packets;                /* data packets received */
	int bad;                    /* a block that differs from the file, or out of range */
};

static void tr_check_intact(void *ctx, struct uf_frame *p)
{
	struct tr_intact *t = ctx;
	struct uf_frame_iter it;
	struct uf_frame_msg b;
	if (p->kind != UF_MOLD_DATA)
		return;
	t->packets++;
	uf_mold_iter_init(&it, p);
	while (uf_mold_next(&it, &b)) {
		if (b.seq < 1 || b.seq > TR_MESSAGES) {
			t->bad = 1;
			continue;
		}
		const struct uf_reader_msg *m = &t->msgs[b.seq - 1];
		if (b.len != m->len || memcmp(b.msg, m->msg, b.len))
			t->bad = 1;
		t->covered[b.seq - 1] = 1;
	}
}

/* As fast as it can (--rate 0) the sender queues many packets for one sendmmsg while a
 * reorder holds one back and a duplicate repeats one: every packet must still go out as
 * built, none replaced by another (a held-back packet still queued when the next reorder
 * reuses its buffer would be), and as many as the summary counts. */
static void test_replay_full_speed_reorder_and_dup_keep_every_packet_intact(void **s)
{
	struct uf_reader rd;
	assert_int_equal(uf_reader_open(&rd, g_day, NULL), 0);
	struct uf_reader_msg *msgs = calloc(TR_MESSAGES, sizeof(*msgs));
	uint8_t *covered = calloc(TR_MESSAGES, 1);
	assert_non_null(msgs);
	assert_non_null(covered);
	for (int i = 0; i < TR_MESSAGES; i++)
		assert_int_equal(uf_reader_next(&rd, &msgs[i]), 1);
	char err[128];
	struct in_addr g, lo;
	inet_pton(AF_INET, "239.81.0.6", &g);
	inet_pton(AF_INET, "127.0.0.1", &lo);
	int fd = uf_mcast_open_rx(g, 25006, lo, 16 << 20, err, sizeof(err));
	assert_true(fd >= 0);
	char out[256];
	snprintf(out, sizeof(out), "%s/replay_intact.json", ft_tmpdir());
	char *argv[] = {"uf-replay", "--in",   g_day,   "--a",   "239.81.0.6:25006",
	                "--rate",    "0",      "--dup", "0.2",   "--reorder",
	                "0.3",       "--seed", "4",     "--mtu", "200",
	                NULL};
	pid_t pid = ft_spawn(argv, out);
	assert_true(pid > 0);
	struct tr_intact t = {.msgs = msgs, .covered = covered};
	tr_drain(fd, 500, tr_check_intact, &t);
	assert_int_equal(ft_wait(pid, 10000), 0);
	close(fd);
	unsigned long long sent = 0, dup = 0, reordered = 0;
	char *sum = tr_slurp(out);
	assert_non_null(sum);
	char *a = strstr(sum, "\"a\":");
	assert_non_null(a);
	assert_int_equal(sscanf(a,
	                        "\"a\":{\"sent\":%llu,\"dropped\":%*u,\"duplicated\":%llu,"
	                        "\"reordered\":%llu",
	                        &sent, &dup, &reordered),
	                 3);
	assert_true(reordered > 50); /* the faults happened, many times */
	assert_true(dup > 50);
	assert_false(t.bad);
	assert_int_equal((unsigned long long)t.packets, sent + dup);
	for (int i = 0; i < TR_MESSAGES; i++)
		if (!covered[i])
			fail_msg("sequence %d never sent intact", i + 1);
	free(covered);
	free(msgs);
	uf_reader_close(&rd);
}

static int tr_setup(void **s)
{
	if (ft_gen_day(g_day, sizeof(g_day), TR_MESSAGES, 10, 5) < 0) {
		fprintf(stderr, "FATAL: uf-gen failed\n");
		return -1;
	}
	return 0;
}

static int tr_teardown(void **s)
{
	uf_test_rm_tree(ft_tmpdir());
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_replay_rejects_bad_usage_with_status_2),
	    cmocka_unit_test(test_replay_same_seed_same_faults),
	    cmocka_unit_test(
	        test_replay_sends_every_message_once_and_drops_exactly_at_given_sequences),
	    cmocka_unit_test(test_replay_serves_rerequests_from_what_it_sent),
	    cmocka_unit_test(test_replay_full_speed_reorder_and_dup_keep_every_packet_intact),
	};
	return cmocka_run_group_tests(tests, tr_setup, tr_teardown);
}
