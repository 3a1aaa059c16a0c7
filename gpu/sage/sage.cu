/*
 * sage.cu -- SAGE (SageAttention2) quantizers on CUDA, bit-exact to ref/fast/sage.c.
 *
 * Every float operation is the one binary32 operation of the pinned sequence
 * (spec/sage.md), written as an explicit round-to-nearest intrinsic (__fadd_rn,
 * __fsub_rn, __fmul_rn, __fdiv_rn); the build adds -fmad=false and keeps
 * subnormals.  Maxima (fabsf, comparisons) are exact, so their order is free:
 * they are taken as unsigned maxima of the encodings of |x|, which order
 * finite non-negative binary32 values as their values.  Sums keep the
 * reference's order (one thread walks one sum).  FP8 codes come from the
 * shared integer encoder kvq_fp8_round_bits32 (include/kvq_fp8.h, the one
 * ref/common/fp8.c uses), except in the V kernel, which uses the conversion
 * instruction where it equals that encoder [SAGE-DEV-06].  The token-to-slot
 * map and the code packing go through include/kvq_sage_layout.h only.
 *
 * Kernels:
 *   sage_check_kernel      NaN/Inf, and the range a call admits (|x| <= 2^48 for
 *                          smoothing [SAGE-L-04], 0 <= p <= 1 for P~)
 *   sage_mean_kernel       one thread a (head, segment, channel): the column sum in
 *                          token order, then the division [SAGE-SM-01]
 *   sage_sub_kernel        xs = x - mean, elementwise [SAGE-SM-02]
 *   sage_mean_stg_kernel   the same means, the stage kernel [SAGE-DEV-16]: a block
 *                          a (head, segment, 32-channel strip) streams token tiles
 *                          into shared memory by cp.async while warp 0 sums them in
 *                          token order; in the pipeline the other warps check the
 *                          values (the check pass fused)
 *                          and, when a segment fits in shared memory (at most 512
 *                          tokens: Q's blocks of 128), subtract its mean from it there
 *   sage_sub_stg_kernel    the same subtraction by float4, one 32-bit division a
 *                          float4, for longer segments (K) [SAGE-DEV-16]
 *                          (KVQ_SAGE_STAGES=0: sage_mean_kernel, sage_sub_kernel)
 *   sage_qk_fast_kernel    Q/K at the public code's blocks (b_q = 128 with 4 warps,
 *                          b_k = 64), any granularity: the block's slots fold into
 *                          shifts, 8 float4 a thread in registers, slot maxima kept
 *                          per lane and reduced once a slot [SAGE-DEV-04]
 *   sage_qk_kernel         Q/K, any other block: one thread block a quantization
 *                          block of b tokens, slot maxima in shared memory (a warp
 *                          shuffle per token), the block's scales, then its codes;
 *                          blocks of b d <= 16384 keep their values in registers
 *                          (one read of x), larger ones read the block again
 *                          [SAGE-Q-01..06]
 *   sage_vmax_kernel       per-channel maxima of V over all tokens, 8 float4 loads
 *                          a thread in flight [SAGE-V-01]
 *   sage_vscale_kernel     the channel scales [SAGE-V-02..03]
 *   sage_vcode_kernel      FP8 codes of V: 4 channels a thread, their scales in
 *                          registers [SAGE-V-04] [SAGE-DEV-06]
 *   sage_vcode_vt_kernel   the same codes (d = 128), one thread block a 64-key
 *                          block of a head, and in the same pass V~: the block's
 *                          codes in the FA3 core's B-operand layout, 8192 bytes
 *                          a block, for the attention pipeline [SAGE-DEV-15]
 *   sage_pcode_kernel      FP8 codes of P~ F [SAGE-P-01]
 *   sage_prow_kernel       one thread a row: the row sum in column order [SAGE-P-02]
 *   sage_dq_*_kernel       the reading of stored Q/K codes [SAGE-Q-08] [SAGE-DEV-18]: the
 *                          scales in slot order (the first bad one decides), the products
 *                          for overflow when some scale can overflow one, then the values
 * (The call state, its status kernel and the scratch helpers are in
 * gpu/sage/sage_common.cuh, shared with gpu/sage/sage_ds.cu.)  Smoothing, Q/K
 * and V take `heads` heads that follow each other (head = grid y, or the
 * token's head in the grid-stride kernels): the sage_enqueue_* launchers, one
 * launch a kernel for all heads, are what the attention pipeline enqueues
 * [SAGE-DEV-09]; the one-call launchers are their one-head case.
 *
 * Errors: the host checks pointers, policy, parameters and shape in the
 * reference's order; NaN/Inf (KVQ_E_NONFINITE) and range (KVQ_E_PARAM) are found
 * on the device before any output is written (the writing kernels return at
 * once when the error word is set) [POL-NF-01].  KVQ_CUDA_DIRECT (Q/K only)
 * skips the separate check pass: the status is still the reference's, but on
 * an error status the outputs hold unspecified data.  V needs no check pass:
 * its maxima pass reads every input before anything is written.
 *
 * SPEC: [SAGE-SM-01..02] [SAGE-Q-01..07] [SAGE-P-01..02] [SAGE-V-01..04] [POL-NF-01]
 *       [SAGE-DEV-01..06] [SAGE-DEV-09] [SAGE-DEV-15] [SAGE-DEV-16] [SAGE-Q-08] [SAGE-DEV-18]
 */
#include <cuda_runtime.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kvq.h"
#include "kvq_sage.h"
#include "kvq_cuda.h"
#include "kvq_fp8.h"
#include "sage/sage_common.cuh"
#include "sage/sage_instr.cuh"

#define F32_MIN_NORMAL 0x1p-126f

#define CHECK_NONE   0u
#define CHECK_SMOOTH 1u      /* |x| <= KVQ_SAGE_SMOOTH_MAX */
#define CHECK_PROB   2u      /* 0 <= p <= 1 */

#define QK_THREADS 256u
#define QK_MAX_SLOTS (KVQ_SAGE_Q_SLOTS_PER_WARP * KVQ_SAGE_MAX_WARPS) /* 128 */
#define QK_CACHE 16u   /* float4 a thread kept in registers: blocks of b d <= 16384 */

/* Per-head strides of a batched Q/K launch (head = blockIdx.y): elements of
 * x, bytes of codes, scales; all 0 for one head. */
typedef struct sage_hstride {
    uint64_t x, codes, scale;
} sage_hstride;

/* ---- input checks -------------------------------------------------------- */

__global__ void __launch_bounds__(256)
sage_check_kernel(const float *__restrict__ x, sage_dev_state *st, uint64_t n, uint32_t what)
{
    uint32_t err = 0;
    const uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    for (uint64_t e = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; e < n; e += stride) {
        const float v = __ldg(x + e);
        if (!isfinite(v)) err |= ERR_NONFINITE;
        else if (what == CHECK_SMOOTH && fabsf(v) > KVQ_SAGE_SMOOTH_MAX) err |= ERR_RANGE;
        else if (what == CHECK_PROB && !(v >= 0.0f && v <= 1.0f)) err |= ERR_RANGE;
    }
    dev_publish(st, 0u, err);
}

/* ---- smoothing [SAGE-SM-01..02] -------------------------------------------- */

/* One thread a (head h, segment r, channel c) of heads x R x d; consecutive
 * threads consecutive channels.  Head h's N tokens start at h N d. */
__global__ void __launch_bounds__(128)
sage_mean_kernel(float *__restrict__ mean, const float *__restrict__ x, const sage_dev_state *st,
                 uint32_t N, uint32_t d, uint32_t seg, uint32_t R, uint64_t total)
{
    if (dev_failed(st)) return;
    const uint64_t tid = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (tid >= total) return;
    const uint64_t hr = tid / d, h = hr / R;
    const uint32_t r = (uint32_t)(hr % R), c = (uint32_t)(tid % d);
    const uint32_t t0 = r * seg, k = N - t0 < seg ? N - t0 : seg;
    const float *xh = x + h * N * d;
    float a = __ldg(xh + (uint64_t)t0 * d + c);                 /* from the first value */
#pragma unroll 32
    for (uint32_t j = 1; j < k; j++)                            /* loads ahead of the sum; its order kept */
        a = __fadd_rn(a, __ldg(xh + (uint64_t)(t0 + j) * d + c)); /* RN32 [SAGE-SM-01] */
    mean[tid] = __fdiv_rn(a, (float)k);                         /* RN32; k exact */
}

/* xs = x - mean over heads x N tokens: token t of the whole tensor is token
 * t % N of head t / N, whose mean row is (t / N) R + (t % N) / seg. */
__global__ void __launch_bounds__(256)
sage_sub_kernel(float *__restrict__ xs, const float *__restrict__ x, const float *__restrict__ mean,
                const sage_dev_state *st, uint64_t n, uint32_t d, uint32_t seg, uint32_t N, uint32_t R)
{
    if (dev_failed(st)) return;
    const uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    for (uint64_t e = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; e < n; e += stride) {
        const uint64_t t = e / d, h = t / N;
        const uint32_t c = (uint32_t)(e % d), tt = (uint32_t)(t % N);
        xs[e] = __fsub_rn(__ldg(x + e), __ldg(mean + (h * R + tt / seg) * d + c)); /* RN32 [SAGE-SM-02] */
    }
}


/* ---- smoothing, the stage kernels [SAGE-DEV-16] --------------------------------
 * The same pinned sequences as sage_mean_kernel and sage_sub_kernel, with the
 * loads scheduled for bandwidth: the mean's chains are the same (one lane a
 * channel, tokens ascending, from the first value, then the division), but a
 * CTA of 4 warps streams its segment's token tiles (SM_TT tokens x 32
 * channels) into shared memory by cp.async, up to SM_STAGES tiles in flight,
 * while warp 0 sums them in token order; with `fused` the other warps check
 * every value of the tile as sage_check_kernel would (NaN/Inf, |x| > 2^48), so
 * the smoothing reads its input twice instead of three times (the pipeline's
 * form: its mean is workspace, [SAGE-DEV-16]). */
#define SM_TT 64u           /* tokens a tile */
#define SM_STAGES 8u        /* tiles of the ring (7 in flight while one is summed) */
#define SM_STRIP 32u        /* channels a CTA (one lane each) */


/* CTA (blockIdx.x = r * (d / 32) + strip, blockIdx.y = head): the means of
 * channels strip*32 .. +31 of segment r of the head.  stages: tiles of the
 * dynamic shared memory (min(SM_STAGES, the segment's tiles) is enough). */
