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
 * out only when the whole call succeeded, the dequantizer checks every group
 * before it writes (unless KVQ_CUDA_DIRECT is given).
 */
#ifndef KVQ_CUDA_H
#define KVQ_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "kvq.h"
#include "kvq_sage_layout.h"
#include "kvq_sage_attn.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Option bits of the launchers that take opts. */
#define KVQ_CUDA_DIRECT     0x1u /* one pass straight into the outputs: faster, but on an
                                  * error status the outputs hold unspecified data (the status
                                  * and, on KVQ_OK, the outputs and flags are the same).  The
                                  * KIVI dequantizer: no pre-pass, the writing kernel checks
                                  * its groups (spec/kivi.md [KIVI-DEV-10]).  Outside the
                                  * conformance contract; never used by the subject. */
#define KVQ_CUDA_NO_DISCARD 0x2u /* keep the scratch lines in L2 after the copy-out
                                  * (benchmark knob; results are identical) */
#define KVQ_CUDA_WS_CLEAN   0x4u /* (the KIVI launchers, kvq_cuda_sage_quantize_qk_async)
                                  * the workspace's state is clean: as the previous call of the
                                  * same family on it left it (its host call returned KVQ_OK),
                                  * or for SAGE zeroed by the caller; the launcher then skips its
                                  * clearing (spec/kivi.md [KIVI-DEV-09], spec/sage.md
                                  * [SAGE-DEV-20]).  A blocking call that allocates its workspace
                                  * ignores it. */

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

/* Dequantize d_codes/d_scale/d_zero into d_y.  Blocking, like the above; opts:
 * KVQ_CUDA_DIRECT, KVQ_CUDA_WS_CLEAN. */
kvq_status kvq_cuda_kivi_dequantize(float *d_y, uint32_t *flags, const uint8_t *d_codes,
                                    const float *d_scale, const float *d_zero,
                                    const kvq_kivi_shape *shape, const kvq_policy *pol,
                                    void *d_workspace, size_t workspace_bytes, uint32_t opts,
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
                                          size_t workspace_bytes, uint32_t opts,
                                          cudaStream_t stream);

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

/* ---- CERT decode step (gpu/cert/decode_*.cu, spec/cert.md "The device kernel") ----
 * One certified decode step [CERT-DEV-01..10] of the variant prm->variant
 * names [CERT-VAR-01]: Phase 1 from the INT8 keys, selection and ladder, and
 * Phase 2 with INT4 values (promoted blocks and the dense rung read the
 * binary16 originals of tier 2) over the selected blocks (sparse) or over
 * every block, the selected ones with their binary16 keys (paper, the
 * default); the certificate.  The declaration is U_exp = 2, Nr = 1, D = 17 +
 * entries (sparse: the attended blocks, residual included) [CERT-DEV-05], or
 * D = 90 + entries (paper: the head's list, residual included, and one entry
 * a segment of 32 full blocks) [CERT-DEV-10].  Rung 4 is the host reference
 * kvq_cert_dense [CERT-DEV-06]: the batched form reports a head that needs it
 * with status KVQ_CUDA_CERT_RUNG4; kvq_cuda_cert_step_host runs it. */
#define KVQ_CUDA_CERT_RUNG4 0x100u

/* One head, host in/out, the outputs of kvq_cert_step (include/kvq_cert.h):
 * k, v [n][d] binary16 values; quantized on the device with
 * kvq_cuda_cert_quantize_keys/_values, annotated with kvq_cuda_cert_annotate.
 * sel, prom: nb flags; at rung 3 sel is all 1 and prom all 0.  Errors: as
 * kvq_cert_step (KVQ_E_PARAM, KVQ_E_SHAPE, KVQ_E_NONFINITE), KVQ_E_NODEVICE,
 * KVQ_E_NOMEM, KVQ_E_DEVICE (a CUDA failure), and KVQ_E_SHAPE for more than
 * kvq_cuda_cert_max_blocks() blocks.  Links ref/fast (kvq_cert_dense). */
kvq_status kvq_cuda_cert_step_host(float *out, uint8_t *sel, uint8_t *prom, kvq_cert_record *rec,
                                   kvq_cert_decl *decl, float *delta1, const float *q, float scale,
                                   const float *k, const float *v, const kvq_cert_params *prm,
                                   const kvq_cert_shape *shape, const kvq_policy *pol);

