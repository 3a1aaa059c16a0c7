/*
 * kivi.c -- KIVI asymmetric group quantizer, fast path (binary32).
 *
 * Every float operation below is one IEEE binary32 operation rounded to nearest
 * even (the build uses -ffp-contract=off, so no FMA is formed unless fmaf is
 * named).  The sequence is the one spec/kivi.md pins; comments give the
 * requirement and the rounding that happens at each step.
 */
#include <math.h>

#include "kvq.h"

#define KVQ_F32_MAX        0x1.fffffep+127f /* largest finite binary32 */
#define KVQ_F32_MIN_NORMAL 0x1p-126f        /* smallest normal binary32 */
#define KVQ_F16_MAX        0x1.ffcp+15f     /* 65504, largest finite binary16 */
#define KVQ_F16_OVF        0x1.ffep+15f     /* 65520: smallest magnitude RN16 overflows */
#define KVQ_F16_MIN_NORMAL 0x1p-14f         /* smallest normal binary16 */

/* 1 when q = fl + d, fl = floor(q), is rounded up from fl, else 0: d is exact,
 * so the tie test is exact [POL-TIE-01, POL-TIE-02].  A helper of its own so
 * that the integer goals of round_nonneg carry no float literal. */
/*@ requires finite: \is_finite(d);
    assigns \nothing;
    ensures zero_or_one: \result == 0 || \result == 1;
    ensures value: \result == kvq_round_up_l(d, i, ties);          // [POL-TIE-01..02]
*/
static int64_t round_up(float d, int64_t i, uint32_t ties)
{
    //@ assert half: (float)0.5 == 0.5;
    if (d > 0.5f) return 1;
    if (d < 0.5f) return 0;
    if (ties == KVQ_TIES_AWAY) return 1;
    return i % 2 == 0 ? 0 : 1;
}

/* floor(q) as an integer, and *d = q - floor(q), exact (Sterbenz for q >= 1,
 * trivially for q < 1).  The float steps of round_nonneg, split off so that
 * its integer goals carry no float operation. */
/*@ requires finite: \is_finite(q);
    requires range: 0 <= q < 0x1p31;
    requires out: \valid(d);
    assigns *d;
    ensures floor: \result == \floor(q);
    ensures frac_finite: \is_finite(*d);
    ensures frac: *d == q - \floor(q);
*/
static int64_t floor_split(float q, float *d)
{
    float fl = floorf(q);
    int64_t i;
    *d = q - fl;                         /* exact */
    //@ assert fl_range: 0 <= \floor(q) < 0x1p31 && fl == \floor(q);
    i = (int64_t)fl;
    //@ assert i_floor: i == \floor(q);
    return i;
}

/* Round a finite q >= 0, q < 2^31: floor(q), plus one when round_up says so
 * (the tie test on the exact remainder). [POL-TIE-01] */
/*@ requires finite: \is_finite(q);
    requires range: 0 <= q < 0x1p31;
    assigns \nothing;
    ensures floor_or_next: \floor(q) <= \result <= \floor(q) + 1;   // [POL-TIE-01]
    ensures result_range: 0 <= \result <= 0x1p31;
    ensures value: \result == kvq_round_nonneg_l(q, ties);         // [POL-TIE-01..02]
    ensures tie_even: ties != 1 && \abs(q - \result) == 0.5 ==> \result % 2 == 0;
*/
static int64_t round_nonneg(float q, uint32_t ties)
{
    float d;
    int64_t i = floor_split(q, &d);
    return i + round_up(d, i, ties);
}

int64_t kvq_round_int(float q, uint32_t ties)
{
    /* Both tie rules are symmetric about 0, so negative q is rounded as
     * -q = |q| (fabsf: exact, the same bits as -q). */
    if (q < 0.0f) return -round_nonneg(fabsf(q), ties);
    return round_nonneg(q, ties);
}

float kvq_round_f16(float v, int *overflow)
{
    float a = fabsf(v), r;
    *overflow = 0;
    if (a >= KVQ_F16_OVF) {              /* past the midpoint 65504..65536 [POL-F16-02] */
        *overflow = 1;
        return copysignf(KVQ_F16_MAX, v);
    }
    if (a < KVQ_F16_MIN_NORMAL) {        /* subnormal grid, quantum 2^-24: scaling exact */
        r = ldexpf((float)round_nonneg(ldexpf(a, 24), KVQ_TIES_EVEN), -24);
    } else {                             /* 11 significant bits: scale to [2^10, 2^11) */
        int e;
        (void)frexpf(a, &e);             /* a = m * 2^e, 1/2 <= m < 1; exact */
        r = ldexpf((float)round_nonneg(ldexpf(a, 11 - e), KVQ_TIES_EVEN), e - 11);
    }
    return copysignf(r, v);
}

