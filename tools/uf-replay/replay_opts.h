/* uf-replay: the command line, parsed and checked before anything is opened: the lines and
 * their faults, the pacing (--rate / --speed / --burst), the session, the servers. Every
 * refusal prints why on stderr and means exit status 2. */
#ifndef UF_REPLAY_OPTS_H
#define UF_REPLAY_OPTS_H

#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>

#include "decode/uf_decode.h"
#include "snap_server.h"

#define RP_DEFAULT_MTU  1400     /* MoldUDP64 payload bytes per packet */
#define RP_DEFAULT_RATE 100000.0 /* messages/s when neither --rate nor --speed is given */
#define RP_MAX_AT       4096     /* sequences listed in one @list */

struct rp_fault {
	double p;               /* drop probability */
	uint64_t at[RP_MAX_AT]; /* packets containing these sequences are dropped */
	int nat;                /* entries in at */
};

/* One line as the options describe it. */
struct rp_line_opts {
	int on;                 /* line configured */
	struct sockaddr_in dst; /* group:port */
	struct rp_fault drop;   /* drop faults */
};

struct rp_opts {
	const char *in;                    /* --in */
	const char *lines[2];              /* --a and --b as given (NULL: not given) */
	char session[UF_MOLD_SESSION_LEN]; /* --session, space-padded */
	struct in_addr ifaddr;             /* --interface */
	const char *ifs;                   /* --interface as given */
	struct rp_line_opts line[2];       /* --a, --b and their --drop-a/--drop-b */
	size_t mtu;                        /* payload bytes per packet */
	int pack_ts;                       /* --pack timestamp (replay_stream.h), 0: --pack mtu */
	double rate;                       /* messages/s (0 = --speed) */
	double speed;                      /* timestamp speed factor (0 = --rate) */
	int have_rate;                     /* --rate was given (a capture replays at its own
	                                    * timing otherwise, replay_capture.h) */
	double burst;                /* --burst: bursts at this multiple of --rate (0 = steady) */
	double burst_period;         /* --burst-period in seconds: one burst per period */
	double dup, reorder;         /* probabilities, both lines */
	uint64_t seed;               /* --seed */
	int serve_port;              /* --serve-rerequests, 0 = not serving */
	uint32_t rerequest_delay_ms; /* --rerequest-delay-ms: answer this late (slow server) */
	double linger;               /* --linger seconds */
	int verbose;                 /* progress on stderr */
	int serve_snap;              /* --serve-snapshot given */
	struct rp_snap_server_cfg snap; /* --serve-snapshot PORT[,USER,PASSWORD] */
	uint64_t until_seq; /* --until-seq (IEX-TP captures): stop after the segment holding it */
};

/* Parses argv into `o`. Returns -1 when uf-replay should run, else the exit status (0 after
 * --help, 2 for bad usage, with the reason and usage printed). */
int rp_opts_parse(int argc, char **argv, struct rp_opts *o);

#endif /* UF_REPLAY_OPTS_H */
