/* uf-bridge's window of stream messages in flight (see bridge_pipe.h). */
#include "tools/uf-bridge/bridge_pipe.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/uf_time.h"
#include "tools/uf-bridge/bridge.h"

#define RETRY_SLEEP_NS 50000000L /* before sending again after a refusal: not a busy loop */
#define WAIT_SLICE_MS  50        /* longest single wait, so the status keeps being written */

/* ---- acknowledgement parsing (pure) ---- */

/* The value after "key": in json (NUL-terminated), or NULL. Keys of JetStream's answers are
 * unique and never appear inside its string values. */
static const char *json_after(const char *json, const char *key)
{
	char pat[40];
	const char *p;

	snprintf(pat, sizeof(pat), "\"%s\"", key);
	p = strstr(json, pat);
	if (!p)
		return NULL;
	p += strlen(pat);
	while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
		p++;
	if (*p != ':')
		return NULL;
	p++;
	while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
		p++;
	return p;
}

int uf_bridge_ack_parse(const char *data, int len, const char *stream, uint64_t *seq,
                        int *duplicate, int *err_code)
{
	char buf[512];
	const char *v;
	size_t sl = strlen(stream);
	char *end;
	unsigned long long n;

	*err_code = 0;
	*duplicate = 0;
	*seq = 0;
	if (!data || len <= 0 || (size_t)len >= sizeof(buf))
		return -1;
	memcpy(buf, data, (size_t)len);
	buf[len] = '\0';
	if (json_after(buf, "error")) {
		v = json_after(buf, "err_code");
		if (!v)
			v = json_after(buf, "code");
		if (v)
			*err_code = (int)strtol(v, NULL, 10);
		return -1;
	}
	v = json_after(buf, "stream");
	if (!v || *v != '"' || strncmp(v + 1, stream, sl) != 0 || v[1 + sl] != '"')
		return -1;
	v = json_after(buf, "seq");
	if (!v || *v < '0' || *v > '9')
		return -1;
	errno = 0;
	n = strtoull(v, &end, 10);
	if (errno || n == 0)
		return -1;
	*seq = n;
	v = json_after(buf, "duplicate");
	*duplicate = v && strncmp(v, "true", 4) == 0;
	return 0;
}

/* ---- the window ---- */

int uf_bridge_pipe_init(struct uf_bridge_pipe *p, struct uf_bridge_conn *cn, const char *stream,
                        const char *subject, uint32_t window, size_t msg_max, uint32_t ack_wait_ms,
                        const struct uf_bridge_pipe_ops *ops, uint64_t *retries)
{
	memset(p, 0, sizeof(*p));
	p->cn = cn;
	p->stream = stream;
	p->subject = subject;
	p->window = window ? window : 1;
	p->msg_max = msg_max;
	p->ack_wait_ms = ack_wait_ms;
	p->ops = *ops;
	p->retries = retries;
	p->slots = calloc(p->window, sizeof(*p->slots));
	if (!p->slots)
		return -ENOMEM;
	for (uint32_t i = 0; i < p->window; i++) {
		p->slots[i].buf = malloc(msg_max);
		if (!p->slots[i].buf) {
			uf_bridge_pipe_free(p);
			return -ENOMEM;
		}
	}
	return 0;
}

void uf_bridge_pipe_free(struct uf_bridge_pipe *p)
{
	if (p->sub)
		natsSubscription_Destroy(p->sub);
	p->sub = NULL;
	p->sub_nc = NULL;
	if (p->slots)
		for (uint32_t i = 0; i < p->window; i++)
			free(p->slots[i].buf);
	free(p->slots);
	p->slots = NULL;
}

static struct uf_bridge_slot *slot_at(struct uf_bridge_pipe *p, uint64_t i)
{
	return &p->slots[i % p->window];
}

/* Sends slot s; `expect` is its predecessor's id when that one is unacknowledged. */
static void send_slot(struct uf_bridge_pipe *p, struct uf_bridge_slot *s, const char *expect)
{
	char reply[120];
	natsMsg *m = NULL;
	natsStatus st;

	snprintf(reply, sizeof(reply), "%s%" PRIu64, p->prefix, ++p->token);
	s->token = p->token;
	s->sent_ns = uf_now_mono_ns();
	if (s->attempts++ == 0)
		s->first_ns = s->sent_ns;
	s->state = UF_BRIDGE_SLOT_SENT;
	st = p->sub ? natsMsg_Create(&m, p->subject, reply, s->buf, (int)s->len)
	            : NATS_CONNECTION_CLOSED;
	if (st == NATS_OK)
		st = natsMsgHeader_Set(m, "Nats-Msg-Id", s->id);
	if (st == NATS_OK && expect)
		st = natsMsgHeader_Set(m, "Nats-Expected-Last-Msg-Id", expect);
	if (st == NATS_OK)
		st = natsConnection_PublishMsg(p->cn->nc, m);
	natsMsg_Destroy(m);
	if (st != NATS_OK) {
		s->state = UF_BRIDGE_SLOT_FAILED;
		s->err = st;
		s->err_code = 0;
	}
}

