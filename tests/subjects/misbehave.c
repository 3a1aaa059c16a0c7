/*
 * misbehave.c -- a subject that crashes, hangs or is unavailable, chosen by the
 * environment variable KVQ_MISBEHAVE (crash | hang | nodevice), to check that
 * kvq turns each into a verdict and goes on [VER-RUN-02].  Cases of other bit
 * widths than 2 run the fast path normally.
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <unistd.h>

#define SUBJECT_NAME "misbehave"
#include "kvq_subject.h"

static int misbehave_init(char *why, size_t whylen)
{
    const char *m = getenv("KVQ_MISBEHAVE");
    if (m != NULL && strcmp(m, "nodevice") == 0) {
        snprintf(why, whylen, "test subject reports no device");
        return KVQ_E_NODEVICE;
    }
    return KVQ_OK;
}

static int subject_quantize(uint8_t *codes, float *scale, float *zero, uint32_t *flags,
                            const float *x, const kvq_kivi_shape *shape, const kvq_policy *pol)
{
    const char *m = getenv("KVQ_MISBEHAVE");
    if (m != NULL && shape->bits == 2) {
        if (strcmp(m, "crash") == 0) raise(SIGSEGV);
        if (strcmp(m, "hang") == 0) for (;;) pause();
    }
    return kvq_kivi_quantize(codes, scale, zero, flags, x, shape, pol);
}

static int subject_dequantize(float *y, uint32_t *flags, const uint8_t *codes,
                              const float *scale, const float *zero,
                              const kvq_kivi_shape *shape, const kvq_policy *pol)
{
    return kvq_kivi_dequantize(y, flags, codes, scale, zero, shape, pol);
}

static const kvq_subject_v1 subject_api = {
    KVQ_SUBJECT_ABI, SUBJECT_NAME, misbehave_init, subject_quantize, subject_dequantize, NULL,
};

__attribute__((visibility("default"))) const kvq_subject_v1 *kvq_subject_entry(void)
{
    return &subject_api;
}
