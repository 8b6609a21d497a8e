/* uf-replay --in CAPTURE.pcapng: a capture replayed as it was received (uringfeed's own
 * captures, feed/capture.h, or any pcapng of MoldUDP64 over UDP/IPv4).
 *
 * Every datagram goes out unchanged (its own session, sequence and count: duplicates, gaps
 * and the two lines' interleaving as captured), in the order of its receive timestamp (the
 * file lists a receive batch socket by socket), to the destination it had:
 * interface 0's datagrams to --a and interface 1's to --b when given, otherwise to their
 * captured group and port. Unicast datagrams (re-request answers the feed received) are not
 * sent, only counted: the feed under test asks for its own. Pacing: the capture's own
 * timestamps divided by --speed (default 1: real time), or --rate messages/s (0 = as fast as
 * possible). Faults, --serve-* and --session do not apply. Prints a JSON summary.
 *
 * uf-replay --in CAPTURE.pcap[.gz] of IEX-TP (DEEP, TOPS): rp_capture_run_iextp below. */
#ifndef UF_REPLAY_CAPTURE_H
#define UF_REPLAY_CAPTURE_H

#include "replay_opts.h"

/* 1 when `path` starts with a pcapng Section Header (capture mode), else 0. */
int rp_capture_is(const char *path);

/* Replays the capture o->in through the multicast socket `tx`. Returns the exit status
 * (0, 1 send failure, 2 unreadable input). */
int rp_capture_run(const struct rp_opts *o, int tx);

/* 1 when `path` is a classic pcap (gzip'd or not) whose first UDP payload is an IEX-TP
 * segment (DEEP or TOPS), else 0. */
int rp_capture_is_iextp(const char *path);

/* Replays the IEX-TP capture o->in: every UDP payload unchanged (its session, sequence and
 * stream offset: the DEEP capture's restarts inside its session go out as they are) to --a
 * and, when given, --b, each line through its own faults (--drop-a/--drop-b, --dup,
 * --reorder, --seed) as MoldUDP64 lines; paced by the captured timestamps / --speed (default
 * real time) or --rate messages/s; --until-seq N stops after the segment holding message N
 * (the first such in file order; the summary's last_seq is that segment's last message).
 * IEX offers no re-request service: --serve-* refused.
 * Prints a JSON summary. Returns the exit status (0, 2 unreadable input). */
int rp_capture_run_iextp(const struct rp_opts *o, int tx);

#endif /* UF_REPLAY_CAPTURE_H */
