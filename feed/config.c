/* Configuration loader: JSON (jansson) -> struct uf_config, with every error naming where.
 *
 * Two passes over one parsed document: the syntax pass is jansson's (file:line:column), the
 * semantic pass walks the document against the schema below, building a key path
 * ("feeds[0].lines[1].port") as it descends so that each complaint says exactly which key,
 * which value, and what was expected. The first error stops the load: an operator fixes one
 * thing at a time, and the message stays one line.
 *
 * Keys whose name starts with "_comment" are accepted anywhere and ignored: JSON has no
 * comments, and this is how the files in configs/ explain themselves. */
#include "feed/uf_config.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "feed/log.h"
#include "feed/placement.h"

/* Defaults, in one place (documented in uf_config.h and configs/README.md). */
#define DEF_STATUS_LISTEN "127.0.0.1:8080"
#define DEF_PROTOCOL "itch50-moldudp64"
#define DEF_SQPOLL_IDLE_MS 1000
#define DEF_RECOVERY_MAX_COUNT 1000
#define DEF_RECOVERY_TIMEOUT_MS 50
#define DEF_RECOVERY_RETRIES 5
#define DEF_RECOVERY_WAIT_MS 2
#define DEF_RECOVERY_WAIT_PACKETS 64
#define DEF_RECOVERY_QUEUE_PACKETS 65536
#define DEF_RECOVERY_MAX_RPS 1000
#define DEF_RING_CAPACITY 1048576
#define DEF_RING_MODE 0600
#define DEF_BOOK_DEPTH 10
#define DEF_BOOK_MAX_ORDERS 4000000
#define DEF_BOOK_MAX_INSTRUMENTS 16384
#define DEF_BUFFERS_COUNT 4096
#define DEF_BUFFERS_SIZE 2048

/* Walk state: where we are in the document and the first error seen. */
struct ctx {
	const char *file;  /* file name for messages ("<string>" for in-memory JSON) */
	char dir[256];     /* folder of the file, for relative symbols_file paths */
	char path[192];    /* key path of the object being walked, "" at the root */
	char *err;         /* caller's buffer */
	size_t errlen;     /* its size */
	int failed;        /* set by the first error; later errors are not recorded */
	unsigned flags;    /* UF_CFG_* */
};

/* Records the first error as "FILE: PATH: message". Always returns -EINVAL. */
__attribute__((format(printf, 3, 4))) static int fail(struct ctx *c, const char *key,
						       const char *fmt, ...)
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
 * of the path for path_pop(). */
static size_t path_push_key(struct ctx *c, const char *key)
{
	size_t n = strlen(c->path);
	snprintf(c->path + n, sizeof(c->path) - n, "%s%s", n ? "." : "", key);
	return n;
}

static size_t path_push_idx(struct ctx *c, size_t idx)
{
	size_t n = strlen(c->path);
	snprintf(c->path + n, sizeof(c->path) - n, "[%zu]", idx);
	return n;
}

static void path_pop(struct ctx *c, size_t n)
{
	c->path[n] = '\0';
}

/* Short text of a JSON value for messages: compact JSON, cut at 60 characters. */
static const char *show(const json_t *v, char *buf, size_t len)
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

static const char *type_name(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT: return "an object";
	case JSON_ARRAY: return "an array";
	case JSON_STRING: return "a string";
	case JSON_INTEGER: return "an integer";
	case JSON_REAL: return "a number with a fraction";
	case JSON_TRUE:
	case JSON_FALSE: return "a boolean";
	case JSON_NULL: return "null";
	}
	return "?";
}

static int is_comment_key(const char *k)
{
	return strncmp(k, "_comment", 8) == 0;
}

/* Refuses any member of `obj` not in the NULL-terminated `known` list (comments aside). */
static int check_keys(struct ctx *c, json_t *obj, const char *const *known)
{
	const char *k;
	json_t *v;

	json_object_foreach(obj, k, v) {
		int ok = is_comment_key(k);
		for (size_t i = 0; !ok && known[i]; i++)
			ok = strcmp(k, known[i]) == 0;
		if (!ok) {
			char list[256];
			size_t off = 0;
			for (size_t i = 0; known[i] && off < sizeof(list); i++)
				off += (size_t)snprintf(list + off, sizeof(list) - off, "%s%s",
							i ? ", " : "", known[i]);
			return fail(c, k, "unknown key (known keys here: %s)", list);
		}
	}
	return 0;
}

/* Integer member in [min, max]; absent: *out = def. */
static int get_int(struct ctx *c, json_t *obj, const char *key, int64_t min, int64_t max,
		   int64_t def, int64_t *out)
{
	json_t *v = json_object_get(obj, key);
	char b[80];

	if (!v) {
		*out = def;
		return 0;
	}
	if (!json_is_integer(v))
		return fail(c, key, "expected an integer, got %s %s", type_name(v), show(v, b, sizeof(b)));
	*out = json_integer_value(v);
	if (*out < min || *out > max)
		return fail(c, key, "%" PRId64 " is out of range (%" PRId64 "..%" PRId64 ")", *out,
			    min, max);
	return 0;
}

