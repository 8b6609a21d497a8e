/* The only place atomics are spelled: acquire/release helpers over C11 atomics.
 * Every call site says in a comment what the barrier orders. */
#ifndef UF_ATOMIC_H
#define UF_ATOMIC_H

#include <stdint.h>

/* Load that orders every later read after it (pairs with uf_store_release). */
static inline uint64_t uf_load_acquire_u64(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

/* Store that orders every earlier write before it (pairs with uf_load_acquire). */
static inline void uf_store_release_u64(uint64_t *p, uint64_t v)
{
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
}

static inline uint32_t uf_load_acquire_u32(const uint32_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static inline void uf_store_release_u32(uint32_t *p, uint32_t v)
{
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
}

/* Unordered single-copy-atomic access: counters read by another thread for monitoring. */
static inline uint64_t uf_load_relaxed_u64(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}

static inline void uf_store_relaxed_u64(uint64_t *p, uint64_t v)
{
	__atomic_store_n(p, v, __ATOMIC_RELAXED);
}

static inline uint32_t uf_load_relaxed_u32(const uint32_t *p)
{
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}

static inline void uf_store_relaxed_u32(uint32_t *p, uint32_t v)
{
	__atomic_store_n(p, v, __ATOMIC_RELAXED);
}

static inline uint64_t uf_fetch_add_u64(uint64_t *p, uint64_t v)
{
	return __atomic_fetch_add(p, v, __ATOMIC_ACQ_REL);
}

static inline uint32_t uf_fetch_add_u32(uint32_t *p, uint32_t v)
{
	return __atomic_fetch_add(p, v, __ATOMIC_ACQ_REL);
}

static inline int uf_cas_u32(uint32_t *p, uint32_t *expected, uint32_t desired)
{
	return __atomic_compare_exchange_n(p, expected, desired, 0, __ATOMIC_ACQ_REL,
	                                   __ATOMIC_ACQUIRE);
}

/* Full fences: the seqlock reader needs a load-load fence before re-reading the sequence;
 * the futex waker needs store-load ordering between publishing and reading "sleepers". */
static inline void uf_fence_acquire(void)
{
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
}

static inline void uf_fence_release(void)
{
	__atomic_thread_fence(__ATOMIC_RELEASE);
}

static inline void uf_fence_seq_cst(void)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}

#endif /* UF_ATOMIC_H */
