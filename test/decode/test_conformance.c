/* Conformance on the third-party captures in $UF_SHARED_DATA/itch50 (read in place, never
 * copied): every real capture decodes with zero errors, the simulated day gives exactly its
 * published counts, the real 1,000-message head gives S 1, R 993, H 3, Y 3, and known field
 * values from the data README come out as published. */
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "decode/uf_decode.h"

static char g_root[4096];

static int setup(void **s)
{
	const char *d = getenv("UF_SHARED_DATA");
	if (!d || !*d) {
		fprintf(stderr, "UF_SHARED_DATA is not set: conformance data unavailable\n");
		return -1;
	}
	snprintf(g_root, sizeof(g_root), "%s/itch50", d);
	DIR *dir = opendir(g_root);
	if (!dir) {
		fprintf(stderr, "cannot open %s: %s\n", g_root, strerror(errno));
		return -1;
	}
	closedir(dir);
	return 0;
}

struct seen {
	uint64_t n;            /* messages decoded */
	uint64_t first_seq[4]; /* first sequence of the first packets */
	int googl_1284600;     /* a GOOGL message at 128.46 */
	int match_255554;      /* a message with match number 255554 */
	uint8_t first_event;   /* S event code of the first message */
};

/* Decodes a whole file into `c`; fails the test if it cannot be opened. */
static void decode_file(const char *path, struct uf_decode_counters *c, struct seen *sn)
{
	struct uf_reader r;
	if (uf_reader_open(&r, path, c) < 0) {
		print_error("%s\n", r.err);
		fail();
	}
	struct uf_reader_msg rm;
	struct uf_itch_msg m;
	while (uf_reader_next(&r, &rm) > 0) {
		if (uf_decode_msg_counted(rm.msg, rm.len, &m, c) != 0)
			continue;
		if (sn) {
			if (sn->n == 0 && m.type == 'S')
				sn->first_event = m.u.sys.event;
			sn->n++;
			const char *stock = NULL;
			uint32_t price = 0;
			uint64_t match = 0;
			if (m.type == 'A' || m.type == 'F') {
				stock = m.u.add.stock;
				price = m.u.add.price;
			} else if (m.type == 'P') {
				stock = m.u.trade.stock;
				price = m.u.trade.price;
				match = m.u.trade.match;
			} else if (m.type == 'E' || m.type == 'C') {
				match = m.u.exec.match;
			} else if (m.type == 'Q') {
				match = m.u.cross.match;
			}
			if (stock && !memcmp(stock, "GOOGL   ", 8) && price == 1284600)
				sn->googl_1284600 = 1;
			if (match == 255554)
				sn->match_255554 = 1;
		}
	}
	uf_reader_close(&r);
}

struct walk {
	int files;
	uint64_t messages;
	int failures;
	struct seen seen;
};

static struct walk *g_walk;

static int visit(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	size_t l = strlen(path);
	if (flag != FTW_F || l < 5 || strcmp(path + l - 5, ".pcap") != 0)
		return 0;
	struct uf_decode_counters c;
	memset(&c, 0, sizeof(c));
	decode_file(path, &c, &g_walk->seen);
	g_walk->files++;
	g_walk->messages += c.messages;
	uint64_t errs = uf_decode_counters_errors(&c);
	if (errs || c.messages == 0) {
		fprintf(stderr, "%s: %llu errors, %llu messages\n", path, (unsigned long long)errs,
		        (unsigned long long)c.messages);
		g_walk->failures++;
	}
	return 0;
}

static void test_every_real_capture_decodes_without_errors(void **s)
{
	static struct walk w;
	memset(&w, 0, sizeof(w));
	g_walk = &w;
	char dir[4200];
	snprintf(dir, sizeof(dir), "%s/omi-real", g_root);
	assert_int_equal(nftw(dir, visit, 16, FTW_PHYS), 0);
	assert_true(w.files >= 40); /* 46 captures at the time of writing */
	assert_int_equal(w.failures, 0);
	assert_true(w.messages >= (uint64_t)w.files);
	/* README: "a GOOGL order at 128.46; match number 255554" (both in one P message). */
	assert_true(w.seen.googl_1284600);
	assert_true(w.seen.match_255554);
}

