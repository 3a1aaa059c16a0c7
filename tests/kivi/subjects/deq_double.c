/*
 * deq_double.c -- a WRONG subject: the fast path's quantizer, then a
 * dequantization evaluated in binary64 and rounded to binary32,
 * y = (float)((double)code * s + z), instead of the pinned single rounding
 * RN32(code * s + z) = fmaf(code, s, z) [KIVI-D-01].  The binary64 sum is
 * itself rounded, so where the exact value lies just off a binary32 midpoint
 * the two roundings land on the midpoint and then on its even neighbour: the
 * result differs from the pinned one in the last bit.  That is inside the
 * [KIVI-B-03] bound (the bounded level accepts it) but not the pinned
 * sequence, so kvq verify must FAIL its exact-level cases where the vectors
 * hold such a value (the deq-midpoint class, [VEC-GEN-02]).  Validation,
 * flags, errors and saturation are the fast path's: the only change is the
 * rounding of finite values.
 */
#include <math.h>

#define SUBJECT_NAME "deq-double"
#include "subject_common.h"

static int subject_quantize(uint8_t *codes, float *scale, float *zero, uint32_t *flags,
                            const float *x, const kvq_kivi_shape *shape, const kvq_policy *pol)
{
    return kvq_kivi_quantize(codes, scale, zero, flags, x, shape, pol);
}

static int subject_dequantize(float *y, uint32_t *flags, const uint8_t *codes,
                              const float *scale, const float *zero,
                              const kvq_kivi_shape *shape, const kvq_policy *pol)
{
    int st = kvq_kivi_dequantize(y, flags, codes, scale, zero, shape, pol);
    if (st != KVQ_OK) return st;
    for (uint64_t g = 0; g < kvq_kivi_groups(shape); g++) {
        const uint8_t *grp = codes + kvq_kivi_group_code_offset(shape, g);
        for (uint32_t i = 0; i < shape->group; i++) {
            uint32_t c = kvq_unpack_code(grp, i, shape->bits);
            float v = (float)((double)c * (double)scale[g] + (double)zero[g]); /* the defect */
            if (isfinite(v)) y[kvq_kivi_elem_index(shape, g, i)] = v; /* else: saturated as pinned */
        }
    }
    return KVQ_OK;
}
