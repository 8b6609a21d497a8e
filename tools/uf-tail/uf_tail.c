/* uf-tail: attach to a uringfeed ring and show what flows through it.
 *
 *   uf-tail --ring NAME [--json] [--count N] [--timeout S] [--oldest]   records
 *   uf-tail --ring NAME --from-start      every record of the day (journal), then live
 *   uf-tail --ring NAME --books [--depth N]                              book image (JSON lines)
 *   uf-tail --ring NAME --top AAPL,MSFT [--interval MS]                  live top of book
 *   uf-tail --ring NAME --info                                           ring facts
 *   uf-tail --nats URLS --ring NAME [any of the above]    the ring as uf-bridge republishes it
 *
 * Uses only libufconsumer (ring/ufconsumer.h), like any external consumer. Ends cleanly (exit
 * 0) when the ring is closed, after --count records, after --timeout seconds, or on Ctrl-C;
 * follows a producer restart by re-attaching. Exit 1 on errors, 2 on bad usage.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/uf_parse.h"
#include "common/uf_time.h"
#include "ring/ufconsumer.h"

#define TOP_MAX 32

static volatile sig_atomic_t g_stop;
static int g_reattached; /* set when next_event followed a producer restart */

static void on_signal(int sig)
{
	(void)sig;
	g_stop = 1;
}

struct tail_opts {
	const char *ring;     /* ring name */
	const char *dir;      /* shm directory override */
	const char *top;      /* comma-separated symbols for --top */
	const char *nats;     /* --nats: comma-separated nats://host:port of uf-bridge's servers */
	int json;             /* records as JSON lines */
	int books;            /* print the book image and exit */
	int info;             /* print ring facts and exit */
	int oldest;           /* start at the oldest record in the ring */
	int from_start;       /* start at the day's first record, from the ring's journal */
	uint32_t depth;       /* --books levels per side, 0 = all the image has */
	uint64_t count;       /* stop after this many records, 0 = no limit */
	double timeout_s;     /* stop after this long, 0 = no limit */
	uint64_t spin_us;     /* busy-poll before sleeping */
	uint32_t interval_ms; /* --top refresh period */
};

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: uf-tail --ring NAME [options]\n"
	        "  (records)         [--json] [--oldest] [--count N] [--timeout S] [--spin-us N]\n"
	        "  --from-start      every record of the day from the ring's journal, then live\n"
	        "                    (docs/journal.md; the producer must have ring.journal)\n"
	        "  --books           print the book image as JSON lines (as `uf-decode books`;\n"
	        "                    a book that may be wrong adds \"stale\":true, one cut at the\n"
	        "                    image's depth \"truncated\":true)\n"
	        "  --depth N         levels per side for --books (default: all in the image)\n"
	        "  --top SYMS        live top-of-book view of comma-separated symbols\n"
	        "  --interval MS     --top refresh period (default 250)\n"
	        "  --info            print ring facts (generation, capacity, tail, venue, ...)\n"
	        "  --dir DIR         shm directory (default $UF_RING_DIR or /dev/shm)\n"
	        "  --nats URLS       read the ring from NATS (uf-bridge), URLS = nats://h:p,...\n"
	        "Ends on ring close, --count, --timeout or Ctrl-C (exit 0).\n");
}

static const char *kind_name(uint8_t k)
{
	static const char *names[] = {"?",          "level",  "add",  "modify",     "delete",
	                              "trade",      "status", "gap",  "snap_begin", "snap_end",
	                              "instrument", "reset",  "stale"};
	return k < sizeof(names) / sizeof(names[0]) ? names[k] : "?";
}

/* Symbol of an instrument from the image directory, cached; "" until the producer set it. */
struct symcache {
	uint32_t n;                    /* entries */
	char (*sym)[9];                /* per instrument id */
	uf_consumer_t *c;              /* where to look */
	struct uf_book_snapshot *snap; /* scratch */
};

static const char *sym_of(struct symcache *sc, uint32_t id)
{
	if (id >= sc->n)
		return "";
	if (sc->sym[id][0] == '\0' && uf_consumer_snapshot(sc->c, id, sc->snap) == 0)
		memcpy(sc->sym[id], sc->snap->symbol, 9);
	return sc->sym[id];
}

