/* Every call libufconsumer exports, on both back ends: a local ring handle and a "nats://"
 * handle on the same ring as uf-bridge republishes it (a real nats-server on loopback).
 *
 * The list of calls is not written by hand twice: the test reads the exported functions from
 * libufconsumer.so's dynamic symbol table (ELF .dynsym) and requires that it equals the
 * table below, so a function exported without an entry here fails this test, and so does an
 * entry whose function is no longer exported. Each entry checks a result on each handle:
 * what the call returns against what the day's feeder reported, and the local handle's
 * answer against the NATS handle's (records, books, stamps, symbols, order tables).
 *
 * Entries run in table order, local handle first, in two phases: `open` while the feeder holds
 * the ring open with nothing published, `done` after the day was played and the ring closed
 * (the bridge relayed everything and exited). A second case laps a local and a NATS handle
 * for real and checks uf_consumer_last_lap on both (the table's day is too short to lap). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <dirent.h>
#include <elf.h>
#include <malloc.h>
#include <sys/mman.h>
#if defined(__SANITIZE_ADDRESS__)
/* libasan's (sanitizer/allocator_interface.h, not installed with every GCC) */
size_t __sanitizer_get_current_allocated_bytes(void);
#endif

#include "bridge_test_util.h"
#include "common/uf_compiler.h"
#include "ring/ufbook.h"

#define NBE      2     /* back ends: 0 local, 1 NATS */
#define DEPTH    "64"  /* image depth: every book of the day fits, snapshots are whole */
#define MAXRECS  65536 /* records of the day kept for comparisons */
#define MAXSNAPS 512   /* books of the day kept */

static const char *const be_name[NBE] = {"local", "nats"};

struct api_ctx {
	uf_consumer_t *h[NBE];          /* the handles under test (START_OLDEST) */
	uf_book_builder_t *b[NBE];      /* a builder synced from each handle */
	struct uf_record *recs;         /* the day's records as the local handle read them */
	uint64_t tail;                  /* records the feeder published (its summary) */
	uint64_t nrecs;                 /* records read into recs */
	struct uf_book_snapshot *snaps; /* every present book of the local handle, id order */
	size_t nsnaps;                  /* entries in snaps */
	char ring[32];                  /* ring name */
	char nats_name[300];            /* nats://.../RING */
	struct bt_nats ns;              /* the server */
	char start[256];                /* the feeder plays once this exists */
	char feed_out[256];             /* the feeder's summary */
	char status[256];               /* the bridge's status file */
	pid_t feed, bridge;             /* processes */
};

/* ---- the exported functions, from the library file itself ---- */

/* Names of the global functions libufconsumer.so defines in its dynamic symbol table. */
static size_t exported_functions(const char *path, char ***out)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	const unsigned char *p;
	const Elf64_Ehdr *eh;
	const Elf64_Shdr *sh;
	char **names = NULL;
	size_t n = 0;

	if (fd < 0)
		fail_msg("%s: %s", path, strerror(errno));
	assert_int_equal(fstat(fd, &st), 0);
	p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	assert_true(p != MAP_FAILED);
	eh = (const Elf64_Ehdr *)p;
	assert_memory_equal(eh->e_ident, ELFMAG, SELFMAG);
	assert_int_equal(eh->e_ident[EI_CLASS], ELFCLASS64);
	assert_true(eh->e_shoff + (uint64_t)eh->e_shnum * sizeof(*sh) <= (uint64_t)st.st_size);
	sh = (const Elf64_Shdr *)(p + eh->e_shoff);
	for (unsigned i = 0; i < eh->e_shnum; i++) {
		const Elf64_Sym *sym;
		const char *str;
		size_t count;

		if (sh[i].sh_type != SHT_DYNSYM)
			continue;
		assert_true(sh[i].sh_link < eh->e_shnum);
		sym = (const Elf64_Sym *)(p + sh[i].sh_offset);
		str = (const char *)(p + sh[sh[i].sh_link].sh_offset);
		count = sh[i].sh_size / sizeof(*sym);
		for (size_t k = 0; k < count; k++) {
			if (sym[k].st_shndx == SHN_UNDEF ||
			    ELF64_ST_TYPE(sym[k].st_info) != STT_FUNC ||
			    ELF64_ST_BIND(sym[k].st_info) == STB_LOCAL ||
			    ELF64_ST_VISIBILITY(sym[k].st_other) != STV_DEFAULT)
				continue;
			names = realloc(names, (n + 1) * sizeof(*names));
			assert_non_null(names);
			names[n] = strdup(str + sym[k].st_name);
			assert_non_null(names[n]);
			n++;
		}
	}
	munmap((void *)p, (size_t)st.st_size);
	assert_true(n > 0);
	*out = names;
	return n;
}

/* ---- helpers ---- */

