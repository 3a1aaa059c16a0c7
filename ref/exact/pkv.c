/*
 * pkv.c -- PKV (PatternKV), exact path (GNU MPFR).
 *
 * Distances are exact reals (KVQ_XPREC bits hold every sum and square of the
 * PKV domain: differences below 2^49 on the 2^-149 grid need 198 bits, their
 * squares 396, a sum of 2^24 of them 420).  Radii and bounds are rounded
 * upward (MPFR_RNDU); comparisons are exact.  The threshold rho*(d, alpha) is
 * bracketed with outward rounding, z_{1-alpha} included (certified bisection on
 * mpfr_erfc, which is correctly rounded in each direction).
 */
#include <math.h>
#include <stdlib.h>

#include "kvq_exact_pkv.h"

#define XP KVQ_XPREC
#define RP KVQ_PKV_XPREC_RHO

/* ---- distances and the assignment judge [PKV-A-01..04] ---------------- */

/* Exact extremes a = max_i (x_i - m_i), b = min_i (x_i - m_i). */
static void diff_extremes(mpfr_t a, mpfr_t b, mpfr_t t, const float *x, const float *m,
                          uint32_t d)
{
    for (uint32_t i = 0; i < d; i++) {
        mpfr_set_flt(t, x[i], MPFR_RNDN);
        mpfr_sub_d(t, t, (double)m[i], MPFR_RNDN); /* exact at XP */
        if (i == 0 || mpfr_cmp(t, a) > 0) mpfr_set(a, t, MPFR_RNDN);
        if (i == 0 || mpfr_cmp(t, b) < 0) mpfr_set(b, t, MPFR_RNDN);
    }
}

/* RN32 of an exact value, as a float (no overflow in the domain). */
static float rn32(mpfr_t v)
{
    (void)kvq_exact_round(v, v, &kvq_xfmt_binary32);
    return mpfr_get_flt(v, MPFR_RNDN);
}

/* Exact min-max distance D (into dist), its radius eps (RNDU), and the pinned
 * binary32 value RN32(RN32(a) - RN32(b)) [PKV-A-01] [PKV-A-04]. */
static float minmax_exact(mpfr_t dist, mpfr_t eps, const float *x, const float *m, uint32_t d)
{
    mpfr_t a, b, t;
    float ra, rb;
    mpfr_inits2(XP, a, b, t, (mpfr_ptr)0);
    diff_extremes(a, b, t, x, m, d);
    mpfr_sub(dist, a, b, MPFR_RNDN);             /* exact */
    /* eps = 2^-23 (1 + 2^-24) (|a| + |b|) + 2^-149 */
    mpfr_abs(t, a, MPFR_RNDN);
    mpfr_set(eps, t, MPFR_RNDN);
    mpfr_abs(t, b, MPFR_RNDN);
    mpfr_add(eps, eps, t, MPFR_RNDU);
    mpfr_mul_ui(eps, eps, (1ul << 24) + 1ul, MPFR_RNDU);
    mpfr_div_2ui(eps, eps, 47, MPFR_RNDU);
    mpfr_set_ui_2exp(t, 1, -149, MPFR_RNDN);
    mpfr_add(eps, eps, t, MPFR_RNDU);
    ra = rn32(a);
    rb = rn32(b);
    mpfr_set_flt(a, ra, MPFR_RNDN);
    mpfr_sub_d(a, a, (double)rb, MPFR_RNDN);     /* exact */
    ra = rn32(a);
    mpfr_clears(a, b, t, (mpfr_ptr)0);
    return ra;
}

/* gamma_k = k 2^-24 / (1 - k 2^-24), rounded up. */
static void gamma_up(mpfr_t g, uint64_t k)
{
    mpfr_t den;
    mpfr_init2(den, XP);
    mpfr_set_ui(den, 1, MPFR_RNDN);
    mpfr_set_ui(g, (unsigned long)k, MPFR_RNDN);
    mpfr_div_2ui(g, g, 24, MPFR_RNDN);            /* exact */
    mpfr_sub(den, den, g, MPFR_RNDD);
    mpfr_div(g, g, den, MPFR_RNDU);
    mpfr_clear(den);
}

/* Exact squared Euclidean distance, its radius gamma_{d+2} D + d 2^-149
 * (RNDU), and the pinned binary32 sequence acc = RN32(acc + RN32(t^2)),
 * t = RN32(x - m) [PKV-KM-02]. */
