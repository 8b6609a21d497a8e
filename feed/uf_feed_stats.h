/* uringfeed feed counters: what one feed thread tells the status endpoint.
 *
 * One struct uf_feed_stats per feed, owned by the feed (uf_feed_stats(feed) returns it).
 * Written ONLY by the feed thread, each counter with a relaxed atomic store (uf_stat_add), so
 * a reader on another thread sees every counter untorn; counters are independent (no
 * cross-counter consistency is promised: a snapshot may be a few packets apart between two
 * counters). Readers use uf_feed_stats_read(), which copies with relaxed loads.
 *
 * The counter lists are X-macros so the status endpoint can print every counter with its name
 * and help text without repeating the list: X(field, "help text"). All counters are
 * monotonic uint64 totals since uf_feed_create() ("_total" in Prometheus terms).
 *
 * Latency: wire-to-publish (kernel receive timestamp, SO_TIMESTAMPNS, CLOCK_REALTIME, to the
 * moment the message's records are in the ring) in a log-linear histogram of nanoseconds:
 * 8 sub-buckets per power of two, so any percentile is exact to within 12.5 %.
 *
 * Stages: the same histogram per stage of the per-packet path (enum uf_stage), one clock read
 * (CLOCK_REALTIME, vDSO) per stage boundary per packet, never per message, so the timing
 * stays on in production (its cost is measured in docs/profiling.md and by stage_cost_bench).
 *
 * Gauges: a few current-state values (last packet per line, gap recovery running, current
 * session, stale books) written by the feed thread once a batch or on the cold path, for
 * /metrics and the readiness decision of the daemon. */
#ifndef UF_FEED_STATS_H
#define UF_FEED_STATS_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "common/uf_atomic.h"
#include "feed/uf_feed_config.h"

/* The arbiter's trust checks (feed/arbiter.h counts them straight into struct uf_feed_stats,
 * whose lists include these, like every other arbiter counter). */
#define UF_ARB_COUNTERS(X)                                                                         \
	X(quarantined, "packets held because their sequence jumped beyond what the lines showed")  \
	X(quarantine_confirmed,                                                                    \
	  "held jumps corroborated (other line, packets in a row, catch-up)")                      \
	X(quarantine_dropped, "held packets dropped: their jump was never corroborated")           \
	X(heartbeats_held,                                                                         \
	  "heartbeats announcing messages nothing else showed: held until another "                \
	  "line or heartbeats in a row confirm them")                                              \
	X(heartbeats_confirmed, "held heartbeat or end-of-session announcements believed (other "  \
	                        "line, in a row)")                                                 \
	X(heartbeats_dropped, "held heartbeat or end-of-session announcements their line did not " \
	                      "continue: dropped")                                                 \
	X(end_of_session_held, "ends of session announcing messages nothing else showed: held "    \
	                       "until another line or announcements in a row confirm them")        \
	X(rerequest_answers_rejected, "re-request socket packets not answering a request (other "  \
	                              "session, range not requested, not data): dropped")          \
	X(end_of_session_contradicted, "end-of-session announcements voided by later packets")     \
	X(bad_sequence, "packets whose sequence range wraps past 2^64 (dropped)")                  \
	X(queue_duplicates, "line or server copies of sequences already queued: dropped before "   \
	                    "taking a queue slot")                                                 \
	X(holes_expired, "holes given up at their deadline (wait + (retries + 1) x timeout after " \
	                 "they opened, later only while answers filled them)")                     \
	X(holes_extended, "hole deadlines pushed back because re-request answers filled part of "  \
	                  "them or were due (never past twice the deadline)")                      \
	X(rerequested_messages, "messages asked for in re-requests (compare with gap_messages: "   \
	                        "only what is missing is asked for)")                              \
	X(rerequests_in_flight_full,                                                               \
	  "times a hole waited for a request slot (max_in_flight outstanding)")

/* The capture (feed/capture.h). The feed thread writes capture_packets, capture_bytes,
 * capture_dropped_writer_behind and capture_queued_bytes; the capture's writer thread writes
 * the others (each counter
 * still has exactly one writer, so relaxed stores stay untorn). Drops are datagrams. */
