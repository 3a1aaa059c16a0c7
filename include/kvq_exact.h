/*
 * kvq_exact.h -- the exact path (GNU MPFR).
 *
 * Produces the expected values of every conformance vector and the sound
 * (outward-rounded) value of every bound.  All arithmetic is exact, or
 * correctly rounded onto the target format's grid straight from the exact
 * value (no double rounding), independent of the host's float unit.  No global
 * MPFR state is changed: the exponent range is never touched; subnormal grids
 * are reached by choosing the working precision.
 */
#ifndef KVQ_EXACT_H
#define KVQ_EXACT_H

#include <mpfr.h>

#include "kvq.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A binary floating-point storage format [POL-FMT-01]. */
typedef struct kvq_xfmt {
    int prec;     /* significand bits, hidden bit included */
    int emin_sub; /* the smallest subnormal is 2^(emin_sub - 1) in MPFR's exponent */
    int emax;     /* values of MPFR exponent > emax overflow (|v| >= 2^emax) */
} kvq_xfmt;

extern const kvq_xfmt kvq_xfmt_binary32;
extern const kvq_xfmt kvq_xfmt_binary16;

/* Working precision of exact intermediate results: wide enough that a sum or
 * product of two binary32 values, or c*s+z with c < 2^8, is exact. */
#define KVQ_XPREC 640

/* dst = RN_fmt(v): v rounded to nearest even onto fmt's grid in one step.
 * Returns 1 if the rounded magnitude overflows fmt (dst then holds the rounded
 * value, at least 2^emax), else 0.  dst must have precision >= fmt->prec. */
int kvq_exact_round(mpfr_t dst, const mpfr_t v, const kvq_xfmt *fmt);

/* dst = RN_fmt(a / b), b != 0, correctly rounded from the exact quotient.
 * Returns the overflow indication as kvq_exact_round does. */
int kvq_exact_div_round(mpfr_t dst, const mpfr_t a, const mpfr_t b, const kvq_xfmt *fmt);

/* RN_fmt of a binary32 value (e.g. RN16), as a binary32; *overflow as above. */
float kvq_exact_round_float(float v, const kvq_xfmt *fmt, int *overflow);

/* ---------------------------------------------------------------------------
 * KIVI (spec/kivi.md)
 * ------------------------------------------------------------------------- */

/* Everything the exact path says about one quantization.  Caller-owned arrays:
 * codes: kvq_kivi_code_bytes(shape); scale, zero: kvq_kivi_groups(shape);
 * deq, code_real, code_alt: kvq_kivi_elems(shape), row-major [T][D]. */
typedef struct kvq_exact_kivi_out {
    uint8_t *codes;      /* packed codes of the pinned binary32 sequence [KIVI-Q-04] */
    float *scale;        /* stored metadata (pinned; binary16 values under F16) */
    float *zero;
    float *deq;          /* RN32(code * scale + zero) of the pinned codes [KIVI-D-01] */
    uint8_t *code_real;  /* clamp(round(u)), u = (x - zero) / scale exactly [KIVI-B-01] */
    uint8_t *code_alt;   /* the other accepted code of a near-tie; == code_real if decisive */
    uint32_t flags;      /* events of the pinned sequence, plus KVQ_FLAG_AMBIGUOUS */
    uint64_t ambiguous;  /* number of ambiguous elements */
} kvq_exact_kivi_out;

/* Exact quantization of x under shape and policy, with the dequantization of
 * the pinned codes.  Same errors as the fast path's kvq_kivi_quantize followed
 * by kvq_kivi_dequantize of its outputs: under the NaN overflow policy an
 * overflowing dequantized value makes the call fail with KVQ_E_RANGE
 * [VEC-FMT-04].  On error nothing is written. */
kvq_status kvq_exact_kivi_quantize(kvq_exact_kivi_out *out, const float *x,
                                   const kvq_kivi_shape *shape, const kvq_policy *pol);

/* Bounded-level dequantization check [KIVI-B-03]: is |y - (code*s + z)| within
 * the bound of an evaluation with at most two binary32 roundings?  *bound (may
 * be NULL) receives that bound rounded upward to binary64, *err the error
 * rounded upward.  Exact comparison; returns 1 if within, 0 if not. */
int kvq_exact_kivi_deq_within(float y, uint32_t code, float s, float z, double *bound,
                              double *err);

/* RN32(code * s + z), the exact-level dequantized value [KIVI-D-01]; *overflow
 * is set when it overflows binary32 (the value returned is then +-FLT_MAX). */
float kvq_exact_kivi_deq(uint32_t code, float s, float z, int *overflow);


