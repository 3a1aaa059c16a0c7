/*
 * sage.c -- SAGE (SageAttention2) quantizers, exact path (GNU MPFR), spec/sage.md.
 *
 * Each pinned binary32 operation of the spec is evaluated exactly (KVQ_XPREC
 * bits: a sum, difference or product of two binary32 values, or of a binary32
 * value and a partial sum below 2^128, is exact there) and rounded once onto
 * the binary32 grid; divisions are correctly rounded straight from the exact
 * quotient (a 24-bit MPFR quotient where the result is normal, else
 * kvq_exact_div_round).  FP8 codes come from the exact FP8 module.
 * The metrics' pinned binary64 sequence is evaluated the same way on the
 * binary64 grid; their real values are enclosed from exact sums.
 *
 * Independent of ref/fast/sage.c where it can be: the Q/K groups are gathered
 * token by token through the forward map (kvq_sage_scale_slot) into a scratch
 * array of slot maxima, the fast path walks each slot's tokens through the
 * inverse map.  Every lemma of the spec is checked on the values computed
 * here; a failed lemma sets its bit in *lemmas.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "kvq_exact_sage.h"
#include "xscratch.h"

#define F32_MIN_NORMAL 0x1p-126f

/* binary64 as a grid [POL-FMT-01]: smallest subnormal 2^-1074, overflow at 2^1024. */
static const kvq_xfmt xfmt_binary64 = { 53, -1073, 1024 };

/* Precision of the enclosures and bounds of [SAGE-MET-04]. */
#define ENCL_PREC 256

static void fail(const char *what)
{
    fprintf(stderr, "kvq exact sage: internal error: %s\n", what);
    abort();
}

static int all_finite(const float *x, uint64_t len)
{
    for (uint64_t e = 0; e < len; e++)
        if (!isfinite(x[e])) return 0;
    return 1;
}

/* 1 iff every one of the len values has |x| <= bound (exact comparisons). */
static int all_within(const float *x, uint64_t len, float bound)
{
    for (uint64_t e = 0; e < len; e++)
        if (fabsf(x[e]) > bound) return 0;
    return 1;
}

/* t = RN32(t) in place; returns the value.  *ov is set on overflow.  When
 * 2^-126 <= |t| < 2^128 the binary32 grid is the 24-bit grid, so one rounding
 * into a 24-bit variable (on the stack: no allocation in the inner loops) is
 * RN32; every other value, and a result that rounds up to 2^128, goes through
 * kvq_exact_round, the grid with its subnormals and overflow [POL-FMT-01]. */
static float rn32(mpfr_t t, int *ov)
{
    if (!mpfr_zero_p(t) && mpfr_get_exp(t) >= -125 && mpfr_get_exp(t) <= 128) {
        MPFR_DECL_INIT(r, 24);
        mpfr_set(r, t, MPFR_RNDN);                /* one rounding to nearest even */
        if (mpfr_get_exp(r) <= 128) {
            mpfr_set(t, r, MPFR_RNDN);            /* exact */
            return mpfr_get_flt(r, MPFR_RNDN);    /* exact: on the grid */
        }
    }
    if (kvq_exact_round(t, t, &kvq_xfmt_binary32)) *ov = 1;
    return mpfr_get_flt(t, MPFR_RNDN); /* exact: on the grid */
}

/* RN32(a op b) for op in {+, -, *}, from the exact result. */
static float add32(float a, float b, int *ov, kvq_xscratch *w)
{
    mpfr_set_flt(w->a, a, MPFR_RNDN);
    mpfr_set_flt(w->b, b, MPFR_RNDN);
    if (mpfr_add(w->c, w->a, w->b, MPFR_RNDN) != 0) fail("inexact sum");
    return rn32(w->c, ov);
}

static float sub32(float a, float b, int *ov, kvq_xscratch *w)
{
    mpfr_set_flt(w->a, a, MPFR_RNDN);
    mpfr_set_flt(w->b, b, MPFR_RNDN);
    if (mpfr_sub(w->c, w->a, w->b, MPFR_RNDN) != 0) fail("inexact difference");
    return rn32(w->c, ov);
}

static float mul32(float a, float b, int *ov, kvq_xscratch *w)
{
    mpfr_set_flt(w->a, a, MPFR_RNDN);
    mpfr_set_flt(w->b, b, MPFR_RNDN);
    if (mpfr_mul(w->c, w->a, w->b, MPFR_RNDN) != 0) fail("inexact product");
    return rn32(w->c, ov);
}

/* RN32(a / b), b != 0, correctly rounded from the exact quotient.  A 24-bit
 * correctly rounded quotient of magnitude in [2^-126, 2^128) is RN32 (an exact
 * quotient just below 2^-126 that rounds up to it at 24 bits is within 2^-151
 * of it, so the subnormal grid rounds it there too); anything else goes
 * through kvq_exact_div_round. */
static float div32(float a, float b, int *ov, kvq_xscratch *w)
{
    MPFR_DECL_INIT(r, 24);
    MPFR_DECL_INIT(xa, 24);                       /* binary32 operands: exact in 24 bits */
    MPFR_DECL_INIT(xb, 24);
    mpfr_set_flt(xa, a, MPFR_RNDN);
    mpfr_set_flt(xb, b, MPFR_RNDN);
    mpfr_div(r, xa, xb, MPFR_RNDN);
    if (!mpfr_zero_p(r) && mpfr_get_exp(r) >= -125 && mpfr_get_exp(r) <= 128)
        return mpfr_get_flt(r, MPFR_RNDN);        /* exact: on the grid */
    if (kvq_exact_div_round(w->c, xa, xb, &kvq_xfmt_binary32)) *ov = 1;
    return mpfr_get_flt(w->c, MPFR_RNDN);
}

/* |v| <= k * bound, decided exactly (k < 2^28 an integer, bound a binary32
 * value): k * bound has at most 52 significant bits, so it is exact in the
 * binary64 comparison below, as is |v|. */