static int get_u32(struct ctx *c, json_t *obj, const char *key, int64_t min, int64_t max,
		   int64_t def, uint32_t *out)
{
	int64_t v;
	int r = get_int(c, obj, key, min, max, def, &v);
	*out = (uint32_t)v;
	return r;
}

static int is_pow2(uint64_t v)
{
	return v && (v & (v - 1)) == 0;
}

/* String member; absent: copies `def` (NULL def = required). Length 1..len-1. */
static int get_str(struct ctx *c, json_t *obj, const char *key, const char *def, char *out,
		   size_t len)
{
	json_t *v = json_object_get(obj, key);
	char b[80];

	if (!v) {
		if (!def)
			return fail(c, key, "missing required key");
		snprintf(out, len, "%s", def);
		return 0;
	}
	if (!json_is_string(v))
		return fail(c, key, "expected a string, got %s %s", type_name(v), show(v, b, sizeof(b)));
	if (json_string_length(v) == 0)
		return fail(c, key, "must not be empty");
	if (json_string_length(v) >= len)
		return fail(c, key, "%s is too long (at most %zu characters)", show(v, b, sizeof(b)),
			    len - 1);
	if (strlen(json_string_value(v)) != json_string_length(v))
		return fail(c, key, "contains a NUL character");
	memcpy(out, json_string_value(v), json_string_length(v) + 1);
	return 0;
}

static int get_bool(struct ctx *c, json_t *obj, const char *key, int def, int *out)
{
	json_t *v = json_object_get(obj, key);
	char b[80];

	if (!v) {
		*out = def;
		return 0;
	}
	if (!json_is_boolean(v))
		return fail(c, key, "expected true or false, got %s %s", type_name(v),
			    show(v, b, sizeof(b)));
	*out = json_is_true(v);
	return 0;
}

/* Object member (NULL when absent; error when present but not an object). */
static int get_obj(struct ctx *c, json_t *obj, const char *key, json_t **out)
{
	json_t *v = json_object_get(obj, key);
	char b[80];

	*out = NULL;
	if (!v)
		return 0;
	if (!json_is_object(v))
		return fail(c, key, "expected an object, got %s %s", type_name(v), show(v, b, sizeof(b)));
	*out = v;
	return 0;
}

/* Names that become shared memory names and metric labels: [A-Za-z0-9_.-], not starting
 * with '.' or '-'. */
static int check_name(struct ctx *c, const char *key, const char *s)
{
	if (s[0] == '.' || s[0] == '-')
		return fail(c, key, "\"%s\" must start with a letter, digit or '_'", s);
	for (const char *p = s; *p; p++)
		if (!isalnum((unsigned char)*p) && *p != '_' && *p != '.' && *p != '-')
			return fail(c, key, "\"%s\" may only hold letters, digits, '_', '.', '-'", s);
	return 0;
}

enum addr_kind { ADDR_MULTICAST, ADDR_LOCAL, ADDR_UNICAST };

/* Dotted IPv4 string member; absent: `def` (NULL = required). */
static int get_ipv4(struct ctx *c, json_t *obj, const char *key, const char *def,
		    enum addr_kind kind, struct in_addr *out)
{
	char s[64];
	int r = get_str(c, obj, key, def, s, sizeof(s));

	if (r)
		return r;
	if (inet_pton(AF_INET, s, out) != 1)
		return fail(c, key, "\"%s\" is not an IPv4 address (dotted quad, e.g. 239.1.1.1)", s);
	uint32_t h = ntohl(out->s_addr);
	switch (kind) {
	case ADDR_MULTICAST:
		if (!IN_MULTICAST(h))
			return fail(c, key, "\"%s\" is not a multicast group (224.0.0.0/4)", s);
		if ((h & 0xffffff00u) == 0xe0000000u)
			return fail(c, key, "\"%s\" is in 224.0.0.0/24 (link-local control, not for "
				    "data)", s);
		break;
	case ADDR_LOCAL:
		if (IN_MULTICAST(h) || h == INADDR_BROADCAST)
			return fail(c, key, "\"%s\" is not a local interface address", s);
		break;
	case ADDR_UNICAST:
		if (IN_MULTICAST(h) || h == INADDR_BROADCAST || h == INADDR_ANY)
			return fail(c, key, "\"%s\" is not a unicast address", s);
		break;
	}
	return 0;
}

