/* The End of Snapshot claim against the orders of the live messages buffered meanwhile:
 * the contradictions that refuse a load (uf_snap_check_orders) and the bracket of messages
 * whose effect the snapshot's orders cannot place on either side of N, whose books are then
 * flagged (uf_snap_bracket). Cold: once per End of Snapshot. See snapshot.h, docs/snapshot.md
 * "Trust". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "feed/feed_log.h"
#include "feed/snapshot.h"

/* The walk over the live messages buffered while the snapshot loaded, in sequence order and
 * each sequence once (the B copy of what A delivered, a packet overlapping one walked, are
 * skipped): what both checks below read, so they judge the same messages. Cold. */
struct uf_snap_msgs {
	const struct uf_proto *pr;   /* the venue's framing opens the packets */
	const struct uf_snap_buf *b; /* the buffer, b->order sorted by uf_snap_msgs_init */
	uint32_t i;                  /* next packet, in b->order */
	int open;                    /* f and it hold the packet being walked */
	struct uf_frame f;           /* that packet */
	struct uf_frame_iter it;     /* its messages */
	uint64_t next;               /* sequence after the last message handed out (0: none) */
};

static void uf_snap_msgs_init(struct uf_snap_msgs *w, struct uf_snapshot *s)
{
	memset(w, 0, sizeof(*w));
	w->pr = s->proto;
	w->b = &s->buf;
	uf_snap_buf_sort(&s->buf);
}

/* The next message not walked yet into *m, and into *prev the sequence the walk expected
 * before it (0 for the first message; m->seq > *prev: a hole). 1, or 0 at the end. */
static int uf_snap_msgs_next(struct uf_snap_msgs *w, struct uf_frame_msg *m, uint64_t *prev)
{
	for (;;) {
		while (!w->open) {
			if (w->i >= w->b->n)
				return 0;
			const struct uf_snap_pkt *p = &w->b->pkts[w->b->order[w->i++]];
			if (w->pr->framing->open(&w->f, p->data, p->len) != UF_FRAME_DATA)
				continue;
			w->pr->framing->iter_init(&w->it, &w->f);
			w->open = 1;
		}
		if (!w->pr->framing->iter_next(&w->it, m)) {
			w->open = 0;
			continue;
		}
		if (w->next && m->seq < w->next)
			continue; /* a copy of what the walk saw */
		*prev = w->next;
		w->next = m->seq + 1;
		return 1;
	}
}

struct uf_snap_ref {
	uint64_t ref; /* order reference */
	uint64_t seq; /* the live message that named it */
};

static int uf_snap_ref_find(const struct uf_snap_ref *v, uint32_t n, uint64_t ref)
{
	for (uint32_t i = 0; i < n; i++)
		if (v[i].ref == ref)
			return 1;
	return 0;
}

static int uf_snap_ref_drop(struct uf_snap_ref *v, uint32_t *n, uint64_t ref)
{
	for (uint32_t i = 0; i < *n; i++)
		if (v[i].ref == ref) {
			v[i] = v[--*n];
			return 1;
		}
	return 0;
}

/* What the walk of uf_snap_check_orders keeps. */
struct uf_snap_walk {
	struct uf_snap_ref pend[UF_SNAP_CHECK_REFS];  /* added before N, nothing named since */
	struct uf_snap_ref added[UF_SNAP_CHECK_REFS]; /* added from N on (live only) */
	uint32_t np, na;                              /* entries in each */
	int after_ok; /* the walk from N on has no hole and follows every order added */
};

/* One order named by live message `seq`: NULL when consistent with the snapshot, else the
 * contradiction (a format taking the order reference). */
static const char *uf_snap_judge(struct uf_snapshot *s, struct uf_snap_walk *w, uint64_t seq,
                                 uint64_t n, uint64_t ref, uint8_t op)
{
	int held = s->proto->order_held(s->step, ref) != 0;
	if (seq < n) { /* the snapshot holds its effect */
		uf_snap_ref_drop(w->pend, &w->np, ref);
		if (op == UF_PROTO_REF_REMOVE && held)
			return "ends order %llu, which the snapshot holds";
		if (op == UF_PROTO_REF_ADD && w->np < UF_SNAP_CHECK_REFS)
			w->pend[w->np++] = (struct uf_snap_ref){ref, seq};
		return NULL;
	}
	if (!w->after_ok) /* from N on: the snapshot does not hold its effect */
		return NULL;
	if (op == UF_PROTO_REF_ADD) {
		if (held)
			return "adds order %llu, which the snapshot holds already";
		if (w->na < UF_SNAP_CHECK_REFS)
			w->added[w->na++] = (struct uf_snap_ref){ref, seq};
		else
			w->after_ok = 0; /* no room: a later change of it would look wrong */
		return NULL;
	}
	if (!held && !uf_snap_ref_find(w->added, w->na, ref))
		return "changes order %llu, which the snapshot does not hold";
	if (op == UF_PROTO_REF_REMOVE)
		uf_snap_ref_drop(w->added, &w->na, ref);
	return NULL;
}