static float euclid_exact(mpfr_t dist, mpfr_t eps, const float *x, const float *m, uint32_t d)
{
    mpfr_t t, acc;
    float pinned = 0.0f;
    mpfr_inits2(XP, t, acc, (mpfr_ptr)0);
    mpfr_set_ui(dist, 0, MPFR_RNDN);
    for (uint32_t i = 0; i < d; i++) {
        float ti, sq;
        mpfr_set_flt(t, x[i], MPFR_RNDN);
        mpfr_sub_d(t, t, (double)m[i], MPFR_RNDN);
        mpfr_sqr(acc, t, MPFR_RNDN);              /* exact */
        mpfr_add(dist, dist, acc, MPFR_RNDN);     /* exact */
        ti = rn32(t);                             /* the pinned sequence */
        mpfr_set_flt(t, ti, MPFR_RNDN);
        mpfr_sqr(t, t, MPFR_RNDN);
        sq = rn32(t);
        mpfr_set_flt(t, pinned, MPFR_RNDN);
        mpfr_add_d(t, t, (double)sq, MPFR_RNDN);
        pinned = rn32(t);
    }
    gamma_up(eps, (uint64_t)d + 2u);
    mpfr_mul(eps, eps, dist, MPFR_RNDU);
    mpfr_set_ui_2exp(t, d, -149, MPFR_RNDU);
    mpfr_add(eps, eps, t, MPFR_RNDU);
    mpfr_clears(t, acc, (mpfr_ptr)0);
    return pinned;
}

void kvq_exact_pkv_assign(kvq_exact_pkv_assign_out *out, const float *x, const float *bank,
                          uint32_t npat, uint32_t d, uint32_t dist, uint32_t cand)
{
    mpfr_t *D = malloc((size_t)npat * sizeof *D), *E = malloc((size_t)npat * sizeof *E);
    mpfr_t lim, diff;
    float best_pin = 0.0f;
    uint32_t pin = 0, real = 0;
    int amb = 0, acc;
    if (D == NULL || E == NULL) abort();         /* the judge cannot answer without memory */
    mpfr_inits2(XP, lim, diff, (mpfr_ptr)0);
    for (uint32_t j = 0; j < npat; j++) {
        const float *m = bank + kvq_pkv_pattern_offset(j, d);
        float pj;
        mpfr_inits2(XP, D[j], E[j], (mpfr_ptr)0);
        pj = dist == KVQ_PKV_DIST_EUCLID ? euclid_exact(D[j], E[j], x, m, d)
                                         : minmax_exact(D[j], E[j], x, m, d);
        if (j == 0 || pj < best_pin) {           /* pinned: strict, lowest index */
            best_pin = pj;
            pin = j;
        }
        if (j > 0 && mpfr_cmp(D[j], D[real]) < 0) real = j; /* real: strict, lowest */
    }
    for (uint32_t j = 0; j < npat; j++) {        /* near-ties with the least [PKV-A-04] */
        if (j == real) continue;
        mpfr_sub(diff, D[j], D[real], MPFR_RNDN); /* exact */
        mpfr_add(lim, E[j], E[real], MPFR_RNDU);
        if (mpfr_cmp(diff, lim) <= 0) amb = 1;
    }
    acc = cand == real;
    if (!acc && cand < npat) {
        mpfr_sub(diff, D[cand], D[real], MPFR_RNDN);
        mpfr_add(lim, E[cand], E[real], MPFR_RNDU);
        acc = mpfr_cmp(diff, lim) <= 0;
    }
    for (uint32_t j = 0; j < npat; j++) mpfr_clears(D[j], E[j], (mpfr_ptr)0);
    mpfr_clears(lim, diff, (mpfr_ptr)0);
    free(D);
    free(E);
    out->pinned = pin;
    out->real = real;
    out->ambiguous = amb;
    out->accepted = acc;
}

/* ---- the threshold [PKV-V-02] ----------------------------------------- */

/* alpha as the exact rational 1/k. */
static unsigned long alpha_den(uint32_t alpha)
{
    return alpha == KVQ_PKV_ALPHA_05 ? 20ul : alpha == KVQ_PKV_ALPHA_10 ? 10ul : 100ul;
}

