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
#include <string.h>

#include "subject_cert.h"

/* The step of ref-fast, with the default scale. */
static int step(float *out, uint8_t *sel, uint8_t *prom, kvq_cert_record *rec, kvq_cert_decl *decl,
                float *delta1, const float *q, float scale, const float *k, const float *v,
                const kvq_cert_params *prm, const kvq_cert_shape *sh, const kvq_policy *pol)
{
    /* the defect: the scale argument is checked like any input, then ignored */
    if (sh != NULL && isfinite(scale) && scale >= 0x1p-126f && kvq_cert_shape_ok(sh))
        scale = (float)(1.0 / sqrt((double)sh->dim));
    return fast_step(out, sel, prom, rec, decl, delta1, q, scale, k, v, prm, sh, pol);
}

static kvq_entry_fn lookup(const char *entry, uint32_t sigver)
{
    if (sigver != 1u) return NULL;
    if (strcmp(entry, "cert_quantize_keys") == 0) return (kvq_entry_fn)fast_keys;
    if (strcmp(entry, "cert_quantize_values") == 0) return (kvq_entry_fn)fast_values;
    if (strcmp(entry, "cert_annotate") == 0) return (kvq_entry_fn)fast_annotate;
    if (strcmp(entry, "cert_step") == 0) return (kvq_entry_fn)step;
    return NULL;
}

static const kvq_subject_v3 subject = { KVQ_SUBJECT_ABI_V3, "cert-ignores-scale", NULL, NULL, lookup };

__attribute__((visibility("default"))) const kvq_subject_v3 *kvq_subject_abi3(void)
{
    return &subject;
}
