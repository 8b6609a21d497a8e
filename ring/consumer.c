/* libufconsumer's public API: argument checks, the choice of back end at attach, dispatch.
 * A handle starts with its back end's operations table (ring/consumer_backend.h); the back
 * ends themselves are ring/consumer_local.c (a ring in shared memory on this host) and
 * ring/nats/consumer_nats.c (the ring as uf-bridge republishes it, "nats://..."). A rule of
 * what a call means lives in ufconsumer.h and in each back end, never here. */
#include "ring/ufconsumer.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/uf_compiler.h"
#include "common/uf_err.h"
#include "ring/consumer_backend.h"
#include "ring/consumer_local.h"
#include "ring/ring_util.h"

_Static_assert(offsetof(struct uf_consumer_options, tag) == 16,
               "owner took the padding after start: the options keep their size and layout");

UF_RING_VISIBLE void uf_consumer_options_init(struct uf_consumer_options *opt)
{
	if (!opt)
		return;
	memset(opt, 0, sizeof(*opt));
	opt->spin_ns = 20000;
	opt->start = UF_CONSUMER_START_LATEST;
}

/* The back end a name selects: "nats://..." the NATS one (NULL when not built in), anything
 * else the local ring (which checks the name). */
static const struct uf_consumer_ops *backend_of(const char *name)
{
	if (strncmp(name, UF_CONSUMER_NATS_PREFIX, strlen(UF_CONSUMER_NATS_PREFIX)) == 0)
		return UF_CONSUMER_NATS_OPS;
	return &uf_consumer_local_ops;
}

UF_RING_VISIBLE int uf_consumer_attach(const char *name, const struct uf_consumer_options *opt,
                                       uf_consumer_t **out, char *err, size_t errlen)
{
	const struct uf_consumer_ops *ops;
	struct uf_consumer_options defaults;

	if (!name || !out) {
		uf_err_set(err, errlen, "uf_consumer_attach: %s is NULL", name ? "out" : "name");
		return -EINVAL;
	}
	ops = backend_of(name);
	if (!ops) {
		uf_err_set(err, errlen,
		           "%s: this libufconsumer was built without NATS (UF_NATS=OFF)", name);
		return -EPROTONOSUPPORT;
	}
	if (!opt) {
		uf_consumer_options_init(&defaults);
		opt = &defaults;
	}
	return ops->attach(name, opt, out, err, errlen);
}

UF_RING_VISIBLE void uf_consumer_detach(uf_consumer_t *c)
{
	if (c)
		c->ops->detach(c);
}

UF_RING_VISIBLE int uf_consumer_reattach(uf_consumer_t *c, char *err, size_t errlen)
{
	if (!c) {
		uf_err_set(err, errlen, "uf_consumer_reattach: no handle");
		return -EINVAL;
	}
	return c->ops->reattach(c, err, errlen);
}

/* The hot path, one call per record for uf_consumer_next: the local ring's read is inlined
 * here (consumer_local.h) behind one compare of the ops pointer, so it costs what it did
 * before back ends existed; only other back ends pay an indirect call. `c` and `recs` are
 * not checked (documented in ufconsumer.h). */
UF_RING_VISIBLE int uf_consumer_read(uf_consumer_t *c, struct uf_record *recs, size_t max,
                                     uint64_t *first_seq)
{
	if (UF_LIKELY(c->ops == &uf_consumer_local_ops))
		return uf_consumer_local_read(c, recs, max, first_seq);
	return c->ops->read(c, recs, max, first_seq);
}

UF_RING_VISIBLE int uf_consumer_next(uf_consumer_t *c, struct uf_record *rec, uint64_t *seq)
{
	int rc;

	if (UF_LIKELY(c->ops == &uf_consumer_local_ops))
		rc = uf_consumer_local_read(c, rec, 1, seq);
	else
		rc = c->ops->read(c, rec, 1, seq);
	return rc > 0 ? 0 : rc;
}

UF_RING_VISIBLE int uf_consumer_wait(uf_consumer_t *c, int64_t timeout_ns)
{
	if (!c)
		return -EINVAL;
	return c->ops->wait(c, timeout_ns);
}

UF_RING_VISIBLE void uf_consumer_last_lap(const uf_consumer_t *c, struct uf_consumer_lap *lap)
{
	if (!lap)
		return;
	if (!c) {
		memset(lap, 0, sizeof(*lap));
		return;
	}
	c->ops->last_lap(c, lap);
}

UF_RING_VISIBLE int uf_consumer_seek(uf_consumer_t *c, uint64_t seq)
{
	if (!c)
		return -EINVAL;
	return c->ops->seek(c, seq);
}

UF_RING_VISIBLE void uf_consumer_get_info(const uf_consumer_t *c, struct uf_consumer_info *info)
{
	if (!info)
		return;
	if (!c) {
		memset(info, 0, sizeof(*info));
		return;
	}
	c->ops->get_info(c, info);
}

UF_RING_VISIBLE int uf_consumer_snapshot(uf_consumer_t *c, uint32_t id,
                                         struct uf_book_snapshot *snap)
{
	if (!c || !snap)
		return -EINVAL;
	return c->ops->snapshot(c, id, snap);
}

UF_RING_VISIBLE uint64_t uf_consumer_image_seq(const uf_consumer_t *c)
{
	return c ? c->ops->image_seq(c) : 0;
}

UF_RING_VISIBLE int uf_consumer_snapshot_all(uf_consumer_t *c,
                                             int (*fn)(const struct uf_book_snapshot *, void *),
                                             void *arg)
{
	if (!c || !fn)
		return -EINVAL;
	return c->ops->snapshot_all(c, fn, arg);
}

UF_RING_VISIBLE int uf_consumer_lookup(uf_consumer_t *c, const char *symbol, uint32_t *id)
{
	if (!c || !id)
		return -EINVAL;
	return c->ops->lookup(c, symbol, id);
}

UF_RING_VISIBLE const char *uf_consumer_strerror(int rc)
{
	switch (rc) {
	case 0:
		return "ok";
	case -EAGAIN:
		return "no new record";
	case -EOVERFLOW:
		return "lapped: records were lost";
	case -EPIPE:
		return "ring closed by the producer";
	case -ESTALE:
		return "producer restarted: re-attach";
	case -ETIMEDOUT:
		return "timed out";
	case -EPROTO:
		return "incompatible ring layout";
	case -EUSERS:
		return "consumer table full";
	case -ERANGE:
		return "out of range";
	case -EBUSY:
		return "entry kept changing";
	case -ENOENT:
		return "not found";
	case -ENOTSUP:
		return "not supported by this back end";
	case -ENODATA:
		return "before the journal's start (or no journal)";
	default:
		return strerror(-rc);
	}
}
