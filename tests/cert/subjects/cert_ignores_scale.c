/*
 * cert_ignores_scale.c -- a WRONG version-3 subject: the fast path's CERT
 * quantizers, annotations and decode step, except that the step runs with the
 * default softmax scale RN32(1/sqrt(d)) whatever scale it is passed.  The
 * scale is an input of the step and every reference quantity uses the given
 * binary32 value [CERT-L-01]: a kernel that hard-codes 1/sqrt(d) computes
 * other attention (and other bounds), so kvq verify must FAIL its cert-step
 * cases whose scale is not the default (the ladder classes of [VEC-CERT-07]
 * draw scales 2^-6 .. 2^-1 and 2 .. 4 times it) and PASS every other case
 * (cert-keys, cert-values, and the steps at the default scale).  KIVI entries
 * are absent: KIVI cases are SKIPPED.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kvq_subject.h"

static int keys(int8_t *codes, float *sigma, float *z, uint32_t *flags, const float *k,
                const kvq_cert_shape *shape, const kvq_policy *pol)
{
    return kvq_cert_quantize_keys(codes, sigma, z, flags, k, shape, pol);
}

static int values(uint8_t *codes, float *scale, float *zero, uint32_t *flags, const float *v,
                  const kvq_cert_shape *shape, const kvq_policy *pol)
{
    return kvq_cert_quantize_values(codes, scale, zero, flags, v, shape, pol);
}

static int annotate(float *eta, float *nu, const float *v, const uint8_t *codes, const float *scale,
                    const float *zero, const kvq_cert_shape *shape)
{
    return kvq_cert_annotate(eta, nu, v, codes, scale, zero, shape);
}

/* As ref-fast's step (conformance/families/cert.c): quantize K and V with the
 * fast path, annotate, run kvq_cert_step -- with the default scale. */
static int step(float *out, uint8_t *sel, uint8_t *prom, kvq_cert_record *rec, kvq_cert_decl *decl,
                float *delta1, const float *q, float scale, const float *k, const float *v,
                const kvq_cert_params *prm, const kvq_cert_shape *sh, const kvq_policy *pol)
{
    kvq_cert_cache ch;
    int8_t *kc;
    uint8_t *vc;
    float *sigma, *z, *vs, *vz, *eta, *nu;
    uint32_t fl;
    kvq_status st;
    if (sh == NULL || pol == NULL) return KVQ_E_PARAM;
    /* the defect: the scale argument is checked like any input, then ignored */
    if (isfinite(scale) && scale >= 0x1p-126f && kvq_cert_shape_ok(sh))
        scale = (float)(1.0 / sqrt((double)sh->dim));
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

static kvq_entry_fn lookup(const char *entry, uint32_t sigver)
{
    if (sigver != 1u) return NULL;
    if (strcmp(entry, "cert_quantize_keys") == 0) return (kvq_entry_fn)keys;
    if (strcmp(entry, "cert_quantize_values") == 0) return (kvq_entry_fn)values;
    if (strcmp(entry, "cert_annotate") == 0) return (kvq_entry_fn)annotate;
    if (strcmp(entry, "cert_step") == 0) return (kvq_entry_fn)step;
    return NULL;
}

static const kvq_subject_v3 subject = { KVQ_SUBJECT_ABI_V3, "cert-ignores-scale", NULL, NULL, lookup };

__attribute__((visibility("default"))) const kvq_subject_v3 *kvq_subject_abi3(void)
{
    return &subject;
}
