/*
 * kivi.c -- KIVI asymmetric group quantizer, exact path (GNU MPFR).
 *
 * Two answers per element:
 *  - the pinned code: the spec's binary32 operation sequence, each operation
 *    evaluated exactly and rounded once onto the binary32 grid (exact level);
 *  - the real code: clamp(round(u)) of the exact quotient u = (x - z) / s,
 *    decided by exact comparisons, with the neighbour accepted when u lies
 *    within the arithmetic radius of a half-integer (bounded level) [KIVI-B-01].
 */
#include <math.h>
#include <stdlib.h>

#include "kvq_exact.h"
#include "xscratch.h"

#define F32_MAX        0x1.fffffep+127f
#define F32_MIN_NORMAL 0x1p-126f
#define F16_MIN_NORMAL 0x1p-14f

/* Read one input under the subnormal policy [POL-SN-01]. */
static float read_input(float v, const kvq_policy *pol, uint32_t *flags)
{
    if (v != 0.0f && fabsf(v) < F32_MIN_NORMAL) {
        *flags |= KVQ_FLAG_SUBNORMAL;
        if (pol->subnormal == KVQ_SUBNORMAL_DAZ) return signbit(v) ? -0.0f : 0.0f;
    }
    return v;
}

/* RN32(a - b) from the exact difference; saturates per policy.  Returns 1 on
 * overflow (the caller decides whether that is an error). */
static int sub_round32(float *out, float a, float b, kvq_xscratch *w)
{
    int ov;
    mpfr_set_flt(w->a, a, MPFR_RNDN);
    mpfr_set_flt(w->b, b, MPFR_RNDN);
    mpfr_sub(w->c, w->a, w->b, MPFR_RNDN); /* exact at KVQ_XPREC */
    ov = kvq_exact_round(w->c, w->c, &kvq_xfmt_binary32);
    *out = ov ? (mpfr_sgn(w->c) < 0 ? -F32_MAX : F32_MAX) : mpfr_get_flt(w->c, MPFR_RNDN);
    return ov;
}

/* RN32(a / b), b a positive normal binary32. */
static float div_round32(float a, float b, kvq_xscratch *w)
{
    mpfr_set_flt(w->a, a, MPFR_RNDN);
    mpfr_set_flt(w->b, b, MPFR_RNDN);
    /* Finite: with binary32 metadata |a/b| <= cmax (1 + 2^-23); with binary16
     * metadata a scale below 65504 implies a small range, hence a small |a|,
     * and |a/b| < 2^128 / 65504 otherwise. */
    (void)kvq_exact_div_round(w->c, w->a, w->b, &kvq_xfmt_binary32);
    return mpfr_get_flt(w->c, MPFR_RNDN);
}

/* Pinned metadata of a group [KIVI-Q-01..03, KIVI-M-01..03]. */
static kvq_status xgroup_meta(float *scale, float *zero, uint32_t *flags, float mn, float mx,
                              uint32_t bits, uint32_t meta, const kvq_policy *pol,
                              kvq_xscratch *w)
{
    float r, s, z;
    if (sub_round32(&r, mx, mn, w)) {
        if (pol->overflow == KVQ_OVERFLOW_NAN) return KVQ_E_RANGE;
        *flags |= KVQ_FLAG_SATURATED;
    }
    s = div_round32(r, (float)kvq_code_max(bits), w);
    z = mn == 0.0f ? 0.0f : mn;
    if (meta == KVQ_META_F16) {
        int ov_s, ov_z;
        s = kvq_exact_round_float(s, &kvq_xfmt_binary16, &ov_s);
        z = kvq_exact_round_float(z, &kvq_xfmt_binary16, &ov_z);
        if (ov_s || ov_z) {
            if (pol->overflow == KVQ_OVERFLOW_NAN) return KVQ_E_RANGE;
            *flags |= KVQ_FLAG_SATURATED;
            if (ov_s) s = 0x1.ffcp+15f;
            if (ov_z) z = z < 0.0f ? -0x1.ffcp+15f : 0x1.ffcp+15f;
        }
        if (z == 0.0f) z = 0.0f;
        if (s < F16_MIN_NORMAL) s = 0.0f;
    } else if (s < F32_MIN_NORMAL) {
        s = 0.0f;
    }
    if (s == 0.0f) *flags |= KVQ_FLAG_ZERO_SCALE;
    *scale = s;
    *zero = z;
    return KVQ_OK;
}

/* Clamp an integer code into [0, cmax], flagging. */
static uint32_t clamp_code(long c, uint32_t cmax, uint32_t *flags)
{
    if (c < 0) {
        *flags |= KVQ_FLAG_CLAMPED;
        return 0u;
    }
    if (c > (long)cmax) {
        *flags |= KVQ_FLAG_CLAMPED;
        return cmax;
    }
    return (uint32_t)c;
}

