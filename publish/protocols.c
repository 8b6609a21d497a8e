/* The table of venue protocols (publish/uf_proto.h): THE one place an entry is listed. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "publish/proto_iex.h"
#include "publish/proto_itch50.h"
#include "publish/uf_proto.h"

/* Built-in entries; the first is UF_PROTO_DEFAULT. */
static const struct uf_proto *const uf_proto_builtin[] = {
    &uf_proto_itch50_moldudp64,
    &uf_proto_iex_deep,
    &uf_proto_iex_tops,
};
#define UF_PROTO_NBUILTIN (sizeof(uf_proto_builtin) / sizeof(uf_proto_builtin[0]))
_Static_assert(UF_PROTO_NBUILTIN <= UF_PROTO_MAX, "the table holds the built-in entries");

static const struct uf_proto *uf_proto_extra[UF_PROTO_MAX - UF_PROTO_NBUILTIN]; /* registered */
static size_t uf_proto_nextra;

const struct uf_proto *uf_proto_find(const char *name)
{
	if (!name || !name[0])
		name = UF_PROTO_DEFAULT;
	for (size_t i = 0; i < UF_PROTO_NBUILTIN; i++)
		if (!strcmp(uf_proto_builtin[i]->name, name))
			return uf_proto_builtin[i];
	for (size_t i = 0; i < uf_proto_nextra; i++)
		if (!strcmp(uf_proto_extra[i]->name, name))
			return uf_proto_extra[i];
	return NULL;
}

int uf_proto_register(const struct uf_proto *p)
{
	if (!p || !p->name || !p->name[0] || !p->framing || !p->framing->open ||
	    !p->framing->iter_init || !p->framing->iter_next || !p->apply)
		return -EINVAL;
	if (uf_proto_find(p->name))
		return -EEXIST;
	if (uf_proto_nextra >= sizeof(uf_proto_extra) / sizeof(uf_proto_extra[0]))
		return -ENOSPC;
	uf_proto_extra[uf_proto_nextra++] = p;
	return 0;
}

const char *uf_proto_names(char *buf, size_t cap)
{
	size_t len = 0;
	if (!cap)
		return buf;
	buf[0] = '\0';
	for (size_t i = 0; i < UF_PROTO_NBUILTIN + uf_proto_nextra; i++) {
		const struct uf_proto *p = i < UF_PROTO_NBUILTIN
		                               ? uf_proto_builtin[i]
		                               : uf_proto_extra[i - UF_PROTO_NBUILTIN];
		int n = snprintf(buf + len, cap - len, "%s\"%s\"", i ? ", " : "", p->name);
		if (n < 0 || (size_t)n >= cap - len)
			break;
		len += (size_t)n;
	}
	return buf;
}
