/* minimal_consumer RING [COUNT]: the smallest complete libufconsumer program. Prints every
 * record of ring RING from the oldest one still in the ring, one line each:
 *   SEQ KIND INSTRUMENT SIDE PRICE SHARES ORDERS_OR_AUX
 * and stops after COUNT records (0 = never) or when the producer closes the ring.
 * Build: cc minimal_consumer.c $(pkg-config --cflags --libs ufconsumer) */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include <uringfeed/ufconsumer.h>

int main(int argc, char **argv)
{
	struct uf_consumer_options opt;
	struct uf_consumer_lap lap;
	struct uf_record r;
	uf_consumer_t *c;
	uint64_t seq, n = 0, count = argc > 2 ? strtoull(argv[2], NULL, 10) : 0;
	char err[256];

	if (argc < 2) {
		fprintf(stderr, "usage: minimal_consumer RING [COUNT]\n");
		return 2;
	}
	uf_consumer_options_init(&opt);
	opt.start = UF_CONSUMER_START_OLDEST;
	opt.tag = "minimal";
	if (uf_consumer_attach(argv[1], &opt, &c, err, sizeof(err)) < 0) {
		fprintf(stderr, "minimal_consumer: %s\n", err);
		return 1;
	}
	while (count == 0 || n < count) {
		int rc = uf_consumer_next(c, &r, &seq);

		if (rc == 0) {
			printf("%" PRIu64 " %u %u %c %" PRId64 " %" PRIu64 " %u\n", seq, r.kind,
			       r.instrument, r.side ? r.side : '-', r.price, r.shares, r.orders);
			n++;
		} else if (rc == -EAGAIN) {
			uf_consumer_wait(c, 100000000); /* sleep until the producer publishes */
		} else if (rc == -EOVERFLOW) {
			uf_consumer_last_lap(c, &lap); /* we were too slow: say what was lost */
			fprintf(stderr, "lapped: lost %" PRIu64 " records\n", lap.lost);
		} else if (rc == -ESTALE) {
			if (uf_consumer_reattach(c, err, sizeof(err)) < 0) /* producer restarted */
				break;
		} else {
			break; /* -EPIPE: the producer closed the ring and we read everything */
		}
	}
	fflush(stdout);
	uf_consumer_detach(c);
	return 0;
}
