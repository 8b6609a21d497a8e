/* Conformance on the real IEX captures in $UF_SHARED_DATA/iex (gzip'd classic pcap, read in
 * place, never copied): segment, message and per-type counts, the truncated last DEEP
 * record, the eleven stream restarts of the DEEP capture (same session and channel, each
 * starting again with a System Event 'O'), and field values of known messages.
 *
 * The counts were cross-checked with an independent Python reader of the same pcaps
 * (struct.unpack over the IEX-TP 1.25 and DEEP/TOPS layouts; see the report of issue 24). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "decode/uf_decode.h"

static char g_deep[4096], g_tops[4096];

static int setup(void **s)
{
	const char *d = getenv("UF_SHARED_DATA");
	struct stat st;
	if (!d || !*d) {
		fprintf(stderr, "UF_SHARED_DATA is not set: IEX conformance data unavailable\n");
		return -1;
	}
	snprintf(g_deep, sizeof(g_deep), "%s/iex/iex-deep-1.0-20170425.pcap.gz", d);
	snprintf(g_tops, sizeof(g_tops), "%s/iex/iex-tops-1.6-20170710.pcap.gz", d);
	if (stat(g_deep, &st) < 0 || stat(g_tops, &st) < 0) {
		fprintf(stderr, "IEX captures absent under %s/iex: %s\n", d, strerror(errno));
		return -1;
	}
	return 0;
}

struct run {
	uint16_t proto;        /* protocol of every message */
	uint64_t n;            /* messages decoded */
	uint64_t sys_o;        /* System Event 'O' (start of messages) */
	uint64_t restarts_o;   /* restarts whose first message is a System Event 'O' */
	uint64_t last_restart; /* iex_stream_restarts seen before the current message */
	int found;             /* the known message was seen with its published fields */
	char session[10];      /* session of the first segment */
	uint32_t channels;     /* distinct channel ids seen (1 expected) */
	uint32_t channel;      /* the first one */
};

/* Reads a whole capture, decoding every IEX message; `check` looks at each one. */
static void read_capture(const char *path, struct uf_decode_counters *c, struct run *run,
                         void (*check)(struct run *, uint64_t seq, const struct uf_iex_msg *))
{
	struct uf_reader r;
	memset(c, 0, sizeof(*c));
	memset(run, 0, sizeof(*run));
	if (uf_reader_open(&r, path, c) < 0) {
		print_error("%s\n", r.err);
		fail();
	}
	struct uf_reader_msg rm;
	struct uf_iex_msg m;
	while (uf_reader_next(&r, &rm) > 0) {
		if (!run->n) {
			memcpy(run->session, r.pkt.session, 10);
			struct uf_iextp_hdr h = {0};
			assert_int_equal(uf_iextp_parse_header(&h, r.pkt.buf, r.pkt.len), 0);
			run->channel = h.channel_id;
			run->channels = 1;
		} else if (memcmp(run->session, r.pkt.session, 10) != 0) {
			print_error("session changed mid-capture\n");
			fail();
		} else {
			struct uf_iextp_hdr h = {0};
			assert_int_equal(uf_iextp_parse_header(&h, r.pkt.buf, r.pkt.len), 0);
			if (h.channel_id != run->channel)
				run->channels++;
		}
		if (run->proto == 0)
			run->proto = rm.proto;
		assert_int_equal(rm.proto, run->proto);
		if (uf_iex_decode_counted(rm.proto, rm.msg, rm.len, &m, c) <= 0)
			continue;
		run->n++;
		if (m.type == UF_IEX_SYSTEM_EVENT && m.u.sys.event == 'O')
			run->sys_o++;
		if (c->iex_stream_restarts != run->last_restart) {
			/* The first message after a restart: sequence 1, a start of messages. */
			run->last_restart = c->iex_stream_restarts;
			assert_int_equal(rm.seq, 1);
			if (m.type == UF_IEX_SYSTEM_EVENT && m.u.sys.event == 'O')
				run->restarts_o++;
		}
		if (check)
			check(run, rm.seq, &m);
	}
	assert_int_equal(r.payload, UF_PAYLOAD_IEXTP);
	uf_reader_close(&r);
}

static uint64_t type_count(const struct uf_decode_counters *c, char t)
{
	return c->iex_by_type[uf_iex_type_index((uint8_t)t)];
}

/* DEEP: the first trade report of the capture (sequence 23420 of the first stream). */
static void check_deep(struct run *run, uint64_t seq, const struct uf_iex_msg *m)
{
	if (seq == 1 && run->n == 1) {
		assert_int_equal(m->type, 'S');
		assert_int_equal(m->u.sys.event, 'O');
		assert_int_equal(m->timestamp, 1493132621826542542ll);
	}
	if (!run->found && m->type == UF_IEX_TRADE_REPORT) {
		assert_int_equal(seq, 23420);
		assert_memory_equal(m->symbol, "MSFT    ", 8);
		assert_int_equal(m->u.trade.flags, UF_IEX_SALE_ISO | UF_IEX_SALE_EXTENDED_HOURS);
		assert_int_equal(m->timestamp, 1493132714395755096ll);
		assert_int_equal(m->u.trade.size, 390);
		assert_int_equal(m->u.trade.price, 367000); /* $36.70 */
		assert_int_equal(m->u.trade.trade_id, 110587);
		run->found = 1;
	}
}