/* "a.b.c.d:port" string member. `port_min` 0 allows an ephemeral port. */
static int get_hostport(struct ctx *c, json_t *obj, const char *key, const char *def,
			enum addr_kind kind, int port_min, struct sockaddr_in *out)
{
	char s[64], host[64];
	char *colon, *end;
	long port;
	int r = get_str(c, obj, key, def, s, sizeof(s));

	if (r)
		return r;
	colon = strrchr(s, ':');
	if (!colon || colon == s || colon[1] == '\0')
		return fail(c, key, "\"%s\" is not ADDRESS:PORT (e.g. 127.0.0.1:8080)", s);
	snprintf(host, sizeof(host), "%.*s", (int)(colon - s), s);
	errno = 0;
	port = strtol(colon + 1, &end, 10);
	if (*end || errno || !isdigit((unsigned char)colon[1]))
		return fail(c, key, "\"%s\": port \"%s\" is not a number", s, colon + 1);
	if (port < port_min || port > 65535)
		return fail(c, key, "\"%s\": port %ld is out of range (%d..65535)", s, port, port_min);
	memset(out, 0, sizeof(*out));
	out->sin_family = AF_INET;
	out->sin_port = htons((uint16_t)port);
	if (inet_pton(AF_INET, host, &out->sin_addr) != 1)
		return fail(c, key, "\"%s\": \"%s\" is not an IPv4 address", s, host);
	uint32_t h = ntohl(out->sin_addr.s_addr);
	if (kind == ADDR_UNICAST && (IN_MULTICAST(h) || h == INADDR_BROADCAST || h == INADDR_ANY))
		return fail(c, key, "\"%s\": \"%s\" is not a unicast address", s, host);
	if (kind == ADDR_LOCAL && (IN_MULTICAST(h) || h == INADDR_BROADCAST))
		return fail(c, key, "\"%s\": \"%s\" is not a local address", s, host);
	return 0;
}

/* CPU member: -1 (not pinned) or a CPU this process may run on (sched_getaffinity). */
static int get_cpu(struct ctx *c, json_t *obj, const char *key, int *out)
{
	json_t *j = json_object_get(obj, key);
	char b[80], list[128];
	int64_t v;

	*out = -1;
	if (!j)
		return 0;
	if (!json_is_integer(j))
		return fail(c, key, "expected an integer CPU number, got %s %s", type_name(j),
			    show(j, b, sizeof(b)));
	v = json_integer_value(j);
	if (v < -1)
		return fail(c, key, "%" PRId64 " is out of range (a CPU number, or -1 = not pinned)", v);
	if (v >= CPU_SETSIZE || (v >= 0 && !(c->flags & UF_CFG_NO_HOST_CHECKS) &&
				 !uf_place_cpu_usable((int)v))) {
		uf_place_cpu_list(list, sizeof(list));
		return fail(c, key, "CPU %" PRId64 " does not exist or is not available to this "
			    "process (available: %s; -1 = not pinned)", v, list);
	}
	*out = (int)v;
	return 0;
}

static int sym_cmp(const void *a, const void *b)
{
	return strcmp((const char *)a, (const char *)b);
}

/* Adds one symbol (already trimmed) to the feed's filter, checking its spelling. */
static int add_symbol(struct ctx *c, const char *key, struct uf_feed_config *f, const char *s,
		      size_t len)
{
	if (len == 0 || len > 8)
		return fail(c, key, "symbol \"%.*s\" must be 1 to 8 characters", (int)(len > 40 ? 40 : len), s);
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] > 0x7e)
			return fail(c, key, "symbol \"%.*s\" holds a non-printable character", (int)len, s);
	if (s[0] == ' ' || s[len - 1] == ' ')
		return fail(c, key, "symbol \"%.*s\" has leading or trailing spaces", (int)len, s);
	if (f->nsymbols >= UF_CFG_MAX_SYMBOLS)
		return fail(c, key, "more than %d symbols", UF_CFG_MAX_SYMBOLS);
	if (!f->symbols) {
		f->symbols = calloc(UF_CFG_MAX_SYMBOLS, sizeof(*f->symbols));
		if (!f->symbols)
			return fail(c, key, "out of memory");
	}
	memcpy(f->symbols[f->nsymbols], s, len);
	f->symbols[f->nsymbols][len] = '\0';
	f->nsymbols++;
	return 0;
}

/* Sorts the filter and refuses duplicates (a duplicate is a typo more often than not). */
static int finish_symbols(struct ctx *c, const char *key, struct uf_feed_config *f)
{
	if (f->nsymbols == 0)
		return 0;
	qsort(f->symbols, f->nsymbols, sizeof(*f->symbols), sym_cmp);
	for (uint32_t i = 1; i < f->nsymbols; i++)
		if (strcmp(f->symbols[i - 1], f->symbols[i]) == 0)
			return fail(c, key, "symbol \"%s\" is listed twice", f->symbols[i]);
	return 0;
}