/* ---------------------------------------------------------------------------
 * CERT (spec/cert.md): quantizers, annotations, Delta and the key bound.
 * Errors as the fast path's calls (include/kvq.h); nothing written on error.
 * ------------------------------------------------------------------------- */

/* Everything the exact path says about the keys of one step.  Caller-owned
 * arrays: codes, code_real, code_alt: kvq_cert_key_code_bytes(shape) (token-major
 * blocks, as the fast path's codes); sigma, z: kvq_cert_key_meta_count(shape);
 * khat: 16 nq * d, row-major [16 nq][d]. */
typedef struct kvq_exact_cert_keys_out {
    int8_t *codes;       /* pinned codes [CERT-K8-02] */
    float *sigma;        /* pinned metadata [CERT-K8-01] */
    float *z;
    float *khat;         /* RN32(code sigma + z) of the pinned codes [CERT-K8-03] */
    int8_t *code_real;   /* clamp(round((k - z)/sigma), -128, 127), exact quotient [CERT-K8-06] */
    int8_t *code_alt;    /* the other accepted code of an ambiguous element, else code_real */
    uint32_t flags;      /* events of the pinned sequence, plus KVQ_FLAG_AMBIGUOUS */
    uint64_t ambiguous;  /* number of ambiguous elements */
} kvq_exact_cert_keys_out;

/* Exact quantization of the full key blocks [CERT-K8-01..06]. */
kvq_status kvq_exact_cert_quantize_keys(kvq_exact_cert_keys_out *out, const float *k,
                                        const kvq_cert_shape *shape, const kvq_policy *pol);

/* Exact quantization of the values of the 16 nq quantized tokens: the exact
 * KIVI path with bits 4, group 16, per token, binary16 metadata [CERT-V4-01];
 * out's arrays sized for kvq_cert_value_kivi_shape(shape).  With nq == 0
 * nothing is quantized (flags 0, KVQ_OK). */
kvq_status kvq_exact_cert_quantize_values(kvq_exact_kivi_out *out, const float *v,
                                          const kvq_cert_shape *shape, const kvq_policy *pol);

/* eta_b, nu_b [CERT-ANN-01..02] from the exact norms, rounded upward once
 * (MPFR RNDU onto the binary32 grid), from the stored codes and metadata. */
kvq_status kvq_exact_cert_annotate(float *eta, float *nu, const float *v, const uint8_t *codes,
                                   const float *scale, const float *zero,
                                   const kvq_cert_shape *shape);

/* Delta_b = RU32(scale sum_c |q_c| (sigma/2 + gamma)) evaluated exactly and
 * rounded upward once, Delta their maximum [CERT-DLT-01..02]; +inf above FLT_MAX. */
kvq_status kvq_exact_cert_delta(float *delta_b, float *delta, const float *q, float scale,
                                const float *k, const float *sigma, const float *z,
                                const kvq_cert_shape *shape);

/* RU32(gamma) of [CERT-K8-04] for one block-channel (l, u its extremes, sigma,
 * z the stored metadata); 0 for sigma == 0. */
float kvq_exact_cert_gamma(float l, float u, float sigma, float z);

/* The per-element key bound [CERT-K8-04], decided exactly:
 * |k - khat| <= sigma/2 + gamma (with_gamma != 0) or <= sigma/2 (with_gamma == 0).
 * Returns 1 if within, 0 if not (a non-finite khat is never within). */
int kvq_exact_cert_key_within(float k, float khat, float l, float u, float sigma, float z,
                              int with_gamma);

/* ---------------------------------------------------------------------------
 * CERT decode step (spec/cert.md): exact attention, log-masses, sound bounds
 * and the contract.  Every result is an enclosure computed with MPFR: scores
 * exactly (KVQ_XPREC), exp/ln/tanh and the softmax sums at KVQ_CERT_XPREC bits
 * with directed rounding (each bound rounded outward at every step), so a
 * returned bound is an upper bound of the exact real and a returned verdict is
 * decided, not estimated.
 * ------------------------------------------------------------------------- */

#define KVQ_CERT_XPREC 256

/* Sound E_key of the sparse variant [CERT-EK-01] for real Delta, alpha^, Vmax:
 * dst = 2 Vmax (A + (1 - A) tanh(Delta/2)), A the odds form of the paper's
 * Eq. 14, rounded toward rnd at every step (MPFR_RNDD:
 * a lower bound, MPFR_RNDU: an upper bound; the expression is increasing in
 * each argument, so an enclosure of the arguments gives one of the result). */
void kvq_exact_cert_ekey(mpfr_t dst, const mpfr_t delta, const mpfr_t alpha, const mpfr_t vmax,
                         mpfr_rnd_t rnd);

