/*
 * cert_paper_as_sparse.c -- a WRONG subject: it runs the paper step (Phase 2
 * over every block, the selected ones with their binary16 keys) on every case,
 * the sparse cases included, and reports the paper step's certificate.  Its
 * output is closer to exact attention than the sparse step's, but on a sparse
 * case [CERT-VAR-02] its E_key claim, the paper variant's [CERT-EK-04], is
 * below the sparse variant's sound E_key [CERT-EK-01], so kvq verify must
 * FAIL it on the claims check [CERT-CON-02].  Its paper cases pass.
 */
#include <string.h>

#include "subject_cert.h"

static int step(float *out, uint8_t *sel, uint8_t *prom, kvq_cert_record *rec, kvq_cert_decl *decl,
                float *delta1, const float *q, float scale, const float *k, const float *v,
                const kvq_cert_params *prm, const kvq_cert_shape *sh, const kvq_policy *pol)
{
    return fast_step_as(KVQ_CERT_VARIANT_PAPER, out, sel, prom, rec, decl, delta1, q, scale, k, v,
                        prm, sh, pol);
}

SUBJECT_CERT_V3_LOOKUP(lookup, step)

static const kvq_subject_v3 subject = { KVQ_SUBJECT_ABI_V3, "cert-paper-as-sparse", NULL, NULL,
                                        lookup };

__attribute__((visibility("default"))) const kvq_subject_v3 *kvq_subject_abi3(void)
{
    return &subject;
}
