/* The receive back ends' names: the one table every user of `enum uf_backend` goes through
 * (configuration keys, logs, the status endpoint, uf-bench, tests). See uf_feed.h. */
#include <errno.h>
#include <string.h>

#include "common/uf_compiler.h"
#include "feed/uf_feed.h"

static const char *const uf_backend_names[] = {
    [UF_BACKEND_IO_URING] = "io_uring",
    [UF_BACKEND_IO_URING_NOSQPOLL] = "io_uring_nosqpoll",
    [UF_BACKEND_RECVMMSG] = "recvmmsg",
    [UF_BACKEND_EPOLL] = "epoll",
};

const char *uf_backend_name(enum uf_backend b)
{
	if ((unsigned)b >= UF_ARRAY_SIZE(uf_backend_names))
		return NULL;
	return uf_backend_names[b];
}

int uf_backend_parse(const char *name, enum uf_backend *out)
{
	for (unsigned i = 0; i < UF_ARRAY_SIZE(uf_backend_names); i++) {
		if (!strcmp(name, uf_backend_names[i])) {
			*out = (enum uf_backend)i;
			return 0;
		}
	}
	return -EINVAL;
}
