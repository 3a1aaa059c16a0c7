/*
 * split.cu -- the VIDKV channel split on CUDA [VIDKV-K-01..02], bit-exact to
 * ref/fast/vidkv.c (kvq_vidkv_split).
 *
 * Kernels:
 *   vk_range_kernel  least and greatest value read of every channel: a block a
 *                    run of tokens of one head; when d / 4 divides the block,
 *                    4 channels a thread by 16-byte loads (4 trips unrolled: 64
 *                    bytes a thread in flight), extremes in registers by
 *                    fminf / fmaxf, then per-channel extremes in shared memory
 *                    (ordered-integer atomics, once a thread), then one global
 *                    atomic a channel; the input checks [VIDKV-L-03..04] on the way
 *   vk_rank_kernel   one block a mask row (the extremes read or, [VIDKV-DEV-07],
 *                    handed in): r_c = RN32(mx - mn), the rank of
 *                    every channel (greater r first, equal r by lower index),
 *                    the mask bits, and the ascending channel lists
 *
 * KVQ_VIDKV_PLANT 8 (a build of the device test only, gpu/vidkv/rules.mk): the
 * 16-byte path keeps no greatest value for the fourth channel of each quad.
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

#define RANGE_BS    256u
#define RANGE_ELEMS 16384u  /* elements a range block reads */

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

template <bool VEC>
__global__ void __launch_bounds__(RANGE_BS)
vk_range_kernel(uint32_t *gmn, uint32_t *gmx, vk_state *st, const float *k, kvq_vidkv_params p,
                uint32_t tok_per_block, bool daz)
{
    __shared__ uint32_t smn[KVQ_VIDKV_MAX_DIM], smx[KVQ_VIDKV_MAX_DIM];
    const uint32_t d = p.dim, h = blockIdx.y;
    const uint32_t t0 = blockIdx.x * tok_per_block;
    const uint32_t t1 = min(p.tokens, t0 + tok_per_block);
    for (uint32_t c = threadIdx.x; c < d; c += blockDim.x) {
        smn[c] = 0xFFFFFFFFu;
        smx[c] = 0u;
    }
    __syncthreads();
    uint32_t f = 0, err = 0;
    const uint64_t base = ((uint64_t)h * p.tokens + t0) * d;
    const uint32_t n = (t1 - t0) * d;
    uint32_t c = threadIdx.x % d, cstep = blockDim.x % d;
    if (VEC) { /* 4 channels a thread, 16-byte loads, the block a whole number of rows */
        const uint32_t q = d / 4u, c4 = (threadIdx.x % q) * 4u, n4 = n / 4u;
        const float4 *k4 = (const float4 *)(k + base);
        float lo[4], hi[4];
#pragma unroll
        for (int j = 0; j < 4; j++) {
            lo[j] = VK_F32_MAX * 2.0f; /* +inf: no value read yet */
            hi[j] = -VK_F32_MAX * 2.0f;
        }
#pragma unroll 4
        for (uint32_t e = threadIdx.x; e < n4; e += RANGE_BS) {
            const float4 w = k4[e];
            const float x[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
            for (int j = 0; j < 4; j++) {
                const float v = vk_read(x[j], KVQ_VIDKV_DOMAIN, daz, f, err);
                lo[j] = fminf(lo[j], v);
#if defined(KVQ_VIDKV_PLANT) && KVQ_VIDKV_PLANT == 8
                if (j != 3) /* planted: the fourth channel of each quad keeps no greatest value */
#endif
                hi[j] = fmaxf(hi[j], v);
            }
        }
        if (threadIdx.x < n4) {
#pragma unroll
            for (int j = 0; j < 4; j++) {
                atomicMin(&smn[c4 + j], vk_ord(lo[j]));
                atomicMax(&smx[c4 + j], vk_ord(hi[j]));
            }
        }
    } else if (cstep == 0u) { /* d divides the block: one channel a thread, extremes in registers */
        uint32_t lo = 0xFFFFFFFFu, hi = 0u;
        for (uint32_t e = threadIdx.x; e < n; e += blockDim.x) {
            const uint32_t o = vk_ord(vk_read(k[base + e], KVQ_VIDKV_DOMAIN, daz, f, err));
            lo = min(lo, o);
            hi = max(hi, o);
        }
        if (lo != 0xFFFFFFFFu) atomicMin(&smn[c], lo);
        if (hi != 0u) atomicMax(&smx[c], hi);
    } else {
        for (uint32_t e = threadIdx.x; e < n; e += blockDim.x) {
            const uint32_t o = vk_ord(vk_read(k[base + e], KVQ_VIDKV_DOMAIN, daz, f, err));
            atomicMin(&smn[c], o);
            atomicMax(&smx[c], o);
            c += cstep;
            if (c >= d) c -= d;
        }
    }
    vk_publish(st, f, err);
    __syncthreads();
    const uint32_t row = p.split == KVQ_VIDKV_SPLIT_PER_HEAD ? h : 0u;
    for (uint32_t cc = threadIdx.x; cc < d; cc += blockDim.x) {
        if (smn[cc] != 0xFFFFFFFFu) atomicMin(&gmn[(uint64_t)row * d + cc], smn[cc]);
        if (smx[cc] != 0u) atomicMax(&gmx[(uint64_t)row * d + cc], smx[cc]);
    }
}

__global__ void vk_init_kernel(uint32_t *gmn, uint32_t *gmx, uint64_t n)
{
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
    const uint32_t tpb = max(1u, RANGE_ELEMS / d);
    const dim3 grid((p->tokens + tpb - 1u) / tpb, p->heads);
    vk_init_kernel<<<vk_blocks((uint64_t)rows * d, 256u), 256u, 0, s>>>(gmn, gmx, (uint64_t)rows * d);
    /* 16-byte loads when a row is whole float4s, the block's threads a whole number of
     * rows' worth of them (d / 4 divides RANGE_BS) and the keys 16-byte aligned */
    const bool vec = d % 4u == 0u && RANGE_BS % (d / 4u) == 0u && ((uintptr_t)k & 15u) == 0u;
    if (vec)
        vk_range_kernel<true><<<grid, RANGE_BS, 0, s>>>(gmn, gmx, st, k, *p, tpb,
                                                        pol->subnormal == KVQ_SUBNORMAL_DAZ);
    else
        vk_range_kernel<false><<<grid, RANGE_BS, 0, s>>>(gmn, gmx, st, k, *p, tpb,
                                                         pol->subnormal == KVQ_SUBNORMAL_DAZ);
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
        VK_CK(cudaMemsetAsync(dst, 0, sizeof *dst, stream));
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
