/* uf-replay: the command line (see replay_opts.h). */
#include "replay_opts.h"

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/uf_parse.h"
#include "feed/mcast.h"
#include "replay_capture.h"
#include "replay_stream.h"

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "usage: uf-replay --in FILE --a GROUP:PORT [--b GROUP:PORT] [--interface ADDR]\n"
	    "                 [--session NAME] [--rate MSGS_PER_S | --speed FACTOR]\n"
	    "                 [--drop-a P|@SEQ,...] [--drop-b P|@SEQ,...] [--dup P] [--reorder P]\n"
	    "                 [--seed S] [--serve-rerequests PORT] [--linger SECONDS] [--mtu "
	    "BYTES]\n"
	    "                 [--pack mtu|timestamp] [--burst FACTOR [--burst-period MS]] "
	    "[--verbose]\n"
	    "                 [--serve-snapshot PORT[,USERNAME,PASSWORD]] [--rerequest-delay-ms "
	    "MS]\n"
	    "Sends FILE (Nasdaq daily ITCH format or a pcap of MoldUDP64) as MoldUDP64 to the A "
	    "and\n"
	    "B groups, messages numbered 1..N in file order, packed up to --mtu payload bytes\n"
	    "(default %d; --pack timestamp: only messages of the same ITCH microsecond share a\n"
	    "packet, as an exchange sends them), at --rate messages/s (default %.0f; 0 = as\n"
	    "fast as possible) or at the messages' own timestamps divided by --speed.\n"
	    "Heartbeats every second while idle, end of session at the end.\n"
	    "Faults per line: --drop-a/--drop-b drop a packet with probability P\n"
	    "or the packets holding the listed sequences (@12,500); --dup and --reorder apply to\n"
	    "both lines with probability P (a reordered packet is sent after the next one). "
	    "--seed\n"
	    "makes every fault repeatable (default 1). --serve-rerequests answers MoldUDP64\n"
	    "re-requests on that UDP port from what was sent, also for --linger seconds after the "
	    "end\n"
	    "(default 0); --rerequest-delay-ms answers each re-request MS ms late (a slow "
	    "server).\n"
	    "--burst F (with --rate R): the same mean rate, sent as one burst at F x "
	    "R\n"
	    "at the start of every --burst-period (default 100 ms), silent for the rest of it;\n"
	    "burst k holds messages k x R x period + 1 onwards, and no packet spans two bursts.\n"
	    "--serve-snapshot: SoupBinTCP/GLIMPSE snapshots of what was sent, on 127.0.0.1:PORT\n"
	    "(0 = any; the port is printed on stderr), login replay/replay unless given.\n"
	    "A pcapng FILE (a uringfeed capture) is replayed as captured instead: every datagram\n"
	    "unchanged, to its captured group:port (interface 0 to --a, 1 to --b when given),\n"
	    "at the captured timing / --speed or at --rate; unicast datagrams are skipped.\n"
	    "An IEX-TP pcap[.gz] (DEEP, TOPS) is replayed as captured to --a and --b, each line\n"
	    "through its faults (--drop-a/--drop-b, --dup, --reorder), at the captured timing /\n"
	    "--speed or at --rate; IEX has no re-request or snapshot service (--serve-* refused);\n"
	    "--until-seq N stops after the segment holding message N (the summary's last_seq).\n"
	    "Prints a JSON summary on stdout. Exit 0 ok, 1 send failure, 2 bad usage.\n",
	    RP_DEFAULT_MTU, RP_DEFAULT_RATE);
}

static int rp_parse_prob(const char *s, double *out)
{
	return uf_parse_double(s, 0.0, 1.0, out) < 0 ? -EINVAL : 0;
}

static int rp_parse_fault(const char *s, struct rp_fault *f)
{
	if (s[0] != '@')
		return rp_parse_prob(s, &f->p);
	int n = uf_parse_u64_list(s + 1, ',', 1, UINT64_MAX, f->at, RP_MAX_AT);
	if (n < 0)
		return -EINVAL;
	f->nat = n;
	return 0;
}

/* Checks what getopt cannot: required options, exclusions, the session, the addresses. */
static int rp_opts_check(struct rp_opts *o, const char *sess, int have_rate)
{
	if (have_rate && o->speed > 0) {
		fprintf(stderr, "uf-replay: --rate and --speed exclude each other\n");
		return 2;
	}
	if (o->burst > 0 && !(o->rate > 0 && o->speed == 0)) {
		fprintf(stderr, "uf-replay: --burst needs a --rate above 0\n");
		return 2;
	}
	if (o->speed > 0)
		o->rate = 0;
	if (strlen(sess) > UF_MOLD_SESSION_LEN) {
		fprintf(stderr, "uf-replay: --session '%s': at most %d characters\n", sess,
		        UF_MOLD_SESSION_LEN);
		return 2;
	}
	memset(o->session, ' ', sizeof(o->session));
	memcpy(o->session, sess, strlen(sess));
	for (int i = 0; i < 2; i++) {
		if (!o->lines[i])
			continue;
		if (uf_mcast_parse_addr(o->lines[i], &o->line[i].dst) < 0 ||
		    !IN_MULTICAST(ntohl(o->line[i].dst.sin_addr.s_addr))) {
			fprintf(stderr, "uf-replay: --%c '%s': want MULTICAST_GROUP:PORT\n",
			        'a' + i, o->lines[i]);
			return 2;
		}
		o->line[i].on = 1;
	}
	if (inet_pton(AF_INET, o->ifs, &o->ifaddr) != 1) {
		fprintf(stderr, "uf-replay: --interface '%s': want an IPv4 address\n", o->ifs);
		return 2;
	}
	return -1;
}

