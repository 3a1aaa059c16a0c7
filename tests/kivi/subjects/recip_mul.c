/*
 * recip_mul.c -- a LEGAL-FREEDOM subject: divides by the scale through its
 * reciprocal, q = RN32(RN32(x - z) * RN32(1 / s)), three roundings instead of
 * the pinned two.  Its codes differ from the pinned sequence only at near-ties
 * (spec/bounds/kivi.md), so it must PASS the bounded level and may fail the
 * exact level [KIVI-B-02].
 */
#include <math.h>

#define SUBJECT_NAME "recip-mul"
#include "subject_common.h"

static int subject_quantize(uint8_t *codes, float *scale, float *zero, uint32_t *flags,
                            const float *x, const kvq_kivi_shape *shape, const kvq_policy *pol)
{
    int st = kvq_kivi_quantize(codes, scale, zero, flags, x, shape, pol);
    uint32_t cmax = kvq_code_max(shape->bits);
    if (st != KVQ_OK) return st;
    for (uint64_t g = 0; g < kvq_kivi_groups(shape); g++) {
        uint8_t *grp = codes + kvq_kivi_group_code_offset(shape, g);
        float s = scale[g], z = zero[g], inv;
        if (s == 0.0f) continue;
        inv = 1.0f / s;
        for (uint32_t i = 0; i < shape->group; i++) {
            float v = x[kvq_kivi_elem_index(shape, g, i)], q;
            int64_t c;
            if (pol->subnormal == KVQ_SUBNORMAL_DAZ && fabsf(v) < 0x1p-126f) v = copysignf(0.0f, v);
            q = (v - z) * inv;
            if (isinf(q) || q > (float)cmax + 1.0f) q = (float)cmax + 1.0f;
            if (q < -1.0f) q = -1.0f;
            c = kvq_round_int(q, pol->ties);
            if (c < 0) c = 0;
            if (c > (int64_t)cmax) c = cmax;
            kvq_pack_code(grp, i, shape->bits, (uint32_t)c);
        }
    }
    return KVQ_OK;
}

static int subject_dequantize(float *y, uint32_t *flags, const uint8_t *codes,
                              const float *scale, const float *zero,
                              const kvq_kivi_shape *shape, const kvq_policy *pol)
{
    return kvq_kivi_dequantize(y, flags, codes, scale, zero, shape, pol);
}
