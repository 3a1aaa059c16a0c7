/*
 * pkv_dequant.cu -- PKV dequantization on CUDA, bit-exact to kvq_pkv_dequantize
 * (ref/fast/pkv.c) [PKV-D-01..02] with KIVI's dequantization semantics
 * [KIVI-D-01..02] (gpu/kivi/kivi_dev.cuh: the same device functions as
 * gpu/kivi/kivi.cu).
 *
 * Kernels:
 *   pkv_dequant_check_kernel  the fast path's checks in its order, as the least
 *                             of one 64-bit key a failure (stage << 56 | group << 4
 *                             | status): every pattern finite (stage 0), in the
 *                             domain (1), every index names a pattern or is 0xFFFF
 *                             in a value block (2), the metadata of every group,
 *                             the lowest bad group's status (3), and under the NaN
 *                             policy a code whose fmaf overflows (4) [POL-OV-02]
 *   pkv_dequant_token_kernel  per-token groups (values), G a power of two, d a
 *                             multiple of 4: a warp 4 token rows a step, 4 values a
 *                             lane a row, y = RN32(fmaf(c, s, z) + m) as one 16-byte
 *                             store (dev_pkv_dq_token_rows)
 *   pkv_dequant_ktile_kernel  per-channel groups (keys), d a multiple of 4, G a
 *                             multiple of 32: a thread 32 tokens of 4 channels, a
 *                             warp 128 channels of a row a step (dev_pkv_dq_ktile)
 *   pkv_dequant_channel_kernel other per-channel shapes with G in {32, 64, 128}: one
 *                             thread a group, consecutive threads consecutive channels
 *   pkv_dequant_generic_kernel any other shape: one thread an element
 *   pkv_dequant_finish_kernel the call's status and flags
 * The writing kernels return at once when the check failed, so nothing is
 * written on error [PKV-ERR-01].
 *
 * The one-kernel form [PKV-DEV-06] (asked for with KVQ_CUDA_PKV_DQ_ONE), where
 * the device launches cooperatively: pkv_dequant_token_coop_kernel,
 * pkv_dequant_ktile_coop_kernel and pkv_dequant_channel_coop_kernel do the check
 * pass, meet at a grid barrier, and write only when no check failed (then
 * pkv_dequant_finish_kernel).  The default is the two kernels, measured faster
 * for both groupings with these writers (spec/pkv.md [PKV-DEV-06]).
 */
#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <stdio.h>

#include "kvq_cuda_pkv.h"
#include "kvq_cuda_check.h"
#include "pkv/pkv_dev.cuh"

#define WS_STATE  KVQ_CUDA_WS_STATE
#define WS_RESULT KVQ_CUDA_WS_RESULT
#define WS_HEAD   KVQ_CUDA_WS_HEAD

#define STAGE(s) ((unsigned long long)(s) << 56)

namespace cg = cooperative_groups;

/* The checks of elements dev_tid(), + stride, ... < span, published by one
 * atomicMin a thread that found a failure. */
__device__ __forceinline__ void dev_pkv_dq_check(const uint8_t *__restrict__ codes,
                                                 const float *__restrict__ scale,
                                                 const float *__restrict__ zero,
                                                 const uint16_t *__restrict__ index,
                                                 const float *__restrict__ bank, uint32_t npat,
                                                 kvq_dev_state *st, const kvq_kivi_shape &sh,
                                                 uint32_t kind, const kvq_policy &pol, uint64_t span)
{
    const uint64_t nb = (uint64_t)npat * sh.channels, ng = kvq_kivi_groups(&sh);
    const uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    unsigned long long key = NO_KEY;
    for (uint64_t e = dev_tid(); e < span; e += stride) {
        if (e < nb) {
            const uint32_t c = dev_pkv_check(__ldg(bank + e));
            if (c & PKV_ERR_NONFINITE) key = min(key, STAGE(0) | KVQ_E_NONFINITE);
            else if (c) key = min(key, STAGE(1) | KVQ_E_RANGE);
        }
        if (e < sh.tokens) {             /* [PKV-D-02] */
            const uint32_t ix = index[e];
            if (!(ix == KVQ_PKV_NO_PATTERN && kind == KVQ_PKV_VALUE) && ix >= npat)
                key = min(key, STAGE(2) | KVQ_E_PARAM);
        }
        if (e < ng) {                    /* [KIVI-D-02], then overflow [POL-OV-02] */
            const float s = scale[e], z = zero[e];
            const uint32_t ms = dev_meta_ok(s, z, sh.meta);
            if (ms != KVQ_OK) {
                key = min(key, STAGE(3) | ((unsigned long long)e << 4) | ms);
            } else if (pol.overflow == KVQ_OVERFLOW_NAN &&
                       isinf(__fmaf_rn((float)kvq_code_max(sh.bits), s, z))) {
                const uint8_t *grp = codes + kvq_kivi_group_code_offset(&sh, e);
                for (uint32_t i = 0; i < sh.group; i++)
                    if (isinf(__fmaf_rn((float)kvq_unpack_code(grp, i, sh.bits), s, z))) {
                        key = min(key, STAGE(4) | KVQ_E_RANGE);
                        break;
                    }
            }
        }
    }
    if (key != NO_KEY) atomicMin(&st->key, key);
}

