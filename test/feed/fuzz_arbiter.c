/* libFuzzer target: a genuine day and an attacker through the arbiter.
 *
 * The input picks the parameters, a genuine session of T messages (1..256, each message
 * carries its own sequence, so a delivered message can be checked), and a list of steps:
 * genuine packets per line (sent, lost, repeated, heartbeats, end of session), ticks
 * (clock jumps, drained or not), an honest request server answering the arbiter's real
 * re-requests, and hostile packets with full 64-bit sequences, any kind, other session
 * names, on ONE compromised line and on the re-request socket (spoofing the server).
 *
 * The threat model the arbiter promises to survive (docs/feed.md, "What the arbiter
 * trusts"), so the generator respects it:
 *   - the day is established first (its first packet reaches every line before anything
 *     hostile);
 *   - the attacker controls one line: its packets of the genuine session lie beyond the
 *     day's last sequence (it cannot forge the content of a real sequence: first copy wins)
 *     and never jump_confirm - 1 in a row without a genuine packet on that line between
 *     them; packets of other sessions never session_confirm - 1 in a row likewise;
 *   - on the re-request socket it may send anything except data of the genuine session for
 *     sequences the arbiter requested (a lying server inside the requested range cannot be
 *     told from an honest one).
 *
 * Checked on every callback and at the end:
 *   - the stream is contiguous: each delivery or gap marker starts where the previous one
 *     ended (from 1 after every new session), so nothing is delivered twice or out of order;
 *   - every delivered message of the genuine day is the genuine message (content check);
 *   - the genuine session is replaced only once all its messages were delivered or
 *     reported as a gap;
 *   - at the end (end of session on every line jump_confirm times, then the clock runs until
 *     no gap is open), every genuine message was delivered exactly once or reported in a gap;
 *   - no counter moves by an absurd amount (gap_messages stays within what the day and the
 *     attacker's accepted packets could announce), and no crash or sanitizer report. */
#include <arpa/inet.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/uf_time.h"
#include "decode/uf_mold.h"
#include "feed/arbiter.h"

#define FZ_MAXT    256 /* genuine messages at most */
#define FZ_MAXP    FZ_MAXT
#define FZ_MAXREQ  256 /* re-requests remembered */
#define FZ_BUF     512
#define FZ_MSG_LEN 9 /* 'G' or 'H', then the sequence (big endian) */
#define FZ_GENUINE "GENUINE   "
#define FZ_FAIL(c) ((c) ? (void)0 : abort())

static struct {
	uint64_t T;                    /* genuine messages 1..T */
	uint32_t npk;                  /* genuine packets */
	uint64_t pk_seq[FZ_MAXP];      /* their first sequence */
	uint32_t pk_cnt[FZ_MAXP];      /* their message count */
	int cur_genuine;               /* the arbiter's current session is the genuine one */
	uint64_t next;                 /* the next sequence the stream must continue with */
	uint32_t nreq;                 /* requests seen by the server */
	uint64_t req_first[FZ_MAXREQ]; /* their ranges */
	uint64_t req_end[FZ_MAXREQ];
	int req_overflow;          /* more requests than remembered */
	uint64_t accepted_hostile; /* hostile packets sent (bound for counters) */
	int left;                  /* the genuine day was replaced (its instance is over) */
} g;

static int fz_debug; /* FZ_DEBUG=1 in the environment: trace packets and gaps on stderr */

static void fz_deliver(void *ctx, const struct uf_frame *pkt, uint32_t skip, uint64_t rx,
                       unsigned src)
{
	FZ_FAIL(skip < pkt->count && pkt->seq + skip == g.next);
	struct uf_frame_iter it;
	struct uf_frame_msg b;
	uf_mold_iter_init(&it, pkt);
	for (uint32_t i = 0; uf_mold_next(&it, &b); i++) {
		if (i < skip)
			continue;
		if (g.cur_genuine && b.seq <= g.T)
			FZ_FAIL(b.len == FZ_MSG_LEN && b.msg[0] == 'G' &&
			        uf_be64(b.msg + 1) == b.seq);
	}
	g.next = pkt->seq + pkt->count;
}

static void fz_gap(void *ctx, uint64_t first, uint64_t count)
{
	if (fz_debug)
		fprintf(stderr, "gap %llu +%llu (next %llu)\n", (unsigned long long)first,
		        (unsigned long long)count, (unsigned long long)g.next);
	FZ_FAIL(first == g.next && count != 0);
	g.next = first + count;
}