kvq_status kvq_exact_pkv_z_bracket(mpfr_t lo, mpfr_t hi, uint32_t alpha)
{
    mpfr_t mid, ylo, yhi, s2lo, s2hi, flo, fhi, alo, ahi;
    if (alpha > KVQ_PKV_ALPHA_01) return KVQ_E_PARAM;
    mpfr_set_prec(lo, RP);
    mpfr_set_prec(hi, RP);
    mpfr_inits2(RP, mid, ylo, yhi, s2lo, s2hi, flo, fhi, alo, ahi, (mpfr_ptr)0);
    mpfr_set_ui(alo, 1, MPFR_RNDN);
    mpfr_div_ui(alo, alo, alpha_den(alpha), MPFR_RNDD);
    mpfr_set_ui(ahi, 1, MPFR_RNDN);
    mpfr_div_ui(ahi, ahi, alpha_den(alpha), MPFR_RNDU);
    mpfr_sqrt_ui(s2lo, 2, MPFR_RNDD);
    mpfr_sqrt_ui(s2hi, 2, MPFR_RNDU);
    /* f(x) = erfc(x / sqrt 2) / 2 decreases; f(0) = 1/2 > alpha, f(8) < 2^-50 < alpha. */
    mpfr_set_ui(lo, 0, MPFR_RNDN);
    mpfr_set_ui(hi, 8, MPFR_RNDN);
    for (int it = 0; it < RP; it++) {
        mpfr_add(mid, lo, hi, MPFR_RNDN);
        mpfr_div_2ui(mid, mid, 1, MPFR_RNDN);    /* exact: a dyadic of few bits */
        if (mpfr_equal_p(mid, lo) || mpfr_equal_p(mid, hi)) break;
        mpfr_div(ylo, mid, s2hi, MPFR_RNDD);     /* ylo <= mid / sqrt 2 <= yhi */
        mpfr_div(yhi, mid, s2lo, MPFR_RNDU);
        mpfr_erfc(fhi, ylo, MPFR_RNDU);          /* 2 f(mid) <= fhi */
        mpfr_erfc(flo, yhi, MPFR_RNDD);          /* 2 f(mid) >= flo */
        mpfr_div_2ui(fhi, fhi, 1, MPFR_RNDU);
        mpfr_div_2ui(flo, flo, 1, MPFR_RNDD);
        if (mpfr_cmp(fhi, alo) < 0)              /* f(mid) < alpha: mid > z */
            mpfr_set(hi, mid, MPFR_RNDN);
        else if (mpfr_cmp(flo, ahi) > 0)         /* f(mid) > alpha: mid < z */
            mpfr_set(lo, mid, MPFR_RNDN);
        else
            break;                               /* undecided: the bracket stands */
    }
    mpfr_clears(mid, ylo, yhi, s2lo, s2hi, flo, fhi, alo, ahi, (mpfr_ptr)0);
    return KVQ_OK;
}

/* c^2 = 4 z^2 / (5 d) rounded in direction rnd, from z rounded the same way. */
static void c2_of(mpfr_t c2, const mpfr_t z, uint32_t dim, mpfr_rnd_t rnd)
{
    mpfr_sqr(c2, z, rnd);
    mpfr_mul_2ui(c2, c2, 2, rnd);
    mpfr_div_ui(c2, c2, 5ul * dim, rnd);
}

kvq_status kvq_exact_pkv_rho_bracket_z(mpfr_t lo, mpfr_t hi, uint32_t dim, const mpfr_t zl,
                                       const mpfr_t zh)
{
    mpfr_t c2, g, t, u;
    if (dim < 8u || dim > KVQ_MAX_DIM) return KVQ_E_SHAPE;
    mpfr_set_prec(lo, RP);
    mpfr_set_prec(hi, RP);
    mpfr_inits2(RP, c2, g, t, u, (mpfr_ptr)0);
    /* rho*^2 = (1 - c^2) / (1 + sqrt(c^2 (2 - c^2))) decreases in c^2 on (0, 1). */
    c2_of(c2, zh, dim, MPFR_RNDU);               /* the largest c^2: lo */
    mpfr_ui_sub(t, 2, c2, MPFR_RNDU);
    mpfr_mul(g, c2, t, MPFR_RNDU);
    mpfr_sqrt(g, g, MPFR_RNDU);
    mpfr_add_ui(g, g, 1, MPFR_RNDU);
    mpfr_ui_sub(u, 1, c2, MPFR_RNDD);
    mpfr_div(u, u, g, MPFR_RNDD);
    mpfr_sqrt(lo, u, MPFR_RNDD);
    c2_of(c2, zl, dim, MPFR_RNDD);               /* the least c^2: hi */
    mpfr_ui_sub(t, 2, c2, MPFR_RNDD);
    mpfr_mul(g, c2, t, MPFR_RNDD);
    mpfr_sqrt(g, g, MPFR_RNDD);
    mpfr_add_ui(g, g, 1, MPFR_RNDD);
    mpfr_ui_sub(u, 1, c2, MPFR_RNDU);
    mpfr_div(u, u, g, MPFR_RNDU);
    mpfr_sqrt(hi, u, MPFR_RNDU);
    mpfr_clears(c2, g, t, u, (mpfr_ptr)0);
    return KVQ_OK;
}