__global__ void __launch_bounds__(256)
pkv_dequant_check_kernel(const uint8_t *__restrict__ codes, const float *__restrict__ scale,
                         const float *__restrict__ zero, const uint16_t *__restrict__ index,
                         const float *__restrict__ bank, uint32_t npat, kvq_dev_state *st,
                         kvq_kivi_shape sh, uint32_t kind, kvq_policy pol, uint64_t span)
{
    dev_pkv_dq_check(codes, scale, zero, index, bank, npat, st, sh, kind, pol, span);
}

/* One value: r^ = fmaf(c, s, z) [KIVI-D-01], then RN32(r^ + m) unless the token is
 * stored raw [PKV-D-01]. */
__device__ __forceinline__ float dev_pkv_value(uint32_t c, float s, float z, const float *m,
                                               uint32_t i, uint32_t &f)
{
    const float r = dev_dequant(c, s, z, f);
    return m != NULL ? __fadd_rn(r, __ldg(m + i)) : r;
}

/* Per-token groups (values), G = 2^lg_g a power of two, d a multiple of 4: the
 * writer of tokens t0 .. t0 + PKV_DQ_U - 1 (those below T), a warp, lane l the
 * values 4 l + 128 k of each row: y = RN32(fmaf(c, s, z) + m) as one 16-byte
 * store.  A row's code bytes are contiguous (group t (d/G) + c/G holds channel c
 * at byte c b / 8 of the row's d b / 8 [KIVI-L-03] [LAY-PACK-01]) and 4 l is a
 * multiple of 4, so a lane's 4 codes are one byte (2 bits) or two (4 bits) at
 * bits b k: the row's pointers are taken once a token, the rest is 32-bit.
 * The step's loads (the indices, then every row's codes, metadata and pattern
 * piece) are issued together before its arithmetic. */
#define PKV_DQ_U 4
template <int BITS, bool FULL>
__device__ __forceinline__ void dev_pkv_dq_token_rows_(float *__restrict__ y,
                                                       const uint8_t *__restrict__ codes,
                                                       const float *__restrict__ scale,
                                                       const float *__restrict__ zero,
                                                       const uint16_t *__restrict__ index,
                                                       const float *__restrict__ bank,
                                                       const kvq_kivi_shape &sh, uint64_t t0,
                                                       uint32_t lane, uint32_t lg_g, uint32_t &f)
{
    /* FULL: all PKV_DQ_U rows below T (no test a row); the rows' bases once */
    const uint32_t d = sh.channels, gpr = d >> lg_g, rowb = d / 8u * BITS;
    const uint8_t *cr = codes + t0 * rowb;
    const float *sr = scale + t0 * gpr, *zr = zero + t0 * gpr;
    float *yr = y + t0 * d;
    uint32_t ix[PKV_DQ_U];
#pragma unroll
    for (int u = 0; u < PKV_DQ_U; u++)
        ix[u] = FULL || t0 + (uint64_t)u < sh.tokens ? __ldg(index + t0 + u) : KVQ_PKV_NO_PATTERN;
    for (uint32_t c = 4u * lane; c < d; c += 128u) {
        uint32_t w[PKV_DQ_U];
        float s[PKV_DQ_U], z[PKV_DQ_U];
        float4 mv[PKV_DQ_U];
#pragma unroll
        for (int u = 0; u < PKV_DQ_U; u++) {  /* every load of the step first */
            w[u] = 0u;
            s[u] = z[u] = 0.0f;
            mv[u] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            if (!FULL && t0 + (uint64_t)u >= sh.tokens) continue;
            const uint8_t *in = cr + ((uint32_t)u * rowb + c * BITS / 8u); /* c b a multiple of 8 */
            w[u] = BITS == 2 ? (uint32_t)__ldcs(in) : (uint32_t)__ldcs((const unsigned short *)in);
            s[u] = __ldg(sr + ((uint32_t)u * gpr + (c >> lg_g)));
            z[u] = __ldg(zr + ((uint32_t)u * gpr + (c >> lg_g)));
            if (ix[u] != KVQ_PKV_NO_PATTERN)
                mv[u] = __ldg((const float4 *)(bank + kvq_pkv_pattern_offset(ix[u], d) + c));
        }
#pragma unroll
        for (int u = 0; u < PKV_DQ_U; u++) {
            if (!FULL && t0 + (uint64_t)u >= sh.tokens) continue;
            const float m[4] = {mv[u].x, mv[u].y, mv[u].z, mv[u].w};
            float r[4];
#pragma unroll
            for (int k = 0; k < 4; k++) {
                const uint32_t code = (w[u] >> (BITS * k)) & kvq_code_max(BITS);
                const float v = dev_dequant(code, s[u], z[u], f); /* [KIVI-D-01] */
                r[k] = ix[u] != KVQ_PKV_NO_PATTERN ? __fadd_rn(v, m[k]) : v; /* [PKV-D-01] */
            }
            __stcs((float4 *)(yr + ((uint32_t)u * d + c)), make_float4(r[0], r[1], r[2], r[3]));
        }
    }
}

template <int BITS>
__device__ __forceinline__ void dev_pkv_dq_token_rows(float *__restrict__ y,
                                                      const uint8_t *__restrict__ codes,
                                                      const float *__restrict__ scale,
                                                      const float *__restrict__ zero,
                                                      const uint16_t *__restrict__ index,
                                                      const float *__restrict__ bank,
                                                      const kvq_kivi_shape &sh, uint64_t t0,
                                                      uint32_t lane, uint32_t lg_g, uint32_t &f)
{
    if (t0 + PKV_DQ_U <= sh.tokens)
        dev_pkv_dq_token_rows_<BITS, true>(y, codes, scale, zero, index, bank, sh, t0, lane, lg_g, f);
    else
        dev_pkv_dq_token_rows_<BITS, false>(y, codes, scale, zero, index, bank, sh, t0, lane, lg_g, f);
}

