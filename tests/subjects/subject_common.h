/*
 * subject_common.h -- shared frame of the test subjects under tests/subjects/.
 *
 * Each test subject is the fast reference path with one deliberate change; it
 * defines SUBJECT_NAME, subject_quantize and subject_dequantize and includes
 * this file, which exports a version-2 record (conformance/kvq_subject.h).
 * The CERT entries are NULL (their cases SKIPPED) unless the subject defines
 * SUBJECT_CERT_KEYS, SUBJECT_CERT_VALUES, SUBJECT_CERT_ANNOTATE or
 * SUBJECT_CERT_STEP as the name of its function before the include.
 */
#ifndef KVQ_SUBJECT_COMMON_H
#define KVQ_SUBJECT_COMMON_H

#include "kvq_subject.h"

#ifndef SUBJECT_CERT_KEYS
#define SUBJECT_CERT_KEYS NULL
#endif
#ifndef SUBJECT_CERT_VALUES
#define SUBJECT_CERT_VALUES NULL
#endif
#ifndef SUBJECT_CERT_ANNOTATE
#define SUBJECT_CERT_ANNOTATE NULL
#endif
#ifndef SUBJECT_CERT_STEP
#define SUBJECT_CERT_STEP NULL
#endif

static int subject_quantize(uint8_t *codes, float *scale, float *zero, uint32_t *flags,
                            const float *x, const kvq_kivi_shape *shape, const kvq_policy *pol);
static int subject_dequantize(float *y, uint32_t *flags, const uint8_t *codes,
                              const float *scale, const float *zero,
                              const kvq_kivi_shape *shape, const kvq_policy *pol);

static const kvq_subject_v2 subject_api = {
    { KVQ_SUBJECT_ABI_V2, SUBJECT_NAME, NULL, subject_quantize, subject_dequantize, NULL },
    SUBJECT_CERT_KEYS, SUBJECT_CERT_VALUES, SUBJECT_CERT_ANNOTATE, SUBJECT_CERT_STEP,
};

__attribute__((visibility("default"))) const kvq_subject_v1 *kvq_subject_entry(void)
{
    return &subject_api.v1;
}

#endif