#define UF_CAPTURE_COUNTERS(X)                                                                     \
	X(capture_packets, "datagrams copied into the capture's buffers (every line, re-request "  \
	                   "answers; duplicates and dropped ones too)")                            \
	X(capture_bytes, "pcapng bytes those datagrams take (headers reconstructed)")              \
	X(capture_packets_written, "captured datagrams written to pcapng files")                   \
	X(capture_bytes_written, "bytes written to pcapng files (file headers included)")          \
	X(capture_files_opened, "pcapng files started (size rotation, a new session, a restart "   \
	                        "after an error)")                                                 \
	X(capture_files_deleted, "old pcapng files deleted to stay under capture.max_total_gb")    \
	X(capture_dropped_writer_behind, "datagrams not captured: every buffer was waiting for "   \
	                                 "the writer (disk slower than the feed)")                 \
	X(capture_dropped_disk_full, "datagrams not captured: the disk was full (ENOSPC, EDQUOT)") \
	X(capture_dropped_no_dir, "datagrams not captured: the capture directory was gone")        \
	X(capture_dropped_read_only, "datagrams not captured: the capture directory or its file "  \
	                             "system was read-only or refused us (EROFS, EACCES, EPERM)")  \
	X(capture_dropped_io_error, "datagrams not captured: any other write or open error")       \
	X(capture_lag_ns, "gauge: receive time of the newest datagram written to its write's "     \
	                  "completion (how far the file is behind the wire, ns)")                  \
	X(capture_queued_bytes, "gauge: bytes handed to the writer and not yet written")

#define UF_ARB_LINE_COUNTERS(X)                                                                    \
	X(foreign_source, "datagrams on this line from another source than its configured one")

/* Per line (A, B): what arrived on that multicast group. */
#define UF_FEED_LINE_COUNTERS(X)                                                                   \
	X(packets, "UDP datagrams received on this line")                                          \
	X(bytes, "UDP payload bytes received on this line")                                        \
	X(messages, "MoldUDP64 message blocks carried by packets of this line (incl. dups)")       \
	X(wins, "packets of this line that delivered new messages first (A/B arbitration won)")    \
	X(duplicates, "packets of this line whose messages had all been seen already")             \
	X(gaps, "sequence jumps seen on this line alone (this line lost packets)")                 \
	X(gap_messages, "messages this line lost (sum of its own sequence jumps)")                 \
	X(heartbeats, "MoldUDP64 heartbeats (count 0) received on this line")                      \
	X(malformed, "packets dropped as malformed MoldUDP64 (any kind, see decode_* per feed)")   \
	X(wrong_session, "packets of an older session (IEX-TP: stream) than the current, dropped") \
	X(rearms, "multishot receives re-armed (-ENOBUFS or no IORING_CQE_F_MORE)")                \
	X(enobufs, "receives that ended because the provided buffer ring was empty")               \
	X(rx_errors, "receive errors other than -ENOBUFS / -EAGAIN (negative CQE or errno)")       \
	X(truncated, "datagrams truncated because they exceeded the receive buffer (MSG_TRUNC)")   \
	X(kernel_drops, "datagrams the host dropped on this line's socket before the feed read "   \
	                "them (receive buffer full: SO_RXQ_OVFL / SO_MEMINFO)")                    \
	UF_ARB_LINE_COUNTERS(X)

