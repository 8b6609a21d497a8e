/* sdk-producer: a scripted producer for the consumer SDK tests (examples, Python package).
 *
 *   sdk-producer --ring NAME [--depth N] [--wait-consumers N]
 *
 * Creates ring NAME (book image `depth` levels per side, default 4), publishes phase 1 of the
 * script below with the producer API and keeps the image as the feed does (each touched
 * book with depth + 1 levels, so a deeper side is flagged truncated), prints "ready" on
 * stdout, waits (at most 20 s) until N consumers are attached and have read everything
 * published (so phase 2 reaches them live, not through the image), publishes phase 2, prints
 * "live", then waits for stdin to close (at most 60 s), closes and removes the ring.
 *
 * Script (instrument ids 1 AAPL, 2 MSFT, 3 DEEP; prices with 4 decimals):
 *   phase 1  directory of the three; AAPL bid 150.0000x100/1, 149.9900x200/2, ask
 *            150.0100x300/3; MSFT bid 410.0000x50/1, ask 410.0500x70/1; DEEP 10 bids
 *            10.0000 down by 0.01 (shares 10, 20, ...), 10 asks 10.1000 up by 0.01; a
 *            trade of AAPL 25 at 150.0100
 *   phase 2  AAPL bid 150.0000 removed, AAPL bid 150.0050x400/4 added, MSFT ask 410.0500
 *            now 20/1, DEEP bid 10.0000 removed, then a snapshot bracket of MSFT
 * Final books: AAPL bid [150.0050x400/4, 149.9900x200/2] ask [150.0100x300/3]; MSFT bid
 * [410.0000x50/1] ask [410.0500x20/1]; DEEP 9 bids (9.9900 ...), 10 asks.
 * Exit 0, or 1 with a message on stderr. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/uf_time.h"
#include "ring/uf_ring.h"
#include "ring/ufbook.h"

#define MAX_INST 16

struct prod {
	struct uf_ring *r;     /* the ring */
	uf_book_builder_t *bb; /* the producer's own books (what the image shows) */
	uint32_t depth;        /* image depth */
	uint64_t feed_seq;     /* message number */
};

static struct uf_record rec(uint8_t kind, uint32_t inst, uint8_t side, int64_t price,
                            uint64_t shares, uint32_t orders)
{
	struct uf_record r;

	memset(&r, 0, sizeof(r));
	r.kind = kind;
	r.instrument = inst;
	r.side = side;
	r.price = price;
	r.shares = shares;
	r.orders = orders;
	return r;
}

static struct uf_record instrument(uint32_t id, const char *sym)
{
	struct uf_record r = rec(UF_REC_INSTRUMENT, id, 0, 0, 100, 'Q');
	char b[8];

	memset(b, ' ', sizeof(b));
	memcpy(b, sym, strlen(sym));
	memcpy(&r.ref, b, sizeof(b));
	return r;
}

/* Publishes one message's records and updates the image for them, as the feed does. */
static void message(struct prod *p, struct uf_record *recs, size_t n)
{
	struct uf_level bids[UF_RING_MAX_DEPTH + 1], asks[UF_RING_MAX_DEPTH + 1];
	uint64_t seq;

	p->feed_seq++;
	for (size_t i = 0; i < n; i++) {
		recs[i].feed_seq = p->feed_seq;
		recs[i].exch_ts = p->feed_seq * 1000;
		if (i + 1 == n)
			recs[i].flags |= UF_RECF_LAST;
	}
	seq = uf_ring_tail(p->r) + n;
	for (size_t i = 0; i < n; i++) { /* UF_RECF_BBO: the best level of the side changed */
		struct uf_level before = {0}, after = {0};
		int sidx = recs[i].side == UF_SIDE_ASK ? 1 : 0;
		uf_book_builder_top(p->bb, recs[i].instrument, sidx ? NULL : &before,
		                    sidx ? &before : NULL);
		uf_book_builder_apply(p->bb, &recs[i], seq - n + i);
		uf_book_builder_top(p->bb, recs[i].instrument, sidx ? NULL : &after,
		                    sidx ? &after : NULL);
		if (recs[i].kind == UF_REC_LEVEL && memcmp(&before, &after, sizeof(before)) != 0)
			recs[i].flags |= UF_RECF_BBO;
	}
	if (uf_ring_publish(p->r, recs, n) != 0) {
		fprintf(stderr, "sdk-producer: publish failed\n");
		exit(1);
	}
	for (size_t i = 0; i < n; i++) {
		const struct uf_record *r = &recs[i];
		int nb, na;

		switch (r->kind) {
		case UF_REC_INSTRUMENT:
			uf_ring_image_set_symbol(p->r, r->instrument, r->ref, (uint32_t)r->shares,
			                         r->aux, seq);
			break;
		case UF_REC_TRADE:
			uf_ring_image_add_trade(p->r, r->instrument, r->price, r->shares,
			                        r->exch_ts, r->rx_ts, seq);
			break;
		case UF_REC_LEVEL:
			nb = uf_book_builder_levels(p->bb, r->instrument, UF_SIDE_BID, bids,
			                            p->depth + 1);
			na = uf_book_builder_levels(p->bb, r->instrument, UF_SIDE_ASK, asks,
			                            p->depth + 1);
			uf_ring_image_set_book(p->r, r->instrument, bids, (uint32_t)nb, asks,
			                       (uint32_t)na, seq, 0);
			break;
		default:
			break;
		}
	}
}

