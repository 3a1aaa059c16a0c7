/*
 * sage_attn.c -- the SageAttention2 attention pipeline on the host, fast path
 * (spec/sage.md [SAGE-ATT-01..06]).
 *
 * The pipeline's pinned parts are the fast path's own calls (smoothing, dS,
 * the three quantizers); the core follows the kernel's structure step for
 * step: key blocks of 64, the score by one fmaf, the online softmax, P~ by
 * [SAGE-P-01], every P~V instruction by the bit-exact wgmma model
 * (include/kvq_mma.h [SAGE-ACC-02]) and the FP32 buffer [SAGE-ACC-05].  The
 * one step a host cannot reproduce is the device's exp2 approximation: this
 * path uses exp2f, so its output is judged like any kernel's, by the bound of
 * [SAGE-ATT-07] (tests/sage/check_attn.c), not bit for bit.
 *
 * kvq_sage_attention_variant runs the same pipeline with one deliberate
 * change (the test's wrong pipelines); kvq_sage_attention is variant 0.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kvq_mma.h"
#include "kvq_sage.h"
#include "kvq_bits.h"
#include "sage_attn_internal.h"

/* ---- the contract of kvq_sage_attention [SAGE-ATT-01] (WP: proofs/run.sh,
 * run sage_attention; proofs/TRUSTED.md [TR-SAGE-ATT]) ---------------------
 * What the callers' contracts say, as logic: a valid policy and parameter
 * record, the tensors' extents, finite and smoothable inputs. */
/*@ predicate kvq_policy_ok_l{L}(kvq_policy *pol) =
        pol != \null &&
        (pol->ties == KVQ_TIES_EVEN || pol->ties == KVQ_TIES_AWAY) &&
        (pol->overflow == KVQ_OVERFLOW_SATURATE || pol->overflow == KVQ_OVERFLOW_NAN) &&
        (pol->subnormal == KVQ_SUBNORMAL_KEEP || pol->subnormal == KVQ_SUBNORMAL_DAZ);
    // the parameters of [SAGE-ATT-01] (kvq_sage_attn_ok)
    predicate kvq_sage_attn_ok_l{L}(kvq_sage_attn *a) =
        1 <= a->nq <= KVQ_SAGE_MAX_TOKENS && 1 <= a->nk <= KVQ_SAGE_MAX_TOKENS &&
        a->dim == 128 && (a->causal == 0 || a->causal == 1) &&
        (a->buffer == 0 || a->buffer == 64 || a->buffer == 128) &&
        (a->qk_bits == 4 || a->qk_bits == 8) &&
        \is_finite(a->tau) && 0x1p-126 <= a->tau <= 0x1p16;
    logic integer kvq_sage_attn_qn_l{L}(kvq_sage_attn *a) = a->nq * a->dim;
    logic integer kvq_sage_attn_kn_l{L}(kvq_sage_attn *a) = a->nk * a->dim;
    // no |x| above 2^48: what the smoothing accepts [SAGE-SM-06]
    predicate kvq_sage_small_l{L}(float *x, integer n) =
        \forall integer e; 0 <= e < n ==> \abs(x[e]) <= 0x1p48;
*/

/* kvq_policy_check (ref/common/status.c), as [TR-POLICY-CHECK] states it for
 * KIVI: KVQ_OK exactly for a valid policy, nothing assigned.  Assumed here,
 * backed by tests/kivi/check_kivi.c bad_policy_check (TRUSTED.md [TR-SAGE-ATT]). */
/*@ requires pol == \null || \valid_read(pol);
    assigns \nothing;
    ensures status: \result == KVQ_OK || \result == KVQ_E_PARAM;
    ensures def: \result == KVQ_OK <==> kvq_policy_ok_l(pol);
*/
kvq_status kvq_policy_check(const kvq_policy *pol);

