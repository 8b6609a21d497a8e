/* The engine's parameter struct: everything uf_feed_create() needs to run one feed.
 *
 * Plain data, filled by the embedder (the daemon fills it from its JSON configuration,
 * daemon/uf_config.h; tests fill it directly). Start from uf_feed_config_defaults(): it
 * writes every default documented below. Zero in a field whose comment says "0 = default"
 * (or whose 0 is no usable value) is taken as that default by uf_feed_config_resolve(); where
 * 0 has a meaning of its own (recovery.retries, wait_ms, wait_packets, snapshot triggers) it
 * keeps it. */
#ifndef UF_FEED_CONFIG_H
#define UF_FEED_CONFIG_H

#include <netinet/in.h>
#include <stdint.h>

#define UF_CFG_MAX_LINES   2 /* A and B */
#define UF_CFG_NAME_MAX    32
#define UF_CFG_MAX_SYMBOLS 4096

/* Limits the engine enforces. The daemon's configuration checks these same constants, so
 * `uringfeed --check-config` refuses whatever uf_feed_create()/uf_feed_run() would. */
#define UF_CFG_BUFFERS_COUNT_MIN     64          /* a receive batch (UF_INGEST_BATCH) at least */
#define UF_CFG_BUFFERS_COUNT_MAX     32768       /* io_uring provided buffer rings (power of two) */
#define UF_CFG_BUFFERS_SIZE_MIN      256         /* bytes per receive buffer */
#define UF_CFG_BUFFERS_SIZE_MAX      65536       /* the largest UDP datagram */
#define UF_CFG_BOOK_DEPTH_MAX        64          /* image levels per side (sink, ring image) */
#define UF_CFG_BOOK_MAX_ORDERS_MAX   (1ll << 30) /* 16 GiB of order table: no venue is near */
#define UF_CFG_BOOK_MAX_INSTR_MAX    65535       /* ITCH stock locates are 16 bits */
#define UF_CFG_RING_CAPACITY_MIN     1024        /* records */
#define UF_CFG_RING_CAPACITY_MAX     (1ll << 30) /* records: 64 GiB */
#define UF_CFG_QUEUE_PACKETS_MAX     (1 << 24)   /* recovery queue slots */
#define UF_CFG_CAPTURE_ROTATE_MB_MAX (1 << 20)   /* 1 TiB files */
#define UF_CFG_CAPTURE_BUFFER_MB_MIN 2           /* two chunks (feed/capture.h) at least */
#define UF_CFG_CAPTURE_BUFFER_MB_MAX 16384       /* 16 GiB */

enum uf_backend {
	UF_BACKEND_IO_URING = 0,      /* "io_uring": SQPOLL, provided buffers, multishot recvmsg */
	UF_BACKEND_IO_URING_NOSQPOLL, /* "io_uring_nosqpoll": SINGLE_ISSUER|DEFER_TASKRUN */
	UF_BACKEND_RECVMMSG,          /* "recvmmsg": busy-poll recvmmsg(MSG_DONTWAIT) */
	UF_BACKEND_EPOLL,             /* "epoll": epoll_wait + recvmmsg, sleeps until data */
};

struct uf_line_config {
	char name[UF_CFG_NAME_MAX]; /* "A" / "B" */
	struct in_addr group;       /* multicast group */
	uint16_t port;              /* UDP port */
	struct in_addr interface;   /* local interface address to join on, default 0.0.0.0 */
	struct in_addr source;      /* only datagrams sent by this address (source-specific
	                             * join and a per-datagram check); 0.0.0.0 = any sender */
};

