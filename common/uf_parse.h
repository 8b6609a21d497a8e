/* Numbers from the command line, for the tools' option parsers: the whole argument must be the
 * number, so "10x", "", "-1" (strtoull would wrap it) and an overflow are refused rather than
 * read as something else. Each tool says what it wanted in its own words. */
#ifndef UF_PARSE_H
#define UF_PARSE_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

/* A decimal number in [lo, hi] into *v (set whatever the outcome). 0, or -1 when `s` is not
 * one or is out of range. */
static inline int uf_parse_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *v)
{
	char *end;

	errno = 0;
	*v = strtoull(s, &end, 10);
	return errno || end == s || *end || s[0] == '-' || *v < lo || *v > hi ? -1 : 0;
}

#endif /* UF_PARSE_H */
