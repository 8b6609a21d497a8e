/* uf-bench e2e --sizes: wire-to-publish by datagram size (see e2e_sizes.h). */
#include "e2e_sizes.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/uf_parse.h"
#include "e2e_report.h"
#include "e2e_run.h"
#include "ring/uf_ring.h"
#include "ring/ufconsumer.h"

/* 32 bytes hold the 20-byte MoldUDP64 header and one message block, never two (the shortest
 * ITCH message is 12 bytes: two blocks take 28; uf-replay always sends a packet's first
 * message whatever --mtu says). 200 bytes: ~6 messages, what an exchange sends outside
 * bursts. 1400: uf-replay's default, ~42. */
const struct e2e_size_class e2e_size_classes[E2E_NSIZES] = {
    {32, "1 msg", 1.3},
    {200, "<=200 B", 1.3},
    {1400, "full", 2.0},
};

/* Records a ring holds per message of a generated day, at most, with room to spare: a step
 * is kept below E2E_SIZE_MAX_MSGS so that every record of it is still in the ring (capacity
 * 1 Mi records, e2e_daemon.c) when it is read after the step. */
#define E2E_SIZE_MAX_MSGS 300000u

int e2e_sizes_parse(const char *s, double *rates)
{
	char buf[256], *save = NULL;
	int n = 0;

	if (strlen(s) >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, s, strlen(s) + 1);
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if (n == E2E_SIZE_RATES || uf_parse_double(t, 1000, 50e6, &rates[n]) < 0)
			return -EINVAL;
		n++;
	}
	return n ? n : -EINVAL;
}

/* Reads the ring's records [from, to) after a step and takes the pub_delta_ns of every
 * message's LAST record that carries a receive time into `v` (cap entries). Returns the
 * samples taken, or -errno (-EOVERFLOW: the ring no longer holds `from`). */
static int64_t read_pub_deltas(const char *ring, uint64_t from, uint64_t to, uint64_t *v,
                               uint64_t cap, uint64_t *missing)
{
	struct uf_consumer_options co;
	struct uf_record buf[256];
	uf_consumer_t *c = NULL;
	uint64_t n = 0, pos = from;
	char err[256];
	int rc;

	uf_consumer_options_init(&co);
	co.tag = "uf-bench-sizes";
	co.start = UF_CONSUMER_START_OLDEST;
	if ((rc = uf_consumer_attach(ring, &co, &c, err, sizeof(err))) < 0) {
		fprintf(stderr, "uf-bench e2e: --sizes: %s\n", err);
		return rc;
	}
	if ((rc = uf_consumer_seek(c, from)) < 0) {
		uf_consumer_detach(c);
		return rc == -ERANGE ? -EOVERFLOW : rc;
	}
	*missing = 0;
	while (pos < to) {
		uint64_t first = 0;
		int k = uf_consumer_read(c, buf, sizeof(buf) / sizeof(buf[0]), &first);
		if (k < 0) {
			uf_consumer_detach(c);
			return k == -EAGAIN ? -EIO
			                    : k; /* the tail was read before: nothing missing */
		}
		for (int i = 0; i < k && first + (uint64_t)i < to; i++) {
			const struct uf_record *rec = &buf[i];
			if (!(rec->flags & UF_RECF_LAST) || rec->kind == UF_REC_RESET ||
			    (rec->flags & UF_RECF_SNAPSHOT))
				continue;
			if (!rec->rx_ts) {
				(*missing)++;
				continue;
			}
			if (n < cap)
				v[n++] = rec->pub_delta_ns;
		}
		pos = first + (uint64_t)k;
	}
	uf_consumer_detach(c);
	return (int64_t)n;
}

/* One bare receiver's step of a row: method `kind` (the run's options say which), its p10
 * into *p10. Returns 0 or -1 (the note says why). */
