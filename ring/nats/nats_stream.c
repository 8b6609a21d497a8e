/* What a remote consumer believes of the bridge's stream (see nats_stream.h). */
#include "ring/nats/nats_stream.h"

#include "ring/nats/nats_codec.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

void uf_nats_stream_begin(struct uf_nats_stream *s)
{
	s->base = s->tail = s->cm.position;
	s->js_next = s->cm.js_from ? s->cm.js_from : 1;
	s->js_believed = s->js_next - 1;
	s->njumps = 0;
	s->close_pending = 0;
	s->close_pending_n = 0;
	s->overlap = 1; /* the stream from js_from starts at or before the commit's position */
	s->closed = s->stale = s->failed = 0;
}

/* Counts and logs a message that does not continue the stream the bridge wrote; the
 * genuine stream goes on (the first few are logged, then every 1000th). */
static void refuse(struct uf_nats_stream *s, const struct uf_nats_msg *h, uint64_t sseq,
                   const char *why)
{
	s->forged++;
	if (s->forged <= 8 || s->forged % 1000 == 0)
		fprintf(
		    stderr,
		    "ufconsumer: ring %s: dropped stream message %llu (kind %u, first %llu): %s "
		    "(%llu dropped so far)\n",
		    s->ring, (unsigned long long)sseq, h ? (unsigned)h->kind : 0u,
		    h ? (unsigned long long)h->first_seq : 0ull, why,
		    (unsigned long long)s->forged);
}

/* The pending CLOSED was no end (records follow it, or the bridge's commit went past it). */
static void pending_close_refused(struct uf_nats_stream *s, const char *why)
{
	struct uf_nats_msg h = {.kind = UF_NATS_CLOSED, .first_seq = s->close_pending - 1};

	for (uint32_t i = 0; i < s->close_pending_n; i++)
		refuse(s, &h, 0, why);
	s->close_pending = 0;
	s->close_pending_n = 0;
}

static void add_jump(struct uf_nats_stream *s, uint64_t from, uint64_t to)
{
	if (s->njumps == UF_NATS_JUMPS) { /* the oldest is far behind any reader: forget it */
		memmove(&s->jumps[0], &s->jumps[1], (UF_NATS_JUMPS - 1) * sizeof(s->jumps[0]));
		s->njumps--;
	}
	s->jumps[s->njumps].from = from;
	s->jumps[s->njumps].to = to;
	s->njumps++;
	s->tail = to;
}

/* Replaces the books with the bucket's and skips to `resume` (the stream lost records, the
 * bridge was lapped or restarted). With `confirm`, the commit entry must be at or past
 * `resume` (the bridge writes it before a LAP or RESET). Returns 0, -EBADMSG (the bucket
 * does not confirm: the message is not believed), or -errno with s->failed set. */
static int reload(struct uf_nats_stream *s, const struct uf_nats_stream_hooks *hk, uint64_t resume,
                  int confirm)
{
	struct uf_nats_books nb;
	struct uf_nats_commit cm;
	int rc = hk->load(hk->arg, &nb, &cm, resume);

	if (rc < 0) {
		fprintf(stderr,
		        "ufconsumer: ring %s: the bucket cannot be read to skip to %llu; giving "
		        "up\n",
		        s->ring, (unsigned long long)resume);
		s->failed = 1;
		return rc;
	}
	if (cm.generation != s->cm.generation || (confirm && cm.position < resume)) {
		uf_nats_books_free(&nb);
		return -EBADMSG;
	}
	uf_nats_books_free(&s->books);
	s->books = nb;
	add_jump(s, s->tail, resume);
	return 0;
}

static void store(struct uf_nats_stream *s, const struct uf_record *r, uint64_t seq)
{
	uint64_t slot = seq & s->mask;

	s->buf[slot] = *r;
	s->seqs[slot] = seq;
	(void)uf_nats_books_apply(&s->books, r, seq);
	s->tail = seq + 1;
}

