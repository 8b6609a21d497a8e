/* The state of the day for GLIMPSE snapshots (see snap_state.h). */
#include "snap_state.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/uf_endian.h"
#include "decode/uf_decode.h"

#define RP_SNAP_INST_TYPES "RHYKJN" /* per-locate "last message of this type" */
#define RP_SNAP_NINST      6
#define RP_SNAP_HALT_CODES "QBX" /* h market codes; any other shares slot 3 */
#define RP_SNAP_NHALT      4
#define RP_SNAP_MIN_SLOTS  1024

struct rp_snap_order {
	uint64_t ref;      /* order reference */
	uint64_t arrival;  /* order of arrival (add or replace), for time priority */
	uint64_t ts;       /* timestamp of the add or replace */
	uint32_t shares;   /* remaining */
	uint32_t price;    /* 4 implied decimals */
	uint16_t locate;   /* stock locate of the book it rests in */
	uint16_t tracking; /* tracking number of the add or replace */
	uint8_t side;      /* 'B' or 'S' */
	uint8_t type;      /* 'A' or 'F' */
	uint8_t used;      /* slot holds a live order */
	uint8_t pad;       /* 0 */
	char stock[8];     /* symbol of the add */
	char attr[4];      /* MPID attribution ('F') */
};

struct rp_snap_inst {
	uint8_t have;                                /* bit i: msg[i] holds a RHYKJN message */
	uint8_t have_halt;                           /* bit i: halt[i] holds an h message */
	uint8_t msg[RP_SNAP_NINST][UF_ITCH_MAX_LEN]; /* last message of each type */
	uint8_t halt[RP_SNAP_NHALT][21];             /* last h per market code */
	uint8_t (*mp)[26];                           /* last L per MPID */
	uint32_t nmp, capmp;                         /* entries and capacity of mp */
};

struct rp_snap_state {
	struct rp_snap_order *slots;             /* order hash table, 2^bits slots */
	uint64_t mask;                           /* slots - 1 */
	uint32_t shift;                          /* 64 - bits */
	uint64_t count;                          /* live orders */
	uint64_t arrivals;                       /* arrival counter */
	struct rp_snap_inst *inst[65536];        /* per locate, allocated on first use */
	uint8_t sys[12], mwcb_v[35], mwcb_w[12]; /* market-wide messages */
	uint8_t have_sys, have_v, have_w;        /* set once received */
	struct rp_snap_state_stats st;           /* counters */
};

static uint64_t rp_snap_home(const struct rp_snap_state *s, uint64_t ref)
{
	return (ref * 0x9E3779B97F4A7C15ull) >> s->shift;
}

static int rp_snap_table_alloc(struct rp_snap_state *s, uint64_t nslots)
{
	s->slots = calloc(nslots, sizeof(*s->slots));
	if (!s->slots)
		return -ENOMEM;
	s->mask = nslots - 1;
	s->shift = 64 - (uint32_t)__builtin_ctzll(nslots);
	return 0;
}

int rp_snap_state_create(struct rp_snap_state **out)
{
	struct rp_snap_state *s = calloc(1, sizeof(*s));
	if (!s || rp_snap_table_alloc(s, RP_SNAP_MIN_SLOTS) < 0) {
		free(s);
		return -ENOMEM;
	}
	*out = s;
	return 0;
}

void rp_snap_state_destroy(struct rp_snap_state *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < 65536; i++) {
		if (s->inst[i])
			free(s->inst[i]->mp);
		free(s->inst[i]);
	}
	free(s->slots);
	free(s);
}

static struct rp_snap_order *rp_snap_find(const struct rp_snap_state *s, uint64_t ref)
{
	for (uint64_t i = rp_snap_home(s, ref);; i = (i + 1) & s->mask) {
		struct rp_snap_order *o = &s->slots[i];
		if (!o->used)
			return NULL;
		if (o->ref == ref)
			return o;
	}
}

/* Doubles the table (rehash). Cold. */
static int rp_snap_grow(struct rp_snap_state *s)
{
	struct rp_snap_order *old = s->slots;
	uint64_t n = s->mask + 1;
	if (rp_snap_table_alloc(s, n * 2) < 0) {
		s->slots = old;
		return -ENOMEM;
	}
	for (uint64_t i = 0; i < n; i++) {
		if (!old[i].used)
			continue;
		uint64_t j = rp_snap_home(s, old[i].ref);
		while (s->slots[j].used)
			j = (j + 1) & s->mask;
		s->slots[j] = old[i];
	}
	free(old);
	return 0;
}

