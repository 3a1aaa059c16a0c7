/*
 * cert.c -- CERT quantizers, annotations and bounds, exact path (GNU MPFR).
 *
 *  - pinned codes and metadata: the spec's binary32 sequence, each operation
 *    evaluated exactly and rounded once onto the binary32 grid (exact level);
 *  - real codes: clamp(round(u)) of the exact quotient u = (k - z)/sigma with
 *    the ambiguity rule of [CERT-K8-06];
 *  - eta, nu, gamma, Delta: exact reals rounded upward once onto binary32;
 *  - the per-element key bound sigma/2 + gamma compared exactly [CERT-K8-04].
 * Nothing here depends on the host's float unit: floats are only compared,
 * moved in and out of MPFR exactly, or checked for finiteness.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kvq_exact.h"
#include "xscratch.h"

#define F32_MIN_NORMAL 0x1p-126f
#define F16_MIN_NORMAL 0x1p-14f

/* binary16 number test by the exact path's own rounding [CERT-L-02]. */
static int is_f16(float v)
{
    int ov;
    if (!isfinite(v)) return 0;
    return kvq_exact_round_float(v, &kvq_xfmt_binary16, &ov) == v && !ov;
}

static kvq_status check_f16_array(const float *x, uint64_t n)
{
    for (uint64_t e = 0; e < n; e++)
        if (!isfinite(x[e])) return KVQ_E_NONFINITE;
    for (uint64_t e = 0; e < n; e++)
        if (!is_f16(x[e])) return KVQ_E_PARAM;
    return KVQ_OK;
}

/* RN32(a - b), a and b binary16 or binary32 values: no overflow. */
static float sub32(float a, float b, kvq_xscratch *w)
{
    mpfr_set_flt(w->a, a, MPFR_RNDN);
    mpfr_set_flt(w->b, b, MPFR_RNDN);
    mpfr_sub(w->c, w->a, w->b, MPFR_RNDN);        /* exact at KVQ_XPREC */
    (void)kvq_exact_round(w->c, w->c, &kvq_xfmt_binary32);
    return mpfr_get_flt(w->c, MPFR_RNDN);         /* exact: on the grid */
}

/* RN32(a + b). */
static float add32(float a, float b, kvq_xscratch *w)
{
    mpfr_set_flt(w->a, a, MPFR_RNDN);
    mpfr_set_flt(w->b, b, MPFR_RNDN);
    mpfr_add(w->c, w->a, w->b, MPFR_RNDN);        /* exact */
    (void)kvq_exact_round(w->c, w->c, &kvq_xfmt_binary32);
    return mpfr_get_flt(w->c, MPFR_RNDN);
}

/* RN32(a / b), b > 0, from the exact quotient; finite for CERT's operands. */
static float div32(float a, float b, kvq_xscratch *w)
{
    mpfr_set_flt(w->a, a, MPFR_RNDN);
    mpfr_set_flt(w->b, b, MPFR_RNDN);
    (void)kvq_exact_div_round(w->c, w->a, w->b, &kvq_xfmt_binary32);
    return mpfr_get_flt(w->c, MPFR_RNDN);
}

/* RN32(c sigma + z), the pinned reconstruction [CERT-K8-03]; *ov on overflow. */
static float deq32(long code, float s, float z, int *ov, kvq_xscratch *w)
{
    mpfr_set_flt(w->a, s, MPFR_RNDN);
    mpfr_mul_si(w->a, w->a, code, MPFR_RNDN);     /* exact */
    mpfr_set_flt(w->b, z, MPFR_RNDN);
    mpfr_add(w->a, w->a, w->b, MPFR_RNDN);        /* exact */
    *ov = kvq_exact_round(w->a, w->a, &kvq_xfmt_binary32);
    return *ov ? 0.0f : mpfr_get_flt(w->a, MPFR_RNDN);
}

/* RU32(x) for x >= 0 exact in MPFR: the least binary32 value >= x, subnormal
 * grid included; +inf above FLT_MAX. */
static float ru32(const mpfr_t x)
{
    mpfr_t t;
    float r;
    if (mpfr_zero_p(x)) return 0.0f;
    if (mpfr_cmp_ui_2exp(x, 1, -126) < 0) {       /* subnormal grid: quantum 2^-149 */
        mpfr_init2(t, KVQ_XPREC);
        mpfr_mul_2si(t, x, 149, MPFR_RNDN);       /* exact */
        mpfr_ceil(t, t);
        mpfr_div_2si(t, t, 149, MPFR_RNDN);       /* exact */
    } else {
        mpfr_init2(t, 24);
        mpfr_set(t, x, MPFR_RNDU);                /* one upward rounding, 24 bits */
    }
    if (mpfr_get_exp(t) > 128) r = INFINITY;
    else r = mpfr_get_flt(t, MPFR_RNDN);          /* exact */
    mpfr_clear(t);
    return r;
}

/* ---- keys ---------------------------------------------------------------- */

/* Extremes of block-channel (b, c). */
static void key_extremes(float *l, float *u, const float *k, const kvq_cert_shape *sh,
                         uint32_t b, uint32_t c)
{
    float lo = k[kvq_cert_in_index(sh, kvq_cert_block_first(b), c)], hi = lo;
    for (uint32_t i = 1; i < KVQ_CERT_BLOCK; i++) {
        float x = k[kvq_cert_in_index(sh, kvq_cert_block_first(b) + i, c)];
        if (x < lo) lo = x;
        if (x > hi) hi = x;
    }
    *l = lo;
    *u = hi;
}

static long clamp_key(long c, uint32_t *flags)
{
    if (c < KVQ_CERT_KCODE_MIN) {
        *flags |= KVQ_FLAG_CLAMPED;
        return KVQ_CERT_KCODE_MIN;
    }
    if (c > KVQ_CERT_KCODE_MAX) {
        *flags |= KVQ_FLAG_CLAMPED;
        return KVQ_CERT_KCODE_MAX;
    }
    return c;
}

/* Pinned code [CERT-K8-02]: round(RN32(RN32(k - z) / sigma)), clamped. */
static long xkey_pinned(float k, float s, float z, uint32_t ties, uint32_t *flags, kvq_xscratch *w)
{
    float t, qv;
    if (s == 0.0f) return 0;
    t = sub32(k, z, w);
    qv = div32(t, s, w);
    mpfr_set_flt(w->a, qv, MPFR_RNDN);
    if (ties == KVQ_TIES_AWAY)
        mpfr_round(w->a, w->a);                   /* ties away from zero [POL-TIE-02] */
    else
        mpfr_rint(w->a, w->a, MPFR_RNDN);         /* ties to even [POL-TIE-01] */
    return clamp_key(mpfr_get_si(w->a, MPFR_RNDN), flags);
}

/* Real code and its alternative [CERT-K8-06]: [KIVI-B-02] with the clamp
 * [-128, 127] (kvq_exact_real_code, ref/exact/xfloat.c).  Returns 1 when ambiguous. */
static int xkey_real(long *code, long *alt, float k, float s, float z, uint32_t ties, kvq_xscratch *w)
{
    return kvq_exact_real_code(code, alt, k, s, z, KVQ_CERT_KCODE_MIN, KVQ_CERT_KCODE_MAX, ties, w);
}

kvq_status kvq_exact_cert_quantize_keys(kvq_exact_cert_keys_out *out, const float *k,
                                        const kvq_cert_shape *shape, const kvq_policy *pol)
{
    uint32_t nq, d, f = 0;
    uint64_t namb = 0;
    kvq_status st;
    kvq_xscratch w;
    if (out == NULL || k == NULL || shape == NULL || out->codes == NULL || out->sigma == NULL ||
        out->z == NULL || out->khat == NULL || out->code_real == NULL || out->code_alt == NULL)
        return KVQ_E_PARAM;
    if (kvq_policy_check(pol) != KVQ_OK) return KVQ_E_PARAM;
    if (!kvq_cert_shape_ok(shape)) return KVQ_E_SHAPE;
    st = check_f16_array(k, kvq_cert_in_index(shape, shape->tokens, 0));
    if (st != KVQ_OK) return st;
    nq = kvq_cert_full_blocks(shape);
    d = shape->dim;
    kvq_xs_init(&w);
    for (uint32_t b = 0; b < nq; b++)
        for (uint32_t c = 0; c < d; c++) {
            uint64_t m = kvq_cert_key_meta_index(shape, b, c);
            int8_t *blk = out->codes + kvq_cert_key_block_offset(shape, b);
            int8_t *rblk = out->code_real + kvq_cert_key_block_offset(shape, b);
            int8_t *ablk = out->code_alt + kvq_cert_key_block_offset(shape, b);
            float l, u, dd, s, zz;
            key_extremes(&l, &u, k, shape, b, c);
            dd = sub32(u, l, &w);                 /* RN32(u - l) [CERT-K8-01] */
            s = div32(dd, 255.0f, &w);            /* RN32(dd / 255) */
            if (s < F32_MIN_NORMAL) {             /* zero-range channel */
                s = 0.0f;
                zz = l == 0.0f ? 0.0f : l;
                f |= KVQ_FLAG_ZERO_SCALE;
            } else {
                zz = add32(l, ldexpf(s, 7), &w);  /* m = 128 sigma exact; RN32(l + m) */
                if (zz == 0.0f) zz = 0.0f;        /* +0 [POL-SZ-01] */
            }
            out->sigma[m] = s;
            out->z[m] = zz;
            for (uint32_t i = 0; i < KVQ_CERT_BLOCK; i++) {
                uint32_t at = kvq_cert_key_code_index(d, i, c);
                float x = k[kvq_cert_in_index(shape, kvq_cert_block_first(b) + i, c)];
                long cp = xkey_pinned(x, s, zz, pol->ties, &f, &w), cr, ca;
                int ov;
                blk[at] = (int8_t)cp;
                out->khat[kvq_cert_in_index(shape, kvq_cert_block_first(b) + i, c)] =
                    deq32(cp, s, zz, &ov, &w);    /* binary16 data: no overflow */
                if (xkey_real(&cr, &ca, x, s, zz, pol->ties, &w)) namb++;
                rblk[at] = (int8_t)cr;
                ablk[at] = (int8_t)ca;
            }
        }
    kvq_xs_clear(&w);
    if (namb) f |= KVQ_FLAG_AMBIGUOUS;
    out->flags = f;
    out->ambiguous = namb;
    return KVQ_OK;
}

