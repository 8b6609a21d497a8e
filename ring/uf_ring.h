/* uringfeed ring, producer side: one broadcast ring of 64-byte records plus the book image
 * (last-value cache) in POSIX shared memory, read by any number of consumer processes through
 * libufconsumer (ring/ufconsumer.h). Layout and protocol: ring/uf_ring_layout.h, docs/ring.md.
 *
 * Hot path (the feed thread, per exchange message): uf_ring_publish() and the
 * uf_ring_image_*() setters. They never wait for a consumer, never allocate and make no system
 * call, except one FUTEX_WAKE when (and only when) some consumer is asleep in
 * uf_consumer_wait(). Everything else here is cold (setup, monitoring, shutdown).
 *
 * One producer thread per ring: the hot-path functions are not safe to call concurrently on
 * the same ring.
 */
#ifndef UF_RING_H
#define UF_RING_H

#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "common/uf_atomic.h"
#include "common/uf_compiler.h"
#include "publish/uf_record.h"
#include "publish/uf_level.h"
#include "ring/uf_ring_layout.h"

#define UF_RING_DEFAULT_CAPACITY    (1u << 20)
#define UF_RING_DEFAULT_CONSUMERS   64
#define UF_RING_DEFAULT_DEPTH       10
#define UF_RING_DEFAULT_INSTRUMENTS 16384
#define UF_RING_NUMA_AUTO           (-1) /* node of the CPU the creating thread runs on */
#define UF_RING_NUMA_NONE           (-2) /* do not bind */

struct uf_ring_options {
	uint64_t capacity;        /* records, power of two, >= 16 */
	uint32_t mode;            /* who may read: 0600 (owner only) or 0640 (owner and `gid`).
	                           * Clamped: bits for "other" are dropped (0644 acts as 0640)
	                           * and no class but the owner ever gets write access. The
	                           * directory becomes 0700/0750, the data 0600/0640, the
	                           * socket 0600/0660 (connecting needs write on it) */
	int64_t gid;              /* group owning the directory and files, -1 = the creator's */
	int numa_node;            /* node to bind to, UF_RING_NUMA_AUTO or UF_RING_NUMA_NONE */
	int hugepages;            /* 1 = ask for transparent huge pages (what was granted is
	                           * read back: uf_ring_hugepages); a hugetlbfs `dir` always
	                           * gets explicit huge pages */
	uint32_t max_consumers;   /* consumer table slots */
	uint32_t depth;           /* book image levels per side, 1..UF_RING_MAX_DEPTH */
	uint32_t max_instruments; /* book image entries; instrument ids are 0..max-1 */
	const char *dir;          /* base directory holding the ring's private directory
	                           * uf.NAME; NULL = $UF_RING_DIR or /dev/shm */
	uint64_t first_seq;       /* sequence of the first record (0): a producer restarted
	                           * mid-day continues the day's journal after its last whole
	                           * record (uf_journal_resume_seq, docs/journal.md) */
};

/* A producer's other way to wake the ring's sleepers (uf_ring_set_waker): asked to make
 * FUTEX_WAKE(word, all) happen soon, without the calling thread making the system call (the
 * feed hands it to its io_uring SQ thread). Returns 0 when it took the request, -errno when
 * it did not (the ring then makes the system call itself). */
typedef int (*uf_ring_waker_fn)(void *ctx, uint32_t *word);

