/*
 * split.cu -- the VIDKV channel split on CUDA [VIDKV-K-01..02], bit-exact to
 * ref/fast/vidkv.c (kvq_vidkv_split).
 *
 * Kernels:
 *   vk_range_col_kernel  least and greatest value read of every channel: a
 *                    block 32 channels by 8 runs of 32 tokens of one head, a
 *                    thread a channel's run (32 loads in flight, each warp load a
 *                    128-byte row segment), extremes in registers by fminf /
 *                    fmaxf, the input checks [VIDKV-L-03..04] folded into the
 *                    greatest magnitude bits and decided once, the 8 runs merged
 *                    in shared memory, one global atomic a channel and block
 *   vk_rank_kernel   one block a mask row (the extremes read or, [VIDKV-DEV-07],
 *                    handed in): r_c = RN32(mx - mn), the rank of
 *                    every channel (greater r first, equal r by lower index),
 *                    the mask bits, and the ascending channel lists
 *
 * KVQ_VIDKV_PLANT 8 (a build of the device test only, gpu/vidkv/rules.mk): every
 * fourth channel keeps no greatest value.
 *
 * The extremes' order of evaluation is free: min and max are exact, and a
 * signed zero extreme changes r only between +0 and -0, which compare equal.
 */
#include <cuda_runtime.h>

#include <stdint.h>
#include <stdlib.h>

#include "kvq_cuda.h"
#include "vidkv/kvq_cuda_vidkv.h"
#include "vidkv/vidkv_dev.cuh"


/* Order-preserving map of binary32 to uint32 (finite values). */
__device__ __forceinline__ uint32_t vk_ord(float v)
{
    uint32_t b = __float_as_uint(v);
    return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}
__device__ __forceinline__ float vk_unord(uint32_t o)
{
    return __uint_as_float((o & 0x80000000u) ? (o & 0x7FFFFFFFu) : ~o);
}

/* The column form: a block 32 channels (x) by COL_Y token runs (y), a thread one
 * channel over COL_T consecutive tokens -- COL_T loads in flight at once, each
 * warp load one 128-byte row segment, the pattern of the ternary and group
 * kernels -- the extremes in registers (fminf / fmaxf), the input checks folded
 * into the greatest magnitude bits and the least (bits - 1) [VIDKV-L-03..04],
 * decided once; the block's COL_Y extremes of a channel merged in shared memory,
 * then one global atomic a channel and block. */
#define COL_T 32u
#define COL_Y 8u
__global__ void __launch_bounds__(32u * COL_Y)
vk_range_col_kernel(uint32_t *gmn, uint32_t *gmx, vk_state *st, const float *k, kvq_vidkv_params p, bool daz)
{
    __shared__ float smn[COL_Y][32], smx[COL_Y][32];
    const uint32_t d = p.dim, T = p.tokens, h = blockIdx.z, lane = threadIdx.x, ty = threadIdx.y;
    const uint32_t c = blockIdx.y * 32u + lane, t0 = (blockIdx.x * COL_Y + ty) * COL_T;
    const bool live = c < d;
    const float *x = k + ((uint64_t)h * T + t0) * d + c;
    float lo = __uint_as_float(0x7F800000u), hi = __uint_as_float(0xFF800000u); /* +inf, -inf */
    uint32_t amax = 0u, smin = 0xFFFFFFFFu;
    /* one value: the checks' bits, the subnormal rule, the extremes */
#if defined(KVQ_VIDKV_PLANT) && KVQ_VIDKV_PLANT == 8
#define VK_COL_HI(w) do { if (c % 4u != 3u) hi = fmaxf(hi, w); } while (0) /* planted: every fourth channel keeps no greatest value */
#else
#define VK_COL_HI(w) hi = fmaxf(hi, w)
#endif
#define VK_COL_ONE(val)                                                                     \
    do {                                                                                    \
        const float v_ = (val);                                                             \
        const uint32_t a_ = __float_as_uint(v_) & 0x7FFFFFFFu;                              \
        amax = max(amax, a_);                                                               \
        smin = min(smin, a_ - 1u); /* a subnormal iff a - 1 < 0x7FFFFF */                   \
        const float w_ = daz && a_ - 1u < 0x007FFFFFu ? __uint_as_float(__float_as_uint(v_) & 0x80000000u) : v_; \
        lo = fminf(lo, w_);                                                                 \
        VK_COL_HI(w_);                                                                      \
    } while (0)
    if (live && t0 + COL_T <= T) { /* a whole run: every load in flight, no guard an element */
        float v[COL_T];
#pragma unroll
        for (uint32_t i = 0; i < COL_T; i++) v[i] = x[(uint64_t)i * d];
#pragma unroll
        for (uint32_t i = 0; i < COL_T; i++) VK_COL_ONE(v[i]);
    } else if (live) {
        for (uint32_t i = 0; t0 + i < T && i < COL_T; i++) VK_COL_ONE(x[(uint64_t)i * d]);
    }
#undef VK_COL_ONE
#undef VK_COL_HI
    uint32_t f = smin < 0x007FFFFFu ? KVQ_FLAG_SUBNORMAL : 0u;
    uint32_t err = amax >= 0x7F800000u ? VK_ERR_NONFINITE
                 : amax >= __float_as_uint(KVQ_VIDKV_DOMAIN) ? VK_ERR_RANGE : 0u;
    vk_publish(st, f, err);
    smn[ty][lane] = lo;
    smx[ty][lane] = hi;
    __syncthreads();
    if (ty == 0u && live) {
#pragma unroll
        for (uint32_t y = 1; y < COL_Y; y++) {
            lo = fminf(lo, smn[y][lane]);
            hi = fmaxf(hi, smx[y][lane]);
        }
        const uint32_t row = p.split == KVQ_VIDKV_SPLIT_PER_HEAD ? h : 0u;
        /* a channel with no value in this block keeps +-inf: the ordered atomics leave
         * the running extremes as they are */
        if (lo != __uint_as_float(0x7F800000u)) atomicMin(&gmn[(uint64_t)row * d + c], vk_ord(lo));
        if (hi != __uint_as_float(0xFF800000u)) atomicMax(&gmx[(uint64_t)row * d + c], vk_ord(hi));
    }
}

