/*
 * sage_ds.cu -- the SAGE score correction dS = q_m K_s^T (times tau) on CUDA,
 * bit-exact to kvq_sage_delta_s (ref/fast/sage.c, spec/sage.md [SAGE-DS-01..02]).
 *
 * The pinned sequence of one output ds[r][j] is a dot product over the d
 * channels in ascending order, each product rounded, then each addition, then
 * one product with tau.  A thread computes whole outputs, so that sequence is
 * one thread's loop, written with the round-to-nearest intrinsics (__fmul_rn,
 * __fadd_rn: never contracted into an FMA, and the build adds -fmad=false)
 * [POL-ARITH-02].  No reduction is split across threads: splitting it would
 * reassociate the sum.
 *
 * Kernels:
 *   sage_ds_check_kernel   NaN/Inf of qm and ks (KVQ_E_NONFINITE), then
 *                          |v| > 2^51 (KVQ_E_PARAM) [SAGE-L-04]
 *   sage_ds_kernel<D>      one thread a key token j: its row ks[j] in D
 *                          registers, the block's qm rows staged in shared
 *                          memory DS_ROWS at a time; for every row r of the
 *                          block's row set, ds[r][j] (stores coalesced along j;
 *                          the DS_ROWS sums interleaved, each in its order);
 *                          grid z the head (sage_enqueue_ds: every head of the
 *                          attention pipeline in one launch, no host wait)
 *   sage_ds_stg_kernel<D, RW>  the same outputs, the stage kernel [SAGE-DEV-16]:
 *                          128 keys x 8 RW rows a block in shared memory, the
 *                          keys in two halves by cp.async, 2 keys x RW rows of
 *                          chains a thread a half (KVQ_SAGE_STAGES=0: the one
 *                          above); in the pipeline without the check pass, whose
 *                          inputs are in the domain by [SAGE-LEM-01]
 *
 * Errors, in the reference's order [SAGE-DS-02]: the host checks the pointers,
 * rows (1 .. 2^24), rows * N <= 2^32 (KVQ_E_PARAM), the shape (KVQ_E_SHAPE)
 * and tau non-finite (KVQ_E_NONFINITE, the reference's first non-finite test);
 * a tau outside [2^-126, 2^16] is KVQ_E_PARAM only when every qm and ks is
 * finite, so the host hands it to the device check as a range error, which
 * ranks after KVQ_E_NONFINITE.  The check pass reads every input before the
 * dS kernel, stream-ordered after it, writes anything; the dS kernel returns
 * at once when the error word is set [API-ERR-01].
 *
 * The call state, the status kernel and the scratch helpers are those of
 * gpu/sage/sage_common.cuh.
 *
 * SPEC: [SAGE-DS-01] [SAGE-DS-02] [SAGE-L-04] [SAGE-LEM-02] [POL-NF-01] [POL-ARITH-02] [SAGE-DEV-07] [SAGE-DEV-09]
 *       [SAGE-DEV-16]
 */
#include <cuda_runtime.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kvq.h"
#include "kvq_sage.h"
#include "kvq_cuda.h"
#include "sage/sage_common.cuh"

#define DS_THREADS 128u         /* key tokens a block */
#define DS_TARGET_BLOCKS 4096u  /* blocks a launch aims at (rows split over grid.y) */
#define DS_ROWS 4u              /* rows a thread computes at once (independent chains) */

/* ---- input check [SAGE-DS-02] ---------------------------------------------- */

/* Every element of qm (nq values) and ks (nk values); pre: range bits the host
 * found (tau), ORed in once. */
