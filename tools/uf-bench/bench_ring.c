/* uf-bench ring: publish-to-consume latency and throughput of the shm ring for 1, 2 and 4
 * consumer processes, busy-polling and futex-waiting, side by side in the same run with the
 * two transports a user would otherwise pick: ZeroMQ PUB/SUB over ipc:// and one Unix-domain
 * datagram socket per consumer.
 *
 * Each case forks its consumers, then runs two phases:
 *   latency     the producer sends one 64-byte record every 1/rate seconds (paced, so queues
 *               stay empty); each record carries its CLOCK_MONOTONIC send time; consumers
 *               record now - send time for every record.
 *   throughput  the producer sends as fast as it can for the phase; consumers count what
 *               arrives. The producer never waits for a consumer in any transport (ring laps,
 *               PUB drops at its high-water mark, a full datagram socket drops), so losses are
 *               reported next to the rates.
 * Nothing here is hidden: with more busy processes than CPUs the figures show the scheduler.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zmq.h>

#include "bench.h"
#include "common/uf_parse.h"
#include "common/uf_time.h"
#include "ring/uf_ring.h"
#include "ring/ufconsumer.h"

#define MAXC       4  /* consumers per case, at most */
#define BATCH      16 /* records per publish in the throughput phase */
#define KIND_HELLO 0  /* zmq slow-joiner probe, ignored */
#define KIND_LAT   1  /* latency-phase record */
#define KIND_TPUT  2  /* throughput-phase record */

enum transport { T_RING_BUSY, T_RING_FUTEX, T_ZMQ, T_UDS, T_COUNT };
static const char *t_name[] = {"ring", "ring", "zeromq-ipc", "unix-dgram"};
static const char *t_wait[] = {"busy-poll", "futex", "zmq_poll", "poll"};

enum phase { P_SETUP, P_LAT, P_LAT_END, P_TPUT, P_TPUT_END };

struct cres {
	uint64_t lat_recv;  /* latency-phase records received */
	uint64_t tput_recv; /* throughput-phase records received */
	uint64_t tput_last; /* mono ns of the last throughput record received */
	uint64_t nsamples;  /* latency samples stored */
};

/* Shared between the producer and the consumers of one case (MAP_SHARED anonymous). */
struct ctl {
	uint32_t phase;        /* enum phase, written by the producer */
	uint32_t ack[MAXC];    /* per consumer: 1 ready, 2 latency drained, 4 throughput drained */
	uint64_t tput_start;   /* mono ns the throughput phase began */
	struct cres res[MAXC]; /* per consumer results */
};

struct opts {
	double duration;  /* seconds per case (split between the two phases) */
	uint64_t records; /* throughput-phase cap on records sent, 0 = none */
	uint64_t rate;    /* latency-phase messages per second */
	int json;         /* JSON output */
	int pin;          /* pin producer to CPU 0, consumers round-robin from CPU 1 */
	int consumers[3]; /* consumer counts to run */
	int nconsumers;   /* entries in consumers[] */
	uint32_t mask;    /* transports to run (bit per enum transport) */
	int ncpu;         /* CPUs available at start (before the producer pins itself) */
};

struct result {
	enum transport t;        /* transport */
	int nc;                  /* consumers */
	int ok;                  /* 0 when the case could not run */
	char note[96];           /* why not, or a remark */
	struct uf_bench_pct lat; /* latency over all consumers */
	uint64_t lat_sent;       /* records sent per consumer in the latency phase */
	uint64_t lat_lost;       /* sum over consumers */
	uint64_t tput_sent;      /* records sent per consumer in the throughput phase */
	double tput_secs;        /* throughput phase length */
	double send_mps;         /* producer: million records per second (per consumer stream) */
	double recv_min_mps;     /* slowest consumer's delivered rate */
	double recv_sum_mps;     /* all consumers together */
	double loss_pct;         /* records not delivered, % of sent, over all consumers */
};

