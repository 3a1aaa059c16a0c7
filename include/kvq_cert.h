/*
 * kvq_cert.h -- the CERT decode step, fast path (spec/cert.md): Phase-1
 * scoring, the selector, Phase 2, the certificate.  Included by kvq.h; the
 * CERT quantizers and annotations are declared there.
 */
#ifndef KVQ_CERT_H
#define KVQ_CERT_H

#include <math.h>

#include "kvq.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------
 * CERT decode step, fast path (spec/cert.md): Phase-1 scoring from the pinned
 * key reconstructions, block log-masses and their radius, the reference
 * selector, value promotion, the ranking, boundary and value checks, the
 * four-rung fallback ladder, Phase-2 attention with binary32 online softmax,
 * and the certificate; the host reference dense path of rung 4.
 * ------------------------------------------------------------------------- */

/* The quantized cache of one head and its binary16 originals (tier 2).  All
 * arrays sized as the quantizer calls above write them.  k, v are [n][d]: the
 * residual block is read from them, and Delta's extremes from k [CERT-K8-04]. */
typedef struct kvq_cert_cache {
    const float *k, *v;                  /* originals, binary16 values [CERT-L-01] */
    const int8_t *kcodes;                /* kvq_cert_quantize_keys */
    const float *sigma, *z;
    const uint8_t *vcodes;               /* kvq_cert_quantize_values */
    const float *vscale, *vzero;
    const float *eta, *nu;               /* kvq_cert_annotate (nb entries) */
} kvq_cert_cache;

/* Step parameters [CERT-SEL-03] [CERT-DUMP-03]: the selector, promotion, the
 * checks and the ladder.  Fill with kvq_cert_default_params() and override. */
typedef struct kvq_cert_params {
    float tau;                           /* 0 < tau <= 1 */
    uint32_t kmin, kmax;                 /* 1 <= kmin <= kmax */
    float vtol;                          /* >= 0 [CERT-PROM-01] [CERT-LAD-02] */
    float eps_guard;                     /* >= 0 [CERT-RANK-01] [CERT-BND-01] */
    float eps_dense;                     /* >= 0, may be +inf [CERT-LAD-02] */
    uint32_t r;                          /* >= 1 [CERT-RANK-01] */
    uint32_t promote_budget;             /* KVQ_CERT_PROMOTE_THRESHOLD or P [CERT-PROM-02] */
    uint32_t start_rung;                 /* 0..4: the ladder starts here [CERT-LAD-01] */
    uint32_t variant;                    /* KVQ_CERT_VARIANT_*: the Phase-2 algorithm [CERT-VAR-01] */
} kvq_cert_params;

/* The step variants [CERT-VAR-01..03]: paper (the paper's Algorithm 1, the
 * default: Phase 2 attends every block, with the binary16 keys of the
 * selected blocks and the pinned INT8 reconstructions of the others) and
 * sparse (Phase 2 attends the selected blocks only, with their INT8 keys).
 * Selection, promotion and the ranking and boundary checks are the same in
 * both; the attended set, E_key, E_val, E_arith and the value check differ. */
#define KVQ_CERT_VARIANT_PAPER  0u
#define KVQ_CERT_VARIANT_SPARSE 1u
#define KVQ_CERT_VARIANTS       2u

#define KVQ_CERT_PROMOTE_THRESHOLD 0xffffffffu /* promote_budget: the threshold rule */

#define KVQ_CERT_TAU_DEFAULT  0x1.fd70a4p-1f /* RN32(0.995) [CERT-SEL-03] */
#define KVQ_CERT_KMIN_DEFAULT 2u
#define KVQ_CERT_KMAX_DEFAULT 128u
#define KVQ_CERT_VTOL_DEFAULT 0x1.99999ap-5f /* RN32(0.05) */

/* The paper's defaults [CERT-SEL-03]: tau 0.995, Kmin 2, Kmax 128, v_tol 0.05,
 * r 1, eps_guard 0, eps_dense +inf, the threshold rule, start at rung 0, the
 * paper variant [CERT-VAR-01]. */
