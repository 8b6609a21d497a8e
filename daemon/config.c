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
#include "daemon/uf_config.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/config_json.h"
#include "daemon/config_resources.h"
#include "daemon/log.h"
#include "daemon/placement.h"
#include "feed/arbiter.h"
#include "feed/uf_feed.h"
#include "publish/uf_proto.h"
#include "ring/journal_writer.h"

/* CPU member: -1 (not pinned) or a CPU this process may run on (sched_getaffinity). */
static int get_cpu(struct uf_cj *c, json_t *obj, const char *key, int *out)
{
	json_t *j = json_object_get(obj, key);
	char b[80], list[128];
	int64_t v;

	*out = UF_CFG_DEFAULT_CPU;
	if (!j)
		return 0;
	if (!json_is_integer(j))
		return uf_cj_fail(c, key, "expected an integer CPU number, got %s %s",
		                  uf_cj_type(j), uf_cj_show(j, b, sizeof(b)));
	v = json_integer_value(j);
	if (v < -1)
		return uf_cj_fail(
		    c, key, "%" PRId64 " is out of range (a CPU number, or -1 = not pinned)", v);
	if (v >= CPU_SETSIZE ||
	    (v >= 0 && !(c->flags & UF_CFG_NO_HOST_CHECKS) && !uf_place_cpu_usable((int)v))) {
		uf_place_cpu_list(list, sizeof(list));
		return uf_cj_fail(c, key,
		                  "CPU %" PRId64 " does not exist or is not available to this "
		                  "process (available: %s; -1 = not pinned)",
		                  v, list);
	}
	*out = (int)v;
	return 0;
}

static int sym_cmp(const void *a, const void *b)
{
	return strcmp((const char *)a, (const char *)b);
}

/* Adds one symbol (already trimmed) to the feed's filter, checking its spelling. */
static int add_symbol(struct uf_cj *c, const char *key, struct uf_feed_config *f, const char *s,
                      size_t len)
{
	if (len == 0 || len > 8)
		return uf_cj_fail(c, key, "symbol \"%.*s\" must be 1 to 8 characters",
		                  (int)(len > 40 ? 40 : len), s);
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] > 0x7e)
			return uf_cj_fail(c, key, "symbol \"%.*s\" holds a non-printable character",
			                  (int)len, s);
	if (s[0] == ' ' || s[len - 1] == ' ')
		return uf_cj_fail(c, key, "symbol \"%.*s\" has leading or trailing spaces",
		                  (int)len, s);
	if (f->nsymbols >= UF_CFG_MAX_SYMBOLS)
		return uf_cj_fail(c, key, "more than %d symbols", UF_CFG_MAX_SYMBOLS);
	if (!f->symbols) {
		f->symbols = calloc(UF_CFG_MAX_SYMBOLS, sizeof(*f->symbols));
		if (!f->symbols)
			return uf_cj_fail(c, key, "out of memory");
	}
	memcpy(f->symbols[f->nsymbols], s, len);
	f->symbols[f->nsymbols][len] = '\0';
	f->nsymbols++;
	return 0;
}

/* Sorts the filter and refuses duplicates (a duplicate is a typo more often than not). */
static int finish_symbols(struct uf_cj *c, const char *key, struct uf_feed_config *f)
{
	if (f->nsymbols == 0)
		return 0;
	qsort(f->symbols, f->nsymbols, sizeof(*f->symbols), sym_cmp);
	for (uint32_t i = 1; i < f->nsymbols; i++)
		if (strcmp(f->symbols[i - 1], f->symbols[i]) == 0)
			return uf_cj_fail(c, key, "symbol \"%s\" is listed twice", f->symbols[i]);
	return 0;
}

/* What a symbols_file that is not a regular file is, for the refusal. */
static const char *file_kind(mode_t m)
{
	return S_ISDIR(m)    ? "a directory"
	       : S_ISFIFO(m) ? "a FIFO"
	       : S_ISSOCK(m) ? "a socket"
	       : S_ISCHR(m)  ? "a character device"
	       : S_ISBLK(m)  ? "a block device"
	                     : "not a regular file";
}

/* Opens the symbols file for reading, refusing anything but a regular file: a FIFO would
 * block --check-config and the daemon's load forever, a directory or device reads as
 * nothing (an empty filter: every symbol). O_NONBLOCK only for the open (a FIFO with no
 * writer opens at once and is then refused). Returns the stream or NULL after uf_cj_fail. */
static FILE *open_symbols_file(struct uf_cj *c, const char *full, int *r)
{
	struct stat st;
	int fd = open(full, O_RDONLY | O_NONBLOCK | O_CLOEXEC);

	if (fd < 0) {
		*r = uf_cj_fail(c, "symbols_file", "cannot read \"%s\": %s", full, strerror(errno));
		return NULL;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		*r = uf_cj_fail(c, "symbols_file", "\"%s\" is %s, not a file of symbols", full,
		                file_kind(st.st_mode));
		close(fd);
		return NULL;
	}
	(void)fcntl(fd, F_SETFL, 0); /* blocking reads of a regular file, as fopen gives */
	FILE *fp = fdopen(fd, "r");
	if (!fp) {
		*r = uf_cj_fail(c, "symbols_file", "cannot read \"%s\": %s", full, strerror(errno));
		close(fd);
	}
	return fp;
}