static uint64_t load_phase(const struct ctl *c)
{
	return __atomic_load_n(&c->phase, __ATOMIC_ACQUIRE);
}

static void set_phase(struct ctl *c, uint32_t p)
{
	__atomic_store_n(&c->phase, p, __ATOMIC_RELEASE);
}

static void set_ack(struct ctl *c, int i, uint32_t v)
{
	__atomic_store_n(&c->ack[i], v, __ATOMIC_RELEASE);
}

/* ---- consumer side: one function per transport family, sharing the accounting ---- */

struct cons {
	struct ctl *ctl;      /* control block */
	int idx;              /* consumer index */
	uint64_t *samples;    /* this consumer's sample array */
	uint64_t max_samples; /* its capacity */
	uint64_t deadline;    /* mono ns after which the consumer gives up */
	uint64_t drain_from;  /* mono ns an *_END phase was first seen (0 = not yet) */
};

static void account(struct cons *cs, const struct uf_record *r, uint64_t now)
{
	struct cres *res = &cs->ctl->res[cs->idx];

	if (r->kind == KIND_LAT) {
		res->lat_recv++;
		if (res->nsamples < cs->max_samples)
			cs->samples[res->nsamples++] = now - r->exch_ts;
	} else if (r->kind == KIND_TPUT) {
		res->tput_recv++;
		res->tput_last = now;
	}
}

/* Called when nothing was available. Returns 1 when the consumer should exit. For lossy
 * transports "drained" means quiet for 20 ms after the producer said the phase ended. */
static int idle_step(struct cons *cs, int empty_is_drained)
{
	uint32_t ph = (uint32_t)load_phase(cs->ctl);
	uint64_t now = uf_now_mono_ns();

	if (now > cs->deadline)
		return 1;
	if (ph != P_LAT_END && ph != P_TPUT_END) {
		cs->drain_from = 0;
		return 0;
	}
	if (cs->ctl->ack[cs->idx] >= (ph == P_LAT_END ? 2u : 4u))
		return ph == P_TPUT_END;
	if (!empty_is_drained) {
		if (cs->drain_from == 0) {
			cs->drain_from = now;
			return 0;
		}
		if (now - cs->drain_from < 20000000ull)
			return 0;
	}
	cs->drain_from = 0;
	set_ack(cs->ctl, cs->idx, ph == P_LAT_END ? 2 : 4);
	return ph == P_TPUT_END;
}

static int consume_ring(struct cons *cs, const char *ring, int futex)
{
	struct uf_consumer_options o;
	struct uf_record buf[64];
	uf_consumer_t *c;
	char err[256];
	uint32_t idle = 0;

	uf_consumer_options_init(&o);
	o.spin_ns = 0; /* futex mode sleeps at once; busy mode never calls wait */
	o.tag = "uf-bench";
	if (uf_consumer_attach(ring, &o, &c, err, sizeof(err)) < 0) {
		fprintf(stderr, "uf-bench: consumer: %s\n", err);
		return 1;
	}
	set_ack(cs->ctl, cs->idx, 1);
	for (;;) {
		int n = uf_consumer_read(c, buf, 64, NULL);
		if (n > 0) {
			uint64_t now = uf_now_mono_ns();
			for (int i = 0; i < n; i++)
				account(cs, &buf[i], now);
			idle = 0;
			continue;
		}
		if (n == -EOVERFLOW)
			continue; /* lost records show up as sent - received */
		if (n != -EAGAIN)
			break;
		if (futex)
			uf_consumer_wait(c, 10000000);
		else if ((++idle & 1023) != 0)
			continue;
		if (idle_step(cs, 1))
			break;
	}
	uf_consumer_detach(c);
	return 0;
}

