/*
 * pkv_dev.cuh -- the PKV steps on the device, shared by the kernel units of
 * gpu/pkv/ (header only, __device__ __forceinline__): the domain checks
 * [PKV-DOM-01], the pinned min-max and squared Euclidean distances and the
 * lowest-index argmin over a bank [PKV-A-01..02] [PKV-KM-02], the V decision
 * [PKV-V-01].  Every float operation is one explicit round-to-nearest binary32
 * operation of ref/fast/pkv.c's sequence.
 *
 * Segments: the argmin of one token is shared by P = 2^lgP consecutive lanes
 * of a warp (P = 4 .. 32): lane `sub` of the segment scans patterns sub,
 * sub + P, ... in ascending order with a strict `<`, then the segment keeps the
 * least (distance, index) pair, the lower index among equal distances -- the
 * lowest index of least distance over the bank [PKV-DEV-02], as the fast path's one
 * ascending scan gives it.  The per-pattern distance is one lane's sequential
 * loop over i = 0 .. d-1, so the Euclidean sum keeps the pinned order.
 *
 * KVQ_PKV_PLANT (a build of the device test only, gpu/pkv/rules.mk) plants a
 * bug the test must catch: 1, ties across a segment's lanes take the higher
 * index; 2, Chebyshev extremes scanned in descending token order (the sign of
 * a zero extreme).
 */
#ifndef KVQ_PKV_DEV_CUH
#define KVQ_PKV_DEV_CUH

#include <cuda_runtime.h>

#include <math.h>
#include <stdint.h>

#include "kvq_pkv.h"
#include "kivi/kivi_dev.cuh"

/* Error bits of the PKV checks (kvq_dev_state.err); the status in the fast
 * path's order [PKV-ERR-01]: any non-finite value (inputs, then patterns) is
 * KVQ_E_NONFINITE, else any value outside the domain KVQ_E_RANGE. */
#define PKV_ERR_NONFINITE 0x1u
#define PKV_ERR_RANGE     0x2u

/* The check of one input or pattern value [PKV-DOM-01]. */
__device__ __forceinline__ uint32_t dev_pkv_check(float v)
{
    if (!isfinite(v)) return PKV_ERR_NONFINITE;
    return fabsf(v) > KVQ_PKV_MAX_ABS ? PKV_ERR_RANGE : 0u;
}

__host__ __device__ __forceinline__ uint32_t pkv_err_status(uint32_t err)
{
    return (err & PKV_ERR_NONFINITE) ? KVQ_E_NONFINITE
         : (err & PKV_ERR_RANGE)     ? KVQ_E_RANGE
                                     : KVQ_OK;
}

/* The pinned min-max distance [PKV-A-01]: the extremes of the rounded
 * differences (exact in any order), one rounding of their difference.  The
 * sign of a zero distance is not the fast path's in every order, and nothing
 * reads it: distances are only compared (< and <=). */
__device__ __forceinline__ float dev_pkv_dmm(const float *x, const float *m, uint32_t d, bool vec)
{
    float hi, lo;
    if (vec) {
        float4 a = *(const float4 *)x, b = __ldg((const float4 *)m);
        float t0 = __fsub_rn(a.x, b.x), t1 = __fsub_rn(a.y, b.y);
        float t2 = __fsub_rn(a.z, b.z), t3 = __fsub_rn(a.w, b.w);
        hi = fmaxf(fmaxf(t0, t1), fmaxf(t2, t3));
        lo = fminf(fminf(t0, t1), fminf(t2, t3));
        for (uint32_t i = 4; i < d; i += 4) {
            a = *(const float4 *)(x + i);
            b = __ldg((const float4 *)(m + i));
            t0 = __fsub_rn(a.x, b.x);
            t1 = __fsub_rn(a.y, b.y);
            t2 = __fsub_rn(a.z, b.z);
            t3 = __fsub_rn(a.w, b.w);
            hi = fmaxf(hi, fmaxf(fmaxf(t0, t1), fmaxf(t2, t3)));
            lo = fminf(lo, fminf(fminf(t0, t1), fminf(t2, t3)));
        }
    } else {
        hi = lo = __fsub_rn(x[0], __ldg(m));
        for (uint32_t i = 1; i < d; i++) {
            const float t = __fsub_rn(x[i], __ldg(m + i));
            hi = fmaxf(hi, t);
            lo = fminf(lo, t);
        }
    }
    return __fsub_rn(hi, lo);
}

/* The pinned squared Euclidean distance [PKV-KM-02]: i ascending, two
 * roundings a step, no FMA. */
__device__ __forceinline__ float dev_pkv_euc(const float *x, const float *m, uint32_t d)
{
    float acc = 0.0f;
    for (uint32_t i = 0; i < d; i++) {
        const float t = __fsub_rn(x[i], __ldg(m + i));
        acc = __fadd_rn(acc, __fmul_rn(t, t));
    }
    return acc;
}

