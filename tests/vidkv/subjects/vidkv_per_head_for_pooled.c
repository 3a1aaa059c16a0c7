/*
 * vidkv_per_head_for_pooled.c -- a WRONG subject: under split = POOLED each
 * head gets its own split (the kvq variant PER_HEAD), where the paper's
 * Alg. 3 ranks channels over all heads [VIDKV-K-01].  The pooled format has
 * one mask row: it writes head 0's; its dequantizer is the reference's.  kvq
 * verify must FAIL
 * the pooled keys cases with more than one head whose heads' splits differ,
 * naming [VIDKV-K-01] (split pooled).
 */
#include <stdlib.h>
#include <string.h>

#include "kvq_vidkv.h"

#define SUBJECT_NAME "vidkv-per-head-for-pooled"
#define VIDKV_OWN_KEYS

static int vidkv_quantize_keys(const kvq_vidkv_keys *out, uint32_t *flags, const float *k,
                               const kvq_vidkv_params *prm, const kvq_policy *pol)
{
    kvq_vidkv_params p;
    kvq_vidkv_keys o;
    kvq_status st;
    uint8_t *m;
    if (out == NULL || out->mask == NULL || prm == NULL || prm->split != KVQ_VIDKV_SPLIT_POOLED ||
        !kvq_vidkv_params_ok(prm) || !kvq_vidkv_shape_ok(prm))
        return kvq_vidkv_quantize_keys(out, flags, k, prm, pol);
    p = *prm;
    p.split = KVQ_VIDKV_SPLIT_PER_HEAD;
    m = calloc(kvq_vidkv_mask_bytes(&p), 1);
    if (m == NULL) return KVQ_E_NOMEM;
    o = *out;
    o.mask = m;
    st = kvq_vidkv_quantize_keys(&o, flags, k, &p, pol);
    if (st == KVQ_OK) memcpy(out->mask, m, kvq_vidkv_mask_row_bytes(&p));
    free(m);
    return st;
}

static int vidkv_dequantize_keys(float *y, uint32_t *flags, const kvq_vidkv_keys *in,
                                 const kvq_vidkv_params *prm, const kvq_policy *pol)
{
    return kvq_vidkv_dequantize_keys(y, flags, in, prm, pol);
}

#include "subject_vidkv.h"
