/* uf-replay: sends a daily-format ITCH file or a pcap of MoldUDP64 as MoldUDP64 to an A and a
 * B multicast group, packing messages per packet up to an MTU, at a controlled rate, with
 * heartbeats, end of session and per-line fault injection; serves MoldUDP64 re-requests from
 * what it sent. See docs/feed.md ("uf-replay").
 *
 * Messages are numbered 1..N in file order (a pcap's own sequence numbers are not kept), so
 * the stream a feed rebuilds is exactly the file, and `uf-decode books FILE` is the book it
 * must end with. Every random decision comes from a per-line generator seeded by --seed:
 * the same seed and file give the same faults.
 *
 * A pcapng input (a capture) is replayed datagram by datagram as captured instead
 * (replay_capture.c); so is a classic pcap(.gz) of IEX-TP, to both lines with their faults.
 *
 * This file is main: options, sockets, the servers, the sender, the JSON summary. The parts:
 *   replay_opts.c       the command line;
 *   replay_stream.c     the messages and how they pack into packets;
 *   replay_send.c       the sender: pacing, faults, heartbeats, end of session, --linger;
 *   replay_server.h     what a server beside the sender provides (fds to poll, a serve hook);
 *   replay_rerequest.c  the MoldUDP64 re-request server (--serve-rerequests);
 *   replay_snapshot.c   the SoupBinTCP/GLIMPSE snapshot server (--serve-snapshot; the state
 *                       itself: snap_server.c, snap_state.c). */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "feed/mcast.h"
#include "replay_capture.h"
#include "replay_opts.h"
#include "replay_rerequest.h"
#include "replay_send.h"
#include "replay_snapshot.h"
#include "replay_stream.h"

static void rp_on_signal(int sig)
{
	(void)sig;
	rp_stop = 1;
}

static void rp_print_summary(const struct rp_sender *s, const struct rp_rerequest *rr)
{
	const struct rp_line *a = &s->line[0], *b = &s->line[1];
	printf("{\"messages\":%llu,\"packets\":%llu,\"session\":\"%.10s\",\"seconds\":%.3f,"
	       "\"a\":{\"sent\":%llu,\"dropped\":%llu,\"duplicated\":%llu,\"reordered\":%llu},"
	       "\"b\":{\"sent\":%llu,\"dropped\":%llu,\"duplicated\":%llu,\"reordered\":%llu},"
	       "\"rerequests\":%llu,\"bad_rerequests\":%llu,\"retransmitted_messages\":%llu,"
	       "\"retransmitted_packets\":%llu,\"rerequests_dropped\":%llu}\n",
	       (unsigned long long)s->st->n, (unsigned long long)s->packets, s->st->session,
	       s->seconds, (unsigned long long)a->sent, (unsigned long long)a->dropped,
	       (unsigned long long)a->duplicated, (unsigned long long)a->reordered,
	       (unsigned long long)b->sent, (unsigned long long)b->dropped,
	       (unsigned long long)b->duplicated, (unsigned long long)b->reordered,
	       (unsigned long long)rr->rerequests, (unsigned long long)rr->rerequests_bad,
	       (unsigned long long)rr->retransmitted_msgs,
	       (unsigned long long)rr->retransmitted_pkts, (unsigned long long)rr->delayed_dropped);
	fflush(stdout);
}

/* The multicast sender on --interface: its socket, or -1 with the reason on stderr. */
static int rp_open_sender(const struct rp_opts *o)
{
	char err[256];
	int tx = uf_mcast_open_tx(o->ifaddr, 1, err, sizeof(err));
	if (tx < 0)
		fprintf(stderr, "uf-replay: multicast sender on %s: %s\n", o->ifs, err);
	return tx;
}

/* From here on SIGINT and SIGTERM stop the replay (rp_stop), and sleeps end on time (a
 * smoother rate). */
static void rp_start_sending(void)
{
	signal(SIGINT, rp_on_signal);
	signal(SIGTERM, rp_on_signal);
	(void)prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
}

/* Replays a capture as it was received: the sender, then `run` until the capture ends or a
 * signal stops it. Returns run's exit status (1: no sender). */
static int rp_send_capture(const struct rp_opts *o, int (*run)(const struct rp_opts *, int))
{
	int tx = rp_open_sender(o);
	if (tx < 0)
		return 1;
	rp_start_sending();
	int rc = run(o, tx);
	close(tx);
	return rc;
}

int main(int argc, char **argv)
{
	static struct rp_opts o;
	static struct rp_stream st;
	static struct rp_sender snd;
	struct rp_rerequest rr = {.fd = -1};
	struct rp_snapshot snap = {0};
	int rc, tx;

	rc = rp_opts_parse(argc, argv, &o);
	if (rc >= 0)
		return rc;
	if (o.pack_ts && (rp_capture_is(o.in) || rp_capture_is_iextp(o.in))) {
		fprintf(stderr, "uf-replay: --pack timestamp repacks ITCH; a capture is replayed "
		                "as captured\n");
		return 2;
	}
	if (rp_capture_is(o.in)) { /* a capture: as it was received (replay_capture.h) */
		if (o.serve_port || o.serve_snap) {
			fprintf(stderr, "uf-replay: --serve-* do not apply to a pcapng capture\n");
			return 2;
		}
		return rp_send_capture(&o, rp_capture_run);
	}
	if (rp_capture_is_iextp(o.in)) { /* IEX-TP: to both lines with faults (replay_capture.h) */
		if (o.serve_port || o.serve_snap) {
			fprintf(stderr, "uf-replay: IEX-TP has no re-request or snapshot service: "
			                "--serve-* do not apply\n");
			return 2;
		}
		return rp_send_capture(&o, rp_capture_run_iextp);
	}
	memcpy(st.session, o.session, sizeof(st.session));
	st.mtu = o.mtu;
	st.pack_ts = o.pack_ts;
	if (rp_stream_load(&st, o.in) < 0)
		return 2;
	tx = rp_open_sender(&o);
	if (tx < 0)
		return 1;
	rp_sender_init(&snd, &o, &st, tx);
	if (o.serve_port) {
		if (rp_rerequest_open(&rr, o.serve_port, o.rerequest_delay_ms) < 0)
			return 1;
		rp_sender_add_server(&snd, rp_rerequest_server(&rr));
	}
	if (o.serve_snap) {
		if (rp_snapshot_open(&snap, &o, &st) < 0)
			return 1;
		rp_sender_add_server(&snd, rp_snapshot_server(&snap));
	}
	rp_start_sending();

	rp_sender_run(&snd);
	rp_print_summary(&snd, &rr);
	rp_snapshot_close(&snap);
	rp_stream_close(&st);
	close(tx);
	rp_rerequest_close(&rr);
	return 0;
}
