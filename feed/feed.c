/* The feed engine: sockets, back end, arbiter, decode, books, ring, in one pinned loop.
 * See uf_feed.h for the contract and docs/feed.md for the design and figures. */
#include "feed/uf_feed.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/uf_compiler.h"
#include "feed/feed_log.h"
#include "common/uf_time.h"
#include "decode/uf_batch.h"
#include "decode/uf_decode.h"
#include "feed/arbiter.h"
#include "feed/feed_ring.h"
#include "feed/ingest.h"
#include "feed/mcast.h"
#include "publish/uf_publish.h"

#define UF_FEED_RECS 1024 /* records buffered per packet before they go to the ring */
#define UF_FEED_RCVBUF                                                                             \
	(16 << 20) /* socket receive buffer: absorbs bursts during recovery                        \
	            * and while the feed thread is descheduled */
#define UF_FEED_DROPS_POLL_NS 100000000ull /* idle: re-read the sockets' drop totals */
#define UF_FEED_MAX_DEPTH     64           /* image levels per side we copy at most */

struct uf_feed_filter {
	uint32_t n;      /* symbols (0 = everything passes) */
	char (*syms)[9]; /* sorted, NUL-terminated, trimmed */
};

struct uf_feed {
	struct uf_feed_config cfg;  /* copy (symbols not kept) */
	struct uf_feed_stats stats; /* counters (uf_feed_stats.h) */
	int nsrc;                   /* sockets: lines, then the re-request socket */
	int fds[UF_INGEST_MAX_SRC]; /* sockets by source index */
	int req_fd;                 /* re-request socket, -1 without recovery */
	struct uf_ingest ig;        /* receive back end (set up by uf_feed_run) */
	struct uf_arb arb;          /* arbitration and recovery */
	struct uf_publisher *pub;   /* books and records */
	struct uf_ring *ring;       /* shared-memory ring and book image */
	enum uf_backend backend;    /* back end in use */
	uint32_t depth;             /* image depth per side */
	uint32_t max_inst;          /* instrument ids 0..max_inst-1 */
	size_t nrec;                /* records waiting in recs */
	size_t rec_cap;             /* recs used per publish step: UF_FEED_RECS, or less
	                             * when the ring takes fewer in one publish */
	uint64_t lat_msgs;          /* messages behind those records (latency samples) */
	uint64_t lat_rx;            /* their receive time */
	uint32_t ndirty;            /* instruments whose image book must be refreshed */
	uint32_t *dirty;            /* their ids */
	uint8_t *is_dirty;          /* per instrument: listed in dirty[] */
	struct uf_level bids[UF_FEED_MAX_DEPTH];      /* scratch for image refreshes */
	struct uf_level asks[UF_FEED_MAX_DEPTH];      /* scratch for image refreshes */
	struct uf_itch_msg msgs[UF_DECODE_FUSED_MAX]; /* one packet's decoded messages */
	int8_t msg_rc[UF_DECODE_FUSED_MAX];           /* their decode results */
	char err[256];                                /* last error */
	uint64_t drops_read_ns; /* when the sockets' drop totals were last read */
	/* symbol filter: books for all, records and image only for wanted instruments */
	int filter_on;                 /* a filter is active (else everything passes) */
	uint8_t *wanted;               /* per instrument: passes the filter */
	struct uf_feed_filter filt[2]; /* double buffer: [active] read by the feed thread */
	uint32_t filt_active;          /* slot the feed thread uses (feed thread writes) */
	uint32_t filt_pending;         /* 0, or slot + 1 published by uf_feed_set_symbols */
	pthread_mutex_t filt_lock;     /* serialises uf_feed_set_symbols callers */
	UF_ALIGNED(UF_CACHELINE) struct uf_record recs[UF_FEED_RECS]; /* one packet's records */
};

const struct uf_feed_stats *uf_feed_stats(const struct uf_feed *f)
{
	return &f->stats;
}

const char *uf_feed_backend_name(const struct uf_feed *f)
{
	const char *n = uf_backend_name(f->backend);
	return n ? n : "unknown";
}