template <bool VEC, bool FUSED>
__global__ void __launch_bounds__(128)
sage_mean_stg_kernel(float *__restrict__ mean, const float *__restrict__ x, sage_dev_state *st,
                     uint32_t N, uint32_t d, uint32_t seg, uint32_t R, float *__restrict__ xsub)
{
    extern __shared__ float4 stg_smem4[];
    float *tile = (float *)stg_smem4;                      /* [SM_STAGES][SM_TT][SM_STRIP] */
    /* block-uniform: return when an earlier stage failed (the gate's mark, a bit
     * other than ERR_*); fused, an error this pass found goes on (NaN/Inf must
     * still be seen when another CTA found a range error) */
    __shared__ uint32_t sfailed;
    if (threadIdx.x == 0) {
        const uint32_t e = *(volatile const uint32_t *)&st->err;
        sfailed = (FUSED ? e & ~(ERR_NONFINITE | ERR_RANGE) : e) != 0u ? 1u : 0u;
    }
    __syncthreads();
    if (sfailed) return;
    const uint32_t strips = d / SM_STRIP;
    const uint32_t r = blockIdx.x / strips, c0 = (blockIdx.x % strips) * SM_STRIP;
    const uint64_t h = blockIdx.y;
    const uint32_t t0 = r * seg, k = N - t0 < seg ? N - t0 : seg;
    const float *xs = x + (h * N + t0) * (uint64_t)d + c0; /* token 0 of the segment, channel c0 */
    const uint32_t ntiles = (k + SM_TT - 1u) / SM_TT;
    const uint32_t tid = threadIdx.x, lane = tid & 31u, warp = tid >> 5;
    auto issue = [&](uint32_t i) {                         /* tile i into stage i % SM_STAGES */
        if (i < ntiles) {
            float *dst = tile + (i % SM_STAGES) * (SM_TT * SM_STRIP);
            if (VEC) {
#pragma unroll
                for (uint32_t q = tid; q < SM_TT * SM_STRIP / 4u; q += 128u) {
                    const uint32_t j = q / (SM_STRIP / 4u), c = (q % (SM_STRIP / 4u)) * 4u;
                    const uint32_t t = i * SM_TT + j;
                    const bool ok = t < k;
                    cp_async16(dst + j * SM_STRIP + c, xs + (uint64_t)(ok ? t : 0u) * d + c, ok);
                }
            } else {
                for (uint32_t q = tid; q < SM_TT * SM_STRIP; q += 128u) {
                    const uint32_t j = q / SM_STRIP, c = q % SM_STRIP;
                    const uint32_t t = i * SM_TT + j;
                    const bool ok = t < k;
                    cp_async4(dst + j * SM_STRIP + c, xs + (uint64_t)(ok ? t : 0u) * d + c, ok);
                }
            }
        }
        cp_commit();                                       /* one group a tile, empty ones too */
    };
#pragma unroll 1
    for (uint32_t i = 0; i + 1u < SM_STAGES; i++) issue(i);
    float a = 0.0f;
    uint32_t err = 0u;
#pragma unroll 1
    for (uint32_t i = 0; i < ntiles; i++) {
        cp_wait<SM_STAGES - 2u>();                         /* this thread's copies of tile i landed */
        __syncthreads();                                   /* everyone's; tile i - 1 consumed */
        issue(i + SM_STAGES - 1u);                         /* into the stage of tile i - 1 */
        const float *s = tile + (i % SM_STAGES) * (SM_TT * SM_STRIP);
        const uint32_t n = k - i * SM_TT < SM_TT ? k - i * SM_TT : SM_TT;
        if (warp == 0u) {
            uint32_t j = 0;
            if (i == 0u) a = s[lane], j = 1u;              /* from the first value [SAGE-SM-01] */
#if KVQ_SAGE_STG_PLANT
            /* planted: tokens 1 and 2 of the segment summed in swapped order */
            if (i == 0u && n >= 3u && (stg_plant & 1)) {
                a = __fadd_rn(a, s[2u * SM_STRIP + lane]);
                a = __fadd_rn(a, s[1u * SM_STRIP + lane]);
                j = 3u;
            }
#endif
            if (n == SM_TT && j == 0u) {
                /* a whole tile: its 64 values in registers first (the loads back to
                 * back), then the chain; the order is the same */
                float v[SM_TT];
#pragma unroll
                for (uint32_t q = 0; q < SM_TT; q++) v[q] = s[q * SM_STRIP + lane];
#pragma unroll
                for (uint32_t q = 0; q < SM_TT; q++) a = __fadd_rn(a, v[q]);   /* RN32, tokens ascending */
            } else {
#pragma unroll 8
                for (; j < n; j++) a = __fadd_rn(a, s[j * SM_STRIP + lane]);   /* RN32, tokens ascending */
            }
        } else if (FUSED) {
            /* the tile's n x 32 values as float4 (n x 8 of them), 96 threads */
            const float4 *s4 = (const float4 *)s;
            uint32_t e = tid - 32u;
#pragma unroll 2
            for (; e < n * (SM_STRIP / 4u); e += 96u) {
                const float4 v = s4[e];
                const float mx = fmaxf(fmaxf(fabsf(v.x), fabsf(v.y)), fmaxf(fabsf(v.z), fabsf(v.w)));
                if (!(isfinite(v.x) && isfinite(v.y) && isfinite(v.z) && isfinite(v.w))) err |= ERR_NONFINITE;
                else if (mx > KVQ_SAGE_SMOOTH_MAX) err |= ERR_RANGE;
            }
        }
    }
    if (FUSED) dev_publish(st, 0u, err);                   /* every lane of every warp calls it */
    __shared__ float smean[SM_STRIP];
    if (warp == 0u) {
        const float m = __fdiv_rn(a, (float)k);            /* RN32; k exact */
        mean[(h * R + r) * (uint64_t)d + c0 + lane] = m;
        smean[lane] = m;
    }
    if (xsub == NULL) return;                              /* block-uniform */
    /* xsub: the segment is resident (at most SM_STAGES tiles: tile i stays in
     * stage i), so the subtraction [SAGE-SM-02] reads it from shared memory */
    __syncthreads();
    float *ys = xsub + (h * N + t0) * (uint64_t)d + c0;
    if (VEC) {
        for (uint32_t q = tid; q < k * (SM_STRIP / 4u); q += 128u) {
            const uint32_t j = q / (SM_STRIP / 4u), c = (q % (SM_STRIP / 4u)) * 4u;
            const float4 v = *(const float4 *)(tile + j * SM_STRIP + c);   /* tile j / SM_TT, row j % SM_TT */
            float4 o;
            o.x = __fsub_rn(v.x, smean[c]), o.y = __fsub_rn(v.y, smean[c + 1u]);   /* RN32 [SAGE-SM-02] */
            o.z = __fsub_rn(v.z, smean[c + 2u]), o.w = __fsub_rn(v.w, smean[c + 3u]);
            *(float4 *)(ys + (uint64_t)j * d + c) = o;
        }
    } else {
        for (uint32_t q = tid; q < k * SM_STRIP; q += 128u) {
            const uint32_t j = q / SM_STRIP, c = q % SM_STRIP;
            ys[(uint64_t)j * d + c] = __fsub_rn(tile[j * SM_STRIP + c], smean[c]);   /* RN32 [SAGE-SM-02] */
        }
    }
}

/* xs = x - mean, D / 4 float4 a token: CTA (blockIdx.x, head blockIdx.y)
 * walks the head's float4s from blockIdx.x * 256 + threadIdx.x by the grid's
 * width; the token's mean row is one 32-bit division a float4. */
template <uint32_t D>
__global__ void __launch_bounds__(256)
sage_sub_stg_kernel(float *__restrict__ xs, const float *__restrict__ x, const float *__restrict__ mean,
                    const sage_dev_state *st, uint32_t N, uint32_t seg, uint32_t R)
{
    if (dev_failed(st)) return;
    const uint64_t h = blockIdx.y;
    const float4 *xh = (const float4 *)(x + h * N * (uint64_t)D);
    float4 *yh = (float4 *)(xs + h * N * (uint64_t)D);
    const float4 *mh = (const float4 *)(mean + h * R * (uint64_t)D);
    const uint32_t n4 = N * (D / 4u);                      /* < 2^31: N <= 2^24 */
    for (uint32_t e = blockIdx.x * 256u + threadIdx.x; e < n4; e += gridDim.x * 256u) {
        const uint32_t t = e / (D / 4u), c4 = e % (D / 4u);
        const float4 v = __ldg(xh + e), m = __ldg(mh + (t / seg) * (D / 4u) + c4);
        float4 o;
        o.x = __fsub_rn(v.x, m.x), o.y = __fsub_rn(v.y, m.y);   /* RN32 [SAGE-SM-02] */
        o.z = __fsub_rn(v.z, m.z), o.w = __fsub_rn(v.w, m.w);
        yh[e] = o;
    }
}

/* ---- Q/K [SAGE-Q-01..06] ----------------------------------------------------- */

/* Round half away from zero of a finite q (ref's round_nonneg): a - floor(a)
 * is exact, so the tie test is exact [POL-TIE-02]. */
__device__ __forceinline__ float dev_round_away(float q)
{
    const float a = fabsf(q);
    const float fl = floorf(a);
    const float dd = __fsub_rn(a, fl);          /* exact */
    return copysignf(dd >= 0.5f ? __fadd_rn(fl, 1.0f) : fl, q);
}

/* The stored scale of a slot of maximum m [SAGE-Q-02] [SAGE-Q-05]. */
__device__ __forceinline__ float dev_qk_scale(float m, uint32_t bits, bool pub)
{
    const float s = __fdiv_rn(m, (float)kvq_sage_cmax(bits));  /* RN32, a division */
    if (pub) return __fadd_rn(s, KVQ_SAGE_PUBLIC_EPS);           /* RN32 [SAGE-Q-05] */
    return s < F32_MIN_NORMAL ? 0.0f : s;                      /* [POL-ZR-01] */
}

/* The code of x against stored scale s [SAGE-Q-03..05]: one division whatever
 * the rounding (the quotient of a zero scale is discarded), rint as one
 * conversion (__float2int_rn rounds half to even like rintf; |q| < 2^31). */
__device__ __forceinline__ int32_t dev_qk_code(float x, float s, int32_t cmax, bool pub, bool away)
{
    const float q = __fdiv_rn(x, s);                           /* RN32; |q| <= cmax (1 + 2^-23) */
    int32_t k;
    if (pub) k = (int32_t)(q >= 0.0f ? __fadd_rn(q, 0.5f) : __fsub_rn(q, 0.5f)); /* [SAGE-Q-05] */
    else if (away) k = (int32_t)dev_round_away(q);             /* [POL-TIE-02] */
    else k = __float2int_rn(q);                                /* [POL-TIE-01] */
    k = k < -cmax ? -cmax : k > cmax ? cmax : k;
    return s == 0.0f ? 0 : k;                                  /* [SAGE-Q-04] */
}

/* One step of the slot maxima: the 4 elements i .. i+3 (one token) of the
 * block starting at element e0, or none when i >= ne; every lane of the warp
 * calls it (warp-uniform trip counts).  Returns the 4 values read. */
__device__ __forceinline__ float4 dev_load4(const float *__restrict__ x, uint64_t e0, uint64_t i,
                                            uint64_t ne, int vec)
{
    float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (i >= ne) {
    } else if (vec) {
        v = __ldg((const float4 *)(x + e0 + i));
    } else {
        v.x = __ldg(x + e0 + i);
        v.y = __ldg(x + e0 + i + 1u);
        v.z = __ldg(x + e0 + i + 2u);
        v.w = __ldg(x + e0 + i + 3u);
    }
    return v;
}

template <uint32_t D>
__device__ __forceinline__ void dev_slot_max_step(float4 v, uint64_t i, uint64_t ne,
                                                  const kvq_sage_qk &qk, uint32_t n0,
                                                  uint64_t slot0, uint32_t *smax, uint32_t &err)
{
    if (!isfinite(v.x) || !isfinite(v.y) || !isfinite(v.z) || !isfinite(v.w)) err |= ERR_NONFINITE;
    uint32_t m = max(max(__float_as_uint(fabsf(v.x)), __float_as_uint(fabsf(v.y))),
                     max(__float_as_uint(fabsf(v.z)), __float_as_uint(fabsf(v.w))));
    /* the D/4 lanes of one token (aligned lane groups: blockDim and D are
     * multiples of 32 and 64) share a slot: reduce among them first */
#pragma unroll
    for (uint32_t o = 1u; o < D / 4u; o <<= 1) m = max(m, __shfl_xor_sync(0xFFFFFFFFu, m, o));
    if (i < ne && m != 0u && (threadIdx.x % (D / 4u)) == 0u) {
        const uint32_t n = n0 + (uint32_t)(i / D);
        atomicMax(&smax[kvq_sage_scale_slot(&qk, n) - slot0], m);
    }
}

/* Codes of the NV elements v (NV = 4 or 8, element i of the block a multiple of
 * NV, one token) against the slot scales ssc; packed by the layout helpers. */
template <uint32_t BITS, uint32_t D, uint32_t NV>
__device__ __forceinline__ void dev_qk_store(uint8_t *__restrict__ codes, const float *v, uint64_t e0,
                                             uint64_t i, const kvq_sage_qk &qk, uint32_t n0,
                                             uint64_t slot0, const float *ssc, int32_t cmax,
                                             bool pub, bool away, int vec)
{
    const uint32_t n = n0 + (uint32_t)(i / D);
    const float s = ssc[kvq_sage_scale_slot(&qk, n) - slot0];
    uint8_t pk[8] = {0, 0, 0, 0, 0, 0, 0, 0};
#pragma unroll
    for (uint32_t j = 0; j < NV; j++)                          /* element j of a byte-aligned run */
        kvq_sage_pack_code(pk, j, BITS, dev_qk_code(v[j], s, cmax, pub, away));
    uint8_t *dst = codes + (e0 + i) * BITS / 8u;
    constexpr uint32_t NB = NV * BITS / 8u;                    /* 2, 4 or 8 bytes */
    if (!vec) {
#pragma unroll
        for (uint32_t j = 0; j < NB; j++) dst[j] = pk[j];
        return;
    }
    const uint32_t lo = (uint32_t)pk[0] | (uint32_t)pk[1] << 8 | (uint32_t)pk[2] << 16 |
                        (uint32_t)pk[3] << 24;
    if (NB == 2u) {
        *(uint16_t *)dst = (uint16_t)lo;
    } else if (NB == 4u) {
        *(uint32_t *)dst = lo;
    } else {
        uint2 w;
        w.x = lo;
        w.y = (uint32_t)pk[4] | (uint32_t)pk[5] << 8 | (uint32_t)pk[6] << 16 | (uint32_t)pk[7] << 24;
        *(uint2 *)dst = w;
    }
}

/* One thread block a quantization block (b tokens from n0 = blockIdx.x * b).
 * BITS and D are template constants so that the layout helpers' divisions by
 * powers of two (kvq_pow2_small, the element's byte and shift) fold into shifts.
 * C > 0 (blocks of b d <= 4 C QK_THREADS elements): the block's values stay in
 * registers between the maxima and the codes, so x is read once from memory;
 * C == 0: the codes pass reads the block again (from L2 when it is still there). */
