// tiny_cpp RING SYMBOL: tiny.c in C++, against the installed headers and library.
#include <cstdio>
#include <memory>

#include <uringfeed/ufbook.h>
#include <uringfeed/ufconsumer.h>

int main(int argc, char **argv)
{
	if (argc != 3)
		return 2;
	uf_consumer_t *raw = nullptr;
	char err[256];
	if (uf_consumer_attach(argv[1], nullptr, &raw, err, sizeof(err)) < 0) {
		std::fprintf(stderr, "tiny_cpp: %s\n", err);
		return 1;
	}
	std::unique_ptr<uf_consumer_t, decltype(&uf_consumer_detach)> c(raw, uf_consumer_detach);
	uf_book_builder_t *braw = nullptr;
	if (uf_book_builder_create(0, &braw) < 0)
		return 1;
	std::unique_ptr<uf_book_builder_t, decltype(&uf_book_builder_destroy)> b(
	    braw, uf_book_builder_destroy);
	uint32_t id = 0;
	uf_level bid{}, ask{};
	if (uf_book_builder_sync(b.get(), c.get()) < 0 ||
	    uf_consumer_lookup(c.get(), argv[2], &id) < 0 ||
	    uf_book_builder_top(b.get(), id, &bid, &ask) < 0)
		return 1;
	std::printf("%s bid %lld %llu ask %lld %llu\n", argv[2], static_cast<long long>(bid.price),
	            static_cast<unsigned long long>(bid.shares), static_cast<long long>(ask.price),
	            static_cast<unsigned long long>(ask.shares));
	return 0;
}
