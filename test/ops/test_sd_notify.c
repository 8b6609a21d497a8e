/* systemd notify protocol (daemon/sd_notify.c): the exact datagrams a real Unix
 * datagram socket receives, path and abstract addresses, the sender's credentials, and the
 * WATCHDOG_USEC/WATCHDOG_PID rules. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include "daemon/sd_notify.h"

struct listener {
	int fd;
	char name[108]; /* what NOTIFY_SOCKET is set to */
};

/* Binds a datagram socket at a path (abstract = 0) or an abstract name (abstract = 1), both
 * unique to this process, with SO_PASSCRED so each datagram carries the sender's pid. */
static void listener_open(struct listener *l, int abstract)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	socklen_t len;
	int one = 1;

	l->fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	assert_true(l->fd >= 0);
	assert_int_equal(setsockopt(l->fd, SOL_SOCKET, SO_PASSCRED, &one, sizeof(one)), 0);
	if (abstract) {
		snprintf(l->name, sizeof(l->name), "@uf-test-sd-notify-%d", (int)getpid());
		size_t n = strlen(l->name);
		memcpy(sa.sun_path, l->name, n);
		sa.sun_path[0] = '\0';
		/* Exactly the name's bytes: a sender that adds a NUL would miss this socket. */
		len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n);
	} else {
		snprintf(l->name, sizeof(l->name), "/tmp/uf-test-sd-notify-%d.sock", (int)getpid());
		unlink(l->name);
		strcpy(sa.sun_path, l->name);
		len = (socklen_t)sizeof(sa);
	}
	assert_int_equal(bind(l->fd, (struct sockaddr *)&sa, len), 0);
	assert_int_equal(setenv("NOTIFY_SOCKET", l->name, 1), 0);
}

static void listener_close(struct listener *l)
{
	close(l->fd);
	if (l->name[0] == '/')
		unlink(l->name);
	unsetenv("NOTIFY_SOCKET");
}

/* The next datagram, which must already be queued: a Unix datagram is in the receiver's
 * queue when sendto returns, so MSG_DONTWAIT is exact and never waits. Checks the sender's
 * pid (what systemd's NotifyAccess=main checks) and returns the payload length. */
static ssize_t listener_take(struct listener *l, char *buf, size_t cap)
{
	char ctl[CMSG_SPACE(sizeof(struct ucred))];
	struct iovec iov = {.iov_base = buf, .iov_len = cap - 1};
	struct msghdr mh = {
	    .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof(ctl)};
	ssize_t n = recvmsg(l->fd, &mh, MSG_DONTWAIT);

	assert_true(n >= 0);
	assert_int_equal(mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC), 0);
	buf[n] = '\0';
	struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
	assert_non_null(c);
	assert_int_equal(c->cmsg_type, SCM_CREDENTIALS);
	struct ucred cred;
	memcpy(&cred, CMSG_DATA(c), sizeof(cred));
	assert_int_equal(cred.pid, getpid());
	return n;
}

static void assert_queue_empty(struct listener *l)
{
	char b[8];
	assert_int_equal(recv(l->fd, b, sizeof(b), MSG_DONTWAIT), -1);
	assert_int_equal(errno, EAGAIN);
}

static void expect_datagrams(int abstract)
{
	struct listener l;
	char buf[1024];

	listener_open(&l, abstract);
	assert_int_equal(uf_sd_notify_ready(), 1);
	assert_int_equal(listener_take(&l, buf, sizeof(buf)), 7);
	assert_string_equal(buf, "READY=1");
	assert_int_equal(uf_sd_notify_watchdog(), 1);
	listener_take(&l, buf, sizeof(buf));
	assert_string_equal(buf, "WATCHDOG=1");
	assert_int_equal(uf_sd_notify_stopping(), 1);
	listener_take(&l, buf, sizeof(buf));
	assert_string_equal(buf, "STOPPING=1");
	assert_int_equal(uf_sd_notify_reloading(18446744073709551615ull), 1);
	listener_take(&l, buf, sizeof(buf));
	assert_string_equal(buf, "RELOADING=1\nMONOTONIC_USEC=18446744073709551615");
	assert_int_equal(uf_sd_notify_status("%d feeds, %s", 2, "nasdaq: live"), 1);
	listener_take(&l, buf, sizeof(buf));
	assert_string_equal(buf, "STATUS=2 feeds, nasdaq: live");
	assert_int_equal(uf_sd_notify("READY=1\nSTATUS=multi"), 1);
	listener_take(&l, buf, sizeof(buf));
	assert_string_equal(buf, "READY=1\nSTATUS=multi");
	assert_queue_empty(&l);
	listener_close(&l);
}

