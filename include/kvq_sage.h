/*
 * kvq_sage.h -- SAGE (SageAttention2) quantizers, fast path (spec/sage.md):
 * smoothing of Q, K and V, the score correction dS, the per-thread INT4 / INT8
 * quantizer of Q and K in the mma accumulator layout (with its per-warp and
 * per-block policies), the FP8 quantizers of P~ and V, and the accuracy
 * metrics.
 *
 * Every result is the pinned binary32 sequence of the spec (the metrics: the
 * pinned binary64 sequence), so the exact path (kvq_exact_sage.h) reproduces
 * it bit for bit.  Arrays are caller-owned; sizes come from kvq_sage_layout.h.
 * Every call validates, in the order its spec requirement lists, before the
 * first write: on error no output and no flags word is touched [API-ERR-01].
 *
 * The ACSL below states WHICH result each call computes, in logic terms
 * (\round_float of the exact operation, the group maximum, the tie rule);
 * integer parts (code range, fields, the slot map) in / % * only.  The
 * contracts of these tensor calls are written and parsed by Frama-C, not sent
 * to WP; what WP proves of SAGE is the layout (kvq_sage_layout.h, packing
 * included) and the per-element helpers of ref/fast/sage.c (the code's range
 * and clamp, the zero group's and zero channel's code 0, the input checks)
 * (proofs/TRUSTED.md [TR-SCOPE]).  tests/sage/check_sage.c compares the fast
 * path with the exact path on every element.
 */
#ifndef KVQ_SAGE_H
#define KVQ_SAGE_H

#include <stdint.h>

#include "kvq.h"
#include "kvq_fp8.h"
#include "kvq_sage_layout.h"
#include "kvq_sage_attn.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Domain bounds [SAGE-L-04]. */
#define KVQ_SAGE_SMOOTH_MAX 0x1p48f          /* |x| of a smoothing input */
#define KVQ_SAGE_DS_MAX     0x1p51f          /* |qm|, |ks| of a dS input */
#define KVQ_SAGE_TAU_MIN    0x1p-126f        /* softmax scale of dS */
#define KVQ_SAGE_TAU_MAX    0x1p16f
#define KVQ_SAGE_PUBLIC_EPS 0x1.ad7f2ap-24f  /* RN32(1e-7), the public code's scale bias [SAGE-Q-05] */
#define KVQ_SAGE_MAX_ROWCOL (1u << 24)       /* rows, cols of P~; rows of dS */

/* The static FP8 bound F of a format: 448 (E4M3) or 57344 (E5M2) [SAGE-P-03]. */
KVQ_HD static inline float kvq_sage_fp8_bound(uint32_t fmt)
{
    return fmt == KVQ_SAGE_FP8_E5M2 ? KVQ_FP8_E5M2_MAX : KVQ_FP8_E4M3_MAX;
}

