/* SoupBinTCP 3.00 logical packets and the GLIMPSE 5.0 End of Snapshot message: pure codec,
 * zero copy, no sockets.
 *
 * A logical packet is a 2-byte big-endian length (of what follows: type byte + payload), a
 * type byte and the payload. TCP may split or merge packets at any byte, so a receiver feeds
 * its bytes to a struct uf_soup_stream, which hands out whole packets pointing into its own
 * buffer. Every packet is validated before it is handed out: fixed-size types must have their
 * exact length, ASCII numeric fields must be digits right-justified with spaces on the left,
 * alphanumeric fields printable ASCII left-justified with spaces on the right, and a packet
 * longer than the receiver's limit is refused. A violation is counted by kind (enum
 * uf_soup_err, names from uf_soup_err_name) and leaves the stream failed: after a lying length
 * the framing of the rest of the TCP stream is unknowable, so the only recovery is a new
 * connection.
 *
 * Packet types (payload bytes):
 *   both ways       '+' debug (text, any length)
 *   server->client  'A' login accepted (30: session 10 alpha, sequence number 20 numeric)
 *                   'J' login rejected (1: 'A' not authorized, 'S' session not available)
 *                   'S' sequenced data (the message)   'H' server heartbeat (0)
 *                   'Z' end of session (0)
 *   client->server  'L' login request (46: username 6, password 10, requested session 10
 *                       (blank = the current session), requested sequence number 20
 *                       numeric (0 = only new messages))
 *                   'U' unsequenced data (the message)  'R' client heartbeat (0)
 *                   'O' logout request (0)
 *
 * GLIMPSE 5.0 is a SoupBinTCP session whose sequenced data packets carry ITCH 5.0 messages
 * (the state of the day) and end with the End of Snapshot message: type 'G' and a 20-byte
 * ASCII numeric field, the sequence number of the next real-time (MoldUDP64) message. 'G'
 * exists only in GLIMPSE, not in the real-time ITCH feed, so uf_itch_decode() keeps calling
 * it unknown (-ENOMSG); uf_glimpse_end_of_snapshot() below is the one place that decodes it. */
#ifndef UF_SOUP_H
#define UF_SOUP_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#define UF_SOUP_LEN_FIELD              2     /* big-endian length before every packet */
#define UF_SOUP_HDR_LEN                3     /* length field + type byte */
#define UF_SOUP_MAX_PACKET             65537 /* 2 + the largest 16-bit length */
#define UF_SOUP_USERNAME_LEN           6
#define UF_SOUP_PASSWORD_LEN           10
#define UF_SOUP_SESSION_LEN            10
#define UF_SOUP_SEQ_LEN                20 /* ASCII numeric sequence number fields */
#define UF_SOUP_LOGIN_ACCEPTED_PAYLOAD (UF_SOUP_SESSION_LEN + UF_SOUP_SEQ_LEN) /* 30 */
#define UF_SOUP_LOGIN_REQUEST_PAYLOAD                                                              \
	(UF_SOUP_USERNAME_LEN + UF_SOUP_PASSWORD_LEN + UF_SOUP_SESSION_LEN + UF_SOUP_SEQ_LEN)
#define UF_SOUP_REJECT_NOT_AUTHORIZED 'A'
#define UF_SOUP_REJECT_NO_SESSION     'S'

/* The ten packet types, in the order uf_soup_type_index() numbers them. */
#define UF_SOUP_TYPES  "+AJSHZLURO"
#define UF_SOUP_NTYPES 10

/* Who sent the bytes a stream parses: each side accepts only its peer's packet types. */
enum uf_soup_dir {
	UF_SOUP_FROM_SERVER = 0, /* a client parses these: + A J S H Z */
	UF_SOUP_FROM_CLIENT = 1, /* a server parses these: + L U R O */
};

