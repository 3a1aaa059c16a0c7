/*
 * cert.c -- CERT quantizers and block annotations, fast path (binary32).
 *
 * Every float operation below is one IEEE binary32 operation rounded to nearest
 * even (the build uses -ffp-contract=off; fmaf only where named).  The
 * sequences are the ones spec/cert.md pins; comments give the requirement and
 * the rounding at each step.  Annotations are computed with exact integer
 * arithmetic (bounds/cert.md §2), Delta with the upward recipe of [CERT-DLT-04].
 */
#include <math.h>
#include <stdlib.h>

#include "kvq.h"

#define F32_MIN_NORMAL 0x1p-126f
#define F16_MIN_NORMAL 0x1p-14f

int kvq_cert_is_f16(float v)
{
    int ov;
    if (!isfinite(v)) return 0;
    /* v is binary16 iff RN16(v) == v without overflow [CERT-L-02]; a binary32
     * subnormal rounds to a multiple of 2^-24, hence differs. */
    return kvq_round_f16(v, &ov) == v && !ov;
}

/* Non-finite values first, then non-binary16 ones [CERT-K8-05]. */
static kvq_status check_f16_array(const float *x, uint64_t n)
{
    for (uint64_t e = 0; e < n; e++)
        if (!isfinite(x[e])) return KVQ_E_NONFINITE;
    for (uint64_t e = 0; e < n; e++)
        if (!kvq_cert_is_f16(x[e])) return KVQ_E_PARAM;
    return KVQ_OK;
}

/* ---- keys [CERT-K8-01..03] ---------------------------------------------- */

/* Pinned code of one key element against stored sigma > 0, z [CERT-K8-02]. */
static int8_t key_code(float k, float sigma, float z, uint32_t ties, uint32_t *flags)
{
    float t = k - z;                     /* RN32 [CERT-K8-02] */
    float qv = t / sigma;                /* RN32, a division [CERT-K8-02] */
    int64_t c = kvq_round_int(qv, ties); /* |qv| < 2^9: exact [POL-TIE-01] */
    if (c < KVQ_CERT_KCODE_MIN) {
        *flags |= KVQ_FLAG_CLAMPED;
        return (int8_t)KVQ_CERT_KCODE_MIN;
    }
    if (c > KVQ_CERT_KCODE_MAX) {
        *flags |= KVQ_FLAG_CLAMPED;
        return (int8_t)KVQ_CERT_KCODE_MAX;
    }
    return (int8_t)c;
}

kvq_status kvq_cert_quantize_key_block(int8_t *codes, float *sigma, float *z, uint32_t *flags,
                                       const float *k, uint32_t d, const kvq_policy *pol)
{
    uint32_t f = 0;
    for (uint32_t c = 0; c < d; c++) {
        float l = k[kvq_cert_key_code_index(d, 0, c)], u = l, dd, s, m, zz;
        for (uint32_t i = 1; i < KVQ_CERT_BLOCK; i++) {
            float x = k[kvq_cert_key_code_index(d, i, c)];
            if (x < l) l = x;
            if (x > u) u = x;
        }
        dd = u - l;                      /* RN32, normal or 0 (H) [CERT-K8-01] */
        s = dd / 255.0f;                 /* RN32, a division [CERT-K8-01] */
        m = 128.0f * s;                  /* exact: a power of two, no overflow */
        zz = l + m;                      /* RN32 [CERT-K8-01] */
        if (s < F32_MIN_NORMAL) {        /* zero-range channel: u == l [CERT-K8-01] */
            s = 0.0f;
            zz = l == 0.0f ? 0.0f : l;   /* a zero l stored as +0 [POL-SZ-01] */
            f |= KVQ_FLAG_ZERO_SCALE;
        } else if (zz == 0.0f) {
            zz = 0.0f;                   /* +0 [POL-SZ-01] */
        }
        for (uint32_t i = 0; i < KVQ_CERT_BLOCK; i++) {
            uint32_t at = kvq_cert_key_code_index(d, i, c);
            codes[at] = s == 0.0f ? (int8_t)0 : key_code(k[at], s, zz, pol->ties, &f);
        }
        sigma[c] = s;
        z[c] = zz;
    }
    *flags |= f;
    return KVQ_OK;
}

