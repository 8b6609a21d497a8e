/* uf-bench fanout: what a NATS JetStream hop costs next to the local ring, in the same run.
 *
 * One producer publishes records into a ring; in this process a local consumer thread reads
 * the ring and a remote consumer thread reads the same ring through uf-bridge and NATS
 * (libufconsumer "nats://"). Each record carries its publish time in rx_ts (CLOCK_REALTIME;
 * in production rx_ts is the kernel's receive time of the packet, so the same figure is then
 * wire-to-consumer). Two phases:
 *   latency     records paced at --rate per second; both consumers record now - rx_ts
 *   throughput  --records records as fast as the producer can; each consumer's rate is
 *               records / (its last arrival - the first publish)
 * Without --nats it starts its own nats-server (JetStream, loopback, free ports, store in a
 * temp dir): one, or with --servers 3 a three-node cluster whose stream and bucket have 3
 * replicas, and stops them at the end. uf-bridge is taken from this executable's folder and
 * runs with --window and --batch as given (its defaults otherwise), so the same command
 * with --window 1 is the one-message-in-flight baseline.
 * Figures measure this machine as it is at the time: nothing else should be running. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "common/uf_parse.h"
#include "common/uf_schedstat.h"
#include "common/uf_time.h"

#ifndef UF_BENCH_NATS
int uf_bench_fanout(int argc, char **argv)
{
	fprintf(stderr, "uf-bench fanout: built without NATS (configure with -DUF_NATS=ON after "
	                "apt-get install libnats-dev nats-server)\n");
	return 2;
}
#else

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "ring/uf_ring.h"
#include "ring/ufconsumer.h"

#define KIND_LAT  1 /* latency-phase record (kind field of the bench's records) */
#define KIND_TPUT 2 /* throughput-phase record */

struct side {
	const char *label;     /* "local ring" / "NATS (uf-bridge)" */
	char name[400];        /* attach name */
	uint64_t *lat;         /* latency samples (ns) */
	uint64_t nlat;         /* samples stored */
	uint64_t cap;          /* samples allocated */
	uint64_t tput_recv;    /* throughput records received */
	uint64_t tput_last_ns; /* CLOCK_REALTIME of the last one */
	uint64_t lost;         /* records lost to laps */
	volatile int ready;    /* attached */
	volatile int stop;     /* asked to stop */
	int err;               /* attach failed */
	uint64_t want;         /* throughput records to wait for */
	volatile pid_t tid;    /* its thread (CPU time per record) */
};

/* CPU time (ns) thread `tid` of process `pid` has run (uf_schedstat_read); 0 if it is gone. */
static uint64_t task_cpu_ns(pid_t pid, pid_t tid)
{
	uint64_t ns = 0;
	return uf_schedstat_read(pid, tid, &ns, NULL) == 0 ? ns : 0;
}

/* CPU time (ns) of every thread of process `pid` (threads that exited are not counted:
 * none of the measured processes ends a thread during the throughput phase). */
static uint64_t proc_cpu_ns(pid_t pid)
{
	char path[64];
	struct dirent *e;
	uint64_t sum = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return 0;
	while ((e = readdir(d)) != NULL)
		if (e->d_name[0] != '.')
			sum += task_cpu_ns(pid, (pid_t)atoi(e->d_name));
	closedir(d);
	return sum;
}

/* Where the throughput phase's CPU went, per process of the hop (CPU_* order). */
enum { CPU_PRODUCER, CPU_LOCAL, CPU_REMOTE_APP, CPU_REMOTE_RX, CPU_BRIDGE, CPU_SERVERS, CPU_N };

static void cpu_sample(uint64_t out[CPU_N], const struct side *sides, pid_t br,
                       const pid_t servers[3])
{
	pid_t me = getpid();
	uint64_t all = proc_cpu_ns(me);

	out[CPU_PRODUCER] = task_cpu_ns(me, me);
	out[CPU_LOCAL] = task_cpu_ns(me, sides[0].tid);
	out[CPU_REMOTE_APP] = task_cpu_ns(me, sides[1].tid);
	/* the rest of this process: libufconsumer's receiver and the NATS client's threads */
	out[CPU_REMOTE_RX] = all - out[CPU_PRODUCER] - out[CPU_LOCAL] - out[CPU_REMOTE_APP];
	out[CPU_BRIDGE] = br > 0 ? proc_cpu_ns(br) : 0;
	out[CPU_SERVERS] = 0;
	for (int i = 0; i < 3; i++)
		if (servers[i] > 0)
			out[CPU_SERVERS] += proc_cpu_ns(servers[i]);
}