/*@ // ---- logic of the pinned sequences (spec/sage.md) ----------------------
    // (kvq_rn32_l and the roundings to integer, kvq_round_ties_l, are kvq.h's.)
    logic real kvq_rn64_l(real v) = \round_double(\NearestEven, v);
    logic integer kvq_sage_clamp_l(integer k, integer c) = k < -c ? -c : (k > c ? c : k);

    // Stored scale of a group of maximum m [SAGE-Q-02] [SAGE-Q-05].
    logic real kvq_sage_scale_paper_l(real m, integer bits) =
        kvq_rn32_l(m / kvq_sage_cmax_l(bits)) < 0x1p-126 ? 0.0 : kvq_rn32_l(m / kvq_sage_cmax_l(bits));
    logic real kvq_sage_scale_public_l(real m, integer bits) =
        kvq_rn32_l(kvq_rn32_l(m / kvq_sage_cmax_l(bits)) + 0x1.ad7f2ap-24);
    logic real kvq_sage_scale_l(real m, integer bits, integer rnd) =
        rnd == 0 ? kvq_sage_scale_paper_l(m, bits) : kvq_sage_scale_public_l(m, bits);

    // The code of x against a stored scale s: clamp(round(RN32(x / s))) [SAGE-Q-03],
    // or the public sequence trunc(RN32(q +- 1/2)) [SAGE-Q-05]; 0 when s == 0 [SAGE-Q-04].
    // (the quotient RN32(x / s) is a function of its own: provers treat a real
    // division by a variable as a nonlinear term)
    logic real kvq_sage_quot_l(real x, real s) = kvq_rn32_l(x / s);
    logic integer kvq_sage_code_paper_l(real x, real s, integer bits, integer ties) =
        s == 0 ? 0 : kvq_sage_clamp_l(kvq_round_ties_l(kvq_sage_quot_l(x, s), ties), kvq_sage_cmax_l(bits));
    logic integer kvq_sage_code_public_l(real x, real s, integer bits) =
        \let q = kvq_sage_quot_l(x, s);
        \let t = (q >= 0 ? kvq_rn32_l(q + 0.5) : kvq_rn32_l(q - 0.5));
        kvq_sage_clamp_l(t >= 0 ? \floor(t) : \ceil(t), kvq_sage_cmax_l(bits));
    logic integer kvq_sage_code_of_l(real x, real s, integer bits, integer rnd, integer ties) =
        rnd == 0 ? kvq_sage_code_paper_l(x, s, bits, ties) : kvq_sage_code_public_l(x, s, bits);

    // m is the maximum |x| over the existing elements of slot s (0 if none) [SAGE-Q-01].
    predicate kvq_sage_slot_max{L}(float *x, integer nt, integer d, kvq_sage_qk q, integer s,
                                   real m) =
        m >= 0 &&
        (\forall integer n, c; 0 <= n < nt && 0 <= c < d &&
            kvq_sage_slot_l(q.role, q.gran, q.block, q.warps, n) == s ==> \abs(x[n * d + c]) <= m) &&
        (m == 0 || \exists integer n, c; 0 <= n < nt && 0 <= c < d &&
            kvq_sage_slot_l(q.role, q.gran, q.block, q.warps, n) == s && \abs(x[n * d + c]) == m);

    // Recursive binary32 sum of x[t*d] for t = t0 .. t0 + j (column of channel x) [SAGE-SM-01].
    logic real kvq_sage_colsum_l{L}(float *x, integer d, integer t0, integer j) =
        j <= 0 ? x[t0 * d] : kvq_rn32_l(kvq_sage_colsum_l(x, d, t0, j - 1) + x[(t0 + j) * d]);
    // Tokens of segment r: min(N, (r+1) seg) - r seg.
    logic integer kvq_sage_seg_count_l(integer nt, integer seg, integer r) =
        (r + 1) * seg <= nt ? seg : nt - r * seg;
    logic real kvq_sage_mean_l{L}(float *x, integer nt, integer d, integer seg, integer r, integer c) =
        kvq_rn32_l(kvq_sage_colsum_l(x + c, d, r * seg, kvq_sage_seg_count_l(nt, seg, r) - 1) /
                   kvq_sage_seg_count_l(nt, seg, r));

    // dS: products rounded, then each addition, channels ascending [SAGE-DS-01].
    logic real kvq_sage_dot_l{L}(float *a, float *b, integer c) =
        c <= 0 ? kvq_rn32_l(a[0] * b[0]) :
                 kvq_rn32_l(kvq_sage_dot_l(a, b, c - 1) + kvq_rn32_l(a[c] * b[c]));

    // Row sum of P~ [SAGE-P-02].
    logic real kvq_sage_rowsum_l{L}(float *p, integer j) =
        j <= 0 ? p[0] : kvq_rn32_l(kvq_sage_rowsum_l(p, j - 1) + p[j]);

    // Maximum |v| of channel c over the N tokens [SAGE-V-01].
    predicate kvq_sage_col_max{L}(float *v, integer nt, integer d, integer c, real m) =
        m >= 0 && (\forall integer n; 0 <= n < nt ==> \abs(v[n * d + c]) <= m) &&
        (m == 0 || \exists integer n; 0 <= n < nt && \abs(v[n * d + c]) == m);
    logic real kvq_sage_vscale_l(real m, real f) =
        kvq_rn32_l(m / f) < 0x1p-126 ? 0.0 : kvq_rn32_l(m / f);

    // A finite binary32 array of len values.
    predicate kvq_sage_finite{L}(float *x, integer len) =
        \forall integer e; 0 <= e < len ==> \is_finite(x[e]);
*/

