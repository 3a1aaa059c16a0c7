/*
 * kivi.cu -- KIVI asymmetric group quantizer on CUDA, bit-exact to ref/fast/kivi.c.
 *
 * Every float operation is the one binary32 operation of the pinned sequence
 * (spec/kivi.md), written as an explicit round-to-nearest intrinsic
 * (__fsub_rn, __fdiv_rn, __fmaf_rn); the build adds -fmad=false and keeps
 * subnormals (no -ftz, no fast math).  Binary16 rounding uses the device
 * conversion __float2half_rn (cvt.rn.f16.f32), an independent implementation
 * of RN16 that the MPFR-computed vectors test; its overflow is decided here by
 * the policy exactly as kvq_round_f16 decides it [POL-F16-02].
 *
 * Kernels:
 *   kivi_quant_token_kernel    per-token groups, G a power of two <= 256: a warp a
 *                              1024-value tile staged through shared memory, 32
 *                              contiguous values a lane; codes leave as 16-byte stores
 *   kivi_quant_channel_kernel  per-channel groups, G in {32, 64, 128}: 32 tokens of
 *                              one group a thread, consecutive threads consecutive
 *                              channels; codes staged, stored as coalesced words
 *   kivi_quant_generic_kernel  any shape or alignment: one thread a group
 *   kivi_dequant_*_kernel      the same split for dequantization
 *   kivi_dequant_check_kernel  metadata and overflow pre-pass of dequantization
 *   kivi_commit_kernel         copies quantizer scratch to the outputs iff no error
 *   kivi_finish_kernel         status and flags of the call into a kvq_cuda_result, then
 *                              the state cleared; a programmatic dependent of the call's
 *                              last kernel [KIVI-DEV-09]
 *
 * Nothing is written to the caller's outputs on an error [POL-NF-01]: the
 * quantizer writes scratch and commits it only when the device-side error
 * word is clear; dequantization checks first and its writing kernel returns
 * at once when the check failed.  KVQ_CUDA_DIRECT gives that up for speed: the
 * quantizer writes the outputs in its one pass, the dequantizer's writing kernels
 * test their groups themselves with no pre-pass [KIVI-DEV-10]; the status is the
 * same, the outputs on an error unspecified.  Packed-code index arithmetic goes through
 * include/kvq_layout.h only.
 */
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kvq.h"
#include "kvq_cuda.h"

#include "kivi_dev.cuh" /* the pinned arithmetic, one function per step of ref/fast/kivi.c */
#include "kvq_cuda_check.h" /* the workspace checks and handling shared with PKV */
#include "dependent.cuh"    /* the finish kernel as a programmatic dependent [KIVI-DEV-09] */

#define WS_STATE  KVQ_CUDA_WS_STATE
#define WS_RESULT KVQ_CUDA_WS_RESULT
#define WS_HEAD   KVQ_CUDA_WS_HEAD

/* 1: the quantize kernels' rare blocks run in a rare pass out of line (tok_rare,
 * ch_rare) [KIVI-DEV-05]; 0: inline in the group loop, as before. */
#ifndef KVQ_KIVI_RAREPASS
#define KVQ_KIVI_RAREPASS 1
#endif
/* Thread blocks an SM the quantize kernels are compiled for (__launch_bounds__'
 * second argument): 8, so at most 64 registers a thread and 32 warps an SM
 * [KIVI-DEV-05] (the rare blocks' values spill; the common path needs 55).
 * A benchmark's build may ask for another (gpu/kivi/rules.mk); 1: no bound,
 * the kernels of before (95 registers, 5 blocks, 20 warps an SM), and of the
 * KVQ_KIVI_BASELINE build. */
#ifndef KVQ_KIVI_QMINB
#define KVQ_KIVI_QMINB (KVQ_KIVI_BASELINE ? 1 : 8)
#endif
#if KVQ_KIVI_QMINB > 1
#define KIVI_QBOUNDS(t) __launch_bounds__(t, KVQ_KIVI_QMINB)
#else
#define KIVI_QBOUNDS(t) __launch_bounds__(t)
#endif
/* 1: a call's last thread block writes its status and flags (kivi_finish_kernel's
 * work) and the state takes one memset, not two [KIVI-DEV-07]; 0: the memsets and
 * the finish kernel of before. */
#ifndef KVQ_KIVI_INFIN
#define KVQ_KIVI_INFIN 0  /* measured slower: the per-block fence and count [KIVI-DEV-07] */
#endif
/* 1: the dequantize pre-pass four groups a thread (kivi_dequant_check4_kernel) [KIVI-DEV-06]. */
#ifndef KVQ_KIVI_CHECK4
#define KVQ_KIVI_CHECK4 (KVQ_KIVI_BASELINE ? 0 : 1)
#endif
/* 1: the checked quantizer's scratch stored at L2's evict-last priority [KIVI-DEV-08]. */
#ifndef KVQ_KIVI_L2KEEP
#define KVQ_KIVI_L2KEEP 0  /* measured: no change [KIVI-DEV-08] */
#endif
/* Blocks of the call that have finished: a word of the state region after
 * kvq_dev_state (KVQ_CUDA_WS_STATE is 64 bytes), zeroed with it. */
#define WS_DONE_OFF 16u
#define WS_INIT_BYTES 24u

/* Stores of the checked quantizer's scratch with keep: at L2's evict-last priority
 * (createpolicy), so that the copy-out finds it in L2 rather than in memory
 * [KIVI-DEV-08]; plain stores otherwise. */
__device__ __forceinline__ void st_keep(uint4 *p, uint4 v, bool keep)
{
    if (keep)
        asm volatile("{\n\t.reg .b64 pol;\n\tcreatepolicy.fractional.L2::evict_last.b64 pol, 1.0;\n\t"
                     "st.global.L2::cache_hint.v4.u32 [%0], {%1, %2, %3, %4}, pol;\n\t}"
                     ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w) : "memory");
    else
        *p = v;
}
__device__ __forceinline__ void st_keep(uint32_t *p, uint32_t v, bool keep)
{
    if (keep)
        asm volatile("{\n\t.reg .b64 pol;\n\tcreatepolicy.fractional.L2::evict_last.b64 pol, 1.0;\n\t"
                     "st.global.L2::cache_hint.u32 [%0], %1, pol;\n\t}" ::"l"(p), "r"(v) : "memory");
    else
        *p = v;
}
__device__ __forceinline__ void st_keep(float *p, float v, bool keep)
{
    st_keep((uint32_t *)p, __float_as_uint(v), keep);
}

/* The call's status in the reference's order from its final state (as
 * kivi_finish_kernel): key the lowest bad group's g*16 + status, NO_KEY if none. */
__device__ __forceinline__ void dev_result(kvq_cuda_result *res, unsigned long long key,
                                           uint32_t err, uint32_t flags)
{
    uint32_t status = KVQ_OK;
    if (key != NO_KEY) status = (uint32_t)(key & 15u);
    else if (err & ERR_NONFINITE) status = KVQ_E_NONFINITE;
    else if (err & ERR_RANGE) status = KVQ_E_RANGE;
    res->status = status;
    res->flags = status == KVQ_OK ? flags : 0u;
}

/* The end of a call's kernel [KIVI-DEV-07]: every thread of every block calls it
 * once, after its last dev_publish; the block that finishes last (a counter in
 * the state, the fence-then-count order of a grid reduction) reads the final
 * state and writes the result.  key_inv: the state's key is stored inverted
 * (0: none; atomicMax of ~key is atomicMin of key), so that zero bytes are the
 * initial state. */
__device__ __forceinline__ void dev_finish_last(kvq_dev_state *st, kvq_cuda_result *res, bool key_inv)
{
    __syncthreads();                     /* every warp of the block has published */
    if (threadIdx.x == 0u) {
        unsigned int *done = (unsigned int *)((uint8_t *)st + WS_DONE_OFF);
        __threadfence();
        if (atomicAdd(done, 1u) == gridDim.x - 1u) {
            __threadfence();
            const volatile kvq_dev_state *v = st;
            const unsigned long long k = v->key;
            dev_result(res, key_inv ? ~k : NO_KEY, v->err, v->flags);
        }
    }
}

/* ---- quantize ----------------------------------------------------------- */

/* Per-token groups, G = 2^LG, 8 <= G <= 256.  A warp takes a tile of 1024
 * consecutive values; lane l owns values 32l..32l+31 of it, i.e. 32/G whole
 * groups (G <= 32) or one 32-value part of a group shared by G/32 consecutive
 * lanes (G > 32; min and max meet by shuffles).  The metadata of a group is
 * then computed once per 32 values or more, not once per 4 values (it costs
 * two correctly rounded divisions' worth of instructions).  The tile goes
 * through shared memory so that every global load is a coalesced 16-byte load
 * of the warp (512 contiguous bytes an instruction): lane l loads float4 slots
 * k*32+l, then reads back its own slots 8l..8l+7.  Slot s sits at
 * s ^ ((s>>3)&7), so neither the stores nor the reads of a quarter-warp hit
 * one bank group twice.  The codes are staged back in the same buffer and
 * leave as 16-byte stores covering the warp's contiguous 128*BITS code bytes. */
#if KVQ_KIVI_BASELINE
/* ---- the per-token quantize kernel of before (benchmarks only): one tile a warp ---- */
#define TOK_WARPS 4
template <int BITS, int LG>
__global__ void __launch_bounds__(TOK_WARPS * 32)
kivi_quant_token_kernel(const float *__restrict__ x, uint8_t *__restrict__ codes,
                        float *__restrict__ scale, float *__restrict__ zero,
                        kvq_dev_state *st, kvq_kivi_shape sh, kvq_policy pol, uint64_t n,
                        kvq_cuda_result *res, int keep)
{
    (void)res;                           /* the launcher's finish kernel ends the call */
    (void)keep;
    constexpr uint32_t G = 1u << LG;
    constexpr uint32_t GV = G < 32u ? G : 32u;   /* values of one group a lane holds */
    constexpr uint32_t NG = 32u / GV;            /* groups (or parts) a lane holds */
    constexpr uint32_t SUBT = G > 32u ? G / 32u : 1u; /* lanes a group */
    constexpr uint32_t GB = G * BITS / 8u;       /* = kvq_kivi_group_bytes(&sh) */
    __shared__ float4 tile_s[TOK_WARPS][256];
    const float cmax = (float)kvq_code_max(BITS);
    const bool daz = pol.subnormal == KVQ_SUBNORMAL_DAZ;
    const bool away = pol.ties == KVQ_TIES_AWAY;
    const bool nanpol = pol.overflow == KVQ_OVERFLOW_NAN;
    const uint32_t lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
    const uint64_t tbase = ((uint64_t)blockIdx.x * TOK_WARPS + warp) * 1024u;
    if (tbase >= n) return;              /* warp-uniform; no block barrier below */
    float4 *tile = tile_s[warp];
    const uint64_t e0 = tbase + lane * 32u; /* first value of this lane */
    uint32_t f = 0, err = 0;
    float v[32];
    {
        float4 a[8];
#pragma unroll
        for (int k = 0; k < 8; k++) {    /* 8 independent loads in flight */
            const uint64_t e = tbase + (uint64_t)(k * 32 + lane) * 4u;
            a[k] = e < n ? __ldcs((const float4 *)(x + e)) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        }
#pragma unroll
        for (int k = 0; k < 8; k++) {
            const uint32_t s = (uint32_t)k * 32u + lane;
            tile[s ^ ((s >> 3) & 7u)] = a[k];
        }
        __syncwarp();
#pragma unroll
        for (int k = 0; k < 8; k++) {
            const float4 b = tile[(lane * 8u + (uint32_t)k) ^ (lane & 7u)];
            v[4 * k] = b.x; v[4 * k + 1] = b.y; v[4 * k + 2] = b.z; v[4 * k + 3] = b.w;
        }
    }
    /* Values past n are zeros of inactive groups (n is a multiple of G and of
     * 8, so a group or a float4 is wholly in or out); their flags are dropped. */
    uint32_t w[BITS];
#pragma unroll
    for (int k = 0; k < BITS; k++) w[k] = 0;
    const uint32_t i0 = G > 32u ? (lane % SUBT) * 32u : 0u; /* element of v[0] in its group */
    const uint32_t first = kvq_code_byte(i0, BITS);
#pragma unroll
    for (uint32_t j = 0; j < NG; j++) {
        const bool act = e0 + j * GV < n;
        uint32_t fh = 0, eh = 0;
        float mn, mx;
#pragma unroll
        for (uint32_t k = 0; k < GV; k++) {
            float xv = v[j * GV + k];
            if (!isfinite(xv)) eh |= ERR_NONFINITE; /* [POL-NF-01] */
            xv = dev_read_input(xv, daz, fh);
            v[j * GV + k] = xv;
            if (k == 0u) {
                mn = mx = xv;
            } else {
                mn = fminf(mn, xv);
                mx = fmaxf(mx, xv);
            }
        }
        /* min/max are exact in any order; the sign of a zero extreme cannot
         * reach the stored metadata (z of a zero min is +0; r and s of zeros
         * are exact). */
#pragma unroll
        for (uint32_t o = SUBT >> 1; o > 0u; o >>= 1) {
            mn = fminf(mn, __shfl_xor_sync(0xFFFFFFFFu, mn, (int)o));
            mx = fmaxf(mx, __shfl_xor_sync(0xFFFFFFFFu, mx, (int)o));
        }
        float s, z;
        dev_group_meta(s, z, fh, eh, mn, mx, cmax, sh.meta, nanpol);
        if (s != 0.0f) {                 /* zero range: every code 0 [POL-ZR-01] */
            const float rcp = __frcp_rn(s);
#pragma unroll
            for (uint32_t k = 0; k < GV; k++) {
                /* bit of element i0+k within the lane's code bytes: group j's
                 * bytes start at byte j*GB of them, element i0's at `first` */
                const uint32_t pos = 8u * j * GB + kvq_code_word_shift(i0 + k, BITS, first);
                w[pos / 32u] |= dev_code(v[j * GV + k], s, rcp, z, cmax, away, fh) << (pos % 32u);
            }
        }
        if (act) {
            const uint64_t g = (e0 + j * GV) >> LG;
            if (i0 == 0u) {
                scale[g] = s;
                zero[g] = z;
            }
            f |= fh;
            err |= eh;
        }
    }
    /* Stage the codes: lane l's LB bytes at byte l*LB of the warp's block. */
    __syncwarp();                        /* every lane has read its values */
    uint32_t *cw = (uint32_t *)tile;
#pragma unroll
    for (int k = 0; k < BITS; k++) cw[lane * BITS + (uint32_t)k] = w[k];
    __syncwarp();
    /* the warp's code bytes: groups tbase/G .. , contiguous [LAY-PACK-01] */
    uint8_t *out = codes + kvq_kivi_group_code_offset(&sh, tbase >> LG);
    if (tbase + 1024u <= n) {
#pragma unroll
        for (uint32_t u = lane; u < 8u * BITS; u += 32u)
            ((uint4 *)out)[u] = ((const uint4 *)tile)[u];
    } else {                             /* the last, partial tile: active groups only */
        const uint8_t *cb = (const uint8_t *)tile;
        for (uint32_t b = lane; b < 128u * BITS; b += 32u) {
            /* byte b is code byte b % GB of the tile's group b / GB */
            if (tbase + (uint64_t)(b / GB) * G < n) out[b] = cb[b];
        }
    }
    dev_publish(st, f, err);
}
#else
#define TOK_WARPS 4
/* A lane's NG groups (or parts) of GV values, v[] (32 values from element e0 on):
 * extremes (shuffled across the SUBT lanes of a group), metadata, codes packed
 * into w, scale and zero stored by the group's first lane; flags and errors of
 * the active groups into f, err.  RARE = false: the common path
 * (dev_group_read_common, dev_group_codes_common) -- returns true when a group
 * of the lane needs a rare block, whose flags, metadata and codes are then the
 * rare pass's; RARE = true: the whole sequence, rare blocks included (returns
 * false). */
