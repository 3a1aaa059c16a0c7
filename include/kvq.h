/*
 * kvq.h -- public interface of kvq: status codes, the numeric-event flags word,
 * the numeric policy, and the fast (binary32) reference path of every quantizer.
 *
 * Plain C11; nvcc compiles it too.  Declarations, static inline helpers and ACSL
 * only: the header means the same under every -D.  Normative text: spec/.
 */
#ifndef KVQ_H
#define KVQ_H

#include <stddef.h>
#include <stdint.h>

#include "kvq_layout.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------
 * Status codes [API-STATUS-01].  KVQ_OK is 0; every other value is an error.
 * Numbers are frozen: they appear in results files and reports.
 * ------------------------------------------------------------------------- */
typedef enum kvq_status {
    KVQ_OK          = 0,  /* success */
    KVQ_E_NONFINITE = 1,  /* a NaN or an infinity among the inputs [POL-NF-01] */
    KVQ_E_SHAPE     = 2,  /* empty, ragged or non-multiple shape [KIVI-L-02] */
    KVQ_E_PARAM     = 3,  /* bad parameter: bit width, group size, null pointer */
    KVQ_E_RANGE     = 4,  /* a value overflows its format under the NaN overflow policy */
    KVQ_E_NOMEM     = 5,  /* allocation failed */
    KVQ_E_IO        = 6,  /* a file could not be read or written */
    KVQ_E_FORMAT    = 7,  /* malformed vector, results or dump file */
    KVQ_E_NODEVICE  = 8,  /* no usable GPU */
    KVQ_E_DEVICE    = 9,  /* a GPU call failed */
    KVQ_E_SUBJECT   = 10  /* a subject crashed, hung or broke its contract */
} kvq_status;

#define KVQ_STATUS_COUNT 11

/* Short English text for a status; never NULL (unknown values get a fixed text). */
const char *kvq_status_str(int status);
/* The status's stable name, e.g. "KVQ_E_SHAPE"; never NULL. */
const char *kvq_status_name(int status);

/* ---------------------------------------------------------------------------
 * Numeric-event flags [API-FLAGS-01].  A caller-supplied uint32_t collects the
 * OR of the events of one call.  Bit positions are frozen.
 * ------------------------------------------------------------------------- */
#define KVQ_FLAG_ZERO_SCALE 0x01u /* a group was degenerate: scale stored as 0 [POL-ZR-01] */
#define KVQ_FLAG_CLAMPED    0x02u /* a code was clamped into [0, 2^n-1] [KIVI-Q-05] */
#define KVQ_FLAG_SATURATED  0x04u /* a value overflowed its format and saturated [POL-OV-01] */
#define KVQ_FLAG_SUBNORMAL  0x08u /* a subnormal input was seen (and flushed under DAZ) [POL-SN-01] */
#define KVQ_FLAG_AMBIGUOUS  0x10u /* exact path only: an element's code is a near-tie [KIVI-B-02] */
#define KVQ_FLAG_ALL        0x1Fu

/* ---------------------------------------------------------------------------
 * Numeric policy [POL-01].  What vendors may legitimately do differently lives
 * here and only here; it is passed explicitly to every quantizer.
 * ------------------------------------------------------------------------- */
typedef enum kvq_ties {
    KVQ_TIES_EVEN = 0,          /* round half to even (default) [POL-TIE-01] */
    KVQ_TIES_AWAY = 1           /* round half away from zero (C roundf) [POL-TIE-02] */
} kvq_ties;

typedef enum kvq_overflow {
    KVQ_OVERFLOW_SATURATE = 0,  /* clamp to the largest finite value, flag SATURATED (default) */
    KVQ_OVERFLOW_NAN      = 1   /* fail with KVQ_E_RANGE; nothing is written */
} kvq_overflow;

typedef enum kvq_subnormal {
    KVQ_SUBNORMAL_KEEP = 0,     /* subnormal inputs are used as they are (default) */
    KVQ_SUBNORMAL_DAZ  = 1      /* subnormal inputs are read as zero of the same sign */
} kvq_subnormal;