template <uint32_t BITS, uint32_t D, uint32_t C>
__global__ void __launch_bounds__(QK_THREADS)
sage_qk_kernel(uint8_t *__restrict__ codes, float *__restrict__ scale, const float *__restrict__ x,
               sage_dev_state *st, kvq_sage_shape sh, kvq_sage_qk qk, uint32_t ties, int vec, sage_hstride hs)
{
    x += blockIdx.y * hs.x, codes += blockIdx.y * hs.codes, scale += blockIdx.y * hs.scale;  /* the head */
    __shared__ uint32_t smax[QK_MAX_SLOTS];
    __shared__ float ssc[QK_MAX_SLOTS];
    __shared__ uint32_t sfailed;
    cudaTriggerProgrammaticLaunchCompletion();                   /* the status kernel may be placed [SAGE-DEV-20] */
    /* One read a block: under KVQ_CUDA_DIRECT another block may set err meanwhile. */
    if (threadIdx.x == 0) sfailed = dev_failed(st) ? 1u : 0u;
    __syncthreads();
    if (sfailed) return;                                        /* block-uniform */
    const uint32_t b = qk.block, spb = kvq_sage_slots_per_block(&qk);
    qk.bits = BITS;
    const uint32_t n0 = blockIdx.x * b;
    const uint32_t nt = sh.tokens - n0 < b ? sh.tokens - n0 : b; /* partial tile [SAGE-L-03] */
    const uint64_t slot0 = (uint64_t)blockIdx.x * spb;
    const uint64_t e0 = (uint64_t)n0 * D, ne = (uint64_t)nt * D;
    const bool pub = qk.rounding == KVQ_SAGE_ROUND_PUBLIC;
    const bool away = ties == KVQ_TIES_AWAY;
    const int32_t cmax = (int32_t)kvq_sage_cmax(BITS);
    const uint64_t wbase = (uint64_t)(threadIdx.x & ~31u) * 4u, lane4 = (uint64_t)(threadIdx.x & 31u) * 4u;
    uint32_t err = 0, f = 0;
    float4 cache[C > 0 ? C : 1];
    for (uint32_t i = threadIdx.x; i < spb; i += blockDim.x) smax[i] = 0u;
    __syncthreads();
    /* 1. slot maxima [SAGE-Q-01]: 4 elements (one token) a step */
    if (C > 0) {
#pragma unroll
        for (uint32_t it = 0; it < (C > 0 ? C : 1); it++)   /* every load in flight first */
            cache[it] = dev_load4(x, e0, (uint64_t)it * QK_THREADS * 4u + wbase + lane4, ne, vec);
#pragma unroll
        for (uint32_t it = 0; it < (C > 0 ? C : 1); it++) {
            const uint64_t wb = (uint64_t)it * QK_THREADS * 4u + wbase;
            if (wb < ne) dev_slot_max_step<D>(cache[it], wb + lane4, ne, qk, n0, slot0, smax, err);
        }
    } else {
        for (uint64_t wb = wbase; wb < ne; wb += (uint64_t)QK_THREADS * 4u)
            dev_slot_max_step<D>(dev_load4(x, e0, wb + lane4, ne, vec), wb + lane4, ne, qk, n0,
                                 slot0, smax, err);
    }
    if (err) atomicOr(&st->err, err);
    __syncthreads();
    /* 2. the block's scales [SAGE-Q-02] [SAGE-Q-05] */
    for (uint32_t i = threadIdx.x; i < spb; i += blockDim.x) {
        const float s = dev_qk_scale(__uint_as_float(smax[i]), BITS, pub);
        if (s == 0.0f) f |= KVQ_FLAG_ZERO_SCALE;               /* [SAGE-Q-04] */
        ssc[i] = s;
        scale[slot0 + i] = s;
    }
    __syncthreads();
    /* 3. codes [SAGE-Q-03..06] */
    if (C > 0) {                                                /* 4 elements a step, from registers */
#pragma unroll
        for (uint32_t it = 0; it < (C > 0 ? C : 1); it++) {
            const uint64_t i = (uint64_t)it * QK_THREADS * 4u + (uint64_t)threadIdx.x * 4u;
            if (i < ne) {
                const float v[4] = {cache[it].x, cache[it].y, cache[it].z, cache[it].w};
                dev_qk_store<BITS, D, 4u>(codes, v, e0, i, qk, n0, slot0, ssc, cmax, pub, away, vec);
            }
        }
    } else {                                                    /* 8 elements a step, read again */
        for (uint64_t i = (uint64_t)threadIdx.x * 8u; i < ne; i += (uint64_t)QK_THREADS * 8u) {
            float v[8];
            if (vec) {
                const float4 a = __ldg((const float4 *)(x + e0 + i));
                const float4 c = __ldg((const float4 *)(x + e0 + i + 4u));
                v[0] = a.x; v[1] = a.y; v[2] = a.z; v[3] = a.w;
                v[4] = c.x; v[5] = c.y; v[6] = c.z; v[7] = c.w;
            } else {
#pragma unroll
                for (uint32_t j = 0; j < 8u; j++) v[j] = __ldg(x + e0 + i + j);
            }
            dev_qk_store<BITS, D, 8u>(codes, v, e0, i, qk, n0, slot0, ssc, cmax, pub, away, vec);
        }
    }
    dev_publish(st, f, 0u);
}

/* ---- Q/K, the pinned blocks [SAGE-Q-01..06] [SAGE-DEV-04] ------------------
 * The paper's map at the public code's block sizes (Q: b_q = 128, c_w = 4;
 * K: b_k = 64), every granularity, as compile-time constants, so that a token's
 * slot folds into shifts and masks.  One thread block a quantization block of
 * B tokens, FT = B D / 32 threads, 8 float4 a thread held in registers (one
 * read of x).  Thread t holds elements it FT 4 + 4 t .. + 3 for it = 0..7: a
 * warp step covers one token (D = 128) or two (D = 64), so the D/4 lanes of a
 * token group are aligned.  Slot maxima: a lane keeps the running maximum of
 * |x| (as the unsigned encoding, which orders finite magnitudes and puts
 * NaN/Inf above them) while consecutive steps stay in one slot, then reduces
 * it over its token group and OR-s it into shared memory with atomicMax
 * (idempotent, so an extra flush is harmless).  Codes: one scale read a step.
 * Results equal sage_qk_kernel's: the same maxima (exact), the same scale and
 * code operations (dev_qk_scale, dev_qk_code), the same packing helper. */
#define FAST_STEPS 8u
#ifndef KVQ_SAGE_BASELINE
#define KVQ_SAGE_BASELINE 0  /* 1: the Q/K codes of before, a division each (benchmarks only) */
#endif
#ifndef KVQ_SAGE_HOTCOUNT
#define KVQ_SAGE_HOTCOUNT 0  /* 1: the rare blocks compiled out, for gpu/kivi/sass-count.sh only */
#endif
#ifndef KVQ_SAGE_QK2
#define KVQ_SAGE_QK2 1       /* 0: the maxima and packing of 4e49489 (benchmarks only) [SAGE-DEV-14] */
#endif
#ifndef KVQ_SAGE_SMEM
#define KVQ_SAGE_SMEM KVQ_SAGE_QK2 /* 1: the Q/K block's input in shared memory [SAGE-DEV-14] */
#endif
#ifndef KVQ_SAGE_BFLY
#define KVQ_SAGE_BFLY 0      /* 1: Q thread-granularity maxima by a reduce-scatter [SAGE-DEV-14] */
#endif
#ifndef KVQ_SAGE_PLANT
#define KVQ_SAGE_PLANT 0     /* 1..5: a planted bug a device test must catch (gpu/sage/rules.mk) */
#endif
#define MAGIC_RND 0x1.8p23f  /* 1.5 * 2^23 */
#if KVQ_SAGE_PLANT == 1
#define SAGE_NEAR_HALF 0.5f  /* planted bug: near ties not redone */
#else
#define SAGE_NEAR_HALF 0x1.ffcp-2f /* 1/2 - 2^-12 */
#endif
#if KVQ_SAGE_BASELINE
/* ---- the pinned-block Q/K kernel of before (benchmarks only): a division a value ---- */
#define FAST_K_MIN_BLOCKS 5  /* K, D = 128: at most 51 registers, 5 thread blocks an SM */

template <uint32_t ROLE, uint32_t GRAN, uint32_t D>
__device__ __forceinline__ uint32_t dev_fast_slot(uint32_t n)  /* n within the block */
{
    kvq_sage_qk q;
    q.role = ROLE;
    q.bits = 8u;
    q.gran = GRAN;
    q.block = ROLE == KVQ_SAGE_ROLE_Q ? 128u : 64u;
    q.warps = ROLE == KVQ_SAGE_ROLE_Q ? 4u : 1u;
    q.rounding = KVQ_SAGE_ROUND_PAPER;
    return (uint32_t)kvq_sage_scale_slot(&q, n);     /* constants: shifts and masks */
}

template <uint32_t ROLE, uint32_t GRAN, uint32_t BITS, uint32_t D>
__global__ void __launch_bounds__((ROLE == KVQ_SAGE_ROLE_Q ? 128u : 64u) * D / 32u, ROLE == KVQ_SAGE_ROLE_K && D == 128u ? FAST_K_MIN_BLOCKS : 1)
sage_qk_fast_kernel(uint8_t *__restrict__ codes, float *__restrict__ scale, const float *__restrict__ x,
                    sage_dev_state *st, uint32_t tokens, uint32_t rounding, uint32_t ties, int vec, sage_hstride hs)
{
    x += blockIdx.y * hs.x, codes += blockIdx.y * hs.codes, scale += blockIdx.y * hs.scale;  /* the head */
    constexpr uint32_t B = ROLE == KVQ_SAGE_ROLE_Q ? 128u : 64u;
    constexpr uint32_t FT = B * D / 32u;                         /* threads: 8 float4 each */
    constexpr uint32_t TG = D / 4u;                              /* lanes of one token */
    constexpr uint32_t SPB = ROLE == KVQ_SAGE_ROLE_Q
                           ? (GRAN == KVQ_SAGE_GRAN_THREAD ? 32u : GRAN == KVQ_SAGE_GRAN_WARP ? 4u : 1u)
                           : (GRAN == KVQ_SAGE_GRAN_THREAD ? 4u : 1u);
    __shared__ uint32_t smax[SPB];
    __shared__ float ssc[SPB];
    __shared__ uint32_t sfailed;
    if (threadIdx.x == 0) sfailed = dev_failed(st) ? 1u : 0u;
    if (threadIdx.x < SPB) smax[threadIdx.x] = 0u;
    __syncthreads();
    if (sfailed) return;                                         /* block-uniform */
    const uint32_t n0 = blockIdx.x * B;
    const uint32_t nt = KVQ_SAGE_HOTCOUNT || tokens - n0 >= B ? B : tokens - n0; /* partial tile [SAGE-L-03] */
    const uint64_t e0 = (uint64_t)n0 * D;
    const uint32_t ne = nt * D;
    if (KVQ_SAGE_HOTCOUNT) vec = 1;                              /* the counted path: 16-byte rows */
    const uint64_t slot0 = (uint64_t)blockIdx.x * SPB;
    const uint32_t t4 = threadIdx.x * 4u;
    float4 v[FAST_STEPS];
#pragma unroll
    for (uint32_t it = 0; it < FAST_STEPS; it++)                  /* every load in flight first */
        v[it] = dev_load4(x, e0, (uint64_t)(it * FT * 4u + t4), ne, vec);
    /* 1. slot maxima [SAGE-Q-01] */
    uint32_t run = 0u, err = 0u;
#pragma unroll
    for (uint32_t it = 0; it < FAST_STEPS; it++) {
        const uint32_t i = it * FT * 4u + t4;
        if (i < ne)
            run = max(run, max(max(__float_as_uint(v[it].x) & 0x7FFFFFFFu, __float_as_uint(v[it].y) & 0x7FFFFFFFu),
                               max(__float_as_uint(v[it].z) & 0x7FFFFFFFu, __float_as_uint(v[it].w) & 0x7FFFFFFFu)));
        const uint32_t slot = dev_fast_slot<ROLE, GRAN, D>(i / D);
        const bool last = it + 1u == FAST_STEPS;
        if (last || __any_sync(0xFFFFFFFFu, dev_fast_slot<ROLE, GRAN, D>((i + FT * 4u) / D) != slot)) {
#pragma unroll
            for (uint32_t o = 1u; o < TG; o <<= 1) run = max(run, __shfl_xor_sync(0xFFFFFFFFu, run, o));
            if (threadIdx.x % TG == 0u && run != 0u) {
                if (run >= 0x7F800000u) err |= ERR_NONFINITE;       /* NaN or Inf [POL-NF-01] */
                atomicMax(&smax[slot], run);
            }
            run = 0u;
        }
    }
    if (err) atomicOr(&st->err, err);
    __syncthreads();
    /* 2. the block's scales [SAGE-Q-02] [SAGE-Q-05] */
    const bool pub = rounding == KVQ_SAGE_ROUND_PUBLIC;
    uint32_t f = 0u;
    if (threadIdx.x < SPB) {
        const float s = dev_qk_scale(__uint_as_float(smax[threadIdx.x]), BITS, pub);
        if (s == 0.0f) f |= KVQ_FLAG_ZERO_SCALE;                  /* [SAGE-Q-04] */
        ssc[threadIdx.x] = s;
        scale[slot0 + threadIdx.x] = s;
    }
    __syncthreads();
    /* 3. codes [SAGE-Q-03..06] */
    const bool away = ties == KVQ_TIES_AWAY;
    constexpr int32_t CMAX = BITS == 4u ? 7 : 127;
#pragma unroll
    for (uint32_t it = 0; it < FAST_STEPS; it++) {
        const uint32_t i = it * FT * 4u + t4;
        if (i >= ne) break;                                       /* ne and i multiples of 4 */
        const float s = ssc[dev_fast_slot<ROLE, GRAN, D>(i / D)];
        uint8_t pk[2] = {0, 0};
        const float a[4] = {v[it].x, v[it].y, v[it].z, v[it].w};
        uint32_t word = 0u;
#pragma unroll
        for (uint32_t j = 0; j < 4u; j++) {
            const int32_t k = dev_qk_code(a[j], s, CMAX, pub, away);
            if (BITS == 8u) {
                word |= kvq_sage_code_field(k, 8u) << (8u * j);
            } else {
                kvq_sage_pack_code(pk, j, 4u, k);                 /* [LAY-PACK-01] nibble order */
            }
        }
        uint8_t *dst = codes + (e0 + i) * BITS / 8u;
        if (BITS == 4u) word = (uint32_t)pk[0] | (uint32_t)pk[1] << 8;
        if (vec) {
            if (BITS == 8u) *(uint32_t *)dst = word;
            else *(uint16_t *)dst = (uint16_t)word;
        } else {
#pragma unroll
            for (uint32_t j = 0; j < BITS / 2u; j++) dst[j] = (uint8_t)(word >> (8u * j));
        }
    }
    dev_publish(st, f, 0u);
}

