/*
 * subject_pkv.h -- the PKV entries of the fast path as the test subjects use
 * them (tests/pkv/subjects/): each entry validates through the fast path
 * (statuses and "nothing written on error" are the fast path's) and then
 * redoes the stage that carries the subject's one defect, with a hook for it,
 * and a version-3 record [API-SUBJ-05] answering every PKV entry of signature
 * version 1.
 *
 * A subject defines SUBJECT_NAME and any of
 *   PKV_NEAREST(x, bank, npat, d, dist)  the pattern index a vector is matched to
 *   PKV_THRESHOLD(dim, alpha)            the binary32 V threshold t
 *   PKV_RESID_PATTERN(j, npat)           the pattern the residual of index j is taken against
 *   PKV_CENTRE(centre, x, n, d)          the bank's new pattern from n vectors
 * before including this file; the others default to the fast path's
 * behaviour.
 */
#ifndef KVQ_SUBJECT_PKV_H
#define KVQ_SUBJECT_PKV_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kvq_subject.h"

__attribute__((unused)) static float pkv_fast_threshold(uint32_t dim, uint32_t alpha)
{
    float t = 0.0f;
    (void)kvq_pkv_rho_star(&t, dim, alpha);
    return t;
}

__attribute__((unused)) static void pkv_fast_centre(float *centre, const float *x, uint32_t n, uint32_t d)
{
    (void)kvq_pkv_chebyshev(centre, x, n, d);
}

#ifndef PKV_NEAREST
#define PKV_NEAREST(x, bank, npat, d, dist) kvq_pkv_nearest(x, bank, npat, d, dist)
#endif
#ifndef PKV_THRESHOLD
#define PKV_THRESHOLD(dim, alpha) pkv_fast_threshold(dim, alpha)
#endif
#ifndef PKV_RESID_PATTERN
#define PKV_RESID_PATTERN(j, npat) (j)
#endif
#ifndef PKV_CENTRE
#define PKV_CENTRE(centre, x, n, d) pkv_fast_centre(centre, x, n, d)
#endif

/* Indices, residuals and KIVI stage of a block the fast path accepted. */
static int pkv_redo(uint8_t *codes, float *scale, float *zero, uint16_t *index, float *resid, uint32_t *flags,
                    const float *x, uint32_t kind, uint32_t tokens, uint32_t dim, const float *bank, uint32_t npat,
                    const kvq_pkv_params *p, const kvq_policy *pol)
{
    kvq_kivi_shape ks = kvq_pkv_kivi_shape(p, kind, tokens, dim);
    uint32_t dist = kind == KVQ_PKV_KEY_PREFILL ? p->key_dist : KVQ_PKV_DIST_MINMAX, f = 0;
    int vthr = kind == KVQ_PKV_VALUE && p->v_threshold;
    float t = vthr ? PKV_THRESHOLD(dim, p->alpha) : 0.0f;
    (void)dist;
    for (uint32_t k = 0; k < tokens; k++) {
        const float *xt = x + (uint64_t)k * dim;
        uint32_t j = PKV_NEAREST(xt, bank, npat, dim, dist);
        int use = !vthr || kvq_pkv_v_use(NULL, xt, bank + (uint64_t)j * dim, dim, t);
        const float *m = bank + (uint64_t)PKV_RESID_PATTERN(j, npat) * dim;
        index[k] = use ? (uint16_t)j : (uint16_t)KVQ_PKV_NO_PATTERN;
        for (uint32_t i = 0; i < dim; i++) resid[(uint64_t)k * dim + i] = use ? xt[i] - m[i] : xt[i];
    }
    {
        int st = kvq_kivi_quantize(codes, scale, zero, &f, resid, &ks, pol);
        if (flags != NULL) *flags = f;
        return st;
    }
}

static int pkv_quantize(uint8_t *codes, float *scale, float *zero, uint16_t *index, float *resid, uint32_t *flags,
                        const float *x, uint32_t kind, uint32_t tokens, uint32_t dim, const float *bank,
                        uint32_t npat, const kvq_pkv_params *p, const kvq_policy *pol)
{
    int st = kvq_pkv_quantize(codes, scale, zero, index, resid, flags, x, kind, tokens, dim, bank, npat, p, pol);
    if (st != KVQ_OK) return st;
    return pkv_redo(codes, scale, zero, index, resid, flags, x, kind, tokens, dim, bank, npat, p, pol);
}