/* Read one input under the subnormal policy [POL-SN-01]. */
/*@ requires policy: \valid_read(pol);
    requires out: \valid(flags) && \separated(flags, pol);
    assigns *flags;
    ensures finite: \is_finite(v) ==> \is_finite(\result);
    ensures value: \is_finite(v) ==> \result == v || \result == 0; // [POL-SN-01]
*/
static float read_input(float v, const kvq_policy *pol, uint32_t *flags)
{
    if (v != 0.0f && fabsf(v) < KVQ_F32_MIN_NORMAL) {
        *flags |= KVQ_FLAG_SUBNORMAL;
        if (pol->subnormal == KVQ_SUBNORMAL_DAZ) return copysignf(0.0f, v);
    }
    return v;
}

/* Stored metadata of a group from its min and max [KIVI-Q-01..03, KIVI-M-01..03]. */
/*@ requires finite: \is_finite(mn) && \is_finite(mx);
    requires order: mn <= mx;
    requires args: kvq_valid_bits(bits) && (meta == KVQ_META_F32 || meta == KVQ_META_F16);
    requires out: \valid(scale) && \valid(zero) && \valid(flags) && \valid_read(pol);
    requires separated: \separated(scale, zero, flags, pol);
    assigns *scale, *zero, *flags;
    ensures status: \result == KVQ_OK || \result == KVQ_E_RANGE;
    ensures range_policy: \result == KVQ_E_RANGE ==> pol->overflow == KVQ_OVERFLOW_NAN; // [POL-OV-02]
    ensures meta_finite: \result == KVQ_OK ==> \is_finite(*scale) && \is_finite(*zero);
    ensures scale_form: \result == KVQ_OK ==> kvq_scale_form(*scale, meta);        // [POL-ZR-01]
*/
static kvq_status group_meta(float *scale, float *zero, uint32_t *flags, float mn, float mx,
                             uint32_t bits, uint32_t meta, const kvq_policy *pol)
{
    float cmax = (float)kvq_code_max(bits);
    float r = mx - mn;                   /* RN32; r >= 0 [KIVI-Q-02] */
    float s, z;
    if (isinf(r)) {                      /* range overflow [POL-OV-01] */
        if (pol->overflow == KVQ_OVERFLOW_NAN) return KVQ_E_RANGE;
        r = KVQ_F32_MAX;
        *flags |= KVQ_FLAG_SATURATED;
    }
    s = r / cmax;                        /* RN32, err <= 1/2 ulp(s) [KIVI-Q-02] */
    z = mn == 0.0f ? 0.0f : mn;          /* a zero offset is stored as +0 [KIVI-Q-03] */
    if (meta == KVQ_META_F16) {          /* binary16 storage [KIVI-M-02] */
        int ov_s, ov_z;
        s = kvq_round_f16(s, &ov_s);     /* RN16(RN32(r / cmax)) */
        z = kvq_round_f16(z, &ov_z);     /* RN16(min) */
        if (ov_s || ov_z) {
            if (pol->overflow == KVQ_OVERFLOW_NAN) return KVQ_E_RANGE;
            *flags |= KVQ_FLAG_SATURATED;
        }
        if (z == 0.0f) z = 0.0f;
        if (s < KVQ_F16_MIN_NORMAL) s = 0.0f; /* zero range [POL-ZR-01] */
    } else if (s < KVQ_F32_MIN_NORMAL) {
        s = 0.0f;                        /* zero range [POL-ZR-01] */
    }
    if (s == 0.0f) *flags |= KVQ_FLAG_ZERO_SCALE;
    *scale = s;
    *zero = z;
    return KVQ_OK;
}

/* The quotient of one value against stored metadata: RN32(RN32(x - z) / s),
 * with x - z saturated to +-max when it overflows (only when the group's range
 * saturated) [KIVI-Q-04].  The float steps of code_of, split off so that its
 * clamp and rounding goals carry no float operation. */