__global__ void __launch_bounds__(256)
sage_ds_check_kernel(const float *__restrict__ qm, uint64_t nq, const float *__restrict__ ks,
                     uint64_t nk, sage_dev_state *st, uint32_t pre)
{
    uint32_t err = (blockIdx.x == 0u && threadIdx.x == 0u) ? pre : 0u;
    const uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    for (uint64_t e = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; e < nq + nk; e += stride) {
        const float v = e < nq ? __ldg(qm + e) : __ldg(ks + (e - nq));
        if (!isfinite(v)) err |= ERR_NONFINITE;                         /* [POL-NF-01] */
        else if (fabsf(v) > KVQ_SAGE_DS_MAX) err |= ERR_RANGE;          /* [SAGE-L-04] */
    }
    dev_publish(st, 0u, err);
}

/* ---- dS [SAGE-DS-01] ----------------------------------------------------------- */

/* Thread t of block (bx, by, bz) owns key token j = bx * DS_THREADS + t of
 * head bz and the rows r = by, by + gridDim.y, ... of that head (heads follow
 * each other: rows x N of dS, rows x D of qm, N x D of ks a head; the outputs
 * are independent, so the grid's shape does not move a bit of them).  D (64
 * or 128) is a template constant so
 * that the row stays in registers (fully unrolled loops, constant indices).
 * vec: ks 16-byte aligned (rows are D * 4 bytes, multiples of 16), float4 loads. */
template <uint32_t D>
__global__ void __launch_bounds__(DS_THREADS)
sage_ds_kernel(float *__restrict__ ds, const float *__restrict__ qm, const float *__restrict__ ks,
               const sage_dev_state *st, uint32_t rows, uint32_t N, float tau, int vec, uint32_t grp,
               uint32_t gofs)
{
    __shared__ float sq[DS_ROWS][D];
    __shared__ uint32_t sfailed;
    if (threadIdx.x == 0) sfailed = dev_failed(st) ? 1u : 0u;
    __syncthreads();
    if (sfailed) return;                                        /* block-uniform [API-ERR-01] */
    ds += (uint64_t)blockIdx.z * rows * N, qm += (uint64_t)blockIdx.z * rows * D;   /* the head */
    ks += (uint64_t)((blockIdx.z + gofs) / grp) * N * D;   /* its KV head [SAGE-DEV-17] */
    const uint32_t j = blockIdx.x * DS_THREADS + threadIdx.x;
    const bool live = j < N;                                    /* partial tile [SAGE-L-03] */
    float k[D];
    if (live && vec) {
        const float4 *kr = (const float4 *)(ks + (uint64_t)j * D);
#pragma unroll
        for (uint32_t c = 0; c < D / 4u; c++) {
            const float4 w = __ldg(kr + c);
            k[4u * c] = w.x, k[4u * c + 1u] = w.y, k[4u * c + 2u] = w.z, k[4u * c + 3u] = w.w;
        }
    } else {
#pragma unroll
        for (uint32_t c = 0; c < D; c++) k[c] = live ? __ldg(ks + (uint64_t)j * D + c) : 0.0f;
    }
    /* DS_ROWS rows of the block's row set at a time (r, r + gridDim.y, ...):
     * their sums are independent chains, interleaved for the pipelines; each
     * is its own output's sequence.  Rows past `rows` read zeros, store nothing. */
    const uint32_t gy = gridDim.y;
    for (uint32_t r = blockIdx.y; r < rows; r += DS_ROWS * gy) {
        __syncthreads();                                        /* sq of the previous rows read */
        for (uint32_t e = threadIdx.x; e < DS_ROWS * D; e += DS_THREADS) {
            const uint32_t i = e / D, c = e % D, ri = r + i * gy;
            sq[i][c] = ri < rows ? __ldg(qm + (uint64_t)ri * D + c) : 0.0f;
        }
        __syncthreads();
        /* a_0 = RN32(q_0 k_0); a_c = RN32(a_{c-1} + RN32(q_c k_c)), c ascending.
         * |a_c| < 2^110 [SAGE-LEM-02]. */
        float a[DS_ROWS];
#pragma unroll
        for (uint32_t i = 0; i < DS_ROWS; i++) a[i] = __fmul_rn(sq[i][0], k[0]);
#pragma unroll
        for (uint32_t c = 1; c < D; c++)
#pragma unroll
            for (uint32_t i = 0; i < DS_ROWS; i++) a[i] = __fadd_rn(a[i], __fmul_rn(sq[i][c], k[c]));
#pragma unroll
        for (uint32_t i = 0; i < DS_ROWS; i++) {
            const uint32_t ri = r + i * gy;
            if (live && ri < rows) ds[(uint64_t)ri * N + j] = __fmul_rn(a[i], tau);  /* RN32; |ds| < 2^126 */
        }
    }
}


