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

#include "kvq_exact.h"

#define F32_MIN_NORMAL 0x1p-126f
#define F16_MIN_NORMAL 0x1p-14f

typedef struct xs {
    mpfr_t a, b, c, d, e;
} xs;

static void xs_init(xs *w)
{
    mpfr_inits2(KVQ_XPREC, w->a, w->b, w->c, w->d, w->e, (mpfr_ptr)0);
}

static void xs_clear(xs *w)
{
    mpfr_clears(w->a, w->b, w->c, w->d, w->e, (mpfr_ptr)0);
}

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
static float sub32(float a, float b, xs *w)
{
    mpfr_set_flt(w->a, a, MPFR_RNDN);
    mpfr_set_flt(w->b, b, MPFR_RNDN);
    mpfr_sub(w->c, w->a, w->b, MPFR_RNDN);        /* exact at KVQ_XPREC */
    (void)kvq_exact_round(w->c, w->c, &kvq_xfmt_binary32);
    return mpfr_get_flt(w->c, MPFR_RNDN);         /* exact: on the grid */
}

/* RN32(a + b). */
static float add32(float a, float b, xs *w)
{
    mpfr_set_flt(w->a, a, MPFR_RNDN);
    mpfr_set_flt(w->b, b, MPFR_RNDN);
    mpfr_add(w->c, w->a, w->b, MPFR_RNDN);        /* exact */
    (void)kvq_exact_round(w->c, w->c, &kvq_xfmt_binary32);
    return mpfr_get_flt(w->c, MPFR_RNDN);
}

/* RN32(a / b), b > 0, from the exact quotient; finite for CERT's operands. */
static float div32(float a, float b, xs *w)
{
    mpfr_set_flt(w->a, a, MPFR_RNDN);
    mpfr_set_flt(w->b, b, MPFR_RNDN);
    (void)kvq_exact_div_round(w->c, w->a, w->b, &kvq_xfmt_binary32);
    return mpfr_get_flt(w->c, MPFR_RNDN);
}

/* RN32(c sigma + z), the pinned reconstruction [CERT-K8-03]; *ov on overflow. */
static float deq32(long code, float s, float z, int *ov, xs *w)
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
static long xkey_pinned(float k, float s, float z, uint32_t ties, uint32_t *flags, xs *w)
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

/* Real code and its alternative [CERT-K8-06]: [KIVI-B-02] with the interval
 * [-129, 128] and the clamp [-128, 127].  Returns 1 when ambiguous. */
static int xkey_real(long *code, long *alt, float k, float s, float z, uint32_t ties, xs *w)
{
    uint32_t dummy = 0;
    long kf, lo_c, hi_c;
    int cmp;
    if (s == 0.0f) {
        *code = *alt = 0;
        return 0;
    }
    mpfr_set_flt(w->a, k, MPFR_RNDN);
    mpfr_set_flt(w->b, z, MPFR_RNDN);
    mpfr_sub(w->d, w->a, w->b, MPFR_RNDN);        /* d = k - z, exact */
    mpfr_set_flt(w->b, s, MPFR_RNDN);
    mpfr_div(w->c, w->d, w->b, MPFR_RNDD);        /* <= u, same floor as u */
    if (mpfr_cmp_si(w->c, KVQ_CERT_KCODE_MAX + 1) > 0) { /* decisively 127 */
        *code = *alt = KVQ_CERT_KCODE_MAX;
        return 0;
    }
    if (mpfr_cmp_si(w->c, KVQ_CERT_KCODE_MIN - 1) < 0) { /* decisively -128 */
        *code = *alt = KVQ_CERT_KCODE_MIN;
        return 0;
    }
    mpfr_floor(w->c, w->c);
    kf = mpfr_get_si(w->c, MPFR_RNDN);
    mpfr_set_si(w->e, 2 * kf + 1, MPFR_RNDN);
    mpfr_mul(w->e, w->e, w->b, MPFR_RNDN);        /* (2kf+1) sigma, exact */
    mpfr_div_2ui(w->e, w->e, 1, MPFR_RNDN);       /* h sigma, exact */
    mpfr_sub(w->c, w->d, w->e, MPFR_RNDN);        /* d - h sigma, exact */
    cmp = mpfr_sgn(w->c);
    lo_c = clamp_key(kf, &dummy);
    hi_c = clamp_key(kf + 1, &dummy);
    if (cmp < 0)
        *code = lo_c;
    else if (cmp > 0)
        *code = hi_c;
    else if (ties == KVQ_TIES_AWAY)
        *code = kf >= 0 ? hi_c : lo_c;
    else
        *code = (kf % 2 == 0) ? lo_c : hi_c;
    *alt = *code;
    if (lo_c == hi_c) return 0;
    /* radius 2^-22 |d| + 2^-148 sigma, exact [KIVI-B-02] */
    mpfr_abs(w->a, w->d, MPFR_RNDN);
    mpfr_div_2ui(w->a, w->a, 22, MPFR_RNDN);
    mpfr_mul_2si(w->e, w->b, -148, MPFR_RNDN);
    mpfr_add(w->a, w->a, w->e, MPFR_RNDN);
    if (mpfr_cmpabs(w->c, w->a) <= 0) {
        *alt = *code == lo_c ? hi_c : lo_c;
        return 1;
    }
    return 0;
}

kvq_status kvq_exact_cert_quantize_keys(kvq_exact_cert_keys_out *out, const float *k,
                                        const kvq_cert_shape *shape, const kvq_policy *pol)
{
    uint32_t nq, d, f = 0;
    uint64_t namb = 0;
    kvq_status st;
    xs w;
    if (out == NULL || k == NULL || shape == NULL || out->codes == NULL || out->sigma == NULL ||
        out->z == NULL || out->khat == NULL || out->code_real == NULL || out->code_alt == NULL)
        return KVQ_E_PARAM;
    if (kvq_policy_check(pol) != KVQ_OK) return KVQ_E_PARAM;
    if (!kvq_cert_shape_ok(shape)) return KVQ_E_SHAPE;
    st = check_f16_array(k, kvq_cert_in_index(shape, shape->tokens, 0));
    if (st != KVQ_OK) return st;
    nq = kvq_cert_full_blocks(shape);
    d = shape->dim;
    xs_init(&w);
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
    xs_clear(&w);
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
    xs w;
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
    xs_init(&w);
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
    xs_clear(&w);
    return KVQ_OK;
}

/* ---- gamma, Delta, the key bound ---------------------------------------- */

/* dst = gamma exactly [CERT-K8-04]: 2^-22 (|u| + |l| + |z|) + 2^-16 sigma + 2^-149,
 * 0 for sigma == 0.  Every step is exact at KVQ_XPREC. */
static void xgamma(mpfr_t dst, float l, float u, float s, float z, xs *w)
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
    xs w;
    float r;
    xs_init(&w);
    mpfr_init2(g, KVQ_XPREC);
    xgamma(g, l, u, sigma, z, &w);
    r = ru32(g);
    mpfr_clear(g);
    xs_clear(&w);
    return r;
}

int kvq_exact_cert_key_within(float k, float khat, float l, float u, float sigma, float z,
                              int with_gamma)
{
    mpfr_t bnd, err;
    xs w;
    int ok;
    if (!isfinite(khat)) return 0;
    xs_init(&w);
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
    xs_clear(&w);
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
    xs w;
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
    xs_init(&w);
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
    xs_clear(&w);
    return KVQ_OK;
}