/* Symbols are ITCH alphanumerics; escape anything else so the line stays valid JSON. */
static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (ch < 0x20 || ch >= 0x7f)
			fprintf(f, "\\u%04x", ch);
		else
			fputc(ch, f);
	}
	fputc('"', f);
}

static void print_record(FILE *f, const struct uf_record *r, uint64_t seq, int json,
                         struct symcache *sc)
{
	uint64_t now = uf_now_realtime_ns();
	int64_t lat = r->rx_ts ? (int64_t)(now - r->rx_ts) : -1;
	const char *sym = sym_of(sc, r->instrument);
	char side = r->side ? (char)r->side : '-';

	if (json) {
		fprintf(f,
		        "{\"seq\":%" PRIu64 ",\"kind\":\"%s\",\"instrument\":%u,\"symbol\":", seq,
		        kind_name(r->kind), r->instrument);
		json_str(f, sym);
		fprintf(f,
		        ",\"side\":\"%c\",\"flags\":%u,\"price\":%" PRId64 ",\"shares\":%" PRIu64
		        ",\"orders_aux\":%u,\"ref\":%" PRIu64 ",\"exch_ts\":%" PRIu64
		        ",\"rx_ts\":%" PRIu64 ",\"pub_delta_ns\":%u,\"feed_seq\":%" PRIu64
		        ",\"latency_ns\":%" PRId64 "}\n",
		        side, r->flags, r->price, r->shares, r->orders, r->ref, r->exch_ts,
		        r->rx_ts, r->pub_delta_ns, r->feed_seq, lat);
		return;
	}
	fprintf(f, "%10" PRIu64 " %-10s %-8s %c %12" PRId64 ".%04" PRId64 " %10" PRIu64 " %6u", seq,
	        kind_name(r->kind), sym[0] ? sym : "?", side, r->price / 10000,
	        (r->price < 0 ? -r->price : r->price) % 10000, r->shares, r->orders);
	fprintf(f, " feed_seq=%" PRIu64 "%s%s%s", r->feed_seq,
	        r->flags & UF_RECF_LAST ? " LAST" : "", r->flags & UF_RECF_BBO ? " BBO" : "",
	        r->flags & UF_RECF_STALE ? " STALE" : "");
	if (lat >= 0)
		fprintf(f, " lat=%.1fus", (double)lat / 1000.0);
	fputc('\n', f);
}

static int attach(const struct tail_opts *o, uf_consumer_t **c)
{
	struct uf_consumer_options co;
	char err[512];
	int rc;

	uf_consumer_options_init(&co);
	co.spin_ns = o->spin_us * 1000;
	co.start = o->from_start ? UF_CONSUMER_START_JOURNAL
	           : o->oldest   ? UF_CONSUMER_START_OLDEST
	                         : UF_CONSUMER_START_LATEST;
	co.tag = "uf-tail";
	co.dir = o->dir;
	if (o->nats) { /* libufconsumer names a remote ring "URLS/RING" */
		char name[1200];
		snprintf(name, sizeof(name), "%s/%s", o->nats, o->ring);
		rc = uf_consumer_attach(name, &co, c, err, sizeof(err));
	} else {
		rc = uf_consumer_attach(o->ring, &co, c, err, sizeof(err));
	}
	if (rc < 0)
		fprintf(stderr, "uf-tail: %s\n", err);
	return rc;
}

/* Waits for the next event; handles laps and restarts. Returns 1 with a record, 0 when it is
 * time to stop (closed, deadline, signal), -1 on error. */