static uint64_t count_dir(const char *path)
{
	DIR *d = opendir(path);
	uint64_t n = 0;

	assert_non_null(d);
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

/* Heap bytes this process has in use (ASan replaces malloc: then its own count). */
static uint64_t heap_in_use(void)
{
#if defined(__SANITIZE_ADDRESS__)
	return __sanitizer_get_current_allocated_bytes();
#else
	struct mallinfo2 m = mallinfo2();
	return m.uordblks + m.hblkhd;
#endif
}

static uint64_t count_lines(const char *path)
{
	char *s = uf_test_slurp(path);
	uint64_t n = 0;

	for (char *q = s; *q; q++)
		n += *q == '\n';
	free(s);
	return n;
}

static uf_consumer_t *attach_be(struct api_ctx *x, int be, int start)
{
	struct uf_consumer_options co;
	uf_consumer_t *c = NULL;
	char err[512] = "";
	int rc;

	uf_consumer_options_init(&co);
	co.start = start;
	co.tag = "test_consumer_api";
	rc = uf_consumer_attach(be ? x->nats_name : x->ring, &co, &c, err, sizeof(err));
	if (rc < 0)
		fail_msg("%s attach: %s (%d)", be_name[be], err, rc);
	assert_non_null(c);
	return c;
}

/* Reads the handle until the ring's end (-EPIPE), at most 30 s; records into `recs` (may be
 * NULL); returns the count and checks that sequences run from `from` without a hole. */
static uint64_t read_to_end(uf_consumer_t *c, uint64_t from, struct uf_record *recs, size_t cap)
{
	struct uf_record buf[100];
	uint64_t n = 0, seq, end = bt_now_ms() + 30000;

	for (;;) {
		int rc = uf_consumer_read(c, buf, 100, &seq);
		if (rc > 0) {
			assert_int_equal(seq, from + n);
			for (int i = 0; i < rc && recs; i++)
				if (n + (uint64_t)i < cap)
					recs[n + (uint64_t)i] = buf[i];
			n += (uint64_t)rc;
			continue;
		}
		if (rc == -EPIPE)
			return n;
		assert_int_equal(rc, -EAGAIN);
		assert_true(bt_now_ms() < end);
		assert_int_equal(uf_consumer_wait(c, 100000000), 0);
	}
}

static void expect_same_book(const struct uf_book_snapshot *a, const struct uf_book_snapshot *b)
{
	assert_int_equal(a->instrument, b->instrument);
	assert_string_equal(a->symbol, b->symbol);
	if (a->flags != b->flags)
		fail_msg("book %u (%s): flags %#x, want %#x (bids %u/%u, asks %u/%u)",
		         a->instrument, a->symbol, a->flags, b->flags, a->nbid, b->nbid, a->nask,
		         b->nask);
	assert_int_equal(a->nbid, b->nbid);
	assert_int_equal(a->nask, b->nask);
	assert_memory_equal(a->bid, b->bid, a->nbid * sizeof(a->bid[0]));
	assert_memory_equal(a->ask, b->ask, a->nask * sizeof(a->ask[0]));
	assert_int_equal(a->volume, b->volume);
	if (a->trades != b->trades)
		fail_msg(
		    "book %u (%s): trades %llu, want %llu (volume %llu / %llu, last %lld / %lld)",
		    a->instrument, a->symbol, (unsigned long long)a->trades,
		    (unsigned long long)b->trades, (unsigned long long)a->volume,
		    (unsigned long long)b->volume, (long long)a->last_price,
		    (long long)b->last_price);
	assert_int_equal(a->last_price, b->last_price);
	assert_int_equal(a->last_shares, b->last_shares);
	assert_int_equal(a->round_lot, b->round_lot);
}

/* The builder's book of s->instrument is the snapshot's (levels, symbol). */
static void expect_builder_book(const uf_book_builder_t *b, const struct uf_book_snapshot *s)
{
	struct uf_level lv[UF_BOOK_MAX_DEPTH];
	int n;

	assert_string_equal(uf_book_builder_symbol(b, s->instrument), s->symbol);
	assert_int_equal(uf_book_builder_depth(b, s->instrument, UF_SIDE_BID), s->nbid);
	assert_int_equal(uf_book_builder_depth(b, s->instrument, UF_SIDE_ASK), s->nask);
	n = uf_book_builder_levels(b, s->instrument, UF_SIDE_BID, lv, UF_BOOK_MAX_DEPTH);
	assert_int_equal(n, (int)s->nbid);
	assert_memory_equal(lv, s->bid, s->nbid * sizeof(lv[0]));
	n = uf_book_builder_levels(b, s->instrument, UF_SIDE_ASK, lv, UF_BOOK_MAX_DEPTH);
	assert_int_equal(n, (int)s->nask);
	assert_memory_equal(lv, s->ask, s->nask * sizeof(lv[0]));
}

static int stop_at_second(const struct uf_book_snapshot *s, void *arg)
{
	int *calls = arg;

	(void)s;
	return ++*calls == 2 ? 42 : 0;
}

/* ---- one check per exported function ---- */

static void open_options_init(struct api_ctx *x, int be)
{
	struct uf_consumer_options co;
	struct uf_consumer_info info;
	uf_consumer_t *c;

	memset(&co, 0xa5, sizeof(co));
	uf_consumer_options_init(&co);
	assert_int_equal(co.spin_ns, 20000);
	assert_int_equal(co.start, UF_CONSUMER_START_LATEST);
	assert_int_equal(co.owner, 0);
	assert_null(co.tag);
	assert_null(co.dir);
	/* the defaults attach this back end at the tail */
	assert_int_equal(uf_consumer_attach(be ? x->nats_name : x->ring, &co, &c, NULL, 0), 0);
	uf_consumer_get_info(c, &info);
	assert_int_equal(info.position, info.tail);
	uf_consumer_detach(c);
}

static void open_attach(struct api_ctx *x, int be)
{
	char name[400], err[512] = "";
	uf_consumer_t *c = (uf_consumer_t *)&err;
	int rc;

	if (be)
		snprintf(name, sizeof(name), "%s/nosuch_%d", x->ns.urls, (int)getpid());
	else
		snprintf(name, sizeof(name), "nosuch_%d", (int)getpid());
	rc = uf_consumer_attach(name, NULL, &c, err, sizeof(err));
	assert_int_equal(rc, -ENOENT);
	assert_true(strlen(err) > 10);
	assert_true(c == (uf_consumer_t *)&err); /* untouched on failure */
	assert_int_equal(uf_consumer_attach(NULL, NULL, &c, NULL, 0), -EINVAL);
	{
		/* UF_CONSUMER_START_JOURNAL: this producer keeps no journal (local: -ENODATA);
		 * NATS cannot read the producer's files (-ENOTSUP). Both say why. */
		struct uf_consumer_options co;
		uf_consumer_options_init(&co);
		co.start = UF_CONSUMER_START_JOURNAL;
		err[0] = 0;
		rc = uf_consumer_attach(be ? x->nats_name : x->ring, &co, &c, err, sizeof(err));
		assert_int_equal(rc, be ? -ENOTSUP : -ENODATA);
		assert_non_null(strstr(err, be ? "START_JOURNAL" : "journal"));
	}
	assert_non_null(x->h[be]); /* attached in the setup: START_OLDEST */
}

/* Cycles of attach + detach leave no descriptor, mapping or thread behind. Counted after a
 * warm-up cycle (the NATS client library keeps process-wide state after its first use) and
 * waited for, bounded: that library ends some of its threads and sockets asynchronously. */
static void open_detach(struct api_ctx *x, int be)
{
	uint64_t fds, maps, tasks, end;

	uf_consumer_detach(NULL);
	uf_consumer_detach(attach_be(x, be, UF_CONSUMER_START_LATEST));
	bt_sleep_ms(200);
	fds = count_dir("/proc/self/fd");
	maps = count_lines("/proc/self/maps");
	tasks = count_dir("/proc/self/task");
	for (int i = 0; i < 3; i++)
		uf_consumer_detach(attach_be(x, be, UF_CONSUMER_START_LATEST));
	for (end = bt_now_ms() + 10000;; bt_sleep_ms(20)) {
		uint64_t f = count_dir("/proc/self/fd"), m = count_lines("/proc/self/maps"),
		         t = count_dir("/proc/self/task");
		/* mappings only on the local back end (its ring and table): the NATS
		 * threads' malloc arenas stay mapped for the process, by glibc's design */
		if (f <= fds && (be || m <= maps) && t <= tasks)
			break;
		if (bt_now_ms() > end)
			fail_msg("%s: after 3 attach/detach cycles: %" PRIu64 " fds (was %" PRIu64
			         "), %" PRIu64 " mappings (was %" PRIu64 "), %" PRIu64
			         " threads (was %" PRIu64 ")",
			         be_name[be], f, fds, m, maps, t, tasks);
	}
}

static void open_wait(struct api_ctx *x, int be)
{
	uint64_t t0 = bt_now_ms();

	assert_int_equal(uf_consumer_wait(x->h[be], 60000000), -ETIMEDOUT);
	assert_true(bt_now_ms() - t0 >= 55);
	assert_true(bt_now_ms() - t0 < 5000);
	assert_int_equal(uf_consumer_wait(NULL, 0), -EINVAL);
}

static void open_next(struct api_ctx *x, int be)
{
	struct uf_record r;
	uint64_t seq = 77;

	assert_int_equal(uf_consumer_next(x->h[be], &r, &seq), -EAGAIN);
	assert_int_equal(seq, 77);
}

static void open_read(struct api_ctx *x, int be)
{
	struct uf_record r[4];

	assert_int_equal(uf_consumer_read(x->h[be], r, 4, NULL), -EAGAIN);
}

static void open_get_info(struct api_ctx *x, int be)
{
	struct uf_consumer_info info;

	memset(&info, 0xa5, sizeof(info));
	uf_consumer_get_info(x->h[be], &info);
	assert_int_equal(info.tail, 0);
	assert_int_equal(info.position, 0);
	assert_int_equal(info.received, 0);
	assert_int_equal(info.closed, 0);
	assert_int_equal(info.depth, 64);
	assert_true(info.max_instruments > 0);
	assert_true(info.capacity > 0);
}

static void open_image_seq(struct api_ctx *x, int be)
{
	assert_int_equal(uf_consumer_image_seq(x->h[be]), 0);
	assert_int_equal(uf_consumer_image_seq(NULL), 0);
}

static void open_snapshot_all(struct api_ctx *x, int be)
{
	struct bt_books l = {0};

	assert_int_equal(uf_consumer_snapshot_all(x->h[be], bt_keep, &l), 0);
	assert_int_equal(l.n, 0); /* nothing published: no book */
	assert_int_equal(uf_consumer_snapshot_all(x->h[be], NULL, NULL), -EINVAL);
}

static void done_read(struct api_ctx *x, int be)
{
	struct uf_record *r = be ? calloc(MAXRECS, sizeof(*r)) : x->recs;
	struct uf_record one;
	uint64_t n;

	assert_non_null(r);
	n = read_to_end(x->h[be], 0, r, MAXRECS);
	assert_int_equal(n, x->tail);
	if (be == 0)
		x->nrecs = n;
	else /* the same records, byte for byte, with the same sequences */
		assert_memory_equal(r, x->recs, n * sizeof(*r));
	assert_int_equal(uf_consumer_read(x->h[be], &one, 1, NULL), -EPIPE);
	if (be)
		free(r);
}

static void done_seek(struct api_ctx *x, int be)
{
	struct uf_record r;
	uint64_t seq;

	assert_int_equal(uf_consumer_seek(x->h[be], x->tail + 1), -ERANGE);
	assert_int_equal(uf_consumer_seek(x->h[be], x->tail), 0);
	assert_int_equal(uf_consumer_next(x->h[be], &r, &seq), -EPIPE);
	assert_int_equal(uf_consumer_seek(x->h[be], 0), 0);
	assert_int_equal(uf_consumer_next(x->h[be], &r, &seq), 0);
	assert_int_equal(seq, 0);
	assert_memory_equal(&r, &x->recs[0], sizeof(r));
	assert_int_equal(uf_consumer_seek(NULL, 0), -EINVAL);
}

static void done_next(struct api_ctx *x, int be)
{
	struct uf_record r;
	uint64_t seq;

	assert_int_equal(uf_consumer_seek(x->h[be], 5), 0);
	for (uint64_t s = 5; s < 9; s++) {
		assert_int_equal(uf_consumer_next(x->h[be], &r, &seq), 0);
		assert_int_equal(seq, s);
		assert_memory_equal(&r, &x->recs[s], sizeof(r));
	}
}

static void done_wait(struct api_ctx *x, int be)
{
	uint64_t t0;

	assert_int_equal(uf_consumer_seek(x->h[be], 3), 0); /* records to read: news */
	t0 = bt_now_ms();
	assert_int_equal(uf_consumer_wait(x->h[be], 5000000000ll), 0);
	assert_int_equal(uf_consumer_seek(x->h[be], x->tail), 0); /* closed: news too */
	assert_int_equal(uf_consumer_wait(x->h[be], 5000000000ll), 0);
	assert_true(bt_now_ms() - t0 < 2500);
}

static void done_get_info(struct api_ctx *x, int be)
{
	struct uf_consumer_info info, other;

	uf_consumer_get_info(x->h[be], &info);
	assert_int_equal(info.tail, x->tail);
	assert_int_equal(info.position, x->tail); /* done_wait left it there */
	assert_int_equal(info.closed, 1);
	assert_int_equal(info.laps, 0);
	assert_int_equal(info.lost, 0);
	assert_true(info.received >= x->tail);
	assert_int_equal(info.depth, 64);
	uf_consumer_get_info(x->h[!be], &other);
	assert_int_equal(info.generation, other.generation);
	assert_int_equal(info.max_instruments, other.max_instruments);
}

static void done_last_lap(struct api_ctx *x, int be)
{
	struct uf_consumer_lap lap;

	memset(&lap, 0xa5, sizeof(lap));
	uf_consumer_last_lap(x->h[be], &lap); /* no lap on this day */
	assert_int_equal(lap.from_seq, 0);
	assert_int_equal(lap.resume_seq, 0);
	assert_int_equal(lap.lost, 0);
}

static void done_image_seq(struct api_ctx *x, int be)
{
	/* the feeder committed the image after its last message: it reflects the whole day */
	assert_int_equal(uf_consumer_image_seq(x->h[be]), x->tail);
}

static void done_snapshot_all(struct api_ctx *x, int be)
{
	struct bt_books l = {0};
	int calls = 0;

	assert_int_equal(uf_consumer_snapshot_all(x->h[be], bt_keep, &l), 0);
	assert_true(l.n >= 4);
	if (be == 0) {
		assert_true(l.n <= MAXSNAPS);
		memcpy(x->snaps, l.v, l.n * sizeof(*l.v));
		x->nsnaps = l.n;
	} else {
		assert_int_equal(l.n, x->nsnaps);
		for (size_t i = 0; i < l.n; i++)
			expect_same_book(&l.v[i], &x->snaps[i]);
	}
	for (size_t i = 0; i < l.n; i++)
		assert_int_equal(l.v[i].stamp, x->tail);
	free(l.v);
	assert_int_equal(uf_consumer_snapshot_all(x->h[be], stop_at_second, &calls), 42);
	assert_int_equal(calls, 2);
}

static void done_snapshot(struct api_ctx *x, int be)
{
	struct uf_consumer_info info;
	struct uf_book_snapshot s;

	for (size_t i = 0; i < x->nsnaps; i++) {
		assert_int_equal(uf_consumer_snapshot(x->h[be], x->snaps[i].instrument, &s), 0);
		expect_same_book(&s, &x->snaps[i]);
	}
	uf_consumer_get_info(x->h[be], &info);
	assert_int_equal(uf_consumer_snapshot(x->h[be], info.max_instruments, &s), -ERANGE);
	assert_int_equal(uf_consumer_snapshot(x->h[be], 0, NULL), -EINVAL);
}

static void done_lookup(struct api_ctx *x, int be)
{
	uint32_t id = 0;

	for (size_t i = 0; i < x->nsnaps; i++) {
		if (!x->snaps[i].symbol[0])
			continue;
		assert_int_equal(uf_consumer_lookup(x->h[be], x->snaps[i].symbol, &id), 0);
		assert_int_equal(id, x->snaps[i].instrument);
	}
	assert_int_equal(uf_consumer_lookup(x->h[be], "ZZNOSUCH", &id), -ENOENT);
	assert_int_equal(uf_consumer_lookup(x->h[be], "TOOLONGNAME", &id), -ENOENT);
	assert_int_equal(uf_consumer_lookup(x->h[be], "AAPL", NULL), -EINVAL);
}

static void done_strerror(struct api_ctx *x, int be)
{
	struct uf_record r;
	int rc;

	assert_int_equal(uf_consumer_seek(x->h[be], x->tail), 0);
	rc = uf_consumer_next(x->h[be], &r, NULL);
	assert_int_equal(rc, -EPIPE);
	assert_string_equal(uf_consumer_strerror(rc), "ring closed by the producer");
	assert_string_equal(uf_consumer_strerror(-EOVERFLOW), "lapped: records were lost");
	assert_string_equal(uf_consumer_strerror(-ENOTSUP), "not supported by this back end");
}

/* ---- the book builder on each handle ---- */

static void done_book_builder_create(struct api_ctx *x, int be)
{
	struct uf_consumer_info info;
	uf_book_builder_t *b = NULL;

	assert_int_equal(uf_book_builder_create(0, &b), 0);
	assert_int_equal(uf_book_builder_max_instruments(b), 65536);
	uf_book_builder_destroy(b);
	uf_consumer_get_info(x->h[be], &info);
	assert_int_equal(uf_book_builder_create(info.max_instruments, &x->b[be]), 0);
	assert_int_equal(uf_book_builder_create(1, NULL), -EINVAL);
}

static void done_book_builder_max_instruments(struct api_ctx *x, int be)
{
	struct uf_consumer_info info;

	uf_consumer_get_info(x->h[be], &info);
	assert_int_equal(uf_book_builder_max_instruments(x->b[be]), info.max_instruments);
}

/* The handover on this back end: the image's books, the consumer moved to the image's
 * sequence (the end of the day here). */
static void done_book_builder_sync(struct api_ctx *x, int be)
{
	struct uf_book_builder_stats st;
	struct uf_consumer_info info;

	assert_int_equal(uf_consumer_seek(x->h[be], 0), 0);
	assert_int_equal(uf_book_builder_sync(x->b[be], x->h[be]), 0);
	uf_book_builder_get_stats(x->b[be], &st);
	assert_int_equal(st.syncs, 1);
	uf_consumer_get_info(x->h[be], &info);
	assert_int_equal(info.position, x->tail);
	for (size_t i = 0; i < x->nsnaps; i++)
		expect_builder_book(x->b[be], &x->snaps[i]);
}

static void done_book_builder_symbol(struct api_ctx *x, int be)
{
	for (size_t i = 0; i < x->nsnaps; i++)
		assert_string_equal(uf_book_builder_symbol(x->b[be], x->snaps[i].instrument),
		                    x->snaps[i].symbol);
	assert_string_equal(uf_book_builder_symbol(x->b[be], 1u << 30), "");
}

static void done_book_builder_top(struct api_ctx *x, int be)
{
	int checked = 0;

	for (size_t i = 0; i < x->nsnaps; i++) {
		const struct uf_book_snapshot *s = &x->snaps[i];
		struct uf_level bid, ask;
		int want = (s->nbid ? 1 : 0) | (s->nask ? 2 : 0);

		assert_int_equal(uf_book_builder_top(x->b[be], s->instrument, &bid, &ask), want);
		if (s->nbid)
			assert_memory_equal(&bid, &s->bid[0], sizeof(bid));
		if (s->nask)
			assert_memory_equal(&ask, &s->ask[0], sizeof(ask));
		checked += want == 3;
	}
	assert_true(checked > 0); /* some book had both sides */
	assert_int_equal(uf_book_builder_top(x->b[be], 1u << 30, NULL, NULL), -ERANGE);
}

static void done_book_builder_levels(struct api_ctx *x, int be)
{
	struct uf_level lv[2];

	for (size_t i = 0; i < x->nsnaps; i++)
		expect_builder_book(x->b[be], &x->snaps[i]);
	assert_int_equal(uf_book_builder_levels(x->b[be], 0, 7, lv, 2), -EINVAL);
	assert_int_equal(uf_book_builder_levels(x->b[be], 1u << 30, UF_SIDE_BID, lv, 2), -ERANGE);
}

static void done_book_builder_depth(struct api_ctx *x, int be)
{
	size_t levels = 0;

	for (size_t i = 0; i < x->nsnaps; i++) {
		size_t d = uf_book_builder_depth(x->b[be], x->snaps[i].instrument, UF_SIDE_BID);
		assert_int_equal(d, x->snaps[i].nbid);
		levels += d;
	}
	assert_true(levels > 0);
	assert_int_equal(uf_book_builder_depth(x->b[be], 1u << 30, UF_SIDE_BID), 0);
}

static void done_book_builder_flags(struct api_ctx *x, int be)
{
	for (size_t i = 0; i < x->nsnaps; i++)
		assert_int_equal(uf_book_builder_flags(x->b[be], x->snaps[i].instrument),
		                 x->snaps[i].flags);
	assert_int_equal(uf_book_builder_flags(x->b[be], 1u << 30), 0);
}

/* The builder's copy of each book, as an image entry holds it, is the image's (both back
 * ends' builders were synced from their handle's image). */
static void done_book_builder_snapshot(struct api_ctx *x, int be)
{
	struct uf_book_snapshot s;

	for (size_t i = 0; i < x->nsnaps; i++) {
		assert_int_equal(uf_book_builder_snapshot(x->b[be], x->snaps[i].instrument, &s), 0);
		expect_same_book(&s, &x->snaps[i]);
	}
	assert_int_equal(uf_book_builder_snapshot(x->b[be], 1u << 30, &s), -ERANGE);
}

/* A record of the day is already in the synced image: skipped, not applied twice. */
static void done_book_builder_apply(struct api_ctx *x, int be)
{
	struct uf_book_builder_stats st0, st1;
	uint64_t k = 0;

	while (k < x->nrecs && x->recs[k].kind != UF_REC_LEVEL)
		k++;
	assert_true(k < x->nrecs);
	uf_book_builder_get_stats(x->b[be], &st0);
	assert_int_equal(uf_book_builder_apply(x->b[be], &x->recs[k], k), 0);
	uf_book_builder_get_stats(x->b[be], &st1);
	assert_int_equal(st1.skipped, st0.skipped + 1);
	expect_builder_book(x->b[be], &x->snaps[0]);
}

/* A second builder reads this handle's whole day record by record, tracking orders: it must
 * end with the books of the synced one. */
static void done_book_builder_next(struct api_ctx *x, int be)
{
	struct uf_book_builder_stats st;
	uf_book_builder_t *b;
	struct uf_record r;
	uint64_t seq, n = 0;
	int rc;

	assert_int_equal(uf_book_builder_create(uf_book_builder_max_instruments(x->b[be]), &b), 0);
	assert_int_equal(uf_consumer_seek(x->h[be], 0), 0);
	while ((rc = uf_book_builder_next(b, x->h[be], &r, &seq)) == 0) {
		assert_int_equal(seq, n);
		assert_memory_equal(&r, &x->recs[n], sizeof(r));
		n++;
	}
	assert_int_equal(rc, -EPIPE);
	assert_int_equal(n, x->tail);
	uf_book_builder_get_stats(b, &st);
	assert_true(st.applied > 0);
	for (size_t i = 0; i < x->nsnaps; i++)
		expect_builder_book(b, &x->snaps[i]);
	uf_book_builder_destroy(b);
}

static void done_book_builder_load(struct api_ctx *x, int be)
{
	struct uf_book_snapshot s;
	uf_book_builder_t *b;

	assert_int_equal(uf_book_builder_create(uf_book_builder_max_instruments(x->b[be]), &b), 0);
	assert_int_equal(uf_consumer_snapshot(x->h[be], x->snaps[0].instrument, &s), 0);
	assert_int_equal(uf_book_builder_load(b, &s), 0);
	expect_builder_book(b, &x->snaps[0]);
	s.instrument = 1u << 30;
	assert_int_equal(uf_book_builder_load(b, &s), -ERANGE);
	uf_book_builder_destroy(b);
}

struct orders_seen {
	uint64_t n;                 /* orders visited */
	struct uf_book_order first; /* the first one */
};

static int count_order(const struct uf_book_order *o, void *arg)
{
	struct orders_seen *s = arg;

	if (s->n++ == 0)
		s->first = *o;
	assert_true(o->side == UF_SIDE_BID || o->side == UF_SIDE_ASK);
	assert_true(o->shares > 0);
	return 0;
}

static uint64_t g_orders_live[NBE]; /* per back end, compared across */

/* Order tracking over this handle's whole day: the same live orders on both back ends. */
static uf_book_builder_t *ordered_builder(struct api_ctx *x, int be)
{
	uf_book_builder_t *b;
	int rc;

	assert_int_equal(uf_book_builder_create(uf_book_builder_max_instruments(x->b[be]), &b), 0);
	assert_int_equal(uf_book_builder_track_orders(b, 1 << 16), 0);
	assert_int_equal(uf_consumer_seek(x->h[be], 0), 0);
	while ((rc = uf_book_builder_next(b, x->h[be], NULL, NULL)) == 0)
		;
	assert_int_equal(rc, -EPIPE);
	return b;
}

static void done_book_builder_track_orders(struct api_ctx *x, int be)
{
	struct uf_book_builder_stats st;
	uf_book_builder_t *b = ordered_builder(x, be);

	assert_int_equal(uf_book_builder_track_orders(b, 10), -EINVAL); /* already on */
	uf_book_builder_get_stats(b, &st);
	assert_true(st.orders_live > 0);
	assert_int_equal(st.orders_unknown, 0); /* read from the first record */
	g_orders_live[be] = st.orders_live;
	if (be)
		assert_int_equal(g_orders_live[1], g_orders_live[0]);
	uf_book_builder_destroy(b);
}

static void done_book_builder_for_each_order(struct api_ctx *x, int be)
{
	struct uf_book_builder_stats st;
	struct orders_seen seen = {0};
	uf_book_builder_t *b = ordered_builder(x, be);

	assert_int_equal(uf_book_builder_for_each_order(b, count_order, &seen), 0);
	uf_book_builder_get_stats(b, &st);
	assert_int_equal(seen.n, st.orders_live);
	assert_int_equal(seen.n, g_orders_live[0]);
	assert_int_equal(uf_book_builder_for_each_order(x->b[be], count_order, &seen), -ENOTSUP);
	uf_book_builder_destroy(b);
}

static void done_book_builder_order(struct api_ctx *x, int be)
{
	struct orders_seen seen = {0};
	struct uf_book_order o;
	uf_book_builder_t *b = ordered_builder(x, be);

	assert_int_equal(uf_book_builder_for_each_order(b, count_order, &seen), 0);
	assert_true(seen.n > 0);
	assert_int_equal(uf_book_builder_order(b, seen.first.ref, &o), 0);
	assert_memory_equal(&o, &seen.first, sizeof(o));
	assert_int_equal(uf_book_builder_order(b, ~0ull, &o), -ENOENT);
	assert_int_equal(uf_book_builder_order(x->b[be], seen.first.ref, &o), -ENOTSUP);
	uf_book_builder_destroy(b);
}

static void done_book_builder_get_stats(struct api_ctx *x, int be)
{
	struct uf_book_builder_stats st;

	memset(&st, 0xa5, sizeof(st));
	uf_book_builder_get_stats(x->b[be], &st);
	assert_int_equal(st.syncs, 1);
	assert_int_equal(st.skipped, 1); /* done_book_builder_apply's record */
	assert_int_equal(st.laps, 0);
	assert_int_equal(st.orders_live, 0);
}

static void done_book_builder_clear(struct api_ctx *x, int be)
{
	struct uf_book_builder_stats st0, st1;

	uf_book_builder_get_stats(x->b[be], &st0);
	uf_book_builder_clear(x->b[be]);
	uf_book_builder_get_stats(x->b[be], &st1);
	assert_int_equal(st1.resets, st0.resets + 1);
	for (size_t i = 0; i < x->nsnaps; i++) {
		assert_int_equal(
		    uf_book_builder_depth(x->b[be], x->snaps[i].instrument, UF_SIDE_BID), 0);
		assert_int_equal(
		    uf_book_builder_depth(x->b[be], x->snaps[i].instrument, UF_SIDE_ASK), 0);
		/* symbols stay */
		assert_string_equal(uf_book_builder_symbol(x->b[be], x->snaps[i].instrument),
		                    x->snaps[i].symbol);
	}
}

/* Frees what create allocated: the heap in use drops by at least the per-instrument table. */
static void done_book_builder_destroy(struct api_ctx *x, int be)
{
	uint64_t before, after;

	uf_book_builder_destroy(NULL);
	before = heap_in_use();
	uf_book_builder_destroy(x->b[be]);
	x->b[be] = NULL;
	after = heap_in_use();
	assert_true(before >= after + 65536);
}

/* A new generation on the same ring: the handle starts over (START_OLDEST) with zero
 * counters and the same records. */
static void done_reattach(struct api_ctx *x, int be)
{
	struct uf_consumer_info info;
	char err[256] = "";
	uint64_t from, n;

	assert_int_equal(uf_consumer_reattach(NULL, err, sizeof(err)), -EINVAL);
	assert_int_equal(uf_consumer_reattach(x->h[be], err, sizeof(err)), 0);
	uf_consumer_get_info(x->h[be], &info);
	assert_int_equal(info.received, 0);
	assert_int_equal(info.lost, 0);
	from = info.position; /* local: the oldest record; NATS: the bucket's commit */
	assert_true(from <= x->tail);
	n = read_to_end(x->h[be], from, NULL, 0);
	assert_int_equal(from + n, x->tail);
	uf_consumer_get_info(x->h[be], &info);
	assert_int_equal(info.received, n);
	assert_int_equal(info.tail, x->tail);
}

struct api_entry {
	const char *name;                        /* the exported function */
	void (*open)(struct api_ctx *x, int be); /* on the open, empty ring (may be NULL) */
	void (*done)(struct api_ctx *x, int be); /* on the played, closed day (may be NULL) */
};

/* Every exported function: a new one must be added here with a check on both back ends. */
static const struct api_entry api[] = {
    {"uf_consumer_options_init", open_options_init, NULL},
    {"uf_consumer_attach", open_attach, NULL},
    {"uf_consumer_detach", open_detach, NULL},
    {"uf_consumer_read", open_read, done_read},
    {"uf_consumer_next", open_next, done_next},
    {"uf_consumer_seek", NULL, done_seek},
    {"uf_consumer_wait", open_wait, done_wait},
    {"uf_consumer_get_info", open_get_info, done_get_info},
    {"uf_consumer_image_seq", open_image_seq, done_image_seq},
    {"uf_consumer_snapshot_all", open_snapshot_all, done_snapshot_all},
    {"uf_consumer_last_lap", NULL, done_last_lap},
    {"uf_consumer_snapshot", NULL, done_snapshot},
    {"uf_consumer_lookup", NULL, done_lookup},
    {"uf_consumer_strerror", NULL, done_strerror},
    {"uf_book_builder_create", NULL, done_book_builder_create},
    {"uf_book_builder_max_instruments", NULL, done_book_builder_max_instruments},
    {"uf_book_builder_sync", NULL, done_book_builder_sync},
    {"uf_book_builder_symbol", NULL, done_book_builder_symbol},
    {"uf_book_builder_top", NULL, done_book_builder_top},
    {"uf_book_builder_levels", NULL, done_book_builder_levels},
    {"uf_book_builder_depth", NULL, done_book_builder_depth},
    {"uf_book_builder_flags", NULL, done_book_builder_flags},
    {"uf_book_builder_snapshot", NULL, done_book_builder_snapshot},
    {"uf_book_builder_apply", NULL, done_book_builder_apply},
    {"uf_book_builder_next", NULL, done_book_builder_next},
    {"uf_book_builder_load", NULL, done_book_builder_load},
    {"uf_book_builder_track_orders", NULL, done_book_builder_track_orders},
    {"uf_book_builder_for_each_order", NULL, done_book_builder_for_each_order},
    {"uf_book_builder_order", NULL, done_book_builder_order},
    {"uf_book_builder_get_stats", NULL, done_book_builder_get_stats},
    {"uf_book_builder_clear", NULL, done_book_builder_clear},
    {"uf_book_builder_destroy", NULL, done_book_builder_destroy},
    {"uf_consumer_reattach", NULL, done_reattach},
};

static void test_exported_functions_are_exactly_the_table(void **state)
{
	char **names;
	size_t n = exported_functions(UF_CONSUMER_LIB, &names);
	int missing = 0;

	(void)state;
	for (size_t i = 0; i < n; i++) {
		size_t k = 0;
		while (k < UF_ARRAY_SIZE(api) && strcmp(api[k].name, names[i]) != 0)
			k++;
		if (k == UF_ARRAY_SIZE(api)) {
			fprintf(stderr, "exported but not tested on every back end: %s\n",
			        names[i]);
			missing++;
		}
	}
	for (size_t k = 0; k < UF_ARRAY_SIZE(api); k++) {
		size_t i = 0;
		while (i < n && strcmp(api[k].name, names[i]) != 0)
			i++;
		if (i == n) {
			fprintf(stderr, "in the table but not exported: %s\n", api[k].name);
			missing++;
		}
		assert_true(api[k].open || api[k].done);
	}
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	assert_int_equal(missing, 0);
}

/* Starts the server, the feeder of `day` into a ring of `capacity` records (open, waiting
 * for its start file) and the bridge. */
static void start_day(struct api_ctx *x, const char *day, const char *capacity, const char *tag)
{
	char *feed_argv[] = {"uf-bridge-feed", "--in",    (char *)day, "--ring", x->ring,
	                     "--start-file",   x->start,  "--rate",    "0",      "--capacity",
	                     (char *)capacity, "--depth", DEPTH,       NULL};
	char *bridge_argv[] = {"uf-bridge", "--ring",        x->ring, "--nats",
	                       x->ns.urls,  "--replicas",    "1",     "--status-file",
	                       x->status,   "--kv-interval", "50",    "--exit-on-close",
	                       NULL};
	char out[300];

	snprintf(x->ring, sizeof(x->ring), "%s_%d", tag, (int)getpid());
	snprintf(x->start, sizeof(x->start), "%s/%s.start", bt_dir, tag);
	snprintf(x->feed_out, sizeof(x->feed_out), "%s/%s.feed", bt_dir, tag);
	snprintf(x->status, sizeof(x->status), "%s/%s.status", bt_dir, tag);
	bt_nats_start(&x->ns, 1, tag);
	snprintf(x->nats_name, sizeof(x->nats_name), "%s/%s", x->ns.urls, x->ring);
	bridge_argv[4] = x->ns.urls;
	x->feed = bt_spawn(UF_BRIDGE_FEED, feed_argv, x->feed_out);
	bt_wait_ring_open(x->ring); /* the ring is made */
	snprintf(out, sizeof(out), "%s/%s.bridge", bt_dir, tag);
	x->bridge = bt_spawn(bt_bin("uf-bridge"), bridge_argv, out);
	free(bt_wait_status(x->status, "generation", 0, 30000));
}

/* Plays the day; returns once the feeder closed the ring and the bridge relayed it all. */
static void play_day(struct api_ctx *x)
{
	char *feed;

	bt_touch(x->start);
	assert_int_equal(bt_wait(x->feed, 90000), 0);
	assert_int_equal(bt_wait(x->bridge, 90000), 0);
	feed = uf_test_slurp(x->feed_out);
	assert_true(bt_json_num(feed, "tail") > 1000);
	x->tail = (uint64_t)bt_json_num(feed, "tail");
	free(feed);
}

static void run_phase(struct api_ctx *x, int done)
{
	for (size_t k = 0; k < UF_ARRAY_SIZE(api); k++) {
		void (*fn)(struct api_ctx *, int) = done ? api[k].done : api[k].open;
		for (int be = 0; fn && be < NBE; be++) {
			fprintf(stderr, "[ %s ] %s on the %s handle\n", done ? "done" : "open",
			        api[k].name, be_name[be]);
			fn(x, be);
		}
	}
}

static void test_every_exported_function_on_a_local_and_a_nats_handle(void **state)
{
	static struct api_ctx x;

	(void)state;
	memset(&x, 0, sizeof(x));
	x.recs = calloc(MAXRECS, sizeof(*x.recs));
	x.snaps = calloc(MAXSNAPS, sizeof(*x.snaps));
	assert_non_null(x.recs);
	assert_non_null(x.snaps);
	start_day(&x, bt_gen_day(4000, 12, 61), "1048576", "api");
	x.h[0] = attach_be(&x, 0, UF_CONSUMER_START_OLDEST);
	x.h[1] = attach_be(&x, 1, UF_CONSUMER_START_OLDEST);
	run_phase(&x, 0);
	play_day(&x);
	assert_true(x.tail <= MAXRECS);
	run_phase(&x, 1);
	uf_consumer_detach(x.h[0]);
	uf_consumer_detach(x.h[1]);
	bt_nats_stop(&x.ns);
	free(x.recs);
	free(x.snaps);
}

/* uf_consumer_last_lap after a real lap on each back end: handles that read nothing while a
 * day longer than their buffer goes through (the local ring holds 2^18 records, the NATS
 * client 2^18 too) must report -EOVERFLOW from sequence 0 with the exact count lost, and
 * continue at the sequence they announced. (The table's check of uf_consumer_last_lap sees
 * no lap: its day fits.) */
static void test_last_lap_after_a_real_lap_on_a_local_and_a_nats_handle(void **state)
{
	static struct api_ctx x;
	uint64_t end;

	(void)state;
	memset(&x, 0, sizeof(x));
	start_day(&x, bt_gen_day(150000, 30, 43), "262144", "lap");
	x.h[0] = attach_be(&x, 0, UF_CONSUMER_START_OLDEST);
	x.h[1] = attach_be(&x, 1, UF_CONSUMER_START_OLDEST);
	play_day(&x);
	assert_true(x.tail > 262144 + 1000);                /* more than either buffer */
	for (end = bt_now_ms() + 60000;; bt_sleep_ms(20)) { /* the NATS receiver has it all */
		struct uf_consumer_info info;
		uf_consumer_get_info(x.h[1], &info);
		if (info.tail == x.tail)
			break;
		assert_true(bt_now_ms() < end);
	}
	for (int be = 0; be < NBE; be++) {
		struct uf_consumer_info info;
		struct uf_consumer_lap lap;
		struct uf_record r[8];
		uint64_t seq = 0;
		int rc;

		uf_consumer_last_lap(x.h[be], &lap);
		assert_int_equal(lap.lost, 0); /* none yet */
		assert_int_equal(uf_consumer_read(x.h[be], r, 8, &seq), -EOVERFLOW);
		uf_consumer_last_lap(x.h[be], &lap);
		assert_int_equal(lap.from_seq, 0);
		assert_true(lap.resume_seq > x.tail - 262144); /* within the last buffer's worth */
		assert_true(lap.resume_seq < x.tail);
		assert_int_equal(lap.lost, lap.resume_seq - lap.from_seq);
		uf_consumer_get_info(x.h[be], &info);
		assert_int_equal(info.laps, 1);
		assert_int_equal(info.lost, lap.lost);
		rc = uf_consumer_read(x.h[be], r, 8, &seq);
		if (be == 1 && rc == -EOVERFLOW) { /* the bridge itself was lapped there */
			struct uf_consumer_lap again;
			uf_consumer_last_lap(x.h[be], &again);
			assert_int_equal(again.from_seq, lap.resume_seq);
			continue;
		}
		assert_int_equal(rc, 8);
		assert_int_equal(seq, lap.resume_seq);
		fprintf(stderr,
		        "%s handle: lapped at 0, lost %" PRIu64 ", resumed at %" PRIu64 "\n",
		        be_name[be], lap.lost, seq);
	}
	uf_consumer_detach(x.h[0]);
	uf_consumer_detach(x.h[1]);
	bt_nats_stop(&x.ns);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_exported_functions_are_exactly_the_table),
	    cmocka_unit_test(test_every_exported_function_on_a_local_and_a_nats_handle),
	    cmocka_unit_test(test_last_lap_after_a_real_lap_on_a_local_and_a_nats_handle),
	};
	return BT_RUN_GROUP("consumer-api", tests);
}
