/*
 * mma.c -- the accumulator models and one channel of P~V, exact path (GNU
 * MPFR), spec/sage.md [SAGE-ACC-01], [SAGE-ACC-05..07].
 *
 * The models' parameters are data (kvq_mma_model, include/kvq_mma.h); their
 * arithmetic is evaluated here with MPFR, independently of the integer
 * emulator of include/kvq_mma.h: every product and term is an exact MPFR
 * value, a cut is mpfr_trunc or mpfr_floor of the term over 2^q, a step's sum
 * is exact, and a result is rounded onto the model's grid (bits significant
 * bits, never finer than 2^-149) by mpfr_trunc or mpfr_rint of its quotient.
 * The bounded level's interval [lo, hi] is the exact sum widened by the
 * bound of the class K(13, 14) [SAGE-ACC-06], evaluated with outward rounding.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kvq_exact_sage.h"
#include "kvq_mma.h"
#include "outward.h"

#define XP 256  /* every term, cut and step sum below is exact at this precision */

typedef struct xmma {
    mpfr_t t[KVQ_MMA_MAX_K + 1], s, u, v;
} xmma;

static void xmma_init(xmma *w)
{
    for (uint32_t i = 0; i <= KVQ_MMA_MAX_K; i++) mpfr_init2(w->t[i], XP);
    mpfr_inits2(XP, w->s, w->u, w->v, (mpfr_ptr)0);
}

static void xmma_clear(xmma *w)
{
    for (uint32_t i = 0; i <= KVQ_MMA_MAX_K; i++) mpfr_clear(w->t[i]);
    mpfr_clears(w->s, w->u, w->v, (mpfr_ptr)0);
}

static void fp8_value(mpfr_t dst, uint8_t c, uint32_t fmt)
{
    if (fmt == KVQ_SAGE_FP8_E4M3) kvq_exact_fp8_e4m3_value(dst, c);
    else kvq_exact_fp8_e5m2_value(dst, c);
}

/* floor(log2 |x|), x != 0 */
static long flog2(const mpfr_t x)
{
    return (long)mpfr_get_exp(x) - 1;
}

/* The binary32 encoding of v rounded onto the grid of `bits` significant bits
 * (quantum 2^max(floor(log2|v|) - bits + 1, -149)), toward zero or to nearest
 * even; an exact zero is +0, whatever the signs of the terms that summed to
 * it; overflow: RNE to infinity, RZ to the largest finite value
 * [SAGE-ACC-01].  Uses w->u. */
static uint32_t to_grid(const mpfr_t v, uint32_t bits, uint32_t round, xmma *w)
{
    if (mpfr_zero_p(v)) return 0u;
    const int neg = mpfr_sgn(v) < 0;
    long lsb = flog2(v) - (long)bits + 1;
    if (lsb < -149) lsb = -149;
    mpfr_div_2si(w->u, v, lsb, MPFR_RNDN);              /* exact */
    if (round == KVQ_MMA_ROUND_RNE) mpfr_rint(w->u, w->u, MPFR_RNDN);
    else mpfr_trunc(w->u, w->u);
    if (mpfr_zero_p(w->u)) return neg ? 0x80000000u : 0u;
    mpfr_mul_2si(w->u, w->u, lsb, MPFR_RNDN);           /* exact */
    if (mpfr_get_exp(w->u) > 128)                       /* |r| >= 2^128 */
        return (neg ? 0x80000000u : 0u) | (round == KVQ_MMA_ROUND_RNE ? 0x7F800000u : 0x7F7FFFFFu);
    const float f = mpfr_get_flt(w->u, MPFR_RNDN);       /* exact: on the binary32 grid */
    uint32_t b;
    memcpy(&b, &f, sizeof b);
    return b;
}

/* IEEE binary32 addition of encodings x and y, to nearest even or toward zero. */
static uint32_t add32(uint32_t x, uint32_t y, uint32_t round, xmma *w)
{
    float fx, fy;
    memcpy(&fx, &x, 4);
    memcpy(&fy, &y, 4);
    mpfr_set_flt(w->v, fx, MPFR_RNDN);
    mpfr_set_flt(w->s, fy, MPFR_RNDN);
    if (mpfr_zero_p(w->v) && mpfr_zero_p(w->s)) return x & y & 0x80000000u;
    mpfr_add(w->v, w->v, w->s, MPFR_RNDN);              /* exact */
    return to_grid(w->v, 24u, round, w);
}

