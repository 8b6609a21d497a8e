/* Source-specific multicast join (uf_mcast_join_source) over loopback: the kernel drops
 * datagrams of the group from any other sender. */
#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "feed/mcast.h"

/* A group of this test process (pid in the address: parallel runs do not meet). */
static struct in_addr test_group(int k)
{
	char g[32];
	unsigned pid = (unsigned)getpid();
	snprintf(g, sizeof(g), "239.79.%u.%u", (pid >> 8) & 255, (pid + (unsigned)k) & 255);
	struct in_addr a;
	inet_pton(AF_INET, g, &a);
	return a;
}

static struct in_addr ip(const char *s)
{
	struct in_addr a;
	inet_pton(AF_INET, s, &a);
	return a;
}

/* A multicast sender out of lo whose datagrams carry source address `from`. */
static int sender_from(const char *from)
{
	char err[128];
	int fd = uf_mcast_open_tx(ip("127.0.0.1"), 1, err, sizeof(err));
	assert_true(fd >= 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr = ip(from)};
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return fd;
}

/* Opens a receiver on an ephemeral port of `group`; returns it and its port. */
static int receiver(struct in_addr group, uint16_t *port)
{
	char err[128];
	int fd = uf_mcast_open_rx(group, 0, ip("127.0.0.1"), 0, err, sizeof(err));
	if (fd < 0)
		fail_msg("uf_mcast_open_rx: %s", err);
	struct sockaddr_in sa;
	socklen_t sl = sizeof(sa);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &sl), 0);
	*port = ntohs(sa.sin_port);
	return fd;
}

static void send_to(int tx, struct in_addr group, uint16_t port, const char *text)
{
	struct sockaddr_in dst = {
	    .sin_family = AF_INET, .sin_port = htons(port), .sin_addr = group};
	assert_int_equal(sendto(tx, text, strlen(text), 0, (struct sockaddr *)&dst, sizeof(dst)),
	                 (ssize_t)strlen(text));
}

/* Reads datagrams (bounded: 2 s) until one with `text` arrives; counts those from
 * 127.0.0.2 on the way. Returns 1 when `text` arrived. */
static int read_until(int rx, const char *text, int *foreign)
{
	char buf[64];
	for (int i = 0; i < 64; i++) {
		struct pollfd p = {.fd = rx, .events = POLLIN};
		if (poll(&p, 1, 2000) != 1)
			return 0;
		struct sockaddr_in from;
		socklen_t fl = sizeof(from);
		ssize_t n = recvfrom(rx, buf, sizeof(buf) - 1, 0, (struct sockaddr *)&from, &fl);
		assert_true(n >= 0);
		buf[n] = '\0';
		if (from.sin_addr.s_addr == ip("127.0.0.2").s_addr)
			(*foreign)++;
		if (!strcmp(buf, text))
			return 1;
	}
	return 0;
}

/* Without the source join the foreign sender's datagram does arrive: what the next test
 * filters is really there. */
static void test_mcast_any_source_join_receives_every_sender(void **s)
{
	uint16_t port;
	struct in_addr g = test_group(0);
	int rx = receiver(g, &port);
	int mine = sender_from("127.0.0.1"), other = sender_from("127.0.0.2");
	int foreign = 0;
	send_to(other, g, port, "foreign");
	assert_true(read_until(rx, "foreign", &foreign));
	assert_int_equal(foreign, 1);
	close(rx);
	close(mine);
	close(other);
}

static void test_mcast_source_join_drops_other_senders(void **s)
{
	uint16_t port;
	char err[128];
	struct in_addr g = test_group(1);
	int rx = receiver(g, &port);
	if (uf_mcast_join_source(rx, g, ip("127.0.0.1"), ip("127.0.0.1"), err, sizeof(err)) < 0)
		fail_msg("uf_mcast_join_source: %s", err);
	int mine = sender_from("127.0.0.1"), other = sender_from("127.0.0.2");
	int foreign = 0;
	send_to(other, g, port, "foreign");
	send_to(mine, g, port, "mine");
	assert_true(read_until(rx, "mine", &foreign));
	send_to(other, g, port, "foreign");
	send_to(mine, g, port, "mine again");
	assert_true(read_until(rx, "mine again", &foreign));
	assert_int_equal(foreign, 0);
	close(rx);
	close(mine);
	close(other);
}

static void test_mcast_source_join_reports_a_bad_socket(void **s)
{
	char err[128] = "";
	assert_int_equal(uf_mcast_join_source(-1, test_group(2), ip("127.0.0.1"), ip("127.0.0.1"),
	                                      err, sizeof(err)),
	                 -EBADF);
	assert_non_null(strstr(err, "239.79."));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_mcast_any_source_join_receives_every_sender),
	    cmocka_unit_test(test_mcast_source_join_drops_other_senders),
	    cmocka_unit_test(test_mcast_source_join_reports_a_bad_socket),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