/* The running extremes' start, and the call's state zeroed (the call's first kernel). */
__global__ void vk_init_kernel(uint32_t *gmn, uint32_t *gmx, uint64_t n, vk_state *st)
{
    if (blockIdx.x == 0u && threadIdx.x == 0u) {
        st->flags = 0u;
        st->err = 0u;
    }
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (uint64_t)gridDim.x * blockDim.x) {
        gmn[i] = 0xFFFFFFFFu;
        gmx[i] = 0u;
    }
}

/* One block a mask row, blockDim.x >= d.  FL: the extremes are the handed-in
 * floats fmn, fmx [VIDKV-DEV-07] (vk_unord(vk_ord(x)) == x, so the same r), and
 * the kernel also zeroes the call's state *st and the attained-ends flags att
 * [2][rows][d] of its row (it is the call's first kernel). */
template <bool FL>
__global__ void vk_rank_kernel(uint8_t *mask, uint32_t *lists, uint32_t *pos, const uint32_t *gmn,
                               const uint32_t *gmx, uint32_t d, uint32_t na, uint32_t row_bytes,
                               const float *fmn, const float *fmx, uint32_t *att, vk_state *st)
{
    __shared__ float r[KVQ_VIDKV_MAX_DIM];
    __shared__ uint8_t abn[KVQ_VIDKV_MAX_DIM];
    const uint32_t row = blockIdx.x, c = threadIdx.x;
    if (FL) {
        if (c < d) {
            const uint64_t rc = (uint64_t)row * d + c;
            r[c] = __fsub_rn(fmx[rc], fmn[rc]);
            att[rc] = 0u;
            att[(uint64_t)gridDim.x * d + rc] = 0u;
        }
        if (row == 0u && c == 0u) {
            st->flags = 0u;
            st->err = 0u;
        }
    } else if (c < d) {
        r[c] = __fsub_rn(vk_unord(gmx[(uint64_t)row * d + c]), vk_unord(gmn[(uint64_t)row * d + c]));
    }
    __syncthreads();
    if (c < d) {
        uint32_t rank = 0;
        const float rc = r[c];
        for (uint32_t o = 0; o < d; o++) rank += (uint32_t)kvq_vidkv_before(r[o], o, rc, c);
        abn[c] = rank < na;
    }
    __syncthreads();
    if (c < row_bytes) {
        uint32_t y = 0;
        for (uint32_t b = 0; b < 8u && 8u * c + b < d; b++) y |= (uint32_t)abn[8u * c + b] << b;
        mask[(uint64_t)row * row_bytes + c] = (uint8_t)y;
    }
    if (c < 32u && lists != NULL) {
        /* warp 0: each channel's place from the ballots of the ones below.  The normal
         * list starts after all the channels marked abnormal -- n_a of them, or more when
         * a NaN range (the call then fails) ties the ranks -- so every entry of the row's
         * list is written whatever the marks */
        uint32_t *L = lists + (uint64_t)row * d, *P = pos + (uint64_t)row * d, na_all = 0;
        for (uint32_t c0 = 0; c0 < d; c0 += 32u)
            na_all += __popc(__ballot_sync(0xFFFFFFFFu, c0 + c < d && abn[c0 + c]));
        for (uint32_t c0 = 0, ia = 0; c0 < d; c0 += 32u) {
            const uint32_t cc = c0 + c;
            const bool a = cc < d && abn[cc];
            const uint32_t bal = __ballot_sync(0xFFFFFFFFu, a), below = ia + __popc(bal & ((1u << c) - 1u));
            if (cc < d) {
                if (a) {
                    L[below] = cc;
                    P[cc] = below | 0x80000000u;
                } else {
                    L[na_all + (cc - below)] = cc;
                    P[cc] = cc - below;
                }
            }
            ia += __popc(bal);
        }
    }
}