/* ---- dS, the stage kernel [SAGE-DEV-16] --------------------------------------------
 * The same outputs by the same sequence (channels ascending, each product
 * rounded, then each addition, then the product with tau), with the operands
 * tiled in shared memory: a CTA of 8 warps takes DT_KEYS keys (their rows,
 * padded to D + 1 floats so that 32 keys at one channel hit 32 banks; by
 * cp.async in two halves of 64 keys, the second landing while the first half's
 * sums run) and 8 RW mean rows (RW = 8, or 4 when a head has at most 32;
 * stored channel-major, DT_ROWS + 4 floats a channel, read as float4
 * broadcasts); lane l owns keys l, l + 32 of each half and warp w rows
 * RW w .. RW w + RW - 1: 2 RW independent chains a thread a half.  Per channel
 * 2 + RW / 4 shared loads for 2 RW products and additions.  Rows and keys past
 * the ends read zeros and store nothing. */
#define DT_KEYS 128u


/* RW rows a warp (8, or 4 when a head has at most 32 mean rows), DT_ROWS = 8 RW
 * rows a block, stored DT_ROWS + 4 floats a channel */
#define DT_ROWS (8u * RW)
#define DT_RW RW
#define DT_QS (DT_ROWS + 4u)    /* floats a channel of the rows' tile */

template <uint32_t D, uint32_t RW>
static constexpr size_t ds_stg_smem() { return ((size_t)DT_KEYS * (D + 1u) + (size_t)D * DT_QS) * 4u; }

