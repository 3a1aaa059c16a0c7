/*
 * xfloat.c -- correctly rounded binary formats on top of MPFR [POL-FMT-01].
 *
 * MPFR's exponent range is left alone (it is process-wide state).  A value is
 * put on a format's grid by rounding it, once, to the number of significant
 * bits that the grid offers at the value's binade: p for normal values, fewer
 * for subnormal ones.  That is one rounding of the exact value, so there is no
 * double rounding.
 */
#include "kvq_exact.h"
#include "xscratch.h"

const kvq_xfmt kvq_xfmt_binary32 = { 24, -148, 128 };
const kvq_xfmt kvq_xfmt_binary16 = { 11, -23, 16 };

/* Bits the grid offers in the binade [2^(e-1), 2^e): min(p, e - emin_sub + 1). */
static long grid_bits(long e, const kvq_xfmt *fmt)
{
    long b = e - fmt->emin_sub + 1;
    return b < fmt->prec ? b : fmt->prec;
}

/* dst = +-2^(emin_sub-1) (the smallest subnormal) or +-0 for a value whose
 * binade lies below the grid: only |v| > half the smallest subnormal rounds up
 * (an exact half is a tie, to the even neighbour 0). */
static void below_grid(mpfr_t dst, int above_half, int sign, const kvq_xfmt *fmt)
{
    if (above_half) {
        mpfr_set_ui_2exp(dst, 1, fmt->emin_sub - 1, MPFR_RNDN);
        if (sign < 0) mpfr_neg(dst, dst, MPFR_RNDN);
    } else {
        mpfr_set_zero(dst, sign < 0 ? -1 : 1);
    }
}

static int overflowed(const mpfr_t v, const kvq_xfmt *fmt)
{
    return !mpfr_zero_p(v) && mpfr_get_exp(v) > fmt->emax;
}

int kvq_exact_round(mpfr_t dst, const mpfr_t v, const kvq_xfmt *fmt)
{
    long e, b;
    if (mpfr_zero_p(v)) {
        mpfr_set(dst, v, MPFR_RNDN);
        return 0;
    }
    e = mpfr_get_exp(v);
    b = grid_bits(e, fmt);
    if (b >= 1) {
        mpfr_t t;
        mpfr_init2(t, b);
        mpfr_set(t, v, MPFR_RNDN); /* one rounding, ties to even */
        mpfr_set(dst, t, MPFR_RNDN); /* exact: prec(dst) >= b */
        mpfr_clear(t);
    } else if (b == 0) {
        /* |v| in [2^(emin_sub-2), 2^(emin_sub-1)): compare with the midpoint. */
        mpfr_t h;
        mpfr_init2(h, 2);
        mpfr_set_ui_2exp(h, 1, fmt->emin_sub - 2, MPFR_RNDN);
        below_grid(dst, mpfr_cmpabs(v, h) > 0, mpfr_sgn(v), fmt);
        mpfr_clear(h);
    } else {
        below_grid(dst, 0, mpfr_sgn(v), fmt);
    }
    return overflowed(dst, fmt);
}

int kvq_exact_div_round(mpfr_t dst, const mpfr_t a, const mpfr_t b, const kvq_xfmt *fmt)
{
    mpfr_t q;
    long e, bits;
    if (mpfr_zero_p(a)) {
        mpfr_div(dst, a, b, MPFR_RNDN); /* a signed zero, exact */
        return 0;
    }
    /* The exponent of the exact quotient: truncation never leaves its binade. */
    mpfr_init2(q, 64);
    mpfr_div(q, a, b, MPFR_RNDZ);
    e = mpfr_get_exp(q);
    bits = grid_bits(e, fmt);
    if (bits >= 1) {
        mpfr_set_prec(q, bits);
        mpfr_div(q, a, b, MPFR_RNDN); /* correctly rounded onto the grid */
        mpfr_set(dst, q, MPFR_RNDN);
    } else if (bits == 0) {
        /* Compare |a| with |b| * 2^(emin_sub-2), exactly. */
        mpfr_t m;
        int sign = mpfr_sgn(a) * mpfr_sgn(b);
        mpfr_init2(m, mpfr_get_prec(b));
        mpfr_mul_2si(m, b, fmt->emin_sub - 2, MPFR_RNDN);
        below_grid(dst, mpfr_cmpabs(a, m) > 0, sign, fmt);
        mpfr_clear(m);
    } else {
        below_grid(dst, 0, mpfr_sgn(a) * mpfr_sgn(b), fmt);
    }
    mpfr_clear(q);
    return overflowed(dst, fmt);
}

float kvq_exact_round_float(float v, const kvq_xfmt *fmt, int *overflow)
{
    mpfr_t x;
    float r;
    mpfr_init2(x, 64);
    mpfr_set_flt(x, v, MPFR_RNDN); /* exact */
    *overflow = kvq_exact_round(x, x, fmt);
    r = mpfr_get_flt(x, MPFR_RNDN); /* exact: on the grid of a format within binary32 */
    mpfr_clear(x);
    return r;
}

static long clamp_long(long c, long cmin, long cmax)
{
    return c < cmin ? cmin : c > cmax ? cmax : c;
}

int kvq_exact_real_code(long *code, long *alt, float x, float s, float z, long cmin, long cmax,
                        uint32_t ties, kvq_xscratch *w)
{
    long k, lo_c, hi_c;
    int cmp;
    if (s == 0.0f) {
        *code = *alt = 0;
        return 0;
    }
    mpfr_set_flt(w->a, x, MPFR_RNDN);
    mpfr_set_flt(w->b, z, MPFR_RNDN);
    mpfr_sub(w->d, w->a, w->b, MPFR_RNDN);        /* d = x - z, exact */
    mpfr_set_flt(w->b, s, MPFR_RNDN);
    mpfr_div(w->c, w->d, w->b, MPFR_RNDD);        /* <= u, same floor as u */
    if (mpfr_cmp_si(w->c, cmax + 1) > 0) {        /* far above: decisively cmax */
        *code = *alt = cmax;
        return 0;
    }
    if (mpfr_cmp_si(w->c, cmin - 1) < 0) {        /* far below: decisively cmin */
        *code = *alt = cmin;
        return 0;
    }
    mpfr_floor(w->c, w->c);
    k = mpfr_get_si(w->c, MPFR_RNDN);
    mpfr_set_si(w->e, 2 * k + 1, MPFR_RNDN);
    mpfr_mul(w->e, w->e, w->b, MPFR_RNDN);        /* (2k+1) s, exact */
    mpfr_div_2ui(w->e, w->e, 1, MPFR_RNDN);       /* h s, exact */
    mpfr_sub(w->c, w->d, w->e, MPFR_RNDN);        /* d - h s, exact */
    cmp = mpfr_sgn(w->c);
    lo_c = clamp_long(k, cmin, cmax);
    hi_c = clamp_long(k + 1, cmin, cmax);
    if (cmp < 0)
        *code = lo_c;
    else if (cmp > 0)
        *code = hi_c;
    else if (ties == KVQ_TIES_AWAY)
        *code = k >= 0 ? hi_c : lo_c;
    else
        *code = (k % 2 == 0) ? lo_c : hi_c;
    *alt = *code;
    if (lo_c == hi_c) return 0;
    /* radius: 2^-22 |d| + 2^-148 s, exact */
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