static inline kvq_cert_params kvq_cert_default_params(void)
{
    kvq_cert_params p;
    p.tau = KVQ_CERT_TAU_DEFAULT;
    p.kmin = KVQ_CERT_KMIN_DEFAULT;
    p.kmax = KVQ_CERT_KMAX_DEFAULT;
    p.vtol = KVQ_CERT_VTOL_DEFAULT;
    p.eps_guard = 0.0f;
    p.eps_dense = (float)INFINITY;
    p.r = 1u;
    p.promote_budget = KVQ_CERT_PROMOTE_THRESHOLD;
    p.start_rung = 0u;
    p.variant = KVQ_CERT_VARIANT_PAPER;
    return p;
}

/* A kernel's arithmetic declaration [CERT-AR-01]: U_exp, D, Nr. */
typedef struct kvq_cert_decl {
    float u_exp;                         /* exp error in ulps, 0 <= u_exp 2^-23 < 1 */
    uint32_t acc_depth;                  /* D >= 1, D 2^-24 < 1/2 */
    uint32_t rescales;                   /* Nr */
} kvq_cert_decl;

/* The declaration of the pinned dense sequence over nS tokens [CERT-AR-02]:
 * U_exp = 1 (glibc expf), Nr = nS - 1, D = 2 nS + 1. */
static inline kvq_cert_decl kvq_cert_pinned_decl(uint32_t ns)
{
    kvq_cert_decl d;
    d.u_exp = 1.0f;
    d.acc_depth = 2u * ns + 1u;
    d.rescales = ns > 0u ? ns - 1u : 0u;
    return d;
}

/* The certificate record [CERT-REC-01], frozen field order. */
typedef struct kvq_cert_record {
    uint32_t version, rung, n, d, k_sel, n_prom, checks;
    float delta, alpha_hat, vmax, ekey, ekey_paper, eval, earith, etotal;
} kvq_cert_record;

#define KVQ_CERT_CHECK_RANK     0x1u     /* [CERT-REC-01] checks bits */
#define KVQ_CERT_CHECK_BOUNDARY 0x2u
#define KVQ_CERT_CHECK_VALUE    0x4u
#define KVQ_CERT_CHECK_COVERAGE 0x8u

/* One decode step of one head, the ladder included (floating-point scoring).
 *   Phase 1: s~_i = RN32(scale * dot_i), dot_i the recursive binary32 sum of
 *     RN32(q_c k^_{i,c}) (k^ = fmaf(code, sigma, z) [CERT-K8-03]; originals in
 *     the residual block); w_i = expf(RN32(s~_i - m1)), m1 = max s~; block
 *     sums W~_b in token order; logmass[b] = L~_b = RN32(m1 + logf(W~_b))
 *     [CERT-LM-02] (logmass may be NULL).  *delta1 = an upper bound (RU32) of
 *     max_b |L~_b - L_b| [CERT-LM-02], +inf when some W~_b underflows so far
 *     that no finite radius can be stated.
 *   Selector [CERT-SEL-01]: full blocks by W~_b descending, ties to the lower
 *     index; K* the least k with RN32(C~_k / total) >= tau, K0 = K* clamped to
 *     [min(kmin, nq), min(kmax, nq)]; rungs 1-2 take K1 = min(2 K0, nq).
 *   Promotion [CERT-PROM-01..03]: at rungs 0-1 the selected full blocks with
 *     eta_b > vtol nu_b (decided exactly), or with promote_budget = P at most
 *     P of them, greatest W~_b eta_b first, ties to the lower index; at rung 2
 *     every selected full block.  Promoted blocks use the binary16 original
 *     values in Phase 2 (keys stay k^).
 *   Checks [CERT-RANK-01] [CERT-BND-01] [CERT-LAD-02]: evaluated from this
 *     path's own estimates, each accepted only if it holds for every L_b
 *     within the block's radius (<= delta1) of L~_b and for the exact Delta_b,
 *     so an accepted check holds exactly [CERT-CHK-01].  A rung <= 2 is
 *     accepted when all three pass; the ladder starts at start_rung.
 *   Phase 2: the pinned online softmax of [CERT-AR-02] in index order over
 *     the attended tokens [CERT-VAR-01]: with prm->variant = paper every
 *     token, scored from the binary16 original keys in the selected and
 *     residual blocks and keeping the Phase-1 score (k^) elsewhere; with
 *     sparse the selected tokens only, with their Phase-1 scores.  Values v^
 *     = fmaf(code, s, zv) [CERT-V4-02], originals in promoted and residual
 *     blocks.
 *   Rungs 3-4 [CERT-LAD-03]: kvq_cert_dense's pass (the same pinned sequence);
 *     rung 4 when its E_arith exceeds eps_dense or start_rung = 4.  sel is all
 *     1, prom all 0, k_sel = nq, n_prom = 0, E_key = E_val = 0, checks = 0
 *     [CERT-LAD-04].
 *   Certificate (rec): the accepted rung, its checks [CERT-REC-01], Delta by
 *     kvq_cert_delta; E_key of the variant ([CERT-EK-04] paper, [CERT-EK-01]
 *     sparse) with an upper bound of alpha^_T from the block sums; E_val
 *     [CERT-EV-01] with upper bounds of the Phase-2 masses; E_arith
 *     [CERT-AR-01] for *decl = kvq_cert_pinned_decl(nS), nS the attended
 *     tokens (n for paper); ekey_paper the paper's Eq. 15 term.
 *     Every bound is evaluated in binary64 with each operation moved one step
 *     outward (nextafter), each libm function two steps, and converted to
 *     binary32 upward: an upper bound of the exact path's sound value.
 * Errors: KVQ_E_PARAM (NULL, params out of [CERT-DUMP-03] ranges, vtol or
 * eps_guard infinite, r = 0, start_rung > 4, an unknown variant, scale),
 * KVQ_E_SHAPE,
 * KVQ_E_NONFINITE / KVQ_E_PARAM (q, k, v not binary16; bad metadata or
 * annotations), KVQ_E_NOMEM; nothing is written on error. */