/* kvq_sage_attn_ok (kvq_sage_attn.h) as the logic above (proved in the run). */
/*@ requires a: \valid_read(a);
    assigns \nothing;
    ensures def: \result != 0 <==> kvq_sage_attn_ok_l(a);
*/
static inline int kvq_sage_attn_ok(const kvq_sage_attn *a);

/* The intermediates of one head. */
typedef struct attn_work {
    float *ks, *kmean, *qs, *qmean, *ds, *qsc, *ksc, *vsc;
    uint8_t *qc, *kc, *vc;
} attn_work;

/* Frees what prepare allocated (NULL or malloc's).  Not proved: free's
 * precondition (\freeable) is beyond WP (TRUSTED.md [TR-SAGE-ATT]). */
/*@ requires w: \valid_read(w);
    assigns __fc_heap_status;
*/
static void work_free(attn_work *w)
{
    free(w->ks); free(w->kmean); free(w->qs); free(w->qmean); free(w->ds);
    free(w->qsc); free(w->ksc); free(w->vsc); free(w->qc); free(w->kc); free(w->vc);
}

/* The pinned stages [SAGE-ATT-02]: smoothing, dS, the three quantizers, in
 * the order of [SAGE-ATT-01]; the first error is returned.  What it writes is
 * *w and the intermediates it allocates (fresh: no assigns clause names them).
 * Its contract is assumed, not proved (TRUSTED.md [TR-SAGE-ATT]): WP 25 stops
 * on the stages' contracts (their `assigns xs[..]` is an unbounded range) and
 * does not implement malloc's \fresh. */
/*@ requires w: \valid(w);
    requires a: \valid_read(a) && kvq_sage_attn_ok_l(a);
    requires pol: \valid_read(pol) && kvq_policy_ok_l(pol);
    requires in: \valid_read(q + (0 .. kvq_sage_attn_qn_l(a) - 1)) &&
        \valid_read(k + (0 .. kvq_sage_attn_kn_l(a) - 1)) && \valid_read(v + (0 .. kvq_sage_attn_kn_l(a) - 1));
    assigns *w, __fc_heap_status;
    ensures status: \result == KVQ_OK || \result == KVQ_E_NONFINITE || \result == KVQ_E_PARAM ||
        \result == KVQ_E_NOMEM;
    ensures k_first: \result != KVQ_E_NOMEM && !kvq_sage_finite{Pre}(k, kvq_sage_attn_kn_l{Pre}(a)) ==>
        \result == KVQ_E_NONFINITE;
    ensures k_range: \result != KVQ_E_NOMEM && kvq_sage_finite{Pre}(k, kvq_sage_attn_kn_l{Pre}(a)) &&
        !kvq_sage_small_l{Pre}(k, kvq_sage_attn_kn_l{Pre}(a)) ==> \result == KVQ_E_PARAM;
    ensures q_next: \result != KVQ_E_NOMEM && kvq_sage_finite{Pre}(k, kvq_sage_attn_kn_l{Pre}(a)) &&
        kvq_sage_small_l{Pre}(k, kvq_sage_attn_kn_l{Pre}(a)) && !kvq_sage_finite{Pre}(q, kvq_sage_attn_qn_l{Pre}(a)) ==>
        \result == KVQ_E_NONFINITE;
*/
static kvq_status prepare(attn_work *w, const float *q, const float *k, const float *v,
                          const kvq_sage_attn *a, const kvq_policy *pol, uint32_t variant)
{
    const uint32_t d = a->dim, rows = kvq_sage_mean_rows(a->nq, KVQ_SAGE_ATTN_BQ);
    const kvq_sage_shape qsh = {a->nq, d}, ksh = {a->nk, d};
    const kvq_sage_qk qq = kvq_sage_attn_qk(a, KVQ_SAGE_ROLE_Q), kq = kvq_sage_attn_qk(a, KVQ_SAGE_ROLE_K);
    const attn_work none = {0};
    *w = none;
    w->ks = malloc((size_t)a->nk * d * sizeof(float));
    w->kmean = malloc((size_t)d * sizeof(float));
    w->qs = malloc((size_t)a->nq * d * sizeof(float));
    w->qmean = malloc((size_t)rows * d * sizeof(float));
    w->ds = malloc((size_t)rows * a->nk * sizeof(float));
    w->qsc = malloc(kvq_sage_scale_count(&qsh, &qq) * sizeof(float));
    w->ksc = malloc(kvq_sage_scale_count(&ksh, &kq) * sizeof(float));
    w->vsc = malloc((size_t)d * sizeof(float));
    w->qc = malloc(kvq_sage_code_bytes(&qsh, a->qk_bits));
    w->kc = malloc(kvq_sage_code_bytes(&ksh, a->qk_bits));
    w->vc = malloc((size_t)a->nk * d);
    if (!w->ks || !w->kmean || !w->qs || !w->qmean || !w->ds || !w->qsc || !w->ksc || !w->vsc ||
        !w->qc || !w->kc || !w->vc)
        return KVQ_E_NOMEM;
    kvq_status st;
    uint32_t fl;
    if ((st = kvq_sage_smooth(w->ks, w->kmean, k, &ksh, a->nk)) != KVQ_OK) return st;
    if ((st = kvq_sage_smooth(w->qs, w->qmean, q, &qsh, KVQ_SAGE_ATTN_BQ)) != KVQ_OK) return st;
    if ((st = kvq_sage_delta_s(w->ds, w->qmean, variant == KVQ_SAGE_ATTN_VAR_DS_UNSMOOTHED ? k : w->ks, rows, &ksh,
                               kvq_sage_attn_tau2(a->tau))) != KVQ_OK)
        return st;
    if ((st = kvq_sage_quantize_qk(w->qc, w->qsc, &fl, w->qs, &qsh, &qq, pol)) != KVQ_OK) return st;
    if ((st = kvq_sage_quantize_qk(w->kc, w->ksc, &fl, w->ks, &ksh, &kq, pol)) != KVQ_OK) return st;
    return kvq_sage_quantize_v(w->vc, w->vsc, &fl, v, &ksh, KVQ_SAGE_FP8_E4M3, pol);
}