template <int BITS, int LG, bool RARE>
__device__ __forceinline__ bool tok_groups(float *v, uint32_t (&w)[BITS], uint32_t &f, uint32_t &err,
                                           float *__restrict__ scale, float *__restrict__ zero,
                                           uint64_t e0, uint64_t n, uint32_t lane, uint32_t meta,
                                           bool daz, bool away, bool nanpol, uint32_t &nearm,
                                           float &s0, float &z0, bool keep = false)
{
    constexpr uint32_t G = 1u << LG;
    constexpr uint32_t GV = G < 32u ? G : 32u;   /* values of one group a lane holds */
    constexpr uint32_t NG = 32u / GV;            /* groups (or parts) a lane holds */
    constexpr uint32_t SUBT = G > 32u ? G / 32u : 1u; /* lanes a group */
    constexpr uint32_t GB = G * BITS / 8u;       /* = kvq_kivi_group_bytes(&sh) */
    const float cmax = (float)kvq_code_max(BITS);
    const uint32_t i0 = G > 32u ? (lane % SUBT) * 32u : 0u; /* element of v[0] in its group */
    const uint32_t first = kvq_code_byte(i0, BITS);
    bool rare = false;
    nearm = 0;
#pragma unroll
    for (int k = 0; k < BITS; k++) w[k] = 0;
#pragma unroll
    for (uint32_t j = 0; j < NG; j++) {
        const bool act = e0 + j * GV < n;
        uint32_t fh = 0, eh = 0;
        float mn, mx;
        if (RARE) dev_group_read<GV>(&v[j * GV], daz, fh, eh, mn, mx); /* [POL-NF-01] [POL-SN-01] */
        else rare |= dev_group_read_common<GV>(&v[j * GV], mn, mx);
        /* min/max are exact in any order; the sign of a zero extreme cannot
         * reach the stored metadata (z of a zero min is +0; r and s of zeros
         * are exact). */
#pragma unroll
        for (uint32_t o = SUBT >> 1; o > 0u; o >>= 1) {
            mn = fminf(mn, __shfl_xor_sync(0xFFFFFFFFu, mn, (int)o));
            mx = fmaxf(mx, __shfl_xor_sync(0xFFFFFFFFu, mx, (int)o));
        }
        float s, z;
        dev_group_meta(s, z, fh, eh, mn, mx, cmax, meta, nanpol);
        uint32_t mb[GV];                 /* MAGIC_RND_BITS + code [KIVI-DEV-01] */
        if (RARE) {
            dev_group_codes<GV>(mb, &v[j * GV], mn, mx, s, z, cmax, away, fh, eh);
        } else {
            uint32_t nm;
            rare |= dev_group_codes_common<GV>(mb, &v[j * GV], mn, mx, s, z, cmax, nm);
            nearm |= nm << (j * GV);         /* bit k: value v[k] */
        }
        s0 = s;                          /* the group's, when the lane holds one (NG = 1) */
        z0 = z;
#pragma unroll
        for (uint32_t k = 0; k < GV; k++) {
            /* bit of element i0+k within the lane's code bytes: group j's
             * bytes start at byte j*GB of them, element i0's at `first`;
             * fields are disjoint, so adding is OR-ing */
            const uint32_t pos = 8u * j * GB + kvq_code_word_shift(i0 + k, BITS, first);
            w[pos / 32u] += (mb[k] - MAGIC_RND_BITS) << (pos % 32u);
        }
        if (act) {
            const uint64_t g = (e0 + j * GV) >> LG;
            if (i0 == 0u) {
                st_keep(&scale[g], s, keep);
                st_keep(&zero[g], z, keep);
            }
            f |= fh;
            err |= eh;
        }
    }
    return rare;
}

/* The rare pass of a warp's tile [KIVI-DEV-05]: every lane reads its 32 values
 * again (from L2, most likely) and recomputes its groups whole, rare blocks
 * included; its code words replace the common path's in cw (lane l's at
 * cw[l*BITS ..]), its scale and zero are stored again (the same, but where DAZ
 * flushed a value), and its flags and errors replace the common path's: the
 * result is f | err << 8.  Out of line, called by every lane of the warp when
 * one needs it: its registers and code stay out of the common path. */
template <int BITS, int LG>
__device__ __noinline__ uint32_t tok_rare(const float *__restrict__ x, float *__restrict__ scale,
                                          float *__restrict__ zero, uint32_t *cw, uint64_t tbase,
                                          uint64_t n, uint32_t meta, kvq_policy pol)
{
    const uint32_t lane = threadIdx.x & 31u;
    const uint64_t e0 = tbase + lane * 32u;
    float v[32];
#pragma unroll
    for (int k = 0; k < 8; k++) {        /* n is a multiple of 8: a float4 is wholly in or out */
        const float4 a = e0 + 4u * k < n ? *(const float4 *)(x + e0 + 4u * k)
                                         : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        v[4 * k] = a.x; v[4 * k + 1] = a.y; v[4 * k + 2] = a.z; v[4 * k + 3] = a.w;
    }
    uint32_t w[BITS], f = 0, err = 0, nearm;
    float s0, z0;
    tok_groups<BITS, LG, true>(v, w, f, err, scale, zero, e0, n, lane, meta,
                               pol.subnormal == KVQ_SUBNORMAL_DAZ, pol.ties == KVQ_TIES_AWAY,
                               pol.overflow == KVQ_OVERFLOW_NAN, nearm, s0, z0);
#pragma unroll
    for (int k = 0; k < BITS; k++) cw[lane * BITS + (uint32_t)k] = w[k];
    return f | err << 8;
}

/* The near ties of a lane's fast groups (bits of nearm: value v[k] = x[e0 + k]),
 * each redone as dev_group_codes redoes it (dev_near_code) and its field of the
 * lane's staged code words cwl replaced: value k's code sits at bit k*BITS of the
 * lane's code bytes.  The scale and offset: the lane's one group's (s0, z0), or,
 * when it holds several (G < 32), those it stored.  True (nothing changed after
 * that value) when a value is NaN: the rare pass then recomputes the tile. */
template <int BITS, int LG>
__device__ __forceinline__ bool tok_near(uint32_t *cwl, uint32_t nearm, const float *__restrict__ x,
                                         const float *scale, const float *zero, uint64_t e0,
                                         float s0, float z0, bool away, uint32_t &f)
{
    const float cmax = (float)kvq_code_max(BITS);
    while (nearm != 0u) {
        const uint32_t k = (uint32_t)__ffs((int)nearm) - 1u;
        nearm &= nearm - 1u;
        const float xv = x[e0 + k];
        if (xv != xv) return true;       /* NaN [POL-NF-01]: the rare pass */
        float s = s0, z = z0;
        if ((1u << LG) < 32u) {          /* the lane stored its groups' (i0 = 0) */
            const uint64_t g = (e0 + k) >> LG;
            s = scale[g];
            z = zero[g];
        }
        const uint32_t r = dev_near_code(xv, s, z, cmax, away);
        f |= r >> 8;
        const uint32_t p = k * (uint32_t)BITS;
        const uint32_t m = kvq_code_max(BITS) << (p % 32u);
        cwl[p / 32u] = (cwl[p / 32u] & ~m) | ((r & 0xFFu) << (p % 32u));
    }
    return false;
}

template <int BITS, int LG>
__device__ __forceinline__ void tok_tile(const float *__restrict__ x, uint8_t *__restrict__ codes,
                                         float *__restrict__ scale, float *__restrict__ zero,
                                         kvq_dev_state *st, const kvq_kivi_shape &sh,
                                         const kvq_policy &pol, uint64_t n, float4 *tile,
                                         uint64_t tbase, bool keep)
{
    constexpr uint32_t G = 1u << LG;
    constexpr uint32_t GB = G * BITS / 8u;       /* = kvq_kivi_group_bytes(&sh) */
    const bool daz = pol.subnormal == KVQ_SUBNORMAL_DAZ;
    const bool away = pol.ties == KVQ_TIES_AWAY;
    const bool nanpol = pol.overflow == KVQ_OVERFLOW_NAN;
    const uint32_t lane = threadIdx.x & 31u;
    const uint64_t e0 = tbase + lane * 32u; /* first value of this lane */
    uint32_t f = 0, err = 0;
    float v[32];
    {
        float4 a[8];
#pragma unroll
        for (int k = 0; k < 8; k++) {    /* 8 independent loads in flight */
            const uint64_t e = tbase + (uint64_t)(k * 32 + lane) * 4u;
            a[k] = KVQ_KIVI_HOTCOUNT || e < n ? __ldcs((const float4 *)(x + e))
                                              : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        }
#pragma unroll
        for (int k = 0; k < 8; k++) {
            const uint32_t s = (uint32_t)k * 32u + lane;
            tile[s ^ ((s >> 3) & 7u)] = a[k];
        }
        __syncwarp();
#pragma unroll
        for (int k = 0; k < 8; k++) {
            const float4 b = tile[(lane * 8u + (uint32_t)k) ^ (lane & 7u)];
            v[4 * k] = b.x; v[4 * k + 1] = b.y; v[4 * k + 2] = b.z; v[4 * k + 3] = b.w;
        }
    }
    /* Values past n are zeros of inactive groups (n is a multiple of G and of
     * 8, so a group or a float4 is wholly in or out); their flags are dropped. */
    uint32_t w[BITS], nearm;
    float s0, z0;
    bool rare = tok_groups<BITS, LG, !KVQ_KIVI_RAREPASS>(v, w, f, err, scale, zero, e0, n, lane,
                                                         sh.meta, daz, away, nanpol, nearm, s0, z0, keep);
    /* Stage the codes: lane l's LB bytes at byte l*LB of the warp's block. */
    __syncwarp();                        /* every lane has read its values */
    uint32_t *cw = (uint32_t *)tile;
#pragma unroll
    for (int k = 0; k < BITS; k++) cw[lane * BITS + (uint32_t)k] = w[k];
    if (KVQ_KIVI_RAREPASS && !KVQ_KIVI_HOTCOUNT) {
        if (nearm != 0u && !rare)        /* near ties: about one value in 2^11 */
            rare = tok_near<BITS, LG>(cw + lane * BITS, nearm, x, scale, zero, e0, s0, z0, away, f);
        if (__any_sync(0xFFFFFFFFu, rare)) { /* zeros, subnormals, infinities, NaNs, off-path groups */
            const uint32_t r = tok_rare<BITS, LG>(x, scale, zero, cw, tbase, n, sh.meta, pol);
            f = r & 0xFFu;
            err = r >> 8;
        }
    }
    __syncwarp();
    /* the warp's code bytes: groups tbase/G .. , contiguous [LAY-PACK-01] */
    uint8_t *out = codes + kvq_kivi_group_code_offset(&sh, tbase >> LG);
    if (KVQ_KIVI_HOTCOUNT || tbase + 1024u <= n) { /* the counted path: whole tiles */
#pragma unroll
        for (uint32_t u = lane; u < 8u * BITS; u += 32u)
            st_keep(&((uint4 *)out)[u], ((const uint4 *)tile)[u], keep);
    } else {                             /* the last, partial tile: active groups only */
        const uint8_t *cb = (const uint8_t *)tile;
        for (uint32_t b = lane; b < 128u * BITS; b += 32u) {
            /* byte b is code byte b % GB of the tile's group b / GB */
            if (tbase + (uint64_t)(b / GB) * G < n) out[b] = cb[b];
        }
    }
    dev_publish(st, f, err);
}

/* A warp a tile of 1024 values (tok_tile); with res, the call's end [KIVI-DEV-07]. */
template <int BITS, int LG>
__global__ void KIVI_QBOUNDS(TOK_WARPS * 32)
kivi_quant_token_kernel(const float *__restrict__ x, uint8_t *__restrict__ codes,
                        float *__restrict__ scale, float *__restrict__ zero,
                        kvq_dev_state *st, kvq_kivi_shape sh, kvq_policy pol, uint64_t n,
                        kvq_cuda_result *res, int keep)
{
    cudaTriggerProgrammaticLaunchCompletion();   /* the finish kernel may be placed [KIVI-DEV-09] */
    __shared__ float4 tile_s[TOK_WARPS][256];
    const uint32_t warp = threadIdx.x >> 5;
    const uint64_t tbase = ((uint64_t)blockIdx.x * TOK_WARPS + warp) * 1024u;
    if (tbase < n)                       /* warp-uniform; only the last block has idle warps */
        tok_tile<BITS, LG>(x, codes, scale, zero, st, sh, pol, n, tile_s[warp], tbase, keep != 0);
    if (res != NULL) dev_finish_last(st, res, false);
}
#endif /* KVQ_KIVI_BASELINE */

/* A thread's part of its group (32 values v[], elements i0 .. i0+31): extremes
 * (met in shared memory smn/smx when SUB > 1: every thread of the block calls
 * this), metadata, codes staged in sw, scale and zero stored by sub 0; flags and
 * errors into f, err.  RARE = false: the common path, true when the thread's
 * group needs a rare block (whose results are then the rare pass's); RARE =
 * true: the whole sequence [KIVI-DEV-05]. */
