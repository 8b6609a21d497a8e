/* uf-bench e2e: the consumer process (see e2e_run.h). It reads the daemon's ring through
 * libufconsumer as any consumer would, and counts per step what the loss verdict and the
 * latency figures need: LAST records, gap records, laps, feed_seq holes, and one
 * latency sample (read time - kernel receive timestamp) per message of the sampled steps. */
#include <errno.h>
#include <stdio.h>
#include <time.h>

#include "common/uf_time.h"
#include "e2e_run.h"
#include "ring/uf_ring.h"
#include "ring/ufconsumer.h"

/* Attaches to the ring of the current uringfeed (ctl->feed_pid; after a restart the old,
 * closed ring may still be found first), retrying for 15 s. */
static int consumer_attach(struct run *r, int idx, uf_consumer_t **c)
{
	struct ctl *ctl = r->ctl;
	struct uf_consumer_options co;
	uint64_t give_up = uf_now_mono_ns() + 15000000000ull;
	char err[256];
	int rc;

	uf_consumer_options_init(&co);
	co.tag = "uf-bench-e2e";
	if (r->o->consumer_spin_us >= 0)
		co.spin_ns = (uint64_t)r->o->consumer_spin_us * 1000u;
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
		if (__atomic_load_n(&ctl->feed_pid, __ATOMIC_ACQUIRE) <= 0) /* stopped on purpose */
			give_up = uf_now_mono_ns() + 15000000000ull;
		if (uf_now_mono_ns() > give_up || __atomic_load_n(&ctl->stop, __ATOMIC_ACQUIRE)) {
			fprintf(stderr, "uf-bench e2e: consumer %d: no live ring %s within 15 s\n",
			        idx, r->ring);
			return -ETIMEDOUT;
		}
		e2e_sleep_ms(5);
	}
}

int e2e_consumer_main(struct run *r, int idx)
{
	struct ctl *ctl = r->ctl;
	struct uf_record buf[64];
	uf_consumer_t *c = NULL;
	uint64_t deadline = uf_now_mono_ns() + 60000000000ull, last_seq = 0;

	if (consumer_attach(r, idx, &c) < 0) {
		__atomic_store_n(&ctl->ready[idx], 2, __ATOMIC_RELEASE);
		return 1;
	}
	__atomic_store_n(&ctl->ready[idx], 1, __ATOMIC_RELEASE);
	for (;;) {
		uint64_t first = 0;
		int n = uf_consumer_read(c, buf, 64, &first);
		if (n > 0) {
			uint64_t now = uf_now_realtime_ns();
			uint32_t st = __atomic_load_n(&ctl->step, __ATOMIC_ACQUIRE);
			struct cstep *cs = &ctl->res[idx][st];
			uint64_t *smp = NULL;
			if (st == ST_STEADY || st == ST_BURST)
				smp = r->samples + ((uint64_t)idx * 2 + (st - ST_STEADY)) * r->cap;
			for (int i = 0; i < n; i++) {
				const struct uf_record *rec = &buf[i];
				if (rec->kind == UF_REC_GAP)
					cs->gap_recs++;
				/* a RESET (new session, snapshot) ends no message: not counted */
				if (!(rec->flags & UF_RECF_LAST) || rec->kind == UF_REC_RESET)
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
				double per;
				__atomic_load(&ctl->burst_per, &per, __ATOMIC_ACQUIRE);
				if (rec->rx_ts && per > 0) {
					/* no packet spans two bursts (uf-replay): the message's own
					 * sequence says its burst */
					uint64_t b = e2e_burst_of(rec->feed_seq, per);
					if (b < RAW_MAX_BURSTS) {
						uint64_t *f = &ctl->burst_first_rx[idx][b];
						if (!*f || rec->rx_ts < *f)
							*f = rec->rx_ts;
						ctl->burst_last_rd[idx][b] = now;
						ctl->burst_msgs[idx][b]++;
					}
				}
				if (!smp || rec->rx_ts == 0 || cs->nsamples >= r->cap)
					continue;
				/* rx_ts after the read (clocks): counted as 0 */
				smp[cs->nsamples++] = now >= rec->rx_ts ? now - rec->rx_ts : 0;
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
		if (__atomic_load_n(&ctl->stop, __ATOMIC_ACQUIRE) || uf_now_mono_ns() > deadline)
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
		/* Spins spin_ns (--consumer-spin-us, else the library's default) before sleeping
		 * on the futex. */
		uf_consumer_wait(c, 2000000);
		deadline = uf_now_mono_ns() + 60000000000ull; /* alive while the daemon is */
	}
	if (c)
		uf_consumer_detach(c);
	return 0;
}