kvq_status kvq_cert_quantize_keys(int8_t *codes, float *sigma, float *z, uint32_t *flags,
                                  const float *k, const kvq_cert_shape *shape,
                                  const kvq_policy *pol)
{
    uint32_t f = 0, nq;
    kvq_status st;
    if (codes == NULL || sigma == NULL || z == NULL || k == NULL || shape == NULL)
        return KVQ_E_PARAM;
    if (kvq_policy_check(pol) != KVQ_OK) return KVQ_E_PARAM;
    if (!kvq_cert_shape_ok(shape)) return KVQ_E_SHAPE;
    st = check_f16_array(k, kvq_cert_in_index(shape, shape->tokens, 0));
    if (st != KVQ_OK) return st;         /* nothing written [API-ERR-01] */
    nq = kvq_cert_full_blocks(shape);
    for (uint32_t b = 0; b < nq; b++)
        (void)kvq_cert_quantize_key_block(codes + kvq_cert_key_block_offset(shape, b),
                                          sigma + kvq_cert_key_meta_index(shape, b, 0),
                                          z + kvq_cert_key_meta_index(shape, b, 0), &f,
                                          k + kvq_cert_in_index(shape, kvq_cert_block_first(b), 0),
                                          shape->dim, pol);
    if (flags != NULL) *flags = f;
    return KVQ_OK;
}

/* Stored key metadata is well formed [CERT-K8-01]. */
static kvq_status key_meta_ok(float s, float z)
{
    if (!isfinite(s) || !isfinite(z)) return KVQ_E_NONFINITE;
    if (!(s >= 0.0f) || (s != 0.0f && s < F32_MIN_NORMAL)) return KVQ_E_PARAM;
    return KVQ_OK;
}

kvq_status kvq_cert_dequantize_keys(float *khat, const int8_t *codes, const float *sigma,
                                    const float *z, const kvq_cert_shape *shape)
{
    uint32_t nq, d;
    if (khat == NULL || codes == NULL || sigma == NULL || z == NULL || shape == NULL)
        return KVQ_E_PARAM;
    if (!kvq_cert_shape_ok(shape)) return KVQ_E_SHAPE;
    nq = kvq_cert_full_blocks(shape);
    d = shape->dim;
    for (uint64_t e = 0; e < kvq_cert_key_meta_count(shape); e++) {
        kvq_status st = key_meta_ok(sigma[e], z[e]);
        if (st != KVQ_OK) return st;
    }
    /* Two passes: an overflowing reconstruction fails before anything is written. */
    for (int pass = 0; pass < 2; pass++)
        for (uint32_t b = 0; b < nq; b++) {
            const int8_t *blk = codes + kvq_cert_key_block_offset(shape, b);
            for (uint32_t i = 0; i < KVQ_CERT_BLOCK; i++)
                for (uint32_t c = 0; c < d; c++) {
                    uint64_t m = kvq_cert_key_meta_index(shape, b, c);
                    float r = fmaf((float)blk[kvq_cert_key_code_index(d, i, c)], sigma[m],
                                   z[m]);        /* one rounding [CERT-K8-03] */
                    if (pass == 0) {
                        if (isinf(r)) return KVQ_E_RANGE;
                    } else {
                        khat[kvq_cert_in_index(shape, kvq_cert_block_first(b) + i, c)] = r;
                    }
                }
        }
    return KVQ_OK;
}

/* ---- values [CERT-V4-01..02] -------------------------------------------- */

kvq_status kvq_cert_quantize_values(uint8_t *codes, float *scale, float *zero, uint32_t *flags,
                                    const float *v, const kvq_cert_shape *shape,
                                    const kvq_policy *pol)
{
    uint32_t f = 0, nt, gpt;
    kvq_status st;
    if (codes == NULL || scale == NULL || zero == NULL || v == NULL || shape == NULL)
        return KVQ_E_PARAM;
    if (kvq_policy_check(pol) != KVQ_OK) return KVQ_E_PARAM;
    if (!kvq_cert_shape_ok(shape)) return KVQ_E_SHAPE;
    st = check_f16_array(v, kvq_cert_in_index(shape, shape->tokens, 0));
    if (st != KVQ_OK) return st;
    nt = kvq_cert_quant_tokens(shape);
    gpt = kvq_cert_value_groups_per_token(shape);
    for (uint32_t t = 0; t < nt; t++)
        for (uint32_t j = 0; j < gpt; j++) {
            uint64_t g = kvq_cert_value_group(shape, t, j);
            /* KIVI, bits 4, group 16, binary16 metadata [CERT-V4-01]; binary16
             * inputs cannot overflow it, so the status is KVQ_OK. */
            st = kvq_kivi_quantize_group(codes + kvq_cert_value_code_offset(shape, t, j),
                                         &scale[g], &zero[g], &f,
                                         v + kvq_cert_in_index(shape, t, kvq_cert_value_channel(j, 0)), 1,
                                         KVQ_CERT_VGROUP, KVQ_CERT_VBITS, KVQ_META_F16, pol);
            if (st != KVQ_OK) return st; /* unreachable [CERT-L-02] */
        }
    if (flags != NULL) *flags = f;
    return KVQ_OK;
}

/* Stored value metadata: binary16 numbers, scale +0 or >= 2^-14 [CERT-V4-01]. */
static kvq_status value_meta_ok(float s, float z)
{
    if (!isfinite(s) || !isfinite(z)) return KVQ_E_NONFINITE;
    if (!kvq_cert_is_f16(s) || !kvq_cert_is_f16(z)) return KVQ_E_PARAM;
    if (!(s >= 0.0f) || (s != 0.0f && s < F16_MIN_NORMAL)) return KVQ_E_PARAM;
    return KVQ_OK;
}

