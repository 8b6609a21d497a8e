/* The feed engine's setup and teardown: sockets, books, ring, arbiter, filter. The feed
 * thread's work is pipeline.c; see uf_feed.h for the contract and docs/feed.md for the
 * design and figures. */
#include "feed/uf_feed.h"

#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/uf_compiler.h"
#include "common/uf_err.h"
#include "feed/feed_internal.h"
#include "feed/feed_log.h"
#include "feed/mcast.h"
#include "ring/uf_ring.h"
#include "ring/uf_ring_layout.h"

#define UF_FEED_RCVBUF                                                                             \
	(16 << 20) /* socket receive buffer: absorbs bursts during recovery                        \
	            * and while the feed thread is descheduled */

const struct uf_feed_stats *uf_feed_stats(const struct uf_feed *f)
{
	return &f->stats;
}

const char *uf_feed_backend_name(const struct uf_feed *f)
{
	const char *n = uf_backend_name(f->backend);
	return n ? n : "unknown";
}

const char *uf_feed_book_memory(const struct uf_feed *f)
{
	return uf_publish_page_kind_name(uf_publish_book_memory(f->pub, NULL, NULL));
}

const char *uf_feed_error(const struct uf_feed *f)
{
	return f->err;
}

struct uf_ring *uf_feed_ring(const struct uf_feed *f)
{
	return f->sink.ring;
}

struct uf_journal *uf_feed_journal(const struct uf_feed *f)
{
	return f->sink.journal;
}

int uf_feed_set_symbols(struct uf_feed *f, const char (*symbols)[9], uint32_t n)
{
	return uf_filter_set(&f->filter, symbols, n);
}

/* The stage-timing and busy clock, calibrated once per process (a 20 ms sleep) on the first create:
 * on the control thread, so no feed thread sleeps while its sockets fill. */
static struct uf_tick_clock tick_clock;
static pthread_once_t tick_once = PTHREAD_ONCE_INIT;

static void uf_feed_tick_calibrate(void)
{
	uf_tick_init(&tick_clock, 20000000);
}

uint64_t uf_feed_ring_estimate(const struct uf_feed_config *given)
{
	struct uf_feed_config cfg = *given;
	uf_feed_config_resolve(&cfg); /* the sizes uf_feed_create will use */
	uint64_t cap = cfg.ring.capacity;
	uint32_t depth = cfg.book.depth;
	if (cap > (uint64_t)UF_CFG_RING_CAPACITY_MAX || depth > UF_CFG_BOOK_DEPTH_MAX)
		return 0;
	return cap * sizeof(struct uf_record) +
	       (uint64_t)cfg.book.max_instruments * uf_image_entry_size(depth);
}

uint64_t uf_feed_memory_estimate(const struct uf_feed_config *given)
{
	struct uf_feed_config r = *given;
	const struct uf_feed_config *cfg = &r;
	uf_feed_config_resolve(&r); /* the sizes uf_feed_create will use */
	struct uf_publish_params pp;
	uf_publish_params_default(&pp);
	pp.max_orders = cfg->book.max_orders;
	pp.max_instruments = cfg->book.max_instruments;
	uint64_t books = uf_publish_memory(&pp);
	uint64_t ring = uf_feed_ring_estimate(cfg);
	if (books == 0 || ring == 0)
		return 0;
	uint64_t bufs = (uint64_t)cfg->buffers.count * cfg->buffers.size;
	uint64_t queue = cfg->recovery.enabled ? (uint64_t)cfg->recovery.queue_packets *
	                                             (sizeof(struct uf_arb_slot) + 8)
	                                       : 0;
	uint64_t capture = cfg->capture.enabled ? (uint64_t)cfg->capture.buffer_mb << 20 : 0;
	return books + ring + bufs + queue + capture + sizeof(struct uf_feed);
}

/* Snapshot client tap (feed/soup_client.h): its TCP bytes into the capture's last interface.
 * On the feed thread, which polls the snapshot client. */
