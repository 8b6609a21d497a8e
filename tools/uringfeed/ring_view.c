/* Read-only ring view: see ring_view.h. */
#include "tools/uringfeed/ring_view.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/uf_atomic.h"
#include "ring/uf_ring_layout.h"

/* Maps a whole file (or its first `want` bytes when want > 0) read-only. */
static int map_ro(const char *path, size_t want, const void **out, size_t *len)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	void *p;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) != 0 || (size_t)st.st_size < (want ? want : 1)) {
		close(fd);
		return -EPROTO;
	}
	*len = want ? want : (size_t)st.st_size;
	p = mmap(NULL, *len, PROT_READ, MAP_SHARED, fd, 0);
	close(fd); /* the mapping keeps the file */
	if (p == MAP_FAILED)
		return -errno;
	*out = p;
	return 0;
}

int uf_ring_view_open(struct uf_ring_view *v, const char *name, const char *dir)
{
	char path[512], file[64];
	int r;

	memset(v, 0, sizeof(*v));
	if (!dir)
		dir = getenv("UF_RING_DIR");
	if (!dir || !*dir)
		dir = UF_RING_SHM_DIR;
	snprintf(file, sizeof(file), UF_RING_DATA_FMT, name);
	snprintf(path, sizeof(path), "%s/%s", dir, file);
	r = map_ro(path, sizeof(struct uf_ring_hdr), &v->hdr, &v->hdr_len);
	if (r)
		return r;
	snprintf(file, sizeof(file), UF_RING_CONS_FMT, name);
	snprintf(path, sizeof(path), "%s/%s", dir, file);
	r = map_ro(path, 0, &v->ct, &v->ct_len);
	if (r || v->ct_len < sizeof(struct uf_ring_ctable) ||
	    ((const struct uf_ring_hdr *)v->hdr)->magic != UF_RING_MAGIC ||
	    ((const struct uf_ring_ctable *)v->ct)->magic != UF_RING_CT_MAGIC) {
		uf_ring_view_close(v);
		return r ? r : -EPROTO;
	}
	return 0;
}

void uf_ring_view_read(const struct uf_ring_view *v, struct uf_status_ring *out)
{
	const struct uf_ring_hdr *h = v->hdr;
	const struct uf_ring_ctable *ct = v->ct;
	const struct uf_ring_cslot *slots;
	uint64_t tail;
	uint32_t nslots;
	int n = 0;

	if (!h)
		return;
	/* Pairs with the producer's release store of tail after the records. */
	tail = uf_load_acquire_u64(&h->tail);
	out->sequence = tail;
	out->generation = h->generation;
	out->closed = uf_load_relaxed_u32(&h->state) == UF_RING_STATE_CLOSED;
	nslots = ct->nslots;
	if ((v->ct_len - sizeof(*ct)) / sizeof(*slots) < nslots)
		nslots = (uint32_t)((v->ct_len - sizeof(*ct)) / sizeof(*slots));
	slots = (const struct uf_ring_cslot *)(ct + 1);
	for (uint32_t i = 0; i < nslots; i++) {
		const struct uf_ring_cslot *s = &slots[i];
		/* The owner publishes its slot fields before its pid. */
		uint32_t pid = uf_load_acquire_u32(&s->pid);
		if (pid == 0)
			continue;
		if (n < UF_STATUS_MAX_CONSUMERS) {
			struct uf_status_consumer *c = &out->consumers[n];
			uint64_t pos = uf_load_relaxed_u64(&s->position);
			c->slot = i;
			c->pid = (int32_t)pid;
			c->position = pos;
			c->lag = tail > pos ? tail - pos : 0;
			c->last_seen_ns = uf_load_relaxed_u64(&s->last_seen_ns);
			c->lost = uf_load_relaxed_u64(&s->lost);
			c->laps = uf_load_relaxed_u64(&s->laps);
			c->sleeping = uf_load_relaxed_u32(&s->flags) & 1;
			memcpy(c->tag, s->tag, sizeof(c->tag));
			c->tag[sizeof(c->tag) - 1] = '\0';
		}
		n++;
	}
	out->nconsumers = n;
}

void uf_ring_view_close(struct uf_ring_view *v)
{
	if (v->hdr)
		munmap((void *)v->hdr, v->hdr_len);
	if (v->ct)
		munmap((void *)v->ct, v->ct_len);
	memset(v, 0, sizeof(*v));
}