static int load_symbols_file(struct uf_cj *c, struct uf_feed_config *f)
{
	char full[512], line[256];
	FILE *fp;
	int lineno = 0, r = 0;

	if (f->symbols_file[0] == '/' || !c->dir[0])
		snprintf(full, sizeof(full), "%s", f->symbols_file);
	else
		snprintf(full, sizeof(full), "%s/%s", c->dir, f->symbols_file);
	fp = open_symbols_file(c, full, &r);
	if (!fp)
		return r;
	while (!r && fgets(line, sizeof(line), fp)) {
		char key[64];
		char *s = line, *e;

		lineno++;
		snprintf(key, sizeof(key), "symbols_file:%d", lineno);
		if (!strchr(line, '\n') && !feof(fp)) {
			r = uf_cj_fail(c, key, "line longer than %zu characters", sizeof(line) - 2);
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
	if (!r && ferror(fp))
		r = uf_cj_fail(c, "symbols_file", "reading \"%s\": %s", full, strerror(errno));
	fclose(fp);
	/* A filter file with no symbol is a mistake (truncated, wrong file), never "all": a
	 * feed that should carry every symbol has no symbols_file. */
	if (!r && f->nsymbols == 0)
		r = uf_cj_fail(c, "symbols_file",
		               "\"%s\" lists no symbol (an empty filter is refused: leave "
		               "\"symbols_file\" out to carry every symbol)",
		               full);
	if (!r)
		r = finish_symbols(c, "symbols_file", f);
	return r;
}

static int parse_symbols(struct uf_cj *c, json_t *feed, struct uf_feed_config *f)
{
	json_t *arr = json_object_get(feed, "symbols");
	char b[80];
	int r;

	r = uf_cj_str(c, feed, "symbols_file", "", f->symbols_file, sizeof(f->symbols_file));
	if (r)
		return r;
	if (arr && f->symbols_file[0])
		return uf_cj_fail(c, "symbols",
		                  "give either \"symbols\" or \"symbols_file\", not both");
	if (f->symbols_file[0])
		return load_symbols_file(c, f);
	if (!arr)
		return 0;
	if (!json_is_array(arr))
		return uf_cj_fail(c, "symbols", "expected an array of strings, got %s %s",
		                  uf_cj_type(arr), uf_cj_show(arr, b, sizeof(b)));
	for (size_t i = 0; i < json_array_size(arr); i++) {
		json_t *s = json_array_get(arr, i);
		char key[32];

		snprintf(key, sizeof(key), "symbols[%zu]", i);
		if (!json_is_string(s))
			return uf_cj_fail(c, key, "expected a string, got %s %s", uf_cj_type(s),
			                  uf_cj_show(s, b, sizeof(b)));
		r = add_symbol(c, key, f, json_string_value(s), json_string_length(s));
		if (r)
			return r;
	}
	return finish_symbols(c, "symbols", f);
}

static int parse_line(struct uf_cj *c, json_t *jl, size_t idx, struct uf_line_config *l)
{
	static const char *const keys[] = {"name", "group", "port", "interface", "source", NULL};
	const char *defname = idx == 0 ? "A" : "B";
	int64_t port;
	int r;

	if ((r = uf_cj_check_keys(c, jl, keys)) ||
	    (r = uf_cj_str(c, jl, "name", defname, l->name, sizeof(l->name))) ||
	    (r = uf_cj_name(c, "name", l->name)) ||
	    (r = uf_cj_ipv4(c, jl, "group", NULL, UF_CJ_MULTICAST, &l->group)))
		return r;
	if (!json_object_get(jl, "port"))
		return uf_cj_fail(c, "port", "missing required key");
	if ((r = uf_cj_int(c, jl, "port", 1, 65535, 0, &port)))
		return r;
	l->port = (uint16_t)port;
	if ((r = uf_cj_ipv4(c, jl, "interface", UF_CFG_DEFAULT_INTERFACE, UF_CJ_LOCAL,
	                    &l->interface)))
		return r;
	/* Optional: the one sender this line accepts (a source-specific join). */
	if (json_object_get(jl, "source"))
		return uf_cj_ipv4(c, jl, "source", NULL, UF_CJ_UNICAST, &l->source);
	return 0;
}

static int parse_lines(struct uf_cj *c, json_t *feed, struct uf_feed_config *f)
{
	json_t *arr = json_object_get(feed, "lines");
	char b[80];
	size_t n;
	int r;

	if (!arr)
		return uf_cj_fail(c, "lines",
		                  "missing required key (one or two multicast lines, A and B)");
	if (!json_is_array(arr))
		return uf_cj_fail(c, "lines", "expected an array of line objects, got %s %s",
		                  uf_cj_type(arr), uf_cj_show(arr, b, sizeof(b)));
	if (json_array_size(arr) < 1 || json_array_size(arr) > UF_CFG_MAX_LINES)
		return uf_cj_fail(c, "lines", "has %zu entries; a feed has 1 or %d lines (A and B)",
		                  json_array_size(arr), UF_CFG_MAX_LINES);
	for (size_t i = 0; i < json_array_size(arr); i++) {
		json_t *jl = json_array_get(arr, i);
		size_t save = uf_cj_push_key(c, "lines");

		uf_cj_push_idx(c, i);
		if (!json_is_object(jl))
			r = uf_cj_fail(c, NULL, "expected a line object, got %s %s", uf_cj_type(jl),
			               uf_cj_show(jl, b, sizeof(b)));
		else
			r = parse_line(c, jl, i, &f->lines[i]);
		uf_cj_pop(c, save);
		if (r)
			return r;
	}
	n = json_array_size(arr);
	f->nlines = (int)n;
	if (n == 2) {
		char key[32];
		snprintf(key, sizeof(key), "lines[1].name");
		if (strcmp(f->lines[0].name, f->lines[1].name) == 0)
			return uf_cj_fail(c, key, "\"%s\" is the name of lines[0] too",
			                  f->lines[1].name);
		snprintf(key, sizeof(key), "lines[1]");
		if (f->lines[0].group.s_addr == f->lines[1].group.s_addr &&
		    f->lines[0].port == f->lines[1].port)
			return uf_cj_fail(
			    c, key,
			    "same group and port as lines[0]: A and B must be different "
			    "streams");
	}
	return 0;
}

/* "snapshot": the GLIMPSE 5.0 server a late start, a restart or a hole too large or too old
 * to re-request loads the state of the day from (feed/snapshot.h). Needs no "recovery". */
static int parse_snapshot(struct uf_cj *c, json_t *feed, struct uf_feed_config *f)
{
	static const char *const keys[] = {
	    "server",           "username",         "password",   "session",        "on_start",
	    "max_gap_messages", "max_gap_age_ms",   "timeout_ms", "buffer_packets", "max_lead",
	    "max_hold_ms",      "reload_uncertain", NULL};
	json_t *js;
	int64_t gap, lead;
	int r;

	if ((r = uf_cj_obj(c, feed, "snapshot", &js)) || !js)
		return r;
	size_t save = uf_cj_push_key(c, "snapshot");
	f->snapshot.enabled = 1;
	if ((r = uf_cj_check_keys(c, js, keys)) ||
	    (r = uf_cj_hostport(c, js, "server", NULL, UF_CJ_UNICAST, 1, &f->snapshot.server)) ||
	    (r = uf_cj_str(c, js, "username", NULL, f->snapshot.username,
	                   sizeof(f->snapshot.username))) ||
	    (r = uf_cj_str(c, js, "password", NULL, f->snapshot.password,
	                   sizeof(f->snapshot.password))) ||
	    (json_object_get(js, "session") &&
	     (r = uf_cj_str(c, js, "session", NULL, f->snapshot.session,
	                    sizeof(f->snapshot.session)))) ||
	    (r = uf_cj_bool(c, js, "on_start", UF_CFG_DEFAULT_SNAPSHOT_ON_START,
	                    &f->snapshot.on_start)) ||
	    (r = uf_cj_int(c, js, "max_gap_messages", 0, INT64_MAX,
	                   UF_CFG_DEFAULT_SNAPSHOT_MAX_GAP_MESSAGES, &gap)) ||
	    (r = uf_cj_u32(c, js, "max_gap_age_ms", 0, 3600000,
	                   UF_CFG_DEFAULT_SNAPSHOT_MAX_GAP_AGE_MS, &f->snapshot.max_gap_age_ms)) ||
	    (r = uf_cj_u32(c, js, "timeout_ms", 1, 3600000, UF_CFG_DEFAULT_SNAPSHOT_TIMEOUT_MS,
	                   &f->snapshot.timeout_ms)) ||
	    (r = uf_cj_u32(c, js, "buffer_packets", 1, 1 << 24,
	                   UF_CFG_DEFAULT_SNAPSHOT_BUFFER_PACKETS, &f->snapshot.buffer_packets)) ||
	    (r = uf_cj_int(c, js, "max_lead", 1, 1000000000, UF_CFG_DEFAULT_SNAPSHOT_MAX_LEAD,
	                   &lead)) ||
	    (r = uf_cj_u32(c, js, "max_hold_ms", 1, 3600000, UF_CFG_DEFAULT_SNAPSHOT_MAX_HOLD_MS,
	                   &f->snapshot.max_hold_ms)) ||
	    (r = uf_cj_u32(c, js, "reload_uncertain", 0, 100,
	                   UF_CFG_DEFAULT_SNAPSHOT_RELOAD_UNCERTAIN,
	                   &f->snapshot.reload_uncertain)))
		goto out;
	f->snapshot.max_gap_messages = (uint64_t)gap;
	f->snapshot.max_lead = (uint64_t)lead;
	/* The live data an attempt holds without a working login: bounded by the attempt. Left
	 * out, the default shrinks to a shorter timeout_ms; given, it must fit. */
	if (f->snapshot.max_hold_ms > f->snapshot.timeout_ms) {
		if (json_object_get(js, "max_hold_ms")) {
			r = uf_cj_fail(
			    c, "max_hold_ms",
			    "%u is above timeout_ms (%u): the live data an attempt holds "
			    "is bounded by the attempt",
			    f->snapshot.max_hold_ms, f->snapshot.timeout_ms);
			goto out;
		}
		f->snapshot.max_hold_ms = f->snapshot.timeout_ms;
	}
	/* SoupBinTCP login fields are printable ASCII, space padded: no room for anything else. */
	const char *const fields[] = {"username", "password", "session"};
	const char *const vals[] = {f->snapshot.username, f->snapshot.password,
	                            f->snapshot.session};
	for (int i = 0; i < 3; i++)
		for (const char *p = vals[i]; *p; p++)
			if (*p <= ' ' || *p > '~') {
				r = uf_cj_fail(
				    c, fields[i],
				    "\"%s\": only printable ASCII without spaces (SoupBinTCP)",
				    vals[i]);
				goto out;
			}
out:
	uf_cj_pop(c, save);
	return r;
}

/* "capture": every datagram of the feed into pcapng files (feed/capture.h). The folder (a
 * relative one is taken from the config's folder, like symbols_file) must exist and be
 * writable now (host checks), so a typo fails --check-config, not the day. */
static int parse_capture(struct uf_cj *c, json_t *feed, struct uf_feed_config *f)
{
	static const char *const keys[] = {"dir", "rotate_mb", "max_total_gb", "buffer_mb", NULL};
	json_t *jc;
	int r;

	if ((r = uf_cj_obj(c, feed, "capture", &jc)) || !jc)
		return r;
	size_t save = uf_cj_push_key(c, "capture");
	f->capture.enabled = 1;
	if ((r = uf_cj_check_keys(c, jc, keys)) ||
	    (r = uf_cj_str(c, jc, "dir", NULL, f->capture.dir, sizeof(f->capture.dir))) ||
	    (r = uf_cj_u32(c, jc, "rotate_mb", 1, UF_CFG_CAPTURE_ROTATE_MB_MAX,
	                   UF_FEED_DEFAULT_CAPTURE_ROTATE_MB, &f->capture.rotate_mb)) ||
	    (r = uf_cj_u32(c, jc, "buffer_mb", UF_CFG_CAPTURE_BUFFER_MB_MIN,
	                   UF_CFG_CAPTURE_BUFFER_MB_MAX, UF_FEED_DEFAULT_CAPTURE_BUFFER_MB,
	                   &f->capture.buffer_mb)))
		goto out;
	json_t *jt = json_object_get(jc, "max_total_gb");
	if (jt) {
		char show[64];
		double gb = json_is_number(jt) ? json_number_value(jt) : -1;
		if (!json_is_number(jt) || !(gb >= 0) || gb > 1e6) {
			r = uf_cj_fail(
			    c, "max_total_gb",
			    "%s is not a size in GiB (a number 0..1000000; 0 = no limit)",
			    uf_cj_show(jt, show, sizeof(show)));
			goto out;
		}
		f->capture.max_total_bytes = (uint64_t)(gb * (double)(1ull << 30));
		uint64_t two = 2ull * ((uint64_t)f->capture.rotate_mb << 20);
		if (gb > 0 && f->capture.max_total_bytes < two) {
			r = uf_cj_fail(
			    c, "max_total_gb",
			    "%g GiB holds less than two files of rotate_mb %u MiB: raise "
			    "it or lower rotate_mb",
			    gb, f->capture.rotate_mb);
			goto out;
		}
	}
	if (f->capture.dir[0] != '/' && c->dir[0]) { /* relative: to the config's folder */
		char full[sizeof(f->capture.dir)];
		int n = snprintf(full, sizeof(full), "%s/%s", c->dir, f->capture.dir);
		if (n < 0 || (size_t)n >= sizeof(full)) {
			r = uf_cj_fail(c, "dir", "\"%s\" in %s: path too long", f->capture.dir,
			               c->dir);
			goto out;
		}
		memcpy(f->capture.dir, full, sizeof(full));
	}
	if (!(c->flags & UF_CFG_NO_HOST_CHECKS)) {
		struct stat sb;
		const char *d = f->capture.dir;
		if (stat(d, &sb) < 0)
			r = uf_cj_fail(c, "dir", "\"%s\": %s (create it first)", d,
			               strerror(errno));
		else if (!S_ISDIR(sb.st_mode))
			r = uf_cj_fail(c, "dir", "\"%s\" is not a directory", d);
		else if (access(d, W_OK | X_OK) < 0)
			r = uf_cj_fail(c, "dir", "\"%s\" is not writable: %s", d, strerror(errno));
	}
out:
	uf_cj_pop(c, save);
	return r;
}

static int parse_recovery(struct uf_cj *c, json_t *feed, struct uf_feed_config *f)
{
	static const char *const keys[] = {
	    "server",       "max_count",     "timeout_ms",         "retries",       "wait_ms",
	    "wait_packets", "queue_packets", "max_requests_per_s", "max_in_flight", NULL};
	json_t *jr;
	size_t save;
	int r;

	if ((r = uf_cj_obj(c, feed, "recovery", &jr)))
		return r;
	save = uf_cj_push_key(c, "recovery");
	if (jr && (r = uf_cj_check_keys(c, jr, keys))) {
		uf_cj_pop(c, save);
		return r;
	}
	if (jr && !json_object_get(jr, "server")) {
		/* Tunables without a server would silently do nothing. */
		r = uf_cj_fail(c, "server",
		               "missing required key (the MoldUDP64 re-request server; leave "
		               "\"recovery\" out to run without one)");
		uf_cj_pop(c, save);
		return r;
	}
	if (!jr)
		jr = json_object(); /* all defaults; recovery stays disabled */
	else
		json_incref(jr);
	if ((r = uf_cj_check_keys(c, jr, keys)))
		goto out;
	f->recovery.enabled = json_object_get(jr, "server") != NULL;
	if (f->recovery.enabled &&
	    (r = uf_cj_hostport(c, jr, "server", NULL, UF_CJ_UNICAST, 1, &f->recovery.server)))
		goto out;
	/* max_count: MoldUDP64 re-requests carry a 16-bit message count. */
	if ((r = uf_cj_u32(c, jr, "max_count", 1, 65534, UF_CFG_DEFAULT_RECOVERY_MAX_COUNT,
	                   &f->recovery.max_count)) ||
	    (r = uf_cj_u32(c, jr, "timeout_ms", 1, 60000, UF_CFG_DEFAULT_RECOVERY_TIMEOUT_MS,
	                   &f->recovery.timeout_ms)) ||
	    (r = uf_cj_u32(c, jr, "retries", 0, 1000, UF_CFG_DEFAULT_RECOVERY_RETRIES,
	                   &f->recovery.retries)) ||
	    (r = uf_cj_u32(c, jr, "wait_ms", 0, 10000, UF_CFG_DEFAULT_RECOVERY_WAIT_MS,
	                   &f->recovery.wait_ms)) ||
	    (r = uf_cj_u32(c, jr, "wait_packets", 0, 1000000, UF_CFG_DEFAULT_RECOVERY_WAIT_PACKETS,
	                   &f->recovery.wait_packets)) ||
	    (r = uf_cj_u32(c, jr, "queue_packets", 1, UF_CFG_QUEUE_PACKETS_MAX,
	                   UF_CFG_DEFAULT_RECOVERY_QUEUE_PACKETS, &f->recovery.queue_packets)) ||
	    (r = uf_cj_u32(c, jr, "max_requests_per_s", 1, 1000000, UF_CFG_DEFAULT_RECOVERY_MAX_RPS,
	                   &f->recovery.max_requests_per_s)) ||
	    (r = uf_cj_u32(c, jr, "max_in_flight", 1, 64, UF_CFG_DEFAULT_RECOVERY_MAX_IN_FLIGHT,
	                   &f->recovery.max_in_flight)))
		goto out;
out:
	json_decref(jr);
	uf_cj_pop(c, save);
	return r;
}

/* "arbitration": the arbiter's trust thresholds (feed/arbiter.h, docs/feed.md "What the
 * arbiter trusts"). Ranges are the arbiter's own (uf_arb_set_params refuses the rest); a key
 * left out keeps the engine's default (cfg_init: uf_feed_config_defaults). */
static int parse_arbitration(struct uf_cj *c, json_t *feed, struct uf_feed_config *f)
{
	static const char *const keys[] = {"max_jump", "jump_confirm", "session_confirm",
	                                   "line_silent_ms", NULL};
	json_t *ja;
	int64_t jump;
	size_t save;
	int r;

	if ((r = uf_cj_obj(c, feed, "arbitration", &ja)))
		return r;
	save = uf_cj_push_key(c, "arbitration");
	ja = ja ? json_incref(ja) : json_object();
	if ((r = uf_cj_check_keys(c, ja, keys)) ||
	    (r = uf_cj_int(c, ja, "max_jump", 1, UF_ARB_MAX_JUMP_MAX,
	                   (int64_t)f->arbitration.max_jump, &jump)) ||
	    (r = uf_cj_u32(c, ja, "jump_confirm", 1, UF_ARB_CONFIRM_MAX,
	                   f->arbitration.jump_confirm, &f->arbitration.jump_confirm)) ||
	    (r = uf_cj_u32(c, ja, "session_confirm", 1, UF_ARB_SESSION_CONFIRM_MAX,
	                   f->arbitration.session_confirm, &f->arbitration.session_confirm)) ||
	    (r = uf_cj_u32(c, ja, "line_silent_ms", 1, UF_ARB_LINE_SILENT_MS_MAX,
	                   f->arbitration.line_silent_ms, &f->arbitration.line_silent_ms)))
		goto out;
	f->arbitration.max_jump = (uint64_t)jump;
out:
	json_decref(ja);
	uf_cj_pop(c, save);
	return r;
}

/* 1 when this process may give its files to group `gid` (root, or a member of it). */
static int may_use_group(gid_t gid)
{
	gid_t groups[256];
	int n;

	if (geteuid() == 0 || getegid() == gid)
		return 1;
	n = getgroups((int)(sizeof(groups) / sizeof(groups[0])), groups);
	for (int i = 0; i < n; i++)
		if (groups[i] == gid)
			return 1;
	return 0;
}

/* "ring.group": the group that owns the ring's private directory and files, so that its
 * members may read the ring (mode "0640"). Resolved here (getgrnam) so that a name this host
 * does not know, or a group this user cannot give files to (chown would fail at start), is
 * refused by --check-config too. */
static int parse_ring_group(struct uf_cj *c, json_t *jr, struct uf_feed_config *f)
{
	char name[64];
	struct group *g;
	int r;

	if (!json_object_get(jr, "group"))
		return 0;
	if ((r = uf_cj_str(c, jr, "group", NULL, name, sizeof(name))))
		return r;
	if (c->flags & UF_CFG_NO_HOST_CHECKS)
		return 0; /* resolved on the production host */
	errno = 0;
	g = getgrnam(name);
	if (!g)
		return uf_cj_fail(c, "group", "group \"%s\" does not exist on this host%s%s", name,
		                  errno ? ": " : "", errno ? strerror(errno) : "");
	if (!may_use_group(g->gr_gid))
		return uf_cj_fail(c, "group",
		                  "this user is not a member of group \"%s\" (gid %u): the ring's "
		                  "files cannot be given to it",
		                  name, (unsigned)g->gr_gid);
	if (!(f->ring.mode & 0040))
		uf_log_warn("%s: %s.group: mode %04o gives group \"%s\" no access (use "
		            "\"0640\")",
		            c->file, c->path, f->ring.mode, name);
	f->ring.has_gid = 1;
	f->ring.gid = (uint32_t)g->gr_gid;
	return 0;
}

/* "ring.journal": {"dir", "fsync", "interval_ms", "keep_days"} (docs/journal.md). The
 * directory must exist and be writable by this user (a host check). */
static int parse_journal(struct uf_cj *c, json_t *jr, struct uf_feed_config *f)
{
	static const char *const keys[] = {"dir", "fsync", "interval_ms", "keep_days", NULL};
	json_t *jj;
	char fsync[16];
	size_t save;
	int r;

	if ((r = uf_cj_obj(c, jr, "journal", &jj)) || !jj)
		return r;
	save = uf_cj_push_key(c, "journal");
	if ((r = uf_cj_check_keys(c, jj, keys)) ||
	    (r = uf_cj_str(c, jj, "dir", NULL, f->ring.journal.dir, sizeof(f->ring.journal.dir))) ||
	    (r = uf_cj_str(c, jj, "fsync", "none", fsync, sizeof(fsync))) ||
	    (r = uf_cj_u32(c, jj, "interval_ms", 1, 3600000, 1000, &f->ring.journal.interval_ms)) ||
	    (r = uf_cj_u32(c, jj, "keep_days", 0, 3650, 0, &f->ring.journal.keep_days)))
		goto out;
	f->ring.journal.fsync = uf_journal_fsync_parse(fsync);
	if (f->ring.journal.fsync < 0) {
		r = uf_cj_fail(c, "fsync",
		               "\"%s\" is not one of \"none\", \"interval\", \"every_batch\"",
		               fsync);
		goto out;
	}
	if (f->ring.journal.dir[0] != '/') {
		r = uf_cj_fail(c, "dir", "\"%s\" is not an absolute path", f->ring.journal.dir);
		goto out;
	}
	if (!(c->flags & UF_CFG_NO_HOST_CHECKS)) {
		struct stat st;
		errno = 0;
		if (stat(f->ring.journal.dir, &st) < 0 || !S_ISDIR(st.st_mode))
			r = uf_cj_fail(c, "dir", "\"%s\" is not a directory on this host%s%s",
			               f->ring.journal.dir, errno ? ": " : "",
			               errno ? strerror(errno) : "");
		else if (access(f->ring.journal.dir, W_OK) < 0)
			r = uf_cj_fail(c, "dir", "\"%s\" is not writable by this user: %s",
			               f->ring.journal.dir, strerror(errno));
	}
out:
	uf_cj_pop(c, save);
	return r;
}

static int parse_ring(struct uf_cj *c, json_t *feed, struct uf_feed_config *f)
{
	static const char *const keys[] = {"name", "capacity", "mode", "group", "journal", NULL};
	json_t *jr;
	int64_t cap;
	char mode[16], *end;
	size_t save;
	int r;

	if ((r = uf_cj_obj(c, feed, "ring", &jr)))
		return r;
	save = uf_cj_push_key(c, "ring");
	jr = jr ? json_incref(jr) : json_object();
	if ((r = uf_cj_check_keys(c, jr, keys)) ||
	    (r = uf_cj_str(c, jr, "name", f->name, f->ring.name, sizeof(f->ring.name))) ||
	    (r = uf_cj_name(c, "name", f->ring.name)) ||
	    (r = uf_cj_int(c, jr, "capacity", UF_CFG_RING_CAPACITY_MIN, UF_CFG_RING_CAPACITY_MAX,
	                   (int64_t)f->ring.capacity, &cap)))
		goto out;
	if (!uf_cj_is_pow2((uint64_t)cap)) {
		r = uf_cj_fail(c, "capacity",
		               "%" PRId64 " is not a power of two (e.g. 1048576 = 2^20)", cap);
		goto out;
	}
	f->ring.capacity = (uint64_t)cap;
	if ((r = uf_cj_str(c, jr, "mode", UF_CFG_DEFAULT_RING_MODE, mode, sizeof(mode))))
		goto out;
	f->ring.mode = (uint32_t)strtoul(mode, &end, 8);
	if (*end || mode[0] != '0' || strlen(mode) != 4 ||
	    (f->ring.mode != 0600 && f->ring.mode != 0640 && f->ring.mode != 0644)) {
		r = uf_cj_fail(
		    c, "mode",
		    "\"%s\" is not one of \"0600\", \"0640\", \"0644\" (an octal string; "
		    "consumers only ever read the ring)",
		    mode);
		goto out;
	}
	if ((r = parse_ring_group(c, jr, f)))
		goto out;
	r = parse_journal(c, jr, f);
out:
	json_decref(jr);
	uf_cj_pop(c, save);
	return r;
}

static int parse_book(struct uf_cj *c, json_t *feed, struct uf_feed_config *f)
{
	static const char *const keys[] = {"depth", "max_orders", "max_instruments", NULL};
	json_t *jb;
	int64_t orders;
	size_t save;
	int r;

	if ((r = uf_cj_obj(c, feed, "book", &jb)))
		return r;
	save = uf_cj_push_key(c, "book");
	jb = jb ? json_incref(jb) : json_object();
	if ((r = uf_cj_check_keys(c, jb, keys)) ||
	    (r = uf_cj_u32(c, jb, "depth", 1, UF_CFG_BOOK_DEPTH_MAX, f->book.depth,
	                   &f->book.depth)) ||
	    (r = uf_cj_int(c, jb, "max_orders", 1, UF_CFG_BOOK_MAX_ORDERS_MAX,
	                   (int64_t)f->book.max_orders, &orders)) ||
	    /* ITCH stock locate codes are 16 bits: 65535 instruments at most. */
	    (r = uf_cj_u32(c, jb, "max_instruments", 1, UF_CFG_BOOK_MAX_INSTR_MAX,
	                   f->book.max_instruments, &f->book.max_instruments)))
		goto out;
	f->book.max_orders = (uint64_t)orders;
out:
	json_decref(jb);
	uf_cj_pop(c, save);
	return r;
}

static int parse_buffers(struct uf_cj *c, json_t *feed, struct uf_feed_config *f)
{
	static const char *const keys[] = {"count", "size", NULL};
	json_t *jb;
	size_t save;
	int r;

	if ((r = uf_cj_obj(c, feed, "buffers", &jb)))
		return r;
	save = uf_cj_push_key(c, "buffers");
	jb = jb ? json_incref(jb) : json_object();
	/* io_uring provided buffer rings hold a power of two entries, at most 32768; the
	 * engine wants one receive batch's worth at least. */
	if ((r = uf_cj_check_keys(c, jb, keys)) ||
	    (r = uf_cj_u32(c, jb, "count", UF_CFG_BUFFERS_COUNT_MIN, UF_CFG_BUFFERS_COUNT_MAX,
	                   UF_CFG_DEFAULT_BUFFERS_COUNT, &f->buffers.count)))
		goto out;
	if (!uf_cj_is_pow2(f->buffers.count)) {
		r = uf_cj_fail(c, "count",
		               "%u is not a power of two (io_uring buffer rings need one)",
		               f->buffers.count);
		goto out;
	}
	/* Smaller than an Ethernet MTU would truncate ordinary MoldUDP64 packets. */
	_Static_assert(1500 >= UF_CFG_BUFFERS_SIZE_MIN, "the engine takes what the config does");
	r = uf_cj_u32(c, jb, "size", 1500, UF_CFG_BUFFERS_SIZE_MAX, UF_CFG_DEFAULT_BUFFERS_SIZE,
	              &f->buffers.size);
out:
	json_decref(jb);
	uf_cj_pop(c, save);
	return r;
}

/* "idle_pause": true, false, or "auto" (the back end decides); absent: the engine's default. */
static int get_idle_pause(struct uf_cj *c, json_t *jf, int *out)
{
	json_t *v = json_object_get(jf, "idle_pause");
	char b[80];

	if (!v)
		*out = UF_FEED_DEFAULT_IDLE_PAUSE;
	else if (json_is_string(v) && !strcmp(json_string_value(v), "auto"))
		*out = UF_FEED_IDLE_PAUSE_AUTO;
	else if (json_is_boolean(v))
		*out = json_is_true(v) ? UF_FEED_IDLE_PAUSE_ON : UF_FEED_IDLE_PAUSE_OFF;
	else
		return uf_cj_fail(c, "idle_pause", "expected true, false or \"auto\", got %s %s",
		                  uf_cj_type(v), uf_cj_show(v, b, sizeof(b)));
	return 0;
}

static int parse_feed(struct uf_cj *c, json_t *jf, struct uf_feed_config *f)
{
	static const char *const keys[] = {"name",         "protocol",
	                                   "backend",      "cpu",
	                                   "sqpoll_cpu",   "sqpoll_idle_ms",
	                                   "numa_node",    "lines",
	                                   "recovery",     "ring",
	                                   "book",         "buffers",
	                                   "symbols",      "symbols_file",
	                                   "stage_timing", "stage_timing_every",
	                                   "snapshot",     "arbitration",
	                                   "capture",      "busy_clock",
	                                   "idle_pause",   NULL};
	char backend[32];
	int64_t node;
	int timing, busy;
	int r;

	if ((r = uf_cj_check_keys(c, jf, keys)) ||
	    (r = uf_cj_str(c, jf, "name", NULL, f->name, sizeof(f->name))) ||
	    (r = uf_cj_name(c, "name", f->name)) ||
	    (r = uf_cj_str(c, jf, "protocol", UF_CFG_DEFAULT_PROTOCOL, f->protocol,
	                   sizeof(f->protocol))))
		return r;
	if (!f->protocol[0] || !uf_proto_find(f->protocol)) { /* the table, publish/protocols.c */
		char names[200];
		return uf_cj_fail(c, "protocol", "\"%s\" is not supported (supported: %s)",
		                  f->protocol, uf_proto_names(names, sizeof(names)));
	}
	if ((r = uf_cj_str(c, jf, "backend", uf_backend_name(f->backend), backend,
	                   sizeof(backend))))
		return r;
	if (uf_backend_parse(backend, &f->backend) < 0)
		return uf_cj_fail(c, "backend",
		                  "\"%s\" is not one of \"io_uring\", \"io_uring_nosqpoll\", "
		                  "\"recvmmsg\", \"epoll\"",
		                  backend);
	if ((r = get_cpu(c, jf, "cpu", &f->cpu)) ||
	    (r = get_cpu(c, jf, "sqpoll_cpu", &f->sqpoll_cpu)) ||
	    (r = uf_cj_u32(c, jf, "sqpoll_idle_ms", 0, 60000, UF_CFG_DEFAULT_SQPOLL_IDLE_MS,
	                   &f->sqpoll_idle_ms)) ||
	    (r = uf_cj_int(c, jf, "numa_node", -1, 1023, UF_CFG_DEFAULT_NUMA_NODE, &node)) ||
	    (r = uf_cj_bool(c, jf, "stage_timing", UF_CFG_DEFAULT_STAGE_TIMING, &timing)) ||
	    (r = uf_cj_u32(c, jf, "stage_timing_every", 1, 65536, UF_FEED_STAGE_EVERY_DEFAULT,
	                   &f->stage_timing_every)) ||
	    (r = uf_cj_bool(c, jf, "busy_clock", UF_FEED_DEFAULT_BUSY_CLOCK, &busy)) ||
	    (r = get_idle_pause(c, jf, &f->idle_pause)))
		return r;
	f->no_stage_timing = !timing;
	f->busy_clock = busy;
	if (node >= 0 && !(c->flags & UF_CFG_NO_HOST_CHECKS) && !uf_place_node_usable((int)node))
		return uf_cj_fail(c, "numa_node",
		                  "NUMA node %" PRId64 " does not exist (highest: %d; -1 = "
		                  "the node of \"cpu\")",
		                  node, uf_place_node_max());
	f->numa_node = (int)node;
	if (json_object_get(jf, "sqpoll_cpu") && f->backend != UF_BACKEND_IO_URING &&
	    f->sqpoll_cpu >= 0)
		return uf_cj_fail(c, "sqpoll_cpu",
		                  "%d is set but backend \"%s\" has no SQ poll thread "
		                  "(only \"io_uring\" has one)",
		                  f->sqpoll_cpu, backend);
	if (f->backend == UF_BACKEND_IO_URING && f->cpu >= 0 && f->cpu == f->sqpoll_cpu)
		uf_log_warn("%s: %s: cpu and sqpoll_cpu are both %d: two busy-polling threads will "
		            "share one CPU",
		            c->file, c->path, f->cpu);
	/* What the venue's protocol does not offer is refused here, as uf_feed_create would. */
	const struct uf_proto *proto = uf_proto_find(f->protocol);
	json_t *jrec = json_object_get(jf, "recovery");
	if (jrec && json_object_get(jrec, "server") && !proto->framing->request_build)
		return uf_cj_fail(c, "recovery.server",
		                  "protocol \"%s\" has no re-request service (holes wait for the "
		                  "other line, then become gaps: docs/feed.md)",
		                  f->protocol);
	if (json_object_get(jf, "snapshot") && !proto->snapshot_msg)
		return uf_cj_fail(c, "snapshot", "protocol \"%s\" has no snapshot service",
		                  f->protocol);
	if ((r = parse_lines(c, jf, f)) || (r = parse_recovery(c, jf, f)) ||
	    (r = parse_snapshot(c, jf, f)) || (r = parse_arbitration(c, jf, f)) ||
	    (r = parse_ring(c, jf, f)) || (r = parse_book(c, jf, f)) ||
	    (r = parse_buffers(c, jf, f)) || (r = parse_capture(c, jf, f)) ||
	    (r = parse_symbols(c, jf, f)))
		return r;
	return 0;
}

/* Checks between feeds: names, rings, endpoints and busy CPUs must not collide. */
static int check_feeds_apart(struct uf_cj *c, struct uf_config *cfg)
{
	char key[64];

	for (int i = 0; i < cfg->nfeeds; i++) {
		const struct uf_feed_config *f = &cfg->feeds[i];
		for (int j = 0; j < i; j++) {
			const struct uf_feed_config *g = &cfg->feeds[j];
			if (strcmp(f->name, g->name) == 0) {
				snprintf(key, sizeof(key), "feeds[%d].name", i);
				return uf_cj_fail(
				    c, key, "duplicate feed name \"%s\" (also feeds[%d].name)",
				    f->name, j);
			}
			if (strcmp(f->ring.name, g->ring.name) == 0) {
				snprintf(key, sizeof(key), "feeds[%d].ring.name", i);
				return uf_cj_fail(c, key,
				                  "duplicate ring name \"%s\" (also the ring of "
				                  "feeds[%d] \"%s\")",
				                  f->ring.name, j, g->name);
			}
			if (f->cpu >= 0 && f->backend != UF_BACKEND_EPOLL &&
			    (f->cpu == g->cpu ||
			     (g->backend == UF_BACKEND_IO_URING && f->cpu == g->sqpoll_cpu))) {
				snprintf(key, sizeof(key), "feeds[%d].cpu", i);
				return uf_cj_fail(
				    c, key, "CPU %d is already busy-polled by feeds[%d] \"%s\"",
				    f->cpu, j, g->name);
			}
			for (int a = 0; a < f->nlines; a++)
				for (int b = 0; b < g->nlines; b++)
					if (f->lines[a].group.s_addr == g->lines[b].group.s_addr &&
					    f->lines[a].port == g->lines[b].port) {
						char grp[INET_ADDRSTRLEN];
						inet_ntop(AF_INET, &f->lines[a].group, grp,
						          sizeof(grp));
						snprintf(key, sizeof(key), "feeds[%d].lines[%d]", i,
						         a);
						return uf_cj_fail(c, key,
						                  "group %s port %u is also "
						                  "feeds[%d].lines[%d]",
						                  grp, f->lines[a].port, j, b);
					}
		}
	}
	return 0;
}

static int parse_root(struct uf_cj *c, json_t *root, struct uf_config *cfg)
{
	static const char *const keys[] = {"status", "log", "feeds", NULL};
	static const char *const status_keys[] = {"listen", "enabled", "probe_listen",
	                                          "ready_silence_ms", NULL};
	static const char *const log_keys[] = {"level", "journal", NULL};
	json_t *js, *jl, *jf;
	char level[16], b[80], probe[64], journal[16];
	size_t save;
	int r;

	if (!json_is_object(root))
		return uf_cj_fail(c, NULL, "the top level must be an object, got %s",
		                  uf_cj_type(root));
	if ((r = uf_cj_check_keys(c, root, keys)))
		return r;

	if ((r = uf_cj_obj(c, root, "status", &js)))
		return r;
	save = uf_cj_push_key(c, "status");
	js = js ? json_incref(js) : json_object();
	r = uf_cj_check_keys(c, js, status_keys);
	if (!r)
		r = uf_cj_hostport(c, js, "listen", UF_CFG_DEFAULT_STATUS_LISTEN, UF_CJ_LOCAL, 0,
		                   &cfg->status_listen);
	if (!r)
		r = uf_cj_bool(c, js, "enabled", UF_CFG_DEFAULT_STATUS_ENABLED,
		               &cfg->status_enabled);
	if (!r)
		r = uf_cj_u32(c, js, "ready_silence_ms", 1, 3600000,
		              UF_CFG_DEFAULT_READY_SILENCE_MS, &cfg->ready_silence_ms);
	if (!r)
		r = uf_cj_str(c, js, "probe_listen", UF_CFG_DEFAULT_STATUS_PROBE_LISTEN, probe,
		              sizeof(probe));
	if (!r && probe[0]) {
		r = uf_cj_hostport(c, js, "probe_listen", NULL, UF_CJ_LOCAL, 0, &cfg->probe_listen);
		cfg->probe_enabled = 1;
	}
	json_decref(js);
	uf_cj_pop(c, save);
	if (r)
		return r;

	if ((r = uf_cj_obj(c, root, "log", &jl)))
		return r;
	save = uf_cj_push_key(c, "log");
	jl = jl ? json_incref(jl) : json_object();
	r = uf_cj_check_keys(c, jl, log_keys);
	if (!r)
		r = uf_cj_str(c, jl, "level", UF_CFG_DEFAULT_LOG_LEVEL, level, sizeof(level));
	if (!r && (cfg->log_level = uf_log_level_parse(level)) < 0)
		r = uf_cj_fail(c, "level",
		               "\"%s\" is not one of \"error\", \"warn\", \"info\", \"debug\"",
		               level);
	if (!r)
		r = uf_cj_str(c, jl, "journal", UF_CFG_DEFAULT_LOG_JOURNAL, journal,
		              sizeof(journal));
	if (!r && (cfg->log_journal = uf_log_journal_parse(journal)) < 0)
		r = uf_cj_fail(c, "journal", "\"%s\" is not one of \"auto\", \"always\", \"never\"",
		               journal);
	json_decref(jl);
	uf_cj_pop(c, save);
	if (r)
		return r;

	jf = json_object_get(root, "feeds");
	if (!jf)
		return uf_cj_fail(c, "feeds", "missing required key (an array of feed objects)");
	if (!json_is_array(jf))
		return uf_cj_fail(c, "feeds", "expected an array of feed objects, got %s %s",
		                  uf_cj_type(jf), uf_cj_show(jf, b, sizeof(b)));
	if (json_array_size(jf) == 0 || json_array_size(jf) > UF_CFG_MAX_FEEDS)
		return uf_cj_fail(c, "feeds",
		                  "has %zu entries; between 1 and %d feeds are supported",
		                  json_array_size(jf), UF_CFG_MAX_FEEDS);
	for (size_t i = 0; i < json_array_size(jf); i++) {
		json_t *f = json_array_get(jf, i);

		save = uf_cj_push_key(c, "feeds");
		uf_cj_push_idx(c, i);
		cfg->nfeeds = (int)i + 1; /* so uf_config_free releases what this feed allocated */
		if (!json_is_object(f))
			r = uf_cj_fail(c, NULL, "expected a feed object, got %s %s", uf_cj_type(f),
			               uf_cj_show(f, b, sizeof(b)));
		else
			r = parse_feed(c, f, &cfg->feeds[i]);
		uf_cj_pop(c, save);
		if (r)
			return r;
	}
	if ((r = check_feeds_apart(c, cfg)))
		return r;
	if (c->flags & (UF_CFG_NO_HOST_CHECKS | UF_CFG_NO_RESOURCE_CHECKS))
		return 0;
	return uf_config_check_resources(c, cfg);
}

static void cfg_init(struct uf_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	/* Each feed starts as the engine's defaults (the one table, uf_feed_config_defaults):
	 * a key left out of the JSON keeps the value an embedder of the engine would get. */
	for (int i = 0; i < UF_CFG_MAX_FEEDS; i++)
		uf_feed_config_defaults(&cfg->feeds[i]);
}

static int load(struct uf_cj *c, json_t *root, struct uf_config *cfg)
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
	struct uf_cj c = {.file = path, .err = err, .errlen = errlen, .flags = flags};
	json_error_t je;
	json_t *root;
	const char *slash;
	struct stat st;

	cfg_init(cfg);
	if (err && errlen)
		err[0] = '\0';
	snprintf(cfg->path, sizeof(cfg->path), "%s", path);
	slash = strrchr(path, '/');
	if (slash)
		snprintf(c.dir, sizeof(c.dir), "%.*s", (int)(slash - path), path);
	else
		snprintf(c.dir, sizeof(c.dir), ".");

	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "%s: cannot read: is a directory", path);
		return -EISDIR;
	}
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
		snprintf(err, errlen, "%s:%d:%d: syntax error: %s", path, je.line, je.column,
		         je.text);
		return -EINVAL;
	}
	return load(&c, root, cfg);
}

