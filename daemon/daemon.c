/* uringfeed daemon lifecycle: feeds, threads, status endpoint, signals. See main.c. */
#include "daemon/daemon.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/uf_atomic.h"
#include "common/uf_time.h"
#include "daemon/events.h"
#include "daemon/log.h"
#include "daemon/placement.h"
#include "daemon/sd_notify.h"
#include "daemon/status.h"
#include "daemon/status_render.h"
#include "daemon/uf_config.h"
#include "daemon/watchdog.h"
#include "feed/feed_log.h"
#include "feed/uf_feed.h"
#include "ring/uf_ring.h"

#define EXIT_RUNTIME   1
#define EXIT_CONFIG    2
#define STOP_TIMEOUT_S 10 /* a feed leaves its loop within one batch: 10 s means it is stuck */
#define TICK_NS        1000000000ull /* events, reaping, STATUS= */
/* Shortest heartbeat check period: a feed loop comes back at least every 50 ms (epoll's
 * wait), so two checks closer than that could find a healthy idle feed unmoved. */
#define BEAT_MIN_NS   100000000ull
#define START_POLL_NS 10000000ull /* until READY=1: how often the feed loops are looked at */

/* One configured feed and its thread. */
struct feed_slot {
	struct uf_daemon *d;              /* back pointer */
	const struct uf_feed_config *cfg; /* its configuration (in d->cfg) */
	struct uf_feed *feed;             /* engine handle, NULL until created */
	pthread_t thread;                 /* feed thread */
	int started;                      /* thread created */
	int joined;                       /* thread joined */
	uint32_t state;                   /* enum uf_status_state: feed thread and main write,
	                                   * HTTP thread reads (relaxed: a display value) */
	uint32_t done;                    /* 1 once the thread left uf_feed_run; release-stored
	                                   * after rc/error so readers may use them */
	int rc;                           /* uf_feed_run's result */
	char error[160];                  /* its error message */
	uint32_t run_stop;                /* uf_feed_run's stop flag: main release-stores 1 at
	                                   * shutdown (and for a test stall, UF_TEST_HOOKS) */
#ifdef UF_TEST_HOOKS
	uint32_t stall; /* test hook: 1 while the feed thread is to block (main writes) */
#endif
};

struct uf_daemon {
	struct uf_config cfg;                     /* running configuration */
	struct feed_slot slots[UF_CFG_MAX_FEEDS]; /* cfg.nfeeds used */
	uint32_t stop;                   /* uf_feed_run's stop flag: main release-stores 1 */
	uint64_t start_ns;               /* CLOCK_REALTIME at start */
	uint64_t reloads;                /* SIGHUP reloads applied (main writes, HTTP reads) */
	const char *version;             /* uringfeed version */
	struct uf_status_server *status; /* HTTP endpoint, NULL when disabled */
	pid_t pid;                       /* our pid, for the wake-up signal */
	struct uf_events events;         /* event log lines (main loop thread only) */
	struct uf_status_snapshot *tick; /* the main loop's snapshot for uf_events_tick */
	/* systemd (main loop only): READY=1 sent, heartbeats of the last check, stuck feeds,
	 * the last STATUS= text sent. */
	int ready;
	int64_t watchdog_us;                 /* WATCHDOG_USEC for us, 0 = no watchdog */
	uint64_t beat_period_ns;             /* heartbeat check (and ping) period */
	uint64_t beats[UF_CFG_MAX_FEEDS];    /* uf_watchdog_beats at the last check */
	uint64_t moved_ns[UF_CFG_MAX_FEEDS]; /* monotonic time the beats last moved */
	uint8_t stuck[UF_CFG_MAX_FEEDS];     /* 1 while a live feed's heartbeat does not move */
	char sd_status[UF_SD_STATUS_MAX];    /* last STATUS= text */
#ifdef UF_TEST_HOOKS
	int stall_feed;             /* UF_TEST_STALL_FEED's feed index, -1 when unset */
	pthread_mutex_t stall_lock; /* stalled feed threads wait on stall_cond */
	pthread_cond_t stall_cond;
#endif
};

