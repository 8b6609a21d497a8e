/* Labels that came from another process (a consumer's tag in the shared consumer table): made
 * safe once, where they enter, for every output that shows them -- JSON (jansson refuses
 * invalid UTF-8, and /status would drop the consumer), Prometheus labels (promtool and
 * Prometheus reject a scrape with invalid UTF-8), and log lines (a newline would forge one).
 * Header-only: used by ring/ (the producer reads the table) and its tests. */
#ifndef UF_LABEL_H
#define UF_LABEL_H

#include <stddef.h>
#include <stdint.h>

/* Length of the well-formed UTF-8 sequence at s[0..n) (RFC 3629: no overlong form, no
 * surrogate, nothing past U+10FFFF), 0 when there is none (a lone continuation byte, a cut or
 * broken sequence). ASCII gives 1. */
static inline size_t uf_label_utf8_len(const unsigned char *s, size_t n)
{
	unsigned char c = s[0];
	size_t len;
	uint32_t cp;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf) {
		len = 2;
		cp = c & 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		len = 3;
		cp = c & 0x0f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		len = 4;
		cp = c & 0x07;
	} else {
		return 0;
	}
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

/* Cleans the NUL-terminated label in buf[0..cap) in place: a control character (C0, DEL, and
 * the C1 range U+0080..U+009F that terminals obey) or a byte that is not well-formed UTF-8
 * becomes '?'; a multi-byte character cut by the end of the field (a 16-byte tag cut in the
 * middle of one) is dropped; the result is NUL-terminated within cap. Printable ASCII and
 * whole UTF-8 characters are kept as they are. Returns the cleaned length. Cold. */
static inline size_t uf_label_clean(char *buf, size_t cap)
{
	unsigned char *s = (unsigned char *)buf;
	size_t n = 0, i = 0, w = 0; /* w <= i: each output is no longer than its input */

	if (cap == 0)
		return 0;
	while (n < cap - 1 && s[n])
		n++;
	while (i < n) {
		size_t k = uf_label_utf8_len(s + i, n - i);
		if (k == 0) {
			/* A lead byte followed only by continuation bytes up to the end, fewer than
			 * it needs: the field's end cut the character; it is dropped. */
			size_t need = s[i] >= 0xf0 ? 4 : s[i] >= 0xe0 ? 3 : 2, j = i + 1;
			while (j < n && (s[j] & 0xc0) == 0x80)
				j++;
			if (s[i] >= 0xc2 && s[i] <= 0xf4 && j == n && n - i < need)
				break;
			s[w++] = '?';
			i++;
		} else if ((k == 1 && (s[i] < 0x20 || s[i] == 0x7f)) ||
		           (k == 2 && s[i] == 0xc2 && s[i + 1] < 0xa0)) {
			s[w++] = '?'; /* a control character, C0, DEL or C1 */
			i += k;
		} else {
			for (size_t j = 0; j < k; j++)
				s[w++] = s[i++];
		}
	}
	s[w] = '\0';
	return w;
}

#endif /* UF_LABEL_H */