template <int BITS>
__global__ void __launch_bounds__(256)
pkv_dequant_token_kernel(float *__restrict__ y, const uint8_t *__restrict__ codes,
                         const float *__restrict__ scale, const float *__restrict__ zero,
                         const uint16_t *__restrict__ index, const float *__restrict__ bank,
                         kvq_dev_state *st, kvq_kivi_shape sh, uint32_t lg_g)
{
    if (__ldg(&st->key) != NO_KEY) return; /* final: a kernel boundary orders it */
    const uint32_t lane = threadIdx.x & 31u;
    const uint64_t nwarps = (uint64_t)gridDim.x * blockDim.x / 32u;
    uint32_t f = 0;
    for (uint64_t t0 = dev_tid() / 32u * PKV_DQ_U; t0 < sh.tokens; t0 += nwarps * PKV_DQ_U)
        dev_pkv_dq_token_rows<BITS>(y, codes, scale, zero, index, bank, sh, t0, lane, lg_g, f);
    dev_publish(st, f, 0u);
}

/* The one-kernel form of the check pass and pkv_dequant_token_kernel [PKV-DEV-06]:
 * launched cooperatively (every block resident), the grid runs the check pass,
 * meets at a grid barrier (which orders every block's atomicMin before any read
 * of the key), and writes only when no check failed -- nothing is written on
 * error, as with two kernels, without the second launch and the drain between
 * them. */
template <int BITS>
__global__ void __launch_bounds__(256)
pkv_dequant_token_coop_kernel(float *__restrict__ y, const uint8_t *__restrict__ codes,
                              const float *__restrict__ scale, const float *__restrict__ zero,
                              const uint16_t *__restrict__ index, const float *__restrict__ bank,
                              uint32_t npat, kvq_dev_state *st, kvq_kivi_shape sh, uint32_t kind,
                              kvq_policy pol, uint64_t span, uint32_t lg_g)
{
    dev_pkv_dq_check(codes, scale, zero, index, bank, npat, st, sh, kind, pol, span);
    cg::this_grid().sync();
#if !(defined(KVQ_PKV_PLANT) && KVQ_PKV_PLANT == 4) /* planted bug: writes whatever the checks found */
    if (*(volatile unsigned long long *)&st->key != NO_KEY) return; /* grid-uniform */
#endif
    const uint32_t lane = threadIdx.x & 31u;
    const uint64_t nwarps = (uint64_t)gridDim.x * blockDim.x / 32u;
    uint32_t f = 0;
    for (uint64_t t0 = dev_tid() / 32u * PKV_DQ_U; t0 < sh.tokens; t0 += nwarps * PKV_DQ_U)
        dev_pkv_dq_token_rows<BITS>(y, codes, scale, zero, index, bank, sh, t0, lane, lg_g, f);
    dev_publish(st, f, 0u);
}

/* The group g of a per-channel block (keys): see pkv_dequant_channel_kernel. */
template <int BITS, int G>
__device__ __forceinline__ void dev_pkv_dq_channel_group(float *__restrict__ y,
                                                         const uint8_t *__restrict__ codes,
                                                         const float *__restrict__ scale,
                                                         const float *__restrict__ zero,
                                                         const uint16_t *__restrict__ index,
                                                         const float *__restrict__ bank,
                                                         const kvq_kivi_shape &sh, uint64_t g,
                                                         uint32_t &f)
{
    constexpr int NW = G * BITS / 32;    /* code words of a group */
    {
        const uint8_t *in = codes + kvq_kivi_group_code_offset(&sh, g);
        uint32_t w[NW];
        if (NW % 4 == 0) {               /* the group's bytes, 16 a load (kivi.cu's split) */
#pragma unroll
            for (int k = 0; k < NW; k += 4) {
                const uint4 q = __ldcs((const uint4 *)in + k / 4);
                w[k] = q.x;
                if (k + 1 < NW) w[k + 1] = q.y;
                if (k + 2 < NW) w[k + 2] = q.z;
                if (k + 3 < NW) w[k + 3] = q.w;
            }
        } else {
#pragma unroll
            for (int k = 0; k < NW; k += 2) {
                const uint2 q = __ldcs((const uint2 *)in + k / 2);
                w[k] = q.x;
                if (k + 1 < NW) w[k + 1] = q.y;
            }
        }
        const float s = scale[g], z = zero[g];
        const uint64_t base = kvq_kivi_group_base(&sh, g), stride = kvq_kivi_group_stride(&sh);
        const uint64_t t0 = base / sh.channels;  /* the group's first token */
        const uint32_t c = (uint32_t)(base - t0 * sh.channels);
#pragma unroll
        for (int i = 0; i < G; i++) {
            const uint32_t word = kvq_code_byte((uint32_t)i, BITS) / 4u;
            const uint32_t code = (w[word] >> kvq_code_word_shift((uint32_t)i, BITS, 4u * word)) &
                                  kvq_code_max(BITS);
            const float *m = bank + kvq_pkv_pattern_offset(__ldg(index + t0 + (uint64_t)i), sh.channels);
            __stcs(y + base + (uint64_t)i * stride, dev_pkv_value(code, s, z, m, c, f));
        }
    }
}

