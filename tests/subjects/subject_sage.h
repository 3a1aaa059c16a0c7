/*
 * subject_sage.h -- the SAGE entries of the fast path as the test subjects use
 * them (tests/sage/subjects/): each entry (returning int; the fast path
 * returns kvq_status) with a hook a subject defines to put its one defect in,
 * and the version-3 record [API-SUBJ-05] answering every SAGE entry of
 * signature version 1.
 *
 * A subject defines SUBJECT_NAME and any of
 *   SAGE_SMOOTH_SEG(seg, shape)       the segment its smoothing uses
 *   SAGE_QK(qk, pol)                  edits copies of the qk record and policy
 *   SAGE_FMT(fmt)                     the FP8 format of P~ and V
 *   SAGE_FP8_POL(p)                   edits a copy of the policy of P~ and V
 *   SAGE_FP8_FIX(codes, n, fmt, pol)  rewrites the FP8 codes of P~ and V
 *   SAGE_SMOOTH_FIX(xs, mean, x, shape, seg)  rewrites a successful smoothing's outputs
 *   SAGE_QK_FIX(codes, scale, x, shape, qk)   rewrites a successful Q/K quantization's codes
 *   SAGE_P_FIX(codes, rowsum, p, rows, cols, fmt)  rewrites a successful P~ quantization
 *   SAGE_V_FIX(codes, scale, v, shape, fmt)   rewrites a successful V quantization
 *   SAGE_DQ_FIX(y, codes, scale, shape, qk)   rewrites a successful dequantization
 *   SAGE_DS_RUN                       the name of the subject's own dS, with
 *                                     kvq_sage_delta_s's arguments, called
 *                                     after the fast path's succeeded
 *   SAGE_PV_MODEL(m)                  edits a copy of sage-pv's accumulator model
 *   SAGE_PV_FLUSH(buffer)             the flush interval sage-pv uses
 *   SAGE_PV_RUN                       the name of the subject's own sage-pv
 *                                     accumulation, with kvq_sage_pv_run's
 *                                     arguments (the model is then unused)
 *   SAGE_ATTN_VARIANT                 the attention pipeline's deliberate change
 *                                     (KVQ_SAGE_ATTN_VAR_*, ref/fast/sage_attn_internal.h),
 *                                     in sage_attention and every head of
 *                                     sage_attention_mha
 *   SAGE_MHA_VARIANT                  sage_attention_mha's change of the heads'
 *                                     reading (KVQ_SAGE_MHA_VAR_* bits)
 * before including this file; the others default to the fast path's
 * behaviour.
 */
#ifndef KVQ_SUBJECT_SAGE_H
#define KVQ_SUBJECT_SAGE_H

#include <stdlib.h>
#include <string.h>

#include "kvq_subject.h"
#include "../../ref/fast/sage_attn_internal.h"

#ifndef SAGE_SMOOTH_SEG
#define SAGE_SMOOTH_SEG(seg, shape) (seg)
#endif
#ifndef SAGE_QK
#define SAGE_QK(qk, pol) ((void)0)
#endif
#ifndef SAGE_FMT
#define SAGE_FMT(fmt) (fmt)
#endif
#ifndef SAGE_FP8_POL
#define SAGE_FP8_POL(p) ((void)0)
#endif
#ifndef SAGE_FP8_FIX
#define SAGE_FP8_FIX(codes, n, fmt, pol) ((void)0)
#endif
#ifndef SAGE_SMOOTH_FIX
#define SAGE_SMOOTH_FIX(xs, mean, x, shape, seg) ((void)0)
#endif
#ifndef SAGE_QK_FIX
#define SAGE_QK_FIX(codes, scale, x, shape, qk) ((void)0)
#endif
#ifndef SAGE_P_FIX
#define SAGE_P_FIX(codes, rowsum, p, rows, cols, fmt) ((void)0)
#endif
#ifndef SAGE_V_FIX
#define SAGE_V_FIX(codes, scale, v, shape, fmt) ((void)0)
#endif
#ifndef SAGE_DQ_FIX
#define SAGE_DQ_FIX(y, codes, scale, shape, qk) ((void)0)
#endif
#ifndef SAGE_PV_MODEL
#define SAGE_PV_MODEL(m) ((void)0)
#endif
#ifndef SAGE_PV_FLUSH
#define SAGE_PV_FLUSH(buffer) (buffer)
#endif
#ifndef SAGE_PV_RUN
#define SAGE_PV_RUN kvq_sage_pv_run
#endif
#ifndef SAGE_ATTN_VARIANT
#define SAGE_ATTN_VARIANT KVQ_SAGE_ATTN_VAR_NONE
#endif
#ifndef SAGE_MHA_VARIANT
#define SAGE_MHA_VARIANT 0u
#endif

