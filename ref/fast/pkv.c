/*
 * pkv.c -- PKV (PatternKV), fast path (binary32).
 *
 * The pinned operation sequence of spec/pkv.md: Lloyd k-means, min-max
 * assignment, Chebyshev centres, the V threshold decision, and the residual
 * quantized and dequantized by the KIVI quantizer (kvq_kivi_quantize /
 * kvq_kivi_dequantize, called, not copied).  Every float operation is one
 * binary32 operation rounded to nearest even (-ffp-contract=off); the only
 * binary64 arithmetic is the threshold rho*(d, alpha) [PKV-V-02], judged
 * against the exact path's certified bracket.
 *
 * Inside the PKV domain |v| <= 2^48 [PKV-DOM-01] no operation below can
 * overflow: a difference is below 2^49, a square below 2^98, a sum of 2^24
 * squares below 2^122, a sum of 2^24 differences below 2^73.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kvq_pkv.h"

/* The extent of a [T][d] tensor accepted by every PKV call [PKV-ERR-01]. */
static int extent_ok(uint32_t tokens, uint32_t dim)
{
    return tokens >= 1u && dim >= 1u && tokens <= KVQ_MAX_DIM && dim <= KVQ_MAX_DIM &&
           (uint64_t)tokens * dim <= KVQ_MAX_ELEMS;
}

/* KVQ_E_NONFINITE if some v[e], e < n, is a NaN or an infinity. */
static kvq_status check_finite(const float *v, uint64_t n)
{
    for (uint64_t e = 0; e < n; e++)
        if (!isfinite(v[e])) return KVQ_E_NONFINITE;
    return KVQ_OK;
}

/* KVQ_E_RANGE if some v[e], e < n, lies outside the PKV domain [PKV-DOM-01]. */
static kvq_status check_domain(const float *v, uint64_t n)
{
    for (uint64_t e = 0; e < n; e++)
        if (fabsf(v[e]) > KVQ_PKV_MAX_ABS) return KVQ_E_RANGE;
    return KVQ_OK;
}

/* Finiteness of every tensor first, then the domain of every tensor. */
static kvq_status check_values2(const float *a, uint64_t na, const float *b, uint64_t nb)
{
    kvq_status st = check_finite(a, na);
    if (st == KVQ_OK) st = check_finite(b, nb);
    if (st == KVQ_OK) st = check_domain(a, na);
    if (st == KVQ_OK) st = check_domain(b, nb);
    return st;
}

float kvq_pkv_dist_minmax(const float *x, const float *m, uint32_t d)
{
    float hi = x[0] - m[0], lo = hi;     /* RN32; exact extremes of the rounded */
    for (uint32_t i = 1; i < d; i++) {   /* differences = rounded exact extremes */
        float t = x[i] - m[i];           /* RN32 [PKV-A-01] */
        if (t > hi) hi = t;
        if (t < lo) lo = t;
    }
    return hi - lo;                      /* RN32 [PKV-A-01] */
}

float kvq_pkv_dist_euclid(const float *x, const float *m, uint32_t d)
{
    float acc = 0.0f;
    for (uint32_t i = 0; i < d; i++) {
        float t = x[i] - m[i];           /* RN32 */
        acc = acc + t * t;               /* two roundings, no FMA [PKV-KM-02] */
    }
    return acc;
}

