/* uf-bench e2e orchestration: one back end's run, wire to consumer. uf-bench starts uringfeed
 * on a generated config (e2e_daemon.c), forks consumer processes that read its ring
 * (e2e_consumer.c), and replays prefixes of the day with uf-replay step by step, the rate
 * searches included (e2e_run.c). Everything here starts, watches or stops a process; what is
 * measured lands in the e2e_model.h structs. */
#ifndef UF_BENCH_E2E_RUN_H
#define UF_BENCH_E2E_RUN_H

#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <sys/types.h>

#include "e2e_day.h"
#include "e2e_model.h"
#include "e2e_raw.h"

/* Set by SIGINT/SIGTERM (bench_e2e.c installs the handlers): every wait gives up. */
extern volatile sig_atomic_t e2e_stop;

/* What one consumer counted in one step (shared memory, written by the consumer). */
struct cstep {
	uint64_t messages;    /* UF_RECF_LAST records read (one per message that made records) */
	uint64_t gap_recs;    /* UF_REC_GAP records read */
	uint64_t lap_lost;    /* records lost to ring laps */
	uint64_t nsamples;    /* latency samples stored */
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
	/* Burst drain (the step ST_BURST only): messages per burst, and per consumer and burst
	 * the earliest rx_ts and the read time of its last message. uf-bench clears them. */
	double burst_per;
	uint64_t burst_first_rx[MAXC][RAW_MAX_BURSTS];
	uint64_t burst_last_rd[MAXC][RAW_MAX_BURSTS];
	uint64_t burst_msgs[MAXC][RAW_MAX_BURSTS];
};

/* Everything one back end's run needs. */
struct run {
	const struct e2e_opts *o;
	enum backend be;
	char ring[64];           /* ring name */
	uint16_t status_port;    /* HTTP */
	uint16_t port_a, port_b; /* line ports */
	uint16_t port_rr;        /* re-request server (uf-replay) */
	char group_a[32], group_b[32];
	pid_t feed;              /* uringfeed */
	pid_t cons[MAXC];        /* consumers */
	int ncons;               /* started */
	struct ctl *ctl;         /* shared control */
	uint64_t *samples;       /* [consumer][2 sampled steps][cap] */
	uint64_t cap;            /* samples per consumer per sampled step */
	size_t samples_size;     /* bytes */
	unsigned session;        /* session counter */
	struct rawctl *raw;      /* shared with the raw receiver of a step */
	pid_t raw_pid;           /* the raw receiver while its step runs, else -1 */
	struct placement *place; /* sampled while a replay runs, NULL: not */
	uint64_t *raw_samples;   /* [cap] its latency samples */
	char log[PATH_MAX];      /* uringfeed's stderr */
	size_t mtu;              /* uf-replay --mtu of every step (0: its default) */
	int busy_clock;          /* the next daemon started gets "busy_clock": true */
};

/* Runs every step of back end `be` (warm-up, steady, burst, both rate searches) and fills
 * `res`; res->ok says whether it ran to the end, res->note why not. Leaves no process and no
 * ring behind. */
void e2e_run_backend(const struct e2e_opts *o, enum backend be, const struct day *day,
                     struct beres *res);

/* The consumer process `idx` (forked; its exit status is the return value): reads the ring
 * of ctl->feed_pid's uringfeed, counting into ctl->res[idx][ctl->step] and storing latency
 * samples of the sampled steps, until ctl->stop. Follows a restarted daemon to its new ring. */
/* Free loopback ports, groups 239.<net>.x.y and the ring name for run r (see e2e_run.c). */
int e2e_run_addresses(struct run *r, int net, const char *tag, char *note, size_t note_len);
int e2e_consumer_main(struct run *r, int idx);

/* Writes the config, starts uringfeed and waits for GET /health = 200 (20 s at most).
 * Returns 0, or -errno with res->note saying why (with the daemon's last log line). */
int e2e_daemon_start(struct run *r, struct beres *res);

/* SIGTERM, then SIGKILL after 10 s. */
void e2e_daemon_stop(struct run *r);

/* The datagram-size rows (e2e_sizes.c) run these steps of e2e_run.c on a run they set up
 * themselves, replaying with r->mtu:
 * - e2e_run_raw_step: the raw receiver's baseline of a steady replay of `secs` at `rate`;
 * - e2e_run_feed_up: a fresh daemon (status port, consumers attached) and a warm-up of
 *   `warm_s` at --rate; e2e_run_feed_down stops it and removes its ring;
 * - e2e_run_feed_step: a steady replay of `secs` at `rate` into the running daemon, counted as
 *   the steady latency step (ST_STEADY) is.
 * Each returns 0 or -errno (the note of `w` / `res` says why). */
int e2e_run_raw_step(struct run *r, const struct day *day, struct rawres *w, double rate,
                     double secs);
int e2e_run_feed_up(struct run *r, const struct day *day, struct beres *res, double warm_s);
void e2e_run_feed_down(struct run *r);
int e2e_run_feed_step(struct run *r, const struct day *day, struct step *s, double rate,
                      double secs);

/* Says in res->note why a step could not run, with the daemon's last log line when it died. */
void e2e_daemon_step_failed(struct run *r, struct beres *res, const char *what);

#endif /* UF_BENCH_E2E_RUN_H */
