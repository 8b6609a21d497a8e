/* The systemd notify protocol, spoken directly: one datagram of "KEY=VALUE\n" lines to the
 * Unix socket named by $NOTIFY_SOCKET (see sd_notify(3)). No libsystemd: the protocol is a
 * sendto(), and the daemon then runs the same under systemd, a container or a shell.
 *
 * Every function here is cold (a socket, a sendto and a close per call): call them from the
 * daemon's main loop, never from a feed thread. They read the environment at each call, so
 * a test can point NOTIFY_SOCKET somewhere and back. */
#ifndef UF_SD_NOTIFY_H
#define UF_SD_NOTIFY_H

#include <stdint.h>

/* Longest STATUS= text sent; longer text is cut (systemd shows one line anyway). */
#define UF_SD_STATUS_MAX 256

/* Sends `state` (one or more "KEY=VALUE" lines) as one datagram to $NOTIFY_SOCKET.
 * NOTIFY_SOCKET may be an absolute path or "@name" (Linux abstract namespace).
 * Returns 1 when sent, 0 when NOTIFY_SOCKET is unset or empty (not run by systemd: nothing
 * to do), -EAFNOSUPPORT for an address form not supported here (e.g. "vsock:"),
 * -ENAMETOOLONG for a path that does not fit sockaddr_un, or the -errno of socket/sendto. */
int uf_sd_notify(const char *state);

/* "READY=1": start-up finished (for Type=notify, systemd starts dependants only now).
 * Returns as uf_sd_notify. */
int uf_sd_notify_ready(void);

/* "STOPPING=1": shutting down, so systemd does not take a slow stop for a hang. */
int uf_sd_notify_stopping(void);

/* "RELOADING=1" with "MONOTONIC_USEC=<mono_us>" (CLOCK_MONOTONIC in microseconds, which
 * Type=notify-reload requires and older systemd ignores): a reload began; send READY=1 when
 * it is over. Returns as uf_sd_notify. */
int uf_sd_notify_reloading(uint64_t mono_us);

/* "WATCHDOG=1": the service is alive (see uf_sd_watchdog_interval_us for the period). */
int uf_sd_notify_watchdog(void);

/* "STATUS=<text>": one line shown by `systemctl status`. printf-style; newlines in the
 * result become spaces (a newline would end the assignment and start another one), and the
 * text is cut at UF_SD_STATUS_MAX bytes. Returns as uf_sd_notify. */
int uf_sd_notify_status(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The watchdog period systemd expects pings within, in microseconds: $WATCHDOG_USEC, when
 * $WATCHDOG_PID is unset or is this process's pid. Returns the period (> 0), 0 when no
 * watchdog is asked of this process, -EINVAL when either variable is malformed.
 * Ping at half this period (sd_watchdog_enabled(3) advice), so one late tick is not fatal. */
int64_t uf_sd_watchdog_interval_us(void);

#endif /* UF_SD_NOTIFY_H */