/*@ // C's < on two finite binary32 values is < on their real values (IEEE 754
    // 5.11; Why3's ieee_float lt_lt_finite).  Run pkv_lemmas.
    lemma kvq_pkv_lt_finite: \forall float a, b; \is_finite(a) && \is_finite(b) ==>
        (\lt_float(a, b) <==> (real)a < (real)b);
*/
uint32_t kvq_pkv_nearest(const float *x, const float *bank, uint32_t npat, uint32_t d,
                         uint32_t dist)
{
    uint32_t best = 0;
    float bd = dist == KVQ_PKV_DIST_EUCLID ? kvq_pkv_dist_euclid(x, bank, d)
                                           : kvq_pkv_dist_minmax(x, bank, d);
    /*@ loop invariant j_range: 1 <= j <= npat;
        loop invariant best_range: 0 <= best < j;
        loop invariant bd_mm: dist == KVQ_PKV_DIST_MINMAX ==>
            bd == kvq_pkv_dmm_l(x, bank + best * d, d);
        loop invariant least_mm: dist == KVQ_PKV_DIST_MINMAX ==> \forall integer k; 0 <= k < j ==>
            bd <= kvq_pkv_dmm_l(x, bank + k * d, d);
        loop invariant lowest_mm: dist == KVQ_PKV_DIST_MINMAX ==> \forall integer k; 0 <= k < best ==>
            kvq_pkv_dmm_l(x, bank + k * d, d) > bd;
        loop invariant bd_euc: dist == KVQ_PKV_DIST_EUCLID ==>
            bd == kvq_pkv_euc_l(x, bank + best * d, d);
        loop invariant least_euc: dist == KVQ_PKV_DIST_EUCLID ==> \forall integer k; 0 <= k < j ==>
            bd <= kvq_pkv_euc_l(x, bank + k * d, d);
        loop invariant lowest_euc: dist == KVQ_PKV_DIST_EUCLID ==> \forall integer k; 0 <= k < best ==>
            kvq_pkv_euc_l(x, bank + k * d, d) > bd;
        loop invariant bd_finite: \is_finite(bd) && bd >= 0;
        loop assigns j, best, bd;
        loop variant npat - j;
    */
    for (uint32_t j = 1; j < npat; j++) {
        const float *m = bank + kvq_pkv_pattern_offset(j, d);
        float dj = dist == KVQ_PKV_DIST_EUCLID ? kvq_pkv_dist_euclid(x, m, d)
                                               : kvq_pkv_dist_minmax(x, m, d);
        if (dj < bd) {                   /* strict: ties keep the lowest index [PKV-A-02] */
            /*@ assert lt_real: (real)dj < (real)bd; */
            bd = dj;
            best = j;
        } else {
            /*@ assert ge_real: (real)bd <= (real)dj; */
        }
    }
    return best;
}

kvq_status kvq_pkv_assign(uint16_t *index, const float *x, uint32_t tokens, uint32_t dim,
                          const float *bank, uint32_t npat, uint32_t dist)
{
    kvq_status st;
    if (index == NULL || x == NULL || bank == NULL || dist > KVQ_PKV_DIST_EUCLID)
        return KVQ_E_PARAM;
    if (!extent_ok(tokens, dim) || npat == 0u || npat > KVQ_PKV_MAX_PATTERNS) return KVQ_E_SHAPE;
    st = check_values2(x, (uint64_t)tokens * dim, bank, (uint64_t)npat * dim);
    if (st != KVQ_OK) return st;
    for (uint32_t t = 0; t < tokens; t++)
        index[t] = (uint16_t)kvq_pkv_nearest(x + (uint64_t)t * dim, bank, npat, dim, dist);
    return KVQ_OK;
}

/* ---- k-means [PKV-KM-01..07] ------------------------------------------- */

/* splitmix64, the generator of the random initialisation [PKV-KM-01]. */
static uint64_t pkv_splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Initial centroid token indices [PKV-KM-01]. */
static kvq_status init_tokens(uint32_t *src, uint32_t tokens, const kvq_pkv_params *p)
{
    uint32_t M = p->patterns;
    if (p->init == KVQ_PKV_INIT_SPREAD) {
        for (uint32_t j = 0; j < M; j++) src[j] = (uint32_t)((uint64_t)j * tokens / M);
        return KVQ_OK;
    }
    {
        uint32_t *perm = malloc((size_t)tokens * sizeof *perm);
        uint64_t s = p->seed;
        if (perm == NULL) return KVQ_E_NOMEM;
        for (uint32_t t = 0; t < tokens; t++) perm[t] = t;
        for (uint32_t j = 0; j < M; j++) { /* partial Fisher-Yates */
            uint32_t k = j + (uint32_t)(pkv_splitmix(&s) % (uint64_t)(tokens - j));
            uint32_t tmp = perm[j];
            perm[j] = perm[k];
            perm[k] = tmp;
            src[j] = perm[j];
        }
        free(perm);
    }
    return KVQ_OK;
}

