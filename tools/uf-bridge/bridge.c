/* uf-bridge engine: local ring -> NATS JetStream (see bridge.h, docs/fanout.md).
 *
 * One thread. Stream messages go out through a window of cfg.window messages in flight
 * (bridge_pipe.h): acknowledged in order, sent again from the first unacknowledged one with
 * the same Nats-Msg-Id, each carrying its predecessor's id as the expected last one, so the
 * stream holds the ring's records once each and in ring order even across the loss of a
 * NATS node. While the window is full the ring keeps filling, and the next message takes
 * everything that accumulated (up to cfg.batch records): batching grows with the load on
 * its own. */
#include "tools/uf-bridge/bridge.h"
#include "tools/uf-bridge/bridge_conn.h"
#include "tools/uf-bridge/bridge_pipe.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <nats/nats.h>

#include "common/uf_time.h"
#include "ring/nats/nats_auth.h"
#include "ring/nats/nats_book.h"
#include "ring/nats/nats_codec.h"
#include "ring/nats/uf_nats_wire.h"
#include "ring/ufconsumer.h"

#define RETRY_SLEEP_NS  50000000L /* between publish retries while NATS is unreachable */
#define IDLE_WAIT_NS    5000000LL /* ring wait slice: periodic work runs at least this often */
#define MSG_HEADER_ROOM 512 /* NATS headers of a stream message (ids: UF_NATS_MSG_ID_MAX each) */
#define PIPE_WAIT_NS    200000LL /* the same while acknowledgements are due */
#define HOLD_WAIT_NS    50000LL  /* the same while --eager holds a partial message */

struct bridge {
	const struct uf_bridge_config *cfg; /* as given */
	volatile sig_atomic_t *stop;        /* set by a signal */
	struct uf_nats_names nm;            /* stream, subject, bucket names */
	struct uf_bridge_conn cn;           /* NATS: servers, contexts, failover */
	struct uf_bridge_pipe pipe;         /* stream messages in flight */
	struct uf_record *sym_recs;         /* one instrument's records of a message */
	uint64_t *sym_seqs;                 /* their sequences */
	uint8_t *sym_done;                  /* records of the message already sent */
	char *sym_msg;                      /* per-symbol message being built */
	uf_consumer_t *c;                   /* the local ring */
	struct uf_consumer_info info;       /* its facts at (re)attach */
	struct uf_nats_books books;         /* full-depth books at `pos` */
	uint64_t pos;                       /* next ring sequence to read */
	struct uf_record *recs;             /* the message being built */
	struct uf_record *dec;              /* --compact: a stored message's records decoded */
	uint32_t nrecs;                     /* records in it */
	uint64_t first;                     /* ring sequence of recs[0] */
	void *kvbuf;                        /* encoded book entry */
	size_t kvcap;                       /* its size */
	uint32_t *ids;                      /* instruments of the flush in progress */
	uint64_t last_kv_ns;                /* last book flush (monotonic) */
	uint64_t last_stats_ns;             /* last status line on stderr (monotonic) */
	uint64_t last_file_ns;              /* last status file write (monotonic) */
	int kv_pending;                     /* books changed since the last flush */
	int live;                           /* first RESET stored: status may be written */
	struct uf_bridge_status st;         /* counters */
	struct uf_nats_key key;             /* shared key, or none (len 0) */
};

/* With a shared key, appends the MAC of data[0, len) under `domain` at data + len (room for
 * UF_NATS_MAC_LEN more bytes is the caller's); returns the new length, or len with no key,
 * or -EIO. */
static long sign(const struct bridge *b, const char *domain, void *data, size_t len)
{
	if (b->key.len == 0)
		return (long)len;
	if (uf_nats_mac(&b->key, domain, data, len, (unsigned char *)data + len) < 0)
		return -EIO;
	return (long)(len + UF_NATS_MAC_LEN);
}

/* ---- NATS setup ---- */

static void write_status(struct bridge *b, int to_stderr);
static void status_tick(struct bridge *b);

/* The outcome of a request that waited for an answer, for the failover rule
 * (bridge_conn.h). While the server does not answer, the status says so, with the lag as it
 * is. Returns 0, or -1 when no connection could be set up again. */
static int ack_outcome(struct bridge *b, natsStatus s)
{
	uint64_t lag = 0;
	int rc;

	if (s == NATS_TIMEOUT && b->c) {
		struct uf_consumer_info ci;
		uf_consumer_get_info(b->c, &ci);
		lag = ci.tail > b->st.position ? ci.tail - b->st.position : 0;
	}
	rc = uf_bridge_conn_outcome(&b->cn, s, lag);
	if (s == NATS_TIMEOUT && b->live)
		write_status(b, 0); /* "connected":0 (or the new server) and the lag */
	return rc < 0 ? -1 : 0;
}

/* Creates (or finds) the stream and the bucket; reads the stream's last sequence. Retried
 * until it works or we are stopped: at startup a cluster may still be electing leaders. */