kvq_status kvq_exact_pkv_rho_bracket(mpfr_t lo, mpfr_t hi, uint32_t dim, uint32_t alpha)
{
    mpfr_t zl, zh;
    kvq_status st;
    if (alpha > KVQ_PKV_ALPHA_01) return KVQ_E_PARAM;
    if (dim < 8u || dim > KVQ_MAX_DIM) return KVQ_E_SHAPE;
    mpfr_inits2(RP, zl, zh, (mpfr_ptr)0);
    kvq_exact_pkv_z_bracket(zl, zh, alpha);
    st = kvq_exact_pkv_rho_bracket_z(lo, hi, dim, zl, zh);
    mpfr_clears(zl, zh, (mpfr_ptr)0);
    return st;
}

/* Bound of F(rho) = 1 - rho^2 - c sqrt(1 + rho^4): lower (low = 1, with the
 * largest c) or upper (low = 0, with the least c), at precision 2 RP. */
static void f_bound(mpfr_t f, const mpfr_t rho, const mpfr_t c2, int low)
{
    mpfr_rnd_t dn = low ? MPFR_RNDD : MPFR_RNDU, up = low ? MPFR_RNDU : MPFR_RNDD;
    mpfr_t r2, r4, c;
    mpfr_inits2(2 * RP, r2, r4, c, (mpfr_ptr)0);
    mpfr_sqrt(c, c2, up);                        /* c moves F the other way */
    mpfr_sqr(r2, rho, up);
    mpfr_sqr(r4, r2, up);
    mpfr_add_ui(r4, r4, 1, up);
    mpfr_sqrt(r4, r4, up);
    mpfr_mul(r4, r4, c, up);                     /* c sqrt(1 + rho^4), away from F's side */
    mpfr_ui_sub(f, 1, r2, dn);
    mpfr_sub(f, f, r4, dn);
    mpfr_clears(r2, r4, c, (mpfr_ptr)0);
}

int kvq_exact_pkv_rho_certify(const mpfr_t lo, const mpfr_t hi, uint32_t dim, uint32_t alpha)
{
    mpfr_t zl, zh, c2l, c2h, f;
    int ok;
    if (alpha > KVQ_PKV_ALPHA_01 || dim < 8u || dim > KVQ_MAX_DIM) return 0;
    mpfr_inits2(2 * RP, zl, zh, c2l, c2h, f, (mpfr_ptr)0);
    kvq_exact_pkv_z_bracket(zl, zh, alpha);
    mpfr_set_prec(c2l, 2 * RP);
    mpfr_set_prec(c2h, 2 * RP);
    c2_of(c2h, zh, dim, MPFR_RNDU);
    c2_of(c2l, zl, dim, MPFR_RNDD);
    f_bound(f, lo, c2h, 1);                      /* F(lo) >= this >= 0 ? */
    ok = mpfr_sgn(f) >= 0;
    f_bound(f, hi, c2l, 0);                      /* F(hi) <= this <= 0 ? */
    ok = ok && mpfr_sgn(f) <= 0;
    ok = ok && mpfr_cmp(lo, hi) <= 0 && mpfr_sgn(lo) > 0 && mpfr_cmp_ui(hi, 1) < 0;
    mpfr_clears(zl, zh, c2l, c2h, f, (mpfr_ptr)0);
    return ok;
}