/* Producer handle. Fields are visible so the hot path can be inlined; treat them as private. */
struct uf_ring {
	struct uf_ring_hdr *hdr;       /* mapping of the data file (read-write) */
	struct uf_ring_ctable *ct;     /* mapping of the consumer table (read-write) */
	struct uf_record *slots;       /* hdr + ring_off */
	struct uf_image_hdr *image;    /* hdr + image_off */
	uint64_t mask;                 /* capacity - 1 */
	uint64_t tail;                 /* local copy of hdr->tail (only this thread writes it) */
	uint64_t max_batch;            /* largest n accepted by uf_ring_publish */
	uint64_t pf_end;               /* slots below this sequence were prefetched for write */
	int batch;                     /* 0, 1 inside image_begin/end, 2 inside batch_begin/end */
	uint32_t ntouched;             /* entries held open (odd lock) by the bracket */
	uint32_t *touched;             /* their ids (max_instruments entries, setup-allocated) */
	uint8_t *is_touched;           /* per id: 1 while in touched[] */
	size_t data_size;              /* bytes mapped at hdr */
	size_t ct_size;                /* bytes mapped at ct */
	char name[UF_RING_NAME_MAX];   /* ring name */
	char dir[128];                 /* base directory */
	struct uf_ring_server *server; /* thread handing the table's memfd to consumers */
	uint32_t nslots;               /* the producer's copy of the table's slot count: the
	                                * table's own field is consumer-writable input */
	uint64_t generation;           /* the producer's copy of the generation */
	uint64_t table_repairs;        /* times uf_ring_reap found and repaired a damaged table */
	/* Deferred wake-up (uf_ring_defer_wake): publish only notes that a sleeper must be
	 * woken; the producer wakes once per batch of publishes with uf_ring_wake_flush. */
	int defer_wake;         /* 1: uf_ring_publish leaves the FUTEX_WAKE to the flush */
	int wake_pending;       /* a publish saw a sleeper since the last wake */
	uint64_t wakes;         /* wake-ups made (by publish, flush or close) */
	uint64_t wakes_idle;    /* of those, the ones that found nobody blocked in the kernel
	                         * (a woken consumer not yet running still counts as a sleeper;
	                         * unknown for the ones handed to a waker) */
	uint64_t wakes_async;   /* of those, the ones handed to the waker (uf_ring_set_waker) */
	uf_ring_waker_fn waker; /* NULL: FUTEX_WAKE system calls */
	void *waker_ctx;
};

/* What uf_ring_consumers() reports per registered consumer. */
struct uf_ring_consumer_info {
	uint32_t slot;         /* index in the consumer table */
	int32_t pid;           /* consumer process */
	uint64_t position;     /* next sequence it will read */
	uint64_t lag;          /* records published that it has not read yet */
	uint64_t last_seen_ns; /* CLOCK_REALTIME of its last activity (coarse) */
	uint64_t received;     /* records it got */
	uint64_t lost;         /* records it lost to laps */
	uint64_t laps;         /* times it was lapped */
	int sleeping;          /* 1 while blocked in FUTEX_WAIT */
	char tag[16];          /* label the consumer gave itself, cleaned (uf_label_clean):
	                        * whole UTF-8 characters, no control character */
};

/* Fills `opt` with the defaults above (mode 0600, hugepages on, NUMA auto). */
void uf_ring_options_init(struct uf_ring_options *opt);

/* Creates ring `name` ([A-Za-z0-9_.-], at most 31 bytes) in its private directory
 * <dir>/uf.<name> (created 0700/0750; an existing one must be a real directory owned by this
 * user, else -EPERM/-ELOOP/-ENOTDIR "squatted"): allocates the data file with fallocate
 * (-ENOSPC with the path and size when the file system is full; nothing left behind), binds
 * it to the NUMA node, advises huge pages, makes the sealed consumer table and the socket
 * that hands it out (one small thread, blocked in poll), then atomically replaces any
 * previous ring of that name (whose consumers see -ESTALE). The new generation is greater
 * than the old one. Refuses (-EBUSY) to replace a ring another live process still produces
 * into. On error writes a one-line reason to `err` and returns -errno.
 * Cold: allocates, maps, touches every page, starts a thread (with the caller's CPU
 * affinity: call it from a control thread, not from a pinned busy-polling one). */
UF_COLD int uf_ring_create(const char *name, const struct uf_ring_options *opt,
                           struct uf_ring **out, char *err, size_t errlen);

/* Marks the ring closed (consumers drain what is left and then get -EPIPE), wakes every
 * sleeper, unmaps and frees `r`. The files stay so late consumers see "closed"; the next
 * uf_ring_create of the same name replaces them, uf_ring_unlink removes them. */
UF_COLD void uf_ring_close(struct uf_ring *r);

/* Removes ring `name` in `dir` (NULL = default): its files and its private directory (and
 * the two files of a ring of the old layout). -ENOENT when absent. */
