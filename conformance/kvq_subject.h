/*
 * kvq_subject.h -- the C ABI of a conformance subject (spec/verify.md,
 * [API-SUBJ-01..05]).
 *
 * Version 3 (current).  A subject is a shared object exporting
 *
 *     const kvq_subject_v3 *kvq_subject_abi3(void);
 *
 * The record names the subject, may give init and fini, and gives one lookup:
 * the entry point of a name and signature version, or NULL when the subject
 * lacks it.  No entry is mandatory: the cases of an operation whose entries a
 * subject lacks are SKIPPED, never passed.  The entry names and their
 * signatures are below (kvq_<entry>_v<sigver>_fn); `kvq ops` lists which
 * operation calls which.
 *
 * `kvq run` / `kvq verify --subject lib.so` loads the subject in a child
 * process, so a crash or a hang is a verdict, not the end of the run.  The
 * entries have the signatures of the fast reference path (include/kvq.h,
 * include/kvq_cert.h, include/kvq_sage.h, include/kvq_pkv.h, include/kvq_vidkv.h) and return kvq_status values.
 *
 * Versions 1 and 2 (kvq_subject_entry(), below) still load: the runner looks
 * their members up by the same entry names.  A version-1 subject has the KIVI
 * entries only; in a version-2 record a NULL CERT entry is a missing one.
 */
#ifndef KVQ_SUBJECT_H
#define KVQ_SUBJECT_H

#include <stdint.h>

#include <stddef.h>

#include "kvq.h"
#include "kvq_cert.h"
#include "kvq_sage.h"
#include "kvq_pkv.h"
#include "kvq_vidkv.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KVQ_SUBJECT_ABI_V1 1u
#define KVQ_SUBJECT_ABI_V2 2u
#define KVQ_SUBJECT_ABI_V3 3u
#define KVQ_SUBJECT_ABI3_ENTRY "kvq_subject_abi3"

/* Any entry point, as the lookup returns it; the caller converts it back to
 * the entry's own type (a conversion between function pointer types). */
typedef void (*kvq_entry_fn)(void);

/* Entry signatures, version 1 of each name. */
/* "kivi_quantize" [KIVI-Q-01..06]: as kvq_kivi_quantize */
typedef int (*kvq_kivi_quantize_v1_fn)(uint8_t *codes, float *scale, float *zero, uint32_t *flags,
                                       const float *x, const kvq_kivi_shape *shape,
                                       const kvq_policy *pol);
/* "kivi_dequantize" [KIVI-D-01..03]: as kvq_kivi_dequantize */
typedef int (*kvq_kivi_dequantize_v1_fn)(float *y, uint32_t *flags, const uint8_t *codes,
                                         const float *scale, const float *zero,
                                         const kvq_kivi_shape *shape, const kvq_policy *pol);
/* "cert_quantize_keys" [CERT-K8-01..05]: as kvq_cert_quantize_keys */
typedef int (*kvq_cert_quantize_keys_v1_fn)(int8_t *codes, float *sigma, float *z,
                                            uint32_t *flags, const float *k,
                                            const kvq_cert_shape *shape, const kvq_policy *pol);
/* "cert_quantize_values" [CERT-V4-01]: as kvq_cert_quantize_values */
typedef int (*kvq_cert_quantize_values_v1_fn)(uint8_t *codes, float *scale, float *zero,
                                              uint32_t *flags, const float *v,
                                              const kvq_cert_shape *shape,
                                              const kvq_policy *pol);
/* "cert_annotate" [CERT-ANN-01..02], from the subject's own codes and
 * metadata: as kvq_cert_annotate */
typedef int (*kvq_cert_annotate_v1_fn)(float *eta, float *nu, const float *v,
                                       const uint8_t *codes, const float *scale,
                                       const float *zero, const kvq_cert_shape *shape);
/* "cert_step": one decode step from the binary16 K, V; the subject quantizes
 * with its own quantizers and runs its own step.  out: d; sel, prom: nb flags
 * (the residual block selected, never promoted); rec [CERT-REC-01]; decl
 * [CERT-AR-01]; delta1: the Phase-1 radius [CERT-CHK-01]. */
typedef int (*kvq_cert_step_v1_fn)(float *out, uint8_t *sel, uint8_t *prom, kvq_cert_record *rec,
                                   kvq_cert_decl *decl, float *delta1, const float *q,
                                   float scale, const float *k, const float *v,
                                   const kvq_cert_params *prm, const kvq_cert_shape *shape,
                                   const kvq_policy *pol);
