/* Table memory: hugetlb -> transparent huge pages -> plain pages, NUMA binding, pre-fault. */
#include "publish/pub_mem.h"

#include "common/uf_smaps.h"

#include <errno.h>
#include <inttypes.h>
#include <numa.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#ifndef MAP_HUGE_SHIFT
#define MAP_HUGE_SHIFT 26
#endif
#ifndef MAP_HUGE_2MB
#define MAP_HUGE_2MB (21 << MAP_HUGE_SHIFT)
#endif

#define UF_PUB_HUGE  UF_PUB_HUGE_PAGE /* the huge page size used */
#define UF_PUB_GUARD 4096u            /* guard page on each side of a THP / 4k mapping */

static size_t uf_pub_round_huge(size_t bytes)
{
	return (bytes + UF_PUB_HUGE - 1) & ~(size_t)(UF_PUB_HUGE - 1);
}

/* Free 2 MiB hugetlb pages on `node` (sysfs), or SIZE_MAX when it cannot be read. With a
 * node given the pages must come from it: a bound fault with none left there would be a
 * SIGBUS at the pre-fault, so hugetlb is tried only when the node has them free. */
static size_t uf_pub_node_free_huge(int node)
{
	char path[128];
	snprintf(path, sizeof(path),
	         "/sys/devices/system/node/node%d/hugepages/hugepages-2048kB/free_hugepages", node);
	FILE *f = fopen(path, "r");
	if (!f)
		return SIZE_MAX;
	unsigned long long n = 0;
	if (fscanf(f, "%llu", &n) != 1)
		n = 0;
	fclose(f);
	return (size_t)n;
}

static void uf_pub_bind(void *p, size_t bytes, int numa_node)
{
	if (numa_node >= 0 && numa_available() >= 0)
		numa_tonode_memory(p, bytes, numa_node);
}

/* hugetlb: the pool reserves the pages at mmap time, so a success here cannot fault later
 * for want of pages. */
static int uf_pub_map_hugetlb(struct uf_pub_mem *m, size_t len, int numa_node)
{
	if (numa_node >= 0 && numa_available() >= 0 &&
	    uf_pub_node_free_huge(numa_node) < len / UF_PUB_HUGE)
		return -ENOMEM;
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
	               MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | MAP_HUGE_2MB, -1, 0);
	if (p == MAP_FAILED)
		return -errno;
	uf_pub_bind(p, len, numa_node);
	memset(p, 0, len);
	m->p = p;
	m->bytes = len;
	m->huge_bytes = len;
	m->kind = UF_PUB_PAGE_HUGETLB;
	m->guarded = 0;
	return 0;
}

/* THP or plain pages: a 2 MiB-aligned range (a huge page can only back an aligned 2 MiB
 * block) between two PROT_NONE guard pages, advised for or against huge pages. */
static int uf_pub_map_anon(struct uf_pub_mem *m, size_t len, int numa_node, int thp)
{
	size_t total = len + UF_PUB_HUGE + 2 * UF_PUB_GUARD;
	uint8_t *raw =
	    mmap(NULL, total, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (raw == MAP_FAILED)
		return -errno;
	uintptr_t a =
	    ((uintptr_t)raw + UF_PUB_GUARD + UF_PUB_HUGE - 1) & ~(uintptr_t)(UF_PUB_HUGE - 1);
	uint8_t *p = (uint8_t *)a;
	uint8_t *lo = p - UF_PUB_GUARD, *hi = p + len + UF_PUB_GUARD;
	if (lo > raw)
		munmap(raw, (size_t)(lo - raw));
	if (raw + total > hi)
		munmap(hi, (size_t)(raw + total - hi));
	/* The table proper becomes an ordinary private mapping; the guards stay PROT_NONE. */
	if (mmap(p, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) ==
	    MAP_FAILED) {
		int e = errno;
		munmap(lo, len + 2 * UF_PUB_GUARD);
		return -e;
	}
	/* Advisory: a kernel without THP refuses MADV_HUGEPAGE and keeps 4 KiB pages; smaps
	 * below says what was granted. Plain pages are asked for explicitly, so a host with
	 * THP "always" still gives the 4k the caller chose. */
	(void)madvise(p, len, thp ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
	uf_pub_bind(p, len, numa_node);
	/* Touch every page now (zeroes it): the feed thread must not take page faults. */
	memset(p, 0, len);
	m->p = p;
	m->bytes = len;
	m->guarded = 1;
	m->huge_bytes = 0;
	if (thp) {
		int64_t h = uf_smaps_huge_bytes(p, len);
		m->huge_bytes = h > 0 ? (size_t)h : 0;
	}
	m->kind = m->huge_bytes ? UF_PUB_PAGE_THP : UF_PUB_PAGE_4K;
	return 0;
}

int uf_pub_mem_map(struct uf_pub_mem *m, size_t bytes, int numa_node, uint32_t kinds)
{
	memset(m, 0, sizeof(*m));
	if (bytes == 0)
		return -EINVAL;
	if (bytes < UF_PUB_HUGE) {
		/* Smaller than one huge page: a few 4 KiB TLB entries cover it, and rounding it
		 * up would cost a test's many small publishers 2 MiB a table. */
		size_t len = (bytes + UF_PUB_GUARD - 1) & ~(size_t)(UF_PUB_GUARD - 1);
		return uf_pub_map_anon(m, len, numa_node, 0);
	}
	size_t len = uf_pub_round_huge(bytes);
	if (len < bytes)
		return -ENOMEM;
	if ((kinds & UF_PUB_PAGES_HUGETLB) && uf_pub_map_hugetlb(m, len, numa_node) == 0)
		return 0;
	return uf_pub_map_anon(m, len, numa_node, (kinds & UF_PUB_PAGES_THP) != 0);
}

void uf_pub_mem_unmap(struct uf_pub_mem *m)
{
	if (!m->p)
		return;
	if (m->guarded)
		munmap((uint8_t *)m->p - UF_PUB_GUARD, m->bytes + 2 * UF_PUB_GUARD);
	else
		munmap(m->p, m->bytes);
	memset(m, 0, sizeof(*m));
}

void *uf_pub_mem_alloc(size_t bytes, int numa_node)
{
	if (bytes == 0) {
		errno = EINVAL;
		return NULL;
	}
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	/* Advisory, as for the big tables; these are small, so it rarely applies. */
	(void)madvise(p, bytes, MADV_HUGEPAGE);
	uf_pub_bind(p, bytes, numa_node);
	memset(p, 0, bytes);
	return p;
}

void uf_pub_mem_free(void *p, size_t bytes)
{
	if (p)
		munmap(p, bytes);
}
