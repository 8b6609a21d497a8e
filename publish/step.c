/* The publish step's cold helper (publish/uf_step.h). */
#include "publish/uf_step.h"

void uf_step_msg_error(struct uf_pub_step *s, enum uf_step_err kind, size_t len,
                       uint32_t instrument, uint64_t seq, uint64_t rx_ns)
{
	s->msg_error(s->owner, len == 0 ? UF_STEP_ERR_EMPTY : kind);
	if (s->nrec + 1 > s->rec_cap)
		s->split(s->owner);
	int k = uf_publish_doubt(s->pub, instrument, UF_STALE_DECODE, seq, rx_ns, s->recs + s->nrec,
	                         s->rec_cap - s->nrec);
	if (k > 0)
		s->nrec += (size_t)k;
	s->lat_msgs++;
}
