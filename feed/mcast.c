/* UDP socket setup for lines, re-requests and the replay sender. */
#include "feed/mcast.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/sock_diag.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/uf_err.h"

/* Large receive buffers absorb bursts while the feed thread is busy (e.g. applying a
 * recovered range). FORCE works as root beyond net.core.rmem_max; otherwise best effort. */
static void uf_mcast_set_rcvbuf(int fd, int rcvbuf)
{
	if (rcvbuf <= 0)
		return;
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof(rcvbuf)) < 0)
		(void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
}

static int uf_mcast_fail(int fd, char *err, size_t errlen, const char *what)
{
	int e = errno ? errno : EINVAL;
	uf_err_rc(err, errlen, -e, "%s", what);
	if (fd >= 0)
		close(fd);
	return -e;
}

int uf_mcast_open_rx(struct in_addr group, uint16_t port, struct in_addr ifaddr, int rcvbuf,
                     char *err, size_t errlen)
{
	char g[INET_ADDRSTRLEN], i[INET_ADDRSTRLEN], what[128];
	inet_ntop(AF_INET, &group, g, sizeof(g));
	inet_ntop(AF_INET, &ifaddr, i, sizeof(i));
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return uf_mcast_fail(-1, err, errlen, "socket");
	int one = 1;
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0)
		return uf_mcast_fail(fd, err, errlen, "SO_REUSEADDR");
	if (setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof(one)) < 0)
		return uf_mcast_fail(fd, err, errlen, "SO_TIMESTAMPNS");
	uf_mcast_set_rcvbuf(fd, rcvbuf);
	/* The socket's drop total rides on received datagrams (SO_RXQ_OVFL cmsg): loss in this
	 * host, not on the network, becomes visible per line. Best effort. */
	(void)setsockopt(fd, SOL_SOCKET, SO_RXQ_OVFL, &one, sizeof(one));
	/* Binding to the group (not INADDR_ANY) keeps other groups on the same port out. */
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port), .sin_addr = group};
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		snprintf(what, sizeof(what), "bind %s:%u", g, port);
		return uf_mcast_fail(fd, err, errlen, what);
	}
	struct ip_mreq mr = {.imr_multiaddr = group, .imr_interface = ifaddr};
	if (setsockopt(fd, IPPROTO_IP, IP_ADD_MEMBERSHIP, &mr, sizeof(mr)) < 0) {
		snprintf(what, sizeof(what), "join %s on interface %s", g, i);
		return uf_mcast_fail(fd, err, errlen, what);
	}
	/* Only this group's datagrams, even if another socket joined others on the port. */
	int zero = 0;
	(void)setsockopt(fd, IPPROTO_IP, IP_MULTICAST_ALL, &zero, sizeof(zero));
	return fd;
}

int uf_mcast_join_source(int fd, struct in_addr group, struct in_addr source, struct in_addr ifaddr,
                         char *err, size_t errlen)
{
	char g[INET_ADDRSTRLEN], src[INET_ADDRSTRLEN], what[160];
	inet_ntop(AF_INET, &group, g, sizeof(g));
	inet_ntop(AF_INET, &source, src, sizeof(src));
	/* The kernel refuses a source filter on a group joined for any source (and that join
	 * would let every sender in anyway): leave it first. Not joined is fine too. */
	struct ip_mreq mr = {.imr_multiaddr = group, .imr_interface = ifaddr};
	if (setsockopt(fd, IPPROTO_IP, IP_DROP_MEMBERSHIP, &mr, sizeof(mr)) < 0 &&
	    errno != EADDRNOTAVAIL) {
		snprintf(what, sizeof(what), "leave %s before the source-specific join", g);
		return uf_mcast_fail(-1, err, errlen, what);
	}
	struct ip_mreq_source ms = {
	    .imr_multiaddr = group, .imr_interface = ifaddr, .imr_sourceaddr = source};
	if (setsockopt(fd, IPPROTO_IP, IP_ADD_SOURCE_MEMBERSHIP, &ms, sizeof(ms)) < 0) {
		snprintf(what, sizeof(what), "join %s from source %s", g, src);
		return uf_mcast_fail(-1, err, errlen, what);
	}
	return 0;
}

int uf_mcast_open_unicast(struct in_addr local, uint16_t port, int rcvbuf, char *err, size_t errlen)
{
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return uf_mcast_fail(-1, err, errlen, "socket");
	int one = 1;
	if (setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof(one)) < 0)
		return uf_mcast_fail(fd, err, errlen, "SO_TIMESTAMPNS");
	uf_mcast_set_rcvbuf(fd, rcvbuf);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port), .sin_addr = local};
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return uf_mcast_fail(fd, err, errlen, "bind re-request socket");
	return fd;
}

int64_t uf_mcast_kernel_drops(int fd)
{
	uint32_t mi[SK_MEMINFO_VARS];
	socklen_t len = sizeof(mi);
	memset(mi, 0, sizeof(mi));
	if (getsockopt(fd, SOL_SOCKET, SO_MEMINFO, mi, &len) < 0)
		return -errno;
	if (len < (socklen_t)((SK_MEMINFO_DROPS + 1) * sizeof(uint32_t)))
		return -EOPNOTSUPP;
	return mi[SK_MEMINFO_DROPS];
}

int uf_mcast_rcvbuf(int fd)
{
	int v = 0;
	socklen_t len = sizeof(v);
	if (getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, &len) < 0)
		return -errno;
	return v;
}

int uf_mcast_open_tx(struct in_addr ifaddr, int ttl, char *err, size_t errlen)
{
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return uf_mcast_fail(-1, err, errlen, "socket");
	if (setsockopt(fd, IPPROTO_IP, IP_MULTICAST_IF, &ifaddr, sizeof(ifaddr)) < 0)
		return uf_mcast_fail(fd, err, errlen, "IP_MULTICAST_IF");
	unsigned char loop = 1, t = (unsigned char)ttl;
	if (setsockopt(fd, IPPROTO_IP, IP_MULTICAST_LOOP, &loop, sizeof(loop)) < 0)
		return uf_mcast_fail(fd, err, errlen, "IP_MULTICAST_LOOP");
	if (setsockopt(fd, IPPROTO_IP, IP_MULTICAST_TTL, &t, sizeof(t)) < 0)
		return uf_mcast_fail(fd, err, errlen, "IP_MULTICAST_TTL");
	int sndbuf = 4 << 20;
	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &sndbuf, sizeof(sndbuf)) < 0)
		(void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
	return fd;
}

int uf_mcast_parse_addr(const char *s, struct sockaddr_in *out)
{
	char host[64];
	const char *colon = strrchr(s, ':');
	if (!colon || colon == s || (size_t)(colon - s) >= sizeof(host))
		return -EINVAL;
	memcpy(host, s, (size_t)(colon - s));
	host[colon - s] = '\0';
	char *end;
	errno = 0;
	unsigned long port = strtoul(colon + 1, &end, 10);
	if (errno || *end || end == colon + 1 || port == 0 || port > 65535)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	out->sin_family = AF_INET;
	out->sin_port = htons((uint16_t)port);
	if (inet_pton(AF_INET, host, &out->sin_addr) != 1)
		return -EINVAL;
	return 0;
}
