/* uf-decode subcommands. main.c dispatches on argv[1] through a table of these. */
#ifndef UF_DECODE_CMD_H
#define UF_DECODE_CMD_H

#include <stdio.h>

#include "input.h"

/* Each takes the arguments after the subcommand name (argv[0] = subcommand) and returns an
 * exit status: UF_EXIT_OK, UF_EXIT_INPUT_ERR or UF_EXIT_USAGE. */
int uf_decode_cmd_stats(int argc, char **argv);
int uf_decode_cmd_print(int argc, char **argv);
int uf_decode_cmd_bench(int argc, char **argv);

/* Options every bench section sees. */
struct uf_bench_opts {
	int reps;          /* timed passes per row; the best is reported */
	unsigned prefetch; /* prefetch distance of the "on" rows */
	size_t batch;      /* packets per batch (one CQE batch in the feed) */
};

/* ---- publish/ plugs in here (tools/uf-decode/books.c, built when it exists) ----
 * books.c defines both; CMake adds -DUF_DECODE_HAVE_BOOKS and links uf_publish. */
#ifdef UF_DECODE_HAVE_BOOKS
int uf_decode_cmd_books(int argc, char **argv);
/* Prints decode+book rows (prefetch on and off) in bench's table format, over the same
 * packets the decode rows used. Returns 0 or an exit status. */
int uf_decode_bench_books(const struct uf_input_packets *in, const struct uf_bench_opts *o,
                          FILE *out);
#endif

#endif /* UF_DECODE_CMD_H */
