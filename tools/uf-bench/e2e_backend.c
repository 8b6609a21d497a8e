/* uf-bench e2e: the one table of receive back ends uf-bench knows (see e2e_model.h): the name
 * uringfeed's config takes, the label the report prints, and the --backends alias. */
#include <errno.h>
#include <string.h>

#include "e2e_model.h"
#include "feed/uf_feed.h"

struct backend_name {
	enum uf_backend feed; /* the engine's back end: its config name is uf_backend_name()'s */
	const char *label;    /* tables, JSON "label", plot keys */
	const char *alias;    /* also accepted by --backends, NULL: none */
	unsigned record;      /* REC_* what the run's daemon also writes to disk */
	int idle_pause;       /* UF_FEED_IDLE_PAUSE_* the run's daemon is given (AUTO: none) */
};

enum { REC_JOURNAL = 1, REC_CAPTURE = 2 };

/* uf-bench keeps its own order (the run and report order), labels and aliases; the names the
 * config takes come from the engine's one table (feed/backend.c). */
static const struct backend_name names[BE_COUNT] = {
    [BE_SQPOLL] = {.feed = UF_BACKEND_IO_URING, .label = "io_uring+SQPOLL", .alias = "sqpoll"},
    [BE_NOSQPOLL] = {.feed = UF_BACKEND_IO_URING_NOSQPOLL,
                     .label = "io_uring",
                     .alias = "nosqpoll"},
    [BE_RECVMMSG] = {.feed = UF_BACKEND_RECVMMSG, .label = "recvmmsg-busy"},
    [BE_EPOLL] = {.feed = UF_BACKEND_EPOLL, .label = "epoll"},
    [BE_SQPOLL_JOURNAL] = {.feed = UF_BACKEND_IO_URING,
                           .label = "SQPOLL+journal",
                           .alias = "sqpoll+journal",
                           .record = REC_JOURNAL},
    [BE_NOSQPOLL_RECORD] = {.feed = UF_BACKEND_IO_URING_NOSQPOLL,
                            .label = "io_uring+capture+journal",
                            .alias = "nosqpoll+record",
                            .record = REC_JOURNAL | REC_CAPTURE},
    [BE_SQPOLL_PAUSE] = {.feed = UF_BACKEND_IO_URING,
                         .label = "SQPOLL+pause",
                         .alias = "sqpoll+pause",
                         .idle_pause = UF_FEED_IDLE_PAUSE_ON},
    [BE_NOSQPOLL_SPIN] = {.feed = UF_BACKEND_IO_URING_NOSQPOLL,
                          .label = "io_uring+spin",
                          .alias = "nosqpoll+spin",
                          .idle_pause = UF_FEED_IDLE_PAUSE_OFF},
};

enum uf_backend e2e_backend_feed(enum backend be)
{
	return names[be].feed;
}

int e2e_backend_journal(enum backend be)
{
	return (names[be].record & REC_JOURNAL) != 0;
}

int e2e_backend_capture(enum backend be)
{
	return (names[be].record & REC_CAPTURE) != 0;
}

int e2e_backend_idle_pause(enum backend be)
{
	return names[be].idle_pause;
}

const char *e2e_backend_cfg(enum backend be)
{
	return uf_backend_name(names[be].feed);
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
		enum uf_backend fb;
		if (!strcmp(tok, "all")) {
			*mask |= BE_ALL_MASK;
			continue;
		}
		int is_feed_name = uf_backend_parse(tok, &fb) == 0;
		for (int be = 0; be < BE_COUNT && found < 0; be++)
			if ((is_feed_name && names[be].feed == fb && !names[be].record &&
			     !names[be].idle_pause) ||
			    (names[be].alias && !strcmp(tok, names[be].alias)))
				found = be;
		if (found < 0)
			return -EINVAL;
		*mask |= 1u << found;
	}
	return *mask ? 0 : -EINVAL;
}
