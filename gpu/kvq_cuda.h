/*
 * kvq_cuda.h -- host launchers of the CUDA kernels (gpu/).
 *
 * Every launcher is bit-exact to the fast reference path (include/kvq.h) on
 * status, codes, stored metadata, dequantized values and flags, under every
 * policy.  Names: kvq_cuda_<family>_<op> for launchers, <...>_kernel for the
 * __global__ functions behind them.
 *
 * Pointers named d_* are device pointers.  On any error status the caller's
 * output buffers are left untouched, as in the reference [POL-NF-01],
 * [POL-OV-02]: the quantizer writes into workspace scratch first and copies it
 * out only when the whole call succeeded (unless KVQ_CUDA_DIRECT is given).
 */
#ifndef KVQ_CUDA_H
#define KVQ_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "kvq.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Option bits of the quantize launchers. */
#define KVQ_CUDA_DIRECT     0x1u /* one pass straight into the outputs: faster, but on an
                                  * error status the outputs hold unspecified data.  Outside
                                  * the conformance contract; never used by the subject. */
#define KVQ_CUDA_NO_DISCARD 0x2u /* keep the scratch lines in L2 after the copy-out
                                  * (benchmark knob; results are identical) */

/* Result of an asynchronous call, written to device memory in stream order. */
typedef struct kvq_cuda_result {
    uint32_t status;  /* kvq_status */
    uint32_t flags;   /* KVQ_FLAG_*; meaningful when status == KVQ_OK */
} kvq_cuda_result;

/* KVQ_OK when a CUDA device is usable; otherwise KVQ_E_NODEVICE with a reason
 * in why (may be NULL). */
kvq_status kvq_cuda_device_check(char *why, size_t whylen);

/* Workspace bytes a quantize call of this shape and these options needs (0 for
 * a malformed shape).  Workspace must be 256-byte aligned device memory. */
size_t kvq_cuda_kivi_quantize_workspace(const kvq_kivi_shape *shape, uint32_t opts);
/* Workspace bytes of a dequantize call. */
size_t kvq_cuda_kivi_dequantize_workspace(const kvq_kivi_shape *shape);

/* Quantize d_x into d_codes/d_scale/d_zero (layout: include/kvq_layout.h).
 * Blocking: returns once the work on `stream` is complete; *flags (host, may
 * be NULL) receives the call's events on KVQ_OK and is untouched otherwise.
 * workspace NULL: the launcher allocates it stream-ordered (cudaMallocAsync).
 * Returns the reference's status, KVQ_E_DEVICE when a CUDA call failed,
 * KVQ_E_NOMEM when the workspace could not be allocated. */
kvq_status kvq_cuda_kivi_quantize(uint8_t *d_codes, float *d_scale, float *d_zero,
                                  uint32_t *flags, const float *d_x,
                                  const kvq_kivi_shape *shape, const kvq_policy *pol,
                                  void *d_workspace, size_t workspace_bytes, uint32_t opts,
                                  cudaStream_t stream);

/* Dequantize d_codes/d_scale/d_zero into d_y.  Blocking, like the above. */
kvq_status kvq_cuda_kivi_dequantize(float *d_y, uint32_t *flags, const uint8_t *d_codes,
                                    const float *d_scale, const float *d_zero,
                                    const kvq_kivi_shape *shape, const kvq_policy *pol,
                                    void *d_workspace, size_t workspace_bytes,
                                    cudaStream_t stream);

/* Stream-ordered forms: argument errors (KVQ_E_PARAM, KVQ_E_SHAPE) come back
 * at once; otherwise the work is enqueued, KVQ_OK is returned, and the call's
 * status and flags land in *d_result (device memory) in stream order.  The
 * workspace is required here. */
kvq_status kvq_cuda_kivi_quantize_async(uint8_t *d_codes, float *d_scale, float *d_zero,
                                        kvq_cuda_result *d_result, const float *d_x,
                                        const kvq_kivi_shape *shape, const kvq_policy *pol,
                                        void *d_workspace, size_t workspace_bytes,
                                        uint32_t opts, cudaStream_t stream);
kvq_status kvq_cuda_kivi_dequantize_async(float *d_y, kvq_cuda_result *d_result,
                                          const uint8_t *d_codes, const float *d_scale,
                                          const float *d_zero, const kvq_kivi_shape *shape,
                                          const kvq_policy *pol, void *d_workspace,
                                          size_t workspace_bytes, cudaStream_t stream);

/* Host-pointer conveniences with the reference's signatures (include/kvq.h):
 * copy in, run on the default stream, copy out only on KVQ_OK. */
kvq_status kvq_cuda_kivi_quantize_host(uint8_t *codes, float *scale, float *zero,
                                       uint32_t *flags, const float *x,
                                       const kvq_kivi_shape *shape, const kvq_policy *pol);
kvq_status kvq_cuda_kivi_dequantize_host(float *y, uint32_t *flags, const uint8_t *codes,
                                         const float *scale, const float *zero,
                                         const kvq_kivi_shape *shape, const kvq_policy *pol);

/* ---- CERT quantizers (spec/cert.md) -------------------------------------
 * Bit-exact to kvq_cert_quantize_keys / kvq_cert_quantize_values (include/kvq.h)
 * on status, codes, metadata and flags.  d_* are device pointers; blocking on
 * `stream`; *flags (host, may be NULL) receives the call's events on KVQ_OK.
 * Inputs must be binary16 values, all n tokens checked: KVQ_E_NONFINITE, then
 * KVQ_E_PARAM [CERT-L-02]; nothing is written on any error [API-ERR-01].
 * KVQ_E_DEVICE when a CUDA call failed, KVQ_E_NOMEM when device scratch could
 * not be allocated. */

/* Keys [CERT-K8-01..05]: codes (kvq_cert_key_code_bytes, token-major within a
 * block), sigma and z (kvq_cert_key_meta_count binary32 entries each). */
kvq_status kvq_cuda_cert_quantize_keys(int8_t *d_codes, float *d_sigma, float *d_z,
                                       uint32_t *flags, const float *d_k,
                                       const kvq_cert_shape *shape, const kvq_policy *pol,
                                       cudaStream_t stream);

/* Values [CERT-V4-01]: KIVI bits 4, group 16, per token, binary16 metadata over
 * the 16 nq quantized tokens (kvq_cert_value_kivi_shape). */
kvq_status kvq_cuda_cert_quantize_values(uint8_t *d_codes, float *d_scale, float *d_zero,
                                         uint32_t *flags, const float *d_v,
                                         const kvq_cert_shape *shape, const kvq_policy *pol,
                                         cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif /* KVQ_CUDA_H */
