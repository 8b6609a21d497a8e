/* uf-snap: fetches one GLIMPSE 5.0 snapshot over SoupBinTCP (feed/soup_client.h) and writes
 * its ITCH 5.0 messages as a Nasdaq daily-format file (2-byte big-endian length, message), so
 * `uf-decode books FILE` shows the books it holds. Prints one JSON line: the End of Snapshot
 * sequence (the next real-time message), the messages written, and the client's counters. */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/uf_endian.h"
#include "common/uf_parse.h"
#include "common/uf_time.h"
#include "feed/mcast.h"
#include "feed/soup_client.h"

struct us {
	FILE *out;         /* snapshot file */
	uint64_t messages; /* written */
	uint64_t next_seq; /* End of Snapshot, 0 = not seen */
	int rejected;      /* Login Rejected reason, 0 = none */
	int write_error;   /* 1 after a failed write */
};

static void us_on_message(void *ctx, uint64_t seq, const uint8_t *msg, size_t len)
{
	struct us *u = ctx;
	uint8_t hdr[2];
	(void)seq;
	uf_put_be16(hdr, (uint16_t)len);
	if (fwrite(hdr, 1, 2, u->out) != 2 || fwrite(msg, 1, len, u->out) != len)
		u->write_error = 1;
	u->messages++;
}

static void us_on_event(void *ctx, const struct uf_soup_client_event *ev)
{
	struct us *u = ctx;
	switch (ev->kind) {
	case UF_SOUP_EV_LOGIN_ACCEPTED:
		/* A new login is a new snapshot: forget a partial one. */
		if (u->messages && (fflush(u->out) || ftruncate(fileno(u->out), 0) < 0 ||
		                    fseek(u->out, 0, SEEK_SET) < 0))
			u->write_error = 1;
		u->messages = 0;
		break;
	case UF_SOUP_EV_LOGIN_REJECTED:
		u->rejected = ev->reason;
		fprintf(stderr, "uf-snap: login rejected ('%c')\n", ev->reason);
		break;
	case UF_SOUP_EV_DISCONNECTED:
		fprintf(stderr, "uf-snap: disconnected: %s; reconnecting\n", strerror(-ev->err));
		break;
	case UF_SOUP_EV_END_OF_SNAPSHOT:
		u->next_seq = ev->seq;
		break;
	default:
		break;
	}
}

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: uf-snap --server ADDR:PORT --out FILE [--user NAME] [--password PW]\n"
	        "               [--session NAME] [--timeout SECONDS]\n"
	        "Logs in to a SoupBinTCP/GLIMPSE 5.0 server (default login replay/replay, as\n"
	        "uf-replay --serve-snapshot), writes the snapshot's ITCH 5.0 messages to FILE in\n"
	        "the daily format, prints a JSON line with \"next_seq\" (End of Snapshot).\n"
	        "Reconnects with back-off until --timeout (default 30). Exit 0 ok, 1 failed,\n"
	        "2 bad usage.\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"server", 1, 0, 's'},   {"out", 1, 0, 'o'},     {"user", 1, 0, 'u'},
	    {"password", 1, 0, 'p'}, {"session", 1, 0, 'S'}, {"timeout", 1, 0, 't'},
	    {"help", 0, 0, 'h'},     {0, 0, 0, 0},
	};
	struct uf_soup_client_params p;
	const char *server = NULL, *out = NULL;
	double timeout = 30;
	int c;

	uf_soup_client_params_default(&p);
	strcpy(p.username, "replay");
	strcpy(p.password, "replay");
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			server = optarg;
			break;
		case 'o':
			out = optarg;
			break;
		case 'u':
		case 'p':
		case 'S': {
			char *dst = c == 'u' ? p.username : c == 'p' ? p.password : p.session;
			size_t cap = c == 'u' ? sizeof(p.username) : sizeof(p.password);
			if (strlen(optarg) >= cap) {
				fprintf(stderr, "uf-snap: '%s' is too long\n", optarg);
				return 2;
			}
			strcpy(dst, optarg);
			break;
		}
		case 't':
			if (uf_parse_double(optarg, 0, 86400, &timeout) < 0 || timeout == 0 ||
			    timeout == 86400) {
				fprintf(stderr, "uf-snap: bad --timeout '%s'\n", optarg);
				return 2;
			}
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc || !server || !out) {
		usage(stderr);
		return 2;
	}
	if (uf_mcast_parse_addr(server, &p.server) < 0) {
		fprintf(stderr, "uf-snap: --server '%s': want IPV4_ADDRESS:PORT\n", server);
		return 2;
	}
	struct us u = {0};
	u.out = fopen(out, "w+b");
	if (!u.out) {
		fprintf(stderr, "uf-snap: %s: %s\n", out, strerror(errno));
		return 1;
	}
	struct uf_soup_client_cb cb = {us_on_message, us_on_event, &u};
	struct uf_soup_client *cl;
	if (uf_soup_client_create(&p, &cb, &cl) < 0) {
		fprintf(stderr, "uf-snap: bad login fields (user <= 6, password and session <= 10 "
		                "printable characters)\n");
		fclose(u.out);
		return 2;
	}
	uint64_t t0 = uf_now_mono_ns();
	uf_soup_client_start(cl, t0);
	uf_soup_client_run(cl, (int)(timeout * 1000), NULL);
	double secs = (double)(uf_now_mono_ns() - t0) / 1e9;
	struct uf_soup_client_stats st;
	uf_soup_client_stats(cl, &st);
	uf_soup_client_destroy(cl);
	int ok = u.next_seq != 0 && !u.write_error;
	if (fclose(u.out) != 0)
		ok = 0;
	printf("{\"ok\":%s,\"next_seq\":%llu,\"messages\":%llu,\"seconds\":%.3f,\"logins\":%llu,"
	       "\"rejects\":%llu,\"disconnects\":%llu,\"heartbeats\":%llu}\n",
	       ok ? "true" : "false", (unsigned long long)u.next_seq,
	       (unsigned long long)u.messages, secs, (unsigned long long)st.logins,
	       (unsigned long long)st.rejects, (unsigned long long)st.disconnects,
	       (unsigned long long)st.heartbeats_rx);
	if (!ok)
		fprintf(stderr, "uf-snap: no complete snapshot%s\n",
		        u.write_error ? " (write error)" : "");
	return ok ? 0 : 1;
}
