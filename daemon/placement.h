/* Thread and memory placement: CPU pinning, CPU/NUMA checks, NUMA-local (huge page) memory.
 *
 * All of this is setup-time (cold) work: the daemon validates CPUs while loading the
 * configuration, pins each feed thread once before it starts, and allocates buffers, books
 * and rings through uf_place_alloc() so their pages live on the feed's NUMA node. */
#ifndef UF_PLACEMENT_H
#define UF_PLACEMENT_H

#include <pthread.h>
#include <sched.h>
#include <stddef.h>

/* 1 when `cpu` exists and this process may run on it (sched_getaffinity), else 0. */
int uf_place_cpu_usable(int cpu);

/* Writes the CPUs this process may run on as a list ("0-1", "0,2-5") into buf. Returns the
 * number of CPUs. */
int uf_place_cpu_list(char *buf, size_t len);

/* Number of the highest NUMA node (0 on a machine without NUMA support), and whether
 * `node` is one this process may allocate on (node 0 always when libnuma is unavailable). */
int uf_place_node_max(void);
int uf_place_node_usable(int node);

/* NUMA node of `cpu` (0 without NUMA support), -errno when the CPU is unknown. */
int uf_place_node_of_cpu(int cpu);

/* Pins the calling thread to `cpu` (-1: leaves it alone). 0 or -errno. Logs what it did. */
int uf_place_pin_self(int cpu, const char *what);

/* Sets `attr` so a thread created with it starts pinned to `cpu` (-1: no change). */
int uf_place_attr_pin(pthread_attr_t *attr, int cpu);

/* Restricts the calling thread (and the threads it creates later: HTTP server, logging) to
 * the usable CPUs that are NOT in `busy` (feed and SQ poll CPUs), so control work never
 * preempts a busy-polling thread. When every usable CPU is busy it leaves the mask alone
 * and says so in the log. Returns the number of CPUs left for control work. */
int uf_place_control_threads(const int *busy, int nbusy);

/* Memory placed on one NUMA node. */
struct uf_place_mem {
	void *addr;     /* start, page aligned, zero-filled and faulted in */
	size_t len;     /* bytes usable (what was asked) */
	size_t map_len; /* bytes mapped (rounded to the page size used) */
	int node;       /* node the pages were bound to, -1 when not bound */
	int huge;       /* 1 when backed by explicit 2 MiB huge pages (MAP_HUGETLB) */
};

/* Allocates `len` bytes on NUMA node `node` (-1: the calling thread's node, no binding):
 * explicit huge pages when the system has free ones, otherwise normal pages with
 * transparent huge page advice; the fallback is logged once per call with `what` (e.g.
 * "nasdaq buffers"). Pages are touched so the cost is paid now, not on the hot path.
 * 0 or -errno (-ENOMEM). Free with uf_place_free(). */
int uf_place_alloc(size_t len, int node, const char *what, struct uf_place_mem *out);
void uf_place_free(struct uf_place_mem *m);

#endif /* UF_PLACEMENT_H */