/* One summary line per feed: what --check-config prints and what the daemon logs at start. */
void uf_daemon_describe_feed(const struct uf_feed_config *f, char *buf, size_t len)
{
	size_t off = 0;
	char g[INET_ADDRSTRLEN], ifa[INET_ADDRSTRLEN];
	const char *bn = uf_backend_name(f->backend);

	off += (size_t)snprintf(buf + off, len - off, "feed %s: %s, %s, cpu %d", f->name,
	                        f->protocol, bn ? bn : "unknown", f->cpu);
	if (f->backend == UF_BACKEND_IO_URING && off < len)
		off += (size_t)snprintf(buf + off, len - off, ", sqpoll_cpu %d", f->sqpoll_cpu);
	for (int i = 0; i < f->nlines && off < len; i++) {
		inet_ntop(AF_INET, &f->lines[i].group, g, sizeof(g));
		inet_ntop(AF_INET, &f->lines[i].interface, ifa, sizeof(ifa));
		off += (size_t)snprintf(buf + off, len - off, ", line %s %s:%u on %s",
		                        f->lines[i].name, g, f->lines[i].port, ifa);
	}
	if (off < len) {
		if (f->recovery.enabled) {
			inet_ntop(AF_INET, &f->recovery.server.sin_addr, g, sizeof(g));
			off += (size_t)snprintf(buf + off, len - off, ", recovery %s:%u", g,
			                        ntohs(f->recovery.server.sin_port));
		} else {
			off += (size_t)snprintf(buf + off, len - off, ", no recovery server");
		}
	}
	if (off < len && f->snapshot.enabled) {
		inet_ntop(AF_INET, &f->snapshot.server.sin_addr, g, sizeof(g));
		off += (size_t)snprintf(buf + off, len - off, ", snapshot %s:%u%s", g,
		                        ntohs(f->snapshot.server.sin_port),
		                        f->snapshot.on_start ? " (on start)" : "");
	}
	if (off < len)
		off += (size_t)snprintf(buf + off, len - off,
		                        ", ring %s (%" PRIu64 " records, mode %04o)", f->ring.name,
		                        f->ring.capacity, f->ring.mode);
	if (off < len && f->nsymbols)
		snprintf(buf + off, len - off, ", book depth %u, %" PRIu64 " orders, %u symbols",
		         f->book.depth, f->book.max_orders, f->nsymbols);
	else if (off < len)
		snprintf(buf + off, len - off, ", book depth %u, %" PRIu64 " orders, all symbols",
		         f->book.depth, f->book.max_orders);
}

/* The engine's log hook (feed/feed_log.h): its lines join the daemon's log. The levels
 * have the same numbers. */
static void feed_log(void *ctx, int level, const char *line)
{
	(void)ctx;
	uf_log(level, "%s", line);
}

/* ---- status snapshot (HTTP thread) ---- */

static void fill_ring(struct feed_slot *s, struct uf_status_ring *out)
{
	struct uf_ring_consumer_info info[UF_STATUS_MAX_CONSUMERS];
	struct uf_ring *r;
	int n;

	out->present = 1;
	snprintf(out->name, sizeof(out->name), "%s", s->cfg->ring.name);
	out->capacity = s->cfg->ring.capacity;
	r = uf_feed_ring(s->feed);
	if (!r) {
		out->present = 0;
		return;
	}
	/* The producer's header: tail is release-stored by the feed thread after the records. */
	out->sequence = uf_load_acquire_u64(&r->hdr->tail);
	out->generation = r->hdr->generation;
	out->closed = uf_load_relaxed_u32(&r->hdr->state) == UF_RING_STATE_CLOSED;
	out->journal_on = uf_feed_journal(s->feed) != NULL;
	if (out->journal_on)
		uf_journal_get_stats(uf_feed_journal(s->feed), &out->journal);
	n = uf_ring_consumers(r, info, UF_STATUS_MAX_CONSUMERS);
	out->nconsumers = n < 0 ? 0 : n;
	for (int i = 0; i < out->nconsumers && i < UF_STATUS_MAX_CONSUMERS; i++) {
		struct uf_status_consumer *c = &out->consumers[i];
		c->slot = info[i].slot;
		c->pid = info[i].pid;
		c->position = info[i].position;
		c->lag = info[i].lag;
		c->last_seen_ns = info[i].last_seen_ns;
		c->lost = info[i].lost;
		c->laps = info[i].laps;
		c->sleeping = info[i].sleeping;
		snprintf(c->tag, sizeof(c->tag), "%s", info[i].tag);
	}
}

