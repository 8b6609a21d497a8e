/* Helpers shared by the producer (uf_ring) and the consumer library (libufconsumer): names and
 * paths of the shm files, process identity for reaping, the futex calls. Internal to ring/. */
#ifndef UF_RING_UTIL_H
#define UF_RING_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define UF_RING_VISIBLE __attribute__((visibility("default")))

/* 0 when `name` is 1..31 bytes of [A-Za-z0-9_.-] and not starting with '.', else -EINVAL. */
int uf_ring_name_check(const char *name);

/* The shm directory to use: `dir` if given, else $UF_RING_DIR, else /dev/shm. */
const char *uf_ring_dir_pick(const char *dir);

/* What uf_ring_path names: the ring's private directory and the two entries in it. */
enum uf_ring_file {
	UF_RING_FILE_DATA = 0, /* "<dir>/uf.<name>/data" */
	UF_RING_FILE_SOCK = 1, /* "<dir>/uf.<name>/sock" (hands out the consumer table) */
	UF_RING_FILE_DIR = 2,  /* "<dir>/uf.<name>" */
};

/* Writes the path of `what` (enum uf_ring_file) of ring `name` under `dir`. -ENAMETOOLONG. */
int uf_ring_path(char *buf, size_t len, const char *dir, const char *name, int what);

/* The kernel's start time of `pid` (field 22 of /proc/pid/stat) and its state letter.
 * Returns 0, or -ESRCH when the process does not exist. */
int uf_ring_proc_stat(pid_t pid, uint64_t *start_time, char *state);

/* FUTEX_WAIT on a shared (cross-process) word while it equals `val`, at most timeout_ns.
 * Returns 0 when woken, -EAGAIN when the word already differs, -ETIMEDOUT, -EINTR. */
int uf_ring_futex_wait(const uint32_t *word, uint32_t val, int64_t timeout_ns);

/* FUTEX_WAKE every waiter on a shared word; returns the number woken or -errno. */
int uf_ring_futex_wake_all(uint32_t *word);

/* Allocates `size` bytes of `fd` for real (fallocate; posix_fallocate where the file system
 * lacks it): on tmpfs a sparse file fails only when a page is first touched, with a SIGBUS;
 * this fails now, -ENOSPC. Returns 0 or -errno. */
int uf_ring_allocate(int fd, uint64_t size);

#endif /* UF_RING_UTIL_H */
