/* Private to the ingest back ends (ingest.c, ingest_uring.c). */
#ifndef UF_INGEST_INTERNAL_H
#define UF_INGEST_INTERNAL_H

#include "feed/ingest.h"

int uf_ingest_region_alloc(struct uf_ingest *ig, int node, char *err, size_t errlen);
int uf_ingest_uring_open(struct uf_ingest *ig, const struct uf_ingest_params *p, char *err,
                         size_t errlen);
int uf_ingest_uring_poll(struct uf_ingest *ig, struct uf_pkt *pkts, int max);
void uf_ingest_uring_release(struct uf_ingest *ig, const struct uf_pkt *pkts, int n);
void uf_ingest_uring_close(struct uf_ingest *ig);

#endif /* UF_INGEST_INTERNAL_H */