static int within_k(float v, uint64_t k, float bound)
{
    if (k >= ((uint64_t)1 << 28)) fail("within_k: k too large");
    return fabs((double)v) <= (double)k * (double)bound;
}

/* ---- smoothing [SAGE-SM-01..06] ----------------------------------------- */

kvq_status kvq_exact_sage_smooth(float *xs, float *mean, uint32_t *lemmas, const float *x,
                                 const kvq_sage_shape *shape, uint32_t seg)
{
    uint32_t N, d, R, lem = 0;
    uint64_t n_el;
    kvq_xscratch w;
    if (xs == NULL || mean == NULL || x == NULL || shape == NULL) return KVQ_E_PARAM;
    if (seg < 1u || seg > KVQ_SAGE_MAX_TOKENS) return KVQ_E_PARAM;
    if (!kvq_sage_shape_ok(shape)) return KVQ_E_SHAPE;
    n_el = kvq_sage_elems(shape);
    if (!all_finite(x, n_el)) return KVQ_E_NONFINITE;
    if (!all_within(x, n_el, KVQ_SAGE_SMOOTH_MAX)) return KVQ_E_PARAM;
    N = shape->tokens;
    d = shape->dim;
    R = kvq_sage_mean_rows(N, seg);
    kvq_xs_init(&w);
    for (uint32_t r = 0; r < R; r++) {
        uint32_t t0 = r * seg, k = N - t0 < seg ? N - t0 : seg;
        for (uint32_t c = 0; c < d; c++) {
            float M = 0.0f, a, m;
            int ov = 0;
            for (uint32_t j = 0; j < k; j++) {                 /* M of [SAGE-LEM-01] */
                float v = fabsf(x[(uint64_t)(t0 + j) * d + c]);
                if (v > M) M = v;
            }
            a = x[(uint64_t)t0 * d + c];
            for (uint32_t j = 1; j < k; j++) {
                a = add32(a, x[(uint64_t)(t0 + j) * d + c], &ov, &w); /* RN32(a + x) */
                if (!within_k(a, 3u * (uint64_t)(j + 1u), M)) lem |= KVQ_SAGE_LEM_SMOOTH;
            }
            m = div32(a, (float)k, &ov, &w);                   /* RN32(a / k) */
            if (ov || !within_k(m, 3u, M)) lem |= KVQ_SAGE_LEM_SMOOTH;
            mean[(uint64_t)r * d + c] = m;
            for (uint32_t j = 0; j < k; j++) {
                uint64_t e = (uint64_t)(t0 + j) * d + c;
                float v = sub32(x[e], m, &ov, &w);             /* RN32(x - mean) */
                if (ov || !within_k(v, 4u, M) || fabsf(v) > 0x1p50f)
                    lem |= KVQ_SAGE_LEM_SMOOTH;
                xs[e] = v;
            }
        }
    }
    kvq_xs_clear(&w);
    if (lemmas != NULL) *lemmas = lem;
    return KVQ_OK;
}

/* ---- dS [SAGE-DS-01..02] ------------------------------------------------- */

kvq_status kvq_exact_sage_delta_s(float *ds, uint32_t *lemmas, const float *qm, const float *ks,
                                  uint32_t rows, const kvq_sage_shape *kshape, float tau)
{
    uint32_t N, d, lem = 0;
    kvq_xscratch w;
    if (ds == NULL || qm == NULL || ks == NULL || kshape == NULL) return KVQ_E_PARAM;
    if (rows < 1u || rows > KVQ_SAGE_MAX_ROWCOL) return KVQ_E_PARAM;
    if ((uint64_t)rows * kshape->tokens > ((uint64_t)1 << 32)) return KVQ_E_PARAM;
    if (!kvq_sage_shape_ok(kshape)) return KVQ_E_SHAPE;
    N = kshape->tokens;
    d = kshape->dim;
    if (!isfinite(tau) || !all_finite(qm, (uint64_t)rows * d) || !all_finite(ks, kvq_sage_elems(kshape)))
        return KVQ_E_NONFINITE;
    if (!(tau >= KVQ_SAGE_TAU_MIN && tau <= KVQ_SAGE_TAU_MAX)) return KVQ_E_PARAM;
    if (!all_within(qm, (uint64_t)rows * d, KVQ_SAGE_DS_MAX) ||
        !all_within(ks, kvq_sage_elems(kshape), KVQ_SAGE_DS_MAX))
        return KVQ_E_PARAM;
    kvq_xs_init(&w);
    for (uint32_t r = 0; r < rows; r++) {
        const float *q = qm + (uint64_t)r * d;
        for (uint32_t j = 0; j < N; j++) {
            const float *k = ks + (uint64_t)j * d;
            int ov = 0;
            float a = mul32(q[0], k[0], &ov, &w), v;
            for (uint32_t c = 1; c < d; c++) {
                a = add32(a, mul32(q[c], k[c], &ov, &w), &ov, &w);
                if (fabsf(a) >= 0x1p110f) lem |= KVQ_SAGE_LEM_DS;  /* [SAGE-LEM-02] */
            }
            v = mul32(a, tau, &ov, &w);
            if (ov) lem |= KVQ_SAGE_LEM_DS;
            ds[(uint64_t)r * N + j] = v;
        }
    }
    kvq_xs_clear(&w);
    if (lemmas != NULL) *lemmas = lem;
    return KVQ_OK;
}

/* ---- Q/K quantizer [SAGE-Q-01..07] -------------------------------------- */

