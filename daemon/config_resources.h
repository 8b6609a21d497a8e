/* Host resource checks of a parsed configuration (daemon/config.c calls them last, unless
 * UF_CFG_NO_HOST_CHECKS or UF_CFG_NO_RESOURCE_CHECKS). */
#ifndef UF_CONFIG_RESOURCES_H
#define UF_CONFIG_RESOURCES_H

#include "daemon/config_json.h"
#include "daemon/uf_config.h"

/* Refuses (uf_cj_fail, -EINVAL) the first feed whose ring file does not fit in the free space
 * of the ring directory ($UF_RING_DIR or /dev/shm), naming feeds[i].ring.capacity, then the
 * first feed whose memory does not fit in MemAvailable (with the feeds before it), naming
 * feeds[i] and its sizes. 0 when everything fits or nothing can be measured. */
int uf_config_check_resources(struct uf_cj *c, const struct uf_config *cfg);

#endif /* UF_CONFIG_RESOURCES_H */