int kvq_exact_pkv_v_decide(int *ambiguous, const float *v, const float *m, uint32_t d,
                           const mpfr_t lo, const mpfr_t hi)
{
    mpfr_t rr, a, b, t, rf, eps, lhs, rhs;
    float vmin = v[0], vmax = v[0];
    int use, amb = 0;
    for (uint32_t i = 1; i < d; i++) {           /* exact comparisons */
        if (v[i] < vmin) vmin = v[i];
        if (v[i] > vmax) vmax = v[i];
    }
    if (vmin == vmax) {                          /* range(v) = 0: raw, decisive [PKV-V-01] */
        *ambiguous = 0;
        return 0;
    }
    mpfr_inits2(XP, rr, a, b, t, rf, eps, lhs, rhs, (mpfr_ptr)0);
    mpfr_set_flt(rr, vmax, MPFR_RNDN);
    mpfr_sub_d(rr, rr, (double)vmin, MPFR_RNDN); /* Rr exact */
    (void)minmax_exact(rf, eps, v, m, d);        /* Rf exact, eps its radius */
    /* use iff (Rf + eps)(1 + 2^-21) + 2^-149 Rr < lo (1 - 2^-21) Rr [PKV-V-04] */
    mpfr_add(lhs, rf, eps, MPFR_RNDU);
    mpfr_mul_ui(lhs, lhs, (1ul << 21) + 1ul, MPFR_RNDU);
    mpfr_div_2ui(lhs, lhs, 21, MPFR_RNDU);
    mpfr_mul_2si(t, rr, -149, MPFR_RNDU);
    mpfr_add(lhs, lhs, t, MPFR_RNDU);
    mpfr_mul_ui(rhs, lo, (1ul << 21) - 1ul, MPFR_RNDD);
    mpfr_div_2ui(rhs, rhs, 21, MPFR_RNDD);
    mpfr_mul(rhs, rhs, rr, MPFR_RNDD);
    if (mpfr_cmp(lhs, rhs) < 0) {
        use = 1;
    } else {
        /* reject iff (Rf - eps)(1 - 2^-21) - 2^-149 Rr > hi (1 + 2^-21) Rr */
        mpfr_sub(lhs, rf, eps, MPFR_RNDD);
        mpfr_mul_ui(lhs, lhs, (1ul << 21) - 1ul, MPFR_RNDD);
        mpfr_div_2ui(lhs, lhs, 21, MPFR_RNDD);
        mpfr_mul_2si(t, rr, -149, MPFR_RNDU);
        mpfr_sub(lhs, lhs, t, MPFR_RNDD);
        mpfr_mul_ui(rhs, hi, (1ul << 21) + 1ul, MPFR_RNDU);
        mpfr_div_2ui(rhs, rhs, 21, MPFR_RNDU);
        mpfr_mul(rhs, rhs, rr, MPFR_RNDU);
        if (mpfr_cmp(lhs, rhs) > 0) {
            use = 0;
        } else {                                 /* the band: midpoint decides, flagged */
            amb = 1;
            mpfr_add(t, lo, hi, MPFR_RNDN);
            mpfr_div_2ui(t, t, 1, MPFR_RNDN);
            mpfr_mul(t, t, rr, MPFR_RNDN);
            use = mpfr_cmp(rf, t) <= 0;
        }
    }
    mpfr_clears(rr, a, b, t, rf, eps, lhs, rhs, (mpfr_ptr)0);
    *ambiguous = amb;
    return use;
}

/* ---- Chebyshev centres [PKV-U-02] ------------------------------------- */

kvq_status kvq_exact_pkv_chebyshev(float *centre, const float *x, uint32_t tokens, uint32_t dim)
{
    mpfr_t s;
    if (centre == NULL || x == NULL) return KVQ_E_PARAM;
    if (tokens == 0u || dim == 0u || tokens > KVQ_MAX_DIM || dim > KVQ_MAX_DIM ||
        (uint64_t)tokens * dim > KVQ_MAX_ELEMS)
        return KVQ_E_SHAPE;
    for (uint64_t e = 0; e < (uint64_t)tokens * dim; e++)
        if (!isfinite(x[e])) return KVQ_E_NONFINITE;
    for (uint64_t e = 0; e < (uint64_t)tokens * dim; e++)
        if (fabsf(x[e]) > KVQ_PKV_MAX_ABS) return KVQ_E_RANGE;
    mpfr_init2(s, XP);
    for (uint32_t c = 0; c < dim; c++) {
        float mn = x[c], mx = x[c];
        for (uint32_t t = 1; t < tokens; t++) {
            float v = x[(uint64_t)t * dim + c];
            if (v < mn) mn = v;
            if (v > mx) mx = v;
        }
        mpfr_set_flt(s, mn, MPFR_RNDN);
        mpfr_add_d(s, s, (double)mx, MPFR_RNDN); /* exact */
        mpfr_div_2ui(s, s, 1, MPFR_RNDN);        /* exact */
        centre[c] = rn32(s);                      /* one rounding of the midpoint */
    }
    mpfr_clear(s);
    return KVQ_OK;
}

/* ---- the Lloyd property [PKV-KM-06] ----------------------------------- */

