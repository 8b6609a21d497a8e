/* Helpers of the SoupBinTCP/GLIMPSE tests: books in publish/ built from raw ITCH messages,
 * and a comparison of two sets of books (every level, live orders, directory, statuses).
 * Include after cmocka.h. */
#ifndef SOUP_TEST_UTIL_H
#define SOUP_TEST_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "decode/uf_decode.h"
#include "publish/uf_publish.h"

#define TS_MAX_INST 16384 /* stock locates compared (the publisher's default) */

static inline struct uf_publisher *ts_pub_new(void)
{
	struct uf_publish_params pp;
	struct uf_publisher *p;
	uf_publish_params_default(&pp);
	pp.max_orders = 1 << 18;
	pp.max_instruments = TS_MAX_INST;
	pp.max_levels = 1 << 18;
	assert_int_equal(uf_publish_create(&pp, &p), 0);
	return p;
}

static inline void ts_pub_apply(struct uf_publisher *p, const uint8_t *msg, size_t len)
{
	struct uf_itch_msg m;
	struct uf_record r[UF_REC_MAX_PER_MSG];
	if (uf_itch_decode(msg, len, &m) == 0)
		assert_true(uf_publish_apply(p, &m, 0, 0, r, UF_REC_MAX_PER_MSG) >= 0);
}

/* Every level of every book, the live order count and the directory and statuses agree.
 * Returns the number of levels compared (so a test can insist the books are not empty). */
static inline size_t ts_pub_compare(const struct uf_publisher *got, const struct uf_publisher *want)
{
	static struct uf_level a[65536], b[65536];
	size_t levels = 0;
	struct uf_publish_stats sa, sb;
	uf_publish_stats(got, &sa);
	uf_publish_stats(want, &sb);
	assert_int_equal(sa.live_orders, sb.live_orders);
	assert_int_equal(sa.live_levels, sb.live_levels);
	for (uint32_t i = 0; i < TS_MAX_INST; i++) {
		for (int s = 0; s < 2; s++) {
			uint8_t side = s ? UF_SIDE_ASK : UF_SIDE_BID;
			int na = uf_publish_top(got, i, side, a, 65536);
			int nb = uf_publish_top(want, i, side, b, 65536);
			assert_int_equal(na, nb);
			for (int k = 0; k < na; k++) {
				assert_int_equal(a[k].price, b[k].price);
				assert_int_equal(a[k].shares, b[k].shares);
				assert_int_equal(a[k].orders, b[k].orders);
			}
			levels += (size_t)na;
		}
		const struct uf_pub_instrument *x = uf_publish_instrument(got, i);
		const struct uf_pub_instrument *y = uf_publish_instrument(want, i);
		assert_memory_equal(x->symbol, y->symbol, sizeof(x->symbol));
		assert_int_equal(x->has_directory, y->has_directory);
		assert_int_equal(x->round_lot, y->round_lot);
		assert_int_equal(x->trading_state, y->trading_state);
		assert_int_equal(x->reg_sho, y->reg_sho);
		assert_int_equal(x->op_halt, y->op_halt);
		assert_int_equal(x->ipo_price, y->ipo_price);
		assert_int_equal(x->luld_ref_price, y->luld_ref_price);
	}
	assert_int_equal(uf_publish_market(got)->system_event,
	                 uf_publish_market(want)->system_event);
	assert_int_equal(uf_publish_market(got)->mwcb_level[0],
	                 uf_publish_market(want)->mwcb_level[0]);
	return levels;
}

/* rp_snap_state_emit() callback: applies the snapshot message to the publisher ctx. */
static inline int ts_emit_to_pub(void *ctx, const uint8_t *msg, size_t len)
{
	ts_pub_apply(ctx, msg, len);
	return 0;
}

#endif /* SOUP_TEST_UTIL_H */
