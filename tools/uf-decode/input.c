/* uf-decode: shared input loading and iteration (see input.h). */
#include "input.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/uf_compiler.h"
#include "common/uf_time.h"
#include "decode/uf_batch.h"

static uint16_t g_udp_port; /* --port filter for pcap inputs, 0 = any */

void uf_input_set_udp_port(uint16_t port)
{
	g_udp_port = port;
}

static int g_payload;        /* --payload: enum uf_reader_payload, AUTO by default */
static uint16_t g_iex_proto; /* --payload iex-*: the IEX-TP protocol kept */

int uf_input_set_payload(const char *name)
{
	static const struct {
		const char *name;
		int payload;
		uint16_t proto;
	} kinds[] = {{"auto", UF_PAYLOAD_AUTO, 0},
	             {"mold", UF_PAYLOAD_MOLD, 0},
	             {"iex-deep", UF_PAYLOAD_IEXTP, UF_IEXTP_PROTO_DEEP},
	             {"iex-tops", UF_PAYLOAD_IEXTP, UF_IEXTP_PROTO_TOPS}};
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		if (!strcmp(name, kinds[i].name)) {
			g_payload = kinds[i].payload;
			g_iex_proto = kinds[i].proto;
			return 0;
		}
	}
	return -EINVAL;
}

int uf_input_for_each(const char *const *paths, int npaths, struct uf_decode_counters *c,
                      uf_input_msg_fn fn, uf_input_bad_fn bad, void *ctx)
{
	const struct uf_input_fns fns = {.itch = fn, .bad = bad};
	return uf_input_for_each_fns(paths, npaths, c, &fns, ctx);
}

/* One message of either venue: decoded, counted, handed to the matching callback. */
static int dispatch(const struct uf_reader_msg *rm, struct uf_decode_counters *c,
                    const struct uf_input_fns *fns, void *ctx)
{
	if (rm->proto) {
		struct uf_iex_msg m;
		int rc = uf_iex_decode_counted(rm->proto, rm->msg, rm->len, &m, c);
		if (rc > 0)
			return fns->iex ? fns->iex(ctx, rm->seq, rm->proto, &m) : 0;
		return fns->bad_iex ? fns->bad_iex(ctx, rm->seq, rm->msg, rm->len, rc) : 0;
	}
	struct uf_itch_msg m;
	int rc = uf_decode_msg_counted(rm->msg, rm->len, &m, c);
	if (rc == 0)
		return fns->itch ? fns->itch(ctx, rm->seq, &m) : 0;
	return fns->bad ? fns->bad(ctx, rm->seq, rm->msg, rm->len, rc) : 0;
}

int uf_input_for_each_fns(const char *const *paths, int npaths, struct uf_decode_counters *c,
                          const struct uf_input_fns *fns, void *ctx)
{
	for (int i = 0; i < npaths; i++) {
		struct uf_reader r;
		struct uf_reader_msg rm;
		if (uf_reader_open(&r, paths[i], c) < 0) {
			fprintf(stderr, "uf-decode: %s\n", r.err);
			uf_reader_close(&r);
			return UF_EXIT_USAGE;
		}
		if (g_udp_port && uf_reader_set_udp_port(&r, g_udp_port) < 0) {
			fprintf(stderr, "uf-decode: %s: --port %u: a %s file has no UDP ports\n",
			        paths[i], g_udp_port, uf_reader_format_name(r.format));
			uf_reader_close(&r);
			return UF_EXIT_USAGE;
		}
		if (g_payload && uf_reader_set_payload(&r, g_payload, g_iex_proto) < 0) {
			fprintf(stderr, "uf-decode: %s: --payload: a %s file has no UDP payloads\n",
			        paths[i], uf_reader_format_name(r.format));
			uf_reader_close(&r);
			return UF_EXIT_USAGE;
		}
		int stop = 0;
		while (!stop && uf_reader_next(&r, &rm) > 0)
			stop = dispatch(&rm, c, fns, ctx);
		uf_reader_close(&r);
		if (stop)
			break;
	}
	return UF_EXIT_OK;
}