UF_COLD int uf_ring_unlink(const char *name, const char *dir);

/* Fills up to `max` entries about the registered consumers; returns how many are registered.
 * Reads the table only: never blocks and never waits for a consumer. */
UF_COLD int uf_ring_consumers(struct uf_ring *r, struct uf_ring_consumer_info *out, size_t max);

/* Frees the table slots of consumers whose process is gone (or a zombie, or a reused pid).
 * First checks the table against the producer's copies: a damaged header, an impossible
 * sleeper count or slot flag is repaired, counted in table_repairs and logged to stderr.
 * Returns the number of slots freed. Cold: reads /proc. */
UF_COLD int uf_ring_reap(struct uf_ring *r);

/* Wakes every consumer sleeping on the ring: clears the sleeping flag of their table slots
 * ("woken": see uf_ring_wake_flush), then bumps the wake word and makes one FUTEX_WAKE (or
 * hands it to the waker). Called by uf_ring_publish when needed, or by uf_ring_wake_flush.
 * Returns the number of threads the kernel woke (0: none was blocked yet; the bump alone
 * stops those about to block), UF_RING_WAKE_ASYNC when the waker took it, or -errno. */
#define UF_RING_WAKE_ASYNC INT_MAX
int uf_ring_wake(struct uf_ring *r);

/* Producer: from now on uf_ring_wake hands its FUTEX_WAKE to `fn(ctx, word)` (NULL: makes
 * the system call again). The waker is called on the threads that publish and wake; it must
 * be removed before what it uses goes away, and before uf_ring_close. Correctness does not
 * depend on it: the wake word is bumped before the request either way (a consumer about to
 * sleep sees the bump), and a consumer's sleep is bounded by its own slices. */
static inline void uf_ring_set_waker(struct uf_ring *r, uf_ring_waker_fn fn, void *ctx)
{
	r->waker = fn;
	r->waker_ctx = ctx;
}

/* 1 when some consumer slot says "sleeping" (flag set, not cleared by a wake since): a
 * consumer that went to sleep after the last uf_ring_wake. Call after seeing sleepers != 0.
 * O(table slots); the producer's bound, not the table's. */
int uf_ring_unwoken_sleeper(struct uf_ring *r);

/* Producer: with `on`, uf_ring_publish no longer makes the FUTEX_WAKE itself when it sees a
 * sleeper; it sets wake_pending and the producer calls uf_ring_wake_flush when it chooses
 * (the feed: after each publish step's image updates, never between a publish and its
 * image). Without a flush sleepers are not woken: a producer that defers must flush before it
 * idles. Correctness is unchanged: the sleeper check still follows every tail store (no lost
 * wake-up), only the system call moves, and it is made only for a consumer not woken yet. */
static inline void uf_ring_defer_wake(struct uf_ring *r, int on)
{
	r->defer_wake = on;
}

/* Makes the wake-up the publishes since the last flush owe (deferred mode). Returns -1 when
 * no call was needed: none owed; the sleeper count fell to 0 meanwhile (every counted sleeper
 * left FUTEX_WAIT and re-checks the tail before sleeping again); or every counted sleeper was
 * already woken by an earlier call and has not run yet (its slot flag was cleared by that
 * call; a consumer that went to sleep after it set its flag again, before counting itself).
 * Else uf_ring_wake's result. */
static inline int uf_ring_wake_flush(struct uf_ring *r)
{
	if (UF_LIKELY(!r->wake_pending))
		return -1;
	r->wake_pending = 0;
	if (uf_load_relaxed_u32(&r->ct->sleepers) == 0 || !uf_ring_unwoken_sleeper(r))
		return -1;
	return uf_ring_wake(r);
}

/* 0 small pages (the fallback), 1 transparent huge pages (granted: the data mapping's
 * ShmemPmdMapped in smaps after the pre-fault; on /dev/shm that takes the tmpfs mount option
 * huge=within_size or huge=always), 2 explicit huge pages (options.dir is a hugetlbfs
 * mount). For the startup log. */
static inline int uf_ring_hugepages(const struct uf_ring *r)
{
	return (int)r->hdr->hugepages;
}