static void uf_feed_capture_tap(void *ctx, const uint8_t *p, size_t n)
{
	struct uf_feed *f = ctx;
	uf_capture_stream(f->cap, (unsigned)f->cap->p.nif - 1, p, n);
}

/* The capture's interfaces: one per line (its group and port), then the re-request socket's
 * answers, then the snapshot server's TCP data. Names and descriptions are what tshark shows per
 * packet (frame.interface_name). */
static int uf_feed_capture_setup(struct uf_feed *f, char *err, size_t errlen)
{
	const struct uf_feed_config *cfg = &f->cfg;
	struct uf_capture_params cp;
	memset(&cp, 0, sizeof(cp));
	snprintf(cp.feed, sizeof(cp.feed), "%s", cfg->name);
	snprintf(cp.dir, sizeof(cp.dir), "%s", cfg->capture.dir);
	cp.rotate_bytes = (uint64_t)cfg->capture.rotate_mb << 20;
	cp.max_total_bytes = cfg->capture.max_total_bytes;
	cp.buffer_bytes = (uint64_t)cfg->capture.buffer_mb << 20;
	for (int i = 0; i < cfg->nlines; i++) {
		const struct uf_line_config *l = &cfg->lines[i];
		char grp[INET_ADDRSTRLEN];
		inet_ntop(AF_INET, &l->group, grp, sizeof(grp));
		struct uf_capture_if *ci = &cp.ifs[cp.nif++];
		snprintf(ci->name, sizeof(ci->name), "%s %s:%u", l->name, grp, l->port);
		snprintf(ci->desc, sizeof(ci->desc), "feed %s line %s: group %s port %u", cfg->name,
		         l->name, grp, l->port);
		ci->dst_addr = l->group.s_addr;
		ci->dst_port = htons(l->port);
	}
	if (f->req_fd >= 0) {
		char srv[INET_ADDRSTRLEN];
		inet_ntop(AF_INET, &cfg->recovery.server.sin_addr, srv, sizeof(srv));
		struct uf_capture_if *ci = &cp.ifs[cp.nif++];
		struct sockaddr_in me = {0};
		socklen_t ml = sizeof(me);
		(void)getsockname(f->req_fd, (struct sockaddr *)&me, &ml);
		snprintf(ci->name, sizeof(ci->name), "rerequest %s:%u", srv,
		         ntohs(cfg->recovery.server.sin_port));
		snprintf(ci->desc, sizeof(ci->desc),
		         "feed %s: MoldUDP64 re-request answers from %s:%u", cfg->name, srv,
		         ntohs(cfg->recovery.server.sin_port));
		ci->dst_addr = me.sin_addr.s_addr;
		ci->dst_port = me.sin_port;
	}
	if (cfg->snapshot.enabled) {
		char srv[INET_ADDRSTRLEN];
		inet_ntop(AF_INET, &cfg->snapshot.server.sin_addr, srv, sizeof(srv));
		struct uf_capture_if *ci = &cp.ifs[cp.nif++];
		snprintf(ci->name, sizeof(ci->name), "snapshot %s:%u", srv,
		         ntohs(cfg->snapshot.server.sin_port));
		snprintf(ci->desc, sizeof(ci->desc),
		         "feed %s: SoupBinTCP/GLIMPSE snapshot sessions from %s:%u (server to us)",
		         cfg->name, srv, ntohs(cfg->snapshot.server.sin_port));
		ci->src_addr = cfg->snapshot.server.sin_addr.s_addr;
		ci->src_port = cfg->snapshot.server.sin_port;
	}
	f->cap = calloc(1, sizeof(*f->cap));
	if (!f->cap)
		return uf_err_rc(err, errlen, -ENOMEM, "feed %s: capture", cfg->name);
	char why[200];
	int rc = uf_capture_open(f->cap, &cp, &f->stats, why, sizeof(why));
	if (rc < 0) {
		free(f->cap);
		f->cap = NULL;
		return uf_err_rc(err, errlen, rc, "feed %s: %s", cfg->name, why);
	}
	if (cfg->snapshot.enabled) { /* the snapshot client records what it reads */
		f->snap.p.tap = uf_feed_capture_tap;
		f->snap.p.tap_ctx = f;
	}
	return 0;
}

