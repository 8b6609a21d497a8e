/* Not a test: how many messages per second the capture's writer keeps up with (issue 25,
 * docs/capture.md), with no network and no replayer in the way.
 *
 * The calling thread plays the feed thread: it hands datagrams to uf_capture_datagram() paced
 * at --rate messages/s (each datagram carries --per-dgram messages of --msg-bytes bytes, on two
 * interfaces alternately like an A and a B line: every message counted once per line, as the
 * feed sees them), for --seconds; the capture's own writer thread writes them with io_uring
 * into --dir. It prints one JSON line per rate: offered and achieved msg/s, MB/s written, and
 * the drops by reason, then doubles the rate until the writer drops or the pacing thread
 * cannot offer the rate any more.
 *
 *   capture_writer_bench [--dir /dev/shm/ufcw] [--rate 500000] [--max-rate 16000000]
 *                        [--per-dgram 20] [--msg-bytes 34] [--seconds 3] [--buffer-mb 64]
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <dirent.h>

#include "common/uf_time.h"
#include "feed/capture.h"

static void clean_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char path[600];
	while (d && (e = readdir(d)))
		if (e->d_name[0] != '.') {
			snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
			unlink(path);
		}
	if (d)
		closedir(d);
}

/* One paced run at `rate` msg/s. Returns 1 when the writer dropped anything. */
static int run(const char *dir, uint64_t rate, uint32_t per, uint32_t msg_bytes, double seconds,
               uint64_t buffer_mb, int *offered_short)
{
	struct uf_capture_params p;
	struct uf_feed_stats st;
	struct uf_capture c;
	char err[256] = "";
	static uint8_t dgram[65536];
	uint32_t len = 20 + per * (2 + msg_bytes); /* a MoldUDP64 header, then blocks */

	memset(&p, 0, sizeof(p));
	memset(&st, 0, sizeof(st));
	memset(&c, 0, sizeof(c));
	snprintf(p.feed, sizeof(p.feed), "bench");
	snprintf(p.dir, sizeof(p.dir), "%s", dir);
	p.rotate_bytes = 1ull << 30;
	p.buffer_bytes = buffer_mb << 20;
	p.nif = 2;
	snprintf(p.ifs[0].name, sizeof(p.ifs[0].name), "A");
	snprintf(p.ifs[1].name, sizeof(p.ifs[1].name), "B");
	for (uint32_t i = 0; i < len && i < sizeof(dgram); i++)
		dgram[i] = (uint8_t)(i * 7);
	clean_dir(dir);
	if (uf_capture_open(&c, &p, &st, err, sizeof(err)) < 0) {
		fprintf(stderr, "capture_writer_bench: %s\n", err);
		exit(2);
	}
	/* Both lines carry every message: 2 datagrams per `per` messages of the stream. */
	uint64_t total_dg = (uint64_t)((double)rate * seconds / per) * 2;
	uint64_t ns_per_dg = (uint64_t)(1e9 * per / (double)rate / 2);
	uint64_t t0 = uf_now_mono_ns(), late = 0;
	for (uint64_t i = 0; i < total_dg; i++) {
		uint64_t due = t0 + i * ns_per_dg;
		uint64_t now = uf_now_mono_ns();
		while (now < due) /* bounded: at most one datagram's period */
			now = uf_now_mono_ns();
		if (now > due + 1000000)
			late++;
		uf_capture_datagram(&c, (unsigned)(i & 1), dgram, len, 0, 0x0100007f, 4000);
		if ((i & 63) == 63)
			uf_capture_flush_idle(&c, now);
	}
	uf_capture_flush(&c);
	double secs = (double)(uf_now_mono_ns() - t0) / 1e9;
	uf_capture_close(&c);
	uint64_t dropped = st.capture_dropped_writer_behind + st.capture_dropped_disk_full +
	                   st.capture_dropped_no_dir + st.capture_dropped_read_only +
	                   st.capture_dropped_io_error;
	double achieved = (double)total_dg / 2 * per / secs;
	*offered_short = achieved < 0.97 * (double)rate;
	printf("{\"dir\":\"%s\",\"offered_msg_s\":%" PRIu64 ",\"achieved_msg_s\":%.0f,"
	       "\"datagram_bytes\":%u,\"datagrams\":%" PRIu64 ",\"written_mb_s\":%.1f,"
	       "\"written_datagrams\":%" PRIu64 ",\"dropped_writer_behind\":%" PRIu64
	       ",\"dropped_other\":%" PRIu64 ",\"late_ms_pacing\":%" PRIu64 "}\n",
	       dir, rate, achieved, len, total_dg, (double)st.capture_bytes_written / secs / 1e6,
	       (uint64_t)st.capture_packets_written, (uint64_t)st.capture_dropped_writer_behind,
	       dropped - st.capture_dropped_writer_behind, late);
	fflush(stdout);
	clean_dir(dir);
	return dropped != 0;
}

int main(int argc, char **argv)
{
	const char *dir = "/dev/shm/ufcw";
	uint64_t rate = 500000, max_rate = 16000000, buffer_mb = 64;
	uint32_t per = 20, msg_bytes = 34;
	double seconds = 3;

	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--dir"))
			dir = argv[i + 1];
		else if (!strcmp(argv[i], "--rate"))
			rate = strtoull(argv[i + 1], NULL, 10);
		else if (!strcmp(argv[i], "--max-rate"))
			max_rate = strtoull(argv[i + 1], NULL, 10);
		else if (!strcmp(argv[i], "--per-dgram"))
			per = (uint32_t)strtoul(argv[i + 1], NULL, 10);
		else if (!strcmp(argv[i], "--msg-bytes"))
			msg_bytes = (uint32_t)strtoul(argv[i + 1], NULL, 10);
		else if (!strcmp(argv[i], "--seconds"))
			seconds = strtod(argv[i + 1], NULL);
		else if (!strcmp(argv[i], "--buffer-mb"))
			buffer_mb = strtoull(argv[i + 1], NULL, 10);
		else {
			fprintf(stderr, "capture_writer_bench: unknown option %s\n", argv[i]);
			return 2;
		}
	}
	if (!rate || !per || per * (2 + msg_bytes) + 20 > 65000 || seconds <= 0) {
		fprintf(stderr,
		        "capture_writer_bench: bad --rate/--per-dgram/--msg-bytes/--seconds\n");
		return 2;
	}
	if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
		fprintf(stderr, "capture_writer_bench: %s: %s\n", dir, strerror(errno));
		return 2;
	}
	uint64_t best = 0;
	for (; rate <= max_rate; rate *= 2) {
		int short_ = 0;
		int dropped = run(dir, rate, per, msg_bytes, seconds, buffer_mb, &short_);
		if (dropped || short_)
			break;
		best = rate;
	}
	printf("{\"summary\":\"highest offered rate with no capture drop\",\"msg_s\":%" PRIu64
	       "}\n",
	       best);
	rmdir(dir);
	return 0;
}
