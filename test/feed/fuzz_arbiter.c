/* libFuzzer target: any sequence of packets, heartbeats, ends of session, sessions, sources
 * and clock jumps through the arbiter. Invariant checked on every callback: the stream that
 * comes out is contiguous (each delivery or gap marker starts exactly where the previous one
 * ended, from 1 after every new session) and never goes backwards; no crash, no leak, no
 * sanitizer report. */
#include <arpa/inet.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "decode/uf_mold.h"
#include "feed/arbiter.h"

static uint64_t g_next; /* the next sequence the stream must continue with */

static void fz_deliver(void *ctx, const struct uf_mold_packet *pkt, uint32_t skip, uint64_t rx,
                       unsigned src)
{
	if (skip >= pkt->count || pkt->seq + skip != g_next)
		abort();
	g_next = pkt->seq + pkt->count;
}

static void fz_gap(void *ctx, uint64_t first, uint64_t count)
{
	if (first != g_next || count == 0)
		abort();
	g_next = first + count;
}

static void fz_session(void *ctx, const char s[UF_MOLD_SESSION_LEN])
{
	g_next = 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int fd = -2;
	static struct uf_feed_stats st;
	if (fd == -2)
		fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
	if (size < 1)
		return 0;
	struct uf_feed_config cfg;
	memset(&cfg, 0, sizeof(cfg));
	cfg.nlines = 1 + (data[0] & 1);
	cfg.recovery.enabled = (data[0] >> 1) & 1;
	cfg.recovery.server.sin_family = AF_INET;
	cfg.recovery.server.sin_port = htons(9); /* discard: nobody answers */
	cfg.recovery.server.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cfg.recovery.max_count = 1 + (data[0] >> 2);
	cfg.recovery.timeout_ms = 1;
	cfg.recovery.retries = 1;
	cfg.recovery.wait_ms = 1;
	cfg.recovery.wait_packets = 2;
	cfg.recovery.queue_packets = 8; /* small: overflow is reachable */
	cfg.recovery.max_requests_per_s = 1000000;
	struct uf_arb a;
	struct uf_arb_cb cb = {fz_deliver, fz_gap, fz_session, NULL};
	memset(&st, 0, sizeof(st));
	if (uf_arb_init(&a, &cfg, fd, 256, &st, &cb) < 0)
		return 0;
	g_next = 1;
	uint64_t now = 1000000000ull;
	uint8_t buf[256];
	/* 4 bytes per step: op/src, sequence (1..256), count (0..15 or special), time step */
	for (size_t i = 1; i + 4 <= size; i += 4) {
		uint8_t op = data[i], seqb = data[i + 1], cnt = data[i + 2], dt = data[i + 3];
		unsigned src = op & 3; /* 0, 1 lines; 2 recovery; 3 = a line beyond nlines */
		if (src == 3)
			src = 1;
		if (src == 1 && cfg.nlines == 1)
			src = UF_ARB_SRC_RECOVERY;
		char sess[UF_MOLD_SESSION_LEN];
		memset(sess, ' ', sizeof(sess));
		sess[0] = (op & 0x40) ? 'B' : 'A'; /* two sessions */
		uint64_t seq = 1 + seqb;
		struct uf_mold_packet p;
		size_t len;
		if ((op & 0x30) == 0x30) {
			uf_mold_build_end_of_session(buf, sess, seq);
			len = UF_MOLD_HDR_LEN;
		} else if ((op & 0x30) == 0x20 || (cnt & 15) == 0) {
			uf_mold_build_heartbeat(buf, sess, seq);
			len = UF_MOLD_HDR_LEN;
		} else {
			struct uf_mold_builder b;
			uint8_t msg[3] = {'X', seqb, cnt};
			uf_mold_builder_init(&b, buf, sizeof(buf), sess, seq);
			for (unsigned k = 0; k < (cnt & 15u); k++)
				(void)uf_mold_builder_add(&b, msg, sizeof(msg));
			len = b.len;
		}
		if (uf_mold_open(&p, buf, len) > 0)
			uf_arb_packet(&a, &p, now, src);
		now += (uint64_t)dt * 100000u; /* up to 25 ms per step */
		if (uf_arb_gap_open(&a))
			uf_arb_tick(&a, now, (op & 0x80) != 0);
	}
	uf_arb_fini(&a);
	return 0;
}
