/*
 * kvq_cuda_pkv.h -- host launchers of the PKV kernels (gpu/pkv/, spec/pkv.md).
 *
 * Every launcher is bit-exact to the fast path (include/kvq_pkv.h,
 * ref/fast/pkv.c) on status, pattern indices, residuals, KIVI codes and
 * metadata, flags, dequantized values and Chebyshev centres: the device follows
 * the pinned binary32 sequence (explicit round-to-nearest intrinsics, the build
 * adds -fmad=false) and the KIVI stage is KIVI's own launcher
 * (gpu/kivi/kivi.cu) or its pinned arithmetic (gpu/kivi/kivi_dev.cuh).
 * Arguments are checked on the host in the fast path's order; the values on
 * the device, in its order [PKV-ERR-01].  On any error status the caller's
 * outputs are left untouched (unless KVQ_CUDA_DIRECT is given): the device
 * writes scratch and commits it only when the whole call succeeded.
 *
 * Pointers named d_* are device pointers; the bank is [npat][d] binary32 in
 * device memory, indices uint16 [T] (layout: include/kvq_pkv.h).
 *
 * k-means at prefill [PKV-KM-01..07] runs on the host fast path
 * (kvq_pkv_kmeans): its set is judged by properties, never bitwise, and it runs
 * once per prefill; the device takes the set it returns as its bank [PKV-DEV-04].
 */
#ifndef KVQ_CUDA_PKV_H
#define KVQ_CUDA_PKV_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "kvq_pkv.h"
#include "kvq_cuda.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- assignment [PKV-A-01..03] ------------------------------------------- */

/* d_index[t] = kvq_pkv_nearest of token t of d_x [T][d] against the bank,
 * metric `dist` (KVQ_PKV_DIST_*), the lowest index on ties [PKV-A-02]; with
 * d = 128, at most 32 patterns and the min-max metric by the pruned argmin
 * [PKV-DEV-05] unless opts holds KVQ_CUDA_PKV_UNPRUNED (below; the same
 * indices).  Blocking on `stream`; statuses as kvq_pkv_assign, plus
 * KVQ_E_DEVICE and KVQ_E_NOMEM; an opts bit other than KVQ_CUDA_PKV_UNPRUNED
 * is KVQ_E_PARAM.  Nothing is written on error. */
kvq_status kvq_cuda_pkv_assign(uint16_t *d_index, const float *d_x, uint32_t tokens,
                               uint32_t dim, const float *d_bank, uint32_t npat, uint32_t dist,
                               uint32_t opts, cudaStream_t stream);
/* Host pointers, kvq_pkv_assign's signature. */
kvq_status kvq_cuda_pkv_assign_host(uint16_t *index, const float *x, uint32_t tokens,
                                    uint32_t dim, const float *bank, uint32_t npat,
                                    uint32_t dist);

/* ---- residual quantization [PKV-Q-01..04] [PKV-V-01..03] ------------------ */

/* Option bit of the quantize launchers (with kvq_cuda.h's KVQ_CUDA_*): with
 * KVQ_CUDA_DIRECT, values, more than 16 patterns and G a power of two 8..128,
 * the residual and its KIVI stage run in one kernel (KIVI's device arithmetic
 * on the residual in registers; the same results bit for bit); otherwise it is
 * ignored. */
#define KVQ_CUDA_PKV_FUSED 0x100u
/* The assignment of every launcher, with d = 128, at most 32 patterns and the
 * min-max metric (keys at decode, values, keys at prefill by
 * KVQ_PKV_DIST_MINMAX), is the pruned argmin: it skips every pattern whose sound
 * lower bound on the pinned distance is strictly above the best distance found
 * (spec/pkv.md [PKV-DEV-05], spec/bounds/pkv.md §5), the same indices bit for
 * bit, most patterns never scanned on clustered data.  This option bit (of the
 * quantize and assign launchers) takes the unpruned scan instead, every
 * distance computed (the same results; for comparison and as the reference
 * form); ignored for other shapes, which always scan every pattern. */
#define KVQ_CUDA_PKV_UNPRUNED 0x200u

/* Workspace bytes of a quantize call (0 for arguments kvq_pkv_quantize
 * refuses with KVQ_E_PARAM or KVQ_E_SHAPE); 256-byte aligned device memory. */