/* The code of x against scale s > 0 and the lemmas it meets [SAGE-Q-03..05]. */
static int32_t xqk_code(float x, float s, uint32_t bits, uint32_t rounding, uint32_t ties,
                        uint32_t *lem, kvq_xscratch *w)
{
    long cmax = (long)kvq_sage_cmax(bits), k;
    int ov = 0;
    float q = div32(x, s, &ov, w);                           /* RN32(x / s) */
    MPFR_DECL_INIT(xq, 24);                                  /* q: exact in 24 bits */
    if (ov) fail("quotient overflow");
    mpfr_set_flt(xq, q, MPFR_RNDN);
    if (rounding == KVQ_SAGE_ROUND_PUBLIC) {
        /* t = RN32(q +- 1/2), then truncation toward zero. */
        mpfr_set_si_2exp(w->b, q >= 0.0f ? 1 : -1, -1, MPFR_RNDN); /* +-1/2 */
        if (mpfr_add(w->c, xq, w->b, MPFR_RNDN) != 0) fail("inexact q +- 1/2");
        (void)rn32(w->c, &ov);
        mpfr_trunc(w->c, w->c);
        k = mpfr_get_si(w->c, MPFR_RNDN);
        if (k < -cmax || k > cmax) *lem |= KVQ_SAGE_LEM_PUBLIC;     /* [SAGE-LEM-04] */
    } else {
        MPFR_DECL_INIT(xk, 24);                              /* |k| <= 2^8: exact */
        if (ties == KVQ_TIES_AWAY)
            mpfr_round(xk, xq);                                  /* half away from zero */
        else
            mpfr_rint(xk, xq, MPFR_RNDN);                        /* half to even */
        k = mpfr_get_si(xk, MPFR_RNDN);
        /* |q| < cmax + 1/2 (a binary32 value: the comparison is exact) and the
         * unclamped code within [-cmax, cmax] [SAGE-LEM-03]. */
        if (!(fabsf(q) < (float)cmax + 0.5f) || k < -cmax || k > cmax) *lem |= KVQ_SAGE_LEM_PAPER;
    }
    return (int32_t)(k < -cmax ? -cmax : k > cmax ? cmax : k);
}

kvq_status kvq_exact_sage_quantize_qk(uint8_t *codes, float *scale, uint32_t *flags,
                                      uint32_t *lemmas, const float *x,
                                      const kvq_sage_shape *shape, const kvq_sage_qk *qk,
                                      const kvq_policy *pol)
{
    uint32_t N, d, f = 0, lem = 0, bits;
    uint64_t slots;
    long cmax;
    float *smax, *ssc, *sbound;
    kvq_xscratch w;
    mpfr_t p64;
    if (codes == NULL || scale == NULL || x == NULL || shape == NULL || qk == NULL)
        return KVQ_E_PARAM;
    if (kvq_policy_check(pol) != KVQ_OK || !kvq_sage_qk_ok(qk)) return KVQ_E_PARAM;
    if (!kvq_sage_shape_ok(shape)) return KVQ_E_SHAPE;
    if (!all_finite(x, kvq_sage_elems(shape))) return KVQ_E_NONFINITE;
    N = shape->tokens;
    d = shape->dim;
    bits = qk->bits;
    cmax = (long)kvq_sage_cmax(bits);
    slots = kvq_sage_scale_count(shape, qk);
    smax = malloc(slots * sizeof *smax);
    ssc = malloc(slots * sizeof *ssc);
    sbound = malloc(slots * sizeof *sbound);
    if (smax == NULL || ssc == NULL || sbound == NULL) {
        free(smax);
        free(ssc);
        free(sbound);
        return KVQ_E_NOMEM;
    }
    /* Group maxima through the forward map [SAGE-Q-01] [SAGE-MAP-03]; an
     * empty slot keeps 0 [SAGE-L-03]. */
    for (uint64_t s = 0; s < slots; s++) smax[s] = 0.0f;
    for (uint32_t n = 0; n < N; n++) {
        uint64_t s = kvq_sage_scale_slot(qk, n);
        if (s >= slots) fail("slot out of range");
        for (uint32_t c = 0; c < d; c++) {
            float a = fabsf(x[(uint64_t)n * d + c]);
            if (a > smax[s]) smax[s] = a;
        }
    }
    kvq_xs_init(&w);
    for (uint64_t s = 0; s < slots; s++) {
        int ov = 0;
        float sc = div32(smax[s], (float)cmax, &ov, &w);       /* RN32(m / cmax) [SAGE-Q-02] */
        if (qk->rounding == KVQ_SAGE_ROUND_PUBLIC) {
            sc = add32(sc, KVQ_SAGE_PUBLIC_EPS, &ov, &w);       /* [SAGE-Q-05] */
            if (!(sc >= KVQ_SAGE_PUBLIC_EPS)) lem |= KVQ_SAGE_LEM_PUBLIC;
        } else if (sc < F32_MIN_NORMAL) {
            sc = 0.0f;                                         /* [SAGE-Q-04] [POL-ZR-01] */
        }
        if (ov) fail("scale overflow");
        if (sc == 0.0f) f |= KVQ_FLAG_ZERO_SCALE;
        ssc[s] = sc;
        /* The bound of [SAGE-LEM-07], (m + 2^-16)(1 + 2^-22), rounded DOWN to
         * binary32: a binary32 |y| is <= the bound iff it is <= this value. */
        mpfr_set_flt(w.a, smax[s], MPFR_RNDN);
        mpfr_set_ui_2exp(w.b, 1, -16, MPFR_RNDN);
        if (mpfr_add(w.a, w.a, w.b, MPFR_RNDN) != 0) fail("inexact bound");
        mpfr_set_ui_2exp(w.b, (1ul << 22) + 1ul, -22, MPFR_RNDN);
        if (mpfr_mul(w.a, w.a, w.b, MPFR_RNDN) != 0) fail("inexact bound");
        sbound[s] = mpfr_get_flt(w.a, MPFR_RNDD);
    }
    mpfr_init2(p64, 64);
    for (uint32_t n = 0; n < N; n++) {
        uint64_t s = kvq_sage_scale_slot(qk, n);
        float sc = ssc[s], m = smax[s];
        for (uint32_t c = 0; c < d; c++) {
            uint64_t e = (uint64_t)n * d + c;
            int32_t k = sc == 0.0f ? 0 : xqk_code(x[e], sc, bits, qk->rounding, pol->ties, &lem, &w);
            if (sc > 0.0f && qk->rounding == KVQ_SAGE_ROUND_PAPER && fabsf(x[e]) == m &&
                k != (signbit(x[e]) ? -cmax : cmax))
                lem |= KVQ_SAGE_LEM_PAPER;                     /* the maximum gets +-cmax */
            if (sc > 0.0f && m <= 0x1p127f) {
                /* [SAGE-LEM-07]: RN32(k s) finite, |y| <= (m + 2^-16)(1 + 2^-22);
                 * k s has at most 31 significant bits: exact at 64. */
                int ovy = 0;
                float y;
                mpfr_set_si(p64, k, MPFR_RNDN);
                mpfr_set_flt(w.b, sc, MPFR_RNDN);
                if (mpfr_mul(p64, p64, w.b, MPFR_RNDN) != 0) fail("inexact k s");
                y = rn32(p64, &ovy);
                if (ovy || !(fabsf(y) <= sbound[s])) lem |= KVQ_SAGE_LEM_DEQ;
            }
            kvq_sage_pack_code(codes, e, bits, k);
        }
    }
    mpfr_clear(p64);
    kvq_xs_clear(&w);
    for (uint64_t s = 0; s < slots; s++) scale[s] = ssc[s];
    free(smax);
    free(ssc);
    free(sbound);
    if (flags != NULL) *flags = f;
    if (lemmas != NULL) *lemmas = lem;
    return KVQ_OK;
}