static int next_event(uf_consumer_t *c, struct uf_record *rec, uint64_t *seq, uint64_t deadline)
{
	static uint64_t next_alive_check;
	static int dead_reported;
	static uint32_t forged_reported;
	struct uf_consumer_lap lap;
	char err[512];

	while (!g_stop) {
		int rc = uf_consumer_next(c, rec, seq);
		uint64_t now;

		switch (rc) {
		case 0:
			return 1;
		case -EOVERFLOW:
			uf_consumer_last_lap(c, &lap);
			fprintf(stderr,
			        "uf-tail: lapped: lost %" PRIu64 " records (%" PRIu64 "..%" PRIu64
			        "), resuming at %" PRIu64 "\n",
			        lap.lost, lap.from_seq, lap.resume_seq - 1, lap.resume_seq);
			continue;
		case -EPIPE:
			fprintf(stderr, "uf-tail: ring closed by the producer\n");
			return 0;
		case -ESTALE:
			fprintf(stderr, "uf-tail: producer restarted: re-attaching\n");
			if (uf_consumer_reattach(c, err, sizeof(err)) < 0) {
				fprintf(stderr, "uf-tail: %s\n", err);
				return -1;
			}
			g_reattached = 1; /* instrument ids may mean other symbols now */
			continue;
		case -EAGAIN:
			break;
		default:
			fprintf(stderr, "uf-tail: %s\n", uf_consumer_strerror(rc));
			return -1;
		}
		now = uf_now_mono_ns();
		if (now >= deadline)
			return 0;
		if (now >= next_alive_check) { /* cold: once a second while idle */
			struct uf_consumer_info info;
			uf_consumer_get_info(c, &info);
			if (!info.producer_alive && !dead_reported)
				fprintf(stderr,
				        "uf-tail: producer (pid %d) is gone without closing the "
				        "ring; waiting for a restart\n",
				        info.producer_pid);
			dead_reported = !info.producer_alive;
			if (info.forged > forged_reported) /* NATS: someone else publishes there */
				fprintf(stderr,
				        "uf-tail: %u stream messages dropped so far: they do not "
				        "continue the stream uf-bridge wrote\n",
				        info.forged);
			forged_reported = info.forged;
			next_alive_check = now + 1000000000ull;
		}
		/* short slices so Ctrl-C and --timeout are noticed promptly */
		uf_consumer_wait(c, deadline - now < 100000000ull ? (int64_t)(deadline - now)
		                                                  : 100000000ll);
	}
	return 0;
}

static int run_records(const struct tail_opts *o, uf_consumer_t *c, struct symcache *sc,
                       uint64_t deadline)
{
	struct uf_record rec;
	uint64_t seq, n = 0;
	int rc;

	while ((o->count == 0 || n < o->count) && (rc = next_event(c, &rec, &seq, deadline)) == 1) {
		if (g_reattached) {
			memset(sc->sym, 0, (size_t)sc->n * sizeof(*sc->sym));
			g_reattached = 0;
		}
		print_record(stdout, &rec, seq, o->json, sc);
		n++;
	}
	fflush(stdout);
	return rc < 0 ? 1 : 0;
}

/* ---- --books ---- */
struct book_list {
	struct uf_book_snapshot *v; /* collected snapshots */
	size_t n, cap;              /* used, allocated */
};

static int collect_book(const struct uf_book_snapshot *s, void *arg)
{
	struct book_list *l = arg;

	if (s->nbid == 0 && s->nask == 0 && !((s->flags & UF_BOOKF_STALE) && s->symbol[0]))
		return 0; /* non-empty books, as uf-decode books, and empty named ones in doubt
		           * (the day may have orders there: a line that says so, not no line) */
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 64;
		void *p = realloc(l->v, cap * sizeof(*l->v));
		if (!p)
			return -ENOMEM;
		l->v = p;
		l->cap = cap;
	}
	l->v[l->n++] = *s;
	return 0;
}

static int cmp_symbol(const void *a, const void *b)
{
	const struct uf_book_snapshot *x = a, *y = b;
	int c = strcmp(x->symbol, y->symbol); /* bytewise: strcmp compares unsigned chars */

	if (c)
		return c;
	return x->instrument < y->instrument ? -1 : x->instrument > y->instrument;
}

static void print_side(FILE *f, const struct uf_level *lv, uint32_t n, uint32_t depth)
{
	if (depth && n > depth)
		n = depth;
	fputc('[', f);
	for (uint32_t i = 0; i < n; i++)
		fprintf(f, "%s[%" PRId64 ",%" PRIu64 ",%u]", i ? "," : "", lv[i].price,
		        lv[i].shares, lv[i].orders);
	fputc(']', f);
}

/* 1 when the side the image cut at its depth (`cut`) is printed shorter than asked: every
 * level when depth is 0, else more than the image holds. */
static int side_cut_short(uint32_t flags, uint32_t cut, uint32_t n, uint32_t depth)
{
	return (flags & cut) && (depth == 0 || depth > n);
}

