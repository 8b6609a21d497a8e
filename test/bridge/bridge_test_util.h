/* Helpers of the NATS fan-out tests: real nats-server processes with JetStream on loopback
 * (free ports found by binding port 0, stores under the test's temp dir), the bridge, the
 * day feeder, and book comparisons. Every process comes from uf_test_fork(): it dies with
 * the test, whatever way the test ends. */
#ifndef BRIDGE_TEST_UTIL_H
#define BRIDGE_TEST_UTIL_H

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ring/ufconsumer.h"
#include "test/common/uf_test_dir.h"
#include "test/common/uf_test_proc.h"
#include "test/common/uf_test_run.h"

#define BT_MAX_PROCS 16

static pid_t bt_procs[BT_MAX_PROCS]; /* everything started, for the teardown */
static char bt_dir[128];             /* this test process's scratch dir */
static char bt_ring_dir[128];        /* its rings (UF_RING_DIR): /dev/shm/uf-TAG-PID */

static inline uint64_t bt_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static inline void bt_sleep_ms(unsigned ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

static inline const char *bt_bin(const char *name)
{
	static char path[8][600];
	static int k;
	const char *d = getenv("UF_BIN_DIR");
	char *p = path[k++ % 8];

	snprintf(p, 600, "%s/%s", d ? d : UF_BIN_DIR, name);
	return p;
}

static inline int bt_port_open(int port)
{
	struct sockaddr_in a = {.sin_family = AF_INET,
	                        .sin_port = htons((uint16_t)port),
	                        .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	int fd = socket(AF_INET, SOCK_STREAM, 0), ok;

	ok = connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
	close(fd);
	return ok;
}

/* Starts `path` with argv, stdout to out_path (or /dev/null), stderr to out_path.err. */
static inline pid_t bt_spawn(const char *path, char *const argv[], const char *out_path)
{
	pid_t pid;

	assert_int_equal(access(path, X_OK), 0);
	pid = uf_test_fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char errp[600];
		int fd =
		    open(out_path ? out_path : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd >= 0)
			dup2(fd, 1);
		snprintf(errp, sizeof(errp), "%s.err", out_path ? out_path : "/tmp/uf-bt");
		fd = open(out_path ? errp : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd >= 0)
			dup2(fd, 2);
		execv(path, argv);
		_exit(127);
	}
	for (int i = 0; i < BT_MAX_PROCS; i++) {
		if (bt_procs[i] == 0) {
			bt_procs[i] = pid;
			break;
		}
	}
	return pid;
}

static inline void bt_forget(pid_t pid)
{
	for (int i = 0; i < BT_MAX_PROCS; i++)
		if (bt_procs[i] == pid)
			bt_procs[i] = 0;
}

/* Waits at most timeout_ms for `pid`; returns its exit status, or -1 (killed when late). */
static inline int bt_wait(pid_t pid, int timeout_ms)
{
	uint64_t end = bt_now_ms() + (uint64_t)timeout_ms;
	int st;

	for (;;) {
		pid_t r = waitpid(pid, &st, WNOHANG);
		if (r == pid) {
			bt_forget(pid);
			return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		}
		if (r < 0 || bt_now_ms() > end) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			bt_forget(pid);
			return -1;
		}
		bt_sleep_ms(5);
	}
}

static inline void bt_kill_all(void)
{
	for (int i = 0; i < BT_MAX_PROCS; i++) {
		if (bt_procs[i] > 0) {
			kill(bt_procs[i], SIGKILL);
			waitpid(bt_procs[i], NULL, 0);
			bt_procs[i] = 0;
		}
	}
}

struct bt_nats {
	int n;          /* servers */
	int port[3];    /* client ports */
	int cport[3];   /* cluster ports */
	pid_t pid[3];   /* processes */
	char urls[256]; /* nats://127.0.0.1:P1,... */
};

/* `k` distinct free loopback ports: every socket stays bound until all are picked, so the
 * kernel cannot hand the same port out twice (a port picked, closed and picked again gave
 * two servers one port). */
