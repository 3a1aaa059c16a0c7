/*
 * stp.cu -- VIDKV semantic token protection on CUDA [VIDKV-STP-01..03]
 * [VIDKV-DEV-03], bit-exact to ref/fast/vidkv.c (stp_core, kvq_vidkv_stp_select):
 * the score vectors read and checked [VIDKV-L-03..04], the text sums, the
 * scores, the selection of the first n_p visual tokens (greater score first,
 * equal score by lower index) and the protection mask, and the two token lists
 * (unprotected, protected; ascending) the value kernels of ternary.cu take.
 *
 * Kernels:
 *   vk_xs_check_kernel  every score input read [VIDKV-L-03..04] (SDOMAIN):
 *                       errors and the SUBNORMAL flag
 *   vk_tsum_kernel      t_c: a block 8 channels; the text rows in tiles of
 *                       1024 loaded by all 256 threads into shared memory (32
 *                       loads a thread in flight), then one thread a channel
 *                       adds the tile's rows in ascending j, one binary32
 *                       addition each, from +0 (the loads off the additions'
 *                       dependent chain)
 *   vk_score_kernel     score_i: one warp a visual row; the lanes form the
 *                       products RN32(xs[i][c] * t_c) of 32 channels, then every
 *                       lane adds them in ascending c from +0 (shuffles), so the
 *                       sum is the pinned sequence; the sort key of the row
 *   (cub::DeviceRadixSort) the keys ascending: the selection order
 *   vk_mark_kernel      the first n_p keys' tokens flagged
 *   vk_protmask_kernel  the mask bytes from the flags
 *   (cub::DeviceScan)   protected tokens before each token
 *   vk_lists_kernel     the two lists
 *
 * The sort key of visual row i is (K(score_i) << ib) | i, K a map of the
 * binary32 scores onto uint32_t that reverses their numeric order (-0 and +0
 * one value), ib the bits of vis_count - 1, so ascending keys are greater
 * scores first and, among equal scores, lower indices first: exactly
 * kvq_vidkv_before; the radix sort runs over the 32 + ib bits in use.  A radix sort is
 * deterministic, so the selection is one answer, whatever the launch.
 *
 * KVQ_VIDKV_PLANT (a build of the device test only, gpu/vidkv/rules.mk) plants
 * one bug: 1 equal scores by higher index, 2 the scores summed in descending
 * channel order within each chunk of 32, 6 each tile of text rows added in
 * descending j; 3 and 4 are ternary.cu's, 5 and 7 groups.cu's (the key
 * dequantizer writes whatever the checks found; the word store of the G = 32
 * codes puts the last code in the slot before it), 8 split.cu's.
 */
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>
#include <cuda_runtime.h>

#include "kvq_cuda.h"
#include "vidkv/kvq_cuda_vidkv.h"
#include "vidkv/vidkv_dev.cuh"

#define STP_BS 256u

__global__ void vk_xs_check_kernel(vk_state *st, const float *xs, uint64_t n, bool daz)
{
    uint32_t f = 0, err = 0;
    for (uint64_t e = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; e < n;
         e += (uint64_t)gridDim.x * blockDim.x)
        (void)vk_read(xs[e], KVQ_VIDKV_SDOMAIN, daz, f, err);
    vk_publish(st, f, err);
}

/* t_c for a chunk of TS_C channels (one block): the text rows in tiles of TS_R
 * rows, every thread of the block loading TS_R / (TS_BS / TS_C) rows of the tile
 * into shared memory (all its loads in flight at once), then one thread a
 * channel adds the tile's rows in ascending j, one binary32 addition each, from
 * the running sum (+0 before the first): the pinned sequence, the loads no longer
 * on the additions' path. */