/* One book as `uf-decode books` prints it, and what the image says against it: "stale":true
 * when the book may be wrong (UF_BOOKF_STALE: an unrecovered gap, a doubt, a book not
 * loaded from a snapshot yet), "truncated":true when a side has more levels than the image
 * holds and more were asked. A sound, complete book prints exactly as `uf-decode books`, so
 * the two compare byte for byte; a book that may not match says so in its own line. */
static void print_book(FILE *f, const struct uf_book_snapshot *s, uint32_t depth)
{
	fputs("{\"symbol\":", f);
	json_str(f, s->symbol);
	fputs(",\"bid\":", f);
	print_side(f, s->bid, s->nbid, depth);
	fputs(",\"ask\":", f);
	print_side(f, s->ask, s->nask, depth);
	if (s->flags & UF_BOOKF_STALE)
		fputs(",\"stale\":true", f);
	if (side_cut_short(s->flags, UF_BOOKF_TRUNCATED_BID, s->nbid, depth) ||
	    side_cut_short(s->flags, UF_BOOKF_TRUNCATED_ASK, s->nask, depth))
		fputs(",\"truncated\":true", f);
	fputs("}\n", f);
}

static int run_books(const struct tail_opts *o, uf_consumer_t *c)
{
	struct book_list l = {0};
	size_t stale = 0;
	int rc = uf_consumer_snapshot_all(c, collect_book, &l);

	if (rc < 0) {
		fprintf(stderr, "uf-tail: book image: %s\n", uf_consumer_strerror(rc));
		free(l.v);
		return 1;
	}
	qsort(l.v, l.n, sizeof(*l.v), cmp_symbol);
	for (size_t i = 0; i < l.n; i++) {
		print_book(stdout, &l.v[i], o->depth);
		stale += (l.v[i].flags & UF_BOOKF_STALE) != 0;
	}
	fflush(stdout);
	if (stale)
		fprintf(stderr,
		        "uf-tail: %zu of %zu books are stale (\"stale\":true): they may be wrong "
		        "until the feed recovers them\n",
		        stale, l.n);
	free(l.v);
	return 0;
}

/* ---- --top ---- */
struct top_row {
	char sym[9];      /* symbol as asked */
	int found;        /* resolved in the directory */
	uint32_t id;      /* instrument id */
	uint64_t updates; /* records seen for it */
	int64_t last_lat; /* wire-to-consumer latency of the last record, ns (-1 unknown) */
	int64_t max_lat;  /* max latency since the last refresh */
};

static void fmt_px(char *buf, size_t len, int64_t px)
{
	snprintf(buf, len, "%" PRId64 ".%04" PRId64, px / 10000, (px < 0 ? -px : px) % 10000);
}

static void draw_top(uf_consumer_t *c, struct top_row *rows, int n, int redraw, int tty)
{
	struct uf_book_snapshot s;
	char bp[32], ap[32], lp[32];

	if (redraw && tty)
		printf("\033[%dA", n + 1);
	printf("%-8s %10s %12s %12s %10s %12s %12s %9s %11s %11s%s\n", "SYMBOL", "BIDSZ", "BID",
	       "ASK", "ASKSZ", "LAST", "VOLUME", "UPDATES", "LAT_US", "MAXLAT_US",
	       tty ? "\033[K" : "");
	for (int i = 0; i < n; i++) {
		struct top_row *r = &rows[i];
		if (!r->found && uf_consumer_lookup(c, r->sym, &r->id) == 0)
			r->found = 1;
		if (!r->found || uf_consumer_snapshot(c, r->id, &s) != 0) {
			printf("%-8s %s%s\n", r->sym, "(not in the directory yet)",
			       tty ? "\033[K" : "");
			continue;
		}
		snprintf(bp, sizeof(bp), "-");
		snprintf(ap, sizeof(ap), "-");
		if (s.nbid)
			fmt_px(bp, sizeof(bp), s.bid[0].price);
		if (s.nask)
			fmt_px(ap, sizeof(ap), s.ask[0].price);
		fmt_px(lp, sizeof(lp), s.last_price);
		printf("%-8s %10" PRIu64 " %12s %12s %10" PRIu64 " %12s %12" PRIu64 " %9" PRIu64,
		       r->sym, s.nbid ? s.bid[0].shares : 0, bp, ap, s.nask ? s.ask[0].shares : 0,
		       lp, s.volume, r->updates);
		if (r->last_lat >= 0)
			printf(" %11.1f %11.1f", (double)r->last_lat / 1e3,
			       (double)r->max_lat / 1e3);
		else
			printf(" %11s %11s", "-", "-");
		printf("%s%s\n", s.flags & UF_RECF_STALE ? " STALE" : "", tty ? "\033[K" : "");
		r->max_lat = r->last_lat >= 0 ? 0 : -1;
	}
	fflush(stdout);
}