static int load_symbols_file(struct ctx *c, struct uf_feed_config *f)
{
	char full[512], line[256];
	FILE *fp;
	int lineno = 0, r = 0;

	if (f->symbols_file[0] == '/' || !c->dir[0])
		snprintf(full, sizeof(full), "%s", f->symbols_file);
	else
		snprintf(full, sizeof(full), "%s/%s", c->dir, f->symbols_file);
	fp = fopen(full, "r");
	if (!fp)
		return fail(c, "symbols_file", "cannot read \"%s\": %s", full, strerror(errno));
	while (!r && fgets(line, sizeof(line), fp)) {
		char key[64];
		char *s = line, *e;

		lineno++;
		snprintf(key, sizeof(key), "symbols_file:%d", lineno);
		if (!strchr(line, '\n') && !feof(fp)) {
			r = fail(c, key, "line longer than %zu characters", sizeof(line) - 2);
			break;
		}
		while (*s == ' ' || *s == '\t')
			s++;
		e = s + strcspn(s, "#\r\n");
		while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
			e--;
		if (e == s)
			continue; /* blank line or comment */
		r = add_symbol(c, key, f, s, (size_t)(e - s));
	}
	fclose(fp);
	if (!r)
		r = finish_symbols(c, "symbols_file", f);
	return r;
}

static int parse_symbols(struct ctx *c, json_t *feed, struct uf_feed_config *f)
{
	json_t *arr = json_object_get(feed, "symbols");
	char b[80];
	int r;

	r = get_str(c, feed, "symbols_file", "", f->symbols_file, sizeof(f->symbols_file));
	if (r)
		return r;
	if (arr && f->symbols_file[0])
		return fail(c, "symbols", "give either \"symbols\" or \"symbols_file\", not both");
	if (f->symbols_file[0])
		return load_symbols_file(c, f);
	if (!arr)
		return 0;
	if (!json_is_array(arr))
		return fail(c, "symbols", "expected an array of strings, got %s %s", type_name(arr),
			    show(arr, b, sizeof(b)));
	for (size_t i = 0; i < json_array_size(arr); i++) {
		json_t *s = json_array_get(arr, i);
		char key[32];

		snprintf(key, sizeof(key), "symbols[%zu]", i);
		if (!json_is_string(s))
			return fail(c, key, "expected a string, got %s %s", type_name(s), show(s, b, sizeof(b)));
		r = add_symbol(c, key, f, json_string_value(s), json_string_length(s));
		if (r)
			return r;
	}
	return finish_symbols(c, "symbols", f);
}

static int parse_line(struct ctx *c, json_t *jl, size_t idx, struct uf_line_config *l)
{
	static const char *const keys[] = { "name", "group", "port", "interface", NULL };
	const char *defname = idx == 0 ? "A" : "B";
	int64_t port;
	int r;

	if ((r = check_keys(c, jl, keys)) || (r = get_str(c, jl, "name", defname, l->name, sizeof(l->name))) ||
	    (r = check_name(c, "name", l->name)) ||
	    (r = get_ipv4(c, jl, "group", NULL, ADDR_MULTICAST, &l->group)))
		return r;
	if (!json_object_get(jl, "port"))
		return fail(c, "port", "missing required key");
	if ((r = get_int(c, jl, "port", 1, 65535, 0, &port)))
		return r;
	l->port = (uint16_t)port;
	return get_ipv4(c, jl, "interface", "0.0.0.0", ADDR_LOCAL, &l->interface);
}

static int parse_lines(struct ctx *c, json_t *feed, struct uf_feed_config *f)
{
	json_t *arr = json_object_get(feed, "lines");
	char b[80];
	size_t n;
	int r;

	if (!arr)
		return fail(c, "lines", "missing required key (one or two multicast lines, A and B)");
	if (!json_is_array(arr))
		return fail(c, "lines", "expected an array of line objects, got %s %s", type_name(arr),
			    show(arr, b, sizeof(b)));
	if (json_array_size(arr) < 1 || json_array_size(arr) > UF_CFG_MAX_LINES)
		return fail(c, "lines", "has %zu entries; a feed has 1 or %d lines (A and B)",
			    json_array_size(arr), UF_CFG_MAX_LINES);
	for (size_t i = 0; i < json_array_size(arr); i++) {
		json_t *jl = json_array_get(arr, i);
		size_t save = path_push_key(c, "lines");

		path_push_idx(c, i);
		if (!json_is_object(jl))
			r = fail(c, NULL, "expected a line object, got %s %s", type_name(jl),
				 show(jl, b, sizeof(b)));
		else
			r = parse_line(c, jl, i, &f->lines[i]);
		path_pop(c, save);
		if (r)
			return r;
	}
	n = json_array_size(arr);
	f->nlines = (int)n;
	if (n == 2) {
		char key[32];
		snprintf(key, sizeof(key), "lines[1].name");
		if (strcmp(f->lines[0].name, f->lines[1].name) == 0)
			return fail(c, key, "\"%s\" is the name of lines[0] too", f->lines[1].name);
		snprintf(key, sizeof(key), "lines[1]");
		if (f->lines[0].group.s_addr == f->lines[1].group.s_addr &&
		    f->lines[0].port == f->lines[1].port)
			return fail(c, key, "same group and port as lines[0]: A and B must be different "
				    "streams");
	}
	return 0;
}