typedef struct kvq_policy {
    uint32_t ties;       /* kvq_ties */
    uint32_t overflow;   /* kvq_overflow */
    uint32_t subnormal;  /* kvq_subnormal */
} kvq_policy;

/* The default policy: ties to even, saturate, keep subnormals. */
extern const kvq_policy kvq_policy_default;

/* KVQ_OK if every field holds a defined value, KVQ_E_PARAM otherwise. */
kvq_status kvq_policy_check(const kvq_policy *pol);

/* ---------------------------------------------------------------------------
 * KIVI asymmetric group quantizer, fast path (spec/kivi.md).
 *
 * x is a row-major [tokens][channels] binary32 tensor of one head.  The layout
 * (include/kvq_layout.h) maps groups and elements; codes are packed LSB first.
 * scale[] and zero[] hold one entry per group; under KVQ_META_F16 each holds a
 * binary16 value widened to binary32.  On any error nothing is written.
 * ------------------------------------------------------------------------- */

/* Quantize x into codes/scale/zero.  flags (may be NULL) receives the OR of the
 * call's events.  [KIVI-Q-01..08] */
kvq_status kvq_kivi_quantize(uint8_t *codes, float *scale, float *zero, uint32_t *flags,
                             const float *x, const kvq_kivi_shape *shape,
                             const kvq_policy *pol);

/* Dequantize codes/scale/zero into y (row-major [tokens][channels]).  [KIVI-D-01..03] */
kvq_status kvq_kivi_dequantize(float *y, uint32_t *flags,
                               const uint8_t *codes, const float *scale, const float *zero,
                               const kvq_kivi_shape *shape, const kvq_policy *pol);

/* One group: the quantizer's arithmetic core [KIVI-Q-01..08].  v[i*stride],
 * i < group, are the group's values (assumed finite: the tensor calls check);
 * grp receives the group's group*bits/8 packed code bytes, *scale and *zero the
 * stored metadata.  *flags is OR-ed with the group's events.  Returns KVQ_OK, or
 * KVQ_E_RANGE when a value overflows under the NaN overflow policy (then
 * nothing is written). */
/*@ // Shape of the arguments of one group (the tensor calls establish it).
    predicate kvq_group_args(uint32_t group, uint32_t bits, uint32_t meta) =
        kvq_valid_bits(bits) && 8 <= group <= KVQ_MAX_GROUP && group % 8 == 0 &&
        (meta == KVQ_META_F32 || meta == KVQ_META_F16);
    // Values v[i*stride], i < group: readable and finite.
    // (Element 0 is also stated on its own: provers do not match v + 0*stride.)
    predicate kvq_group_in{L}(float *v, size_t stride, integer group) =
        \valid_read(v) && \is_finite(*v) &&
        \forall integer i; 0 <= i < group ==>
            \valid_read(v + i * stride) && \is_finite(v[i * stride]);
    // A stored scale: 0 (zero range) or at least the smallest normal of its format.
    predicate kvq_scale_form(real s, uint32_t meta) =
        s == 0 || s >= (meta == KVQ_META_F16 ? 0x1p-14 : 0x1p-126);
*/

