/* The engine's defaults, written once (uf_feed_config.h): what uf_feed_config_defaults() gives
 * an embedder or the daemon, and what uf_feed_config_resolve() puts where a field's 0 means
 * "the default". The ring's and the books' own sizes come from ring/ and publish/, which own
 * them, so a default changed there is the engine's default too. */
#include <string.h>

#include "feed/uf_feed_config.h"

#include "feed/arbiter.h"
#include "publish/uf_publish.h"
#include "ring/uf_ring.h"

/* Stores `def` into *field when it is 0 (the "0 = default" fields). */
#define UF_FEED_CFG_ZERO_DEFAULT(field, def)                                                       \
	do {                                                                                       \
		if (!(field))                                                                      \
			(field) = (def);                                                           \
	} while (0)

void uf_feed_config_resolve(struct uf_feed_config *cfg)
{
	struct uf_ring_options ro;
	struct uf_publish_params pp;
	struct uf_arb_params ap;

	uf_ring_options_init(&ro);
	uf_publish_params_default(&pp);
	uf_arb_params_default(&ap);
	UF_FEED_CFG_ZERO_DEFAULT(cfg->sqpoll_idle_ms, UF_FEED_DEFAULT_SQPOLL_IDLE_MS);
	UF_FEED_CFG_ZERO_DEFAULT(cfg->recovery.max_count, UF_FEED_DEFAULT_RECOVERY_MAX_COUNT);
	UF_FEED_CFG_ZERO_DEFAULT(cfg->recovery.timeout_ms, UF_FEED_DEFAULT_RECOVERY_TIMEOUT_MS);
	UF_FEED_CFG_ZERO_DEFAULT(cfg->recovery.queue_packets,
	                         UF_FEED_DEFAULT_RECOVERY_QUEUE_PACKETS);
	UF_FEED_CFG_ZERO_DEFAULT(cfg->recovery.max_requests_per_s,
	                         UF_FEED_DEFAULT_RECOVERY_MAX_RPS);
	UF_FEED_CFG_ZERO_DEFAULT(cfg->recovery.max_in_flight,
	                         UF_FEED_DEFAULT_RECOVERY_MAX_IN_FLIGHT);
	UF_FEED_CFG_ZERO_DEFAULT(cfg->snapshot.timeout_ms, UF_FEED_DEFAULT_SNAPSHOT_TIMEOUT_MS);
	UF_FEED_CFG_ZERO_DEFAULT(cfg->snapshot.buffer_packets,
	                         UF_FEED_DEFAULT_SNAPSHOT_BUFFER_PACKETS);
	UF_FEED_CFG_ZERO_DEFAULT(cfg->snapshot.max_lead, UF_FEED_DEFAULT_SNAPSHOT_MAX_LEAD);
	UF_FEED_CFG_ZERO_DEFAULT(cfg->snapshot.max_hold_ms, UF_FEED_DEFAULT_SNAPSHOT_MAX_HOLD_MS);
	if (cfg->snapshot.max_hold_ms > cfg->snapshot.timeout_ms) /* the attempt bounds it too */
		cfg->snapshot.max_hold_ms = cfg->snapshot.timeout_ms;
	UF_FEED_CFG_ZERO_DEFAULT(cfg->ring.capacity, ro.capacity);
	UF_FEED_CFG_ZERO_DEFAULT(cfg->ring.mode, ro.mode);
	UF_FEED_CFG_ZERO_DEFAULT(cfg->book.depth, ro.depth);
	UF_FEED_CFG_ZERO_DEFAULT(cfg->book.max_orders, pp.max_orders);
	UF_FEED_CFG_ZERO_DEFAULT(cfg->book.max_instruments, pp.max_instruments);
	UF_FEED_CFG_ZERO_DEFAULT(cfg->buffers.count, UF_FEED_DEFAULT_BUFFERS_COUNT);
	UF_FEED_CFG_ZERO_DEFAULT(cfg->buffers.size, UF_FEED_DEFAULT_BUFFERS_SIZE);
	UF_FEED_CFG_ZERO_DEFAULT(cfg->stage_timing_every, UF_FEED_STAGE_EVERY_DEFAULT);
	UF_FEED_CFG_ZERO_DEFAULT(cfg->capture.rotate_mb, UF_FEED_DEFAULT_CAPTURE_ROTATE_MB);
	UF_FEED_CFG_ZERO_DEFAULT(cfg->capture.buffer_mb, UF_FEED_DEFAULT_CAPTURE_BUFFER_MB);
	UF_FEED_CFG_ZERO_DEFAULT(cfg->arbitration.max_jump, ap.max_jump);
	UF_FEED_CFG_ZERO_DEFAULT(cfg->arbitration.jump_confirm, ap.jump_confirm);
	UF_FEED_CFG_ZERO_DEFAULT(cfg->arbitration.session_confirm, ap.session_confirm);
	UF_FEED_CFG_ZERO_DEFAULT(cfg->arbitration.line_silent_ms,
	                         (uint32_t)(ap.line_silent_ns / 1000000u));
}

void uf_feed_config_defaults(struct uf_feed_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	strcpy(cfg->protocol, UF_FEED_DEFAULT_PROTOCOL);
	cfg->backend = UF_FEED_DEFAULT_BACKEND;
	cfg->cpu = UF_FEED_DEFAULT_CPU;
	cfg->sqpoll_cpu = UF_FEED_DEFAULT_CPU;
	cfg->numa_node = UF_FEED_DEFAULT_NUMA_NODE;
	cfg->idle_pause = UF_FEED_DEFAULT_IDLE_PAUSE; /* AUTO: the back end decides */
	/* The defaults a 0 cannot stand for: 0 retries, no wait, no snapshot at start,
	 * "never" for the snapshot triggers and no re-load of uncertain books are values of
	 * their own. */
	cfg->recovery.retries = UF_FEED_DEFAULT_RECOVERY_RETRIES;
	cfg->recovery.wait_ms = UF_FEED_DEFAULT_RECOVERY_WAIT_MS;
	cfg->recovery.wait_packets = UF_FEED_DEFAULT_RECOVERY_WAIT_PACKETS;
	cfg->snapshot.on_start = UF_FEED_DEFAULT_SNAPSHOT_ON_START;
	cfg->snapshot.max_gap_messages = UF_FEED_DEFAULT_SNAPSHOT_MAX_GAP_MESSAGES;
	cfg->snapshot.max_gap_age_ms = UF_FEED_DEFAULT_SNAPSHOT_MAX_GAP_AGE_MS;
	cfg->snapshot.reload_uncertain = UF_FEED_DEFAULT_SNAPSHOT_RELOAD_UNCERTAIN;
	uf_feed_config_resolve(cfg);
}
