/* uf-bridge's JSON configuration file (keys = the long options with '_', see bridge.h). */
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "ring/nats/uf_nats_wire.h"
#include "tools/uf-bridge/bridge.h"

void uf_bridge_config_init(struct uf_bridge_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->replicas = 1;
	cfg->max_age_s = 86400;
	cfg->max_bytes = -1;
	cfg->batch = 256;
	cfg->window = 32; /* keeps a loopback or LAN link busy (docs/fanout.md) */
	cfg->kv_interval_ms = 100;
	cfg->stats_interval_ms = 0;
	cfg->ack_wait_ms = 2000;
	cfg->ack_timeouts = 2; /* a hung server is left after about 2 x ack_wait_ms */
}

static int get_str(json_t *o, const char *key, char *dst, size_t len, char *err, size_t errlen)
{
	json_t *v = json_object_get(o, key);

	if (!v)
		return 0;
	if (!json_is_string(v) || strlen(json_string_value(v)) >= len) {
		snprintf(err, errlen, "\"%s\" must be a string shorter than %zu bytes", key, len);
		return -1;
	}
	snprintf(dst, len, "%s", json_string_value(v));
	return 0;
}

static int get_int(json_t *o, const char *key, int64_t *dst, int64_t lo, int64_t hi, char *err,
                   size_t errlen)
{
	json_t *v = json_object_get(o, key);

	if (!v)
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi) {
		snprintf(err, errlen, "\"%s\" must be an integer in [%lld, %lld]", key,
		         (long long)lo, (long long)hi);
		return -1;
	}
	*dst = json_integer_value(v);
	return 0;
}

int uf_bridge_config_load(struct uf_bridge_config *cfg, const char *path, char *err, size_t errlen)
{
	static const char *known[] = {"ring",         "nats",
	                              "replicas",     "memory",
	                              "max_age_s",    "max_bytes",
	                              "batch",        "kv_interval_ms",
	                              "ack_wait_ms",  "stats_interval_ms",
	                              "status_file",  "exit_on_close",
	                              "dir",          "creds",
	                              "tls_ca",       "tls_cert",
	                              "tls_key",      "per_symbol",
	                              "ack_timeouts", "key_file",
	                              "window",       "compact",
	                              "eager"};
	json_error_t je;
	json_t *o = json_load_file(path, 0, &je), *v;
	const char *key;
	int64_t x;
	int rc = -1;

	if (!o) {
		snprintf(err, errlen, "%s:%d: %s", path, je.line, je.text);
		return -1;
	}
	if (!json_is_object(o)) {
		snprintf(err, errlen, "%s: not a JSON object", path);
		goto out;
	}
	json_object_foreach(o, key, v)
	{
		size_t i;
		if (strncmp(key, "_comment", 8) == 0)
			continue; /* as in uringfeed's configuration: comments are keys */
		for (i = 0; i < sizeof(known) / sizeof(known[0]); i++)
			if (!strcmp(key, known[i]))
				break;
		if (i == sizeof(known) / sizeof(known[0])) {
			snprintf(err, errlen, "%s: unknown key \"%s\"", path, key);
			goto out;
		}
	}
	if (get_str(o, "ring", cfg->ring, sizeof(cfg->ring), err, errlen) < 0 ||
	    get_str(o, "nats", cfg->urls, sizeof(cfg->urls), err, errlen) < 0 ||
	    get_str(o, "status_file", cfg->status_file, sizeof(cfg->status_file), err, errlen) <
	        0 ||
	    get_str(o, "dir", cfg->dir, sizeof(cfg->dir), err, errlen) < 0 ||
	    get_str(o, "creds", cfg->creds, sizeof(cfg->creds), err, errlen) < 0 ||
	    get_str(o, "tls_ca", cfg->tls_ca, sizeof(cfg->tls_ca), err, errlen) < 0 ||
	    get_str(o, "tls_cert", cfg->tls_cert, sizeof(cfg->tls_cert), err, errlen) < 0 ||
	    get_str(o, "tls_key", cfg->tls_key, sizeof(cfg->tls_key), err, errlen) < 0 ||
	    get_str(o, "key_file", cfg->key_file, sizeof(cfg->key_file), err, errlen) < 0)
		goto out;
#define INT_KEY(k, field, lo, hi)                                                                  \
	do {                                                                                       \
		x = (int64_t)cfg->field;                                                           \
		if (get_int(o, k, &x, lo, hi, err, errlen) < 0)                                    \
			goto out;                                                                  \
		cfg->field = x;                                                                    \
	} while (0)
	INT_KEY("replicas", replicas, 1, 5);
	INT_KEY("max_age_s", max_age_s, 0, INT64_MAX / 1000000000);
	INT_KEY("max_bytes", max_bytes, -1, INT64_MAX);
	INT_KEY("batch", batch, 1, UF_NATS_MAX_RECORDS);
	INT_KEY("window", window, 1, 1024);
	INT_KEY("eager", eager, 0, 1024);
	INT_KEY("kv_interval_ms", kv_interval_ms, 1, 3600000);
	INT_KEY("ack_wait_ms", ack_wait_ms, 10, 600000);
	INT_KEY("ack_timeouts", ack_timeouts, 1, 1000);
	INT_KEY("stats_interval_ms", stats_interval_ms, 0, 3600000);
#undef INT_KEY
	v = json_object_get(o, "memory");
	if (v)
		cfg->memory = json_is_true(v);
	v = json_object_get(o, "compact");
	if (v)
		cfg->compact = json_is_true(v);
	v = json_object_get(o, "per_symbol");
	if (v)
		cfg->per_symbol = json_is_true(v);
	v = json_object_get(o, "exit_on_close");
	if (v)
		cfg->exit_on_close = json_is_true(v);
	rc = 0;
out:
	json_decref(o);
	return rc;
}
