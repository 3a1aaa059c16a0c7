/*
 * kivi/entries.cu -- the KIVI entries of the CUDA subject (gpu/subject_gpu.h):
 * the launchers of gpu/kivi/kivi.cu through their host-pointer forms.
 */
#include "subject_gpu.h"

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

static const kvq_gpu_entry KIVI_ENTRIES[] = {
    { "kivi_quantize", 1, (kvq_entry_fn)gpu_kivi_quantize },
    { "kivi_dequantize", 1, (kvq_entry_fn)gpu_kivi_dequantize },
};
KVQ_GPU_ENTRIES(kivi, KIVI_ENTRIES)
