/* Typed JSON accessors that report errors by key path: see config_json.h. */
#include "daemon/config_json.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Records the first error as "FILE: PATH: message". Always returns -EINVAL. */
int uf_cj_fail(struct uf_cj *c, const char *key, const char *fmt, ...)
{
	char msg[384];
	va_list ap;

	if (c->failed)
		return -EINVAL;
	c->failed = 1;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (!c->err || !c->errlen)
		return -EINVAL;
	if (key && *key)
		snprintf(c->err, c->errlen, "%s: %s%s%s: %s", c->file, c->path, *c->path ? "." : "",
		         key, msg);
	else if (*c->path)
		snprintf(c->err, c->errlen, "%s: %s: %s", c->file, c->path, msg);
	else
		snprintf(c->err, c->errlen, "%s: %s", c->file, msg);
	return -EINVAL;
}

/* Descends into `key` (object member) or `[idx]` (array element); returns the old length
 * of the path for uf_cj_pop(). */
size_t uf_cj_push_key(struct uf_cj *c, const char *key)
{
	size_t n = strlen(c->path);
	snprintf(c->path + n, sizeof(c->path) - n, "%s%s", n ? "." : "", key);
	return n;
}

size_t uf_cj_push_idx(struct uf_cj *c, size_t idx)
{
	size_t n = strlen(c->path);
	snprintf(c->path + n, sizeof(c->path) - n, "[%zu]", idx);
	return n;
}

void uf_cj_pop(struct uf_cj *c, size_t n)
{
	c->path[n] = '\0';
}

/* Short text of a JSON value for messages: compact JSON, cut at 60 characters. */
const char *uf_cj_show(const json_t *v, char *buf, size_t len)
{
	char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);

	if (!s) {
		snprintf(buf, len, "?");
		return buf;
	}
	if (strlen(s) > 60)
		snprintf(buf, len, "%.57s...", s);
	else
		snprintf(buf, len, "%s", s);
	free(s);
	return buf;
}

const char *uf_cj_type(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		return "an object";
	case JSON_ARRAY:
		return "an array";
	case JSON_STRING:
		return "a string";
	case JSON_INTEGER:
		return "an integer";
	case JSON_REAL:
		return "a real number";
	case JSON_TRUE:
	case JSON_FALSE:
		return "a boolean";
	case JSON_NULL:
		return "JSON"; /* "got JSON null": the value names itself */
	}
	return "?";
}

int uf_cj_is_comment(const char *k)
{
	return strncmp(k, "_comment", 8) == 0;
}

/* Refuses any member of `obj` not in the NULL-terminated `known` list (comments aside). */
int uf_cj_check_keys(struct uf_cj *c, json_t *obj, const char *const *known)
{
	const char *k;
	json_t *v;

	json_object_foreach(obj, k, v)
	{
		int ok = uf_cj_is_comment(k);
		for (size_t i = 0; !ok && known[i]; i++)
			ok = strcmp(k, known[i]) == 0;
		if (!ok) {
			char list[256];
			size_t off = 0;
			for (size_t i = 0; known[i] && off < sizeof(list); i++)
				off += (size_t)snprintf(list + off, sizeof(list) - off, "%s%s",
				                        i ? ", " : "", known[i]);
			return uf_cj_fail(c, k, "unknown key (known keys here: %s)", list);
		}
	}
	return 0;
}

/* Integer member in [min, max]; absent: *out = def. */
int uf_cj_int(struct uf_cj *c, json_t *obj, const char *key, int64_t min, int64_t max, int64_t def,
              int64_t *out)
{
	json_t *v = json_object_get(obj, key);
	char b[80];

	if (!v) {
		*out = def;
		return 0;
	}
	if (!json_is_integer(v))
		return uf_cj_fail(c, key, "expected an integer, got %s %s", uf_cj_type(v),
		                  uf_cj_show(v, b, sizeof(b)));
	*out = json_integer_value(v);
	if (*out < min || *out > max)
		return uf_cj_fail(c, key, "%" PRId64 " is out of range (%" PRId64 "..%" PRId64 ")",
		                  *out, min, max);
	return 0;
}

int uf_cj_u32(struct uf_cj *c, json_t *obj, const char *key, int64_t min, int64_t max, int64_t def,
              uint32_t *out)
{
	int64_t v;
	int r = uf_cj_int(c, obj, key, min, max, def, &v);
	*out = (uint32_t)v;
	return r;
}

int uf_cj_is_pow2(uint64_t v)
{
	return v && (v & (v - 1)) == 0;
}

/* String member; absent: copies `def` (NULL def = required). Length 1..len-1. */
int uf_cj_str(struct uf_cj *c, json_t *obj, const char *key, const char *def, char *out, size_t len)
{
	json_t *v = json_object_get(obj, key);
	char b[80];

	if (!v) {
		if (!def)
			return uf_cj_fail(c, key, "missing required key");
		snprintf(out, len, "%s", def);
		return 0;
	}
	if (!json_is_string(v))
		return uf_cj_fail(c, key, "expected a string, got %s %s", uf_cj_type(v),
		                  uf_cj_show(v, b, sizeof(b)));
	if (json_string_length(v) == 0)
		return uf_cj_fail(c, key, "must not be empty");
	if (json_string_length(v) >= len)
		return uf_cj_fail(c, key, "%s is too long (at most %zu characters)",
		                  uf_cj_show(v, b, sizeof(b)), len - 1);
	if (strlen(json_string_value(v)) != json_string_length(v))
		return uf_cj_fail(c, key, "contains a NUL character");
	memcpy(out, json_string_value(v), json_string_length(v) + 1);
	return 0;
}

