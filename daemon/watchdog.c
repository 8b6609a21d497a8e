/* Watchdog ping decision from feed heartbeats: see watchdog.h. */
#include "daemon/watchdog.h"

#include <stddef.h>

int uf_watchdog_decide(const uint64_t *prev, const uint64_t *cur, const uint8_t *live, unsigned n,
                       unsigned *stuck)
{
	for (unsigned i = 0; i < n; i++) {
		if (live && !live[i])
			continue;
		/* "Changed", not "grew": a counter that wrapped moved too. */
		if (cur[i] == prev[i]) {
			if (stuck)
				*stuck = i;
			return 0;
		}
	}
	return 1;
}