/* ---------------------------------------------------------------------------
 * Smoothing [SAGE-SM-01..06].  xs[n][c] = RN32(x[n][c] - mean[n / seg][c]);
 * mean[r][c] = RN32(sum / k) with the binary32 sum of segment r's k tokens in
 * ascending order from the first value.  seg = N: per head (K, V, Q's paper
 * mean); seg = b_q: Q's per_block variant.  xs: N*d floats; mean:
 * kvq_sage_mean_rows(N, seg) * d floats.
 * ------------------------------------------------------------------------- */
/*@ requires ptrs_ok: shape == \null || \valid_read(shape);
    assigns xs[..], mean[..];
    behavior bad_param:
      assumes xs == \null || mean == \null || x == \null || shape == \null ||
              seg < 1 || seg > 16777216;
      assigns \nothing;
      ensures param: \result == KVQ_E_PARAM;                                // [SAGE-SM-06]
    behavior bad_shape:
      assumes xs != \null && mean != \null && x != \null && shape != \null &&
              1 <= seg <= 16777216 && !kvq_sage_shape_l(shape->tokens, shape->dim);
      assigns \nothing;
      ensures shape: \result == KVQ_E_SHAPE;                                // [SAGE-L-02]
    behavior good:
      assumes xs != \null && mean != \null && x != \null && shape != \null &&
              1 <= seg <= 16777216 && kvq_sage_shape_l(shape->tokens, shape->dim);
      requires in: \valid_read(x + (0 .. shape->tokens * shape->dim - 1));
      requires out: \valid(xs + (0 .. shape->tokens * shape->dim - 1)) &&
          \valid(mean + (0 .. ((shape->tokens + seg - 1) / seg) * shape->dim - 1));
      ensures status: \result == KVQ_OK || \result == KVQ_E_NONFINITE || \result == KVQ_E_PARAM;
      ensures nonfinite: !kvq_sage_finite(x, shape->tokens * shape->dim) <==>
          \result == KVQ_E_NONFINITE;                                       // [POL-NF-01]
      ensures mean: \result == KVQ_OK ==>
          \forall integer r, c; 0 <= r < (shape->tokens + seg - 1) / seg && 0 <= c < shape->dim ==>
              mean[r * shape->dim + c] ==
                  kvq_sage_mean_l(x, shape->tokens, shape->dim, seg, r, c);    // [SAGE-SM-01]
      ensures smoothed: \result == KVQ_OK ==>
          \forall integer n, c; 0 <= n < shape->tokens && 0 <= c < shape->dim ==>
              xs[n * shape->dim + c] ==
                  kvq_rn32_l(x[n * shape->dim + c] - mean[(n / seg) * shape->dim + c]); // [SAGE-SM-02]
      ensures bounded: \result == KVQ_OK ==>
          \forall integer e; 0 <= e < shape->tokens * shape->dim ==>
              \abs(xs[e]) <= 0x1p50;                                        // [SAGE-LEM-01]
    complete behaviors;
    disjoint behaviors;
*/
kvq_status kvq_sage_smooth(float *xs, float *mean, const float *x, const kvq_sage_shape *shape,
                           uint32_t seg);

/* ---------------------------------------------------------------------------
 * dS = q_m K_s^T scaled by the softmax scale tau [SAGE-DS-01..02]:
 * ds[r][j] = RN32(dot(qm[r], ks[j]) * tau), the dot product with each product
 * and each addition rounded, channels ascending.  qm: rows * d; ks: N * d
 * (kshape); ds: rows * N.
 * ------------------------------------------------------------------------- */