/* Euclidean assignment of every token to the set C [PKV-KM-02]. */
static void assign_all(uint32_t *asg, const float *x, uint32_t tokens, uint32_t dim,
                       const float *C, uint32_t M)
{
    for (uint32_t t = 0; t < tokens; t++)
        asg[t] = kvq_pkv_nearest(x + (uint64_t)t * dim, C, M, dim, KVQ_PKV_DIST_EUCLID);
}

kvq_status kvq_pkv_kmeans(float *patterns, uint32_t *cluster, uint32_t *iters,
                          uint32_t *converged, const float *x, uint32_t tokens, uint32_t dim,
                          const kvq_pkv_params *p)
{
    uint32_t M, it, conv = 0, done = 0;
    uint64_t n, Md;
    float lo, hi, thr;
    float *C = NULL, *S = NULL;
    uint32_t *asg = NULL, *cnt = NULL, *src = NULL;
    kvq_status st;
    if (patterns == NULL || x == NULL || p == NULL || !kvq_pkv_params_ok(p)) return KVQ_E_PARAM;
    M = p->patterns;
    if (!extent_ok(tokens, dim) || tokens < M) return KVQ_E_SHAPE; /* [PKV-KM-01] */
    n = (uint64_t)tokens * dim;
    Md = (uint64_t)M * dim;
    st = check_finite(x, n);
    if (st == KVQ_OK) st = check_domain(x, n);
    if (st != KVQ_OK) return st;
    C = malloc(Md * sizeof *C);
    S = malloc(Md * sizeof *S);
    asg = malloc((size_t)tokens * sizeof *asg);
    cnt = malloc((size_t)M * sizeof *cnt);
    src = malloc((size_t)M * sizeof *src);
    if (C == NULL || S == NULL || asg == NULL || cnt == NULL || src == NULL) {
        st = KVQ_E_NOMEM;
        goto out;
    }
    st = init_tokens(src, tokens, p);
    if (st != KVQ_OK) goto out;
    for (uint32_t j = 0; j < M; j++)
        memcpy(C + (uint64_t)j * dim, x + (uint64_t)src[j] * dim, (size_t)dim * sizeof *C);
    /* Data range R32 = RN32(max - min) over all elements; the stop threshold
     * RN32(RN32(1e-4) * R32) [PKV-KM-05]. */
    lo = hi = x[0];
    for (uint64_t e = 1; e < n; e++) {
        if (x[e] < lo) lo = x[e];
        if (x[e] > hi) hi = x[e];
    }
    thr = KVQ_PKV_TOL * (hi - lo);
    for (it = 1; it <= p->max_iter; it++) {
        float move = 0.0f;
        assign_all(asg, x, tokens, dim, C, M);
        /* S[j][i] = sum over members t of cluster j, ascending, of RN32(x - c) [PKV-KM-03] */
        memset(S, 0, Md * sizeof *S);
        memset(cnt, 0, (size_t)M * sizeof *cnt);
        for (uint32_t t = 0; t < tokens; t++) {
            const float *xt = x + (uint64_t)t * dim;
            float *sj = S + (uint64_t)asg[t] * dim;
            const float *cj = C + (uint64_t)asg[t] * dim;
            for (uint32_t i = 0; i < dim; i++) sj[i] = sj[i] + (xt[i] - cj[i]); /* RN32 twice */
            cnt[asg[t]]++;
        }
        /* c' = RN32(c + RN32(S / n)); an empty cluster keeps c [PKV-KM-04] */
        for (uint32_t j = 0; j < M; j++) {
            float *sj = S + (uint64_t)j * dim;
            const float *cj = C + (uint64_t)j * dim;
            float nj = (float)cnt[j];    /* exact: cnt <= 2^24 */
            for (uint32_t i = 0; i < dim; i++) {
                float c2 = cnt[j] == 0u ? cj[i] : cj[i] + sj[i] / nj;
                float mv = fabsf(c2 - cj[i]); /* RN32 [PKV-KM-05] */
                if (mv > move) move = mv;
                sj[i] = c2;              /* S now holds the next set */
            }
        }
        if (move <= thr) {               /* C is a fixed point within the rule: return C */
            conv = 1;
            done = 1;
            break;
        }
        memcpy(C, S, Md * sizeof *C);
    }
    if (!done) {                         /* out of iterations: the last set, reassigned */
        it = p->max_iter;
        assign_all(asg, x, tokens, dim, C, M);
    }
    memcpy(patterns, C, Md * sizeof *C);
    if (cluster != NULL) memcpy(cluster, asg, (size_t)tokens * sizeof *asg);
    if (iters != NULL) *iters = it;
    if (converged != NULL) *converged = conv;
out:
    free(C);
    free(S);
    free(asg);
    free(cnt);
    free(src);
    return st;
}