#define TS_C  8u
#define TS_BS 256u
#define TS_R  1024u
__global__ void __launch_bounds__(TS_BS)
vk_tsum_kernel(float *tsum, const float *xs, uint32_t ds, uint32_t tf, uint32_t lt, bool daz)
{
    __shared__ float tile[TS_R][TS_C];
    const uint32_t c0 = blockIdx.x * TS_C, cl = threadIdx.x % TS_C, r0 = threadIdx.x / TS_C;
    constexpr uint32_t RS = TS_BS / TS_C; /* rows a load step covers */
    const bool live = c0 + cl < ds;
    const float *x = xs + (uint64_t)tf * ds + c0 + cl;
    float a = 0.0f;
    for (uint32_t j0 = 0; j0 < lt; j0 += TS_R) {
        const uint32_t n = min(TS_R, lt - j0);
        float r[TS_R / RS];
#pragma unroll
        for (uint32_t k = 0; k < TS_R / RS; k++) {
            const uint32_t i = r0 + k * RS;
            r[k] = live && i < n ? x[(uint64_t)(j0 + i) * ds] : 0.0f;
        }
        __syncthreads(); /* the previous tile's additions are done */
#pragma unroll
        for (uint32_t k = 0; k < TS_R / RS; k++) tile[r0 + k * RS][cl] = r[k];
        __syncthreads();
        if (threadIdx.x < TS_C && live) {
#if defined(KVQ_VIDKV_PLANT) && KVQ_VIDKV_PLANT == 6
            /* planted: the tile's rows added in descending j */
            for (uint32_t i = n; i-- > 0u;) a = __fadd_rn(a, vk_daz(tile[i][cl], daz));
#else
#pragma unroll 16
            for (uint32_t i = 0; i < n; i++) a = __fadd_rn(a, vk_daz(tile[i][cl], daz));
#endif
        }
    }
    if (threadIdx.x < TS_C && live) tsum[c0 + cl] = a;
}

/* K: descending numeric order of binary32 scores as ascending uint32_t. */
__device__ __forceinline__ uint32_t vk_desc_key(float s)
{
    uint32_t u = s == 0.0f ? 0u : __float_as_uint(s);
    u = (u & 0x80000000u) ? ~u : (u | 0x80000000u); /* ascending numeric order */
    return ~u;
}

__global__ void vk_score_kernel(float *score, unsigned long long *key, const float *xs,
                                const float *tsum, uint32_t ds, uint32_t vf, uint32_t lv, uint32_t ib,
                                bool daz)
{
    const uint64_t w = ((uint64_t)blockIdx.x * blockDim.x + threadIdx.x) / 32u;
    const uint32_t lane = threadIdx.x & 31u;
    if (w >= lv) return; /* the whole warp */
    const float *row = xs + (uint64_t)(vf + (uint32_t)w) * ds;
    float a = 0.0f;
    for (uint32_t c0 = 0; c0 < ds; c0 += 32u) {
        const uint32_t c = c0 + lane, n = min(32u, ds - c0);
        const float pr = c < ds ? __fmul_rn(vk_daz(row[c], daz), tsum[c]) : 0.0f;
#if defined(KVQ_VIDKV_PLANT) && KVQ_VIDKV_PLANT == 2
        /* planted: each chunk of 32 products added in descending c */
        for (uint32_t k = n; k-- > 0u;) a = __fadd_rn(a, __shfl_sync(0xFFFFFFFFu, pr, k));
#else
        for (uint32_t k = 0; k < n; k++) a = __fadd_rn(a, __shfl_sync(0xFFFFFFFFu, pr, k));
#endif
    }
    if (lane == 0u) {
        if (score != NULL) score[w] = a;
#if defined(KVQ_VIDKV_PLANT) && KVQ_VIDKV_PLANT == 1
        /* planted: equal scores by higher index */
        key[w] = ((unsigned long long)vk_desc_key(a) << ib) | (unsigned long long)(0xFFFFFFFFu - (uint32_t)w);
#else
        key[w] = ((unsigned long long)vk_desc_key(a) << ib) | (unsigned long long)w;
#endif
    }
}