/* One query row of the core [SAGE-ATT-03..06].  Its contract is assumed:
 * it writes its row of the output and nothing else (TRUSTED.md [TR-SAGE-ATT]). */
/*@ requires o: \valid(o + (0 .. a->dim - 1));
    requires a: \valid_read(a) && \valid_read(w) && \valid_read(pol);
    assigns o[0 .. a->dim - 1];
*/
static void core_row(float *o, const attn_work *w, const kvq_sage_attn *a, uint32_t i,
                     const kvq_policy *pol, uint32_t variant)
{
    const uint32_t d = a->dim, nv = kvq_sage_attn_nvisible(a, i), B = KVQ_SAGE_ATTN_BKV;
    const kvq_sage_qk qq = kvq_sage_attn_qk(a, KVQ_SAGE_ROLE_Q), kq = kvq_sage_attn_qk(a, KVQ_SAGE_ROLE_K);
    const kvq_mma_model mm = kvq_mma_model_wgmma_fp8(KVQ_SAGE_FP8_E4M3);
    const float tau2 = kvq_sage_attn_tau2(a->tau);
    const float qsc = w->qsc[kvq_sage_scale_slot(&qq, i)] * tau2;
    const float *ds = w->ds + (uint64_t)(i / KVQ_SAGE_ATTN_BQ) * a->nk;
    float acc[128], buf[128], s[64];
    uint8_t pc[64];
    float m = -INFINITY, l = 0.0f;
    if (nv == 0u) {                                   /* no key: +0 [SAGE-ATT-06] */
        for (uint32_t c = 0; c < d; c++) o[c] = 0.0f;
        return;
    }
    for (uint32_t c = 0; c < d; c++) acc[c] = buf[c] = 0.0f;
    const uint32_t nb = (nv + B - 1u) / B;
    for (uint32_t b = 0; b < nb; b++) {
        const uint32_t j0 = b * B, n = nv - j0 < B ? nv - j0 : B;
        float mb = m;
        for (uint32_t t = 0; t < n; t++) {            /* scores [SAGE-ATT-03] */
            const uint32_t j = j0 + t;
            int32_t dot = 0;
            for (uint32_t c = 0; c < d; c++)
                dot += kvq_sage_unpack_code(w->qc, (uint64_t)i * d + c, a->qk_bits) *
                       kvq_sage_unpack_code(w->kc, (uint64_t)j * d + c, a->qk_bits);
            const float ks = w->ksc[kvq_sage_scale_slot(&kq, j)];
            s[t] = fmaf((float)dot, qsc * ks, variant == KVQ_SAGE_ATTN_VAR_NO_DS ? 0.0f : ds[j]);
            if (s[t] > mb) mb = s[t];
        }
        const float alpha = exp2f(m - mb);            /* m = -inf: 0 */
        if (variant != KVQ_SAGE_ATTN_VAR_NO_RESCALE)
            for (uint32_t c = 0; c < d; c++) {
                acc[c] *= alpha;
                buf[c] *= alpha;
            }
        float rs = 0.0f;
        for (uint32_t t = 0; t < B; t++) {            /* P~ [SAGE-ATT-04] */
            if (t >= n) { pc[t] = 0u; continue; }
            const float p = exp2f(s[t] - mb);
            rs += p;
            const float sc = variant == KVQ_SAGE_ATTN_VAR_P_UNSCALED ? 1.0f : kvq_sage_fp8_bound(KVQ_SAGE_FP8_E4M3);
            uint32_t fl = 0;
            pc[t] = kvq_fp8_e4m3_from_f32(p * sc, pol->overflow, &fl);
        }
        l = l * alpha + rs;
        m = mb;
        for (uint32_t h = 0; h < B / 32u; h++)        /* two instructions a block [SAGE-ATT-05] */
            for (uint32_t c = 0; c < d; c++) {
                uint8_t vb[32];
                for (uint32_t t = 0; t < 32u; t++) {
                    const uint32_t j = j0 + 32u * h + t;
                    vb[t] = j < a->nk ? w->vc[(uint64_t)j * d + c] : 0u;
                }
                uint32_t bits;
                memcpy(&bits, &acc[c], sizeof bits);
                bits = kvq_mma_dot(pc + 32u * h, vb, 32u, bits, KVQ_SAGE_FP8_E4M3, &mm);
                memcpy(&acc[c], &bits, sizeof bits);
            }
        if (a->buffer != 0u && ((b + 1u) * B % a->buffer == 0u || b + 1u == nb))   /* the buffer [SAGE-ACC-05] */
            for (uint32_t c = 0; c < d; c++) {
                buf[c] += acc[c];
                acc[c] = 0.0f;
            }
    }
    for (uint32_t c = 0; c < d; c++) {                /* output [SAGE-ATT-06] */
        const float vs = variant == KVQ_SAGE_ATTN_VAR_V_UNSCALED ? 448.0f : w->vsc[c];
        const float sum = a->buffer == 0u ? acc[c] : buf[c];
        o[c] = sum * (vs / kvq_sage_fp8_bound(KVQ_SAGE_FP8_E4M3)) / l;
    }
}