kvq_status kvq_exact_pkv_lloyd_check(kvq_exact_pkv_lloyd_out *out, const float *x,
                                     uint32_t tokens, uint32_t dim, const float *C, uint32_t M,
                                     const uint32_t *cluster, uint32_t converged)
{
    mpfr_t S, A, nc, rhs, t, g, tolR, lhs;
    float lo, hi;
    double worst = 0.0;
    uint64_t n = (uint64_t)tokens * dim;
    uint32_t *cnt;
    if (out == NULL || x == NULL || C == NULL || cluster == NULL) return KVQ_E_PARAM;
    if (tokens == 0u || dim == 0u || M == 0u || M > KVQ_PKV_MAX_PATTERNS) return KVQ_E_SHAPE;
    for (uint32_t t2 = 0; t2 < tokens; t2++)
        if (cluster[t2] >= M) return KVQ_E_PARAM;
    out->bad_assign = out->ambiguous = out->bad_move = 0;
    for (uint32_t tk = 0; tk < tokens; tk++) {   /* every assignment optimal for C */
        kvq_exact_pkv_assign_out a;
        kvq_exact_pkv_assign(&a, x + (uint64_t)tk * dim, C, M, dim, KVQ_PKV_DIST_EUCLID,
                             cluster[tk]);
        if (!a.accepted) out->bad_assign++;
        if (a.ambiguous) out->ambiguous++;
    }
    if (!converged) {
        out->worst = 0.0;
        return KVQ_OK;
    }
    cnt = calloc(M, sizeof *cnt);
    if (cnt == NULL) return KVQ_E_NOMEM;
    for (uint32_t tk = 0; tk < tokens; tk++) cnt[cluster[tk]]++;
    mpfr_inits2(XP, S, A, nc, rhs, t, g, tolR, lhs, (mpfr_ptr)0);
    lo = hi = x[0];
    for (uint64_t e = 1; e < n; e++) {
        if (x[e] < lo) lo = x[e];
        if (x[e] > hi) hi = x[e];
    }
    /* tolR = (1 + 2^-22) RN32(1e-4) (max - min), exact */
    mpfr_set_flt(tolR, hi, MPFR_RNDN);
    mpfr_sub_d(tolR, tolR, (double)lo, MPFR_RNDN);
    mpfr_mul_d(tolR, tolR, (double)KVQ_PKV_TOL, MPFR_RNDN);
    mpfr_mul_ui(tolR, tolR, (1ul << 22) + 1ul, MPFR_RNDN);
    mpfr_div_2ui(tolR, tolR, 22, MPFR_RNDN);
    for (uint32_t j = 0; j < M; j++) {
        if (cnt[j] == 0u) continue;              /* an empty cluster does not move */
        gamma_up(g, (uint64_t)cnt[j] + 2u);
        for (uint32_t i = 0; i < dim; i++) {
            float c = C[(uint64_t)j * dim + i];
            mpfr_set_ui(S, 0, MPFR_RNDN);
            mpfr_set_ui(A, 0, MPFR_RNDN);
            for (uint32_t tk = 0; tk < tokens; tk++) {
                if (cluster[tk] != j) continue;
                mpfr_set_flt(t, x[(uint64_t)tk * dim + i], MPFR_RNDN);
                mpfr_sub_d(t, t, (double)c, MPFR_RNDN);
                mpfr_add(S, S, t, MPFR_RNDN);    /* S = sum (x - c), exact */
                mpfr_abs(t, t, MPFR_RNDN);
                mpfr_add(A, A, t, MPFR_RNDN);    /* n A = sum |x - c|, exact */
            }
            /* |mu - c| <= B  <=>  |S| <= n B with
             * n B = n tolR + gamma_{n+2} sum|x - c| + 2^-24 |n c + S| + n 2^-147 */
            mpfr_set_flt(nc, c, MPFR_RNDN);
            mpfr_mul_ui(nc, nc, cnt[j], MPFR_RNDN);
            mpfr_add(nc, nc, S, MPFR_RNDN);      /* n mu, exact */
            mpfr_abs(nc, nc, MPFR_RNDN);
            mpfr_div_2ui(nc, nc, 24, MPFR_RNDN);
            mpfr_mul(rhs, g, A, MPFR_RNDU);
            mpfr_add(rhs, rhs, nc, MPFR_RNDU);
            mpfr_mul_ui(t, tolR, cnt[j], MPFR_RNDU);
            mpfr_add(rhs, rhs, t, MPFR_RNDU);
            mpfr_set_ui_2exp(t, cnt[j], -147, MPFR_RNDU);
            mpfr_add(rhs, rhs, t, MPFR_RNDU);
            mpfr_abs(lhs, S, MPFR_RNDN);
            if (mpfr_cmp(lhs, rhs) > 0) out->bad_move++;
            if (mpfr_sgn(rhs) > 0) {
                double r;
                mpfr_div(t, lhs, rhs, MPFR_RNDU);
                r = mpfr_get_d(t, MPFR_RNDU);
                if (r > worst) worst = r;
            }
        }
    }
    mpfr_clears(S, A, nc, rhs, t, g, tolR, lhs, (mpfr_ptr)0);
    free(cnt);
    out->worst = worst;
    return KVQ_OK;
}