const char *uf_feed_error(const struct uf_feed *f)
{
	return f->err;
}

struct uf_ring *uf_feed_ring(const struct uf_feed *f)
{
	return f->ring;
}

static int uf_feed_sym_cmp(const void *a, const void *b)
{
	return strcmp(a, b);
}

/* Copies and sorts a symbol list into filter slot `fl`. Cold. */
static int uf_feed_filter_fill(struct uf_feed_filter *fl, const char (*symbols)[9], uint32_t n)
{
	char(*v)[9] = NULL;
	if (n) {
		v = calloc(n, sizeof(*v));
		if (!v)
			return -ENOMEM;
		for (uint32_t i = 0; i < n; i++) {
			if (memchr(symbols[i], '\0', 9) == NULL) {
				free(v);
				return -EINVAL;
			}
			memcpy(v[i], symbols[i], 9);
		}
		qsort(v, n, sizeof(*v), uf_feed_sym_cmp);
	}
	free(fl->syms);
	fl->syms = v;
	fl->n = n;
	return 0;
}

/* Whether the 8 space-padded symbol bytes pass filter `fl`. */
static int uf_feed_filter_wants(const struct uf_feed_filter *fl, const char *sym8)
{
	char s[9];
	size_t len = 8;
	memcpy(s, sym8, 8);
	while (len && s[len - 1] == ' ')
		len--;
	s[len] = '\0';
	return fl->n == 0 ||
	       bsearch(s, fl->syms, fl->n, sizeof(*fl->syms), uf_feed_sym_cmp) != NULL;
}

int uf_feed_set_symbols(struct uf_feed *f, const char (*symbols)[9], uint32_t n)
{
	int rc = 0;
	pthread_mutex_lock(&f->filt_lock);
	/* The feed thread takes a published slot between batches; the inactive slot is only
	 * ours once it did (pending == 0). Bounded wait. */
	for (int i = 0; i < 1000 && uf_load_acquire_u32(&f->filt_pending) != 0; i++)
		usleep(1000);
	if (uf_load_acquire_u32(&f->filt_pending) != 0) {
		rc = -EBUSY;
		goto out_unlock;
	}
	uint32_t slot = 1 - uf_load_acquire_u32(&f->filt_active);
	rc = uf_feed_filter_fill(&f->filt[slot], symbols, n);
	if (rc == 0)
		uf_store_release_u32(&f->filt_pending, slot + 1); /* the slot's contents first */
out_unlock:
	pthread_mutex_unlock(&f->filt_lock);
	return rc;
}

/* ---- the hot path ---- */

/* Drops the records of instruments the symbol filter does not want. */
static void uf_feed_filter_records(struct uf_feed *f)
{
	const struct uf_feed_filter *fl = &f->filt[f->filt_active];
	size_t k = 0;
	for (size_t i = 0; i < f->nrec; i++) {
		const struct uf_record *r = &f->recs[i];
		uint32_t id = r->instrument;
		if (r->kind == UF_REC_INSTRUMENT && id < f->max_inst)
			f->wanted[id] = (uint8_t)uf_feed_filter_wants(fl, (const char *)&r->ref);
		if (r->kind == UF_REC_GAP || id == 0 || (id < f->max_inst && f->wanted[id])) {
			if (k != i)
				f->recs[k] = *r;
			k++;
		}
	}
	f->nrec = k;
}

/* Sends the records of the current packet to the ring in one publish, then updates the
 * book image of what they touched inside one image batch stamped with the ring sequence
 * after them: a late consumer's snapshot holds all of this step or none of it, so its
 * snapshot-then-stream handover has no gap. Then records the wire-to-publish latency. */