#else
#if KVQ_SAGE_SMEM
#define FAST_K_MIN_BLOCKS 6  /* K, D = 128: the block's input in shared memory (32 KiB), at most
                              * 40 registers, 6 thread blocks an SM [SAGE-DEV-14] */
#else
#define FAST_K_MIN_BLOCKS 4  /* K, D = 128: at most 64 registers, 4 thread blocks an SM */
#endif
#if KVQ_SAGE_SMEM == 2
#define FAST_Q_MIN_BLOCKS 3  /* Q, D = 128: 64 KiB, at most 40 registers, 3 blocks an SM */
#else
#define FAST_Q_MIN_BLOCKS 2  /* Q, D = 128 (512 threads): at most 64 registers, 2 blocks an SM
                              * (at 70 registers one block: 16 warps an SM, its reads exposed) */
#endif
/* The block's input in shared memory (KVQ_SAGE_SMEM 1: K only, measured faster there and
 * slower for Q; 2: both) [SAGE-DEV-14] */
#define SAGE_SMEM_ROLE(ROLE) (KVQ_SAGE_SMEM == 2 || (KVQ_SAGE_SMEM == 1 && (ROLE) == KVQ_SAGE_ROLE_K))

template <uint32_t ROLE, uint32_t GRAN, uint32_t D>
__device__ __forceinline__ uint32_t dev_fast_slot(uint32_t n)  /* n within the block */
{
    kvq_sage_qk q;
    q.role = ROLE;
    q.bits = 8u;
    q.gran = GRAN;
    q.block = ROLE == KVQ_SAGE_ROLE_Q ? 128u : 64u;
    q.warps = ROLE == KVQ_SAGE_ROLE_Q ? 4u : 1u;
    q.rounding = KVQ_SAGE_ROUND_PAPER;
    return (uint32_t)kvq_sage_scale_slot(&q, n);     /* constants: shifts and masks */
}

template <uint32_t ROLE, uint32_t GRAN, uint32_t BITS, uint32_t D>
__global__ void __launch_bounds__((ROLE == KVQ_SAGE_ROLE_Q ? 128u : 64u) * D / 32u,
                                  D == 128u ? (ROLE == KVQ_SAGE_ROLE_K ? FAST_K_MIN_BLOCKS : FAST_Q_MIN_BLOCKS) : 1)
sage_qk_fast_kernel(uint8_t *__restrict__ codes, float *__restrict__ scale, const float *__restrict__ x,
                    sage_dev_state *st, uint32_t tokens, uint32_t rounding, uint32_t ties, int vec, sage_hstride hs)
{
    x += blockIdx.y * hs.x, codes += blockIdx.y * hs.codes, scale += blockIdx.y * hs.scale;  /* the head */
    constexpr uint32_t B = ROLE == KVQ_SAGE_ROLE_Q ? 128u : 64u;
    constexpr uint32_t FT = B * D / 32u;                         /* threads: 8 float4 each */
    constexpr uint32_t TG = D / 4u;                              /* lanes of one token */
    constexpr uint32_t SPB = ROLE == KVQ_SAGE_ROLE_Q
                           ? (GRAN == KVQ_SAGE_GRAN_THREAD ? 32u : GRAN == KVQ_SAGE_GRAN_WARP ? 4u : 1u)
                           : (GRAN == KVQ_SAGE_GRAN_THREAD ? 4u : 1u);
    __shared__ uint32_t smax[SPB];
    __shared__ float2 ssc[SPB];                                  /* scale, RN(1/scale) or 0 */
    __shared__ uint32_t sfailed;
    cudaTriggerProgrammaticLaunchCompletion();                   /* the status kernel may be placed [SAGE-DEV-20] */
    if (threadIdx.x == 0) sfailed = dev_failed(st) ? 1u : 0u;
    if (threadIdx.x < SPB) smax[threadIdx.x] = 0u;
    __syncthreads();
    if (sfailed) return;                                         /* block-uniform */
    const uint32_t n0 = blockIdx.x * B;
    const uint32_t nt = KVQ_SAGE_HOTCOUNT || tokens - n0 >= B ? B : tokens - n0; /* partial tile [SAGE-L-03] */
    const uint64_t e0 = (uint64_t)n0 * D;
    const uint32_t ne = nt * D;
    if (KVQ_SAGE_HOTCOUNT) vec = 1;                              /* the counted path: 16-byte rows */
    const uint64_t slot0 = (uint64_t)blockIdx.x * SPB;
    const uint32_t t4 = threadIdx.x * 4u;
    /* [SAGE-DEV-14]: with SM, the block's input in shared memory, not registers (each
     * thread's own slots: step it at it * FT + thread, so no barrier is needed to read
     * them), brought by cp.async: every load in flight first, no register held for it */
    constexpr bool SM = SAGE_SMEM_ROLE(ROLE);
    extern __shared__ float4 sage_tile[];
    float4 v[FAST_STEPS];
    if (SM) {
#pragma unroll
        for (uint32_t it = 0; it < FAST_STEPS; it++) {
            const uint32_t i = it * FT * 4u + t4;
            float4 *dst = &sage_tile[it * FT + threadIdx.x];
            if (i < ne) {
                if (vec) {
                    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;"
                                 ::"r"((uint32_t)__cvta_generic_to_shared(dst)), "l"(x + e0 + i) : "memory");
                } else {
                    *dst = dev_load4(x, e0, (uint64_t)i, ne, vec);
                }
            }
        }
        asm volatile("cp.async.wait_all;" ::: "memory");
    } else {
#pragma unroll
        for (uint32_t it = 0; it < FAST_STEPS; it++)              /* every load in flight first */
            v[it] = dev_load4(x, e0, (uint64_t)(it * FT * 4u + t4), ne, vec);
    }
#define SAGE_V(it) (SM ? sage_tile[(it) * FT + threadIdx.x] : v[it])
    /* 1. slot maxima [SAGE-Q-01] */
    uint32_t run = 0u, err = 0u;
    /* [SAGE-DEV-14] (KVQ_SAGE_BFLY): Q at thread granularity, d = 128: a lane's token at
     * step it is it * 16 + warp, its slot (it / 2) * 8 + warp % 8, the same for all 32
     * lanes of the warp: four slots a lane, two steps each.  Their four partial maxima
     * meet over the warp by a reduce-scatter (exchange two across lanes 16 apart, one
     * across 8, then three shuffles), 6 shuffles instead of 4 x 5; lane 8s + 0 then holds
     * slot s's maximum over the warp (s = lane bits 4, 3). */
    constexpr bool BFLY = KVQ_SAGE_BFLY && KVQ_SAGE_QK2 && ROLE == KVQ_SAGE_ROLE_Q
                          && GRAN == KVQ_SAGE_GRAN_THREAD && D == 128u && FAST_STEPS == 8u;
    if (BFLY) {
        float r[4];
#pragma unroll
        for (uint32_t sl = 0; sl < 4u; sl++) {
            r[sl] = 0.0f;
#pragma unroll
            for (uint32_t h = 0; h < 2u; h++) {
                const uint32_t it = 2u * sl + h, i = it * FT * 4u + t4;
                if (i < ne) {
                    const float4 vv = SAGE_V(it);
                    r[sl] = fmaxf(r[sl], fmaxf(fmaxf(fabsf(vv.x), fabsf(vv.y)),
                                               fmaxf(fabsf(vv.z), fabsf(vv.w))));
                }
            }
        }
        const uint32_t lane = threadIdx.x & 31u;
        const bool b4 = (lane & 16u) != 0u, b3 = (lane & 8u) != 0u;
        const float k0 = fmaxf(b4 ? r[2] : r[0], __shfl_xor_sync(0xFFFFFFFFu, b4 ? r[0] : r[2], 16));
        const float k1 = fmaxf(b4 ? r[3] : r[1], __shfl_xor_sync(0xFFFFFFFFu, b4 ? r[1] : r[3], 16));
        float kk = fmaxf(b3 ? k1 : k0, __shfl_xor_sync(0xFFFFFFFFu, b3 ? k0 : k1, 8));
        kk = fmaxf(kk, __shfl_xor_sync(0xFFFFFFFFu, kk, 4));
        kk = fmaxf(kk, __shfl_xor_sync(0xFFFFFFFFu, kk, 2));
        kk = fmaxf(kk, __shfl_xor_sync(0xFFFFFFFFu, kk, 1));
        const uint32_t m = __float_as_uint(kk);
        if ((lane & 7u) == 0u && m != 0u) {
            if (m >= 0x7F800000u) err |= ERR_NONFINITE;               /* Inf [POL-NF-01] */
            atomicMax(&smax[(lane >> 3) * 8u + (threadIdx.x >> 5) % 8u], m);
        }
    }
#pragma unroll
    for (uint32_t it = BFLY ? FAST_STEPS : 0u; it < FAST_STEPS; it++) { /* none with BFLY */
        const uint32_t i = it * FT * 4u + t4;
#if KVQ_SAGE_QK2
        /* [SAGE-DEV-14]: fmaxf of |x| (one FMNMX a value, |.| an operand modifier) orders
         * finite and infinite magnitudes as their encodings do; it passes over a NaN, which
         * the codes' tie test then finds (its estimate is NaN) */
        if (i < ne) {
            const float4 vv = SAGE_V(it);
            run = __float_as_uint(fmaxf(__uint_as_float(run),
                                        fmaxf(fmaxf(fabsf(vv.x), fabsf(vv.y)),
                                              fmaxf(fabsf(vv.z), fabsf(vv.w)))));
        }
#else
        if (i < ne) {
            const float4 vv = SAGE_V(it);
            run = max(run, max(max(__float_as_uint(vv.x) & 0x7FFFFFFFu, __float_as_uint(vv.y) & 0x7FFFFFFFu),
                               max(__float_as_uint(vv.z) & 0x7FFFFFFFu, __float_as_uint(vv.w) & 0x7FFFFFFFu)));
        }
#endif
        const uint32_t slot = dev_fast_slot<ROLE, GRAN, D>(i / D);
        const bool last = it + 1u == FAST_STEPS;
        if (last || __any_sync(0xFFFFFFFFu, dev_fast_slot<ROLE, GRAN, D>((i + FT * 4u) / D) != slot)) {
#pragma unroll
            for (uint32_t o = 1u; o < TG; o <<= 1) run = max(run, __shfl_xor_sync(0xFFFFFFFFu, run, o));
            if (threadIdx.x % TG == 0u && run != 0u) {
                if (run >= 0x7F800000u) err |= ERR_NONFINITE;       /* NaN or Inf [POL-NF-01] */
                atomicMax(&smax[slot], run);
            }
            run = 0u;
        }
    }
    if (err) atomicOr(&st->err, err);
    __syncthreads();
    /* 2. the block's scales [SAGE-Q-02] [SAGE-Q-05] */
    const bool pub = rounding == KVQ_SAGE_ROUND_PUBLIC;
    uint32_t f = 0u;
    if (threadIdx.x < SPB) {
        const float s = dev_qk_scale(__uint_as_float(smax[threadIdx.x]), BITS, pub);
        if (s == 0.0f) f |= KVQ_FLAG_ZERO_SCALE;                  /* [SAGE-Q-04] */
        ssc[threadIdx.x] = make_float2(s, s != 0.0f ? __frcp_rn(s) : 0.0f);
        scale[slot0 + threadIdx.x] = s;
    }
    __syncthreads();
    /* 3. codes [SAGE-Q-03..06] */
    const bool away = ties == KVQ_TIES_AWAY;
    constexpr int32_t CMAX = BITS == 4u ? 7 : 127;
    /* a step's code bytes, stored at once (the step's values then die: K at D = 128 holds
     * FAST_K_MIN_BLOCKS blocks an SM only without spills) */
    auto store = [&](uint32_t i, uint32_t word) {
        uint8_t *dst = codes + (e0 + i) * BITS / 8u;
        if (vec) {
            if (BITS == 8u) *(uint32_t *)dst = word;
            else *(uint16_t *)dst = (uint16_t)word;
        } else {
#pragma unroll
            for (uint32_t j = 0; j < BITS / 2u; j++) dst[j] = (uint8_t)(word >> (8u * j));
        }
    };
    /* [SAGE-DEV-10]: qe = RN(x * RN(1/s)) is within 2^-15 of q = RN(x/s); a qe more
     * than 2^-12 from every half-integer rounds (any rule: q is no tie) to rint(qe),
     * the low bits of m = RN(qe + 1.5*2^23); the others (near ties, exact ties) are
     * redone by dev_qk_code, a step (4 values) at a time, which keeps the step's
     * values the only ones live.  The field of code k is k mod 2^BITS, the low BITS
     * bits of m (those of 1.5*2^23 are zero). */
