/*
 * kvq_sage_attn.h -- the SageAttention2 attention pipeline (spec/sage.md,
 * "Attention" [SAGE-ATT-01..09]): its parameters, the pipeline's fixed
 * choices (the quantizers' maps, the smoothing segments, the log2-domain
 * softmax scale) and the index arithmetic the kernel, the reference and the
 * bound share.  Plain C11 that nvcc also compiles (KVQ_HD).
 *
 * One head: Q is [nq][dim], K and V are [nk][dim], binary32, row-major; the
 * output O is [nq][dim] binary32.  Query i sees key j when j < nk and, under
 * `causal`, j <= i + nk - nq (the queries are the last nq positions).
 */
#ifndef KVQ_SAGE_ATTN_H
#define KVQ_SAGE_ATTN_H

#include <stdint.h>

#include "kvq_sage_layout.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A pipeline [SAGE-ATT-01]. */
typedef struct kvq_sage_attn {
    uint32_t nq, nk;    /* query and key tokens, 1 .. 2^24 each */
    uint32_t dim;       /* d: 128 (64 is specified for the quantizers, not the kernel) */
    float tau;          /* softmax scale, natural base (1/sqrt(d) usually) */
    uint32_t causal;    /* 0 or 1 */
    uint32_t buffer;    /* FP32 buffer: flushed every `buffer` keys (64 or 128), 0 = never */
    uint32_t qk_bits;   /* 8 (INT8) or 4 (INT4) */
} kvq_sage_attn;

#define KVQ_SAGE_ATTN_BQ  128u  /* Q block: smoothing segment and dS row [SAGE-ATT-02] */
#define KVQ_SAGE_ATTN_BKV 64u   /* key block of the online softmax [SAGE-ATT-04] */
#define KVQ_SAGE_ATTN_BUFFER_DEFAULT 128u

/* log2(e) rounded to binary32, and the log2-domain scale tau2 = RN32(tau *
 * log2e) the pipeline computes once [SAGE-ATT-02]. */
#define KVQ_SAGE_LOG2E_F32 0x1.715476p0f
KVQ_HD static inline float kvq_sage_attn_tau2(float tau)
{
    return tau * KVQ_SAGE_LOG2E_F32;
}

/* The Q and K quantizers of the pipeline: the public code's blocks and the
 * per-thread map, `paper` rounding [SAGE-ATT-02]. */
KVQ_HD static inline kvq_sage_qk kvq_sage_attn_qk(const kvq_sage_attn *a, uint32_t role)
{
    return kvq_sage_qk_default(role, a->qk_bits);
}

/* Query i sees key j [SAGE-ATT-01]. */
KVQ_HD static inline int kvq_sage_attn_visible(const kvq_sage_attn *a, uint32_t i, uint32_t j)
{
    if (j >= a->nk) return 0;
    if (!a->causal) return 1;
    return (uint64_t)j + a->nq <= (uint64_t)i + a->nk;
}

/* Keys query i sees: a prefix 0 .. n-1 of the key tokens. */
KVQ_HD static inline uint32_t kvq_sage_attn_nvisible(const kvq_sage_attn *a, uint32_t i)
{
    if (!a->causal) return a->nk;
    const uint64_t e = (uint64_t)i + a->nk + 1u;     /* j < i + nk - nq + 1 */
    return e <= a->nq ? 0u : (uint32_t)(e - a->nq > a->nk ? a->nk : e - a->nq);
}

/* Valid parameters [SAGE-ATT-01]: 0 when not. */
KVQ_HD static inline int kvq_sage_attn_ok(const kvq_sage_attn *a)
{
    return a->nq >= 1u && a->nq <= KVQ_SAGE_MAX_TOKENS && a->nk >= 1u && a->nk <= KVQ_SAGE_MAX_TOKENS &&
           a->dim == 128u && (a->causal == 0u || a->causal == 1u) &&
           (a->buffer == 0u || a->buffer == 64u || a->buffer == 128u) &&
           (a->qk_bits == 4u || a->qk_bits == 8u) && a->tau >= 0x1p-126f && a->tau <= 0x1p16f;
}

/* ---- several heads and the input formats [SAGE-MHA-01..03] ------------------
 * hq query heads and hkv KV heads (hkv divides hq): Q is [hq][nq][dim], K and
 * V are [hkv][nk][dim], O is [hq][nq][dim], each row-major, heads following
 * each other.  Query head h reads KV head h / (hq / hkv): the group of hq /
 * hkv consecutive query heads shares one KV head.  The inputs are values of
 * the format in_fmt. */
#define KVQ_SAGE_IN_BINARY32 0u
#define KVQ_SAGE_IN_BINARY16 1u
#define KVQ_SAGE_IN_BFLOAT16 2u
#define KVQ_SAGE_IN_FORMATS  3u
#define KVQ_SAGE_MHA_MAX_HEADS 1024u

/* The KV head of query head h [SAGE-MHA-01] (valid heads). */
KVQ_HD static inline uint32_t kvq_sage_mha_kv_head(uint32_t h, uint32_t hq, uint32_t hkv)
{
    return h / (hq / hkv);
}

/* Valid head counts and input format [SAGE-MHA-01]: 0 when not. */
KVQ_HD static inline int kvq_sage_mha_ok(uint32_t hq, uint32_t hkv, uint32_t in_fmt)
{
    return hq >= 1u && hq <= KVQ_SAGE_MHA_MAX_HEADS && hkv >= 1u && hkv <= hq && hq % hkv == 0u &&
           in_fmt < KVQ_SAGE_IN_FORMATS;
}

#ifdef __cplusplus
}
#endif
#endif /* KVQ_SAGE_ATTN_H */
