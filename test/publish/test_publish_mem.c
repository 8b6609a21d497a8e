/* publish/pub_mem.c: the order and level tables' page chain (hugetlb -> transparent huge
 * pages -> 4 KiB), checked against what the kernel says it granted: the mapping's
 * KernelPageSize and AnonHugePages in /proc/self/smaps, read here by the test's own parser,
 * and the 2 MiB hugetlb pool in sysfs. As root with a writable pool the test reserves pages
 * for its own tables and gives them back; otherwise it checks the kind against the pool as
 * it finds it. Books built on each kind must work the same. */
#include <errno.h>
#include <inttypes.h>
#include <unistd.h>

#include "pub_test_util.h"
#include "publish/publisher.h"

#define POOL "/sys/kernel/mm/hugepages/hugepages-2048kB/"

/* What smaps says of the mapping starting at `p`. */
struct vma_info {
	int found;            /* a mapping starts at p */
	uint64_t bytes;       /* its size */
	uint64_t kernel_page; /* KernelPageSize, bytes */
	uint64_t anon_huge;   /* AnonHugePages, bytes */
};

static struct vma_info vma_at(const void *p)
{
	struct vma_info v = {0};
	FILE *f = fopen("/proc/self/smaps", "r");
	assert_non_null(f);
	char line[512];
	int inside = 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long s, e, kb;
		if (sscanf(line, "%llx-%llx ", &s, &e) == 2) {
			inside = s == (uintptr_t)p;
			if (inside) {
				v.found = 1;
				v.bytes = e - s;
			}
			continue;
		}
		if (!inside)
			continue;
		if (sscanf(line, "KernelPageSize: %llu kB", &kb) == 1)
			v.kernel_page = kb * 1024;
		else if (sscanf(line, "AnonHugePages: %llu kB", &kb) == 1)
			v.anon_huge = kb * 1024;
	}
	fclose(f);
	return v;
}