kvq_status kvq_exact_sage_dequantize_qk(float *y, const uint8_t *codes, const float *scale,
                                        const kvq_sage_shape *shape, const kvq_sage_qk *qk)
{
    uint32_t N, d;
    uint64_t slots;
    kvq_xscratch w;
    if (y == NULL || codes == NULL || scale == NULL || shape == NULL || qk == NULL)
        return KVQ_E_PARAM;
    if (!kvq_sage_qk_ok(qk)) return KVQ_E_PARAM;
    if (!kvq_sage_shape_ok(shape)) return KVQ_E_SHAPE;
    slots = kvq_sage_scale_count(shape, qk);
    for (uint64_t s = 0; s < slots; s++) {
        float v = scale[s];
        if (!isfinite(v)) return KVQ_E_NONFINITE;
        if (v < 0.0f || (v != 0.0f && v < F32_MIN_NORMAL)) return KVQ_E_PARAM;
    }
    N = shape->tokens;
    d = shape->dim;
    kvq_xs_init(&w);
    /* k s: at most 8 + 24 significant bits, exact in the 64-bit w.a..w.c. */
    mpfr_set_prec(w.a, 64);
    mpfr_set_prec(w.b, 64);
    mpfr_set_prec(w.c, 64);
    for (int pass = 0; pass < 2; pass++) {                     /* decide overflow, then write */
        for (uint32_t n = 0; n < N; n++) {
            float s = scale[kvq_sage_scale_slot(qk, n)];
            for (uint32_t c = 0; c < d; c++) {
                uint64_t e = (uint64_t)n * d + c;
                int ov = 0;
                float v;
                mpfr_set_si(w.a, kvq_sage_unpack_code(codes, e, qk->bits), MPFR_RNDN);
                mpfr_set_flt(w.b, s, MPFR_RNDN);
                if (mpfr_mul(w.c, w.a, w.b, MPFR_RNDN) != 0) fail("inexact k s");
                v = rn32(w.c, &ov);                            /* RN32(k s) [SAGE-Q-08] */
                if (ov) {
                    kvq_xs_clear(&w);
                    return KVQ_E_RANGE;                        /* only in pass 0 */
                }
                if (pass == 1) y[e] = v;
            }
        }
    }
    kvq_xs_clear(&w);
    return KVQ_OK;
}

/* ---- FP8 of P~ and V [SAGE-P-01..04] [SAGE-V-01..04] --------------------- */

/* FP8 code of a binary32 value by the exact FP8 module; *sat set on overflow. */
static uint8_t xfp8(float t, uint32_t fmt, uint32_t overflow, int *sat)
{
    uint32_t fl = 0;
    uint8_t c = fmt == KVQ_SAGE_FP8_E5M2 ? kvq_exact_fp8_e5m2_from_f32(t, overflow, &fl)
                                         : kvq_exact_fp8_e4m3_from_f32(t, overflow, &fl);
    /* Overflow under either policy: a saturation flag, or the non-saturating code. */
    if (fl != 0u) *sat = 1;
    if (fmt == KVQ_SAGE_FP8_E5M2 ? kvq_fp8_e5m2_is_inf(c) || kvq_fp8_e5m2_is_nan(c)
                                 : kvq_fp8_e4m3_is_nan(c))
        *sat = 1;
    return c;
}

/* F (1 + 2^-23) rounded DOWN to binary32: a binary32 |t| is <= F (1 + 2^-23)
 * iff it is <= this value [SAGE-LEM-05]. */
static float f_bound(float F, kvq_xscratch *w)
{
    mpfr_set_flt(w->d, F, MPFR_RNDN);
    mpfr_set_ui_2exp(w->e, (1ul << 23) + 1ul, -23, MPFR_RNDN);
    if (mpfr_mul(w->d, w->d, w->e, MPFR_RNDN) != 0) fail("inexact F bound");
    return mpfr_get_flt(w->d, MPFR_RNDD);
}

