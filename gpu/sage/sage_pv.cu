/*
 * sage/sage_pv.cu -- one channel of P~V on the device [SAGE-ACC-07]
 * (kvq_cuda_sage_pv_host, gpu/kvq_cuda.h): every product through the
 * device's FP8 tensor-core instruction of the accumulator model, the FP32
 * buffer by __fadd_rn.  The arguments are valid (kvq_sage_pv_check): the CUDA
 * subject's sage_pv entry (gpu/sage/entries.cu) checks them first.
 */
#include <string.h>

#include "kvq_cuda.h"
#include "kvq_sage.h"
#include "sage/mma_dev.cuh"   /* the FP8 MMA instructions and their layouts */
#include "devbuf.cuh"


/* sage_pv [SAGE-ACC-07]: one channel of P~V, every product through the
 * device's FP8 tensor-core instruction of the model (KVQ_SAGE_PV_WGMMA:
 * wgmma.mma_async m64n8k32; KVQ_SAGE_PV_MMA_SM90: mma.sync m16n8k32), with the
 * operand layouts of gpu/sage/mma_dev.cuh (the probe's [SAGE-ACC-04]).
 *
 * Rows share an instruction by the diagonal: a group of 8 rows r0 + j
 * (j = 0..7) puts row j's 32 P~ codes a[r0 + j][32 g ..] in A row j and its
 * 32 V codes b[r0 + j][32 g ..] in B column j, at k = their position mod 32
 * (zero past n, and for j with r0 + j >= rows); every other A row is zero.
 * Output D[j][j] = C[j][j] + sum_k a_k b_k is row j's step, with C[j][j] its
 * accumulator and every other C entry +0; only the diagonal is read.  In both
 * instructions D[j][j] lies in lane 4 j + j / 2 (of the group's warp; wgmma:
 * warp 0 of the warpgroup), element j % 2 of the accumulator fragment, and
 * that thread keeps row j's acc and buf across the
 * instructions: after instruction g, when 32 (g + 1) is a multiple of buffer
 * or g is the last and buffer != 0, buf = RN32(buf + acc) (__fadd_rn) and
 * acc = +0.  Nothing of the row is computed on the host. */
#define PV_ROWS 8u                                     /* rows of one instruction (N = 8) */

/* The diagonal's thread: lane 4 j + j / 2 holds D[j][j] as element j % 2. */
static __device__ __forceinline__ bool pv_diag(uint32_t lane)
{
    return lane % 4u == (lane / 4u) / 2u;
}

/* The FP32 buffer after instruction g of ng (products up to 32 (g + 1)). */
static __device__ __forceinline__ void pv_flush(float &acc, float &buf, uint32_t g, uint32_t ng, uint32_t buffer)
{
    if (buffer != 0u && ((32u * (g + 1u)) % buffer == 0u || g + 1u == ng)) {
        buf = __fadd_rn(buf, acc);
        acc = 0.0f;
    }
}

/* wgmma m64n8k32: one warpgroup a block, rows 8 blockIdx.x .. + 7. */
template <uint32_t FMT>
__global__ void __launch_bounds__(128) pv_wg_kernel(float *__restrict__ d, const uint8_t *__restrict__ a,
                                                    const uint8_t *__restrict__ b, const float *__restrict__ c,
                                                    uint32_t rows, uint32_t n, uint32_t buffer)
{
    __shared__ __align__(128) uint8_t sa[64u * 32u];
    __shared__ __align__(128) uint8_t sb[PV_ROWS * 32u];
    const uint32_t t = threadIdx.x, lane = t % 32u, r0 = blockIdx.x * PV_ROWS;
    /* A rows 8..63 (bytes 256.. of the layout) stay zero; rows 0..7 and B are
     * rewritten for every instruction. */
    for (uint32_t e = PV_ROWS * 32u + t; e < 64u * 32u; e += 128u) sa[e] = 0u;
    /* the loader: threads 0..63 A, 64..127 B; row (t % 64) / 8, bytes 4 (t % 8) .. + 3 */
    const uint32_t lj = (t % 64u) / 8u, lk = (t % 8u) * 4u, lrow = r0 + lj;
    const uint8_t *src = t < 64u ? a : b;
    uint8_t *dst = t < 64u ? sa : sb;
    /* the diagonal's thread of row j = lane / 4: warp 0 */
    const uint32_t j = lane / 4u, row = r0 + j, el = j % 2u;
    const bool diag = t < 32u && pv_diag(lane), live = diag && row < rows;
    float acc = live ? c[row] : 0.0f, buf = 0.0f;
    const uint32_t ng = (n + 31u) / 32u;
    const uint64_t da = wg_desc(sa, 128u, 256u), db = wg_desc(sb, 128u, 256u);
    for (uint32_t g = 0; g < ng; g++) {
        const uint32_t k0 = 32u * g;
        for (uint32_t x = 0; x < 4u; x++) {
            const uint32_t k = lk + x;
            dst[wg_off(lj, k)] = lrow < rows && k0 + k < n ? src[(uint64_t)lrow * n + k0 + k] : (uint8_t)0u;
        }
        wg_proxy_fence();
        __syncthreads();
        float dd[4];
        dd[0] = diag && el == 0u ? acc : 0.0f;
        dd[1] = diag && el == 1u ? acc : 0.0f;
        dd[2] = 0.0f, dd[3] = 0.0f;
        wg_fence();
        wg_mma_m64n8k32<FMT>(dd, da, db);
        wg_commit_wait();
        acc = el ? dd[1] : dd[0];
        pv_flush(acc, buf, g, ng, buffer);
        __syncthreads();                                /* smem rewritten by the next instruction */
    }
    if (live) d[row] = buffer != 0u ? buf : acc;
}

