/*
 * fp8.c -- FP8 E4M3 / E5M2 conversions, exact path (GNU MPFR) [POL-FP8-01..03].
 *
 * Independent of the fast path's bit manipulation: the input's value enters
 * MPFR exactly (mpfr_set_flt, or the binary16 fields as F 2^k), is rounded
 * once onto the FP8 grid by kvq_exact_round (one rounding to nearest even of
 * the exact value at the precision the grid offers in its binade: p in the
 * normal binades, fewer bits in the subnormal ones), and the code is then read
 * off the rounded value as the spec's fields and checked by decoding it back.
 * MPFR's exponent range is never changed [POL-GLOB-01]: the subnormal grid is
 * reached by choosing the precision, not by mpfr_subnormalize (which would need
 * mpfr_set_emin/mpfr_set_emax, process- or thread-wide state).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "kvq_exact_fp8.h"

/* SPEC: [POL-FMT-01] smallest subnormal 2^-9 (E4M3), 2^-16 (E5M2). */
const kvq_xfmt kvq_xfmt_e4m3 = { 4, -8, 9 };
const kvq_xfmt kvq_xfmt_e5m2 = { 3, -15, 16 };

typedef struct xfp8 {
    const kvq_xfmt *fmt;
    long bias;              /* exponent bias */
    unsigned long maxsig;   /* largest finite value = maxsig 2^maxexp */
    long maxexp;
    int has_inf;            /* E5M2: exponent field 2^(8-p) - 1 holds inf and NaNs */
    unsigned ovfcode;       /* magnitude code of the non-saturating overflow result */
    unsigned nancode;       /* magnitude code of the NaN kvq writes */
    unsigned maxcode;       /* magnitude code of the largest finite value */
} xfp8;

/* SPEC: [POL-FP8-01] bias 7, largest finite 448 = 7 2^6, overflow -> NaN. */
static const xfp8 xe4m3 = { &kvq_xfmt_e4m3, 7, 7, 6, 0, KVQ_FP8_E4M3_NAN, KVQ_FP8_E4M3_NAN,
                            KVQ_FP8_E4M3_MAXCODE };
/* SPEC: [POL-FP8-02] bias 15, largest finite 57344 = 7 2^13, overflow -> inf. */
static const xfp8 xe5m2 = { &kvq_xfmt_e5m2, 15, 7, 13, 1, KVQ_FP8_E5M2_INF, KVQ_FP8_E5M2_NAN,
                            KVQ_FP8_E5M2_MAXCODE };

static void fail(const char *what)
{
    fprintf(stderr, "kvq exact fp8: internal error: %s\n", what);
    abort();
}

/* The value of code c from its fields [POL-FP8-01..02]: with m = p - 1 fraction
 * bits, E = (c / 2^m) % 2^(7-m), F = c % 2^m:
 *   E = 0: F 2^(1 - bias - m);  otherwise (2^m + F) 2^(E - bias - m). */
static int value_of(mpfr_t dst, uint8_t c, const xfp8 *f)
{
    unsigned long m = (unsigned long)f->fmt->prec - 1ul, pm = 1ul << m;
    unsigned long e = (c / pm) % (128ul / pm), fr = c % pm;
    int neg = c / 128u == 1u;
    if (e == 128ul / pm - 1ul && (f->has_inf || fr == pm - 1ul)) {
        if (f->has_inf && fr == 0ul) {
            mpfr_set_inf(dst, neg ? -1 : 1);
            return 1;
        }
        mpfr_set_nan(dst);
        return 2;
    }
    if (e == 0ul)
        mpfr_set_ui_2exp(dst, fr, 1l - f->bias - (long)m, MPFR_RNDN);           /* exact */
    else
        mpfr_set_ui_2exp(dst, pm + fr, (long)e - f->bias - (long)m, MPFR_RNDN); /* exact */
    if (neg) mpfr_neg(dst, dst, MPFR_RNDN);                                      /* -0 for 0x80 */
    return 0;
}

int kvq_exact_fp8_e4m3_value(mpfr_t dst, uint8_t c)
{
    return value_of(dst, c, &xe4m3);
}

int kvq_exact_fp8_e5m2_value(mpfr_t dst, uint8_t c)
{
    return value_of(dst, c, &xe5m2);
}