/* Smoothing with the subject's segment; the caller's mean array holds the
 * rows of the segment it asked for, so only those are written. */
static int sage_smooth(float *xs, float *mean, const float *x, const kvq_sage_shape *shape, uint32_t seg)
{
    uint32_t s;
    kvq_status st;
    float *buf;
    if (shape == NULL || !kvq_sage_shape_ok(shape) || seg < 1u || seg > KVQ_SAGE_MAX_TOKENS)
        return kvq_sage_smooth(xs, mean, x, shape, seg);
    s = SAGE_SMOOTH_SEG(seg, shape);
    if (s == seg) {
        st = kvq_sage_smooth(xs, mean, x, shape, seg);
        if (st == KVQ_OK) SAGE_SMOOTH_FIX(xs, mean, x, shape, seg);
        return st;
    }
    buf = malloc((size_t)kvq_sage_mean_rows(shape->tokens, s) * shape->dim * sizeof *buf);
    if (buf == NULL) return KVQ_E_NOMEM;
    st = kvq_sage_smooth(xs, buf, x, shape, s);
    if (st == KVQ_OK && mean != NULL)
        memcpy(mean, buf, (size_t)kvq_sage_mean_rows(shape->tokens, seg) * shape->dim * sizeof *buf);
    free(buf);
    return st;
}

static int sage_quantize_qk(uint8_t *codes, float *scale, uint32_t *flags, const float *x,
                            const kvq_sage_shape *shape, const kvq_sage_qk *qk, const kvq_policy *pol)
{
    kvq_sage_qk q;
    kvq_policy p;
    if (qk == NULL || pol == NULL) return kvq_sage_quantize_qk(codes, scale, flags, x, shape, qk, pol);
    q = *qk;
    p = *pol;
    SAGE_QK(q, p);
    kvq_status st = kvq_sage_quantize_qk(codes, scale, flags, x, shape, &q, &p);
    if (st == KVQ_OK) SAGE_QK_FIX(codes, scale, x, shape, &q);
    return st;
}

static int sage_dequantize_qk(float *y, const uint8_t *codes, const float *scale, const kvq_sage_shape *shape,
                              const kvq_sage_qk *qk)
{
    kvq_status st = kvq_sage_dequantize_qk(y, codes, scale, shape, qk);
    if (st == KVQ_OK) SAGE_DQ_FIX(y, codes, scale, shape, qk);
    return st;
}

static int sage_quantize_p(uint8_t *codes, float *rowsum, uint32_t *flags, const float *p, uint32_t rows,
                           uint32_t cols, uint32_t fmt, const kvq_policy *pol)
{
    uint32_t f = fmt <= KVQ_SAGE_FP8_E5M2 ? SAGE_FMT(fmt) : fmt;
    kvq_policy pc;
    kvq_status st;
    if (pol != NULL) {
        pc = *pol;
        SAGE_FP8_POL(pc);
        pol = &pc;
    }
    st = kvq_sage_quantize_p(codes, rowsum, flags, p, rows, cols, f, pol);
    if (st == KVQ_OK) SAGE_FP8_FIX(codes, (uint64_t)rows * cols, f, pol);
    if (st == KVQ_OK) SAGE_P_FIX(codes, rowsum, p, rows, cols, f);
    return st;
}