/* ---- values -------------------------------------------------------------- */

kvq_status kvq_exact_cert_quantize_values(kvq_exact_kivi_out *out, const float *v,
                                          const kvq_cert_shape *shape, const kvq_policy *pol)
{
    kvq_kivi_shape ks;
    kvq_status st;
    if (out == NULL || v == NULL || shape == NULL) return KVQ_E_PARAM;
    if (kvq_policy_check(pol) != KVQ_OK) return KVQ_E_PARAM;
    if (!kvq_cert_shape_ok(shape)) return KVQ_E_SHAPE;
    st = check_f16_array(v, kvq_cert_in_index(shape, shape->tokens, 0));
    if (st != KVQ_OK) return st;
    if (kvq_cert_full_blocks(shape) == 0) {
        out->flags = 0;
        out->ambiguous = 0;
        return KVQ_OK;
    }
    ks = kvq_cert_value_kivi_shape(shape);        /* values are KIVI [CERT-V4-01] */
    return kvq_exact_kivi_quantize(out, v, &ks, pol);
}

/* ---- annotations --------------------------------------------------------- */

static kvq_status value_meta_ok(float s, float z)
{
    if (!isfinite(s) || !isfinite(z)) return KVQ_E_NONFINITE;
    if (!is_f16(s) || !is_f16(z)) return KVQ_E_PARAM;
    if (!(s >= 0.0f) || (s != 0.0f && s < F16_MIN_NORMAL)) return KVQ_E_PARAM;
    return KVQ_OK;
}

/* dst = RU32(sqrt(x)), x >= 0 exact [CERT-ANN-01]: the result is 0 or at least
 * 2^-24 (x is 0 or at least 2^-48), a normal binary32, so a 24-bit upward
 * rounding is RU32. */
static float ru32_sqrt(const mpfr_t x)
{
    mpfr_t r;
    float y;
    if (mpfr_zero_p(x)) return 0.0f;
    mpfr_init2(r, 24);
    mpfr_sqrt(r, x, MPFR_RNDU);
    y = mpfr_get_flt(r, MPFR_RNDN);               /* exact */
    mpfr_clear(r);
    return y;
}

kvq_status kvq_exact_cert_annotate(float *eta, float *nu, const float *v, const uint8_t *codes,
                                   const float *scale, const float *zero,
                                   const kvq_cert_shape *shape)
{
    uint32_t nb, nq, d;
    kvq_status st;
    mpfr_t se, sn, emax, nmax, t;
    kvq_xscratch w;
    if (eta == NULL || nu == NULL || v == NULL || codes == NULL || scale == NULL ||
        zero == NULL || shape == NULL)
        return KVQ_E_PARAM;
    if (!kvq_cert_shape_ok(shape)) return KVQ_E_SHAPE;
    st = check_f16_array(v, kvq_cert_in_index(shape, shape->tokens, 0));
    if (st != KVQ_OK) return st;
    for (uint64_t g = 0; g < kvq_cert_value_groups(shape); g++) {
        st = value_meta_ok(scale[g], zero[g]);
        if (st != KVQ_OK) return st;
    }
    nb = kvq_cert_blocks(shape);
    nq = kvq_cert_full_blocks(shape);
    d = shape->dim;
    kvq_xs_init(&w);
    mpfr_inits2(KVQ_XPREC, se, sn, emax, nmax, t, (mpfr_ptr)0);
    for (uint32_t b = 0; b < nb; b++) {
        mpfr_set_zero(emax, 1);
        mpfr_set_zero(nmax, 1);
        for (uint32_t i = 0; i < kvq_cert_block_tokens(shape, b); i++) {
            uint32_t tk = kvq_cert_block_first(b) + i;
            mpfr_set_zero(se, 1);
            mpfr_set_zero(sn, 1);
            for (uint32_t c = 0; c < d; c++) {
                float x = v[kvq_cert_in_index(shape, tk, c)];
                mpfr_set_flt(t, x, MPFR_RNDN);
                mpfr_sqr(w.d, t, MPFR_RNDN);      /* exact */
                mpfr_add(sn, sn, w.d, MPFR_RNDN); /* exact: < 2^40, quantum 2^-48 */
                if (b < nq) {
                    uint32_t el, j = kvq_cert_value_group_of(c, &el);
                    uint64_t g = kvq_cert_value_group(shape, tk, j);
                    uint32_t code = kvq_unpack_code(
                        codes + kvq_cert_value_code_offset(shape, tk, j), el, KVQ_CERT_VBITS);
                    int ov;
                    float xh = deq32((long)code, scale[g], zero[g], &ov, &w); /* [CERT-V4-02] */
                    mpfr_set_flt(w.e, xh, MPFR_RNDN);
                    mpfr_sub(w.e, t, w.e, MPFR_RNDN); /* v - v^, exact */
                    mpfr_sqr(w.e, w.e, MPFR_RNDN);    /* exact */
                    mpfr_add(se, se, w.e, MPFR_RNDN); /* exact */
                }
            }
            if (mpfr_cmp(se, emax) > 0) mpfr_set(emax, se, MPFR_RNDN);
            if (mpfr_cmp(sn, nmax) > 0) mpfr_set(nmax, sn, MPFR_RNDN);
        }
        eta[b] = ru32_sqrt(emax);                 /* [CERT-ANN-01] */
        nu[b] = ru32_sqrt(nmax);                  /* [CERT-ANN-02] */
    }
    mpfr_clears(se, sn, emax, nmax, t, (mpfr_ptr)0);
    kvq_xs_clear(&w);
    return KVQ_OK;
}

/* ---- gamma, Delta, the key bound ---------------------------------------- */

/* dst = gamma exactly [CERT-K8-04]: 2^-22 (|u| + |l| + |z|) + 2^-16 sigma + 2^-149,
 * 0 for sigma == 0.  Every step is exact at KVQ_XPREC. */
static void xgamma(mpfr_t dst, float l, float u, float s, float z, kvq_xscratch *w)
{
    if (s == 0.0f) {
        mpfr_set_zero(dst, 1);
        return;
    }
    mpfr_set_flt(w->a, fabsf(u), MPFR_RNDN);
    mpfr_set_flt(w->b, fabsf(l), MPFR_RNDN);
    mpfr_add(dst, w->a, w->b, MPFR_RNDN);
    mpfr_set_flt(w->b, fabsf(z), MPFR_RNDN);
    mpfr_add(dst, dst, w->b, MPFR_RNDN);
    mpfr_div_2ui(dst, dst, 22, MPFR_RNDN);
    mpfr_set_flt(w->b, s, MPFR_RNDN);
    mpfr_div_2ui(w->b, w->b, 16, MPFR_RNDN);
    mpfr_add(dst, dst, w->b, MPFR_RNDN);
    mpfr_set_ui_2exp(w->b, 1, -149, MPFR_RNDN);
    mpfr_add(dst, dst, w->b, MPFR_RNDN);
}

float kvq_exact_cert_gamma(float l, float u, float sigma, float z)
{
    mpfr_t g;
    kvq_xscratch w;
    float r;
    kvq_xs_init(&w);
    mpfr_init2(g, KVQ_XPREC);
    xgamma(g, l, u, sigma, z, &w);
    r = ru32(g);
    mpfr_clear(g);
    kvq_xs_clear(&w);
    return r;
}

int kvq_exact_cert_key_within(float k, float khat, float l, float u, float sigma, float z,
                              int with_gamma)
{
    mpfr_t bnd, err;
    kvq_xscratch w;
    int ok;
    if (!isfinite(khat)) return 0;
    kvq_xs_init(&w);
    mpfr_inits2(KVQ_XPREC, bnd, err, (mpfr_ptr)0);
    if (with_gamma)
        xgamma(bnd, l, u, sigma, z, &w);
    else
        mpfr_set_zero(bnd, 1);
    mpfr_set_flt(w.c, sigma, MPFR_RNDN);
    mpfr_div_2ui(w.c, w.c, 1, MPFR_RNDN);
    mpfr_add(bnd, bnd, w.c, MPFR_RNDN);           /* sigma/2 + gamma, exact */
    mpfr_set_flt(w.c, k, MPFR_RNDN);
    mpfr_set_flt(w.d, khat, MPFR_RNDN);
    mpfr_sub(err, w.c, w.d, MPFR_RNDN);           /* exact */
    ok = mpfr_cmpabs(err, bnd) <= 0;              /* exact comparison [CERT-K8-04] */
    mpfr_clears(bnd, err, (mpfr_ptr)0);
    kvq_xs_clear(&w);
    return ok;
}