/* The magnitude code of r, a nonzero value on f's grid with |r| <= max. */
static unsigned encode(const mpfr_t r, const xfp8 *f)
{
    long m = f->fmt->prec - 1, emin = 1 - f->bias;
    long eb = (long)mpfr_get_exp(r) - 1;   /* 2^eb <= |r| < 2^(eb+1) */
    unsigned long n;
    unsigned code;
    MPFR_DECL_INIT(t, 16); /* automatic: no allocation per call */
    mpfr_abs(t, r, MPFR_RNDN);
    if (eb < emin) {                       /* subnormal: |r| = F 2^(emin - m) */
        mpfr_mul_2si(t, t, m - emin, MPFR_RNDN);   /* exact */
        if (!mpfr_integer_p(t)) fail("subnormal not on the grid");
        n = mpfr_get_ui(t, MPFR_RNDN);
        code = (unsigned)n;
    } else {                               /* normal: |r| = (2^m + F) 2^(eb - m) */
        mpfr_mul_2si(t, t, m - eb, MPFR_RNDN);     /* exact */
        if (!mpfr_integer_p(t)) fail("normal not on the grid");
        n = mpfr_get_ui(t, MPFR_RNDN);
        code = (unsigned)((eb + f->bias) * (1l << m) + (long)n - (1l << m));
    }
    /* The code must decode to r: the encoding read back by the spec's formula. */
    if (code > f->maxcode || value_of(t, (uint8_t)code, f) != 0 || mpfr_cmpabs(t, r) != 0)
        fail("code does not decode to the rounded value");
    return code;
}

static uint8_t overflow(unsigned sign, const xfp8 *f, uint32_t policy, uint32_t *flags)
{
    if (policy == KVQ_OVERFLOW_NAN) return (uint8_t)(sign | f->ovfcode); /* [POL-FP8-03] */
    if (flags != NULL) *flags |= KVQ_FLAG_SATURATED;                     /* [POL-OV-01] */
    return (uint8_t)(sign | f->maxcode);
}

/* SPEC: [POL-FP8-03] v: the exact input (cls 0 finite, 1 infinite, 2 NaN),
 * neg: its sign bit. */
static uint8_t convert(const mpfr_t v, int cls, int neg, const xfp8 *f, uint32_t policy,
                       uint32_t *flags)
{
    unsigned sign = neg ? KVQ_FP8_SIGN : 0u;
    MPFR_DECL_INIT(r, 16);
    MPFR_DECL_INIT(mx, 16);
    if (cls == 2) return (uint8_t)(sign | f->nancode);   /* NaN in, NaN out, sign kept */
    if (cls == 1) return overflow(sign, f, policy, flags);
    (void)kvq_exact_round(r, v, f->fmt);  /* r = RN(v) on the grid: err <= 1/2 ulp, one rounding */
    mpfr_set_ui_2exp(mx, f->maxsig, f->maxexp, MPFR_RNDN);
    if (mpfr_cmpabs(r, mx) > 0) return overflow(sign, f, policy, flags); /* |RN(v)| > max */
    if (mpfr_zero_p(r)) return (uint8_t)sign;                            /* RN to a signed zero */
    return (uint8_t)(sign | encode(r, f));
}

static uint8_t from_f32(float x, const xfp8 *f, uint32_t policy, uint32_t *flags)
{
    int cls;
    MPFR_DECL_INIT(v, 24);
    mpfr_set_flt(v, x, MPFR_RNDN);        /* exact: 24 bits */
    cls = mpfr_nan_p(v) ? 2 : mpfr_inf_p(v) ? 1 : 0;
    /* The sign from the float itself: MPFR does not specify the sign of a NaN. */
    return convert(v, cls, signbit(x) != 0, f, policy, flags);
}

/* The binary16 encoding h by its fields: E = (h / 1024) % 32, F = h % 1024,
 * E = 0: F 2^-24; E = 31: inf (F = 0) or NaN; otherwise (1024 + F) 2^(E-25). */
static uint8_t from_f16(uint16_t h, const xfp8 *f, uint32_t policy, uint32_t *flags)
{
    unsigned long e = (h / 1024u) % 32u, fr = h % 1024u;
    int neg = h / 32768u == 1u, cls = 0;
    MPFR_DECL_INIT(v, 16);
    if (e == 31ul) {
        cls = fr ? 2 : 1;
        mpfr_set_zero(v, 1);
    } else {
        mpfr_set_ui_2exp(v, e ? 1024ul + fr : fr, (e ? (long)e : 1l) - 25, MPFR_RNDN); /* exact */
        if (neg) mpfr_neg(v, v, MPFR_RNDN);
    }
    return convert(v, cls, neg, f, policy, flags);
}

uint8_t kvq_exact_fp8_e4m3_from_f32(float x, uint32_t overflow_policy, uint32_t *flags)
{
    return from_f32(x, &xe4m3, overflow_policy, flags);
}

uint8_t kvq_exact_fp8_e4m3_from_f16(uint16_t h, uint32_t overflow_policy, uint32_t *flags)
{
    return from_f16(h, &xe4m3, overflow_policy, flags);
}

uint8_t kvq_exact_fp8_e5m2_from_f32(float x, uint32_t overflow_policy, uint32_t *flags)
{
    return from_f32(x, &xe5m2, overflow_policy, flags);
}

uint8_t kvq_exact_fp8_e5m2_from_f16(uint16_t h, uint32_t overflow_policy, uint32_t *flags)
{
    return from_f16(h, &xe5m2, overflow_policy, flags);
}
