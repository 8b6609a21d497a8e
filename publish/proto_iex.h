/* The IEX protocol entries, listed in publish/protocols.c:
 *   "iex-deep"  IEX DEEP 1.0 over IEX-TP: price-level books (Price Level Update: a level's
 *               size, 0 = gone; the event flag is UF_RECF_LAST), trades, statuses, directory;
 *   "iex-tops"  IEX TOPS 1.6 over IEX-TP: level-1 books (Quote Update: best bid and ask),
 *               the same trades, statuses and directory.
 * Both: instrument ids per symbol (publish/uf_venue.h), exch_ts converted from the epoch to ns
 * since New York midnight (common/uf_nyday.h), no re-request and no snapshot service (the
 * specifications offer none over UDP: holes wait for the other line, then become gaps). A
 * segment starting the stream again inside its session (sequence 1 at stream offset 0 after
 * a publisher restart) is a new stream: the framings below tell the arbiter so
 * (`restart`), which voids the books with a RESET record (docs/feed.md). */
#ifndef UF_PROTO_IEX_H
#define UF_PROTO_IEX_H

#include "publish/uf_proto.h"

extern const struct uf_proto uf_proto_iex_deep;
extern const struct uf_proto uf_proto_iex_tops;

#endif /* UF_PROTO_IEX_H */