/* ---- exact quantization given the indices [PKV-Q-04] ----------------- */

/* The pattern of token t, or NULL for a raw token; *bad on a bad index. */
static const float *pattern_of(const uint16_t *index, uint32_t t, uint32_t kind,
                               const float *bank, uint32_t npat, uint32_t dim, int *bad)
{
    if (index[t] == KVQ_PKV_NO_PATTERN && kind == KVQ_PKV_VALUE) return NULL;
    if (index[t] >= npat) {
        *bad = 1;
        return NULL;
    }
    return bank + kvq_pkv_pattern_offset(index[t], dim);
}

/* The shared checks of the exact calls, in the fast path's order [PKV-ERR-01]. */
static kvq_status xcheck(const float *x, const uint16_t *index, uint32_t kind, uint32_t tokens,
                         uint32_t dim, const float *bank, uint32_t npat,
                         const kvq_pkv_params *p, const kvq_policy *pol)
{
    kvq_kivi_shape ks;
    uint64_t n, nb;
    int bad = 0;
    if (x == NULL || index == NULL || bank == NULL || p == NULL || kind > KVQ_PKV_VALUE ||
        !kvq_pkv_params_ok(p) || (pol != NULL && kvq_policy_check(pol) != KVQ_OK))
        return KVQ_E_PARAM;
    ks = kvq_pkv_kivi_shape(p, kind, tokens, dim);
    if (tokens == 0u || dim == 0u || tokens > KVQ_MAX_DIM || dim > KVQ_MAX_DIM ||
        !kvq_kivi_shape_ok(&ks) || npat == 0u || npat > KVQ_PKV_MAX_PATTERNS)
        return KVQ_E_SHAPE;
    n = (uint64_t)tokens * dim;
    nb = (uint64_t)npat * dim;
    for (uint64_t e = 0; e < n; e++)
        if (!isfinite(x[e])) return KVQ_E_NONFINITE;
    for (uint64_t e = 0; e < nb; e++)
        if (!isfinite(bank[e])) return KVQ_E_NONFINITE;
    for (uint64_t e = 0; e < n; e++)
        if (fabsf(x[e]) > KVQ_PKV_MAX_ABS) return KVQ_E_RANGE;
    for (uint64_t e = 0; e < nb; e++)
        if (fabsf(bank[e]) > KVQ_PKV_MAX_ABS) return KVQ_E_RANGE;
    for (uint32_t t = 0; t < tokens; t++) (void)pattern_of(index, t, kind, bank, npat, dim, &bad);
    return bad ? KVQ_E_PARAM : KVQ_OK;
}

kvq_status kvq_exact_pkv_quantize(kvq_exact_pkv_out *out, const float *x, const uint16_t *index,
                                  uint32_t kind, uint32_t tokens, uint32_t dim,
                                  const float *bank, uint32_t npat, const kvq_pkv_params *p,
                                  const kvq_policy *pol)
{
    kvq_kivi_shape ks;
    kvq_status st;
    float *r;
    mpfr_t v;
    uint64_t n;
    int bad = 0;
    if (out == NULL || out->resid == NULL || out->deq == NULL || pol == NULL) return KVQ_E_PARAM;
    st = xcheck(x, index, kind, tokens, dim, bank, npat, p, pol);
    if (st != KVQ_OK) return st;
    ks = kvq_pkv_kivi_shape(p, kind, tokens, dim);
    n = (uint64_t)tokens * dim;
    r = malloc(n * sizeof *r);
    if (r == NULL) return KVQ_E_NOMEM;
    mpfr_init2(v, XP);
    for (uint32_t t = 0; t < tokens; t++) {      /* r = RN32(x - m) [PKV-Q-02] */
        const float *m = pattern_of(index, t, kind, bank, npat, dim, &bad);
        for (uint32_t i = 0; i < dim; i++) {
            uint64_t e = (uint64_t)t * dim + i;
            mpfr_set_flt(v, x[e], MPFR_RNDN);
            if (m != NULL) mpfr_sub_d(v, v, (double)m[i], MPFR_RNDN);
            r[e] = rn32(v);
        }
    }
    st = kvq_exact_kivi_quantize(&out->kivi, r, &ks, pol); /* [PKV-Q-03] */
    if (st == KVQ_OK) {
        for (uint32_t t = 0; t < tokens; t++) {  /* y = RN32(r^ + m) [PKV-D-01] */
            const float *m = pattern_of(index, t, kind, bank, npat, dim, &bad);
            for (uint32_t i = 0; i < dim; i++) {
                uint64_t e = (uint64_t)t * dim + i;
                out->resid[e] = r[e];
                mpfr_set_flt(v, out->kivi.deq[e], MPFR_RNDN);
                if (m != NULL) mpfr_add_d(v, v, (double)m[i], MPFR_RNDN);
                out->deq[e] = m != NULL ? rn32(v) : out->kivi.deq[e];
            }
        }
    }
    mpfr_clear(v);
    free(r);
    return st;
}