static kvq_status key_meta_ok(float s, float z)
{
    if (!isfinite(s) || !isfinite(z)) return KVQ_E_NONFINITE;
    if (!(s >= 0.0f) || (s != 0.0f && s < F32_MIN_NORMAL)) return KVQ_E_PARAM;
    return KVQ_OK;
}

kvq_status kvq_exact_cert_delta(float *delta_b, float *delta, const float *q, float scale,
                                const float *k, const float *sigma, const float *z,
                                const kvq_cert_shape *shape)
{
    uint32_t nq, d;
    float dmax = 0.0f;
    kvq_status st;
    mpfr_t sum, h, g;
    kvq_xscratch w;
    if (delta_b == NULL || delta == NULL || q == NULL || k == NULL || sigma == NULL ||
        z == NULL || shape == NULL)
        return KVQ_E_PARAM;
    if (!isfinite(scale) || !(scale >= F32_MIN_NORMAL)) return KVQ_E_PARAM;
    if (!kvq_cert_shape_ok(shape)) return KVQ_E_SHAPE;
    d = shape->dim;
    st = check_f16_array(q, d);
    if (st != KVQ_OK) return st;
    st = check_f16_array(k, kvq_cert_in_index(shape, shape->tokens, 0));
    if (st != KVQ_OK) return st;
    for (uint64_t e = 0; e < kvq_cert_key_meta_count(shape); e++) {
        st = key_meta_ok(sigma[e], z[e]);
        if (st != KVQ_OK) return st;
    }
    nq = kvq_cert_full_blocks(shape);
    kvq_xs_init(&w);
    mpfr_inits2(KVQ_XPREC, sum, h, g, (mpfr_ptr)0);
    for (uint32_t b = 0; b < nq; b++) {
        mpfr_set_zero(sum, 1);
        for (uint32_t c = 0; c < d; c++) {
            uint64_t m = kvq_cert_key_meta_index(shape, b, c);
            float l, u;
            key_extremes(&l, &u, k, shape, b, c);
            xgamma(g, l, u, sigma[m], z[m], &w);
            mpfr_set_flt(h, sigma[m], MPFR_RNDN);
            mpfr_div_2ui(h, h, 1, MPFR_RNDN);
            /* Exact at KVQ_XPREC (the terms span < 2^-180 .. 2^34); RNDU keeps
             * every step an upper bound regardless. */
            mpfr_add(h, h, g, MPFR_RNDU);
            mpfr_set_flt(w.c, fabsf(q[c]), MPFR_RNDN);
            mpfr_mul(h, h, w.c, MPFR_RNDU);
            mpfr_add(sum, sum, h, MPFR_RNDU);
        }
        mpfr_set_flt(w.c, scale, MPFR_RNDN);
        mpfr_mul(sum, sum, w.c, MPFR_RNDU);
        delta_b[b] = ru32(sum);                   /* one upward rounding [CERT-DLT-01] */
        if (delta_b[b] > dmax) dmax = delta_b[b];
    }
    if (nq < kvq_cert_blocks(shape)) delta_b[nq] = 0.0f;
    *delta = dmax;                                /* [CERT-DLT-02] */
    mpfr_clears(sum, h, g, (mpfr_ptr)0);
    kvq_xs_clear(&w);
    return KVQ_OK;
}

/* ---- the decode step: enclosures ------------------------------------------
 * Scores are exact at KVQ_XPREC: a product of a binary16 and a binary32 value
 * has at most 35 bits, and d <= 512 of them (magnitudes 2^-173 .. 2^37), then
 * times the binary32 scale, span fewer than 500 bits.  Everything after the
 * scores is evaluated at KVQ_CERT_XPREC bits, each operation rounded in the
 * direction that keeps the enclosure (lo RNDD, hi RNDU; an expression
 * increasing in an argument takes that argument's bound of the same side). */

#define CP KVQ_CERT_XPREC

static mpfr_rnd_t opp(mpfr_rnd_t r)
{
    return r == MPFR_RNDU ? MPFR_RNDD : MPFR_RNDU;
}

void kvq_exact_cert_tail(mpfr_t dst, const mpfr_t delta, const mpfr_t alpha, mpfr_rnd_t rnd)
{
    mpfr_t x, u;
    if (mpfr_sgn(alpha) <= 0) {
        mpfr_set_zero(dst, 1);
        return;
    }
    if (mpfr_cmp_ui(alpha, 1) >= 0) {
        mpfr_set_ui(dst, 1, rnd);
        return;
    }
    mpfr_inits2(CP, x, u, (mpfr_ptr)0);
    /* A = 1 / (1 + (1 - a) / (X a)), X = e^{2 Delta}: increasing in X and a */
    mpfr_mul_2ui(x, delta, 1, rnd);
    mpfr_exp(x, x, rnd);
    mpfr_mul(x, x, alpha, rnd);
    mpfr_ui_sub(u, 1, alpha, opp(rnd));
    mpfr_div(u, u, x, opp(rnd));
    mpfr_add_ui(u, u, 1, opp(rnd));
    mpfr_ui_div(dst, 1, u, rnd);
    mpfr_clears(x, u, (mpfr_ptr)0);
}

void kvq_exact_cert_ekey(mpfr_t dst, const mpfr_t delta, const mpfr_t alpha, const mpfr_t vmax,
                         mpfr_rnd_t rnd)
{
    mpfr_t t, t2, a;
    mpfr_inits2(CP, t, t2, a, (mpfr_ptr)0);
    /* 2 Vmax (t + A (1 - t)): increasing in t and A [CERT-EK-01] */
    mpfr_div_2ui(t, delta, 1, rnd);
    mpfr_tanh(t, t, rnd);
    mpfr_div_2ui(t2, delta, 1, opp(rnd));
    mpfr_tanh(t2, t2, opp(rnd));
    mpfr_ui_sub(t2, 1, t2, rnd);                  /* 1 - t */
    kvq_exact_cert_tail(a, delta, alpha, rnd);
    mpfr_mul(a, a, t2, rnd);
    mpfr_add(a, a, t, rnd);
    mpfr_mul(a, a, vmax, rnd);
    mpfr_mul_2ui(dst, a, 1, rnd);
    mpfr_clears(t, t2, a, (mpfr_ptr)0);
}

void kvq_exact_cert_ekey_gated(mpfr_t dst, const mpfr_t delta, const mpfr_t alpha,
                               const mpfr_t vmax, mpfr_rnd_t rnd)
{
    mpfr_t t, a, x, y;
    mpfr_inits2(CP, t, a, x, y, (mpfr_ptr)0);
    /* 2 Vmax min(t, A (e^{2 Delta} + e^{Delta} - 2) / 2) [CERT-EK-04]; both
     * arguments of the min are increasing in Delta and alpha, and so is it */
    mpfr_div_2ui(t, delta, 1, rnd);
    mpfr_tanh(t, t, rnd);                         /* tanh(Delta/2) */
    mpfr_mul_2ui(x, delta, 1, rnd);
    mpfr_expm1(x, x, rnd);                        /* e^{2 Delta} - 1 */
    mpfr_expm1(y, delta, rnd);                    /* e^{Delta} - 1 */
    mpfr_add(x, x, y, rnd);
    mpfr_div_2ui(x, x, 1, rnd);                   /* (e^{2 Delta} + e^{Delta} - 2) / 2 */
    kvq_exact_cert_tail(a, delta, alpha, rnd);
    mpfr_mul(a, a, x, rnd);
    if (mpfr_cmp(a, t) < 0) mpfr_set(t, a, rnd);
    mpfr_mul(t, t, vmax, rnd);
    mpfr_mul_2ui(dst, t, 1, rnd);
    mpfr_clears(t, a, x, y, (mpfr_ptr)0);
}

void kvq_exact_cert_ekey_paper(mpfr_t dst, const mpfr_t delta, const mpfr_t alpha,
                               const mpfr_t vmax, unsigned f, mpfr_rnd_t rnd)
{
    mpfr_t x, y;
    mpfr_inits2(CP, x, y, (mpfr_ptr)0);
    mpfr_mul_ui(x, delta, f, rnd);
    mpfr_exp(x, x, rnd);                          /* e^{f Delta} */
    mpfr_mul_2ui(y, delta, 1, rnd);
    mpfr_expm1(y, y, rnd);                        /* e^{2 Delta} - 1 */
    mpfr_mul(x, x, y, rnd);
    mpfr_mul(x, x, alpha, rnd);
    mpfr_mul(x, x, vmax, rnd);
    mpfr_mul_2ui(dst, x, 1, rnd);                 /* [CERT-EK-02] */
    mpfr_clears(x, y, (mpfr_ptr)0);
}

/* Row of token t: estimated keys (k^ in full blocks, [CERT-K8-03]) when est,
 * else the originals; values v~ (v^ in non-promoted full blocks [CERT-V4-02])
 * when est, else the originals.  All exact (deq32). */
