/* uf-decode stats [--port N] [--payload KIND] FILE...: one JSON object of counts over all files.
 * Frames of a capture that are not MoldUDP64 (ARP, IGMP, TCP, other ports with --port) are counted
 * under "skipped", not "errors": only what was MoldUDP64 and failed makes the exit status 1. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/uf_parse.h"
#include "cmd.h"

static void usage(void)
{
	fprintf(stderr, "usage: uf-decode stats [--port N] [--payload KIND] FILE...\n"
	                "  --port N  pcap: only UDP datagrams to destination port N (1-65535)\n"
	                "  --payload KIND  pcap: auto (default: the first payload decides), mold,\n"
	                "                  iex-deep or iex-tops (IEX-TP of that protocol only)\n");
}

int uf_decode_cmd_stats(int argc, char **argv)
{
	const char **files = (const char **)argv + 1; /* compacted in place: nfiles < i */
	int nfiles = 0;
	uint64_t port = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--port")) {
			if (i + 1 >= argc || uf_parse_u64(argv[i + 1], 1, 65535, &port) < 0) {
				fprintf(stderr, "uf-decode stats: --port wants 1..65535, got %s\n",
				        i + 1 < argc ? argv[i + 1] : "nothing");
				return UF_EXIT_USAGE;
			}
			i++;
		} else if (!strcmp(argv[i], "--payload")) {
			if (i + 1 >= argc || uf_input_set_payload(argv[i + 1]) < 0) {
				fprintf(stderr,
				        "uf-decode stats: --payload wants auto, mold, iex-deep or "
				        "iex-tops, got %s\n",
				        i + 1 < argc ? argv[i + 1] : "nothing");
				return UF_EXIT_USAGE;
			}
			i++;
		} else if (argv[i][0] == '-' && argv[i][1]) {
			fprintf(stderr, "uf-decode stats: unknown option %s\n", argv[i]);
			usage();
			return UF_EXIT_USAGE;
		} else {
			files[nfiles++] = argv[i];
		}
	}
	if (nfiles == 0) {
		usage();
		return UF_EXIT_USAGE;
	}
	uf_input_set_udp_port((uint16_t)port);
	struct uf_decode_counters c;
	memset(&c, 0, sizeof(c));
	int rc = uf_input_for_each(files, nfiles, &c, NULL, NULL, NULL);
	if (rc != UF_EXIT_OK)
		return rc;
	uf_input_print_stats_json(stdout, &c);
	if (fflush(stdout) != 0)
		return UF_EXIT_USAGE;
	return uf_decode_counters_errors(&c) ? UF_EXIT_INPUT_ERR : UF_EXIT_OK;
}