static inline void bt_free_ports(int *out, int k)
{
	int fds[8];

	assert_true(k <= 8);
	for (int i = 0; i < k; i++) {
		struct sockaddr_in a = {.sin_family = AF_INET,
		                        .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
		socklen_t len = sizeof(a);
		fds[i] = socket(AF_INET, SOCK_STREAM, 0);
		assert_true(fds[i] >= 0);
		assert_int_equal(bind(fds[i], (struct sockaddr *)&a, sizeof(a)), 0);
		assert_int_equal(getsockname(fds[i], (struct sockaddr *)&a, &len), 0);
		out[i] = ntohs(a.sin_port);
	}
	for (int i = 0; i < k; i++)
		close(fds[i]);
}

/* One free loopback TCP port (bt_free_ports of one). */
static inline int bt_free_port(void)
{
	int port;
	bt_free_ports(&port, 1);
	return port;
}

/* One attempt of bt_nats_start. Returns 1 when every client port accepts, 0 when a server
 * exited first (a port another process took between the pick and the server's bind: its
 * log says so, printed here); the others are then stopped. Fails the test when a server
 * stays up without opening its port within 20 s. */
static inline int bt_nats_try_start(struct bt_nats *ns, int n, const char *tag, int attempt)
{
	char routes[200] = "";
	int ports[6];
	uint64_t end;

	memset(ns, 0, sizeof(*ns));
	ns->n = n;
	bt_free_ports(ports, 2 * n);
	for (int i = 0; i < n; i++) {
		ns->port[i] = ports[2 * i];
		ns->cport[i] = ports[2 * i + 1];
	}
	for (int i = 0; i < n; i++) {
		size_t l = strlen(routes);
		snprintf(routes + l, sizeof(routes) - l, "%snats://127.0.0.1:%d", i ? "," : "",
		         ns->cport[i]);
		l = strlen(ns->urls);
		snprintf(ns->urls + l, sizeof(ns->urls) - l, "%snats://127.0.0.1:%d", i ? "," : "",
		         ns->port[i]);
	}
	for (int i = 0; i < n; i++) {
		char port[16], sd[256], name[32], cl[64], out[256];
		snprintf(port, sizeof(port), "%d", ns->port[i]);
		/* a failed attempt's store is left alone: a new one per attempt */
		if (attempt == 0)
			snprintf(sd, sizeof(sd), "%s/js-%s-%d", bt_dir, tag, i);
		else
			snprintf(sd, sizeof(sd), "%s/js-%s-%d-r%d", bt_dir, tag, i, attempt);
		snprintf(name, sizeof(name), "%s%d", tag, i);
		snprintf(cl, sizeof(cl), "nats://127.0.0.1:%d", ns->cport[i]);
		snprintf(out, sizeof(out), "%s/nats-%s-%d.log", bt_dir, tag, i);
		char *argv_single[] = {"nats-server", "-a", "127.0.0.1", "-p", port, "-js",
		                       "-sd",         sd,   "-n",        name, NULL};
		char *argv_cluster[] = {"nats-server",
		                        "-a",
		                        "127.0.0.1",
		                        "-p",
		                        port,
		                        "-js",
		                        "-sd",
		                        sd,
		                        "-n",
		                        name,
		                        "--cluster_name",
		                        "uf",
		                        "--cluster",
		                        cl,
		                        "--routes",
		                        routes,
		                        NULL};
		ns->pid[i] = bt_spawn(UF_NATS_SERVER, n == 1 ? argv_single : argv_cluster, out);
	}
	end = bt_now_ms() + 20000;
	for (int i = 0; i < n; i++) {
		while (!bt_port_open(ns->port[i])) {
			int dead = -1, st = 0;
			for (int j = 0; j < n && dead < 0; j++)
				if (waitpid(ns->pid[j], &st, WNOHANG) == ns->pid[j])
					dead = j;
			if (dead >= 0) {
				char errp[300], *log;
				snprintf(errp, sizeof(errp), "%s/nats-%s-%d.log.err", bt_dir, tag,
				         dead);
				log = uf_test_slurp(errp);
				size_t len = log ? strlen(log) : 0; /* the reason is at the end */
				fprintf(stderr,
				        "# nats-server %s%d (port %d, cluster port %d) exited at "
				        "start (status 0x%x), attempt %d: ...%s\n",
				        tag, dead, ns->port[dead], ns->cport[dead], st, attempt,
				        log ? log + (len > 400 ? len - 400 : 0) : "(no log)");
				free(log);
				bt_forget(ns->pid[dead]);
				for (int j = 0; j < n; j++)
					if (j != dead)
						(void)bt_wait(ns->pid[j], 0);
				return 0;
			}
			if (bt_now_ms() > end)
				fail_msg("nats-server %s%d up but its port %d not open within 20 s",
				         tag, i, ns->port[i]);
			bt_sleep_ms(20);
		}
	}
	return 1;
}

/* Starts `n` (1 or 3) JetStream servers on loopback, clustered when 3; waits until every
 * client port accepts (bounded: 20 s an attempt). A server that exits at start (its port
 * taken meanwhile by another process) costs one more attempt on fresh ports, three at most. */
static inline void bt_nats_start(struct bt_nats *ns, int n, const char *tag)
{
	for (int attempt = 0; !bt_nats_try_start(ns, n, tag, attempt); attempt++)
		if (attempt == 2)
			fail_msg("nats-server %s: no start in 3 attempts (logs above)", tag);
}

/* One JetStream server that requires TLS, with a CA and a server certificate for 127.0.0.1
 * made with openssl in `dir` (ca.pem is what clients must trust). */
static inline void bt_nats_start_tls(struct bt_nats *ns, const char *dir)
{
	char script[1200], conf[300], out[300];
	struct uf_test_run r;
	FILE *f;

	snprintf(script, sizeof(script),
	         "cd '%s' && openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem "
	         "-days 2 -subj /CN=uf-test-ca && openssl req -newkey rsa:2048 -nodes -keyout "
	         "srv.key -out srv.csr -subj /CN=127.0.0.1 && printf "
	         "'subjectAltName=IP:127.0.0.1\\n' > ext.cnf && openssl x509 -req -in srv.csr -CA "
	         "ca.pem -CAkey ca.key -CAcreateserial -out srv.pem -days 2 -extfile ext.cnf",
	         dir);
	const char *argv[] = {"sh", "-c", script, NULL};
	uf_test_run_path("/bin/sh", argv, 60000, &r);
	if (r.status != 0)
		fprintf(stderr, "openssl: %s\n", r.err);
	assert_int_equal(r.status, 0);
	uf_test_run_free(&r);
	memset(ns, 0, sizeof(*ns));
	ns->n = 1;
	ns->port[0] = bt_free_port();
	snprintf(ns->urls, sizeof(ns->urls), "nats://127.0.0.1:%d", ns->port[0]);
	snprintf(conf, sizeof(conf), "%s/tls.conf", dir);
	f = fopen(conf, "w");
	assert_non_null(f);
	fprintf(f,
	        "listen: \"127.0.0.1:%d\"\nserver_name: tls0\njetstream { store_dir: \"%s/js-tls\" "
	        "}\ntls { cert_file: \"%s/srv.pem\", key_file: \"%s/srv.key\", timeout: 5 }\n",
	        ns->port[0], dir, dir, dir);
	fclose(f);
	snprintf(out, sizeof(out), "%s/nats-tls.log", dir);
	char *nargv[] = {"nats-server", "-c", conf, NULL};
	ns->pid[0] = bt_spawn(UF_NATS_SERVER, nargv, out);
	for (uint64_t end = bt_now_ms() + 10000; !bt_port_open(ns->port[0]);) {
		assert_true(bt_now_ms() < end);
		bt_sleep_ms(20);
	}
}

static inline void bt_nats_stop(struct bt_nats *ns)
{
	for (int i = 0; i < ns->n; i++) {
		if (ns->pid[i] > 0) {
			kill(ns->pid[i], SIGTERM);
			bt_wait(ns->pid[i], 5000);
			ns->pid[i] = 0;
		}
	}
}

/* Generates a day with uf-gen; returns its path (static). */
static inline const char *bt_gen_day(unsigned messages, unsigned symbols, unsigned seed)
{
	static char path[300];
	char m[16], s[16], sd[16];
	struct uf_test_run r;

	snprintf(path, sizeof(path), "%s/day-%u-%u-%u.itch", bt_dir, messages, symbols, seed);
	if (access(path, R_OK) == 0)
		return path;
	snprintf(m, sizeof(m), "%u", messages);
	snprintf(s, sizeof(s), "%u", symbols);
	snprintf(sd, sizeof(sd), "%u", seed);
	const char *argv[] = {"uf-gen",    "--out", path,     "--messages", m,
	                      "--symbols", s,       "--seed", sd,           NULL};
	uf_test_run_path(bt_bin("uf-gen"), argv, 30000, &r);
	assert_int_equal(r.status, 0);
	uf_test_run_free(&r);
	return path;
}

/* uf-tail with args; returns its stdout (malloc'ed), asserts exit 0. */
static inline char *bt_tail(const char *const argv[])
{
	struct uf_test_run r;
	char *out;

	uf_test_run_path(bt_bin("uf-tail"), argv, 90000, &r);
	if (r.status != 0)
		fprintf(stderr, "uf-tail exit %d: %s\n", r.status, r.err);
	assert_int_equal(r.status, 0);
	out = r.out;
	r.out = NULL;
	uf_test_run_free(&r);
	return out;
}

/* A numeric field of a one-line JSON object ("key":123), or -1. */
static inline int64_t bt_json_num(const char *json, const char *key)
{
	char pat[64];
	const char *p;

	snprintf(pat, sizeof(pat), "\"%s\":", key);
	p = json ? strstr(json, pat) : NULL;
	return p ? strtoll(p + strlen(pat), NULL, 10) : -1;
}

/* Waits (bounded) until the bridge's status file exists and `key` >= min; returns the file. */
static inline char *bt_wait_status(const char *path, const char *key, int64_t min, int timeout_ms)
{
	uint64_t end = bt_now_ms() + (uint64_t)timeout_ms;

	for (;;) {
		char *s = uf_test_slurp(path);
		if (s[0] && bt_json_num(s, key) >= min)
			return s;
		free(s);
		if (bt_now_ms() > end)
			fail_msg("%s: \"%s\" never reached %lld", path, key, (long long)min);
		bt_sleep_ms(20);
	}
}

/* ---- books of a consumer handle, rendered as uf-tail --books prints them ---- */
struct bt_books {
	struct uf_book_snapshot *v;
	size_t n, cap;
};

/* uf_consumer_snapshot_all's callback: keeps every snapshot in the list (arg). */
static inline int bt_keep(const struct uf_book_snapshot *s, void *arg)
{
	struct bt_books *l = arg;

	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 64;
		l->v = realloc(l->v, l->cap * sizeof(*l->v));
		assert_non_null(l->v);
	}
	l->v[l->n++] = *s;
	return 0;
}