static void xkrow(float *row, const kvq_cert_cache *ch, const kvq_cert_shape *sh, uint32_t t,
                  int est, kvq_xscratch *w)
{
    uint32_t d = sh->dim, b = t / KVQ_CERT_BLOCK, i = t % KVQ_CERT_BLOCK;
    int ov;
    for (uint32_t c = 0; c < d; c++) {
        if (est && b < kvq_cert_full_blocks(sh)) {
            uint64_t m = kvq_cert_key_meta_index(sh, b, c);
            long code = ch->kcodes[kvq_cert_key_block_offset(sh, b) + kvq_cert_key_code_index(d, i, c)];
            row[c] = deq32(code, ch->sigma[m], ch->z[m], &ov, w);
        } else {
            row[c] = ch->k[kvq_cert_in_index(sh, t, c)];
        }
    }
}

static void xvrow(float *row, const kvq_cert_cache *ch, const kvq_cert_shape *sh, uint32_t t,
                  int est, kvq_xscratch *w)
{
    int ov;
    for (uint32_t c = 0; c < sh->dim; c++) {
        if (est && t < kvq_cert_quant_tokens(sh)) {
            uint32_t el, j = kvq_cert_value_group_of(c, &el);
            uint64_t g = kvq_cert_value_group(sh, t, j);
            uint32_t code = kvq_unpack_code(ch->vcodes + kvq_cert_value_code_offset(sh, t, j), el,
                                            KVQ_CERT_VBITS);
            row[c] = deq32((long)code, ch->vscale[g], ch->vzero[g], &ov, w);
        } else {
            row[c] = ch->v[kvq_cert_in_index(sh, t, c)];
        }
    }
}

/* dst = scale * sum_c q_c row_c exactly; pabs (may be NULL) = sum |q_c| |row_c|. */
static void xscore(mpfr_t dst, mpfr_t pabs, const float *q, const float *row, uint32_t d,
                   float scale, kvq_xscratch *w)
{
    mpfr_set_zero(dst, 1);
    if (pabs) mpfr_set_zero(pabs, 1);
    for (uint32_t c = 0; c < d; c++) {
        mpfr_set_flt(w->a, q[c], MPFR_RNDN);
        mpfr_set_flt(w->b, row[c], MPFR_RNDN);
        mpfr_mul(w->a, w->a, w->b, MPFR_RNDN);    /* exact */
        mpfr_add(dst, dst, w->a, MPFR_RNDN);      /* exact */
        if (pabs) {
            mpfr_abs(w->a, w->a, MPFR_RNDN);
            mpfr_add(pabs, pabs, w->a, MPFR_RNDN);/* exact */
        }
    }
    mpfr_set_flt(w->a, scale, MPFR_RNDN);
    mpfr_mul(dst, dst, w->a, MPFR_RNDN);          /* exact */
}

static kvq_status xstep_check(const float *q, float scale, const kvq_cert_cache *ch,
                              const kvq_cert_shape *sh)
{
    kvq_status st;
    uint64_t ne;
    if (q == NULL || ch == NULL || sh == NULL || ch->k == NULL || ch->v == NULL ||
        ch->kcodes == NULL || ch->sigma == NULL || ch->z == NULL || ch->vcodes == NULL ||
        ch->vscale == NULL || ch->vzero == NULL)
        return KVQ_E_PARAM;
    if (!isfinite(scale) || !(scale >= F32_MIN_NORMAL)) return KVQ_E_PARAM;
    if (!kvq_cert_shape_ok(sh)) return KVQ_E_SHAPE;
    ne = kvq_cert_in_index(sh, sh->tokens, 0);
    if ((st = check_f16_array(q, sh->dim)) != KVQ_OK) return st;
    if ((st = check_f16_array(ch->k, ne)) != KVQ_OK) return st;
    if ((st = check_f16_array(ch->v, ne)) != KVQ_OK) return st;
    for (uint64_t e = 0; e < kvq_cert_key_meta_count(sh); e++)
        if ((st = key_meta_ok(ch->sigma[e], ch->z[e])) != KVQ_OK) return st;
    for (uint64_t g = 0; g < kvq_cert_value_groups(sh); g++)
        if ((st = value_meta_ok(ch->vscale[g], ch->vzero[g])) != KVQ_OK) return st;
    return KVQ_OK;
}

/* Enclosures of the weights exp(s_t - m) of tokens with use[block] != 0 (all
 * when use is NULL), m the greatest score among them: wl[t] <= w <= wu[t];
 * sc holds the exact scores. */
static void xweights(mpfr_t *wl, mpfr_t *wu, mpfr_t *sc, const uint8_t *use, uint32_t n)
{
    mpfr_t m, x;
    int first = 1;
    mpfr_init2(m, KVQ_XPREC);
    mpfr_init2(x, KVQ_XPREC);
    for (uint32_t t = 0; t < n; t++)
        if (use == NULL || use[t / KVQ_CERT_BLOCK])
            if (first || mpfr_cmp(sc[t], m) > 0) mpfr_set(m, sc[t], MPFR_RNDN), first = 0;
    for (uint32_t t = 0; t < n; t++) {
        mpfr_sub(x, sc[t], m, MPFR_RNDN);         /* exact */
        mpfr_exp(wl[t], x, MPFR_RNDD);
        mpfr_exp(wu[t], x, MPFR_RNDU);
    }
    mpfr_clear(m);
    mpfr_clear(x);
}

static mpfr_t *xarr(uint32_t n, int prec)
{
    mpfr_t *a = malloc(sizeof(mpfr_t) * (n ? n : 1u));
    if (a != NULL)
        for (uint32_t i = 0; i < n; i++) mpfr_init2(a[i], prec);
    return a;
}

static void xarr_free(mpfr_t *a, uint32_t n)
{
    if (a == NULL) return;
    for (uint32_t i = 0; i < n; i++) mpfr_clear(a[i]);
    free(a);
}

kvq_status kvq_exact_cert_logmass(double *lo, double *hi, const float *q, float scale,
                                  const kvq_cert_cache *cache, const kvq_cert_shape *shape)
{
    uint32_t n, nb;
    mpfr_t *sc, *wl, *wu, bl, bu, m;
    float *row;
    kvq_status st;
    kvq_xscratch w;
    if (lo == NULL || hi == NULL) return KVQ_E_PARAM;
    if ((st = xstep_check(q, scale, cache, shape)) != KVQ_OK) return st;
    n = shape->tokens, nb = kvq_cert_blocks(shape);
    sc = xarr(n, KVQ_XPREC), wl = xarr(n, CP), wu = xarr(n, CP);
    row = malloc(sizeof(float) * shape->dim);
    if (!sc || !wl || !wu || !row) {
        xarr_free(sc, n), xarr_free(wl, n), xarr_free(wu, n), free(row);
        return KVQ_E_NOMEM;
    }
    kvq_xs_init(&w);
    mpfr_inits2(CP, bl, bu, (mpfr_ptr)0);
    mpfr_init2(m, KVQ_XPREC);
    for (uint32_t t = 0; t < n; t++) {
        xkrow(row, cache, shape, t, 1, &w);
        xscore(sc[t], NULL, q, row, shape->dim, scale, &w); /* s^_t [CERT-DLT-03] */
        if (t == 0 || mpfr_cmp(sc[t], m) > 0) mpfr_set(m, sc[t], MPFR_RNDN);
    }
    xweights(wl, wu, sc, NULL, n);
    for (uint32_t b = 0; b < nb; b++) {
        mpfr_set_zero(bl, 1), mpfr_set_zero(bu, 1);
        for (uint32_t i = 0; i < kvq_cert_block_tokens(shape, b); i++) {
            mpfr_add(bl, bl, wl[kvq_cert_block_first(b) + i], MPFR_RNDD);
            mpfr_add(bu, bu, wu[kvq_cert_block_first(b) + i], MPFR_RNDU);
        }
        /* L_b = m + ln W_b [CERT-LM-01] */
        mpfr_log(bl, bl, MPFR_RNDD);
        mpfr_log(bu, bu, MPFR_RNDU);
        mpfr_add(bl, bl, m, MPFR_RNDD);
        mpfr_add(bu, bu, m, MPFR_RNDU);
        lo[b] = mpfr_get_d(bl, MPFR_RNDD);
        hi[b] = mpfr_get_d(bu, MPFR_RNDU);
    }
    mpfr_clears(bl, bu, m, (mpfr_ptr)0);
    kvq_xs_clear(&w);
    xarr_free(sc, n), xarr_free(wl, n), xarr_free(wu, n), free(row);
    return KVQ_OK;
}

/* The contract checker; dense != 0: rungs 3-4 [CERT-LAD-03] (sel, prom not
 * read: every token attended with its exact score and original value). */
/* The per-block annotations (eta, nu) and Delta'_b, Delta of one step, as
 * the contract check and the ladder both need them. */
static kvq_status step_annotations(float *eta, float *nu, float *dlt, float *delta,
                                   const kvq_cert_cache *cache, const float *q, float scale,
                                   const kvq_cert_shape *shape)
{
    kvq_status st = kvq_exact_cert_annotate(eta, nu, cache->v, cache->vcodes, cache->vscale,
                                            cache->vzero, shape);
    if (st == KVQ_OK)
        st = kvq_exact_cert_delta(dlt, delta, q, scale, cache->k, cache->sigma, cache->z, shape);
    return st;
}

