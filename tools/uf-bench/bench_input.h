/* uf-bench decode and book: the input both measure, and the timing helpers they share.
 * Packets come from tools/uf-decode/input.c (compiled into uf-bench), so these benches and
 * `uf-decode bench` measure the same packet layouts. */
#ifndef UF_BENCH_INPUT_H
#define UF_BENCH_INPUT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "tools/uf-decode/input.h"

/* Loads FILE (daily or pcap), or when file is NULL generates a `gen_msgs`-message day with
 * uf-gen (next to uf-bench) in a temp file, loads it and removes it. The packets are
 * MoldUDP64 datagrams of at most 1472 bytes in 2048-byte slots, in stream order (seq) and
 * shuffled over the arena (scat). `desc` says what was loaded. Returns 0, or 2 after saying
 * why on stderr. */
int uf_bench_input_load(const char *cmd, const char *file, uint64_t gen_msgs,
                        struct uf_input_packets *in, char *desc, size_t desclen);

/* The command line `uf-bench decode` and `uf-bench book` take alike. */
struct uf_bench_input_opts {
	const char *file;    /* FILE, or NULL for a generated day */
	uint64_t gen;        /* --messages: size of the generated day */
	uint64_t reps;       /* --reps: passes per row, best kept */
	uint64_t pf;         /* --prefetch: decode prefetch distance in packets */
	uint64_t batch;      /* --batch: packets per batch */
	int json;            /* --json: one JSON line instead of the table */
	uint64_t gap_us;     /* --gap-us (book): idle time before each batch, outside the clock */
	uint64_t max_orders; /* --max-orders (book): order table size, 0 = publish's default */
};

/* Parses `uf-bench <cmd> [FILE] [--messages N] [--reps N] [--prefetch D] [--batch B]
 * [--gap-us U] [--max-orders N] [--json] [--help]` into `o` (defaults first: a 1000000-message day,
 * 5 reps, the default prefetch, batches of 64); `usage` prints the subcommand's help. Returns -1 to
 * go on, or the exit code to return now: 0 after --help, 2 after a usage error (said on stderr). */
int uf_bench_input_opts_parse(const char *cmd, int argc, char **argv, void (*usage)(FILE *),
                              struct uf_bench_input_opts *o);

#endif /* UF_BENCH_INPUT_H */
