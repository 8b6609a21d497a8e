/* uringfeed configuration: what one JSON file describes (see configs/).
 *
 * Parsed by uf_config_load() (daemon/config.c, jansson) into these plain structs, which the
 * daemon hands to each feed thread. Key names in the JSON are the field names below, nested
 * as in the structs (e.g. feeds[].lines[].group, feeds[].ring.capacity). Every optional key
 * has a documented default: UF_CFG_DEFAULT_* below, and the table in configs/README.md. */
#ifndef UF_CONFIG_H
#define UF_CONFIG_H

#include <netinet/in.h>
#include <stdint.h>

#include "feed/uf_feed_config.h"

#define UF_CFG_MAX_FEEDS 16

/* Defaults of the optional keys (configs/README.md has the same table with the ranges). */
#define UF_CFG_DEFAULT_STATUS_LISTEN          "127.0.0.1:8080" /* status.listen */
#define UF_CFG_DEFAULT_STATUS_ENABLED         1                /* status.enabled */
#define UF_CFG_DEFAULT_LOG_LEVEL              "info"           /* log.level */
#define UF_CFG_DEFAULT_LOG_JOURNAL            "auto"           /* log.journal */
#define UF_CFG_DEFAULT_STATUS_PROBE_LISTEN    ""               /* status.probe_listen: off */
#define UF_CFG_DEFAULT_READY_SILENCE_MS       2000             /* status.ready_silence_ms */
#define UF_CFG_DEFAULT_STAGE_TIMING           1                /* feeds[].stage_timing */
#define UF_CFG_DEFAULT_PROTOCOL               UF_FEED_DEFAULT_PROTOCOL
#define UF_CFG_DEFAULT_CPU                    UF_FEED_DEFAULT_CPU /* cpu, sqpoll_cpu: not pinned */
#define UF_CFG_DEFAULT_NUMA_NODE              UF_FEED_DEFAULT_NUMA_NODE /* node of `cpu` */
#define UF_CFG_DEFAULT_SQPOLL_IDLE_MS         UF_FEED_DEFAULT_SQPOLL_IDLE_MS
#define UF_CFG_DEFAULT_INTERFACE              "0.0.0.0" /* lines[].interface */
#define UF_CFG_DEFAULT_RECOVERY_MAX_COUNT     UF_FEED_DEFAULT_RECOVERY_MAX_COUNT
#define UF_CFG_DEFAULT_RECOVERY_TIMEOUT_MS    UF_FEED_DEFAULT_RECOVERY_TIMEOUT_MS
#define UF_CFG_DEFAULT_RECOVERY_RETRIES       UF_FEED_DEFAULT_RECOVERY_RETRIES
#define UF_CFG_DEFAULT_RECOVERY_WAIT_MS       UF_FEED_DEFAULT_RECOVERY_WAIT_MS
#define UF_CFG_DEFAULT_RECOVERY_WAIT_PACKETS  UF_FEED_DEFAULT_RECOVERY_WAIT_PACKETS
#define UF_CFG_DEFAULT_RECOVERY_QUEUE_PACKETS UF_FEED_DEFAULT_RECOVERY_QUEUE_PACKETS
#define UF_CFG_DEFAULT_RECOVERY_MAX_RPS       UF_FEED_DEFAULT_RECOVERY_MAX_RPS
#define UF_CFG_DEFAULT_RECOVERY_MAX_IN_FLIGHT                                                      \
	UF_FEED_DEFAULT_RECOVERY_MAX_IN_FLIGHT /* re-requests outstanding at once */
#define UF_CFG_DEFAULT_RING_MODE     "0600"    /* ring.capacity, book.*: ring/ and publish/ */
#define UF_CFG_DEFAULT_BUFFERS_COUNT UF_FEED_DEFAULT_BUFFERS_COUNT
#define UF_CFG_DEFAULT_BUFFERS_SIZE  UF_FEED_DEFAULT_BUFFERS_SIZE
#define UF_CFG_DEFAULT_SNAPSHOT_ON_START                                                           \
	UF_FEED_DEFAULT_SNAPSHOT_ON_START /* snapshot.* (server: none) */