/* Whether Phase 2 attends block b [CERT-VAR-01]: every block in the paper
 * variant and the dense rungs, the selection (residual included) in sparse. */
static int attended(const uint8_t *sel, uint32_t variant, int dense, uint32_t b)
{
    return dense || variant == KVQ_CERT_VARIANT_PAPER || sel[b];
}

/* Whether Phase 2 scores block b from the pinned k^ (xkrow's est): the tail
 * in the paper variant, every full block in sparse, none in the dense rungs. */
static int key_est(const uint8_t *sel, uint32_t variant, int dense, uint32_t b)
{
    return !dense && (variant != KVQ_CERT_VARIANT_PAPER || !sel[b]);
}

static kvq_status xcheck(kvq_exact_cert_verdict *out, const float *o, const kvq_cert_record *claim,
                         const uint8_t *sel, const uint8_t *prom, const float *q, float scale,
                         const kvq_cert_cache *cache, const kvq_cert_decl *decl,
                         uint32_t variant, const kvq_cert_shape *shape, int dense)
{
    uint32_t n, d, nq, nb, ns = 0;
    mpfr_t *sc, *wl, *wu, *nl, *nh, zl, zh, tl, th, x, y, vh, pmax, smax, smin, eps, bnd;
    float *row = NULL, *eta = NULL, *nu = NULL, *dlt = NULL, delta, vmax = 0.0f;
    kvq_status st;
    kvq_xscratch w;
    if (out == NULL || o == NULL || claim == NULL || (sel == NULL && !dense) || decl == NULL ||
        variant >= KVQ_CERT_VARIANTS)
        return KVQ_E_PARAM;
    if ((st = xstep_check(q, scale, cache, shape)) != KVQ_OK) return st;
    if (dense) sel = NULL, prom = NULL;
    if (!(decl->u_exp >= 0.0f) || !(decl->u_exp < 0x1p23f) || decl->acc_depth < 1u ||
        decl->acc_depth >= (1u << 23))
        return KVQ_E_PARAM;                       /* [CERT-DUMP-03] */
    n = shape->tokens, d = shape->dim, nq = kvq_cert_full_blocks(shape);
    nb = kvq_cert_blocks(shape);
    for (uint32_t c = 0; c < d; c++)
        if (!isfinite(o[c])) return KVQ_E_NONFINITE;
    for (uint32_t b = 0; b < nb && !dense; b++)
        if (sel[b] > 1u || (b == nq && sel[b] != 1u) || (prom && (prom[b] > 1u ||
                                                                  (prom[b] && !sel[b]))))
            return KVQ_E_PARAM;
    sc = xarr(n, KVQ_XPREC), wl = xarr(n, CP), wu = xarr(n, CP);
    nl = xarr(d, CP), nh = xarr(d, CP);
    row = malloc(sizeof(float) * d);
    eta = malloc(sizeof(float) * nb), nu = malloc(sizeof(float) * nb);
    dlt = malloc(sizeof(float) * nb);
    if (!sc || !wl || !wu || !nl || !nh || !row || !eta || !nu || !dlt) {
        st = KVQ_E_NOMEM;
        goto fail;
    }
    st = step_annotations(eta, nu, dlt, &delta, cache, q, scale, shape);
    if (st != KVQ_OK) goto fail;
    for (uint32_t b = 0; b < nb; b++)
        if (nu[b] > vmax) vmax = nu[b];           /* [CERT-ANN-04] */
    kvq_xs_init(&w);
    mpfr_inits2(CP, zl, zh, tl, th, x, y, vh, eps, bnd, (mpfr_ptr)0);
    mpfr_inits2(KVQ_XPREC, pmax, smax, smin, (mpfr_ptr)0);

    /* ---- O_ref_exact [CERT-CON-01]: exact scores, originals, all tokens ---- */
    for (uint32_t t = 0; t < n; t++) {
        xkrow(row, cache, shape, t, 0, &w);
        xscore(sc[t], NULL, q, row, d, scale, &w);
    }
    xweights(wl, wu, sc, NULL, n);
    mpfr_set_zero(zl, 1), mpfr_set_zero(zh, 1);
    for (uint32_t c = 0; c < d; c++) mpfr_set_zero(nl[c], 1), mpfr_set_zero(nh[c], 1);
    for (uint32_t t = 0; t < n; t++) {
        mpfr_add(zl, zl, wl[t], MPFR_RNDD);
        mpfr_add(zh, zh, wu[t], MPFR_RNDU);
        for (uint32_t c = 0; c < d; c++) {
            float v = cache->v[kvq_cert_in_index(shape, t, c)];
            if (v == 0.0f) continue;
            mpfr_mul_d(x, v > 0 ? wl[t] : wu[t], (double)v, MPFR_RNDD);
            mpfr_add(nl[c], nl[c], x, MPFR_RNDD);
            mpfr_mul_d(x, v > 0 ? wu[t] : wl[t], (double)v, MPFR_RNDU);
            mpfr_add(nh[c], nh[c], x, MPFR_RNDU);
        }
    }
    /* ||o - O_ref||: interval per component, then squares outward */
    mpfr_set_zero(tl, 1), mpfr_set_zero(th, 1);
    for (uint32_t c = 0; c < d; c++) {
        mpfr_div(nl[c], nl[c], mpfr_sgn(nl[c]) >= 0 ? zh : zl, MPFR_RNDD); /* O_c lower */
        mpfr_div(nh[c], nh[c], mpfr_sgn(nh[c]) >= 0 ? zl : zh, MPFR_RNDU); /* O_c upper */
        mpfr_set_flt(y, o[c], MPFR_RNDN);
        mpfr_sub(x, y, nh[c], MPFR_RNDD);         /* a <= o - O_c */
        mpfr_sub(y, y, nl[c], MPFR_RNDU);         /* o - O_c <= b */
        if (mpfr_sgn(x) > 0) {
            mpfr_sqr(bnd, x, MPFR_RNDD);
            mpfr_add(tl, tl, bnd, MPFR_RNDD);
        } else if (mpfr_sgn(y) < 0) {
            mpfr_sqr(bnd, y, MPFR_RNDD);
            mpfr_add(tl, tl, bnd, MPFR_RNDD);
        }
        if (mpfr_cmpabs(x, y) > 0) mpfr_sqr(bnd, x, MPFR_RNDU);
        else mpfr_sqr(bnd, y, MPFR_RNDU);
        mpfr_add(th, th, bnd, MPFR_RNDU);
    }
    mpfr_sqrt(tl, tl, MPFR_RNDD);
    mpfr_sqrt(th, th, MPFR_RNDU);
    out->err_lo = mpfr_get_d(tl, MPFR_RNDD);
    out->err_hi = mpfr_get_d(th, MPFR_RNDU);

    /* ---- estimated scores s^ (Phase 1, all tokens): alpha^_T [CERT-SEL-02] ---- */
    for (uint32_t t = 0; t < n; t++) {
        xkrow(row, cache, shape, t, !dense, &w);   /* dense: exact scores [CERT-LAD-03] */
        xscore(sc[t], NULL, q, row, d, scale, &w); /* s^_t [CERT-DLT-03] */
    }
    xweights(wl, wu, sc, NULL, n);
    mpfr_set_zero(tl, 1), mpfr_set_zero(th, 1);  /* T upper in th; S lower in tl */
    for (uint32_t t = 0; t < n; t++) {
        if (dense || sel[t / KVQ_CERT_BLOCK]) mpfr_add(tl, tl, wl[t], MPFR_RNDD);
        else mpfr_add(th, th, wu[t], MPFR_RNDU);
    }
    /* alpha^ <= Tu / (Tu + Sl) = 1 / (1 + Sl/Tu) */
    if (mpfr_zero_p(th)) {
        mpfr_set_zero(x, 1);
    } else {
        mpfr_div(x, tl, th, MPFR_RNDD);
        mpfr_add_ui(x, x, 1, MPFR_RNDD);
        mpfr_ui_div(x, 1, x, MPFR_RNDU);
    }
    out->alpha_hat = ru32(x);
    mpfr_set_flt(y, delta, MPFR_RNDN);
    mpfr_set_flt(bnd, vmax, MPFR_RNDN);
    if (variant == KVQ_CERT_VARIANT_PAPER)
        kvq_exact_cert_ekey_gated(eps, y, x, bnd, MPFR_RNDU); /* [CERT-EK-04] */
    else
        kvq_exact_cert_ekey(eps, y, x, bnd, MPFR_RNDU);       /* [CERT-EK-01] */
    out->ekey = ru32(eps);
    kvq_exact_cert_ekey_paper(eps, y, x, bnd, 2u, MPFR_RNDU);  /* Eq. 15 */
    out->ekey_paper = ru32(eps);
    if (dense) out->ekey = 0.0f, out->ekey_paper = 0.0f; /* E_key = 0 [CERT-LAD-03] */
    out->delta = delta;
    out->vmax = vmax;

    /* ---- Phase 2 [CERT-VAR-01]: the attended tokens (all for paper and the
     * dense rungs, the selection for sparse), their scores s' (paper: the
     * originals' exact scores in the selected and residual blocks, s^ in the
     * tail) and values v~; rho_b [CERT-EV-01] and the E_arith inputs ---- */
    mpfr_set_zero(pmax, 1);
    mpfr_set_zero(vh, 1);
    for (uint32_t t = 0; t < n; t++) {
        uint32_t b = t / KVQ_CERT_BLOCK;
        if (!attended(sel, variant, dense, b)) continue;
        xkrow(row, cache, shape, t, key_est(sel, variant, dense, b), &w);
        if (!dense && variant == KVQ_CERT_VARIANT_PAPER && sel[b])
            xscore(sc[t], NULL, q, row, d, scale, &w);  /* s'_t = s_t */
        /* sum_c |q_c| |key_c| for eps_s, upward */
        mpfr_set_zero(y, 1);
        for (uint32_t c = 0; c < d; c++) {
            mpfr_set_flt(w.a, fabsf(q[c]), MPFR_RNDN);
            mpfr_mul_d(w.a, w.a, fabs((double)row[c]), MPFR_RNDN); /* exact */
            mpfr_add(y, y, w.a, MPFR_RNDU);
        }
        if (mpfr_cmp(y, pmax) > 0) mpfr_set(pmax, y, MPFR_RNDU);
        if (ns == 0 || mpfr_cmp(sc[t], smax) > 0) mpfr_set(smax, sc[t], MPFR_RNDN);
        if (ns == 0 || mpfr_cmp(sc[t], smin) < 0) mpfr_set(smin, sc[t], MPFR_RNDN);
        /* ||v~_t|| for Vh [CERT-AR-01] */
        xvrow(row, cache, shape, t, !dense && !(prom && prom[b]), &w);
        mpfr_set_zero(y, 1);
        for (uint32_t c = 0; c < d; c++) {
            mpfr_set_flt(w.a, row[c], MPFR_RNDN);
            mpfr_sqr(w.a, w.a, MPFR_RNDU);
            mpfr_add(y, y, w.a, MPFR_RNDU);
        }
        mpfr_sqrt(y, y, MPFR_RNDU);
        if (mpfr_cmp(y, vh) > 0) mpfr_set(vh, y, MPFR_RNDU);
        ns++;
    }
    if (!dense && variant == KVQ_CERT_VARIANT_PAPER) xweights(wl, wu, sc, NULL, n);
    /* E_val = sum_{attended full b} rho_b eta'_b, rho_b <= W_b,u / Z_A,l
     * [CERT-EV-01]; Z_A the attended tokens' weights */
    mpfr_set_zero(tl, 1);
    for (uint32_t t = 0; t < n; t++)
        if (attended(sel, variant, dense, t / KVQ_CERT_BLOCK)) mpfr_add(tl, tl, wl[t], MPFR_RNDD);
    mpfr_set_zero(y, 1);
    for (uint32_t b = 0; b < nq && !dense; b++) {    /* dense: E_val = 0 [CERT-LAD-03] */
        if (!attended(sel, variant, dense, b) || (prom && prom[b]) || eta[b] == 0.0f) continue;
        mpfr_set_zero(x, 1);
        for (uint32_t i = 0; i < KVQ_CERT_BLOCK; i++)
            mpfr_add(x, x, wu[kvq_cert_block_first(b) + i], MPFR_RNDU);
        mpfr_div(x, x, tl, MPFR_RNDU);
        if (mpfr_cmp_ui(x, 1) > 0) mpfr_set_ui(x, 1, MPFR_RNDU); /* rho_b <= 1 */
        mpfr_mul_d(x, x, (double)eta[b], MPFR_RNDU);
        mpfr_add(y, y, x, MPFR_RNDU);
    }
    out->eval = ru32(y);
    /* E_arith [CERT-AR-01] (with the absolute terms of the correction in spec) */
    {
        mpfr_t g, gq, lam, lm, r;
        mpfr_inits2(CP, g, gq, lam, lm, r, (mpfr_ptr)0);
        mpfr_set_ui(g, d + 1u, MPFR_RNDN);
        mpfr_div_2ui(g, g, 24, MPFR_RNDN);        /* exact */
        mpfr_ui_sub(x, 1, g, MPFR_RNDD);
        mpfr_div(g, g, x, MPFR_RNDU);             /* gamma_{d+1} */
        mpfr_mul_d(g, g, (double)scale, MPFR_RNDU);
        mpfr_mul(eps, g, pmax, MPFR_RNDU);
        mpfr_set_d(x, (double)scale, MPFR_RNDU);
        mpfr_mul_ui(x, x, d, MPFR_RNDU);
        mpfr_add_ui(x, x, 1, MPFR_RNDU);
        mpfr_div_2ui(x, x, 149, MPFR_RNDU);
        mpfr_add(eps, eps, x, MPFR_RNDU);         /* eps_s */
        mpfr_sub(r, smax, smin, MPFR_RNDU);
        mpfr_mul_2ui(x, eps, 1, MPFR_RNDU);
        mpfr_add(r, r, x, MPFR_RNDU);             /* R_s */
        mpfr_set_d(lam, (double)decl->u_exp, MPFR_RNDN);
        mpfr_div_2ui(lam, lam, 23, MPFR_RNDN);    /* exact */
        mpfr_ui_sub(lam, 1, lam, MPFR_RNDD);
        mpfr_log(lam, lam, MPFR_RNDD);
        mpfr_neg(lam, lam, MPFR_RNDU);            /* lam = -ln(1 - U 2^-23) */
        mpfr_div_2ui(lm, r, 24, MPFR_RNDU);
        mpfr_add(lm, lm, lam, MPFR_RNDU);
        mpfr_mul_ui(lm, lm, decl->rescales + 1u, MPFR_RNDU);
        mpfr_add(lm, lm, eps, MPFR_RNDU);         /* Lambda */
        mpfr_set_ui(g, decl->acc_depth, MPFR_RNDN);
        mpfr_div_2ui(g, g, 24, MPFR_RNDN);
        mpfr_ui_sub(x, 1, g, MPFR_RNDD);
        mpfr_div(g, g, x, MPFR_RNDU);             /* g = gamma_D */
        mpfr_ui_sub(x, 1, g, MPFR_RNDD);
        mpfr_div(gq, g, x, MPFR_RNDU);            /* g / (1 - g) */
        mpfr_div_2ui(x, lm, 1, MPFR_RNDU);
        mpfr_tanh(x, x, MPFR_RNDU);
        mpfr_mul(bnd, vh, x, MPFR_RNDU);
        mpfr_mul_2ui(bnd, bnd, 1, MPFR_RNDU);     /* 2 Vh tanh(Lambda/2) */
        mpfr_mul(x, vh, gq, MPFR_RNDU);
        mpfr_mul_2ui(x, x, 1, MPFR_RNDU);
        mpfr_add(bnd, bnd, x, MPFR_RNDU);         /* + 2 Vh g/(1-g) */
        mpfr_mul_2ui(x, gq, 1, MPFR_RNDU);
        mpfr_add_ui(x, x, 1, MPFR_RNDU);
        mpfr_mul(x, x, vh, MPFR_RNDU);
        mpfr_div_2ui(x, x, 24, MPFR_RNDU);
        mpfr_add(bnd, bnd, x, MPFR_RNDU);         /* + 2^-24 Vh (1 + 2g/(1-g)) */
        mpfr_set_d(x, (double)decl->u_exp, MPFR_RNDU);
        mpfr_add_ui(x, x, 1, MPFR_RNDU);
        mpfr_mul_ui(x, x, ns, MPFR_RNDU);
        mpfr_mul(x, x, vh, MPFR_RNDU);
        mpfr_div_2ui(x, x, 147, MPFR_RNDU);
        mpfr_add(bnd, bnd, x, MPFR_RNDU);         /* + 2 Vh nS (U+1) 2^-148 */
        mpfr_set_ui(x, d, MPFR_RNDN);
        mpfr_sqrt(x, x, MPFR_RNDU);
        mpfr_mul_ui(y, x, 4u * decl->acc_depth + 1u, MPFR_RNDU);
        mpfr_div_2ui(y, y, 150, MPFR_RNDU);
        mpfr_add(bnd, bnd, y, MPFR_RNDU);         /* + sqrt(d) (1 + 4 D) 2^-150 */
        out->earith = ru32(bnd);
        mpfr_clears(g, gq, lam, lm, r, (mpfr_ptr)0);
    }
    /* ---- the contract, decided [CERT-CON-01..02] ---- */
    out->unsound = (claim->ekey < out->ekey ? 1u : 0u) | (claim->eval < out->eval ? 2u : 0u) |
                   (claim->earith < out->earith ? 4u : 0u);
    for (int pass = 0; pass < 2; pass++) {
        const float e1 = pass ? out->ekey : claim->ekey, e2 = pass ? out->eval : claim->eval,
                    e3 = pass ? out->earith : claim->earith;
        int h;
        double mg;
        mpfr_set_flt(bnd, e1, MPFR_RNDN);
        mpfr_set_flt(x, e2, MPFR_RNDN);
        mpfr_add(bnd, bnd, x, MPFR_RNDD);
        mpfr_set_flt(x, e3, MPFR_RNDN);
        mpfr_add(bnd, bnd, x, MPFR_RNDD);         /* a lower bound of the sum */
        mpfr_set_d(x, out->err_hi, MPFR_RNDN);
        mpfr_sub(y, bnd, x, MPFR_RNDD);
        mg = mpfr_get_d(y, MPFR_RNDD);
        if (mpfr_cmp(x, bnd) <= 0) h = 1;
        else {
            mpfr_set_flt(bnd, e1, MPFR_RNDN);     /* an upper bound of the sum */
            mpfr_set_flt(x, e2, MPFR_RNDN);
            mpfr_add(bnd, bnd, x, MPFR_RNDU);
            mpfr_set_flt(x, e3, MPFR_RNDN);
            mpfr_add(bnd, bnd, x, MPFR_RNDU);
            mpfr_set_d(x, out->err_lo, MPFR_RNDN);
            h = mpfr_cmp(x, bnd) > 0 ? 0 : -1;
        }
        if (pass) out->holds_sound = h, out->margin_sound = mg;
        else out->holds = h, out->margin = mg;
    }
    mpfr_clears(zl, zh, tl, th, x, y, vh, eps, bnd, (mpfr_ptr)0);
    mpfr_clears(pmax, smax, smin, (mpfr_ptr)0);
    kvq_xs_clear(&w);
    st = KVQ_OK;
fail:
    xarr_free(sc, n), xarr_free(wl, n), xarr_free(wu, n), xarr_free(nl, d), xarr_free(nh, d);
    free(row), free(eta), free(nu), free(dlt);
    return st;
}