/* eta, nu [CERT-ANN-01..02] on the device, bit-exact to kvq_cert_annotate
 * (the exact integer method of bounds/cert.md §2); errors as kvq_cert_annotate,
 * plus KVQ_E_NODEVICE, KVQ_E_DEVICE. */
kvq_status kvq_cuda_cert_annotate_host(float *eta, float *nu, const float *v, const uint8_t *codes,
                                       const float *scale, const float *zero,
                                       const kvq_cert_shape *shape);

/* The same on device pointers, enqueued on `stream` (no input checks beyond
 * pointers and shape: the inputs must already satisfy kvq_cert_annotate's). */
kvq_status kvq_cuda_cert_annotate(float *d_eta, float *d_nu, const float *d_v,
                                  const uint8_t *d_codes, const float *d_scale,
                                  const float *d_zero, const kvq_cert_shape *shape,
                                  cudaStream_t stream);

/* Batched form: kv_heads KV heads of one shape, `group` query heads each (GQA;
 * query head qh reads KV head qh / group), one certificate per query head.
 * Arrays of KV head h start at h times the per-head size of kvq_layout.h. */
typedef struct kvq_cuda_cert_heads {
    uint32_t kv_heads, group;
    kvq_cert_shape shape;
    float scale;
    const float *d_q;                    /* [kv_heads * group][d], binary16 values */
    const int8_t *d_kcodes;              /* tier 1 [CERT-L-04] */
    const float *d_sigma, *d_z;
    const uint8_t *d_vcodes;
    const float *d_vscale, *d_vzero;
    const float *d_eta, *d_nu;           /* nb per head */
    const uint16_t *d_kres, *d_vres;     /* residual block, binary16, [n mod 16][d] per head */
    const uint16_t *t2_k, *t2_v;         /* tier 2: binary16 [n][d] per head, device-
                                          * accessible (mapped pinned host memory) */
} kvq_cuda_cert_heads;

typedef struct kvq_cuda_cert_ws kvq_cuda_cert_ws;

/* Blocks per head the batched kernels accept (the select kernel's limit). */
size_t kvq_cuda_cert_max_blocks(void);

/* Workspace for up to qheads query heads of this shape; KVQ_E_NOMEM. */
kvq_status kvq_cuda_cert_ws_create(kvq_cuda_cert_ws **ws, uint32_t qheads,
                                   const kvq_cert_shape *shape);
void kvq_cuda_cert_ws_destroy(kvq_cuda_cert_ws *ws);

/* The select kernel's fast selector gathers the blocks of its boundary bucket
 * when there are at most `cap` of them (default and maximum 1024), else the
 * radix selector decides; cap = 0 always takes the radix selector.  Both give
 * the same selection [CERT-DEV-03]; KVQ_E_PARAM when cap > 1024. */
kvq_status kvq_cuda_cert_ws_set_gather(kvq_cuda_cert_ws *ws, uint32_t cap);

/* The paper variant's Phase 2 [CERT-DEV-10]: on = 1 (default), the segment
 * entries are computed with all their tokens while the select kernel runs,
 * and the segments that hold a selected block again after it; on = 0, Phase
 * 2 waits for the select kernel.  The step's output does not depend on it;
 * KVQ_E_PARAM unless on is 0 or 1. */
kvq_status kvq_cuda_cert_ws_set_overlap(kvq_cuda_cert_ws *ws, int on);

/* Promoted blocks' binary16 values are copied from tier 2 once per KV head and
 * step into a device pool of `group * cap` blocks (cap: slots a query head,
 * default and maximum 32); the rest, and every block when cap = 0, Phase 2
 * reads from tier 2 itself.  The step's output does not depend on cap
 * [CERT-DEV-01]; KVQ_E_PARAM when cap > 32. */
kvq_status kvq_cuda_cert_ws_set_stage(kvq_cuda_cert_ws *ws, uint32_t cap);

