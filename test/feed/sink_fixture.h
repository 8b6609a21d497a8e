/* The sink tests' one fixture (test_feed_sink, test_feed_sink_levels): a publisher and the
 * engine's sink (feed/sink.h) on a private ring, ITCH messages built field by field, and one
 * publish step through both, so each test file keeps only what it checks. */
#ifndef SINK_FIXTURE_H
#define SINK_FIXTURE_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/uf_compiler.h"
#include "common/uf_symbol.h"
#include "decode/uf_decode.h"
#include "feed/sink.h"
#include "publish/uf_publish.h"
#include "ring/uf_ring.h"
#include "test/common/uf_test_rings.h"

/* The receive time every step carries unless a test gives its own. */
#define RX_NS 1700000000123456789ull

/* What a test's sink is opened with: the ring's and the publisher's sizes. */
struct sink_fx_params {
	const char *tag;        /* ring name t<pid>_<tag>_<n>: unique per test process and call */
	const char *feed;       /* the feed's name in the config */
	uint64_t ring_capacity; /* records */
	uint32_t depth;         /* image levels per side */
	uint32_t ring_instruments; /* image books */
	uint32_t pub_instruments;  /* publisher books */
	uint64_t max_orders;       /* publisher orders */
	uint32_t has_gid, gid;     /* ring.has_gid / ring.gid */
};

/* Makes the publisher and opens the sink on a fresh ring named into name (the caller's
 * config `cfg` is filled, so a test can read what the sink was opened with); fails the test
 * when either cannot be made. */
static inline void sink_fx_open(const struct sink_fx_params *sp, char *name, size_t name_len,
                                struct uf_feed_config *cfg, struct uf_publisher **pub,
                                struct uf_sink *sink)
{
	static int n;
	struct uf_publish_params pp;
	char err[256];

	snprintf(name, name_len, "t%d_%s_%d", (int)getpid(), sp->tag, n++);
	uf_test_rings_remember(name); /* removed at exit, after a failed assertion too */
	snprintf(cfg->name, sizeof(cfg->name), "%s", sp->feed);
	snprintf(cfg->ring.name, sizeof(cfg->ring.name), "%s", name);
	cfg->ring.capacity = sp->ring_capacity;
	cfg->book.depth = sp->depth;
	cfg->book.max_instruments = sp->ring_instruments;
	cfg->numa_node = -1;
	cfg->ring.has_gid = sp->has_gid;
	cfg->ring.gid = sp->gid;
	uf_publish_params_default(&pp);
	pp.max_instruments = sp->pub_instruments;
	pp.max_orders = sp->max_orders;
	pp.numa_node = -1;
	assert_int_equal(uf_publish_create(&pp, pub), 0);
	if (uf_sink_open(sink, cfg, *pub, err, sizeof(err)) < 0)
		fail_msg("uf_sink_open: %s", err);
}

/* Applies the messages as one publish step (sequences from *seq on, receive time rx) into
 * recs[0..cap) and hands the step's records to the sink; returns the sink's result, the
 * record count in *n. */
static inline int sink_fx_step(struct uf_publisher *pub, struct uf_sink *sink, uint64_t *seq,
                               const struct uf_itch_msg *m, size_t nm, uint64_t rx,
                               struct uf_record *recs, size_t cap, size_t *n)
{
	size_t k = 0;
	for (size_t i = 0; i < nm; i++) {
		int r = uf_publish_apply(pub, &m[i], (*seq)++, rx, recs + k, cap - k);
		assert_true(r >= 0);
		k += (size_t)r;
	}
	*n = k;
	return uf_sink_records(sink, recs, k, rx);
}

/* ---- ITCH 5.0 messages with only the fields the books read ---- */

static inline struct uf_itch_msg msg(uint8_t type, uint16_t loc)
{
	struct uf_itch_msg m;
	memset(&m, 0, sizeof(m));
	m.type = type;
	m.locate = loc;
	m.timestamp = 1000;
	m.len = (uint16_t)uf_itch_msg_len(type);
	return m;
}

static inline struct uf_itch_msg dir(uint16_t loc, const char *sym)
{
	struct uf_itch_msg m = msg('R', loc);
	uf_symbol_pad(m.u.dir.stock, sym);
	m.u.dir.market_category = 'Q';
	m.u.dir.financial_status = 'N';
	m.u.dir.round_lot_size = 100;
	return m;
}

static inline struct uf_itch_msg add(uint16_t loc, uint64_t ref, uint8_t side, uint32_t shares,
                                     uint32_t price)
{
	struct uf_itch_msg m = msg('A', loc);
	m.u.add.order_ref = ref;
	m.u.add.side = side;
	m.u.add.shares = shares;
	m.u.add.price = price;
	uf_symbol_pad(m.u.add.stock, "X");
	return m;
}

static inline struct uf_itch_msg del(uint16_t loc, uint64_t ref)
{
	struct uf_itch_msg m = msg('D', loc);
	m.u.del.order_ref = ref;
	return m;
}

static inline struct uf_itch_msg cancel(uint16_t loc, uint64_t ref, uint32_t shares)
{
	struct uf_itch_msg m = msg('X', loc);
	m.u.cancel.order_ref = ref;
	m.u.cancel.shares = shares;
	return m;
}

/* An execution whose match number is derived from the order (ref * 7). */
static inline struct uf_itch_msg exec_(uint16_t loc, uint64_t ref, uint32_t shares)
{
	struct uf_itch_msg m = msg('E', loc);
	m.u.exec.order_ref = ref;
	m.u.exec.shares = shares;
	m.u.exec.match = ref * 7;
	return m;
}

static inline struct uf_itch_msg replace(uint16_t loc, uint64_t old, uint64_t nref, uint32_t shares,
                                         uint32_t price)
{
	struct uf_itch_msg m = msg('U', loc);
	m.u.replace.orig_ref = old;
	m.u.replace.new_ref = nref;
	m.u.replace.shares = shares;
	m.u.replace.price = price;
	return m;
}

/* A non-cross trade (match 99, buy side). */
static inline struct uf_itch_msg trade(uint16_t loc, uint32_t shares, uint32_t price)
{
	struct uf_itch_msg m = msg('P', loc);
	m.u.trade.side = 'B';
	m.u.trade.shares = shares;
	m.u.trade.price = price;
	m.u.trade.match = 99;
	uf_symbol_pad(m.u.trade.stock, "X");
	return m;
}

static inline struct uf_itch_msg halt(uint16_t loc, uint8_t state)
{
	struct uf_itch_msg m = msg('H', loc);
	uf_symbol_pad(m.u.trading_action.stock, "X");
	m.u.trading_action.trading_state = state;
	return m;
}

#endif /* SINK_FIXTURE_H */
