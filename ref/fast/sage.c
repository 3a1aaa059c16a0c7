/*
 * sage.c -- SAGE (SageAttention2) quantizers, fast path (spec/sage.md).
 *
 * Every float operation below is one IEEE binary32 operation rounded to
 * nearest even (built with -ffp-contract=off -fno-fast-math: no FMA is formed,
 * no reassociation, a division stays a division) [POL-ARITH-01]; the metrics
 * are binary64 by [SAGE-MET-03].  The sequences are the spec's; each comment
 * names the requirement and the rounding that happens there.  No allocation:
 * the Q/K quantizer walks each scale slot's tokens through the layout's
 * inverse map (kvq_sage_slot_token), so it needs no per-slot scratch.
 */
#include <math.h>

#include "kvq_sage.h"

#define F32_MIN_NORMAL 0x1p-126f

/* 1 iff every one of the len values is finite [POL-NF-01]. */
/*@ requires in: \valid_read(x + (0 .. len - 1));
    assigns \nothing;
    ensures def: \result == 1 <==>                                         // [POL-NF-01]
        \forall integer e; 0 <= e < len ==> \is_finite(x[e]);
    ensures bool: \result == 0 || \result == 1;
*/
static int all_finite(const float *x, uint64_t len)
{
    /*@ loop invariant e_range: 0 <= e <= len;
        loop invariant finite: \forall integer j; 0 <= j < e ==> \is_finite(x[j]);
        loop assigns e;
        loop variant len - e;
    */
    for (uint64_t e = 0; e < len; e++)
        if (!isfinite(x[e])) return 0;
    return 1;
}

/* 1 iff every one of the len values has |x| <= bound (finite inputs). */
/*@ requires in: \valid_read(x + (0 .. len - 1)) && kvq_sage_finite(x, len);
    requires bound: \is_finite(bound);
    assigns \nothing;
    ensures def: \result == 1 <==>                                         // [SAGE-L-04]
        \forall integer e; 0 <= e < len ==> \abs(x[e]) <= bound;
    ensures bool: \result == 0 || \result == 1;
*/
static int all_within(const float *x, uint64_t len, float bound)
{
    /*@ loop invariant e_range: 0 <= e <= len;
        loop invariant within: \forall integer j; 0 <= j < e ==> \abs(x[j]) <= bound;
        loop assigns e;
        loop variant len - e;
    */
    for (uint64_t e = 0; e < len; e++)
        if (fabsf(x[e]) > bound) return 0;
    return 1;
}

/* ---- smoothing [SAGE-SM-01..06] ----------------------------------------- */

kvq_status kvq_sage_smooth(float *xs, float *mean, const float *x, const kvq_sage_shape *shape,
                           uint32_t seg)
{
    uint32_t N, d, R;
    uint64_t n_el;
    if (xs == NULL || mean == NULL || x == NULL || shape == NULL) return KVQ_E_PARAM;
    if (seg < 1u || seg > KVQ_SAGE_MAX_TOKENS) return KVQ_E_PARAM;
    if (!kvq_sage_shape_ok(shape)) return KVQ_E_SHAPE;
    n_el = kvq_sage_elems(shape);
    if (!all_finite(x, n_el)) return KVQ_E_NONFINITE;               /* [POL-NF-01] */
    if (!all_within(x, n_el, KVQ_SAGE_SMOOTH_MAX)) return KVQ_E_PARAM; /* [SAGE-L-04] */
    N = shape->tokens;
    d = shape->dim;
    R = kvq_sage_mean_rows(N, seg);
    for (uint32_t r = 0; r < R; r++) {
        uint32_t t0 = r * seg;
        uint32_t k = N - t0 < seg ? N - t0 : seg;                 /* partial last segment [SAGE-L-03] */
        for (uint32_t c = 0; c < d; c++) {
            float a = x[(uint64_t)t0 * d + c];                    /* from the first value, not +0 */
            for (uint32_t j = 1; j < k; j++)
                a = a + x[(uint64_t)(t0 + j) * d + c];            /* RN32 per addition [SAGE-SM-01] */
            /* RN32 of a division by k (exact in binary32, k <= 2^24); |a| < 2^74
             * and |mean| < 3 * 2^48 [SAGE-LEM-01]. */
            mean[(uint64_t)r * d + c] = a / (float)k;
        }
    }
    for (uint32_t n = 0; n < N; n++) {
        const float *m = mean + (uint64_t)(n / seg) * d;
        for (uint32_t c = 0; c < d; c++) {
            uint64_t e = (uint64_t)n * d + c;
            xs[e] = x[e] - m[c];                                  /* RN32 [SAGE-SM-02], |xs| <= 2^50 */
        }
    }
    return KVQ_OK;
}

