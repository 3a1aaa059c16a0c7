/*
 * cert/entries.cu -- the CERT entries of the CUDA subject (gpu/subject_gpu.h)
 * [VER-CERT-02]: keys and values quantized on the device
 * (kvq_cuda_cert_quantize_keys / _values, gpu/cert/cert.cu), annotations and
 * the decode step by gpu/cert/decode_*.cu (kvq_cuda_cert_annotate_host,
 * kvq_cuda_cert_step_host: the device quantizes K and V itself and runs the
 * step; rung 4 is the host reference dense path, which is why the subject
 * links ref/fast's CERT files, gpu/cert/rules.mk).
 */
#include "subject_gpu.h"

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

/* cert_step of signature versions 1 and 2: kvq_cuda_cert_step_host runs the
 * variant prm->variant names [CERT-VAR-01] (version 1 is given sparse cases
 * only). */
static const kvq_gpu_entry CERT_ENTRIES[] = {
    { "cert_quantize_keys", 1, (kvq_entry_fn)gpu_cert_keys },
    { "cert_quantize_values", 1, (kvq_entry_fn)gpu_cert_values },
    { "cert_annotate", 1, (kvq_entry_fn)gpu_cert_annotate },
    { "cert_step", 1, (kvq_entry_fn)gpu_cert_step },
    { "cert_step", 2, (kvq_entry_fn)gpu_cert_step },
};
KVQ_GPU_ENTRIES(cert, CERT_ENTRIES)