template <int BITS, int G, bool RARE>
__device__ __forceinline__ bool ch_group(float *v, uint32_t &f, uint32_t &err, float (*smn)[32],
                                         float (*smx)[32], uint32_t *sw, float *__restrict__ scale,
                                         float *__restrict__ zero, uint64_t g, bool act,
                                         uint32_t meta, kvq_policy pol, uint32_t &nearm,
                                         float &so, float &zo, bool keep = false)
{
    constexpr int SUB = G / 32;          /* warps a group */
    const float cmax = (float)kvq_code_max(BITS);
    const bool daz = pol.subnormal == KVQ_SUBNORMAL_DAZ;
    const uint32_t lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
    const uint32_t sub = warp % SUB, set = warp / SUB;
    const uint32_t i0 = sub * 32u;       /* first element of this thread */
    bool rare = false;
    float mn, mx;
    if (RARE) dev_group_read<32>(v, daz, f, err, mn, mx); /* [POL-NF-01] [POL-SN-01] */
    else rare = dev_group_read_common<32>(v, mn, mx);
    if (SUB > 1) {                       /* min/max are exact in any order */
        smn[warp][lane] = mn;
        smx[warp][lane] = mx;
        __syncthreads();
#pragma unroll
        for (int k = 0; k < SUB; k++) {
            mn = fminf(mn, smn[set * SUB + k][lane]);
            mx = fmaxf(mx, smx[set * SUB + k][lane]);
        }
    }
    float s, z;
    dev_group_meta(s, z, f, err, mn, mx, cmax, meta, pol.overflow == KVQ_OVERFLOW_NAN);
    const uint32_t first = kvq_code_byte(i0, BITS);
    uint32_t w[BITS];                    /* 32 codes of BITS bits */
#pragma unroll
    for (int k = 0; k < BITS; k++) w[k] = 0;
    {
        uint32_t mb[32];                 /* MAGIC_RND_BITS + code [KIVI-DEV-01] */
        nearm = 0;
        if (RARE) dev_group_codes<32>(mb, v, mn, mx, s, z, cmax, pol.ties == KVQ_TIES_AWAY, f, err);
        else rare |= dev_group_codes_common<32>(mb, v, mn, mx, s, z, cmax, nearm);
        so = s;
        zo = z;
#pragma unroll
        for (int i = 0; i < 32; i++) {
            /* bit of element i0+i within the thread's 4*BITS code bytes (disjoint
             * fields: adding is OR-ing) */
            const uint32_t pos = kvq_code_word_shift(i0 + (uint32_t)i, BITS, first);
            w[pos / 32u] += (mb[i] - MAGIC_RND_BITS) << (pos % 32u);
        }
    }
    /* Stage the codes in shared memory: the block's contiguous code bytes
     * (groups gb0 .. gb0 + 128/SUB - 1) leave as coalesced 32-bit words: a
     * thread's own 4*BITS bytes are only part of a 32-byte sector when G > 32,
     * and partial-sector stores from different warps cost L2 and DRAM work.
     * Word u of the block sits at u + u/32 (one pad word in 32): the stores
     * of a warp, GB/4 words apart, then fall in distinct banks. */
    constexpr uint32_t GB = G * BITS / 8u;       /* = kvq_kivi_group_bytes(&sh) */
    const uint32_t gl = set * 32u + lane;        /* group within the block */
#pragma unroll
    for (int k = 0; k < BITS; k++) {
        const uint32_t u = (gl * GB + first) / 4u + (uint32_t)k; /* byte gl*GB+first on */
        sw[u + u / 32u] = w[k];
    }
    if (act && sub == 0u) {
        st_keep(&scale[g], s, keep);
        st_keep(&zero[g], z, keep);
    }
    return rare;
}

/* The thread's values of group g from element i0 on (zeros when g is past the end). */
template <int G>
__device__ __forceinline__ void ch_load(float *v, const float *__restrict__ x, const kvq_kivi_shape &sh,
                                        uint64_t g, uint32_t i0, bool act)
{
    if (act) {
        const uint64_t stride = kvq_kivi_group_stride(&sh);
        const float *p = x + kvq_kivi_elem_index(&sh, g, i0);
#pragma unroll
        for (int i = 0; i < 32; i++) v[i] = __ldcs(p + (uint64_t)i * stride);
    } else {
#pragma unroll
        for (int i = 0; i < 32; i++) v[i] = 0.0f;
    }
}

/* The rare pass of a block [KIVI-DEV-05]: every thread reads its values again and
 * recomputes its part of its group whole, rare blocks included; its code words
 * replace the common path's in sw, scale and zero are stored again, and the
 * thread's flags and errors (0 for an idle thread) come back as f | err << 8.
 * Out of line, called by every thread of the block when one needs it. */
template <int BITS, int G>
__device__ __noinline__ uint32_t ch_rare(const float *__restrict__ x, float *__restrict__ scale,
                                         float *__restrict__ zero, uint32_t *sw, float (*smn)[32],
                                         float (*smx)[32], kvq_kivi_shape sh, kvq_policy pol,
                                         uint64_t g, bool act)
{
    const uint32_t i0 = (threadIdx.x >> 5) % (G / 32) * 32u;
    float v[32];
    ch_load<G>(v, x, sh, g, i0, act);
    uint32_t f = 0, err = 0, nearm;
    float so, zo;
    ch_group<BITS, G, true>(v, f, err, smn, smx, sw, scale, zero, g, act, sh.meta, pol, nearm, so, zo);
    return act ? f | err << 8 : 0u;
}

/* Per-channel groups, G in {32, 64, 128}.  A block is 4 warps; SUB = G/32
 * warps share 32 groups (32 consecutive channels): lane l of each takes group
 * set*32 + l, warp `sub` its tokens 32*sub .. 32*sub+31, so a warp's loads of a
 * token row are one coalesced 128-byte line.  Min and max meet in shared memory;
 * each thread's 4*BITS code bytes are staged, the block's stored as words. */
template <int BITS, int G>
__global__ void KIVI_QBOUNDS(128)
kivi_quant_channel_kernel(const float *__restrict__ x, uint8_t *__restrict__ codes,
                          float *__restrict__ scale, float *__restrict__ zero,
                          kvq_dev_state *st, kvq_kivi_shape sh, kvq_policy pol, uint64_t ng,
                          kvq_cuda_result *res, int keep)
{
    cudaTriggerProgrammaticLaunchCompletion();   /* the finish kernel may be placed [KIVI-DEV-09] */
    constexpr int SUB = G / 32;          /* warps a group */
    constexpr int SETS = 4 / SUB;        /* sets of 32 groups a block */
    constexpr uint32_t GB = G * BITS / 8u;       /* = kvq_kivi_group_bytes(&sh) */
    constexpr uint32_t NWB = 128u * BITS;        /* code words of a block */
    __shared__ float smn[4][32], smx[4][32];
    __shared__ uint32_t sw[NWB + NWB / 32u];
    const uint32_t lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
    const uint32_t sub = warp % SUB, set = warp / SUB;
    const uint64_t g = ((uint64_t)blockIdx.x * SETS + set) * 32u + lane;
    const bool act = KVQ_KIVI_HOTCOUNT || g < ng; /* the counted path: whole blocks */
    uint32_t f = 0, err = 0;
    float v[32];
    ch_load<G>(v, x, sh, g, sub * 32u, act);
    uint32_t nearm;
    float so, zo;
#if KVQ_KIVI_BASELINE || !KVQ_KIVI_RAREPASS
    ch_group<BITS, G, true>(v, f, err, smn, smx, sw, scale, zero, g, act, sh.meta, pol, nearm, so, zo);
#else
    bool rare = ch_group<BITS, G, false>(v, f, err, smn, smx, sw, scale, zero, g, act, sh.meta, pol,
                                         nearm, so, zo, keep != 0);
    if (!KVQ_KIVI_HOTCOUNT) {
        if (nearm != 0u && !rare) {      /* near ties of a fast group: about one value in 2^11 */
            /* value i = x[p + i*stride], its code at bit i*BITS of the thread's words in sw */
            const uint64_t stride = kvq_kivi_group_stride(&sh);
            const float *p = x + kvq_kivi_elem_index(&sh, g, sub * 32u);
            const uint32_t u0 = ((set * 32u + lane) * GB + kvq_code_byte(sub * 32u, BITS)) / 4u;
            const float cmax = (float)kvq_code_max(BITS);
            while (nearm != 0u) {
                const uint32_t i = (uint32_t)__ffs((int)nearm) - 1u;
                nearm &= nearm - 1u;
                const float xv = p[(uint64_t)i * stride];
                if (xv != xv) {          /* NaN [POL-NF-01]: the rare pass */
                    rare = true;
                    break;
                }
                const uint32_t r = dev_near_code(xv, so, zo, cmax, pol.ties == KVQ_TIES_AWAY);
                f |= r >> 8;
                const uint32_t b = i * (uint32_t)BITS, u = u0 + b / 32u;
                const uint32_t m = kvq_code_max(BITS) << (b % 32u);
                sw[u + u / 32u] = (sw[u + u / 32u] & ~m) | ((r & 0xFFu) << (b % 32u));
            }
        }
        if (__syncthreads_or(rare)) {    /* block-uniform: zeros, subnormals, infinities, NaNs, off-path groups */
            const uint32_t r = ch_rare<BITS, G>(x, scale, zero, sw, smn, smx, sh, pol, g, act);
            f = r & 0xFFu;
            err = r >> 8;
        }
    }
#endif
    if (!act) f = err = 0;               /* idle threads report nothing */
    __syncthreads();
    const uint64_t gb0 = (uint64_t)blockIdx.x * SETS * 32u;
    uint32_t *out = (uint32_t *)(codes + kvq_kivi_group_code_offset(&sh, gb0));
    const uint64_t nact = ng - gb0 < (uint64_t)SETS * 32u ? ng - gb0 : (uint64_t)SETS * 32u;
#pragma unroll
    for (uint32_t r = 0; r < BITS; r++) {
        const uint32_t u = r * 128u + threadIdx.x;
        if ((u * 4u) / GB < nact) st_keep(&out[u], sw[u + u / 32u], keep != 0); /* word u is in group 4u/GB */
    }
    dev_publish(st, f, err);
    if (res != NULL) dev_finish_last(st, res, false); /* [KIVI-DEV-07] */
}

/* Any shape, any alignment: one thread a group, two reads of the group (min/max,
 * then codes), codes written a byte at a time. */
__global__ void __launch_bounds__(128)
kivi_quant_generic_kernel(const float *__restrict__ x, uint8_t *__restrict__ codes,
                          float *__restrict__ scale, float *__restrict__ zero,
                          kvq_dev_state *st, kvq_kivi_shape sh, kvq_policy pol, uint64_t ng)
{
    const uint32_t bits = sh.bits, G = sh.group;
    const float cmax = (float)kvq_code_max(bits);
    const bool daz = pol.subnormal == KVQ_SUBNORMAL_DAZ;
    uint64_t g = dev_tid();
    uint32_t f = 0, err = 0;
    if (g < ng) {
        float mn = 0.0f, mx = 0.0f;
        for (uint32_t i = 0; i < G; i++) {
            float xv = x[kvq_kivi_elem_index(&sh, g, i)];
            if (!isfinite(xv)) err |= ERR_NONFINITE;
            xv = dev_read_input(xv, daz, f);
            if (i == 0u) {
                mn = mx = xv;
            } else {
                mn = fminf(mn, xv);
                mx = fmaxf(mx, xv);
            }
        }
        float s, z;
        dev_group_meta(s, z, f, err, mn, mx, cmax, sh.meta, pol.overflow == KVQ_OVERFLOW_NAN);
        uint8_t *grp = codes + kvq_kivi_group_code_offset(&sh, g);
        const bool away = pol.ties == KVQ_TIES_AWAY;
        uint32_t byte = 0;
        for (uint32_t i = 0; i < G; i++) {
            uint32_t c = 0;
            if (s != 0.0f) {
                uint32_t f2 = 0;
                float xv = dev_read_input(x[kvq_kivi_elem_index(&sh, g, i)], daz, f2);
                c = dev_code(xv, s, __frcp_rn(s), z, cmax, away, f);
            }
            byte |= c << kvq_code_shift(i, bits);
            if (i + 1u == G || kvq_code_byte(i + 1u, bits) != kvq_code_byte(i, bits)) {
                grp[kvq_code_byte(i, bits)] = (uint8_t)byte;
                byte = 0;
            }
        }
        scale[g] = s;
        zero[g] = z;
    }
    dev_publish(st, f, err);
}

/* ---- commit and finish -------------------------------------------------- */

typedef struct kvq_seg {
    uint8_t *dst;
    const uint8_t *src;  /* 256-byte aligned scratch */
    uint64_t n;
} kvq_seg;

/* Copy one scratch segment out.  With discard, each 128-byte scratch line a
 * warp has copied is dropped from L2 (discard.global.L2) so that the dirty
 * scratch is never written back to memory; a line is discarded only by the warp
 * that read it, after every lane's store (hence its load) has issued. */
static __device__ void dev_copy_seg(kvq_seg sg, bool discard)
{
    const uint64_t nthreads = (uint64_t)gridDim.x * blockDim.x;
    const uint32_t lane = threadIdx.x & 31u;
    if (((uintptr_t)sg.dst & 15u) == 0u) {
        const uint64_t nv = sg.n / 16u;
        const uint64_t nwarps = nthreads / 32u;
        const uint64_t nchunk = (nv + 31u) / 32u;
        for (uint64_t c = dev_tid() / 32u; c < nchunk; c += nwarps) {
            uint64_t v = c * 32u + lane;
            if (v < nv) ((uint4 *)sg.dst)[v] = __ldcs((const uint4 *)sg.src + v);
            if (discard) {
                __syncwarp();
                if (c * 32u + 32u <= nv && lane < 4u) {
                    const uint8_t *line = sg.src + c * 512u + lane * 128u;
                    asm volatile("discard.global.L2 [%0], 128;" ::"l"(line) : "memory");
                }
            }
        }
        for (uint64_t b = nv * 16u + dev_tid(); b < sg.n; b += nthreads) sg.dst[b] = sg.src[b];
    } else {
        for (uint64_t b = dev_tid(); b < sg.n; b += nthreads) sg.dst[b] = sg.src[b];
    }
}

__global__ void __launch_bounds__(256)
kivi_commit_kernel(const kvq_dev_state *st, kvq_seg a, kvq_seg b, kvq_seg c, int discard)
{
    cudaTriggerProgrammaticLaunchCompletion();   /* the finish kernel may be placed [KIVI-DEV-09] */
    if (__ldg(&st->err) != 0u) return;   /* nothing written [POL-NF-01]; final, see dev_failed */
    dev_copy_seg(a, discard != 0);
    dev_copy_seg(b, discard != 0);
    dev_copy_seg(c, discard != 0);
}

/* Status of the call in the reference's order: NONFINITE before RANGE for the
 * quantizer; for the dequantizer the lowest bad group's metadata status, then
 * RANGE. */