/*@ requires args: kvq_group_args(group, bits, meta);
    requires stride_range: 1 <= stride <= KVQ_MAX_ELEMS;
    requires input: kvq_group_in(v, stride, group);                // [POL-NF-01]
    requires out: \valid(grp + (0 .. group * bits / 8 - 1)) && \valid(scale) &&
                  \valid(zero) && \valid(flags);
    requires policy: \valid_read(pol);
    requires separated: \separated(grp + (0 .. group * bits / 8 - 1), scale, zero, flags,
                                    pol, v + (0 .. (group - 1) * stride));
    requires separated_meta: \separated(scale, zero, flags, pol);
    assigns grp[0 .. group * bits / 8 - 1], *scale, *zero, *flags;
    ensures status: \result == KVQ_OK || \result == KVQ_E_RANGE;
    ensures range_policy: \result == KVQ_E_RANGE ==> pol->overflow == KVQ_OVERFLOW_NAN; // [POL-OV-02]
    ensures nothing_on_error: \result != KVQ_OK ==>
        *scale == \old(*scale) && *zero == \old(*zero) && *flags == \old(*flags) &&
        \forall integer k; 0 <= k < group * bits / 8 ==> grp[k] == \old(grp[k]);
    ensures code_range: \result == KVQ_OK ==> \forall integer i; 0 <= i < group ==>
        0 <= kvq_code_l(grp, i, bits) <= kvq_code_max_l(bits);   // [KIVI-Q-05]
    ensures meta_finite: \result == KVQ_OK ==> \is_finite(*scale) && \is_finite(*zero);
    ensures scale_form: \result == KVQ_OK ==> kvq_scale_form(*scale, meta); // [POL-ZR-01]
    ensures scale_nonneg: \result == KVQ_OK ==> *scale >= 0;                // [KIVI-Q-02]
    ensures zero_range: \result == KVQ_OK && *scale == 0 ==>
        \forall integer i; 0 <= i < group ==> kvq_code_l(grp, i, bits) == 0; // [POL-ZR-01]
*/
kvq_status kvq_kivi_quantize_group(uint8_t *grp, float *scale, float *zero, uint32_t *flags,
                                   const float *v, size_t stride, uint32_t group,
                                   uint32_t bits, uint32_t meta, const kvq_policy *pol);

/* Round-to-binary16 of a binary32 value as the spec pins it [POL-F16-01]:
 * round to nearest even onto the binary16 grid; *overflow set to 1 when the
 * result would exceed 65504 in magnitude (the value returned is then +-65504). */
/*@ requires finite: \is_finite(v);
    requires out: \valid(overflow);
    assigns *overflow;
    ensures overflow_flag: *overflow == 0 || *overflow == 1;
    ensures finite_result: \is_finite(\result);
    ensures bounded: -0x1.ffcp+15 <= \result <= 0x1.ffcp+15;   // [POL-F16-02]
    ensures sign: v >= 0 ==> \result >= 0;
*/
float kvq_round_f16(float v, int *overflow);

/*@ // ---- the pinned roundings, on reals [POL-TIE-01..02] --------------------
    // RN32 of a real (binary32, to nearest even).
    logic real kvq_rn32_l(real v) = (real)\round_float(\NearestEven, v);
    // v is within the finite binary32 range (RN32(v) is finite).
    predicate kvq_in_f32_l(real v) = -0x1.fffffep127 <= v <= 0x1.fffffep127;
    // The step above floor(q) of q = floor(q) + d, 0 <= d < 1: 1 past the
    // midpoint, 0 below it; at the midpoint 1 for ties away (ties == 1,
    // KVQ_TIES_AWAY), else 1 only when floor(q) is odd (ties to even).
    logic integer kvq_round_up_l(real d, integer i, integer ties) =
        d > 0.5 ? 1 : d < 0.5 ? 0 : ties == 1 ? 1 : (i % 2 == 0 ? 0 : 1);
    logic integer kvq_round_nonneg_l(real q, integer ties) =
        \floor(q) + kvq_round_up_l(q - \floor(q), \floor(q), ties);
    // Round to integer by the tie rule; both rules are odd functions of q.
    logic integer kvq_round_ties_l(real q, integer ties) =
        q >= 0 ? kvq_round_nonneg_l(q, ties) : -kvq_round_nonneg_l(-q, ties);
    logic integer kvq_rne_l(real q) = kvq_round_ties_l(q, 0);
    logic integer kvq_rna_l(real q) = kvq_round_ties_l(q, 1);
    // A value past c + 1 rounds past c, one below -1 below 0, under either rule
    // (proved: run `lemmas`); the clamps of code_of and key_code use them.
    lemma kvq_round_ties_above: \forall real q, integer t, integer c;
        q > c + 1 ==> kvq_round_ties_l(q, t) > c;
    lemma kvq_round_ties_below: \forall real q, integer t, integer c;
        q < c - 1 ==> kvq_round_ties_l(q, t) < c;
    logic integer kvq_clamp_l(integer k, integer lo, integer hi) = k < lo ? lo : k > hi ? hi : k;
    // The KIVI code of x against stored scale s and zero z [KIVI-Q-04..05]:
    // clamp(round(RN32(RN32(x - z) / s)), 0, 2^bits - 1), 0 when s == 0 [POL-ZR-01].
    // The quotient RN32(RN32(x - z) / s) of the KIVI and CERT codes, and when it is
    // the binary32 computation's (x - z and the quotient within the finite range).
    logic real kvq_quot_l(real x, real s, real z) = kvq_rn32_l(kvq_rn32_l(x - z) / s);
    predicate kvq_quot_ok_l(real x, real s, real z) =
        kvq_in_f32_l(x - z) && kvq_in_f32_l(kvq_rn32_l(x - z) / s);
    logic integer kvq_kivi_code_l(real x, real s, real z, integer bits, integer ties) =
        s == 0 ? 0 : kvq_clamp_l(kvq_round_ties_l(kvq_quot_l(x, s, z), ties), 0, kvq_code_max_l(bits));
*/

