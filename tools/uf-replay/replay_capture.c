/* uf-replay: a pcapng capture replayed datagram by datagram (replay_capture.h). */
#include "replay_capture.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/uf_endian.h"
#include "common/uf_time.h"
#include "decode/uf_iextp.h"
#include "decode/uf_pcapng.h"
#include "replay_send.h"
#include "replay_stream.h"

#define RP_CAP_MAX_DST 16 /* destinations listed in the summary */

struct rp_cap_dst {
	struct sockaddr_in to; /* where its datagrams went */
	uint64_t sent;         /* datagrams */
};

/* One captured datagram, in the order it is sent. */
struct rp_cap_rec {
	struct uf_pcapng_rec rec; /* where it is in the file, its interface and time */
	size_t order;             /* file position (ties keep it) */
	uint16_t linktype;        /* its interface's */
};

static int rp_cap_cmp(const void *a, const void *b)
{
	const struct rp_cap_rec *x = a, *y = b;
	if (x->rec.ts_ns != y->rec.ts_ns)
		return x->rec.ts_ns < y->rec.ts_ns ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

int rp_capture_is(const char *path)
{
	uint8_t b[4];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, b, sizeof(b));
	close(fd);
	return n == 4 && uf_pcapng_is(b, 4);
}

/* Sleeps until CLOCK_MONOTONIC `t` (or the stop signal). */
static void rp_cap_wait(uint64_t t)
{
	uint64_t now = uf_now_mono_ns();
	if (t <= now)
		return;
	struct timespec ts = {.tv_sec = (time_t)(t / 1000000000ull),
	                      .tv_nsec = (long)(t % 1000000000ull)};
	clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
}

static struct rp_cap_dst *rp_cap_dst_of(struct rp_cap_dst *d, int *nd, const struct sockaddr_in *to)
{
	for (int i = 0; i < *nd; i++)
		if (d[i].to.sin_addr.s_addr == to->sin_addr.s_addr &&
		    d[i].to.sin_port == to->sin_port)
			return &d[i];
	if (*nd == RP_CAP_MAX_DST)
		return NULL;
	d[*nd] = (struct rp_cap_dst){.to = *to};
	return &d[(*nd)++];
}

int rp_capture_run(const struct rp_opts *o, int tx)
{
	struct uf_reader r;
	if (uf_reader_open(&r, o->in, NULL) < 0) {
		fprintf(stderr, "uf-replay: %s\n", r.err);
		return 2;
	}
	struct uf_pcapng p;
	char err[128];
	if (uf_pcapng_open(&p, r.base, r.size, err, sizeof(err)) < 0) {
		fprintf(stderr, "uf-replay: %s: %s\n", o->in, err);
		uf_reader_close(&r);
		return 2;
	}
	/* Arrival order is the kernel timestamps' order: a receive batch lists one socket's
	 * datagrams before the other's, so the file order interleaves the lines by batch. */
	size_t n = 0, cap = 0;
	struct rp_cap_rec *v = NULL;
	struct uf_pcapng_rec rec;
	while (uf_pcapng_next(&p, &rec) == 1) {
		if (n == cap) {
			cap = cap ? cap * 2 : 65536;
			struct rp_cap_rec *nv = realloc(v, cap * sizeof(*v));
			if (!nv) {
				fprintf(stderr, "uf-replay: %s: out of memory\n", o->in);
				free(v);
				uf_reader_close(&r);
				return 2;
			}
			v = nv;
		}
		const struct uf_pcapng_if *f = uf_pcapng_iface(&p, rec.iface);
		v[n] = (struct rp_cap_rec){.rec = rec, .order = n, .linktype = f->linktype};
		n++;
	}
	if (n)
		qsort(v, n, sizeof(*v), rp_cap_cmp);
	double speed = o->have_rate ? 0 : (o->speed > 0 ? o->speed : 1.0);
	struct rp_cap_dst dst[RP_CAP_MAX_DST];
	int nd = 0;
	uint64_t sent = 0, unicast = 0, not_udp = 0, msgs = 0, t0 = 0, ts0 = 0, last_ts = 0;
	for (size_t i = 0; i < n && !rp_stop; i++) {
		rec = v[i].rec;
		r.linktype = v[i].linktype;
		const uint8_t *pl;
		size_t len;
		if (!uf_reader_frame_payload(&r, rec.frame, rec.caplen, &pl, &len)) {
			not_udp++;
			continue;
		}
		struct sockaddr_in to = {.sin_family = AF_INET};
		memcpy(&to.sin_addr.s_addr, r.frame_ip + 16, 4);
		memcpy(&to.sin_port, pl - 6, 2);
		if (rec.iface < 2 && o->line[rec.iface].on)
			to = o->line[rec.iface].dst;
		else if (!IN_MULTICAST(ntohl(to.sin_addr.s_addr))) {
			unicast++;
			continue;
		}
		if (!t0) {
			t0 = uf_now_mono_ns();
			ts0 = rec.ts_ns;
		}
		/* pacing: the captured gaps / speed, or messages at --rate */
		if (speed > 0 && rec.ts_ns > ts0)
			rp_cap_wait(t0 + (uint64_t)((double)(rec.ts_ns - ts0) / speed));
		else if (speed == 0 && o->rate > 0)
			rp_cap_wait(t0 + (uint64_t)((double)msgs * 1e9 / o->rate));
		if (len >= 20) {
			uint16_t count = uf_be16(pl + 18);
			msgs += count == 0xffff ? 0 : count;
		}
		rp_sendto(tx, pl, len, &to);
		struct rp_cap_dst *d = rp_cap_dst_of(dst, &nd, &to);
		if (d)
			d->sent++;
		sent++;
		last_ts = rec.ts_ns;
	}
	double secs = t0 ? (double)(uf_now_mono_ns() - t0) / 1e9 : 0;
	printf(
	    "{\"mode\":\"capture\",\"datagrams\":%llu,\"messages\":%llu,\"unicast_skipped\":%llu,"
	    "\"not_udp\":%llu,\"torn\":%llu,\"captured_seconds\":%.6f,\"seconds\":%.3f,"
	    "\"destinations\":[",
	    (unsigned long long)sent, (unsigned long long)msgs, (unsigned long long)unicast,
	    (unsigned long long)not_udp, (unsigned long long)p.torn,
	    last_ts > ts0 ? (double)(last_ts - ts0) / 1e9 : 0.0, secs);
	for (int i = 0; i < nd; i++) {
		char a[INET_ADDRSTRLEN];
		inet_ntop(AF_INET, &dst[i].to.sin_addr, a, sizeof(a));
		printf("%s{\"to\":\"%s:%u\",\"sent\":%llu}", i ? "," : "", a,
		       ntohs(dst[i].to.sin_port), (unsigned long long)dst[i].sent);
	}
	printf("]}\n");
	fflush(stdout);
	free(v);
	uf_reader_close(&r);
	return 0;
}

