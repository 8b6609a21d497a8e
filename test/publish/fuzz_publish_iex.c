/* libFuzzer target over the IEX publish side: arbitrary IEX-TP datagrams through the
 * "iex-deep" or "iex-tops" protocol entry (publish/proto_iex.c) into price-level books and
 * records, as the feed applies them (framing open, apply with a skip, the arbiter's gap and
 * stream restart in between).
 *
 * Input: byte 0 picks the entry (bit 0: TOPS) and the step's size (bits 1-3: 1 .. 8 x
 * UF_REC_MAX_PER_MSG records, so packets are published in steps); then datagrams, each as
 * a 2-byte little-endian header (bits 0-10 the length, bits 11-12 what the arbiter does
 * first: 0 nothing, 1 a gap, 2 a stream restart (RESET), 3 apply skipping half the
 * segment's messages) and that many bytes.
 *
 * Checked after every datagram, beyond ASan/UBSan: each record is of a known kind, names an
 * instrument the publisher has (or 0 / every), and a LEVEL a side and a price the level
 * table holds; after the input, the books a consumer builds from the records alone
 * (ring/ufbook.h) are exactly the publisher's own (every level of every book, bids strictly
 * falling, asks strictly rising, sizes > 0, TOPS one level a side) and so is every book's
 * STALE flag. Any difference aborts. Built only with clang and -DUF_FUZZ=ON. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "publish/uf_proto.h"
#include "publish/uf_publish.h"
#include "ring/ufbook.h"

#define FZ_INSTRUMENTS 32u
#define FZ_DEPTH       512u
#define FZ_REC_CAP     (8u * UF_REC_MAX_PER_MSG)

struct fz {
	struct uf_publisher *pub;
	uf_book_builder_t *bb;
	struct uf_pub_step step;
	struct uf_record buf[FZ_REC_CAP];
	uint64_t seq; /* ring sequence of the next record handed on */
	int tops;
};

/* A record the publisher wrote, as a ring would hand it on: checked, then applied to the
 * consumer's books. */
static void fz_check(struct fz *z, const struct uf_record *r)
{
	if (r->kind == 0 || r->kind > UF_REC_STALE)
		abort();
	if (r->instrument >= FZ_INSTRUMENTS && r->instrument != UF_INSTRUMENT_ALL)
		abort();
	if (r->kind == UF_REC_LEVEL) {
		if (r->side != UF_SIDE_BID && r->side != UF_SIDE_ASK)
			abort();
		if (r->price < 0 || r->price > (int64_t)UINT32_MAX || r->instrument == 0 ||
		    r->instrument >= FZ_INSTRUMENTS || r->orders != 0)
			abort();
	}
	if (uf_book_builder_apply(z->bb, r, z->seq++) < 0)
		abort();
}

static void fz_split(void *owner)
{
	struct fz *z = owner;
	/* never more than one publish may take (step_cap is the soft size of a step: a
	 * message that did not decode may put its doubt past it, uf_step_msg_error) */
	if (z->step.nrec > z->step.rec_cap)
		abort();
	for (size_t i = 0; i < z->step.nrec; i++)
		fz_check(z, &z->buf[i]);
	z->step.nrec = 0;
}

static void fz_decoded(void *owner)
{
	(void)owner;
}

static void fz_msg_error(void *owner, enum uf_step_err kind)
{
	(void)owner;
	if ((unsigned)kind > UF_STEP_ERR_BAD_LENGTH)
		abort();
}

/* What the arbiter writes through the publisher: a gap, or a new stream voiding the books. */
static void fz_arbiter(struct fz *z, unsigned what, uint64_t seq)
{
	fz_split(z);
	int k = what == 1 ? uf_publish_gap(z->pub, seq, 1, z->buf, FZ_REC_CAP)
	                  : uf_publish_void_books(z->pub, UF_RESET_NEW_SESSION, "42        ", 1,
	                                          z->buf, FZ_REC_CAP);
	if (k != 1)
		abort();
	z->step.nrec = 1;
	fz_split(z);
}

