/* uf-replay: sends a daily-format ITCH file or a pcap of MoldUDP64 as MoldUDP64 to an A and a
 * B multicast group, packing messages per packet up to an MTU, at a controlled rate, with
 * heartbeats, end of session and per-line fault injection; serves MoldUDP64 re-requests from
 * what it sent. See docs/feed.md ("uf-replay").
 *
 * Messages are numbered 1..N in file order (a pcap's own sequence numbers are not kept), so
 * the stream a feed rebuilds is exactly the file, and `uf-decode books FILE` is the book it
 * must end with. Every random decision comes from a per-line generator seeded by --seed:
 * the same seed and file give the same faults. */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/uf_endian.h"
#include "common/uf_time.h"
#include "decode/uf_decode.h"
#include "feed/mcast.h"
#include "snap_server.h"

#define RP_MAX_PAYLOAD  65507
#define RP_DEFAULT_MTU  1400          /* MoldUDP64 payload bytes per packet */
#define RP_DEFAULT_RATE 100000.0      /* messages/s when neither --rate nor --speed is given */
#define RP_HEARTBEAT_NS 1000000000ull /* heartbeat / end-of-session repeat interval */
#define RP_MAX_AT       4096          /* sequences listed in one @list */

struct rp_msg {
	const uint8_t *p; /* message bytes in the input mapping */
	uint16_t len;     /* message length */
};

struct rp_fault {
	double p;               /* drop probability */
	uint64_t at[RP_MAX_AT]; /* packets containing these sequences are dropped */
	int nat;                /* entries in at */
};

struct rp_line {
	int on;                       /* line configured */
	struct sockaddr_in dst;       /* group:port */
	struct rp_fault drop;         /* drop faults */
	uint64_t rng;                 /* generator state (per line: independent of the other) */
	uint8_t held[RP_MAX_PAYLOAD]; /* packet held back by a reorder */
	size_t held_len;              /* 0 when none */
	uint64_t sent, dropped, duplicated, reordered; /* packets */
};

struct rp {
	struct rp_msg *msgs; /* msgs[seq - 1] */
	uint64_t n;          /* messages */
	char session[UF_MOLD_SESSION_LEN];
	size_t mtu;             /* payload bytes per packet */
	double rate;            /* messages/s (0 = --speed) */
	double speed;           /* timestamp speed factor (0 = --rate) */
	double burst;           /* --burst: bursts at this multiple of --rate (0 = steady) */
	double burst_period;    /* --burst-period in seconds: one burst per period */
	double dup, reorder;    /* probabilities, both lines */
	int tx;                 /* multicast sender */
	int srv;                /* re-request server socket, -1 when not serving */
	uint64_t sent_high;     /* sequence after the last message sent (serve up to it) */
	struct rp_line line[2]; /* A, B */
	uint64_t packets;       /* data packets built */
	uint64_t rerequests, rerequests_bad, retransmitted_msgs, retransmitted_pkts;
	int verbose; /* progress on stderr */
};

static volatile sig_atomic_t rp_stop;

static void rp_on_signal(int sig)
{
	(void)sig;
	rp_stop = 1;
}

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

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "usage: uf-replay --in FILE --a GROUP:PORT [--b GROUP:PORT] [--interface ADDR]\n"
	    "                 [--session NAME] [--rate MSGS_PER_S | --speed FACTOR]\n"
	    "                 [--drop-a P|@SEQ,...] [--drop-b P|@SEQ,...] [--dup P] [--reorder P]\n"
	    "                 [--seed S] [--serve-rerequests PORT] [--linger SECONDS] [--mtu "
	    "BYTES]\n"
	    "                 [--burst FACTOR [--burst-period MS]] [--verbose]\n"
	    "                 [--serve-snapshot PORT[,USERNAME,PASSWORD]]\n"
	    "Sends FILE (Nasdaq daily ITCH format or a pcap of MoldUDP64) as MoldUDP64 to the A "
	    "and\n"
	    "B groups, messages numbered 1..N in file order, packed up to --mtu payload bytes\n"
	    "(default %d), at --rate messages/s (default %.0f; 0 = as fast as possible) or at the\n"
	    "messages' own timestamps divided by --speed. Heartbeats every second while idle, end "
	    "of\n"
	    "session at the end. Faults per line: --drop-a/--drop-b drop a packet with probability "
	    "P\n"
	    "or the packets holding the listed sequences (@12,500); --dup and --reorder apply to\n"
	    "both lines with probability P (a reordered packet is sent after the next one). "
	    "--seed\n"
	    "makes every fault repeatable (default 1). --serve-rerequests answers MoldUDP64\n"
	    "re-requests on that UDP port from what was sent, also for --linger seconds after the "
	    "end\n"
	    "(default 0). --burst F (with --rate R): the same mean rate, sent as one burst at F x "
	    "R\n"
	    "at the start of every --burst-period (default 100 ms), silent for the rest of it.\n"
	    "--serve-snapshot: SoupBinTCP/GLIMPSE snapshots of what was sent, on 127.0.0.1:PORT\n"
	    "(0 = any; the port is printed on stderr), login replay/replay unless given.\n"
	    "Prints a JSON summary on stdout. Exit 0 ok, 1 send failure, 2 bad usage.\n",
	    RP_DEFAULT_MTU, RP_DEFAULT_RATE);
}