/* ---- Chebyshev centres and the bank [PKV-U-01..04] ------------------- */

/* Centre of one dimension: RN32((mn + mx) / 2).  In the domain the sum does
 * not overflow; RN32(mn + mx) * 0.5 is exact when RN32(mn + mx) >= 2^-125,
 * and below 2^-125 the sum itself is exact, so the one rounding is of the
 * exact midpoint [PKV-U-02]. */
static void centre_of(float *centre, const float *x, uint32_t tokens, uint32_t dim)
{
    for (uint32_t c = 0; c < dim; c++) {
        float mn = x[c], mx = x[c];
        for (uint32_t t = 1; t < tokens; t++) {
            float v = x[(uint64_t)t * dim + c];
            if (v < mn) mn = v;
            if (v > mx) mx = v;
        }
        centre[c] = (mn + mx) * 0.5f;
    }
}

kvq_status kvq_pkv_chebyshev(float *centre, const float *x, uint32_t tokens, uint32_t dim)
{
    kvq_status st;
    if (centre == NULL || x == NULL) return KVQ_E_PARAM;
    if (!extent_ok(tokens, dim)) return KVQ_E_SHAPE;
    st = check_finite(x, (uint64_t)tokens * dim);
    if (st == KVQ_OK) st = check_domain(x, (uint64_t)tokens * dim);
    if (st != KVQ_OK) return st;
    centre_of(centre, x, tokens, dim);
    return KVQ_OK;
}

kvq_status kvq_pkv_bank_update(float *bank, uint32_t *npat, uint32_t *appended,
                               uint32_t bank_cap, const float *window, uint32_t n, uint32_t dim,
                               const kvq_pkv_params *p)
{
    kvq_status st;
    if (bank == NULL || npat == NULL || window == NULL || p == NULL || !kvq_pkv_params_ok(p) ||
        *npat > bank_cap)
        return KVQ_E_PARAM;
    if (!extent_ok(n, dim)) return KVQ_E_SHAPE;
    st = check_finite(window, (uint64_t)n * dim);
    if (st == KVQ_OK) st = check_domain(window, (uint64_t)n * dim);
    if (st != KVQ_OK) return st;
    if (*npat >= kvq_pkv_bank_limit(p)) {  /* at the cap: no centre joins [PKV-U-04] */
        if (appended != NULL) *appended = 0;
        return KVQ_OK;
    }
    if (*npat >= bank_cap) return KVQ_E_SHAPE; /* no room allocated */
    centre_of(bank + kvq_pkv_pattern_offset(*npat, dim), window, n, dim);
    *npat += 1u;
    if (appended != NULL) *appended = 1;
    return KVQ_OK;
}

/* ---- the V threshold [PKV-V-01..02] --------------------------------- */

