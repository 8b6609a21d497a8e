/* UDP sockets for MoldUDP64: multicast line receivers, the re-request client socket, and the
 * multicast sender uf-replay uses. Cold path only (setup). */
#ifndef UF_MCAST_H
#define UF_MCAST_H

#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>

/* Opens a non-blocking UDP socket bound to group:port, joined to `group` on the interface
 * with address `ifaddr`, with SO_TIMESTAMPNS (kernel receive time, CLOCK_REALTIME),
 * SO_REUSEADDR (several processes may listen to one line) and a receive buffer of
 * `rcvbuf` bytes (0 = leave the default; SO_RCVBUFFORCE tried first as root).
 * Returns the fd, or -errno with the failing step in `err`. */
int uf_mcast_open_rx(struct in_addr group, uint16_t port, struct in_addr ifaddr, int rcvbuf,
                     char *err, size_t errlen);

/* Restricts receiver `fd` (from uf_mcast_open_rx, joined to `group` on `ifaddr`) to datagrams
 * sent by `source`: drops the any-source membership and joins (source, group) with
 * IP_ADD_SOURCE_MEMBERSHIP, so the kernel itself discards other senders on the group (IGMPv3
 * tells the network to stop forwarding them too). The feed still checks each datagram's
 * source (uf_arb_source_ok): another socket of the host may keep an any-source join.
 * Returns 0, or -errno with the failing step in `err` (`fd` stays open). Cold. */
int uf_mcast_join_source(int fd, struct in_addr group, struct in_addr source, struct in_addr ifaddr,
                         char *err, size_t errlen);

/* Opens a non-blocking unconnected UDP socket bound to `local` (port 0 = any) with
 * SO_TIMESTAMPNS, for sending re-requests and receiving their answers.
 * Returns the fd or -errno (message in `err`). */
int uf_mcast_open_unicast(struct in_addr local, uint16_t port, int rcvbuf, char *err,
                          size_t errlen);

/* Opens a UDP socket that sends multicast out of `ifaddr` with loopback on and TTL `ttl`.
 * Returns the fd or -errno (message in `err`). */
int uf_mcast_open_tx(struct in_addr ifaddr, int ttl, char *err, size_t errlen);

/* Parses "A.B.C.D:PORT" into `out`. Returns 0 or -EINVAL. */
int uf_mcast_parse_addr(const char *s, struct sockaddr_in *out);

/* Datagrams the kernel dropped on socket `fd` so far (its sk_drops, via SO_MEMINFO), or
 * -errno. A system call: cold paths only. */
int64_t uf_mcast_kernel_drops(int fd);

/* The socket's receive buffer in bytes as the kernel reports it (twice what was set), or
 * -errno. */
int uf_mcast_rcvbuf(int fd);

#endif /* UF_MCAST_H */