/* [SAGE-ATT-01]: the parameter errors in the spec's order, then the stages'
 * (prepare's contract), nothing written on an error; on success the output,
 * and nothing else but the heap's state, is written.  kvq_sage_attention is
 * variant 0; every variant has this contract. */
/*@ requires a_read: a == \null || \valid_read(a);
    requires pol_read: pol == \null || \valid_read(pol);
    requires tensors: a != \null && kvq_sage_attn_ok_l(a) ==>
        (o != \null ==> \valid(o + (0 .. kvq_sage_attn_qn_l(a) - 1))) &&
        (q != \null ==> \valid_read(q + (0 .. kvq_sage_attn_qn_l(a) - 1))) &&
        (k != \null ==> \valid_read(k + (0 .. kvq_sage_attn_kn_l(a) - 1))) &&
        (v != \null ==> \valid_read(v + (0 .. kvq_sage_attn_kn_l(a) - 1)));
    requires separated: a != \null && kvq_sage_attn_ok_l(a) ==>
        \separated(o + (0 .. kvq_sage_attn_qn_l(a) - 1), a, pol);
    behavior null_pointer:                                                  // [SAGE-ATT-01]
      assumes o == \null || q == \null || k == \null || v == \null || a == \null || pol == \null;
      assigns \nothing;
      ensures status: \result == KVQ_E_PARAM;
    behavior bad_policy:
      assumes o != \null && q != \null && k != \null && v != \null && a != \null && pol != \null &&
              !kvq_policy_ok_l(pol);
      assigns \nothing;
      ensures status: \result == KVQ_E_PARAM;
    behavior bad_parameter:
      assumes o != \null && q != \null && k != \null && v != \null && a != \null && pol != \null &&
              kvq_policy_ok_l(pol) && !kvq_sage_attn_ok_l(a);
      assigns \nothing;
      ensures status: \result == KVQ_E_PARAM;
    behavior pipeline:
      assumes o != \null && q != \null && k != \null && v != \null && a != \null && pol != \null &&
              kvq_policy_ok_l(pol) && kvq_sage_attn_ok_l(a);
      assigns o[0 .. kvq_sage_attn_qn_l(a) - 1], __fc_heap_status;
      ensures status: \result == KVQ_OK || \result == KVQ_E_NONFINITE || \result == KVQ_E_PARAM ||
          \result == KVQ_E_NOMEM;
      ensures k_first: \result != KVQ_E_NOMEM && !kvq_sage_finite{Pre}(k, kvq_sage_attn_kn_l{Pre}(a)) ==>
          \result == KVQ_E_NONFINITE;                                       // [SAGE-SM-06]
      ensures k_range: \result != KVQ_E_NOMEM && kvq_sage_finite{Pre}(k, kvq_sage_attn_kn_l{Pre}(a)) &&
          !kvq_sage_small_l{Pre}(k, kvq_sage_attn_kn_l{Pre}(a)) ==> \result == KVQ_E_PARAM;
      ensures q_next: \result != KVQ_E_NOMEM && kvq_sage_finite{Pre}(k, kvq_sage_attn_kn_l{Pre}(a)) &&
          kvq_sage_small_l{Pre}(k, kvq_sage_attn_kn_l{Pre}(a)) && !kvq_sage_finite{Pre}(q, kvq_sage_attn_qn_l{Pre}(a)) ==>
          \result == KVQ_E_NONFINITE;
      ensures nothing_on_error: \result != KVQ_OK ==>
          \forall integer e; 0 <= e < kvq_sage_attn_qn_l(a) ==> o[e] == \old(o[e]);
    complete behaviors;
    disjoint behaviors;
*/
kvq_status kvq_sage_attention_variant(float *o, const float *q, const float *k, const float *v,
                                      const kvq_sage_attn *a, const kvq_policy *pol, uint32_t variant)
{
    if (!o || !q || !k || !v || !a || !pol || kvq_policy_check(pol) != KVQ_OK || !kvq_sage_attn_ok(a))
        return KVQ_E_PARAM;
    attn_work w;
    kvq_status st = prepare(&w, q, k, v, a, pol, variant);
    if (st == KVQ_OK) {
        float *out = malloc((size_t)a->nq * a->dim * sizeof(float));
        if (!out) {
            st = KVQ_E_NOMEM;
        } else {
            const uint64_t n = (uint64_t)a->nq * a->dim;
            /*@ loop invariant i_range: 0 <= i <= a->nq;
                loop assigns i, out[0 .. n - 1];
                loop variant a->nq - i;
            */
            for (uint32_t i = 0; i < a->nq; i++) core_row(out + (uint64_t)i * a->dim, &w, a, i, pol, variant);
            /*@ loop invariant e_range: 0 <= e <= n;
                loop assigns e, o[0 .. n - 1];
                loop variant n - e;
            */
            for (uint64_t e = 0; e < n; e++) o[e] = out[e];   /* the output, once every row is done */
            free(out);
        }
    }
    work_free(&w);
    return st;
}

