/* uf-bridge: one consumer of a local ring that republishes it on NATS JetStream (records in
 * ring order on uf.RING.seq, each instrument's full book in the key-value bucket
 * UF_RING_books) for remote consumers (libufconsumer's "nats://" attach). The producer never
 * waits for it: when the bridge falls more than a ring behind, it is lapped like any consumer,
 * says so on the stream (a LAP message), re-snapshots from the ring's book image and goes on.
 * Wire contract: ring/nats/uf_nats_wire.h; operations: docs/fanout.md. */
#ifndef UF_BRIDGE_H
#define UF_BRIDGE_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <signal.h>

#define UF_BRIDGE_MAX_URLS 16

struct uf_bridge_config {
	char ring[32];              /* local ring name */
	char dir[128];              /* shm directory, "" = default */
	char urls[1024];            /* comma-separated nats://host:port */
	int replicas;               /* stream and bucket replicas (1 or 3 in a cluster) */
	int memory;                 /* 1 = memory storage, 0 = file */
	int64_t max_age_s;          /* stream retention, seconds (0 = unlimited) */
	int64_t max_bytes;          /* stream retention, bytes (-1 = unlimited) */
	uint32_t batch;             /* most records per message (<= UF_NATS_MAX_RECORDS) */
	uint32_t window;            /* stream messages in flight (sent, not yet acknowledged):
	                             * 1 waits for each acknowledgement (one round trip per
	                             * message); more keeps the link busy (tools/uf-bridge/
	                             * bridge_pipe.h). --per-symbol forces 1 */
	uint32_t eager;             /* a bridge that has caught up with the ring sends the records
	                             * it holds (a partial message) only while fewer than this
	                             * many messages are in flight; from there on it keeps
	                             * reading until the message is full or an acknowledgement
	                             * comes: fewer, fuller messages under load, where JetStream
	                             * costs CPU per message. 0 = always (one record per message
	                             * when the ring is quiet, the latency the default keeps) */
	uint32_t kv_interval_ms;    /* book entries are written at most this often */
	uint32_t stats_interval_ms; /* status line period on stderr, 0 = only at exit */
	uint32_t ack_wait_ms;       /* publish acknowledgement timeout before a retry; also the
	                             * PING period (a server silent for 2 PINGs is dropped) */
	uint32_t ack_timeouts;      /* acknowledgement timeouts in a row after which the bridge
	                             * leaves the server for the next of its list: a hung node
	                             * keeps its TCP connection open and would hold it forever */
	int exit_on_close;          /* exit 0 once the producer closed the ring */
	int per_symbol;             /* also store uf.RING.rec.SYMBOL messages (per instrument) */
	int compact;                /* DATA records in the compact form (ring/nats/nats_codec.h,
	                             * wire version 2): about a third of the bytes; consumers
	                             * built before it refuse such messages */
	char status_file[256];      /* JSON status written here (atomically), "" = none */
	char creds[256];            /* NATS user credentials file, "" = none */
	char tls_ca[256];           /* CA file: TLS on, server verified, "" = plain */
	char tls_cert[256];         /* client certificate (mutual TLS), "" = none */
	char tls_key[256];          /* its key */
	char key_file[256];         /* shared key that signs every message (ring/nats/nats_auth.h);
	                             * "" = $UF_NATS_KEY_FILE, else $UF_NATS_KEY, else none */
};

/* What the bridge reports (a snapshot of its counters). */
struct uf_bridge_status {
	char ring[32];           /* local ring */
	uint64_t generation;     /* its generation */
	uint64_t position;       /* next ring sequence not yet acknowledged by JetStream: the
	                          * stream holds everything before it, so lag = ring_tail - this
	                          * grows while a server hangs */
	uint64_t read;           /* next ring sequence the bridge reads (>= position) */
	uint64_t ring_tail;      /* the ring's tail when sampled */
	uint64_t published;      /* records acknowledged by JetStream */
	uint64_t messages;       /* stream messages acknowledged */
	uint64_t bytes;          /* payload bytes acknowledged */
	uint64_t js_last;        /* stream sequence of the last acknowledged message */
	uint64_t retries;        /* publishes repeated after an error or timeout */
	uint64_t duplicates;     /* repeats JetStream reported as already stored */
	uint64_t laps;           /* times the ring lapped the bridge */
	uint64_t lost;           /* records lost to those laps */
	uint64_t kv_puts;        /* book entries written */
	uint64_t reconnects;     /* NATS reconnections done by the client library */
	uint64_t ack_timeouts;   /* publishes (stream or bucket) not acknowledged within
	                          * ack_wait_ms */
	uint64_t failovers;      /* servers left after ack_timeouts timeouts in a row */
	uint64_t ack_ns_max;     /* slowest acknowledgement */
	uint64_t ack_ns_sum;     /* sum of acknowledgement times (mean = sum / messages) */
	uint64_t pub_lag_ns_max; /* worst producer-publish to JetStream-ack delay of a record */
	uint64_t sym_msgs;       /* per-symbol messages published (--per-symbol) */
	uint64_t sym_failed;     /* per-symbol messages JetStream refused or never acknowledged */
	uint64_t in_flight;      /* stream messages sent and not yet acknowledged (sampled) */
	uint64_t window_full;    /* messages that waited for room in the window: the link, not
	                          * the ring, was the limit */
	uint64_t held;           /* times a caught-up bridge kept reading instead of sending a
	                          * partial message (--eager: enough messages in flight) */
	uint64_t resends;        /* times the window was sent again from its first
	                          * unacknowledged message (a timeout, a refusal, a failover) */
	uint64_t order_errors;   /* acknowledgements whose stream sequence did not follow the
	                          * previous one's: 0 (the expected-last-id header prevents it) */
	char server[128];        /* URL of the server the bridge is connected to, "" if none */
	int connected;           /* 1 while connected to a server that acknowledges: 0 from
	                          * the first acknowledgement timeout until one comes again */
	int closed;              /* 1 once the producer closed the ring */
};

/* Defaults: 1 replica, file storage, 1 day, 256 records a message, 32 messages in flight,
 * books every 100 ms. */
void uf_bridge_config_init(struct uf_bridge_config *cfg);

/* Reads a JSON config file (keys as the long options: "ring", "nats", "replicas", ...).
 * Returns 0 or -1 with a reason in err. */
int uf_bridge_config_load(struct uf_bridge_config *cfg, const char *path, char *err, size_t errlen);

/* Runs until *stop, or the ring closed with exit_on_close. Returns 0 or -1 (reason printed). */
int uf_bridge_run(const struct uf_bridge_config *cfg, volatile sig_atomic_t *stop);

/* Renders `st` as one JSON object line (NUL-terminated) into buf. Pure. Returns the length
 * or -1 when it does not fit. */
int uf_bridge_status_json(const struct uf_bridge_status *st, char *buf, size_t len);

/* One line on stderr, prefixed "uf-bridge: " (cold paths only). */
static inline void uf_bridge_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline void uf_bridge_log(const char *fmt, ...)
{
	va_list ap;

	fputs("uf-bridge: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

#endif /* UF_BRIDGE_H */