/* ---- dS [SAGE-DS-01..02] ------------------------------------------------- */

kvq_status kvq_sage_delta_s(float *ds, const float *qm, const float *ks, uint32_t rows,
                            const kvq_sage_shape *kshape, float tau)
{
    uint32_t N, d;
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
        return KVQ_E_PARAM;                                       /* [SAGE-L-04] */
    for (uint32_t r = 0; r < rows; r++) {
        const float *q = qm + (uint64_t)r * d;
        for (uint32_t j = 0; j < N; j++) {
            const float *k = ks + (uint64_t)j * d;
            float a = q[0] * k[0];                                /* RN32 product */
            for (uint32_t c = 1; c < d; c++) {
                float p = q[c] * k[c];                            /* RN32 product (no FMA) */
                a = a + p;                                        /* RN32 addition [SAGE-DS-01] */
            }
            /* |a| < 2^110, tau <= 2^16: finite [SAGE-LEM-02]. */
            ds[(uint64_t)r * N + j] = a * tau;                    /* RN32 */
        }
    }
    return KVQ_OK;
}

/* ---- Q/K quantizer [SAGE-Q-01..07] -------------------------------------- */

/* The stored scale of a group of maximum m [SAGE-Q-02] [SAGE-Q-05]. */
static float qk_scale(float m, uint32_t bits, uint32_t rounding)
{
    float s = m / (float)kvq_sage_cmax(bits);                     /* RN32, a division */
    if (rounding == KVQ_SAGE_ROUND_PUBLIC)
        return s + KVQ_SAGE_PUBLIC_EPS;                           /* RN32; >= 1e-7 [SAGE-LEM-04] */
    return s < F32_MIN_NORMAL ? 0.0f : s;                         /* zero-range rule [POL-ZR-01] */
}

/* clamp(k, -cmax, cmax) [SAGE-Q-03]: symmetric, so INT4 -8 and INT8 -128 are
 * never produced. */
/*@ requires cmax: cmax == 7 || cmax == 127;
    assigns \nothing;
    ensures def: \result == kvq_sage_clamp_l(k, cmax);                     // [SAGE-Q-03]
    ensures range: -cmax <= \result <= cmax;
*/
static int32_t clamp_code(int32_t k, int32_t cmax)
{
    return k < -cmax ? -cmax : k > cmax ? cmax : k;
}

/* The code of x against a stored scale s [SAGE-Q-03..05].  quotient: the
 * caller's x lies in the group of maximum m >= |x| whose stored scale is s,
 * so |x| <= (cmax + 1) s [SAGE-LEM-03..04]; that bounds q and t below. */
/*@ requires finite: \is_finite(x) && \is_finite(s);
    requires scale: s >= 0;
    requires args: (bits == 4 || bits == 8) && (ties == KVQ_TIES_EVEN || ties == KVQ_TIES_AWAY);
    requires quotient: s > 0 ==> \abs(x) <= (kvq_sage_cmax_l(bits) + 1) * s;
    assigns \nothing;
    ensures code_range: -kvq_sage_cmax_l(bits) <= \result <= kvq_sage_cmax_l(bits); // [SAGE-Q-03]
    ensures zero_group: s == 0 ==> \result == 0;                          // [SAGE-Q-04]
    ensures value_paper: rounding != KVQ_SAGE_ROUND_PUBLIC ==>
        \result == kvq_sage_code_paper_l(x, s, bits, ties);              // [SAGE-Q-03]
    ensures value_public: rounding == KVQ_SAGE_ROUND_PUBLIC && s != 0 ==>
        \result == kvq_sage_code_public_l(x, s, bits);                   // [SAGE-Q-05]
*/
static int32_t qk_code(float x, float s, uint32_t bits, uint32_t rounding, uint32_t ties)
{
    int32_t cmax = (int32_t)kvq_sage_cmax(bits), k;
    float q;
    if (s == 0.0f) return 0;                                      /* zero group [SAGE-Q-04] */
    //@ assert s_pos: s > 0;
    q = x / s;                                                    /* RN32; |q| <= cmax (1 + 2^-23) */
    /* q_range, t_range, q_def, t_def: binary32 facts WP's provers do not reach
     * (TRUSTED.md [TR-GOAL-SAGE-FLOAT]); with them WP proves both conversions
     * in range and the code. */
    //@ assert q_range: \is_finite(q) && -128 <= q <= 128;
    //@ assert q_def: q == kvq_sage_quot_l(x, s);
    if (rounding == KVQ_SAGE_ROUND_PUBLIC) {
        float t;
        if (q >= 0.0f) {                                          /* -0 counts as >= 0 */
            //@ assert q_nonneg: q >= 0;
            t = q + 0.5f;                                         /* RN32 */
            //@ assert t_def: t == kvq_rn32_l(q + 0.5);
        } else {
            //@ assert q_neg: q < 0;
            t = q - 0.5f;                                         /* RN32 */
            //@ assert t_def_2: t == kvq_rn32_l(q - 0.5);
        }
        //@ assert t_range: -129 <= t <= 129;
        k = (int32_t)t;                                           /* truncation toward zero */
    } else {
        k = (int32_t)kvq_round_int(q, ties);                      /* [POL-TIE-01..02] */
    }
    /* The clamp never acts [SAGE-LEM-03..04]; it is the spec's, kept. */
    return clamp_code(k, cmax);
}