/* The contract of kvq_sage_attention_variant, variant 0 (the same clauses). */
/*@ requires a_read: a == \null || \valid_read(a);
    requires pol_read: pol == \null || \valid_read(pol);
    requires tensors: a != \null && kvq_sage_attn_ok_l(a) ==>
        (o != \null ==> \valid(o + (0 .. kvq_sage_attn_qn_l(a) - 1))) &&
        (q != \null ==> \valid_read(q + (0 .. kvq_sage_attn_qn_l(a) - 1))) &&
        (k != \null ==> \valid_read(k + (0 .. kvq_sage_attn_kn_l(a) - 1))) &&
        (v != \null ==> \valid_read(v + (0 .. kvq_sage_attn_kn_l(a) - 1)));
    requires separated: a != \null && kvq_sage_attn_ok_l(a) ==>
        \separated(o + (0 .. kvq_sage_attn_qn_l(a) - 1), a, pol);
    behavior null_pointer:                                                  // [SAGE-ATT-01]
      assumes o == \null || q == \null || k == \null || v == \null || a == \null || pol == \null;
      assigns \nothing;
      ensures status: \result == KVQ_E_PARAM;
    behavior bad_policy:
      assumes o != \null && q != \null && k != \null && v != \null && a != \null && pol != \null &&
              !kvq_policy_ok_l(pol);
      assigns \nothing;
      ensures status: \result == KVQ_E_PARAM;
    behavior bad_parameter:
      assumes o != \null && q != \null && k != \null && v != \null && a != \null && pol != \null &&
              kvq_policy_ok_l(pol) && !kvq_sage_attn_ok_l(a);
      assigns \nothing;
      ensures status: \result == KVQ_E_PARAM;
    behavior pipeline:
      assumes o != \null && q != \null && k != \null && v != \null && a != \null && pol != \null &&
              kvq_policy_ok_l(pol) && kvq_sage_attn_ok_l(a);
      assigns o[0 .. kvq_sage_attn_qn_l(a) - 1], __fc_heap_status;
      ensures status: \result == KVQ_OK || \result == KVQ_E_NONFINITE || \result == KVQ_E_PARAM ||
          \result == KVQ_E_NOMEM;
      ensures k_first: \result != KVQ_E_NOMEM && !kvq_sage_finite{Pre}(k, kvq_sage_attn_kn_l{Pre}(a)) ==>
          \result == KVQ_E_NONFINITE;                                       // [SAGE-SM-06]
      ensures k_range: \result != KVQ_E_NOMEM && kvq_sage_finite{Pre}(k, kvq_sage_attn_kn_l{Pre}(a)) &&
          !kvq_sage_small_l{Pre}(k, kvq_sage_attn_kn_l{Pre}(a)) ==> \result == KVQ_E_PARAM;
      ensures q_next: \result != KVQ_E_NOMEM && kvq_sage_finite{Pre}(k, kvq_sage_attn_kn_l{Pre}(a)) &&
          kvq_sage_small_l{Pre}(k, kvq_sage_attn_kn_l{Pre}(a)) && !kvq_sage_finite{Pre}(q, kvq_sage_attn_qn_l{Pre}(a)) ==>
          \result == KVQ_E_NONFINITE;
      ensures nothing_on_error: \result != KVQ_OK ==>
          \forall integer e; 0 <= e < kvq_sage_attn_qn_l(a) ==> o[e] == \old(o[e]);
    complete behaviors;
    disjoint behaviors;
*/
kvq_status kvq_sage_attention(float *o, const float *q, const float *k, const float *v,
                              const kvq_sage_attn *a, const kvq_policy *pol)
{
    return kvq_sage_attention_variant(o, q, k, v, a, pol, KVQ_SAGE_ATTN_VAR_NONE);
}

