/* ITCH symbols: 8 bytes on the wire, in records (uf_record.ref) and in the book image,
 * space padded on the right; C strings (NUL-terminated, trimmed) everywhere a human or a
 * configuration names one. The two conversions, written once. */
#ifndef UF_SYMBOL_H
#define UF_SYMBOL_H

#include <stddef.h>
#include <string.h>

#define UF_SYMBOL_LEN 8 /* bytes of a padded symbol */

/* Writes `sym` (a C string; only its first 8 characters are used) as 8 space-padded
 * bytes into `out` (not NUL-terminated). */
static inline void uf_symbol_pad(void *out, const char *sym)
{
	size_t n = strnlen(sym, UF_SYMBOL_LEN);
	memset(out, ' ', UF_SYMBOL_LEN);
	memcpy(out, sym, n);
}

/* Copies 8 padded symbol bytes `in` to `out` (9 bytes) as a C string without the trailing
 * padding (spaces and NULs: a never-named entry is all zeros). Returns its length. */
static inline size_t uf_symbol_unpad(char *out, const void *in)
{
	size_t n = UF_SYMBOL_LEN;
	memcpy(out, in, UF_SYMBOL_LEN);
	while (n > 0 && (out[n - 1] == ' ' || out[n - 1] == '\0'))
		n--;
	out[n] = '\0';
	return n;
}

#endif /* UF_SYMBOL_H */
