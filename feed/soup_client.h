/* SoupBinTCP 3.00 client: a state machine that never blocks, for GLIMPSE 5.0 snapshots (and
 * any SoupBinTCP session).
 *
 *   IDLE --start--> CONNECTING --connected--> LOGIN_SENT --Login Accepted--> ACTIVE
 *                      ^   |                      |  Login Rejected 'A' --> DONE
 *                      |   | timeout/refused      |  Login Rejected 'S', timeout --+
 *                      |   v                      v                               |
 *                      +-- BACKOFF <-------------- disconnect, server silent <----+
 *   ACTIVE --End of Session 'Z'--> DONE;  uf_soup_client_logout() --> DONE (final: another
 *   session or snapshot takes a new client)
 *   GLIMPSE mode: ACTIVE --End of Snapshot--> (event, then Logout Request) --> DONE
 *
 * The caller drives it: uf_soup_client_poll(now) does every piece of work that is due
 * (non-blocking connect, login, reads, client heartbeats, timeouts, reconnect after a back-off
 * that doubles from backoff_min_ms to backoff_max_ms), calling back for each sequenced message and
 * each event. uf_soup_client_pollfd() says which fd/events to wait for and for how long, so a
 * caller can sleep in poll() or epoll, or busy-poll. uf_soup_client_run() is that loop, for tools
 * and tests.
 *
 * Snapshot use (GLIMPSE): params.glimpse = 1, seq = 1, resume = 0. Every LOGIN_ACCEPTED event
 * starts a fresh snapshot: drop whatever a previous, broken connection delivered. Messages
 * come through on_message (ITCH 5.0 bytes, zero copy: valid during the call only); the
 * END_OF_SNAPSHOT event carries the next real-time sequence number; the client then logs out
 * and is DONE. Not for the hot path: each poll makes system calls. Callbacks may call
 * uf_soup_client_logout() but must not destroy the client. */
#ifndef UF_SOUP_CLIENT_H
#define UF_SOUP_CLIENT_H

#include <netinet/in.h>
#include <poll.h>
#include <stddef.h>
#include <stdint.h>

#include "decode/uf_soup.h"

enum uf_soup_client_state {
	UF_SOUP_CL_IDLE = 0,   /* created, not started */
	UF_SOUP_CL_CONNECTING, /* TCP connect in progress */
	UF_SOUP_CL_LOGIN_SENT, /* login request sent, waiting for the answer */
	UF_SOUP_CL_ACTIVE,     /* logged in: sequenced data and heartbeats */
	UF_SOUP_CL_BACKOFF,    /* disconnected; reconnects at the back-off deadline */
	UF_SOUP_CL_DONE,       /* finished: end of session, logout, or rejected for good */
};

enum uf_soup_client_ev {
	UF_SOUP_EV_LOGIN_ACCEPTED = 1, /* seq: first sequence number to come; session */
	UF_SOUP_EV_LOGIN_REJECTED,     /* reason: 'A' not authorized (DONE), 'S' (retries) */
	UF_SOUP_EV_DISCONNECTED,       /* err: -ETIMEDOUT, -ECONNREFUSED, -EBADMSG, -EPIPE... */
	UF_SOUP_EV_END_OF_SESSION,     /* seq: the next sequence the session would have had */
	UF_SOUP_EV_END_OF_SNAPSHOT,    /* GLIMPSE: seq = next real-time sequence number */
	UF_SOUP_EV_LOGGED_OUT,         /* our logout request was sent and the socket closed */
};

struct uf_soup_client_event {
	uint8_t kind;    /* enum uf_soup_client_ev */
	uint8_t reason;  /* LOGIN_REJECTED: reject code */
	int err;         /* DISCONNECTED: why, -errno */
	uint8_t refusal; /* DISCONNECTED: 1 + enum uf_soup_err when a packet was refused, else 0 */
	uint8_t packet;  /* DISCONNECTED: type letter of the packet that ended it (refused, out
	                  * of place, bad 'G'), 0 when none did (close, timeout, refused connect) */
	uint64_t seq;    /* see enum uf_soup_client_ev */
	char session[UF_SOUP_SESSION_LEN]; /* LOGIN_ACCEPTED: space padded, not terminated */
};

struct uf_soup_client_cb {
	/* One sequenced message (not the End of Snapshot in GLIMPSE mode): seq is its SoupBinTCP
	 * sequence number, msg points into the client's buffer for the call only. */
	void (*on_message)(void *ctx, uint64_t seq, const uint8_t *msg, size_t len);
	/* A state change the caller must know (may be NULL). */
	void (*on_event)(void *ctx, const struct uf_soup_client_event *ev);
	void *ctx;
};