/* Frees the consumer table slots of processes that exited without detaching (cold: reads
 * /proc), so the status endpoint and the table's capacity only count live consumers. */
static void reap_consumers(struct uf_daemon *d)
{
	for (int i = 0; i < d->cfg.nfeeds; i++) {
		struct uf_ring *r = d->slots[i].feed ? uf_feed_ring(d->slots[i].feed) : NULL;
		int n = r ? uf_ring_reap(r) : 0;
		if (n > 0)
			uf_events_reaped(&d->events, d->slots[i].cfg->name, n, uf_now_mono_ns());
	}
}

static int fill_status(void *arg, struct uf_status_snapshot *snap)
{
	struct uf_daemon *d = arg;

	snprintf(snap->version, sizeof(snap->version), "%s", d->version);
	snap->pid = (int32_t)d->pid;
	snap->start_ns = d->start_ns;
	snap->now_ns = uf_now_realtime_ns();
	snprintf(snap->config, sizeof(snap->config), "%s", d->cfg.path);
	snap->reloads = uf_load_relaxed_u64(&d->reloads);
	snap->ready_silence_ns = (uint64_t)d->cfg.ready_silence_ms * 1000000ull;
	snap->nfeeds = d->cfg.nfeeds;
	for (int i = 0; i < d->cfg.nfeeds; i++) {
		struct feed_slot *s = &d->slots[i];
		struct uf_status_feed *f = &snap->feeds[i];

		snprintf(f->name, sizeof(f->name), "%s", s->cfg->name);
		snprintf(f->protocol, sizeof(f->protocol), "%.23s", s->cfg->protocol);
		f->state = (enum uf_status_state)uf_load_relaxed_u32(&s->state);
		if (!s->feed) {
			const char *bn = uf_backend_name(s->cfg->backend);
			snprintf(f->backend, sizeof(f->backend), "%s", bn ? bn : "unknown");
			continue;
		}
		snprintf(f->backend, sizeof(f->backend), "%s", uf_feed_backend_name(s->feed));
		snprintf(f->book_memory, sizeof(f->book_memory), "%s",
		         uf_feed_book_memory(s->feed));
		/* error is written before done is release-stored: read it only after. */
		if (uf_load_acquire_u32(&s->done) && s->rc)
			snprintf(f->error, sizeof(f->error), "%s", s->error);
		uf_feed_stats_read(uf_feed_stats(s->feed), &f->stats);
		fill_ring(s, &f->ring);
	}
	return 0;
}

/* ---- feed threads ---- */

#ifdef UF_TEST_HOOKS
/* Test-only fault hook, compiled in only with UF_TEST_HOOKS (the test executable
 * uringfeed-test-hooks; never the installed daemon). UF_TEST_STALL_FEED=NAME arms it for feed
 * NAME: that feed's thread starts stalled (before its loop ever runs), and each SIGUSR2 to the
 * daemon toggles the stall. A stalled feed thread leaves uf_feed_run and blocks on a condition
 * variable, so its heartbeat stops exactly as a thread stuck in a call or a lock would, while
 * the main loop keeps running: what the watchdog must notice (test_daemon_sd_notify). */
static void test_stall_wait(struct feed_slot *s)
{
	struct uf_daemon *d = s->d;

	pthread_mutex_lock(&d->stall_lock);
	while (uf_load_acquire_u32(&s->stall) && !uf_load_acquire_u32(&d->stop))
		pthread_cond_wait(&d->stall_cond, &d->stall_lock);
	pthread_mutex_unlock(&d->stall_lock);
}

static void test_stall_init(struct uf_daemon *d)
{
	const char *name = getenv("UF_TEST_STALL_FEED");

	d->stall_feed = -1;
	pthread_mutex_init(&d->stall_lock, NULL);
	pthread_cond_init(&d->stall_cond, NULL);
	for (int i = 0; name && i < d->cfg.nfeeds; i++)
		if (strcmp(d->cfg.feeds[i].name, name) == 0)
			d->stall_feed = i;
	if (d->stall_feed < 0)
		return;
	uf_log_warn("test hook: feed %s starts stalled; SIGUSR2 toggles the stall", name);
	uf_store_release_u32(&d->slots[d->stall_feed].stall, 1);
	uf_store_release_u32(&d->slots[d->stall_feed].run_stop, 1);
}