/* Round half to even (or away, by ties) of a finite binary32 value with
 * |q| < 2^31, as an integer. [POL-TIE-01] */
/*@ requires finite: \is_finite(q);
    requires range: -0x1p31 < q < 0x1p31;
    assigns \nothing;
    ensures value: \result == kvq_round_ties_l(q, ties);          // [POL-TIE-01..02]
    ensures nearest: \abs(q - \result) <= 0.5;                    // [POL-TIE-01]
    ensures tie_even: ties != 1 && \abs(q - \result) == 0.5 ==> \result % 2 == 0;
    ensures tie_away: ties == 1 && \abs(q - \result) == 0.5 ==> \abs(\result) > \abs(q);
    ensures near: q - 1 <= \result <= q + 1;                     // [POL-TIE-01]
    ensures result_range: -0x1p31 <= \result <= 0x1p31;
    behavior nonneg:
      assumes q >= 0;
      ensures floor_or_next: \floor(q) <= \result <= \floor(q) + 1;
    behavior negative:
      assumes q < 0;
      ensures ceil_or_prev: \ceil(q) - 1 <= \result <= \ceil(q);
    complete behaviors;
    disjoint behaviors;
*/
int64_t kvq_round_int(float q, uint32_t ties);

/* ---------------------------------------------------------------------------
 * Residual window (KIVI streaming) [KIVI-W-01..05]
 * ------------------------------------------------------------------------- */
typedef struct kvq_kivi_window {
    uint32_t grouping;   /* KVQ_GROUP_CHANNEL (keys) or KVQ_GROUP_TOKEN (values) */
    uint32_t group;      /* G */
    uint32_t residual;   /* R, a positive multiple of G */
    uint32_t quantized;  /* tokens already quantized (the oldest ones) */
    uint32_t pending;    /* tokens held in full precision after them */
} kvq_kivi_window;

/*@ // The integer invariant of a residual window [KIVI-W-01..05].
    predicate kvq_window_inv(kvq_kivi_window w) =
        (w.grouping == KVQ_GROUP_CHANNEL || w.grouping == KVQ_GROUP_TOKEN) &&
        w.group > 0 && w.residual > 0 && w.residual % w.group == 0 &&
        w.quantized + w.pending <= UINT32_MAX &&
        (w.grouping == KVQ_GROUP_CHANNEL ==>
            w.quantized % w.residual == 0 && w.pending < w.residual) &&      // [KIVI-W-02]
        (w.grouping == KVQ_GROUP_TOKEN ==>
            w.pending <= w.residual && (w.quantized > 0 ==> w.pending == w.residual)); // [KIVI-W-03]
*/

/* Set up a window for a prefill of `tokens` tokens: on return w->quantized tokens
 * are to be quantized now and w->pending stay in full precision. */
/*@ requires w_ok: w == \null || \valid(w);
    assigns *w;
    behavior bad:
      assumes w == \null || (grouping != KVQ_GROUP_CHANNEL && grouping != KVQ_GROUP_TOKEN) ||
              group == 0 || residual == 0 || residual % group != 0;
      assigns \nothing;
      ensures param: \result == KVQ_E_PARAM;
    behavior ok:
      assumes w != \null && (grouping == KVQ_GROUP_CHANNEL || grouping == KVQ_GROUP_TOKEN) &&
              group != 0 && residual != 0 && residual % group == 0;
      ensures status: \result == KVQ_OK;
      ensures invariant: kvq_window_inv(*w);
      ensures seen: w->quantized + w->pending == tokens;            // [KIVI-W-01]
      ensures fields: w->grouping == grouping && w->group == group && w->residual == residual;
      ensures pending: w->pending ==
          kvq_residual_after_prefill_l(grouping, residual, tokens);
    complete behaviors;
    disjoint behaviors;
*/
kvq_status kvq_kivi_window_prefill(kvq_kivi_window *w, uint32_t grouping, uint32_t group,
                                   uint32_t residual, uint32_t tokens);