/* NUMA node the memory was bound to, -1 when not bound (no libnuma support). */
static inline int uf_ring_numa_node(const struct uf_ring *r)
{
	return r->hdr->numa_node;
}

static inline uint64_t uf_ring_generation(const struct uf_ring *r)
{
	return r->hdr->generation;
}

/* Sequence the next published record will get (= records published so far). Stamp image
 * updates with this value after publishing the records of the same message. */
static inline uint64_t uf_ring_tail(const struct uf_ring *r)
{
	return r->tail;
}

/* Slots the producer asks for ahead of its tail, for write: a slot was last written a lap
 * ago (capacity x 64 bytes: out of every cache), and the store that finds it missing waits for
 * the line, and the tail's release store, so the consumers, with it (perf: four fifths of
 * the feed's ring publish was that wait, issue 26). Asked for one publish early, the lines
 * arrive while the next step's books are made. 64 records: two of the feed's largest steps. */
#define UF_RING_PREFETCH_AHEAD 64u

/* Prefetches, for write, the slots from the last one asked for (or the tail) to tail +
 * UF_RING_PREFETCH_AHEAD: every slot once, one line each (a record is one line). */
static inline void uf_ring_prefetch_ahead(struct uf_ring *r, uint64_t tail)
{
	uint64_t from = r->pf_end > tail ? r->pf_end : tail;
	uint64_t to = tail + UF_RING_PREFETCH_AHEAD;
	for (uint64_t s = from; s < to; s++)
		__builtin_prefetch(&r->slots[s & r->mask], 1, 3);
	r->pf_end = to;
}

/* Publishes `n` records (1 <= n <= capacity / 4). Never waits: a consumer that is more than
 * `capacity` behind is lapped and learns it. Returns 0, or -EMSGSIZE when n is too large
 * (nothing published). Cost: n 64-byte copies, two stores, one full fence; a syscall only
 * when some consumer sleeps. Publish each exchange message's records in one call: the call
 * also declares the image complete for every record before it (see uf_ring_image_commit). */
static inline int uf_ring_publish(struct uf_ring *r, const struct uf_record *recs, size_t n)
{
	uint64_t t = r->tail;
	uint64_t end = t + n;

	if (UF_UNLIKELY(n - 1 >= r->max_batch))
		return n == 0 ? 0 : -EMSGSIZE;
	/* implicit uf_ring_image_commit: the previous message's image updates are done before
	 * this message is published (release: they are visible to whoever loads the value).
	 * Not while an image bracket is open: a producer that keeps one open across publishes
	 * (the feed's deferred image, feed/sink.h) has not made those updates yet, and
	 * committing would let a late consumer skip records its snapshot lacks. The bracket's
	 * end commits instead. */
	if (UF_LIKELY(!r->batch))
		uf_store_release_u64(&r->image->commit_seq, t);
	uf_store_relaxed_u64(&r->hdr->claim, end);
	uf_fence_release(); /* claim is visible before any slot of this batch changes */
	for (size_t i = 0; i < n; i++)
		r->slots[(t + i) & r->mask] = recs[i];
	uf_store_release_u64(&r->hdr->tail, end); /* the records are visible before the tail */
	r->tail = end;
	uf_ring_prefetch_ahead(r, end);
	uf_fence_seq_cst(); /* tail store before the sleepers load: pairs with the consumer's
	                     * sleepers increment + fence + tail load (no lost wake-up) */
	if (UF_UNLIKELY(uf_load_relaxed_u32(&r->ct->sleepers) != 0)) {
		if (r->defer_wake)
			r->wake_pending = 1; /* the producer's uf_ring_wake_flush makes the call */
		else
			uf_ring_wake(r);
	}
	return 0;
}

/* ---- Book image setters (hot path; each is one seqlock write of one instrument) ----
 * `seq` is the stream sequence the entry reflects after this update: pass uf_ring_tail(r)
 * taken after publishing the message's records. Return 0, or -ERANGE for an instrument id
 * >= max_instruments, -EINVAL for a bad side. A side with n > depth levels is cut to depth
 * and flagged truncated (UF_IMAGE_F_TRUNC_*): pass depth + 1 levels when the book may be
 * deeper, so a late joiner learns that its copy is cut. */