__global__ void kivi_finish_kernel(kvq_dev_state *st, kvq_cuda_result *res)
{
    /* a programmatic dependent of the call's last kernel: that grid done and its memory
     * visible first (launched plainly, this returns at once) [KIVI-DEV-09] */
    cudaGridDependencySynchronize();
    const unsigned long long key = st->key;
    const uint32_t err = st->err, flags = st->flags;
    uint32_t status = KVQ_OK;
    if (key != NO_KEY) status = (uint32_t)(key & 15u);
    else if (err & ERR_NONFINITE) status = KVQ_E_NONFINITE;
    else if (err & ERR_RANGE) status = KVQ_E_RANGE;
    res->status = status;
    res->flags = status == KVQ_OK ? flags : 0u;
    /* the state left as kvq_cuda_state_init makes it: the next call may skip that */
    st->flags = 0u;
    st->err = 0u;
    st->key = NO_KEY;
}

/* Enqueue kivi_finish_kernel as a programmatic dependent of the kernel before it
 * (gpu/dependent.cuh). */
static cudaError_t launch_finish(kvq_dev_state *st, kvq_cuda_result *res, cudaStream_t stream)
{
    return kvq_launch_dependent(dim3(1), dim3(1), stream, kivi_finish_kernel, st, res);
}

/* ---- dequantize --------------------------------------------------------- */

/* Pre-pass: the metadata of every group [KIVI-D-02] and, under the NaN
 * policy, overflow [POL-OV-02].  With s >= 0, fmaf(c, s, z) is monotone in c,
 * so a group can overflow only when fmaf(cmax, s, z) does; only then are its
 * codes read. */
__global__ void __launch_bounds__(256)
kivi_dequant_check_kernel(const uint8_t *__restrict__ codes, const float *__restrict__ scale,
                          const float *__restrict__ zero, kvq_dev_state *st, kvq_kivi_shape sh,
                          kvq_policy pol, uint64_t ng)
{
    uint64_t g = dev_tid();
    uint32_t err = 0;
    if (g < ng) {
        float s = scale[g], z = zero[g];
        uint32_t ms = dev_meta_ok(s, z, sh.meta);
        if (ms != KVQ_OK) {
            atomicMin(&st->key, (unsigned long long)(g * 16u + ms));
        } else if (pol.overflow == KVQ_OVERFLOW_NAN
                   && isinf(__fmaf_rn((float)kvq_code_max(sh.bits), s, z))) {
            const uint8_t *grp = codes + kvq_kivi_group_code_offset(&sh, g);
            for (uint32_t i = 0; i < sh.group; i++)
                if (isinf(__fmaf_rn((float)kvq_unpack_code(grp, i, sh.bits), s, z))) {
                    err |= ERR_RANGE;
                    break;
                }
        }
    }
    dev_publish(st, 0u, err);
}

/* The pre-pass, four consecutive groups a thread [KIVI-DEV-06]: their scales
 * and offsets as one 16-byte load each (scale and zero 16-byte aligned, ng a
 * multiple of 4), the lowest bad group's key of the four by one atomicMin; the
 * test of each group is kivi_dequant_check_kernel's. */
__global__ void __launch_bounds__(256)
kivi_dequant_check4_kernel(const uint8_t *__restrict__ codes, const float *__restrict__ scale,
                           const float *__restrict__ zero, kvq_dev_state *st, kvq_kivi_shape sh,
                           kvq_policy pol, uint64_t ng)
{
    const uint64_t q = dev_tid();
    uint32_t err = 0;
    if (4u * q < ng) {
        const float4 s4 = __ldcs((const float4 *)scale + q), z4 = __ldcs((const float4 *)zero + q);
        const float s[4] = {s4.x, s4.y, s4.z, s4.w}, z[4] = {z4.x, z4.y, z4.z, z4.w};
        unsigned long long key = NO_KEY;
#pragma unroll
        for (uint32_t k = 0; k < 4u; k++) {
            const uint64_t g = 4u * q + k;
            const uint32_t ms = dev_meta_ok(s[k], z[k], sh.meta);
            if (ms != KVQ_OK) {
                if (key == NO_KEY) key = g * 16u + ms;   /* the lowest of the four */
            } else if (pol.overflow == KVQ_OVERFLOW_NAN
                       && isinf(__fmaf_rn((float)kvq_code_max(sh.bits), s[k], z[k]))) {
                const uint8_t *grp = codes + kvq_kivi_group_code_offset(&sh, g);
                for (uint32_t i = 0; i < sh.group; i++)
                    if (isinf(__fmaf_rn((float)kvq_unpack_code(grp, i, sh.bits), s[k], z[k]))) {
                        err |= ERR_RANGE;
                        break;
                    }
            }
        }
        if (key != NO_KEY) atomicMin(&st->key, key);
    }
    dev_publish(st, 0u, err);
}

/* The pre-pass failed.  key and err are final before this kernel starts (a
 * kernel boundary orders them) and do not change during it, so the read-only
 * cached load is safe; it also keeps every warp of the grid from hitting one
 * L2 line (a volatile load per warp cost 0.1 ms on 256 MiB). */
__device__ __forceinline__ bool dev_failed(const kvq_dev_state *st)
{
    return __ldg(&st->key) != NO_KEY || __ldg(&st->err) != 0u;
}

/* The BITS words of 32 packed codes at a (4 BITS bytes, aligned to them, as a group's
 * slice of 32 codes is [LAY-PACK-01]), by streaming vector loads. */
template <int BITS>
__device__ __forceinline__ void dev_load_code_words(const uint8_t *a, uint32_t (&w)[BITS])
{
    if (BITS == 8) {
        const uint4 u0 = __ldcs((const uint4 *)a), u1 = __ldcs((const uint4 *)a + 1);
        w[0] = u0.x; w[1 % BITS] = u0.y; w[2 % BITS] = u0.z; w[3 % BITS] = u0.w;
        w[4 % BITS] = u1.x; w[5 % BITS] = u1.y; w[6 % BITS] = u1.z; w[7 % BITS] = u1.w;
    } else if (BITS == 4) {
        const uint4 u0 = __ldcs((const uint4 *)a);
        w[0] = u0.x; w[1 % BITS] = u0.y; w[2 % BITS] = u0.z; w[3 % BITS] = u0.w;
    } else if (BITS == 2) {
        const uint2 u0 = __ldcs((const uint2 *)a);
        w[0] = u0.x; w[1 % BITS] = u0.y;
    } else {
        w[0] = __ldcs((const unsigned int *)a);
    }
}

/* The direct dequantizer (KVQ_CUDA_DIRECT, [KIVI-DEV-10]) has no pre-pass: its writing
 * kernel makes the pre-pass's test of every group it writes.  A bad group's key
 * (g * 16 + status) by atomicMin, so the lowest bad group's status stays, as the
 * pre-pass leaves it.  KVQ_KIVI_PLANT 5 (a planted build): only the finiteness of the
 * metadata is tested (a negative, subnormal or non-binary16 scale passes). */
__device__ __forceinline__ void dq_direct_meta(float s, float z, uint64_t g, uint32_t meta, kvq_dev_state *st)
{
#if KVQ_KIVI_PLANT == 5
    const uint32_t ms = isfinite(s) && isfinite(z) ? (uint32_t)KVQ_OK : (uint32_t)KVQ_E_NONFINITE;
    (void)meta;
#else
    const uint32_t ms = dev_meta_ok(s, z, meta);
#endif
    if (ms != KVQ_OK) atomicMin(&st->key, (unsigned long long)(g * 16u + ms));
}

/* The direct dequantizer's overflow [POL-OV-02]: under the NaN policy a value that
 * overflowed (dev_dequant saturated it and set the flag) is the call's KVQ_E_RANGE;
 * the flags are not reported on an error (kivi_finish_kernel).  KVQ_KIVI_PLANT 4: the
 * overflow not reported. */
__device__ __forceinline__ uint32_t dq_direct_err(uint32_t f, bool nanpol)
{
    return KVQ_KIVI_PLANT != 4 && nanpol && (f & KVQ_FLAG_SATURATED) != 0u ? ERR_RANGE : 0u;
}

#if KVQ_KIVI_BASELINE
/* ---- the dequantize kernels of before (benchmarks only) ---- */
/* Per-token groups, G a power of two <= 4096, y 16-byte aligned.  Lane l of a
 * warp writes values 4l..4l+3 of each half of a 256-value tile: each 16-byte
 * store instruction of the warp covers 512 contiguous bytes. */
template <int BITS, bool DIRECT>   /* DIRECT, nanpol: unused (the launcher keeps the pre-pass) */
__global__ void __launch_bounds__(256)
kivi_dequant_token_kernel(float *__restrict__ y, const uint8_t *__restrict__ codes,
                          const float *__restrict__ scale, const float *__restrict__ zero,
                          kvq_dev_state *st, kvq_kivi_shape sh, uint64_t n, uint32_t lg_g, bool nanpol)
{
    if (dev_failed(st)) return;          /* nothing written [POL-NF-01] */
    const uint32_t lane = threadIdx.x & 31u;
    const uint64_t tile = dev_tid() / 32u * 256u;
    const uint32_t G = 1u << lg_g;
    uint32_t f = 0;
#pragma unroll
    for (int h = 0; h < 2; h++) {
        const uint64_t e = tile + (uint64_t)h * 128u + lane * 4u;
        if (e < n) {
            const uint64_t g = e >> lg_g;
            const uint32_t i0 = (uint32_t)(e & (G - 1u));
            const uint32_t first = kvq_code_byte(i0, BITS);
            const uint8_t *in = codes + kvq_kivi_group_code_offset(&sh, g) + first;
            uint32_t w;
            if (BITS <= 2) w = __ldcs(in);
            else if (BITS == 4) w = __ldcs((const unsigned short *)in);
            else w = __ldcs((const unsigned int *)in);
            const float s = scale[g], z = zero[g];
            float r[4];
#pragma unroll
            for (int k = 0; k < 4; k++) {
                uint32_t c = (w >> kvq_code_word_shift(i0 + (uint32_t)k, BITS, first))
                             & kvq_code_max(BITS);
                r[k] = dev_dequant(c, s, z, f);
            }
            __stcs((float4 *)(y + e), make_float4(r[0], r[1], r[2], r[3]));
        }
    }
    dev_publish(st, f, 0u);
}

/* Per-channel groups, G in {32, 64, 128}: one thread a group, its code words
 * in registers; a warp's stores of one token row are coalesced. */
template <int BITS, int G, bool DIRECT>   /* DIRECT, nanpol: unused (the launcher keeps the pre-pass) */
__global__ void __launch_bounds__(128)
kivi_dequant_channel_kernel(float *__restrict__ y, const uint8_t *__restrict__ codes,
                            const float *__restrict__ scale, const float *__restrict__ zero,
                            kvq_dev_state *st, kvq_kivi_shape sh, uint64_t ng, bool nanpol)
{
    if (dev_failed(st)) return;
    constexpr int NW = G * BITS / 32;
    uint64_t g = dev_tid();
    uint32_t f = 0;
    if (g < ng) {
        const uint8_t *in = codes + kvq_kivi_group_code_offset(&sh, g);
        uint32_t w[NW];
        if (NW % 4 == 0) {
#pragma unroll
            for (int k = 0; k < NW; k += 4) {
                uint4 q = __ldcs((const uint4 *)in + k / 4);
                w[k] = q.x;
                if (k + 1 < NW) w[k + 1] = q.y;
                if (k + 2 < NW) w[k + 2] = q.z;
                if (k + 3 < NW) w[k + 3] = q.w;
            }
        } else if (NW % 2 == 0) {
#pragma unroll
            for (int k = 0; k < NW; k += 2) {
                uint2 q = __ldcs((const uint2 *)in + k / 2);
                w[k] = q.x;
                if (k + 1 < NW) w[k + 1] = q.y;
            }
        } else {
#pragma unroll
            for (int k = 0; k < NW; k++) w[k] = __ldcs((const unsigned int *)in + k);
        }
        float s = scale[g], z = zero[g];
        float *p = y + kvq_kivi_group_base(&sh, g);
        const uint64_t stride = kvq_kivi_group_stride(&sh);
#pragma unroll
        for (int i = 0; i < G; i++) {
            const uint32_t word = kvq_code_byte((uint32_t)i, BITS) / 4u;
            uint32_t c = (w[word] >> kvq_code_word_shift((uint32_t)i, BITS, 4u * word))
                         & kvq_code_max(BITS);
            __stcs(p + (uint64_t)i * stride, dev_dequant(c, s, z, f));
        }
    }
    dev_publish(st, f, 0u);
}

#define DQ_CHUNKS 2u /* the tile of before: 2 chunks of 128 values a warp */
#else
/* Per-token groups, G a power of two <= 4096, y 16-byte aligned.  A warp takes a
 * tile of DQ_CHUNKS * 128 values; lane l writes values 4l..4l+3 of each 128-value
 * chunk, so each 16-byte store instruction of the warp covers 512 contiguous
 * bytes, and every chunk's loads (codes, scale, zero) are issued before the
 * first value is computed.  Index arithmetic: the tile's first value, group and
 * code byte in 64 bits once (n <= KVQ_MAX_ELEMS = 2^36), offsets within the tile
 * in 32 bits (tile mod G + offset < 4096 + 1024).  A group's values can overflow
 * only when fmaf(cmax, s, z) does (fmaf(c, s, z) is monotone in c for s >= 0, and
 * z is finite): only such groups take dev_dequant's per-value check
 * [KIVI-DEV-04]. */
