/* The running daemon (UF_BIN_DIR/uringfeed) end to end on loopback multicast: uf-replay sends a
 * generated day with loss while consumer processes read the ring; SIGTERM in the middle of
 * the traffic makes uringfeed exit 0 and leaves every consumer with a clean "closed" state
 * after it drained everything published. SIGHUP re-reads the file: a broken file is refused
 * and the daemon keeps running. */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "test/common/uf_test_daemon.h"
#include "test/common/uf_test_dir.h"
#include "ring/ufconsumer.h"

#define NCONSUMERS 2

static char tmpdir[64];

static json_t *get_status(uint16_t port)
{
	const char *body;
	json_error_t je;

	assert_int_equal(uf_test_http_get(port, "/status", &body), 200);
	json_t *j = json_loads(body, 0, &je);
	if (!j)
		fail_msg("status is not JSON: %s", je.text);
	return j;
}

/* Consumer process: reads until the ring says closed; exit 0 only when it saw "closed" after
 * reading every record published (position == tail), with no lap and no sequence hole. */
static int consumer_main(const char *ring, int idx)
{
	struct uf_consumer_options opt;
	struct uf_consumer_info info;
	uf_consumer_t *c = NULL;
	struct uf_record rec;
	uint64_t seq, expect = 0, n = 0;
	char err[256], tag[16], out[256];
	uint64_t end = uf_test_now_ms() + 30000;
	int r;

	uf_consumer_options_init(&opt);
	snprintf(tag, sizeof(tag), "test%d", idx);
	opt.tag = tag;
	opt.start = UF_CONSUMER_START_OLDEST;
	opt.dir = tmpdir;
	while ((r = uf_consumer_attach(ring, &opt, &c, err, sizeof(err))) != 0) {
		if (uf_test_now_ms() > end)
			return 10;
		usleep(10000);
	}
	for (;;) {
		r = uf_consumer_next(c, &rec, &seq);
		if (r == 0) {
			if (seq != expect)
				return 11; /* hole or repeat */
			expect++;
			n++;
			continue;
		}
		if (r == -EAGAIN) {
			if (uf_test_now_ms() > end)
				return 12; /* never closed */
			uf_consumer_wait(c, 100000000);
			continue;
		}
		break;
	}
	uf_consumer_get_info(c, &info);
	snprintf(out, sizeof(out), "%s/consumer%d", tmpdir, idx);
	FILE *f = fopen(out, "w");
	if (f) {
		fprintf(f, "rc %d records %llu position %llu tail %llu closed %d laps %llu\n", r,
		        (unsigned long long)n, (unsigned long long)info.position,
		        (unsigned long long)info.tail, info.closed, (unsigned long long)info.laps);
		fclose(f);
	}
	uf_consumer_detach(c);
	if (r != -EPIPE)
		return 13;
	if (!info.closed || info.position != info.tail || info.laps)
		return 14;
	return n > 0 ? 0 : 15;
}

static int setup(void **state)
{
	return uf_test_daemon_dir(tmpdir, sizeof(tmpdir), "life");
}

static int teardown(void **state)
{
	return uf_test_rm_tree(tmpdir);
}

#define CONFIG(symbols)                                                                            \
	"{\"status\":{\"listen\":\"127.0.0.1:0\"},\"log\":{\"level\":\"info\"},\"feeds\":[{"       \
	"\"name\":\"life\",\"backend\":\"epoll\",\"cpu\":-1,"                                      \
	"\"lines\":[{\"name\":\"A\",\"group\":\"239.79.0.1\",\"port\":24701,\"interface\":\"127."  \
	"0.0.1\"},"                                                                                \
	"{\"name\":\"B\",\"group\":\"239.79.0.2\",\"port\":24702,\"interface\":\"127.0.0.1\"}],"   \
	"\"recovery\":{\"server\":\"127.0.0.1:24710\"},"                                           \
	"\"ring\":{\"name\":\"uf_life_test\",\"capacity\":1048576},"                               \
	"\"book\":{\"max_orders\":1000000}" symbols "}]}"