static void test_sd_notify_path_socket_gets_exact_datagrams(void **state)
{
	expect_datagrams(0);
}

static void test_sd_notify_abstract_socket_gets_exact_datagrams(void **state)
{
	expect_datagrams(1);
}

static void test_sd_notify_status_is_one_line_and_bounded(void **state)
{
	struct listener l;
	char buf[1024], big[2 * UF_SD_STATUS_MAX];

	listener_open(&l, 1);
	/* A newline would end STATUS= and start an assignment of its own: it becomes a space. */
	assert_int_equal(uf_sd_notify_status("line A silent\nREADY=1\r"), 1);
	listener_take(&l, buf, sizeof(buf));
	assert_string_equal(buf, "STATUS=line A silent READY=1 ");
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	assert_int_equal(uf_sd_notify_status("%s", big), 1);
	assert_int_equal(listener_take(&l, buf, sizeof(buf)), 7 + UF_SD_STATUS_MAX);
	assert_memory_equal(buf, "STATUS=xxxx", 11);
	listener_close(&l);
}

static void test_sd_notify_without_socket_is_a_no_op(void **state)
{
	unsetenv("NOTIFY_SOCKET");
	assert_int_equal(uf_sd_notify_ready(), 0);
	setenv("NOTIFY_SOCKET", "", 1);
	assert_int_equal(uf_sd_notify_watchdog(), 0);
	unsetenv("NOTIFY_SOCKET");
}

static void test_sd_notify_bad_addresses_fail(void **state)
{
	char path[200];

	setenv("NOTIFY_SOCKET", "vsock:2:1234", 1);
	assert_int_equal(uf_sd_notify_ready(), -EAFNOSUPPORT);
	setenv("NOTIFY_SOCKET", "relative/notify", 1);
	assert_int_equal(uf_sd_notify_ready(), -EAFNOSUPPORT);
	memset(path, 'a', sizeof(path) - 1);
	path[0] = '/';
	path[sizeof(path) - 1] = '\0';
	setenv("NOTIFY_SOCKET", path, 1);
	assert_int_equal(uf_sd_notify_ready(), -ENAMETOOLONG);
	snprintf(path, sizeof(path), "/tmp/uf-test-sd-notify-none-%d.sock", (int)getpid());
	setenv("NOTIFY_SOCKET", path, 1);
	assert_int_equal(uf_sd_notify_ready(), -ENOENT);
	unsetenv("NOTIFY_SOCKET");
}

static void test_sd_watchdog_interval_follows_usec_and_pid(void **state)
{
	char pid[32];

	unsetenv("WATCHDOG_USEC");
	unsetenv("WATCHDOG_PID");
	assert_int_equal(uf_sd_watchdog_interval_us(), 0);
	setenv("WATCHDOG_USEC", "5000000", 1);
	assert_int_equal(uf_sd_watchdog_interval_us(), 5000000);
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	setenv("WATCHDOG_PID", pid, 1);
	assert_int_equal(uf_sd_watchdog_interval_us(), 5000000);
	/* Another process's watchdog (an inherited environment): not ours. */
	snprintf(pid, sizeof(pid), "%d", (int)getpid() + 1);
	setenv("WATCHDOG_PID", pid, 1);
	assert_int_equal(uf_sd_watchdog_interval_us(), 0);
	setenv("WATCHDOG_PID", "12x", 1);
	assert_int_equal(uf_sd_watchdog_interval_us(), -EINVAL);
	unsetenv("WATCHDOG_PID");
	const char *bad[] = {"", "abc", "-5", "5s", "0", "99999999999999999999"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		setenv("WATCHDOG_USEC", bad[i], 1);
		if (uf_sd_watchdog_interval_us() != -EINVAL)
			fail_msg("WATCHDOG_USEC=\"%s\" accepted", bad[i]);
	}
	unsetenv("WATCHDOG_USEC");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_sd_notify_path_socket_gets_exact_datagrams),
	    cmocka_unit_test(test_sd_notify_abstract_socket_gets_exact_datagrams),
	    cmocka_unit_test(test_sd_notify_status_is_one_line_and_bounded),
	    cmocka_unit_test(test_sd_notify_without_socket_is_a_no_op),
	    cmocka_unit_test(test_sd_notify_bad_addresses_fail),
	    cmocka_unit_test(test_sd_watchdog_interval_follows_usec_and_pid),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