/* The select kernel claims up to `blocks` promoted blocks for staging as soon
 * as a rung's promotion is settled and fetches their values into shared memory
 * while its checks run (at most what 64 KiB holds: 2048 / d blocks; default 4,
 * maximum 1024, i.e. as many as fit); the rest are claimed with the list and
 * copied at its end; 0: no early claims.  The output does not depend on it
 * [CERT-DEV-01]; KVQ_E_PARAM when blocks > 1024. */
kvq_status kvq_cuda_cert_ws_set_prefetch(kvq_cuda_cert_ws *ws, uint32_t blocks);

/* Diagnostics: how many of the workspace's per-step entries (Phase-1 maxima
 * and block counters, Phase-2 tickets, the paper variant's segment counter)
 * are not clear; every completed step leaves 0, so a step depends on no state
 * of the one before (a step may be captured in a CUDA graph) [CERT-DEV-01]. */
kvq_status kvq_cuda_cert_ws_residue(const kvq_cuda_cert_ws *ws, uint64_t *nonzero);

/* Diagnostics: the E_arith terms of query head qh's last step (amax, smax,
 * smin, eps_s, R_s, Lambda, g, g/(1-g), Vh, nS, entries, E_arith). */
kvq_status kvq_cuda_cert_debug(float *out12, const kvq_cuda_cert_ws *ws, uint32_t qh);

/* Diagnostics: Phase 1 of query head qh's last step, its nb block log-masses
 * L~_b and their radii err_b (|L~_b - L_b| <= err_b, [CERT-DEV-02]). */
kvq_status kvq_cuda_cert_phase1(float *lt, float *radius, const kvq_cuda_cert_ws *ws, uint32_t qh,
                                uint32_t nb);

/* Diagnostics: the paper variant's last step [CERT-DEV-10], for KV heads 0 ..
 * kv_heads - 1 of a shape of nb blocks: listed[kv] the full blocks that some
 * query head of the group selects (their keys cross the host link once),
 * orig[kv] those of them whose original values some head reads (promoted, or
 * rung 3).  KVQ_E_PARAM for bad arguments, KVQ_E_DEVICE. */
kvq_status kvq_cuda_cert_listed(uint32_t *listed, uint32_t *orig, const kvq_cuda_cert_ws *ws,
                                uint32_t kv_heads, uint32_t nb);

/* Enqueue one step of every query head on `stream`, of the variant
 * prm->variant (the paper variant takes group <= 32).  d_out [qh][d]; d_rec,
 * d_decl, d_delta1, d_status [qh] and d_sel, d_prom [qh][nb] may be NULL;
 * d_status: KVQ_OK, or KVQ_CUDA_CERT_RUNG4 when the head needs rung 4 (its
 * output is then the device's dense pass, not certified).
 * certify = 0 runs the same kernels without delta1, Delta', the checks and the
 * bounds (rung 0 with threshold promotion; the record's bounds are 0).
 * A step relies on the zeros the previous step left (Phase 1's block counters,
 * the maxima, the Phase-2 tickets): after a step that returned an error, or
 * whose kernels did not all run to the end, destroy the workspace and create
 * a new one (kvq_cuda_cert_ws_residue counts what was left set). */
kvq_status kvq_cuda_cert_step_async(float *d_out, kvq_cert_record *d_rec, kvq_cert_decl *d_decl,
                                    float *d_delta1, uint32_t *d_status, uint8_t *d_sel,
                                    uint8_t *d_prom, const kvq_cuda_cert_heads *heads,
                                    const kvq_cert_params *prm, int certify,
                                    kvq_cuda_cert_ws *ws, cudaStream_t stream);

/* ---- SAGE quantizers (gpu/sage/sage.cu, spec/sage.md) --------------------
 * Bit-exact to kvq_sage_smooth / _quantize_qk / _quantize_v / _quantize_p
 * (include/kvq_sage.h) on status, outputs and flags.  d_* are device
 * pointers; blocking on `stream`; *flags (host, may be NULL) receives the
 * call's events on KVQ_OK.  The reference's argument checks run on the host in
 * its order (KVQ_E_PARAM, KVQ_E_SHAPE); NaN/Inf (KVQ_E_NONFINITE) and the
 * admitted ranges (KVQ_E_PARAM: |x| <= 2^48 for smoothing, 0 <= p <= 1) are
 * found on the device before any output is written.  KVQ_E_NOMEM when device
 * scratch could not be allocated, KVQ_E_DEVICE when a CUDA call failed.
 * Layouts and sizes: include/kvq_sage_layout.h. */