/* Per-channel groups (keys), G in {32, 64, 128}: one thread a group (tokens
 * tb*G .. tb*G+G-1 of channel c, g = tb*D + c), its code words in registers;
 * consecutive threads take consecutive channels, so a warp's stores of one
 * token row and its reads of the token's pattern row are coalesced, and the
 * token's index is one broadcast load.  Key blocks store no raw token: every
 * index names a pattern (the check pass). */
template <int BITS, int G>
__global__ void __launch_bounds__(128, 3) /* at most 168 registers: 12 warps an SM */
pkv_dequant_channel_kernel(float *__restrict__ y, const uint8_t *__restrict__ codes,
                           const float *__restrict__ scale, const float *__restrict__ zero,
                           const uint16_t *__restrict__ index, const float *__restrict__ bank,
                           kvq_dev_state *st, kvq_kivi_shape sh, uint64_t ng)
{
    if (__ldg(&st->key) != NO_KEY) return;
    const uint64_t g = dev_tid();
    uint32_t f = 0;
    if (g < ng) dev_pkv_dq_channel_group<BITS, G>(y, codes, scale, zero, index, bank, sh, g, f);
    dev_publish(st, f, 0u);
}

/* The one-kernel form of the check pass and pkv_dequant_channel_kernel
 * [PKV-DEV-06]: as pkv_dequant_token_coop_kernel, the groups in a grid-stride
 * loop after the grid barrier. */
template <int BITS, int G>
__global__ void __launch_bounds__(128, 3)
pkv_dequant_channel_coop_kernel(float *__restrict__ y, const uint8_t *__restrict__ codes,
                                const float *__restrict__ scale, const float *__restrict__ zero,
                                const uint16_t *__restrict__ index, const float *__restrict__ bank,
                                uint32_t npat, kvq_dev_state *st, kvq_kivi_shape sh, uint32_t kind,
                                kvq_policy pol, uint64_t span, uint64_t ng)
{
    dev_pkv_dq_check(codes, scale, zero, index, bank, npat, st, sh, kind, pol, span);
    cg::this_grid().sync();
#if !(defined(KVQ_PKV_PLANT) && KVQ_PKV_PLANT == 4) /* planted bug: writes whatever the checks found */
    if (*(volatile unsigned long long *)&st->key != NO_KEY) return; /* grid-uniform */
#endif
    uint32_t f = 0;
    for (uint64_t g = dev_tid(); g < ng; g += (uint64_t)gridDim.x * blockDim.x)
        dev_pkv_dq_channel_group<BITS, G>(y, codes, scale, zero, index, bank, sh, g, f);
    dev_publish(st, f, 0u);
}

/* Per-channel groups (keys) by tiles, the keys' writer where the shape allows
 * (ktile_ok: d a multiple of 4, G a multiple of 32; y, the bank, the metadata
 * 16-byte and the codes 8- (2 bits) or 16-byte (4 bits) aligned): a thread
 * takes 32 tokens of 4 consecutive channels (item u: token chunk u / (d/4),
 * channel quad u % (d/4)), so a warp's 32 threads cover 128 consecutive
 * channels of a token row and each step stores one float4 a lane, 512
 * contiguous bytes a warp (the thread-a-group writer stores one float a lane and
 * holds a group's 128 codes in registers).  Its 4 groups' scales and zeros are
 * one float4 load each (g = tb D + c, c a multiple of 4), their 32 codes of the
 * chunk one 8- or 16-byte load each; per token the index (a broadcast load) and
 * the pattern's float4 of the 4 channels (L1).  Key blocks store no raw token:
 * every index names a pattern (the check pass). */
template <int BITS>
__device__ __forceinline__ void dev_pkv_dq_ktile(float *__restrict__ y,
                                                 const uint8_t *__restrict__ codes,
                                                 const float *__restrict__ scale,
                                                 const float *__restrict__ zero,
                                                 const uint16_t *__restrict__ index,
                                                 const float *__restrict__ bank,
                                                 const kvq_kivi_shape &sh, uint64_t u, uint32_t &f)
{
    constexpr uint32_t NW = 32u * BITS / 32u; /* code words of a group's chunk: 2 or 4 */
    const uint32_t d = sh.channels, G = sh.group, q4 = d / 4u;
    const uint64_t tc = u / q4;          /* token chunk: tokens 32 tc .. 32 tc + 31 */
    const uint32_t c = 4u * (uint32_t)(u - tc * q4);
    const uint64_t t0 = 32u * tc, tb = t0 / G;
    const uint32_t i0 = (uint32_t)(t0 - tb * G); /* the chunk's first element in its groups */
    const uint64_t g0 = tb * d + c;      /* groups g0 .. g0 + 3 [KIVI-L-03] */
    const float4 s4 = __ldg((const float4 *)(scale + g0)), z4 = __ldg((const float4 *)(zero + g0));
    const float s[4] = {s4.x, s4.y, s4.z, s4.w}, z[4] = {z4.x, z4.y, z4.z, z4.w};
    const uint32_t first = kvq_code_byte(i0, BITS);
    uint32_t w[4][NW];
#pragma unroll
    for (int k = 0; k < 4; k++) {
        const uint8_t *in = codes + kvq_kivi_group_code_offset(&sh, g0 + (uint64_t)k) + first;
        if constexpr (NW == 2) {
            const uint2 q = __ldcs((const uint2 *)in);
            w[k][0] = q.x;
            w[k][NW - 1] = q.y;
        } else {
            const uint4 q = __ldcs((const uint4 *)in);
            w[k][0] = q.x;
            w[k][1 % NW] = q.y;
            w[k][2 % NW] = q.z;
            w[k][3 % NW] = q.w;
        }
    }
#pragma unroll
    for (uint32_t i = 0; i < 32u; i++) {
        const uint64_t t = t0 + i;
        const float4 m = __ldg((const float4 *)(bank + kvq_pkv_pattern_offset(__ldg(index + t), d) + c));
        const float mv[4] = {m.x, m.y, m.z, m.w};
        /* i0 is a multiple of 32, so the chunk's codes start on a word boundary
         * (first = i0 b / 8 bytes) and element i0 + i sits in the chunk's words
         * where element i of a group sits in its first ones [LAY-PACK-01]: its
         * word and shift are constants of the unrolled loop */
        const uint32_t word = kvq_code_byte(i, BITS) / 4u;
        float r[4];
#pragma unroll
        for (int k = 0; k < 4; k++) {
            const uint32_t code = (w[k][word] >> kvq_code_word_shift(i, BITS, 4u * word)) &
                                  kvq_code_max(BITS);
            r[k] = __fadd_rn(dev_dequant(code, s[k], z[k], f), mv[k]); /* [KIVI-D-01] [PKV-D-01] */
        }
        __stcs((float4 *)(y + t * d + c), make_float4(r[0], r[1], r[2], r[3]));
    }
}