static void test_lifecycle_sigterm_during_traffic_leaves_consumers_closed(void **state)
{
	char day[256], buf[512];
	pid_t daemon, replay, cons[NCONSUMERS];

	snprintf(day, sizeof(day), "%s/day.itch", tmpdir);
	uf_test_gen_day(tmpdir, day, "150000", "20", "7");
	uf_test_write_file(tmpdir, "uf.json", CONFIG(""));

	daemon = uf_test_daemon_start(tmpdir, uf_test_bin("uringfeed"), NULL, 0);
	uint16_t port = uf_test_status_port(tmpdir);
	uf_test_wait_log(tmpdir, "running;", 10000);
	for (int i = 0; i < NCONSUMERS; i++) {
		cons[i] = uf_test_fork();
		assert_true(cons[i] >= 0);
		if (cons[i] == 0)
			_exit(consumer_main("uf_life_test", i));
	}
	/* 150000 messages at 50000/s: three seconds of traffic, 2 % loss on each line. */
	const char *rargv[] = {uf_test_bin("uf-replay"),
	                       "--in",
	                       day,
	                       "--a",
	                       "239.79.0.1:24701",
	                       "--b",
	                       "239.79.0.2:24702",
	                       "--interface",
	                       "127.0.0.1",
	                       "--rate",
	                       "50000",
	                       "--drop-a",
	                       "0.02",
	                       "--drop-b",
	                       "0.02",
	                       "--seed",
	                       "5",
	                       "--serve-rerequests",
	                       "24710",
	                       NULL};
	replay = uf_test_spawn(tmpdir, rargv, "replay.out", "replay.err", NULL, 0);

	/* Wait until messages flow (bounded), then stop the daemon in the middle of the day. */
	json_int_t msgs = 0;
	uint64_t end = uf_test_now_ms() + 10000;
	while (msgs < 20000 && uf_test_now_ms() < end) {
		json_t *j = get_status(port);
		json_t *f = json_array_get(json_object_get(j, "feeds"), 0);
		msgs = json_integer_value(json_object_get(f, "messages"));
		assert_string_equal(json_string_value(json_object_get(f, "state")), "running");
		/* the pages its books got, as the feed measured them at start */
		const char *mem = json_string_value(json_object_get(f, "book_memory"));
		assert_non_null(mem);
		assert_true(strcmp(mem, "hugetlb") == 0 || strcmp(mem, "thp") == 0 ||
		            strcmp(mem, "4k") == 0);
		json_decref(j);
		usleep(50000);
	}
	if (msgs < 20000)
		fail_msg("traffic never reached the daemon (%lld messages)", (long long)msgs);
	/* The status endpoint lists both consumer processes on the ring, with their lag. */
	int seen = 0;
	end = uf_test_now_ms() + 5000;
	while (seen != 3 && uf_test_now_ms() < end) {
		json_t *j = get_status(port);
		json_t *ring =
		    json_object_get(json_array_get(json_object_get(j, "feeds"), 0), "ring");
		json_t *cl = json_object_get(ring, "consumers");
		assert_string_equal(json_string_value(json_object_get(ring, "name")),
		                    "uf_life_test");
		assert_string_equal(json_string_value(json_object_get(ring, "state")), "open");
		assert_true(json_integer_value(json_object_get(ring, "sequence")) > 0);
		seen = 0;
		for (size_t k = 0; k < json_array_size(cl); k++) {
			json_t *c = json_array_get(cl, k);
			json_int_t pid = json_integer_value(json_object_get(c, "pid"));
			assert_non_null(json_object_get(c, "lag"));
			for (int i = 0; i < NCONSUMERS; i++)
				if (pid == cons[i])
					seen |= 1 << i;
		}
		json_decref(j);
		if (seen != 3)
			usleep(50000);
	}
	assert_int_equal(seen, 3);
	/* The main loop reports each consumer that attached (an event line, not a feed-thread
	 * log), and the session the traffic started. */
	for (int i = 0; i < NCONSUMERS; i++) {
		char want[96];
		snprintf(want, sizeof(want), "ring uf_life_test: consumer test%d (pid %d, slot ", i,
		         (int)cons[i]);
		uf_test_wait_log(tmpdir, want, 5000);
	}
	uf_test_wait_log(tmpdir, "feed life: session ", 5000);
	assert_int_equal(kill(replay, 0), 0); /* still sending: SIGTERM lands mid-traffic */
	print_message("SIGTERM after %lld messages\n", (long long)msgs);
	assert_int_equal(kill(daemon, SIGTERM), 0);
	int st = uf_test_wait_exit(daemon, 15000, "uringfeed after SIGTERM");
	uf_test_read_file(tmpdir, "daemon.err", buf, sizeof(buf));
	if (st != 0)
		fail_msg("uringfeed exited %d after SIGTERM; log starts: %s", st, buf);
	uf_test_wait_log(tmpdir, "stopped cleanly", 1000);

	for (int i = 0; i < NCONSUMERS; i++) {
		char name[32], line[256];
		int cst = uf_test_wait_exit(cons[i], 15000, "consumer");
		snprintf(name, sizeof(name), "consumer%d", i);
		uf_test_read_file(tmpdir, name, line, sizeof(line));
		if (cst != 0)
			fail_msg("consumer %d exited %d (%s)", i, cst, line);
		print_message("consumer %d: %s", i, line);
		assert_non_null(strstr(line, "rc -32 ")); /* -EPIPE: closed and drained */
		assert_non_null(strstr(line, "closed 1"));
	}
	kill(replay, SIGTERM);
	uf_test_wait_exit(replay, 10000, "uf-replay");

	/* The ring stays, marked closed: a consumer that attaches now learns it at once. */
	struct uf_consumer_options opt;
	struct uf_consumer_info info;
	uf_consumer_t *c;
	struct uf_record rec;
	char err[256];
	uf_consumer_options_init(&opt);
	opt.dir = tmpdir;
	if (uf_consumer_attach("uf_life_test", &opt, &c, err, sizeof(err)) != 0)
		fail_msg("late attach: %s", err);
	uf_consumer_get_info(c, &info);
	assert_int_equal(info.closed, 1);
	assert_int_equal(uf_consumer_next(c, &rec, NULL), -EPIPE);
	uf_consumer_detach(c);
}