static int on_data(struct uf_nats_stream *s, const struct uf_nats_stream_hooks *hk,
                   const struct uf_nats_msg *h, const char *recs, size_t plen, int compact,
                   uint64_t sseq)
{
	uint64_t end = h->first_seq + h->count;

	if (h->count == 0 || end <= s->tail) {
		if (!s->overlap)
			refuse(s, h, sseq, "it repeats records already received");
		return 0;
	}
	if (h->first_seq > s->tail) {
		/* the bridge says a lap with a LAP message first; records skipped without one are
		 * believed only when the stream itself lost messages after the last believed, or
		 * when the bridge's commit entry is already past them (the delivery skipped
		 * messages the bridge stored: as before, a lap with books from the bucket) */
		if (!hk->stream_dropped(hk->arg, s->js_believed + 1)) {
			struct uf_nats_commit cm;
			if (hk->load(hk->arg, NULL, &cm, 0) != 0 ||
			    cm.generation != s->cm.generation || cm.position < h->first_seq) {
				refuse(s, h, sseq, "it skips records the stream still holds");
				return 0;
			}
		}
		if (reload(s, hk, h->first_seq, 0) < 0) {
			if (!s->failed)
				refuse(s, h, sseq, "the bucket is of another generation");
			return s->failed;
		}
	}
	if (s->close_pending)
		pending_close_refused(s, "records follow the close");
	if (compact) { /* checked to decode to exactly count records (on_msg) */
		struct uf_record r;
		size_t off = 0;
		uint32_t stored = 0;
		memset(&r, 0, sizeof(r));
		for (uint64_t q = h->first_seq; q < end; q++)
			if (uf_nats_compact_next((const unsigned char *)recs, plen, &off, &r) ==
			        0 &&
			    q >= s->tail) {
				store(s, &r, q);
				if (++stored % UF_NATS_APPLY_CHUNK == 0 && hk->progress)
					hk->progress(hk->arg);
			}
	} else {
		for (uint64_t q = s->tail; q < end; q++) {
			struct uf_record r; /* the buffer need not be 8-byte aligned: copied out */
			memcpy(&r, recs + (size_t)(q - h->first_seq) * sizeof(r), sizeof(r));
			store(s, &r, q);
			if ((q + 1 - h->first_seq) % UF_NATS_APPLY_CHUNK == 0 && hk->progress)
				hk->progress(hk->arg);
		}
	}
	s->overlap = 0;
	s->js_believed = sseq ? sseq : s->js_believed;
	return 0;
}

static int on_skip(struct uf_nats_stream *s, const struct uf_nats_stream_hooks *hk,
                   const struct uf_nats_msg *h, uint64_t sseq)
{
	uint64_t resume = h->kind == UF_NATS_LAP ? h->aux : h->first_seq;
	int rc;

	if (resume <= s->tail) {
		if (h->kind == UF_NATS_RESET) { /* a restarted bridge re-sends what we hold */
			s->overlap = 1;
			s->js_believed = sseq ? sseq : s->js_believed;
		} else if (!s->overlap) {
			refuse(s, h, sseq, "a lap behind the records received");
		}
		return 0;
	}
	rc = reload(s, hk, resume, 1);
	if (rc == -EBADMSG) {
		refuse(s, h, sseq, "the bucket's commit entry is not at its resume point");
		return 0;
	}
	if (rc < 0)
		return 1;
	if (s->close_pending)
		pending_close_refused(s, "the stream went on after the close");
	s->closed = 0;
	s->overlap = h->kind == UF_NATS_RESET;
	s->js_believed = sseq ? sseq : s->js_believed;
	return 0;
}

static void on_closed(struct uf_nats_stream *s, const struct uf_nats_stream_hooks *hk,
                      const struct uf_nats_msg *h, uint64_t sseq)
{
	/* the bridge publishes CLOSED after the last record, in stream order, then marks the
	 * commit entry closed there: a close anywhere else does not continue the stream */
	if (h->first_seq != s->tail) {
		if (h->first_seq > s->tail || !s->overlap)
			refuse(s, h, sseq, "a close not at the end of the records received");
		return;
	}
	if (s->closed)
		return;
	switch (hk->close_confirmed(hk->arg, s->cm.generation, s->tail)) {
	case 1:
		s->closed = 1;
		s->close_pending = 0;
		s->close_pending_n = 0;
		s->js_believed = sseq ? sseq : s->js_believed;
		return;
	case 0: /* the commit entry comes right after: settled later (uf_nats_stream_idle) */
		s->close_pending = s->tail + 1;
		s->close_pending_n++;
		return;
	default:
		refuse(s, h, sseq, "the bucket's commit entry is past the close");
		return;
	}
}

int uf_nats_stream_idle(struct uf_nats_stream *s, const struct uf_nats_stream_hooks *hk)
{
	if (!s->close_pending || s->closed || s->failed || s->stale)
		return 0;
	switch (hk->close_confirmed(hk->arg, s->cm.generation, s->close_pending - 1)) {
	case 1:
		s->closed = 1;
		s->close_pending = 0;
		s->close_pending_n = 0;
		return 1;
	case 0:
		return 0;
	default:
		pending_close_refused(s, "the bucket's commit entry is past the close");
		return 1;
	}
}

