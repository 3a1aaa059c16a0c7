/*
 * subject_gpu.cu -- the bundled CUDA kernels as a conformance subject
 * (conformance/kvq_subject.h, version 3): build/gpu/libkvq_subject_gpu.so.
 *
 * The subject's entry points take host pointers, like the reference; they copy
 * to the device, run the launchers of gpu/kivi/kivi.cu and gpu/cert/cert.cu and copy
 * back only on KVQ_OK, so an error leaves the caller's buffers untouched.
 * Without a usable device, init answers KVQ_E_NODEVICE with the reason, and
 * the kit counts every case SKIPPED, never passed.
 *
 * CERT [VER-CERT-02]: keys and values quantized on the device
 * (kvq_cuda_cert_quantize_keys / _values, gpu/cert/cert.cu), annotations and the
 * decode step by gpu/cert/decode_*.cu (kvq_cuda_cert_annotate_host,
 * kvq_cuda_cert_step_host: the device quantizes K and V itself and runs the
 * step; rung 4 is the host reference dense path, which is why the subject
 * links ref/fast's CERT files).
 */
#include <stdio.h>
#include <string.h>

#include "kvq_cuda.h"
#include "kvq_subject.h"
#include "sage/mma_dev.cuh"   /* the FP8 MMA instructions and their layouts (sage_pv) */
extern "C" {
#include "../ref/fast/sage_attn_internal.h"   /* kvq_sage_pv_check (sage_pv) */
}

static int gpu_init(char *why, size_t whylen)
{
    return kvq_cuda_device_check(why, whylen);
}

static int gpu_kivi_quantize(uint8_t *codes, float *scale, float *zero, uint32_t *flags,
                             const float *x, const kvq_kivi_shape *shape, const kvq_policy *pol)
{
    return kvq_cuda_kivi_quantize_host(codes, scale, zero, flags, x, shape, pol);
}

static int gpu_kivi_dequantize(float *y, uint32_t *flags, const uint8_t *codes,
                               const float *scale, const float *zero,
                               const kvq_kivi_shape *shape, const kvq_policy *pol)
{
    return kvq_cuda_kivi_dequantize_host(y, flags, codes, scale, zero, shape, pol);
}

/* Device buffers of one CERT quantizer call: the [n][d] input, the codes and
 * two metadata arrays (sizes from the shape as given; the launcher validates
 * the shape before it touches any of them). */
typedef struct gpu_qbufs {
    float *x, *m0, *m1;
    uint8_t *codes;
} gpu_qbufs;

static void qbufs_free(gpu_qbufs *b)
{
    cudaFree(b->x), cudaFree(b->m0), cudaFree(b->m1), cudaFree(b->codes);
}

static kvq_status qbufs_alloc(gpu_qbufs *b, const float *x, uint64_t nin, uint64_t ncode,
                              uint64_t nmeta)
{
    b->x = b->m0 = b->m1 = NULL;
    b->codes = NULL;
    if (cudaMalloc((void **)&b->x, (nin ? nin : 1) * sizeof(float)) != cudaSuccess ||
        cudaMalloc((void **)&b->codes, ncode ? ncode : 1) != cudaSuccess ||
        cudaMalloc((void **)&b->m0, (nmeta ? nmeta : 1) * sizeof(float)) != cudaSuccess ||
        cudaMalloc((void **)&b->m1, (nmeta ? nmeta : 1) * sizeof(float)) != cudaSuccess) {
        qbufs_free(b);
        return KVQ_E_NOMEM;
    }
    if (nin && cudaMemcpy(b->x, x, nin * sizeof(float), cudaMemcpyHostToDevice) != cudaSuccess) {
        qbufs_free(b);
        return KVQ_E_DEVICE;
    }
    return KVQ_OK;
}