#pragma unroll
    for (uint32_t it = 0; it < FAST_STEPS; it++) {
        const uint32_t i = it * FT * 4u + t4;
        if (i >= ne) break;                                       /* ne and i multiples of 4 */
        const float2 sr = ssc[dev_fast_slot<ROLE, GRAN, D>(i / D)];
        const float4 vv = SAGE_V(it);
        const float a[4] = {vv.x, vv.y, vv.z, vv.w};
        uint32_t word = 0u;
        bool near = false;
#if KVQ_SAGE_QK2
        /* [SAGE-DEV-14]: the code fields packed by byte permutes (8-bit: the low byte of
         * each m; 4-bit: nibble pairs by one shift and one bit-select each) */
        uint32_t mw[4];
#pragma unroll
        for (uint32_t j = 0; j < 4u; j++) {
            const float qe = __fmul_rn(a[j], sr.y);
            const float m = __fadd_rn(qe, MAGIC_RND);
            near |= !(fabsf(__fsub_rn(qe, __fsub_rn(m, MAGIC_RND))) <= SAGE_NEAR_HALF);
            mw[j] = __float_as_uint(m);
        }
        if (BITS == 8u) {
            word = __byte_perm(__byte_perm(mw[0], mw[1], 0x0040u), __byte_perm(mw[2], mw[3], 0x0040u),
                               0x5410u);                          /* [LAY-PACK-01] */
        } else {
            const uint32_t lo = (mw[0] & 0x0Fu) | ((mw[1] << 4) & 0xF0u);
            const uint32_t hi = (mw[2] & 0x0Fu) | ((mw[3] << 4) & 0xF0u);
            word = lo | hi << 8;                                  /* [LAY-PACK-01] nibble order */
        }
#else
#pragma unroll
        for (uint32_t j = 0; j < 4u; j++) {
            const float qe = __fmul_rn(a[j], sr.y);
            const float m = __fadd_rn(qe, MAGIC_RND);
            near |= !(fabsf(__fsub_rn(qe, __fsub_rn(m, MAGIC_RND))) <= SAGE_NEAR_HALF);
            word |= (__float_as_uint(m) & ((1u << BITS) - 1u)) << (BITS * j); /* [LAY-PACK-01] */
        }
#endif
        if (!KVQ_SAGE_HOTCOUNT && near) {                         /* rare: about 2^-11 of the elements */
#pragma unroll
            for (uint32_t j = 0; j < 4u; j++) {
                const float qe = __fmul_rn(a[j], sr.y);
                const float m = __fadd_rn(qe, MAGIC_RND);
                if (KVQ_SAGE_QK2 && KVQ_SAGE_PLANT != 2 && a[j] != a[j]) err |= ERR_NONFINITE; /* NaN [POL-NF-01] (plant 2 drops it) */
                if (!(fabsf(__fsub_rn(qe, __fsub_rn(m, MAGIC_RND))) <= SAGE_NEAR_HALF)) {
                    const uint32_t fld = kvq_sage_code_field(dev_qk_code(a[j], sr.x, CMAX, pub, away), BITS);
                    word = (word & ~(((1u << BITS) - 1u) << (BITS * j))) | fld << (BITS * j);
                }
            }
        }
        store(i, word);
    }
    dev_publish(st, f, KVQ_SAGE_QK2 ? err : 0u);
}

#undef SAGE_V
#endif /* KVQ_SAGE_BASELINE */

/* ---- V [SAGE-V-01..04] ------------------------------------------------------ */

/* Per-channel maxima: D/4 lanes a token, thread t takes channels 4 (t % (D/4))
 * .. + 3 of tokens t / (D/4), + R, ... (R = 1024 / D tokens a step) of the
 * block's token range, 8 steps of loads in flight; maxima of |v| as unsigned
 * encodings (NaN and Inf sort above every finite value) into cmaxw[d]. */
template <uint32_t D>
__global__ void __launch_bounds__(256)
sage_vmax_kernel(uint32_t *__restrict__ cmaxw, const float *__restrict__ v, sage_dev_state *st,
                 uint32_t N, uint32_t tokens_per_block, int vec)
{
    cmaxw += blockIdx.y * D, v += (uint64_t)blockIdx.y * N * D;   /* the head */
    constexpr uint32_t TG = D / 4u, R = 256u / TG, U = 8u;
    __shared__ uint32_t sm[256 * 4];
    const uint32_t c4 = (threadIdx.x % TG) * 4u, r = threadIdx.x / TG;
    const uint32_t t0 = blockIdx.x * tokens_per_block;
    const uint32_t t1 = N - t0 < tokens_per_block ? N : t0 + tokens_per_block;
    uint32_t m[4] = {0u, 0u, 0u, 0u};
    for (uint32_t tb = t0 + r; tb < t1; tb += R * U) {
        float4 w[U];
#pragma unroll
        for (uint32_t u = 0; u < U; u++) {
            const uint32_t t = tb + u * R;
            w[u] = t < t1 ? dev_load4(v, (uint64_t)t * D, c4, D, vec) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        }
#pragma unroll
        for (uint32_t u = 0; u < U; u++) {
            m[0] = max(m[0], __float_as_uint(w[u].x) & 0x7FFFFFFFu);
            m[1] = max(m[1], __float_as_uint(w[u].y) & 0x7FFFFFFFu);
            m[2] = max(m[2], __float_as_uint(w[u].z) & 0x7FFFFFFFu);
            m[3] = max(m[3], __float_as_uint(w[u].w) & 0x7FFFFFFFu);
        }
    }
    uint32_t err = 0u;
#pragma unroll
    for (uint32_t j = 0; j < 4u; j++) {
        if (m[j] >= 0x7F800000u) err |= ERR_NONFINITE;          /* [POL-NF-01] */
        sm[threadIdx.x * 4u + j] = m[j];
    }
    __syncthreads();
    if (threadIdx.x < D) {                                      /* channel threadIdx.x */
        const uint32_t lane = threadIdx.x / 4u, j = threadIdx.x % 4u;
        uint32_t mm = 0u;
        for (uint32_t rr = 0; rr < R; rr++) mm = max(mm, sm[(rr * TG + lane) * 4u + j]);
        if (mm != 0u) atomicMax(cmaxw + threadIdx.x, mm);
    }
    dev_publish(st, 0u, err);
}

__global__ void sage_vscale_kernel(float *__restrict__ scale, float *__restrict__ sc_dev,
                                   const uint32_t *__restrict__ cmaxw, sage_dev_state *st,
                                   uint32_t d, float F)
{
    if (dev_failed(st)) return;
    scale += blockIdx.y * d, sc_dev += blockIdx.y * d, cmaxw += blockIdx.y * d;   /* the head */
    uint32_t f = 0;
    const uint32_t c = threadIdx.x;
    if (c < d) {
        float s = __fdiv_rn(__uint_as_float(cmaxw[c]), F);    /* RN32, a division [SAGE-V-02] */
        if (s < F32_MIN_NORMAL) s = 0.0f;                      /* [SAGE-V-03] */
        if (s == 0.0f) f |= KVQ_FLAG_ZERO_SCALE;
        scale[c] = s;
        sc_dev[c] = s;
    }
    dev_publish(st, f, 0u);
}

/* Two FP8 codes (lo in the low byte) by the conversion instruction
 * cvt.rn.satfinite.{e4m3x2,e5m2x2}.f32 [SAGE-DEV-06].  On finite inputs of
 * magnitude at most F (1 + 2^-23), the only ones the V kernel converts, its
 * result is kvq_fp8_round_bits32's under either overflow policy: nothing there
 * rounds past the largest finite code [SAGE-LEM-05], and the instruction
 * rounds to nearest even (kvq_sage_fp8_sweep compares the two on all 2^32
 * binary32 inputs on the device, TRUSTED.md [TR-FP8-CVT]). */
__device__ __forceinline__ uint16_t dev_fp8x2_hw(float lo, float hi, bool e5m2)
{
    uint16_t r;
    if (e5m2) asm("cvt.rn.satfinite.e5m2x2.f32 %0, %1, %2;" : "=h"(r) : "f"(hi), "f"(lo));
    else asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(r) : "f"(hi), "f"(lo));
    return r;
}

/* Codes: thread t takes channels 4 (t % (D/4)) .. + 3 (their scales kept in
 * registers) of every R-th token, 4 codes a 32-bit store. */
template <uint32_t D>
__global__ void __launch_bounds__(256)
sage_vcode_kernel(uint8_t *__restrict__ codes, const float *__restrict__ v,
                  const float *__restrict__ sc, const sage_dev_state *st, uint32_t N, bool e5m2, int vec)
{
    constexpr uint32_t TG = D / 4u, R = 256u / TG, U = 4u;
    if (dev_failed(st)) return;
    codes += (uint64_t)blockIdx.y * N * D, v += (uint64_t)blockIdx.y * N * D, sc += blockIdx.y * D;  /* the head */
    const uint32_t c4 = (threadIdx.x % TG) * 4u;
    const float s[4] = {__ldg(sc + c4), __ldg(sc + c4 + 1u), __ldg(sc + c4 + 2u), __ldg(sc + c4 + 3u)};
    const uint32_t stride = gridDim.x * R;
    for (uint32_t tb = blockIdx.x * R + threadIdx.x / TG; tb < N; tb += stride * U) {
        float4 w[U];
#pragma unroll
        for (uint32_t u = 0; u < U; u++) {
            const uint32_t t = tb + u * stride;
            w[u] = t < N ? dev_load4(v, (uint64_t)t * D, c4, D, vec) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        }
#pragma unroll
        for (uint32_t u = 0; u < U; u++) {
            const uint32_t t = tb + u * stride;
            if (t >= N) break;
            const float a[4] = {w[u].x, w[u].y, w[u].z, w[u].w};
            float tq[4];
#pragma unroll
            for (uint32_t j = 0; j < 4u; j++)   /* RN32(v / s), |t| <= F (1 + 2^-23) [SAGE-LEM-05] */
                tq[j] = s[j] == 0.0f ? 0.0f : __fdiv_rn(a[j], s[j]);
            const uint32_t word = (uint32_t)dev_fp8x2_hw(tq[0], tq[1], e5m2) |
                                  (uint32_t)dev_fp8x2_hw(tq[2], tq[3], e5m2) << 16;
            uint8_t *dst = codes + (uint64_t)t * D + c4;
            if (vec) *(uint32_t *)dst = word;
            else for (uint32_t j = 0; j < 4u; j++) dst[j] = (uint8_t)(word >> (8u * j));
        }
    }
    
}

/* Codes and V~ [SAGE-DEV-15] (d = 128): block (x, y) takes keys 64 x .. 64 x + 63
 * of head y.  A task is channels c0 .. c0 + 3 of keys 16 h + 2 tt + {0, 1, 8, 9}
 * (c0 = 4 (8 G + qq), lane = 4 qq + tt, warp w: G = w % 4, h = 2 (w / 4) + i for
 * its tasks i = 0, 1): four float4 loads, the four codes of each key as
 * sage_vcode_kernel computes them, stored to `codes` as 32-bit words, then
 * transposed in registers (byte permutes) into four channel words of four
 * consecutive V~ positions (vt_word_off: the keys 16 h + 2 tt + {0, 1, 8, 9} are
 * positions 16 (h % 2) + 4 tt .. + 3 of tile h / 2) and stored to the block's
 * V~ image in shared memory (the channel rotated by qq / 2: no bank conflict);
 * then the 8192 bytes to `vt` in 16-byte stores.  Keys at or past N give 0x00
 * in V~ (and nothing in `codes`).  KVQ_SAGE_PLANT == 3 (a planted build for the
 * device test): the two 16-key quarters of each 32-key tile swapped in V~. */
