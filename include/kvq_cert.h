/*
 * kvq_cert.h -- the CERT decode step, fast path (spec/cert.md): Phase-1
 * scoring, the selector, Phase 2, the certificate.  Included by kvq.h; the
 * CERT quantizers and annotations are declared there.
 */
#ifndef KVQ_CERT_H
#define KVQ_CERT_H

#include <math.h>

#include "kvq.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------
 * CERT decode step, fast path (spec/cert.md): Phase-1 scoring from the pinned
 * key reconstructions, block log-masses, the reference selector, Phase-2
 * attention with INT4 values and binary32 online softmax, and the certificate.
 * This layer runs rung 0 only, with no value promotion; the ranking, boundary
 * and value checks and the ladder are not evaluated (record bits 0-2 are 0).
 * ------------------------------------------------------------------------- */

/* The quantized cache of one head and its binary16 originals (tier 2).  All
 * arrays sized as the quantizer calls above write them.  k, v are [n][d]: the
 * residual block is read from them, and Delta's extremes from k [CERT-K8-04]. */
typedef struct kvq_cert_cache {
    const float *k, *v;                  /* originals, binary16 values [CERT-L-01] */
    const int8_t *kcodes;                /* kvq_cert_quantize_keys */
    const float *sigma, *z;
    const uint8_t *vcodes;               /* kvq_cert_quantize_values */
    const float *vscale, *vzero;
    const float *eta, *nu;               /* kvq_cert_annotate (nb entries) */
} kvq_cert_cache;

/* Step parameters [CERT-SEL-03] [CERT-DUMP-03]: the selector, promotion, the
 * checks and the ladder.  Fill with kvq_cert_default_params() and override. */
typedef struct kvq_cert_params {
    float tau;                           /* 0 < tau <= 1 */
    uint32_t kmin, kmax;                 /* 1 <= kmin <= kmax */
    float vtol;                          /* >= 0 [CERT-PROM-01] [CERT-LAD-02] */
    float eps_guard;                     /* >= 0 [CERT-RANK-01] [CERT-BND-01] */
    float eps_dense;                     /* >= 0, may be +inf [CERT-LAD-02] */
    uint32_t r;                          /* >= 1 [CERT-RANK-01] */
    uint32_t promote_budget;             /* KVQ_CERT_PROMOTE_THRESHOLD or P [CERT-PROM-02] */
    uint32_t start_rung;                 /* 0..4: the ladder starts here [CERT-LAD-01] */
} kvq_cert_params;

#define KVQ_CERT_PROMOTE_THRESHOLD 0xffffffffu /* promote_budget: the threshold rule */

#define KVQ_CERT_TAU_DEFAULT  0x1.fd70a4p-1f /* RN32(0.995) [CERT-SEL-03] */
#define KVQ_CERT_KMIN_DEFAULT 2u
#define KVQ_CERT_KMAX_DEFAULT 128u
#define KVQ_CERT_VTOL_DEFAULT 0x1.99999ap-5f /* RN32(0.05) */

/* The paper's defaults [CERT-SEL-03]: tau 0.995, Kmin 2, Kmax 128, v_tol 0.05,
 * r 1, eps_guard 0, eps_dense +inf, the threshold rule, start at rung 0. */
static inline kvq_cert_params kvq_cert_default_params(void)
{
    kvq_cert_params p;
    p.tau = KVQ_CERT_TAU_DEFAULT;
    p.kmin = KVQ_CERT_KMIN_DEFAULT;
    p.kmax = KVQ_CERT_KMAX_DEFAULT;
    p.vtol = KVQ_CERT_VTOL_DEFAULT;
    p.eps_guard = 0.0f;
    p.eps_dense = (float)INFINITY;
    p.r = 1u;
    p.promote_budget = KVQ_CERT_PROMOTE_THRESHOLD;
    p.start_rung = 0u;
    return p;
}

/* A kernel's arithmetic declaration [CERT-AR-01]: U_exp, D, Nr. */
typedef struct kvq_cert_decl {
    float u_exp;                         /* exp error in ulps, 0 <= u_exp 2^-23 < 1 */
    uint32_t acc_depth;                  /* D >= 1, D 2^-24 < 1/2 */
    uint32_t rescales;                   /* Nr */
} kvq_cert_decl;

/* The declaration of the pinned dense sequence over nS tokens [CERT-AR-02]:
 * U_exp = 1 (glibc expf), Nr = nS - 1, D = 2 nS + 1. */
static inline kvq_cert_decl kvq_cert_pinned_decl(uint32_t ns)
{
    kvq_cert_decl d;
    d.u_exp = 1.0f;
    d.acc_depth = 2u * ns + 1u;
    d.rescales = ns > 0u ? ns - 1u : 0u;
    return d;
}

/* The certificate record [CERT-REC-01], frozen field order. */
typedef struct kvq_cert_record {
    uint32_t version, rung, n, d, k_sel, n_prom, checks;
    float delta, alpha_hat, vmax, ekey, ekey_paper, eval, earith, etotal;
} kvq_cert_record;

#define KVQ_CERT_CHECK_RANK     0x1u     /* [CERT-REC-01] checks bits */
#define KVQ_CERT_CHECK_BOUNDARY 0x2u
#define KVQ_CERT_CHECK_VALUE    0x4u
#define KVQ_CERT_CHECK_COVERAGE 0x8u

/* One decode step of one head at rung 0 (floating-point scoring, no promotion).
 *   Phase 1: s~_i = RN32(scale * dot_i), dot_i the recursive binary32 sum of
 *     RN32(q_c k^_{i,c}) (k^ = fmaf(code, sigma, z) [CERT-K8-03]; originals in
 *     the residual block); w_i = expf(RN32(s~_i - m)), m = max s~; block sums
 *     W~_b in token order; logmass[b] = RN32(m + logf(W~_b)) [CERT-LM-02].
 *   Selector [CERT-SEL-01]: full blocks by W~_b descending, ties to the lower
 *     index; K* the least k with RN32(C~_k / total) >= tau, clamped to
 *     [min(kmin, nq), min(kmax, nq)]; sel[b] = 1 for the selected blocks and
 *     the residual block, else 0 (nb entries).
 *   Phase 2: the pinned online softmax of [CERT-AR-02] over the selected
 *     tokens in index order, with the Phase-1 scores and v^ = fmaf(code, s,
 *     zv) [CERT-V4-02] (originals in the residual block); out: d binary32.
 *   Certificate (rec): Delta by kvq_cert_delta; E_key [CERT-EK-01] with an
 *     upper bound of alpha^_T derived from the binary32 block sums; E_val
 *     [CERT-EV-01] with upper bounds of the Phase-2 masses; E_arith
 *     [CERT-AR-01] for kvq_cert_pinned_decl(nS).  Every bound is evaluated in
 *     binary64 with each operation moved one step outward (nextafter), each
 *     libm function two steps, and converted to binary32 upward: an upper
 *     bound of the exact path's sound value.
 * Errors: KVQ_E_PARAM (NULL, params, scale), KVQ_E_SHAPE, KVQ_E_NONFINITE /
 * KVQ_E_PARAM (q, k, v not binary16; bad metadata), KVQ_E_NOMEM. */
kvq_status kvq_cert_step(float *out, uint8_t *sel, uint8_t *prom, float *logmass,
                         kvq_cert_record *rec, kvq_cert_decl *decl, float *delta1,
                         const float *q, float scale, const kvq_cert_cache *cache,
                         const kvq_cert_params *prm, const kvq_cert_shape *shape);


#ifdef __cplusplus
}
#endif
#endif /* KVQ_CERT_H */
