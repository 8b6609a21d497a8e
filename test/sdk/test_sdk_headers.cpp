// Every header libufconsumer installs, compiled as C++17 with -Wall -Wextra -Werror -pedantic
// (CMake target flags), and used: a C++ consumer must get the same layout and behaviour as C.
#include <uringfeed/uf_level.h>
#include <uringfeed/uf_record.h>
#include <uringfeed/ufbook.h>
#include <uringfeed/ufconsumer.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <type_traits>

static_assert(sizeof(uf_record) == UF_RECORD_SIZE, "record is 64 bytes in C++ too");
static_assert(sizeof(uf_level) == 24, "level is 24 bytes in C++ too");
static_assert(std::is_standard_layout<uf_record>::value, "record is a plain C struct");
static_assert(std::is_trivially_copyable<uf_book_snapshot>::value, "snapshot copies as bytes");

static int failures;

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			std::fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__,      \
			             #cond);                                                       \
			failures++;                                                                \
		}                                                                                  \
	} while (0)

int main()
{
	uf_record r{};
	r.kind = UF_REC_LEVEL;
	r.side = UF_SIDE_BID;
	r.instrument = 3;
	r.price = 1284600;
	r.shares = 100;
	r.orders = 2; // the anonymous union works from C++
	CHECK(r.aux == 2);

	uf_book_builder_t *b = nullptr;
	CHECK(uf_book_builder_create(16, &b) == 0);
	CHECK(uf_book_builder_apply(b, &r, 0) == 1);
	uf_level bid{}, ask{};
	CHECK(uf_book_builder_top(b, 3, &bid, &ask) == 1);
	CHECK(bid.price == 1284600 && bid.shares == 100 && bid.orders == 2);
	uf_book_builder_destroy(b);

	uf_consumer_t *c = nullptr;
	char err[256] = "";
	CHECK(uf_consumer_attach("sdk-no-such-ring", nullptr, &c, err, sizeof(err)) == -ENOENT);
	CHECK(std::strlen(err) > 0);
	CHECK(std::strcmp(uf_consumer_strerror(-EOVERFLOW), "lapped: records were lost") == 0);
	CHECK((UF_BOOKF_TRUNCATED & UF_BOOKF_STALE) == 0);
	if (failures == 0)
		std::printf("C++17: every installed header compiles and works\n");
	return failures ? 1 : 0;
}