int rp_opts_parse(int argc, char **argv, struct rp_opts *o)
{
	const char *sess = "REPLAY0001";
	int have_rate = 0;
	enum {
		O_IN = 1,
		O_A,
		O_B,
		O_IF,
		O_SESS,
		O_RATE,
		O_SPEED,
		O_DA,
		O_DB,
		O_DUP,
		O_REORDER,
		O_SEED,
		O_SERVE,
		O_LINGER,
		O_MTU,
		O_VERBOSE,
		O_HELP,
		O_BURST,
		O_BURST_PERIOD,
		O_SNAP,
		O_RR_DELAY,
		O_UNTIL,
		O_PACK
	};
	static const struct option opts[] = {
	    {"in", 1, 0, O_IN},
	    {"a", 1, 0, O_A},
	    {"b", 1, 0, O_B},
	    {"interface", 1, 0, O_IF},
	    {"session", 1, 0, O_SESS},
	    {"rate", 1, 0, O_RATE},
	    {"speed", 1, 0, O_SPEED},
	    {"drop-a", 1, 0, O_DA},
	    {"drop-b", 1, 0, O_DB},
	    {"dup", 1, 0, O_DUP},
	    {"reorder", 1, 0, O_REORDER},
	    {"seed", 1, 0, O_SEED},
	    {"serve-rerequests", 1, 0, O_SERVE},
	    {"linger", 1, 0, O_LINGER},
	    {"mtu", 1, 0, O_MTU},
	    {"verbose", 0, 0, O_VERBOSE},
	    {"help", 0, 0, O_HELP},
	    {"burst", 1, 0, O_BURST},
	    {"burst-period", 1, 0, O_BURST_PERIOD},
	    {"serve-snapshot", 1, 0, O_SNAP},
	    {"rerequest-delay-ms", 1, 0, O_RR_DELAY},
	    {"until-seq", 1, 0, O_UNTIL},
	    {"pack", 1, 0, O_PACK},
	    {0, 0, 0, 0},
	};
	int c;
	uint64_t v;

	memset(o, 0, sizeof(*o));
	o->ifs = "127.0.0.1";
	o->seed = 1;
	o->mtu = RP_DEFAULT_MTU;
	o->rate = RP_DEFAULT_RATE;
	o->burst_period = 0.1;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		int bad = 0;
		switch (c) {
		case O_IN:
			o->in = optarg;
			break;
		case O_A:
			o->lines[0] = optarg;
			break;
		case O_B:
			o->lines[1] = optarg;
			break;
		case O_IF:
			o->ifs = optarg;
			break;
		case O_SESS:
			sess = optarg;
			break;
		case O_RATE:
			bad = uf_parse_double(optarg, 0, HUGE_VAL, &o->rate) < 0;
			have_rate = 1;
			break;
		case O_SPEED:
			bad = uf_parse_double(optarg, 0, HUGE_VAL, &o->speed) < 0 || o->speed == 0;
			break;
		case O_DA:
			bad = rp_parse_fault(optarg, &o->line[0].drop) < 0;
			break;
		case O_DB:
			bad = rp_parse_fault(optarg, &o->line[1].drop) < 0;
			break;
		case O_DUP:
			bad = rp_parse_prob(optarg, &o->dup) < 0;
			break;
		case O_REORDER:
			bad = rp_parse_prob(optarg, &o->reorder) < 0;
			break;
		case O_SEED:
			bad = uf_parse_u64(optarg, 0, UINT64_MAX, &o->seed) < 0;
			break;
		case O_SERVE:
			bad = uf_parse_u64(optarg, 1, 65535, &v) < 0;
			o->serve_port = (int)v;
			break;
		case O_LINGER:
			bad = uf_parse_double(optarg, 0, HUGE_VAL, &o->linger) < 0;
			break;
		case O_MTU:
			/* 32: the header and one block at least (uf-bench e2e --sizes' 1-message
			 * datagrams); a packet's first message goes whatever --mtu says */
			bad = uf_parse_u64(optarg, 32, RP_MAX_PAYLOAD, &v) < 0;
			o->mtu = (size_t)v;
			break;
		case O_VERBOSE:
			o->verbose = 1;
			break;
		case O_BURST:
			bad = uf_parse_double(optarg, 1, 1000, &o->burst) < 0;
			break;
		case O_BURST_PERIOD:
			bad = uf_parse_double(optarg, 0, 60e3, &o->burst_period) < 0 ||
			      o->burst_period == 0;
			o->burst_period /= 1e3; /* ms on the command line, s inside */
			break;
		case O_SNAP:
			bad = rp_snap_server_parse(optarg, &o->snap) < 0;
			o->serve_snap = 1;
			break;
		case O_RR_DELAY:
			bad = uf_parse_u64(optarg, 0, 60000, &v) < 0;
			o->rerequest_delay_ms = (uint32_t)v;
			break;
		case O_UNTIL:
			bad = uf_parse_u64(optarg, 1, UINT64_MAX - 1, &o->until_seq) < 0;
			break;
		case O_PACK:
			o->pack_ts = strcmp(optarg, "timestamp") == 0;
			bad = !o->pack_ts && strcmp(optarg, "mtu") != 0;
			break;
		case O_HELP:
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
		if (bad) {
			fprintf(stderr, "uf-replay: bad value for --%s: '%s'\n", opts[c - 1].name,
			        optarg);
			return 2;
		}
	}
	if (optind < argc || !o->in || (!o->lines[0] && !rp_capture_is(o->in))) {
		fprintf(stderr, "uf-replay: %s\n",
		        optind < argc ? "unexpected argument" : "--in and --a are required");
		usage(stderr);
		return 2;
	}
	o->have_rate = have_rate;
	return rp_opts_check(o, sess, have_rate);
}