/* ---- several heads, inputs of a named format [SAGE-MHA-01..04] ---------------------- */

int kvq_sage_in_exact(float x, uint32_t fmt)
{
    int ok = 1;
    if (!isfinite(x) || fmt == KVQ_SAGE_IN_BINARY32) return 1;
    if (fmt == KVQ_SAGE_IN_BFLOAT16) return kvq_bf16_exact(x);
    if (fmt == KVQ_SAGE_IN_BINARY16) (void)kvq_f16_bits(x, &ok);
    else ok = 0;
    return ok;
}

static int all_exact(const float *x, uint64_t n, uint32_t fmt)
{
    for (uint64_t e = 0; e < n; e++)
        if (!kvq_sage_in_exact(x[e], fmt)) return 0;
    return 1;
}

/* A copy of x converted to binary16, saturating (KVQ_SAGE_MHA_VAR_AS_BINARY16). */
static float *as_binary16(const float *x, uint64_t n)
{
    float *y = malloc((size_t)(n ? n : 1) * sizeof *y);
    int ov;
    for (uint64_t e = 0; y && e < n; e++) y[e] = isfinite(x[e]) ? kvq_round_f16(x[e], &ov) : x[e];
    return y;
}

kvq_status kvq_sage_attention_mha_variant(float *o, const float *q, const float *k, const float *v,
                                          const kvq_sage_attn *a, uint32_t hq, uint32_t hkv, uint32_t in_fmt,
                                          const kvq_policy *pol, uint32_t variant, uint32_t mha_variant)
{
    if (!o || !q || !k || !v || !a || !pol || kvq_policy_check(pol) != KVQ_OK || !kvq_sage_attn_ok(a) ||
        !kvq_sage_mha_ok(hq, hkv, in_fmt))
        return KVQ_E_PARAM;
    const uint64_t qe = (uint64_t)a->nq * a->dim, ke = (uint64_t)a->nk * a->dim;
    if (!all_exact(q, hq * qe, in_fmt) || !all_exact(k, hkv * ke, in_fmt) || !all_exact(v, hkv * ke, in_fmt))
        return KVQ_E_PARAM;
    float *qc = NULL, *kc = NULL, *vc = NULL;
    float *out = malloc((size_t)(hq * qe) * sizeof *out);
    kvq_status st = out ? KVQ_OK : KVQ_E_NOMEM;
    if (st == KVQ_OK && (mha_variant & KVQ_SAGE_MHA_VAR_AS_BINARY16)) {
        qc = as_binary16(q, hq * qe), kc = as_binary16(k, hkv * ke), vc = as_binary16(v, hkv * ke);
        if (!qc || !kc || !vc) st = KVQ_E_NOMEM;
        q = qc, k = kc, v = vc;
    }
    for (uint32_t h = 0; st == KVQ_OK && h < hq; h++) {
        const uint32_t g = mha_variant & KVQ_SAGE_MHA_VAR_HEAD_MOD ? h % hkv : kvq_sage_mha_kv_head(h, hq, hkv);
        st = kvq_sage_attention_variant(out + h * qe, q + h * qe, k + g * ke, v + g * ke, a, pol, variant);
    }
    if (st == KVQ_OK) memcpy(o, out, (size_t)(hq * qe) * sizeof *out);
    free(out), free(qc), free(kc), free(vc);
    return st;
}