template <uint32_t D, uint32_t RW>
__global__ void __launch_bounds__(256, 2)
sage_ds_stg_kernel(float *__restrict__ ds, const float *__restrict__ qm, const float *__restrict__ ks,
                   const sage_dev_state *st, uint32_t rows, uint32_t N, float tau, int split, uint32_t rt,
                   uint32_t grp, uint32_t gofs)
{
    extern __shared__ float4 ds_smem4[];
    float *sk = (float *)ds_smem4;                         /* [DT_KEYS][D + 1] */
    float *sq = sk + DT_KEYS * (D + 1u);                   /* [D][DT_QS] */
    __shared__ uint32_t sfailed;
    if (threadIdx.x == 0) sfailed = dev_failed(st) ? 1u : 0u;
    __syncthreads();
    if (sfailed) return;                                   /* block-uniform [API-ERR-01] */
    const uint32_t j0 = (blockIdx.x / rt) * DT_KEYS, r0 = (blockIdx.x % rt) * DT_ROWS;
    ds += (uint64_t)blockIdx.z * rows * N, qm += (uint64_t)blockIdx.z * rows * D;   /* the head */
    ks += (uint64_t)((blockIdx.z + gofs) / grp) * N * D;   /* its KV head [SAGE-DEV-17] */
    const uint32_t tid = threadIdx.x, lane = tid & 31u, warp = tid >> 5;
    /* the keys' rows by cp.async (4 bytes: the padded rows are not 16-byte
     * aligned), zeros past N: keys 0 .. 63 of the tile, then 64 .. 127, two
     * groups, so that the second lands while the first half is computed */
#pragma unroll 1
    for (uint32_t hf = 0; hf < 2u; hf++) {
#pragma unroll 8
        for (uint32_t q = tid; q < (DT_KEYS / 2u) * D; q += 256u) {
            const uint32_t j = (DT_KEYS / 2u) * hf + q / D, c = q % D;
            const bool ok = j0 + j < N;
            cp_async4(sk + j * (D + 1u) + c, ks + (ok ? (uint64_t)(j0 + j) * D + c : 0u), ok);
        }
        cp_commit();
    }
    {                                                      /* the rows, channel-major; 8 loads in flight */
        constexpr uint32_t NQ = DT_ROWS * D / 256u;      /* 32, 16 or 8: a multiple of 8 */
#pragma unroll
        for (uint32_t l0 = 0; l0 < NQ; l0 += 8u) {
            float v[8];
#pragma unroll
            for (uint32_t l = 0; l < 8u; l++) {
                const uint32_t q = tid + 256u * (l0 + l), i = q / D, c = q % D;
                v[l] = r0 + i < rows ? __ldg(qm + (uint64_t)(r0 + i) * D + c) : 0.0f;
            }
#pragma unroll
            for (uint32_t l = 0; l < 8u; l++) {
                const uint32_t q = tid + 256u * (l0 + l), i = q / D, c = q % D;
                sq[c * DT_QS + i] = v[l];
            }
        }
    }
    const float *kp = sk + lane * (D + 1u);
    const float *qp = sq + warp * DT_RW;
    /* half hf: the thread's keys lane + 64 hf and lane + 64 hf + 32 */
#pragma unroll 1
    for (uint32_t hf = 0; hf < 2u; hf++) {
        if (hf == 0u && split) cp_wait<1>();             /* split 0: both halves before any sum */
        else cp_wait<0>();
        __syncthreads();                                   /* the rows and this half's keys */
        const float *kh = kp + hf * 64u * (D + 1u);
        float a[2][DT_RW];
        {
            /* a_0 = RN32(q_0 k_0) */
            float qv[DT_RW];
#pragma unroll
            for (uint32_t v4 = 0; v4 < DT_RW / 4u; v4++) {
                const float4 q = *(const float4 *)(qp + 4u * v4);
                qv[4u * v4] = q.x, qv[4u * v4 + 1u] = q.y, qv[4u * v4 + 2u] = q.z, qv[4u * v4 + 3u] = q.w;
            }
#pragma unroll
            for (uint32_t u = 0; u < 2u; u++) {
                const float kv = kh[u * 32u * (D + 1u)];
#pragma unroll
                for (uint32_t i = 0; i < DT_RW; i++) a[u][i] = __fmul_rn(qv[i], kv);
            }
        }
        /* a_c = RN32(a_{c-1} + RN32(q_c k_c)), c ascending; |a_c| < 2^110 [SAGE-LEM-02] */
#pragma unroll 4
        for (uint32_t c = 1; c < D; c++) {
#if KVQ_SAGE_STG_PLANT
            /* planted: channels D - 2 and D - 1 added in swapped order */
            const uint32_t cc = (stg_plant & 2) && c >= D - 2u ? (2u * D - 3u) - c : c;
#else
            const uint32_t cc = c;
#endif
            float qv[DT_RW];
#pragma unroll
            for (uint32_t v4 = 0; v4 < DT_RW / 4u; v4++) {
                const float4 q = *(const float4 *)(qp + cc * DT_QS + 4u * v4);
                qv[4u * v4] = q.x, qv[4u * v4 + 1u] = q.y, qv[4u * v4 + 2u] = q.z, qv[4u * v4 + 3u] = q.w;
            }
#pragma unroll
            for (uint32_t u = 0; u < 2u; u++) {
                const float kv = kh[u * 32u * (D + 1u) + cc];
#pragma unroll
                for (uint32_t i = 0; i < DT_RW; i++) a[u][i] = __fadd_rn(a[u][i], __fmul_rn(qv[i], kv));
            }
        }
#pragma unroll
        for (uint32_t i = 0; i < DT_RW; i++) {
            const uint32_t r = r0 + warp * DT_RW + i;
#pragma unroll
            for (uint32_t u = 0; u < 2u; u++) {
                const uint32_t j = j0 + 64u * hf + lane + 32u * u;
                if (r < rows && j < N) ds[(uint64_t)r * N + j] = __fmul_rn(a[u][i], tau);   /* RN32 */
            }
        }
    }
}