kvq_status kvq_sage_quantize_qk(uint8_t *codes, float *scale, uint32_t *flags, const float *x,
                                const kvq_sage_shape *shape, const kvq_sage_qk *qk,
                                const kvq_policy *pol)
{
    uint32_t N, d, size, f = 0;
    uint64_t slots;
    if (codes == NULL || scale == NULL || x == NULL || shape == NULL || qk == NULL)
        return KVQ_E_PARAM;
    if (kvq_policy_check(pol) != KVQ_OK || !kvq_sage_qk_ok(qk)) return KVQ_E_PARAM;
    if (!kvq_sage_shape_ok(shape)) return KVQ_E_SHAPE;
    if (!all_finite(x, kvq_sage_elems(shape))) return KVQ_E_NONFINITE;
    N = shape->tokens;
    d = shape->dim;
    slots = kvq_sage_scale_count(shape, qk);
    size = kvq_sage_slot_size(qk);
    for (uint64_t s = 0; s < slots; s++) {
        float m = 0.0f, sc;
        /* Group maximum over the slot's existing tokens, all channels [SAGE-Q-01]:
         * fabsf and comparisons are exact. */
        for (uint32_t k = 0; k < size; k++) {
            uint64_t n = kvq_sage_slot_token(qk, s, k);
            if (n >= N) continue;                                 /* partial tile [SAGE-L-03] */
            for (uint32_t c = 0; c < d; c++) {
                float a = fabsf(x[n * d + c]);
                if (a > m) m = a;
            }
        }
        sc = qk_scale(m, qk->bits, qk->rounding);
        if (sc == 0.0f) f |= KVQ_FLAG_ZERO_SCALE;                 /* [SAGE-Q-04] */
        scale[s] = sc;
        for (uint32_t k = 0; k < size; k++) {
            uint64_t n = kvq_sage_slot_token(qk, s, k);
            if (n >= N) continue;
            for (uint32_t c = 0; c < d; c++) {
                uint64_t e = n * d + c;
                kvq_sage_pack_code(codes, e, qk->bits,
                                   qk_code(x[e], sc, qk->bits, qk->rounding, pol->ties));
            }
        }
    }
    if (flags != NULL) *flags = f;
    return KVQ_OK;
}

/* ---- dequantization [SAGE-Q-08] ------------------------------------------ */

