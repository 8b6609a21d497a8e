/* uf-bench: the IEX DEEP rows beside ITCH (iex_rows.h). */
#include "iex_rows.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/uf_time.h"
#include "decode/uf_iex.h"
#include "decode/uf_iextp.h"
#include "decode/uf_reader.h"
#include "publish/uf_proto.h"
#include "publish/uf_publish.h"

/* The capture's data segments, copied out of the file in order. */
struct iex_segs {
	uint8_t *buf;   /* every segment back to back */
	size_t *off;    /* segment i at buf + off[i] */
	size_t *len;    /* and its length */
	size_t n, used; /* segments, bytes */
};

static int iex_find(char *path, size_t cap)
{
	const char *d = getenv("UF_SHARED_DATA");
	struct stat st;
	snprintf(path, cap, "%s/iex/iex-deep-1.0-20170425.pcap.gz", d && *d ? d : "../shared/data");
	return stat(path, &st) == 0 ? 0 : -1;
}

static int iex_load(const char *path, struct iex_segs *s)
{
	struct uf_reader r;
	if (uf_reader_open(&r, path, NULL) < 0)
		return -1;
	size_t cap = 1 << 17, bcap = (size_t)64 << 20;
	s->buf = malloc(bcap);
	s->off = malloc(cap * sizeof(*s->off));
	s->len = malloc(cap * sizeof(*s->len));
	s->n = s->used = 0;
	const uint8_t *pl;
	size_t len;
	uint64_t ts;
	int rc = 0;
	while (s->buf && s->off && s->len && uf_reader_next_payload(&r, &pl, &len, &ts) == 1) {
		struct uf_frame f;
		if (uf_iextp_open_proto(&f, pl, len, UF_IEXTP_PROTO_DEEP) != UF_FRAME_DATA)
			continue;
		if (s->n == cap || s->used + len > bcap) {
			rc = -1; /* larger than the DEEP capture: not this bench's input */
			break;
		}
		memcpy(s->buf + s->used, pl, len);
		s->off[s->n] = s->used;
		s->len[s->n++] = len;
		s->used += len;
	}
	uf_reader_close(&r);
	return s->buf && s->off && s->len ? rc : -1;
}

/* One decode pass: framing and every message decoded. Returns ns; *msgs, *errs counted. */
static uint64_t iex_decode_pass(const struct iex_segs *s, uint64_t *msgs, uint64_t *errs,
                                uint64_t *acc)
{
	uint64_t t0 = uf_now_mono_ns();
	for (size_t i = 0; i < s->n; i++) {
		struct uf_frame f;
		struct uf_frame_iter it;
		struct uf_frame_msg b;
		struct uf_iex_msg m;
		if (uf_iextp_open_proto(&f, s->buf + s->off[i], s->len[i], UF_IEXTP_PROTO_DEEP) !=
		    UF_FRAME_DATA)
			continue;
		uf_iextp_iter_init(&it, &f);
		while (uf_iextp_next(&it, &b)) {
			if (uf_iex_decode(b.msg, b.len, &m) < 0)
				(*errs)++;
			else
				*acc += m.type;
			(*msgs)++;
		}
	}
	return uf_now_mono_ns() - t0;
}

struct iex_step {
	struct uf_pub_step step;
	struct uf_record rec[256];
	uint64_t records, errs;
};

static void iex_split(void *o)
{
	struct iex_step *x = o;
	x->records += x->step.nrec;
	x->step.nrec = 0;
}

static void iex_decoded(void *o)
{
	(void)o;
}

static void iex_err(void *o, enum uf_step_err k)
{
	(void)k;
	((struct iex_step *)o)->errs++;
}

/* One decode+book pass through the "iex-deep" entry, from empty books; a stream restart
 * voids the books first as the feed's arbiter does. Returns ns. */
static uint64_t iex_book_pass(const struct iex_segs *s, const struct uf_proto *e,
                              struct uf_publisher *p, void *state, struct iex_step *x)
{
	uf_publish_reset(p);
	memset(state, 0, e->state_size);
	x->records = x->errs = 0;
	uint64_t t0 = uf_now_mono_ns();
	for (size_t i = 0; i < s->n; i++) {
		struct uf_frame f;
		uint64_t sent;
		e->framing->open(&f, s->buf + s->off[i], s->len[i]);
		if (i && f.seq == 1 && e->framing->restart && e->framing->restart(&f, &sent)) {
			uf_step_room(&x->step, 1);
			x->step.nrec +=
			    (size_t)uf_publish_new_session(p, f.session, &x->rec[x->step.nrec], 1);
		}
		e->apply(&x->step, state, &f, 0, 0);
	}
	iex_split(x);
	return uf_now_mono_ns() - t0;
}