kvq_status kvq_exact_cert_check(kvq_exact_cert_verdict *out, const float *o,
                                const kvq_cert_record *claim, const uint8_t *sel,
                                const uint8_t *prom, const float *q, float scale,
                                const kvq_cert_cache *cache, const kvq_cert_decl *decl,
                                uint32_t variant, const kvq_cert_shape *shape)
{
    return xcheck(out, o, claim, sel, prom, q, scale, cache, decl, variant, shape, 0);
}

kvq_status kvq_exact_cert_check_dense(kvq_exact_cert_verdict *out, const float *o,
                                      const kvq_cert_record *claim, const float *q, float scale,
                                      const kvq_cert_cache *cache, const kvq_cert_decl *decl,
                                      const kvq_cert_shape *shape)
{
    return xcheck(out, o, claim, NULL, NULL, q, scale, cache, decl, KVQ_CERT_VARIANT_SPARSE,
                  shape, 1);
}

/* ---- the checks of the ladder, exact -------------------------------------- */

/* Outward steps for binary64 results of one nearest rounding: the real value
 * lies within half an ulp of the rounded one, so one step is an enclosure. */
static double dn1(double x) { return nextafter(x, -INFINITY); }
static double up1(double x) { return nextafter(x, INFINITY); }

/* Decide a margin [CERT-CHK-01]: pass (strict: margin > 0, else >= 0), and ok
 * (pass, or margin >= -tol for tol > 0; with tol 0, ok is pass). */
