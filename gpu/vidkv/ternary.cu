/*
 * ternary.cu -- the VIDKV ternary values on CUDA [VIDKV-V-01..06], without
 * STP, bit-exact to ref/fast/vidkv.c (kvq_vidkv_quantize_values /
 * kvq_vidkv_dequantize_values with p = 0).
 *
 * Kernels:
 *   vk_tern_quant_kernel  one thread a group (head, block, channel; G = 32 and 64
 *                         held in registers, any other G read twice):
 *                         consecutive threads consecutive channels, so every
 *                         token's load is coalesced; the inputs are read and
 *                         checked here [VIDKV-L-03..04] (each once); S, mean,
 *                         alpha [VIDKV-V-02], the trits, BASE3 or BITS2 bytes
 *                         [VIDKV-V-04], beta under SCALED [VIDKV-V-03]
 *   vk_tern_check_kernel  stored groups valid [VIDKV-D-03] (first bad group)
 *   vk_tern_deq_kernel    one thread an element: -1 / 0 / +1 (RAW) or
 *                         code * beta (SCALED)
 */
#include <cuda_runtime.h>

#include "kvq_cuda.h"
#include "vidkv/kvq_cuda_vidkv.h"
#include "vidkv/vidkv_dev.cuh"

#define TERN_BS 128u

/* GT = G known at compile time (32, 64: the group's values stay in registers,
 * each input read once) or 0 (any G: the values read again for the codes). */
template <uint32_t GT>
__global__ void __launch_bounds__(TERN_BS)
vk_tern_quant_kernel(uint8_t *tern, float *beta, vk_state *st, const float *v, kvq_vidkv_params p,
                     bool daz, bool nanpol)
{
    const uint64_t gid = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const uint32_t G = GT ? GT : p.group, nb = p.tokens / G, d = p.dim;
    const uint64_t ng = (uint64_t)p.heads * nb * d;
    uint32_t f = 0, err = 0;
    if (gid < ng) {
        const uint32_t c = (uint32_t)(gid % d);
        const uint64_t hb = gid / d;
        const float *x = v + (hb * G) * d + c; /* (h*nb + b)*G = h*T + b*G */
        const uint32_t gb = kvq_vidkv_tern_group_bytes(&p);
        uint8_t *grp = tern + gid * gb;
        float S = 0.0f, B = 0.0f;
        float r[GT ? GT : 1u];
        uint32_t nz = 0;
#pragma unroll
        for (uint32_t i = 0; i < G; i++) {
            const float xv = vk_read(x[(uint64_t)i * d], KVQ_VIDKV_DOMAIN, daz, f, err);
            if (GT) r[GT ? i : 0u] = xv;
            S = __fadd_rn(S, fabsf(xv));
        }
        const float mean = __fdiv_rn(S, (float)G);
        const float alpha = __fmul_rn(p.gamma, mean);
        uint32_t acc = 0, cnt = 0, pw = 1, by = 0;
#pragma unroll
        for (uint32_t i = 0; i < G; i++) {
            uint32_t g2 = 0;
            const float xv = GT ? r[GT ? i : 0u] : vk_reread(x[(uint64_t)i * d], daz, g2);
            const int32_t t = kvq_vidkv_trit(xv, alpha);
            const uint32_t dg = kvq_vidkv_trit_digit(t);
            if (t != 0) {
                B = __fadd_rn(B, fabsf(xv));
                nz++;
            }
            if (p.vpack == KVQ_VIDKV_PACK_BASE3) {
                acc += dg * pw;
                pw *= 3u;
                if (++cnt == 5u) {
                    grp[by++] = (uint8_t)acc;
                    acc = 0;
                    cnt = 0;
                    pw = 1;
                }
            } else {
                acc |= dg << (2u * (i % 4u));
                if (i % 4u == 3u) {
                    grp[by++] = (uint8_t)acc;
                    acc = 0;
                }
            }
        }
        if (p.vpack == KVQ_VIDKV_PACK_BASE3 && cnt) grp[by] = (uint8_t)acc;
        if (p.vdeq == KVQ_VIDKV_VDEQ_SCALED)
            beta[gid] = vk_store_scale(nz ? __fdiv_rn(B, (float)nz) : 0.0f, p.meta, nanpol, f, err);
    }
    vk_publish(st, f, err);
}

