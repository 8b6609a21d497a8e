/* Capture: every datagram a feed receives, as it arrived, into pcapng files on disk.
 *
 *   feed thread                               writer thread (one per capture)
 *   uf_capture_datagram(): EPB into the       pops filled chunks, writes each with its own
 *   current chunk (one copy, no system call)  io_uring (IORING_OP_WRITE_FIXED from buffers
 *   chunk full -> pushed on `full` (SPSC)     registered once), returns them on `free` (SPSC);
 *   no free chunk -> the datagram is dropped  rotates files, prunes old ones, counts errors.
 *   and counted (writer behind)
 *
 * The feed thread never waits: the only thing it can meet is an empty `free` queue, which is a
 * counted drop. Disk errors happen on the writer: the chunk is dropped (its datagrams counted
 * by reason: disk full, directory gone, read-only, other), the file is cut back to its last
 * whole block, one warning is logged per reason (then at most one every 10 s) and the
 * writer tries again with the next chunk (a new file when the old one is gone).
 *
 * Files: DIR/FEED-YYYYMMDDTHHMMSSZ-NNNN.pcapng, sorting by name is sorting by time. Each
 * starts with a Section Header and one Interface Description per source (see
 * uf_capture_params.ifs: the lines, then re-request answers, then the snapshot sessions'
 * TCP data) whose name and description carry the line, group and port, or the server; timestamps
 * are ns (if_tsresol 9), the kernel's receive time. A file is closed when the next chunk would take
 * it past rotate_bytes, and at a new session (uf_capture_new_session). After each new file, the
 * feed's files in DIR beyond max_total_bytes are deleted, oldest first.
 *
 * Writes are buffered (page cache), not O_DIRECT: docs/capture.md has the measurement. */
#ifndef UF_CAPTURE_H
#define UF_CAPTURE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "common/uf_compiler.h"
#include "common/uf_time.h"
#include "decode/uf_pcapng.h"
#include "feed/uf_feed_stats.h"

#define UF_CAPTURE_MAX_IF        4           /* lines A, B, re-request answers, spare */
#define UF_CAPTURE_CHUNK         (1u << 20)  /* bytes per hand-over (one write) */
#define UF_CAPTURE_NAME_MAX      96          /* interface name / description */
#define UF_CAPTURE_ROTATE        1u          /* chunk flag: start a new file before writing it */
#define UF_CAPTURE_TCP_SEG       16384       /* stream bytes per recorded TCP segment, at most */
#define UF_CAPTURE_IDLE_FLUSH_NS 10000000ull /* idle hand-over of a partial chunk, at most */

/* One capture interface (a source of datagrams). */
struct uf_capture_if {
	char name[UF_CAPTURE_NAME_MAX]; /* if_name: "A 233.54.12.111:26477" */
	char desc[UF_CAPTURE_NAME_MAX]; /* if_description: what it is */
	uint32_t dst_addr;              /* destination written into each IPv4 header (net order) */
	uint16_t dst_port;              /* destination UDP port (net order) */
	uint16_t src_port;              /* stream interfaces (TCP): the server's port */
	uint32_t src_addr;              /* ... and address (net order); datagrams carry their own */
};

struct uf_capture_params {
	char feed[32];                               /* feed name: file prefix, metrics */
	char dir[256];                               /* existing folder */
	uint64_t rotate_bytes;                       /* file size limit */
	uint64_t max_total_bytes;                    /* 0 = no limit */
	uint64_t buffer_bytes;                       /* chunk memory (rounded to chunks, >= 2) */
	int nif;                                     /* interfaces */
	struct uf_capture_if ifs[UF_CAPTURE_MAX_IF]; /* by source index */
};

/* Single-producer single-consumer queue of chunk indices. Free-running 32-bit positions;
 * the producer's and the consumer's on separate cache lines. */
struct uf_capture_q {
	UF_ALIGNED(128) uint32_t head; /* next to pop (consumer writes) */
	UF_ALIGNED(128) uint32_t tail; /* next to push (producer writes) */
	uint32_t mask;                 /* capacity - 1 (power of two >= chunks) */
	uint32_t *slots;               /* chunk indices */
};

/* What the feed thread knows about the chunk it fills. */
struct uf_capture_chunk {
	uint32_t used;       /* bytes of EPBs */
	uint32_t packets;    /* datagrams in them */
	uint32_t flags;      /* UF_CAPTURE_ROTATE */
	uint64_t last_rx_ns; /* receive time of the newest datagram (writer lag) */
};