kvq_status kvq_cuda_sage_smooth(float *d_xs, float *d_mean, const float *d_x,
                                const kvq_sage_shape *shape, uint32_t seg, cudaStream_t stream);
/* Q/K [SAGE-Q-01..07]; opts: KVQ_CUDA_DIRECT skips the separate input check
 * pass (one read of x; the status stays the reference's, but on an error
 * status the outputs hold unspecified data). */
kvq_status kvq_cuda_sage_quantize_qk(uint8_t *d_codes, float *d_scale, uint32_t *flags,
                                     const float *d_x, const kvq_sage_shape *shape,
                                     const kvq_sage_qk *qk, const kvq_policy *pol, uint32_t opts,
                                     cudaStream_t stream);
/* V per channel, FP8 [SAGE-V-01..04]. */
kvq_status kvq_cuda_sage_quantize_v(uint8_t *d_codes, float *d_scale, uint32_t *flags,
                                    const float *d_v, const kvq_sage_shape *shape, uint32_t fmt,
                                    const kvq_policy *pol, cudaStream_t stream);
/* Stream-ordered forms of the Q/K and V quantizers, as the KIVI ones above:
 * argument errors (KVQ_E_PARAM, KVQ_E_SHAPE) come back at once; otherwise the
 * work is enqueued, KVQ_OK is returned, and the call's status and flags land
 * in *d_result (device memory) in stream order.  The workspace is required:
 * at least kvq_cuda_sage_workspace() bytes, 256-byte aligned; one call at a
 * time per workspace.  Each call clears its state at its start and leaves it
 * clear at its end (the status kernel, a programmatic dependent of the last
 * kernel, clears it after reading it), so the Q/K form may skip the clearing
 * with KVQ_CUDA_WS_CLEAN [SAGE-DEV-20]. */
size_t kvq_cuda_sage_workspace(void);
kvq_status kvq_cuda_sage_quantize_qk_async(uint8_t *d_codes, float *d_scale, kvq_cuda_result *d_result,
                                           const float *d_x, const kvq_sage_shape *shape,
                                           const kvq_sage_qk *qk, const kvq_policy *pol,
                                           void *d_workspace, size_t workspace_bytes, uint32_t opts,
                                           cudaStream_t stream);
kvq_status kvq_cuda_sage_quantize_v_async(uint8_t *d_codes, float *d_scale, kvq_cuda_result *d_result,
                                          const float *d_v, const kvq_sage_shape *shape, uint32_t fmt,
                                          const kvq_policy *pol, void *d_workspace,
                                          size_t workspace_bytes, cudaStream_t stream);
/* The reading of stored Q/K codes [SAGE-Q-08]: y = RN32(k s), bit-exact to
 * kvq_sage_dequantize_qk on status and values.  The scales are judged on the
 * device in slot order (the first bad one decides: NaN/Inf KVQ_E_NONFINITE,
 * negative or subnormal KVQ_E_PARAM), then every product for overflow
 * (KVQ_E_RANGE), before any value is written.  The _async form takes the
 * workspace of the quantizers (kvq_cuda_sage_workspace()). */
kvq_status kvq_cuda_sage_dequantize_qk(float *d_y, const uint8_t *d_codes, const float *d_scale,
                                       const kvq_sage_shape *shape, const kvq_sage_qk *qk,
                                       cudaStream_t stream);
kvq_status kvq_cuda_sage_dequantize_qk_async(float *d_y, kvq_cuda_result *d_result, const uint8_t *d_codes,
                                             const float *d_scale, const kvq_sage_shape *shape,
                                             const kvq_sage_qk *qk, void *d_workspace,
                                             size_t workspace_bytes, cudaStream_t stream);
/* P~, FP8, and its row sums [SAGE-P-01..02]. */
kvq_status kvq_cuda_sage_quantize_p(uint8_t *d_codes, float *d_rowsum, uint32_t *flags,
                                    const float *d_p, uint32_t rows, uint32_t cols, uint32_t fmt,
                                    const kvq_policy *pol, cudaStream_t stream);
