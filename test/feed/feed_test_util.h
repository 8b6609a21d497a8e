/* Helpers for the feed tests: generated days, child processes with hard time limits, feed
 * configurations on loopback multicast, reference books computed from the file, and books
 * read back through libufconsumer, both printed in the `uf-decode books` JSON-lines format. */
#ifndef FEED_TEST_UTIL_H
#define FEED_TEST_UTIL_H

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/uf_time.h"
#include "feed/uf_feed_config.h"
#include "publish/uf_record.h"
#include "ring/uf_ring.h"
#include "test/common/uf_test_dir.h"
#include "test/common/uf_test_port.h"
#include "test/common/uf_test_proc.h"
#include "test/common/uf_test_rings.h"

static inline const char *ft_bin_dir(void)
{
	const char *d = getenv("UF_BIN_DIR");
	return d ? d : UF_BIN_DIR;
}

/* Starts argv[0] from the bin dir with stdout to `out_path` (NULL: /dev/null). */
static inline pid_t ft_spawn(char *const argv[], const char *out_path)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", ft_bin_dir(), argv[0]);
	if (access(path, X_OK) != 0) {
		fprintf(stderr, "FATAL: %s is not built (%s)\n", path, strerror(errno));
		return -1;
	}
	pid_t pid = uf_test_fork(); /* SIGKILLed if this test dies: no orphan busy-polls */
	if (pid == 0) {
		int fd =
		    open(out_path ? out_path : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd >= 0)
			dup2(fd, 1);
		execv(path, argv);
		_exit(127);
	}
	return pid;
}

/* Waits for `pid` at most timeout_ms; kills it when late. Returns its exit status, or -1. */
static inline int ft_wait(pid_t pid, int timeout_ms)
{
	int st = uf_test_wait_status(pid, timeout_ms);
	return st >= 0 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static inline int ft_run(char *const argv[], const char *out_path, int timeout_ms)
{
	pid_t pid = ft_spawn(argv, out_path);
	return pid < 0 ? -1 : ft_wait(pid, timeout_ms);
}

/* State letter of this process's thread `tid` (/proc/self/task/TID/stat), '?' unreadable. */
static inline char ft_thread_state(pid_t tid)
{
	char path[64], buf[256], *p;
	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	FILE *f = fopen(path, "r");
	if (!f)
		return '?';
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : '?';
}

/* A scratch directory for this test process. */
static inline const char *ft_tmpdir(void)
{
	static char dir[128];
	if (!dir[0]) {
		snprintf(dir, sizeof(dir), "/tmp/uf-feed-test.XXXXXX");
		if (!mkdtemp(dir))
			return NULL;
	}
	return dir;
}

#define FT_RING_DIR_PREFIX "uf-feed-test-"

/* Removes a directory tree of plain files (ring directories inside it included). Cold. */
static inline void ft_rm_dir(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *e;
	char p[600];
	while ((e = readdir(d)) != NULL) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(p, sizeof(p), "%.300s/%.255s", dir, e->d_name);
		if (unlink(p) < 0 && errno == EISDIR)
			ft_rm_dir(p); /* a ring's private directory uf.NAME */
	}
	closedir(d);
	rmdir(dir);
}

/* This test process's ring directory, /dev/shm/uf-feed-test-PID (RAM: rings are 80 MB
 * each), exported as UF_RING_DIR so the feed, the daemon, uf-tail and the consumer library
 * all put and look for rings there. Ring directories of test processes that died without
 * their teardown (timeout, crash) are removed first. Returns NULL when it cannot be made. */
static inline const char *ft_use_ring_dir(void)
{
	static char dir[128];
	if (dir[0])
		return dir;
	DIR *d = opendir("/dev/shm");
	if (d) {
		struct dirent *e;
		while ((e = readdir(d)) != NULL) {
			if (strncmp(e->d_name, FT_RING_DIR_PREFIX, strlen(FT_RING_DIR_PREFIX)))
				continue;
			long pid = strtol(e->d_name + strlen(FT_RING_DIR_PREFIX), NULL, 10);
			if (pid > 0 && kill((pid_t)pid, 0) < 0 && errno == ESRCH) {
				char p[300];
				snprintf(p, sizeof(p), "/dev/shm/%.255s", e->d_name);
				ft_rm_dir(p);
			}
		}
		closedir(d);
	}
	snprintf(dir, sizeof(dir), "/dev/shm/" FT_RING_DIR_PREFIX "%d", (int)getpid());
	if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
		fprintf(stderr, "FATAL: cannot create ring dir %s: %s\n", dir, strerror(errno));
		dir[0] = '\0';
		return NULL;
	}
	setenv("UF_RING_DIR", dir, 1);
	return dir;
}

/* Generates a day with uf-gen into the scratch dir. Returns 0. */
static inline int ft_gen_day(char *path, size_t len, unsigned messages, unsigned symbols,
                             unsigned seed)
{
	char m[32], s[32], sd[32];
	snprintf(path, len, "%s/day-%u-%u-%u.itch", ft_tmpdir(), messages, symbols, seed);
	snprintf(m, sizeof(m), "%u", messages);
	snprintf(s, sizeof(s), "%u", symbols);
	snprintf(sd, sizeof(sd), "%u", seed);
	char *argv[] = {"uf-gen",    "--out", path,     "--messages", m,
	                "--symbols", s,       "--seed", sd,           NULL};
	return ft_run(argv, NULL, 30000) == 0 ? 0 : -1;
}

