/*
 * vidkv_scaled_for_raw.c -- a WRONG subject: under vdeq = RAW it keeps a beta
 * per ternary group of its own and dequantizes to code * beta, the kvq
 * variant SCALED, where the paper's raw codes -1, 0, +1 are declared
 * [VIDKV-V-03] (codes it did not quantize it dequantizes as the reference).  kvq verify must FAIL the raw value cases, naming
 * [VIDKV-V-03].
 */
#include <stdlib.h>

#include "kvq_vidkv.h"

#define SUBJECT_NAME "vidkv-scaled-for-raw"
#define VIDKV_OWN_VALUES

static float *own_beta;          /* the betas of the last raw quantization */
static const uint8_t *own_tern; /* and the codes they belong to */

static int vidkv_quantize_values(const kvq_vidkv_values *out, uint32_t *np, uint32_t *flags, const float *v,
                                 const kvq_vidkv_params *prm, const kvq_vidkv_stp *stp, const kvq_policy *pol)
{
    kvq_vidkv_params p;
    kvq_vidkv_values o;
    if (prm == NULL || out == NULL || prm->vdeq != KVQ_VIDKV_VDEQ_RAW || !kvq_vidkv_params_ok(prm) ||
        !kvq_vidkv_shape_ok(prm))
        return kvq_vidkv_quantize_values(out, np, flags, v, prm, stp, pol);
    p = *prm;
    p.vdeq = KVQ_VIDKV_VDEQ_SCALED;
    free(own_beta);
    own_beta = malloc((kvq_vidkv_tern_groups(&p, 0u) + 1u) * sizeof *own_beta);
    if (own_beta == NULL) return KVQ_E_NOMEM;
    o = *out;
    o.beta = own_beta;
    own_tern = out->tern;
    return kvq_vidkv_quantize_values(&o, np, flags, v, &p, stp, pol);
}

static int vidkv_dequantize_values(float *y, uint32_t *flags, const kvq_vidkv_values *in, uint32_t np,
                                   const kvq_vidkv_params *prm, const kvq_policy *pol)
{
    kvq_vidkv_params p;
    kvq_vidkv_values i;
    if (prm == NULL || in == NULL || prm->vdeq != KVQ_VIDKV_VDEQ_RAW || own_beta == NULL || in->tern != own_tern)
        return kvq_vidkv_dequantize_values(y, flags, in, np, prm, pol);
    p = *prm;
    p.vdeq = KVQ_VIDKV_VDEQ_SCALED;
    i = *in;
    i.beta = own_beta;
    return kvq_vidkv_dequantize_values(y, flags, &i, np, &p, pol);
}

#include "subject_vidkv.h"
