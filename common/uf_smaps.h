/* What the kernel actually backs a mapping with, from /proc/self/smaps: the bytes on huge
 * pages. Asking (MAP_HUGETLB aside) is only advice: MADV_HUGEPAGE is ignored when the
 * kernel's policy says no, and for a file on tmpfs (the rings' /dev/shm) the policy is the
 * mount's own huge= option, not /sys/kernel/mm/transparent_hugepage/shmem_enabled. So what
 * is reported must be read back, not inferred from a setting. Cold: a file read. */
#ifndef UF_SMAPS_H
#define UF_SMAPS_H

#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Bytes of the mappings lying inside [p, p + bytes) that are mapped with huge pages:
 * AnonHugePages (private anonymous memory), ShmemPmdMapped (tmpfs and shared memory) and
 * FilePmdMapped (page cache files), summed over every mapping inside the range. Returns that
 * sum (0: small pages), or -errno when smaps cannot be read. hugetlb mappings are not
 * counted (their size is the page size, KernelPageSize): the caller knows it mapped them. */
static inline int64_t uf_smaps_huge_bytes(const void *p, size_t bytes)
{
	static const char *const fields[] = {"AnonHugePages:", "ShmemPmdMapped:", "FilePmdMapped:"};
	FILE *f = fopen("/proc/self/smaps", "r");
	if (!f)
		return -errno;
	uintptr_t lo = (uintptr_t)p, hi = lo + bytes;
	char *line = NULL;
	size_t cap = 0;
	int inside = 0;
	int64_t total = 0;
	while (getline(&line, &cap, f) > 0) {
		uintptr_t s, e;
		unsigned long long kb;
		/* A mapping's header ("start-end perms ...", lower-case hex) starts a new block;
		 * its fields ("Name:  value kB") follow. */
		if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR " ", &s, &e) == 2) {
			inside = s >= lo && e <= hi;
			continue;
		}
		if (!inside)
			continue;
		for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
			size_t n = strlen(fields[i]);
			if (!strncmp(line, fields[i], n) && sscanf(line + n, " %llu kB", &kb) == 1)
				total += (int64_t)kb * 1024;
		}
	}
	free(line);
	fclose(f);
	return total;
}

#endif /* UF_SMAPS_H */
