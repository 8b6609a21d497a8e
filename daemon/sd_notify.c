/* systemd notify protocol: see sd_notify.h. */
#include "daemon/sd_notify.h"

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

/* Fills `sa` from a NOTIFY_SOCKET value; returns the address length or -errno. */
static int notify_addr(const char *name, struct sockaddr_un *sa)
{
	size_t len = strlen(name);

	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	if (name[0] != '/' && name[0] != '@')
		return -EAFNOSUPPORT; /* "vsock:CID:PORT" (systemd 253+) and anything else */
	if (len > sizeof(sa->sun_path) || (name[0] == '/' && len == sizeof(sa->sun_path)))
		return -ENAMETOOLONG; /* a path needs its NUL; an abstract name does not */
	memcpy(sa->sun_path, name, len);
	if (name[0] == '@') {
		/* Abstract namespace: a leading NUL and exactly `len` bytes, no terminator (the
		 * length is part of the name: a trailing NUL would name another socket). */
		sa->sun_path[0] = '\0';
		return (int)(offsetof(struct sockaddr_un, sun_path) + len);
	}
	return (int)(offsetof(struct sockaddr_un, sun_path) + len + 1);
}

int uf_sd_notify(const char *state)
{
	const char *name = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sa;
	int alen, fd, rc = 1;

	if (!name || !name[0])
		return 0;
	alen = notify_addr(name, &sa);
	if (alen < 0)
		return alen;
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* The kernel attaches our credentials; systemd checks the pid against NotifyAccess=. */
	if (sendto(fd, state, strlen(state), MSG_NOSIGNAL, (struct sockaddr *)&sa,
	           (socklen_t)alen) < 0)
		rc = -errno;
	close(fd);
	return rc;
}

int uf_sd_notify_ready(void)
{
	return uf_sd_notify("READY=1");
}

int uf_sd_notify_stopping(void)
{
	return uf_sd_notify("STOPPING=1");
}

int uf_sd_notify_reloading(uint64_t mono_us)
{
	char msg[64];
	snprintf(msg, sizeof(msg), "RELOADING=1\nMONOTONIC_USEC=%llu", (unsigned long long)mono_us);
	return uf_sd_notify(msg);
}

int uf_sd_notify_watchdog(void)
{
	return uf_sd_notify("WATCHDOG=1");
}

int uf_sd_notify_status(const char *fmt, ...)
{
	char msg[sizeof("STATUS=") + UF_SD_STATUS_MAX];
	const size_t pfx = sizeof("STATUS=") - 1;
	va_list ap;

	memcpy(msg, "STATUS=", pfx);
	va_start(ap, fmt);
	int n = vsnprintf(msg + pfx, sizeof(msg) - pfx, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -EINVAL;
	for (char *p = msg + pfx; *p; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
	return uf_sd_notify(msg);
}

/* Parses a whole decimal u64 (no sign, no trailing text); 0 on success. */
static int parse_u64(const char *s, uint64_t *out)
{
	char *end;

	if (!s[0] || s[0] < '0' || s[0] > '9')
		return -EINVAL;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *end)
		return -EINVAL;
	*out = v;
	return 0;
}

int64_t uf_sd_watchdog_interval_us(void)
{
	const char *usec = getenv("WATCHDOG_USEC");
	const char *pid = getenv("WATCHDOG_PID");
	uint64_t v, p;

	if (!usec)
		return 0;
	if (pid) {
		/* Set for the main process only; a child that inherited the environment must not
		 * think the watchdog is its business. */
		if (parse_u64(pid, &p) || p == 0)
			return -EINVAL;
		if (p != (uint64_t)getpid())
			return 0;
	}
	if (parse_u64(usec, &v) || v == 0 || v > INT64_MAX)
		return -EINVAL;
	return (int64_t)v;
}