/* Copy the outputs back (only after KVQ_OK). */
static kvq_status qbufs_back(const gpu_qbufs *b, void *codes, float *m0, float *m1, uint64_t ncode,
                             uint64_t nmeta)
{
    if ((ncode && cudaMemcpy(codes, b->codes, ncode, cudaMemcpyDeviceToHost) != cudaSuccess) ||
        (nmeta && cudaMemcpy(m0, b->m0, nmeta * sizeof(float), cudaMemcpyDeviceToHost) != cudaSuccess) ||
        (nmeta && cudaMemcpy(m1, b->m1, nmeta * sizeof(float), cudaMemcpyDeviceToHost) != cudaSuccess))
        return KVQ_E_DEVICE;
    return KVQ_OK;
}

/* cert-keys [CERT-K8-01..05] on the device. */
static int gpu_cert_keys(int8_t *codes, float *sigma, float *z, uint32_t *flags, const float *k,
                         const kvq_cert_shape *shape, const kvq_policy *pol)
{
    gpu_qbufs b;
    uint64_t nin, nc, nm;
    uint32_t fl = 0;
    kvq_status st;
    if (codes == NULL || sigma == NULL || z == NULL || k == NULL || shape == NULL || pol == NULL)
        return KVQ_E_PARAM;
    nin = (uint64_t)shape->tokens * shape->dim;
    nc = kvq_cert_key_code_bytes(shape), nm = kvq_cert_key_meta_count(shape);
    if ((st = qbufs_alloc(&b, k, nin, nc, nm)) != KVQ_OK) return st;
    st = kvq_cuda_cert_quantize_keys((int8_t *)b.codes, b.m0, b.m1, &fl, b.x, shape, pol, 0);
    if (st == KVQ_OK) st = qbufs_back(&b, codes, sigma, z, nc, nm);
    if (st == KVQ_OK && flags != NULL) *flags = fl;
    qbufs_free(&b);
    return st;
}

/* cert-values, quantizer half [CERT-V4-01], on the device. */
static int gpu_cert_values(uint8_t *codes, float *scale, float *zero, uint32_t *flags,
                           const float *v, const kvq_cert_shape *shape, const kvq_policy *pol)
{
    gpu_qbufs b;
    uint64_t nin, nc, nm;
    uint32_t fl = 0;
    kvq_status st;
    if (codes == NULL || scale == NULL || zero == NULL || v == NULL || shape == NULL || pol == NULL)
        return KVQ_E_PARAM;
    nin = (uint64_t)shape->tokens * shape->dim;
    nc = kvq_cert_value_code_bytes(shape), nm = kvq_cert_value_groups(shape);
    if ((st = qbufs_alloc(&b, v, nin, nc, nm)) != KVQ_OK) return st;
    st = kvq_cuda_cert_quantize_values(b.codes, b.m0, b.m1, &fl, b.x, shape, pol, 0);
    if (st == KVQ_OK) st = qbufs_back(&b, codes, scale, zero, nc, nm);
    if (st == KVQ_OK && flags != NULL) *flags = fl;
    qbufs_free(&b);
    return st;
}

static int gpu_cert_annotate(float *eta, float *nu, const float *v, const uint8_t *codes,
                             const float *scale, const float *zero, const kvq_cert_shape *shape)
{
    return kvq_cuda_cert_annotate_host(eta, nu, v, codes, scale, zero, shape);
}

static int gpu_cert_step(float *out, uint8_t *sel, uint8_t *prom, kvq_cert_record *rec,
                         kvq_cert_decl *decl, float *delta1, const float *q, float scale,
                         const float *k, const float *v, const kvq_cert_params *prm,
                         const kvq_cert_shape *shape, const kvq_policy *pol)
{
    return kvq_cuda_cert_step_host(out, sel, prom, rec, decl, delta1, q, scale, k, v, prm, shape,
                                   pol);
}

/* ---- SAGE (spec/sage.md) on the device: each entry copies its input in,
 * runs the kvq_cuda_sage_* launcher, and copies the outputs back only after
 * KVQ_OK, so a failed call writes nothing.  Device sizes come from the
 * arguments only when they are valid (else one element: the launcher checks
 * them, in the reference's order, before it touches a buffer). ---- */

