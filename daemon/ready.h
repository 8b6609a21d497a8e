/* GET /ready: may consumers trust what this daemon publishes right now?
 *
 * /health says the process and its feed threads run (liveness: restart when it fails);
 * /ready says the data is good (readiness: take out of rotation, page). Not ready when,
 * for any feed:
 *   - its thread does not run;
 *   - it has received no data yet (start-up, or the lines were never there);
 *   - during a session, a line has been silent longer than the threshold (MoldUDP64 sends
 *     heartbeats every second, so silence in session is never normal);
 *   - some books are stale;
 *   - a recovery is in progress (the books lag the market until it ends).
 * Outside a session silent lines are expected and do not count.
 *
 * The decision is pure (a snapshot in, a verdict and its reasons out) so it is tested
 * without a daemon; the HTTP glue maps 1/0 to 200/503 and sends the text as the body. */
#ifndef UF_READY_H
#define UF_READY_H

#include <stddef.h>
#include <stdint.h>

#define UF_READY_MAX_LINES 2

struct uf_ready_line {
	const char *name;        /* line name, for the reason text */
	uint64_t last_packet_ns; /* CLOCK_MONOTONIC of its last packet; 0 = none yet */
};

struct uf_ready_feed {
	const char *name;         /* feed name, for the reason text */
	int running;              /* the feed thread runs */
	uint64_t messages;        /* messages delivered so far (0 = no data yet) */
	int session_open;         /* between a session's first packet and its end */
	uint64_t books_stale;     /* books currently marked stale */
	int recovery_in_progress; /* a gap is being recovered (re-request or snapshot) */
	int nlines;               /* lines in use, 1..UF_READY_MAX_LINES */
	struct uf_ready_line lines[UF_READY_MAX_LINES]; /* per line */
};

struct uf_ready_policy {
	uint64_t silent_ns; /* a line silent this long in session makes the daemon not ready */
};

/* Decides readiness at monotonic time `now_ns` for `n` feeds. Writes the body into `why`
 * (always NUL-terminated, cut at `len`): "ready: N feeds" or "not ready: " followed by
 * every reason, "; "-separated, e.g. "feed nasdaq: line B silent for 7.2 s". Returns 1 when
 * ready, 0 when not. No feeds at all is not ready. */
int uf_ready_decide(const struct uf_ready_feed *feeds, int n, uint64_t now_ns,
                    const struct uf_ready_policy *pol, char *why, size_t len);

#endif /* UF_READY_H */
