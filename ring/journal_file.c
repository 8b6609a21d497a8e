/* The journal's on-disk format (ring/journal_file.h): CRC, entries, header, names, tail. */
#include "ring/journal_file.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CRC32C_POLY 0x82f63b78u /* reflected Castagnoli polynomial */

static uint32_t crc_table[256];
static int crc_table_ready;

/* Builds the table once; racing first calls compute the same bytes, so a plain flag does. */
static void crc_table_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = (c & 1) ? (c >> 1) ^ CRC32C_POLY : c >> 1;
		crc_table[i] = c;
	}
	__atomic_store_n(&crc_table_ready, 1, __ATOMIC_RELEASE); /* table before the flag */
}

static uint32_t crc_soft(uint32_t crc, const uint8_t *p, size_t len)
{
	if (!__atomic_load_n(&crc_table_ready, __ATOMIC_ACQUIRE))
		crc_table_init();
	while (len--)
		crc = crc_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return crc;
}

#if defined(__x86_64__)
/* 8 bytes per instruction: an entry is ten of them, so the writer checksums ~3 M records/s
 * in a few percent of a core. */
__attribute__((target("sse4.2"))) static uint32_t crc_hw(uint32_t crc, const uint8_t *p, size_t len)
{
	uint64_t c = crc;

	while (len >= 8) {
		uint64_t v;
		memcpy(&v, p, 8);
		c = __builtin_ia32_crc32di(c, v);
		p += 8;
		len -= 8;
	}
	crc = (uint32_t)c;
	while (len--)
		crc = __builtin_ia32_crc32qi(crc, *p++);
	return crc;
}
#endif

uint32_t uf_journal_crc32c(uint32_t crc, const void *buf, size_t len)
{
	crc = ~crc;
#if defined(__x86_64__)
	if (__builtin_cpu_supports("sse4.2"))
		return ~crc_hw(crc, buf, len);
#endif
	return ~crc_soft(crc, buf, len);
}

static uint32_t entry_crc(const struct uf_journal_entry *e)
{
	return uf_journal_crc32c(0, e, offsetof(struct uf_journal_entry, crc));
}

void uf_journal_entry_record(struct uf_journal_entry *e, const struct uf_record *rec, uint64_t seq)
{
	e->rec = *rec;
	e->seq = seq;
	e->kind = UF_JOURNAL_RECORD;
	e->crc = entry_crc(e);
}

void uf_journal_entry_hole(struct uf_journal_entry *e, uint64_t seq, uint64_t count, uint32_t why,
                           uint64_t now_ns)
{
	memset(e, 0, sizeof(*e));
	e->rec.shares = count;
	e->rec.aux = why;
	e->rec.rx_ts = now_ns;
	e->seq = seq;
	e->kind = UF_JOURNAL_HOLE;
	e->crc = entry_crc(e);
}

int uf_journal_entry_ok(const struct uf_journal_entry *e)
{
	if (e->kind != UF_JOURNAL_RECORD && e->kind != UF_JOURNAL_HOLE)
		return 0;
	if (e->kind == UF_JOURNAL_HOLE && (e->rec.shares == 0 || e->rec.shares > (1ull << 48)))
		return 0; /* a hole of nothing, or absurd: not something a writer makes */
	return e->crc == entry_crc(e);
}

uint64_t uf_journal_entry_end(const struct uf_journal_entry *e)
{
	return e->kind == UF_JOURNAL_HOLE ? e->seq + e->rec.shares : e->seq + 1;
}

void uf_journal_hdr_init(struct uf_journal_hdr *h, const char *ring, uint64_t generation,
                         uint64_t first_seq, uint32_t day, uint64_t now_ns)
{
	memset(h, 0, sizeof(*h));
	h->magic = UF_JOURNAL_MAGIC;
	h->version = UF_JOURNAL_VERSION;
	h->hdr_size = sizeof(*h);
	h->entry_size = sizeof(struct uf_journal_entry);
	h->record_size = sizeof(struct uf_record);
	h->record_version = UF_RECORD_VERSION;
	h->day = day;
	h->generation = generation;
	h->first_seq = first_seq;
	h->created_ns = now_ns;
	snprintf(h->ring, sizeof(h->ring), "%s", ring);
	h->crc = uf_journal_crc32c(0, h, sizeof(*h));
}

void uf_journal_hdr_link(struct uf_journal_hdr *h, uint64_t prev)
{
	h->prev_generation = prev;
	h->crc = 0;
	h->crc = uf_journal_crc32c(0, h, sizeof(*h));
}

