/* Compiler hints shared by every module: branch hints, prefetch, cache-line size. */
#ifndef UF_COMPILER_H
#define UF_COMPILER_H

#define UF_LIKELY(x)   __builtin_expect(!!(x), 1)
#define UF_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define UF_CACHELINE   64
/* Producer- and consumer-written fields of shared layouts sit this far apart, so the
 * adjacent-line prefetcher never pulls a neighbour's line into a false-sharing fight. */
#define UF_FALSE_SHARING 128
#define UF_ALIGNED(n)    __attribute__((aligned(n)))
#define UF_COLD          __attribute__((cold))
#define UF_HOT           __attribute__((hot))
#define UF_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Read prefetch into all cache levels; a miss on a bad address is harmless. */
#define UF_PREFETCH(p) __builtin_prefetch((p), 0, 3)
/* Write-intent prefetch, for slots about to be modified (order table, levels). */
#define UF_PREFETCHW(p) __builtin_prefetch((p), 1, 3)

/* Busy-wait hint: lets the sibling hyperthread run and saves power in spin loops. */
static inline void uf_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#endif
}

#endif /* UF_COMPILER_H */