static int parse_recovery(struct ctx *c, json_t *feed, struct uf_feed_config *f)
{
	static const char *const keys[] = { "server", "max_count", "timeout_ms", "retries",
					    "wait_ms", "wait_packets", "queue_packets",
					    "max_requests_per_s", NULL };
	json_t *jr;
	size_t save;
	int r;

	if ((r = get_obj(c, feed, "recovery", &jr)))
		return r;
	save = path_push_key(c, "recovery");
	if (jr && (r = check_keys(c, jr, keys))) {
		path_pop(c, save);
		return r;
	}
	if (jr && !json_object_get(jr, "server")) {
		/* Tunables without a server would silently do nothing. */
		r = fail(c, "server", "missing required key (the MoldUDP64 re-request server; leave "
			 "\"recovery\" out to run without one)");
		path_pop(c, save);
		return r;
	}
	if (!jr)
		jr = json_object(); /* all defaults; recovery stays disabled */
	else
		json_incref(jr);
	if ((r = check_keys(c, jr, keys)))
		goto out;
	f->recovery.enabled = json_object_get(jr, "server") != NULL;
	if (f->recovery.enabled &&
	    (r = get_hostport(c, jr, "server", NULL, ADDR_UNICAST, 1, &f->recovery.server)))
		goto out;
	/* max_count: MoldUDP64 re-requests carry a 16-bit message count. */
	if ((r = get_u32(c, jr, "max_count", 1, 65534, DEF_RECOVERY_MAX_COUNT, &f->recovery.max_count)) ||
	    (r = get_u32(c, jr, "timeout_ms", 1, 60000, DEF_RECOVERY_TIMEOUT_MS, &f->recovery.timeout_ms)) ||
	    (r = get_u32(c, jr, "retries", 0, 1000, DEF_RECOVERY_RETRIES, &f->recovery.retries)) ||
	    (r = get_u32(c, jr, "wait_ms", 0, 10000, DEF_RECOVERY_WAIT_MS, &f->recovery.wait_ms)) ||
	    (r = get_u32(c, jr, "wait_packets", 0, 1000000, DEF_RECOVERY_WAIT_PACKETS,
			 &f->recovery.wait_packets)) ||
	    (r = get_u32(c, jr, "queue_packets", 1, 1 << 24, DEF_RECOVERY_QUEUE_PACKETS,
			 &f->recovery.queue_packets)) ||
	    (r = get_u32(c, jr, "max_requests_per_s", 1, 1000000, DEF_RECOVERY_MAX_RPS,
			 &f->recovery.max_requests_per_s)))
		goto out;
out:
	json_decref(jr);
	path_pop(c, save);
	return r;
}

static int parse_ring(struct ctx *c, json_t *feed, struct uf_feed_config *f)
{
	static const char *const keys[] = { "name", "capacity", "mode", NULL };
	json_t *jr;
	int64_t cap;
	char mode[16], *end;
	size_t save;
	int r;

	if ((r = get_obj(c, feed, "ring", &jr)))
		return r;
	save = path_push_key(c, "ring");
	jr = jr ? json_incref(jr) : json_object();
	if ((r = check_keys(c, jr, keys)) ||
	    (r = get_str(c, jr, "name", f->name, f->ring.name, sizeof(f->ring.name))) ||
	    (r = check_name(c, "name", f->ring.name)) ||
	    (r = get_int(c, jr, "capacity", 1024, 1ll << 30, DEF_RING_CAPACITY, &cap)))
		goto out;
	if (!is_pow2((uint64_t)cap)) {
		r = fail(c, "capacity", "%" PRId64 " is not a power of two (e.g. 1048576 = 2^20)", cap);
		goto out;
	}
	f->ring.capacity = (uint64_t)cap;
	if ((r = get_str(c, jr, "mode", "0600", mode, sizeof(mode))))
		goto out;
	f->ring.mode = (uint32_t)strtoul(mode, &end, 8);
	if (*end || mode[0] != '0' || strlen(mode) != 4 ||
	    (f->ring.mode != 0600 && f->ring.mode != 0640 && f->ring.mode != 0644)) {
		r = fail(c, "mode", "\"%s\" is not one of \"0600\", \"0640\", \"0644\" (an octal string; "
			 "consumers only ever read the ring)", mode);
		goto out;
	}
out:
	json_decref(jr);
	path_pop(c, save);
	return r;
}

