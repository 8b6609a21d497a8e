/* libufconsumer over NATS JetStream (see consumer_nats.h, docs/fanout.md).
 *
 * A receiver thread reads the bridge's stream (an ordered JetStream consumer), checks that
 * ring sequences follow each other, applies every record to full-depth books and appends it
 * to an in-process ring of `capacity` records indexed by the ring sequence. The
 * application's calls read that ring under a mutex: a remote consumer is a network hop
 * away, a mutex costs nothing next to it, and it keeps the image and the records consistent
 * (a snapshot is stamped with the receiver's position: every record below is in it). */
#include "ring/nats/consumer_nats.h"
#include "ring/nats/consumer_nats_int.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <nats/nats.h>

#include "common/uf_err.h"
#include "common/uf_time.h"
#include "ring/book_each.h"
#include "ring/nats/nats_security.h"

/* "nats://h1:4222,nats://h2:4222/RING" -> urls, ring. */
static int parse_name(struct uf_nats_consumer *n, const char *name, char *err, size_t errlen)
{
	const char *slash = strrchr(name, '/');
	size_t ulen;

	if (!slash || slash[1] == '\0' ||
	    slash - name < (ptrdiff_t)strlen(UF_CONSUMER_NATS_PREFIX) || slash[-1] == '/') {
		uf_err_set(
		    err, errlen,
		    "\"%s\": a remote ring is named nats://HOST:PORT[,nats://HOST:PORT...]/RING",
		    name);
		return -EINVAL;
	}
	ulen = (size_t)(slash - name);
	if (ulen >= sizeof(n->urls) || strlen(slash + 1) >= sizeof(n->ring)) {
		uf_err_set(err, errlen, "\"%s\": name too long", name);
		return -ENAMETOOLONG;
	}
	memcpy(n->urls, name, ulen);
	n->urls[ulen] = '\0';
	snprintf(n->ring, sizeof(n->ring), "%s", slash + 1);
	uf_nats_names_make(n->ring, &n->nm);
	return 0;
}

static int nats_open(struct uf_nats_consumer *n, char *err, size_t errlen)
{
	const char *urls[16];
	char list[sizeof(n->urls)];
	jsOptions jo;
	int cnt = 0;
	natsStatus s;

	snprintf(list, sizeof(list), "%s", n->urls);
	for (char *save = NULL, *tok = strtok_r(list, ",", &save); tok && cnt < 16;
	     tok = strtok_r(NULL, ",", &save))
		urls[cnt++] = tok;
	s = natsOptions_Create(&n->opts);
	if (s == NATS_OK)
		s = natsOptions_SetServers(n->opts, urls, cnt);
	if (s == NATS_OK)
		s = natsOptions_SetName(n->opts, n->opt.tag ? n->opt.tag : "ufconsumer");
	if (s == NATS_OK)
		s = natsOptions_SetMaxReconnect(n->opts, -1);
	if (s == NATS_OK)
		s = natsOptions_SetReconnectWait(n->opts, 100);
	if (s == NATS_OK) /* servers in the order given: list the nearest first */
		s = natsOptions_SetNoRandomize(n->opts, true);
	if (s == NATS_OK)
		s = natsOptions_SetTimeout(n->opts, 2000);
	if (s == NATS_OK) {
		struct uf_nats_security sec;
		uf_nats_security_from_env(&sec);
		s = uf_nats_security_apply(n->opts, &sec);
	}
	if (s == NATS_OK)
		s = natsConnection_Connect(&n->nc, n->opts);
	if (s != NATS_OK) {
		uf_err_set(err, errlen, "ring %s: connect %s: %s", n->ring, n->urls,
		           natsStatus_GetText(s));
		return s == NATS_NO_SERVER ? -ECONNREFUSED : -EIO;
	}
	jsOptions_Init(&jo);
	jo.Wait = 5000; /* see NC_ATTACH_NS */
	s = natsConnection_JetStream(&n->js, n->nc, &jo);
	if (s == NATS_OK)
		s = js_KeyValue(&n->kv, n->js, n->nm.bucket);
	if (s != NATS_OK) {
		uf_err_set(err, errlen,
		           "ring %s: no bucket %s on %s (is uf-bridge publishing this ring?): %s",
		           n->ring, n->nm.bucket, n->urls, natsStatus_GetText(s));
		return -ENOENT;
	}
	return 0;
}

