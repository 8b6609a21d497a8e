/* Error messages of cold paths: one line into a caller's buffer (`char *err, size_t errlen`,
 * the convention of every setup function that can fail), so the pattern
 * snprintf(err, errlen, "...: %s", strerror(-rc)) is written once.
 *
 *   return uf_err_rc(err, errlen, rc, "feed %s: creating books", name);
 *     -> "feed X: creating books: Cannot allocate memory", returns rc. */
#ifndef UF_ERR_H
#define UF_ERR_H

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* Formats one line into err (cut to errlen; nothing when err is NULL or errlen is 0). */
static inline void uf_err_set(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static inline void uf_err_set(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	int saved = errno; /* callers often return -errno right after */
	if (!err || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	errno = saved;
}

/* Formats "<fmt>: <strerror(-rc)>" into err and returns rc (a -errno), so a failing call
 * reports and returns in one statement. */
static inline int uf_err_rc(char *err, size_t errlen, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static inline int uf_err_rc(char *err, size_t errlen, int rc, const char *fmt, ...)
{
	va_list ap;
	int n, saved = errno; /* callers often return -errno right after */
	if (!err || errlen == 0)
		return rc;
	va_start(ap, fmt);
	n = vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	if (n >= 0 && (size_t)n < errlen)
		snprintf(err + n, errlen - (size_t)n, ": %s", strerror(rc < 0 ? -rc : rc));
	errno = saved;
	return rc;
}

#endif /* UF_ERR_H */