static int raw_step(struct run *r, struct e2e_opts *ro, int kind, const struct day *day,
                    const struct sizerow *w, struct rawres *res, uint64_t *p10, double secs)
{
	ro->raw_kind = kind;
	fprintf(stderr, "uf-bench e2e: --sizes %s: %.0f msg/s, %s datagrams: raw (%s)...\n",
	        e2e_backend_label(r->be), w->rate, e2e_size_classes[w->cls].name,
	        e2e_raw_name((enum raw_kind)kind));
	if (e2e_run_raw_step(r, day, res, w->rate, secs) < 0)
		return -1;
	if (res->lat.n) /* run_raw left its samples sorted */
		*p10 = r->raw_samples[(size_t)((double)(res->lat.n - 1) * 0.10)];
	return 0;
}

/* One row: the raw receiver, the back end's own method bare (own_kind >= 0), then a fresh
 * daemon on the same replay, read back from its ring. `ro` is the run's options (r->o). */
static void run_row(struct run *r, struct e2e_opts *ro, int raw_kind, int own_kind,
                    const struct day *day, struct sizerow *w, double secs, uint64_t *samples,
                    struct beres *scratch)
{
	struct e2e_status s0, s1;
	int64_t got;

	r->mtu = e2e_size_classes[w->cls].mtu;
	if (raw_step(r, ro, raw_kind, day, w, &w->raw, &w->raw_p10, secs) < 0) {
		memcpy(w->note, w->raw.note, sizeof(w->note)); /* same size, NUL-terminated */
		return;
	}
	if (own_kind >= 0 && raw_step(r, ro, own_kind, day, w, &w->own, &w->own_p10, secs) < 0) {
		memcpy(w->note, w->own.note, sizeof(w->note));
		return;
	}
	fprintf(stderr, "uf-bench e2e: --sizes %s: %.0f msg/s, %s datagrams: feed...\n",
	        e2e_backend_label(r->be), w->rate, e2e_size_classes[w->cls].name);
	memset(scratch, 0, sizeof(*scratch));
	if (e2e_run_feed_up(r, day, scratch, 0.2) < 0) {
		snprintf(w->note, sizeof(w->note), "%.150s", scratch->note);
		e2e_run_feed_down(r);
		return;
	}
	if (e2e_status_read(r->status_port, &s0) < 0 ||
	    e2e_run_feed_step(r, day, &w->feed, w->rate, secs) < 0 ||
	    e2e_status_read(r->status_port, &s1) < 0) {
		e2e_daemon_step_failed(r, scratch, "the feed step failed");
		snprintf(w->note, sizeof(w->note), "%.150s", scratch->note);
		e2e_run_feed_down(r);
		return;
	}
	got = read_pub_deltas(r->ring, s0.ring_sequence, s1.ring_sequence, samples, r->cap,
	                      &w->pub_missing);
	e2e_run_feed_down(r);
	if (got < 0) {
		snprintf(w->note, sizeof(w->note), "reading the ring back: %s",
		         strerror((int)-got));
		return;
	}
	uf_bench_percentiles(samples, (size_t)got, &w->pub); /* sorts them */
	if (got > 0)
		w->pub_p10 = samples[(size_t)((double)(got - 1) * 0.10)];
	w->ran = w->raw.ran && (own_kind < 0 || w->own.ran) && w->feed.ran && got > 0;
	if (!w->ran)
		snprintf(w->note, sizeof(w->note), "no sample");
}

void e2e_run_sizes(const struct e2e_opts *o, enum backend be, const struct day *day,
                   struct sizeres *res)
{
	struct e2e_opts ro = *o; /* the raw method: --raw's, else busy recvmsg (the issue's) */
	struct run r = {.o = &ro, .be = be, .feed = -1, .raw_pid = -1};
	static struct beres scratch; /* daemon notes; big */
	uint64_t *samples = NULL;
	double secs;