static void fz_session(void *ctx, const char s[UF_MOLD_SESSION_LEN])
{
	/* Leaving the genuine day: all of it must have been accounted for. (Coming back to its
	 * name later is a replay of an old day: a new instance, checked only for contiguity.) */
	if (g.cur_genuine && !g.left) {
		FZ_FAIL(g.next > g.T);
		g.left = 1;
	}
	g.cur_genuine = !memcmp(s, FZ_GENUINE, UF_MOLD_SESSION_LEN);
	g.next = 1;
}

static void fz_send(struct uf_arb *a, const uint8_t *buf, size_t len, uint64_t now, unsigned src)
{
	struct uf_frame p;
	if (fz_debug && uf_mold_open(&p, buf, len) > 0)
		fprintf(stderr,
		        "src %u %.10s seq %llu count %u | exp %llu high %llu gapmsgs %llu\n", src,
		        p.session, (unsigned long long)p.seq, p.count,
		        (unsigned long long)a->expected, (unsigned long long)a->high,
		        (unsigned long long)a->st->gap_messages);
	if (uf_mold_open(&p, buf, len) > 0)
		uf_arb_packet(a, &p, now, src);
}

/* Builds a data packet of `count` messages from `seq`; `mark` 'G' genuine, 'H' hostile. */
static size_t fz_build(uint8_t *buf, const char *sess, uint64_t seq, uint32_t count, char mark)
{
	struct uf_mold_builder b;
	uf_mold_builder_init(&b, buf, FZ_BUF, sess, seq);
	for (uint32_t k = 0; k < count; k++) {
		uint8_t msg[FZ_MSG_LEN] = {(uint8_t)mark};
		uf_put_be64(msg + 1, seq + k);
		(void)uf_mold_builder_add(&b, msg, sizeof(msg));
	}
	return b.len;
}

static size_t fz_control(uint8_t *buf, const char *sess, uint64_t seq, int eos)
{
	if (eos)
		uf_mold_build_end_of_session(buf, sess, seq);
	else
		uf_mold_build_heartbeat(buf, sess, seq);
	return UF_MOLD_HDR_LEN;
}

/* The honest server: reads the arbiter's re-requests, remembers them, and (when `answer`)
 * answers what the genuine day holds, 4 messages per packet. */
static void fz_serve(struct uf_arb *a, int srv, int answer, uint64_t now)
{
	uint8_t in[64], buf[FZ_BUF];
	ssize_t n;
	while ((n = recv(srv, in, sizeof(in), MSG_DONTWAIT)) > 0) {
		struct uf_frame req;
		memset(&req, 0, sizeof(req));
		FZ_FAIL(uf_mold_rerequest_parse(&req, in, (size_t)n) == 0);
		if (g.nreq < FZ_MAXREQ) {
			g.req_first[g.nreq] = req.seq;
			g.req_end[g.nreq++] = req.seq + req.count;
		} else {
			g.req_overflow = 1;
		}
		if (!answer || memcmp(req.session, FZ_GENUINE, UF_MOLD_SESSION_LEN))
			continue;
		for (uint64_t s = req.seq; s < req.seq + req.count && s <= g.T; s += 4) {
			uint64_t c = req.seq + req.count - s;
			if (c > 4)
				c = 4;
			if (s + c > g.T + 1)
				c = g.T + 1 - s;
			fz_send(a, buf, fz_build(buf, FZ_GENUINE, s, (uint32_t)c, 'G'), now,
			        UF_ARB_SRC_RECOVERY);
		}
	}
}

