/* uf-bench e2e: the day it replays, a Nasdaq daily-format ITCH file (u16 length + message),
 * mapped read-only; each replay step sends a prefix of it. */
#ifndef UF_BENCH_E2E_DAY_H
#define UF_BENCH_E2E_DAY_H

#include <stddef.h>
#include <stdint.h>

struct day {
	const uint8_t *p; /* mapping */
	size_t size;      /* bytes */
	uint64_t n;       /* messages */
};

/* Maps a daily-format file and counts its messages; refuses anything else (-EINVAL, or
 * -errno, with a message naming the file in err). */
int e2e_day_open(const char *path, struct day *d, char *err, size_t errlen);

/* Writes the first n messages of the day to `path`: one replay step's input. 0 or -errno. */
int e2e_day_write_prefix(const struct day *d, uint64_t n, const char *path);

/* Unmaps the day. */
void e2e_day_close(struct day *d);

#endif /* UF_BENCH_E2E_DAY_H */
