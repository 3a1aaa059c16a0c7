/*
 * kvq_exact_pkv.h -- PKV (spec/pkv.md), exact path (GNU MPFR).
 *
 * k-means is not unique, so the exact path judges properties: every
 * assignment is optimal for the returned set (exact distances, near-ties
 * accepted), and a set reported converged is a Lloyd fixed point within the
 * stopping rule.  Given a pattern set and the stored indices, every later stage
 * is exact: residuals, KIVI codes and metadata, Chebyshev centres, the
 * dequantized values.  The V threshold rho*(d, alpha) is a certified bracket.
 */
#ifndef KVQ_EXACT_PKV_H
#define KVQ_EXACT_PKV_H

#include <mpfr.h>

#include "kvq_exact.h"
#include "kvq_pkv.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Precision (bits) of the certified threshold brackets [PKV-V-02]. */
#define KVQ_PKV_XPREC_RHO 256

/* The verdict on one assignment [PKV-A-04]. */
typedef struct kvq_exact_pkv_assign_out {
    uint32_t pinned;    /* index the pinned binary32 sequence gives (exact level) */
    uint32_t real;      /* lowest index of least exact distance (bounded level) */
    int ambiguous;      /* another index lies within the float radius of the least */
    int accepted;       /* the candidate is real, or within the radius of real */
} kvq_exact_pkv_assign_out;

/* Judge `cand` as the assignment of x among npat patterns under `dist`
 * (KVQ_PKV_DIST_*) [PKV-A-01..04] [PKV-KM-02].  Inputs as the fast path's
 * (finite, within the domain; the caller checks). */
void kvq_exact_pkv_assign(kvq_exact_pkv_assign_out *out, const float *x, const float *bank,
                          uint32_t npat, uint32_t d, uint32_t dist, uint32_t cand);

/* [lo, hi] containing z_{1-alpha}, the standard normal quantile, by certified
 * bisection on erfc with outward rounding at KVQ_PKV_XPREC_RHO bits [PKV-V-02].
 * lo and hi must be initialised (any precision is raised). */
kvq_status kvq_exact_pkv_z_bracket(mpfr_t lo, mpfr_t hi, uint32_t alpha);

/* [lo, hi] containing rho*(d, alpha) (closed form, outward rounding) [PKV-V-02]. */
kvq_status kvq_exact_pkv_rho_bracket(mpfr_t lo, mpfr_t hi, uint32_t dim, uint32_t alpha);

/* The same from a given z bracket [zl, zh] (kvq_exact_pkv_z_bracket), so
 * that a caller bracketing many d computes z once. */
kvq_status kvq_exact_pkv_rho_bracket_z(mpfr_t lo, mpfr_t hi, uint32_t dim, const mpfr_t zl,
                                       const mpfr_t zh);

/* 1 iff the implicit equation certifies [lo, hi]: F(lo) >= 0 >= F(hi) for
 * F(rho) = 1 - rho^2 - c sqrt(1 + rho^4) over the whole c bracket, evaluated
 * with outward rounding at twice the bracket's precision [PKV-V-02]. */
int kvq_exact_pkv_rho_certify(const mpfr_t lo, const mpfr_t hi, uint32_t dim, uint32_t alpha);

/* The exact V decision [PKV-V-04] against the certified bracket [lo, hi] of
 * rho*(d, alpha) (kvq_exact_pkv_rho_bracket): returns 1 (use the pattern) or 0
 * (store raw); *ambiguous is 1 when the exact ratio lies in the band where a
 * conforming binary32 evaluation may decide either way (the result is then
 * the decision of the bracket's midpoint). */
int kvq_exact_pkv_v_decide(int *ambiguous, const float *v, const float *m, uint32_t d,
                           const mpfr_t lo, const mpfr_t hi);

/* RN32((min + max) / 2) per dimension, from the exact midpoint [PKV-U-02]. */
kvq_status kvq_exact_pkv_chebyshev(float *centre, const float *x, uint32_t tokens, uint32_t dim);

/* The Lloyd property check of a returned pattern set [PKV-KM-06]. */
typedef struct kvq_exact_pkv_lloyd_out {
    uint64_t bad_assign;   /* tokens whose cluster is not optimal for the set */
    uint64_t ambiguous;    /* tokens at an Euclidean near-tie */
    uint64_t bad_move;     /* (converged only) centroid coordinates past the bound */
    double worst;          /* largest |mu - c| / bound over the coordinates, rounded up */
} kvq_exact_pkv_lloyd_out;

kvq_status kvq_exact_pkv_lloyd_check(kvq_exact_pkv_lloyd_out *out, const float *x,
                                     uint32_t tokens, uint32_t dim, const float *C, uint32_t M,
                                     const uint32_t *cluster, uint32_t converged);

/* Exact quantization of a block given its stored indices [PKV-Q-04]:
 * resid [T][d] = RN32(x - m) (x for a raw token), the exact KIVI path on it,
 * and deq [T][d] = RN32(kivi.deq + m) (kivi.deq for a raw token).  kivi's
 * arrays sized for kvq_pkv_kivi_shape.  Errors as kvq_pkv_quantize, plus
 * KVQ_E_PARAM for an index at or past npat (KVQ_PKV_NO_PATTERN allowed for
 * values only). */
typedef struct kvq_exact_pkv_out {
    kvq_exact_kivi_out kivi;
    float *resid;
    float *deq;
} kvq_exact_pkv_out;

kvq_status kvq_exact_pkv_quantize(kvq_exact_pkv_out *out, const float *x, const uint16_t *index,
                                  uint32_t kind, uint32_t tokens, uint32_t dim,
                                  const float *bank, uint32_t npat, const kvq_pkv_params *p,
                                  const kvq_policy *pol);

/* The per-element bound of spec/bounds/pkv.md [PKV-B-01] (binary32 metadata):
 * |x - y| <= w/(2 cmax) (1 + 2^-16) + 2^-20 K + 2^-121 for every element, w the
 * exact range of its group's exact residuals, K = |x| + |m| + |max r| + |min r|.
 * *viol receives the number of elements past it, *worst the largest
 * |x - y| / bound rounded up.  KVQ_E_PARAM under binary16 metadata. */
kvq_status kvq_exact_pkv_err_check(uint64_t *viol, double *worst, const float *x, const float *y,
                                   const uint16_t *index, uint32_t kind, uint32_t tokens,
                                   uint32_t dim, const float *bank, uint32_t npat,
                                   const kvq_pkv_params *p);

#ifdef __cplusplus
}
#endif

#endif /* KVQ_EXACT_PKV_H */
