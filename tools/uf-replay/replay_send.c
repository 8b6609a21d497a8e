/* uf-replay: the sender (see replay_send.h). */
#include "replay_send.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/uf_compiler.h"
#include "common/uf_time.h"

volatile sig_atomic_t rp_stop;

/* The packets of the queue (rp_txq.nbuf in use): built in place, sent by the next flush. */
static uint8_t rp_txq_bufs[RP_TXQ_PACKETS][RP_MAX_PAYLOAD];

/* splitmix64: small, fast, and the same sequence everywhere for a seed. */
static uint64_t rp_rand(uint64_t *s)
{
	uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

static int rp_chance(uint64_t *s, double p)
{
	if (p <= 0)
		return 0;
	return (double)(rp_rand(s) >> 11) * (1.0 / 9007199254740992.0) < p;
}

static int rp_fault_hits_at(const struct rp_fault *f, uint64_t first, uint64_t count)
{
	for (int i = 0; i < f->nat; i++)
		if (f->at[i] >= first && f->at[i] < first + count)
			return 1;
	return 0;
}

void rp_sender_init(struct rp_sender *s, const struct rp_opts *o, struct rp_stream *st, int tx)
{
	memset(s, 0, sizeof(*s));
	s->o = o;
	s->st = st;
	s->tx = tx;
	for (int i = 0; i < 2; i++) {
		struct rp_line *l = &s->line[i];
		l->drop = &o->line[i].drop;
		if (!o->line[i].on)
			continue;
		l->on = 1;
		l->dst = o->line[i].dst;
		l->rng = o->seed * 2 + (uint64_t)i + 0x5DEECE66Dull;
	}
}

int rp_sender_add_server(struct rp_sender *s, struct rp_server srv)
{
	if (s->nservers >= RP_MAX_SERVERS)
		return -ENOSPC;
	s->servers[s->nservers++] = srv;
	return 0;
}

/* Appends one datagram to the queue (the caller made room: rp_txq_room). */
static void rp_txq_add(struct rp_sender *s, const uint8_t *buf, size_t len,
                       const struct sockaddr_in *dst)
{
	struct rp_txq *q = &s->q;
	int i = q->n++;
	q->to[i] = *dst;
	q->iov[i] = (struct iovec){.iov_base = (void *)buf, .iov_len = len};
	q->m[i].msg_hdr = (struct msghdr){.msg_name = &q->to[i],
	                                  .msg_namelen = sizeof(q->to[i]),
	                                  .msg_iov = &q->iov[i],
	                                  .msg_iovlen = 1};
}

void rp_sender_flush(struct rp_sender *s)
{
	struct rp_txq *q = &s->q;
	int off = 0, tries = 0;
	while (off < q->n) {
		int r = sendmmsg(s->tx, q->m + off, (unsigned)(q->n - off), 0);
		s->sendmmsg_calls++;
		if (r > 0) {
			off += r;
			tries = 0;
			continue;
		}
		if ((errno == ENOBUFS || errno == EAGAIN || errno == EINTR) && ++tries < 1000) {
			struct timespec ts = {0, 20000};
			nanosleep(&ts, NULL);
			continue;
		}
		fprintf(stderr, "uf-replay: sendmmsg: %s\n", strerror(errno));
		off++; /* that datagram is lost, as rp_sendto loses it; the rest still go */
		tries = 0;
	}
	q->n = 0;
	q->nbuf = 0;
}

/* Serves every server; the queue goes out first (a re-request may ask for what it holds). */
static void rp_serve_all(struct rp_sender *s)
{
	if (s->q.n)
		rp_sender_flush(s);
	for (int i = 0; i < s->nservers; i++)
		s->servers[i].serve(s->servers[i].ctx, s->st);
	s->last_serve = uf_now_mono_ns();
}

/* Between packets sent back to back (behind the schedule): the servers at most every
 * RP_SERVE_NS, not one non-blocking receive per packet. */
static void rp_serve_some(struct rp_sender *s, uint64_t now)
{
	if (s->nservers && now - s->last_serve >= RP_SERVE_NS)
		rp_serve_all(s);
}

/* The servers that gave no fd to poll (their work is theirs to find: the snapshot server
 * learns how far the stream went), at every step of a wait, as before the queue. */
static void rp_serve_fdless(struct rp_sender *s)
{
	for (int i = 0; i < s->nservers; i++)
		if (!s->srv_nfds[i])
			s->servers[i].serve(s->servers[i].ctx, s->st);
}

/* Sleeps until `deadline` (monotonic ns) while serving every server: the queue goes out
 * first; a server with fds is served when they are ready, when its own time (next_due)
 * comes, and at most RP_SERVE_NS apart otherwise (a ppoll that saw nothing ready on them
 * counts as a serve); a server without fds at every step. */
static void rp_wait_until(struct rp_sender *s, uint64_t deadline)
{
	struct pollfd pfd[16];
	int serve = 0;
	if (s->q.n)
		rp_sender_flush(s);
	for (;;) {
		uint64_t now = uf_now_mono_ns();
		if (serve)
			rp_serve_all(s);
		else {
			rp_serve_some(s, now);
			rp_serve_fdless(s);
		}
		serve = 0;
		now = uf_now_mono_ns();
		if (now >= deadline || rp_stop)
			return;
		uint64_t wake = deadline;
		for (int i = 0; i < s->nservers; i++) {
			uint64_t due =
			    s->servers[i].next_due ? s->servers[i].next_due(s->servers[i].ctx) : 0;
			if (due && due < wake)
				wake = due > now ? due : now;
		}
		serve = wake < deadline; /* a server's own time comes first */
		uint64_t d = wake - now;
		if (d < RP_SPIN_NS) { /* the sleep would cost more than the wait: spin */
			while (uf_now_mono_ns() < wake && !rp_stop)
				uf_cpu_relax();
			continue;
		}
		struct timespec ts = {(time_t)(d / 1000000000u), (long)(d % 1000000000u)};
		int n = 0;
		for (int i = 0; i < s->nservers; i++) {
			s->srv_nfds[i] = s->servers[i].pollfds(
			    s->servers[i].ctx, pfd + n, (int)(sizeof(pfd) / sizeof(pfd[0])) - n);
			n += s->srv_nfds[i];
		}
		if (n > 0) {
			if (ppoll(pfd, (nfds_t)n, &ts, NULL) != 0)
				serve = 1; /* ready (or a signal): serve now */
			else
				s->last_serve = uf_now_mono_ns(); /* nothing arrived meanwhile */
		} else
			nanosleep(&ts, NULL);
	}
}

/* Room in the queue for one more packet on every line (flushing it if not). */
static void rp_txq_room(struct rp_sender *s)
{
	if (s->q.nbuf == RP_TXQ_PACKETS || s->q.n + 6 > RP_TXQ_MAX)
		rp_sender_flush(s);
}

void rp_line_send(struct rp_sender *s, struct rp_line *l, const uint8_t *buf, size_t len,
                  uint64_t first, uint64_t count)
{
	int drop = rp_chance(&l->rng, l->drop->p) || rp_fault_hits_at(l->drop, first, count);
	int dup = rp_chance(&l->rng, s->o->dup);
	int reorder = rp_chance(&l->rng, s->o->reorder);
	if (drop) {
		l->dropped++;
		return;
	}
	if (reorder && !l->held_len) {
		if (s->q.n)
			rp_sender_flush(s); /* a queued datagram may still point at l->held */
		memcpy(l->held, buf, len);
		l->held_len = len;
		l->reordered++;
		return;
	}
	if (s->q.n + 3 > RP_TXQ_MAX)
		rp_sender_flush(s);
	rp_txq_add(s, buf, len, &l->dst);
	l->sent++;
	if (dup) {
		rp_txq_add(s, buf, len, &l->dst);
		l->duplicated++;
	}
	if (l->held_len) {
		rp_txq_add(s, l->held, l->held_len, &l->dst);
		l->held_len = 0;
		l->sent++;
	}
}

static void rp_flush_held(struct rp_sender *s)
{
	rp_sender_flush(s);
	for (int i = 0; i < 2; i++) {
		struct rp_line *l = &s->line[i];
		if (l->on && l->held_len) {
			rp_sendto(s->tx, l->held, l->held_len, &l->dst);
			l->held_len = 0;
			l->sent++;
		}
	}
}

/* A heartbeat, or with `eos` the end of session, to every line (never fault-injected). */
static void rp_send_control(struct rp_sender *s, int eos)
{
	uint8_t hb[UF_MOLD_HDR_LEN];
	rp_sender_flush(s); /* after every data packet built before it */
	if (eos)
		uf_mold_build_end_of_session(hb, s->st->session, s->st->sent_high);
	else
		uf_mold_build_heartbeat(hb, s->st->session, s->st->sent_high);
	for (int i = 0; i < 2; i++)
		if (s->line[i].on)
			rp_sendto(s->tx, hb, sizeof(hb), &s->line[i].dst);
}

/* When may the packet starting at `seq` go? Rate: its first message's slot (in bursts: at
 * burst x rate from its period's start). Speed: its timestamp. */
static uint64_t rp_due(const struct rp_sender *s, uint64_t seq, uint64_t start, uint64_t ts0)
{
	const struct rp_opts *o = s->o;
	uint64_t due = start;
	if (o->rate > 0 && o->burst > 1) {
		/* Period k's messages go at burst x rate from the period's start. */
		double per = o->rate * o->burst_period, i = (double)(seq - 1);
		double k = (double)(uint64_t)(i / per);
		due = start + (uint64_t)(k * o->burst_period * 1e9 +
		                         (i - k * per) * 1e9 / (o->rate * o->burst));
	} else if (o->rate > 0)
		due = start + (uint64_t)((double)(seq - 1) * 1e9 / o->rate);
	else if (o->speed > 0) {
		uint64_t ts = rp_msg_ts(&s->st->msgs[seq - 1]);
		due = start + (uint64_t)((double)(ts > ts0 ? ts - ts0 : 0) / o->speed);
	}
	return due;
}

/* The first sequence after the burst holding `seq` (st->n + 1 when steady): a packet never
 * straddles two bursts, so a burst is exactly its messages and a receiver that knows --rate
 * and --burst-period can tell which burst a packet belongs to (uf-bench e2e's drain time). */
static uint64_t rp_burst_limit(const struct rp_sender *s, uint64_t seq)
{
	const struct rp_opts *o = s->o;
	uint64_t end = s->st->n + 1, i = seq - 1, next;
	if (!(o->rate > 0 && o->burst > 1))
		return end;
	double per = o->rate * o->burst_period;
	uint64_t k = (uint64_t)((double)i / per);
	/* smallest i' whose burst index (rp_due's formula) is above k; float-safe by checking */
	next = (uint64_t)((double)(k + 1) * per);
	while (next > i + 1 && (uint64_t)((double)(next - 1) / per) > k)
		next--;
	while ((uint64_t)((double)next / per) <= k)
		next++;
	return next + 1 < end ? next + 1 : end;
}

void rp_sender_run(struct rp_sender *s)
{
	struct rp_stream *st = s->st;
	uint64_t start = uf_now_mono_ns(), last_tx = start;
	uint64_t ts0 = rp_msg_ts(&st->msgs[0]);
	st->sent_high = 1;
	s->last_serve = start;
	for (uint64_t seq = 1; seq <= st->n && !rp_stop;) {
		uint64_t k = rp_stream_fit(st, seq, rp_burst_limit(s, seq));
		uint64_t due = rp_due(s, seq, start, ts0);
		while (due > last_tx + RP_HEARTBEAT_NS && !rp_stop) {
			rp_wait_until(s, last_tx + RP_HEARTBEAT_NS);
			rp_send_control(s, 0);
			last_tx = uf_now_mono_ns();
		}
		uint64_t now = uf_now_mono_ns();
		if (due > now)
			rp_wait_until(s, due); /* sends the queue first */
		else
			rp_serve_some(s, now); /* behind: the queue grows, up to RP_TXQ_PACKETS */
		rp_txq_room(s);
		uint8_t *buf = rp_txq_bufs[s->q.nbuf++];
		size_t len = rp_stream_build(st, buf, RP_MAX_PAYLOAD, seq, k);
		st->sent_high = seq + k; /* before sending: a re-request may follow at once */
		for (int i = 0; i < 2; i++)
			if (s->line[i].on)
				rp_line_send(s, &s->line[i], buf, len, seq, k);
		s->packets++;
		last_tx = uf_now_mono_ns();
		seq += k;
		if (s->o->verbose && s->packets % 10000 == 0)
			fprintf(stderr, "uf-replay: %llu/%llu messages\n",
			        (unsigned long long)seq - 1, (unsigned long long)st->n);
	}
	rp_flush_held(s);
	rp_send_control(s, 1);
	/* Linger: repeat the end of session every second (a feed that lost it learns the end)
	 * and keep serving. */
	uint64_t until = uf_now_mono_ns() + (uint64_t)(s->o->linger * 1e9);
	while (!rp_stop && uf_now_mono_ns() < until) {
		uint64_t next = uf_now_mono_ns() + RP_HEARTBEAT_NS;
		rp_wait_until(s, next < until ? next : until);
		rp_send_control(s, 1);
	}
	s->seconds = (double)(uf_now_mono_ns() - start) / 1e9;
	if (s->o->verbose)
		fprintf(stderr, "uf-replay: %llu packets in %llu sendmmsg calls\n",
		        (unsigned long long)s->packets, (unsigned long long)s->sendmmsg_calls);
}