kvq_status kvq_pkv_rho_star(float *rho, uint32_t dim, uint32_t alpha)
{
    if (rho == NULL || alpha > KVQ_PKV_ALPHA_01) return KVQ_E_PARAM;
    if (dim < 8u || dim > KVQ_MAX_DIM) return KVQ_E_SHAPE;
    *rho = kvq_pkv_rho_star_eval(dim, alpha); /* [PKV-V-02] */
    return KVQ_OK;
}

int kvq_pkv_v_use(float *rho, const float *v, const float *m, uint32_t d, float t)
{
    float lo = v[0], hi = v[0], rr, rf, q;
    for (uint32_t i = 1; i < d; i++) {
        if (v[i] < lo) lo = v[i];
        if (v[i] > hi) hi = v[i];
    }
    rr = hi - lo;                        /* RN32: range(v) [PKV-V-01] */
    if (rr == 0.0f) {                    /* a constant vector is stored raw */
        if (rho != NULL) *rho = 0.0f;
        return 0;
    }
    rf = kvq_pkv_dist_minmax(v, m, d);   /* range(v - m) */
    q = rf / rr;                         /* RN32 */
    if (rho != NULL) *rho = q;
    return q <= t;
}

/* ---- quantize and dequantize [PKV-Q-01..04] [PKV-D-01..02] ----------- */

kvq_status kvq_pkv_quantize(uint8_t *codes, float *scale, float *zero, uint16_t *index,
                            float *resid, uint32_t *flags, const float *x, uint32_t kind,
                            uint32_t tokens, uint32_t dim, const float *bank, uint32_t npat,
                            const kvq_pkv_params *p, const kvq_policy *pol)
{
    kvq_kivi_shape ks;
    uint64_t n;
    uint32_t dist, f = 0;
    float thr = 0.0f;
    float *r;
    uint16_t *ix;
    kvq_status st;
    if (codes == NULL || scale == NULL || zero == NULL || index == NULL || resid == NULL ||
        x == NULL || bank == NULL || p == NULL || pol == NULL)
        return KVQ_E_PARAM;
    if (kind > KVQ_PKV_VALUE || !kvq_pkv_params_ok(p) || kvq_policy_check(pol) != KVQ_OK)
        return KVQ_E_PARAM;
    ks = kvq_pkv_kivi_shape(p, kind, tokens, dim);
    if (!extent_ok(tokens, dim) || !kvq_kivi_shape_ok(&ks)) return KVQ_E_SHAPE;   /* [PKV-ERR-01] */
    if (npat == 0u || npat > KVQ_PKV_MAX_PATTERNS) return KVQ_E_SHAPE;
    n = (uint64_t)tokens * dim;
    st = check_values2(x, n, bank, (uint64_t)npat * dim);
    if (st != KVQ_OK) return st;
    if (kind == KVQ_PKV_VALUE && p->v_threshold) {
        st = kvq_pkv_rho_star(&thr, dim, p->alpha);
        if (st != KVQ_OK) return st;     /* dim >= G >= 8: unreachable */
    }
    dist = kind == KVQ_PKV_KEY_PREFILL ? p->key_dist : KVQ_PKV_DIST_MINMAX; /* [PKV-A-03] */
    r = malloc(n * sizeof *r);
    ix = malloc((size_t)tokens * sizeof *ix);
    if (r == NULL || ix == NULL) {
        free(r);
        free(ix);
        return KVQ_E_NOMEM;
    }
    for (uint32_t t = 0; t < tokens; t++) {
        const float *xt = x + (uint64_t)t * dim;
        uint32_t j = kvq_pkv_nearest(xt, bank, npat, dim, dist);
        const float *m = bank + kvq_pkv_pattern_offset(j, dim);
        int use = 1;
        if (kind == KVQ_PKV_VALUE && p->v_threshold) use = kvq_pkv_v_use(NULL, xt, m, dim, thr);
        ix[t] = use ? (uint16_t)j : (uint16_t)KVQ_PKV_NO_PATTERN; /* [PKV-V-03] */
        for (uint32_t i = 0; i < dim; i++)
            r[(uint64_t)t * dim + i] = use ? xt[i] - m[i] : xt[i]; /* RN32 [PKV-Q-02] */
    }
    st = kvq_kivi_quantize(codes, scale, zero, &f, r, &ks, pol); /* [PKV-Q-03] */
    if (st == KVQ_OK) {
        memcpy(resid, r, n * sizeof *r);
        memcpy(index, ix, (size_t)tokens * sizeof *ix);
        if (flags != NULL) *flags = f;
    }
    free(r);
    free(ix);
    return st;
}

