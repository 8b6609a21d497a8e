/* gzip inflation for offline inputs: captures are published gzip'd (the IEX samples), and
 * reading them directly saves a gunzip step and a copy on disk.
 *
 * Cold path only (uf_reader_open): allocates the whole inflated file in memory. */
#ifndef UF_GZIP_H
#define UF_GZIP_H

#include <stddef.h>
#include <stdint.h>

#define UF_GZIP_MAX_OUT                                                                            \
	((size_t)8 << 30) /* refuse to inflate past 8 GiB: a bomb, or a file                       \
	                   * better gunzipped once and mapped */

/* 1 when buf starts with the gzip magic (1f 8b). */
static inline int uf_gzip_is(const uint8_t *buf, size_t len)
{
	return len >= 2 && buf[0] == 0x1f && buf[1] == 0x8b;
}

/* Inflates every gzip member of buf[0, len) (concatenated members are one file, as gunzip
 * reads them) into a malloc'd buffer: *out (free() it) and *out_len. Returns 0, or -EBADMSG
 * (corrupt or truncated stream, message in err), -EFBIG (past UF_GZIP_MAX_OUT), -ENOMEM. */
int uf_gzip_inflate(const uint8_t *buf, size_t len, uint8_t **out, size_t *out_len, char *err,
                    size_t errcap);

#endif /* UF_GZIP_H */
