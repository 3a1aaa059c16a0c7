/*
 * kivi_dev.cuh -- the KIVI quantizer's pinned device arithmetic, shared by the
 * kernel units that quantize or dequantize through KIVI's semantics
 * (gpu/kivi/kivi.cu, gpu/pkv/*.cu): one function per step of ref/fast/kivi.c,
 * each an explicit round-to-nearest binary32 operation (spec/kivi.md).  Header
 * only; every function is __device__ __forceinline__.
 */
#ifndef KVQ_KIVI_DEV_CUH
#define KVQ_KIVI_DEV_CUH

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <stdint.h>

#include "kvq.h"

#ifndef KVQ_KIVI_BASELINE
#define KVQ_KIVI_BASELINE 0 /* 1: the per-element kernels of before (benchmarks only) */
#endif
#ifndef KVQ_KIVI_HOTCOUNT
#define KVQ_KIVI_HOTCOUNT 0 /* 1: the rare blocks compiled out, for gpu/kivi/sass-count.sh only */
#endif
#ifndef KVQ_KIVI_PLANT
#define KVQ_KIVI_PLANT 0    /* 1..6: a planted bug the device test must catch */
#endif

#define F32_MAX        0x1.fffffep+127f /* largest finite binary32 */
#define F32_MIN_NORMAL 0x1p-126f
#define F16_MAX        0x1.ffcp+15f     /* 65504 */
#define F16_OVF        0x1.ffep+15f     /* 65520: RN16 overflows from here on */
#define F16_MIN_NORMAL 0x1p-14f

#define ERR_NONFINITE 0x1u
#define ERR_RANGE     0x2u
#define NO_KEY        0xFFFFFFFFFFFFFFFFull

/* Device-side state of one call (first bytes of the workspace). */
typedef struct kvq_dev_state {
    uint32_t flags;            /* OR of KVQ_FLAG_* */
    uint32_t err;              /* ERR_* bits */
    unsigned long long key;    /* dequantize: min over bad groups of g*16 + status */
} kvq_dev_state;

/* ---- the pinned arithmetic, one function per step of ref/fast/kivi.c ---- */

/* Read one input under the subnormal policy [POL-SN-01]. */
__device__ __forceinline__ float dev_read_input(float v, bool daz, uint32_t &f)
{
    if (v != 0.0f && fabsf(v) < F32_MIN_NORMAL) {
        f |= KVQ_FLAG_SUBNORMAL;
        if (daz) return copysignf(0.0f, v);
    }
    return v;
}

/* kvq_round_f16: overflow from 65520 on is the policy's business (returns
 * +-65504, ov set); below it cvt.rn.f16.f32 rounds to nearest even on the
 * binary16 grid, subnormal grid included, and keeps the sign of zero. */
__device__ __forceinline__ float dev_round_f16(float v, bool &ov)
{
    if (fabsf(v) >= F16_OVF) {
        ov = true;
        return copysignf(F16_MAX, v);
    }
    ov = false;
    return __half2float(__float2half_rn(v));
}

/* Stored metadata from min and max [KIVI-Q-01..03, KIVI-M-01..03]; err gets
 * ERR_RANGE where the reference returns KVQ_E_RANGE. */