static int pkv_dequantize(float *y, uint32_t *flags, const uint8_t *codes, const float *scale, const float *zero,
                          const uint16_t *index, uint32_t kind, uint32_t tokens, uint32_t dim, const float *bank,
                          uint32_t npat, const kvq_pkv_params *p, const kvq_policy *pol)
{
    return kvq_pkv_dequantize(y, flags, codes, scale, zero, index, kind, tokens, dim, bank, npat, p, pol);
}

static int pkv_kmeans(float *patterns, uint32_t *cluster, uint32_t *iters, uint32_t *converged, const float *x,
                      uint32_t tokens, uint32_t dim, const kvq_pkv_params *p)
{
    return kvq_pkv_kmeans(patterns, cluster, iters, converged, x, tokens, dim, p);
}

static int pkv_key_flush(uint8_t *codes, float *scale, float *zero, uint16_t *index, float *resid, uint32_t *flags,
                         float *bank, uint32_t *npat, uint32_t bank_cap, const float *window, uint32_t dim,
                         const kvq_pkv_params *p, const kvq_policy *pol)
{
    uint32_t np0 = npat != NULL ? *npat : 0u, nb;
    int st = kvq_pkv_key_flush(codes, scale, zero, index, resid, flags, bank, npat, bank_cap, window, dim, p, pol);
    if (st != KVQ_OK) return st;
    if (*npat > np0) PKV_CENTRE(bank + (uint64_t)np0 * dim, window, p->residual, dim);
    nb = *npat > np0 && p->update == KVQ_PKV_UPDATE_BEFORE ? np0 : *npat;
    return pkv_redo(codes, scale, zero, index, resid, flags, window, KVQ_PKV_KEY_DECODE, p->residual, dim, bank, nb,
                    p, pol);
}

static int pkv_value_step(uint8_t *codes, float *scale, float *zero, uint16_t *index, float *resid,
                          uint32_t *flags, uint32_t *count, float *bank, uint32_t *npat, uint32_t bank_cap,
                          const float *window, uint32_t held, uint64_t step, uint32_t dim,
                          const kvq_pkv_params *p, const kvq_policy *pol)
{
    uint32_t np0 = npat != NULL ? *npat : 0u, first;
    int st = kvq_pkv_value_step(codes, scale, zero, index, resid, flags, count, bank, npat, bank_cap, window, held,
                                step, dim, p, pol);
    if (st != KVQ_OK) return st;
    first = held > p->residual ? held - p->residual : 0u;
    if (*npat > np0) PKV_CENTRE(bank + (uint64_t)np0 * dim, window + (uint64_t)first * dim, held - first, dim);
    if (*count == 0u) return KVQ_OK;
    return pkv_redo(codes, scale, zero, index, resid, flags, window, KVQ_PKV_VALUE, 1u, dim, bank, *npat, p, pol);
}

static kvq_entry_fn pkv_lookup(const char *entry, uint32_t sigver)
{
    if (sigver != 1u) return NULL;
    if (strcmp(entry, "pkv_kmeans") == 0) return (kvq_entry_fn)pkv_kmeans;
    if (strcmp(entry, "pkv_quantize") == 0) return (kvq_entry_fn)pkv_quantize;
    if (strcmp(entry, "pkv_dequantize") == 0) return (kvq_entry_fn)pkv_dequantize;
    if (strcmp(entry, "pkv_key_flush") == 0) return (kvq_entry_fn)pkv_key_flush;
    if (strcmp(entry, "pkv_value_step") == 0) return (kvq_entry_fn)pkv_value_step;
    return NULL;
}

static const kvq_subject_v3 pkv_subject = { KVQ_SUBJECT_ABI_V3, SUBJECT_NAME, NULL, NULL, pkv_lookup };

__attribute__((visibility("default"))) const kvq_subject_v3 *kvq_subject_abi3(void)
{
    return &pkv_subject;
}

#endif
