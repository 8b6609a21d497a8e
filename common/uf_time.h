/* Clocks. Receive timestamps come from the kernel (CLOCK_REALTIME, SO_TIMESTAMPNS), so
 * wire-to-consumer latency compares against the same clock. vDSO: no syscall. */
#ifndef UF_TIME_H
#define UF_TIME_H

#include <stdint.h>
#include <time.h>

static inline uint64_t uf_now_realtime_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline uint64_t uf_now_mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The calling thread's CPU time: what a measurement on a loaded shared machine counts when
 * time spent off the CPU must not (uf-decode books). A syscall-free vDSO read on most
 * kernels, but slower than the wall clocks above. */
static inline uint64_t uf_now_thread_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* CLOCK_REALTIME at tick resolution (1-4 ms), a few ns: for liveness stamps another process
 * compares with its own coarse clock (ring consumer slots' last_seen_ns). */
static inline uint64_t uf_now_realtime_coarse_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#endif /* UF_TIME_H */
