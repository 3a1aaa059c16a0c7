/*
 * sage_fp8_midpoint_away.c -- a WRONG subject: the FP8 conversions of P~ and
 * V round an exact midpoint away from zero where [POL-FP8-03] rounds to even
 * (t = RN32(p F) [SAGE-P-01], t = RN32(v / s) [SAGE-V-02]).  kvq verify must
 * FAIL the sage-p and sage-v cases whose t are FP8 midpoints [VEC-SAGE-11].
 */
#include <math.h>

#include "kvq_fp8.h"
#include "kvq_sage.h"

static float fp8_val(uint8_t c, uint32_t fmt)
{
    return fmt ? kvq_fp8_e5m2_to_f32(c) : kvq_fp8_e4m3_to_f32(c);
}

/* The code of t with a midpoint rounded away: the encoder's code, or the
 * next larger magnitude when t lies exactly half-way to it. */
static uint8_t away(uint8_t code, float t, uint32_t fmt)
{
    const float lo = fabsf(fp8_val(code, fmt)), at = fabsf(t);
    if (lo >= at) return code;
    const uint8_t up = (uint8_t)(code + 1u);
    return fabsf(fp8_val(up, fmt)) - at == at - lo ? up : code;
}

static void p_away(uint8_t *codes, const float *p, uint64_t n, uint32_t fmt)
{
    for (uint64_t e = 0; e < n; e++) codes[e] = away(codes[e], p[e] * (fmt ? 57344.0f : 448.0f), fmt);
}

static void v_away(uint8_t *codes, const float *scale, const float *v, const kvq_sage_shape *shape, uint32_t fmt)
{
    const uint64_t n = kvq_sage_elems(shape);
    for (uint64_t e = 0; e < n; e++)
        if (scale[e % shape->dim] > 0.0f) codes[e] = away(codes[e], v[e] / scale[e % shape->dim], fmt);
}

#define SUBJECT_NAME "sage-fp8-midpoint-away"
#define SAGE_P_FIX(codes, rowsum, p, rows, cols, fmt) p_away(codes, p, (uint64_t)(rows) * (cols), fmt)
#define SAGE_V_FIX(codes, scale, v, shape, fmt) v_away(codes, scale, v, shape, fmt)
#include "subject_sage.h"
