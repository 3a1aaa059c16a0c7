/*
 * cert_bench.cu -- a small shared library (libkvq_cert_bench.so) that lets
 * gpu/cert/cert_bench.py time the certified decode step (gpu/cert/decode_*.cu) and
 * torch's scaled_dot_product_attention in one process, on the same binary16
 * K and V (torch tensors' data_ptr()).
 *
 *   kvq_bench_setup   K, V: device binary16 [kv_heads][n][d]; q: device binary16
 *                     [kv_heads * group][d].  Quantizes on the device with the
 *                     pinned CERT quantizers, annotates, copies the residual
 *                     block and tier 2 (mapped pinned host memory).
 *   kvq_bench_step    enqueues one step (certify 1 or 0) on a CUDA stream
 *   kvq_bench_variant the step variant of the following steps [CERT-VAR-01]
 *                     (default: the paper variant)
 *   kvq_bench_overlap the paper variant's early segment pass on or off
 *                     [CERT-DEV-10] (default: on)
 *   kvq_bench_fetch   records, statuses and the output of the last step
 *   kvq_bench_listed  after a paper step: per KV head the blocks some head
 *                     selects, and those whose original values are read
 * Every function returns a kvq_status (0 = KVQ_OK).
 */
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <stdlib.h>
#include <string.h>

#include "kvq.h"
#include "kvq_cuda.h"

typedef struct bench_ctx {
    kvq_cuda_cert_heads h;
    kvq_cert_params prm;
    kvq_cuda_cert_ws *ws;
    float *q, *out, *d1, *kf, *vf;
    int8_t *kc;
    float *sg, *z, *vs, *vz, *eta, *nu;
    uint8_t *vc;
    uint16_t *kr, *vr, *t2, *t2d;
    kvq_cert_record *rec;
    kvq_cert_decl *decl;
    uint32_t *status;
} bench_ctx;

__global__ void f16_to_f32_kernel(float *dst, const __half *src, uint64_t n)
{
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (uint64_t)gridDim.x * blockDim.x)
        dst[i] = __half2float(src[i]);
}

extern "C" void kvq_bench_free(void *p)
{
    bench_ctx *c = (bench_ctx *)p;
    if (!c) return;
    kvq_cuda_cert_ws_destroy(c->ws);
    void *d[] = {c->q, c->out, c->d1, c->kf, c->vf, c->kc, c->sg, c->z, c->vs, c->vz, c->eta,
                 c->nu, c->vc, c->kr, c->vr, c->rec, c->decl, c->status};
    for (size_t i = 0; i < sizeof d / sizeof d[0]; i++)
        if (d[i]) cudaFree(d[i]);
    if (c->t2) cudaFreeHost(c->t2);
    free(c);
}

