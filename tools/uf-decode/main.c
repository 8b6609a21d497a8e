/* uf-decode: offline ITCH 5.0 / MoldUDP64 tool. Subcommands come from a dispatch table so
 * other modules add theirs (publish/ adds `books`) without touching the others. */
#include <stdio.h>
#include <string.h>

#include "cmd.h"

struct subcommand {
	const char *name;                  /* argv[1] */
	int (*run)(int argc, char **argv); /* gets argv from the subcommand name on */
	const char *usage;                 /* one line for --help */
};

static const struct subcommand commands[] = {
    {"stats", uf_decode_cmd_stats,
     "stats [--port N] [--payload KIND] FILE... counts as one JSON object (--port: pcap UDP "
     "port filter; --payload: auto, mold, iex-deep, iex-tops)"},
    {"print", uf_decode_cmd_print,
     "print FILE [--limit N] [--payload KIND]   one JSON line per message"},
    {"bench", uf_decode_cmd_bench,
     "bench FILE [--reps N] [--prefetch D] [--batch B]   decode throughput vs byte reading"},
/* ---- publish/ subcommands plug in here ---- */
#ifdef UF_DECODE_HAVE_BOOKS
    {"books", uf_decode_cmd_books,
     "books FILE [--depth N] [--until-seq N | --until-time HH:MM:SS.fff]   books (at the end, "
     "or after that sequence / exchange time), one JSON line each"},
#endif
};

static void usage(FILE *f)
{
	fprintf(f, "usage: uf-decode SUBCOMMAND ...\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  uf-decode %s\n", commands[i].usage);
	fprintf(
	    f, "inputs: Nasdaq daily-format ITCH 5.0 files, or classic pcap (us/ns) of "
	       "Ethernet[/802.1Q]/IPv4/UDP/MoldUDP64 (ITCH 5.0) or IEX-TP (DEEP 1.0, TOPS 1.6);\n"
	       "        any of them may be gzip'd; or pcapng (uringfeed captures): both lines and\n"
	       "        re-request answers read once each, in sequence order\n"
	       "exit status: 0 ok, 1 the input had errors, 2 bad usage or unreadable input\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return UF_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return UF_EXIT_OK;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].run(argc - 1, argv + 1);
	fprintf(stderr, "uf-decode: unknown subcommand '%s'\n", argv[1]);
	usage(stderr);
	return UF_EXIT_USAGE;
}