static void uf_feed_flush(struct uf_feed *f)
{
	if (UF_UNLIKELY(f->filter_on) && f->nrec)
		uf_feed_filter_records(f);
	if (f->nrec) {
		uint64_t seq = uf_feed_ring_publish(f->ring, f->recs, f->nrec);
		uf_stat_add(&f->stats.records, f->nrec);
		uf_feed_ring_batch_begin(f->ring);
		for (size_t i = 0; i < f->nrec; i++) {
			const struct uf_record *r = &f->recs[i];
			if (r->kind == UF_REC_LEVEL) {
				if (r->instrument < f->max_inst && !f->is_dirty[r->instrument]) {
					f->is_dirty[r->instrument] = 1;
					f->dirty[f->ndirty++] = r->instrument;
				}
			} else if (r->kind == UF_REC_TRADE || r->kind == UF_REC_STATUS ||
			           r->kind == UF_REC_INSTRUMENT) {
				uf_feed_ring_image_record(f->ring, r, seq);
			}
		}
		for (uint32_t i = 0; i < f->ndirty; i++) {
			uint32_t id = f->dirty[i];
			int nb = uf_publish_top(f->pub, id, UF_SIDE_BID, f->bids, f->depth);
			int na = uf_publish_top(f->pub, id, UF_SIDE_ASK, f->asks, f->depth);
			uf_feed_ring_set_book(f->ring, id, f->bids, nb > 0 ? (uint32_t)nb : 0,
			                      f->asks, na > 0 ? (uint32_t)na : 0, seq, f->lat_rx);
			f->is_dirty[id] = 0;
		}
		uf_feed_ring_batch_end(f->ring, seq);
		f->ndirty = 0;
		f->nrec = 0;
	}
	if (f->lat_msgs) {
		if (f->lat_rx) {
			int64_t d = (int64_t)(uf_now_realtime_ns() - f->lat_rx);
			uf_lat_record_n(&f->stats.latency, d, f->lat_msgs);
		}
		f->lat_msgs = 0;
	}
}

static void uf_feed_count_itch_error(struct uf_feed *f, int rc, uint16_t len)
{
	if (len == 0)
		uf_stat_add(&f->stats.decode_empty_message, 1);
	else if (rc == -ENOMSG)
		uf_stat_add(&f->stats.decode_unknown_type, 1);
	else
		uf_stat_add(&f->stats.decode_bad_length, 1);
}

/* Applies n decoded messages with consecutive sequences from first_seq through the
 * publisher's batch path (prefetching order slots and books ahead, one clock read per call
 * for the publish delay), flushing to the ring whenever the record buffer fills. */
static void uf_feed_apply_run(struct uf_feed *f, const struct uf_itch_msg *msgs, size_t n,
                              uint64_t first_seq, uint64_t rx_ns)
{
	while (n) {
		/* rec_cap >= UF_REC_MAX_PER_MSG: after a flush every call applies at least one */
		if (UF_UNLIKELY(f->nrec + UF_REC_MAX_PER_MSG > f->rec_cap))
			uf_feed_flush(f);
		size_t applied = 0;
		int k = uf_publish_apply_batch(f->pub, msgs, n, first_seq, rx_ns, f->recs + f->nrec,
		                               f->rec_cap - f->nrec, &applied);
		if (k > 0)
			f->nrec += (size_t)k;
		f->lat_msgs += applied;
		msgs += applied;
		first_seq += applied;
		n -= applied;
	}
}

/* Wire length of block i of a validated packet (for counting a decode error). Cold. */
static uint16_t uf_feed_block_len(const struct uf_mold_packet *pkt, uint32_t i)
{
	struct uf_mold_iter it;
	struct uf_mold_block b;
	uf_mold_iter_init(&it, pkt);
	for (uint32_t k = 0; uf_mold_next(&it, &b); k++)
		if (k == i)
			return b.len;
	return 0;
}

/* Arbiter callback: messages [seq + skip, seq + count) of a data packet, in order. The
 * packet is decoded whole into msgs[] (one pass, decode/uf_batch.h), then applied in runs of
 * consecutive messages that decoded; a message that did not is counted and skipped. */