/* ---- IEX-TP captures (classic pcap, gzip'd or not) ------------------------------------- */

int rp_capture_is_iextp(const char *path)
{
	struct uf_reader r;
	if (uf_reader_open(&r, path, NULL) < 0)
		return 0;
	const uint8_t *pl;
	size_t len;
	uint64_t ts;
	struct uf_iextp_hdr h;
	int yes = uf_reader_next_payload(&r, &pl, &len, &ts) == 1 &&
	          uf_iextp_parse_header(&h, pl, len) == 0 && h.version == UF_IEXTP_VERSION &&
	          uf_iextp_proto_known(h.protocol_id);
	uf_reader_close(&r);
	return yes;
}

int rp_capture_run_iextp(const struct rp_opts *o, int tx)
{
	struct uf_reader r;
	if (uf_reader_open(&r, o->in, NULL) < 0) {
		fprintf(stderr, "uf-replay: %s\n", r.err);
		return 2;
	}
	static struct rp_sender snd; /* the lines and their faults, as for MoldUDP64 */
	rp_sender_init(&snd, o, NULL, tx);
	double speed = o->have_rate ? 0 : (o->speed > 0 ? o->speed : 1.0);
	uint64_t segs = 0, msgs = 0, restarts = 0, t0 = 0, ts0 = 0, last_ts = 0, last_seq = 0;
	int started = 0;
	const uint8_t *pl;
	size_t len;
	uint64_t ts;
	while (!rp_stop && uf_reader_next_payload(&r, &pl, &len, &ts) == 1) {
		struct uf_iextp_hdr h;
		if (uf_iextp_parse_header(&h, pl, len) != 0)
			continue; /* not IEX-TP: not sent (the reader counted it) */
		if (!t0) {
			t0 = uf_now_mono_ns();
			ts0 = ts;
		}
		if (speed > 0 && ts > ts0)
			rp_cap_wait(t0 + (uint64_t)((double)(ts - ts0) / speed));
		else if (speed == 0 && o->rate > 0)
			rp_cap_wait(t0 + (uint64_t)((double)msgs * 1e9 / o->rate));
		if (h.count) { /* a restart (sequence 1 at offset 0) goes out as it is: counted */
			restarts += started && h.first_seq == 1 && h.stream_offset == 0;
			started = 1;
		}
		msgs += h.count;
		uint64_t first = h.first_seq > 0 ? (uint64_t)h.first_seq : 0;
		for (int i = 0; i < 2; i++)
			if (snd.line[i].on)
				rp_line_send(&snd, &snd.line[i], pl, len, first, h.count);
		rp_sender_flush(
		    &snd); /* both lines' copies in one system call, before the next wait */
		segs++;
		last_ts = ts;
		if (h.count)
			last_seq = first + h.count - 1;
		if (o->until_seq && h.count && first <= o->until_seq && last_seq >= o->until_seq)
			break; /* --until-seq: the segment holding it was the last */
	}
	rp_sender_flush(&snd);
	for (int i = 0; i < 2; i++) { /* a packet a reorder still holds goes out last */
		struct rp_line *l = &snd.line[i];
		if (l->on && l->held_len) {
			rp_sendto(tx, l->held, l->held_len, &l->dst);
			l->held_len = 0;
			l->sent++;
		}
	}
	const struct rp_line *a = &snd.line[0], *b = &snd.line[1];
	printf("{\"mode\":\"iextp\",\"datagrams\":%llu,\"messages\":%llu,\"last_seq\":%llu,"
	       "\"stream_restarts\":%llu,"
	       "\"captured_seconds\":%.6f,\"seconds\":%.3f,"
	       "\"a\":{\"sent\":%llu,\"dropped\":%llu,\"duplicated\":%llu,\"reordered\":%llu},"
	       "\"b\":{\"sent\":%llu,\"dropped\":%llu,\"duplicated\":%llu,\"reordered\":%llu}}\n",
	       (unsigned long long)segs, (unsigned long long)msgs, (unsigned long long)last_seq,
	       (unsigned long long)restarts, last_ts > ts0 ? (double)(last_ts - ts0) / 1e9 : 0.0,
	       t0 ? (double)(uf_now_mono_ns() - t0) / 1e9 : 0.0, (unsigned long long)a->sent,
	       (unsigned long long)a->dropped, (unsigned long long)a->duplicated,
	       (unsigned long long)a->reordered, (unsigned long long)b->sent,
	       (unsigned long long)b->dropped, (unsigned long long)b->duplicated,
	       (unsigned long long)b->reordered);
	fflush(stdout);
	uf_reader_close(&r);
	return 0;
}
