/*
 * fbits.c -- float <-> bit-pattern conversions.  Trusted (proofs/TRUSTED.md).
 */
#include <math.h>
#include <string.h>

#include "kvq_bits.h"

uint32_t kvq_f32_bits(float v)
{
    uint32_t b;
    memcpy(&b, &v, sizeof b);
    return b;
}

float kvq_f32_from_bits(uint32_t b)
{
    float v;
    memcpy(&v, &b, sizeof v);
    return v;
}

int kvq_f32_same(float a, float b)
{
    return kvq_f32_bits(a) == kvq_f32_bits(b);
}

/* binary16: 1 sign, 5 exponent (bias 15), 10 fraction bits. */
uint16_t kvq_f16_bits(float v, int *ok)
{
    uint32_t sign = signbit(v) ? 0x8000u : 0u;
    float a = fabsf(v);
    int e;
    float m;
    *ok = 1;
    if (isnan(v)) return (uint16_t)(sign | 0x7E00u);
    if (isinf(v)) return (uint16_t)(sign | 0x7C00u);
    if (a == 0.0f) return (uint16_t)sign;
    if (a < 0x1p-14f) {                      /* subnormal: a = f * 2^-24 */
        float f = ldexpf(a, 24);
        if (f != floorf(f)) { *ok = 0; return 0; }
        return (uint16_t)(sign | (uint32_t)f);
    }
    if (a > 0x1.ffcp+15f) { *ok = 0; return 0; }
    m = frexpf(a, &e);                       /* a = m 2^e, 1/2 <= m < 1 */
    m = ldexpf(m, 11);                       /* [1024, 2048) */
    if (m != floorf(m)) { *ok = 0; return 0; }
    return (uint16_t)(sign | (uint32_t)(e - 1 + 15) << 10 | ((uint32_t)m - 1024u));
}

float kvq_f16_from_bits(uint16_t b)
{
    uint32_t e = (b >> 10) & 0x1Fu, f = b & 0x3FFu;
    float v;
    if (e == 0x1Fu) v = f ? NAN : INFINITY;
    else if (e == 0) v = ldexpf((float)f, -24);
    else v = ldexpf((float)(f + 1024u), (int)e - 25);
    return (b & 0x8000u) ? -v : v;
}

/* RN(v) onto a binary format of p significant bits, least exponent emin and
 * largest finite value fmax: the quantum of |v| is 2^(max(E, emin) - p + 1)
 * for its leading exponent E; the scaled value rounds by nearbyint (to
 * nearest, ties to even, in the default rounding mode), exactly in binary64. */
static float round_to(float v, int p, int emin, double fmax)
{
    int e;
    if (!isfinite(v) || v == 0.0f) return v;
    (void)frexp(fabs((double)v), &e);         /* |v| = m 2^e, 1/2 <= m < 1: E = e - 1 */
    const int q = (e - 1 < emin ? emin : e - 1) - p + 1;
    double r = ldexp(nearbyint(ldexp(fabs((double)v), -q)), q);
    if (r > fmax) r = INFINITY;
    return (float)copysign(r, (double)v);
}

float kvq_round_bf16(float v)
{
    return round_to(v, 8, -126, 0x1.fep+127);
}

int kvq_bf16_exact(float v)
{
    return (kvq_f32_bits(v) & 0xFFFFu) == 0u;
}