/*@ requires ptrs_ok: kshape == \null || \valid_read(kshape);
    assigns ds[..];
    behavior bad_param:
      assumes ds == \null || qm == \null || ks == \null || kshape == \null ||
              rows < 1 || rows > 16777216 ||
              rows * kshape->tokens > 4294967296;
      assigns \nothing;
      ensures param: \result == KVQ_E_PARAM;                                // [SAGE-DS-02]
    behavior other:
      assumes ds != \null && qm != \null && ks != \null && kshape != \null &&
              1 <= rows <= 16777216 && rows * kshape->tokens <= 4294967296;
      ensures status: \result == KVQ_OK || \result == KVQ_E_SHAPE ||
                      \result == KVQ_E_NONFINITE || \result == KVQ_E_PARAM;
      ensures shape: !kvq_sage_shape_l(kshape->tokens, kshape->dim) ==> \result == KVQ_E_SHAPE;
      ensures value: \result == KVQ_OK ==>
          \forall integer r, j; 0 <= r < rows && 0 <= j < kshape->tokens ==>
              ds[r * kshape->tokens + j] ==
                  kvq_rn32_l(kvq_sage_dot_l(qm + r * kshape->dim, ks + j * kshape->dim,
                                            kshape->dim - 1) * tau);      // [SAGE-DS-01]
      ensures finite: \result == KVQ_OK ==>
          \forall integer e; 0 <= e < rows * kshape->tokens ==> \is_finite(ds[e]); // [SAGE-LEM-02]
    complete behaviors;
    disjoint behaviors;
*/
kvq_status kvq_sage_delta_s(float *ds, const float *qm, const float *ks, uint32_t rows,
                            const kvq_sage_shape *kshape, float tau);

/* ---------------------------------------------------------------------------
 * Q/K quantizer [SAGE-Q-01..07] [SAGE-MAP-01..06].  x: the smoothed Q or K
 * [N][d]; codes: kvq_sage_code_bytes(shape, qk->bits) bytes, signed fields
 * packed LSB first; scale: kvq_sage_scale_count(shape, qk) floats in slot
 * order.  flags (may be NULL) receives KVQ_FLAG_ZERO_SCALE or 0.
 * ------------------------------------------------------------------------- */
/*@ requires ptrs_ok: (shape == \null || \valid_read(shape)) && (qk == \null || \valid_read(qk)) &&
                      (pol == \null || \valid_read(pol)) && (flags == \null || \valid(flags));
    assigns codes[..], scale[..], *flags;
    behavior bad_param:
      assumes codes == \null || scale == \null || x == \null || shape == \null || qk == \null ||
              pol == \null ||
              !kvq_sage_qk_l(qk->role, qk->bits, qk->gran, qk->block, qk->warps, qk->rounding);
      assigns \nothing;
      ensures param: \result == KVQ_E_PARAM;                                // [SAGE-Q-07]
    behavior other:
      assumes codes != \null && scale != \null && x != \null && shape != \null && qk != \null &&
              pol != \null &&
              kvq_sage_qk_l(qk->role, qk->bits, qk->gran, qk->block, qk->warps, qk->rounding);
      ensures status: \result == KVQ_OK || \result == KVQ_E_PARAM || \result == KVQ_E_SHAPE ||
                      \result == KVQ_E_NONFINITE;
      ensures shape: \result != KVQ_E_PARAM && !kvq_sage_shape_l(shape->tokens, shape->dim) ==>
          \result == KVQ_E_SHAPE;                                           // [SAGE-L-02]
      ensures code_range: \result == KVQ_OK ==>                             // [SAGE-Q-03]
          \forall integer e; 0 <= e < shape->tokens * shape->dim ==>
              -kvq_sage_cmax_l(qk->bits) <= kvq_sage_code_at_l(codes, e, qk->bits) <=
              kvq_sage_cmax_l(qk->bits);
      ensures scale: \result == KVQ_OK ==>                                  // [SAGE-Q-01..02, SAGE-Q-05]
          \forall integer s; 0 <= s < kvq_sage_scale_count_l(shape->tokens, *qk) ==>
              \exists real m; kvq_sage_slot_max(x, shape->tokens, shape->dim, *qk, s, m) &&
                  scale[s] == kvq_sage_scale_l(m, qk->bits, qk->rounding);
      ensures code: \result == KVQ_OK ==>                                   // [SAGE-Q-03..05]
          \forall integer n, c; 0 <= n < shape->tokens && 0 <= c < shape->dim ==>
              kvq_sage_code_at_l(codes, n * shape->dim + c, qk->bits) ==
              kvq_sage_code_of_l(x[n * shape->dim + c],
                  scale[kvq_sage_slot_l(qk->role, qk->gran, qk->block, qk->warps, n)],
                  qk->bits, qk->rounding, pol->ties);
      ensures flags: \result == KVQ_OK && flags != \null ==>
          (*flags == 0 || *flags == KVQ_FLAG_ZERO_SCALE);                   // [SAGE-FLAG-01]
    complete behaviors;
    disjoint behaviors;
*/
kvq_status kvq_sage_quantize_qk(uint8_t *codes, float *scale, uint32_t *flags, const float *x,
                                const kvq_sage_shape *shape, const kvq_sage_qk *qk,
                                const kvq_policy *pol);