static void test_multiple_packets_capture_sessions_and_sequences(void **s)
{
	char path[4200];
	snprintf(path, sizeof(path),
	         "%s/omi-real/Nasdaq.Equities.TotalView.Itch.v5.0/Multiple.Packets.pcap", g_root);
	struct uf_reader r;
	struct uf_decode_counters c;
	memset(&c, 0, sizeof(c));
	assert_int_equal(uf_reader_open(&r, path, &c), 0);
	const uint8_t *pl;
	size_t len;
	uint64_t ts;
	uint64_t seqs[2];
	uint16_t counts[2];
	int n = 0;
	while (uf_reader_next_payload(&r, &pl, &len, &ts) > 0) {
		struct uf_frame pkt;
		assert_int_equal(uf_mold_open(&pkt, pl, len), UF_MOLD_DATA);
		assert_memory_equal(pkt.session, "000010059B", 10);
		assert_true(n < 2);
		seqs[n] = pkt.seq;
		counts[n++] = pkt.count;
	}
	uf_reader_close(&r);
	assert_int_equal(n, 2);
	assert_int_equal(seqs[0], 14764496);
	assert_int_equal(seqs[1], 19009117);
	/* The README says 38 messages: the second packet's count; the first carries one D. */
	assert_int_equal(counts[0], 1);
	assert_int_equal(counts[1], 38);
	memset(&c, 0, sizeof(c));
	decode_file(path, &c, NULL);
	assert_int_equal(c.packets, 2);
	assert_int_equal(c.messages, 39);
	assert_int_equal(c.gaps, 1); /* 14764497 .. 19009116 are not in the capture */
	assert_int_equal(uf_decode_counters_errors(&c), 0);
}

static uint64_t count_of(const struct uf_decode_counters *c, char t)
{
	return c->by_type[uf_itch_type_index((uint8_t)t)];
}

static void test_simulated_day_gives_published_counts(void **s)
{
	char path[4200];
	snprintf(path, sizeof(path), "%s/ritch-simulated-zero-len.itch", g_root);
	struct uf_decode_counters c;
	memset(&c, 0, sizeof(c));
	decode_file(path, &c, NULL);
	assert_int_equal(uf_decode_counters_errors(&c), 0);
	assert_int_equal(c.messages, 12012);
	assert_int_equal(c.zero_len_resolved, 12012); /* every prefix is 0x0000 */
	assert_int_equal(count_of(&c, 'S'), 6);
	assert_int_equal(count_of(&c, 'R'), 3);
	assert_int_equal(count_of(&c, 'H'), 3);
	assert_int_equal(count_of(&c, 'A'), 4997);
	assert_int_equal(count_of(&c, 'F'), 3);
	assert_int_equal(count_of(&c, 'E'), 198);
	assert_int_equal(count_of(&c, 'X'), 45);
	assert_int_equal(count_of(&c, 'D'), 1745);
	assert_int_equal(count_of(&c, 'U'), 12);
	assert_int_equal(count_of(&c, 'P'), 5000);
	uint64_t sum = 0;
	for (int i = 0; i < UF_ITCH_NTYPES; i++)
		sum += c.by_type[i];
	assert_int_equal(sum, 12012); /* and nothing else */
}

static void test_real_head_gives_published_counts(void **s)
{
	char path[4200];
	snprintf(path, sizeof(path), "%s/nasdaq-head-1000.itch", g_root);
	struct uf_decode_counters c;
	memset(&c, 0, sizeof(c));
	struct seen sn;
	memset(&sn, 0, sizeof(sn));
	decode_file(path, &c, &sn);
	assert_int_equal(uf_decode_counters_errors(&c), 0);
	assert_int_equal(c.messages, 1000);
	assert_int_equal(count_of(&c, 'S'), 1);
	assert_int_equal(count_of(&c, 'R'), 993);
	assert_int_equal(count_of(&c, 'H'), 3);
	assert_int_equal(count_of(&c, 'Y'), 3);
	assert_int_equal(sn.first_event, 'O');
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_every_real_capture_decodes_without_errors),
	    cmocka_unit_test(test_multiple_packets_capture_sessions_and_sequences),
	    cmocka_unit_test(test_simulated_day_gives_published_counts),
	    cmocka_unit_test(test_real_head_gives_published_counts),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