/* The bridge's id for a message is `want`, or `want` then ":r" and 16 hex digits when
 * another publisher had taken `want` first (uf_nats_wire.h). */
static int id_names(const char *msgid, const char *want)
{
	size_t n = strlen(want);

	if (!msgid || strncmp(msgid, want, n) != 0)
		return 0;
	if (msgid[n] == '\0')
		return 1;
	if (msgid[n] != ':' || msgid[n + 1] != 'r' || strlen(msgid + n + 2) != 16)
		return 0;
	for (const char *p = msgid + n + 2; *p; p++)
		if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
			return 0;
	return 1;
}

int uf_nats_stream_on_msg(struct uf_nats_stream *s, const struct uf_nats_stream_hooks *hk,
                          const void *data, size_t len, const char *msgid, uint64_t sseq)
{
	struct uf_nats_msg h;
	char want[UF_NATS_MSG_ID_MAX];
	int compact;

	if (s->failed || s->stale)
		return 1;
	(void)uf_nats_stream_idle(s, hk); /* a pending close first: it came before this */
	if (sseq) {
		if (sseq < s->js_next)
			return 0; /* delivered twice (the ordered consumer was re-created): seen */
		s->js_next = sseq + 1;
	}
	if (s->key && s->key->len) {
		long plen = uf_nats_mac_check(s->key, "seq", data, len);
		if (plen < 0) {
			refuse(s, NULL, sseq, "not authenticated by the shared key");
			return 0;
		}
		len = (size_t)plen;
	}
	if (len < sizeof(h)) {
		refuse(s, NULL, sseq, "too short for a bridge message");
		return 0;
	}
	memcpy(&h, data, sizeof(h));
	compact = h.version == UF_NATS_VERSION_COMPACT && h.kind == UF_NATS_DATA;
	if (h.magic != UF_NATS_MAGIC || (h.version != UF_NATS_VERSION && !compact) ||
	    h.count > UF_NATS_MAX_RECORDS ||
	    (!compact && len != sizeof(h) + (size_t)h.count * sizeof(struct uf_record)) ||
	    h.first_seq > UINT64_MAX - h.count) {
		refuse(s, NULL, sseq, "not a bridge message of this wire version");
		return 0;
	}
	/* checked whole first, from its counts (decoded once, when applied): a refused
	 * message changes nothing */
	if (compact && uf_nats_compact_check((const unsigned char *)data + sizeof(h),
	                                     len - sizeof(h), h.count) < 0) {
		refuse(s, NULL, sseq, "its compact records do not decode to its count");
		return 0;
	}
	/* the bridge names every message by its content (uf_nats_wire.h): a message whose id is
	 * missing or names something else was not published by the bridge */
	snprintf(want, sizeof(want), "%llu:%u:%llu:%u", (unsigned long long)h.generation,
	         (unsigned)h.kind, (unsigned long long)h.first_seq, (unsigned)h.count);
	if (!id_names(msgid, want)) {
		refuse(s, &h, sseq, "its Nats-Msg-Id does not name its content");
		return 0;
	}
	if (h.generation != s->cm.generation) {
		struct uf_nats_commit cm;
		int rc;
		if (h.kind != UF_NATS_RESET) {
			refuse(s, &h, sseq, "records of another generation");
			return 0;
		}
		/* the producer restarted: the bridge wrote the new generation's commit first */
		rc = hk->load(hk->arg, NULL, &cm, 0);
		if (rc == 0 && cm.generation != s->cm.generation) {
			s->stale = 1;
			return 1;
		}
		refuse(s, &h, sseq, "a new generation the bucket does not show");
		return 0;
	}
	switch (h.kind) {
	case UF_NATS_DATA:
		return on_data(s, hk, &h, (const char *)data + sizeof(h), len - sizeof(h), compact,
		               sseq);
	case UF_NATS_LAP:
	case UF_NATS_RESET:
		if (h.count != 0) {
			refuse(s, &h, sseq, "a lap or reset with records");
			return 0;
		}
		return on_skip(s, hk, &h, sseq);
	case UF_NATS_CLOSED:
		on_closed(s, hk, &h, sseq);
		return 0;
	default:
		refuse(s, &h, sseq, "not a kind of the record subject");
		return 0;
	}
}
