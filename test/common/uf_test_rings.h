/* Rings a test process names are removed at its exit, even after a failed assertion half
 * way: a ring is up to 64 MiB of /dev/shm, and rings left behind by every CI run once filled
 * the host. Only the process that named them removes them (a forked child leaving with exit()
 * removes nothing; children that leave with _exit() run no atexit handler anyway).
 *
 * The removal is done here by hand, not through uf_ring_unlink: the SDK tests that use it do
 * not link uf_ring. It removes what uf_ring_unlink removes (ring/ring.c), from the same list
 * (UF_RING_DIR_LEAVES), then the private directory uf.NAME, in $UF_RING_DIR or /dev/shm
 * (uf_ring_dir_pick), read at exit. */
#ifndef UF_TEST_RINGS_H
#define UF_TEST_RINGS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ring/journal_file.h"   /* UF_RING_DIR_LEAVES */
#include "ring/uf_ring_layout.h" /* UF_RING_DIR_FMT */

#define UF_TEST_RINGS_MAX 64 /* names remembered per process; later ones are not removed */

static char uf_test_ring_names[UF_TEST_RINGS_MAX][64]; /* the names, in naming order */
static int uf_test_ring_nnames;                        /* entries used */
static pid_t uf_test_ring_owner; /* the process that named them: the only one to remove them */

/* The atexit handler: removes every remembered ring's files and directory. Cold. */
static inline void uf_test_rings_cleanup(void)
{
	static const char *const leaves[] = {UF_RING_DIR_LEAVES};
	const char *dir = getenv("UF_RING_DIR");
	char path[512];

	if (getpid() != uf_test_ring_owner)
		return;
	if (!dir || !dir[0])
		dir = "/dev/shm";
	for (int i = 0; i < uf_test_ring_nnames; i++) {
		for (size_t k = 0; k < sizeof(leaves) / sizeof(leaves[0]); k++) {
			snprintf(path, sizeof(path), "%.300s/" UF_RING_DIR_FMT "/%s", dir,
			         uf_test_ring_names[i], leaves[k]);
			unlink(path);
		}
		snprintf(path, sizeof(path), "%.300s/" UF_RING_DIR_FMT, dir, uf_test_ring_names[i]);
		rmdir(path); /* the ring's private directory, last */
	}
}

/* Remembers ring `name` for removal at exit (once per name; the first call registers the
 * handler and makes the calling process the owner). */
static inline void uf_test_rings_remember(const char *name)
{
	for (int i = 0; i < uf_test_ring_nnames; i++)
		if (!strcmp(uf_test_ring_names[i], name))
			return;
	if (uf_test_ring_nnames == 0) {
		uf_test_ring_owner = getpid();
		atexit(uf_test_rings_cleanup);
	}
	if (uf_test_ring_nnames < UF_TEST_RINGS_MAX)
		snprintf(uf_test_ring_names[uf_test_ring_nnames++], sizeof(uf_test_ring_names[0]),
		         "%s", name);
}

#endif /* UF_TEST_RINGS_H */