__device__ __forceinline__ void dev_group_meta(float &s_out, float &z_out, uint32_t &f,
                                               uint32_t &err, float mn, float mx, float cmax,
                                               uint32_t meta, bool nanpol)
{
    float r = __fsub_rn(mx, mn);         /* RN32, r >= 0 [KIVI-Q-02] */
    float s, z;
    if (isinf(r)) {                      /* range overflow [POL-OV-01] */
        if (nanpol) err |= ERR_RANGE;
        r = F32_MAX;
        f |= KVQ_FLAG_SATURATED;
    }
    s = __fdiv_rn(r, cmax);              /* RN32 [KIVI-Q-02] */
    z = mn == 0.0f ? 0.0f : mn;          /* zero offset stored as +0 [KIVI-Q-03] */
    if (meta == KVQ_META_F16) {
        bool ov_s, ov_z;
        s = dev_round_f16(s, ov_s);
        z = dev_round_f16(z, ov_z);
        if (ov_s || ov_z) {
            if (nanpol) err |= ERR_RANGE;
            f |= KVQ_FLAG_SATURATED;
        }
        if (z == 0.0f) z = 0.0f;
        if (s < F16_MIN_NORMAL) s = 0.0f; /* zero range [POL-ZR-01] */
    } else if (s < F32_MIN_NORMAL) {
        s = 0.0f;
    }
    if (s == 0.0f) f |= KVQ_FLAG_ZERO_SCALE;
    s_out = s;
    z_out = z;
}

/* Round half away from zero of a finite q, as ref's round_nonneg does it:
 * q - floor(q) is exact, so the tie test is exact [POL-TIE-02]. */
__device__ __forceinline__ float dev_round_away(float q)
{
    float a = fabsf(q);
    float fl = floorf(a);
    float d = __fsub_rn(a, fl);          /* exact */
    return copysignf(d >= 0.5f ? __fadd_rn(fl, 1.0f) : fl, q);
}

/* Code of one value [KIVI-Q-04, KIVI-Q-05], s != 0; rcp = __frcp_rn(s).
 *
 * The reference rounds q = RN32(t/s) to an integer.  Only which side of each
 * half-integer q lies on matters, so the code comes from the estimate
 * qe = RN32(t*rcp) unless qe is near a half-integer:  with rcp = RN(1/s),
 * |qe - t/s| <= 2^-23 |t/s| (+ tiny) and |RN(t/s) - t/s| <= 2^-24 |t/s|, so for
 * |qe| <= 258, |qe - q| < 259 * 1.5 * 2^-23 < 2^-14; a qe at least 2^-12 away
 * from every half-integer rounds (to even or away: it is no tie) to the same
 * integer as q (a subnormal rcp, s > 2^126, always takes the exact path).
 * Otherwise -- near ties, exact ties included -- q itself is
 * computed with the correctly rounded __fdiv_rn and rounded as the reference
 * does.  The reference's two early clamps (q > cmax+1, q < -1) give the same
 * code and flag as rounding first and clamping after, since rounding is
 * monotone.
 *
 * qe is first clamped to [-2, cmax+2] (cmax+2 <= 257): a qe below -2 or above
 * cmax+2 means q < -1.99 or q > cmax+1.99, whose rounding is clamped either
 * way, and the clamp ends are integers, so no near-tie is made up.  On the
 * clamped qe, m = RN(qe + 1.5*2^23) is 1.5*2^23 + rint(qe) exactly (the sum lies
 * in [2^23, 2^24), where the binary32 quantum is 1; ties go to the even
 * integer, as rintf does), m - 1.5*2^23 is exact (Sterbenz), and the bits of
 * m are 0x4B400000 + rint(qe): the integer code without the quarter-rate
 * FRND and F2I conversions. */