/* The least (distance, index) of the segment's patterns for token xt (every
 * lane of the warp calls it; inactive lanes pass act = false).  Returns the
 * index; *bd_out its distance.  An index past npat (only when a distance is a
 * NaN, i.e. an input outside the domain: the call fails) reads as 0. */
__device__ __forceinline__ uint32_t dev_pkv_nearest(float *bd_out, const float *xt,
                                                    const float *bank, uint32_t npat,
                                                    uint32_t d, uint32_t dist, bool vec,
                                                    uint32_t sub, uint32_t lgP, bool act)
{
    const uint32_t P = 1u << lgP;
    float bd = __int_as_float(0x7f800000); /* +inf */
    uint32_t bj = 0xFFFFFFFFu;
    if (act) {
        for (uint32_t j = sub; j < npat; j += P) {
            const float *m = bank + kvq_pkv_pattern_offset(j, d);
            const float dj = dist == KVQ_PKV_DIST_EUCLID ? dev_pkv_euc(xt, m, d)
                                                         : dev_pkv_dmm(xt, m, d, vec);
            if (dj < bd) {               /* strict: ties keep the lowest index [PKV-A-02] */
                bd = dj;
                bj = j;
            }
        }
    }
    for (uint32_t o = P >> 1; o > 0u; o >>= 1) {
        const float od = __shfl_xor_sync(0xFFFFFFFFu, bd, (int)o);
        const uint32_t oj = __shfl_xor_sync(0xFFFFFFFFu, bj, (int)o);
#if defined(KVQ_PKV_PLANT) && KVQ_PKV_PLANT == 1
        if (od < bd || (od == bd && oj > bj)) { /* planted bug: the higher index on ties */
#else
        if (od < bd || (od == bd && oj < bj)) {
#endif
            bd = od;
            bj = oj;
        }
    }
    *bd_out = bd;
    return bj < npat ? bj : 0u;
}

/* The register-resident form for a bank of at most 32 patterns of D values
 * (D a multiple of 4) and a segment of 32 lanes: lane l holds pattern l in mreg
 * (loaded once per kernel by dev_pkv_load_pattern; a lane past npat holds
 * none) and each token's row is read as broadcast float4 loads, so the bank
 * costs no load per token.  Same scan and the same segment reduction as
 * dev_pkv_nearest: the lowest index of least pinned min-max distance. */
template <int D>
__device__ __forceinline__ void dev_pkv_load_pattern(float4 (&mreg)[D / 4], const float *bank,
                                                     uint32_t npat, uint32_t lane)
{
    const float *m = bank + kvq_pkv_pattern_offset(lane < npat ? lane : 0u, D);
#pragma unroll
    for (int k = 0; k < D / 4; k++) mreg[k] = __ldg((const float4 *)m + k);
}

template <int D>
__device__ __forceinline__ uint32_t dev_pkv_nearest_reg(float *bd_out, const float *xt,
                                                        const float4 (&mreg)[D / 4],
                                                        uint32_t npat, uint32_t lane)
{
    float4 a = *(const float4 *)xt;
    float t0 = __fsub_rn(a.x, mreg[0].x), t1 = __fsub_rn(a.y, mreg[0].y);
    float t2 = __fsub_rn(a.z, mreg[0].z), t3 = __fsub_rn(a.w, mreg[0].w);
    float hi = fmaxf(fmaxf(t0, t1), fmaxf(t2, t3));
    float lo = fminf(fminf(t0, t1), fminf(t2, t3));
#pragma unroll
    for (int k = 1; k < D / 4; k++) {
        a = *(const float4 *)(xt + 4 * k);
        t0 = __fsub_rn(a.x, mreg[k].x);
        t1 = __fsub_rn(a.y, mreg[k].y);
        t2 = __fsub_rn(a.z, mreg[k].z);
        t3 = __fsub_rn(a.w, mreg[k].w);
        hi = fmaxf(hi, fmaxf(fmaxf(t0, t1), fmaxf(t2, t3)));
        lo = fminf(lo, fminf(fminf(t0, t1), fminf(t2, t3)));
    }
    float bd = __int_as_float(0x7f800000); /* +inf: a lane without a pattern */
    uint32_t bj = 0xFFFFFFFFu;
    if (lane < npat) {
        bd = __fsub_rn(hi, lo);          /* [PKV-A-01] */
        bj = lane;
    }
    for (uint32_t o = 16u; o > 0u; o >>= 1) {
        const float od = __shfl_xor_sync(0xFFFFFFFFu, bd, (int)o);
        const uint32_t oj = __shfl_xor_sync(0xFFFFFFFFu, bj, (int)o);
#if defined(KVQ_PKV_PLANT) && KVQ_PKV_PLANT == 1
        if (od < bd || (od == bd && oj > bj)) { /* planted bug: the higher index on ties */
#else
        if (od < bd || (od == bd && oj < bj)) {
#endif
            bd = od;
            bj = oj;
        }
    }
    *bd_out = bd;
    return bj < npat ? bj : 0u;
}

/* Ask L2 for the 128-byte lines of a row of d floats, spread over a segment of
 * P lanes (the next token's row while this one's patterns are scanned: the
 * assignment is arithmetic-bound, and a warp has one row in flight otherwise).
 * A hint only: it reads nothing into registers and changes no result. */
__device__ __forceinline__ void dev_pkv_prefetch_row(const float *row, uint32_t d, uint32_t sub,
                                                     uint32_t P)
{
    const uint32_t lines = (d * 4u + 127u) / 128u;
    for (uint32_t l = sub; l < lines; l += P)
        asm volatile("prefetch.global.L2 [%0];" ::"l"(row + l * 32u));
}

/* Lane `sub`'s elements of a row of d, for a segment of P lanes: float4 k at
 * 4 (sub + k P) when vec, else element sub + k P. */
#define PKV_SLICE_FOR(i, sub, P, d, vec) \
    for (uint32_t i = (vec) ? 4u * (sub) : (sub); i < (d); i += (vec) ? 4u * (P) : (P))

/* The checks and the extremes of row xt over the lane's slice, then over the
 * segment (every lane calls it). */
__device__ __forceinline__ uint32_t dev_pkv_row_scan(float *vmin, float *vmax, const float *xt,
                                                     uint32_t d, bool vec, uint32_t sub,
                                                     uint32_t lgP, bool act)
{
    const uint32_t P = 1u << lgP;
    uint32_t err = 0;
    float lo = __int_as_float(0x7f800000), hi = __int_as_float(0xff800000);
    if (act) {
        PKV_SLICE_FOR(i, sub, P, d, vec) {
            if (vec) {
                const float4 a = *(const float4 *)(xt + i);
                err |= dev_pkv_check(a.x) | dev_pkv_check(a.y) | dev_pkv_check(a.z) |
                       dev_pkv_check(a.w);
                lo = fminf(lo, fminf(fminf(a.x, a.y), fminf(a.z, a.w)));
                hi = fmaxf(hi, fmaxf(fmaxf(a.x, a.y), fmaxf(a.z, a.w)));
            } else {
                const float a = xt[i];
                err |= dev_pkv_check(a);
                lo = fminf(lo, a);
                hi = fmaxf(hi, a);
            }
        }
    }
    for (uint32_t o = P >> 1; o > 0u; o >>= 1) {
        lo = fminf(lo, __shfl_xor_sync(0xFFFFFFFFu, lo, (int)o));
        hi = fmaxf(hi, __shfl_xor_sync(0xFFFFFFFFu, hi, (int)o));
    }
    *vmin = lo;
    *vmax = hi;
    return err;
}

/* The V decision [PKV-V-01] from the extremes of v and its pinned distance
 * to the pattern: Rr = RN32(max - min); Rr = 0 stores v raw; else use the
 * pattern iff RN32(Rf / Rr) <= t (fminf/fmaxf extremes: exact, and the sign of
 * a zero Rr or Rf changes neither test). */
__device__ __forceinline__ bool dev_pkv_v_use(float vmin, float vmax, float rf, float t)
{
    const float rr = __fsub_rn(vmax, vmin);
    if (rr == 0.0f) return false;
    return __fdiv_rn(rf, rr) <= t;
}

/* Warp-wide OR of check bits into the call's state, one atomic a warp. */
__device__ __forceinline__ void dev_pkv_publish_err(kvq_dev_state *st, uint32_t err)
{
    dev_publish(st, 0u, err);
}

/* log2 of the lanes a token takes: the least power of two >= npat, at least 4
 * (a segment's loads of a row then cover whole 64-byte pieces of it) and at most
 * 32 (host side).  Lanes past npat hold no pattern (distance +inf). */
static inline uint32_t pkv_lg_lanes(uint32_t npat)
{
    uint32_t lg = 2;
    while (lg < 5u && (1u << lg) < npat) lg++;
    return lg;
}

/* The extent every PKV call accepts (ref/fast/pkv.c's extent_ok) [PKV-ERR-01]. */
static inline int pkv_extent_ok(uint32_t tokens, uint32_t dim)
{
    return tokens >= 1u && dim >= 1u && tokens <= KVQ_MAX_DIM && dim <= KVQ_MAX_DIM &&
           (uint64_t)tokens * dim <= KVQ_MAX_ELEMS;
}

/* Blocks of bs threads for a grid-stride kernel over `threads` threads. */
static inline unsigned int pkv_grid(uint64_t threads, uint32_t bs)
{
    uint64_t b = (threads + bs - 1u) / bs;
    return (unsigned int)(b > 65535u ? 65535u : (b ? b : 1u));
}

static inline uint64_t pkv_up256(uint64_t n)
{
    return (n + 255u) / 256u * 256u;
}

#endif /* KVQ_PKV_DEV_CUH */
