/*
 * sage_public_real_round.c -- a WRONG subject: the `public` rounding of
 * [SAGE-Q-05] taken as the real round half away from zero of q = RN32(x / s)
 * instead of the binary32 sequence t = RN32(q +- 0.5), trunc(t).  The two
 * differ at q = +-(0.5 - 2^-25), the text's own example (code +-1 against 0).
 * kvq verify must FAIL the sage-qk case holding that quotient [VEC-SAGE-11].
 */
#include <math.h>

#include "kvq_sage.h"

static void real_round(uint8_t *codes, const float *scale, const float *x, const kvq_sage_shape *shape,
                       const kvq_sage_qk *qk)
{
    if (qk->rounding != KVQ_SAGE_ROUND_PUBLIC) return;
    const int32_t cmax = (int32_t)kvq_sage_cmax(qk->bits);
    for (uint32_t n = 0; n < shape->tokens; n++) {
        const float s = scale[kvq_sage_scale_slot(qk, n)];
        for (uint32_t c = 0; c < shape->dim; c++) {
            const uint64_t e = (uint64_t)n * shape->dim + c;
            const double q = (double)(x[e] / s);
            int32_t k = (int32_t)trunc(q + (q >= 0.0 ? 0.5 : -0.5));   /* exact in binary64 */
            k = k > cmax ? cmax : k < -cmax ? -cmax : k;
            kvq_sage_pack_code(codes, e, qk->bits, k);
        }
    }
}

#define SUBJECT_NAME "sage-public-real-round"
#define SAGE_QK_FIX(codes, scale, x, shape, qk) real_round(codes, scale, x, shape, qk)
#include "subject_sage.h"