static int parse_book(struct ctx *c, json_t *feed, struct uf_feed_config *f)
{
	static const char *const keys[] = { "depth", "max_orders", "max_instruments", NULL };
	json_t *jb;
	int64_t orders;
	size_t save;
	int r;

	if ((r = get_obj(c, feed, "book", &jb)))
		return r;
	save = path_push_key(c, "book");
	jb = jb ? json_incref(jb) : json_object();
	if ((r = check_keys(c, jb, keys)) ||
	    (r = get_u32(c, jb, "depth", 1, 64, DEF_BOOK_DEPTH, &f->book.depth)) ||
	    (r = get_int(c, jb, "max_orders", 1, 1ll << 32, DEF_BOOK_MAX_ORDERS, &orders)) ||
	    /* ITCH stock locate codes are 16 bits: 65535 instruments at most. */
	    (r = get_u32(c, jb, "max_instruments", 1, 65535, DEF_BOOK_MAX_INSTRUMENTS,
			 &f->book.max_instruments)))
		goto out;
	f->book.max_orders = (uint64_t)orders;
out:
	json_decref(jb);
	path_pop(c, save);
	return r;
}

static int parse_buffers(struct ctx *c, json_t *feed, struct uf_feed_config *f)
{
	static const char *const keys[] = { "count", "size", NULL };
	json_t *jb;
	size_t save;
	int r;

	if ((r = get_obj(c, feed, "buffers", &jb)))
		return r;
	save = path_push_key(c, "buffers");
	jb = jb ? json_incref(jb) : json_object();
	/* io_uring provided buffer rings hold a power of two entries, at most 32768. */
	if ((r = check_keys(c, jb, keys)) ||
	    (r = get_u32(c, jb, "count", 8, 32768, DEF_BUFFERS_COUNT, &f->buffers.count)))
		goto out;
	if (!is_pow2(f->buffers.count)) {
		r = fail(c, "count", "%u is not a power of two (io_uring buffer rings need one)",
			 f->buffers.count);
		goto out;
	}
	/* Smaller than an Ethernet MTU would truncate ordinary MoldUDP64 packets. */
	r = get_u32(c, jb, "size", 1500, 65536, DEF_BUFFERS_SIZE, &f->buffers.size);
out:
	json_decref(jb);
	path_pop(c, save);
	return r;
}

static const char *const backend_names[] = {
	[UF_BACKEND_IO_URING] = "io_uring",
	[UF_BACKEND_IO_URING_NOSQPOLL] = "io_uring_nosqpoll",
	[UF_BACKEND_RECVMMSG] = "recvmmsg",
	[UF_BACKEND_EPOLL] = "epoll",
};

/* Back end for its JSON name, -1 when unknown (feed/ has the public uf_backend_parse). */
static int backend_parse(const char *name)
{
	for (size_t i = 0; i < sizeof(backend_names) / sizeof(backend_names[0]); i++)
		if (strcmp(name, backend_names[i]) == 0)
			return (int)i;
	return -1;
}

static int parse_feed(struct ctx *c, json_t *jf, struct uf_feed_config *f)
{
	static const char *const keys[] = { "name", "protocol", "backend", "cpu", "sqpoll_cpu",
					    "sqpoll_idle_ms", "numa_node", "lines", "recovery",
					    "ring", "book", "buffers", "symbols", "symbols_file",
					    NULL };
	char backend[32];
	int64_t node;
	int r;

	if ((r = check_keys(c, jf, keys)) ||
	    (r = get_str(c, jf, "name", NULL, f->name, sizeof(f->name))) ||
	    (r = check_name(c, "name", f->name)) ||
	    (r = get_str(c, jf, "protocol", DEF_PROTOCOL, f->protocol, sizeof(f->protocol))))
		return r;
	if (strcmp(f->protocol, DEF_PROTOCOL) != 0)
		return fail(c, "protocol", "\"%s\" is not supported (supported: \"%s\")", f->protocol,
			    DEF_PROTOCOL);
	if ((r = get_str(c, jf, "backend", "io_uring", backend, sizeof(backend))))
		return r;
	if (backend_parse(backend) < 0)
		return fail(c, "backend", "\"%s\" is not one of \"io_uring\", \"io_uring_nosqpoll\", "
			    "\"recvmmsg\", \"epoll\"", backend);
	f->backend = (enum uf_backend)backend_parse(backend);
	if ((r = get_cpu(c, jf, "cpu", &f->cpu)) || (r = get_cpu(c, jf, "sqpoll_cpu", &f->sqpoll_cpu)) ||
	    (r = get_u32(c, jf, "sqpoll_idle_ms", 0, 60000, DEF_SQPOLL_IDLE_MS, &f->sqpoll_idle_ms)) ||
	    (r = get_int(c, jf, "numa_node", -1, 1023, -1, &node)))
		return r;
	if (node >= 0 && !(c->flags & UF_CFG_NO_HOST_CHECKS) && !uf_place_node_usable((int)node))
		return fail(c, "numa_node", "NUMA node %" PRId64 " does not exist (highest: %d; -1 = "
			    "the node of \"cpu\")", node, uf_place_node_max());
	f->numa_node = (int)node;
	if (json_object_get(jf, "sqpoll_cpu") && f->backend != UF_BACKEND_IO_URING && f->sqpoll_cpu >= 0)
		return fail(c, "sqpoll_cpu", "%d is set but backend \"%s\" has no SQ poll thread "
			    "(only \"io_uring\" has one)", f->sqpoll_cpu, backend);
	if (f->backend == UF_BACKEND_IO_URING && f->cpu >= 0 && f->cpu == f->sqpoll_cpu)
		uf_log_warn("%s: %s: cpu and sqpoll_cpu are both %d: two busy-polling threads will "
			    "share one CPU", c->file, c->path, f->cpu);
	if ((r = parse_lines(c, jf, f)) || (r = parse_recovery(c, jf, f)) || (r = parse_ring(c, jf, f)) ||
	    (r = parse_book(c, jf, f)) || (r = parse_buffers(c, jf, f)) || (r = parse_symbols(c, jf, f)))
		return r;
	return 0;
}

