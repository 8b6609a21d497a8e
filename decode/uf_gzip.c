/* gzip inflation with zlib (see uf_gzip.h). */
#include "decode/uf_gzip.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <zlib.h>

#include "common/uf_err.h"

/* Deflate never expands more than ~1032:1: no input inflates past this many bytes per
 * compressed byte, so a trailer claiming more is a lie, not a size to allocate. */
#define DEFLATE_MAX_RATIO 1032

/* First guess at the inflated size: the last member's ISIZE trailer (size mod 2^32) plus a
 * spare byte (Z_STREAM_END is seen before the buffer fills), or 4x the input, whichever is
 * larger, but never past what the input could inflate to; the buffer doubles when short. */
static size_t first_guess(const uint8_t *buf, size_t len)
{
	size_t g = len * 4;
	if (len >= 18) {
		const uint8_t *t = buf + len - 4;
		size_t isize =
		    (size_t)t[0] | (size_t)t[1] << 8 | (size_t)t[2] << 16 | (size_t)t[3] << 24;
		if (isize + 1 > g)
			g = isize + 1;
		if (g > len * DEFLATE_MAX_RATIO)
			g = len * DEFLATE_MAX_RATIO;
	}
	return g < 4096 ? 4096 : g;
}

int uf_gzip_inflate(const uint8_t *buf, size_t len, uint8_t **out, size_t *out_len, char *err,
                    size_t errcap)
{
	z_stream z = {0};
	size_t cap = first_guess(buf, len), used = 0, in_off = 0;
	uint8_t *o = NULL;
	int rc;

	*out = NULL;
	*out_len = 0;
	if (cap > UF_GZIP_MAX_OUT)
		cap = UF_GZIP_MAX_OUT;
	o = malloc(cap);
	if (!o)
		return -ENOMEM;
	if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) { /* 16+: gzip header and trailer */
		free(o);
		return -ENOMEM;
	}
	for (;;) {
		/* zlib counts in uInt: feed and drain at most UINT_MAX bytes per call. */
		size_t in_left = len - in_off, out_left = cap - used;
		z.next_in = (Bytef *)(uintptr_t)(buf + in_off);
		z.avail_in = in_left > UINT_MAX ? UINT_MAX : (uInt)in_left;
		z.next_out = o + used;
		z.avail_out = out_left > UINT_MAX ? UINT_MAX : (uInt)out_left;
		uInt ain = z.avail_in, aout = z.avail_out;
		rc = inflate(&z, Z_NO_FLUSH);
		in_off += ain - z.avail_in;
		used += aout - z.avail_out;
		if (rc == Z_STREAM_END) {
			/* Another member may follow (gzip allows concatenation); trailing zero
			 * padding after the last member is ignored, as gunzip does. */
			size_t k = in_off;
			while (k < len && buf[k] == 0)
				k++;
			if (k == len || !uf_gzip_is(buf + in_off, len - in_off))
				break;
			inflateReset(&z);
			continue;
		}
		if (rc == Z_BUF_ERROR && z.avail_out != 0 && in_off == len) {
			uf_err_set(
			    err, errcap,
			    "gzip stream truncated after %zu compressed bytes (%zu inflated)",
			    in_off, used);
			rc = -EBADMSG;
			goto out_free;
		}
		if (rc != Z_OK && rc != Z_BUF_ERROR) {
			uf_err_set(err, errcap, "corrupt gzip stream at compressed byte %zu: %s",
			           in_off, z.msg ? z.msg : "inflate failed");
			rc = -EBADMSG;
			goto out_free;
		}
		if (used == cap) {
			if (cap >= UF_GZIP_MAX_OUT) {
				uf_err_set(err, errcap, "gzip input inflates past %zu bytes",
				           UF_GZIP_MAX_OUT);
				rc = -EFBIG;
				goto out_free;
			}
			size_t ncap = cap * 2 > UF_GZIP_MAX_OUT ? UF_GZIP_MAX_OUT : cap * 2;
			uint8_t *n = realloc(o, ncap);
			if (!n) {
				rc = -ENOMEM;
				goto out_free;
			}
			o = n;
			cap = ncap;
		}
	}
	inflateEnd(&z);
	*out = o;
	*out_len = used;
	return 0;
out_free:
	inflateEnd(&z);
	free(o);
	return rc;
}
