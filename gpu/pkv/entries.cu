/*
 * pkv/entries.cu -- the PKV entries of the CUDA subject (gpu/subject_gpu.h,
 * spec/pkv.md): the launchers of gpu/pkv/ through their host-pointer forms,
 * each with the fast path's signature (the v1 entry types of
 * conformance/kvq_subject.h), so a failed call writes nothing.  pkv_kmeans is
 * the host fast path itself (kvq_pkv_kmeans): k-means runs on the host
 * [PKV-DEV-04], and the subject says so by linking it rather than a kernel.
 */
#include "subject_gpu.h"
#include "kvq_pkv.h"
#include "pkv/kvq_cuda_pkv.h"

static int gpu_pkv_kmeans(float *patterns, uint32_t *cluster, uint32_t *iters,
                          uint32_t *converged, const float *x, uint32_t tokens, uint32_t dim,
                          const kvq_pkv_params *p)
{
    return kvq_pkv_kmeans(patterns, cluster, iters, converged, x, tokens, dim, p);
}

static int gpu_pkv_quantize(uint8_t *codes, float *scale, float *zero, uint16_t *index,
                            float *resid, uint32_t *flags, const float *x, uint32_t kind,
                            uint32_t tokens, uint32_t dim, const float *bank, uint32_t npat,
                            const kvq_pkv_params *p, const kvq_policy *pol)
{
    return kvq_cuda_pkv_quantize_host(codes, scale, zero, index, resid, flags, x, kind, tokens,
                                      dim, bank, npat, p, pol);
}

static int gpu_pkv_dequantize(float *y, uint32_t *flags, const uint8_t *codes,
                              const float *scale, const float *zero, const uint16_t *index,
                              uint32_t kind, uint32_t tokens, uint32_t dim, const float *bank,
                              uint32_t npat, const kvq_pkv_params *p, const kvq_policy *pol)
{
    return kvq_cuda_pkv_dequantize_host(y, flags, codes, scale, zero, index, kind, tokens, dim,
                                        bank, npat, p, pol);
}

static int gpu_pkv_key_flush(uint8_t *codes, float *scale, float *zero, uint16_t *index,
                             float *resid, uint32_t *flags, float *bank, uint32_t *npat,
                             uint32_t bank_cap, const float *window, uint32_t dim,
                             const kvq_pkv_params *p, const kvq_policy *pol)
{
    return kvq_cuda_pkv_key_flush_host(codes, scale, zero, index, resid, flags, bank, npat,
                                       bank_cap, window, dim, p, pol);
}

static int gpu_pkv_value_step(uint8_t *codes, float *scale, float *zero, uint16_t *index,
                              float *resid, uint32_t *flags, uint32_t *count, float *bank,
                              uint32_t *npat, uint32_t bank_cap, const float *window,
                              uint32_t held, uint64_t step, uint32_t dim,
                              const kvq_pkv_params *p, const kvq_policy *pol)
{
    return kvq_cuda_pkv_value_step_host(codes, scale, zero, index, resid, flags, count, bank, npat,
                                        bank_cap, window, held, step, dim, p, pol);
}

static const kvq_gpu_entry PKV_ENTRIES[] = {
    { "pkv_kmeans", 1, (kvq_entry_fn)gpu_pkv_kmeans },
    { "pkv_quantize", 1, (kvq_entry_fn)gpu_pkv_quantize },
    { "pkv_dequantize", 1, (kvq_entry_fn)gpu_pkv_dequantize },
    { "pkv_key_flush", 1, (kvq_entry_fn)gpu_pkv_key_flush },
    { "pkv_value_step", 1, (kvq_entry_fn)gpu_pkv_value_step },
};
KVQ_GPU_ENTRIES(pkv, PKV_ENTRIES)
