/*
 * write_on_error.c -- a WRONG subject (version 3): the fast path, except that
 * a call which fails first writes into its outputs -- KIVI's quantizer sets
 * scale[0] and CLAMPED in the flags word, CERT's key quantizer sets sigma[0]
 * -- and then returns the error.  A failed call must leave every output and
 * the flags word untouched [API-ERR-01], so kvq verify must FAIL every error
 * case of these operations although the status is the expected one.
 */
#include <string.h>

#include "kvq_subject.h"

static int quantize(uint8_t *codes, float *scale, float *zero, uint32_t *flags, const float *x,
                    const kvq_kivi_shape *shape, const kvq_policy *pol)
{
    kvq_status st = kvq_kivi_quantize(codes, scale, zero, flags, x, shape, pol);
    if (st != KVQ_OK && scale != NULL && flags != NULL) {
        scale[0] = 0.0f; /* the defect: one element (every buffer has one) */
        *flags |= KVQ_FLAG_CLAMPED;
    }
    return st;
}

static int dequantize(float *y, uint32_t *flags, const uint8_t *codes, const float *scale,
                      const float *zero, const kvq_kivi_shape *shape, const kvq_policy *pol)
{
    return kvq_kivi_dequantize(y, flags, codes, scale, zero, shape, pol);
}

static int keys(int8_t *codes, float *sigma, float *z, uint32_t *flags, const float *k,
                const kvq_cert_shape *shape, const kvq_policy *pol)
{
    kvq_status st = kvq_cert_quantize_keys(codes, sigma, z, flags, k, shape, pol);
    if (st != KVQ_OK && sigma != NULL) sigma[0] = 1.0f; /* the defect */
    return st;
}

static kvq_entry_fn lookup(const char *entry, uint32_t sigver)
{
    if (sigver != 1u) return NULL;
    if (strcmp(entry, "kivi_quantize") == 0) return (kvq_entry_fn)quantize;
    if (strcmp(entry, "kivi_dequantize") == 0) return (kvq_entry_fn)dequantize;
    if (strcmp(entry, "cert_quantize_keys") == 0) return (kvq_entry_fn)keys;
    return NULL;
}

static const kvq_subject_v3 subject = { KVQ_SUBJECT_ABI_V3, "write-on-error", NULL, NULL, lookup };

__attribute__((visibility("default"))) const kvq_subject_v3 *kvq_subject_abi3(void)
{
    return &subject;
}
