/*
 * sage_attn.c -- the bound of the SageAttention2 pipeline, exact path
 * (spec/sage.md [SAGE-ATT-07..09], [SAGE-ACC-06]).
 *
 * For each requested query row: an enclosure of exact attention on the
 * unquantized inputs, and the bound B of the spec on how far a conforming
 * pipeline's output may lie from it.  The pinned stages (smoothing, dS, the
 * quantizers) come from this path's own exact functions (ref/exact/sage.c).
 * Every quantity is an upper or lower bound computed with outward rounding:
 * sums and products in binary64 widened by one unit in the last place after
 * each operation (an enclosure whatever the rounding mode was), powers of two
 * of non-integer arguments by MPFR's directed exp2.  Nothing here compares
 * against the fast path.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kvq_exact_sage.h"
#include "outward.h"

/* ---- outward rounding ------------------------------------------------------ */

static inline double up(double x) { return kvq_up(x); }
static inline double dn(double x) { return kvq_dn(x); }
static double mx(double a, double b) { return a > b ? a : b; }

/* 2^x rounded up or down (MPFR: correctly rounded in the given direction). */
static double exp2_dir(double x, mpfr_rnd_t r, mpfr_t t)
{
    mpfr_set_d(t, x, MPFR_RNDN);                   /* exact: t has 53 bits */
    mpfr_exp2(t, t, r);
    return mpfr_get_d(t, r);
}

/* Base-2 weights of exponents in [lo[j], hi[j]] in the frame of `shift`:
 * wl[j] <= 2^(lo[j] - shift), 2^(hi[j] - shift) <= wh[j], and their sums
 * enclosed in [*sl, *sh]. */
static void weights(double *wl, double *wh, double *sl, double *sh, const double *lo, const double *hi, uint32_t n,
                    double shift, mpfr_t t)
{
    double a = 0.0, b = 0.0;
    for (uint32_t j = 0; j < n; j++) {
        wl[j] = exp2_dir(dn(lo[j] - shift), MPFR_RNDD, t);
        wh[j] = exp2_dir(up(hi[j] - shift), MPFR_RNDU, t);
        a = dn(a + wl[j]);
        b = up(b + wh[j]);
    }
    *sl = a;
    *sh = b;
}

/* (1 + e)^n rounded up (e >= 0), or (1 - e)^n rounded down. */
static double pow_up(double e, uint32_t n)
{
    double r = 1.0;
    const double b = up(1.0 + e);
    for (uint32_t i = 0; i < n; i++) r = up(r * b);
    return r;
}

static double pow_dn(double e, uint32_t n)
{
    double r = 1.0;
    const double b = dn(1.0 - e);
    for (uint32_t i = 0; i < n; i++) r = dn(r * b);
    return r;
}

/* The product of intervals [a0, a1] and [b0, b1], outward. */
static void imul(double *lo, double *hi, double a0, double a1, double b0, double b1)
{
    const double p[4] = {a0 * b0, a0 * b1, a1 * b0, a1 * b1};
    double l = p[0], h = p[0];
    for (int i = 1; i < 4; i++) {
        if (p[i] < l) l = p[i];
        if (p[i] > h) h = p[i];
    }
    *lo = dn(l);
    *hi = up(h);
}

/* ---- the pinned stages, exactly ---------------------------------------------- */

typedef struct xwork {
    float *ks, *kmean, *qs, *qmean, *ds, *qsc, *ksc, *vsc;
    uint8_t *qc, *kc, *vc;
    double *vq;                 /* V's codes' values (E4M3, exact in binary64) */
} xwork;

static void xwork_free(xwork *w)
{
    free(w->ks); free(w->kmean); free(w->qs); free(w->qmean); free(w->ds); free(w->qsc);
    free(w->ksc); free(w->vsc); free(w->qc); free(w->kc); free(w->vc); free(w->vq);
}