static kvq_status value_meta_all_ok(const float *scale, const float *zero,
                                    const kvq_cert_shape *shape)
{
    for (uint64_t g = 0; g < kvq_cert_value_groups(shape); g++) {
        kvq_status st = value_meta_ok(scale[g], zero[g]);
        if (st != KVQ_OK) return st;
    }
    return KVQ_OK;
}

/* v^ of element i of token t's group j [CERT-V4-02]: no overflow, |v^| < 2^20. */
static float value_deq(const uint8_t *codes, const float *scale, const float *zero,
                       const kvq_cert_shape *shape, uint32_t t, uint32_t j, uint32_t i)
{
    uint64_t g = kvq_cert_value_group(shape, t, j);
    float c = (float)kvq_unpack_code(codes + kvq_cert_value_code_offset(shape, t, j), i,
                                     KVQ_CERT_VBITS);
    return fmaf(c, scale[g], zero[g]);   /* one rounding [CERT-V4-02] */
}

kvq_status kvq_cert_dequantize_values(float *vhat, const uint8_t *codes, const float *scale,
                                      const float *zero, const kvq_cert_shape *shape)
{
    uint32_t nt, gpt;
    kvq_status st;
    if (vhat == NULL || codes == NULL || scale == NULL || zero == NULL || shape == NULL)
        return KVQ_E_PARAM;
    if (!kvq_cert_shape_ok(shape)) return KVQ_E_SHAPE;
    st = value_meta_all_ok(scale, zero, shape);
    if (st != KVQ_OK) return st;
    nt = kvq_cert_quant_tokens(shape);
    gpt = kvq_cert_value_groups_per_token(shape);
    for (uint32_t t = 0; t < nt; t++)
        for (uint32_t j = 0; j < gpt; j++)
            for (uint32_t i = 0; i < KVQ_CERT_VGROUP; i++)
                vhat[kvq_cert_in_index(shape, t, kvq_cert_value_channel(j, i))] =
                    value_deq(codes, scale, zero, shape, t, j, i);
    return KVQ_OK;
}

/* ---- annotations: exact integer arithmetic (bounds/cert.md §2) ---------- */

/* Unsigned 128-bit integers from two 64-bit halves (plain C11). */
typedef struct u128 {
    uint64_t hi, lo;
} u128;

static u128 u128_mul64(uint64_t a, uint64_t b)
{
    uint64_t al = a & 0xFFFFFFFFu, ah = a >> 32, bl = b & 0xFFFFFFFFu, bh = b >> 32;
    uint64_t ll = al * bl, lh = al * bh, hl = ah * bl, hh = ah * bh;
    uint64_t mid = (ll >> 32) + (lh & 0xFFFFFFFFu) + (hl & 0xFFFFFFFFu);
    u128 r;
    r.lo = (mid << 32) | (ll & 0xFFFFFFFFu);
    r.hi = hh + (lh >> 32) + (hl >> 32) + (mid >> 32);
    return r;
}

static u128 u128_add(u128 a, u128 b)
{
    u128 r;
    r.lo = a.lo + b.lo;
    r.hi = a.hi + b.hi + (r.lo < a.lo ? 1u : 0u);
    return r;
}

static int u128_cmp(u128 a, u128 b)
{
    if (a.hi != b.hi) return a.hi < b.hi ? -1 : 1;
    if (a.lo != b.lo) return a.lo < b.lo ? -1 : 1;
    return 0;
}

/* a << s, 0 <= s < 128; the caller keeps the result below 2^128. */
static u128 u128_shl(u128 a, unsigned s)
{
    u128 r;
    if (s == 0) return a;
    if (s >= 64) {
        r.hi = a.lo << (s - 64);
        r.lo = 0;
    } else {
        r.hi = (a.hi << s) | (a.lo >> (64 - s));
        r.lo = a.lo << s;
    }
    return r;
}

/* 2^24 x as an integer: x a binary32 multiple of 2^-24 with |x| < 2^39
 * (ldexpf exact, the conversion exact). */
static int64_t fixed24(float x)
{
    return (int64_t)ldexpf(x, 24);
}

static uint64_t iabs64(int64_t a)
{
    return a < 0 ? (uint64_t)0 - (uint64_t)a : (uint64_t)a;
}