/* Brackets several setters into one consistent update: every entry a setter touches between
 * begin and end stays locked (readers retry) until end, which stamps them all with `seq`; the
 * setters' own `seq` arguments are ignored inside. A message that changes more than one thing
 * of an instrument (both sides; a level and a trade) MUST be bracketed: otherwise a reader
 * could copy the first change already stamped as if the whole message were applied, and skip
 * the stream records of the rest (a gap).
 *   uf_ring_image_begin(r, id) / uf_ring_image_end(r, seq): one message, one instrument.
 *   uf_ring_image_batch_begin(r) / uf_ring_image_batch_end(r, seq): everything the records of
 *   one uf_ring_publish call changed (a packet's worth, any instruments, any order); end also
 *   commits (see uf_ring_image_commit), so pass the tail after that publish.
 * Entries stay locked for the length of the bracket: keep it to one message or packet, or
 * (the feed's deferred image) one receive batch. A bracket may stay open across publishes:
 * they then do not commit (uf_ring_publish), and batch_end, given the tail after the last of
 * them, stamps and commits everything at once.
 * Returns -ERANGE for a bad id, -EBUSY when a bracket is already open. */
int uf_ring_image_begin(struct uf_ring *r, uint32_t instrument);
void uf_ring_image_end(struct uf_ring *r, uint64_t seq);
int uf_ring_image_batch_begin(struct uf_ring *r);
void uf_ring_image_batch_end(struct uf_ring *r, uint64_t seq);

/* Declares that the image reflects every record published so far: call it once per message,
 * after both publishing its records and updating the image (one release store).
 * uf_ring_publish does the same for the records before it, so a producer that publishes each
 * message's records in one call gets this for free one message later; calling it makes a
 * late consumer's snapshot current at once. It lets a late consumer
 * resume from a recent sequence even for instruments that have been quiet for longer than
 * the ring holds: a snapshot's stamp is then max(entry stamp, commit sequence). */
static inline void uf_ring_image_commit(struct uf_ring *r)
{
	if (UF_UNLIKELY(r->batch))
		return; /* a bracket is open: its end commits (see uf_ring_publish) */
	/* the entry updates before it are visible to a reader that loads commit_seq */
	uf_store_release_u64(&r->image->commit_seq, r->tail);
}

/* Replaces the top levels of one side (`side` 'B' or 'S', best first); levels past `n` are
 * cleared. */
int uf_ring_image_set_levels(struct uf_ring *r, uint32_t instrument, int side,
                             const struct uf_level *levels, uint32_t n, uint64_t seq,
                             uint64_t rx_ts);

/* Issue 26: a publish step changes a few levels of a side, not the side; the image copies
 * only those, straight from the books into the entry (no staging buffer). The producer opens
 * one side with uf_ring_image_side_begin (the entry is locked: inside a bracket until the
 * bracket ends), finds where the changed prices land with uf_ring_image_side_span, writes the
 * levels that changed into w->lv[] (best first, at most w->depth slots, `reserved` zero), and
 * closes with uf_ring_image_side_end, giving the side's whole level count: the count is cut to
 * depth and flagged truncated (as uf_ring_image_set_levels), the slots the side lost are
 * cleared, the entry's receive time and stamp move as any setter's. What a reader sees is
 * then exactly what uf_ring_image_set_levels with the whole side would have left, provided
 * the caller wrote every slot that changed. */
struct uf_ring_side {
	struct uf_image_entry *e; /* the entry, locked */
	struct uf_level *lv;      /* the side's `depth` level slots in it, best first */
	uint32_t n;               /* the side's level count in the image (<= depth) */
	uint32_t cut;             /* 1: the side was deeper than the image (flagged truncated) */
	uint32_t depth;           /* image levels per side */
	int side;                 /* UF_SIDE_BID or UF_SIDE_ASK */
};