/* One thread: the host's ERR_* bits into the state (dS without its check pass). */
__global__ void sage_ds_pre_kernel(sage_dev_state *st, uint32_t pre)
{
    if (pre != 0u) atomicOr(&st->err, pre);
}

/* ---- host side ---------------------------------------------------------------- */

extern "C" kvq_status kvq_cuda_sage_delta_s(float *d_ds, const float *d_qm, const float *d_ks,
                                            uint32_t rows, const kvq_sage_shape *kshape, float tau,
                                            cudaStream_t stream)
{
    /* [SAGE-DS-02], in the reference's order */
    if (d_ds == NULL || d_qm == NULL || d_ks == NULL || kshape == NULL) return KVQ_E_PARAM;
    if (rows < 1u || rows > KVQ_SAGE_MAX_ROWCOL) return KVQ_E_PARAM;
    if ((uint64_t)rows * kshape->tokens > ((uint64_t)1 << 32)) return KVQ_E_PARAM;
    if (!kvq_sage_shape_ok(kshape)) return KVQ_E_SHAPE;
    if (!isfinite(tau)) return KVQ_E_NONFINITE;                 /* the first non-finite test */
    const uint32_t pre = (tau >= KVQ_SAGE_TAU_MIN && tau <= KVQ_SAGE_TAU_MAX) ? 0u : ERR_RANGE;
    const int stg = sage_stages_env();                          /* [SAGE-DEV-16] */
    if (stg < 0) return KVQ_E_PARAM;
    sage_scratch *s = NULL;
    const kvq_status a = alloc_scratch(&s, stream);
    if (a != KVQ_OK) return a;
    const kvq_status enq = sage_enqueue_ds(d_ds, d_qm, d_ks, 1u, rows, kshape, tau, pre, &s->st, stream,
                                           stg == 0 ? 0u : SAGE_STG_NEW);
    return finish(enq, s, NULL, stream);                        /* dS has no flags word */
}

