/*
 * cert_sparse_as_paper.c -- a WRONG subject: it runs the sparse step (Phase 2
 * over the selected blocks only, with their INT8 keys) on every case, the
 * paper cases included, and reports the sparse step's own certificate.  On a
 * paper case [CERT-VAR-02] the exact judge applies the paper variant's bounds
 * ([CERT-EK-04], [CERT-EV-01] over all tokens): the dropped tail and the INT8
 * keys of the selected blocks put the output outside them, or the sparse
 * E_val claim falls below the paper's sound value, so kvq verify must FAIL
 * it.  Its sparse cases pass.
 */
#include <string.h>

#include "subject_cert.h"

static int step(float *out, uint8_t *sel, uint8_t *prom, kvq_cert_record *rec, kvq_cert_decl *decl,
                float *delta1, const float *q, float scale, const float *k, const float *v,
                const kvq_cert_params *prm, const kvq_cert_shape *sh, const kvq_policy *pol)
{
    return fast_step_as(KVQ_CERT_VARIANT_SPARSE, out, sel, prom, rec, decl, delta1, q, scale, k, v,
                        prm, sh, pol);
}

SUBJECT_CERT_V3_LOOKUP(lookup, step)

static const kvq_subject_v3 subject = { KVQ_SUBJECT_ABI_V3, "cert-sparse-as-paper", NULL, NULL,
                                        lookup };

__attribute__((visibility("default"))) const kvq_subject_v3 *kvq_subject_abi3(void)
{
    return &subject;
}