/* mma.sync m16n8k32: one warp an 8-row group (4 a block).  Lane (g, t) =
 * (lane / 4, lane % 4) loads row r0 + g's codes 4 t .. 4 t + 3 (A and B
 * fragment registers 0) and 16 + 4 t .. (A register 2, B register 1); A
 * registers 1 and 3 (rows 8..15) stay zero. */
template <uint32_t FMT>
__global__ void __launch_bounds__(128) pv_ms_kernel(float *__restrict__ d, const uint8_t *__restrict__ a,
                                                    const uint8_t *__restrict__ b, const float *__restrict__ c,
                                                    uint32_t rows, uint32_t n, uint32_t buffer)
{
    const uint32_t lane = threadIdx.x % 32u, r0 = (blockIdx.x * 4u + threadIdx.x / 32u) * PV_ROWS;
    if (r0 >= rows) return;                            /* the whole warp */
    const uint32_t j = lane / 4u, tq = lane % 4u, row = r0 + j, el = j % 2u;
    const bool have = row < rows, diag = pv_diag(lane), live = diag && have;
    const uint8_t *ar = a + (uint64_t)(have ? row : r0) * n, *br = b + (uint64_t)(have ? row : r0) * n;
    float acc = live ? c[row] : 0.0f, buf = 0.0f;
    const uint32_t ng = (n + 31u) / 32u;
    for (uint32_t g = 0; g < ng; g++) {
        const uint32_t k0 = 32u * g;
        uint32_t fa[4] = {0u, 0u, 0u, 0u}, fb[2] = {0u, 0u};
        if (have)
            for (uint32_t x = 0; x < 4u; x++) {
                const uint32_t ka = k0 + 4u * tq + x, kb = ka + 16u;
                if (ka < n) fa[0] |= (uint32_t)ar[ka] << (8u * x), fb[0] |= (uint32_t)br[ka] << (8u * x);
                if (kb < n) fa[2] |= (uint32_t)ar[kb] << (8u * x), fb[1] |= (uint32_t)br[kb] << (8u * x);
            }
        float dd[4];
        dd[0] = diag && el == 0u ? acc : 0.0f;
        dd[1] = diag && el == 1u ? acc : 0.0f;
        dd[2] = 0.0f, dd[3] = 0.0f;
        ms_mma_m16n8k32<FMT>(dd, fa, fb);
        acc = el ? dd[1] : dd[0];
        pv_flush(acc, buf, g, ng, buffer);
    }
    if (live) d[row] = buffer != 0u ? buf : acc;
}

kvq_status kvq_cuda_sage_pv_host(float *d, const uint8_t *a, const uint8_t *b, const float *c, uint32_t rows,
                       uint32_t n, uint32_t fmt, uint32_t model, uint32_t buffer)
{
    void *da = NULL, *db = NULL, *dc = NULL, *dd = NULL;
    const uint64_t nn = (uint64_t)rows * n;
    kvq_status st = dev_in(&da, a, nn);
    if (st == KVQ_OK) st = dev_in(&db, b, nn);
    if (st == KVQ_OK) st = dev_in(&dc, c, (uint64_t)rows * sizeof(float));
    if (st == KVQ_OK) st = dev_alloc(&dd, (uint64_t)rows * sizeof(float));
    if (st == KVQ_OK) {
        const uint8_t *pa = (const uint8_t *)da, *pb = (const uint8_t *)db;
        const float *pc = (const float *)dc;
        float *pd = (float *)dd;
        if (model == KVQ_SAGE_PV_WGMMA) {
            const unsigned grid = (rows + PV_ROWS - 1u) / PV_ROWS;
            if (fmt == KVQ_SAGE_FP8_E4M3) pv_wg_kernel<0u><<<grid, 128>>>(pd, pa, pb, pc, rows, n, buffer);
            else pv_wg_kernel<1u><<<grid, 128>>>(pd, pa, pb, pc, rows, n, buffer);
        } else {
            const unsigned grid = (rows + 4u * PV_ROWS - 1u) / (4u * PV_ROWS);
            if (fmt == KVQ_SAGE_FP8_E4M3) pv_ms_kernel<0u><<<grid, 128>>>(pd, pa, pb, pc, rows, n, buffer);
            else pv_ms_kernel<1u><<<grid, 128>>>(pd, pa, pb, pc, rows, n, buffer);
        }
        if (cudaGetLastError() != cudaSuccess || cudaDeviceSynchronize() != cudaSuccess) st = KVQ_E_DEVICE;
    }
    if (st == KVQ_OK) st = dev_out(d, dd, (uint64_t)rows * sizeof(float));
    cudaFree(da), cudaFree(db), cudaFree(dc), cudaFree(dd);
    return st;
}

