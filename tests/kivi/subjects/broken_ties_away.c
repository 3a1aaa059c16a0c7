/*
 * broken_ties_away.c -- a WRONG subject: rounds half away from zero whatever
 * the policy says (as C's roundf does).  kvq verify must FAIL it on the exact
 * ties that the standard vectors contain [POL-TIE-01].
 */
#define SUBJECT_NAME "broken-ties-away"
#include "subject_common.h"

static int subject_quantize(uint8_t *codes, float *scale, float *zero, uint32_t *flags,
                            const float *x, const kvq_kivi_shape *shape, const kvq_policy *pol)
{
    kvq_policy p = *pol;
    p.ties = KVQ_TIES_AWAY; /* the defect */
    return kvq_kivi_quantize(codes, scale, zero, flags, x, shape, &p);
}

static int subject_dequantize(float *y, uint32_t *flags, const uint8_t *codes,
                              const float *scale, const float *zero,
                              const kvq_kivi_shape *shape, const kvq_policy *pol)
{
    return kvq_kivi_dequantize(y, flags, codes, scale, zero, shape, pol);
}
