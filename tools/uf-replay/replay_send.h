/* uf-replay: the sender. It paces the stream's packets (--rate, --burst, or the messages'
 * own timestamps / --speed), sends each to every line through that line's faults (drop,
 * duplicate, reorder; repeatable per --seed), sends heartbeats while idle and the end of
 * session at the end, repeated every second through --linger. While it waits it serves the
 * servers registered with rp_sender_add_server (replay_server.h). */
#ifndef UF_REPLAY_SEND_H
#define UF_REPLAY_SEND_H

#include <signal.h>
#include <stdint.h>
#include <sys/socket.h>

#include "replay_opts.h"
#include "replay_server.h"
#include "replay_stream.h"

#define RP_HEARTBEAT_NS 1000000000ull /* heartbeat / end-of-session repeat interval */
#define RP_MAX_SERVERS  4             /* servers beside the sender, at most */
/* Datagrams one sendmmsg may carry: one per line per packet on time, up to RP_TXQ_PACKETS
 * packets when the sender is behind its schedule (6 entries a packet at most: 2 lines, each
 * with a duplicate and a held-back packet). */
#define RP_TXQ_PACKETS 16
#define RP_TXQ_MAX     (RP_TXQ_PACKETS * 6)
/* While it is behind, the servers are still served at least this often (ns). */
#define RP_SERVE_NS 20000ull
/* A wait shorter than this is a spin on the clock: a sleep and its wake-up cost more. */
#define RP_SPIN_NS 5000ull

/* Set by SIGINT/SIGTERM (main installs the handlers): the sender stops where it is, sends
 * the end of session and returns. */
extern volatile sig_atomic_t rp_stop;

struct rp_line {
	int on;                       /* line configured */
	struct sockaddr_in dst;       /* group:port */
	const struct rp_fault *drop;  /* drop faults (the options') */
	uint64_t rng;                 /* generator state (per line: independent of the other) */
	uint8_t held[RP_MAX_PAYLOAD]; /* packet held back by a reorder */
	size_t held_len;              /* 0 when none */
	uint64_t sent, dropped, duplicated, reordered; /* packets */
};

/* Datagrams built but not sent yet: one sendmmsg for all (each kernel entry costs more than
 * the send's own work on a VM; two lines and a backlog per call instead of one sendto each). */
struct rp_txq {
	struct mmsghdr m[RP_TXQ_MAX];      /* one per datagram, its destination in msg_name */
	struct iovec iov[RP_TXQ_MAX];      /* what m[i] sends */
	struct sockaddr_in to[RP_TXQ_MAX]; /* m[i]'s destination (copied: a line's may change) */
	int n;                             /* entries queued */
	int nbuf; /* packet buffers in use (replay_send.c's RP_TXQ_PACKETS, one process, one sender)
	           */
};

struct rp_sender {
	const struct rp_opts *o;                  /* pacing, faults, --linger, --verbose */
	struct rp_stream *st;                     /* what is sent; sent_high moves */
	int tx;                                   /* multicast sender socket */
	struct rp_line line[2];                   /* A, B */
	struct rp_server servers[RP_MAX_SERVERS]; /* served while waiting */
	int nservers;                             /* entries in servers */
	uint64_t packets;                         /* data packets built */
	double seconds;                           /* from the first packet to the end of --linger */
	struct rp_txq q;                          /* datagrams queued for the next sendmmsg */
	uint64_t last_serve;                      /* when the servers were last served (mono ns) */
	int srv_nfds[RP_MAX_SERVERS]; /* fds servers[i] gave to the last poll (0: none, or not
	                               * asked yet: served at every step of a wait) */
	uint64_t sendmmsg_calls;      /* system calls that sent the data packets */
};

/* Sets up the lines from the options (faults seeded by --seed); `tx` is the multicast socket. */
void rp_sender_init(struct rp_sender *s, const struct rp_opts *o, struct rp_stream *st, int tx);

/* Adds a server to serve while waiting. Returns 0 or -ENOSPC. */
int rp_sender_add_server(struct rp_sender *s, struct rp_server srv);

/* One data packet (messages [first, first + count)) to one line, through the line's faults
 * (drop by chance or --drop-X @seq, duplicate, reorder: a packet held back goes out after the
 * next one). Also what the IEX-TP capture replay sends with (replay_capture.c). It only
 * queues: `buf` must stay as it is until rp_sender_flush, which sends the queue in order. */
void rp_line_send(struct rp_sender *s, struct rp_line *l, const uint8_t *buf, size_t len,
                  uint64_t first, uint64_t count);

/* Sends every queued datagram, in the order queued (one sendmmsg while the kernel takes them
 * all; a datagram the kernel refuses for good is reported and skipped, as rp_sendto does). */
void rp_sender_flush(struct rp_sender *s);

/* Sends the whole stream (or until rp_stop), the end of session, and lingers. */
void rp_sender_run(struct rp_sender *s);

#endif /* UF_REPLAY_SEND_H */
