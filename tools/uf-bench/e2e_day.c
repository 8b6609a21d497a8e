/* uf-bench e2e: the replayed day (see e2e_day.h). */
#include "e2e_day.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Maps a daily-format file and counts its messages; refuses anything else. */
int e2e_day_open(const char *path, struct day *d, char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat sb;
	size_t off = 0;

	memset(d, 0, sizeof(*d));
	if (fd < 0 || fstat(fd, &sb) < 0 || sb.st_size < 3) {
		snprintf(err, errlen, "%.300s: %s", path, fd < 0 ? strerror(errno) : "too short");
		if (fd >= 0)
			close(fd);
		return -EINVAL;
	}
	d->size = (size_t)sb.st_size;
	d->p = mmap(NULL, d->size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (d->p == MAP_FAILED) {
		snprintf(err, errlen, "%.300s: mmap: %s", path, strerror(errno));
		d->p = NULL;
		return -errno;
	}
	while (off + 2 <= d->size) {
		size_t len = (size_t)d->p[off] << 8 | d->p[off + 1];
		if (len == 0 || off + 2 + len > d->size)
			break;
		off += 2 + len;
		d->n++;
	}
	if (off != d->size || d->n == 0) {
		snprintf(err, errlen,
		         "%.300s: not a Nasdaq daily-format ITCH file (framing breaks at byte %zu)",
		         path, off);
		munmap((void *)d->p, d->size);
		d->p = NULL;
		return -EINVAL;
	}
	return 0;
}

/* Writes the first n messages of the day to `path`: one replay step's input. */
int e2e_day_write_prefix(const struct day *d, uint64_t n, const char *path)
{
	size_t off = 0;
	int fd, rc = 0;

	for (uint64_t i = 0; i < n && off + 2 <= d->size; i++)
		off += 2 + ((size_t)d->p[off] << 8 | d->p[off + 1]);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	for (size_t done = 0; done < off;) {
		ssize_t w = write(fd, d->p + done, off - done);
		if (w < 0) {
			rc = -errno;
			break;
		}
		done += (size_t)w;
	}
	close(fd);
	return rc;
}

void e2e_day_close(struct day *d)
{
	if (d->p)
		munmap((void *)d->p, d->size);
	d->p = NULL;
}