#define DQ_CHUNKS 8u
template <int BITS, bool DIRECT>
__global__ void __launch_bounds__(256)
kivi_dequant_token_kernel(float *__restrict__ y, const uint8_t *__restrict__ codes,
                          const float *__restrict__ scale, const float *__restrict__ zero,
                          kvq_dev_state *st, kvq_kivi_shape sh, uint64_t n, uint32_t lg_g, bool nanpol)
{
    cudaTriggerProgrammaticLaunchCompletion();   /* the finish kernel may be placed [KIVI-DEV-09] */
    if (!DIRECT && dev_failed(st)) return;       /* nothing written [POL-NF-01] */
    const uint32_t lane = threadIdx.x & 31u;
    const uint64_t tile = dev_tid() / 32u * (DQ_CHUNKS * 128u);
    if (tile >= n) return;               /* warp-uniform */
    const uint32_t G = 1u << lg_g;
    const uint64_t gbase = tile >> lg_g; /* the tile's first group */
    const uint32_t toff = (uint32_t)(tile & (G - 1u)); /* and its first value's place in it */
    /* the codes of groups gbase, gbase + 1, ... are contiguous [LAY-PACK-01]: value
     * toff + x of the run starts at bit (toff + x) * BITS */
    const uint8_t *crun = codes + kvq_kivi_group_code_offset(&sh, gbase);
    const float cmaxf = (float)kvq_code_max(BITS);
    uint32_t w[DQ_CHUNKS];
    float s[DQ_CHUNKS], z[DQ_CHUNKS];
#pragma unroll
    for (uint32_t c = 0; c < DQ_CHUNKS; c++) {
        const uint32_t x = toff + c * 128u + lane * 4u;   /* < 4096 + 1024 */
        w[c] = 0u;
        s[c] = z[c] = 0.0f;
        if (KVQ_KIVI_HOTCOUNT || tile + (c * 128u + lane * 4u) < n) { /* counted: whole tiles */
            const uint8_t *in = crun + (x * (uint32_t)BITS) / 8u;
            if (BITS <= 2) w[c] = __ldcs(in);
            else if (BITS == 4) w[c] = __ldcs((const unsigned short *)in);
            else w[c] = __ldcs((const unsigned int *)in);
            const uint64_t g = gbase + (x >> lg_g);
            s[c] = scale[g];
            z[c] = zero[g];
        }
    }
    uint32_t f = 0;
#pragma unroll
    for (uint32_t c = 0; c < DQ_CHUNKS; c++) {
        const uint32_t x = toff + c * 128u + lane * 4u;
        if (KVQ_KIVI_HOTCOUNT || tile + (c * 128u + lane * 4u) < n) { /* counted: whole tiles */
            /* direct: the group of these four values (G >= 4: one group) checked here */
            if (DIRECT) dq_direct_meta(s[c], z[c], gbase + (x >> lg_g), sh.meta, st);
            /* bit of value x + k within the loaded word: its byte's shift plus the
             * value's place in its byte (kvq_code_shift) */
            const uint32_t sh0 = (x * (uint32_t)BITS) % 8u;
            float r[4];
            if (!KVQ_KIVI_HOTCOUNT && isinf(__fmaf_rn(cmaxf, s[c], z[c]))) { /* rare: they can saturate */
#pragma unroll
                for (uint32_t k = 0; k < 4u; k++)
                    r[k] = dev_dequant((w[c] >> (sh0 + k * BITS)) & kvq_code_max(BITS), s[c], z[c], f);
            } else {
#pragma unroll
                for (uint32_t k = 0; k < 4u; k++) {
                    const uint32_t code = (w[c] >> (sh0 + k * BITS)) & kvq_code_max(BITS);
                    /* (float)code exactly, as dev_dequant: 2^23 + code less 2^23 */
                    const float cf = __fsub_rn(__uint_as_float(0x4B000000u | code), 0x1p23f);
                    r[k] = __fmaf_rn(cf, s[c], z[c]);            /* [KIVI-D-01] */
                }
            }
            __stcs((float4 *)(y + tile + (c * 128u + lane * 4u)), make_float4(r[0], r[1], r[2], r[3]));
        }
    }
    dev_publish(st, f, DIRECT ? dq_direct_err(f, nanpol) : 0u);
}

/* Per-channel groups, G in {32, 64, 128}: one thread a group, its code words
 * in registers; a warp's stores of one token row are coalesced. */
template <int BITS, int G, bool DIRECT>
__global__ void __launch_bounds__(128)
kivi_dequant_channel_kernel(float *__restrict__ y, const uint8_t *__restrict__ codes,
                            const float *__restrict__ scale, const float *__restrict__ zero,
                            kvq_dev_state *st, kvq_kivi_shape sh, uint64_t ng, bool nanpol)
{
    cudaTriggerProgrammaticLaunchCompletion();   /* the finish kernel may be placed [KIVI-DEV-09] */
    if (!DIRECT && dev_failed(st)) return;       /* nothing written [POL-NF-01] */
    constexpr int NW = G * BITS / 32;
    uint64_t g = dev_tid();
    uint32_t f = 0;
    if (g < ng) {
        const uint8_t *in = codes + kvq_kivi_group_code_offset(&sh, g);
        uint32_t w[NW];
        if (NW % 4 == 0) {
#pragma unroll
            for (int k = 0; k < NW; k += 4) {
                uint4 q = __ldcs((const uint4 *)in + k / 4);
                w[k] = q.x;
                if (k + 1 < NW) w[k + 1] = q.y;
                if (k + 2 < NW) w[k + 2] = q.z;
                if (k + 3 < NW) w[k + 3] = q.w;
            }
        } else if (NW % 2 == 0) {
#pragma unroll
            for (int k = 0; k < NW; k += 2) {
                uint2 q = __ldcs((const uint2 *)in + k / 2);
                w[k] = q.x;
                if (k + 1 < NW) w[k + 1] = q.y;
            }
        } else {
#pragma unroll
            for (int k = 0; k < NW; k++) w[k] = __ldcs((const unsigned int *)in + k);
        }
        float s = scale[g], z = zero[g];
        if (DIRECT) dq_direct_meta(s, z, g, sh.meta, st);
        float *p = y + kvq_kivi_group_base(&sh, g);
        const uint64_t stride = kvq_kivi_group_stride(&sh);
        if (!KVQ_KIVI_HOTCOUNT && isinf(__fmaf_rn((float)kvq_code_max(BITS), s, z))) { /* rare */
#pragma unroll
            for (int i = 0; i < G; i++) {
                const uint32_t word = kvq_code_byte((uint32_t)i, BITS) / 4u;
                uint32_t c = (w[word] >> kvq_code_word_shift((uint32_t)i, BITS, 4u * word))
                             & kvq_code_max(BITS);
                __stcs(p + (uint64_t)i * stride, dev_dequant(c, s, z, f));
            }
        } else {                         /* no value overflows [KIVI-DEV-04] */
#pragma unroll
            for (int i = 0; i < G; i++) {
                const uint32_t word = kvq_code_byte((uint32_t)i, BITS) / 4u;
                uint32_t c = (w[word] >> kvq_code_word_shift((uint32_t)i, BITS, 4u * word))
                             & kvq_code_max(BITS);
                const float cf = __fsub_rn(__uint_as_float(0x4B000000u | c), 0x1p23f); /* exact */
                __stcs(p + (uint64_t)i * stride, __fmaf_rn(cf, s, z));           /* [KIVI-D-01] */
            }
        }
    }
    dev_publish(st, f, DIRECT ? dq_direct_err(f, nanpol) : 0u);
}

#endif /* KVQ_KIVI_BASELINE */

/* Per-channel groups, G in {64, 128}, in slices of 32 tokens (KVQ_KIVI_DQ32=1, the
 * default [KIVI-DEV-10]): a thread writes 32 values of one group -- the work a thread
 * of the G = 32 kernel does -- so a G = 128 group takes four threads (the one-thread-a-
 * group kernel gave each thread 128 serial stores and a quarter of the threads).  Warp w
 * of the grid takes slice w % S (S = G / 32) of groups 32 (w / S) .. + 31, lane l group
 * 32 (w / S) + l: a store instruction of the warp covers 32 consecutive groups' values
 * of one token row, as in the G = 32 kernel.  The slice's codes are bits 32 BITS q ..
 * of the group's packed codes [LAY-PACK-01]: BITS words at byte 4 BITS q of the group,
 * aligned for the vector load (the group starts at a multiple of 16 BITS bytes).  The
 * S threads of a group read its scale and offset each; under KVQ_CUDA_DIRECT each tests
 * them (the same test, the same key).  Each value is kivi_dequant_channel_kernel's. */
#ifndef KVQ_KIVI_DQ32
#define KVQ_KIVI_DQ32 1
#endif
template <int BITS, int G, bool DIRECT>
__global__ void __launch_bounds__(128)
kivi_dequant_channel_slice_kernel(float *__restrict__ y, const uint8_t *__restrict__ codes,
                                  const float *__restrict__ scale, const float *__restrict__ zero,
                                  kvq_dev_state *st, kvq_kivi_shape sh, uint64_t ng, bool nanpol)
{
    cudaTriggerProgrammaticLaunchCompletion();   /* the finish kernel may be placed [KIVI-DEV-09] */
    if (!DIRECT && dev_failed(st)) return;       /* nothing written [POL-NF-01] */
    constexpr uint32_t S = (uint32_t)G / 32u;    /* slices a group */
    const uint64_t w = dev_tid() / 32u;
    const uint32_t q = (uint32_t)(w % S);
    const uint64_t g = (w / S) * 32u + (threadIdx.x & 31u);
    uint32_t f = 0;
    if (g < ng) {
        /* KVQ_KIVI_PLANT 6 (a planted build): slice q reads slice q + 1's codes (mod S) */
        const uint32_t qc = KVQ_KIVI_PLANT == 6 ? (q + 1u) % S : q;
        const uint8_t *in = codes + kvq_kivi_group_code_offset(&sh, g) + 4u * BITS * qc;
        uint32_t wd[BITS];
        dev_load_code_words<BITS>(in, wd);
        const float s = scale[g], z = zero[g];
        if (DIRECT) dq_direct_meta(s, z, g, sh.meta, st);
        const uint64_t stride = kvq_kivi_group_stride(&sh);
        float *p = y + kvq_kivi_group_base(&sh, g) + (uint64_t)(32u * q) * stride;
        const bool sat = !KVQ_KIVI_HOTCOUNT && isinf(__fmaf_rn((float)kvq_code_max(BITS), s, z));
#pragma unroll
        for (uint32_t i = 0; i < 32u; i++) {
            const uint32_t c = (wd[(i * BITS) / 32u] >> ((i * BITS) % 32u)) & kvq_code_max(BITS);
            float v;
            if (sat) {                   /* rare: values that can saturate */
                v = dev_dequant(c, s, z, f);
            } else {                     /* no value overflows [KIVI-DEV-04] */
                const float cf = __fsub_rn(__uint_as_float(0x4B000000u | c), 0x1p23f); /* exact */
                v = __fmaf_rn(cf, s, z);                                         /* [KIVI-D-01] */
            }
            __stcs(p + (uint64_t)i * stride, v);
        }
    }
    dev_publish(st, f, DIRECT ? dq_direct_err(f, nanpol) : 0u);
}

/* Per-channel groups, G in {32, 64, 128}, D a multiple of 4, y 16-byte aligned
 * (KVQ_KIVI_DQ4N=1; measured beside the one-group-a-thread kernel): one thread four
 * groups of adjacent channels (g = 4q .. 4q+3: one token block, channels c .. c+3),
 * each token row leaving as one 16-byte store a thread; rows in chunks of 32, the
 * four groups' code words of a chunk loaded first.  Each value is
 * kivi_dequant_channel_kernel's [KIVI-DEV-06]. */
#ifndef KVQ_KIVI_DQ4N
#define KVQ_KIVI_DQ4N 0
#endif
template <int BITS, int G, bool DIRECT>
__global__ void __launch_bounds__(128)
kivi_dequant_channel4_kernel(float *__restrict__ y, const uint8_t *__restrict__ codes,
                             const float *__restrict__ scale, const float *__restrict__ zero,
                             kvq_dev_state *st, kvq_kivi_shape sh, uint64_t ng, bool nanpol)
{
    cudaTriggerProgrammaticLaunchCompletion();   /* the finish kernel may be placed [KIVI-DEV-09] */
    if (!DIRECT && dev_failed(st)) return;       /* nothing written [POL-NF-01] */
    constexpr uint32_t GB = G * BITS / 8u;       /* = kvq_kivi_group_bytes(&sh) */
    const uint64_t q = dev_tid();
    const uint64_t D = sh.channels;
    const float cmaxf = (float)kvq_code_max(BITS);
    uint32_t f = 0;
    if (4u * q < ng) {
        const uint64_t g = 4u * q;
        float s[4], z[4];
#pragma unroll
        for (int k = 0; k < 4; k++) {
            s[k] = scale[g + k];
            z[k] = zero[g + k];
            if (DIRECT) dq_direct_meta(s[k], z[k], g + k, sh.meta, st);
        }
        bool sat = false;                /* a group that can saturate: the per-value check */
#pragma unroll
        for (int k = 0; k < 4; k++) sat |= !KVQ_KIVI_HOTCOUNT && isinf(__fmaf_rn(cmaxf, s[k], z[k]));
        float *p = y + kvq_kivi_group_base(&sh, g);
        const uint8_t *cq = codes + kvq_kivi_group_code_offset(&sh, g);
#pragma unroll
        for (uint32_t ch = 0; ch < (uint32_t)G / 32u; ch++) {
            uint32_t w[4][BITS];
#pragma unroll
            for (int k = 0; k < 4; k++) {
                const uint8_t *a = cq + (uint32_t)k * GB + ch * 4u * BITS;
                dev_load_code_words<BITS>(a, w[k]);
            }
#pragma unroll
            for (uint32_t r = 0; r < 32u; r++) {
                float v[4];
#pragma unroll
                for (int k = 0; k < 4; k++) {
                    const uint32_t c = (w[k][(r * BITS) / 32u] >> ((r * BITS) % 32u)) & kvq_code_max(BITS);
                    if (sat) {
                        v[k] = dev_dequant(c, s[k], z[k], f);
                    } else {             /* no value overflows [KIVI-DEV-04] */
                        const float cf = __fsub_rn(__uint_as_float(0x4B000000u | c), 0x1p23f);
                        v[k] = __fmaf_rn(cf, s[k], z[k]);                /* [KIVI-D-01] */
                    }
                }
                __stcs((float4 *)(p + (uint64_t)(ch * 32u + r) * D), make_float4(v[0], v[1], v[2], v[3]));
            }
        }
    }
    dev_publish(st, f, DIRECT ? dq_direct_err(f, nanpol) : 0u);
}

/* Any shape, any alignment: one thread an element. */
__global__ void __launch_bounds__(256)
kivi_dequant_generic_kernel(float *__restrict__ y, const uint8_t *__restrict__ codes,
                            const float *__restrict__ scale, const float *__restrict__ zero,
                            kvq_dev_state *st, kvq_kivi_shape sh, uint64_t n)
{
    cudaTriggerProgrammaticLaunchCompletion();   /* the finish kernel may be placed [KIVI-DEV-09] */
    if (dev_failed(st)) return;
    uint64_t e = dev_tid();
    uint32_t f = 0;
    if (e < n) {
        uint32_t i;
        uint64_t g = kvq_kivi_group_of(&sh, e, &i);
        uint32_t c = kvq_unpack_code(codes + kvq_kivi_group_code_offset(&sh, g), i, sh.bits);
        y[e] = dev_dequant(c, scale[g], zero[g], f);
    }
    dev_publish(st, f, 0u);
}