__global__ void __launch_bounds__(256)
sage_vcode_vt_kernel(uint8_t *__restrict__ codes, uint8_t *__restrict__ vt, const float *__restrict__ v,
                     const float *__restrict__ sc, const sage_dev_state *st, uint32_t N, bool e5m2, int vec)
{
    constexpr uint32_t D = 128u;
    __shared__ __align__(16) uint8_t img[8192];
    if (dev_failed(st)) return;
    const uint32_t nb = (N + 63u) / 64u, kb0 = blockIdx.x * 64u;
    codes += (uint64_t)blockIdx.y * N * D, v += (uint64_t)blockIdx.y * N * D, sc += blockIdx.y * D;  /* the head */
    vt += ((uint64_t)blockIdx.y * nb + blockIdx.x) * 8192u;
    const uint32_t w = threadIdx.x / 32u, lane = threadIdx.x % 32u, tt = lane % 4u, qq = lane / 4u;
    const uint32_t c0 = 4u * (8u * (w % 4u) + qq);
    const float s[4] = {__ldg(sc + c0), __ldg(sc + c0 + 1u), __ldg(sc + c0 + 2u), __ldg(sc + c0 + 3u)};
    float4 x[2][4];
#pragma unroll
    for (uint32_t i = 0; i < 2u; i++)
#pragma unroll
        for (uint32_t u = 0; u < 4u; u++) {
            const uint32_t t = kb0 + 16u * (2u * (w / 4u) + i) + 2u * tt + (u % 2u) + 8u * (u / 2u);
            x[i][u] = t < N ? dev_load4(v, (uint64_t)t * D, c0, D, vec) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        }
#pragma unroll
    for (uint32_t i = 0; i < 2u; i++) {
        const uint32_t h = 2u * (w / 4u) + i;
        uint32_t wd[4];
#pragma unroll
        for (uint32_t u = 0; u < 4u; u++) {
            const uint32_t t = kb0 + 16u * h + 2u * tt + (u % 2u) + 8u * (u / 2u);
            const float a[4] = {x[i][u].x, x[i][u].y, x[i][u].z, x[i][u].w};
            float tq[4];
#pragma unroll
            for (uint32_t j = 0; j < 4u; j++)   /* RN32(v / s), |t| <= F (1 + 2^-23) [SAGE-LEM-05] */
                tq[j] = s[j] == 0.0f ? 0.0f : __fdiv_rn(a[j], s[j]);
            wd[u] = t < N ? (uint32_t)dev_fp8x2_hw(tq[0], tq[1], e5m2) | (uint32_t)dev_fp8x2_hw(tq[2], tq[3], e5m2) << 16
                          : 0u;
            if (t < N) {
                uint8_t *dst = codes + (uint64_t)t * D + c0;
                if (vec) *(uint32_t *)dst = wd[u];
                else for (uint32_t j = 0; j < 4u; j++) dst[j] = (uint8_t)(wd[u] >> (8u * j));
            }
        }
        /* wd[u]: channels c0 .. c0 + 3 of key u -> o[j]: keys 0..3 of channel c0 + j */
        const uint32_t t0 = __byte_perm(wd[0], wd[1], 0x5140u), t1 = __byte_perm(wd[2], wd[3], 0x5140u);
        const uint32_t t2 = __byte_perm(wd[0], wd[1], 0x7362u), t3 = __byte_perm(wd[2], wd[3], 0x7362u);
        const uint32_t o[4] = {__byte_perm(t0, t1, 0x5410u), __byte_perm(t0, t1, 0x7632u), __byte_perm(t2, t3, 0x5410u),
                               __byte_perm(t2, t3, 0x7632u)};
#pragma unroll
        for (uint32_t u = 0; u < 4u; u++) {
            const uint32_t bb = (u + qq / 2u) % 4u;
#if KVQ_SAGE_PLANT == 3
            /* planted: the two 16-key quarters of each tile swapped (keys 0..15
             * at positions 16..31 and back): h ^ 1 is the same tile, the other quarter */
            *reinterpret_cast<uint32_t *>(img + vt_word_off(h ^ 1u, tt, c0 + bb)) = o[bb];
#else
            *reinterpret_cast<uint32_t *>(img + vt_word_off(h, tt, c0 + bb)) = o[bb];
#endif
        }
    }
    __syncthreads();
#pragma unroll
    for (uint32_t i = 0; i < 2u; i++) {
        const uint32_t e = (threadIdx.x + 256u * i) * 16u;
        *reinterpret_cast<uint4 *>(vt + e) = *reinterpret_cast<const uint4 *>(img + e);
    }
}

/* ---- P~ [SAGE-P-01..02] ------------------------------------------------------ */

__global__ void __launch_bounds__(256)
sage_pcode_kernel(uint8_t *__restrict__ codes, const float *__restrict__ p, sage_dev_state *st,
                  uint64_t n, float F, bool e5m2, bool nanpol)
{
    if (dev_failed(st)) return;
    uint32_t f = 0;
    const uint32_t pol = nanpol ? KVQ_OVERFLOW_NAN : KVQ_OVERFLOW_SATURATE;
    const uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    for (uint64_t e = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; e < n; e += stride)
        /* RN32(p F) in [0, F]: never overflows [SAGE-LEM-06] */
        codes[e] = kvq_fp8_round_bits32(__float_as_uint(__fmul_rn(__ldg(p + e), F)), e5m2 ? 1u : 0u,
                                        pol, &f);
    dev_publish(st, f, 0u);
}

__global__ void __launch_bounds__(128)
sage_prow_kernel(float *__restrict__ rowsum, const float *__restrict__ p, const sage_dev_state *st,
                 uint32_t rows, uint32_t cols)
{
    if (dev_failed(st)) return;
    const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= rows) return;
    const float *pr = p + (uint64_t)i * cols;
    float l = __ldg(pr);
    for (uint32_t j = 1; j < cols; j++) l = __fadd_rn(l, __ldg(pr + j)); /* RN32 [SAGE-P-02] */
    rowsum[i] = l;
}

/* ---- dequantization [SAGE-Q-08] ----------------------------------------------------
 * Three kernels against the zeroed sage_dq_state: the scales in slot order
 * (the first bad one decides the status: an atomicMax of the complement of
 * 2 slot + kind keeps the least), then, only when some scale is large enough
 * for the largest code magnitude to overflow, every stored code's product,
 * then the values -- each returns at once on an earlier verdict, so a failed
 * call writes nothing. */

__global__ void __launch_bounds__(256)
sage_dq_scale_kernel(const float *__restrict__ scale, sage_dq_state *dq, uint64_t slots, float kmax)
{
    uint32_t big = 0;
    const uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    for (uint64_t s = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; s < slots; s += stride) {
        const float v = __ldg(scale + s);
#if KVQ_SAGE_PLANT == 4
        const uint64_t at = slots - 1u - s;                       /* planted: the last bad slot decides */
#else
        const uint64_t at = s;
#endif
        if (!isfinite(v))
            atomicMax(&dq->bad, ~(2ull * at));
        else if (v < 0.0f || (v != 0.0f && v < F32_MIN_NORMAL))   /* -0 passes: v < 0 is false */
            atomicMax(&dq->bad, ~(2ull * at + 1ull));
        else if (isinf(__fmul_rn(kmax, v)))                       /* |k| s <= kmax s, rounding monotone */
            big = 1u;
    }
    if (__any_sync(0xFFFFFFFFu, big) && (threadIdx.x & 31u) == 0u) atomicOr(&dq->big, 1u);
}

__global__ void __launch_bounds__(256)
sage_dq_range_kernel(const uint8_t *__restrict__ codes, const float *__restrict__ scale, sage_dq_state *dq,
                     kvq_sage_qk q, uint32_t d, uint64_t n)
{
    if (*(volatile const unsigned long long *)&dq->bad != 0ull || *(volatile const uint32_t *)&dq->big == 0u)
        return;
    uint32_t over = 0;
    const uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    for (uint64_t e = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; e < n; e += stride) {
        const float s = __ldg(scale + kvq_sage_scale_slot(&q, (uint32_t)(e / d)));
#if KVQ_SAGE_PLANT == 5
        /* planted: the overflow decided by the scale alone (kmax s), not by the stored codes */
        if (isinf(__fmul_rn(q.bits == 4u ? 8.0f : 128.0f, s))) over = 1u;
#else
        if (isinf(__fmul_rn((float)kvq_sage_unpack_code(codes, e, q.bits), s))) over = 1u;
#endif
    }
    if (__any_sync(0xFFFFFFFFu, over) && (threadIdx.x & 31u) == 0u) atomicOr(&dq->range, 1u);
}

/* Eight values a thread (d is a multiple of 8, so they share a token): y =
 * RN32(k s), one rounding, k exact in binary32. */
__global__ void __launch_bounds__(256)
sage_dq_kernel(float *__restrict__ y, const uint8_t *__restrict__ codes, const float *__restrict__ scale,
               const sage_dq_state *dq, kvq_sage_qk q, uint32_t d, uint64_t n8, bool vec)
{
    if (*(volatile const unsigned long long *)&dq->bad != 0ull || *(volatile const uint32_t *)&dq->range != 0u)
        return;
    const uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    for (uint64_t t = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; t < n8; t += stride) {
        const uint64_t e0 = 8u * t;
        const float s = __ldg(scale + kvq_sage_scale_slot(&q, (uint32_t)(e0 / d)));
        float v[8];
#pragma unroll
        for (uint32_t i = 0; i < 8u; i++) v[i] = __fmul_rn((float)kvq_sage_unpack_code(codes, e0 + i, q.bits), s);
        if (vec) {
            reinterpret_cast<float4 *>(y + e0)[0] = make_float4(v[0], v[1], v[2], v[3]);
            reinterpret_cast<float4 *>(y + e0)[1] = make_float4(v[4], v[5], v[6], v[7]);
        } else {
#pragma unroll
            for (uint32_t i = 0; i < 8u; i++) y[e0 + i] = v[i];
        }
    }
}

/* The status of a dequantization, in stream order: the first bad scale's
 * kind, else an overflowing product, else KVQ_OK (no flags). */
static __global__ void sage_dq_result_kernel(kvq_cuda_result *out, const sage_dq_state *dq)
{
    const unsigned long long b = dq->bad;
    out->status = b != 0ull ? ((~b & 1ull) ? (uint32_t)KVQ_E_PARAM : (uint32_t)KVQ_E_NONFINITE)
                : dq->range ? (uint32_t)KVQ_E_RANGE
                            : (uint32_t)KVQ_OK;
    out->flags = 0u;
}

/* ---- host side ---------------------------------------------------------------- */

static kvq_status enqueue_check(sage_dev_state *st, const float *d_x, uint64_t n, uint32_t what,
                                cudaStream_t stream)
{
    sage_check_kernel<<<grid_cap(n, 256), 256, 0, stream>>>(d_x, st, n, what);
    return cudaGetLastError() == cudaSuccess ? KVQ_OK : KVQ_E_DEVICE;
}

extern "C" kvq_status kvq_cuda_sage_smooth(float *d_xs, float *d_mean, const float *d_x,
                                           const kvq_sage_shape *shape, uint32_t seg,
                                           cudaStream_t stream)
{
    if (d_xs == NULL || d_mean == NULL || d_x == NULL || shape == NULL) return KVQ_E_PARAM;
    if (seg < 1u || seg > KVQ_SAGE_MAX_TOKENS) return KVQ_E_PARAM;
    if (!kvq_sage_shape_ok(shape)) return KVQ_E_SHAPE;
    const int stg = sage_stages_env();                          /* [SAGE-DEV-16] */
    if (stg < 0) return KVQ_E_PARAM;
    sage_scratch *s = NULL;
    kvq_status a = alloc_scratch(&s, stream);
    if (a != KVQ_OK) return a;
    const kvq_status enq = sage_enqueue_smooth(d_xs, d_mean, d_x, 1u, shape->tokens, shape->dim, seg, &s->st,
                                               stream, stg == 0 ? 0u : SAGE_STG_NEW);
    return finish(enq, s, NULL, stream);
}