/*@ requires finite: \is_finite(xv) && \is_finite(s) && \is_finite(z);
    requires scale: s > 0;
    requires out: \valid(flags);
    assigns *flags;
    ensures value: kvq_quot_ok_l(xv, s, z) ==>
        \is_finite(\result) && \result == kvq_quot_l(xv, s, z);
*/
static float code_quotient(float xv, float s, float z, uint32_t *flags)
{
    float t = xv - z;                    /* RN32 [KIVI-Q-04] */
    if (isinf(t)) {                      /* only when the range saturated */
        t = copysignf(KVQ_F32_MAX, t);
        *flags |= KVQ_FLAG_SATURATED;
    }
    return t / s;                        /* RN32 [KIVI-Q-04] */
}

/* Code of one value against stored metadata [KIVI-Q-04, KIVI-Q-05]. */
/*@ requires finite: \is_finite(xv) && \is_finite(s) && \is_finite(z);
    requires scale: s >= 0;
    requires args: kvq_valid_bits(bits);
    requires out: \valid(flags) && \valid_read(pol) && \separated(flags, pol);
    assigns *flags;
    ensures code_range: 0 <= \result <= kvq_code_max_l(bits);     // [KIVI-Q-05]
    ensures zero_scale: s == 0 ==> \result == 0;                  // [POL-ZR-01]
    // the pinned sequence, whenever x - z and (x - z)/s are in the binary32
    // range (outside only when the group's range saturated) [KIVI-Q-04..05]
    ensures value: kvq_quot_ok_l(xv, s, z) ==>
        \result == kvq_kivi_code_l(xv, s, z, bits, \old(pol->ties));
*/
static uint32_t code_of(float xv, float s, float z, uint32_t bits, const kvq_policy *pol,
                        uint32_t *flags)
{
    float cmax = (float)kvq_code_max(bits);
    float hi = cmax + 1.0f;              /* exact */
    uint32_t ties = pol->ties;
    float q;
    int64_t c;
    //@ assert hi_exact: \is_finite(hi) && hi == kvq_code_max_l(bits) + 1;
    if (s == 0.0f) return 0u;            /* zero range: every code 0 [POL-ZR-01] */
    //@ assert s_pos: s > 0;
    q = code_quotient(xv, s, z, flags);  /* RN32(RN32(x - z) / s) [KIVI-Q-04] */
    if (q > hi) {                        /* rounds past cmax under either tie rule */
        //@ assert q_hi: \is_finite(q) ==> q > kvq_code_max_l(bits) + 1;
        //@ assert past_max: \is_finite(q) ==> kvq_round_ties_l(q, ties) > kvq_code_max_l(bits);
        *flags |= KVQ_FLAG_CLAMPED;
        return kvq_code_max(bits);
    }
    if (q < -1.0f) {
        //@ assert q_lo: \is_finite(q) ==> q < -1;
        //@ assert below_zero: \is_finite(q) ==> kvq_round_ties_l(q, ties) < 0;
        *flags |= KVQ_FLAG_CLAMPED;
        return 0u;
    }
    c = kvq_round_int(q, ties);          /* |q| <= 257: exact [KIVI-Q-04] */
    if (c < 0) {
        *flags |= KVQ_FLAG_CLAMPED;
        return 0u;
    }
    if (c > (int64_t)kvq_code_max(bits)) {
        *flags |= KVQ_FLAG_CLAMPED;
        return kvq_code_max(bits);
    }
    return (uint32_t)c;
}

/* Min and max of a group as read under the policy; a zero extreme is +0. */
/*@ requires group: 1 <= group <= KVQ_MAX_GROUP;
    requires stride_range: 1 <= stride <= KVQ_MAX_ELEMS;
    requires input: kvq_group_in(v, stride, group);                // [POL-NF-01]
    requires out: \valid(mn) && \valid(mx) && \valid(flags) && \valid_read(pol);
    requires separated: \separated(mn, mx, flags, pol);
    assigns *mn, *mx, *flags;
    ensures finite: \is_finite(*mn) && \is_finite(*mx);
    ensures order: *mn <= *mx;                                     // [KIVI-Q-01]
*/
static void group_minmax(float *mn, float *mx, uint32_t *flags, const float *v, size_t stride,
                         uint32_t group, const kvq_policy *pol)
{
    float lo = read_input(v[0], pol, flags), hi = lo;
    size_t at = stride;                  /* i * stride, kept by addition */
    /*@ loop invariant i_range: 1 <= i <= group;
        loop invariant at_index: at == i * stride && at <= i * KVQ_MAX_ELEMS;
        loop invariant finite: \is_finite(lo) && \is_finite(hi);
        loop invariant order: lo <= hi;
        loop assigns i, at, lo, hi, *flags;
        loop variant group - i;
    */
    for (uint32_t i = 1; i < group; i++, at += stride) {
        float xv;
        //@ assert elem: \valid_read(v + at) && \is_finite(v[at]);
        xv = read_input(v[at], pol, flags);
        if (xv < lo) lo = xv;
        if (xv > hi) hi = xv;
        //@ assert next: at + stride == (i + 1) * stride <= (i + 1) * KVQ_MAX_ELEMS;
    }
    *mn = lo;
    *mx = hi;
}

