/* uf-replay's packing as uf-bench e2e needs it.
 *
 * --burst: no packet holds messages of two bursts, so a receiver that knows --rate and
 * --burst-period tells a message's burst from its sequence alone (e2e_raw.h e2e_burst_of,
 * uf-replay's own formula). The bursts here hold 10.5 messages (15 000 msg/s x 0.7 ms) and a
 * 1400-byte packet fits about 40 generated messages, so without the rule nearly every packet
 * would span a burst boundary, including the fractional ones.
 *
 * --pack timestamp: a packet holds the messages of one ITCH microsecond, as an exchange sends
 * them, cut again at --mtu when the microsecond holds more than fits. The day is written here
 * with chosen timestamps (runs of 1, 3, 6 and 40 messages per microsecond, nanoseconds apart
 * inside one, a microsecond boundary between two messages 1 ns apart), so the packets it must
 * give are known exactly; the default packing of the same day is checked to differ. */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "e2e_raw.h"
#include "tb_util.h"

/* A socket that receives group:port on loopback (port chosen by the kernel). */
static int open_rx(const char *group, uint16_t *port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	struct ip_mreq mr;
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0), buf = 8 << 20;

	assert_true(fd >= 0);
	assert_int_equal(inet_pton(AF_INET, group, &sa.sin_addr), 1);
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &buf, sizeof(buf)) < 0)
		(void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
	*port = ntohs(sa.sin_port);
	mr.imr_multiaddr = sa.sin_addr;
	mr.imr_interface.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(setsockopt(fd, IPPROTO_IP, IP_ADD_MEMBERSHIP, &mr, sizeof(mr)), 0);
	return fd;
}

static void test_no_packet_spans_two_bursts(void **state)
{
	char dir[64], day[96], a[48], b[48], group_a[32], group_b[32];
	const char *gen[] = {"uf-gen",    "--out", day,      "--messages", "2000",
	                     "--symbols", "100",   "--seed", "7",          NULL};
	const char *rp[] = {
	    "uf-replay", "--in",           day,         "--a",    a,       "--b",
	    b,           "--interface",    "127.0.0.1", "--rate", "15000", "--burst",
	    "10",        "--burst-period", "0.7",       NULL};
	const double per = 15000 * (0.7 / 1e3); /* as uf-replay computes it */
	uint64_t next = 1, multi = 0, packets = 0;
	uint16_t port_a, port_b;
	struct tb_run r;
	uint8_t p[2048];
	int fa, fb;

	(void)state;
	tb_mkdtemp(dir, sizeof(dir));
	snprintf(day, sizeof(day), "%s/day.itch", dir);
	tb_run_tool("uf-gen", gen, 30, &r);
	assert_int_equal(r.status, 0);
	tb_run_free(&r);
	snprintf(group_a, sizeof(group_a), "239.87.%d.1", (int)(getpid() % 250));
	snprintf(group_b, sizeof(group_b), "239.87.%d.2", (int)(getpid() % 250));
	fa = open_rx(group_a, &port_a);
	fb = open_rx(group_b, &port_b); /* B is only there so uf-replay has both lines */
	snprintf(a, sizeof(a), "%s:%u", group_a, port_a);
	snprintf(b, sizeof(b), "%s:%u", group_b, port_b);
	tb_run_tool("uf-replay", rp, 30, &r);
	assert_int_equal(r.status, 0);
	tb_run_free(&r);
	/* Every datagram of line A is in the socket now (uf-replay has exited). */
	for (;;) {
		ssize_t n = recv(fa, p, sizeof(p), 0);
		uint64_t seq;
		uint16_t count;
		if (n < 0 && errno == EAGAIN)
			break;
		assert_true(n >= 20);
		memcpy(&seq, p + 10, 8);
		seq = be64toh(seq);
		count = (uint16_t)(p[18] << 8 | p[19]);
		if (count == 0 || count == 0xFFFF)
			continue;            /* heartbeat, end of session */
		assert_int_equal(seq, next); /* in order, none lost, none twice */
		if (e2e_burst_of(seq, per) != e2e_burst_of(seq + count - 1, per))
			fail_msg("packet %" PRIu64 "+%u spans bursts %" PRIu64 " and %" PRIu64, seq,
			         count, e2e_burst_of(seq, per), e2e_burst_of(seq + count - 1, per));
		/* and it still packs: a burst's messages share packets */
		multi += count > 1;
		packets++;
		next = seq + count;
	}
	assert_int_equal(next, 2001);
	/* 2000 / 10.5 bursts: at least one packet each, never more than the burst holds */
	assert_true(packets >= 190 && packets <= 400);
	assert_true(multi > 0);
	close(fa);
	close(fb);
	tb_rmtree(dir);
}

