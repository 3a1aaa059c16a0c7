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

/* Round a finite q >= 0, q < 2^31.  q - floor(q) is exact (Sterbenz for q >= 1,
 * trivially for q < 1), so the tie test below is exact. [POL-TIE-01] */
static int64_t round_nonneg(float q, uint32_t ties)
{
    float fl = floorf(q);
    float d = q - fl; /* exact */
    int64_t i = (int64_t)fl;
    if (d > 0.5f) return i + 1;
    if (d < 0.5f) return i;
    if (ties == KVQ_TIES_AWAY) return i + 1;
    return i % 2 == 0 ? i : i + 1;
}

int64_t kvq_round_int(float q, uint32_t ties)
{
    /* Both tie rules are symmetric about 0, so negative q is rounded as -q. */
    if (q < 0.0f) return -round_nonneg(-q, ties);
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
static float read_input(float v, const kvq_policy *pol, uint32_t *flags)
{
    if (v != 0.0f && fabsf(v) < KVQ_F32_MIN_NORMAL) {
        *flags |= KVQ_FLAG_SUBNORMAL;
        if (pol->subnormal == KVQ_SUBNORMAL_DAZ) return copysignf(0.0f, v);
    }
    return v;
}

/* Stored metadata of a group from its min and max [KIVI-Q-01..03, KIVI-M-01..03]. */
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

/* Code of one value against stored metadata [KIVI-Q-04, KIVI-Q-05]. */
static uint32_t code_of(float xv, float s, float z, uint32_t bits, const kvq_policy *pol,
                        uint32_t *flags)
{
    float cmax = (float)kvq_code_max(bits);
    float t, q;
    int64_t c;
    if (s == 0.0f) return 0u;            /* zero range: every code 0 [POL-ZR-01] */
    t = xv - z;                          /* RN32 [KIVI-Q-04] */
    if (isinf(t)) {                      /* only when the range saturated */
        t = copysignf(KVQ_F32_MAX, t);
        *flags |= KVQ_FLAG_SATURATED;
    }
    q = t / s;                           /* RN32 [KIVI-Q-04] */
    if (q > cmax + 1.0f) {               /* rounds past cmax under either tie rule */
        *flags |= KVQ_FLAG_CLAMPED;
        return kvq_code_max(bits);
    }
    if (q < -1.0f) {
        *flags |= KVQ_FLAG_CLAMPED;
        return 0u;
    }
    c = kvq_round_int(q, pol->ties);     /* |q| <= 257: exact [KIVI-Q-04] */
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
static void group_minmax(float *mn, float *mx, uint32_t *flags, const float *v, size_t stride,
                         uint32_t group, const kvq_policy *pol)
{
    float lo = read_input(v[0], pol, flags), hi = lo;
    for (uint32_t i = 1; i < group; i++) {
        float xv = read_input(v[(size_t)i * stride], pol, flags);
        if (xv < lo) lo = xv;
        if (xv > hi) hi = xv;
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
    kvq_status st;
    group_minmax(&mn, &mx, &f, v, stride, group, pol);
    st = group_meta(&s, &z, &f, mn, mx, bits, meta, pol);
    if (st != KVQ_OK) return st;
    for (uint32_t b = 0; b < group * bits / 8u; b++) grp[b] = 0;
    for (uint32_t i = 0; i < group; i++) {
        float xv = read_input(v[(size_t)i * stride], pol, &f);
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
    if (w->quantized > UINT32_MAX - w->pending - 1u) return KVQ_E_SHAPE;
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