uint32_t kvq_exact_mma_dot(const uint8_t *a, const uint8_t *b, uint32_t K, uint32_t c, uint32_t fmt,
                           const kvq_mma_model *m)
{
    xmma w;
    xmma_init(&w);
    uint32_t acc = m->c_mode == KVQ_MMA_C_LAST ? 0u : c;
    const uint32_t nsteps = (K + m->group - 1u) / m->group;
    const int op = m->align == KVQ_MMA_ALIGN_OPERAND;
    mpfr_t xa, xb;
    mpfr_inits2(16, xa, xb, (mpfr_ptr)0);
    for (uint32_t st = 0; st < nsteps; st++) {
        long ae[KVQ_MMA_MAX_K + 1];
        int has[KVQ_MMA_MAX_K + 1];
        uint32_t nt = 0;
        if (m->c_mode != KVQ_MMA_C_AFTER) {
            float fa;
            memcpy(&fa, &acc, 4);
            mpfr_set_flt(w.t[nt], fa, MPFR_RNDN);
            if (!mpfr_zero_p(w.t[nt])) {
                ae[nt] = flog2(w.t[nt]);
                if (op && ae[nt] < -126) ae[nt] = -126;
                has[nt] = 1;
            } else {
                ae[nt] = -126;
                has[nt] = op;
            }
            nt++;
        }
        for (uint32_t k = 0; k < K; k++) {
            if (m->pairs ? (k / 2u) % nsteps != st : k / m->group != st) continue;
            fp8_value(xa, a[k], fmt);
            fp8_value(xb, b[k], fmt);
            mpfr_mul(w.t[nt], xa, xb, MPFR_RNDN);       /* exact */
            if (!op) {
                has[nt] = !mpfr_zero_p(w.t[nt]);
                ae[nt] = has[nt] ? flog2(w.t[nt]) : 0;
            } else if (mpfr_zero_p(w.t[nt]) && m->zero == KVQ_MMA_ZERO_SKIP) {
                has[nt] = 0;
                ae[nt] = 0;
            } else {
                long ex = mpfr_zero_p(xa) ? -126 : flog2(xa), ey = mpfr_zero_p(xb) ? -126 : flog2(xb);
                if (!mpfr_zero_p(xa) && ex < m->emin) ex = m->emin;
                if (!mpfr_zero_p(xb) && ey < m->emin) ey = m->emin;
                ae[nt] = ex + ey;
                has[nt] = 1;
            }
            nt++;
        }
        int any = 0;
        long emax = 0;
        for (uint32_t i = 0; i < nt; i++)
            if (has[i] && (!any || ae[i] > emax)) {
                emax = ae[i];
                any = 1;
            }
        uint32_t r = 0u;                                   /* every term a zero: +0 */
        if (any) {
            const long q = emax - (long)m->frac;
            mpfr_set_zero(w.s, 1);
            for (uint32_t i = 0; i < nt; i++) {
                mpfr_div_2si(w.v, w.t[i], q, MPFR_RNDN);  /* exact */
                if (m->cut == KVQ_MMA_CUT_FLOOR) mpfr_floor(w.v, w.v);
                else mpfr_trunc(w.v, w.v);
                mpfr_add(w.s, w.s, w.v, MPFR_RNDN);       /* exact: integers below 2^64 */
            }
            mpfr_mul_2si(w.s, w.s, q, MPFR_RNDN);
            mpfr_set(w.v, w.s, MPFR_RNDN);
            r = to_grid(w.v, m->bits, m->round, &w);      /* a zero kept sum: +0 */
        }
        acc = m->c_mode == KVQ_MMA_C_AFTER ? add32(acc, r, m->round, &w) : r;
    }
    if (m->c_mode == KVQ_MMA_C_LAST) acc = add32(acc, c, KVQ_MMA_ROUND_RNE, &w);
    mpfr_clears(xa, xb, (mpfr_ptr)0);
    xmma_clear(&w);
    return acc;
}

/* ---- one channel of P~V [SAGE-ACC-07] ---------------------------------------- */

static int code_finite(uint8_t x, uint32_t fmt)
{
    const uint32_t v = x & 0x7Fu;
    return fmt == KVQ_SAGE_FP8_E4M3 ? v != 0x7Fu : v < 0x7Cu;
}

