/* The pipeline: the feed thread's loop and everything it does per packet.
 *
 *   receive batch -> the protocol's framing (open: session, sequence, count, kind) ->
 *   arbitration / gap recovery (arbiter.c) -> the protocol's apply (decode, books and
 *   records into the publish step, publish/uf_proto.h) -> symbol filter (filter.c) -> ring
 *   and book image (sink.c), then recycle the receive buffers.
 *
 * Nothing here knows a venue: both protocol calls are one indirect call per packet.
 *
 * Counters only, no logging and no allocation here, except on the cold paths (back-end
 * setup, a filter change). See uf_feed.h for the contract. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/uf_compiler.h"
#include "common/uf_endian.h"
#include "common/uf_err.h"
#include "common/uf_symbol.h"
#include "common/uf_time.h"
#include "decode/uf_frame.h"
#include "feed/feed_internal.h"
#include "feed/feed_log.h"
#include "feed/mcast.h"
#include "ring/uf_ring.h"

#define UF_FEED_DROPS_POLL_NS    100000000ull /* idle: re-read the sockets' drop totals */
#define UF_FEED_IDLE_CLOCK_EVERY 1024u        /* empty polls between two idle clock reads */
/* Records per publish step within a packet when the feed is keeping up (issue 14). A
 * datagram of ~40 messages makes ~90 records; publishing them only after the whole packet's
 * books made every message wait for the last one (wire-to-publish = receive + all of the
 * packet's books and image). Publishing every ~30 records (whole messages: each message's
 * records in one publish, as the ring wants) lets the first messages out while the rest are
 * applied. It costs instructions (callgrind, feed_bench epoll 20 k msg/s: +13 % in the feed
 * loop, an instrument touched in two steps is copied into the image twice), so it is only
 * done for receive batches of at most UF_FEED_STEP_BATCH datagrams (an A/B pair): a longer
 * batch means a queue, and there whole packets drain it faster. docs/profiling.md. */
#define UF_FEED_PUBLISH_RECS 32
#define UF_FEED_STEP_BATCH   2
_Static_assert(UF_FEED_PUBLISH_RECS >= UF_REC_MAX_PER_MSG, "a step holds a message's records");

/* End of a timed packet: one sample each for its books and ring sums. Its image time (the
 * steps' trade/status updates and dirty marks) is recorded with the deferred image flush that
 * completes it (uf_feed_image_flush). */
static void uf_feed_stage_flush(struct uf_feed *f)
{
	uf_stage_flush_range(&f->tm, UF_STAGE_BOOKS, UF_STAGE_RING);
}

/* Wakes the ring's sleeping consumers for everything published since the last call
 * (deferred wake, sink.h): called after each publish step's image updates and wire-to-publish
 * stamp, so the system call is never between a publish and its image nor in the stamped
 * messages' time, and a consumer asleep is woken right after the first step that has records
 * for it. The ring makes the call only for a consumer not woken yet (uf_ring_wake_flush): a
 * consumer that spins, or one already woken that has not run yet, costs no call. Counted:
 * calls, and calls that found no consumer blocked in the kernel yet. */
static inline void uf_feed_wake_consumers(struct uf_feed *f)
{
	int rc = uf_sink_wake_flush(&f->sink);
	if (UF_LIKELY(rc < 0))
		return;
	uf_stat_add(&f->stats.ring_wakes, 1);
	if (rc == UF_RING_WAKE_ASYNC)
		uf_stat_add(&f->stats.ring_wakes_async, 1); /* idle or not: told by its CQE */
	else if (rc == 0)
		uf_stat_add(&f->stats.ring_wakes_idle, 1);
}

/* The ring's waker while the loop runs on io_uring with SQPOLL: the SQ thread makes the
 * FUTEX_WAKE, the feed thread only writes an SQE (issue 14: no system call per packet even
 * when consumers sleep). Any other thread, a full SQ or a kernel without the opcode: the ring
 * makes the system call itself. */
static int uf_feed_async_wake(void *ctx, uint32_t *word)
{
	struct uf_feed *f = ctx;
	if (UF_UNLIKELY(!pthread_equal(pthread_self(), f->thread)))
		return -EPERM;
	return uf_ingest_futex_wake(&f->ig, word);
}