/* The pinned code: q = RN32(RN32(x - z) / s), rounded by the tie rule and
 * clamped [KIVI-Q-04, KIVI-Q-05]. */
static uint32_t xcode_pinned(float xv, float s, float z, uint32_t bits, const kvq_policy *pol,
                             uint32_t *flags, kvq_xscratch *w)
{
    uint32_t cmax = kvq_code_max(bits);
    float t, q;
    if (s == 0.0f) return 0u;
    if (sub_round32(&t, xv, z, w)) *flags |= KVQ_FLAG_SATURATED;
    q = div_round32(t, s, w);
    if (q > (float)cmax + 1.0f) return clamp_code((long)cmax + 1, cmax, flags);
    if (q < -1.0f) return clamp_code(-1, cmax, flags);
    mpfr_set_flt(w->a, q, MPFR_RNDN);
    if (pol->ties == KVQ_TIES_AWAY)
        mpfr_round(w->a, w->a);          /* ties away from zero */
    else
        mpfr_rint(w->a, w->a, MPFR_RNDN); /* ties to even */
    return clamp_code(mpfr_get_si(w->a, MPFR_RNDN), cmax, flags);
}

/* The real code and its alternative [KIVI-B-01..02]: kvq_exact_real_code
 * (ref/exact/xfloat.c) on [0, cmax]. */
static int xcode_real(uint32_t *code, uint32_t *alt, float xv, float s, float z, uint32_t bits,
                      const kvq_policy *pol, kvq_xscratch *w)
{
    long c, a;
    int amb = kvq_exact_real_code(&c, &a, xv, s, z, 0, (long)kvq_code_max(bits), pol->ties, w);
    *code = (uint32_t)c;
    *alt = (uint32_t)a;
    return amb;
}

float kvq_exact_kivi_deq(uint32_t code, float s, float z, int *overflow)
{
    mpfr_t v, t;
    float r;
    mpfr_inits2(KVQ_XPREC, v, t, (mpfr_ptr)0);
    mpfr_set_flt(v, s, MPFR_RNDN);
    mpfr_mul_ui(v, v, code, MPFR_RNDN);           /* exact */
    mpfr_set_flt(t, z, MPFR_RNDN);
    mpfr_add(v, v, t, MPFR_RNDN);                 /* exact */
    *overflow = kvq_exact_round(v, v, &kvq_xfmt_binary32);
    r = *overflow ? (mpfr_sgn(v) < 0 ? -F32_MAX : F32_MAX) : mpfr_get_flt(v, MPFR_RNDN);
    mpfr_clears(v, t, (mpfr_ptr)0);
    return r;
}

int kvq_exact_kivi_deq_within(float y, uint32_t code, float s, float z, double *bound,
                              double *err)
{
    mpfr_t v, cs, b, t;
    int ok;
    if (!isfinite(y)) { /* a NaN or an infinity is never within a bound [KIVI-B-03] */
        if (bound != NULL) *bound = 0.0;
        if (err != NULL) *err = INFINITY;
        return 0;
    }
    mpfr_inits2(KVQ_XPREC, v, cs, b, t, (mpfr_ptr)0);
    mpfr_set_flt(cs, s, MPFR_RNDN);
    mpfr_mul_ui(cs, cs, code, MPFR_RNDN);         /* c s, exact */
    mpfr_set_flt(t, z, MPFR_RNDN);
    mpfr_add(v, cs, t, MPFR_RNDN);                /* c s + z, exact */
    /* B = 2^-23 (1 + 2^-23) (|c s| + |z|) + 2^-149, rounded upward [KIVI-B-03] */
    mpfr_abs(cs, cs, MPFR_RNDN);
    mpfr_abs(t, t, MPFR_RNDN);
    mpfr_add(b, cs, t, MPFR_RNDU);
    mpfr_mul_ui(b, b, (1ul << 23) + 1ul, MPFR_RNDU);
    mpfr_div_2ui(b, b, 46, MPFR_RNDU);
    mpfr_set_ui_2exp(t, 1, -149, MPFR_RNDN);
    mpfr_add(b, b, t, MPFR_RNDU);
    mpfr_set_flt(t, y, MPFR_RNDN);
    mpfr_sub(t, t, v, MPFR_RNDN);                 /* y - (c s + z), exact */
    mpfr_abs(t, t, MPFR_RNDN);
    ok = mpfr_cmp(t, b) <= 0;
    /* A saturated y is accepted where the exact value overflows binary32. */
    if (!ok && fabsf(y) == F32_MAX && mpfr_get_exp(v) > 128 &&
        (mpfr_sgn(v) < 0) == (y < 0.0f))
        ok = 1;
    if (bound != NULL) *bound = mpfr_get_d(b, MPFR_RNDU);
    if (err != NULL) *err = mpfr_get_d(t, MPFR_RNDU);
    mpfr_clears(v, cs, b, t, (mpfr_ptr)0);
    return ok;
}

