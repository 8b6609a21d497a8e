/* uf-bridge's window of stream messages in flight (docs/fanout.md, "uf-bridge").
 *
 * Waiting for each JetStream acknowledgement before the next message costs one round trip
 * per message; the window sends up to `window` messages before the first is acknowledged.
 * What must not change is the stream: every message once, in ring order, across the loss of
 * a node. So:
 *   - messages are published on the core connection with a reply subject of our own
 *     (<inbox>.<token>, one token per send) and the usual Nats-Msg-Id; answers are matched by
 *     token, answers to an earlier send of a message are ignored;
 *   - they are retired strictly in order: the oldest (the head) first, whatever order the
 *     answers come in;
 *   - a message sent while its predecessor is unacknowledged carries
 *     Nats-Expected-Last-Msg-Id = the predecessor's id: JetStream stores it only right after
 *     that one, so a message cannot overtake one lost on the way (a node killed, a leader
 *     change). The head is always sent without it (its predecessor is stored), so another
 *     publisher on the subject cannot block the bridge;
 *   - the head not acknowledged within ack_wait_ms, refused, or its send failed: every
 *     message not yet acknowledged is sent again from the head, in order, under the same ids
 *     (JetStream de-duplicates what it already stored). The failover rule (bridge_conn.h) is
 *     told each outcome as before.
 * One thread (the bridge's); the client library only queues the answers. */
#ifndef UF_BRIDGE_PIPE_H
#define UF_BRIDGE_PIPE_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include <nats/nats.h>

#include "ring/nats/uf_nats_wire.h"
#include "tools/uf-bridge/bridge_conn.h"

enum uf_bridge_slot_state {
	UF_BRIDGE_SLOT_SENT = 1,   /* sent, no answer to the latest send yet */
	UF_BRIDGE_SLOT_ACKED = 2,  /* JetStream stored it (js_seq, duplicate) */
	UF_BRIDGE_SLOT_FAILED = 3, /* refused, no responders, or the send itself failed */
};

/* One message in flight: kept until it is acknowledged, since it may have to be sent again. */
struct uf_bridge_slot {
	char *buf;                   /* the message as sent: header, records, MAC */
	size_t len;                  /* its length */
	char id[UF_NATS_MSG_ID_MAX]; /* its Nats-Msg-Id (the stored() callback may change it) */
	uint8_t kind;                /* enum uf_nats_kind: the bridge's position after it */
	uint32_t n;                  /* records in it */
	uint64_t first, aux;         /* header first_seq and aux */
	uint64_t oldest_pub_ns;      /* earliest producer publish time of its records (0: none),
	                              * taken when it is built: the status's worst publish-to-
	                              * acknowledgement lag then needs no decode of a compact
	                              * message when it is stored */
	uint64_t token;              /* reply token of the latest send: older answers ignored */
	uint64_t sent_ns;            /* latest send (monotonic): the acknowledgement deadline */
	uint64_t first_ns;           /* first send (monotonic): the reported ack time */
	uint32_t attempts;           /* sends so far */
	int state;                   /* enum uf_bridge_slot_state */
	natsStatus err;              /* FAILED: why (NATS_ERR for a JetStream error answer) */
	int err_code;                /* FAILED: JetStream err_code, 503 no responders, or 0 */
	uint64_t js_seq;             /* ACKED: stream sequence */
	int duplicate;               /* ACKED: JetStream already had a message with this id */
};

/* What the window asks of the bridge. */
struct uf_bridge_pipe_ops {
	/* The head was acknowledged: 0 retires it; 1 means it must be sent again under s->id,
	 * which the callback changed (the id was taken by another publisher). */
	int (*stored)(void *arg, struct uf_bridge_slot *s);
	/* The outcome of a wait for the head, for the failover rule: 0, 1 after a failover,
	 * -1 when no connection could be set up again. */
	int (*outcome)(void *arg, natsStatus s);
	/* Called while the window waits (the status tells the lag meanwhile). */
	void (*tick)(void *arg);
	void *arg; /* passed to each */
};

struct uf_bridge_pipe {
	struct uf_bridge_slot *slots;  /* window of them, used as a ring */
	uint32_t window;               /* most messages in flight */
	size_t msg_max;                /* size of each slot's buffer */
	uint64_t head, tail;           /* slots[head % window] is the oldest; tail is next */
	struct uf_bridge_conn *cn;     /* the connection (its nc may change on failover) */
	const char *stream;            /* the stream: acknowledgements must name it */
	const char *subject;           /* the record subject */
	uint32_t ack_wait_ms;          /* acknowledgement deadline of the head */
	struct uf_bridge_pipe_ops ops; /* the bridge */
	natsSubscription *sub;         /* answers: <prefix>* */
	natsConnection *sub_nc;        /* the connection sub belongs to */
	char prefix[80];               /* reply subject prefix "<inbox>." */
	uint64_t token;                /* last reply token used */
	uint64_t *retries;             /* the bridge's counter: +1 per message sent again */
	uint64_t resends;              /* times the window was sent again from the head */
	uint64_t order_errors;         /* acknowledged stream sequences not increasing (none
	                                * expected: the expectation header prevents them) */
	uint64_t last_js_seq;          /* stream sequence of the last retired message */
	uint64_t full_waits;           /* uf_bridge_pipe_room calls that found no room */
};

/* Allocates `window` slots of msg_max bytes. Returns 0 or -ENOMEM. */
int uf_bridge_pipe_init(struct uf_bridge_pipe *p, struct uf_bridge_conn *cn, const char *stream,
                        const char *subject, uint32_t window, size_t msg_max, uint32_t ack_wait_ms,
                        const struct uf_bridge_pipe_ops *ops, uint64_t *retries);

/* Drops the subscription and frees the slots (messages still in flight are forgotten). */
void uf_bridge_pipe_free(struct uf_bridge_pipe *p);

/* Messages sent and not yet retired. */
static inline uint32_t uf_bridge_pipe_inflight(const struct uf_bridge_pipe *p)
{
	return (uint32_t)(p->tail - p->head);
}

/* Waits until a slot is free; returns it (the caller fills buf, len, id, kind, n, first,
 * aux, then calls uf_bridge_pipe_submit), or NULL when stopped (*err -EINTR) or when no
 * connection could be set up (*err -EIO). */
struct uf_bridge_slot *uf_bridge_pipe_room(struct uf_bridge_pipe *p, volatile sig_atomic_t *stop,
                                           int *err);

/* Sends the slot returned by uf_bridge_pipe_room (never blocks). */
void uf_bridge_pipe_submit(struct uf_bridge_pipe *p);

/* Handles the answers that arrived (waiting up to wait_ms for one when > 0), retires the
 * acknowledged head messages in order and sends the window again when the head failed or
 * timed out. Returns 0 or -EIO (no connection could be set up). */
int uf_bridge_pipe_poll(struct uf_bridge_pipe *p, int wait_ms);

/* Waits until every message sent is acknowledged. 0, -EINTR when stopped, -EIO. */
int uf_bridge_pipe_drain(struct uf_bridge_pipe *p, volatile sig_atomic_t *stop);

/* Parses a JetStream publish acknowledgement (JSON, `len` bytes) for stream `stream`:
 * 0 and *seq, *duplicate when stored; -1 and *err_code (0 if none given) when it is an
 * error or not an acknowledgement of that stream. Pure. */
int uf_bridge_ack_parse(const char *data, int len, const char *stream, uint64_t *seq,
                        int *duplicate, int *err_code);

#endif /* UF_BRIDGE_PIPE_H */