/* Hands the records waiting (a publish step of the current packet) to the sink (one
 * publish, then the image updates they cause, see sink.h), then records the wire-to-publish
 * latency of their messages and, with stage timing, adds the step's ring (filter included)
 * and image time to the packet's sums (the sink reads the clock between the two). */
static void uf_feed_flush(struct uf_feed *f)
{
	int timed = 0;
	uint64_t t_ring = 0, tk = 0, now = 0;
	if (f->tm.timed && f->step.nrec)
		t_ring = uf_tick_now(&f->tm.clock);
	if (UF_UNLIKELY(f->filter.on) && f->step.nrec)
		f->step.nrec = uf_filter_records(&f->filter, f->recs, f->step.nrec);
	/* One clock read for the step, as its records enter the ring: their pub_delta_ns
	 * (uf_rec_stamp: after every book update of the step, so the figure is the time to
	 * readable) and the latency histogram, the same instant. Timing off: one
	 * CLOCK_REALTIME read; on: one tick, wall time from the anchor. */
	if (f->step.nrec || f->step.lat_msgs) {
		if (f->tm.timed) {
			tk = uf_tick_now(&f->tm.clock);
			now = uf_stage_realtime(&f->tm, tk);
		} else {
			now = uf_now_realtime_ns();
		}
	}
	if (f->step.nrec) {
		uf_rec_stamp(f->recs, f->step.nrec, now);
		int rc = uf_sink_records(&f->sink, f->recs, f->step.nrec, f->step.lat_rx);
		if (UF_UNLIKELY(rc < 0))
			uf_stat_add(&f->stats.image_errors, 1);
		uf_stat_add(&f->stats.records, f->step.nrec);
		f->step.nrec = 0;
		timed = f->tm.timed;
	}
	if (f->step.lat_msgs) {
		if (f->step.lat_rx)
			uf_lat_record_n(&f->stats.latency, (int64_t)(now - f->step.lat_rx),
			                f->step.lat_msgs);
		f->step.lat_msgs = 0;
	}
	if (timed) {
		/* the ring stage from before the filter to the sink's publish, the image from
		 * there to now (a second tick: the stamp's was taken before the publish) */
		uint64_t end = uf_tick_now(&f->tm.clock);
		uf_stage_acc(&f->tm, UF_STAGE_RING, t_ring, f->sink.published_tick);
		uf_stage_acc(&f->tm, UF_STAGE_IMAGE, f->sink.published_tick, end);
	}
	uf_feed_wake_consumers(f); /* after the stamp: not in these messages' time */
}

/* The deferred image (sink.h): copies the books the batch changed into the image and commits
 * it, once per receive batch, after every record is published and stamped, so no message
 * waits for a book copy. With a timed packet in the batch its image sample is the packet's
 * step updates plus this flush. */
static void uf_feed_image_flush(struct uf_feed *f)
{
	if (!f->sink.image_open)
		return;
	if (f->step.nrec)
		uf_feed_flush(f); /* the contract: every record the publisher made is in the ring */
	uint64_t t0 = 0;
	int timed = (f->tm.acc_seen >> UF_STAGE_IMAGE) & 1u;
	if (timed)
		t0 = uf_tick_now(&f->tm.clock);
	if (UF_UNLIKELY(uf_sink_image_flush(&f->sink) < 0))
		uf_stat_add(&f->stats.image_errors, 1);
	if (timed) {
		uf_stage_acc(&f->tm, UF_STAGE_IMAGE, t0, uf_tick_now(&f->tm.clock));
		uf_stage_flush_range(&f->tm, UF_STAGE_IMAGE, UF_STAGE_IMAGE);
	}
}

/* Step hook (publish/uf_step.h): a message of a valid packet did not decode. Cold. */
static void uf_feed_msg_error(void *owner, enum uf_step_err kind)
{
	struct uf_feed *f = owner;
	if (kind == UF_STEP_ERR_EMPTY)
		uf_stat_add(&f->stats.decode_empty_message, 1);
	else if (kind == UF_STEP_ERR_UNKNOWN)
		uf_stat_add(&f->stats.decode_unknown_type, 1);
	else
		uf_stat_add(&f->stats.decode_bad_length, 1);
}

