/*
 * cert_unsound.c -- a WRONG subject: the fast CERT step, but its record claims
 * half of the E_key the fast path computed.  The fast value is an upper bound
 * of the sound E_key [CERT-EK-01] and not twice it, so the claim falls below
 * the sound value and kvq verify must FAIL its cert-step cases on the claims
 * check [CERT-CON-02] [CERT-VER-02] ("claim ekey ... below sound E_key"),
 * whether or not the output meets the contract.  (The paper's own term,
 * the record's ekey_paper [CERT-EK-02], is not used: it is not below the
 * sound value on every step, so a subject claiming it fails only some steps.)
 * Quantizers and annotations are the fast path's (they pass).
 */
#include <stdlib.h>

#define SUBJECT_NAME "cert-unsound"
#define SUBJECT_CERT_KEYS fast_keys
#define SUBJECT_CERT_VALUES fast_values
#define SUBJECT_CERT_ANNOTATE fast_annotate
#define SUBJECT_CERT_STEP unsound_step

#include "kvq.h"

static int fast_keys(int8_t *codes, float *sigma, float *z, uint32_t *flags, const float *k,
                     const kvq_cert_shape *shape, const kvq_policy *pol)
{
    return kvq_cert_quantize_keys(codes, sigma, z, flags, k, shape, pol);
}

static int fast_values(uint8_t *codes, float *scale, float *zero, uint32_t *flags, const float *v,
                       const kvq_cert_shape *shape, const kvq_policy *pol)
{
    return kvq_cert_quantize_values(codes, scale, zero, flags, v, shape, pol);
}

static int fast_annotate(float *eta, float *nu, const float *v, const uint8_t *codes,
                         const float *scale, const float *zero, const kvq_cert_shape *shape)
{
    return kvq_cert_annotate(eta, nu, v, codes, scale, zero, shape);
}

static int unsound_step(float *out, uint8_t *sel, uint8_t *prom, kvq_cert_record *rec,
                        kvq_cert_decl *decl, float *delta1, const float *q, float scale,
                        const float *k, const float *v, const kvq_cert_params *prm,
                        const kvq_cert_shape *sh, const kvq_policy *pol)
{
    kvq_cert_cache ch;
    int8_t *kc = malloc(kvq_cert_key_code_bytes(sh) + 1);
    uint8_t *vc = malloc(kvq_cert_value_code_bytes(sh) + 1);
    float *sigma = malloc(kvq_cert_key_meta_count(sh) * sizeof(float) + 1);
    float *z = malloc(kvq_cert_key_meta_count(sh) * sizeof(float) + 1);
    float *vs = malloc(kvq_cert_value_groups(sh) * sizeof(float) + 1);
    float *vz = malloc(kvq_cert_value_groups(sh) * sizeof(float) + 1);
    float *eta = malloc(kvq_cert_blocks(sh) * sizeof(float) + 1);
    float *nu = malloc(kvq_cert_blocks(sh) * sizeof(float) + 1);
    uint32_t fl;
    kvq_status st = (kc && vc && sigma && z && vs && vz && eta && nu) ? KVQ_OK : KVQ_E_NOMEM;
    if (st == KVQ_OK) st = kvq_cert_quantize_keys(kc, sigma, z, &fl, k, sh, pol);
    if (st == KVQ_OK) st = kvq_cert_quantize_values(vc, vs, vz, &fl, v, sh, pol);
    if (st == KVQ_OK) st = kvq_cert_annotate(eta, nu, v, vc, vs, vz, sh);
    if (st == KVQ_OK) {
        ch.k = k, ch.v = v, ch.kcodes = kc, ch.sigma = sigma, ch.z = z;
        ch.vcodes = vc, ch.vscale = vs, ch.vzero = vz, ch.eta = eta, ch.nu = nu;
        st = kvq_cert_step(out, sel, prom, NULL, rec, decl, delta1, q, scale, &ch, prm, sh);
    }
    if (st == KVQ_OK) rec->ekey *= 0.5f; /* the defect (exact: a power-of-two scaling) */
    free(kc), free(vc), free(sigma), free(z), free(vs), free(vz), free(eta), free(nu);
    return st;
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