template <int BITS>
__global__ void __launch_bounds__(256)
pkv_dequant_ktile_kernel(float *__restrict__ y, const uint8_t *__restrict__ codes,
                         const float *__restrict__ scale, const float *__restrict__ zero,
                         const uint16_t *__restrict__ index, const float *__restrict__ bank,
                         kvq_dev_state *st, kvq_kivi_shape sh, uint64_t items)
{
    if (__ldg(&st->key) != NO_KEY) return;
    uint32_t f = 0;
    for (uint64_t u = dev_tid(); u < items; u += (uint64_t)gridDim.x * blockDim.x)
        dev_pkv_dq_ktile<BITS>(y, codes, scale, zero, index, bank, sh, u, f);
    dev_publish(st, f, 0u);
}

/* The one-kernel form of the check pass and pkv_dequant_ktile_kernel [PKV-DEV-06]. */
template <int BITS>
__global__ void __launch_bounds__(256)
pkv_dequant_ktile_coop_kernel(float *__restrict__ y, const uint8_t *__restrict__ codes,
                              const float *__restrict__ scale, const float *__restrict__ zero,
                              const uint16_t *__restrict__ index, const float *__restrict__ bank,
                              uint32_t npat, kvq_dev_state *st, kvq_kivi_shape sh, uint32_t kind,
                              kvq_policy pol, uint64_t span, uint64_t items)
{
    dev_pkv_dq_check(codes, scale, zero, index, bank, npat, st, sh, kind, pol, span);
    cg::this_grid().sync();
#if !(defined(KVQ_PKV_PLANT) && KVQ_PKV_PLANT == 4) /* planted bug: writes whatever the checks found */
    if (*(volatile unsigned long long *)&st->key != NO_KEY) return; /* grid-uniform */
#endif
    uint32_t f = 0;
    for (uint64_t u = dev_tid(); u < items; u += (uint64_t)gridDim.x * blockDim.x)
        dev_pkv_dq_ktile<BITS>(y, codes, scale, zero, index, bank, sh, u, f);
    dev_publish(st, f, 0u);
}

/* The tile writer's conditions (see dev_pkv_dq_ktile). */
static bool ktile_ok(const kvq_kivi_shape &sh, const void *y, const void *codes,
                     const void *scale, const void *zero, const void *bank)
{
    return sh.grouping == KVQ_GROUP_CHANNEL && sh.channels % 4u == 0u && sh.group % 32u == 0u &&
           (sh.bits == 2u || sh.bits == 4u) && (uintptr_t)y % 16u == 0u &&
           (uintptr_t)bank % 16u == 0u && (uintptr_t)scale % 16u == 0u &&
           (uintptr_t)zero % 16u == 0u && (uintptr_t)codes % (sh.bits == 2u ? 8u : 16u) == 0u;
}

__global__ void __launch_bounds__(256)
pkv_dequant_generic_kernel(float *__restrict__ y, const uint8_t *__restrict__ codes,
                           const float *__restrict__ scale, const float *__restrict__ zero,
                           const uint16_t *__restrict__ index, const float *__restrict__ bank,
                           kvq_dev_state *st, kvq_kivi_shape sh)
{
    if (__ldg(&st->key) != NO_KEY) return;
    const uint64_t n = kvq_kivi_elems(&sh), stride = (uint64_t)gridDim.x * blockDim.x;
    uint32_t f = 0;
    for (uint64_t e = dev_tid(); e < n; e += stride) {
        uint32_t i;
        const uint64_t g = kvq_kivi_group_of(&sh, e, &i);
        const uint32_t c = kvq_unpack_code(codes + kvq_kivi_group_code_offset(&sh, g), i, sh.bits);
        const uint64_t t = e / sh.channels;
        const uint32_t ix = index[t];
        const float *m = ix == KVQ_PKV_NO_PATTERN ? NULL
                                                  : bank + kvq_pkv_pattern_offset(ix, sh.channels);
        y[e] = dev_pkv_value(c, scale[g], zero[g], m, (uint32_t)(e - t * sh.channels), f);
    }
    dev_publish(st, f, 0u);
}

__global__ void pkv_dequant_finish_kernel(const kvq_dev_state *st, kvq_cuda_result *res)
{
    const uint32_t s = st->key == NO_KEY ? (uint32_t)KVQ_OK : (uint32_t)(st->key & 15u);
    res->status = s;
    res->flags = s == (uint32_t)KVQ_OK ? st->flags : 0u;
}