static int nats_setup(struct bridge *b)
{
	const char *subjects[2];
	char per_sym[80];
	jsStreamConfig sc;
	jsStreamInfo *si = NULL;
	kvConfig kc;
	kvStore *kv = NULL;
	jsErrCode jerr = 0;
	natsStatus s;

	snprintf(per_sym, sizeof(per_sym), "%s.*", b->nm.per_sym);
	subjects[0] = b->nm.subject;
	subjects[1] = per_sym;
	for (int tries = 0; !*b->stop; tries++) {
		jsStreamConfig_Init(&sc);
		sc.Name = b->nm.stream;
		sc.Subjects = subjects;
		sc.SubjectsLen = 2;
		sc.Storage = b->cfg->memory ? js_MemoryStorage : js_FileStorage;
		sc.Replicas = b->cfg->replicas;
		sc.MaxAge = b->cfg->max_age_s * 1000000000ll;
		sc.MaxBytes = b->cfg->max_bytes;
		sc.Duplicates = 120ll * 1000000000ll; /* the de-duplication window */
		/* JetStream counts the headers (message id, expected last id) in the size too:
		 * without room for them a full batch of 1024 records was refused for ever */
		sc.MaxMsgSize = (int32_t)(sizeof(struct uf_nats_msg) +
		                          UF_NATS_MAX_RECORDS * UF_NATS_COMPACT_MAX +
		                          UF_NATS_MAC_LEN + MSG_HEADER_ROOM);
		s = js_AddStream(&si, b->cn.js, &sc, NULL, &jerr);
		if (s != NATS_OK && jerr == JSStreamNameExistErr) {
			jsStreamInfo_Destroy(si);
			si = NULL;
			s = js_GetStreamInfo(&si, b->cn.js, b->nm.stream, NULL, &jerr);
		}
		if (s == NATS_OK && si->Config && si->Config->MaxMsgSize > 0 &&
		    si->Config->MaxMsgSize < (int64_t)(sizeof(struct uf_nats_msg) +
		                                       (size_t)b->cfg->batch * UF_NATS_COMPACT_MAX +
		                                       UF_NATS_MAC_LEN + MSG_HEADER_ROOM))
			uf_bridge_log(
			    "stream %s (made by an older bridge) refuses messages over %d bytes: "
			    "full messages of %u records may be refused (lower --batch, or "
			    "raise the stream's max_msg_size)",
			    b->nm.stream, (int)si->Config->MaxMsgSize, b->cfg->batch);
		if (s == NATS_OK) {
			b->st.js_last = si->State.LastSeq;
			jsStreamInfo_Destroy(si);
			si = NULL;
			kvConfig_Init(&kc);
			kc.Bucket = b->nm.bucket;
			kc.History = 1;
			kc.StorageType = b->cfg->memory ? js_MemoryStorage : js_FileStorage;
			kc.Replicas = b->cfg->replicas;
			s = js_CreateKeyValue(&kv, b->cn.js, &kc);
			if (s != NATS_OK)
				s = js_KeyValue(&kv, b->cn.js, b->nm.bucket);
			if (s == NATS_OK) {
				kvStore_Destroy(kv);
				return 0;
			}
		}
		if (tries % 20 == 0)
			uf_bridge_log("stream %s / bucket %s not ready yet: %s (%d); retrying",
			              b->nm.stream, b->nm.bucket, natsStatus_GetText(s), (int)jerr);
		jsStreamInfo_Destroy(si);
		si = NULL;
		if (ack_outcome(b, s) < 0)
			return -1;
		nanosleep(&(struct timespec){0, RETRY_SLEEP_NS * 4}, NULL);
	}
	return -1;
}

/* ---- publishing ---- */

/* JetStream answered "duplicate" for message id `id`: is the message it holds under that id
 * ours (an earlier attempt of ours, or of a bridge before a restart), or did another
 * publisher take the id first? Compares what does not change between attempts (header but
 * publish time and read position, records) and, with a shared key, its MAC. Returns 1 ours,
 * 0 not ours, -1 cannot tell (then it is taken as ours: the old behaviour). */
static int stored_is_ours(struct bridge *b, uint64_t sseq, const char *mine, size_t len)
{
	natsMsg *m = NULL;
	const char *got;
	int glen, rc;

	if (js_GetMsg(&m, b->cn.js, b->nm.stream, sseq, NULL, NULL) != NATS_OK)
		return -1;
	got = natsMsg_GetData(m);
	glen = natsMsg_GetDataLength(m);
	rc = glen == (int)len && got &&
	     memcmp(got, mine, offsetof(struct uf_nats_msg, pub_ns)) == 0 &&
	     memcmp(got + offsetof(struct uf_nats_msg, depth),
	            mine + offsetof(struct uf_nats_msg, depth),
	            len - offsetof(struct uf_nats_msg, depth) -
	                (b->key.len ? UF_NATS_MAC_LEN : 0)) == 0 &&
	     uf_nats_mac_check(&b->key, "seq", got, (size_t)glen) >= 0;
	natsMsg_Destroy(m);
	return rc;
}

static void publish_per_symbol(struct bridge *b, const struct uf_record *recs, uint32_t n,
                               uint64_t first);

/* The window's head was stored (bridge_pipe.h): the stream holds every record before it.
 * Returns 0, or 1 after renaming it when its id was taken by another publisher. */