kvq_status kvq_pkv_dequantize(float *y, uint32_t *flags, const uint8_t *codes,
                              const float *scale, const float *zero, const uint16_t *index,
                              uint32_t kind, uint32_t tokens, uint32_t dim, const float *bank,
                              uint32_t npat, const kvq_pkv_params *p, const kvq_policy *pol)
{
    kvq_kivi_shape ks;
    kvq_status st;
    if (y == NULL || codes == NULL || scale == NULL || zero == NULL || index == NULL ||
        bank == NULL || p == NULL || pol == NULL)
        return KVQ_E_PARAM;
    if (kind > KVQ_PKV_VALUE || !kvq_pkv_params_ok(p) || kvq_policy_check(pol) != KVQ_OK)
        return KVQ_E_PARAM;
    ks = kvq_pkv_kivi_shape(p, kind, tokens, dim);
    if (!extent_ok(tokens, dim) || !kvq_kivi_shape_ok(&ks)) return KVQ_E_SHAPE;
    if (npat == 0u || npat > KVQ_PKV_MAX_PATTERNS) return KVQ_E_SHAPE;
    st = check_finite(bank, (uint64_t)npat * dim);
    if (st == KVQ_OK) st = check_domain(bank, (uint64_t)npat * dim);
    if (st != KVQ_OK) return st;
    for (uint32_t t = 0; t < tokens; t++) { /* [PKV-D-02] */
        if (index[t] == KVQ_PKV_NO_PATTERN && kind == KVQ_PKV_VALUE) continue;
        if (index[t] >= npat) return KVQ_E_PARAM;
    }
    st = kvq_kivi_dequantize(y, flags, codes, scale, zero, &ks, pol); /* r^ = fmaf(c, s, z) */
    if (st != KVQ_OK) return st;
    for (uint32_t t = 0; t < tokens; t++) {
        const float *m;
        float *yt = y + (uint64_t)t * dim;
        if (index[t] == KVQ_PKV_NO_PATTERN) continue; /* raw token: y = r^ [PKV-D-01] */
        m = bank + kvq_pkv_pattern_offset(index[t], dim);
        /* RN32(r^ + m): |r^| <= FLT_MAX and |m| <= 2^48 < ulp(FLT_MAX)/2, so no overflow */
        for (uint32_t i = 0; i < dim; i++) yt[i] = yt[i] + m[i];
    }
    return KVQ_OK;
}

