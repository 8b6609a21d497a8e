/* Numbers from the command line, for the tools' option parsers: the whole argument must be the
 * number, so "10x", "", "-1" (strtoull would wrap it) and an overflow are refused rather than
 * read as something else. Every tool parses its numbers here (no strtoull/strtod of its own),
 * and each says what it wanted in its own words. Cold: option parsing only. */
#ifndef UF_PARSE_H
#define UF_PARSE_H

#include <errno.h>
#include <math.h> /* HUGE_VAL, for callers of uf_parse_double */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* A decimal number in [lo, hi] into *v (set whatever the outcome). 0, or -1 when `s` is not
 * one or is out of range. */
static inline int uf_parse_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *v)
{
	char *end;

	errno = 0;
	*v = strtoull(s, &end, 10);
	return errno || end == s || *end || s[0] == '-' || *v < lo || *v > hi ? -1 : 0;
}

/* A decimal number, a leading '-' allowed, in [lo, hi] into *v (set whatever the outcome).
 * 0, or -1 when `s` is not one or is out of range. */
static inline int uf_parse_i64(const char *s, int64_t lo, int64_t hi, int64_t *v)
{
	char *end;

	errno = 0;
	*v = strtoll(s, &end, 10);
	return errno || end == s || *end || *v < lo || *v > hi ? -1 : 0;
}

/* A real number in strtod's forms ("2", "0.5", "1e6") in [lo, hi] into *v (set whatever the
 * outcome); hi = HUGE_VAL for no upper bound. NaN is never in range. 0, or -1 when `s` is not
 * one, is out of range or over/underflows. */
static inline int uf_parse_double(const char *s, double lo, double hi, double *v)
{
	char *end;

	errno = 0;
	*v = strtod(s, &end);
	return errno || end == s || *end || !(*v >= lo && *v <= hi) ? -1 : 0;
}

/* A list "N<sep>N<sep>..." of at most `cap` numbers, each as uf_parse_u64 takes it, into
 * v[0..). The count (>= 1), or -1 when an item is empty, not a number, out of range, or
 * there are more than `cap`. */
static inline int uf_parse_u64_list(const char *s, char sep, uint64_t lo, uint64_t hi, uint64_t *v,
                                    int cap)
{
	int n = 0;

	for (;;) {
		char item[24]; /* UINT64_MAX has 20 digits */
		const char *e = strchr(s, sep);
		size_t len = e ? (size_t)(e - s) : strlen(s);

		if (n == cap || len == 0 || len >= sizeof(item))
			return -1;
		memcpy(item, s, len);
		item[len] = '\0';
		if (uf_parse_u64(item, lo, hi, &v[n++]) < 0)
			return -1;
		if (!e)
			return n;
		s = e + 1;
	}
}

#endif /* UF_PARSE_H */