static void uf_feed_deliver(void *ctx, const struct uf_mold_packet *pkt, uint32_t skip,
                            uint64_t rx_ns, unsigned src)
{
	struct uf_feed *f = ctx;
	(void)src;
	if (f->lat_msgs && rx_ns != f->lat_rx)
		uf_feed_flush(f); /* one receive time per latency sample group */
	f->lat_rx = rx_ns;
	if (skip >= pkt->count)
		return;
	uf_stat_add(&f->stats.messages, pkt->count - skip);
	struct uf_mold_packet w = *pkt;
	if (UF_LIKELY(pkt->count <= UF_DECODE_FUSED_MAX) &&
	    uf_decode_walk_fused(&w, f->msgs, f->msg_rc) == UF_MOLD_DATA) {
		uint32_t run = skip;
		for (uint32_t i = skip; i < pkt->count; i++) {
			if (UF_UNLIKELY(f->msg_rc[i] != 0)) {
				uf_feed_apply_run(f, f->msgs + run, i - run, pkt->seq + run, rx_ns);
				uf_feed_count_itch_error(f, f->msg_rc[i],
				                         uf_feed_block_len(pkt, i));
				f->lat_msgs++;
				run = i + 1;
			}
		}
		uf_feed_apply_run(f, f->msgs + run, pkt->count - run, pkt->seq + run, rx_ns);
		return;
	}
	/* More blocks than one pass takes (jumbo datagrams): decode and apply in chunks. */
	struct uf_mold_iter it;
	struct uf_mold_block b;
	uf_mold_iter_init(&it, pkt);
	uint32_t i = 0;
	size_t nm = 0;
	uint64_t first = 0;
	while (uf_mold_next(&it, &b)) {
		if (i++ < skip)
			continue;
		int rc = uf_itch_decode_inline(b.msg, b.len, &f->msgs[nm]);
		if (UF_UNLIKELY(rc != 0)) {
			uf_feed_apply_run(f, f->msgs, nm, first, rx_ns);
			nm = 0;
			uf_feed_count_itch_error(f, rc, b.len);
			f->lat_msgs++;
			continue;
		}
		if (nm == 0)
			first = b.seq;
		if (++nm == UF_DECODE_FUSED_MAX) {
			uf_feed_apply_run(f, f->msgs, nm, first, rx_ns);
			nm = 0;
		}
	}
	uf_feed_apply_run(f, f->msgs, nm, first, rx_ns);
}

static void uf_feed_gap(void *ctx, uint64_t first, uint64_t count)
{
	struct uf_feed *f = ctx;
	uf_feed_flush(f);
	int n = uf_publish_gap(f->pub, first, count, f->recs, f->rec_cap);
	if (n > 0)
		f->nrec = (size_t)n;
	uint64_t seq = uf_feed_ring_publish(f->ring, f->recs, f->nrec);
	uf_stat_add(&f->stats.records, f->nrec);
	f->nrec = 0;
	uf_feed_ring_batch_begin(f->ring);
	uf_feed_ring_set_stale_all(f->ring, 1, seq);
	uf_feed_ring_batch_end(f->ring, seq);
}

static void uf_feed_new_session(void *ctx, const char session[UF_MOLD_SESSION_LEN])
{
	struct uf_feed *f = ctx;
	uf_feed_flush(f);
	uf_publish_reset(f->pub); /* a new session is a new day: old books are void */
	uint64_t seq = uf_feed_ring_publish(f->ring, f->recs, 0);
	uf_feed_ring_batch_begin(f->ring); /* every book empties at once */
	for (uint32_t i = 0; i < f->max_inst; i++)
		uf_feed_ring_set_book(f->ring, i, f->bids, 0, f->asks, 0, seq, 0);
	uf_feed_ring_set_stale_all(f->ring, 0, seq); /* the reset cleared the publisher's too */
	uf_feed_ring_batch_end(f->ring, seq);
}

