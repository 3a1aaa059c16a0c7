/*
 * sage/entries.cu -- the SAGE entries of the CUDA subject (gpu/subject_gpu.h,
 * spec/sage.md): the launchers of gpu/sage/ through host pointers.
 */
#include <stdlib.h>
#include <string.h>

#include "subject_gpu.h"
#include "kvq_sage.h"
#include "devbuf.cuh"

/* ---- SAGE (spec/sage.md) on the device: each entry copies its input in,
 * runs the kvq_cuda_sage_* launcher, and copies the outputs back only after
 * KVQ_OK, so a failed call writes nothing.  Device sizes come from the
 * arguments only when they are valid (else one element: the launcher checks
 * them, in the reference's order, before it touches a buffer). ---- */


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

/* sage_dequantize_qk [SAGE-Q-08] */
static int gpu_sage_dq(float *y, const uint8_t *codes, const float *scale, const kvq_sage_shape *shape,
                       const kvq_sage_qk *qk)
{
    void *dy = NULL, *dc = NULL, *ds = NULL;
    uint64_t n = 0, nc = 0, ns = 0;
    kvq_status st;
    if (y == NULL || codes == NULL || scale == NULL || shape == NULL || qk == NULL) return KVQ_E_PARAM;
    if (kvq_sage_shape_ok(shape) && kvq_sage_qk_ok(qk)) {
        n = kvq_sage_elems(shape);
        nc = kvq_sage_code_bytes(shape, qk->bits);
        ns = kvq_sage_scale_count(shape, qk);
    }
    st = dev_in(&dc, codes, nc);
    if (st == KVQ_OK) st = dev_in(&ds, scale, ns * sizeof(float));
    if (st == KVQ_OK) st = dev_alloc(&dy, n * sizeof(float));
    if (st == KVQ_OK)
        st = kvq_cuda_sage_dequantize_qk((float *)dy, (const uint8_t *)dc, (const float *)ds, shape, qk, 0);
    if (st == KVQ_OK) st = dev_out(y, dy, n * sizeof(float));
    cudaFree(dy), cudaFree(dc), cudaFree(ds);
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

/* sage_attention_mha [SAGE-MHA-01..04]: the fast path's checks first (the
 * head counts, the format of every input: KVQ_E_PARAM before any device
 * work), then the grouped entry kvq_cuda_sage_attn_gqa on hq query heads and
 * hkv KV heads (query head h reads KV head h / (hq / hkv), [SAGE-DEV-17]).
 * The inputs go to the device as binary32: every value of the case's format
 * is one. */
static int gpu_sage_attention_mha(float *o, const float *q, const float *k, const float *v, const kvq_sage_attn *a,
                                  uint32_t hq, uint32_t hkv, uint32_t in_fmt, const kvq_policy *pol)
{
    if (o == NULL || q == NULL || k == NULL || v == NULL || a == NULL || pol == NULL ||
        kvq_policy_check(pol) != KVQ_OK || !kvq_sage_attn_ok(a) || !kvq_sage_mha_ok(hq, hkv, in_fmt))
        return KVQ_E_PARAM;
    const uint64_t qe = (uint64_t)a->nq * a->dim, ke = (uint64_t)a->nk * a->dim;
    for (uint64_t e = 0; e < hq * qe; e++)
        if (!kvq_sage_in_exact(q[e], in_fmt)) return KVQ_E_PARAM;
    for (uint64_t e = 0; e < hkv * ke; e++)
        if (!kvq_sage_in_exact(k[e], in_fmt) || !kvq_sage_in_exact(v[e], in_fmt)) return KVQ_E_PARAM;
    if (memcmp(pol, &kvq_policy_default, sizeof *pol) != 0) return KVQ_E_PARAM;
    void *dq = NULL, *dk = NULL, *dv = NULL, *dout = NULL, *dres = NULL, *ws = NULL;
    const size_t wsb = kvq_cuda_sage_attn_gqa_workspace(a, hq, hkv);
    kvq_status st = wsb != 0u ? KVQ_OK : KVQ_E_PARAM;
    if (st == KVQ_OK) st = dev_in(&dq, q, hq * qe * sizeof(float));
    if (st == KVQ_OK) st = dev_in(&dk, k, hkv * ke * sizeof(float));
    if (st == KVQ_OK) st = dev_in(&dv, v, hkv * ke * sizeof(float));
    if (st == KVQ_OK) st = dev_alloc(&dout, hq * qe * sizeof(float));
    if (st == KVQ_OK) st = dev_alloc(&dres, sizeof(kvq_cuda_result));
    if (st == KVQ_OK) st = dev_alloc(&ws, wsb);
    if (st == KVQ_OK)
        st = kvq_cuda_sage_attn_gqa((float *)dout, (kvq_cuda_result *)dres, (const float *)dq, (const float *)dk,
                                    (const float *)dv, a, hq, hkv, ws, wsb, 0);
    kvq_cuda_result res;
    if (st == KVQ_OK)
        st = cudaDeviceSynchronize() == cudaSuccess &&
                     cudaMemcpy(&res, dres, sizeof res, cudaMemcpyDeviceToHost) == cudaSuccess
                 ? (kvq_status)res.status
                 : KVQ_E_DEVICE;
    if (st == KVQ_OK) st = dev_out(o, dout, hq * qe * sizeof(float));
    cudaFree(dq), cudaFree(dk), cudaFree(dv), cudaFree(dout), cudaFree(dres), cudaFree(ws);
    return st;
}

/* sage_pv [SAGE-ACC-07]: the reference's checks, in its order, before any
 * device work (kvq_sage_pv_check), then kvq_cuda_sage_pv_host
 * (gpu/sage/sage_pv.cu). */
static int gpu_sage_pv(float *d, const uint8_t *a, const uint8_t *b, const float *c, uint32_t rows,
                       uint32_t n, uint32_t fmt, uint32_t model, uint32_t buffer)
{
    kvq_status st = d != NULL ? kvq_sage_pv_check(a, b, c, rows, n, fmt, model, buffer) : KVQ_E_PARAM;
    return st != KVQ_OK ? st : kvq_cuda_sage_pv_host(d, a, b, c, rows, n, fmt, model, buffer);
}

static const kvq_gpu_entry SAGE_ENTRIES[] = {
    { "sage_smooth", 1, (kvq_entry_fn)gpu_sage_smooth },
    { "sage_quantize_qk", 1, (kvq_entry_fn)gpu_sage_qk },
    { "sage_dequantize_qk", 1, (kvq_entry_fn)gpu_sage_dq },
    { "sage_quantize_v", 1, (kvq_entry_fn)gpu_sage_v },
    { "sage_quantize_p", 1, (kvq_entry_fn)gpu_sage_p },
    { "sage_delta_s", 1, (kvq_entry_fn)gpu_sage_ds },
    { "sage_pv", 1, (kvq_entry_fn)gpu_sage_pv },
    { "sage_attention", 1, (kvq_entry_fn)gpu_sage_attention },
    { "sage_attention_mha", 1, (kvq_entry_fn)gpu_sage_attention_mha },
};
KVQ_GPU_ENTRIES(sage, SAGE_ENTRIES)
