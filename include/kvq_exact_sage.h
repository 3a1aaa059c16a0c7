/*
 * kvq_exact_sage.h -- SAGE on the exact path (GNU MPFR, ref/exact/sage.c),
 * spec/sage.md.
 *
 * The same results as the fast path (kvq_sage.h) computed another way: every
 * pinned operation is evaluated exactly in MPFR and rounded once onto the
 * binary32 (metrics: binary64) grid by kvq_exact_round / kvq_exact_div_round,
 * FP8 codes come from the exact FP8 module (kvq_exact_fp8.h), and the Q/K
 * groups are gathered by the layout's forward map (the fast path walks the
 * inverse one).  So the fast path is compared bit for bit.  In addition every
 * call checks the lemmas of spec/sage.md on the values it computes and stores
 * in *lemmas (may be NULL) the OR of the bits of the lemmas that FAILED (0 when
 * all hold); the accuracy metrics also come with enclosures.
 *
 * Errors and their order are the fast path's, plus KVQ_E_NOMEM where the
 * exact path needs scratch memory; nothing is written on error (*lemmas
 * included).  No global MPFR state is touched [POL-GLOB-01].
 */
#ifndef KVQ_EXACT_SAGE_H
#define KVQ_EXACT_SAGE_H

#include "kvq_exact.h"
#include "kvq_exact_fp8.h"
#include "kvq_mma.h"
#include "kvq_sage.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Bits of *lemmas: a set bit is a lemma of spec/sage.md that failed. */
#define KVQ_SAGE_LEM_SMOOTH  0x01u /* [SAGE-LEM-01] smoothing stays finite and bounded */
#define KVQ_SAGE_LEM_DS      0x02u /* [SAGE-LEM-02] dS stays finite */
#define KVQ_SAGE_LEM_PAPER   0x04u /* [SAGE-LEM-03] paper codes never clamp; max -> +-cmax */
#define KVQ_SAGE_LEM_PUBLIC  0x08u /* [SAGE-LEM-04] public codes never clamp; scale >= 1e-7 */
#define KVQ_SAGE_LEM_V       0x10u /* [SAGE-LEM-05] V never saturates; max -> +-F */
#define KVQ_SAGE_LEM_P       0x20u /* [SAGE-LEM-06] P~ never saturates; l bounds the row */
#define KVQ_SAGE_LEM_DEQ     0x40u /* [SAGE-LEM-07] quantizer output dequantizes finitely */
#define KVQ_SAGE_LEM_METRICS 0x80u /* [SAGE-LEM-08] zero sums; pinned metric in its interval */

/* Smoothing [SAGE-SM-01..06]; checks [SAGE-LEM-01]. */
kvq_status kvq_exact_sage_smooth(float *xs, float *mean, uint32_t *lemmas, const float *x,
                                 const kvq_sage_shape *shape, uint32_t seg);

/* dS [SAGE-DS-01..02]; checks [SAGE-LEM-02]. */
kvq_status kvq_exact_sage_delta_s(float *ds, uint32_t *lemmas, const float *qm, const float *ks,
                                  uint32_t rows, const kvq_sage_shape *kshape, float tau);

/* Q/K quantizer [SAGE-Q-01..07]; checks [SAGE-LEM-03], [SAGE-LEM-04], [SAGE-LEM-07]. */
kvq_status kvq_exact_sage_quantize_qk(uint8_t *codes, float *scale, uint32_t *flags,
                                      uint32_t *lemmas, const float *x,
                                      const kvq_sage_shape *shape, const kvq_sage_qk *qk,
                                      const kvq_policy *pol);

/* Dequantization [SAGE-Q-08]. */
kvq_status kvq_exact_sage_dequantize_qk(float *y, const uint8_t *codes, const float *scale,
                                        const kvq_sage_shape *shape, const kvq_sage_qk *qk);

/* P~ quantizer [SAGE-P-01..04]; checks [SAGE-LEM-06]. */
kvq_status kvq_exact_sage_quantize_p(uint8_t *codes, float *rowsum, uint32_t *flags,
                                     uint32_t *lemmas, const float *p, uint32_t rows,
                                     uint32_t cols, uint32_t fmt, const kvq_policy *pol);

/* V quantizer [SAGE-V-01..04]; checks [SAGE-LEM-05]. */
kvq_status kvq_exact_sage_quantize_v(uint8_t *codes, float *scale, uint32_t *flags,
                                     uint32_t *lemmas, const float *v,
                                     const kvq_sage_shape *shape, uint32_t fmt,
                                     const kvq_policy *pol);

/* One accuracy metric [SAGE-MET-04]. */
typedef struct kvq_exact_sage_metric {
    double pinned;           /* the pinned binary64 sequence, evaluated exactly [SAGE-MET-03] */
    double real_lo, real_hi; /* enclosure of the real metric [SAGE-MET-01..02] */
    double fast_lo, fast_hi; /* where every pinned evaluation lies [SAGE-MET-04] (c) */
} kvq_exact_sage_metric;

typedef struct kvq_exact_sage_accuracy {
    kvq_exact_sage_metric cos_sim, rel_l1, rmse;
} kvq_exact_sage_accuracy;