struct uf_feed_config {
	char name[UF_CFG_NAME_MAX];     /* feed name, unique */
	char protocol[UF_CFG_NAME_MAX]; /* "itch50-moldudp64" (only one so far) */
	enum uf_backend backend;        /* default io_uring */
	int cpu;                        /* feed thread CPU, -1 = not pinned (default) */
	int sqpoll_cpu;                 /* SQPOLL thread CPU, -1 = not pinned (default) */
	uint32_t sqpoll_idle_ms;        /* SQ thread idle before sleeping, default 1000 */
	int numa_node;                  /* -1 = node of `cpu` (default) */
	int nlines;                     /* 1 or 2 */
	struct uf_line_config lines[UF_CFG_MAX_LINES];
	struct {
		int enabled;               /* 1 when "recovery.server" is given */
		struct sockaddr_in server; /* MoldUDP64 re-request server */
		uint32_t max_count;        /* messages per re-request, default 1000 */
		uint32_t timeout_ms;       /* per re-request, default 50 */
		uint32_t retries;          /* default 5 */
		uint32_t wait_ms;      /* wait for the other line before re-requesting, default 2 */
		uint32_t wait_packets; /* ... or this many packets, default 64 */
		uint32_t queue_packets; /* live packets buffered while recovering, default 65536 */
		uint32_t max_requests_per_s; /* rate limit, default 1000 */
		uint32_t max_in_flight; /* re-requests outstanding at once, default 8 (<= 64) */
	} recovery;
	struct {
		int enabled;               /* 1 when "snapshot.server" is given */
		struct sockaddr_in server; /* SoupBinTCP / GLIMPSE 5.0 snapshot server */
		char username[7];          /* SoupBinTCP login, <= 6 characters */
		char password[11];         /* <= 10 characters */
		char session[11];          /* requested session, "" = the server's current one */
		int on_start;              /* load a snapshot when the feed starts, default 1 */
		uint64_t max_gap_messages; /* a hole this large loads a snapshot instead of being
		                            * re-requested; 0 = never; default 50000 */
		uint32_t max_gap_age_ms;   /* a hole open this long loads a snapshot; 0 = never;
		                            * default 1000 */
		uint32_t timeout_ms; /* one attempt, connect to End of Snapshot; default 10000 */
		uint32_t buffer_packets;   /* live packets buffered while loading, default 65536 */
		uint64_t max_lead;         /* End of Snapshot may claim at most this many messages
		                            * beyond what the lines showed (and at least what they
		                            * showed at login less this many), else the load is
		                            * refused; 0 = default 2000 */
		uint32_t max_hold_ms;      /* live data is held at most this long by an attempt that
		                            * has no working login (connecting, refused, closed,
		                            * silent); 0 = default 2000 (at most timeout_ms) */
		uint32_t reload_uncertain; /* a load that flagged books uncertain (End of Snapshot
		                            * placed only within a range) is followed by up to
		                            * this many fresh loads to clear them; 0 = never;
		                            * default 3 */
	} snapshot;
	struct {
		uint64_t max_jump;     /* messages a line may jump ahead unconfirmed; 0 = default */
		uint32_t jump_confirm; /* packets in a row that confirm a jump; 0 = default */
		uint32_t session_confirm; /* packets in a row per live line for a new session;
		                           * 0 = default */
		uint32_t line_silent_ms;  /* a line silent this long has no say; 0 = default */
	} arbitration;                    /* trust thresholds (feed/arbiter.h, uf_arb_params) */
	struct {
		char name[UF_CFG_NAME_MAX]; /* ring (shm) name, unique across feeds; default feed
		                               name */
		uint64_t capacity;          /* records, power of two, default 1048576 */
		uint32_t mode;              /* shm mode, default 0600 */
		uint32_t has_gid;           /* 1: `gid` owns the ring's directory and files
		                             * ("ring.group"); 0: the creator's group (default) */
		uint32_t gid;               /* that group */
		struct {
			char dir[200];        /* "ring.journal.dir": the day journal of every record
			                       * (docs/journal.md); "" = no journal */
			int fsync;            /* enum uf_journal_fsync ("none", "interval",
			                       * "every_batch"), default none */
			uint32_t interval_ms; /* fsync "interval" period, default 1000 */
			uint32_t keep_days;   /* delete files older than this many days; 0 = keep */
		} journal;
	} ring;
	struct {
		uint32_t depth;           /* levels per side in the book image, default 10 */
		uint64_t max_orders;      /* order table size, default 4000000 */
		uint32_t max_instruments; /* default 16384 */
	} book;
	struct {
		uint32_t count; /* buffers in the provided buffer ring, default 4096 */
		uint32_t size;  /* bytes per buffer, default 2048 */
	} buffers;
	uint32_t nsymbols;           /* symbol filter: empty = all */
	char (*symbols)[9];          /* nsymbols trimmed symbols, NUL-terminated */
	char symbols_file[256];      /* "symbols_file": one symbol a line, read at load and
	                              * on SIGHUP (relative to the config's folder); "" = none */
	int no_stage_timing;         /* "stage_timing": false sets 1: no per-stage histograms;
	                              * 0 (timing on) is the default */
	uint32_t stage_timing_every; /* "stage_timing_every": time one packet in N for the
	                              * stage histograms; 0 = UF_FEED_STAGE_EVERY_DEFAULT */
	int busy_clock;              /* "busy_clock": true sets 1: the run loop reads the tick
	                              * clock once per turn and sums the turns that did work
	                              * into stats.busy_ns (the feed thread's exact work time,
	                              * issue 26); 0 (off: no clock read) is the default */
	int idle_pause;              /* "idle_pause": whether the run loop executes a CPU pause
	                              * (x86 PAUSE, arm64 YIELD) after an empty poll:
	                              * UF_FEED_IDLE_PAUSE_* (0, absent: auto) */
	struct {
		int enabled;              /* 1 when "capture.dir" is given (feed/capture.h) */
		char dir[256];            /* folder the pcapng files go to (must exist, writable) */
		uint32_t rotate_mb;       /* a file is closed past this size (MiB), default 1024 */
		uint64_t max_total_bytes; /* the feed's files in `dir` are pruned, oldest first, to
		                           * stay under this ("max_total_gb"); 0 = no limit */
		uint32_t buffer_mb;       /* memory between the feed thread and the writer (MiB),
		                           * default 64: how long a disk stall can last without a
		                           * drop (~1 s at 60 MB/s) */
	} capture;
};

