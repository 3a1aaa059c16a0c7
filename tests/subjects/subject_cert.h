/*
 * subject_cert.h -- the CERT entries of the fast path as the test subjects
 * use them (tests/cert/subjects/): the quantizers and the annotation as
 * entries (an entry returns int, the fast path kvq_status), and one decode
 * step from K and V as ref-fast runs it -- quantize both with the fast path,
 * annotate, kvq_cert_step -- for subjects whose defect sits before or after
 * it.  static inline: each subject takes what it uses.
 */
#ifndef KVQ_SUBJECT_CERT_H
#define KVQ_SUBJECT_CERT_H

#include <stdlib.h>

#include "kvq_subject.h"

static inline int fast_keys(int8_t *codes, float *sigma, float *z, uint32_t *flags, const float *k,
                     const kvq_cert_shape *shape, const kvq_policy *pol)
{
    return kvq_cert_quantize_keys(codes, sigma, z, flags, k, shape, pol);
}

static inline int fast_values(uint8_t *codes, float *scale, float *zero, uint32_t *flags, const float *v,
                       const kvq_cert_shape *shape, const kvq_policy *pol)
{
    return kvq_cert_quantize_values(codes, scale, zero, flags, v, shape, pol);
}

static inline int fast_annotate(float *eta, float *nu, const float *v, const uint8_t *codes,
                         const float *scale, const float *zero, const kvq_cert_shape *shape)
{
    return kvq_cert_annotate(eta, nu, v, codes, scale, zero, shape);
}

/* One step as ref-fast runs it (conformance/families/cert.c). */
static inline int fast_step(float *out, uint8_t *sel, uint8_t *prom, kvq_cert_record *rec,
                     kvq_cert_decl *decl, float *delta1, const float *q, float scale,
                     const float *k, const float *v, const kvq_cert_params *prm,
                     const kvq_cert_shape *sh, const kvq_policy *pol)
{
    kvq_cert_cache ch;
    int8_t *kc;
    uint8_t *vc;
    float *sigma, *z, *vs, *vz, *eta, *nu;
    uint32_t fl;
    kvq_status st;
    if (sh == NULL || pol == NULL) return KVQ_E_PARAM;
    /* sizes from the shape as given; an invalid shape is rejected by the first
     * quantizer call before anything is read or written */
    kc = malloc(kvq_cert_key_code_bytes(sh) + 1);
    sigma = malloc(kvq_cert_key_meta_count(sh) * sizeof *sigma + 1);
    z = malloc(kvq_cert_key_meta_count(sh) * sizeof *z + 1);
    vc = malloc(kvq_cert_value_code_bytes(sh) + 1);
    vs = malloc(kvq_cert_value_groups(sh) * sizeof *vs + 1);
    vz = malloc(kvq_cert_value_groups(sh) * sizeof *vz + 1);
    eta = malloc(kvq_cert_blocks(sh) * sizeof *eta + 1);
    nu = malloc(kvq_cert_blocks(sh) * sizeof *nu + 1);
    st = (kc && sigma && z && vc && vs && vz && eta && nu) ? KVQ_OK : KVQ_E_NOMEM;
    if (st == KVQ_OK) st = kvq_cert_quantize_keys(kc, sigma, z, &fl, k, sh, pol);
    if (st == KVQ_OK) st = kvq_cert_quantize_values(vc, vs, vz, &fl, v, sh, pol);
    if (st == KVQ_OK) st = kvq_cert_annotate(eta, nu, v, vc, vs, vz, sh);
    if (st == KVQ_OK) {
        ch.k = k, ch.v = v, ch.kcodes = kc, ch.sigma = sigma, ch.z = z;
        ch.vcodes = vc, ch.vscale = vs, ch.vzero = vz, ch.eta = eta, ch.nu = nu;
        st = kvq_cert_step(out, sel, prom, NULL, rec, decl, delta1, q, scale, &ch, prm, sh);
    }
    free(kc), free(sigma), free(z), free(vc), free(vs), free(vz), free(eta), free(nu);
    return st;
}

#endif /* KVQ_SUBJECT_CERT_H */