int uf_config_load_string(const char *json, struct uf_config *cfg, char *err, size_t errlen)
{
	struct uf_cj c = {.file = "<string>", .err = err, .errlen = errlen};
	json_error_t je;
	json_t *root;

	cfg_init(cfg);
	if (err && errlen)
		err[0] = '\0';
	snprintf(cfg->path, sizeof(cfg->path), "<string>");
	snprintf(c.dir, sizeof(c.dir), ".");
	root = json_loads(json, JSON_REJECT_DUPLICATES, &je);
	if (!root) {
		snprintf(err, errlen, "<string>:%d:%d: syntax error: %s", je.line, je.column,
		         je.text);
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

/* The fields of a feed's configuration, for comparing two by value: a memcmp of the whole
 * struct also compares its padding, which the loader never writes (issue 23 item 17: a reload
 * of an unchanged file could say "needs a restart", or miss a change hiding next to padding
 * when two configs' padding happened to differ). Every field but the symbol filter (which a
 * reload applies) and the lines' and addresses' structs, compared by their members. */
static int same_line(const struct uf_line_config *a, const struct uf_line_config *b)
{
	return strcmp(a->name, b->name) == 0 && a->group.s_addr == b->group.s_addr &&
	       a->port == b->port && a->interface.s_addr == b->interface.s_addr &&
	       a->source.s_addr == b->source.s_addr;
}

static int same_endpoint(const struct sockaddr_in *a, const struct sockaddr_in *b)
{
	return a->sin_family == b->sin_family && a->sin_port == b->sin_port &&
	       a->sin_addr.s_addr == b->sin_addr.s_addr;
}

int uf_config_feed_same_except_symbols(const struct uf_feed_config *a,
                                       const struct uf_feed_config *b)
{
#define UF_SAME(f)     (a->f == b->f)
#define UF_SAME_STR(f) (strcmp(a->f, b->f) == 0)
	if (!UF_SAME_STR(name) || !UF_SAME_STR(protocol) || !UF_SAME(backend) || !UF_SAME(cpu) ||
	    !UF_SAME(sqpoll_cpu) || !UF_SAME(sqpoll_idle_ms) || !UF_SAME(numa_node) ||
	    !UF_SAME(nlines) || !UF_SAME_STR(symbols_file) || !UF_SAME(no_stage_timing) ||
	    !UF_SAME(stage_timing_every) || !UF_SAME(busy_clock) || !UF_SAME(idle_pause))
		return 0;
	for (int i = 0; i < a->nlines && i < UF_CFG_MAX_LINES; i++)
		if (!same_line(&a->lines[i], &b->lines[i]))
			return 0;
	if (!UF_SAME(recovery.enabled) ||
	    !same_endpoint(&a->recovery.server, &b->recovery.server) ||
	    !UF_SAME(recovery.max_count) || !UF_SAME(recovery.timeout_ms) ||
	    !UF_SAME(recovery.retries) || !UF_SAME(recovery.wait_ms) ||
	    !UF_SAME(recovery.wait_packets) || !UF_SAME(recovery.queue_packets) ||
	    !UF_SAME(recovery.max_requests_per_s) || !UF_SAME(recovery.max_in_flight))
		return 0;
	if (!UF_SAME(snapshot.enabled) ||
	    !same_endpoint(&a->snapshot.server, &b->snapshot.server) ||
	    !UF_SAME_STR(snapshot.username) || !UF_SAME_STR(snapshot.password) ||
	    !UF_SAME_STR(snapshot.session) || !UF_SAME(snapshot.on_start) ||
	    !UF_SAME(snapshot.max_gap_messages) || !UF_SAME(snapshot.max_gap_age_ms) ||
	    !UF_SAME(snapshot.timeout_ms) || !UF_SAME(snapshot.buffer_packets) ||
	    !UF_SAME(snapshot.max_lead) || !UF_SAME(snapshot.max_hold_ms) ||
	    !UF_SAME(snapshot.reload_uncertain))
		return 0;
	if (!UF_SAME(capture.enabled) || !UF_SAME_STR(capture.dir) || !UF_SAME(capture.rotate_mb) ||
	    !UF_SAME(capture.max_total_bytes) || !UF_SAME(capture.buffer_mb))
		return 0;
	if (!UF_SAME(arbitration.max_jump) || !UF_SAME(arbitration.jump_confirm) ||
	    !UF_SAME(arbitration.session_confirm) || !UF_SAME(arbitration.line_silent_ms))
		return 0;
	if (!UF_SAME_STR(ring.journal.dir) || !UF_SAME(ring.journal.fsync) ||
	    !UF_SAME(ring.journal.interval_ms) || !UF_SAME(ring.journal.keep_days))
		return 0;
	return UF_SAME_STR(ring.name) && UF_SAME(ring.capacity) && UF_SAME(ring.mode) &&
	       UF_SAME(ring.has_gid) && UF_SAME(ring.gid) && UF_SAME(book.depth) &&
	       UF_SAME(book.max_orders) && UF_SAME(book.max_instruments) &&
	       UF_SAME(buffers.count) && UF_SAME(buffers.size);
#undef UF_SAME
#undef UF_SAME_STR
}