__global__ void vk_mark_kernel(uint32_t *flag, const unsigned long long *sorted, uint32_t np,
                               uint32_t vf, uint32_t ib)
{
    const uint32_t r = blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned long long im = (1ull << ib) - 1u;
#if defined(KVQ_VIDKV_PLANT) && KVQ_VIDKV_PLANT == 1
    if (r < np) flag[vf + (0xFFFFFFFFu - (uint32_t)(sorted[r] & im))] = 1u;
#else
    if (r < np) flag[vf + (uint32_t)(sorted[r] & im)] = 1u;
#endif
}

__global__ void vk_protmask_kernel(uint8_t *prot, const uint32_t *flag, uint32_t T)
{
    const uint32_t b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= (T + 7u) / 8u) return;
    uint32_t acc = 0;
    for (uint32_t k = 0; k < 8u && 8u * b + k < T; k++) acc |= (flag[8u * b + k] ? 1u : 0u) << k;
    prot[b] = (uint8_t)acc;
}

/* flag[t] = bit t of a stored protection mask (the dequantizer's lists). */
__global__ void vk_maskflag_kernel(uint32_t *flag, const uint8_t *prot, uint32_t T)
{
    const uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t < T) flag[t] = kvq_vidkv_mask_get(prot, t);
}

__global__ void vk_lists_kernel(uint32_t *lt, uint32_t *lp, const uint32_t *flag,
                                const uint32_t *ppos, uint32_t T)
{
    const uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= T) return;
    if (flag[t]) {
        if (lp != NULL) lp[ppos[t]] = t;
    } else if (lt != NULL) {
        lt[t - ppos[t]] = t;
    }
}

/* ---- host side ------------------------------------------------------------------ */

static size_t up256(size_t n) { return (n + 255u) / 256u * 256u; }

/* The scratch of vk_stp_enqueue (offsets below), 0 on a size query failure. */
typedef struct stp_layout {
    size_t tsum, key0, key1, flag, ppos, temp, temp_bytes, total;
} stp_layout;

static int stp_plan(stp_layout *L, uint32_t T, uint32_t ds, uint32_t lv)
{
    size_t sb = 0, cb = 0;
    if (cub::DeviceRadixSort::SortKeys(NULL, sb, (const unsigned long long *)NULL,
                                       (unsigned long long *)NULL, (int)lv) != cudaSuccess ||
        cub::DeviceScan::ExclusiveSum(NULL, cb, (const uint32_t *)NULL, (uint32_t *)NULL, (int)T) !=
            cudaSuccess)
        return 0;
    L->tsum = 0;
    L->key0 = L->tsum + up256((size_t)ds * 4u);
    L->key1 = L->key0 + up256((size_t)lv * 8u);
    L->flag = L->key1 + up256((size_t)lv * 8u);
    L->ppos = L->flag + up256((size_t)T * 4u);
    L->temp = L->ppos + up256((size_t)T * 4u);
    L->temp_bytes = up256(sb > cb ? sb : cb);
    L->total = L->temp + L->temp_bytes;
    return 1;
}

size_t vk_stp_scratch(const kvq_vidkv_params *p, const kvq_vidkv_stp *s)
{
    stp_layout L;
    return stp_plan(&L, p->tokens, s->ds, s->vis_count) ? L.total : 0u;
}

/* The lists of a protection flag array (flag, ppos in the scratch). */
static kvq_status lists_enqueue(uint32_t *lt, uint32_t *lp, uint32_t *flag, uint32_t *ppos,
                                void *temp, size_t temp_bytes, uint32_t T, cudaStream_t s)
{
    size_t tb = temp_bytes;
    if (cub::DeviceScan::ExclusiveSum(temp, tb, flag, ppos, (int)T, s) != cudaSuccess)
        return KVQ_E_DEVICE;
    vk_lists_kernel<<<vk_blocks(T, STP_BS), STP_BS, 0, s>>>(lt, lp, flag, ppos, T);
    return cudaGetLastError() == cudaSuccess ? KVQ_OK : KVQ_E_DEVICE;
}

