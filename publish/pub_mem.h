/* Large table memory for publish/: mapped once at start, on the largest pages the kernel
 * grants, bound to a NUMA node when asked, and touched so no page fault lands on the hot
 * path. Private.
 *
 * The order table is probed at random (a 4 M-order table is 128 MiB): on 4 KiB pages nearly
 * every probe also misses the TLB. So the big tables try, in order: hugetlb pages
 * (MAP_HUGETLB, 2 MiB, from the vm.nr_hugepages pool: guaranteed, but usually 0 pages unless
 * an operator reserved them), transparent huge pages (a 2 MiB-aligned mapping advised with
 * MADV_HUGEPAGE: granted when the kernel finds free 2 MiB blocks), then plain pages. Which one
 * was obtained is measured (hugetlb: the mapping succeeded; THP: AnonHugePages of the
 * mapping in /proc/self/smaps after the pre-fault) and reported. */
#ifndef UF_PUB_MEM_H
#define UF_PUB_MEM_H

#include <stddef.h>
#include <stdint.h>

#include "publish/uf_publish.h"

/* One big table's mapping (uf_pub_mem_map). */
struct uf_pub_mem {
	void *p;           /* the table, 2 MiB aligned unless kind is 4k and the size small */
	size_t bytes;      /* usable bytes (the request rounded up to whole 2 MiB pages) */
	size_t huge_bytes; /* bytes the kernel backs with huge pages (all of it for hugetlb,
	                    * what smaps says for THP, 0 for 4k) */
	uint32_t kind;     /* enum uf_pub_page_kind obtained */
	uint32_t guarded;  /* 1: a 4 KiB PROT_NONE guard page on each side (THP and 4k
	                    * mappings: keeps the kernel from merging the mapping with a
	                    * neighbour, so smaps reports this table alone) */
};

/* Maps >= `bytes` of zeroed, pre-faulted memory into *m, trying the page kinds allowed by
 * `kinds` (UF_PUB_PAGES_* bits; 0 = all) from the largest down. Returns 0, -EINVAL (bytes 0),
 * or -ENOMEM (nothing allowed could be mapped). Cold. */
int uf_pub_mem_map(struct uf_pub_mem *m, size_t bytes, int numa_node, uint32_t kinds);
/* Unmaps what uf_pub_mem_map mapped; a zeroed struct is fine. */
void uf_pub_mem_unmap(struct uf_pub_mem *m);

/* Small tables (books, directory, symbol hash): plain pages, advised onto THP, pre-faulted.
 * Returns `bytes` of zeroed memory, or NULL (errno set). Cold. */
void *uf_pub_mem_alloc(size_t bytes, int numa_node);
void uf_pub_mem_free(void *p, size_t bytes);

#endif /* UF_PUB_MEM_H */