/* Parameters; start from uf_soup_client_params_default(). */
struct uf_soup_client_params {
	struct sockaddr_in server;   /* IPv4 address and port */
	char username[7];            /* <= 6 printable characters */
	char password[11];           /* <= 10 */
	char session[11];            /* requested session, "" = the server's current one */
	uint64_t seq;                /* requested sequence at the first login; default 1 */
	uint32_t connect_timeout_ms; /* TCP connect; default 2000 */
	uint32_t login_timeout_ms;   /* login answer after connect; default 5000 */
	uint32_t server_timeout_ms;  /* nothing from the server this long = dead; default 15000 */
	uint32_t heartbeat_ms;       /* client heartbeat after this much silence; default 1000 */
	uint32_t backoff_min_ms;     /* first reconnect delay; default 100 */
	uint32_t backoff_max_ms;     /* cap of the doubling delay; default 5000. The delay keeps
	                              * doubling across logins: an accepted login does not reset
	                              * it (a server that accepts and then closes or sends garbage
	                              * would otherwise get a login every backoff_min_ms, issue 23
	                              * item 3). Outside GLIMPSE mode a session that stayed logged
	                              * in for backoff_max_ms or more was healthy: its loss
	                              * reconnects after backoff_min_ms again. */
	uint32_t max_packet;         /* longest packet accepted (wire bytes); default 4096 */
	uint8_t resume;              /* 1: a reconnect asks for the next sequence not yet received;
	                              * 0: for params.seq again (GLIMPSE: a new snapshot); default 0 */
	uint8_t glimpse; /* 1: recognise End of Snapshot, report it, log out; default 1 */
	uint8_t pad[2];  /* 0 */
	/* Every byte received from the server, as received (the feed's capture records snapshot
	 * sessions with it, feed/capture.h); called on the polling thread. NULL = none. */
	void (*tap)(void *ctx, const uint8_t *p, size_t n);
	void *tap_ctx; /* its first argument */
};

struct uf_soup_client_stats {
	uint64_t connects;            /* TCP connections established */
	uint64_t connect_failures;    /* refused or timed out */
	uint64_t logins;              /* Login Accepted */
	uint64_t rejects;             /* Login Rejected */
	uint64_t disconnects;         /* connections lost after connecting (any reason) */
	uint64_t server_timeouts;     /* of which: the server went silent */
	uint64_t login_timeouts;      /* no login answer in time */
	uint64_t heartbeats_rx;       /* server heartbeats */
	uint64_t heartbeats_tx;       /* client heartbeats */
	uint64_t messages;            /* sequenced messages delivered (End of Snapshot excluded) */
	uint64_t snapshots;           /* End of Snapshot messages seen */
	uint64_t bad_snapshot_end;    /* 'G' messages that did not parse (connection dropped) */
	uint64_t refused;             /* connections dropped by uf_soup_client_refuse (the caller
	                               * did not accept what the server said) */
	int32_t last_err;             /* why the last connection ended, -errno (0: none yet) */
	uint8_t last_refusal;         /* its refused packet: 1 + enum uf_soup_err, 0 none */
	uint8_t last_packet;          /* its packet's type letter, 0 none (see the event) */
	uint8_t pad[2];               /* 0 */
	struct uf_soup_counters soup; /* packets by type, refusals by kind */
};

struct uf_soup_client;

void uf_soup_client_params_default(struct uf_soup_client_params *p);

/* Allocates a client (IDLE). Returns 0, -EINVAL for bad parameters (fields that do not fit,
 * max_packet out of range, backoff_min > backoff_max), -ENOMEM. Cold. */
int uf_soup_client_create(const struct uf_soup_client_params *p, const struct uf_soup_client_cb *cb,
                          struct uf_soup_client **out);

/* Closes the socket and frees. NULL is fine. */
void uf_soup_client_destroy(struct uf_soup_client *c);

/* IDLE -> CONNECTING (the first connect attempt is made by the next poll). now_ns: monotonic. */
void uf_soup_client_start(struct uf_soup_client *c, uint64_t now_ns);

/* Does everything due at now_ns. Returns the state after it. Callbacks run inside. */
enum uf_soup_client_state uf_soup_client_poll(struct uf_soup_client *c, uint64_t now_ns);

/* What to wait for: fills pfd (fd -1 when there is no socket) and returns the milliseconds
 * until the next timer (>= 0; -1 when DONE or IDLE: nothing will happen by itself). */
int uf_soup_client_pollfd(const struct uf_soup_client *c, struct pollfd *pfd, uint64_t now_ns);

/* Sends a Logout Request (best effort) and closes: DONE, with a LOGGED_OUT event. */
void uf_soup_client_logout(struct uf_soup_client *c);

/* The caller refuses what the server said (a Login Accepted for another session, an End of
 * Snapshot the caller cannot confirm): counted in `refused`, the connection is dropped and,
 * like any loss, a DISCONNECTED event with `err` reports it; the client then waits out its
 * back-off (which keeps doubling) before it connects again. May be called from a callback;
 * the rest of that read is discarded. Nothing happens when not connected. */
void uf_soup_client_refuse(struct uf_soup_client *c, int err, uint8_t packet, uint64_t now_ns);

/* Sends an unsequenced data packet. Returns 0, -ENOTCONN when not ACTIVE, -EAGAIN when the
 * socket would block (nothing sent), -EINVAL when too long. */
int uf_soup_client_send_unsequenced(struct uf_soup_client *c, const void *msg, size_t len);

/* Runs poll()+uf_soup_client_poll until DONE or `timeout_ms` passed (or *stop != 0 after a
 * callback, when stop is not NULL). Returns the state. */
enum uf_soup_client_state uf_soup_client_run(struct uf_soup_client *c, int timeout_ms,
                                             const volatile int *stop);

enum uf_soup_client_state uf_soup_client_state(const struct uf_soup_client *c);

/* Next sequence number expected in the current (or last) session. */
uint64_t uf_soup_client_next_seq(const struct uf_soup_client *c);

void uf_soup_client_stats(const struct uf_soup_client *c, struct uf_soup_client_stats *out);

/* "connecting", "active", ... */
const char *uf_soup_client_state_name(enum uf_soup_client_state s);

#endif /* UF_SOUP_CLIENT_H */