/* ---- host side ---------------------------------------------------------- */

static int is_aligned(const void *p, uintptr_t a)
{
    return ((uintptr_t)p % a) == 0u;
}

static uint64_t up256(uint64_t n)
{
    return (n + 255u) / 256u * 256u;
}

static uint32_t ilog2(uint32_t v)
{
    uint32_t l = 0;
    while ((1u << l) < v) l++;
    return l;
}

static unsigned int nblocks(uint64_t nthreads, uint32_t bs)
{
    return (unsigned int)((nthreads + bs - 1u) / bs);
}

/* ---- dequantize in one kernel: the check fused [KIVI-DEV-06] -------------
 * A persistent grid (a cooperative launch: every block resident, at most the
 * blocks an SM the occupancy calculator allows) in two phases.  Phase 1 is the
 * pre-pass over every group (grid-stride, four groups' metadata loads in flight
 * a thread): the lowest bad group's key and, under the NaN policy, overflow
 * [KIVI-D-02] [POL-OV-02] into the call's state.  A grid-wide barrier
 * (cooperative_groups' grid sync, which orders the state's atomics before every
 * read after it) gives the verdict; on an error no block has written anything,
 * and none writes [POL-NF-01].  Phase 2 is the writing kernel's body over the
 * same work items, grid-stride.  The metadata read in phase 1 (1/16 of the
 * dequantized bytes at G = 32, 1/64 at G = 128) is read again in phase 2,
 * mostly from L2; the codes are read once, the output written once. */
#ifndef KVQ_KIVI_DQFUSED
#define KVQ_KIVI_DQFUSED 0  /* measured slower than the pre-pass and kernel [KIVI-DEV-06] */
#endif
#if KVQ_KIVI_DQFUSED
#include <cooperative_groups.h>

#define DQF_THREADS 256u
#ifndef KVQ_KIVI_DQ4
#define KVQ_KIVI_DQ4 1   /* 0: per channel one thread a group in the one-kernel dequantizer */
#endif
/* The pre-pass's test of group g: its key (g*16 + status) when its metadata is
 * bad, NO_KEY otherwise; ERR_RANGE into err when a value overflows under the
 * NaN policy. */
__device__ __forceinline__ unsigned long long dqf_check(const uint8_t *__restrict__ codes, float s,
                                                        float z, uint64_t g, const kvq_kivi_shape &sh,
                                                        bool nanpol, uint32_t &err)
{
    const uint32_t ms = dev_meta_ok(s, z, sh.meta);
    if (ms != KVQ_OK) return g * 16u + ms;
    if (nanpol && isinf(__fmaf_rn((float)kvq_code_max(sh.bits), s, z))) {
        const uint8_t *grp = codes + kvq_kivi_group_code_offset(&sh, g);
        for (uint32_t i = 0; i < sh.group; i++)
            if (isinf(__fmaf_rn((float)kvq_unpack_code(grp, i, sh.bits), s, z))) {
                err |= ERR_RANGE;
                break;
            }
    }
    return NO_KEY;
}

/* Phase 1 and the barrier; true when the call failed (block-uniform). */
__device__ __forceinline__ bool dqf_verdict(const uint8_t *__restrict__ codes,
                                            const float *__restrict__ scale,
                                            const float *__restrict__ zero, kvq_dev_state *st,
                                            kvq_cuda_result *res, const kvq_kivi_shape &sh,
                                            bool nanpol, uint64_t ng)
{
    const uint64_t nth = (uint64_t)gridDim.x * blockDim.x;
    unsigned long long key = NO_KEY;
    uint32_t err = 0;
    for (uint64_t g0 = dev_tid(); g0 < ng; g0 += 4u * nth) {
        float s[4], z[4];
#pragma unroll
        for (uint32_t k = 0; k < 4u; k++) {  /* four groups' loads in flight */
            const uint64_t g = g0 + k * nth;
            s[k] = g < ng ? __ldcg(scale + g) : 0.0f;
            z[k] = g < ng ? __ldcg(zero + g) : 0.0f;
        }
#pragma unroll
        for (uint32_t k = 0; k < 4u; k++) {
            const uint64_t g = g0 + k * nth;
            if (g < ng) {
                const unsigned long long kk = dqf_check(codes, s[k], z[k], g, sh, nanpol, err);
                key = kk < key ? kk : key;
            }
        }
    }
    if (key != NO_KEY) atomicMax(&st->key, ~key); /* stored inverted: 0 is none [KIVI-DEV-07] */
    if (__reduce_or_sync(0xFFFFFFFFu, err) != 0u && (threadIdx.x & 31u) == 0u)
        atomicOr(&st->err, ERR_RANGE);
    cooperative_groups::this_grid().sync();  /* the verdict: every group checked */
    __shared__ uint32_t sfail;
    if (threadIdx.x == 0u) {
        const unsigned long long k = ~*(volatile unsigned long long *)&st->key;
        const uint32_t e = *(volatile uint32_t *)&st->err;
        sfail = k != NO_KEY || e != 0u;
        /* a failed call ends here: block 0 writes its status [KIVI-DEV-07] */
        if (sfail && blockIdx.x == 0u && KVQ_KIVI_PLANT != 3) dev_result(res, k, e, 0u);
    }
    __syncthreads();
    return KVQ_KIVI_PLANT != 3 && sfail != 0u; /* plant 3: writing after a failed check */
}

/* Per-token groups: virtual warp tiles of DQ_CHUNKS * 128 values, grid-stride;
 * each tile as kivi_dequant_token_kernel's. */
template <int BITS>
__global__ void __launch_bounds__(DQF_THREADS)
kivi_dequant_token_fused_kernel(float *__restrict__ y, const uint8_t *__restrict__ codes,
                                const float *__restrict__ scale, const float *__restrict__ zero,
                                kvq_dev_state *st, kvq_kivi_shape sh, kvq_policy pol, uint64_t n,
                                uint64_t ng, uint32_t lg_g, kvq_cuda_result *res)
{
    if (dqf_verdict(codes, scale, zero, st, res, sh, pol.overflow == KVQ_OVERFLOW_NAN, ng)) return;
    const uint32_t lane = threadIdx.x & 31u;
    const uint32_t G = 1u << lg_g;
    const float cmaxf = (float)kvq_code_max(BITS);
    const uint64_t nwarps = (uint64_t)gridDim.x * (DQF_THREADS / 32u);
    uint32_t f = 0;
    for (uint64_t wt = dev_tid() / 32u; wt * (DQ_CHUNKS * 128u) < n; wt += nwarps) {
        const uint64_t tile = wt * (DQ_CHUNKS * 128u);
        const uint64_t gbase = tile >> lg_g;
        const uint32_t toff = (uint32_t)(tile & (G - 1u));
        const uint8_t *crun = codes + kvq_kivi_group_code_offset(&sh, gbase);
        uint32_t w[DQ_CHUNKS];
        float s[DQ_CHUNKS], z[DQ_CHUNKS];
#pragma unroll
        for (uint32_t c = 0; c < DQ_CHUNKS; c++) {
            const uint32_t x = toff + c * 128u + lane * 4u;
            w[c] = 0u;
            s[c] = z[c] = 0.0f;
            if (tile + (c * 128u + lane * 4u) < n) {
                const uint8_t *in = crun + (x * (uint32_t)BITS) / 8u;
                if (BITS <= 2) w[c] = __ldcs(in);
                else if (BITS == 4) w[c] = __ldcs((const unsigned short *)in);
                else w[c] = __ldcs((const unsigned int *)in);
                const uint64_t g = gbase + (x >> lg_g);
                s[c] = scale[g];
                z[c] = zero[g];
            }
        }
#pragma unroll
        for (uint32_t c = 0; c < DQ_CHUNKS; c++) {
            const uint32_t x = toff + c * 128u + lane * 4u;
            if (tile + (c * 128u + lane * 4u) < n) {
                const uint32_t sh0 = (x * (uint32_t)BITS) % 8u;
                float r[4];
                if (!KVQ_KIVI_HOTCOUNT && isinf(__fmaf_rn(cmaxf, s[c], z[c]))) { /* rare: they can saturate */
#pragma unroll
                    for (uint32_t k = 0; k < 4u; k++)
                        r[k] = dev_dequant((w[c] >> (sh0 + k * BITS)) & kvq_code_max(BITS), s[c], z[c], f);
                } else {
#pragma unroll
                    for (uint32_t k = 0; k < 4u; k++) {
                        const uint32_t code = (w[c] >> (sh0 + k * BITS)) & kvq_code_max(BITS);
                        const float cf = __fsub_rn(__uint_as_float(0x4B000000u | code), 0x1p23f);
                        r[k] = __fmaf_rn(cf, s[c], z[c]);            /* [KIVI-D-01] */
                    }
                }
                __stcs((float4 *)(y + tile + (c * 128u + lane * 4u)), make_float4(r[0], r[1], r[2], r[3]));
            }
        }
    }
    dev_publish(st, f, 0u);
    dev_finish_last(st, res, true);     /* the call's end [KIVI-DEV-07] */
}

/* Per-channel groups, G in {32, 64, 128}: one thread a group, grid-stride; each
 * group as kivi_dequant_channel_kernel's. */
template <int BITS, int G>
__global__ void __launch_bounds__(DQF_THREADS)
kivi_dequant_channel_fused_kernel(float *__restrict__ y, const uint8_t *__restrict__ codes,
                                  const float *__restrict__ scale, const float *__restrict__ zero,
                                  kvq_dev_state *st, kvq_kivi_shape sh, kvq_policy pol, uint64_t n,
                                  uint64_t ng, uint32_t lg_g, kvq_cuda_result *res)
{
    (void)n;
    (void)lg_g;
    if (dqf_verdict(codes, scale, zero, st, res, sh, pol.overflow == KVQ_OVERFLOW_NAN, ng)) return;
    constexpr int NW = G * BITS / 32;
    const uint64_t nth = (uint64_t)gridDim.x * blockDim.x;
    const uint64_t stride = kvq_kivi_group_stride(&sh);
    uint32_t f = 0;
    for (uint64_t g = dev_tid(); g < ng; g += nth) {
        const uint8_t *in = codes + kvq_kivi_group_code_offset(&sh, g);
        uint32_t w[NW];
        if (NW % 4 == 0) {
#pragma unroll
            for (int k = 0; k < NW; k += 4) {
                uint4 q = __ldcs((const uint4 *)in + k / 4);
                w[k] = q.x;
                if (k + 1 < NW) w[k + 1] = q.y;
                if (k + 2 < NW) w[k + 2] = q.z;
                if (k + 3 < NW) w[k + 3] = q.w;
            }
        } else if (NW % 2 == 0) {
#pragma unroll
            for (int k = 0; k < NW; k += 2) {
                uint2 q = __ldcs((const uint2 *)in + k / 2);
                w[k] = q.x;
                if (k + 1 < NW) w[k + 1] = q.y;
            }
        } else {
#pragma unroll
            for (int k = 0; k < NW; k++) w[k] = __ldcs((const unsigned int *)in + k);
        }
        const float s = scale[g], z = zero[g];
        float *p = y + kvq_kivi_group_base(&sh, g);
        if (!KVQ_KIVI_HOTCOUNT && isinf(__fmaf_rn((float)kvq_code_max(BITS), s, z))) { /* rare */
#pragma unroll
            for (int i = 0; i < G; i++) {
                const uint32_t word = kvq_code_byte((uint32_t)i, BITS) / 4u;
                uint32_t c = (w[word] >> kvq_code_word_shift((uint32_t)i, BITS, 4u * word))
                             & kvq_code_max(BITS);
                __stcs(p + (uint64_t)i * stride, dev_dequant(c, s, z, f));
            }
        } else {                         /* no value overflows [KIVI-DEV-04] */
#pragma unroll
            for (int i = 0; i < G; i++) {
                const uint32_t word = kvq_code_byte((uint32_t)i, BITS) / 4u;
                uint32_t c = (w[word] >> kvq_code_word_shift((uint32_t)i, BITS, 4u * word))
                             & kvq_code_max(BITS);
                const float cf = __fsub_rn(__uint_as_float(0x4B000000u | c), 0x1p23f);
                __stcs(p + (uint64_t)i * stride, __fmaf_rn(cf, s, z));           /* [KIVI-D-01] */
            }
        }
    }
    dev_publish(st, f, 0u);
    dev_finish_last(st, res, true);     /* the call's end [KIVI-DEV-07] */
}

/* Per-channel groups, G in {32, 64, 128}, D a multiple of 4: one thread four groups
 * of adjacent channels (g = 4q .. 4q+3: one token block, channels c .. c+3), so
 * that each token row leaves as one 16-byte store a thread (a warp's 512 bytes
 * contiguous when its quads lie in one token block) rather than four 4-byte
 * stores; rows in chunks of 32, the four groups' code words of a chunk (BITS
 * words each, contiguous: groups are consecutive in the codes [LAY-PACK-01])
 * loaded first.  Each value is kivi_dequant_channel_kernel's. */
template <int BITS, int G>
__global__ void __launch_bounds__(DQF_THREADS)
kivi_dequant_channel4_fused_kernel(float *__restrict__ y, const uint8_t *__restrict__ codes,
                                   const float *__restrict__ scale, const float *__restrict__ zero,
                                   kvq_dev_state *st, kvq_kivi_shape sh, kvq_policy pol, uint64_t n,
                                   uint64_t ng, uint32_t lg_g, kvq_cuda_result *res)
{
    (void)n;
    (void)lg_g;
    if (dqf_verdict(codes, scale, zero, st, res, sh, pol.overflow == KVQ_OVERFLOW_NAN, ng)) return;
    constexpr uint32_t GB = G * BITS / 8u;       /* = kvq_kivi_group_bytes(&sh) */
    const uint64_t nq = ng / 4u, nth = (uint64_t)gridDim.x * blockDim.x;
    const uint64_t D = sh.channels;
    const float cmaxf = (float)kvq_code_max(BITS);
    uint32_t f = 0;
    for (uint64_t q = dev_tid(); q < nq; q += nth) {
        const uint64_t g = 4u * q;
        float s[4], z[4];
#pragma unroll
        for (int k = 0; k < 4; k++) {
            s[k] = scale[g + k];
            z[k] = zero[g + k];
        }
        bool sat = false;                /* a group that can saturate: the per-value check */
#pragma unroll
        for (int k = 0; k < 4; k++) sat |= !KVQ_KIVI_HOTCOUNT && isinf(__fmaf_rn(cmaxf, s[k], z[k]));
        float *p = y + kvq_kivi_group_base(&sh, g);  /* element 0 of group g: channel c of row tb*G */
        const uint8_t *cq = codes + kvq_kivi_group_code_offset(&sh, g);
#pragma unroll
        for (uint32_t ch = 0; ch < (uint32_t)G / 32u; ch++) {
            uint32_t w[4][BITS];         /* 32 codes of each group: BITS words */
#pragma unroll
            for (int k = 0; k < 4; k++) {
                const uint8_t *a = cq + (uint32_t)k * GB + ch * 4u * BITS;
                dev_load_code_words<BITS>(a, w[k]);
            }
#pragma unroll
            for (uint32_t r = 0; r < 32u; r++) {
                float v[4];
#pragma unroll
                for (int k = 0; k < 4; k++) {
                    /* code r of the chunk: bit r*BITS of its words [LAY-PACK-01] */
                    const uint32_t c = (w[k][(r * BITS) / 32u] >> ((r * BITS) % 32u)) & kvq_code_max(BITS);
                    if (sat) {
                        v[k] = dev_dequant(c, s[k], z[k], f);
                    } else {             /* no value overflows [KIVI-DEV-04] */
                        const float cf = __fsub_rn(__uint_as_float(0x4B000000u | c), 0x1p23f);
                        v[k] = __fmaf_rn(cf, s[k], z[k]);                /* [KIVI-D-01] */
                    }
                }
                __stcs((float4 *)(p + (uint64_t)(ch * 32u + r) * D), make_float4(v[0], v[1], v[2], v[3]));
            }
        }
    }
    dev_publish(st, f, 0u);
    dev_finish_last(st, res, true);     /* the call's end [KIVI-DEV-07] */
}