static void test_stall_toggle(struct uf_daemon *d)
{
	struct feed_slot *s;

	if (d->stall_feed < 0)
		return;
	s = &d->slots[d->stall_feed];
	pthread_mutex_lock(&d->stall_lock);
	uint32_t on = !uf_load_acquire_u32(&s->stall);
	uf_store_release_u32(&s->stall, on);
	uf_store_release_u32(&s->run_stop, on); /* leave the loop (on) or let it run (off) */
	pthread_cond_broadcast(&d->stall_cond);
	pthread_mutex_unlock(&d->stall_lock);
	uf_log_warn("test hook: feed %s %s", s->cfg->name, on ? "stalled" : "released");
}

static void test_stall_release_all(struct uf_daemon *d)
{
	pthread_mutex_lock(&d->stall_lock);
	pthread_cond_broadcast(&d->stall_cond);
	pthread_mutex_unlock(&d->stall_lock);
}
#endif

static void *feed_thread(void *arg)
{
	struct feed_slot *s = arg;
	char name[16];

	/* Thread names hold 15 bytes: "uf-" and the start of the feed name. */
	snprintf(name, sizeof(name), "uf-%.12s", s->cfg->name);
	pthread_setname_np(pthread_self(), name);
	uf_store_relaxed_u32(&s->state, UF_STATUS_RUNNING);
#ifdef UF_TEST_HOOKS
	/* Test builds only (see test_stall_toggle): the loop is left on a stall request, the
	 * thread blocks outside it (its heartbeat stops, as a thread stuck in a call would),
	 * and runs the loop again once released, unless the daemon stops meanwhile. */
	for (;;) {
		test_stall_wait(s);
		if (uf_load_acquire_u32(&s->d->stop))
			break;
		s->rc = uf_feed_run(s->feed, (const volatile int *)&s->run_stop);
		if (s->rc || uf_load_acquire_u32(&s->d->stop))
			break;
	}
#else
	s->rc = uf_feed_run(s->feed, (const volatile int *)&s->run_stop);
#endif
	if (s->rc)
		snprintf(s->error, sizeof(s->error), "%s", uf_feed_error(s->feed));
	uf_store_relaxed_u32(&s->state, s->rc ? UF_STATUS_FAILED : UF_STATUS_STOPPED);
	uf_store_release_u32(&s->done, 1); /* rc and error are visible before done */
	/* Wake the main thread (SIGUSR1 is blocked everywhere; main takes it in sigtimedwait). */
	kill(s->d->pid, SIGUSR1);
	return NULL;
}

/* Busy CPUs: feed threads and the SQ poll threads of io_uring feeds. */
static int busy_cpus(const struct uf_config *cfg, int *out)
{
	int n = 0;
	for (int i = 0; i < cfg->nfeeds; i++) {
		const struct uf_feed_config *f = &cfg->feeds[i];
		if (f->cpu >= 0 && f->backend != UF_BACKEND_EPOLL)
			out[n++] = f->cpu;
		if (f->sqpoll_cpu >= 0 && f->backend == UF_BACKEND_IO_URING)
			out[n++] = f->sqpoll_cpu;
	}
	return n;
}

/* ---- SIGHUP ---- */

static int same_symbols(const struct uf_feed_config *a, const struct uf_feed_config *b)
{
	if (a->nsymbols != b->nsymbols)
		return 0;
	for (uint32_t i = 0; i < a->nsymbols; i++)
		if (strcmp(a->symbols[i], b->symbols[i]) != 0)
			return 0;
	return 1;
}

