/* Time of day in New York: the one meaning of a record's `exch_ts` for every venue
 * (publish/uf_record.h): nanoseconds since local midnight (America/New_York) of the venue's
 * trading day, which is what Nasdaq ITCH sends and what a venue sending nanoseconds since
 * the epoch (IEX) is converted to.
 *
 * A struct uf_nyday caches one local day (its midnight and the next one, as epoch ns): the
 * hot path is one subtraction and one compare; the day is computed again (cold, no
 * localtime, no tz database, no system call) only when a timestamp leaves it, about once a
 * day. The US daylight-saving rule in force since 2007: EDT (UTC-4) from the second Sunday of
 * March, 02:00 local, to the first Sunday of November, 02:00 local; EST (UTC-5) otherwise.
 * A day on which the clocks change is 23 or 25 hours long, and so is its exch_ts range. */
#ifndef UF_NYDAY_H
#define UF_NYDAY_H

#include <stdint.h>

#include "common/uf_compiler.h"

#define UF_NYDAY_NS_PER_S 1000000000ull

/* One cached local day. Zeroed = none yet (the first timestamp computes it). */
struct uf_nyday {
	uint64_t start_ns; /* epoch ns of the local midnight that starts the day */
	uint64_t end_ns;   /* epoch ns of the next local midnight (start + 23, 24 or 25 h) */
	uint32_t date;     /* the day as YYYYMMDD (0: none cached) */
};

/* Days since 1970-01-01 of the civil date y-m-d (proleptic Gregorian). */
static inline int64_t uf_nyday_days(int64_t y, unsigned m, unsigned d)
{
	y -= m <= 2;
	int64_t era = (y >= 0 ? y : y - 399) / 400;
	int64_t yoe = y - era * 400;                                   /* 0 .. 399 */
	int64_t doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1; /* 0 .. 365 */
	int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;           /* 0 .. 146096 */
	return era * 146097 + doe - 719468;
}

/* The civil date of `days` since 1970-01-01, as YYYYMMDD. */
static inline uint32_t uf_nyday_civil(int64_t days)
{
	int64_t z = days + 719468;
	int64_t era = (z >= 0 ? z : z - 146096) / 146097;
	int64_t doe = z - era * 146097;
	int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	int64_t mp = (5 * doy + 2) / 153;
	int64_t d = doy - (153 * mp + 2) / 5 + 1;
	int64_t m = mp < 10 ? mp + 3 : mp - 9;
	int64_t y = yoe + era * 400 + (m <= 2);
	return (uint32_t)(y * 10000 + m * 100 + d);
}

/* The first Sunday on or after `days` (1970-01-01 was a Thursday). */
static inline int64_t uf_nyday_sunday_from(int64_t days)
{
	int64_t wd = ((days + 4) % 7 + 7) % 7; /* 0 = Sunday */
	return days + (7 - wd) % 7;
}

/* 1 when local midnight of local day `days` is in EDT: after the second Sunday of March, up
 * to and including the first Sunday of November (the change is at 02:00, after midnight). */
static inline int uf_nyday_dst_at_midnight(int64_t days)
{
	int64_t y = uf_nyday_civil(days) / 10000;
	int64_t on = uf_nyday_sunday_from(uf_nyday_days(y, 3, 1)) + 7;
	int64_t off = uf_nyday_sunday_from(uf_nyday_days(y, 11, 1));
	return days > on && days <= off;
}

/* Epoch seconds of local midnight starting local day `days`. */
static inline int64_t uf_nyday_midnight_s(int64_t days)
{
	return days * 86400 + (uf_nyday_dst_at_midnight(days) ? 4 : 5) * 3600;
}

/* Caches the local day holding epoch time `ns`. Cold: about once a day. */
static UF_COLD inline void uf_nyday_set(struct uf_nyday *c, uint64_t ns)
{
	int64_t s = (int64_t)(ns / UF_NYDAY_NS_PER_S);
	int64_t days = (s - 5 * 3600) / 86400; /* the local day, give or take one */
	if (s < uf_nyday_midnight_s(days))
		days--;
	else if (s >= uf_nyday_midnight_s(days + 1))
		days++;
	c->start_ns = (uint64_t)uf_nyday_midnight_s(days) * UF_NYDAY_NS_PER_S;
	c->end_ns = (uint64_t)uf_nyday_midnight_s(days + 1) * UF_NYDAY_NS_PER_S;
	c->date = uf_nyday_civil(days);
}

/* Nanoseconds since New York local midnight of epoch time `ns` (its local day cached in c).
 * Hot: a subtraction and a compare while `ns` stays in the cached day. */
static inline uint64_t uf_nyday_since_midnight(struct uf_nyday *c, uint64_t ns)
{
	if (UF_UNLIKELY(ns - c->start_ns >= c->end_ns - c->start_ns))
		uf_nyday_set(c, ns);
	return ns - c->start_ns;
}

#endif /* UF_NYDAY_H */