static int rp_parse_prob(const char *s, double *out)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || *end || end == s || !(v >= 0.0 && v <= 1.0))
		return -EINVAL;
	*out = v;
	return 0;
}

static int rp_parse_fault(const char *s, struct rp_fault *f)
{
	if (s[0] != '@')
		return rp_parse_prob(s, &f->p);
	const char *p = s + 1;
	while (*p) {
		char *end;
		errno = 0;
		unsigned long long v = strtoull(p, &end, 10);
		if (errno || end == p || v == 0 || f->nat >= RP_MAX_AT)
			return -EINVAL;
		f->at[f->nat++] = v;
		if (*end == ',')
			end++;
		else if (*end)
			return -EINVAL;
		p = end;
	}
	return f->nat ? 0 : -EINVAL;
}

static int rp_fault_hits_at(const struct rp_fault *f, uint64_t first, uint64_t count)
{
	for (int i = 0; i < f->nat; i++)
		if (f->at[i] >= first && f->at[i] < first + count)
			return 1;
	return 0;
}

static void rp_sendto(struct rp *r, int fd, const uint8_t *buf, size_t len,
                      const struct sockaddr_in *dst)
{
	for (int tries = 0; tries < 1000; tries++) {
		if (sendto(fd, buf, len, 0, (const struct sockaddr *)dst, sizeof(*dst)) >= 0)
			return;
		if (errno != ENOBUFS && errno != EAGAIN && errno != EINTR)
			break;
		struct timespec ts = {0, 20000};
		nanosleep(&ts, NULL);
	}
	fprintf(stderr, "uf-replay: sendto: %s\n", strerror(errno));
}

/* Builds the data packet of messages [first, first + count) into buf; returns its length. */
static size_t rp_build(struct rp *r, uint8_t *buf, size_t cap, uint64_t first, uint64_t count)
{
	struct uf_mold_builder b;
	uf_mold_builder_init(&b, buf, cap, r->session, first);
	for (uint64_t s = first; s < first + count; s++)
		if (uf_mold_builder_add(&b, r->msgs[s - 1].p, r->msgs[s - 1].len) < 0)
			break;
	return b.len;
}

/* How many messages from `first` fit in one packet of r->mtu bytes. */
static uint64_t rp_fit(const struct rp *r, uint64_t first, uint64_t limit)
{
	size_t len = UF_MOLD_HDR_LEN;
	uint64_t k = 0;
	while (first + k < limit && k < 0xFFFE) {
		size_t add = 2 + r->msgs[first + k - 1].len;
		if (len + add > r->mtu && k > 0)
			break;
		len += add;
		k++;
	}
	return k;
}