static void reload(struct uf_daemon *d)
{
	struct uf_config n;
	char err[512];
	int applied = 0;

	uf_log_info("reload: SIGHUP, re-reading %s", d->cfg.path);
	/* the running feeds already hold their memory: only the file itself is checked */
	if (uf_config_load_ex(d->cfg.path, UF_CFG_NO_RESOURCE_CHECKS, &n, err, sizeof(err)) != 0) {
		uf_log_error("reload: %s; keeping the running configuration", err);
		return;
	}
	for (int i = 0; i < n.nfeeds; i++) {
		int found = 0;
		for (int j = 0; j < d->cfg.nfeeds; j++)
			found |= strcmp(n.feeds[i].name, d->cfg.feeds[j].name) == 0;
		if (!found)
			uf_log_warn("reload: new feed \"%s\" needs a restart to start",
			            n.feeds[i].name);
	}
	for (int j = 0; j < d->cfg.nfeeds; j++) {
		struct uf_feed_config *cur = &d->cfg.feeds[j];
		struct uf_feed_config *nf = NULL;

		for (int i = 0; i < n.nfeeds && !nf; i++)
			if (strcmp(n.feeds[i].name, cur->name) == 0)
				nf = &n.feeds[i];
		if (!nf) {
			uf_log_warn(
			    "reload: feed \"%s\" is gone from the file; it keeps running until "
			    "a restart",
			    cur->name);
			continue;
		}
		if (!uf_config_feed_same_except_symbols(cur, nf))
			uf_log_warn(
			    "reload: feed \"%s\": changes other than the symbol filter need a "
			    "restart",
			    cur->name);
		if (same_symbols(cur, nf))
			continue;
		int r = uf_feed_set_symbols(d->slots[j].feed, (const char(*)[9])nf->symbols,
		                            nf->nsymbols);
		if (r) {
			uf_log_error("reload: feed \"%s\": symbol filter not applied: %s",
			             cur->name, strerror(-r));
			continue;
		}
		uf_log_info("reload: feed \"%s\": symbol filter now %u symbols%s", cur->name,
		            nf->nsymbols, nf->nsymbols ? "" : " (all)");
		/* The engine copied the filter: swap arrays so ours matches what runs. */
		char(*old)[9] = cur->symbols;
		cur->symbols = nf->symbols;
		cur->nsymbols = nf->nsymbols;
		nf->symbols = old;
		applied++;
	}
	uf_config_free(&n);
	/* Only main writes; relaxed: the HTTP thread shows it, nothing else depends on it. */
	uf_store_relaxed_u64(&d->reloads, d->reloads + 1);
	uf_log_info("reload: done (%d filter%s changed)", applied, applied == 1 ? "" : "s");
}

/* ---- systemd: READY, STATUS, WATCHDOG (main loop only) ---- */

/* Sends STATUS= when the text changed (from the main loop's snapshot d->tick). */
static void sd_status(struct uf_daemon *d)
{
	char text[UF_SD_STATUS_MAX];
	size_t off = 0;

	if (!d->ready)
		off = (size_t)snprintf(text, sizeof(text), "starting: ");
	uf_status_render_systemd(d->tick, d->stuck, text + off, sizeof(text) - off);
	if (strcmp(text, d->sd_status) == 0)
		return;
	memcpy(d->sd_status, text, sizeof(text));
	uf_sd_notify_status("%s", text);
}

static void take_snapshot(struct uf_daemon *d)
{
	memset(d->tick, 0, sizeof(*d->tick));
	fill_status(d, d->tick);
}

static int feed_live(struct feed_slot *s)
{
	return s->started && !uf_load_acquire_u32(&s->done);
}

/* READY=1 once every feed thread has made one pass of its loop: a pass comes only after
 * uf_feed_run set up the receive back end (io_uring, recvmmsg or epoll) with its sockets
 * joined and its ring created in uf_feed_create before. Returns 1 once sent. */
static int check_ready(struct uf_daemon *d, uint64_t now)
{
	for (int i = 0; i < d->cfg.nfeeds; i++) {
		struct feed_slot *s = &d->slots[i];
		if (!s->started || uf_watchdog_beats(uf_feed_stats(s->feed)) == 0)
			return 0;
	}
	d->ready = 1;
	for (int i = 0; i < d->cfg.nfeeds; i++) {
		d->beats[i] = uf_watchdog_beats(uf_feed_stats(d->slots[i].feed));
		d->moved_ns[i] = now;
	}
	int r = uf_sd_notify_ready();
	uf_log_info("ready: %d feed thread%s receiving%s", d->cfg.nfeeds,
	            d->cfg.nfeeds == 1 ? "" : "s", r > 0 ? " (READY=1 sent to systemd)" : "");
	if (r < 0)
		uf_log_warn("systemd notify: %s", strerror(-r));
	return 1;
}

/* Every beat period: which live feeds' heartbeats moved since the last check; WATCHDOG=1
 * only when every one did (uf_watchdog_decide). Stuck feeds are logged once and shown in
 * STATUS= until they move again. */