static int subscribe(struct uf_nats_consumer *n, char *err, size_t errlen)
{
	natsSubscription *sub = NULL;
	jsSubOptions so;
	jsErrCode jerr = 0;
	natsStatus s;

	jsSubOptions_Init(&so);
	so.Stream = n->nm.stream;
	so.Ordered = true; /* in order, no acks; the library re-creates it after a failover */
	so.Config.DeliverPolicy = js_DeliverByStartSequence;
	so.Config.OptStartSeq = n->st.js_next ? n->st.js_next : 1;
	/* only a subscription that was made is kept: after a failure the library may have
	 * freed what it wrote to its out-pointer */
	s = js_SubscribeSync(&sub, n->js, n->nm.subject, NULL, &so, &jerr);
	if (s == NATS_OK) {
		n->sub = sub; /* the receiver drains at once: a backlog is the stream's job */
		s = natsSubscription_SetPendingLimits(n->sub, -1, 256 * 1024 * 1024);
	}
	if (s != NATS_OK) {
		uf_err_set(err, errlen, "ring %s: subscribe %s from %llu: %s (%d)", n->ring,
		           n->nm.subject, (unsigned long long)so.Config.OptStartSeq,
		           natsStatus_GetText(s), (int)jerr);
		return -EIO;
	}
	return 0;
}

/* Reads one message (at most `wait_ms`). Returns 1 with a message handled, 0 on timeout,
 * 2 when the receiver must stop, -1 on a lost subscription. */
static int receive_one(struct uf_nats_consumer *n, int64_t wait_ms)
{
	natsMsg *m = NULL;
	jsMsgMetaData *meta = NULL;
	natsStatus s = natsSubscription_NextMsg(&m, n->sub, wait_ms);
	const char *msgid = NULL;
	uint64_t sseq = 0;
	int rc = 1;

	if (s == NATS_TIMEOUT) { /* idle: a close waiting for the commit entry may settle */
		struct uf_nats_stream_hooks hk;
		uf_nats_bucket_hooks(n, &hk);
		pthread_mutex_lock(&n->mu);
		if (uf_nats_stream_idle(&n->st, &hk))
			pthread_cond_broadcast(&n->cv);
		pthread_mutex_unlock(&n->mu);
		return 0;
	}
	if (s != NATS_OK)
		return s == NATS_SLOW_CONSUMER || s == NATS_MISSED_HEARTBEAT ? 0 : -1;
	if (natsMsg_GetMetaData(&meta, m) == NATS_OK) {
		sseq = meta->Sequence.Stream;
		jsMsgMetaData_Destroy(meta);
	}
	if (natsMsgHeader_Get(m, "Nats-Msg-Id", &msgid) != NATS_OK)
		msgid = NULL;
	{
		struct uf_nats_stream_hooks hk;
		uf_nats_bucket_hooks(n, &hk);
		pthread_mutex_lock(&n->mu);
		if (uf_nats_stream_on_msg(&n->st, &hk, natsMsg_GetData(m),
		                          (size_t)natsMsg_GetDataLength(m), msgid, sseq) == 1)
			rc = 2;
		pthread_cond_broadcast(&n->cv);
		pthread_mutex_unlock(&n->mu);
	}
	natsMsg_Destroy(m);
	return rc;
}

static void *receiver(void *arg)
{
	struct uf_nats_consumer *n = arg;

	while (!__atomic_load_n(&n->quit, __ATOMIC_ACQUIRE)) {
		int rc = receive_one(n, NC_FETCH_MS);
		if (rc == 2)
			break;
		if (rc < 0) { /* the subscription is gone: a new one from where we are */
			char err[256];
			natsSubscription_Destroy(n->sub);
			n->sub = NULL;
			while (!__atomic_load_n(&n->quit, __ATOMIC_ACQUIRE) &&
			       subscribe(n, err, sizeof(err)) < 0)
				nanosleep(&(struct timespec){0, 200000000L}, NULL);
		}
	}
	return NULL;
}