/* The in-process feed of case `sc` of the test `tag` ("ft", "ts"), on loopback multicast
 * with two lines A and B: groups 239.<octet>.<backend>.<2 sc + l>, ports
 * port_base + 100 * backend + 10 * sc + l, ring "u<tag><backend>_<sc>_<pid>" (1 MiB), books
 * of `depth` levels. Each test's ranges keep its cases, and the backends run at once, apart.
 * Recovery and snapshot settings are the caller's (zero here). The ring is removed at exit
 * (uf_test_rings_remember). */
static inline void ft_config_lines(struct uf_feed_config *cfg, const char *tag,
                                   enum uf_backend backend, int sc, int octet, int port_base,
                                   uint32_t depth)
{
	memset(cfg, 0, sizeof(*cfg));
	snprintf(cfg->name, sizeof(cfg->name), "%s%d", tag, sc);
	snprintf(cfg->protocol, sizeof(cfg->protocol), "itch50-moldudp64");
	cfg->backend = backend;
	cfg->cpu = -1;
	cfg->sqpoll_cpu = -1;
	cfg->sqpoll_idle_ms = 10; /* short: the SQ thread is asleep when a case's traffic starts */
	cfg->numa_node = -1;
	cfg->nlines = 2;
	for (int l = 0; l < 2; l++) {
		struct uf_line_config *lc = &cfg->lines[l];
		snprintf(lc->name, sizeof(lc->name), "%c", 'A' + l);
		char g[32];
		snprintf(g, sizeof(g), "239.%d.%d.%d", octet, (int)backend, sc * 2 + l);
		inet_pton(AF_INET, g, &lc->group);
		lc->port =
		    (uint16_t)uf_test_port_fixed(port_base + 100 * (int)backend + 10 * sc + l);
		inet_pton(AF_INET, "127.0.0.1", &lc->interface);
	}
	snprintf(cfg->ring.name, sizeof(cfg->ring.name), "u%s%d_%d_%d", tag, (int)backend, sc,
	         (int)getpid());
	uf_test_rings_remember(cfg->ring.name);
	cfg->ring.capacity = 1 << 20;
	cfg->ring.mode = 0600;
	cfg->book.depth = depth;
	cfg->book.max_orders = 1 << 20;
	cfg->book.max_instruments = 1024;
	cfg->buffers.count = 4096;
	cfg->buffers.size = 2048;
}

/* A growing string. */
struct ft_buf {
	char *p;
	size_t len, cap;
};

static inline void ft_buf_add(struct ft_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static inline void ft_buf_add(struct ft_buf *b, const char *fmt, ...)
{
	va_list ap;
	for (;;) {
		size_t room = b->cap - b->len;
		va_start(ap, fmt);
		int n = vsnprintf(b->p ? b->p + b->len : NULL, b->p ? room : 0, fmt, ap);
		va_end(ap);
		if (n >= 0 && b->p && (size_t)n < room) {
			b->len += (size_t)n;
			return;
		}
		b->cap = b->cap ? b->cap * 2 + (size_t)n : 4096 + (size_t)n;
		b->p = realloc(b->p, b->cap);
	}
}

/* One book line in the uf-decode books format. */
struct ft_book {
	char symbol[9];
	char *line;
};

static inline int ft_book_cmp(const void *a, const void *b)
{
	return strcmp(((const struct ft_book *)a)->symbol, ((const struct ft_book *)b)->symbol);
}

static inline void ft_side(struct ft_buf *b, const char *name, const int64_t *px,
                           const uint64_t *sh, const uint32_t *ord, unsigned n)
{
	ft_buf_add(b, "\"%s\":[", name);
	for (unsigned i = 0; i < n; i++)
		ft_buf_add(b, "%s[%lld,%llu,%u]", i ? "," : "", (long long)px[i],
		           (unsigned long long)sh[i], ord[i]);
	ft_buf_add(b, "]");
}

/* Joins sorted book lines into one string (each line ends in '\n'). Frees the lines. */
static inline char *ft_books_join(struct ft_book *v, size_t n)
{
	qsort(v, n, sizeof(*v), ft_book_cmp);
	struct ft_buf b = {0};
	ft_buf_add(&b, "%s", "");
	for (size_t i = 0; i < n; i++) {
		ft_buf_add(&b, "%s\n", v[i].line);
		free(v[i].line);
	}
	return b.p;
}

/* ft_reference.c (its own file: publish/ and ring/ headers both define struct uf_level).
 * Applies the daily file `path` through decode + publish as the feed would, and returns the
 * final books (depth levels per side) in the uf-decode books format, and every record
 * (caller frees both). Returns 0, or -errno. */
int ft_reference(const char *path, unsigned depth, char **books, struct uf_record **recs,
                 size_t *nrecs, uint64_t *nmsgs);

#endif /* FEED_TEST_UTIL_H */
