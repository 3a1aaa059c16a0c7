/*
 * sage_dq_clamp_min.c -- a WRONG subject: dequantization reads the code field
 * 2^(bits-1) (INT4 -8, INT8 -128), which the quantizer never writes, as the
 * symmetric range's end -cmax (-7, -127) instead of its two's-complement
 * value [SAGE-Q-06]; [SAGE-Q-08] makes every code field valid.  kvq verify
 * must FAIL the sage-dq cases holding such a field, naming [SAGE-Q-08]
 * [VEC-SAGE-12].
 */
#include "kvq_sage.h"

static void clamp_min(float *y, const uint8_t *codes, const float *scale, const kvq_sage_shape *shape,
                      const kvq_sage_qk *qk)
{
    const int32_t lo = -(int32_t)(1u << (qk->bits - 1u)), cmax = (int32_t)kvq_sage_cmax(qk->bits);
    for (uint32_t n = 0; n < shape->tokens; n++)
        for (uint32_t c = 0; c < shape->dim; c++) {
            const uint64_t e = (uint64_t)n * shape->dim + c;
            if (kvq_sage_unpack_code(codes, e, qk->bits) == lo)
                y[e] = (float)-cmax * scale[kvq_sage_scale_slot(qk, n)];
        }
}

#define SUBJECT_NAME "sage-dq-clamp-min"
#define SAGE_DQ_FIX(y, codes, scale, shape, qk) clamp_min(y, codes, scale, shape, qk)
#include "subject_sage.h"