/* Append one decoded token.  *first and *count receive the range of token
 * indices to quantize now (count 0: nothing).  History is never requantized. */
/*@ requires ptrs: (w == \null || \valid(w)) && (first == \null || \valid(first)) &&
                   (count == \null || \valid(count));
    requires separated: w != \null && first != \null && count != \null ==>
                        \separated(w, first, count);
    assigns *w, *first, *count;
    behavior null_arg:
      assumes w == \null || first == \null || count == \null;
      assigns \nothing;
      ensures param: \result == KVQ_E_PARAM;
    behavior full:
      assumes w != \null && first != \null && count != \null;
      assumes w->quantized + w->pending >= UINT32_MAX;
      assigns \nothing;
      ensures shape: \result == KVQ_E_SHAPE;
    behavior ok:
      assumes w != \null && first != \null && count != \null;
      assumes w->quantized + w->pending < UINT32_MAX;
      requires invariant: kvq_window_inv(*w);
      ensures status: \result == KVQ_OK;
      ensures invariant: kvq_window_inv(*w);
      ensures seen: w->quantized + w->pending == \old(w->quantized + w->pending) + 1;
      ensures first: *first == \old(w->quantized);
      ensures count: w->quantized == \old(w->quantized) + *count;   // history never requantized
      ensures fields: w->grouping == \old(w->grouping) && w->group == \old(w->group) &&
                      w->residual == \old(w->residual);
      ensures per_channel: w->grouping == KVQ_GROUP_CHANNEL ==>
          *count == 0 || *count == w->residual;                     // [KIVI-W-02]
      ensures per_token: w->grouping == KVQ_GROUP_TOKEN ==> *count <= 1; // [KIVI-W-03]
    complete behaviors;
    disjoint behaviors;
*/
kvq_status kvq_kivi_window_append(kvq_kivi_window *w, uint32_t *first, uint32_t *count);


/* ---------------------------------------------------------------------------
 * CERT quantizers and annotations, fast path (spec/cert.md).
 *
 * Inputs are row-major [n][d] binary16 values held as binary32, shape
 * kvq_cert_shape (include/kvq_layout.h owns every index map).  The tensor calls
 * check, in this order and before writing anything [CERT-K8-05] [API-ERR-01]:
 * NULL pointers, the policy and scalar parameters (KVQ_E_PARAM), the shape
 * [CERT-L-01] (KVQ_E_SHAPE), a NaN or infinity among the inputs
 * (KVQ_E_NONFINITE), an input that is not a binary16 number (KVQ_E_PARAM)
 * [CERT-L-02].  Every input token is checked, the residual block's included;
 * only the nq full blocks are quantized [CERT-L-03].  Only the policy's tie
 * rule acts on CERT (the overflow and subnormal fields are validated and have
 * no effect [CERT-L-02]).  flags (may be NULL) receives the OR of the call's
 * events: ZERO_SCALE and CLAMPED only.
 * ------------------------------------------------------------------------- */

/*@ // A binary16 number held as binary32: finite, |v| <= 65504, on the 2^-24 grid
    // with 11 significant bits [CERT-L-02].
    predicate kvq_is_f16_l(real v) =
        -65504 <= v <= 65504 &&
        (\exists integer m, e; -24 <= e <= 5 && -2048 < m < 2048 && v == m * \pow(2, e));
*/


/* 1 iff v is a binary16 number (finite and exactly representable) [CERT-L-02]. */
/*@ assigns \nothing;
    ensures bool: \result == 0 || \result == 1;
    ensures f16_range: \result == 1 ==> \is_finite(v) && -65504 <= v <= 65504;
    ensures def: \result == 1 <==> \is_finite(v) && kvq_is_f16_l(v);
*/
int kvq_cert_is_f16(float v);