static int on_stored(void *arg, struct uf_bridge_slot *sl)
{
	struct bridge *b = arg;
	const struct uf_record *recs =
	    (const struct uf_record *)(sl->buf + sizeof(struct uf_nats_msg));
	uint64_t dt, now;
	struct uf_nats_msg h;

	memcpy(&h, sl->buf, sizeof(h));
	if (h.version == UF_NATS_VERSION_COMPACT && sl->kind == UF_NATS_DATA &&
	    b->cfg->per_symbol) {
		/* the records as they were, for the per-symbol messages only (never fails on
		 * what uf_nats_compact_encode wrote) */
		if (uf_nats_compact_decode((const unsigned char *)sl->buf + sizeof(h),
		                           sl->len - sizeof(h) - (b->key.len ? UF_NATS_MAC_LEN : 0),
		                           sl->n, b->dec) < 0)
			uf_bridge_log("message %s: compact records do not decode", sl->id);
		recs = b->dec;
	}

	if (sl->duplicate && stored_is_ours(b, sl->js_seq, sl->buf, sl->len) == 0) {
		/* another publisher stored a message under our id first (ids are predictable):
		 * JetStream dropped ours. Again under the id with a random suffix
		 * (uf_nats_wire.h), kept for the retries of this message */
		char *suffix = strstr(sl->id, ":r"); /* a renamed id: a new suffix replaces it */
		size_t base = suffix ? (size_t)(suffix - sl->id) : strlen(sl->id);
		uint64_t r;
		if (getrandom(&r, sizeof(r), 0) != (ssize_t)sizeof(r))
			r = uf_now_mono_ns() * 0x9e3779b97f4a7c15ull ^ (uint64_t)getpid();
		snprintf(sl->id + base, sizeof(sl->id) - base, ":r%016" PRIx64, r);
		uf_bridge_log("message id taken by another publisher (stream message %" PRIu64
		              "); publishing again as %s",
		              sl->js_seq, sl->id);
		b->st.retries++;
		return 1;
	}
	dt = uf_now_mono_ns() - sl->first_ns;
	now = uf_now_realtime_ns();
	b->st.position = sl->kind == UF_NATS_DATA  ? sl->first + sl->n
	                 : sl->kind == UF_NATS_LAP ? sl->aux
	                                           : sl->first;
	b->st.js_last = sl->js_seq;
	b->st.duplicates += (uint64_t)sl->duplicate;
	b->st.messages++;
	b->st.published += sl->n;
	b->st.bytes += sl->len;
	b->st.ack_ns_sum += dt;
	if (dt > b->st.ack_ns_max)
		b->st.ack_ns_max = dt;
	if (sl->oldest_pub_ns && now > sl->oldest_pub_ns &&
	    now - sl->oldest_pub_ns > b->st.pub_lag_ns_max)
		b->st.pub_lag_ns_max = now - sl->oldest_pub_ns;
	if (sl->attempts > 1)
		uf_bridge_log("message %s stored after %u retries", sl->id, sl->attempts - 1);
	if (sl->kind == UF_NATS_RESET)
		b->live = 1; /* the first status written tells that the generation is announced */
	if (sl->kind == UF_NATS_DATA && b->cfg->per_symbol)
		publish_per_symbol(b, recs, sl->n, sl->first);
	return 0;
}

static int pipe_outcome(void *arg, natsStatus s)
{
	struct bridge *b = arg;
	uint64_t before = b->cn.failovers;

	if (ack_outcome(b, s) < 0)
		return -1;
	return b->cn.failovers != before;
}

static void pipe_tick(void *arg)
{
	status_tick(arg); /* the lag grows while we wait: say so */
}

/* Queues one stream message in the window (waiting for room). It is stored later, in order,
 * retried under the same message id until acknowledged (bridge_pipe.h). -EINTR when
 * stopped, -EIO when no connection could be set up. */