/* The same for the books uf-tail --books prints: those with a level, and empty named ones in
 * doubt. */
static inline int bt_collect(const struct uf_book_snapshot *s, void *arg)
{
	if (s->nbid == 0 && s->nask == 0 && !((s->flags & UF_BOOKF_STALE) && s->symbol[0]))
		return 0;
	return bt_keep(s, arg);
}

static inline int bt_cmp(const void *a, const void *b)
{
	const struct uf_book_snapshot *x = a, *y = b;
	int c = strcmp(x->symbol, y->symbol);

	return c ? c : (x->instrument > y->instrument) - (x->instrument < y->instrument);
}

/* Collected snapshots as `uf-tail --books --depth depth` prints them (depth >= 1; malloc'ed);
 * frees l. */
static inline char *bt_render_list(struct bt_books l, uint32_t depth)
{
	size_t cap = 1 << 20, len = 0;
	char *out = malloc(cap);

	assert_non_null(out);
	out[0] = '\0';
	qsort(l.v, l.n, sizeof(*l.v), bt_cmp);
	for (size_t i = 0; i < l.n; i++) {
		const struct uf_book_snapshot *s = &l.v[i];
		const struct uf_level *sides[2] = {s->bid, s->ask};
		uint32_t ns[2] = {s->nbid < depth ? s->nbid : depth,
		                  s->nask < depth ? s->nask : depth};
		len += (size_t)snprintf(out + len, cap - len, "{\"symbol\":\"%s\"", s->symbol);
		for (int k = 0; k < 2; k++) {
			len +=
			    (size_t)snprintf(out + len, cap - len, ",\"%s\":[", k ? "ask" : "bid");
			for (uint32_t j = 0; j < ns[k]; j++)
				len += (size_t)snprintf(out + len, cap - len,
				                        "%s[%" PRId64 ",%" PRIu64 ",%u]",
				                        j ? "," : "", sides[k][j].price,
				                        sides[k][j].shares, sides[k][j].orders);
			len += (size_t)snprintf(out + len, cap - len, "]");
		}
		/* what uf-tail adds to a book that may be wrong, and to one whose side the image
		 * cut at its depth when more levels were asked */
		if (s->flags & UF_BOOKF_STALE)
			len += (size_t)snprintf(out + len, cap - len, ",\"stale\":true");
		if (((s->flags & UF_BOOKF_TRUNCATED_BID) && depth > ns[0]) ||
		    ((s->flags & UF_BOOKF_TRUNCATED_ASK) && depth > ns[1]))
			len += (size_t)snprintf(out + len, cap - len, ",\"truncated\":true");
		len += (size_t)snprintf(out + len, cap - len, "}\n");
		assert_true(len < cap - 4096);
	}
	free(l.v);
	return out;
}

