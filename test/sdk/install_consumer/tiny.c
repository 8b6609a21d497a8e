/* tiny RING SYMBOL: attaches, hands the books over from the image, prints the top of SYMBOL's
 * book as "SYMBOL bid PRICE SHARES ask PRICE SHARES". Exit 1 on any error.
 * Built with -DTINY_OLD_INCLUDE_PATHS it includes the headers by their deprecated paths
 * ("ring/ufconsumer.h", kept until 0.2.0), which must still compile and behave the same. */
#include <stdio.h>

#ifdef TINY_OLD_INCLUDE_PATHS
#include "ring/ufbook.h"
#include "ring/ufconsumer.h"
#else
#include <uringfeed/ufbook.h>
#include <uringfeed/ufconsumer.h>
#endif

int main(int argc, char **argv)
{
	uf_consumer_t *c;
	uf_book_builder_t *b;
	struct uf_level bid = {0}, ask = {0};
	char err[256];
	uint32_t id;
	int rc;

	if (argc != 3)
		return 2;
	if (uf_consumer_attach(argv[1], NULL, &c, err, sizeof(err)) < 0) {
		fprintf(stderr, "tiny: %s\n", err);
		return 1;
	}
	if (uf_book_builder_create(0, &b) < 0 || uf_book_builder_sync(b, c) < 0 ||
	    uf_consumer_lookup(c, argv[2], &id) < 0 || uf_book_builder_top(b, id, &bid, &ask) < 0)
		return 1;
	printf("%s bid %lld %llu ask %lld %llu\n", argv[2], (long long)bid.price,
	       (unsigned long long)bid.shares, (long long)ask.price,
	       (unsigned long long)ask.shares);
	rc = uf_book_builder_flags(b, id) & UF_BOOKF_STALE ? 1 : 0;
	uf_book_builder_destroy(b);
	uf_consumer_detach(c);
	return rc;
}