/* y[n][c] = RN32(code * scale[slot(n)]) [SAGE-Q-08].  Stored scales: finite
 * (KVQ_E_NONFINITE), +-0 or >= 2^-126 (KVQ_E_PARAM); an overflowing product:
 * KVQ_E_RANGE.  Nothing is written on error. */
/*@ requires ptrs_ok: (shape == \null || \valid_read(shape)) && (qk == \null || \valid_read(qk));
    assigns y[..];
    behavior bad_param:
      assumes y == \null || codes == \null || scale == \null || shape == \null || qk == \null ||
              !kvq_sage_qk_l(qk->role, qk->bits, qk->gran, qk->block, qk->warps, qk->rounding);
      assigns \nothing;
      ensures param: \result == KVQ_E_PARAM;
    behavior other:
      assumes y != \null && codes != \null && scale != \null && shape != \null && qk != \null &&
              kvq_sage_qk_l(qk->role, qk->bits, qk->gran, qk->block, qk->warps, qk->rounding);
      ensures status: \result == KVQ_OK || \result == KVQ_E_PARAM || \result == KVQ_E_SHAPE ||
                      \result == KVQ_E_NONFINITE || \result == KVQ_E_RANGE;
      ensures value: \result == KVQ_OK ==>                                  // [SAGE-Q-08]
          \forall integer n, c; 0 <= n < shape->tokens && 0 <= c < shape->dim ==>
              y[n * shape->dim + c] == kvq_rn32_l(kvq_sage_code_at_l(codes, n * shape->dim + c, qk->bits) *
                  scale[kvq_sage_slot_l(qk->role, qk->gran, qk->block, qk->warps, n)]);
    complete behaviors;
    disjoint behaviors;
*/
kvq_status kvq_sage_dequantize_qk(float *y, const uint8_t *codes, const float *scale,
                                  const kvq_sage_shape *shape, const kvq_sage_qk *qk);

/* ---------------------------------------------------------------------------
 * P~ quantizer [SAGE-P-01..04]: codes[i][j] = FP8(RN32(p[i][j] * F)), one
 * static scale 1/F; rowsum[i] = the binary32 sum of the row's unquantized
 * values, ascending from the first.  p: rows * cols values in [0, 1].
 * ------------------------------------------------------------------------- */
/*@ requires ptrs_ok: (pol == \null || \valid_read(pol)) && (flags == \null || \valid(flags));
    assigns codes[..], rowsum[..], *flags;
    behavior bad_param:
      assumes codes == \null || rowsum == \null || p == \null || pol == \null ||
              (fmt != KVQ_SAGE_FP8_E4M3 && fmt != KVQ_SAGE_FP8_E5M2);
      assigns \nothing;
      ensures param: \result == KVQ_E_PARAM;                                // [SAGE-P-04]
    behavior other:
      assumes codes != \null && rowsum != \null && p != \null && pol != \null &&
              (fmt == KVQ_SAGE_FP8_E4M3 || fmt == KVQ_SAGE_FP8_E5M2);
      ensures status: \result == KVQ_OK || \result == KVQ_E_PARAM || \result == KVQ_E_SHAPE ||
                      \result == KVQ_E_NONFINITE;
      ensures shape: \result != KVQ_E_PARAM && (rows < 1 || cols < 1 || rows > 16777216 ||
          cols > 16777216 || rows * cols > 4294967296) ==> \result == KVQ_E_SHAPE;
      ensures code_e4m3: \result == KVQ_OK && fmt == KVQ_SAGE_FP8_E4M3 ==>  // [SAGE-P-01]
          \forall integer e; 0 <= e < rows * cols && p[e] > 0 ==>
              kvq_e4m3_rn_l(kvq_rn32_l(p[e] * 448), 0, codes[e]);
      ensures code_e5m2: \result == KVQ_OK && fmt == KVQ_SAGE_FP8_E5M2 ==>
          \forall integer e; 0 <= e < rows * cols && p[e] > 0 ==>
              kvq_e5m2_rn_l(kvq_rn32_l(p[e] * 57344), 0, codes[e]);
      ensures zero: \result == KVQ_OK ==>
          \forall integer e; 0 <= e < rows * cols && p[e] == 0 ==> codes[e] % 128 == 0;
      ensures rowsum: \result == KVQ_OK ==>                                 // [SAGE-P-02]
          \forall integer i; 0 <= i < rows ==>
              rowsum[i] == kvq_sage_rowsum_l(p + i * cols, cols - 1);
      ensures flags: \result == KVQ_OK && flags != \null ==> *flags == 0;   // [SAGE-LEM-06]
    complete behaviors;
    disjoint behaviors;
*/
kvq_status kvq_sage_quantize_p(uint8_t *codes, float *rowsum, uint32_t *flags, const float *p,
                               uint32_t rows, uint32_t cols, uint32_t fmt,
                               const kvq_policy *pol);