/* A new live order; NULL when `ref` is already live (ignored, as the books ignore it). */
static struct rp_snap_order *rp_snap_insert(struct rp_snap_state *s, uint64_t ref, int *err)
{
	*err = 0;
	if ((s->count + 1) * 2 > s->mask + 1 && rp_snap_grow(s) < 0) {
		*err = -ENOMEM;
		return NULL;
	}
	uint64_t i = rp_snap_home(s, ref);
	for (;; i = (i + 1) & s->mask) {
		struct rp_snap_order *o = &s->slots[i];
		if (!o->used)
			break;
		if (o->ref == ref)
			return NULL;
	}
	struct rp_snap_order *o = &s->slots[i];
	memset(o, 0, sizeof(*o));
	o->ref = ref;
	o->used = 1;
	o->arrival = ++s->arrivals;
	s->count++;
	return o;
}

/* Backward-shift deletion: no tombstones over a day of adds and deletes. */
static void rp_snap_remove(struct rp_snap_state *s, struct rp_snap_order *o)
{
	uint64_t i = (uint64_t)(o - s->slots), j = i;
	s->count--;
	for (;;) {
		j = (j + 1) & s->mask;
		struct rp_snap_order *n = &s->slots[j];
		if (!n->used)
			break;
		uint64_t k = rp_snap_home(s, n->ref);
		int stays = (i <= j) ? (i < k && k <= j) : (i < k || k <= j);
		if (!stays) {
			s->slots[i] = *n;
			i = j;
		}
	}
	s->slots[i].used = 0;
}

/* Takes `want` shares (all when `all`, or when more than is left, as the books do). */
static void rp_snap_reduce(struct rp_snap_state *s, uint64_t ref, uint32_t want, int all)
{
	struct rp_snap_order *o = rp_snap_find(s, ref);
	if (!o) {
		s->st.unknown_ref++;
		return;
	}
	uint32_t removed = (all || want > o->shares) ? o->shares : want;
	o->shares -= removed;
	if (o->shares == 0)
		rp_snap_remove(s, o);
}

static struct rp_snap_inst *rp_snap_inst(struct rp_snap_state *s, uint16_t locate)
{
	if (!s->inst[locate])
		s->inst[locate] = calloc(1, sizeof(struct rp_snap_inst));
	return s->inst[locate];
}

static int rp_snap_keep_mp(struct rp_snap_inst *in, const uint8_t *msg)
{
	for (uint32_t i = 0; i < in->nmp; i++)
		if (memcmp(in->mp[i] + 11, msg + 11, 4) == 0) {
			memcpy(in->mp[i], msg, 26);
			return 0;
		}
	if (in->nmp == in->capmp) {
		uint32_t cap = in->capmp ? in->capmp * 2 : 4;
		uint8_t(*mp)[26] = realloc(in->mp, cap * sizeof(*mp));
		if (!mp)
			return -ENOMEM;
		in->mp = mp;
		in->capmp = cap;
	}
	memcpy(in->mp[in->nmp++], msg, 26);
	return 0;
}

int rp_snap_state_apply(struct rp_snap_state *s, const uint8_t *msg, size_t len)
{
	struct uf_itch_msg m;
	if (uf_itch_decode(msg, len, &m) != 0) {
		s->st.undecodable++;
		return -EBADMSG;
	}
	s->st.applied++;
	const char *it = strchr(RP_SNAP_INST_TYPES, m.type);
	if (it) {
		struct rp_snap_inst *in = rp_snap_inst(s, m.locate);
		if (!in)
			return -ENOMEM;
		unsigned k = (unsigned)(it - RP_SNAP_INST_TYPES);
		memcpy(in->msg[k], msg, len);
		in->have |= (uint8_t)(1u << k);
		return 0;
	}
	struct rp_snap_order *o;
	int err;
	switch (m.type) {
	case 'S':
		memcpy(s->sys, msg, len);
		s->have_sys = 1;
		break;
	case 'V':
		memcpy(s->mwcb_v, msg, len);
		s->have_v = 1;
		break;
	case 'W':
		memcpy(s->mwcb_w, msg, len);
		s->have_w = 1;
		break;
	case 'h': {
		struct rp_snap_inst *in = rp_snap_inst(s, m.locate);
		if (!in)
			return -ENOMEM;
		const char *c = strchr(RP_SNAP_HALT_CODES, m.u.op_halt.market_code);
		unsigned k = c && m.u.op_halt.market_code ? (unsigned)(c - RP_SNAP_HALT_CODES) : 3;
		memcpy(in->halt[k], msg, len);
		in->have_halt |= (uint8_t)(1u << k);
		break;
	}
	case 'L': {
		struct rp_snap_inst *in = rp_snap_inst(s, m.locate);
		if (!in || rp_snap_keep_mp(in, msg) < 0)
			return -ENOMEM;
		break;
	}
	case 'A':
	case 'F':
		if (m.u.add.side != 'B' && m.u.add.side != 'S')
			break; /* the books ignore it too */
		o = rp_snap_insert(s, m.u.add.order_ref, &err);
		if (err)
			return err;
		if (!o)
			break; /* duplicate reference: the first one stays */
		o->ts = m.timestamp;
		o->shares = m.u.add.shares;
		o->price = m.u.add.price;
		o->locate = m.locate;
		o->tracking = m.tracking;
		o->side = m.u.add.side;
		o->type = m.type;
		memcpy(o->stock, m.u.add.stock, 8);
		memcpy(o->attr, m.u.add.attribution, 4);
		break;
	case 'E':
	case 'C':
		rp_snap_reduce(s, m.u.exec.order_ref, m.u.exec.shares, 0);
		break;
	case 'X':
		rp_snap_reduce(s, m.u.cancel.order_ref, m.u.cancel.shares, 0);
		break;
	case 'D':
		rp_snap_reduce(s, m.u.del.order_ref, 0, 1);
		break;
	case 'U': {
		struct rp_snap_order *old = rp_snap_find(s, m.u.replace.orig_ref);
		if (!old) {
			s->st.unknown_ref++;
			break;
		}
		struct rp_snap_order keep = *old; /* side, locate, stock survive the replace */
		rp_snap_remove(s, old);
		o = rp_snap_insert(s, m.u.replace.new_ref, &err);
		if (err)
			return err;
		if (!o)
			break; /* new reference already live: the books drop the new order too */
		o->ts = m.timestamp;
		o->shares = m.u.replace.shares;
		o->price = m.u.replace.price;
		o->locate = keep.locate;
		o->tracking = m.tracking;
		o->side = keep.side;
		o->type = 'A'; /* a replace carries no attribution */
		memcpy(o->stock, keep.stock, 8);
		break;
	}
	default:
		break; /* P Q B I O: trades and auctions leave no resting state */
	}
	return 0;
}

