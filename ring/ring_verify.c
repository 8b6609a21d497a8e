/* What a consumer checks before it trusts a ring (ring/ring_verify.h). */
#include "ring/ring_verify.h"

#include <errno.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/uf_err.h"
#include "ring/ring_util.h"

/* Whether `uid` may own a ring this process reads: root, this user, options.owner or
 * $UF_RING_OWNER (a uid or a user name). Anyone else may have put it there to be read. */
int uf_ring_verify_owner(uid_t uid, uint32_t extra)
{
	const char *env = getenv("UF_RING_OWNER");

	if (uid == 0 || uid == geteuid() || (extra != 0 && uid == extra))
		return 1;
	if (env && env[0]) {
		char *end;
		unsigned long v = strtoul(env, &end, 10);
		struct passwd *pw;
		if (*end == '\0')
			return uid == (uid_t)v;
		pw = getpwnam(env);
		return pw && pw->pw_uid == uid;
	}
	return 0;
}

/* Every header field, against the file size, without an overflow: a ring is only mapped and
 * indexed after this. Returns NULL when sane, else what is wrong. */
const char *uf_ring_verify_header(const struct uf_ring_hdr *h, uint64_t size, const char *name)
{
	uint64_t ring_bytes;

	if (h->capacity < 16 || h->capacity > (1ull << 32) || (h->capacity & (h->capacity - 1)))
		return "capacity is not a power of two in [16, 2^32]";
	if (h->file_size != size)
		return "file_size differs from the file's size";
	ring_bytes = h->capacity * sizeof(struct uf_record); /* <= 2^38: no overflow */
	if (h->ring_off < sizeof(*h) || h->ring_off % UF_CACHELINE || h->ring_off > size ||
	    ring_bytes > size - h->ring_off)
		return "ring offset or capacity reach past the end of the file";
	if (h->image_off % UF_CACHELINE || h->image_off < h->ring_off + ring_bytes ||
	    h->image_off > size || size - h->image_off < sizeof(struct uf_image_hdr))
		return "image offset overlaps the records or reaches past the end of the file";
	if (h->state != UF_RING_STATE_OPEN && h->state != UF_RING_STATE_CLOSED)
		return "state is neither open nor closed";
	if (memchr(h->name, '\0', sizeof(h->name)) == NULL || strcmp(h->name, name) != 0)
		return "the ring name in the header is not this ring's";
	return NULL;
}

const char *uf_ring_verify_image(const struct uf_image_hdr *ih, uint64_t room)
{
	if (ih->magic != UF_RING_IMAGE_MAGIC)
		return "bad book image magic";
	if (ih->depth < 1 || ih->depth > UF_RING_MAX_DEPTH)
		return "book image depth out of 1..64";
	if (ih->max_instruments < 1 || ih->max_instruments > (1u << 24))
		return "book image max_instruments out of 1..2^24";
	if (ih->entry_size != uf_image_entry_size(ih->depth) || ih->entries_off != sizeof(*ih))
		return "book image entry size or offset is not what its depth implies";
	/* entry_size <= 4 KiB and max <= 2^24: the product cannot overflow */
	if (room < ih->entries_off ||
	    (room - ih->entries_off) / ih->entry_size < ih->max_instruments)
		return "book image reaches past the end of the file";
	return NULL;
}

/* Receives the table's fd and description from the producer's socket. Returns the fd, or
 * -ECONNREFUSED / -ENOENT when no producer listens, or another -errno. */
int uf_ring_table_fetch(const char *dir, const char *name, uid_t owner, struct uf_ring_hello *hello,
                        char *err, size_t errlen)
{
	char dir_path[256];
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct timeval tv = {.tv_sec = 2};
	struct ucred cred;
	socklen_t clen = sizeof(cred);
	union {
		char buf[CMSG_SPACE(4 * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = {.iov_base = hello, .iov_len = sizeof(*hello)};
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
	struct cmsghdr *cm;
	int s, fd = -1, rc;
	ssize_t n;

	if (uf_ring_path(sa.sun_path, sizeof(sa.sun_path), dir, name, UF_RING_FILE_SOCK) < 0 ||
	    uf_ring_path(dir_path, sizeof(dir_path), dir, name, UF_RING_FILE_DIR) < 0) {
		uf_err_set(err, errlen, "ring %s: socket path too long", name);
		return -ENAMETOOLONG;
	}
	s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -errno;
	setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)); /* a silent peer: give up */
	if (connect(s, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		rc = -errno;
		close(s);
		return rc;
	}
	if (getsockopt(s, SOL_SOCKET, SO_PEERCRED, &cred, &clen) < 0 || cred.uid != owner) {
		uf_err_set(
		    err, errlen,
		    "ring %s: the process behind %s/sock is not the ring's owner (uid %u): refused",
		    name, dir_path, (unsigned)owner);
		close(s);
		return -EPERM;
	}
	memset(&u, 0, sizeof(u));
	m.msg_control = u.buf;
	m.msg_controllen = sizeof(u.buf);
	n = recvmsg(s, &m, MSG_CMSG_CLOEXEC | MSG_WAITALL);
	rc = n < 0 ? -errno : 0;
	close(s);
	for (cm = CMSG_FIRSTHDR(&m); cm; cm = CMSG_NXTHDR(&m, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		size_t nfd = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < nfd; i++) {
			int f;
			memcpy(&f, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
			if (fd < 0)
				fd = f;
			else
				close(f); /* more than we asked for */
		}
	}
	if (rc < 0 || n != (ssize_t)sizeof(*hello) || fd < 0 || (m.msg_flags & MSG_CTRUNC)) {
		if (fd >= 0)
			close(fd);
		uf_err_set(err, errlen, "ring %s: no consumer table from %s/sock (%s)", name,
		           dir_path, rc < 0 ? strerror(-rc) : "short or empty answer");
		return -EPROTO;
	}
	return fd;
}
