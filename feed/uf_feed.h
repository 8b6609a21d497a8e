/* uringfeed feed engine: one MoldUDP64 / ITCH 5.0 feed, from the wire to the ring.
 *
 * A feed owns its sockets (lines A and B, the re-request socket), its receive back end
 * (io_uring with SQPOLL, io_uring without SQPOLL, recvmmsg busy-poll, epoll + recvmmsg), the
 * A/B arbiter and gap recovery, the order books (publish/) and the shared-memory ring and
 * book image (ring/). uf_feed_run() is the run-to-completion loop of one pinned thread:
 *
 *   receive batch -> MoldUDP64 header -> arbitration / gap recovery -> ITCH decode
 *   -> books and records -> ring, then recycle the receive buffers.
 *
 * Threads: uf_feed_create() and uf_feed_destroy() on a control thread; uf_feed_run() on the
 * feed thread (it pins itself to cfg->cpu when >= 0 and sets up the io_uring there, because
 * IORING_SETUP_SINGLE_ISSUER / DEFER_TASKRUN tie the ring to the thread that uses it, and
 * first-touch puts its memory on that CPU's NUMA node). uf_feed_stats() may be read from any
 * thread at any time (relaxed counters, see uf_feed_stats.h). */
#ifndef UF_FEED_H
#define UF_FEED_H

#include <stddef.h>
#include <stdint.h>

#include "feed/feed_log.h" /* uf_feed_set_log: where the engine's few log lines go */
#include "feed/uf_feed_config.h"
#include "feed/uf_feed_stats.h"

struct uf_feed;    /* opaque */
struct uf_ring;    /* ring/uf_ring.h */
struct uf_journal; /* ring/journal_writer.h */

/* Creates a feed from `cfg` (copied; the caller may free it afterwards): opens and joins the
 * line sockets, opens the re-request socket, creates the books and the ring named
 * cfg->ring.name. Touches no io_uring yet (see uf_feed_run).
 * Returns 0 and *out, or -errno with one line in `err` saying what failed and why. */
int uf_feed_create(const struct uf_feed_config *cfg, struct uf_feed **out, char *err,
                   size_t errlen);

/* Bytes of memory uf_feed_create() and uf_feed_run() take for `cfg` and keep resident: the
 * books (uf_publish_memory), the ring's data file (records and book image), the receive
 * buffers and the recovery queue's bookkeeping (its packet copies are reserved, not
 * resident). 0 when a size is beyond what the engine accepts. For checking a configuration
 * against the host's memory before starting. Cold. */
uint64_t uf_feed_memory_estimate(const struct uf_feed_config *cfg);

/* Bytes of the ring's data file for `cfg` (records and book image; allocated in the ring
 * directory with fallocate, counted in uf_feed_memory_estimate too). Cold. */
uint64_t uf_feed_ring_estimate(const struct uf_feed_config *cfg);

/* Runs the feed loop on the calling thread until *stop becomes non-zero (checked between
 * batches, so it returns within one batch). Sets up the receive back end first, falling back
 * (logged through the hook of feed/feed_log.h) when the kernel refuses a feature: io_uring SQPOLL
 * -> io_uring without SQPOLL -> recvmmsg. Returns 0 when stopped, -errno when the back end could
 * not be set up or failed for good (message in uf_feed_error()). May be called again after it
 * returned. */
int uf_feed_run(struct uf_feed *feed, const volatile int *stop);

/* Counters of the feed; valid until uf_feed_destroy(). Read with uf_feed_stats_read(). */
const struct uf_feed_stats *uf_feed_stats(const struct uf_feed *feed);

/* The back end actually in use (after fallbacks): "io_uring", "io_uring_nosqpoll",
 * "recvmmsg", "epoll"; the configured one before the first uf_feed_run(). */
const char *uf_feed_backend_name(const struct uf_feed *feed);

/* Pages the feed's order and level tables got at create: "hugetlb", "thp" or "4k"
 * (publish/uf_publish.h: uf_publish_book_memory). For /status. */
const char *uf_feed_book_memory(const struct uf_feed *feed);

/* The feed's ring (producer handle), for monitoring: uf_ring_consumers(), the header's
 * tail and state. Valid until uf_feed_destroy(); never publish through it. */
struct uf_ring *uf_feed_ring(const struct uf_feed *feed);

/* The ring's day journal writer (ring/journal_writer.h: uf_journal_get_stats), NULL when
 * ring.journal is not configured. For monitoring, like uf_feed_ring. */
struct uf_journal *uf_feed_journal(const struct uf_feed *feed);

/* Replaces the symbol filter (n == 0: every symbol), from any thread while the feed runs
 * (SIGHUP). The list is copied. Books are kept for every instrument whatever the filter, so
 * a symbol that enters the filter is published at once, correctly: its whole book goes out
 * as a snapshot (SNAPSHOT_BEGIN, LEVEL..., SNAPSHOT_END) and into the book image; a symbol
 * that leaves it gets no more records (its image entry keeps its last state). Records of
 * instrument 0 (market-wide status) and gap markers always pass.
 * The feed thread applies the change between two batches. Returns 0, -EINVAL for a symbol
 * longer than 8 bytes, -ENOMEM, or -EBUSY when the previous change has not been picked up
 * within a second (the feed thread is not running). */
int uf_feed_set_symbols(struct uf_feed *feed, const char (*symbols)[9], uint32_t n);

/* Last setup or run error, "" when none. */
const char *uf_feed_error(const struct uf_feed *feed);

/* Marks the ring closed (consumers see it), closes sockets, frees everything. NULL is fine.
 * Must not race uf_feed_run(): stop and join the feed thread first. */
void uf_feed_destroy(struct uf_feed *feed);

/* Name of a back end ("io_uring", ...), NULL for an unknown value. */
const char *uf_backend_name(enum uf_backend b);

/* Back end for a name, or -EINVAL. */
int uf_backend_parse(const char *name, enum uf_backend *out);

#endif /* UF_FEED_H */