static int publish(struct bridge *b, uint8_t kind, uint64_t first, uint64_t aux,
                   const struct uf_record *recs, uint32_t n)
{
	struct uf_nats_msg h;
	struct uf_bridge_slot *sl;
	size_t len = sizeof(h) + (size_t)n * sizeof(*recs);
	uint64_t oldest = UINT64_MAX;
	long slen;
	int err;

	sl = uf_bridge_pipe_room(&b->pipe, b->stop, &err);
	if (!sl)
		return err;
	memset(&h, 0, sizeof(h));
	h.magic = UF_NATS_MAGIC;
	h.version = UF_NATS_VERSION;
	h.kind = kind;
	h.count = n;
	h.generation = b->info.generation;
	h.first_seq = first;
	h.aux = aux;
	h.depth = b->info.depth;
	h.max_instruments = b->info.max_instruments;
	h.capacity = b->info.capacity;
	h.ring_tail = b->pos; /* read so far: the ring's tail costs a /proc read */
	h.pub_ns = uf_now_realtime_ns();
	/* the id names the content: generation, kind and the exact range. A restarted bridge
	 * cuts its messages elsewhere; an id of first alone would make JetStream drop a new,
	 * longer message as a "duplicate" of an old one and lose its tail */
	snprintf(sl->id, sizeof(sl->id), "%" PRIu64 ":%u:%" PRIu64 ":%u", h.generation, kind, first,
	         n);
	if (b->cfg->compact && kind == UF_NATS_DATA) {
		h.version = UF_NATS_VERSION_COMPACT;
		len = sizeof(h) +
		      uf_nats_compact_encode(recs, n, (unsigned char *)sl->buf + sizeof(h));
	} else if (n) {
		memcpy(sl->buf + sizeof(h), recs, (size_t)n * sizeof(*recs));
	}
	memcpy(sl->buf, &h, sizeof(h));
	slen = sign(b, "seq", sl->buf, len);
	if (slen < 0) {
		uf_bridge_log("publish %s: cannot sign it (libcrypto)", sl->id);
		return -EIO;
	}
	sl->len = (size_t)slen;
	sl->kind = kind;
	sl->n = n;
	sl->first = first;
	sl->aux = aux;
	for (uint32_t i = 0; i < n; i++) {
		uint64_t pub = recs[i].rx_ts ? recs[i].rx_ts + recs[i].pub_delta_ns : 0;
		if (pub && pub < oldest)
			oldest = pub;
	}
	sl->oldest_pub_ns = oldest == UINT64_MAX ? 0 : oldest;
	uf_bridge_pipe_submit(&b->pipe);
	/* answers already here retire messages now: the position stays current */
	return uf_bridge_pipe_poll(&b->pipe, 0) < 0 ? -EIO : 0;
}

/* The subject token of instrument `id`: its trimmed symbol with bytes outside
 * [A-Za-z0-9_-] as '_', or "_<id>" when it has none. */
static void symbol_token(const struct bridge *b, uint32_t id, char out[16])
{
	const struct uf_bm_book *bk =
	    id < b->books.max ? uf_book_model_peek(&b->books.m, id) : NULL;
	char sym[9] = {0};
	int n = 8;

	if (bk)
		memcpy(sym, &bk->symbol, 8);
	while (n > 0 && (sym[n - 1] == ' ' || sym[n - 1] == '\0'))
		sym[--n] = '\0';
	if (n == 0) {
		snprintf(out, 16, "_%u", id);
		return;
	}
	for (int i = 0; i < n; i++) {
		char c = sym[i];
		int ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
		         (c >= '0' && c <= '9') || c == '-' || c == '_';
		out[i] = ok ? c : '_';
	}
	out[n] = '\0';
}

/* --per-symbol: after a DATA message is stored, each instrument's records of it go to
 * uf.RING.rec.SYMBOL, published asynchronously (the ordered subject stays the reference;
 * failures are counted in sym_failed). Ids name the content, as for DATA. */
static void publish_per_symbol(struct bridge *b, const struct uf_record *recs, uint32_t n,
                               uint64_t first)
{
	memset(b->sym_done, 0, n);
	for (uint32_t i = 0; i < n; i++) {
		uint32_t id = recs[i].instrument, k = 0;
		struct uf_nats_msg h;
		char subj[128], tok[16], msgid[UF_NATS_MSG_ID_MAX];
		jsPubOptions po;
		natsMsg *m = NULL;
		size_t len;

		if (b->sym_done[i])
			continue;
		for (uint32_t j = i; j < n; j++) {
			if (b->sym_done[j] || recs[j].instrument != id)
				continue;
			b->sym_recs[k] = recs[j];
			b->sym_seqs[k] = first + j;
			b->sym_done[j] = 1;
			k++;
		}
		memset(&h, 0, sizeof(h));
		h.magic = UF_NATS_MAGIC;
		h.version = UF_NATS_VERSION;
		h.kind = UF_NATS_SYMBOL;
		h.count = k;
		h.generation = b->info.generation;
		h.first_seq = b->sym_seqs[0];
		h.pub_ns = uf_now_realtime_ns();
		h.ring_tail = b->pos;
		h.depth = b->info.depth;
		h.max_instruments = b->info.max_instruments;
		h.capacity = b->info.capacity;
		len = sizeof(h) + (size_t)k * (sizeof(struct uf_record) + sizeof(uint64_t));
		memcpy(b->sym_msg, &h, sizeof(h));
		memcpy(b->sym_msg + sizeof(h), b->sym_recs, (size_t)k * sizeof(struct uf_record));
		memcpy(b->sym_msg + sizeof(h) + (size_t)k * sizeof(struct uf_record), b->sym_seqs,
		       (size_t)k * sizeof(uint64_t));
		if (b->key.len) { /* signed as "sym" (cannot fail but for libcrypto itself) */
			long sl = sign(b, "sym", b->sym_msg, len);
			if (sl < 0) {
				__atomic_add_fetch(&b->cn.sym_failed, 1, __ATOMIC_RELAXED);
				continue;
			}
			len = (size_t)sl;
		}
		symbol_token(b, id, tok);
		snprintf(subj, sizeof(subj), "%s.%s", b->nm.per_sym, tok);
		snprintf(msgid, sizeof(msgid), "%" PRIu64 ":%u:%" PRIu64 ":%u:%u", h.generation,
		         (unsigned)UF_NATS_SYMBOL, h.first_seq, id, k);
		jsPubOptions_Init(&po);
		po.MsgId = msgid;
		b->cn.js_sym_async = 1;
		if (natsMsg_Create(&m, subj, NULL, b->sym_msg, (int)len) != NATS_OK ||
		    js_PublishMsgAsync(b->cn.js_sym, &m, &po) != NATS_OK) {
			natsMsg_Destroy(m); /* NULL once the library took it */
			__atomic_add_fetch(&b->cn.sym_failed, 1, __ATOMIC_RELAXED);
			continue;
		}
		b->st.sym_msgs++;
	}
}