/* A side given more levels than the image depth is cut, and says so: a late joiner must know
 * that its copy of the book is not the whole book (UF_BOOKF_TRUNCATED_* in the snapshot).
 * `flags` with the side's truncated `bit` set when `cut`, cleared when not; for every setter
 * (ring/image.c) and the in-place side write below. */
static inline uint32_t uf_ring_set_trunc(uint32_t flags, uint32_t bit, uint32_t cut)
{
	return cut ? flags | bit : flags & ~bit;
}

/* The entry's sequence lock, shared by every setter (ring/image.c) and the in-place side
 * write below, which is inline for the feed's per-side image copy. Lock: the odd value is
 * visible before any field of the entry changes. Unlock: stamps `seq`, marks the entry
 * present, and every field change is visible before the even value. */
static inline void uf_ring_entry_lock(struct uf_image_entry *e)
{
	uf_store_relaxed_u64(&e->lock, e->lock + 1);
	uf_fence_release(); /* the odd lock is visible before any field of the entry changes */
}

static inline void uf_ring_entry_unlock(struct uf_image_entry *e, uint64_t seq)
{
	e->stamp = seq;
	e->present = 1;
	uf_store_release_u64(&e->lock, e->lock + 1); /* every field change before the even lock */
}

/* Opens entry `id` for writing (NULL for an id >= max_instruments): readers that start now
 * (or are mid-copy) will retry. Inside a bracket the entry is locked once and stays locked
 * until the bracket ends (ring/image.c release_touched); outside one uf_ring_entry_end
 * releases it. */
static inline struct uf_image_entry *uf_ring_entry_begin(struct uf_ring *r, uint32_t id)
{
	struct uf_image_entry *e;

	if (UF_UNLIKELY(id >= r->image->max_instruments))
		return NULL;
	e = uf_image_entry_at(r->image, id);
	if (r->batch) {
		if (!r->is_touched[id]) {
			r->is_touched[id] = 1;
			r->touched[r->ntouched++] = id;
			uf_ring_entry_lock(e);
		}
		return e;
	}
	uf_ring_entry_lock(e);
	return e;
}

static inline void uf_ring_entry_end(struct uf_ring *r, struct uf_image_entry *e, uint64_t seq)
{
	if (!r->batch)
		uf_ring_entry_unlock(e, seq);
}

/* Opens `side` of `instrument` for writing in place and fills *w. Returns 0, -ERANGE for an
 * id >= max_instruments, -EINVAL for a bad side (nothing locked then). */
static inline int uf_ring_image_side_begin(struct uf_ring *r, uint32_t instrument, int side,
                                           struct uf_ring_side *w)
{
	uint32_t depth = r->image->depth;
	struct uf_image_entry *e;

	if (UF_UNLIKELY(side != UF_SIDE_BID && side != UF_SIDE_ASK))
		return -EINVAL;
	e = uf_ring_entry_begin(r, instrument);
	if (UF_UNLIKELY(!e))
		return -ERANGE;
	w->e = e;
	w->depth = depth;
	w->side = side;
	if (side == UF_SIDE_BID) {
		w->lv = uf_image_levels(e);
		w->n = e->nbid;
		w->cut = !!(e->flags & UF_IMAGE_F_TRUNC_BID);
	} else {
		w->lv = uf_image_levels(e) + depth;
		w->n = e->nask;
		w->cut = !!(e->flags & UF_IMAGE_F_TRUNC_ASK);
	}
	if (UF_UNLIKELY(w->n > depth))
		w->n = depth; /* every setter keeps it <= depth; bound the clearing anyway */
	return 0;
}

/* Closes what uf_ring_image_side_begin opened: the side has `total` levels in the books (the
 * image keeps min(total, depth) and flags the cut), rx_ts is its latest change; outside a
 * bracket the entry is released stamped `seq`. */