/* Metrics [SAGE-MET-01..05]; checks [SAGE-LEM-08]. */
kvq_status kvq_exact_sage_metrics(kvq_exact_sage_accuracy *acc, uint32_t *lemmas,
                                  const float *o, const float *o2, uint64_t n);

/* ---- the attention pipeline's bound [SAGE-ATT-07..09] (ref/exact/sage_attn.c) ----
 * What the bound assumes of a kernel beyond the pinned stages: its exp2's
 * relative error and the accumulator class of its P~V instruction
 * [SAGE-ACC-06]. */
typedef struct kvq_sage_attn_class {
    double eps_exp;   /* relative error of the exp2 (device: ex2.approx.ftz.f32, [TR-EX2]) */
    uint32_t frac;    /* p: every term of a step keeps its bits down to 2^(E - p) */
    uint32_t bits;    /* b: a step's result within 2^(1 - b) of its exact sum, relatively */
} kvq_sage_attn_class;

/* The Hopper class: exp2 within 2^-21, the wgmma FP8 accumulator (13 fraction
 * bits, 14-bit results) [SAGE-ACC-02]. */
#define KVQ_SAGE_ATTN_CLASS_HOPPER { 0x1p-21, 13u, 14u }

/* One output element: exact attention on the unquantized inputs lies in
 * [ref_lo, ref_hi]; a conforming output lies within `bound` of it. */
typedef struct kvq_sage_attn_bound {
    double ref_lo, ref_hi, bound;
} kvq_sage_attn_bound;

/* out[r * dim + c] for query rows rows[0 .. nrows-1] of one head (q[nq][dim],
 * k, v [nk][dim]).  KVQ_E_PARAM for NULL pointers, nrows 0, a row >= nq,
 * kvq_sage_attn_ok(a) false or a class outside eps_exp <= 2^-8, 4 <= frac,
 * bits <= 60; then the pinned stages' errors; KVQ_E_NOMEM.  Nothing is
 * written on error. */
kvq_status kvq_exact_sage_attn_bound(kvq_sage_attn_bound *out, const float *q, const float *k,
                                     const float *v, const kvq_sage_attn *a, const uint32_t *rows,
                                     uint32_t nrows, const kvq_sage_attn_class *cls);

/* Several heads [SAGE-MHA-01..04]: out[(h * nq + i) * dim + c] for every row
 * of every query head h of q[hq][nq][dim], head h on KV head h / (hq / hkv)
 * of k, v [hkv][nk][dim].  KVQ_E_PARAM for NULL pointers, kvq_sage_attn_ok(a)
 * or kvq_sage_mha_ok(hq, hkv, in_fmt) false, or a finite input that is not a
 * value of in_fmt (kvq_exact_sage_in_exact); then each head's errors of
 * kvq_exact_sage_attn_bound, heads in order; KVQ_E_NOMEM.  Nothing is
 * written on error. */
kvq_status kvq_exact_sage_mha_bound(kvq_sage_attn_bound *out, const float *q, const float *k,
                                    const float *v, const kvq_sage_attn *a, uint32_t hq, uint32_t hkv,
                                    uint32_t in_fmt, const kvq_sage_attn_class *cls);
/* x is a value of the input format fmt (KVQ_SAGE_IN_*), by MPFR: its
 * significand fits the format's precision and its exponent the format's
 * range (a subnormal value an integer multiple of the least one); a NaN or
 * an infinity counts as one (the stages reject it). */
int kvq_exact_sage_in_exact(float x, uint32_t fmt);

/* The judgement of n outputs o against their bounds: the number of elements
 * whose distance from [ref_lo, ref_hi] (rounded down) exceeds `bound`, a NaN
 * or an infinity counting as one; *worst (may be NULL) receives the largest
 * distance / bound. */
uint64_t kvq_exact_sage_attn_judge(double *worst, const float *o, const kvq_sage_attn_bound *b, uint64_t n);

/* ---- the accumulator models and one channel of P~V (ref/exact/mma.c) ---- */

/* One output of model m [SAGE-ACC-01] evaluated with MPFR: c (binary32 bits)
 * plus the K products a[k] b[k] of finite FP8 codes of format fmt. */
uint32_t kvq_exact_mma_dot(const uint8_t *a, const uint8_t *b, uint32_t K, uint32_t c, uint32_t fmt,
                           const kvq_mma_model *m);

/* kvq_sage_pv [SAGE-ACC-07] on the exact path: d[r] the exact level's value;
 * [lo[r], hi[r]] the bounded level's interval (binary32, outward): the exact
 * value of c[r] + sum_k a[r][k] b[r][k] widened by the bound of the class
 * K(13, 14) [SAGE-ACC-06] for this instruction and flush sequence.  Errors as
 * kvq_sage_pv's (plus a NULL lo or hi). */
kvq_status kvq_exact_sage_pv(float *d, float *lo, float *hi, const uint8_t *a, const uint8_t *b, const float *c,
                             uint32_t rows, uint32_t n, uint32_t fmt, uint32_t model, uint32_t buffer);

#ifdef __cplusplus
}
#endif
#endif /* KVQ_EXACT_SAGE_H */
