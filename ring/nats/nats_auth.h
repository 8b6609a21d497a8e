/* The optional shared key of a NATS fan-out (docs/fanout.md, "Shared key"): uf-bridge and
 * every remote consumer hold the same secret; the bridge appends an HMAC-SHA256 of each
 * message it stores (stream messages and bucket entries) and a consumer with the key set
 * drops, and counts, whatever does not carry a valid one. NATS permissions say who may
 * publish; the key says who wrote what a consumer believes, even when a publisher slips
 * through. Internal to ring/ and tools/uf-bridge (cold-ish: once per message). */
#ifndef UF_NATS_AUTH_H
#define UF_NATS_AUTH_H

#include <stddef.h>
#include <stdint.h>

#define UF_NATS_MAC_LEN 32  /* HMAC-SHA256 trailer appended to every authenticated payload */
#define UF_NATS_KEY_MIN 16  /* a shorter key is refused: it would be guessable */
#define UF_NATS_KEY_MAX 256 /* longer keys are refused (HMAC would hash them anyway) */

struct uf_nats_key {
	unsigned char k[UF_NATS_KEY_MAX]; /* the secret */
	size_t len;                       /* 0 = no key: messages are neither signed nor checked */
};

/* Loads the key from `file` (its bytes, one trailing newline dropped) when not NULL/"", else
 * from $UF_NATS_KEY_FILE, else from $UF_NATS_KEY (the secret itself); none of them: len 0.
 * Returns 0, or -errno with a reason in err (unreadable, shorter than UF_NATS_KEY_MIN or
 * longer than UF_NATS_KEY_MAX). */
int uf_nats_key_load(struct uf_nats_key *key, const char *file, char *err, size_t errlen);

/* HMAC-SHA256 under `key` of `domain` (what the payload is: "seq", "sym", "kv:<key>"; a
 * valid payload of one kind is no valid payload of another) then `data`. Returns 0 or
 * -EIO (libcrypto failed). */
int uf_nats_mac(const struct uf_nats_key *key, const char *domain, const void *data, size_t len,
                unsigned char out[UF_NATS_MAC_LEN]);

/* Checks the trailer of `data` (`len` bytes, the last UF_NATS_MAC_LEN the MAC). Returns the
 * payload length (len - UF_NATS_MAC_LEN), or -EBADMSG when too short or not valid. With no
 * key: returns len unchanged. Constant time in the MAC comparison. */
long uf_nats_mac_check(const struct uf_nats_key *key, const char *domain, const void *data,
                       size_t len);

#endif /* UF_NATS_AUTH_H */