kvq_status sage_enqueue_smooth(float *d_xs, float *d_mean, const float *d_x, uint32_t heads, uint32_t n,
                               uint32_t d, uint32_t seg, sage_dev_state *st, cudaStream_t stream, uint32_t stg)
{
    const uint64_t ne = (uint64_t)heads * n * d;
    const uint32_t R = kvq_sage_mean_rows(n, seg);
    const uint64_t nm = (uint64_t)heads * R * d;
    if (!(stg & SAGE_STG_NEW)) {                                /* the kernels of before */
        const kvq_status enq = enqueue_check(st, d_x, ne, CHECK_SMOOTH, stream);
        if (enq != KVQ_OK) return enq;
        /* few long sums (K: one segment a head): one warp a block spreads them over
         * every multiprocessor, whose loads in flight bound the pass */
        const uint32_t mb = nm <= 65536u ? 32u : 128u;
        sage_mean_kernel<<<nblocks(nm, mb), mb, 0, stream>>>(d_mean, d_x, st, n, d, seg, R, nm);
        sage_sub_kernel<<<grid_cap(ne, 256), 256, 0, stream>>>(d_xs, d_x, d_mean, st, ne, d, seg, n, R);
        return cudaGetLastError() == cudaSuccess ? KVQ_OK : KVQ_E_DEVICE;
    }
#if KVQ_SAGE_STG_PLANT
    stg_plant_set();
#endif
    /* the stage kernels [SAGE-DEV-16]: the check inside the mean pass (fused: the
     * pipeline's workspace means) or before it (the one-call form's outputs stay
     * untouched on an error [API-ERR-01]) */
    const bool fused = (stg & SAGE_STG_FUSED) != 0u;
    if (!fused) {
        const kvq_status enq = enqueue_check(st, d_x, ne, CHECK_SMOOTH, stream);
        if (enq != KVQ_OK) return enq;
    }
    const uint32_t strips = d / SM_STRIP, tiles = (seg < n ? seg + SM_TT - 1u : n + SM_TT - 1u) / SM_TT;
    const uint32_t stages = tiles < SM_STAGES ? tiles : SM_STAGES;
    const bool resident = tiles <= SM_STAGES;                   /* every segment whole in shared memory */
    /* a segment of `tiles` < SM_STAGES tiles only ever uses stages 0 .. tiles - 1 */
    const size_t smem = (size_t)stages * SM_TT * SM_STRIP * 4u;
    const bool vec = aligned(d_x, 16) && aligned(d_xs, 16) && aligned(d_mean, 16);
    static bool attr = false;                                   /* 64 KiB with 8 stages: past the default 48 */
    if (!attr) {
        const int mx = (int)(SM_STAGES * SM_TT * SM_STRIP * 4u);
        (void)cudaFuncSetAttribute(sage_mean_stg_kernel<true, true>, cudaFuncAttributeMaxDynamicSharedMemorySize, mx);
        (void)cudaFuncSetAttribute(sage_mean_stg_kernel<true, false>, cudaFuncAttributeMaxDynamicSharedMemorySize, mx);
        (void)cudaFuncSetAttribute(sage_mean_stg_kernel<false, true>, cudaFuncAttributeMaxDynamicSharedMemorySize, mx);
        (void)cudaFuncSetAttribute(sage_mean_stg_kernel<false, false>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                   mx);
        attr = true;
    }
    for (uint32_t h0 = 0; h0 < heads; h0 += SAGE_HEADS_MAX) {
        const uint32_t hn = heads - h0 < SAGE_HEADS_MAX ? heads - h0 : SAGE_HEADS_MAX;
        const dim3 g((unsigned int)((uint64_t)R * strips), hn);
        const float *x = d_x + (uint64_t)h0 * n * d;
        float *m = d_mean + (uint64_t)h0 * R * d, *xs = d_xs + (uint64_t)h0 * n * d;
        float *xr = resident ? xs : NULL;                       /* the subtraction in the mean pass */
        if (vec && fused) sage_mean_stg_kernel<true, true><<<g, 128, smem, stream>>>(m, x, st, n, d, seg, R, xr);
        else if (vec) sage_mean_stg_kernel<true, false><<<g, 128, smem, stream>>>(m, x, st, n, d, seg, R, xr);
        else if (fused) sage_mean_stg_kernel<false, true><<<g, 128, smem, stream>>>(m, x, st, n, d, seg, R, xr);
        else sage_mean_stg_kernel<false, false><<<g, 128, smem, stream>>>(m, x, st, n, d, seg, R, xr);
        if (resident) {
        } else if (vec) {
            const uint32_t n4 = n * (d / 4u), want = (n4 + 256u * 8u - 1u) / (256u * 8u); /* ~8 float4 a thread */
            const dim3 gs(want < 1u ? 1u : want, hn);
            if (d == 128u) sage_sub_stg_kernel<128u><<<gs, 256, 0, stream>>>(xs, x, m, st, n, seg, R);
            else sage_sub_stg_kernel<64u><<<gs, 256, 0, stream>>>(xs, x, m, st, n, seg, R);
        } else {
            const uint64_t ne1 = (uint64_t)hn * n * d;
            sage_sub_kernel<<<grid_cap(ne1, 256), 256, 0, stream>>>(xs, x, m, st, ne1, d, seg, n, R);
        }
        if (cudaGetLastError() != cudaSuccess) return KVQ_E_DEVICE;
    }
    return KVQ_OK;
}

/* The fast kernel for the public code's block sizes, or NULL-equivalent false. */
template <uint32_t ROLE, uint32_t GRAN>
static void launch_fast(uint32_t bits, uint32_t d, dim3 g, cudaStream_t stream, uint8_t *codes,
                        float *scale, const float *x, sage_dev_state *st, uint32_t tokens,
                        uint32_t rounding, uint32_t ties, int vec, sage_hstride hs)
{
    constexpr uint32_t B = ROLE == KVQ_SAGE_ROLE_Q ? 128u : 64u;
#if KVQ_SAGE_SMEM && !KVQ_SAGE_BASELINE
    /* the block's input in dynamic shared memory (B * D * 4 bytes, up to 64 KiB) [SAGE-DEV-14] */
#define FAST_LAUNCH(BB, DD) do { \
        static bool attr_set = false; \
        const int smem = SAGE_SMEM_ROLE(ROLE) ? (int)(B * DD * 4u) : 0; \
        if (!attr_set && smem > 0) { /* Q keeps the default carveout: its loads go through L1 */ \
            cudaFuncSetAttribute(sage_qk_fast_kernel<ROLE, GRAN, BB, DD>, \
                                 cudaFuncAttributeMaxDynamicSharedMemorySize, smem); \
            cudaFuncSetAttribute(sage_qk_fast_kernel<ROLE, GRAN, BB, DD>, \
                                 cudaFuncAttributePreferredSharedMemoryCarveout, \
                                 (int)cudaSharedmemCarveoutMaxShared); \
            attr_set = true; \
        } \
        sage_qk_fast_kernel<ROLE, GRAN, BB, DD><<<g, B * DD / 32u, smem, stream>>>(codes, scale, x, st, \
            tokens, rounding, ties, vec, hs); \
    } while (0)
#else
#define FAST_LAUNCH(BB, DD) \
    sage_qk_fast_kernel<ROLE, GRAN, BB, DD><<<g, B * DD / 32u, 0, stream>>>(codes, scale, x, st, tokens, rounding, ties, vec, hs)
#endif
    if (bits == 4u && d == 64u) FAST_LAUNCH(4u, 64u);
    else if (bits == 4u) FAST_LAUNCH(4u, 128u);
    else if (d == 64u) FAST_LAUNCH(8u, 64u);
    else FAST_LAUNCH(8u, 128u);
#undef FAST_LAUNCH
}

/* Enqueue the Q/K kernels of `heads` heads of *sh each on the zeroed state st
 * (one launch a kernel for up to SAGE_HEADS_MAX heads, head = blockIdx.y). */
kvq_status sage_enqueue_qk(uint8_t *d_codes, float *d_scale, const float *d_x, uint32_t heads,
                           const kvq_sage_shape *sh, const kvq_sage_qk *qk, const kvq_policy *pol,
                           uint32_t opts, sage_dev_state *st, cudaStream_t stream)
{
    const kvq_sage_qk q = *qk;
    const int vec = aligned(d_x, 16) && aligned(d_codes, 8);  /* per-head steps keep both */
    if (!(opts & KVQ_CUDA_DIRECT)) {
        const kvq_status e = enqueue_check(st, d_x, (uint64_t)heads * kvq_sage_elems(sh), CHECK_NONE, stream);
        if (e != KVQ_OK) return e;
    }
    sage_hstride hs;
    hs.x = kvq_sage_elems(sh), hs.codes = kvq_sage_code_bytes(sh, q.bits), hs.scale = kvq_sage_scale_count(sh, &q);
    const unsigned int gx = kvq_sage_blocks(sh->tokens, q.block);
    const bool fast_q = q.role == KVQ_SAGE_ROLE_Q && q.block == 128u && q.warps == 4u;
    const bool fast_k = q.role == KVQ_SAGE_ROLE_K && q.block == 64u;
    const bool thr = q.gran == KVQ_SAGE_GRAN_THREAD;
    const bool cached = (uint64_t)q.block * sh->dim <= (uint64_t)QK_CACHE * QK_THREADS * 4u;
    for (uint32_t h0 = 0; h0 < heads; h0 += SAGE_HEADS_MAX) {
        const dim3 g(gx, heads - h0 < SAGE_HEADS_MAX ? heads - h0 : SAGE_HEADS_MAX);
        uint8_t *codes = d_codes + h0 * hs.codes;
        float *scale = d_scale + h0 * hs.scale;
        const float *x = d_x + h0 * hs.x;
        if (fast_q || fast_k) {                                 /* [SAGE-DEV-04] */
            if (fast_q && thr)
                launch_fast<KVQ_SAGE_ROLE_Q, KVQ_SAGE_GRAN_THREAD>(q.bits, sh->dim, g, stream, codes, scale, x, st,
                                                                   sh->tokens, q.rounding, pol->ties, vec, hs);
            else if (fast_q && q.gran == KVQ_SAGE_GRAN_WARP)
                launch_fast<KVQ_SAGE_ROLE_Q, KVQ_SAGE_GRAN_WARP>(q.bits, sh->dim, g, stream, codes, scale, x, st,
                                                                 sh->tokens, q.rounding, pol->ties, vec, hs);
            else if (fast_q)
                launch_fast<KVQ_SAGE_ROLE_Q, KVQ_SAGE_GRAN_BLOCK>(q.bits, sh->dim, g, stream, codes, scale, x, st,
                                                                  sh->tokens, q.rounding, pol->ties, vec, hs);
            else if (thr)
                launch_fast<KVQ_SAGE_ROLE_K, KVQ_SAGE_GRAN_THREAD>(q.bits, sh->dim, g, stream, codes, scale, x, st,
                                                                   sh->tokens, q.rounding, pol->ties, vec, hs);
            else                                                /* K: warp and block are one slot */
                launch_fast<KVQ_SAGE_ROLE_K, KVQ_SAGE_GRAN_BLOCK>(q.bits, sh->dim, g, stream, codes, scale, x, st,
                                                                  sh->tokens, q.rounding, pol->ties, vec, hs);
        } else {
#define QK_LAUNCH(BB, DD, CC) \
            sage_qk_kernel<BB, DD, CC><<<g, QK_THREADS, 0, stream>>>(codes, scale, x, st, *sh, q, pol->ties, vec, hs)
            if (q.bits == 4u && sh->dim == 64u) { if (cached) QK_LAUNCH(4u, 64u, QK_CACHE); else QK_LAUNCH(4u, 64u, 0u); }
            else if (q.bits == 4u) { if (cached) QK_LAUNCH(4u, 128u, QK_CACHE); else QK_LAUNCH(4u, 128u, 0u); }
            else if (sh->dim == 64u) { if (cached) QK_LAUNCH(8u, 64u, QK_CACHE); else QK_LAUNCH(8u, 64u, 0u); }
            else { if (cached) QK_LAUNCH(8u, 128u, QK_CACHE); else QK_LAUNCH(8u, 128u, 0u); }
#undef QK_LAUNCH
        }
        if (cudaGetLastError() != cudaSuccess) return KVQ_E_DEVICE;
    }
    return KVQ_OK;
}

static kvq_status qk_args(const uint8_t *d_codes, const float *d_scale, const float *d_x,
                          const kvq_sage_shape *shape, const kvq_sage_qk *qk, const kvq_policy *pol)
{
    if (d_codes == NULL || d_scale == NULL || d_x == NULL || shape == NULL || qk == NULL)
        return KVQ_E_PARAM;
    if (kvq_policy_check(pol) != KVQ_OK || !kvq_sage_qk_ok(qk)) return KVQ_E_PARAM;
    if (!kvq_sage_shape_ok(shape)) return KVQ_E_SHAPE;
    return KVQ_OK;
}

extern "C" kvq_status kvq_cuda_sage_quantize_qk(uint8_t *d_codes, float *d_scale, uint32_t *flags,
                                                const float *d_x, const kvq_sage_shape *shape,
                                                const kvq_sage_qk *qk, const kvq_policy *pol,
                                                uint32_t opts, cudaStream_t stream)
{
    const kvq_status a0 = qk_args(d_codes, d_scale, d_x, shape, qk, pol);
    if (a0 != KVQ_OK) return a0;
    sage_scratch *s = NULL;
    kvq_status a = alloc_scratch(&s, stream);
    if (a != KVQ_OK) return a;
    const kvq_status enq = sage_enqueue_qk(d_codes, d_scale, d_x, 1u, shape, qk, pol, opts, &s->st, stream);
    return finish(enq, s, flags, stream);
}

extern "C" size_t kvq_cuda_sage_workspace(void)
{
    return (sizeof(sage_scratch) + 255u) / 256u * 256u;
}

/* Check the workspace of an asynchronous call and zero its state (clean: the
 * caller says it is clean already, KVQ_CUDA_WS_CLEAN [SAGE-DEV-20]). */
static kvq_status async_ws(sage_scratch **s, kvq_cuda_result *d_result, void *d_workspace,
                           size_t workspace_bytes, cudaStream_t stream, bool clean = false)
{
    if (d_result == NULL || d_workspace == NULL || !aligned(d_workspace, 256) ||
        workspace_bytes < kvq_cuda_sage_workspace())
        return KVQ_E_PARAM;
    *s = (sage_scratch *)d_workspace;
    if (clean) return KVQ_OK;
    return cudaMemsetAsync(*s, 0, sizeof **s, stream) == cudaSuccess ? KVQ_OK : KVQ_E_DEVICE;
}