typedef void (*dqf_kernel)(float *, const uint8_t *, const float *, const float *, kvq_dev_state *,
                           kvq_kivi_shape, kvq_policy, uint64_t, uint64_t, uint32_t, kvq_cuda_result *);

/* One cooperative launch of K over `want` blocks' work, at most the grid that
 * can be resident (the occupancy calculator's blocks an SM, once a kernel). */
static cudaError_t dqf_launch(dqf_kernel K, uint64_t want, float *y, const uint8_t *codes,
                              const float *scale, const float *zero, kvq_dev_state *st,
                              kvq_kivi_shape sh, kvq_policy pol, uint64_t n, uint64_t ng,
                              uint32_t lg_g, kvq_cuda_result *res, cudaStream_t stream)
{
    int dev = 0, sms = 0, per = 0;
    cudaError_t e = cudaGetDevice(&dev);
    if (e == cudaSuccess) e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    if (e == cudaSuccess) e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per, K, DQF_THREADS, 0);
    if (e != cudaSuccess) return e;
    if (per < 1) return cudaErrorCooperativeLaunchTooLarge;
    uint64_t nb = (uint64_t)sms * (uint64_t)per;
    if (want < nb) nb = want ? want : 1u;
    void *args[] = {&y, &codes, &scale, &zero, &st, &sh, &pol, &n, &ng, &lg_g, &res};
    return cudaLaunchCooperativeKernel((const void *)K, dim3((unsigned int)nb), dim3(DQF_THREADS),
                                       args, 0, stream);
}

template <int BITS>
static cudaError_t launch_dequant_fused(float *y, const uint8_t *codes, const float *scale,
                                        const float *zero, kvq_dev_state *st,
                                        const kvq_kivi_shape &sh, const kvq_policy &pol,
                                        kvq_cuda_result *res, cudaStream_t stream)
{
    const uint64_t n = kvq_kivi_elems(&sh), ng = kvq_kivi_groups(&sh);
    const uint32_t lg = ilog2(sh.group);
    dqf_kernel K;
    uint64_t want;
    if (sh.grouping == KVQ_GROUP_TOKEN) {
        K = kivi_dequant_token_fused_kernel<BITS>;
        want = (n + DQ_CHUNKS * 128u - 1u) / (DQ_CHUNKS * 128u) * 32u / DQF_THREADS + 1u;
    } else if (KVQ_KIVI_DQ4 && sh.channels % 4u == 0u && is_aligned(y, 16)) { /* four groups a thread */
        K = sh.group == 32u ? kivi_dequant_channel4_fused_kernel<BITS, 32>
          : sh.group == 64u ? kivi_dequant_channel4_fused_kernel<BITS, 64>
                            : kivi_dequant_channel4_fused_kernel<BITS, 128>;
        want = (ng / 4u + DQF_THREADS - 1u) / DQF_THREADS;
    } else {
        K = sh.group == 32u ? kivi_dequant_channel_fused_kernel<BITS, 32>
          : sh.group == 64u ? kivi_dequant_channel_fused_kernel<BITS, 64>
                            : kivi_dequant_channel_fused_kernel<BITS, 128>;
        want = (ng + DQF_THREADS - 1u) / DQF_THREADS;
    }
    return dqf_launch(K, want, y, codes, scale, zero, st, sh, pol, n, ng, lg, res, stream);
}
#endif /* KVQ_KIVI_DQFUSED */


/* The reference's argument checks, in its order. */
static kvq_status check_args(const void *a, const void *b, const void *c, const void *d,
                             const kvq_kivi_shape *shape, const kvq_policy *pol)
{
    if (a == NULL || b == NULL || c == NULL || d == NULL || shape == NULL) return KVQ_E_PARAM;
    if (kvq_policy_check(pol) != KVQ_OK || !kvq_kivi_params_ok(shape)) return KVQ_E_PARAM;
    if (!kvq_kivi_shape_ok(shape)) return KVQ_E_SHAPE;
    return KVQ_OK;
}

extern "C" kvq_status kvq_cuda_device_check(char *why, size_t whylen)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        if (why != NULL && whylen > 0u)
            snprintf(why, whylen, "cudaGetDeviceCount: %s", cudaGetErrorString(e));
        (void)cudaGetLastError();
        return KVQ_E_NODEVICE;
    }
    if (n == 0) {
        if (why != NULL && whylen > 0u) snprintf(why, whylen, "cudaGetDeviceCount: 0 devices");
        return KVQ_E_NODEVICE;
    }
    return KVQ_OK;
}

extern "C" size_t kvq_cuda_kivi_quantize_workspace(const kvq_kivi_shape *shape, uint32_t opts)
{
    if (shape == NULL || !kvq_kivi_params_ok(shape) || !kvq_kivi_shape_ok(shape)) return 0;
    if (opts & KVQ_CUDA_DIRECT) return WS_HEAD;
    return (size_t)(WS_HEAD + up256(kvq_kivi_code_bytes(shape))
                    + 2u * up256(kvq_kivi_groups(shape) * sizeof(float)));
}

extern "C" size_t kvq_cuda_kivi_dequantize_workspace(const kvq_kivi_shape *shape)
{
    if (shape == NULL || !kvq_kivi_params_ok(shape) || !kvq_kivi_shape_ok(shape)) return 0;
    return WS_HEAD;
}

template <int BITS>
static void launch_quant_fast(const float *x, uint8_t *codes, float *scale, float *zero,
                              kvq_dev_state *st, const kvq_kivi_shape &sh, const kvq_policy &pol,
                              cudaStream_t stream, kvq_cuda_result *res = NULL, int keep = 0)
{
    const uint64_t n = kvq_kivi_elems(&sh), ng = kvq_kivi_groups(&sh);
    if (sh.grouping == KVQ_GROUP_TOKEN) {
        const unsigned int nb = nblocks((n + 1023u) / 1024u, TOK_WARPS);
        switch (ilog2(sh.group)) {
        case 3: kivi_quant_token_kernel<BITS, 3><<<nb, TOK_WARPS * 32, 0, stream>>>(
                    x, codes, scale, zero, st, sh, pol, n, res, keep); break;
        case 4: kivi_quant_token_kernel<BITS, 4><<<nb, TOK_WARPS * 32, 0, stream>>>(
                    x, codes, scale, zero, st, sh, pol, n, res, keep); break;
        case 5: kivi_quant_token_kernel<BITS, 5><<<nb, TOK_WARPS * 32, 0, stream>>>(
                    x, codes, scale, zero, st, sh, pol, n, res, keep); break;
        case 6: kivi_quant_token_kernel<BITS, 6><<<nb, TOK_WARPS * 32, 0, stream>>>(
                    x, codes, scale, zero, st, sh, pol, n, res, keep); break;
        case 7: kivi_quant_token_kernel<BITS, 7><<<nb, TOK_WARPS * 32, 0, stream>>>(
                    x, codes, scale, zero, st, sh, pol, n, res, keep); break;
        default: kivi_quant_token_kernel<BITS, 8><<<nb, TOK_WARPS * 32, 0, stream>>>(
                    x, codes, scale, zero, st, sh, pol, n, res, keep); break;
        }
    } else if (sh.group == 32u) {          /* 4 sets of 32 groups a block */
        kivi_quant_channel_kernel<BITS, 32><<<nblocks(ng, 128), 128, 0, stream>>>(
            x, codes, scale, zero, st, sh, pol, ng, res, keep);
    } else if (sh.group == 64u) {          /* 2 sets */
        kivi_quant_channel_kernel<BITS, 64><<<nblocks(ng, 64), 128, 0, stream>>>(
            x, codes, scale, zero, st, sh, pol, ng, res, keep);
    } else {                               /* 1 set */
        kivi_quant_channel_kernel<BITS, 128><<<nblocks(ng, 32), 128, 0, stream>>>(
            x, codes, scale, zero, st, sh, pol, ng, res, keep);
    }
}

/* The writing kernels; DIRECT: without the pre-pass, each checks its groups itself
 * [KIVI-DEV-10] (nanpol: the NaN overflow policy). */
template <int BITS, bool DIRECT>
static void launch_dequant_fast(float *y, const uint8_t *codes, const float *scale,
                                const float *zero, kvq_dev_state *st, const kvq_kivi_shape &sh,
                                bool nanpol, cudaStream_t stream)
{
    const uint64_t n = kvq_kivi_elems(&sh), ng = kvq_kivi_groups(&sh);
    if (sh.grouping == KVQ_GROUP_TOKEN) {
        kivi_dequant_token_kernel<BITS, DIRECT><<<nblocks((n + DQ_CHUNKS * 128u - 1u) / (DQ_CHUNKS * 128u) * 32u, 256), 256, 0, stream>>>(
            y, codes, scale, zero, st, sh, n, ilog2(sh.group), nanpol);
    } else if (KVQ_KIVI_DQ4N && sh.channels % 4u == 0u && is_aligned(y, 16)) { /* four groups a thread */
        if (sh.group == 32u)
            kivi_dequant_channel4_kernel<BITS, 32, DIRECT><<<nblocks(ng / 4u, 128), 128, 0, stream>>>(
                y, codes, scale, zero, st, sh, ng, nanpol);
        else if (sh.group == 64u)
            kivi_dequant_channel4_kernel<BITS, 64, DIRECT><<<nblocks(ng / 4u, 128), 128, 0, stream>>>(
                y, codes, scale, zero, st, sh, ng, nanpol);
        else
            kivi_dequant_channel4_kernel<BITS, 128, DIRECT><<<nblocks(ng / 4u, 128), 128, 0, stream>>>(
                y, codes, scale, zero, st, sh, ng, nanpol);
    } else if (sh.group == 32u) {
        kivi_dequant_channel_kernel<BITS, 32, DIRECT><<<nblocks(ng, 128), 128, 0, stream>>>(
            y, codes, scale, zero, st, sh, ng, nanpol);
    } else if (KVQ_KIVI_DQ32 && !KVQ_KIVI_BASELINE) {   /* G = 64, 128: a thread a slice of 32 tokens */
        const uint64_t warps = (ng + 31u) / 32u * (sh.group / 32u);
        if (sh.group == 64u)
            kivi_dequant_channel_slice_kernel<BITS, 64, DIRECT><<<nblocks(warps * 32u, 128), 128, 0, stream>>>(
                y, codes, scale, zero, st, sh, ng, nanpol);
        else
            kivi_dequant_channel_slice_kernel<BITS, 128, DIRECT><<<nblocks(warps * 32u, 128), 128, 0, stream>>>(
                y, codes, scale, zero, st, sh, ng, nanpol);
    } else if (sh.group == 64u) {
        kivi_dequant_channel_kernel<BITS, 64, DIRECT><<<nblocks(ng, 128), 128, 0, stream>>>(
            y, codes, scale, zero, st, sh, ng, nanpol);
    } else {
        kivi_dequant_channel_kernel<BITS, 128, DIRECT><<<nblocks(ng, 128), 128, 0, stream>>>(
            y, codes, scale, zero, st, sh, ng, nanpol);
    }
}

template <int BITS>
static void launch_dequant_fast(float *y, const uint8_t *codes, const float *scale,
                                const float *zero, kvq_dev_state *st, const kvq_kivi_shape &sh,
                                bool direct, bool nanpol, cudaStream_t stream)
{
    if (direct) launch_dequant_fast<BITS, true>(y, codes, scale, zero, st, sh, nanpol, stream);
    else launch_dequant_fast<BITS, false>(y, codes, scale, zero, st, sh, nanpol, stream);
}

/* The fast kernels' shape conditions; anything else takes the generic ones.
 * Per token: G a power of two, at most 256 to quantize (a group within one
 * warp's tile), any to dequantize (no reduction). */
static int fast_shape(const kvq_kivi_shape *sh, int quantize)
{
    if (sh->grouping == KVQ_GROUP_TOKEN)
        return (sh->group <= 256u || !quantize) && (sh->group & (sh->group - 1u)) == 0u;
    return sh->group == 32u || sh->group == 64u || sh->group == 128u;
}