kvq_status kvq_cuda_vidkv_quantize_values(const kvq_vidkv_values *d_out, uint32_t *flags,
                                          const float *d_v, const kvq_vidkv_params *p,
                                          const kvq_policy *pol, uint32_t opts,
                                          cudaStream_t stream)
{
    kvq_status st;
    void *ws = NULL;
    vk_state h = {0u, 0u};
    uint64_t tcb, ntg;
    size_t tb, bb;
    const bool direct = (opts & KVQ_CUDA_DIRECT) != 0u;
    if (d_out == NULL || d_v == NULL || p == NULL || d_out->tern == NULL) return KVQ_E_PARAM;
    if ((st = vk_check_call(p, pol)) != KVQ_OK) return st;
    if (p->vdeq == KVQ_VIDKV_VDEQ_SCALED && d_out->beta == NULL) return KVQ_E_PARAM;
    if (p->protect > 0.0f) return KVQ_E_PARAM; /* STP is not on the device */
    if (kvq_cuda_device_check(NULL, 0) != KVQ_OK) return KVQ_E_NODEVICE;
    tcb = kvq_vidkv_tern_code_bytes(p, 0u);
    ntg = kvq_vidkv_tern_groups(p, 0u);
    tb = direct ? 0u : (tcb + 255u) / 256u * 256u;
    bb = direct || p->vdeq != KVQ_VIDKV_VDEQ_SCALED ? 0u : (ntg * 4u + 255u) / 256u * 256u;
    if (cudaMallocAsync(&ws, 256u + tb + bb, stream) != cudaSuccess) return KVQ_E_NOMEM;
    {
        vk_state *dst = (vk_state *)ws;
        uint8_t *tern = direct ? d_out->tern : (uint8_t *)ws + 256u;
        float *beta = direct ? d_out->beta : (float *)((uint8_t *)ws + 256u + tb);
        VK_CK(cudaMemsetAsync(dst, 0, sizeof *dst, stream));
        const bool daz = pol->subnormal == KVQ_SUBNORMAL_DAZ, nanpol = pol->overflow == KVQ_OVERFLOW_NAN;
        if (p->group == 32u)
            vk_tern_quant_kernel<32u><<<vk_blocks(ntg, TERN_BS), TERN_BS, 0, stream>>>(tern, beta, dst, d_v, *p,
                                                                                   daz, nanpol);
        else if (p->group == 64u)
            vk_tern_quant_kernel<64u><<<vk_blocks(ntg, TERN_BS), TERN_BS, 0, stream>>>(tern, beta, dst, d_v, *p,
                                                                                   daz, nanpol);
        else
            vk_tern_quant_kernel<0u><<<vk_blocks(ntg, TERN_BS), TERN_BS, 0, stream>>>(tern, beta, dst, d_v, *p,
                                                                                  daz, nanpol);
        VK_CK(cudaGetLastError());
        VK_CK(cudaMemcpyAsync(&h, dst, sizeof h, cudaMemcpyDeviceToHost, stream));
        VK_CK(cudaStreamSynchronize(stream));
        if ((st = vk_state_status(&h)) != KVQ_OK) goto out;
        if (!direct) {
            VK_CK(cudaMemcpyAsync(d_out->tern, tern, tcb, cudaMemcpyDeviceToDevice, stream));
            if (p->vdeq == KVQ_VIDKV_VDEQ_SCALED)
                VK_CK(cudaMemcpyAsync(d_out->beta, beta, ntg * 4u, cudaMemcpyDeviceToDevice, stream));
        }
        if (flags != NULL) *flags = h.flags;
    }
out:
    cudaFreeAsync(ws, stream);
    if (cudaStreamSynchronize(stream) != cudaSuccess && st == KVQ_OK) st = KVQ_E_DEVICE;
    return st;
}

/* The first group (min g) whose used slots hold an invalid digit [VIDKV-D-03]. */
__global__ void vk_tern_check_kernel(unsigned long long *key, const uint8_t *tern, uint64_t ng,
                                     uint32_t gb, uint32_t G, uint32_t pack)
{
    for (uint64_t g = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; g < ng;
         g += (uint64_t)gridDim.x * blockDim.x)
        if (!kvq_vidkv_tern_group_ok(tern + g * gb, G, pack)) atomicMin(key, (unsigned long long)g);
}

__global__ void vk_meta_check_kernel_v(unsigned long long *key, const float *a, uint64_t n,
                                       uint32_t meta)
{
    for (uint64_t g = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; g < n;
         g += (uint64_t)gridDim.x * blockDim.x) {
        const uint32_t s = vk_meta_ok(a[g], true, meta);
        if (s != KVQ_OK) atomicMin(key, (unsigned long long)g * 16u + s);
    }
}

/* The elements [VIDKV-V-03] [VIDKV-V-06]: a block DEQ_ROWS tokens of one head
 * (grid.y), threads over the channels; a base-3 digit from a shared table of
 * the 243 x 5 digits, so an element costs a byte load, a table read and a
 * select. */