static void test_lifecycle_sighup_rereads_the_file_and_survives_a_bad_one(void **state)
{
	pid_t daemon;

	uf_test_write_file(tmpdir, "uf.json", CONFIG(",\"symbols\":[\"AAPL\"]"));
	daemon = uf_test_daemon_start(tmpdir, uf_test_bin("uringfeed"), NULL, 0);
	uint16_t port = uf_test_status_port(tmpdir);
	uf_test_wait_log(tmpdir, "running;", 10000);

	/* A broken file: refused with its position, the daemon keeps running. */
	uf_test_write_file(tmpdir, "uf.json", "{\"feeds\": [ {\"name\": \"life\" ");
	assert_int_equal(kill(daemon, SIGHUP), 0);
	uf_test_wait_log(tmpdir, "keeping the running configuration", 5000);
	uf_test_wait_log(tmpdir, "uf.json:1:", 100);
	json_t *j = get_status(port);
	assert_int_equal(json_integer_value(json_object_get(j, "reloads")), 0);
	json_decref(j);

	/* A good file with another filter: re-read, counted, and the change is reported. */
	uf_test_write_file(tmpdir, "uf.json", CONFIG(",\"symbols\":[\"AAPL\",\"MSFT\"]"));
	assert_int_equal(kill(daemon, SIGHUP), 0);
	uf_test_wait_log(tmpdir, "reload: done", 5000);
	uf_test_wait_log(tmpdir, "feed \"life\": symbol filter now 2 symbols", 100);
	j = get_status(port);
	assert_int_equal(json_integer_value(json_object_get(j, "reloads")), 1);
	json_decref(j);

	assert_int_equal(kill(daemon, SIGINT), 0);
	assert_int_equal(uf_test_wait_exit(daemon, 15000, "uringfeed after SIGINT"), 0);
	uf_test_wait_log(tmpdir, "received SIGINT", 100);
}

/* A runtime failure after validation (the status port is taken) exits 1, says why, and
 * still closes the ring it had created. */
static void test_lifecycle_taken_status_port_exits_1_and_closes_the_ring(void **state)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	socklen_t alen = sizeof(a);
	char json[2048], want[96];
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(fd, 1), 0);
	getsockname(fd, (struct sockaddr *)&a, &alen);
	snprintf(json, sizeof(json), "%s", CONFIG(""));
	char *p = strstr(json, "127.0.0.1:0");
	assert_non_null(p);
	char port[8];
	snprintf(port, sizeof(port), "%u", ntohs(a.sin_port));
	memmove(p + 10 + strlen(port), p + 11, strlen(p + 11) + 1);
	memcpy(p + 10, port, strlen(port));
	uf_test_write_file(tmpdir, "uf.json", json);

	assert_int_equal(
	    uf_test_wait_exit(uf_test_daemon_start(tmpdir, uf_test_bin("uringfeed"), NULL, 0),
	                      15000, "uringfeed"),
	    1);
	snprintf(want, sizeof(want), "cannot listen on 127.0.0.1:%s: Address already in use", port);
	uf_test_wait_log(tmpdir, want, 100);
	uf_test_wait_log(tmpdir, "stopped after a failure", 100);
	close(fd);

	struct uf_consumer_options opt;
	struct uf_consumer_info info;
	uf_consumer_t *c;
	char err[256];
	uf_consumer_options_init(&opt);
	opt.dir = tmpdir;
	if (uf_consumer_attach("uf_life_test", &opt, &c, err, sizeof(err)) != 0)
		fail_msg("attach after the failed start: %s", err);
	uf_consumer_get_info(c, &info);
	assert_int_equal(info.closed, 1);
	uf_consumer_detach(c);
}

