/* The uringfeed daemon: what tools/uringfeed/main.c (the command line) calls. */
#ifndef UF_DAEMON_H
#define UF_DAEMON_H

#include <stddef.h>

#include "daemon/uf_config.h"

/* Loads `config_path`, runs its feeds until SIGTERM/SIGINT, returns the exit status
 * (0 clean stop, 1 runtime failure, 2 bad configuration). `log_level` >= 0 overrides the
 * file's log.level. */
int uf_daemon_run(const char *config_path, int log_level, const char *version);

/* One human-readable line describing a feed's configuration (logs and --check-config). */
void uf_daemon_describe_feed(const struct uf_feed_config *f, char *buf, size_t len);

#endif /* UF_DAEMON_H */