kvq_status kvq_exact_sage_quantize_p(uint8_t *codes, float *rowsum, uint32_t *flags,
                                     uint32_t *lemmas, const float *p, uint32_t rows,
                                     uint32_t cols, uint32_t fmt, const kvq_policy *pol)
{
    uint64_t n_el;
    uint32_t lem = 0;
    float F;
    kvq_xscratch w;
    if (codes == NULL || rowsum == NULL || p == NULL) return KVQ_E_PARAM;
    if (kvq_policy_check(pol) != KVQ_OK) return KVQ_E_PARAM;
    if (fmt != KVQ_SAGE_FP8_E4M3 && fmt != KVQ_SAGE_FP8_E5M2) return KVQ_E_PARAM;
    if (rows < 1u || cols < 1u || rows > KVQ_SAGE_MAX_ROWCOL || cols > KVQ_SAGE_MAX_ROWCOL)
        return KVQ_E_SHAPE;
    n_el = (uint64_t)rows * cols;
    if (n_el > ((uint64_t)1 << 32)) return KVQ_E_SHAPE;
    if (!all_finite(p, n_el)) return KVQ_E_NONFINITE;
    for (uint64_t e = 0; e < n_el; e++)
        if (!(p[e] >= 0.0f && p[e] <= 1.0f)) return KVQ_E_PARAM;
    F = kvq_sage_fp8_bound(fmt);
    kvq_xs_init(&w);
    for (uint32_t i = 0; i < rows; i++) {
        const float *pr = p + (uint64_t)i * cols;
        float l = pr[0];
        int ov = 0;
        for (uint32_t j = 0; j < cols; j++) {
            int sat = 0;
            float t = mul32(pr[j], F, &ov, &w);                /* RN32(p F) [SAGE-P-01] */
            if (!(t <= F)) lem |= KVQ_SAGE_LEM_P;              /* [SAGE-LEM-06] */
            codes[(uint64_t)i * cols + j] = xfp8(t, fmt, pol->overflow, &sat);
            if (sat) lem |= KVQ_SAGE_LEM_P;
            if (j > 0) l = add32(l, pr[j], &ov, &w);           /* RN32 [SAGE-P-02] */
        }
        for (uint32_t j = 0; j < cols; j++)
            if (!(l >= pr[j])) lem |= KVQ_SAGE_LEM_P;          /* l >= every p */
        if (ov || !within_k(l, 3u * (uint64_t)cols, 1.0f)) lem |= KVQ_SAGE_LEM_P;
        rowsum[i] = l;
    }
    kvq_xs_clear(&w);
    if (flags != NULL) *flags = 0;
    if (lemmas != NULL) *lemmas = lem;
    return KVQ_OK;
}

kvq_status kvq_exact_sage_quantize_v(uint8_t *codes, float *scale, uint32_t *flags,
                                     uint32_t *lemmas, const float *v,
                                     const kvq_sage_shape *shape, uint32_t fmt,
                                     const kvq_policy *pol)
{
    uint32_t N, d, f = 0, lem = 0;
    float F, fb;
    uint8_t maxcode;
    kvq_xscratch w;
    if (codes == NULL || scale == NULL || v == NULL || shape == NULL) return KVQ_E_PARAM;
    if (kvq_policy_check(pol) != KVQ_OK) return KVQ_E_PARAM;
    if (fmt != KVQ_SAGE_FP8_E4M3 && fmt != KVQ_SAGE_FP8_E5M2) return KVQ_E_PARAM;
    if (!kvq_sage_shape_ok(shape)) return KVQ_E_SHAPE;
    if (!all_finite(v, kvq_sage_elems(shape))) return KVQ_E_NONFINITE;
    N = shape->tokens;
    d = shape->dim;
    F = kvq_sage_fp8_bound(fmt);
    maxcode = fmt == KVQ_SAGE_FP8_E5M2 ? KVQ_FP8_E5M2_MAXCODE : KVQ_FP8_E4M3_MAXCODE;
    kvq_xs_init(&w);
    fb = f_bound(F, &w);
    for (uint32_t c = 0; c < d; c++) {
        float m = 0.0f, s;
        int ov = 0;
        for (uint32_t n = 0; n < N; n++) {
            float a = fabsf(v[(uint64_t)n * d + c]);
            if (a > m) m = a;
        }
        s = div32(m, F, &ov, &w);                              /* RN32(m / F) [SAGE-V-01] */
        if (ov) fail("V scale overflow");
        if (s < F32_MIN_NORMAL) s = 0.0f;                      /* [SAGE-V-03] */
        if (s == 0.0f) f |= KVQ_FLAG_ZERO_SCALE;
        scale[c] = s;
        for (uint32_t n = 0; n < N; n++) {
            uint64_t e = (uint64_t)n * d + c;
            uint8_t code = 0u;
            if (s > 0.0f) {
                int sat = 0;
                float t = div32(v[e], s, &ov, &w);             /* RN32(v / s) [SAGE-V-02] */
                code = xfp8(t, fmt, pol->overflow, &sat);
                if (sat || ov || !(fabsf(t) <= fb)) lem |= KVQ_SAGE_LEM_V; /* [SAGE-LEM-05] */
                if (fabsf(v[e]) == m && code % 128u != maxcode) lem |= KVQ_SAGE_LEM_V;
            }
            codes[e] = code;
        }
    }
    kvq_xs_clear(&w);
    if (flags != NULL) *flags = f;
    if (lemmas != NULL) *lemmas = lem;
    return KVQ_OK;
}

/* ---- metrics [SAGE-MET-01..05] ------------------------------------------- */

/* t = RN64(t) in place, returning the double. */
static double rn64(mpfr_t t)
{
    if (kvq_exact_round(t, t, &xfmt_binary64)) fail("binary64 overflow");
    return mpfr_get_d(t, MPFR_RNDN);                           /* exact: on the grid */
}

/* The pinned binary64 sums of [SAGE-MET-03], each step exact then RN64. */
typedef struct msums {
    double sxy, sxx, syy, so, sd, se;
} msums;