/* Per feed: the ordered stream after arbitration, recovery, decode, books and the ring. */
#define UF_FEED_COUNTERS(X)                                                                        \
	X(packets, "packets received on all lines and from the re-request server")                 \
	X(bytes, "UDP payload bytes received on all lines and from the re-request server")         \
	X(messages, "messages delivered in sequence to decode (exactly once each)")                \
	X(gaps, "gaps detected in the arbitrated stream (missing on every line at once)")          \
	X(gap_messages, "messages missing when those gaps were detected")                          \
	X(gaps_filled_by_line, "gaps filled by the other line or reordering before a re-request")  \
	X(rerequests, "MoldUDP64 re-requests sent to the request server")                          \
	X(rerequest_timeouts, "re-requests that got no useful answer within the timeout")          \
	X(rerequest_rate_limited, "re-requests postponed by the rate limit")                       \
	X(recovery_packets, "packets received from the re-request server")                         \
	X(recovered_messages, "messages delivered that came from the re-request server")           \
	X(recovery_foreign, "datagrams on the re-request socket not from the server (dropped)")    \
	X(gaps_unrecovered, "gaps given up (retries exhausted, no server, or queue overflow)")     \
	X(messages_unrecovered, "messages given up: published as UF_REC_GAP markers")              \
	X(queue_overflows, "times the bounded out-of-order queue was full (forced give-up)")       \
	X(queued_packets, "live packets buffered while a gap was open")                            \
	X(heartbeats, "heartbeats that advanced or confirmed the expected sequence")               \
	X(end_of_session, "MoldUDP64 end-of-session packets acted on")                             \
	X(sessions, "sessions started (the first session and every new one detected)")             \
	X(decode_truncated_header, "packets shorter than the 20-byte MoldUDP64 header")            \
	X(decode_block_length_truncated, "packets whose last block length runs past the end")      \
	X(decode_block_overruns_packet, "packets whose message block runs past the packet end")    \
	X(decode_count_mismatch, "packets with fewer blocks than the announced count")             \
	X(decode_trailing_bytes, "packets with bytes left after the announced count")              \
	X(decode_bad_end_of_session, "end-of-session packets (count 0xFFFF) carrying bytes after " \
	                             "the header (dropped)")                                       \
	X(decode_bad_length, "ITCH messages whose length does not match their type")               \
	X(decode_unknown_type, "ITCH messages of an unknown type (skipped)")                       \
	X(decode_empty_message, "zero-length ITCH message blocks (skipped)")                       \
	X(book_integrity_errors, "book integrity errors (unknown order ref, over-execution ...)")  \
	X(records, "records published to the ring")                                                \
	X(image_errors, "publish steps with a book image update the ring refused (instrument "     \
	                "outside the image, a status code beyond UF_STATUS_MAX); the stream "      \
	                "itself is complete")                                                      \
	X(cq_overflows, "io_uring completion-queue overflows seen (IORING_SQ_CQ_OVERFLOW)")        \
	X(sq_wakeups, "io_uring_enter calls made to wake the SQ thread or flush task work")        \
	X(ring_wakes, "wake-ups of sleeping consumers (FUTEX_WAKE; at most one per packet, after " \
	              "it)")                                                                       \
	X(ring_wakes_idle, "of those, wake-ups that found no consumer blocked in the kernel yet")  \
	X(ring_wakes_async, "of those, wake-ups the io_uring SQ thread made (IORING_OP_FUTEX_WAKE" \
	                    "): no system call by the feed thread")                                \
	X(ring_wake_errors, "wake-ups the SQ thread failed: made again as system calls, and "      \
	                    "the feed thread makes them itself from then on")                      \
	X(busy_polls, "receive polls that found nothing (spin iterations of the feed loop)")       \
	X(batches, "receive polls that returned at least one packet")                              \
	X(busy_ns, "feed loop time spent in turns that did work (packets, a snapshot step, a "     \
	           "gap timer, a filter switch), ns; only with busy_clock on, else 0")             \
	X(idle_pause, "gauge: 1 when the feed loop pauses the CPU after an empty poll, 0 when it " \
	              "spins without (config idle_pause; auto: no pause with SQPOLL); set as "     \
	              "the loop starts")                                                           \
	X(snapshots_loaded, "GLIMPSE snapshots loaded into fresh books (stream continued from "    \
	                    "their End of Snapshot sequence)")                                     \
	X(snapshot_messages, "ITCH messages applied from GLIMPSE snapshots")                       \
	X(snapshot_bytes, "ITCH message bytes received in GLIMPSE snapshots")                      \
	X(snapshot_duration_ns, "time spent loading snapshots, start to merge (sum, ns)")          \
	X(snapshot_last_duration_ns,                                                               \
	  "gauge: duration of the last snapshot loaded, start to merge "                           \
	  "(ns)")                                                                                  \
	X(snapshot_failures, "snapshot attempts given up (server down, timeout, rejected, buffer " \
	                     "full): the feed went on without, books flagged stale if touched")    \
	X(snapshot_buffered_packets, "live packets buffered while snapshots loaded (one copy per " \
	                             "sequence)")                                                  \
	X(snapshot_in_progress, "gauge: 1 while a snapshot loads (live packets are buffered)")     \
	X(snapshot_refused_lead, "snapshot loads refused: End of Snapshot beyond what the lines "  \
	                         "showed by more than snapshot.max_lead (books stale, retried)")   \
	X(snapshot_refused_lag, "snapshot loads refused: End of Snapshot older than what the "     \
	                        "lines showed at login by more than snapshot.max_lead")            \
	X(snapshot_refused_session, "snapshot logins or loads refused: the server's session is "   \
	                            "not the live lines' session")                                 \
	X(snapshot_refused_orders,                                                                 \
	  "snapshot loads refused: a buffered live message contradicts "                           \
	  "the snapshot's orders (ends one it holds, adds one it lacks...)")                       \
	X(snapshot_uncertain_books,                                                                \
	  "books flagged stale at a snapshot load: a live message of theirs lies where the "       \
	  "snapshot's orders cannot place End of Snapshot (partial execution, cancel)")            \
	X(snapshot_reloads, "snapshot loads started again to clear books a load flagged "          \
	                    "uncertain (at most snapshot.reload_uncertain in a row)")              \
	X(snapshot_pending, "gauge: 1 while a snapshot loads or one is due (books known wrong, "   \
	                    "or flagged uncertain and a re-load left): the books are not settled") \
	X(snapshot_hold_expired, "snapshot attempts given up after snapshot.max_hold_ms without "  \
	                         "a working login (the live data held is released)")               \
	X(snapshot_connections_lost, "snapshot server connections lost or dropped during "         \
	                             "attempts (why: /status snapshot.last_disconnect, the log)")  \
	UF_ARB_COUNTERS(X)                                                                         \
	UF_CAPTURE_COUNTERS(X)

