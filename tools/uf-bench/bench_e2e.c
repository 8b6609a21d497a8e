/* uf-bench e2e: the whole product, wire to consumer, once per receive back end.
 *
 * For each back end (io_uring with SQPOLL, io_uring without, recvmmsg busy-poll, epoll) it
 * starts `uringfeed` on a generated config (own ring, multicast groups, ports and status
 * port), forks consumer processes that read the ring through libufconsumer, and replays a
 * generated day with `uf-replay` on loopback multicast A and B lines, in steps:
 *   warm-up   a short replay, not reported (first touches of the books and the ring);
 *   steady    --rate msg/s, paced evenly: latency and CPU per message;
 *   burst     the same mean rate sent as bursts of --burst x the rate (uf-replay --burst);
 *   search    a bounded search for the highest rate with no loss: doubling from 2 x --rate
 *             until a step loses, then bisecting, --steps replays at most; then the same
 *             for the mean rate with bursts (--burst-steps replays).
 * Every step is a new MoldUDP64 session (the feed resets its books), so steps are independent.
 *
 * Latency = CLOCK_REALTIME when the consumer read the record - record.rx_ts (the kernel's
 * receive timestamp of the datagram), one sample per exchange message (its UF_RECF_LAST
 * record). Loss in a step = any of: the feed's gaps, line gaps, re-requests, unrecovered
 * gaps or messages, queue or CQ overflows (GET /status before and after), a consumer lapped
 * by the ring, reading a UF_REC_GAP record or a feed_seq hole (generated days: every message
 * makes a record), or fewer messages delivered than sent.
 * CPU per message = utime + stime of the uringfeed process over the replay (every thread,
 * the SQPOLL kernel thread included) / messages delivered. Busy-polling back ends burn their
 * CPUs whether or not data arrives, so their CPU per message falls as the rate rises: the
 * figure at the highest loss-free rate is the comparable one.
 *
 * Nothing is tuned to look good: on a machine with fewer CPUs than busy threads the figures
 * show the scheduler, and the table says how many CPUs there were and how loaded. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "e2e.h"
#include "ring/uf_ring.h"
#include "ring/ufconsumer.h"

#define MAXC       4                    /* consumer processes per back end, at most */
#define MAX_SEARCH 12                   /* search steps, at most */
#define NSTEPS     (3 + 2 * MAX_SEARCH) /* warm-up, steady, burst, two searches */
#define ST_WARMUP  0                    /* step index of the warm-up replay */
#define ST_STEADY  1                    /* step index of the steady replay */
#define ST_BURST   2                    /* step index of the bursty replay */
#define ST_SEARCH  3                    /* first search step */
#define NPLOT      160                  /* points per latency distribution plot */
#define MAX_SAMPLE (1u << 23)           /* latency samples per consumer per sampled step, at most */

enum backend { BE_SQPOLL, BE_NOSQPOLL, BE_RECVMMSG, BE_EPOLL, BE_COUNT };
static const char *be_cfg[] = {"io_uring", "io_uring_nosqpoll", "recvmmsg", "epoll"};
static const char *be_label[] = {"io_uring+SQPOLL", "io_uring", "recvmmsg-busy", "epoll"};

/* What one consumer counted in one step (shared memory, written by the consumer). */
struct cstep {
	uint64_t records;     /* records read */
	uint64_t messages;    /* UF_RECF_LAST records read (one per message that made records) */
	uint64_t gap_recs;    /* UF_REC_GAP records read */
	uint64_t lap_lost;    /* records lost to ring laps */
	uint64_t nsamples;    /* latency samples stored */
	uint64_t negative;    /* rx_ts later than the read time (clocks), counted as 0 */
	uint64_t seq_skipped; /* feed_seq numbers the LAST records stepped over */
	uint64_t seq_back;    /* LAST records whose feed_seq went backwards within a session */
};

/* Shared between uf-bench and its consumer processes for one back end. */
struct ctl {
	uint32_t step;                  /* step the records being read belong to */
	uint32_t stop;                  /* consumers leave when set */
	uint32_t ready[MAXC];           /* 1 attached, 2 failed */
	uint32_t attached[MAXC];        /* attachments to a live ring of feed_pid so far */
	int32_t feed_pid;               /* the uringfeed whose ring consumers must read */
	uint64_t position[MAXC];        /* next ring sequence each consumer will read */
	struct cstep res[MAXC][NSTEPS]; /* per consumer, per step */
};

struct opts {
	double duration;     /* seconds per back end (replay time; start-up comes on top) */
	double rate;         /* steady and burst mean rate, msg/s */
	double burst;        /* burst factor */
	double burst_ms;     /* burst period */
	double max_rate;     /* search cap */
	int steps;           /* steady search steps */
	int burst_steps;     /* burst search steps */
	int consumers;       /* consumer processes */
	int json;            /* JSON on stdout instead of the table */
	int plot;            /* gnuplot PNGs */
	int keep;            /* keep the temp dir */
	int feed_cpu;        /* feed thread CPU */
	int sqpoll_cpu;      /* SQPOLL thread CPU */
	uint32_t mask;       /* back ends */
	const char *results; /* results folder */
	const char *day;     /* daily-format input, NULL = generate */
	uint64_t day_msgs;   /* generated day size */
	int generated;       /* the day is uf-gen's (every message makes a record) */
	char bindir[2048];   /* uringfeed, uf-replay, uf-gen */
	char tmp[2048];      /* temp dir */
	int ncpu;            /* CPUs available */
};

/* One replay step's outcome. */
struct step {
	int ran;                 /* 1 when it ran */
	double offered;          /* msg/s asked of uf-replay (mean) */
	double burst;            /* burst factor, 0 = steady */
	uint64_t sent;           /* messages in the replayed file */
	double replay_s;         /* uf-replay's own duration */
	double achieved;         /* sent / replay_s */
	uint64_t delivered;      /* feed messages delta */
	uint64_t cpu_ns;         /* uringfeed CPU over the replay */
	double wall_s;           /* replay wall time as uf-bench saw it */
	double cpu_per_msg;      /* ns */
	double cpu_util;         /* CPUs busy on average */
	struct e2e_status d;     /* counter deltas */
	uint64_t lap_lost;       /* consumers, summed */
	uint64_t gap_recs;       /* consumers, summed */
	uint64_t seq_skipped;    /* consumers, summed: feed_seq numbers with no LAST record */
	uint64_t seq_back;       /* consumers, summed: feed_seq going backwards */
	uint64_t cons_msgs;      /* LAST records, slowest consumer */
	int loss;                /* any loss */
	char why[160];           /* which counters said loss */
	struct uf_bench_pct lat; /* latency (steady/burst only) */
	double plot_x[NPLOT];    /* 1 / (1 - quantile) */
	double plot_us[NPLOT];   /* latency at that quantile */
	int nplot;               /* points */
};

/* One bounded search for the highest loss-free rate. */
struct search {
	struct step st[MAX_SEARCH]; /* steps, in the order run */
	int n;                      /* steps run */
	double max_rate;            /* highest achieved rate of a loss-free step (0: none) */
	int max_idx;                /* its index in st[] (-1: none) */
	double first_loss_rate;     /* lowest offered rate that lost (0: none) */
	int sender_limited;         /* stopped because uf-replay could go no faster */
};

struct beres {
	enum backend be;           /* back end */
	int ok;                    /* ran to the end */
	char note[256];            /* why not, or a remark */
	struct step steady, burst; /* latency steps */
	struct search s[2];        /* rate searches: [0] steady, [1] bursts */
};

/* Everything one back end's run needs. */
struct run {
	const struct opts *o;
	enum backend be;
	char ring[64];           /* ring name */
	uint16_t status_port;    /* HTTP */
	uint16_t port_a, port_b; /* line ports */
	uint16_t port_rr;        /* re-request server (uf-replay) */
	char group_a[32], group_b[32];
	pid_t feed;          /* uringfeed */
	pid_t cons[MAXC];    /* consumers */
	int ncons;           /* started */
	struct ctl *ctl;     /* shared control */
	uint64_t *samples;   /* [consumer][2 sampled steps][cap] */
	uint64_t cap;        /* samples per consumer per sampled step */
	size_t samples_size; /* bytes */
	unsigned session;    /* session counter */
	char log[PATH_MAX];  /* uringfeed's stderr */
};

static volatile sig_atomic_t g_stop;

static void on_signal(int sig)
{
	(void)sig;
	g_stop = 1;
}

static uint64_t realtime_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

/* ---- the day ---------------------------------------------------------------------------- */

struct day {
	const uint8_t *p; /* mapping */
	size_t size;      /* bytes */
	uint64_t n;       /* messages */
};