/* Sign of y^2 - N for a finite y > 0 and N < 2^100, exactly. */
static int sq_cmp(float y, u128 n)
{
    int e;
    uint64_t mant;
    u128 lhs;
    if (y < 1.0f) return (n.hi | n.lo) == 0 ? 1 : -1;  /* y^2 < 1 <= N unless N = 0 */
    if (y >= 0x1p60f) return 1;                         /* y^2 >= 2^120 > N */
    mant = (uint64_t)ldexpf(frexpf(y, &e), 24);         /* y = mant 2^(e-24), exact */
    e -= 24;                                            /* -23 <= e < 37 */
    lhs = u128_mul64(mant, mant);                       /* < 2^48 */
    if (e >= 0) return u128_cmp(u128_shl(lhs, (unsigned)(2 * e)), n);
    if (n.hi != 0 || n.lo >= ((uint64_t)1 << 50)) return -1; /* y^2 < 2^48 */
    return u128_cmp(lhs, u128_shl(n, (unsigned)(-2 * e)));
}

/* RU32(2^-24 sqrt(N)): the least binary32 y with y^2 >= N, scaled by 2^-24
 * (exact: y >= 1 or y = 0) [CERT-ANN-01]. */
static float ru_norm24(u128 n)
{
    float y;
    if ((n.hi | n.lo) == 0) return 0.0f;
    /* Candidate within a few ulps: (double)N and sqrt each err by 2^-53 relative. */
    y = (float)sqrt((double)n.hi * 0x1p64 + (double)n.lo);
    while (sq_cmp(y, n) < 0) y = nextafterf(y, INFINITY);
    for (;;) {
        float p = nextafterf(y, 0.0f);
        if (sq_cmp(p, n) < 0) break;
        y = p;
    }
    return ldexpf(y, -24);
}

kvq_status kvq_cert_annotate(float *eta, float *nu, const float *v, const uint8_t *codes,
                             const float *scale, const float *zero, const kvq_cert_shape *shape)
{
    uint32_t nb, nq, d;
    kvq_status st;
    if (eta == NULL || nu == NULL || v == NULL || codes == NULL || scale == NULL ||
        zero == NULL || shape == NULL)
        return KVQ_E_PARAM;
    if (!kvq_cert_shape_ok(shape)) return KVQ_E_SHAPE;
    st = check_f16_array(v, kvq_cert_in_index(shape, shape->tokens, 0));
    if (st != KVQ_OK) return st;
    st = value_meta_all_ok(scale, zero, shape);
    if (st != KVQ_OK) return st;
    nb = kvq_cert_blocks(shape);
    nq = kvq_cert_full_blocks(shape);
    d = shape->dim;
    for (uint32_t b = 0; b < nb; b++) {
        u128 emax = { 0, 0 }, nmax = { 0, 0 };
        for (uint32_t i = 0; i < kvq_cert_block_tokens(shape, b); i++) {
            uint32_t t = kvq_cert_block_first(b) + i;
            u128 se = { 0, 0 }, sn = { 0, 0 };
            for (uint32_t c = 0; c < d; c++) {
                float x = v[kvq_cert_in_index(shape, t, c)];
                uint64_t a = iabs64(fixed24(x));         /* < 2^40 */
                sn = u128_add(sn, u128_mul64(a, a));     /* exact, < 2^89 */
                if (b < nq) {
                    uint32_t el, j = kvq_cert_value_group_of(c, &el);
                    float xh = value_deq(codes, scale, zero, shape, t, j, el);
                    /* xh: a multiple of 2^-24 below 2^20 (bounds/cert.md §2) */
                    uint64_t e = iabs64(fixed24(x) - fixed24(xh)); /* < 2^45 */
                    se = u128_add(se, u128_mul64(e, e)); /* exact, < 2^99 */
                }
            }
            if (u128_cmp(se, emax) > 0) emax = se;
            if (u128_cmp(sn, nmax) > 0) nmax = sn;
        }
        eta[b] = ru_norm24(emax);        /* RU32, exact decision [CERT-ANN-01] */
        nu[b] = ru_norm24(nmax);         /* RU32, exact decision [CERT-ANN-02] */
    }
    return KVQ_OK;
}

/* ---- Delta: upward recipe of [CERT-DLT-04] ------------------------------ */

/* a + b and a * b for a, b >= 0, rounded to nearest and then moved one step up:
 * >= the exact result since a nearest rounding errs by less than one ulp (and
 * by at most 2^-150 in the subnormal range, below the step 2^-149). */
static float up_add(float a, float b)
{
    return nextafterf(a + b, INFINITY);
}

static float up_mul(float a, float b)
{
    return nextafterf(a * b, INFINITY);
}

/* gamma_{b,c} of [CERT-K8-04], rounded upward: the scalings by 2^-22, 2^-16
 * are exact (their arguments are >= 2^-24 or 0, results normal) */
static float up_gamma(float l, float u, float s, float z)
{
    float a;
    if (s == 0.0f) return 0.0f;          /* zero-range channel [CERT-K8-04] */
    a = up_add(up_add(fabsf(u), fabsf(l)), fabsf(z));
    return up_add(up_add(ldexpf(a, -22), ldexpf(s, -16)), 0x1p-149f);
}

