/*
 * sage_v_negzero_positive.c -- a WRONG subject: a -0 value of a V channel
 * with a nonzero scale gets the code 0x00 instead of 0x80 (t = RN32(-0 / s)
 * = -0 keeps its sign through the conversion [SAGE-V-02] [POL-FP8-03]).  kvq
 * verify must FAIL the sage-v case with -0 in nonzero channels [VEC-SAGE-11].
 */
#include <math.h>

#include "kvq_sage.h"

static void negzero_positive(uint8_t *codes, const float *scale, const float *v, const kvq_sage_shape *shape)
{
    const uint64_t n = kvq_sage_elems(shape);
    for (uint64_t e = 0; e < n; e++)
        if (scale[e % shape->dim] > 0.0f && v[e] == 0.0f && signbit(v[e])) codes[e] = 0x00u;
}

#define SUBJECT_NAME "sage-v-negzero-positive"
#define SAGE_V_FIX(codes, scale, v, shape, fmt) negzero_positive(codes, scale, v, shape)
#include "subject_sage.h"