/* One key block: the arithmetic core [CERT-K8-01..02].  k[i*d + c], i < 16,
 * c < d, are the block's keys (binary16 values: the tensor call checks); codes
 * receives the 16 d token-major codes, sigma[c], z[c] the stored metadata.
 * *flags is OR-ed with the block's events. */
/*@ requires shape: 16 <= d <= 512 && d % 16 == 0;
    requires input: \valid_read(k + (0 .. 16 * d - 1)) &&
        \forall integer e; 0 <= e < 16 * d ==> \is_finite(k[e]) && kvq_is_f16_l(k[e]);
    requires out: \valid(codes + (0 .. 16 * d - 1)) && \valid(sigma + (0 .. d - 1)) &&
                  \valid(z + (0 .. d - 1)) && \valid(flags) && \valid_read(pol);
    requires separated: \separated(codes + (0 .. 16 * d - 1), sigma + (0 .. d - 1),
                                    z + (0 .. d - 1), flags, pol, k + (0 .. 16 * d - 1));
    assigns codes[0 .. 16 * d - 1], sigma[0 .. d - 1], z[0 .. d - 1], *flags;
    ensures status: \result == KVQ_OK;
    ensures code_range: \forall integer e; 0 <= e < 16 * d ==>
        -128 <= codes[e] <= 127;                                          // [CERT-K8-02]
    ensures sigma_form: \forall integer c; 0 <= c < d ==>
        \is_finite(sigma[c]) && (sigma[c] == 0 || sigma[c] >= 0x1p-126); // [CERT-K8-01]
    ensures z_finite: \forall integer c; 0 <= c < d ==> \is_finite(z[c]);
    ensures zero_range: \forall integer c, i; 0 <= c < d && 0 <= i < 16 && sigma[c] == 0 ==>
        codes[i * d + c] == 0 && z[c] == k[c];                            // [CERT-K8-01]
*/
kvq_status kvq_cert_quantize_key_block(int8_t *codes, float *sigma, float *z, uint32_t *flags,
                                       const float *k, uint32_t d, const kvq_policy *pol);

/* Quantize the full blocks of the key tensor k [n][d]: codes (kvq_cert_key_code_bytes),
 * sigma and z (kvq_cert_key_meta_count each).  [CERT-K8-01..05] */
/*@ requires ptrs_ok: \valid_read(shape) && \valid_read(pol) && (flags == \null || \valid(flags));
    assigns codes[0 .. kvq_cert_key_block_bytes_l(shape) - 1], sigma[..], z[..], *flags;
    behavior bad_param:
      assumes codes == \null || sigma == \null || z == \null || k == \null ||
              shape == \null || pol == \null;
      assigns \nothing;
      ensures param: \result == KVQ_E_PARAM;
    behavior bad_shape:
      assumes codes != \null && sigma != \null && z != \null && k != \null &&
              shape != \null && pol != \null && !kvq_cert_shape_l(shape->tokens, shape->dim);
      ensures shape_or_param: \result == KVQ_E_SHAPE || \result == KVQ_E_PARAM;
    behavior good:
      assumes codes != \null && sigma != \null && z != \null && k != \null &&
              shape != \null && pol != \null && kvq_cert_shape_l(shape->tokens, shape->dim);
      ensures status: \result == KVQ_OK || \result == KVQ_E_PARAM ||
                      \result == KVQ_E_NONFINITE;                          // [CERT-K8-05]
      ensures code_range: \result == KVQ_OK ==>
          \forall integer e; 0 <= e < (shape->tokens / 16) * 16 * shape->dim ==>
              -128 <= codes[e] <= 127;                                    // [CERT-K8-02]
      ensures flags_events: \result == KVQ_OK && flags != \null ==>
          (*flags & ~(KVQ_FLAG_ZERO_SCALE | KVQ_FLAG_CLAMPED)) == 0;      // [CERT-K8-05]
    complete behaviors;
    disjoint behaviors;
*/
kvq_status kvq_cert_quantize_keys(int8_t *codes, float *sigma, float *z, uint32_t *flags,
                                  const float *k, const kvq_cert_shape *shape,
                                  const kvq_policy *pol);