/* ---- the per-element bound [PKV-B-01] -------------------------------- */

kvq_status kvq_exact_pkv_err_check(uint64_t *viol, double *worst, const float *x, const float *y,
                                   const uint16_t *index, uint32_t kind, uint32_t tokens,
                                   uint32_t dim, const float *bank, uint32_t npat,
                                   const kvq_pkv_params *p)
{
    kvq_kivi_shape ks;
    kvq_status st;
    mpfr_t a, b, r, w, k, bnd, t, err;
    uint64_t ng, nv = 0;
    double wr = 0.0;
    int bad = 0;
    if (viol == NULL || worst == NULL || y == NULL) return KVQ_E_PARAM;
    st = xcheck(x, index, kind, tokens, dim, bank, npat, p, NULL);
    if (st != KVQ_OK) return st;
    if (p->meta != KVQ_META_F32) return KVQ_E_PARAM; /* derived for binary32 metadata */
    ks = kvq_pkv_kivi_shape(p, kind, tokens, dim);
    ng = kvq_kivi_groups(&ks);
    mpfr_inits2(XP, a, b, r, w, k, bnd, t, err, (mpfr_ptr)0);
    for (uint64_t g = 0; g < ng; g++) {
        for (uint32_t i = 0; i < ks.group; i++) { /* exact residual extremes */
            uint64_t e = kvq_kivi_elem_index(&ks, g, i);
            const float *m = pattern_of(index, (uint32_t)(e / dim), kind, bank, npat, dim, &bad);
            mpfr_set_flt(r, x[e], MPFR_RNDN);
            if (m != NULL) mpfr_sub_d(r, r, (double)m[e % dim], MPFR_RNDN);
            if (i == 0 || mpfr_cmp(r, a) > 0) mpfr_set(a, r, MPFR_RNDN);
            if (i == 0 || mpfr_cmp(r, b) < 0) mpfr_set(b, r, MPFR_RNDN);
        }
        /* w / (2 cmax) (1 + 2^-16), rounded up */
        mpfr_sub(w, a, b, MPFR_RNDN);
        mpfr_mul_ui(w, w, (1ul << 16) + 1ul, MPFR_RNDU);
        mpfr_div_2ui(w, w, 17, MPFR_RNDU);
        mpfr_div_ui(w, w, kvq_code_max(p->bits), MPFR_RNDU);
        for (uint32_t i = 0; i < ks.group; i++) {
            uint64_t e = kvq_kivi_elem_index(&ks, g, i);
            const float *m = pattern_of(index, (uint32_t)(e / dim), kind, bank, npat, dim, &bad);
            float mv = m != NULL ? m[e % dim] : 0.0f;
            /* K = |x| + |m| + |max r| + |min r|; bound = w' + 2^-20 K + 2^-121 */
            mpfr_abs(k, a, MPFR_RNDN);
            mpfr_abs(t, b, MPFR_RNDN);
            mpfr_add(k, k, t, MPFR_RNDU);
            mpfr_add_d(k, k, fabs((double)x[e]), MPFR_RNDU);
            mpfr_add_d(k, k, fabs((double)mv), MPFR_RNDU);
            mpfr_div_2ui(k, k, 20, MPFR_RNDU);
            mpfr_add(bnd, w, k, MPFR_RNDU);
            mpfr_set_ui_2exp(t, 1, -121, MPFR_RNDN);
            mpfr_add(bnd, bnd, t, MPFR_RNDU);
            mpfr_set_flt(err, x[e], MPFR_RNDN);
            if (!isfinite(y[e])) {
                nv++;
                continue;
            }
            mpfr_sub_d(err, err, (double)y[e], MPFR_RNDN); /* exact */
            mpfr_abs(err, err, MPFR_RNDN);
            if (mpfr_cmp(err, bnd) > 0) nv++;
            mpfr_div(t, err, bnd, MPFR_RNDU);
            if (mpfr_get_d(t, MPFR_RNDU) > wr) wr = mpfr_get_d(t, MPFR_RNDU);
        }
    }
    mpfr_clears(a, b, r, w, k, bnd, t, err, (mpfr_ptr)0);
    *viol = nv;
    *worst = wr;
    return KVQ_OK;
}
