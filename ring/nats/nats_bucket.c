/* The remote consumer's reads of the bucket, and the hooks through which the stream checks
 * (nats_stream.h) ask JetStream and the bucket (see consumer_nats_int.h). */
#include "ring/nats/consumer_nats_int.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/uf_err.h"
#include "common/uf_time.h"

/* Keys the bucket holds now (its stream's subject count, a delete mark included) into *keys.
 * Returns 0 or -EIO (retry: a leader election). */
static int bucket_keys(struct uf_nats_consumer *n, uint64_t *keys)
{
	char stream[80];
	jsStreamInfo *si = NULL;

	snprintf(stream, sizeof(stream), "KV_%s", n->nm.bucket);
	if (js_GetStreamInfo(&si, n->js, stream, NULL, NULL) != NATS_OK)
		return -EIO;
	*keys = si->State.NumSubjects > 0 ? (uint64_t)si->State.NumSubjects : 0;
	jsStreamInfo_Destroy(si);
	return 0;
}

int uf_nats_load_books(struct uf_nats_consumer *n, struct uf_nats_books *bk,
                       struct uf_nats_commit *cm, uint64_t min_from, char *err, size_t errlen)
{
	kvEntry *e = NULL;
	kvWatcher *w = NULL;
	kvWatchOptions wo;
	struct uf_nats_keys keys;
	uint64_t want = 0, read_on_until = 0;
	natsStatus s;
	long vlen;
	int rc = 0;

	s = kvStore_Get(&e, n->kv, "commit");
	if (s != NATS_OK) {
		uf_err_set(err, errlen, "ring %s: bucket %s has no commit entry yet: %s", n->ring,
		           n->nm.bucket, natsStatus_GetText(s));
		return s == NATS_NOT_FOUND ? -ENOENT : -EIO;
	}
	vlen =
	    uf_nats_mac_check(&n->key, "kv:commit", kvEntry_Value(e), (size_t)kvEntry_ValueLen(e));
	if (vlen != (long)sizeof(*cm)) {
		kvEntry_Destroy(e);
		uf_err_set(err, errlen,
		           vlen == -EBADMSG
		               ? "ring %s: commit entry not authenticated by the shared "
		                 "key (a different key, or not the bridge's)"
		               : "ring %s: commit entry has the wrong size",
		           n->ring);
		return vlen == -EBADMSG ? -EBADMSG : -EPROTO;
	}
	memcpy(cm, kvEntry_Value(e), sizeof(*cm));
	kvEntry_Destroy(e);
	if (cm->magic != UF_NATS_COMMIT_MAGIC || cm->version != UF_NATS_VERSION ||
	    cm->depth > UF_BOOK_MAX_DEPTH || cm->max_instruments > (1u << 24)) {
		uf_err_set(err, errlen, "ring %s: commit entry is not wire version %u", n->ring,
		           UF_NATS_VERSION);
		return -EPROTO;
	}
	if (min_from < cm->position)
		min_from = cm->position;
	/* counted before the watch: every key counted is then delivered by it (struct
	 * uf_nats_keys) */
	if (bucket_keys(n, &want) < 0) {
		uf_err_set(err, errlen, "ring %s: bucket %s: no stream information", n->ring,
		           n->nm.bucket);
		return -EIO;
	}
	if (uf_nats_books_init(bk, cm->max_instruments, cm->generation) < 0)
		return -ENOMEM;
	if (uf_nats_keys_init(&keys, cm->max_instruments, want) < 0) {
		uf_nats_books_free(bk);
		return -ENOMEM;
	}
	kvWatchOptions_Init(&wo);
	wo.IgnoreDeletes = false; /* a delete mark is a key the count holds: it must be read */
	s = kvStore_WatchAll(&w, n->kv, &wo);
	if (s != NATS_OK)
		w = NULL; /* not made: nothing of it is ours to destroy */
	while (s == NATS_OK) {
		e = NULL;
		s = kvWatcher_Next(&e, w, 3000); /* see NC_ATTACH_NS */
		if (s != NATS_OK)
			break;
		if (!e) { /* the mark: every entry present at the start was delivered, it says */
			if (uf_nats_keys_complete(&keys))
				break;
			/* early: the rest follows (bounded: a bucket rewritten all the time would
			 * never let Next time out) */
			read_on_until = uf_now_mono_ns() + 3000000000ull;
			continue;
		}
		uf_nats_keys_saw(&keys, kvEntry_Key(e));
		if (kvEntry_Key(e)[0] == 'i' && kvEntry_Operation(e) == kvOp_Put) {
			char dom[64];
			int r;
			snprintf(dom, sizeof(dom), "kv:%s", kvEntry_Key(e));
			vlen = uf_nats_mac_check(&n->key, dom, kvEntry_Value(e),
			                         (size_t)kvEntry_ValueLen(e));
			r = vlen < 0 ? -EBADMSG
			             : uf_nats_books_decode(bk, kvEntry_Value(e), (size_t)vlen,
			                                    min_from);
			if (r == -ENOMEM || r == -EPROTO || r == -EBADMSG)
				rc = r;
		}
		kvEntry_Destroy(e);
		if (read_on_until) {
			if (uf_nats_keys_complete(&keys))
				break;
			if (uf_now_mono_ns() > read_on_until)
				s = NATS_TIMEOUT;
		}
	}
	if (w)
		kvWatcher_Destroy(w);
	uf_nats_keys_free(&keys);
	if (s != NATS_OK) {
		uf_err_set(err, errlen, "ring %s: reading bucket %s: %s", n->ring, n->nm.bucket,
		           natsStatus_GetText(s));
		rc = -EIO;
	}
	if (rc < 0) {
		if (rc == -EPROTO)
			uf_err_set(err, errlen,
			           "ring %s: a book entry is not book version %u (a uf-bridge of "
			           "another release wrote the bucket: use the same release on both "
			           "sides)",
			           n->ring, UF_NATS_BOOK_VERSION);
		if (rc == -EBADMSG) /* a book we cannot believe: no image rather than a wrong one */
			uf_err_set(err, errlen,
			           "ring %s: a book entry is not authenticated by the shared key",
			           n->ring);
		uf_nats_books_free(bk);
	}
	return rc;
}