#define MAGIC_RND 0x1.8p23f              /* 1.5 * 2^23 */
#define MAGIC_RND_BITS 0x4B400000u
__device__ __forceinline__ uint32_t dev_code(float xv, float s, float rcp, float z, float cmax,
                                             bool away, uint32_t &f)
{
    float t = __fsub_rn(xv, z);          /* RN32 [KIVI-Q-04] */
    if (isinf(t)) {                      /* only when the range saturated */
        t = copysignf(F32_MAX, t);
        f |= KVQ_FLAG_SATURATED;
    }
    float qe = fminf(fmaxf(__fmul_rn(t, rcp), -2.0f), __fadd_rn(cmax, 2.0f));
    float m = __fadd_rn(qe, MAGIC_RND);  /* 1.5*2^23 + rint(qe), exact */
    float d = fabsf(__fsub_rn(qe, __fsub_rn(m, MAGIC_RND))); /* |qe - rint(qe)|, exact */
    int32_t c = (int32_t)(__float_as_uint(m) - MAGIC_RND_BITS); /* rint(qe) */
    /* within 2^-12 of a half-integer, or a subnormal rcp (|s| > 2^126): exact */
    if (!KVQ_KIVI_HOTCOUNT && (d > 0x1.ffcp-2f || rcp < F32_MIN_NORMAL)) {
        float q = __fdiv_rn(t, s);       /* RN32 [KIVI-Q-04] */
        float cf = away ? dev_round_away(q) : rintf(q);
        cf = fminf(fmaxf(cf, -2.0f), __fadd_rn(cmax, 2.0f)); /* same code and flag */
        c = (int32_t)cf;
    }
    const int32_t cm = (int32_t)cmax;
    if ((uint32_t)c > (uint32_t)cm) f |= KVQ_FLAG_CLAMPED; /* c < 0 or c > cmax */
    return (uint32_t)min(max(c, 0), cm);
}

#ifndef KVQ_KIVI_RARECALL
#define KVQ_KIVI_RARECALL 1 /* 0: dev_code inlined in the rare blocks too, as before */
#endif

/* dev_code out of line, for the rare blocks of dev_group_codes [KIVI-DEV-05]:
 * a call there in place of 32 inlined copies of its division and rounding keeps
 * their registers and code out of the common path.  Returns the code in bits
 * 0..7 and the flags dev_code set in bits 8.. (KVQ_FLAG_* < 2^5): no pointer
 * argument, so no caller variable lives in memory. */
static __device__ __noinline__ uint32_t dev_code_rare(float xv, float s, float rcp, float z,
                                                      float cmax, bool away)
{
    uint32_t f = 0;
    const uint32_t c = dev_code(xv, s, rcp, z, cmax, away, f);
    return c | f << 8;
}

/* dev_code in a rare block: out of line (KVQ_KIVI_RARECALL) or inlined */
__device__ __forceinline__ uint32_t dev_code_r(float xv, float s, float rcp, float z, float cmax,
                                               bool away, uint32_t &f)
{
#if KVQ_KIVI_RARECALL
    const uint32_t r = dev_code_rare(xv, s, rcp, z, cmax, away);
    f |= r >> 8;
    return r & 0xFFu;
#else
    return dev_code(xv, s, rcp, z, cmax, away, f);
#endif
}

/* ---- one group's inputs and codes, the quantize kernels' common path ----
 * [KIVI-DEV-01] [KIVI-DEV-02] (spec/kivi.md, "CUDA kernels"). */

/* Read the N values of one group (or of a lane's part of one) in place, under
 * the subnormal policy [POL-SN-01], and return their minimum and maximum.  One
 * comparison an element: |x| < 2^-126 marks zeros and subnormals alike; only a
 * group with one is read again, element by element (dev_read_input), for the
 * subnormal flag and, under DAZ, the flushed values and their extremes.
 * Infinities show in the extremes (fminf/fmaxf ignore a NaN, never an
 * infinity) and set ERR_NONFINITE here; a NaN is found by dev_group_codes.
 * Under KVQ_KIVI_BASELINE: the per-element checks of the earlier kernels. */
template <uint32_t N>
__device__ __forceinline__ void dev_group_read(float *v, bool daz, uint32_t &f, uint32_t &err,
                                               float &mn, float &mx)
{
#if KVQ_KIVI_BASELINE
#pragma unroll
    for (uint32_t k = 0; k < N; k++) {
        if (!isfinite(v[k])) err |= ERR_NONFINITE;
        v[k] = dev_read_input(v[k], daz, f);
    }
#else
    bool tiny = false;
#pragma unroll
    for (uint32_t k = 0; k < N; k++) tiny |= fabsf(v[k]) < F32_MIN_NORMAL;
    if (!KVQ_KIVI_HOTCOUNT && tiny) {
#pragma unroll
        for (uint32_t k = 0; k < N; k++) v[k] = dev_read_input(v[k], daz, f);
    }
#endif
    mn = mx = v[0];
#pragma unroll
    for (uint32_t k = 1; k < N; k++) {
        mn = fminf(mn, v[k]);
        mx = fmaxf(mx, v[k]);
    }
#if !KVQ_KIVI_BASELINE
    if (isinf(mn) || isinf(mx)) err |= ERR_NONFINITE; /* [POL-NF-01] */
#endif
}

