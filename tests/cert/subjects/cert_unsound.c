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

#include "subject_cert.h"

/* The step of ref-fast, then the defect. */
static int unsound_step(float *out, uint8_t *sel, uint8_t *prom, kvq_cert_record *rec,
                        kvq_cert_decl *decl, float *delta1, const float *q, float scale,
                        const float *k, const float *v, const kvq_cert_params *prm,
                        const kvq_cert_shape *sh, const kvq_policy *pol)
{
    int st = fast_step(out, sel, prom, rec, decl, delta1, q, scale, k, v, prm, sh, pol);
    if (st == KVQ_OK) rec->ekey *= 0.5f; /* the defect (exact: a power-of-two scaling) */
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
