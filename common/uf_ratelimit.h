/* Rate-limited log lines: at most `burst` lines per `interval_ns`, and the first line after
 * a quiet spell says how many were held back ("gap 1200-1300 on nasdaq (41 more suppressed)").
 *
 * A storm of gaps or consumer laps must not become a storm of log writes: each write is a
 * system call, and on a feed thread that is time not spent receiving. One limiter per kind
 * of event and per thread (no sharing, no atomics); the caller passes the time, so the
 * limiter is pure and a test drives it with a made-up clock. Same idea as the kernel's
 * ___ratelimit(). */
#ifndef UF_RATELIMIT_H
#define UF_RATELIMIT_H

#include <stdint.h>

struct uf_ratelimit {
	uint64_t interval_ns; /* window length */
	uint32_t burst;       /* lines allowed per window */
	uint32_t used;        /* lines allowed in the current window */
	uint64_t window_ns;   /* start of the current window; 0 = none yet */
	uint64_t suppressed;  /* lines held back since the last allowed one */
};

/* A limiter allowing `burst` lines per `interval_ns`. */
static inline struct uf_ratelimit uf_ratelimit_init(uint64_t interval_ns, uint32_t burst)
{
	struct uf_ratelimit rl = {interval_ns, burst, 0, 0, 0};
	return rl;
}

/* Returns 1 when the caller may log now, and then sets *suppressed to the number of lines
 * held back since the previous allowed line (to print with it) and resets that count;
 * returns 0 when the line must be dropped (it is counted). `now_ns`: any monotonic clock
 * (it must not go backwards). O(1), no system call. */
static inline int uf_ratelimit_allow(struct uf_ratelimit *rl, uint64_t now_ns, uint64_t *suppressed)
{
	if (!rl->window_ns || now_ns - rl->window_ns >= rl->interval_ns) {
		rl->window_ns = now_ns ? now_ns : 1; /* 0 means "no window yet" */
		rl->used = 0;
	}
	if (rl->used >= rl->burst) {
		rl->suppressed++;
		return 0;
	}
	rl->used++;
	*suppressed = rl->suppressed;
	rl->suppressed = 0;
	return 1;
}

#endif /* UF_RATELIMIT_H */
