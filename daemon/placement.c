/* Thread and memory placement: see placement.h. */
#include "daemon/placement.h"

#include <errno.h>
#include <numa.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "daemon/log.h"

#define UF_HUGE_PAGE (2u << 20) /* explicit huge page size we ask MAP_HUGETLB for */

static int numa_ok(void)
{
	static int state = -2; /* -2 unknown; numa_available() is cheap but prints nothing */

	if (state == -2)
		state = numa_available() == 0;
	return state;
}

int uf_place_cpu_usable(int cpu)
{
	cpu_set_t set;

	if (cpu < 0 || cpu >= CPU_SETSIZE)
		return 0;
	if (sched_getaffinity(0, sizeof(set), &set) != 0)
		return cpu < sysconf(_SC_NPROCESSORS_ONLN);
	return CPU_ISSET(cpu, &set) != 0;
}

int uf_place_cpu_list(char *buf, size_t len)
{
	cpu_set_t set;
	size_t off = 0;
	int n = 0;

	if (len)
		buf[0] = '\0';
	if (sched_getaffinity(0, sizeof(set), &set) != 0)
		return 0;
	for (int c = 0; c < CPU_SETSIZE; c++) {
		if (!CPU_ISSET(c, &set))
			continue;
		int end = c;
		while (end + 1 < CPU_SETSIZE && CPU_ISSET(end + 1, &set))
			end++;
		n += end - c + 1;
		if (off < len) {
			int w = end == c ? snprintf(buf + off, len - off, "%s%d", off ? "," : "", c)
			                 : snprintf(buf + off, len - off, "%s%d-%d", off ? "," : "",
			                            c, end);
			off += w > 0 ? (size_t)w : 0;
		}
		c = end;
	}
	return n;
}

int uf_place_node_max(void)
{
	return numa_ok() ? numa_max_node() : 0;
}

int uf_place_node_usable(int node)
{
	if (node < 0)
		return 0;
	if (!numa_ok())
		return node == 0;
	if (node > numa_max_node())
		return 0;
	return numa_bitmask_isbitset(numa_all_nodes_ptr, (unsigned)node) != 0;
}

int uf_place_node_of_cpu(int cpu)
{
	if (cpu < 0 || cpu >= CPU_SETSIZE)
		return -EINVAL;
	if (!numa_ok())
		return 0;
	int node = numa_node_of_cpu(cpu);
	return node < 0 ? -errno : node;
}

int uf_place_pin_self(int cpu, const char *what)
{
	cpu_set_t set;
	int err;

	if (cpu < 0)
		return 0;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	err = pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	if (err) {
		uf_log_error("placement: cannot pin %s to CPU %d: %s", what, cpu, strerror(err));
		return -err;
	}
	uf_log_info("placement: %s pinned to CPU %d (NUMA node %d)", what, cpu,
	            uf_place_node_of_cpu(cpu));
	return 0;
}

int uf_place_attr_pin(pthread_attr_t *attr, int cpu)
{
	cpu_set_t set;

	if (cpu < 0)
		return 0;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return -pthread_attr_setaffinity_np(attr, sizeof(set), &set);
}

int uf_place_control_threads(const int *busy, int nbusy)
{
	cpu_set_t set;
	int left;

	if (sched_getaffinity(0, sizeof(set), &set) != 0)
		return -errno;
	for (int i = 0; i < nbusy; i++)
		if (busy[i] >= 0 && busy[i] < CPU_SETSIZE)
			CPU_CLR(busy[i], &set);
	left = CPU_COUNT(&set);
	if (left == 0) {
		/* Every CPU spins for a feed: control threads must share with one of them. */
		uf_log_warn("placement: every usable CPU runs a feed or SQ poll thread; the HTTP "
		            "and control threads share them (expect jitter on the feeds)");
		return 0;
	}
	if (pthread_setaffinity_np(pthread_self(), sizeof(set), &set) != 0)
		return -errno;
	uf_log_debug("placement: control threads on %d CPU(s) not used by feeds", left);
	return left;
}

/* Binds [addr, addr+len) to `node` before the first touch so the pages are born there. */
static void bind_to_node(void *addr, size_t len, int node)
{
	if (node >= 0 && numa_ok())
		numa_tonode_memory(addr, len, node);
}

int uf_place_alloc(size_t len, int node, const char *what, struct uf_place_mem *out)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t map_len;
	void *p;

	memset(out, 0, sizeof(*out));
	out->node = -1;
	if (len == 0)
		return -EINVAL;
	if (node >= 0 && !uf_place_node_usable(node)) {
		uf_log_error("placement: %s: NUMA node %d does not exist", what, node);
		return -EINVAL;
	}

	/* Explicit huge pages first: fewer TLB misses on buffers and books that the feed thread
	 * sweeps all day. They need pages reserved by the admin (vm.nr_hugepages). */
	map_len = (len + UF_HUGE_PAGE - 1) & ~((size_t)UF_HUGE_PAGE - 1);
	p = mmap(NULL, map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB,
	         -1, 0);
	if (p != MAP_FAILED) {
		out->huge = 1;
	} else {
		int err = errno;

		map_len = (len + page - 1) & ~(page - 1);
		p = mmap(NULL, map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED) {
			uf_log_error("placement: %s: cannot map %zu bytes: %s", what, len,
			             strerror(errno));
			return -ENOMEM;
		}
		/* Transparent huge pages are the next best thing, when the kernel allows them. */
		madvise(p, map_len, MADV_HUGEPAGE);
		uf_log_info("placement: %s: no explicit huge pages (%s; reserve with "
		            "vm.nr_hugepages), using %zu KiB pages with THP advice",
		            what, strerror(err), page / 1024);
	}
	bind_to_node(p, map_len, node);
	/* Fault every page in now: a page fault on the hot path costs microseconds. */
	memset(p, 0, map_len);

	out->addr = p;
	out->len = len;
	out->map_len = map_len;
	out->node = node >= 0 && numa_ok() ? node : -1;
	if (out->node >= 0)
		uf_log_info("placement: %s: %zu KiB on NUMA node %d%s", what, map_len / 1024,
		            out->node, out->huge ? " (2 MiB huge pages)" : "");
	else
		uf_log_info("placement: %s: %zu KiB on the local node%s", what, map_len / 1024,
		            out->huge ? " (2 MiB huge pages)" : "");
	return 0;
}

void uf_place_free(struct uf_place_mem *m)
{
	if (m->addr)
		munmap(m->addr, m->map_len);
	memset(m, 0, sizeof(*m));
	m->node = -1;
}
