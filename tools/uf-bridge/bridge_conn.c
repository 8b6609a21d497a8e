/* uf-bridge's NATS connection and its failover rule (see bridge_conn.h). */
#include "tools/uf-bridge/bridge_conn.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "ring/nats/nats_security.h"

/* library thread: counted for the status */
static void on_reconnected(natsConnection *nc, void *closure)
{
	struct uf_bridge_conn *cn = closure;

	__atomic_add_fetch(&cn->reconnects, 1, __ATOMIC_RELAXED);
}

/* library thread: a per-symbol message refused or never acknowledged (not retried) */
static void on_sym_error(jsCtx *js, jsPubAckErr *pae, void *closure)
{
	struct uf_bridge_conn *cn = closure;

	__atomic_add_fetch(&cn->sym_failed, 1, __ATOMIC_RELAXED);
}

/* The host:port part of a URL (after "scheme://" and "user:pass@"): how the server the
 * library reports is matched with an entry of the configured list. */
static const char *url_host(const char *url)
{
	const char *p = strstr(url, "://"), *at;

	p = p ? p + 3 : url;
	at = strchr(p, '@');
	return at ? at + 1 : p;
}

void uf_bridge_conn_url(const struct uf_bridge_conn *cn, char *out, size_t len)
{
	char url[256] = "";

	out[0] = '\0';
	if (cn->nc && natsConnection_GetConnectedUrl(cn->nc, url, sizeof(url)) == NATS_OK &&
	    url[0]) {
		const char *p = strstr(url, "://");
		snprintf(out, len, "%.*s%s", p ? (int)(p + 3 - url) : 0, url, url_host(url));
	}
}

int uf_bridge_conn_answering(const struct uf_bridge_conn *cn)
{
	/* a hung server keeps its TCP connection: connected means it also answers */
	return cn->nc && natsConnection_Status(cn->nc) == NATS_CONN_STATUS_CONNECTED &&
	       cn->timeouts_in_row == 0;
}

/* Options shared by every connection; the server list is set by connect_from(). */
static int make_options(struct uf_bridge_conn *cn)
{
	natsStatus s;

	snprintf(cn->urlbuf, sizeof(cn->urlbuf), "%s", cn->cfg->urls);
	for (char *save = NULL, *tok = strtok_r(cn->urlbuf, ",", &save);
	     tok && cn->nurls < UF_BRIDGE_MAX_URLS; tok = strtok_r(NULL, ",", &save))
		cn->urls[cn->nurls++] = tok;
	if (cn->nurls == 0) {
		uf_bridge_log("no NATS URL given (--nats nats://host:port[,...])");
		return -1;
	}
	s = natsOptions_Create(&cn->opts);
	if (s == NATS_OK)
		s = natsOptions_SetName(cn->opts, "uf-bridge");
	if (s == NATS_OK) /* a bridge never gives up on its servers */
		s = natsOptions_SetMaxReconnect(cn->opts, -1);
	if (s == NATS_OK)
		s = natsOptions_SetReconnectWait(cn->opts, 100);
	if (s == NATS_OK) /* servers in the order given: list the nearest first */
		s = natsOptions_SetNoRandomize(cn->opts, true);
	if (s == NATS_OK)
		s = natsOptions_SetTimeout(cn->opts, 2000);
	if (s == NATS_OK) /* a server that answers no PING for 2 periods is stale: the library
	                   * then reconnects elsewhere, even when the bridge publishes nothing */
		s = natsOptions_SetPingInterval(cn->opts, cn->cfg->ack_wait_ms);
	if (s == NATS_OK)
		s = natsOptions_SetMaxPingsOut(cn->opts, 2);
	if (s == NATS_OK)
		s = natsOptions_SetReconnectBufSize(cn->opts, 64 * 1024 * 1024);
	if (s == NATS_OK)
		s = natsOptions_SetReconnectedCB(cn->opts, on_reconnected, cn);
	if (s == NATS_OK)
		s = natsOptions_SetRetryOnFailedConnect(cn->opts, true, NULL, NULL);
	if (s == NATS_OK) {
		struct uf_nats_security sec = {cn->cfg->creds, cn->cfg->tls_ca, cn->cfg->tls_cert,
		                               cn->cfg->tls_key};
		s = uf_nats_security_apply(cn->opts, &sec);
	}
	if (s != NATS_OK) {
		uf_bridge_log("NATS options: %s", natsStatus_GetText(s));
		return -1;
	}
	return 0;
}

/* Connects with the list rotated to start at urls[first] (the others follow in the given
 * order, wrapping) and makes the JetStream contexts. */