kvq_status vk_stp_enqueue(uint8_t *prot, float *score, uint32_t *lt, uint32_t *lp, vk_state *st,
                          const kvq_vidkv_params *p, const kvq_vidkv_stp *s, bool daz,
                          void *scratch, cudaStream_t cs)
{
    stp_layout L;
    const uint32_t T = p->tokens, np = kvq_vidkv_prot_count(p->protect, s->vis_count);
    if (!stp_plan(&L, T, s->ds, s->vis_count)) return KVQ_E_DEVICE;
    uint8_t *w = (uint8_t *)scratch;
    float *tsum = (float *)(w + L.tsum);
    unsigned long long *k0 = (unsigned long long *)(w + L.key0), *k1 = (unsigned long long *)(w + L.key1);
    uint32_t *flag = (uint32_t *)(w + L.flag), *ppos = (uint32_t *)(w + L.ppos);
    const uint64_t n = (uint64_t)s->rows * s->ds;
    /* the index field of the sort keys: the bits of vis_count - 1, so the sort runs over
     * 32 + ib bits, not 64 (the planted index 0xFFFFFFFF - i needs all 32) */
    uint32_t ib = 1u;
    while (ib < 32u && ((s->vis_count - 1u) >> ib) != 0u) ib++;
#if defined(KVQ_VIDKV_PLANT) && KVQ_VIDKV_PLANT == 1
    ib = 32u;
#endif
    unsigned int nb = vk_blocks(n, STP_BS);
    if (nb > 8192u) nb = 8192u;
    vk_xs_check_kernel<<<nb, STP_BS, 0, cs>>>(st, s->xs, n, daz);
    vk_tsum_kernel<<<(s->ds + TS_C - 1u) / TS_C, TS_BS, 0, cs>>>(tsum, s->xs, s->ds, s->txt_first,
                                                                s->txt_count, daz);
    vk_score_kernel<<<vk_blocks((uint64_t)s->vis_count * 32u, STP_BS), STP_BS, 0, cs>>>(
        score, k0, s->xs, tsum, s->ds, s->vis_first, s->vis_count, ib, daz);
    if (cudaGetLastError() != cudaSuccess) return KVQ_E_DEVICE;
    if (cudaMemsetAsync(flag, 0, (size_t)T * 4u, cs) != cudaSuccess) return KVQ_E_DEVICE;
    if (np > 0u) {
        size_t tb = L.temp_bytes;
        if (cub::DeviceRadixSort::SortKeys(w + L.temp, tb, k0, k1, (int)s->vis_count, 0, (int)(32u + ib),
                                           cs) != cudaSuccess)
            return KVQ_E_DEVICE;
        vk_mark_kernel<<<vk_blocks(np, STP_BS), STP_BS, 0, cs>>>(flag, k1, np, s->vis_first, ib);
    }
    vk_protmask_kernel<<<vk_blocks((T + 7u) / 8u, STP_BS), STP_BS, 0, cs>>>(prot, flag, T);
    if (cudaGetLastError() != cudaSuccess) return KVQ_E_DEVICE;
    if (lt == NULL && lp == NULL) return KVQ_OK;
    return lists_enqueue(lt, lp, flag, ppos, w + L.temp, L.temp_bytes, T, cs);
}

size_t vk_mask_lists_scratch(uint32_t T)
{
    stp_layout L;
    return stp_plan(&L, T, 1u, 1u) ? L.total : 0u;
}