/* The status kernel, a programmatic dependent of the call's last kernel: it
 * writes *d_result and leaves the state clear [SAGE-DEV-20]. */
static kvq_status async_done(kvq_status enq, kvq_cuda_result *d_result, sage_scratch *s, cudaStream_t stream)
{
    if (enq != KVQ_OK) return enq;
    return sage_launch_result(d_result, &s->st, stream) == cudaSuccess && cudaGetLastError() == cudaSuccess
               ? KVQ_OK
               : KVQ_E_DEVICE;
}

extern "C" kvq_status kvq_cuda_sage_quantize_qk_async(uint8_t *d_codes, float *d_scale,
                                                      kvq_cuda_result *d_result, const float *d_x,
                                                      const kvq_sage_shape *shape, const kvq_sage_qk *qk,
                                                      const kvq_policy *pol, void *d_workspace,
                                                      size_t workspace_bytes, uint32_t opts,
                                                      cudaStream_t stream)
{
    const kvq_status a0 = qk_args(d_codes, d_scale, d_x, shape, qk, pol);
    if (a0 != KVQ_OK) return a0;
    sage_scratch *s = NULL;
    const kvq_status a = async_ws(&s, d_result, d_workspace, workspace_bytes, stream, (opts & KVQ_CUDA_WS_CLEAN) != 0u);
    if (a != KVQ_OK) return a;
    return async_done(sage_enqueue_qk(d_codes, d_scale, d_x, 1u, shape, qk, pol, opts, &s->st, stream), d_result, s,
                      stream);
}

static kvq_status v_args(const uint8_t *d_codes, const float *d_scale, const float *d_v,
                         const kvq_sage_shape *shape, uint32_t fmt, const kvq_policy *pol)
{
    if (d_codes == NULL || d_scale == NULL || d_v == NULL || shape == NULL) return KVQ_E_PARAM;
    if (kvq_policy_check(pol) != KVQ_OK) return KVQ_E_PARAM;
    if (fmt != KVQ_SAGE_FP8_E4M3 && fmt != KVQ_SAGE_FP8_E5M2) return KVQ_E_PARAM;
    if (!kvq_sage_shape_ok(shape)) return KVQ_E_SHAPE;
    return KVQ_OK;
}

/* Enqueue the V kernels of `heads` heads on the zeroed state st (head =
 * blockIdx.y): cmax (zeroed) and sc hold heads x dim words. */
kvq_status sage_enqueue_v(uint8_t *d_codes, float *d_scale, const float *d_v, uint32_t heads,
                          const kvq_sage_shape *sh, uint32_t fmt, uint32_t *cmax, float *sc,
                          sage_dev_state *st, cudaStream_t stream, uint8_t *d_vt)
{
    if (d_vt != NULL && (sh->dim != 128u || !aligned(d_vt, 16))) return KVQ_E_PARAM;
    const int vec = aligned(d_v, 16) && aligned(d_codes, 4);  /* per-head steps keep both */
    const uint32_t tpb = 512u;                                  /* tokens a maxima block */
    const unsigned int gm = kvq_sage_blocks(sh->tokens, tpb);
    const uint64_t he = kvq_sage_elems(sh);
    const uint32_t d = sh->dim;
    /* the overflow policy does not reach the codes: no V value overflows [SAGE-LEM-05] */
    const bool e5 = fmt == KVQ_SAGE_FP8_E5M2;
    const float F = kvq_sage_fp8_bound(fmt);
    for (uint32_t h0 = 0; h0 < heads; h0 += SAGE_HEADS_MAX) {
        const uint32_t hn = heads - h0 < SAGE_HEADS_MAX ? heads - h0 : SAGE_HEADS_MAX;
        const float *v = d_v + h0 * he;
        uint8_t *codes = d_codes + h0 * he;
        uint32_t *cm = cmax + (uint64_t)h0 * d;
        float *scale = d_scale + (uint64_t)h0 * d, *s = sc + (uint64_t)h0 * d;
        if (d == 64u)
            sage_vmax_kernel<64u><<<dim3(gm, hn), 256, 0, stream>>>(cm, v, st, sh->tokens, tpb, vec);
        else
            sage_vmax_kernel<128u><<<dim3(gm, hn), 256, 0, stream>>>(cm, v, st, sh->tokens, tpb, vec);
        sage_vscale_kernel<<<dim3(1, hn), 128, 0, stream>>>(scale, s, cm, st, d, F);
        if (d_vt != NULL)                                       /* the codes and V~ [SAGE-DEV-15] */
            sage_vcode_vt_kernel<<<dim3(kvq_sage_blocks(sh->tokens, 64u), hn), 256, 0, stream>>>(
                codes, d_vt + (uint64_t)h0 * kvq_sage_blocks(sh->tokens, 64u) * 8192u, v, s, st, sh->tokens, e5, vec);
        else if (d == 64u)
            sage_vcode_kernel<64u><<<dim3(grid_cap((uint64_t)sh->tokens * 16u, 256), hn), 256, 0, stream>>>(
                codes, v, s, st, sh->tokens, e5, vec);
        else
            sage_vcode_kernel<128u><<<dim3(grid_cap((uint64_t)sh->tokens * 32u, 256), hn), 256, 0, stream>>>(
                codes, v, s, st, sh->tokens, e5, vec);
        if (cudaGetLastError() != cudaSuccess) return KVQ_E_DEVICE;
    }
    return KVQ_OK;
}

extern "C" kvq_status kvq_cuda_sage_quantize_v(uint8_t *d_codes, float *d_scale, uint32_t *flags,
                                               const float *d_v, const kvq_sage_shape *shape,
                                               uint32_t fmt, const kvq_policy *pol,
                                               cudaStream_t stream)
{
    const kvq_status a0 = v_args(d_codes, d_scale, d_v, shape, fmt, pol);
    if (a0 != KVQ_OK) return a0;
    sage_scratch *s = NULL;
    kvq_status a = alloc_scratch(&s, stream);
    if (a != KVQ_OK) return a;
    return finish(sage_enqueue_v(d_codes, d_scale, d_v, 1u, shape, fmt, s->cmax, s->sc, &s->st, stream, NULL), s, flags,
                  stream);
}

extern "C" kvq_status kvq_cuda_sage_quantize_v_async(uint8_t *d_codes, float *d_scale,
                                                     kvq_cuda_result *d_result, const float *d_v,
                                                     const kvq_sage_shape *shape, uint32_t fmt,
                                                     const kvq_policy *pol, void *d_workspace,
                                                     size_t workspace_bytes, cudaStream_t stream)
{
    const kvq_status a0 = v_args(d_codes, d_scale, d_v, shape, fmt, pol);
    if (a0 != KVQ_OK) return a0;
    sage_scratch *s = NULL;
    const kvq_status a = async_ws(&s, d_result, d_workspace, workspace_bytes, stream);
    if (a != KVQ_OK) return a;
    return async_done(sage_enqueue_v(d_codes, d_scale, d_v, 1u, shape, fmt, s->cmax, s->sc, &s->st, stream, NULL),
                      d_result, s, stream);
}

extern "C" kvq_status kvq_cuda_sage_quantize_p(uint8_t *d_codes, float *d_rowsum, uint32_t *flags,
                                               const float *d_p, uint32_t rows, uint32_t cols,
                                               uint32_t fmt, const kvq_policy *pol,
                                               cudaStream_t stream)
{
    if (d_codes == NULL || d_rowsum == NULL || d_p == NULL) return KVQ_E_PARAM;
    if (kvq_policy_check(pol) != KVQ_OK) return KVQ_E_PARAM;
    if (fmt != KVQ_SAGE_FP8_E4M3 && fmt != KVQ_SAGE_FP8_E5M2) return KVQ_E_PARAM;
    if (rows < 1u || cols < 1u || rows > KVQ_SAGE_MAX_ROWCOL || cols > KVQ_SAGE_MAX_ROWCOL)
        return KVQ_E_SHAPE;
    const uint64_t n = (uint64_t)rows * cols;
    if (n > ((uint64_t)1 << 32)) return KVQ_E_SHAPE;
    sage_scratch *s = NULL;
    kvq_status a = alloc_scratch(&s, stream);
    if (a != KVQ_OK) return a;
    kvq_status enq = enqueue_check(&s->st, d_p, n, CHECK_PROB, stream);
    if (enq == KVQ_OK) {
        sage_pcode_kernel<<<grid_cap(n, 256), 256, 0, stream>>>(
            d_codes, d_p, &s->st, n, kvq_sage_fp8_bound(fmt), fmt == KVQ_SAGE_FP8_E5M2,
            pol->overflow == KVQ_OVERFLOW_NAN);
        sage_prow_kernel<<<nblocks(rows, 128), 128, 0, stream>>>(d_rowsum, d_p, &s->st, rows, cols);
        if (cudaGetLastError() != cudaSuccess) enq = KVQ_E_DEVICE;
    }
    return finish(enq, s, flags, stream);
}

/* ---- dequantization [SAGE-Q-08] ---------------------------------------------------- */

static kvq_status dq_args(const float *d_y, const uint8_t *d_codes, const float *d_scale,
                          const kvq_sage_shape *shape, const kvq_sage_qk *qk)
{
    if (d_y == NULL || d_codes == NULL || d_scale == NULL || shape == NULL || qk == NULL) return KVQ_E_PARAM;
    if (!kvq_sage_qk_ok(qk)) return KVQ_E_PARAM;
    if (!kvq_sage_shape_ok(shape)) return KVQ_E_SHAPE;
    return KVQ_OK;
}

/* Enqueue the three kernels and the status into *d_result (the zeroed scratch s). */
static kvq_status enqueue_dq(float *d_y, kvq_cuda_result *d_result, const uint8_t *d_codes, const float *d_scale,
                             const kvq_sage_shape *sh, const kvq_sage_qk *qk, sage_scratch *s, cudaStream_t stream)
{
    const uint64_t slots = kvq_sage_scale_count(sh, qk), n = kvq_sage_elems(sh);
    const float kmax = qk->bits == 4u ? 8.0f : 128.0f;          /* the largest |k| of a field: -8, -128 */
    sage_dq_scale_kernel<<<grid_cap(slots, 256), 256, 0, stream>>>(d_scale, &s->dq, slots, kmax);
    sage_dq_range_kernel<<<grid_cap(n, 256), 256, 0, stream>>>(d_codes, d_scale, &s->dq, *qk, sh->dim, n);
    sage_dq_kernel<<<grid_cap(n / 8u, 256), 256, 0, stream>>>(d_y, d_codes, d_scale, &s->dq, *qk, sh->dim, n / 8u,
                                                              aligned(d_y, 16) != 0);
    sage_dq_result_kernel<<<1, 1, 0, stream>>>(d_result, &s->dq);
    return cudaGetLastError() == cudaSuccess ? KVQ_OK : KVQ_E_DEVICE;
}

extern "C" kvq_status kvq_cuda_sage_dequantize_qk(float *d_y, const uint8_t *d_codes, const float *d_scale,
                                                  const kvq_sage_shape *shape, const kvq_sage_qk *qk,
                                                  cudaStream_t stream)
{
    const kvq_status a0 = dq_args(d_y, d_codes, d_scale, shape, qk);
    if (a0 != KVQ_OK) return a0;
    sage_scratch *s = NULL;
    const kvq_status a = alloc_scratch(&s, stream);
    if (a != KVQ_OK) return a;
    kvq_cuda_result r = {KVQ_E_DEVICE, 0};
    kvq_status enq = enqueue_dq(d_y, &s->st.result, d_codes, d_scale, shape, qk, s, stream);
    if (enq == KVQ_OK && cudaMemcpyAsync(&r, &s->st.result, sizeof r, cudaMemcpyDeviceToHost, stream) != cudaSuccess)
        enq = KVQ_E_DEVICE;
    (void)cudaFreeAsync(s, stream);
    const cudaError_t e2 = cudaStreamSynchronize(stream);
    if (enq != KVQ_OK) return enq;
    return e2 != cudaSuccess ? KVQ_E_DEVICE : (kvq_status)r.status;
}

extern "C" kvq_status kvq_cuda_sage_dequantize_qk_async(float *d_y, kvq_cuda_result *d_result,
                                                        const uint8_t *d_codes, const float *d_scale,
                                                        const kvq_sage_shape *shape, const kvq_sage_qk *qk,
                                                        void *d_workspace, size_t workspace_bytes,
                                                        cudaStream_t stream)
{
    const kvq_status a0 = dq_args(d_y, d_codes, d_scale, shape, qk);
    if (a0 != KVQ_OK) return a0;
    sage_scratch *s = NULL;
    const kvq_status a = async_ws(&s, d_result, d_workspace, workspace_bytes, stream);
    if (a != KVQ_OK) return a;
    return enqueue_dq(d_y, d_result, d_codes, d_scale, shape, qk, s, stream);
}