/* dS = q_m K_s^T times tau [SAGE-DS-01..02] (gpu/sage/sage_ds.cu): bit-exact to
 * kvq_sage_delta_s.  d_qm: rows * d, d_ks: N * d (kshape), d_ds: rows * N.
 * NaN/Inf of qm and ks (KVQ_E_NONFINITE) and |qm|, |ks| > 2^51 or tau outside
 * [2^-126, 2^16] (KVQ_E_PARAM) are decided before any output is written; no
 * flags word (the reference's call has none). */
kvq_status kvq_cuda_sage_delta_s(float *d_ds, const float *d_qm, const float *d_ks, uint32_t rows,
                                 const kvq_sage_shape *kshape, float tau, cudaStream_t stream);
/* One channel of P~V [SAGE-ACC-07] (gpu/sage/sage_pv.cu): host pointers, the
 * reference's signature (kvq_sage_pv), arguments that kvq_sage_pv_check
 * accepts; every product through the FP8 tensor-core instruction of the model
 * (wgmma m64n8k32 or mma.sync m16n8k32), the FP32 buffer by __fadd_rn; d
 * written only on KVQ_OK. */
kvq_status kvq_cuda_sage_pv_host(float *d, const uint8_t *a, const uint8_t *b, const float *c, uint32_t rows,
                                 uint32_t n, uint32_t fmt, uint32_t model, uint32_t buffer);

/* ---- SAGE attention (gpu/sage/sage_attn.cu, spec/sage.md [SAGE-ATT-01..09]) ----
 * The core: `heads` heads, each given as the pipeline's quantizer outputs
 * (include/kvq_sage_attn.h): d_qc, d_qs the codes and scales of the smoothed Q
 * (kvq_sage_attn_qk(a, KVQ_SAGE_ROLE_Q)), d_kc, d_ks those of the smoothed K,
 * d_ds the dS rows (ceil(nq / 128) x nk, scaled by kvq_sage_attn_tau2), d_vc,
 * d_vs V's E4M3 codes and channel scales.  Heads follow each other at the
 * per-head sizes of include/kvq_sage_layout.h.  d_o: heads x nq x dim binary32.
 * Stream-ordered; KVQ_E_PARAM for invalid parameters (before any launch;
 * d_kc and d_vc must be 16-byte aligned, the float arrays 4-byte aligned),
 * KVQ_E_DEVICE for a failed launch or a device without sm_90a support. */
kvq_status kvq_cuda_sage_attn_core(float *d_o, const kvq_sage_attn *a, uint32_t heads,
                                   const uint8_t *d_qc, const float *d_qs, const uint8_t *d_kc,
                                   const float *d_ks, const float *d_ds, const uint8_t *d_vc,
                                   const float *d_vs, cudaStream_t stream);
/* The core is the FlashAttention-3-structured one (gpu/sage/sage_fa3.cu,
 * [SAGE-DEV-12]) when it was built (kvq_cuda_sage_attn_fa3_built() == 1) and
 * qk_bits is 8, unless the environment's KVQ_SAGE_CORE is "loop"; else the
 * warpgroup core of gpu/sage/sage_attn.cu [SAGE-ATT-10].  The pinned sequence
 * is the same: the two give the same bits.  _loop and _fa3 pick one core (_fa3:
 * KVQ_E_PARAM for qk_bits 4, KVQ_E_DEVICE when it was not built). */
kvq_status kvq_cuda_sage_attn_core_loop(float *d_o, const kvq_sage_attn *a, uint32_t heads,
                                        const uint8_t *d_qc, const float *d_qs, const uint8_t *d_kc,
                                        const float *d_ks, const float *d_ds, const uint8_t *d_vc,
                                        const float *d_vs, cudaStream_t stream);
kvq_status kvq_cuda_sage_attn_core_fa3(float *d_o, const kvq_sage_attn *a, uint32_t heads,
                                       const uint8_t *d_qc, const float *d_qs, const uint8_t *d_kc,
                                       const float *d_ks, const float *d_ds, const uint8_t *d_vc,
                                       const float *d_vs, cudaStream_t stream);