kvq_status vk_prot_lists_enqueue(uint32_t *lt, uint32_t *lp, const uint8_t *prot, uint32_t T,
                                 void *scratch, cudaStream_t cs)
{
    stp_layout L;
    if (!stp_plan(&L, T, 1u, 1u)) return KVQ_E_DEVICE;
    uint8_t *w = (uint8_t *)scratch;
    uint32_t *flag = (uint32_t *)(w + L.flag), *ppos = (uint32_t *)(w + L.ppos);
    vk_maskflag_kernel<<<vk_blocks(T, STP_BS), STP_BS, 0, cs>>>(flag, prot, T);
    if (cudaGetLastError() != cudaSuccess) return KVQ_E_DEVICE;
    return lists_enqueue(lt, lp, flag, ppos, w + L.temp, L.temp_bytes, T, cs);
}

/* The STP ranges [VIDKV-STP-01] (ref/fast/vidkv.c stp_check). */
kvq_status vk_stp_check(const kvq_vidkv_params *p, const kvq_vidkv_stp *s)
{
    if (s == NULL || s->xs == NULL) return KVQ_E_PARAM;
    if (s->ds == 0u || s->ds > KVQ_VIDKV_MAX_SDIM || s->rows < p->tokens ||
        s->rows > KVQ_VIDKV_MAX_TOKENS || s->vis_count == 0u || s->txt_count == 0u ||
        s->vis_first > p->tokens || s->vis_count > p->tokens - s->vis_first ||
        s->txt_first > s->rows || s->txt_count > s->rows - s->txt_first)
        return KVQ_E_SHAPE;
    return KVQ_OK;
}

kvq_status kvq_cuda_vidkv_stp_select(float *d_score, uint8_t *d_prot, uint32_t *flags,
                                     const kvq_vidkv_params *p, const kvq_vidkv_stp *s,
                                     const kvq_policy *pol, cudaStream_t stream)
{
    kvq_status st;
    void *ws = NULL;
    vk_state h = {0u, 0u};
    if (d_score == NULL || d_prot == NULL || p == NULL) return KVQ_E_PARAM;
    if ((st = vk_check_call(p, pol)) != KVQ_OK) return st;
    if ((st = vk_stp_check(p, s)) != KVQ_OK) return st;
    if (kvq_cuda_device_check(NULL, 0) != KVQ_OK) return KVQ_E_NODEVICE;
    const size_t sb = vk_stp_scratch(p, s), vb = up256((size_t)s->vis_count * 4u),
                 mb = up256(kvq_vidkv_prot_mask_bytes(p));
    if (sb == 0u) return KVQ_E_DEVICE;
    if (cudaMallocAsync(&ws, 256u + vb + mb + sb, stream) != cudaSuccess) return KVQ_E_NOMEM;
    {
        uint8_t *w = (uint8_t *)ws;
        vk_state *dst = (vk_state *)w;
        float *sc = (float *)(w + 256u);
        uint8_t *pm = w + 256u + vb;
        VK_CK(cudaMemsetAsync(dst, 0, sizeof *dst, stream));
        if ((st = vk_stp_enqueue(pm, sc, NULL, NULL, dst, p, s, pol->subnormal == KVQ_SUBNORMAL_DAZ,
                                 w + 256u + vb + mb, stream)) != KVQ_OK)
            goto out;
        VK_CK(vk_readback(&h, dst, sizeof h, stream));
        if ((st = vk_state_status(&h)) != KVQ_OK) goto out;
        VK_CK(cudaMemcpyAsync(d_score, sc, (size_t)s->vis_count * 4u, cudaMemcpyDeviceToDevice, stream));
        VK_CK(cudaMemcpyAsync(d_prot, pm, kvq_vidkv_prot_mask_bytes(p), cudaMemcpyDeviceToDevice, stream));
        if (flags != NULL) *flags = h.flags;
    }
out:
    cudaFreeAsync(ws, stream);
    if (cudaStreamSynchronize(stream) != cudaSuccess && st == KVQ_OK) st = KVQ_E_DEVICE;
    return st;
}