/* ---- attach ---- */

static void teardown(struct uf_nats_consumer *n)
{
	if (n->thr_started) {
		__atomic_store_n(&n->quit, 1, __ATOMIC_RELEASE);
		pthread_join(n->thr, NULL);
		n->thr_started = 0;
	}
	if (n->sub)
		natsSubscription_Destroy(n->sub);
	if (n->kv)
		kvStore_Destroy(n->kv);
	if (n->js)
		jsCtx_Destroy(n->js);
	if (n->nc)
		natsConnection_Destroy(n->nc);
	if (n->opts)
		natsOptions_Destroy(n->opts);
	n->sub = NULL;
	n->kv = NULL;
	n->js = NULL;
	n->nc = NULL;
	n->opts = NULL;
	uf_nats_books_free(&n->st.books);
	n->quit = 0;
}

/* Connects, loads the books, reads the stream up to where it ends now, starts the receiver. */
static int start(struct uf_nats_consumer *n, char *err, size_t errlen)
{
	jsStreamInfo *si = NULL;
	uint64_t last = 0, deadline;
	int rc;

	rc = nats_open(n, err, errlen);
	if (rc < 0)
		return rc;
	/* JetStream requests can time out while a cluster re-elects leaders after losing a
	 * node: retried for a while (NC_ATTACH_NS) before giving up */
	deadline = uf_now_mono_ns() + NC_ATTACH_NS;
	while ((rc = uf_nats_load_books(n, &n->st.books, &n->st.cm, 0, err, errlen)) == -EIO &&
	       uf_now_mono_ns() < deadline)
		nanosleep(&(struct timespec){0, 200000000L}, NULL);
	if (rc < 0)
		return rc;
	n->st.ring = n->ring;
	n->st.key = &n->key;
	uf_nats_stream_begin(&n->st);
	n->pos = n->st.tail;
	while ((rc = subscribe(n, err, errlen)) == -EIO && uf_now_mono_ns() < deadline)
		nanosleep(&(struct timespec){0, 200000000L}, NULL);
	if (rc < 0)
		return rc;
	/* catch up with the stream as it is now, so a snapshot right after attach is current
	 * (as a local attach's would be) */
	if (js_GetStreamInfo(&si, n->js, n->nm.stream, NULL, NULL) == NATS_OK) {
		last = si->State.LastSeq;
		jsStreamInfo_Destroy(si);
	}
	deadline = uf_now_mono_ns() + NC_CATCHUP_NS;
	while (n->st.js_next <= last && uf_now_mono_ns() < deadline) {
		if (receive_one(n, 200) == 2)
			break;
	}
	if (n->st.js_next <= last)
		fprintf(stderr,
		        "ufconsumer: ring %s: still %llu stream messages behind after the attach "
		        "catch-up; continuing in the background\n",
		        n->ring, (unsigned long long)(last - n->st.js_next + 1));
	pthread_mutex_lock(&n->mu);
	n->pos = n->opt.start == UF_CONSUMER_START_OLDEST ? n->st.base : n->st.tail;
	pthread_mutex_unlock(&n->mu);
	if (pthread_create(&n->thr, NULL, receiver, n) != 0) {
		uf_err_set(err, errlen, "ring %s: cannot start the receiver thread", n->ring);
		return -EAGAIN;
	}
	n->thr_started = 1;
	return 0;
}

/* The cond's timed waits use CLOCK_MONOTONIC: a wall clock step (NTP, an operator) must not
 * stretch or cut a uf_consumer_wait timeout. */
static int cond_init_monotonic(pthread_cond_t *cv)
{
	pthread_condattr_t ca;
	int rc = pthread_condattr_init(&ca);

	if (rc != 0)
		return -rc;
	rc = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	if (rc == 0)
		rc = pthread_cond_init(cv, &ca);
	pthread_condattr_destroy(&ca);
	return -rc;
}