const char *uf_journal_hdr_check(const struct uf_journal_hdr *h)
{
	struct uf_journal_hdr copy = *h;

	if (h->magic != UF_JOURNAL_MAGIC)
		return "not a uringfeed journal (bad magic)";
	if (h->version != UF_JOURNAL_VERSION)
		return "journal version this build does not read";
	if (h->hdr_size != sizeof(*h) || h->entry_size != sizeof(struct uf_journal_entry) ||
	    h->record_size != sizeof(struct uf_record) || h->record_version != UF_RECORD_VERSION)
		return "journal of another record or entry size";
	copy.crc = 0;
	if (uf_journal_crc32c(0, &copy, sizeof(copy)) != h->crc)
		return "journal header checksum fails";
	if (memchr(h->ring, 0, sizeof(h->ring)) == NULL)
		return "journal header ring name not terminated";
	if (h->prev_generation && h->prev_generation >= h->generation)
		return "journal header continues a later generation";
	return NULL;
}

uint32_t uf_journal_day(uint64_t realtime_ns)
{
	time_t t = (time_t)(realtime_ns / 1000000000ull);
	struct tm tm;

	gmtime_r(&t, &tm);
	return (uint32_t)((tm.tm_year + 1900) * 10000 + (tm.tm_mon + 1) * 100 + tm.tm_mday);
}

int64_t uf_journal_day_number(uint32_t day)
{
	struct tm tm;

	memset(&tm, 0, sizeof(tm));
	tm.tm_year = (int)(day / 10000) - 1900;
	tm.tm_mon = (int)(day / 100 % 100) - 1;
	tm.tm_mday = (int)(day % 100);
	if (tm.tm_year < 70 || tm.tm_mon < 0 || tm.tm_mon > 11 || tm.tm_mday < 1 || tm.tm_mday > 31)
		return 0;
	return (int64_t)timegm(&tm) / 86400;
}

int uf_journal_file_name(char *buf, size_t len, const char *dir, const char *ring, uint32_t day,
                         uint64_t generation)
{
	int n = snprintf(buf, len, "%s/%s.%08u.%llu" UF_JOURNAL_SUFFIX, dir, ring, day,
	                 (unsigned long long)generation);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* Reads whole entry `i`; 1 when read and valid, 0 when invalid, -errno. */
static int read_entry(int fd, uint64_t i, struct uf_journal_entry *e)
{
	off_t off = (off_t)(sizeof(struct uf_journal_hdr) + i * sizeof(*e));
	ssize_t n = pread(fd, e, sizeof(*e), off);

	if (n < 0)
		return -errno;
	if (n != (ssize_t)sizeof(*e))
		return 0;
	return uf_journal_entry_ok(e);
}

int uf_journal_file_tail(int fd, uint64_t size, const struct uf_journal_hdr *h,
                         uint64_t *valid_bytes, uint64_t *end_seq)
{
	uint64_t n = size < sizeof(*h) ? 0 : (size - sizeof(*h)) / sizeof(struct uf_journal_entry);
	uint64_t last = n; /* candidate: entries [0, last) are the valid prefix */

	if (uf_journal_hdr_check(h))
		return -EBADMSG;
	while (last > 0) {
		struct uf_journal_entry e, prev;
		uint64_t i = last - 1, chained = 0;
		int rc = read_entry(fd, i, &e);

		if (rc < 0)
			return rc;
		if (!rc) {
			last = i; /* torn or garbage: cut it */
			continue;
		}
		/* e is good: walk back while entries chain, at most a writer's window */
		while (i > 0 && chained < UF_JOURNAL_TAIL_WINDOW) {
			rc = read_entry(fd, i - 1, &prev);
			if (rc < 0)
				return rc;
			if (!rc || uf_journal_entry_end(&prev) != e.seq || prev.seq >= e.seq)
				break;
			e = prev;
			i--;
			chained++;
		}
		if (i == 0 && e.seq != h->first_seq) {
			last = 0; /* the first entry does not start where the header says */
			break;
		}
		if (i == 0 || chained >= UF_JOURNAL_TAIL_WINDOW)
			break; /* [0, last) chains as far as a torn write could reach */
		last = i;      /* a break at i: what follows it was written past a torn write */
	}
	*valid_bytes = sizeof(*h) + last * sizeof(struct uf_journal_entry);
	if (last == 0) {
		*end_seq = h->first_seq;
	} else {
		struct uf_journal_entry e;
		int rc = read_entry(fd, last - 1, &e);
		if (rc <= 0)
			return rc < 0 ? rc : -EIO;
		*end_seq = uf_journal_entry_end(&e);
	}
	return 0;
}