static kvq_status xprepare(xwork *w, const float *q, const float *k, const float *v, const kvq_sage_attn *a)
{
    const uint32_t d = a->dim, rows = kvq_sage_mean_rows(a->nq, KVQ_SAGE_ATTN_BQ);
    const kvq_sage_shape qsh = {a->nq, d}, ksh = {a->nk, d};
    const kvq_sage_qk qq = kvq_sage_attn_qk(a, KVQ_SAGE_ROLE_Q), kq = kvq_sage_attn_qk(a, KVQ_SAGE_ROLE_K);
    const kvq_policy *pol = &kvq_policy_default;
    memset(w, 0, sizeof *w);
    w->ks = malloc((size_t)a->nk * d * sizeof(float));
    w->kmean = malloc((size_t)d * sizeof(float));
    w->qs = malloc((size_t)a->nq * d * sizeof(float));
    w->qmean = malloc((size_t)rows * d * sizeof(float));
    w->ds = malloc((size_t)rows * a->nk * sizeof(float));
    w->qsc = malloc(kvq_sage_scale_count(&qsh, &qq) * sizeof(float));
    w->ksc = malloc(kvq_sage_scale_count(&ksh, &kq) * sizeof(float));
    w->vsc = malloc((size_t)d * sizeof(float));
    w->qc = malloc(kvq_sage_code_bytes(&qsh, a->qk_bits));
    w->kc = malloc(kvq_sage_code_bytes(&ksh, a->qk_bits));
    w->vc = malloc((size_t)a->nk * d);
    w->vq = malloc((size_t)a->nk * d * sizeof(double));
    if (!w->ks || !w->kmean || !w->qs || !w->qmean || !w->ds || !w->qsc || !w->ksc || !w->vsc ||
        !w->qc || !w->kc || !w->vc || !w->vq)
        return KVQ_E_NOMEM;
    kvq_status st;
    uint32_t fl, lem;
    if ((st = kvq_exact_sage_smooth(w->ks, w->kmean, &lem, k, &ksh, a->nk)) != KVQ_OK) return st;
    if ((st = kvq_exact_sage_smooth(w->qs, w->qmean, &lem, q, &qsh, KVQ_SAGE_ATTN_BQ)) != KVQ_OK) return st;
    if ((st = kvq_exact_sage_delta_s(w->ds, &lem, w->qmean, w->ks, rows, &ksh, kvq_sage_attn_tau2(a->tau))) !=
        KVQ_OK)
        return st;
    if ((st = kvq_exact_sage_quantize_qk(w->qc, w->qsc, &fl, &lem, w->qs, &qsh, &qq, pol)) != KVQ_OK) return st;
    if ((st = kvq_exact_sage_quantize_qk(w->kc, w->ksc, &fl, &lem, w->ks, &ksh, &kq, pol)) != KVQ_OK) return st;
    if ((st = kvq_exact_sage_quantize_v(w->vc, w->vsc, &fl, &lem, v, &ksh, KVQ_SAGE_FP8_E4M3, pol)) != KVQ_OK)
        return st;
    mpfr_t t;
    mpfr_init2(t, 53);
    for (uint64_t e = 0; e < (uint64_t)a->nk * d; e++) {
        kvq_exact_fp8_e4m3_value(t, w->vc[e]);      /* never NaN: V's codes are finite [SAGE-LEM-05] */
        w->vq[e] = mpfr_get_d(t, MPFR_RNDN);          /* exact */
    }
    mpfr_clear(t);
    return KVQ_OK;
}

/* ---- one row ----------------------------------------------------------------- */

/* Per-key arrays of one row (nk each). */
typedef struct xrow {
    double *slo, *shi, *yl, *yh, *wlo, *whi, *A, *B, *Pf, *Pe, *zt, *tlo, *thi, *xl, *xh, *th;
} xrow;

#define XROW_N 16