kvq_status kvq_cert_delta(float *delta_b, float *delta, const float *q, float scale,
                          const float *k, const float *sigma, const float *z,
                          const kvq_cert_shape *shape)
{
    uint32_t nq, d;
    float dmax = 0.0f;
    kvq_status st;
    if (delta_b == NULL || delta == NULL || q == NULL || k == NULL || sigma == NULL ||
        z == NULL || shape == NULL)
        return KVQ_E_PARAM;
    if (!isfinite(scale) || !(scale >= F32_MIN_NORMAL)) return KVQ_E_PARAM; /* [CERT-L-01] */
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
    for (uint32_t b = 0; b < nq; b++) {
        float sum = 0.0f;
        for (uint32_t c = 0; c < d; c++) {
            uint64_t m = kvq_cert_key_meta_index(shape, b, c);
            const float *col = k + kvq_cert_in_index(shape, kvq_cert_block_first(b), c);
            float l = col[0], u = col[0], h;
            for (uint32_t i = 1; i < KVQ_CERT_BLOCK; i++) {
                float x = col[kvq_cert_in_index(shape, i, 0)];
                if (x < l) l = x;
                if (x > u) u = x;
            }
            /* sigma/2: exact unless it is subnormal (stored sigma < 2^-125, not
             * from binary16 keys); a lost 2^-150 is covered by up_add's step. */
            h = up_add(ldexpf(sigma[m], -1), up_gamma(l, u, sigma[m], z[m]));
            if (q[c] != 0.0f) sum = up_add(sum, up_mul(fabsf(q[c]), h));
        }
        delta_b[b] = sum == 0.0f ? 0.0f : up_mul(scale, sum); /* [CERT-DLT-01] */
        if (delta_b[b] > dmax) dmax = delta_b[b];
    }
    if (nq < kvq_cert_blocks(shape)) delta_b[nq] = 0.0f; /* residual block [CERT-DLT-01] */
    *delta = dmax;                       /* [CERT-DLT-02] */
    return KVQ_OK;
}

/* ---- one decode step, rung 0 ----------------------------------------------
 * Bounds are evaluated in binary64 with outward steps: for nonnegative
 * operands, up(a op b) = nextafter(RN64(a op b), +inf) >= the exact result
 * (a nearest rounding errs by less than one ulp), dn likewise downward; libm
 * functions (exp, log1p, tanh: glibc errs by under 2 ulps in binary64) are
 * moved two steps.  to_f_up converts upward to binary32.  These are upper
 * bounds of the exact path's values, not equal to them. */

static double up(double x) { return nextafter(x, INFINITY); }
static double dn(double x) { return nextafter(x, -INFINITY); }
static double up2(double x) { return up(up(x)); }
static double dn2(double x) { return dn(dn(x)); }

static float to_f_up(double x)
{
    float y = (float)x;
    if ((double)y < x) y = nextafterf(y, INFINITY);
    return y;
}

/* gamma_n = n 2^-24 / (1 - n 2^-24), upward (n 2^-24 < 1/2). */
static double gamma_up(double n)
{
    double nu = n * 0x1p-24;             /* exact */
    return up(nu / dn(1.0 - nu));
}

/* A(a, Delta) = e^{2 Delta} a / (1 + (e^{2 Delta} - 1) a) of Lemma A.3,
 * upward for a in [0, 1]: A = 1 / (1 + (1 - a) / (X a)), increasing in a, X. */
static double tail_up(double a, double delta)
{
    double x;
    if (a <= 0.0) return 0.0;
    if (a >= 1.0) return 1.0;
    x = up2(exp(up(2.0 * delta)));
    return up(1.0 / dn(1.0 + dn(dn(1.0 - a) / up(x * a))));
}

typedef struct cmp_ent {
    float w;
    uint32_t b;
} cmp_ent;

/* Greatest W~_b first, ties to the lower block index [CERT-SEL-01]. */
static int by_mass(const void *pa, const void *pb)
{
    const cmp_ent *a = pa, *b = pb;
    if (a->w != b->w) return a->w > b->w ? -1 : 1;
    return a->b < b->b ? -1 : (a->b > b->b ? 1 : 0);
}

/* Binary32 key row of token t: k^ in full blocks [CERT-K8-03], else k. */
static void key_row(float *row, const kvq_cert_cache *ch, const kvq_cert_shape *sh, uint32_t t)
{
    uint32_t d = sh->dim, b = t / KVQ_CERT_BLOCK, i = t % KVQ_CERT_BLOCK;
    for (uint32_t c = 0; c < d; c++) {
        if (b < kvq_cert_full_blocks(sh)) {
            uint64_t m = kvq_cert_key_meta_index(sh, b, c);
            int8_t code = ch->kcodes[kvq_cert_key_block_offset(sh, b) +
                                     kvq_cert_key_code_index(d, i, c)];
            row[c] = fmaf((float)code, ch->sigma[m], ch->z[m]); /* one rounding */
        } else {
            row[c] = ch->k[kvq_cert_in_index(sh, t, c)];
        }
    }
}