static int consume_zmq(struct cons *cs, const char *endpoint)
{
	void *ctx = zmq_ctx_new(), *sub = ctx ? zmq_socket(ctx, ZMQ_SUB) : NULL;
	int hwm = 1000000, linger = 0, ready = 0;
	struct uf_record r;

	if (!sub) {
		fprintf(stderr, "uf-bench: zmq socket: %s\n", zmq_strerror(errno));
		return 1;
	}
	zmq_setsockopt(sub, ZMQ_RCVHWM, &hwm, sizeof(hwm));
	zmq_setsockopt(sub, ZMQ_LINGER, &linger, sizeof(linger));
	zmq_setsockopt(sub, ZMQ_SUBSCRIBE, "", 0);
	if (zmq_connect(sub, endpoint) < 0) {
		fprintf(stderr, "uf-bench: zmq_connect %s: %s\n", endpoint, zmq_strerror(errno));
		return 1;
	}
	for (;;) {
		int n = zmq_recv(sub, &r, sizeof(r), ZMQ_DONTWAIT);
		if (n == (int)sizeof(r)) {
			if (!ready) {
				ready = 1; /* the subscription is live: the producer may start */
				set_ack(cs->ctl, cs->idx, 1);
			}
			account(cs, &r, uf_now_mono_ns());
			continue;
		}
		zmq_pollitem_t it = {.socket = sub, .events = ZMQ_POLLIN};
		zmq_poll(&it, 1, 10);
		if (it.revents & ZMQ_POLLIN)
			continue;
		if (idle_step(cs, 0))
			break;
	}
	zmq_close(sub);
	zmq_ctx_term(ctx);
	return 0;
}

static int consume_uds(struct cons *cs, int fd)
{
	struct uf_record r;

	set_ack(cs->ctl, cs->idx, 1);
	for (;;) {
		ssize_t n = recv(fd, &r, sizeof(r), MSG_DONTWAIT);
		if (n == (ssize_t)sizeof(r)) {
			account(cs, &r, uf_now_mono_ns());
			continue;
		}
		struct pollfd p = {.fd = fd, .events = POLLIN};
		if (poll(&p, 1, 10) == 1)
			continue;
		if (idle_step(cs, 0))
			break;
	}
	return 0;
}

/* ---- producer side ---- */

struct prod {
	enum transport t;     /* transport */
	int nc;               /* consumers */
	struct uf_ring *ring; /* T_RING_* */
	void *pub;            /* T_ZMQ */
	int fds[MAXC];        /* T_UDS: producer ends */
	uint64_t seq;         /* records sent so far */
};

/* Sends one record to every consumer (per transport); never waits. */
static inline void send_one(struct prod *p, struct uf_record *r)
{
	r->feed_seq = p->seq++;
	switch (p->t) {
	case T_RING_BUSY:
	case T_RING_FUTEX:
		uf_ring_publish(p->ring, r, 1);
		break;
	case T_ZMQ:
		zmq_send(p->pub, r, sizeof(*r), ZMQ_DONTWAIT); /* PUB drops at HWM, never blocks */
		break;
	default:
		for (int i = 0; i < p->nc; i++)
			(void)send(p->fds[i], r, sizeof(*r), MSG_DONTWAIT); /* full: dropped */
		break;
	}
}

static void send_batch(struct prod *p, struct uf_record *r, int n)
{
	if (p->t == T_RING_BUSY || p->t == T_RING_FUTEX) {
		for (int i = 0; i < n; i++)
			r[i].feed_seq = p->seq++;
		uf_ring_publish(p->ring, r, (size_t)n);
		return;
	}
	for (int i = 0; i < n; i++)
		send_one(p, &r[i]);
}

/* Waits until every consumer acked at least `v` (bounded); zmq gets hello probes meanwhile
 * (the slow-joiner problem: a SUB misses what is published before it is connected). */
static int wait_acks(struct prod *p, struct ctl *ctl, uint32_t v, int timeout_ms)
{
	uint64_t end = uf_now_mono_ns() + (uint64_t)timeout_ms * 1000000ull;
	struct uf_record hello = {.kind = KIND_HELLO};

	for (;;) {
		int all = 1;
		for (int i = 0; i < p->nc; i++)
			all &= __atomic_load_n(&ctl->ack[i], __ATOMIC_ACQUIRE) >= v;
		if (all)
			return 0;
		if (uf_now_mono_ns() > end)
			return -ETIMEDOUT;
		if (p->t == T_ZMQ && v == 1)
			zmq_send(p->pub, &hello, sizeof(hello), ZMQ_DONTWAIT);
		usleep(1000);
	}
}