kvq_status kvq_kivi_quantize_group(uint8_t *grp, float *scale, float *zero, uint32_t *flags,
                                   const float *v, size_t stride, uint32_t group,
                                   uint32_t bits, uint32_t meta, const kvq_policy *pol)
{
    uint32_t f = 0;
    float mn, mx, s, z;
    size_t at = 0;                       /* i * stride, kept by addition */
    kvq_status st;
    group_minmax(&mn, &mx, &f, v, stride, group, pol);
    st = group_meta(&s, &z, &f, mn, mx, bits, meta, pol);
    if (st != KVQ_OK) return st;
    /*@ loop invariant b_range: 0 <= b <= group * bits / 8;
        loop invariant cleared: \forall integer k; 0 <= k < b ==> grp[k] == 0;
        loop assigns b, grp[0 .. group * bits / 8 - 1];
        loop variant group * bits / 8 - b;
    */
    for (uint32_t b = 0; b < group * bits / 8u; b++) grp[b] = 0;
    /*@ loop invariant i_range: 0 <= i <= group;
        loop invariant codes: \forall integer j; 0 <= j < group ==>
            0 <= kvq_code_l(grp, j, bits) <= kvq_code_max_l(bits);
        loop invariant zero_codes: s == 0 ==>
            \forall integer j; 0 <= j < group ==> kvq_code_l(grp, j, bits) == 0;
        loop invariant at_index: at == i * stride && at <= i * KVQ_MAX_ELEMS;
        loop assigns i, at, f, grp[0 .. group * bits / 8 - 1];
        loop variant group - i;
    */
    for (uint32_t i = 0; i < group; i++, at += stride) {
        float xv;
        //@ assert elem: \valid_read(v + at) && \is_finite(v[at]);
        xv = read_input(v[at], pol, &f);
        kvq_pack_code(grp, i, bits, code_of(xv, s, z, bits, pol, &f));
    }
    *scale = s;
    *zero = z;
    *flags |= f;
    return KVQ_OK;
}

kvq_status kvq_kivi_quantize(uint8_t *codes, float *scale, float *zero, uint32_t *flags,
                             const float *x, const kvq_kivi_shape *shape,
                             const kvq_policy *pol)
{
    uint64_t n, ng, e, g;
    uint32_t f = 0;
    size_t stride;
    if (codes == NULL || scale == NULL || zero == NULL || x == NULL || shape == NULL)
        return KVQ_E_PARAM;
    if (kvq_policy_check(pol) != KVQ_OK || !kvq_kivi_params_ok(shape)) return KVQ_E_PARAM;
    if (!kvq_kivi_shape_ok(shape)) return KVQ_E_SHAPE;
    n = kvq_kivi_elems(shape);
    ng = kvq_kivi_groups(shape);
    stride = (size_t)kvq_kivi_group_stride(shape);
    for (e = 0; e < n; e++)              /* nothing is written before this check [POL-NF-01] */
        if (!isfinite(x[e])) return KVQ_E_NONFINITE;
    if (pol->overflow == KVQ_OVERFLOW_NAN) {
        for (g = 0; g < ng; g++) {       /* fail before writing [POL-OV-02] */
            float mn, mx, s, z;
            uint32_t gf = 0;
            group_minmax(&mn, &mx, &gf, x + kvq_kivi_group_base(shape, g), stride,
                         shape->group, pol);
            if (group_meta(&s, &z, &gf, mn, mx, shape->bits, shape->meta, pol) != KVQ_OK)
                return KVQ_E_RANGE;
        }
    }
    for (g = 0; g < ng; g++) {
        kvq_status st = kvq_kivi_quantize_group(codes + kvq_kivi_group_code_offset(shape, g),
                                                &scale[g], &zero[g], &f,
                                                x + kvq_kivi_group_base(shape, g), stride,
                                                shape->group, shape->bits, shape->meta, pol);
        if (st != KVQ_OK) return st;     /* unreachable: the pre-pass caught it */
    }
    if (flags != NULL) *flags = f;
    return KVQ_OK;
}

/* Stored metadata is well formed: finite, scale 0 or a normal value of the
 * storage format, and representable in it [KIVI-D-02]. */