/* vtol < 0 keeps the default [CERT-SEL-03]. */
extern "C" int kvq_bench_setup(void **out, uint32_t kvh, uint32_t group, uint32_t n, uint32_t d,
                               const void *k16, const void *v16, const void *q16, float scale,
                               float vtol)
{
    bench_ctx *c = (bench_ctx *)calloc(1, sizeof *c);
    if (!c) return KVQ_E_NOMEM;
    kvq_cert_shape sh = {n, d};
    if (!kvq_cert_shape_ok(&sh)) {
        free(c);
        return KVQ_E_SHAPE;
    }
    const uint64_t nv = (uint64_t)n * d, qh = (uint64_t)kvh * group;
    const uint32_t nb = kvq_cert_blocks(&sh), nres = kvq_cert_residual_tokens(&sh);
    cudaError_t e = cudaSuccess;
#define A(p, cnt) if (e == cudaSuccess) e = cudaMalloc((void **)&c->p, ((cnt) ? (cnt) : 1) * sizeof *c->p)
    A(q, qh * d);
    A(out, qh * d);
    A(d1, qh);
    A(kf, kvh * nv);
    A(vf, kvh * nv);
    A(kc, kvh * kvq_cert_key_code_bytes(&sh));
    A(sg, kvh * kvq_cert_key_meta_count(&sh));
    A(z, kvh * kvq_cert_key_meta_count(&sh));
    A(vc, kvh * kvq_cert_value_code_bytes(&sh));
    A(vs, kvh * kvq_cert_value_groups(&sh));
    A(vz, kvh * kvq_cert_value_groups(&sh));
    A(eta, (uint64_t)kvh * nb);
    A(nu, (uint64_t)kvh * nb);
    A(kr, (uint64_t)kvh * nres * d);
    A(vr, (uint64_t)kvh * nres * d);
    A(rec, qh);
    A(decl, qh);
    A(status, qh);
#undef A
    if (e == cudaSuccess) e = cudaHostAlloc((void **)&c->t2, 2 * kvh * nv * 2, cudaHostAllocMapped);
    if (e == cudaSuccess) e = cudaHostGetDevicePointer((void **)&c->t2d, c->t2, 0);
    if (e != cudaSuccess) {
        kvq_bench_free(c);
        return KVQ_E_NOMEM;
    }
    f16_to_f32_kernel<<<1024, 256>>>(c->kf, (const __half *)k16, kvh * nv);
    f16_to_f32_kernel<<<1024, 256>>>(c->vf, (const __half *)v16, kvh * nv);
    f16_to_f32_kernel<<<64, 256>>>(c->q, (const __half *)q16, qh * d);
    cudaMemcpy(c->t2, k16, kvh * nv * 2, cudaMemcpyDeviceToHost);
    cudaMemcpy(c->t2 + kvh * nv, v16, kvh * nv * 2, cudaMemcpyDeviceToHost);
    for (uint32_t h = 0; h < kvh; h++) {
        cudaMemcpy(c->kr + (uint64_t)h * nres * d, (const uint16_t *)k16 + h * nv + (uint64_t)(n - nres) * d,
                   (uint64_t)nres * d * 2, cudaMemcpyDeviceToDevice);
        cudaMemcpy(c->vr + (uint64_t)h * nres * d, (const uint16_t *)v16 + h * nv + (uint64_t)(n - nres) * d,
                   (uint64_t)nres * d * 2, cudaMemcpyDeviceToDevice);
    }
    kvq_status st = KVQ_OK;
    for (uint32_t h = 0; h < kvh && st == KVQ_OK; h++) {
        if (kvq_cert_full_blocks(&sh) > 0u) {
            st = kvq_cuda_cert_quantize_keys(c->kc + h * kvq_cert_key_code_bytes(&sh),
                                             c->sg + h * kvq_cert_key_meta_count(&sh),
                                             c->z + h * kvq_cert_key_meta_count(&sh), NULL,
                                             c->kf + h * nv, &sh, &kvq_policy_default, 0);
            if (st == KVQ_OK)
                st = kvq_cuda_cert_quantize_values(c->vc + h * kvq_cert_value_code_bytes(&sh),
                                                   c->vs + h * kvq_cert_value_groups(&sh),
                                                   c->vz + h * kvq_cert_value_groups(&sh), NULL,
                                                   c->vf + h * nv, &sh, &kvq_policy_default, 0);
        }
        if (st == KVQ_OK)
            st = kvq_cuda_cert_annotate(c->eta + (uint64_t)h * nb, c->nu + (uint64_t)h * nb,
                                        c->vf + h * nv, c->vc + h * kvq_cert_value_code_bytes(&sh),
                                        c->vs + h * kvq_cert_value_groups(&sh),
                                        c->vz + h * kvq_cert_value_groups(&sh), &sh, 0);
    }
    if (st == KVQ_OK && cudaDeviceSynchronize() != cudaSuccess) st = KVQ_E_DEVICE;
    cudaFree(c->kf);
    cudaFree(c->vf);
    c->kf = c->vf = NULL;
    if (st == KVQ_OK) st = kvq_cuda_cert_ws_create(&c->ws, (uint32_t)qh, &sh);
    if (st != KVQ_OK) {
        kvq_bench_free(c);
        return st;
    }
    c->h.kv_heads = kvh;
    c->h.group = group;
    c->h.shape = sh;
    c->h.scale = scale;
    c->h.d_q = c->q;
    c->h.d_kcodes = c->kc;
    c->h.d_sigma = c->sg;
    c->h.d_z = c->z;
    c->h.d_vcodes = c->vc;
    c->h.d_vscale = c->vs;
    c->h.d_vzero = c->vz;
    c->h.d_eta = c->eta;
    c->h.d_nu = c->nu;
    c->h.d_kres = c->kr;
    c->h.d_vres = c->vr;
    c->h.t2_k = c->t2d;
    c->h.t2_v = c->t2d + kvh * nv;
    c->prm = kvq_cert_default_params();
    if (vtol >= 0.0f) c->prm.vtol = vtol;
    *out = c;
    return KVQ_OK;
}

extern "C" int kvq_bench_step(void *p, int certify, void *stream)
{
    bench_ctx *c = (bench_ctx *)p;
    return kvq_cuda_cert_step_async(c->out, c->rec, c->decl, c->d1, c->status, NULL, NULL, &c->h,
                                    &c->prm, certify, c->ws, (cudaStream_t)stream);
}

/* KVQ_CERT_VARIANT_PAPER or _SPARSE for the following steps. */
extern "C" int kvq_bench_variant(void *p, uint32_t variant)
{
    bench_ctx *c = (bench_ctx *)p;
    if (variant >= KVQ_CERT_VARIANTS) return KVQ_E_PARAM;
    c->prm.variant = variant;
    return KVQ_OK;
}

/* The paper variant's early segment pass on (1, the default) or off (0:
 * Phase 2 waits for the select kernel) for the following steps [CERT-DEV-10]. */
extern "C" int kvq_bench_overlap(void *p, int on)
{
    bench_ctx *c = (bench_ctx *)p;
    return kvq_cuda_cert_ws_set_overlap(c->ws, on);
}

/* listed, orig: kv_heads counts each (host). */
extern "C" int kvq_bench_listed(void *p, uint32_t *listed, uint32_t *orig)
{
    bench_ctx *c = (bench_ctx *)p;
    if (cudaDeviceSynchronize() != cudaSuccess) return KVQ_E_DEVICE;
    return kvq_cuda_cert_listed(listed, orig, c->ws, c->h.kv_heads, kvq_cert_blocks(&c->h.shape));
}

/* rec: qh records; status: qh; out: qh * d floats (host). */
extern "C" int kvq_bench_fetch(void *p, kvq_cert_record *rec, uint32_t *status, float *out)
{
    bench_ctx *c = (bench_ctx *)p;
    const uint64_t qh = (uint64_t)c->h.kv_heads * c->h.group;
    if (cudaDeviceSynchronize() != cudaSuccess) return KVQ_E_DEVICE;
    if (cudaMemcpy(rec, c->rec, qh * sizeof *rec, cudaMemcpyDeviceToHost) != cudaSuccess ||
        cudaMemcpy(status, c->status, qh * 4, cudaMemcpyDeviceToHost) != cudaSuccess ||
        cudaMemcpy(out, c->out, qh * c->h.shape.dim * 4, cudaMemcpyDeviceToHost) != cudaSuccess)
        return KVQ_E_DEVICE;
    return KVQ_OK;
}

extern "C" size_t kvq_bench_record_size(void) { return sizeof(kvq_cert_record); }