/* The one-kernel form [PKV-DEV-06] on `stream`, when the shape has one (per-token
 * groups: G a power of two, d a multiple of 4, y and the bank 16-byte and codes
 * 2-byte aligned;
 * per-channel groups: G in {32, 64, 128}, codes 16-byte aligned) and the device
 * launches cooperatively: every block resident, as many as fit (at most the
 * work).  Returns 0 when it launched nothing (the caller takes the two-kernel
 * form; the state is untouched then). */
static int dequant_coop(float *d_y, const uint8_t *d_codes, const float *d_scale,
                        const float *d_zero, const uint16_t *d_index, const float *d_bank,
                        uint32_t npat, kvq_dev_state *st, kvq_kivi_shape sh, uint32_t kind,
                        kvq_policy pol, uint64_t span, cudaStream_t stream)
{
    int dev = 0, coop = 0, sms = 0, per = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, dev) != cudaSuccess || !coop ||
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    const uint32_t d = sh.channels;
    const bool g_pow2 = (sh.group & (sh.group - 1u)) == 0u;
    uint64_t ng = kvq_kivi_groups(&sh);
    uint32_t lg = 0;
    while ((1u << lg) < sh.group) lg++;
    const void *k = NULL;
    int bs = 256;
    uint64_t want = 0;                   /* threads of work (the grid needs no more) */
    const uint64_t items = (uint64_t)sh.tokens / 32u * (d / 4u); /* the tile writer's */
    if (sh.grouping == KVQ_GROUP_TOKEN && g_pow2 && d % 4u == 0u && ((uintptr_t)d_y % 16u) == 0u &&
        ((uintptr_t)d_codes % 2u) == 0u && ((uintptr_t)d_bank % 16u) == 0u) {
        k = sh.bits == 2u ? (const void *)pkv_dequant_token_coop_kernel<2>
                          : (const void *)pkv_dequant_token_coop_kernel<4>;
        want = ((uint64_t)sh.tokens + PKV_DQ_U - 1u) / PKV_DQ_U * 32u;
    } else if (ktile_ok(sh, d_y, d_codes, d_scale, d_zero, d_bank)) {
        k = sh.bits == 2u ? (const void *)pkv_dequant_ktile_coop_kernel<2>
                          : (const void *)pkv_dequant_ktile_coop_kernel<4>;
        want = items;
    } else if (sh.grouping == KVQ_GROUP_CHANNEL &&
               (sh.group == 32u || sh.group == 64u || sh.group == 128u) &&
               ((uintptr_t)d_codes % 16u) == 0u) {
        bs = 128;
        want = ng;
        k = sh.bits == 2u ? (sh.group == 32u   ? (const void *)pkv_dequant_channel_coop_kernel<2, 32>
                             : sh.group == 64u ? (const void *)pkv_dequant_channel_coop_kernel<2, 64>
                                               : (const void *)pkv_dequant_channel_coop_kernel<2, 128>)
                          : (sh.group == 32u   ? (const void *)pkv_dequant_channel_coop_kernel<4, 32>
                             : sh.group == 64u ? (const void *)pkv_dequant_channel_coop_kernel<4, 64>
                                               : (const void *)pkv_dequant_channel_coop_kernel<4, 128>);
    }
    if (k == NULL) return 0;
    if (span > want) want = span;        /* the check pass's elements too */
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per, k, bs, 0) != cudaSuccess || per < 1) {
        (void)cudaGetLastError();
        return 0;
    }
    const uint64_t most = (uint64_t)per * (uint64_t)sms, need = (want + bs - 1u) / bs;
    const unsigned int nb = (unsigned int)(need < most ? (need ? need : 1u) : most);
    void *a_tok[] = {&d_y, &d_codes, &d_scale, &d_zero, &d_index, &d_bank, &npat, &st, &sh,
                     &kind, &pol, &span, &lg};
    void *a_ch[] = {&d_y, &d_codes, &d_scale, &d_zero, &d_index, &d_bank, &npat, &st, &sh,
                    &kind, &pol, &span, ktile_ok(sh, d_y, d_codes, d_scale, d_zero, d_bank)
                                             ? (void *)&items : (void *)&ng};
    if (cudaLaunchCooperativeKernel(k, dim3(nb), dim3((unsigned int)bs),
                                    sh.grouping == KVQ_GROUP_TOKEN ? a_tok : a_ch, 0,
                                    stream) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return 1;
}

/* The option bits: the form's, at most one of them. */
static bool dq_opts_ok(uint32_t opts)
{
    const uint32_t forms = KVQ_CUDA_PKV_DQ_ONE | KVQ_CUDA_PKV_DQ_TWO;
    return (opts & ~forms) == 0u && (opts & forms) != forms;
}

/* The fast path's argument checks, in its order [PKV-ERR-01]. */
static kvq_status check_args(const void *y, const void *codes, const void *scale,
                             const void *zero, const void *index, uint32_t kind, uint32_t tokens,
                             uint32_t dim, const void *bank, uint32_t npat,
                             const kvq_pkv_params *p, const kvq_policy *pol)
{
    if (y == NULL || codes == NULL || scale == NULL || zero == NULL || index == NULL ||
        bank == NULL || p == NULL || pol == NULL)
        return KVQ_E_PARAM;
    if (kind > KVQ_PKV_VALUE || !kvq_pkv_params_ok(p) || kvq_policy_check(pol) != KVQ_OK)
        return KVQ_E_PARAM;
    const kvq_kivi_shape ks = kvq_pkv_kivi_shape(p, kind, tokens, dim);
    if (!pkv_extent_ok(tokens, dim) || !kvq_kivi_shape_ok(&ks)) return KVQ_E_SHAPE;
    if (npat == 0u || npat > KVQ_PKV_MAX_PATTERNS) return KVQ_E_SHAPE;
    return KVQ_OK;
}