/* Why a packet was refused; the stream is failed after any of these. */
enum uf_soup_err {
	UF_SOUP_ERR_ZERO_LENGTH = 0,  /* length 0: not even a type byte */
	UF_SOUP_ERR_TOO_LONG,         /* length above the receiver's max_packet */
	UF_SOUP_ERR_UNKNOWN_TYPE,     /* not one of the ten types */
	UF_SOUP_ERR_WRONG_DIRECTION,  /* a type only the other side may send */
	UF_SOUP_ERR_BAD_LENGTH,       /* a fixed-size type (A J H Z L R O) of another length */
	UF_SOUP_ERR_BAD_NUMBER,       /* numeric field: not spaces then 1-20 digits, or > 2^64-1 */
	UF_SOUP_ERR_BAD_ALPHA,        /* alpha field: non-printable byte, or text after a space */
	UF_SOUP_ERR_BAD_REJECT_CODE,  /* login rejected with a code other than 'A' / 'S' */
	UF_SOUP_ERR_TRUNCATED,        /* the connection ended inside a packet */
	UF_SOUP_ERR_BAD_SNAPSHOT_END, /* GLIMPSE 'G' message of the wrong length or number */
	UF_SOUP_NERR
};

/* One validated packet. `payload` points into the parsed buffer (zero copy) and stays valid
 * until the next uf_soup_stream_space() call on its stream. */
struct uf_soup_packet {
	uint8_t type;           /* packet type letter */
	uint8_t err;            /* enum uf_soup_err after a refusal */
	uint16_t payload_len;   /* bytes after the type */
	uint32_t wire_len;      /* whole packet: 3 + payload_len */
	const uint8_t *payload; /* the payload in the caller's buffer */
	union {
		struct {
			char session[UF_SOUP_SESSION_LEN]; /* space padded, not terminated */
			uint64_t seq; /* next sequenced message the server will send */
		} accepted;           /* A */
		struct {
			uint8_t reason; /* 'A' not authorized, 'S' session not available */
		} rejected;             /* J */
		struct {
			char username[UF_SOUP_USERNAME_LEN]; /* space padded, not terminated */
			char password[UF_SOUP_PASSWORD_LEN];
			char session[UF_SOUP_SESSION_LEN]; /* all spaces = current session */
			uint64_t seq;                      /* 0 = only new messages */
		} login;                                   /* L */
	} u;
};

/* Counters of one stream (or of everything one side parsed); names: uf_soup_err_name(). */
struct uf_soup_counters {
	uint64_t packets[UF_SOUP_NTYPES]; /* valid packets by type (UF_SOUP_TYPES order) */
	uint64_t bytes;                   /* bytes of valid packets */
	uint64_t errors[UF_SOUP_NERR];    /* refusals by kind */
};

/* Index of `type` in UF_SOUP_TYPES (0..9), -1 for anything else. */
int uf_soup_type_index(uint8_t type);

/* Stable snake_case name of an error kind ("bad_number"), or NULL. */
const char *uf_soup_err_name(unsigned kind);

/* Parses one packet at the start of p[0..avail) as sent by `dir`'s peer, refusing packets
 * longer than max_packet bytes on the wire (at most UF_SOUP_MAX_PACKET; smaller values bound
 * what a hostile peer can make the receiver buffer). Returns the packet's wire length (> 0)
 * with *pk filled, 0 when more bytes are needed (nothing is known to be wrong yet), or
 * -EBADMSG with pk->err set. Reads nothing past avail. */
int uf_soup_parse(const uint8_t *p, size_t avail, enum uf_soup_dir dir, size_t max_packet,
                  struct uf_soup_packet *pk);

/* Parses an ASCII numeric field of `len` bytes: at least one digit, zero-padded or with
 * spaces on either side (right- or left-justified), nothing else. Returns 0 and *out, or
 * -EINVAL. */
int uf_soup_parse_number(const uint8_t *p, size_t len, uint64_t *out);

/* ---- builders: each writes one whole packet and returns its wire length ---- */

/* Header of a packet with `payload_len` bytes of payload that the caller writes (or has
 * written) at out + 3: lets 'S', 'U' and '+' be built around a message in place.
 * Returns 3, or -EINVAL when payload_len + 1 does not fit the 16-bit length. */
int uf_soup_build_header(uint8_t *out, uint8_t type, size_t payload_len);

/* Any packet whose payload is given as bytes (+ S U, and the empty H Z R O with len 0).
 * Returns 3 + len, -ENOSPC when cap is too small, -EINVAL for a length that does not fit. */
int uf_soup_build(uint8_t *out, size_t cap, uint8_t type, const void *payload, size_t len);

/* Login accepted: `session` is NUL-terminated, at most 10 printable characters (padded
 * with spaces). Writes 33 bytes. Returns 33 or -EINVAL. */
