/* uf-bench: uringfeed benchmarks, one subcommand per bench_<name>.c (see bench_cmds.h). */
#include <stdio.h>
#include <string.h>

#include "bench.h"

struct bench_cmd {
	const char *name;                  /* subcommand */
	int (*run)(int argc, char **argv); /* argv[0] is the subcommand name */
	const char *summary;               /* one line for --help */
};

static const struct bench_cmd cmds[] = {
#define UF_BENCH_CMD(name, summary) {#name, uf_bench_##name, summary},
#include "bench_cmds.h"
#undef UF_BENCH_CMD
};

static void usage(FILE *f)
{
	fprintf(f, "usage: uf-bench <command> [options]   (uf-bench <command> --help)\n");
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		fprintf(f, "  %-8s %s\n", cmds[i].name, cmds[i].summary);
}

int main(int argc, char **argv)
{
	if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (strcmp(argv[1], cmds[i].name) == 0)
			return cmds[i].run(argc - 1, argv + 1);
	fprintf(stderr, "uf-bench: unknown command \"%s\"\n", argv[1]);
	usage(stderr);
	return 2;
}
