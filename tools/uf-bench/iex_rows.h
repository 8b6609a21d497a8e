/* The IEX DEEP rows of `uf-bench decode` and `uf-bench book`: the real DEEP capture
 * ($UF_SHARED_DATA or ../shared/data, /iex/iex-deep-1.0-20170425.pcap.gz) timed in the same
 * run as the ITCH rows, so the two venues' costs per message are read side by side. */
#ifndef UF_BENCH_IEX_ROWS_H
#define UF_BENCH_IEX_ROWS_H

#include <stdint.h>
#include <stdio.h>

/* What one run measured. */
struct uf_bench_iex {
	int have;           /* 1 when the capture was found and read */
	char path[1024];    /* the capture */
	uint64_t segments;  /* IEX-TP data segments */
	uint64_t messages;  /* DEEP messages in them */
	uint64_t decode_ns; /* best decode pass (framing + every message decoded) */
	uint64_t book_ns;   /* best decode+book pass (the "iex-deep" protocol entry), 0 = not run */
	int bad;            /* passes disagreed or messages did not decode */
};

/* Loads the capture and times `reps` passes of decode and, when `book`, of decode+book.
 * r->have = 0 when the capture is absent (said on stderr). */
void uf_bench_iex_run(int book, uint64_t reps, struct uf_bench_iex *r);

/* Text rows (msgs/s, ns/msg) under the ITCH table. */
void uf_bench_iex_print(const struct uf_bench_iex *r, FILE *f);

#endif /* UF_BENCH_IEX_ROWS_H */