static void decide(kvq_exact_cert_margin *m, int strict)
{
    if (strict) m->pass = m->lo > 0.0 ? 1 : m->hi <= 0.0 ? 0 : -1;
    else m->pass = m->lo >= 0.0 ? 1 : m->hi < 0.0 ? 0 : -1;
    if (m->pass == 1 || !(m->tol > 0.0)) m->ok = m->pass;
    else m->ok = m->lo >= -m->tol ? 1 : m->hi < -m->tol ? 0 : -1;
}

static void margin_inf(kvq_exact_cert_margin *m, double tol)
{
    m->lo = m->hi = INFINITY;
    m->tol = tol;
    m->pass = m->ok = 1;
}

/* Descending order of binary64 values, for the r-th greatest. */
static int desc_d(const void *pa, const void *pb)
{
    double a = *(const double *)pa, b = *(const double *)pb;
    return a > b ? -1 : a < b ? 1 : 0;
}

kvq_status kvq_exact_cert_ladder(kvq_exact_cert_ladder_out *out, uint32_t rung,
                                 const uint8_t *sel, const uint8_t *prom, const float *q,
                                 float scale, const kvq_cert_cache *cache,
                                 const kvq_cert_params *prm, float delta1,
                                 const kvq_cert_shape *shape)
{
    uint32_t n, nq, nb, nsf = 0, nt = 0;
    mpfr_t *sc = NULL, *wl = NULL, *wu = NULL, *bl = NULL, *bu = NULL;
    mpfr_t stl, stu, ttl, ttu, x, y, z, al, au;
    double *lamlo = NULL, *lamhi = NULL, ulo = -INFINITY, uhi = -INFINITY, tol2, tol4;
    float *row = NULL, *eta = NULL, *nu = NULL, *dlt = NULL, delta = 0.0f;
    kvq_status st;
    kvq_xscratch w;
    if (out == NULL || sel == NULL || prm == NULL || rung > 2u ||
        prm->variant >= KVQ_CERT_VARIANTS)
        return KVQ_E_PARAM;
    if (!isfinite(delta1) || !(delta1 >= 0.0f)) return KVQ_E_PARAM;  /* [CERT-DUMP-03] */
    if (!(prm->tau > 0.0f && prm->tau <= 1.0f) || !(prm->vtol >= 0.0f) || !isfinite(prm->vtol) ||
        !(prm->eps_guard >= 0.0f) || !isfinite(prm->eps_guard) || prm->r < 1u ||
        prm->kmin < 1u || prm->kmin > prm->kmax)
        return KVQ_E_PARAM;
    if ((st = xstep_check(q, scale, cache, shape)) != KVQ_OK) return st;
    n = shape->tokens, nq = kvq_cert_full_blocks(shape), nb = kvq_cert_blocks(shape);
    for (uint32_t b = 0; b < nb; b++)
        if (sel[b] > 1u || (b == nq && sel[b] != 1u) ||
            (prom && (prom[b] > 1u || (prom[b] && !sel[b]))))
            return KVQ_E_PARAM;
    memset(out, 0, sizeof *out);
    tol2 = 2.0 * (double)delta1, tol4 = 4.0 * (double)delta1; /* exact in binary64 */
    /* clamp [CERT-SEL-02] item 1 */
    for (uint32_t b = 0; b < nq; b++) nsf += sel[b], nt += !sel[b];
    out->k = nsf;
    out->kmin = prm->kmin < nq ? prm->kmin : nq;
    if (rung == 0u) out->kcap = prm->kmax < nq ? prm->kmax : nq;
    else out->kcap = 2ull * prm->kmax < (uint64_t)nq ? 2u * prm->kmax : nq;
    out->clamp_ok = out->kmin <= nsf && nsf <= out->kcap;
    out->cap = nsf == out->kcap;

    sc = xarr(n, KVQ_XPREC), wl = xarr(n, CP), wu = xarr(n, CP);
    bl = xarr(nb, CP), bu = xarr(nb, CP);
    row = malloc(sizeof(float) * shape->dim);
    eta = malloc(sizeof(float) * nb), nu = malloc(sizeof(float) * nb);
    dlt = malloc(sizeof(float) * nb);
    lamlo = malloc(sizeof(double) * (nq ? nq : 1u)), lamhi = malloc(sizeof(double) * (nq ? nq : 1u));
    if (!sc || !wl || !wu || !bl || !bu || !row || !eta || !nu || !dlt || !lamlo || !lamhi) {
        st = KVQ_E_NOMEM;
        goto fail;
    }
    st = step_annotations(eta, nu, dlt, &delta, cache, q, scale, shape);
    if (st != KVQ_OK) goto fail;
    kvq_xs_init(&w);
    mpfr_inits2(CP, stl, stu, ttl, ttu, x, y, z, al, au, (mpfr_ptr)0);
    /* Estimated scores s^_t (exact) and weights exp(s^_t - m), m the greatest
     * over all tokens: every quantity below is a ratio of sums of weights or a
     * difference of log-masses, so the common factor e^m cancels exactly. */
    for (uint32_t t = 0; t < n; t++) {
        xkrow(row, cache, shape, t, 1, &w);
        xscore(sc[t], NULL, q, row, shape->dim, scale, &w);
    }
    xweights(wl, wu, sc, NULL, n);
    mpfr_set_zero(stl, 1), mpfr_set_zero(stu, 1), mpfr_set_zero(ttl, 1), mpfr_set_zero(ttu, 1);
    for (uint32_t b = 0; b < nb; b++) {
        mpfr_set_zero(bl[b], 1), mpfr_set_zero(bu[b], 1);
        for (uint32_t i = 0; i < kvq_cert_block_tokens(shape, b); i++) {
            mpfr_add(bl[b], bl[b], wl[kvq_cert_block_first(b) + i], MPFR_RNDD);
            mpfr_add(bu[b], bu[b], wu[kvq_cert_block_first(b) + i], MPFR_RNDU);
        }
        mpfr_add(sel[b] ? stl : ttl, sel[b] ? stl : ttl, bl[b], MPFR_RNDD);
        mpfr_add(sel[b] ? stu : ttu, sel[b] ? stu : ttu, bu[b], MPFR_RNDU);
    }
    /* alpha^_T = W_T / (W_T + W_S) [CERT-SEL-02] item 2: increasing in W_T,
     * decreasing in W_S */
    mpfr_add(x, ttl, stu, MPFR_RNDU);
    mpfr_div(al, ttl, x, MPFR_RNDD);
    mpfr_add(x, ttu, stl, MPFR_RNDD);
    mpfr_div(au, ttu, x, MPFR_RNDU);
    out->alpha_lo = mpfr_get_d(al, MPFR_RNDD);
    out->alpha_hi = mpfr_get_d(au, MPFR_RNDU);

    if (nt == 0) {                                /* T empty: every check is vacuous */
        margin_inf(&out->coverage, tol2);
        margin_inf(&out->rank, tol2);
        margin_inf(&out->boundary, tol2);
    } else {
        /* coverage: ln odds(1 - tau) - ln odds(alpha^_T), odds(alpha^_T) =
         * W_T / W_S; 1 - tau is exact (tau binary32, CP bits) */
        mpfr_set_flt(z, prm->tau, MPFR_RNDN);
        mpfr_ui_sub(z, 1, z, MPFR_RNDN);          /* exact */
        mpfr_set_flt(y, prm->tau, MPFR_RNDN);
        mpfr_div(x, z, y, MPFR_RNDD);
        mpfr_log(x, x, MPFR_RNDD);                /* ln odds(1 - tau), lower; -inf at tau = 1 */
        mpfr_log(y, ttu, MPFR_RNDU);
        mpfr_sub(x, x, y, MPFR_RNDD);
        mpfr_log(y, stl, MPFR_RNDD);
        mpfr_add(x, x, y, MPFR_RNDD);
        out->coverage.lo = mpfr_get_d(x, MPFR_RNDD);
        mpfr_set_flt(y, prm->tau, MPFR_RNDN);
        mpfr_div(x, z, y, MPFR_RNDU);
        mpfr_log(x, x, MPFR_RNDU);
        mpfr_log(y, ttl, MPFR_RNDD);
        mpfr_sub(x, x, y, MPFR_RNDU);
        mpfr_log(y, stu, MPFR_RNDU);
        mpfr_add(x, x, y, MPFR_RNDU);
        out->coverage.hi = mpfr_get_d(x, MPFR_RNDU);
        out->coverage.tol = tol2;
        decide(&out->coverage, 0);
        /* boundary [CERT-BND-01]: ln(1 - tau) + eps_guard - ln A(alpha^_T, Delta),
         * A increasing in alpha^ */
        mpfr_set_flt(y, delta, MPFR_RNDN);
        kvq_exact_cert_tail(x, y, au, MPFR_RNDU);
        mpfr_log(x, x, MPFR_RNDU);                /* ln A, upper */
        mpfr_log(y, z, MPFR_RNDD);
        mpfr_sub(x, y, x, MPFR_RNDD);
        mpfr_set_flt(y, prm->eps_guard, MPFR_RNDN);
        mpfr_add(x, x, y, MPFR_RNDD);
        out->boundary.lo = mpfr_get_d(x, MPFR_RNDD);
        mpfr_set_flt(y, delta, MPFR_RNDN);
        kvq_exact_cert_tail(x, y, al, MPFR_RNDD);
        mpfr_log(x, x, MPFR_RNDD);                /* ln A, lower */
        mpfr_log(y, z, MPFR_RNDU);
        mpfr_sub(x, y, x, MPFR_RNDU);
        mpfr_set_flt(y, prm->eps_guard, MPFR_RNDN);
        mpfr_add(x, x, y, MPFR_RNDU);
        out->boundary.hi = mpfr_get_d(x, MPFR_RNDU);
        out->boundary.tol = tol2;
        decide(&out->boundary, 0);
        /* ranking [CERT-RANK-01]: log-masses relative to m (the shift cancels);
         * U = max_T (L_b + Delta_b), lambda_r = r-th greatest over the full
         * blocks of S of L_b - Delta_b; order statistics are monotone in each
         * argument, so the r-th greatest of the lower (upper) ends encloses it. */
        uint32_t ns = 0;
        for (uint32_t b = 0; b < nq; b++) {
            double lo, hi;
            mpfr_log(x, bl[b], MPFR_RNDD);
            lo = mpfr_get_d(x, MPFR_RNDD);
            mpfr_log(x, bu[b], MPFR_RNDU);
            hi = mpfr_get_d(x, MPFR_RNDU);
            if (sel[b]) {
                lamlo[ns] = dn1(lo - (double)dlt[b]);
                lamhi[ns] = up1(hi - (double)dlt[b]);
                ns++;
            } else {
                double a = dn1(lo + (double)dlt[b]), c = up1(hi + (double)dlt[b]);
                if (a > ulo) ulo = a;
                if (c > uhi) uhi = c;
            }
        }
        if (ns < prm->r) {
            out->rank.lo = out->rank.hi = -INFINITY; /* lambda_r = -inf */
        } else {
            double llo, lhi;
            qsort(lamlo, ns, sizeof *lamlo, desc_d);
            qsort(lamhi, ns, sizeof *lamhi, desc_d);
            llo = lamlo[prm->r - 1u], lhi = lamhi[prm->r - 1u];
            out->rank.lo = dn1(dn1(llo - uhi) - (double)prm->eps_guard);
            out->rank.hi = up1(up1(lhi - ulo) - (double)prm->eps_guard);
        }
        out->rank.tol = tol2;
        decide(&out->rank, 1);
    }
    /* value check [CERT-LAD-02]: E_val = sum_A rho_b eta'_b against v_tol sum_A
     * rho_b nu_b over the attended blocks A [CERT-VAR-01], rho_b = W_b / W_A
     * (the common W_A cancels in the log ratio).  The paper variant's Phase-2
     * masses use the originals' exact scores in the selected blocks. */
    if (prm->variant == KVQ_CERT_VARIANT_PAPER) {
        for (uint32_t t = 0; t < n; t++) {
            if (!sel[t / KVQ_CERT_BLOCK]) continue;
            xkrow(row, cache, shape, t, 0, &w);
            xscore(sc[t], NULL, q, row, shape->dim, scale, &w);
        }
        xweights(wl, wu, sc, NULL, n);
        for (uint32_t b = 0; b < nb; b++) {
            mpfr_set_zero(bl[b], 1), mpfr_set_zero(bu[b], 1);
            for (uint32_t i = 0; i < kvq_cert_block_tokens(shape, b); i++) {
                mpfr_add(bl[b], bl[b], wl[kvq_cert_block_first(b) + i], MPFR_RNDD);
                mpfr_add(bu[b], bu[b], wu[kvq_cert_block_first(b) + i], MPFR_RNDU);
            }
        }
    }
    mpfr_set_zero(x, 1), mpfr_set_zero(y, 1);     /* E lower / upper (times W_A) */
    mpfr_set_zero(al, 1), mpfr_set_zero(au, 1);   /* N lower / upper */
    for (uint32_t b = 0; b < nb; b++) {
        if (!sel[b] && prm->variant != KVQ_CERT_VARIANT_PAPER) continue;
        mpfr_mul_d(z, bl[b], (double)nu[b], MPFR_RNDD);
        mpfr_add(al, al, z, MPFR_RNDD);
        mpfr_mul_d(z, bu[b], (double)nu[b], MPFR_RNDU);
        mpfr_add(au, au, z, MPFR_RNDU);
        if (b == nq || (prom && prom[b]) || eta[b] == 0.0f) continue; /* eta' = 0 */
        mpfr_mul_d(z, bl[b], (double)eta[b], MPFR_RNDD);
        mpfr_add(x, x, z, MPFR_RNDD);
        mpfr_mul_d(z, bu[b], (double)eta[b], MPFR_RNDU);
        mpfr_add(y, y, z, MPFR_RNDU);
    }
    if (mpfr_zero_p(y)) {
        margin_inf(&out->value, tol4);            /* E_val = 0 */
    } else {
        mpfr_set_flt(z, prm->vtol, MPFR_RNDN);
        mpfr_mul(stl, al, z, MPFR_RNDD);
        mpfr_log(stl, stl, MPFR_RNDD);            /* -inf when vtol or N is 0 */
        mpfr_log(ttu, y, MPFR_RNDU);
        mpfr_sub(stl, stl, ttu, MPFR_RNDD);
        out->value.lo = mpfr_get_d(stl, MPFR_RNDD);
        mpfr_mul(stu, au, z, MPFR_RNDU);
        mpfr_log(stu, stu, MPFR_RNDU);
        mpfr_log(ttl, x, MPFR_RNDD);
        mpfr_sub(stu, stu, ttl, MPFR_RNDU);
        out->value.hi = mpfr_get_d(stu, MPFR_RNDU);
        out->value.tol = tol4;
        decide(&out->value, 0);
    }
    out->selector_ok = !out->clamp_ok ? 0 : (out->cap || out->coverage.ok == 1) ? 1
                                            : out->coverage.ok;
    out->checks = (out->rank.pass == 1 ? KVQ_CERT_CHECK_RANK : 0u) |
                  (out->boundary.pass == 1 ? KVQ_CERT_CHECK_BOUNDARY : 0u) |
                  (out->value.pass == 1 ? KVQ_CERT_CHECK_VALUE : 0u) |
                  (out->coverage.pass == 1 ? KVQ_CERT_CHECK_COVERAGE : 0u);
    mpfr_clears(stl, stu, ttl, ttu, x, y, z, al, au, (mpfr_ptr)0);
    kvq_xs_clear(&w);
    st = KVQ_OK;
fail:
    xarr_free(sc, n), xarr_free(wl, n), xarr_free(wu, n), xarr_free(bl, nb), xarr_free(bu, nb);
    free(row), free(eta), free(nu), free(dlt), free(lamlo), free(lamhi);
    return st;
}