/* Checks between feeds: names, rings, endpoints and busy CPUs must not collide. */
static int check_feeds_apart(struct ctx *c, struct uf_config *cfg)
{
	char key[64];

	for (int i = 0; i < cfg->nfeeds; i++) {
		const struct uf_feed_config *f = &cfg->feeds[i];
		for (int j = 0; j < i; j++) {
			const struct uf_feed_config *g = &cfg->feeds[j];
			if (strcmp(f->name, g->name) == 0) {
				snprintf(key, sizeof(key), "feeds[%d].name", i);
				return fail(c, key, "duplicate feed name \"%s\" (also feeds[%d].name)",
					    f->name, j);
			}
			if (strcmp(f->ring.name, g->ring.name) == 0) {
				snprintf(key, sizeof(key), "feeds[%d].ring.name", i);
				return fail(c, key, "duplicate ring name \"%s\" (also the ring of "
					    "feeds[%d] \"%s\")", f->ring.name, j, g->name);
			}
			if (f->cpu >= 0 && f->backend != UF_BACKEND_EPOLL && (f->cpu == g->cpu ||
			    (g->backend == UF_BACKEND_IO_URING && f->cpu == g->sqpoll_cpu))) {
				snprintf(key, sizeof(key), "feeds[%d].cpu", i);
				return fail(c, key, "CPU %d is already busy-polled by feeds[%d] \"%s\"",
					    f->cpu, j, g->name);
			}
			for (int a = 0; a < f->nlines; a++)
				for (int b = 0; b < g->nlines; b++)
					if (f->lines[a].group.s_addr == g->lines[b].group.s_addr &&
					    f->lines[a].port == g->lines[b].port) {
						char grp[INET_ADDRSTRLEN];
						inet_ntop(AF_INET, &f->lines[a].group, grp, sizeof(grp));
						snprintf(key, sizeof(key), "feeds[%d].lines[%d]", i, a);
						return fail(c, key, "group %s port %u is also "
							    "feeds[%d].lines[%d]", grp,
							    f->lines[a].port, j, b);
					}
		}
	}
	return 0;
}