static void uf_feed_count_malformed(struct uf_feed *f, const struct uf_mold_packet *mp,
                                    unsigned src)
{
	if (src < UF_CFG_MAX_LINES)
		uf_stat_add(&f->stats.lines[src].malformed, 1);
	switch (mp->err) {
	case UF_MOLD_ERR_TRUNCATED_HEADER:
		uf_stat_add(&f->stats.decode_truncated_header, 1);
		break;
	case UF_MOLD_ERR_BLOCK_LENGTH_TRUNCATED:
		uf_stat_add(&f->stats.decode_block_length_truncated, 1);
		break;
	case UF_MOLD_ERR_BLOCK_OVERRUNS_PACKET:
		uf_stat_add(&f->stats.decode_block_overruns_packet, 1);
		break;
	case UF_MOLD_ERR_COUNT_MISMATCH:
		uf_stat_add(&f->stats.decode_count_mismatch, 1);
		break;
	default:
		uf_stat_add(&f->stats.decode_trailing_bytes, 1);
		break;
	}
}

static inline void uf_feed_packet(struct uf_feed *f, const struct uf_pkt *p)
{
	struct uf_mold_packet mp;
	unsigned src = p->src;
	uf_stat_add(&f->stats.packets, 1);
	uf_stat_add(&f->stats.bytes, p->len);
	if (src < (unsigned)f->cfg.nlines) {
		uf_stat_add(&f->stats.lines[src].packets, 1);
		uf_stat_add(&f->stats.lines[src].bytes, p->len);
	} else {
		/* Only the configured server may answer: anything else on this unconnected socket
		 * could inject messages into the stream. */
		if (UF_UNLIKELY(p->from_addr != f->cfg.recovery.server.sin_addr.s_addr ||
		                p->from_port != f->cfg.recovery.server.sin_port)) {
			uf_stat_add(&f->stats.recovery_foreign, 1);
			return;
		}
		src = UF_ARB_SRC_RECOVERY;
		uf_stat_add(&f->stats.recovery_packets, 1);
	}
	int k = uf_mold_open(&mp, p->data, p->len);
	if (UF_UNLIKELY(k < 0)) {
		uf_feed_count_malformed(f, &mp, src);
		return;
	}
	if (k == UF_MOLD_DATA && src < UF_CFG_MAX_LINES)
		uf_stat_add(&f->stats.lines[src].messages, mp.count);
	uf_arb_packet(&f->arb, &mp, p->rx_ns, src);
	uf_feed_flush(f);
}

static inline void uf_feed_prefetch_pkt(const struct uf_pkt *p)
{
	struct uf_decode_pkt d = {.data = p->data, .len = p->len, .user = 0};
	uf_decode_prefetch_pkt(&d);
}

/* Reads every line socket's kernel drop total (SO_MEMINFO, a system call: idle and exit
 * only). The SO_RXQ_OVFL cmsg already carries it on each datagram; this catches drops after
 * the last datagram a socket delivered. */
static void uf_feed_read_kernel_drops(struct uf_feed *f)
{
	for (int i = 0; i < f->cfg.nlines; i++) {
		int64_t d = uf_mcast_kernel_drops(f->fds[i]);
		if (d >= 0)
			uf_stat_raise(&f->stats.lines[i].kernel_drops, (uint64_t)d);
	}
}

/* Feed thread: switches to a filter published by uf_feed_set_symbols. Instruments that
 * enter it get their whole book as a snapshot in the stream and in the image. Cold. */