static void check_heartbeats(struct uf_daemon *d, uint64_t now)
{
	uint64_t cur[UF_CFG_MAX_FEEDS];
	uint8_t live[UF_CFG_MAX_FEEDS];
	unsigned first = 0, n = (unsigned)d->cfg.nfeeds;
	int changed = 0;

	for (unsigned i = 0; i < n; i++) {
		struct feed_slot *s = &d->slots[i];
		cur[i] = uf_watchdog_beats(uf_feed_stats(s->feed));
		live[i] = (uint8_t)feed_live(s);
		uint8_t stuck = live[i] && cur[i] == d->beats[i];
		if (!stuck)
			d->moved_ns[i] = now;
		if (stuck != d->stuck[i]) {
			changed = 1;
			if (stuck)
				uf_log_warn(
				    "watchdog: feed %s: its thread made no progress for %.1f s "
				    "(stuck?); %s",
				    s->cfg->name, (double)(now - d->moved_ns[i]) / 1e9,
				    d->watchdog_us > 0 ? "withholding WATCHDOG=1"
				                       : "no systemd watchdog to tell");
			else
				uf_log_info("watchdog: feed %s: its thread makes progress again",
				            s->cfg->name);
		}
		d->stuck[i] = stuck;
	}
	int ping = uf_watchdog_decide(d->beats, cur, live, n, &first);
	memcpy(d->beats, cur, sizeof(cur[0]) * n);
	if (ping && d->watchdog_us > 0)
		uf_sd_notify_watchdog();
	if (changed) {
		take_snapshot(d);
		sd_status(d);
	}
}

/* ---- lifecycle ---- */

static int join_all(struct uf_daemon *d)
{
	struct timespec deadline;
	int stuck = 0;

	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += STOP_TIMEOUT_S;
	for (int i = 0; i < d->cfg.nfeeds; i++) {
		struct feed_slot *s = &d->slots[i];
		if (!s->started || s->joined)
			continue;
		int r = pthread_timedjoin_np(s->thread, NULL, &deadline);
		if (r) {
			uf_log_error("stop: feed \"%s\" did not stop within %d s (%s)",
			             s->cfg->name, STOP_TIMEOUT_S, strerror(r));
			stuck++;
			continue;
		}
		s->joined = 1;
	}
	return stuck;
}

static void log_summary(struct uf_daemon *d)
{
	for (int i = 0; i < d->cfg.nfeeds; i++) {
		struct feed_slot *s = &d->slots[i];
		struct uf_feed_stats st;
		if (!s->feed)
			continue;
		uf_feed_stats_read(uf_feed_stats(s->feed), &st);
		uf_log_info("feed %s: %" PRIu64 " packets, %" PRIu64 " messages, %" PRIu64
		            " records, %" PRIu64 " gaps (%" PRIu64
		            " recovered by re-request, %" PRIu64 " unrecovered), %" PRIu64
		            " re-requests",
		            s->cfg->name, st.packets, st.messages, st.records, st.gaps,
		            st.recovered_messages, st.gaps_unrecovered, st.rerequests);
	}
}

int uf_daemon_run(const char *config_path, int log_level, const char *version)
{
	struct uf_daemon *d;
	sigset_t set;
	char err[512], line[1024];
	int busy[2 * UF_CFG_MAX_FEEDS], nbusy, code = 0, stopping = 0;
	unsigned ticks = 0;

	d = calloc(1, sizeof(*d));
	if (!d) {
		fprintf(stderr, "uringfeed: out of memory\n");
		return EXIT_RUNTIME;
	}
	/* Validation first, and nothing else: a bad file never opens a socket. */
	if (uf_config_load(config_path, &d->cfg, err, sizeof(err)) != 0) {
		fprintf(stderr, "uringfeed: %s\n", err);
		free(d);
		return EXIT_CONFIG;
	}
	uf_log_set_level(log_level >= 0 ? log_level : d->cfg.log_level);
	uf_log_set_journal(d->cfg.log_journal); /* "<N>" priorities when stderr is the journal */
	uf_events_init(&d->events);
	d->tick = calloc(1, sizeof(*d->tick));
	if (!d->tick) {
		fprintf(stderr, "uringfeed: out of memory\n");
		uf_config_free(&d->cfg);
		free(d);
		return EXIT_RUNTIME;
	}
	uf_feed_set_log(feed_log, NULL); /* before any feed exists: the hook is read unlocked */
	d->version = version;
	d->pid = getpid();
	d->start_ns = uf_now_realtime_ns();
	uf_log_info("uringfeed %s starting: pid %d, config %s, %d feed%s", version, (int)d->pid,
	            config_path, d->cfg.nfeeds, d->cfg.nfeeds == 1 ? "" : "s");

	/* Every thread created from here on inherits this mask: signals go to sigtimedwait. */
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGUSR1);
#ifdef UF_TEST_HOOKS
	sigaddset(&set, SIGUSR2); /* the stall hook's toggle */