/* A subscription for the answers on the current connection. Returns 1 when it was (re)made:
 * answers to what was sent before cannot arrive any more. */
static int ensure_sub(struct uf_bridge_pipe *p)
{
	natsInbox *inbox = NULL;
	char subj[96];
	natsStatus st;

	if (p->sub && p->sub_nc == p->cn->nc)
		return 0;
	if (p->sub)
		natsSubscription_Destroy(p->sub);
	p->sub = NULL;
	p->sub_nc = p->cn->nc;
	if (!p->cn->nc || natsInbox_Create(&inbox) != NATS_OK)
		return 1;
	snprintf(p->prefix, sizeof(p->prefix), "%s.", (const char *)inbox);
	natsInbox_Destroy(inbox);
	snprintf(subj, sizeof(subj), "%s*", p->prefix);
	st = natsConnection_SubscribeSync(&p->sub, p->cn->nc, subj);
	if (st == NATS_OK) /* a full window of answers must never be dropped as a slow consumer */
		st = natsSubscription_SetPendingLimits(p->sub, -1, -1);
	if (st != NATS_OK) {
		uf_bridge_log("acknowledgement subscription: %s", natsStatus_GetText(st));
		natsSubscription_Destroy(p->sub);
		p->sub = NULL;
	}
	return 1;
}

/* Sends every message not yet acknowledged again, from the head, in order. */
static void resend(struct uf_bridge_pipe *p)
{
	const char *prev_unacked = NULL;
	uint32_t n = 0;

	(void)ensure_sub(p);
	p->resends++;
	for (uint64_t i = p->head; i < p->tail; i++) {
		struct uf_bridge_slot *s = slot_at(p, i);
		if (s->state == UF_BRIDGE_SLOT_ACKED) {
			prev_unacked = NULL; /* stored: its successor needs no expectation */
			continue;
		}
		send_slot(p, s, i == p->head ? NULL : prev_unacked);
		prev_unacked = s->id;
		n++;
	}
	if (p->retries)
		*p->retries += n;
}

/* One answer: matched to the slot whose latest send it answers, else ignored. */
static void on_answer(struct uf_bridge_pipe *p, natsMsg *m)
{
	const char *subj = natsMsg_GetSubject(m);
	size_t pl = strlen(p->prefix);
	uint64_t token;

	if (!subj || strncmp(subj, p->prefix, pl) != 0)
		return;
	token = strtoull(subj + pl, NULL, 10);
	for (uint64_t i = p->head; i < p->tail; i++) {
		struct uf_bridge_slot *s = slot_at(p, i);
		if (s->token != token)
			continue;
		if (s->state != UF_BRIDGE_SLOT_SENT)
			return;
		if (natsMsg_IsNoResponders(m)) { /* no stream leader (yet) */
			s->state = UF_BRIDGE_SLOT_FAILED;
			s->err = NATS_NO_RESPONDERS;
			s->err_code = 503;
		} else if (uf_bridge_ack_parse(natsMsg_GetData(m), natsMsg_GetDataLength(m),
		                               p->stream, &s->js_seq, &s->duplicate,
		                               &s->err_code) == 0) {
			s->state = UF_BRIDGE_SLOT_ACKED;
		} else {
			s->state = UF_BRIDGE_SLOT_FAILED;
			s->err = NATS_ERR;
		}
		return;
	}
}

/* Retires acknowledged heads; handles a failed or late head. Returns 0, -EIO, or 1 when
 * the head is still waiting (deadline_ms then says for how long at most). */