static int flush_records(struct bridge *b)
{
	int rc;

	if (b->nrecs == 0)
		return 0;
	rc = publish(b, UF_NATS_DATA, b->first, 0, b->recs, b->nrecs);
	if (rc == 0)
		b->nrecs = 0;
	return rc;
}

/* Writes changed books (or all of them) then the commit entry. Books are published
 * asynchronously and awaited together; the commit goes last, so a consumer that reads it
 * finds every entry it promises. Only called with no records pending: the books are at
 * b->pos, and once the window is drained (first thing here) every record before b->pos is
 * in the stream and js_last names the last message. Returns 0, -EAGAIN (retry later),
 * -EINTR, -EIO. */
static int flush_books(struct bridge *b, int all)
{
	struct uf_nats_commit cm;
	unsigned char cmbuf[sizeof(cm) + UF_NATS_MAC_LEN];
	long cmlen;
	const uint32_t *dirty;
	uint32_t n = 0;
	char subj[128];
	jsPubOptions po;
	natsStatus s = NATS_OK;
	int rc = uf_bridge_pipe_drain(&b->pipe, b->stop);

	if (rc < 0)
		return rc;
	if (all) {
		(void)uf_nats_books_take_dirty(&b->books, &dirty);
		for (uint32_t i = 0; i < b->books.max; i++)
			if (uf_nats_books_present(&b->books, i))
				b->ids[n++] = i;
	} else {
		n = uf_nats_books_take_dirty(&b->books, &dirty);
		memcpy(b->ids, dirty, (size_t)n * sizeof(*dirty));
	}
	for (uint32_t i = 0; i < n && s == NATS_OK; i++) {
		int len = uf_nats_books_encode(&b->books, b->ids[i], b->pos, &b->kvbuf, &b->kvcap);
		char dom[32];
		if (len < 0)
			continue;
		if (b->key
		        .len) { /* signed as "kv:<key>": an entry is valid under its own key only */
			long sl;
			if (b->kvcap < (size_t)len + UF_NATS_MAC_LEN) {
				void *p = realloc(b->kvbuf, (size_t)len + UF_NATS_MAC_LEN);
				if (!p)
					continue;
				b->kvbuf = p;
				b->kvcap = (size_t)len + UF_NATS_MAC_LEN;
			}
			snprintf(dom, sizeof(dom), "kv:i%u", b->ids[i]);
			sl = sign(b, dom, b->kvbuf, (size_t)len);
			if (sl < 0)
				continue;
			len = (int)sl;
		}
		snprintf(subj, sizeof(subj), "$KV.%s.i%u", b->nm.bucket, b->ids[i]);
		b->cn.js_async = 1;
		s = js_PublishAsync(b->cn.js, subj, b->kvbuf, len, NULL);
	}
	jsPubOptions_Init(&po);
	po.MaxWait = b->cfg->ack_wait_ms;
	if (s == NATS_OK)
		s = js_PublishAsyncComplete(b->cn.js, &po);
	if (s != NATS_OK) {
		natsMsgList pending = {0};
		if (b->cn.js_async && js_PublishAsyncGetPendingList(&pending, b->cn.js) == NATS_OK)
			natsMsgList_Destroy(&pending); /* re-sent in full by the next flush */
		for (uint32_t i = 0; i < n; i++)
			uf_nats_books_mark_dirty(&b->books, b->ids[i]);
		b->st.retries++;
		uf_bridge_log("book flush: %s; will retry", natsStatus_GetText(s));
		return ack_outcome(b, s) < 0 ? -EIO : -EAGAIN;
	}
	b->st.kv_puts += n;
	memset(&cm, 0, sizeof(cm));
	cm.magic = UF_NATS_COMMIT_MAGIC;
	cm.version = UF_NATS_VERSION;
	cm.depth = b->info.depth;
	cm.generation = b->info.generation;
	cm.position = b->pos;
	/* once closed, the entry names the CLOSED message itself: a consumer attaching then
	 * reads it and finds the close confirmed here */
	cm.flags = b->st.closed ? UF_NATS_COMMIT_CLOSED : 0;
	cm.js_from = b->st.closed ? b->st.js_last : b->st.js_last + 1;
	cm.capacity = b->info.capacity;
	cm.max_instruments = b->info.max_instruments;
	cm.created_ns = b->info.created_ns;
	snprintf(subj, sizeof(subj), "$KV.%s.commit", b->nm.bucket);
	memcpy(cmbuf, &cm, sizeof(cm));
	cmlen = sign(b, "kv:commit", cmbuf, sizeof(cm));
	if (cmlen < 0)
		return -EIO;
	for (uint32_t attempt = 0; !*b->stop; attempt++) {
		jsPubAck *pa = NULL;
		s = js_Publish(&pa, b->cn.js, subj, cmbuf, (int)cmlen, &po, NULL);
		jsPubAck_Destroy(pa);
		if (ack_outcome(b, s) < 0)
			return -EIO;
		if (s == NATS_OK) {
			b->st.kv_puts++;
			b->kv_pending = 0;
			b->last_kv_ns = uf_now_mono_ns();
			return 0;
		}
		b->st.retries++;
		if (attempt % 20 == 0)
			uf_bridge_log("commit entry: %s; retrying", natsStatus_GetText(s));
		if (s != NATS_TIMEOUT)
			nanosleep(&(struct timespec){0, RETRY_SLEEP_NS}, NULL);
		status_tick(b);
	}
	return -EINTR;
}