static void uf_feed_apply_filter(struct uf_feed *f, uint32_t pending)
{
	uint32_t slot = pending - 1;
	const struct uf_feed_filter *fl = &f->filt[slot];
	uf_feed_flush(f);
	for (uint32_t id = 1; id < f->max_inst; id++) {
		char sym[9];
		if (uf_publish_symbol(f->pub, id, sym) < 0)
			continue;
		char pad[8];
		memset(pad, ' ', sizeof(pad));
		memcpy(pad, sym, strlen(sym));
		uint8_t now = (uint8_t)uf_feed_filter_wants(fl, pad);
		if (now && !f->wanted[id]) {
			/* Its directory entry first (the stream and the image never had it), then
			 * its book. */
			const struct uf_pub_instrument *pi = uf_publish_instrument(f->pub, id);
			struct uf_record *ir = &f->recs[0];
			memset(ir, 0, sizeof(*ir));
			ir->kind = UF_REC_INSTRUMENT;
			ir->flags = UF_RECF_LAST;
			ir->instrument = id;
			memcpy(&ir->ref, pi->symbol, sizeof(ir->ref));
			ir->shares = pi->round_lot;
			ir->aux = pi->market_category;
			uint64_t iseq = uf_feed_ring_publish(f->ring, ir, 1);
			uf_feed_ring_batch_begin(f->ring);
			uf_feed_ring_image_record(f->ring, ir, iseq);
			uf_feed_ring_batch_end(f->ring, iseq);
			uf_stat_add(&f->stats.records, 1);
			int n = uf_publish_snapshot(f->pub, id, f->recs, UF_FEED_RECS);
			if (n > 0) {
				uint64_t seq = uf_feed_ring_publish(f->ring, f->recs, (size_t)n);
				uf_stat_add(&f->stats.records, (uint64_t)n);
				int nb = uf_publish_top(f->pub, id, UF_SIDE_BID, f->bids, f->depth);
				int na = uf_publish_top(f->pub, id, UF_SIDE_ASK, f->asks, f->depth);
				uf_feed_ring_batch_begin(f->ring);
				uf_feed_ring_set_book(f->ring, id, f->bids,
				                      nb > 0 ? (uint32_t)nb : 0, f->asks,
				                      na > 0 ? (uint32_t)na : 0, seq, 0);
				uf_feed_ring_batch_end(f->ring, seq);
			}
		}
		f->wanted[id] = now;
	}
	f->filter_on = fl->n != 0;
	uf_store_release_u32(&f->filt_active, slot);
	uf_store_release_u32(&f->filt_pending, 0); /* the old slot is free for the next change */
}

/* Mirrors the publisher's integrity error total into the feed counters (once a batch: the
 * publisher counts per kind, the status endpoint wants one number per feed). */
static inline void uf_feed_sync_pub_stats(struct uf_feed *f)
{
	struct uf_publish_stats ps;
	uf_publish_stats(f->pub, &ps);
	if (ps.errors_total != f->stats.book_integrity_errors)
		uf_store_relaxed_u64(&f->stats.book_integrity_errors, ps.errors_total);
}

static void uf_feed_pin(int cpu)
{
	if (cpu < 0)
		return;
	long ncpu = sysconf(_SC_NPROCESSORS_CONF);
	if (cpu >= ncpu) {
		uf_feed_log_warn("feed: cpu %d does not exist (%ld CPUs): not pinned", cpu, ncpu);
		return;
	}
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	int rc = pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	if (rc)
		uf_feed_log_warn("feed: pinning to cpu %d: %s", cpu, strerror(rc));
}