/* The fused estimate's bounds [KIVI-DEV-01]: |RN(z*rcp)| <= 2^9 and every
 * estimate in [-1/4, cmax + 1/4].  NEAR_HALF: an estimate more than this from
 * its nearest integer lies within 2^-12 of a half-integer. */
#define FUSED_ZR_MAX 0x1p9f
#define NEAR_HALF    0x1.ffcp-2f           /* 1/2 - 2^-12 */

/* Codes of one group's N values (dev_group_read's output, min mn, max mx)
 * against the stored s and z, as MAGIC_RND_BITS + code (the encoding of
 * 1.5*2^23 + code: the caller packs mb - MAGIC_RND_BITS).  s == 0 gives code
 * 0 [POL-ZR-01].
 *
 * Fast groups [KIVI-DEV-01]: with rcp = RN(1/s) normal and zr = RN(z*rcp),
 * the estimate qe = RN(x*rcp - zr) (one FMA) differs from the reference's
 * q = RN(RN(x - z)/s) by at most 1534 * 2^-24 < 2^-13.4 when |zr| <= 2^9 and
 * |qe| <= cmax + 1/4 (the bound is derived in spec/kivi.md and checked
 * exhaustively by tests/check_kivi_fast.c).  qe is monotone in x, so
 * the estimates of mn and mx bound every element's: in [-1/4, cmax + 1/4] no
 * code clamps and x - z cannot overflow.  A qe more than 2^-12 from every
 * half-integer then rounds (even or away: q is no tie) to the integer q rounds
 * to, which m = RN(qe + 1.5*2^23) holds in its low bits; the others -- near
 * ties, exact ties, and a NaN x, whose qe is NaN -- are redone by dev_code,
 * the exact path, after the group (one predicate an element, no branch in the
 * loop).  s == 0 runs the same loop with rcp = zr = 0 (every qe 0, a NaN or
 * infinite x NaN).  Other groups (offsets past 2^9 scales, extremes whose
 * codes clamp, s > 2^126) take dev_code for every element. */