int uf_cj_bool(struct uf_cj *c, json_t *obj, const char *key, int def, int *out)
{
	json_t *v = json_object_get(obj, key);
	char b[80];

	if (!v) {
		*out = def;
		return 0;
	}
	if (!json_is_boolean(v))
		return uf_cj_fail(c, key, "expected true or false, got %s %s", uf_cj_type(v),
		                  uf_cj_show(v, b, sizeof(b)));
	*out = json_is_true(v);
	return 0;
}

/* Object member (NULL when absent; error when present but not an object). */
int uf_cj_obj(struct uf_cj *c, json_t *obj, const char *key, json_t **out)
{
	json_t *v = json_object_get(obj, key);
	char b[80];

	*out = NULL;
	if (!v)
		return 0;
	if (!json_is_object(v))
		return uf_cj_fail(c, key, "expected an object, got %s %s", uf_cj_type(v),
		                  uf_cj_show(v, b, sizeof(b)));
	*out = v;
	return 0;
}

/* Names that become shared memory names and metric labels: [A-Za-z0-9_.-], not starting
 * with '.' or '-'. */
int uf_cj_name(struct uf_cj *c, const char *key, const char *s)
{
	if (s[0] == '.' || s[0] == '-')
		return uf_cj_fail(c, key, "\"%s\" must start with a letter, digit or '_'", s);
	for (const char *p = s; *p; p++)
		if (!isalnum((unsigned char)*p) && *p != '_' && *p != '.' && *p != '-')
			return uf_cj_fail(c, key,
			                  "\"%s\" may only hold letters, digits, '_', '.', '-'", s);
	return 0;
}

/* Dotted IPv4 string member; absent: `def` (NULL = required). */
int uf_cj_ipv4(struct uf_cj *c, json_t *obj, const char *key, const char *def, enum uf_cj_addr kind,
               struct in_addr *out)
{
	char s[64];
	int r = uf_cj_str(c, obj, key, def, s, sizeof(s));

	if (r)
		return r;
	if (inet_pton(AF_INET, s, out) != 1)
		return uf_cj_fail(c, key,
		                  "\"%s\" is not an IPv4 address (dotted quad, e.g. 239.1.1.1)", s);
	uint32_t h = ntohl(out->s_addr);
	switch (kind) {
	case UF_CJ_MULTICAST:
		if (!IN_MULTICAST(h))
			return uf_cj_fail(c, key, "\"%s\" is not a multicast group (224.0.0.0/4)",
			                  s);
		if ((h & 0xffffff00u) == 0xe0000000u)
			return uf_cj_fail(c, key,
			                  "\"%s\" is in 224.0.0.0/24 (link-local control, not for "
			                  "data)",
			                  s);
		break;
	case UF_CJ_LOCAL:
		if (IN_MULTICAST(h) || h == INADDR_BROADCAST)
			return uf_cj_fail(c, key, "\"%s\" is not a local interface address", s);
		break;
	case UF_CJ_UNICAST:
		if (IN_MULTICAST(h) || h == INADDR_BROADCAST || h == INADDR_ANY)
			return uf_cj_fail(c, key, "\"%s\" is not a unicast address", s);
		break;
	}
	return 0;
}

/* "a.b.c.d:port" string member. `port_min` 0 allows an ephemeral port. */
int uf_cj_hostport(struct uf_cj *c, json_t *obj, const char *key, const char *def,
                   enum uf_cj_addr kind, int port_min, struct sockaddr_in *out)
{
	char s[64], host[64];
	char *colon, *end;
	long port;
	int r = uf_cj_str(c, obj, key, def, s, sizeof(s));

	if (r)
		return r;
	colon = strrchr(s, ':');
	if (!colon || colon == s || colon[1] == '\0')
		return uf_cj_fail(c, key, "\"%s\" is not ADDRESS:PORT (e.g. 127.0.0.1:8080)", s);
	snprintf(host, sizeof(host), "%.*s", (int)(colon - s), s);
	errno = 0;
	port = strtol(colon + 1, &end, 10);
	if (*end || errno || !isdigit((unsigned char)colon[1]))
		return uf_cj_fail(c, key, "\"%s\": port \"%s\" is not a number", s, colon + 1);
	if (port < port_min || port > 65535)
		return uf_cj_fail(c, key, "\"%s\": port %ld is out of range (%d..65535)", s, port,
		                  port_min);
	memset(out, 0, sizeof(*out));
	out->sin_family = AF_INET;
	out->sin_port = htons((uint16_t)port);
	if (inet_pton(AF_INET, host, &out->sin_addr) != 1)
		return uf_cj_fail(c, key, "\"%s\": \"%s\" is not an IPv4 address", s, host);
	uint32_t h = ntohl(out->sin_addr.s_addr);
	if (kind == UF_CJ_UNICAST && (IN_MULTICAST(h) || h == INADDR_BROADCAST || h == INADDR_ANY))
		return uf_cj_fail(c, key, "\"%s\": \"%s\" is not a unicast address", s, host);
	if (kind == UF_CJ_LOCAL && (IN_MULTICAST(h) || h == INADDR_BROADCAST))
		return uf_cj_fail(c, key, "\"%s\": \"%s\" is not a local address", s, host);
	return 0;
}
