/*
 * vidkv_tern_geq.c -- a subject with a legal freedom of the bounded level
 * only: raw ternary codes by |v| >= alpha where [VIDKV-V-02] pins v > alpha
 * (and v < -alpha).  The two differ only at |v| = alpha, which [VIDKV-B-04]
 * lists as ambiguous: kvq verify must FAIL the exact alpha-exact cases naming
 * [VIDKV-V-02] and PASS every bounded case.  Scaled values are the
 * reference's (beta follows the codes).
 */
#include <math.h>
#include <stdlib.h>

#include "kvq_vidkv.h"

#define SUBJECT_NAME "vidkv-tern-geq"
#define VIDKV_OWN_VALUES

static int vidkv_quantize_values(const kvq_vidkv_values *out, uint32_t *np, uint32_t *flags, const float *v,
                                 const kvq_vidkv_params *prm, const kvq_vidkv_stp *stp, const kvq_policy *pol)
{
    kvq_status st = kvq_vidkv_quantize_values(out, np, flags, v, prm, stp, pol);
    uint32_t T, G, d, nt, nbt, *tok, q = 0;
    if (st != KVQ_OK || prm->vdeq != KVQ_VIDKV_VDEQ_RAW || pol->subnormal != KVQ_SUBNORMAL_KEEP) return st;
    T = prm->tokens;
    G = prm->group;
    d = prm->dim;
    nt = T - *np;
    nbt = kvq_vidkv_list_blocks(nt, G);
    tok = malloc(((size_t)nt + 1u) * sizeof *tok);
    if (tok == NULL) return KVQ_E_NOMEM;
    for (uint32_t t = 0; t < T; t++)
        if (!(prm->protect > 0.0f && kvq_vidkv_mask_get(out->prot, t))) tok[q++] = t;
    for (uint32_t h = 0; h < prm->heads; h++)
        for (uint32_t b = 0; b < nbt; b++)
            for (uint32_t c = 0; c < d; c++) {
                uint32_t m = kvq_vidkv_block_members(nt, G, b);
                uint8_t *grp = out->tern + kvq_vidkv_value_group(prm, nbt, h, b, c) * kvq_vidkv_tern_group_bytes(prm);
                float S = 0.0f, mean, alpha;
                for (uint32_t i = 0; i < m; i++) S += fabsf(v[kvq_vidkv_index(prm, h, tok[b * G + i], c)]);
                mean = S / (float)m;
                alpha = prm->gamma * mean;
                for (uint32_t i = 0; i < m; i++) {
                    float x = v[kvq_vidkv_index(prm, h, tok[b * G + i], c)];
                    if (x != 0.0f && fabsf(x) == alpha) kvq_vidkv_tern_put(grp, i, prm->vpack, x > 0.0f ? 1u : 2u);
                }
            }
    free(tok);
    return st;
}

static int vidkv_dequantize_values(float *y, uint32_t *flags, const kvq_vidkv_values *in, uint32_t np,
                                   const kvq_vidkv_params *prm, const kvq_policy *pol)
{
    return kvq_vidkv_dequantize_values(y, flags, in, np, prm, pol);
}

#include "subject_vidkv.h"