kvq_status kvq_pkv_key_flush(uint8_t *codes, float *scale, float *zero, uint16_t *index,
                             float *resid, uint32_t *flags, float *bank, uint32_t *npat,
                             uint32_t bank_cap, const float *window, uint32_t dim,
                             const kvq_pkv_params *p, const kvq_policy *pol)
{
    uint32_t R, np, join;
    float *saved;
    kvq_status st;
    if (codes == NULL || scale == NULL || zero == NULL || index == NULL || resid == NULL ||
        bank == NULL || npat == NULL || window == NULL || p == NULL || pol == NULL)
        return KVQ_E_PARAM;
    if (!kvq_pkv_params_ok(p) || kvq_policy_check(pol) != KVQ_OK || *npat > bank_cap)
        return KVQ_E_PARAM;
    R = p->residual;
    np = *npat;
    if (!extent_ok(R, dim) || np == 0u || np > KVQ_PKV_MAX_PATTERNS) return KVQ_E_SHAPE;
    st = check_values2(window, (uint64_t)R * dim, bank, (uint64_t)np * dim);
    if (st != KVQ_OK) return st;
    join = np < kvq_pkv_bank_limit(p);   /* [PKV-U-04] */
    if (join && np >= bank_cap) return KVQ_E_SHAPE;
    if (!join) {
        return kvq_pkv_quantize(codes, scale, zero, index, resid, flags, window,
                                KVQ_PKV_KEY_DECODE, R, dim, bank, np, p, pol);
    }
    /* The centre is written into slot np; the old contents are restored if the
     * quantizer fails, so nothing is written on error [PKV-ERR-01]. */
    saved = malloc((size_t)dim * sizeof *saved);
    if (saved == NULL) return KVQ_E_NOMEM;
    memcpy(saved, bank + kvq_pkv_pattern_offset(np, dim), (size_t)dim * sizeof *saved);
    centre_of(bank + kvq_pkv_pattern_offset(np, dim), window, R, dim);
    st = kvq_pkv_quantize(codes, scale, zero, index, resid, flags, window, KVQ_PKV_KEY_DECODE,
                          R, dim, bank, p->update == KVQ_PKV_UPDATE_AFTER ? np + 1u : np, p,
                          pol);                                 /* [PKV-U-03] */
    if (st != KVQ_OK)
        memcpy(bank + kvq_pkv_pattern_offset(np, dim), saved, (size_t)dim * sizeof *saved);
    else
        *npat = np + 1u;
    free(saved);
    return st;
}

kvq_status kvq_pkv_value_step(uint8_t *codes, float *scale, float *zero, uint16_t *index,
                              float *resid, uint32_t *flags, uint32_t *count, float *bank,
                              uint32_t *npat, uint32_t bank_cap, const float *window,
                              uint32_t held, uint64_t step, uint32_t dim,
                              const kvq_pkv_params *p, const kvq_policy *pol)
{
    uint32_t R, np, first, join, leave;
    float *saved = NULL;
    kvq_status st = KVQ_OK;
    if (codes == NULL || scale == NULL || zero == NULL || index == NULL || resid == NULL ||
        count == NULL || bank == NULL || npat == NULL || window == NULL || p == NULL ||
        pol == NULL)
        return KVQ_E_PARAM;
    if (!kvq_pkv_params_ok(p) || kvq_policy_check(pol) != KVQ_OK || *npat > bank_cap)
        return KVQ_E_PARAM;
    R = p->residual;
    np = *npat;
    if (held == 0u || held > R + 1u || step == 0u || !extent_ok(held, dim) || dim % p->group != 0u)
        return KVQ_E_SHAPE;
    leave = held == R + 1u;
    if (leave && (np == 0u || np > KVQ_PKV_MAX_PATTERNS)) return KVQ_E_SHAPE;
    st = check_values2(window, (uint64_t)held * dim, bank, (uint64_t)np * dim);
    if (st != KVQ_OK) return st;
    join = step % p->window == 0u && np < kvq_pkv_bank_limit(p); /* [PKV-U-04] */
    if (join && np >= bank_cap) return KVQ_E_SHAPE;
    first = held > R ? held - R : 0u;    /* the R most recent rows [PKV-U-05] */
    if (join) {
        saved = malloc((size_t)dim * sizeof *saved);
        if (saved == NULL) return KVQ_E_NOMEM;
        memcpy(saved, bank + kvq_pkv_pattern_offset(np, dim), (size_t)dim * sizeof *saved);
        centre_of(bank + kvq_pkv_pattern_offset(np, dim), window + (uint64_t)first * dim,
                  held - first, dim);
    }
    if (leave)                           /* the leaving value, against the bank as it stands */
        st = kvq_pkv_quantize(codes, scale, zero, index, resid, flags, window, KVQ_PKV_VALUE, 1u,
                              dim, bank, join ? np + 1u : np, p, pol);
    if (st != KVQ_OK) {
        if (join)
            memcpy(bank + kvq_pkv_pattern_offset(np, dim), saved, (size_t)dim * sizeof *saved);
    } else {
        if (join) *npat = np + 1u;
        *count = leave ? 1u : 0u;
    }
    free(saved);
    return st;
}