static inline void uf_ring_image_side_end(struct uf_ring *r, const struct uf_ring_side *w,
                                          uint64_t total, uint64_t seq, uint64_t rx_ts)
{
	struct uf_image_entry *e = w->e;
	uint32_t cut = total > w->depth;
	uint32_t n = cut ? w->depth : (uint32_t)total;
	uint32_t bit = w->side == UF_SIDE_BID ? UF_IMAGE_F_TRUNC_BID : UF_IMAGE_F_TRUNC_ASK;

	/* Slots past the old count are zero already (every setter clears past its count), so
	 * only the ones the side lost are cleared. */
	for (uint32_t i = n; i < w->n; i++)
		w->lv[i] = (struct uf_level){0};
	if (w->side == UF_SIDE_BID)
		e->nbid = n;
	else
		e->nask = n;
	e->flags = uf_ring_set_trunc(e->flags, bit, cut);
	e->update_rx_ts = rx_ts;
	uf_ring_entry_end(r, e, seq);
}

/* Where changes between prices `best` and `worst` (best <= worst in the side's order) land in
 * the open side as the image holds it: *from = the levels strictly better than `best` (they
 * did not change), *end = the levels not strictly worse than `worst` (below them the levels
 * only moved by what the side gained or lost). A change wholly below the image's last level
 * (a deep book changing under the top `depth`) is found from that level alone: from = end =
 * n. The producer's own entry: no lock needed to read it. */
static inline void uf_ring_image_side_span(const struct uf_ring_side *w, int64_t best,
                                           int64_t worst, uint32_t *from, uint32_t *end)
{
	const struct uf_level *lv = w->lv;
	uint32_t i = 0, n = w->n;

	if (w->side == UF_SIDE_BID) {
		if (n && lv[n - 1].price > best) {
			*from = *end = n;
			return;
		}
		while (i < n && lv[i].price > best)
			i++;
		*from = i;
		while (i < n && lv[i].price >= worst)
			i++;
	} else {
		if (n && lv[n - 1].price < best) {
			*from = *end = n;
			return;
		}
		while (i < n && lv[i].price < best)
			i++;
		*from = i;
		while (i < n && lv[i].price <= worst)
			i++;
	}
	*end = i;
}

/* Replaces both sides at once (one consistent update). */
int uf_ring_image_set_book(struct uf_ring *r, uint32_t instrument, const struct uf_level *bids,
                           uint32_t nbid, const struct uf_level *asks, uint32_t nask, uint64_t seq,
                           uint64_t rx_ts);

/* Records the latest value of status `code` in its own slot (code - 1): every defined code
 * fits. Returns 0, -EINVAL for 0 or a code beyond UF_STATUS_MAX (nothing written), -ERANGE
 * for an instrument outside the image. */
int uf_ring_image_set_status(struct uf_ring *r, uint32_t instrument, uint32_t code, int64_t price,
                             uint64_t shares, uint64_t exch_ts, uint64_t seq);

/* Records a trade: last price/shares/times, volume += shares, trades += 1. */
int uf_ring_image_add_trade(struct uf_ring *r, uint32_t instrument, int64_t price, uint64_t shares,
                            uint64_t exch_ts, uint64_t rx_ts, uint64_t seq);

/* Directory entry: 8 symbol bytes (space padded, as UF_REC_INSTRUMENT's ref), round lot,
 * market category. */
int uf_ring_image_set_symbol(struct uf_ring *r, uint32_t instrument, uint64_t symbol,
                             uint32_t round_lot, uint32_t category, uint64_t seq);

/* Sets or clears UF_RECF_STALE on one instrument, or on every present one when instrument is
 * UINT32_MAX (entries first set in the open bracket included: they are present once it ends;
 * O(max_instruments): the gap and doubt-of-all paths, not per message). */
int uf_ring_image_set_stale(struct uf_ring *r, uint32_t instrument, int stale, uint64_t seq);

/* A new session (UF_REC_RESET): empties both sides, clears the stale and truncated flags and
 * starts last trade, volume and trades over; keeps the directory and statuses. One
 * instrument, or every present one when instrument is UINT32_MAX (as uf_ring_image_set_stale;
 * O(max_instruments): the session path, not per message). Bracket it in the batch of the RESET
 * record's publish. */
int uf_ring_image_reset_book(struct uf_ring *r, uint32_t instrument, uint64_t seq);

/* Packs a symbol string ("AAPL") into the 8 space-padded bytes the image and records use. */
uint64_t uf_ring_symbol_pack(const char *sym);

#endif /* UF_RING_H */
