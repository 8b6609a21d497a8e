/* `uf-decode books` for IEX-TP captures (DEEP 1.0, TOPS 1.6): every data segment applied to
 * the books through the protocol entry the live feed uses (publish/proto_iex.c via
 * uf_proto_find), so the offline books and a ring's books come from one set of rules.
 * A segment that starts its stream again inside the session (sequence 1, stream offset 0:
 * the real DEEP capture has eleven) voids every book first, as the feed's arbiter does
 * (a RESET): the books printed are those of the last stream, as a live consumer sees them.
 * --until-seq N stops after the first message numbered N in file order (the books then);
 * --until-time is refused (ITCH exchange time only). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "books_iex.h"
#include "decode/uf_iextp.h"
#include "decode/uf_reader.h"
#include "publish/uf_proto.h"

/* The step's owner: where the entry's records go (nowhere: the books are the output). */
struct books_iex_run {
	struct uf_pub_step step;   /* the publish step the entry applies into */
	struct uf_record rec[256]; /* records of the step, dropped when handed on */
	uint64_t msg_errors;       /* messages that did not decode */
};

static void books_iex_split(void *owner)
{
	((struct books_iex_run *)owner)->step.nrec = 0;
}

static void books_iex_decoded(void *owner)
{
	(void)owner;
}

static void books_iex_msg_error(void *owner, enum uf_step_err kind)
{
	(void)kind;
	((struct books_iex_run *)owner)->msg_errors++;
}

/* The IEX entry for a capture's first UDP payload, or NULL when it is not IEX-TP. */
static const struct uf_proto *books_iex_entry(const uint8_t *pl, size_t len)
{
	struct uf_iextp_hdr h;
	if (uf_iextp_parse_header(&h, pl, len) != 0)
		return NULL;
	if (h.protocol_id == UF_IEXTP_PROTO_DEEP)
		return uf_proto_find("iex-deep");
	if (h.protocol_id == UF_IEXTP_PROTO_TOPS)
		return uf_proto_find("iex-tops");
	return NULL;
}

int uf_decode_books_iex(const char *file, struct uf_publisher *p, struct uf_decode_counters *c,
                        uint64_t until_seq, struct uf_books_iex_result *res)
{
	memset(res, 0, sizeof(*res));
	struct uf_reader rd;
	struct uf_decode_counters own; /* into *c only when the file is IEX-TP: an ITCH file is
	                                * read again by the ITCH path, counted once there */
	memset(&own, 0, sizeof(own));
	if (uf_reader_open(&rd, file, &own) != 0)
		return 0; /* the ITCH path opens it again and says why */
	const uint8_t *pl;
	size_t len;
	uint64_t ts;
	if (uf_reader_next_payload(&rd, &pl, &len, &ts) != 1) {
		uf_reader_close(&rd);
		return 0; /* a daily file, or no UDP payload at all */
	}
	const struct uf_proto *e = books_iex_entry(pl, len);
	if (!e) {
		uf_reader_close(&rd);
		return 0;
	}
	struct books_iex_run *x = calloc(1, sizeof(*x));
	void *state = e->state_size ? aligned_alloc(64, (e->state_size + 63) & ~(size_t)63) : NULL;
	if (!x || (e->state_size && !state)) {
		free(x);
		free(state);
		uf_reader_close(&rd);
		return -ENOMEM;
	}
	if (state)
		memset(state, 0, e->state_size);
	x->step.pub = p;
	x->step.recs = x->rec;
	x->step.rec_cap = x->step.step_cap = sizeof(x->rec) / sizeof(x->rec[0]);
	x->step.split = books_iex_split;
	x->step.decoded = books_iex_decoded;
	x->step.msg_error = books_iex_msg_error;
	x->step.owner = x;
	res->proto = e->name;
	int started = 0;
	do {
		struct uf_frame f;
		if (e->framing->open(&f, pl, len) != UF_FRAME_DATA)
			continue; /* heartbeats, another protocol id, a truncated segment (counted)
			           */
		uint64_t sent;
		if (started && f.seq == 1 && e->framing->restart &&
		    e->framing->restart(&f, &sent)) {
			/* the arbiter's rule for a stream that starts over: every book void */
			uf_step_room(&x->step, 1);
			uf_publish_new_session(p, f.session, &x->step.recs[x->step.nrec], 1);
			x->step.nrec = 0;
			res->restarts++;
		}
		started = 1;
		int last = 0;
		if (until_seq && f.seq <= until_seq && f.seq + f.count > until_seq) {
			f.count = (uint32_t)(until_seq - f.seq + 1); /* up to message until_seq */
			last = 1;
		}
		e->apply(&x->step, state, &f, 0, 0);
		res->segments++;
		if (last)
			break;
	} while (uf_reader_next_payload(&rd, &pl, &len, &ts) == 1);
	res->msg_errors = x->msg_errors;
	uf_reader_close(&rd);
	*c = own;
	free(state);
	free(x);
	return 1;
}