/* Cpus_allowed_list of every thread of `pid`, as "name=list;" pairs in `out`. */
static void thread_cpus(pid_t pid, char *out, size_t len)
{
	char dir[64], path[384], comm[64], line[256];
	struct dirent *e;
	size_t off = 0;
	DIR *d;

	snprintf(dir, sizeof(dir), "/proc/%d/task", (int)pid);
	out[0] = '\0';
	d = opendir(dir);
	assert_non_null(d);
	while ((e = readdir(d)) && off < len) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s/comm", dir, e->d_name);
		FILE *f = fopen(path, "r");
		if (!f)
			continue; /* the thread just exited */
		if (!fgets(comm, sizeof(comm), f))
			comm[0] = '\0';
		fclose(f);
		comm[strcspn(comm, "\n")] = '\0';
		snprintf(path, sizeof(path), "%s/%s/status", dir, e->d_name);
		f = fopen(path, "r");
		while (f && fgets(line, sizeof(line), f))
			if (!strncmp(line, "Cpus_allowed_list:", 18)) {
				line[strcspn(line, "\n")] = '\0';
				off += (size_t)snprintf(out + off, len - off, "%s=%s;", comm,
				                        line + 18 + strspn(line + 18, " \t"));
			}
		if (f)
			fclose(f);
	}
	closedir(d);
}

/* Whether the Cpus_allowed_list of thread `name` in `cpus` (see thread_cpus) holds `cpu`;
 * -1 when there is no such thread. */
static int thread_has_cpu(const char *cpus, const char *name, int cpu)
{
	char key[64];
	const char *p;

	snprintf(key, sizeof(key), "%s=", name);
	p = strstr(cpus, key);
	if (!p)
		return -1;
	p += strlen(key);
	while (*p && *p != ';') {
		char *e;
		long lo = strtol(p, &e, 10), hi = lo;
		if (*e == '-')
			hi = strtol(e + 1, &e, 10);
		if (cpu >= lo && cpu <= hi)
			return 1;
		p = *e == ',' ? e + 1 : e;
	}
	return 0;
}

/* The feed thread and its SQ poll thread run on the configured CPU; the main and HTTP
 * threads stay off it. Needs two CPUs (fails, saying so, on one). */
static void test_lifecycle_threads_run_where_the_config_says(void **state)
{
	char json[2048], cpus[1024];
	pid_t daemon;

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		fail_msg("this test needs 2 CPUs to tell feed CPUs from control CPUs");
	snprintf(json, sizeof(json), "%s", CONFIG(""));
	char *p = strstr(json, "\"backend\":\"epoll\",\"cpu\":-1,");
	assert_non_null(p);
	const char *with = "\"backend\":\"io_uring\",\"cpu\":1,\"sqpoll_cpu\":1,";
	size_t oldlen = strlen("\"backend\":\"epoll\",\"cpu\":-1,");
	memmove(p + strlen(with), p + oldlen, strlen(p + oldlen) + 1);
	memcpy(p, with, strlen(with));
	uf_test_write_file(tmpdir, "uf.json", json);

	daemon = uf_test_daemon_start(tmpdir, uf_test_bin("uringfeed"), NULL, 0);
	/* "ready:" once the feed thread made a pass of its loop: it pinned itself and set up
	 * its receive back end (the SQ thread) before that; "running;" only says it was made */
	uf_test_wait_log(tmpdir, "ready:", 10000);
	thread_cpus(daemon, cpus, sizeof(cpus));
	print_message("threads: %s\n", cpus);
	assert_int_equal(thread_has_cpu(cpus, "uringfeed", 1), 0);  /* main thread: off CPU 1 */
	assert_int_equal(thread_has_cpu(cpus, "MHD-single", 1), 0); /* HTTP thread: off CPU 1 */
	assert_int_equal(thread_has_cpu(cpus, "uf-life", 1), 1);    /* feed thread: on it ... */
	assert_int_equal(thread_has_cpu(cpus, "uf-life", 0), 0);    /* ... and only there */
	char *sqp = strstr(cpus, "iou-sqp-");
	if (!sqp)
		fail_msg("no SQ poll thread (did the kernel refuse SQPOLL?): %s", cpus);
	assert_non_null(strstr(sqp, "=1;")); /* SQ poll thread pinned to sqpoll_cpu */
	assert_int_equal(kill(daemon, SIGTERM), 0);
	assert_int_equal(uf_test_wait_exit(daemon, 15000, "uringfeed after SIGTERM"), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(
	        test_lifecycle_sigterm_during_traffic_leaves_consumers_closed, setup, teardown),
	    cmocka_unit_test_setup_teardown(
	        test_lifecycle_sighup_rereads_the_file_and_survives_a_bad_one, setup, teardown),
	    cmocka_unit_test_setup_teardown(
	        test_lifecycle_taken_status_port_exits_1_and_closes_the_ring, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_lifecycle_threads_run_where_the_config_says, setup,
	                                    teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
