/* Reference books and records for the feed tests: the file applied straight through decode
 * and publish, no network, no arbitration. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "decode/uf_decode.h"
#include "publish/uf_publish.h"
#include "feed_test_util.h"

int ft_reference(const char *path, unsigned depth, char **books, struct uf_record **recs,
                 size_t *nrecs, uint64_t *nmsgs)
{
	struct uf_reader rd;
	int rc = uf_reader_open(&rd, path, NULL);
	if (rc < 0) {
		fprintf(stderr, "reference: %s: %s\n", path, rd.err);
		return rc;
	}
	struct uf_publish_params pp;
	uf_publish_params_default(&pp);
	pp.max_orders = 1 << 20;
	pp.numa_node = -1;
	struct uf_publisher *pub;
	rc = uf_publish_create(&pp, &pub);
	if (rc < 0) {
		uf_reader_close(&rd);
		return rc;
	}
	size_t cap = 1 << 16, n = 0;
	struct uf_record *out = malloc(cap * sizeof(*out));
	struct uf_reader_msg m;
	struct uf_itch_msg im;
	uint64_t count = 0;
	while (uf_reader_next(&rd, &m) == 1) {
		count++;
		if (uf_itch_decode(m.msg, m.len, &im) != 0)
			continue;
		if (n + UF_REC_MAX_PER_MSG > cap) {
			cap *= 2;
			out = realloc(out, cap * sizeof(*out));
		}
		int k = uf_publish_apply(pub, &im, m.seq, 0, out + n, cap - n);
		if (k > 0)
			n += (size_t)k;
	}
	uint32_t maxi = uf_publish_max_instruments(pub);
	struct ft_book *v = calloc(maxi, sizeof(*v));
	size_t nb = 0;
	struct uf_level *bid = calloc(depth, sizeof(*bid)), *ask = calloc(depth, sizeof(*ask));
	for (uint32_t id = 0; id < maxi; id++) {
		int b = uf_publish_top(pub, id, UF_SIDE_BID, bid, depth);
		int a = uf_publish_top(pub, id, UF_SIDE_ASK, ask, depth);
		if (b <= 0 && a <= 0)
			continue;
		char sym[9] = "?";
		if (uf_publish_symbol(pub, id, sym) < 0)
			strcpy(sym, "?");
		struct ft_buf line = {0};
		int64_t px[256];
		uint64_t sh[256];
		uint32_t od[256];
		ft_buf_add(&line, "{\"symbol\":\"%s\",", sym);
		for (int i = 0; i < b; i++) {
			px[i] = bid[i].price;
			sh[i] = bid[i].shares;
			od[i] = bid[i].orders;
		}
		ft_side(&line, "bid", px, sh, od, b > 0 ? (unsigned)b : 0);
		ft_buf_add(&line, ",");
		for (int i = 0; i < a; i++) {
			px[i] = ask[i].price;
			sh[i] = ask[i].shares;
			od[i] = ask[i].orders;
		}
		ft_side(&line, "ask", px, sh, od, a > 0 ? (unsigned)a : 0);
		ft_buf_add(&line, "}");
		memcpy(v[nb].symbol, sym, sizeof(sym));
		v[nb++].line = line.p;
	}
	*books = ft_books_join(v, nb);
	free(v);
	free(bid);
	free(ask);
	*recs = out;
	*nrecs = n;
	*nmsgs = count;
	uf_publish_destroy(pub);
	uf_reader_close(&rd);
	return 0;
}
