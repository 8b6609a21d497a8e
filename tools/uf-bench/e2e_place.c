/* uf-bench e2e: placement samples and system call counts (see e2e_place.h). */
#include "e2e_place.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/uf_time.h"
#include "bench.h"
#include "e2e.h"

static const char *const role_names[PL_COUNT] = {
    [PL_FEED] = "feed_thread", [PL_SQPOLL] = "sq_thread", [PL_CONSUMER] = "consumer",
    [PL_SENDER] = "sender",    [PL_RAW] = "raw_receiver", [PL_RAW_SQ] = "raw_sq_thread",
};

const char *e2e_place_name(enum place_role r)
{
	return r < PL_COUNT ? role_names[r] : "?";
}

static int read_small(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -EIO;
	buf[n] = '\0';
	return (int)n;
}

pid_t e2e_find_thread(pid_t pid, const char *prefix)
{
	char path[64], comm[64];
	struct dirent *e;
	pid_t found = -ENOENT;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return -errno;
	while ((e = readdir(d)) && found < 0) {
		char p[300];
		if (e->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "/proc/%d/task/%s/comm", (int)pid, e->d_name);
		if (read_small(p, comm, sizeof(comm)) > 0 && !strncmp(comm, prefix, strlen(prefix)))
			found = (pid_t)atoi(e->d_name);
	}
	closedir(d);
	return found;
}

int e2e_place_sample(struct placement *p, enum place_role r, pid_t pid, pid_t tid)
{
	struct place_one *o = &p->r[r];
	char path[96], buf[4096], *q;
	int cpu = -1;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)pid, (int)tid);
	if (read_small(path, buf, sizeof(buf)) <= 0)
		return -ESRCH;
	q = strrchr(buf, ')'); /* comm may hold spaces: fields count from after it */
	if (!q)
		return -EPROTO;
	q += 2; /* field 3 */
	for (int f = 3; f < 39 && q; f++) {
		q = strchr(q, ' ');
		if (q)
			q++;
	}
	if (!q || sscanf(q, "%d", &cpu) != 1 || cpu < 0)
		return -EPROTO;
	if (cpu < 64)
		o->seen |= 1ull << cpu;
	o->samples++;
	if (o->configured >= 0 && cpu != o->configured)
		o->on_other++;
	if (!o->allowed[0]) {
		snprintf(path, sizeof(path), "/proc/%d/task/%d/status", (int)pid, (int)tid);
		if (read_small(path, buf, sizeof(buf)) > 0 &&
		    (q = strstr(buf, "Cpus_allowed_list:")) != NULL) {
			q += strlen("Cpus_allowed_list:");
			q += strspn(q, " \t");
			snprintf(o->allowed, sizeof(o->allowed), "%.*s", (int)strcspn(q, "\n"), q);
		}
	}
	return 0;
}

void e2e_cpu_list(uint64_t mask, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = '\0';
	for (int c = 0; c < 64 && n < len; c++)
		if (mask & (1ull << c))
			n += (size_t)snprintf(buf + n, len - n, "%s%d", n ? "," : "", c);
	if (!mask)
		snprintf(buf, len, "-");
}

int e2e_sysc_start(struct sysc *s, const char *dir, pid_t tid)
{
	char tids[16], bin[] = "strace";
	char *argv[] = {bin, "-c", "-o", s->out, "-p", tids, NULL};
	uint64_t give_up = uf_now_mono_ns() + 5000000000ull;
	pid_t pid;

	s->strace = -1;
	s->ok = 0;
	s->calls = 0;
	snprintf(s->out, sizeof(s->out), "%s/strace.txt", dir);
	snprintf(s->err, sizeof(s->err), "%s/strace.err", dir);
	snprintf(tids, sizeof(tids), "%d", (int)tid);
	unlink(s->out);
	pid = uf_bench_spawn(argv, NULL, s->err, -1);
	if (pid < 0)
		return pid;
	s->strace = pid;
	for (;;) { /* "strace: Process N attached" on stderr */
		char buf[512];
		int st;
		if (read_small(s->err, buf, sizeof(buf)) > 0 && strstr(buf, "attached"))
			return 0;
		if (waitpid(pid, &st, WNOHANG) == pid) {
			s->strace = -1;
			snprintf(s->note, sizeof(s->note), "%s",
			         WIFEXITED(st) && WEXITSTATUS(st) == 127
			             ? "strace not installed (apt-get install strace)"
			             : "strace could not attach (ptrace refused?)");
			return -ENOTSUP;
		}
		if (uf_now_mono_ns() > give_up) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
			s->strace = -1;
			snprintf(s->note, sizeof(s->note), "strace did not attach within 5 s");
			return -ETIMEDOUT;
		}
		usleep(2000);
	}
}

int e2e_sysc_stop(struct sysc *s)
{
	char buf[8192], *line, *save;
	int st, header;

	if (s->strace <= 0)
		return -ENOENT;
	kill(s->strace, SIGINT);
	st = uf_bench_wait_child(s->strace, 10000);
	s->strace = -1;
	if (st < 0) {
		snprintf(s->note, sizeof(s->note), "strace did not detach within 10 s");
		return -ETIMEDOUT;
	}
	if (read_small(s->out, buf, sizeof(buf)) <= 0) {
		snprintf(s->note, sizeof(s->note), "no strace summary");
		return -EIO;
	}
	header = strstr(buf, "syscall") != NULL;
	/* "100.00 0.000123 1 222 [errors] total": calls is the 4th column */
	s->top[0] = '\0';
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		unsigned long long calls;
		const char *name = strrchr(line, ' ');
		size_t len = strlen(s->top);
		if (sscanf(line, "%*f %*f %*u %llu", &calls) != 1 || !name)
			continue; /* header, rule */
		if (!strcmp(name + 1, "total")) {
			s->calls = calls;
			s->ok = 1;
			return 0;
		}
		/* rows come sorted by time: the first few say what the calls were */
		if (len + 40 < sizeof(s->top))
			snprintf(s->top + len, sizeof(s->top) - len, "%s%s:%llu", len ? " " : "",
			         name + 1, calls);
	}
	/* No system call in the window prints a header and no total line. */
	if (header) {
		s->ok = 1;
		return 0;
	}
	snprintf(s->note, sizeof(s->note), "strace summary without a total line");
	return -EPROTO;
}