/*@ requires shape_ok: \valid_read(shape) && kvq_cert_shape_l(shape->tokens, shape->dim);
    requires outs: \valid(out + (0 .. shape->dim - 1)) &&
        \valid(sel + (0 .. kvq_cert_blocks_l(shape->tokens) - 1)) &&
        \valid(prom + (0 .. kvq_cert_blocks_l(shape->tokens) - 1)) &&
        (logmass == \null || \valid(logmass + (0 .. kvq_cert_blocks_l(shape->tokens) - 1))) &&
        \valid(rec) && \valid(decl) && \valid(delta1);
    requires ins: \valid_read(q + (0 .. shape->dim - 1)) && \valid_read(cache) &&
        \valid_read(prm);
    requires separated: \separated(out + (0 .. shape->dim - 1),
        sel + (0 .. kvq_cert_blocks_l(shape->tokens) - 1),
        prom + (0 .. kvq_cert_blocks_l(shape->tokens) - 1), rec, decl, delta1);
    assigns out[0 .. shape->dim - 1], sel[0 .. kvq_cert_blocks_l(shape->tokens) - 1],
            prom[0 .. kvq_cert_blocks_l(shape->tokens) - 1],
            logmass[0 .. kvq_cert_blocks_l(shape->tokens) - 1], *rec, *decl, *delta1;
    ensures status: \result == KVQ_OK || \result == KVQ_E_PARAM ||
                    \result == KVQ_E_NONFINITE || \result == KVQ_E_NOMEM;
    ensures flags: \result == KVQ_OK ==>
        \forall integer b; 0 <= b < kvq_cert_blocks_l(shape->tokens) ==>
            (sel[b] == 0 || sel[b] == 1) && (prom[b] == 0 || prom[b] == 1);
    ensures prom_in_sel: \result == KVQ_OK ==>
        \forall integer b; 0 <= b < kvq_cert_blocks_l(shape->tokens) ==>
            prom[b] == 1 ==> sel[b] == 1 && b < shape->tokens / 16;      // [CERT-PROM-01]
    ensures residual: \result == KVQ_OK && shape->tokens % 16 != 0 ==>
        sel[shape->tokens / 16] == 1;                                     // [CERT-L-03]
    ensures rung: \result == KVQ_OK ==> prm->start_rung <= rec->rung <= 4; // [CERT-LAD-01]
    ensures k_sel: \result == KVQ_OK ==> rec->k_sel <= shape->tokens / 16 &&
        (rec->rung >= 3 ==> rec->k_sel == shape->tokens / 16) &&
        (rec->rung == 0 ==> rec->k_sel >= \min(prm->kmin, shape->tokens / 16) &&
                            rec->k_sel <= \min(prm->kmax, shape->tokens / 16)); // [CERT-SEL-02]
    ensures dense: \result == KVQ_OK && rec->rung >= 3 ==>
        rec->ekey == 0 && rec->eval == 0 && rec->n_prom == 0 && rec->checks == 0 &&
        \forall integer b; 0 <= b < kvq_cert_blocks_l(shape->tokens) ==>
            sel[b] == 1 && prom[b] == 0;                                  // [CERT-LAD-03]
    ensures radius: \result == KVQ_OK ==> *delta1 >= 0;                  // [CERT-LM-02]
*/
kvq_status kvq_cert_step(float *out, uint8_t *sel, uint8_t *prom, float *logmass,
                         kvq_cert_record *rec, kvq_cert_decl *decl, float *delta1,
                         const float *q, float scale, const kvq_cert_cache *cache,
                         const kvq_cert_params *prm, const kvq_cert_shape *shape);

