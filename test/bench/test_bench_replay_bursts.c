/* uf-replay --burst as uf-bench e2e's drain times need it: no packet holds messages of two
 * bursts, so a receiver that knows --rate and --burst-period tells a message's burst from its
 * sequence alone (e2e_raw.h e2e_burst_of, uf-replay's own formula). The bursts here hold
 * 10.5 messages (15 000 msg/s x 0.7 ms) and a 1400-byte packet fits about 40 generated
 * messages, so without the rule nearly every packet would span a burst boundary, including
 * the fractional ones. */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
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

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_no_packet_spans_two_bursts),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