/* The orders of the snapshot just loaded against the live messages buffered meanwhile,
 * walked in sequence order. Before N (the snapshot says it holds their effect): an order a
 * message ended must be absent, an order a message added (and nothing later before N named)
 * present when the walk reached N. From N on (not in the snapshot): an added order must be absent,
 * a changed or ended one present (or added since N). Only what the walk saw without a hole counts
 * (a hole may hold what explains anything), and from N on it stops judging once UF_SNAP_CHECK_REFS
 * orders were added. An honest snapshot passes whatever the lines did; an End of Snapshot off by a
 * few messages fails when one of them adds, deletes or replaces an order (a partial execution or
 * cancel cannot be told here: uf_snap_bracket flags its book). Returns 0, or -1 with what[] naming
 * the message and the order. Cold: once per End of Snapshot, O(buffer x refs). */
int uf_snap_check_orders(struct uf_snapshot *s, uint64_t n, char *what, size_t wlen)
{
	const struct uf_proto *pr = s->proto;
	struct uf_snap_buf *b = &s->buf;
	struct uf_snap_walk *w;
	int rc = 0;
	if (!pr->order_refs || !pr->order_held || b->n == 0)
		return 0;
	w = calloc(1, sizeof(*w));
	if (!w)
		return 0; /* unchecked, as without the hooks */
	w->after_ok = 1;
	struct uf_snap_msgs walk;
	struct uf_frame_msg m;
	uint64_t prev;
	uf_snap_msgs_init(&walk, s);
	while (rc == 0 && uf_snap_msgs_next(&walk, &m, &prev)) {
		uint64_t from = prev ? prev : m.seq;
		if (m.seq > from && from < n)
			w->np = 0; /* a hole before N: the adds before it are unknowable */
		if ((m.seq > from || !prev) && m.seq > n)
			w->after_ok = 0; /* a hole at or after N */
		struct uf_proto_ref r[2];
		uint32_t inst = 0;
		int k = pr->order_refs(m.msg, m.len, r, &inst);
		for (int j = 0; j < k && j < 2 && rc == 0; j++) {
			const char *bad = uf_snap_judge(s, w, m.seq, n, r[j].ref, r[j].op);
			if (bad) {
				int o = snprintf(what, wlen,
				                 "live message %llu (End of Snapshot %llu) ",
				                 (unsigned long long)m.seq, (unsigned long long)n);
				if (o > 0 && (size_t)o < wlen)
					snprintf(what + o, wlen - (size_t)o, bad,
					         (unsigned long long)r[j].ref);
				rc = -1;
			}
		}
	}
	if (walk.next < n)
		w->np = 0; /* the walk stops short of N: what it did not see may end them */
	for (uint32_t i = 0; i < w->np && rc == 0; i++)
		if (!pr->order_held(s->step, w->pend[i].ref)) {
			snprintf(
			    what, wlen,
			    "live message %llu (End of Snapshot %llu) adds order %llu, which the "
			    "snapshot does not hold",
			    (unsigned long long)w->pend[i].seq, (unsigned long long)n,
			    (unsigned long long)w->pend[i].ref);
			rc = -1;
		}
	free(w);
	return rc;
}

/* ---- the bracket: where N may lie, by what the snapshot's orders say ---- */

/* One order a message of the run names (uf_snap_bracket). */
struct uf_snap_ev {
	uint64_t seq;    /* the live message */
	uint64_t ref;    /* the order */
	uint32_t shares; /* struct uf_proto_ref shares */
	uint32_t inst;   /* the message's book */
	uint8_t op;      /* enum uf_proto_ref_op */
	int8_t in;       /* +1: the snapshot holds its effect (seq < N); -1: it does not
	                  * (seq >= N); 0: the orders cannot tell */
};

/* What an order the snapshot lacks says when the run saw it added and then maybe ended
 * (uf_snap_place): N is at or before its add, or after the message that could end it. */
struct uf_snap_either {
	uint64_t a, e; /* N <= a or N > e */
};

static int uf_snap_ev_cmp(const void *x, const void *y)
{
	const struct uf_snap_ev *a = x, *b = y;
	if (a->ref != b->ref)
		return a->ref < b->ref ? -1 : 1;
	if (a->seq != b->seq)
		return a->seq < b->seq ? -1 : 1;
	return a->op < b->op ? -1 : a->op > b->op; /* U: the old side's REMOVE, then the ADD */
}