static void pinned_sums(msums *s, const float *o, const float *o2, uint64_t n, kvq_xscratch *w)
{
    double v[6] = { 0, 0, 0, 0, 0, 0 };
    for (uint64_t i = 0; i < n; i++) {
        double a = o[i], b = o2[i], t[6], di, e2;
        /* d_i = RN64(a - b); e2 = RN64(d_i d_i). */
        mpfr_set_d(w->a, a, MPFR_RNDN);
        mpfr_set_d(w->b, b, MPFR_RNDN);
        if (mpfr_sub(w->c, w->a, w->b, MPFR_RNDN) != 0) fail("inexact o - o'");
        di = rn64(w->c);
        mpfr_set_d(w->a, di, MPFR_RNDN);
        if (mpfr_mul(w->c, w->a, w->a, MPFR_RNDN) != 0) fail("inexact d^2");
        e2 = rn64(w->c);
        /* Products of binary32 values: 48 significant bits, exact in binary64
         * (rn64 leaves them unchanged; evaluated here in MPFR all the same). */
        mpfr_set_d(w->a, a, MPFR_RNDN);
        if (mpfr_mul(w->c, w->a, w->b, MPFR_RNDN) != 0) fail("inexact o o'");
        t[0] = rn64(w->c);
        if (mpfr_sqr(w->c, w->a, MPFR_RNDN) != 0) fail("inexact o^2");
        t[1] = rn64(w->c);
        if (mpfr_sqr(w->c, w->b, MPFR_RNDN) != 0) fail("inexact o'^2");
        t[2] = rn64(w->c);
        t[3] = fabs(a);
        t[4] = fabs(di);
        t[5] = e2;
        for (int k = 0; k < 6; k++) {
            if (i == 0) {
                v[k] = t[k];                                   /* from the first term */
                continue;
            }
            mpfr_set_d(w->a, v[k], MPFR_RNDN);
            mpfr_set_d(w->b, t[k], MPFR_RNDN);
            if (mpfr_add(w->c, w->a, w->b, MPFR_RNDN) != 0) fail("inexact binary64 sum");
            v[k] = rn64(w->c);                                 /* RN64(s + t) */
        }
    }
    s->sxy = v[0];
    s->sxx = v[1];
    s->syy = v[2];
    s->so = v[3];
    s->sd = v[4];
    s->se = v[5];
}

/* dst = RN64(a op b) for the final steps. */
static double sqrt64(double a)
{
    MPFR_DECL_INIT(r, 53);
    MPFR_DECL_INIT(x, 53);
    mpfr_set_d(x, a, MPFR_RNDN);
    mpfr_sqrt(r, x, MPFR_RNDN); /* correctly rounded; results >= 2^-149 are normal */
    return mpfr_get_d(r, MPFR_RNDN);
}

static double mul64(double a, double b, kvq_xscratch *w)
{
    mpfr_set_d(w->a, a, MPFR_RNDN);
    mpfr_set_d(w->b, b, MPFR_RNDN);
    if (mpfr_mul(w->c, w->a, w->b, MPFR_RNDN) != 0) fail("inexact binary64 product");
    return rn64(w->c);
}

static double div64(double a, double b, kvq_xscratch *w)
{
    mpfr_set_d(w->a, a, MPFR_RNDN);
    mpfr_set_d(w->b, b, MPFR_RNDN);
    if (kvq_exact_div_round(w->c, w->a, w->b, &xfmt_binary64)) fail("binary64 quotient overflow");
    return mpfr_get_d(w->c, MPFR_RNDN);
}

/* The exact sums of [SAGE-MET-01] at KVQ_XPREC: every term is a multiple of
 * 2^-298 below 2^259 and there are at most 2^32 terms, so the sums span fewer
 * than 600 bits and are exact (checked). */
typedef struct xsums {
    mpfr_t a, x, y, so, sd, se;
} xsums;

static void exact_sums(xsums *s, const float *o, const float *o2, uint64_t n, kvq_xscratch *w)
{
    mpfr_inits2(KVQ_XPREC, s->a, s->x, s->y, s->so, s->sd, s->se, (mpfr_ptr)0);
    mpfr_set_zero(s->a, 1);
    mpfr_set_zero(s->x, 1);
    mpfr_set_zero(s->y, 1);
    mpfr_set_zero(s->so, 1);
    mpfr_set_zero(s->sd, 1);
    mpfr_set_zero(s->se, 1);
    for (uint64_t i = 0; i < n; i++) {
        int inex = 0;
        mpfr_set_flt(w->a, o[i], MPFR_RNDN);
        mpfr_set_flt(w->b, o2[i], MPFR_RNDN);
        inex |= mpfr_mul(w->c, w->a, w->b, MPFR_RNDN);
        inex |= mpfr_add(s->a, s->a, w->c, MPFR_RNDN);
        inex |= mpfr_sqr(w->c, w->a, MPFR_RNDN);
        inex |= mpfr_add(s->x, s->x, w->c, MPFR_RNDN);
        inex |= mpfr_sqr(w->c, w->b, MPFR_RNDN);
        inex |= mpfr_add(s->y, s->y, w->c, MPFR_RNDN);
        inex |= mpfr_abs(w->c, w->a, MPFR_RNDN);
        inex |= mpfr_add(s->so, s->so, w->c, MPFR_RNDN);
        inex |= mpfr_sub(w->d, w->a, w->b, MPFR_RNDN);
        inex |= mpfr_abs(w->c, w->d, MPFR_RNDN);
        inex |= mpfr_add(s->sd, s->sd, w->c, MPFR_RNDN);
        inex |= mpfr_sqr(w->c, w->d, MPFR_RNDN);
        inex |= mpfr_add(s->se, s->se, w->c, MPFR_RNDN);
        if (inex != 0) fail("inexact exact sum");
    }
}

static void exact_sums_clear(xsums *s)
{
    mpfr_clears(s->a, s->x, s->y, s->so, s->sd, s->se, (mpfr_ptr)0);
}

/* The constants of [SAGE-MET-04], each an upper bound (RNDU throughout, with
 * lower bounds of denominators and of subtracted terms). */
typedef struct mbounds {
    mpfr_t g, bc, bl, br;
} mbounds;