kvq_status vk_split_ranges_enqueue(uint8_t *mask, uint32_t *lists, uint32_t *pos, const float *mn,
                                   const float *mx, uint32_t *att, vk_state *st, const kvq_vidkv_params *p,
                                   cudaStream_t s)
{
    const uint32_t rows = kvq_vidkv_mask_rows(p), d = p->dim;
    vk_rank_kernel<true><<<rows, (d + 31u) / 32u * 32u, 0, s>>>(mask, lists, pos, NULL, NULL, d, kvq_vidkv_n_abn(p),
                                                               kvq_vidkv_mask_row_bytes(p), mn, mx, att, st);
    return cudaGetLastError() == cudaSuccess ? KVQ_OK : KVQ_E_DEVICE;
}

size_t vk_split_scratch(const kvq_vidkv_params *p)
{
    return 2u * (size_t)kvq_vidkv_mask_rows(p) * p->dim * sizeof(uint32_t);
}

kvq_status vk_split_enqueue(uint8_t *mask, uint32_t *lists, uint32_t *pos, vk_state *st,
                            const float *k, const kvq_vidkv_params *p, const kvq_policy *pol,
                            void *scratch, cudaStream_t s)
{
    const uint32_t rows = kvq_vidkv_mask_rows(p), d = p->dim;
    uint32_t *gmn = (uint32_t *)scratch, *gmx = gmn + (size_t)rows * d;
    vk_init_kernel<<<vk_blocks((uint64_t)rows * d, 256u), 256u, 0, s>>>(gmn, gmx, (uint64_t)rows * d, st);
    /* the column form (any d and T; blockIdx.z the head) */
    const dim3 cg((p->tokens + COL_Y * COL_T - 1u) / (COL_Y * COL_T), (d + 31u) / 32u, p->heads);
    vk_range_col_kernel<<<cg, dim3(32u, COL_Y), 0, s>>>(gmn, gmx, st, k, *p, pol->subnormal == KVQ_SUBNORMAL_DAZ);
    vk_rank_kernel<false><<<rows, (d + 31u) / 32u * 32u, 0, s>>>(mask, lists, pos, gmn, gmx, d,
                                                                kvq_vidkv_n_abn(p),
                                                                kvq_vidkv_mask_row_bytes(p), NULL, NULL, NULL,
                                                                NULL);
    return cudaGetLastError() == cudaSuccess ? KVQ_OK : KVQ_E_DEVICE;
}

kvq_status kvq_cuda_vidkv_split(uint8_t *d_mask, uint32_t *flags, const float *d_k,
                                const kvq_vidkv_params *prm, const kvq_policy *pol,
                                cudaStream_t stream)
{
    kvq_status st;
    void *ws = NULL;
    vk_state h = {0u, 0u};
    size_t sb, mb;
    if (d_mask == NULL || d_k == NULL || prm == NULL) return KVQ_E_PARAM;
    if ((st = vk_check_call(prm, pol)) != KVQ_OK) return st;
    if (kvq_cuda_device_check(NULL, 0) != KVQ_OK) return KVQ_E_NODEVICE;
    sb = (vk_split_scratch(prm) + 255u) / 256u * 256u;
    mb = (kvq_vidkv_mask_bytes(prm) + 255u) / 256u * 256u;
    if (cudaMallocAsync(&ws, 256u + sb + mb, stream) != cudaSuccess) return KVQ_E_NOMEM;
    {
        vk_state *dst = (vk_state *)ws;
        uint8_t *m = (uint8_t *)ws + 256u + sb;
        if ((st = vk_split_enqueue(m, NULL, NULL, dst, d_k, prm, pol, (uint8_t *)ws + 256u, stream)) !=
            KVQ_OK)
            goto out;
        VK_CK(vk_readback(&h, dst, sizeof h, stream));
        if ((st = vk_state_status(&h)) != KVQ_OK) goto out;
        VK_CK(cudaMemcpyAsync(d_mask, m, kvq_vidkv_mask_bytes(prm), cudaMemcpyDeviceToDevice, stream));
        VK_CK(cudaStreamSynchronize(stream));
        if (flags != NULL) *flags = h.flags;
    }
out:
    cudaFreeAsync(ws, stream);
    cudaStreamSynchronize(stream);
    return st;
}