static void row_bound(kvq_sage_attn_bound *out, const xwork *w, const xrow *z, const float *q,
                      const float *k, const float *v, const kvq_sage_attn *a, uint32_t i,
                      const kvq_sage_attn_class *cls, const double L[2], mpfr_t t)
{
    const uint32_t d = a->dim, nv = kvq_sage_attn_nvisible(a, i), BK = KVQ_SAGE_ATTN_BKV;
    const kvq_sage_qk qq = kvq_sage_attn_qk(a, KVQ_SAGE_ROLE_Q), kq = kvq_sage_attn_qk(a, KVQ_SAGE_ROLE_K);
    const double u = 0x1p-24, ex = cls->eps_exp, tau2 = kvq_sage_attn_tau2(a->tau);
    const double sq = w->qsc[kvq_sage_scale_slot(&qq, i)];
    const float *dsr = w->ds + (uint64_t)(i / KVQ_SAGE_ATTN_BQ) * a->nk;
    if (nv == 0u) {                                   /* O = 0 and the output +0 [SAGE-ATT-06] */
        for (uint32_t c = 0; c < d; c++) out[c].ref_lo = out[c].ref_hi = out[c].bound = 0.0;
        return;
    }
    /* Scores [SAGE-ATT-03]: sigma = tau2 sq sk dot + ds, and the radius rho of
     * the kernel's freedom; s' lies in [slo, shi]. */
    double Mlo = -INFINITY, Mhi = -INFINITY;
    for (uint32_t j = 0; j < nv; j++) {
        int64_t dot = 0;
        for (uint32_t c = 0; c < d; c++)
            dot += (int64_t)kvq_sage_unpack_code(w->qc, (uint64_t)i * d + c, a->qk_bits) *
                   kvq_sage_unpack_code(w->kc, (uint64_t)j * d + c, a->qk_bits);
        const double ws = sq * (double)w->ksc[kvq_sage_scale_slot(&kq, j)];   /* exact: 48 bits */
        const double x0 = dn(ws * tau2), x1 = up(ws * tau2), dd = (double)dot;  /* dot: exact */
        double alo, ahi;
        imul(&alo, &ahi, x0, x1, dd, dd);
        const double glo = dn(alo + dsr[j]), ghi = up(ahi + dsr[j]);
        const double rho = up(up(0x1p-21 * up(mx(fabs(alo), fabs(ahi)) + mx(fabs(glo), fabs(ghi)))) + 0x1p-126);
        z->slo[j] = dn(glo - rho);
        z->shi[j] = up(ghi + rho);
        Mlo = mx(Mlo, z->slo[j]);
        Mhi = mx(Mhi, z->shi[j]);
    }
    /* Weights in the frame of Mlo: y in [yl, yh]; omega = y / sum y [SAGE-ATT-07]. */
    double Ylo, Yhi;
    weights(z->yl, z->yh, &Ylo, &Yhi, z->slo, z->shi, nv, Mlo, t);
    const uint32_t nb = (nv + BK - 1u) / BK, R = nb - 1u;
    const double G = pow_up(up(up(1.0 + ex) * up(1.0 + u)) - 1.0, R);
    const double th_hi0 = up(pow_up(ex, R + 1u) * pow_up(u, R)), th_lo0 = dn(pow_dn(ex, R + 1u) * pow_dn(u, R));
    const double pl_hi = pow_up(u, 66u + 2u * R), pl_lo = pow_dn(u, 66u + 2u * R);
    const double fp_hi = up(up(1.0 + u) * up(1.0 + 0x1p-4)), fp_lo = dn(dn(1.0 - u) * dn(1.0 - 0x1p-4));
    double SB = 0.0;
    double mlo_b = -INFINITY, mhi_b = -INFINITY;
    for (uint32_t b = 0; b < nb; b++) {
        const uint32_t j0 = b * BK, j1 = j0 + BK < nv ? j0 + BK : nv;
        for (uint32_t j = j0; j < j1; j++) {
            mlo_b = mx(mlo_b, z->slo[j]);
            mhi_b = mx(mhi_b, z->shi[j]);
        }
        /* Lambda_b = min(1, 2^((1 - u)(mhi_b - Mlo))): the rescale arguments are
         * rounded, RN32(m_k - m_(k+1)) <= (1 - u)(m_k - m_(k+1)) (SageP.v) */
        const double lam = mx(0.0, mhi_b - Mlo) > 0.0 ? 1.0 : exp2_dir(up((1.0 - u) * up(mhi_b - Mlo)), MPFR_RNDU, t);
        const double zf = exp2_dir(up(Mlo - mlo_b), MPFR_RNDU, t);          /* >= 1 */
        for (uint32_t j = j0; j < j1; j++) {
            const double wl = dn(z->yl[j] / up(up(Yhi - z->yh[j]) + z->yl[j]));
            const double sl = mx(0.0, dn(Ylo - z->yl[j]));
            double wh = up(z->yh[j] / dn(sl + z->yh[j]));
            if (wh > 1.0) wh = 1.0;
            z->wlo[j] = wl;
            z->whi[j] = wh;
            /* theta: exp2, its argument's rounding, the rescale chain [SAGE-ATT-07] (b) */
            const double zz = up(2.0 * u * up(Mhi - z->slo[j]));
            const double eu = zz <= 1.0 ? up(1.0 + zz) : exp2_dir(zz, MPFR_RNDU, t);
            const double ed = zz <= 1.0 ? dn(1.0 - zz) : exp2_dir(-zz, MPFR_RNDD, t);
            const double th = up(th_hi0 * eu), tl = dn(th_lo0 * ed);
            z->th[j] = th;
            z->A[j] = mx(up(up(th * fp_hi) - 1.0), up(1.0 - dn(tl * fp_lo)));
            z->B[j] = mx(up(up(th * pl_hi) - 1.0), up(1.0 - dn(tl * pl_lo)));
            SB = up(SB + up(wh * z->B[j]));
            /* P~ in the final frame, its exponent's bound, and whether it is surely 0 */
            const double pt = up(448.0 * up(fp_hi * up(th * z->yh[j])));
            z->Pf[j] = up(G * up(pt + 0x1p-10 * lam));
            z->Pe[j] = mx(z->Pf[j], up(G * up(lam * 0x1p-6)));
            z->zt[j] = up(up(448.0 * up(up(1.0 + u) * up(th * z->yh[j]))) * zf) <= 0x1p-10 ? 1.0 : 0.0;
        }
    }
    /* Exact attention on the unquantized inputs: t* = tau log2(e) q.k. */
    double T0 = -INFINITY;
    const double tl0 = dn((double)a->tau * L[0]), th0 = up((double)a->tau * L[1]);
    for (uint32_t j = 0; j < nv; j++) {
        double lo = 0.0, hi = 0.0;
        for (uint32_t c = 0; c < d; c++) {
            const double p = (double)q[(uint64_t)i * d + c] * k[(uint64_t)j * d + c];   /* exact */
            lo = dn(lo + p);
            hi = up(hi + p);
        }
        imul(&z->tlo[j], &z->thi[j], tl0, th0, lo, hi);
        T0 = mx(T0, z->tlo[j]);
    }
    double Dlo, Dhi;
    weights(z->xl, z->xh, &Dlo, &Dhi, z->tlo, z->thi, nv, T0, t);
    /* Y = sum of the kernel-frame weights 2^(s' - M') >= 1 (the maximum's own
     * weight) and >= sum of 2^(slo - Mhi): the absolute terms are divided by it. */
    const double Ymin = mx(1.0, dn(Ylo * exp2_dir(dn(Mlo - Mhi), MPFR_RNDD, t)));
    const double absl = up(up(G * up((double)nv * 0x1p-124)) / Ymin);
    const double den = dn(dn(1.0 - SB) - absl);
    const double g3 = up(pow_up(u, 3u) - 1.0);
    const double zmax = up(0x1p-10 / 448.0);
    const double hb = ldexp(1.0, 1 - (int)cls->bits), hp = up(33.0 * ldexp(1.0, -(int)cls->frac));
    for (uint32_t c = 0; c < d; c++) {
        double qlo = 0.0, qhi = 0.0, SA = 0.0, SZ = 0.0, Sab = 0.0, nlo = 0.0, nhi = 0.0;
        double S = 0.0, Ea = 0.0, Sb = 0.0, Eb = 0.0;
        const double vs = w->vsc[c];
        for (uint32_t g = 0; 32u * g < nv; g++) {
            double Tg = 0.0, Xg = 0.0;
            const uint32_t j1 = 32u * g + 32u < nv ? 32u * g + 32u : nv;
            for (uint32_t j = 32u * g; j < j1; j++) {
                const double cv = w->vq[(uint64_t)j * d + c], V = vs * cv;      /* exact */
                const double aV = fabs(V);
                /* quantized attention with the ideal weights */
                if (V >= 0) {
                    qlo = dn(qlo + dn(z->wlo[j] * V));
                    qhi = up(qhi + up(z->whi[j] * V));
                } else {
                    qlo = dn(qlo + dn(z->whi[j] * V));
                    qhi = up(qhi + up(z->wlo[j] * V));
                }
                SA = up(SA + up(z->whi[j] * up(z->A[j] * aV)));
                const double zeta = fmin(zmax, up(fp_hi * up(z->th[j] * z->yh[j])));
                SZ = up(SZ + up(up(G * zeta) * aV));
                Sab = up(Sab + aV);
                /* exact attention's numerator */
                const double x = v[(uint64_t)j * d + c];
                if (x >= 0) {
                    nlo = dn(nlo + dn(z->xl[j] * x));
                    nhi = up(nhi + up(z->xh[j] * x));
                } else {
                    nlo = dn(nlo + dn(z->xh[j] * x));
                    nhi = up(nhi + up(z->xl[j] * x));
                }
                /* the accumulator's terms [SAGE-ACC-06] */
                if (cv != 0.0 && z->zt[j] == 0.0) {
                    int e;
                    frexp(cv, &e);                                  /* |cv| in [2^(e-1), 2^e) */
                    const double ev = ldexp(1.0, e - 1 > -6 ? e - 1 : -6);
                    Tg = up(Tg + up(z->Pf[j] * fabs(cv)));
                    Xg = mx(Xg, up(2.0 * up(z->Pe[j] * ev)));
                }
            }
            const double h = mx(up(S + Ea), Xg);
            const double cut = up(hp * h);
            const double err = up(cut + up(hb * up(up(up(S + Ea) + Tg) + cut)));
            S = up(S + Tg);
            Ea = up(Ea + err);
            const uint32_t b = g / 2u;
            const int endb = g % 2u == 1u || j1 == nv;
            if (a->buffer != 0u && endb && ((b + 1u) * BK % a->buffer == 0u || b + 1u == nb)) {
                Eb = up(up(Eb + Ea) + up(u * up(up(Sb + Eb) + up(S + Ea))));
                Sb = up(Sb + S);
                S = 0.0;
                Ea = 0.0;
            }
        }
        const double Ecode = up(Eb + Ea);
        const double Eacc = up(Ecode * up(vs / 448.0));
        const double Oabs = mx(fabs(qlo), fabs(qhi));
        const double absn = up(G * up(0x1p-124 * Sab));
        const double abs_all = up(up(up(SZ + Eacc) + absn) / Ymin);
        double T = INFINITY;
        if (den > 0.0) T = up(up(up(SA + abs_all) + up(Oabs * up(SB + absl))) / den);
        const double rlo = nlo >= 0 ? dn(nlo / Dhi) : dn(nlo / Dlo);
        const double rhi = nhi >= 0 ? up(nhi / Dlo) : up(nhi / Dhi);
        const double B1 = mx(0.0, mx(up(qhi - rlo), up(rhi - qlo)));
        out[c].ref_lo = rlo;
        out[c].ref_hi = rhi;
        out[c].bound = up(up(up(B1 + T) + up(g3 * up(Oabs + T))) + 0x1p-148);
    }
}

