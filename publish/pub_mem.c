/* Table memory: mmap + MADV_HUGEPAGE + optional NUMA binding + pre-fault. */
#include "publish/pub_mem.h"

#include <errno.h>
#include <numa.h>
#include <string.h>
#include <sys/mman.h>

void *uf_pub_mem_alloc(size_t bytes, int numa_node)
{
	if (bytes == 0) {
		errno = EINVAL;
		return NULL;
	}
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	/* Transparent huge pages cut TLB misses on the random order-table probes; advisory,
	 * so a kernel without THP just keeps 4 KiB pages. */
	(void)madvise(p, bytes, MADV_HUGEPAGE);
	if (numa_node >= 0 && numa_available() >= 0)
		numa_tonode_memory(p, bytes, numa_node);
	/* Touch every page now (zeroes it): the feed thread must not take page faults. */
	memset(p, 0, bytes);
	return p;
}

void uf_pub_mem_free(void *p, size_t bytes)
{
	if (p)
		munmap(p, bytes);
}