static void *consume(void *arg)
{
	struct side *s = arg;
	struct uf_consumer_options co;
	uf_consumer_t *c = NULL;
	struct uf_record recs[256];
	char err[512];

	uf_consumer_options_init(&co);
	co.tag = "uf-bench";
	if (uf_consumer_attach(s->name, &co, &c, err, sizeof(err)) < 0) {
		fprintf(stderr, "uf-bench fanout: %s\n", err);
		s->err = 1;
		s->ready = 1;
		return NULL;
	}
	s->tid = gettid();
	s->ready = 1;
	while (!s->stop) {
		int n = uf_consumer_read(c, recs, 256, NULL);
		if (n > 0) {
			uint64_t now = uf_now_realtime_ns();
			for (int i = 0; i < n; i++) {
				if (recs[i].kind == KIND_LAT && s->nlat < s->cap)
					s->lat[s->nlat++] = now - recs[i].rx_ts;
				else if (recs[i].kind == KIND_TPUT)
					s->tput_recv++;
			}
			if (s->tput_recv)
				s->tput_last_ns = now;
			continue;
		}
		if (n == -EOVERFLOW) {
			struct uf_consumer_lap lap;
			uf_consumer_last_lap(c, &lap);
			s->lost += lap.lost;
			continue;
		}
		if (n == -EPIPE)
			break;
		uf_consumer_wait(c, 50000000);
	}
	uf_consumer_detach(c);
	return NULL;
}