#define UF_LAT_SUB_BITS 3 /* 8 sub-buckets per power of two */
#define UF_LAT_SUB      (1u << UF_LAT_SUB_BITS)
#define UF_LAT_MAX_EXP  40 /* values >= 2^40 ns (~18 min) land in the last bucket */
#define UF_LAT_NBUCKETS ((UF_LAT_MAX_EXP - UF_LAT_SUB_BITS + 1) * UF_LAT_SUB)

/* Log-linear histogram of nanoseconds. bucket i covers [uf_lat_bucket_low(i),
 * uf_lat_bucket_low(i + 1)); values below 8 ns have one bucket each. */
struct uf_lat_hist {
	uint64_t count;    /* samples */
	uint64_t sum_ns;   /* sum of samples (mean = sum_ns / count) */
	uint64_t max_ns;   /* largest sample */
	uint64_t negative; /* samples where publish time < rx time (clock step), not in buckets */
	uint64_t buckets[UF_LAT_NBUCKETS]; /* counts per bucket */
};

/* Stages of the per-packet path, in order. Each histogram holds the time from the end of the
 * previous stage to the end of this one, for the packets that delivered messages:
 *   receive      kernel receive timestamp -> the feed thread takes the packet
 *   arbitration  MoldUDP64 header + A/B arbitration -> the packet's messages are delivered
 *   decode       ITCH decode of the packet's messages
 *   books        order books and records (publish/)
 *   ring         symbol filter + records published to the ring
 *   image        book image updated for those records: the packet's trade/status updates plus
 *                the receive batch's deferred book copy (feed/sink.h), after the records
 *                are published and stamped: not part of wire-to-publish
 * (a datagram of more than UF_DECODE_FUSED_MAX blocks decodes and applies interleaved: all
 * of it counts as books). */
enum uf_stage {
	UF_STAGE_RECEIVE = 0,
	UF_STAGE_ARBITRATION,
	UF_STAGE_DECODE,
	UF_STAGE_BOOKS,
	UF_STAGE_RING,
	UF_STAGE_IMAGE,
	UF_STAGE_COUNT,
};

/* "receive", "arbitration", ... (NULL past the end). */
static inline const char *uf_stage_name(unsigned s)
{
	static const char *const names[UF_STAGE_COUNT] = {"receive", "arbitration", "decode",
	                                                  "books",   "ring",        "image"};
	return s < UF_STAGE_COUNT ? names[s] : NULL;
}

#define UF_STAT_FIELD(name, help) uint64_t name;

/* Counters of one line. Field names and help texts: UF_FEED_LINE_COUNTERS. */
struct uf_feed_line_stats {
	UF_FEED_LINE_COUNTERS(UF_STAT_FIELD)
};

