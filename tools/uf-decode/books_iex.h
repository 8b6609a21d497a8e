/* `uf-decode books` on IEX-TP captures: the books built by the live feed's protocol entry
 * ("iex-deep" / "iex-tops", publish/proto_iex.c), not by a second copy of its rules. */
#ifndef UF_DECODE_BOOKS_IEX_H
#define UF_DECODE_BOOKS_IEX_H

#include <stdint.h>

#include "decode/uf_decode.h"
#include "publish/uf_publish.h"

/* What applying an IEX capture did, for the summary on stderr. */
struct uf_books_iex_result {
	const char *proto;   /* the entry used ("iex-deep" / "iex-tops") */
	uint64_t segments;   /* data segments applied */
	uint64_t restarts;   /* streams started again inside the session (books voided) */
	uint64_t msg_errors; /* messages that did not decode (their books flagged stale) */
};

/* Applies every data segment of `file` to `p` when the file is an IEX-TP capture (decided by
 * its first UDP payload); with `until_seq` (0 = all) it stops once the first message numbered
 * until_seq in file order was applied (--until-seq: the books as they were then). Returns 1 when it
 * was (books built, *res filled), 0 when it is not IEX-TP (nothing applied: the caller reads it as
 * ITCH), -ENOMEM. Framing errors go to `c`. */
int uf_decode_books_iex(const char *file, struct uf_publisher *p, struct uf_decode_counters *c,
                        uint64_t until_seq, struct uf_books_iex_result *res);

#endif /* UF_DECODE_BOOKS_IEX_H */