static int sage_quantize_v(uint8_t *codes, float *scale, uint32_t *flags, const float *v,
                           const kvq_sage_shape *shape, uint32_t fmt, const kvq_policy *pol)
{
    uint32_t f = fmt <= KVQ_SAGE_FP8_E5M2 ? SAGE_FMT(fmt) : fmt;
    kvq_policy pc;
    kvq_status st;
    if (pol != NULL) {
        pc = *pol;
        SAGE_FP8_POL(pc);
        pol = &pc;
    }
    st = kvq_sage_quantize_v(codes, scale, flags, v, shape, f, pol);
    if (st == KVQ_OK) SAGE_FP8_FIX(codes, kvq_sage_elems(shape), f, pol);
    if (st == KVQ_OK) SAGE_V_FIX(codes, scale, v, shape, f);
    return st;
}

static int sage_delta_s(float *ds, const float *qm, const float *ks, uint32_t rows,
                        const kvq_sage_shape *kshape, float tau)
{
    kvq_status st = kvq_sage_delta_s(ds, qm, ks, rows, kshape, tau);
#ifdef SAGE_DS_RUN
    if (st == KVQ_OK) SAGE_DS_RUN(ds, qm, ks, rows, kshape, tau);
#endif
    return st;
}

static int sage_pv(float *d, const uint8_t *a, const uint8_t *b, const float *c, uint32_t rows, uint32_t n,
                   uint32_t fmt, uint32_t model, uint32_t buffer)
{
    kvq_status st = d ? kvq_sage_pv_check(a, b, c, rows, n, fmt, model, buffer) : KVQ_E_PARAM;
    if (st != KVQ_OK) return st;
    kvq_mma_model m = model == KVQ_SAGE_PV_WGMMA ? kvq_mma_model_wgmma_fp8(fmt) : kvq_mma_model_mma_fp8_sm90();
    SAGE_PV_MODEL(m);
    SAGE_PV_RUN(d, a, b, c, rows, n, fmt, &m, SAGE_PV_FLUSH(buffer));
    return KVQ_OK;
}

static int sage_attention(float *o, const float *q, const float *k, const float *v, const kvq_sage_attn *a,
                          const kvq_policy *pol)
{
    return kvq_sage_attention_variant(o, q, k, v, a, pol, SAGE_ATTN_VARIANT);
}

static int sage_attention_mha(float *o, const float *q, const float *k, const float *v, const kvq_sage_attn *a,
                              uint32_t hq, uint32_t hkv, uint32_t in_fmt, const kvq_policy *pol)
{
    return kvq_sage_attention_mha_variant(o, q, k, v, a, hq, hkv, in_fmt, pol, SAGE_ATTN_VARIANT, SAGE_MHA_VARIANT);
}

static kvq_entry_fn sage_lookup(const char *entry, uint32_t sigver)
{
    if (sigver != 1u) return NULL;
    if (strcmp(entry, "sage_smooth") == 0) return (kvq_entry_fn)sage_smooth;
    if (strcmp(entry, "sage_quantize_qk") == 0) return (kvq_entry_fn)sage_quantize_qk;
    if (strcmp(entry, "sage_dequantize_qk") == 0) return (kvq_entry_fn)sage_dequantize_qk;
    if (strcmp(entry, "sage_quantize_p") == 0) return (kvq_entry_fn)sage_quantize_p;
    if (strcmp(entry, "sage_quantize_v") == 0) return (kvq_entry_fn)sage_quantize_v;
    if (strcmp(entry, "sage_delta_s") == 0) return (kvq_entry_fn)sage_delta_s;
    if (strcmp(entry, "sage_pv") == 0) return (kvq_entry_fn)sage_pv;
    if (strcmp(entry, "sage_attention") == 0) return (kvq_entry_fn)sage_attention;
    if (strcmp(entry, "sage_attention_mha") == 0) return (kvq_entry_fn)sage_attention_mha;
    return NULL;
}

static const kvq_subject_v3 sage_subject = { KVQ_SUBJECT_ABI_V3, SUBJECT_NAME, NULL, NULL, sage_lookup };

__attribute__((visibility("default"))) const kvq_subject_v3 *kvq_subject_abi3(void)
{
    return &sage_subject;
}

#endif