/* splitmix64: a fixed shuffle, so bench layouts are the same run to run. */
static uint64_t mix(uint64_t *s)
{
	uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

int uf_input_load_packets(const char *path, size_t mtu_payload, struct uf_input_packets *out)
{
	struct uf_reader r;
	struct uf_reader_msg rm;
	memset(out, 0, sizeof(*out));
	out->slot = 2048;
	if (mtu_payload > out->slot)
		mtu_payload = out->slot;
	if (uf_reader_open(&r, path, &out->load) < 0) {
		fprintf(stderr, "uf-decode: %s\n", r.err);
		uf_reader_close(&r);
		return UF_EXIT_USAGE;
	}
	size_t cap = 1024, n = 0; /* slots allocated, slots used */
	uint8_t *arena = malloc(cap * out->slot);
	if (!arena)
		goto out_nomem;
	static const char session[UF_MOLD_SESSION_LEN] = {'B', 'E', 'N', 'C', 'H',
	                                                  ' ', ' ', ' ', ' ', ' '};
	struct uf_mold_builder b;
	uint64_t seq = 1;
	int open_pkt = 0;
	while (uf_reader_next(&r, &rm) > 0) {
		if (rm.proto) { /* the bench passes decode ITCH 5.0 */
			fprintf(stderr,
			        "uf-decode: %s: IEX-TP input: the decode benchmark reads ITCH 5.0 "
			        "only\n",
			        path);
			goto out_free;
		}
		for (;;) {
			if (!open_pkt) {
				if (n == cap) {
					uint8_t *na = realloc(arena, 2 * cap * out->slot);
					if (!na)
						goto out_nomem;
					arena = na;
					cap *= 2;
				}
				uf_mold_builder_init(&b, arena + n * out->slot, mtu_payload,
				                     session, seq);
				open_pkt = 1;
			}
			if (uf_mold_builder_add(&b, rm.msg, rm.len) == 0)
				break;
			if (b.count ==
			    0) { /* a message larger than the MTU: cannot happen for ITCH */
				fprintf(stderr,
				        "uf-decode: %s: message of %u bytes exceeds the MTU\n",
				        path, rm.len);
				goto out_free;
			}
			out->pkt_bytes += b.len;
			seq += b.count;
			n++;
			open_pkt = 0;
		}
		out->nmsgs++;
		out->msg_bytes += rm.len;
	}
	if (open_pkt && b.count) {
		out->pkt_bytes += b.len;
		n++;
	}
	uf_reader_close(&r);
	out->arena = arena;
	out->npkts = n;
	out->seq = calloc(n ? n : 1, sizeof(*out->seq));
	out->scat = calloc(n ? n : 1, sizeof(*out->scat));
	size_t *perm = malloc((n ? n : 1) * sizeof(*perm));
	uint8_t *arena2 = malloc((n ? n : 1) * out->slot);
	if (!out->seq || !out->scat || !perm || !arena2) {
		free(perm);
		free(arena2);
		uf_input_free_packets(out);
		fprintf(stderr, "uf-decode: out of memory loading %s\n", path);
		return UF_EXIT_USAGE;
	}
	for (size_t i = 0; i < n; i++) {
		const uint8_t *p = arena + i * out->slot;
		uint16_t count = uf_be16(p + 18);
		/* The datagram's length: header plus its blocks (built above, so well-formed). */
		size_t len = UF_MOLD_HDR_LEN;
		for (uint16_t k = 0; k < count; k++)
			len += 2 + uf_be16(p + len);
		out->seq[i] = (struct uf_decode_pkt){.data = p, .len = (uint32_t)len};
		perm[i] = i;
	}
	uint64_t s = 42;
	for (size_t i = n; i > 1; i--) { /* Fisher-Yates over slots */
		size_t j = (size_t)(mix(&s) % i);
		size_t t = perm[i - 1];
		perm[i - 1] = perm[j];
		perm[j] = t;
	}
	/* Packet i of the stream lives in slot perm[i] of a second arena: the order of the
	 * stream is unchanged, only where its buffers sit in memory. */
	for (size_t i = 0; i < n; i++) {
		uint8_t *dst = arena2 + perm[i] * out->slot;
		memcpy(dst, out->seq[i].data, out->seq[i].len);
		out->scat[i] = (struct uf_decode_pkt){.data = dst, .len = out->seq[i].len};
	}
	free(perm);
	out->arena2 = arena2;
	return UF_EXIT_OK;
out_nomem:
	fprintf(stderr, "uf-decode: out of memory loading %s\n", path);
out_free:
	free(arena);
	uf_reader_close(&r);
	return UF_EXIT_USAGE;
}

void uf_input_free_packets(struct uf_input_packets *p)
{
	free(p->arena);
	free(p->arena2);
	free(p->seq);
	free(p->scat);
	memset(p, 0, sizeof(*p));
}

struct kv {
	char name[32];
	uint64_t v;
};

struct kvs {
	struct kv a[128];
	int n;
};

static void collect(void *ctx, const char *name, uint64_t v)
{
	struct kvs *k = ctx;
	if (v && k->n < (int)(sizeof(k->a) / sizeof(k->a[0]))) {
		snprintf(k->a[k->n].name, sizeof(k->a[k->n].name), "%s", name);
		k->a[k->n++].v = v;
	}
}

static int kv_cmp(const void *a, const void *b)
{
	return strcmp(((const struct kv *)a)->name, ((const struct kv *)b)->name);
}

static void print_obj(FILE *f, struct kvs *k)
{
	qsort(k->a, (size_t)k->n, sizeof(k->a[0]), kv_cmp);
	fputc('{', f);
	for (int i = 0; i < k->n; i++)
		fprintf(f, "%s\"%s\":%llu", i ? "," : "", k->a[i].name,
		        (unsigned long long)k->a[i].v);
	fputc('}', f);
}

void uf_input_print_stats_json(FILE *f, const struct uf_decode_counters *c)
{
	struct kvs types = {.n = 0}, errs = {.n = 0}, skipped = {.n = 0};
	for (int i = 0; i < UF_ITCH_NTYPES; i++) {
		char name[2] = {UF_ITCH_TYPES[i], 0};
		collect(&types, name, c->by_type[i]);
	}
	uf_decode_counters_foreach_error(c, collect, &errs);
	uf_decode_counters_foreach_iex_error(c, collect, &errs);
	uf_decode_counters_foreach_skipped(c, collect, &skipped);
	fprintf(f, "{\"packets\":%llu,\"messages\":%llu,\"types\":", (unsigned long long)c->packets,
	        (unsigned long long)c->messages);
	print_obj(f, &types);
	fputs(",\"errors\":", f);
	print_obj(f, &errs);
	fprintf(f, ",\"gaps\":%llu,\"skipped\":", (unsigned long long)c->gaps);
	print_obj(f, &skipped);
	if (c->iex_packets) { /* IEX-TP was read: its own section, ITCH output unchanged */
		struct kvs iex = {.n = 0};
		for (int i = 0; i < UF_IEX_NTYPES; i++) {
			char name[2] = {UF_IEX_TYPES[i], 0};
			collect(&iex, name, c->iex_by_type[i]);
		}
		fprintf(f, ",\"iex_packets\":%llu,\"iex_stream_restarts\":%llu,\"iex_types\":",
		        (unsigned long long)c->iex_packets,
		        (unsigned long long)c->iex_stream_restarts);
		print_obj(f, &iex);
	}
	fputs("}\n", f);
}

/* Folds the decoded messages of a timed pass. */
struct pass_sink {
	uint64_t acc; /* folds fields so the decode cannot be optimised away */
	uint64_t n;   /* messages seen */
};

static void pass_sink_msg(void *ctx, uint64_t seq, const struct uf_itch_msg *m)
{
	struct pass_sink *s = ctx;
	s->acc += m->timestamp ^ m->u.add.order_ref ^ seq ^ m->type;
	s->n++;
}

void uf_input_idle_wait(uint64_t ns)
{
	uint64_t t0 = uf_now_mono_ns();
	while (uf_now_mono_ns() - t0 < ns)
		uf_cpu_relax();
}

uint64_t uf_input_decode_pass(const struct uf_decode_pkt *pk, size_t n, size_t batch, unsigned dist,
                              uint64_t gap_ns, uint64_t *msgs, uint64_t *acc, uint64_t *errors)
{
	struct uf_decode_counters c;
	struct pass_sink s = {0, 0};
	uint64_t t0, work = 0;

	memset(&c, 0, sizeof(c));
	t0 = uf_now_mono_ns();
	for (size_t i = 0; i < n; i += batch) {
		size_t k = n - i < batch ? n - i : batch;
		uint64_t tb = 0;
		if (gap_ns) {
			uf_input_idle_wait(gap_ns);
			tb = uf_now_mono_ns();
		}
		uf_decode_batch_inline(pk + i, k, dist, &c, NULL, pass_sink_msg, &s);
		if (gap_ns)
			work += uf_now_mono_ns() - tb;
	}
	t0 = uf_now_mono_ns() - t0;
	*msgs = s.n;
	*acc += s.acc;
	*errors = uf_decode_counters_errors(&c);
	return gap_ns ? work : t0;
}

uint64_t uf_input_read_pass(const struct uf_decode_pkt *pk, size_t n, uint64_t *acc)
{
	uint64_t t0 = uf_now_mono_ns(), a = 0;

	for (size_t i = 0; i < n; i++) {
		const uint8_t *p = pk[i].data;
		uint32_t len = pk[i].len, j = 0;
		for (; j + 8 <= len; j += 8) {
			uint64_t v;
			memcpy(&v, p + j, 8);
			a += v;
		}
		for (; j < len; j++)
			a += p[j];
	}
	*acc += a;
	return uf_now_mono_ns() - t0;
}