/* The consumer's books equal the publisher's, level by level, flags too. */
static void fz_compare(struct fz *z)
{
	static struct uf_level a[FZ_DEPTH], b[FZ_DEPTH];
	for (uint32_t id = 0; id < FZ_INSTRUMENTS; id++) {
		for (int s = 0; s < 2; s++) {
			uint8_t side = s ? UF_SIDE_ASK : UF_SIDE_BID;
			int np = uf_publish_top(z->pub, id, side, a, FZ_DEPTH);
			int nc = uf_book_builder_levels(z->bb, id, side, b, FZ_DEPTH);
			if (np < 0 || np != nc)
				abort();
			if (z->tops && np > 1)
				abort(); /* a level-1 book */
			for (int i = 0; i < np; i++) {
				if (a[i].price != b[i].price || a[i].shares != b[i].shares ||
				    a[i].shares == 0)
					abort();
				if (i && (s ? a[i].price <= a[i - 1].price
				            : a[i].price >= a[i - 1].price))
					abort(); /* strictly ordered, best first */
			}
		}
		const struct uf_pub_instrument *v = uf_publish_instrument(z->pub, id);
		int stale = (uf_book_builder_flags(z->bb, id) & UF_BOOKF_STALE) != 0;
		if (!v || (v->stale != 0) != stale)
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	static struct fz z;
	memset(&z, 0, sizeof(z));
	z.tops = data[0] & 1;
	const struct uf_proto *proto = uf_proto_find(z.tops ? "iex-tops" : "iex-deep");
	if (!proto)
		abort();
	struct uf_publish_params pp;
	uf_publish_params_default(&pp);
	pp.max_orders = 16;
	pp.max_instruments = FZ_INSTRUMENTS;
	pp.max_levels = 256; /* small: a full level table is reached too */
	pp.numa_node = -1;
	if (uf_publish_create(&pp, &z.pub) != 0 ||
	    uf_book_builder_create(FZ_INSTRUMENTS, &z.bb) != 0)
		abort();
	void *state = calloc(1, proto->state_size ? proto->state_size : 1);
	if (!state)
		abort();
	z.step.pub = z.pub;
	z.step.recs = z.buf;
	z.step.rec_cap = FZ_REC_CAP;
	z.step.step_cap = (size_t)(((data[0] >> 1) & 7) + 1) * UF_REC_MAX_PER_MSG;
	z.step.split = fz_split;
	z.step.decoded = fz_decoded;
	z.step.msg_error = fz_msg_error;
	z.step.owner = &z;
	size_t at = 1;
	uint64_t rx = 1493127000000000000ull; /* 2017-04-25 09:30 New York */
	while (at + 2 <= size) {
		unsigned hdr = data[at] | (unsigned)data[at + 1] << 8;
		at += 2;
		size_t len = hdr & 0x7ff;
		if (len > size - at)
			len = size - at;
		unsigned what = (hdr >> 11) & 3;
		/* an exact-size heap copy: ASan sees one byte past the datagram */
		uint8_t *pkt = malloc(len ? len : 1);
		if (!pkt)
			abort();
		memcpy(pkt, data + at, len);
		at += len;
		struct uf_frame f;
		if (proto->framing->open(&f, pkt, len) == UF_FRAME_DATA) {
			uint32_t skip = 0;
			if (what == 1 || what == 2)
				fz_arbiter(&z, what, f.seq);
			else if (what == 3)
				skip = f.count / 2;
			z.step.timed = (hdr >> 13) & 1;
			proto->apply(&z.step, state, &f, skip, rx);
			fz_split(&z);
		}
		rx += 1000;
		free(pkt);
	}
	fz_compare(&z);
	free(state);
	uf_book_builder_destroy(z.bb);
	uf_publish_destroy(z.pub);
	return 0;
}
