/* Configuration checks against this host's resources: the rings' files against the ring
 * directory's free space, the feeds' memory against MemAvailable. Both estimates are the
 * engine's own (uf_feed_ring_estimate, uf_feed_memory_estimate), so --check-config refuses
 * a size that would fail at start (ENOSPC from fallocate, ENOMEM from the tables). */
#include "daemon/config_resources.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/statvfs.h>

#include "feed/uf_feed.h"

/* MemAvailable of /proc/meminfo in bytes, or 0 when unknown. */
static uint64_t mem_available(void)
{
	char line[128];
	unsigned long long kb = 0;
	FILE *fp = fopen("/proc/meminfo", "r");
	if (!fp)
		return 0;
	while (fgets(line, sizeof(line), fp))
		if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
			break;
	fclose(fp);
	return (uint64_t)kb * 1024;
}

/* Checks that the feeds' books, rings and buffers fit in this host's available memory: a
 * table that cannot be allocated would otherwise fail at start (ENOMEM, SIGBUS on a full
 * /dev/shm) after --check-config accepted the file. The estimate is the engine's own
 * (uf_feed_memory_estimate); the first feed that does not fit is named. */
static int check_memory(struct uf_cj *c, const struct uf_config *cfg)
{
	uint64_t avail = mem_available(), total = 0;
	char key[32];

	if (avail == 0)
		return 0; /* no /proc/meminfo: nothing to compare with */
	for (int i = 0; i < cfg->nfeeds; i++) {
		const struct uf_feed_config *f = &cfg->feeds[i];
		uint64_t need = uf_feed_memory_estimate(f);
		total += need;
		if (total <= avail)
			continue;
		snprintf(key, sizeof(key), "feeds[%d]", i);
		return uf_cj_fail(c, key,
		                  "needs about %" PRIu64 " MiB (book.max_orders %" PRIu64
		                  ", book.max_instruments %u, ring.capacity %" PRIu64
		                  " records, buffers)%s, but this host has %" PRIu64
		                  " MiB available (MemAvailable): lower those sizes",
		                  need >> 20, f->book.max_orders, f->book.max_instruments,
		                  f->ring.capacity, i ? " on top of the feeds before it" : "",
		                  avail >> 20);
	}
	return 0;
}

/* Checks that the feeds' ring files fit in the ring directory's free space ($UF_RING_DIR or
 * /dev/shm, as ring/ picks it): the ring allocates them with fallocate, and a full file
 * system would refuse the start (exit 1) after --check-config accepted the file. */
static int check_ring_space(struct uf_cj *c, const struct uf_config *cfg)
{
	const char *dir = getenv("UF_RING_DIR");
	struct statvfs vfs;
	uint64_t avail, total = 0;
	char key[48];

	if (!dir || !dir[0])
		dir = "/dev/shm";
	if (statvfs(dir, &vfs) != 0)
		return 0; /* the ring reports a missing directory itself, with its path */
	avail = (uint64_t)vfs.f_bavail * vfs.f_frsize;
	for (int i = 0; i < cfg->nfeeds; i++) {
		const struct uf_feed_config *f = &cfg->feeds[i];
		uint64_t need = uf_feed_ring_estimate(f);
		total += need;
		if (total <= avail)
			continue;
		snprintf(key, sizeof(key), "feeds[%d].ring.capacity", i);
		return uf_cj_fail(c, key,
		                  "%" PRIu64 " records need a ring file of about %" PRIu64
		                  " MiB%s, but %s has %" PRIu64 " MiB free",
		                  f->ring.capacity, need >> 20,
		                  i ? " on top of the feeds before it" : "", dir, avail >> 20);
	}
	return 0;
}

int uf_config_check_resources(struct uf_cj *c, const struct uf_config *cfg)
{
	int r = check_ring_space(c, cfg);
	return r ? r : check_memory(c, cfg);
}