/* The arbiter's trust thresholds (0 = its default) and the lines' expected sources. */
static int uf_feed_arb_setup(struct uf_feed *f, const struct uf_feed_config *cfg, char *err,
                             size_t errlen)
{
	struct uf_arb_params ap = {
	    /* resolved: 0 in the embedder's config is the arbiter's default already */
	    .max_jump = cfg->arbitration.max_jump,
	    .jump_confirm = cfg->arbitration.jump_confirm,
	    .session_confirm = cfg->arbitration.session_confirm,
	    .line_silent_ns = (uint64_t)cfg->arbitration.line_silent_ms * 1000000ull,
	};
	int rc = uf_arb_set_params(&f->arb, &ap);
	if (rc < 0)
		return uf_err_rc(err, errlen, rc,
		                 "feed %s: arbitration parameters out of range (jump_confirm "
		                 "1..%d)",
		                 cfg->name, UF_ARB_CONFIRM_MAX);
	for (int i = 0; i < cfg->nlines; i++) {
		if (!cfg->lines[i].source.s_addr)
			continue;
		rc = uf_arb_set_line_source(&f->arb, (unsigned)i, cfg->lines[i].source);
		if (rc < 0)
			return uf_err_rc(err, errlen, rc, "feed %s line %s: source", cfg->name,
			                 cfg->lines[i].name);
	}
	return 0;
}