template <uint32_t N>
__device__ __forceinline__ void dev_group_codes(uint32_t *mb, const float *v, float mn, float mx,
                                                float s, float z, float cmax, bool away,
                                                uint32_t &f, uint32_t &err)
{
#if KVQ_KIVI_BASELINE
    if (s != 0.0f) {
        const float rcp = __frcp_rn(s);
#pragma unroll
        for (uint32_t k = 0; k < N; k++) mb[k] = MAGIC_RND_BITS + dev_code(v[k], s, rcp, z, cmax, away, f);
    } else {
#pragma unroll
        for (uint32_t k = 0; k < N; k++) mb[k] = MAGIC_RND_BITS;
    }
    (void)mn; (void)mx; (void)err;
#else
    const float rcp = s != 0.0f ? __frcp_rn(s) : 0.0f;
    const float nzr = s != 0.0f ? -__fmul_rn(z, rcp) : 0.0f; /* negation exact */
    const float qlo = __fmaf_rn(mn, rcp, nzr), qhi = __fmaf_rn(mx, rcp, nzr);
#if KVQ_KIVI_PLANT == 2
    /* planted bug: the range condition dropped */
    const bool fast = s == 0.0f || (rcp >= F32_MIN_NORMAL && fabsf(nzr) <= FUSED_ZR_MAX);
#else
    const bool fast = s == 0.0f || (rcp >= F32_MIN_NORMAL && fabsf(nzr) <= FUSED_ZR_MAX
                                    && qlo >= -0.25f && qhi <= __fadd_rn(cmax, 0.25f));
#endif
#if KVQ_KIVI_PLANT == 1
    const float near_half = 0.5f;          /* planted bug: near ties not redone */
#else
    const float near_half = NEAR_HALF;
#endif
    if (KVQ_KIVI_HOTCOUNT || fast) {
        bool near = false;
#pragma unroll
        for (uint32_t k = 0; k < N; k++) {
            const float qe = __fmaf_rn(v[k], rcp, nzr);
            const float m = __fadd_rn(qe, MAGIC_RND);
            near |= !(fabsf(__fsub_rn(qe, __fsub_rn(m, MAGIC_RND))) <= near_half);
            mb[k] = __float_as_uint(m);
        }
        if (!KVQ_KIVI_HOTCOUNT && near) {  /* rare: about 2^-11 of the elements */
#pragma unroll
            for (uint32_t k = 0; k < N; k++) {
                const float qe = __fmaf_rn(v[k], rcp, nzr);
                const float m = __fadd_rn(qe, MAGIC_RND);
                if (!(fabsf(__fsub_rn(qe, __fsub_rn(m, MAGIC_RND))) <= near_half)) {
                    if (!isfinite(v[k])) err |= ERR_NONFINITE; /* [POL-NF-01] */
                    mb[k] = MAGIC_RND_BITS
                            + (s != 0.0f ? dev_code_r(v[k], s, __frcp_rn(s), z, cmax, away, f) : 0u);
                }
            }
        }
    } else {
        const float r = __frcp_rn(s);      /* s != 0 here */
#pragma unroll
        for (uint32_t k = 0; k < N; k++) {
            if (!isfinite(v[k])) err |= ERR_NONFINITE; /* [POL-NF-01] */
            mb[k] = MAGIC_RND_BITS + dev_code_r(v[k], s, r, z, cmax, away, f);
        }
    }
#endif
}

/* The common path of the quantize kernels [KIVI-DEV-05]: dev_group_read and
 * dev_group_codes without their rare blocks.  Each returns true when its group
 * needs the rare pass (a zero or subnormal value, an infinite extreme; a group
 * off the fast path), which recomputes the lane's groups whole with
 * dev_group_read and dev_group_codes (gpu/kivi/kivi.cu); dev_group_codes_common
 * also gives the elements of a fast group its test fails (near ties, NaNs) as
 * the bits of nearm: the kernel redoes those one by one (dev_near_code; a NaN
 * takes the rare pass).  Otherwise their results are those two functions' (their
 * fast loops, verbatim). */
template <uint32_t N>
__device__ __forceinline__ bool dev_group_read_common(const float *v, float &mn, float &mx)
{
    bool tiny = false;
#pragma unroll
    for (uint32_t k = 0; k < N; k++) tiny |= fabsf(v[k]) < F32_MIN_NORMAL;
    mn = mx = v[0];
#pragma unroll
    for (uint32_t k = 1; k < N; k++) {
        mn = fminf(mn, v[k]);
        mx = fmaxf(mx, v[k]);
    }
    return tiny || isinf(mn) || isinf(mx);
}