kvq_status sage_enqueue_ds(float *d_ds, const float *d_qm, const float *d_ks, uint32_t heads, uint32_t rows,
                           const kvq_sage_shape *kshape, float tau, uint32_t pre, sage_dev_state *st,
                           cudaStream_t stream, uint32_t stg, uint32_t group)
{
    const kvq_sage_shape sh = *kshape;
    const uint32_t grp = group < 1u ? 1u : group;               /* query heads a KV head [SAGE-DEV-17] */
    const uint64_t nq = (uint64_t)heads * rows * sh.dim, nk = (uint64_t)(heads / grp) * kvq_sage_elems(&sh);
    const int vec = aligned(d_ks, 16);                          /* per-head steps keep it */
    if (stg & SAGE_STG_NOCHECK) {                               /* [SAGE-DEV-16] */
        if (pre != 0u) sage_ds_pre_kernel<<<1, 1, 0, stream>>>(st, pre);
    } else
        sage_ds_check_kernel<<<grid_cap(nq + nk, 256), 256, 0, stream>>>(d_qm, nq, d_ks, nk, st, pre);
    if (stg & SAGE_STG_NEW) {
#if KVQ_SAGE_STG_PLANT
        stg_plant_set();
#endif
        /* CTA x = key tile * row tiles + row tile (the row tiles of a key tile
         * adjacent: its keys read once from memory), z = head */
        static bool attr = false;
        if (!attr) {
            (void)cudaFuncSetAttribute(sage_ds_stg_kernel<128u, 8u>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       (int)ds_stg_smem<128u, 8u>());
            (void)cudaFuncSetAttribute(sage_ds_stg_kernel<128u, 4u>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       (int)ds_stg_smem<128u, 4u>());
            (void)cudaFuncSetAttribute(sage_ds_stg_kernel<64u, 8u>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       (int)ds_stg_smem<64u, 8u>());
            (void)cudaFuncSetAttribute(sage_ds_stg_kernel<64u, 4u>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       (int)ds_stg_smem<64u, 4u>());
            attr = true;
        }
        const bool r4 = rows <= 32u;                            /* 32-row tiles: none half empty */
        /* KVQ_SAGE_DS_SPLIT=0: wait for all the keys before the first half's sums
         * (the overlap measured against its absence; the same bits) */
        const char *se = getenv("KVQ_SAGE_DS_SPLIT");
        const int split = !(se != NULL && strcmp(se, "0") == 0);
        const uint32_t trows = r4 ? 32u : 64u;
        const uint64_t kt = (sh.tokens + DT_KEYS - 1u) / DT_KEYS, rt = (rows + trows - 1u) / trows;
        for (uint32_t h0 = 0; h0 < heads; h0 += SAGE_HEADS_MAX) {
            const uint32_t hn = heads - h0 < SAGE_HEADS_MAX ? heads - h0 : SAGE_HEADS_MAX;
            const dim3 grid((unsigned int)(kt * rt), 1u, hn);   /* rows N <= 2^32: kt rt <= 2^19 */
            float *ds = d_ds + (uint64_t)h0 * rows * sh.tokens;
            const float *qm = d_qm + (uint64_t)h0 * rows * sh.dim, *ks = d_ks + (uint64_t)(h0 / grp) * kvq_sage_elems(&sh);
            const uint32_t gofs = h0 % grp;
#define DS_STG(DD, RR) sage_ds_stg_kernel<DD, RR><<<grid, 256, ds_stg_smem<DD, RR>(), stream>>>(ds, qm, ks, st, \
                           rows, sh.tokens, tau, split, (uint32_t)rt, grp, gofs)
            if (sh.dim == 64u && r4) DS_STG(64u, 4u);
            else if (sh.dim == 64u) DS_STG(64u, 8u);
            else if (r4) DS_STG(128u, 4u);
            else DS_STG(128u, 8u);
#undef DS_STG
            if (cudaGetLastError() != cudaSuccess) return KVQ_E_DEVICE;
        }
        return KVQ_OK;
    }
    const uint32_t gx = (sh.tokens + DS_THREADS - 1u) / DS_THREADS; /* <= 2^17 */
    const uint64_t per = (uint64_t)gx * heads;                  /* blocks a row step */
    uint32_t gy = per >= DS_TARGET_BLOCKS ? 1u : (uint32_t)(DS_TARGET_BLOCKS / per);
    const uint32_t groups = (rows + DS_ROWS - 1u) / DS_ROWS;   /* a block's row set fills DS_ROWS */
    gy = gy > groups ? groups : gy;
    gy = gy > 65535u ? 65535u : gy;
    for (uint32_t h0 = 0; h0 < heads; h0 += SAGE_HEADS_MAX) {
        const uint32_t hn = heads - h0 < SAGE_HEADS_MAX ? heads - h0 : SAGE_HEADS_MAX;
        const dim3 grid(gx, gy, hn);
        float *ds = d_ds + (uint64_t)h0 * rows * sh.tokens;
        const float *qm = d_qm + (uint64_t)h0 * rows * sh.dim, *ks = d_ks + (uint64_t)(h0 / grp) * kvq_sage_elems(&sh);
        const uint32_t gofs = h0 % grp;
        if (sh.dim == 64u)
            sage_ds_kernel<64u><<<grid, DS_THREADS, 0, stream>>>(ds, qm, ks, st, rows, sh.tokens, tau, vec, grp, gofs);
        else
            sage_ds_kernel<128u><<<grid, DS_THREADS, 0, stream>>>(ds, qm, ks, st, rows, sh.tokens, tau, vec, grp, gofs);
        if (cudaGetLastError() != cudaSuccess) return KVQ_E_DEVICE;
    }
    return KVQ_OK;
}