/* Binary32 value row v~ of token t: v^ in full blocks [CERT-V4-02], else v. */
static void value_row(float *row, const kvq_cert_cache *ch, const kvq_cert_shape *sh, uint32_t t)
{
    uint32_t d = sh->dim;
    for (uint32_t c = 0; c < d; c++) {
        if (t < kvq_cert_quant_tokens(sh)) {
            uint32_t el, j = kvq_cert_value_group_of(c, &el);
            row[c] = value_deq(ch->vcodes, ch->vscale, ch->vzero, sh, t, j, el);
        } else {
            row[c] = ch->v[kvq_cert_in_index(sh, t, c)];
        }
    }
}

static kvq_status step_check(const float *q, float scale, const kvq_cert_cache *ch,
                             const kvq_cert_params *prm, const kvq_cert_shape *sh)
{
    kvq_status st;
    uint64_t ne;
    if (ch->k == NULL || ch->v == NULL || ch->kcodes == NULL || ch->sigma == NULL ||
        ch->z == NULL || ch->vcodes == NULL || ch->vscale == NULL || ch->vzero == NULL ||
        ch->eta == NULL || ch->nu == NULL)
        return KVQ_E_PARAM;
    if (!(prm->tau > 0.0f && prm->tau <= 1.0f) || prm->kmin < 1u || prm->kmin > prm->kmax)
        return KVQ_E_PARAM;                           /* [CERT-DUMP-03] ranges */
    if (!isfinite(scale) || !(scale >= F32_MIN_NORMAL)) return KVQ_E_PARAM; /* [CERT-L-01] */
    if (!kvq_cert_shape_ok(sh)) return KVQ_E_SHAPE;
    ne = kvq_cert_in_index(sh, sh->tokens, 0);
    if ((st = check_f16_array(q, sh->dim)) != KVQ_OK) return st;
    if ((st = check_f16_array(ch->k, ne)) != KVQ_OK) return st;
    if ((st = check_f16_array(ch->v, ne)) != KVQ_OK) return st;
    for (uint64_t e = 0; e < kvq_cert_key_meta_count(sh); e++)
        if ((st = key_meta_ok(ch->sigma[e], ch->z[e])) != KVQ_OK) return st;
    if ((st = value_meta_all_ok(ch->vscale, ch->vzero, sh)) != KVQ_OK) return st;
    for (uint32_t b = 0; b < kvq_cert_blocks(sh); b++)
        if (!(ch->eta[b] >= 0.0f) || !(ch->nu[b] >= 0.0f) || isinf(ch->eta[b]) ||
            isinf(ch->nu[b]))
            return KVQ_E_PARAM;
    return KVQ_OK;
}

