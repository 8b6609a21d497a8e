/* ITCH 5.0 over MoldUDP64: a data packet's messages decoded in one pass and applied through
 * the publisher's batch path (publish/proto_itch50.h).
 *
 * The packet is decoded whole into the entry's scratch (decode/uf_batch.h: the block walk
 * and the decode overlap), then applied in runs of consecutive messages that decoded; a
 * message that did not is counted and put in doubt at its place. Datagrams of more blocks
 * than one pass takes (jumbo) are decoded and applied in chunks. */
#include <errno.h>
#include <string.h>

#include "common/uf_compiler.h"
#include "common/uf_endian.h"
#include "common/uf_nyday.h"
#include "decode/uf_decode.h"
#include "publish/proto_itch50.h"
#include "publish/publisher.h"
#include "publish/uf_venue.h"

/* One packet's decoded messages and their decode results (the entry's per-feed state). */
struct uf_itch50_state {
	struct uf_itch_msg msgs[UF_DECODE_FUSED_MAX]; /* decoded messages */
	int8_t rc[UF_DECODE_FUSED_MAX];               /* what decoding each returned */
	struct uf_nyday day; /* the New York day of the receive times, whose UF_STATUS_VENUE
	                      * was published (zeroed: none yet) */
};

#define UF_ITCH50_MIC "XNAS    " /* Nasdaq's ISO 10383 code, as UF_STATUS_VENUE carries it */

/* A packet received on another New York day than the last one (or the feed's first): ITCH
 * does not carry its date, but a live feed receives its day's session that day, so the
 * receive time gives it. Publishes the venue and date (UF_STATUS_VENUE, an event of its own)
 * before the packet's records, as the IEX entries do for their day. Cold: once a day. */
static UF_COLD void uf_itch50_new_day(struct uf_pub_step *s, struct uf_itch50_state *st,
                                      uint64_t seq, uint64_t rx_ns)
{
	uf_nyday_set(&st->day, rx_ns);
	uf_step_room(s, UF_REC_MAX_PER_MSG);
	s->nrec += (size_t)uf_venue_day(s->pub, seq, rx_ns, rx_ns - st->day.start_ns, UF_ITCH50_MIC,
	                                st->day.date, s->recs + s->nrec, s->step_cap - s->nrec);
}

static inline enum uf_step_err uf_itch50_err(int rc)
{
	return rc == -ENOMSG ? UF_STEP_ERR_UNKNOWN : UF_STEP_ERR_BAD_LENGTH;
}

/* A message that did not decode: its locate when the 3 bytes type + locate are there, else
 * every book. Cold. */
static void uf_itch50_error(struct uf_pub_step *s, int rc, const uint8_t *msg, uint16_t len,
                            uint64_t seq, uint64_t rx_ns)
{
	uint32_t inst = len >= 3 && msg ? uf_be16(msg + 1) : UF_INSTRUMENT_ALL;
	uf_step_msg_error(s, uf_itch50_err(rc), len, inst, seq, rx_ns);
}

/* Applies n decoded messages with consecutive sequences from first_seq through the
 * publisher's batch path (prefetching order slots and books ahead, one clock read per call
 * for the publish delay), handing the records on whenever the step fills. */
static void uf_itch50_apply_run(struct uf_pub_step *s, const struct uf_itch_msg *msgs, size_t n,
                                uint64_t first_seq, uint64_t rx_ns)
{
	while (n) {
		/* step_cap >= UF_REC_MAX_PER_MSG: after a split every call applies at least
		 * one. The call still sees all n messages: its look-ahead prefetches past the
		 * step. */
		uf_step_room(s, UF_REC_MAX_PER_MSG);
		size_t applied = 0;
		int k = uf_publish_apply_batch(s->pub, msgs, n, first_seq, rx_ns, s->recs + s->nrec,
		                               s->step_cap - s->nrec, &applied);
		if (k > 0)
			s->nrec += (size_t)k;
		s->lat_msgs += applied;
		msgs += applied;
		first_seq += applied;
		n -= applied;
	}
}

/* Block i of a validated packet (for a decode error). Cold. */
static struct uf_frame_msg uf_itch50_block(const struct uf_frame *pkt, uint32_t i)
{
	struct uf_frame_iter it;
	struct uf_frame_msg b;
	uf_mold_iter_init(&it, pkt);
	for (uint32_t k = 0; uf_mold_next(&it, &b); k++)
		if (k == i)
			return b;
	memset(&b, 0, sizeof(b));
	return b;
}