/* The books of `c` as `uf-tail --books --depth depth` prints them (malloc'ed). */
static inline char *bt_render_books(uf_consumer_t *c, uint32_t depth)
{
	struct bt_books l = {0};

	assert_int_equal(uf_consumer_snapshot_all(c, bt_collect, &l), 0);
	return bt_render_list(l, depth);
}

/* Ring directories /dev/shm/uf-`tag`-PID of earlier test processes that died without their
 * teardown (a crash, a timeout) hold their rings (80 MB each): removed. */
static inline void bt_remove_dead_ring_dirs(const char *tag)
{
	DIR *d = opendir("/dev/shm");
	struct dirent *e;
	char prefix[64];
	size_t pl;

	if (!d)
		return;
	snprintf(prefix, sizeof(prefix), "uf-%s-", tag);
	pl = strlen(prefix);
	while ((e = readdir(d)) != NULL) {
		char p[300], *end;
		long pid;
		if (strncmp(e->d_name, prefix, pl) != 0)
			continue;
		pid = strtol(e->d_name + pl, &end, 10);
		if (pid <= 0 || *end != '\0' || kill((pid_t)pid, 0) == 0 || errno != ESRCH)
			continue;
		snprintf(p, sizeof(p), "/dev/shm/%.250s", e->d_name);
		uf_test_rm_tree(p);
	}
	closedir(d);
}