kvq_status kvq_sage_attention_mha(float *o, const float *q, const float *k, const float *v,
                                  const kvq_sage_attn *a, uint32_t hq, uint32_t hkv, uint32_t in_fmt,
                                  const kvq_policy *pol)
{
    return kvq_sage_attention_mha_variant(o, q, k, v, a, hq, hkv, in_fmt, pol, KVQ_SAGE_ATTN_VAR_NONE, 0u);
}

/* ---- one channel of P~V through the accumulator and the buffer [SAGE-ACC-07] ---- */

static int pv_codes_ok(const uint8_t *x, uint64_t n, uint32_t fmt)
{
    for (uint64_t e = 0; e < n; e++) {
        const uint32_t v = x[e] & 0x7Fu;
        if (fmt == KVQ_SAGE_FP8_E4M3 ? v == 0x7Fu : v >= 0x7Cu) return 0;   /* NaN (E4M3), Inf/NaN (E5M2) */
    }
    return 1;
}

kvq_status kvq_sage_pv_check(const uint8_t *a, const uint8_t *b, const float *c, uint32_t rows, uint32_t n,
                             uint32_t fmt, uint32_t model, uint32_t buffer)
{
    if (!a || !b || !c || fmt > KVQ_SAGE_FP8_E5M2 || model > KVQ_SAGE_PV_MMA_SM90 ||
        (buffer != 0u && buffer != 64u && buffer != 128u))
        return KVQ_E_PARAM;
    if (rows == 0u || rows > KVQ_SAGE_PV_MAX_ROWS || n == 0u || n > KVQ_SAGE_PV_MAX_N) return KVQ_E_SHAPE;
    for (uint32_t r = 0; r < rows; r++)
        if (!isfinite(c[r])) return KVQ_E_NONFINITE;
    if (!pv_codes_ok(a, (uint64_t)rows * n, fmt) || !pv_codes_ok(b, (uint64_t)rows * n, fmt))
        return KVQ_E_NONFINITE;
    return KVQ_OK;
}