size_t kvq_cuda_pkv_quantize_workspace(const kvq_pkv_params *p, uint32_t kind, uint32_t tokens,
                                       uint32_t dim, uint32_t opts);

/* kvq_pkv_quantize on the device: index, resid, then the KIVI quantization of
 * resid (kvq_cuda_kivi_quantize_async) into codes/scale/zero.  Stream-ordered:
 * argument errors come back at once; otherwise the call's status and flags
 * land in *d_result in stream order.  opts: KVQ_CUDA_DIRECT (index and resid
 * written straight into the outputs, the KIVI stage direct too; outputs
 * unspecified on an error status), KVQ_CUDA_NO_DISCARD, KVQ_CUDA_PKV_FUSED,
 * KVQ_CUDA_PKV_UNPRUNED. */
kvq_status kvq_cuda_pkv_quantize_async(uint8_t *d_codes, float *d_scale, float *d_zero,
                                       uint16_t *d_index, float *d_resid,
                                       kvq_cuda_result *d_result, const float *d_x,
                                       uint32_t kind, uint32_t tokens, uint32_t dim,
                                       const float *d_bank, uint32_t npat,
                                       const kvq_pkv_params *p, const kvq_policy *pol,
                                       void *d_workspace, size_t workspace_bytes, uint32_t opts,
                                       cudaStream_t stream);
/* Blocking form; workspace NULL: allocated stream-ordered.  *flags (host, may
 * be NULL) receives the call's flags on KVQ_OK. */
kvq_status kvq_cuda_pkv_quantize(uint8_t *d_codes, float *d_scale, float *d_zero,
                                 uint16_t *d_index, float *d_resid, uint32_t *flags,
                                 const float *d_x, uint32_t kind, uint32_t tokens, uint32_t dim,
                                 const float *d_bank, uint32_t npat, const kvq_pkv_params *p,
                                 const kvq_policy *pol, void *d_workspace,
                                 size_t workspace_bytes, uint32_t opts, cudaStream_t stream);
/* Host pointers, kvq_pkv_quantize's signature. */
kvq_status kvq_cuda_pkv_quantize_host(uint8_t *codes, float *scale, float *zero,
                                      uint16_t *index, float *resid, uint32_t *flags,
                                      const float *x, uint32_t kind, uint32_t tokens,
                                      uint32_t dim, const float *bank, uint32_t npat,
                                      const kvq_pkv_params *p, const kvq_policy *pol);

/* ---- dequantization [PKV-D-01..02] ---------------------------------------- */

/* Workspace bytes of a dequantize call (256). */
size_t kvq_cuda_pkv_dequantize_workspace(void);

/* Option bits of the dequantize launchers: the form of [PKV-DEV-06].  Without
 * either, the form measured faster on the device for both groupings (spec/pkv.md
 * [PKV-DEV-06]): the two kernels; KVQ_CUDA_PKV_DQ_ONE asks for the one-kernel
 * form (taken where the shape and the device allow it, else the two kernels),
 * KVQ_CUDA_PKV_DQ_TWO for the two kernels.  Both bits, or any other bit, is
 * KVQ_E_PARAM.  The results are the same bit for bit in every form. */
#define KVQ_CUDA_PKV_DQ_ONE 0x1000u
#define KVQ_CUDA_PKV_DQ_TWO 0x2000u

/* kvq_pkv_dequantize on the device: a check pass (bank, indices, KIVI
 * metadata and, under the NaN policy, overflow, in the fast path's order),
 * then y = RN32(fmaf(c, s, z) + m[index]) in one pass that returns at once when
 * the check failed.  In the one-kernel form (per-token groups with G a power
 * of two, per-channel groups with G 32, 64, 128, on a device that launches
 * cooperatively) both run as one kernel around a grid barrier [PKV-DEV-06]:
 * nothing is written on error either way.  Stream-ordered like the quantizer. */