#endif
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN); /* a client closing the HTTP socket must not kill us */

	/* The watchdog systemd asks of us: heartbeats are checked (and pinged) every half
	 * period; without one, every tick, for the log and STATUS= only. */
	d->watchdog_us = uf_sd_watchdog_interval_us();
	if (d->watchdog_us < 0) {
		uf_log_warn("systemd watchdog: malformed WATCHDOG_USEC or WATCHDOG_PID; no pings");
		d->watchdog_us = 0;
	}
	d->beat_period_ns = d->watchdog_us > 0 ? (uint64_t)d->watchdog_us * 1000ull / 2 : TICK_NS;
	if (d->beat_period_ns < BEAT_MIN_NS) {
		uf_log_warn("systemd watchdog: %" PRId64 " us is too short to judge the feed "
		            "threads; pinging every %llu ms, which may be late",
		            d->watchdog_us, BEAT_MIN_NS / 1000000ull);
		d->beat_period_ns = BEAT_MIN_NS;
	}
	if (d->beat_period_ns > TICK_NS)
		d->beat_period_ns = TICK_NS; /* stuck feeds are reported within a second anyway */
	if (d->watchdog_us > 0)
		uf_log_info("systemd watchdog: %.1f s; WATCHDOG=1 every %.1f s while every feed "
		            "thread makes progress",
		            (double)d->watchdog_us / 1e6, (double)d->beat_period_ns / 1e9);

	nbusy = busy_cpus(&d->cfg, busy);
	uf_place_control_threads(busy, nbusy);

	for (int i = 0; i < d->cfg.nfeeds; i++) {
		struct feed_slot *s = &d->slots[i];
		s->d = d;
		s->cfg = &d->cfg.feeds[i];
		uf_daemon_describe_feed(s->cfg, line, sizeof(line));
		uf_log_info("%s", line);
		int r = uf_feed_create(s->cfg, &s->feed, err, sizeof(err));
		if (r) {
			uf_log_error("feed %s: cannot start: %s", s->cfg->name, err);
			s->feed = NULL;
			code = EXIT_RUNTIME;
			goto out_destroy;
		}
	}
	if (d->cfg.status_enabled && uf_status_start(&d->cfg.status_listen, fill_status, d,
	                                             &d->status, err, sizeof(err)) != 0) {
		uf_log_error("%s", err);
		code = EXIT_RUNTIME;
		goto out_destroy;
	}
	if (d->status && d->cfg.probe_enabled &&
	    uf_status_start_probe(d->status, &d->cfg.probe_listen, err, sizeof(err)) != 0) {
		uf_log_error("%s", err);
		code = EXIT_RUNTIME;
		goto out_destroy;
	}
#ifdef UF_TEST_HOOKS
	test_stall_init(d);