/* Maps a daily-format file and counts its messages; refuses anything else. */
static int day_open(const char *path, struct day *d, char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat sb;
	size_t off = 0;

	memset(d, 0, sizeof(*d));
	if (fd < 0 || fstat(fd, &sb) < 0 || sb.st_size < 3) {
		snprintf(err, errlen, "%.300s: %s", path, fd < 0 ? strerror(errno) : "too short");
		if (fd >= 0)
			close(fd);
		return -EINVAL;
	}
	d->size = (size_t)sb.st_size;
	d->p = mmap(NULL, d->size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (d->p == MAP_FAILED) {
		snprintf(err, errlen, "%.300s: mmap: %s", path, strerror(errno));
		d->p = NULL;
		return -errno;
	}
	while (off + 2 <= d->size) {
		size_t len = (size_t)d->p[off] << 8 | d->p[off + 1];
		if (len == 0 || off + 2 + len > d->size)
			break;
		off += 2 + len;
		d->n++;
	}
	if (off != d->size || d->n == 0) {
		snprintf(err, errlen,
		         "%.300s: not a Nasdaq daily-format ITCH file (framing breaks at byte %zu)",
		         path, off);
		munmap((void *)d->p, d->size);
		d->p = NULL;
		return -EINVAL;
	}
	return 0;
}

/* Writes the first n messages of the day to `path`: one replay step's input. */
static int day_write_prefix(const struct day *d, uint64_t n, const char *path)
{
	size_t off = 0;
	int fd, rc = 0;

	for (uint64_t i = 0; i < n && off + 2 <= d->size; i++)
		off += 2 + ((size_t)d->p[off] << 8 | d->p[off + 1]);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	for (size_t done = 0; done < off;) {
		ssize_t w = write(fd, d->p + done, off - done);
		if (w < 0) {
			rc = -errno;
			break;
		}
		done += (size_t)w;
	}
	close(fd);
	return rc;
}

/* ---- consumer process ------------------------------------------------------------------- */

/* Attaches to the ring of the current uringfeed (ctl->feed_pid; after a restart the old,
 * closed ring may still be found first), retrying for 15 s. */
static int consumer_attach(struct run *r, int idx, uf_consumer_t **c)
{
	struct ctl *ctl = r->ctl;
	struct uf_consumer_options co;
	uint64_t give_up = uf_bench_now_ns() + 15000000000ull;
	char err[256];
	int rc;

	uf_consumer_options_init(&co);
	co.tag = "uf-bench-e2e";
	for (;;) {
		rc = uf_consumer_attach(r->ring, &co, c, err, sizeof(err));
		if (rc == 0) {
			struct uf_consumer_info info;
			uf_consumer_get_info(*c, &info);
			if (!info.closed && info.producer_pid ==
			                        __atomic_load_n(&ctl->feed_pid, __ATOMIC_ACQUIRE)) {
				__atomic_store_n(&ctl->position[idx], 0, __ATOMIC_RELEASE);
				__atomic_add_fetch(&ctl->attached[idx], 1, __ATOMIC_ACQ_REL);
				return 0;
			}
			uf_consumer_detach(*c);
			*c = NULL;
		} else if (rc != -ENOENT && rc != -ESTALE && rc != -EPROTO) {
			fprintf(stderr, "uf-bench e2e: consumer %d: %s\n", idx, err);
			return rc;
		}
		if (uf_bench_now_ns() > give_up || __atomic_load_n(&ctl->stop, __ATOMIC_ACQUIRE)) {
			fprintf(stderr, "uf-bench e2e: consumer %d: no live ring %s within 15 s\n",
			        idx, r->ring);
			return -ETIMEDOUT;
		}
		sleep_ms(5);
	}
}

static int consumer_main(struct run *r, int idx)
{
	struct ctl *ctl = r->ctl;
	struct uf_record buf[64];
	uf_consumer_t *c = NULL;
	uint64_t deadline = uf_bench_now_ns() + 60000000000ull, last_seq = 0;

	if (consumer_attach(r, idx, &c) < 0) {
		__atomic_store_n(&ctl->ready[idx], 2, __ATOMIC_RELEASE);
		return 1;
	}
	__atomic_store_n(&ctl->ready[idx], 1, __ATOMIC_RELEASE);
	for (;;) {
		uint64_t first = 0;
		int n = uf_consumer_read(c, buf, 64, &first);
		if (n > 0) {
			uint64_t now = realtime_ns();
			uint32_t st = __atomic_load_n(&ctl->step, __ATOMIC_ACQUIRE);
			struct cstep *cs = &ctl->res[idx][st];
			uint64_t *smp = NULL;
			if (st == ST_STEADY || st == ST_BURST)
				smp = r->samples + ((uint64_t)idx * 2 + (st - ST_STEADY)) * r->cap;
			for (int i = 0; i < n; i++) {
				const struct uf_record *rec = &buf[i];
				cs->records++;
				if (rec->kind == UF_REC_GAP)
					cs->gap_recs++;
				if (!(rec->flags & UF_RECF_LAST))
					continue;
				cs->messages++;
				/* One LAST record per message that made records: feed_seq runs 1,
				 * 2, ... within a session unless a message made none (or was lost).
				 */
				if (!(rec->flags & UF_RECF_SNAPSHOT)) {
					if (rec->feed_seq == 1 || last_seq == 0)
						; /* a new session (every step is one) */
					else if (rec->feed_seq > last_seq + 1)
						cs->seq_skipped += rec->feed_seq - last_seq - 1;
					else if (rec->feed_seq <= last_seq)
						cs->seq_back++;
					last_seq = rec->feed_seq;
				}
				if (!smp || rec->rx_ts == 0 || cs->nsamples >= r->cap)
					continue;
				if (now < rec->rx_ts) {
					cs->negative++;
					smp[cs->nsamples++] = 0;
				} else {
					smp[cs->nsamples++] = now - rec->rx_ts;
				}
			}
			__atomic_store_n(&ctl->position[idx], first + (uint64_t)n,
			                 __ATOMIC_RELEASE);
			continue;
		}
		if (n == -EOVERFLOW) {
			struct uf_consumer_lap lap;
			uint32_t st = __atomic_load_n(&ctl->step, __ATOMIC_ACQUIRE);
			uf_consumer_last_lap(c, &lap);
			ctl->res[idx][st].lap_lost += lap.lost;
			continue;
		}
		if (__atomic_load_n(&ctl->stop, __ATOMIC_ACQUIRE) || uf_bench_now_ns() > deadline)
			break;
		if (n == -EPIPE || n == -ESTALE) {
			/* uf-bench restarted the daemon (after a lossy step): follow it */
			uf_consumer_detach(c);
			c = NULL;
			if (consumer_attach(r, idx, &c) < 0)
				return 1;
			continue;
		}
		if (n != -EAGAIN)
			break;
		/* Spins the library's default spin_ns before sleeping on the futex. */
		uf_consumer_wait(c, 2000000);
		deadline = uf_bench_now_ns() + 60000000000ull; /* alive while the daemon is */
	}
	if (c)
		uf_consumer_detach(c);
	return 0;
}

/* ---- daemon ----------------------------------------------------------------------------- */

static int write_config(struct run *r, const char *path)
{
	const struct opts *o = r->o;
	char text[2048], sq[64] = "";

	if (r->be == BE_SQPOLL)
		snprintf(sq, sizeof(sq), ", \"sqpoll_cpu\": %d", o->sqpoll_cpu);
	snprintf(text, sizeof(text),
	         "{\n"
	         "  \"_comment\": \"generated by uf-bench e2e\",\n"
	         "  \"status\": { \"listen\": \"127.0.0.1:%u\" },\n"
	         "  \"log\": { \"level\": \"warn\" },\n"
	         "  \"feeds\": [ {\n"
	         "    \"name\": \"e2e\", \"backend\": \"%s\", \"cpu\": %d%s,\n"
	         "    \"lines\": [\n"
	         "      { \"name\": \"A\", \"group\": \"%s\", \"port\": %u, \"interface\": "
	         "\"127.0.0.1\" },\n"
	         "      { \"name\": \"B\", \"group\": \"%s\", \"port\": %u, \"interface\": "
	         "\"127.0.0.1\" } ],\n"
	         "    \"recovery\": { \"server\": \"127.0.0.1:%u\" },\n"
	         "    \"ring\": { \"name\": \"%s\", \"capacity\": 1048576 },\n"
	         "    \"book\": { \"depth\": 10, \"max_orders\": 4000000 }\n"
	         "  } ]\n"
	         "}\n",
	         r->status_port, be_cfg[r->be], o->feed_cpu, sq, r->group_a, r->port_a, r->group_b,
	         r->port_b, r->port_rr, r->ring);
	return e2e_write_file(path, text);
}

/* The last lines of the daemon's log, for a failure message. */
static void log_tail(const char *path, char *out, size_t outlen)
{
	char buf[4096];
	FILE *f = fopen(path, "r");
	size_t n = 0;
	char *p;

	out[0] = '\0';
	if (!f)
		return;
	if (fseek(f, -(long)(sizeof(buf) - 1), SEEK_END) < 0)
		rewind(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	while (n && buf[n - 1] == '\n')
		buf[--n] = '\0';
	p = strrchr(buf, '\n');
	snprintf(out, outlen, "%.*s", (int)(outlen - 1), p ? p + 1 : buf);
}

static int feed_alive(struct run *r)
{
	int st;
	return r->feed > 0 && waitpid(r->feed, &st, WNOHANG) == 0;
}

/* Starts uringfeed and waits for GET /health = 200. */
static int start_feed(struct run *r, struct beres *res)
{
	char cfg[PATH_MAX], bin[PATH_MAX], tail[200];
	char *argv[4];
	uint64_t give_up;

	snprintf(cfg, sizeof(cfg), "%s/%s.json", r->o->tmp, be_cfg[r->be]);
	snprintf(r->log, sizeof(r->log), "%s/%s.log", r->o->tmp, be_cfg[r->be]);
	snprintf(bin, sizeof(bin), "%s/uringfeed", r->o->bindir);
	if (write_config(r, cfg) < 0) {
		snprintf(res->note, sizeof(res->note), "cannot write %.200s", cfg);
		return -EIO;
	}
	argv[0] = bin;
	argv[1] = "--config";
	argv[2] = cfg;
	argv[3] = NULL;
	r->feed = e2e_spawn(argv, NULL, r->log);
	if (r->ctl)
		__atomic_store_n(&r->ctl->feed_pid, (int32_t)r->feed, __ATOMIC_RELEASE);
	if (r->feed < 0) {
		snprintf(res->note, sizeof(res->note), "cannot start %.200s", bin);
		return -EIO;
	}
	give_up = uf_bench_now_ns() + 20000000000ull;
	while (!g_stop && uf_bench_now_ns() < give_up) {
		char *body = NULL;
		int code;
		if (!feed_alive(r)) {
			r->feed = -1;
			log_tail(r->log, tail, sizeof(tail));
			snprintf(res->note, sizeof(res->note), "uringfeed exited: %.200s", tail);
			return -ECHILD;
		}
		code = e2e_http_get(r->status_port, "/health", 1000, &body);
		free(body);
		if (code == 200)
			return 0;
		sleep_ms(20);
	}
	snprintf(res->note, sizeof(res->note), "uringfeed not healthy within 20 s (log %.180s)",
	         r->log);
	return -ETIMEDOUT;
}

static void stop_feed(struct run *r)
{
	if (r->feed > 0) {
		kill(r->feed, SIGTERM);
		if (uf_bench_wait_child(r->feed, 10000) < 0)
			fprintf(stderr, "uf-bench e2e: uringfeed had to be killed\n");
		r->feed = -1;
	}
}

/* ---- one step --------------------------------------------------------------------------- */

static void add_why(struct step *s, const char *what, uint64_t v)
{
	size_t len = strlen(s->why);
	if (!v)
		return;
	s->loss = 1;
	snprintf(s->why + len, sizeof(s->why) - len, "%s%s=%" PRIu64, len ? " " : "", what, v);
}

/* Fills the plot points of a sorted sample array: latency at quantiles 1 - 10^-x. */
static void plot_points(struct step *s, const uint64_t *v, size_t n)
{
	double xmax = n > 1 ? (double)n : 1;
	s->nplot = 0;
	if (n < 2)
		return;
	for (int k = 0; k < NPLOT; k++) {
		/* x = 1 / (1 - q) from 1 to n, log-spaced */
		double x = exp(log(xmax) * k / (NPLOT - 1));
		double q = 1.0 - 1.0 / x;
		size_t i = (size_t)(q * (double)(n - 1));
		s->plot_x[s->nplot] = x;
		s->plot_us[s->nplot] = (double)v[i] / 1000.0;
		s->nplot++;
	}
}

static int run_step(struct run *r, const struct day *day, int idx, struct step *s, double rate,
                    double burst, double secs)
{
	const struct opts *o = r->o;
	char file[PATH_MAX], out[PATH_MAX], errp[PATH_MAX], bin[PATH_MAX];
	char rate_s[32], burst_s[32], bper_s[32], a[48], b[48], rr[16], sess[16];
	struct e2e_status s0, s1;
	uint64_t c0 = 0, c1 = 0, t0, t1, n;
	char *argv[24];
	int argc = 0, st, rc;
	pid_t pid;

	memset(s, 0, sizeof(*s));
	s->offered = rate;
	s->burst = burst;
	n = (uint64_t)(rate * secs);
	if (n < 2000)
		n = 2000;
	if (n > day->n)
		n = day->n;
	snprintf(file, sizeof(file), "%s/step.itch", o->tmp);
	snprintf(out, sizeof(out), "%s/replay.json", o->tmp);
	snprintf(errp, sizeof(errp), "%s/replay.err", o->tmp);
	snprintf(bin, sizeof(bin), "%s/uf-replay", o->bindir);
	if ((rc = day_write_prefix(day, n, file)) < 0)
		return rc;
	s->sent = n;
	snprintf(rate_s, sizeof(rate_s), "%.0f", rate);
	snprintf(burst_s, sizeof(burst_s), "%g", burst);
	snprintf(bper_s, sizeof(bper_s), "%g", o->burst_ms);
	snprintf(a, sizeof(a), "%s:%u", r->group_a, r->port_a);
	snprintf(b, sizeof(b), "%s:%u", r->group_b, r->port_b);
	snprintf(rr, sizeof(rr), "%u", r->port_rr);
	snprintf(sess, sizeof(sess), "E2E%07u", ++r->session % 10000000u);
	argv[argc++] = bin;
	argv[argc++] = "--in";
	argv[argc++] = file;
	argv[argc++] = "--a";
	argv[argc++] = a;
	argv[argc++] = "--b";
	argv[argc++] = b;
	argv[argc++] = "--interface";
	argv[argc++] = "127.0.0.1";
	argv[argc++] = "--session";
	argv[argc++] = sess;
	argv[argc++] = "--rate";
	argv[argc++] = rate_s;
	argv[argc++] = "--serve-rerequests";
	argv[argc++] = rr;
	if (burst > 1) {
		argv[argc++] = "--burst";
		argv[argc++] = burst_s;
		argv[argc++] = "--burst-period";
		argv[argc++] = bper_s;
	}
	argv[argc] = NULL;

	if ((rc = e2e_status_read(r->status_port, &s0)) < 0)
		return rc;
	__atomic_store_n(&r->ctl->step, (uint32_t)idx, __ATOMIC_RELEASE);
	if (e2e_proc_cpu_ns(r->feed, &c0) < 0)
		return -ECHILD;
	t0 = uf_bench_now_ns();
	pid = e2e_spawn(argv, out, errp);
	if (pid < 0)
		return pid;
	st = uf_bench_wait_child(pid, (int)(secs * 4000) + 15000);
	t1 = uf_bench_now_ns();
	if (e2e_proc_cpu_ns(r->feed, &c1) < 0)
		return -ECHILD;
	if (st < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "uf-bench e2e: uf-replay failed (see %s)\n", errp);
		return -EIO;
	}
	{
		json_error_t jerr;
		json_t *j = json_load_file(out, 0, &jerr);
		s->replay_s = json_real_value(json_object_get(j, "seconds"));
		if (json_is_integer(json_object_get(j, "seconds")))
			s->replay_s = (double)json_integer_value(json_object_get(j, "seconds"));
		json_decref(j);
	}
	if (s->replay_s <= 0)
		s->replay_s = (double)(t1 - t0) / 1e9;
	s->achieved = (double)n / s->replay_s;
	if (burst > 1) { /* the mean over whole periods: the last burst ends early */
		double per = o->burst_ms / 1e3;
		s->achieved = (double)n / (ceil(s->replay_s / per - 1e-6) * per);
	}
	s->wall_s = (double)(t1 - t0) / 1e9;
	s->cpu_ns = c1 - c0;

	/* Drain: every message in and every consumer at the ring's tail, 3 s at most. */
	for (uint64_t give_up = uf_bench_now_ns() + 3000000000ull;;) {
		int done = 1;
		if ((rc = e2e_status_read(r->status_port, &s1)) < 0)
			return rc;
		if (s1.messages - s0.messages +
		        (s1.messages_unrecovered - s0.messages_unrecovered) <
		    n)
			done = 0;
		for (int i = 0; i < r->ncons && done; i++)
			if (__atomic_load_n(&r->ctl->position[i], __ATOMIC_ACQUIRE) <
			    s1.ring_sequence)
				done = 0;
		if (done || uf_bench_now_ns() > give_up || g_stop)
			break;
		sleep_ms(5);
	}
	s->delivered = s1.messages - s0.messages;
#define D(f) s->d.f = s1.f - s0.f
	D(messages);
	D(gaps);
	D(rerequests);
	D(gaps_unrecovered);
	D(messages_unrecovered);
	D(queue_overflows);
	D(line_gaps);
	D(line_enobufs);
	D(cq_overflows);
	D(end_of_session);
	D(records);
#undef D
	s->cons_msgs = UINT64_MAX;
	for (int i = 0; i < r->ncons; i++) {
		const struct cstep *cs = &r->ctl->res[i][idx];
		s->lap_lost += cs->lap_lost;
		s->gap_recs += cs->gap_recs;
		s->seq_skipped += cs->seq_skipped;
		s->seq_back += cs->seq_back;
		if (cs->messages < s->cons_msgs)
			s->cons_msgs = cs->messages;
	}
	if (r->ncons == 0)
		s->cons_msgs = 0;
	add_why(s, "gaps", s->d.gaps);
	add_why(s, "line_gaps", s->d.line_gaps);
	add_why(s, "rerequests", s->d.rerequests);
	add_why(s, "unrecovered", s->d.messages_unrecovered);
	add_why(s, "queue_overflows", s->d.queue_overflows);
	add_why(s, "cq_overflows", s->d.cq_overflows);
	add_why(s, "consumer_lapped", s->lap_lost);
	add_why(s, "gap_records", s->gap_recs);
	/* Every message of a generated day makes at least one record, so a feed_seq the
	 * consumer never saw is a hole; a real day may have messages that make none. */
	if (o->generated)
		add_why(s, "seq_holes", s->seq_skipped);
	add_why(s, "seq_backwards", s->seq_back);
	add_why(s, "undelivered", s->delivered < n ? n - s->delivered : 0);
	s->cpu_per_msg = s->delivered ? (double)s->cpu_ns / (double)s->delivered : 0;
	s->cpu_util = s->wall_s > 0 ? (double)s->cpu_ns / 1e9 / s->wall_s : 0;
	s->ran = 1;
	return 0;
}

/* Merges the consumers' samples of a sampled step, computes percentiles and plot points. */
static void step_latency(struct run *r, int idx, struct step *s)
{
	uint64_t total = 0, nall = 0, *all;
	int k = idx - ST_STEADY;

	for (int i = 0; i < r->ncons; i++)
		total += r->ctl->res[i][idx].nsamples;
	all = malloc((total ? total : 1) * sizeof(uint64_t));
	if (!all)
		return;
	for (int i = 0; i < r->ncons; i++) {
		uint64_t ns = r->ctl->res[i][idx].nsamples;
		memcpy(all + nall, r->samples + ((uint64_t)i * 2 + (uint64_t)k) * r->cap,
		       ns * sizeof(uint64_t));
		nall += ns;
	}
	uf_bench_percentiles(all, nall, &s->lat);
	plot_points(s, all, nall);
	free(all);
}

/* ---- one back end ----------------------------------------------------------------------- */

/* Says why a step could not run, with the daemon's last log line when it died. */
static void step_failed(struct run *r, struct beres *res, const char *what)
{
	char tail[200];

	if (r->feed > 0 && !feed_alive(r)) {
		r->feed = -1;
		log_tail(r->log, tail, sizeof(tail));
		snprintf(res->note, sizeof(res->note), "%s: uringfeed exited: %.180s", what, tail);
	} else {
		snprintf(res->note, sizeof(res->note), "%s (uringfeed log: %.150s)", what, r->log);
	}
}

/* Waits until every consumer has attached `want[i]` times. */
static int wait_attached(struct run *r, const uint32_t *want, struct beres *res)
{
	for (uint64_t give_up = uf_bench_now_ns() + 20000000000ull;;) {
		int ready = 0;
		for (int i = 0; i < r->ncons; i++) {
			if (__atomic_load_n(&r->ctl->ready[i], __ATOMIC_ACQUIRE) == 2) {
				snprintf(res->note, sizeof(res->note),
				         "a consumer could not attach");
				return -EIO;
			}
			ready += __atomic_load_n(&r->ctl->attached[i], __ATOMIC_ACQUIRE) >= want[i];
		}
		if (ready == r->ncons)
			return 0;
		if (uf_bench_now_ns() > give_up || g_stop) {
			snprintf(res->note, sizeof(res->note),
			         "consumers not attached within 20 s");
			return -ETIMEDOUT;
		}
		sleep_ms(5);
	}
}

/* A lossy step leaves the feed recovering a gap (its re-request server, uf-replay, is gone)
 * and would charge the give-up to the next step: start a fresh daemon instead, so every step
 * is measured on its own. Consumers follow it to the new ring. */
static int restart_feed(struct run *r, const struct day *day, struct beres *res)
{
	uint32_t want[MAXC];
	struct step warm;
	int port = e2e_free_port(SOCK_STREAM);

	for (int i = 0; i < r->ncons; i++)
		want[i] = __atomic_load_n(&r->ctl->attached[i], __ATOMIC_ACQUIRE) + 1;
	stop_feed(r);
	uf_ring_unlink(r->ring, NULL);
	if (port < 0) {
		snprintf(res->note, sizeof(res->note), "no free TCP port for the status endpoint");
		return port;
	}
	r->status_port = (uint16_t)port;
	if (start_feed(r, res) < 0 || wait_attached(r, want, res) < 0)
		return -EIO;
	return run_step(r, day, ST_WARMUP, &warm, r->o->rate, 0, 0.2);
}

/* Rate search `which` (0 steady, 1 bursts of `burst` x the mean): double from 2 x --rate
 * until a step loses (or uf-replay cannot go faster, or the cap), then bisect between the
 * best loss-free rate and the lowest lossy one; --steps (--burst-steps) replays at most. */
static int run_search(struct run *r, const struct day *day, struct beres *res, int which,
                      double burst, double secs)
{
	const struct opts *o = r->o;
	struct search *sr = &res->s[which];
	int steps = which ? o->burst_steps : o->steps;
	double rate = o->rate * 2, lo = 0, hi = 0, cap = o->max_rate;

	for (int k = 0; k < steps && k < MAX_SEARCH && !g_stop; k++) {
		struct step *s = &sr->st[sr->n];
		fprintf(stderr, "uf-bench e2e: %s: %s search %d/%d at %.0f msg/s...\n",
		        be_label[r->be], which ? "burst" : "steady", k + 1, steps, rate);
		if (run_step(r, day, ST_SEARCH + which * MAX_SEARCH + k, s, rate, burst, secs) <
		    0) {
			char what[80];
			snprintf(what, sizeof(what), "%s search step at %.0f msg/s failed",
			         which ? "burst" : "steady", rate);
			step_failed(r, res, what);
			return -EIO;
		}
		sr->n++;
		if (s->loss && restart_feed(r, day, res) < 0)
			return -EIO;
		if (!s->loss) {
			if (s->achieved > lo) {
				lo = s->achieved;
				sr->max_idx = sr->n - 1;
			}
			if (s->achieved < 0.9 * rate) { /* the sender is the limit */
				sr->sender_limited = 1;
				break;
			}
			if (hi == 0 && rate >= cap)
				break;
			rate = hi == 0 ? rate * 2 : (rate + hi) / 2;
			if (rate > cap)
				rate = cap;
		} else {
			if (hi == 0 || rate < hi)
				hi = rate;
			rate = lo > 0 ? (lo + hi) / 2 : hi / 4;
		}
		if ((hi > 0 && lo > 0 && hi - lo < 0.05 * hi) || rate < 1000)
			break;
	}
	sr->max_rate = lo;
	sr->first_loss_rate = hi;
	return 0;
}

static void run_backend(const struct opts *o, enum backend be, const struct day *day,
                        struct beres *res)
{
	struct run r = {.o = o, .be = be, .feed = -1};
	int tp = e2e_free_port(SOCK_STREAM), pa = e2e_free_port(SOCK_DGRAM);
	int pb = e2e_free_port(SOCK_DGRAM), prr = e2e_free_port(SOCK_DGRAM);
	double per_search, per_burst, t_lat;

	memset(res, 0, sizeof(*res));
	res->be = be;
	res->s[0].max_idx = res->s[1].max_idx = -1;
	if (tp < 0 || pa < 0 || pb < 0 || prr < 0 || pa == pb || pa == prr || pb == prr) {
		snprintf(res->note, sizeof(res->note), "no free ports on 127.0.0.1");
		return;
	}
	r.status_port = (uint16_t)tp;
	r.port_a = (uint16_t)pa;
	r.port_b = (uint16_t)pb;
	r.port_rr = (uint16_t)prr;
	snprintf(r.group_a, sizeof(r.group_a), "239.88.%d.%d", (int)(getpid() % 250),
	         1 + 2 * (int)be);
	snprintf(r.group_b, sizeof(r.group_b), "239.88.%d.%d", (int)(getpid() % 250),
	         2 + 2 * (int)be);
	snprintf(r.ring, sizeof(r.ring), "ufbench-e2e-%d-%d", (int)getpid(), (int)be); /* <= 31 */

	/* --duration: 25 % steady, 25 % bursts, 30 % steady search, 20 % burst search */
	t_lat = o->duration * 0.25;
	per_search = o->duration * 0.3 / o->steps;
	if (per_search < 0.25)
		per_search = 0.25;
	per_burst = o->duration * 0.2 / o->burst_steps;
	if (per_burst < 5 * o->burst_ms / 1e3) /* several burst periods per step */
		per_burst = 5 * o->burst_ms / 1e3;
	r.cap = (uint64_t)(o->rate * t_lat * 1.5) + 10000;
	if (r.cap > MAX_SAMPLE)
		r.cap = MAX_SAMPLE;
	r.samples_size = (size_t)r.cap * 2 * (size_t)o->consumers * sizeof(uint64_t);
	r.ctl = uf_bench_shared_alloc(sizeof(*r.ctl));
	r.samples = uf_bench_shared_alloc(r.samples_size);
	if (!r.ctl || !r.samples) {
		snprintf(res->note, sizeof(res->note), "out of memory for %zu bytes of samples",
		         r.samples_size);
		goto out_free;
	}
	if (start_feed(&r, res) < 0)
		goto out_stop;
	for (int i = 0; i < o->consumers; i++) {
		pid_t pid = fork();
		if (pid < 0)
			break;
		if (pid == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			_exit(consumer_main(&r, i));
		}
		r.cons[r.ncons++] = pid;
	}
	if (r.ncons < o->consumers) {
		snprintf(res->note, sizeof(res->note), "cannot fork consumers");
		goto out_stop;
	}
	{
		const uint32_t want[MAXC] = {1, 1, 1, 1};
		if (wait_attached(&r, want, res) < 0)
			goto out_stop;
	}
	{
		struct step warm;
		fprintf(stderr, "uf-bench e2e: %s: warm-up, steady %.0f msg/s, burst %gx...\n",
		        be_label[be], o->rate, o->burst);
		if (run_step(&r, day, ST_WARMUP, &warm, o->rate, 0, 0.2) < 0 ||
		    run_step(&r, day, ST_STEADY, &res->steady, o->rate, 0, t_lat) < 0 ||
		    run_step(&r, day, ST_BURST, &res->burst, o->rate, o->burst, t_lat) < 0) {
			step_failed(&r, res, "a latency step failed");
			goto out_stop;
		}
	}
	if (run_search(&r, day, res, 0, 0, per_search) < 0 ||
	    run_search(&r, day, res, 1, o->burst, per_burst) < 0)
		goto out_stop;
	step_latency(&r, ST_STEADY, &res->steady);
	step_latency(&r, ST_BURST, &res->burst);
	res->ok = !g_stop;
	if (g_stop)
		snprintf(res->note, sizeof(res->note), "interrupted");

out_stop:
	if (r.ctl)
		__atomic_store_n(&r.ctl->stop, 1, __ATOMIC_RELEASE);
	stop_feed(&r);
	for (int i = 0; i < r.ncons; i++)
		if (uf_bench_wait_child(r.cons[i], 5000) < 0)
			fprintf(stderr, "uf-bench e2e: a consumer had to be killed\n");
	uf_ring_unlink(r.ring, NULL);
out_free:
	uf_bench_shared_free(r.samples, r.samples_size);
	uf_bench_shared_free(r.ctl, sizeof(*r.ctl));
}

/* ---- output ----------------------------------------------------------------------------- */

struct machine {
	char cpu[128];     /* lscpu model name */
	char kernel[128];  /* uname -r */
	int ncpu;          /* CPUs usable */
	double load_start; /* 1-minute load average before */
	double load_end;   /* and after */
};

static void machine_info(struct machine *m)
{
	char line[256];
	struct utsname u;
	FILE *f = fopen("/proc/cpuinfo", "r");

	snprintf(m->cpu, sizeof(m->cpu), "unknown CPU");
	while (f && fgets(line, sizeof(line), f)) {
		char *p = strchr(line, ':');
		if (strncmp(line, "model name", 10) == 0 && p) {
			p += 2;
			p[strcspn(p, "\n")] = '\0';
			snprintf(m->cpu, sizeof(m->cpu), "%s", p);
			break;
		}
	}
	if (f)
		fclose(f);
	snprintf(m->kernel, sizeof(m->kernel), "%s", uname(&u) == 0 ? u.release : "unknown");
	m->ncpu = uf_bench_ncpus();
}

static const struct beres *find_be(const struct beres *rs, int n, enum backend be)
{
	for (int i = 0; i < n; i++)
		if (rs[i].be == be && rs[i].ok)
			return &rs[i];
	return NULL;
}

static double cpu_at_max(const struct search *sr)
{
	return sr->max_idx >= 0 ? sr->st[sr->max_idx].cpu_per_msg : 0;
}

/* The aims, as ratios of this run's figures (0 when a side did not run). */
struct ratios {
	double sq_vs_mmsg_rate; /* SQPOLL max rate / recvmmsg max rate (aim >= 1) */
	double sq_vs_mmsg_cpu;  /* SQPOLL CPU/msg / recvmmsg CPU/msg at their max rates (aim < 1) */
	double epoll_vs_sq_p99; /* epoll burst p99 / SQPOLL burst p99 (aim >= 5) */
	double epoll_vs_nosq_p99;     /* epoll burst p99 / io_uring (no SQPOLL) burst p99 */
	double epoll_vs_mmsg_p99;     /* epoll burst p99 / recvmmsg burst p99 */
	double sq_vs_mmsg_burst_rate; /* the same as sq_vs_mmsg_rate for the burst search */
};

static double ratio(double a, double b)
{
	return a > 0 && b > 0 ? a / b : 0;
}

static void compute_ratios(const struct beres *rs, int n, struct ratios *q)
{
	const struct beres *sq = find_be(rs, n, BE_SQPOLL), *mm = find_be(rs, n, BE_RECVMMSG);
	const struct beres *ep = find_be(rs, n, BE_EPOLL), *ns = find_be(rs, n, BE_NOSQPOLL);

	memset(q, 0, sizeof(*q));
	if (sq && mm) {
		q->sq_vs_mmsg_rate = ratio(sq->s[0].max_rate, mm->s[0].max_rate);
		q->sq_vs_mmsg_cpu = ratio(cpu_at_max(&sq->s[0]), cpu_at_max(&mm->s[0]));
		q->sq_vs_mmsg_burst_rate = ratio(sq->s[1].max_rate, mm->s[1].max_rate);
	}
	if (ep && sq)
		q->epoll_vs_sq_p99 = ratio((double)ep->burst.lat.p99, (double)sq->burst.lat.p99);
	if (ep && ns)
		q->epoll_vs_nosq_p99 = ratio((double)ep->burst.lat.p99, (double)ns->burst.lat.p99);
	if (ep && mm)
		q->epoll_vs_mmsg_p99 = ratio((double)ep->burst.lat.p99, (double)mm->burst.lat.p99);
}

static void print_lat_row(const char *label, const char *what, const struct step *s)
{
	printf("%-16s %-22s %9.0f %9.1f %9.1f %9.1f %9.1f %9" PRIu64 " %10.0f %5.0f%%  %s\n", label,
	       what, s->achieved, (double)s->lat.p50 / 1e3, (double)s->lat.p99 / 1e3,
	       (double)s->lat.p999 / 1e3, (double)s->lat.max / 1e3, s->lat.n, s->cpu_per_msg,
	       s->cpu_util * 100, s->loss ? s->why : "none");
}

static void print_table(const struct beres *rs, int n, const struct opts *o,
                        const struct machine *m, const struct ratios *q)
{
	char what[64];

	printf("uf-bench e2e: uf-replay -> uringfeed -> %d consumer(s), loopback multicast A+B\n"
	       "machine: %s, kernel %s, %d CPUs, load average %.2f before, %.2f after "
	       "(shared machine: figures are noisy)\n"
	       "latency = consumer read (CLOCK_REALTIME) - kernel receive timestamp, one sample "
	       "per message; cpu = uringfeed utime+stime (all threads) / message\n\n",
	       o->consumers, m->cpu, m->kernel, m->ncpu, m->load_start, m->load_end);
	printf("%-16s %-22s %9s %9s %9s %9s %9s %9s %10s %6s  %s\n", "backend", "case", "msg/s",
	       "p50_us", "p99_us", "p99.9_us", "max_us", "samples", "cpu_ns/msg", "cpu", "loss");
	for (int i = 0; i < n; i++) {
		const struct beres *b = &rs[i];
		if (!b->ok) {
			printf("%-16s did not run: %s\n", be_label[b->be], b->note);
			continue;
		}
		snprintf(what, sizeof(what), "steady");
		print_lat_row(be_label[b->be], what, &b->steady);
		snprintf(what, sizeof(what), "bursts %gx/%gms", o->burst, o->burst_ms);
		print_lat_row(be_label[b->be], what, &b->burst);
	}
	printf("\nhighest rate with no loss (mean msg/s; bursts: %gx the mean for %g ms of every "
	       "%g ms)\n",
	       o->burst, o->burst_ms / o->burst, o->burst_ms);
	printf("%-16s %-7s %13s %14s %6s  %-14s %s\n", "backend", "pattern", "max_no_loss/s",
	       "cpu_ns/msg@max", "cpu", "first_lossy/s", "search (offered msg/s: loss)");
	for (int i = 0; i < n; i++) {
		const struct beres *b = &rs[i];
		for (int w = 0; w < 2 && b->ok; w++) {
			const struct search *sr = &b->s[w];
			char fl[24] = "none";
			if (sr->first_loss_rate > 0)
				snprintf(fl, sizeof(fl), "%.0f", sr->first_loss_rate);
			printf("%-16s %-7s %13.0f %14.0f %5.0f%%  %-14s ", be_label[b->be],
			       w ? "bursts" : "steady", sr->max_rate, cpu_at_max(sr),
			       sr->max_idx >= 0 ? sr->st[sr->max_idx].cpu_util * 100 : 0, fl);
			for (int k = 0; k < sr->n; k++)
				printf("%s%.0f:%s", k ? ", " : "", sr->st[k].offered,
				       sr->st[k].loss ? sr->st[k].why : "ok");
			if (sr->sender_limited)
				printf(
				    "  (uf-replay reached %.0f of %.0f offered: the sender, on the "
				    "same CPUs, was the limit)",
				    sr->st[sr->n - 1].achieved, sr->st[sr->n - 1].offered);
			printf("\n");
		}
	}
	printf("\naims (issue 8), as measured in this run:\n");
	if (q->sq_vs_mmsg_rate > 0)
		printf("  SQPOLL max rate / recvmmsg max rate = %.3f (aim >= 1: %s)\n",
		       q->sq_vs_mmsg_rate, q->sq_vs_mmsg_rate >= 1 ? "met" : "NOT met");
	if (q->sq_vs_mmsg_cpu > 0)
		printf("  SQPOLL cpu/msg / recvmmsg cpu/msg at their max rates = %.3f (aim < 1: "
		       "%s)\n",
		       q->sq_vs_mmsg_cpu, q->sq_vs_mmsg_cpu < 1 ? "met" : "NOT met");
	if (q->epoll_vs_sq_p99 > 0)
		printf("  epoll burst p99 / SQPOLL burst p99 = %.3f (aim >= 5: %s)\n",
		       q->epoll_vs_sq_p99, q->epoll_vs_sq_p99 >= 5 ? "met" : "NOT met");
	if (q->epoll_vs_nosq_p99 > 0)
		printf("  epoll burst p99 / io_uring (no SQPOLL) burst p99 = %.2f\n",
		       q->epoll_vs_nosq_p99);
	if (q->epoll_vs_mmsg_p99 > 0)
		printf("  epoll burst p99 / recvmmsg burst p99 = %.2f\n", q->epoll_vs_mmsg_p99);
	if (q->sq_vs_mmsg_burst_rate > 0)
		printf("  SQPOLL / recvmmsg highest loss-free mean rate under bursts = %.2f\n",
		       q->sq_vs_mmsg_burst_rate);
	if (q->sq_vs_mmsg_rate == 0 && q->epoll_vs_sq_p99 == 0)
		printf("  (needs io_uring with recvmmsg or epoll in the same run)\n");
	if (o->ncpu < 4)
		printf("note: %d CPUs for the feed thread%s, uf-replay and the consumer(s): busy "
		       "pollers share cores with them, which is what these figures show\n",
		       o->ncpu, find_be(rs, n, BE_SQPOLL) ? ", the SQPOLL thread" : "");
}

static json_t *step_json(const struct step *s, int sampled)
{
	json_t *j =
	    json_pack("{s:f, s:f, s:I, s:f, s:f, s:I, s:I, s:f, s:f, s:b, s:s}", "offered_rate",
	              s->offered, "burst_factor", s->burst, "messages", (json_int_t)s->sent,
	              "replay_s", s->replay_s, "achieved_rate", s->achieved, "delivered",
	              (json_int_t)s->delivered, "cpu_ns", (json_int_t)s->cpu_ns, "cpu_ns_per_msg",
	              s->cpu_per_msg, "cpu_util", s->cpu_util, "loss", s->loss, "loss_why", s->why);
	json_object_set_new(
	    j, "counters",
	    json_pack(
	        "{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "gaps", (json_int_t)s->d.gaps,
	        "line_gaps", (json_int_t)s->d.line_gaps, "rerequests", (json_int_t)s->d.rerequests,
	        "gaps_unrecovered", (json_int_t)s->d.gaps_unrecovered, "messages_unrecovered",
	        (json_int_t)s->d.messages_unrecovered, "queue_overflows",
	        (json_int_t)s->d.queue_overflows, "cq_overflows", (json_int_t)s->d.cq_overflows,
	        "line_enobufs", (json_int_t)s->d.line_enobufs, "consumer_lap_lost",
	        (json_int_t)s->lap_lost, "consumer_gap_records", (json_int_t)s->gap_recs));
	json_object_set_new(json_object_get(j, "counters"), "consumer_messages",
	                    json_integer((json_int_t)s->cons_msgs));
	json_object_set_new(json_object_get(j, "counters"), "consumer_seq_skipped",
	                    json_integer((json_int_t)s->seq_skipped));
	json_object_set_new(json_object_get(j, "counters"), "consumer_seq_backwards",
	                    json_integer((json_int_t)s->seq_back));
	if (sampled)
		json_object_set_new(
		    j, "latency_ns",
		    json_pack("{s:I, s:I, s:I, s:I, s:I}", "samples", (json_int_t)s->lat.n, "p50",
		              (json_int_t)s->lat.p50, "p99", (json_int_t)s->lat.p99, "p999",
		              (json_int_t)s->lat.p999, "max", (json_int_t)s->lat.max));
	return j;
}

static json_t *results_json(const struct beres *rs, int n, const struct opts *o,
                            const struct machine *m, const struct ratios *q, json_t *plots)
{
	json_t *root = json_object(), *bes = json_array();

	json_object_set_new(root, "bench", json_string("e2e"));
	json_object_set_new(root, "machine",
	                    json_pack("{s:s, s:s, s:i, s:f, s:f}", "cpu", m->cpu, "kernel",
	                              m->kernel, "cpus", m->ncpu, "loadavg_start", m->load_start,
	                              "loadavg_end", m->load_end));
	json_object_set_new(root, "params",
	                    json_pack("{s:f, s:f, s:f, s:f, s:f, s:i, s:i, s:i, s:i, s:i}",
	                              "duration_s", o->duration, "rate", o->rate, "burst_factor",
	                              o->burst, "burst_period_ms", o->burst_ms, "max_rate",
	                              o->max_rate, "search_steps", o->steps, "burst_search_steps",
	                              o->burst_steps, "consumers", o->consumers, "feed_cpu",
	                              o->feed_cpu, "sqpoll_cpu", o->sqpoll_cpu));
	for (int i = 0; i < n; i++) {
		const struct beres *b = &rs[i];
		json_t *jb = json_pack("{s:s, s:s, s:b, s:s}", "backend", be_cfg[b->be], "label",
		                       be_label[b->be], "ok", b->ok, "note", b->note);
		if (b->ok) {
			json_object_set_new(jb, "steady", step_json(&b->steady, 1));
			json_object_set_new(jb, "burst", step_json(&b->burst, 1));
			for (int w = 0; w < 2; w++) {
				const struct search *sr = &b->s[w];
				json_t *srch = json_array(), *dst = w ? json_object() : jb;
				json_object_set_new(dst, "max_rate_no_loss",
				                    json_real(sr->max_rate));
				json_object_set_new(dst, "cpu_ns_per_msg_at_max",
				                    json_real(cpu_at_max(sr)));
				json_object_set_new(dst, "first_loss_rate",
				                    json_real(sr->first_loss_rate));
				json_object_set_new(dst, "sender_limited",
				                    json_boolean(sr->sender_limited));
				for (int k = 0; k < sr->n; k++)
					json_array_append_new(srch, step_json(&sr->st[k], 0));
				json_object_set_new(dst, "search", srch);
				if (w) /* the steady search's keys sit on the back end itself */
					json_object_set_new(jb, "burst_search", dst);
			}
		}
		json_array_append_new(bes, jb);
	}
	json_object_set_new(root, "backends", bes);
	json_object_set_new(root, "ratios",
	                    json_pack("{s:f, s:f, s:f, s:f, s:f, s:f}",
	                              "sqpoll_vs_recvmmsg_burst_max_rate", q->sq_vs_mmsg_burst_rate,
	                              "sqpoll_vs_recvmmsg_max_rate", q->sq_vs_mmsg_rate,
	                              "sqpoll_vs_recvmmsg_cpu_per_msg", q->sq_vs_mmsg_cpu,
	                              "epoll_vs_sqpoll_burst_p99", q->epoll_vs_sq_p99,
	                              "epoll_vs_nosqpoll_burst_p99", q->epoll_vs_nosq_p99,
	                              "epoll_vs_recvmmsg_burst_p99", q->epoll_vs_mmsg_p99));
	json_object_set_new(root, "plots", plots);
	return root;
}

/* Data files and one gnuplot script; returns the PNGs made (names relative to results). */
static json_t *make_plots(const struct beres *rs, int n, const struct opts *o,
                          const struct machine *m)
{
	static const char *phase[] = {"steady", "burst"};
	json_t *made = json_array();
	char path[PATH_MAX], gp[8192];
	size_t len = 0;
	int any = 0;

	len += (size_t)snprintf(gp + len, sizeof(gp) - len,
	                        "# generated by uf-bench e2e: latency distribution per back end\n"
	                        "set terminal pngcairo noenhanced size 960,600 font 'sans,10'\n"
	                        "set logscale xy\nset grid\nset key left top\n"
	                        "set xlabel 'percentile'\nset ylabel 'wire to consumer (us)'\n"
	                        "set xtics ('0%%%%' 1, '50%%%%' 2, '90%%%%' 10, '99%%%%' 100, "
	                        "'99.9%%%%' 1000, '99.99%%%%' "
	                        "10000, '99.999%%%%' 100000)\n");
	for (int p = 0; p < 2; p++) {
		int first = 1;
		len += (size_t)snprintf(gp + len, sizeof(gp) - len,
		                        "set output 'e2e_latency_%s.png'\n"
		                        "set title \"%s: %s, %.0f msg/s mean%s (%s, %d CPUs, "
		                        "load %.1f)\"\n",
		                        phase[p], "uf-bench e2e", phase[p], o->rate,
		                        p ? ", bursts of 10x" : "", m->cpu, m->ncpu, m->load_end);
		for (int i = 0; i < n; i++) {
			const struct step *s = p ? &rs[i].burst : &rs[i].steady;
			FILE *f;
			if (!rs[i].ok || s->nplot == 0)
				continue;
			snprintf(path, sizeof(path), "%s/e2e_%s_%s.dat", o->results,
			         be_cfg[rs[i].be], phase[p]);
			f = fopen(path, "w");
			if (!f)
				continue;
			fprintf(f, "# 1/(1-q) latency_us (%s, %s)\n", be_label[rs[i].be], phase[p]);
			for (int k = 0; k < s->nplot; k++)
				fprintf(f, "%.4f %.3f\n", s->plot_x[k], s->plot_us[k]);
			fclose(f);
			len +=
			    (size_t)snprintf(gp + len, sizeof(gp) - len,
			                     "%s 'e2e_%s_%s.dat' using 1:2 with lines lw 2 title "
			                     "'%s'",
			                     first ? "plot" : ", \\\n    ", be_cfg[rs[i].be],
			                     phase[p], be_label[rs[i].be]);
			first = 0;
			any = 1;
		}
		if (!first) {
			len += (size_t)snprintf(gp + len, sizeof(gp) - len, "\n");
			snprintf(path, sizeof(path), "e2e_latency_%s.png", phase[p]);
			json_array_append_new(made, json_string(path));
		}
	}
	if (!any)
		return made;
	snprintf(path, sizeof(path), "%s/e2e_latency.gp", o->results);
	if (e2e_write_file(path, gp) < 0 || e2e_gnuplot(o->results, "e2e_latency.gp", 30000)) {
		json_array_clear(made);
		return made;
	}
	return made;
}

/* ---- command ---------------------------------------------------------------------------- */

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: uf-bench e2e [--json] [--duration S] [--backends LIST] [--results DIR]\n"
	        "                    [--rate MSG_PER_S] [--burst F] [--burst-period MS]\n"
	        "                    [--max-rate MSG_PER_S] [--steps N] [--burst-steps N]\n"
	        "                    [--consumers N]\n"
	        "                    [--day FILE | --day-messages N] [--feed-cpu C] "
	        "[--sqpoll-cpu C]\n"
	        "                    [--bin-dir DIR] [--no-plot] [--keep]\n"
	        "  --duration S     replay seconds per back end (default 10; 3 is a quick look)\n"
	        "  --backends LIST  io_uring (SQPOLL), io_uring_nosqpoll, recvmmsg, epoll "
	        "(default all)\n"
	        "  --results DIR    JSON, plot data and PNGs (default ./results)\n"
	        "  --rate R         steady and burst mean rate (default 100000)\n"
	        "  --burst F        burst factor of the bursty step (default 10)\n"
	        "  --burst-period MS  one burst per period (default 100)\n"
	        "  --max-rate R     rate search cap, mean rate (default 3200000)\n"
	        "  --steps N        steady rate search replays (default 6, max %d)\n"
	        "  --burst-steps N  burst rate search replays (default 4)\n"
	        "  --consumers N    consumer processes (default 1, max %d)\n"
	        "  --day FILE       replay this daily-format ITCH file instead of a generated day\n"
	        "  --feed-cpu C     the feed thread's CPU (default 1, or 0 on one CPU)\n"
	        "  --sqpoll-cpu C   the SQPOLL thread's CPU (default 0)\n"
	        "  --bin-dir DIR    where uringfeed, uf-replay and uf-gen are (default: "
	        "uf-bench's)\n"
	        "  --json           JSON on stdout instead of the tables (always written to "
	        "DIR/e2e.json)\n"
	        "  --no-plot        no gnuplot PNGs;  --keep  keep the temp dir (configs, logs)\n"
	        "Exit 0 when every back end ran (loss is a result, not a failure), 1 when one "
	        "could not, 2 bad usage.\n",
	        MAX_SEARCH, MAXC);
}