/* ---- the stream checks' hooks (called with mu held, released while on the network) ---- */

/* Reads the commit entry only. Returns 0, -ENOENT, -EIO, -EPROTO. */
static int read_commit(struct uf_nats_consumer *n, struct uf_nats_commit *cm)
{
	kvEntry *e = NULL;
	natsStatus s = kvStore_Get(&e, n->kv, "commit");

	if (s != NATS_OK)
		return s == NATS_NOT_FOUND ? -ENOENT : -EIO;
	if (uf_nats_mac_check(&n->key, "kv:commit", kvEntry_Value(e),
	                      (size_t)kvEntry_ValueLen(e)) != (long)sizeof(*cm)) {
		kvEntry_Destroy(e);
		return -EPROTO;
	}
	memcpy(cm, kvEntry_Value(e), sizeof(*cm));
	kvEntry_Destroy(e);
	return cm->magic == UF_NATS_COMMIT_MAGIC && cm->version == UF_NATS_VERSION ? 0 : -EPROTO;
}

static int hook_stream_dropped(void *arg, uint64_t sseq)
{
	struct uf_nats_consumer *n = arg;
	int dropped = 0;

	pthread_mutex_unlock(&n->mu);
	for (int attempt = 0; attempt < 3; attempt++) { /* a leader election: try again */
		jsStreamInfo *si = NULL;
		if (js_GetStreamInfo(&si, n->js, n->nm.stream, NULL, NULL) == NATS_OK) {
			dropped = si->State.FirstSeq > sseq;
			jsStreamInfo_Destroy(si);
			break;
		}
	}
	pthread_mutex_lock(&n->mu);
	return dropped;
}

/* 1 when JetStream says the bucket's stream does not exist (deleted: no retry brings it
 * back), 0 when it does or cannot say (a leader election: retry). */
static int bucket_gone(struct uf_nats_consumer *n)
{
	char stream[80];
	jsStreamInfo *si = NULL;
	jsErrCode jerr = 0;
	natsStatus s;

	snprintf(stream, sizeof(stream), "KV_%s", n->nm.bucket);
	s = js_GetStreamInfo(&si, n->js, stream, NULL, &jerr);
	if (s == NATS_OK)
		jsStreamInfo_Destroy(si);
	return s != NATS_OK && jerr == JSStreamNotFoundErr;
}

static int hook_load(void *arg, struct uf_nats_books *bk, struct uf_nats_commit *cm,
                     uint64_t min_from)
{
	struct uf_nats_consumer *n = arg;
	uint64_t deadline = uf_now_mono_ns() + NC_ATTACH_NS;
	char err[256];
	int rc;

	pthread_mutex_unlock(&n->mu);
	for (;;) {
		rc = bk ? uf_nats_load_books(n, bk, cm, min_from, err, sizeof(err))
		        : read_commit(n, cm);
		if (rc != -EIO || uf_now_mono_ns() >= deadline ||
		    __atomic_load_n(&n->quit, __ATOMIC_ACQUIRE))
			break;
		if (bucket_gone(n)) {
			rc = -ENOENT;
			snprintf(err, sizeof(err), "ring %s: bucket %s was deleted", n->ring,
			         n->nm.bucket);
			break;
		}
		nanosleep(&(struct timespec){0, 200000000L}, NULL);
	}
	if (rc < 0 && bk)
		fprintf(stderr, "ufconsumer: %s\n", err);
	pthread_mutex_lock(&n->mu);
	return rc;
}

static int hook_close_confirmed(void *arg, uint64_t generation, uint64_t seq)
{
	struct uf_nats_consumer *n = arg;
	struct uf_nats_commit cm;
	int rc;

	pthread_mutex_unlock(&n->mu);
	rc = read_commit(n, &cm);
	pthread_mutex_lock(&n->mu);
	if (rc < 0)
		return 0; /* cannot tell now: asked again */
	if (cm.generation != generation || cm.position > seq)
		return -1;
	return (cm.flags & UF_NATS_COMMIT_CLOSED) && cm.position == seq;
}

/* Part of a message is stored: the application may read it now (uf_nats_stream_hooks): a
 * sleeping one is woken, and a read waiting for the lock gets it (the yield lets it take the
 * lock before the receiver does again). Nothing when the application is busy elsewhere: a
 * wake-up and a yield every 256 records cost it and the receiver ~25 ns a record. */
static void hook_progress(void *arg)
{
	struct uf_nats_consumer *n = arg;

	if (n->waiters)
		pthread_cond_broadcast(&n->cv);
	if (__atomic_load_n(&n->readers, __ATOMIC_RELAXED) == 0)
		return;
	pthread_mutex_unlock(&n->mu);
	sched_yield();
	pthread_mutex_lock(&n->mu);
}

void uf_nats_bucket_hooks(struct uf_nats_consumer *n, struct uf_nats_stream_hooks *hk)
{
	hk->stream_dropped = hook_stream_dropped;
	hk->load = hook_load;
	hk->close_confirmed = hook_close_confirmed;
	hk->progress = hook_progress;
	hk->arg = n;
}