static int run_top(const struct tail_opts *o, uf_consumer_t *c, uint64_t deadline)
{
	struct top_row rows[TOP_MAX];
	char *list = strdup(o->top), *save = NULL, *tok;
	int n = 0, tty = isatty(STDOUT_FILENO), drawn = 0, rc = 0;
	uint64_t next_draw = 0, seen = 0;

	if (!list)
		return 1;
	for (tok = strtok_r(list, ",", &save); tok && n < TOP_MAX;
	     tok = strtok_r(NULL, ",", &save)) {
		if (strlen(tok) == 0 || strlen(tok) > 8) {
			fprintf(stderr, "uf-tail: --top: bad symbol \"%s\"\n", tok);
			free(list);
			return 2;
		}
		memset(&rows[n], 0, sizeof(rows[n]));
		snprintf(rows[n].sym, sizeof(rows[n].sym), "%s", tok);
		rows[n].last_lat = -1;
		rows[n].max_lat = -1;
		n++;
	}
	free(list);
	if (n == 0) {
		fprintf(stderr, "uf-tail: --top needs at least one symbol\n");
		return 2;
	}
	while (!g_stop) {
		struct uf_record rec;
		uint64_t seq, now = uf_now_mono_ns(), wait_until;
		int ev;

		if (now >= next_draw) {
			draw_top(c, rows, n, drawn, tty);
			drawn = 1;
			next_draw = now + (uint64_t)o->interval_ms * 1000000ull;
		}
		if (now >= deadline || (o->count && seen >= o->count))
			break;
		wait_until = next_draw < deadline ? next_draw : deadline;
		ev = next_event(c, &rec, &seq, wait_until);
		if (ev < 0) {
			rc = 1;
			break;
		}
		if (ev == 0) {
			if (g_stop || uf_now_mono_ns() < wait_until)
				break; /* closed or interrupted */
			continue;
		}
		seen++;
		for (int i = 0; i < n; i++) {
			if (!rows[i].found || rows[i].id != rec.instrument)
				continue;
			rows[i].updates++;
			if (rec.rx_ts) {
				int64_t lat = (int64_t)(uf_now_realtime_ns() - rec.rx_ts);
				rows[i].last_lat = lat;
				if (lat > rows[i].max_lat)
					rows[i].max_lat = lat;
			}
		}
	}
	draw_top(c, rows, n, drawn, tty);
	return rc;
}

/* The venue's MIC and trading date from the market's UF_STATUS_VENUE (instrument 0 of the
 * image), when the venue sends them (publish/uf_record.h): "" and 0 otherwise. */
static void ring_venue(uf_consumer_t *c, char mic[9], uint64_t *date)
{
	static struct uf_book_snapshot s; /* large: not on the stack */
	int rc = -EBUSY;

	mic[0] = '\0';
	*date = 0;
	for (int tries = 0; rc == -EBUSY && tries < 100; tries++)
		rc = uf_consumer_snapshot(c, 0, &s);
	if (rc != 0)
		return;
	for (uint32_t k = 0; k < s.nstatus && k < UF_BOOK_MAX_STATUS; k++) {
		if (s.status[k].code != UF_STATUS_VENUE)
			continue;
		memcpy(mic, &s.status[k].price, 8);
		mic[8] = '\0';
		for (int j = 7; j >= 0 && (mic[j] == ' ' || mic[j] == '\0'); j--)
			mic[j] = '\0';
		*date = s.status[k].shares;
	}
}

