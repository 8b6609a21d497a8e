/* Building IEX DEEP / TOPS messages and IEX-TP segments for tests, byte by byte from the
 * specifications' layouts (DEEP 1.0, TOPS 1.6, IEX-TP 1.25: little endian, prices i64 with 4
 * implied decimals, timestamps ns since the epoch), independently of decode/uf_iex.c. */
#ifndef UF_TEST_IEX_H
#define UF_TEST_IEX_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "decode/uf_iextp.h"

/* 2017-04-25 11:03:41.826542542 New York (EDT) as ns since the epoch, and since midnight. */
#define TI_TS       1493132621826542542ll
#define TI_TS_LOCAL 39821826542542ull

static inline void ti_le(uint8_t *p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* The 10-byte header every message starts with, and the padded symbol @10 (sym != NULL). */
static inline void ti_head(uint8_t *m, uint8_t type, uint8_t code, int64_t ts, const char *sym)
{
	m[0] = type;
	m[1] = code;
	ti_le(m + 2, (uint64_t)ts, 8);
	if (sym) {
		memset(m + 10, ' ', 8);
		memcpy(m + 10, sym, strlen(sym) < 8 ? strlen(sym) : 8);
	}
}

/* Each returns the message length written into m. */
static inline size_t ti_system(uint8_t *m, uint8_t event, int64_t ts)
{
	ti_head(m, 'S', event, ts, NULL);
	return 10;
}

static inline size_t ti_directory(uint8_t *m, const char *sym, uint32_t round_lot, uint8_t tier,
                                  int64_t ts)
{
	ti_head(m, 'D', 0, ts, sym);
	ti_le(m + 18, round_lot, 4);
	ti_le(m + 22, 1000000, 8); /* adjusted previous official close $100 */
	m[30] = tier;
	return 31;
}

static inline size_t ti_trading_status(uint8_t *m, const char *sym, uint8_t status,
                                       const char reason[4], int64_t ts)
{
	ti_head(m, 'H', status, ts, sym);
	memcpy(m + 18, reason, 4);
	return 22;
}

/* side 'B' (type '8') or 'S' (type '5'); flags 1 = event complete. */
static inline size_t ti_level(uint8_t *m, uint8_t side, uint8_t flags, const char *sym,
                              uint32_t size, int64_t price, int64_t ts)
{
	ti_head(m, side == 'B' ? '8' : '5', flags, ts, sym);
	ti_le(m + 18, size, 4);
	ti_le(m + 22, (uint64_t)price, 8);
	return 30;
}

static inline size_t ti_quote(uint8_t *m, const char *sym, uint32_t bid_size, int64_t bid,
                              int64_t ask, uint32_t ask_size, int64_t ts)
{
	ti_head(m, 'Q', 0, ts, sym);
	ti_le(m + 18, bid_size, 4);
	ti_le(m + 22, (uint64_t)bid, 8);
	ti_le(m + 30, (uint64_t)ask, 8);
	ti_le(m + 38, ask_size, 4);
	return 42;
}

/* type 'T' trade report or 'B' trade break. */
static inline size_t ti_trade(uint8_t *m, uint8_t type, uint8_t flags, const char *sym,
                              uint32_t size, int64_t price, uint64_t id, int64_t ts)
{
	ti_head(m, type, flags, ts, sym);
	ti_le(m + 18, size, 4);
	ti_le(m + 22, (uint64_t)price, 8);
	ti_le(m + 30, id, 8);
	return 38;
}

/* One IEX-TP segment being built. */
struct ti_seg {
	uint8_t b[1400];
	struct uf_iextp_builder bl;
};

static inline void ti_seg_begin(struct ti_seg *s, uint16_t proto, uint32_t session, int64_t offset,
                                int64_t seq, int64_t sent)
{
	struct uf_iextp_hdr h = {.version = 1,
	                         .protocol_id = proto,
	                         .channel_id = 1,
	                         .session_id = session,
	                         .stream_offset = offset,
	                         .first_seq = seq,
	                         .send_time = sent};
	uf_iextp_builder_init(&s->bl, s->b, sizeof(s->b), &h);
}

static inline void ti_seg_add(struct ti_seg *s, const uint8_t *m, size_t len)
{
	uf_iextp_builder_add(&s->bl, m, len);
}

static inline size_t ti_seg_len(const struct ti_seg *s)
{
	return s->bl.len;
}

#endif /* UF_TEST_IEX_H */