int uf_feed_create(const struct uf_feed_config *given, struct uf_feed **out, char *err,
                   size_t errlen)
{
	int rc;
	struct uf_feed *f = aligned_alloc(UF_CACHELINE, (sizeof(*f) + UF_CACHELINE - 1) &
	                                                    ~(size_t)(UF_CACHELINE - 1));
	if (!f) {
		uf_err_set(err, errlen, "out of memory");
		return -ENOMEM;
	}
	memset(f, 0, sizeof(*f));
	/* Every part below reads the copy, whose "0 = default" fields hold the default now. */
	f->cfg = *given;
	uf_feed_config_resolve(&f->cfg);
	f->cfg.symbols = NULL;
	f->cfg.nsymbols = 0;
	const struct uf_feed_config *cfg = &f->cfg;
	f->req_fd = -1;
	f->tm.stages = f->stats.stages;
	for (int i = 0; i < UF_INGEST_MAX_SRC; i++)
		f->fds[i] = -1;
	f->backend = cfg->backend;
	if (!cfg->no_stage_timing || cfg->busy_clock) { /* both read it (pipeline.c) */
		pthread_once(&tick_once, uf_feed_tick_calibrate);
		f->tm.clock = tick_clock;
	}
	if (cfg->nlines < 1 || cfg->nlines > UF_CFG_MAX_LINES) {
		uf_err_set(err, errlen, "feed %s: %d lines (1 or 2 supported)", cfg->name,
		           cfg->nlines);
		rc = -EINVAL;
		goto out_free;
	}
	if (!uf_backend_name(cfg->backend)) {
		uf_err_set(err, errlen, "feed %s: unknown back end %d", cfg->name,
		           (int)cfg->backend);
		rc = -EINVAL;
		goto out_free;
	}
	f->proto = uf_proto_find(cfg->protocol);
	if (!f->proto) {
		char names[200];
		uf_err_set(err, errlen, "feed %s: protocol \"%s\" is not supported (supported: %s)",
		           cfg->name, cfg->protocol, uf_proto_names(names, sizeof(names)));
		rc = -EPROTONOSUPPORT;
		goto out_free;
	}
	/* Both book kinds live in the one publisher (order books: publish.c; price-level
	 * and level-1 books: publish/uf_venue.h) and write the same records. */
	if (f->proto->book != UF_BOOK_ORDERS && f->proto->book != UF_BOOK_LEVELS) {
		uf_err_set(err, errlen,
		           "feed %s: protocol %s feeds a book kind the engine has not got",
		           cfg->name, f->proto->name);
		rc = -EPROTONOSUPPORT;
		goto out_free;
	}
	if (f->proto->state_size) {
		size_t sz = (f->proto->state_size + UF_CACHELINE - 1) & ~(size_t)(UF_CACHELINE - 1);
		f->proto_state = aligned_alloc(UF_CACHELINE, sz);
		if (!f->proto_state) {
			uf_err_set(err, errlen, "out of memory");
			rc = -ENOMEM;
			goto out_free;
		}
		memset(f->proto_state, 0, sz);
	}
	f->stats.nlines = (uint64_t)cfg->nlines;
	for (int i = 0; i < cfg->nlines; i++) {
		memcpy(f->stats.line_names[i], cfg->lines[i].name, UF_CFG_NAME_MAX);
		f->stats.line_names[i][UF_CFG_NAME_MAX - 1] = '\0';
	}
	char why[200];
	for (int i = 0; i < cfg->nlines; i++) {
		const struct uf_line_config *l = &cfg->lines[i];
		rc = uf_mcast_open_rx(l->group, l->port, l->interface, UF_FEED_RCVBUF, why,
		                      sizeof(why));
		if (rc < 0) {
			uf_err_set(err, errlen, "feed %s line %s: %s", cfg->name, l->name, why);
			goto out_close;
		}
		f->fds[f->nsrc++] = rc;
		if (l->source.s_addr &&
		    (rc = uf_mcast_join_source(rc, l->group, l->source, l->interface, why,
		                               sizeof(why))) < 0) {
			uf_err_set(err, errlen, "feed %s line %s: source: %s", cfg->name, l->name,
			           why);
			goto out_close;
		}
		rc = f->fds[f->nsrc - 1];
		/* The kernel reports twice what was set; less means FORCE was refused (no
		 * CAP_NET_ADMIN) and net.core.rmem_max capped it: bursts may overflow. */
		int got = uf_mcast_rcvbuf(rc);
		if (got >= 0 && got < UF_FEED_RCVBUF)
			uf_feed_log_warn(
			    "feed %s line %s: socket receive buffer is %d bytes, wanted %d: "
			    "raise net.core.rmem_max or grant CAP_NET_ADMIN",
			    cfg->name, l->name, got / 2, UF_FEED_RCVBUF);
	}
	if (cfg->recovery.enabled) {
		struct in_addr any = {.s_addr = htonl(INADDR_ANY)};
		rc = uf_mcast_open_unicast(any, 0, UF_FEED_RCVBUF, why, sizeof(why));
		if (rc < 0) {
			uf_err_set(err, errlen, "feed %s re-request socket: %s", cfg->name, why);
			goto out_close;
		}
		f->req_fd = rc;
		f->fds[f->nsrc++] = rc;
	}

	struct uf_publish_params pp;
	uf_publish_params_default(&pp);
	pp.max_orders = cfg->book.max_orders;
	pp.max_instruments = cfg->book.max_instruments;
	pp.numa_node = cfg->numa_node;
	rc = uf_publish_create(&pp, &f->pub);
	if (rc < 0) {
		uf_err_rc(err, errlen, rc, "feed %s: creating books (max_orders %llu)", cfg->name,
		          (unsigned long long)pp.max_orders);
		goto out_close;
	}
	{
		/* Which pages the books got decides how often an order lookup misses the TLB. */
		uint64_t huge, all;
		unsigned kind = uf_publish_book_memory(f->pub, &huge, &all);
		if (kind == UF_PUB_PAGE_4K)
			uf_feed_log_warn(
			    "feed %s: order and level tables (%llu MiB) on 4 KiB pages: "
			    "no 2 MiB hugetlb pages free (vm.nr_hugepages) and no "
			    "transparent huge pages granted; books run slower",
			    cfg->name, (unsigned long long)(all >> 20));
		else
			uf_feed_log_info(
			    "feed %s: order and level tables on %s pages (%llu of %llu "
			    "MiB huge)",
			    cfg->name, uf_publish_page_kind_name(kind),
			    (unsigned long long)(huge >> 20), (unsigned long long)(all >> 20));
	}
	rc = uf_filter_init(&f->filter, uf_publish_max_instruments(f->pub),
	                    (const char(*)[9])given->symbols, given->nsymbols);
	if (rc < 0) {
		uf_err_set(err, errlen, "feed %s: symbol filter: %s", cfg->name,
		           rc == -EINVAL ? "a symbol is longer than 8 characters" : strerror(-rc));
		goto out_filter;
	}
	rc = uf_sink_open(&f->sink, cfg, f->pub, why, sizeof(why));
	if (rc < 0) {
		uf_err_set(err, errlen, "feed %s: ring: %s", cfg->name, why);
		goto out_filter;
	}
	{
		/* What the kernel granted the ring and image (read back, not inferred from a
		 * setting): small pages cost a TLB miss per image entry a flush touches. */
		static const char *const kinds[] = {"4 KiB", "transparent huge", "hugetlbfs"};
		int hp = uf_ring_hugepages(f->sink.ring);
		uf_feed_log_info("feed %s: ring %s on %s pages%s", cfg->name, f->sink.ring->name,
		                 kinds[hp >= 0 && hp <= 2 ? hp : 0],
		                 hp ? ""
		                    : " (huge pages: mount its tmpfs with huge=within_size, or a "
		                      "hugetlbfs ring.dir)");
	}
	f->step.pub = f->pub;
	f->step.recs = f->recs;
	f->step.rec_cap = uf_sink_max_batch(&f->sink);
	if (f->step.rec_cap > UF_FEED_RECS)
		f->step.rec_cap = UF_FEED_RECS;
	f->step.step_cap = f->step.rec_cap;
	struct uf_arb_cb cb;
	uf_feed_pipeline_callbacks(f, &cb);
	rc = uf_arb_init(&f->arb, cfg, f->proto->framing, f->req_fd, cfg->buffers.size, &f->stats,
	                 &cb);
	if (rc < 0) {
		uf_err_rc(err, errlen, rc, "feed %s: recovery queue of %u packets", cfg->name,
		          cfg->recovery.queue_packets);
		goto out_ring;
	}
	rc = uf_feed_arb_setup(f, cfg, err, errlen);
	if (rc < 0)
		goto out_arb;
	rc = uf_feed_snapshot_init(&f->snap, &f->cfg, f->proto, &f->step, &f->arb, &f->stats);
	if (rc == -ENOTSUP) {
		uf_err_set(err, errlen, "feed %s: protocol %s has no snapshot service", cfg->name,
		           f->proto->name);
		goto out_arb;
	}
	if (rc < 0) {
		uf_err_rc(err, errlen, rc, "feed %s: snapshot buffer of %u packets", cfg->name,
		          cfg->snapshot.buffer_packets);
		goto out_arb;
	}
	if (cfg->capture.enabled && (rc = uf_feed_capture_setup(f, err, errlen)) < 0)
		goto out_arb;
	*out = f;
	return 0;

out_arb:
	uf_feed_snapshot_fini(&f->snap);
	uf_arb_fini(&f->arb);
out_ring:
	uf_sink_close(&f->sink);
out_filter:
	uf_filter_fini(&f->filter);
	uf_publish_destroy(f->pub);
out_close:
	for (int i = 0; i < f->nsrc; i++)
		close(f->fds[i]);
out_free:
	free(f->proto_state);
	free(f);
	return rc;
}

void uf_feed_destroy(struct uf_feed *f)
{
	if (!f)
		return;
	if (f->cap) {
		uf_capture_close(f->cap); /* writes what the feed handed over, then stops */
		free(f->cap);
	}
	uf_feed_snapshot_fini(&f->snap);
	uf_arb_fini(&f->arb);
	uf_sink_close(&f->sink);
	uf_filter_fini(&f->filter);
	uf_publish_destroy(f->pub);
	for (int i = 0; i < f->nsrc; i++)
		close(f->fds[i]);
	free(f->proto_state);
	free(f);
}