/* Counters of one feed: feed-wide counters, then lines[0..nlines), then latency. */
struct uf_feed_stats {
	UF_FEED_COUNTERS(UF_STAT_FIELD)
	uint64_t nlines;                                    /* lines in use (1 or 2) */
	char line_names[UF_CFG_MAX_LINES][UF_CFG_NAME_MAX]; /* copied from the config at create */
	struct uf_feed_line_stats lines[UF_CFG_MAX_LINES];  /* per line counters */
	struct uf_lat_hist latency;                /* wire (kernel rx) to publish (ring), ns */
	struct uf_lat_hist stages[UF_STAGE_COUNT]; /* per stage, ns (enum uf_stage) */
	/* Gauges (current state, not totals). */
	uint64_t line_last_rx_ns[UF_CFG_MAX_LINES]; /* CLOCK_REALTIME of each line's last
	                                             * packet (kernel timestamp), 0 = none yet */
	uint64_t recovering;       /* 1 while a gap is open (waiting, re-requesting) */
	uint64_t session_ended;    /* 1 once the current session's end of session was reached */
	uint64_t books_stale;      /* books flagged stale by an unrecovered gap or a doubt (0
	                            * again at the next session: their content may be wrong until
	                            * then); with a symbol filter only the books it publishes,
	                            * what consumers see stale (uf_filter_stale_books) */
	uint64_t session_start_ns; /* CLOCK_REALTIME when the current session was first seen */
	uint64_t session_gen;      /* seqlock of `session`: odd while the feed thread writes it */
	char session[16];          /* current MoldUDP64 session, NUL-terminated, "" before any */
	/* Why the snapshot path last failed (names: feed/snapshot.h, shown in /status). */
	uint64_t snapshot_last_failure;    /* enum uf_snap_why of the last failed attempt, 0 none */
	uint64_t snapshot_last_disconnect; /* the last lost snapshot connection: errno | refused
	                                    * packet (1 + enum uf_soup_err) << 16 | its type
	                                    * letter << 24 (UF_SNAP_DISC_* in feed/snapshot.h) */
	uint64_t snapshot_last_claim;      /* End of Snapshot number of the last refused load */
	uint64_t snapshot_last_shown;      /* what the lines showed then (sequence after it) */
};

#undef UF_STAT_FIELD

/* Feed thread only: add `n` to a counter. Relaxed: readers only need an untorn value. */
static inline void uf_stat_add(uint64_t *c, uint64_t n)
{
	uf_store_relaxed_u64(c, *c + n);
}

/* Raises a counter to `v` when `v` is larger (for totals the kernel keeps, read late). */
static inline void uf_stat_raise(uint64_t *c, uint64_t v)
{
	if (v > *c)
		uf_store_relaxed_u64(c, v);
}

/* Bucket index of a sample in ns. O(1): one count-leading-zeros. */
static inline unsigned uf_lat_bucket(uint64_t ns)
{
	if (ns < UF_LAT_SUB)
		return (unsigned)ns;
	unsigned e = 63u - (unsigned)__builtin_clzll(ns); /* floor(log2 ns) >= SUB_BITS */
	if (e > UF_LAT_MAX_EXP)
		return UF_LAT_NBUCKETS - 1;
	unsigned sub = (unsigned)(ns >> (e - UF_LAT_SUB_BITS)) & (UF_LAT_SUB - 1);
	unsigned idx = (e - UF_LAT_SUB_BITS + 1) * UF_LAT_SUB + sub;
	return idx < UF_LAT_NBUCKETS ? idx : UF_LAT_NBUCKETS - 1;
}

/* Smallest value (ns) that falls into bucket `i` (i may be UF_LAT_NBUCKETS: upper bound). */
static inline uint64_t uf_lat_bucket_low(unsigned i)
{
	if (i < UF_LAT_SUB)
		return i;
	unsigned e = i / UF_LAT_SUB + UF_LAT_SUB_BITS - 1;
	uint64_t sub = i % UF_LAT_SUB;
	return (1ull << e) + (sub << (e - UF_LAT_SUB_BITS));
}

/* Feed thread only: record one latency sample. */
static inline void uf_lat_record(struct uf_lat_hist *h, int64_t ns)
{
	if (ns < 0) {
		uf_stat_add(&h->negative, 1);
		return;
	}
	uint64_t v = (uint64_t)ns;
	uf_stat_add(&h->buckets[uf_lat_bucket(v)], 1);
	uf_stat_add(&h->count, 1);
	uf_stat_add(&h->sum_ns, v);
	if (v > h->max_ns)
		uf_store_relaxed_u64(&h->max_ns, v);
}

