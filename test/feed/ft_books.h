/* Books read back through libufconsumer, in the `uf-decode books` JSON-lines format (what
 * ft_reference() prints for the file), for the feed tests that compare the two
 * (test_feed_e2e.c, test_feed_snapshot.c). Its own header: ring/ufconsumer.h and publish/
 * headers both define struct uf_level, so ft_reference.c cannot include it. Include after
 * cmocka.h. */
#ifndef FT_BOOKS_H
#define FT_BOOKS_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "ring/ufconsumer.h"
#include "feed_test_util.h"

struct ft_books_ctx {
	struct ft_book *v;
	size_t n, cap;
	int stale;
};

/* uf_consumer_snapshot_all()'s callback (a book builder's books go through it too): one
 * line per book that holds a level, in x->v; counts the books flagged stale. */
static inline int ft_book_cb(const struct uf_book_snapshot *s, void *arg)
{
	struct ft_books_ctx *x = arg;
	if (s->flags & UF_RECF_STALE)
		x->stale++;
	if (s->nbid == 0 && s->nask == 0)
		return 0;
	if (x->n == x->cap) {
		x->cap = x->cap ? x->cap * 2 : 64;
		x->v = realloc(x->v, x->cap * sizeof(*x->v));
	}
	struct ft_buf line = {0};
	int64_t px[UF_BOOK_MAX_DEPTH];
	uint64_t sh[UF_BOOK_MAX_DEPTH];
	uint32_t od[UF_BOOK_MAX_DEPTH];
	ft_buf_add(&line, "{\"symbol\":\"%s\",", s->symbol[0] ? s->symbol : "?");
	for (uint32_t i = 0; i < s->nbid; i++) {
		px[i] = s->bid[i].price;
		sh[i] = s->bid[i].shares;
		od[i] = s->bid[i].orders;
	}
	ft_side(&line, "bid", px, sh, od, s->nbid);
	ft_buf_add(&line, ",");
	for (uint32_t i = 0; i < s->nask; i++) {
		px[i] = s->ask[i].price;
		sh[i] = s->ask[i].shares;
		od[i] = s->ask[i].orders;
	}
	ft_side(&line, "ask", px, sh, od, s->nask);
	ft_buf_add(&line, "}");
	snprintf(x->v[x->n].symbol, sizeof(x->v[x->n].symbol), "%s", s->symbol);
	x->v[x->n++].line = line.p;
	return 0;
}

/* Books of the image of an attached consumer, in the uf-decode books format; `stale` (when
 * not NULL) gets how many books carried the stale flag. NULL when the image read said -EBUSY
 * (the producer kept changing a book, or was descheduled in the middle of its update: a
 * loaded machine does that; a caller polling while the feed runs polls again); any other
 * error fails the test. */
static inline char *ft_consumer_books_try(uf_consumer_t *cons, int *stale)
{
	struct ft_books_ctx x = {0};
	int rc = uf_consumer_snapshot_all(cons, ft_book_cb, &x);
	if (rc == -EBUSY) {
		for (size_t i = 0; i < x.n; i++)
			free(x.v[i].line);
		free(x.v);
		return NULL;
	}
	assert_int_equal(rc, 0);
	if (stale)
		*stale = x.stale;
	char *s = ft_books_join(x.v, x.n);
	free(x.v);
	return s;
}

/* The same where the feed is stopped or settled: -EBUSY is a failure there too. */
static inline char *ft_consumer_books(uf_consumer_t *cons, int *stale)
{
	char *s = ft_consumer_books_try(cons, stale);
	if (!s)
		fail_msg("book image busy (-EBUSY) where the feed no longer writes it");
	return s;
}

/* ft_consumer_books_try for the ring `ring`'s book image (attached for the read, then
 * detached). */
static inline char *ft_ring_books_try(const char *ring, int *stale)
{
	char err[256];
	uf_consumer_t *cons;
	if (uf_consumer_attach(ring, NULL, &cons, err, sizeof(err)) < 0)
		fail_msg("attach %s: %s", ring, err);
	char *s = ft_consumer_books_try(cons, stale);
	uf_consumer_detach(cons);
	return s;
}

/* ft_consumer_books for the ring `ring`'s book image. */
static inline char *ft_ring_books(const char *ring, int *stale)
{
	char *s = ft_ring_books_try(ring, stale);
	if (!s)
		fail_msg("book image of %s busy (-EBUSY) where the feed no longer writes it", ring);
	return s;
}

/* A consumer of `ring` from its oldest record (fails the test when it cannot attach). */
static inline uf_consumer_t *ft_attach_oldest(const char *ring)
{
	char err[256];
	struct uf_consumer_options o;
	uf_consumer_t *cons;

	uf_consumer_options_init(&o);
	o.start = UF_CONSUMER_START_OLDEST;
	if (uf_consumer_attach(ring, &o, &cons, err, sizeof(err)) < 0)
		fail_msg("attach %s: %s", ring, err);
	return cons;
}

#endif /* FT_BOOKS_H */
