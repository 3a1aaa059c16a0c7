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
#include "cert_internal.h"

#define F32_MIN_NORMAL 0x1p-126f
#define F16_MIN_NORMAL 0x1p-14f

/* The ACSL below is proved by Frama-C WP (proofs/run.sh, results in
 * proofs/results/); what is assumed instead is listed in proofs/TRUSTED.md.
 * Float error bounds are real-valued claims of spec/bounds/cert.md, backed by
 * tests/check_cert.c, not WP goals [TR-FLOAT-BOUNDS]. */

/*@ // Stored value metadata as the dequantizer accepts it [CERT-V4-01].
    // (The binary16 grid is checked too; the proofs need only the range.)
    predicate kvq_value_meta_l(float s, float z) =
        \is_finite(s) && \is_finite(z) && -65504 <= s <= 65504 && -65504 <= z <= 65504 &&
        (s == 0 || s >= 0x1p-14);
    // The key code of k against sigma > 0 and z [CERT-K8-02]:
    // clamp(round(RN32(RN32(k - z) / sigma)), -128, 127).
    logic integer kvq_cert_key_code_l(real k, real sigma, real z, integer ties) =
        kvq_clamp_l(kvq_round_ties_l(kvq_quot_l(k, sigma, z), ties),
                    KVQ_CERT_KCODE_MIN, KVQ_CERT_KCODE_MAX);
*/

int kvq_cert_is_f16(float v)
{
    int ov;
    if (!isfinite(v)) return 0;
    /* v is binary16 iff RN16(v) == v without overflow [CERT-L-02]; a binary32
     * subnormal rounds to a multiple of 2^-24, hence differs. */
    return kvq_round_f16(v, &ov) == v && !ov;
}

/* Non-finite values first, then non-binary16 ones [CERT-K8-05]. */
/*@ requires input: \valid_read(x + (0 .. n - 1));
    assigns \nothing;
    ensures status: \result == KVQ_OK || \result == KVQ_E_NONFINITE || \result == KVQ_E_PARAM;
    ensures nonfinite_first: \result == KVQ_E_NONFINITE <==>
        (\exists integer e; 0 <= e < n && !\is_finite(x[e]));           // [CERT-K8-05]
    ensures ok: \result == KVQ_OK ==> \forall integer e; 0 <= e < n ==>
        \is_finite(x[e]) && kvq_is_f16_l(x[e]);                        // [CERT-L-02]
*/
kvq_status kvq_certi_check_f16(const float *x, uint64_t n)
{
    /*@ loop invariant e_range: 0 <= e <= n;
        loop invariant finite: \forall integer e2; 0 <= e2 < e ==> \is_finite(x[e2]);
        loop assigns e;
        loop variant n - e;
    */
    for (uint64_t e = 0; e < n; e++)
        if (!isfinite(x[e])) return KVQ_E_NONFINITE;
    /*@ loop invariant e_range: 0 <= e <= n;
        loop invariant f16: \forall integer e2; 0 <= e2 < e ==> kvq_is_f16_l(x[e2]);
        loop assigns e;
        loop variant n - e;
    */
    for (uint64_t e = 0; e < n; e++)
        if (!kvq_cert_is_f16(x[e])) return KVQ_E_PARAM;
    return KVQ_OK;
}

/* ---- keys [CERT-K8-01..03] ---------------------------------------------- */

/* Pinned code of one key element against stored sigma > 0, z [CERT-K8-02].
 * Total for any finite k, z and normal sigma: the step the spec says the clamp
 * keeps total. */