/* The engine's defaults: the one place their values live. uf_feed_config_defaults() writes
 * them into a config; the daemon's UF_CFG_DEFAULT_* (daemon/uf_config.h) and configs/README.md
 * name these same values. Ring and book sizes come from ring/ (UF_RING_DEFAULT_*) and
 * publish/ (uf_publish_params_default), which own them. */
#define UF_FEED_DEFAULT_PROTOCOL                  "itch50-moldudp64"
#define UF_FEED_DEFAULT_BACKEND                   UF_BACKEND_IO_URING
#define UF_FEED_DEFAULT_CPU                       (-1) /* cpu, sqpoll_cpu: not pinned */
#define UF_FEED_DEFAULT_NUMA_NODE                 (-1) /* the node of `cpu` */
#define UF_FEED_DEFAULT_SQPOLL_IDLE_MS            1000
#define UF_FEED_DEFAULT_RECOVERY_MAX_COUNT        1000
#define UF_FEED_DEFAULT_RECOVERY_TIMEOUT_MS       50
#define UF_FEED_DEFAULT_RECOVERY_RETRIES          5
#define UF_FEED_DEFAULT_RECOVERY_WAIT_MS          2
#define UF_FEED_DEFAULT_RECOVERY_WAIT_PACKETS     64
#define UF_FEED_DEFAULT_RECOVERY_QUEUE_PACKETS    65536
#define UF_FEED_DEFAULT_RECOVERY_MAX_RPS          1000
#define UF_FEED_DEFAULT_RECOVERY_MAX_IN_FLIGHT    8
#define UF_FEED_DEFAULT_SNAPSHOT_ON_START         1
#define UF_FEED_DEFAULT_SNAPSHOT_MAX_GAP_MESSAGES 50000
#define UF_FEED_DEFAULT_SNAPSHOT_MAX_GAP_AGE_MS   1000
#define UF_FEED_DEFAULT_SNAPSHOT_TIMEOUT_MS       10000
#define UF_FEED_DEFAULT_SNAPSHOT_BUFFER_PACKETS   65536
#define UF_FEED_DEFAULT_SNAPSHOT_MAX_LEAD         2000
#define UF_FEED_DEFAULT_SNAPSHOT_MAX_HOLD_MS      2000
#define UF_FEED_DEFAULT_SNAPSHOT_RELOAD_UNCERTAIN 3
#define UF_FEED_DEFAULT_BUFFERS_COUNT             4096
#define UF_FEED_DEFAULT_BUFFERS_SIZE              2048
#define UF_FEED_STAGE_EVERY_DEFAULT               16 /* stage_timing_every */
#define UF_FEED_DEFAULT_BUSY_CLOCK                0  /* busy_clock: off */
/* idle_pause. AUTO (0, the default) is the back end the loop runs on: io_uring with SQPOLL
 * spins without a pause, io_uring without SQPOLL and recvmmsg pause (epoll sleeps). Measured
 * each way in one uf-bench e2e run (docs/performance.md "The feed's idle pause"): the feed
 * that enters the kernel for its own receive used less CPU per message with the pause in
 * every run; the SQPOLL feed no more without it, and less in the daemon's stage means. ON and
 * OFF ("idle_pause": true / false) fix it whatever the back end. */
#define UF_FEED_IDLE_PAUSE_AUTO           0
#define UF_FEED_IDLE_PAUSE_ON             1
#define UF_FEED_IDLE_PAUSE_OFF            2
#define UF_FEED_DEFAULT_IDLE_PAUSE        UF_FEED_IDLE_PAUSE_AUTO
#define UF_FEED_DEFAULT_CAPTURE_ROTATE_MB 1024
#define UF_FEED_DEFAULT_CAPTURE_BUFFER_MB 64

/* Fills `cfg` with every default above (and the ring's and books' own): zero everywhere
 * else (no name, no lines, recovery and snapshot off, no symbol filter). An embedder starts
 * from this and sets what it wants; the daemon does the same before it reads a feed's JSON, so
 * both get the same engine. Where 0 is a value of its own (recovery.retries, wait_ms,
 * wait_packets, snapshot.on_start, max_gap_messages, max_gap_age_ms, reload_uncertain) only
 * this function gives the documented default: a config that was zeroed by hand keeps its 0.
 * Cold. */
void uf_feed_config_defaults(struct uf_feed_config *cfg);

/* Replaces each field whose 0 is documented as "the default" (0 is no usable value there:
 * recovery.max_count, timeout_ms, queue_packets, max_requests_per_s, max_in_flight,
 * snapshot.timeout_ms, buffer_packets, ring.capacity and mode, book.*, buffers.*,
 * sqpoll_idle_ms, stage_timing_every, capture.rotate_mb and buffer_mb, arbitration.*: the arbiter's
 * uf_arb_params_default) with its default; leaves every other field as it is. uf_feed_create() and
 * the engine's parts that take a config (uf_arb_init) apply it, so none of them keeps a fallback
 * value of its own. Cold. */
void uf_feed_config_resolve(struct uf_feed_config *cfg);

#endif /* UF_FEED_CONFIG_H */