kvq_status kvq_exact_sage_pv(float *d, float *lo, float *hi, const uint8_t *a, const uint8_t *b, const float *c,
                             uint32_t rows, uint32_t n, uint32_t fmt, uint32_t model, uint32_t buffer)
{
    if (!d || !lo || !hi || !a || !b || !c || fmt > KVQ_SAGE_FP8_E5M2 || model > KVQ_SAGE_PV_MMA_SM90 ||
        (buffer != 0u && buffer != 64u && buffer != 128u))
        return KVQ_E_PARAM;
    if (rows == 0u || rows > KVQ_SAGE_PV_MAX_ROWS || n == 0u || n > KVQ_SAGE_PV_MAX_N) return KVQ_E_SHAPE;
    for (uint32_t r = 0; r < rows; r++)
        if (!isfinite(c[r])) return KVQ_E_NONFINITE;
    for (uint64_t e = 0; e < (uint64_t)rows * n; e++)
        if (!code_finite(a[e], fmt) || !code_finite(b[e], fmt)) return KVQ_E_NONFINITE;
    float *out = malloc((size_t)rows * 3u * sizeof *out);
    if (!out) return KVQ_E_NOMEM;
    const kvq_mma_model m = model == KVQ_SAGE_PV_WGMMA ? kvq_mma_model_wgmma_fp8(fmt) : kvq_mma_model_mma_fp8_sm90();
    const int emin = fmt == KVQ_SAGE_FP8_E4M3 ? -6 : -14;
    const double u = 0x1p-24, hp = 33.0 * 0x1p-13, hb = 0x1p-13;   /* K(13, 14) */
    mpfr_t sum, pa, pb, pr;
    mpfr_init2(sum, 2048);                                 /* exact: c plus 2^16 products */
    mpfr_inits2(16, pa, pb, pr, (mpfr_ptr)0);
    for (uint32_t r = 0; r < rows; r++) {
        const uint8_t *ar = a + (uint64_t)r * n, *br = b + (uint64_t)r * n;
        /* the exact level: the model, instruction by instruction, and the buffer */
        uint32_t acc, buf = 0u;
        memcpy(&acc, &c[r], 4);
        /* the bounded level: the exact sum and the class's bound */
        mpfr_set_flt(sum, c[r], MPFR_RNDN);
        double S = fabs((double)c[r]), Ea = 0.0, Sb = 0.0, Eb = 0.0;
        xmma w;
        xmma_init(&w);
        for (uint32_t k0 = 0; k0 < n; k0 += 32u) {
            uint8_t x[32], y[32];
            double Tg = 0.0, Xg = 0.0;
            for (uint32_t t = 0; t < 32u; t++) {
                x[t] = k0 + t < n ? ar[k0 + t] : 0u;
                y[t] = k0 + t < n ? br[k0 + t] : 0u;
                fp8_value(pa, x[t], fmt);
                fp8_value(pb, y[t], fmt);
                mpfr_mul(pr, pa, pb, MPFR_RNDN);          /* exact: 8 bits */
                mpfr_add(sum, sum, pr, MPFR_RNDN);        /* exact */
                if (!mpfr_zero_p(pr)) {
                    const double p = fabs(mpfr_get_d(pr, MPFR_RNDN));       /* exact */
                    long ex = flog2(pa), ey = flog2(pb);
                    if (ex < emin) ex = emin;
                    if (ey < emin) ey = emin;
                    Tg = kvq_up(Tg + p);
                    const double xe = ldexp(1.0, (int)(ex + ey + 1));
                    if (xe > Xg) Xg = xe;
                }
            }
            acc = kvq_exact_mma_dot(x, y, 32u, acc, fmt, &m);
            /* 2^E of the class, at least 2^-126: a C below 2^-126 off the
             * 2^-139 grid is cut to the grid by the wgmma step, more than the
             * allowance at C's own exponent (SageA.v SAGE_ACC_06_outside) */
            double h = kvq_up(S + Ea) > Xg ? kvq_up(S + Ea) : Xg;
            if (h < 0x1p-126) h = 0x1p-126;
            const double cut = kvq_up(hp * h);
            Ea = kvq_up(Ea + kvq_up(cut + kvq_up(hb * kvq_up(kvq_up(kvq_up(S + Ea) + Tg) + cut))));
            S = kvq_up(S + Tg);
            const uint32_t done = k0 + 32u;
            if (buffer != 0u && (done % buffer == 0u || done >= n)) {
                buf = add32(buf, acc, KVQ_MMA_ROUND_RNE, &w);
                acc = 0u;
                Eb = kvq_up(kvq_up(Eb + Ea) + kvq_up(u * kvq_up(kvq_up(Sb + Eb) + kvq_up(S + Ea))));
                Sb = kvq_up(Sb + S);
                S = 0.0;
                Ea = 0.0;
            }
        }
        xmma_clear(&w);
        const uint32_t res = buffer != 0u ? buf : acc;
        memcpy(&out[r], &res, 4);
        const double B = kvq_up(Eb + Ea);
        const double slo = mpfr_get_d(sum, MPFR_RNDD), shi = mpfr_get_d(sum, MPFR_RNDU);
        const double l = kvq_dn(slo - B), h2 = kvq_up(shi + B);
        out[rows + r] = (float)l > l ? nextafterf((float)l, -INFINITY) : (float)l;
        out[2u * rows + r] = (float)h2 < h2 ? nextafterf((float)h2, INFINITY) : (float)h2;
    }
    mpfr_clears(sum, pa, pb, pr, (mpfr_ptr)0);
    memcpy(d, out, (size_t)rows * sizeof *out);
    memcpy(lo, out + rows, (size_t)rows * sizeof *out);
    memcpy(hi, out + 2u * rows, (size_t)rows * sizeof *out);
    free(out);
    return KVQ_OK;
}