/* Step hook: the step is full mid packet. A full step is published now; the books' time of a
 * timed packet stops meanwhile (the flush is ring and image time). */
static void uf_feed_split(void *owner)
{
	struct uf_feed *f = owner;
	if (f->tm.timed) {
		uint64_t t = uf_tick_now(&f->tm.clock);
		uf_stage_acc(&f->tm, UF_STAGE_BOOKS, f->tm.t_seg, t);
		uf_feed_flush(f);
		f->tm.t_seg = uf_tick_now(&f->tm.clock);
	} else {
		uf_feed_flush(f);
	}
}

/* Step hook, timed packets: the packet's messages are decoded; the books segment starts. */
static void uf_feed_decoded(void *owner)
{
	struct uf_feed *f = owner;
	uint64_t t = uf_tick_now(&f->tm.clock);
	uf_stage_sample(&f->tm, UF_STAGE_DECODE, f->tm.t_seg, t);
	f->tm.t_seg = t;
}

/* Arbiter callback: messages [seq + skip, seq + count) of a data packet, in order, handed to
 * the protocol entry (one call per packet: it decodes and applies them into the publish
 * step, publish/uf_proto.h). */
static void uf_feed_deliver(void *ctx, const struct uf_frame *pkt, uint32_t skip, uint64_t rx_ns,
                            unsigned src)
{
	struct uf_feed *f = ctx;
	(void)src;
	if (f->step.lat_msgs && rx_ns != f->step.lat_rx)
		uf_feed_flush(f); /* one receive time per latency sample group */
	f->step.lat_rx = rx_ns;
	if (skip >= pkt->count)
		return;
	uf_stat_add(&f->stats.messages, pkt->count - skip);
	/* Stage timing: arbitration ends here for the packet being received (not for queued
	 * packets the arbiter releases later: they were timed into its queue). Decoding starts
	 * now; the entry reports its end (uf_feed_decoded), or the whole call is books time. */
	if (f->tm.timed) {
		f->tm.t_seg = uf_tick_now(&f->tm.clock);
		if (f->tm.arb_pending && f->tm.t_mark)
			uf_stage_sample(&f->tm, UF_STAGE_ARBITRATION, f->tm.t_mark, f->tm.t_seg);
		f->tm.arb_pending = 0;
	}
	f->step.timed = f->tm.timed;
	f->proto->apply(&f->step, f->proto_state, pkt, skip, rx_ns);
	if (f->tm.timed)
		uf_stage_acc(&f->tm, UF_STAGE_BOOKS, f->tm.t_seg, uf_tick_now(&f->tm.clock));
}

/* Mirrors the publisher's integrity error total and stale book count into the feed stats (once a
 * batch: the publisher counts per kind, the status endpoint wants one number per feed). */
static inline void uf_feed_sync_pub_stats(struct uf_feed *f)
{
	struct uf_publish_stats ps;
	uf_publish_stats(f->pub, &ps);
	if (ps.errors_total != f->stats.book_integrity_errors)
		uf_store_relaxed_u64(&f->stats.book_integrity_errors, ps.errors_total);
	/* gaps, decode and integrity doubts, full tables: every STALE book consumers can see */
	uint64_t stale = uf_filter_stale_books(&f->filter, f->pub, ps.stale_books);
	if (stale != f->stats.books_stale)
		uf_store_relaxed_u64(&f->stats.books_stale, stale);
}

/* THE ways records leave the publish step besides the per-packet path (the arbiter's gap and
 * new-session callbacks, the snapshot loader through the step's hooks): a gap marker for
 * [first, first + count) (every book stale), and every book voided with one RESET record
 * (`reason` UF_RESET_*, stamped `feed_seq`: uf_publish_void_books) and the image emptied.
 * Each hands on what waits first. */
static void uf_feed_publish_gap(struct uf_feed *f, uint64_t first, uint64_t count)
{
	uf_feed_flush(f);
	int n = uf_publish_gap(f->pub, first, count, f->recs, f->step.rec_cap);
	size_t nrec = n > 0 ? (size_t)n : 0;
	if (uf_sink_gap(&f->sink, f->recs, nrec) < 0)
		uf_stat_add(&f->stats.image_errors, 1);
	uf_stat_add(&f->stats.records, nrec);
	uf_feed_sync_pub_stats(f); /* every book is stale now */
}