/* Sound E_key of the paper variant [CERT-EK-04] (mask-gated key precision:
 * the selected blocks scored exactly, the tail perturbed by at most Delta):
 * dst = 2 Vmax min(tanh(Delta/2), A (e^{2 Delta} + e^{Delta} - 2) / 2), A of
 * Eq. 14 in odds form (kvq_exact_cert_tail), directed as kvq_exact_cert_ekey. */
void kvq_exact_cert_ekey_gated(mpfr_t dst, const mpfr_t delta, const mpfr_t alpha,
                               const mpfr_t vmax, mpfr_rnd_t rnd);

/* A(alpha, Delta) = e^{2 Delta} alpha / (1 + (e^{2 Delta} - 1) alpha) [CERT-EK-01],
 * directed as kvq_exact_cert_ekey. */
void kvq_exact_cert_tail(mpfr_t dst, const mpfr_t delta, const mpfr_t alpha, mpfr_rnd_t rnd);

/* The paper's term [CERT-EK-02]: 2 Vmax e^{f Delta} alpha (e^{2 Delta} - 1),
 * f = 2 (fp scoring) or 3 (INT8 x INT8), directed as above. */
void kvq_exact_cert_ekey_paper(mpfr_t dst, const mpfr_t delta, const mpfr_t alpha,
                               const mpfr_t vmax, unsigned f, mpfr_rnd_t rnd);

/* Block log-masses L_b = ln sum_{i in b} exp(s^_i) [CERT-LM-01] of the
 * estimated scores (pinned k^ of cache's stored codes in full blocks, originals
 * in the residual block), enclosed: lo[b] <= L_b <= hi[b] (binary64, outward). */
kvq_status kvq_exact_cert_logmass(double *lo, double *hi, const float *q, float scale,
                                  const kvq_cert_cache *cache, const kvq_cert_shape *shape);

/* One check of the ladder decided exactly [CERT-CHK-01].  The margin is a real
 * number (nats), enclosed lo <= margin <= hi (binary64, outward; +-inf when
 * the check is vacuous or impossible).  pass: the exact check (1 passes, 0
 * fails, -1 the enclosure straddles the threshold); ok: the check passes or
 * fails by at most tol, i.e. margin >= -tol (with the strictness of the check
 * at 0), decided the same way: the kernel's claim that the check passed stands
 * iff ok == 1.  tol = 2 delta1 (4 delta1 for the value check), exact. */
typedef struct kvq_exact_cert_margin {
    double lo, hi, tol;
    int pass, ok;
} kvq_exact_cert_margin;

/* What the exact path says about the selection and the checks of one step
 * at rung 0, 1 or 2. */
typedef struct kvq_exact_cert_ladder_out {
    uint32_t k, kmin, kcap;          /* selected full blocks; clamp [CERT-SEL-02] item 1 */
    int clamp_ok;                    /* kmin <= k <= kcap */
    int cap;                         /* k == kcap (item 3's alternative) */
    double alpha_lo, alpha_hi;       /* alpha_lo <= alpha^_T <= alpha_hi [CERT-SEL-02] item 2 */
    /* ln odds(1 - tau) - ln odds(alpha^_T): coverage iff >= -2 delta1 [CERT-SEL-02] item 3 */
    kvq_exact_cert_margin coverage;
    /* lambda_r - U - eps_guard, passes iff > 0 (+inf when T is empty) [CERT-RANK-01] */
    kvq_exact_cert_margin rank;
    /* ln((1 - tau) e^{eps_guard}) - ln A(alpha^_T, Delta), passes iff >= 0 [CERT-BND-01] */
    kvq_exact_cert_margin boundary;
    /* ln(v_tol sum_S rho_b nu_b) - ln E_val, passes iff >= 0 (+inf when E_val = 0)
     * [CERT-LAD-02] */
    kvq_exact_cert_margin value;
    int selector_ok;                 /* clamp_ok and (coverage.ok == 1 or cap): 1, 0, -1 */
    uint32_t checks;                 /* [CERT-REC-01] bits of the exact checks that pass */
} kvq_exact_cert_ladder_out;