static int run_info(uf_consumer_t *c, const char *name)
{
	struct uf_consumer_info i;
	char mic[9];
	uint64_t date;

	uf_consumer_get_info(c, &i);
	ring_venue(c, mic, &date);
	printf("{\"ring\":\"%s\",\"generation\":%" PRIu64 ",\"capacity\":%" PRIu64
	       ",\"tail\":%" PRIu64 ",\"closed\":%d,\"producer_pid\":%d,\"producer_alive\":%d"
	       ",\"numa_node\":%d,\"hugepages\":%d,\"depth\":%u,\"max_instruments\":%u"
	       ",\"created_ns\":%" PRIu64 ",\"forged\":%u,\"venue\":",
	       name, i.generation, i.capacity, i.tail, i.closed, i.producer_pid, i.producer_alive,
	       i.numa_node, i.hugepages, i.depth, i.max_instruments, i.created_ns, i.forged);
	json_str(stdout, mic);
	printf(",\"trading_date\":%" PRIu64 "}\n", date);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
	    {"ring", required_argument, 0, 'r'},     {"json", no_argument, 0, 'j'},
	    {"books", no_argument, 0, 'b'},          {"depth", required_argument, 0, 'd'},
	    {"top", required_argument, 0, 't'},      {"count", required_argument, 0, 'n'},
	    {"timeout", required_argument, 0, 'T'},  {"oldest", no_argument, 0, 'o'},
	    {"from-start", no_argument, 0, 'F'},     {"spin-us", required_argument, 0, 's'},
	    {"interval", required_argument, 0, 'i'}, {"dir", required_argument, 0, 'D'},
	    {"info", no_argument, 0, 'I'},           {"help", no_argument, 0, 'h'},
	    {"nats", required_argument, 0, 'N'},     {0, 0, 0, 0}};
	struct tail_opts o = {.spin_us = 20, .interval_ms = 250};
	struct symcache sc = {0};
	struct sigaction sa;
	uf_consumer_t *c = NULL;
	uint64_t v, deadline = UINT64_MAX;
	int opt, rc;

	while ((opt = getopt_long(argc, argv, "r:jbd:t:n:T:os:i:D:Ih", lo, NULL)) != -1) {
		switch (opt) {
		case 'r':
			o.ring = optarg;
			break;
		case 'j':
			o.json = 1;
			break;
		case 'b':
			o.books = 1;
			break;
		case 'd':
			if (uf_parse_u64(optarg, 1, UF_BOOK_MAX_DEPTH, &v) < 0)
				goto bad_value;
			o.depth = (uint32_t)v;
			break;
		case 't':
			o.top = optarg;
			break;
		case 'n':
			if (uf_parse_u64(optarg, 0, UINT64_MAX, &o.count) < 0)
				goto bad_value;
			break;
		case 'T':
			if (uf_parse_double(optarg, 0, HUGE_VAL, &o.timeout_s) < 0)
				goto bad_value;
			break;
		case 'o':
			o.oldest = 1;
			break;
		case 'F':
			o.from_start = 1;
			break;
		case 's':
			if (uf_parse_u64(optarg, 0, UINT64_MAX, &o.spin_us) < 0)
				goto bad_value;
			break;
		case 'i':
			if (uf_parse_u64(optarg, 1, 60000, &v) < 0)
				goto bad_value;
			o.interval_ms = (uint32_t)v;
			break;
		case 'D':
			o.dir = optarg;
			break;
		case 'I':
			o.info = 1;
			break;
		case 'N':
			o.nats = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (!o.ring || optind != argc) {
		usage(stderr);
		return 2;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal; /* no SA_RESTART: a sleeping futex wait returns at once */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (o.timeout_s > 0)
		deadline = uf_now_mono_ns() + (uint64_t)(o.timeout_s * 1e9);

	if (attach(&o, &c) < 0)
		return 1;
	if (o.info) {
		rc = run_info(c, o.ring);
	} else if (o.books) {
		rc = run_books(&o, c);
	} else if (o.top) {
		rc = run_top(&o, c, deadline);
	} else {
		struct uf_consumer_info info;
		uf_consumer_get_info(c, &info);
		sc.n = info.max_instruments;
		sc.c = c;
		sc.sym = calloc(sc.n, sizeof(*sc.sym));
		sc.snap = malloc(sizeof(*sc.snap));
		if (!sc.sym || !sc.snap) {
			fprintf(stderr, "uf-tail: out of memory\n");
			rc = 1;
		} else {
			rc = run_records(&o, c, &sc, deadline);
		}
		free(sc.sym);
		free(sc.snap);
	}
	uf_consumer_detach(c);
	return rc;

bad_value:
	fprintf(stderr, "uf-tail: bad value for option: %s\n", optarg);
	return 2;
}