#endif
	for (int i = 0; i < d->cfg.nfeeds; i++) {
		struct feed_slot *s = &d->slots[i];
		int r = pthread_create(&s->thread, NULL, feed_thread, s);
		if (r) {
			uf_log_error("feed %s: cannot create its thread: %s", s->cfg->name,
			             strerror(r));
			code = EXIT_RUNTIME;
			goto out_stop;
		}
		s->started = 1;
	}
	uf_log_info("running; SIGTERM or SIGINT stops, SIGHUP re-reads the symbol filters");
	take_snapshot(d);
	sd_status(d);

	uint64_t now = uf_now_mono_ns();
	uint64_t next_tick = now + TICK_NS, next_beat = now + d->beat_period_ns;
	while (!stopping) {
		uint64_t due = next_tick < next_beat ? next_tick : next_beat;
		if (!d->ready && due > now + START_POLL_NS)
			due = now + START_POLL_NS;
		uint64_t wait = due > now ? due - now : 0;
		struct timespec tmo = {(time_t)(wait / 1000000000ull),
		                       (long)(wait % 1000000000ull)};
		siginfo_t si;
		int sig = sigtimedwait(&set, &si, &tmo);

		now = uf_now_mono_ns();
		if (sig == SIGTERM || sig == SIGINT) {
			uf_sd_notify_stopping(); /* first: a slow stop is not a hang */
			uf_log_info("received %s from pid %d, stopping",
			            sig == SIGTERM ? "SIGTERM" : "SIGINT", (int)si.si_pid);
			stopping = 1;
		} else if (sig == SIGHUP) {
			/* RELOADING=1 ... READY=1: `systemctl reload` waits for the reload to end.
			 */
			if (d->ready)
				uf_sd_notify_reloading(uf_now_mono_ns() / 1000);
			reload(d);
			if (d->ready)
				uf_sd_notify_ready();
#ifdef UF_TEST_HOOKS
		} else if (sig == SIGUSR2) {
			test_stall_toggle(d);
#endif
		}
		if (!d->ready && !stopping && check_ready(d, now)) {
			next_beat = now + d->beat_period_ns;
			take_snapshot(d);
			sd_status(d);
		}
		if (d->ready && !stopping && now >= next_beat) {
			check_heartbeats(d, now);
			next_beat = now + d->beat_period_ns;
		}
		if (sig < 0 && now < next_tick)
			continue; /* a start-up poll or a heartbeat check: the tick's work waits */
		if (now >= next_tick) {
			next_tick = now + TICK_NS;
			if (++ticks % 5 == 0)
				reap_consumers(d);
		}
		/* Events the feed threads counted since the last tick become log lines here. */
		take_snapshot(d);
		uf_events_tick(&d->events, d->tick, uf_now_mono_ns());
		if (!stopping)
			sd_status(d);
		/* SIGUSR1 or the tick: a feed that left its loop on its own has failed. */
		for (int i = 0; i < d->cfg.nfeeds && !stopping; i++) {
			struct feed_slot *s = &d->slots[i];
			if (!uf_load_acquire_u32(&s->done))
				continue;
			uf_log_error("feed %s stopped on its own: %s", s->cfg->name,
			             s->rc ? s->error : "no error given");
			uf_sd_notify_stopping();
			uf_sd_notify_status("stopping: feed %s failed: %s", s->cfg->name,
			                    s->rc ? s->error : "no error given");
			code = EXIT_RUNTIME;
			stopping = 1;
		}
	}

out_stop:
	for (int i = 0; i < d->cfg.nfeeds; i++)
		if (d->slots[i].started && !uf_load_acquire_u32(&d->slots[i].done))
			uf_store_relaxed_u32(&d->slots[i].state, UF_STATUS_STOPPING);
	if (!stopping)
		uf_sd_notify_stopping(); /* a start-up failure: systemd sees the stop, not a hang */
	/* The feeds poll these between batches; release: nothing to order, but one helper. */
	uf_store_release_u32(&d->stop, 1);
	for (int i = 0; i < d->cfg.nfeeds; i++)
		uf_store_release_u32(&d->slots[i].run_stop, 1);
#ifdef UF_TEST_HOOKS
	test_stall_release_all(d);
#endif
	if (join_all(d)) {
		/* A feed thread still runs: destroying its feed would pull memory from under it.
		 * Leave without cleanup; the ring stays open and consumers see the producer gone.
		 */
		uf_log_error("stop: giving up; exiting without closing the rings");
		_exit(EXIT_RUNTIME);
	}
	for (int i = 0; i < d->cfg.nfeeds; i++)
		if (d->slots[i].started && d->slots[i].rc && !code) {
			uf_log_error("feed %s: %s", d->slots[i].cfg->name, d->slots[i].error);
			code = EXIT_RUNTIME;
		}
out_destroy:
	/* HTTP first: its fill callback reads the feeds we are about to free. */
	uf_status_stop(d->status);
	log_summary(d);
	for (int i = 0; i < d->cfg.nfeeds; i++) {
		uf_feed_destroy(d->slots[i].feed); /* marks the ring closed for consumers */
		d->slots[i].feed = NULL;
	}
	uf_log_info("stopped%s", code ? " after a failure" : " cleanly");
	uf_config_free(&d->cfg);
	free(d->tick);
	free(d);
	return code;
}