kvq_status kvq_sage_dequantize_qk(float *y, const uint8_t *codes, const float *scale,
                                  const kvq_sage_shape *shape, const kvq_sage_qk *qk)
{
    uint32_t N, d;
    uint64_t slots;
    if (y == NULL || codes == NULL || scale == NULL || shape == NULL || qk == NULL)
        return KVQ_E_PARAM;
    if (!kvq_sage_qk_ok(qk)) return KVQ_E_PARAM;
    if (!kvq_sage_shape_ok(shape)) return KVQ_E_SHAPE;
    slots = kvq_sage_scale_count(shape, qk);
    for (uint64_t s = 0; s < slots; s++) {                        /* slot order */
        float v = scale[s];
        if (!isfinite(v)) return KVQ_E_NONFINITE;
        if (v < 0.0f || (v != 0.0f && v < F32_MIN_NORMAL)) return KVQ_E_PARAM;
    }
    N = shape->tokens;
    d = shape->dim;
    for (uint32_t n = 0; n < N; n++) {                            /* overflow decided first */
        float s = scale[kvq_sage_scale_slot(qk, n)];
        for (uint32_t c = 0; c < d; c++) {
            uint64_t e = (uint64_t)n * d + c;
            if (isinf((float)kvq_sage_unpack_code(codes, e, qk->bits) * s)) return KVQ_E_RANGE;
        }
    }
    for (uint32_t n = 0; n < N; n++) {
        float s = scale[kvq_sage_scale_slot(qk, n)];
        for (uint32_t c = 0; c < d; c++) {
            uint64_t e = (uint64_t)n * d + c;
            y[e] = (float)kvq_sage_unpack_code(codes, e, qk->bits) * s; /* one RN32: k exact */
        }
    }
    return KVQ_OK;
}

/* ---- FP8 of P~ and V [SAGE-P-01..04] [SAGE-V-01..04] --------------------- */

/* FP8 code of a binary32 value by the shared module [POL-FP8-03]. */
/*@ requires flags: \valid(flags);
    requires policy: overflow == KVQ_OVERFLOW_SATURATE || overflow == KVQ_OVERFLOW_NAN;
    assigns *flags;
*/
static uint8_t to_fp8(float t, uint32_t fmt, uint32_t overflow, uint32_t *flags)
{
    /* two returns, not ?: -- its int promotion would convert back to uint8_t
     * (a downcast goal, TRUSTED.md [TR-DOWNCAST]) */
    if (fmt == KVQ_SAGE_FP8_E5M2) return kvq_fp8_e5m2_from_f32(t, overflow, flags);
    return kvq_fp8_e4m3_from_f32(t, overflow, flags);
}

/* The code of v in a channel of stored scale s [SAGE-V-02..03]: 0x00 in a zero
 * channel, without the division. */
/*@ requires flags: \valid(flags);
    requires policy: overflow == KVQ_OVERFLOW_SATURATE || overflow == KVQ_OVERFLOW_NAN;
    requires finite: \is_finite(v) && \is_finite(s) && s >= 0;
    assigns *flags;
    ensures zero_channel: s == 0 ==> \result == 0 && *flags == \old(*flags); // [SAGE-V-03]
*/
static uint8_t v_code(float v, float s, uint32_t fmt, uint32_t overflow, uint32_t *flags)
{
    return s == 0.0f ? 0u : to_fp8(v / s, fmt, overflow, flags);
}

kvq_status kvq_sage_quantize_p(uint8_t *codes, float *rowsum, uint32_t *flags, const float *p,
                               uint32_t rows, uint32_t cols, uint32_t fmt,
                               const kvq_policy *pol)
{
    uint64_t n_el;
    uint32_t f = 0;
    float F;
    if (codes == NULL || rowsum == NULL || p == NULL) return KVQ_E_PARAM;
    if (kvq_policy_check(pol) != KVQ_OK) return KVQ_E_PARAM;
    if (fmt != KVQ_SAGE_FP8_E4M3 && fmt != KVQ_SAGE_FP8_E5M2) return KVQ_E_PARAM;
    if (rows < 1u || cols < 1u || rows > KVQ_SAGE_MAX_ROWCOL || cols > KVQ_SAGE_MAX_ROWCOL)
        return KVQ_E_SHAPE;
    n_el = (uint64_t)rows * cols;
    if (n_el > ((uint64_t)1 << 32)) return KVQ_E_SHAPE;
    if (!all_finite(p, n_el)) return KVQ_E_NONFINITE;
    for (uint64_t e = 0; e < n_el; e++)
        if (!(p[e] >= 0.0f && p[e] <= 1.0f)) return KVQ_E_PARAM;  /* -0 >= 0 holds [SAGE-L-04] */
    F = kvq_sage_fp8_bound(fmt);
    for (uint32_t i = 0; i < rows; i++) {
        const float *pr = p + (uint64_t)i * cols;
        uint8_t *cr = codes + (uint64_t)i * cols;
        float l = pr[0];
        for (uint32_t j = 0; j < cols; j++) {
            /* RN32(p F) in [0, F]: the conversion never overflows [SAGE-LEM-06]. */
            cr[j] = to_fp8(pr[j] * F, fmt, pol->overflow, &f);
            if (j > 0) l = l + pr[j];                             /* RN32 [SAGE-P-02] */
        }
        rowsum[i] = l;
    }
    if (flags != NULL) *flags = f;                                /* 0 [SAGE-FLAG-01] */
    return KVQ_OK;
}