extern "C" kvq_status kvq_cuda_kivi_quantize_async(uint8_t *d_codes, float *d_scale,
                                                   float *d_zero, kvq_cuda_result *d_result,
                                                   const float *d_x, const kvq_kivi_shape *shape,
                                                   const kvq_policy *pol, void *d_workspace,
                                                   size_t workspace_bytes, uint32_t opts,
                                                   cudaStream_t stream)
{
    kvq_status a = check_args(d_codes, d_scale, d_zero, d_x, shape, pol);
    if (a != KVQ_OK) return a;
    a = kvq_cuda_check_workspace(d_result, d_workspace, workspace_bytes,
                                 kvq_cuda_kivi_quantize_workspace(shape, opts));
    if (a != KVQ_OK) return a;
    const kvq_kivi_shape sh = *shape;
    const kvq_policy pl = *pol;
    const bool direct = (opts & KVQ_CUDA_DIRECT) != 0u;
    const uint64_t ng = kvq_kivi_groups(&sh), cb = kvq_kivi_code_bytes(&sh);
    uint8_t *ws = (uint8_t *)d_workspace;
    kvq_dev_state *st = (kvq_dev_state *)(ws + WS_STATE);
    uint8_t *codes = d_codes;
    float *scale = d_scale, *zero = d_zero;
    if (!direct) {
        codes = ws + WS_HEAD;
        scale = (float *)(ws + WS_HEAD + up256(cb));
        zero = (float *)(ws + WS_HEAD + up256(cb) + up256(ng * sizeof(float)));
    }
    /* Fast kernels need 16-byte x (float4 loads) and 16-byte codes (vector
     * stores); scale and zero are float arrays, aligned by type. */
    const bool fast = fast_shape(&sh, 1) && is_aligned(d_x, 16) && is_aligned(codes, 16);
    /* the fast kernels end the call themselves [KIVI-DEV-07]: one memset, no finish kernel */
    kvq_cuda_result *res = KVQ_KIVI_INFIN && fast ? d_result : NULL;
    if (res != NULL) {
        if (cudaMemsetAsync(ws + WS_STATE, 0, WS_INIT_BYTES, stream) != cudaSuccess) return KVQ_E_DEVICE;
    } else if (!(opts & KVQ_CUDA_WS_CLEAN) && kvq_cuda_state_init(d_workspace, stream) != KVQ_OK) {
        return KVQ_E_DEVICE;                       /* (a clean workspace: as the last finish left it) */
    }
    /* the checked form's scratch kept in L2 for its copy-out [KIVI-DEV-08] */
    const int keep = KVQ_KIVI_L2KEEP && !direct;
    if (fast) {
        switch (sh.bits) {
        case 1: launch_quant_fast<1>(d_x, codes, scale, zero, st, sh, pl, stream, res, keep); break;
        case 2: launch_quant_fast<2>(d_x, codes, scale, zero, st, sh, pl, stream, res, keep); break;
        case 4: launch_quant_fast<4>(d_x, codes, scale, zero, st, sh, pl, stream, res, keep); break;
        default: launch_quant_fast<8>(d_x, codes, scale, zero, st, sh, pl, stream, res, keep); break;
        }
    } else {
        kivi_quant_generic_kernel<<<nblocks(ng, 128), 128, 0, stream>>>(d_x, codes, scale, zero,
                                                                       st, sh, pl, ng);
    }
    if (!direct) {
        kvq_seg sc = {d_codes, codes, cb};
        kvq_seg ss = {(uint8_t *)d_scale, (const uint8_t *)scale, ng * sizeof(float)};
        kvq_seg sz = {(uint8_t *)d_zero, (const uint8_t *)zero, ng * sizeof(float)};
        int dev = 0, sms = 132;
        cudaGetDevice(&dev);
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
        uint64_t want = (cb / 16u + 255u) / 256u;
        unsigned int nb = (unsigned int)(want < (uint64_t)sms * 8u ? (want ? want : 1u)
                                                                   : (uint64_t)sms * 8u);
        kivi_commit_kernel<<<nb, 256, 0, stream>>>(st, sc, ss, sz,
                                                   (opts & KVQ_CUDA_NO_DISCARD) ? 0 : 1);
    }
    if (res == NULL && launch_finish(st, d_result, stream) != cudaSuccess) return KVQ_E_DEVICE;
    return cudaGetLastError() == cudaSuccess ? KVQ_OK : KVQ_E_DEVICE;
}

extern "C" kvq_status kvq_cuda_kivi_dequantize_async(float *d_y, kvq_cuda_result *d_result,
                                                     const uint8_t *d_codes, const float *d_scale,
                                                     const float *d_zero,
                                                     const kvq_kivi_shape *shape,
                                                     const kvq_policy *pol, void *d_workspace,
                                                     size_t workspace_bytes, uint32_t opts,
                                                     cudaStream_t stream)
{
    kvq_status a = check_args(d_y, d_codes, d_scale, d_zero, shape, pol);
    if (a != KVQ_OK) return a;
    a = kvq_cuda_check_workspace(d_result, d_workspace, workspace_bytes,
                                 kvq_cuda_kivi_dequantize_workspace(shape));
    if (a != KVQ_OK) return a;
    const kvq_kivi_shape sh = *shape;
    const kvq_policy pl = *pol;
    const uint64_t n = kvq_kivi_elems(&sh), ng = kvq_kivi_groups(&sh);
    kvq_dev_state *st = (kvq_dev_state *)((uint8_t *)d_workspace + WS_STATE);
    const uint32_t need = sh.grouping == KVQ_GROUP_TOKEN ? 4u : 16u;
    const bool fast = fast_shape(&sh, 0) && is_aligned(d_y, 16) && is_aligned(d_codes, need);
#if KVQ_KIVI_DQFUSED
    if (fast) {                          /* check and write in one kernel [KIVI-DEV-06] */
        /* its state zero bytes (the key inverted), its end in the kernel [KIVI-DEV-07] */
        if (cudaMemsetAsync((uint8_t *)d_workspace + WS_STATE, 0, WS_INIT_BYTES, stream) != cudaSuccess)
            return KVQ_E_DEVICE;
        cudaError_t e;
        switch (sh.bits) {
        case 1: e = launch_dequant_fused<1>(d_y, d_codes, d_scale, d_zero, st, sh, pl, d_result, stream); break;
        case 2: e = launch_dequant_fused<2>(d_y, d_codes, d_scale, d_zero, st, sh, pl, d_result, stream); break;
        case 4: e = launch_dequant_fused<4>(d_y, d_codes, d_scale, d_zero, st, sh, pl, d_result, stream); break;
        default: e = launch_dequant_fused<8>(d_y, d_codes, d_scale, d_zero, st, sh, pl, d_result, stream); break;
        }
        if (e != cudaSuccess) {
            (void)cudaGetLastError();
            return KVQ_E_DEVICE;
        }
        return KVQ_OK;
    }
#endif
    /* KVQ_CUDA_DIRECT: no pre-pass on the fast kernels, which check their groups
     * themselves and write whatever the status [KIVI-DEV-10]; the generic kernel (and
     * the KVQ_KIVI_BASELINE build's kernels) keep it */
    const bool direct = (opts & KVQ_CUDA_DIRECT) != 0u && fast && !KVQ_KIVI_BASELINE;
    const bool nanpol = pl.overflow == KVQ_OVERFLOW_NAN;
    if (!(opts & KVQ_CUDA_WS_CLEAN) && kvq_cuda_state_init(d_workspace, stream) != KVQ_OK)
        return KVQ_E_DEVICE;                       /* (a clean workspace: as the last finish left it) */
    if (!direct) {
        if (KVQ_KIVI_CHECK4 && ng % 4u == 0u && is_aligned(d_scale, 16) && is_aligned(d_zero, 16))
            kivi_dequant_check4_kernel<<<nblocks(ng / 4u, 256), 256, 0, stream>>>(d_codes, d_scale, d_zero,
                                                                                 st, sh, pl, ng);
        else
            kivi_dequant_check_kernel<<<nblocks(ng, 256), 256, 0, stream>>>(d_codes, d_scale, d_zero,
                                                                           st, sh, pl, ng);
    }
    if (fast) {
        switch (sh.bits) {
        case 1: launch_dequant_fast<1>(d_y, d_codes, d_scale, d_zero, st, sh, direct, nanpol, stream); break;
        case 2: launch_dequant_fast<2>(d_y, d_codes, d_scale, d_zero, st, sh, direct, nanpol, stream); break;
        case 4: launch_dequant_fast<4>(d_y, d_codes, d_scale, d_zero, st, sh, direct, nanpol, stream); break;
        default: launch_dequant_fast<8>(d_y, d_codes, d_scale, d_zero, st, sh, direct, nanpol, stream); break;
        }
    } else {
        kivi_dequant_generic_kernel<<<nblocks(n, 256), 256, 0, stream>>>(d_y, d_codes, d_scale,
                                                                        d_zero, st, sh, n);
    }
    if (launch_finish(st, d_result, stream) != cudaSuccess) return KVQ_E_DEVICE;
    return cudaGetLastError() == cudaSuccess ? KVQ_OK : KVQ_E_DEVICE;
}

extern "C" kvq_status kvq_cuda_kivi_quantize(uint8_t *d_codes, float *d_scale, float *d_zero,
                                             uint32_t *flags, const float *d_x,
                                             const kvq_kivi_shape *shape, const kvq_policy *pol,
                                             void *d_workspace, size_t workspace_bytes,
                                             uint32_t opts, cudaStream_t stream)
{
    kvq_status a = check_args(d_codes, d_scale, d_zero, d_x, shape, pol);
    if (a != KVQ_OK) return a;
    void *ws = d_workspace;
    int own;
    a = kvq_cuda_workspace_acquire(&ws, &workspace_bytes, &own,
                                   kvq_cuda_kivi_quantize_workspace(shape, opts), stream);
    if (a != KVQ_OK) return a;
    if (own) opts &= ~KVQ_CUDA_WS_CLEAN;           /* a new workspace is never clean */
    kvq_cuda_result *dres = (kvq_cuda_result *)((uint8_t *)ws + WS_RESULT);
    kvq_status enq = kvq_cuda_kivi_quantize_async(d_codes, d_scale, d_zero, dres, d_x, shape, pol,
                                                  ws, workspace_bytes, opts, stream);
    return kvq_cuda_finish_blocking(enq, dres, ws, own, flags, stream);
}

extern "C" kvq_status kvq_cuda_kivi_dequantize(float *d_y, uint32_t *flags,
                                               const uint8_t *d_codes, const float *d_scale,
                                               const float *d_zero, const kvq_kivi_shape *shape,
                                               const kvq_policy *pol, void *d_workspace,
                                               size_t workspace_bytes, uint32_t opts,
                                               cudaStream_t stream)
{
    kvq_status a = check_args(d_y, d_codes, d_scale, d_zero, shape, pol);
    if (a != KVQ_OK) return a;
    void *ws = d_workspace;
    int own;
    a = kvq_cuda_workspace_acquire(&ws, &workspace_bytes, &own, WS_HEAD, stream);
    if (a != KVQ_OK) return a;
    if (own) opts &= ~KVQ_CUDA_WS_CLEAN;           /* a new workspace is never clean */
    kvq_cuda_result *dres = (kvq_cuda_result *)((uint8_t *)ws + WS_RESULT);
    kvq_status enq = kvq_cuda_kivi_dequantize_async(d_y, dres, d_codes, d_scale, d_zero, shape,
                                                    pol, ws, workspace_bytes, opts, stream);
    return kvq_cuda_finish_blocking(enq, dres, ws, own, flags, stream);
}

/* ---- host-pointer conveniences ------------------------------------------ */

extern "C" kvq_status kvq_cuda_kivi_quantize_host(uint8_t *codes, float *scale, float *zero,
                                                  uint32_t *flags, const float *x,
                                                  const kvq_kivi_shape *shape,
                                                  const kvq_policy *pol)
{
    kvq_status a = check_args(codes, scale, zero, x, shape, pol);
    if (a != KVQ_OK) return a;
    const uint64_t n = kvq_kivi_elems(shape), ng = kvq_kivi_groups(shape);
    const uint64_t cb = kvq_kivi_code_bytes(shape);
    float *dx = NULL, *ds = NULL, *dz = NULL;
    uint8_t *dc = NULL;
    kvq_status st = KVQ_E_NOMEM;
    uint32_t f = 0;
    if (cudaMalloc(&dx, n * sizeof(float)) != cudaSuccess) goto out;
    if (cudaMalloc(&dc, cb) != cudaSuccess) goto out;
    if (cudaMalloc(&ds, ng * sizeof(float)) != cudaSuccess) goto out;
    if (cudaMalloc(&dz, ng * sizeof(float)) != cudaSuccess) goto out;
    st = KVQ_E_DEVICE;
    if (cudaMemcpy(dx, x, n * sizeof(float), cudaMemcpyHostToDevice) != cudaSuccess) goto out;
    st = kvq_cuda_kivi_quantize(dc, ds, dz, &f, dx, shape, pol, NULL, 0, 0u, 0);
    if (st != KVQ_OK) goto out;          /* host outputs untouched */
    if (cudaMemcpy(codes, dc, cb, cudaMemcpyDeviceToHost) != cudaSuccess
        || cudaMemcpy(scale, ds, ng * sizeof(float), cudaMemcpyDeviceToHost) != cudaSuccess
        || cudaMemcpy(zero, dz, ng * sizeof(float), cudaMemcpyDeviceToHost) != cudaSuccess) {
        st = KVQ_E_DEVICE;
        goto out;
    }
    if (flags != NULL) *flags = f;
out:
    cudaFree(dx);
    cudaFree(dc);
    cudaFree(ds);
    cudaFree(dz);
    (void)cudaGetLastError();
    return st;
}

extern "C" kvq_status kvq_cuda_kivi_dequantize_host(float *y, uint32_t *flags,
                                                    const uint8_t *codes, const float *scale,
                                                    const float *zero,
                                                    const kvq_kivi_shape *shape,
                                                    const kvq_policy *pol)
{
    kvq_status a = check_args(y, codes, scale, zero, shape, pol);
    if (a != KVQ_OK) return a;
    const uint64_t n = kvq_kivi_elems(shape), ng = kvq_kivi_groups(shape);
    const uint64_t cb = kvq_kivi_code_bytes(shape);
    float *dy = NULL, *ds = NULL, *dz = NULL;
    uint8_t *dc = NULL;
    kvq_status st = KVQ_E_NOMEM;
    uint32_t f = 0;
    if (cudaMalloc(&dy, n * sizeof(float)) != cudaSuccess) goto out;
    if (cudaMalloc(&dc, cb) != cudaSuccess) goto out;
    if (cudaMalloc(&ds, ng * sizeof(float)) != cudaSuccess) goto out;
    if (cudaMalloc(&dz, ng * sizeof(float)) != cudaSuccess) goto out;
    st = KVQ_E_DEVICE;
    if (cudaMemcpy(dc, codes, cb, cudaMemcpyHostToDevice) != cudaSuccess
        || cudaMemcpy(ds, scale, ng * sizeof(float), cudaMemcpyHostToDevice) != cudaSuccess
        || cudaMemcpy(dz, zero, ng * sizeof(float), cudaMemcpyHostToDevice) != cudaSuccess)
        goto out;
    st = kvq_cuda_kivi_dequantize(dy, &f, dc, ds, dz, shape, pol, NULL, 0, 0u, 0);
    if (st != KVQ_OK) goto out;
    if (cudaMemcpy(y, dy, n * sizeof(float), cudaMemcpyDeviceToHost) != cudaSuccess) {
        st = KVQ_E_DEVICE;
        goto out;
    }
    if (flags != NULL) *flags = f;
out:
    cudaFree(dy);
    cudaFree(dc);
    cudaFree(ds);
    cudaFree(dz);
    (void)cudaGetLastError();
    return st;
}