/* "cert_step" version 2: the same signature; the step runs the variant
 * prm->variant names [CERT-VAR-01] (a version-1 entry predates variants and
 * runs sparse steps: the runner gives it the sparse cases only). */
typedef kvq_cert_step_v1_fn kvq_cert_step_v2_fn;

/* "sage_smooth" [SAGE-SM-01..06]: as kvq_sage_smooth */
typedef int (*kvq_sage_smooth_v1_fn)(float *xs, float *mean, const float *x,
                                     const kvq_sage_shape *shape, uint32_t seg);
/* "sage_quantize_qk" [SAGE-Q-01..07] [SAGE-MAP-01..06]: as kvq_sage_quantize_qk */
typedef int (*kvq_sage_quantize_qk_v1_fn)(uint8_t *codes, float *scale, uint32_t *flags,
                                          const float *x, const kvq_sage_shape *shape,
                                          const kvq_sage_qk *qk, const kvq_policy *pol);
/* "sage_dequantize_qk" [SAGE-Q-08]: as kvq_sage_dequantize_qk */
typedef int (*kvq_sage_dequantize_qk_v1_fn)(float *y, const uint8_t *codes, const float *scale,
                                            const kvq_sage_shape *shape, const kvq_sage_qk *qk);
/* "sage_quantize_p" [SAGE-P-01..04]: as kvq_sage_quantize_p */
typedef int (*kvq_sage_quantize_p_v1_fn)(uint8_t *codes, float *rowsum, uint32_t *flags,
                                         const float *p, uint32_t rows, uint32_t cols,
                                         uint32_t fmt, const kvq_policy *pol);
/* "sage_quantize_v" [SAGE-V-01..04]: as kvq_sage_quantize_v */
typedef int (*kvq_sage_quantize_v_v1_fn)(uint8_t *codes, float *scale, uint32_t *flags,
                                         const float *v, const kvq_sage_shape *shape,
                                         uint32_t fmt, const kvq_policy *pol);
/* "sage_delta_s" [SAGE-DS-01..02]: as kvq_sage_delta_s */
typedef int (*kvq_sage_delta_s_v1_fn)(float *ds, const float *qm, const float *ks, uint32_t rows,
                                      const kvq_sage_shape *kshape, float tau);
/* "sage_pv" [SAGE-ACC-07]: as kvq_sage_pv (one channel of P~V through the
 * accumulator and the FP32 buffer) */
typedef int (*kvq_sage_pv_v1_fn)(float *d, const uint8_t *a, const uint8_t *b, const float *c, uint32_t rows,
                                 uint32_t n, uint32_t fmt, uint32_t model, uint32_t buffer);
/* "sage_attention" [SAGE-ATT-01..06]: as kvq_sage_attention (one head of the
 * SageAttention2 pipeline, binary32 in and out) */
typedef int (*kvq_sage_attention_v1_fn)(float *o, const float *q, const float *k, const float *v,
                                        const kvq_sage_attn *a, const kvq_policy *pol);
/* "sage_attention_mha" [SAGE-MHA-01..04]: as kvq_sage_attention_mha (hq query
 * heads on hkv KV heads, inputs values of in_fmt, binary32 in and out) */
typedef int (*kvq_sage_attention_mha_v1_fn)(float *o, const float *q, const float *k, const float *v,
                                            const kvq_sage_attn *a, uint32_t hq, uint32_t hkv,
                                            uint32_t in_fmt, const kvq_policy *pol);
/* "pkv_kmeans" [PKV-KM-01..07]: as kvq_pkv_kmeans (the pattern set, every
 * token's cluster, the iterations run, whether the stopping rule ended it) */
typedef int (*kvq_pkv_kmeans_v1_fn)(float *patterns, uint32_t *cluster, uint32_t *iters,
                                    uint32_t *converged, const float *x, uint32_t tokens,
                                    uint32_t dim, const kvq_pkv_params *p);
/* "pkv_quantize" [PKV-Q-01..04] [PKV-A-01..03] [PKV-V-01..03]: as kvq_pkv_quantize */
typedef int (*kvq_pkv_quantize_v1_fn)(uint8_t *codes, float *scale, float *zero, uint16_t *index,
                                      float *resid, uint32_t *flags, const float *x,
                                      uint32_t kind, uint32_t tokens, uint32_t dim,
                                      const float *bank, uint32_t npat, const kvq_pkv_params *p,
                                      const kvq_policy *pol);
