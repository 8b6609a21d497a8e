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
#include <linux/sockios.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "common/uf_err.h"
#include "common/uf_time.h"
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

/* Handouts the peer has not read yet. The table's fd rides in the peer's socket queue until it
 * reads it or closes its socket, and the kernel charges every fd in flight to the sender (this
 * producer) against its RLIMIT_NOFILE: a producer that is not root, with nofile 512, was cut
 * off from every new consumer by 600 connections that never read (issue 23 item 14). Closing
 * our end frees nothing, so the server keeps each unread connection open, watches it (the
 * peer read: SIOCOUTQ 0; the peer left: hang-up) and bounds them: at most UNREAD_PER_UID per
 * user, so one user's connections can never use up the budget of the others, and
 * PENDING_MAX in all. A connection over a bound is closed unanswered (nothing in flight) and
 * logged; a handout unread for UNREAD_SLOW_NS is logged once. */
#define UF_RING_PENDING_MAX    256
#define UF_RING_UNREAD_PER_UID 8
#define UF_RING_UNREAD_SLOW_NS 5000000000ull
#define UF_RING_LOG_EVERY_NS   1000000000ull /* at most one line a second per kind */

struct pending {
	int fd;            /* our end, kept open until the peer read or left */
	uint32_t uid;      /* peer's user (SO_PEERCRED) */
	int32_t pid;       /* peer's pid */
	uint64_t since_ns; /* handed at (monotonic) */
	int slow_logged;   /* "has not read" said once */
};

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
	char name[64];              /* the ring's, for log lines */
	struct pending pend[UF_RING_PENDING_MAX]; /* handouts not read yet (server thread) */
	uint32_t npend;                           /* entries used */
	uint64_t refused;     /* connections closed unanswered over a bound (any thread: relaxed) */
	uint64_t send_errors; /* handouts the kernel refused (sendmsg failed) */
	uint64_t log_refused_ns, log_slow_ns, log_send_ns; /* last line of each kind */
};

/* A process the server handed the table to, as the kernel names it (SO_PEERCRED), not as the
 * table claims: a slot whose pid is not in this list was forged. */
struct handout {
	int32_t pid;    /* peer pid */
	uint64_t start; /* its /proc start time, so a reused pid does not count */
};

static void note_handout(struct uf_ring_server *s, const struct ucred *peer)
{
	struct ucred cred = *peer;
	uint64_t start = 0;
	uint32_t i;

	if (cred.pid <= 0)
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
	if (sendmsg(c, &m, MSG_DONTWAIT | MSG_NOSIGNAL) < 0 && errno != EPIPE &&
	    errno != ECONNRESET) {
		/* ETOOMANYREFS: this process has RLIMIT_NOFILE fds in flight already */
		int e = errno;
		__atomic_fetch_add(&s->send_errors, 1, __ATOMIC_RELAXED);
		uint64_t now = uf_now_mono_ns();
		if (now - s->log_send_ns >= UF_RING_LOG_EVERY_NS) {
			s->log_send_ns = now;
			fprintf(stderr,
			        "uringfeed: ring %s: handing the consumer table out failed: %s "
			        "(%u handouts unread)\n",
			        s->name, strerror(e), s->npend);
		}
	}
}

/* Handouts user `uid` has not read yet. */
static uint32_t unread_of(const struct uf_ring_server *s, uint32_t uid)
{
	uint32_t n = 0;
	for (uint32_t i = 0; i < s->npend; i++)
		n += s->pend[i].uid == uid;
	return n;
}

/* Bytes of our handout still in the peer's queue (0: read), -1 when unknown. */
static int unread_bytes(int fd)
{
	int q = 0;
	return ioctl(fd, SIOCOUTQ, &q) == 0 ? q : -1;
}

/* A new connection: handed the table and watched until read, or closed unanswered when its
 * user already has UNREAD_PER_UID handouts unread (or PENDING_MAX are), and logged. */
