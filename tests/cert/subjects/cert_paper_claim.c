/*
 * cert_paper_claim.c -- a faithful implementation of the paper's algorithm
 * with the paper's certificate: on a paper case [CERT-VAR-01] it runs the
 * paper step and claims E_key in the paper's own form, Eq. 15,
 * 2 Vmax e^{2 Delta} alpha^ (e^{2 Delta} - 1) (the record's ekey_paper,
 * [CERT-EK-02]), with kvq's corrected Delta (sigma/2 + gamma, [CERT-DLT-01])
 * and its E_arith.  That form is at least the paper variant's sound E_key
 * [CERT-EK-04] (spec/bounds/cert.md), so kvq verify must PASS it.  Sparse
 * cases run as ref-fast does (the paper's form is not a bound of that
 * algorithm, [CERT-EK-02]).
 */
#include <string.h>

#include "subject_cert.h"

static int step(float *out, uint8_t *sel, uint8_t *prom, kvq_cert_record *rec, kvq_cert_decl *decl,
                float *delta1, const float *q, float scale, const float *k, const float *v,
                const kvq_cert_params *prm, const kvq_cert_shape *sh, const kvq_policy *pol)
{
    int st = fast_step(out, sel, prom, rec, decl, delta1, q, scale, k, v, prm, sh, pol);
    if (st == KVQ_OK && prm->variant == KVQ_CERT_VARIANT_PAPER && rec->rung <= 2u) {
        rec->ekey = rec->ekey_paper;             /* the paper's Eq. 15 term */
        rec->etotal = rec->ekey + rec->eval + rec->earith;
    }
    return st;
}

SUBJECT_CERT_V3_LOOKUP(lookup, step)

static const kvq_subject_v3 subject = { KVQ_SUBJECT_ABI_V3, "cert-paper-claim", NULL, NULL,
                                        lookup };

__attribute__((visibility("default"))) const kvq_subject_v3 *kvq_subject_abi3(void)
{
    return &subject;
}