/* "pkv_dequantize" [PKV-D-01..02]: as kvq_pkv_dequantize */
typedef int (*kvq_pkv_dequantize_v1_fn)(float *y, uint32_t *flags, const uint8_t *codes,
                                        const float *scale, const float *zero,
                                        const uint16_t *index, uint32_t kind, uint32_t tokens,
                                        uint32_t dim, const float *bank, uint32_t npat,
                                        const kvq_pkv_params *p, const kvq_policy *pol);
/* "pkv_key_flush" [PKV-U-01..04]: as kvq_pkv_key_flush */
typedef int (*kvq_pkv_key_flush_v1_fn)(uint8_t *codes, float *scale, float *zero, uint16_t *index,
                                       float *resid, uint32_t *flags, float *bank, uint32_t *npat,
                                       uint32_t bank_cap, const float *window, uint32_t dim,
                                       const kvq_pkv_params *p, const kvq_policy *pol);
/* "pkv_value_step" [PKV-U-01] [PKV-U-04..05]: as kvq_pkv_value_step */
typedef int (*kvq_pkv_value_step_v1_fn)(uint8_t *codes, float *scale, float *zero,
                                        uint16_t *index, float *resid, uint32_t *flags,
                                        uint32_t *count, float *bank, uint32_t *npat,
                                        uint32_t bank_cap, const float *window, uint32_t held,
                                        uint64_t step, uint32_t dim, const kvq_pkv_params *p,
                                        const kvq_policy *pol);

/* "vidkv_quantize_keys" [VIDKV-K-01..10]: as kvq_vidkv_quantize_keys */
typedef int (*kvq_vidkv_quantize_keys_v1_fn)(const kvq_vidkv_keys *out, uint32_t *flags, const float *k,
                                             const kvq_vidkv_params *prm, const kvq_policy *pol);
/* "vidkv_dequantize_keys" [VIDKV-K-11] [VIDKV-D-01..03]: as kvq_vidkv_dequantize_keys */
typedef int (*kvq_vidkv_dequantize_keys_v1_fn)(float *y, uint32_t *flags, const kvq_vidkv_keys *in,
                                               const kvq_vidkv_params *prm, const kvq_policy *pol);
/* "vidkv_quantize_values" [VIDKV-V-01..05] [VIDKV-STP-01..03]: as kvq_vidkv_quantize_values */
typedef int (*kvq_vidkv_quantize_values_v1_fn)(const kvq_vidkv_values *out, uint32_t *np, uint32_t *flags,
                                               const float *v, const kvq_vidkv_params *prm,
                                               const kvq_vidkv_stp *stp, const kvq_policy *pol);
/* "vidkv_dequantize_values" [VIDKV-V-06] [VIDKV-D-01..03]: as kvq_vidkv_dequantize_values */
typedef int (*kvq_vidkv_dequantize_values_v1_fn)(float *y, uint32_t *flags, const kvq_vidkv_values *in,
                                                 uint32_t np, const kvq_vidkv_params *prm,
                                                 const kvq_policy *pol);
/* "vidkv_stream" [VIDKV-W-01..02]: as kvq_vidkv_stream (prefill, decoded
 * tokens, each flush composed of the four calls above) */
typedef int (*kvq_vidkv_stream_v1_fn)(float *kdeq, float *vdeq, uint32_t *flags, const float *k,
                                      const float *v, const kvq_vidkv_stp *stp, uint32_t prefill, uint32_t decode,
                                      const kvq_vidkv_params *prm, const kvq_policy *pol);

/* Optional entries that describe the subject for the reports (spec/verify.md
 * [VER-REP-05]), looked up like the others and called once per subject
 * process, after init.  Without them a report says "unknown". */
#define KVQ_SUBJECT_VERSION_ENTRY "subject_version"
#define KVQ_SUBJECT_DEVICE_ENTRY "subject_device"
/* "subject_version": the subject's version text (a NUL-terminated string the
 * subject keeps; NULL: none). */
typedef const char *(*kvq_subject_version_v1_fn)(void);
/* "subject_device": the device the subject runs on, NUL-terminated into buf
 * of len bytes (e.g. "NVIDIA H200 (sm_90, driver 550.54.15)"); KVQ_OK, or
 * an error status: "unknown". */