kvq_status kvq_exact_sage_attn_bound(kvq_sage_attn_bound *out, const float *q, const float *k,
                                     const float *v, const kvq_sage_attn *a, const uint32_t *rows,
                                     uint32_t nrows, const kvq_sage_attn_class *cls)
{
    if (!out || !q || !k || !v || !a || !rows || !cls || nrows == 0u || !kvq_sage_attn_ok(a) ||
        !(cls->eps_exp >= 0.0 && cls->eps_exp <= 0x1p-8) ||
        cls->frac < 4u || cls->frac > 60u || cls->bits < 4u || cls->bits > 60u)
        return KVQ_E_PARAM;
    for (uint32_t r = 0; r < nrows; r++)
        if (rows[r] >= a->nq) return KVQ_E_PARAM;
    xwork w;
    kvq_status st = xprepare(&w, q, k, v, a);
    xrow z;
    double *mem = st == KVQ_OK ? malloc((size_t)XROW_N * a->nk * sizeof(double)) : NULL;
    kvq_sage_attn_bound *res = st == KVQ_OK ? malloc((size_t)nrows * a->dim * sizeof *res) : NULL;
    if (st == KVQ_OK && (!mem || !res)) st = KVQ_E_NOMEM;
    if (st == KVQ_OK) {
        double *p[XROW_N];
        for (int n = 0; n < XROW_N; n++) p[n] = mem + (size_t)n * a->nk;
        z = (xrow){p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7], p[8], p[9], p[10], p[11], p[12], p[13], p[14], p[15]};
        mpfr_t t, l2;
        mpfr_inits2(53, t, l2, (mpfr_ptr)0);
        double L[2];                                   /* log2(e) = 1/ln 2, enclosed */
        mpfr_const_log2(l2, MPFR_RNDU);
        mpfr_ui_div(t, 1u, l2, MPFR_RNDD);
        L[0] = mpfr_get_d(t, MPFR_RNDD);
        mpfr_const_log2(l2, MPFR_RNDD);
        mpfr_ui_div(t, 1u, l2, MPFR_RNDU);
        L[1] = mpfr_get_d(t, MPFR_RNDU);
        for (uint32_t r = 0; r < nrows; r++)
            row_bound(res + (uint64_t)r * a->dim, &w, &z, q, k, v, a, rows[r], cls, L, t);
        mpfr_clears(t, l2, (mpfr_ptr)0);
        memcpy(out, res, (size_t)nrows * a->dim * sizeof *res);
    }
    free(res);
    free(mem);
    xwork_free(&w);
    return st;
}