static void one(struct prod *p, struct uf_record r)
{
	message(p, &r, 1);
}

static void level(struct prod *p, uint32_t id, uint8_t side, int64_t px, uint64_t sh, uint32_t o)
{
	one(p, rec(UF_REC_LEVEL, id, side, px, sh, o));
}

static void phase1(struct prod *p)
{
	struct uf_record r[2];

	one(p, instrument(1, "AAPL"));
	one(p, instrument(2, "MSFT"));
	one(p, instrument(3, "DEEP"));
	level(p, 1, UF_SIDE_BID, 1500000, 100, 1);
	level(p, 1, UF_SIDE_BID, 1499900, 200, 2);
	level(p, 1, UF_SIDE_ASK, 1500100, 300, 3);
	r[0] = rec(UF_REC_LEVEL, 2, UF_SIDE_BID, 4100000, 50, 1);
	r[1] = rec(UF_REC_LEVEL, 2, UF_SIDE_ASK, 4100500, 70, 1);
	message(p, r, 2);
	for (int i = 0; i < 10; i++) {
		level(p, 3, UF_SIDE_BID, 100000 - i * 100, 10u * (unsigned)(i + 1), 1);
		level(p, 3, UF_SIDE_ASK, 101000 + i * 100, 10u * (unsigned)(i + 1), 1);
	}
	one(p, rec(UF_REC_TRADE, 1, UF_SIDE_ASK, 1500100, 25, UF_TRADE_EXEC));
}

static void phase2(struct prod *p)
{
	struct uf_record r[4];

	level(p, 1, UF_SIDE_BID, 1500000, 0, 0);
	level(p, 1, UF_SIDE_BID, 1500050, 400, 4);
	level(p, 2, UF_SIDE_ASK, 4100500, 20, 1);
	level(p, 3, UF_SIDE_BID, 100000, 0, 0);
	r[0] = rec(UF_REC_SNAPSHOT_BEGIN, 2, 0, 0, 2, 0);
	r[1] = rec(UF_REC_LEVEL, 2, UF_SIDE_BID, 4100000, 50, 1);
	r[2] = rec(UF_REC_LEVEL, 2, UF_SIDE_ASK, 4100500, 20, 1);
	r[3] = rec(UF_REC_SNAPSHOT_END, 2, 0, 0, 2, 0);
	for (int i = 1; i < 3; i++)
		r[i].flags = UF_RECF_SNAPSHOT;
	message(p, r, 4);
}

/* Consumers attached that have read everything published: phase 2 is then live for them
 * (not in the image they copied). A consumer that attaches at the latest record counts at
 * once, before its handover: the examples attach at the oldest so only the handover (or
 * reading) brings them to the tail. */
static int caught_up(struct uf_ring *r)
{
	struct uf_ring_consumer_info ci[8];
	int n = uf_ring_consumers(r, ci, 8), k = 0;

	for (int i = 0; i < n && i < 8; i++)
		k += ci[i].position == uf_ring_tail(r);
	return k;
}

int main(int argc, char **argv)
{
	struct uf_ring_options o;
	struct prod p = {0};
	const char *name = NULL;
	char err[256], buf[64];
	int want = 0;
	uint64_t end;

	p.depth = 4;
	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--ring"))
			name = argv[i + 1];
		else if (!strcmp(argv[i], "--depth"))
			p.depth = (uint32_t)atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--wait-consumers"))
			want = atoi(argv[i + 1]);
	}
	if (!name || p.depth < 1 || p.depth > UF_RING_MAX_DEPTH) {
		fprintf(stderr,
		        "usage: sdk-producer --ring NAME [--depth N] [--wait-consumers N]\n");
		return 2;
	}
	uf_ring_options_init(&o);
	o.capacity = 1024;
	o.depth = p.depth;
	o.max_instruments = MAX_INST;
	o.max_consumers = 8;
	o.numa_node = UF_RING_NUMA_NONE;
	if (uf_ring_create(name, &o, &p.r, err, sizeof(err)) != 0) {
		fprintf(stderr, "sdk-producer: %s\n", err);
		return 1;
	}
	if (uf_book_builder_create(MAX_INST, &p.bb) != 0)
		return 1;
	phase1(&p);
	uf_ring_image_commit(p.r);
	printf("ready\n");
	fflush(stdout);
	end = uf_now_mono_ns() + 20000000000ull;
	while (caught_up(p.r) < want && uf_now_mono_ns() < end)
		usleep(2000); /* polls the table: consumers attach from other processes */
	if (caught_up(p.r) < want)
		fprintf(stderr, "sdk-producer: only %d of %d consumers attached and caught up\n",
		        caught_up(p.r), want);
	phase2(&p);
	uf_ring_image_commit(p.r);
	printf("live\n");
	fflush(stdout);
	{
		struct pollfd pf = {.fd = 0, .events = POLLIN};
		/* stdin closing (EOF) or 60 s: the test is done with the ring */
		while (poll(&pf, 1, 60000) == 1 && read(0, buf, sizeof(buf)) > 0)
			;
	}
	uf_ring_close(p.r);
	uf_ring_unlink(name, NULL);
	uf_book_builder_destroy(p.bb);
	return 0;
}