static int uf_snap_u32_cmp(const void *x, const void *y)
{
	uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
	return a < b ? -1 : a > b;
}

/* The messages of one order e[0..k) (in sequence order), placed against N by the shares the
 * snapshot holds of it (h, 0: not held):
 *   - added in the run, held: the add is before N; with every change's shares known, the
 *     shares after each message fall strictly, so exactly one prefix leaves h (before N) and
 *     the rest is from N on; none leaves h: a contradiction (-1). A message ending it is from
 *     N on;
 *   - added in the run, not held, nothing in the run could have ended it (shares known): the
 *     add is from N on, so is all that follows; else N is at or before the add, or after the
 *     first message that could have ended it: that "either" is left in *da, *de (N <= *da
 *     or N > *de) for uf_snap_bracket to settle with what the other orders say;
 *   - added before the run, not held: it ended before N, after everything the run shows of
 *     it (no message names an ended order): all before N;
 *   - added before the run, held: it lives at N, so a message ending it is from N on, and a
 *     change is before N when the changes after it take more shares than the snapshot
 *     holds. The rest (partial executions, cancels of an order the run did not see added)
 *     cannot be placed. */
static int uf_snap_place(struct uf_snap_ev *e, uint32_t k, uint32_t h, uint64_t *da, uint64_t *de)
{
	*da = *de = 0;
	if (e[0].op == UF_PROTO_REF_ADD) {
		uint64_t left = e[0].shares;
		uint32_t end = k; /* the message that ended it, k: none */
		int known = 1;
		for (uint32_t i = 1; i < k && end == k; i++) {
			if (e[i].op == UF_PROTO_REF_REMOVE || e[i].op == UF_PROTO_REF_ADD) {
				end = i;
			} else if (e[i].shares == 0) {
				known = 0;
				break;
			} else {
				left = e[i].shares >= left ? 0 : left - e[i].shares;
				if (left == 0)
					end = i;
			}
		}
		if (h) {
			e[0].in = 1;
			if (!known) {
				for (uint32_t i = 1; i < k; i++)
					if (e[i].op == UF_PROTO_REF_REMOVE)
						e[i].in = -1;
				return 0;
			}
			left = e[0].shares;
			uint32_t at = left == h ? 0 : k; /* the last message before N */
			for (uint32_t i = 1; i < k && i < end && at == k; i++) {
				left -= e[i].shares; /* < left: end says so */
				if (left == h)
					at = i;
			}
			if (at == k)
				return -1;
			for (uint32_t i = 0; i < k; i++)
				e[i].in = i <= at ? 1 : -1;
			return 0;
		}
		uint32_t x = k; /* the first message that could have ended it */
		left = e[0].shares;
		for (uint32_t i = 1; i < k && x == k; i++) {
			if (e[i].op != UF_PROTO_REF_TOUCH || e[i].shares == 0 ||
			    e[i].shares >= left)
				x = i;
			else
				left -= e[i].shares;
		}
		if (x == k) {
			for (uint32_t i = 0; i < k; i++)
				e[i].in = -1;
		} else {
			*da = e[0].seq;
			*de = e[x].seq;
		}
		return 0;
	}
	if (!h) {
		for (uint32_t i = 0; i < k; i++)
			e[i].in = 1;
		return 0;
	}
	uint64_t after = 0; /* shares the later changes take */
	int before = 0;
	for (uint32_t i = k; i-- > 0;) {
		if (e[i].op == UF_PROTO_REF_REMOVE) {
			e[i].in = -1;
			after = 0;
			continue;
		}
		if (before || after + e[i].shares > h) {
			before = 1;
			e[i].in = 1;
		}
		after += e[i].shares;
	}
	return 0;
}