int kvq_cuda_sage_attn_fa3_built(void);
/* V~ (spec/sage.md [SAGE-DEV-15]): V's E4M3 codes of a head in the layout of
 * the FA3 core's P~V B operand, a block of 8192 bytes for each 64 keys
 * (ceil(nk / 64) blocks a head, heads one after the other): byte
 *   (h ceil(nk / 64) + floor(j / 64)) 8192 + t 4096 + ((c / 8) 2 + p / 16) 128 + (c % 8) 16 + p % 16
 * holds key j (t = floor((j % 64) / 32), k = j % 32, r = k % 16,
 * p = 16 floor(k / 16) + 4 floor((r % 8) / 2) + 2 floor(r / 8) + k % 2), channel c
 * of head h, and 0x00 for j >= nk.  The pipeline's V quantizer writes it (unless
 * the environment's KVQ_SAGE_VT is "0"); _core_fa3_vt is the FA3 core given it
 * beside the plain codes d_vc (16-byte aligned; KVQ_E_PARAM for d_vt NULL): the
 * ping-pong form at levels 3, 4 and 5 (unset: 5 given V~, 3 not) loads V~ as it is, the other
 * forms (KVQ_SAGE_FA3_SERIAL, KVQ_SAGE_FA3_LEVEL < 3) transpose d_vc themselves.  The same bits either way. */
#define KVQ_CUDA_SAGE_VT_BLOCK 8192u
kvq_status kvq_cuda_sage_attn_core_fa3_vt(float *d_o, const kvq_sage_attn *a, uint32_t heads,
                                          const uint8_t *d_qc, const float *d_qs, const uint8_t *d_kc,
                                          const float *d_ks, const float *d_ds, const uint8_t *d_vc,
                                          const uint8_t *d_vt, const float *d_vs, cudaStream_t stream);
/* The whole pipeline from binary32 Q, K, V ([heads][n][dim] each): smoothing,
 * dS, the three quantizers and the core, every stage one launch a kernel for
 * all heads.  The workspace holds the intermediates: at least
 * kvq_cuda_sage_attn_workspace(a, heads) bytes, 256-byte aligned.
 * Stream-ordered and CUDA-graph capturable: no host wait, no allocation, no
 * host thread, nothing but `stream` [SAGE-DEV-09]; the status of the first
 * failing stage lands in *d_result (KVQ_E_NONFINITE for a NaN/Inf input). */
size_t kvq_cuda_sage_attn_workspace(const kvq_sage_attn *a, uint32_t heads);
kvq_status kvq_cuda_sage_attn(float *d_o, kvq_cuda_result *d_result, const float *d_q, const float *d_k,
                              const float *d_v, const kvq_sage_attn *a, uint32_t heads,
                              void *d_workspace, size_t workspace_bytes, cudaStream_t stream);
/* Diagnostics: kvq_cuda_sage_attn once with events between its stages, then a
 * wait; ms[0..5] receive the times (milliseconds) of smoothing K, smoothing Q,
 * dS, the Q and K quantizers, the V quantizer and the core (the gate kernels
 * and the result word count with the stage after them).  Blocking; not for
 * capture. */
kvq_status kvq_cuda_sage_attn_stages(float *ms, float *d_o, kvq_cuda_result *d_result, const float *d_q,
                                     const float *d_k, const float *d_v, const kvq_sage_attn *a,
                                     uint32_t heads, void *d_workspace, size_t workspace_bytes,
                                     cudaStream_t stream);
/* Grouped KV heads (spec/sage.md [SAGE-DEV-17], [SAGE-MHA-01]): Q and O have
 * `heads` heads, K and V `kv_heads` ([kv_heads][nk][dim]); query head h reads
 * KV head h / (heads / kv_heads).  K's smoothing and K's and V's quantizers
 * run once a KV head, dS and the core once a query head.  Every output, the
 * result word included, is the same bits as kvq_cuda_sage_attn on K and V
 * repeated to the query heads; kvq_cuda_sage_attn is the kv_heads == heads
 * case.  kv_heads 0, above heads or not dividing it: KVQ_E_PARAM, nothing
 * launched (the workspace functions return 0).  The workspace's K and V
 * segments hold kv_heads heads (kvq_cuda_sage_attn_gqa_ws_layout). */