kvq_status kvq_sage_quantize_v(uint8_t *codes, float *scale, uint32_t *flags, const float *v,
                               const kvq_sage_shape *shape, uint32_t fmt, const kvq_policy *pol)
{
    uint32_t N, d, f = 0;
    float F;
    if (codes == NULL || scale == NULL || v == NULL || shape == NULL) return KVQ_E_PARAM;
    if (kvq_policy_check(pol) != KVQ_OK) return KVQ_E_PARAM;
    if (fmt != KVQ_SAGE_FP8_E4M3 && fmt != KVQ_SAGE_FP8_E5M2) return KVQ_E_PARAM;
    if (!kvq_sage_shape_ok(shape)) return KVQ_E_SHAPE;
    if (!all_finite(v, kvq_sage_elems(shape))) return KVQ_E_NONFINITE;
    N = shape->tokens;
    d = shape->dim;
    F = kvq_sage_fp8_bound(fmt);
    for (uint32_t c = 0; c < d; c++) {
        float m = 0.0f, s;
        for (uint32_t n = 0; n < N; n++) {                        /* exact [SAGE-V-01] */
            float a = fabsf(v[(uint64_t)n * d + c]);
            if (a > m) m = a;
        }
        s = m / F;                                                /* RN32, a division */
        if (s < F32_MIN_NORMAL) s = 0.0f;                         /* zero channel [SAGE-V-03] */
        if (s == 0.0f) f |= KVQ_FLAG_ZERO_SCALE;
        scale[c] = s;
        for (uint32_t n = 0; n < N; n++) {
            uint64_t e = (uint64_t)n * d + c;
            /* RN32(v / s), |t| <= F (1 + 2^-23): no overflow [SAGE-LEM-05]. */
            codes[e] = v_code(v[e], s, fmt, pol->overflow, &f);
        }
    }
    if (flags != NULL) *flags = f;
    return KVQ_OK;
}

/* ---- metrics [SAGE-MET-01..05] (binary64) --------------------------------- */

kvq_status kvq_sage_metrics(kvq_sage_accuracy *acc, const float *o, const float *o2, uint64_t n)
{
    double sxy, sxx, syy, so, sd, se, d0;
    if (acc == NULL || o == NULL || o2 == NULL) return KVQ_E_PARAM;
    if (n < 1u || n > ((uint64_t)1 << 32)) return KVQ_E_SHAPE;
    if (!all_finite(o, n) || !all_finite(o2, n)) return KVQ_E_NONFINITE;
    /* First terms: products of binary32 values are exact in binary64. */
    sxy = (double)o[0] * (double)o2[0];
    sxx = (double)o[0] * (double)o[0];
    syy = (double)o2[0] * (double)o2[0];
    so = fabs((double)o[0]);
    d0 = (double)o[0] - (double)o2[0];                           /* RN64 */
    sd = fabs(d0);
    se = d0 * d0;                                                 /* RN64 */
    for (uint64_t i = 1; i < n; i++) {                            /* ascending, RN64 each [SAGE-MET-03] */
        double a = o[i], b = o2[i], di = a - b;
        sxy = sxy + a * b;
        sxx = sxx + a * a;
        syy = syy + b * b;
        so = so + fabs(a);
        sd = sd + fabs(di);
        se = se + di * di;
    }
    /* Zero sums are exactly the real zero sums [SAGE-LEM-08]. */
    if (sxx == 0.0 && syy == 0.0)
        acc->cos_sim = 1.0;                                       /* [SAGE-MET-02] */
    else if (sxx == 0.0 || syy == 0.0)
        acc->cos_sim = 0.0;
    else
        acc->cos_sim = sxy / (sqrt(sxx) * sqrt(syy));             /* sqrt correctly rounded */
    if (so == 0.0)
        acc->rel_l1 = sd == 0.0 ? 0.0 : INFINITY;
    else
        acc->rel_l1 = sd / so;
    acc->rmse = sqrt(se / (double)n);                             /* n <= 2^32: exact in binary64 */
    return KVQ_OK;
}