static kvq_status dev_alloc(void **d, uint64_t bytes)
{
    *d = NULL;
    return cudaMalloc(d, bytes ? bytes : 1u) == cudaSuccess ? KVQ_OK : KVQ_E_NOMEM;
}

static kvq_status dev_in(void **d, const void *h, uint64_t bytes)
{
    kvq_status st = dev_alloc(d, bytes);
    if (st == KVQ_OK && bytes && cudaMemcpy(*d, h, bytes, cudaMemcpyHostToDevice) != cudaSuccess)
        st = KVQ_E_DEVICE;
    return st;
}

static kvq_status dev_out(void *h, const void *d, uint64_t bytes)
{
    return !bytes || cudaMemcpy(h, d, bytes, cudaMemcpyDeviceToHost) == cudaSuccess ? KVQ_OK
                                                                                    : KVQ_E_DEVICE;
}

/* sage_smooth [SAGE-SM-01..06] */
static int gpu_sage_smooth(float *xs, float *mean, const float *x, const kvq_sage_shape *shape,
                           uint32_t seg)
{
    void *dx = NULL, *dxs = NULL, *dm = NULL;
    uint64_t n = 0, nm = 0;
    kvq_status st;
    if (xs == NULL || mean == NULL || x == NULL || shape == NULL) return KVQ_E_PARAM;
    if (kvq_sage_shape_ok(shape) && seg >= 1u) {
        n = kvq_sage_elems(shape);
        nm = (uint64_t)kvq_sage_mean_rows(shape->tokens, seg) * shape->dim;
    }
    st = dev_in(&dx, x, n * sizeof(float));
    if (st == KVQ_OK) st = dev_alloc(&dxs, n * sizeof(float));
    if (st == KVQ_OK) st = dev_alloc(&dm, nm * sizeof(float));
    if (st == KVQ_OK) st = kvq_cuda_sage_smooth((float *)dxs, (float *)dm, (const float *)dx, shape, seg, 0);
    if (st == KVQ_OK) st = dev_out(xs, dxs, n * sizeof(float));
    if (st == KVQ_OK) st = dev_out(mean, dm, nm * sizeof(float));
    cudaFree(dx), cudaFree(dxs), cudaFree(dm);
    return st;
}

/* sage_quantize_qk [SAGE-Q-01..07] (the launcher's checked mode) */
static int gpu_sage_qk(uint8_t *codes, float *scale, uint32_t *flags, const float *x,
                       const kvq_sage_shape *shape, const kvq_sage_qk *qk, const kvq_policy *pol)
{
    void *dx = NULL, *dc = NULL, *ds = NULL;
    uint64_t n = 0, nc = 0, ns = 0;
    uint32_t fl = 0;
    kvq_status st;
    if (codes == NULL || scale == NULL || x == NULL || shape == NULL || qk == NULL) return KVQ_E_PARAM;
    if (kvq_sage_shape_ok(shape) && kvq_sage_qk_ok(qk)) {
        n = kvq_sage_elems(shape);
        nc = kvq_sage_code_bytes(shape, qk->bits);
        ns = kvq_sage_scale_count(shape, qk);
    }
    st = dev_in(&dx, x, n * sizeof(float));
    if (st == KVQ_OK) st = dev_alloc(&dc, nc);
    if (st == KVQ_OK) st = dev_alloc(&ds, ns * sizeof(float));
    if (st == KVQ_OK)
        st = kvq_cuda_sage_quantize_qk((uint8_t *)dc, (float *)ds, &fl, (const float *)dx, shape, qk,
                                       pol, 0u, 0);
    if (st == KVQ_OK) st = dev_out(codes, dc, nc);
    if (st == KVQ_OK) st = dev_out(scale, ds, ns * sizeof(float));
    if (st == KVQ_OK && flags != NULL) *flags = fl;
    cudaFree(dx), cudaFree(dc), cudaFree(ds);
    return st;
}