/* Reads line A's data packets (uf-replay has exited: all are in the socket) into first[i],
 * count[i] and len[i] (payload bytes); returns how many. Fails on loss, disorder, or a
 * message whose timestamp is not the day's (msg_ts[seq - 1]). */
static int read_packets(int fd, uint64_t *first, uint16_t *count, size_t *len, int max,
                        uint64_t nmsgs, const uint64_t *msg_ts)
{
	uint64_t next = 1;
	uint8_t p[2048];
	int np = 0;

	for (;;) {
		ssize_t n = recv(fd, p, sizeof(p), 0);
		uint64_t seq;
		uint16_t cnt;
		if (n < 0 && errno == EAGAIN)
			break;
		assert_true(n >= 20);
		memcpy(&seq, p + 10, 8);
		seq = be64toh(seq);
		cnt = (uint16_t)(p[18] << 8 | p[19]);
		if (cnt == 0 || cnt == 0xFFFF)
			continue; /* heartbeat, end of session */
		assert_int_equal(seq, next);
		assert_true(np < max);
		/* the timestamps on the wire are the day's: walk the message blocks */
		size_t off = 20;
		for (uint16_t i = 0; i < cnt; i++) {
			assert_true(off + 2 <= (size_t)n);
			uint16_t ml = (uint16_t)(p[off] << 8 | p[off + 1]);
			assert_true(off + 2 + ml <= (size_t)n && ml >= 11);
			uint64_t ts = 0;
			for (int b = 0; b < 6; b++)
				ts = ts << 8 | p[off + 2 + 5 + b];
			assert_true(seq + i <= nmsgs);
			assert_int_equal(ts, msg_ts[seq + i - 1]);
			off += 2u + ml;
		}
		assert_int_equal(off, (size_t)n);
		first[np] = seq;
		count[np] = cnt;
		len[np] = (size_t)n;
		np++;
		next = seq + cnt;
	}
	assert_int_equal(next, nmsgs + 1);
	return np;
}

#define PK_MSGS 64  /* messages of the written day */
#define PK_LEN  36  /* each an Add Order: 2 + 36 bytes in a packet */
#define PK_MTU  400 /* 20 + 10 x 38 = 400: ten Add Orders a packet at most */

/* Writes the day: microsecond runs of 1, 3, 6, 1, 40 messages, then 13 singles, some of them
 * nanoseconds apart across a microsecond boundary. */
