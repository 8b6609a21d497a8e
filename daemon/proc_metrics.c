/* process_* metrics: see proc_metrics.h. */
#include "daemon/proc_metrics.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

/* Reads a whole small /proc file into buf (NUL-terminated); returns its length or -errno. */
static ssize_t read_small(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n, off = 0;

	if (fd < 0)
		return -errno;
	while ((size_t)off < len - 1 && (n = read(fd, buf + off, len - 1 - (size_t)off)) > 0)
		off += n;
	close(fd);
	buf[off] = '\0';
	return off;
}

/* Field `want` (1-based, as in proc(5)) of /proc/self/stat, counting from after the comm
 * field, whose parentheses may hold spaces. */
static int stat_field(const char *stat, int want, unsigned long long *out)
{
	const char *p = strrchr(stat, ')');

	if (!p)
		return -EINVAL;
	p++;
	for (int field = 3; field < want; field++) { /* p: the space before field 3 */
		p = strchr(p + 1, ' ');
		if (!p)
			return -EINVAL;
	}
	char *end;
	errno = 0;
	*out = strtoull(p + 1, &end, 10);
	return errno || end == p + 1 ? -EINVAL : 0;
}

static int boot_time(unsigned long long *btime)
{
	char buf[16384];
	ssize_t n = read_small("/proc/stat", buf, sizeof(buf));

	if (n < 0)
		return (int)n;
	const char *p = strstr(buf, "\nbtime ");
	if (!p || sscanf(p + 7, "%llu", btime) != 1)
		return -EINVAL;
	return 0;
}

static int count_fds(uint64_t *n)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	uint64_t k = 0;

	if (!d)
		return -errno;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			k++;
	closedir(d);
	*n = k - 1; /* the directory stream's own descriptor */
	return 0;
}

int uf_proc_metrics_read(struct uf_proc_metrics *m)
{
	char stat[4096];
	unsigned long long utime, stime, start, vsize, rss, btime;
	long tck = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
	struct rlimit rl;
	ssize_t n;
	int rc;

	memset(m, 0, sizeof(*m));
	n = read_small("/proc/self/stat", stat, sizeof(stat));
	if (n < 0)
		return (int)n;
	if (stat_field(stat, 14, &utime) || stat_field(stat, 15, &stime) ||
	    stat_field(stat, 22, &start) || stat_field(stat, 23, &vsize) ||
	    stat_field(stat, 24, &rss) || tck <= 0 || page <= 0)
		return -EINVAL;
	if ((rc = boot_time(&btime)) || (rc = count_fds(&m->open_fds)))
		return rc;
	m->cpu_seconds = (double)(utime + stime) / (double)tck;
	m->resident_bytes = (uint64_t)rss * (uint64_t)page;
	m->virtual_bytes = vsize;
	m->start_time_seconds = (double)btime + (double)start / (double)tck;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return -errno;
	m->max_fds = rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX : (uint64_t)rl.rlim_cur;
	if (getrlimit(RLIMIT_AS, &rl) < 0)
		return -errno;
	m->max_virtual = rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX : (uint64_t)rl.rlim_cur;
	return 0;
}

struct out {
	char *p;
	size_t len, off;
	int full;
};

static void put(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct out *o, const char *fmt, ...)
{
	va_list ap;

	if (o->full)
		return;
	va_start(ap, fmt);
	int n = vsnprintf(o->p + o->off, o->len - o->off, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= o->len - o->off) {
		o->full = 1;
		return;
	}
	o->off += (size_t)n;
}

static void family(struct out *o, const char *name, const char *type, const char *help)
{
	put(o, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

int uf_proc_metrics_render(const struct uf_proc_metrics *m, char *buf, size_t len)
{
	struct out o = {buf, len, 0, len == 0};

	family(&o, "process_cpu_seconds_total", "counter",
	       "Total user and system CPU time spent in seconds.");
	put(&o, "process_cpu_seconds_total %.2f\n", m->cpu_seconds);
	family(&o, "process_open_fds", "gauge", "Number of open file descriptors.");
	put(&o, "process_open_fds %llu\n", (unsigned long long)m->open_fds);
	family(&o, "process_max_fds", "gauge", "Maximum number of open file descriptors.");
	put(&o, "process_max_fds %llu\n", (unsigned long long)m->max_fds);
	family(&o, "process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.");
	put(&o, "process_virtual_memory_bytes %llu\n", (unsigned long long)m->virtual_bytes);
	family(&o, "process_virtual_memory_max_bytes", "gauge",
	       "Maximum amount of virtual memory available in bytes.");
	if (m->max_virtual == UINT64_MAX)
		put(&o, "process_virtual_memory_max_bytes +Inf\n");
	else
		put(&o, "process_virtual_memory_max_bytes %llu\n",
		    (unsigned long long)m->max_virtual);
	family(&o, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.");
	put(&o, "process_resident_memory_bytes %llu\n", (unsigned long long)m->resident_bytes);
	family(&o, "process_start_time_seconds", "gauge",
	       "Start time of the process since unix epoch in seconds.");
	put(&o, "process_start_time_seconds %.2f\n", m->start_time_seconds);
	if (o.full)
		return -ENOSPC;
	return (int)o.off;
}