#define UF_CFG_DEFAULT_SNAPSHOT_MAX_GAP_MESSAGES UF_FEED_DEFAULT_SNAPSHOT_MAX_GAP_MESSAGES
#define UF_CFG_DEFAULT_SNAPSHOT_MAX_GAP_AGE_MS   UF_FEED_DEFAULT_SNAPSHOT_MAX_GAP_AGE_MS
#define UF_CFG_DEFAULT_SNAPSHOT_TIMEOUT_MS       UF_FEED_DEFAULT_SNAPSHOT_TIMEOUT_MS
#define UF_CFG_DEFAULT_SNAPSHOT_BUFFER_PACKETS   UF_FEED_DEFAULT_SNAPSHOT_BUFFER_PACKETS
#define UF_CFG_DEFAULT_SNAPSHOT_MAX_LEAD         UF_FEED_DEFAULT_SNAPSHOT_MAX_LEAD
#define UF_CFG_DEFAULT_SNAPSHOT_MAX_HOLD_MS      UF_FEED_DEFAULT_SNAPSHOT_MAX_HOLD_MS
#define UF_CFG_DEFAULT_SNAPSHOT_RELOAD_UNCERTAIN UF_FEED_DEFAULT_SNAPSHOT_RELOAD_UNCERTAIN

struct uf_config {
	char path[256];                   /* file it came from */
	struct sockaddr_in status_listen; /* "status.listen", default 127.0.0.1:8080 */
	int status_enabled;               /* default 1 */
	struct sockaddr_in probe_listen;  /* "status.probe_listen": a second, small endpoint
	                                   * serving only /health and /ready */
	int probe_enabled;                /* 1 when probe_listen is given */
	uint32_t ready_silence_ms;        /* "status.ready_silence_ms": a line silent this
	                                   * long during a session makes /ready 503 */
	int log_level;                    /* "log.level": 0 error .. 3 debug, default 2 (info) */
	int log_journal;                  /* "log.journal": enum uf_log_journal */
	int nfeeds;
	struct uf_feed_config feeds[UF_CFG_MAX_FEEDS];
};

/* Parses and validates `path`. On error writes one line to `err` (file:line:col for syntax,
 * key path and value for semantics) and returns -EINVAL (-errno when unreadable).
 * The caller frees with uf_config_free(). */
int uf_config_load(const char *path, struct uf_config *cfg, char *err, size_t errlen);
int uf_config_load_string(const char *json, struct uf_config *cfg, char *err, size_t errlen);
void uf_config_free(struct uf_config *cfg);

/* uf_config_load() with flags. UF_CFG_NO_HOST_CHECKS skips the checks against THIS machine
 * (CPUs and NUMA nodes exist and are usable, memory suffices): for validating a production file on
 * a build host (`uringfeed --check-config FILE --no-host-checks`). Everything else is checked. */
#define UF_CFG_NO_HOST_CHECKS 1u
/* UF_CFG_NO_RESOURCE_CHECKS skips only the memory check (the feeds' books, rings and buffers
 * against MemAvailable): for a SIGHUP reload, whose running feeds already hold theirs. */
#define UF_CFG_NO_RESOURCE_CHECKS 2u
int uf_config_load_ex(const char *path, unsigned flags, struct uf_config *cfg, char *err,
                      size_t errlen);

/* Whether `sym` (NUL-terminated, trimmed) passes feed `f`'s symbol filter. O(log n): the
 * loader keeps symbols sorted. An empty filter passes everything. */
int uf_config_symbol_wanted(const struct uf_feed_config *f, const char *sym);

/* 1 when feed configurations a and b are the same but for their symbol filter (what a SIGHUP
 * reload can apply; anything else needs a restart), compared field by field: never by memcmp,
 * which would compare padding and the bytes after a string's NUL. A field added to struct
 * uf_feed_config must be added here (test_daemon_config checks each one it knows). */
int uf_config_feed_same_except_symbols(const struct uf_feed_config *a,
                                       const struct uf_feed_config *b);

#endif /* UF_CONFIG_H */