static void run_phases(struct prod *p, struct ctl *ctl, const struct opts *o, struct result *res)
{
	uint64_t phase_ns = (uint64_t)(o->duration * 0.5e9), interval = 1000000000ull / o->rate;
	uint64_t start, next, now, sent = 0;
	struct uf_record r, batch[BATCH];

	memset(&r, 0, sizeof(r));
	/* latency: paced sends, the producer spins between them */
	set_phase(ctl, P_LAT);
	start = uf_now_mono_ns();
	next = start;
	while ((now = uf_now_mono_ns()) - start < phase_ns) {
		if (now < next)
			continue;
		r.kind = KIND_LAT;
		r.exch_ts = uf_now_mono_ns();
		send_one(p, &r);
		sent++;
		next += interval;
		if (now > next + 1000000) /* more than 1 ms behind: do not burst to catch up */
			next = now + interval;
	}
	res->lat_sent = sent;
	set_phase(ctl, P_LAT_END);
	if (p->t == T_RING_FUTEX)
		uf_ring_wake(p->ring);
	wait_acks(p, ctl, 2, 3000);

	/* throughput: as fast as the transport takes it */
	memset(batch, 0, sizeof(batch));
	for (int i = 0; i < BATCH; i++)
		batch[i].kind = KIND_TPUT;
	sent = 0;
	ctl->tput_start = uf_now_mono_ns();
	set_phase(ctl, P_TPUT);
	start = uf_now_mono_ns();
	for (;;) {
		now = uf_now_mono_ns();
		if (now - start >= phase_ns || (o->records && sent >= o->records))
			break;
		for (int i = 0; i < BATCH; i++)
			batch[i].exch_ts = now;
		send_batch(p, batch, BATCH);
		sent += BATCH;
	}
	res->tput_secs = (double)(uf_now_mono_ns() - start) / 1e9;
	res->tput_sent = sent;
	set_phase(ctl, P_TPUT_END);
	if (p->t == T_RING_FUTEX)
		uf_ring_wake(p->ring);
	wait_acks(p, ctl, 4, 5000);
}