	memset(res, 0, sizeof(*res));
	res->be = (int)be;
	if (ro.raw_kind < 0)
		ro.raw_kind = RAW_RECVMSG;
	res->raw_kind = ro.raw_kind;
	res->own_kind = (int)e2e_raw_for(be);
	if (res->own_kind == res->raw_kind)
		res->own_kind = -1;
	if (e2e_run_addresses(&r, 89, "sz", res->note, sizeof(res->note)) < 0)
		return;

	/* --duration over every replay of the back end: each row replays two or three times */
	secs = o->duration / ((res->own_kind >= 0 ? 3.0 : 2.0) * o->nsize_rates * E2E_NSIZES);
	if (secs < 0.25)
		secs = 0.25;
	r.cap = E2E_SIZE_MAX_MSGS + 1000;
	r.ctl = uf_bench_shared_alloc(sizeof(*r.ctl));
	r.raw = uf_bench_shared_alloc(sizeof(*r.raw));
	r.raw_samples = uf_bench_shared_alloc(r.cap * sizeof(uint64_t));
	samples = malloc(r.cap * sizeof(uint64_t));
	if (!r.ctl || !r.raw || !r.raw_samples || !samples) {
		snprintf(res->note, sizeof(res->note), "out of memory for samples");
		goto out;
	}
	for (int i = 0; i < o->nsize_rates && !e2e_stop; i++)
		for (int k = 0; k < E2E_NSIZES && !e2e_stop; k++) {
			struct sizerow *w = &res->row[res->n++];
			double s = secs;
			w->rate = o->size_rates[i];
			w->cls = k;
			if (s * w->rate > E2E_SIZE_MAX_MSGS)
				s = E2E_SIZE_MAX_MSGS / w->rate;
			run_row(&r, &ro, res->raw_kind, res->own_kind, day, w, s, samples,
			        &scratch);
			if (!w->ran)
				fprintf(stderr, "uf-bench e2e: --sizes: %s\n", w->note);
		}
	res->ok = !e2e_stop;
	for (int i = 0; i < res->n; i++)
		if (!res->row[i].ran) {
			res->ok = 0;
			snprintf(res->note, sizeof(res->note), "%s", res->row[i].note);
		}
out:
	if (r.ctl)
		__atomic_store_n(&r.ctl->stop, 1, __ATOMIC_RELEASE);
	e2e_daemon_stop(&r);
	uf_ring_unlink(r.ring, NULL);
	free(samples);
	uf_bench_shared_free(r.ctl, sizeof(*r.ctl));
	uf_bench_shared_free(r.raw, sizeof(*r.raw));
	uf_bench_shared_free(r.raw_samples, r.cap * sizeof(uint64_t));
}

int e2e_sizes_main(const struct e2e_opts *o, const struct day *day, struct machine *m)
{
	static struct sizeres rs[BE_COUNT];
	char path[PATH_MAX];
	json_t *root;
	int n = 0, rc = 0;

	for (int be = 0; be < BE_COUNT && !e2e_stop; be++) {
		if (!(o->mask & (1u << be)))
			continue;
		e2e_run_sizes(o, (enum backend)be, day, &rs[n]);
		if (!rs[n].ok) {
			fprintf(stderr, "uf-bench e2e: --sizes %s: %s\n",
			        e2e_backend_label((enum backend)be), rs[n].note);
			rc = 1;
		}
		n++;
	}
	m->load_end = uf_bench_loadavg();
	root = e2e_report_sizes_json(rs, n, o, m);
	snprintf(path, sizeof(path), "%s/e2e-sizes.json", o->results);
	if (json_dump_file(root, path, JSON_INDENT(1)) < 0)
		fprintf(stderr, "uf-bench e2e: cannot write %s\n", path);
	if (o->json) {
		json_dumpf(root, stdout, JSON_COMPACT);
		putchar('\n');
	} else {
		e2e_report_sizes_table(rs, n, m);
		printf("results: %s\n", path);
	}
	json_decref(root);
	return e2e_stop ? 130 : rc;
}