/*@ requires finite: \is_finite(k) && \is_finite(z) && \is_finite(sigma);
    requires sigma_normal: sigma >= 0x1p-126;
    requires out: \valid(flags);
    assigns *flags;
    ensures code_range: KVQ_CERT_KCODE_MIN <= \result <= KVQ_CERT_KCODE_MAX; // [CERT-K8-02]
    // the pinned sequence whenever k - z and (k - z)/sigma are in the binary32
    // range (always for binary16 keys) [CERT-K8-02]
    ensures value: kvq_quot_ok_l(k, sigma, z) ==> \result == kvq_cert_key_code_l(k, sigma, z, ties);
*/
static int8_t key_code(float k, float sigma, float z, uint32_t ties, uint32_t *flags)
{
    float t = k - z;                     /* RN32 [CERT-K8-02] */
    float qv = t / sigma;                /* RN32, a division [CERT-K8-02] */
    int64_t c;
    /* qv_def: the two binary32 operations are the real quotient's roundings
     * (TRUSTED.md [TR-GOAL-CODE-QUOT]); with it the code is proved. */
    //@ assert qv_def: kvq_quot_ok_l(k, sigma, z) ==> \is_finite(qv) && qv == kvq_quot_l(k, sigma, z);
    /* With binary16 keys |qv| < 2^9 [CERT-K8-02].  For other finite k, z,
     * qv can be huge or infinite (t overflows); every qv outside [-129, 128]
     * rounds to a code outside [-128, 127] under either tie rule, so clamping
     * it before rounding gives the same code and flag and keeps qv within
     * kvq_round_int's domain |q| < 2^31.  (A NaN qv cannot arise from finite
     * k, z and sigma > 0; it would be clamped low.) */
    if (!(qv >= -129.0f)) {
        //@ assert below_min: \is_finite(qv) ==> kvq_round_ties_l(qv, ties) < KVQ_CERT_KCODE_MIN;
        *flags |= KVQ_FLAG_CLAMPED;
        return (int8_t)KVQ_CERT_KCODE_MIN;
    }
    if (qv > 128.0f) {
        //@ assert past_max: \is_finite(qv) ==> kvq_round_ties_l(qv, ties) > KVQ_CERT_KCODE_MAX;
        *flags |= KVQ_FLAG_CLAMPED;
        return (int8_t)KVQ_CERT_KCODE_MAX;
    }
    c = kvq_round_int(qv, ties);         /* |qv| <= 129: exact [POL-TIE-01] */
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
    st = kvq_certi_check_f16(k, kvq_cert_in_index(shape, shape->tokens, 0));
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
/*@ assigns \nothing;
    ensures status: \result == KVQ_OK || \result == KVQ_E_NONFINITE || \result == KVQ_E_PARAM;
    ensures ok: \result == KVQ_OK <==>
        \is_finite(s) && \is_finite(z) && (s == 0 || s >= 0x1p-126);   // [CERT-K8-01]
*/
kvq_status kvq_certi_key_meta_ok(float s, float z)
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
        kvq_status st = kvq_certi_key_meta_ok(sigma[e], z[e]);
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
    st = kvq_certi_check_f16(v, kvq_cert_in_index(shape, shape->tokens, 0));
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
/*@ assigns \nothing;
    ensures status: \result == KVQ_OK || \result == KVQ_E_NONFINITE || \result == KVQ_E_PARAM;
    ensures ok: \result == KVQ_OK ==> kvq_value_meta_l(s, z);          // [CERT-V4-01]
*/
static kvq_status value_meta_ok(float s, float z)
{
    if (!isfinite(s) || !isfinite(z)) return KVQ_E_NONFINITE;
    if (!kvq_cert_is_f16(s) || !kvq_cert_is_f16(z)) return KVQ_E_PARAM;
    if (!(s >= 0.0f) || (s != 0.0f && s < F16_MIN_NORMAL)) return KVQ_E_PARAM;
    return KVQ_OK;
}

/*@ requires shape: \valid_read(shape) && kvq_cert_shape_l(shape->tokens, shape->dim);
    requires meta: \valid_read(scale + (0 .. (shape->tokens / 16) * 16 * (shape->dim / 16) - 1)) &&
                   \valid_read(zero + (0 .. (shape->tokens / 16) * 16 * (shape->dim / 16) - 1));
    assigns \nothing;
    ensures status: \result == KVQ_OK || \result == KVQ_E_NONFINITE || \result == KVQ_E_PARAM;
    ensures ok: \result == KVQ_OK ==>
        \forall integer g; 0 <= g < (shape->tokens / 16) * 16 * (shape->dim / 16) ==>
            kvq_value_meta_l(scale[g], zero[g]);                           // [CERT-V4-01]
*/
kvq_status kvq_certi_value_meta_ok(const float *scale, const float *zero,
                                    const kvq_cert_shape *shape)
{
    uint64_t ng = kvq_cert_value_groups(shape);
    /*@ loop invariant g_range: 0 <= g <= ng;
        loop invariant ok: \forall integer g2; 0 <= g2 < g ==> kvq_value_meta_l(scale[g2], zero[g2]);
        loop assigns g;
        loop variant ng - g;
    */
    for (uint64_t g = 0; g < ng; g++) {
        kvq_status st = value_meta_ok(scale[g], zero[g]);
        if (st != KVQ_OK) return st;
        //@ assert upto: \forall integer g2; 0 <= g2 <= g ==> kvq_value_meta_l(scale[g2], zero[g2]);
        //@ assert next: g + 1 <= ng;
    }
    return KVQ_OK;
}

/* v^ of element i of token t's group j [CERT-V4-02]: no overflow, |v^| < 2^20. */
/*@ requires shape: \valid_read(shape) && kvq_cert_shape_l(shape->tokens, shape->dim);
    requires tji: t < (shape->tokens / 16) * 16 && j < shape->dim / 16 && i < 16;
    requires codes: \valid_read(codes + ((t * (shape->dim / 16) + j) * 8 .. (t * (shape->dim / 16) + j) * 8 + 7));
    requires meta: \valid_read(scale + (t * (shape->dim / 16) + j)) &&
                   \valid_read(zero + (t * (shape->dim / 16) + j)) &&
                   kvq_value_meta_l(scale[t * (shape->dim / 16) + j], zero[t * (shape->dim / 16) + j]);
    assigns \nothing;
    ensures bounded: \is_finite(\result) && -0x1p20 <= \result <= 0x1p20;   // [CERT-V4-02]
*/
float kvq_certi_value_deq(const uint8_t *codes, const float *scale, const float *zero,
                       const kvq_cert_shape *shape, uint32_t t, uint32_t j, uint32_t i)
{
    uint64_t g = kvq_cert_value_group(shape, t, j);
    float c = (float)kvq_unpack_code(codes + kvq_cert_value_code_offset(shape, t, j), i,
                                     KVQ_CERT_VBITS);
    /* |c s + zv| <= 15 * 65504 + 65504 < 2^20: fmaf's one rounding stays within
     * 2^20 (rounding is monotone, 2^20 a binary32 number). */
    //@ assert c_range: 0 <= c <= 15;
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
    st = kvq_certi_value_meta_ok(scale, zero, shape);
    if (st != KVQ_OK) return st;
    nt = kvq_cert_quant_tokens(shape);
    gpt = kvq_cert_value_groups_per_token(shape);
    for (uint32_t t = 0; t < nt; t++)
        for (uint32_t j = 0; j < gpt; j++)
            for (uint32_t i = 0; i < KVQ_CERT_VGROUP; i++)
                vhat[kvq_cert_in_index(shape, t, kvq_cert_value_channel(j, i))] =
                    kvq_certi_value_deq(codes, scale, zero, shape, t, j, i);
    return KVQ_OK;
}

/* ---- annotations: exact integer arithmetic (bounds/cert.md §2) ---------- */

/* Unsigned 128-bit integers from two 64-bit halves (plain C11). */
typedef struct u128 {
    uint64_t hi, lo;
} u128;

/*@ logic integer u128_l(u128 a) = a.hi * 18446744073709551616 + a.lo; */

#define W32 ((uint64_t)1 << 32)

/* a * b exactly.  Written with / and % by 2^32 (the same machine code as
 * shifts and masks) so that WP reads it arithmetically. */
/*@ assigns \nothing;
    ensures product: u128_l(\result) == a * b;
*/
static u128 u128_mul64(uint64_t a, uint64_t b)
{
    uint64_t al = a % W32, ah = a / W32, bl = b % W32, bh = b / W32;
    /* four partial products, each <= (2^32 - 1)^2 < 2^64: exact */
    uint64_t ll = al * bl, lh = al * bh, hl = ah * bl, hh = ah * bh;
    /* < 3 * 2^32: exact */
    uint64_t mid = ll / W32 + lh % W32 + hl % W32;
    u128 r;
    //@ assert split: a == ah * 4294967296 + al && b == bh * 4294967296 + bl;
    //@ assert halves: al <= 4294967295 && ah <= 4294967295 && bl <= 4294967295 && bh <= 4294967295;
    //@ assert p_ll: al * bl <= 18446744065119617025;
    //@ assert p_lh: al * bh <= 18446744065119617025;
    //@ assert p_hl: ah * bl <= 18446744065119617025;
    //@ assert p_hh: ah * bh <= 18446744065119617025;
    //@ assert part_ll: ll == al * bl;
    //@ assert part_lh: lh == al * bh;
    //@ assert part_hl: hl == ah * bl;
    //@ assert part_hh: hh == ah * bh;
    //@ assert expand: a * b == hh * 18446744073709551616 + (lh + hl) * 4294967296 + ll;
    /*@ assert euclid: ll == (ll / 4294967296) * 4294967296 + ll % 4294967296 &&
                       lh == (lh / 4294967296) * 4294967296 + lh % 4294967296 &&
                       hl == (hl / 4294967296) * 4294967296 + hl % 4294967296 &&
                       mid == (mid / 4294967296) * 4294967296 + mid % 4294967296; */
    r.lo = (mid % W32) * W32 + ll % W32;
    r.hi = hh + lh / W32 + hl / W32 + mid / W32;
    //@ assert lo: r.lo == (mid % 4294967296) * 4294967296 + ll % 4294967296;
    //@ assert hi: r.hi == hh + lh / 4294967296 + hl / 4294967296 + mid / 4294967296;
    return r;
}

/*@ requires no_wrap: u128_l(a) + u128_l(b) < 340282366920938463463374607431768211456;
    assigns \nothing;
    ensures sum: u128_l(\result) == u128_l(a) + u128_l(b);
*/
static u128 u128_add(u128 a, u128 b)
{
    u128 r;
    uint64_t carry;
    /* the low halves' sum mod 2^64 and its carry, without a wrapping operation */
    if (a.lo <= UINT64_MAX - b.lo) {
        r.lo = a.lo + b.lo;
        carry = 0;
    } else {
        r.lo = a.lo - (UINT64_MAX - b.lo) - 1u;
        carry = 1;
    }
    //@ assert lo: r.lo + carry * 18446744073709551616 == a.lo + b.lo;
    r.hi = a.hi + b.hi + carry;
    //@ assert hi: r.hi == a.hi + b.hi + carry;
    return r;
}

/*@ assigns \nothing;
    ensures sign: \result == (u128_l(a) < u128_l(b) ? -1 : u128_l(a) > u128_l(b) ? 1 : 0);
*/
static int u128_cmp(u128 a, u128 b)
{
    if (a.hi != b.hi) return a.hi < b.hi ? -1 : 1;
    if (a.lo != b.lo) return a.lo < b.lo ? -1 : 1;
    return 0;
}

/* a << s, 0 <= s < 128; the caller keeps the result below 2^128. */
/*@ requires s_range: s < 128;
    assigns \nothing;
*/
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
/*@ requires finite: \is_finite(x);
    requires range: -0x1p38 < x < 0x1p38;
    assigns \nothing;
    ensures range: -0x1p62 < \result < 0x1p62;
*/
static int64_t fixed24(float x)
{
    return (int64_t)ldexpf(x, 24);
}

/*@ assigns \nothing;
    ensures abs: \result == \abs(a);
*/
static uint64_t iabs64(int64_t a)
{
    /* -(a + 1) cannot overflow, even for a = INT64_MIN */
    return a < 0 ? (uint64_t)(-(a + 1)) + 1u : (uint64_t)a;
}

/* Sign of y^2 - N for a finite y > 0 and N < 2^100, exactly. */
/*@ requires y_ok: \is_finite(y) && y > 0;
    requires n_range: 0 <= u128_l(n) < 0x1p100;
    assigns \nothing;
    ensures sign: \result == -1 || \result == 0 || \result == 1;
    ensures small: y < 1 && u128_l(n) != 0 ==> \result == -1;
    ensures large: y >= 0x1p60 ==> \result == 1;
*/
static int sq_cmp(float y, u128 n)
{
    int e;
    uint64_t mant;
    u128 lhs;
    if (y < 1.0f) return (n.hi | n.lo) == 0 ? 1 : -1;  /* y^2 < 1 <= N unless N = 0 */
    if (y >= 0x1p60f) return 1;                         /* y^2 >= 2^120 > N */
    mant = (uint64_t)ldexpf(frexpf(y, &e), 24);         /* y = mant 2^(e-24), exact */
    /* 1 <= y < 2^60: 2^(e-1) <= y < 2^e [TR-LIBM-FREXP] */
    //@ assert p2: kvq_libm_p2_l(0) == 1 && kvq_libm_p2_l(60) == 0x1000000000000000;
    //@ assert y_range: 1 <= y < 0x1p60;
    //@ assert e_range: 1 <= e <= 60;
    e -= 24;                                            /* -23 <= e < 37 */
    lhs = u128_mul64(mant, mant);                       /* < 2^48 */
    if (e >= 0) return u128_cmp(u128_shl(lhs, (unsigned)(2 * e)), n);
    if (n.hi != 0 || n.lo >= ((uint64_t)1 << 50)) return -1; /* y^2 < 2^48 */
    return u128_cmp(lhs, u128_shl(n, (unsigned)(-2 * e)));
}

/* RU32(2^-24 sqrt(N)): the least binary32 y with y^2 >= N, scaled by 2^-24
 * (exact: y >= 1 or y = 0) [CERT-ANN-01]. */
/*@ requires n_range: 0 <= u128_l(n) < 0x1p100;
    assigns \nothing;
    ensures nonneg: \result >= 0;                                      // [CERT-ANN-01]
*/
static float ru_norm24(u128 n)
{
    float y;
    if (n.hi == 0 && n.lo == 0) return 0.0f;
    /* Candidate within a few ulps: (double)N and sqrt each err by 2^-53 relative. */
    y = (float)sqrt((double)n.hi * 0x1p64 + (double)n.lo);
    /*@ loop invariant y_ok: \is_finite(y) && 1 <= y <= 0x1p64;
        loop assigns y;
    */
    while (sq_cmp(y, n) < 0) y = nextafterf(y, INFINITY);
    /*@ loop invariant y_ok: \is_finite(y) && 1 <= y <= 0x1p64;
        loop assigns y;
    */
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
    st = kvq_certi_check_f16(v, kvq_cert_in_index(shape, shape->tokens, 0));
    if (st != KVQ_OK) return st;
    st = kvq_certi_value_meta_ok(scale, zero, shape);
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
                    float xh = kvq_certi_value_deq(codes, scale, zero, shape, t, j, el);
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
/*@ assigns \nothing; */
static float up_add(float a, float b)
{
    return nextafterf(a + b, INFINITY);
}

/*@ assigns \nothing; */
static float up_mul(float a, float b)
{
    return nextafterf(a * b, INFINITY);
}

/* gamma_{b,c} of [CERT-K8-04], rounded upward: the scalings by 2^-22, 2^-16
 * are exact (their arguments are >= 2^-24 or 0, results normal) */
/*@ requires finite: \is_finite(l) && \is_finite(u) && \is_finite(s) && \is_finite(z);
    assigns \nothing;
*/
static float up_gamma(float l, float u, float s, float z)
{
    float a;
    if (s == 0.0f) return 0.0f;          /* zero-range channel [CERT-K8-04] */
    a = up_add(up_add(fabsf(u), fabsf(l)), fabsf(z));
    /* a stored offset near FLT_MAX steps a up to +inf: gamma is +inf, as
     * ldexpf(+inf, -22) would give it, and the bound stays an upper bound */
    if (!isfinite(a)) return INFINITY;
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
    st = kvq_certi_check_f16(q, d);
    if (st != KVQ_OK) return st;
    st = kvq_certi_check_f16(k, kvq_cert_in_index(shape, shape->tokens, 0));
    if (st != KVQ_OK) return st;
    for (uint64_t e = 0; e < kvq_cert_key_meta_count(shape); e++) {
        st = kvq_certi_key_meta_ok(sigma[e], z[e]);
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
