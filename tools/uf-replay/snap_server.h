/* uf-replay --serve-snapshot: a SoupBinTCP 3.00 / GLIMPSE 5.0 server on 127.0.0.1 that
 * serves the state of the day as of each login, built from the messages sent so far.
 *
 * It runs in a thread of its own, so the sending loop only publishes how far it has sent
 * (rp_snap_server_sent, one release store per packet) and never waits for a client. The
 * thread catches up with what was sent (snap_state.h) on every wake-up and at each login, and
 * answers a valid login with Login Accepted, the snapshot as sequenced data packets (ITCH 5.0
 * messages numbered 1..M in the SoupBinTCP session), and the End of Snapshot, whose number is
 * the next MoldUDP64 sequence the real-time lines will carry. After that the session stays up
 * with server heartbeats (every heartbeat_ms without other output) until the client logs out,
 * closes, or stays silent for idle_timeout_ms. Bad username or password: Login Rejected 'A';
 * a requested session other than blank or ours: Login Rejected 'S'. A requested sequence
 * number k > 1 starts at the k-th message of that login's snapshot; 0 means "only new
 * messages", and a snapshot has none, so only the heartbeats follow.
 *
 * Memory: each login's snapshot is built whole into a buffer of that client (about 40 bytes a
 * resting order) and written as the socket takes it. */
#ifndef RP_SNAP_SERVER_H
#define RP_SNAP_SERVER_H

#include <stddef.h>
#include <stdint.h>

#define RP_SNAP_DEFAULT_USER     "replay"
#define RP_SNAP_DEFAULT_PASSWORD "replay"

struct rp_snap_server_cfg {
	uint16_t port;            /* TCP port on 127.0.0.1; 0 = an ephemeral one */
	char username[7];         /* expected username (<= 6 characters) */
	char password[11];        /* expected password (<= 10 characters) */
	char session[11];         /* session name in Login Accepted (<= 10) */
	uint32_t heartbeat_ms;    /* server heartbeat after this much silence; default 1000 */
	uint32_t idle_timeout_ms; /* drop a client silent this long (and unlogged ones); 15000 */
};

struct rp_snap_server_stats {
	uint64_t connections;       /* accepted TCP connections */
	uint64_t logins;            /* logins accepted */
	uint64_t rejected;          /* logins rejected (both codes) */
	uint64_t snapshots;         /* snapshots sent whole (End of Snapshot written) */
	uint64_t snapshot_messages; /* sequenced messages written, End of Snapshot included */
	uint64_t heartbeats;        /* server heartbeats written */
	uint64_t bad_packets;       /* connections dropped for a malformed or unexpected packet */
	uint64_t timeouts;          /* connections dropped for silence */
};

struct rp_snap_server;

/* The wire bytes of message `seq` (1-based) of the day; must stay valid and unchanged while
 * the server runs (uf-replay's mapping of the input file). */
typedef const uint8_t *(*rp_snap_msg_fn)(void *ctx, uint64_t seq, size_t *len);

/* Parses "PORT[,USERNAME,PASSWORD]" into *cfg (defaults for the rest; session "REPLAY0001").
 * Returns 0 or -EINVAL. */
int rp_snap_server_parse(const char *arg, struct rp_snap_server_cfg *cfg);

/* Binds 127.0.0.1:cfg->port, prints "uf-replay: snapshot server listening on
 * 127.0.0.1:PORT" on stderr (PORT the bound one) and starts the thread. Returns 0 with *out
 * and *bound_port, or -errno (the message printed). */
int rp_snap_server_start(const struct rp_snap_server_cfg *cfg, rp_snap_msg_fn get, void *ctx,
                         struct rp_snap_server **out, uint16_t *bound_port);

/* Messages 1 .. next_seq - 1 have been sent: the next login's snapshot includes them. */
void rp_snap_server_sent(struct rp_snap_server *s, uint64_t next_seq);

/* Copies the counters (any thread). */
void rp_snap_server_stats(struct rp_snap_server *s, struct rp_snap_server_stats *out);

/* Stops the thread, closes every socket, frees everything. NULL is fine. */
void rp_snap_server_stop(struct rp_snap_server *s);

#endif /* RP_SNAP_SERVER_H */