template <uint32_t N>
__device__ __forceinline__ bool dev_group_codes_common(uint32_t *mb, const float *v, float mn, float mx,
                                                       float s, float z, float cmax, uint32_t &nearm)
{
    const float rcp = s != 0.0f ? __frcp_rn(s) : 0.0f;
    const float nzr = s != 0.0f ? -__fmul_rn(z, rcp) : 0.0f; /* negation exact */
    const float qlo = __fmaf_rn(mn, rcp, nzr), qhi = __fmaf_rn(mx, rcp, nzr);
#if KVQ_KIVI_PLANT == 2
    /* planted bug: the range condition dropped */
    const bool fast = s == 0.0f || (rcp >= F32_MIN_NORMAL && fabsf(nzr) <= FUSED_ZR_MAX);
#else
    const bool fast = s == 0.0f || (rcp >= F32_MIN_NORMAL && fabsf(nzr) <= FUSED_ZR_MAX
                                    && qlo >= -0.25f && qhi <= __fadd_rn(cmax, 0.25f));
#endif
#if KVQ_KIVI_PLANT == 1
    const float near_half = 0.5f;          /* planted bug: near ties not redone */
#else
    const float near_half = NEAR_HALF;
#endif
    uint32_t nm = 0;
#pragma unroll
    for (uint32_t k = 0; k < N; k++) {
        const float qe = __fmaf_rn(v[k], rcp, nzr);
        const float m = __fadd_rn(qe, MAGIC_RND);
        nm |= (uint32_t)!(fabsf(__fsub_rn(qe, __fsub_rn(m, MAGIC_RND))) <= near_half) << k;
        mb[k] = __float_as_uint(m);
    }
    nearm = nm;
    return !fast;
}

/* The exact code of a near tie of a fast group (dev_group_codes' redo): xv is not
 * NaN (a NaN takes the rare pass), so the code is dev_code's, in bits 0..7, and
 * its flags in bits 8.. */
__device__ __forceinline__ uint32_t dev_near_code(float xv, float s, float z, float cmax, bool away)
{
    uint32_t f = 0;
    const uint32_t c = s != 0.0f ? dev_code_r(xv, s, __frcp_rn(s), z, cmax, away, f) : 0u;
    return c | f << 8;
}

/* Stored-metadata check of dequantization [KIVI-D-02]: the reference's meta_ok. */
__device__ __forceinline__ uint32_t dev_meta_ok(float s, float z, uint32_t meta)
{
    bool ov;
    if (!isfinite(s) || !isfinite(z)) return KVQ_E_NONFINITE;
    if (s < 0.0f) return KVQ_E_PARAM;
    if (meta == KVQ_META_F16) {
        if (s != 0.0f && s < F16_MIN_NORMAL) return KVQ_E_PARAM;
        if (dev_round_f16(s, ov) != s || ov) return KVQ_E_PARAM;
        if (dev_round_f16(z, ov) != z || ov) return KVQ_E_PARAM;
    } else if (s != 0.0f && s < F32_MIN_NORMAL) {
        return KVQ_E_PARAM;
    }
    return KVQ_OK;
}

/* One dequantized value [KIVI-D-01]: fmaf, one rounding; saturation only under
 * the saturate policy (the NaN policy failed in the pre-pass). */
__device__ __forceinline__ float dev_dequant(uint32_t code, float s, float z, uint32_t &f)
{
    /* (float)code without the quarter-rate I2F: code < 2^23, so 2^23 + code is
     * exact in binary32 and subtracting 2^23 again is exact. */
    const float cf = __fsub_rn(__uint_as_float(0x4B000000u | code), 0x1p23f);
    float r = __fmaf_rn(cf, s, z);
    if (isinf(r)) {
        r = copysignf(F32_MAX, r);
        f |= KVQ_FLAG_SATURATED;
    }
    return r;
}

/* OR a warp's flags and errors into the call's state, one atomic a warp.
 * Every lane of the warp must call it. */
__device__ __forceinline__ void dev_publish(kvq_dev_state *st, uint32_t f, uint32_t err)
{
    f = __reduce_or_sync(0xFFFFFFFFu, f);
    err = __reduce_or_sync(0xFFFFFFFFu, err);
    if ((threadIdx.x & 31u) == 0u) {
        if (f) atomicOr(&st->flags, f);
        if (err) atomicOr(&st->err, err);
    }
}

__device__ __forceinline__ uint64_t dev_tid(void)
{
    return (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
}

#endif /* KVQ_KIVI_DEV_CUH */
