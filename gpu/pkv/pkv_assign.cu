/*
 * pkv_assign.cu -- PKV min-max (or Euclidean) assignment on CUDA, bit-exact to
 * kvq_pkv_assign (ref/fast/pkv.c) [PKV-A-01..03] [PKV-KM-02].
 *
 * Kernels:
 *   pkv_assign_check_kernel   every input and pattern value against the domain
 *                      [PKV-DOM-01], OR of the error bits into the call's state
 *   pkv_assign_kernel  index[t] for every token: a segment of P lanes a token
 *                      (pkv_dev.cuh), returning at once when the check failed
 *   pkv_assign_pruned_kernel  the same indices by the pruned argmin [PKV-DEV-05]
 *                      (d = 128, at most 32 patterns, min-max: the default there;
 *                      KVQ_CUDA_PKV_UNPRUNED takes pkv_assign_kernel)
 * so nothing is written on error [PKV-ERR-01].
 */
#include <cuda_runtime.h>

#include <stdio.h>

#include "kvq_cuda_pkv.h"
#include "pkv/pkv_dev.cuh"

__global__ void __launch_bounds__(256)
pkv_assign_check_kernel(const float *__restrict__ x, uint64_t nx, const float *__restrict__ bank,
                 uint64_t nb, kvq_dev_state *st)
{
    uint32_t err = 0;
    const uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    for (uint64_t e = dev_tid(); e < nx + nb; e += stride)
        err |= dev_pkv_check(e < nx ? x[e] : __ldg(bank + (e - nx)));
    dev_pkv_publish_err(st, err);
}

__global__ void __launch_bounds__(256)
pkv_assign_kernel(uint16_t *__restrict__ index, const float *__restrict__ x, uint32_t tokens,
                  uint32_t dim, const float *__restrict__ bank, uint32_t npat, uint32_t dist,
                  uint32_t lgP, int vec, const kvq_dev_state *st)
{
    if (__ldg(&st->err) != 0u) return;   /* final: a kernel boundary orders it */
    const uint32_t lane = threadIdx.x & 31u, sub = lane & ((1u << lgP) - 1u);
    const uint32_t tpw = 32u >> lgP;     /* tokens a warp */
    const uint64_t nwarps = (uint64_t)gridDim.x * blockDim.x / 32u;
    for (uint64_t base = dev_tid() / 32u * tpw; base < tokens; base += nwarps * tpw) {
        const uint64_t t = base + (lane >> lgP);
        const bool act = t < tokens;
        const float *xt = x + (act ? t : 0u) * dim;
        float bd;
        const uint32_t j = dev_pkv_nearest(&bd, xt, bank, npat, dim, dist, vec != 0, sub, lgP, act);
        if (act && sub == 0u) index[t] = (uint16_t)j;
    }
}

/* A warp a token, the bank in the block's shared memory, the row staged as in
 * pkv_quant.cu's pruned kernels (pkv_dev.cuh); returns at once when the check
 * failed (grid-uniform, so no block stops short of its barrier). */
template <int D>
__global__ void __launch_bounds__(PKV_PRUNE_BS, PKV_PRUNE_BLOCKS)
pkv_assign_pruned_kernel(uint16_t *__restrict__ index, const float *__restrict__ x,
                         uint32_t tokens, const float *__restrict__ bank, uint32_t npat,
                         const kvq_dev_state *st)
{
    if (__ldg(&st->err) != 0u) return;
    __shared__ __align__(16) float sb[32 * PKV_SROW];
    __shared__ __align__(16) float srow[PKV_PRUNE_BS / 32][D];
    dev_pkv_stage_bank<D>(sb, bank, npat);
    const uint32_t lane = threadIdx.x & 31u;
    const uint64_t nwarps = (uint64_t)gridDim.x * blockDim.x / 32u;
    float pv[PKV_PROBE];
    dev_pkv_probe_values<D>(pv, sb + lane * PKV_SROW);
    const pkv_pat_sum ps = dev_pkv_pattern_summary<D>(sb + lane * PKV_SROW);
    float *xt = srow[threadIdx.x >> 5];
    float4 next = dev_pkv_row_next<D>(x, dev_tid() / 32u, tokens, lane);
    for (uint64_t t = dev_tid() / 32u; t < tokens; t += nwarps) { /* warp-uniform */
        if (t + PKV_AHEAD * nwarps < tokens)
            dev_pkv_prefetch_row(x + (t + PKV_AHEAD * nwarps) * D, D, lane, 32u);
        dev_pkv_row_stage<D>(xt, next, lane);
        next = dev_pkv_row_next<D>(x, t + nwarps, tokens, lane);
        float vmin, vmax, bd;
        (void)dev_pkv_row_scan32<D>(&vmin, &vmax, xt, lane); /* checked before */
        const uint32_t j = dev_pkv_nearest_pruned<D>(&bd, NULL, xt, vmin, vmax, sb, pv, ps, npat,
                                                     lane);
        if (lane == 0u) index[t] = (uint16_t)j;
    }
}