#define DEQ_ROWS 16u
__global__ void vk_tern_deq_kernel(float *y, const uint8_t *tern, const float *beta,
                                   kvq_vidkv_params p)
{
    __shared__ uint8_t dig[256u * 5u];
    const uint32_t d = p.dim, G = p.group, nb = p.tokens / G, h = blockIdx.y;
    const uint32_t gb = kvq_vidkv_tern_group_bytes(&p);
    const bool base3 = p.vpack == KVQ_VIDKV_PACK_BASE3, scaled = p.vdeq == KVQ_VIDKV_VDEQ_SCALED;
    for (uint32_t k = threadIdx.x; k < 256u * 5u; k += blockDim.x)
        dig[k] = (uint8_t)kvq_vidkv_base3_digit(k / 5u, k % 5u);
    __syncthreads();
    const uint32_t t0 = blockIdx.x * DEQ_ROWS, t1 = min(p.tokens, t0 + DEQ_ROWS);
    uint32_t b = t0 / G, i = t0 % G;
    for (uint32_t t = t0; t < t1; t++) {
        const uint64_t g0 = ((uint64_t)h * nb + b) * d;
        const uint32_t bi = base3 ? i / 5u : i / 4u, sh = base3 ? i % 5u : 2u * (i % 4u);
        float *yr = y + ((uint64_t)h * p.tokens + t) * d;
        for (uint32_t c = threadIdx.x; c < d; c += blockDim.x) {
            const uint64_t g = g0 + c;
            const uint32_t by = tern[g * gb + bi];
            const uint32_t dg = base3 ? dig[by * 5u + sh] : (by >> sh) & 3u;
            const int32_t tr = kvq_vidkv_digit_trit(dg);
            float r;
            if (scaled)
                r = tr == 0 ? 0.0f : tr > 0 ? beta[g] : -beta[g];
            else
                r = tr == 0 ? 0.0f : tr > 0 ? 1.0f : -1.0f;
            yr[c] = r;
        }
        if (++i == G) {
            i = 0;
            b++;
        }
    }
}

kvq_status kvq_cuda_vidkv_dequantize_values(float *d_y, uint32_t *flags,
                                            const kvq_vidkv_values *d_in,
                                            const kvq_vidkv_params *p, const kvq_policy *pol,
                                            cudaStream_t stream)
{
    kvq_status st;
    void *ws = NULL;
    unsigned long long hk[2];
    uint64_t ntg;
    if (d_y == NULL || d_in == NULL || p == NULL || d_in->tern == NULL) return KVQ_E_PARAM;
    if ((st = vk_check_call(p, pol)) != KVQ_OK) return st;
    if (p->vdeq == KVQ_VIDKV_VDEQ_SCALED && d_in->beta == NULL) return KVQ_E_PARAM;
    if (p->protect > 0.0f) return KVQ_E_PARAM; /* STP is not on the device */
    if (kvq_cuda_device_check(NULL, 0) != KVQ_OK) return KVQ_E_NODEVICE;
    ntg = kvq_vidkv_tern_groups(p, 0u);
    if (cudaMallocAsync(&ws, 256u, stream) != cudaSuccess) return KVQ_E_NOMEM;
    {
        unsigned long long *key = (unsigned long long *)ws;
        unsigned int nbk = vk_blocks(ntg, 256u);
        if (nbk > 4096u) nbk = 4096u;
        VK_CK(cudaMemsetAsync(key, 0xFF, 2 * sizeof *key, stream));
        vk_tern_check_kernel<<<nbk, 256u, 0, stream>>>(key, d_in->tern, ntg,
                                                       kvq_vidkv_tern_group_bytes(p), p->group,
                                                       p->vpack);
        if (p->vdeq == KVQ_VIDKV_VDEQ_SCALED)
            vk_meta_check_kernel_v<<<nbk, 256u, 0, stream>>>(key + 1, d_in->beta, ntg, p->meta);
        VK_CK(cudaGetLastError());
        VK_CK(cudaMemcpyAsync(hk, key, sizeof hk, cudaMemcpyDeviceToHost, stream));
        VK_CK(cudaStreamSynchronize(stream));
        if (hk[0] != 0xFFFFFFFFFFFFFFFFull) { st = KVQ_E_PARAM; goto out; }
        if (hk[1] != 0xFFFFFFFFFFFFFFFFull) { st = (kvq_status)(hk[1] % 16u); goto out; }
        {
            const uint32_t bs = p->dim >= 256u ? 256u : (p->dim + 31u) / 32u * 32u;
            const dim3 grid((p->tokens + DEQ_ROWS - 1u) / DEQ_ROWS, p->heads);
            vk_tern_deq_kernel<<<grid, bs, 0, stream>>>(d_y, d_in->tern, d_in->beta, *p);
        }
        VK_CK(cudaGetLastError());
        VK_CK(cudaStreamSynchronize(stream));
        if (flags != NULL) *flags = 0u;
    }
out:
    cudaFreeAsync(ws, stream);
    if (cudaStreamSynchronize(stream) != cudaSuccess && st == KVQ_OK) st = KVQ_E_DEVICE;
    return st;
}
