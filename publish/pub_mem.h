/* Large table memory for publish/: mapped once at start, advised onto huge pages, bound to a
 * NUMA node when asked, and touched so no page fault lands on the hot path. Private. */
#ifndef UF_PUB_MEM_H
#define UF_PUB_MEM_H

#include <stddef.h>

/* Returns `bytes` of zeroed, pre-faulted memory, or NULL (errno set). Cold. */
void *uf_pub_mem_alloc(size_t bytes, int numa_node);
void uf_pub_mem_free(void *p, size_t bytes);

#endif /* UF_PUB_MEM_H */