/* Feed thread only: record `n` samples of the same value (the messages of one packet). */
static inline void uf_lat_record_n(struct uf_lat_hist *h, int64_t ns, uint64_t n)
{
	if (ns < 0) {
		uf_stat_add(&h->negative, n);
		return;
	}
	uint64_t v = (uint64_t)ns;
	uf_stat_add(&h->buckets[uf_lat_bucket(v)], n);
	uf_stat_add(&h->count, n);
	uf_stat_add(&h->sum_ns, v * n);
	if (v > h->max_ns)
		uf_store_relaxed_u64(&h->max_ns, v);
}

/* Value at quantile q (0 < q <= 1) of a histogram COPY (see uf_feed_stats_read): the upper
 * edge of the bucket holding that rank, capped at max_ns, so it never under-reports. 0 when
 * empty. q = 0.5, 0.99, 0.999 give p50/p99/p99.9; max is h->max_ns. O(buckets). */
static inline uint64_t uf_lat_quantile(const struct uf_lat_hist *h, double q)
{
	uint64_t total = 0;
	for (unsigned i = 0; i < UF_LAT_NBUCKETS; i++)
		total += h->buckets[i];
	if (total == 0)
		return 0;
	uint64_t rank = (uint64_t)(q * (double)total);
	if (rank == 0)
		rank = 1;
	if (rank > total)
		rank = total;
	uint64_t seen = 0;
	for (unsigned i = 0; i < UF_LAT_NBUCKETS; i++) {
		seen += h->buckets[i];
		if (seen >= rank) {
			uint64_t hi = uf_lat_bucket_low(i + 1) - 1;
			return hi < h->max_ns ? hi : h->max_ns;
		}
	}
	return h->max_ns;
}

/* Feed thread only: publish the current session (cold: once per session). Seqlock: readers
 * retry while session_gen is odd or changed, so they never see half of two sessions. */
static inline void uf_feed_stats_set_session(struct uf_feed_stats *st, const char *session,
                                             size_t len)
{
	uint64_t w[2] = {0, 0};
	memcpy(w, session, len < sizeof(w) - 1 ? len : sizeof(w) - 1);
	uf_store_relaxed_u64(&st->session_gen, st->session_gen + 1);
	uf_fence_release(); /* the odd generation is visible before any word changes */
	uint64_t *sw = (uint64_t *)(void *)st->session;
	uf_store_relaxed_u64(&sw[0], w[0]);
	uf_store_relaxed_u64(&sw[1], w[1]);
	uf_store_release_u64(&st->session_gen, st->session_gen + 1);
}

/* Any thread: copy every counter of `src` into `dst` with relaxed loads (untorn values). */
static inline void uf_feed_stats_read(const struct uf_feed_stats *src, struct uf_feed_stats *dst)
{
	const uint64_t *s = (const uint64_t *)src;
	uint64_t *d = (uint64_t *)dst;
	_Static_assert(sizeof(*src) % sizeof(uint64_t) == 0, "stats are whole uint64s");
	_Static_assert(offsetof(struct uf_feed_stats, session) % sizeof(uint64_t) == 0,
	               "session is two aligned words");
	for (size_t i = 0; i < sizeof(*src) / sizeof(uint64_t); i++)
		d[i] = uf_load_relaxed_u64(
		    &s[i]); /* names are written once before the thread starts */
	/* The session string: the seqlock's read side (bounded: a session changes rarely). */
	const uint64_t *sw = (const uint64_t *)(const void *)src->session;
	uint64_t w[2];
	for (int tries = 0; tries < 1000; tries++) {
		uint64_t g0 = uf_load_acquire_u64(&src->session_gen);
		w[0] = uf_load_relaxed_u64(&sw[0]);
		w[1] = uf_load_relaxed_u64(&sw[1]);
		uf_fence_acquire(); /* the words are read before the generation is checked */
		if (!(g0 & 1) && uf_load_relaxed_u64(&src->session_gen) == g0) {
			memcpy(dst->session, w, sizeof(w));
			break;
		}
		if (tries == 999)
			memset(dst->session, 0, sizeof(dst->session)); /* writer stuck mid-change */
	}
	dst->session[sizeof(dst->session) - 1] = '\0';
}

#endif /* UF_FEED_STATS_H */
