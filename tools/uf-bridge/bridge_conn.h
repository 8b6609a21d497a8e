/* uf-bridge's NATS connection: the server list, the JetStream contexts, and the rule that
 * leaves a server which stops answering (docs/fanout.md, "leaves a hung node"). A hung node
 * keeps its TCP connection open, so the client library alone would hold on to it for
 * minutes; every request the bridge waits for reports its outcome here instead. */
#ifndef UF_BRIDGE_CONN_H
#define UF_BRIDGE_CONN_H

#include <stdint.h>

#include <nats/nats.h>

#include "tools/uf-bridge/bridge.h"

struct uf_bridge_conn {
	const struct uf_bridge_config *cfg;   /* ack_wait_ms, ack_timeouts, urls, security */
	natsOptions *opts;                    /* options shared by every connection */
	natsConnection *nc;                   /* the current connection (NULL if none) */
	jsCtx *js;                            /* its JetStream context */
	jsCtx *js_sym;                        /* per-symbol asynchronous publishes (or NULL) */
	int js_async, js_sym_async;           /* 1 once the context published asynchronously:
	                                       * libnats 3.4 crashes on the pending list of one
	                                       * that never did */
	char urlbuf[1024];                    /* cfg->urls, cut at the commas */
	const char *urls[UF_BRIDGE_MAX_URLS]; /* the servers, in the order given */
	int nurls;                            /* how many */
	int first_url;                        /* index the current list starts at */
	uint32_t timeouts_in_row;             /* timeouts since the last answer */
	uint64_t ack_timeouts;                /* requests not answered within ack_wait_ms */
	uint64_t failovers;                   /* servers left for not answering */
	uint64_t reconnects;                  /* reconnections made by the library (its thread) */
	uint64_t sym_failed;                  /* per-symbol messages refused or never
	                                       * acknowledged (library thread and ours) */
};

/* Sets the options up and connects to the list in the order given (a list nobody answers yet
 * is not an error: the library keeps trying). Returns 0 or -1 (reason logged). */
int uf_bridge_conn_open(struct uf_bridge_conn *cn, const struct uf_bridge_config *cfg);

/* Drops the connection, its contexts and the options. Per-symbol messages in flight are
 * counted in sym_failed; book entries in flight are dropped (their caller re-sends them). */
void uf_bridge_conn_close(struct uf_bridge_conn *cn);

/* Reports the outcome of a request that waited for an answer (a publish acknowledgement, a
 * stream or bucket call); any answer, even an error, shows the server alive. From the
 * cfg->ack_timeouts-th timeout in a row on, the server is PINGed (bound: ack_wait_ms): no
 * PONG, it is hung and left for the next server of the list (it goes last); a PONG, the
 * cluster is electing a stream leader (seconds) and the server is kept, up to
 * 4 x ack_timeouts in a row (a node cut off from its cluster answers PINGs and
 * acknowledges nothing). `lag` is only logged. Returns 0, 1 after a failover (the contexts
 * changed), or -1 when no new connection could be set up. */
int uf_bridge_conn_outcome(struct uf_bridge_conn *cn, natsStatus s, uint64_t lag);

/* The URL of the current server without user information, or "" while there is none. */
void uf_bridge_conn_url(const struct uf_bridge_conn *cn, char *out, size_t len);

/* 1 when connected to a server that answers: 0 from the first timeout until an answer. */
int uf_bridge_conn_answering(const struct uf_bridge_conn *cn);

#endif /* UF_BRIDGE_CONN_H */
