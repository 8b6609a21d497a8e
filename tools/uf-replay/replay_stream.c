/* uf-replay: the stream (see replay_stream.h). */
#include "replay_stream.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "common/uf_endian.h"

int rp_stream_load(struct rp_stream *st, const char *path)
{
	struct uf_reader *rd = &st->rd;
	int rc = uf_reader_open(rd, path, NULL);
	if (rc < 0) {
		fprintf(stderr, "uf-replay: %s\n", rd->err); /* the reader names the file */
		return rc;
	}
	size_t cap = 1 << 16;
	st->msgs = malloc(cap * sizeof(*st->msgs));
	struct uf_reader_msg m;
	while (st->msgs && uf_reader_next(rd, &m) == 1) {
		if (st->n == cap) {
			cap *= 2;
			struct rp_msg *nm = realloc(st->msgs, cap * sizeof(*nm));
			if (!nm) {
				free(st->msgs);
				st->msgs = NULL;
				break;
			}
			st->msgs = nm;
		}
		st->msgs[st->n].p = m.msg;
		st->msgs[st->n].len = m.len;
		st->n++;
	}
	if (!st->msgs) {
		fprintf(stderr, "uf-replay: %s: out of memory indexing messages\n", path);
		return -ENOMEM;
	}
	uint64_t errs = uf_decode_counters_errors(rd->c);
	if (errs)
		fprintf(stderr, "uf-replay: %s: %llu framing errors skipped\n", path,
		        (unsigned long long)errs);
	if (st->n == 0) {
		fprintf(stderr, "uf-replay: %s: no messages\n", path);
		return -ENODATA;
	}
	return 0;
}

void rp_stream_close(struct rp_stream *st)
{
	free(st->msgs);
	st->msgs = NULL;
	uf_reader_close(&st->rd);
}

uint64_t rp_stream_fit(const struct rp_stream *st, uint64_t first, uint64_t limit)
{
	size_t len = UF_MOLD_HDR_LEN;
	uint64_t k = 0, us = st->pack_ts ? rp_msg_ts(&st->msgs[first - 1]) / 1000 : 0;
	while (first + k < limit && k < 0xFFFE) {
		size_t add = 2 + st->msgs[first + k - 1].len;
		if (len + add > st->mtu && k > 0)
			break;
		if (st->pack_ts && k > 0 && rp_msg_ts(&st->msgs[first + k - 1]) / 1000 != us)
			break; /* the next microsecond: the exchange's next datagram */
		len += add;
		k++;
	}
	return k;
}

size_t rp_stream_build(const struct rp_stream *st, uint8_t *buf, size_t cap, uint64_t first,
                       uint64_t count)
{
	struct uf_mold_builder b;
	uf_mold_builder_init(&b, buf, cap, st->session, first);
	for (uint64_t s = first; s < first + count; s++)
		if (uf_mold_builder_add(&b, st->msgs[s - 1].p, st->msgs[s - 1].len) < 0)
			break;
	return b.len;
}

uint64_t rp_msg_ts(const struct rp_msg *m)
{
	return m->len >= UF_ITCH_HDR_LEN ? uf_be48(m->p + 5) : 0;
}

void rp_sendto(int fd, const uint8_t *buf, size_t len, const struct sockaddr_in *dst)
{
	for (int tries = 0; tries < 1000; tries++) {
		if (sendto(fd, buf, len, 0, (const struct sockaddr *)dst, sizeof(*dst)) >= 0)
			return;
		if (errno != ENOBUFS && errno != EAGAIN && errno != EINTR)
			break;
		struct timespec ts = {0, 20000};
		nanosleep(&ts, NULL);
	}
	fprintf(stderr, "uf-replay: sendto: %s\n", strerror(errno));
}