extern "C" size_t kvq_cuda_pkv_dequantize_workspace(void)
{
    return WS_HEAD;
}

extern "C" kvq_status kvq_cuda_pkv_dequantize_async(float *d_y, kvq_cuda_result *d_result,
                                                    const uint8_t *d_codes, const float *d_scale,
                                                    const float *d_zero, const uint16_t *d_index,
                                                    uint32_t kind, uint32_t tokens, uint32_t dim,
                                                    const float *d_bank, uint32_t npat,
                                                    const kvq_pkv_params *p, const kvq_policy *pol,
                                                    void *d_workspace, size_t workspace_bytes,
                                                    uint32_t opts, cudaStream_t stream)
{
    kvq_status a = check_args(d_y, d_codes, d_scale, d_zero, d_index, kind, tokens, dim, d_bank,
                              npat, p, pol);
    if (a != KVQ_OK) return a;
    if (!dq_opts_ok(opts)) return KVQ_E_PARAM;
    a = kvq_cuda_check_workspace(d_result, d_workspace, workspace_bytes, WS_HEAD);
    if (a != KVQ_OK) return a;
    const kvq_kivi_shape sh = kvq_pkv_kivi_shape(p, kind, tokens, dim);
    kvq_dev_state *st = (kvq_dev_state *)((uint8_t *)d_workspace + WS_STATE);
    const uint64_t n = kvq_kivi_elems(&sh), ng = kvq_kivi_groups(&sh);
    const uint64_t nb = (uint64_t)npat * dim;
    uint64_t span = nb > tokens ? nb : tokens;
    if (ng > span) span = ng;
    if (kvq_cuda_state_init(d_workspace, stream) != KVQ_OK) return KVQ_E_DEVICE;
    const bool one = (opts & KVQ_CUDA_PKV_DQ_ONE) != 0u; /* two kernels unless asked */
    if (one && dequant_coop(d_y, d_codes, d_scale, d_zero, d_index, d_bank, npat, st, sh, kind,
                            *pol, span, stream)) {  /* one kernel [PKV-DEV-06] */
        pkv_dequant_finish_kernel<<<1, 1, 0, stream>>>(st, d_result);
        return cudaGetLastError() == cudaSuccess ? KVQ_OK : KVQ_E_DEVICE;
    }
    pkv_dequant_check_kernel<<<pkv_grid(span, 256), 256, 0, stream>>>(
        d_codes, d_scale, d_zero, d_index, d_bank, npat, st, sh, kind, *pol, span);
    const bool g_pow2 = (sh.group & (sh.group - 1u)) == 0u;
    if (sh.grouping == KVQ_GROUP_TOKEN && g_pow2 && dim % 4u == 0u &&
        ((uintptr_t)d_y % 16u) == 0u && ((uintptr_t)d_codes % 2u) == 0u &&
        ((uintptr_t)d_bank % 16u) == 0u) {
        uint32_t lg = 0;
        while ((1u << lg) < sh.group) lg++;
        int dev = 0, sms = 132;
        cudaGetDevice(&dev);
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
        const uint64_t want = (((uint64_t)tokens + PKV_DQ_U - 1u) / PKV_DQ_U * 32u + 255u) / 256u;
        const unsigned int nbk = (unsigned int)(want < (uint64_t)sms * 16u ? want
                                                                           : (uint64_t)sms * 16u);
        if (sh.bits == 2u)
            pkv_dequant_token_kernel<2><<<nbk, 256, 0, stream>>>(d_y, d_codes, d_scale, d_zero,
                                                                 d_index, d_bank, st, sh, lg);
        else
            pkv_dequant_token_kernel<4><<<nbk, 256, 0, stream>>>(d_y, d_codes, d_scale, d_zero,
                                                                 d_index, d_bank, st, sh, lg);
    } else if (ktile_ok(sh, d_y, d_codes, d_scale, d_zero, d_bank)) {
        const uint64_t items = (uint64_t)tokens / 32u * (dim / 4u);
        if (sh.bits == 2u)
            pkv_dequant_ktile_kernel<2><<<pkv_grid(items, 256), 256, 0, stream>>>(
                d_y, d_codes, d_scale, d_zero, d_index, d_bank, st, sh, items);
        else
            pkv_dequant_ktile_kernel<4><<<pkv_grid(items, 256), 256, 0, stream>>>(
                d_y, d_codes, d_scale, d_zero, d_index, d_bank, st, sh, items);
    } else if (sh.grouping == KVQ_GROUP_CHANNEL && (sh.group == 32u || sh.group == 64u ||
                                                     sh.group == 128u) &&
               ((uintptr_t)d_codes % 16u) == 0u) {
        const unsigned int nbk = (unsigned int)((ng + 127u) / 128u);
#define PKV_DQ_CH(BITS, G)                                                                     \
    pkv_dequant_channel_kernel<BITS, G><<<nbk, 128, 0, stream>>>(d_y, d_codes, d_scale, d_zero, \
                                                                 d_index, d_bank, st, sh, ng)
        if (sh.bits == 2u) {
            if (sh.group == 32u) PKV_DQ_CH(2, 32);
            else if (sh.group == 64u) PKV_DQ_CH(2, 64);
            else PKV_DQ_CH(2, 128);
        } else {
            if (sh.group == 32u) PKV_DQ_CH(4, 32);
            else if (sh.group == 64u) PKV_DQ_CH(4, 64);
            else PKV_DQ_CH(4, 128);
        }
#undef PKV_DQ_CH
    } else {
        pkv_dequant_generic_kernel<<<pkv_grid(n, 256), 256, 0, stream>>>(
            d_y, d_codes, d_scale, d_zero, d_index, d_bank, st, sh);
    }
    pkv_dequant_finish_kernel<<<1, 1, 0, stream>>>(st, d_result);
    return cudaGetLastError() == cudaSuccess ? KVQ_OK : KVQ_E_DEVICE;
}