static void met_bounds(mbounds *b, uint64_t n)
{
    mpfr_t u, t, v, one_pu, one_mu;
    mpfr_inits2(ENCL_PREC, b->g, b->bc, b->bl, b->br, (mpfr_ptr)0);
    mpfr_inits2(ENCL_PREC, u, t, v, one_pu, one_mu, (mpfr_ptr)0);
    mpfr_set_ui_2exp(u, 1, -53, MPFR_RNDN);                    /* u = 2^-53 */
    mpfr_add_ui(one_pu, u, 1, MPFR_RNDN);                      /* 1 + u, exact */
    mpfr_ui_sub(one_mu, 1, u, MPFR_RNDN);                      /* 1 - u, exact */
    /* g = (n-1)u / (1 - (n-1)u), upward. */
    mpfr_mul_ui(t, u, (unsigned long)(n - 1u), MPFR_RNDN);     /* exact: < 2^32 2^-53 */
    mpfr_ui_sub(v, 1, t, MPFR_RNDD);
    mpfr_div(b->g, t, v, MPFR_RNDU);

    /* den_lo = (1-g)(1-u)^3, downward; A1 = (1+u)/den_lo - 1, upward. */
    {
        mpfr_t den_lo, den_hi, a1, a2;
        mpfr_inits2(ENCL_PREC, den_lo, den_hi, a1, a2, (mpfr_ptr)0);
        mpfr_ui_sub(den_lo, 1, b->g, MPFR_RNDD);
        mpfr_pow_ui(t, one_mu, 3, MPFR_RNDD);
        mpfr_mul(den_lo, den_lo, t, MPFR_RNDD);
        mpfr_div(a1, one_pu, den_lo, MPFR_RNDU);
        mpfr_sub_ui(a1, a1, 1, MPFR_RNDU);
        /* den_hi = (1+g)(1+u)^3, upward; A2 = 1 - (1-u)/den_hi, upward. */
        mpfr_add_ui(den_hi, b->g, 1, MPFR_RNDU);
        mpfr_pow_ui(t, one_pu, 3, MPFR_RNDU);
        mpfr_mul(den_hi, den_hi, t, MPFR_RNDU);
        mpfr_div(a2, one_mu, den_hi, MPFR_RNDD);
        mpfr_ui_sub(a2, 1, a2, MPFR_RNDU);
        /* Bc = max(A1, A2) + g (1+u) / den_lo. */
        mpfr_max(b->bc, a1, a2, MPFR_RNDU);
        mpfr_mul(t, b->g, one_pu, MPFR_RNDU);
        mpfr_div(t, t, den_lo, MPFR_RNDU);
        mpfr_add(b->bc, b->bc, t, MPFR_RNDU);
        /* Bl = max((1+u)^2 (1+g)/(1-g) - 1, 1 - (1-u)^2 (1-g)/(1+g)). */
        mpfr_pow_ui(t, one_pu, 2, MPFR_RNDU);
        mpfr_add_ui(v, b->g, 1, MPFR_RNDU);
        mpfr_mul(a1, t, v, MPFR_RNDU);
        mpfr_ui_sub(v, 1, b->g, MPFR_RNDD);
        mpfr_div(a1, a1, v, MPFR_RNDU);
        mpfr_sub_ui(a1, a1, 1, MPFR_RNDU);
        mpfr_pow_ui(t, one_mu, 2, MPFR_RNDD);
        mpfr_ui_sub(v, 1, b->g, MPFR_RNDD);
        mpfr_mul(a2, t, v, MPFR_RNDD);
        mpfr_add_ui(v, b->g, 1, MPFR_RNDU);
        mpfr_div(a2, a2, v, MPFR_RNDD);
        mpfr_ui_sub(a2, 1, a2, MPFR_RNDU);
        mpfr_max(b->bl, a1, a2, MPFR_RNDU);
        /* Br = max((1+u)^3 sqrt(1+g) - 1, 1 - (1-u)^3 sqrt(1-g)). */
        mpfr_pow_ui(t, one_pu, 3, MPFR_RNDU);
        mpfr_add_ui(v, b->g, 1, MPFR_RNDU);
        mpfr_sqrt(v, v, MPFR_RNDU);
        mpfr_mul(a1, t, v, MPFR_RNDU);
        mpfr_sub_ui(a1, a1, 1, MPFR_RNDU);
        mpfr_pow_ui(t, one_mu, 3, MPFR_RNDD);
        mpfr_ui_sub(v, 1, b->g, MPFR_RNDD);
        mpfr_sqrt(v, v, MPFR_RNDD);
        mpfr_mul(a2, t, v, MPFR_RNDD);
        mpfr_ui_sub(a2, 1, a2, MPFR_RNDU);
        mpfr_max(b->br, a1, a2, MPFR_RNDU);
        mpfr_clears(den_lo, den_hi, a1, a2, (mpfr_ptr)0);
    }
    mpfr_clears(u, t, v, one_pu, one_mu, (mpfr_ptr)0);
}

static void met_bounds_clear(mbounds *b)
{
    mpfr_clears(b->g, b->bc, b->bl, b->br, (mpfr_ptr)0);
}

/* A degenerate metric: every field the exact value. */
static void met_exact(kvq_exact_sage_metric *m, double v)
{
    m->pinned = m->real_lo = m->real_hi = m->fast_lo = m->fast_hi = v;
}

/* Real enclosure [lo, hi] (ENCL_PREC, outward) to binary64 outward, and the
 * fast interval: absolute widening by B (rel == 0) or relative (rel != 0). */
static void met_store(kvq_exact_sage_metric *m, mpfr_t lo, mpfr_t hi, mpfr_t B, int rel)
{
    mpfr_t t;
    mpfr_init2(t, ENCL_PREC);
    m->real_lo = mpfr_get_d(lo, MPFR_RNDD);
    m->real_hi = mpfr_get_d(hi, MPFR_RNDU);
    if (rel) {                                                 /* lo, hi >= 0 */
        mpfr_ui_sub(t, 1, B, MPFR_RNDD);                       /* a lower bound of 1 - B */
        mpfr_mul(t, lo, t, MPFR_RNDD);
        m->fast_lo = mpfr_get_d(t, MPFR_RNDD);
        mpfr_add_ui(t, B, 1, MPFR_RNDU);
        mpfr_mul(t, hi, t, MPFR_RNDU);
        m->fast_hi = mpfr_get_d(t, MPFR_RNDU);
    } else {
        mpfr_sub(t, lo, B, MPFR_RNDD);
        m->fast_lo = mpfr_get_d(t, MPFR_RNDD);
        mpfr_add(t, hi, B, MPFR_RNDU);
        m->fast_hi = mpfr_get_d(t, MPFR_RNDU);
    }
    mpfr_clear(t);
}