kvq_status kvq_cuda_pkv_dequantize_async(float *d_y, kvq_cuda_result *d_result,
                                         const uint8_t *d_codes, const float *d_scale,
                                         const float *d_zero, const uint16_t *d_index,
                                         uint32_t kind, uint32_t tokens, uint32_t dim,
                                         const float *d_bank, uint32_t npat,
                                         const kvq_pkv_params *p, const kvq_policy *pol,
                                         void *d_workspace, size_t workspace_bytes,
                                         uint32_t opts, cudaStream_t stream);
kvq_status kvq_cuda_pkv_dequantize(float *d_y, uint32_t *flags, const uint8_t *d_codes,
                                   const float *d_scale, const float *d_zero,
                                   const uint16_t *d_index, uint32_t kind, uint32_t tokens,
                                   uint32_t dim, const float *d_bank, uint32_t npat,
                                   const kvq_pkv_params *p, const kvq_policy *pol,
                                   void *d_workspace, size_t workspace_bytes, uint32_t opts,
                                   cudaStream_t stream);
kvq_status kvq_cuda_pkv_dequantize_host(float *y, uint32_t *flags, const uint8_t *codes,
                                        const float *scale, const float *zero,
                                        const uint16_t *index, uint32_t kind, uint32_t tokens,
                                        uint32_t dim, const float *bank, uint32_t npat,
                                        const kvq_pkv_params *p, const kvq_policy *pol);

/* ---- Chebyshev centres and the bank [PKV-U-01..04] ------------------------ */

/* d_centre[c] = RN32((min_t x[t][c] + max_t x[t][c]) / 2) over T tokens, the
 * extremes taken in ascending token order with strict comparisons, as the
 * fast path does (so the sign of a zero extreme is its) [PKV-U-02].
 * Blocking; statuses as kvq_pkv_chebyshev. */
kvq_status kvq_cuda_pkv_chebyshev(float *d_centre, const float *d_x, uint32_t tokens,
                                  uint32_t dim, cudaStream_t stream);
kvq_status kvq_cuda_pkv_chebyshev_host(float *centre, const float *x, uint32_t tokens,
                                       uint32_t dim);

/* kvq_pkv_bank_update with a device bank and window: the centre of window
 * [n][d] joins d_bank at slot *npat (host count) unless the bank is at its
 * limit [PKV-U-04]; bank_cap the room allocated.  Blocking; statuses and
 * nothing-written as kvq_pkv_bank_update (one centre per `window` decoded
 * tokens is the caller's schedule, [PKV-U-01]). */
kvq_status kvq_cuda_pkv_bank_update(float *d_bank, uint32_t *npat, uint32_t *appended,
                                    uint32_t bank_cap, const float *d_window, uint32_t n,
                                    uint32_t dim, const kvq_pkv_params *p, cudaStream_t stream);
kvq_status kvq_cuda_pkv_bank_update_host(float *bank, uint32_t *npat, uint32_t *appended,
                                         uint32_t bank_cap, const float *window, uint32_t n,
                                         uint32_t dim, const kvq_pkv_params *p);

/* ---- the decode steps [PKV-U-01..05] ---------------------------------------
 * Host pointers and the fast path's signatures and statuses: kvq_pkv_key_flush
 * (the window's centre joins a device copy of the bank, then the window is
 * quantized on the device after or before it joins, [PKV-U-03]) and
 * kvq_pkv_value_step ([PKV-U-05]).  The caller's bank, count and outputs are
 * written only when the whole step succeeded [PKV-ERR-01]. */
kvq_status kvq_cuda_pkv_key_flush_host(uint8_t *codes, float *scale, float *zero,
                                       uint16_t *index, float *resid, uint32_t *flags,
                                       float *bank, uint32_t *npat, uint32_t bank_cap,
                                       const float *window, uint32_t dim,
                                       const kvq_pkv_params *p, const kvq_policy *pol);
kvq_status kvq_cuda_pkv_value_step_host(uint8_t *codes, float *scale, float *zero,
                                        uint16_t *index, float *resid, uint32_t *flags,
                                        uint32_t *count, float *bank, uint32_t *npat,
                                        uint32_t bank_cap, const float *window, uint32_t held,
                                        uint64_t step, uint32_t dim, const kvq_pkv_params *p,
                                        const kvq_policy *pol);

#ifdef __cplusplus
}
#endif
#endif /* KVQ_CUDA_PKV_H */