int uf_feed_run(struct uf_feed *f, const volatile int *stop)
{
	struct uf_pkt pkts[UF_INGEST_BATCH];
	struct uf_feed_line_stats scratch; /* the re-request socket has no line counters */
	struct uf_feed_line_stats *st[UF_INGEST_MAX_SRC];
	memset(&scratch, 0, sizeof(scratch));
	for (int i = 0; i < f->nsrc; i++)
		st[i] = i < f->cfg.nlines ? &f->stats.lines[i] : &scratch;
	uf_feed_pin(f->cfg.cpu);
	struct uf_ingest_params ip = {
	    .backend = f->cfg.backend,
	    .sqpoll_cpu = f->cfg.sqpoll_cpu,
	    .sqpoll_idle_ms = f->cfg.sqpoll_idle_ms,
	    .numa_node = f->cfg.numa_node,
	    .buf_count = f->cfg.buffers.count,
	    .buf_size = f->cfg.buffers.size,
	};
	int rc =
	    uf_ingest_open(&f->ig, &ip, f->fds, f->nsrc, st, &f->stats, f->err, sizeof(f->err));
	if (rc < 0) {
		uf_ingest_close(&f->ig);
		return rc;
	}
	f->backend = f->ig.backend;
	if (f->backend != f->cfg.backend)
		uf_feed_log_warn("feed: feed %s runs on back end %s (configured %s)", f->cfg.name,
		                 uf_feed_backend_name(f), uf_backend_name(f->cfg.backend));
	while (!*stop) {
		uint32_t pending =
		    uf_load_acquire_u32(&f->filt_pending); /* pairs with set_symbols */
		if (UF_UNLIKELY(pending))
			uf_feed_apply_filter(f, pending);
		/* epoll sleeps: not longer than a millisecond while a gap's timers run. */
		int n = uf_ingest_poll(&f->ig, pkts, UF_INGEST_BATCH,
		                       uf_arb_gap_open(&f->arb) ? 1 : 50);
		if (UF_UNLIKELY(n < 0)) {
			snprintf(f->err, sizeof(f->err), "receive failed on back end %s: %s",
			         uf_feed_backend_name(f), strerror(-n));
			rc = n;
			break;
		}
		if (n == 0) {
			uf_stat_add(&f->stats.busy_polls, 1);
			uint64_t now = uf_now_mono_ns(); /* idle: nothing waits for us */
			if (UF_UNLIKELY(now - f->drops_read_ns >= UF_FEED_DROPS_POLL_NS)) {
				f->drops_read_ns = now;
				uf_feed_read_kernel_drops(f);
			}
			uf_cpu_relax();
		} else {
			uf_stat_add(&f->stats.batches, 1);
			/* Datagrams `pf` ahead load while this one is decoded (decode/uf_batch.h).
			 */
			int pf = UF_DECODE_PREFETCH_DEFAULT;
			for (int i = 0; i < pf && i < n; i++)
				uf_feed_prefetch_pkt(&pkts[i]);
			for (int i = 0; i < n; i++) {
				if (i + pf < n)
					uf_feed_prefetch_pkt(&pkts[i + pf]);
				uf_feed_packet(f, &pkts[i]);
			}
			uf_ingest_release(&f->ig, pkts, n);
			uf_feed_sync_pub_stats(f);
		}
		if (UF_UNLIKELY(uf_arb_gap_open(&f->arb))) {
			uf_arb_tick(&f->arb, uf_now_mono_ns(), n < UF_INGEST_BATCH);
			uf_feed_flush(f); /* a give-up may have delivered queued packets */
		}
	}
	uf_feed_flush(f);
	uf_feed_read_kernel_drops(f);
	uf_ingest_close(&f->ig);
	return rc < 0 ? rc : 0;
}

/* ---- setup ---- */