static void write_day(const char *path, uint64_t *ts)
{
	static const int runs[] = {1, 3, 6, 1, 40, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
	uint64_t us = 34200000000ull / 1000; /* 09:30:00 in microseconds */
	FILE *f = fopen(path, "wb");
	int k = 0;

	assert_non_null(f);
	for (size_t r = 0; r < sizeof(runs) / sizeof(runs[0]); r++, us++)
		for (int i = 0; i < runs[r]; i++, k++) {
			/* inside a microsecond the nanoseconds grow; the singles after the
			 * big run sit at 999 / 0 ns of consecutive microseconds: 1 ns apart */
			ts[k] = us * 1000 + (r >= 5 ? (r % 2 ? 999u : 0u) : (uint64_t)i * 7);
		}
	assert_int_equal(k, PK_MSGS);
	for (int i = 0; i < PK_MSGS; i++) {
		uint8_t m[2 + PK_LEN] = {0, PK_LEN, 'A'};
		m[2 + 1] = 0;
		m[2 + 2] = 1; /* stock locate 1 */
		for (int b = 0; b < 6; b++)
			m[2 + 5 + b] = (uint8_t)(ts[i] >> (40 - 8 * b));
		m[2 + 18] = (uint8_t)(i + 1); /* order reference */
		m[2 + 19] = 'B';
		m[2 + 23] = 100; /* shares */
		memcpy(m + 2 + 24, "TEST    ", 8);
		m[2 + 34] = 0x27; /* price 1.0000 */
		m[2 + 35] = 0x10;
		assert_int_equal(fwrite(m, sizeof(m), 1, f), 1);
	}
	assert_int_equal(fclose(f), 0);
}

/* Replays the day to fresh groups at full speed with --mtu PK_MTU (and --pack `pack` unless
 * NULL); returns line A's data packets as read_packets() does. */
static int replay_day(const char *day, const char *pack, uint64_t *first, uint16_t *count,
                      size_t *len, const uint64_t *ts)
{
	char a[48], b[48], group_a[32], group_b[32], mtu[16];
	const char *rp[16] = {"uf-replay",   "--in",      day,      "--a", NULL,    "--b", NULL,
	                      "--interface", "127.0.0.1", "--rate", "0",   "--mtu", mtu};
	uint16_t port_a, port_b;
	struct tb_run r;
	int fa, fb, np, argc = 13;

	if (pack) {
		rp[argc++] = "--pack";
		rp[argc++] = pack;
	}
	rp[argc] = NULL;
	rp[4] = a;
	rp[6] = b;
	snprintf(mtu, sizeof(mtu), "%d", PK_MTU);
	snprintf(group_a, sizeof(group_a), "239.86.%d.1", (int)(getpid() % 250));
	snprintf(group_b, sizeof(group_b), "239.86.%d.2", (int)(getpid() % 250));
	fa = open_rx(group_a, &port_a);
	fb = open_rx(group_b, &port_b); /* B is only there so uf-replay has both lines */
	snprintf(a, sizeof(a), "%s:%u", group_a, port_a);
	snprintf(b, sizeof(b), "%s:%u", group_b, port_b);
	tb_run_tool("uf-replay", rp, 30, &r);
	if (r.status != 0)
		fail_msg("uf-replay exited %d: %s", r.status, r.err);
	tb_run_free(&r);
	np = read_packets(fa, first, count, len, 128, PK_MSGS, ts);
	close(fa);
	close(fb);
	return np;
}

static void test_pack_timestamp(void **state)
{
	char dir[64], day[96];
	uint64_t ts[PK_MSGS], first[128];
	uint16_t count[128];
	size_t len[128];
	/* what the day must give: one packet per microsecond run, the 40-run cut at 10 */
	static const uint16_t want[] = {1, 3, 6, 1, 10, 10, 10, 10, 1, 1, 1,
	                                1, 1, 1, 1, 1,  1,  1,  1,  1, 1};
	int np, nwant = (int)(sizeof(want) / sizeof(want[0]));

	(void)state;
	tb_mkdtemp(dir, sizeof(dir));
	snprintf(day, sizeof(day), "%s/day.itch", dir);
	write_day(day, ts);

	np = replay_day(day, "timestamp", first, count, len, ts);
	for (int i = 0; i < np && i < nwant; i++)
		if (count[i] != want[i])
			fail_msg("--pack timestamp: packet %d holds %u messages, want %u", i,
			         count[i], want[i]);
	assert_int_equal(np, nwant);
	/* and the rule itself, packet by packet: one microsecond each, within --mtu, and a
	 * packet that ends inside a microsecond is full (the next message would not fit) */
	for (int i = 0; i < np; i++) {
		uint64_t us = ts[first[i] - 1] / 1000;
		assert_true(len[i] <= PK_MTU);
		for (uint16_t k = 1; k < count[i]; k++)
			assert_int_equal(ts[first[i] - 1 + k] / 1000, us);
		if (i + 1 < np && ts[first[i + 1] - 1] / 1000 == us)
			assert_true(len[i] + 2 + PK_LEN > PK_MTU);
	}

	/* the default (and --pack mtu) fills every packet to --mtu across microseconds */
	for (int v = 0; v < 2; v++) {
		np = replay_day(day, v ? "mtu" : NULL, first, count, len, ts);
		assert_int_equal(np, (PK_MSGS + 9) / 10);
		for (int i = 0; i + 1 < np; i++)
			assert_int_equal(count[i], 10);
	}
	tb_rmtree(dir);
}

/* A --pack other than mtu or timestamp is bad usage (status 2, said on stderr). */
static void test_pack_refused(void **state)
{
	const char *bad[] = {
	    "uf-replay", "--in", "/nonexistent.itch", "--a", "239.86.1.1:9", "--pack",
	    "bytes",     NULL};
	struct tb_run r;

	(void)state;
	tb_run_tool("uf-replay", bad, 10, &r);
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err, "--pack"));
	tb_run_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_no_packet_spans_two_bursts),
	    cmocka_unit_test(test_pack_timestamp),
	    cmocka_unit_test(test_pack_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