static long read_long(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	long v = -1;
	if (fscanf(f, "%ld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

static int write_long(const char *path, long v)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return -errno;
	int rc = fprintf(f, "%ld\n", v) > 0 ? 0 : -EIO;
	if (fclose(f) != 0)
		rc = -errno;
	return rc;
}

/* THP mode: "always", "madvise" or "never" (the bracketed word), "" when unknown. */
static void thp_mode(char *out, size_t n)
{
	out[0] = '\0';
	FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
	if (!f)
		return;
	char buf[128];
	if (fgets(buf, sizeof(buf), f)) {
		char *a = strchr(buf, '['), *b = a ? strchr(a, ']') : NULL;
		if (a && b && (size_t)(b - a - 1) < n) {
			memcpy(out, a + 1, (size_t)(b - a - 1));
			out[b - a - 1] = '\0';
		}
	}
	fclose(f);
}

/* Sizes whose three big tables are each >= 2 MiB: orders 2^18 slots (4 MiB), level nodes
 * 4 MiB + 32 bytes (6 MiB mapped), arena 3 MiB + a little (4 MiB mapped): 7 huge pages. */
#define T_ORDERS 100000
#define T_LEVELS (1u << 17)
#define T_INST   16
#define T_PAGES  7

static struct uf_publisher *mk(uint32_t kinds)
{
	struct uf_publish_params pp;
	uf_publish_params_default(&pp);
	pp.max_orders = T_ORDERS;
	pp.max_levels = T_LEVELS;
	pp.max_instruments = T_INST;
	pp.page_kinds = kinds;
	struct uf_publisher *p = NULL;
	assert_int_equal(uf_publish_create(&pp, &p), 0);
	return p;
}

/* The three big mappings of p. */
static void mems(const struct uf_publisher *p, const struct uf_pub_mem *m[3])
{
	m[0] = &p->orders.mem;
	m[1] = &p->lv.nodes_mem;
	m[2] = &p->lv.arena_mem;
}

/* Every table's reported kind and huge bytes agree with smaps; the publisher reports the
 * smallest kind and the sums. Returns that kind. */
static unsigned check_reported(const struct uf_publisher *p)
{
	const struct uf_pub_mem *m[3];
	mems(p, m);
	unsigned want = UF_PUB_PAGE_HUGETLB;
	uint64_t huge = 0, all = 0;
	for (int i = 0; i < 3; i++) {
		struct vma_info v = vma_at(m[i]->p);
		assert_true(v.found);
		assert_true(v.bytes >= m[i]->bytes);
		assert_int_equal((uintptr_t)m[i]->p % (2u << 20), 0); /* all >= 2 MiB here */
		switch (m[i]->kind) {
		case UF_PUB_PAGE_HUGETLB:
			assert_int_equal(v.kernel_page, 2u << 20);
			assert_int_equal(m[i]->huge_bytes, m[i]->bytes);
			break;
		case UF_PUB_PAGE_THP:
			assert_int_equal(v.kernel_page, 4096);
			assert_true(m[i]->huge_bytes > 0);
			/* khugepaged may only add huge pages after the count, never take them */
			assert_true(v.anon_huge >= m[i]->huge_bytes);
			break;
		case UF_PUB_PAGE_4K:
			assert_int_equal(v.kernel_page, 4096);
			assert_int_equal(m[i]->huge_bytes, 0);
			break;
		default:
			fail_msg("table %d: kind %u", i, m[i]->kind);
		}
		want = m[i]->kind < want ? m[i]->kind : want;
		huge += m[i]->huge_bytes;
		all += m[i]->bytes;
	}
	uint64_t h = 1, b = 1;
	unsigned kind = uf_publish_book_memory(p, &h, &b);
	assert_int_equal(kind, want);
	assert_int_equal(h, huge);
	assert_int_equal(b, all);
	return kind;
}

/* Books on whatever pages they got still work: add, find, delete. */
static void check_books(struct uf_publisher *p)
{
	struct uf_record r[8];
	for (uint64_t ref = 1; ref <= 5000; ref++) {
		struct uf_itch_msg m =
		    mk_add(1, ref, ref & 1 ? 'B' : 'S', 100, 10000 + ref % 50, "MEM");
		assert_int_equal(uf_publish_apply(p, &m, ref, 0, r, 8), 2);
	}
	assert_int_equal(uf_publish_depth(p, 1, UF_SIDE_BID) + uf_publish_depth(p, 1, UF_SIDE_ASK),
	                 50);
	for (uint64_t ref = 1; ref <= 5000; ref++) {
		struct uf_itch_msg m = mk_del(1, ref);
		assert_int_equal(uf_publish_apply(p, &m, 5000 + ref, 0, r, 8), 2);
	}
	assert_int_equal(uf_publish_depth(p, 1, UF_SIDE_BID), 0);
	struct uf_publish_stats st;
	uf_publish_stats(p, &st);
	assert_int_equal(st.errors_total, 0);
	assert_int_equal(st.live_orders, 0);
}

/* No huge kinds allowed: plain pages, and none of them huge even where THP is "always". */
static void test_plain_pages_when_no_huge_kind_is_allowed(void **state)
{
	(void)state;
	struct uf_publisher *p = mk(0);
	assert_int_equal(check_reported(p), UF_PUB_PAGE_4K);
	const struct uf_pub_mem *m[3];
	mems(p, m);
	for (int i = 0; i < 3; i++)
		assert_int_equal(vma_at(m[i]->p).anon_huge, 0);
	assert_string_equal(uf_publish_page_kind_name(UF_PUB_PAGE_4K), "4k");
	check_books(p);
	uf_publish_destroy(p);
}

/* THP only: "thp" exactly when the kernel backed the tables with huge pages (smaps), never
 * under THP "never"; "4k" otherwise, with a working book either way. */
static void test_thp_reported_as_the_kernel_granted_it(void **state)
{
	(void)state;
	char mode[16];
	thp_mode(mode, sizeof(mode));
	struct uf_publisher *p = mk(UF_PUB_PAGES_THP);
	unsigned kind = check_reported(p);
	assert_true(kind == UF_PUB_PAGE_THP || kind == UF_PUB_PAGE_4K);
	if (strcmp(mode, "never") == 0)
		assert_int_equal(kind, UF_PUB_PAGE_4K);
	print_message("THP mode [%s]: book memory %s\n", mode, uf_publish_page_kind_name(kind));
	check_books(p);
	uf_publish_destroy(p);
}

static long restore_nr = -1; /* pool size to put back (teardown), -1: untouched */

static int restore_pool(void **state)
{
	(void)state;
	if (restore_nr >= 0 && write_long(POOL "nr_hugepages", restore_nr) != 0)
		return -1;
	restore_nr = -1;
	return 0;
}

/* Every table's chain with hugetlb first: a pool with room gives "hugetlb" (the mapping's
 * KernelPageSize is 2 MiB); an empty pool falls through. As root the test gives the pool
 * T_PAGES pages of its own and restores the size after. */
static void test_hugetlb_first_then_fallback(void **state)
{
	(void)state;
	long nr = read_long(POOL "nr_hugepages");
	long set = -1;
	if (nr >= 0 && geteuid() == 0 && write_long(POOL "nr_hugepages", nr + T_PAGES) == 0)
		set = restore_nr = nr; /* restored below, or by the teardown on a failure */
	long free0 = read_long(POOL "free_hugepages");
	struct uf_publisher *p = mk(UF_PUB_PAGES_HUGETLB | UF_PUB_PAGES_THP);
	long free_during = read_long(POOL "free_hugepages");
	unsigned kind = check_reported(p);
	const struct uf_pub_mem *m[3];
	mems(p, m);
	int all_hugetlb = 1;
	for (int i = 0; i < 3; i++)
		all_hugetlb &= m[i]->kind == UF_PUB_PAGE_HUGETLB;
	print_message("2 MiB pool %ld pages (set by the test: %s), %ld free before, %ld during: "
	              "book memory %s\n",
	              set >= 0 ? nr + T_PAGES : nr, set >= 0 ? "yes" : "no", free0, free_during,
	              uf_publish_page_kind_name(kind));
	if (free0 < T_PAGES) {
		/* No room: no table can have taken all its pages from the pool. */
		assert_int_not_equal(kind, UF_PUB_PAGE_HUGETLB);
	} else if (!all_hugetlb) {
		/* Room before, yet a table fell through: someone else took the pages first. */
		assert_true(free_during < T_PAGES);
	} else {
		assert_int_equal(kind, UF_PUB_PAGE_HUGETLB);
		assert_string_equal(uf_publish_page_kind_name(kind), "hugetlb");
		/* the pool lent them: T_PAGES fewer free while the tables live */
		assert_true(free_during <= free0 - T_PAGES);
	}
	check_books(p);
	uf_publish_destroy(p);
	if (set >= 0) {
		assert_int_equal(restore_pool(NULL), 0);
		assert_int_equal(read_long(POOL "nr_hugepages"), set);
	}
}

/* Tables smaller than a huge page stay on exactly-sized plain pages. */
static void test_small_tables_stay_small(void **state)
{
	(void)state;
	struct uf_pub_mem m;
	assert_int_equal(uf_pub_mem_map(&m, 5000, -1, UF_PUB_PAGES_HUGETLB | UF_PUB_PAGES_THP), 0);
	assert_int_equal(m.kind, UF_PUB_PAGE_4K);
	assert_int_equal(m.bytes, 8192);
	struct vma_info v = vma_at(m.p);
	assert_true(v.found);
	assert_int_equal(v.bytes, 8192);
	memset(m.p, 0xab, m.bytes);
	uf_pub_mem_unmap(&m);
	assert_null(m.p);
	assert_int_equal(uf_pub_mem_map(&m, 0, -1, 0), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_plain_pages_when_no_huge_kind_is_allowed),
	    cmocka_unit_test(test_thp_reported_as_the_kernel_granted_it),
	    cmocka_unit_test_teardown(test_hugetlb_first_then_fallback, restore_pool),
	    cmocka_unit_test(test_small_tables_stay_small),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
