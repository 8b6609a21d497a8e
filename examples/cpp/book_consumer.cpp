// book_consumer RING IDLE_MS: a C++ consumer that keeps books with the libufconsumer book
// builder. It hands over from the book image (no gap, no double count), follows the stream
// (laps re-sync inside uf_book_builder_next, a producer restart re-attaches and re-syncs),
// prints each best-bid/offer change as it happens:
//   bbo SYMBOL BIDPX BIDSZ ASKPX ASKSZ
// and, when the ring closes or nothing arrives for IDLE_MS, the top of every book:
//   top SYMBOL BIDPX BIDSZ ASKPX ASKSZ [STALE] [TRUNCATED]
// Prices are printed with their 4 implied decimals; "-" for an empty side.
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include <uringfeed/ufbook.h>
#include <uringfeed/ufconsumer.h>

namespace
{

std::string px(const uf_level *l)
{
	if (!l)
		return "-";
	char b[48];
	int64_t p = l->price;
	std::snprintf(b, sizeof(b), "%" PRId64 ".%04" PRId64 " %" PRIu64, p / 10000,
	              (p < 0 ? -p : p) % 10000, l->shares);
	return b;
}

void print_top(const char *what, uf_book_builder_t *b, uint32_t id)
{
	uf_level bid{}, ask{};
	int got = uf_book_builder_top(b, id, &bid, &ask);
	uint32_t fl = uf_book_builder_flags(b, id);
	std::printf("%s %s %s %s%s%s\n", what, uf_book_builder_symbol(b, id),
	            px(got & 1 ? &bid : nullptr).c_str(), px(got & 2 ? &ask : nullptr).c_str(),
	            fl & UF_BOOKF_STALE ? " STALE" : "",
	            fl & UF_BOOKF_TRUNCATED ? " TRUNCATED" : "");
}

} // namespace

int main(int argc, char **argv)
{
	if (argc != 3) {
		std::fprintf(stderr, "usage: book_consumer RING IDLE_MS\n");
		return 2;
	}
	const auto idle = std::chrono::milliseconds(std::atoi(argv[2]));
	char err[256];
	uf_consumer_t *raw = nullptr;
	uf_consumer_options opt;
	uf_consumer_options_init(&opt);
	opt.tag = "book_consumer";
	// any start works: uf_book_builder_sync moves the position to the image's commit point
	// (oldest: the producer's consumer report shows us behind until the handover is done)
	opt.start = UF_CONSUMER_START_OLDEST;
	if (uf_consumer_attach(argv[1], &opt, &raw, err, sizeof(err)) < 0) {
		std::fprintf(stderr, "book_consumer: %s\n", err);
		return 1;
	}
	std::unique_ptr<uf_consumer_t, decltype(&uf_consumer_detach)> c(raw, uf_consumer_detach);
	uf_book_builder_t *braw = nullptr;
	if (uf_book_builder_create(0, &braw) < 0)
		return 1;
	std::unique_ptr<uf_book_builder_t, decltype(&uf_book_builder_destroy)> b(
	    braw, uf_book_builder_destroy);
	if (uf_book_builder_sync(b.get(), c.get()) < 0)
		return 1;

	auto last = std::chrono::steady_clock::now();
	for (;;) {
		uf_record rec;
		int rc = uf_book_builder_next(b.get(), c.get(), &rec, nullptr);
		if (rc == 0) {
			last = std::chrono::steady_clock::now();
			// a whole exchange event is applied at LAST: never print half a replace
			if ((rec.flags & UF_RECF_LAST) && (rec.flags & UF_RECF_BBO))
				print_top("bbo", b.get(), rec.instrument);
		} else if (rc == -EAGAIN) {
			if (std::chrono::steady_clock::now() - last >= idle)
				break;
			uf_consumer_wait(c.get(), 20000000);
		} else if (rc == -EOVERFLOW) {
			std::fprintf(stderr,
			             "book_consumer: lapped, books re-synced from the image\n");
		} else if (rc == -ESTALE) {
			if (uf_consumer_reattach(c.get(), err, sizeof(err)) < 0 ||
			    uf_book_builder_sync(b.get(), c.get()) < 0)
				return 1;
		} else {
			break; // -EPIPE: closed and fully read
		}
	}
	for (uint32_t id = 0; id < uf_book_builder_max_instruments(b.get()); id++)
		if (uf_book_builder_depth(b.get(), id, UF_SIDE_BID) ||
		    uf_book_builder_depth(b.get(), id, UF_SIDE_ASK))
			print_top("top", b.get(), id);
	return 0;
}