extern "C" kvq_status kvq_cuda_pkv_assign(uint16_t *d_index, const float *d_x, uint32_t tokens,
                                          uint32_t dim, const float *d_bank, uint32_t npat,
                                          uint32_t dist, uint32_t opts, cudaStream_t stream)
{
    if (d_index == NULL || d_x == NULL || d_bank == NULL || dist > KVQ_PKV_DIST_EUCLID ||
        (opts & ~KVQ_CUDA_PKV_UNPRUNED) != 0u)
        return KVQ_E_PARAM;
    if (!pkv_extent_ok(tokens, dim) || npat == 0u || npat > KVQ_PKV_MAX_PATTERNS) return KVQ_E_SHAPE;
    kvq_dev_state *st = NULL, h;
    if (cudaMallocAsync((void **)&st, sizeof *st, stream) != cudaSuccess) {
        (void)cudaGetLastError();
        return KVQ_E_NOMEM;
    }
    const uint64_t nx = (uint64_t)tokens * dim, nb = (uint64_t)npat * dim;
    const uint32_t lgP = pkv_lg_lanes(npat);
    const int vec = dim % 4u == 0u && ((uintptr_t)d_x % 16u) == 0u && ((uintptr_t)d_bank % 16u) == 0u;
    kvq_status rs = KVQ_E_DEVICE;
    if (cudaMemsetAsync(st, 0, sizeof *st, stream) == cudaSuccess) {
        pkv_assign_check_kernel<<<pkv_grid(nx + nb, 256), 256, 0, stream>>>(d_x, nx, d_bank, nb, st);
        if ((opts & KVQ_CUDA_PKV_UNPRUNED) == 0u && dim == 128u && npat <= 32u &&
            dist == KVQ_PKV_DIST_MINMAX && vec) { /* [PKV-DEV-05] */
            int dev = 0, sms = 132;
            cudaGetDevice(&dev);
            cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
            const uint64_t want = ((uint64_t)tokens * 32u + PKV_PRUNE_BS - 1u) / PKV_PRUNE_BS;
            const uint64_t most = (uint64_t)sms * PKV_PRUNE_BLOCKS;
            pkv_assign_pruned_kernel<128><<<(unsigned int)(want < most ? want : most),
                                             PKV_PRUNE_BS, 0, stream>>>(d_index, d_x, tokens,
                                                                        d_bank, npat, st);
        } else {
            pkv_assign_kernel<<<pkv_grid((uint64_t)tokens * (1u << lgP), 256), 256, 0, stream>>>(
                d_index, d_x, tokens, dim, d_bank, npat, dist, lgP, vec, st);
        }
        if (cudaGetLastError() == cudaSuccess &&
            cudaMemcpyAsync(&h, st, sizeof h, cudaMemcpyDeviceToHost, stream) == cudaSuccess &&
            cudaStreamSynchronize(stream) == cudaSuccess)
            rs = (kvq_status)pkv_err_status(h.err);
    }
    (void)cudaFreeAsync(st, stream);
    if (cudaStreamSynchronize(stream) != cudaSuccess) rs = KVQ_E_DEVICE;
    return rs;
}

extern "C" kvq_status kvq_cuda_pkv_assign_host(uint16_t *index, const float *x, uint32_t tokens,
                                               uint32_t dim, const float *bank, uint32_t npat,
                                               uint32_t dist)
{
    if (index == NULL || x == NULL || bank == NULL || dist > KVQ_PKV_DIST_EUCLID)
        return KVQ_E_PARAM;
    if (!pkv_extent_ok(tokens, dim) || npat == 0u || npat > KVQ_PKV_MAX_PATTERNS) return KVQ_E_SHAPE;
    const uint64_t nx = (uint64_t)tokens * dim, nb = (uint64_t)npat * dim;
    float *dx = NULL, *db = NULL;
    uint16_t *di = NULL;
    kvq_status st = KVQ_E_NOMEM;
    if (cudaMalloc(&dx, nx * sizeof(float)) != cudaSuccess) goto out;
    if (cudaMalloc(&db, nb * sizeof(float)) != cudaSuccess) goto out;
    if (cudaMalloc(&di, kvq_pkv_index_bytes(tokens)) != cudaSuccess) goto out;
    st = KVQ_E_DEVICE;
    if (cudaMemcpy(dx, x, nx * sizeof(float), cudaMemcpyHostToDevice) != cudaSuccess ||
        cudaMemcpy(db, bank, nb * sizeof(float), cudaMemcpyHostToDevice) != cudaSuccess)
        goto out;
    st = kvq_cuda_pkv_assign(di, dx, tokens, dim, db, npat, dist, 0u, 0);
    if (st == KVQ_OK &&
        cudaMemcpy(index, di, kvq_pkv_index_bytes(tokens), cudaMemcpyDeviceToHost) != cudaSuccess)
        st = KVQ_E_DEVICE;
out:
    cudaFree(dx);
    cudaFree(db);
    cudaFree(di);
    (void)cudaGetLastError();
    return st;
}