/* Pinned reconstruction k^ = fmaf(code, sigma, z) of the full blocks into
 * khat [16 nq][d] [CERT-K8-03].  Stored metadata must be finite
 * (KVQ_E_NONFINITE) with sigma +0 or a normal binary32 >= 2^-126 (KVQ_E_PARAM);
 * a reconstruction that overflows binary32 fails with KVQ_E_RANGE.  Nothing is
 * written on error. */
/*@ requires ptrs_ok: shape == \null || \valid_read(shape);
    assigns khat[..];
    behavior bad_param:
      assumes khat == \null || codes == \null || sigma == \null || z == \null || shape == \null;
      assigns \nothing;
      ensures param: \result == KVQ_E_PARAM;
    behavior other:
      assumes khat != \null && codes != \null && sigma != \null && z != \null && shape != \null;
      ensures status: \result == KVQ_OK || \result == KVQ_E_SHAPE || \result == KVQ_E_PARAM ||
                      \result == KVQ_E_NONFINITE || \result == KVQ_E_RANGE;
    complete behaviors;
    disjoint behaviors;
*/
kvq_status kvq_cert_dequantize_keys(float *khat, const int8_t *codes, const float *sigma,
                                    const float *z, const kvq_cert_shape *shape);

/* Quantize the values of the 16 nq quantized tokens of v [n][d] by KIVI with
 * bits 4, group 16, per token, binary16 metadata [CERT-V4-01]: codes
 * (kvq_cert_value_code_bytes), scale and zero (kvq_cert_value_groups entries,
 * binary16 values held as binary32). */
/*@ requires ptrs_ok: shape == \null || \valid_read(shape);
    assigns codes[..], scale[..], zero[..], *flags;
    behavior bad_param:
      assumes codes == \null || scale == \null || zero == \null || v == \null ||
              shape == \null || pol == \null;
      assigns \nothing;
      ensures param: \result == KVQ_E_PARAM;
    behavior other:
      assumes codes != \null && scale != \null && zero != \null && v != \null &&
              shape != \null && pol != \null;
      ensures status: \result == KVQ_OK || \result == KVQ_E_SHAPE || \result == KVQ_E_PARAM ||
                      \result == KVQ_E_NONFINITE;
      ensures code_range: \result == KVQ_OK ==>
          \forall integer g, i; 0 <= g < (shape->tokens / 16) * shape->dim / 16 && 0 <= i < 16 ==>
              0 <= kvq_code_l(codes + 8 * g, i, 4) <= 15;                 // [CERT-V4-01]
      ensures scale_form: \result == KVQ_OK ==>
          \forall integer g; 0 <= g < (shape->tokens / 16) * shape->dim / 16 ==>
              (scale[g] == 0 || scale[g] >= 0x1p-14);                     // [POL-ZR-01]
    complete behaviors;
    disjoint behaviors;
*/
kvq_status kvq_cert_quantize_values(uint8_t *codes, float *scale, float *zero, uint32_t *flags,
                                    const float *v, const kvq_cert_shape *shape,
                                    const kvq_policy *pol);

/* v^ = fmaf(code, s, zv) of the quantized tokens into vhat [16 nq][d]
 * [CERT-V4-02].  Stored metadata must be binary16 numbers (KVQ_E_NONFINITE /
 * KVQ_E_PARAM) with s +0 or >= 2^-14.  Nothing is written on error. */
/*@ requires ptrs_ok: shape == \null || \valid_read(shape);
    assigns vhat[..];
    behavior bad_param:
      assumes vhat == \null || codes == \null || scale == \null || zero == \null ||
              shape == \null;
      assigns \nothing;
      ensures param: \result == KVQ_E_PARAM;
    behavior other:
      assumes vhat != \null && codes != \null && scale != \null && zero != \null &&
              shape != \null;
      ensures status: \result == KVQ_OK || \result == KVQ_E_SHAPE || \result == KVQ_E_PARAM ||
                      \result == KVQ_E_NONFINITE;
    complete behaviors;
    disjoint behaviors;
*/
kvq_status kvq_cert_dequantize_values(float *vhat, const uint8_t *codes, const float *scale,
                                      const float *zero, const kvq_cert_shape *shape);

