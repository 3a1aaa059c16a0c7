/*
 * vidkv_stream_no_stp.c -- a WRONG subject: the stream's prefill quantizes
 * every value as plain ternary, ignoring the declared token protection
 * (p > 0) [VIDKV-W-01] [VIDKV-STP-03].  kvq verify must FAIL the stream cases
 * with STP, naming [VIDKV-W-01].  A case whose STP inputs are invalid keeps
 * them (the subject rejects it as the reference does).
 */
#include <stddef.h>

#include "kvq_vidkv.h"

#define SUBJECT_NAME "vidkv-stream-no-stp"

/* p > 0 with STP inputs valid over the prefill's quantized tokens. */
static int stp_valid(const kvq_vidkv_params *p, const kvq_vidkv_stp *s, uint32_t prefill)
{
    uint32_t tp;
    if (!(p->protect > 0.0f && p->protect <= 1.0f) || s == NULL || s->xs == NULL || p->group == 0u) return 0;
    tp = prefill - prefill % p->group;
    return s->ds >= 1u && s->ds <= KVQ_VIDKV_MAX_SDIM && s->rows >= tp && s->vis_count >= 1u &&
           (uint64_t)s->vis_first + s->vis_count <= tp && s->txt_count >= 1u &&
           (uint64_t)s->txt_first + s->txt_count <= s->rows;
}

#define VIDKV_STREAM_PRM(p) ((p).protect = stp_valid(&(p), stp, prefill) ? 0.0f : (p).protect)
#include "subject_vidkv.h"