/* Answers every pending re-request from what was sent (never fault-injected). */
static void rp_serve(struct rp *r)
{
	if (r->srv < 0)
		return;
	uint8_t in[64], out[RP_MAX_PAYLOAD];
	for (;;) {
		struct sockaddr_in from;
		socklen_t fl = sizeof(from);
		ssize_t got =
		    recvfrom(r->srv, in, sizeof(in), MSG_DONTWAIT, (struct sockaddr *)&from, &fl);
		if (got < 0)
			return;
		struct uf_mold_packet req;
		if (uf_mold_rerequest_parse(&req, in, (size_t)got) < 0 ||
		    memcmp(req.session, r->session, UF_MOLD_SESSION_LEN) != 0 || req.seq == 0) {
			r->rerequests_bad++;
			continue;
		}
		r->rerequests++;
		uint64_t first = req.seq, end = req.seq + req.count;
		if (end > r->sent_high)
			end = r->sent_high; /* only what was sent */
		while (first < end) {
			uint64_t k = rp_fit(r, first, end);
			size_t len = rp_build(r, out, sizeof(out), first, k);
			rp_sendto(r, r->srv, out, len, &from);
			r->retransmitted_pkts++;
			r->retransmitted_msgs += k;
			first += k;
		}
	}
}

/* Sleeps until `deadline` (monotonic ns) while answering re-requests. */
static void rp_wait_until(struct rp *r, uint64_t deadline)
{
	for (;;) {
		rp_serve(r);
		uint64_t now = uf_now_mono_ns();
		if (now >= deadline || rp_stop)
			return;
		uint64_t d = deadline - now;
		if (r->srv >= 0) {
			struct pollfd pfd = {.fd = r->srv, .events = POLLIN};
			struct timespec ts = {(time_t)(d / 1000000000u), (long)(d % 1000000000u)};
			(void)ppoll(&pfd, 1, &ts, NULL);
		} else {
			struct timespec ts = {(time_t)(d / 1000000000u), (long)(d % 1000000000u)};
			nanosleep(&ts, NULL);
		}
	}
}

/* One data packet to one line, through the line's faults. */
static void rp_line_send(struct rp *r, struct rp_line *l, const uint8_t *buf, size_t len,
                         uint64_t first, uint64_t count)
{
	int drop = rp_chance(&l->rng, l->drop.p) || rp_fault_hits_at(&l->drop, first, count);
	int dup = rp_chance(&l->rng, r->dup);
	int reorder = rp_chance(&l->rng, r->reorder);
	if (drop) {
		l->dropped++;
		return;
	}
	if (reorder && !l->held_len) {
		memcpy(l->held, buf, len);
		l->held_len = len;
		l->reordered++;
		return;
	}
	rp_sendto(r, r->tx, buf, len, &l->dst);
	l->sent++;
	if (dup) {
		rp_sendto(r, r->tx, buf, len, &l->dst);
		l->duplicated++;
	}
	if (l->held_len) {
		rp_sendto(r, r->tx, l->held, l->held_len, &l->dst);
		l->held_len = 0;
		l->sent++;
	}
}

static void rp_flush_held(struct rp *r)
{
	for (int i = 0; i < 2; i++) {
		struct rp_line *l = &r->line[i];
		if (l->on && l->held_len) {
			rp_sendto(r, r->tx, l->held, l->held_len, &l->dst);
			l->held_len = 0;
			l->sent++;
		}
	}
}

static void rp_send_control(struct rp *r, int eos)
{
	uint8_t hb[UF_MOLD_HDR_LEN];
	if (eos)
		uf_mold_build_end_of_session(hb, r->session, r->sent_high);
	else
		uf_mold_build_heartbeat(hb, r->session, r->sent_high);
	for (int i = 0; i < 2; i++)
		if (r->line[i].on)
			rp_sendto(r, r->tx, hb, sizeof(hb), &r->line[i].dst);
}

static uint64_t rp_msg_ts(const struct rp_msg *m)
{
	return m->len >= UF_ITCH_HDR_LEN ? uf_be48(m->p + 5) : 0;
}

/* --serve-snapshot: message `seq` for the snapshot server's thread (msgs never change). */
static const uint8_t *rp_snap_msg(void *ctx, uint64_t seq, size_t *len)
{
	const struct rp *r = ctx;
	*len = r->msgs[seq - 1].len;
	return r->msgs[seq - 1].p;
}