/* ---------------------------------------------------------------------------
 * V quantizer [SAGE-V-01..04]: per channel c over all N tokens,
 * scale[c] = RN32(max|v| / F) (+0 below 2^-126), codes[n][c] =
 * FP8(RN32(v[n][c] / scale[c])), 0x00 in a zero channel.  codes: N*d bytes,
 * scale: d floats.
 * ------------------------------------------------------------------------- */
/*@ requires ptrs_ok: (shape == \null || \valid_read(shape)) && (pol == \null || \valid_read(pol)) &&
                      (flags == \null || \valid(flags));
    assigns codes[..], scale[..], *flags;
    behavior bad_param:
      assumes codes == \null || scale == \null || v == \null || shape == \null || pol == \null ||
              (fmt != KVQ_SAGE_FP8_E4M3 && fmt != KVQ_SAGE_FP8_E5M2);
      assigns \nothing;
      ensures param: \result == KVQ_E_PARAM;                                // [SAGE-V-04]
    behavior other:
      assumes codes != \null && scale != \null && v != \null && shape != \null && pol != \null &&
              (fmt == KVQ_SAGE_FP8_E4M3 || fmt == KVQ_SAGE_FP8_E5M2);
      ensures status: \result == KVQ_OK || \result == KVQ_E_PARAM || \result == KVQ_E_SHAPE ||
                      \result == KVQ_E_NONFINITE;
      ensures scale: \result == KVQ_OK ==>                                  // [SAGE-V-01]
          \forall integer c; 0 <= c < shape->dim ==>
              \exists real m; kvq_sage_col_max(v, shape->tokens, shape->dim, c, m) &&
                  scale[c] == kvq_sage_vscale_l(m, fmt == KVQ_SAGE_FP8_E4M3 ? 448.0 : 57344.0);
      ensures code_e4m3: \result == KVQ_OK && fmt == KVQ_SAGE_FP8_E4M3 ==>  // [SAGE-V-02]
          \forall integer n, c; 0 <= n < shape->tokens && 0 <= c < shape->dim &&
              scale[c] > 0 && v[n * shape->dim + c] != 0 ==>
              kvq_e4m3_rn_l(kvq_rn32_l(v[n * shape->dim + c] / scale[c]),
                            v[n * shape->dim + c] < 0 ? 1 : 0, codes[n * shape->dim + c]);
      ensures code_e5m2: \result == KVQ_OK && fmt == KVQ_SAGE_FP8_E5M2 ==>
          \forall integer n, c; 0 <= n < shape->tokens && 0 <= c < shape->dim &&
              scale[c] > 0 && v[n * shape->dim + c] != 0 ==>
              kvq_e5m2_rn_l(kvq_rn32_l(v[n * shape->dim + c] / scale[c]),
                            v[n * shape->dim + c] < 0 ? 1 : 0, codes[n * shape->dim + c]);
      ensures zero_channel: \result == KVQ_OK ==>                           // [SAGE-V-03]
          \forall integer n, c; 0 <= n < shape->tokens && 0 <= c < shape->dim && scale[c] == 0 ==>
              codes[n * shape->dim + c] == 0;
      ensures flags: \result == KVQ_OK && flags != \null ==>
          (*flags == 0 || *flags == KVQ_FLAG_ZERO_SCALE);                   // [SAGE-FLAG-01]
    complete behaviors;
    disjoint behaviors;
*/
kvq_status kvq_sage_quantize_v(uint8_t *codes, float *scale, uint32_t *flags, const float *v,
                               const kvq_sage_shape *shape, uint32_t fmt, const kvq_policy *pol);