/* ---- the local ring ---- */

static int seed_one(const struct uf_book_snapshot *s, void *arg)
{
	struct bridge *b = arg;
	return uf_nats_books_seed(&b->books, s) == -ENOMEM ? -ENOMEM : 0;
}

/* Books for a (new) position: empty when the bridge reads the generation from its first
 * record, else copied from the ring's book image (its depth only: levels below are unknown
 * until they change; docs/fanout.md). */
static int books_reset(struct bridge *b)
{
	int rc;

	uf_nats_books_free(&b->books);
	if (uf_nats_books_init(&b->books, b->info.max_instruments, b->info.generation) < 0)
		return -ENOMEM;
	free(b->ids);
	b->ids = calloc(b->info.max_instruments ? b->info.max_instruments : 1, sizeof(*b->ids));
	if (!b->ids)
		return -ENOMEM;
	if (b->pos == 0)
		return 0;
	rc = uf_consumer_snapshot_all(b->c, seed_one, b);
	if (rc < 0)
		uf_bridge_log("seeding books from the ring image: %s", uf_consumer_strerror(rc));
	return rc < 0 ? rc : 0;
}

/* (Re)starts a generation on the stream: books, every entry, commit, RESET. */
static int start_generation(struct bridge *b)
{
	int rc;

	uf_consumer_get_info(b->c, &b->info);
	b->pos = b->info.position;
	b->st.generation = b->info.generation;
	b->nrecs = 0;
	rc = books_reset(b);
	if (rc < 0)
		return rc;
	while ((rc = flush_books(b, 1)) == -EAGAIN)
		nanosleep(&(struct timespec){0, RETRY_SLEEP_NS}, NULL);
	if (rc < 0)
		return rc;
	uf_bridge_log("ring %s generation %" PRIu64 ": streaming from sequence %" PRIu64 " to %s "
	              "(stream %s, bucket %s)",
	              b->cfg->ring, b->info.generation, b->pos, b->nm.subject, b->nm.stream,
	              b->nm.bucket);
	return publish(b, UF_NATS_RESET, b->pos, 0, NULL, 0); /* on_stored() sets live */
}

static int on_lap(struct bridge *b)
{
	struct uf_consumer_lap lap;
	int rc = flush_records(b);

	if (rc < 0)
		return rc;
	uf_consumer_last_lap(b->c, &lap);
	b->st.laps++;
	b->st.lost += lap.lost;
	uf_bridge_log("lapped by the ring: lost %" PRIu64 " records (%" PRIu64 "..%" PRIu64
	              "); re-snapshotting",
	              lap.lost, lap.from_seq, lap.resume_seq - 1);
	b->pos = lap.resume_seq;
	rc = books_reset(b);
	while (rc == 0 && (rc = flush_books(b, 1)) == -EAGAIN)
		nanosleep(&(struct timespec){0, RETRY_SLEEP_NS}, NULL);
	if (rc < 0)
		return rc;
	return publish(b, UF_NATS_LAP, lap.from_seq, lap.resume_seq, NULL, 0);
}

static void write_status(struct bridge *b, int to_stderr)
{
	char line[1536], tmp[300];
	FILE *f;

	if (b->c) { /* NULL until the ring is attached */
		struct uf_consumer_info ci;
		uf_consumer_get_info(b->c, &ci);
		b->st.ring_tail = ci.tail;
	}
	b->st.read = b->pos;
	b->st.reconnects = __atomic_load_n(&b->cn.reconnects, __ATOMIC_RELAXED);
	b->st.sym_failed = __atomic_load_n(&b->cn.sym_failed, __ATOMIC_RELAXED);
	b->st.ack_timeouts = b->cn.ack_timeouts;
	b->st.failovers = b->cn.failovers;
	b->st.in_flight = uf_bridge_pipe_inflight(&b->pipe);
	b->st.window_full = b->pipe.full_waits;
	b->st.resends = b->pipe.resends;
	b->st.order_errors = b->pipe.order_errors;
	uf_bridge_conn_url(&b->cn, b->st.server, sizeof(b->st.server));
	b->st.connected = uf_bridge_conn_answering(&b->cn);
	b->last_file_ns = uf_now_mono_ns();
	if (uf_bridge_status_json(&b->st, line, sizeof(line)) < 0)
		return;
	if (to_stderr)
		fprintf(stderr, "%s\n", line);
	if (!b->cfg->status_file[0])
		return;
	snprintf(tmp, sizeof(tmp), "%s.tmp", b->cfg->status_file);
	f = fopen(tmp, "w");
	if (!f)
		return;
	fprintf(f, "%s\n", line);
	if (fclose(f) == 0)
		rename(tmp, b->cfg->status_file);
}