static int rp_snap_cmp_arrival(const void *a, const void *b)
{
	const struct rp_snap_order *x = *(const struct rp_snap_order *const *)a;
	const struct rp_snap_order *y = *(const struct rp_snap_order *const *)b;
	return x->arrival < y->arrival ? -1 : x->arrival > y->arrival;
}

/* The Add Order message of a resting order. */
static size_t rp_snap_build_add(const struct rp_snap_order *o, uint8_t *out)
{
	out[0] = o->type;
	uf_put_be16(out + 1, o->locate);
	uf_put_be16(out + 3, o->tracking);
	uf_put_be48(out + 5, o->ts);
	uf_put_be64(out + 11, o->ref);
	out[19] = o->side;
	uf_put_be32(out + 20, o->shares);
	memcpy(out + 24, o->stock, 8);
	uf_put_be32(out + 32, o->price);
	if (o->type == 'F') {
		memcpy(out + 36, o->attr, 4);
		return 40;
	}
	return 36;
}

#define RP_EMIT(p, n)                                                                              \
	do {                                                                                       \
		int rc_ = emit(ctx, (p), (n));                                                     \
		if (rc_ < 0) {                                                                     \
			ret = rc_;                                                                 \
			goto out;                                                                  \
		}                                                                                  \
		ret++;                                                                             \
	} while (0)

long long rp_snap_state_emit(const struct rp_snap_state *s, rp_snap_emit_fn emit, void *ctx)
{
	long long ret = 0;
	const struct rp_snap_order **live = malloc((s->count + 1) * sizeof(*live));
	if (!live)
		return -ENOMEM;
	if (s->have_sys)
		RP_EMIT(s->sys, sizeof(s->sys));
	if (s->have_v)
		RP_EMIT(s->mwcb_v, sizeof(s->mwcb_v));
	if (s->have_w)
		RP_EMIT(s->mwcb_w, sizeof(s->mwcb_w));
	for (size_t loc = 0; loc < 65536; loc++) {
		const struct rp_snap_inst *in = s->inst[loc];
		if (!in)
			continue;
		for (unsigned k = 0; k < RP_SNAP_NINST; k++)
			if (in->have & (1u << k))
				RP_EMIT(in->msg[k], uf_itch_len((uint8_t)RP_SNAP_INST_TYPES[k]));
		for (unsigned k = 0; k < RP_SNAP_NHALT; k++)
			if (in->have_halt & (1u << k))
				RP_EMIT(in->halt[k], sizeof(in->halt[k]));
		for (uint32_t k = 0; k < in->nmp; k++)
			RP_EMIT(in->mp[k], sizeof(in->mp[k]));
	}
	size_t n = 0;
	for (uint64_t i = 0; i <= s->mask; i++)
		if (s->slots[i].used)
			live[n++] = &s->slots[i];
	qsort(live, n, sizeof(*live), rp_snap_cmp_arrival);
	for (size_t i = 0; i < n; i++) {
		uint8_t add[40];
		RP_EMIT(add, rp_snap_build_add(live[i], add));
	}
out:
	free(live);
	return ret;
}

void rp_snap_state_stats(const struct rp_snap_state *s, struct rp_snap_state_stats *out)
{
	*out = s->st;
	out->live_orders = s->count;
}