static int nats_attach(const char *name, const struct uf_consumer_options *opt,
                       struct uf_consumer **out, char *err, size_t errlen)
{
	struct uf_nats_consumer *n;
	int rc;

	if (opt->start == UF_CONSUMER_START_JOURNAL) {
		/* the journal is files on the producer's host; the stream keeps what JetStream
		 * retains (UF_CONSUMER_START_OLDEST reads it from its start) */
		uf_err_set(
		    err, errlen,
		    "%s: UF_CONSUMER_START_JOURNAL reads the producer's journal files: local "
		    "rings only (use UF_CONSUMER_START_OLDEST on NATS)",
		    name);
		return -ENOTSUP;
	}
	n = calloc(1, sizeof(*n));
	if (!n) {
		uf_err_set(err, errlen, "%s: out of memory", name);
		return -ENOMEM;
	}
	n->handle.ops = &uf_consumer_nats_ops;
	n->opt = *opt;
	n->opt.dir = NULL;
	n->opt.tag = NULL; /* not kept: the caller's string */
	rc = parse_name(n, name, err, errlen);
	if (rc == 0)
		rc = uf_nats_key_load(&n->key, NULL, err, errlen);
	if (rc < 0)
		goto out_free;
	n->st.buf = malloc((size_t)NC_CAPACITY * sizeof(*n->st.buf));
	n->st.seqs = malloc((size_t)NC_CAPACITY * sizeof(*n->st.seqs));
	if (!n->st.buf || !n->st.seqs) {
		uf_err_set(err, errlen, "%s: out of memory", name);
		rc = -ENOMEM;
		goto out_free;
	}
	memset(n->st.seqs, 0xff, (size_t)NC_CAPACITY * sizeof(*n->st.seqs));
	/* touched now, not by the receiver: the first pass over an untouched buffer took a page
	 * fault every 64 records (perf: 91 % of the receiver's store() on its first write). Not
	 * with zeros: the compiler makes malloc + zeroing a calloc, which touches nothing (a
	 * slot's content means nothing until its seqs entry names it) */
	memset(n->st.buf, 0xff, (size_t)NC_CAPACITY * sizeof(*n->st.buf));
	n->st.mask = NC_CAPACITY - 1;
	pthread_mutex_init(&n->mu, NULL);
	rc = cond_init_monotonic(&n->cv);
	if (rc < 0) {
		uf_err_set(err, errlen, "%s: condition variable: %s", name, strerror(-rc));
		pthread_mutex_destroy(&n->mu);
		goto out_free;
	}
	rc = start(n, err, errlen);
	if (rc < 0) {
		teardown(n);
		pthread_mutex_destroy(&n->mu);
		pthread_cond_destroy(&n->cv);
		goto out_free;
	}
	*out = &n->handle;
	return 0;

out_free:
	free(n->st.buf);
	free(n->st.seqs);
	explicit_bzero(&n->key, sizeof(n->key));
	free(n);
	return rc;
}

static void nats_detach(struct uf_consumer *h)
{
	struct uf_nats_consumer *n = nats_of(h);

	teardown(n);
	pthread_mutex_destroy(&n->mu);
	pthread_cond_destroy(&n->cv);
	free(n->st.buf);
	free(n->st.seqs);
	explicit_bzero(&n->key, sizeof(n->key)); /* the shared key does not outlive the handle */
	free(n);
}

static int nats_reattach(struct uf_consumer *h, char *err, size_t errlen)
{
	struct uf_nats_consumer *n = nats_of(h);

	teardown(n);
	memset(n->st.seqs, 0xff, (size_t)NC_CAPACITY * sizeof(*n->st.seqs));
	n->received = n->lost = n->laps = 0;
	n->st.forged = 0;
	memset(&n->lap, 0, sizeof(n->lap));
	return start(n, err, errlen);
}

/* ---- the application's side ---- */

