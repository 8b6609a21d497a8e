/* uf-bench e2e: the one table of receive back ends uf-bench knows (see e2e_model.h): the name
 * uringfeed's config takes, the label the report prints, and the --backends alias. */
#include <errno.h>
#include <string.h>

#include "e2e_model.h"

struct backend_name {
	const char *cfg;   /* uringfeed config "backend" (uf_backend_name's names) */
	const char *label; /* tables, JSON "label", plot keys */
	const char *alias; /* also accepted by --backends, NULL: none */
};

/* `cfg` repeats uf_backend_name()'s names (feed/uf_feed.h); TODO(a11-engine): take them from
 * there. uf-bench keeps its own order (the run and report order), labels and aliases. */
static const struct backend_name names[BE_COUNT] = {
    [BE_SQPOLL] = {"io_uring", "io_uring+SQPOLL", "sqpoll"},
    [BE_NOSQPOLL] = {"io_uring_nosqpoll", "io_uring", "nosqpoll"},
    [BE_RECVMMSG] = {"recvmmsg", "recvmmsg-busy", NULL},
    [BE_EPOLL] = {"epoll", "epoll", NULL},
};

const char *e2e_backend_cfg(enum backend be)
{
	return names[be].cfg;
}

const char *e2e_backend_label(enum backend be)
{
	return names[be].label;
}

int e2e_backends_parse(char *s, uint32_t *mask)
{
	char *save, *tok;

	*mask = 0;
	for (tok = strtok_r(s, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		int found = -1;
		if (!strcmp(tok, "all")) {
			*mask |= (1u << BE_COUNT) - 1;
			continue;
		}
		/* TODO(a11-engine): use uf_backend_parse */
		for (int be = 0; be < BE_COUNT && found < 0; be++)
			if (!strcmp(tok, names[be].cfg) ||
			    (names[be].alias && !strcmp(tok, names[be].alias)))
				found = be;
		if (found < 0)
			return -EINVAL;
		*mask |= 1u << found;
	}
	return *mask ? 0 : -EINVAL;
}