kvq_status kvq_exact_sage_metrics(kvq_exact_sage_accuracy *acc, uint32_t *lemmas,
                                  const float *o, const float *o2, uint64_t n)
{
    uint32_t lem = 0;
    msums ps;
    xsums xs;
    mbounds mb;
    kvq_xscratch w;
    mpfr_t lo, hi, t;
    if (acc == NULL || o == NULL || o2 == NULL) return KVQ_E_PARAM;
    if (n < 1u || n > ((uint64_t)1 << 32)) return KVQ_E_SHAPE;
    if (!all_finite(o, n) || !all_finite(o2, n)) return KVQ_E_NONFINITE;
    kvq_xs_init(&w);
    pinned_sums(&ps, o, o2, n, &w);
    exact_sums(&xs, o, o2, n, &w);
    met_bounds(&mb, n);
    mpfr_inits2(ENCL_PREC, lo, hi, t, (mpfr_ptr)0);

    /* [SAGE-LEM-08]: a computed sum is zero iff the real one is. */
    if ((ps.sxx == 0.0) != mpfr_zero_p(xs.x) || (ps.syy == 0.0) != mpfr_zero_p(xs.y) ||
        (ps.so == 0.0) != mpfr_zero_p(xs.so) || (ps.sd == 0.0) != mpfr_zero_p(xs.sd) ||
        (ps.se == 0.0) != mpfr_zero_p(xs.se))
        lem |= KVQ_SAGE_LEM_METRICS;

    /* CosSim [SAGE-MET-01..04]; degenerate cases on the real sums [SAGE-MET-02]. */
    if (mpfr_zero_p(xs.x) && mpfr_zero_p(xs.y)) {
        met_exact(&acc->cos_sim, 1.0);
    } else if (mpfr_zero_p(xs.x) || mpfr_zero_p(xs.y)) {
        met_exact(&acc->cos_sim, 0.0);
    } else {
        mpfr_t dlo, dhi;
        mpfr_inits2(ENCL_PREC, dlo, dhi, (mpfr_ptr)0);
        mpfr_mul(dlo, xs.x, xs.y, MPFR_RNDD);
        mpfr_sqrt(dlo, dlo, MPFR_RNDD);
        mpfr_mul(dhi, xs.x, xs.y, MPFR_RNDU);
        mpfr_sqrt(dhi, dhi, MPFR_RNDU);
        if (mpfr_sgn(xs.a) >= 0) {
            mpfr_div(lo, xs.a, dhi, MPFR_RNDD);
            mpfr_div(hi, xs.a, dlo, MPFR_RNDU);
        } else {
            mpfr_div(lo, xs.a, dlo, MPFR_RNDD);
            mpfr_div(hi, xs.a, dhi, MPFR_RNDU);
        }
        /* The real cosine lies in [-1, 1] (Cauchy-Schwarz): clamp the enclosure. */
        if (mpfr_cmp_si(lo, -1) < 0) mpfr_set_si(lo, -1, MPFR_RNDN);
        if (mpfr_cmp_si(hi, 1) > 0) mpfr_set_si(hi, 1, MPFR_RNDN);
        met_store(&acc->cos_sim, lo, hi, mb.bc, 0);
        mpfr_clears(dlo, dhi, (mpfr_ptr)0);
    }
    /* The pinned value decides the degenerate cases on the computed sums. */
    if (ps.sxx == 0.0 && ps.syy == 0.0)
        acc->cos_sim.pinned = 1.0;
    else if (ps.sxx == 0.0 || ps.syy == 0.0)
        acc->cos_sim.pinned = 0.0;
    else
        acc->cos_sim.pinned = div64(ps.sxy, mul64(sqrt64(ps.sxx), sqrt64(ps.syy), &w), &w);

    /* Relative L1. */
    if (mpfr_zero_p(xs.so)) {
        met_exact(&acc->rel_l1, mpfr_zero_p(xs.sd) ? 0.0 : INFINITY);
    } else {
        mpfr_div(lo, xs.sd, xs.so, MPFR_RNDD);
        mpfr_div(hi, xs.sd, xs.so, MPFR_RNDU);
        met_store(&acc->rel_l1, lo, hi, mb.bl, 1);
    }
    acc->rel_l1.pinned = ps.so == 0.0 ? (ps.sd == 0.0 ? 0.0 : INFINITY) : div64(ps.sd, ps.so, &w);

    /* RMSE. */
    if (mpfr_set_ui(t, (unsigned long)n, MPFR_RNDN) != 0) fail("n"); /* n <= 2^32: exact */
    mpfr_div(lo, xs.se, t, MPFR_RNDD);
    mpfr_sqrt(lo, lo, MPFR_RNDD);
    mpfr_div(hi, xs.se, t, MPFR_RNDU);
    mpfr_sqrt(hi, hi, MPFR_RNDU);
    met_store(&acc->rmse, lo, hi, mb.br, 1);
    acc->rmse.pinned = sqrt64(div64(ps.se, (double)n, &w));

    /* [SAGE-LEM-08]: each pinned value lies in its interval (c). */
    if (!(acc->cos_sim.pinned >= acc->cos_sim.fast_lo && acc->cos_sim.pinned <= acc->cos_sim.fast_hi) ||
        !(acc->rel_l1.pinned >= acc->rel_l1.fast_lo && acc->rel_l1.pinned <= acc->rel_l1.fast_hi) ||
        !(acc->rmse.pinned >= acc->rmse.fast_lo && acc->rmse.pinned <= acc->rmse.fast_hi))
        lem |= KVQ_SAGE_LEM_METRICS;

    mpfr_clears(lo, hi, t, (mpfr_ptr)0);
    met_bounds_clear(&mb);
    exact_sums_clear(&xs);
    kvq_xs_clear(&w);
    if (lemmas != NULL) *lemmas = lem;
    return KVQ_OK;
}