static int parse_root(struct ctx *c, json_t *root, struct uf_config *cfg)
{
	static const char *const keys[] = { "status", "log", "feeds", NULL };
	static const char *const status_keys[] = { "listen", "enabled", NULL };
	static const char *const log_keys[] = { "level", NULL };
	json_t *js, *jl, *jf;
	char level[16], b[80];
	size_t save;
	int r;

	if (!json_is_object(root))
		return fail(c, NULL, "the top level must be an object, got %s", type_name(root));
	if ((r = check_keys(c, root, keys)))
		return r;

	if ((r = get_obj(c, root, "status", &js)))
		return r;
	save = path_push_key(c, "status");
	js = js ? json_incref(js) : json_object();
	r = check_keys(c, js, status_keys);
	if (!r)
		r = get_hostport(c, js, "listen", DEF_STATUS_LISTEN, ADDR_LOCAL, 0, &cfg->status_listen);
	if (!r)
		r = get_bool(c, js, "enabled", 1, &cfg->status_enabled);
	json_decref(js);
	path_pop(c, save);
	if (r)
		return r;

	if ((r = get_obj(c, root, "log", &jl)))
		return r;
	save = path_push_key(c, "log");
	jl = jl ? json_incref(jl) : json_object();
	r = check_keys(c, jl, log_keys);
	if (!r)
		r = get_str(c, jl, "level", "info", level, sizeof(level));
	if (!r && (cfg->log_level = uf_log_level_parse(level)) < 0)
		r = fail(c, "level", "\"%s\" is not one of \"error\", \"warn\", \"info\", \"debug\"", level);
	json_decref(jl);
	path_pop(c, save);
	if (r)
		return r;

	jf = json_object_get(root, "feeds");
	if (!jf)
		return fail(c, "feeds", "missing required key (an array of feed objects)");
	if (!json_is_array(jf))
		return fail(c, "feeds", "expected an array of feed objects, got %s %s", type_name(jf),
			    show(jf, b, sizeof(b)));
	if (json_array_size(jf) == 0 || json_array_size(jf) > UF_CFG_MAX_FEEDS)
		return fail(c, "feeds", "has %zu entries; between 1 and %d feeds are supported",
			    json_array_size(jf), UF_CFG_MAX_FEEDS);
	for (size_t i = 0; i < json_array_size(jf); i++) {
		json_t *f = json_array_get(jf, i);

		save = path_push_key(c, "feeds");
		path_push_idx(c, i);
		cfg->nfeeds = (int)i + 1; /* so uf_config_free releases what this feed allocated */
		if (!json_is_object(f))
			r = fail(c, NULL, "expected a feed object, got %s %s", type_name(f),
				 show(f, b, sizeof(b)));
		else
			r = parse_feed(c, f, &cfg->feeds[i]);
		path_pop(c, save);
		if (r)
			return r;
	}
	return check_feeds_apart(c, cfg);
}

static void cfg_init(struct uf_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	for (int i = 0; i < UF_CFG_MAX_FEEDS; i++) {
		cfg->feeds[i].cpu = -1;
		cfg->feeds[i].sqpoll_cpu = -1;
		cfg->feeds[i].numa_node = -1;
	}
}

static int load(struct ctx *c, json_t *root, struct uf_config *cfg)
{
	int r = parse_root(c, root, cfg);

	json_decref(root);
	if (r)
		uf_config_free(cfg);
	return r;
}

int uf_config_load(const char *path, struct uf_config *cfg, char *err, size_t errlen)
{
	return uf_config_load_ex(path, 0, cfg, err, errlen);
}

int uf_config_load_ex(const char *path, unsigned flags, struct uf_config *cfg, char *err,
		      size_t errlen)
{
	struct ctx c = { .file = path, .err = err, .errlen = errlen, .flags = flags };
	json_error_t je;
	json_t *root;
	const char *slash;

	cfg_init(cfg);
	if (err && errlen)
		err[0] = '\0';
	snprintf(cfg->path, sizeof(cfg->path), "%s", path);
	slash = strrchr(path, '/');
	if (slash)
		snprintf(c.dir, sizeof(c.dir), "%.*s", (int)(slash - path), path);
	else
		snprintf(c.dir, sizeof(c.dir), ".");

	errno = 0;
	root = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
	if (!root) {
		if (json_error_code(&je) == json_error_cannot_open_file) {
			int e = errno ? errno : ENOENT;
			snprintf(err, errlen, "%s: cannot read: %s", path, je.text);
			return -e;
		}
		/* jansson counts lines from 1 and columns from 1 in characters; a problem at the
		 * very end (e.g. truncated file) reports the last position it read. */
		snprintf(err, errlen, "%s:%d:%d: syntax error: %s", path, je.line, je.column, je.text);
		return -EINVAL;
	}
	return load(&c, root, cfg);
}

int uf_config_load_string(const char *json, struct uf_config *cfg, char *err, size_t errlen)
{
	struct ctx c = { .file = "<string>", .err = err, .errlen = errlen };
	json_error_t je;
	json_t *root;

	cfg_init(cfg);
	if (err && errlen)
		err[0] = '\0';
	snprintf(cfg->path, sizeof(cfg->path), "<string>");
	snprintf(c.dir, sizeof(c.dir), ".");
	root = json_loads(json, JSON_REJECT_DUPLICATES, &je);
	if (!root) {
		snprintf(err, errlen, "<string>:%d:%d: syntax error: %s", je.line, je.column, je.text);
		return -EINVAL;
	}
	return load(&c, root, cfg);
}

void uf_config_free(struct uf_config *cfg)
{
	for (int i = 0; i < UF_CFG_MAX_FEEDS; i++) {
		free(cfg->feeds[i].symbols);
		cfg->feeds[i].symbols = NULL;
		cfg->feeds[i].nsymbols = 0;
	}
}

int uf_config_symbol_wanted(const struct uf_feed_config *f, const char *sym)
{
	if (f->nsymbols == 0)
		return 1;
	return bsearch(sym, f->symbols, f->nsymbols, sizeof(*f->symbols), sym_cmp) != NULL;
}
