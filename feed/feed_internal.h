/* The feed object, shared by the files of the engine (never included outside feed/):
 * feed.c (setup and teardown), pipeline.c (the feed thread's loop and per-packet path).
 * The image policy lives in sink.c, the symbol filter in filter.c. */
#ifndef UF_FEED_INTERNAL_H
#define UF_FEED_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "common/uf_compiler.h"
#include "decode/uf_frame.h"
#include "feed/arbiter.h"
#include "feed/capture.h"
#include "feed/filter.h"
#include "feed/ingest.h"
#include "feed/sink.h"
#include "feed/snapshot.h"
#include "feed/stage_timer.h"
#include "feed/uf_feed.h"
#include "publish/uf_proto.h"
#include "publish/uf_publish.h"
#include "publish/uf_step.h"

#define UF_FEED_RECS 1024 /* records buffered per packet before they go to the ring */

struct uf_feed {
	struct uf_feed_config cfg;    /* copy (symbols not kept) */
	struct uf_feed_stats stats;   /* counters (uf_feed_stats.h) */
	int nsrc;                     /* sockets: lines, then the re-request socket */
	int fds[UF_INGEST_MAX_SRC];   /* sockets by source index */
	int req_fd;                   /* re-request socket, -1 without recovery */
	struct uf_ingest ig;          /* receive back end (set up by uf_feed_run) */
	pthread_t thread;             /* the thread in uf_feed_run: the only one that may submit to
	                               * ig's ring (SINGLE_ISSUER), so the only one it wakes for */
	struct uf_arb arb;            /* arbitration and recovery */
	struct uf_publisher *pub;     /* books and records */
	struct uf_sink sink;          /* ring and book image (sink.h) */
	struct uf_filter filter;      /* symbol filter (filter.h) */
	enum uf_backend backend;      /* back end in use */
	const struct uf_proto *proto; /* the venue protocol (cfg.protocol, publish/uf_proto.h) */
	void *proto_state;            /* its per-feed scratch (proto->state_size bytes) */
	/* The publish step (publish/uf_step.h): records waiting in recs (step.nrec), rec_cap
	 * (UF_FEED_RECS, or less when the ring takes fewer in one publish), step_cap (per
	 * receive batch, pipeline.c: small in a short batch), the latency samples they carry,
	 * and the pipeline's hooks the protocol entry calls. */
	struct uf_pub_step step;
	struct uf_stage_timer tm; /* stage timing of the packet in flight (stage_timer.h) */
	uint64_t seen_sessions;   /* stats.sessions when the session gauge was last set */
	char err[256];            /* last error */
	uint64_t drops_read_ns;   /* when the sockets' drop totals were last read */
	uint32_t idle_polls;      /* empty polls since the idle clock was last read */
	struct uf_snapshot snap;  /* snapshot-then-stream (snapshot.h) */
	struct uf_capture *cap;   /* every datagram to pcapng (capture.h), NULL when off */
	UF_ALIGNED(UF_CACHELINE) struct uf_record recs[UF_FEED_RECS]; /* one packet's records */
};

/* 1 when the snapshot state machine has something to do this loop turn: a snapshot loads or
 * waits for the live session, one is due (books known wrong, or flagged uncertain with a
 * re-load left), a hole is open (size and age triggers), or a gap was given up (the books are
 * stale). Cheap: loads only. */
static inline int uf_feed_snapshot_due(const struct uf_feed *f)
{
	return f->snap.enabled &&
	       (f->snap.state != UF_SNAP_IDLE || f->snap.want || f->snap.reload ||
	        uf_arb_gap_open(&f->arb) || f->stats.gaps_unrecovered != f->snap.unrecovered_seen);
}

/* pipeline.c: the arbiter's callbacks into the pipeline (uf_feed_create hands them over). */
void uf_feed_pipeline_callbacks(struct uf_feed *f, struct uf_arb_cb *cb);

#endif /* UF_FEED_INTERNAL_H */
