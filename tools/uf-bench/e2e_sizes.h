/* uf-bench e2e --sizes: wire-to-publish against the raw receiver by datagram size (issue 26
 * item 3). An exchange sends small datagrams outside bursts (a few messages of one
 * microsecond) and full ones inside; the feed's fixed cost per datagram weighs most on the
 * small ones. For each rate asked and each size class (one message a datagram, <= 200 bytes
 * (~6 messages), full 1400-byte datagrams, as uf-replay --mtu packs them) one back end's run
 * replays the same steady prefix of the day, alternated: first to the raw receiver
 * (e2e_raw.c, busy recvmsg unless --raw says otherwise), then to the back end's own receive
 * method bare (when it is another), then to a fresh uringfeed. The
 * figures are exact per message: the raw receivers' read time - kernel rx timestamp, and the
 * feed's records' pub_delta_ns (publish time - the same kernel timestamp), read from the ring
 * after the step (no consumer runs meanwhile, so nothing but the feed competes with the raw
 * receiver's conditions). */
#ifndef UF_BENCH_E2E_SIZES_H
#define UF_BENCH_E2E_SIZES_H

#include <stddef.h>
#include <stdint.h>

#include "e2e_day.h"
#include "e2e_model.h"

struct machine; /* e2e_report.h */

#define E2E_NSIZES 3 /* size classes: one message, <= 200 bytes, full */

/* One size class: the uf-replay --mtu that makes it, its name in the tables, and the aim of
 * issue 26 for it (wire-to-publish p50 / raw p50 at most). */
struct e2e_size_class {
	size_t mtu;       /* MoldUDP64 payload bytes at most (32: one ITCH message always) */
	const char *name; /* "1 msg", "<=200 B", "full" */
	double aim;       /* 1.3 up to 200 bytes, 2 for full datagrams */
};
extern const struct e2e_size_class e2e_size_classes[E2E_NSIZES];

/* One row: a rate and a size class, raw then feed. */
struct sizerow {
	int ran;                 /* both sides measured */
	double rate;             /* msg/s asked of uf-replay */
	int cls;                 /* index in e2e_size_classes */
	struct rawres raw;       /* the raw receiver's step (its datagrams give msgs/datagram) */
	struct step feed;        /* the feed's step: delivered, loss and why */
	struct uf_bench_pct pub; /* pub_delta_ns of the step's messages (LAST records), exact */
	uint64_t pub_missing;    /* LAST records of the step without a receive time */
	/* p10 of both, ns: not the aim's figure, but the one a busy host leaves readable. A
	 * message that lands while its reader is on a CPU is read at the path's own cost; the
	 * p50 of a host whose run queues are longer than a datagram gap is mostly the wait for a
	 * CPU, on both sides alike. */
	uint64_t raw_p10, pub_p10;
	/* The back end's own receive method, bare (e2e_raw_for: io_uring for io_uring_nosqpoll),
	 * on the same replay, when it is not the --raw method: it splits the row's ratio into
	 * what the receive method costs against the --raw one (own / raw) and what the feed's
	 * work adds to its own receive (publish / own). */
	struct rawres own;
	uint64_t own_p10;
	char note[160]; /* why a side did not run (as long as rawres.note) */
};

/* One back end's rows, in the order run (rate by rate, class by class). */
struct sizeres {
	int be;       /* enum backend */
	int raw_kind; /* enum raw_kind of every row */
	int own_kind; /* enum raw_kind of every row's `own`, -1: none (it is the raw method) */
	int n;        /* rows */
	struct sizerow row[E2E_SIZE_RATES * E2E_NSIZES];
	int ok;         /* every row ran */
	char note[160]; /* why not */
};

/* Parses --sizes: comma-separated rates in msg/s (1000 to 50 M), at most E2E_SIZE_RATES.
 * Returns how many, or -EINVAL. */
int e2e_sizes_parse(const char *s, double *rates);

/* Runs every rate of o->size_rates x every size class for back end `be`, `secs` of replay a
 * step, and fills `res`. Leaves no process and no ring behind. */
void e2e_run_sizes(const struct e2e_opts *o, enum backend be, const struct day *day,
                   struct sizeres *res);

/* The whole of `uf-bench e2e --sizes`: every back end of o->mask in turn, then the table (or
 * the JSON with o->json) on stdout and DIR/e2e-sizes.json; m->load_end is read here. Returns
 * the exit status: 0 every row ran, 1 one did not, 130 interrupted. */
int e2e_sizes_main(const struct e2e_opts *o, const struct day *day, struct machine *m);

#endif /* UF_BENCH_E2E_SIZES_H */