int uf_feed_create(const struct uf_feed_config *cfg, struct uf_feed **out, char *err, size_t errlen)
{
	int rc;
	struct uf_feed *f = aligned_alloc(UF_CACHELINE, (sizeof(*f) + UF_CACHELINE - 1) &
	                                                    ~(size_t)(UF_CACHELINE - 1));
	if (!f) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	memset(f, 0, sizeof(*f));
	f->cfg = *cfg;
	f->cfg.symbols = NULL;
	f->cfg.nsymbols = 0;
	f->req_fd = -1;
	for (int i = 0; i < UF_INGEST_MAX_SRC; i++)
		f->fds[i] = -1;
	f->backend = cfg->backend;
	if (cfg->nlines < 1 || cfg->nlines > UF_CFG_MAX_LINES) {
		snprintf(err, errlen, "feed %s: %d lines (1 or 2 supported)", cfg->name,
		         cfg->nlines);
		rc = -EINVAL;
		goto out_free;
	}
	if (!uf_backend_name(cfg->backend)) {
		snprintf(err, errlen, "feed %s: unknown back end %d", cfg->name, (int)cfg->backend);
		rc = -EINVAL;
		goto out_free;
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
			snprintf(err, errlen, "feed %s line %s: %s", cfg->name, l->name, why);
			goto out_close;
		}
		f->fds[f->nsrc++] = rc;
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
			snprintf(err, errlen, "feed %s re-request socket: %s", cfg->name, why);
			goto out_close;
		}
		f->req_fd = rc;
		f->fds[f->nsrc++] = rc;
	}

	struct uf_publish_params pp;
	uf_publish_params_default(&pp);
	if (cfg->book.max_orders)
		pp.max_orders = cfg->book.max_orders;
	if (cfg->book.max_instruments)
		pp.max_instruments = cfg->book.max_instruments;
	pp.numa_node = cfg->numa_node;
	rc = uf_publish_create(&pp, &f->pub);
	if (rc < 0) {
		snprintf(err, errlen, "feed %s: creating books (max_orders %llu): %s", cfg->name,
		         (unsigned long long)pp.max_orders, strerror(-rc));
		goto out_close;
	}
	f->max_inst = uf_publish_max_instruments(f->pub);
	f->depth = cfg->book.depth ? cfg->book.depth : 10;
	if (f->depth > UF_FEED_MAX_DEPTH)
		f->depth = UF_FEED_MAX_DEPTH;
	f->dirty = calloc(f->max_inst, sizeof(*f->dirty));
	f->is_dirty = calloc(f->max_inst, 1);
	f->wanted = malloc(f->max_inst);
	pthread_mutex_init(&f->filt_lock, NULL);
	if (f->wanted)
		memset(f->wanted, cfg->nsymbols ? 0 : 1, f->max_inst);
	if (!f->dirty || !f->is_dirty || !f->wanted) {
		snprintf(err, errlen, "out of memory");
		rc = -ENOMEM;
		goto out_pub;
	}
	rc = uf_feed_filter_fill(&f->filt[0], (const char(*)[9])cfg->symbols, cfg->nsymbols);
	if (rc < 0) {
		snprintf(err, errlen, "feed %s: symbol filter: %s", cfg->name,
		         rc == -EINVAL ? "a symbol is longer than 8 characters" : strerror(-rc));
		goto out_pub;
	}
	rc = uf_feed_ring_create(cfg, &f->ring, why, sizeof(why));
	if (rc < 0) {
		snprintf(err, errlen, "feed %s: ring: %s", cfg->name, why);
		goto out_pub;
	}
	f->rec_cap = uf_feed_ring_max_batch(f->ring);
	if (f->rec_cap > UF_FEED_RECS)
		f->rec_cap = UF_FEED_RECS;
	struct uf_arb_cb cb = {.deliver = uf_feed_deliver,
	                       .gap = uf_feed_gap,
	                       .new_session = uf_feed_new_session,
	                       .ctx = f};
	uint32_t slot = cfg->buffers.size ? cfg->buffers.size : 2048;
	rc = uf_arb_init(&f->arb, &f->cfg, f->req_fd, slot, &f->stats, &cb);
	if (rc < 0) {
		snprintf(err, errlen, "feed %s: recovery queue of %u packets: %s", cfg->name,
		         cfg->recovery.queue_packets, strerror(-rc));
		goto out_ring;
	}
	f->filter_on = cfg->nsymbols != 0;
	*out = f;
	return 0;

out_ring:
	uf_feed_ring_close(f->ring);
out_pub:
	free(f->dirty);
	free(f->is_dirty);
	free(f->wanted);
	free(f->filt[0].syms);
	uf_publish_destroy(f->pub);
out_close:
	for (int i = 0; i < f->nsrc; i++)
		close(f->fds[i]);
out_free:
	free(f);
	return rc;
}

void uf_feed_destroy(struct uf_feed *f)
{
	if (!f)
		return;
	uf_arb_fini(&f->arb);
	uf_feed_ring_close(f->ring);
	uf_publish_destroy(f->pub);
	free(f->dirty);
	free(f->is_dirty);
	free(f->wanted);
	free(f->filt[0].syms);
	free(f->filt[1].syms);
	pthread_mutex_destroy(&f->filt_lock);
	for (int i = 0; i < f->nsrc; i++)
		close(f->fds[i]);
	free(f);
}
