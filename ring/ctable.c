/* The consumer table (ring/ctable.h): the sealed memfd, and the thread that hands it to every
 * consumer connecting to uf.NAME/sock while keeping the producer's own record of who got it. */
#include "ring/ctable.h"

#include <errno.h>
#include <fcntl.h>
#include <numa.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "common/uf_err.h"
#include "ring/ring_util.h"

/* The consumer table: a memfd of `size` bytes, sealed so that nobody (a consumer holding a
 * read-write fd included) can ever shrink or grow it: no mapping of it can SIGBUS. */
int uf_ring_table_make(const char *name, uint64_t size, int node, void **map, int *fdp, char *err,
                       size_t errlen)
{
	void *p;
	int fd, rc;

	fd = memfd_create("uf.ring.consumers", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0) {
		rc = -errno;
		uf_err_set(err, errlen, "ring %s: memfd_create: %s", name, strerror(errno));
		return rc;
	}
	if (ftruncate(fd, (off_t)size) < 0 || (rc = uf_ring_allocate(fd, size)) < 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0) {
		rc = -errno;
		uf_err_set(err, errlen, "ring %s: consumer table (%llu bytes): %s", name,
		           (unsigned long long)size, strerror(errno));
		close(fd);
		return rc;
	}
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		rc = -errno;
		uf_err_set(err, errlen, "ring %s: mmap consumer table: %s", name, strerror(errno));
		close(fd);
		return rc;
	}
	if (node >= 0)
		numa_tonode_memory(p, size, node);
	memset(p, 0, size);
	*map = p;
	*fdp = fd;
	return 0;
}

struct uf_ring_server {
	pthread_t thread;           /* runs server_main */
	pid_t owner;                /* process that started the thread (a forked child has none) */
	int lfd;                    /* listening socket, non-blocking */
	int stopfd;                 /* eventfd: written by uf_ring_close */
	int ct_fd;                  /* the sealed memfd */
	struct uf_ring_hello hello; /* sent with it */
	pthread_mutex_t lock;       /* guards the handout list (server thread vs reap) */
	struct handout *handed;     /* who got the table: the producer's own record */
	uint32_t nhanded;           /* entries used */
	uint32_t maxhanded;         /* capacity: 4 x nslots, oldest overwritten */
	uint32_t nexthanded;        /* where the next new pid goes once full */
};

/* A process the server handed the table to, as the kernel names it (SO_PEERCRED), not as the
 * table claims: a slot whose pid is not in this list was forged. */
struct handout {
	int32_t pid;    /* peer pid */
	uint64_t start; /* its /proc start time, so a reused pid does not count */
};

static void note_handout(struct uf_ring_server *s, int c)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	uint64_t start = 0;
	uint32_t i;

	if (getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 || cred.pid <= 0)
		return;
	uf_ring_proc_stat(cred.pid, &start, NULL);
	pthread_mutex_lock(&s->lock);
	for (i = 0; i < s->nhanded; i++)
		if (s->handed[i].pid == cred.pid)
			break;
	if (i == s->nhanded) {
		if (s->nhanded < s->maxhanded) {
			s->nhanded++;
		} else {
			/* full: the entry of a process that is gone, so that a long-lived consumer
			 * is not pushed out by short-lived ones (uf-tail --info every minute); only
			 * when all are alive, the oldest by insertion */
			uint64_t st;
			for (i = 0; i < s->maxhanded; i++)
				if (uf_ring_proc_stat(s->handed[i].pid, &st, NULL) < 0 ||
				    st != s->handed[i].start)
					break;
			if (i == s->maxhanded)
				i = s->nexthanded++ % s->maxhanded;
		}
	}
	s->handed[i].pid = cred.pid;
	s->handed[i].start = start;
	pthread_mutex_unlock(&s->lock);
}

int uf_ring_server_handed(struct uf_ring_server *s, uint32_t pid, uint64_t start)
{
	int yes = 0;

	pthread_mutex_lock(&s->lock);
	for (uint32_t i = 0; i < s->nhanded && !yes; i++)
		yes = (uint32_t)s->handed[i].pid == pid && (s->handed[i].start == start || !start);
	pthread_mutex_unlock(&s->lock);
	return yes;
}