uint64_t kvq_exact_sage_attn_judge(double *worst, const float *o, const kvq_sage_attn_bound *b, uint64_t n)
{
    uint64_t bad = 0;
    double wr = 0.0;
    for (uint64_t e = 0; e < n; e++) {
        const double x = o[e];
        if (!isfinite(x)) {
            bad++;
            wr = INFINITY;
            continue;
        }
        const double dist = mx(0.0, mx(dn(x - b[e].ref_hi), dn(b[e].ref_lo - x)));
        if (dist > b[e].bound) bad++;
        const double r = b[e].bound > 0.0 ? dist / b[e].bound : (dist > 0.0 ? INFINITY : 0.0);
        if (r > wr) wr = r;
    }
    if (worst) *worst = wr;
    return bad;
}

/* ---- several heads, inputs of a named format [SAGE-MHA-01..04] ---------------- */

int kvq_exact_sage_in_exact(float x, uint32_t fmt)
{
    /* precision p, least normal exponent emin, largest exponent emax */
    static const int P[KVQ_SAGE_IN_FORMATS] = { 24, 11, 8 }, EMIN[KVQ_SAGE_IN_FORMATS] = { -126, -14, -126 },
                     EMAX[KVQ_SAGE_IN_FORMATS] = { 127, 15, 127 };
    if (fmt >= KVQ_SAGE_IN_FORMATS) return 0;
    if (!isfinite(x) || x == 0.0f) return 1;
    mpfr_t t;
    mpfr_init2(t, 64);
    mpfr_set_flt(t, x, MPFR_RNDN);                 /* exact */
    const long E = (long)mpfr_get_exp(t) - 1;      /* |x| = 1.f 2^E */
    /* the bits a value of the format may carry: down to 2^(max(E, emin) - p + 1) */
    const long q = (E < EMIN[fmt] ? EMIN[fmt] : E) - P[fmt] + 1;
    mpfr_mul_2si(t, t, -q, MPFR_RNDN);             /* exact: a power of two */
    const int ok = E <= EMAX[fmt] && mpfr_integer_p(t);
    mpfr_clear(t);
    return ok;
}