/* The status line on stderr every cfg->stats_interval_ms, the status file every 200 ms.
 * Called from the loop and from every retry, so both tell the truth while NATS is stuck;
 * not before the first generation is announced: the first status written tells that the
 * stream, the bucket and the commit entry exist. */
static void status_tick(struct bridge *b)
{
	uint64_t now = uf_now_mono_ns();

	if (!b->live)
		return;
	if (b->cfg->stats_interval_ms &&
	    now - b->last_stats_ns >= (uint64_t)b->cfg->stats_interval_ms * 1000000ull) {
		b->last_stats_ns = now;
		write_status(b, 1);
	} else if (b->cfg->status_file[0] && now - b->last_file_ns >= 200000000ull) {
		write_status(b, 0);
	}
}

static void periodic(struct bridge *b)
{
	uint64_t now = uf_now_mono_ns();

	if (b->kv_pending && b->nrecs == 0 &&
	    now - b->last_kv_ns >= (uint64_t)b->cfg->kv_interval_ms * 1000000ull)
		(void)flush_books(b, 0);
	status_tick(b);
}

static int attach_ring(struct bridge *b)
{
	struct uf_consumer_options co;
	char err[512];

	uf_consumer_options_init(&co);
	co.start = UF_CONSUMER_START_OLDEST;
	co.tag = "uf-bridge";
	co.dir = b->cfg->dir[0] ? b->cfg->dir : NULL;
	co.spin_ns = 0; /* the bridge trades a few microseconds for a free CPU */
	for (int tries = 0; !*b->stop; tries++) {
		int rc = uf_consumer_attach(b->cfg->ring, &co, &b->c, err, sizeof(err));
		if (rc == 0)
			return 0;
		if (rc != -ENOENT && rc != -ESTALE) {
			uf_bridge_log("%s", err);
			return -1;
		}
		if (tries % 50 == 0)
			uf_bridge_log("%s; waiting for it", err);
		nanosleep(&(struct timespec){0, 100000000L}, NULL);
	}
	return -1;
}

/* Reads, batches, publishes. Returns 0 on a clean stop, -1 on a fatal error. */
static int loop(struct bridge *b)
{
	int rc = start_generation(b);

	while (rc == 0 && !*b->stop) {
		uint64_t seq;
		int n = uf_consumer_read(b->c, b->recs + b->nrecs, b->cfg->batch - b->nrecs, &seq);

		if (n > 0) {
			if (b->nrecs == 0)
				b->first = seq;
			for (int i = 0; i < n; i++)
				if (uf_nats_books_apply(&b->books, &b->recs[b->nrecs + i],
				                        seq + i) > 0)
					b->kv_pending = 1;
			b->nrecs += (uint32_t)n;
			b->pos = seq + (uint64_t)n;
			if (b->nrecs == b->cfg->batch) {
				rc = flush_records(b);
				if (rc == 0) /* a ring that never empties still gets its books */
					periodic(b);
			}
			continue;
		}
		switch (n) {
		case -EAGAIN: /* caught up: send what we have, then do the periodic work */
			if (b->nrecs && b->cfg->eager &&
			    uf_bridge_pipe_inflight(&b->pipe) >= b->cfg->eager) {
				/* --eager: enough in flight; the message grows until it is full
				 * or an acknowledgement makes room below the bound */
				b->st.held++;
				if (uf_bridge_pipe_poll(&b->pipe, 0) < 0)
					rc = -EIO;
				else if (uf_bridge_pipe_inflight(&b->pipe) >= b->cfg->eager)
					uf_consumer_wait(b->c, HOLD_WAIT_NS);
				status_tick(b);
				break;
			}
			rc = flush_records(b);
			if (rc == 0) {
				periodic(b);
				/* answers are polled between waits: shorter waits while any are due
				 */
				if (uf_bridge_pipe_poll(&b->pipe, 0) < 0)
					rc = -EIO;
				else
					uf_consumer_wait(b->c, b->nrecs ? 0
					                       : uf_bridge_pipe_inflight(&b->pipe)
					                           ? PIPE_WAIT_NS
					                           : IDLE_WAIT_NS);
			}
			break;
		case -EOVERFLOW:
			rc = on_lap(b);
			break;
		case -EPIPE:
			rc = flush_records(b);
			if (rc == 0 && !b->st.closed) {
				while ((rc = flush_books(b, 0)) == -EAGAIN)
					nanosleep(&(struct timespec){0, RETRY_SLEEP_NS}, NULL);
				if (rc == 0)
					rc = publish(b, UF_NATS_CLOSED, b->pos, 0, NULL, 0);
				b->st.closed = 1;
				/* the commit entry confirms the close (uf_nats_wire.h): consumers
				 * believe no CLOSED without it */
				while (rc == 0 && (rc = flush_books(b, 0)) == -EAGAIN)
					nanosleep(&(struct timespec){0, RETRY_SLEEP_NS}, NULL);
				uf_bridge_log("ring closed by the producer at %" PRIu64 "%s",
				              b->pos,
				              b->cfg->exit_on_close ? "; exiting"
				                                    : "; waiting for a restart");
				if (b->cfg->exit_on_close)
					return rc < 0 && rc != -EINTR ? -1 : 0;
			}
			periodic(b);
			nanosleep(&(struct timespec){0, 50000000L}, NULL);
			break;
		case -ESTALE: {
			char err[512];
			rc = flush_records(b);
			if (rc < 0)
				break;
			if (uf_consumer_reattach(b->c, err, sizeof(err)) < 0) {
				nanosleep(&(struct timespec){0, 50000000L}, NULL);
				break;
			}
			b->st.closed = 0;
			rc = start_generation(b);
			break;
		}
		default:
			uf_bridge_log("ring read: %s", uf_consumer_strerror(n));
			return -1;
		}
	}
	return rc < 0 && rc != -EINTR ? -1 : 0;
}