static void serve_one(struct uf_ring_server *s, int c)
{
	struct ucred cred = {.pid = 0, .uid = (uid_t)-1, .gid = (gid_t)-1};
	socklen_t len = sizeof(cred);
	uint64_t now = uf_now_mono_ns();

	if (getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
		cred.pid = 0;
	uint32_t mine = unread_of(s, (uint32_t)cred.uid);
	if (mine >= UF_RING_UNREAD_PER_UID || s->npend >= UF_RING_PENDING_MAX) {
		__atomic_fetch_add(&s->refused, 1, __ATOMIC_RELAXED);
		if (now - s->log_refused_ns >= UF_RING_LOG_EVERY_NS) {
			s->log_refused_ns = now;
			fprintf(
			    stderr,
			    "uringfeed: ring %s: connection of pid %d (uid %u) closed unanswered: "
			    "%u handouts of that user (%u in all) are unread (%llu refused so "
			    "far)\n",
			    s->name, (int)cred.pid, (unsigned)cred.uid, mine, s->npend,
			    (unsigned long long)s->refused);
		}
		close(c);
		return;
	}
	note_handout(s, &cred); /* before the fd: the slot it claims is then known */
	send_table(s, c);
	if (unread_bytes(c) == 0) { /* read already (or refused): nothing in flight */
		close(c);
		return;
	}
	s->pend[s->npend++] =
	    (struct pending){.fd = c, .uid = (uint32_t)cred.uid, .pid = cred.pid, .since_ns = now};
}

/* Drops the pending handouts that were read or whose peer left; logs the slow ones once. */
static void sweep_pending(struct uf_ring_server *s, const struct pollfd *pfd)
{
	uint64_t now = uf_now_mono_ns();
	/* from the end: a removed entry takes the last one's place, already looked at */
	for (uint32_t i = s->npend; i-- > 0;) {
		struct pending *p = &s->pend[i];
		int gone = pfd[i].revents & (POLLHUP | POLLERR | POLLRDHUP | POLLNVAL);
		if (gone || unread_bytes(p->fd) <= 0) {
			close(p->fd);
			s->pend[i] = s->pend[--s->npend];
			continue;
		}
		if (!p->slow_logged && now - p->since_ns >= UF_RING_UNREAD_SLOW_NS) {
			p->slow_logged = 1;
			if (now - s->log_slow_ns >= UF_RING_LOG_EVERY_NS) {
				s->log_slow_ns = now;
				fprintf(
				    stderr,
				    "uringfeed: ring %s: pid %d (uid %u) has not read its consumer "
				    "table handout for %llu s\n",
				    s->name, (int)p->pid, (unsigned)p->uid,
				    (unsigned long long)((now - p->since_ns) / 1000000000ull));
			}
		}
	}
}

void uf_ring_server_counts(struct uf_ring_server *s, uint64_t *refused, uint64_t *send_errors)
{
	*refused = __atomic_load_n(&s->refused, __ATOMIC_RELAXED);
	*send_errors = __atomic_load_n(&s->send_errors, __ATOMIC_RELAXED);
}

static void *server_main(void *arg)
{
	struct uf_ring_server *s = arg;
	struct pollfd p[2 + UF_RING_PENDING_MAX];

	for (;;) {
		p[0] = (struct pollfd){.fd = s->lfd, .events = POLLIN};
		p[1] = (struct pollfd){.fd = s->stopfd, .events = POLLIN};
		for (uint32_t i = 0; i < s->npend; i++)
			p[2 + i] = (struct pollfd){.fd = s->pend[i].fd, .events = POLLRDHUP};
		/* unread handouts: looked at every 100 ms (a read shows in SIOCOUTQ, not in
		 * poll); none: sleep until a connection or the stop */
		int n = poll(p, 2 + s->npend, s->npend ? 100 : -1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (p[1].revents)
			break;
		sweep_pending(s, p + 2);
		if (!(p[0].revents & POLLIN))
			continue;
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
			serve_one(s, c);
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
	snprintf(s->name, sizeof(s->name), "%s", name);
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
	for (uint32_t i = 0; i < s->npend; i++)
		close(s->pend[i].fd);
	close(s->lfd);
	close(s->stopfd);
	close(s->ct_fd);
	pthread_mutex_destroy(&s->lock);
	free(s->handed);
	free(s);
}