typedef int (*kvq_subject_device_v1_fn)(char *buf, size_t len);

/* The version-3 record [API-SUBJ-05]. */
typedef struct kvq_subject_v3 {
    uint32_t abi;       /* KVQ_SUBJECT_ABI_V3 */
    const char *name;   /* short name for reports */
    /* KVQ_OK when the subject can run here; KVQ_E_NODEVICE makes every case of
     * the run SKIPPED (never passed).  May be NULL. */
    int (*init)(char *why, size_t whylen);
    void (*fini)(void); /* may be NULL */
    /* The entry point `entry` of signature version sigver, or NULL. */
    kvq_entry_fn (*lookup)(const char *entry, uint32_t sigver);
} kvq_subject_v3;

typedef const kvq_subject_v3 *(*kvq_subject_abi3_fn)(void);

/* ---- versions 1 and 2 (still loaded) ---------------------------------------- */
/* The tag of a kvq_subject_v1 record, as version-1 sources spell it: it stays
 * 1 so that they keep building a well-formed version-1 record. */
#define KVQ_SUBJECT_ABI KVQ_SUBJECT_ABI_V1
#define KVQ_SUBJECT_ENTRY "kvq_subject_entry"

typedef struct kvq_subject_v1 {
    uint32_t abi;       /* KVQ_SUBJECT_ABI_V1, or KVQ_SUBJECT_ABI_V2 in a kvq_subject_v2 */
    const char *name;   /* short name for reports */
    /* KVQ_OK when the subject can run here; KVQ_E_NODEVICE makes every case of
     * the run SKIPPED (never passed).  May be NULL. */
    int (*init)(char *why, size_t whylen);
    int (*kivi_quantize)(uint8_t *codes, float *scale, float *zero, uint32_t *flags,
                         const float *x, const kvq_kivi_shape *shape, const kvq_policy *pol);
    int (*kivi_dequantize)(float *y, uint32_t *flags, const uint8_t *codes,
                           const float *scale, const float *zero,
                           const kvq_kivi_shape *shape, const kvq_policy *pol);
    void (*fini)(void); /* may be NULL */
} kvq_subject_v1;

/* Version 2: the CERT operations (spec/cert.md), each optional (NULL: its
 * cases are SKIPPED).  Host pointers; sizes as the fast path's calls
 * (include/kvq.h, include/kvq_cert.h); flags may not be NULL. */
typedef struct kvq_subject_v2 {
    kvq_subject_v1 v1;  /* v1.abi == KVQ_SUBJECT_ABI_V2 */
    /* cert-keys [CERT-K8-01..05]: as kvq_cert_quantize_keys */
    int (*cert_quantize_keys)(int8_t *codes, float *sigma, float *z, uint32_t *flags,
                              const float *k, const kvq_cert_shape *shape, const kvq_policy *pol);
    /* cert-values [CERT-V4-01]: as kvq_cert_quantize_values */
    int (*cert_quantize_values)(uint8_t *codes, float *scale, float *zero, uint32_t *flags,
                                const float *v, const kvq_cert_shape *shape,
                                const kvq_policy *pol);
    /* cert-values annotations [CERT-ANN-01..02], from the subject's own codes
     * and metadata: as kvq_cert_annotate (a cert-values case needs both) */
    int (*cert_annotate)(float *eta, float *nu, const float *v, const uint8_t *codes,
                         const float *scale, const float *zero, const kvq_cert_shape *shape);
    /* cert-step: one decode step from the binary16 K, V; the subject quantizes
     * with its own quantizers and runs its own step.  out: d; sel, prom: nb
     * flags (the residual block selected, never promoted); rec [CERT-REC-01];
     * decl [CERT-AR-01]; delta1: the Phase-1 radius [CERT-CHK-01]. */
    int (*cert_step)(float *out, uint8_t *sel, uint8_t *prom, kvq_cert_record *rec,
                     kvq_cert_decl *decl, float *delta1, const float *q, float scale,
                     const float *k, const float *v, const kvq_cert_params *prm,
                     const kvq_cert_shape *shape, const kvq_policy *pol);
} kvq_subject_v2;

typedef const kvq_subject_v1 *(*kvq_subject_entry_fn)(void);

#ifdef __cplusplus
}
#endif
#endif /* KVQ_SUBJECT_H */