void uf_bench_iex_run(int book, uint64_t reps, struct uf_bench_iex *r)
{
	memset(r, 0, sizeof(*r));
	if (iex_find(r->path, sizeof(r->path)) < 0) {
		fprintf(stderr, "uf-bench: %s absent: no IEX DEEP rows (set UF_SHARED_DATA)\n",
		        r->path);
		return;
	}
	struct iex_segs s = {0};
	if (iex_load(r->path, &s) < 0) {
		fprintf(stderr, "uf-bench: %s: not read: no IEX DEEP rows\n", r->path);
		goto out;
	}
	r->have = 1;
	r->segments = s.n;
	r->decode_ns = r->book_ns = UINT64_MAX;
	uint64_t acc = 0;
	for (uint64_t k = 0; k < reps; k++) {
		uint64_t msgs = 0, errs = 0;
		uint64_t t = iex_decode_pass(&s, &msgs, &errs, &acc);
		r->decode_ns = t < r->decode_ns ? t : r->decode_ns;
		if (k && msgs != r->messages)
			r->bad = 1;
		r->messages = msgs;
		r->bad |= errs != 0;
	}
	if (acc == 1)
		fputc(' ', stderr); /* keeps the decoded fields live */
	if (!book) {
		r->book_ns = 0;
		goto out;
	}
	const struct uf_proto *e = uf_proto_find("iex-deep");
	struct uf_publish_params pp;
	uf_publish_params_default(&pp);
	pp.max_orders = 1024;
	pp.max_instruments = 16384;
	struct uf_publisher *p = NULL;
	struct iex_step *x = calloc(1, sizeof(*x));
	void *state = e ? calloc(1, e->state_size ? e->state_size : 1) : NULL;
	if (!e || !x || !state || uf_publish_create(&pp, &p) != 0) {
		r->bad = 1;
		r->book_ns = 0;
		free(x);
		free(state);
		goto out;
	}
	x->step.pub = p;
	x->step.recs = x->rec;
	x->step.rec_cap = x->step.step_cap = 256;
	x->step.split = iex_split;
	x->step.decoded = iex_decoded;
	x->step.msg_error = iex_err;
	x->step.owner = x;
	uint64_t recs = 0;
	for (uint64_t k = 0; k < reps; k++) {
		/* A fresh publisher per pass (untimed): uf_publish_reset keeps the directory, as a
		 * new session must (instrument ids stay), so a second pass over the same publisher
		 * would announce none of the 7,802 symbols the first pass did. */
		if (k) {
			uf_publish_destroy(p);
			p = NULL;
			if (uf_publish_create(&pp, &p) != 0) {
				r->bad = 1;
				break;
			}
			x->step.pub = p;
		}
		uint64_t t = iex_book_pass(&s, e, p, state, x);
		r->book_ns = t < r->book_ns ? t : r->book_ns;
		if (k && x->records != recs)
			r->bad = 1; /* every pass builds the same books */
		recs = x->records;
		r->bad |= x->errs != 0;
	}
	uf_publish_destroy(p);
	free(state);
	free(x);
out:
	free(s.buf);
	free(s.off);
	free(s.len);
}

void uf_bench_iex_print(const struct uf_bench_iex *r, FILE *f)
{
	if (!r->have)
		return;
	fprintf(f, "IEX DEEP beside it: %s: %llu messages in %llu IEX-TP segments\n", r->path,
	        (unsigned long long)r->messages, (unsigned long long)r->segments);
	fprintf(f, "%-30s %12.0f %8.2f\n", "iex-deep decode", r->messages / (r->decode_ns / 1e9),
	        (double)r->decode_ns / (double)r->messages);
	if (r->book_ns)
		fprintf(f, "%-30s %12.0f %8.2f\n", "iex-deep decode+book",
		        r->messages / (r->book_ns / 1e9), (double)r->book_ns / (double)r->messages);
}