static int rp_load(struct rp *r, struct uf_reader *rd, const char *path)
{
	int rc = uf_reader_open(rd, path, NULL);
	if (rc < 0) {
		fprintf(stderr, "uf-replay: %s\n", rd->err); /* the reader names the file */
		return rc;
	}
	size_t cap = 1 << 16;
	r->msgs = malloc(cap * sizeof(*r->msgs));
	struct uf_reader_msg m;
	while (r->msgs && uf_reader_next(rd, &m) == 1) {
		if (r->n == cap) {
			cap *= 2;
			struct rp_msg *nm = realloc(r->msgs, cap * sizeof(*nm));
			if (!nm) {
				free(r->msgs);
				r->msgs = NULL;
				break;
			}
			r->msgs = nm;
		}
		r->msgs[r->n].p = m.msg;
		r->msgs[r->n].len = m.len;
		r->n++;
	}
	if (!r->msgs) {
		fprintf(stderr, "uf-replay: %s: out of memory indexing messages\n", path);
		return -ENOMEM;
	}
	uint64_t errs = uf_decode_counters_errors(rd->c);
	if (errs)
		fprintf(stderr, "uf-replay: %s: %llu framing errors skipped\n", path,
		        (unsigned long long)errs);
	if (r->n == 0) {
		fprintf(stderr, "uf-replay: %s: no messages\n", path);
		return -ENODATA;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static struct rp r;
	const char *in = NULL, *a = NULL, *b = NULL, *ifs = "127.0.0.1", *sess = "REPLAY0001";
	double linger = 0;
	uint64_t seed = 1;
	int serve_port = 0, have_rate = 0, serve_snap = 0;
	struct rp_snap_server_cfg snap_cfg;
	struct rp_snap_server *snap = NULL;
	r.mtu = RP_DEFAULT_MTU;
	r.rate = RP_DEFAULT_RATE;
	r.srv = -1;
	r.burst_period = 0.1;
	enum {
		O_IN = 1,
		O_A,
		O_B,
		O_IF,
		O_SESS,
		O_RATE,
		O_SPEED,
		O_DA,
		O_DB,
		O_DUP,
		O_REORDER,
		O_SEED,
		O_SERVE,
		O_LINGER,
		O_MTU,
		O_VERBOSE,
		O_HELP,
		O_BURST,
		O_BURST_PERIOD,
		O_SNAP
	};
	static const struct option opts[] = {
	    {"in", 1, 0, O_IN},
	    {"a", 1, 0, O_A},
	    {"b", 1, 0, O_B},
	    {"interface", 1, 0, O_IF},
	    {"session", 1, 0, O_SESS},
	    {"rate", 1, 0, O_RATE},
	    {"speed", 1, 0, O_SPEED},
	    {"drop-a", 1, 0, O_DA},
	    {"drop-b", 1, 0, O_DB},
	    {"dup", 1, 0, O_DUP},
	    {"reorder", 1, 0, O_REORDER},
	    {"seed", 1, 0, O_SEED},
	    {"serve-rerequests", 1, 0, O_SERVE},
	    {"linger", 1, 0, O_LINGER},
	    {"mtu", 1, 0, O_MTU},
	    {"verbose", 0, 0, O_VERBOSE},
	    {"help", 0, 0, O_HELP},
	    {"burst", 1, 0, O_BURST},
	    {"burst-period", 1, 0, O_BURST_PERIOD},
	    {"serve-snapshot", 1, 0, O_SNAP},
	    {0, 0, 0, 0},
	};
	int c;
	char *end;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		int bad = 0;
		switch (c) {
		case O_IN:
			in = optarg;
			break;
		case O_A:
			a = optarg;
			break;
		case O_B:
			b = optarg;
			break;
		case O_IF:
			ifs = optarg;
			break;
		case O_SESS:
			sess = optarg;
			break;
		case O_RATE:
			r.rate = strtod(optarg, &end);
			bad = *end || end == optarg || !(r.rate >= 0);
			have_rate = 1;
			break;
		case O_SPEED:
			r.speed = strtod(optarg, &end);
			bad = *end || end == optarg || !(r.speed > 0);
			break;
		case O_DA:
			bad = rp_parse_fault(optarg, &r.line[0].drop) < 0;
			break;
		case O_DB:
			bad = rp_parse_fault(optarg, &r.line[1].drop) < 0;
			break;
		case O_DUP:
			bad = rp_parse_prob(optarg, &r.dup) < 0;
			break;
		case O_REORDER:
			bad = rp_parse_prob(optarg, &r.reorder) < 0;
			break;
		case O_SEED:
			seed = strtoull(optarg, &end, 10);
			bad = *end || end == optarg;
			break;
		case O_SERVE: {
			long v = strtol(optarg, &end, 10);
			bad = *end || end == optarg || v < 1 || v > 65535;
			serve_port = (int)v;
			break;
		}
		case O_LINGER:
			linger = strtod(optarg, &end);
			bad = *end || end == optarg || !(linger >= 0);
			break;
		case O_MTU: {
			long v = strtol(optarg, &end, 10);
			bad = *end || end == optarg || v < 64 || v > RP_MAX_PAYLOAD;
			r.mtu = (size_t)v;
			break;
		}
		case O_VERBOSE:
			r.verbose = 1;
			break;
		case O_BURST:
			r.burst = strtod(optarg, &end);
			bad = *end || end == optarg || !(r.burst >= 1 && r.burst <= 1000);
			break;
		case O_BURST_PERIOD:
			r.burst_period = strtod(optarg, &end) / 1e3;
			bad =
			    *end || end == optarg || !(r.burst_period > 0 && r.burst_period <= 60);
			break;
		case O_SNAP:
			bad = rp_snap_server_parse(optarg, &snap_cfg) < 0;
			serve_snap = 1;
			break;
		case O_HELP:
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
		if (bad) {
			fprintf(stderr, "uf-replay: bad value for --%s: '%s'\n", opts[c - 1].name,
			        optarg);
			return 2;
		}
	}
	if (optind < argc || !in || !a) {
		fprintf(stderr, "uf-replay: %s\n",
		        optind < argc ? "unexpected argument" : "--in and --a are required");
		usage(stderr);
		return 2;
	}
	if (have_rate && r.speed > 0) {
		fprintf(stderr, "uf-replay: --rate and --speed exclude each other\n");
		return 2;
	}
	if (r.burst > 0 && !(r.rate > 0 && r.speed == 0)) {
		fprintf(stderr, "uf-replay: --burst needs a --rate above 0\n");
		return 2;
	}
	if (r.speed > 0)
		r.rate = 0;
	if (strlen(sess) > UF_MOLD_SESSION_LEN) {
		fprintf(stderr, "uf-replay: --session '%s': at most %d characters\n", sess,
		        UF_MOLD_SESSION_LEN);
		return 2;
	}
	memset(r.session, ' ', sizeof(r.session));
	memcpy(r.session, sess, strlen(sess));
	const char *lines[2] = {a, b};
	for (int i = 0; i < 2; i++) {
		if (!lines[i])
			continue;
		if (uf_mcast_parse_addr(lines[i], &r.line[i].dst) < 0 ||
		    !IN_MULTICAST(ntohl(r.line[i].dst.sin_addr.s_addr))) {
			fprintf(stderr, "uf-replay: --%c '%s': want MULTICAST_GROUP:PORT\n",
			        'a' + i, lines[i]);
			return 2;
		}
		r.line[i].on = 1;
		r.line[i].rng = seed * 2 + (uint64_t)i + 0x5DEECE66Dull;
	}
	struct in_addr ifaddr;
	if (inet_pton(AF_INET, ifs, &ifaddr) != 1) {
		fprintf(stderr, "uf-replay: --interface '%s': want an IPv4 address\n", ifs);
		return 2;
	}

	struct uf_reader rd;
	if (rp_load(&r, &rd, in) < 0)
		return 2;
	char err[256];
	r.tx = uf_mcast_open_tx(ifaddr, 1, err, sizeof(err));
	if (r.tx < 0) {
		fprintf(stderr, "uf-replay: multicast sender on %s: %s\n", ifs, err);
		return 1;
	}
	if (serve_port) {
		struct in_addr any = {.s_addr = htonl(INADDR_ANY)};
		r.srv = uf_mcast_open_unicast(any, (uint16_t)serve_port, 4 << 20, err, sizeof(err));
		if (r.srv < 0) {
			fprintf(stderr, "uf-replay: re-request server on port %d: %s\n", serve_port,
			        err);
			return 1;
		}
	}
	uint16_t snap_port;
	memcpy(snap_cfg.session, sess, strlen(sess) + 1); /* checked: <= 10 characters */
	if (serve_snap && rp_snap_server_start(&snap_cfg, rp_snap_msg, &r, &snap, &snap_port) < 0)
		return 1;
	signal(SIGINT, rp_on_signal);
	signal(SIGTERM, rp_on_signal);
	(void)prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0); /* sleeps end on time: smoother rate */

	static uint8_t buf[RP_MAX_PAYLOAD];
	uint64_t start = uf_now_mono_ns(), last_tx = start;
	uint64_t ts0 = rp_msg_ts(&r.msgs[0]);
	r.sent_high = 1;
	for (uint64_t seq = 1; seq <= r.n && !rp_stop;) {
		uint64_t k = rp_fit(&r, seq, r.n + 1);
		/* When may this packet go? Rate: its first message's slot. Speed: its timestamp. */
		uint64_t due = start;
		if (r.rate > 0 && r.burst > 1) {
			/* Period k's messages go at burst x rate from the period's start. */
			double per = r.rate * r.burst_period, i = (double)(seq - 1);
			double k = (double)(uint64_t)(i / per);
			due = start + (uint64_t)(k * r.burst_period * 1e9 +
			                         (i - k * per) * 1e9 / (r.rate * r.burst));
		} else if (r.rate > 0)
			due = start + (uint64_t)((double)(seq - 1) * 1e9 / r.rate);
		else if (r.speed > 0) {
			uint64_t ts = rp_msg_ts(&r.msgs[seq - 1]);
			due = start + (uint64_t)((double)(ts > ts0 ? ts - ts0 : 0) / r.speed);
		}
		while (due > last_tx + RP_HEARTBEAT_NS && !rp_stop) {
			rp_wait_until(&r, last_tx + RP_HEARTBEAT_NS);
			rp_send_control(&r, 0);
			last_tx = uf_now_mono_ns();
		}
		if (due > uf_now_mono_ns())
			rp_wait_until(&r, due);
		else
			rp_serve(&r);
		size_t len = rp_build(&r, buf, sizeof(buf), seq, k);
		r.sent_high = seq + k; /* before sending: a re-request may follow at once */
		for (int i = 0; i < 2; i++)
			if (r.line[i].on)
				rp_line_send(&r, &r.line[i], buf, len, seq, k);
		r.packets++;
		last_tx = uf_now_mono_ns();
		seq += k;
		if (snap)
			rp_snap_server_sent(snap, seq);
		if (r.verbose && r.packets % 10000 == 0)
			fprintf(stderr, "uf-replay: %llu/%llu messages\n",
			        (unsigned long long)seq - 1, (unsigned long long)r.n);
	}
	rp_flush_held(&r);
	rp_send_control(&r, 1);
	/* Linger: repeat the end of session every second (a feed that lost it learns the end)
	 * and keep answering re-requests. */
	uint64_t until = uf_now_mono_ns() + (uint64_t)(linger * 1e9);
	while (!rp_stop && uf_now_mono_ns() < until) {
		uint64_t next = uf_now_mono_ns() + RP_HEARTBEAT_NS;
		rp_wait_until(&r, next < until ? next : until);
		rp_send_control(&r, 1);
	}
	double secs = (double)(uf_now_mono_ns() - start) / 1e9;
	printf("{\"messages\":%llu,\"packets\":%llu,\"session\":\"%.10s\",\"seconds\":%.3f,"
	       "\"a\":{\"sent\":%llu,\"dropped\":%llu,\"duplicated\":%llu,\"reordered\":%llu},"
	       "\"b\":{\"sent\":%llu,\"dropped\":%llu,\"duplicated\":%llu,\"reordered\":%llu},"
	       "\"rerequests\":%llu,\"bad_rerequests\":%llu,\"retransmitted_messages\":%llu,"
	       "\"retransmitted_packets\":%llu}\n",
	       (unsigned long long)r.n, (unsigned long long)r.packets, r.session, secs,
	       (unsigned long long)r.line[0].sent, (unsigned long long)r.line[0].dropped,
	       (unsigned long long)r.line[0].duplicated, (unsigned long long)r.line[0].reordered,
	       (unsigned long long)r.line[1].sent, (unsigned long long)r.line[1].dropped,
	       (unsigned long long)r.line[1].duplicated, (unsigned long long)r.line[1].reordered,
	       (unsigned long long)r.rerequests, (unsigned long long)r.rerequests_bad,
	       (unsigned long long)r.retransmitted_msgs, (unsigned long long)r.retransmitted_pkts);
	fflush(stdout);
	rp_snap_server_stop(snap);
	free(r.msgs);
	uf_reader_close(&rd);
	close(r.tx);
	if (r.srv >= 0)
		close(r.srv);
	return 0;
}
