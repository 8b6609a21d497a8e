/* uf-decode stats FILE...: one JSON object of counts over all files. */
#include <stdio.h>
#include <string.h>

#include "cmd.h"

int uf_decode_cmd_stats(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: uf-decode stats FILE...\n");
		return UF_EXIT_USAGE;
	}
	for (int i = 1; i < argc; i++)
		if (argv[i][0] == '-' && argv[i][1]) {
			fprintf(stderr, "uf-decode stats: unknown option %s\n", argv[i]);
			return UF_EXIT_USAGE;
		}
	struct uf_decode_counters c;
	memset(&c, 0, sizeof(c));
	int rc = uf_input_for_each((const char *const *)argv + 1, argc - 1, &c, NULL, NULL, NULL);
	if (rc != UF_EXIT_OK)
		return rc;
	uf_input_print_stats_json(stdout, &c);
	if (fflush(stdout) != 0)
		return UF_EXIT_USAGE;
	return uf_decode_counters_errors(&c) ? UF_EXIT_INPUT_ERR : UF_EXIT_OK;
}