/* See snapshot.h. */
int uf_snap_bracket(struct uf_snapshot *s, uint64_t n, char *what, size_t wlen)
{
	const struct uf_proto *pr = s->proto;
	struct uf_snap_buf *b = &s->buf;
	struct uf_snap_ev *ev = NULL;
	uint32_t nev = 0, cap = 0;
	uint64_t next = 0, rs = 0;
	int rc = 0;
	s->nunc = 0;
	s->unc_all = 0;
	if (!pr->order_refs || !pr->order_held || b->n == 0)
		return 0;
	struct uf_snap_msgs walk;
	struct uf_frame_msg m;
	uint64_t prev;
	uf_snap_msgs_init(&walk, s);
	while (uf_snap_msgs_next(&walk, &m, &prev)) {
		if (!prev) {
			rs = m.seq;
		} else if (m.seq > prev) { /* a hole [prev, m.seq) */
			if (prev >= n || m.seq > n)
				break; /* the run holding N ended (or N is in the hole) */
			nev = 0;       /* before N: the run starts again after it */
			rs = m.seq;
		}
		next = m.seq + 1;
		struct uf_proto_ref r[2];
		uint32_t inst = 0;
		int k = pr->order_refs(m.msg, m.len, r, &inst);
		for (int j = 0; j < k && j < 2; j++) {
			if (nev == cap) {
				uint32_t nc = cap ? cap * 2 : 4096;
				struct uf_snap_ev *x = realloc(ev, nc * sizeof(*ev));
				if (!x) {
					free(ev);
					return 0; /* unchecked, as without the hooks */
				}
				ev = x;
				cap = nc;
			}
			ev[nev++] =
			    (struct uf_snap_ev){m.seq, r[j].ref, r[j].shares, inst, r[j].op, 0};
		}
	}
	if (next == 0 || rs > n || next < n || nev == 0) {
		free(ev); /* the lines did not show the messages around N: nothing to place */
		return 0;
	}
	qsort(ev, nev, sizeof(*ev), uf_snap_ev_cmp);
	uint64_t lo = rs, hi = next; /* N lies in [lo, hi] */
	struct uf_snap_either *dj = malloc(nev * sizeof(*dj));
	uint32_t ndj = 0;
	for (uint32_t i = 0, j; i < nev && rc == 0; i = j) {
		for (j = i + 1; j < nev && ev[j].ref == ev[i].ref; j++)
			;
		uint32_t h = pr->order_held(s->step, ev[i].ref);
		uint64_t da, de;
		if (uf_snap_place(ev + i, j - i, h, &da, &de) < 0) {
			snprintf(
			    what, wlen,
			    "the snapshot holds %u shares of order %llu (End of Snapshot %llu), "
			    "which no point of the live messages %llu.. leaves",
			    h, (unsigned long long)ev[i].ref, (unsigned long long)n,
			    (unsigned long long)ev[i].seq);
			rc = -1;
		}
		if (de && dj)
			dj[ndj++] = (struct uf_snap_either){da, de};
		for (uint32_t x = i; x < j; x++) {
			if (ev[x].in > 0 && ev[x].seq + 1 > lo)
				lo = ev[x].seq + 1;
			if (ev[x].in < 0 && ev[x].seq < hi)
				hi = ev[x].seq;
		}
	}
	/* The "either"s narrow the bracket as it narrows (an order added at 5001 and deleted at
	 * 5004 the snapshot lacks, with N <= 5003 known: N <= 5001), until nothing changes
	 * (bounded: stopping early only leaves the bracket wider). */
	for (int round = 0, moved = 1; moved && round < 64 && lo <= hi; round++) {
		moved = 0;
		for (uint32_t d = 0; d < ndj; d++) {
			if (lo > dj[d].a && dj[d].e + 1 > lo) {
				lo = dj[d].e + 1;
				moved = 1;
			}
			if (hi <= dj[d].e && dj[d].a < hi) {
				hi = dj[d].a;
				moved = 1;
			}
		}
	}
	free(dj);
	if (rc == 0 && (n < lo || n > hi)) {
		snprintf(
		    what, wlen,
		    "the snapshot's orders place End of Snapshot between %llu and %llu, it says "
		    "%llu",
		    (unsigned long long)lo, (unsigned long long)hi, (unsigned long long)n);
		rc = -1;
	}
	s->unc_lo = lo;
	s->unc_hi = hi;
	for (uint32_t i = 0; i < nev && rc == 0; i++) {
		if (ev[i].seq < lo || ev[i].seq >= hi)
			continue; /* placed: before N, or from N on */
		uint32_t *u = s->unc;
		if (s->nunc == s->unc_cap) {
			uint32_t nc = s->unc_cap ? s->unc_cap * 2 : 64;
			u = realloc(s->unc, nc * sizeof(*u));
			if (!u) {
				s->unc_all = 1; /* no room to name them: every book */
				break;
			}
			s->unc = u;
			s->unc_cap = nc;
		}
		s->unc[s->nunc++] = ev[i].inst;
	}
	free(ev);
	if (s->nunc > 1) { /* each book once */
		uint32_t w = 1;
		qsort(s->unc, s->nunc, sizeof(*s->unc), uf_snap_u32_cmp);
		for (uint32_t i = 1; i < s->nunc; i++)
			if (s->unc[i] != s->unc[w - 1])
				s->unc[w++] = s->unc[i];
		s->nunc = w;
	}
	return rc;
}