static void run_case(enum transport t, int nc, const struct opts *o, struct result *res)
{
	uint64_t max_samples = (uint64_t)((double)o->rate * o->duration * 0.5) + 1024;
	size_t samples_size = (size_t)max_samples * MAXC * sizeof(uint64_t);
	int ncpu = o->ncpu, socks[MAXC][2];
	char ring[64], endpoint[128];
	struct prod p = {.t = t, .nc = nc};
	pid_t pids[MAXC];
	uint64_t *samples, *all, nall = 0;
	struct ctl *ctl;
	void *zctx = NULL;

	memset(res, 0, sizeof(*res));
	res->t = t;
	res->nc = nc;
	ctl = uf_bench_shared_alloc(sizeof(*ctl));
	samples = uf_bench_shared_alloc(samples_size);
	if (!ctl || !samples) {
		snprintf(res->note, sizeof(res->note), "out of memory");
		goto out_free;
	}
	snprintf(ring, sizeof(ring), "ufbench%d", (int)getpid());
	snprintf(endpoint, sizeof(endpoint), "ipc:///tmp/ufbench-%d.ipc", (int)getpid());
	if (t == T_RING_BUSY || t == T_RING_FUTEX) {
		struct uf_ring_options ro;
		char err[256];
		uf_ring_options_init(&ro);
		ro.capacity = 1u << 20;
		ro.max_instruments = 16;
		ro.depth = 1;
		if (uf_ring_create(ring, &ro, &p.ring, err, sizeof(err)) < 0) {
			snprintf(res->note, sizeof(res->note), "%.90s", err);
			goto out_free;
		}
	}
	for (int i = 0; i < nc && t == T_UDS; i++) {
		int sz = 4 << 20;
		if (socketpair(AF_UNIX, SOCK_DGRAM, 0, socks[i]) < 0) {
			snprintf(res->note, sizeof(res->note), "socketpair: %s", strerror(errno));
			goto out_free;
		}
		setsockopt(socks[i][0], SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
		setsockopt(socks[i][1], SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
		p.fds[i] = socks[i][0];
	}
	for (int i = 0; i < nc; i++) {
		pids[i] = fork();
		if (pids[i] < 0) {
			nc = i;
			break;
		}
		if (pids[i] == 0) {
			struct cons cs = {.ctl = ctl,
			                  .idx = i,
			                  .max_samples = max_samples,
			                  .samples = samples + (uint64_t)i * max_samples,
			                  .deadline = uf_now_mono_ns() +
			                              (uint64_t)((o->duration * 3 + 20) * 1e9)};
			int rc;
			if (o->pin && ncpu > 1)
				uf_bench_pin((1 + i) % ncpu);
			if (t == T_RING_BUSY || t == T_RING_FUTEX)
				rc = consume_ring(&cs, ring, t == T_RING_FUTEX);
			else if (t == T_ZMQ)
				rc = consume_zmq(&cs, endpoint);
			else
				rc = consume_uds(&cs, socks[i][1]);
			_exit(rc);
		}
	}
	p.nc = nc;
	if (o->pin)
		uf_bench_pin(0);
	if (t == T_ZMQ) {
		int hwm = 1000000, linger = 0;
		zctx = zmq_ctx_new();
		p.pub = zmq_socket(zctx, ZMQ_PUB);
		zmq_setsockopt(p.pub, ZMQ_SNDHWM, &hwm, sizeof(hwm));
		zmq_setsockopt(p.pub, ZMQ_LINGER, &linger, sizeof(linger));
		if (zmq_bind(p.pub, endpoint) < 0)
			snprintf(res->note, sizeof(res->note), "zmq_bind: %s", zmq_strerror(errno));
	}
	if (res->note[0] == '\0' && wait_acks(&p, ctl, 1, 10000) < 0)
		snprintf(res->note, sizeof(res->note), "consumers did not start within 10 s");
	if (res->note[0] == '\0') {
		run_phases(&p, ctl, o, res);
		res->ok = 1;
		if (nc + 1 > ncpu) /* say it next to the figures, not only in a footnote */
			snprintf(res->note, sizeof(res->note), "%d processes on %d CPUs", nc + 1,
			         ncpu);
	} else {
		set_phase(ctl, P_TPUT_END);
	}
	for (int i = 0; i < nc; i++)
		if (uf_bench_wait_child(pids[i], (int)(o->duration * 1000) + 10000) < 0)
			snprintf(res->note, sizeof(res->note), "a consumer had to be killed");

	/* results */
	all = samples; /* compact every consumer's samples to the front, then sort once */
	res->recv_min_mps = -1;
	for (int i = 0; i < nc && res->ok; i++) {
		struct cres *cr = &ctl->res[i];
		uint64_t ns = cr->nsamples > max_samples ? max_samples : cr->nsamples;
		memmove(all + nall, samples + (uint64_t)i * max_samples, ns * sizeof(uint64_t));
		nall += ns;
		res->lat_lost += res->lat_sent > cr->lat_recv ? res->lat_sent - cr->lat_recv : 0;
		double mps = (double)cr->tput_recv / res->tput_secs / 1e6;
		if (res->recv_min_mps < 0 || mps < res->recv_min_mps)
			res->recv_min_mps = mps;
		res->recv_sum_mps += mps;
		res->loss_pct +=
		    (double)(res->tput_sent > cr->tput_recv ? res->tput_sent - cr->tput_recv : 0);
	}
	if (res->ok) {
		uf_bench_percentiles(all, nall, &res->lat);
		res->send_mps = (double)res->tput_sent / res->tput_secs / 1e6;
		res->loss_pct =
		    res->tput_sent ? 100.0 * res->loss_pct / ((double)res->tput_sent * nc) : 0;
	}
	if (p.pub)
		zmq_close(p.pub);
	if (zctx)
		zmq_ctx_term(zctx);
	if (t == T_ZMQ)
		unlink(endpoint + strlen("ipc://"));
	for (int i = 0; i < nc && t == T_UDS; i++) {
		close(socks[i][0]);
		close(socks[i][1]);
	}
	if (p.ring) {
		uf_ring_close(p.ring);
		uf_ring_unlink(ring, NULL);
	}
out_free:
	uf_bench_shared_free(samples, samples_size);
	uf_bench_shared_free(ctl, sizeof(*ctl));
}

static void print_table(const struct result *rs, int n, const struct opts *o)
{
	printf("%-11s %4s %-9s | %9s %9s %10s %10s %9s | %9s %9s %9s %7s\n", "transport", "cons",
	       "wait", "p50_ns", "p99_ns", "p99.9_ns", "max_ns", "lat_lost", "send_M/s", "recv_M/s",
	       "sum_M/s", "loss%");
	for (int i = 0; i < n; i++) {
		const struct result *r = &rs[i];
		printf("%-11s %4d %-9s | ", t_name[r->t], r->nc, t_wait[r->t]);
		if (!r->ok) {
			printf("did not run: %s\n", r->note);
			continue;
		}
		printf("%9" PRIu64 " %9" PRIu64 " %10" PRIu64 " %10" PRIu64 " %9" PRIu64
		       " | %9.2f %9.2f %9.2f %7.2f%s%s\n",
		       r->lat.p50, r->lat.p99, r->lat.p999, r->lat.max, r->lat_lost, r->send_mps,
		       r->recv_min_mps, r->recv_sum_mps, r->loss_pct, r->note[0] ? "  " : "",
		       r->note);
	}
	printf("latency: %" PRIu64 " msg/s paced, %.2f s per phase; recv_M/s = slowest consumer; "
	       "%d CPUs, load average %.2f at the end%s\n",
	       o->rate, o->duration / 2, o->ncpu, uf_bench_loadavg(),
	       o->ncpu < 6 ? " (more busy processes than CPUs in the larger cases)" : "");
}

static void print_json(const struct result *rs, int n, const struct opts *o)
{
	printf("{\"bench\":\"ring\",\"cpus\":%d,\"loadavg\":%.2f,\"rate\":%" PRIu64
	       ",\"phase_s\":%.3f,\"cases\":[",
	       o->ncpu, uf_bench_loadavg(), o->rate, o->duration / 2);
	for (int i = 0; i < n; i++) {
		const struct result *r = &rs[i];
		printf("%s{\"transport\":\"%s\",\"consumers\":%d,\"wait\":\"%s\",\"ok\":%s",
		       i ? "," : "", t_name[r->t], r->nc, t_wait[r->t], r->ok ? "true" : "false");
		if (r->ok)
			printf(",\"latency_ns\":{\"samples\":%" PRIu64 ",\"p50\":%" PRIu64
			       ",\"p99\":%" PRIu64 ",\"p999\":%" PRIu64 ",\"max\":%" PRIu64
			       "},\"latency_lost\":%" PRIu64 ",\"throughput\":{\"sent\":%" PRIu64
			       ",\"seconds\":%.3f,\"send_mps\":%.3f,\"recv_min_mps\":%.3f"
			       ",\"recv_sum_mps\":%.3f,\"loss_pct\":%.3f}",
			       r->lat.n, r->lat.p50, r->lat.p99, r->lat.p999, r->lat.max,
			       r->lat_lost, r->tput_sent, r->tput_secs, r->send_mps,
			       r->recv_min_mps, r->recv_sum_mps, r->loss_pct);
		printf(",\"note\":\"%s\"}", r->note);
	}
	printf("]}\n");
}

static void usage(FILE *f)
{
	fprintf(f, "usage: uf-bench ring [--json] [--duration S] [--records N] [--rate MSG_PER_S]\n"
	           "                     [--consumers 1,2,4] [--only ring,zmq,uds] [--no-pin]\n"
	           "  --duration S   seconds per case, half latency, half throughput (default 1)\n"
	           "  --records N    cap on records sent in the throughput phase\n"
	           "  --rate R       paced latency-phase rate (default 100000/s)\n");
}

int uf_bench_ring(int argc, char **argv)
{
	static const struct option lo[] = {{"json", no_argument, 0, 'j'},
	                                   {"duration", required_argument, 0, 'd'},
	                                   {"records", required_argument, 0, 'n'},
	                                   {"rate", required_argument, 0, 'r'},
	                                   {"consumers", required_argument, 0, 'c'},
	                                   {"only", required_argument, 0, 'o'},
	                                   {"no-pin", no_argument, 0, 'P'},
	                                   {"help", no_argument, 0, 'h'},
	                                   {0, 0, 0, 0}};
	struct opts o = {.duration = 1.0,
	                 .rate = 100000,
	                 .pin = 1,
	                 .consumers = {1, 2, 4},
	                 .nconsumers = 3,
	                 .mask = (1u << T_COUNT) - 1};
	struct result rs[T_COUNT * 3];
	int opt, n = 0;
	char *tok, *save;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "jd:n:r:c:o:Ph", lo, NULL)) != -1) {
		switch (opt) {
		case 'j':
			o.json = 1;
			break;
		case 'd':
			if (uf_parse_double(optarg, 0, 60, &o.duration) < 0 || o.duration == 0)
				goto bad;
			break;
		case 'n':
			if (uf_parse_u64(optarg, 0, UINT64_MAX, &o.records) < 0)
				goto bad;
			break;
		case 'r':
			if (uf_parse_u64(optarg, 1, 10000000, &o.rate) < 0)
				goto bad;
			break;
		case 'c':
			o.nconsumers = 0;
			for (tok = strtok_r(optarg, ",", &save); tok && o.nconsumers < 3;
			     tok = strtok_r(NULL, ",", &save)) {
				uint64_t v;
				if (uf_parse_u64(tok, 1, MAXC, &v) < 0)
					goto bad;
				o.consumers[o.nconsumers++] = (int)v;
			}
			if (o.nconsumers == 0)
				goto bad;
			break;
		case 'o':
			o.mask = 0;
			for (tok = strtok_r(optarg, ",", &save); tok;
			     tok = strtok_r(NULL, ",", &save)) {
				if (strcmp(tok, "ring") == 0)
					o.mask |= 1u << T_RING_BUSY | 1u << T_RING_FUTEX;
				else if (strcmp(tok, "zmq") == 0)
					o.mask |= 1u << T_ZMQ;
				else if (strcmp(tok, "uds") == 0)
					o.mask |= 1u << T_UDS;
				else
					goto bad;
			}
			break;
		case 'P':
			o.pin = 0;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	signal(SIGPIPE, SIG_IGN);
	o.ncpu = uf_bench_ncpus();
	for (int t = 0; t < T_COUNT; t++) {
		if (!(o.mask & (1u << t)))
			continue;
		for (int k = 0; k < o.nconsumers; k++) {
			fprintf(stderr, "uf-bench ring: %s %s, %d consumer(s)...\n", t_name[t],
			        t_wait[t], o.consumers[k]);
			run_case((enum transport)t, o.consumers[k], &o, &rs[n++]);
		}
	}
	if (o.json)
		print_json(rs, n, &o);
	else
		print_table(rs, n, &o);
	for (int i = 0; i < n; i++)
		if (!rs[i].ok)
			return 1;
	return 0;

bad:
	fprintf(stderr, "uf-bench ring: bad value: %s\n", optarg);
	usage(stderr);
	return 2;
}