/* ---------------------------------------------------------------------------
 * Accuracy metrics [SAGE-MET-01..05]: O (reference) and O' (under test),
 * n values each, by the pinned binary64 sequence of [SAGE-MET-03], degenerate
 * cases per [SAGE-MET-02].
 * ------------------------------------------------------------------------- */
typedef struct kvq_sage_accuracy {
    double cos_sim;  /* sum O O' / (sqrt(sum O^2) sqrt(sum O'^2)) */
    double rel_l1;   /* sum |O - O'| / sum |O| */
    double rmse;     /* sqrt(sum (O - O')^2 / n) */
} kvq_sage_accuracy;

/*@ // Recursive binary64 sums of [SAGE-MET-03] (terms exact or rounded as stated).
    logic real kvq_sage_sxy_l{L}(float *o, float *p, integer i) =
        i <= 0 ? o[0] * p[0] : kvq_rn64_l(kvq_sage_sxy_l(o, p, i - 1) + o[i] * p[i]);
    logic real kvq_sage_se_l{L}(float *o, float *p, integer i) =
        i <= 0 ? kvq_rn64_l(kvq_rn64_l(o[0] - p[0]) * kvq_rn64_l(o[0] - p[0])) :
        kvq_rn64_l(kvq_sage_se_l(o, p, i - 1) +
                   kvq_rn64_l(kvq_rn64_l(o[i] - p[i]) * kvq_rn64_l(o[i] - p[i])));
*/
/*@ requires ptrs_ok: acc == \null || \valid(acc);
    assigns *acc;
    behavior bad_param:
      assumes acc == \null || o == \null || o2 == \null;
      assigns \nothing;
      ensures param: \result == KVQ_E_PARAM;                                // [SAGE-MET-05]
    behavior bad_shape:
      assumes acc != \null && o != \null && o2 != \null && (n < 1 || n > 4294967296);
      assigns \nothing;
      ensures shape: \result == KVQ_E_SHAPE;
    behavior good:
      assumes acc != \null && o != \null && o2 != \null && 1 <= n <= 4294967296;
      requires in: \valid_read(o + (0 .. n - 1)) && \valid_read(o2 + (0 .. n - 1));
      ensures status: \result == KVQ_OK || \result == KVQ_E_NONFINITE;
      ensures nonfinite: \result == KVQ_E_NONFINITE <==>
          !(kvq_sage_finite(o, n) && kvq_sage_finite(o2, n));               // [POL-NF-01]
      ensures rmse: \result == KVQ_OK ==>                                   // [SAGE-MET-03]
          acc->rmse == kvq_rn64_l(\sqrt(kvq_rn64_l(kvq_sage_se_l(o, o2, n - 1) / n)));
      ensures cos_sim: \result == KVQ_OK ==>                                // [SAGE-MET-02..03]
          \let sxx = kvq_sage_sxy_l(o, o, n - 1); \let syy = kvq_sage_sxy_l(o2, o2, n - 1);
          acc->cos_sim == (sxx == 0 && syy == 0 ? 1.0 : sxx == 0 || syy == 0 ? 0.0 :
              kvq_rn64_l(kvq_sage_sxy_l(o, o2, n - 1) /
                         kvq_rn64_l(kvq_rn64_l(\sqrt(sxx)) * kvq_rn64_l(\sqrt(syy)))));
      ensures l1_nonneg: \result == KVQ_OK ==> acc->rel_l1 >= 0;
    complete behaviors;
    disjoint behaviors;
*/
kvq_status kvq_sage_metrics(kvq_sage_accuracy *acc, const float *o, const float *o2, uint64_t n);