static void send_table(struct uf_ring_server *s, int c)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = {.iov_base = &s->hello, .iov_len = sizeof(s->hello)};
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
	struct cmsghdr *cm;

	memset(&u, 0, sizeof(u));
	m.msg_control = u.buf;
	m.msg_controllen = sizeof(u.buf);
	cm = CMSG_FIRSTHDR(&m);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &s->ct_fd, sizeof(int));
	/* 32 bytes into an empty socket buffer: never blocks, even for a client that never
	 * reads; a client that already left gets nothing (and no SIGPIPE here) */
	(void)sendmsg(c, &m, MSG_DONTWAIT | MSG_NOSIGNAL);
}

static void *server_main(void *arg)
{
	struct uf_ring_server *s = arg;
	struct pollfd p[2] = {{.fd = s->lfd, .events = POLLIN},
	                      {.fd = s->stopfd, .events = POLLIN}};

	for (;;) {
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (p[1].revents)
			break;
		for (;;) {
			int c = accept4(s->lfd, NULL, NULL, SOCK_CLOEXEC);
			if (c < 0) {
				if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
				    errno == ENOMEM) {
					struct timespec ts = {0, 10000000}; /* do not spin */
					nanosleep(&ts, NULL);
				}
				break;
			}
			note_handout(s, c); /* before the fd: the slot it claims is then known */
			send_table(s, c);
			close(c);
		}
	}
	return NULL;
}

int uf_ring_server_start(struct uf_ring_server **out, const char *name, const char *path,
                         uint32_t mode, int64_t gid, int ct_fd, const struct uf_ring_hello *hello,
                         char *err, size_t errlen)
{
	struct uf_ring_server *s = calloc(1, sizeof(*s));
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	sigset_t all, old;
	int rc;

	if (!s) {
		uf_err_set(err, errlen, "ring %s: out of memory", name);
		return -ENOMEM;
	}
	s->ct_fd = ct_fd;
	s->owner = getpid();
	s->hello = *hello;
	s->maxhanded = 4 * hello->nslots;
	s->handed = calloc(s->maxhanded, sizeof(*s->handed));
	if (!s->handed) {
		free(s);
		uf_err_set(err, errlen, "ring %s: out of memory", name);
		return -ENOMEM;
	}
	pthread_mutex_init(&s->lock, NULL);
	s->stopfd = eventfd(0, EFD_CLOEXEC);
	s->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (s->stopfd < 0 || s->lfd < 0) {
		rc = -errno;
		uf_err_set(err, errlen, "ring %s: socket: %s", name, strerror(errno));
		goto out_close;
	}
	if (strlen(path) >= sizeof(sa.sun_path)) { /* checked by the caller */
		rc = -ENAMETOOLONG;
		goto out_close;
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
	unlink(path);
	if (bind(s->lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    (gid >= 0 && chown(path, (uid_t)-1, (gid_t)gid) < 0) || chmod(path, mode) < 0 ||
	    listen(s->lfd, 128) < 0) {
		rc = -errno;
		uf_err_set(err, errlen, "ring %s: socket %s: %s", name, path, strerror(errno));
		unlink(path);
		goto out_close;
	}
	/* the thread takes no signal: they stay for the application's threads. It inherits
	 * the creating thread's CPU affinity: create rings from a control thread (the daemon
	 * does, after uf_place_control_threads), so it never wakes on a feed's CPU */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = -pthread_create(&s->thread, NULL, server_main, s);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc < 0) {
		uf_err_set(err, errlen, "ring %s: thread: %s", name, strerror(-rc));
		unlink(path);
		goto out_close;
	}
	*out = s;
	return 0;

out_close:
	if (s->lfd >= 0)
		close(s->lfd);
	if (s->stopfd >= 0)
		close(s->stopfd);
	pthread_mutex_destroy(&s->lock);
	free(s->handed);
	free(s);
	return rc;
}

void uf_ring_server_stop(struct uf_ring_server *s)
{
	uint64_t one = 1;

	if (!s)
		return;
	if (s->owner == getpid()) { /* a forked child has a copy of the handle, not the thread */
		if (write(s->stopfd, &one, sizeof(one)) == (ssize_t)sizeof(one))
			pthread_join(s->thread, NULL);
	}
	close(s->lfd);
	close(s->stopfd);
	close(s->ct_fd);
	pthread_mutex_destroy(&s->lock);
	free(s->handed);
	free(s);
}