kvq_status kvq_exact_kivi_quantize(kvq_exact_kivi_out *out, const float *x,
                                   const kvq_kivi_shape *shape, const kvq_policy *pol)
{
    uint64_t n, ng, g, e;
    uint32_t G, bits, f = 0;
    uint64_t namb = 0;
    float *meta;
    kvq_xscratch w;
    if (out == NULL || x == NULL || shape == NULL || out->codes == NULL || out->scale == NULL ||
        out->zero == NULL || out->deq == NULL || out->code_real == NULL || out->code_alt == NULL)
        return KVQ_E_PARAM;
    if (kvq_policy_check(pol) != KVQ_OK || !kvq_kivi_params_ok(shape)) return KVQ_E_PARAM;
    if (!kvq_kivi_shape_ok(shape)) return KVQ_E_SHAPE;
    n = kvq_kivi_elems(shape);
    ng = kvq_kivi_groups(shape);
    G = shape->group;
    bits = shape->bits;
    for (e = 0; e < n; e++)
        if (!isfinite(x[e])) return KVQ_E_NONFINITE;
    kvq_xs_init(&w);
    /* Metadata of every group first, kept aside, so that an overflow error
     * writes nothing [POL-OV-02]. */
    meta = malloc(2 * (size_t)ng * sizeof *meta);
    if (meta == NULL) {
        kvq_xs_clear(&w);
        return KVQ_E_NOMEM;
    }
    for (g = 0; g < ng; g++) {
        float mn = 0.0f, mx = 0.0f;
        uint32_t gf = 0;
        for (uint32_t i = 0; i < G; i++) {
            float xv = read_input(x[kvq_kivi_elem_index(shape, g, i)], pol, &gf);
            if (i == 0 || xv < mn) mn = xv;
            if (i == 0 || xv > mx) mx = xv;
        }
        if (xgroup_meta(&meta[2 * g], &meta[2 * g + 1], &gf, mn, mx, bits, shape->meta, pol,
                        &w) != KVQ_OK) {
            free(meta);
            kvq_xs_clear(&w);
            return KVQ_E_RANGE;
        }
        f |= gf;
    }
    if (pol->overflow == KVQ_OVERFLOW_NAN) {
        /* Dequantizing the pinned codes must not overflow either: the case is
         * quantize-then-dequantize [VEC-FMT-04], and nothing is written. */
        for (g = 0; g < ng; g++)
            for (uint32_t i = 0; i < G; i++) {
                uint32_t dummy = 0;
                float xv = read_input(x[kvq_kivi_elem_index(shape, g, i)], pol, &dummy);
                uint32_t cp = xcode_pinned(xv, meta[2 * g], meta[2 * g + 1], bits, pol, &dummy, &w);
                int ov;
                (void)kvq_exact_kivi_deq(cp, meta[2 * g], meta[2 * g + 1], &ov);
                if (ov) {
                    free(meta);
                    kvq_xs_clear(&w);
                    return KVQ_E_RANGE;
                }
            }
    }
    for (g = 0; g < ng; g++) {
        out->scale[g] = meta[2 * g];
        out->zero[g] = meta[2 * g + 1];
    }
    free(meta);
    for (g = 0; g < ng; g++) {
        uint8_t *grp = out->codes + kvq_kivi_group_code_offset(shape, g);
        float s = out->scale[g], z = out->zero[g];
        for (uint32_t b = 0; b < kvq_kivi_group_bytes(shape); b++) grp[b] = 0;
        for (uint32_t i = 0; i < G; i++) {
            uint64_t at = kvq_kivi_elem_index(shape, g, i);
            float xv = read_input(x[at], pol, &f);
            uint32_t cp = xcode_pinned(xv, s, z, bits, pol, &f, &w), cr, ca;
            int ov;
            kvq_pack_code(grp, i, bits, cp);
            out->deq[at] = kvq_exact_kivi_deq(cp, s, z, &ov);
            if (ov) f |= KVQ_FLAG_SATURATED;
            if (xcode_real(&cr, &ca, xv, s, z, bits, pol, &w)) namb++;
            out->code_real[at] = (uint8_t)cr;
            out->code_alt[at] = (uint8_t)ca;
        }
    }
    kvq_xs_clear(&w);
    if (namb) f |= KVQ_FLAG_AMBIGUOUS;
    out->flags = f;
    out->ambiguous = namb;
    return KVQ_OK;
}
