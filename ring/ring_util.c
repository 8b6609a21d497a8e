/* Names, paths, /proc identity and futex wrappers shared by both sides of the ring. */
#include "ring/ring_util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "ring/uf_ring_layout.h"

int uf_ring_name_check(const char *name)
{
	size_t len;

	if (!name)
		return -EINVAL;
	len = strlen(name);
	if (len == 0 || len >= UF_RING_NAME_MAX || name[0] == '.')
		return -EINVAL;
	for (size_t i = 0; i < len; i++) {
		char ch = name[i];
		int ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		         (ch >= '0' && ch <= '9') || ch == '_' || ch == '-' || ch == '.';
		if (!ok)
			return -EINVAL;
	}
	return 0;
}

const char *uf_ring_dir_pick(const char *dir)
{
	const char *env;

	if (dir && dir[0])
		return dir;
	env = getenv("UF_RING_DIR");
	if (env && env[0])
		return env;
	return UF_RING_SHM_DIR;
}

int uf_ring_path(char *buf, size_t len, const char *dir, const char *name, int what)
{
	const char *leaf = what == UF_RING_FILE_DATA   ? "/" UF_RING_DATA_NAME
	                   : what == UF_RING_FILE_SOCK ? "/" UF_RING_SOCK_NAME
	                                               : "";
	int n = snprintf(buf, len, "%s/" UF_RING_DIR_FMT "%s", dir, name, leaf);

	if (n < 0 || (size_t)n >= len)
		return -ENAMETOOLONG;
	return 0;
}

int uf_ring_proc_stat(pid_t pid, uint64_t *start_time, char *state)
{
	char path[64], buf[1024];
	ssize_t n;
	int fd;
	char *p;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -ESRCH;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -ESRCH;
	buf[n] = '\0';
	/* comm may contain spaces and parentheses: fields restart after the last ')' */
	p = strrchr(buf, ')');
	if (!p || p[1] != ' ')
		return -ESRCH;
	p += 2;
	if (state)
		*state = *p;
	/* p is at field 3 (state); starttime is field 22 */
	for (int field = 3; field < 22; field++) {
		p = strchr(p, ' ');
		if (!p)
			return -ESRCH;
		p++;
	}
	if (start_time)
		*start_time = strtoull(p, NULL, 10);
	return 0;
}

int uf_ring_futex_wait(const uint32_t *word, uint32_t val, int64_t timeout_ns)
{
	struct timespec ts;
	long rc;

	if (timeout_ns < 0)
		timeout_ns = 0;
	ts.tv_sec = timeout_ns / 1000000000;
	ts.tv_nsec = timeout_ns % 1000000000;
	/* shared futex (no FUTEX_PRIVATE_FLAG): producer and consumers are different processes;
	 * waiting on a read-only mapping is allowed for FUTEX_WAIT */
	rc = syscall(SYS_futex, word, FUTEX_WAIT, val, &ts, NULL, 0);
	if (rc == 0)
		return 0;
	return -errno;
}

int uf_ring_futex_wake_all(uint32_t *word)
{
	long rc = syscall(SYS_futex, word, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);

	return rc < 0 ? -errno : (int)rc;
}

int uf_ring_allocate(int fd, uint64_t size)
{
	int rc;

	if (fallocate(fd, 0, 0, (off_t)size) == 0)
		return 0;
	if (errno != EOPNOTSUPP && errno != ENOSYS)
		return -errno;
	rc = posix_fallocate(fd, 0, (off_t)size); /* emulated by writing: slow but sure */
	return -rc;
}