kvq_status kvq_cert_step(float *out, uint8_t *sel, float *logmass, kvq_cert_record *rec,
                         const float *q, float scale, const kvq_cert_cache *cache,
                         const kvq_cert_params *prm, const kvq_cert_shape *shape)
{
    uint32_t n, d, nq, nb, k0 = 0, kstar, kcap, klo, ns = 0, nt = 0;
    float *s, *w, *wb, *row, *acc, *dlt, m1 = -INFINITY, smin = INFINITY, delta, vmax = 0.0f;
    float tot = 0.0f, cum, tsum = 0.0f, ssum = 0.0f, l = 0.0f, m = -INFINITY;
    float smax_s = -INFINITY, smin_s = INFINITY;
    double *pq, eps1 = 0.0, epss = 0.0, ue, ua, g1, mu1, lam, lambda, g, earith, vh = 0.0;
    double tu, sl, au, t_up, t_dn, akey, ekey, rsum = 0.0, etamax = 0.0, eval, x2;
    cmp_ent *ord;
    kvq_cert_decl decl;
    kvq_status st;
    int covered = 0;
    if (out == NULL || sel == NULL || rec == NULL || q == NULL || cache == NULL ||
        prm == NULL || shape == NULL)
        return KVQ_E_PARAM;
    if ((st = step_check(q, scale, cache, prm, shape)) != KVQ_OK) return st;
    n = shape->tokens, d = shape->dim, nq = kvq_cert_full_blocks(shape);
    nb = kvq_cert_blocks(shape);
    s = malloc(sizeof(float) * n), w = malloc(sizeof(float) * n);
    pq = malloc(sizeof(double) * n);
    wb = malloc(sizeof(float) * nb), dlt = malloc(sizeof(float) * nb);
    row = malloc(sizeof(float) * d), acc = malloc(sizeof(float) * d);
    ord = malloc(sizeof(cmp_ent) * (nq ? nq : 1u));
    if (!s || !w || !pq || !wb || !dlt || !row || !acc || !ord) {
        st = KVQ_E_NOMEM;
        goto done;
    }
    /* Phase 1 [CERT-AR-02] scores; pq[i] = sum_c |q_c| |k^_{i,c}| upward for eps_s:
     * the products are exact in binary64 (11 + 24 bits). */
    for (uint32_t t = 0; t < n; t++) {
        float dot = 0.0f;
        double p = 0.0;
        key_row(row, cache, shape, t);
        for (uint32_t c = 0; c < d; c++) {
            dot += q[c] * row[c];        /* two roundings */
            p = up(p + fabs((double)q[c] * (double)row[c]));
        }
        s[t] = scale * dot;              /* RN32 */
        pq[t] = p;
        if (s[t] > m1) m1 = s[t];
        if (s[t] < smin) smin = s[t];
    }
    for (uint32_t b = 0; b < nb; b++) {
        float sum = 0.0f;
        for (uint32_t i = 0; i < kvq_cert_block_tokens(shape, b); i++) {
            uint32_t t = kvq_cert_block_first(b) + i;
            w[t] = expf(s[t] - m1);      /* RN32 argument; expf */
            sum += w[t];
        }
        wb[b] = sum;
        if (logmass != NULL) logmass[b] = m1 + logf(sum); /* L~_b [CERT-LM-02] */
        tot += sum;
    }
    /* Selector [CERT-SEL-01] */
    for (uint32_t b = 0; b < nq; b++) ord[b].w = wb[b], ord[b].b = b;
    if (nq > 1) qsort(ord, nq, sizeof *ord, by_mass);
    cum = nq < nb ? wb[nq] : 0.0f;       /* the residual block is always in S */
    kstar = nq;
    for (uint32_t kk = 1; kk <= nq; kk++) {
        cum += ord[kk - 1].w;
        if (cum / tot >= prm->tau) {
            kstar = kk;
            break;
        }
    }
    klo = prm->kmin < nq ? prm->kmin : nq;
    kcap = prm->kmax < nq ? prm->kmax : nq;
    k0 = kstar < klo ? klo : (kstar > kcap ? kcap : kstar);
    for (uint32_t b = 0; b < nb; b++) sel[b] = b < nq ? 0u : 1u;
    for (uint32_t kk = 0; kk < k0; kk++) sel[ord[kk].b] = 1u;
    cum = nq < nb ? wb[nq] : 0.0f;
    for (uint32_t kk = 0; kk < k0; kk++) cum += ord[kk].w;
    covered = nq == 0 || cum / tot >= prm->tau;
    /* Phase 2: pinned online softmax [CERT-AR-02] */
    for (uint32_t c = 0; c < d; c++) acc[c] = 0.0f;
    for (uint32_t b = 0; b < nb; b++) {
        if (!sel[b]) {
            for (uint32_t i = 0; i < kvq_cert_block_tokens(shape, b); i++) nt++;
            tsum += wb[b];
            continue;
        }
        ssum += wb[b];
        for (uint32_t i = 0; i < kvq_cert_block_tokens(shape, b); i++) {
            uint32_t t = kvq_cert_block_first(b) + i;
            float mn = s[t] > m ? s[t] : m, alpha = expf(m - mn), wt;
            if (ns == 0) alpha = 0.0f;   /* l = acc = 0: nothing to rescale */
            m = mn;
            wt = expf(s[t] - m);
            value_row(row, cache, shape, t);
            l = l * alpha + wt;          /* two roundings */
            for (uint32_t c = 0; c < d; c++) {
                float pr = wt * row[c];  /* RN32 */
                acc[c] = acc[c] * alpha; /* RN32 */
                acc[c] = acc[c] + pr;    /* RN32: no fmaf [CERT-AR-02] */
            }
            if (s[t] > smax_s) smax_s = s[t];
            if (s[t] < smin_s) smin_s = s[t];
            if (pq[t] > epss) epss = pq[t];
            ns++;
        }
    }
    for (uint32_t c = 0; c < d; c++) out[c] = acc[c] / l;
    for (uint32_t t = 0; t < n; t++)
        if (pq[t] > eps1) eps1 = pq[t];
    /* ---- certificate ---- */
    (void)kvq_cert_delta(dlt, &delta, q, scale, cache->k, cache->sigma, cache->z, shape);
    for (uint32_t b = 0; b < nb; b++) {
        if (cache->nu[b] > vmax) vmax = cache->nu[b];           /* [CERT-ANN-04] */
        if (sel[b]) {
            double e = b < nq ? (double)cache->eta[b] : 0.0;
            double vb = up((double)cache->nu[b] + e);           /* ||v~|| <= nu + eta */
            if (vb > vh) vh = vb;
            if (e > etamax) etamax = e;
        }
    }
    decl = kvq_cert_pinned_decl(ns);
    ue = (double)decl.u_exp * 0x1p-23;                          /* eps_e, exact */
    ua = ((double)decl.u_exp + 1.0) * 0x1p-149;                 /* exp's absolute part */
    /* eps_s [CERT-AR-01], with the absolute term of underflowing products */
    epss = up(up(gamma_up(d + 1.0) * scale) * epss);
    epss = up(epss + up(up(scale * (double)d + 1.0) * 0x1p-149));
    eps1 = up(up(gamma_up(d + 1.0) * scale) * eps1);
    eps1 = up(eps1 + up(up(scale * (double)d + 1.0) * 0x1p-149));
    /* Phase-1 log-perturbation of each weight against e^{s^_i - m1}:
     * |x~ - (s^_i - m1)| <= eps1 + 2^-24 (m1 - min s~). */
    mu1 = up(eps1 + up((double)m1 - (double)smin) * 0x1p-24);
    g1 = gamma_up(16.0 + nb);            /* roundings of any term of a block/total sum */
    /* tail: T <= e^mu1 (T~/(1-g1) + nT a)/(1 - eps_e); selected: S >= e^-mu1 (S~/(1+g1) - nS a)/(1 + eps_e) */
    tu = up(up(up2(exp(mu1)) * up(up(tsum / dn(1.0 - g1)) + up(nt * ua))) / dn(1.0 - ue));
    sl = dn(dn(dn2(exp(-mu1)) * dn(dn(ssum / up(1.0 + g1)) - up(ns * ua))) / up(1.0 + ue));
    if (sl < 0.0) sl = 0.0;
    au = tu == 0.0 ? 0.0 : (sl == 0.0 ? 1.0 : up(1.0 / dn(1.0 + dn(sl / tu))));
    /* E_key = 2 Vmax (t + A (1 - t)) [CERT-EK-01] */
    t_up = up2(tanh(up((double)delta / 2.0)));
    t_dn = dn2(tanh((double)delta / 2.0));
    if (t_dn < 0.0) t_dn = 0.0;
    akey = tail_up(au, delta);
    ekey = up(up(2.0 * vmax) * up(t_up + up(akey * dn(1.0 - t_dn))));
    /* E_val [CERT-EV-01]: rho_b <= e^{2 mu1} (W~_b/(1-g1) + 16 a)/(1 - eps_e) / S~_l */
    for (uint32_t b = 0; b < nq; b++)
        if (sel[b] && cache->eta[b] > 0.0f) {
            double wu = up(up(up2(exp(mu1)) * up(up(wb[b] / dn(1.0 - g1)) + 16.0 * ua)) /
                           dn(1.0 - ue));
            double rho = sl == 0.0 ? 1.0 : up(wu / sl);
            if (rho > 1.0) rho = 1.0;
            rsum = up(rsum + up(rho * cache->eta[b]));
        }
    eval = rsum < etamax ? rsum : etamax; /* both sound [CERT-EV-02] */
    /* E_arith [CERT-AR-01] */
    {
        double rs = up(up((double)smax_s - (double)smin_s) + 4.0 * epss); /* >= R_s */
        double gg, gq, tl;
        lam = up2(-log1p(-ue));
        lambda = up(epss + up((1.0 + decl.rescales) * up(up(rs * 0x1p-24) + lam)));
        g = gamma_up((double)decl.acc_depth);
        gq = up(g / dn(1.0 - g));
        tl = up2(tanh(up(lambda / 2.0)));
        gg = up(2.0 * up(vh * tl));
        gg = up(gg + up(2.0 * up(vh * gq)));
        gg = up(gg + up(up(vh * 0x1p-24) * up(1.0 + 2.0 * gq)));
        gg = up(gg + up(up(2.0 * vh) * up(ns * up((decl.u_exp + 1.0) * 0x1p-148))));
        gg = up(gg + up(up2(sqrt((double)d)) * 0x1p-150));
        gg = up(gg + up(up(up2(sqrt((double)d)) * decl.acc_depth) * 0x1p-148));
        earith = gg;
    }
    x2 = exp(2.0 * (double)delta);
    rec->version = 1u;
    rec->rung = 0u;
    rec->n = n, rec->d = d, rec->k_sel = k0, rec->n_prom = 0u;
    rec->checks = covered ? KVQ_CERT_CHECK_COVERAGE : 0u;
    rec->delta = delta;
    rec->alpha_hat = tot > 0.0f ? tsum / tot : 0.0f;           /* the kernel's estimate */
    rec->vmax = vmax;
    rec->ekey = to_f_up(ekey);
    rec->ekey_paper = (float)(2.0 * vmax * x2 * rec->alpha_hat * (x2 - 1.0)); /* [CERT-EK-02] */
    rec->eval = to_f_up(eval);
    rec->earith = to_f_up(earith);
    rec->etotal = to_f_up(up(up((double)rec->ekey + rec->eval) + rec->earith));
    st = KVQ_OK;
done:
    free(s), free(w), free(pq), free(wb), free(dlt), free(row), free(acc), free(ord);
    return st;
}