static void uf_itch50_apply(struct uf_pub_step *s, void *state, const struct uf_frame *pkt,
                            uint32_t skip, uint64_t rx_ns)
{
	struct uf_itch50_state *st = state;
	struct uf_frame w = *pkt;
	/* only forward: lines whose receive times straddle a midnight do not flip the day; no
	 * receive time (0), no date to give */
	if (UF_UNLIKELY(rx_ns >= st->day.end_ns) && rx_ns)
		uf_itch50_new_day(s, st, pkt->seq + skip, rx_ns);
	if (UF_LIKELY(pkt->count <= UF_DECODE_FUSED_MAX) &&
	    uf_decode_walk_fused(&w, st->msgs, st->rc) == UF_MOLD_DATA) {
		if (s->timed)
			s->decoded(s->owner);
		/* Keeping up (publishing in steps): the whole datagram's order slots and books
		 * start loading now (uf_publish.h). A queue is applied whole packets at a time,
		 * where apply_batch's own look-ahead already runs ahead. */
		if (s->step_cap < s->rec_cap)
			uf_publish_prefetch(s->pub, st->msgs + skip, pkt->count - skip);
		uint32_t run = skip;
		for (uint32_t i = skip; i < pkt->count; i++) {
			if (UF_UNLIKELY(st->rc[i] != 0)) {
				uf_itch50_apply_run(s, st->msgs + run, i - run, pkt->seq + run,
				                    rx_ns);
				struct uf_frame_msg b = uf_itch50_block(pkt, i);
				uf_itch50_error(s, st->rc[i], b.msg, b.len, pkt->seq + i, rx_ns);
				run = i + 1;
			}
		}
		uf_itch50_apply_run(s, st->msgs + run, pkt->count - run, pkt->seq + run, rx_ns);
		return;
	}
	/* More blocks than one pass takes (jumbo datagrams): decode and apply in chunks. */
	struct uf_frame_iter it;
	struct uf_frame_msg b;
	uf_mold_iter_init(&it, pkt);
	uint32_t i = 0;
	size_t nm = 0;
	uint64_t first = 0;
	while (uf_mold_next(&it, &b)) {
		if (i++ < skip)
			continue;
		int rc = uf_itch_decode_inline(b.msg, b.len, &st->msgs[nm]);
		if (UF_UNLIKELY(rc != 0)) {
			uf_itch50_apply_run(s, st->msgs, nm, first, rx_ns);
			nm = 0;
			uf_itch50_error(s, rc, b.msg, b.len, b.seq, rx_ns);
			continue;
		}
		if (nm == 0)
			first = b.seq;
		if (++nm == UF_DECODE_FUSED_MAX) {
			uf_itch50_apply_run(s, st->msgs, nm, first, rx_ns);
			nm = 0;
		}
	}
	uf_itch50_apply_run(s, st->msgs, nm, first, rx_ns);
}

/* One GLIMPSE snapshot message: ITCH, applied with feed_seq 0 (the state it describes ends
 * at End of Snapshot - 1) and no receive time. Cold. */
static int uf_itch50_snapshot_msg(struct uf_pub_step *s, const uint8_t *msg, size_t len)
{
	struct uf_itch_msg m;
	int rc = uf_itch_decode(msg, len, &m);
	if (rc != 0)
		return -(1 + (int)(len == 0 ? UF_STEP_ERR_EMPTY : uf_itch50_err(rc)));
	if (s->nrec + UF_REC_MAX_PER_MSG > s->rec_cap)
		s->split(s->owner);
	int k = uf_publish_apply(s->pub, &m, 0, 0, s->recs + s->nrec, s->rec_cap - s->nrec);
	if (k > 0)
		s->nrec += (size_t)k;
	return 0;
}

/* What a live message does to orders, for the snapshot loader's check of End of Snapshot
 * against the lines (uf_proto.h). The book is the message's locate. Cold. */
static int uf_itch50_order_refs(const uint8_t *msg, size_t len, struct uf_proto_ref out[2],
                                uint32_t *instrument)
{
	struct uf_itch_msg m;
	if (uf_itch_decode(msg, len, &m) != 0)
		return 0;
	*instrument = m.locate;
	switch (m.type) {
	case 'A':
	case 'F':
		out[0] = (struct uf_proto_ref){m.u.add.order_ref, m.u.add.shares, UF_PROTO_REF_ADD};
		return 1;
	case 'D':
		out[0] = (struct uf_proto_ref){m.u.del.order_ref, 0, UF_PROTO_REF_REMOVE};
		return 1;
	case 'U':
		out[0] = (struct uf_proto_ref){m.u.replace.orig_ref, 0, UF_PROTO_REF_REMOVE};
		out[1] = (struct uf_proto_ref){m.u.replace.new_ref, m.u.replace.shares,
		                               UF_PROTO_REF_ADD};
		return 2;
	case 'E':
	case 'C':
		out[0] =
		    (struct uf_proto_ref){m.u.exec.order_ref, m.u.exec.shares, UF_PROTO_REF_TOUCH};
		return 1;
	case 'X':
		out[0] = (struct uf_proto_ref){m.u.cancel.order_ref, m.u.cancel.shares,
		                               UF_PROTO_REF_TOUCH};
		return 1;
	default:
		return 0;
	}
}

static uint32_t uf_itch50_order_held(const struct uf_pub_step *s, uint64_t ref)
{
	const struct uf_order *o = uf_orders_find(&s->pub->orders, ref);
	return o ? o->shares : 0;
}

const struct uf_proto uf_proto_itch50_moldudp64 = {
    .name = "itch50-moldudp64",
    .framing = &uf_mold_framing,
    .book = UF_BOOK_ORDERS,
    .state_size = sizeof(struct uf_itch50_state),
    .apply = uf_itch50_apply,
    .snapshot_msg = uf_itch50_snapshot_msg,
    .order_refs = uf_itch50_order_refs,
    .order_held = uf_itch50_order_held,
};
