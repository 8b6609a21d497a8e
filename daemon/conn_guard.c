/* See conn_guard.h. A few hundred entries scanned linearly, on accept and close only. */
#include "daemon/conn_guard.h"

#include <errno.h>
#include <string.h>

void uf_conn_guard_init(struct uf_conn_guard *g, uint32_t limit)
{
	memset(g, 0, sizeof(*g));
	g->limit = limit < 1 ? 1 : limit > UF_CONN_GUARD_MAX ? UF_CONN_GUARD_MAX : limit;
}

int uf_conn_guard_admit(struct uf_conn_guard *g)
{
	if (g->n < g->limit)
		return -1;
	uint32_t old = 0;
	for (uint32_t i = 1; i < g->n; i++)
		if (g->opened[i] < g->opened[old])
			old = i;
	g->evicted++;
	/* Still tracked until it is closed, but no longer the oldest: pushed to "now" so the
	 * next admission evicts another one rather than this one again. */
	g->opened[old] = UINT64_MAX;
	return g->fd[old];
}

int uf_conn_guard_opened(struct uf_conn_guard *g, int fd, uint64_t now)
{
	if (g->n >= UF_CONN_GUARD_MAX)
		return -ENOSPC;
	g->fd[g->n] = fd;
	g->opened[g->n] = now;
	g->n++;
	return 0;
}

void uf_conn_guard_closed(struct uf_conn_guard *g, int fd)
{
	for (uint32_t i = 0; i < g->n; i++) {
		if (g->fd[i] != fd)
			continue;
		g->n--;
		g->fd[i] = g->fd[g->n];
		g->opened[i] = g->opened[g->n];
		return;
	}
}