size_t kvq_cuda_sage_attn_gqa_workspace(const kvq_sage_attn *a, uint32_t heads, uint32_t kv_heads);
kvq_status kvq_cuda_sage_attn_gqa(float *d_o, kvq_cuda_result *d_result, const float *d_q, const float *d_k,
                                  const float *d_v, const kvq_sage_attn *a, uint32_t heads, uint32_t kv_heads,
                                  void *d_workspace, size_t workspace_bytes, cudaStream_t stream);
kvq_status kvq_cuda_sage_attn_gqa_stages(float *ms, float *d_o, kvq_cuda_result *d_result, const float *d_q,
                                         const float *d_k, const float *d_v, const kvq_sage_attn *a,
                                         uint32_t heads, uint32_t kv_heads, void *d_workspace,
                                         size_t workspace_bytes, cudaStream_t stream);

/* Where the pipeline's intermediates lie in its workspace: byte offsets, each
 * a multiple of 256, of the arrays of all heads (heads follow each other at the
 * per-head sizes of include/kvq_sage_layout.h): ks/km the smoothed K and its
 * means (1 row a head), qs/qm the smoothed Q and its means (ceil(nq / 128)
 * rows a head), ds the dS rows, qc/qsc, kc/ksc, vc/vsc the quantizers' codes
 * and scales, vt V~ ([SAGE-DEV-15]; written when the core is the FA3 one and
 * KVQ_SAGE_VT is not "0"); scratch (the stages' states, V's maxima) and results (the
 * core's gate) are the pipeline's own; total is
 * kvq_cuda_sage_attn_workspace().  KVQ_E_PARAM for invalid parameters. */
typedef struct kvq_cuda_sage_attn_ws {
    size_t ks, km, qs, qm, ds, qc, qsc, kc, ksc, vc, vsc, vt, scratch, results, total;
} kvq_cuda_sage_attn_ws;
kvq_status kvq_cuda_sage_attn_ws_layout(kvq_cuda_sage_attn_ws *w, const kvq_sage_attn *a,
                                        uint32_t heads);
/* The grouped pipeline's workspace [SAGE-DEV-17]: ks, km, kc, ksc, vc, vsc and
 * vt hold kv_heads heads, the others `heads`; kv_heads == heads is the layout above. */
kvq_status kvq_cuda_sage_attn_gqa_ws_layout(kvq_cuda_sage_attn_ws *w, const kvq_sage_attn *a,
                                            uint32_t heads, uint32_t kv_heads);

/* Diagnostics: the core with a trace of one CTA (head `head`, query rows
 * 64 qblock .. 64 qblock + 63): for each key block kb it processed, the 64 x 64
 * int32 QK dots (d_dots[kb][row][key]; rows past nq and keys past nk read 0
 * codes), and for each of its two P~V wgmma instructions u = 2 kb + h (keys
 * 32 h .. 32 h + 31 of the block) the 64 x 128 accumulator right before it
 * (after the rescale and flush) and right after it (d_acc_in[u][row][channel],
 * d_acc_out[u][row][channel]) and its 64 x 32 P~ codes (d_p[u][row][key]);
 * *d_nblocks receives the number of key blocks.  The arrays hold `blocks` key
 * blocks (at least ceil(nvisible(last row of the CTA) / 64)).  The output is
 * the core's, bit for bit. */
typedef struct kvq_cuda_sage_attn_trace {
    uint32_t head, qblock, blocks;
    int32_t *d_dots;
    float *d_acc_in, *d_acc_out;
    uint8_t *d_p;
    uint32_t *d_nblocks;
} kvq_cuda_sage_attn_trace;
kvq_status kvq_cuda_sage_attn_core_trace(float *d_o, const kvq_sage_attn *a, uint32_t heads,
                                         const uint8_t *d_qc, const float *d_qs, const uint8_t *d_kc,
                                         const float *d_ks, const float *d_ds, const uint8_t *d_vc,
                                         const float *d_vs, const kvq_cuda_sage_attn_trace *tr,
                                         cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif /* KVQ_CUDA_H */
