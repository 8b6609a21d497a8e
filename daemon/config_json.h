/* Typed JSON accessors for the configuration loader that report every error by key path.
 *
 * A walk keeps the path of the object it is in ("feeds[0].lines[1]"); each accessor reads one
 * member, checks its type and range, and on failure records ONE line in the caller's buffer,
 * "FILE: feeds[0].lines[1].port: 70000 is out of range (1..65535)", and returns -EINVAL.
 * Only the first error is kept (later calls still return -EINVAL without overwriting it).
 * Absent optional members take the given default. Keys starting with "_comment" are
 * accepted everywhere and ignored (JSON has no comments). Cold code: allocation is fine. */
#ifndef UF_CONFIG_JSON_H
#define UF_CONFIG_JSON_H

#include <jansson.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>

/* Walk state: where we are in the document and the first error seen. */
struct uf_cj {
	const char *file; /* file name for messages ("<string>" for in-memory JSON) */
	char dir[256];    /* folder of the file, for relative symbols_file paths */
	char path[192];   /* key path of the object being walked, "" at the root */
	char *err;        /* caller's buffer */
	size_t errlen;    /* its size */
	int failed;       /* set by the first error; later errors are not recorded */
	unsigned flags;   /* UF_CFG_* of daemon/uf_config.h */
};

/* What an address must be. */
enum uf_cj_addr {
	UF_CJ_MULTICAST, /* 224.0.0.0/4, not the 224.0.0.0/24 control block */
	UF_CJ_LOCAL,     /* an interface address (or 0.0.0.0): not multicast or broadcast */
	UF_CJ_UNICAST,   /* a host to send to: not multicast, broadcast or 0.0.0.0 */
};

/* Records the first error as "FILE: PATH.key: message" (key may be NULL: the path itself).
 * Always returns -EINVAL. */
int uf_cj_fail(struct uf_cj *c, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Descends into member `key` or element `[idx]`; returns the old path length for
 * uf_cj_pop(). */
size_t uf_cj_push_key(struct uf_cj *c, const char *key);
size_t uf_cj_push_idx(struct uf_cj *c, size_t idx);
void uf_cj_pop(struct uf_cj *c, size_t n);

/* Compact JSON text of a value, cut at 60 characters, for messages. */
const char *uf_cj_show(const json_t *v, char *buf, size_t len);
/* "an integer", "a string", ... */
const char *uf_cj_type(const json_t *v);
int uf_cj_is_comment(const char *k);
int uf_cj_is_pow2(uint64_t v);

/* Refuses any member of `obj` not in the NULL-terminated `known` list (comments aside),
 * listing the known keys in the message. */
int uf_cj_check_keys(struct uf_cj *c, json_t *obj, const char *const *known);

/* Integer member in [min, max] (a real number such as 1e3 or 1.0 is refused); absent: def. */
int uf_cj_int(struct uf_cj *c, json_t *obj, const char *key, int64_t min, int64_t max, int64_t def,
              int64_t *out);
int uf_cj_u32(struct uf_cj *c, json_t *obj, const char *key, int64_t min, int64_t max, int64_t def,
              uint32_t *out);

/* String member of 1..len-1 bytes, no NUL; absent: def (NULL def = required). */
int uf_cj_str(struct uf_cj *c, json_t *obj, const char *key, const char *def, char *out,
              size_t len);

/* true/false member; absent: def. */
int uf_cj_bool(struct uf_cj *c, json_t *obj, const char *key, int def, int *out);

/* Object member: *out NULL when absent, an error when present but not an object. */
int uf_cj_obj(struct uf_cj *c, json_t *obj, const char *key, json_t **out);

/* Checks a name that becomes a shm name or metric label: [A-Za-z0-9_.-], not starting with
 * '.' or '-'. */
int uf_cj_name(struct uf_cj *c, const char *key, const char *s);

/* Dotted IPv4 member of the given kind; absent: def (NULL = required). */
int uf_cj_ipv4(struct uf_cj *c, json_t *obj, const char *key, const char *def, enum uf_cj_addr kind,
               struct in_addr *out);

/* "a.b.c.d:port" member; port in [port_min, 65535] (0 allows an ephemeral port). */
int uf_cj_hostport(struct uf_cj *c, json_t *obj, const char *key, const char *def,
                   enum uf_cj_addr kind, int port_min, struct sockaddr_in *out);

#endif /* UF_CONFIG_JSON_H */