/* sage_quantize_v [SAGE-V-01..04] */
static int gpu_sage_v(uint8_t *codes, float *scale, uint32_t *flags, const float *v,
                      const kvq_sage_shape *shape, uint32_t fmt, const kvq_policy *pol)
{
    void *dv = NULL, *dc = NULL, *ds = NULL;
    uint64_t n = 0, nd = 0;
    uint32_t fl = 0;
    kvq_status st;
    if (codes == NULL || scale == NULL || v == NULL || shape == NULL) return KVQ_E_PARAM;
    if (kvq_sage_shape_ok(shape)) n = kvq_sage_elems(shape), nd = shape->dim;
    st = dev_in(&dv, v, n * sizeof(float));
    if (st == KVQ_OK) st = dev_alloc(&dc, n);
    if (st == KVQ_OK) st = dev_alloc(&ds, nd * sizeof(float));
    if (st == KVQ_OK)
        st = kvq_cuda_sage_quantize_v((uint8_t *)dc, (float *)ds, &fl, (const float *)dv, shape, fmt,
                                      pol, 0);
    if (st == KVQ_OK) st = dev_out(codes, dc, n);
    if (st == KVQ_OK) st = dev_out(scale, ds, nd * sizeof(float));
    if (st == KVQ_OK && flags != NULL) *flags = fl;
    cudaFree(dv), cudaFree(dc), cudaFree(ds);
    return st;
}

/* sage_quantize_p [SAGE-P-01..04] */
static int gpu_sage_p(uint8_t *codes, float *rowsum, uint32_t *flags, const float *p, uint32_t rows,
                      uint32_t cols, uint32_t fmt, const kvq_policy *pol)
{
    void *dp = NULL, *dc = NULL, *dr = NULL;
    uint64_t n = (uint64_t)rows * cols, nr = rows;
    uint32_t fl = 0;
    kvq_status st;
    if (codes == NULL || rowsum == NULL || p == NULL) return KVQ_E_PARAM;
    if (n > ((uint64_t)1 << 32)) n = 0, nr = 0;   /* beyond any file's size: the launcher refuses it */
    st = dev_in(&dp, p, n * sizeof(float));
    if (st == KVQ_OK) st = dev_alloc(&dc, n);
    if (st == KVQ_OK) st = dev_alloc(&dr, nr * sizeof(float));
    if (st == KVQ_OK)
        st = kvq_cuda_sage_quantize_p((uint8_t *)dc, (float *)dr, &fl, (const float *)dp, rows, cols,
                                      fmt, pol, 0);
    if (st == KVQ_OK) st = dev_out(codes, dc, n);
    if (st == KVQ_OK) st = dev_out(rowsum, dr, nr * sizeof(float));
    if (st == KVQ_OK && flags != NULL) *flags = fl;
    cudaFree(dp), cudaFree(dc), cudaFree(dr);
    return st;
}

/* sage_delta_s [SAGE-DS-01..02] (gpu/sage/sage_ds.cu).  Buffers are sized
 * only when rows, rows * N and the shape are valid; otherwise the launcher
 * refuses the call before it reads or writes one. */
static int gpu_sage_ds(float *ds, const float *qm, const float *ks, uint32_t rows,
                       const kvq_sage_shape *kshape, float tau)
{
    void *dq = NULL, *dk = NULL, *dd = NULL;
    uint64_t nq = 0, nk = 0, nd = 0;
    kvq_status st;
    if (ds == NULL || qm == NULL || ks == NULL || kshape == NULL) return KVQ_E_PARAM;
    if (kvq_sage_shape_ok(kshape) && rows >= 1u && rows <= KVQ_SAGE_MAX_ROWCOL &&
        (uint64_t)rows * kshape->tokens <= ((uint64_t)1 << 32)) {
        nq = (uint64_t)rows * kshape->dim;
        nk = kvq_sage_elems(kshape);
        nd = (uint64_t)rows * kshape->tokens;
    }
    st = dev_in(&dq, qm, nq * sizeof(float));
    if (st == KVQ_OK) st = dev_in(&dk, ks, nk * sizeof(float));
    if (st == KVQ_OK) st = dev_alloc(&dd, nd * sizeof(float));
    if (st == KVQ_OK)
        st = kvq_cuda_sage_delta_s((float *)dd, (const float *)dq, (const float *)dk, rows, kshape,
                                   tau, 0);
    if (st == KVQ_OK) st = dev_out(ds, dd, nd * sizeof(float));
    cudaFree(dq), cudaFree(dk), cudaFree(dd);
    return st;
}