/* Block annotations [CERT-ANN-01..02], eta[b] and nu[b] for b < nb:
 *   eta_b = RU32(max_i ||v_i - v^_i||) over the block's tokens (v^ the pinned
 *           dequantization of the stored codes/metadata); +0 for the residual block;
 *   nu_b  = RU32(max_i ||v_i||) over the block's original values.
 * Method: the exact integer method of bounds/cert.md §2 (2^24 v and 2^24 v^ are
 * integers; sums of squares in 128-bit integer arithmetic built from uint64_t
 * halves; the least binary32 y with y^2 >= N found by exact comparison), so
 * the results are the correctly rounded upward values, bit for bit the exact
 * path's.  Errors as kvq_cert_quantize_values for v, and as
 * kvq_cert_dequantize_values for the metadata. */
/*@ requires ptrs_ok: shape == \null || \valid_read(shape);
    assigns eta[..], nu[..];
    behavior bad_param:
      assumes eta == \null || nu == \null || v == \null || codes == \null || scale == \null ||
              zero == \null || shape == \null;
      assigns \nothing;
      ensures param: \result == KVQ_E_PARAM;
    behavior other:
      assumes eta != \null && nu != \null && v != \null && codes != \null && scale != \null &&
              zero != \null && shape != \null;
      ensures status: \result == KVQ_OK || \result == KVQ_E_SHAPE || \result == KVQ_E_PARAM ||
                      \result == KVQ_E_NONFINITE;
      ensures nonneg: \result == KVQ_OK ==>
          \forall integer b; 0 <= b < kvq_cert_blocks_l(shape->tokens) ==>
              eta[b] >= 0 && nu[b] >= 0;                                  // [CERT-ANN-01]
    complete behaviors;
    disjoint behaviors;
*/
kvq_status kvq_cert_annotate(float *eta, float *nu, const float *v, const uint8_t *codes,
                             const float *scale, const float *zero, const kvq_cert_shape *shape);

/* Delta [CERT-DLT-01..02]: delta_b[b] >= scale * sum_c |q_c| (sigma_{b,c}/2 + gamma_{b,c})
 * for the full blocks, delta_b[nq] = +0 for a residual block, *delta = the
 * maximum (+0 when nq == 0); gamma of [CERT-K8-04] from the original keys k
 * [n][d] and the stored sigma, z.  Evaluated by the host recipe of
 * [CERT-DLT-04]: every addition and multiplication rounded to nearest, then
 * moved one binary32 step up (nextafterf toward +inf); the scalings by powers
 * of two are exact.  Upper bounds of the exact path's values, not equal to
 * them.  q: d binary16 values; scale: a positive normal binary32 (else
 * KVQ_E_PARAM); k as kvq_cert_quantize_keys; sigma, z as
 * kvq_cert_dequantize_keys.  A bound above FLT_MAX is +inf. */
/*@ requires ptrs_ok: shape == \null || \valid_read(shape);
    assigns delta_b[..], *delta;
    behavior bad_param:
      assumes delta_b == \null || delta == \null || q == \null || k == \null ||
              sigma == \null || z == \null || shape == \null;
      assigns \nothing;
      ensures param: \result == KVQ_E_PARAM;
    behavior other:
      assumes delta_b != \null && delta != \null && q != \null && k != \null &&
              sigma != \null && z != \null && shape != \null;
      ensures status: \result == KVQ_OK || \result == KVQ_E_SHAPE || \result == KVQ_E_PARAM ||
                      \result == KVQ_E_NONFINITE;
      ensures nonneg: \result == KVQ_OK ==> *delta >= 0;                  // [CERT-DLT-02]
    complete behaviors;
    disjoint behaviors;
*/
kvq_status kvq_cert_delta(float *delta_b, float *delta, const float *q, float scale,
                          const float *k, const float *sigma, const float *z,
                          const kvq_cert_shape *shape);


#ifdef __cplusplus
}
#endif

#include "kvq_cert.h" /* the CERT decode step */

#endif /* KVQ_H */