static int parse_backends(char *s, uint32_t *mask)
{
	char *save, *tok;

	*mask = 0;
	for (tok = strtok_r(s, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (!strcmp(tok, "io_uring") || !strcmp(tok, "sqpoll"))
			*mask |= 1u << BE_SQPOLL;
		else if (!strcmp(tok, "io_uring_nosqpoll") || !strcmp(tok, "nosqpoll"))
			*mask |= 1u << BE_NOSQPOLL;
		else if (!strcmp(tok, "recvmmsg"))
			*mask |= 1u << BE_RECVMMSG;
		else if (!strcmp(tok, "epoll"))
			*mask |= 1u << BE_EPOLL;
		else if (!strcmp(tok, "all"))
			*mask |= (1u << BE_COUNT) - 1;
		else
			return -EINVAL;
	}
	return *mask ? 0 : -EINVAL;
}

static int num(const char *s, double lo, double hi, double *v)
{
	char *end;
	errno = 0;
	*v = strtod(s, &end);
	return errno || end == s || *end || !(*v >= lo && *v <= hi) ? -EINVAL : 0;
}

static int make_bindir(struct opts *o)
{
	ssize_t n = readlink("/proc/self/exe", o->bindir, sizeof(o->bindir) - 1);
	char *slash;

	if (n <= 0)
		return -errno;
	o->bindir[n] = '\0';
	slash = strrchr(o->bindir, '/');
	if (slash)
		*slash = '\0';
	return 0;
}

static int rm_tree(const char *dir)
{
	char cmd[PATH_MAX + 16];
	pid_t pid;

	if (strncmp(dir, "/tmp/uf-bench-e2e-", 18) != 0)
		return -EINVAL; /* only ever our own mkdtemp folder */
	snprintf(cmd, sizeof(cmd), "%s", dir);
	pid = fork();
	if (pid == 0) {
		execlp("rm", "rm", "-rf", "--", cmd, (char *)NULL);
		_exit(127);
	}
	return pid > 0 && uf_bench_wait_child(pid, 10000) == 0 ? 0 : -EIO;
}

int uf_bench_e2e(int argc, char **argv)
{
	static const struct option lo[] = {{"json", no_argument, 0, 'j'},
	                                   {"duration", required_argument, 0, 'd'},
	                                   {"backends", required_argument, 0, 'b'},
	                                   {"results", required_argument, 0, 'R'},
	                                   {"rate", required_argument, 0, 'r'},
	                                   {"burst", required_argument, 0, 'B'},
	                                   {"burst-period", required_argument, 0, 'P'},
	                                   {"max-rate", required_argument, 0, 'm'},
	                                   {"steps", required_argument, 0, 's'},
	                                   {"burst-steps", required_argument, 0, 'S'},
	                                   {"consumers", required_argument, 0, 'c'},
	                                   {"day", required_argument, 0, 'D'},
	                                   {"day-messages", required_argument, 0, 'M'},
	                                   {"feed-cpu", required_argument, 0, 'f'},
	                                   {"sqpoll-cpu", required_argument, 0, 'q'},
	                                   {"bin-dir", required_argument, 0, 'x'},
	                                   {"no-plot", no_argument, 0, 'n'},
	                                   {"keep", no_argument, 0, 'k'},
	                                   {"help", no_argument, 0, 'h'},
	                                   {0, 0, 0, 0}};
	struct opts o = {.duration = 10,
	                 .rate = 100000,
	                 .burst = 10,
	                 .burst_ms = 100,
	                 .max_rate = 3200000,
	                 .steps = 6,
	                 .burst_steps = 4,
	                 .consumers = 1,
	                 .plot = 1,
	                 .feed_cpu = -2,
	                 .sqpoll_cpu = -2,
	                 .mask = (1u << BE_COUNT) - 1,
	                 .results = "results"};
	struct beres rs[BE_COUNT];
	struct machine m;
	struct ratios q;
	struct day day;
	char err[512], gen_path[PATH_MAX];
	json_t *plots, *root;
	int opt, n = 0, rc = 0;
	double v;

	optind = 1;
	memset(&m, 0, sizeof(m));
	while ((opt = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (opt) {
		case 'j':
			o.json = 1;
			break;
		case 'd':
			if (num(optarg, 0.5, 600, &o.duration))
				goto bad;
			break;
		case 'b':
			if (parse_backends(optarg, &o.mask))
				goto bad;
			break;
		case 'R':
			o.results = optarg;
			break;
		case 'r':
			if (num(optarg, 1000, 50e6, &o.rate))
				goto bad;
			break;
		case 'B':
			if (num(optarg, 1, 1000, &o.burst))
				goto bad;
			break;
		case 'P':
			if (num(optarg, 1, 60000, &o.burst_ms))
				goto bad;
			break;
		case 'm':
			if (num(optarg, 1000, 100e6, &o.max_rate))
				goto bad;
			break;
		case 's':
			if (num(optarg, 1, MAX_SEARCH, &v))
				goto bad;
			o.steps = (int)v;
			break;
		case 'S':
			if (num(optarg, 1, MAX_SEARCH, &v))
				goto bad;
			o.burst_steps = (int)v;
			break;
		case 'c':
			if (num(optarg, 1, MAXC, &v))
				goto bad;
			o.consumers = (int)v;
			break;
		case 'D':
			o.day = optarg;
			break;
		case 'M':
			if (num(optarg, 2000, 1e9, &v))
				goto bad;
			o.day_msgs = (uint64_t)v;
			break;
		case 'f':
			if (num(optarg, 0, 1023, &v))
				goto bad;
			o.feed_cpu = (int)v;
			break;
		case 'q':
			if (num(optarg, 0, 1023, &v))
				goto bad;
			o.sqpoll_cpu = (int)v;
			break;
		case 'x':
			snprintf(o.bindir, sizeof(o.bindir), "%s", optarg);
			break;
		case 'n':
			o.plot = 0;
			break;
		case 'k':
			o.keep = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "uf-bench e2e: unexpected argument %s\n", argv[optind]);
		usage(stderr);
		return 2;
	}
	o.ncpu = uf_bench_ncpus();
	/* Pin only to CPUs that exist: the feed on the last of the first two, SQPOLL on 0. */
	if (o.feed_cpu == -2)
		o.feed_cpu = o.ncpu > 1 ? 1 : 0;
	if (o.sqpoll_cpu == -2)
		o.sqpoll_cpu = 0;
	if (o.feed_cpu >= o.ncpu || o.sqpoll_cpu >= o.ncpu) {
		fprintf(stderr,
		        "uf-bench e2e: --feed-cpu/--sqpoll-cpu: this machine has CPUs 0-%d\n",
		        o.ncpu - 1);
		return 2;
	}
	if (!o.bindir[0] && make_bindir(&o) < 0) {
		fprintf(stderr, "uf-bench e2e: cannot find my own binary: %s\n", strerror(errno));
		return 2;
	}
	if (mkdir(o.results, 0755) < 0 && errno != EEXIST) {
		fprintf(stderr, "uf-bench e2e: --results %s: %s\n", o.results, strerror(errno));
		return 2;
	}
	snprintf(o.tmp, sizeof(o.tmp), "/tmp/uf-bench-e2e-XXXXXX");
	if (!mkdtemp(o.tmp)) {
		fprintf(stderr, "uf-bench e2e: mkdtemp: %s\n", strerror(errno));
		return 1;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGPIPE, SIG_IGN);

	if (!o.day) {
		double per_search = o.duration * 0.3 / o.steps;
		char bin[PATH_MAX], msgs[32];
		char *gargv[] = {bin,         "--out", gen_path, "--messages", msgs,
		                 "--symbols", "1000",  "--seed", "1",          NULL};
		pid_t pid;
		int st;
		if (!o.day_msgs) {
			double need = o.max_rate * (per_search < 0.25 ? 0.25 : per_search);
			double lat = o.rate * o.duration * 0.25;
			need = need > lat ? need : lat;
			o.day_msgs = (uint64_t)(need > 4e6 ? 4e6 : need < 2e5 ? 2e5 : need);
		}
		snprintf(bin, sizeof(bin), "%s/uf-gen", o.bindir);
		snprintf(gen_path, sizeof(gen_path), "%s/day.itch", o.tmp);
		snprintf(msgs, sizeof(msgs), "%" PRIu64, o.day_msgs);
		fprintf(stderr, "uf-bench e2e: generating a %" PRIu64 "-message day...\n",
		        o.day_msgs);
		pid = e2e_spawn(gargv, "/dev/null", NULL);
		st = pid > 0 ? uf_bench_wait_child(pid, 120000) : -1;
		if (st < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			fprintf(stderr, "uf-bench e2e: %s failed\n", bin);
			rc = 1;
			goto out_tmp;
		}
		o.day = gen_path;
		o.generated = 1;
	}
	if (day_open(o.day, &day, err, sizeof(err)) < 0) {
		fprintf(stderr, "uf-bench e2e: %s\n", err);
		rc = 2;
		goto out_tmp;
	}
	machine_info(&m);
	m.load_start = uf_bench_loadavg();
	for (int be = 0; be < BE_COUNT && !g_stop; be++) {
		if (!(o.mask & (1u << be)))
			continue;
		run_backend(&o, (enum backend)be, &day, &rs[n]);
		if (!rs[n].ok)
			fprintf(stderr, "uf-bench e2e: %s: %s\n", be_label[be], rs[n].note);
		n++;
	}
	m.load_end = uf_bench_loadavg();
	compute_ratios(rs, n, &q);
	plots = o.plot ? make_plots(rs, n, &o, &m) : json_array();
	root = results_json(rs, n, &o, &m, &q, plots);
	{
		char path[PATH_MAX];
		snprintf(path, sizeof(path), "%s/e2e.json", o.results);
		if (json_dump_file(root, path, JSON_INDENT(1)) < 0)
			fprintf(stderr, "uf-bench e2e: cannot write %s\n", path);
	}
	if (o.json) {
		json_dumpf(root, stdout, JSON_COMPACT);
		putchar('\n');
	} else {
		print_table(rs, n, &o, &m, &q);
		printf("results: %s/e2e.json", o.results);
		for (size_t i = 0; i < json_array_size(plots); i++)
			printf(", %s/%s", o.results, json_string_value(json_array_get(plots, i)));
		printf("\n");
	}
	json_decref(root);
	for (int i = 0; i < n; i++)
		if (!rs[i].ok)
			rc = 1;
	if (g_stop)
		rc = 130;
	munmap((void *)day.p, day.size);
out_tmp:
	if (o.keep || rc == 1) { /* a back end failed: keep its config and log */
		if (!o.keep) {
			char p[PATH_MAX];
			snprintf(p, sizeof(p), "%s/day.itch", o.tmp);
			unlink(p);
			snprintf(p, sizeof(p), "%s/step.itch", o.tmp);
			unlink(p);
		}
		fprintf(stderr, "uf-bench e2e: kept %s\n", o.tmp);
	} else
		rm_tree(o.tmp);
	return rc;

bad:
	for (int i = 0; lo[i].name; i++)
		if (lo[i].val == opt)
			fprintf(stderr, "uf-bench e2e: --%s: bad value \"%s\"\n", lo[i].name,
			        optarg);
	usage(stderr);
	return 2;
}