int uf_bridge_run(const struct uf_bridge_config *cfg, volatile sig_atomic_t *stop)
{
	struct bridge b;
	int rc = -1;

	memset(&b, 0, sizeof(b));
	b.cfg = cfg;
	b.stop = stop;
	snprintf(b.st.ring, sizeof(b.st.ring), "%s", cfg->ring);
	uf_nats_names_make(cfg->ring, &b.nm);
	b.recs = calloc(cfg->batch, sizeof(*b.recs));
	b.dec = calloc(cfg->batch, sizeof(*b.dec));
	if (!b.dec) {
		free(b.recs); /* reported below */
		b.recs = NULL;
	}
	if (cfg->per_symbol) {
		b.sym_recs = calloc(cfg->batch, sizeof(*b.sym_recs));
		b.sym_seqs = calloc(cfg->batch, sizeof(*b.sym_seqs));
		b.sym_done = calloc(cfg->batch, 1);
		b.sym_msg =
		    malloc(sizeof(struct uf_nats_msg) +
		           (size_t)cfg->batch * (sizeof(struct uf_record) + sizeof(uint64_t)) +
		           UF_NATS_MAC_LEN);
		if (!b.sym_recs || !b.sym_seqs || !b.sym_done || !b.sym_msg) {
			free(b.recs); /* reported below */
			b.recs = NULL;
		}
	}
	if (!b.recs) {
		uf_bridge_log("out of memory");
		goto out;
	}
	{
		char err[300];
		if (uf_nats_key_load(&b.key, cfg->key_file, err, sizeof(err)) < 0) {
			uf_bridge_log("%s", err);
			goto out;
		}
		if (b.key.len)
			uf_bridge_log("signing every message with the shared key (HMAC-SHA256)");
	}
	{
		/* --per-symbol messages share the stream: with more than one DATA message in
		 * flight they would come between a message and the successor that expects it */
		struct uf_bridge_pipe_ops ops = {on_stored, pipe_outcome, pipe_tick, &b};
		uint32_t window = cfg->per_symbol ? 1 : cfg->window;
		size_t msg_max = sizeof(struct uf_nats_msg) +
		                 (size_t)cfg->batch * UF_NATS_COMPACT_MAX + UF_NATS_MAC_LEN;
		if (uf_bridge_pipe_init(&b.pipe, &b.cn, b.nm.stream, b.nm.subject, window, msg_max,
		                        cfg->ack_wait_ms, &ops, &b.st.retries) < 0) {
			uf_bridge_log("out of memory");
			goto out;
		}
	}
	if (uf_bridge_conn_open(&b.cn, cfg) < 0 || nats_setup(&b) < 0 || attach_ring(&b) < 0)
		goto out;
	rc = loop(&b);
	if (b.nrecs && !*stop)
		(void)flush_records(&b);
	if (!*stop && uf_bridge_pipe_drain(&b.pipe, stop) < 0)
		uf_bridge_log("stream messages not all acknowledged at exit");
	if (b.cn.js_sym) { /* the per-symbol messages still in flight */
		jsPubOptions po;
		jsPubOptions_Init(&po);
		po.MaxWait = cfg->ack_wait_ms;
		if (js_PublishAsyncComplete(b.cn.js_sym, &po) != NATS_OK)
			uf_bridge_log("per-symbol messages not all acknowledged at exit");
	}
	write_status(&b, 1);
out:
	uf_consumer_detach(b.c);
	uf_nats_books_free(&b.books);
	uf_bridge_pipe_free(&b.pipe); /* its subscription before the connection */
	uf_bridge_conn_close(&b.cn);
	free(b.recs);
	free(b.dec);
	free(b.kvbuf);
	free(b.ids);
	free(b.sym_recs);
	free(b.sym_seqs);
	free(b.sym_done);
	free(b.sym_msg);
	return rc;
}