static void uf_feed_publish_reset(struct uf_feed *f, uint32_t reason,
                                  const char session[UF_FRAME_SESSION_LEN], uint64_t feed_seq)
{
	uf_feed_flush(f);
	int n = uf_publish_void_books(f->pub, reason, session, feed_seq, f->recs, f->step.rec_cap);
	size_t nrec = n > 0 ? (size_t)n : 0;
	if (uf_sink_new_session(&f->sink, f->recs, nrec) < 0)
		uf_stat_add(&f->stats.image_errors, 1);
	uf_stat_add(&f->stats.records, nrec);
	uf_feed_sync_pub_stats(f); /* empty books are right books: none stale */
}

static void uf_feed_gap(void *ctx, uint64_t first, uint64_t count)
{
	uf_feed_publish_gap(ctx, first, count);
}

static void uf_feed_new_session(void *ctx, const char session[UF_FRAME_SESSION_LEN])
{
	struct uf_feed *f = ctx;
	/* a new session is a new day: old books are void, and the stream says so (RESET) */
	uf_feed_publish_reset(f, UF_RESET_NEW_SESSION, session, 1);
	if (f->cap)
		uf_capture_new_session(f->cap); /* a new day, a new file */
}

/* A datagram the framing refused, counted by what lied (the framing errors, uf_counters.h). */
static void uf_feed_count_malformed(struct uf_feed *f, const struct uf_frame *mp, unsigned src)
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
	case UF_MOLD_ERR_BAD_END_OF_SESSION: /* not trailing bytes: an end of session that lied */
		uf_stat_add(&f->stats.decode_bad_end_of_session, 1);
		break;
	case UF_MOLD_ERR_TRAILING_BYTES: /* after the last block, or a heartbeat carrying bytes */
	default:
		uf_stat_add(&f->stats.decode_trailing_bytes, 1);
		break;
	}
}