static kvq_status meta_ok(float s, float z, uint32_t meta)
{
    int ov;
    if (!isfinite(s) || !isfinite(z)) return KVQ_E_NONFINITE;
    if (s < 0.0f) return KVQ_E_PARAM;
    if (meta == KVQ_META_F16) {
        if (s != 0.0f && s < KVQ_F16_MIN_NORMAL) return KVQ_E_PARAM;
        if (kvq_round_f16(s, &ov) != s || ov) return KVQ_E_PARAM;
        if (kvq_round_f16(z, &ov) != z || ov) return KVQ_E_PARAM;
    } else if (s != 0.0f && s < KVQ_F32_MIN_NORMAL) {
        return KVQ_E_PARAM;
    }
    return KVQ_OK;
}

kvq_status kvq_kivi_dequantize(float *y, uint32_t *flags,
                               const uint8_t *codes, const float *scale, const float *zero,
                               const kvq_kivi_shape *shape, const kvq_policy *pol)
{
    uint64_t ng, g;
    uint32_t f = 0, G;
    if (y == NULL || codes == NULL || scale == NULL || zero == NULL || shape == NULL)
        return KVQ_E_PARAM;
    if (kvq_policy_check(pol) != KVQ_OK || !kvq_kivi_params_ok(shape)) return KVQ_E_PARAM;
    if (!kvq_kivi_shape_ok(shape)) return KVQ_E_SHAPE;
    ng = kvq_kivi_groups(shape);
    G = shape->group;
    for (g = 0; g < ng; g++) {
        kvq_status st = meta_ok(scale[g], zero[g], shape->meta);
        if (st != KVQ_OK) return st;
    }
    if (pol->overflow == KVQ_OVERFLOW_NAN) {
        for (g = 0; g < ng; g++) {       /* fail before writing [POL-OV-02] */
            const uint8_t *grp = codes + kvq_kivi_group_code_offset(shape, g);
            for (uint32_t i = 0; i < G; i++) {
                float c = (float)kvq_unpack_code(grp, i, shape->bits);
                if (isinf(fmaf(c, scale[g], zero[g]))) return KVQ_E_RANGE;
            }
        }
    }
    for (g = 0; g < ng; g++) {
        const uint8_t *grp = codes + kvq_kivi_group_code_offset(shape, g);
        for (uint32_t i = 0; i < G; i++) {
            float c = (float)kvq_unpack_code(grp, i, shape->bits);
            float r = fmaf(c, scale[g], zero[g]); /* one rounding [KIVI-D-01] */
            if (isinf(r)) {
                r = copysignf(KVQ_F32_MAX, r);
                f |= KVQ_FLAG_SATURATED;
            }
            y[kvq_kivi_elem_index(shape, g, i)] = r;
        }
    }
    if (flags != NULL) *flags = f;
    return KVQ_OK;
}

kvq_status kvq_kivi_window_prefill(kvq_kivi_window *w, uint32_t grouping, uint32_t group,
                                   uint32_t residual, uint32_t tokens)
{
    uint32_t pend;
    if (w == NULL) return KVQ_E_PARAM;
    if (grouping != KVQ_GROUP_CHANNEL && grouping != KVQ_GROUP_TOKEN) return KVQ_E_PARAM;
    if (group == 0u || residual == 0u || residual % group != 0u) return KVQ_E_PARAM;
    pend = kvq_kivi_residual_after_prefill(grouping, residual, tokens);
    w->grouping = grouping;
    w->group = group;
    w->residual = residual;
    w->quantized = tokens - pend;
    w->pending = pend;
    return KVQ_OK;
}

kvq_status kvq_kivi_window_append(kvq_kivi_window *w, uint32_t *first, uint32_t *count)
{
    if (w == NULL || first == NULL || count == NULL) return KVQ_E_PARAM;
    /* quantized + pending + 1 must fit; UINT32_MAX - quantized cannot wrap. */
    if (w->pending >= UINT32_MAX - w->quantized) return KVQ_E_SHAPE;
    *first = w->quantized;
    *count = 0;
    w->pending += 1u;
    if (w->grouping == KVQ_GROUP_CHANNEL) {
        if (w->pending == w->residual) { /* a full residual is flushed [KIVI-W-02] */
            *count = w->residual;
            w->quantized += w->residual;
            w->pending = 0;
        }
    } else if (w->pending > w->residual) { /* the oldest value leaves the window [KIVI-W-03] */
        *count = 1;
        w->quantized += 1u;
        w->pending = w->residual;
    }
    return KVQ_OK;
}