/* sage_attention [SAGE-ATT-01..06]: one head through kvq_cuda_sage_attn (the
 * pinned stages and the attention kernel, gpu/sage/sage_attn.cu).  The device
 * pipeline pins the default policy [SAGE-ATT-02]; a case with another policy
 * is refused (KVQ_E_PARAM) rather than run under the wrong one. */
static int gpu_sage_attention(float *o, const float *q, const float *k, const float *v, const kvq_sage_attn *a,
                              const kvq_policy *pol)
{
    if (o == NULL || q == NULL || k == NULL || v == NULL || a == NULL || pol == NULL ||
        kvq_policy_check(pol) != KVQ_OK || !kvq_sage_attn_ok(a))
        return KVQ_E_PARAM;
    if (memcmp(pol, &kvq_policy_default, sizeof *pol) != 0) return KVQ_E_PARAM;
    void *dq = NULL, *dk = NULL, *dv = NULL, *dout = NULL, *dres = NULL, *ws = NULL;
    const uint64_t nq = (uint64_t)a->nq * a->dim, nk = (uint64_t)a->nk * a->dim;
    const size_t wsb = kvq_cuda_sage_attn_workspace(a, 1u);
    kvq_status st = dev_in(&dq, q, nq * sizeof(float));
    if (st == KVQ_OK) st = dev_in(&dk, k, nk * sizeof(float));
    if (st == KVQ_OK) st = dev_in(&dv, v, nk * sizeof(float));
    if (st == KVQ_OK) st = dev_alloc(&dout, nq * sizeof(float));
    if (st == KVQ_OK) st = dev_alloc(&dres, sizeof(kvq_cuda_result));
    if (st == KVQ_OK) st = dev_alloc(&ws, wsb);
    if (st == KVQ_OK)
        st = kvq_cuda_sage_attn((float *)dout, (kvq_cuda_result *)dres, (const float *)dq, (const float *)dk,
                                (const float *)dv, a, 1u, ws, wsb, 0);
    kvq_cuda_result res;
    if (st == KVQ_OK)
        st = cudaDeviceSynchronize() == cudaSuccess &&
                     cudaMemcpy(&res, dres, sizeof res, cudaMemcpyDeviceToHost) == cudaSuccess
                 ? (kvq_status)res.status
                 : KVQ_E_DEVICE;
    if (st == KVQ_OK) st = dev_out(o, dout, nq * sizeof(float));
    cudaFree(dq), cudaFree(dk), cudaFree(dv), cudaFree(dout), cudaFree(dres), cudaFree(ws);
    return st;
}

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

