/*
 * kvq_cuda_vidkv.h -- host launchers of the VIDKV CUDA kernels (gpu/vidkv/).
 *
 * The exact-level parts (spec/vidkv.md [VIDKV-B-05]) are bit-exact to the fast
 * reference path ref/fast/vidkv.c on status, mask, codes, stored metadata,
 * dequantized values and flags: the split [VIDKV-K-01..02], the 2-bit abnormal
 * channels [VIDKV-K-03], MINMAX and SIGNMEAN [VIDKV-K-08], the values
 * [VIDKV-V-01..06] with semantic token protection [VIDKV-STP-01..03] (the
 * scores, the selection, the 2-bit protected groups).  The FFT path [VIDKV-K-05..07] runs on cuFFT
 * (lengths 2^a 3^b 5^c 7^d, Cooley-Tukey, lemma F of spec/bounds/vidkv.md) or
 * on the naive-DFT kernel (every other length, lemma W) and is a bounded-level
 * output [VIDKV-B-01..03].
 *
 * Pointers named d_* and the arrays of the kvq_vidkv_keys / kvq_vidkv_values
 * records are device pointers; params and policy are host records.  Every
 * launcher is blocking on `stream`; *flags (host, may be NULL) receives the
 * call's events on KVQ_OK and is untouched otherwise.  The checks and their
 * order are the reference's [VIDKV-L-05]; outputs are computed in device
 * scratch and copied out only when the whole call succeeded, so an error
 * writes nothing [API-ERR-01] (KVQ_CUDA_DIRECT in opts: straight into the
 * outputs, unspecified on an error; a benchmark knob).  The dequantizers check
 * their stored input on the device before any element kernel writes: the
 * element kernels run in the same stream after the checks and write nothing
 * when one failed, so a failed dequantization too leaves d_y as it was
 * [VIDKV-DEV-04].  Errors beyond the reference's: KVQ_E_DEVICE (a CUDA or
 * cuFFT call failed), KVQ_E_NOMEM (device scratch).
 */
#ifndef KVQ_CUDA_VIDKV_H
#define KVQ_CUDA_VIDKV_H

#include <stdint.h>

#include <cuda_runtime_api.h>

#include "kvq.h"
#include "kvq_vidkv.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The split mask [VIDKV-K-01..02] [VIDKV-L-06] of keys d_k [H][T][d]. */
kvq_status kvq_cuda_vidkv_split(uint8_t *d_mask, uint32_t *flags, const float *d_k,
                                const kvq_vidkv_params *prm, const kvq_policy *pol,
                                cudaStream_t stream);

/* Keys [VIDKV-K-01..10]: split, abnormal 2-bit groups, normal channels by the
 * mode in force (FFT on cuFFT / the naive DFT, MINMAX, SIGNMEAN). */
kvq_status kvq_cuda_vidkv_quantize_keys(const kvq_vidkv_keys *d_out, uint32_t *flags,
                                        const float *d_k, const kvq_vidkv_params *prm,
                                        const kvq_policy *pol, uint32_t opts,
                                        cudaStream_t stream);

/* Keys with the channel ranges handed in [VIDKV-DEV-07]: d_mn, d_mx [rows][d]
 * (rows = kvq_vidkv_mask_rows: 1 pooled, H per head; device) the least and
 * greatest key of each channel as read [VIDKV-L-04] (under the policy's
 * subnormal rule), e.g. accumulated by the producer as it writes the cache.
 * The split is that of these ranges, and the keys are read once, by the
 * groups, which check them [VIDKV-L-03..04] and check that every key lies
 * within its channel's range and that both ends are attained: when they are
 * not, KVQ_E_PARAM (after KVQ_E_NONFINITE and KVQ_E_RANGE) and nothing
 * written (KVQ_CUDA_DIRECT: outputs unspecified).  On KVQ_OK the outputs and
 * flags are kvq_cuda_vidkv_quantize_keys's, bit for bit. */
kvq_status kvq_cuda_vidkv_quantize_keys_ranged(const kvq_vidkv_keys *d_out, uint32_t *flags,
                                               const float *d_k, const float *d_mn, const float *d_mx,
                                               const kvq_vidkv_params *prm, const kvq_policy *pol,
                                               uint32_t opts, cudaStream_t stream);

/* Dequantize stored keys into d_y [H][T][d] [VIDKV-K-11] [VIDKV-D-01..03]. */
kvq_status kvq_cuda_vidkv_dequantize_keys(float *d_y, uint32_t *flags, const kvq_vidkv_keys *d_in,
                                          const kvq_vidkv_params *prm, const kvq_policy *pol,
                                          cudaStream_t stream);

/* Values [VIDKV-V-01..05], as kvq_vidkv_quantize_values: with STP
 * [VIDKV-STP-01..03] when prm->protect > 0 (stp then required: a host record
 * whose xs is a device pointer; ignored otherwise).  *np (host) receives n_p
 * on KVQ_OK. */
kvq_status kvq_cuda_vidkv_quantize_values(const kvq_vidkv_values *d_out, uint32_t *np,
                                          uint32_t *flags, const float *d_v,
                                          const kvq_vidkv_params *prm, const kvq_vidkv_stp *stp,
                                          const kvq_policy *pol, uint32_t opts,
                                          cudaStream_t stream);

/* Dequantize values (RAW or SCALED, protected tokens by [KIVI-D-01]) into d_y
 * [VIDKV-V-03] [VIDKV-V-06] [VIDKV-D-01..03], as kvq_vidkv_dequantize_values. */
kvq_status kvq_cuda_vidkv_dequantize_values(float *d_y, uint32_t *flags,
                                            const kvq_vidkv_values *d_in, uint32_t np,
                                            const kvq_vidkv_params *prm, const kvq_policy *pol,
                                            cudaStream_t stream);

/* The STP scores of the visual rows (d_score [vis_count]) and the protection
 * mask (d_prot, kvq_vidkv_prot_mask_bytes) [VIDKV-STP-01..03], as
 * kvq_vidkv_stp_select (stp: host record, xs a device pointer). */
kvq_status kvq_cuda_vidkv_stp_select(float *d_score, uint8_t *d_prot, uint32_t *flags,
                                     const kvq_vidkv_params *prm, const kvq_vidkv_stp *stp,
                                     const kvq_policy *pol, cudaStream_t stream);

/* The transform behind the FFT path [VIDKV-K-05]: the 2N interleaved
 * components of every (head, token) of d_k's normal channels under the mask
 * d_mask, into d_y [H][T][2N], the channels read under pol's subnormal rule
 * [VIDKV-L-04] -- the very sequence kvq_cuda_vidkv_quantize_keys runs before
 * its 1-bit groups.  Uses cuFFT when N is 7-smooth, else the naive-DFT kernel;
 * *used_cufft (may be NULL) says which.  For the test: lemma F / W is checked
 * on these. */
kvq_status kvq_cuda_vidkv_dft(float *d_y, int *used_cufft, const float *d_k, const uint8_t *d_mask,
                              const kvq_vidkv_params *prm, const kvq_policy *pol,
                              cudaStream_t stream);

/* 1 iff N >= 2 has no prime factor above 7: cuFFT computes such lengths by
 * Cooley-Tukey passes (radix 2, 3, 5, 7), covered by lemma F; other lengths
 * go to the naive-DFT kernel (lemma W), never to cuFFT's Bluestein path. */
int kvq_cuda_vidkv_fft_length_ok(uint32_t N);

#ifdef __cplusplus
}
#endif
#endif /* KVQ_CUDA_VIDKV_H */