static void test_deep_capture_counts_restarts_and_fields(void **s)
{
	struct uf_decode_counters c;
	struct run run;
	read_capture(g_deep, &c, &run, check_deep);
	assert_int_equal(run.proto, UF_IEXTP_PROTO_DEEP);
	assert_int_equal(c.iex_packets, 121314);
	assert_int_equal(c.packets, 121314);
	assert_int_equal(c.heartbeats, 7937);
	assert_int_equal(c.messages, 391999);
	assert_int_equal(run.n, 391999);
	assert_int_equal(type_count(&c, '5'), 14627);
	assert_int_equal(type_count(&c, '8'), 12941);
	assert_int_equal(type_count(&c, 'B'), 73);
	assert_int_equal(type_count(&c, 'E'), 59);
	assert_int_equal(type_count(&c, 'H'), 93638);
	assert_int_equal(type_count(&c, 'O'), 93638);
	assert_int_equal(type_count(&c, 'P'), 93636);
	assert_int_equal(type_count(&c, 'S'), 44);
	assert_int_equal(type_count(&c, 'T'), 83343);
	assert_int_equal(type_count(&c, 'Q'), 0);
	/* The last packet is cut by the capture: its record is counted, nothing else. */
	assert_int_equal(c.file_err[UF_FILE_ERR_TRUNCATED_RECORD], 1);
	assert_int_equal(uf_decode_counters_errors(&c), 1);
	/* Eleven times the stream starts again at sequence 1, stream offset 0, in the same
	 * session (1132527616) and channel (1), each time with a System Event 'O': a publisher
	 * restart, not a replay. No gap is seen anywhere. */
	assert_int_equal(c.iex_stream_restarts, 11);
	assert_int_equal(run.restarts_o, 11);
	assert_int_equal(run.sys_o, 12);
	assert_memory_equal(run.session, "1132527616", 10);
	assert_int_equal(run.channel, 1);
	assert_int_equal(run.channels, 1);
	assert_int_equal(c.gaps, 0);
	assert_true(run.found);
}

/* TOPS: the test symbol's directory entry and opening auction, the first trade. */
static void check_tops(struct run *run, uint64_t seq, const struct uf_iex_msg *m)
{
	if (m->type == UF_IEX_SECURITY_DIRECTORY && !memcmp(m->symbol, "ZEXIT   ", 8)) {
		assert_int_equal(m->u.dir.flags, UF_IEX_DIR_TEST);
		assert_int_equal(m->u.dir.round_lot_size, 100);
		assert_int_equal(m->u.dir.adjusted_poc, 100000);
		assert_int_equal(m->u.dir.luld_tier, 0);
		run->found |= 1;
	}
	if (seq == 31594) {
		assert_int_equal(m->type, UF_IEX_AUCTION_INFO);
		assert_memory_equal(m->symbol, "ZEXIT   ", 8);
		assert_int_equal(m->u.auction.auction_type, 'O');
		assert_int_equal(m->u.auction.reference_price, 99600);
		assert_int_equal(m->u.auction.indicative_price, 100200);
		assert_int_equal(m->u.auction.imbalance_shares, 3008);
		assert_int_equal(m->u.auction.imbalance_side, 'B');
		assert_int_equal(m->u.auction.scheduled_time, 1499715000); /* 19:30 UTC */
		assert_int_equal(m->u.auction.book_clearing_price, 100400);
		assert_int_equal(m->u.auction.collar_reference, 99550);
		assert_int_equal(m->u.auction.lower_collar, 89600);
		assert_int_equal(m->u.auction.upper_collar, 109500);
		run->found |= 2;
	}
	if (seq == 31217) {
		assert_int_equal(m->type, UF_IEX_TRADE_REPORT);
		assert_memory_equal(m->symbol, "AAPL    ", 8);
		assert_int_equal(m->u.trade.size, 283);
		assert_int_equal(m->u.trade.price, 1489100); /* $148.91 */
		assert_int_equal(m->u.trade.trade_id, 128140);
		run->found |= 4;
	}
}

static void test_tops_capture_counts_and_fields(void **s)
{
	struct uf_decode_counters c;
	struct run run;
	read_capture(g_tops, &c, &run, check_tops);
	assert_int_equal(run.proto, UF_IEXTP_PROTO_TOPS);
	assert_int_equal(c.iex_packets, 13022);
	assert_int_equal(c.heartbeats, 237);
	assert_int_equal(c.messages, 57674);
	assert_int_equal(type_count(&c, 'A'), 642);
	assert_int_equal(type_count(&c, 'B'), 3);
	assert_int_equal(type_count(&c, 'D'), 10);
	assert_int_equal(type_count(&c, 'H'), 7803);
	assert_int_equal(type_count(&c, 'O'), 7801);
	assert_int_equal(type_count(&c, 'P'), 7802);
	assert_int_equal(type_count(&c, 'Q'), 27217);
	assert_int_equal(type_count(&c, 'S'), 6);
	assert_int_equal(type_count(&c, 'T'), 6390);
	assert_int_equal(type_count(&c, '8') + type_count(&c, '5'), 0);
	assert_int_equal(uf_decode_counters_errors(&c), 0);
	assert_int_equal(c.iex_stream_restarts, 0);
	assert_int_equal(c.gaps, 0);
	assert_memory_equal(run.session, "1137508352", 10);
	assert_int_equal(run.found, 7);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_deep_capture_counts_restarts_and_fields),
	    cmocka_unit_test(test_tops_capture_counts_and_fields),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