static int gpu_sage_pv(float *d, const uint8_t *a, const uint8_t *b, const float *c, uint32_t rows,
                       uint32_t n, uint32_t fmt, uint32_t model, uint32_t buffer)
{
    void *da = NULL, *db = NULL, *dc = NULL, *dd = NULL;
    /* the reference's checks, in its order, before any device work */
    kvq_status st = d != NULL ? kvq_sage_pv_check(a, b, c, rows, n, fmt, model, buffer) : KVQ_E_PARAM;
    if (st != KVQ_OK) return st;
    const uint64_t nn = (uint64_t)rows * n;
    st = dev_in(&da, a, nn);
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

/* "subject_device" (kvq_subject.h, spec/verify.md [VER-REP-05]): the device
 * the reports name -- its name, compute capability, the NVIDIA driver
 * (/proc/driver/nvidia/version: the first token of digits and dots) and the
 * CUDA driver API version. */
static int gpu_device(char *buf, size_t len)
{
    cudaDeviceProp p;
    int dev = 0, api = 0;
    char drv[64] = "unknown", line[256];
    FILE *f = fopen("/proc/driver/nvidia/version", "r");
    if (cudaGetDevice(&dev) != cudaSuccess || cudaGetDeviceProperties(&p, dev) != cudaSuccess) {
        if (f != NULL) fclose(f);
        return KVQ_E_NODEVICE;
    }
    if (f != NULL && fgets(line, sizeof line, f) != NULL)
        for (char *t = strtok(line, " \t\n"); t != NULL; t = strtok(NULL, " \t\n"))
            if (t[0] >= '0' && t[0] <= '9' && strchr(t, '.') != NULL && strspn(t, "0123456789.") == strlen(t)) {
                snprintf(drv, sizeof drv, "%s", t);
                break;
            }
    if (f != NULL) fclose(f);
    if (cudaDriverGetVersion(&api) != cudaSuccess) api = 0;
    snprintf(buf, len, "%s (sm_%d%d, driver %s, CUDA %d.%d)", p.name, p.major, p.minor, drv, api / 1000,
             api % 1000 / 10);
    return KVQ_OK;
}

/* The entries by name (kvq_subject.h [API-SUBJ-05]), of signature version 1;
 * cert_step also of version 2: kvq_cuda_cert_step_host runs the variant
 * prm->variant names [CERT-VAR-01] (version 1 is given sparse cases only). */
static kvq_entry_fn gpu_lookup(const char *entry, uint32_t sigver)
{
    static const struct {
        const char *name;
        kvq_entry_fn fn;
    } ENTRIES[] = {
        { "kivi_quantize", (kvq_entry_fn)gpu_kivi_quantize },
        { "kivi_dequantize", (kvq_entry_fn)gpu_kivi_dequantize },
        { "cert_quantize_keys", (kvq_entry_fn)gpu_cert_keys },
        { "cert_quantize_values", (kvq_entry_fn)gpu_cert_values },
        { "cert_annotate", (kvq_entry_fn)gpu_cert_annotate },
        { "cert_step", (kvq_entry_fn)gpu_cert_step },
        { "sage_smooth", (kvq_entry_fn)gpu_sage_smooth },
        { "sage_quantize_qk", (kvq_entry_fn)gpu_sage_qk },
        { "sage_quantize_v", (kvq_entry_fn)gpu_sage_v },
        { "sage_quantize_p", (kvq_entry_fn)gpu_sage_p },
        { "sage_delta_s", (kvq_entry_fn)gpu_sage_ds },
        { "sage_pv", (kvq_entry_fn)gpu_sage_pv },
        { "sage_attention", (kvq_entry_fn)gpu_sage_attention },
    };
    if (sigver == 1u && strcmp(entry, KVQ_SUBJECT_DEVICE_ENTRY) == 0) return (kvq_entry_fn)gpu_device;
    if (sigver == 2u && strcmp(entry, "cert_step") == 0) return (kvq_entry_fn)gpu_cert_step;
    if (sigver != 1u) return NULL;
    for (size_t i = 0; i < sizeof ENTRIES / sizeof ENTRIES[0]; i++)
        if (strcmp(ENTRIES[i].name, entry) == 0) return ENTRIES[i].fn;
    return NULL;
}

static const kvq_subject_v3 gpu_subject = {
    KVQ_SUBJECT_ABI_V3, "kvq-cuda", gpu_init, NULL, gpu_lookup,
};

extern "C" __attribute__((visibility("default"))) const kvq_subject_v3 *kvq_subject_abi3(void)
{
    return &gpu_subject;
}