extern "C" kvq_status kvq_cuda_pkv_dequantize(float *d_y, uint32_t *flags, const uint8_t *d_codes,
                                              const float *d_scale, const float *d_zero,
                                              const uint16_t *d_index, uint32_t kind,
                                              uint32_t tokens, uint32_t dim, const float *d_bank,
                                              uint32_t npat, const kvq_pkv_params *p,
                                              const kvq_policy *pol, void *d_workspace,
                                              size_t workspace_bytes, uint32_t opts,
                                              cudaStream_t stream)
{
    kvq_status a = check_args(d_y, d_codes, d_scale, d_zero, d_index, kind, tokens, dim, d_bank,
                              npat, p, pol);
    if (a != KVQ_OK) return a;
    if (!dq_opts_ok(opts)) return KVQ_E_PARAM;
    void *ws = d_workspace;
    int own;
    a = kvq_cuda_workspace_acquire(&ws, &workspace_bytes, &own, WS_HEAD, stream);
    if (a != KVQ_OK) return a;
    kvq_cuda_result *dres = (kvq_cuda_result *)((uint8_t *)ws + WS_RESULT);
    kvq_status enq = kvq_cuda_pkv_dequantize_async(d_y, dres, d_codes, d_scale, d_zero, d_index,
                                                   kind, tokens, dim, d_bank, npat, p, pol, ws,
                                                   workspace_bytes, opts, stream);
    return kvq_cuda_finish_blocking(enq, dres, ws, own, flags, stream);
}

extern "C" kvq_status kvq_cuda_pkv_dequantize_host(float *y, uint32_t *flags, const uint8_t *codes,
                                                   const float *scale, const float *zero,
                                                   const uint16_t *index, uint32_t kind,
                                                   uint32_t tokens, uint32_t dim, const float *bank,
                                                   uint32_t npat, const kvq_pkv_params *p,
                                                   const kvq_policy *pol)
{
    kvq_status a = check_args(y, codes, scale, zero, index, kind, tokens, dim, bank, npat, p, pol);
    if (a != KVQ_OK) return a;
    const kvq_kivi_shape ks = kvq_pkv_kivi_shape(p, kind, tokens, dim);
    const uint64_t n = (uint64_t)tokens * dim, nb = (uint64_t)npat * dim;
    const uint64_t cb = kvq_kivi_code_bytes(&ks), ng = kvq_kivi_groups(&ks);
    const uint64_t ib = kvq_pkv_index_bytes(tokens);
    float *dy = NULL, *db = NULL, *ds = NULL, *dz = NULL;
    uint8_t *dc = NULL;
    uint16_t *di = NULL;
    uint32_t f = 0;
    kvq_status st = KVQ_E_NOMEM;
    if (cudaMalloc(&dy, n * sizeof(float)) != cudaSuccess) goto out;
    if (cudaMalloc(&db, nb * sizeof(float)) != cudaSuccess) goto out;
    if (cudaMalloc(&dc, cb) != cudaSuccess) goto out;
    if (cudaMalloc(&ds, ng * sizeof(float)) != cudaSuccess) goto out;
    if (cudaMalloc(&dz, ng * sizeof(float)) != cudaSuccess) goto out;
    if (cudaMalloc(&di, ib) != cudaSuccess) goto out;
    st = KVQ_E_DEVICE;
    if (cudaMemcpy(db, bank, nb * sizeof(float), cudaMemcpyHostToDevice) != cudaSuccess ||
        cudaMemcpy(dc, codes, cb, cudaMemcpyHostToDevice) != cudaSuccess ||
        cudaMemcpy(ds, scale, ng * sizeof(float), cudaMemcpyHostToDevice) != cudaSuccess ||
        cudaMemcpy(dz, zero, ng * sizeof(float), cudaMemcpyHostToDevice) != cudaSuccess ||
        cudaMemcpy(di, index, ib, cudaMemcpyHostToDevice) != cudaSuccess)
        goto out;
    st = kvq_cuda_pkv_dequantize(dy, &f, dc, ds, dz, di, kind, tokens, dim, db, npat, p, pol, NULL,
                                 0, 0u, 0);
    if (st != KVQ_OK) goto out;
    if (cudaMemcpy(y, dy, n * sizeof(float), cudaMemcpyDeviceToHost) != cudaSuccess) {
        st = KVQ_E_DEVICE;
        goto out;
    }
    if (flags != NULL) *flags = f;
out:
    cudaFree(dy);
    cudaFree(db);
    cudaFree(dc);
    cudaFree(ds);
    cudaFree(dz);
    cudaFree(di);
    (void)cudaGetLastError();
    return st;
}
