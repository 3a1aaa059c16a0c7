/*
 * cert_midpoint.c -- a WRONG subject: CERT keys with the zero point of the
 * paper's public code, the block-channel midpoint z = (l + u)/2, and codes
 * symmetric about it, instead of z = RN32(l + RN32(128 sigma)) [CERT-K8-01]
 * (spec/cert.md, "Differences").  The metadata is compared bit for bit at
 * both levels [CERT-K8-06], so kvq verify must FAIL its cert-keys cases at
 * the exact and at the bounded level.  Values and annotations are the fast
 * path's (they pass); it has no step entry (its cert-step cases are SKIPPED).
 */
#include <math.h>

#define SUBJECT_NAME "cert-midpoint"
#define SUBJECT_CERT_KEYS midpoint_keys
#define SUBJECT_CERT_VALUES fast_values
#define SUBJECT_CERT_ANNOTATE fast_annotate

#include "subject_cert.h"

static int midpoint_keys(int8_t *codes, float *sigma, float *z, uint32_t *flags, const float *k,
                         const kvq_cert_shape *shape, const kvq_policy *pol)
{
    /* The fast path validates, sizes and computes sigma; then the defect. */
    kvq_status st = kvq_cert_quantize_keys(codes, sigma, z, flags, k, shape, pol);
    uint32_t nq, d;
    if (st != KVQ_OK) return st;
    nq = kvq_cert_full_blocks(shape), d = shape->dim;
    for (uint32_t b = 0; b < nq; b++)
        for (uint32_t c = 0; c < d; c++) {
            uint64_t m = kvq_cert_key_meta_index(shape, b, c);
            int8_t *blk = codes + kvq_cert_key_block_offset(shape, b);
            float l = INFINITY, u = -INFINITY, zm;
            for (uint32_t i = 0; i < KVQ_CERT_BLOCK; i++) {
                float x = k[kvq_cert_in_index(shape, 16u * b + i, c)];
                l = x < l ? x : l, u = x > u ? x : u;
            }
            if (sigma[m] == 0.0f) continue;          /* zero-range channel: as pinned */
            zm = (l + u) * 0.5f;                     /* the defect: the midpoint */
            z[m] = zm;
            for (uint32_t i = 0; i < KVQ_CERT_BLOCK; i++) {
                float q = (k[kvq_cert_in_index(shape, 16u * b + i, c)] - zm) / sigma[m];
                float r = nearbyintf(q);             /* ties to even (default mode) */
                r = r < -128.0f ? -128.0f : r > 127.0f ? 127.0f : r;
                blk[kvq_cert_key_code_index(d, i, c)] = (int8_t)r;
            }
        }
    return KVQ_OK;
}

#include "subject_common.h"

static int subject_quantize(uint8_t *codes, float *scale, float *zero, uint32_t *flags,
                            const float *x, const kvq_kivi_shape *shape, const kvq_policy *pol)
{
    return kvq_kivi_quantize(codes, scale, zero, flags, x, shape, pol);
}

static int subject_dequantize(float *y, uint32_t *flags, const uint8_t *codes,
                              const float *scale, const float *zero,
                              const kvq_kivi_shape *shape, const kvq_policy *pol)
{
    return kvq_kivi_dequantize(y, flags, codes, scale, zero, shape, pol);
}
