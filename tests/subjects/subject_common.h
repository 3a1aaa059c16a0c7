/*
 * subject_common.h -- shared frame of the test subjects under tests/subjects/.
 *
 * Each test subject is the fast reference path with one deliberate change; it
 * defines SUBJECT_NAME, subject_quantize and subject_dequantize and includes
 * this file, which exports the kvq_subject_v1 entry point.
 */
#ifndef KVQ_SUBJECT_COMMON_H
#define KVQ_SUBJECT_COMMON_H

#include "kvq_subject.h"

static int subject_quantize(uint8_t *codes, float *scale, float *zero, uint32_t *flags,
                            const float *x, const kvq_kivi_shape *shape, const kvq_policy *pol);
static int subject_dequantize(float *y, uint32_t *flags, const uint8_t *codes,
                              const float *scale, const float *zero,
                              const kvq_kivi_shape *shape, const kvq_policy *pol);

static const kvq_subject_v1 subject_api = {
    KVQ_SUBJECT_ABI, SUBJECT_NAME, NULL, subject_quantize, subject_dequantize, NULL,
};

__attribute__((visibility("default"))) const kvq_subject_v1 *kvq_subject_entry(void)
{
    return &subject_api;
}

#endif