static int connect_from(struct uf_bridge_conn *cn, int first)
{
	const char *urls[UF_BRIDGE_MAX_URLS];
	natsStatus s;

	for (int i = 0; i < cn->nurls; i++)
		urls[i] = cn->urls[(first + i) % cn->nurls];
	cn->first_url = first;
	s = natsOptions_SetServers(cn->opts, urls, cn->nurls);
	if (s == NATS_OK)
		s = natsConnection_Connect(&cn->nc, cn->opts);
	if (s != NATS_OK && s != NATS_NOT_YET_CONNECTED) {
		uf_bridge_log("connect %s: %s", cn->cfg->urls, natsStatus_GetText(s));
		return -1;
	}
	s = natsConnection_JetStream(&cn->js, cn->nc, NULL);
	if (s == NATS_OK && cn->cfg->per_symbol) {
		jsOptions jo;
		jsOptions_Init(&jo);
		jo.PublishAsync.MaxPending = 65536;
		jo.PublishAsync.ErrHandler = on_sym_error;
		jo.PublishAsync.ErrHandlerClosure = cn;
		s = natsConnection_JetStream(&cn->js_sym, cn->nc, &jo);
	}
	if (s != NATS_OK) {
		uf_bridge_log("JetStream context: %s", natsStatus_GetText(s));
		return -1;
	}
	return 0;
}

/* Drops the connection and its contexts, keeps the options. */
static void disconnect(struct uf_bridge_conn *cn)
{
	natsMsgList pending = {0};

	if (cn->js_sym_async && js_PublishAsyncGetPendingList(&pending, cn->js_sym) == NATS_OK) {
		__atomic_add_fetch(&cn->sym_failed, (uint64_t)pending.Count, __ATOMIC_RELAXED);
		natsMsgList_Destroy(&pending);
	}
	if (cn->js_async && js_PublishAsyncGetPendingList(&pending, cn->js) == NATS_OK)
		natsMsgList_Destroy(&pending);
	jsCtx_Destroy(cn->js);
	jsCtx_Destroy(cn->js_sym);
	cn->js = cn->js_sym = NULL;
	cn->js_async = cn->js_sym_async = 0;
	if (cn->nc)
		natsConnection_Destroy(cn->nc);
	cn->nc = NULL;
}

int uf_bridge_conn_open(struct uf_bridge_conn *cn, const struct uf_bridge_config *cfg)
{
	memset(cn, 0, sizeof(*cn));
	cn->cfg = cfg;
	return make_options(cn) < 0 ? -1 : connect_from(cn, 0);
}

void uf_bridge_conn_close(struct uf_bridge_conn *cn)
{
	disconnect(cn);
	natsOptions_Destroy(cn->opts);
	cn->opts = NULL;
}

/* Leaves the current server for the next one of the list; the unacknowledged message is
 * then sent again on the new connection with its id (JetStream de-duplicates). */
static int fail_over(struct uf_bridge_conn *cn, uint64_t lag)
{
	char url[256];
	int next = (cn->first_url + 1) % cn->nurls;

	uf_bridge_conn_url(cn, url, sizeof(url));
	if (!url[0]) /* the library already dropped it (no PONG): the one we connected to */
		snprintf(url, sizeof(url), "%s", cn->urls[cn->first_url]);
	for (int i = 0; i < cn->nurls; i++)
		if (strcmp(url_host(url), url_host(cn->urls[i])) == 0)
			next = (i + 1) % cn->nurls;
	cn->failovers++;
	uf_bridge_log("%s acknowledged nothing for %u x %u ms: leaving it for %s (lag %" PRIu64
	              " records, failover %" PRIu64 ")",
	              url, cn->timeouts_in_row, cn->cfg->ack_wait_ms, cn->urls[next], lag,
	              cn->failovers);
	disconnect(cn);
	cn->timeouts_in_row = 0;
	return connect_from(cn, next);
}

int uf_bridge_conn_outcome(struct uf_bridge_conn *cn, natsStatus s, uint64_t lag)
{
	uint32_t n = cn->cfg->ack_timeouts;

	if (s != NATS_TIMEOUT) {
		cn->timeouts_in_row = 0;
		return 0;
	}
	cn->ack_timeouts++;
	cn->timeouts_in_row++;
	if (cn->timeouts_in_row < n)
		return 0;
	if (cn->timeouts_in_row < 4 * n &&
	    natsConnection_FlushTimeout(cn->nc, cn->cfg->ack_wait_ms) == NATS_OK) {
		if (cn->timeouts_in_row == n) {
			char url[256];
			uf_bridge_conn_url(cn, url, sizeof(url));
			uf_bridge_log("%s answers PINGs but nothing acknowledges: waiting for the "
			              "cluster (stream leader election?)",
			              url);
		}
		return 0;
	}
	return fail_over(cn, lag) < 0 ? -1 : 1;
}