struct uf_capture {
	struct uf_capture_params p;    /* copy */
	struct uf_feed_stats *st;      /* counters (capture_* of uf_feed_stats.h) */
	uint8_t *mem;                  /* nchunks * UF_CAPTURE_CHUNK bytes, one mapping */
	size_t mem_len;                /* its length */
	uint32_t nchunks;              /* chunks */
	struct uf_capture_chunk *meta; /* per chunk, written by whoever owns the chunk */
	struct uf_capture_q full;      /* feed -> writer */
	struct uf_capture_q free;      /* writer -> feed */
	/* feed thread */
	int64_t cur;                         /* chunk being filled, -1 = none */
	uint32_t tcp_seq[UF_CAPTURE_MAX_IF]; /* stream interfaces: bytes so far (TCP sequence) */
	uint64_t idle_flush_ns;              /* last idle hand-over (monotonic) */
	uint32_t pending_flags;              /* flags for the next chunk taken */
	/* writer thread */
	pthread_t thread;       /* the writer */
	int thread_up;          /* started */
	uint32_t stop;          /* set by uf_capture_close: drain, then exit */
	int fd;                 /* current file, -1 = none */
	uint64_t file_off;      /* its size */
	char path[512];         /* its name */
	uint32_t file_no;       /* files started by this capture (name suffix) */
	uint64_t last_check_ns; /* last check that `path` is still our file */
	uint64_t retry_ns;      /* no new file before this after a failed open */
	int open_err;           /* errno of that open (drops meanwhile count under it) */
	uint64_t logged_ns[5];  /* last warning per drop reason */
	uint64_t unlogged[5];   /* drops since that warning */
	uint64_t behind_seen;   /* writer-behind drops already logged */
};

/* Sets up the chunks (touched now), the queues and the writer thread with its io_uring. The
 * first file is opened by the writer when the first chunk arrives. Cold, control thread.
 * Returns 0 or -errno with a message in `err`. */
int uf_capture_open(struct uf_capture *c, const struct uf_capture_params *p,
                    struct uf_feed_stats *st, char *err, size_t errlen);

/* Feed thread: the current chunk, partly filled, goes to the writer now (idle moments, so a
 * quiet feed's datagrams reach the disk within the idle poll period, and before stopping). */
void uf_capture_flush(struct uf_capture *c);

/* Feed thread, idle path: uf_capture_flush at most once per UF_CAPTURE_IDLE_FLUSH_NS
 * (`now_ns` monotonic), so a trickle of traffic does not turn into one tiny write per
 * datagram: a quiet feed's datagrams reach the file within that much of going quiet. */
void uf_capture_flush_idle(struct uf_capture *c, uint64_t now_ns);

/* Feed thread: a new session began: the next datagrams go to a new file. Cold. */
void uf_capture_new_session(struct uf_capture *c);

/* Feed thread: takes a chunk from `free` when needed, -1 when none is there. */
int uf_capture_take_chunk(struct uf_capture *c, uint32_t need);

/* Feed thread, per datagram: appends its EPB (source `iface`, kernel receive time `rx_ns`,
 * 0 = now) to the current chunk. No wait, no system call: a full capture drops and counts. */
static inline void uf_capture_datagram(struct uf_capture *c, unsigned iface, const uint8_t *data,
                                       uint32_t len, uint64_t rx_ns, uint32_t from_addr,
                                       uint16_t from_port)
{
	uint32_t need = (uint32_t)uf_pcapng_epb_size(len);
	if (UF_UNLIKELY(c->cur < 0 || c->meta[c->cur].used + need > UF_CAPTURE_CHUNK) &&
	    uf_capture_take_chunk(c, need) < 0) {
		uf_stat_add(&c->st->capture_dropped_writer_behind, 1);
		return;
	}
	if (iface >= (unsigned)c->p.nif)
		iface = (unsigned)c->p.nif - 1;
	if (UF_UNLIKELY(!rx_ns))
		rx_ns = uf_now_realtime_ns(); /* no kernel timestamp: the vDSO clock */
	struct uf_capture_chunk *m = &c->meta[c->cur];
	const struct uf_capture_if *f = &c->p.ifs[iface];
	struct uf_pcapng_udp a = {.src_addr = from_addr,
	                          .dst_addr = f->dst_addr,
	                          .src_port = from_port,
	                          .dst_port = f->dst_port};
	uint8_t *out = c->mem + (size_t)c->cur * UF_CAPTURE_CHUNK + m->used;
	m->used += (uint32_t)uf_pcapng_epb_udp(out, iface, rx_ns, &a, data, len);
	m->packets++;
	m->last_rx_ns = rx_ns;
	uf_stat_add(&c->st->capture_packets, 1);
	uf_stat_add(&c->st->capture_bytes, need);
}

/* Feed thread: `len` bytes received on the stream interface `iface` (a snapshot session's
 * TCP data), recorded now as TCP segments of at most UF_CAPTURE_TCP_SEG bytes continuing
 * that interface's sequence. Same rules as a datagram: a full capture drops and counts. Cold
 * (snapshot sessions only). */
void uf_capture_stream(struct uf_capture *c, unsigned iface, const uint8_t *data, size_t len);

/* Stops the writer after it wrote every chunk handed over, closes the file, frees all.
 * Safe on a zeroed struct. Control thread, after the feed thread stopped. */
void uf_capture_close(struct uf_capture *c);

/* The pcapng file header (SHB and one IDB per interface) for `p` into out[0..cap).
 * Returns its size, 0 when cap is short. Exposed for tests. */
size_t uf_capture_file_header(const struct uf_capture_params *p, uint8_t *out, size_t cap);

#endif /* UF_CAPTURE_H */