/* ---------------------------------------------------------------------------
 * The attention pipeline [SAGE-ATT-01..06] on one head (ref/fast/sage_attn.c):
 * o[nq][dim] from binary32 q[nq][dim], k[nk][dim], v[nk][dim].  The pinned
 * stages are this file's calls; the core follows the kernel's steps with the
 * bit-exact wgmma model and exp2f for the device's exp2 approximation, so its
 * output is judged by the bound of [SAGE-ATT-07], like a kernel's.  Errors:
 * NULL pointers, an invalid policy or kvq_sage_attn_ok(a) false ->
 * KVQ_E_PARAM; then the stages' own errors (KVQ_E_NONFINITE for a NaN/Inf
 * input, KVQ_E_PARAM for one above 2^48); KVQ_E_NOMEM; nothing written on
 * error.
 * ------------------------------------------------------------------------- */
kvq_status kvq_sage_attention(float *o, const float *q, const float *k, const float *v,
                              const kvq_sage_attn *a, const kvq_policy *pol);

/* ---------------------------------------------------------------------------
 * Several heads with grouped KV heads, inputs of a named format [SAGE-MHA-01..04]
 * (ref/fast/sage_attn.c): o[hq][nq][dim] from q[hq][nq][dim], k and
 * v[hkv][nk][dim]; query head h is the one-head pipeline of
 * kvq_sage_attention on q's head h and KV head kvq_sage_mha_kv_head(h, hq, hkv)
 * of k and v.  Errors, before anything is written: NULL pointers, an invalid
 * policy, kvq_sage_attn_ok(a) or kvq_sage_mha_ok(hq, hkv, in_fmt) false, or a
 * finite element of q, k or v that is not a value of in_fmt
 * (kvq_sage_in_exact) -> KVQ_E_PARAM; then each head's errors, heads in order
 * (the first error is returned); KVQ_E_NOMEM.  Nothing written on error.
 * ------------------------------------------------------------------------- */
kvq_status kvq_sage_attention_mha(float *o, const float *q, const float *k, const float *v,
                                  const kvq_sage_attn *a, uint32_t hq, uint32_t hkv, uint32_t in_fmt,
                                  const kvq_policy *pol);
/* x is a value of the input format fmt (KVQ_SAGE_IN_*) or not finite: 1;
 * else 0 [SAGE-MHA-02]. */
int kvq_sage_in_exact(float x, uint32_t fmt);

/* ---------------------------------------------------------------------------
 * One channel of P~V through an accumulator model and the FP32 buffer
 * [SAGE-ACC-07] (ref/fast/sage_attn.c): for each of `rows` rows, the n
 * products a[r][k] b[r][k] of FP8 codes (format fmt) in instructions of 32
 * (the last zero-padded), starting from the accumulator value c[r], flushed
 * into a binary32 buffer every `buffer` products (64, 128; 0 = never) and at
 * the end; d[r] the buffer (or the accumulator when buffer is 0).  model:
 * KVQ_SAGE_PV_WGMMA (kvq_mma_model_wgmma_fp8(fmt)) or KVQ_SAGE_PV_MMA_SM90.
 * Errors in order: NULL, fmt, model or buffer invalid -> KVQ_E_PARAM; rows
 * outside [1, 256] or n outside [1, 2^16] -> KVQ_E_SHAPE; a non-finite c, or
 * a NaN or infinite code -> KVQ_E_NONFINITE; KVQ_E_NOMEM; nothing written on
 * error.
 * ------------------------------------------------------------------------- */
#define KVQ_SAGE_PV_WGMMA    0u
#define KVQ_SAGE_PV_MMA_SM90 1u
#define KVQ_SAGE_PV_MAX_ROWS 256u
#define KVQ_SAGE_PV_MAX_N    65536u
kvq_status kvq_sage_pv(float *d, const uint8_t *a, const uint8_t *b, const float *c, uint32_t rows, uint32_t n,
                       uint32_t fmt, uint32_t model, uint32_t buffer);
/* kvq_sage_pv's argument checks alone, in its order (KVQ_OK or the status it
 * would return before any arithmetic): what an implementation of sage_pv on
 * other hardware must decide first (the CUDA subject's, gpu/sage/sage_pv.cu). */
kvq_status kvq_sage_pv_check(const uint8_t *a, const uint8_t *b, const float *c, uint32_t rows, uint32_t n,
                             uint32_t fmt, uint32_t model, uint32_t buffer);

#ifdef __cplusplus
}
#endif
#endif /* KVQ_SAGE_H */
