/* The epoll back end shares a receive batch between the lines (feed/ingest.c): a flooded
 * line's socket, returned first by epoll_wait, took the whole batch poll after poll while
 * the other line's datagrams waited in its socket. On the real IEX DEEP capture with 1 %
 * loss per line that put one line thousands of datagrams behind: its copies came too late
 * to fill the other's holes (44-64 messages given up that a line had, against 6 that both
 * lost). The condition is forced: 100 datagrams queued on line A before 20 on line B, then
 * one poll. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "feed/ingest.h"

/* A UDP socket on 127.0.0.1 at an ephemeral port; its address into *sa. */
static int fair_socket(struct sockaddr_in *sa)
{
	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	assert_true(fd >= 0);
	int rcv = 1 << 20;
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcv, sizeof(rcv));
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(fd, (struct sockaddr *)sa, sizeof(*sa)), 0);
	socklen_t len = sizeof(*sa);
	assert_int_equal(getsockname(fd, (struct sockaddr *)sa, &len), 0);
	return fd;
}

static void fair_send(int tx, const struct sockaddr_in *to, int n)
{
	uint8_t b[16] = {0};
	for (int i = 0; i < n; i++) {
		b[0] = (uint8_t)i;
		assert_int_equal(
		    sendto(tx, b, sizeof(b), 0, (const struct sockaddr *)to, sizeof(*to)),
		    (ssize_t)sizeof(b));
	}
}

static void test_ingest_epoll_shares_a_batch_between_lines(void **state)
{
	(void)state;
	struct sockaddr_in sa[2];
	int fds[2] = {fair_socket(&sa[0]), fair_socket(&sa[1])};
	struct uf_feed_stats fst;
	struct uf_feed_line_stats line[2];
	struct uf_feed_line_stats *st[2] = {&line[0], &line[1]};
	memset(&fst, 0, sizeof(fst));
	memset(line, 0, sizeof(line));
	struct uf_ingest ig;
	char err[256];
	struct uf_ingest_params p = {
	    .backend = UF_BACKEND_EPOLL, .sqpoll_cpu = -1, .numa_node = -1};
	assert_int_equal(uf_ingest_open(&ig, &p, fds, 2, st, &fst, err, sizeof(err)), 0);
	assert_int_equal(ig.backend, UF_BACKEND_EPOLL);
	int tx = socket(AF_INET, SOCK_DGRAM, 0);
	assert_true(tx >= 0);
	fair_send(tx, &sa[0], 100); /* loopback: queued in the socket when sendto returns */
	fair_send(tx, &sa[1], 20);
	struct uf_pkt pkts[UF_INGEST_BATCH];
	int n = uf_ingest_poll(&ig, pkts, UF_INGEST_BATCH, 1000);
	int from[2] = {0, 0};
	for (int i = 0; i < n; i++) {
		assert_true(pkts[i].src < 2);
		from[pkts[i].src]++;
	}
	/* each line at least half the batch when it has that much: all 20 of B, and A 32 or
	 * more (what B left) */
	assert_int_equal(from[1], 20);
	assert_in_range(from[0], UF_INGEST_BATCH / 2, UF_INGEST_BATCH - 20);
	uf_ingest_release(&ig, pkts, n);
	uf_ingest_close(&ig);
	close(tx);
	close(fds[0]);
	close(fds[1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_ingest_epoll_shares_a_batch_between_lines),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
