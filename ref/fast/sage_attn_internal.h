/*
 * sage_attn_internal.h -- the attention pipeline with one deliberate change
 * (ref/fast/sage_attn.c), for the tests that show the bound of [SAGE-ATT-07]
 * rejects wrong pipelines (tests/sage/check_attn.c).  Not installed.
 */
#ifndef KVQ_SAGE_ATTN_INTERNAL_H
#define KVQ_SAGE_ATTN_INTERNAL_H

#include "kvq_sage.h"

#define KVQ_SAGE_ATTN_VAR_NONE       0u /* the pipeline of the spec */
#define KVQ_SAGE_ATTN_VAR_NO_RESCALE 1u /* acc and buffer not multiplied by alpha [SAGE-ATT-04] */
#define KVQ_SAGE_ATTN_VAR_NO_DS      2u /* the score without dS [SAGE-ATT-03] */
#define KVQ_SAGE_ATTN_VAR_P_UNSCALED 3u /* P~ = FP8(p), not FP8(448 p) [SAGE-ATT-04] */
#define KVQ_SAGE_ATTN_VAR_V_UNSCALED 4u /* the output without V's channel scale [SAGE-ATT-06] */
#define KVQ_SAGE_ATTN_VAR_DS_UNSMOOTHED 5u /* dS from the keys before smoothing [SAGE-DS-01] */

kvq_status kvq_sage_attention_variant(float *o, const float *q, const float *k, const float *v,
                                      const kvq_sage_attn *a, const kvq_policy *pol, uint32_t variant);

/* Several heads [SAGE-MHA-01..04] with the one-head change `variant` in
 * every head and changes of the heads' reading (bits): */
#define KVQ_SAGE_MHA_VAR_HEAD_MOD   1u /* query head h reads KV head h % hkv, not h / (hq / hkv) [SAGE-MHA-01] */
#define KVQ_SAGE_MHA_VAR_AS_BINARY16 2u /* every input converted to binary16 (to nearest, saturating at
                                           65504) whatever in_fmt says [SAGE-MHA-02] */
kvq_status kvq_sage_attention_mha_variant(float *o, const float *q, const float *k, const float *v,
                                          const kvq_sage_attn *a, uint32_t hq, uint32_t hkv, uint32_t in_fmt,
                                          const kvq_policy *pol, uint32_t variant, uint32_t mha_variant);

/* kvq_sage_pv's run under any model with any flush interval (the wrong
 * subjects' changed accumulators); its argument checks: kvq_sage_pv_check
 * (kvq_sage.h). */
#include "kvq_mma.h"
void kvq_sage_pv_run(float *d, const uint8_t *a, const uint8_t *b, const float *c, uint32_t rows, uint32_t n,
                     uint32_t fmt, const kvq_mma_model *m, uint32_t flush);

#endif