kvq_status kvq_exact_sage_mha_bound(kvq_sage_attn_bound *out, const float *q, const float *k,
                                    const float *v, const kvq_sage_attn *a, uint32_t hq, uint32_t hkv,
                                    uint32_t in_fmt, const kvq_sage_attn_class *cls)
{
    if (!out || !q || !k || !v || !a || !cls || !kvq_sage_attn_ok(a) || !kvq_sage_mha_ok(hq, hkv, in_fmt))
        return KVQ_E_PARAM;
    const uint64_t qe = (uint64_t)a->nq * a->dim, ke = (uint64_t)a->nk * a->dim;
    for (uint64_t e = 0; e < hq * qe; e++)
        if (!kvq_exact_sage_in_exact(q[e], in_fmt)) return KVQ_E_PARAM;
    for (uint64_t e = 0; e < hkv * ke; e++)
        if (!kvq_exact_sage_in_exact(k[e], in_fmt) || !kvq_exact_sage_in_exact(v[e], in_fmt)) return KVQ_E_PARAM;
    uint32_t *rows = malloc((size_t)a->nq * sizeof *rows);
    kvq_sage_attn_bound *res = malloc((size_t)(hq * qe) * sizeof *res);
    kvq_status st = rows && res ? KVQ_OK : KVQ_E_NOMEM;
    for (uint32_t i = 0; st == KVQ_OK && i < a->nq; i++) rows[i] = i;
    for (uint32_t h = 0; st == KVQ_OK && h < hq; h++) {
        const uint32_t g = h / (hq / hkv);         /* [SAGE-MHA-01] */
        st = kvq_exact_sage_attn_bound(res + h * qe, q + h * qe, k + g * ke, v + g * ke, a, rows, a->nq, cls);
    }
    if (st == KVQ_OK) memcpy(out, res, (size_t)(hq * qe) * sizeof *res);
    free(rows);
    free(res);
    return st;
}