static int lapped(struct uf_nats_consumer *n, uint64_t resume)
{
	n->lap.from_seq = n->pos;
	n->lap.resume_seq = resume;
	n->lap.lost = resume - n->pos;
	n->lost += n->lap.lost;
	n->laps++;
	n->pos = resume;
	return -EOVERFLOW;
}

static int nats_read(struct uf_consumer *h, struct uf_record *recs, size_t max, uint64_t *first_seq)
{
	struct uf_nats_consumer *n = nats_of(h);
	uint64_t p, cnt = 0;
	int rc;

	__atomic_add_fetch(&n->readers, 1, __ATOMIC_RELAXED);
	pthread_mutex_lock(&n->mu);
	__atomic_sub_fetch(&n->readers, 1, __ATOMIC_RELAXED);
	p = n->pos;
	if (p >= n->st.tail) {
		rc = n->st.stale    ? -ESTALE
		     : n->st.closed ? -EPIPE
		     : n->st.failed ? -EIO /* the receiver gave up (it said why on stderr) */
		                    : -EAGAIN;
		goto out;
	}
	if (n->st.tail - p > NC_CAPACITY) { /* this application fell a buffer behind */
		rc = lapped(n, uf_ring_resume_seq(n->st.tail, NC_CAPACITY));
		goto out;
	}
	for (uint32_t i = 0; i < n->st.njumps; i++) {
		if (p >= n->st.jumps[i].from && p < n->st.jumps[i].to) {
			rc = lapped(n, n->st.jumps[i].to); /* the stream never had these */
			goto out;
		}
	}
	while (cnt < max && p + cnt < n->st.tail && n->st.seqs[(p + cnt) & n->st.mask] == p + cnt) {
		recs[cnt] = n->st.buf[(p + cnt) & n->st.mask];
		cnt++;
	}
	if (cnt == 0) { /* a hole older than the jumps kept: skip to what we have */
		uint64_t q = p;
		while (q < n->st.tail && n->st.seqs[q & n->st.mask] != q)
			q++;
		rc = lapped(n, q);
		goto out;
	}
	if (first_seq)
		*first_seq = p;
	n->pos = p + cnt;
	n->received += cnt;
	rc = (int)cnt;
out:
	pthread_mutex_unlock(&n->mu);
	return rc;
}

/* Sleeps on the receiver's signal; the deadline is on CLOCK_MONOTONIC (cond_init_monotonic). */
static int nats_wait(struct uf_consumer *h, int64_t timeout_ns)
{
	struct uf_nats_consumer *n = nats_of(h);
	struct timespec ts = {0, 0};
	int rc = 0;

	if (timeout_ns >= 0) {
		uint64_t t = uf_now_mono_ns() + (uint64_t)timeout_ns;
		ts.tv_sec = (time_t)(t / 1000000000ull);
		ts.tv_nsec = (long)(t % 1000000000ull);
	}
	pthread_mutex_lock(&n->mu);
	while (n->pos >= n->st.tail && !n->st.closed && !n->st.stale && !n->st.failed) {
		int r;
		n->waiters++;
		r = timeout_ns < 0 ? pthread_cond_wait(&n->cv, &n->mu)
		                   : pthread_cond_timedwait(&n->cv, &n->mu, &ts);
		n->waiters--;
		if (r == ETIMEDOUT) {
			rc = -ETIMEDOUT;
			break;
		}
	}
	pthread_mutex_unlock(&n->mu);
	return rc;
}

static void nats_last_lap(const struct uf_consumer *h, struct uf_consumer_lap *lap)
{
	*lap = nats_of_const(h)->lap; /* written by the application's own reads only */
}

static int nats_seek(struct uf_consumer *h, uint64_t seq)
{
	struct uf_nats_consumer *n = nats_of(h);
	uint64_t oldest;
	int rc = 0;

	pthread_mutex_lock(&n->mu);
	oldest = n->st.tail > NC_CAPACITY ? n->st.tail - NC_CAPACITY : 0;
	if (oldest < n->st.base)
		oldest = n->st.base;
	if (seq > n->st.tail || seq < oldest)
		rc = -ERANGE;
	else
		n->pos = seq;
	pthread_mutex_unlock(&n->mu);
	return rc;
}