int uf_soup_build_login_accepted(uint8_t *out, const char *session, uint64_t seq);

/* Login rejected with `reason` ('A' or 'S'). Writes 4 bytes. Returns 4 or -EINVAL. */
int uf_soup_build_login_rejected(uint8_t *out, uint8_t reason);

/* Login request: NUL-terminated username (<= 6), password (<= 10), session (<= 10, "" = the
 * current session), all printable; seq 0 = only new messages. Writes 49 bytes.
 * Returns 49 or -EINVAL. */
int uf_soup_build_login_request(uint8_t *out, const char *username, const char *password,
                                const char *session, uint64_t seq);

/* Writes `v` right-justified with spaces on the left into a `len`-byte field. Returns 0, or
 * -EINVAL when it has more digits than len. */
int uf_soup_put_number(uint8_t *out, size_t len, uint64_t v);

/* Writes NUL-terminated `s` left-justified, space padded, into a `len`-byte alpha field.
 * Returns 0, or -EINVAL when s is longer than len or holds a non-printable byte. */
int uf_soup_put_alpha(uint8_t *out, size_t len, const char *s);

/* ---- incremental parser over a TCP byte stream ---- */

/* Bytes are read straight into the stream's buffer (space/commit) and packets are handed out
 * pointing into it; only the unfinished tail of a read is ever moved (to the buffer's start,
 * when room runs out). The buffer must hold the largest packet accepted (cap >= max_packet). */
struct uf_soup_stream {
	uint8_t *buf;              /* caller's memory, cap bytes */
	size_t cap;                /* its size */
	size_t head;               /* first byte not yet handed out */
	size_t tail;               /* one past the last byte received */
	size_t max_packet;         /* longest packet accepted, wire bytes */
	uint8_t dir;               /* enum uf_soup_dir of the peer */
	uint8_t failed;            /* 1 after a refusal: nothing more is parsed */
	uint8_t last_err;          /* enum uf_soup_err of that refusal */
	struct uf_soup_counters c; /* what this stream saw */
};

/* Sets up `s` over buf[0..cap). Returns 0, or -EINVAL when cap < max_packet or max_packet is
 * below 3 or above UF_SOUP_MAX_PACKET. */
int uf_soup_stream_init(struct uf_soup_stream *s, uint8_t *buf, size_t cap, enum uf_soup_dir dir,
                        size_t max_packet);

/* Forgets every byte (a new connection); keeps the counters. */
void uf_soup_stream_reset(struct uf_soup_stream *s);

/* Where the next read may write, and how much (*room; never 0 while not failed, since a packet
 * in progress always fits). May move the unfinished tail, which invalidates the payloads of
 * packets handed out before. */
uint8_t *uf_soup_stream_space(struct uf_soup_stream *s, size_t *room);

/* Records that `n` bytes were written at the pointer uf_soup_stream_space() returned. */
void uf_soup_stream_commit(struct uf_soup_stream *s, size_t n);

/* Next whole packet. Returns 1 with *pk filled, 0 when the buffered bytes end inside a packet
 * (read more), -EBADMSG after a refusal (counted; the stream stays failed until reset). */
int uf_soup_stream_next(struct uf_soup_stream *s, struct uf_soup_packet *pk);

/* The peer closed the connection: returns 0 when it closed between packets, -EBADMSG (counted
 * as truncated) when bytes of an unfinished packet were left. */
int uf_soup_stream_end(struct uf_soup_stream *s);

/* ---- GLIMPSE 5.0 ---- */

#define UF_GLIMPSE_END_OF_SNAPSHOT     'G'
#define UF_GLIMPSE_END_OF_SNAPSHOT_LEN 21 /* 'G' + 20-byte ASCII sequence number */

/* Is the sequenced message msg[0..len) the End of Snapshot? Returns 1 with *next_seq (the
 * sequence number of the next real-time message), 0 when it is another message type, -EBADMSG
 * for a 'G' of the wrong length or with a bad number. */
int uf_glimpse_end_of_snapshot(const uint8_t *msg, size_t len, uint64_t *next_seq);

/* Writes the 21-byte End of Snapshot message. Returns 21. */
int uf_glimpse_build_end_of_snapshot(uint8_t *out, uint64_t next_seq);

#endif /* UF_SOUP_H */