static inline void uf_feed_packet(struct uf_feed *f, const struct uf_pkt *p)
{
	struct uf_frame mp;
	unsigned src = p->src;
	uint64_t t0 = 0; /* wall time the packet was taken (timed packets), 0 = unknown */
	/* Stage timing samples one packet in sample_every (config "stage_timing_every"): its clock
	 * reads cost more than the rest of a small packet's bookkeeping (stage_cost_bench), a
	 * sample keeps them off the others. The anchor pairs wall time with the tick for this
	 * packet's conversions. */
	if (f->tm.timing && --f->tm.sample_left == 0) {
		f->tm.sample_left = f->tm.sample_every;
		uf_tick_anchor(&f->tm.clock);
		t0 = f->tm.clock.anchor_rt;
		if (p->rx_ns)
			uf_lat_record(&f->stats.stages[UF_STAGE_RECEIVE], (int64_t)(t0 - p->rx_ns));
		f->tm.t_mark = f->tm.clock.anchor_ticks;
		f->tm.arb_pending = 1;
		f->tm.timed = 1;
		f->sink.clock = &f->tm.clock;
	}
	uf_stat_add(&f->stats.packets, 1);
	uf_stat_add(&f->stats.bytes, p->len);
	if (src < (unsigned)f->cfg.nlines) {
		uf_stat_add(&f->stats.lines[src].packets, 1);
		uf_stat_add(&f->stats.lines[src].bytes, p->len);
		/* A line with a configured source takes nothing else (counted by the arbiter). */
		if (UF_UNLIKELY(!uf_arb_source_ok(&f->arb, src, p->from_addr)))
			return;
		/* Without a kernel timestamp, the stage clock or (timing off) none: 0 = unknown. */
		uf_store_relaxed_u64(&f->stats.line_last_rx_ns[src], p->rx_ns ? p->rx_ns : t0);
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
	int k = f->proto->framing->open(&mp, p->data, p->len);
	if (UF_UNLIKELY(k < 0)) {
		uf_feed_count_malformed(f, &mp, src);
		return;
	}
	if (k == UF_FRAME_DATA && src < UF_CFG_MAX_LINES)
		uf_stat_add(&f->stats.lines[src].messages, mp.count);
	if (UF_UNLIKELY(f->snap.state != UF_SNAP_IDLE) &&
	    uf_feed_snapshot_packet(&f->snap, &mp, p->rx_ns, src))
		return; /* buffered while a snapshot loads (snapshot.h) */
	uf_arb_packet(&f->arb, &mp, p->rx_ns, src);
	uf_feed_flush(f);
	if (f->tm.timed) {
		uf_feed_stage_flush(f); /* books, ring, image: sums over the packet's steps */
		f->tm.arb_pending = 0;
		f->tm.t_mark = 0;
		f->tm.timed = 0;
		f->sink.clock = NULL;
	}
}

static inline void uf_feed_prefetch_pkt(const struct uf_pkt *p)
{
	uf_frame_prefetch(p->data, p->len);
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

/* Feed thread: switches to a list published by uf_feed_set_symbols. Instruments that
 * enter it get their directory entry and whole book in the stream and the image. Cold. */
static void uf_feed_apply_filter(struct uf_feed *f, uint32_t pending)
{
	uint32_t slot = pending - 1;
	uf_feed_flush(f);
	for (uint32_t id = 1; id < f->filter.max_inst; id++) {
		char sym[UF_SYMBOL_LEN + 1], pad[UF_SYMBOL_LEN];
		if (uf_publish_symbol(f->pub, id, sym) < 0)
			continue;
		uf_symbol_pad(pad, sym);
		uint8_t now = (uint8_t)uf_filter_slot_wants(&f->filter, slot, pad);
		if (now && !f->filter.wanted[id]) {
			size_t published;
			if (uf_sink_instrument_enters(&f->sink, id, f->recs, UF_FEED_RECS,
			                              &published) < 0)
				uf_stat_add(&f->stats.image_errors, 1);
			uf_stat_add(&f->stats.records, published);
		}
		f->filter.wanted[id] = now;
	}
	uf_filter_switch(&f->filter, slot);
}

/* Mirrors the arbiter's state into the gauges (once a batch and after timers: a few
 * compares, a store only on change). */
static inline void uf_feed_sync_gauges(struct uf_feed *f)
{
	uint64_t rec = (uint64_t)uf_arb_gap_open(&f->arb);
	uint64_t ended = (uint64_t)(f->arb.eos_done != 0);
	if (rec != f->stats.recovering)
		uf_store_relaxed_u64(&f->stats.recovering, rec);
	if (ended != f->stats.session_ended)
		uf_store_relaxed_u64(&f->stats.session_ended, ended);
	if (UF_UNLIKELY(f->stats.sessions != f->seen_sessions)) {
		f->seen_sessions = f->stats.sessions;
		uf_store_relaxed_u64(&f->stats.session_start_ns, uf_now_realtime_ns()); /* cold */
		uf_feed_stats_set_session(&f->stats, f->arb.session, UF_FRAME_SESSION_LEN);
	}
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

/* The busy clock (cfg.busy_clock, issue 26 item 2): the feed thread's exact time in loop
 * turns that did work, against which the e2e bench puts `uf-bench book`. The tick clock is
 * read once at the top of every turn; a turn that did work (a poll that returned packets, a
 * snapshot step, a gap timer, a filter switch) adds the ticks from its read to the next one,
 * so its poll, its packets, its flushes and its wakes all count, and no empty poll does.
 * Ticks are summed as ticks and converted once per store with the clock's calibration
 * (uf_tick_ns): no rounding piles up. epoll's poll sleeps in epoll_wait until data comes, so
 * there a working turn counts from the poll's return. A tick going backwards (a TSC read on
 * another CPU after a migration) adds nothing. Off: one predictable branch per turn. */
struct uf_busy_clock {
	int on;           /* cfg.busy_clock */
	int worked;       /* the turn in flight did work */
	uint64_t t_top;   /* tick read at the top of the turn in flight */
	uint64_t ticks;   /* ticks of the working turns of this run */
	uint64_t base_ns; /* stats.busy_ns when this run started (a feed may run again) */
};

/* Top of a turn: closes the previous one (counted when it worked) and opens this one. */
static inline void uf_feed_busy_mark(struct uf_feed *f, struct uf_busy_clock *b)
{
	uint64_t t = uf_tick_now(&f->tm.clock);
	if (b->worked && t > b->t_top) {
		b->ticks += t - b->t_top;
		uf_store_relaxed_u64(&f->stats.busy_ns,
		                     b->base_ns + uf_tick_ns(&f->tm.clock, b->ticks));
	}
	b->t_top = t;
	b->worked = 0;
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
	f->thread = pthread_self();
	if (f->ig.async_wake)
		uf_sink_set_waker(&f->sink, uf_feed_async_wake, f);
	uf_feed_snapshot_run_start(&f->snap);
	f->backend = f->ig.backend;
	f->tm.timing = !f->cfg.no_stage_timing;
	f->tm.sample_every = f->cfg.stage_timing_every; /* resolved: uf_feed_config_resolve */
	f->tm.sample_left = 1;                          /* the first packet is timed */
	f->tm.timed = 0;
	f->sink.clock = NULL;
	if (f->tm.timing)
		uf_tick_anchor(&f->tm.clock); /* calibrated by uf_feed_create */
	uf_sink_defer_wake(&f->sink, 1);      /* wakes after each step: uf_feed_wake_consumers */
	uf_sink_defer_image(&f->sink, 1);     /* books into the image once a batch */
	f->step.step_cap = f->step.rec_cap;   /* whole packets until a batch says otherwise */
	if (f->backend != f->cfg.backend)
		uf_feed_log_warn("feed: feed %s runs on back end %s (configured %s)", f->cfg.name,
		                 uf_feed_backend_name(f), uf_backend_name(f->cfg.backend));
	/* cfg.idle_pause: AUTO follows the back end actually running (SQPOLL may have fallen
	 * back to io_uring without it): no pause with SQPOLL, a pause otherwise */
	const int idle_pause = f->cfg.idle_pause == UF_FEED_IDLE_PAUSE_ON ||
	                       (f->cfg.idle_pause == UF_FEED_IDLE_PAUSE_AUTO && !f->ig.sqpoll);
	uf_store_relaxed_u64(&f->stats.idle_pause, (uint64_t)idle_pause);
	/* The clock is calibrated by uf_feed_create whenever busy_clock is on, stage timing or
	 * not; durations need no anchor (uf_tick_ns of a difference). */
	struct uf_busy_clock busy = {.on = f->cfg.busy_clock != 0,
	                             .base_ns = uf_load_relaxed_u64(&f->stats.busy_ns)};
	while (!*stop) {
		if (UF_UNLIKELY(busy.on))
			uf_feed_busy_mark(f, &busy);
		uint32_t pending = uf_filter_pending(&f->filter);
		if (UF_UNLIKELY(pending)) {
			uf_feed_apply_filter(f, pending);
			busy.worked = 1;
		}
		/* epoll sleeps: not longer than a millisecond while a gap's timers run. */
		int n = uf_ingest_poll(&f->ig, pkts, UF_INGEST_BATCH,
		                       uf_arb_gap_open(&f->arb) || f->snap.state ? 1 : 50);
		if (UF_UNLIKELY(n < 0)) {
			rc = uf_err_rc(f->err, sizeof(f->err), n, "receive failed on back end %s",
			               uf_feed_backend_name(f));
			break;
		}
		if (n == 0) {
			uf_stat_add(&f->stats.busy_polls, 1);
			/* The clock once per UF_FEED_IDLE_CLOCK_EVERY empty polls: read on every
			 * one it was a third of the idle loop (perf, issue 14), and a datagram
			 * landing during the read waits for it. epoll's empty polls are sleeps of
			 * up to 50 ms: there, every one. */
			if (UF_UNLIKELY(++f->idle_polls >= UF_FEED_IDLE_CLOCK_EVERY ||
			                f->backend == UF_BACKEND_EPOLL)) {
				f->idle_polls = 0;
				uint64_t now = uf_now_mono_ns();
				if (f->cap) /* quiet: what we have to disk (rate-limited) */
					uf_capture_flush_idle(f->cap, now);
				if (now - f->drops_read_ns >= UF_FEED_DROPS_POLL_NS) {
					f->drops_read_ns = now;
					uf_feed_read_kernel_drops(f);
				}
			}
			if (UF_UNLIKELY(idle_pause))
				uf_cpu_relax(); /* lends the core to an SMT sibling */
		} else {
			uf_stat_add(&f->stats.batches, 1);
			busy.worked = 1;
			if (UF_UNLIKELY(busy.on) && f->backend == UF_BACKEND_EPOLL)
				busy.t_top = uf_tick_now(&f->tm.clock); /* it slept until now */
			/* short batch: publish in steps of UF_FEED_PUBLISH_RECS; a queue: per
			 * packet */
			f->step.step_cap =
			    n <= UF_FEED_STEP_BATCH && f->step.rec_cap > UF_FEED_PUBLISH_RECS
			        ? UF_FEED_PUBLISH_RECS
			        : f->step.rec_cap;
			/* Datagrams `pf` ahead load while this one is decoded (decode/uf_frame.h).
			 */
			int pf = UF_FRAME_PREFETCH_DEFAULT;
			for (int i = 0; i < pf && i < n; i++)
				uf_feed_prefetch_pkt(&pkts[i]);
			for (int i = 0; i < n; i++) {
				if (i + pf < n)
					uf_feed_prefetch_pkt(&pkts[i + pf]);
				uf_feed_packet(f, &pkts[i]);
			}
			/* Capture after the batch is published: the copy is not in any message's
			 * wire-to-publish time. Every datagram, whatever the pipeline made of it.
			 */
			if (f->cap)
				for (int i = 0; i < n; i++)
					uf_capture_datagram(f->cap, pkts[i].src, pkts[i].data,
					                    pkts[i].len, pkts[i].rx_ns,
					                    pkts[i].from_addr, pkts[i].from_port);
			uf_ingest_release(&f->ig, pkts, n);
			uf_feed_sync_pub_stats(f);
			uf_feed_sync_gauges(f);
		}
		if (UF_UNLIKELY(uf_feed_snapshot_due(f))) {
			uf_feed_snapshot_step(&f->snap); /* snapshot.h: client, merge, triggers */
			uf_feed_flush(f);
			busy.worked = 1;
		}
		/* While a snapshot loads the hole waits for it: no re-request, no give-up. */
		if (UF_UNLIKELY(uf_arb_gap_open(&f->arb)) && f->snap.state != UF_SNAP_LOADING) {
			uf_arb_tick(&f->arb, uf_now_mono_ns(), n < UF_INGEST_BATCH);
			uf_feed_flush(f); /* a give-up may have delivered queued packets */
			uf_feed_sync_pub_stats(
			    f); /* ... whose book errors no later batch may sync */
			uf_feed_sync_gauges(f);
			busy.worked = 1;
		}
		uf_feed_image_flush(f);    /* after the batch: books into the image */
		uf_feed_wake_consumers(f); /* timers, a filter switch: whatever they published */
	}
	if (busy.on)
		uf_feed_busy_mark(f, &busy); /* the last turn */
	/* The last wakes as system calls: the ring's queue goes away with the back end. */
	uf_sink_set_waker(&f->sink, NULL, NULL);
	uf_feed_flush(f);
	uf_feed_image_flush(f);
	uf_feed_wake_consumers(f);
	uf_feed_sync_pub_stats(f);
	uf_feed_sync_gauges(f);
	uf_feed_read_kernel_drops(f);
	if (f->cap)
		uf_capture_flush(f->cap);
	uf_ingest_close(&f->ig);
	return rc < 0 ? rc : 0;
}

/* The publish step's flush, gap and reset hooks (publish/uf_step.h): the snapshot loader's
 * way out for its records. */
static void uf_feed_step_flush(void *owner)
{
	uf_feed_flush(owner);
}

static void uf_feed_step_reset(void *owner, uint32_t reason,
                               const char session[UF_FRAME_SESSION_LEN], uint64_t feed_seq)
{
	uf_feed_publish_reset(owner, reason, session, feed_seq);
}

void uf_feed_pipeline_callbacks(struct uf_feed *f, struct uf_arb_cb *cb)
{
	f->step.flush = uf_feed_step_flush;
	f->step.gap = uf_feed_gap;
	f->step.reset = uf_feed_step_reset;
	f->step.split = uf_feed_split;
	f->step.decoded = uf_feed_decoded;
	f->step.msg_error = uf_feed_msg_error;
	f->step.owner = f;
	cb->deliver = uf_feed_deliver;
	cb->gap = uf_feed_gap;
	cb->new_session = uf_feed_new_session;
	cb->ctx = f;
}