/* The group set-up of every fan-out test: the scratch dir /tmp/uf-`tag`.XXXXXX (bt_dir) and
 * the rings' dir /dev/shm/uf-`tag`-PID (bt_ring_dir, exported as UF_RING_DIR for the test and
 * every process it starts), after removing those dead processes left. 0, or -1. */
static inline int bt_setup_dirs(const char *tag)
{
	bt_remove_dead_ring_dirs(tag);
	snprintf(bt_dir, sizeof(bt_dir), "/tmp/uf-%s.XXXXXX", tag);
	if (!mkdtemp(bt_dir))
		return -1;
	snprintf(bt_ring_dir, sizeof(bt_ring_dir), "/dev/shm/uf-%s-%d", tag, (int)getpid());
	if (mkdir(bt_ring_dir, 0700) < 0)
		return -1;
	setenv("UF_RING_DIR", bt_ring_dir, 1);
	return 0;
}

/* The group teardown: every process started killed, the rings and the scratch dir removed
 * (UF_BT_KEEP set: the scratch dir, with the servers' and processes' logs, is kept). */
static inline int bt_teardown_dirs(void)
{
	bt_kill_all();
	uf_test_rm_tree(bt_ring_dir);
	if (getenv("UF_BT_KEEP")) /* debugging */
		fprintf(stderr, "logs kept in %s\n", bt_dir);
	else
		uf_test_rm_tree(bt_dir);
	return 0;
}

static const char *bt_group_tag; /* the running group's tag (bt_setup_dirs) */

/* The group set-up and teardown of BT_RUN_GROUP. */
static inline int bt_group_setup(void **state)
{
	(void)state;
	return bt_setup_dirs(bt_group_tag);
}

static inline int bt_group_teardown(void **state)
{
	(void)state;
	return bt_teardown_dirs();
}

/* Names the group about to run; UF_BT_ONLY (debugging) runs only the cases matching it. */
static inline void bt_group_begin(const char *tag)
{
	bt_group_tag = tag;
	if (getenv("UF_BT_ONLY"))
		cmocka_set_test_filter(getenv("UF_BT_ONLY"));
}

/* Runs the cmocka array `tests` as a fan-out test group of dirs uf-`tag` (a macro: cmocka
 * counts the array). */
#define BT_RUN_GROUP(tag, tests)                                                                   \
	(bt_group_begin(tag), cmocka_run_group_tests(tests, bt_group_setup, bt_group_teardown))

/* Waits (bounded: 10 s) until `ring` exists and is open: a new generation a feeder made, not
 * the closed ring of an earlier one. */
static inline void bt_wait_ring_open(const char *ring)
{
	struct uf_consumer_info info;
	char shm[300];

	snprintf(shm, sizeof(shm), "%s/uf.%s", bt_ring_dir, ring);
	for (uint64_t end = bt_now_ms() + 10000;; bt_sleep_ms(10)) {
		struct uf_consumer_options co;
		uf_consumer_t *c;
		assert_true(bt_now_ms() < end);
		if (access(shm, F_OK) != 0)
			continue;
		uf_consumer_options_init(&co); /* a new generation once it is not closed */
		if (uf_consumer_attach(ring, &co, &c, NULL, 0) < 0)
			continue;
		uf_consumer_get_info(c, &info);
		uf_consumer_detach(c);
		if (!info.closed)
			break;
	}
}

/* Creates the empty file `path` (a start signal a feeder waits for). */
static inline void bt_touch(const char *path)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fclose(f);
}

#endif /* BRIDGE_TEST_UTIL_H */
