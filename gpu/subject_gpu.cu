/*
 * subject_gpu.cu -- the bundled CUDA kernels as a conformance subject
 * (conformance/kvq_subject.h): build/gpu/libkvq_subject_gpu.so.
 *
 * The subject's entry points take host pointers, like the reference; they copy
 * to the device, run the launchers of gpu/kivi.cu and copy back only on KVQ_OK,
 * so an error leaves the caller's buffers untouched.  Without a usable device,
 * init answers KVQ_E_NODEVICE with the reason, and the kit counts every case
 * SKIPPED, never passed.
 */
#include "kvq_cuda.h"
#include "kvq_subject.h"

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

static const kvq_subject_v1 gpu_subject = {
    KVQ_SUBJECT_ABI, "kvq-cuda", gpu_init, gpu_kivi_quantize, gpu_kivi_dequantize, NULL,
};

extern "C" __attribute__((visibility("default"))) const kvq_subject_v1 *kvq_subject_entry(void)
{
    return &gpu_subject;
}
