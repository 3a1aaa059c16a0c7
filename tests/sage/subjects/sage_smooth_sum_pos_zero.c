/*
 * sage_smooth_sum_pos_zero.c -- a WRONG subject: the smoothing's column sum
 * starts from +0 instead of the first value [SAGE-SM-01], so a column of -0
 * sums to +0 and its mean is +0 where the pinned sequence gives -0.  kvq
 * verify must FAIL the sage-qk case with such columns, naming the mean's
 * requirement [VEC-SAGE-11].
 */
#include <math.h>

#include "kvq_sage.h"

/* Every segment column of -0 only: the sum from +0 is +0, the mean +0, the
 * smoothed values -0 - +0 = -0. */
static void sum_from_pos_zero(float *xs, float *mean, const float *x, const kvq_sage_shape *shape, uint32_t seg)
{
    const uint32_t n = shape->tokens, d = shape->dim;
    for (uint32_t r0 = 0; r0 < n; r0 += seg)
        for (uint32_t c = 0; c < d; c++) {
            uint32_t t, all = 1;
            for (t = r0; t < n && t < r0 + seg; t++)
                if (!(x[(size_t)t * d + c] == 0.0f && signbit(x[(size_t)t * d + c]))) all = 0;
            if (!all) continue;
            mean[(size_t)(r0 / seg) * d + c] = 0.0f;
            for (t = r0; t < n && t < r0 + seg; t++) xs[(size_t)t * d + c] = -0.0f;
        }
}

#define SUBJECT_NAME "sage-smooth-sum-pos-zero"
#define SAGE_SMOOTH_FIX(xs, mean, x, shape, seg) sum_from_pos_zero(xs, mean, x, shape, seg)
#include "subject_sage.h"