static int free_port(void)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port = -1;

	if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&a, &len) == 0)
		port = ntohs(a.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

static int port_open(int port)
{
	struct sockaddr_in a = {.sin_family = AF_INET,
	                        .sin_port = htons((uint16_t)port),
	                        .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	int fd = socket(AF_INET, SOCK_STREAM, 0), ok;

	ok = fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
	if (fd >= 0)
		close(fd);
	return ok;
}

/* The value of "key": in the last status line of the bridge's log (its exit status), or -1. */
static double status_value(const char *text, const char *key)
{
	char pat[40];
	const char *p, *last = NULL;

	snprintf(pat, sizeof(pat), "\"%s\":", key);
	for (p = strstr(text, pat); p; p = strstr(p + 1, pat))
		last = p;
	return last ? strtod(last + strlen(pat), NULL) : -1;
}

/* What the bridge sent, from its exit status line: messages and bytes per record tell
 * whether the hop's cost goes by messages or by bytes. */
static void print_bridge_totals(const char *log_path)
{
	static char text[1 << 16];
	FILE *f = fopen(log_path, "r");
	size_t n;
	double msgs, recs, bytes;

	if (!f)
		return;
	if (fseek(f, 0, SEEK_END) == 0 && ftell(f) > (long)sizeof(text) - 1)
		(void)fseek(f, -(long)(sizeof(text) - 1), SEEK_END);
	else
		rewind(f);
	n = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[n] = '\0';
	msgs = status_value(text, "messages");
	recs = status_value(text, "published");
	bytes = status_value(text, "bytes");
	if (msgs <= 0 || recs <= 0 || bytes < 0)
		return;
	printf("uf-bridge sent %.0f records in %.0f stream messages (%.1f records a message, "
	       "%.1f bytes a record on the wire), window full %.0f times, held %.0f times\n",
	       recs, msgs, recs / msgs, bytes / recs, status_value(text, "window_full"),
	       status_value(text, "held"));
}

static void print_row(const char *label, struct side *s, uint64_t records, uint64_t t0)
{
	struct uf_bench_pct p;
	double secs = s->tput_last_ns > t0 ? (double)(s->tput_last_ns - t0) / 1e9 : 0;

	uf_bench_percentiles(s->lat, s->nlat, &p);
	printf("%-18s %9" PRIu64 " %12.0f %8" PRIu64 " | %7" PRIu64 " %9.1f %9.1f %9.1f %9.1f\n",
	       label, s->tput_recv, secs > 0 ? (double)s->tput_recv / secs : 0.0, s->lost, p.n,
	       (double)p.p50 / 1e3, (double)p.p99 / 1e3, (double)p.p999 / 1e3, (double)p.max / 1e3);
	if (s->tput_recv < records)
		printf("%-18s (received %" PRIu64 " of %" PRIu64 " throughput records)\n", "",
		       s->tput_recv, records);
}

int uf_bench_fanout(int argc, char **argv)
{
	static const struct option lo[] = {
	    {"nats", required_argument, 0, 'n'},    {"records", required_argument, 0, 'r'},
	    {"rate", required_argument, 0, 'R'},    {"seconds", required_argument, 0, 's'},
	    {"servers", required_argument, 0, 'S'}, {"window", required_argument, 0, 'w'},
	    {"batch", required_argument, 0, 'b'},   {"eager", required_argument, 0, 'e'},
	    {"file", no_argument, 0, 'f'},          {"compact", no_argument, 0, 'c'},
	    {"help", no_argument, 0, 'h'},          {0, 0, 0, 0}};
	const char *urls = NULL;
	uint64_t records = 200000, rate = 20000, seconds = 2, t0, end, nservers = 1;
	const char *window = NULL, *batch = NULL; /* uf-bridge's defaults unless given */
	const char *eager = NULL;                 /* the same */
	int file_store = 0;                       /* --file: the stream on disk, not in memory */
	int compact = 0;                          /* --compact: the bridge's compact records */
	pid_t servers[3] = {-1, -1, -1};
	char tmp[] = "/tmp/uf-bench-fanout.XXXXXX", urlbuf[128], ring[32], exe[PATH_MAX],
	     bridge[PATH_MAX + 16], log[PATH_MAX];
	struct side sides[2];
	pthread_t thr[2];
	struct uf_ring_options ro;
	struct uf_ring *r = NULL;
	char err[256];
	pid_t br = -1;
	uint64_t cpu0[CPU_N], cpu1[CPU_N]; /* CPU time per process around the throughput phase */
	uint64_t cpu2[CPU_N], phase_ns;    /* and after as long again, idle */
	int opt, rc = 1, bad_count = 0;    /* bad_count: --records or --rate not a count in range */
	ssize_t el;

	while ((opt = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (opt) {
		case 'n':
			urls = optarg;
			break;
		case 'r':
			bad_count |= uf_parse_u64(optarg, 1, 700000, &records) < 0;
			break;
		case 'R':
			bad_count |= uf_parse_u64(optarg, 1, UINT64_MAX, &rate) < 0;
			break;
		case 's':
			if (uf_bench_parse_u64("fanout", "--seconds", optarg, 0, 86400, &seconds))
				return 2;
			break;
		case 'S':
			if (uf_bench_parse_u64("fanout", "--servers", optarg, 1, 3, &nservers) ||
			    nservers == 2) {
				fprintf(stderr, "uf-bench fanout: --servers 1 or 3\n");
				return 2;
			}
			break;
		case 'w':
			window = optarg; /* checked by uf-bridge */
			break;
		case 'b':
			batch = optarg;
			break;
		case 'e':
			eager = optarg; /* checked by uf-bridge */
			break;
		case 'f':
			file_store = 1;
			break;
		case 'c':
			compact = 1;
			break;
		case 'h':
			printf("usage: uf-bench fanout [--nats URLS | --servers 1|3] [--records N "
			       "(200000)] [--rate R (20000/s)] [--seconds S (2, latency phase)] "
			       "[--window N] [--batch N] [--eager N] [--file] [--compact]\n");
			return 0;
		default:
			return 2;
		}
	}
	if (bad_count) {
		fprintf(stderr, "uf-bench fanout: --records 1..700000 (one ring holds them), "
		                "--rate > 0\n");
		return 2;
	}
	if (!mkdtemp(tmp)) {
		perror("uf-bench fanout: mkdtemp");
		return 1;
	}
	el = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (el <= 0) {
		perror("uf-bench fanout: /proc/self/exe");
		return 1;
	}
	exe[el] = '\0';
	*strrchr(exe, '/') = '\0';
	snprintf(bridge, sizeof(bridge), "%s/uf-bridge", exe);
	if (!urls) { /* our own servers: one, or a cluster of 3 */
		int port[3], cport[3];
		char routes[200] = "";
		urlbuf[0] = '\0';
		for (uint64_t i = 0; i < nservers; i++) {
			size_t l = strlen(routes);
			port[i] = free_port();
			cport[i] = free_port();
			snprintf(routes + l, sizeof(routes) - l, "%snats://127.0.0.1:%d",
			         i ? "," : "", cport[i]);
			l = strlen(urlbuf);
			snprintf(urlbuf + l, sizeof(urlbuf) - l, "%snats://127.0.0.1:%d",
			         i ? "," : "", port[i]);
		}
		for (uint64_t i = 0; i < nservers; i++) {
			char p[16], sd[PATH_MAX], name[16], cl[64];
			snprintf(p, sizeof(p), "%d", port[i]);
			snprintf(sd, sizeof(sd), "%s/js%d", tmp, (int)i);
			snprintf(name, sizeof(name), "ufb%d", (int)i);
			snprintf(cl, sizeof(cl), "nats://127.0.0.1:%d", cport[i]);
			snprintf(log, sizeof(log), "%s/nats-server%d.log", tmp, (int)i);
			char *nargv[] = {"nats-server",
			                 "-a",
			                 "127.0.0.1",
			                 "-p",
			                 p,
			                 "-js",
			                 "-sd",
			                 sd,
			                 "-n",
			                 name,
			                 "--cluster_name",
			                 "ufb",
			                 "--cluster",
			                 cl,
			                 "--routes",
			                 routes,
			                 NULL};
			if (nservers == 1)
				nargv[10] = NULL; /* no cluster */
			servers[i] = uf_bench_spawn(nargv, "/dev/null", log, -1);
		}
		for (uint64_t i = 0; i < nservers; i++) {
			for (int k = 0; k < 500 && !port_open(port[i]); k++)
				usleep(20000);
			if (!port_open(port[i])) {
				fprintf(stderr,
				        "uf-bench fanout: nats-server did not start (see %s)\n",
				        tmp);
				goto out;
			}
		}
		urls = urlbuf;
	}
	snprintf(ring, sizeof(ring), "ufbfan%d", (int)getpid());
	setenv("UF_RING_DIR", tmp, 1); /* ring files in the temp dir, with the server's store */
	uf_ring_options_init(&ro);
	ro.capacity = 1u << 20;
	ro.numa_node = UF_RING_NUMA_NONE;
	if (uf_ring_create(ring, &ro, &r, err, sizeof(err)) < 0) {
		fprintf(stderr, "uf-bench fanout: %s\n", err);
		goto out;
	}
	snprintf(log, sizeof(log), "%s/uf-bridge.log", tmp);
	char *bargv[20] = {bridge, "--ring", ring, "--nats", (char *)urls, "--exit-on-close"};
	int na = 6;
	if (!file_store)
		bargv[na++] = "--memory";
	if (nservers == 3) {
		bargv[na++] = "--replicas";
		bargv[na++] = "3";
	}
	if (window) {
		bargv[na++] = "--window";
		bargv[na++] = (char *)window;
	}
	if (batch) {
		bargv[na++] = "--batch";
		bargv[na++] = (char *)batch;
	}
	if (eager) {
		bargv[na++] = "--eager";
		bargv[na++] = (char *)eager;
	}
	if (compact)
		bargv[na++] = "--compact";
	bargv[na] = NULL;
	br = uf_bench_spawn(bargv, "/dev/null", log, -1);
	memset(sides, 0, sizeof(sides));
	sides[0].label = "local ring";
	snprintf(sides[0].name, sizeof(sides[0].name), "%s", ring);
	sides[1].label = "NATS (uf-bridge)";
	snprintf(sides[1].name, sizeof(sides[1].name), "%s/%s", urls, ring);
	for (int i = 0; i < 2; i++) {
		sides[i].cap = rate * seconds + 16;
		sides[i].lat = calloc(sides[i].cap, sizeof(uint64_t));
		if (!sides[i].lat)
			goto out;
	}
	/* local first; the remote one once the bridge has written its first commit */
	pthread_create(&thr[0], NULL, consume, &sides[0]);
	for (int tries = 0; tries < 100; tries++) {
		sides[1].ready = sides[1].err = 0;
		pthread_create(&thr[1], NULL, consume, &sides[1]);
		while (!sides[1].ready)
			usleep(1000);
		if (!sides[1].err)
			break;
		pthread_join(thr[1], NULL);
		usleep(100000);
	}
	while (!sides[0].ready)
		usleep(1000);
	if (sides[0].err || sides[1].err)
		goto out_threads;
	/* latency phase: one record every 1/rate s, rx_ts = publish time */
	t0 = uf_now_mono_ns();
	for (uint64_t k = 0; k < rate * seconds; k++) {
		struct uf_record rec = {.kind = KIND_LAT, .feed_seq = k + 1};
		uint64_t due = t0 + k * 1000000000ull / rate;
		while (uf_now_mono_ns() < due)
			;
		rec.rx_ts = uf_now_realtime_ns();
		uf_ring_publish(r, &rec, 1);
	}
	usleep(500000); /* the last latency records arrive */
	/* throughput phase: as fast as the producer goes, 16 records a publish */
	cpu_sample(cpu0, sides, br, servers);
	phase_ns = uf_now_mono_ns();
	t0 = uf_now_realtime_ns();
	for (uint64_t k = 0; k < records; k += 16) {
		struct uf_record b[16];
		size_t n = records - k < 16 ? (size_t)(records - k) : 16;
		uint64_t now = uf_now_realtime_ns();
		for (size_t i = 0; i < n; i++) {
			memset(&b[i], 0, sizeof(b[i]));
			b[i].kind = KIND_TPUT;
			b[i].rx_ts = now;
			b[i].feed_seq = k + i + 1;
		}
		uf_ring_publish(r, b, n);
	}
	end = uf_now_mono_ns() + 60000000000ull;
	/* every record arrived or was reported lost (a consumer lapped: waiting the whole
	 * bound then would count a minute of idle CPU as the phase's) */
	while ((sides[0].tput_recv + sides[0].lost < records ||
	        sides[1].tput_recv + sides[1].lost < records) &&
	       uf_now_mono_ns() < end)
		usleep(10000);
	cpu_sample(cpu1, sides, br, servers);
	/* the same time again with nothing published: what the processes burn idle (timers,
	 * heartbeats, the Go runtime, waits that poll) is not a cost per record */
	phase_ns = uf_now_mono_ns() - phase_ns;
	usleep((useconds_t)((phase_ns < 2000000000ull ? phase_ns : 2000000000ull) / 1000));
	cpu_sample(cpu2, sides, br, servers);
	printf("uf-bench fanout: ring %s, NATS %s (%s storage, %d replica%s), bridge window %s, "
	       "batch %s, eager %s%s, latency %" PRIu64 " records at %" PRIu64
	       "/s, throughput %" PRIu64 " records\n",
	       ring, urls, file_store ? "file" : "memory", nservers == 3 ? 3 : 1,
	       nservers == 3 ? "s" : "", window ? window : "default", batch ? batch : "default",
	       eager ? eager : "default", compact ? ", compact records" : "", rate * seconds, rate,
	       records);
	printf("%-18s %9s %12s %8s | %7s %9s %9s %9s %9s\n", "consumer", "records", "records/s",
	       "lost", "samples", "p50 us", "p99 us", "p99.9 us", "max us");
	print_row(sides[0].label, &sides[0], records, t0);
	print_row(sides[1].label, &sides[1], records, t0);
	/* the CPU budget of the hop: what each process spent per record while the throughput
	 * records went through (all of it shares the machine's CPUs) */
	{
		static const char *const what[CPU_N] = {
		    "producer",  "local consumer", "remote app thread", "remote receiver+client",
		    "uf-bridge", "nats-server(s)"};
		uint64_t total = 0;
		printf("CPU ns/record, throughput phase:");
		for (int i = 0; i < CPU_N; i++) {
			uint64_t d = cpu1[i] > cpu0[i] ? cpu1[i] - cpu0[i] : 0;
			total += d;
			printf(" %s %.1f,", what[i], (double)d / (double)records);
		}
		printf(" total %.1f\n", (double)total / (double)records);
		total = 0;
		printf("CPU ns/record-time idle right after (same duration, nothing published):");
		for (int i = 0; i < CPU_N; i++) {
			uint64_t d = cpu2[i] > cpu1[i] ? cpu2[i] - cpu1[i] : 0;
			total += d;
			printf(" %s %.1f,", what[i], (double)d / (double)records);
		}
		printf(" total %.1f\n", (double)total / (double)records);
	}
	printf("(%d CPUs, load average %.2f; producer-publish to consumer, CLOCK_REALTIME; the "
	       "bridge keeps up to --window messages in flight)\n",
	       uf_bench_ncpus(), uf_bench_loadavg());
	rc = 0;
out_threads:
	uf_ring_close(r); /* consumers drain and see the close */
	r = NULL;
	sides[0].stop = sides[1].stop = 1;
	pthread_join(thr[0], NULL);
	pthread_join(thr[1], NULL);
out:
	if (r)
		uf_ring_close(r);
	if (br > 0) {
		kill(br, SIGTERM); /* its status line at exit is in its log */
		uf_bench_wait_child(br, 5000);
		if (rc == 0)
			print_bridge_totals(log);
	}
	for (int i = 0; i < 3; i++) {
		if (servers[i] > 0) {
			kill(servers[i], SIGTERM);
			uf_bench_wait_child(servers[i], 5000);
		}
	}
	for (int i = 0; i < 2; i++)
		free(sides[i].lat);
	uf_ring_unlink(ring, tmp);
	{
		char cmd[PATH_MAX + 16];
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
		if (system(cmd) != 0)
			fprintf(stderr, "uf-bench fanout: could not remove %s\n", tmp);
	}
	return rc;
}
#endif              /* UF_BENCH_NATS */