/* What the exact path says about one step with a given selection. */
typedef struct kvq_exact_cert_verdict {
    float delta, vmax;         /* exact Delta [CERT-DLT-02], Vmax [CERT-ANN-04] (recomputed) */
    float alpha_hat;           /* RU32 of the exact alpha^_T [CERT-SEL-02] */
    float ekey, eval, earith;  /* sound bounds, RU32 [CERT-EK-01] [CERT-EV-01] [CERT-AR-01] */
    float ekey_paper;          /* RU32 of [CERT-EK-02] (f = 2), informative */
    double err_lo, err_hi;     /* err_lo <= ||O_kernel - O_ref_exact|| <= err_hi */
    double margin;             /* <= (claimed ekey + eval + earith) - error, binary64 down */
    double margin_sound;       /* <= (sound ekey + eval + earith) - error */
    unsigned unsound;          /* bit 0 ekey, 1 eval, 2 earith: claim below sound [CERT-CON-02] */
    int holds;                 /* claimed sum: 1 error <= bound, 0 error > bound, -1 undecided */
    int holds_sound;           /* the same against the sound sum [CERT-CON-01] */
    /* The checks at rungs 0-2 (kvq_exact_cert_ladder), for callers that judge
     * a whole step (kvq cert); the checkers above leave them untouched. */
    int has_ladder;
    kvq_exact_cert_ladder_out ladder;
} kvq_exact_cert_verdict;

/* Contract checker [CERT-CON-01..02] for a step accepted at rung 0-2.  o: the
 * kernel's d binary32 outputs (finite); claim: its record (ekey, eval, earith
 * read); sel: nb flags (residual 1); prom: nb flags or NULL (no promotion);
 * decl: the kernel's U_exp, D, Nr; variant: KVQ_CERT_VARIANT_PAPER (Phase 2
 * over every token, original keys in the selected and residual blocks, E_key
 * of [CERT-EK-04], E_val and E_arith over all tokens) or _SPARSE (the
 * selected tokens with k^, [CERT-EK-01]) [CERT-VAR-01..03].  The exact path
 * recomputes eta, nu and Delta from the data (the cache's eta, nu are not
 * read).  ekey_paper is the paper's Eq. 15 term.  Errors as kvq_cert_step,
 * plus KVQ_E_PARAM for a bad selection, declaration or variant. */
kvq_status kvq_exact_cert_check(kvq_exact_cert_verdict *out, const float *o,
                                const kvq_cert_record *claim, const uint8_t *sel,
                                const uint8_t *prom, const float *q, float scale,
                                const kvq_cert_cache *cache, const kvq_cert_decl *decl,
                                uint32_t variant, const kvq_cert_shape *shape);

/* Dense rungs 3-4 [CERT-LAD-03]: the same checker with S = all tokens, exact
 * scores on the originals, original values, E_key = E_val = 0 (alpha_hat 0,
 * ekey_paper 0) and E_arith of [CERT-AR-01] for the dense pass (k^ = the
 * originals in eps_s, Vh = max ||v_i|| over all tokens, R_s from the exact
 * scores, nS = n).  delta and vmax are recomputed as for a sparse step (they
 * enter no bound here).  The contract: ||O_kernel - O_ref_exact|| <= E_arith;
 * a claim ekey or eval below 0 is unsound.  Errors as kvq_exact_cert_check. */
kvq_status kvq_exact_cert_check_dense(kvq_exact_cert_verdict *out, const float *o,
                                      const kvq_cert_record *claim, const float *q, float scale,
                                      const kvq_cert_cache *cache, const kvq_cert_decl *decl,
                                      const kvq_cert_shape *shape);

/* The exact checks of [CERT-SEL-02] (clamp, alpha^_T, coverage or cap),
 * [CERT-RANK-01], [CERT-BND-01] and the value check of [CERT-LAD-02] for a
 * given rung (0..2), selection sel (nb flags, residual 1), promotion prom (nb
 * flags or NULL), parameters prm (tau, kmin, kmax, vtol, eps_guard, r; the
 * promotion mode is not read) and Phase-1 radius delta1 (finite, >= 0).  Uses
 * the exact estimated scores (pinned k^ of cache's codes), exact L_b
 * [CERT-LM-01], exact Delta_b [CERT-DLT-01], exact eta_b, nu_b [CERT-ANN-01..02]
 * (recomputed; cache's eta, nu are not read) and the exact Phase-2 masses
 * rho_b [CERT-EV-01] of prm->variant (the value check sums over the attended
 * blocks: all for paper, the selection for sparse).  Errors as
 * kvq_exact_cert_check, plus KVQ_E_PARAM for a
 * rung above 2, a bad delta1 or bad parameters. */
kvq_status kvq_exact_cert_ladder(kvq_exact_cert_ladder_out *out, uint32_t rung,
                                 const uint8_t *sel, const uint8_t *prom, const float *q,
                                 float scale, const kvq_cert_cache *cache,
                                 const kvq_cert_params *prm, float delta1,
                                 const kvq_cert_shape *shape);

#ifdef __cplusplus
}
#endif
#endif /* KVQ_EXACT_H */