static int step_head(struct uf_bridge_pipe *p, int *deadline_ms)
{
	while (p->head < p->tail) {
		struct uf_bridge_slot *s = slot_at(p, p->head);
		uint64_t now = uf_now_mono_ns(), due = s->sent_ns + p->ack_wait_ms * 1000000ull;

		if (s->state == UF_BRIDGE_SLOT_ACKED) {
			int rc;
			if (p->ops.outcome(p->ops.arg, NATS_OK) < 0)
				return -EIO;
			rc = p->ops.stored(p->ops.arg, s);
			if (rc == 1) { /* again under a new id */
				s->state = UF_BRIDGE_SLOT_FAILED;
				resend(p);
				continue;
			}
			if (!s->duplicate) {
				if (s->js_seq <= p->last_js_seq) {
					p->order_errors++;
					uf_bridge_log(
					    "message %s stored at stream sequence %" PRIu64
					    ", not after %" PRIu64,
					    s->id, s->js_seq, p->last_js_seq);
				}
				p->last_js_seq = s->js_seq;
			} else if (s->js_seq > p->last_js_seq) {
				p->last_js_seq = s->js_seq;
			}
			s->attempts = 0;
			p->head++;
			continue;
		}
		if (s->state == UF_BRIDGE_SLOT_FAILED) {
			natsStatus st = s->err == NATS_OK ? NATS_ERR : s->err;
			if (s->attempts % 20 == 1)
				uf_bridge_log(
				    "publish %s: %s (%d); sending the %u messages in flight "
				    "again from it, same ids",
				    s->id, natsStatus_GetText(st), s->err_code,
				    uf_bridge_pipe_inflight(p));
			if (p->ops.outcome(p->ops.arg, st) < 0)
				return -EIO;
			nanosleep(&(struct timespec){0, RETRY_SLEEP_NS}, NULL);
			p->ops.tick(p->ops.arg);
			resend(p);
			continue;
		}
		if (ensure_sub(p)) { /* a new connection: nothing sent before can be answered */
			resend(p);
			continue;
		}
		if (now >= due) {
			int rc;
			if (s->attempts % 20 == 1)
				uf_bridge_log(
				    "publish %s: no acknowledgement within %u ms; sending the "
				    "%u messages in flight again from it, same ids",
				    s->id, p->ack_wait_ms, uf_bridge_pipe_inflight(p));
			rc = p->ops.outcome(p->ops.arg, NATS_TIMEOUT);
			if (rc < 0)
				return -EIO;
			p->ops.tick(p->ops.arg);
			resend(p);
			continue;
		}
		*deadline_ms = (int)((due - now + 999999) / 1000000);
		return 1;
	}
	return 0;
}

int uf_bridge_pipe_poll(struct uf_bridge_pipe *p, int wait_ms)
{
	uint64_t end = uf_now_mono_ns() + (uint64_t)(wait_ms > 0 ? wait_ms : 0) * 1000000ull;

	for (;;) {
		int due_ms = 0, rc, pending = 0, bytes;
		natsMsg *m = NULL;
		natsStatus st;
		uint64_t now;

		/* everything already queued first: it may retire the head */
		while (p->sub && natsSubscription_GetPending(p->sub, &pending, &bytes) == NATS_OK &&
		       pending > 0) {
			if (natsSubscription_NextMsg(&m, p->sub, 1) != NATS_OK)
				break;
			on_answer(p, m);
			natsMsg_Destroy(m);
			m = NULL;
		}
		rc = step_head(p, &due_ms);
		if (rc <= 0)
			return rc;
		now = uf_now_mono_ns();
		if (now >= end)
			return 0;
		if ((uint64_t)due_ms * 1000000ull > end - now)
			due_ms = (int)((end - now + 999999) / 1000000);
		if (due_ms > WAIT_SLICE_MS)
			due_ms = WAIT_SLICE_MS;
		if (due_ms < 1)
			due_ms = 1;
		if (!p->sub) {
			nanosleep(&(struct timespec){0, (long)due_ms * 1000000L}, NULL);
			continue;
		}
		st = natsSubscription_NextMsg(&m, p->sub, due_ms);
		if (st == NATS_OK) {
			on_answer(p, m);
			natsMsg_Destroy(m);
		} else if (st != NATS_TIMEOUT) { /* the subscription is gone (closed connection) */
			nanosleep(&(struct timespec){0, (long)due_ms * 1000000L}, NULL);
		}
		p->ops.tick(p->ops.arg);
	}
}

struct uf_bridge_slot *uf_bridge_pipe_room(struct uf_bridge_pipe *p, volatile sig_atomic_t *stop,
                                           int *err)
{
	*err = 0;
	if (uf_bridge_pipe_inflight(p) >= p->window)
		p->full_waits++;
	while (uf_bridge_pipe_inflight(p) >= p->window) {
		if (*stop) {
			*err = -EINTR;
			return NULL;
		}
		if (uf_bridge_pipe_poll(p, WAIT_SLICE_MS) < 0) {
			*err = -EIO;
			return NULL;
		}
	}
	return slot_at(p, p->tail);
}

void uf_bridge_pipe_submit(struct uf_bridge_pipe *p)
{
	struct uf_bridge_slot *s = slot_at(p, p->tail);
	const char *expect = NULL;

	if (p->tail > p->head) {
		struct uf_bridge_slot *prev = slot_at(p, p->tail - 1);
		if (prev->state != UF_BRIDGE_SLOT_ACKED)
			expect = prev->id;
	}
	s->attempts = 0;
	s->duplicate = 0;
	s->js_seq = 0;
	s->err = NATS_OK;
	s->err_code = 0;
	s->state = UF_BRIDGE_SLOT_SENT;
	p->tail++;
	if (ensure_sub(p) && p->tail - p->head > 1)
		resend(p); /* a new connection: what was sent before is answered nowhere */
	else
		send_slot(p, s, expect);
}

int uf_bridge_pipe_drain(struct uf_bridge_pipe *p, volatile sig_atomic_t *stop)
{
	while (uf_bridge_pipe_inflight(p) > 0) {
		if (*stop)
			return -EINTR;
		if (uf_bridge_pipe_poll(p, WAIT_SLICE_MS) < 0)
			return -EIO;
	}
	return 0;
}