/* One decode step from the binary16 K and V of a head, as a conformance
 * subject runs it: the fast path's key and value quantizers, the annotation,
 * then kvq_cert_step over the cache they built (no log-masses).  The status
 * is the first nonzero one of those calls; KVQ_E_NOMEM when the cache cannot
 * be allocated.  The built-in subject ref-fast and the CERT test subjects use
 * it (ref/fast/cert_step.c). */
kvq_status kvq_cert_step_kv(float *out, uint8_t *sel, uint8_t *prom, kvq_cert_record *rec,
                            kvq_cert_decl *decl, float *delta1, const float *q, float scale,
                            const float *k, const float *v, const kvq_cert_params *prm,
                            const kvq_cert_shape *shape, const kvq_policy *pol);

/* The host reference dense path (rung 4) [CERT-LAD-01] [CERT-LAD-03]: dense
 * attention over all n tokens with the binary16 originals k, v ([n][d]) by
 * the pinned sequence of [CERT-AR-02] (scores from the originals, one pass in
 * index order).  out: d binary32.  rec: rung 4, k_sel = nq, n_prom = 0,
 * checks = 0, delta = alpha_hat = ekey = ekey_paper = eval = 0, vmax an
 * upper bound (RU32 of a binary64 upper bound) of max ||v_i||, earith an
 * upper bound of [CERT-AR-01] for *decl = kvq_cert_pinned_decl(n), etotal =
 * earith.  Errors: KVQ_E_PARAM (NULL, scale), KVQ_E_SHAPE, KVQ_E_NONFINITE /
 * KVQ_E_PARAM (q, k, v not binary16), KVQ_E_NOMEM; nothing written on error. */
/*@ requires shape_ok: \valid_read(shape) && kvq_cert_shape_l(shape->tokens, shape->dim);
    requires outs: \valid(out + (0 .. shape->dim - 1)) && \valid(rec) && \valid(decl);
    requires ins: \valid_read(q + (0 .. shape->dim - 1)) &&
        \valid_read(k + (0 .. shape->tokens * shape->dim - 1)) &&
        \valid_read(v + (0 .. shape->tokens * shape->dim - 1));
    requires separated: \separated(out + (0 .. shape->dim - 1), rec, decl);
    assigns out[0 .. shape->dim - 1], *rec, *decl;
    ensures status: \result == KVQ_OK || \result == KVQ_E_PARAM ||
                    \result == KVQ_E_NONFINITE || \result == KVQ_E_NOMEM;
    ensures record: \result == KVQ_OK ==> rec->rung == 4 &&
        rec->k_sel == shape->tokens / 16 && rec->n_prom == 0 && rec->checks == 0 &&
        rec->ekey == 0 && rec->eval == 0 && rec->earith >= 0;            // [CERT-LAD-03]
    ensures decl: \result == KVQ_OK ==> decl->acc_depth == 2 * shape->tokens + 1 &&
        decl->rescales == shape->tokens - 1;                              // [CERT-AR-02]
*/
kvq_status kvq_cert_dense(float *out, kvq_cert_record *rec, kvq_cert_decl *decl, const float *q,
                          float scale, const float *k, const float *v,
                          const kvq_cert_shape *shape);

#ifdef __cplusplus
}
#endif
#endif /* KVQ_CERT_H */