/* 1 when [s, e) overlaps the genuine day and some request the server saw. */
static int fz_requested(uint64_t s, uint64_t e)
{
	if (g.req_overflow)
		return 1;
	for (uint32_t i = 0; i < g.nreq; i++)
		if (s < g.req_end[i] && e > g.req_first[i])
			return 1;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int fd = -2, srv = -1;
	static struct sockaddr_in srv_addr;
	static struct uf_feed_stats st;
	if (fd == -2) {
		fz_debug = getenv("FZ_DEBUG") != NULL;
		fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
		srv = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
		srv_addr.sin_family = AF_INET;
		srv_addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		socklen_t sl = sizeof(srv_addr);
		if (fd < 0 || srv < 0 ||
		    bind(srv, (struct sockaddr *)&srv_addr, sizeof(srv_addr)) ||
		    getsockname(srv, (struct sockaddr *)&srv_addr, &sl))
			abort();
	}
	if (size < 4)
		return 0;
	uint8_t drain[64];
	while (recv(srv, drain, sizeof(drain), MSG_DONTWAIT) > 0) /* a previous run's requests */
		;
	const uint8_t h0 = data[0], h1 = data[1], h2 = data[2], h3 = data[3];
	struct uf_feed_config cfg;
	memset(&cfg, 0, sizeof(cfg));
	cfg.nlines = 1 + (h0 & 1);
	cfg.recovery.enabled = (h0 >> 1) & 1;
	cfg.recovery.server = srv_addr;
	cfg.recovery.max_count = 1 + (h2 & 15);
	cfg.recovery.timeout_ms = 1;
	cfg.recovery.retries = 1;
	cfg.recovery.wait_ms = 1;
	cfg.recovery.wait_packets = 2;
	cfg.recovery.queue_packets = 2 + (h3 >> 5); /* small: overflow is reachable */
	cfg.recovery.max_requests_per_s = 1000000;
	const unsigned bad_line = cfg.nlines == 2 ? (h0 >> 2) & 1 : 0;
	const int honest = (h0 >> 3) & 1;
	struct uf_arb a;
	struct uf_arb_cb cb = {fz_deliver, fz_gap, fz_session, NULL};
	memset(&st, 0, sizeof(st));
	if (uf_arb_init(&a, &cfg, &uf_mold_framing, fd, FZ_BUF, &st, &cb) < 0)
		return 0;
	struct uf_arb_params prm;
	uf_arb_params_default(&prm);
	prm.max_jump = 1 + (uint64_t)(h0 >> 4) * 8;
	prm.jump_confirm = 2 + (h3 & 3);
	prm.session_confirm = 2 + ((h3 >> 2) & 7);
	if (uf_arb_set_params(&a, &prm) < 0)
		abort();

	/* The genuine day: T messages packed 1..4 per packet (a tiny LCG seeded by the input). */
	memset(&g, 0, sizeof(g));
	g.T = 1 + h1;
	uint32_t lcg = h2 * 2654435761u + 1;
	for (uint64_t s = 1; s <= g.T; g.npk++) {
		lcg = lcg * 1103515245u + 12345u;
		uint64_t c = 1 + ((lcg >> 16) & 3);
		if (s + c > g.T + 1)
			c = g.T + 1 - s;
		g.pk_seq[g.npk] = s;
		g.pk_cnt[g.npk] = (uint32_t)c;
		s += c;
	}
	g.cur_genuine = 1; /* the day is established first: */
	g.next = 1;
	uint64_t now = uf_now_mono_ns();
	uint8_t buf[FZ_BUF];
	uint32_t cursor[UF_CFG_MAX_LINES] = {0};
	size_t len = fz_build(buf, FZ_GENUINE, g.pk_seq[0], g.pk_cnt[0], 'G');
	for (int l = 0; l < cfg.nlines; l++) {
		fz_send(&a, buf, len, now, (unsigned)l);
		cursor[l] = 1;
	}
	uint32_t row_same = 0, row_other = 0; /* hostile packets in a row on the bad line */

	/* 12 bytes per step: op, three argument bytes, a 64-bit sequence. */
	for (size_t i = 4; i + 12 <= size; i += 12) {
		const uint8_t op = data[i], b1 = data[i + 1], b2 = data[i + 2], b3 = data[i + 3];
		uint64_t seq64 = uf_be64(data + i + 4);
		switch (op & 7) {
		case 0:
		case 1:
		case 2: { /* genuine traffic on one line */
			unsigned l = cfg.nlines == 2 ? (op >> 3) & 1 : 0;
			unsigned act = (op >> 4) & 3;
			uint32_t c = cursor[l];
			int data_or_hb =
			    1; /* what tells the arbiter this line still runs the day */
			if (c >= g.npk) {
				len = fz_control(buf, FZ_GENUINE, g.T + 1, 1);
				data_or_hb = 0;
			} else if (act == 3) {
				len = fz_control(buf, FZ_GENUINE, g.pk_seq[c], 0);
			} else {
				if (act == 2 && c > 0)
					c--; /* the previous packet again */
				else
					cursor[l]++;
				if (act == 1)
					break; /* lost on this line */
				len = fz_build(buf, FZ_GENUINE, g.pk_seq[c], g.pk_cnt[c], 'G');
			}
			fz_send(&a, buf, len, now, l);
			if (l == bad_line && data_or_hb)
				row_same = row_other = 0;
			break;
		}
		case 3:   /* hostile, on the bad line */
		case 4: { /* hostile, on the re-request socket */
			int recovery = (op & 7) == 4;
			int kind = b1 & 3; /* 0, 3 data; 1 heartbeat; 2 end of session */
			int genuine_name = (b1 >> 2) & 1;
			char sess[UF_MOLD_SESSION_LEN];
			memcpy(sess, FZ_GENUINE, sizeof(sess));
			if (!genuine_name) {
				memset(sess, ' ', sizeof(sess));
				sess[0] = 'E';
				/* Few names, so rows of one name are easy to reach; one is not
				 * ASCII. */
				sess[1] = (char)('A' + (b2 & 3));
				sess[9] = (b2 & 3) == 3 ? (char)0xff : ' ';
			}
			uint32_t cnt = 1 + (b3 & 15);
			uint64_t seq = seq64;
			if (kind == 0 || kind == 3) {
				if (seq > UINT64_MAX - cnt && (b3 & 0x80))
					seq = UINT64_MAX - cnt; /* right at the top, not past it */
			}
			if (genuine_name && !recovery && seq <= g.T)
				seq += g.T + 1; /* the attacker cannot forge a real sequence */
			if (recovery)
				fz_serve(&a, srv, honest, now); /* know every request sent so far */
			if (genuine_name && recovery && (kind == 0 || kind == 3) &&
			    fz_requested(seq, seq + cnt) && seq <= g.T)
				break; /* a lie inside a requested range: undetectable by design */
			if (!recovery) {
				uint32_t *row = genuine_name ? &row_same : &row_other;
				uint32_t cap =
				    genuine_name ? prm.jump_confirm : prm.session_confirm;
				if (*row + 1 >= cap)
					break;
				(*row)++;
			}
			if (kind == 1)
				len = fz_control(buf, sess, seq, 0);
			else if (kind == 2)
				len = fz_control(buf, sess, seq, 1);
			else
				len = fz_build(buf, sess, seq, cnt, 'H');
			g.accepted_hostile++;
			fz_send(&a, buf, len, now, recovery ? UF_ARB_SRC_RECOVERY : bad_line);
			break;
		}
		case 5: /* time passes: up to 25 ms, or up to ~25 s (lines fall silent) */
			now += (uint64_t)b1 * ((op & 8) ? 100000000u : 100000u);
			if (uf_arb_gap_open(&a))
				uf_arb_tick(&a, now, (op >> 4) & 1);
			break;
		case 6: /* the server reads its requests and (if honest) answers */
			fz_serve(&a, srv, honest, now);
			break;
		default: /* a tick without time passing */
			if (uf_arb_gap_open(&a))
				uf_arb_tick(&a, now, (op >> 4) & 1);
			break;
		}
	}

	/* Closing: the genuine end of session on every line, jump_confirm times (so a far end
	 * is believed even on one line), then the clock runs until no gap is left. */
	len = fz_control(buf, FZ_GENUINE, g.T + 1, 1);
	for (uint32_t k = 0; k < prm.jump_confirm; k++)
		for (int l = 0; l < cfg.nlines; l++)
			fz_send(&a, buf, len, now, (unsigned)l);
	for (int k = 0; k < 10000 && uf_arb_gap_open(&a); k++) {
		fz_serve(&a, srv, honest, now);
		now += 2000000u;
		uf_arb_tick(&a, now, 1);
	}
	FZ_FAIL(!uf_arb_gap_open(&a));
	if (!g.left)
		FZ_FAIL(g.next >= g.T + 1); /* every genuine message delivered or reported */
	/* No absurd counter while the day ran: the stream can only reach as far as the day
	 * and each accepted packet (max_jump + its count past what was shown) take it; given-up
	 * ranges are disjoint, and each gap counts at most that span when it opens. (After the
	 * day, the attacker's own session may prove any jump with packets in a row.) */
	uint64_t span = g.T + 1 + (g.accepted_hostile + cfg.nlines + 1) * (prm.max_jump + 16);
	if (!g.left)
		FZ_FAIL(st.messages_unrecovered <= span && st.gap_messages <= st.gaps * span);
	uf_arb_fini(&a);
	return 0;
}