static void nats_get_info(const struct uf_consumer *h, struct uf_consumer_info *info)
{
	const struct uf_nats_consumer *n = nats_of_const(h);
	struct uf_nats_consumer *m = (struct uf_nats_consumer *)n; /* the mutex only */

	memset(info, 0, sizeof(*info));
	pthread_mutex_lock(&m->mu);
	info->generation = n->st.cm.generation;
	info->capacity = NC_CAPACITY;
	info->position = n->pos;
	info->tail = n->st.tail;
	info->received = n->received;
	info->lost = n->lost;
	info->laps = n->laps;
	info->created_ns = n->st.cm.created_ns;
	info->producer_pid = 0; /* on another host */
	info->numa_node = -1;
	info->depth = n->st.cm.depth;
	info->max_instruments = n->st.cm.max_instruments;
	info->closed = n->st.closed;
	info->producer_alive = !n->st.closed && !n->st.failed &&
	                       natsConnection_Status(n->nc) == NATS_CONN_STATUS_CONNECTED;
	info->forged = n->st.forged > UINT32_MAX ? UINT32_MAX : (uint32_t)n->st.forged;
	info->hugepages = 0;
	pthread_mutex_unlock(&m->mu);
}

static int nats_snapshot(struct uf_consumer *h, uint32_t id, struct uf_book_snapshot *snap)
{
	struct uf_nats_consumer *n = nats_of(h);
	int rc;

	pthread_mutex_lock(&n->mu);
	rc = uf_nats_books_snapshot(&n->st.books, id, n->st.cm.depth, n->st.tail, snap);
	pthread_mutex_unlock(&n->mu);
	return rc;
}

/* uf_book_each()'s read of one book; `max` can shrink meanwhile (a new generation). */
static int get_book(void *src, uint32_t id, struct uf_book_snapshot *s)
{
	struct uf_nats_consumer *n = src;
	int rc;

	pthread_mutex_lock(&n->mu);
	rc = id < n->st.books.max
	         ? uf_nats_books_snapshot(&n->st.books, id, n->st.cm.depth, n->st.tail, s)
	         : -ENOENT;
	pthread_mutex_unlock(&n->mu);
	return rc;
}

/* The books are at the receiver's position: every record < tail is in them, none above
 * (store() applies a record and moves tail under the same lock). */
static uint64_t nats_image_seq(const struct uf_consumer *h)
{
	struct uf_nats_consumer *m = (struct uf_nats_consumer *)nats_of_const(h); /* the mutex */
	uint64_t seq;

	pthread_mutex_lock(&m->mu);
	seq = m->st.tail;
	pthread_mutex_unlock(&m->mu);
	return seq;
}

static int nats_snapshot_all(struct uf_consumer *h,
                             int (*fn)(const struct uf_book_snapshot *snap, void *arg), void *arg)
{
	struct uf_nats_consumer *n = nats_of(h);
	uint32_t max;

	pthread_mutex_lock(&n->mu);
	max = n->st.books.max;
	pthread_mutex_unlock(&n->mu);
	return uf_book_each(max, get_book, n, fn, arg);
}

static int nats_lookup(struct uf_consumer *h, const char *symbol, uint32_t *id)
{
	struct uf_nats_consumer *n = nats_of(h);
	int rc;

	pthread_mutex_lock(&n->mu);
	rc = uf_nats_books_lookup(&n->st.books, symbol, id);
	pthread_mutex_unlock(&n->mu);
	return rc;
}

const struct uf_consumer_ops uf_consumer_nats_ops = {
    .name = "nats",
    .attach = nats_attach,
    .detach = nats_detach,
    .reattach = nats_reattach,
    .read = nats_read,
    .wait = nats_wait,
    .last_lap = nats_last_lap,
    .seek = nats_seek,
    .get_info = nats_get_info,
    .snapshot = nats_snapshot,
    .image_seq = nats_image_seq,
    .snapshot_all = nats_snapshot_all,
    .lookup = nats_lookup,
};