void kvq_sage_pv_run(float *d, const uint8_t *a, const uint8_t *b, const float *c, uint32_t rows, uint32_t n,
                     uint32_t fmt, const kvq_mma_model *m, uint32_t flush)
{
    for (uint32_t r = 0; r < rows; r++) {
        const uint8_t *ar = a + (uint64_t)r * n, *br = b + (uint64_t)r * n;
        uint32_t acc, buf = 0u;
        memcpy(&acc, &c[r], sizeof acc);
        for (uint32_t k0 = 0; k0 < n; k0 += 32u) {
            uint8_t x[32], y[32];
            for (uint32_t t = 0; t < 32u; t++) {
                x[t] = k0 + t < n ? ar[k0 + t] : 0u;
                y[t] = k0 + t < n ? br[k0 + t] : 0u;
            }
            acc = kvq_mma_dot(x, y, 32u, acc, fmt, m);
            const uint32_t done = k0 + 32u;
            if (flush != 0u && (done % flush == 0u || done >= n)) {
                float fb, fa;
                memcpy(&fb, &buf, sizeof fb);
                memcpy(&fa, &acc, sizeof fa);
                fb = fb + fa;                                   /* binary32, to nearest even */
                memcpy(&buf, &fb, sizeof buf);
                acc = 0u;
            }
        }
        const uint32_t res = flush != 0u ? buf : acc;
        memcpy(&d[r], &res, sizeof res);
    }
}

kvq_status kvq_sage_pv(float *d, const uint8_t *a, const uint8_t *b, const float *c, uint32_t rows, uint32_t n,
                       uint32_t fmt, uint32_t model, uint32_t buffer)
{
    kvq_status st = d ? kvq_sage_pv_check(a, b, c, rows, n, fmt, model, buffer) : KVQ_E_PARAM;
    if (st != KVQ_OK) return st;
    const kvq_mma_model m = model == KVQ_SAGE_PV_WGMMA ? kvq_mma_model_wgmma_fp8(fmt) : kvq_mma_model_mma_fp8_sm90();
    float *out = malloc((size_t)rows * sizeof *out);
    if (!out) return KVQ_E_NOMEM;
    kvq_sage_pv_run(out, a, b, c, rows, n, fmt, &m, buffer);
    memcpy(d, out, (size_t)rows * sizeof *out);
    free(out);
    return KVQ_OK;
}
